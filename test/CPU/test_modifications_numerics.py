"""CPU numerics of score and mask modifications (fat.attention's regions).

Each configuration writes its modification as MLIR regions of
``fat.attention`` (fatcpu.Mods: the region text and the same function in
numpy), compiles it with ``--fat-to-cpu`` — the regions inlined into the
tiled form as fat.score_mod / fat.mask_mod — and, for the ``tensorized``
ones, through ``--fat-tile --fat-tensorize`` first, then compares with a
dense float64 reference that applies the numpy function to the scaled
scores. Inputs are fresh random normals, outputs poisoned; the variants
are the ones models use: tanh soft-capping (Gemma 2), ALiBi (BLOOM), a
relative position bias table (T5), document masks (packed sequences),
prefix-LM, attention sinks with a sliding window, and a user-written region.
"""

import dataclasses
import re

import pytest

np = pytest.importorskip("numpy")

from fatcpu import Config, Mods, check_result, run_config  # noqa: E402

TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 5e-3}
LSE_TOL = {"f32": 1e-5, "f16": 2e-4, "bf16": 5e-4}

SQ = 150
HEADS = 4
RNG = np.random.default_rng(7)

# softcap: s' = 30·tanh(s / 30)
SOFTCAP = Mods(
    score="""  %c = arith.constant 30.0 : f32
  %x = arith.divf %s, %c : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %t, %c : f32
  fat.yield %r : f32""",
    score_fn=lambda s, b, h, i, j: 30.0 * np.tanh(s / 30.0))

# The soft-cap shifted down: s' = 30·tanh(s / 30) − 25 ∈ [−55, 5]. Its factor
# does not leave the region (the shift), so row-max=bound's reference is
# U = 5 with c = log2 e: c·(U − L) = 86.6, and a row whose keys all sit at
# the low end has every P near 2^−86.6.
SOFTCAP_SHIFTED = Mods(
    score="""  %c = arith.constant 30.0 : f32
  %d = arith.constant 25.0 : f32
  %x = arith.divf %s, %c : f32
  %t = math.tanh %x : f32
  %u = arith.mulf %t, %c : f32
  %r = arith.subf %u, %d : f32
  fat.yield %r : f32""",
    score_fn=lambda s, b, h, i, j: 30.0 * np.tanh(s / 30.0) - 25.0)

# ALiBi: s' = s − slope_h · (i − j), slopes a capture (2^(−8(h+1)/H)).
SLOPES = np.array([2.0 ** (-8.0 * (h + 1) / HEADS) for h in range(HEADS)], dtype=np.float32)
ALIBI = Mods(
    captures=[("slopes", SLOPES)],
    score="""  %sl = tensor.extract %slopes[%h] : tensor<4xf32>
  %d = arith.subi %i, %j : index
  %di = arith.index_cast %d : index to i64
  %df = arith.sitofp %di : i64 to f32
  %p = arith.mulf %sl, %df : f32
  %r = arith.subf %s, %p : f32
  fat.yield %r : f32""",
    score_fn=lambda s, b, h, i, j: s - SLOPES[h].astype(np.float64) * (i - j))

# ALiBi with the slope from the head (2^(−8(h+1)/H), no capture) and the
# term written the other way round: s' = s + slope_h · (j − i).
ALIBI_HEAD = Mods(
    score="""  %c1 = arith.constant 1 : index
  %h1 = arith.addi %h, %c1 : index
  %hi = arith.index_cast %h1 : index to i64
  %hf = arith.sitofp %hi : i64 to f32
  %m2 = arith.constant -2.0 : f32
  %e = arith.mulf %hf, %m2 : f32
  %sl = math.exp2 %e : f32
  %d = arith.subi %j, %i : index
  %di = arith.index_cast %d : index to i64
  %df = arith.sitofp %di : i64 to f32
  %p = arith.mulf %df, %sl : f32
  %r = arith.addf %s, %p : f32
  fat.yield %r : f32""",
    score_fn=lambda s, b, h, i, j: s + 2.0 ** (-2.0 * (h + 1)) * (j - i))

