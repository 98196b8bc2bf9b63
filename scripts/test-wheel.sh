#!/usr/bin/env bash
# The pip-installed package, as a PyTorch user gets it: a fresh virtual
# environment, `pip install .` from the repository root (pyproject.toml), then
# `import fa_t` with no FA_T_* or PYTHONPATH variable set finds the compiler
# and the runtime inside the package (fa_t/bin/fa-t-opt,
# fa_t/lib/libfat_runtime.so), compiles a kernel just in time to PTX and a
# manifest, builds an ahead-of-time kernel folder, and runs the README's
# Python example (on CPU tensors, the torch path, without a GPU). Last, on a
# machine made to look like the GPU machine (LLVM's library folder hidden in
# a mount namespace), the wheel's fa-t-opt cannot start: kernel folders still
# work and a JIT request says "fa-t-opt not usable". One JUnit testcase per
# check.
#
#   scripts/test-wheel.sh REPORT.xml
#
# Build cost: the wheel's CMake runs in build/ (pyproject.toml's build-dir,
# the tree scripts/build.sh configures the same way), so after the build it
# reconfigures (seconds), finds fa-t-opt and libfat_runtime.so up to date and
# installs them: no C++ is compiled twice.
#
# torch: the venv is fresh for `pip install .`; afterwards a .pth file lets it
# import the project's .venv packages (torch, numpy) instead of downloading
# torch again (about 5 GB, with its CUDA libraries). A .pth entry goes after
# the venv's own site-packages on sys.path, so `fa_t` is still the wheel's
# (the wheel-contents check asserts it), and the wheel itself depends on
# nothing (torch is an extra).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report=${1:?usage: $0 REPORT.xml}
python=/usr/bin/python3
# The runtime ABI the tree's header declares (what the wheel's library must report).
abi=$(sed -n 's/^#define FAT_RUNTIME_ABI_VERSION \([0-9]*\)$/\1/p' "$root/include/fa-t/Runtime/Runtime.h")
project_venv=$root/.venv

# No override of any kind: what the README promises works without them.
for var in $(compgen -e); do
  case $var in FA_T_*|PYTHONPATH|PYTHONHOME|VIRTUAL_ENV) unset "$var" ;; esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv=$work/venv
# The JIT cache goes to ~/.cache/fa-t: a fresh HOME makes every compile real.
home=$work/home
mkdir -p "$home"
in_venv=(env HOME="$home" "$venv/bin/python")
config="KernelConfig('bf16', 128, 128, 16, 4, causal=True, lse=True)"

suite=wheel
check_dir=$work
show_pass=12
. "$root/scripts/junit-checks.sh"

check fresh-venv -- "$python" -m venv "$venv"
check pip-install "Successfully installed fa-t-" -- \
  "$venv/bin/python" -m pip install "$root"

