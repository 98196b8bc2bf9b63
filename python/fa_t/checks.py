"""Validation of user inputs before anything is launched.

The functions take duck-typed tensors (torch tensors in practice) and raise
TypeError / ValueError / NotImplementedError with messages that name the
constraint and the values, e.g.
``expected query.size(1) (32) to be a multiple of key.size(1) (6)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional, Sequence, Tuple

from .config import HEAD_DIMS
from .params import check_16_byte_layout

#: Element types the kernels take, by torch's name, and the config's name.
DTYPE_NAMES = {"torch.bfloat16": "bf16", "torch.float16": "f16"}


@dataclasses.dataclass(frozen=True)
class Problem:
    """The sizes of one attention call (logical BHSD)."""

    B: int
    Hq: int
    Hkv: int
    Sq: int
    Skv: int
    D: int
    Dv: int
    dtype: str  # "bf16" | "f16"


def _is_tensor(x: Any) -> bool:
    return all(hasattr(x, a) for a in ("shape", "stride", "data_ptr", "dtype", "device"))


def check_tma_layout(t: Any, name: str) -> None:
    """The strides TMA accepts: innermost stride 1, every other stride a
    multiple of 16 bytes, data pointer 16-byte aligned. Dimensions of extent 1
    are exempt from the stride rules (they are never stepped over)."""
    check_16_byte_layout(t, name, "as TMA requires")


def _check_4d(tensors, names) -> None:
    for t, name in zip(tensors, names):
        if t.dim() != 4:
            raise ValueError(f"expected {name} to be 4-D (batch, heads, seq, head_dim), "
                             f"got {t.dim()}-D with shape {tuple(t.shape)}")


def check_shapes(q: Any, k: Any, v: Any,
                 names: Tuple[str, str, str] = ("query", "key", "value"),
                 gqa: bool = True) -> Tuple[Any, ...]:
    """The shape rules alone: 4-D Q, K, V that agree on B, D and the KV length,
    Hq a multiple of Hkv (equal to it when ``gqa`` is False).

    Returns (B, Hq, Hkv, Sq, Skv, D, Dv) as the tensors give them (ints, or
    SymInts while torch.compile traces). It reads only shapes, so it serves
    the CPU path and traced code too; :func:`check_inputs` adds the rest.
    """
    _check_4d((q, k, v), names)
    qn, kn, vn = names
    B, Hq, Sq, D = q.shape
    Bk, Hkv, Skv, Dk = k.shape
    Bv, Hv, Sv, Dv = v.shape
    pairs = [(f"{kn}.size(0)", Bk, f"{qn}.size(0)", B),
             (f"{vn}.size(0)", Bv, f"{qn}.size(0)", B),
             (f"{kn}.size(3)", Dk, f"{qn}.size(3)", D),
             (f"{vn}.size(1)", Hv, f"{kn}.size(1)", Hkv),
             (f"{vn}.size(2)", Sv, f"{kn}.size(2)", Skv)]
    for a, av, b, bv in pairs:
        if av != bv:
            raise ValueError(f"expected {a} ({av}) to equal {b} ({bv})")
    if not gqa and Hq != Hkv:
        raise ValueError(f"expected {qn}.size(1) ({Hq}) to equal {kn}.size(1) ({Hkv}); "
                         f"pass enable_gqa=True for grouped-query attention")
    if Hkv == 0 or Hq % Hkv:
        raise ValueError(f"expected {qn}.size(1) ({Hq}) to be a multiple of {kn}.size(1) ({Hkv})")
    return B, Hq, Hkv, Sq, Skv, D, Dv


def check_inputs(q: Any, k: Any, v: Any, names: Tuple[str, str, str] = ("query", "key", "value"),
                 gqa: bool = True) -> Problem:
    """Checks Q, K, V (logical BHSD) for a kernel launch and returns the sizes.

    ``gqa`` False requires equal head counts (SDPA with enable_gqa=False).
    """
    tensors = (q, k, v)
    for t, name in zip(tensors, names):
        if not _is_tensor(t):
            raise TypeError(f"expected {name} to be a torch.Tensor, got {type(t).__name__}")
    _check_4d(tensors, names)
    for t, name in zip(tensors, names):
        if str(t.dtype) not in DTYPE_NAMES:
            raise TypeError(f"expected {name}.dtype to be torch.bfloat16 or torch.float16, "
                            f"got {t.dtype}")
    for t, name in zip(tensors[1:], names[1:]):
        if t.dtype != q.dtype:
            raise TypeError(f"expected {name}.dtype ({t.dtype}) to equal {names[0]}.dtype "
                            f"({q.dtype})")
    for t, name in zip(tensors, names):
        if getattr(t.device, "type", None) != "cuda":
            raise ValueError(f"expected {name} to be on a CUDA device, got {t.device}")
    for t, name in zip(tensors[1:], names[1:]):
        if t.device != q.device:
            raise ValueError(f"expected {name}.device ({t.device}) to equal {names[0]}.device "
                             f"({q.device})")

    B, Hq, Hkv, Sq, Skv, D, Dv = (int(s) for s in check_shapes(q, k, v, names, gqa))
    for value, what in ((D, f"{names[0]}.size(3)"), (Dv, f"{names[2]}.size(3)")):
        if value not in HEAD_DIMS:
            raise NotImplementedError(
                f"expected {what} ({value}) to be one of the supported head dims "
                f"{', '.join(map(str, HEAD_DIMS))}")
    for t, name in zip(tensors, names):
        if t.numel() > 0:
            check_tma_layout(t, name)
    return Problem(B, Hq, Hkv, Sq, Skv, D, Dv, DTYPE_NAMES[str(q.dtype)])


#: Elements a captured tensor may have: the kernel indexes it in 32 bits.
MAX_CAPTURE_ELEMENTS = 2**31 - 1


#: The runtime's FAT_MAX_PARAM_PATCHES (16) less q, k, v, o and lse.
MAX_CAPTURES = 11


def check_captures(captures: Sequence[Any], device: Any) -> None:
    """The tensors a score / mask modification reads (``captures``, in
    capture order): on q's ``device`` (the kernel reads them there) and with
    1 to :data:`MAX_CAPTURE_ELEMENTS` elements (the kernel clamps an index
    into the shape, so it reads at least one), at most :data:`MAX_CAPTURES`
    of them (each is an address the runtime patches per call, and a launch
    patches at most 16 parameters: q, k, v, o, lse and the captures)."""
    if len(captures) > MAX_CAPTURES:
        raise NotImplementedError(f"score_mod / mask_mod read {len(captures)} tensors; the "
                                  f"kernel takes at most {MAX_CAPTURES} (combine them into one)")
    for i, t in enumerate(captures):
        what = f"captured tensor {i} ({t.dtype} {tuple(t.shape)})"
        if t.device != device:
            raise ValueError(f"expected {what} to be on q's device {device}, got {t.device} "
                             f"(create it there or move it with .to({str(device)!r}))")
        n = math.prod(t.shape)
        if not 0 < n <= MAX_CAPTURE_ELEMENTS:
            raise ValueError(f"expected {what} to have 1 to {MAX_CAPTURE_ELEMENTS} elements "
                             f"(the kernel indexes it in 32 bits), got {n}")


def check_scale(scale: Optional[float], head_dim: int) -> float:
    """The softmax scale: ``scale`` if given (finite and > 0), else 1/sqrt(D).

    The kernels track the row max of the unscaled scores and exponentiate
    exp2(c·(S − m)); that max is the max of the scaled scores only for
    c = scale·log2 e > 0, so a zero or negative scale is refused (as the
    fat.attention verifier does) instead of computed wrongly.
    """
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"expected scale to be a float or None, got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"expected scale to be finite, got {scale}")
    if scale <= 0:
        raise ValueError(f"expected scale to be > 0 (the kernels keep the row max of the "
                         f"unscaled scores), got {scale}")
    return float(scale)


def check_window(window: Any) -> Tuple[int, int]:
    """``window`` as (left, right), each >= 0 or -1 for unbounded; None is (-1, -1)."""
    if window is None:
        return (-1, -1)
    try:
        left, right = window
    except (TypeError, ValueError):
        raise TypeError(f"expected window to be a pair (left, right), got {window!r}") from None
    for side, value in (("left", left), ("right", right)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected window {side} to be an int, got {value!r}")
        if value < -1:
            raise ValueError(f"expected window {side} ({value}) to be >= 0, or -1 for unbounded")
    return (left, right)
