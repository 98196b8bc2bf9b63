"""The user API: ``attention`` and a drop-in ``scaled_dot_product_attention``.

torch is imported inside the functions, so ``import fa_t`` works without it.
Every input is validated (:mod:`fa_t.checks`) before a kernel is looked up or
launched.

Per-call host cost. A kernel runs for tens of microseconds at short
sequences, so what Python does around the launch decides whether a call keeps
up with it. Every CUDA call goes through a plan cache (:func:`_forward`) keyed
on what fixes the launch — shapes, strides, dtypes and device of Q, K, V, the
mask, scale, LSE, kernel directory, and the score / mask modifications with
those of the tensors they capture. A key's first call checks everything,
finds and loads the kernel, encodes the tensor maps and packs the parameters
(a :class:`_Plan`); later calls of the key check only what the key does not
pin (data-pointer alignment, output buffers; requires_grad at the entry
points) and launch in one C call that points the packed maps and pointers at
this call's tensors, captured ones included (``fat_launch_patched``). Eager calls on plain CUDA
tensors reach the cache directly; under torch.compile, with tensor subclasses
or dispatch modes they go through ``torch.ops.fa_t.attention_fwd`` (compiled
calls with modifications: ``attention_mods_fwd``), whose CUDA implementation is
the same cached path.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
from typing import Any, Dict, Optional, Tuple

from . import checks, registry
from .config import KernelConfig
from .manifest import TILE_COUNTER, capture_index
from .params import (TMA_ALIGN, LaunchPlan, ParamPatch, build_params, check_16_byte_layout,
                     check_lse_pointer, launch_grid, patched_params, problem_symbols)

#: Compute capability the kernels are built for (sm_90a).
REQUIRED_CAPABILITY = (9, 0)

#: Plans kept per process, the oldest dropped first: every shape a model uses,
#: bounded for workloads whose shapes never repeat.
MAX_PLANS = 1024

#: Index of each tensor in a call's addresses (q, k, v, o, lse: 0 without one);
#: the modifications' captured tensors follow, capture<N> at 5 + N.
_SOURCES = {"q": 0, "k": 1, "v": 2, "o": 3, "lse": 4}


def _source(tensor: str, captures: int) -> int:
    """Index of ``tensor`` (a manifest's name) in a call's addresses: q, k,
    v, o, lse, the ``captures`` captured tensors, then the tile counter."""
    if tensor == TILE_COUNTER:
        return len(_SOURCES) + captures
    n = capture_index(tensor)
    return _SOURCES[tensor] if n is None else len(_SOURCES) + n


class _TileCounters:
    """The dynamic tile scheduler's counters (docs/kernel-abi.md,
    ``tile_counter``): each kernel leaves its counter at zero, so launches
    that follow one another on a stream share one, and streams get their own
    (launches on two streams may run at once). One zeroed int32 tensor of
    :attr:`SLOTS` counters per device, made at the first plan that needs it
    (before any CUDA graph capture: its memory must outlive the graphs);
    stream n of a device takes slot n mod SLOTS. A captured graph keeps the
    slot of the stream it was captured on: two graphs captured on one stream
    and replayed at once on two others would share it."""

    SLOTS = 64

    def __init__(self):
        self.pools: Dict[int, Any] = {}
        self.slots: Dict[Tuple[int, int], int] = {}
        self.lock = threading.Lock()

    def ensure_pool(self, torch, device: int) -> None:
        if device in self.pools:
            return
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(
                "fa_t: a kernel with the dynamic tile scheduler is first called during CUDA "
                "graph capture; call it once before capturing (its tile counters are "
                "allocated then, and must outlive the graph)")
        with self.lock:
            if device not in self.pools:
                pool = torch.zeros(self.SLOTS, dtype=torch.int32, device=f"cuda:{device}")
                # Other streams may take a slot next: the zeros must be there.
                torch.cuda.current_stream(device).synchronize()
                self.pools[device] = pool

    def address(self, device: int, stream: int) -> int:
        """The counter of ``stream`` (a raw stream handle) on ``device``."""
        slot = self.slots.get((device, stream))
        if slot is None:
            with self.lock:
                slot = self.slots.setdefault((device, stream), len(self.slots) % self.SLOTS)
        return self.pools[device].data_ptr() + 4 * slot


_tile_counters = _TileCounters()


def _check_no_grad(torch, tensors, names) -> None:
    if torch.is_grad_enabled():
        for t, name in zip(tensors, names):
            if t.requires_grad:
                raise NotImplementedError(
                    f"fa_t has no backward pass, but {name}.requires_grad is True: call it "
                    f"under torch.no_grad() or pass detached tensors")


def _check_device(torch, device) -> int:
    """The device index, after checking the GPU is a Hopper (sm_90a)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    capability = torch.cuda.get_device_capability(index)
    if tuple(capability) != REQUIRED_CAPABILITY:
        raise NotImplementedError(
            f"fa_t kernels target sm_90a (compute capability 9.0); cuda:{index} "
            f"({torch.cuda.get_device_name(index)}) has compute capability "
            f"{capability[0]}.{capability[1]}")
    return index


