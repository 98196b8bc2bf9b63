"""The user API: ``attention`` and a drop-in ``scaled_dot_product_attention``.

torch is imported inside the functions, so ``import fa_t`` works without it.
Every input is validated (:mod:`fa_t.checks`) before a kernel is looked up or
launched.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from . import checks, registry
from .config import KernelConfig
from .params import build_params, launch_grid, problem_symbols

#: Compute capability the kernels are built for (sm_90a).
REQUIRED_CAPABILITY = (9, 0)


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


def _check_output(torch, t, name, shape, dtype, device) -> None:
    if (tuple(t.shape) != shape or t.dtype != dtype or t.device != device
            or not t.is_contiguous()):
        raise ValueError(f"expected {name} to be a contiguous {dtype} tensor of shape {shape} "
                         f"on {device}, got {t.dtype} {tuple(t.shape)} on {t.device} "
                         f"(contiguous: {t.is_contiguous()})")


def _forward(q, k, v, problem: checks.Problem, *, causal: bool, window: Tuple[int, int],
             diag: int, scale: float, want_lse: bool, kernel_dir=None,
             out=None, lse_out=None):
    """Runs one validated attention; returns (O, LSE or None).

    O is [B, Hq, Sq, Dv] in q's dtype and LSE [B, Hq, Sq] float32, both
    contiguous; ``out``/``lse_out`` may supply them (the GPU tests pass
    NaN-poisoned buffers to catch elements a kernel forgets to write).
    """
    import torch

    p = problem
    o_shape, lse_shape = (p.B, p.Hq, p.Sq, p.Dv), (p.B, p.Hq, p.Sq)
    if out is None:
        out = torch.empty(o_shape, dtype=q.dtype, device=q.device)
    _check_output(torch, out, "out", o_shape, q.dtype, q.device)
    if want_lse:
        if lse_out is None:
            lse_out = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
        _check_output(torch, lse_out, "lse_out", lse_shape, torch.float32, q.device)
    else:
        lse_out = None
    if p.B * p.Hq * p.Sq == 0:
        return out, lse_out
    if p.Skv == 0:
        # No keys at all: every row sees none, so O = 0 and LSE = -inf (ABI semantics).
        out.zero_()
        if lse_out is not None:
            lse_out.fill_(float("-inf"))
        return out, lse_out

    launch = _plan(q, k, v, out, lse_out, problem, causal=causal, window=window, diag=diag,
                   scale=scale, kernel_dir=kernel_dir)
    launch()
    return out, lse_out


def _plan(q, k, v, out, lse_out, problem: checks.Problem, *, causal: bool,
          window: Tuple[int, int], diag: int, scale: float, kernel_dir=None, manifest=None):
    """Everything a launch needs, resolved once; returns ``launch()``.

    Finds (or takes) the kernel, loads it, encodes the tensor maps and packs
    the parameters; the returned callable only enqueues the kernel on the
    current stream of q's device. The benchmark times that callable, so its
    numbers are the kernel's, not Python's. ``manifest`` picks a specific
    kernel (an ablation variant) instead of looking one up by config.
    """
    import torch

    p = problem
    device = _check_device(torch, q.device)
    if manifest is None:
        config = KernelConfig(dtype=p.dtype, head_dim=p.D, head_dim_v=p.Dv, num_heads_q=p.Hq,
                              num_heads_kv=p.Hkv, layout="bhsd", causal=causal, window=window,
                              lse=lse_out is not None)
        manifest = registry.find_kernel(config, kernel_dir, seq_len=p.Skv)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=diag, scale=scale)
    grid = launch_grid(manifest.grid, symbols)

    from .runtime import get_runtime
    rt = get_runtime()
    tensors = {"q": q, "k": k, "v": v, "o": out}
    if lse_out is not None:
        tensors["lse"] = lse_out
    # torch.cuda.device makes the device's primary context current for the CUDA
    # runtime too, and restores the caller's device afterwards.
    with torch.cuda.device(device):
        rt.set_device(device)
        kernel = registry.load_kernel(manifest, device, rt)
        params = build_params(manifest, tensors, symbols, rt.encode_tensor_map)

    def launch():
        with torch.cuda.device(device):
            stream = torch.cuda.current_stream(device).cuda_stream
            rt.launch(kernel.function, grid, manifest.block, manifest.dynamic_smem_bytes,
                      stream, params)
    return launch


def attention(q, k, v, *, causal: bool = False, scale: Optional[float] = None,
              window: Optional[Tuple[int, int]] = None, return_lse: bool = False,
              kernel_dir=None):
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
            instead of $FA_T_KERNEL_DIR.

    Returns:
        O [B, Hq, Sq, Dv] in q's dtype, contiguous; with return_lse, (O, LSE).

    The launch goes through the custom op ``torch.ops.fa_t.attention_fwd``, so
    the call compiles into ``torch.compile`` graphs without a break (except
    with ``kernel_dir``, which launches directly).
    """
    from . import torch_ops  # imports torch; registers torch.ops.fa_t.attention_fwd
    torch_ops.check_inputs(q, k, v, names=("q", "k", "v"))
    if not isinstance(causal, bool):
        raise TypeError(f"expected causal to be a bool, got {type(causal).__name__}")
    window = checks.check_window(window)
    scale = checks.check_scale(scale, q.shape[3])
    import torch
    _check_no_grad(torch, (q, k, v), ("q", "k", "v"))
    diag = k.shape[2] - q.shape[2]
    if kernel_dir is not None:  # a directory cannot cross the op's schema: launch directly
        o, lse = _forward(q, k, v, checks.check_inputs(q, k, v, names=("q", "k", "v")),
                          causal=causal, window=window, diag=diag, scale=scale,
                          want_lse=return_lse, kernel_dir=kernel_dir)
    else:
        o, lse = torch_ops.attention_fwd(q, k, v, causal, scale, window[0], window[1], diag,
                                         return_lse)
    return (o, lse) if return_lse else o


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
    :func:`attention`, it runs through ``torch.ops.fa_t.attention_fwd`` (CPU
    tensors: the torch implementation); :func:`fa_t.patch_sdpa` routes torch's
    own SDPA calls here.
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
    from . import torch_ops  # imports torch; registers torch.ops.fa_t.attention_fwd
    torch_ops.check_inputs(query, key, value, gqa=bool(enable_gqa))
    scale = checks.check_scale(scale, query.shape[3])
    import torch
    _check_no_grad(torch, (query, key, value), ("query", "key", "value"))
    if kernel_dir is not None:  # a directory cannot cross the op's schema: launch directly
        o, _ = _forward(query, key, value, checks.check_inputs(query, key, value),
                        causal=bool(is_causal), window=(-1, -1), diag=0, scale=scale,
                        want_lse=False, kernel_dir=kernel_dir)
    else:
        o, _ = torch_ops.attention_fwd(query, key, value, bool(is_causal), scale, -1, -1, 0,
                                       False)
    return o
