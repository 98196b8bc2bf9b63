"""Opt-in routing of ``torch.nn.functional.scaled_dot_product_attention`` to fa-t.

::

    with fa_t.patch_sdpa() as stats:      # or fa_t.enable_sdpa_override() / disable_…
        model(x)                          # F.scaled_dot_product_attention calls we
                                          # support run fa-t kernels
    print(stats)                          # {'fa_t': 24, 'fallback': {'attn_mask': 2}}

A call runs fa-t (:func:`fa_t.scaled_dot_product_attention`, same semantics:
top-left ``is_causal``, ``scale``, ``enable_gqa``) when fa-t can compute it
exactly; otherwise it goes to torch's original function, and the reason is
counted and logged (logger ``fa_t.sdpa_override``) (INFO the first time per reason,
DEBUG after). Reasons: ``attn_mask``, ``dropout``, ``not cuda`` (CPU or other
devices), ``not sm_90`` (a GPU other than Hopper), ``not 4-D``, ``dtype``
(not bf16/f16, or mixed), ``head dim`` (not 64/128/256), ``shape`` (shapes
torch itself would reject or that fa-t does not take), ``empty``, ``layout``
(strides TMA cannot read), ``requires grad`` (fa-t has no backward pass) and
``no kernel`` (none in $FA_T_KERNEL_DIR and no fa-t-opt to compile one).

The patch replaces the attribute ``torch.nn.functional.scaled_dot_product_attention``,
so it reaches code that calls it through the module (``F.scaled_dot_product_attention``,
``nn.MultiheadAttention``, most model code), not code that imported the function
object itself before the patch.

Under ``torch.compile`` the choice is made while tracing (from shapes, dtypes,
devices and strides, all guarded), so it is neither counted nor logged per
call, and a missing kernel raises KernelNotFoundError when the graph runs
instead of falling back.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from typing import Dict, Iterator, Optional

import torch
import torch.nn.functional as F

from . import api, checks, torch_ops
from .config import HEAD_DIMS, KernelConfig
from .errors import CompileError, KernelNotFoundError

log = logging.getLogger(__name__)

_lock = threading.Lock()
_original = None            # torch's function while the override is on, else None
_routed = 0                 # calls fa-t ran
_fallbacks: Counter = Counter()   # reason -> calls given to torch
_hopper_devices: tuple = ()   # CUDA device indices with sm_90
#: The device type fa-t runs on (a constant; the tests trace the rules on the CPU).
_DEVICE_TYPE = "cuda"
_kernels: Dict[KernelConfig, bool] = {}     # config -> a kernel can be had


def _unsupported(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa) -> Optional[str]:
    """Why fa-t cannot run this call (a fallback reason), or None when it can.

    Reads only what torch.compile can trace and guard on; the kernel lookup
    and data-pointer alignment are left to :func:`_unavailable` (eager only).
    """
    if attn_mask is not None:
        return "attn_mask"
    if dropout_p != 0.0:
        return "dropout"
    tensors = (query, key, value)
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        return "shape"
    if any(t.device.type != _DEVICE_TYPE for t in tensors):
        return "not cuda"
    if any(t.dim() != 4 for t in tensors):
        return "not 4-D"
    if query.dtype not in (torch.bfloat16, torch.float16) or any(
            t.dtype != query.dtype for t in tensors):
        return "dtype"
    if query.shape[3] not in HEAD_DIMS or value.shape[3] not in HEAD_DIMS:
        return "head dim"
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return "requires grad"
    if any(t.device != query.device for t in tensors):
        return "shape"
    if query.device.index not in _hopper_devices:
        return "not sm_90"
    try:
        checks.check_shapes(query, key, value, gqa=bool(enable_gqa))
    except ValueError:
        return "shape"
    if query.shape[2] == 0 or key.shape[2] == 0 or query.shape[0] == 0:
        return "empty"
    for t in tensors:
        last = t.stride(3) == 1 or t.shape[3] == 1
        aligned = all(t.shape[d] == 1 or (t.stride(d) * t.element_size()) % 16 == 0
                      for d in range(3))
        if not (last and aligned):
            return "layout"
    return None


def _unavailable(query, key, value, is_causal) -> Optional[str]:
    """Eager-only reasons: misaligned data pointers, no kernel for the config."""
    if any(t.data_ptr() % 16 for t in (query, key, value)):
        return "layout"
    config = KernelConfig(dtype=checks.DTYPE_NAMES[str(query.dtype)], head_dim=query.shape[3],
                          head_dim_v=value.shape[3], num_heads_q=query.shape[1],
                          num_heads_kv=key.shape[1], causal=bool(is_causal))
    if config not in _kernels:
        from . import registry
        try:
            registry.find_kernel(config)
            _kernels[config] = True
        except (KernelNotFoundError, CompileError) as e:
            log.debug("fa_t: no kernel for %s: %s", config.to_dict(), e)
            _kernels[config] = False
    return None if _kernels[config] else "no kernel"


def _count_fallback(reason: str) -> None:
    with _lock:
        first = reason not in _fallbacks
        _fallbacks[reason] += 1
    (log.info if first else log.debug)(
        "fa_t: scaled_dot_product_attention falls back to torch (%s)", reason)


def _count_routed() -> None:
    global _routed
    with _lock:
        _routed += 1


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """The stand-in for ``torch.nn.functional.scaled_dot_product_attention``."""
    original = _original or F.scaled_dot_product_attention
    compiling = torch.compiler.is_compiling()
    reason = _unsupported(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if reason is None and scale is not None and not (isinstance(scale, (int, float))
                                                     and scale > 0):
        reason = "scale"  # torch allows scale <= 0; the kernels need scale > 0
    if reason is None and not compiling:
        reason = _unavailable(query, key, value, is_causal)
    if reason is not None:
        if not compiling:
            _count_fallback(reason)
        return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    if not compiling:
        _count_routed()
    if scale is None:
        scale = 1.0 / query.shape[3] ** 0.5
    o, _ = torch_ops.attention_fwd(query, key, value, bool(is_causal), float(scale), -1, -1, 0,
                                   False)
    return o


def _find_hopper_devices() -> tuple:
    if not torch.cuda.is_available():
        return ()
    return tuple(i for i in range(torch.cuda.device_count())
                 if tuple(torch.cuda.get_device_capability(i)) == api.REQUIRED_CAPABILITY)


def enable_sdpa_override() -> None:
    """Routes ``torch.nn.functional.scaled_dot_product_attention`` through fa-t
    (see the module doc); calling it again while on does nothing."""
    global _original, _hopper_devices
    with _lock:
        if _original is not None:
            return
        _hopper_devices = _find_hopper_devices()
        _original = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = scaled_dot_product_attention
    log.debug("fa_t: torch.nn.functional.scaled_dot_product_attention now routes to fa-t "
              "(Hopper devices: %s)", sorted(_hopper_devices))


def disable_sdpa_override() -> None:
    """Restores torch's own ``scaled_dot_product_attention``."""
    global _original
    with _lock:
        if _original is None:
            return
        F.scaled_dot_product_attention = _original
        _original = None


