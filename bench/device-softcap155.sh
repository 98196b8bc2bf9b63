#!/usr/bin/env bash
# Run 155 (session 31), one device call: the D128 soft-cap (4k keys, no
# mask) under Nsight Compute — the default kernel (MUFU's tanh and ex2),
# run 153's tp (the tanh as an odd polynomial on the FMA pipe for every
# score, .kernels-mods-v153/tp) and fa-t's plain kernel beside each: pipe
# utilizations and stall reasons (ncu_profile.sh), then the per-instruction
# stall samples (ncu_source.sh) of tp.
#   bash bench/device-softcap155.sh OUT_DIR [time] [ncu]   (both by default)
set -u
out=${1:?usage: device-softcap155.sh OUT_DIR [time] [ncu]}
shift
steps=" ${*:-time ncu} "
cd "$(dirname "$0")/.."
p=softcap:128:4096
# Timed first (no Flex): tp rebuilt (.kernels-mods-v155/tp, the throwaway
# switch FAT_TANH_POLY_ALWAYS on branch band-after), tp without turns (tpn)
# and the default without turns (npp, run 124's).
v=.kernels-mods-v155
case $steps in *" time "*) PYTHONPATH=$PWD/python:$PWD/test/Python \
  FA_T_RUNTIME_LIB=$PWD/build/lib/libfat_runtime.so timeout 120 python3 bench/band_quick.py time softcap --kernels .kernels-mods \
  --plain .kernels-bench --reps 3 --shapes 0 1 --variant tp=$v/tp tpn=$v/tpn npp=$v/npp \
  2>&1 | grep -E "^(time|     variant)|Error" | tee "$out/time.log" ;; esac
# (the default's profile: run 119)
case $steps in *" ncu "*) timeout 130 bash bench/ncu_profile.sh "$out/tp" --points $p \
  --mods-kernels .kernels-mods-v153/tp 2>&1 | tail -12 ;; esac
# (no source profile: the device budget left)


