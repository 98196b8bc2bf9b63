#!/usr/bin/env bash
# The variant kernel folders of bench/device-softcap-fold.sh's `sumscale`
# and `alibisum` steps (perf log, run 111): the soft-cap and ALiBi kernels
# with the row sums on the tensor cores and / or the lazy rescale, built
# with this tree's fa-t-opt beside the default folder .kernels-mods
# (only the folders named: bash bench/build-mods-variants.sh [FOLDER...])
# (scripts/build-gpu-kernels.sh builds that one).
#   bash bench/build-mods-variants.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
py=${PYTHON:-.venv/bin/python}
only=" $* "
build() {  # FOLDER "TUNING" MODIFICATIONS...
  local out=$1 tuning=$2; shift 2
  [ "$only" = "  " ] || [[ $only == *" $out "* ]] || return 0
  rm -rf "$out"
  # shellcheck disable=SC2086
  "$py" bench/bench_mods.py build --fa-t-opt "${FA_T_OPT:-build/bin/fa-t-opt}" --out "$out" \
    --tuning $tuning --only "$@"
  echo "$out: $(ls "$out" | grep -c '\.ptx$') kernels"
}
build .kernels-mods-sc-r "rowsum=mma block-n=128" softcap softcap-causal
build .kernels-mods-sc-l "rescale=lazy pv-wait=late" softcap softcap-causal
build .kernels-mods-sc-rl "rowsum=mma block-n=128 rescale=lazy pv-wait=late" softcap softcap-causal
build .kernels-mods-al-r "rowsum=mma" alibi-causal alibi-slopes
build .kernels-mods-al-rl "rowsum=mma rescale=lazy pv-wait=late" alibi-causal alibi-slopes
# Run 112: the soft-cap's softmax reference at its bound (row-max=bound: no
# row maximum, no rescale), with vector sums (b) and with the row sums on
# the tensor cores (rb).
build .kernels-mods-sc-b "row-max=bound" softcap softcap-causal
build .kernels-mods-sc-rb "rowsum=mma block-n=128 row-max=bound" softcap softcap-causal
# Run 113: with the reference at the bound the soft-cap's softmax chain has
# no maximum left; part of its exponentials on the FMA pipe (exp2-poly φ)
# may now pay where MUFU binds (tanh and ex2 per score, D64); and the bound
# form with two consumer warpgroups (128 rows) at D64: more registers per
# thread for the two MUFU operations' latency. One parent folder, so that a
# device call carries them as one path.
v=.kernels-mods-v113
build $v/b "row-max=bound" softcap softcap-causal
build $v/be12 "row-max=bound exp2-poly=0.125" softcap softcap-causal
build $v/be25 "row-max=bound exp2-poly=0.25" softcap softcap-causal
build $v/bm128 "row-max=bound block-m=128" softcap softcap-causal
build $v/bm128p "row-max=bound block-m=128 pingpong=on" softcap softcap-causal
# Run 114: 128 rows at D64 (run 113: +13% on the causal bound form) — with
# the running maximum (om128), with exp2-poly 1/8 (bm128e12); exp2-poly 1/8
# on the running maximum at 192 rows (e12).
build $v/om128 "row-max=online block-m=128" softcap softcap-causal
build $v/bm128e12 "row-max=bound block-m=128 exp2-poly=0.125" softcap softcap-causal
build $v/e12 "exp2-poly=0.125" softcap softcap-causal
# The soft-cap's D128 bound form with 144-key blocks: the ones chunks still
# fit (212 KB of shared memory with one Q buffer; 160 keys do not), 12% more
# keys per block's fixed costs (5.83 -> 6.15 instructions per score).
build $v/rb144 "block-n=144" softcap softcap-causal
# ALiBi (rows at the origin: slope·j per key, no row term) with 160-key
# blocks: since runs 97-99 its D128 kernels no longer spill there (ptxas: 0
# bytes, 168 registers; the 128-key rule for positional regions dates from
# run 86), and the plain causal kernel takes 160 keys at 4k.
build $v/al160 "block-n=160" alibi-causal alibi-slopes
# ALiBi's bias per key as one FADD/FFMA on a per-tile product (branch
# wip/alibi-key-fma, not on main until timed): build these with that
# branch's compiler, FA_T_OPT=<its build>/bin/fa-t-opt.
if [ -n "${FA_T_OPT:-}" ]; then
  build $v/alfma "" alibi-causal alibi-slopes
  build $v/alfma160 "block-n=160" alibi-causal alibi-slopes