def _check_output(t, name, shape, dtype, device) -> None:
    if (tuple(t.shape) != shape or t.dtype != dtype or t.device != device
            or not t.is_contiguous()):
        raise ValueError(f"expected {name} to be a contiguous {dtype} tensor of shape {shape} "
                         f"on {device}, got {t.dtype} {tuple(t.shape)} on {t.device} "
                         f"(contiguous: {t.is_contiguous()})")


def _stream_getters(torch):
    """(the current device's index, the raw current stream of a device index).

    torch's C entry points where the build has them (what inductor's
    generated code calls): ``torch.cuda.current_stream()`` builds a Stream
    object per call, several times their cost.
    """
    current = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return current, raw or (lambda index: torch.cuda.current_stream(index).cuda_stream)


def _direct(torch, q, k, v) -> bool:
    """Whether an eager call may go straight to the plan cache rather than
    through the custom op's dispatcher: plain CUDA tensors, torch.compile not
    tracing, and no dispatch or function mode active (FakeTensorMode,
    FlopCounterMode and the like must see the op) other than
    ``torch.set_default_device``'s, which only fills in factory devices."""
    T = torch.Tensor
    if torch.compiler.is_compiling() or not (type(q) is T and type(k) is T and type(v) is T
                                             and q.is_cuda):
        return False
    if torch._C._len_torch_dispatch_stack():
        return False
    if torch._C._is_torch_function_mode_enabled():
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._device import DeviceContext
        return all(isinstance(m, DeviceContext) for m in _get_current_function_mode_stack())
    return True


class _Kernel:
    """A kernel resolved for one problem: loaded on its device, its grid
    computed and its parameters packed for the tensors it was resolved with.

    :meth:`enqueue` launches it on the current stream of its device, either
    as packed or with the address parameters patched (``fat_launch_patched``
    copies the patched values, so the packed block is shared safely by
    threads and by the launches a CUDA graph captures).
    """

    def __init__(self, torch, rt, function, manifest, grid, params, device, context, tensors):
        self.torch, self.rt, self.params, self.device = torch, rt, params, device
        self.manifest = manifest
        self.current_device, self.raw_stream = _stream_getters(torch)
        patched = patched_params(manifest)
        captures = sum(capture_index(t) is not None for _, _, t in patched)
        self.patches = (ParamPatch * len(patched))(
            *(ParamPatch(i, kind, _source(tensor, captures)) for i, kind, tensor in patched))
        #: The tile counter's place in a call's addresses (None: the kernel
        #: has none), and the packed launch's addresses (``tensors``, which
        #: the parameters were packed with, by the patches' own places), into
        #: which each launch of the packed plan puts its stream's counter.
        self.counter_slot = (_source(TILE_COUNTER, captures)
                             if any(t == TILE_COUNTER for _, _, t in patched) else None)
        self.packed_addresses = None
        if self.counter_slot is not None:
            self.packed_addresses = (ctypes.c_uint64 * (self.counter_slot + 1))()
            for _, _, tensor in patched:
                self.packed_addresses[_source(tensor, captures)] = tensors[tensor].data_ptr()
        #: A call's addresses: q, k, v, o, lse, each of the call's captured
        #: tensors, then the tile counter's (:meth:`_launch`) if it has one.
        given = sum(capture_index(t) is not None for t in tensors)
        self.addresses = ctypes.c_uint64 * (len(_SOURCES) + given if self.counter_slot is None
                                            else self.counter_slot + 1)

        def plan(patches):
            return LaunchPlan(function, tuple(grid), tuple(manifest.block),
                              manifest.dynamic_smem_bytes, params.array, len(params),
                              patches, len(patches) if patches else 0, context)
        #: The launch as packed, and with the addresses of each call's tensors.
        self.packed, self.patched = plan(None), plan(self.patches)

    def enqueue(self, plan, addresses=None) -> None:
        """Launches ``plan`` (:attr:`packed`, or :attr:`patched` with a call's
        addresses) on the current stream of the kernel's device."""
        if self.current_device() == self.device:
            self._launch(plan, self.raw_stream(self.device), addresses)
        else:
            # torch.cuda.device makes the device's context current for the CUDA
            # runtime too, and restores the caller's device afterwards.
            with self.torch.cuda.device(self.device):
                self._launch(plan, self.raw_stream(self.device), addresses)

    def _launch(self, plan, stream, addresses) -> None:
        if self.counter_slot is not None:
            # The stream's own tile counter, patched into every launch.
            if addresses is None:
                addresses = type(self.packed_addresses)(*self.packed_addresses)
            addresses[self.counter_slot] = _tile_counters.address(self.device, stream)
            plan = self.patched
        self.rt.launch_patched(plan, stream, addresses)


