#!/usr/bin/env python3
"""Builds, checks and times fa-t Hopper attention kernels (the GPU tier).

Two steps, because the GPU machine has no LLVM:

  here:  python3 test/GPU/run_kernels.py build --fa-t-opt build-gpu/bin/fa-t-opt --out .kernels
         (writes one fat.attention per kernel config and compiles it with
          `fa-t-opt --fat-to-ptx` into <name>.ptx + <name>.json)
  GPU:   python3 test/GPU/run_kernels.py run --kernels .kernels [--bench]

`run` is self-contained: torch for tensors and the float64 reference, and
the CUDA driver through ctypes (libcuda.so.1) to load the PTX, encode the
tensor maps (cuTensorMapEncodeTiled) and launch as the manifest says
(docs/kernel-abi.md). Outputs are poisoned with NaN before each launch, so a
row the kernel never writes fails the check.
"""
import argparse
import ctypes
import json
import math
import os
import shutil
import subprocess
import sys

# Kernel configs: (key, dtype, D, Hq, Hkv, causal, window, lse, layout[,
# fat-to-ptx tuning options]).
KERNELS = [
    ("bf16_d128", "bf16", 128, 16, 16, False, None, True, "bhsd"),
    ("bf16_d128_causal", "bf16", 128, 16, 16, True, None, True, "bhsd"),
    ("bf16_d128_gqa_causal", "bf16", 128, 16, 4, True, None, True, "bhsd"),
    ("bf16_d128_bshd", "bf16", 128, 8, 2, False, None, False, "bshd"),
    ("bf16_d64", "bf16", 64, 16, 16, False, None, True, "bhsd"),
    ("bf16_d64_causal", "bf16", 64, 16, 16, True, None, True, "bhsd"),
    ("bf16_d64_window", "bf16", 64, 8, 8, False, (100, 30), True, "bhsd"),
    ("bf16_d256", "bf16", 256, 8, 8, False, None, True, "bhsd"),
    ("bf16_d256_causal", "bf16", 256, 8, 8, True, None, True, "bhsd"),
    ("f16_d128", "f16", 128, 16, 16, False, None, True, "bhsd"),
    ("f16_d128_causal", "f16", 128, 16, 16, True, None, True, "bhsd"),
    ("bf16_d128_mqa_m64", "bf16", 128, 8, 1, True, None, True, "bhsd", "block-m=64"),
    ("bf16_d128_n64_s3", "bf16", 128, 16, 16, False, None, True, "bhsd",
     "block-n=64 stages=3"),
    ("bf16_d128_s3", "bf16", 128, 16, 16, False, None, False, "bhsd", "stages=3"),
    ("bf16_d128_causal_s1", "bf16", 128, 16, 16, True, None, True, "bhsd", "stages=1"),
    ("bf16_d128_left_window", "bf16", 128, 4, 4, True, (256, -1), True, "bhsd"),
    ("bf16_d64_right_window", "bf16", 64, 4, 2, False, (-1, 40), True, "bshd"),
    # FlashAttention-T schedule choices: row sums by the tensor cores,
    # lazy rescale, and the plain (non-overlapped) and ping-pong schedules.
    ("bf16_d128_causal_rmma", "bf16", 128, 16, 4, True, None, True, "bhsd", "rowsum=mma"),
    ("f16_d64_window_rmma_lazy", "f16", 64, 8, 2, False, (100, 30), True, "bhsd",
     "rowsum=mma rescale=lazy"),
    ("bf16_d128_lazy", "bf16", 128, 8, 8, False, None, True, "bhsd", "rescale=lazy"),
    ("bf16_d256_causal_lazy", "bf16", 256, 8, 8, True, None, True, "bhsd", "rescale=lazy"),
    ("bf16_d128_causal_plain", "bf16", 128, 16, 16, True, None, True, "bhsd", "overlap=0"),
    ("bf16_d128_pingpong", "bf16", 128, 8, 2, True, None, True, "bhsd", "pingpong=1"),
    # Half of the exponentials on the FMA pipe (the polynomial), with masks
    # (exact zeros for masked scores), rows with no key, and the lazy
    # rescale's P up to 2^τ.
    ("bf16_d64_poly", "bf16", 64, 16, 16, False, None, True, "bhsd", "exp2-poly=0.5"),
    ("f16_d128_causal_poly", "f16", 128, 16, 4, True, None, True, "bhsd",
     "exp2-poly=0.5 rowsum=mma"),
    ("bf16_d256_window_poly_lazy", "bf16", 256, 8, 8, False, (100, 30), True, "bhsd",
     "exp2-poly=0.25 rescale=lazy"),
    # Persistent CTAs (at most 132, looping over the tiles; B a parameter):
    # more tiles than CTAs, tiles without keys, every consumer schedule.
    ("bf16_d128_causal_gqa_persist", "bf16", 128, 16, 4, True, None, True, "bhsd",
     "persistent=on"),
    ("bf16_d64_persist", "bf16", 64, 16, 16, False, None, False, "bhsd", "persistent=on"),
    ("bf16_d128_window_persist_pp", "bf16", 128, 8, 8, False, (100, 30), True, "bshd",
     "persistent=on pingpong=on"),
    ("f16_d256_causal_persist_plain", "f16", 256, 8, 8, True, None, True, "bhsd",
     "persistent=on overlap=off"),
    # Key blocks other than the defaults (80 at D = 256, FlashAttention-3's
    # tile; 128 below): ragged tails that end mid-block, masks crossing block
    # boundaries, 64 at D = 256 (the former default), 80 at D = 128, and
    # wide blocks (160…192 keys, 10…12 k16 steps of P·V).
    ("bf16_d256_n64", "bf16", 256, 8, 8, False, None, True, "bhsd", "block-n=64"),
    ("bf16_d256_causal_n64", "bf16", 256, 8, 2, True, None, True, "bhsd", "block-n=64"),
    ("f16_d128_window_n80", "f16", 128, 8, 8, False, (100, 30), True, "bhsd", "block-n=80"),
    ("bf16_d128_n176", "bf16", 128, 16, 16, False, None, True, "bhsd", "block-n=176"),
    ("f16_d128_causal_gqa_n160", "f16", 128, 8, 2, True, None, True, "bhsd", "block-n=160"),
    ("bf16_d64_n192_rmma", "bf16", 64, 16, 16, False, None, False, "bhsd",
     "block-n=192 rowsum=mma"),
    ("bf16_d64_window_n192_persist", "bf16", 64, 8, 8, False, (100, 30), True, "bshd",
     "block-n=192 persistent=on"),
    # 192 query rows: three consumer warpgroups with 160 registers each
    # (FlashAttention-3's D = 64 tile), one CTA per tile and persistent,
    # query blocks ragged at 192, causal pairs of them.
    ("bf16_d64_m192_rmma", "bf16", 64, 16, 16, False, None, True, "bhsd",
     "block-m=192 rowsum=mma"),
    ("bf16_d64_causal_gqa_m192_persist", "bf16", 64, 16, 4, True, None, True, "bhsd",
     "block-m=192 persistent=on"),
    ("f16_d64_window_m192_persist_rmma", "f16", 64, 8, 8, False, (100, 30), True, "bshd",
     "block-m=192 persistent=on rowsum=mma"),
    # One Q buffer where the default now takes two (tile t's Q waits for
    # tile t − 1's release), and two beside 160-key blocks.
    ("bf16_d128_causal_persist_q1", "bf16", 128, 16, 4, True, None, True, "bhsd",
     "persistent=on q-buffers=1"),
    ("bf16_d128_n160_q2", "bf16", 128, 16, 16, False, None, True, "bhsd",
     "block-n=160 q-buffers=2"),
    # Tile overlap (a tile's last P·V issued with the next tile's first
    # Q·Kᵀ) under the causal mask: D = 64's default tuned for 4k keys (192
    # rows, tensor-core row sums, masks by per-row limits), D = 128 without
    # turns (with the LSE), and 128 rows without a mask.
    ("bf16_d64_causal_gqa_seq4k", "bf16", 64, 16, 4, True, None, False, "bhsd",
     "seq-len=4096"),
    ("bf16_d128_causal_tile_overlap", "bf16", 128, 16, 4, True, None, True, "bhsd",
     "persistent=on pingpong=off tile-overlap=on"),
    ("bf16_d64_tile_overlap_m128", "bf16", 64, 8, 8, False, None, False, "bshd",
     "persistent=on block-m=128 tile-overlap=on"),
    # Ping-pong turns round three warpgroups (named barriers 1–3), with tile
    # overlap, and causal with GQA and the LSE.
    ("bf16_d64_m192_turns_c", "bf16", 64, 16, 16, False, None, False, "bhsd",
     "block-m=192 pingpong=on tile-overlap=on"),
    ("bf16_d64_causal_gqa_m192_turns", "bf16", 64, 16, 4, True, None, True, "bshd",
     "block-m=192 pingpong=on"),
    # The epilogue's two ways to write O: straight from the registers
    # (o-store=direct, the default only where staging does not pay), and
    # staged with one Q buffer at D = 128 (in the last V stage, with
    # ping-pong; a tile without keys stages in Q), BSHD rows and rows with
    # no key; on four SMs, so that each persistent CTA reuses its buffers
    # for many tiles (the sanitizers' small cases then cover the hand-back
    # of a staging area to the producer's TMA), also at D = 256 (in V) and
    # with two Q buffers (in Q).
    ("bf16_d128_causal_direct", "bf16", 128, 16, 4, True, None, True, "bhsd",
     "o-store=direct"),
    ("bf16_d256_direct", "bf16", 256, 8, 8, False, None, True, "bshd",
     "o-store=direct"),
    ("bf16_d128_n160_q1_staged", "bf16", 128, 8, 2, True, None, False, "bshd",
     "block-n=160 q-buffers=1 o-store=staged num-sms=4"),
    ("bf16_d256_causal_few_sms", "bf16", 256, 8, 8, True, None, True, "bhsd", "num-sms=4"),
    ("bf16_d128_few_sms", "bf16", 128, 16, 4, False, None, True, "bhsd",
     "num-sms=4 seq-len=1024"),
]

