"""``torch.ops.fa_t.attention_fwd`` and ``attention_mods_fwd``: fa-t's forward as
torch.library custom ops.

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

Score / mask modifications (:mod:`fa_t.mods`) compile through a second op::

    fa_t::attention_mods_fwd(Tensor q, Tensor k, Tensor v, Tensor[] captures, str key,
                             bool causal, float scale, SymInt window_left,
                             SymInt window_right, SymInt diag,
                             bool return_lse) -> (Tensor, Tensor)

``captures`` are the tensors the functions read, in the regions' capture
order (a block mask's ranges last), and ``key`` names a process-wide
registry entry (:class:`Modifications`) with what else the implementations
need: the regions text, which the CUDA implementation passes to the cached
path (the kernel of those regions, reading ``captures``), and the traced fx
graphs, which the CPU implementation runs with ``captures`` in place of the
tensors they were traced with. :func:`mods_captures`, which
``fa_t.attention`` calls while dynamo traces it, finds the captures (so they
are graph inputs, never constants) and registers the key: the functions are
rebuilt outside dynamo's view with stand-ins for their tensors and traced as
eager calls trace them (``torch.compiler.assume_constant_result``), and the
key hashes what was traced, so another function never reuses an entry.
Eager calls with modifications do not take this op.

Importing this module imports torch and registers the ops (once per process).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import sys
import types
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.fx

from . import checks, mods
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
        scores = mods.apply_mods(scores.view(B, Hq, Sq, Skv), score_mod, mask_mod, kv_ranges)
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
                      want_lse: bool = True, modifications: Optional[Modifications] = None,
                      captures=()) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """One attention on q's device, outside the dispatcher; returns (O, LSE or None).

    CUDA tensors run the fa-t kernel through the plan cache (:func:`fa_t.api._forward`;
    LSE float32), CPU tensors :func:`attention_math` (LSE in its compute dtype).
    Inputs whose strides or alignment the kernels refuse are copied first (a
    compiled graph cannot be asked to change its layouts); the copy is made
    only after the cached path refused them, so aligned inputs cost no check.
    ``modifications`` (:class:`Modifications`) adds score / mask
    modifications that read ``captures``: the kernel of their regions, or
    their graphs on the CPU.
    """
    if q.device.type == "cuda":
        from . import api
        window = tuple(window)
        regions, factor = "", None
        if modifications is not None:
            # As eager calls do: the kernel reads each capture as a row-major array.
            regions, captures = modifications.regions, tuple(t.contiguous() for t in captures)
            factor = modifications.linear_bias_factor(captures)
        try:
            return api._forward(q, k, v, causal=causal, window=window, diag=diag, scale=scale,
                                want_lse=want_lse, regions=regions, captures=captures,
                                linear_bias_factor=factor)
        except LayoutError:
            q, k, v = (_tma_ready(t, n) for t, n in zip((q, k, v), ("q", "k", "v")))
            return api._forward(q, k, v, causal=causal, window=window, diag=diag, scale=scale,
                                want_lse=want_lse, regions=regions, captures=captures,
                                linear_bias_factor=factor)
    check_cpu_inputs(q, k, v)
    score_mod, mask_mod, kv_ranges = (None, None, None) if modifications is None \
        else modifications.bind(captures)
    o, lse = attention_math(q, k, v, causal=causal, scale=scale, window=tuple(window),
                            diag=diag, score_mod=score_mod, mask_mod=mask_mod,
                            kv_ranges=kv_ranges)
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


# ---- score / mask modifications under torch.compile -----------------------------

@dataclasses.dataclass(frozen=True)
class Modifications:
    """What ``fa_t::attention_mods_fwd`` needs of one set of modifications
    besides its captured tensors, registered under a key while dynamo traces
    (:func:`mods_captures`)."""

    #: The score / mask regions text (:func:`fa_t.mods.attention_regions`):
    #: the Hopper kernel's.
    regions: str
    #: Per function (None where the call has none): its traced fx graph and,
    #: per ``get_attr`` node, the index of the capture it reads.
    score: Optional[Tuple[torch.fx.GraphModule, Dict[str, int]]]
    mask: Optional[Tuple[torch.fx.GraphModule, Dict[str, int]]]
    #: Whether the last capture is a block mask's ranges (``kv_ranges``).
    ranges: bool

    def bind(self, captures):
        """(score_mod, mask_mod, kv_ranges) for :func:`attention_math`: the
        traced functions reading ``captures``, this call's tensors."""
        return (_bind(self.score, captures), _bind(self.mask, captures),
                captures[-1] if self.ranges else None)

    def linear_bias_factor(self, captures) -> Optional[Callable]:
        """The ``linear_bias_factor`` of :func:`fa_t.api._forward` for a call
        reading ``captures`` (None without a score function): the score
        function is bound only when the launcher evaluates it."""
        if self.score is None:
            return None
        score = self.score
        return lambda B, H, device: mods.linear_bias_factor(_bind(score, captures), B, H,
                                                            device)


