"""fa_t.block_mask: key ranges per 64-row query group (block sparsity).

The ranges and full ranges (where the mask holds for every row and head)
are compared with a brute-force scan of the dense mask (document masks,
causal with Sq != Skv, prefix-LM, per-head masks, empty groups, a partial
last group); the traced regions carry the ranges as the last capture and the
op's ``{kv_ranges = N : i64}``; fa_t.attention validates the block mask; on
CPU tensors the call hides keys outside the ranges exactly as the float64
reference does, both following the table's formula written out here, in
which the full ranges play no part. They are a promise that the mask holds
there (the kernel skips it): fa_t.attention refuses a hand-built table that
breaks it and checks one that keeps it once, block_mask's never. The
compiler side is test/CPU/test_traced_mods.py.
"""

import dataclasses
import math

import pytest

torch = pytest.importorskip("torch")

import fa_t  # noqa: E402
from fa_t import jit, mods  # noqa: E402
from fa_t.config import KernelConfig  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402


def longest_run(keys, first, end):
    """The first longest run [a, z) of consecutive keys of ``keys`` inside
    [first, end), (0, 0) when there is none."""
    best, start = (0, 0), None
    for j in range(first, end + 1):
        if j < end and j in keys:
            start = j if start is None else start
            continue
        if start is not None and j - start > best[1] - best[0]:
            best = (start, j)
        start = None
    return best


