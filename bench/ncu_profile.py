#!/usr/bin/env python3
"""Where the cycles go: fa-t's kernel and cuDNN's under Nsight Compute.

PERFORMANCE.md asks for the tensor pipe's idle fraction beside TFLOP/s:
FlashAttention-T's headline is that tensor units idle only 2.7% of the
time. This script launches each implementation of each point once inside
``cudaProfilerStart/Stop`` (after warm-up outside it), so that

  ncu --clock-control none --profile-from-start off --csv \\
      --metrics <list below> python3 bench/ncu_profile.py --kernels .kernels-bench

profiles exactly one fa-t kernel and one cuDNN kernel per point, on the same
random inputs; ``--report CSV`` then turns ncu's CSV into one table (tensor
pipe active %, MUFU (xu) and FMA pipe activity, the top stall reasons per
issued instruction). ``bench/ncu_profile.sh`` runs both steps on the GPU
machine. Points are ``D:causal:S`` (bf16, the standard grid's B and H), or
``NAME:D:S`` for a score / mask modification of ``bench/bench_mods.py`` at its
shape with D and S: its kernel (``--mods-kernels``), then fa-t's plain kernel
of the same shape and mask (``--kernels``) as the peer — the comparison of
the issue's "× fa-t plain" bars.
"""
import argparse
import csv
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_POINTS = ("64:0:1024", "64:0:4096", "64:0:16384", "128:0:512", "128:0:1024", "128:0:4096",
                  "128:1:1024", "256:0:1024", "256:0:8192")

#: The tensor pipe's wgmma activity (% of peak sustained while the SM is active).
TENSOR_ACTIVE = ("sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active"
                 ".avg.pct_of_peak_sustained_active")

#: What ncu collects (bench/ncu_profile.sh passes these). Tensor-pipe activity
#: for wgmma, the MUFU (xu) and FMA pipes, issue activity, and every stall
#: reason as warps stalled per issued instruction.
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg",
    TENSOR_ACTIVE,
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    "sm__issue_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum",
) + tuple(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in (
    "barrier", "branch_resolving", "dispatch_stall", "gmma", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "no_instruction", "not_selected", "selected", "short_scoreboard", "sleeping", "wait", "lg_throttle", "misc"))


def parse_point(text):
    """(D, causal, S) of ``D:causal:S``, or (D, causal, S, NAME) of a
    modification's ``NAME:D:S`` (causal None: the modification says)."""
    fields = text.split(":")
    if len(fields) == 3 and not fields[0].isdigit():
        return int(fields[1]), None, int(fields[2]), fields[0]
    d, causal, s = (int(x) for x in fields)
    return d, bool(causal), s


def is_mod(point):
    return len(point) == 4


def point_label(point):
    if is_mod(point):
        d, _, s, name = point
        return f"{name} D{d} S{s}"
    d, causal, s = point
    return f"D{d}{' causal' if causal else ''} S{s}"


def mod_shape(point):
    """bench_mods.py's (B, H, S, D) of a ``NAME:D:S`` point."""
    import bench_mods
    d, _, s, _ = point
    shape = next((sh for sh in bench_mods.SHAPES if sh[3] == d and sh[2] == s), None)
    if shape is None:
        raise SystemExit(f"ncu_profile: no bench_mods shape with D={d} S={s} "
                         f"(shapes: {bench_mods.SHAPES})")
    return shape


def mod_launchers(point, shape, q, k, v, mods_dir, kernel_dir):
    """(the modification's call, the plain kernel's call) of a ``NAME:D:S``
    point at bench_mods.py's ``shape``, as its time_point makes them."""
    import bench_mods
    from fa_t.api import _forward
    s, name = point[2], point[3]
    table = bench_mods.modifications(shape, "cuda")
    if name not in table:
        raise SystemExit(f"ncu_profile: unknown modification {name!r} "
                         f"(known: {', '.join(table)})")
    causal, score_mod, mask_mod = table[name]
    bm = bench_mods.block_mask_of(name, causal, mask_mod, shape[0], s, s, "cuda")
    regions, captures = bench_mods.regions_of(score_mod, mask_mod, bm)
    common = dict(causal=causal, window=(-1, -1), diag=None, scale=None, want_lse=False)
    factor = bench_mods.factor_of(score_mod)
    return (lambda: _forward(q, k, v, regions=regions, captures=captures,
                             kernel_dir=mods_dir, linear_bias_factor=factor, **common),
            lambda: _forward(q, k, v, kernel_dir=kernel_dir, **common))