class _Rebound(torch.fx.Interpreter):
    """Runs a traced function with other tensors in place of those it read."""

    def __init__(self, graph, tensors: Dict[str, torch.Tensor]):
        super().__init__(graph)
        self.tensors = tensors

    def get_attr(self, target, args, kwargs):
        return self.tensors[target]


def _bind(traced, captures):
    if traced is None:
        return None
    graph, reads = traced
    tensors = {target: captures[i] for target, i in reads.items()}
    return lambda *args: _Rebound(graph, tensors).run(*args)


#: Modifications by key, for the life of the process: a compiled graph names
#: its entry by key, and each key is traced again when a process compiles.
_registered: Dict[str, Modifications] = {}

_ERRORS = {"NotImplementedError": NotImplementedError, "TypeError": TypeError}


def _static(x) -> str:
    """``repr(x)``. Formatting needs the value, so dynamo specializes (and
    guards on) a number it would otherwise trace as symbolic: a closure's
    float that changed between calls, a dynamic size."""
    return f"{x!r}"


def _function_spec(fn, name: str, tensors: List[torch.Tensor]):
    """``fn`` as (code, module, cells), each closure cell a tensor (appended
    to ``tensors``; its shape and dtype), a function (recursively) or a
    value (its type and repr): constants for :func:`_register`."""
    if fn is None:
        return None
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"under torch.compile, {name} must be a Python function (def or "
                        f"lambda), got {type(fn).__name__}")
    cells = []
    for cell in fn.__closure__ or ():
        x = cell.cell_contents
        if isinstance(x, torch.Tensor):
            cells.append(("tensor", len(tensors), tuple(_static(n) for n in x.shape), x.dtype))
            tensors.append(x)
        elif isinstance(x, types.FunctionType):
            cells.append(("function", _function_spec(x, name, tensors)))
        elif x is None or isinstance(x, (bool, int, float, str)):
            cells.append(("value", type(x).__name__, _static(x)))
        else:
            raise TypeError(f"under torch.compile, {name} may read tensors, numbers, strings "
                            f"and functions from its closure, got a {type(x).__name__}")
    return fn.__code__, fn.__module__, tuple(cells)


def mods_captures(score_mod: Optional[Callable], mask_mod: Optional[Callable],
                  kv_ranges: Optional[torch.Tensor]) -> Tuple[str, List[torch.Tensor]]:
    """The key and the captured tensors of ``fa_t::attention_mods_fwd`` for
    these modifications (``kv_ranges``: a block mask's ranges, the last capture).

    Written for dynamo to trace: the tensors come from the functions'
    closures (recursively through functions they hold) and their modules'
    globals as dynamo reads them, so they are graph inputs (or values of the
    graph), never constants; numbers, strings, the code and the tensors'
    shapes and dtypes make a constant description that :func:`_register`
    traces outside dynamo's view. Dynamo guards on all of it, so another
    function or closure value is a new trace with its own key.
    """
    tensors: List[torch.Tensor] = []
    spec = (_function_spec(score_mod, "score_mod", tensors),
            _function_spec(mask_mod, "mask_mod", tensors),
            None if kv_ranges is None else tuple(_static(n) for n in kv_ranges.shape))
    key, sources, numbers, error = _register(spec)
    if error is not None:
        raise _ERRORS[error[0]](error[1])
    for module, name in numbers:  # read for dynamo to guard on them
        _static(getattr(sys.modules[module], name))
    return key, [kv_ranges if s is None else tensors[s] if isinstance(s, int)
                 else getattr(sys.modules[s[0]], s[1]) for s in sources]


def _rebuild(spec, stand_ins: Dict[int, torch.Tensor], namespaces: List[dict]):
    """The function of a :func:`_function_spec`, each closure tensor a meta
    tensor of its shape and dtype (kept in ``stand_ins`` by index)."""
    code, module, cells = spec
    if module not in sys.modules:
        raise NotImplementedError(f"under torch.compile, a modification's module must be "
                                  f"imported: {code.co_name} is in {module!r}")
    namespace = vars(sys.modules[module])
    namespaces.append(namespace)
    values = []
    for cell in cells:
        if cell[0] == "tensor":
            _, index, shape, dtype = cell
            value = stand_ins[index] = torch.empty(tuple(map(int, shape)), dtype=dtype,
                                                   device="meta")
        elif cell[0] == "function":
            value = _rebuild(cell[1], stand_ins, namespaces)
        else:
            value = float(cell[2]) if cell[1] == "float" else ast.literal_eval(cell[2])
        values.append(types.CellType(value))
    return types.FunctionType(code, namespace, code.co_name, None, tuple(values))