def brute_ranges(mask_mod, B, H, Sq, Skv, causal):
    """(first, end, full_first, full_end[, hole_first, hole_end]) per (b, g)
    by scanning every (b, h, i, j): the full range is the first longest run
    of keys inside [first, end) that mask_mod keeps for every row and head
    (causal aside), the hole the first longest run no row sees (causal
    included); the hole columns exist when some hole is 64 keys or more."""
    G = -(-Sq // 64)
    out = torch.zeros(B or 1, G, 6, dtype=torch.int32)
    for b in range(B or 1):
        for g in range(G):
            rows = range(64 * g, min(64 * g + 64, Sq))
            kept = {(i, j): [mask_mod is None or bool(mask_mod(b, h, i, j))
                             for h in range(H or 1)] for i in rows for j in range(Skv)}
            seen = [j for j in range(Skv) for i in rows
                    if (not causal or j <= i + Skv - Sq) and any(kept[i, j])]
            if not seen:
                continue
            first, end = min(seen), max(seen) + 1
            full = longest_run({j for j in range(first, end)
                                if all(all(kept[i, j]) for i in rows)}, first, end)
            hole = longest_run(set(range(first, end)) - set(seen), first, end)
            out[b, g] = torch.tensor([first, end, *full, *hole])
    return out if bool(((out[..., 5] - out[..., 4]) >= 64).any()) else out[..., :4].contiguous()


def docs_of(b, s, seed, docs=6):
    g = torch.Generator().manual_seed(seed)
    return torch.sort(torch.randint(0, docs, (b, s), generator=g), dim=-1).values.int()


DOCS = docs_of(2, 200, 1)
#: Three documents over 300 keys (Sq = 200 queries read the first 200 ids):
#: some groups inside one document, some across two.
DOCS_300 = docs_of(2, 300, 3, docs=3)


def head_dependent(b, h, q, k):
    # Head 1 sees 40 keys further right: the ranges are the union over heads.
    return (k >= q - 10 + 40 * h) & (k <= q + 40 * h)


def head_documents(b, h, q, k):
    # Per head holes in the documents: the full range is the longest run
    # between the holes of every evaluated head.
    return (DOCS_300[b, q] == DOCS_300[b, k]) & ((k + 40 * h) % 97 != 0)


def sinks_window(b, h, q, k):
    # Three attention sinks and a window of 100 keys: rows past ~170 have a
    # hole of 64 keys or more between them.
    return (k < 3) | (q - k < 100)


def sinks_by_head(b, h, q, k):
    # Head 1's window is 60 keys wider: the hole is what neither head sees.
    return (k < 3) | (q - k < 100 + 60 * h)


def sparse_groups(b, h, q, k):
    # Groups 1 and 3 (rows 64..127, 192..) see nothing; others a band.
    return ((q // 64) % 2 == 0) & (k >= q // 2) & (k < q // 2 + 7)


RANGE_CASES = {
    "document": (fa_t.document_mask(DOCS), 2, 1, 200, 200, False),
    "document-causal": (fa_t.document_mask(DOCS), 2, 1, 200, 200, True),
    "causal-only": (None, 1, 1, 130, 300, True),
    "causal-sq-gt-skv": (None, 1, 1, 300, 100, True),  # early groups see no key
    "full": (None, 2, 1, 65, 17, False),
    "prefix-lm": (fa_t.prefix_lm(30), 1, 1, 190, 190, False),
    "heads-union": (head_dependent, 1, 2, 150, 260, False),
    "empty-groups": (sparse_groups, 1, 1, 250, 250, False),
    "document-sq-lt-skv": (fa_t.document_mask(DOCS_300), 2, 1, 200, 300, False),
    "document-causal-sq-lt-skv": (fa_t.document_mask(DOCS_300), 2, None, 200, 300, True),
    "heads-documents": (head_documents, 2, 2, 200, 300, False),
    "heads-documents-h-none": (head_documents, 2, None, 200, 300, False),
    "sinks-window-causal": (sinks_window, 1, 1, 400, 400, True),
    "sinks-heads-sq-lt-skv": (sinks_by_head, 1, 2, 300, 450, True),
    "batch-none": (fa_t.prefix_lm(30), None, None, 190, 190, True),
}


@pytest.mark.parametrize("name", sorted(RANGE_CASES))
def test_ranges_match_brute_force(name):
    mask_mod, B, H, Sq, Skv, causal = RANGE_CASES[name]
    bm = fa_t.block_mask(mask_mod, B, H, Sq, Skv, causal=causal, device="cpu")
    assert bm.ranges.dtype == torch.int32 and bm.ranges.is_contiguous()
    columns = 6 if name.startswith("sinks") else 4
    assert bm.ranges.shape == (B or 1, math.ceil(Sq / 64), columns)
    assert bm.num_groups == math.ceil(Sq / 64)
    assert torch.equal(bm.ranges, brute_ranges(mask_mod, B, H, Sq, Skv, causal))
    assert (bm.B, bm.H, bm.Sq, bm.Skv, bm.causal, bm.mask_mod) == (B, H, Sq, Skv, causal,
                                                                   mask_mod)


def test_ranges_in_small_chunks(monkeypatch):
    # The mask is evaluated a few query groups at a time; any chunking gives
    # the same ranges.
    mask_mod, B, H, Sq, Skv, causal = RANGE_CASES["document-causal"]
    whole = fa_t.block_mask(mask_mod, B, H, Sq, Skv, causal=causal, device="cpu")
    monkeypatch.setattr(mods, "_CHUNK_ELEMENTS", 1)
    assert torch.equal(fa_t.block_mask(mask_mod, B, H, Sq, Skv, causal=causal,
                                       device="cpu").ranges, whole.ranges)


def test_empty_and_partial_groups():
    bm = fa_t.block_mask(sparse_groups, 1, 1, 250, 250, device="cpu")
    assert bm.ranges[0, 1].tolist() == [0, 0, 0, 0] and bm.ranges[0, 3].tolist() == [0, 0, 0, 0]
    # The last group holds rows 192..249 only; the ones past Sq do not count
    # (a doc-id lookup of row 250+ would be out of bounds).
    bm = fa_t.block_mask(fa_t.document_mask(DOCS[0]), None, None, 200, 200, device="cpu")
    assert bm.ranges.shape == (1, 4, 4)
    last = DOCS[0, 192:]
    assert bm.ranges[0, 3, :2].tolist() == [int((DOCS[0] == last[0]).nonzero()[0]), 200]
    assert 0 < bm.density() < 1
    # No keys: every group sees nothing.
    assert fa_t.block_mask(None, 1, 1, 70, 0, device="cpu").ranges.abs().sum() == 0


def test_full_ranges_of_documents():
    # A group inside one document: its full range is the document's keys
    # (causal aside, which the kernel applies apart); a group across two
    # documents: no key is kept by every row, so no full range.
    docs = torch.tensor([0] * 150 + [1] * 106)
    bm = fa_t.block_mask(fa_t.document_mask(docs), None, None, 256, 256, device="cpu")
    assert bm.ranges[0].tolist() == [[0, 150, 0, 150], [0, 150, 0, 150], [0, 256, 0, 0],
                                     [150, 256, 150, 256]]
    causal = fa_t.block_mask(fa_t.document_mask(docs), None, None, 256, 256, causal=True,
                             device="cpu")
    assert causal.ranges[0].tolist() == [[0, 64, 0, 64], [0, 128, 0, 128], [0, 192, 0, 0],
                                         [150, 256, 150, 256]]
    assert bm.full_density() == (150 + 150 + 106) / (4 * 256)
    assert bm.density() == (150 + 150 + 256 + 106) / (4 * 256)


def test_full_ranges_of_prefix_lm_and_no_mask():
    # Prefix-LM keeps keys j < 30 or j <= i for every row of group g: those
    # up to its first row 64·g (and the prefix).
    bm = fa_t.block_mask(fa_t.prefix_lm(30), 1, None, 190, 190, device="cpu")
    assert bm.ranges[0].tolist() == [[0, 64, 0, 30], [0, 128, 0, 65], [0, 190, 0, 129]]
    # Without mask_mod every key counts as kept: the full range is the range.
    bm = fa_t.block_mask(None, 2, 3, 130, 300, causal=True, device="cpu")
    assert torch.equal(bm.ranges[..., 2:], bm.ranges[..., :2])
    assert bm.full_density() == bm.density() < 1


def test_full_range_is_the_first_longest_run():
    # Two runs of 5 kept keys, [0, 5) and [10, 15): the first one.
    bm = fa_t.block_mask(lambda b, h, q, k: k % 10 < 5, 1, 1, 64, 20, device="cpu")
    assert bm.ranges[0].tolist() == [[0, 15, 0, 5]]
    assert bm.full_density() == 5 / 20


def test_create_block_mask_is_flex_shaped():
    a = fa_t.create_block_mask(fa_t.prefix_lm(30), 1, None, 190, 190, "cpu")
    b = fa_t.block_mask(fa_t.prefix_lm(30), 1, None, 190, 190, device="cpu")
    assert torch.equal(a.ranges, b.ranges) and not a.causal
    c = fa_t.create_block_mask(None, 1, None, 190, 190, "cpu", causal=True)
    assert c.causal and c.ranges[0, 0].tolist() == [0, 64, 0, 64]


def test_block_mask_checks_its_arguments():
    with pytest.raises(TypeError, match="expected mask_mod to be callable"):
        fa_t.block_mask(3, 1, 1, 8, 8, device="cpu")
    with pytest.raises(ValueError, match="expected Sq to be an int >= 0"):
        fa_t.block_mask(None, 1, 1, -1, 8, device="cpu")
    with pytest.raises(TypeError, match="expected causal to be a bool"):
        fa_t.block_mask(None, 1, 1, 8, 8, causal=1, device="cpu")


def test_regions_carry_the_ranges():
    slopes = torch.rand(4)
    bm = fa_t.block_mask(fa_t.document_mask(DOCS), 2, 4, 200, 200, causal=True, device="cpu")
    text, caps = mods.attention_regions(fa_t.alibi(slopes), fa_t.document_mask(DOCS),
                                        bm.ranges)
    assert caps[-1] is bm.ranges and len(caps) == 3
    assert text.count("%cap2: tensor<2x4x4xi32>") == 2      # both regions' block arguments
    assert text.endswith("\n} {kv_ranges = 2 : i64}")
    assert jit.capture_types(text)[-1] == "tensor<2x4x4xi32>"
    # Without a mask_mod, a mask region that keeps every key carries it.
    text, caps = mods.attention_regions(fa_t.softcap(20.0), None, bm.ranges)
    assert caps == [bm.ranges] and " mask {" in text
    assert "arith.constant true" in text and text.endswith("} {kv_ranges = 0 : i64}")
    # The attribute follows the regions in the JIT input, before the results.
    config = KernelConfig("bf16", 64, 64, 4, 4, causal=True, lse=True)
    mlir = jit.jit_input_mlir(config, text)
    assert "captures(%capture0 : tensor<2x4x4xi32>)" in mlir
    assert "} {kv_ranges = 0 : i64}\n    -> tensor" in mlir
    # Another query length is another kernel (G is in the capture's type).
    other = fa_t.block_mask(None, 2, 4, 300, 200, device="cpu")
    text2, _ = mods.attention_regions(fa_t.softcap(20.0), None, other.ranges)
    assert jit.regions_id(text2) != jit.regions_id(text)


B, H, S, D = 2, 3, 150, 16


def inputs(seed=0, sq=S, skv=S):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, H, sq, D, generator=g, dtype=torch.float64),
            torch.randn(B, H, skv, D, generator=g, dtype=torch.float64),
            torch.randn(B, H, skv, D, generator=g, dtype=torch.float64))


def test_api_validates_the_block_mask():
    q, k, v = inputs()
    with pytest.raises(TypeError, match="expected block_mask to be a fa_t.mods.BlockMask"):
        fa_t.attention(q, k, v, block_mask=torch.zeros(2, 3, 2, dtype=torch.int32))
    for kwargs, what in ((dict(B=1), "B=1, but the call has B=2"),
                         (dict(H=4), "H=4, but the call has H=3"),
                         (dict(Sq=S + 1), f"Sq={S + 1}, but the call has Sq={S}"),
                         (dict(Skv=S - 1), f"Skv={S - 1}, but the call has Skv={S}"),
                         (dict(causal=True), "causal=True, but the call has causal=False")):
        args = {**dict(B=B, H=H, Sq=S, Skv=S, causal=False), **kwargs}
        bm = fa_t.block_mask(None, args["B"], args["H"], args["Sq"], args["Skv"],
                             causal=args["causal"], device="cpu")
        with pytest.raises(ValueError, match=what):
            fa_t.attention(q, k, v, block_mask=bm)


def test_api_refuses_ranges_off_the_device(monkeypatch):
    # A CUDA call needs the ranges on q's device. A CUDA-looking q past the
    # input checks stands in for one (no GPU here).
    from fa_t import api, torch_ops
    bm = fa_t.block_mask(None, B, H, S, S, device="cpu")

    class FakeQ:
        device = torch.device("cuda", 0)
        shape = (B, H, S, 64)
    monkeypatch.setattr(torch_ops, "check_inputs", lambda *a, **kw: None)
    with pytest.raises(ValueError, match=r"block mask's ranges to be on q's device cuda:0, "
                                         r"got cpu"):
        api._attention_with_mods(FakeQ(), FakeQ(), FakeQ(), causal=False, scale=None,
                                 window=None, return_lse=False, score_mod=None,
                                 mask_mod=None, block_mask=bm)


DOCS_S = docs_of(B, S, 4)


@pytest.mark.parametrize("causal", [False, True])
def test_cpu_call_matches_the_reference(causal):
    mask_mod = fa_t.document_mask(DOCS_S)
    bm = fa_t.block_mask(mask_mod, B, H, S, S, causal=causal, device="cpu")
    q, k, v = inputs(1)
    o, lse = fa_t.attention(q, k, v, causal=causal, mask_mod=mask_mod, block_mask=bm,
                            return_lse=True)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal, mask_mod=mask_mod,
                                         block_mask=bm)
    assert torch.allclose(o, ref_o, atol=1e-10)
    assert torch.allclose(lse.double(), ref_lse, atol=1e-10)
    # A block mask of the same mask_mod changes nothing ...
    plain = fa_t.attention(q, k, v, causal=causal, mask_mod=mask_mod)
    assert torch.allclose(o, plain, atol=1e-10)
    # ... and the call uses the block mask's own mask_mod when given none.
    assert torch.equal(fa_t.attention(q, k, v, causal=causal, block_mask=bm), o)


