#!/usr/bin/env python3
"""What the compiler chose for each modification's kernel: the table of
docs/modifications.md.

    python3 bench/mods_choices.py [--kernels .kernels-mods] [--markdown]

For every modification of bench/bench_mods.py at every shape, the kernel the
API would run (fa_t.registry.find_kernel on the folder `bench_mods.py build`
filled, as a call resolves it) and the decisions its manifest records: the
tiles (fat-tile), the softmax's tensorization (fat-tensorize: reference,
row sums, a linear bias on the tensor cores, rescale, exponentials on the
FMA pipe) and the schedule (fat-pipeline: overlap, ping-pong turns,
persistent CTAs, tile overlap).
Reads manifests only: no GPU, no compiler.
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import bench_mods  # noqa: E402
from fa_t import jit, registry  # noqa: E402
from fa_t.config import KernelConfig  # noqa: E402

COLUMNS = ["tiles", "row max", "row sums", "bias", "rescale", "CTAs", "turns", "tile overlap"]


def choices(manifest):
    """The recorded decisions of one kernel, as the table's cells."""
    data = json.loads(Path(manifest.path).read_text())
    s, c = data["schedule"], data["config"]
    rescale = s.get("rescale", "always")
    if rescale == "lazy":
        rescale += f" (τ = {s.get('rescale_threshold', 8):g})"
    if s.get("exp2_poly"):
        rescale += f", exp2-poly {s['exp2_poly']:g}"
    return {
        "tiles": f"{c['block_m']} × {c['block_n']}",
        "row max": s.get("row_max", "online"),
        "row sums": s.get("rowsum", "vector"),
        # A linear position bias on the tensor cores (linear-bias=mma);
        # "-" also where the region has no such bias.
        "bias": s.get("linear_bias", "-"),
        "rescale": rescale,
        # Persistent CTAs with a tile loop (", dynamic": taking their tiles
        # from a counter, tile-scheduler=dynamic), or one CTA per tile.
        "CTAs": ("per tile" if not s.get("persistent") else
                 "persistent, dynamic" if s.get("tile_scheduler") == "dynamic"
                 else "persistent"),
        "turns": "yes" if s.get("pingpong") else "no",
        "tile overlap": "yes" if s.get("tile_overlap") else "no",
    }


def table(kernels):
    rows = []
    for b, h, s, d in bench_mods.SHAPES:
        for name, (causal, score_mod, mask_mod) in bench_mods.modifications((b, h, s, d)).items():
            config = KernelConfig("bf16", d, d, h, h, causal=causal)
            bm = bench_mods.block_mask_of(name, causal, mask_mod, b, s, s)
            regions, _ = bench_mods.regions_of(score_mod, mask_mod, bm)
            try:
                m = registry.find_kernel(config, kernels, allow_jit=False, seq_len=s,
                                         regions=regions)
            except Exception as e:  # noqa: BLE001 - a missing kernel is a row
                rows.append((name, d, s, None, str(e).split(":")[0]))
                continue
            rows.append((name, d, s, choices(m), m.entry))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=".kernels-mods",
                    help="the folder `bench_mods.py build` filled")
    ap.add_argument("--markdown", action="store_true", help="a markdown table")
    args = ap.parse_args()
    os.environ.pop("FA_T_OPT", None)  # resolve from the folder only
    rows = table(args.kernels)
    if args.markdown:
        print("| modification | D | keys | " + " | ".join(COLUMNS) + " |")
        print("| --- " * (len(COLUMNS) + 3) + "|")
    missing = 0
    for name, d, s, cells, entry in rows:
        if cells is None:
            missing += 1
            print(f"| {name} | {d} | {s // 1024}k | no kernel: {entry} |" if args.markdown
                  else f"{name:30s} D{d:<4d}{s // 1024:>3d}k  no kernel ({entry})")
            continue
        if args.markdown:
            print(f"| {name} | {d} | {s // 1024}k | " + " | ".join(cells[k] for k in COLUMNS) + " |")
        else:
            print(f"{name:30s} D{d:<4d}{s // 1024:>3d}k  " +
                  "  ".join(f"{k}={cells[k]}" for k in COLUMNS))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
