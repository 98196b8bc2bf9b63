"""Score and mask modifications in FlexAttention's style, traced into fat IR.

A ``score_mod(score, b, h, q_idx, kv_idx)`` returns the modified scaled score;
a ``mask_mod(b, h, q_idx, kv_idx)`` returns whether key ``kv_idx`` stays
visible to query ``q_idx``. :func:`trace` turns such a function (with
torch.fx) into the body of a ``score`` or ``mask`` region of
``fat.attention`` (the dialect's description gives the semantics), tensors it
reads becoming ``captures(...)``; :func:`apply_mods` evaluates the same
functions with torch on whole score tensors (the CPU path of
:func:`fa_t.attention`).

Supported in a traced function: ``+ - * /`` and unary ``-`` on scores and
indices (indices are integers; mixing them with a float converts them),
``//`` and ``%`` on indices (Python's floor semantics),
comparisons, ``& | ~`` on booleans, ``torch.where``, ``torch.tanh``,
``torch.exp``, ``torch.abs``, ``torch.sigmoid``, Python numbers, and reading
a tensor by index expressions (``slopes[h]``, ``table[h, kv_idx - q_idx]``).
Anything else raises :class:`NotImplementedError` naming the operation.

The helpers :func:`softcap`, :func:`alibi`, :func:`document_mask` and
:func:`prefix_lm` build the common ones; :func:`block_mask` computes a mask's
key ranges per query group (:class:`BlockMask`), with which the kernel skips
key blocks no row of a tile sees (block sparsity, ``kv_ranges``) and, on key
blocks the table promises the mask keeps for every row, the mask itself.
"""

from __future__ import annotations

import collections
import dataclasses
import operator
import threading
import types
from typing import Callable, Dict, List, Optional, Tuple

import torch

SCORE_ARGS = ("score", "b", "h", "q_idx", "kv_idx")
MASK_ARGS = ("b", "h", "q_idx", "kv_idx")

#: torch dtypes a captured tensor may have, and their MLIR element types.
CAPTURE_TYPES = {torch.float32: "f32", torch.int32: "i32", torch.int64: "i64",
                 torch.bool: "i1"}


@dataclasses.dataclass
class Region:
    """One traced region: its body (MLIR text, block arguments named as in
    :data:`SCORE_ARGS` / :data:`MASK_ARGS` and ``%capN``), the tensors it
    reads, in capture order, and the torch.fx graph it was written from
    (whose ``get_attr`` nodes read those tensors)."""

    kind: str                    # "score" | "mask"
    body: str
    captures: List[torch.Tensor]
    graph: torch.fx.GraphModule = dataclasses.field(repr=False)

    def capture_types(self) -> List[str]:
        return [tensor_type(t) for t in self.captures]


def tensor_type(t: torch.Tensor) -> str:
    """``tensor<…>`` of a captured tensor."""
    if t.dtype not in CAPTURE_TYPES:
        raise TypeError(f"a captured tensor must be one of "
                        f"{', '.join(map(str, CAPTURE_TYPES))}, got {t.dtype}")
    return f"tensor<{''.join(f'{d}x' for d in t.shape)}{CAPTURE_TYPES[t.dtype]}>"


#: An emitted SSA value: its name and kind ("index", "f32", "i1", …).
Val = collections.namedtuple("Val", "name kind")


class _Emitter:
    """Writes one region body of :class:`Val` values."""

    BINARY_F = {operator.add: "arith.addf", operator.sub: "arith.subf",
                operator.mul: "arith.mulf", operator.truediv: "arith.divf"}
    BINARY_I = {operator.add: "arith.addi", operator.sub: "arith.subi",
                operator.mul: "arith.muli"}
    COMPARE = {operator.lt: ("slt", "olt"), operator.le: ("sle", "ole"),
               operator.gt: ("sgt", "ogt"), operator.ge: ("sge", "oge"),
               operator.eq: ("eq", "oeq"), operator.ne: ("ne", "une")}
    LOGICAL = {operator.and_: "arith.andi", operator.or_: "arith.ori"}
    UNARY_F = {torch.tanh: "math.tanh", torch.exp: "math.exp", torch.abs: "math.absf"}

    def __init__(self, kind: str):
        self.kind = kind
        self.lines: List[str] = []
        self.count = 0
        self.captures: List[torch.Tensor] = []
        self.capture_names: Dict[int, str] = {}

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def emit(self, text: str, kind: str) -> Tuple[str, str]:
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        return Val(name, kind)

    def constant(self, x) -> Tuple[str, str]:
        if isinstance(x, bool):
            return self.emit(f"arith.constant {'true' if x else 'false'}", "i1")
        if isinstance(x, int):
            return self.emit(f"arith.constant {x} : index", "index")
        if isinstance(x, float):
            return self.emit(f"arith.constant {x!r} : f32", "f32")
        raise NotImplementedError(f"{self.kind}_mod: the constant {x!r} of type "
                                  f"{type(x).__name__} is not supported")

    def to_f32(self, v) -> Tuple[str, str]:
        name, kind = v
        if kind == "f32":
            return v
        if kind == "index":
            wide, _ = self.emit(f"arith.index_cast {name} : index to i64", "i64")
            return self.emit(f"arith.sitofp {wide} : i64 to f32", "f32")
        raise NotImplementedError(f"{self.kind}_mod: a boolean used as a number")

    def capture(self, t: torch.Tensor) -> str:
        key = id(t)
        if key not in self.capture_names:
            self.capture_names[key] = f"%cap{len(self.captures)}"
            self.captures.append(t)
        return self.capture_names[key]

    def extract(self, t: torch.Tensor, indices) -> Tuple[str, str]:
        if isinstance(indices, Val):
            indices = (indices,)
        if len(indices) != t.dim():
            raise NotImplementedError(f"{self.kind}_mod: a captured tensor of shape "
                                      f"{tuple(t.shape)} is read with {len(indices)} "
                                      f"indices; read one element")
        names = []
        for i in indices:
            if i[1] != "index":
                raise NotImplementedError(f"{self.kind}_mod: a tensor index must be an "
                                          f"integer expression of b, h, q_idx, kv_idx")
            names.append(i[0])
        ty = tensor_type(t)
        elt = CAPTURE_TYPES[t.dtype]
        value = self.emit(f"tensor.extract {self.capture(t)}[{', '.join(names)}] : {ty}", elt)
        if elt in ("i32", "i64"):  # integers read from a table compute as indices
            return self.emit(f"arith.index_cast {value[0]} : {elt} to index", "index")
        return value


