#!/usr/bin/env bash
# Installs what fa-t needs on Debian 12: LLVM/MLIR 22 (Debian's packages),
# clang-22 (and libclang-rt-22-dev: its sanitizer and libFuzzer runtimes),
# CMake, Ninja, and a Python venv (.venv) with numpy, pytest and
# torch (PyPI's wheel; on a machine without a GPU it runs on the CPU, which the
# torch-level tests — reference, torch.library registration, gloo ring
# attention — need).
# Idempotent: skips what is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

need_pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libclang-rt-22-dev
           ninja-build cmake python3 python3-venv python3-pip)
missing=()
for p in "${need_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fa-t: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}"
fi

# Debian's python is externally managed: Python packages go into a venv.
if [ ! -x "$root/.venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$root/.venv"
fi
if ! "$root/.venv/bin/python" -c "import numpy, pytest" 2>/dev/null; then
  "$root/.venv/bin/python" -m pip install -q --upgrade pip
  "$root/.venv/bin/python" -m pip install -q "numpy>=1.24" "pytest>=7"
fi
if ! "$root/.venv/bin/python" -c "import torch" 2>/dev/null; then
  echo "fa-t: installing torch into .venv (about 5 GB with its CUDA libraries)"
  "$root/.venv/bin/python" -m pip install -q "torch>=2.5"
fi
# cuobjdump and nvdisasm (NVIDIA's wheels, a few MB) for the SASS checks of
# the lit suite (feature `cuobjdump`, scripts/sass_profile.py).
# Optional: without them (and without triton's copies) the SASS checks are
# UNSUPPORTED, nothing else changes.
if ! ls "$root"/.venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump >/dev/null 2>&1; then
  "$root/.venv/bin/python" -m pip install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm \
    || echo "fa-t: cuobjdump wheels not installed; the lit SASS checks will be skipped"
fi
echo "fa-t: dependencies ready"
