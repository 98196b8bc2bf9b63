#!/usr/bin/env python3
"""The static profile of fa-t kernels: what ptxas made of the PTX.

    python3 scripts/sass_profile.py KERNEL.ptx [...] [--json FILE]

For each kernel: ptxas -v's registers and spills, the whole kernel's HGMMA
(by shape), MUFU.EX2 and local-memory (LDL/STL) counts, and the steady main
loop — the loop that issues both GEMMs — on its hot path: one iteration of
an unmasked block, i.e. following the loop's forward branches to targets
inside the loop (the mask is such a block, skipped when the block needs no
mask) and falling through the ones that leave it (a barrier wait's retry).
Its instruction mix by unit says which pipe a block's softmax loads:

  tensor  HGMMA                    mufu  MUFU (ex2, on 16 lanes per SM and clock)
  fma     FFMA FMUL FADD ...       alu   FMNMX FSEL ISETP LOP3 IMNMX SHF ...
  uniform U* (the uniform datapath) other the rest (moves, barriers, branches)

Needs ptxas and cuobjdump (PATH, /usr/local/cuda/bin, or the venv's
nvidia/triton wheels); exits 2 when either is missing.
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FMA = {"FFMA", "FMUL", "FADD", "FFMA2", "FMUL2", "FADD2", "HFMA2", "HMUL2", "HADD2"}
ALU = {"FMNMX", "FSEL", "FSETP", "ISETP", "IMNMX", "LOP3", "SHF", "SEL", "PLOP3",
       "VIMNMX", "IABS", "FCHK", "P2R", "R2P", "PRMT", "IADD3", "LEA", "VIADD",
       "IMAD", "F2FP", "SHL", "SHR", "BMSK", "FLO", "POPC"}


def find_tool(name):
    """`name` on PATH, in /usr/local/cuda/bin, or in the venv's CUDA wheels."""
    found = shutil.which(name)
    if found:
        return found
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for pattern in (f"/usr/local/cuda/bin/{name}",
                    f"{root}/.venv/lib/python3*/site-packages/nvidia/cu*/bin/{name}",
                    f"{root}/.venv/lib/python3*/site-packages/triton/backends/nvidia/bin/{name}"):
        for path in sorted(glob.glob(pattern)):
            if os.access(path, os.X_OK):
                return path
    return None


def unit(opcode):
    base = opcode.split(".")[0]
    if base == "HGMMA":
        return "tensor"
    if base == "MUFU":
        return "mufu"
    if base in FMA:
        return "fma"
    if base in ALU:
        return "alu"
    if base.startswith("U"):
        return "uniform"
    return "other"


