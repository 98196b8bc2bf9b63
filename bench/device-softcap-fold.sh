#!/usr/bin/env bash
# One device call for the soft-cap constant fold (perf log run 84): the
# soft-cap kernels with the region's constants moved out
# (.kernels-mods-fold, bench_mods.py build with this tree) beside the old
# ones (.kernels-mods, the commit before), float64 checks included; then
# every modification against FlexAttention with the default kernels; then
# the GPU pytest of the modifications and block masks on .kernels-py.
#   bash bench/device-softcap-fold.sh OUT_DIR [softcap] [fma] [neg] [rule] [exp] [docs] [hole] [tiles] [split] [bound] [origin] [reads] [reads2] [slopes] [docsab] [epilogue] [rings] [sumscale] [alibisum] [bound112] [poly113] [rows114] [alibi114] [softcap114] [bias115] [bias116] [pf117] [pf117s] [rb117] [al117] [rows117] [np121] [g123] [npp124] [rv126] [hoist127] [fix128] [reads129] [n131] [first133] [cp135] [acc136] [dyn137] [dyn137b] [docs138] [causal139] [causal139b] [causal140] [dyn141] [alibi142] [docs144] [alibi145] [weights146] [weights147] [alibi148] [fma149] [finalize150] [host152] [tanh153] [tanh153p] [bars] [pytest] [table]
# (the steps to run; softcap, pytest, table by default; one device call holds ~600 s).
set -u
out=${1:?usage: device-softcap-fold.sh OUT_DIR [softcap] [fma] [neg] [rule] [exp] [docs] [hole] [tiles] [split] [bound] [origin] [reads] [reads2] [slopes] [docsab] [epilogue] [rings] [sumscale] [alibisum] [bound112] [poly113] [rows114] [alibi114] [softcap114] [bias115] [bias116] [pf117] [pf117s] [rb117] [al117] [rows117] [np121] [g123] [npp124] [rv126] [hoist127] [fix128] [reads129] [n131] [first133] [cp135] [acc136] [dyn137] [dyn137b] [docs138] [causal139] [causal139b] [causal140] [dyn141] [alibi142] [docs144] [alibi145] [weights146] [weights147] [alibi148] [fma149] [finalize150] [host152] [tanh153] [tanh153p] [bars] [pytest] [table]}
shift
steps=" ${*:-softcap pytest table} "
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
bench() {  # NAME TIMEOUT ARGS...
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 bench/bench_mods.py run --plain .kernels-bench \
    --json "$out/$name.json" "$@" > "$out/$name.log" 2>&1
  grep -v Warn "$out/$name.log" | grep -E "^(check|time|     variant)|passed" | tail -60
}
bias_ab() {  # NAME TIMEOUT REPS CHECKED_DIR LABEL=DIR...: the bias table's
  # variants beside the defaults at the four shapes, then CHECKED_DIR's
  # kernels' float64 checks (they run as fa-t in the second call).
  local name=$1 limit=$2 reps=$3 checked=$4; shift 4
  bench "$name" "$limit" --kernels .kernels-mods --reps "$reps" --no-checks \
    --only relative-bias --variant "$@"
  bench "$name-checks" 200 --kernels "$checked" --reps 1 --shapes 0 --only relative-bias
}
# Run 111 (prepared 2026-12-04, session 13; no device was lent): the
# modifications' vector work per score with the row sums on the tensor
# cores (r: rowsum=mma; the soft-cap's D128 kernel then needs block-n 128
# for its ones chunks), the lazy rescale (l: rescale=lazy pv-wait=late;
# tanh bounds the soft-capped scores, so it rarely fires) and both (rl),
# beside the defaults (.kernels-mods). Build the variant folders first:
#   bash bench/build-mods-variants.sh
# Run 112 (prepared 2026-12-05, session 14): the soft-cap's softmax
# reference at its bound (row-max=bound: no row maximum, no rescale) with
# vector sums (b) and with the ones columns and 128 keys (rb, float64 checks
# on these), beside the defaults and run 111's rl. Build first:
#   bash bench/build-mods-variants.sh .kernels-mods-sc-b .kernels-mods-sc-rb
case $steps in *" bound112 "*) bench bound112 400 --kernels .kernels-mods-sc-rb --reps 6 \
  --shapes 0 2 1 --only softcap softcap-causal --variant default=.kernels-mods \
  b=.kernels-mods-sc-b rl=.kernels-mods-sc-rl ;; esac
