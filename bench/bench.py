#!/usr/bin/env python3
"""fa-t against torch SDPA (cuDNN and flash backends) over the standard grid.

The grid of ../shared/PERFORMANCE.md, the one FlashAttention papers use:
B·S = 16384 tokens, Hq·D = 2048, S in {512, 1k, 2k, 4k, 8k, 16k},
D in {64, 128, 256}, causal and not (top-left, Sq = Skv, as torch's
``is_causal``), bf16 (``--dtype f16`` for f16). FLOPs = 4·B·H·S²·D, halved
for causal. Every point is timed side by side in this one process: fa-t's
kernel through libfat_runtime (a launch resolved once, so the number is the
kernel's, not Python's), then SDPA under ``sdpa_kernel(CUDNN_ATTENTION)`` and
``sdpa_kernel(FLASH_ATTENTION)`` on the same tensors. Beside the kernel,
"fa-t call" times ``fa_t.attention(q, k, v, causal=...)`` as users call it,
so the table shows what Python's per-call work costs (the ratio call/kernel:
1 while the host keeps ahead of the GPU). Each time is the
median of ``--reps`` launches timed one by one with CUDA events, after
warm-up, all implementations of a point interleaved round-robin. Each point also reports the relative error of fa-t and of cuDNN
against a float64 reference, on the first batch entry's first two heads.

Two steps, because the GPU machine has no LLVM:

  here:  python -m fa_t.aot --out .kernels-bench bench/bench.py:grid_configs
  GPU:   FA_T_RUNTIME_LIB=build/lib/libfat_runtime.so \\
         python3 bench/bench.py --kernels .kernels-bench --json out.json --png out.png

"""
import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fa_t.config import KernelConfig  # noqa: E402

TOKENS, HIDDEN = 16384, 2048
SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384)
HEAD_DIMS = (64, 128, 256)


def grid(dtype="bf16"):
    """The standard grid: (dtype, D, causal, B, H, S) points."""
    return [(dtype, d, causal, TOKENS // s, HIDDEN // d, s)
            for d in HEAD_DIMS for causal in (False, True) for s in SEQ_LENS]


#: Ablation variants: label -> the whole schedule, forced (--fat-to-ptx
#: options). Letters: o/n overlap on/off, p ping-pong, r rowsum=mma,
#: l8 lazy rescale with τ = 8, e<N> N% of the exponentials on the FMA pipe
#: (exp2-poly), t persistent CTAs (one per SM, looping over the tiles), n<K>
#: K keys per block (block_n), m<M> M query rows per CTA (block_m; 192 =
#: three consumer warpgroups, D = 64 only). The unlabelled "fa-t" column is the default (auto) schedule
#: that fat-tensorize and fat-pipeline choose.
_BASE = {"overlap": "on", "pingpong": "off", "rowsum": "vector", "rescale": "always",
         "exp2-poly": "0", "persistent": "off", "tile-overlap": "off"}
VARIANTS = {
    "n": {**_BASE, "overlap": "off"},
    "o": dict(_BASE),
    "op": {**_BASE, "pingpong": "on"},
    "or": {**_BASE, "rowsum": "mma"},
    "opr": {**_BASE, "pingpong": "on", "rowsum": "mma"},
    "ol8": {**_BASE, "rescale": "lazy"},
    "nrl8": {**_BASE, "overlap": "off", "rowsum": "mma", "rescale": "lazy"},
    "oe12": {**_BASE, "exp2-poly": "0.125"},
    "oe25": {**_BASE, "exp2-poly": "0.25"},
    "oe50": {**_BASE, "exp2-poly": "0.5"},
    "ore25": {**_BASE, "rowsum": "mma", "exp2-poly": "0.25"},
    "on64": {**_BASE, "block_n": 64},
    "on160": {**_BASE, "block_n": 160},
    "on176": {**_BASE, "block_n": 176},
    "on192": {**_BASE, "block_n": 192},
    "orn176": {**_BASE, "rowsum": "mma", "block_n": 176},
    "orn192": {**_BASE, "rowsum": "mma", "block_n": 192},
    "otn176": {**_BASE, "persistent": "on", "block_n": 176},
    "otn192": {**_BASE, "persistent": "on", "block_n": 192},
    "ortn192": {**_BASE, "rowsum": "mma", "persistent": "on", "block_n": 192},
    "opt": {**_BASE, "pingpong": "on", "persistent": "on"},
    "oprt": {**_BASE, "pingpong": "on", "rowsum": "mma", "persistent": "on"},
    "ots3": {**_BASE, "persistent": "on", "stages": 3},
    "orts3": {**_BASE, "rowsum": "mma", "persistent": "on", "stages": 3},
    "ot": {**_BASE, "persistent": "on"},
    "ort": {**_BASE, "rowsum": "mma", "persistent": "on"},
    "orte12": {**_BASE, "rowsum": "mma", "persistent": "on", "exp2-poly": "0.125"},
    "opte12": {**_BASE, "pingpong": "on", "persistent": "on", "exp2-poly": "0.125"},
    "otm192": {**_BASE, "persistent": "on", "block_m": 192},
    "ortm192": {**_BASE, "rowsum": "mma", "persistent": "on", "block_m": 192},
    "ortm192q1": {**_BASE, "rowsum": "mma", "persistent": "on", "block_m": 192, "q_buffers": 1},
    "optq1": {**_BASE, "pingpong": "on", "persistent": "on", "q_buffers": 1},
    "optn160q2": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 160, "q_buffers": 2},
    "optn128q2": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 128, "q_buffers": 2},
    # O through the last V stage (one Q buffer) or straight from registers.
    "optn176v": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 176, "q_buffers": 1,
                 "o-store": "staged"},
    "optn176g": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 176, "q_buffers": 1,
                 "o-store": "direct"},
}

