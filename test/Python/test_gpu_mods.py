"""Score / mask modifications in the Hopper kernel against float64, on a GPU.

fa_t.attention(score_mod=…, mask_mod=…) on CUDA tensors runs the kernel
fa-t-opt compiled for the traced regions (here from FA_T_KERNEL_DIR, built
by ``python -m fa_t.aot ... gpu_configs.py:all_configs``). Fresh random
inputs, scores scaled up to ±~50 (the soft-cap's tanh saturates), ragged
lengths, NaN-poisoned outputs, rows whose every key a mask hides (O = 0,
LSE = −inf), modifications reading captured tensors (document ids,
ALiBi slopes, a relative bias table), patched in per call, and a document
mask and prefix-LM with their block masks (key ranges: the kernel skips
blocks outside them, and the mask on blocks inside their full ranges). Tolerances as test_gpu_attention.py's (a few ulps of the type).
Compiled calls (torch.compile, fa_t::attention_mods_fwd) run the same kernels.
"""

import functools

import pytest

from conftest import require_hopper

pytestmark = pytest.mark.gpu
torch = require_hopper()

import fa_t  # noqa: E402
from fa_t import api, mods  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402
from gpu_configs import (ALIBI_4K_SHAPE, ALIBI_BOUND_SHAPE, ALIBI_BOUND_SLOPES,  # noqa: E402
                         MODS_HEAD_DIMS, MODS_SHAPE, WITHOUT_LSE, block_mask_of, modifications)

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
O_ATOL = {torch.bfloat16: 2e-2, torch.float16: 3e-3}
LSE_ATOL = 1e-3


def o_error(o, ref):
    """max |O − ref| / max(1, |ref|): the tolerances are a few ulps of the
    output type at |O| ≥ 1. Masks that leave a row few keys (a document's
    first rows) give |O| near one V row's, up to ~4, where one ulp of bf16 is
    0.03 (test/GPU/mods_error_study.py: the largest errors are ~1.1 ulp there,
    the same with and without the block mask)."""
    return ((o.double() - ref).abs() / ref.abs().clamp_min(1.0)).max().item()


def random_qkv(t, d):
    """Fresh Q, K, V of MODS_SHAPE: scores up to ±~50 (the soft-cap saturates)."""
    b, h, sq, skv = MODS_SHAPE
    q = torch.randn(b, h, sq, d, device="cuda", dtype=t) * 2
    k = torch.randn(b, h, skv, d, device="cuda", dtype=t) * 2
    v = torch.randn(b, h, skv, d, device="cuda", dtype=t)
    return q, k, v


@pytest.mark.parametrize("dtype, d", MODS_HEAD_DIMS, ids=lambda x: str(x))
@pytest.mark.parametrize("name", sorted(modifications()))
def test_modification_matches_float64(dtype, d, name):
    causal, score_mod, mask_mod = modifications("cuda")[name]
    bm = block_mask_of(name, causal, mask_mod, "cuda")  # block sparsity ("-blocks")
    if bm is not None:
        assert bm.density() < 0.5, "the block mask should let the kernel skip key blocks"
    b, h, sq, skv = MODS_SHAPE
    t = DTYPES[dtype]
    q, k, v = random_qkv(t, d)
    scale = d ** -0.5
    regions, captures = mods.attention_regions(score_mod, mask_mod,
                                               None if bm is None else bm.ranges)
    out = torch.full((b, h, sq, d), float("nan"), device="cuda", dtype=t)
    lse = torch.full((b, h, sq), float("nan"), device="cuda", dtype=torch.float32)
    o, l = api._forward(q, k, v, causal=causal, window=(-1, -1), diag=None, scale=scale,
                        want_lse=True, out=out, lse_out=lse, regions=regions, captures=captures,
                        linear_bias_factor=factor_of(score_mod))
    torch.cuda.synchronize()
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal, scale=scale,
                                         score_mod=score_mod, mask_mod=mask_mod,
                                         block_mask=bm)
    assert not torch.isnan(o).any(), "O has NaN: elements left unwritten or NaN produced"
    empty = torch.isneginf(ref_lse)
    assert torch.equal(torch.isneginf(l), empty), "LSE = -inf exactly on rows with no key"
    assert torch.all(o[empty] == 0), "rows with no visible key must be 0"
    err = o_error(o, ref_o)
    assert err <= O_ATOL[t], f"max |O - ref| / max(1, |ref|) = {err:.3g} > {O_ATOL[t]}"
    lerr = (l.double() - ref_lse)[~empty].abs().max().item()
    assert lerr <= LSE_ATOL * max(1.0, ref_lse[~empty].abs().max().item() / 8), \
        f"max |LSE - ref| = {lerr:.3g}"
    # The public call runs the same kernel.
    via_api, via_lse = fa_t.attention(q, k, v, causal=causal, scale=scale,
                                      score_mod=score_mod, mask_mod=mask_mod, return_lse=True,
                                      block_mask=bm)
    assert torch.equal(via_api, o) and torch.equal(via_lse, l)
    if bm is not None:
        # The ranges hide nothing the document mask keeps: the dense kernel
        # of the same mask agrees.
        dense, _ = fa_t.attention(q, k, v, causal=causal, scale=scale, mask_mod=mask_mod,
                                  return_lse=True)  # the LSE kernel gpu_configs builds
        assert o_error(dense, o.double()) <= O_ATOL[t]


