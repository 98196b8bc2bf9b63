"""The plan cache of CUDA calls (fa_t.api._forward), without a GPU.

Fake tensors (fakes.py) stand in for CUDA tensors and a fake runtime records
what would reach libfat_runtime; the kernel is found by the real registry in
a folder holding one manifest. What is checked: a key's first call resolves
the kernel once, later calls launch the packed block with only the addresses
patched, and a call whose tensors differ in anything the plan was checked
for — strides, dtype, alignment, output buffers — is refused with the
error a fresh call gets, and launches nothing.
"""

import copy
import json

import pytest

torch = pytest.importorskip("torch")

from conftest import EXAMPLE_MANIFEST  # noqa: E402
from fa_t import api, registry  # noqa: E402
from fake_runtime import STREAM, fake_gpu  # noqa: E402
from fakes import BF16, F16, F32, FakeDevice, FakeDtype, FakeTensor  # noqa: E402

# The example manifest's config: bf16, D = 128, 16 query heads over 4 KV heads,
# causal, with LSE.
B, HQ, HKV, SQ, SKV, D = 2, 16, 4, 300, 500, 128
@pytest.fixture
def rt(tmp_path, monkeypatch):
    """A fake runtime and device, and a kernel folder as $FA_T_KERNEL_DIR."""
    m = copy.deepcopy(EXAMPLE_MANIFEST)
    (tmp_path / "k.json").write_text(json.dumps({**m, "ptx": "k.ptx"}))
    (tmp_path / "k.ptx").write_text("// not loaded")
    return fake_gpu(monkeypatch, tmp_path)


def qkv(q_ptr=0x10000, k_ptr=0x20000, v_ptr=0x30000, k_dtype=BF16, q_strides=None):
    return (FakeTensor((B, HQ, SQ, D), BF16, q_strides, ptr=q_ptr),
            FakeTensor((B, HKV, SKV, D), k_dtype, ptr=k_ptr),
            FakeTensor((B, HKV, SKV, D), BF16, ptr=v_ptr))


def outputs(o_ptr=0x40000, lse_ptr=0x50000, o_shape=(B, HQ, SQ, D)):
    return FakeTensor(o_shape, BF16, ptr=o_ptr), FakeTensor((B, HQ, SQ), F32, ptr=lse_ptr)


def call(q, k, v, out, lse, **kw):
    args = dict(causal=True, window=(-1, -1), diag=None, scale=None, want_lse=True)
    args.update(kw)
    return api._forward(q, k, v, out=out, lse_out=lse, **args)


def test_first_call_plans_later_calls_patch_addresses(rt):
    o1, l1 = outputs()
    assert call(*qkv(), o1, l1) == (o1, l1)
    o2, l2 = outputs(0x41000, 0x51000)
    assert call(*qkv(0x11000, 0x21000, 0x31000), o2, l2) == (o2, l2)
    assert rt.loads == 1 and len(rt.encoded) == 3, "planned once: one load, one map each"
    assert len(api._plans) == 1
    first, second = rt.launches
    assert first["params"] == second["params"], "one packed block for the key"
    # The example's parameters: q, k, v maps (0-2), o pointer (3), lse pointer (5).
    assert second["patched"] == [(0, 0, 0x11000), (1, 0, 0x21000), (2, 0, 0x31000),
                                 (3, 1, 0x41000), (5, 1, 0x51000)]
    assert [a for _, _, a in first["patched"]] == [0x10000, 0x20000, 0x30000, 0x40000,
                                                   0x50000]
    assert second["stream"] == STREAM and second["context"] == 0x300
    assert second["grid"] == (3, HQ, B)
    # The packed block keeps what the plan encoded; calls never write it.
    assert [a.address for a in rt.encoded] == [0x10000, 0x20000, 0x30000]


