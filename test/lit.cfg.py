# -*- Python -*-
# lit configuration of the fa-t regression suite.
#
# Tiers (see DESIGN.md): IR-only tests run everywhere; PTX tests need only the
# NVPTX backend, plus `ptxas` for the assembler checks (feature `ptxas`);
# GPU tests need an NVIDIA GPU (feature `gpu`); CPU execution tests need
# mlir-runner and its runtime libraries (feature `mlir-runner`).

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FA-T"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fat_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "Inputs", "Python"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%fat_src_root", config.fat_src_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.fat_tools_dir, config.llvm_tools_dir]
tools = ["fa-t-opt", "fat-capi-test", "mlir-opt", "mlir-runner", "mlir-translate"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# fa-t as a plugin of stock mlir-opt (--load-dialect-plugin, --load-pass-plugin);
# sanitized builds do not build it.
if os.path.exists(config.fat_plugin):
    config.available_features.add("fat-plugin")
config.substitutions.append(("%fat_plugin", config.fat_plugin))

# CPU execution through mlir-runner.
runner_libs = [
    os.path.join(config.llvm_lib_dir, "libmlir_c_runner_utils.so"),
    os.path.join(config.llvm_lib_dir, "libmlir_runner_utils.so"),
]
if all(os.path.exists(p) for p in runner_libs) and shutil.which(
    "mlir-runner", path=config.llvm_tools_dir
):
    config.available_features.add("mlir-runner")
    config.substitutions.append(("%mlir_runner_libs", ",".join(runner_libs)))

# ptxas from the CUDA toolkit, for assembler checks of the emitted PTX.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None
)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# cuobjdump (PATH, the CUDA toolkit, or the venv's NVIDIA wheels that
# scripts/install-deps.sh installs), for the SASS profile checks.
import sys
sys.path.insert(0, os.path.join(config.fat_src_root, "scripts"))
from sass_profile import find_tool  # noqa: E402
if ptxas and find_tool("cuobjdump"):
    config.available_features.add("cuobjdump")

# A usable NVIDIA GPU (the device machine; never in CI).
def _has_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout

if _has_gpu():
    config.available_features.add("gpu")