def _resolve(torch, q, k, v, out, lse_out, problem: checks.Problem, *, causal: bool,
             window: Tuple[int, int], diag: int, scale: float, kernel_dir=None,
             manifest=None, regions: str = "", captures=(),
             allow_weights: bool = True) -> _Kernel:
    """Finds (or takes) the kernel, loads it, encodes the tensor maps and packs
    the parameters for these tensors. ``manifest`` picks a specific kernel (an
    ablation variant) instead of looking one up by config; ``regions`` (the
    score / mask modifications' text) compiles the kernel of them (JIT),
    which reads ``captures`` (the tensors they capture, in order).
    ``allow_weights`` False looks up a kernel whose linear bias is not of the
    weights form (:func:`fa_t.registry.find_kernel`)."""
    p = problem
    device = _check_device(torch, q.device)
    if manifest is None:
        config = KernelConfig(dtype=p.dtype, head_dim=p.D, head_dim_v=p.Dv, num_heads_q=p.Hq,
                              num_heads_kv=p.Hkv, layout="bhsd", causal=causal, window=window,
                              lse=lse_out is not None)
        manifest = registry.find_kernel(config, kernel_dir, seq_len=p.Skv, regions=regions,
                                        allow_weights=allow_weights)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=diag, scale=scale)
    grid = launch_grid(manifest.grid, symbols)

    from .runtime import get_runtime
    rt = get_runtime()
    tensors = {"q": q, "k": k, "v": v, "o": out}
    if lse_out is not None:
        tensors["lse"] = lse_out
    tensors.update((f"capture{i}", t) for i, t in enumerate(captures))
    counted = any(p.tensor == TILE_COUNTER for p in manifest.params)
    with torch.cuda.device(device):
        rt.set_device(device)
        if counted:
            _tile_counters.ensure_pool(torch, device)
            tensors[TILE_COUNTER] = _tile_counters.pools[device]
        kernel = registry.load_kernel(manifest, device, rt)
        params = build_params(manifest, tensors, symbols, rt.encode_tensor_map)
        context = rt.device_context(device)
    return _Kernel(torch, rt, kernel.function, manifest, grid, params, device, context,
                   tensors)


def _plan(q, k, v, out, lse_out, problem: checks.Problem, *, causal: bool,
          window: Tuple[int, int], diag: int, scale: float, kernel_dir=None, manifest=None):
    """Everything a launch of exactly these tensors needs, resolved once;
    returns ``launch()``, which only enqueues the kernel on the current stream
    of q's device. The benchmark times that callable, so its numbers are the
    kernel's, not Python's (the floor a call of :func:`attention` is measured
    against). ``manifest`` picks a specific kernel, as in :func:`_resolve`.
    """
    import torch
    kernel = _resolve(torch, q, k, v, out, lse_out, problem, causal=causal, window=window,
                      diag=diag, scale=scale, kernel_dir=kernel_dir, manifest=manifest)

    def launch():
        kernel.enqueue(kernel.packed)
    return launch


