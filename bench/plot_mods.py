#!/usr/bin/env python3
"""The modifications table of a ``bench_mods.py run --json`` file: a markdown
table (stdout) and, with ``--svg``, a bar chart — useful TFLOP/s of fa-t,
FlexAttention and fa-t's plain kernel per modification, one panel per shape.

    python3 bench/plot_mods.py bench/results/RUN.json [--svg OUT.svg]

The SVG is written directly (no plotting package needed on the machine that
reads the results).
"""
import argparse
import json
import math
from collections import OrderedDict

SERIES = [("fa-t", "#1f6fb4"), ("flex", "#e8832a"), ("fa-t-plain", "#9bbbd8")]


def shape_label(t):
    return f"B{t['B']} H{t['H']} S{t['S']} D{t['D']}"


def markdown(times, checks):
    errors = {(c["name"], c["D"]): c for c in checks}
    lines = ["| modification | shape | fa-t | Flex | fa-t / Flex | fa-t / plain | error vs Flex's |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in times:
        tf = t["tflops"]
        flex = tf.get("flex")
        c = errors.get((t["name"], t["D"]))  # checked at 4k keys per D
        err = (f"{c['fa-t']['rel'] / c['flex']['rel']:.2f}×"
               if c and c.get("flex") else "")
        flex_cells = (f"{flex:.0f} | {tf['fa-t'] / flex:.2f}×" if flex else "— | —")
        lines.append(f"| {t['name']} | {shape_label(t)} | {tf['fa-t']:.0f} | {flex_cells} | "
                     f"{tf['fa-t'] / tf['fa-t-plain']:.2f}× | {err} |")
    return "\n".join(lines)


def svg(times, title):
    panels = OrderedDict()
    for t in times:
        panels.setdefault(shape_label(t), []).append(t)
    names = list(OrderedDict.fromkeys(t["name"] for t in times))
    top = max(v for t in times for k, v in t["tflops"].items() if k in dict(SERIES))
    top = math.ceil(top / 100) * 100
    bar, gap, left, height = 7, 8, 60, 220
    group = bar * len(SERIES) + gap
    width = left + group * len(names) + 20
    out = []
    y0 = 40
    for label, rows in panels.items():
        base = y0 + height
        out.append(f'<text x="{left}" y="{y0 - 8}" font-size="13">{label}</text>')
        for v in range(0, top + 1, 100):
            y = base - height * v / top
            out.append(f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" '
                       f'stroke="#ddd"/><text x="{left - 6}" y="{y + 4:.1f}" '
                       f'font-size="10" text-anchor="end">{v}</text>')
        by_name = {t["name"]: t for t in rows}
        for i, name in enumerate(names):
            x = left + i * group
            t = by_name.get(name)
            for j, (key, color) in enumerate(SERIES):
                v = t["tflops"].get(key) if t else None
                if v:
                    h = height * v / top
                    out.append(f'<rect x="{x + j * bar}" y="{base - h:.1f}" width="{bar - 1}" '
                               f'height="{h:.1f}" fill="{color}"/>')
            out.append(f'<text transform="translate({x + bar},{base + 8}) rotate(60)" '
                       f'font-size="10">{name}</text>')
        y0 = base + 130
    legend = "".join(
        f'<rect x="{left + 110 * j}" y="{y0 - 20}" width="10" height="10" fill="{c}"/>'
        f'<text x="{left + 110 * j + 14}" y="{y0 - 11}" font-size="11">{k}</text>'
        for j, (k, c) in enumerate(SERIES))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y0}" '
            f'font-family="sans-serif"><text x="{left}" y="18" font-size="14">{title}</text>'
            + "".join(out) + legend + "</svg>\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--svg", help="write the bar chart here")
    ap.add_argument("--title", default="bf16 forward with modifications, useful TFLOP/s")
    a = ap.parse_args(argv)
    data = json.load(open(a.json))
    print(markdown(data["times"], data.get("checks", [])))
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(data["times"], a.title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
