"""Symbols, grid, tensor-map arguments, kernelParams and input checks, on fake
tensors (no torch, no GPU)."""

import ctypes
import math
import struct

import pytest

from fa_t import checks, parse_manifest
from fa_t.manifest import GridDim
from fa_t.params import (LOG2E, KernelParams, TensorMapBuffer, build_params, launch_grid,
                         patched_params, problem_symbols, tensor_map_args)
from fakes import BF16, F16, F32, FakeDevice, FakeDtype, FakeTensor

B, HQ, HKV, SQ, SKV, D = 2, 16, 4, 1000, 1500, 128


def qkv(dtype=BF16, layout="bhsd"):
    """Q, K, V in logical BHSD order; 'bshd' makes BSHD memory viewed as BHSD."""
    def make(h, s, d, ptr):
        if layout == "bshd":
            return FakeTensor((B, s, h, d), dtype, ptr=ptr).transpose(1, 2)
        return FakeTensor((B, h, s, d), dtype, ptr=ptr)
    return make(HQ, SQ, D, 0x10000), make(HKV, SKV, D, 0x20000), make(HKV, SKV, D, 0x30000)


def test_problem_symbols():
    s = problem_symbols((B, HQ, SQ, D), (B, HKV, SKV, D), (B, HKV, SKV, 64), diag=SKV - SQ,
                        scale=0.125)
    assert (s["B"], s["Hq"], s["Hkv"], s["Sq"], s["Skv"], s["D"], s["Dv"]) == \
        (B, HQ, HKV, SQ, SKV, D, 64)
    assert s["diag"] == 500
    assert s["scale_log2e"] == pytest.approx(0.125 / math.log(2))
    assert LOG2E == pytest.approx(1 / math.log(2))


def test_grid_ceildiv_and_padding():
    grid = [GridDim("Sq", 128), GridDim("Hq"), GridDim("B")]
    assert launch_grid(grid, {"Sq": 1000, "Hq": 16, "B": 2}) == (8, 16, 2)
    assert launch_grid(grid, {"Sq": 1024, "Hq": 16, "B": 2}) == (8, 16, 2)
    assert launch_grid(grid, {"Sq": 1025, "Hq": 16, "B": 2}) == (9, 16, 2)
    assert launch_grid([GridDim("Sq", 64)], {"Sq": 1}) == (1, 1, 1)


def test_grid_persistent_tiles_bounded_by_sms():
    # Persistent kernels: min(ceil(Sq / M) * Hq * B, SMs) CTAs along x.
    grid = [GridDim("Sq", 128, ("Hq", "B"), 132)]
    assert launch_grid(grid, {"Sq": 1000, "Hq": 4, "B": 2}) == (64, 1, 1)
    assert launch_grid(grid, {"Sq": 4096, "Hq": 16, "B": 4}) == (132, 1, 1)
    assert launch_grid(grid, {"Sq": 1, "Hq": 1, "B": 1}) == (1, 1, 1)
    with pytest.raises(ValueError, match=r"ceil\(Sq / 128\) \* Hq \* B = 4294967296 tiles: "
                                         r"the persistent kernel supports up to 2147483647"):
        launch_grid(grid, {"Sq": 2**31, "Hq": 128, "B": 2})
    with pytest.raises(ValueError, match=r"grid.x = ceil\(Sq / 128\) \* Hq \* B = 0: expected"):
        launch_grid(grid, {"Sq": 0, "Hq": 4, "B": 2})


def test_grid_limits():
    with pytest.raises(ValueError, match=r"grid.z = B = 70000 exceeds the CUDA limit of 65535"):
        launch_grid([GridDim("Sq", 128), GridDim("Hq"), GridDim("B")],
                    {"Sq": 1, "Hq": 1, "B": 70000})
    with pytest.raises(ValueError, match=r"grid.x = ceil\(Sq / 128\) = 0: expected at least 1"):
        launch_grid([GridDim("Sq", 128)], {"Sq": 0})


def test_tensor_map_args_bhsd(manifest_dict):
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    a = tensor_map_args(m.tensor_maps["q"], q)
    assert a.dtype == 9  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    assert a.dims == (D, SQ, HQ, B)
    assert a.strides == (D * 2, SQ * D * 2, HQ * SQ * D * 2)
    assert a.box == (64, 128, 1, 1)
    assert (a.swizzle, a.l2_promotion, a.oob_fill, a.interleave) == (3, 3, 0, 0)
    assert a.address == 0x10000
    kargs = tensor_map_args(m.tensor_maps["k"], k)
    assert kargs.dims == (D, SKV, HKV, B)