def _supported() -> str:
    return ("+, -, *, /, // and % (integers), unary -, comparisons, &, |, ~, torch.where, torch.tanh, "
            "torch.exp, torch.abs, torch.sigmoid, numbers and tensor[index]")


def trace(fn: Callable, kind: str) -> Region:
    """Traces ``fn`` (a score_mod when ``kind`` is "score", else a mask_mod)
    into a region body. Raises NotImplementedError naming an unsupported
    operation."""
    import torch.fx as fx
    arg_names = SCORE_ARGS if kind == "score" else MASK_ARGS
    try:
        graph_module = fx.symbolic_trace(fn)
    except Exception as e:  # fx refuses data-dependent Python control flow
        raise NotImplementedError(f"{kind}_mod could not be traced: {e} (use torch.where "
                                  f"instead of if/else on its arguments)") from None
    em = _Emitter(kind)
    values: Dict[str, Val] = {}
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(arg_names):
        raise TypeError(f"a {kind}_mod takes ({', '.join(arg_names)}), got a function of "
                        f"{len(placeholders)} arguments")
    for node, name in zip(placeholders, arg_names):
        values[node.name] = Val(f"%{name}", "f32" if name == "score" else "index")
    tensors: Dict[str, torch.Tensor] = {}

    def arg(a):
        if isinstance(a, fx.Node):
            if a.name in tensors:
                return tensors[a.name]
            return values[a.name]
        if isinstance(a, (bool, int, float)):
            return em.constant(a)
        if isinstance(a, tuple):
            return tuple(arg(x) for x in a)
        raise NotImplementedError(f"{kind}_mod: the argument {a!r} is not supported")

    result = None
    for node in graph_module.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "get_attr":
            tensors[node.name] = getattr(graph_module, node.target)
            continue
        if node.op == "output":
            out = node.args[0]
            if isinstance(out, (tuple, list)):
                what = "tuple" if isinstance(out, tuple) else "list"
                raise NotImplementedError(f"{kind}_mod must return one value, got a "
                                          f"{what} of {len(out)}")
            result = arg(out)
            break
        target = node.target
        if node.op == "call_method" and target == "__getitem__" or target is operator.getitem:
            base = node.args[0]
            if not (isinstance(base, fx.Node) and base.name in tensors):
                raise NotImplementedError(f"{kind}_mod: indexing is supported on captured "
                                          f"tensors only")
            values[node.name] = em.extract(tensors[base.name], arg(node.args[1]))
            continue
        if node.op not in ("call_function", "call_method") or node.kwargs:
            raise NotImplementedError(f"{kind}_mod: {node.op} {target} is not supported "
                                      f"(supported: {_supported()})")
        args = [arg(a) for a in node.args]
        values[node.name] = _apply(em, kind, target, args)
    if result is None or isinstance(result, torch.Tensor):
        raise NotImplementedError(f"{kind}_mod must return an expression of its arguments")
    want = "f32" if kind == "score" else "i1"
    if kind == "score":
        result = em.to_f32(result)
    elif result[1] != "i1":
        raise TypeError(f"a mask_mod must return a boolean, got a {result[1]} expression")
    em.lines.append(f"  fat.yield {result[0]} : {want}")
    return Region(kind, "\n".join(em.lines), em.captures, graph_module)


def _apply(em: _Emitter, kind: str, target, args) -> Tuple[str, str]:
    """One fx node's op on emitted values."""
    if target in (operator.neg, torch.neg, "neg") and len(args) == 1:
        zero = em.constant(0.0 if args[0][1] == "f32" else 0)
        target, args = operator.sub, [zero, args[0]]
    if target in (operator.invert, "logical_not", torch.logical_not) and len(args) == 1:
        if args[0][1] != "i1":
            raise NotImplementedError(f"{kind}_mod: ~ on a number")
        true = em.constant(True)
        return em.emit(f"arith.xori {args[0][0]}, {true[0]} : i1", "i1")
    if target in (operator.mod, operator.floordiv) and len(args) == 2:
        (a, ka), (b, kb) = args
        if not ka == kb == "index":
            raise NotImplementedError(f"{kind}_mod: % and // take integer expressions")
        # Python's floor semantics: q = ⌊a / b⌋, a % b = a − q·b.
        q = em.emit(f"arith.floordivsi {a}, {b} : index", "index")
        if target is operator.floordiv:
            return q
        qb = em.emit(f"arith.muli {q.name}, {b} : index", "index")
        return em.emit(f"arith.subi {a}, {qb.name} : index", "index")
    if target in _Emitter.BINARY_F and len(args) == 2:
        (a, ka), (b, kb) = args
        if ka == kb == "index" and target in _Emitter.BINARY_I:
            return em.emit(f"{_Emitter.BINARY_I[target]} {a}, {b} : index", "index")
        a, b = em.to_f32(args[0])[0], em.to_f32(args[1])[0]
        return em.emit(f"{_Emitter.BINARY_F[target]} {a}, {b} : f32", "f32")
    if target in _Emitter.COMPARE and len(args) == 2:
        ipred, fpred = _Emitter.COMPARE[target]
        if args[0][1] == args[1][1] == "index":
            return em.emit(f"arith.cmpi {ipred}, {args[0][0]}, {args[1][0]} : index", "i1")
        if args[0][1] == args[1][1] == "i1" and target in (operator.eq, operator.ne):
            return em.emit(f"arith.cmpi {ipred}, {args[0][0]}, {args[1][0]} : i1", "i1")
        a, b = em.to_f32(args[0])[0], em.to_f32(args[1])[0]
        return em.emit(f"arith.cmpf {fpred}, {a}, {b} : f32", "i1")
    if target in _Emitter.LOGICAL and len(args) == 2:
        if args[0][1] != "i1" or args[1][1] != "i1":
            raise NotImplementedError(f"{kind}_mod: & and | take booleans")
        return em.emit(f"{_Emitter.LOGICAL[target]} {args[0][0]}, {args[1][0]} : i1", "i1")
    if target in _Emitter.UNARY_F and len(args) == 1:
        x = em.to_f32(args[0])[0]
        return em.emit(f"{_Emitter.UNARY_F[target]} {x} : f32", "f32")
    if target is torch.sigmoid and len(args) == 1:  # 1 / (1 + exp(−x))
        x = em.to_f32(args[0])[0]
        neg = em.emit(f"arith.negf {x} : f32", "f32")[0]
        e = em.emit(f"math.exp {neg} : f32", "f32")[0]
        one = em.constant(1.0)[0]
        d = em.emit(f"arith.addf {one}, {e} : f32", "f32")[0]
        return em.emit(f"arith.divf {one}, {d} : f32", "f32")
    if target is torch.where and len(args) == 3:
        cond, a, b = args
        if cond[1] != "i1":
            raise NotImplementedError(f"{kind}_mod: torch.where needs a boolean condition")
        if a[1] == b[1] == "i1":
            return em.emit(f"arith.select {cond[0]}, {a[0]}, {b[0]} : i1", "i1")
        a, b = em.to_f32(a)[0], em.to_f32(b)[0]
        return em.emit(f"arith.select {cond[0]}, {a}, {b} : f32", "f32")
    name = getattr(target, "__name__", str(target))
    raise NotImplementedError(f"{kind}_mod: {name} is not supported (supported: "
                              f"{_supported()})")