fi
# Run 115: ALiBi's bias on the tensor cores (fat-tensorize linear-bias=mma:
# Q·Kᵀ's extra k16 step on bias columns, no per-score work for the bias),
# at the tiles the cost model picks for it (128 keys and rows, as the
# vector form's).
build .kernels-mods-v115/lb "linear-bias=mma" alibi-causal alibi-slopes
# Run 116: linear-bias=auto now takes ALiBi onto the tensor cores with the
# plain kernel's key blocks (160 at D128 causal 4k and 16k); beside it the
# vector form (the previous default, vec: fat-tile predicts auto, so its
# 128-key blocks are asked for) and run 115's tensor-core form at
# 128 keys (lb128).
v=.kernels-mods-v116
build $v/vec "linear-bias=vector block-n=128" alibi-causal alibi-slopes
build $v/lb128 "linear-bias=mma block-n=128" alibi-causal alibi-slopes
# Run 117: a region's reads that move with the key (the relative bias
# table, document ids) with the L1 prefetch of the next key block's lines
# (pf1) and of the one after (pf2), beside the defaults (no prefetch).
build .kernels-mods-v117/pf1 "capture-prefetch=1" relative-bias document-causal \
  document-causal-blocks
build .kernels-mods-v117/pf2 "capture-prefetch=2" relative-bias document-causal \
  document-causal-blocks
# Run 117 too: the relative bias table at D64 with turns (pp) instead of
# the tile overlap. (192 rows, as the plain D64 kernel: ptxas spills 1.7 KB.)
build .kernels-mods-v117/pp "pingpong=on" relative-bias --head-dims 64
# Run 117 too: ALiBi's tensor-core form at D64 with 192 rows (three consumer
# warpgroups; ptxas: 2 spill stores and loads per main-loop iteration).
build .kernels-mods-v117/al192 "block-m=192" alibi-causal alibi-slopes --head-dims 64
# Run 121: the block-sparse kernels without the persistent tile loop (np):
# one CTA per tile, balanced by the hardware's CTA scheduler (run 93: +12%
# for documents at D128 16k, −4% for the sinks' equal-cost tiles). (The
# relative bias table with the plain kernel's 160-key blocks spills 744
# bytes at D128: not timed.)
build .kernels-mods-v121/np "persistent=off" document-causal-blocks \
  document-causal-runs-blocks sliding-sink-blocks prefix-lm-blocks
# Run 123: the documents' persistent kernel (turns, two Q buffers) with more
# CTAs than SMs (num-sms = 2, 4, 8 × 132: each CTA loops over a few tiles and
# the hardware's CTA scheduler balances the CTAs), between run 121's one CTA
# per tile and the default persistent loop (pp132 = that default before).
for g in 132 264 528 1056; do
  build .kernels-mods-v123/pp$g "persistent=on pingpong=on num-sms=$g" \
    document-causal-blocks document-causal-runs-blocks
done
# Run 137: the documents' persistent kernel with the dynamic tile scheduler
# (tile-scheduler=dynamic: units from a counter in global memory, in the
# one-CTA-per-tile grid's order; persistent CTAs and their turns come with
# it), beside run 121's one CTA per tile (the default).
build .kernels-mods-v137/dyn "tile-scheduler=dynamic" document-causal-blocks \
  document-causal-runs-blocks
# Run 137b: the same without turns (the consumer warpgroups' tiles chained
# by the tile overlap instead: a tile's last P·V and O store under the next
# tile's first softmax).
build .kernels-mods-v137/dynnp "tile-scheduler=dynamic pingpong=off" \
  document-causal-blocks document-causal-runs-blocks