# Run 113 (session 15): the soft-cap's defaults are now run 112's rb / b
# kernels; beside them the bound form with part of the exponentials on the
# FMA pipe (be12, be25) and with 128 rows at D64 (bm128, bm128p: ping-pong
# forced where auto has none). Build first (into .kernels-mods-v113/):
#   bash bench/build-mods-variants.sh .kernels-mods-v113/{b,be12,be25,bm128,bm128p}
v=.kernels-mods-v113
case $steps in *" poly113 "*) bench poly113 420 --kernels .kernels-mods --reps 6 \
  --shapes 0 2 1 --only softcap softcap-causal --variant b=$v/b be12=$v/be12 \
  be25=$v/be25 bm128=$v/bm128 bm128p=$v/bm128p ;; esac
# Run 114 (three steps, rows114 alibi114 softcap114): 128 rows at D64 with the running maximum (om128) and with
# exp2-poly 1/8 (bm128e12), exp2-poly 1/8 on the defaults (e12); bm128 again;
# ALiBi with 160-key blocks at D128 (al160), with its bias per key as one
# FADD on a per-tile product (alfma: branch wip/alibi-key-fma; float64
# checks on it) and both (alfma160); the D128 soft-cap with 144-key blocks
# (rb144).
case $steps in *" rows114 "*) bench rows114 420 --kernels .kernels-mods --reps 6 \
  --shapes 2 3 --only softcap softcap-causal --variant om128=$v/om128 bm128=$v/bm128 \
  bm128e12=$v/bm128e12 e12=$v/e12 b=$v/b
 ;; esac
case $steps in *" alibi114 "*) bench alibi114 300 --kernels $v/alfma --reps 6 --shapes 0 1 2 \
  --only alibi-causal alibi-slopes --variant default=.kernels-mods al160=$v/al160 \
  alfma160=$v/alfma160 ;; esac
case $steps in *" softcap114 "*) bench softcap114 300 --kernels .kernels-mods --reps 6 --shapes 0 1 --no-checks \
  --only softcap softcap-causal --variant rb144=$v/rb144 ;; esac
# Run 115: ALiBi's bias on the tensor cores (linear-bias=mma, float64
# checks on it) beside the vector form (default) and its 160-key blocks.
case $steps in *" bias115 "*) bench bias115 420 --kernels .kernels-mods-v115/lb --reps 6 \
  --shapes 0 1 2 3 --only alibi-causal alibi-slopes --variant default=.kernels-mods \
  al160=$v/al160 ;; esac
# Run 116: linear-bias=auto = mma with the plain kernel's key blocks (the
# defaults, .kernels-mods, float64 checks on them) beside the vector form
# and run 115's 128-key tensor-core form.
case $steps in *" bias116 "*) bench bias116 420 --kernels .kernels-mods --reps 6 \
  --shapes 0 1 2 3 --only alibi-causal alibi-slopes --variant vec=.kernels-mods-v116/vec \
  lb128=.kernels-mods-v116/lb128 ;; esac
# Run 117: the next key block's L1 prefetch of a region's reads that move
# with the key (pf1, float64 checks on it) and two blocks ahead (pf2)
# beside the defaults without it (.kernels-mods).
case $steps in *" pf117 "*) bench pf117 450 --kernels .kernels-mods-v117/pf1 --reps 6 \
  --shapes 0 1 2 3 --only relative-bias document-causal document-causal-blocks \
  --variant default=.kernels-mods pf2=.kernels-mods-v117/pf2 ;; esac
# The same, short (a call with little device time left): the 4k shapes,
# the bias table and the block-sparse documents.
case $steps in *" pf117s "*) bench pf117s 300 --kernels .kernels-mods-v117/pf1 --reps 5 \
  --shapes 0 2 --only relative-bias document-causal-blocks \
  --variant default=.kernels-mods ;; esac
# Run 117 too: the D64 relative bias table with turns (pp) instead of the
# tile overlap.
case $steps in *" rb117 "*) bench rb117 200 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 2 3 --only relative-bias --variant pp=.kernels-mods-v117/pp ;; esac
# Run 117 too: ALiBi at D64 with 192 rows (al192) beside the defaults (128).
case $steps in *" al117 "*) bench al117 200 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 2 3 --only alibi-causal alibi-slopes --variant al192=.kernels-mods-v117/al192 ;; esac
# Run 117 too: the D64 soft-cap with two consumer warpgroups (128 rows; the
# default from 8k keys is 192 rows) with the bound reference (bm128) and the
# running maximum (om128), at 4k and 16k keys: whether run 113's +13% holds
# past 8k.
case $steps in *" rows117 "*) bench rows117 300 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 2 3 --only softcap softcap-causal --variant bm128=$v/bm128 om128=$v/om128 ;; esac
case $steps in *" sumscale "*) bench sumscale 330 --kernels .kernels-mods-sc-rl --reps 6 \
  --shapes 0 2 1 --only softcap softcap-causal --variant default=.kernels-mods \
  r=.kernels-mods-sc-r l=.kernels-mods-sc-l ;; esac
