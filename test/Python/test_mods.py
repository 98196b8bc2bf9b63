"""fa_t.mods: FlexAttention-style score_mod / mask_mod, on the CPU path.

Each helper and a user-written pair run through fa_t.attention on CPU
tensors and are compared with a float64 reference written directly from
their formulas (not through fa_t.mods); the tracer's refusals name the
operation. The traced regions are compiled by fa-t itself in
test/CPU/test_traced_mods.py.
"""

import math

import pytest

torch = pytest.importorskip("torch")

import fa_t  # noqa: E402
from fa_t import mods  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402

B, H, S, D = 2, 4, 70, 32


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, S, D, generator=g, dtype=torch.float64) for _ in range(3))


def reference(q, k, v, scale, fn):
    """Dense float64 attention where ``fn(s, b, h, i, j)`` returns the
    modified scaled score, or −inf for a hidden key."""
    out = torch.zeros_like(q)
    for b in range(B):
        for h in range(H):
            s = (q[b, h] @ k[b, h].T) * scale
            m = torch.tensor([[fn(s[i, j].item(), b, h, i, j) for j in range(S)]
                              for i in range(S)], dtype=torch.float64)
            out[b, h] = torch.softmax(m, dim=-1) @ v[b, h]
    return out


SLOPES = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)])
DOCS = torch.sort(torch.randint(0, 5, (S,), generator=torch.Generator().manual_seed(3))).values


CASES = {
    "softcap": (dict(score_mod=fa_t.softcap(2.0)),
                lambda s, b, h, i, j: 2.0 * math.tanh(s / 2.0)),
    "alibi": (dict(score_mod=fa_t.alibi(SLOPES)),
              lambda s, b, h, i, j: s - SLOPES[h].item() * (i - j)),
    "document": (dict(mask_mod=fa_t.document_mask(DOCS)),
                 lambda s, b, h, i, j: s if DOCS[i] == DOCS[j] else -math.inf),
    "document_runs": (dict(mask_mod=fa_t.document_mask(DOCS, runs=True)),
                      lambda s, b, h, i, j: s if DOCS[i] == DOCS[j] else -math.inf),
    "prefix_lm": (dict(mask_mod=fa_t.prefix_lm(10)),
                  lambda s, b, h, i, j: s if (j < 10 or j <= i) else -math.inf),
    "user": (dict(score_mod=lambda s, b, h, q, k: torch.where(q >= k, s * (b + 1), s - 1.0),
                  mask_mod=lambda b, h, q, k: (k % 3 != 1) | (h == 0)),
             lambda s, b, h, i, j: (s * (b + 1) if i >= j else s - 1.0)
             if (j % 3 != 1 or h == 0) else -math.inf),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_attention_with_mods(name):
    kwargs, fn = CASES[name]
    q, k, v = inputs()
    ref = reference(q, k, v, 1 / math.sqrt(D), fn)
    out = fa_t.attention(q, k, v, **kwargs)
    assert torch.allclose(out, ref, atol=1e-10, rtol=1e-10)
    # float32 inputs compute in float32
    out32 = fa_t.attention(q.float(), k.float(), v.float(), **kwargs)
    assert (out32.double() - ref).abs().max() < 1e-4


def test_mods_with_causal_and_lse():
    q, k, v = inputs(1)
    o, lse = fa_t.attention(q, k, v, causal=True, return_lse=True,
                            score_mod=fa_t.softcap(5.0))
    s = 5.0 * torch.tanh((q @ k.transpose(-1, -2)) / math.sqrt(D) / 5.0)
    s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    assert torch.allclose(o, torch.softmax(s, -1) @ v, atol=1e-10)
    assert torch.allclose(lse.double(), torch.logsumexp(s, -1), atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda s, b, h, q, k: k * 0.1,          # a term of the key alone
    lambda s, b, h, q, k: q * 0.1 + h,      # of the row and head
    lambda s, b, h, q, k: q - k,            # an integer expression
    lambda s, b, h, q, k: 1.5,              # a number
], ids=["key", "row-head", "integer", "number"])
def test_score_mods_that_ignore_indices_under_a_causal_mask(fn):
    # The CPU path evaluates a function on broadcast indices; what it
    # returns may be a view broadcast over rows (or a plain number), which
    # the causal mask must not write through (it once did: max error 3.1).
    q, k, v = inputs(2)
    i = torch.arange(S).view(1, 1, S, 1)
    j = torch.arange(S).view(1, 1, 1, S)
    hh = torch.arange(H).view(1, H, 1, 1)
    s = torch.broadcast_to(torch.as_tensor(fn(None, 0, hh, i, j)), (B, H, S, S)).double()
    ref = torch.softmax(s.masked_fill(j > i, float("-inf")), -1) @ v
    o = fa_t.attention(q, k, v, causal=True, score_mod=fn)
    assert torch.allclose(o, ref, atol=1e-10)
    # and fa_t.reference, the GPU tests' oracle, takes such functions too
    assert torch.allclose(attention_reference(q, k, v, causal=True, score_mod=fn)[0], ref,
                          atol=1e-10)
    # float32: a float32 term is returned as the very broadcast view
    o32 = fa_t.attention(q.float(), k.float(), v.float(), causal=True, score_mod=fn)
    assert (o32.double() - ref).abs().max() < 1e-5


