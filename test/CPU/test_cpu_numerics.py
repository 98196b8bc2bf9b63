"""CPU numerics suite: fa-t's reference lowering against float64.

Every configuration is compiled with ``fa-t-opt --fat-to-cpu`` and run on
fresh random inputs (normal, never zeros) with the outputs poisoned with
NaN; O and LSE are compared with a dense float64 reference that shares no
code with the tiled path. Tolerances (relative Frobenius error): 1e-5 for
f32 inputs; for f16/bf16 inputs the reference sees the same rounded inputs
and the bound covers the 16-bit rounding of P (the tensor-core A operand)
and of O.
"""

import math

import pytest

np = pytest.importorskip("numpy")

from fatcpu import Config, check_result, run_config  # noqa: E402

TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.5e-2}
# LSE is accumulated in f32 whatever the input type.
LSE_TOL = {"f32": 1e-5, "f16": 1e-4, "bf16": 1e-3}

CONFIGS = [
    # Head dims, Dv != D, block sizes.
    Config("d64", D=64, Sq=64, Skv=64),
    Config("d128", D=128, Sq=128, Skv=128, block_m=64, block_n=64),
    Config("d256", D=256, Sq=96, Skv=96, block_m=32, block_n=32),
    Config("dv_ne_d", D=64, Dv=32, Sq=80, Skv=72),
    Config("default_blocks_128", D=64, Sq=300, Skv=300, block_m=128, block_n=128),
    Config("odd_blocks_16x48", D=64, Sq=100, Skv=100, block_m=16, block_n=48, causal=True),
    # Causal, bottom-right by default; top-left through the diagonal.
    Config("causal_square", Sq=100, Skv=100, causal=True),
    Config("causal_sq_lt_skv", Sq=37, Skv=150, causal=True),
    Config("causal_sq_gt_skv_empty_rows", Sq=150, Skv=37, causal=True),
    Config("causal_top_left", Sq=50, Skv=120, causal=True, diagonal=0),
    # Sliding windows.
    Config("window_16_8", Sq=130, Skv=130, window=(16, 8)),
    Config("window_causal_32", Sq=200, Skv=200, causal=True, window=(32, 0)),
    Config("window_right_only", Sq=70, Skv=90, window=(-1, 4)),
    Config("window_empty_rows", Sq=64, Skv=16, window=(2, 2), diagonal=0),
    # GQA / MQA, batch.
    Config("gqa_8_2", Hq=8, Hkv=2, Sq=65, Skv=65, causal=True),
    Config("mqa_4_1", Hq=4, Hkv=1, Sq=40, Skv=90),
    Config("batch_3", B=3, Hq=2, Hkv=1, Sq=33, Skv=47),
    # Ragged lengths.
    Config("ragged_sq1", Sq=1, Skv=17),
    Config("ragged_17_257", Sq=17, Skv=257, causal=True),
    Config("ragged_257_1", Sq=257, Skv=1),
    # Large scores: |q·k| up to ~1e4 before scaling.
    Config("large_scores", D=64, Sq=64, Skv=96, magnitude=15.0),
    Config("large_scores_causal_window", D=64, Sq=96, Skv=96, magnitude=15.0,
           causal=True, window=(40, 0)),
    # Layout, dynamic shapes, explicit scale, no LSE.
    Config("bshd_gqa", Hq=4, Hkv=2, Sq=50, Skv=70, layout="bshd", causal=True),
    Config("dynamic_causal_window", B=2, Sq=45, Skv=77, causal=True, window=(20, 0), dynamic=True),
    Config("dynamic_bshd", B=2, Hq=4, Hkv=1, Sq=31, Skv=64, layout="bshd", dynamic=True),
    Config("scale_0.3", Sq=40, Skv=40, scale=0.3),
    Config("no_lse", Sq=40, Skv=50, lse=False, causal=True),
    # 16-bit inputs (P rounded to the input type before P·V, as on the GPU).
    Config("f16", dtype="f16", D=64, Sq=70, Skv=70, causal=True),
    Config("bf16_gqa", dtype="bf16", Hq=4, Hkv=2, D=128, Sq=70, Skv=130, block_m=64, block_n=64),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name for c in CONFIGS])
def test_against_float64(cfg, record_property):
    res = run_config(cfg)
    check_result(cfg, res, TOL, LSE_TOL, record_property)


def test_every_case_of_the_issue_is_covered():
    """The suite keeps covering each case the CPU path must handle."""
    assert len(CONFIGS) >= 20
    assert {64, 128, 256} <= {c.D for c in CONFIGS}
    assert any(c.dv != c.D for c in CONFIGS)
    assert any(c.causal and c.Sq == c.Skv for c in CONFIGS)
    assert any(c.causal and c.Sq != c.Skv for c in CONFIGS)
    assert any(c.window for c in CONFIGS)
    assert any(c.Hkv == 1 and c.Hq > 1 for c in CONFIGS)
    assert any(1 < c.Hkv < c.Hq for c in CONFIGS)
    assert {1, 17, 257} <= {c.Sq for c in CONFIGS} | {c.Skv for c in CONFIGS}
    assert any(c.B > 1 for c in CONFIGS)
    assert any((c.block_m, c.block_n) != (128, 128) for c in CONFIGS)
    assert any(c.magnitude >= 10 for c in CONFIGS)
    assert any(c.dynamic for c in CONFIGS)


def test_large_scores_reach_1e4():
    """The large-score inputs really produce |q·k| of order 1e4."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((96, 64)) * 15.0
    k = rng.standard_normal((96, 64)) * 15.0
    assert np.abs(q @ k.T).max() > 5e3