def run(points, kernel_dir, mods_dir=".kernels-mods"):
    # Only when profiling: the fa_t package and bench.py beside this file.
    sys.path.insert(0, str(ROOT / "python"))
    sys.path.insert(0, str(ROOT / "bench"))
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from fa_t import api, checks
    import bench
    F = torch.nn.functional
    for point in points:
        d, causal, s = point[:3]
        shape = mod_shape(point) if is_mod(point) else None
        b, h = shape[:2] if shape else (bench.TOKENS // s, bench.HIDDEN // d)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        if is_mod(point):
            ours, peer = mod_launchers(point, shape, q, k, v, mods_dir, kernel_dir)
        else:
            o = torch.empty_like(q)
            ours = api._plan(q, k, v, o, None, checks.check_inputs(q, k, v), causal=causal,
                             window=(-1, -1), diag=0, scale=1 / math.sqrt(d),
                             kernel_dir=kernel_dir)

            def peer():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for _ in range(3):
            ours()
            peer()
        torch.cuda.synchronize()
        # One profiled launch each; the NVTX-free marker is the launch order.
        torch.cuda.cudart().cudaProfilerStart()
        ours()
        peer()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"profiled {point_label(point)}", flush=True)


def parse_report(csv_path, points):
    """ncu --csv rows → [(point, who, kernel name, {metric: value})] in launch
    order; ``who`` is "fa-t", "peer" (cuDNN's kernels) or "plain" (a
    modification point's second fa-t kernel)."""
    kernels = {}
    with open(csv_path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for row in csv.DictReader(lines):
        k = kernels.setdefault(row["ID"], {"name": row["Kernel Name"], "m": {}})
        try:
            k["m"][row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            pass
    # Each point launches fa-t's kernel, then whatever cuDNN launches: a
    # kernel named fat_* starts the next point — except the second fa-t
    # kernel of a modification's point, its plain peer.
    point, rows, fat_kernels = -1, [], 0
    for kid in sorted(kernels, key=int):
        name = kernels[kid]["name"]
        who = "peer"
        if name.startswith("fat_"):
            if point >= 0 and is_mod(points[point]) and fat_kernels == 1:
                who, fat_kernels = "plain", 2
            else:
                who, fat_kernels, point = "fa-t", 1, point + 1
        rows.append((points[max(point, 0)], who, name, kernels[kid]["m"]))
    return rows


def metric(values, prefix):
    """The value of the first metric whose name starts with ``prefix``."""
    return next((v for n, v in values.items() if n.startswith(prefix)), math.nan)


def report(csv_path, points):
    """ncu --csv rows → one line per profiled kernel, in launch order."""
    rows = [(f"{point_label(point)} {who}", {"name": name, "m": m})
            for point, who, name, m in parse_report(csv_path, points)]
    width = max([24] + [len(label) + 1 for label, _ in rows])
    print(f"{'point':{width}s} {'us':>8s} {'tensor%':>8s} {'issue%':>7s} {'xu%':>6s} {'fma%':>6s} "
          f"{'alu%':>6s}  top stalls (warps per issue)")
    for label, k in rows:
        m = k["m"]

        def get(key):
            return metric(m, key)
        # "selected" (the warp issued) and "not_selected" (it could have,
        # another did) are not stalls.
        stalls = sorted(((v, n.split("stalled_")[1].split("_per_issue")[0])
                         for n, v in m.items() if "issue_stalled" in n
                         and "selected" not in n), reverse=True)[:5]
        print(f"{label:{width}s} {get('gpu__time_duration') / 1e3:8.1f} "
              f"{get(TENSOR_ACTIVE):8.1f} "
              f"{get('sm__issue_active'):7.1f} "
              f"{get('sm__inst_executed_pipe_xu'):6.1f} {get('sm__pipe_fma_cycles'):6.1f} "
              f"{get('sm__inst_executed_pipe_alu'):6.1f}  "
              + ", ".join(f"{n} {v:.2f}" for v, n in stalls))
        print(f"{'':{width}s} {k['name'][:100]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=".kernels-bench",
                    help="fa-t's plain kernels (the standard grid's folder)")
    ap.add_argument("--mods-kernels", default=".kernels-mods",
                    help="the modifications' kernels (bench_mods.py build) for NAME:D:S points")
    ap.add_argument("--points", default=",".join(DEFAULT_POINTS),
                    help="comma-separated D:causal:S or NAME:D:S (a modification)")
    ap.add_argument("--report", help="an ncu --csv output to summarize instead of running")
    ap.add_argument("--metrics", action="store_true", help="print ncu's --metrics list")
    args = ap.parse_args()
    points = [parse_point(p) for p in args.points.split(",")]
    if args.metrics:
        print(",".join(METRICS))
    elif args.report:
        report(args.report, points)
    else:
        run(points, args.kernels, args.mods_kernels)


if __name__ == "__main__":
    main()