def test_captured_tensors_are_patched_per_call(rt, tmp_path):
    # A kernel of modifications takes the tensors they read last, by
    # pointer: the plan is keyed on their shapes, strides, dtypes and device,
    # and each call's are patched in after q, k, v, o, lse (addresses 5 + N).
    m = copy.deepcopy(EXAMPLE_MANIFEST)
    m["params"] += [{"kind": "ptr", "tensor": "capture0"}, {"kind": "ptr", "tensor": "capture1"}]
    (tmp_path / "k.json").write_text(json.dumps({**m, "ptx": "k.ptx"}))
    I32 = FakeDtype("torch.int32")

    def captures(docs_ptr, slopes_ptr, slopes_strides=None, device=None):
        return (FakeTensor((B, SKV), I32, ptr=docs_ptr),
                FakeTensor((HQ,), F32, slopes_strides, ptr=slopes_ptr, device=device))
    call(*qkv(), *outputs(), captures=captures(0x60000, 0x70004))
    call(*qkv(), *outputs(), captures=captures(0x61000, 0x71004))
    assert rt.loads == 1 and len(api._plans) == 1
    first, second = rt.launches
    assert first["patched"][-2:] == [(10, 1, 0x60000), (11, 1, 0x70004)]
    assert second["patched"][-2:] == [(10, 1, 0x61000), (11, 1, 0x71004)]
    assert second["address_count"] == 7 and api._source("capture1", 2) == 6
    # A capture elsewhere, strided or empty is refused when planned.
    with pytest.raises(ValueError, match=r"expected captured tensor 1 \(torch.float32 \(16,\)\) "
                                         r"to be on q's device cuda:0, got cpu"):
        call(*qkv(), *outputs(), captures=captures(0x60000, 0x70000,
                                                   device=FakeDevice("cpu", None)))
    with pytest.raises(ValueError, match=r"expected capture1 .* to be contiguous"):
        call(*qkv(), *outputs(), captures=captures(0x60000, 0x70000, slopes_strides=(2,)))
    with pytest.raises(ValueError, match=r"expected captured tensor 0 \(torch.int32 \(2, 0\)\) "
                                         r"to have 1 to 2147483647 elements .*got 0"):
        call(*qkv(), *outputs(), captures=(FakeTensor((B, 0), I32), captures(0, 0)[1]))
    assert len(rt.launches) == 2 and len(api._plans) == 1


def test_changed_strides_are_checked_again(rt):
    call(*qkv(), *outputs())
    # Same shape, rows 130 elements apart: 260 bytes, not a multiple of 16.
    strides = (HQ * SQ * 130, SQ * 130, 130, 1)
    with pytest.raises(ValueError, match=r"expected q.stride\(2\) \(130\) times the element "
                                         r"size \(2\) = 260 bytes to be a multiple of 16"):
        call(*qkv(q_strides=strides), *outputs())
    assert len(rt.launches) == 1 and len(api._plans) == 1, "refused: not planned, not launched"


def test_changed_dtype_is_checked_again(rt):
    call(*qkv(), *outputs())
    with pytest.raises(TypeError, match=r"expected k.dtype \(torch.float16\) to equal "
                                        r"q.dtype \(torch.bfloat16\)"):
        call(*qkv(k_dtype=F16), *outputs())
    assert len(rt.launches) == 1


def test_misaligned_pointer_on_a_cached_plan(rt):
    call(*qkv(), *outputs())
    with pytest.raises(ValueError, match=r"expected v.data_ptr\(\) \(0x30008\) to be 16-byte "
                                         r"aligned, as TMA requires"):
        call(*qkv(v_ptr=0x30008), *outputs())
    with pytest.raises(ValueError, match=r"expected o.data_ptr\(\) \(0x40008\) to be 16-byte "
                                         r"aligned, as the kernel's 16-byte stores of O require"):
        call(*qkv(), *outputs(o_ptr=0x40008))
    with pytest.raises(ValueError, match=r"expected lse.data_ptr\(\) \(0x50002\) to be 4-byte"):
        call(*qkv(), *outputs(lse_ptr=0x50002))
    with pytest.raises(ValueError, match=r"expected out to be a contiguous torch.bfloat16 "
                                         r"tensor of shape \(2, 16, 300, 128\)"):
        call(*qkv(), *outputs(o_shape=(B, HQ, SQ + 1, D)))
    assert len(rt.launches) == 1, "no refused call launched"


def test_a_refused_first_call_is_not_cached(rt):
    with pytest.raises(ValueError, match=r"expected q.data_ptr\(\) \(0x10008\)"):
        call(*qkv(q_ptr=0x10008), *outputs())
    assert api._plans == {} and rt.launches == []
    with pytest.raises(TypeError, match=r"expected scale to be a float or None, got bool"):
        call(*qkv(), *outputs(), scale=True)
    call(*qkv(), *outputs(), scale=1)
    with pytest.raises(TypeError, match=r"got bool"):  # True == 1, but not the same key
        call(*qkv(), *outputs(), scale=True)
    assert len(rt.launches) == 1


def test_options_and_kernel_folder_are_part_of_the_key(rt, tmp_path, monkeypatch):
    call(*qkv(), *outputs())
    call(*qkv(), *outputs(), scale=0.5)
    call(*qkv(), *outputs(), diag=0)
    assert len(api._plans) == 3
    assert rt.launches[1]["params"] != rt.launches[0]["params"]
    monkeypatch.setenv("FA_T_KERNEL_DIR", str(tmp_path / "elsewhere"))
    with pytest.raises(LookupError, match=r"elsewhere does not exist"):
        call(*qkv(), *outputs())
    monkeypatch.setenv("FA_T_KERNEL_DIR", str(tmp_path))
    call(*qkv(), *outputs(), kernel_dir=[tmp_path])
    assert len(api._plans) == 4