def _always(b, h, q_idx, kv_idx):
    """The mask region of a call with key ranges and no mask_mod."""
    return True


#: What traces of functions gave — attention_regions' text and captures, by
#: what they depend on (:func:`_regions_key`), and check_traceable's
#: success — most recent last. A torch.fx trace costs ~0.7 ms, which an
#: eager call would otherwise pay every time; an entry keeps its functions'
#: tensors alive, hence the bound.
_TRACED: "collections.OrderedDict[tuple, Tuple[str, List[torch.Tensor]]]" = \
    collections.OrderedDict()
TRACED_MAX = 64
_traced_lock = threading.Lock()


def _value_key(x, depth: int):
    """What a traced region depends on in one value its function reads: a
    tensor's identity, shape, dtype and device (its data is read at run
    time, the text names its type), a number's or string's value, a
    module's name, a builtin's identity, a function's own key
    (:func:`_function_key`); None for anything else, which makes the
    function one that is traced at every call."""
    if isinstance(x, torch.Tensor):
        return ("tensor", id(x), tuple(x.shape), x.dtype, x.device)
    if isinstance(x, float):  # repr tells −0.0 from 0.0, and NaN equals itself
        return ("value", "float", repr(x))
    if x is None or isinstance(x, (bool, int, str)):
        return ("value", type(x).__name__, x)
    if isinstance(x, types.ModuleType):
        return ("module", x.__name__)
    if isinstance(x, types.BuiltinFunctionType):
        return ("builtin", id(x))
    if isinstance(x, types.FunctionType):
        return _function_key(x, depth + 1)
    return None


