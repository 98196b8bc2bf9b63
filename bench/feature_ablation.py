"""Every tensorization and pipelining feature of the default kernels turned
off (or, for exp2-poly, on) one at a time, timed against the defaults in one
device run: the ablation table of issue 5.

Each toggle forces one fat-to-ptx option over the bf16 grid kernels of the
head dims where the cost model's default differs from it (forcing it
elsewhere would rebuild the default), so every row of the table is a same-run
A/B of two kernels that differ in that one choice:

    # here (needs build/bin/fa-t-opt):
    PYTHONPATH=python python3 bench/feature_ablation.py build --out .kernels-ablation
    # on the GPU machine, beside .kernels-bench (the defaults):
    python3 bench/feature_ablation.py run --kernels .kernels-ablation --out OUT
    python3 bench/feature_ablation.py ncu --kernels .kernels-ablation --out OUT
    python3 bench/feature_ablation.py table OUT

``run`` calls bench/bench.py once per toggle (``--variants base`` with the
toggle's folder: the "base" column is the toggled kernel) and ``table``
prints, per toggle, head dim and mask, TFLOP/s of the toggled kernel over
the default's at S = 512 … 16k ('=' where the toggle compiled to the
default's own kernel, so the ratio is the protocol's noise), their geomean
and both relative errors against float64. ``ncu`` (Nsight Compute on the GPU
machine) reads the tensor pipe's wgmma activity of the default and of each
toggled kernel at one key length (4k): FlashAttention-T's headline metric is
the time the tensor cores idle, and ``table`` then adds it per row.
"""

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402

#: name -> (forced fat-to-ptx options, head dims whose default differs).
FEATURE_TOGGLES = {
    # fat-tensorize
    "rowsum=vector": ({"rowsum": "vector"}, (64,)),
    "rescale=always": ({"rescale": "always"}, (128, 256)),
    "exp2-poly=0.125": ({"exp2-poly": "0.125"}, (64, 128, 256)),
    # fat-pipeline
    "overlap=off": ({"overlap": "off", "pingpong": "off", "tile-overlap": "off"},
                    (64, 128, 256)),
    "pv-wait=early": ({"pv-wait": "early"}, (128, 256)),
    "pingpong=off": ({"pingpong": "off"}, (64, 128)),
    "tile-overlap=off": ({"tile-overlap": "off"}, (64,)),
    "persistent=off": ({"persistent": "off", "tile-overlap": "off"}, (64, 128, 256)),
    "o-store=direct": ({"o-store": "direct"}, (128, 256)),
}


def folder_name(toggle):
    return toggle.replace("=", "-")


def toggle_configs(toggle):
    options, head_dims = FEATURE_TOGGLES[toggle]
    return bench.forced_grid_configs(options, head_dims)


def cmd_build(args):
    from fa_t import aot
    fat_opt = args.fa_t_opt
    for toggle in FEATURE_TOGGLES:
        out = Path(args.out) / folder_name(toggle)
        aot.build(toggle_configs(toggle), out, fat_opt, log=lambda line: None)
        print(f"{toggle}: {len(list(out.glob('*.ptx')))} kernels in {out}", flush=True)
    return 0


def cmd_run(args):
    status = 0
    for toggle, (_, head_dims) in FEATURE_TOGGLES.items():
        folder = Path(args.kernels) / folder_name(toggle)
        command = [sys.executable, str(HERE / "bench.py"), "--kernels", args.defaults,
                   "--only", ",".join(map(str, head_dims)), "--variants", "base",
                   "--variant-kernels", str(folder),
                   "--json", str(Path(args.out) / f"{folder_name(toggle)}.json")]
        print(f"=== {toggle}", flush=True)
        done = subprocess.run(command, env=dict(os.environ, FA_T_KERNEL_DIR=args.defaults),
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-2000:] + done.stderr[-2000:])
            status = 1
    return status


#: The file `ncu` writes: {toggle, "default" or "cudnn": {"D:causal:S": tensor
#: active %}} ("cudnn": the longest of cuDNN's kernels at each default point).
TENSOR_FILE = "tensor-active.json"


def point_key(point):
    """(D, causal, S) as `ncu`'s file spells it: "D:0|1:S"."""
    d, causal, s = point
    return f"{d}:{int(causal)}:{s}"


def ncu_points(head_dims, seq_len):
    return [f"{d}:{c}:{seq_len}" for d in head_dims for c in (0, 1)]