# Run 138: on the dynamic scheduler's documents (the default since run 137b),
# 64-key blocks (less of a partial block at each document's edge) and three
# K/V stages at D64 (the producer further ahead into the next tile; D128
# has no room for them beside two Q buffers).
build .kernels-mods-v138/n64 "block-n=64" document-causal-blocks
build .kernels-mods-v138/s3 "stages=3" document-causal-blocks --head-dims 64
# Run 141: the causal modifications with the dynamic tile scheduler (single
# query blocks from the counter, longest first, instead of static pairs):
# run 139 measured it +11…20% over the static pairs on the plain D64 causal
# kernel with 128 rows and turns — the form ALiBi and the causal soft-cap
# take at D64.
build .kernels-mods-v141/dyn "tile-scheduler=dynamic" alibi-causal alibi-slopes softcap-causal
# Run 142: ALiBi at D64 in the vector form with 192 rows (three consumer
# warpgroups, the dynamic scheduler and the tile overlap, as the plain causal
# kernel): since rows at the origin (runs 97-99) it no longer spills in 160
# registers, where the bias columns still do (32 bytes); and the vector form
# with the default 128 rows and turns.
build .kernels-mods-v142/v192 "linear-bias=vector block-m=192" alibi-causal alibi-slopes \
  --head-dims 64
build .kernels-mods-v142/v128 "linear-bias=vector" alibi-causal alibi-slopes --head-dims 64
# Run 144: the documents at D64 with 192 rows (three consumer warpgroups,
# as the plain causal D64 kernel since run 139b), the dynamic scheduler and
# the tile overlap as in the default; the runs form does not spill there.
build .kernels-mods-v144/m192 "block-m=192" document-causal-blocks \
  document-causal-runs-blocks --head-dims 64
# Run 145: ALiBi at D64 in kernels that write the LSE (a training forward):
# no bias columns there (the LSE would miss a constant per row) and the
# region per element (no rows at the origin), so 128 rows by the cost model
# (lse); with 192 rows, the plain causal kernel's tile (lse192; ptxas: no
# spills).
build .kernels-mods-v145/lse "" alibi-causal alibi-slopes --head-dims 64 --lse
build .kernels-mods-v145/lse192 "block-m=192" alibi-causal alibi-slopes --head-dims 64 --lse
# Run 124: the D128 modifications without ping-pong turns (npp; with the
# tile overlap that then applies): where MUFU or the vector work binds, two
# warpgroups whose softmaxes may overlap each other instead of taking turns.
build .kernels-mods-v124/npp "pingpong=off" softcap softcap-causal relative-bias \
  alibi-causal --head-dims 128
build .kernels-mods-v124/npp64 "pingpong=off" alibi-causal softcap-causal --head-dims 64
# Run 126: the D128 soft-cap's bound form with vector row sums (rv: still
# 128 keys, as fat-tile predicts the ones columns), and with them the plain
# kernel's 160-key blocks (rv160), which the ones chunks leave no room for.
build .kernels-mods-v126/rv "rowsum=vector" softcap softcap-causal --head-dims 128
build .kernels-mods-v126/rv160 "rowsum=vector block-n=160" softcap softcap-causal \
  --head-dims 128