def _global_names(code: types.CodeType):
    """The names ``code`` and the code objects nested in it may read as globals."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _function_key(fn, depth: int = 0) -> Optional[tuple]:
    """Everything a trace of ``fn`` reads besides its arguments — its code,
    its closure, its defaults and the globals its code names — as a
    hashable key, or None where some value has none (:func:`_value_key`),
    or ``fn`` is not a plain Python function (a bound method, a callable
    object: its attributes are not followed)."""
    if not isinstance(fn, types.FunctionType) or depth > 8 or fn.__kwdefaults__:
        return None
    parts = [fn.__code__]
    try:
        values = [c.cell_contents for c in fn.__closure__ or ()]
    except ValueError:  # a cell not yet bound
        return None
    values += list(fn.__defaults__ or ())
    g = fn.__globals__
    names = sorted({n for n in _global_names(fn.__code__) if n in g})
    values += [g[n] for n in names]
    parts.append(tuple(names))
    for x in values:
        k = _value_key(x, depth)
        if k is None:
            return None
        parts.append(k)
    return tuple(parts)


def _regions_key(score_mod, mask_mod, kv_ranges) -> Optional[tuple]:
    keys = [None if f is None else _function_key(f) for f in (score_mod, mask_mod)]
    if any(k is None and f is not None for k, f in zip(keys, (score_mod, mask_mod))):
        return None
    ranges = None if kv_ranges is None else (tuple(kv_ranges.shape), kv_ranges.dtype)
    return (*keys, ranges)


def attention_regions(score_mod: Optional[Callable] = None,
                      mask_mod: Optional[Callable] = None,
                      kv_ranges: Optional[torch.Tensor] = None
                      ) -> Tuple[str, List[torch.Tensor]]:
    """The ``score {…} mask {…}`` text of a fat.attention for these functions
    (each region's block arguments end with every capture, ``%cap0:
    tensor<…>, …``; the caller passes them in ``captures(...)``, see
    :func:`fa_t.jit.jit_input_mlir`), and the captured tensors in order.

    ``kv_ranges`` (a :class:`BlockMask`'s ``ranges``, int32 [B, G, 2, 4 or
    6]: key j of a row in group g is visible iff ``first <= j < end`` and
    the mask region holds; [full_first, full_end) only promises the region
    true there, so the kernel may skip it, and [hole_first, hole_end) that no
    row sees those keys, so the kernel may skip their blocks) is captured last and named by the op's
    ``{kv_ranges = N : i64}`` attribute, written after the regions; a mask
    region is then always present (one that keeps every key when
    ``mask_mod`` is None).

    Functions traced before with the same code, closure, defaults and
    globals (:func:`_function_key`: the same tensors, numbers equal) give
    the text and captures of that trace without tracing again; the ranges'
    tensor may differ between calls, only its shape is in the text."""
    key = _regions_key(score_mod, mask_mod, kv_ranges)
    hit = _traced_get(("regions", key))
    if hit is not None:
        text, captures = hit
        return text, list(captures) if kv_ranges is None else [*captures[:-1], kv_ranges]
    text, captures = regions_text(trace_regions(score_mod, mask_mod, kv_ranges), kv_ranges)
    _traced_put(("regions", key), (text, list(captures)))
    return text, captures


def check_traceable(fn: Callable, kind: str) -> None:
    """:func:`trace`'s refusal of ``fn`` (NotImplementedError or TypeError
    naming what it cannot take), without tracing again a function traced
    before with the same key (:func:`_function_key`)."""
    key = ("traceable", kind, _function_key(fn))
    if _traced_get(key) is None:
        trace(fn, kind)
        _traced_put(key, True)


def _traced_get(key):
    """The :data:`_TRACED` entry of ``key`` (None: none, or a key whose
    function has no :func:`_function_key`), now the most recent."""
    if key[-1] is None:
        return None
    with _traced_lock:
        hit = _TRACED.get(key)
        if hit is not None:
            _TRACED.move_to_end(key)
        return hit


def _traced_put(key, value) -> None:
    if key[-1] is None:
        return
    with _traced_lock:
        _TRACED[key] = value
        while len(_TRACED) > TRACED_MAX:
            _TRACED.popitem(last=False)


def trace_regions(score_mod: Optional[Callable], mask_mod: Optional[Callable],
                  kv_ranges: Optional[torch.Tensor] = None) -> List[Region]:
    """The traced regions of :func:`attention_regions` (score first)."""
    if kv_ranges is not None and mask_mod is None:
        mask_mod = _always
    return [trace(fn, kind) for fn, kind in ((score_mod, "score"), (mask_mod, "mask"))
            if fn is not None]


def regions_text(regions: List[Region], kv_ranges: Optional[torch.Tensor] = None
                 ) -> Tuple[str, List[torch.Tensor]]:
    """:func:`attention_regions` of regions already traced."""
    # One capture list for both regions: rename each region's %capN to its
    # position in the union.
    union: List[torch.Tensor] = []
    texts = []
    for r in regions:
        body = r.body
        for old_index, t in reversed(list(enumerate(r.captures))):
            if not any(t is u for u in union):
                union.append(t)
            new_index = next(i for i, u in enumerate(union) if u is t)
            body = body.replace(f"%cap{old_index}[", f"%cap_{new_index}[")
        texts.append((r.kind, body.replace("%cap_", "%cap")))
    ranges_index = None
    if kv_ranges is not None:
        ranges_index = len(union)
        union.append(kv_ranges)
    types = [tensor_type(t) for t in union]
    tail = "".join(f", %cap{i}: {ty}" for i, ty in enumerate(types))
    out = ""
    for kind, body in texts:
        head = ("%score: f32, " if kind == "score" else "") + \
            "%b: index, %h: index, %q_idx: index, %kv_idx: index"
        out += f" {kind} {{\n^bb0({head}{tail}):\n{body}\n}}"
    if ranges_index is not None:
        out += f" {{kv_ranges = {ranges_index} : i64}}"
    return out, union


def _broadcast_result(value, shape, device) -> torch.Tensor:
    """What a score or mask function returned on broadcast index tensors —
    a tensor of broadcastable shape, or a plain number — as a ``shape`` view
    on ``device`` (not a copy: its elements may share memory)."""
    return torch.broadcast_to(torch.as_tensor(value, device=device), shape)


def apply_mods(scores: torch.Tensor, score_mod=None, mask_mod=None,
               kv_ranges: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``scores`` [B, H, Sq, Skv] (scaled) after ``score_mod`` and with −inf
    where ``mask_mod`` is false, evaluated with torch on broadcast index
    tensors (the functions see b [B,1,1,1], h [1,H,1,1], q_idx [1,1,Sq,1],
    kv_idx [1,1,1,Skv]); with ``kv_ranges`` (a :class:`BlockMask`'s
    ranges) also −inf outside each query group's key range [first, end).
    The full range [full_first, full_end) and a hole play no part: they are
    promises that ``mask_mod`` holds there, or that no row sees those keys
    (:meth:`BlockMask.check_full_ranges`), which let the kernel skip work,
    not changes of the result."""
    B, H, Sq, Skv = scores.shape
    dev = scores.device
    b = torch.arange(B, device=dev).view(B, 1, 1, 1)
    h = torch.arange(H, device=dev).view(1, H, 1, 1)
    q = torch.arange(Sq, device=dev).view(1, 1, Sq, 1)
    k = torch.arange(Skv, device=dev).view(1, 1, 1, Skv)
    if score_mod is not None:
        # A new tensor of the scores' shape and dtype, whatever the function
        # returns: a number, an integer tensor, one broadcast over some
        # indices (a term of the key alone: its expanded view shares memory
        # across rows, which the caller's in-place masking would overwrite),
        # or a captured tensor itself.
        new = torch.empty_like(scores)
        new.copy_(_broadcast_result(score_mod(scores, b, h, q, k), scores.shape, dev))
        scores = new
    if mask_mod is not None:
        keep = _broadcast_result(mask_mod(b, h, q, k), scores.shape, dev)
        scores = scores.masked_fill(~keep, float("-inf"))
    if kv_ranges is not None:
        scores = scores.masked_fill(~range_mask(kv_ranges, Sq, Skv).unsqueeze(1),
                                    float("-inf"))
    return scores


def linear_bias_factor(score_mod: Callable, B: int, H: int, device) -> torch.Tensor:
    """G [B, H] float32 of a linear bias ``score_mod`` = s + G(b, h)·(j − i)
    (ALiBi: G = slopes[h]): ``score_mod(0, b, h, 0, 1) − score_mod(0, b, h,
    0, 0)``, evaluated with torch on ``device`` (where its tensors are) on
    broadcast index tensors, as :func:`apply_mods` does. Meaningful only for
    a score region the compiler took as a linear bias (a manifest's
    ``linear_bias``); the launcher bounds |G| with it."""
    b = torch.arange(B, device=device).view(B, 1, 1, 1)
    h = torch.arange(H, device=device).view(1, H, 1, 1)
    q = torch.zeros(1, 1, 1, 1, dtype=torch.int64, device=device)
    k = torch.arange(2, device=device).view(1, 1, 1, 2)
    score = torch.zeros(1, 1, 1, 1, dtype=torch.float32, device=device)
    with torch.no_grad():
        s = _broadcast_result(score_mod(score, b, h, q, k), (B, H, 1, 2),
                              device).to(torch.float32)
    return (s[..., 0, 1] - s[..., 0, 0]).contiguous()


