#!/usr/bin/env bash
# Run 157 (session 32), one device call: a mask's conditions joined as one
# predicate (one selp per element, FragmentOpsToNVVM.cpp's selectVisible).
#   check   the changed kernels: test/GPU/run_kernels.py --small on .kernels
#           (one ragged case per ABI kernel, among them the 192-row causal
#           and window kernels that mask by key), the GPU tier's
#           modifications (.kernels-py)
#   time    A/B of the modification kernels that changed, the new build
#           (.kernels-mods) beside the old (.kernels-mods-old), no Flex
#   mods    the GPU tier's modifications only (check without the ABI tier)
#   bash bench/device-run157.sh OUT_DIR [check|mods] [time]   (check time by default)
set -u
# PY_KERNELS: the folder of the GPU tier's modification kernels (default .kernels-py;
# a copy of its h8 kernels keeps the call under the carry limit)
out=${1:?usage: device-run157.sh OUT_DIR [check|mods] [time]}
shift
steps=" ${*:-check time} "
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
case $steps in *" check "*)
  timeout 150 python3 test/GPU/run_kernels.py run --kernels .kernels --small 2>&1 | tail -4 | tee "$out/kernels.log" ;; esac
case $steps in *" check "*|*" mods "*)
  FA_T_KERNEL_DIR=${PY_KERNELS:-.kernels-py} timeout 200 python3 -m pytest -q -m gpu test/Python/test_gpu_mods.py \
    2>&1 | tail -4 | tee "$out/pytest.log" ;; esac
case $steps in *" time "*)
  t() { timeout 120 python3 bench/band_quick.py time "$1" --kernels .kernels-mods --plain .kernels-bench \
    --reps 3 --shapes "${@:2}" --variant old=.kernels-mods-old 2>&1 \
    | grep -E "^(time|     variant)|Error" | tee -a "$out/time.log"; }
  t document-causal-runs-blocks 2 3 0
  t document-causal-blocks 2 0
  t prefix-lm-blocks 2
  t sliding-sink-blocks 2 ;; esac
