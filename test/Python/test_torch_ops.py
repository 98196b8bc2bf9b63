"""torch integration: the fa_t::attention_fwd custom op, torch.compile, the SDPA
override and the compile-time log.

On the CPU the op runs its torch implementation, so everything here but the
`gpu` tests is real on any machine: opcheck, the fake implementation under
FakeTensorMode, torch.compile(fullgraph=True) with no graph break, and the
override's routing decisions (on fake CUDA tensors). Needs torch.
"""

import logging

import pytest

torch = pytest.importorskip("torch")

import fa_t  # noqa: E402
from fa_t import sdpa_override, torch_ops  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402
from test_jit import CONFIG as JIT_CONFIG  # noqa: E402
from test_jit import fake_opt  # noqa: E402,F401 (a fixture, used by name)
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

OP = torch.ops.fa_t.attention_fwd.default
F = torch.nn.functional


def rand(*shape, dtype=torch.float64, device="cpu"):
    return torch.randn(*shape, dtype=dtype, device=device)


def qkv(b=2, hq=4, hkv=2, sq=9, skv=13, d=8, dv=8, dtype=torch.float64):
    return rand(b, hq, sq, d, dtype=dtype), rand(b, hkv, skv, d, dtype=dtype), \
        rand(b, hkv, skv, dv, dtype=dtype)


# ---- the op's CPU implementation against the float64 reference -------------

# (causal, window, diag): bottom-right and top-left causal, diagonals that
# leave rows with no key (diag = -12 with Sq = 9: every row is empty), windows.
MASKS = [(False, (-1, -1), 0), (True, (-1, -1), 4), (True, (-1, -1), 0), (True, (-1, -1), -5),
         (True, (-1, -1), -12), (False, (3, 1), 4), (True, (2, -1), 0), (False, (-1, 0), -3)]


@pytest.mark.parametrize("causal, window, diag", MASKS)
def test_cpu_op_matches_reference(causal, window, diag):
    q, k, v = qkv(dv=5)
    o, lse = OP(q, k, v, causal, 0.3, window[0], window[1], diag, True)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal, scale=0.3, diag=diag,
                                         window=None if window == (-1, -1) else window)
    assert o.dtype == torch.float64 and lse.dtype == torch.float32
    assert not torch.isnan(o).any() and not torch.isnan(lse).any()
    torch.testing.assert_close(o, ref_o, rtol=0, atol=1e-12)
    assert torch.equal(torch.isneginf(lse), torch.isneginf(ref_lse))
    finite = torch.isfinite(ref_lse)
    torch.testing.assert_close(lse[finite].double(), ref_lse[finite], rtol=1e-6, atol=1e-6)


def test_cpu_op_low_precision_and_no_keys():
    q, k, v = qkv(dtype=torch.bfloat16)
    o, lse = OP(q, k, v, True, 0.5, -1, -1, 4, False)
    assert o.dtype == torch.bfloat16 and lse.shape == (0,) and lse.dtype == torch.float32
    ref_o, _ = attention_reference(q, k, v, causal=True, scale=0.5)
    assert (o.double() - ref_o).abs().max() < 2e-2
    q, k, v = qkv(skv=0)
    o, lse = OP(q, k, v, False, 0.5, -1, -1, 0, True)
    assert torch.all(o == 0) and torch.all(torch.isneginf(lse))


@pytest.mark.parametrize("args", [
    (False, 0.35, -1, -1, 4, True),
    (True, 0.35, -1, -1, 0, False),
    (True, 0.2, 3, 1, 2, True),
], ids=["full-lse", "causal", "causal-window-lse"])
def test_opcheck(args):
    q, k, v = qkv(dtype=torch.float32)
    torch.library.opcheck(OP, (q, k, v, *args))


def test_cpu_op_rejects_bad_inputs():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"expected q.size\(1\) \(4\) to be a multiple of "
                                         r"k.size\(1\) \(3\)"):
        OP(q, rand(2, 3, 13, 8), rand(2, 3, 13, 8), False, 1.0, -1, -1, 0, False)
    with pytest.raises(TypeError, match=r"expected q.dtype to be one of .* got torch.int64"):
        OP(q.long(), k.long(), v.long(), False, 1.0, -1, -1, 0, False)
    with pytest.raises(TypeError, match=r"expected k.dtype \(torch.float32\) to equal q.dtype"):
        OP(q, k.float(), v, False, 1.0, -1, -1, 0, False)


