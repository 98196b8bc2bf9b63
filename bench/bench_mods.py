"""Score / mask modifications on the Hopper kernel: numerics against float64
and speed beside FlexAttention, fa-t's plain kernel and cuDNN, in one run.

The GPU machine has no fa-t-opt, so the kernels are compiled here first::

    PYTHONPATH=python python3 bench/bench_mods.py build --fa-t-opt build/bin/fa-t-opt \
        --out .kernels-mods
    # on the GPU, beside .kernels-bench (the plain kernels of the standard grid):
    PYTHONPATH=python python3 bench/bench_mods.py run --kernels .kernels-mods \
        --plain .kernels-bench --json out.json

``run`` checks every modification's kernel against a float64 reference on
fresh random inputs (outputs poisoned with NaN first; a ragged key length;
large scores), reports FlexAttention's error on the same inputs beside it,
then times the issue's shapes (bf16; D 64 and 128; 4k and 16k keys) in
useful TFLOP/s (the FLOPs of the visible scores) with each repetition in a
fresh random order (bench.round_robin_ms). Some modifications read captured
tensors (document ids, ALiBi slopes, a relative bias table), made per shape
from one seed so the build and the run trace the same regions. The
``-blocks`` variants pass fa-t a block mask of the same mask
(``fa_t.block_mask``: key ranges per 64 query rows, the kernel skipping the
key blocks outside them and the mask on those of the full ranges), built
once outside the timed loop as Flex's is.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (round_robin_ms, geomean)

import fa_t  # noqa: E402
from fa_t import aot, jit, mods  # noqa: E402
from fa_t.config import KernelConfig  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402

#: (B, H, S, D) of the issue's table: D128 and D64 at 4k and 16k keys (the
#: first three are the shapes of runs 84-113; D64 16k was added in run 114).
SHAPES = [(4, 16, 4096, 128), (1, 16, 16384, 128), (4, 32, 4096, 64),
          (1, 32, 16384, 64)]
#: (B, Sq, Skv) of the numerics checks: a ragged key length, Sq != Skv.
CHECK_SHAPE = (1, 1000, 1531)
#: Variants run with a block mask, by the modification whose mask they
#: sparsify. The sinks' block mask has a hole per query group between the
#: sinks and the window (six columns); sliding-sink-blocks4 drops it (the
#: four columns before run 91), so the kernel walks the hole's blocks too.
BLOCK_SPARSE = {"document-causal-blocks": "document-causal", "prefix-lm-blocks": "prefix-lm",
                "sliding-sink-blocks": "sliding-sink",
                "sliding-sink-blocks4": "sliding-sink",
                "document-causal-runs-blocks": "document-causal-runs"}
#: Documents per sequence of the document masks; their time is set beside
#: the same work with equal documents as a batch of short causal attentions
#: (fa-t's plain kernel and cuDNN at B·DOCUMENTS, S / DOCUMENTS): what a
#: variable-length kernel could reach.
DOCUMENTS = 8


def sliding_sink(window: int, sinks: int):
    """A causal sliding window that keeps the first ``sinks`` keys."""
    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx < window) | (kv_idx < sinks)
    return mask_mod


def alibi_from_head(heads: int):
    """ALiBi with the slopes of the BLOOM paper computed from the head
    (2^(−8(h+1)/H)), so no tensor is captured: s + slope·(kv − q)."""
    c = -8.0 * math.log(2.0) / heads

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + torch.exp((h + 1) * c) * (kv_idx - q_idx)
    return score_mod


def relative_bias(table: torch.Tensor):
    """A learned relative-position bias: s + table[h, kv − q + S − 1], table
    [H, 2S − 1]."""
    offset = (table.shape[1] - 1) // 2

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[h, kv_idx - q_idx + offset]
    return score_mod


def random_documents(b: int, s: int, count: int, gen: torch.Generator) -> torch.Tensor:
    """Document ids [b, s] (int32): ``count`` documents of random lengths
    packed in each sequence."""
    starts = (torch.rand(b, count - 1, generator=gen) * s).long().sort(-1).values
    return torch.searchsorted(starts, torch.arange(s).repeat(b, 1), right=True).int()


def modifications(shape, device="cpu"):
    """name -> (causal, score_mod, mask_mod) at ``shape`` (B, H, S, D), the
    tensors some of them capture on ``device``."""
    b, h, s, _ = shape
    gen = torch.Generator().manual_seed(0)
    docs = random_documents(b, s, DOCUMENTS, gen).to(device)
    slopes = torch.tensor([2.0 ** (-8 * (i + 1) / h) for i in range(h)], device=device)
    table = (torch.randn(h, 2 * s - 1, generator=gen) * 2).to(device)
    out = {
        "softcap": (False, fa_t.softcap(30.0), None),
        "softcap-causal": (True, fa_t.softcap(30.0), None),
        # A cap of 1 on scores of unit spread: every key block of a warp has
        # some |s| > A, so the kernel's tanh stays on MUFU (tanh-poly's other
        # version, perf log run 153).
        "softcap-saturated": (False, fa_t.softcap(1.0), None),
        "alibi-causal": (True, alibi_from_head(h), None),
        "alibi-slopes": (True, fa_t.alibi(slopes), None),
        "prefix-lm": (False, None, fa_t.prefix_lm(1024)),
        "sliding-sink": (True, None, sliding_sink(1024, 4)),
        "document-causal": (True, None, fa_t.document_mask(docs)),
        # The same packing as run bounds per query row (runs=True).
        "document-causal-runs": (True, None, fa_t.document_mask(docs, runs=True)),
        "relative-bias": (False, relative_bias(table), None),
    }
    return {**out, **{name: out[base] for name, base in BLOCK_SPARSE.items()}}


def block_mask_of(name, causal, mask_mod, b, sq, skv, device="cpu"):
    """The block mask variant ``name`` passes fa-t (None unless it is one of
    BLOCK_SPARSE): the ranges of its own mask and causal flag."""
    if name not in BLOCK_SPARSE:
        return None
    bm = fa_t.block_mask(mask_mod, b, None, sq, skv, causal=causal, device=device)
    if name.endswith("blocks4"):
        bm = dataclasses.replace(bm, ranges=bm.ranges[..., :4].contiguous())
    return bm


def regions_of(score_mod, mask_mod, bm):
    """(regions, captures) of a modification, with a block mask's ranges."""
    return mods.attention_regions(score_mod, mask_mod, None if bm is None else bm.ranges)