def cmd_ncu(args):
    """One ncu run per toggle (and one of the defaults) over its head dims,
    both masks, at --seq keys: the wgmma activity of each kernel, parsed
    here so that one small JSON comes back from the GPU machine."""
    import ncu_profile
    metrics = ",".join(("gpu__time_duration.sum", ncu_profile.TENSOR_ACTIVE))
    runs = {"default": (args.defaults, (64, 128, 256))}
    for toggle, (_, head_dims) in FEATURE_TOGGLES.items():
        runs[toggle] = (str(Path(args.kernels) / folder_name(toggle)), head_dims)
    active, status = {}, 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, (folder, head_dims) in runs.items():
        points = ncu_points(head_dims, args.seq)
        csv_path = out / f"ncu-{folder_name(name)}.csv"
        command = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--csv",
                   "--metrics", metrics, sys.executable, str(HERE / "ncu_profile.py"),
                   "--kernels", folder, "--points", ",".join(points)]
        print(f"=== {name}", flush=True)
        with open(csv_path, "w") as f:
            done = subprocess.run(command, stdout=f, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            print(done.stderr[-2000:])
            status = 1
            continue
        parsed = ncu_profile.parse_report(csv_path, [ncu_profile.parse_point(p) for p in points])
        active[name] = {point_key(p): ncu_profile.metric(m, ncu_profile.TENSOR_ACTIVE)
                        for p, who, _, m in parsed if who == "fa-t"}
        if name == "default":
            peers = {}
            for p, who, _, m in parsed:
                time = ncu_profile.metric(m, "gpu__time_duration")
                if who == "peer" and time > peers.get(point_key(p), (-1.0, 0.0))[0]:
                    peers[point_key(p)] = (time, ncu_profile.metric(m, ncu_profile.TENSOR_ACTIVE))
            active["cudnn"] = {k: v for k, (_, v) in peers.items()}
        csv_path.unlink()
    (out / TENSOR_FILE).write_text(json.dumps(active, indent=1))
    return status


def tensor_idle(out_dir, toggle, d, causal):
    """(default, toggled) tensor idle % from `ncu`'s file, or None."""
    path = Path(out_dir) / TENSOR_FILE
    if not path.exists():
        return None
    active = json.loads(path.read_text())
    key = next((k for k in active.get(toggle, {})
                if k.startswith(f"{d}:{int(causal)}:")), None)
    if key is None or key not in active.get("default", {}):
        return None
    return 100.0 - active["default"][key], 100.0 - active[toggle][key]


def same_kernel(kernels, defaults, toggle, d, causal, seq_len):
    """Whether the toggle compiled point (d, causal, S) to the default's PTX
    (the option already had the forced value there): such a ratio is noise."""
    config = bench.point_config("bf16", d, causal)
    toggled = bench.find_base([Path(kernels) / folder_name(toggle)], config, seq_len)
    default = bench.find_base([Path(defaults)], config, seq_len)
    return toggled.ptx_path.read_bytes() == default.ptx_path.read_bytes()


def table_rows(out_dir, kernels=None, defaults=None):
    for toggle in FEATURE_TOGGLES:
        path = Path(out_dir) / f"{folder_name(toggle)}.json"
        if not path.exists():
            continue
        rows = json.loads(path.read_text())["rows"]
        groups = {}
        for r in rows:
            groups.setdefault((r["D"], r["causal"]), []).append(r)
        for (d, causal), rs in sorted(groups.items()):
            rs.sort(key=lambda r: r["S"])
            ratios = [r["tflops"]["base"] / r["tflops"]["fa-t"] for r in rs]
            same = [kernels is not None
                    and same_kernel(kernels, defaults, toggle, d, causal, r["S"]) for r in rs]
            yield {"toggle": toggle, "D": d, "causal": causal,
                   "ratios": ratios, "same": same,
                   "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)),
                   "err_default": max(r["rel_err"]["fa-t"] for r in rs),
                   "err_toggled": max(r["rel_err"]["base"] for r in rs),
                   "tensor_idle": tensor_idle(out_dir, toggle, d, causal)}


def cmd_table(args):
    print("| toggle | D | mask | toggled / default, S = 512 … 16k | geomean | max err default / toggled "
          "| tensor idle % at 4k, default / toggled |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in table_rows(args.out, args.kernels, args.defaults):
        idle = row["tensor_idle"]
        print(f"| {row['toggle']} | {row['D']} | {'causal' if row['causal'] else '—'} | "
              + " / ".join(f"{'=' if same else ''}{x:.3f}"
                           for x, same in zip(row["ratios"], row["same"]))
              + f" | {row['geomean']:.3f} | {row['err_default']:.2e} / {row['err_toggled']:.2e} | "
              + (f"{idle[0]:.1f} / {idle[1]:.1f} |" if idle else "— |"))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile every toggle's folder (needs fa-t-opt)")
    b.add_argument("--out", required=True)
    b.add_argument("--fa-t-opt", default=str(HERE.parent / "build" / "bin" / "fa-t-opt"))
    r = sub.add_parser("run", help="time every toggle against the defaults (GPU)")
    r.add_argument("--kernels", required=True, help="the folder `build` filled")
    r.add_argument("--defaults", default=".kernels-bench", help="the default grid kernels")
    r.add_argument("--out", required=True)
    n = sub.add_parser("ncu", help="tensor-pipe activity of the defaults and every toggle "
                       "(GPU, Nsight Compute)")
    n.add_argument("--kernels", required=True, help="the folder `build` filled")
    n.add_argument("--defaults", default=".kernels-bench", help="the default grid kernels")
    n.add_argument("--seq", type=int, default=4096, help="key length of the profiled points")
    n.add_argument("--out", required=True)
    t = sub.add_parser("table", help="the markdown table of a `run`'s JSON")
    t.add_argument("out")
    t.add_argument("--kernels", help="the folder `build` filled: marks with '=' the points "
                   "where the toggle compiled to the default's kernel")
    t.add_argument("--defaults", default=".kernels-bench")
    args = ap.parse_args(argv)
    return {"build": cmd_build, "run": cmd_run, "ncu": cmd_ncu,
            "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
