"""CPU numerics of the tensorized level: every --fat-tensorize choice against float64.

Each configuration is tiled, tensorized (``fa-t-opt --fat-tile --fat-tensorize``,
printed), then lowered with ``--fat-to-cpu`` and run on fresh random inputs
with poisoned outputs (fatcpu.run_config). The tensorized ops decompose with
the GPU kernel's rounding points — P rounded to the input type before the
P·V wgmma, the row sum taken from that rounded P by the ones columns
(``rowsum=mma``), the lazy rescale's threshold test and α = 1 for rows that
keep their reference, the FMA-pipe exponential bit for bit — so this suite
checks the numerics of each choice the GPU can make, on any machine.

Tolerances are the 16-bit ones of the untensorized suite
(test_cpu_numerics.py); with ``rowsum=mma`` the row sum l carries P's
rounding, so the LSE bound is that of the rounded P (a few bf16/f16 ulps
averaged over the row: within 5e-4 / 2e-4, against ~5e-8 with vector
sums — the suite sees the difference).
"""

import re

import pytest

np = pytest.importorskip("numpy")

from fatcpu import Config, make_inputs, check_result, run_config  # noqa: E402

TOL = {"f16": 1e-3, "bf16": 5e-3}
LSE_TOL = {"f16": 2e-4, "bf16": 5e-4}

MMA, VEC = "rowsum=mma", "rowsum=vector"
LAZY, ALWAYS = "rescale=lazy", "rescale=always"

CONFIGS = [
    # Each choice alone, D = 64, bf16, 200 keys (a ragged last block).
    Config("vector_always", dtype="bf16", Sq=200, Skv=200, tensorize=f"{VEC} {ALWAYS}"),
    Config("mma_always", dtype="bf16", Sq=200, Skv=200, tensorize=f"{MMA} {ALWAYS}"),
    Config("vector_lazy", dtype="bf16", Sq=200, Skv=200, tensorize=f"{VEC} {LAZY}"),
    Config("mma_lazy", dtype="bf16", Sq=200, Skv=200, tensorize=f"{MMA} {LAZY}"),
    Config("poly_quarter", dtype="bf16", Sq=200, Skv=200, tensorize=f"{VEC} exp2-poly=0.25"),
    Config("poly_all", dtype="bf16", Sq=200, Skv=200, tensorize=f"{VEC} exp2-poly=1"),
    Config("poly_eighth_mma_lazy", dtype="f16", Sq=130, Skv=300,
           tensorize=f"{MMA} {LAZY} exp2-poly=0.125"),
    # The lazy threshold crossed and not crossed: scores ~1e4 move some
    # rows' reference by far more than τ and leave others within it.
    Config("lazy_crossing_tau8", dtype="bf16", Sq=128, Skv=256, magnitude=15.0,
           tensorize=f"{VEC} {LAZY} rescale-threshold=8"),
    Config("lazy_tau0_mma", dtype="bf16", Sq=128, Skv=256, magnitude=15.0,
           tensorize=f"{MMA} {LAZY} rescale-threshold=0"),
    Config("lazy_tau16_causal", dtype="f16", Sq=192, Skv=192, magnitude=3.0, causal=True,
           block_m=192, tensorize=f"{VEC} {LAZY} rescale-threshold=16"),
    # Masks.
    Config("causal_mma", dtype="bf16", Sq=256, Skv=256, causal=True, block_n=64,
           tensorize=f"{MMA} {ALWAYS}"),
    Config("causal_sq_lt_skv_lazy", dtype="bf16", Sq=70, Skv=200, causal=True,
           tensorize=f"{VEC} {LAZY}"),
    Config("causal_empty_rows_lazy_mma", dtype="bf16", Sq=150, Skv=37, causal=True,
           tensorize=f"{MMA} {LAZY}"),
    Config("window_16_8_poly", dtype="bf16", Sq=130, Skv=130, window=(16, 8),
           tensorize=f"{VEC} exp2-poly=0.5"),
    Config("window_empty_rows_mma", dtype="f16", Sq=64, Skv=16, window=(2, 2), diagonal=0,
           tensorize=f"{MMA} {LAZY}"),
    # GQA / MQA, batch, ragged lengths.
    Config("gqa_8_2_causal_mma", dtype="bf16", Hq=8, Hkv=2, Sq=65, Skv=65, causal=True,
           tensorize=f"{MMA} {ALWAYS}"),
    Config("mqa_4_1_lazy", dtype="bf16", B=2, Hq=4, Hkv=1, Sq=40, Skv=90,
           tensorize=f"{VEC} {LAZY}"),
    Config("ragged_17_257_causal", dtype="bf16", Sq=17, Skv=257, causal=True,
           tensorize=f"{MMA} {LAZY} exp2-poly=0.25"),
    Config("ragged_257_1", dtype="f16", Sq=257, Skv=1, tensorize=f"{MMA} {ALWAYS}"),
    # Head dims: D = 128 with 64-key blocks; D = 256 (no room for ones
    # columns: vector row sums); Dv ≠ D with the ones columns (N = 40).
    Config("d128_gqa_lazy", dtype="bf16", Hq=4, Hkv=2, D=128, Sq=70, Skv=130, block_n=64,
           tensorize=f"{VEC} {LAZY}"),
    Config("d256_vector", dtype="bf16", D=256, Sq=96, Skv=96, block_n=48,
           tensorize=f"{VEC} {LAZY}"),
    Config("dv32_mma", dtype="bf16", D=64, Dv=32, Sq=80, Skv=72, tensorize=f"{MMA} {ALWAYS}"),
    # Layout, dynamic shapes, the cost model's own choice.
    Config("bshd_dynamic_mma", dtype="bf16", B=2, Hq=4, Hkv=2, Sq=45, Skv=77, layout="bshd",
           dynamic=True, causal=True, tensorize=f"{MMA} {LAZY}"),
    Config("auto_no_lse", dtype="bf16", Sq=200, Skv=200, lse=False, block_n=64, tensorize=""),
    Config("auto_causal_d128", dtype="bf16", D=128, Sq=200, Skv=200, causal=True,
           block_n=64, tensorize=""),
]