def test_trace_writes_regions():
    text, caps = mods.attention_regions(score_mod=fa_t.alibi(SLOPES),
                                        mask_mod=fa_t.document_mask(DOCS))
    assert "score {" in text and "mask {" in text
    assert "tensor.extract %cap0[%h] : tensor<4xf32>" in text
    assert "tensor.extract %cap1[%q_idx] : tensor<70xi32>" in text
    assert text.count("fat.yield") == 2
    assert [c.dtype for c in caps] == [torch.float32, torch.int32]
    # Both regions see both captures, in one order.
    assert text.count("%cap0: tensor<4xf32>, %cap1: tensor<70xi32>") == 2


@pytest.mark.parametrize("fn, kind, message", [
    (lambda s, b, h, q, k: torch.sin(s), "score", "sin is not supported"),
    (lambda s, b, h, q, k: s if q > k else -s, "score", "could not be traced"),
    (lambda b, h, q, k: q - k, "mask", "must return a boolean"),
    (lambda s, b: s, "score", "takes (score, b, h, q_idx, kv_idx)"),
    (lambda s, b, h, q, k: (s, s), "score", "must return one value, got a tuple of 2"),
    (lambda b, h, q, k: [q > k], "mask", "must return one value, got a list of 1"),
])
def test_unsupported_functions_are_refused(fn, kind, message):
    with pytest.raises((NotImplementedError, TypeError), match=message.replace("(", r"\(")
                       .replace(")", r"\)")):
        mods.trace(fn, kind)


def test_attention_refuses_an_untraceable_mod_before_running():
    q, k, v = inputs()
    with pytest.raises(NotImplementedError, match="sin is not supported"):
        fa_t.attention(q, k, v, score_mod=lambda s, b, h, qi, ki: torch.sin(s))
    with pytest.raises(TypeError, match="expected mask_mod to be callable"):
        fa_t.attention(q, k, v, mask_mod=3)


def test_helpers_check_their_arguments():
    with pytest.raises(ValueError, match="positive soft-cap"):
        fa_t.softcap(0)


