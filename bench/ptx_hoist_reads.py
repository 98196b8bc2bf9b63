#!/usr/bin/env python3
"""An experiment on compiled kernels (perf log, run 127): move the key loop's
wait for S = Q·Kᵀ below a score region's reads of captured tensors.

In fa-t's overlapped key loop a consumer issues S_j = Q·K_jᵀ and
O += P_{j-1}·V_{j-1}, waits for S_j (`wgmma.wait_group 1`), gives K_j's
stage back (`mbarrier.arrive`) and then runs the score region, whose reads
of a captured tensor (a relative bias table) depend on the block's position
only. The region's lowering versions them (an in-bounds fast path, a
clamped slow path) and the paths meet where the scores are first used. This
script moves the wait and the release from before the version test to the
top of that meeting block, so the loads are issued while the GEMMs run. It
edits PTX text only, to time the idea before building it into the compiler:

  python3 bench/ptx_hoist_reads.py KERNEL.ptx...   (in place; prints moves)

A loop whose wait is not followed by that shape is left as it was.
"""
import re
import sys

WAIT = re.compile(r"^\s*wgmma\.wait_group\.sync\.aligned\s+1;\s*$")
ARRIVE = re.compile(r"^\s*mbarrier\.arrive\.shared\.b64\s")
CBRANCH = re.compile(r"^\s*@%p\d+ bra\s+(\$L__BB\d+_\d+);\s*$")
UBRANCH = re.compile(r"^\s*bra\.uni\s+(\$L__BB\d+_\d+);\s*$")
EMPTY_ASM = re.compile(r"^\s*// (begin|end) inline asm\s*$")


def hoist(lines):
    moves = 0
    i = 0
    while i < len(lines):
        if not WAIT.match(lines[i]):
            i += 1
            continue
        # The wait, the operand fences (empty asm), the stage's release and
        # the version test's index math, then the test's branch.
        j = i + 1
        while j < len(lines) and EMPTY_ASM.match(lines[j]):
            j += 1
        if j >= len(lines) or not ARRIVE.match(lines[j]):
            i += 1
            continue
        arrive = j
        k = arrive + 1
        while k < len(lines) and not CBRANCH.match(lines[k]):
            if re.search(r"\bbra\b|^\$L|wgmma|bar\.", lines[k]):
                break
            k += 1
        m = CBRANCH.match(lines[k]) if k < len(lines) else None
        if not m:
            i += 1
            continue
        slow = m.group(1)
        # The fast path ends with an unconditional branch to the meeting block.
        n = k + 1
        while n < len(lines) and not UBRANCH.match(lines[n]):
            if re.search(r"wgmma|^\$L", lines[n]):
                break
            n += 1
        u = UBRANCH.match(lines[n]) if n < len(lines) else None
        if not u:
            i += 1
            continue
        join = u.group(1)
        label = next((x for x, line in enumerate(lines) if line.strip() == join + ":"), None)
        slow_at = next((x for x, line in enumerate(lines) if line.strip() == slow + ":"), None)
        if label is None or slow_at is None or not (slow_at < label):
            i += 1
            continue
        moved = [lines[i], lines[arrive]]
        del lines[arrive]
        del lines[i]
        if label > i:
            label -= 2
        lines[label + 1:label + 1] = moved
        moves += 1
        i = k
    return moves


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            lines = f.read().split("\n")
        moves = hoist(lines)
        with open(path, "w") as f:
            f.write("\n".join(lines))
        print(f"{path}: {moves} waits moved")


if __name__ == "__main__":
    main()
