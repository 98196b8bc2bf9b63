"""fa_t.block_mask: key ranges per 64-row query group (block sparsity).

The ranges are compared with a brute-force scan of the dense mask (document
masks, causal with Sq != Skv, prefix-LM, empty groups, a partial last group);
the traced regions carry the ranges as the last capture and the op's
``{kv_ranges = N : i64}``; fa_t.attention validates the block mask; on CPU
tensors the call hides keys outside the ranges exactly as the float64
reference does. The compiler side is test/CPU/test_traced_mods.py.
"""

import math

import pytest

torch = pytest.importorskip("torch")

import fa_t  # noqa: E402
from fa_t import jit, mods  # noqa: E402
from fa_t.config import KernelConfig  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402


def brute_ranges(mask_mod, B, H, Sq, Skv, causal):
    """(lo, hi) per (b, g) by scanning every (b, h, i, j)."""
    G = -(-Sq // 64)
    out = torch.zeros(B, G, 2, dtype=torch.int32)
    for b in range(B):
        for g in range(G):
            seen = [j for j in range(Skv) for i in range(64 * g, min(64 * g + 64, Sq))
                    if (not causal or j <= i + Skv - Sq)
                    and (mask_mod is None or any(bool(mask_mod(b, h, i, j)) for h in range(H)))]
            if seen:
                out[b, g] = torch.tensor([min(seen), max(seen) + 1])
    return out


def docs_of(b, s, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.sort(torch.randint(0, 6, (b, s), generator=g), dim=-1).values.int()


DOCS = docs_of(2, 200, 1)


def head_dependent(b, h, q, k):
    # Head 1 sees 40 keys further right: the ranges are the union over heads.
    return (k >= q - 10 + 40 * h) & (k <= q + 40 * h)


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
}


@pytest.mark.parametrize("name", sorted(RANGE_CASES))
def test_ranges_match_brute_force(name):
    mask_mod, B, H, Sq, Skv, causal = RANGE_CASES[name]
    bm = fa_t.block_mask(mask_mod, B, H, Sq, Skv, causal=causal, device="cpu")
    assert bm.ranges.dtype == torch.int32 and bm.ranges.is_contiguous()
    assert bm.ranges.shape == (B, math.ceil(Sq / 64), 2) == (B, bm.num_groups, 2)
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
    assert bm.ranges[0, 1].tolist() == [0, 0] and bm.ranges[0, 3].tolist() == [0, 0]
    # The last group holds rows 192..249 only; the ones past Sq do not count
    # (a doc-id lookup of row 250+ would be out of bounds).
    bm = fa_t.block_mask(fa_t.document_mask(DOCS[0]), None, None, 200, 200, device="cpu")
    assert bm.ranges.shape == (1, 4, 2)
    last = DOCS[0, 192:]
    assert bm.ranges[0, 3].tolist() == [int((DOCS[0] == last[0]).nonzero()[0]), 200]
    assert 0 < bm.density() < 1


def test_create_block_mask_is_flex_shaped():
    a = fa_t.create_block_mask(fa_t.prefix_lm(30), 1, None, 190, 190, "cpu")
    b = fa_t.block_mask(fa_t.prefix_lm(30), 1, None, 190, 190, device="cpu")
    assert torch.equal(a.ranges, b.ranges) and not a.causal
    c = fa_t.create_block_mask(None, 1, None, 190, 190, "cpu", causal=True)
    assert c.causal and c.ranges[0, 0].tolist() == [0, 64]


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
    assert text.count("%cap2: tensor<2x4x2xi32>") == 2      # both regions' block arguments
    assert text.endswith("\n} {kv_ranges = 2 : i64}")
    assert jit.capture_types(text)[-1] == "tensor<2x4x2xi32>"
    # Without a mask_mod, a mask region that keeps every key carries it.
    text, caps = mods.attention_regions(fa_t.softcap(20.0), None, bm.ranges)
    assert caps == [bm.ranges] and " mask {" in text
    assert "arith.constant true" in text and text.endswith("} {kv_ranges = 0 : i64}")
    # The attribute follows the regions in the JIT input, before the results.
    config = KernelConfig("bf16", 64, 64, 4, 4, causal=True, lse=True)
    mlir = jit.jit_input_mlir(config, text)
    assert "captures(%capture0 : tensor<2x4x2xi32>)" in mlir
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
    bm.ranges[1, 2] = torch.tensor([0, 0], dtype=torch.int32)   # an empty group
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
    assert bm.ranges_for(B, torch.device("cpu")).shape == (B, 3, 2)
