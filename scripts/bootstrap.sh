#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install, build, then compile the
# example attention (examples/attention.mlir). With the GPU backend built in,
# the example is compiled to PTX for sm_90a; on a machine without a GPU the
# example also runs through the CPU reference path and prints its checksum
# and its error against a float64 reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh
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