def test_cpu_call_hides_keys_outside_the_ranges():
    # A block mask of another mask hides keys the call's mask_mod keeps:
    # exactly the kernel's semantics (the ranges conjoin into the mask).
    q, k, v = inputs(2, sq=130, skv=90)
    bm = fa_t.block_mask(fa_t.prefix_lm(20), B, None, 130, 90, device="cpu")
    bm.ranges[1, 2] = 0                                         # an empty group
    o, lse = fa_t.attention(q, k, v, mask_mod=fa_t.prefix_lm(50), block_mask=bm,
                            return_lse=True, scale=0.3)
    ref_o, ref_lse = attention_reference(q, k, v, scale=0.3, mask_mod=fa_t.prefix_lm(50),
                                         block_mask=bm)
    assert torch.allclose(o, ref_o, atol=1e-10)
    assert torch.equal(torch.isneginf(lse), torch.isneginf(ref_lse))
    assert torch.isneginf(lse[1, :, 128:]).all() and (o[1, :, 128:] == 0).all()
    dense = fa_t.attention(q, k, v, mask_mod=fa_t.prefix_lm(50), scale=0.3)
    assert not torch.allclose(o, dense)


def test_batch_none_serves_any_batch():
    bm = fa_t.create_block_mask(None, None, None, S, S, "cpu", causal=True)
    assert bm.ranges.shape[0] == 1
    q, k, v = inputs(3)
    o = fa_t.attention(q, k, v, causal=True, block_mask=bm)
    assert torch.allclose(o, fa_t.attention(q, k, v, causal=True), atol=1e-10)
    assert bm.ranges_for(B, torch.device("cpu")).shape == (B, 3, 4)


