"""libfat_runtime.so through ctypes: the no-driver path and tensor-map
validation, which need no GPU. Skipped unless FA_T_RUNTIME_LIB names the
built library (build/lib/libfat_runtime.so)."""

import os

import pytest

from fa_t import CudaError
from fa_t.params import TensorMapArgs, TensorMapBuffer

LIB = os.environ.get("FA_T_RUNTIME_LIB")
pytestmark = pytest.mark.skipif(not LIB, reason="FA_T_RUNTIME_LIB is not set")


@pytest.fixture(scope="module")
def rt():
    from fa_t.runtime import Runtime
    return Runtime(LIB)


def good_args(**changes):
    """A valid bf16 Q map of a [2, 4, 1000, 128] BHSD tensor; `changes` break it."""
    fields = dict(dtype=9, address=0x7F0000000000, dims=(128, 1000, 4, 2),
                  strides=(256, 256000, 1024000), box=(64, 128, 1, 1), swizzle=3,
                  l2_promotion=3, oob_fill=0, interleave=0)
    fields.update(changes)
    return TensorMapArgs(**fields)


def test_no_driver(rt):
    if rt.initialized:
        pytest.skip("a CUDA driver is already loaded in this process")
    with pytest.raises(CudaError, match=r"could not load the CUDA driver "
                                        r"'/nonexistent/libcuda.so.1'"):
        rt.init("/nonexistent/libcuda.so.1")
    assert not rt.initialized
    with pytest.raises(CudaError, match=r"the CUDA driver is not loaded: call "
                                        r"fat_runtime_init\(\) first"):
        rt.device_count()


@pytest.mark.parametrize("changes, message", [
    (dict(address=0x7F0000000008), r"the global address 139637976727560 is not 16-byte aligned"),
    (dict(strides=(256, 256008, 1024000)),
     r"strides\[1\] = 256008 bytes \(dimension 2\) is not a multiple of 16"),
    (dict(box=(64, 300, 1, 1)), r"box\[1\] = 300 is out of range 1..256"),
    (dict(box=(128, 128, 1, 1)), r"the inner box dimension is 256 bytes \(box\[0\] = 128 "
                                 r"elements of 2 bytes\), wider than the 128-byte swizzle span"),
    (dict(dims=(128, 1000, 4, 2, 1, 1), strides=(256, 256000, 1024000, 2048000, 2048000),
          box=(64, 128, 1, 1, 1, 1)), r"rank 6 is out of range 1..5"),
    (dict(dims=(128, 0, 4, 2)), r"dims\[1\] = 0 is out of range 1..2\^32"),
    (dict(dtype=42), r"unknown data type 42"),
])
def test_tensor_map_validation(rt, changes, message):
    with pytest.raises(CudaError, match=r"cuTensorMapEncodeTiled: " + message):
        rt.encode_tensor_map(good_args(**changes))


def test_valid_map_needs_the_driver(rt):
    if rt.initialized:
        pytest.skip("a CUDA driver is loaded; the map would really be encoded")
    with pytest.raises(CudaError, match=r"not loaded"):
        rt.encode_tensor_map(good_args(), TensorMapBuffer())


@pytest.mark.parametrize("address, message", [
    (0, r"the global address is 0 \(a null tensor\)"),
    (0x7F0000000008, r"the global address 139637976727560 is not 16-byte aligned"),
])
def test_replace_address_validation(rt, address, message):
    with pytest.raises(CudaError, match=r"cuTensorMapReplaceAddress: " + message):
        rt.replace_address(TensorMapBuffer(), address)


def _patched_launch(rt, patches, addresses):
    """A launch of a fake function with a q map and an o pointer re-pointed."""
    import ctypes
    from fa_t.params import KernelParams, LaunchPlan, ParamPatch
    params = KernelParams([TensorMapBuffer(), ctypes.c_uint64(0x7F0000001000)])
    patch_array = (ParamPatch * len(patches))(*(ParamPatch(*p) for p in patches))
    plan = LaunchPlan(0x1000, (132, 1, 1), (384, 1, 1), 0, params.array, len(params),
                      patch_array, len(patches), None)
    rt.launch_patched(plan, 0, (ctypes.c_uint64 * len(addresses))(*addresses))


@pytest.mark.parametrize("patches, addresses, message", [
    ([(0, 0, 0), (1, 1, 1)], [0x7F0000002008, 0x7F0000003000],
     r"patch 0 \(parameter 0\): the global address 139637976735752 is not 16-byte aligned"),
    ([(2, 1, 0)], [0x7F0000002000], r"patch 0 \(parameter 2\): no such parameter; the plan has 2"),
    ([(1, 1, 1)], [0x7F0000002000], r"patch 0 \(parameter 1\): address 1 of a call that gives 1"),
    ([(1, 5, 0)], [0x7F0000002000], r"patch 0 \(parameter 1\): unknown kind 5"),
])
def test_launch_patched_validation(rt, patches, addresses, message):
    with pytest.raises(CudaError, match=r"fat_launch_patched: " + message):
        _patched_launch(rt, patches, addresses)


def test_launch_patched_needs_the_driver(rt):
    if rt.initialized:
        pytest.skip("a CUDA driver is loaded; the fake function would really be launched")
    with pytest.raises(CudaError, match=r"not loaded"):
        _patched_launch(rt, [(0, 0, 0), (1, 1, 1)], [0x7F0000002000, 0x7F0000003004])
