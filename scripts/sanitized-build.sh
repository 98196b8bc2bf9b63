#!/usr/bin/env bash
# Configures (once) and builds an instrumented fa-t build directory for
# scripts/fuzz.sh and scripts/sanitize.sh: clang-22 against Debian's LLVM/MLIR
# 22 as scripts/build.sh, at -O1 (sanitizer reports stay readable, and the
# two cores build it sooner than -O3), with one of the root CMakeLists.txt
# sanitizer options on.
#
#   bash scripts/sanitized-build.sh BUILD_DIR FAT_ENABLE_FUZZER|FAT_ENABLE_SANITIZERS [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/sanitized-build.sh BUILD_DIR OPTION [TARGET...]}
option=${2:?usage: scripts/sanitized-build.sh BUILD_DIR OPTION [TARGET...]}
shift 2
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
    -DCMAKE_C_FLAGS_RELEASE=-O1 \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DPython3_EXECUTABLE="$py" -D"$option"=ON
fi
ninja -C "$build" -j2 "$@"
