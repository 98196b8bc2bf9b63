"""From a manifest and tensors to a launch: symbols, grid, tensor maps, kernelParams.

Everything here works on duck-typed tensors (``shape``, ``stride()``,
``data_ptr()``, ``element_size()``, ``dtype``), so it runs and is tested
without torch. Tensors are always addressed in their logical order (BHSD for
Q, K, V, O; BHS for LSE) through their own strides, whatever their memory
layout: a BSHD tensor viewed as BHSD with ``transpose(1, 2)`` just works.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Dict, List, Tuple

from .errors import LayoutError
from .manifest import TILE_COUNTER, GridDim, Manifest, TensorMapSpec, capture_index

#: log2(e): kernels compute exp(x) as exp2(x * log2(e)), folded into the scale.
LOG2E = 1.4426950408889634

#: CUtensorMapDataType of each element type (FLOAT16 = 6, FLOAT32 = 7, BFLOAT16 = 9).
TMA_DTYPES = {"torch.bfloat16": 9, "torch.float16": 6, "torch.float32": 7}
TMA_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
TMA_L2_PROMOTION = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
#: "zero" is CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, which fills with zeros.
TMA_OOB_FILL = {"zero": 0, "nan": 1}
TMA_INTERLEAVE = {"none": 0}

#: CUDA's grid limits: x < 2^31, y and z <= 65535.
GRID_LIMITS = (2**31 - 1, 65535, 65535)
#: TMA moves 16-byte units: base addresses and outer strides must be multiples.
TMA_ALIGN = 16
TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGN = 64
#: The LSE is passed by pointer and stored one float at a time.
LSE_ALIGN = 4


def check_16_byte_layout(t: Any, name: str, why: str) -> None:
    """Innermost stride 1, every other stride a multiple of 16 bytes, data
    pointer 16-byte aligned: what TMA needs of Q, K and V, and the kernels'
    16-byte row-segment stores of O (docs/kernel-abi.md). Dimensions of
    extent 1 are exempt from the stride rules (they are never stepped over).
    ``why`` ends the messages ("as TMA requires")."""
    esize = t.element_size()
    last = t.dim() - 1
    if t.shape[last] > 1 and t.stride(last) != 1:
        raise LayoutError(f"expected {name}.stride({last}) ({t.stride(last)}) to be 1: the "
                          f"last dimension must be contiguous (call .contiguous())")
    for d in range(last):
        if t.shape[d] > 1 and (t.stride(d) * esize) % TMA_ALIGN:
            raise LayoutError(
                f"expected {name}.stride({d}) ({t.stride(d)}) times the element size ({esize}) "
                f"= {t.stride(d) * esize} bytes to be a multiple of {TMA_ALIGN} bytes, {why} "
                f"(call .contiguous())")
    if t.data_ptr() % TMA_ALIGN:
        raise LayoutError(f"expected {name}.data_ptr() ({t.data_ptr():#x}) to be "
                          f"{TMA_ALIGN}-byte aligned, {why} (call .clone())")


def check_lse_pointer(t: Any, name: str = "lse") -> None:
    """The LSE's data pointer (or another 4-byte ``ptr`` parameter's): the
    kernel stores it one float at a time."""
    if t.data_ptr() % LSE_ALIGN:
        raise LayoutError(f"expected {name}.data_ptr() ({t.data_ptr():#x}) to be "
                          f"{LSE_ALIGN}-byte aligned: the kernel stores it one float at a time "
                          f"(pass a fresh tensor)")


def problem_symbols(q_shape: Sequence[int], k_shape: Sequence[int], v_shape: Sequence[int],
                    *, diag: int, scale: float) -> Dict[str, Any]:
    """The values of the manifest symbols for logical BHSD shapes of Q, K, V."""
    b, hq, sq, d = q_shape
    _, hkv, skv, _ = k_shape
    return {"B": b, "Hq": hq, "Hkv": hkv, "Sq": sq, "Skv": skv, "D": d, "Dv": v_shape[3],
            "diag": diag, "scale": scale, "scale_log2e": scale * LOG2E}


#: Persistent kernels count their tiles in 32 bits.
MAX_TILES = 2**31 - 1


def _grid_text(g: GridDim) -> str:
    text = f"ceil({g.symbol} / {g.ceildiv})" if g.ceildiv != 1 else g.symbol
    return " * ".join([text, *g.times])


def launch_grid(grid: Sequence[GridDim], symbols: Mapping[str, Any]) -> Tuple[int, int, int]:
    """Grid dimensions: min(ceil(symbol / ceildiv) * prod(times), max) per entry,
    missing ones 1.

    Raises ValueError when a dimension is 0 (an empty problem is never launched),
    beyond CUDA's limits, or (persistent kernels, with ``max``) when the tile
    count the kernel loops over does not fit in 32 bits.
    """
    dims = []
    for g in grid:
        value = -(-symbols[g.symbol] // g.ceildiv)
        for factor in g.times:
            value *= symbols[factor]
        if g.max is not None:
            if value > MAX_TILES:
                raise ValueError(f"{_grid_text(g)} = {value} tiles: the persistent kernel "
                                 f"supports up to {MAX_TILES} (2^31 - 1)")
            value = min(value, g.max)
        dims.append(value)
    dims += [1] * (3 - len(dims))
    for axis, (value, limit, g) in enumerate(zip(dims, GRID_LIMITS, list(grid) + [None] * 3)):
        name = "xyz"[axis]
        what = _grid_text(g) if g else "1"
        if value < 1:
            raise ValueError(f"grid.{name} = {what} = {value}: expected at least 1")
        if value > limit:
            raise ValueError(f"grid.{name} = {what} = {value} exceeds the CUDA limit of {limit}")
    return dims[0], dims[1], dims[2]


@dataclasses.dataclass(frozen=True)
class TensorMapArgs:
    """The arguments of one cuTensorMapEncodeTiled call, innermost dimension first."""

    dtype: int
    address: int
    dims: Tuple[int, ...]
    strides: Tuple[int, ...]  # bytes, rank - 1 entries (dimension 0 is contiguous)
    box: Tuple[int, ...]
    swizzle: int
    l2_promotion: int
    oob_fill: int
    interleave: int

    @property
    def rank(self) -> int:
        return len(self.dims)


def _round_up(x: int, n: int) -> int:
    return -(-x // n) * n


def tensor_map_args(spec: TensorMapSpec, tensor: Any, name: str = None) -> TensorMapArgs:
    """Describes ``tensor`` (logical order) to TMA as ``spec`` lays it out.

    Each entry of ``spec.dims`` picks a logical axis; its extent and byte stride
    are the tensor's own. A dimension of extent 1 is never stepped over, so its
    stride is free: it gets the smallest stride TMA accepts (the span of the
    inner dimensions rounded up to 16 bytes), which keeps e.g. a broadcast or
    squeezed axis from failing the 16-byte rule for no reason.
    """
    name = name or spec.tensor
    dtype_name = str(tensor.dtype)
    if dtype_name not in TMA_DTYPES:
        raise TypeError(f"expected {name}.dtype to be one of {', '.join(TMA_DTYPES)}, "
                        f"got {dtype_name}")
    esize = tensor.element_size()
    shape, stride = tuple(tensor.shape), tuple(tensor.stride())
    axes = spec.axes
    dims = tuple(int(shape[a]) for a in axes)
    elem_strides = [int(stride[a]) for a in axes]
    if dims[0] > 1 and elem_strides[0] != 1:
        raise LayoutError(f"expected {name}.stride({axes[0]}) ({elem_strides[0]}) to be 1: "
                          f"TMA reads the innermost dimension contiguously")
    byte_strides: List[int] = []
    span = dims[0] * esize  # bytes covered by the dimensions inside the current one
    for i in range(1, len(dims)):
        s = elem_strides[i] * esize
        if dims[i] == 1:
            s = _round_up(span, TMA_ALIGN)
        elif s % TMA_ALIGN:
            raise LayoutError(f"expected {name}.stride({axes[i]}) ({elem_strides[i]}) times "
                              f"the element size ({esize}) = {s} bytes to be a multiple of "
                              f"{TMA_ALIGN} bytes (TMA requires it)")
        byte_strides.append(s)
        span = max(span, (dims[i] - 1) * s + span)
    address = int(tensor.data_ptr())
    if address % TMA_ALIGN:
        raise LayoutError(f"expected {name}.data_ptr() ({address:#x}) to be "
                          f"{TMA_ALIGN}-byte aligned (TMA requires it)")
    return TensorMapArgs(dtype=TMA_DTYPES[dtype_name], address=address, dims=dims,
                         strides=tuple(byte_strides), box=tuple(spec.box),
                         swizzle=TMA_SWIZZLE[spec.swizzle],
                         l2_promotion=TMA_L2_PROMOTION[spec.l2_promotion],
                         oob_fill=TMA_OOB_FILL[spec.oob_fill],
                         interleave=TMA_INTERLEAVE[spec.interleave])


class TensorMapBuffer:
    """128 bytes at a 64-byte-aligned host address, where one CUtensorMap lives.

    ctypes gives no alignment guarantee beyond 16, so the buffer is allocated
    64 bytes larger and the map placed at the first aligned address inside.
    """

    def __init__(self):
        self._raw = (ctypes.c_ubyte * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN))()
        base = ctypes.addressof(self._raw)
        self.address = _round_up(base, TENSOR_MAP_ALIGN)

    def bytes(self) -> bytes:
        """The map's 128 bytes (a copy)."""
        return ctypes.string_at(self.address, TENSOR_MAP_BYTES)