case $steps in *" alibisum "*) bench alibisum 260 --kernels .kernels-mods-al-rl --reps 6 \
  --shapes 0 2 1 --only alibi-causal alibi-slopes --variant default=.kernels-mods \
  r=.kernels-mods-al-r ;; esac
case $steps in *" softcap "*) bench softcap 240 --kernels .kernels-mods-fold --reps 10 --shapes 0 2 1 \
  --only softcap softcap-causal --variant before=.kernels-mods ;; esac
# Run 85: FMA contraction in the regions and float key positions
# (.kernels-mods-fma) beside run 84's kernels and the ones before both.
case $steps in *" fma "*) bench fma 560 --kernels .kernels-mods-fma --reps 8 --shapes 0 2 1 \
  --only softcap alibi-causal alibi-slopes relative-bias \
  --variant fold=.kernels-mods-fold before=.kernels-mods ;; esac
# Run 86: ALiBi's a − b·float(i − j) as a + b·(float(j) − float(i)) (no FNEG
# per element, .kernels-mods-neg) beside run 85's kernels, and block-n 128 at
# D128 for regions that read positions (.kernels-mods-n128: no spills).
case $steps in *" neg "*) bench neg 400 --kernels .kernels-mods-neg --reps 8 --no-checks \
  --shapes 0 2 1 --only alibi-slopes alibi-causal relative-bias softcap \
  --variant fma=.kernels-mods-fma n128=.kernels-mods-n128 ;; esac
# Run 87: block-n 128 for every positional region at D128 (the cost model's
# rule, .kernels-mods-rule) beside 160 / 176 keys (.kernels-mods-neg), for
# the masks the rule also moved.
case $steps in *" rule "*) bench rule 400 --kernels .kernels-mods-rule --reps 8 --no-checks \
  --shapes 0 1 --only prefix-lm sliding-sink document-causal document-causal-blocks \
  prefix-lm-blocks sliding-sink-blocks --variant n160=.kernels-mods-neg ;; esac
# Run 88: the folded soft-cap with a fraction φ of its exponentials on the
# FMA pipe (exp2-poly; tanh keeps MUFU): .kernels-mods-e{0.25,0.5,0.75}.
case $steps in *" exp "*) bench exp 300 --kernels .kernels-mods-rule --reps 8 --no-checks \
  --shapes 0 2 1 --only softcap softcap-causal --variant e25=.kernels-mods-e0.25 \
  e50=.kernels-mods-e0.5 e75=.kernels-mods-e0.75 ;; esac
# Run 90: document masks as per-row run bounds (fa_t.document_mask(runs=True))
# beside the id form, with and without block masks; equal documents as a
# batch of short causal attentions beside them (.kernels-mods-docs).
case $steps in *" docs "*) bench docs 320 --kernels .kernels-mods-docs --reps 8 \
  --shapes 0 2 1 --only document-causal document-causal-runs document-causal-blocks \
  document-causal-runs-blocks ;; esac
# Run 91: the sinks' hole walked around (six-column block masks) beside the
# four-column table that walks it (sliding-sink-blocks4), .kernels-mods-hole.
case $steps in *" hole "*) bench hole 300 --kernels .kernels-mods-hole --reps 8 \
  --shapes 0 2 1 --only sliding-sink sliding-sink-blocks sliding-sink-blocks4 ;; esac
# The block-sparse kernels' tiles — non-persistent (np), 64 query
# rows (m64), 64 keys (n64) — beside the defaults (.kernels-mods-table).
case $steps in *" tiles "*) bench tiles 300 --kernels .kernels-mods-table --reps 8 --no-checks \
  --shapes 0 2 1 --only document-causal-runs-blocks sliding-sink-blocks \
  --variant np=.kernels-mods-np m64=.kernels-mods-m64 n64=.kernels-mods-n64 ;; esac