def factor_of(score_mod):
    """``_forward``'s ``linear_bias_factor`` of a score function, as
    ``fa_t.attention`` passes it: without it a kernel of linear_bias
    "weights" (ALiBi's default) would not be launched."""
    return None if score_mod is None else functools.partial(mods.linear_bias_factor, score_mod)


def entries(tuning=None, only=(), head_dims=(), lse=False):
    """The AOT entries: every modification (or those named in `only`) at
    every shape's config (or those of `head_dims`; with `tuning`,
    --fat-to-ptx options, over the defaults: a variant folder; with `lse`,
    kernels that also write the LSE, as a training forward calls them)."""
    out, seen = [], set()
    for b, h, s, d in SHAPES:
        if head_dims and d not in head_dims:
            continue
        for name, (causal, score_mod, mask_mod) in modifications((b, h, s, d)).items():
            if only and name not in only:
                continue
            config = KernelConfig("bf16", d, d, h, h, causal=causal, lse=lse)
            # A block mask's ranges have the shape of the call (B, ⌈Sq/64⌉):
            # the checks' shape is a kernel of its own.
            shapes = [(b, s, s)] + ([CHECK_SHAPE] if name in BLOCK_SPARSE else [])
            for bb, sq, skv in shapes:
                bm = block_mask_of(name, causal, mask_mod, bb, sq, skv)
                regions, _ = regions_of(score_mod, mask_mod, bm)
                full = {**jit.default_tuning(config, s), **(tuning or {})}
                key = (config, regions, tuple(sorted(full.items())))
                if key not in seen:
                    seen.add(key)
                    out.append((config, full, regions))
    return out


def flex_call(q, k, v, causal, score_mod, mask_mod, compiled):
    """FlexAttention with the same modification (the causal mask and any
    mask_mod as its block mask, per batch entry: document ids differ)."""
    from torch.nn.attention.flex_attention import create_block_mask
    sq, skv = q.shape[2], k.shape[2]

    def keep(b, h, q_idx, kv_idx):
        ok = kv_idx >= 0
        if causal:
            ok = ok & (kv_idx <= q_idx + (skv - sq))
        if mask_mod is not None:
            ok = ok & mask_mod(b, h, q_idx, kv_idx)
        return ok
    block_mask = create_block_mask(keep, q.shape[0], None, sq, skv, device=q.device)
    return lambda: compiled(q, k, v, score_mod=score_mod, block_mask=block_mask)