def factor_of(score_mod):
    """``_forward``'s linear_bias_factor of a score function, as fa_t.attention
    passes it (a kernel of linear_bias "weights" launches only with it)."""
    return None if score_mod is None else functools.partial(mods.linear_bias_factor, score_mod)


def check_score_kernel_without_lse(q, k, v, causal, score_mod):
    """O of the score region's kernel without LSE (NaN-poisoned output)
    against float64; returns it."""
    (b, h, sq, d), t = q.shape, q.dtype
    scale = d ** -0.5
    regions, captures = mods.attention_regions(score_mod, None, None)
    out = torch.full((b, h, sq, d), float("nan"), device="cuda", dtype=t)
    o, _ = api._forward(q, k, v, causal=causal, window=(-1, -1), diag=None, scale=scale,
                        want_lse=False, out=out, regions=regions, captures=captures,
                        linear_bias_factor=factor_of(score_mod))
    torch.cuda.synchronize()
    ref_o, _ = attention_reference(q, k, v, causal=causal, scale=scale, score_mod=score_mod)
    assert not torch.isnan(o).any(), "O has NaN: elements left unwritten or NaN produced"
    err = o_error(o, ref_o)
    assert err <= O_ATOL[t], f"max |O - ref| / max(1, |ref|) = {err:.3g} > {O_ATOL[t]}"
    return o


@pytest.mark.parametrize("dtype, d", MODS_HEAD_DIMS, ids=lambda x: str(x))
@pytest.mark.parametrize("name", WITHOUT_LSE)
def test_score_kernel_without_lse(dtype, d, name):
    # Without LSE the kernel evaluates ALiBi with every row of a tile at its
    # first (rows_at_origin): each row's scores shift by a constant the
    # softmax ignores; the soft-cap's bound reference sums P on the tensor
    # cores (the ones columns). O matches float64 and the LSE kernel's O.
    causal, score_mod, _ = modifications("cuda")[name]
    t = DTYPES[dtype]
    q, k, v = random_qkv(t, d)
    scale = d ** -0.5
    o = check_score_kernel_without_lse(q, k, v, causal, score_mod)
    with_lse, _ = fa_t.attention(q, k, v, causal=causal, scale=scale, score_mod=score_mod,
                                 return_lse=True)
    assert o_error(with_lse, o.double()) <= O_ATOL[t]


