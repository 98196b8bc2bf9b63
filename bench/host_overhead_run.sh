#!/usr/bin/env bash
# The per-call host cost on the GPU machine in one go (issue 22): the host
# overhead of the previous fa_t and of this one, the GPU tests of the cached
# path, and the grid's call/kernel column. Build here first, into one folder
# KDIR that travels (git-ignored, e.g. .kernels-issue22):
#   KDIR/host    python -m fa_t.aot --out KDIR/host bench/host_overhead.py:kernel_configs
#   KDIR/py      ... test/Python/gpu_configs.py:all_configs
#   KDIR/bench   ... bench/bench.py:grid_configs
#   KDIR/lib     libfat_runtime.so of this tree
#   KDIR/old     fa_t/ and libfat_runtime.so of the commit to compare with
#                (git archive REV python/fa_t lib/Runtime include/fa-t/Runtime)
# then on the GPU machine:
#   bash bench/host_overhead_run.sh OUT KDIR [phases...]
# Phases (default all): host-before host pytest bench bench-before.
set -uo pipefail
out=${1:?usage: host_overhead_run.sh OUT KDIR [phases...]}
k=${2:?usage: host_overhead_run.sh OUT KDIR [phases...]}
shift 2
phases=${*:-host-before host pytest bench bench-before}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

new() {  # this tree's fa_t and runtime
  PYTHONPATH="python:test/Python" FA_T_RUNTIME_LIB="$k/lib/libfat_runtime.so" python3 "$@"
}
old() {  # KDIR/old's fa_t, imported before the script puts python/ first on its path
  FA_T_RUNTIME_LIB="$k/old/libfat_runtime.so" python3 -c '
import runpy, sys
sys.path.insert(0, sys.argv[1])
import fa_t
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$k/old" "$@"
}

for phase in $phases; do
  echo "=== $phase"
  case $phase in
    host-before)
      FA_T_KERNEL_DIR="$k/host" old bench/host_overhead.py --label before \
        --json "$out/host-before.json" || status=1 ;;
    host)
      FA_T_KERNEL_DIR="$k/host" new bench/host_overhead.py --label after \
        --json "$out/host-after.json" --profile || status=1 ;;
    pytest)
      # The cached path's own tests, the torch integration on the GPU, the
      # README, and test_gpu_attention at bf16 D128 (its other cases run
      # the same path with other kernels).
      # PYTEST_ARGS (words, no quoting) replaces the selection.
      sel=(test/Python/test_gpu_plan_cache.py test/Python/test_torch_ops.py
           test/Python/test_readme.py test/Python/test_gpu_attention.py
           -k "not test_forward or (bf16 and 128)")
      [ -n "${PYTEST_ARGS:-}" ] && read -ra sel <<< "$PYTEST_ARGS"
      FA_T_KERNEL_DIR="$k/py:$k/bench" new -m pytest -q -m gpu -p no:cacheprovider -rs \
        "${sel[@]}" 2>&1 | tail -25 || status=1 ;;
    bench)
      # shellcheck disable=SC2086
      new bench/bench.py --kernels "$k/bench" --json "$out/bench-after.json" \
        ${BENCH_ARGS:---seq 512,1024,4096} 2>&1 | grep -v "^D[0-9]" || status=1 ;;
    bench-before)
      old bench/bench.py --kernels "$k/bench" --json "$out/bench-before.json" \
        ${BENCH_BEFORE_ARGS:---seq 512,1024,4096 --only 128} 2>&1 | grep -v "^D[0-9]" \
        || status=1 ;;
    *) echo "unknown phase $phase"; status=1 ;;
  esac
done
exit $status