# Tile overlap on the persistent schedules (runs 34-35): the D = 64
# default (192 rows, tensor-core row sums), ping-pong at D <= 128, and the
# plain persistent schedule.
VARIANTS.update({
    "ortm192c": {**_BASE, "rowsum": "mma", "persistent": "on", "block_m": 192,
                 "tile-overlap": "on"},
    "optc": {**_BASE, "pingpong": "on", "persistent": "on", "tile-overlap": "on"},
    "otc": {**_BASE, "persistent": "on", "tile-overlap": "on"},
    "optn128c": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 128,
                 "q_buffers": 2, "tile-overlap": "on"},
    # D = 256: two Q buffers fit beside a one-stage K/V ring only.
    "ots1q2": {**_BASE, "persistent": "on", "stages": 1, "q_buffers": 2},
    "ots1q2c": {**_BASE, "persistent": "on", "stages": 1, "q_buffers": 2,
                "tile-overlap": "on"},
})

# Tile overlap without turns beyond the defaults (run 40): 128 query rows at
# D = 64 (no idle rows in a 512- or 1024-row sequence, which 192-row tiles
# leave: 576 and 1152 rows computed), and D = 128 with 128-key blocks and
# two Q buffers instead of ping-pong, with and without the causal mask.
VARIANTS.update({
    "ortc": {**_BASE, "rowsum": "mma", "persistent": "on", "block_m": 128,
             "tile-overlap": "on"},
    "otn128c": {**_BASE, "persistent": "on", "block_n": 128, "q_buffers": 2,
                "tile-overlap": "on"},
    # D = 64's defaults (192 rows, tile overlap) with a third K/V stage.
    "ortm192s3c": {**_BASE, "rowsum": "mma", "persistent": "on", "block_m": 192,
                   "stages": 3, "tile-overlap": "on"},
    # Narrow key blocks for short sequences (run 44): D = 64's default with
    # 64 keys, D = 256's persistent kernel with 64 (512 keys = 8 full
    # blocks instead of 6 × 80 + a 32-key tail).
    "ortm192n64c": {**_BASE, "rowsum": "mma", "persistent": "on", "block_m": 192,
                    "block_n": 64, "tile-overlap": "on"},
    "otn64": {**_BASE, "persistent": "on", "block_n": 64},
    # Turns round three warpgroups (run 45): D = 64's 192 rows with the
    # GEMM-issue phases taken in turn, with and without tile overlap.
    "oprtm192": {**_BASE, "pingpong": "on", "rowsum": "mma", "persistent": "on",
                 "block_m": 192},
    "oprtm192c": {**_BASE, "pingpong": "on", "rowsum": "mma", "persistent": "on",
                  "block_m": 192, "tile-overlap": "on"},
})