# T5-style relative bias: s' = s + table[h, clamp(j − i + 31, 0, 62)].
TABLE = (RNG.standard_normal((HEADS, 63)) * 0.5).astype(np.float32)
REL_BIAS = Mods(
    captures=[("table", TABLE)],
    score="""  %c0 = arith.constant 0 : index
  %c31 = arith.constant 31 : index
  %c62 = arith.constant 62 : index
  %d = arith.subi %j, %i : index
  %e = arith.addi %d, %c31 : index
  %lo = arith.maxsi %e, %c0 : index
  %idx = arith.minsi %lo, %c62 : index
  %t = tensor.extract %table[%h, %idx] : tensor<4x63xf32>
  %r = arith.addf %s, %t : f32
  fat.yield %r : f32""",
    score_fn=lambda s, b, h, i, j: s + TABLE[h][np.clip(j - i + 31, 0, 62)].astype(np.float64))

# Document mask: keys of the query's own document (8 random-length ones).
DOC = np.sort(RNG.integers(0, 8, SQ)).astype(np.int32)
DOCUMENT = Mods(
    captures=[("doc", DOC)],
    mask="""  %a = tensor.extract %doc[%i] : tensor<150xi32>
  %c = tensor.extract %doc[%j] : tensor<150xi32>
  %same = arith.cmpi eq, %a, %c : i32
  fat.yield %same : i1""",
    mask_fn=lambda b, h, i, j: DOC[np.minimum(i, SQ - 1)] == DOC[np.minimum(j, SQ - 1)])

# Prefix-LM: the first 40 keys are visible to every query (with causal).
PREFIX = Mods(
    mask="""  %n = arith.constant 40 : index
  %p = arith.cmpi slt, %j, %n : index
  %c = arith.cmpi sle, %j, %i : index
  %keep = arith.ori %p, %c : i1
  fat.yield %keep : i1""",
    mask_fn=lambda b, h, i, j: (j < 40) | (j <= i))

# Sinks: a causal sliding window of 32 keys plus the first 4 keys.
SINKS = Mods(
    mask="""  %n = arith.constant 4 : index
  %w = arith.constant 32 : index
  %sink = arith.cmpi slt, %j, %n : index
  %lo = arith.subi %i, %w : index
  %near = arith.cmpi sge, %j, %lo : index
  %back = arith.cmpi sle, %j, %i : index
  %inwin = arith.andi %near, %back : i1
  %keep = arith.ori %sink, %inwin : i1
  fat.yield %keep : i1""",
    mask_fn=lambda b, h, i, j: (j < 4) | ((j >= i - 32) & (j <= i)))

# A user's region: a per-batch temperature and an odd-head boost, with a
# mask hiding keys j ≡ 3 (mod 5) — both regions, two captures, every index.
TEMP = np.array([0.7, 1.3], dtype=np.float32)
USER = Mods(
    captures=[("temp", TEMP)],
    score="""  %t = tensor.extract %temp[%b] : tensor<2xf32>
  %c2 = arith.constant 2 : index
  %odd = arith.remui %h, %c2 : index
  %oi = arith.index_cast %odd : index to i64
  %of = arith.sitofp %oi : i64 to f32
  %y = arith.mulf %s, %t : f32
  %r = arith.addf %y, %of : f32
  fat.yield %r : f32""",
    mask="""  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  %m = arith.remui %j, %c5 : index
  %keep = arith.cmpi ne, %m, %c3 : index
  fat.yield %keep : i1""",
    score_fn=lambda s, b, h, i, j: s * TEMP[b].astype(np.float64) + (h % 2),
    mask_fn=lambda b, h, i, j: np.broadcast_to(j % 5 != 3, (i.shape[0], j.shape[1])))

BASE = dict(Hq=HEADS, Hkv=HEADS, Sq=SQ, Skv=SQ, D=64, block_m=64, block_n=32)
TBASE = dict(BASE, block_n=64)  # wgmma tiles: keys in steps of 16

