#!/usr/bin/env bash
# Run 156 (session 32), one device call:
#   pytest  the GPU tier's new score functions that ignore an index (a term of
#           the key alone under a causal mask, one of the row and head),
#           against float64 (.kernels-py);
#   time    run 155's timing of the D128 soft-cap without a mask: tp (the tanh
#           as an odd polynomial on every score), tpn (tp without turns), npp
#           (the default without turns), beside the default and the plain kernel;
#           tp64 (tp at D64) and tp64m (tp64 with 128 rows: two consumer
#           warpgroups at 168 registers) at 4k and 16k;
#   ncu     Nsight Compute on tp and tp64, on the D64 soft-cap's default, then
#           on the block-sparse document kernels
#           (runs form, D128 and D64 at 4k) beside fa-t's dense causal kernel
#           on 512-key sequences (the equal documents' tile).
#   bash bench/device-run156.sh OUT_DIR [pytest] [time] [ncu]   (all by default)
set -u
out=${1:?usage: device-run156.sh OUT_DIR [pytest] [time] [ncu]}
shift
steps=" ${*:-pytest time ncu} "
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python:$PWD/test/Python
export FA_T_RUNTIME_LIB=${FA_T_RUNTIME_LIB:-$PWD/build/lib/libfat_runtime.so}
v=.kernels-mods-v155
case $steps in *" pytest "*) FA_T_KERNEL_DIR=.kernels-py timeout 150 python3 -m pytest -q -m gpu \
  test/Python/test_gpu_mods.py -k "key-term or row-head" 2>&1 | tail -5 | tee "$out/pytest.log" ;; esac
case $steps in *" time "*) timeout 120 python3 bench/band_quick.py time softcap --kernels .kernels-mods \
  --plain .kernels-bench --reps 3 --shapes 0 1 --variant tp=$v/tp tpn=$v/tpn npp=$v/npp \
  2>&1 | grep -E "^(time|     variant)|Error" | tee "$out/time.log"
  timeout 150 python3 bench/band_quick.py time softcap --kernels .kernels-mods \
  --plain .kernels-bench --reps 3 --shapes 2 3 --variant tp64=$v/tp64 tp64m=$v/tp64m \
  2>&1 | grep -E "^(time|     variant)|Error" | tee -a "$out/time.log" ;; esac
case $steps in *" ncu "*)
  timeout 100 bash bench/ncu_profile.sh "$out/tp" --points softcap:128:4096 \
    --mods-kernels $v/tp 2>&1 | tail -4
  timeout 100 bash bench/ncu_profile.sh "$out/tp64" --points softcap:64:4096 \
    --mods-kernels $v/tp64 2>&1 | tail -4
  timeout 180 bash bench/ncu_profile.sh "$out/docs" --points softcap:64:4096,\
document-causal-runs-blocks:128:4096,document-causal-runs-blocks:64:4096,128:1:512,64:1:512 \
    2>&1 | tail -16 ;; esac
