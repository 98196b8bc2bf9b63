#!/usr/bin/env python3
"""Host time per attention call, back to back: what Python costs around a kernel.

At short sequences a kernel runs for tens of microseconds, so a call whose
host work takes longer leaves the GPU waiting and the call, not the kernel,
sets the speed. Each case here issues ``--calls`` calls back to back (after
``--warmup`` calls and a synchronize) and reports, per call, the wall time
until a final synchronize (``wall``: host-bound when the host is slower than
the GPU, the number a user sees) and the host time to enqueue them
(``enqueue``). Implementations, on the same tensors:

  fa-t plan   the planned launch (``fa_t.api._plan``): parameters packed once,
              the floor of any call
  fa-t call   ``fa_t.attention(q, k, v, causal=...)``
  fa-t sdpa   ``fa_t.scaled_dot_product_attention(q, k, v, is_causal=...)``
  cudnn       ``F.scaled_dot_product_attention`` under ``sdpa_kernel(CUDNN_ATTENTION)``
  flash       the same under ``sdpa_kernel(FLASH_ATTENTION)``

Cases: B1 H8 S128 D128 without and with the causal mask (host-bound), and
B16 H16 S1k D128 causal (kernel-bound), bf16. Kernels come ahead of time:

  here:  python -m fa_t.aot --out .kernels-host bench/host_overhead.py:kernel_configs
  GPU:   FA_T_RUNTIME_LIB=build/lib/libfat_runtime.so PYTHONPATH=python \\
         python3 bench/host_overhead.py --kernels .kernels-host --json out.json
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fa_t.config import KernelConfig  # noqa: E402

#: (B, H, S, D, causal), bf16.
CASES = [(1, 8, 128, 128, False), (1, 8, 128, 128, True), (16, 16, 1024, 128, True)]
IMPLS = ("fa-t plan", "fa-t call", "fa-t sdpa", "cudnn", "flash")


def kernel_configs():
    """The kernels of CASES (tuned for each case's length), for ``python -m fa_t.aot``."""
    return [(KernelConfig("bf16", d, d, h, h, causal=causal), {"seq_len": s})
            for _, h, s, d, causal in CASES]


def per_call_us(fn, calls, warmup):
    """(wall, enqueue) microseconds per call over ``calls`` back-to-back calls."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    enqueued = time.perf_counter()
    torch.cuda.synchronize()
    done = time.perf_counter()
    return (done - start) / calls * 1e6, (enqueued - start) / calls * 1e6


def implementations(q, k, v, causal, kernel_dir):
    """name -> a no-argument call, for every implementation of IMPLS."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import fa_t
    from fa_t import api, checks
    F = torch.nn.functional
    o = torch.empty_like(q)
    plan = api._plan(q, k, v, o, None, checks.check_inputs(q, k, v), causal=causal,
                     window=(-1, -1), diag=0, scale=1 / math.sqrt(q.shape[3]),
                     kernel_dir=kernel_dir)

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run
    return {"fa-t plan": plan,
            "fa-t call": lambda: fa_t.attention(q, k, v, causal=causal, kernel_dir=kernel_dir),
            "fa-t sdpa": lambda: fa_t.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                   kernel_dir=kernel_dir),
            "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
            "flash": sdpa(SDPBackend.FLASH_ATTENTION)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=None,
                    help="kernel folder (default: $FA_T_KERNEL_DIR, as a user's call)")
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5,
                    help="rounds over all cases and implementations; each one's best counts")
    ap.add_argument("--label", default="", help="a name for this build in the JSON")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--profile", action="store_true",
                    help="then print where a fa_t.attention call's host time goes (cProfile "
                         "over the first case's calls)")
    a = ap.parse_args()
    import torch
    torch.manual_seed(0)
    cases = []
    for b, h, s, d, causal in CASES:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        cases.append(implementations(q, k, v, causal, a.kernels))
    rounds = [{n: [] for n in impls} for impls in cases]
    with torch.no_grad():
        # Rounds over every case and implementation, so that drift (clocks,
        # the process warming up) is shared; the best round of each counts.
        for _ in range(a.repeat):
            for impls, got in zip(cases, rounds):
                for n, fn in impls.items():
                    got[n].append(per_call_us(fn, a.calls, a.warmup))
    best = [{n: min(r) for n, r in got.items()} for got in rounds]
    rows = []
    print(f"{'case':>26s} " + " ".join(f"{n:>17s}" for n in IMPLS) + "   µs/call wall (enqueue)")
    for (b, h, s, d, causal), got, every in zip(CASES, best, rounds):
        case = f"B{b} H{h} S{s} D{d}{' causal' if causal else ''}"
        rows.append({"case": case, "B": b, "H": h, "S": s, "D": d, "causal": causal,
                     "wall_us": {n: w for n, (w, _) in got.items()},
                     "enqueue_us": {n: e for n, (_, e) in got.items()},
                     "wall_us_rounds": {n: [w for w, _ in r] for n, r in every.items()}})
        print(f"{case:>26s} " + " ".join(f"{got[n][0]:8.1f} ({got[n][1]:5.1f})" for n in IMPLS))
    if a.profile:
        import cProfile
        import pstats
        with torch.no_grad(), cProfile.Profile() as prof:
            per_call_us(cases[0]["fa-t call"], 10 * a.calls, a.warmup)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "calls": a.calls, "warmup": a.warmup, "repeat": a.repeat, "label": a.label}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
