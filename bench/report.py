#!/usr/bin/env python3
"""Markdown table (for docs/perf-log.md) from one or more bench.py JSON files.

    python3 bench/report.py bench/results/RUN.json [--label "run N"]

Columns: TFLOP/s of every implementation in the run, fa-t's ratio to cuDNN
and to flash, and the relative errors against float64; last line the
geometric means of the ratios over the rows.
"""
import argparse
import json
import math


def geomean(xs):
    xs = [x for x in xs if math.isfinite(x) and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def table(rows):
    names = list(rows[0]["tflops"])
    lines = ["| D | mask | B×H×S | " + " | ".join(names) + " | fa-t/cuDNN | fa-t/flash "
             "| err fa-t | err cuDNN |",
             "|" + " --- |" * (len(names) + 7)]
    for r in rows:
        t = r["tflops"]
        lines.append(
            f"| {r['D']} | {'causal' if r['causal'] else '—'} | {r['B']}×{r['H']}×{r['S']} | "
            + " | ".join(f"{t[n]:.1f}" for n in names)
            + f" | {t['fa-t'] / t['cudnn']:.3f} | {t['fa-t'] / t['flash']:.3f}"
            + f" | {r['rel_err']['fa-t']:.2e} | {r['rel_err']['cudnn']:.2e} |")
    lines.append(f"\ngeomean over {len(rows)} points: fa-t/cuDNN "
                 f"{geomean([r['tflops']['fa-t'] / r['tflops']['cudnn'] for r in rows]):.3f}, "
                 f"fa-t/flash {geomean([r['tflops']['fa-t'] / r['tflops']['flash'] for r in rows]):.3f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("json", nargs="+")
    a = ap.parse_args()
    for path in a.json:
        with open(path) as f:
            data = json.load(f)
        print(f"{path}: {data['meta']}\n")
        print(table(data["rows"]))


if __name__ == "__main__":
    main()