# Widths and depths around the D = 128 defaults (run 29).
VARIANTS.update({
    "optn144": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 144},
    "optn192": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 192},
    "optn176": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 176},
    "opts3": {**_BASE, "pingpong": "on", "persistent": "on", "block_n": 128, "stages": 3},
})

#: Variants built for some head dims only (the others' kernels would not
#: fit, or answer another question).
VARIANT_HEAD_DIMS = {"ortm192q1": (64,), "optq1": (64, 128), "optn160q2": (128,),
                     "optn128q2": (128,), "optn144": (128,), "optn192": (128,),
                     "optn176": (128,), "opts3": (128,), "optn176v": (128,), "optn176g": (128,),
                     # Tile overlap needs two Q buffers: at D = 128 only
                     # with 128-key blocks (no block_n: D = 128's default
                     # is 176 keys from 4k, one buffer), never at D = 256.
                     "optc": (64,), "otc": (64,), "optn128c": (128,),
                     "ortc": (64,), "otn128c": (128,), "ortm192s3c": (64,),
                     "ortm192n64c": (64,), "otn64": (256,),
                     "oprtm192": (64,), "oprtm192c": (64,),
                     "ots1q2": (256,), "ots1q2c": (256,)}


def variant_applies(label, d):
    """Which head dims a variant's kernel exists for: rowsum=mma needs
    Dv + 8 <= 256 (no 'r' variants at D = 256); 64-key blocks are D = 256's
    former default; blocks wider than 128 keys fit shared memory up to
    D = 128, and with the row sums' ones chunks too only at D = 64."""
    if label in VARIANT_HEAD_DIMS:
        return d in VARIANT_HEAD_DIMS[label]
    block_n = VARIANTS[label].get("block_n")
    rowsum_mma = VARIANTS[label].get("rowsum") == "mma"
    if VARIANTS[label].get("block_m", 128) == 192:
        return d == 64  # 160 registers per consumer thread: D = 64 only
    if VARIANTS[label].get("stages", 2) > 2 and (d > 128 or (rowsum_mma and d > 64)):
        return False  # three stages do not fit beside D = 256's Q, or the ones chunks
    if block_n == 64:
        return d > 128
    if block_n and block_n > 128:
        return d <= 128 and not (rowsum_mma and d > 64)
    return not (rowsum_mma and d + 8 > 256)


def point_config(dtype, d, causal):
    h = HIDDEN // d
    return KernelConfig(dtype=dtype, head_dim=d, head_dim_v=d, num_heads_q=h, num_heads_kv=h,
                        causal=causal)


def grid_configs():
    """The kernels the grid needs (bf16 and f16): each config tuned for each
    of the grid's key lengths, ascending, for ``python -m fa_t.aot`` (the
    registry then picks per call the kernel tuned for the shortest length
    at least the call's, fa_t.registry.pick_for_seq_len)."""
    return [(point_config(t, d, c), {"seq_len": s}) for t in ("bf16", "f16")
            for t, d, c, _, _, s in sorted(grid(t), key=lambda p: (p[1], p[2], p[5]))]


def forced_grid_configs(options, head_dims=HEAD_DIMS):
    """The bf16 grid kernels (each tuned length) at ``head_dims`` with the
    fat-to-ptx ``options`` forced: a folder for ``--variants base
    --variant-kernels`` against the defaults."""
    return [(c, {**t, **options}) for c, t in grid_configs()
            if c.dtype == "bf16" and c.head_dim in head_dims]


def early_pv_wait_configs():
    """Run 54's ablation: the P·V wait left to ptxas (``pv-wait=early``)
    against the defaults (late where it pays)."""
    return forced_grid_configs({"pv-wait": "early"})


def dynamic_tile_configs():
    """Run 139: the causal D = 64 and 128 kernels with the dynamic tile
    scheduler (``tile-scheduler=dynamic``: single query blocks taken longest
    first from a counter) against the defaults' static pairs
    (``--only 64,128,causal --variants base``)."""
    return [(c, t) for c, t in forced_grid_configs({"tile-scheduler": "dynamic"}, (64, 128))
            if c.causal]