class _LinearBiasGuard:
    """Which kernel a plan of ``linear_bias`` "weights" may launch.

    That form is exact only while the linear bias' factor stays within its
    manifest's ``linear_bias_max_factor`` (|G(b, h)| for every batch entry b
    and head h; past it the kernel writes zeros), and G comes from captured
    tensors the compiler never saw. So G is evaluated (one small torch
    computation and a device sync) once per state of the captures, their
    stamps (:func:`fa_t.mods._stamp`: the tensors and their version counters,
    which in-place writes bump), and a call whose captures still match them
    costs a compare per capture. Past the bound, or without a factor to
    check, the plan launches a kernel of another form instead
    (``allow_weights=False``), resolved once.
    """

    #: The kernel's own guard computes in f32: a factor within 2^-20 of the
    #: bound may round past it there.
    MARGIN = 1 - 2.0 ** -20

    def __init__(self, torch, weights: _Kernel, problem: checks.Problem, resolve_other):
        from . import mods
        self.torch, self.weights, self.resolve_other = torch, weights, resolve_other
        self.B, self.H = problem.B, problem.Hq
        self.bound = weights.manifest.linear_bias_max_factor * self.MARGIN
        self.is_stamp_of, self.stamp = mods._is_stamp_of, mods._stamp
        self.other: Optional[_Kernel] = None
        #: (the captures' stamps, the kernel chosen for them), one tuple so
        #: that threads sharing the plan read a consistent pair.
        self.choice: Optional[tuple] = None
        #: How many times G was evaluated (for the tests).
        self.evaluations = 0

    def kernel(self, q, k, v, out, lse_out, captures, factor) -> _Kernel:
        """The kernel this call may launch (its tensors resolve the other
        form's kernel, when first needed)."""
        if factor is None:
            return self.other or self._other(q, k, v, out, lse_out, captures,
                                             "the call gives no factor to check")
        choice = self.choice
        if choice is not None and all(map(self.is_stamp_of, choice[0], captures)):
            return choice[1]
        torch = self.torch
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(
                f"fa_t: kernel {self.weights.manifest.entry} is exact only for a linear bias "
                f"factor |G| <= {self.weights.manifest.linear_bias_max_factor}, checked when "
                f"the captured tensors change, which needs a device sync: call it once "
                f"before CUDA graph capture (and do not change them during it)")
        stamps = tuple(map(self.stamp, captures))
        g = factor(self.B, self.H, q.device).reshape(self.B, self.H)
        self.evaluations += 1
        size = g.abs().nan_to_num(math.inf)
        at = int(size.argmax())
        worst = g.reshape(-1)[at].item()
        if abs(worst) <= self.bound:  # False for NaN
            kernel = self.weights
        else:
            b, h = divmod(at, self.H)
            kernel = self.other or self._other(
                q, k, v, out, lse_out, captures,
                f"the linear bias' factor reaches |G| = {abs(worst):g} at (b={b}, h={h})")
        self.choice = (stamps, kernel)
        return kernel

    def _other(self, q, k, v, out, lse_out, captures, why: str) -> _Kernel:
        """The plan's kernel of another form than weights, resolved now."""
        from .errors import KernelNotFoundError
        bound = self.weights.manifest.linear_bias_max_factor
        try:
            self.other = self.resolve_other(q, k, v, out, lse_out, captures=captures)
        except KernelNotFoundError as e:
            raise KernelNotFoundError(
                f"kernel {self.weights.manifest.entry} (linear_bias \"weights\") is exact only "
                f"for a linear bias factor |G(b, h)| <= {bound:g}, and {why}; no kernel of "
                f"another form is available: {e}. Build one with tuning linear_bias=vector "
                f"(python -m fa_t.aot with the entry (config, {{\"linear_bias\": \"vector\"}}, "
                f"regions)) or make fa-t-opt available to compile it (FA_T_OPT)") from None
        return self.other


class _Plan:
    """One key's resolved call (see the module doc). A call that finds it has
    Q, K and V of the key's shapes, strides, dtypes and device, all checked
    when the plan was made; :meth:`__call__` checks the rest."""

    def __init__(self, torch, problem: checks.Problem, dtype, device, want_lse: bool):
        p = problem
        self.torch, self.dtype, self.device, self.want_lse = torch, dtype, device, want_lse
        self.o_shape, self.lse_shape = (p.B, p.Hq, p.Sq, p.Dv), (p.B, p.Hq, p.Sq)
        #: Q, K, V with elements: their data pointers must be 16-byte aligned.
        self.nonempty = tuple(i for i, n in enumerate((p.B * p.Hq * p.Sq * p.D,
                                                       p.B * p.Hkv * p.Skv * p.D,
                                                       p.B * p.Hkv * p.Skv * p.Dv)) if n)
        #: The docs/kernel-abi.md rule: never launch an empty problem; with no
        #: keys O = 0 and LSE = -inf are written here.
        self.launches = p.B * p.Hq * p.Sq > 0 and p.Skv > 0
        self.no_keys = p.B * p.Hq * p.Sq > 0 and p.Skv == 0
        self.kernel: Optional[_Kernel] = None
        #: Set when the kernel is of linear_bias "weights": picks the kernel
        #: each call may launch (:class:`_LinearBiasGuard`).
        self.guard: Optional[_LinearBiasGuard] = None

    def outputs(self, q, out, lse_out):
        """The call's O and LSE buffers: new ones (``q.new_empty``, which parses
        less than ``torch.empty``), or the caller's after the checks."""
        torch = self.torch
        if out is None:
            out = q.new_empty(self.o_shape)
        else:
            _check_output(out, "out", self.o_shape, self.dtype, self.device)
            if self.launches:
                check_16_byte_layout(out, "o", "as the kernel's 16-byte stores of O require")
        if not self.want_lse:
            return out, None
        if lse_out is None:
            lse_out = q.new_empty(self.lse_shape, dtype=torch.float32)
        else:
            _check_output(lse_out, "lse_out", self.lse_shape, torch.float32, self.device)
            if self.launches:
                check_lse_pointer(lse_out)
        return out, lse_out

    def __call__(self, q, k, v, out, lse_out, names, captures=(), linear_bias_factor=None):
        ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr())
        if (ptrs[0] | ptrs[1] | ptrs[2]) % TMA_ALIGN:
            tensors = (q, k, v)
            for i in self.nonempty:
                checks.check_tma_layout(tensors[i], names[i])
        out, lse_out = self.outputs(q, out, lse_out)
        kernel = self.kernel
        if kernel is None:
            if self.no_keys:
                out.zero_()
                if lse_out is not None:
                    lse_out.fill_(float("-inf"))
            return out, lse_out
        if self.guard is not None:
            kernel = self.guard.kernel(q, k, v, out, lse_out, captures, linear_bias_factor)
        addresses = kernel.addresses(*ptrs, out.data_ptr(),
                                     0 if lse_out is None else lse_out.data_ptr())
        # The key fixes the captures' shapes, strides and device: only their
        # data may move between calls.
        for i, t in enumerate(captures, len(_SOURCES)):
            addresses[i] = t.data_ptr()
        kernel.enqueue(kernel.patched, addresses)
        return out, lse_out


