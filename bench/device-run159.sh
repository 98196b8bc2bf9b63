#!/usr/bin/env bash
# Run 159 (session 33), one device call: the causal mask joined with a mask
# region of key bounds (fat.mask_mod causal(diag)).
#   mods    the GPU tier's modifications (PY_KERNELS, a copy of .kernels-py's
#           h8 kernels and modifications.json: the carry limit), among them
#           band-causal and the documents' runs form
#   time    the changed kernels, 159 (.kernels-t159) beside run 158's build
#           (.kernels-t158), no Flex; documents by id (unchanged) as a control
#   bash bench/device-run159.sh OUT_DIR [mods] [time]   (both by default)
set -u
out=${1:?usage: device-run159.sh OUT_DIR [mods] [time]}
shift
steps=" ${*:-mods time} "
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
case $steps in *" mods "*)
  FA_T_KERNEL_DIR=${PY_KERNELS:-.kernels-py} timeout 220 python3 -m pytest -q -m gpu test/Python/test_gpu_mods.py \
    2>&1 | tail -4 | tee "$out/pytest.log" ;; esac
case $steps in *" time "*)
  t() { timeout 150 python3 bench/band_quick.py time "$1" --kernels .kernels-t159 --plain .kernels-bench \
    --reps 3 --shapes "${@:2}" --variant r158=.kernels-t158 2>&1 \
    | grep -E "^(time|     variant)|Error" | tee -a "$out/time.log"; }
  t document-causal-runs-blocks 2 0 3 1
  t document-causal-runs 2 0
  t document-causal-blocks 2 ;; esac