class KernelParams:
    """The argument block of one launch: ``array`` is cuLaunchKernel's kernelParams.

    Each entry points at a value this object owns, so it must stay alive until
    the launch call returns (the driver copies the values during the call).
    """

    def __init__(self, values: Sequence[Any]):
        self.values = list(values)
        addresses = [v.address if isinstance(v, TensorMapBuffer) else ctypes.addressof(v)
                     for v in self.values]
        self.array = (ctypes.c_void_p * max(1, len(addresses)))(*addresses)

    def __len__(self) -> int:
        return len(self.values)


class ParamPatch(ctypes.Structure):
    """``fat_param_patch``: a parameter each launch re-points at one of its
    addresses (``address`` indexes the call's address array)."""

    _fields_ = [("param", ctypes.c_uint32), ("kind", ctypes.c_int32),
                ("address", ctypes.c_uint32)]


class LaunchPlan(ctypes.Structure):
    """``fat_launch_plan``: a launch resolved once, for ``fat_launch_patched``.

    It points at the parameter block and the patches without owning them:
    keep both alive as long as the plan.
    """

    _fields_ = [("function", ctypes.c_void_p), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("dynamic_smem", ctypes.c_uint32),
                ("params", ctypes.POINTER(ctypes.c_void_p)), ("param_count", ctypes.c_uint32),
                ("patches", ctypes.POINTER(ParamPatch)), ("patch_count", ctypes.c_uint32),
                ("context", ctypes.c_void_p)]


