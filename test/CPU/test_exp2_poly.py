"""Numerics of the FMA-pipe exponential (hopper::buildExp2Poly, exp2-poly).

The kernel computes a fraction of the softmax exponentials P = 2^x as
p(f)·2^j with j = ⌊max(x, −127)⌋, f = x − j and a degree-3 polynomial p. This
test evaluates that same sequence of f32 operations in numpy, with the
coefficients read from the compiler's source (so a change there is checked
here), and pins what the kernel relies on:

- relative error ≤ 8.6e-5 over every exponent the softmax produces (x ≤ 0,
  and up to τ = 16 with the lazy rescale), far below the rounding of P to
  bf16 (2^-9) or f16 (2^-11) that follows;
- a masked score (x = −inf) and anything at or below −127 give exactly +0,
  so a fully masked row keeps l = 0 (O = 0, LSE = −inf);
- x = 0 (the row maximum) and every integer give exact powers of two;
- the result is monotone in x, so the row max keeps the largest P.
"""

import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "include" / "fa-t" / "Dialect" / "Fat" / "IR" / "FatTensorOps.td"
f32 = np.float32


def coefficients():
    block = re.search(r"kExp2Poly\[3\]\s*=\s*\{([^}]*)\}", SOURCE.read_text())
    assert block, "kExp2Poly not found in FatTensorOps.td"
    values = [float(v) for v in block.group(1).replace("\n", " ").split(",")]
    assert len(values) == 3, values
    return tuple(f32(v) for v in values)


def exp2_poly(x):
    """The kernel's instruction sequence, one f32 rounding per instruction."""
    c1, c2, c3 = coefficients()
    x = np.asarray(x, dtype=f32)
    clamped = np.fmax(x, f32(-127.0))  # max.f32 ignores NaN like LLVM maxnum
    # add.rm.ftz.f32 clamped, 1.5·2^23: f32 spacing there is 1, so rounding
    # down gives ⌊clamped⌋ + 1.5·2^23 exactly.
    magic = f32(12582912.0)
    shifted = (np.floor(clamped.astype(np.float64)) + float(magic)).astype(f32)
    floor_x = (shifted - magic).astype(f32)
    frac = (clamped - floor_x).astype(f32)

    def fma(a, b, c):  # one rounding, as the FFMA instruction
        return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(f32)

    p = fma(frac, c3, c2)
    p = fma(frac, p, c1)
    p = fma(frac, p, f32(1.0))
    bits = p.view(np.uint32) + (shifted.view(np.uint32) << np.uint32(23))
    return bits.astype(np.uint32).view(f32)


def test_relative_error_over_softmax_exponents():
    # Every f32 step near 0 and a dense sweep down to −126 and up to τ = 16.
    x = np.concatenate([
        np.linspace(-126.0, 16.0, 2_000_001, dtype=np.float64),
        -np.logspace(-30, 0, 10_001),
    ]).astype(f32)
    got = exp2_poly(x).astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    rel = np.abs(got / want - 1.0)
    print(f"exp2-poly: max relative error {rel.max():.3e} over {x.size} points")
    assert rel.max() <= 8.6e-5


def test_masked_scores_give_exact_zero():
    x = np.array([-np.inf, -1e30, -1000.0, -127.0], dtype=f32)
    got = exp2_poly(x)
    assert np.all(got == 0.0) and not np.any(np.signbit(got)), got


def test_integers_are_exact_powers_of_two():
    j = np.arange(-126, 17, dtype=f32)
    assert np.array_equal(exp2_poly(j), np.exp2(j.astype(np.float64)).astype(f32))
    assert exp2_poly(np.array([0.0], dtype=f32))[0] == 1.0


def test_monotone():
    x = np.linspace(-20.0, 16.0, 500_001, dtype=np.float64).astype(f32)
    got = exp2_poly(x)
    assert np.all(np.diff(got.astype(np.float64)) >= 0.0)


def test_below_minus_126_stays_tiny():
    # Between −127 and −126 the exponent field is 0: the bits are a subnormal
    # below 2^-126, which the bf16/f16 conversion and ftz arithmetic treat
    # as the negligible value it is.
    x = np.linspace(-127.0, -126.0, 1001, dtype=np.float64).astype(f32)
    got = exp2_poly(x).astype(np.float64)
    assert np.all((got >= 0.0) & (got < 2.0 ** -125))