# Correctness cases: (kernel key, B, Sq, Skv, diag or None = Skv - Sq).
CASES = [
    ("bf16_d128", 2, 1000, 1000, None),
    ("bf16_d128", 1, 17, 17, None),
    ("bf16_d128", 1, 4097, 4097, None),
    ("bf16_d128", 2, 300, 1000, None),
    ("bf16_d128_causal", 2, 1000, 1000, None),
    ("bf16_d128_causal", 1, 17, 17, None),
    ("bf16_d128_causal", 1, 4097, 4097, None),
    ("bf16_d128_causal", 2, 300, 1000, None),   # bottom-right
    ("bf16_d128_causal", 1, 1000, 300, None),   # rows with no key
    ("bf16_d128_causal", 2, 1000, 1000, 0),     # top-left (torch is_causal)
    ("bf16_d128_gqa_causal", 3, 1000, 1000, None),
    ("bf16_d128_bshd", 2, 1000, 777, None),
    ("bf16_d64", 2, 1000, 1000, None),
    ("bf16_d64_causal", 2, 4097, 4097, None),
    ("bf16_d64_window", 2, 1000, 1000, None),
    ("bf16_d256", 2, 1000, 1000, None),
    ("bf16_d256_causal", 1, 4097, 4097, None),
    ("f16_d128", 2, 1000, 1000, None),
    ("f16_d128_causal", 1, 4097, 4097, None),
    ("bf16_d128_mqa_m64", 2, 1000, 1000, None),
    ("bf16_d128_mqa_m64", 1, 1, 513, None),       # one query row
    ("bf16_d128_n64_s3", 2, 1000, 1000, None),
    ("bf16_d128_s3", 1, 4097, 4097, None),
    ("bf16_d128_causal_s1", 2, 1000, 1000, 5),
    ("bf16_d128_left_window", 2, 2000, 2000, None),
    ("bf16_d128_left_window", 1, 700, 1500, 0),
    ("bf16_d64_right_window", 2, 1000, 1000, None),
    ("bf16_d128_causal_rmma", 2, 1000, 1000, None),
    ("bf16_d128_causal_rmma", 1, 1000, 300, None),    # rows with no key
    ("bf16_d128_causal_rmma", 1, 4097, 4097, None),
    ("f16_d64_window_rmma_lazy", 2, 1000, 1000, None),
    ("f16_d64_window_rmma_lazy", 1, 2048, 2048, None, "ramp"),
    ("bf16_d128_lazy", 2, 1000, 1000, None),
    # Keys scaled up along the sequence: row maxima keep growing, so the lazy
    # rescale crosses its threshold on some blocks and not on others.
    ("bf16_d128_lazy", 1, 2048, 4096, None, "ramp"),
    ("bf16_d256_causal_lazy", 1, 4097, 4097, None, "ramp"),
    ("bf16_d128_causal_plain", 2, 1000, 1000, None),
    ("bf16_d128_pingpong", 2, 1000, 1000, None),
    ("bf16_d128_pingpong", 1, 17, 4097, None),
    ("bf16_d64_poly", 2, 1000, 1000, None),
    ("bf16_d64_poly", 1, 17, 4097, None),
    ("f16_d128_causal_poly", 2, 1000, 1000, None),
    ("f16_d128_causal_poly", 1, 1000, 300, None),   # rows with no key
    ("bf16_d256_window_poly_lazy", 1, 2048, 2048, None, "ramp"),
    ("bf16_d256_window_poly_lazy", 2, 1000, 1000, None),
    ("bf16_d128_causal_gqa_persist", 3, 1000, 1000, None),   # 384 tiles
    ("bf16_d128_causal_gqa_persist", 2, 1000, 300, None),    # tiles with no key
    ("bf16_d128_causal_gqa_persist", 1, 17, 4097, None),
    ("bf16_d64_persist", 4, 4097, 4097, None),
    ("bf16_d64_persist", 1, 1, 513, None),
    ("bf16_d128_window_persist_pp", 3, 2000, 2000, None),
    ("f16_d256_causal_persist_plain", 2, 1000, 1000, 0),
    ("f16_d256_causal_persist_plain", 1, 4097, 4097, None),
    ("bf16_d256_n64", 2, 1000, 1000, None),
    ("bf16_d256_n64", 1, 17, 4097, None),
    ("bf16_d256_causal_n64", 2, 1000, 1000, None),
    ("bf16_d256_causal_n64", 1, 1000, 300, None),   # rows with no key
    ("f16_d128_window_n80", 2, 2000, 2000, None),
    ("bf16_d64_m192_rmma", 2, 1000, 1000, None),
    ("bf16_d64_m192_rmma", 1, 17, 4097, None),
    ("bf16_d64_causal_gqa_m192_persist", 3, 1000, 1000, None),
    ("bf16_d64_causal_gqa_m192_persist", 2, 1000, 300, None),   # tiles with no key
    ("bf16_d64_causal_gqa_m192_persist", 1, 4097, 4097, None),
    ("f16_d64_window_m192_persist_rmma", 2, 2000, 2000, None),
    ("f16_d64_window_m192_persist_rmma", 1, 193, 1000, 0),
    ("bf16_d128_causal_persist_q1", 3, 1000, 1000, None),
    ("bf16_d128_causal_persist_q1", 2, 1000, 300, None),    # tiles with no key
    ("bf16_d128_n160_q2", 4, 4097, 4097, None),
    ("bf16_d128_n160_q2", 1, 17, 4097, None),
    ("bf16_d128_n176", 2, 1000, 1000, None),
    ("bf16_d128_n176", 1, 17, 4097, None),
    ("f16_d128_causal_gqa_n160", 2, 1000, 1000, None),
    ("f16_d128_causal_gqa_n160", 1, 1000, 300, None),   # rows with no key
    ("bf16_d64_n192_rmma", 2, 1000, 1000, None),
    ("bf16_d64_n192_rmma", 1, 1, 513, None),
    ("bf16_d64_window_n192_persist", 3, 2000, 2000, None),
    ("bf16_d64_causal_gqa_seq4k", 3, 1000, 1000, None),
    ("bf16_d64_causal_gqa_seq4k", 2, 1000, 300, None),     # tiles with no key
    ("bf16_d64_causal_gqa_seq4k", 1, 4097, 4097, None),
    ("bf16_d64_causal_gqa_seq4k", 2, 300, 1000, None),     # bottom-right
    ("bf16_d64_causal_gqa_seq4k", 2, 1000, 1000, 0),       # top-left
    ("bf16_d128_causal_tile_overlap", 3, 1000, 1000, None),
    ("bf16_d128_causal_tile_overlap", 1, 1000, 300, None),  # rows with no key
    ("bf16_d128_causal_tile_overlap", 1, 17, 4097, None),
    ("bf16_d64_tile_overlap_m128", 3, 1000, 777, None),
    ("bf16_d64_tile_overlap_m128", 1, 17, 4097, None),
    ("bf16_d64_m192_turns_c", 3, 1000, 1000, None),
    ("bf16_d64_m192_turns_c", 1, 17, 4097, None),
    ("bf16_d64_causal_gqa_m192_turns", 2, 1000, 1000, None),
    ("bf16_d64_causal_gqa_m192_turns", 1, 1000, 300, None),    # rows with no key
    ("bf16_d128_causal_direct", 3, 1000, 1000, None),
    ("bf16_d128_causal_direct", 1, 17, 4097, None),
    ("bf16_d256_direct", 2, 1000, 777, None),
    ("bf16_d128_n160_q1_staged", 3, 1000, 1000, None),
    ("bf16_d128_n160_q1_staged", 2, 1000, 300, None),     # rows with no key
    ("bf16_d128_n160_q1_staged", 1, 17, 4097, None),
    ("bf16_d256_causal_few_sms", 2, 1000, 1000, None),
    ("bf16_d128_few_sms", 3, 1000, 777, None),
]