#: fat_patch_kind of each parameter kind that carries a tensor's address.
PATCH_KINDS = {"tensor_map": 0, "ptr": 1}


def patched_params(manifest: Manifest) -> List[Tuple[int, int, str]]:
    """(parameter index, fat_patch_kind, tensor) of every parameter that holds
    a tensor's address — what a plan packed once must change per call. The
    other parameters (sizes, strides, scale) follow from what the plan is
    keyed on."""
    return [(i, PATCH_KINDS[p.kind], p.tensor) for i, p in enumerate(manifest.params)
            if p.kind in PATCH_KINDS]


def _i32(symbol: str, value: Any) -> ctypes.c_int32:
    value = int(value)
    if not -2**31 <= value < 2**31:
        raise ValueError(f"{symbol} = {value} does not fit the kernel's 32-bit parameter")
    return ctypes.c_int32(value)


def build_params(manifest: Manifest, tensors: Mapping[str, Any], symbols: Mapping[str, Any],
                 encode: Callable[[TensorMapArgs], TensorMapBuffer]) -> KernelParams:
    """Packs the parameters that ``manifest.params`` lists, in order.

    ``tensors`` maps q, k, v, o (and lse) to tensors in logical order, and
    capture0, capture1, … to the modifications' captured tensors;
    ``encode`` turns TensorMapArgs into an encoded TensorMapBuffer (the
    runtime's :meth:`~fa_t.runtime.Runtime.encode_tensor_map`).
    """
    values: List[Any] = []
    for p in manifest.params:
        if p.kind == "tensor_map":
            values.append(encode(tensor_map_args(manifest.tensor_maps[p.tensor],
                                                 tensors[p.tensor])))
        elif p.kind == "ptr":
            t = tensors[p.tensor]
            if p.tensor == "o":
                check_16_byte_layout(t, "o", "as the kernel's 16-byte stores of O require")
            elif p.tensor == TILE_COUNTER:
                if str(t.dtype) != "torch.int32" or t.numel() < 1:
                    raise LayoutError(f"expected {TILE_COUNTER} to be an int32 tensor of at "
                                      f"least one element, got {t.dtype} {tuple(t.shape)}")
            elif capture_index(p.tensor) is not None:
                # The kernel indexes it as a row-major array of its shape.
                if not t.is_contiguous():
                    raise LayoutError(f"expected {p.tensor} (a tensor a score / mask "
                                      f"modification reads, shape {tuple(t.shape)}) to be "
                                      f"contiguous (call .contiguous())")
            else:
                check_lse_pointer(t, p.tensor)
            values.append(ctypes.c_uint64(int(t.data_ptr())))
        elif p.kind == "stride":
            values.append(ctypes.c_int64(int(tensors[p.tensor].stride(p.dim))))
        elif p.kind == "i32":
            values.append(_i32(p.symbol, symbols[p.symbol]))
        else:  # f32, the only other kind parse_manifest accepts
            value = float(symbols[p.symbol])
            if not math.isfinite(value):
                raise ValueError(f"{p.symbol} = {value}: expected a finite number")
            values.append(ctypes.c_float(value))
    return KernelParams(values)