def test_modifications_in_the_kernel_config():
    # A kernel of modifications carries the compiler's key in its manifest
    # config; a plain kernel's config (and JIT cache key) is unchanged.
    from fa_t import jit
    from fa_t.config import KernelConfig
    plain = KernelConfig("bf16", 128, 128, 16, 16, causal=True)
    assert "modifications" not in plain.to_dict()
    keyed = KernelConfig.from_dict(dict(plain.to_dict(), modifications="f69a6e72"))
    assert keyed.modifications == "f69a6e72" and keyed.to_dict()["modifications"] == "f69a6e72"
    regions, caps = mods.attention_regions(score_mod=fa_t.softcap(30.0))
    assert caps == []
    text = jit.jit_input_mlir(plain, regions)
    assert text.index("causal") < text.index(" score {") < text.index("    -> tensor")
    assert "math.tanh" in text
    assert jit.cache_key(plain, {}, "c") != jit.cache_key(plain, {}, "c", regions)
    assert jit.regions_id(regions) == jit.regions_id(str(regions))


def test_jit_input_passes_captures():
    # The tensors a modification reads are the JIT function's last arguments
    # and fat.attention's captures(...), typed by the regions' block
    # arguments: another capture shape is another kernel.
    from fa_t import jit
    from fa_t.config import KernelConfig
    regions, _ = mods.attention_regions(score_mod=fa_t.alibi(SLOPES),
                                        mask_mod=fa_t.document_mask(DOCS))
    types = ["tensor<4xf32>", "tensor<70xi32>"]
    assert jit.capture_types(regions) == types
    args = "%capture0: tensor<4xf32>, %capture1: tensor<70xi32>) -> ("
    clause = "    captures(%capture0, %capture1 : tensor<4xf32>, tensor<70xi32>)\n"
    causal = KernelConfig("bf16", 64, 64, H, H, causal=True, lse=True)
    text = jit.jit_input_mlir(causal, regions)
    assert f"%lse: tensor<?x4x?xf32>, %diag: index, {args}" in text
    assert f"    diagonal(%diag)\n{clause}    causal\n score {{" in text
    plain = KernelConfig("bf16", 64, 64, H, H)
    text = jit.jit_input_mlir(plain, regions)
    assert f"%o: tensor<?x4x?x64xbf16>, {args}" in text
    assert f"    outs(%o : tensor<?x4x?x64xbf16>)\n{clause} score {{" in text
    softcap, _ = mods.attention_regions(score_mod=fa_t.softcap(30.0))
    assert jit.capture_types(softcap) == [] and "captures" not in jit.jit_input_mlir(plain,
                                                                                   softcap)
    longer, _ = mods.attention_regions(score_mod=fa_t.alibi(SLOPES),
                                       mask_mod=fa_t.document_mask(torch.cat([DOCS, DOCS])))
    assert jit.capture_types(longer)[1] == "tensor<140xi32>"
    assert jit.cache_key(plain, {}, "c", regions) != jit.cache_key(plain, {}, "c", longer)


def test_batched_document_mask():
    # doc_ids [B, S]: one packing per batch entry, read as doc_ids[b, q_idx].
    docs = torch.stack([DOCS, DOCS.flip(0)])
    q, k, v = inputs(2)
    ref = reference(q, k, v, 1 / math.sqrt(D),
                    lambda s, b, h, i, j: s if docs[b, i] == docs[b, j] else -math.inf)
    out = fa_t.attention(q, k, v, mask_mod=fa_t.document_mask(docs))
    assert torch.allclose(out, ref, atol=1e-10, rtol=1e-10)
    text, _ = mods.attention_regions(mask_mod=fa_t.document_mask(docs))
    assert "tensor.extract %cap0[%b, %q_idx] : tensor<2x70xi32>" in text