# Timing: (kernel key, B, H, S) against torch SDPA.
BENCH = [
    ("bf16_d128", 4, 16, 4096),
    ("bf16_d128", 1, 16, 16384),
    ("bf16_d128_causal", 4, 16, 4096),
    ("bf16_d128_causal", 1, 16, 16384),
    ("bf16_d128_s3", 4, 16, 4096),
    ("bf16_d128_n64_s3", 4, 16, 4096),
    ("bf16_d64", 4, 16, 4096),
    ("bf16_d256", 4, 8, 4096),
]


def mlir_for(dtype, d, hq, hkv, causal, window, lse, layout):
    """One fat.attention (memref form) with static heads, dynamic B and S."""
    def t(h):
        return (f"memref<?x?x{h}x{d}x{dtype}>" if layout == "bshd"
                else f"memref<?x{h}x?x{d}x{dtype}>")
    q, kv = t(hq), t(hkv)
    lse_t = f"memref<?x{hq}x?xf32>"
    args = f"%q: {q}, %k: {kv}, %v: {kv}, %o: {q}" + (f", %l: {lse_t}" if lse else "")
    attrs = ""
    if lse:
        attrs += f" lse(%l : {lse_t})"
    if causal:
        attrs += " causal"
    if window:
        attrs += f" window [{window[0]}, {window[1]}]"
    if layout == "bshd":
        attrs += " layout(bshd)"
    return (f"func.func @attn({args}) {{\n"
            f"  fat.attention ins(%q, %k, %v : {q}, {kv}, {kv}) outs(%o : {q}){attrs}\n"
            f"  return\n}}\n")


