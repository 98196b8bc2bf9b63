"""fa_t: FlashAttention kernels for NVIDIA Hopper compiled by fa-t.

``fa_t.attention`` and ``fa_t.scaled_dot_product_attention`` run fa-t kernels
on torch CUDA tensors. Kernels come from an ahead-of-time directory
($FA_T_KERNEL_DIR) or are compiled just in time by fa-t-opt into a cache
($FA_T_CACHE_DIR, default ~/.cache/fa-t). The launcher is libfat_runtime.so.
The wheel (``pip install .`` in the fa-t repository) carries both inside this
package, fa_t/bin/fa-t-opt and fa_t/lib/libfat_runtime.so, found with no
environment variable; $FA_T_OPT and $FA_T_RUNTIME_LIB override them.
Importing this package needs neither torch nor a GPU; see docs/kernel-abi.md
for the kernel ABI.

With torch: ``fa_t.patch_sdpa()`` (and ``enable_sdpa_override`` /
``disable_sdpa_override`` / ``sdpa_override_stats``) route torch's own
``scaled_dot_product_attention`` to fa-t (:mod:`fa_t.sdpa_override`), the
custom op ``torch.ops.fa_t.attention_fwd`` lives in :mod:`fa_t.torch_ops`,
ring attention over torch.distributed in :mod:`fa_t.distributed`, and
FlexAttention-style modifications in :mod:`fa_t.mods` (``softcap``, ``alibi``,
``document_mask``, ``prefix_lm``; ``block_mask`` / ``create_block_mask`` for
block sparsity, passed as ``fa_t.attention(..., block_mask=)``). These
load torch on first use. Logging goes to the ``fa_t`` logger.
"""

from .api import attention, scaled_dot_product_attention
from .config import KernelConfig
from .errors import CompileError, CudaError, KernelNotFoundError, ManifestError
from .manifest import Manifest, load_manifest, parse_manifest
from .registry import find_kernel

__version__ = "0.1.0"

#: Names that import torch, loaded on first access.
_TORCH_NAMES = {"softcap": "mods", "alibi": "mods", "document_mask": "mods",
                "prefix_lm": "mods", "block_mask": "mods", "create_block_mask": "mods",
                "BlockMask": "mods", "mods": None,
                "patch_sdpa": "sdpa_override", "enable_sdpa_override": "sdpa_override",
                "disable_sdpa_override": "sdpa_override", "sdpa_override_stats": "sdpa_override",
                "distributed": None, "torch_ops": None, "sdpa_override": None}


def __getattr__(name):
    if name not in _TORCH_NAMES:
        raise AttributeError(f"module 'fa_t' has no attribute {name!r}")
    import importlib
    module = importlib.import_module(f".{_TORCH_NAMES[name] or name}", __name__)
    return module if _TORCH_NAMES[name] is None else getattr(module, name)

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
