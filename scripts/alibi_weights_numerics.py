#!/usr/bin/env python3
"""Why ALiBi's bias cannot ride on V as weights in bf16 (perf log run 143).

The design (docs/modifications.md): with rows at the origin the bias is
G·j = o_b + G·(k − (N−1)/2) for key k of a block of N keys starting at j0, so
e^(s + G·j) = e^(s + o_b)·w_k; the softmax takes o_b as one add per row and
V's rows (with the ones columns that sum P) are scaled by w_k. The tensor
cores then read bf16(V·ŵ): one rounding per element of V, which — unlike
P's rounding, whose error cancels between O and the ones columns' row sum
when one key dominates — lands in O unchanged.

This script isolates the error sources on causal ALiBi (float64 reference,
bf16 inputs, the BLOOM slopes 2^(−8(h+1)/H)), each row of the table the max
error relative to max |O|, averaged over heads:

  bias in the scores     P rounded, V exact (the vector and column forms)
  weights                P rounded, ŵ rounded, V·ŵ rounded (the design)
  weights, V·ŵ exact     only P and ŵ rounded
  weights, P exact       only ŵ and V·ŵ rounded
  weights on P           ŵ on P instead: bf16(P̂·ŵ) read by O and the ones
                         columns alike (one packed multiply per two scores)

and (last_key_share) the range the weights on P need: the spread of the
bias inside a block that one offset per block leaves to P̂ (perf log run
147).

Usage: python3 scripts/alibi_weights_numerics.py [--seq 512] [--heads 16]
"""
import argparse
import pathlib
import sys

import numpy as np

# The CPU suite's bf16 buffers (round to nearest even, as the GPU's cvt.rn).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "test" / "CPU"))
from fatcpu import dequantize, quantize  # noqa: E402


def bf16(x):
    """Rounds float64 values to bf16 (through f32), as float64."""
    return dequantize(quantize(np.asarray(x, dtype=np.float32), "bf16"), "bf16")


def errors(seq=512, dim=64, heads=16, block=128, seed=1):
    """Each form's max |O − O64| / max |O64| on causal ALiBi, averaged over
    the heads (the BLOOM slopes 2^(−8(h+1)/H)), by the names of the table
    above."""
    rng = np.random.default_rng(seed)
    S, D, N = seq, dim, block
    scale = D ** -0.5
    i = np.arange(S)[:, None]
    j = np.arange(S)[None, :]
    visible = j <= i
    k_in_block = np.arange(S) % N
    centre = (N - 1) / 2
    rows = {"bias in the scores": [], "weights": [], "weights, V·ŵ exact": [],
            "weights, P exact": [], "weights on P": []}
    for h in range(heads):
        slope = 2.0 ** (-8.0 * (h + 1) / heads)
        q, k, v = (bf16(rng.standard_normal((S, D))) for _ in range(3))
        s = (q @ k.T) * scale
        biased = np.where(visible, s + slope * (j - i), -np.inf)
        top = biased.max(1, keepdims=True)
        ref = np.exp(biased - top)
        ref = (ref @ v) / ref.sum(1, keepdims=True)
        # The same reference for every form: the row's true maximum (the
        # online softmax only moves it; what differs is what is rounded).
        p_bias = bf16(np.exp(biased - top))
        w = np.exp(slope * (k_in_block - centre))
        w_hat = bf16(w)
        shifted = np.where(visible, biased - slope * (k_in_block - centre)[None, :], -np.inf)
        p_exact = np.exp(shifted - top)
        p = bf16(p_exact)
        vw = bf16(v * w_hat[:, None])
        pw = bf16(p * w_hat[None, :])
        outs = {
            "bias in the scores": (p_bias @ v) / p_bias.sum(1, keepdims=True),
            "weights": (p @ vw) / (p @ w_hat[:, None]),
            "weights, V·ŵ exact": (p @ (v * w_hat[:, None])) / (p @ w_hat[:, None]),
            "weights, P exact": (p_exact @ vw) / (p_exact @ w_hat[:, None]),
            "weights on P": (pw @ v) / pw.sum(1, keepdims=True),
        }
        for name, out in outs.items():
            rows[name].append(np.abs(bf16(out) - ref).max() / np.abs(ref).max())
    return {name: float(np.mean(errs)) for name, errs in rows.items()}


def last_key_share(slope, block=128, parts=1):
    """The softmax share of a block's last key, weights on P against the
    exact value, on the row that strains the weights' range most.

    With one offset per block the reference is max_k (s_k + o), taken
    without the spread β_k = G·(k − (N−1)/2); the row whose first key's
    score exceeds the others' by 2·G·(N−1)/2 ties it with the last key
    after the bias, and leaves the last key P̂ = e^(−2·G·(N−1)/2) before
    its weight — below f32's normal range (2^−126; ex2.approx.ftz flushes
    it) once G·(N−1)/2 passes 43.7 (63 binades), and short of f32's
    precision for the keys below it well before. Split into `parts` runs of
    keys, each with its own offset (one more row constant per part), the
    spread is the part's. Returns (got, want)."""
    n = block // parts
    centre = (n - 1) / 2
    k = np.arange(block)
    s = np.zeros(block)
    s[0] = 2 * slope * (block - 1) / 2
    start = (k // n) * n
    offset = slope * (start + centre)         # per key: its part's offset
    m = np.max((s + offset).astype(np.float32))
    p = np.exp2(((s + offset - m) * np.log2(np.e)).astype(np.float32))
    p = np.where(p < 2.0 ** -126, 0.0, p)     # ftz
    w = np.exp(slope * (k - start - centre)).astype(np.float32)
    pw = p.astype(np.float64) * w
    biased = s + slope * k
    exact = np.exp(biased - biased.max())
    return float(pw[-1] / pw.sum()), float(exact[-1] / exact.sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--block", type=int, default=128, help="keys per block N")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    result = errors(args.seq, args.dim, args.heads, args.block, args.seed)
    base = result["bias in the scores"]
    print(f"causal ALiBi, S={args.seq}, D={args.dim}, H={args.heads}, N={args.block}: "
          "max |O − O64| / max |O64|")
    for name, err in result.items():
        print(f"  {name:22s} {err:.2e}  ({err / base:.2f}x)")


if __name__ == "__main__":
    main()