_plans: Dict[tuple, _Plan] = {}
_plans_lock = threading.Lock()


def _dir_key(kernel_dir):
    """``kernel_dir`` as a dictionary key; None is $FA_T_KERNEL_DIR, read per
    call so that a changed variable is a new key."""
    if kernel_dir is None:
        return os.environ.get("FA_T_KERNEL_DIR")
    if isinstance(kernel_dir, (str, os.PathLike)):
        return kernel_dir
    return tuple(kernel_dir)


def _forward(q, k, v, *, causal: bool, window: Tuple[int, int], diag: Optional[int],
             scale: Optional[float], want_lse: bool, gqa: bool = True, kernel_dir=None,
             names: Tuple[str, str, str] = ("q", "k", "v"), out=None, lse_out=None,
             regions: str = "", captures=(), linear_bias_factor=None):
    """Runs one attention on CUDA tensors; returns (O, LSE or None).

    The cached path of every CUDA call (module doc). ``diag`` None is the
    bottom-right diagonal Skv - Sq; ``scale`` None is 1/sqrt(D) (any other
    value is checked); ``causal`` must be a bool. O is [B, Hq, Sq, Dv] in
    q's dtype and LSE [B, Hq, Sq] float32, both contiguous; ``out``/``lse_out``
    may supply them (the GPU tests pass NaN-poisoned buffers to catch
    elements a kernel forgets to write). ``regions`` is the text of score /
    mask modifications (:func:`fa_t.mods.attention_regions`) and
    ``captures`` the tensors they read, contiguous, on q's device.

    ``linear_bias_factor(B, H, device)`` returns the factor G [B, H] float32
    of the score modification when it is a linear bias s + G(b, h)·(j − i)
    (:func:`fa_t.mods.linear_bias_factor` of the score_mod). A kernel of
    ``linear_bias`` "weights" is launched only after |G| is checked against
    its bound, once per state of the captures (:class:`_LinearBiasGuard`);
    without the factor, or past the bound, a kernel of another form runs.
    """
    key = (q.shape, q.stride(), q.dtype, q.device, k.shape, k.stride(), k.dtype, k.device,
           v.shape, v.stride(), v.dtype, v.device, causal, window, diag, scale, type(scale),
           want_lse, gqa, _dir_key(kernel_dir), regions)
    if captures:
        key += tuple((t.shape, t.stride(), t.dtype, t.device) for t in captures)
    plan = _plans.get(key)
    if plan is None:
        plan, out, lse_out = _new_plan(key, q, k, v, out, lse_out, causal=causal, window=window,
                                       diag=diag, scale=scale, want_lse=want_lse, gqa=gqa,
                                       kernel_dir=kernel_dir, names=names, regions=regions,
                                       captures=captures)
    return plan(q, k, v, out, lse_out, names, captures, linear_bias_factor)


