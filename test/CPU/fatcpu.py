"""Run fat.attention on the host CPU through fa-t's reference lowering.

The path under test is the real one: ``fa-t-opt --fat-to-cpu`` lowers the op
(tiling, online softmax, decomposition, bufferization, LLVM), ``mlir-translate``
emits LLVM IR, ``clang`` builds a shared object, and ``ctypes`` calls the
function's C interface (``_mlir_ciface_<name>``) on numpy buffers passed as
MLIR memref descriptors.

The float64 reference in this file (``reference_attention``) is written
directly from the definition of attention (dense scores, explicit mask,
softmax) and shares no code with the tiled path.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

LLVM_BIN = Path(os.environ.get("FA_T_LLVM_BIN", "/usr/lib/llvm-22/bin"))


def find_fa_t_opt() -> str:
    """fa-t-opt from $FA_T_OPT, the build tree, or PATH."""
    if os.environ.get("FA_T_OPT"):
        return os.environ["FA_T_OPT"]
    root = Path(__file__).resolve().parents[2]
    for cand in (root / "build" / "bin" / "fa-t-opt",):
        if cand.exists():
            return str(cand)
    found = shutil.which("fa-t-opt")
    if not found:
        raise FileNotFoundError("fa-t-opt not found: build it or set FA_T_OPT")
    return found


# --------------------------------------------------------------------------
# Element types: numpy has no bf16, so bf16 buffers are uint16 bit patterns.
# --------------------------------------------------------------------------

def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round f32 to bf16 (round to nearest even) and return the bits."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bf16_bits(u: np.ndarray) -> np.ndarray:
    return (u.astype(np.uint32) << 16).view(np.float32)


def quantize(x: np.ndarray, dtype: str) -> np.ndarray:
    """The buffer handed to the kernel for `x` in element type `dtype`."""
    if dtype == "f32":
        return np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "f16":
        return np.ascontiguousarray(x, dtype=np.float16)
    if dtype == "bf16":
        return to_bf16_bits(x)
    raise ValueError(f"unsupported element type {dtype!r}")


def dequantize(buf: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values of a kernel buffer of element type `dtype`."""
    if dtype == "bf16":
        return from_bf16_bits(buf).astype(np.float64)
    return buf.astype(np.float64)


NP_EMPTY = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


# --------------------------------------------------------------------------
# Memref descriptors and the compiled module.
# --------------------------------------------------------------------------

def _descriptor_type(rank: int):
    class MemRefDescriptor(ctypes.Structure):
        _fields_ = [
            ("allocated", ctypes.c_void_p),
            ("aligned", ctypes.c_void_p),
            ("offset", ctypes.c_int64),
            ("sizes", ctypes.c_int64 * rank),
            ("strides", ctypes.c_int64 * rank),
        ]
    return MemRefDescriptor


def memref_descriptor(a: np.ndarray):
    """An MLIR ranked memref descriptor viewing numpy array `a` (strides in
    elements)."""
    desc = _descriptor_type(a.ndim)()
    desc.allocated = desc.aligned = a.ctypes.data
    desc.offset = 0
    for i in range(a.ndim):
        desc.sizes[i] = a.shape[i]
        desc.strides[i] = a.strides[i] // a.itemsize
    return desc