def test_document_runs():
    # runs=True: the query's run [first, end) instead of id against id, two
    # int32 bounds read per row; the same mask wherever the promise holds.
    docs = torch.stack([DOCS, DOCS.flip(0)]).int()
    text, caps = mods.attention_regions(mask_mod=fa_t.document_mask(docs, runs=True))
    assert "tensor.extract %cap0[%b, %q_idx] : tensor<2x70xi32>" in text
    assert "tensor.extract %cap1[%b, %q_idx] : tensor<2x70xi32>" in text
    assert "%kv_idx]" not in text
    first, end = torch.minimum(*caps), torch.maximum(*caps)    # first < end everywhere
    for b in range(2):
        for i in range(S):
            run = (docs[b] == docs[b, i]).nonzero().flatten()
            assert (first[b, i].item(), end[b, i].item()) == (run[0].item(), run[-1].item() + 1)
    q, k, v = inputs(5)
    by_ids = fa_t.attention(q, k, v, causal=True, mask_mod=fa_t.document_mask(docs))
    by_runs = fa_t.attention(q, k, v, causal=True, mask_mod=fa_t.document_mask(docs, runs=True))
    assert torch.equal(by_ids, by_runs)
    ids = fa_t.block_mask(fa_t.document_mask(docs), 2, None, S, S, causal=True, device="cpu")
    runs = fa_t.block_mask(fa_t.document_mask(docs, runs=True), 2, None, S, S, causal=True,
                           device="cpu")
    assert torch.equal(ids.ranges, runs.ranges)
    # One position, one document per position, one document.
    for ids1 in ([7], list(range(5)), [3] * 5):
        f, e = mods._document_runs(torch.tensor(ids1))
        assert all(f[i] <= i < e[i] for i in range(len(ids1)))


def test_document_runs_refusals():
    with pytest.raises(ValueError, match=r"document_mask\(runs=True\): a document id occurs "
                                         r"in more than one run"):
        fa_t.document_mask(torch.tensor([0, 0, 1, 0]), runs=True)
    with pytest.raises(TypeError, match="expected runs to be a bool, got int"):
        fa_t.document_mask(DOCS, runs=1)
    with pytest.raises(ValueError, match=r"expected doc_ids to be \[S\] or \[B, S\], got "
                                         r"shape \(1, 2, 3\)"):
        fa_t.document_mask(torch.zeros(1, 2, 3))
    # The id form has no such promise.
    fa_t.document_mask(torch.tensor([0, 0, 1, 0]))


def test_captured_tensors_off_the_cpu():
    # Captures reach the Hopper kernel: a call on tensors that are neither
    # CPU nor CUDA (meta) is refused as any such call is, after tracing.
    q = torch.empty(B, H, S, D, device="meta", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"expected q to be on a CUDA device, got meta"):
        fa_t.attention(q, q, q, score_mod=fa_t.alibi(SLOPES))


def test_too_many_captures_are_refused_before_anything_runs():
    from fa_t import checks
    tables = [torch.zeros(2) for _ in range(checks.MAX_CAPTURES + 1)]
    with pytest.raises(NotImplementedError, match="at most 11"):
        checks.check_captures(tables, tables[0].device)
    checks.check_captures(tables[:-1], tables[0].device)


@pytest.fixture
def traces(monkeypatch):
    """Counts the traces attention_regions runs (an empty cache first)."""
    monkeypatch.setattr(mods, "_TRACED", type(mods._TRACED)())
    count = [0]
    real = mods.trace_regions

    def counting(*args):
        count[0] += 1
        return real(*args)
    monkeypatch.setattr(mods, "trace_regions", counting)
    return count


def test_regions_of_a_function_are_traced_once(traces):
    slopes = torch.rand(4)
    text, captures = mods.attention_regions(fa_t.alibi(slopes))
    again, captures2 = mods.attention_regions(fa_t.alibi(slopes))  # a new closure, same values
    assert traces[0] == 1 and again == text
    assert captures2 is not captures and len(captures2) == 1 and captures2[0] is slopes
    mods.attention_regions(fa_t.alibi(torch.rand(4)))  # another tensor: its own capture
    mods.attention_regions(fa_t.alibi(torch.rand(8)))  # another shape: another text
    mods.attention_regions(fa_t.softcap(30.0))
    t2, _ = mods.attention_regions(fa_t.softcap(20.0))  # another number: another text
    assert traces[0] == 5 and "20.0" in t2