def test_oldest_plan_is_dropped(rt, monkeypatch):
    monkeypatch.setattr(api, "MAX_PLANS", 2)
    for scale in (0.1, 0.2, 0.3):
        call(*qkv(), *outputs(), scale=scale)
    assert [key[15] for key in api._plans] == [0.2, 0.3]


def test_empty_problems_launch_nothing(rt):
    q = FakeTensor((B, HQ, SQ, D), BF16, ptr=0x10000)
    k = v = FakeTensor((B, HKV, 0, D), BF16, ptr=0)
    o, lse = outputs()
    call(q, k, v, o, lse)
    assert o.ops == ["zero_"] and lse.ops == [("fill_", float("-inf"))]
    q0 = FakeTensor((B, HQ, 0, D), BF16, ptr=0x10008)  # no elements: no alignment rule
    call(q0, *qkv()[1:], FakeTensor((B, HQ, 0, D), BF16), FakeTensor((B, HQ, 0), F32))
    assert rt.launches == [] and rt.loads == 0


def test_only_plain_eager_cuda_tensors_skip_the_dispatcher():
    from torch._subclasses.fake_tensor import FakeTensorMode
    cpu = torch.empty(1, 2, 8, 64)
    assert not api._direct(torch, cpu, cpu, cpu)
    with FakeTensorMode():  # fakes of CUDA tensors: the op's fake implementation must run
        fake = torch.empty(1, 2, 8, 64, device="cuda")
        assert fake.is_cuda and not api._direct(torch, fake, fake, fake)


def test_tile_counter_is_the_streams_own(rt, tmp_path, monkeypatch):
    # A kernel of the dynamic tile scheduler takes a counter that is zero
    # at its launch and that it leaves zero: launches on one stream share
    # one, each stream gets its own slot of the device's pool, patched in
    # after the captures — for calls and for the packed plan the benchmark
    # times alike.
    m = copy.deepcopy(EXAMPLE_MANIFEST)
    m["params"] += [{"kind": "ptr", "tensor": "capture0"},
                    {"kind": "ptr", "tensor": "tile_counter"}]
    (tmp_path / "k.json").write_text(json.dumps({**m, "ptx": "k.ptx"}))
    I32 = FakeDtype("torch.int32")
    pool = FakeTensor((api._TileCounters.SLOTS,), I32, ptr=0x90000)

    def ensure_pool(self, torch, device):
        self.pools[device] = pool
    monkeypatch.setattr(api._TileCounters, "ensure_pool", ensure_pool)
    monkeypatch.setattr(api, "_tile_counters", api._TileCounters())
    streams = iter([STREAM, STREAM, 0xBEEF, STREAM])
    monkeypatch.setattr(api, "_stream_getters",
                        lambda torch: (lambda: 0, lambda i: next(streams)))
    docs = FakeTensor((B, SKV), I32, ptr=0x60000)
    for _ in range(3):
        call(*qkv(), *outputs(), captures=(docs,))
    assert rt.loads == 1 and len(api._plans) == 1
    counters = [launch["patched"][-1] for launch in rt.launches]
    assert counters == [(11, 1, 0x90000), (11, 1, 0x90000), (11, 1, 0x90004)]
    assert [launch["patched"][-2] for launch in rt.launches] == [(10, 1, 0x60000)] * 3
    assert rt.launches[0]["address_count"] == 7
    # The packed plan: the resolved tensors' addresses and the stream's counter.
    q, k, v = qkv()
    o, lse = outputs()
    from fa_t import checks
    problem = checks.check_inputs(q, k, v, ("q", "k", "v"), True)
    kernel = api._resolve(torch, q, k, v, o, lse, problem, causal=True, window=(-1, -1),
                          diag=SKV - SQ, scale=D ** -0.5, regions="", captures=(docs,))
    kernel.enqueue(kernel.packed)
    assert rt.launches[-1]["patched"] == [(0, 0, 0x10000), (1, 0, 0x20000), (2, 0, 0x30000),
                                          (3, 1, 0x40000), (5, 1, 0x50000),
                                          (10, 1, 0x60000), (11, 1, 0x90000)]


def test_tile_counters_refuse_a_first_call_under_graph_capture(monkeypatch):
    # The pool must outlive the graphs that launch with it: made under a
    # capture it would come from the graph's private memory.
    counters = api._TileCounters()
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    with pytest.raises(RuntimeError, match=r"first called during CUDA graph capture; call it "
                                           r"once before capturing"):
        counters.ensure_pool(torch, 0)
    assert counters.pools == {}
