#!/usr/bin/env python3
"""Writes docs/validation.md: every bad input tried at the compiler boundary
(fa-t-opt pass and pipeline options, and inputs the GPU path or the verifier
refuses) with the exact message fa-t-opt gave, by running each command.

    .venv/bin/python scripts/validation_table.py [--fa-t-opt PATH] [--output FILE]

Exits 1 if a command crashed (a signal, "LLVM ERROR", a stack dump or a
sanitizer report) or succeeded: each must be refused with a diagnostic.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def attention(name, q, k, o, attrs="", kind="memref"):
    """A func holding one fat.attention with V shaped like K."""
    res = f" -> {kind}<{o}>" if kind == "tensor" else ""
    ret = f"%r : {kind}<{o}>" if kind == "tensor" else ""
    lhs = "%r = " if kind == "tensor" else ""
    return (
        f"func.func @{name}(%q: {kind}<{q}>, %k: {kind}<{k}>, %o: {kind}<{o}>){res} {{\n"
        f"  {lhs}fat.attention ins(%q, %k, %k : {kind}<{q}>, {kind}<{k}>, {kind}<{k}>)"
        f" outs(%o : {kind}<{o}>){(' ' + attrs) if attrs else ''}{res}\n"
        f"  return {ret}\n}}\n"
    )


INPUTS = {
    "d64.mlir": attention("d64", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16"),
    "d256.mlir": attention("d256", "1x2x64x256xbf16", "1x2x64x256xbf16", "1x2x64x256xbf16"),
    "d96.mlir": attention("d96", "1x2x64x96xbf16", "1x2x64x96xbf16", "1x2x64x96xbf16"),
    "d128-dv32.mlir": (
        "func.func @dv32(%q: memref<1x2x64x128xf16>, %v: memref<1x2x64x32xf16>, %o: memref<1x2x64x32xf16>) {\n"
        "  fat.attention ins(%q, %q, %v : memref<1x2x64x128xf16>, memref<1x2x64x128xf16>, memref<1x2x64x32xf16>)"
        " outs(%o : memref<1x2x64x32xf16>)\n  return\n}\n"
    ),
    "f32.mlir": attention("f32", "1x2x64x64xf32", "1x2x64x64xf32", "1x2x64x64xf32"),
    "i8.mlir": attention("i8", "1x2x64x64xi8", "1x2x64x64xi8", "1x2x64x64xi8"),
    "dynamic-heads.mlir": attention("dyn", "1x?x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16"),
    "gqa.mlir": attention("gqa", "1x6x64x64xbf16", "1x4x64x64xbf16", "1x6x64x64xbf16"),
    "window.mlir": attention("window", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16",
                             "window [0, 9223372036854775807]"),
    "scale.mlir": attention("scale", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16",
                            "scale 0x7FC00000"),
    "heads-70000.mlir": attention("heads", "1x70000x64x64xbf16", "1x70000x64x64xbf16",
                                  "1x70000x64x64xbf16"),
    "batch-70000.mlir": attention("batch", "70000x2x64x64xbf16", "70000x2x64x64xbf16",
                                  "70000x2x64x64xbf16"),
    "huge.mlir": attention("huge", "3x2147483648x4611686018427387904x512xbf16",
                           "3x2147483648x4611686018427387904x512xbf16",
                           "3x2147483648x4611686018427387904x512xbf16", kind="tensor"),
    # fat-emit-kernels' input is fat-pipeline's (lowered), but can be written
    # by hand: the module attribute fat.kernels (kernel name -> manifest
    # JSON) and a gpu.binary holding each kernel's PTX.
    **{f"emit-{name}.mlir": (
        f"module attributes {{gpu.container_module, fat.kernels = {kernels}}} {{\n{body}}}\n")
       for name, kernels, body in (
           ("list", "[1, 2]", ""),
           ("number", "{fat_k = 7 : i32}", ""),
           ("text", '{fat_k = "{nope"}', ""),
           ("no-binary", '{fat_k = "{}"}', "  func.func @fat_k() {\n    return\n  }\n"),
           ("elf", '{fat_k = "{}"}',
            '  gpu.binary @fat_k [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "ELF">]\n'),
           ("ok", '{fat_k = "{}"}',
            '  gpu.binary @fat_k [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "x">]\n'))},
    "name-taken.mlir": ("func.func private @fat_attention_fwd_bf16_d64_h2_2_bhsd_m192n128s2q2_ort132c()\n"
                        + attention("d64", "1x2x64x64xbf16", "1x2x64x64xbf16",
                                    "1x2x64x64xbf16")),
    "in-device-code.mlir": (
        "module attributes {gpu.container_module} {\n  gpu.module @device {\n"
        + attention("d64", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16")
        + "  }\n}\n"),
    "window-2e30.mlir": attention("window", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16",
                                  "window [1073741825, 0]"),
    "dv256.mlir": attention("dv256", "1x2x64x256xbf16", "1x2x64x256xbf16", "1x2x64x256xbf16"),
    # Score and mask regions (fat.attention's modifications).
    "score-region.mlir": attention(
        "score", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16",
        "score {\n^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):\n"
        "  fat.yield %s : f32\n}"),
    "score-region-args.mlir": attention(
        "score", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16",
        "score {\n^bb0(%s: f32):\n  fat.yield %s : f32\n}"),
    "mask-region-f32.mlir": attention(
        "mask", "1x2x64x64xbf16", "1x2x64x64xbf16", "1x2x64x64xbf16",
        "mask {\n^bb0(%b: index, %h: index, %i: index, %j: index):\n"
        "  %c = arith.constant 1.0 : f32\n  fat.yield %c : f32\n}"),
    # The pipelined kernel's warpgroup tiles (#fat.wgmma_fragment), by hand.
    "fragment-rows.mlir": (
        "func.func @rows(%s: tensor<32x128xf32, #fat.wgmma_fragment>) {\n  return\n}\n"),
    "fragment-escape.mlir": (
        "gpu.module @k {\n  func.func @escape(%s: tensor<64x16xf32, #fat.wgmma_fragment>,"
        " %i: index) -> tensor<64x16xf32, #fat.wgmma_fragment> {\n"
        "    %m = fat.mask %s at(%i, %i) kv_len(%i) diagonal(%i) causal"
        " : tensor<64x16xf32, #fat.wgmma_fragment>\n"
        "    return %m : tensor<64x16xf32, #fat.wgmma_fragment>\n  }\n}\n"),
    "region-outside-value.mlir": (
        "func.func @outside(%q: memref<1x2x64x64xbf16>, %o: memref<1x2x64x64xbf16>, %x: f32) {\n"
        "  fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>,"
        " memref<1x2x64x64xbf16>) outs(%o : memref<1x2x64x64xbf16>) score {\n"
        "  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):\n"
        "    %y = arith.addf %s, %x : f32\n    fat.yield %y : f32\n  }\n  return\n}\n"),
}

# (what is wrong, input, fa-t-opt arguments)
CASES = [
    ("unknown target", "d64.mlir", ["--fat-to-ptx=sm=sm_80"]),
    ("Hopper without the a features", "d64.mlir", ["--fat-to-ptx=sm=sm_90"]),
    ("newer target", "d64.mlir", ["--fat-to-ptx=sm=sm_100a"]),
    ("empty target", "d64.mlir", ["--fat-to-ptx=sm=''"]),
    ("target that breaks the pass text", "d64.mlir", ["--fat-to-ptx=sm='sm_90a} O=3'"]),
    ("PTX ISA too old for wgmma", "d64.mlir", ["--fat-to-ptx=ptx=79"]),
    ("PTX ISA LLVM 22 does not know", "d64.mlir", ["--fat-to-ptx=ptx=89"]),
    ("PTX ISA not a number", "d64.mlir", ["--fat-to-ptx=ptx=8.0"]),
    ("LLVM optimization level", "d64.mlir", ["--fat-to-ptx=O=4"]),
    ("negative optimization level", "d64.mlir", ["--fat-to-ptx=O=-1"]),
    ("block-m not a warpgroup multiple", "d64.mlir", ["--fat-to-ptx=block-m=96"]),
    ("block-m too large", "d64.mlir", ["--fat-to-ptx=block-m=256"]),
    ("block-m negative", "d64.mlir", ["--fat-to-ptx=block-m=-64"]),
    ("three consumer warpgroups above D = 64", "d256.mlir", ["--fat-to-ptx=block-m=192"]),
    ("block-m not a number", "d64.mlir", ["--fat-to-ptx=block-m=abc"]),
    ("block-n too small", "d64.mlir", ["--fat-to-ptx=block-n=32"]),
    ("block-n too large", "d64.mlir", ["--fat-to-ptx=block-n=208"]),
    ("block-n not a multiple of 16", "d64.mlir", ["--fat-to-ptx=block-n=72"]),
    ("too many stages", "d64.mlir", ["--fat-to-ptx=stages=5"]),
    ("three Q buffers", "d64.mlir", ["--fat-to-ptx=q-buffers=3"]),
    ("two Q buffers without persistent CTAs", "d64.mlir",
     ["--fat-to-ptx=q-buffers=2 persistent=off"]),
    ("negative tuning length", "d64.mlir", ["--fat-to-ptx=seq-len=-1"]),
    ("shared memory over 227 KB", "d256.mlir", ["--fat-to-ptx=block-n=128 stages=4"]),
    ("ping-pong with one consumer warpgroup", "d64.mlir", ["--fat-to-ptx=block-m=64 pingpong=1"]),
    ("unknown row-sum unit", "d64.mlir", ["--fat-to-ptx=rowsum=tensor"]),
    ("unknown rescale policy", "d64.mlir", ["--fat-to-ptx=rescale=never"]),
    ("lazy-rescale threshold out of range", "d64.mlir",
     ["--fat-to-ptx=rescale=lazy rescale-threshold=40"]),
    ("exp2 fraction above 1", "d64.mlir", ["--fat-to-ptx=exp2-poly=1.5"]),
    ("exp2 fraction not a number", "d64.mlir", ["--fat-to-ptx=exp2-poly=half"]),
    ("persistent not a switch", "d64.mlir", ["--fat-to-ptx=persistent=2"]),
    ("no SMs for the persistent grid", "d64.mlir", ["--fat-to-ptx=persistent=on num-sms=0"]),
    ("tile overlap not a switch", "d64.mlir", ["--fat-to-ptx=tile-overlap=sometimes"]),
    ("tile overlap without persistent CTAs", "d64.mlir",
     ["--fat-to-ptx=persistent=off tile-overlap=on"]),
    ("unknown O store", "d64.mlir", ["--fat-to-ptx=o-store=tma"]),
    ("O staged with three consumer warpgroups", "d64.mlir",
     ["--fat-to-ptx=block-m=192 o-store=staged"]),
    ("unknown option", "d64.mlir", ["--fat-to-ptx=bogus=1"]),
    ("output directory that cannot be made", "d64.mlir", ["--fat-to-ptx=output-dir=/proc/fa-t"]),
    ("head dim without a kernel", "d96.mlir", ["--fat-to-ptx"]),
    ("head dims D != Dv, Dv without a kernel", "d128-dv32.mlir", ["--fat-to-ptx"]),
    ("f32 inputs on the GPU path", "f32.mlir", ["--fat-to-ptx"]),
    ("more heads than a grid dimension holds", "heads-70000.mlir", ["--fat-to-ptx"]),
    ("larger batch than a grid dimension holds", "batch-70000.mlir", ["--fat-to-ptx"]),
    ("window past the kernel's i32 positions", "window-2e30.mlir", ["--fat-to-ptx"]),
    ("kernel name already taken by another symbol", "name-taken.mlir", ["--fat-to-ptx"]),
    ("fat.attention in device code (a gpu.module)", "in-device-code.mlir", ["--fat-to-ptx"]),
    ("unknown target (passes alone)", "d64.mlir",
     ["--fat-tile", "--fat-tensorize", "--fat-pipeline=sm=sm_80"]),
    ("PTX ISA (passes alone)", "d64.mlir",
     ["--fat-tile", "--fat-tensorize", "--fat-pipeline=ptx=89"]),
    ("untiled op (fat-pipeline alone)", "d64.mlir", ["--fat-pipeline"]),
    ("untiled op (fat-tensorize alone)", "d64.mlir", ["--fat-tensorize"]),
    ("K/V ring depth", "d64.mlir", ["--fat-tile=stages=5"]),
    ("no kernel built yet (pass alone)", "d64.mlir", ["--convert-fat-to-nvvm"]),
    ("tile rows negative", "d64.mlir", ["--fat-tile=block-m=-1"]),
    ("tile keys too many", "d64.mlir", ["--fat-tile=block-n=1025"]),
    ("CPU tile rows negative", "d64.mlir", ["--fat-to-cpu=block-m=-1"]),
    ("CPU tile keys too many", "d64.mlir", ["--fat-to-cpu=block-n=2000"]),
    ("integer element type", "i8.mlir", ["--fat-to-cpu"]),
    ("dynamic head count", "dynamic-heads.mlir", ["--fat-tile"]),
    ("Hq not a multiple of Hkv", "gqa.mlir", ["--fat-tile"]),
    ("window wider than i32", "window.mlir", ["--fat-tile"]),
    ("NaN scale", "scale.mlir", ["--fat-tile"]),
    ("static sizes past 64-bit offsets", "huge.mlir", ["--fat-to-cpu"]),
    ("kernel list that is not a dictionary", "emit-list.mlir",
     ["--fat-emit-kernels=output-dir=out"]),
    ("kernel manifest that is not a string", "emit-number.mlir",
     ["--fat-emit-kernels=output-dir=out"]),
    ("kernel manifest that is not JSON", "emit-text.mlir", ["--fat-emit-kernels=output-dir=out"]),
    ("kernel without its gpu.binary", "emit-no-binary.mlir",
     ["--fat-emit-kernels=output-dir=out"]),
    ("kernel serialized as a cubin, not PTX", "emit-elf.mlir",
     ["--fat-emit-kernels=output-dir=out"]),
    ("output directory that is a file", "emit-ok.mlir",
     ["--fat-emit-kernels=output-dir=d64.mlir"]),
    ("tensorize: tile rows not a warpgroup multiple", "d64.mlir",
     ["--fat-tile=block-m=32 block-n=64", "--fat-tensorize"]),
    ("tensorize: tile keys not a multiple of 16", "d64.mlir",
     ["--fat-tile=block-m=64 block-n=40", "--fat-tensorize"]),
    ("tensorize: f32 operands", "f32.mlir", ["--fat-tile=block-m=64 block-n=64", "--fat-tensorize"]),
    ("tensorize: ones columns past N = 256", "dv256.mlir",
     ["--fat-tile=block-m=64 block-n=64", "--fat-tensorize=rowsum=mma"]),
    ("score region to the Hopper kernel", "score-region.mlir", ["--fat-to-ptx"]),
    ("score region without its indices", "score-region-args.mlir", ["--fat-tile"]),
    ("mask region yielding a number", "mask-region-f32.mlir", ["--fat-tile"]),
    ("region reading a value from outside", "region-outside-value.mlir", ["--fat-tile"]),
    ("warpgroup tile that is not 64 rows", "fragment-rows.mlir", ["--convert-fat-to-nvvm"]),
    ("warpgroup tile read by an op without a per-thread form", "fragment-escape.mlir",
     ["--convert-fat-to-nvvm"]),
]

CRASH = re.compile(r"LLVM ERROR|Stack dump|PLEASE submit|AddressSanitizer|"
                   r"runtime error:|Assertion .* failed")


def first_message(text):
    """The diagnostic a user sees first: the first error line, else the
    first line."""
    lines = [l for l in text.splitlines() if l.strip()]
    for l in lines:
        if "error:" in l or "for the" in l or "no such option" in l:
            return l.strip()
    return lines[0].strip() if lines else "(no output)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fa-t-opt", default=os.environ.get(
        "FA_T_OPT", str(ROOT / "build" / "bin" / "fa-t-opt")))
    ap.add_argument("--output", default=str(ROOT / "docs" / "validation.md"))
    args = ap.parse_args()

    rows, bad = [], []
    with tempfile.TemporaryDirectory(prefix="fa-t-validation-") as tmp:
        for name, text in INPUTS.items():
            (pathlib.Path(tmp) / name).write_text(text)
        for what, inp, opts in CASES:
            out = subprocess.run([args.fa_t_opt, inp, *opts, "-o", os.devnull],
                                 cwd=tmp, capture_output=True, text=True)
            text = out.stdout + out.stderr
            message = first_message(text)
            if out.returncode == 0 or out.returncode < 0 or CRASH.search(text):
                bad.append(f"{what}: exit {out.returncode}: {message}")
            cmd = " ".join(["fa-t-opt", inp, *(f'"{o}"' if " " in o or "'" in o
                                                else o for o in opts)])
            rows.append((what, cmd, out.returncode, message))

    md = [
        "# Input validation at the compiler boundary",
        "",
        "Each bad input tried at fa-t-opt's boundary — pass and pipeline",
        "options, inputs the Hopper kernel cannot serve, and IR the verifier",
        "refuses — with the exact first message fa-t-opt printed and its exit",
        "code. Generated by running the commands:",
        "`.venv/bin/python scripts/validation_table.py` (fa-t-opt from",
        "`FA_T_OPT` or `build/bin/fa-t-opt`); the inputs are in that script.",
        "The lit tests that pin these messages are",
        "`test/Regression/fat-to-ptx-options.mlir`,",
        "`test/Conversion/FatToNVVM/invalid.mlir`,",
        "`test/Conversion/FatToNVVM/fat-emit-kernels.mlir`,",
        "`test/Dialect/Fat/fat-tensorize-tiled-invalid.mlir` and",
        "`test/Dialect/Fat/invalid.mlir`.",
        "",
        "Pipeline options (`fat-to-ptx{...}`) are checked when the pipeline is",
        "parsed, before any pass runs (`<unknown>:0`: no op to point at); the",
        "kernel's options and the op's shapes are checked at the op by",
        "`fat-pipeline`, which builds the kernel; tile sizes by `fat-tile`; the IR by the",
        "verifier when it is parsed.",
        "",
        "| bad input | command | exit | message |",
        "|---|---|---|---|",
    ]
    for what, cmd, rc, message in rows:
        esc = message.replace("|", "\\|")
        md.append(f"| {what} | `{cmd}` | {rc} | {esc} |")
    pathlib.Path(args.output).write_text("\n".join(md) + "\n")
    print(f"wrote {args.output}: {len(rows)} inputs")
    for b in bad:
        print(f"NOT REFUSED CLEANLY: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
