"""The plan cache of eager calls on a Hopper GPU: CUDA graphs, torch.compile,
threads, a cached plan refusing a misaligned tensor, and the host time.

Every case draws fresh random inputs (never zeros) and poisons its outputs
with NaN first, so a kernel that did not run, or ran on stale addresses,
fails the float64 comparison. The kernels are configs of gpu_configs.py
(bf16, D = 128, 8 heads).
"""

import threading
import time

import pytest

from conftest import require_hopper

pytestmark = pytest.mark.gpu
torch = require_hopper()

import fa_t  # noqa: E402
from fa_t import api  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402
from gpu_configs import PLAN_CACHE_SHAPE  # noqa: E402

ATOL = 2e-2  # bf16, as test_gpu_attention.py
B, H, S, D = PLAN_CACHE_SHAPE


def rand(s=S):
    return torch.randn(B, H, s, D, device="cuda", dtype=torch.bfloat16)


def max_err(o, q, k, v, causal, diag=None):
    assert not torch.isnan(o).any(), "O has NaN: the kernel left elements unwritten"
    ref, _ = attention_reference(q, k, v, causal=causal, diag=diag)
    return (o.double() - ref).abs().max().item()


@pytest.mark.parametrize("entry", ["attention", "sdpa"])
def test_cuda_graph_replays_on_new_inputs(entry):
    q, k, v = rand(), rand(), rand()

    def call():
        if entry == "sdpa":
            return fa_t.scaled_dot_product_attention(q, k, v, is_causal=True), None
        return fa_t.attention(q, k, v, causal=True, return_lse=True)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: plans and loads the kernel outside the capture
        call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, lse = call()
    for _ in range(2):
        for t in (q, k, v):
            t.copy_(torch.randn_like(t))
        o.fill_(float("nan"))
        if lse is not None:
            lse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert max_err(o, q, k, v, causal=True, diag=0) <= ATOL
        if lse is not None:
            _, ref_lse = attention_reference(q, k, v, causal=True)
            assert (lse.double() - ref_lse).abs().max().item() <= 1e-3


def test_compiled_calls_run_the_cached_op():
    torch._dynamo.reset()
    api._plans.clear()

    def f(q, k, v):
        return fa_t.attention(q * 1.0, k, v, causal=True) + 1

    compiled = torch.compile(f, fullgraph=True)
    with torch.no_grad():
        for _ in range(2):
            q, k, v = rand(), rand(), rand()
            got = compiled(q, k, v)
            torch.cuda.synchronize()
            assert max_err(got - 1, q, k, v, causal=True) <= 3e-2
    assert len(api._plans) == 1, "the op's CUDA implementation planned once, then hit"


def test_op_copies_what_a_cached_plan_refuses():
    q, k, v = rand(), rand(), rand()
    fa_t.attention(q, k, v, causal=True)
    # The same shape and strides 2 bytes into a buffer: the cached plan's key.
    buf = torch.randn(q.numel() + 8, device="cuda", dtype=torch.bfloat16)
    shifted = buf[1:1 + q.numel()].view_as(q)
    assert shifted.stride() == q.stride() and shifted.data_ptr() % 16
    with pytest.raises(ValueError, match=r"expected q.data_ptr\(\) \(0x[0-9a-f]+\) to be "
                                         r"16-byte aligned"):
        fa_t.attention(shifted, k, v, causal=True)
    o, _ = torch.ops.fa_t.attention_fwd(shifted, k, v, True, D ** -0.5, -1, -1, 0, False)
    torch.cuda.synchronize()
    assert max_err(o, shifted, k, v, causal=True) <= ATOL


def test_a_thread_without_a_current_context():
    q, k, v = rand(), rand(), rand()
    fa_t.attention(q, k, v, causal=True)  # planned on this thread
    result = {}

    def worker():
        try:
            result["o"] = fa_t.attention(q, k, v, causal=True)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 (reported below)
            result["error"] = e
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "error" not in result, result.get("error")
    assert max_err(result["o"], q, k, v, causal=True) <= ATOL


def test_host_time_per_call():
    """A loose bound (4x the 25 µs bar of bench/host_overhead.py) that fails
    if calls fall back to per-call lookups (~500 µs before the cache)."""
    q, k, v = (torch.randn(1, H, 128, D, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    with torch.no_grad():
        for _ in range(20):
            fa_t.attention(q, k, v, causal=True)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(200):
            fa_t.attention(q, k, v, causal=True)
        torch.cuda.synchronize()
    per_call = (time.perf_counter() - start) / 200 * 1e6
    assert per_call <= 100, f"{per_call:.1f} µs per call"
