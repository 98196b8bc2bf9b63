"""Reading and validating kernel manifests (docs/kernel-abi.md, version 1).

A manifest is the JSON file beside each PTX kernel that says how to launch
it. :func:`load_manifest` reads one from disk, :func:`parse_manifest` checks
an already-decoded object; both raise :class:`~fa_t.errors.ManifestError`
naming the file, the field (``params[3].kind``) and the bad value.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Dict, Optional, Tuple

from .config import TUNING_KEYS, KernelConfig
from .errors import ManifestError

FORMAT = "fa-t-kernel"
VERSION = 1

#: Integer symbols: the problem sizes and the mask diagonal.
INT_SYMBOLS = ("B", "Hq", "Hkv", "Sq", "Skv", "D", "Dv", "diag")
#: Floating-point symbols: the softmax scale, and scale * log2(e) for exp2.
FLOAT_SYMBOLS = ("scale", "scale_log2e")
#: The tensors a kernel touches and their logical ranks (BHSD; LSE is BHS).
TENSOR_RANKS = {"q": 4, "k": 4, "v": 4, "o": 4, "lse": 3}
#: The tensors a score / mask modification reads, ``capture0``, ``capture1``, …
#: in the order of fat.attention's captures: passed by pointer only, read as
#: row-major arrays of the static shape the kernel was compiled for.
CAPTURE = re.compile(r"capture(0|[1-9][0-9]*)")
#: The dynamic tile scheduler's counter (``"tile_scheduler": "dynamic"``): a
#: ``ptr`` to 4 bytes of device memory that are zero when the kernel starts
#: and that it leaves zero; launches that may run at once need their own.
TILE_COUNTER = "tile_counter"
#: Logical (BHSD) axis that each size symbol names in a tensor map's ``dims``.
#: Per the ABI, K and V may be described with the Q spellings (Hq, Sq, D):
#: the extent always comes from the tensor itself.
SYMBOL_AXIS = {"B": 0, "Hq": 1, "Hkv": 1, "Sq": 2, "Skv": 2, "D": 3, "Dv": 3}

SWIZZLES = ("none", "32B", "64B", "128B")
L2_PROMOTIONS = ("none", "64B", "128B", "256B")
OOB_FILLS = ("zero", "nan")
INTERLEAVES = ("none",)
PARAM_KINDS = ("tensor_map", "ptr", "stride", "i32", "f32")


def capture_index(tensor: str) -> Optional[int]:
    """N of a ``capture<N>`` tensor name, else None."""
    m = CAPTURE.fullmatch(tensor)
    return int(m.group(1)) if m else None


@dataclasses.dataclass(frozen=True)
class GridDim:
    """One grid dimension: ``min(ceil(symbol / ceildiv) * prod(times), max)``.

    ``times`` and ``max`` describe persistent kernels: the count of work
    units (``ceil(Sq / M) * Hq * B`` query blocks, or with a causal mask
    ``ceil(Sq / 2M) * Hq * B`` pairs of them) bounded by the SMs of the target.
    """

    symbol: str
    ceildiv: int = 1
    times: Tuple[str, ...] = ()
    max: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class TensorMapSpec:
    """How to encode the tensor map of one tensor (innermost dimension first)."""

    tensor: str
    dims: Tuple[str, ...]
    box: Tuple[int, ...]
    swizzle: str
    l2_promotion: str
    oob_fill: str
    interleave: str

    @property
    def axes(self) -> Tuple[int, ...]:
        """The logical BHSD axis of each entry of ``dims``."""
        return tuple(SYMBOL_AXIS[s] for s in self.dims)


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter, in launch order."""

    kind: str
    tensor: Optional[str] = None
    symbol: Optional[str] = None
    dim: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Manifest:
    """A validated manifest. ``path`` is the JSON file it came from, if any."""

    entry: str
    ptx: str
    sm: str
    ptx_version: int
    compiler: str
    config: KernelConfig
    tuning: Mapping[str, int]
    block: Tuple[int, int, int]
    grid: Tuple[GridDim, ...]
    dynamic_smem_bytes: int
    tensor_maps: Mapping[str, TensorMapSpec]
    params: Tuple[ParamSpec, ...]
    path: Optional[Path] = None
    #: The schedule was forced by an option (an ablation variant) rather than
    #: chosen by the compiler's cost model (``schedule.forced``; informative).
    schedule_forced: bool = False
    #: How the kernel applies a linear bias s + G(b, h)·(j − i) of its score
    #: region (``schedule.linear_bias``: "vector", "mma", "weights"); None
    #: when the manifest does not say.
    linear_bias: Optional[str] = None
    #: The weights form (``linear_bias == "weights"``) is exact only where
    #: |G(b, h)| <= this for every batch entry and head; past it the kernel
    #: writes zeros, so the launcher checks the factor first
    #: (``schedule.linear_bias_max_factor``; None for other forms).
    linear_bias_max_factor: Optional[float] = None

    @property
    def ptx_path(self) -> Path:
        """The PTX file, resolved next to the manifest."""
        if self.path is None:
            raise ManifestError(f"manifest of {self.entry!r} was not loaded from a file, "
                                f"so its PTX {self.ptx!r} cannot be located")
        return self.path.parent / self.ptx