# Run 127: the relative bias table's kernels as built (base) and with the key
# loop's wait for S moved below the region's reads (hoist: the PTX edited by
# bench/ptx_hoist_reads.py), to time the idea before the compiler does it.
build .kernels-mods-v127/base "" relative-bias
if [[ $only == "  " || $only == *" .kernels-mods-v127/hoist "* ]]; then
  rm -rf .kernels-mods-v127/hoist
  cp -r .kernels-mods-v127/base .kernels-mods-v127/hoist
  python3 bench/ptx_hoist_reads.py .kernels-mods-v127/hoist/*.ptx
fi
# Run 128: the bias table's kernels of this tree's compiler (the clamped
# version's reads at the real positions) with run 127's PTX edit on top
# (newhoist); the new defaults themselves are scripts/build-gpu-kernels.sh's
# .kernels-mods, copied to .kernels-mods-v128/new for the A/B call.
if [[ $only == "  " || $only == *" .kernels-mods-v128/newhoist "* ]]; then
  build .kernels-mods-v128/newhoist "" relative-bias
  python3 bench/ptx_hoist_reads.py .kernels-mods-v128/newhoist/*.ptx
fi
# Run 129: the bias table's kernels with a score region's reads where the
# lowering writes them (late; the default since this session issues them
# above the wait for S, capture-reads=early, scripts/build-gpu-kernels.sh's
# .kernels-mods, copied to .kernels-mods-v129/early for the A/B call).
build .kernels-mods-v129/late "capture-reads=late" relative-bias
# Run 131: the D128 bias table with the plain kernel's 160-key blocks, now
# that its loads are shared in both versions (ptxas: 64 bytes of spills, one
# store and four loads in the loop; 8.56 instructions per score on the
# shortest path against 8.98 at 128 keys).
build .kernels-mods-v131/n160 "block-n=160" relative-bias --head-dims 128
# Run 133: the bias table's reads issued at the top of the key loop's step
# (before the wait for K, the turn and the GEMMs' issue) beside the then
# default's (above the wait for S) and late. Timed as the experimental value
# capture-reads=first, which became early's meaning after the run (the
# kernels byte-identical), so the folder is built with early.
build .kernels-mods-v133/first "capture-reads=early" relative-bias
build .kernels-mods-v133/late "capture-reads=late" relative-bias
# Run 135: with the reads at the top of the step (run 133), the prefetch
# distance again: none (cp0) and two blocks ahead (cp2) beside the default's
# one.
build .kernels-mods-v135/cp0 "capture-prefetch=0" relative-bias
build .kernels-mods-v135/cp2 "capture-prefetch=2" relative-bias
# Run 136: the bias table as Q·Kᵀ's accumulator (relative-bias=accumulator,
# the terms computed once per block by a warp beside the producer).
build .kernels-mods-v136/acc "relative-bias=accumulator" relative-bias
# and with 192-row tiles (three consumer warpgroups, as the plain D64
# kernel's): without the table's loads in flight its registers fit 128.
build .kernels-mods-v136/acc192 "relative-bias=accumulator block-m=192" relative-bias --head-dims 64
# ALiBi (s − slope·(i − j), relative too) the same way at D64, where its
# default (linear-bias=mma) adds an eighth to the tensor cores' work.
build .kernels-mods-v136/alacc "linear-bias=vector relative-bias=accumulator" alibi-causal \
  alibi-slopes --head-dims 64
# and at D128 (128-key blocks: at 16k the default's 160 leave no room for
# the terms' stages), where linear-bias=mma adds a sixteenth.
build .kernels-mods-v136/alacc128 "linear-bias=vector relative-bias=accumulator block-n=128" \
  alibi-causal alibi-slopes --head-dims 128
# Run 146: ALiBi's bias as weights on P, timed on the plain causal kernels
# before the compiler builds it (bench/ptx_weights_on_p.py: 8 packed weights
# per consumer thread, one mul.rn.bf16x2 per two probabilities, all weights 1
# so the output is the plain kernel's). vec: the defaults of .kernels-bench
# (D64: already the ones columns the weights need; D128: vector row sums, a
# lower bound on the cost); mma / mmaw: D128 with the row sums on the tensor
# cores (what the weights need there), plain and with the weights.
v146() {  # FOLDER: a plain-kernel folder of run 146
  local out=$1
  [ "$only" = "  " ] || [[ $only == *" $out "* ]] || return 0
  rm -rf "$out" && mkdir -p "$out"
  case $out in
    */vec) cp .kernels-bench/fat_attention_fwd_bf16_d{64,128}_*_causal_* "$out"/ ;;
    */mma|*/mmaw)
      "$py" - "$out/configs.json" <<'PY'
import json, sys
base = {"block_m": 128, "block_n": 128, "causal": True, "dtype": "bf16", "head_dim": 128,
        "head_dim_v": 128, "layout": "bhsd", "lse": False, "num_heads_kv": 16,
        "num_heads_q": 16, "o_store": "staged", "pv_wait": "late", "q_buffers": 2,
        "stages": 2, "window": [-1, -1]}
json.dump([{**base, "seq_len": s, "tuning": {"rowsum": "mma", "seq_len": s}}
           for s in (4096, 16384)], open(sys.argv[1], "w"))
PY
      FA_T_OPT=${FA_T_OPT:-build/bin/fa-t-opt} "$py" -m fa_t.aot --out "$out" "$out/configs.json"
      rm "$out/configs.json" ;;
  esac
  [[ $out == */mma ]] || "$py" bench/ptx_weights_on_p.py "$out"/*.ptx
  echo "$out: $(ls "$out" | grep -c '\.ptx$') kernels"
}
for f in .kernels-v146/vec .kernels-v146/mma .kernels-v146/mmaw; do v146 $f; done