# Run 93: the steady loop's first copy without the mask region on a
# warpgroup's full key blocks (.kernels-mods-split) beside the kernels
# before (.kernels-mods-table), float64 checks included.
case $steps in *" split "*) bench split 300 --kernels .kernels-mods-split --reps 8 \
  --shapes 0 2 1 --only prefix-lm-blocks document-causal-runs-blocks document-causal-blocks \
  sliding-sink-blocks --variant before=.kernels-mods-table ;; esac
# Run 95: the soft-cap with a fixed softmax reference at its bound (tanh ≤ 1:
# no row max, α = 1; .kernels-mods-bound, an experiment's build) beside the
# online max (.kernels-mods-table), float64 checks included.
case $steps in *" bound "*) bench bound 300 --kernels .kernels-mods-bound --reps 8 \
  --shapes 0 2 1 --only softcap softcap-causal --variant online=.kernels-mods-table ;; esac
# Run 97: ALiBi with every row of a tile at its first (rows_at_origin: no
# per-element FSUB; kernels without LSE, .kernels-mods-origin) beside the
# kernels before (.kernels-mods-table), float64 checks included.
case $steps in *" origin "*) bench origin 300 --kernels .kernels-mods-origin --reps 8 \
  --shapes 0 2 1 --only alibi-causal alibi-slopes --variant before=.kernels-mods-table ;; esac
# Run 99: reads of captured tensors whose index moves with the key (a
# relative bias table, document ids) unclamped where the tile's index range
# lies in the tensor, one address per row and a constant offset per element
# (.kernels-mods-reads) beside the kernels before (.kernels-mods-base),
# float64 checks included.
case $steps in *" reads "*) bench reads 330 --kernels .kernels-mods-reads --reps 8 \
  --shapes 0 2 1 --only relative-bias document-causal document-causal-blocks \
  --variant before=.kernels-mods-base ;; esac
# Run 100: a thread's reads at one address (a row's offset constant too, so
# a bias table's second row reuses the first row's loads;
# .kernels-mods-reads2) beside run 99's (.kernels-mods-reads) and before.
case $steps in *" reads2 "*) bench reads2 330 --kernels .kernels-mods-reads2 --reps 8 \
  --shapes 0 2 1 --only relative-bias document-causal document-causal-blocks \
  --variant reads=.kernels-mods-reads before=.kernels-mods-base ;; esac
# Run 101: captured ALiBi slopes (slopes[h]) loaded once per tile before
# its first Q·Kᵀ (.kernels-mods-slopes, an experiment's build, reverted)
# beside the load after the S wait (.kernels-mods-reads2); run 100's
# document kernels again beside run 99's.
case $steps in *" slopes "*) bench slopes 200 --kernels .kernels-mods-slopes --reps 8 \
  --shapes 0 2 1 --only alibi-slopes --variant before=.kernels-mods-reads2 ;; esac
case $steps in *" docsab "*) bench docsab 200 --kernels .kernels-mods-reads2 --reps 8 --no-checks \
  --shapes 0 2 1 --only document-causal document-causal-blocks \
  --variant reads=.kernels-mods-reads ;; esac
# Runs 104–105: the epilogue as fat.store_output / fat.stage_output (a few
# prologue instructions move; .kernels-mods-epilogue) beside the kernels
# before (.kernels-mods-base2); EPILOGUE_SHAPE 1 = D128 16k (run 104),
# 2 = D64 4k, where the tile-overlap kernels changed most (run 105).
case $steps in *" epilogue "*) bench epilogue 300 --kernels .kernels-mods-epilogue --reps 5 \
  --no-checks --shapes "${EPILOGUE_SHAPE:-2}" --only softcap alibi-causal alibi-slopes relative-bias \
  document-causal-blocks prefix-lm-blocks sliding-sink-blocks --variant before=.kernels-mods-base2 ;; esac
# Run 108: shared memory as rings (!fat.ring; barriers regrouped ring by
# ring, a few instructions move, ptxas spills 4-12 more bytes in the D128
# modification kernels) beside the kernels before (.kernels-mods-base).
case $steps in *" rings "*) bench rings 420 --kernels .kernels-mods --reps 5 \
  --no-checks --shapes 0 1 2 --only softcap alibi-causal alibi-slopes relative-bias \
  document-causal-blocks --variant before=.kernels-mods-base ;; esac
# Run 121: the block-sparse kernels without the persistent tile loop (np,
# bench/build-mods-variants.sh .kernels-mods-v121/np) beside the defaults:
# documents (ids and runs) and the sinks' equal-cost tiles, all four shapes.
case $steps in *" np121 "*) bench np121 520 --kernels .kernels-mods --reps 5 --no-checks \
  --only document-causal-blocks document-causal-runs-blocks sliding-sink-blocks \
  --variant np=.kernels-mods-v121/np ;; esac
