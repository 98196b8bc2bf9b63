#!/usr/bin/env python3
"""Summarize Nsight Compute's per-instruction stall sampling of one kernel.

Input: ``ncu -i REPORT --page source --csv --print-source sass`` (what
bench/ncu_source.sh writes). Output: the warp-stall samples per class of
SASS instruction (where the warps wait: wgmma issue, wgmma waits, mbarrier
waits, named barriers, the exponentials, the stores, ...), then the hottest
instructions with the two before each, so a wait can be told apart by what
it waits for. Samples are ncu's "Warp Stall Sampling (All Samples)": every
sample is one warp seen at that instruction, issuing or not.
"""
import argparse
import csv
import io
import re
import sys

#: SASS opcode (first word, predicate stripped) → class, first match wins.
CLASSES = (
    ("wgmma issue", r"^HGMMA"),
    ("wgmma wait/fence", r"^WARPGROUP"),
    ("mbarrier", r"^SYNCS"),
    ("named barrier", r"^BAR"),
    ("exp (MUFU)", r"^MUFU"),
    ("max/shuffle", r"^(FMNMX|SHFL)"),
    ("fp32 math", r"^(FFMA|FMUL|FADD|FSEL|FSETP)"),
    ("pack/convert", r"^(F2FP|F2F|I2F|F2I)"),
    ("global store", r"^(STG|ST\b|STS|STSM|UTMASTG)"),
    ("TMA/loads", r"^(UTMALDG|UBLKCP|LDG|LDS|LDSM|UTMAPF|LD\b)"),
    ("setmaxnreg", r"^USETMAXREG"),
    ("branch/control", r"^(BRA|BSSY|BSYNC|EXIT|RET|CALL|WARPSYNC|NANOSLEEP|YIELD|BPT)"),
)


def opcode(sass):
    text = re.sub(r"^@!?U?P\w+\s+", "", sass.strip())
    return text.split(" ")[0] if text else ""


def classify(op):
    for name, pattern in CLASSES:
        if re.match(pattern, op):
            return name
    return "other int/misc"


def read_rows(path):
    with open(path, newline="") as f:
        text = f.read()
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if "Source" in ln and "Address" in ln), None)
    if start is None:
        sys.exit(f"{path}: no source table (header with Address and Source) found")
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    return reader.fieldnames, list(reader)


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--label", default="")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    fields, rows = read_rows(args.csv)
    col_all = next((f for f in fields if "Stall Sampling (All" in f), None)
    col_not = next((f for f in fields if "Stall Sampling (Not" in f), None)
    col_exec = next((f for f in fields if f.strip() == "Instructions Executed"), None)
    if col_all is None:
        sys.exit(f"{args.csv}: no stall-sampling column; columns: {fields}")
    src = [r.get("Source", "") for r in rows]
    samples = [number(r[col_all]) for r in rows]
    issued_not = [number(r[col_not]) if col_not else 0.0 for r in rows]
    total = sum(samples) or 1.0
    print(f"== {args.label}: {len(rows)} SASS instructions, {int(total)} samples")
    print("  columns: " + "; ".join(f for f in fields if f not in ("Source",))[:600])
    by_class = {}
    for s, n, text in zip(samples, issued_not, src):
        c = classify(opcode(text))
        a, b = by_class.get(c, (0.0, 0.0))
        by_class[c] = (a + s, b + n)
    for c, (s, n) in sorted(by_class.items(), key=lambda kv: -kv[1][0]):
        print(f"  {c:18s} {100 * s / total:5.1f}%  (not issued {100 * n / total:5.1f}%)")
    # Straight-line regions: runs of instructions executed equally often
    # (a loop body, the per-tile code, the epilogue), with their share.
    col_exec_values = [number(r.get(col_exec, 0)) if col_exec else 0.0 for r in rows]
    print("  regions (instructions executed equally often, >= 1% of samples):")
    start = 0
    for i in range(1, len(rows) + 1):
        if i < len(rows) and col_exec_values[i] == col_exec_values[start]:
            continue
        share = sum(samples[start:i]) / total
        if share >= 0.01:
            kinds = {}
            for text in src[start:i]:
                c = classify(opcode(text))
                kinds[c] = kinds.get(c, 0) + 1
            top = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:3])
            print(f"  [{start:5d}-{i - 1:5d}] x{int(col_exec_values[start]):9d} {100 * share:5.1f}%  ({top})")
        start = i
    print(f"  hottest {args.top} instructions (% of samples, not-issued %, executions):")
    order = sorted(range(len(rows)), key=lambda i: -samples[i])[:args.top]
    for i in sorted(order):
        ctx = " | ".join(src[j].strip()[:48] for j in range(max(0, i - 2), i))
        execs = rows[i].get(col_exec, "") if col_exec else ""
        print(f"  [{i:5d}] {100 * samples[i] / total:5.2f}% {100 * issued_not[i] / total:5.2f}% "
              f"x{execs:>10s}  {src[i].strip()[:70]}   <- {ctx}")


if __name__ == "__main__":
    main()
