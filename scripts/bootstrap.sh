#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install, build, install the
# Python package into .venv (`pip install .`: the wheel with fa-t-opt and
# libfat_runtime.so, from the same build tree), then compile the example
# attention (examples/attention.mlir). With the GPU backend built in,
# the example is compiled to PTX for sm_90a; on a machine without a GPU the
# example also runs through the CPU reference path and prints its checksum
# and its error against a float64 reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== pip install . (the fa_t wheel) into .venv"
"$root/.venv/bin/python" -m pip install -q "$root"
(cd /tmp && "$root/.venv/bin/python" -c "
import fa_t, fa_t.jit, fa_t.runtime
print('fa_t', fa_t.__version__, 'compiler:', fa_t.jit.find_fat_opt())
print('fa_t runtime:', fa_t.runtime.find_runtime_library())")
opt="$root/build/bin/fa-t-opt"
example="$root/examples/attention.mlir"

echo "== fa-t-opt: the tiled form of the example"
"$opt" "$example" --fat-tile | grep -c "fat\." | xargs echo "fat tile ops in the tiled IR:"

if "$opt" --help | grep -q -- "--fat-to-ptx"; then
  echo "== fa-t-opt: examples/attention.mlir -> PTX (sm_90a)"
  out="$root/build/example-kernels"
  mkdir -p "$out"
  "$opt" "$example" --fat-to-ptx="output-dir=$out" -o /dev/null
  ls -l "$out"
fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "== no GPU: running the example on the CPU reference path"
  FA_T_OPT="$opt" "$root/.venv/bin/python" scripts/run_example.py "$example"
fi