def causal_d64_m128_configs():
    """Run 139b: the causal D = 64 kernels with 128 query rows and the static
    pairs (the dynamic variant of run 139 took 128 rows where the default
    takes 192 from 4k keys: this separates the two)."""
    return [(c, t) for c, t in forced_grid_configs({"block-m": 128}, (64,)) if c.causal]


def causal_d64_dynamic_m192_configs():
    """Run 139b: the causal D = 64 kernels with 192 query rows and the
    dynamic tile scheduler."""
    return [(c, t) for c, t in forced_grid_configs({"block-m": 192,
                                                     "tile-scheduler": "dynamic"}, (64,))
            if c.causal]


def lazy_rescale_configs():
    """Run 55: the lazy (conditional) rescale at D = 128 and 256, which ptxas
    no longer serializes under the late P·V wait (``--only 128,256``)."""
    return forced_grid_configs({"rescale": "lazy"}, (128, 256))


def late_d64_configs():
    """Run 57: D = 64 with the late P·V wait (also in the tile-overlap
    prologue), which run 54's hand-edited PTX measured with 32 extra moves."""
    return forced_grid_configs({"pv-wait": "late"}, (64,))


def late_lazy_d64_configs():
    """Run 57: D = 64 with the late P·V wait and the lazy rescale."""
    return forced_grid_configs({"pv-wait": "late", "rescale": "lazy"}, (64,))


def late_lazy_configs():
    """Run 58: the late P·V wait and the lazy rescale forced at D = 128 and
    256, including the short-sequence tiles (128 keys at D = 128, 64 at
    D = 256) where the defaults wait early (``--only 128,256``)."""
    return forced_grid_configs({"pv-wait": "late", "rescale": "lazy"}, (128, 256))


def exp2_poly_d64_configs(phi):
    """D = 64's grid kernels with a fraction ``phi`` of the exponentials on
    the FMA pipe (``exp2-poly``), the rest of the schedule the cost
    model's: run 60 re-measures FlashAttention-T's exp2 split on the
    three-warpgroup kernels, whose MUFU stream (66 MUFU.EX2 per warp and
    block, 8 clocks each per sub-partition) is about as long as the tensor
    pipe's work."""
    return forced_grid_configs({"exp2-poly": str(phi)}, (64,))


def poly6_d64_configs():
    """Run 60: φ = 1/16 (kernel names ``…e6…``)."""
    return exp2_poly_d64_configs(0.0625)


def poly12_d64_configs():
    """Run 60: φ = 1/8 (kernel names ``…e13…``)."""
    return exp2_poly_d64_configs(0.125)


def poly19_d64_configs():
    """Run 60: φ = 3/16 (kernel names ``…e19…``)."""
    return exp2_poly_d64_configs(0.1875)


def poly25_d64_configs():
    """Run 60: φ = 1/4 (kernel names ``…e25…``)."""
    return exp2_poly_d64_configs(0.25)


def turns_192_configs():
    """Run 66: D = 64's 192-row kernels with ping-pong turns round the three
    warpgroups and tile overlap (run 45's ``oprtm192c``, +1% at causal
    4k…16k then), re-measured once kernels with turns split their steady
    loop at the mask's first block (runs 62–63): −1…2% without a mask, ±1%
    causal from 4k, so not taken. ``--only 64 --variants base`` against the
    defaults."""
    return forced_grid_configs({"pingpong": "on", "block_m": 192, "tile-overlap": "on"}, (64,))


def grid_point_configs():
    """The grid's configs, one each (no tuning)."""
    return sorted({point_config(t, d, c) for t in ("bf16", "f16")
                   for t, d, c, *_ in grid(t)}, key=str)


def variant_configs():
    """Every grid kernel in every ablation variant (bf16), for ``python -m fa_t.aot``."""
    return [(c, dict(t)) for c in grid_point_configs() if c.dtype == "bf16"
            for label, t in VARIANTS.items() if variant_applies(label, c.head_dim)]


