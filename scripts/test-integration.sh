#!/usr/bin/env bash
# fa-t embedded in other MLIR-based projects, end to end, from an installed
# build: installs build/ into a temporary prefix, builds the consumer project
# test/Integration/consumer against it (find_package(FaT)), runs its C++ and
# C programs, the installed fa-t-opt, and Debian's stock mlir-opt with the
# installed plugin. One JUnit testcase per check.
#
#   scripts/test-integration.sh REPORT.xml     (FAT_BUILD_DIR: default build/)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report=${1:?usage: $0 REPORT.xml}
build=${FAT_BUILD_DIR:-$root/build}
llvm_bin=/usr/lib/llvm-22/bin
source_dir=$root/test/Integration/consumer
input=$source_dir/attention.mlir

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
consumer=$work/consumer
plugin=$prefix/lib/FatPlugin.so

suite=integration
. "$root/scripts/junit-checks.sh"

check install "FaTConfig.cmake" "FatPlugin.so" "libFatCAPI.so" "libfat_runtime.so" -- \
  cmake --install "$build" --prefix "$prefix"
check configure-consumer "Using FaTConfig.cmake in: $prefix/lib/cmake/FaT" -- \
  cmake -G Ninja -S "$source_dir" -B "$consumer" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_PREFIX_PATH="$prefix"
check build-consumer -- cmake --build "$consumer"
# The consumer shares the one libMLIR.so with everything else, no static MLIR.
check consumer-links-libMLIR "libMLIR.so" -- readelf -d "$consumer/fat-consumer"
check consumer-cpp-fat-tile "scf.forall" "fat.qk" "fat.row_max" "fat.pv" "fat.finalize" -- \
  "$consumer/fat-consumer" "$input" "fat-tile{block-m=64 block-n=64}"
check consumer-c-fat-to-ptx "kernel fat_attention_fwd_bf16_d128_h8_2_bhsd_causal" \
  ".target sm_90a" "wgmma.mma_async.sync.aligned" -- \
  "$consumer/fat-consumer-c" "$input" "sm=sm_90a block-m=128"
abi=$(sed -n 's/^#define FAT_RUNTIME_ABI_VERSION \([0-9]*\)$/\1/p' "$root/include/fa-t/Runtime/Runtime.h")
check consumer-c-runtime "abi $abi (header $abi)" "init failed:" "libcuda-absent.so.1" \
  "initialized 0" -- "$consumer/fat-consumer-runtime"
check installed-fa-t-opt "scf.forall" "fat.pv" -- \
  "$prefix/bin/fa-t-opt" "$input" --fat-tile="block-m=128 block-n=128"
check mlir-opt-plugin-fat-tile "scf.forall" "fat.pv" -- \
  "$llvm_bin/mlir-opt" "$input" --load-dialect-plugin="$plugin" \
    --load-pass-plugin="$plugin" \
    --pass-pipeline="builtin.module(fat-tile{block-m=64 block-n=64})"
check mlir-opt-plugin-fat-to-ptx "gpu.binary @fat_attention_fwd_bf16_d128" \
  ".target sm_90a" -- \
  "$llvm_bin/mlir-opt" "$input" --load-dialect-plugin="$plugin" \
    --load-pass-plugin="$plugin" --pass-pipeline="builtin.module(fat-to-ptx)"

write_report "$report"
