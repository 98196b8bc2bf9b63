#!/usr/bin/env bash
# The whole GPU tier in one command, for a Hopper machine without LLVM.
#
# Build here first (fa-t-opt and the runtime library live here):
#   bash scripts/build.sh
#   bash scripts/build-gpu-kernels.sh     # all of the folders below, or:
#   python3 test/GPU/run_kernels.py build --fa-t-opt build/bin/fa-t-opt --out .kernels
#   PYTHONPATH=python python3 -m fa_t.aot --fa-t-opt build/bin/fa-t-opt \
#       --out .kernels-py test/Python/gpu_configs.py:all_configs
#   PYTHONPATH=python python3 -m fa_t.aot --fa-t-opt build/bin/fa-t-opt \
#       --out .kernels-bench bench/bench.py:grid_configs
#   PYTHONPATH=python python3 -m fa_t.aot --fa-t-opt build/bin/fa-t-opt \
#       --out .kernels-compile test/GPU/check_torch_compile.py:kernel_configs
# then on the GPU machine, with build/lib/libfat_runtime.so and the three
# kernel folders beside the tree:
#   bash test/GPU/device-run.sh OUTDIR [phases...]
# Phases (default: all, in this order):
#   sass    scripts/sass_profile.py on the bf16 grid kernels: registers,
#           spills, local memory (LDL/STL), HGMMA shapes, main-loop mix
#   kernels test/GPU/run_kernels.py: the kernel ABI checked directly (ctypes)
#   pytest  the fa_t package's gpu tests (pytest -m gpu), incl. 1.5x cuDNN's error
#   compile torch.compile(fullgraph=True) of a model using the fa_t custom op
#   stress  numerics stress (scores ~1e4, 128k keys, masked rows, ...) and determinism
#   sanitize compute-sanitizer memcheck, racecheck, synccheck (not in the default list)
#   bench   bench/bench.py: the standard grid next to torch SDPA (JSON + PNG);
#           BENCH_ARGS="--only 64 --seq 1024 --variants o,oe25 --variant-kernels
#           .kernels-ablation" narrows it and times ablation variants
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: device-run.sh OUTDIR [sass|kernels|pytest|bench ...]}
shift
phases=${*:-sass kernels pytest compile stress bench}
mkdir -p "$out"
cd "$root"
export PYTHONPATH="$root/python:$root/test/Python${PYTHONPATH:+:$PYTHONPATH}"
export FA_T_RUNTIME_LIB="$root/build/lib/libfat_runtime.so"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

for phase in $phases; do
  echo "=== $phase"
  case $phase in
    sass)
      # The static profile (scripts/sass_profile.py: registers, spills,
      # local memory, HGMMA shapes, the main loop's instruction mix) of the
      # bf16 grid kernels, with this machine's ptxas and cuobjdump.
      python3 scripts/sass_profile.py .kernels-bench/*bf16_d*.ptx \
        --json "$out/sass.json" || status=1 ;;
    kernels)
      # Bounded: a kernel that deadlocked on its barriers must not eat the
      # call's whole device time (KERNELS_TIMEOUT seconds, default 180).
      timeout "${KERNELS_TIMEOUT:-180}" python3 test/GPU/run_kernels.py run --kernels .kernels \
        --json "$out/kernels.json" || { echo "kernels: failed or timed out"; status=1; } ;;
    pytest)
      FA_T_KERNEL_DIR="$root/.kernels-py:$root/.kernels-compile:$root/.kernels-bench" \
        python3 -m pytest -q -m gpu -p no:cacheprovider \
        test/Python --junitxml="$out/gpu-pytest.xml" -o junit_family=legacy -rs 2>&1 \
        | tail -40 || status=1
      python3 - "$out/gpu-pytest.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
rows = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    props = {p.get("name"): float(p.get("value")) for p in case.iter("property")}
    if "fa_t_rel_err" in props:
        rows.append((case.get("name"), props["fa_t_rel_err"], props["cudnn_rel_err"]))
for name, ours, cudnn in rows:
    print(f"{name:50s} fa-t {ours:.3e}  cuDNN {cudnn:.3e}  ratio {ours / cudnn:.2f}")
PY
      ;;
    stress)
      FA_T_KERNEL_DIR="$root/.kernels-py" python3 test/GPU/stress.py --json "$out/stress.json" \
        || status=1 ;;
    sanitize)
      # compute-sanitizer on one small ragged case per kernel (every D,
      # mask, GQA, layout and schedule variant of run_kernels.py).
      for tool in memcheck racecheck synccheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
          python3 test/GPU/run_kernels.py run --kernels .kernels --small > "/tmp/san-$tool.log" 2>&1
        rc=$?
        echo "$tool: exit $rc; $(grep -c '^PASS' /tmp/san-$tool.log) cases pass;" \
             "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san-$tool.log | tail -1)"
        [ $rc -eq 0 ] || { status=1; grep -m 20 -E "=========" "/tmp/san-$tool.log"; }
      done ;;
    compile)
      FA_T_KERNEL_DIR="$root/.kernels-compile" python3 test/GPU/check_torch_compile.py \
        --json "$out/compile.json" 2>&1 | tail -25 || status=1 ;;
    bench)
      # BENCH_ARGS narrows or extends the grid (--only, --seq, --variants).
      # shellcheck disable=SC2086
      FA_T_KERNEL_DIR="$root/.kernels-bench" python3 bench/bench.py --kernels .kernels-bench \
        --json "$out/bench.json" --png "$out/bench.png" ${BENCH_ARGS:-} || status=1 ;;
    *) echo "unknown phase $phase"; status=1 ;;
  esac
done
exit $status