def ablation_configs(labels, head_dims=HEAD_DIMS):
    """``(config, variant options)`` for each bf16 grid config with a head
    dim in ``head_dims`` and each of ``labels`` that applies to it
    (variant_applies): the input of ``python -m fa_t.aot`` for one ablation,
    built into a folder of its own."""
    return [(c, dict(VARIANTS[label])) for c in grid_point_configs()
            if c.dtype == "bf16" and c.head_dim in head_dims
            for label in labels if variant_applies(label, c.head_dim)]


def tile_overlap_configs():
    """The tile-overlap ablation: each schedule with and without it where
    it applies (two Q buffers) — D = 64's 192-row default and ping-pong,
    D = 128's ping-pong with 128-key blocks. Time D = 64 and D = 128 in two
    bench runs (``--only 64 --variants ortm192,ortm192c,opt,optc`` and
    ``--only 128 --variants optn128q2,optn128c``): ``opt`` exists here
    only at D = 64."""
    return (ablation_configs(["ortm192", "ortm192c", "opt", "optc"], (64,))
            + ablation_configs(["optn128q2", "optn128c"], (128,))
            + ablation_configs(["ots1q2", "ots1q2c"], (256,)))


def no_turns_configs():
    """Run 40: tile overlap without ping-pong beyond the defaults — D = 64
    with 128 rows (``--only 64 --variants ortm192c,ortc``) and D = 128 with
    128-key blocks against its ping-pong (``--only 128 --variants
    optn128q2,otn128c``)."""
    return (ablation_configs(["ortm192c", "ortc"], (64,))
            + ablation_configs(["optn128q2", "otn128c"], (128,)))


def depth_192_configs():
    """Run 41: a third K/V stage for D = 64's 192-row default (``--only 64
    --variants ortm192c,ortm192s3c``)."""
    return ablation_configs(["ortm192c", "ortm192s3c"], (64,))


def narrow_block_configs():
    """Run 44: 64-key blocks at short S (``--only 64 --variants
    ortm192c,ortm192n64c`` and ``--only 256 --variants otn64``)."""
    return (ablation_configs(["ortm192c", "ortm192n64c"], (64,))
            + ablation_configs(["otn64"], (256,)))


def staged_width_configs():
    """Run 49: with O staged through Q, D = 128 with two Q buffers beside
    160- or 128-key blocks against the 176-key, one-buffer default (whose
    O stays direct) (``--only 128 --variants optn160q2,optn128q2``)."""
    return ablation_configs(["optn160q2", "optn128q2"], (128,))


def v_staging_configs():
    """Run 51: D = 128's one-Q-buffer kernel (176 keys, ping-pong) with O
    staged in the last V stage or stored from registers (``--only 128
    --variants optn176v,optn176g``)."""
    return ablation_configs(["optn176v", "optn176g"], (128,))


def three_turn_configs():
    """Run 45: ping-pong turns round three warpgroups at D = 64 (``--only 64
    --variants oprtm192,oprtm192c``)."""
    return ablation_configs(["oprtm192", "oprtm192c"], (64,))


def exp2_poly_configs():
    """The exp2-poly ablation (D = 64 and 128)."""
    return ablation_configs(("o", "or", "oe12", "oe25", "oe50", "ore25"), (64, 128))


def block_n_configs():
    """The key-block-width ablation: 64 against the default 80 at D = 256,
    160…192 against 128 at D = 64 and 128 (the same schedules at their
    default width are in ``persistent_configs``)."""
    return ablation_configs(("on64", "on160", "on176", "on192", "orn176", "orn192", "otn176",
                             "otn192", "ortn192"))


def persistent_configs():
    """The persistent-CTA ablation (every D)."""
    return ablation_configs(("o", "ot", "or", "ort"))


def schedule_configs():
    """Ping-pong and three-stage rings with persistent CTAs."""
    return ablation_configs(("opt", "oprt", "ots3", "orts3"))


def block_m_configs():
    """Three consumer warpgroups (192 query rows) against the default two at
    D = 64, and the exp2 polynomial with persistent CTAs."""
    return ablation_configs(("otm192", "ortm192", "orte12", "opte12"), (64,))


def q_buffer_configs():
    """One Q buffer against two (persistent CTAs; the default where they fit)
    at D = 64 and 128, and the narrower key blocks that make room for two at
    D = 128 without a mask."""
    return ablation_configs(("ortm192q1", "optq1", "optn160q2", "optn128q2"))


