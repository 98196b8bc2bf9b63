#!/usr/bin/env bash
# Run 136 in one short device call (little device time was left): the bias
# table's accumulator form (.kernels-mods-v136/acc, at D64 also acc192),
# float64 checks, then timed beside the vector form (.kernels-mods) and the
# plain kernel at 4k, without FlexAttention.
#   bash bench/device-band136.sh OUT_DIR
set -u
out=${1:?usage: device-band136.sh OUT_DIR}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
v=.kernels-mods-v136
q() { local limit=$1; shift; timeout -k 5 "$limit" python3 -u bench/band_quick.py "$@" 2>&1 | grep -v Warn; }
q 40 check relative-bias --shapes 0 2 --kernels $v/acc | tee "$out/checks.log"
q 25 check relative-bias --shapes 2 --kernels $v/acc192 | tee -a "$out/checks.log"
q 60 time relative-bias --shapes 0 --kernels .kernels-mods --plain .kernels-bench --reps 4 \
  --variant acc=$v/acc | tee "$out/time.log"
q 60 time relative-bias --shapes 2 --kernels .kernels-mods --plain .kernels-bench --reps 4 \
  --variant acc=$v/acc acc192=$v/acc192 | tee -a "$out/time.log"
q 25 check alibi-causal --shapes 2 --kernels $v/alacc | tee -a "$out/checks.log"
q 50 time alibi-causal --shapes 2 --kernels .kernels-mods --plain .kernels-bench --reps 4 \
  --variant acc=$v/alacc | tee -a "$out/time.log"
q 25 check alibi-causal --shapes 0 --kernels $v/alacc128 | tee -a "$out/checks.log"
q 50 time alibi-causal --shapes 0 --kernels .kernels-mods --plain .kernels-bench --reps 4 \
  --variant acc=$v/alacc128 | tee -a "$out/time.log"