def build(args):
    os.makedirs(args.out, exist_ok=True)
    index = {}
    for key, dtype, d, hq, hkv, causal, window, lse, layout, *tuning in KERNELS:
        src = os.path.join(args.out, key + ".mlir")
        with open(src, "w") as f:
            f.write(mlir_for(dtype, d, hq, hkv, causal, window, lse, layout))
        kdir = os.path.join(args.out, key)
        shutil.rmtree(kdir, ignore_errors=True)  # a kernel of an older build
        opts = " ".join(tuning + [f"output-dir={kdir}"])
        subprocess.run([args.fa_t_opt, src, f"--fat-to-ptx={opts}",
                        "-o", os.devnull], check=True)
        (manifest,) = [f for f in os.listdir(kdir) if f.endswith(".json")]
        index[key] = os.path.join(key, manifest)
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"built {len(index)} kernels into {args.out}")


# ---------------------------------------------------------------- driver --
class Driver:
    """The few CUDA driver calls a launch needs, through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def check(self, err, what):
        if err != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(err, ctypes.byref(name))
            raise RuntimeError(f"{what} failed: {name.value.decode()} ({err})")

    def load(self, ptx, entry, smem):
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        log = ctypes.create_string_buffer(8192)
        # JIT options: error log buffer (5) and its size (6).
        opts = (ctypes.c_int * 2)(5, 6)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), 8192)
        err = self.lib.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0"),
                                          2, opts, vals)
        if err:
            print(log.value.decode(errors="replace"))
        self.check(err, "cuModuleLoadDataEx")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, entry.encode()),
                   "cuModuleGetFunction")
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
        self.check(self.lib.cuFuncSetAttribute(fn, 8, smem), "cuFuncSetAttribute")
        return fn

    def tensor_map(self, dtype, addr, dims, strides, box):
        """A 64-byte aligned 128-byte CUtensorMap; returns (keepalive, pointer)."""
        buf = ctypes.create_string_buffer(128 + 64)
        ptr = (ctypes.addressof(buf) + 63) // 64 * 64
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        rank = len(dims)
        err = self.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(ptr), {"bf16": 9, "f16": 6}[dtype], rank,
            ctypes.c_void_p(addr), (u64 * rank)(*dims), (u64 * (rank - 1))(*strides),
            (u32 * rank)(*box), (u32 * rank)(*([1] * rank)),
            0,  # interleave none
            3,  # swizzle 128B
            3,  # L2 promotion 256B
            0)  # OOB fill zeros
        self.check(err, f"cuTensorMapEncodeTiled(dims={dims}, strides={strides}, box={box})")
        return buf, ptr

    def launch(self, fn, grid, block, smem, params, stream):
        arr = (ctypes.c_void_p * len(params))(*params)
        self.check(self.lib.cuLaunchKernel(fn, *grid, *block, smem, ctypes.c_void_p(stream),
                                           arr, None), "cuLaunchKernel")


class Kernel:
    """A compiled kernel and its manifest; call() launches it on torch tensors."""

    def __init__(self, driver, path):
        self.drv = driver
        with open(path) as f:
            self.m = json.load(f)
        with open(os.path.join(os.path.dirname(path), self.m["ptx"]), "rb") as f:
            ptx = f.read()
        self.fn = driver.load(ptx, self.m["entry"], self.m["dynamic_smem_bytes"])

    def prepare(self, q, k, v, o, lse, diag, scale):
        """Builds the launch of O = attention(q, k, v) (logical BHSD views)."""
        import torch
        cfg = self.m["config"]
        sym = {"B": q.shape[0], "Hq": q.shape[1], "Sq": q.shape[2], "D": q.shape[3],
               "Hkv": k.shape[1], "Skv": k.shape[2], "Dv": v.shape[3],
               "diag": diag, "scale_log2e": scale * math.log2(math.e)}
        tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse}
        if any(p.get("tensor") == "tile_counter" for p in self.m["params"]):
            # The dynamic tile scheduler's counter: zero at the launch, left
            # zero by the kernel (one per Kernel: its launches share a stream).
            if getattr(self, "counter", None) is None:
                self.counter = torch.zeros(1, dtype=torch.int32, device=q.device)
            tensors["tile_counter"] = self.counter
        keep, params = [], []
        maps = {}
        for spec in self.m["tensor_maps"]:
            t = tensors[spec["tensor"]]
            # dims innermost first name the logical dims (d, s, h, b).
            dims = [sym[s] for s in spec["dims"]]
            strides = [t.stride(i) * t.element_size() for i in (2, 1, 0)]
            maps[spec["tensor"]] = self.drv.tensor_map(cfg["dtype"], t.data_ptr(), dims,
                                                       strides, spec["box"])
        for p in self.m["params"]:
            kind = p["kind"]
            if kind == "tensor_map":
                buf, ptr = maps[p["tensor"]]
                keep.append(buf)
                params.append(ptr)
                continue
            if kind == "ptr":
                c = ctypes.c_uint64(tensors[p["tensor"]].data_ptr())
            elif kind == "stride":
                c = ctypes.c_int64(tensors[p["tensor"]].stride(p["dim"]))
            elif kind == "i32":
                c = ctypes.c_int32(sym[p["symbol"]])
            elif kind == "f32":
                c = ctypes.c_float(sym[p["symbol"]])
            else:
                raise ValueError(f"unknown parameter kind {kind}")
            keep.append(c)
            params.append(ctypes.addressof(c))
        grid = []
        for g in self.m["grid"]:
            n = -(-sym[g["symbol"]] // g.get("ceildiv", 1))
            for factor in g.get("times", []):
                n *= sym[factor]
            grid.append(min(n, g.get("max", n)))
        grid += [1] * (3 - len(grid))
        stream = torch.cuda.current_stream().cuda_stream
        return lambda: self.drv.launch(self.fn, grid, self.m["block"],
                                       self.m["dynamic_smem_bytes"], params, stream), keep


def reference(q, k, v, diag, causal, window, scale):
    """float64 attention with fa-t's mask semantics; empty rows give O = 0, LSE = -inf."""
    import torch
    q, k, v = (x.double() for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale
    i = torch.arange(q.shape[2], device=q.device)[:, None]
    j = torch.arange(k.shape[2], device=q.device)[None, :]
    vis = torch.ones_like(s[0, 0], dtype=torch.bool)
    if causal:
        vis &= j <= i + diag
    if window:
        if window[0] >= 0:
            vis &= j >= i + diag - window[0]
        if window[1] >= 0:
            vis &= j <= i + diag + window[1]
    s = s.masked_fill(~vis, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def make_inputs(key, b, sq, skv, dtype, d, hq, hkv, layout):
    import torch
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]

    def rnd(bb, h, s):
        if layout == "bshd":
            return torch.randn(bb, s, h, d, device="cuda", dtype=tdt).permute(0, 2, 1, 3)
        return torch.randn(bb, h, s, d, device="cuda", dtype=tdt)
    q, k, v = rnd(b, hq, sq), rnd(b, hkv, skv), rnd(b, hkv, skv)
    if layout == "bshd":
        o = torch.full((b, sq, hq, d), math.nan, device="cuda", dtype=tdt).permute(0, 2, 1, 3)
    else:
        o = torch.full((b, hq, sq, d), math.nan, device="cuda", dtype=tdt)
    lse = torch.full((b, hq, sq), math.nan, device="cuda", dtype=torch.float32)
    return q, k, v, o, lse


def run(args):
    import torch
    torch.manual_seed(0)
    torch.cuda.init()
    torch.empty(1, device="cuda")  # makes the primary context current
    drv = Driver()
    with open(os.path.join(args.kernels, "index.json")) as f:
        index = json.load(f)
    configs = {k[0]: k for k in KERNELS}
    kernels = {}
    results = {"cases": [], "bench": []}
    failures = 0
    cases = [(k[0], 1, 257, 385, None) for k in KERNELS] if args.small else CASES
    for key, b, sq, skv, diag, *kind in cases:
        _, dtype, d, hq, hkv, causal, window, lse_on, layout = configs[key][:9]
        if key not in kernels:
            kernels[key] = Kernel(drv, os.path.join(args.kernels, index[key]))
        kern = kernels[key]
        diag = skv - sq if diag is None else diag
        scale = 1.0 / math.sqrt(d)
        q, k, v, o, lse = make_inputs(key, b, sq, skv, dtype, d, hq, hkv, layout)
        if kind == ["ramp"]:
            # Scores grow up to 8x along the keys (|q·k| up to ~300).
            ramp = torch.linspace(1, 8, skv, device="cuda")[None, None, :, None]
            k = (k.float() * ramp).to(k.dtype)
        launch, keep = kern.prepare(q, k, v, o, lse, diag, scale)
        launch()
        torch.cuda.synchronize()
        ref_o, ref_lse = reference(q, k, v, diag, causal, window, scale)
        # Per element |dO| <= atol + rtol·|O_ref|: O is rounded to the type
        # once (half an ulp: 2^-8 relative for bf16, 2^-11 for f16) after P
        # was rounded (another few ulps of accumulated error), so peaky rows
        # with |O| ~ 4 may differ by ~2e-2 in bf16 while flat ones stay tight.
        atol, rtol = (2e-2, 2 ** -7) if dtype == "bf16" else (4e-3, 2 ** -10)
        diff = (o.double() - ref_o).abs().nan_to_num(math.inf)
        err_o = diff.max().item()
        ok = bool((diff <= atol + rtol * ref_o.abs()).all())
        err_l = 0.0
        if lse_on:
            finite = torch.isfinite(ref_lse)
            same_inf = torch.equal(torch.isneginf(lse), torch.isneginf(ref_lse))
            err_l = (lse.double() - ref_lse)[finite].abs().nan_to_num(math.inf).max().item() \
                if finite.any() else 0.0
            # rowsum=mma sums P after its rounding to the input type, so
            # l carries that rounding: a few 2^-9 (bf16) relative errors on
            # short rows, ~2^-9 in LSE; the vector row sum stays at f32 level.
            lse_tol = 4e-3 if kern.m.get("schedule", {}).get("rowsum") == "mma" else 1e-3
            ok = ok and same_inf and err_l <= lse_tol and not torch.isnan(lse).any().item()
        failures += not ok
        line = (f"{'PASS' if ok else 'FAIL'} {key:26s} B={b} Sq={sq:5d} Skv={skv:5d} "
                f"diag={diag:5d}{' ramp' if kind else '     '}  max|dO|={err_o:.3e}  "
                f"max|dLSE|={err_l:.3e}")
        print(line, flush=True)
        results["cases"].append({"kernel": key, "B": b, "Sq": sq, "Skv": skv, "diag": diag,
                                 "err_o": err_o, "err_lse": err_l, "ok": ok})
        del keep
    if args.bench:
        bench(drv, kernels, configs, index, args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{failures} failures")
    return 1 if failures else 0


def time_ms(fn, iters=20, warmup=3):
    import torch
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def bench(drv, kernels, configs, index, args, results):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    print(f"\n{'config':34s} {'fa-t':>8s} {'flash':>8s} {'cuDNN':>8s}  TFLOP/s  fa-t/cuDNN")
    for key, b, h, s in BENCH:
        _, dtype, d, hq, hkv, causal, window, lse_on, layout = configs[key][:9]
        if key not in kernels:
            kernels[key] = Kernel(drv, os.path.join(args.kernels, index[key]))
        q, k, v, o, lse = make_inputs(key, b, s, s, dtype, d, h, h, layout)
        label = f"{key} B={b} H={h} S={s}"
        launch, keep = kernels[key].prepare(q, k, v, o, lse, 0, 1.0 / math.sqrt(d))
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        row = {"kernel": key, "B": b, "H": h, "S": s, "D": d, "causal": causal}
        t = {"fa-t": time_ms(launch)}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    t[name] = time_ms(lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal))
            except RuntimeError as e:
                print(f"  {name}: {e}".splitlines()[0])
                t[name] = math.nan
        tf = {n: flops / (ms * 1e-3) / 1e12 for n, ms in t.items()}
        row.update({f"tflops_{n}": x for n, x in tf.items()})
        results["bench"].append(row)
        print(f"{label:34s} {tf['fa-t']:8.1f} {tf['flash']:8.1f} {tf['cudnn']:8.1f}"
              f"          {tf['fa-t'] / tf['cudnn']:.2f}", flush=True)
        del keep


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile the kernels with fa-t-opt (no GPU)")
    b.add_argument("--fa-t-opt", default="build/bin/fa-t-opt")
    b.add_argument("--out", default=".kernels")
    r = sub.add_parser("run", help="check (and time) the kernels on the GPU")
    r.add_argument("--kernels", default=".kernels")
    r.add_argument("--bench", action="store_true")
    r.add_argument("--json", help="write the results here")
    r.add_argument("--small", action="store_true",
                   help="one small ragged case per kernel (B=1, Sq=257, Skv=385), for "
                        "compute-sanitizer runs")
    a = ap.parse_args()
    return build(a) if a.cmd == "build" else run(a)


if __name__ == "__main__":
    sys.exit(main())