def wgmma_columns(ir: str):
    """The N of every fat.wgmma of the tensorized IR."""
    return [int(n) for n in re.findall(r"fat\.wgmma .*? shape \[64, (\d+), 16\]", ir)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name for c in CONFIGS])
def test_tensorized_against_float64(cfg, record_property):
    res = run_config(cfg)
    ir = res.tensorized_ir
    # The tensorized level really ran: no tile-level GEMM or softmax op is
    # left, and the choice shows in the ops.
    for gone in ("fat.qk", "fat.pv", "fat.row_sum", "fat.row_max", "fat.exp2"):
        assert gone + " " not in ir, f"{gone} left after --fat-tensorize"
    assert "fat.softmax_max" in ir and "fat.softmax_exp" in ir
    opts = cfg.tensorize
    if MMA in opts:
        assert cfg.dv + 8 in wgmma_columns(ir), "rowsum=mma: P·[V | 1] has Dv + 8 columns"
    if VEC in opts:
        assert cfg.dv + 8 not in wgmma_columns(ir) and "rowsum(" in ir
    if LAZY in opts:
        assert "lazy threshold" in ir
    if ALWAYS in opts:
        assert "lazy threshold" not in ir
    check_result(cfg, res, TOL, LSE_TOL, record_property)


def test_cost_model_choice_shows_in_the_ir():
    """`auto` on the tiled form is the kernel's cost model: D = 64 without a
    mask or an LSE takes the ones columns (rowsum=mma); causal D = 128 with
    an LSE keeps vector row sums and the lazy rescale."""
    by_name = {c.name: c for c in CONFIGS}
    plain = run_config(by_name["auto_no_lse"], seed=1).tensorized_ir
    assert 64 + 8 in wgmma_columns(plain)
    causal = run_config(by_name["auto_causal_d128"], seed=1).tensorized_ir
    assert 128 + 8 not in wgmma_columns(causal) and "rowsum(" in causal
    assert "lazy threshold" in causal


def test_the_lazy_threshold_is_crossed_both_ways():
    """In lazy_crossing_tau8's inputs (seed 0, as run_config draws them) some
    rows' block maxima grow by more than τ = 8 (log2 units) after the first
    block — the reference moves — and some grow by less — it stays."""
    cfg = next(c for c in CONFIGS if c.name == "lazy_crossing_tau8")
    q, k, _ = make_inputs(cfg, np.random.default_rng(0))
    c = np.log2(np.e) / np.sqrt(cfg.D)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64))
    blocks = s.reshape(*s.shape[:3], -1, cfg.block_n).max(-1)  # [B, H, Sq, blocks]
    growth = c * (np.maximum.accumulate(blocks, -1)[..., 1:] - np.maximum.accumulate(blocks, -1)[..., :-1])
    assert (growth > 8).any() and ((growth > 0) & (growth <= 8)).any()


def test_every_choice_is_covered():
    """≥ 20 configurations over each choice and the hard cases."""
    assert len(CONFIGS) >= 20
    opts = [c.tensorize for c in CONFIGS]
    for word in (MMA, VEC, LAZY, ALWAYS, "exp2-poly=0.25", "exp2-poly=1", "rescale-threshold=0"):
        assert any(word in o for o in opts), word
    assert any(o == "" for o in opts)
    assert any(c.causal for c in CONFIGS) and any(c.window for c in CONFIGS)
    assert any(1 <= c.Hkv < c.Hq for c in CONFIGS)
    assert any(c.Skv % c.block_n for c in CONFIGS) and any(c.magnitude >= 10 for c in CONFIGS)
    assert {"bf16", "f16"} <= {c.dtype for c in CONFIGS}
