"""Numerics of the FMA-pipe tanh (fat.score_mod's tanh_poly, tanh-poly).

Where every tanh argument x of a warp's fragment lies in [−1, 1] the kernel
computes tanh x as x·p(x²), p a cubic evaluated by Horner: t = x·x, three
FFMAs, one FMUL (buildTanhPoly). This test evaluates that sequence of f32
operations in numpy, with the coefficients read from the op's definition
(so a change there is checked here), and pins what the op's description
promises and the soft-cap relies on:

- absolute error ≤ 3.3e-5 and relative error ≤ 3.1e-4 on [−1, 1] (MUFU's
  tanh.approx.f32: relative 2^−11 ≈ 4.9e-4), so A·tanh(s/A) is within
  A·3.3e-5 of the score (1e-3 at A = 30, a fifth of a bf16 P's rounding
  in the exponent);
- odd, and exactly 0 at 0;
- monotone on [−1, 1], so the bound reference's largest P stays largest;
- |tanh| ≤ tanh(1) + 3.3e-5 < 1: the soft-cap's scores stay within the
  bound row-max=bound assumes.
"""

import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "include" / "fa-t" / "Dialect" / "Fat" / "IR" / "FatTileOps.td"
f32 = np.float32


def coefficients():
    text = SOURCE.read_text()
    block = re.search(r"kTanhPoly\[4\]\s*=\s*\{([^}]*)\}", text)
    assert block, "kTanhPoly not found in FatTileOps.td"
    values = [float(v) for v in block.group(1).replace("\n", " ").split(",") if v.strip()]
    assert len(values) == 4, values
    bound = re.search(r"kTanhPolyBound\s*=\s*([0-9.eE+-]+);", text)
    assert bound, "kTanhPolyBound not found"
    return [f32(v) for v in values], float(bound.group(1))


def tanh_poly(x):
    """The kernel's instruction sequence, one f32 rounding per instruction."""
    c, _ = coefficients()
    x = np.asarray(x, dtype=f32)
    t = (x * x).astype(f32)

    def fma(a, b, cc):  # one rounding, as the FFMA instruction
        return (a.astype(np.float64) * b.astype(np.float64) + np.float64(cc)).astype(f32)

    p = np.full_like(x, c[3])
    for k in (2, 1, 0):
        p = fma(p, t, c[k])
    return (x * p).astype(f32)


def grid():
    return np.concatenate([
        np.linspace(-1.0, 1.0, 2_000_001, dtype=np.float64),
        np.logspace(-30, 0, 10_001), -np.logspace(-30, 0, 10_001),
    ]).astype(f32)


def test_bound_is_one():
    assert coefficients()[1] == 1.0


def test_error_on_the_bound_interval():
    x = grid()
    got = tanh_poly(x).astype(np.float64)
    want = np.tanh(x.astype(np.float64))
    err = np.abs(got - want)
    nonzero = want != 0.0
    rel = err[nonzero] / np.abs(want[nonzero])
    print(f"tanh-poly: max abs error {err.max():.3e}, max rel {rel.max():.3e} over {x.size} points")
    assert err.max() <= 3.3e-5
    assert rel.max() <= 3.1e-4


def test_odd_and_zero_at_zero():
    x = grid()
    assert np.array_equal(tanh_poly(-x), -tanh_poly(x))
    assert tanh_poly(np.array([0.0], dtype=f32))[0] == 0.0


def test_monotone():
    x = np.linspace(-1.0, 1.0, 500_001, dtype=np.float64).astype(f32)
    assert np.all(np.diff(tanh_poly(x).astype(np.float64)) >= 0.0)


def test_stays_inside_the_open_interval():
    x = np.array([-1.0, 1.0], dtype=f32)
    assert np.all(np.abs(tanh_poly(x).astype(np.float64)) <= np.tanh(1.0) + 3.3e-5)
    assert np.all(np.abs(tanh_poly(grid())) < 1.0)