def width_depth_configs():
    """Key-block widths 144…192 and a third K/V stage with ping-pong and
    persistent CTAs at D = 128, and tensor-core row sums with and without
    ping-pong at D = 64."""
    return (ablation_configs(("optn144", "optn192", "optn176", "opts3"), (128,))
            + ablation_configs(("ort", "oprt"), (64,)))


def find_base(kernel_dirs, config, seq_len):
    """The cost model's kernel of ``config`` for ``seq_len`` keys in the
    first of ``kernel_dirs`` holding one: the default of another compiler
    build, timed beside this build's default (the variant label ``base``).
    A folder with only forced schedules for ``config`` (one option forced
    over the whole grid, e.g. ``lazy_rescale_configs``) gives those. The
    lookup is fa_t's own (registry.find_kernel), so what is timed is what a
    call would run."""
    from fa_t import KernelNotFoundError, registry
    try:
        return registry.find_kernel(config, [Path(d) for d in kernel_dirs], allow_jit=False,
                                    seq_len=seq_len)
    except KernelNotFoundError as e:
        raise LookupError(f"no cost-model kernel of {config} in {kernel_dirs}: {e}") from None


def find_variant(kernel_dirs, config, label):
    """The manifest of ``config`` compiled with variant ``label``'s schedule.

    Matched on the manifest's ``schedule`` object, which states what the
    kernel was built with (its name only spells out non-default choices),
    and on ``block_n`` where the variant names one. ``kernel_dirs`` is a
    list of folders searched in order. A variant without ``block_n`` means
    the compiler's default width; a folder holding the same schedule at
    several widths cannot say which that is, so that is an error (build the
    width ablation into a folder of its own: ``block_n_configs``).
    """
    from fa_t import registry
    want = VARIANTS[label]
    for kernel_dir in kernel_dirs:
        found = []
        for m in registry.scan_kernel_dir(Path(kernel_dir)):
            if m.config != config:
                continue
            with open(m.path) as f:
                got = json.load(f).get("schedule", {})
            if (got.get("overlap") == (want["overlap"] == "on")
                    and got.get("pingpong") == (want["pingpong"] == "on")
                    and got.get("rowsum") == want["rowsum"]
                    and got.get("rescale") == want["rescale"]
                    and got.get("exp2_poly", 0.0) == float(want["exp2-poly"])
                    and got.get("persistent", False) == (want["persistent"] == "on")
                    and got.get("tile_overlap", False) == (want["tile-overlap"] == "on")
                    and ("block_n" not in want
                         or m.tuning.get("block_n") == want["block_n"])
                    and ("block_m" not in want
                         or m.tuning.get("block_m") == want["block_m"])
                    and ("q_buffers" not in want
                         or m.tuning.get("q_buffers", 1) == want["q_buffers"])
                    and ("o-store" not in want
                         or m.tuning.get("o_store", "direct") == want["o-store"])
                    and ("pv-wait" not in want
                         or m.tuning.get("pv_wait", "early") == want["pv-wait"])
                    and m.tuning.get("stages", 2) == want.get("stages", 2)):
                found.append(m)
        for key in ("block_n", "block_m"):
            sizes = sorted({m.tuning.get(key) for m in found})
            if len(sizes) > 1:
                raise LookupError(f"variant {label!r} of {config} is ambiguous in {kernel_dir}: "
                                  f"{key} {sizes}; keep tile-size ablations in their own folder")
        if found:
            return found[0]
    raise LookupError(f"no variant {label!r} of {config} in {kernel_dirs}")


def rel_error(out, q, k, v, causal, heads=2):
    """||O − O_ref|| / ||O_ref|| on batch 0, heads [0, heads), O_ref in float64."""
    import torch
    sl = (slice(0, 1), slice(0, heads))
    ref = torch.nn.functional.scaled_dot_product_attention(
        q[sl].double(), k[sl].double(), v[sl].double(), is_causal=causal)
    return ((out[sl].double() - ref).norm() / ref.norm()).item()