class CompiledModule:
    """A module lowered with --fat-to-cpu and loaded as a shared object."""

    def __init__(self, mlir_text: str, *, block_m: int = 128, block_n: int = 128,
                 tensorize: str | None = None, workdir: str | None = None):
        """``tensorize`` (the --fat-tensorize options, "" for the cost model)
        runs the tensorized level: fa-t-opt --fat-tile --fat-tensorize writes
        it as text (kept in ``tensorized_ir``), then a second fa-t-opt lowers
        that printed IR with --fat-to-cpu, as a user chaining the passes
        would."""
        self._tmp = tempfile.TemporaryDirectory(prefix="fat-cpu-") if workdir is None else None
        work = Path(workdir or self._tmp.name)
        src, llvm_mlir, ll, so = (work / n for n in ("in.mlir", "llvm.mlir", "out.ll", "libattn.so"))
        src.write_text(mlir_text)
        pipeline = f"--fat-to-cpu=block-m={block_m} block-n={block_n}"
        self.tensorized_ir = None
        if tensorize is not None:
            tensorized = work / "tensorized.mlir"
            self._run([find_fa_t_opt(), str(src), f"--fat-tile=block-m={block_m} block-n={block_n}",
                       f"--fat-tensorize={tensorize}", "-o", str(tensorized)])
            self.tensorized_ir = tensorized.read_text()
            src = tensorized
        self._run([find_fa_t_opt(), str(src), pipeline, "-o", str(llvm_mlir)])
        self._run([str(LLVM_BIN / "mlir-translate"), "--mlir-to-llvmir", str(llvm_mlir), "-o", str(ll)])
        clang = shutil.which("clang-22") or str(LLVM_BIN / "clang")
        # memref.copy of strided views lowers to a call of memrefCopy, which
        # lives in MLIR's C runner utils.
        libdir = str(LLVM_BIN.parent / "lib")
        self._run([clang, "-O2", "-shared", "-fPIC", "-Wno-override-module", str(ll), "-o", str(so),
                   f"-L{libdir}", "-lmlir_c_runner_utils", f"-Wl,-rpath,{libdir}", "-lm"])
        self.lib = ctypes.CDLL(str(so))
        self.lowered_ir = llvm_mlir.read_text()

    @staticmethod
    def _run(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")

    def call(self, name: str, *arrays: np.ndarray) -> None:
        descs = [memref_descriptor(a) for a in arrays]
        fn = getattr(self.lib, f"_mlir_ciface_{name}")
        fn.restype = None
        fn(*[ctypes.byref(d) for d in descs])


# --------------------------------------------------------------------------
# Configurations, IR generation and the float64 reference.
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Config:
    name: str
    B: int = 1
    Hq: int = 2
    Hkv: int = 2
    Sq: int = 64
    Skv: int = 64
    D: int = 64
    Dv: int | None = None
    dtype: str = "f32"
    causal: bool = False
    window: tuple[int, int] | None = None
    diagonal: int | None = None      # None: bottom-right, Skv - Sq
    scale: float | None = None
    layout: str = "bhsd"
    lse: bool = True
    dynamic: bool = False            # B, Sq, Skv as '?' in the IR
    block_m: int = 64
    block_n: int = 32
    magnitude: float = 1.0           # inputs ~ N(0, magnitude²)
    tensorize: str | None = None     # run the tensorized level with these
                                     # --fat-tensorize options ("" = auto)
    mods: Mods | None = None         # score / mask regions

    @property
    def dv(self) -> int:
        return self.Dv if self.Dv is not None else self.D


def _physical(shape_bhsd, layout):
    b, h, s, d = shape_bhsd
    return (b, h, s, d) if layout == "bhsd" else (b, s, h, d)


def _memref(shape, dtype, dyn_dims=()):
    dims = ["?" if i in dyn_dims else str(n) for i, n in enumerate(shape)]
    return f"memref<{'x'.join(dims)}x{dtype}>"


def attention_ir(cfg: Config, func: str = "attn") -> str:
    """A func with the memref form of fat.attention for `cfg`."""
    seq = 1 if cfg.layout == "bshd" else 2
    dyn = (0, seq) if cfg.dynamic else ()
    t = lambda shape: _memref(_physical(shape, cfg.layout), cfg.dtype, dyn)
    q, k = t((cfg.B, cfg.Hq, cfg.Sq, cfg.D)), t((cfg.B, cfg.Hkv, cfg.Skv, cfg.D))
    v, o = t((cfg.B, cfg.Hkv, cfg.Skv, cfg.dv)), t((cfg.B, cfg.Hq, cfg.Sq, cfg.dv))
    lse = _memref((cfg.B, cfg.Hq, cfg.Sq), "f32", (0, 2) if cfg.dynamic else ())
    args = [f"%q: {q}", f"%k: {k}", f"%v: {v}", f"%o: {o}"]
    if cfg.lse:
        args.append(f"%l: {lse}")
    extra = ""
    body = ""
    if cfg.diagonal is not None:
        body += f"  %d = arith.constant {cfg.diagonal} : index\n"
        extra += " diagonal(%d)"
    if cfg.scale is not None:
        extra += f" scale {cfg.scale!r}"
    if cfg.causal:
        extra += " causal"
    if cfg.window is not None:
        extra += f" window [{cfg.window[0]}, {cfg.window[1]}]"
    if cfg.layout != "bhsd":
        extra += f" layout({cfg.layout})"
    lse_part = f" lse(%l : {lse})" if cfg.lse else ""
    regions = ""
    m = cfg.mods
    if m is not None:
        names = [name for name, _ in m.captures]
        types = [f"{'x'.join(map(str, a.shape))}x{MLIR_DTYPE[a.dtype]}" for _, a in m.captures]
        args += [f"%{n}_arg: memref<{t}>" for n, t in zip(names, types)]
        if m.captures:
            extra = (f" captures({', '.join('%' + n + '_arg' for n in names)} : "
                     f"{', '.join(f'memref<{t}>' for t in types)})") + extra
        tail = "".join(f", %{n}: tensor<{t}>" for n, t in zip(names, types))
        if m.score:
            regions += (f" score {{\n^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index{tail}):\n"
                        f"{m.score}\n}}")
        if m.mask:
            regions += (f" mask {{\n^bb0(%b: index, %h: index, %i: index, %j: index{tail}):\n"
                        f"{m.mask}\n}}")
    return (
        f"func.func @{func}({', '.join(args)}) attributes {{llvm.emit_c_interface}} {{\n"
        f"{body}"
        f"  fat.attention ins(%q, %k, %v : {q}, {k}, {v}) outs(%o : {o}){lse_part}{extra}{regions}\n"
        f"  return\n}}\n"
    )


def reference_attention(q, k, v, *, scale, causal=False, window=None, diagonal=None,
                        score_fn=None, mask_fn=None):
    """Dense float64 attention on logical BHSD arrays: (O, LSE).

    ``score_fn(s, b, h, i, j)`` modifies the scaled scores s [Sq, Skv] of
    batch b, head h (i, j: the row and key index grids); ``mask_fn(b, h, i,
    j)`` returns the keys it keeps (FlexAttention's score_mod / mask_mod).
    Rows with no visible key give O = 0 and LSE = -inf.
    """
    B, Hq, Sq, _ = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    diag = Skv - Sq if diagonal is None else diagonal
    i = np.arange(Sq)[:, None]
    j = np.arange(Skv)[None, :]
    band = np.ones((Sq, Skv), dtype=bool)
    if causal:
        band &= j <= i + diag
    if window is not None:
        left, right = window
        if left >= 0:
            band &= j >= i + diag - left
        if right >= 0:
            band &= j <= i + diag + right
    out = np.zeros((B, Hq, Sq, v.shape[3]))
    lse = np.full((B, Hq, Sq), -np.inf)
    for b in range(B):
        for h in range(Hq):
            visible = band & mask_fn(b, h, i, j) if mask_fn else band
            empty = ~visible.any(axis=1)
            s = (q[b, h] @ k[b, h // g].T) * scale
            if score_fn:
                s = score_fn(s, b, h, i, j)
            s = np.where(visible, s, -np.inf)
            mx = np.where(empty, 0.0, s.max(axis=1))
            p = np.where(visible, np.exp(s - mx[:, None]), 0.0)
            l = p.sum(axis=1)
            safe = np.where(empty, 1.0, l)
            out[b, h] = np.where(empty[:, None], 0.0, (p @ v[b, h // g]) / safe[:, None])
            lse[b, h] = np.where(empty, -np.inf, mx + np.log(safe))
    return out, lse


@dataclasses.dataclass
class Mods:
    """Score / mask regions of fat.attention with their float64 meaning.

    ``captures``: (name, array) pairs passed as captures(...) (memrefs of
    the array's dtype, after Q, K, V, O and LSE in the function's
    arguments); ``score`` / ``mask``: the region bodies in MLIR text over
    the block arguments %s (score only), %b, %h, %i, %j and %<name>, ending
    in fat.yield; ``score_fn`` / ``mask_fn``: the same in numpy, for
    reference_attention."""
    captures: list = dataclasses.field(default_factory=list)
    score: str | None = None
    mask: str | None = None
    score_fn: object = None
    mask_fn: object = None


MLIR_DTYPE = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


def rel_error(x: np.ndarray, ref: np.ndarray) -> float:
    """Relative Frobenius error ‖x − ref‖ / ‖ref‖ (absolute when ref = 0)."""
    den = np.linalg.norm(ref)
    num = np.linalg.norm(x - ref)
    return float(num / den) if den > 0 else float(num)


@dataclasses.dataclass
class Result:
    out_error: float
    lse_error: float
    lse_inf_match: bool
    empty_rows_zero: bool
    finite: bool
    tensorized_ir: str | None = None  # the printed tensorized level, if run


def make_inputs(cfg: Config, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh random Q, K, V (logical BHSD, float32, never zeros): Q and K
    ~ N(0, magnitude²), V ~ N(0, 1)."""
    logical = lambda shape: rng.standard_normal(shape).astype(np.float32) * cfg.magnitude
    qf = logical((cfg.B, cfg.Hq, cfg.Sq, cfg.D))
    kf = logical((cfg.B, cfg.Hkv, cfg.Skv, cfg.D))
    vf = rng.standard_normal((cfg.B, cfg.Hkv, cfg.Skv, cfg.dv)).astype(np.float32)
    return qf, kf, vf


def run_config(cfg: Config, seed: int | None = None, module: CompiledModule | None = None) -> Result:
    """Compile `cfg`, run it on fresh random inputs, compare with float64."""
    qf, kf, vf = make_inputs(cfg, np.random.default_rng(seed))
    to_phys = (lambda a: a) if cfg.layout == "bhsd" else (lambda a: np.ascontiguousarray(a.transpose(0, 2, 1, 3)))
    from_phys = (lambda a: a) if cfg.layout == "bhsd" else (lambda a: a.transpose(0, 2, 1, 3))
    qb, kb, vb = (quantize(to_phys(a), cfg.dtype) for a in (qf, kf, vf))
    o = np.empty(_physical((cfg.B, cfg.Hq, cfg.Sq, cfg.dv), cfg.layout), dtype=NP_EMPTY[cfg.dtype])
    # Poison: NaN everywhere (0xFFFF is a NaN in f16 and bf16 too).
    if cfg.dtype == "f32":
        o.fill(np.nan)
    else:
        o.view(np.uint16).fill(0xFFFF)
    lse = np.full((cfg.B, cfg.Hq, cfg.Sq), np.nan, dtype=np.float32)

    mod = module or CompiledModule(attention_ir(cfg), block_m=cfg.block_m, block_n=cfg.block_n,
                                   tensorize=cfg.tensorize)
    args = [qb, kb, vb, o] + ([lse] if cfg.lse else [])
    if cfg.mods is not None:
        args += [np.ascontiguousarray(a) for _, a in cfg.mods.captures]
    mod.call("attn", *args)

    scale = cfg.scale if cfg.scale is not None else 1.0 / np.sqrt(cfg.D)
    # The reference sees exactly the values the kernel saw.
    q64, k64, v64 = (from_phys(dequantize(a, cfg.dtype)) for a in (qb, kb, vb))
    m = cfg.mods
    ref_o, ref_lse = reference_attention(q64, k64, v64, scale=scale, causal=cfg.causal,
                                         window=cfg.window, diagonal=cfg.diagonal,
                                         score_fn=m.score_fn if m else None,
                                         mask_fn=m.mask_fn if m else None)
    out = from_phys(dequantize(o, cfg.dtype))
    finite = bool(np.isfinite(out).all())
    empty = np.isneginf(ref_lse)
    res = Result(out_error=rel_error(out, ref_o), lse_error=0.0, lse_inf_match=True,
                 empty_rows_zero=bool((out[empty] == 0).all()), finite=finite,
                 tensorized_ir=mod.tensorized_ir)
    if cfg.lse:
        res.lse_inf_match = bool((np.isneginf(lse) == empty).all()) and not np.isnan(lse).any()
        fin = ~empty
        res.lse_error = rel_error(lse[fin].astype(np.float64), ref_lse[fin]) if fin.any() else 0.0
    return res


def check_result(cfg: Config, res: Result, tol: dict, lse_tol: dict, record_property=None) -> None:
    """The assertions every numerics suite makes of one run: no NaN/Inf left,
    O = 0 and LSE = -inf exactly on rows with no visible key, and the O and
    LSE relative errors within ``tol`` / ``lse_tol`` (by dtype); the errors
    are printed and recorded in the JUnit report."""
    if record_property is not None:
        record_property("out_error", res.out_error)
        record_property("lse_error", res.lse_error)
    print(f"{cfg.name}: O rel err {res.out_error:.2e}, LSE rel err {res.lse_error:.2e}")
    assert res.finite, "output has NaN/Inf (poison left behind or a NaN from an empty row)"
    assert res.empty_rows_zero, "a row with no visible key must give O = 0"
    assert res.lse_inf_match, "LSE must be -inf exactly on the rows with no visible key"
    assert res.out_error <= tol[cfg.dtype], f"O relative error {res.out_error:.3e}"
    assert res.lse_error <= lse_tol[cfg.dtype], f"LSE relative error {res.lse_error:.3e}"


# --------------------------------------------------------------------------
# Running an arbitrary module (the README's example) by its signature.
# --------------------------------------------------------------------------

_MEMREF_RE = re.compile(r"memref<([0-9x]+)x(f32|f16|bf16)>")


def signature_of(mlir_text: str, func: str):
    """(shape, dtype) of each memref argument of `func` (static shapes)."""
    m = re.search(r"func\.func\s+@" + re.escape(func) + r"\s*\((.*?)\)\s*(attributes|\{)", mlir_text, re.S)
    if not m:
        raise ValueError(f"no func.func @{func} in the module")
    sig = []
    for dims, dt in _MEMREF_RE.findall(m.group(1)):
        sig.append((tuple(int(x) for x in dims.split("x")), dt))
    return sig