def test_tensor_map_args_bshd_strides(manifest_dict):
    # BSHD memory viewed as BHSD: the map follows the logical axes, so the
    # sequence stride is H*D elements and the head stride D.
    m = parse_manifest(manifest_dict)
    q, _, _ = qkv(layout="bshd")
    assert q.shape == (B, HQ, SQ, D)
    a = tensor_map_args(m.tensor_maps["q"], q)
    assert a.dims == (D, SQ, HQ, B)
    assert a.strides == (HQ * D * 2, D * 2, SQ * HQ * D * 2)


def test_tensor_map_args_extent_one_gets_a_legal_stride(manifest_dict):
    m = parse_manifest(manifest_dict)
    # B = 1 with a stride that is not a multiple of 16 bytes: never stepped over.
    q = FakeTensor((1, 2, 8, 64), BF16, strides=(3, 8 * 64, 64, 1))
    a = tensor_map_args(m.tensor_maps["q"], q)
    assert a.strides[2] % 16 == 0 and a.strides[2] >= 2 * 8 * 64 * 2


def test_tensor_map_args_errors(manifest_dict):
    m = parse_manifest(manifest_dict)
    spec = m.tensor_maps["q"]
    with pytest.raises(ValueError, match=r"expected q.stride\(3\) \(2\) to be 1"):
        tensor_map_args(spec, FakeTensor((1, 1, 8, 64), strides=(1024, 1024, 128, 2)))
    with pytest.raises(ValueError, match=r"expected q.stride\(2\) \(68\) times the element size "
                                         r"\(2\) = 136 bytes to be a multiple of 16 bytes"):
        tensor_map_args(spec, FakeTensor((1, 1, 8, 64), strides=(1024, 1024, 68, 1)))
    with pytest.raises(ValueError, match=r"expected q.data_ptr\(\) \(0x1008\) to be 16-byte"):
        tensor_map_args(spec, FakeTensor((1, 1, 8, 64), ptr=0x1008))
    with pytest.raises(TypeError, match=r"expected q.dtype to be one of .*got torch.int8"):
        tensor_map_args(spec, FakeTensor((1, 1, 8, 64), dtype=_Int8()))


class _Int8:
    def __str__(self):
        return "torch.int8"


def test_build_params_order_and_values(manifest_dict):
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    o = FakeTensor((B, HQ, SQ, D), BF16, ptr=0x40000)
    lse = FakeTensor((B, HQ, SQ), F32, ptr=0x50000)
    encoded = []

    def encode(args):
        buf = TensorMapBuffer()
        ctypes.memset(buf.address, len(encoded) + 1, 128)
        encoded.append(args)
        return buf

    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=SKV - SQ, scale=0.1)
    p = build_params(m, {"q": q, "k": k, "v": v, "o": o, "lse": lse}, symbols, encode)
    assert len(p) == len(m.params) == 10
    assert [a.address for a in encoded] == [0x10000, 0x20000, 0x30000]
    ptrs = [p.array[i] for i in range(len(p))]
    # Tensor maps: pointers to 64-byte-aligned 128-byte copies of the encoded maps.
    for i in range(3):
        assert ptrs[i] % 64 == 0
        assert ctypes.string_at(ptrs[i], 128) == bytes([i + 1]) * 128

    def read(i, fmt):
        return struct.unpack(fmt, ctypes.string_at(ptrs[i], struct.calcsize(fmt)))[0]

    assert read(3, "<Q") == 0x40000                 # ptr o
    assert read(4, "<q") == HQ * SQ * D             # stride of o, dim 0 (B), in elements
    assert read(5, "<Q") == 0x50000                 # ptr lse
    assert (read(6, "<i"), read(7, "<i"), read(8, "<i")) == (SQ, SKV, 500)
    assert read(9, "<f") == pytest.approx(0.1 * LOG2E)


def test_build_params_i32_overflow(manifest_dict):
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    o = FakeTensor((B, HQ, SQ, D))
    lse = FakeTensor((B, HQ, SQ), F32)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=2**31, scale=0.1)
    with pytest.raises(ValueError, match=r"diag = 2147483648 does not fit the kernel's 32-bit"):
        build_params(m, {"q": q, "k": k, "v": v, "o": o, "lse": lse}, symbols,
                     lambda args: TensorMapBuffer())


@pytest.mark.parametrize("o_ptr,lse_ptr,message", [
    (0x40008, 0x50000, r"expected o.data_ptr\(\) \(0x40008\) to be 16-byte aligned"),
    (0x40000, 0x50002, r"expected lse.data_ptr\(\) \(0x50002\) to be 4-byte aligned"),
])
def test_build_params_pointer_alignment(manifest_dict, o_ptr, lse_ptr, message):
    # The kernels store O in 16-byte row segments (o_store "staged") and the
    # LSE one float at a time: a misaligned base would fault on the GPU.
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    o = FakeTensor((B, HQ, SQ, D), BF16, ptr=o_ptr)
    lse = FakeTensor((B, HQ, SQ), F32, ptr=lse_ptr)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=0, scale=0.1)
    with pytest.raises(ValueError, match=message):
        build_params(m, {"q": q, "k": k, "v": v, "o": o, "lse": lse}, symbols,
                     lambda args: TensorMapBuffer())