#: Query rows per group of a :class:`BlockMask` (a kernel's query tile).
GROUP_ROWS = 64


def _stamp(t: torch.Tensor) -> tuple:
    """``t`` and its version counter, which in-place writes bump (None for an
    inference tensor, which keeps none): what tells a table apart from an
    edited or a replaced one."""
    try:
        return t, t._version
    except RuntimeError:
        return t, None


def _is_stamp_of(stamp: Optional[tuple], t: torch.Tensor) -> bool:
    return stamp is not None and stamp[0] is t and stamp[1] == _stamp(t)[1]


@dataclasses.dataclass(eq=False)
class BlockMask:
    """Key ranges per group of 64 query rows, for block-sparse attention
    (:func:`block_mask` builds one; pass it as ``fa_t.attention(...,
    block_mask=)``).

    ``ranges[b, g] = (first, end, full_first, full_end)``. For query row i
    of batch entry b, in group g = i // 64, key j is visible iff
    ``first <= j < end and mask_mod(b, h, i, j)``, and the call's causal and
    window admit it. The GPU kernel skips the key blocks outside its query
    tile's range. The full range [full_first, full_end) is a promise, as
    FlexAttention's full blocks: mask_mod holds there for every row of the
    group and every head, so the kernel skips evaluating it on key blocks
    inside. A broken promise would change the result, so a table
    :func:`block_mask` did not build is checked before its first use
    (:meth:`check_full_ranges`). A table of two columns (first, end) has no
    full range. Six columns add a hole [hole_first, hole_end), the opposite
    promise: no row of the group sees those keys (mask_mod and the causal
    flag hide them for every head), so the kernel walks around them; it is
    checked as the full range is. ``B`` None: built for any batch
    (evaluated at b = 0, ranges [1, G, columns]); ``H`` None: at h = 0 only.
    """

    ranges: torch.Tensor          # int32 [B or 1, G, 2, 4 or 6] (first, end, full, hole)
    B: Optional[int]
    H: Optional[int]
    Sq: int
    Skv: int
    causal: bool
    mask_mod: Optional[Callable]
    _by_batch: Dict[tuple, tuple] = dataclasses.field(default_factory=dict, repr=False)
    #: (stamp of ``ranges``, mask_mod) whose full ranges are known to keep
    #: the promise; None: unchecked, as a table built by hand or given new
    #: ranges by ``dataclasses.replace`` is (the stamp no longer matches).
    _full_checked: Optional[tuple] = dataclasses.field(default=None, repr=False)

    @property
    def num_groups(self) -> int:
        return self.ranges.shape[1]

    def density(self) -> float:
        """The fraction of (query group, key) pairs inside the ranges: the
        share of key blocks a kernel visits (1.0 for a dense mask)."""
        share = self._share(0)
        return share - self._share(4) if self.ranges.shape[-1] >= 6 else share

    def full_density(self) -> float:
        """The fraction of (query group, key) pairs inside the full ranges:
        the share of key blocks on which a kernel skips the mask."""
        return self._share(2) if self.ranges.shape[-1] >= 4 else 0.0

    def _share(self, column: int) -> float:
        width = (self.ranges[..., column + 1] - self.ranges[..., column]).sum().item()
        return width / max(1, self.ranges.shape[0] * self.num_groups * self.Skv)

    def to(self, device) -> "BlockMask":
        """The same block mask with its ranges on ``device`` (checked if this
        one is: the data are the same)."""
        ranges = self.ranges.to(device)
        checked = self._full_checked
        if checked is not None:
            checked = (_stamp(ranges), checked[1]) if _is_stamp_of(checked[0], self.ranges) \
                else None
        return dataclasses.replace(self, ranges=ranges, _by_batch={}, _full_checked=checked)

    def ranges_for(self, batch: int, device) -> torch.Tensor:
        """``ranges`` for a call of ``batch`` entries on ``device``: itself,
        or a copy there ([batch, G, columns] when B is None), kept for the
        next call while ``ranges`` is neither replaced nor edited."""
        if self.B is not None and self.ranges.device == device:
            return self.ranges
        key = (batch, str(device))
        kept = self._by_batch.get(key)
        if kept is None or not _is_stamp_of(kept[0], self.ranges):
            kept = (_stamp(self.ranges),
                    self.ranges.to(device).expand(batch, -1, -1).contiguous())
            self._by_batch[key] = kept
        return kept[1]

    def check_call(self, B: int, Hq: int, Sq: int, Skv: int, causal: bool) -> None:
        """ValueError naming what differs between this block mask and a call."""
        for name, mine, call in (("B", self.B, B), ("H", self.H, Hq), ("Sq", self.Sq, Sq),
                                 ("Skv", self.Skv, Skv), ("causal", self.causal, causal)):
            if mine is not None and mine != call:
                raise ValueError(f"the block mask was built for {name}={mine}, but the call "
                                 f"has {name}={call} (build it with fa_t.block_mask for "
                                 f"this call's shapes and causal flag)")
        # Every (batch entry, 64-row group) reads its row of the table.
        r = self.ranges
        want = (self.B if self.B is not None else 1, -(-Sq // GROUP_ROWS))
        if (not isinstance(r, torch.Tensor) or r.dtype != torch.int32 or r.dim() != 3
                or tuple(r.shape[:2]) != want or r.shape[2] not in (2, 4, 6)):
            shape = tuple(r.shape) if isinstance(r, torch.Tensor) else type(r).__name__
            dtype = getattr(r, "dtype", None)
            raise ValueError(f"expected the block mask's ranges to be int32 [{want[0]}, "
                             f"{want[1]}, 2, 4 or 6] (batch entries, groups of 64 query rows, "
                             f"columns), got {shape} {dtype}")

    def check_full_ranges(self, mask_mod: Optional[Callable], device) -> None:
        """ValueError unless every full range keeps its promise: empty or
        inside its range [first, end), and ``mask_mod`` (None: true) keeps
        each of its keys for every row of the group (rows below Sq; the
        batch entries and heads :func:`block_mask` evaluates: b = 0 when B is
        None, h = 0 when H is None). The kernel skips the mask there, so a
        broken promise would be a wrong result, not an error. So for a hole
        (six columns): empty or inside [first, end), and no row of the group
        sees its keys (mask_mod and the causal flag hide them). ``mask_mod``
        is evaluated on ``device`` (where its tensors are) in chunks of
        query groups, once: :func:`block_mask`'s tables, valid by
        construction, and tables already checked for this mask_mod are not
        evaluated again until ``ranges`` is replaced or edited in place."""
        if self.ranges.shape[-1] < 4 or (self._full_checked is not None
                                         and self._full_checked[1] is mask_mod
                                         and _is_stamp_of(self._full_checked[0], self.ranges)):
            return
        stamp = _stamp(self.ranges)
        ranges = self.ranges.to(device)
        first, end = ranges[..., 0], ranges[..., 1]
        for column, what in ((2, "full range"), (4, "hole")):
            if ranges.shape[-1] <= column:
                break
            a, z = ranges[..., column], ranges[..., column + 1]
            outside = (a != z) & ((a < first) | (z > end) | (a > z))
            if outside.any():
                e, g = outside.nonzero()[0].tolist()
                lo, hi = ranges[e, g, :2].tolist()
                a, z = ranges[e, g, column:column + 2].tolist()
                raise ValueError(f"the block mask's {what} [{a}, {z}) of group {g} "
                                 f"(batch entry {e}) is neither empty nor inside its range "
                                 f"[{lo}, {hi}): build it with fa_t.block_mask")
        holes = ranges.shape[-1] >= 6
        if mask_mod is not None or holes:
            k = torch.arange(self.Skv, device=device)
            for _, _, rows, kept in _mask_chunks(mask_mod, ranges.shape[0], self.H or 1,
                                                 self.Sq, self.Skv, device):
                if mask_mod is not None:
                    full = _columns_mask(ranges, 2, rows, self.Skv)      # [B, rows, Skv]
                    # The first hidden key by row (so by group), batch entry, key.
                    self._refuse(full & ~kept.all(1), rows, ranges, 2,
                                 "covers key {j} that mask_mod hides from row {i}; the "
                                 "kernel would skip the mask there")
                if holes:
                    seen = kept.any(1) if kept is not None else torch.ones(
                        1, rows.numel(), self.Skv, dtype=torch.bool, device=device)
                    if self.causal:
                        seen = seen & (k.view(1, 1, -1)
                                       <= rows.view(1, -1, 1) + (self.Skv - self.Sq))
                    self._refuse(_columns_mask(ranges, 4, rows, self.Skv) & seen, rows,
                                 ranges, 4, "covers key {j} that row {i} sees; the kernel "
                                 "would skip it")
        self._full_checked = (stamp, mask_mod)

    @staticmethod
    def _refuse(broken: torch.Tensor, rows: torch.Tensor, ranges: torch.Tensor, column: int,
                why: str) -> None:
        """ValueError naming the first (row, batch entry, key) where
        ``broken`` [B, rows, Skv] is true: the promise of ``column``'s range
        (2: full, 4: hole) does not hold there."""
        at = broken.transpose(0, 1).nonzero()
        if len(at):
            n, e, j = at[0].tolist()
            i = int(rows[n])
            g = i // GROUP_ROWS
            a, z = ranges[e, g, column:column + 2].tolist()
            what = "full range" if column == 2 else "hole"
            raise ValueError(f"the block mask's {what} [{a}, {z}) of group {g} (batch entry "
                             f"{e}) " + why.format(i=i, j=j) + ": build it with fa_t.block_mask")


def range_mask(ranges: torch.Tensor, Sq: int, Skv: int) -> torch.Tensor:
    """[B, Sq, Skv] bool: whether key j is in query row i's range
    (``ranges[b, i // 64, 0] <= j < ranges[b, i // 64, 1]``; ``ranges``
    int32 [B, G, 2, 4 or 6])."""
    return _columns_mask(ranges, 0, torch.arange(Sq, device=ranges.device), Skv)


def full_mask(ranges: torch.Tensor, Sq: int, Skv: int) -> torch.Tensor:
    """[B, Sq, Skv] bool: whether key j is in query row i's full range, where
    the table promises the mask true (``ranges[b, i // 64, 2] <= j <
    ranges[b, i // 64, 3]``; no part of the visibility, useful to validate
    a table); all False for a table of two columns, which has none."""
    if ranges.shape[-1] < 4:
        return torch.zeros(ranges.shape[0], Sq, Skv, dtype=torch.bool, device=ranges.device)
    return _columns_mask(ranges, 2, torch.arange(Sq, device=ranges.device), Skv)


def _columns_mask(ranges: torch.Tensor, column: int, rows: torch.Tensor,
                  Skv: int) -> torch.Tensor:
    """[B, len(rows), Skv]: ``ranges[b, i // 64, column] <= j < ranges[b, i //
    64, column + 1]`` for query row i in ``rows``."""
    g = rows // GROUP_ROWS
    lo, hi = ranges[:, g, column].unsqueeze(-1), ranges[:, g, column + 1].unsqueeze(-1)
    j = torch.arange(Skv, device=ranges.device)
    return (j >= lo) & (j < hi)


def _longest_run(a: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(start, end) of the first longest run of True along ``a``'s last
    dimension, (0, 0) where there is none: ``start`` is where the run
    holding each position began (the last False before it, + 1)."""
    idx = torch.arange(a.shape[-1], device=a.device)
    start = torch.where(a, -1, idx).cummax(-1).values + 1
    length = torch.where(a, idx - start + 1, 0)
    best, end = length.amax(-1), length.argmax(-1)      # argmax: the first maximum
    some = best > 0
    return torch.where(some, end + 1 - best, 0), torch.where(some, end + 1, 0)


#: The narrowest hole :func:`block_mask` records: the kernel's smallest key
#: block, so narrower ones can skip nothing.
HOLE_KEYS = 64

#: Mask elements a :func:`block_mask` or a check of full ranges evaluates at
#: once (bools, per chunk).
_CHUNK_ELEMENTS = 1 << 26


def _mask_chunks(mask_mod: Optional[Callable], nb: int, nh: int, Sq: int, Skv: int, device):
    """(g0, g1, rows, kept) per chunk of query groups [g0, g1), few enough
    that memory stays bounded: ``rows`` the chunk's rows below Sq (those
    past it do not exist) and ``kept`` [nb, nh, rows, Skv] whether mask_mod
    (on broadcast index tensors, b < nb, h < nh) keeps each key, None
    without a mask_mod. No chunk when there are no keys."""
    b = torch.arange(nb, device=device).view(nb, 1, 1, 1)
    h = torch.arange(nh, device=device).view(1, nh, 1, 1)
    k = torch.arange(Skv, device=device).view(1, 1, 1, Skv)
    groups = -(-Sq // GROUP_ROWS)
    step = max(1, _CHUNK_ELEMENTS // max(1, nb * nh * GROUP_ROWS * Skv))
    for g0 in range(0, groups if Skv else 0, step):
        g1 = min(groups, g0 + step)
        rows = torch.arange(g0 * GROUP_ROWS, min(g1 * GROUP_ROWS, Sq), device=device)
        kept = None
        if mask_mod is not None:
            kept = torch.as_tensor(mask_mod(b, h, rows.view(1, 1, -1, 1), k), device=device)
            kept = torch.broadcast_to(kept, (nb, nh, rows.numel(), Skv))
        yield g0, g1, rows, kept


def block_mask(mask_mod: Optional[Callable], B: Optional[int], H: Optional[int], Sq: int,
               Skv: int, *, causal: bool = False, device="cuda") -> BlockMask:
    """The key ranges of ``mask_mod`` per group of 64 query rows, for
    block-sparse ``fa_t.attention(..., mask_mod=mask_mod, block_mask=bm)``.

    Evaluates ``mask_mod(b, h, q_idx, kv_idx)`` (with torch on ``device``,
    on broadcast index tensors, in chunks of query groups so memory stays
    bounded) and, with ``causal``, fa-t's bottom-right causal rule (key j
    visible from query i iff j <= i + Skv - Sq). For batch entry b and group
    g (rows 64·g to 64·g + 63, those below Sq), ``ranges[b, g] = (first,
    end, full_first, full_end)``: first the first key visible to any row of
    the group in any head, end the last such key + 1, (0, 0) when none is;
    [full_first, full_end) the longest run of keys (the first of equal ones)
    inside [first, end) that mask_mod keeps for every row and head, (0, 0)
    when there is none. Causal does not enter the full range (the kernel
    applies it apart); without mask_mod it is [first, end). Where some
    group has a run of at least 64 keys inside [first, end) that no row
    sees (attention sinks before a sliding window), the table has two more
    columns, that hole [hole_first, hole_end) per group (the longest such
    run, (0, 0) when there is none): the kernel walks around its blocks. A key j of row i
    is visible iff ``first <= j < end and mask_mod(b, h, i, j)``; the full
    range, where mask_mod holds by construction, lets the kernel skip
    evaluating it there. The table is marked valid for this mask_mod, so a
    call with it (or with none) does not check it again.

    A call with the block mask hides every key outside its row's group range,
    even one mask_mod would keep: build it from the call's own mask_mod (the
    call uses ``bm.mask_mod`` when it passes none; another mask_mod has the
    full ranges checked against it once) and causal flag. Its B, H, Sq, Skv
    and causal must match the call (B None: any batch, evaluated at b = 0;
    H None: at h = 0, for masks that ignore the head). The cost is one
    evaluation of the mask: build it once and reuse it, as FlexAttention's
    ``create_block_mask``. On the GPU the kernel skips key blocks outside the
    union of its query tile's ranges — the speedup of document masks,
    prefix-LM and sliding windows; the result is exactly that of the mask.
    """
    if mask_mod is not None and not callable(mask_mod):
        raise TypeError(f"expected mask_mod to be callable, got {type(mask_mod).__name__}")
    if not isinstance(causal, bool):
        raise TypeError(f"expected causal to be a bool, got {type(causal).__name__}")
    for name, n, least in (("B", B, 1), ("H", H, 1), ("Sq", Sq, 0), ("Skv", Skv, 0)):
        if n is None and name in ("B", "H"):
            continue
        if not isinstance(n, int) or isinstance(n, bool) or n < least:
            raise ValueError(f"expected {name} to be an int >= {least}, got {n!r}")
    device = torch.device(device)
    nb = B or 1
    ranges = torch.zeros(nb, -(-Sq // GROUP_ROWS), 6, dtype=torch.int32, device=device)
    k = torch.arange(Skv, device=device)
    # No keys: no chunk, every range (0, 0).
    for g0, g1, rows, got in _mask_chunks(mask_mod, nb, H or 1, Sq, Skv, device):
        n = rows.numel()
        # Rows past Sq (in the last group) see nothing ...
        keep = torch.zeros(nb, (g1 - g0) * GROUP_ROWS, Skv, dtype=torch.bool, device=device)
        # ... and count as keeping every key for the full range (the neutral
        # element of `all`): whether mask_mod keeps the key for every row
        # and head.
        always = torch.ones_like(keep)
        if got is None:
            keep[:, :n] = True
        else:
            keep[:, :n] = got.any(1)
            always[:, :n] = got.all(1)
        if causal:
            keep[:, :n] &= k.view(1, 1, -1) <= rows.view(1, -1, 1) + (Skv - Sq)
        seen = keep.view(nb, g1 - g0, GROUP_ROWS, Skv).any(2)       # [B, groups, Skv]
        some = seen.any(-1)
        lo = seen.int().argmax(-1)                                    # the first True
        hi = Skv - seen.flip(-1).int().argmax(-1)                     # the last True + 1
        lo, hi = torch.where(some, lo, 0), torch.where(some, hi, 0)
        inside = (k >= lo.unsqueeze(-1)) & (k < hi.unsqueeze(-1))
        full_lo, full_hi = _longest_run(always.view(nb, g1 - g0, GROUP_ROWS, Skv).all(2)
                                        & inside)
        hole_lo, hole_hi = _longest_run(~seen & inside)
        ranges[:, g0:g1] = torch.stack((lo, hi, full_lo, full_hi, hole_lo, hole_hi), -1).int()
    # Holes narrower than the kernel's smallest key block (64 keys) skip no
    # block: without one that wide the table keeps four columns.
    if not bool(((ranges[..., 5] - ranges[..., 4]) >= HOLE_KEYS).any()):
        ranges = ranges[..., :4].contiguous()
    return BlockMask(ranges, B, H, Sq, Skv, causal, mask_mod,
                     _full_checked=(_stamp(ranges), mask_mod))


def create_block_mask(mask_mod: Optional[Callable], B: Optional[int], H: Optional[int],
                      Q_LEN: int, KV_LEN: int, device="cuda", *,
                      causal: bool = False) -> BlockMask:
    """:func:`block_mask` with FlexAttention's ``create_block_mask``
    signature (``BLOCK_SIZE`` is fa-t's own: 64 query rows by key ranges)."""
    return block_mask(mask_mod, B, H, Q_LEN, KV_LEN, causal=causal, device=device)


def softcap(cap: float) -> Callable:
    """Gemma 2 / Grok soft-capping: ``cap · tanh(score / cap)``."""
    cap = float(cap)
    if not cap > 0:
        raise ValueError(f"expected a positive soft-cap, got {cap}")

    def score_mod(score, b, h, q_idx, kv_idx):
        return torch.tanh(score / cap) * cap
    return score_mod


def alibi(slopes: torch.Tensor) -> Callable:
    """ALiBi (BLOOM, MPT): ``score − slopes[h] · (q_idx − kv_idx)``."""
    slopes = torch.as_tensor(slopes, dtype=torch.float32).contiguous()

    def score_mod(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx - kv_idx)
    return score_mod


def document_mask(doc_ids: torch.Tensor, *, runs: bool = False) -> Callable:
    """Packed sequences: a key is visible only within the query's document
    (``doc_ids[q_idx] == doc_ids[kv_idx]``; Sq = Skv positions). ``doc_ids``
    is [S], or [B, S] for a packing per batch entry (``doc_ids[b, q_idx]``).
    The mask reads ``doc_ids`` at each call, so ids written in place count.

    ``runs=True`` promises that every document is one run of consecutive
    positions (a packing) and takes the runs' bounds now: the mask becomes
    ``first[q_idx] <= kv_idx < end[q_idx]``, two bounds per query row, where
    the id form loads every key's id in the kernel (perf log, run 90). Ids
    changed later are not seen: build a new mask. Outside torch.compile a
    broken promise raises ValueError.
    """
    if not isinstance(runs, bool):
        raise TypeError(f"expected runs to be a bool, got {type(runs).__name__}")
    doc_ids = torch.as_tensor(doc_ids).to(torch.int32).contiguous()
    if doc_ids.dim() not in (1, 2):
        raise ValueError(f"expected doc_ids to be [S] or [B, S], got shape "
                         f"{tuple(doc_ids.shape)}")
    if runs:
        if not torch.compiler.is_compiling() and not _one_run_per_document(doc_ids):
            raise ValueError("document_mask(runs=True): a document id occurs in more than "
                             "one run of consecutive positions")
        first, end = _document_runs(doc_ids)
        if doc_ids.dim() == 2:
            def mask_mod(b, h, q_idx, kv_idx):
                return (kv_idx >= first[b, q_idx]) & (kv_idx < end[b, q_idx])
        else:
            def mask_mod(b, h, q_idx, kv_idx):
                return (kv_idx >= first[q_idx]) & (kv_idx < end[q_idx])
    elif doc_ids.dim() == 2:
        def mask_mod(b, h, q_idx, kv_idx):
            return doc_ids[b, q_idx] == doc_ids[b, kv_idx]
    else:
        def mask_mod(b, h, q_idx, kv_idx):
            return doc_ids[q_idx] == doc_ids[kv_idx]
    return mask_mod


def _run_starts(doc_ids: torch.Tensor) -> torch.Tensor:
    """[rows, S] bool: where a run of equal ids begins (doc_ids as rows)."""
    ids = doc_ids.view(-1, doc_ids.shape[-1])
    starts = torch.ones_like(ids, dtype=torch.bool)
    starts[:, 1:] = ids[:, 1:] != ids[:, :-1]
    return starts


def _one_run_per_document(doc_ids: torch.Tensor) -> bool:
    """Whether every id of every row is one run of consecutive positions: as
    many run starts as distinct ids."""
    ids = doc_ids.view(-1, doc_ids.shape[-1])
    if ids.shape[1] == 0:
        return True
    ordered = ids.sort(1).values
    distinct = 1 + (ordered[:, 1:] != ordered[:, :-1]).sum(1)
    return bool((_run_starts(doc_ids).sum(1) == distinct).all())


def _document_runs(doc_ids: torch.Tensor):
    """(first, end) int32 tensors of doc_ids' shape: the bounds of the run of
    equal ids holding each position. Data-independent (traceable)."""
    n = doc_ids.shape[-1]
    starts = _run_starts(doc_ids)
    pos = torch.arange(n, device=doc_ids.device).expand_as(starts)
    # first: the last run start at or before each position; end: the next
    # run start after it (n past the last run).
    first = torch.where(starts, pos, 0).cummax(1).values
    ends = torch.ones_like(starts)
    ends[:, :-1] = starts[:, 1:]
    end = torch.where(ends, pos + 1, n).flip(1).cummin(1).values.flip(1)
    shape = doc_ids.shape
    return (first.to(torch.int32).reshape(shape).contiguous(),
            end.to(torch.int32).reshape(shape).contiguous())


def prefix_lm(prefix: int) -> Callable:
    """Prefix-LM: the first ``prefix`` keys are visible to every query, the
    rest causally (``kv_idx < prefix | kv_idx <= q_idx``)."""
    prefix = int(prefix)

    def mask_mod(b, h, q_idx, kv_idx):
        return (kv_idx < prefix) | (kv_idx <= q_idx)
    return mask_mod