def check(name, causal, score_mod, mask_mod, h, d, compiled, gen, lse=False):
    """Max-abs and relative errors of fa-t and Flex against float64 (with
    `lse`, fa-t's kernels that write the LSE, and the LSE's error too)."""
    b, sq, skv = CHECK_SHAPE
    bm = block_mask_of(name, causal, mask_mod, b, sq, skv, "cuda")
    q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16, generator=gen) * 3
    k = torch.randn(b, h, skv, d, device="cuda", dtype=torch.bfloat16, generator=gen) * 3
    v = torch.randn(b, h, skv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    scale = d ** -0.5
    ref, ref_lse = attention_reference(q, k, v, causal=causal, scale=scale,
                                       score_mod=score_mod, mask_mod=mask_mod, block_mask=bm)
    from fa_t.api import _forward
    regions, captures = regions_of(score_mod, mask_mod, bm)
    poison = torch.full((b, h, sq, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    out, lse_out = _forward(q, k, v, causal=causal, window=(-1, -1), diag=None, scale=scale,
                            want_lse=lse, out=poison, regions=regions, captures=captures,
                            linear_bias_factor=factor_of(score_mod))
    via_api = fa_t.attention(q, k, v, causal=causal, score_mod=score_mod, mask_mod=mask_mod,
                             block_mask=bm, return_lse=lse)
    if lse:
        via_api = via_api[0]
    try:
        flex = flex_call(q, k, v, causal, score_mod, mask_mod, compiled)()
    except Exception as e:  # e.g. Inductor's kernel for a bias table out of shared memory
        flex = None
        flex_error = f"{type(e).__name__}: {str(e).splitlines()[-1][:160]}"
    torch.cuda.synchronize()

    def err(o):
        diff = (o.double() - ref)
        return {"max_abs": diff.abs().max().item(),
                "rel": (diff.norm() / ref.norm()).item(),
                "nan": bool(torch.isnan(o).any().item())}
    result = {"name": name, "D": d, "H": h, "fa-t": err(out), "api": err(via_api),
              "flex": err(flex) if flex is not None else None,
              "api_equal": bool(torch.equal(out, via_api))}
    if flex is None:
        result["flex_error"] = flex_error
    if lse:
        # Rows that see no key have LSE = −inf in both: equal, not NaN apart.
        got = lse_out.double()
        empty = torch.isneginf(got) & torch.isneginf(ref_lse)
        diff = torch.where(empty, torch.zeros_like(got), got - ref_lse)
        result["lse_max_abs"] = diff.abs().max().item()
        result["fa-t"]["nan"] |= bool(torch.isnan(lse_out).any().item())
    return result


def flex_works(call):
    """Whether FlexAttention compiles and runs this point (Inductor may find
    no kernel that fits, as for a large bias table at D64)."""
    try:
        call()
        return True
    except Exception as e:
        print(f"     flex failed: {type(e).__name__}: {str(e).splitlines()[-1][:160]}")
        return False


def useful_flops(b, h, s, d, causal, mask_mod):
    """4·H·D·(visible (b, q, k) triples), counted on a [B, S, S] grid (a
    document mask differs per batch entry)."""
    bi = torch.arange(b, device="cuda").view(-1, 1, 1)
    i = torch.arange(s, device="cuda").view(1, -1, 1)
    j = torch.arange(s, device="cuda").view(1, 1, -1)
    keep = torch.ones(b, s, s, dtype=torch.bool, device="cuda")
    if causal:
        keep &= j <= i
    if mask_mod is not None:
        keep &= mask_mod(bi, 0, i, j)
    return 4.0 * h * d * keep.sum().item()


def time_point(shape, name, causal, score_mod, mask_mod, compiled, plain_dir, reps,
               variants=(), lse=False):
    b, h, s, d = shape
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    from fa_t.api import _forward
    from torch.nn.attention import SDPBackend
    # Built once, outside the timed loop (as flex_call builds Flex's).
    bm = block_mask_of(name, causal, mask_mod, b, s, s, "cuda")
    regions, captures = regions_of(score_mod, mask_mod, bm)
    factor = factor_of(score_mod)
    impls = {
        "fa-t": lambda: _forward(q, k, v, causal=causal, window=(-1, -1), diag=None,
                                 scale=None, want_lse=lse, regions=regions,
                                 captures=captures, linear_bias_factor=factor),
        "flex": flex_call(q, k, v, causal, score_mod, mask_mod, compiled),
        "fa-t-plain": lambda: _forward(q, k, v, causal=causal, window=(-1, -1), diag=None,
                                       scale=None, want_lse=False, kernel_dir=plain_dir),
        "cudnn-plain": bench._sdpa_launcher(torch.nn.functional, torch.nn.attention.sdpa_kernel,
                                            SDPBackend.CUDNN_ATTENTION, q, k, v, causal),
    }
    if not flex_works(impls["flex"]):
        del impls["flex"]
    ceiling = {}
    if name.startswith("document"):
        # Equal documents as a batch of causal attentions S / DOCUMENTS long.
        qd, kd, vd = (t.view(b, h, DOCUMENTS, s // DOCUMENTS, d).transpose(1, 2)
                      .reshape(b * DOCUMENTS, h, s // DOCUMENTS, d) for t in (q, k, v))
        impls["fa-t-equal-docs"] = lambda: _forward(
            qd, kd, vd, causal=True, window=(-1, -1), diag=None, scale=None,
            want_lse=False, kernel_dir=plain_dir)
        impls["cudnn-equal-docs"] = bench._sdpa_launcher(
            torch.nn.functional, torch.nn.attention.sdpa_kernel,
            SDPBackend.CUDNN_ATTENTION, qd, kd, vd, True)
        ceiling = {n: useful_flops(b * DOCUMENTS, h, s // DOCUMENTS, d, True, None)
                   for n in ("fa-t-equal-docs", "cudnn-equal-docs")}
    for label, directory in variants:
        impls[label] = (lambda directory=directory: _forward(
            q, k, v, causal=causal, window=(-1, -1), diag=None, scale=None,
            want_lse=lse, regions=regions, captures=captures, kernel_dir=directory,
            linear_bias_factor=factor))
    ms = bench.round_robin_ms(impls, reps)
    flops = useful_flops(b, h, s, d, causal, mask_mod)
    plain_flops = useful_flops(b, h, s, d, causal, None)
    tflops = {n: ceiling.get(n, plain_flops if n.endswith("plain") else flops)
              / (t * 1e-3) / 1e12 for n, t in ms.items()}
    out = {"name": name, "B": b, "H": h, "S": s, "D": d, "ms": ms, "tflops": tflops}
    if bm is not None:
        out["block_density"] = bm.density()
        out["block_full_density"] = bm.full_density()
    return out


def run(args):
    from torch.nn.attention.flex_attention import flex_attention
    # One compiled FlexAttention per (modification, shape): past dynamo's
    # default recompile limit (8) Flex silently falls back to its unfused
    # implementation, which is no comparison.
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.recompile_limit = 256
    compiled = torch.compile(flex_attention, dynamic=False)
    import os
    os.environ["FA_T_KERNEL_DIR"] = str(args.kernels)
    gen = torch.Generator(device="cuda").manual_seed(0)
    result = {"checks": [], "times": []}
    failed = 0
    shapes = [SHAPES[i] for i in args.shapes]
    variants = [tuple(v.split("=", 1)) for v in args.variant]
    # Checks at the 4k shapes among --shapes (a variant folder may hold one
    # head dim only).
    for shape in shapes if args.checks else []:
        b, h, s, d = shape
        for name, (causal, score_mod, mask_mod) in modifications(shape, "cuda").items():
            if shape in SHAPES[1::2] or (args.only and name not in args.only):
                continue  # each D's numerics are checked at its 4k shape
            c = check(name, causal, score_mod, mask_mod, h, d, compiled, gen, args.lse)
            # The bar: the error against float64 at most 1.5x Flex's.
            # Where Flex cannot run, the bar is bf16's usual error (its own is
            # 1.6e-3 on these inputs).
            flex_rel = c["flex"]["rel"] if c["flex"] else 2.7e-3
            # With --lse the LSE too: f32 arithmetic, within 1e-2 of float64.
            ok = (not c["fa-t"]["nan"] and c["api_equal"]
                  and c["fa-t"]["rel"] <= 1.5 * flex_rel
                  and c.get("lse_max_abs", 0.0) <= 1e-2)
            failed += not ok
            c["ok"] = ok
            result["checks"].append(c)
            flex_text = (f"flex {c['flex']['max_abs']:.2e} rel {c['flex']['rel']:.2e}"
                         if c["flex"] else f"flex failed ({c['flex_error']})")
            lse_text = (f"   lse max|err| {c['lse_max_abs']:.2e}" if "lse_max_abs" in c
                        else "")
            print(f"check {name:15s} D{d:<3d}  fa-t max|err| {c['fa-t']['max_abs']:.2e} "
                  f"rel {c['fa-t']['rel']:.2e}{lse_text}   {flex_text}   "
                  f"{'ok' if ok else 'FAILED'}", flush=True)
    for shape in shapes:
        b, h, s, d = shape
        for name, (causal, score_mod, mask_mod) in modifications(shape, "cuda").items():
            if args.only and name not in args.only:
                continue
            t = time_point(shape, name, causal, score_mod, mask_mod, compiled,
                           args.plain, args.reps, variants, args.lse)
            result["times"].append(t)
            tf = t["tflops"]
            for label, _ in variants:
                print(f"     variant {label}: {tf[label]:6.1f} ({tf[label] / tf['fa-t']:.3f} of "
                      f"fa-t)")
            flex = (f"flex {tf['flex']:6.1f}  fa-t/flex {tf['fa-t'] / tf['flex']:5.2f}"
                    if "flex" in tf else "flex failed")
            if "fa-t-equal-docs" in tf:
                print(f"     equal documents as a batch: fa-t {tf['fa-t-equal-docs']:6.1f}, "
                      f"cuDNN {tf['cudnn-equal-docs']:6.1f}; fa-t here "
                      f"{tf['fa-t'] / tf['fa-t-equal-docs']:.2f} of fa-t's")
            if "block_density" in t:
                print(f"     block mask: {t['block_density']:.3f} of the key blocks visited, "
                      f"{t['block_full_density']:.3f} with the mask skipped")
            print(f"time {name:15s} B{b} H{h} S{s:<6d} D{d:<3d} fa-t {tf['fa-t']:6.1f}  "
                  f"{flex}  "
                  f"fa-t/plain {tf['fa-t'] / tf['fa-t-plain']:5.2f}  "
                  f"(plain {tf['fa-t-plain']:6.1f}, cuDNN {tf['cudnn-plain']:6.1f})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(f"{len(result['checks']) - failed} checks passed, {failed} failed")
    return 1 if failed else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--fa-t-opt", required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--tuning", nargs="*", default=[], metavar="KEY=VALUE",
                   help="--fat-to-ptx options over the defaults (a variant folder)")
    b.add_argument("--only", nargs="*", default=[], metavar="NAME",
                   help="build only these modifications' kernels")
    b.add_argument("--head-dims", type=int, nargs="*", default=[], metavar="D",
                   help="build only the shapes of these head dims (a variant "
                        "that only they take)")
    b.add_argument("--lse", action="store_true",
                   help="kernels that also write the LSE")
    r = sub.add_parser("run")
    r.add_argument("--kernels", type=Path, required=True)
    r.add_argument("--plain", type=Path, required=True)
    r.add_argument("--reps", type=int, default=20)
    r.add_argument("--json")
    r.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))),
                   help="indices into SHAPES to time (default: all)")
    r.add_argument("--only", nargs="*", default=[], metavar="NAME",
                   help="check and time only these modifications")
    r.add_argument("--no-checks", dest="checks", action="store_false",
                   help="time only")
    r.add_argument("--variant", nargs="*", default=[], metavar="LABEL=DIR",
                   help="also time the kernels of a variant folder (build --tuning)")
    r.add_argument("--lse", action="store_true",
                   help="fa-t and the variants write the LSE (kernels built with "
                        "--lse; the plain kernel, cuDNN and Flex do not)")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        tuning = dict(t.split("=", 1) for t in args.tuning)
        aot.build(entries(tuning, args.only, args.head_dims, args.lse), args.out,
                  args.fa_t_opt)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