def formula(ranges, mask, Sq):
    """[B, Sq, Skv] visibility of a table of 2 or 4 columns over ``mask``
    [B, Sq, Skv], key by key: first <= j < end and mask (the full range is
    a promise about the mask, no part of the formula)."""
    out = torch.zeros(mask.shape, dtype=torch.bool)
    for b, groups in enumerate(ranges.tolist()):
        for i in range(Sq):
            first, end = groups[i // 64][:2]
            for j in range(first, end):
                out[b, i, j] = bool(mask[b, i, j])
    return out


PREFIX = fa_t.prefix_lm(20)


def prefix_mask(Sq=130, Skv=90):
    i, j = torch.arange(Sq).view(1, -1, 1), torch.arange(Skv).view(1, 1, -1)
    return torch.broadcast_to(PREFIX(None, None, i, j), (B, Sq, Skv))


def hand_set(causal, broken):
    """A prefix-LM block mask (Sq 130, Skv 90) with hand-set ranges, made
    with dataclasses.replace: an empty group, a group with no full range,
    and full ranges that keep the promise (prefix_lm(20) keeps keys < 20
    for every row, keys <= 64 for rows 64..127) or, ``broken``, one that
    covers keys it hides."""
    bm = fa_t.block_mask(PREFIX, B, None, 130, 90, causal=causal, device="cpu")
    ranges = bm.ranges.clone()
    ranges[0, 0] = torch.tensor([0, 90, 10, 80] if broken else [0, 90, 5, 20])
    ranges[1, 0] = torch.tensor([5, 70, 5, 20])
    ranges[0, 1] = torch.tensor([0, 90, 0, 65])
    ranges[1, 1] = torch.tensor([0, 90, 0, 0])
    ranges[1, 2] = 0
    return dataclasses.replace(bm, ranges=ranges)


@pytest.mark.parametrize("causal", [False, True])
def test_full_ranges_are_no_part_of_the_formula(causal):
    mask = prefix_mask()
    q, k, v = inputs(5, sq=130, skv=90)
    valid, broken = hand_set(causal, False), hand_set(causal, True)
    want = formula(broken.ranges, mask, 130)
    # The broken full range covers keys the mask hides: they stay hidden.
    assert mods.full_mask(broken.ranges, 130, 90)[0, 0, 70] and not want[0, 0, 70]
    assert torch.equal(formula(valid.ranges, mask, 130), want)
    for bm in (valid, broken):
        # The range mask and apply_mods (the CPU path) ...
        assert torch.equal(mods.range_mask(bm.ranges, 130, 90) & mask, want)
        scores = torch.zeros(B, H, 130, 90, dtype=torch.float64)
        got = mods.apply_mods(scores, mask_mod=PREFIX, kv_ranges=bm.ranges)
        assert torch.equal(~torch.isneginf(got), want.unsqueeze(1).expand(B, H, 130, 90))
        # ... and the reference against the formula as a dense mask_mod.
        ref_o, ref_lse = attention_reference(q, k, v, causal=causal, block_mask=bm)
        dense_o, dense_lse = attention_reference(q, k, v, causal=causal,
                                                 mask_mod=lambda b, h, i, j: want[b, i, j])
        assert torch.allclose(ref_o, dense_o, atol=1e-12)
        assert torch.equal(torch.isneginf(ref_lse), torch.isneginf(dense_lse))
    # The CPU call with the valid table (the broken one is refused: below).
    o, lse = fa_t.attention(q, k, v, causal=causal, block_mask=valid, return_lse=True)
    assert torch.allclose(o, ref_o, atol=1e-10)
    assert torch.equal(torch.isneginf(lse), torch.isneginf(ref_lse))


def test_two_column_tables_have_no_full_range():
    bm = hand_set(False, True)
    two = dataclasses.replace(bm, ranges=bm.ranges[..., :2].contiguous())
    assert torch.equal(mods.range_mask(two.ranges, 130, 90), mods.range_mask(bm.ranges, 130, 90))
    assert not mods.full_mask(two.ranges, 130, 90).any()
    assert two.full_density() == 0.0 and two.density() == bm.density()
    want = formula(two.ranges, prefix_mask(), 130)
    q, k, v = inputs(6, sq=130, skv=90)
    ref_o, _ = attention_reference(q, k, v, block_mask=two)
    dense_o, _ = attention_reference(q, k, v, mask_mod=lambda b, h, i, j: want[b, i, j])
    assert torch.allclose(ref_o, dense_o, atol=1e-12)
    # Nothing to promise, nothing to check.
    assert torch.allclose(fa_t.attention(q, k, v, block_mask=two), ref_o, atol=1e-10)
    scores = torch.zeros(B, H, 130, 90, dtype=torch.float64)
    got = mods.apply_mods(scores, mask_mod=PREFIX, kv_ranges=two.ranges)
    assert torch.equal(~torch.isneginf(got), want.unsqueeze(1).expand(B, H, 130, 90))


def test_a_broken_promise_is_refused(monkeypatch):
    q, k, v = inputs(7, sq=130, skv=90)
    bm = hand_set(False, True)
    first = (r"the block mask's full range \[10, 80\) of group 0 \(batch entry 0\) covers key "
             r"20 that mask_mod hides from row 0; the kernel would skip the mask there: build "
             r"it with fa_t.block_mask")
    with pytest.raises(ValueError, match=first):
        fa_t.attention(q, k, v, block_mask=bm)
    with pytest.raises(ValueError, match=first):    # refused again: a failed check marks nothing
        fa_t.attention(q, k, v, mask_mod=PREFIX, block_mask=bm)
    # A later group of another batch entry, found in chunks of one group too.
    ranges = hand_set(False, False).ranges.clone()
    ranges[1, 1] = torch.tensor([0, 90, 0, 70])
    later = dataclasses.replace(bm, ranges=ranges)
    what = (r"full range \[0, 70\) of group 1 \(batch entry 1\) covers key 65 that mask_mod "
            r"hides from row 64")
    with pytest.raises(ValueError, match=what):
        fa_t.attention(q, k, v, block_mask=later)
    monkeypatch.setattr(mods, "_CHUNK_ELEMENTS", 1)
    with pytest.raises(ValueError, match=what):
        fa_t.attention(q, k, v, block_mask=later)


def test_every_head_is_checked_and_only_rows_below_sq():
    # Head 2 keeps keys < 10 (and j <= i) only: a full range [0, 20) breaks
    # the promise there alone.
    def heads(b, h, q, k):
        return (k < 30 - 10 * h) | (k <= q)
    q, k, v = inputs(8, sq=130, skv=90)
    bm = fa_t.block_mask(heads, B, H, 130, 90, device="cpu")
    assert bm.ranges[0, 0, 2:].tolist() == [0, 10]
    ranges = bm.ranges.clone()
    ranges[0, 0, 3] = 20
    with pytest.raises(ValueError, match=r"\[0, 20\) of group 0 \(batch entry 0\) covers key 10"):
        fa_t.attention(q, k, v, block_mask=dataclasses.replace(bm, ranges=ranges))
    # A document mask reads doc_ids[q_idx]: rows past Sq (200, in the last
    # group) would be out of bounds, and are not evaluated.
    docs = fa_t.document_mask(DOCS[0])
    bm = fa_t.block_mask(docs, None, None, 200, 200, device="cpu")
    rebuilt = mods.BlockMask(bm.ranges.clone(), None, None, 200, 200, False, docs)
    q, k, v = inputs(9, sq=200, skv=200)
    assert torch.allclose(fa_t.attention(q, k, v, block_mask=rebuilt),
                          attention_reference(q, k, v, mask_mod=docs)[0], atol=1e-10)


def test_full_range_outside_the_range_is_refused():
    q, k, v = inputs(10)
    bm = fa_t.block_mask(None, B, H, S, S, device="cpu")
    for full in ([5, 50], [50, 101], [60, 50]):
        ranges = bm.ranges.clone()
        ranges[1, 1] = torch.tensor([10, 100, *full])
        with pytest.raises(ValueError, match=rf"full range \[{full[0]}, {full[1]}\) of group 1 "
                                             rf"\(batch entry 1\) is neither empty nor inside "
                                             rf"its range \[10, 100\)"):
            fa_t.attention(q, k, v, block_mask=dataclasses.replace(bm, ranges=ranges))
    # An empty full range may lie anywhere.
    ranges[1, 1] = torch.tensor([10, 100, 7, 7])
    fa_t.attention(q, k, v, block_mask=dataclasses.replace(bm, ranges=ranges))


def counting(mask_mod):
    """mask_mod and the list of its evaluations on tensors (tracing calls it
    on fx proxies, which do not count)."""
    calls = []

    def counted(b, h, q_idx, kv_idx):
        if isinstance(q_idx, torch.Tensor):
            calls.append(tuple(q_idx.shape))
        return mask_mod(b, h, q_idx, kv_idx)
    return counted, calls


def test_a_kept_promise_is_checked_once():
    # On CPU tensors a call evaluates the mask once (apply_mods), and once
    # more when it checks the full ranges.
    counted, calls = counting(PREFIX)
    q, k, v = inputs(11, sq=130, skv=90)
    bm = mods.BlockMask(hand_set(False, False).ranges, B, None, 130, 90, False, counted)
    o = fa_t.attention(q, k, v, block_mask=bm)
    assert len(calls) == 2
    assert torch.equal(fa_t.attention(q, k, v, block_mask=bm), o) and len(calls) == 3
    fa_t.attention(q, k, v, block_mask=bm.to("cpu"))
    assert len(calls) == 4
    # Another mask_mod is checked once against the table.
    other, other_calls = counting(PREFIX)
    for _ in range(2):
        fa_t.attention(q, k, v, mask_mod=other, block_mask=bm)
    assert len(other_calls) == 3
    # Edited in place, the table is checked again: still valid, then not.
    bm.ranges[0, 0, 2] = 6
    fa_t.attention(q, k, v, block_mask=bm)
    assert len(calls) == 6
    bm.ranges[0, 0, 3] = 21
    with pytest.raises(ValueError, match=r"\[6, 21\) of group 0 \(batch entry 0\) covers key 20"):
        fa_t.attention(q, k, v, block_mask=bm)


def test_block_mask_tables_are_not_checked_again():
    counted, calls = counting(PREFIX)
    q, k, v = inputs(12, sq=130, skv=90)
    for batch in (B, None):
        bm = fa_t.block_mask(counted, batch, None, 130, 90, device="cpu")
        assert len(calls) == 1                              # one chunk of groups
        fa_t.attention(q, k, v, block_mask=bm)
        fa_t.attention(q, k, v, mask_mod=counted, block_mask=bm.to("cpu"))
        assert len(calls) == 3                              # apply_mods' only
        assert bm.ranges_for(B, torch.device("cpu")).shape == (B, 3, 4)
        calls.clear()
    # A new table through dataclasses.replace is another matter.
    fa_t.attention(q, k, v, block_mask=dataclasses.replace(bm, ranges=bm.ranges.clone()))
    assert len(calls) == 2


def test_ranges_for_follows_new_and_edited_ranges():
    # B None: the call's copy [B, G, 4] is made again when the ranges
    # change, so the kernel reads the table that was checked.
    bm = fa_t.block_mask(None, None, None, S, S, device="cpu")
    cpu = torch.device("cpu")
    assert bm.ranges_for(B, cpu) is bm.ranges_for(B, cpu)
    bm.ranges[0, 1, 0] = 3
    assert bm.ranges_for(B, cpu)[:, 1, 0].tolist() == [3, 3]
    other = dataclasses.replace(bm, ranges=torch.zeros_like(bm.ranges))
    assert other.ranges_for(B, cpu).abs().sum() == 0


def test_inference_tensors_are_checked_too():
    # Tables made under torch.inference_mode keep no version counter: they
    # are checked like others (an edit in place there goes unseen).
    q, k, v = inputs(13, sq=130, skv=90)
    with torch.inference_mode():
        bm = fa_t.block_mask(PREFIX, B, None, 130, 90, device="cpu")
        o = fa_t.attention(q, k, v, block_mask=bm)
        broken = hand_set(False, True)
        with pytest.raises(ValueError, match="covers key 20 that mask_mod hides"):
            fa_t.attention(q, k, v, block_mask=broken)
    assert torch.allclose(o, attention_reference(q, k, v, block_mask=bm)[0], atol=1e-10)


def test_ranges_of_the_wrong_shape_are_refused():
    # The compiler reads row [b, i // 64] of the table: a hand-built one of
    # another shape is refused before anything compiles.
    import dataclasses
    bm = fa_t.block_mask(fa_t.prefix_lm(20), 2, None, 130, 96, device="cpu")
    for bad in (bm.ranges[:, :2], bm.ranges[:1], bm.ranges.long(), bm.ranges[..., :3]):
        wrong = dataclasses.replace(bm, ranges=bad.contiguous())
        with pytest.raises(ValueError, match="expected the block mask's ranges to be int32"):
            wrong.check_call(2, 1, 130, 96, False)
    bm.check_call(2, 1, 130, 96, False)


@pytest.mark.parametrize("causal", [False, True])
def test_holes_change_nothing_on_the_cpu(causal):
    # A six-column table (sinks and a window): the hole is a promise the
    # kernel walks around; the CPU call and the reference read columns 0
    # and 1 only, so the result is that of the mask.
    q, k, v = inputs(30, sq=260, skv=260)
    bm = fa_t.block_mask(sinks_window, B, None, 260, 260, causal=causal, device="cpu")
    assert bm.ranges.shape == (B, 5, 6)
    assert bm.ranges[0, 4, 4:].tolist() == [3, 157]      # rows 256..259: keys 3..156 unseen
    assert bm.density() < mods.BlockMask(bm.ranges[..., :4].contiguous(), B, None, 260, 260,
                                         causal, sinks_window).density()
    o = fa_t.attention(q, k, v, causal=causal, block_mask=bm)
    ref, _ = attention_reference(q, k, v, causal=causal, mask_mod=sinks_window)
    assert torch.allclose(o, ref, atol=1e-10)


def test_a_broken_hole_is_refused():
    q, k, v = inputs(31, sq=260, skv=260)
    bm = fa_t.block_mask(sinks_window, B, None, 260, 260, causal=True, device="cpu")
    ranges = bm.ranges.clone()
    ranges[1, 4, 5] = 170                                 # row 256 sees key 157
    broken = dataclasses.replace(bm, ranges=ranges)
    with pytest.raises(ValueError, match=r"the block mask's hole \[3, 170\) of group 4 "
                                         r"\(batch entry 1\) covers key 157 that row 256 sees; "
                                         r"the kernel would skip it: build it with "
                                         r"fa_t.block_mask"):
        fa_t.attention(q, k, v, causal=True, block_mask=broken)
    ranges = bm.ranges.clone()
    ranges[0, 3, 4:] = torch.tensor([100, 300])           # past the range's end
    with pytest.raises(ValueError, match=r"the block mask's hole \[100, 300\) of group 3 "
                                         r"\(batch entry 0\) is neither empty nor inside its "
                                         r"range"):
        fa_t.attention(q, k, v, causal=True, block_mask=dataclasses.replace(bm, ranges=ranges))
    # Without a mask_mod only causal hides keys: a hole inside the range is
    # seen by some row.
    none = fa_t.block_mask(None, B, None, 260, 260, causal=True, device="cpu")
    six = torch.cat([none.ranges, torch.tensor([0, 0]).expand(B, 5, 2).int()], -1)
    six[0, 2, 4:] = torch.tensor([10, 20])
    with pytest.raises(ValueError, match=r"hole \[10, 20\) of group 2 \(batch entry 0\) covers "
                                         r"key 10 that row 128 sees"):
        fa_t.attention(q, k, v, causal=True,
                       block_mask=mods.BlockMask(six.contiguous(), B, None, 260, 260, True, None))
