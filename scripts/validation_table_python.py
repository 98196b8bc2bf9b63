#!/usr/bin/env python3
"""Writes docs/validation-python.md: bad inputs at the Python API and at the
runtime library boundary, with the exception each raised, by running them.

    FA_T_RUNTIME_LIB=build/lib/libfat_runtime.so .venv/bin/python scripts/validation_table_python.py

Runs on a machine without a GPU: the API checks happen before any kernel is
looked up, and the runtime cases need no driver (a missing driver is one of
them). Exits 1 if a case raised nothing or raised something other than
ValueError / TypeError / NotImplementedError / fa_t's errors (no crash, no
bare RuntimeError from deep inside).
"""

import argparse
import ctypes
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

import fa_t  # noqa: E402
from fa_t import errors, params, runtime  # noqa: E402


def t(*shape, dtype=torch.bfloat16, device="cpu", **kw):
    return torch.randn(*shape, device=device, **kw).to(dtype)


def fake_cuda(*shape, dtype=torch.bfloat16):
    """A CUDA tensor without a GPU (FakeTensorMode): the CUDA path's checks run on it."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    global _fake_mode
    _fake_mode = globals().get("_fake_mode") or FakeTensorMode(allow_non_fake_inputs=True)
    with _fake_mode:
        return torch.empty(*shape, device="cuda", dtype=dtype)


def cuda_path(shape_q, shape_kv, dtype=torch.bfloat16, **kw):
    """fa_t.attention on fake CUDA tensors of the given shapes."""
    def call():
        q = fake_cuda(*shape_q, dtype=dtype)
        k = fake_cuda(*shape_kv, dtype=dtype)
        with _fake_mode:
            return fa_t.attention(q, k, k, **kw)
    return call


def api_cases():
    q = t(1, 4, 64, 64)
    k = t(1, 4, 64, 64)
    meta = dict(device="meta")
    return [
        ("CUDA: float32 inputs", cuda_path((1, 4, 64, 64), (1, 4, 64, 64), torch.float32)),
        ("CUDA: head dim 96", cuda_path((1, 4, 64, 96), (1, 4, 64, 96))),
        ("CUDA: head dim 32", cuda_path((1, 4, 64, 32), (1, 4, 64, 32))),
        ("CUDA: K with an odd row stride (TMA needs 16-byte strides)",
         lambda: _strided_k()),
        ("int8 inputs", lambda: fa_t.attention(q.to(torch.int8), k.to(torch.int8), k.to(torch.int8))),
        ("mixed dtypes", lambda: fa_t.attention(q, k.half(), k)),
        ("3-D query", lambda: fa_t.attention(q[0], k, k)),
        ("5-D query", lambda: fa_t.attention(q[None], k, k)),
        ("q and k head dims differ", lambda: fa_t.attention(q, t(1, 4, 64, 128), t(1, 4, 64, 128))),
        ("batch mismatch", lambda: fa_t.attention(q, t(2, 4, 64, 64), t(2, 4, 64, 64))),
        ("k and v lengths differ", lambda: fa_t.attention(q, k, t(1, 4, 65, 64))),
        ("Hq not a multiple of Hkv", lambda: fa_t.attention(t(1, 6, 64, 64), t(1, 4, 64, 64), t(1, 4, 64, 64))),
        ("meta-device tensors", lambda: fa_t.attention(t(1, 4, 64, 64, **meta), t(1, 4, 64, 64, **meta), t(1, 4, 64, 64, **meta))),
        ("q on CPU, k on meta", lambda: fa_t.attention(q, t(1, 4, 64, 64, **meta), k)),
        ("a list instead of a tensor", lambda: fa_t.attention([[1.0]], k, k)),
        ("causal not a bool", lambda: fa_t.attention(q, k, k, causal=1)),
        ("window of three", lambda: fa_t.attention(q, k, k, window=(1, 2, 3))),
        ("window bound -2", lambda: fa_t.attention(q, k, k, window=(-2, 0))),
        ("window bound a float", lambda: fa_t.attention(q, k, k, window=(1.5, 0))),
        ("scale 0", lambda: fa_t.attention(q, k, k, scale=0.0)),
        ("scale -1", lambda: fa_t.attention(q, k, k, scale=-1.0)),
        ("scale NaN", lambda: fa_t.attention(q, k, k, scale=float("nan"))),
        ("scale a string", lambda: fa_t.attention(q, k, k, scale="0.1")),
        ("inputs that need a gradient", lambda: fa_t.attention(q.clone().requires_grad_(), k, k)),
        ("sdpa attn_mask", lambda: fa_t.scaled_dot_product_attention(q, k, k, attn_mask=torch.ones(64, 64, dtype=torch.bool))),
        ("sdpa dropout_p 0.1", lambda: fa_t.scaled_dot_product_attention(q, k, k, dropout_p=0.1)),
        ("sdpa GQA without enable_gqa", lambda: fa_t.scaled_dot_product_attention(t(1, 8, 64, 64), k, k)),
        ("sdpa GQA 4 / 3 heads", lambda: fa_t.scaled_dot_product_attention(q, t(1, 3, 64, 64), t(1, 3, 64, 64), enable_gqa=True)),
        ("sdpa 3-D inputs", lambda: fa_t.scaled_dot_product_attention(q[0], k[0], k[0])),
        ("kernel_dir that does not exist", lambda: fa_t.find_kernel(
            fa_t.KernelConfig("bf16", 64, 64, 4, 4), kernel_dir="/nonexistent", allow_jit=False)),
    ]


def _strided_k():
    q = fake_cuda(1, 4, 64, 64)
    big = fake_cuda(1, 4, 64, 65)
    with _fake_mode:
        k = big[..., :64]  # rows 65 elements = 130 bytes apart
        return fa_t.attention(q, k, k)


def runtime_cases():
    lib = os.environ.get("FA_T_RUNTIME_LIB", str(ROOT / "build/lib/libfat_runtime.so"))
    bad_ptx = tempfile.NamedTemporaryFile(suffix=".ptx", delete=False)
    bad_ptx.write(b".version 8.0\n.target sm_90a\nthis is not ptx\n")
    bad_ptx.close()

    def fresh():
        return runtime.Runtime(lib)

    def with_fake_driver(call):
        # A "driver" that is not libcuda at all: init must refuse it by name.
        rt = fresh()
        rt.init(driver_path="/lib/x86_64-linux-gnu/libm.so.6")
        return call(rt)

    return [
        ("FA_T_RUNTIME_LIB names no file", lambda: runtime.Runtime("/nonexistent/libfat_runtime.so")),
        ("a library that is not the runtime", lambda: runtime.Runtime("/lib/x86_64-linux-gnu/libm.so.6")),
        ("no CUDA driver at the given path", lambda: fresh().init(driver_path="/nonexistent/libcuda.so.1")),
        ("a driver path that is not libcuda", lambda: with_fake_driver(lambda rt: rt.device_count())),
        ("load PTX before init", lambda: fresh().load_file(bad_ptx.name)),
        ("launch before init", lambda: fresh().launch(0, (1, 1, 1), (128, 1, 1), 0, 0, [])),
        ("too much shared memory (before init)", lambda: fresh().set_max_dynamic_smem(0, 1 << 20)),
        ("a tensor map re-pointed at a misaligned address",
         lambda: fresh().replace_address(params.TensorMapBuffer(), 0x7F0000000008)),
        ("a patched launch naming no parameter", _patch_beyond_the_block(fresh)),
    ]


def _patch_beyond_the_block(fresh):
    """A launch of one packed parameter whose patch names a second one."""
    def call():
        block = params.KernelParams([ctypes.c_uint64(0x7F0000001000)])
        patch = (params.ParamPatch * 1)(params.ParamPatch(1, 1, 0))
        plan = params.LaunchPlan(0x1000, (1, 1, 1), (128, 1, 1), 0, block.array, 1, patch, 1,
                                 None)
        fresh().launch_patched(plan, 0, (ctypes.c_uint64 * 1)(0x7F0000002000))
    return call


def run(cases):
    rows, bad = [], 0
    allowed = (ValueError, TypeError, NotImplementedError, FileNotFoundError, errors.CudaError,
               errors.KernelNotFoundError, errors.CompileError, errors.ManifestError)
    for name, call in cases:
        try:
            call()
            kind, msg, ok = "—", "(no exception)", False
        except allowed as e:
            kind, msg, ok = type(e).__name__, str(e).splitlines()[0], True
        except Exception as e:  # noqa: BLE001 - the point is to see what leaks
            kind, msg, ok = type(e).__name__, str(e).splitlines()[0], False
        bad += not ok
        rows.append((name, kind, msg.replace("|", "\\|")))
    return rows, bad


def main():
    import warnings
    warnings.filterwarnings("ignore", message=".*data pointer of FakeTensor.*")
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", default=str(ROOT / "docs/validation-python.md"))
    a = ap.parse_args()
    api_rows, api_bad = run(api_cases())
    rt_rows, rt_bad = run(runtime_cases())
    lines = ["# Input validation at the Python API and the runtime library", "",
             "Each bad input and the exception it raised, generated by",
             "`scripts/validation_table_python.py` on a machine without a GPU. Rows marked",
             "CUDA use fake CUDA tensors (FakeTensorMode), so the CUDA path's own checks run;",
             "CPU tensors are served by the torch implementation (any float dtype and head",
             "dim) after the shape checks. The compiler boundary is in `docs/validation.md`.", "",
             "## Python API", "", "| bad input | exception | message |", "|---|---|---|"]
    lines += [f"| {n} | {k} | {m} |" for n, k, m in api_rows]
    lines += ["", "## Runtime library (`libfat_runtime.so` through `fa_t.runtime`)", "",
              "| bad input | exception | message |", "|---|---|---|"]
    lines += [f"| {n} | {k} | {m} |" for n, k, m in rt_rows]
    pathlib.Path(a.output).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {a.output}: {len(api_rows) + len(rt_rows)} cases, {api_bad + rt_bad} not "
          f"refused cleanly")
    return 1 if api_bad + rt_bad else 0


if __name__ == "__main__":
    sys.exit(main())