class _Reader:
    """Field access with error messages that name the source and the JSON path."""

    def __init__(self, source: str):
        self.source = source

    def error(self, where: str, message: str) -> ManifestError:
        return ManifestError(f"{self.source}: {where}: {message}")

    def field(self, obj: Mapping[str, Any], key: str, kind, where: str, default=dataclasses.MISSING):
        if key not in obj:
            if default is dataclasses.MISSING:
                raise self.error(f"{where}{key}", "missing")
            return default
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(f"{where}{key}", f"expected {kind.__name__}, got {value!r}")
        return value

    def choice(self, obj, key, choices, where, default=dataclasses.MISSING):
        value = self.field(obj, key, str, where, default)
        if value not in choices:
            raise self.error(f"{where}{key}",
                             f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def positive_ints(self, obj, key, where, lo=1, hi=None):
        values = self.field(obj, key, list, where)
        for i, v in enumerate(values):
            if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
                bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
                raise self.error(f"{where}{key}[{i}]", f"expected an integer in {bound}, got {v!r}")
        return tuple(values)


def parse_manifest(obj: Any, source: str = "<manifest>", path: Optional[Path] = None) -> Manifest:
    """Validates a decoded manifest against docs/kernel-abi.md; see the module doc."""
    r = _Reader(source)
    if not isinstance(obj, Mapping):
        raise ManifestError(f"{source}: expected a JSON object, got {type(obj).__name__}")
    fmt = r.field(obj, "format", str, "")
    if fmt != FORMAT:
        raise r.error("format", f"expected {FORMAT!r}, got {fmt!r}")
    version = r.field(obj, "version", int, "")
    if version != VERSION:
        raise r.error("version", f"this fa_t reads manifest version {VERSION}, got {version}")
    entry = r.field(obj, "entry", str, "")
    if not entry:
        raise r.error("entry", "is empty")
    ptx = r.field(obj, "ptx", str, "")
    if not ptx or os.path.basename(ptx) != ptx:
        raise r.error("ptx", f"expected a file name in the manifest's directory, got {ptx!r}")
    sm = r.field(obj, "sm", str, "")
    ptx_version = r.field(obj, "ptx_version", int, "")
    compiler = r.field(obj, "compiler", str, "", "")

    raw_config = r.field(obj, "config", Mapping, "")
    try:
        config = KernelConfig.from_dict(raw_config, "config")
    except ValueError as e:
        raise ManifestError(f"{source}: {e}") from None
    tuning = {k: raw_config[k] for k in TUNING_KEYS if k in raw_config}

    block = r.positive_ints(obj, "block", "")
    if len(block) != 3:
        raise r.error("block", f"expected 3 entries, got {len(block)}")
    threads = block[0] * block[1] * block[2]
    if threads > 1024:
        raise r.error("block", f"{list(block)} is {threads} threads, above the CUDA limit of 1024")

    raw_grid = r.field(obj, "grid", list, "")
    if not 1 <= len(raw_grid) <= 3:
        raise r.error("grid", f"expected 1 to 3 entries, got {len(raw_grid)}")
    grid = []
    for i, g in enumerate(raw_grid):
        where = f"grid[{i}]."
        if not isinstance(g, Mapping):
            raise r.error(f"grid[{i}]", f"expected an object, got {g!r}")
        symbol = r.choice(g, "symbol", INT_SYMBOLS, where)
        ceildiv = r.field(g, "ceildiv", int, where, 1)
        if ceildiv <= 0:
            raise r.error(f"{where}ceildiv", f"expected a positive integer, got {ceildiv}")
        times = r.field(g, "times", list, where, [])
        for j, factor in enumerate(times):
            if factor not in INT_SYMBOLS:
                raise r.error(f"{where}times[{j}]",
                              f"expected one of {', '.join(INT_SYMBOLS)}, got {factor!r}")
        limit = r.field(g, "max", int, where, None)
        if limit is not None and limit <= 0:
            raise r.error(f"{where}max", f"expected a positive integer, got {limit}")
        grid.append(GridDim(symbol, ceildiv, tuple(times), limit))

    smem = r.field(obj, "dynamic_smem_bytes", int, "")
    if smem < 0:
        raise r.error("dynamic_smem_bytes", f"expected >= 0, got {smem}")

    tensor_maps: Dict[str, TensorMapSpec] = {}
    for i, t in enumerate(r.field(obj, "tensor_maps", list, "")):
        tensor_maps_entry = _parse_tensor_map(r, t, f"tensor_maps[{i}]")
        if tensor_maps_entry.tensor in tensor_maps:
            raise r.error(f"tensor_maps[{i}].tensor",
                          f"a second map for tensor {tensor_maps_entry.tensor!r}")
        tensor_maps[tensor_maps_entry.tensor] = tensor_maps_entry

    params = tuple(_parse_param(r, p, f"params[{i}]", tensor_maps)
                   for i, p in enumerate(r.field(obj, "params", list, "")))
    _check_params(r, params, tensor_maps, config)

    schedule = obj.get("schedule", {})
    if not isinstance(schedule, Mapping):
        schedule = {}
    forced = schedule.get("forced", False)
    if not isinstance(forced, bool):
        raise r.error("schedule.forced", f"expected bool, got {forced!r}")
    linear_bias = r.field(schedule, "linear_bias", str, "schedule.", None)
    max_factor = _linear_bias_max_factor(r, schedule, linear_bias)

    return Manifest(entry=entry, ptx=ptx, sm=sm, ptx_version=ptx_version, compiler=compiler,
                    config=config, tuning=tuning, block=block, grid=tuple(grid),
                    dynamic_smem_bytes=smem, tensor_maps=tensor_maps, params=params,
                    path=path, schedule_forced=forced, linear_bias=linear_bias,
                    linear_bias_max_factor=max_factor)


def _linear_bias_max_factor(r: _Reader, schedule: Mapping[str, Any],
                            linear_bias: Optional[str]) -> Optional[float]:
    """``schedule.linear_bias_max_factor``: a positive finite number, required
    by the weights form (the launcher must know where it stops being exact)."""
    where = "schedule.linear_bias_max_factor"
    if "linear_bias_max_factor" not in schedule:
        if linear_bias == "weights":
            raise r.error(where, "missing (a kernel of linear_bias \"weights\" is exact only "
                          "up to a bound on |G|, which the launcher checks)")
        return None
    value = schedule["linear_bias_max_factor"]
    if (not isinstance(value, (int, float)) or isinstance(value, bool)
            or not math.isfinite(value) or value <= 0):
        raise r.error(where, f"expected a positive finite number, got {value!r}")
    return float(value)


def _parse_tensor_map(r: _Reader, t: Any, at: str) -> TensorMapSpec:
    """One entry of ``tensor_maps``: dims name distinct axes of the tensor."""
    if not isinstance(t, Mapping):
        raise r.error(at, f"expected an object, got {t!r}")
    where = at + "."
    tensor = r.choice(t, "tensor", tuple(TENSOR_RANKS), where)
    rank = TENSOR_RANKS[tensor]
    dims = r.field(t, "dims", list, where)
    if len(dims) != rank:
        raise r.error(f"{where}dims", f"expected {rank} entries (one per dimension of "
                      f"{tensor}), got {len(dims)}")
    axes = []
    for j, s in enumerate(dims):
        if s not in SYMBOL_AXIS or SYMBOL_AXIS[s] >= rank:
            valid = [k for k, a in SYMBOL_AXIS.items() if a < rank]
            raise r.error(f"{where}dims[{j}]",
                          f"expected one of {', '.join(valid)} for tensor {tensor}, got {s!r}")
        if SYMBOL_AXIS[s] in axes:
            raise r.error(f"{where}dims[{j}]", f"{s!r} names a dimension already listed")
        axes.append(SYMBOL_AXIS[s])
    box = r.positive_ints(t, "box", where, 1, 256)
    if len(box) != rank:
        raise r.error(f"{where}box", f"expected {rank} entries, got {len(box)}")
    return TensorMapSpec(
        tensor=tensor, dims=tuple(dims), box=box,
        swizzle=r.choice(t, "swizzle", SWIZZLES, where),
        l2_promotion=r.choice(t, "l2_promotion", L2_PROMOTIONS, where, "none"),
        oob_fill=r.choice(t, "oob_fill", OOB_FILLS, where, "zero"),
        interleave=r.choice(t, "interleave", INTERLEAVES, where, "none"))


def _parse_param(r: _Reader, p: Any, at: str, tensor_maps) -> ParamSpec:
    """One entry of ``params``, checked against its kind's fields."""
    if not isinstance(p, Mapping):
        raise r.error(at, f"expected an object, got {p!r}")
    where = at + "."
    kind = r.choice(p, "kind", PARAM_KINDS, where)
    if kind in ("tensor_map", "ptr", "stride"):
        tensor = r.field(p, "tensor", str, where)
        if tensor not in TENSOR_RANKS:
            if kind == "ptr" and (capture_index(tensor) is not None or tensor == TILE_COUNTER):
                return ParamSpec(kind, tensor=tensor)
            why = (f" (a captured tensor is passed as a 'ptr' only, not a {kind!r})"
                   if capture_index(tensor) is not None else "")
            names = ", ".join(TENSOR_RANKS) + (f", capture<N>, {TILE_COUNTER}" if kind == "ptr"
                                               else "")
            raise r.error(f"{where}tensor", f"expected one of {names}, got {tensor!r}{why}")
        if kind == "tensor_map" and tensor not in tensor_maps:
            raise r.error(f"{where}tensor", f"no tensor_maps entry describes tensor {tensor!r}")
        dim = None
        if kind == "stride":
            dim = r.field(p, "dim", int, where)
            if not 0 <= dim < TENSOR_RANKS[tensor]:
                raise r.error(f"{where}dim", f"expected 0..{TENSOR_RANKS[tensor] - 1} "
                              f"(a logical dimension of {tensor}), got {dim}")
        return ParamSpec(kind, tensor=tensor, dim=dim)
    symbols = INT_SYMBOLS if kind == "i32" else FLOAT_SYMBOLS
    return ParamSpec(kind, symbol=r.choice(p, "symbol", symbols, where))


def _check_params(r: _Reader, params, tensor_maps, config: KernelConfig) -> None:
    """Cross-field rules: what the config promises, the parameters must carry."""
    # A tensor's data reaches the kernel as a tensor map or a pointer; a
    # stride alone does not pass it.
    passed = {p.tensor for p in params if p.kind in ("tensor_map", "ptr")}
    mentioned = {p.tensor for p in params if p.tensor}
    symbols = {p.symbol for p in params if p.symbol}
    # The launcher hands capture N the call's Nth captured tensor.
    captures = [p.tensor for p in params if p.tensor and capture_index(p.tensor) is not None]
    if captures != [f"capture{i}" for i in range(len(captures))]:
        raise r.error("params", f"expected the captured tensors' pointers in capture order "
                      f"(capture0, capture1, …), got {', '.join(captures)}")
    if [p.tensor for p in params].count(TILE_COUNTER) > 1:
        raise r.error("params", f"passes {TILE_COUNTER!r} more than once")
    for name in ("q", "k", "v", "o"):
        if name not in passed:
            raise r.error("params", f"no parameter passes tensor {name!r}")
    if "lse" in mentioned and not config.lse:
        raise r.error("params", "passes tensor 'lse' but config.lse is false")
    if config.lse and "lse" not in passed:
        raise r.error("params", "config.lse is true but no parameter passes tensor 'lse'")
    if config.masked and "diag" not in symbols:
        raise r.error("params", "the config has a mask but no parameter passes 'diag'")
    if not symbols & set(FLOAT_SYMBOLS):
        raise r.error("params", "no parameter passes the softmax scale "
                      "('scale' or 'scale_log2e')")
    for name in tensor_maps:
        if name not in {p.tensor for p in params if p.kind == "tensor_map"}:
            raise r.error("tensor_maps", f"tensor {name!r} has a map but no tensor_map parameter")


def load_manifest(path) -> Manifest:
    """Reads and validates ``<name>.json``; the PTX file must exist beside it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError(f"cannot read manifest {path}: {e.strerror}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path}: not valid JSON: {e}") from None
    manifest = parse_manifest(obj, str(path), path.resolve())
    if not manifest.ptx_path.is_file():
        raise ManifestError(f"{path}: ptx: the file {manifest.ptx_path} does not exist")
    return manifest
