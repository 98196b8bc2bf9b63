#!/usr/bin/env python3
"""Runs an attention module through fa-t's CPU reference path.

Usage: run_example.py MODULE.mlir [--func NAME] [--causal] [--seed N]

The function must take (q, k, v, o[, lse]) memrefs in BHSD order with static
shapes and carry `llvm.emit_c_interface`. The script compiles it with
`fa-t-opt --fat-to-cpu`, runs it on fresh random normal inputs with NaN-
poisoned outputs, and prints the output's checksum and its relative error
against a dense float64 reference.
"""

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "CPU"))

import numpy as np  # noqa: E402

from fatcpu import (CompiledModule, dequantize, quantize, reference_attention,  # noqa: E402
                    rel_error, signature_of, NP_EMPTY)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("--func", default="attention")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--block-m", type=int, default=128)
    ap.add_argument("--block-n", type=int, default=128)
    args = ap.parse_args()

    text = Path(args.module).read_text()
    sig = signature_of(text, args.func)
    if len(sig) not in (4, 5):
        print(f"error: @{args.func} must take (q, k, v, o[, lse]) memrefs, got {len(sig)}", file=sys.stderr)
        return 2
    (qs, dtype), (ks, _), (vs, _), (os_, _) = sig[:4]
    # The mask and scale, read off the op's custom form.
    start = text.find("fat.attention")
    op_text = text[start:text.find("return", start)]
    causal = re.search(r"\bcausal\b", op_text) is not None
    window = re.search(r"window \[(-?\d+), (-?\d+)\]", op_text)
    window = (int(window.group(1)), int(window.group(2))) if window else None
    scale = re.search(r"scale ([-+0-9.eE]+)", op_text)
    scale = float(scale.group(1)) if scale else 1.0 / np.sqrt(qs[3])
    if "diagonal(" in op_text or "layout(bshd)" in op_text:
        print("error: this script handles the default diagonal and layout only", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    qf, kf, vf = (rng.standard_normal(s).astype(np.float32) for s in (qs, ks, vs))
    qb, kb, vb = (quantize(a, dtype) for a in (qf, kf, vf))
    o = np.empty(os_, dtype=NP_EMPTY[dtype])
    o.view(np.uint16 if dtype != "f32" else np.float32).fill(0xFFFF if dtype != "f32" else np.nan)
    bufs = [qb, kb, vb, o]
    if len(sig) == 5:
        bufs.append(np.full(sig[4][0], np.nan, dtype=np.float32))

    t0 = time.perf_counter()
    mod = CompiledModule(text, block_m=args.block_m, block_n=args.block_n)
    t1 = time.perf_counter()
    mod.call(args.func, *bufs)
    t2 = time.perf_counter()

    q64, k64, v64 = (dequantize(a, dtype) for a in (qb, kb, vb))
    ref_o, ref_lse = reference_attention(q64, k64, v64, scale=scale, causal=causal, window=window)
    out = dequantize(o, dtype)
    print(f"module      {args.module} (@{args.func}: Q {qs} K {ks} V {vs}, {dtype}, causal={causal}, window={window})")
    print(f"compile     {t1 - t0:.2f} s (fa-t-opt --fat-to-cpu, mlir-translate, clang)")
    print(f"run (CPU)   {t2 - t1:.2f} s")
    print(f"checksum    sum(O) = {out.sum():.6f}, sum|O| = {np.abs(out).sum():.6f}")
    print(f"error       ‖O − O_ref‖/‖O_ref‖ = {rel_error(out, ref_o):.3e} (float64 reference)")
    if len(bufs) == 5:
        lse = bufs[4].astype(np.float64)
        fin = np.isfinite(ref_lse)
        print(f"            ‖LSE − LSE_ref‖/‖LSE_ref‖ = {rel_error(lse[fin], ref_lse[fin]):.3e}")
    ok = np.isfinite(out).all() and rel_error(out, ref_o) < 2e-2
    print("result      " + ("OK" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