CONFIGS = [
    Config("softcap_f32", mods=SOFTCAP, magnitude=4.0, **BASE),
    Config("softcap_causal_bf16", dtype="bf16", causal=True, mods=SOFTCAP, magnitude=4.0, **BASE),
    Config("alibi_causal_f32", causal=True, mods=ALIBI, **BASE),
    Config("alibi_gqa_bf16", dtype="bf16", mods=ALIBI, **dict(BASE, Hkv=2)),
    Config("relative_bias_f32", mods=REL_BIAS, **BASE),
    Config("document_causal_f32", causal=True, mods=DOCUMENT, **BASE),
    Config("document_bf16", dtype="bf16", mods=DOCUMENT, **BASE),
    Config("prefix_lm_f32", mods=PREFIX, **BASE),
    Config("sinks_f32", mods=SINKS, **BASE),
    Config("user_regions_batch2_f32", B=2, mods=USER, **BASE),
    Config("user_regions_bshd_dynamic_f32", B=2, layout="bshd", dynamic=True, mods=USER, **BASE),
    # Through the tensorized level: the regions ride between the Q·Kᵀ
    # wgmma and fat.softmax_max.
    Config("softcap_tensorized_mma", dtype="bf16", mods=SOFTCAP, magnitude=4.0,
           tensorize="rowsum=mma rescale=lazy", **TBASE),
    # The soft-cap's factor 30 moved into the softmax constant and the LSE
    # (foldScoreOutputScale): large scores cross the lazy threshold.
    Config("softcap_tensorized_lazy_causal", dtype="bf16", causal=True, mods=SOFTCAP,
           magnitude=40.0, tensorize="rowsum=vector rescale=lazy exp2-poly=0.5", **TBASE),
    # row-max=bound: the reference at the soft-cap's bound, no row maximum
    # and no rescale (BoundRowMax.cpp). Saturated scores (magnitude 40: each
    # tanh near ±1) put whole rows at the low end of the range — the first
    # causal rows see one or two keys — where every P is near 2^(−c·(U−L)).
    Config("softcap_bound_vector", dtype="bf16", mods=SOFTCAP, magnitude=4.0,
           tensorize="rowsum=vector row-max=bound", **TBASE),
    Config("softcap_bound_mma_causal_saturated", dtype="bf16", causal=True, mods=SOFTCAP,
           magnitude=40.0, tensorize="rowsum=mma row-max=bound", **TBASE),
    # Rows with no visible key (causal, Sq > Skv): m stays −inf, l = 0.
    Config("softcap_bound_empty_rows", dtype="bf16", causal=True, mods=SOFTCAP,
           tensorize="rowsum=mma row-max=bound", **dict(TBASE, Skv=100)),
    Config("softcap_shifted_bound_causal_saturated", dtype="bf16", causal=True,
           mods=SOFTCAP_SHIFTED, magnitude=40.0,
           tensorize="rowsum=vector row-max=bound exp2-poly=0.25", **TBASE),
    # tanh-poly: the soft-cap's tanh as fat.score_mod's polynomial where
    # |s/30| <= 1 (per element on the CPU), the precise tanh elsewhere: scores
    # inside the bound, then saturated ones (magnitude 40) that mix both, and
    # the shifted cap through the vector form; tanh-poly=off beside them.
    Config("softcap_tanh_poly_bound_mma", dtype="bf16", mods=SOFTCAP, magnitude=4.0,
           tensorize="tanh-poly=on rowsum=mma row-max=bound", **TBASE),
    Config("softcap_tanh_poly_saturated_causal", dtype="bf16", causal=True, mods=SOFTCAP,
           magnitude=40.0, tensorize="tanh-poly=on rowsum=mma row-max=bound", **TBASE),
    Config("softcap_shifted_tanh_poly_online", dtype="bf16", mods=SOFTCAP_SHIFTED,
           magnitude=40.0, tensorize="tanh-poly=on rowsum=vector row-max=online", **TBASE),
    Config("softcap_tanh_poly_off", dtype="bf16", mods=SOFTCAP, magnitude=4.0,
           tensorize="tanh-poly=off rowsum=mma row-max=bound", **TBASE),
    Config("alibi_tensorized_poly", dtype="bf16", causal=True, mods=ALIBI,
           tensorize="rowsum=vector exp2-poly=0.25", **TBASE),
    # linear-bias=mma: ALiBi's bias as one more k16 step of Q·Kᵀ on bias
    # columns (TensorizeBias.cpp), kernels without an LSE: the causal and
    # full masks, a ragged key length (the last block's padding keys),
    # GQA, the lazy rescale crossing its threshold (magnitude 8), part
    # of the exponentials on the FMA pipe, the slope from the head, and Sq
    # ≠ Skv (the blocks' offset kv_start − q_start up to ±149, its bias to
    # ±37 with slope 1/4).
    Config("alibi_bias_mma_causal", dtype="bf16", causal=True, mods=ALIBI, lse=False,
           tensorize="linear-bias=mma", **TBASE),
    Config("alibi_bias_mma_ragged_gqa", dtype="bf16", mods=ALIBI, lse=False,
           tensorize="linear-bias=mma rowsum=vector", **dict(TBASE, Hkv=2, Skv=100)),
    Config("alibi_bias_mma_lazy", dtype="bf16", causal=True, mods=ALIBI, lse=False,
           magnitude=8.0, tensorize="linear-bias=mma rescale=lazy", **TBASE),
    Config("alibi_bias_mma_poly_head", dtype="bf16", causal=True, mods=ALIBI_HEAD,
           lse=False, tensorize="linear-bias=mma exp2-poly=0.25", **TBASE),
    Config("alibi_bias_mma_head_long_keys", dtype="bf16", mods=ALIBI_HEAD, lse=False,
           tensorize="linear-bias=mma", **dict(TBASE, Sq=64, Skv=300)),
    # linear-bias=weights: ALiBi's bias as the key block's offset in the
    # softmax and weights e^(G·(k − (N−1)/2)) on P·V's [V | ones] rows
    # (fat.key_weights), the same cases as the columns'.
    Config("alibi_weights_causal", dtype="bf16", causal=True, mods=ALIBI, lse=False,
           tensorize="linear-bias=weights", **TBASE),
    Config("alibi_weights_ragged_gqa", dtype="bf16", mods=ALIBI, lse=False,
           tensorize="linear-bias=weights", **dict(TBASE, Hkv=2, Skv=100)),
    Config("alibi_weights_lazy", dtype="bf16", causal=True, mods=ALIBI, lse=False,
           magnitude=8.0, tensorize="linear-bias=weights rescale=lazy", **TBASE),
    Config("alibi_weights_poly_head", dtype="bf16", causal=True, mods=ALIBI_HEAD,
           lse=False, tensorize="linear-bias=weights exp2-poly=0.25", **TBASE),
    Config("alibi_weights_head_long_keys", dtype="bf16", mods=ALIBI_HEAD, lse=False,
           tensorize="linear-bias=weights", **dict(TBASE, Sq=64, Skv=300)),
    # The table's term as Q·Kᵀ's accumulator (relative-bias=accumulator):
    # with the LSE (its factor on m takes the scale), causal and ragged
    # (Sq ≠ Skv: the blocks' j − i spans the table's clamp at both ends).
    Config("relative_bias_accumulator_lse", dtype="bf16", mods=REL_BIAS,
           tensorize="relative-bias=accumulator", **TBASE),
    Config("relative_bias_accumulator_causal_ragged", dtype="f16", causal=True,
           mods=REL_BIAS, tensorize="relative-bias=accumulator rowsum=mma",
           **dict(TBASE, Sq=100, Skv=150)),
    # ALiBi's s − slope·(i − j) is relative too: its term −slope·(i − j) as
    # the accumulator (linear-bias=vector, so the GEMM columns don't take it).
    Config("alibi_accumulator_causal_ragged", dtype="bf16", causal=True, mods=ALIBI,
           tensorize="linear-bias=vector relative-bias=accumulator",
           **dict(TBASE, Sq=100, Skv=150)),
    Config("document_tensorized_lazy", dtype="f16", mods=DOCUMENT,
           tensorize="rowsum=vector rescale=lazy", **TBASE),
    Config("user_tensorized_mma", B=2, dtype="bf16", mods=USER, tensorize="rowsum=mma",
           **TBASE),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name for c in CONFIGS])