def test_rebound_closures_and_globals_trace_again(traces):
    table = torch.rand(4)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[h]
    _, (first,) = mods.attention_regions(score_mod)
    table = torch.rand(4)  # the closure's cell now holds another tensor
    _, (second,) = mods.attention_regions(score_mod)
    assert first is not second and second is table and traces[0] == 2
    ns = {"C": 2.0}
    exec("def scaled(score, b, h, q_idx, kv_idx):\n    return score * C", ns)
    t1, _ = mods.attention_regions(ns["scaled"])
    ns["C"] = 3.0  # a global number the trace baked into the text
    t2, _ = mods.attention_regions(ns["scaled"])
    assert t1 != t2 and "3.0" in t2 and traces[0] == 4
    mods.attention_regions(ns["scaled"])
    assert traces[0] == 4
    ns["C"] = -0.0  # equal to 0.0, but another constant in the text
    t3, _ = mods.attention_regions(ns["scaled"])
    ns["C"] = 0.0
    t4, _ = mods.attention_regions(ns["scaled"])
    assert t3 != t4 and traces[0] == 6


def test_modules_and_ranges(traces):
    class Bias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.rand(4)

        def forward(self, score, b, h, q_idx, kv_idx):
            return score + self.table[h]
    bias = Bias()
    mods.attention_regions(bias)
    bias.table = torch.rand(4)
    _, (t,) = mods.attention_regions(bias)
    assert traces[0] == 2 and t is bias.table, "a module's attributes are not keyed: traced"
    mask = fa_t.prefix_lm(3)
    r1 = torch.zeros(1, 2, 2, 4, dtype=torch.int32)
    r2 = torch.zeros(1, 2, 2, 4, dtype=torch.int32)
    text1, caps1 = mods.attention_regions(None, mask, r1)
    text2, caps2 = mods.attention_regions(None, mask, r2)
    assert text1 == text2 and caps1[-1] is r1 and caps2[-1] is r2 and traces[0] == 3


def test_the_trace_cache_is_bounded(traces, monkeypatch):
    monkeypatch.setattr(mods, "TRACED_MAX", 3)
    for c in range(5):
        mods.attention_regions(fa_t.softcap(float(c + 1)))
    assert len(mods._TRACED) == 3
    mods.attention_regions(fa_t.softcap(1.0))  # evicted: traced again
    assert traces[0] == 6


def test_eager_calls_check_a_function_once(monkeypatch):
    monkeypatch.setattr(mods, "_TRACED", type(mods._TRACED)())
    count = [0]
    real = mods.trace

    def counting(fn, kind):
        count[0] += 1
        return real(fn, kind)
    monkeypatch.setattr(mods, "trace", counting)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    for _ in range(3):
        fa_t.attention(q, k, v, score_mod=fa_t.softcap(30.0))
    assert count[0] == 1
    with pytest.raises(NotImplementedError):  # a refusal is not cached
        fa_t.attention(q, k, v, score_mod=lambda s, b, h, i, j: torch.sin(s))
    with pytest.raises(NotImplementedError):
        fa_t.attention(q, k, v, score_mod=lambda s, b, h, i, j: torch.sin(s))


def test_kernel_dir_reaches_the_modified_kernel(monkeypatch):
    # A CUDA call (fake tensors here) takes the kernel path: the call's
    # kernel_dir is the one the plan looks kernels up in.
    from fa_t import api
    seen = {}

    def forward(q, k, v, **kw):
        seen.update(kw)
        return q, None
    monkeypatch.setattr(api, "_forward", forward)
    from fakes import BF16, FakeTensor
    q, k, v = (FakeTensor((1, 2, 16, 64), BF16, ptr=0x1000 * (i + 1)) for i in range(3))
    fa_t.attention(q, k, v, score_mod=fa_t.softcap(30.0), kernel_dir="/some/kernels")
    assert seen["kernel_dir"] == "/some/kernels" and seen["regions"]
