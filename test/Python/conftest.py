"""pytest setup for the fa_t tests: import path, the `gpu` marker, shared data.

CPU tests run anywhere (no torch, no GPU). Tests marked `gpu` need torch, a
Hopper GPU, the runtime library and kernels; they skip cleanly without torch
or CUDA.
"""

import copy
import sys
from pathlib import Path

import pytest

# Tests run against the in-tree package, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))


def require_hopper():
    """torch, or a skip of the calling test module (call it at module level)
    unless torch sees a Hopper GPU (compute capability 9.0, the kernels' sm_90a)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device", allow_module_level=True)
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("fa-t kernels need compute capability 9.0 (sm_90a)",
                    allow_module_level=True)
    return torch


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs torch, a CUDA device (sm_90a), libfat_runtime.so and kernels")


#: The example manifest of docs/kernel-abi.md, completed with k and v maps.
EXAMPLE_MANIFEST = {
    "format": "fa-t-kernel", "version": 1,
    "entry": "fat_attention_fwd",
    "ptx": "fat_attention_fwd_1a2b3c.ptx",
    "sm": "sm_90a", "ptx_version": 80,
    "compiler": "fa-t 0.1.0 (LLVM 22.1.8)",
    "config": {
        "dtype": "bf16", "head_dim": 128, "head_dim_v": 128,
        "num_heads_q": 16, "num_heads_kv": 4, "layout": "bhsd",
        "causal": True, "window": [-1, -1], "lse": True,
        "block_m": 128, "block_n": 128, "stages": 2,
    },
    "block": [384, 1, 1],
    "grid": [{"symbol": "Sq", "ceildiv": 128}, {"symbol": "Hq"}, {"symbol": "B"}],
    "dynamic_smem_bytes": 197632,
    "tensor_maps": [
        {"tensor": "q", "dims": ["D", "Sq", "Hq", "B"], "box": [64, 128, 1, 1],
         "swizzle": "128B", "l2_promotion": "256B", "oob_fill": "zero", "interleave": "none"},
        {"tensor": "k", "dims": ["D", "Skv", "Hkv", "B"], "box": [64, 128, 1, 1],
         "swizzle": "128B", "l2_promotion": "256B", "oob_fill": "zero", "interleave": "none"},
        {"tensor": "v", "dims": ["Dv", "Skv", "Hkv", "B"], "box": [64, 128, 1, 1],
         "swizzle": "128B", "l2_promotion": "256B", "oob_fill": "zero", "interleave": "none"},
    ],
    "params": [
        {"kind": "tensor_map", "tensor": "q"},
        {"kind": "tensor_map", "tensor": "k"},
        {"kind": "tensor_map", "tensor": "v"},
        {"kind": "ptr", "tensor": "o"},
        {"kind": "stride", "tensor": "o", "dim": 0},
        {"kind": "ptr", "tensor": "lse"},
        {"kind": "i32", "symbol": "Sq"},
        {"kind": "i32", "symbol": "Skv"},
        {"kind": "i32", "symbol": "diag"},
        {"kind": "f32", "symbol": "scale_log2e"},
    ],
}


@pytest.fixture
def manifest_dict():
    """A fresh, valid manifest object that a test may break."""
    return copy.deepcopy(EXAMPLE_MANIFEST)