# Run 123: the documents' persistent kernel with 1, 2, 4 and 8 × 132 CTAs
# (bench/build-mods-variants.sh .kernels-mods-v123/pp{132,264,528,1056})
# beside the default (one CTA per tile since run 121).
v=.kernels-mods-v123
case $steps in *" g123 "*) bench g123 520 --kernels .kernels-mods --reps 5 --no-checks \
  --only document-causal-blocks document-causal-runs-blocks --variant pp132=$v/pp132 \
  pp264=$v/pp264 pp528=$v/pp528 pp1056=$v/pp1056 ;; esac
# Run 124: the D128 modifications without turns (npp,
# bench/build-mods-variants.sh .kernels-mods-v124/npp) beside the defaults.
case $steps in *" npp124 "*) bench npp124 400 --kernels .kernels-mods --reps 5 --no-checks \
  --shapes 0 1 --only softcap softcap-causal relative-bias alibi-causal \
  --variant npp=.kernels-mods-v124/npp ;; esac
case $steps in *" npp124 "*) bench npp124-64 200 --kernels .kernels-mods --reps 5 --no-checks \
  --shapes 2 3 --only softcap-causal alibi-causal --variant npp=.kernels-mods-v124/npp64 ;; esac
# Run 126: the D128 soft-cap with vector row sums at 128 (rv) and 160 keys
# (rv160; bench/build-mods-variants.sh .kernels-mods-v126/rv .kernels-mods-v126/rv160).
case $steps in *" rv126 "*) bench rv126 300 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 0 1 --only softcap softcap-causal --variant rv=.kernels-mods-v126/rv \
  rv160=.kernels-mods-v126/rv160 ;; esac
# Run 127: the relative bias table with the key loop's wait for S moved below
# the region's reads (bench/ptx_hoist_reads.py on a copy of the default
# kernels: .kernels-mods-v127/base, .kernels-mods-v127/hoist), timed beside
# the defaults at the four shapes; then the moved kernels' float64 checks
# (they run as fa-t in the second call).
v=.kernels-mods-v127
case $steps in *" hoist127 "*) bias_ab hoist127 330 6 $v/hoist hoist=$v/hoist base=$v/base ;; esac
# Run 128: the clamped version's reads at the real positions (one φ per
# distinct element): the new defaults (.kernels-mods-v128/new, from
# scripts/build-gpu-kernels.sh) beside the previous ones (.kernels-mods), and
# with run 127's PTX edit on top (newhoist, bench/build-mods-variants.sh);
# then the new kernels' float64 checks.
v=.kernels-mods-v128
case $steps in *" fix128 "*) bench fix128 300 --kernels .kernels-mods --reps 5 --no-checks \
  --only relative-bias --variant new=$v/new newhoist=$v/newhoist ;; esac
case $steps in *" fix128 "*) bench fix128-docs 300 --kernels .kernels-mods --reps 5 --no-checks \
  --only document-causal-blocks document-causal --variant new=$v/new ;; esac
case $steps in *" fix128 "*) bench fix128-checks 200 --kernels $v/new --reps 1 \
  --shapes 0 --only relative-bias document-causal-blocks document-causal ;; esac
# Run 129: the bias table with its reads above the wait for S in the
# compiler (capture-reads=early, the new default: .kernels-mods-v129/early)
# and where the lowering writes them (late), beside the previous defaults
# (.kernels-mods); then the new kernels' float64 checks.
v=.kernels-mods-v129
case $steps in *" reads129 "*) bias_ab reads129 300 6 $v/early early=$v/early late=$v/late ;; esac
# Run 131: the D128 bias table with 160-key blocks (.kernels-mods-v131/n160,
# bench/build-mods-variants.sh) beside the defaults.
case $steps in *" n131 "*) bench n131 200 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 0 1 --only relative-bias --variant n160=.kernels-mods-v131/n160 ;; esac
# Run 133: the bias table's reads at the top of the key loop's step
# (.kernels-mods-v133/first) and late beside the then default (early: above
# the wait for S); then first's float64 checks.
v=.kernels-mods-v133
case $steps in *" first133 "*) bias_ab first133 300 6 $v/first first=$v/first late=$v/late ;; esac
# Run 135: the bias table's prefetch distance with its reads at the top of
# the step: none (cp0) and two blocks ahead (cp2) beside the default (one).
v=.kernels-mods-v135
case $steps in *" cp135 "*) bench cp135 300 --kernels .kernels-mods --reps 6 --no-checks \
  --only relative-bias --variant cp0=$v/cp0 cp2=$v/cp2 ;; esac