def test_modification_against_float64(cfg, record_property):
    res = run_config(cfg)
    if cfg.tensorize is not None:
        ir = res.tensorized_ir
        assert "fat.wgmma" in ir and "fat.qk " not in ir
        if "linear-bias=mma" in cfg.tensorize:  # the region became GEMM columns
            assert "fat.score_mod" not in ir and "fat.bias_query_columns" in ir
            assert re.search(r"fat\.wgmma %\w+, %\w+ transpose_b .*x80xbf16|x80xf16", ir)
        elif "linear-bias=weights" in cfg.tensorize:  # weights on P, run offsets
            assert "fat.score_mod" not in ir and "fat.key_weights" in ir
            assert re.search(r"fat\.softmax_max %\w+, %\w+ scale %\w+ offset\(%", ir)
            assert re.search(r"fat\.softmax_exp %\w+, %\w+ scale %\w+ offset\(%", ir)
        elif "relative-bias=accumulator" in cfg.tensorize:  # the accumulator
            assert "fat.score_mod" not in ir and "fat.score_band" in ir
            assert re.search(r"fat\.wgmma %\w+, %\w+, %\w+ transpose_b", ir)
        elif cfg.mods.score:
            assert "fat.score_mod" in ir
        if cfg.mods is SOFTCAP:  # 30 left the region: c = 30·log2 e
            assert "43.28" in ir and "fat.finalize" in ir and "scale 3.0" in ir
        if "row-max=bound" in cfg.tensorize:  # no maximum, no rescale, l + ΣP
            assert "fat.softmax_max" not in ir and "fat.rescale" not in ir
            assert 'row_max = "bound"' in ir
            assert ("rowsum(%" in ir) == ("rowsum=vector" in cfg.tensorize)
            assert not re.search(r"rowsum\(%\w+, ", ir)
        if cfg.mods.mask:
            assert "fat.mask_mod" in ir
    check_result(cfg, res, TOL, LSE_TOL, record_property)