def _new_plan(key, q, k, v, out, lse_out, *, causal, window, diag, scale, want_lse, gqa,
              kernel_dir, names, regions="", captures=()):
    """Checks a new key's inputs in full and resolves its plan (kept only once
    everything passed, so a key that failed is checked again next time);
    returns it with the call's output buffers, which its parameters were
    packed with."""
    import torch
    problem = checks.check_inputs(q, k, v, names, gqa)
    checks.check_captures(captures, q.device)
    scale = checks.check_scale(scale, problem.D)
    window = checks.check_window(window)
    if diag is None:
        diag = problem.Skv - problem.Sq
    plan = _Plan(torch, problem, q.dtype, q.device, want_lse)
    out, lse_out = plan.outputs(q, out, lse_out)
    if plan.launches:
        plan.kernel = _resolve(torch, q, k, v, out, lse_out, problem, causal=causal,
                               window=window, diag=diag, scale=scale, kernel_dir=kernel_dir,
                               regions=regions, captures=captures)
        if plan.kernel.manifest.linear_bias == "weights":
            plan.guard = _LinearBiasGuard(torch, plan.kernel, problem, functools.partial(
                _resolve, torch, problem=problem, causal=causal, window=window, diag=diag,
                scale=scale, kernel_dir=kernel_dir, regions=regions, allow_weights=False))
    with _plans_lock:
        while len(_plans) >= MAX_PLANS:
            del _plans[next(iter(_plans))]
        _plans[key] = plan
    return plan, out, lse_out


def attention(q, k, v, *, causal: bool = False, scale: Optional[float] = None,
              window: Optional[Tuple[int, int]] = None, return_lse: bool = False,
              kernel_dir=None, score_mod=None, mask_mod=None, block_mask=None):
    """FlashAttention forward on Hopper: O = softmax(scale · Q Kᵀ + mask) V.

    Args:
        q: [B, Hq, Sq, D], k: [B, Hkv, Skv, D], v: [B, Hkv, Skv, Dv]; torch CUDA
            tensors, bf16 or f16, any strides TMA accepts (so BSHD memory viewed
            as BHSD with ``.transpose(1, 2)`` works). Hq must be a multiple of
            Hkv (GQA/MQA). D and Dv in {64, 128, 256}. CPU tensors (any float
            dtype, any D) run a torch implementation instead (fa_t.torch_ops).
        causal: key j is visible from query i iff j <= i + Skv - Sq (the
            bottom-right alignment of FlashAttention >= 2.1).
        scale: softmax scale, default 1/sqrt(D).
        window: (left, right) sliding window around the same diagonal, each
            >= 0 or -1 for unbounded: i + Skv - Sq - left <= j <= i + Skv - Sq + right.
        return_lse: also return LSE [B, Hq, Sq] float32, the natural-log
            log-sum-exp of the scaled scores (-inf for a row with no visible key,
            whose O row is 0).
        kernel_dir: ahead-of-time kernel directory (or list of them) to search
            instead of $FA_T_KERNEL_DIR (under torch.compile refused with
            score_mod, mask_mod or block_mask: their op has no such argument).
        score_mod, mask_mod: FlexAttention-style modifications
            ``score_mod(score, b, h, q_idx, kv_idx)`` of the scaled scores and
            ``mask_mod(b, h, q_idx, kv_idx) -> bool`` (fa_t.mods; helpers
            fa_t.softcap, fa_t.alibi, fa_t.document_mask, fa_t.prefix_lm).
            They are traced into fat.attention's score / mask regions
            (fa_t.mods.trace), which fa-t compiles into the Hopper kernel
            (CPU tensors run them with torch). Tensors they read (slopes,
            document ids, bias tables) must be on q's device; the kernel
            reads a contiguous copy where one is not contiguous.
        block_mask: a :class:`fa_t.mods.BlockMask` (``fa_t.block_mask`` /
            ``fa_t.create_block_mask``) of these shapes and this causal flag:
            key ranges per group of 64 query rows, keys outside them hidden
            (block sparsity: the kernel skips those key blocks), and full
            ranges where mask_mod is promised true (the kernel skips the
            mask there). Without mask_mod the call applies the block mask's
            own mask_mod (as FlexAttention does). Build it once from the
            same mask_mod and reuse it; on CUDA its ranges must be on q's
            device. A table fa_t.block_mask did not build for this mask_mod
            has its promise checked once (ValueError if broken).

    Returns:
        O [B, Hq, Sq, Dv] in q's dtype, contiguous; with return_lse, (O, LSE).

    Eager calls on CUDA tensors launch through the plan cache (module doc);
    under torch.compile the call is the custom op
    ``torch.ops.fa_t.attention_fwd``, so it compiles into graphs without a
    break (except with ``kernel_dir``, which cannot cross the op's schema).
    With score_mod, mask_mod or block_mask it is
    ``torch.ops.fa_t.attention_mods_fwd``: the functions are traced when
    dynamo traces the call, and the tensors they read (from their closures
    or their modules' globals) and the block mask's ranges are inputs of
    that node, so a compiled graph reads their current values; dynamo guards
    on the functions' code and other closure values, so another function
    is traced anew (:func:`fa_t.torch_ops.mods_captures`). The block mask's
    full ranges cannot be checked while compiling (only its data can show a
    broken promise): a table with full ranges must come from fa_t.block_mask
    for this mask_mod or have passed one eager call with it (else
    ValueError).
    """
    import torch
    names = ("q", "k", "v")
    if score_mod is not None or mask_mod is not None or block_mask is not None:
        return _attention_with_mods(q, k, v, causal=causal, scale=scale, window=window,
                                    return_lse=return_lse, score_mod=score_mod,
                                    mask_mod=mask_mod, block_mask=block_mask,
                                    kernel_dir=kernel_dir)
    direct = _direct(torch, q, k, v)
    if not direct:
        from . import torch_ops  # registers torch.ops.fa_t.attention_fwd
        torch_ops.check_inputs(q, k, v, names=names)
    if not isinstance(causal, bool):
        raise TypeError(f"expected causal to be a bool, got {type(causal).__name__}")
    window = checks.check_window(window)
    if not direct:
        scale = checks.check_scale(scale, q.shape[3])
    _check_no_grad(torch, (q, k, v), names)
    if direct or kernel_dir is not None:
        o, lse = _forward(q, k, v, causal=causal, window=window, diag=None, scale=scale,
                          want_lse=return_lse, kernel_dir=kernel_dir, names=names)
    else:
        o, lse = torch_ops.attention_fwd(q, k, v, causal, scale, window[0], window[1],
                                         k.shape[2] - q.shape[2], return_lse)
    return (o, lse) if return_lse else o


