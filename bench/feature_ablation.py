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
    python3 bench/feature_ablation.py table OUT

``run`` calls bench/bench.py once per toggle (``--variants base`` with the
toggle's folder: the "base" column is the toggled kernel) and ``table``
prints, per toggle, head dim and mask, TFLOP/s of the toggled kernel over
the default's at S = 512 … 16k ('=' where the toggle compiled to the
default's own kernel, so the ratio is the protocol's noise), their geomean
and both relative errors against float64.
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
    # fat-pipeline and convert-fat-to-nvvm
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
                   "err_toggled": max(r["rel_err"]["base"] for r in rs)}


def cmd_table(args):
    print("| toggle | D | mask | toggled / default, S = 512 … 16k | geomean | max err default / toggled |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in table_rows(args.out, args.kernels, args.defaults):
        print(f"| {row['toggle']} | {row['D']} | {'causal' if row['causal'] else '—'} | "
              + " / ".join(f"{'=' if same else ''}{x:.3f}"
                           for x, same in zip(row["ratios"], row["same"]))
              + f" | {row['geomean']:.3f} | {row['err_default']:.2e} / {row['err_toggled']:.2e} |")
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
    t = sub.add_parser("table", help="the markdown table of a `run`'s JSON")
    t.add_argument("out")
    t.add_argument("--kernels", help="the folder `build` filled: marks with '=' the points "
                   "where the toggle compiled to the default's kernel")
    t.add_argument("--defaults", default=".kernels-bench")
    args = ap.parse_args(argv)
    return {"build": cmd_build, "run": cmd_run, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