@pytest.mark.parametrize("d", (64, 128))
@pytest.mark.parametrize("name", ("softcap", "softcap-causal"))
def test_softcap_across_the_cap(d, name):
    # The bf16 soft-cap with scores well inside the cap, far past it (~10·A)
    # and inside it but for one large key every 300 — the three regimes a
    # kernel's tanh sees (tanh-poly=on would split them into its two
    # versions by warp and key block; run 153 checked those kernels against
    # float64 on the device, auto builds MUFU's).
    causal, score_mod, _ = modifications("cuda")[name]
    b, h, sq, skv = MODS_SHAPE
    q, k, v = random_qkv(torch.bfloat16, d)
    q = q * 0.25
    q[:, h // 3: 2 * h // 3] *= 40.0
    k[:, 2 * h // 3:, ::300] *= 40.0
    for want_lse in (False, True):
        scale = d ** -0.5
        regions, captures = mods.attention_regions(score_mod, None, None)
        out = torch.full((b, h, sq, d), float("nan"), device="cuda", dtype=torch.bfloat16)
        o, _ = api._forward(q, k, v, causal=causal, window=(-1, -1), diag=None, scale=scale,
                            want_lse=want_lse, out=out, regions=regions, captures=captures)
        torch.cuda.synchronize()
        ref_o, _ = attention_reference(q, k, v, causal=causal, scale=scale, score_mod=score_mod)
        assert not torch.isnan(o).any()
        for heads in (slice(0, h // 3), slice(h // 3, 2 * h // 3), slice(2 * h // 3, h)):
            err = o_error(o[:, heads], ref_o[:, heads])
            assert err <= O_ATOL[torch.bfloat16], f"heads {heads}: {err:.3g}"


def test_alibi_with_three_warpgroups():
    # Causal ALiBi at D64 tuned for 4k keys without the LSE runs as weights
    # on P with 192 query rows (three consumer warpgroups, the dynamic tile
    # scheduler, the tile overlap; its factor computed per head in the
    # kernel): checked against float64.
    causal, score_mod, _ = modifications("cuda")["alibi-causal"]
    b, h, sq, skv = ALIBI_4K_SHAPE
    t, d = torch.bfloat16, 64
    q = torch.randn(b, h, sq, d, device="cuda", dtype=t) * 2
    k = torch.randn(b, h, skv, d, device="cuda", dtype=t) * 2
    v = torch.randn(b, h, skv, d, device="cuda", dtype=t)
    regions, _ = mods.attention_regions(score_mod, None, None)
    manifest = fa_t.find_kernel(fa_t.KernelConfig("bf16", d, d, h, h, causal=True),
                                seq_len=skv, regions=regions, allow_jit=False)
    assert "_m192" in manifest.ptx and manifest.linear_bias == "weights", manifest.ptx
    check_score_kernel_without_lse(q, k, v, causal, score_mod)


def test_alibi_past_the_weights_bound(monkeypatch):
    # The weights form (ALiBi's default here) writes zeros where |slope|
    # passes its bound: slopes 1.5 and 3.0 must run the vector form's kernel,
    # found when the plan is first called, and give the float64 answer;
    # scaled into the bound in place, the same plan runs the weights again.
    b, h, s = ALIBI_BOUND_SHAPE
    t, d = torch.bfloat16, 64
    slopes = torch.tensor(ALIBI_BOUND_SLOPES, device="cuda")
    score_mod = fa_t.alibi(slopes)
    regions, captures = mods.attention_regions(score_mod)
    monkeypatch.setattr(api, "_plans", {})
    q = torch.randn(b, h, s, d, device="cuda", dtype=t) * 2
    k = torch.randn(b, h, s, d, device="cuda", dtype=t) * 2
    v = torch.randn(b, h, s, d, device="cuda", dtype=t)
    for expect_weights in (False, True):
        o = fa_t.attention(q, k, v, causal=True, score_mod=score_mod)
        out = torch.full((b, h, s, d), float("nan"), device="cuda", dtype=t)
        poisoned, _ = api._forward(q, k, v, causal=True, window=(-1, -1), diag=None,
                                   scale=d ** -0.5, want_lse=False, out=out, regions=regions,
                                   captures=captures, linear_bias_factor=factor_of(score_mod))
        torch.cuda.synchronize()
        (plan,) = api._plans.values()  # the call's scale is the default's: one plan
        assert plan.kernel.manifest.linear_bias == "weights", plan.kernel.manifest.entry
        chosen = plan.guard.choice[1]
        assert (chosen.manifest.linear_bias == "weights") == expect_weights, \
            chosen.manifest.entry
        ref, _ = attention_reference(q, k, v, causal=True, score_mod=score_mod)
        for got in (o, poisoned):
            assert not torch.isnan(got).any(), "O has NaN: elements left unwritten"
            err = o_error(got, ref)
            assert err <= O_ATOL[t], f"max |O - ref| / max(1, |ref|) = {err:.3g} > {O_ATOL[t]}"
        slopes.div_(4)  # 0.75 at most: within the bound
    assert plan.guard.evaluations == 2


def test_weights_past_their_bound_unchecked_give_nan_rows(monkeypatch):
    # What a caller that bypasses the launcher's check sees (the C ABI, a
    # replayed CUDA graph whose slopes were edited in place): the weights
    # kernel with a slope past its bound writes that head's rows NaN, not
    # an empty row's plausible zeros; the other heads stay exact.
    b, h, s = ALIBI_BOUND_SHAPE
    t, d = torch.bfloat16, 64
    slopes = torch.tensor(ALIBI_BOUND_SLOPES, device="cuda")  # heads 1, 3 past it
    score_mod = fa_t.alibi(slopes)
    monkeypatch.setattr(api, "_plans", {})
    monkeypatch.setattr(api._LinearBiasGuard, "kernel", lambda self, *args: self.weights)
    q = torch.randn(b, h, s, d, device="cuda", dtype=t) * 2
    k = torch.randn(b, h, s, d, device="cuda", dtype=t) * 2
    v = torch.randn(b, h, s, d, device="cuda", dtype=t)
    o = fa_t.attention(q, k, v, causal=True, score_mod=score_mod)
    torch.cuda.synchronize()
    (plan,) = api._plans.values()
    assert plan.kernel.manifest.linear_bias == "weights", plan.kernel.manifest.entry
    past = slopes.abs() > plan.kernel.manifest.linear_bias_max_factor
    assert past.tolist() == [False, True, False, True]
    assert torch.isnan(o[:, past]).all(), "heads past the bound must be NaN"
    ref, _ = attention_reference(q, k, v, causal=True, score_mod=score_mod)
    err = o_error(o[:, ~past], ref[:, ~past])
    assert err <= O_ATOL[t], f"max |O - ref| / max(1, |ref|) = {err:.3g} > {O_ATOL[t]}"


def test_captured_tensors_are_read_per_call():
    # The regions' text fixes a capture's shape, not its data: one plan
    # serves every slopes tensor of that shape (ALiBi's, as "alibi-slopes"),
    # each call's patched in; a strided one is copied contiguous first.
    b, h, sq, skv = MODS_SHAPE
    dtype, d = MODS_HEAD_DIMS[0]
    t = DTYPES[dtype]
    q = torch.randn(b, h, sq, d, device="cuda", dtype=t) * 2
    k = torch.randn(b, h, skv, d, device="cuda", dtype=t) * 2
    v = torch.randn(b, h, skv, d, device="cuda", dtype=t)
    keys = []
    for slopes in (torch.rand(h, device="cuda"), torch.rand(h, 2, device="cuda")[:, 1]):
        def score_mod(score, b, h, q_idx, kv_idx):
            return score - slopes[h] * (q_idx - kv_idx)
        o, _ = fa_t.attention(q, k, v, causal=True, score_mod=score_mod, return_lse=True)
        torch.cuda.synchronize()
        ref, _ = attention_reference(q, k, v, causal=True, score_mod=score_mod)
        err = o_error(o, ref)
        assert err <= O_ATOL[t], f"max |O - ref| / max(1, |ref|) = {err:.3g} > {O_ATOL[t]}"
        keys.append(set(api._plans))
    assert keys[0] == keys[1], "the second slopes tensor planned anew"


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_calls_run_the_eager_kernels(backend):
    # Under torch.compile(fullgraph=True) each call is fa_t::attention_mods_fwd,
    # whose CUDA implementation is the eager cached path: the same kernels, the
    # same numbers. The captured tensors are graph inputs: values written into
    # them reach the compiled graph.
    torch._dynamo.reset()
    b, h, sq, skv = MODS_SHAPE
    dtype, d = MODS_HEAD_DIMS[0]
    t = DTYPES[dtype]
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=t) for n in (sq, skv, skv))
    slopes = torch.rand(h, device="cuda")
    alibi = fa_t.alibi(slopes)  # holds slopes itself (float32, contiguous)
    causal, _, document = modifications("cuda")["document-causal-blocks"]
    bm = block_mask_of("document-causal-blocks", causal, document, "cuda")

    def f(q, k, v):
        o, lse = fa_t.attention(q, k, v, causal=True, score_mod=alibi, return_lse=True)
        o2, lse2 = fa_t.attention(q, k, v, causal=causal, mask_mod=document, block_mask=bm,
                                  return_lse=True)
        return o, lse, o2, lse2

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    outs = []
    with torch.no_grad():
        for _ in range(2):
            got = compiled(q, k, v)
            for g, want in zip(got, f(q, k, v)):
                assert torch.equal(g, want)
            outs.append(got[0])
            slopes.mul_(2.0)
    assert not torch.equal(outs[0], outs[1])
