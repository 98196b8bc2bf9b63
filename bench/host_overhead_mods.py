#!/usr/bin/env python3
"""Host time per attention call with a score modification, back to back.

bench/host_overhead.py's measure (wall µs per call over back-to-back calls,
and the host time to enqueue them) for the calls users make with a score
function, at a short sequence where the host sets the speed:

  fa-t plain        ``fa_t.attention(q, k, v, causal=True)``
  fa-t <mod>        ``fa_t.attention(..., score_mod=fn)``: the regions' text
                    from the trace cache (``fa_t.mods.attention_regions``)
  fa-t <mod> trace  the same with the cache off (``TRACED_MAX = 0``): a
                    torch.fx trace per call, as before the cache
  flex <mod>        ``torch.compile(flex_attention)`` with the same function
  cudnn             ``F.scaled_dot_product_attention`` (no modification)

Mods: ALiBi (``fa_t.alibi``, a captured slopes tensor) and a soft-cap
(``fa_t.softcap(30)``). Kernels come ahead of time:

  here:  python -m fa_t.aot --out .kernels-host-mods bench/host_overhead_mods.py:kernel_entries
  GPU:   FA_T_RUNTIME_LIB=build/lib/libfat_runtime.so PYTHONPATH=python \\
         python3 bench/host_overhead_mods.py --kernels .kernels-host-mods --json out.json
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

#: (B, H, S, D), bf16, causal.
SHAPE = (1, 8, 128, 128)


def mods_of(device="cpu"):
    """name -> score function, its captured tensors on ``device``."""
    import torch
    import fa_t
    h = SHAPE[1]
    slopes = torch.tensor([2.0 ** (-8 * (i + 1) / h) for i in range(h)], device=device)
    return {"alibi": fa_t.alibi(slopes), "softcap": fa_t.softcap(30.0)}


def kernel_entries():
    """(config, tuning, regions) of the plain and modified kernels, for ``python -m fa_t.aot``."""
    from fa_t import jit, mods
    from fa_t.config import KernelConfig
    _, h, s, d = SHAPE
    config = KernelConfig("bf16", d, d, h, h, causal=True)
    tuning = jit.default_tuning(config, s)
    return [(config, tuning, "")] + [(config, tuning, mods.attention_regions(fn)[0])
                                     for fn in mods_of().values()]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=None, help="kernel folder (default: $FA_T_KERNEL_DIR)")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--profile", metavar="IMPL",
                    help="then print where that implementation's host time goes (cProfile)")
    a = ap.parse_args()
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import flex_attention
    import fa_t
    from fa_t import mods
    from bench_mods import flex_call
    from host_overhead import per_call_us
    torch.manual_seed(0)
    b, h, s, d = SHAPE
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    flex = torch.compile(flex_attention, dynamic=False)  # as bench_mods.py times it

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    impls = {"fa-t plain": lambda: fa_t.attention(q, k, v, causal=True, kernel_dir=a.kernels),
             "cudnn": cudnn}
    for name, fn in mods_of("cuda").items():
        impls[f"fa-t {name}"] = (lambda fn=fn: fa_t.attention(
            q, k, v, causal=True, score_mod=fn, kernel_dir=a.kernels))
        impls[f"fa-t {name} trace"] = impls[f"fa-t {name}"]
        impls[f"flex {name}"] = flex_call(q, k, v, True, fn, None, flex)
    best = {}
    traced_max = mods.TRACED_MAX
    with torch.no_grad():
        for _ in range(a.repeat):
            for n, fn in impls.items():
                mods.TRACED_MAX = 0 if n.endswith(" trace") else traced_max
                if n.endswith(" trace"):
                    mods._TRACED.clear()
                got = per_call_us(fn, a.calls, a.warmup)
                best[n] = min(best.get(n, got), got)
    mods.TRACED_MAX = traced_max
    print(f"B{b} H{h} S{s} D{d} causal, bf16: µs per call, wall (enqueue)")
    for n, (wall, enq) in best.items():
        print(f"  {n:>22s} {wall:9.1f} ({enq:7.1f})")
    if a.profile:
        import cProfile
        import pstats
        with torch.no_grad(), cProfile.Profile() as prof:
            per_call_us(impls[a.profile], 10 * a.calls, a.warmup)
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    if a.json:
        meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                "calls": a.calls, "warmup": a.warmup, "repeat": a.repeat, "shape": SHAPE}
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "wall_us": {n: w for n, (w, _) in best.items()},
                       "enqueue_us": {n: e for n, (_, e) in best.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