# Run 136: the bias table as Q·Kᵀ's accumulator (.kernels-mods-v136/acc,
# and at D64 acc192 with 192-row tiles) beside the vector form (the defaults
# before it); then acc's float64 checks.
v=.kernels-mods-v136
case $steps in *" acc136 "*) bias_ab acc136 280 6 $v/acc acc=$v/acc ;; esac
case $steps in *" acc136 "*) bench acc136-192 160 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 2 3 --only relative-bias --variant acc=$v/acc acc192=$v/acc192 ;; esac
case $steps in *" acc136 "*) bench acc136-192-checks 120 --kernels $v/acc192 --reps 1 \
  --shapes 2 --only relative-bias ;; esac
# Run 137: the documents with the dynamic tile scheduler (dyn,
# bench/build-mods-variants.sh .kernels-mods-v137/dyn): float64 checks of
# its kernels (every launch after the first on the stream finds the counter
# the one before left at zero), the timing beside the defaults and Flex,
# and the checks once more after the timing's launches.
v=.kernels-mods-v137
case $steps in *" dyn137 "*) bench dyn137-checks 150 --kernels $v/dyn --reps 1 \
  --only document-causal-blocks document-causal-runs-blocks ;; esac
case $steps in *" dyn137 "*) bench dyn137 330 --kernels .kernels-mods --reps 5 --no-checks \
  --only document-causal-blocks document-causal-runs-blocks --variant dyn=$v/dyn ;; esac
case $steps in *" dyn137 "*) bench dyn137-checks-after 100 --kernels $v/dyn --reps 1 \
  --shapes 0 2 --only document-causal-blocks ;; esac
# Run 137b: without turns (dynnp) beside dyn and the defaults.
case $steps in *" dyn137b "*) bench dyn137b-checks 120 --kernels $v/dynnp --reps 1 \
  --only document-causal-blocks ;; esac
case $steps in *" dyn137b "*) bench dyn137b 400 --kernels .kernels-mods --reps 5 --no-checks \
  --only document-causal-blocks document-causal-runs-blocks --variant dyn=$v/dyn \
  dynnp=$v/dynnp ;; esac
# Run 138: the documents' defaults (the dynamic scheduler) beside 64-key
# blocks and three stages (bench/build-mods-variants.sh .kernels-mods-v138/n64
# .kernels-mods-v138/s3), checks of both first.
v=.kernels-mods-v138
case $steps in *" docs138 "*) bench docs138-checks 150 --kernels $v/n64 --reps 1 \
  --shapes 0 2 --only document-causal-blocks; bench docs138-checks-s3 150 --kernels $v/s3 \
  --reps 1 --shapes 2 --only document-causal-blocks ;; esac
case $steps in *" docs138 "*) bench docs138 250 --kernels .kernels-mods --reps 5 --no-checks \
  --only document-causal-blocks --variant n64=$v/n64 ;; esac
case $steps in *" docs138 "*) bench docs138-s3 150 --kernels .kernels-mods --reps 5 --no-checks \
  --shapes 2 3 --only document-causal-blocks --variant s3=$v/s3 ;; esac
# Run 139: the plain causal grid at D64 / D128 with the dynamic tile
# scheduler (.kernels-v139: python -m fa_t.aot --out .kernels-v139
# bench/bench.py:dynamic_tile_configs) against the defaults' static pairs.
case $steps in *" causal139 "*) timeout 300 python3 bench/bench.py --kernels .kernels-bench \
  --only 64,128,causal --variants base --variant-kernels .kernels-v139 --reps 20 \
  --json "$out/causal139.json" > "$out/causal139.log" 2>&1; tail -30 "$out/causal139.log" ;; esac
# Run 139b: D64 causal with 128 rows and static pairs (.kernels-v139m128),
# and with 192 rows and the dynamic scheduler (.kernels-v139d192).
for k in v139m128 v139d192; do
  case $steps in *" causal139b "*) timeout 150 python3 bench/bench.py --kernels .kernels-bench \
    --only 64,causal --variants base --variant-kernels .kernels-$k --reps 20 \
    --json "$out/causal139b-$k.json" > "$out/causal139b-$k.log" 2>&1
    tail -9 "$out/causal139b-$k.log" ;; esac
