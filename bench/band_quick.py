"""A short device check of one modification's variant kernels, without
FlexAttention (whose compilation takes most of a device call): fa-t's error
against float64 at bench_mods' check shape, then fa-t's default kernels,
its plain kernel and the variants timed round robin at some shapes.

  FA_T_KERNEL_DIR=DIR python3 bench/band_quick.py check NAME SHAPE...
  python3 bench/band_quick.py time NAME --kernels DIR --plain DIR --reps N
      --shapes I... --variant LABEL=DIR...

(perf log run 136: the bias table's accumulator form, when the device
budget left no room for Flex.)
"""
import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_mods  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("check", "time"))
    ap.add_argument("name")
    ap.add_argument("--shapes", type=int, nargs="+", required=True)
    ap.add_argument("--kernels")
    ap.add_argument("--plain")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--variant", nargs="*", default=[])
    args = ap.parse_args()
    if args.kernels:
        os.environ["FA_T_KERNEL_DIR"] = args.kernels
    gen = torch.Generator(device="cuda").manual_seed(0)
    for i in args.shapes:
        shape = bench_mods.SHAPES[i]
        b, h, s, d = shape
        causal, score_mod, mask_mod = bench_mods.modifications(shape, "cuda")[args.name]
        if args.what == "check":
            c = bench_mods.check(args.name, causal, score_mod, mask_mod, h, d, None, gen)
            ok = not c["fa-t"]["nan"] and c["api_equal"] and c["fa-t"]["rel"] <= 1.5 * 2.7e-3
            print(f"check {args.name} D{d}: fa-t max|err| {c['fa-t']['max_abs']:.2e} "
                  f"rel {c['fa-t']['rel']:.2e} nan {c['fa-t']['nan']} "
                  f"api_equal {c['api_equal']} {'ok' if ok else 'FAILED'}", flush=True)
            continue
        variants = [tuple(v.split("=", 1)) for v in args.variant]
        t = bench_mods.time_point(shape, args.name, causal, score_mod, mask_mod, None,
                                  args.plain, args.reps, variants)
        tf = t["tflops"]
        print(f"time {args.name} D{d} S{s}: " + ", ".join(
            f"{n} {v:.1f}" for n, v in tf.items()), flush=True)
        for label, _ in variants:
            print(f"     variant {label}: {tf[label]:6.1f} ({tf[label] / tf['fa-t']:.3f} of "
                  f"fa-t, {tf[label] / tf['fa-t-plain']:.3f} of plain)", flush=True)


if __name__ == "__main__":
    main()