# ---- the fake implementation --------------------------------------------------

@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("return_lse", [False, True])
def test_fake_impl_shapes_dtypes_strides(device, return_lse):
    # FakeTensorMode makes CUDA tensors without a GPU: the op's fake impl is
    # what torch.compile sees on any device.
    with FakeTensorMode():
        q = torch.empty(3, 8, 100, 128, dtype=torch.bfloat16, device=device)
        # K, V in BSHD memory, viewed as BHSD: the outputs are contiguous regardless.
        k = torch.empty(3, 300, 2, 128, dtype=torch.bfloat16, device=device).transpose(1, 2)
        v = torch.empty(3, 300, 2, 64, dtype=torch.bfloat16, device=device).transpose(1, 2)
        o, lse = OP(q, k, v, True, 0.1, -1, -1, 200, return_lse)
        assert o.shape == (3, 8, 100, 64) and o.dtype == torch.bfloat16
        assert o.is_contiguous() and o.device.type == device
        if return_lse:
            assert lse.shape == (3, 8, 100) and lse.dtype == torch.float32
            assert lse.is_contiguous()
        else:
            assert lse.shape == (0,) and lse.dtype == torch.float32
        with pytest.raises(ValueError, match=r"expected v.size\(2\) \(299\) to equal "
                                             r"k.size\(2\) \(300\)"):
            OP(q, k, v[:, :, :299], False, 0.1, -1, -1, 0, False)


# ---- the Python API on CPU tensors ------------------------------------------

def test_attention_and_sdpa_on_cpu():
    q, k, v = qkv()
    o, lse = fa_t.attention(q, k, v, causal=True, return_lse=True)
    ref_o, ref_lse = attention_reference(q, k, v, causal=True)  # bottom-right
    torch.testing.assert_close(o, ref_o)
    o = fa_t.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, scale=0.2)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, scale=0.2)
    torch.testing.assert_close(o, expected)
    with pytest.raises(ValueError, match=r"expected query.size\(1\) \(4\) to equal key.size\(1\)"):
        fa_t.scaled_dot_product_attention(q, k, v)
    with pytest.raises(NotImplementedError, match=r"no backward pass"):
        fa_t.attention(q.requires_grad_(), k, v)


# ---- torch.compile ------------------------------------------------------------

class Block(torch.nn.Module):
    """Projections around both fa_t entry points, as model code would call them."""

    def __init__(self, dim=32, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, dim)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * self.hd)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        o = fa_t.attention(q, k, v, causal=True)
        o = o + fa_t.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.out(o.transpose(1, 2).reshape(b, s, -1))


def test_compile_fullgraph_no_graph_break():
    torch._dynamo.reset()
    model = Block().double()
    x = rand(2, 10, 32)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.backends.common.aot_autograd(
            fw_compiler=lambda g, _: g)(gm, example_inputs)

    with torch.no_grad():
        explanation = torch._dynamo.explain(model)(x)
        assert explanation.graph_break_count == 0, explanation.break_reasons
        assert explanation.graph_count == 1
        compiled = torch.compile(model, fullgraph=True, backend=backend)
        torch.testing.assert_close(compiled(x), model(x))
        x2 = rand(3, 17, 32)  # new B and S: a recompile at most, never a break
        torch.testing.assert_close(compiled(x2), model(x2))
    targets = {node.target for gm in graphs for node in gm.graph.nodes}
    assert torch.ops.fa_t.attention_fwd.default in targets or \
        torch.ops.fa_t.attention_fwd in targets


def test_compile_with_aot_eager_backend_dynamic():
    torch._dynamo.reset()
    model = Block().float()
    with torch.no_grad():
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager", dynamic=True)
        for s in (7, 19):
            x = rand(2, s, 32, dtype=torch.float32)
            torch.testing.assert_close(compiled(x), model(x))