def parse_sass(text):
    """[(address, predicate, opcode, operands)] of the first function."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);", line)
        if m:
            out.append((int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3),
                        m.group(4).strip()))
    return out


def branch_target(operands):
    m = re.search(r"0x([0-9a-f]+)", operands)
    return int(m.group(1), 16) if m else None


def main_loop(ins):
    """(start, end) indices of the innermost loop holding both GEMMs (QK's
    SS form and PV's register-A form), or None."""
    index = {a: i for i, (a, *_rest) in enumerate(ins)}
    best = None
    for i, (a, _, opcode, ops) in enumerate(ins):
        if not opcode.startswith("BRA"):
            continue
        target = branch_target(ops)
        if target is None or target >= a or target not in index:
            continue
        s = index[target]
        gemms = [o for _, _, op, o in ins[s:i + 1] if op.startswith("HGMMA")]
        has_ss = any(o.split(",")[1].strip().startswith("gdesc") for o in gemms)
        has_rs = any(o.split(",")[1].strip().startswith("R") for o in gemms)
        if has_ss and has_rs and (best is None or i - s < best[1] - best[0]):
            best = (s, i)
    return best


def forward_target(ins, index, start, end, i):
    """The index of the instruction a branch at ``i`` jumps forward to
    inside the loop [start, end], or None (no branch, or one that leaves
    the loop or goes back)."""
    a, _, opcode, ops = ins[i]
    if not opcode.startswith("BRA"):
        return None
    target = branch_target(ops)
    if target is None or target not in index or not a < target <= ins[end][0]:
        return None
    return index[target]


def hot_path(ins, start, end):
    """The instructions one unmasked iteration executes (see the module doc)."""
    index = {a: i for i, (a, *_rest) in enumerate(ins)}
    path, i = [], start
    while i <= end:
        path.append(ins[i])
        j = forward_target(ins, index, start, end, i) if i != end else None
        i = j if j is not None else i + 1
    return path


def shortest_path(ins, start, end):
    """The fewest instructions from the loop's head to its back branch,
    each forward branch inside the loop taken or not as is shorter. Where
    the hot path (which takes every such branch) jumps to a slower version
    of the block — a tile's clamped capture reads, taken when the tile is
    not inside the tensor — this is the in-bounds block's iteration."""
    index = {a: i for i, (a, *_rest) in enumerate(ins)}
    # best[i]: (length, next index) of the shortest way from i to `end`.
    best = {end: (1, None)}
    for i in range(end - 1, start - 1, -1):
        _, pred, opcode, ops = ins[i]
        options = []
        j = forward_target(ins, index, start, end, i)
        if j is not None:
            options.append(j)
            if pred:  # a predicated branch may also fall through
                options.append(i + 1)
        elif not (opcode.startswith("BRA") and not pred and branch_target(ops) is not None):
            options.append(i + 1)
        options = [j for j in options if j in best]
        if options:
            j = min(options, key=lambda j: best[j][0])
            best[i] = (best[j][0] + 1, j)
    path, i = [], start
    while i is not None and i in best:
        path.append(ins[i])
        i = best[i][1]
    return path


def loop_profile(path):
    units = collections.Counter(unit(op) for _, _, op, _ in path)
    return {
        "instructions": len(path),
        "units": {k: units.get(k, 0) for k in
                  ("tensor", "mufu", "fma", "alu", "uniform", "other")},
        "opcodes": dict(collections.Counter(op.split(".")[0] for _, _, op, _ in path)
                        .most_common()),
    }


def compile_sass(ptx, ptxas, cuobjdump):
    """(SASS text, ptxas -v's report) of one PTX file for sm_90a."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        res = subprocess.run([ptxas, "-arch=sm_90a", "-v", ptx, "-o", cubin],
                             capture_output=True, text=True, check=True)
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True,
                              text=True, check=True).stdout
    return sass, res.stdout + res.stderr


def profile(ptx, ptxas, cuobjdump):
    sass, info = compile_sass(ptx, ptxas, cuobjdump)
    regs = re.search(r"Used (\d+) registers", info)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
    ins = parse_sass(sass)
    def shape(op):
        m = re.match(r"HGMMA\.(\d+x\d+x\d+)", op)
        return m.group(1) if m else op
    gemm_shapes = collections.Counter(shape(op) for _, _, op, _ in ins
                                      if op.startswith("HGMMA"))
    out = {
        "kernel": os.path.basename(ptx)[:-4],
        "registers": int(regs.group(1)) if regs else None,
        "spill_bytes": int(spill.group(1)) + int(spill.group(2)) if spill else None,
        "local_memory": sum(op.split(".")[0] in ("LDL", "STL") for _, _, op, _ in ins),
        "hgmma": dict(sorted(gemm_shapes.items())),
        "mufu_ex2": sum(op.startswith("MUFU.EX2") for _, _, op, _ in ins),
        "instructions": len(ins),
    }
    loop = main_loop(ins)
    if loop:
        path = hot_path(ins, *loop)
        out["main_loop"] = loop_profile(path)
        fast = shortest_path(ins, *loop)
        if len(fast) < len(path):
            out["shortest_path"] = loop_profile(fast)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ptx", nargs="+")
    ap.add_argument("--json", help="also write the profiles here")
    args = ap.parse_args()
    ptxas, cuobjdump = find_tool("ptxas"), find_tool("cuobjdump")
    if not ptxas or not cuobjdump:
        print(f"sass_profile: needs ptxas ({ptxas}) and cuobjdump ({cuobjdump})",
              file=sys.stderr)
        return 2
    profiles = [profile(p, ptxas, cuobjdump) for p in args.ptx]
    for p in profiles:
        print(f"{p['kernel']}: registers {p['registers']} spill_bytes {p['spill_bytes']} "
              f"local_memory {p['local_memory']} mufu_ex2 {p['mufu_ex2']} "
              f"hgmma {' '.join(f'{k}:{v}' for k, v in p['hgmma'].items())}")
        loop = p.get("main_loop")
        if loop:
            print(f"  main loop: {loop['instructions']} instructions per iteration; "
                  + " ".join(f"{k} {v}" for k, v in loop["units"].items()))
            # The softmax's and the GEMMs' opcodes in a fixed order (the
            # lit checks read this line), then every opcode by count.
            key = ("HGMMA", "WARPGROUP", "MUFU", "FFMA", "FMUL", "FADD", "FMNMX", "F2FP")
            print("  key: " + " ".join(f"{k} {loop['opcodes'].get(k, 0)}" for k in key))
            print("  opcodes: " + " ".join(f"{k} {v}" for k, v in loop["opcodes"].items()))
            fast = p.get("shortest_path")
            if fast:
                print(f"  shortest path: {fast['instructions']} instructions; "
                      + " ".join(f"{k} {v}" for k, v in fast["units"].items()))
                print("  shortest path opcodes: "
                      + " ".join(f"{k} {v}" for k, v in fast["opcodes"].items()))
        else:
            print("  main loop: not found")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(profiles, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
