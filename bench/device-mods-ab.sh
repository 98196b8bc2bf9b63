#!/usr/bin/env bash
# One device call of the modification A/Bs (perf log runs 81-83): the
# block-sparse kernels beside the run-81 ones, the soft-cap with FMA-pipe
# exponentials, and the D64 kernels with 128-row CTAs. Each variant folder
# is built here first (bench_mods.py build --out DIR [--tuning ...]
# [--only ...]); a missing folder skips its comparison.
#   bash bench/device-mods-ab.sh OUT_DIR
set -u
out=${1:?usage: device-mods-ab.sh OUT_DIR}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
run() {  # NAME TIMEOUT ARGS...
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 bench/bench_mods.py run --kernels .kernels-mods \
    --plain .kernels-bench --reps 10 --json "$out/$name.json" "$@" \
    > "$out/$name.log" 2>&1
  grep -v Warn "$out/$name.log" | grep -E "^(check|time|     variant)|passed" | tail -40
}
[ -d .kernels-mods-run81 ] && run blocks 260 --shapes 0 2 1 \
  --only document-causal-blocks prefix-lm-blocks sliding-sink-blocks \
  --variant run81=.kernels-mods-run81
[ -d .kernels-mods-e025 ] && run softcap 170 --no-checks --shapes 0 2 1 \
  --only softcap softcap-causal --variant e25=.kernels-mods-e025 e50=.kernels-mods-e05
[ -d .kernels-mods-m128 ] && run d64 160 --shapes 2 \
  --only alibi-causal alibi-slopes relative-bias softcap prefix-lm-blocks document-causal-blocks \
  --variant r82=.kernels-mods-r82 m128=.kernels-mods-m128
exit 0