# ---- the SDPA override ---------------------------------------------------------

@pytest.fixture
def clean_override():
    sdpa_override.disable_sdpa_override()
    sdpa_override.sdpa_override_stats(reset=True)
    original = F.scaled_dot_product_attention
    yield original
    sdpa_override.disable_sdpa_override()
    assert F.scaled_dot_product_attention is original


def test_patch_sdpa_falls_back_and_counts(clean_override, caplog):
    q, k, v = qkv(hkv=4)
    expected = clean_override(q, k, v, is_causal=True)
    mask = torch.ones(9, 13, dtype=torch.bool)
    with caplog.at_level(logging.DEBUG, logger="fa_t"):
        with fa_t.patch_sdpa() as stats:
            assert F.scaled_dot_product_attention is not clean_override
            torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                       expected)
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            with fa_t.patch_sdpa():  # nested: still on after the inner exit
                pass
            assert sdpa_override.sdpa_override_enabled()
    assert F.scaled_dot_product_attention is clean_override
    assert stats == {"fa_t": 0, "fallback": {"not cuda": 2, "attn_mask": 1}}
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert [r.getMessage() for r in infos] == [
        "fa_t: scaled_dot_product_attention falls back to torch (not cuda)",
        "fa_t: scaled_dot_product_attention falls back to torch (attn_mask)"]


def test_override_reaches_multihead_attention(clean_override):
    # Training mode skips the fused fast path, which bypasses F entirely.
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True).train()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        expected, _ = mha(x, x, x, need_weights=False)
        with fa_t.patch_sdpa() as stats:
            got, _ = mha(x, x, x, need_weights=False)
    torch.testing.assert_close(got, expected)
    assert stats["fallback"] == {"not cuda": 1}


def _fake_cuda_qkv(hq=8, hkv=8, s=256, d=128, dtype=torch.bfloat16):
    q = torch.empty(2, hq, s, d, dtype=dtype, device="cuda")
    k = torch.empty(2, hkv, s, d, dtype=dtype, device="cuda")
    return q, k, torch.empty_like(k)


def test_override_routing_decisions(clean_override, monkeypatch):
    reason = sdpa_override._unsupported
    with FakeTensorMode():
        q, k, v = _fake_cuda_qkv()
        # No Hopper device found (this machine has no GPU at all).
        assert reason(q, k, v, None, 0.0, True, False) == "not sm_90"
        monkeypatch.setattr(sdpa_override, "_hopper_devices", (0,))
        assert reason(q, k, v, None, 0.0, True, False) is None
        assert reason(q, k, v, torch.empty(256, 256, device="cuda"), 0.0, False, False) == \
            "attn_mask"
        assert reason(q, k, v, None, 0.1, False, False) == "dropout"
        assert reason(*_fake_cuda_qkv(dtype=torch.float32), None, 0.0, False, False) == "dtype"
        assert reason(*_fake_cuda_qkv(d=96), None, 0.0, False, False) == "head dim"
        assert reason(q[0], k[0], v[0], None, 0.0, False, False) == "not 4-D"
        gqa = _fake_cuda_qkv(hkv=2)
        assert reason(*gqa, None, 0.0, False, False) == "shape"  # torch needs enable_gqa
        assert reason(*gqa, None, 0.0, False, True) is None
        assert reason(q[:, :, :0], k, v, None, 0.0, False, False) == "empty"
        wide = torch.empty(2, 8, 256, 256, dtype=torch.bfloat16, device="cuda")
        assert reason(wide[..., ::2], k, v, None, 0.0, False, False) == "layout"
        # The first 128 of 256 columns: rows 512 bytes apart, fine for TMA.
        assert reason(wide[..., :128], k, v, None, 0.0, False, False) is None
        with torch.enable_grad():
            assert reason(q.requires_grad_(), k, v, None, 0.0, False, False) == "requires grad"