done
# Run 140: D64 causal at 1k and 2k keys, 192 rows with the dynamic scheduler
# (.kernels-v139d192) against the default's 128 rows with turns, 30 reps.
case $steps in *" causal140 "*) timeout 120 python3 bench/bench.py --kernels .kernels-bench \
  --only 64,causal --seq 1024,2048 --variants base --variant-kernels .kernels-v139d192 --reps 30 \
  --json "$out/causal140.json" > "$out/causal140.log" 2>&1; tail -6 "$out/causal140.log" ;; esac
# Run 141: causal ALiBi and the causal soft-cap with the dynamic tile
# scheduler (.kernels-mods-v141/dyn): float64 checks at the 4k shapes, then
# beside the defaults and Flex at all four shapes.
v=.kernels-mods-v141
case $steps in *" dyn141 "*) bench dyn141-checks 120 --kernels $v/dyn --reps 1 \
  --shapes 0 2 --only alibi-causal softcap-causal ;; esac
case $steps in *" dyn141 "*) bench dyn141 360 --kernels .kernels-mods --reps 5 --no-checks \
  --only alibi-causal softcap-causal --variant dyn=$v/dyn ;; esac
# Run 142: ALiBi at D64, the vector form with 192 rows (v192) and with the
# default 128 rows (v128), beside the defaults (the bias columns, 128 rows).
v=.kernels-mods-v142
case $steps in *" alibi142 "*) bench alibi142-checks 100 --kernels $v/v192 --reps 1 \
  --shapes 2 --only alibi-causal alibi-slopes ;; esac
case $steps in *" alibi142 "*) bench alibi142 300 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 2 3 --only alibi-causal alibi-slopes --variant v192=$v/v192 v128=$v/v128 ;; esac
# Run 144: the D64 documents with 192 rows (m192) beside the defaults (128).
v=.kernels-mods-v144
case $steps in *" docs144 "*) bench docs144-checks 100 --kernels $v/m192 --reps 1 \
  --shapes 2 --only document-causal-blocks document-causal-runs-blocks ;; esac
case $steps in *" docs144 "*) bench docs144 240 --kernels .kernels-mods --reps 6 --no-checks \
  --shapes 2 3 --only document-causal-blocks document-causal-runs-blocks --variant m192=$v/m192 ;; esac
# Run 145: ALiBi at D64 with the LSE, 192 rows (m192) beside the default (128).
v=.kernels-mods-v145
case $steps in *" alibi145 "*) bench alibi145-checks 120 --kernels $v/lse192 --reps 1 --lse \
  --shapes 2 --only alibi-causal alibi-slopes ;; esac
case $steps in *" alibi145 "*) bench alibi145 300 --kernels $v/lse --reps 6 --no-checks --lse \
  --shapes 2 3 --only alibi-causal alibi-slopes --variant m192=$v/lse192 ;; esac
# Run 146: the weights on P's cost on the plain causal kernels (.kernels-v146,
# bench/build-mods-variants.sh): each folder's kernel ("base") beside the
# defaults at D64 / D128, 4k and 16k; output equal to the plain kernel's.
for k in vec mma mmaw; do
  dims=64,128; [ $k = vec ] || dims=128  # mma and mmaw hold D128 kernels only
  case $steps in *" weights146 "*) timeout 150 python3 bench/bench.py --kernels .kernels-bench \
    --only $dims,causal --seq 4096,16384 --variants base --variant-kernels .kernels-v146/$k \
    --reps 15 --json "$out/weights146-$k.json" > "$out/weights146-$k.log" 2>&1
    tail -8 "$out/weights146-$k.log" ;; esac
done
# Run 147: ALiBi with the weights on P, the compiler's kernels (branch
# weights-on-p: bench_mods.py build --tuning linear-bias=weights block-n=128
# --only alibi-causal alibi-slopes into .kernels-mods-v147/w): float64
# checks at the 4k shapes, then beside the defaults and Flex at all four.
v=.kernels-mods-v147
case $steps in *" weights147 "*) bench weights147-checks 150 --kernels $v/w --reps 1 \
  --shapes 0 2 --only alibi-causal alibi-slopes ;; esac
case $steps in *" weights147 "*) bench weights147 330 --kernels .kernels-mods --reps 5 --no-checks \
  --only alibi-causal alibi-slopes --variant w=$v/w ;; esac