def test_build_params_o_row_stride(manifest_dict):
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    # A row stride of 132 elements is not a whole number of 16-byte segments.
    o = FakeTensor((B, HQ, SQ, D), BF16, ptr=0x40000, strides=(HQ * SQ * 132, SQ * 132, 132, 1))
    lse = FakeTensor((B, HQ, SQ), F32, ptr=0x50000)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=0, scale=0.1)
    with pytest.raises(ValueError, match=r"expected o\.stride\(2\) \(132\) times the element "
                                         r"size \(2\) = 264 bytes to be a multiple of 16 bytes, "
                                         r"as the kernel's 16-byte stores of O require"):
        build_params(m, {"q": q, "k": k, "v": v, "o": o, "lse": lse}, symbols,
                     lambda args: TensorMapBuffer())


def test_build_params_captured_tensors(manifest_dict):
    # A kernel of modifications reads each captured tensor at its data
    # pointer as a row-major array: contiguous, with no alignment rule
    # beyond its elements'; the plan patches it per call like O and LSE.
    manifest_dict["params"] += [{"kind": "ptr", "tensor": "capture0"},
                                {"kind": "ptr", "tensor": "capture1"}]
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    tensors = {"q": q, "k": k, "v": v, "o": FakeTensor((B, HQ, SQ, D), BF16, ptr=0x40000),
               "lse": FakeTensor((B, HQ, SQ), F32, ptr=0x50000),
               "capture0": FakeTensor((B, SKV), FakeDtype("torch.int32"), ptr=0x60004),
               "capture1": FakeTensor((HQ,), F32, ptr=0x70008)}
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=0, scale=0.1)
    p = build_params(m, tensors, symbols, lambda args: TensorMapBuffer())
    assert [struct.unpack("<Q", ctypes.string_at(p.array[i], 8))[0] for i in (10, 11)] == \
        [0x60004, 0x70008]
    assert patched_params(m)[-3:] == [(5, 1, "lse"), (10, 1, "capture0"), (11, 1, "capture1")]
    tensors["capture1"] = FakeTensor((HQ,), F32, strides=(2,), ptr=0x70000)
    with pytest.raises(ValueError, match=r"expected capture1 \(a tensor a score / mask "
                                         r"modification reads, shape \(16,\)\) to be contiguous"):
        build_params(m, tensors, symbols, lambda args: TensorMapBuffer())


def test_tensor_map_buffer_alignment():
    for _ in range(8):
        assert TensorMapBuffer().address % 64 == 0
    assert len(KernelParams([]).array) == 1  # never a zero-length ctypes array


# ---- input checks ---------------------------------------------------------

def test_check_inputs_accepts_bhsd_and_bshd():
    for layout in ("bhsd", "bshd"):
        p = checks.check_inputs(*qkv(layout=layout))
        assert (p.B, p.Hq, p.Hkv, p.Sq, p.Skv, p.D, p.Dv, p.dtype) == \
            (B, HQ, HKV, SQ, SKV, D, D, "bf16")
    assert checks.check_inputs(*qkv(dtype=F16)).dtype == "f16"


def _replace(i, t):
    tensors = list(qkv())
    tensors[i] = t
    return tensors