def test_override_routes_supported_calls_to_the_op(clean_override, monkeypatch):
    monkeypatch.setattr(sdpa_override, "_unavailable", lambda *a: None)
    calls = []
    real_op = torch_ops.attention_fwd

    def spy(*args):
        calls.append(args[3:])
        return real_op(*args)
    monkeypatch.setattr(torch_ops, "attention_fwd", spy)
    with FakeTensorMode():
        q, k, v = _fake_cuda_qkv(hkv=2)
        with fa_t.patch_sdpa() as stats:
            monkeypatch.setattr(sdpa_override, "_hopper_devices", (0,))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert o.shape == (2, 8, 256, 128) and o.device.type == "cuda"
    assert calls == [(True, 1.0 / 128 ** 0.5, -1, -1, 0, False)]
    assert stats == {"fa_t": 1, "fallback": {}}


def test_override_rules_trace_without_graph_break(monkeypatch):
    # The routing rules run while torch.compile traces a CUDA call. Traced here
    # on CPU tensors posing as the supported device, every rule is exercised.
    monkeypatch.setattr(sdpa_override, "_DEVICE_TYPE", "cpu")
    monkeypatch.setattr(sdpa_override, "_hopper_devices", (None,))
    torch._dynamo.reset()

    def f(q, k, v, enable_gqa):
        reason = sdpa_override._unsupported(q, k, v, None, 0.0, True, enable_gqa)
        return q + (0 if reason is None else 1)

    q, k, v = (t.to(torch.bfloat16) for t in qkv(hq=4, hkv=2, sq=16, skv=16, d=64, dv=64))
    compiled = torch.compile(f, fullgraph=True, backend="eager")
    assert torch.equal(compiled(q, k, v, True), q)              # supported
    assert torch.equal(compiled(q, k, v, False), q + 1)         # "shape": needs enable_gqa
    wide = torch.zeros(2, 4, 16, 128, dtype=torch.bfloat16)
    assert torch.equal(compiled(wide[..., ::2], k, v, True), wide[..., ::2] + 1)  # "layout"


def test_override_compiles_without_graph_break(clean_override):
    torch._dynamo.reset()

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2

    q, k, v = qkv(hkv=4, dtype=torch.float32)
    with fa_t.patch_sdpa():
        explanation = torch._dynamo.explain(f)(q, k, v)
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(compiled(q, k, v), f(q, k, v))
    assert explanation.graph_break_count == 0, explanation.break_reasons


# ---- the compile-time log ------------------------------------------------------

def test_jit_logs_compile_time(fake_opt, caplog):
    with caplog.at_level(logging.INFO, logger="fa_t"):
        fa_t.find_kernel(JIT_CONFIG)
        fa_t.find_kernel(JIT_CONFIG)  # a cache hit: no second line
    lines = [r.getMessage() for r in caplog.records if r.name == "fa_t.jit"]
    assert len(lines) == 1
    assert lines[0].startswith("compiled fat_attention_fwd in ") and " s into " in lines[0]


# ---- on a Hopper GPU -------------------------------------------------------------

def _needs_hopper():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a CUDA device with compute capability 9.0")


@pytest.mark.gpu
def test_gpu_override_runs_fa_t(clean_override):
    # bf16 D128 H8, no LSE: a config of gpu_configs.all_configs (the cuDNN bar).
    _needs_hopper()
    q, k, v = (torch.randn(2, 8, 300, 128, dtype=torch.bfloat16, device="cuda")
               for _ in range(3))
    with torch.no_grad(), fa_t.patch_sdpa() as stats:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert stats == {"fa_t": 1, "fallback": {}}, stats
    ref, _ = attention_reference(q, k, v, causal=True, diag=0)
    assert (o.double() - ref).abs().max().item() < 2e-2


@pytest.mark.gpu
def test_gpu_compile_inductor_fullgraph():
    _needs_hopper()
    torch._dynamo.reset()

    def f(q, k, v):
        return fa_t.scaled_dot_product_attention(q * 1.0, k, v, is_causal=True) + 1

    q, k, v = (torch.randn(2, 8, 300, 128, dtype=torch.bfloat16, device="cuda")
               for _ in range(3))
    with torch.no_grad():
        got = torch.compile(f, fullgraph=True)(q, k, v)
        ref, _ = attention_reference(q, k, v, causal=True, diag=0)
    assert (got.double() - 1 - ref).abs().max().item() < 3e-2