def _attention_with_mods(q, k, v, *, causal, scale, window, return_lse, score_mod,
                         mask_mod, block_mask=None, kernel_dir=None):
    """fa_t.attention with score / mask modifications or a block mask (see
    its doc): the functions are traced first, so an unsupported operation is
    refused on any device. Under torch.compile they are traced when dynamo
    traces the call (:func:`fa_t.torch_ops.mods_captures`), and the call is
    ``torch.ops.fa_t.attention_mods_fwd``."""
    import torch
    from . import mods, torch_ops
    compiling = torch.compiler.is_compiling()
    if block_mask is not None:
        if not isinstance(block_mask, mods.BlockMask):
            raise TypeError(f"expected block_mask to be a fa_t.mods.BlockMask (made by "
                            f"fa_t.block_mask), got {type(block_mask).__name__}")
        if mask_mod is None:
            mask_mod = block_mask.mask_mod
    # Plain CUDA tensors go to the plan cache, which checks a new key's
    # inputs in full, and their regions' trace refuses what the functions
    # cannot do: per call only the cached lookups (perf log run 152).
    direct = _direct(torch, q, k, v)
    for fn, kind in ((score_mod, "score"), (mask_mod, "mask")):
        if fn is not None:
            if not callable(fn):
                raise TypeError(f"expected {kind}_mod to be callable, got {type(fn).__name__}")
            if not compiling and not direct:
                mods.check_traceable(fn, kind)
    if not direct:
        torch_ops.check_inputs(q, k, v, names=("q", "k", "v"))
    else:  # the shapes this function reads before the plan checks the rest
        checks.check_shapes(q, k, v, ("q", "k", "v"))
    if not isinstance(causal, bool):
        raise TypeError(f"expected causal to be a bool, got {type(causal).__name__}")
    on_gpu = q.device.type != "cpu"
    ranges = None
    if block_mask is not None:
        block_mask.check_call(q.shape[0], q.shape[1], q.shape[2], k.shape[2], causal)
        if on_gpu and block_mask.ranges.device != q.device:
            raise ValueError(f"expected the block mask's ranges to be on q's device "
                             f"{q.device}, got {block_mask.ranges.device} (build it with "
                             f"device={str(q.device)!r} or move it with .to())")
        if compiling:
            # The table is a graph input whose data the trace cannot read, so
            # its full ranges (a promise only the data can show broken) must
            # come from fa_t.block_mask or an eager check for this mask_mod.
            full = block_mask.ranges.shape[-1] >= 4
            checked = block_mask._full_checked
            if full and (checked is None or checked[1] is not mask_mod):
                raise ValueError(
                    "a block mask with full ranges under torch.compile must be built by "
                    "fa_t.block_mask for this mask_mod, or checked by one eager "
                    "fa_t.attention call with it first (the kernel skips mask_mod on the "
                    "full ranges; a broken promise would be a wrong result)")
            ranges = block_mask.ranges.to(q.device)
            if block_mask.B is None:
                ranges = ranges.expand(q.shape[0], -1, -1)
        else:
            # A broken full-range promise would be a wrong result on the GPU:
            # refused on every device, checked once per table and mask_mod.
            block_mask.check_full_ranges(mask_mod, q.device)
            ranges = block_mask.ranges_for(q.shape[0], q.device)
        if ranges.numel() == 0:  # no query rows: nothing to range
            ranges = None
    if on_gpu and not compiling:
        # The Hopper kernel of these regions (JIT-compiled, cached by their
        # text), which reads the captured tensors as row-major arrays; the
        # block mask's ranges are the last capture (kv_ranges).
        regions, captures = mods.attention_regions(score_mod, mask_mod, ranges)
        captures = tuple(t.contiguous() for t in captures)
    window = checks.check_window(window)
    scale = checks.check_scale(scale, q.shape[3])
    if compiling:
        if kernel_dir is not None:
            raise TypeError("under torch.compile a call with score_mod, mask_mod or "
                            "block_mask is one op whose schema has no kernel_dir: set "
                            "$FA_T_KERNEL_DIR instead")
        _check_no_grad(torch, (q, k, v), ("q", "k", "v"))
        key, captures = torch_ops.mods_captures(score_mod, mask_mod, ranges)
        o, lse = torch_ops.attention_mods_fwd(q, k, v, captures, key, causal, scale, window[0],
                                              window[1], k.shape[2] - q.shape[2], return_lse)
        return (o, lse) if return_lse else o
    if on_gpu:
        factor = None if score_mod is None else functools.partial(mods.linear_bias_factor,
                                                                  score_mod)
        o, lse = _forward(q, k, v, causal=causal, window=window, diag=None, scale=scale,
                          want_lse=return_lse, names=("q", "k", "v"), kernel_dir=kernel_dir,
                          regions=regions, captures=captures, linear_bias_factor=factor)
        return (o, lse) if return_lse else o
    o, lse = torch_ops.attention_math(q, k, v, causal=causal, scale=scale, window=window,
                                      diag=k.shape[2] - q.shape[2], score_mod=score_mod,
                                      mask_mod=mask_mod, kv_ranges=ranges)
    return (o, lse.float()) if return_lse else o


