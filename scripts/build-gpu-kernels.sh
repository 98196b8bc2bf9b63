#!/usr/bin/env bash
# Compiles every kernel folder the GPU tier (test/GPU/device-run.sh) and the
# ablation (bench/feature_ablation.py) carry to the GPU machine, with this
# build's fa-t-opt. Here, where there is no GPU, it is also how a change that
# must not alter codegen is checked: build the folders before and after it
# into two roots and `diff -r` them (every PTX and manifest byte-identical).
#
#   bash scripts/build-gpu-kernels.sh [ROOT]   # default ROOT: the repository
#
# fills ROOT/.kernels (run_kernels.py's ABI cases), ROOT/.kernels-py (the
# fa_t GPU tests), ROOT/.kernels-bench (the standard grid), ROOT/.kernels-compile
# (torch.compile check), ROOT/.kernels-ablation (one folder per toggle) and
# ROOT/.kernels-mods (bench_mods.py's score and mask modifications).
# `python3 scripts/codegen_gate.py BEFORE_ROOT AFTER_ROOT` then compares two
# such roots (PTX bytes, and the machine code of the PTX that differs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
opt="$root/build/bin/fa-t-opt"
py="$root/.venv/bin/python"
[ -x "$opt" ] || { echo "build-gpu-kernels: no $opt (run scripts/build.sh)" >&2; exit 1; }
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
cd "$root"

rm -rf "$dest"/.kernels "$dest"/.kernels-py "$dest"/.kernels-bench \
       "$dest"/.kernels-compile "$dest"/.kernels-ablation "$dest"/.kernels-mods
"$py" test/GPU/run_kernels.py build --fa-t-opt "$opt" --out "$dest/.kernels"
for pair in py:test/Python/gpu_configs.py:all_configs \
            bench:bench/bench.py:grid_configs \
            compile:test/GPU/check_torch_compile.py:kernel_configs; do
  "$py" -m fa_t.aot --fa-t-opt "$opt" --out "$dest/.kernels-${pair%%:*}" "${pair#*:}"
done
"$py" bench/feature_ablation.py build --fa-t-opt "$opt" --out "$dest/.kernels-ablation"
"$py" bench/bench_mods.py build --fa-t-opt "$opt" --out "$dest/.kernels-mods"
for d in "$dest"/.kernels "$dest"/.kernels-py "$dest"/.kernels-bench "$dest"/.kernels-compile \
         "$dest"/.kernels-mods; do
  echo "$(basename "$d"): $(find "$d" -name '*.ptx' | wc -l) kernels"
done
echo ".kernels-ablation: $(find "$dest/.kernels-ablation" -name '*.ptx' | wc -l) kernels"