# torch and numpy from the project's venv (see the header).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
project_site=$("$project_venv/bin/python" -c \
  'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null) &&
  echo "$project_site" >"$site/fa-t-project-venv.pth"

check wheel-contents "fa_t from the venv" "RUNPATH" "/usr/lib/llvm-22/lib" -- \
  "${in_venv[@]}" -c "
import os, subprocess, sys
from pathlib import Path
import fa_t
pkg = Path(fa_t.__file__).parent
assert str(pkg).startswith('$venv/'), pkg
print('fa_t from the venv:', pkg)
for f in ('bin/fa-t-opt', 'lib/libfat_runtime.so'):
    p = pkg / f
    assert p.is_file(), p
    print(f, p.stat().st_size, 'bytes', 'executable' if os.access(p, os.X_OK) else '')
dynamic = subprocess.run(['readelf', '-d', str(pkg / 'bin/fa-t-opt')], capture_output=True,
                         text=True, check=True).stdout
print(''.join(l for l in dynamic.splitlines(True) if 'NEEDED' in l or 'RUNPATH' in l))"

check no-env-lookup "compiler:" "runtime:" "runtime ABI $abi" "same version" -- \
  "${in_venv[@]}" -c "
import os, subprocess
from pathlib import Path
import fa_t
from fa_t import jit, runtime
assert not [v for v in os.environ if v.startswith('FA_T_') or v == 'PYTHONPATH']
pkg = Path(fa_t.__file__).parent
opt, lib = jit.find_fat_opt(), runtime.find_runtime_library()
print('compiler:', opt)
print('runtime:', lib)
assert opt == str(pkg / 'bin' / 'fa-t-opt') and lib == str(pkg / 'lib' / 'libfat_runtime.so')
rt = runtime.Runtime()
print('runtime ABI', rt._lib.fat_runtime_abi_version())
version = subprocess.run([opt, '--version'], capture_output=True, text=True).stdout
print(version.strip(), '| fa_t', fa_t.__version__)
assert f'fa-t {fa_t.__version__} ' in version
print('same version')"

check jit-compile "compiled fat_attention_fwd" ".target sm_90a" "$home/.cache/fa-t/" -- \
  "${in_venv[@]}" -c "
import logging; logging.basicConfig(level=logging.INFO)
import fa_t
from fa_t import KernelConfig
m = fa_t.find_kernel($config, seq_len=4096)
ptx = m.ptx_path.read_text()
print(m.entry, m.ptx_path, m.block, m.dynamic_smem_bytes, 'bytes of shared memory')
print([l for l in ptx.splitlines() if l.startswith('.target')][0])"

"$venv/bin/python" -c "import json; from fa_t import KernelConfig
print(json.dumps([$config.to_dict()]))" >"$work/configs.json"
check aot-folder "built 1 kernels into" -- \
  "${in_venv[@]}" -m fa_t.aot --out "$work/aot" "$work/configs.json"

# The README's three lines as written, on the GPU where there is one, else on
# CPU tensors (the same call, the torch implementation).
check readme-example "README example:" "relative error" -- \
  "${in_venv[@]}" - "$root/README.md" <<'PY'
import re, sys, time
import torch
text = open(sys.argv[1], encoding="utf-8").read()
section = text[text.index("## Python, on torch tensors"):]
code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    assert code.count('device="cuda"') == 1, code
    code = code.replace('device="cuda"', 'device="cpu"')
start = time.perf_counter()
scope = {}
exec(compile(code, "README.md", "exec"), scope)
q, k, v, o = (scope[n] for n in "qkvo")
expected = torch.nn.functional.scaled_dot_product_attention(
    q[:1, :2].double(), k[:1, :2].double(), v[:1, :2].double(), is_causal=True)
err = ((o[:1, :2].double() - expected).norm() / expected.norm()).item()
print(f"README example: fa_t.attention on {device}, o {tuple(o.shape)} {o.dtype}, "
      f"{time.perf_counter() - start:.1f} s, relative error {err:.2e} vs float64 SDPA")
assert o.shape == q.shape and o.dtype == q.dtype and err < 5e-3, err
PY

# The GPU machine has no LLVM: hide LLVM's library folder (a private mount
# namespace, unshare's default propagation; needs root or user namespaces)
# and ask again.
llvm_lib=/usr/lib/llvm-22/lib
cat >"$work/without_llvm.py" <<PY
import subprocess
import fa_t
from fa_t import CompileError, KernelConfig, jit
done = subprocess.run([str(jit.BUNDLED_FAT_OPT), "--version"], capture_output=True, text=True)
assert done.returncode != 0, done.stdout
print("fa-t-opt cannot start:", done.stderr.strip())
m = fa_t.find_kernel($config, kernel_dir="$work/aot")
print("kernel folder:", m.entry, m.ptx_path)
try:
    fa_t.find_kernel($config)
except CompileError as e:
    print(e)
else:
    raise SystemExit("the JIT found a compiler without LLVM")
PY
if unshare -m sh -c "mount -t tmpfs none $llvm_lib" 2>/dev/null; then
  check without-llvm "fa-t-opt cannot start" "kernel folder:" "fa-t-opt not usable:" \
    "libMLIR" -- \
    unshare -m sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' sh "$llvm_lib" \
      env HOME="$home/without-llvm" "$venv/bin/python" "$work/without_llvm.py"
else
  skip without-llvm "cannot hide $llvm_lib here (no mount namespace)"
fi

write_report "$report"