def scaled_dot_product_attention(query, key, value, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, *,
                                 scale: Optional[float] = None, enable_gqa: bool = False,
                                 kernel_dir=None):
    """``torch.nn.functional.scaled_dot_product_attention`` with torch's semantics.

    ``is_causal`` is top-left aligned as in torch (key j visible from query i
    iff j <= i); ``enable_gqa`` allows key/value with fewer heads than query
    (query.size(1) a multiple of key.size(1)), otherwise the head counts must
    be equal. Inputs must be 4-D [B, H, S, D]. ``attn_mask`` and a non-zero
    ``dropout_p`` are not implemented and raise NotImplementedError. Like
    :func:`attention`, eager CUDA calls use the plan cache and compiled ones
    ``torch.ops.fa_t.attention_fwd`` (CPU tensors: the torch implementation);
    :func:`fa_t.patch_sdpa` routes torch's own SDPA calls here.
    """
    if attn_mask is not None:
        raise NotImplementedError("fa_t.scaled_dot_product_attention does not support "
                                  "attn_mask; use is_causal, or fa_t.attention(window=...)")
    if dropout_p != 0.0:
        raise NotImplementedError(f"fa_t.scaled_dot_product_attention does not support "
                                  f"dropout_p={dropout_p}; only dropout_p=0.0")
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        if hasattr(t, "dim") and t.dim() != 4:
            raise NotImplementedError(
                f"fa_t.scaled_dot_product_attention supports only 4-D (batch, heads, seq, "
                f"head_dim) inputs, got {name} of shape {tuple(t.shape)}")
    import torch
    names, gqa = ("query", "key", "value"), bool(enable_gqa)
    direct = _direct(torch, query, key, value)
    if not direct:
        from . import torch_ops  # registers torch.ops.fa_t.attention_fwd
        torch_ops.check_inputs(query, key, value, names=names, gqa=gqa)
        scale = checks.check_scale(scale, query.shape[3])
    _check_no_grad(torch, (query, key, value), names)
    if direct or kernel_dir is not None:
        o, _ = _forward(query, key, value, causal=bool(is_causal), window=(-1, -1), diag=0,
                        scale=scale, want_lse=False, gqa=gqa, kernel_dir=kernel_dir,
                        names=names)
    else:
        o, _ = torch_ops.attention_fwd(query, key, value, bool(is_causal), scale, -1, -1, 0,
                                       False)
    return o
