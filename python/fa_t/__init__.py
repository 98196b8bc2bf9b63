"""fa_t: FlashAttention kernels for NVIDIA Hopper compiled by fa-t.

``fa_t.attention`` and ``fa_t.scaled_dot_product_attention`` run fa-t kernels
on torch CUDA tensors. Kernels come from an ahead-of-time directory
($FA_T_KERNEL_DIR) or are compiled just in time by fa-t-opt ($FA_T_OPT or
PATH) into a cache ($FA_T_CACHE_DIR, default ~/.cache/fa-t). The launcher is
libfat_runtime.so ($FA_T_RUNTIME_LIB). Importing this package needs neither
torch nor a GPU; see docs/kernel-abi.md for the kernel ABI.
"""

from .api import attention, scaled_dot_product_attention
from .config import KernelConfig
from .errors import CompileError, CudaError, KernelNotFoundError, ManifestError
from .manifest import Manifest, load_manifest, parse_manifest
from .registry import find_kernel

__version__ = "0.1.0"

__all__ = [
    "attention",
    "scaled_dot_product_attention",
    "KernelConfig",
    "Manifest",
    "load_manifest",
    "parse_manifest",
    "find_kernel",
    "CompileError",
    "CudaError",
    "KernelNotFoundError",
    "ManifestError",
]