def sdpa_override_enabled() -> bool:
    return _original is not None


def sdpa_override_stats(reset: bool = False) -> Dict[str, object]:
    """``{"fa_t": calls fa-t ran, "fallback": {reason: calls}}``, counted in eager
    mode since the process started or the last ``reset``."""
    global _routed
    with _lock:
        stats = {"fa_t": _routed, "fallback": dict(_fallbacks)}
        if reset:
            _routed = 0
            _fallbacks.clear()
    return stats


@contextlib.contextmanager
def patch_sdpa() -> Iterator[Dict[str, object]]:
    """Context manager form of :func:`enable_sdpa_override`.

    Yields a dict that, on exit, holds the calls counted inside the block
    (``{"fa_t": n, "fallback": {reason: n}}``). Nested uses keep the override
    on until the outermost one exits.
    """
    was_on = sdpa_override_enabled()
    before = sdpa_override_stats()
    stats: Dict[str, object] = {}
    enable_sdpa_override()
    try:
        yield stats
    finally:
        if not was_on:
            disable_sdpa_override()
        after = sdpa_override_stats()
        stats["fa_t"] = after["fa_t"] - before["fa_t"]
        stats["fallback"] = {r: n - before["fallback"].get(r, 0)
                             for r, n in after["fallback"].items()
                             if n - before["fallback"].get(r, 0)}
