#!/usr/bin/env python3
"""What ptxas made of two builds of the same kernels, side by side.

    python3 scripts/sass_diff.py BEFORE_DIR AFTER_DIR [REGEX]

For each PTX file in AFTER_DIR (whose name matches REGEX) and its namesake
in BEFORE_DIR: the spill bytes of each, the length of the steady main
loop's hot path (scripts/sass_profile.py) and how many SASS lines differ
in it and in the whole kernel, registers and addresses normalized (so a
renumbering is no difference), and whether the machine code is
byte-identical (encodings and all). When a change cannot keep the PTX
byte-identical (the codegen gate), this tells the kernels whose machine
code is the same (nothing to time) from those to A/B-time, and shows where ptxas's schedule
moved (perf log runs 107-109: a 64-bit address held through a tile
changed the D = 128 main loops although their PTX differed by a few
lines elsewhere). Needs ptxas and cuobjdump as sass_profile.py does.
"""

import argparse
import difflib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_profile  # noqa: E402


def normalize(ins):
    out = []
    for _addr, pred, opcode, ops in ins:
        ops = re.sub(r"0x[0-9a-f]+", "X", ops)
        ops = re.sub(r"UR\d+", "UR", ops)
        ops = re.sub(r"R\d+", "R", ops)
        out.append(f"{pred} {opcode} {ops}".strip())
    return out


def compile_sass(ptx, ptxas, cuobjdump):
    """(instructions, spill bytes, exact SASS lines) of one PTX file."""
    sass, info = sass_profile.compile_sass(ptx, ptxas, cuobjdump)
    spill = re.search(r"(\d+) bytes spill stores", info)
    # The machine code itself, encodings included, without the dump's
    # headers (they name the input file).
    exact = [line.strip() for line in sass.splitlines()
             if line.strip().startswith(("/*", "{", "}")) or "/* 0x" in line]
    return (sass_profile.parse_sass(sass), int(spill.group(1)) if spill else 0,
            exact)


def changed_lines(a, b):
    return sum(1 for line in difflib.unified_diff(a, b, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("regex", nargs="?", default=".")
    args = parser.parse_args()
    ptxas = sass_profile.find_tool("ptxas")
    cuobjdump = sass_profile.find_tool("cuobjdump")
    if not ptxas or not cuobjdump:
        print(f"sass_diff: needs ptxas ({ptxas}) and cuobjdump ({cuobjdump})",
              file=sys.stderr)
        return 2
    names = sorted(f for f in os.listdir(args.after)
                   if f.endswith(".ptx") and re.search(args.regex, f))
    loops_same = whole_same = exact_same = 0
    for name in names:
        before = os.path.join(args.before, name)
        if not os.path.exists(before):
            print(f"{name}: not in {args.before}")
            continue
        ins_a, spill_a, exact_a = compile_sass(before, ptxas, cuobjdump)
        ins_b, spill_b, exact_b = compile_sass(os.path.join(args.after, name),
                                               ptxas, cuobjdump)
        exact_same += exact_a == exact_b
        loops = []
        for ins in (ins_a, ins_b):
            bounds = sass_profile.main_loop(ins)
            loops.append(normalize(sass_profile.hot_path(ins, *bounds))
                         if bounds else [])
        loop_diff = changed_lines(*loops)
        whole_diff = changed_lines(normalize(ins_a), normalize(ins_b))
        loops_same += loop_diff == 0
        whole_same += whole_diff == 0
        print(f"{name}: main loop {len(loops[0])} -> {len(loops[1])} "
              f"instructions, {loop_diff} lines differ; kernel {whole_diff} "
              f"lines differ; spills {spill_a} -> {spill_b} bytes"
              + ("; machine code byte-identical" if exact_a == exact_b else ""))
    print(f"{len(names)} kernels: main loop identical in {loops_same}, "
          f"whole kernel identical in {whole_same}, machine code "
          f"byte-identical in {exact_same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
