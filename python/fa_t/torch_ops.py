"""``torch.ops.fa_t.attention_fwd``: fa-t's forward as a torch.library custom op.

The op lets fa-t kernels sit inside ``torch.compile`` graphs with no graph
break: torch sees one opaque node whose output shapes, dtypes and strides come
from a fake (meta) implementation, and runs the real one at execution time::

    fa_t::attention_fwd(Tensor q, Tensor k, Tensor v, bool causal, float scale,
                        SymInt window_left, SymInt window_right, SymInt diag,
                        bool return_lse) -> (Tensor, Tensor)

It returns (O [B, Hq, Sq, Dv] in q's dtype, LSE [B, Hq, Sq] float32), both
contiguous; without ``return_lse`` the LSE is an empty float32 tensor of shape
[0] (the kernel does not write one). Masks follow docs/kernel-abi.md: ``diag``
is the key index aligned with query row 0, a window side of -1 is unbounded.

Implementations, by device:

- CUDA: the fa-t Hopper kernel through the plan cache of eager calls
  (:func:`fa_t.api._forward`: full input checks once per shape, then a
  patched launch). Inputs whose strides or alignment TMA refuses are copied
  first (eager ``fa_t.attention`` refuses them instead; a compiled graph
  cannot be asked to change its layouts).
- CPU: :func:`attention_math`, a float32 (float64 for float64 inputs) torch
  computation with the same semantics. It is what runs on machines without a
  GPU, so ``torch.compile(fullgraph=True)`` over fa-t calls is tested there,
  and it is the local block of :mod:`fa_t.distributed` over gloo.

Importing this module imports torch and registers the op (once per process).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import checks
from .errors import LayoutError

#: dtypes the CPU implementation takes (the CUDA kernels take bf16 and f16).
CPU_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def attention_math(q, k, v, *, causal: bool, scale: float, window: Tuple[int, int] = (-1, -1),
                   diag: int = 0, score_mod=None, mask_mod=None,
                   kv_ranges=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Attention with torch ops on any device; returns (O, LSE).

    Computes in float64 for float64 inputs, else float32. O is contiguous in
    q's dtype, LSE contiguous in the compute dtype. ``score_mod`` /
    ``mask_mod`` (fa_t.mods) modify the scaled scores before the mask, and
    ``kv_ranges`` (a block mask's ranges [B, G, 2 or 4]) hide keys outside
    each 64-row query group's range [first, end); the full ranges only
    promise that mask_mod holds there (the kernel's licence to skip it), so
    they change nothing. Key j is visible from query i iff (not causal or
    j <= i + diag) and the window admits it; a row with no visible key gets
    O = 0 and LSE = -inf, never NaN.
    """
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    B, Hq, Sq, D = q.shape
    Hkv, Skv, Dv = k.shape[1], k.shape[2], v.shape[3]
    group = Hq // Hkv
    # GQA without copying K and V: query heads h = g·group + j share KV head g.
    q5 = q.to(compute).reshape(B, Hkv, group * Sq, D)
    scores = torch.matmul(q5, k.to(compute).transpose(-1, -2)).mul_(scale)
    if score_mod is not None or mask_mod is not None or kv_ranges is not None:
        # Query head h = g·group + j: the [B, Hkv·group, Sq, Skv] view is in
        # query-head order, as the functions index it (fa_t.mods).
        from .mods import apply_mods
        scores = apply_mods(scores.view(B, Hq, Sq, Skv), score_mod, mask_mod, kv_ranges)
    scores = scores.view(B, Hkv, group, Sq, Skv)

    rows = torch.arange(Sq, device=q.device).unsqueeze(1) + diag
    cols = torch.arange(Skv, device=q.device).unsqueeze(0)
    hidden = torch.zeros(Sq, Skv, dtype=torch.bool, device=q.device)
    left, right = window
    if causal:
        hidden |= cols > rows
    if left >= 0:
        hidden |= cols < rows - left
    if right >= 0:
        hidden |= cols > rows + right
    scores.masked_fill_(hidden, float("-inf"))

    lse = torch.logsumexp(scores, dim=-1)
    # exp(s - lse) with lse = -inf would be NaN; on such rows every s is -inf,
    # so subtracting 0 instead gives exp(-inf) = 0: O = 0 as defined.
    probs = torch.exp(scores - torch.where(torch.isneginf(lse), 0.0, lse).unsqueeze(-1))
    out = torch.matmul(probs.view(B, Hkv, group * Sq, Skv), v.to(compute))
    out = out.view(B, Hq, Sq, Dv).to(q.dtype).contiguous()
    return out, lse.reshape(B, Hq, Sq).contiguous()