# Run 148: ALiBi's defaults with the weights on P (auto's form at D64/D128
# causal from 4k keys): float64 checks and the bars at all four shapes.
case $steps in *" alibi148 "*) bench alibi148 300 --kernels .kernels-mods --reps 5 \
  --only alibi-causal alibi-slopes ;; esac
# Run 149: the weights' per-block arithmetic as FFMAs (branch weights-fma:
# bench_mods.py build --only alibi-causal alibi-slopes into
# .kernels-mods-v149/f): float64 checks at the 4k shapes, then beside the
# defaults at all four.
v=.kernels-mods-v149
case $steps in *" fma149 "*) bench fma149-checks 120 --kernels $v/f --reps 1 \
  --shapes 0 2 --only alibi-causal alibi-slopes ;; esac
case $steps in *" fma149 "*) bench fma149 300 --kernels .kernels-mods --reps 7 --no-checks \
  --only alibi-causal alibi-slopes --variant f=$v/f ;; esac
# Run 150: fat.finalize's l != 0 (every kernel's epilogue): the new plain
# kernels (.kernels-v150/bench) beside the previous ones at 4k keys.
case $steps in *" finalize150 "*) timeout 200 python3 bench/bench.py --kernels .kernels-v150/bench \
  --only 64,128 --seq 4096 --variants base --variant-kernels .kernels-bench \
  --reps 10 --json "$out/finalize150.json" > "$out/finalize150.log" 2>&1
  tail -8 "$out/finalize150.log" ;; esac
# Run 152: host time per call with a score function (bench/host_overhead_mods.py;
# .kernels-host-mods from its kernel_entries).
case $steps in *" host152 "*) timeout 300 python3 bench/host_overhead_mods.py \
  --kernels .kernels-host-mods --json "$out/host152.json" > "$out/host152.log" 2>&1
  tail -12 "$out/host152.log" ;; esac
# Run 153: the soft-cap's tanh as an odd polynomial on the FMA pipe (branch
# tanh-poly: bench_mods.py build --tuning tanh=poly --only softcap
# softcap-causal into .kernels-mods-v153/tp; exact to 4e-6 for |s| <= 0.75 A
# only: a bound on the gain): float64 checks at the 4k shapes, then beside
# the defaults at all four.
v=.kernels-mods-v153
# tg: the compiler's form (branch tanh-poly, --tuning tanh-poly=on): the
# polynomial where a warp's |s| <= A, MUFU elsewhere; float64 checks on it.
# softcap-saturated (a cap of 1: every warp's block has some |s| > A) times
# the MUFU version with the vote in front of it.
case $steps in *" tanh153 "*) bench tanh153 240 --kernels .kernels-mods --reps 2 --no-checks \
  --only softcap softcap-causal softcap-saturated --variant tg=$v/tg ;; esac
case $steps in *" tanh153 "*) bench tanh153-checks 90 --kernels $v/tg --reps 1 \
  --shapes 2 0 --only softcap softcap-causal softcap-saturated ;; esac
case $steps in *" tanh153p "*) bench tanh153p 150 --kernels .kernels-mods --reps 3 --no-checks \
  --shapes 0 2 --only softcap softcap-causal --variant tp=$v/tp tg=$v/tg ;; esac
# The issue's bars on the defaults (.kernels-mods of scripts/build-gpu-kernels.sh):
# the soft-cap, ALiBi, the bias table and block-sparse documents at all four
# shapes, float64 checks included (run 118).
case $steps in *" bars "*) bench bars 470 --kernels .kernels-mods --reps 3 \
  --only softcap softcap-causal alibi-causal relative-bias document-causal-blocks ;; esac
case $steps in *" pytest "*) FA_T_KERNEL_DIR=$PWD/.kernels-py:$PWD/.kernels-bench timeout 220 python3 -m pytest \
  -q -m gpu -p no:cacheprovider test/Python/test_gpu_mods.py \
  test/Python/test_block_mask.py > "$out/pytest.log" 2>&1
tail -5 "$out/pytest.log" ;; esac
# The modifications table (README, bench/plot_mods.py): each modification in
# its fast form, with the defaults of this tree's compiler (.kernels-mods-table,
# or TABLE_KERNELS).
case $steps in *" table "*) bench table 480 --kernels "${TABLE_KERNELS:-.kernels-mods-table}" --reps 5 \
  --shapes 0 2 1 --only softcap alibi-causal alibi-slopes relative-bias \
  document-causal-blocks document-causal-runs-blocks prefix-lm-blocks sliding-sink-blocks ;; esac
exit 0