def run_point(point, kernel_dir, reps, variants):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import fa_t
    from fa_t import api, checks
    F = torch.nn.functional
    dtype, d, causal, b, h, s = point
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=tdt) for _ in range(3))
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    problem = checks.check_inputs(q, k, v)
    scale = 1 / math.sqrt(d)
    row = {"dtype": dtype, "D": d, "causal": causal, "B": b, "H": h, "S": s, "tflops": {},
           "rel_err": {}}

    # Every implementation first runs once into a NaN-poisoned buffer for
    # its error; then all are timed round-robin — rep r launches each once,
    # in a fresh random order (rep_orders) — so clock and temperature drift
    # over the point, and each launch's predecessor, are shared by all of
    # them instead of favouring one.
    impls = {}

    def add(name, fn, out):
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        row["rel_err"][name] = rel_error(out, q, k, v, causal)
        impls[name] = fn

    o = torch.empty_like(q)
    add("fa-t", api._plan(q, k, v, o, None, problem, causal=causal, window=(-1, -1), diag=0,
                          scale=scale, kernel_dir=kernel_dir), o)

    def call():
        return fa_t.attention(q, k, v, causal=causal, kernel_dir=kernel_dir)
    row["rel_err"]["fa-t call"] = rel_error(call(), q, k, v, causal)  # plans (first call)
    impls["fa-t call"] = call
    for label, manifest in variants:
        vo = torch.empty_like(q)
        add(label, api._plan(q, k, v, vo, None, problem, causal=causal, window=(-1, -1),
                             diag=0, scale=scale, manifest=manifest), vo)
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                res = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
            row["rel_err"][name] = rel_error(res, q, k, v, causal)
            impls[name] = _sdpa_launcher(F, sdpa_kernel, backend, q, k, v, causal)
        except RuntimeError as e:  # a backend that refuses the shape
            row["tflops"][name] = math.nan
            row["rel_err"][name] = math.nan
            row.setdefault("notes", []).append(f"{name}: {str(e).splitlines()[0]}")
    for name, ms in round_robin_ms(impls, reps).items():
        row["tflops"][name] = flops / (ms * 1e-3) / 1e12
    row["call_over_kernel"] = row["tflops"]["fa-t call"] / row["tflops"]["fa-t"]
    return row


def _sdpa_launcher(F, sdpa_kernel, backend, q, k, v, causal):
    def launch():
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return launch


def rep_orders(names, reps, seed=0):
    """The launch order of each repetition: a fresh permutation of `names`
    (seeded, so a run can be repeated). A rotation of one fixed order would
    keep every implementation behind the same predecessor in every
    repetition (fa-t always after FlashAttention-2, `base` always after
    fa-t), and the predecessor's tail — its dirty output lines in L2, the
    clocks it leaves — is then charged to one slot: byte-identical kernels
    in the fa-t and base slots differed by up to 2.5% (perf log run 37)."""
    import random
    rng = random.Random(seed)
    orders = []
    for _ in range(reps):
        order = list(names)
        rng.shuffle(order)
        orders.append(order)
    return orders


def round_robin_ms(impls, reps, warmup=3):
    """Median ms per implementation, timed round-robin (see run_point)."""
    import torch
    names = list(impls)
    for _ in range(warmup):
        for n in names:
            impls[n]()
    events = {n: [] for n in names}
    torch.cuda.synchronize()
    for order in rep_orders(names, reps):
        for n in order:
            start, end = (torch.cuda.Event(enable_timing=True),
                          torch.cuda.Event(enable_timing=True))
            start.record()
            impls[n]()
            end.record()
            events[n].append((start, end))
    torch.cuda.synchronize()
    return {n: statistics.median(s.elapsed_time(e) for s, e in ev)
            for n, ev in events.items()}


