#!/usr/bin/env bash
# Run 154 (session 31), one device call without FlexAttention: the bias
# table at D64 as Q·Kᵀ's accumulator loaded between the GEMM's issue and its
# wait and added after it (ra: a throwaway switch, FAT_BAND_AFTER, on branch
# band-after), beside the accumulator form (acc, acc192) and the default
# vector form; float64 checks of ra; ALiBi D128 with 144-key blocks (w144).
#   bash bench/device-band154.sh OUT_DIR
set -u
out=${1:?usage: device-band154.sh OUT_DIR}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
v=.kernels-mods-v154
q() { timeout "$1" python3 bench/band_quick.py "${@:2}" 2>&1 | grep -E "^(check|time|     variant)|Error" ; }
FA_T_KERNEL_DIR=$v/ra q 90 check relative-bias --shapes 2 | tee "$out/check.log"
q 200 time relative-bias --kernels .kernels-mods --plain .kernels-bench --reps 4 \
  --shapes 2 3 --variant ra=$v/ra acc=$v/acc acc192=$v/acc192 | tee "$out/band.log"
q 150 time alibi-causal --kernels .kernels-mods --plain .kernels-bench --reps 4 \
  --shapes 0 1 --variant w144=$v/w144 | tee "$out/alibi.log"
