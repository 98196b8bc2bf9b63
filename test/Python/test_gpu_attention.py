"""fa-t kernels against the float64 reference, on a Hopper GPU.

Every case draws fresh random inputs and hands the kernel NaN-poisoned
outputs, so an element the kernel forgets to write fails the comparison.
Needs torch, CUDA with compute capability 9.0, libfat_runtime.so
(FA_T_RUNTIME_LIB) and kernels (FA_T_KERNEL_DIR, or fa-t-opt for JIT).

Tolerances, on max |O - O_ref| for unit-normal inputs: the kernels round P to
the input type before P·V and O once at the end, so the error is a few ulps
of the type at |O| <= ~1: bf16 (8-bit mantissa, ulp(1) = 2^-7) 2e-2, f16
(11-bit, 2^-10) 3e-3. LSE comes from f32 scores of exact inputs: 1e-3.
"""

import math

import pytest

from conftest import require_hopper

pytestmark = pytest.mark.gpu
torch = require_hopper()

import fa_t  # noqa: E402
from fa_t import api, checks  # noqa: E402
from gpu_configs import CUDNN_SHAPE, HEAD_DIMS, MASKS, SHAPES, mask_args  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
O_ATOL = {torch.bfloat16: 2e-2, torch.float16: 3e-3}
LSE_ATOL = 1e-3


def rand(b, h, s, d, dtype, layout="bhsd"):
    """A fresh N(0, 1) tensor in logical BHSD order, stored as `layout`."""
    if layout == "bshd":
        return torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2)
    return torch.randn(b, h, s, d, device="cuda", dtype=dtype)


def run_poisoned(q, k, v, *, causal, window, diag, scale=None):
    """The kernel's (O, LSE) written into NaN-filled buffers."""
    p = checks.check_inputs(q, k, v)
    out = torch.full((p.B, p.Hq, p.Sq, p.Dv), float("nan"), dtype=q.dtype, device="cuda")
    lse = torch.full((p.B, p.Hq, p.Sq), float("nan"), dtype=torch.float32, device="cuda")
    o, l = api._forward(q, k, v, causal=causal, window=checks.check_window(window), diag=diag,
                        scale=scale, want_lse=True, out=out, lse_out=lse)
    torch.cuda.synchronize()
    return o, l


def assert_matches(o, lse, ref_o, ref_lse):
    assert not torch.isnan(o).any(), "O has NaN: elements left unwritten or NaN produced"
    assert not torch.isnan(lse).any(), "LSE has NaN"
    empty = torch.isneginf(ref_lse)
    assert torch.equal(torch.isneginf(lse), empty), "LSE = -inf exactly on rows with no key"
    assert torch.all(o[empty] == 0), "rows with no visible key must be 0"
    err = (o.double() - ref_o).abs().max().item()
    assert err <= O_ATOL[o.dtype], f"max |O - ref| = {err:.3g} > {O_ATOL[o.dtype]}"
    if (~empty).any():
        lerr = (lse.double() - ref_lse)[~empty].abs().max().item()
        assert lerr <= LSE_ATOL, f"max |LSE - ref| = {lerr:.3g} > {LSE_ATOL}"


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("d", HEAD_DIMS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mask", MASKS)
def test_forward(dtype, d, shape, mask):
    b, hq, hkv, sq, skv = shape
    dt = DTYPES[dtype]
    q, k, v = rand(b, hq, sq, d, dt), rand(b, hkv, skv, d, dt), rand(b, hkv, skv, d, dt)
    causal, window = mask_args(mask)
    diag = skv - sq
    o, lse = run_poisoned(q, k, v, causal=causal, window=window, diag=diag)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal, window=window, diag=diag)
    assert_matches(o, lse, ref_o, ref_lse)


@pytest.mark.parametrize("causal", [False, True])
def test_nan_input_gives_nan_rows(causal):
    # A NaN in a query row makes that row's sum NaN: the epilogue passes it
    # on (fat.finalize tests l != 0) instead of writing an empty row's zeros;
    # every other row is exact.
    b, hq, hkv, sq, skv = SHAPES[2]
    d, dt = 64, torch.bfloat16
    q, k, v = rand(b, hq, sq, d, dt), rand(b, hkv, skv, d, dt), rand(b, hkv, skv, d, dt)
    q[1, 3, 100, 7] = float("nan")
    o, lse = run_poisoned(q, k, v, causal=causal, window=(-1, -1), diag=skv - sq)
    assert torch.isnan(o[1, 3, 100]).all() and torch.isnan(lse[1, 3, 100])
    o[1, 3, 100], lse[1, 3, 100] = 0, 0
    q[1, 3, 100] = 0
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal, diag=skv - sq)
    ref_o[1, 3, 100], ref_lse[1, 3, 100] = 0, 0
    assert_matches(o, lse, ref_o, ref_lse)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_bshd_strided_inputs(dtype):
    dt = DTYPES[dtype]
    q, k, v = (rand(2, 8, 300, 128, dt, "bshd"), rand(2, 2, 500, 128, dt, "bshd"),
               rand(2, 2, 500, 128, dt, "bshd"))
    o, lse = run_poisoned(q, k, v, causal=True, window=None, diag=200)
    ref_o, ref_lse = attention_reference(q, k, v, causal=True, diag=200)
    assert_matches(o, lse, ref_o, ref_lse)