def test_the_modifications_matter():
    """Each modification changes the result: the reference without it is far
    from the reference with it (so passing is not passing by accident)."""
    from fatcpu import make_inputs, reference_attention
    for mods in (SOFTCAP, ALIBI, REL_BIAS, DOCUMENT, PREFIX, SINKS, USER):
        cfg = Config("probe", B=2, mods=mods, magnitude=4.0, **BASE)
        q, k, v = (a.astype(np.float64) for a in make_inputs(cfg, np.random.default_rng(0)))
        plain, _ = reference_attention(q, k, v, scale=0.125)
        modded, _ = reference_attention(q, k, v, scale=0.125,
                                        score_fn=mods.score_fn, mask_fn=mods.mask_fn)
        assert np.abs(plain - modded).max() > 1e-2


@pytest.mark.parametrize("slope,exact", [(1.1, True), (1.5, False)])
def test_weights_are_exact_up_to_their_bound_only(slope, exact):
    """linear-bias=weights keeps a run's spread |G|·(n − 1)/2 ≤ 35 exact
    (fat.key_weights: |G| ≤ 1.11 over 64-key runs). Past it the kernel's
    weights and offsets are NaN, and fat.finalize passes the NaN l on: that
    head's rows are NaN, not an empty row's plausible zeros. The manifest
    records the bound (linear_bias_max_factor) and fa_t checks a captured
    factor against it before the launch, running the vector form past it
    (test/Python/test_linear_bias_guard.py). Here the bound's place: a
    slope of 1.1 exact, 1.5 (σ = 47) NaN."""
    steep = np.array([slope, 0.5, 0.25, 0.125], dtype=np.float32)
    mods = dataclasses.replace(
        ALIBI, captures=[("slopes", steep)],
        score_fn=lambda s, b, h, i, j: s - steep[h].astype(np.float64) * (i - j))
    cfg = Config(f"alibi_weights_slope_{slope}", dtype="bf16", causal=True, mods=mods,
                 lse=False, tensorize="linear-bias=weights", **TBASE)
    res = run_config(cfg)
    assert res.finite == exact
    if exact:
        assert res.out_error <= TOL["bf16"], res.out_error
