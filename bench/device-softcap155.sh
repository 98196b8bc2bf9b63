#!/usr/bin/env bash
# Run 155 (session 31), one device call: the D128 soft-cap (4k keys, no
# mask) under Nsight Compute — the default kernel (MUFU's tanh and ex2),
# run 153's tp (the tanh as an odd polynomial on the FMA pipe for every
# score, .kernels-mods-v153/tp) and fa-t's plain kernel beside each: pipe
# utilizations and stall reasons (ncu_profile.sh), then the per-instruction
# stall samples (ncu_source.sh) of both soft-cap kernels.
#   bash bench/device-softcap155.sh OUT_DIR
set -u
out=${1:?usage: device-softcap155.sh OUT_DIR}
cd "$(dirname "$0")/.."
p=softcap:128:4096
timeout 150 bash bench/ncu_profile.sh "$out/def" --points $p --mods-kernels .kernels-mods 2>&1 | tail -12
timeout 150 bash bench/ncu_profile.sh "$out/tp" --points $p --mods-kernels .kernels-mods-v153/tp 2>&1 | tail -12
timeout 120 bash bench/ncu_source.sh "$out/src-tp" --points $p --mods-kernels .kernels-mods-v153/tp > "$out/src-tp.log" 2>&1
timeout 120 bash bench/ncu_source.sh "$out/src-def" --points $p > "$out/src-def.log" 2>&1
ls "$out"/src-*