def check_cpu_inputs(q, k, v, names=("q", "k", "v"), gqa: bool = True) -> None:
    """The checks for the CPU implementation: shapes, one floating dtype, one device."""
    for t, name in zip((q, k, v), names):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected {name} to be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in CPU_DTYPES:
            raise TypeError(f"expected {name}.dtype to be one of "
                            f"{', '.join(map(str, CPU_DTYPES))} on the CPU, got {t.dtype}")
        if t.dtype != q.dtype:
            raise TypeError(f"expected {name}.dtype ({t.dtype}) to equal {names[0]}.dtype "
                            f"({q.dtype})")
        if t.device != q.device:
            raise ValueError(f"expected {name}.device ({t.device}) to equal {names[0]}.device "
                             f"({q.device})")
    checks.check_shapes(q, k, v, names, gqa)


def check_inputs(q, k, v, names=("query", "key", "value"), gqa: bool = True) -> None:
    """The checks before a call of the op, by where it will run.

    Eager CUDA calls get every kernel check (:func:`fa_t.checks.check_inputs`);
    CPU calls those of the CPU implementation. While torch.compile traces,
    only the shape rules run (the tensors are fakes with no data pointer); the
    op's kernel checks the rest when the graph runs.
    """
    if torch.compiler.is_compiling():
        checks.check_shapes(q, k, v, names, gqa)
    elif isinstance(q, torch.Tensor) and q.device.type == "cpu":
        check_cpu_inputs(q, k, v, names, gqa)
    else:
        checks.check_inputs(q, k, v, names, gqa)


def _tma_ready(t: torch.Tensor, name: str) -> torch.Tensor:
    """``t`` itself if TMA can read it, else a contiguous, aligned copy."""
    if t.numel() == 0:
        return t
    try:
        checks.check_tma_layout(t, name)
        return t
    except LayoutError:
        return t.clone(memory_format=torch.contiguous_format)


def attention_forward(q, k, v, *, causal: bool, scale: float,
                      window: Tuple[int, int] = (-1, -1), diag: int = 0,
                      want_lse: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """One attention on q's device, outside the dispatcher; returns (O, LSE or None).

    CUDA tensors run the fa-t kernel through the plan cache (:func:`fa_t.api._forward`;
    LSE float32), CPU tensors :func:`attention_math` (LSE in its compute dtype).
    Inputs whose strides or alignment the kernels refuse are copied first (a
    compiled graph cannot be asked to change its layouts); the copy is made
    only after the cached path refused them, so aligned inputs cost no check.
    """
    if q.device.type == "cuda":
        from . import api
        window = tuple(window)
        try:
            return api._forward(q, k, v, causal=causal, window=window, diag=diag, scale=scale,
                                want_lse=want_lse)
        except LayoutError:
            q, k, v = (_tma_ready(t, n) for t, n in zip((q, k, v), ("q", "k", "v")))
            return api._forward(q, k, v, causal=causal, window=window, diag=diag, scale=scale,
                                want_lse=want_lse)
    check_cpu_inputs(q, k, v)
    o, lse = attention_math(q, k, v, causal=causal, scale=scale, window=tuple(window),
                            diag=diag)
    return o, (lse if want_lse else None)


def _no_lse(q: torch.Tensor) -> torch.Tensor:
    return q.new_empty((0,), dtype=torch.float32)


@torch.library.custom_op("fa_t::attention_fwd", mutates_args=(),
                         device_types=("cuda", "cpu"))
def attention_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float,
                  window_left: int, window_right: int, diag: int,
                  return_lse: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """fa-t attention forward (see the module doc): the kernel on CUDA, math on the CPU."""
    o, lse = attention_forward(q, k, v, causal=causal, scale=scale,
                               window=(window_left, window_right), diag=diag,
                               want_lse=return_lse)
    return o, (lse.to(torch.float32) if return_lse else _no_lse(q))


@attention_fwd.register_fake
def _attention_fwd_fake(q, k, v, causal, scale, window_left, window_right, diag, return_lse):
    B, Hq, _, Sq, _, _, Dv = checks.check_shapes(q, k, v, ("q", "k", "v"))
    o = q.new_empty((B, Hq, Sq, Dv))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32) if return_lse else _no_lse(q)
    return o, lse