def geomean(xs):
    xs = [x for x in xs if x and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def print_table(rows, names):
    head = f"{'D':>4s} {'causal':>6s} {'S':>6s} " + " ".join(f"{n:>9s}" for n in names)
    print(head + "   call/kernel  fa-t/cuDNN  fa-t/flash   err fa-t   err cuDNN")
    for r in rows:
        t = r["tflops"]
        print(f"{r['D']:4d} {str(r['causal']):>6s} {r['S']:6d} "
              + " ".join(f"{t.get(n, math.nan):9.1f}" for n in names)
              + f"   {r['call_over_kernel']:11.3f}"
              + f"  {t['fa-t'] / t['cudnn']:10.3f}  {t['fa-t'] / t['flash']:10.3f}"
              + f"   {r['rel_err']['fa-t']:.2e}   {r['rel_err'].get('cudnn', math.nan):.2e}")
    for n in names:
        if n in ("cudnn", "flash"):
            continue
        have = [r for r in rows if n in r["tflops"]]
        print(f"{n:>6s} ({len(have)} pts): geomean /cuDNN "
              f"{geomean([r['tflops'][n] / r['tflops']['cudnn'] for r in have]):.3f}"
              f"   /flash {geomean([r['tflops'][n] / r['tflops']['flash'] for r in have]):.3f}"
              f"   /fa-t {geomean([r['tflops'][n] / r['tflops']['fa-t'] for r in have]):.3f}"
              f"   max rel. err {max(r['rel_err'][n] for r in have):.2e}"
              f" (cuDNN {max(r['rel_err']['cudnn'] for r in have):.2e})")


def plot(rows, names, path):
    """TFLOP/s vs S, one panel per (D, mask)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(HEAD_DIMS), figsize=(5 * len(HEAD_DIMS), 8), sharex=True)
    for col, d in enumerate(HEAD_DIMS):
        for line, causal in enumerate((False, True)):
            ax = axes[line][col]
            sel = [r for r in rows if r["D"] == d and r["causal"] == causal]
            for n in names:
                ax.plot([r["S"] for r in sel], [r["tflops"].get(n, math.nan) for r in sel],
                        marker="o", label=n)
            ax.set_xscale("log", base=2)
            ax.set_title(f"D={d}, {'causal' if causal else 'non-causal'}")
            ax.set_xlabel("sequence length")
            ax.set_ylabel("TFLOP/s")
            ax.grid(alpha=0.3)
    axes[0][0].legend()
    fig.suptitle(f"{rows[0]['dtype']} forward, B·S = {TOKENS}, H·D = {HIDDEN}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=os.environ.get("FA_T_KERNEL_DIR", ".kernels-bench"))
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "f16"))
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", help="comma-separated D values or 'causal'/'noncausal' filters")
    ap.add_argument("--seq", help="comma-separated sequence lengths to keep (default: all)")
    ap.add_argument("--variants", help="comma-separated labels of VARIANTS to time too; "
                    "'base' is the cost model's own kernel of each point found in the "
                    "variant folders (another compiler build's defaults, for an A/B)")
    ap.add_argument("--variant-kernels",
                    help="folders of the variants' kernels, searched in order, separated by "
                         f"'{os.pathsep}' (default: --kernels). Keep them apart from the default "
                         "kernels, and key-block widths apart from the other variants")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--png", help="plot TFLOP/s vs S here (needs matplotlib)")
    a = ap.parse_args()
    import torch
    torch.manual_seed(0)
    points = grid(a.dtype)
    if a.only:
        keep = a.only.split(",")
        ds = {int(x) for x in keep if x.isdigit()}
        points = [p for p in points if (not ds or p[1] in ds)
                  and not ("causal" in keep and not p[2]) and not ("noncausal" in keep and p[2])]
    if a.seq:
        keep_s = {int(x) for x in a.seq.split(",")}
        points = [p for p in points if p[5] in keep_s]
    rows = []
    labels = [x for x in (a.variants or "").split(",") if x]
    for p in points:
        dirs = (a.variant_kernels or a.kernels).split(os.pathsep)
        variants = [(label, find_base(dirs, point_config(*p[:3]), p[5]) if label == "base"
                     else find_variant(dirs, point_config(*p[:3]), label))
                    for label in labels if label == "base" or variant_applies(label, p[1])]
        rows.append(run_point(p, a.kernels, a.reps, variants))
        r = rows[-1]
        print(f"D{r['D']} causal={r['causal']} S={r['S']}: "
              + "  ".join(f"{n} {x:.1f}" for n, x in r["tflops"].items()), flush=True)
    names = ["fa-t", "fa-t call", *labels, "cudnn", "flash"]
    print()
    print_table(rows, names)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "reps": a.reps}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if a.png:
        try:
            plot(rows, names, a.png)
        except ImportError:
            print("matplotlib not available: no plot (bench/plot.py draws one from the JSON)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