CHECK_ERRORS = [
    (_replace(0, [1, 2]), TypeError, r"expected query to be a torch.Tensor, got list"),
    (_replace(1, FakeTensor((B, SKV, D))), ValueError,
     r"expected key to be 4-D \(batch, heads, seq, head_dim\), got 3-D"),
    (_replace(2, FakeTensor((B, HKV, SKV, D), F32)), TypeError,
     r"expected value.dtype to be torch.bfloat16 or torch.float16, got torch.float32"),
    (_replace(1, FakeTensor((B, HKV, SKV, D), F16)), TypeError,
     r"expected key.dtype \(torch.float16\) to equal query.dtype \(torch.bfloat16\)"),
    (_replace(0, FakeTensor((B, HQ, SQ, D), device=FakeDevice("cpu", None))), ValueError,
     r"expected query to be on a CUDA device, got cpu"),
    (_replace(2, FakeTensor((B, HKV, SKV, D), device=FakeDevice("cuda", 1))), ValueError,
     r"expected value.device \(cuda:1\) to equal query.device \(cuda:0\)"),
    (_replace(1, FakeTensor((3, HKV, SKV, D))), ValueError,
     r"expected key.size\(0\) \(3\) to equal query.size\(0\) \(2\)"),
    (_replace(1, FakeTensor((B, HKV, SKV, 64))), ValueError,
     r"expected key.size\(3\) \(64\) to equal query.size\(3\) \(128\)"),
    (_replace(2, FakeTensor((B, HKV, 7, D))), ValueError,
     r"expected value.size\(2\) \(7\) to equal key.size\(2\) \(1500\)"),
    (_replace(2, FakeTensor((B, 2, SKV, D))), ValueError,
     r"expected value.size\(1\) \(2\) to equal key.size\(1\) \(4\)"),
    ([FakeTensor((B, 32, SQ, D)), FakeTensor((B, 6, SKV, D)), FakeTensor((B, 6, SKV, D))],
     ValueError, r"expected query.size\(1\) \(32\) to be a multiple of key.size\(1\) \(6\)"),
    ([FakeTensor((B, 4, SQ, 96)), FakeTensor((B, 4, SKV, 96)), FakeTensor((B, 4, SKV, 96))],
     NotImplementedError, r"expected query.size\(3\) \(96\) to be one of the supported head "
                          r"dims 64, 128, 256"),
    (_replace(2, FakeTensor((B, HKV, SKV, 80))), NotImplementedError,
     r"expected value.size\(3\) \(80\) to be one of the supported head dims"),
    (_replace(0, FakeTensor((B, HQ, SQ, D), strides=(HQ * SQ * D, SQ * D, 1, SQ))), ValueError,
     r"expected query.stride\(3\) \(1000\) to be 1"),
    (_replace(1, FakeTensor((B, HKV, SKV, D), strides=(HKV * SKV * 132, SKV * 132, 132, 1))),
     ValueError, r"expected key.stride\(2\) \(132\) times the element size \(2\) = 264 bytes "
                 r"to be a multiple of 16 bytes"),
    (_replace(2, FakeTensor((B, HKV, SKV, D), ptr=0x30002)), ValueError,
     r"expected value.data_ptr\(\) \(0x30002\) to be 16-byte aligned"),
]


@pytest.mark.parametrize("tensors, error, message", CHECK_ERRORS,
                         ids=[str(i) for i in range(len(CHECK_ERRORS))])
def test_check_inputs_errors(tensors, error, message):
    with pytest.raises(error, match=message):
        checks.check_inputs(*tensors)


def test_check_inputs_without_gqa():
    with pytest.raises(ValueError, match=r"expected query.size\(1\) \(16\) to equal "
                                         r"key.size\(1\) \(4\); pass enable_gqa=True"):
        checks.check_inputs(*qkv(), gqa=False)


def test_check_scale_and_window():
    assert checks.check_scale(None, 128) == pytest.approx(1 / math.sqrt(128))
    assert checks.check_scale(0.5, 128) == 0.5
    with pytest.raises(ValueError, match=r"expected scale to be finite, got inf"):
        checks.check_scale(float("inf"), 64)
    with pytest.raises(TypeError, match=r"expected scale to be a float or None, got str"):
        checks.check_scale("0.1", 64)
    assert checks.check_window(None) == (-1, -1)
    assert checks.check_window((256, 0)) == (256, 0)
    with pytest.raises(ValueError, match=r"expected window left \(-2\) to be >= 0, or -1"):
        checks.check_window((-2, 0))
    with pytest.raises(TypeError, match=r"expected window to be a pair \(left, right\)"):
        checks.check_window(5)
    with pytest.raises(TypeError, match=r"expected window right to be an int, got 1.5"):
        checks.check_window((1, 1.5))


def test_build_params_tile_counter(manifest_dict):
    # The dynamic tile scheduler's counter: 4 bytes of int32 the kernel
    # counts in; anything else is refused before the launch.
    manifest_dict["params"].append({"kind": "ptr", "tensor": "tile_counter"})
    m = parse_manifest(manifest_dict)
    q, k, v = qkv()
    o = FakeTensor((B, HQ, SQ, D), BF16, ptr=0x40000)
    lse = FakeTensor((B, HQ, SQ), F32, ptr=0x50000)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=0, scale=0.1)
    tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse}
    counter = FakeTensor((64,), FakeDtype("torch.int32"), ptr=0x90000)
    p = build_params(m, {**tensors, "tile_counter": counter}, symbols,
                     lambda args: TensorMapBuffer())
    assert p.values[-1].value == 0x90000
    assert patched_params(m)[-1] == (len(m.params) - 1, 1, "tile_counter")
    with pytest.raises(ValueError, match=r"expected tile_counter to be an int32 tensor of at "
                                         r"least one element, got torch.float32 \(1,\)"):
        build_params(m, {**tensors, "tile_counter": FakeTensor((1,), F32)}, symbols,
                     lambda args: TensorMapBuffer())
