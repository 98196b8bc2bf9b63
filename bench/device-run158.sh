#!/usr/bin/env bash
# Runs 157 and 158 (session 33), one device call: a mask's conditions as one
# predicate (157, FragmentOpsToNVVM.cpp's selectVisible) and a mask's bounds
# on the key as two limits per row (158, KeyBounds).
#   check   the ABI tier's small cases (.kernels: its 192-row causal and
#           window kernels mask by key) and the GPU tier's modifications
#           (PY_KERNELS, a copy of .kernels-py's h8 kernels: the carry limit)
#   mods    the GPU tier's modifications only
#   time    the changed modification kernels, 158 (.kernels-t158) beside 157
#           (.kernels-t157) and the session's start (.kernels-t156), no Flex
#   bash bench/device-run158.sh OUT_DIR [check|mods] [time]   (check time by default)
set -u
out=${1:?usage: device-run158.sh OUT_DIR [check|mods] [time]}
shift
steps=" ${*:-check time} "
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
case $steps in *" check "*)
  timeout 150 python3 test/GPU/run_kernels.py run --kernels .kernels --small 2>&1 | tail -4 | tee "$out/kernels.log" ;; esac
case $steps in *" check "*|*" mods "*)
  FA_T_KERNEL_DIR=${PY_KERNELS:-.kernels-py} timeout 220 python3 -m pytest -q -m gpu test/Python/test_gpu_mods.py \
    2>&1 | tail -4 | tee "$out/pytest.log" ;; esac
case $steps in *" time "*)
  t() { timeout 150 python3 bench/band_quick.py time "$1" --kernels .kernels-t158 --plain .kernels-bench \
    --reps 3 --shapes "${@:2}" --variant r157=.kernels-t157 old=.kernels-t156 2>&1 \
    | grep -E "^(time|     variant)|Error" | tee -a "$out/time.log"; }
  t document-causal-runs-blocks 2 0 3 1
  t document-causal-runs 2
  t document-causal-blocks 2 0
  t prefix-lm-blocks 2
  t sliding-sink-blocks 2 ;; esac