@torch.compiler.assume_constant_result
def _register(spec):
    """Traces the modifications of a :func:`mods_captures` description, as
    an eager call traces the user's functions, and registers them; returns
    (key, sources, numbers, error). Dynamo runs it while tracing and keeps
    the result as a constant of the graph.

    ``sources`` gives each capture of the regions, in order: the index of a
    closure tensor, (module, name) of a global one, None for the ranges;
    ``numbers`` the (module, name) of the globals of numbers the code reads
    (baked into the regions, so dynamo must guard on them). ``error`` is
    (exception type, message) of a function fa-t cannot trace, which
    :func:`mods_captures` raises where dynamo sees it.
    """
    score_spec, mask_spec, ranges_shape = spec
    stand_ins: Dict[int, torch.Tensor] = {}
    namespaces: List[dict] = []
    ranges = None if ranges_shape is None else torch.empty(
        tuple(map(int, ranges_shape)), dtype=torch.int32, device="meta")
    try:
        score = _rebuild(score_spec, stand_ins, namespaces) if score_spec else None
        mask = _rebuild(mask_spec, stand_ins, namespaces) if mask_spec else None
        regions = mods.trace_regions(score, mask, ranges)
        text, union = mods.regions_text(regions, ranges)
        index = {id(t): i for i, t in stand_ins.items()}
        sources = []
        for t in union:
            if t is ranges:
                sources.append(None)
            elif id(t) in index:
                sources.append(index[id(t)])
            else:
                sources.append(_global_name(t, namespaces))
    except (NotImplementedError, TypeError) as e:
        return None, (), (), (type(e).__name__, str(e))
    numbers = tuple(sorted({(module, n) for code, module in _codes(score_spec, mask_spec)
                            for n in code.co_names
                            if type(getattr(sys.modules[module], n, None)) in (bool, int, float)}))
    traced = {r.kind: r for r in regions}
    position = {id(t): i for i, t in enumerate(union)}

    def graph(fn, kind):
        if fn is None:  # a mask region of ranges alone keeps every key: none on the CPU
            return None
        g = traced[kind].graph
        return g, {n.target: position[id(getattr(g, n.target))] for n in g.graph.nodes
                   if n.op == "get_attr"}
    entry = Modifications(text, graph(score, "score"), graph(mask, "mask"), ranges is not None)
    # The key names exactly what runs: the regions and, for the CPU, the graphs.
    digest = hashlib.sha256(text.encode())
    for part in (entry.score, entry.mask):
        digest.update(b"\0" + (part[0].code.encode() if part else b""))
    key = digest.hexdigest()[:32]
    _registered.setdefault(key, entry)
    return key, tuple(sources), numbers, None


def _codes(*specs):
    """(code, module) of :func:`_function_spec` descriptions, nested ones included."""
    for spec in specs:
        if spec is not None:
            yield spec[0], spec[1]
            yield from _codes(*(c[1] for c in spec[2] if c[0] == "function"))


def _global_name(t: torch.Tensor, namespaces: List[dict]) -> Tuple[str, str]:
    """(module, name) of a global tensor a traced function read."""
    for g in namespaces:
        for name, value in g.items():
            if value is t:
                return g["__name__"], name
    raise NotImplementedError(
        f"under torch.compile, a modification may read tensors of its closure or of its "
        f"module's globals; one read a {t.dtype} tensor of shape {tuple(t.shape)} from "
        f"elsewhere (an attribute, or computed from a captured tensor): capture it instead")


def registered(key: str) -> Modifications:
    """The modifications registered under ``key`` (:func:`mods_captures`)."""
    try:
        return _registered[key]
    except KeyError:
        raise RuntimeError(f"fa_t::attention_mods_fwd: no modifications are registered under "
                           f"{key!r}; run the graph in a process that traced it") from None


@torch.library.custom_op("fa_t::attention_mods_fwd", mutates_args=(),
                         device_types=("cuda", "cpu"))
def attention_mods_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       captures: List[torch.Tensor], key: str, causal: bool, scale: float,
                       window_left: int, window_right: int, diag: int,
                       return_lse: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """fa-t attention forward with the score / mask modifications registered
    under ``key``, reading ``captures`` (see the module doc)."""
    o, lse = attention_forward(q, k, v, causal=causal, scale=scale,
                               window=(window_left, window_right), diag=diag,
                               want_lse=return_lse, modifications=registered(key),
                               captures=captures)
    return o, (lse.to(torch.float32) if return_lse else _no_lse(q))


@attention_mods_fwd.register_fake
def _attention_mods_fwd_fake(q, k, v, captures, key, causal, scale, window_left, window_right,
                             diag, return_lse):
    return _attention_fwd_fake(q, k, v, causal, scale, window_left, window_right, diag,
                               return_lse)
