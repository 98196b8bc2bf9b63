"""A fake fa_t runtime and device for the plan cache's CPU tests: the
launcher's calls (load, encode, launch) recorded, a kernel folder as
$FA_T_KERNEL_DIR, no GPU."""

import contextlib
import ctypes

import torch

from fa_t import api, registry
from fa_t.params import TensorMapBuffer

#: The stream every launch of a faked plan goes to.
STREAM = 0x5EED


class FakeRuntime:
    """Records the runtime calls a plan makes; hands out fake handles."""

    def __init__(self):
        self.encoded, self.launches, self.loads = [], [], 0

    def set_device(self, device):
        pass

    def load_file(self, path):
        self.loads += 1
        return 0x100

    def get_function(self, module, name):
        return 0x200

    def set_max_dynamic_smem(self, function, nbytes):
        pass

    def device_context(self, device):
        return 0x300

    def encode_tensor_map(self, args):
        self.encoded.append(args)
        return TensorMapBuffer()

    def launch_patched(self, plan, stream, addresses=None):
        patches = [plan.patches[i] for i in range(plan.patch_count)]
        self.launches.append({"grid": tuple(plan.grid), "stream": stream,
                              "params": ctypes.addressof(plan.params.contents),
                              "patched": [(p.param, p.kind, addresses[p.address])
                                          for p in patches],
                              "address_count": len(addresses),
                              "context": plan.context})


def fake_gpu(monkeypatch, kernel_dir) -> FakeRuntime:
    """Points fa_t at ``kernel_dir`` and a :class:`FakeRuntime` on a fake
    device 0 (current stream :data:`STREAM`, no stream capture), with an
    empty plan cache and kernel registry; returns the runtime."""
    monkeypatch.setenv("FA_T_KERNEL_DIR", str(kernel_dir))
    fake = FakeRuntime()
    monkeypatch.setattr("fa_t.runtime.get_runtime", lambda: fake)
    monkeypatch.setattr(api, "_check_device", lambda torch, device: 0)
    monkeypatch.setattr(api, "_stream_getters", lambda torch: (lambda: 0, lambda i: STREAM))
    monkeypatch.setattr(torch.cuda, "device", lambda index: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(api, "_plans", {})
    monkeypatch.setattr(registry, "_loaded", {})
    return fake
