#!/usr/bin/env python3
"""An experiment on compiled kernels (perf log, run 146): the cost of ALiBi's
bias as weights on P, timed on the plain kernel before the compiler builds it.

With the weights on P (docs/modifications.md, "ALiBi's bias as weights"),
a kernel is its plain kernel plus, per consumer thread, packed bf16x2
weights (one pair per 8-key group of a run of RUN_KEYS keys: columns
8·i + 2·(lane mod 4) + {0, 1}; 8 pairs for 64-key runs), computed once,
and one `mul.rn.bf16x2` per two rounded probabilities before P·V (plus a
row constant per run, left out here).
This script edits a plain kernel's PTX into that shape:

- after the consumers' `setmaxnreg.inc` it computes the weights as the real
  kernel would, ŵ = bf16(exp2(a·(r − (n − 1)/2))) for a key's place r in
  its run of n, with a = 0·scale read from the kernel's f32 parameter 10 (so
  every weight is exactly 1 and the output is the plain kernel's, while
  ptxas cannot fold the multiplies);
- every `cvt.rn.bf16x2.f32` whose result reaches an A operand of a
  register-A `wgmma` (P·V; through the loop's `mov.b32` copies) is
  followed by a `mul.rn.bf16x2` with the weight of its key group: A operand
  a of k-step t holds keys 16·t + 8·(a ≥ 2) + 2·(lane mod 4) + {0, 1}.

  python3 bench/ptx_weights_on_p.py KERNEL.ptx...   (in place; prints counts)
"""
import re
import struct
import sys

KERNEL = re.compile(r"^\.visible \.entry (fat_attention_\w*_m\d+n(\d+)s\w*)\(")
WGMMA_A = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.bf16\.bf16\s*"
                     r"\{[^}]*\},\s*\{(%r\d+), (%r\d+), (%r\d+), (%r\d+)\}")
MOV = re.compile(r"^\s*mov\.b32\s+(%r\d+),\s*(%r\d+);")
CVT = re.compile(r"^(\s*)cvt\.rn\.bf16x2\.f32\s+(%r\d+),\s*%r\d+,\s*%r\d+;")
GROW = re.compile(r"^\s*setmaxnreg\.inc\.sync\.aligned\.u32\s+\d+;")
REGS = re.compile(r"^\s*\.reg \.b32\s+%r<\d+>;")
#: Keys per run of the weights (branch weights-on-p: one offset per run of
#: 64 keys, the runs' weights equal; 128 gives run 146's first form).
RUN_KEYS = 64


def weights_prologue(kernel, run_keys):
    """PTX computing %wp0..%wp{n/8-1} (bf16x2) = exp2(a·(r − (n−1)/2)) for the
    n keys of a run, a = 0·scale."""
    center = (run_keys - 1) / 2
    out = ["\t// weights on P (bench/ptx_weights_on_p.py)",
           f"\tld.param.b32 \t%wa, [{kernel}_param_10];",
           "\tmul.f32 \t%wa, %wa, 0f00000000;",
           "\tmov.u32 \t%wl, %tid.x;",
           "\tand.b32 \t%wl, %wl, 3;",
           "\tshl.b32 \t%wl, %wl, 1;",
           "\tcvt.rn.f32.u32 \t%wk, %wl;"]
    for i in range(run_keys // 8):
        for e in range(2):
            off = 8 * i + e - center
            out += [f"\tadd.f32 \t%wx, %wk, 0f{float_hex(off)};",
                    "\tmul.f32 \t%wx, %wx, %wa;",
                    f"\tex2.approx.ftz.f32 \t%wf{e}, %wx;"]
        out.append(f"\tcvt.rn.bf16x2.f32 \t%wp{i}, %wf1, %wf0;")
    return out


def float_hex(x):
    return struct.pack(">f", x).hex().upper()


def rewrite(lines):
    positions = {}  # register -> weight index
    count = 0
    name = next((m for line in lines if (m := KERNEL.search(line))), None)
    if name is None:
        raise SystemExit("no .entry named fat_attention_..._m<M>n<N>s...")
    kernel, block_n = name.group(1), int(name.group(2))
    # Keys per block: N/16 k-steps per P·V chain; the weights repeat per run.
    run_keys = min(block_n, RUN_KEYS)
    for line in lines:
        m = WGMMA_A.search(line)
        if not m:
            continue
        t = count % (block_n // 16)
        count += 1
        for a, reg in enumerate(m.groups()):
            w = (2 * t + (a >= 2)) % (run_keys // 8)
            if positions.setdefault(reg, w) != w:
                raise SystemExit(f"{reg}: two key groups ({positions[reg]}, {w})")
    if count == 0 or count % (block_n // 16):
        raise SystemExit(f"{count} register-A wgmma: not whole P·V chains")
    changed = True
    while changed:  # the loop's copies: mov.b32 %a_reg, %cvt_result
        changed = False
        for line in lines:
            m = MOV.match(line)
            if m and m.group(1) in positions and m.group(2) not in positions:
                positions[m.group(2)] = positions[m.group(1)]
                changed = True
    out, muls, grown = [], 0, 0
    for line in lines:
        out.append(line)
        if REGS.match(line):
            out.append("\t.reg .b32 \t%wa, %wl, %wk, %wx, %wf0, %wf1;")
            out.append(f"\t.reg .b32 \t%wp<{run_keys // 8}>;")
        if GROW.match(line):
            out += weights_prologue(kernel, run_keys)
            grown += 1
        m = CVT.match(line)
        if m and m.group(2) in positions:
            out.append(f"{m.group(1)}mul.rn.bf16x2 \t{m.group(2)}, {m.group(2)}, "
                       f"%wp{positions[m.group(2)]};")
            muls += 1
    if not grown:
        raise SystemExit("no setmaxnreg.inc: not a warp-specialized kernel")
    return out, muls, count


def main(paths):
    for path in paths:
        with open(path) as f:
            lines = f.read().split("\n")
        out, muls, chains = rewrite(lines)
        with open(path, "w") as f:
            f.write("\n".join(out))
        print(f"{path}: {muls} multiplies on P, {chains} register-A wgmma")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