def test_attention_api_defaults_and_scale():
    q, k, v = (rand(2, 8, 200, 128, torch.bfloat16), rand(2, 4, 300, 128, torch.bfloat16),
               rand(2, 4, 300, 128, torch.bfloat16))
    o, lse = fa_t.attention(q, k, v, causal=True, scale=0.05, return_lse=True)
    torch.cuda.synchronize()
    assert o.shape == (2, 8, 200, 128) and o.dtype == torch.bfloat16 and o.is_contiguous()
    assert lse.shape == (2, 8, 200) and lse.dtype == torch.float32
    ref_o, ref_lse = attention_reference(q, k, v, causal=True, scale=0.05)
    assert_matches(o, lse, ref_o, ref_lse)
    assert fa_t.attention(q, k, v).shape == (2, 8, 200, 128)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("sq, skv", [(256, 256), (100, 333), (333, 100)])
def test_sdpa_matches_torch(is_causal, sq, skv):
    q, k, v = (rand(2, 8, sq, 64, torch.float16), rand(2, 2, skv, 64, torch.float16),
               rand(2, 2, skv, 64, torch.float16))
    o = fa_t.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=True)
    torch.cuda.synchronize()
    # torch's math path in float64 gives its exact semantics (top-left causal).
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=is_causal, enable_gqa=True)
    err = (o.double() - expected).abs().max().item()
    assert err <= O_ATOL[torch.float16], err


def test_validation_happens_before_launch():
    q = rand(1, 4, 64, 96, torch.bfloat16)
    with pytest.raises(NotImplementedError, match=r"expected q.size\(3\) \(96\) to be one of"):
        fa_t.attention(q, q, q)
    q = rand(1, 4, 64, 64, torch.bfloat16)
    k = rand(1, 3, 64, 64, torch.bfloat16)
    with pytest.raises(ValueError, match=r"expected query.size\(1\) \(4\) to be a multiple of "
                                         r"key.size\(1\) \(3\)"):
        fa_t.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    with pytest.raises(ValueError, match=r"expected query.size\(1\) \(4\) to equal key.size\(1\)"):
        fa_t.scaled_dot_product_attention(q, k, k)


def test_empty_and_keyless_problems():
    q = rand(1, 4, 0, 64, torch.float16)
    k = rand(1, 4, 10, 64, torch.float16)
    assert fa_t.attention(q, k, k).shape == (1, 4, 0, 64)
    q = rand(1, 4, 5, 64, torch.float16)
    k = rand(1, 4, 0, 64, torch.float16)
    o, lse = fa_t.attention(q, k, k, return_lse=True)
    assert torch.all(o == 0) and torch.all(torch.isneginf(lse))
    assert math.isinf(lse[0, 0, 0].item())


def rel_error(x, ref):
    """Relative Frobenius error ||x - ref|| / ||ref|| in float64."""
    return ((x.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("d", HEAD_DIMS)
@pytest.mark.parametrize("is_causal", [False, True])
def test_error_within_cudnn_bar(dtype, d, is_causal, record_property):
    """Our relative error is at most 1.5x cuDNN SDPA's on the same inputs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, s = CUDNN_SHAPE
    dt = DTYPES[dtype]
    q, k, v = rand(b, h, s, d, dt), rand(b, h, s, d, dt), rand(b, h, s, d, dt)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=is_causal)
    ours = rel_error(fa_t.scaled_dot_product_attention(q, k, v, is_causal=is_causal), ref)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        cudnn = rel_error(torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=is_causal), ref)
    record_property("fa_t_rel_err", ours)
    record_property("cudnn_rel_err", cudnn)
    print(f"\n{dtype} D{d} causal={is_causal}: fa-t {ours:.3e}  cuDNN {cudnn:.3e}  "
          f"ratio {ours / cudnn:.2f}")
    assert ours <= 1.5 * cudnn, f"fa-t rel. error {ours:.3e} > 1.5 x cuDNN's {cudnn:.3e}"
