#!/usr/bin/env bash
# bench/ncu_profile.py under Nsight Compute on the GPU machine: one fa-t and one
# cuDNN kernel per point, their tensor-pipe activity and stall reasons; for a
# modification's point (NAME:D:S, bench/bench_mods.py's names and shapes) its
# kernel and fa-t's plain one.
#   bash bench/ncu_profile.sh OUTDIR [--points D:causal:S|NAME:D:S,...] [--kernels DIR]
#     [--mods-kernels DIR]
# Needs build/lib/libfat_runtime.so and the kernel folders (default
# .kernels-bench, and .kernels-mods for modifications) beside the tree, as
# test/GPU/device-run.sh does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: ncu_profile.sh OUTDIR [ncu_profile.py options]}
shift
mkdir -p "$out"
cd "$root"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export FA_T_RUNTIME_LIB="$root/build/lib/libfat_runtime.so"
ncu --query-metrics --chip gh100 2>/dev/null \
  | grep -E -i "gmma|pipe_xu|pipe_fma|issue_stalled" > "$out/ncu-metrics.txt" || true
# A metric this ncu does not know fails the run: fall back to sections.
ncu --clock-control none --profile-from-start off --csv \
  --metrics "$(python3 bench/ncu_profile.py --metrics)" \
  python3 bench/ncu_profile.py "$@" > "$out/ncu.csv" ||
  ncu --clock-control none --profile-from-start off --csv --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section WarpStateStats \
    python3 bench/ncu_profile.py "$@" > "$out/ncu.csv"
python3 bench/ncu_profile.py --report "$out/ncu.csv" "$@" | tee "$out/profile.txt"
