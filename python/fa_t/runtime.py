"""ctypes bindings to libfat_runtime.so (include/fa-t/Runtime/Runtime.h).

The library is found, in order, at ``$FA_T_RUNTIME_LIB``, at
``fa_t/lib/libfat_runtime.so`` inside this package, and through the dynamic
linker's search path (``libfat_runtime.so``). Loading it needs no GPU; the
CUDA driver is loaded only by :meth:`Runtime.init`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path
from typing import Optional, Sequence

from .errors import CudaError
from .params import LaunchPlan, TensorMapArgs, TensorMapBuffer

#: FAT_RUNTIME_ABI_VERSION this binding was written against.
ABI_VERSION = 2
LIBRARY_NAME = "libfat_runtime.so"


def find_runtime_library() -> str:
    """The path (or soname) of the runtime library to load; see the module doc."""
    env = os.environ.get("FA_T_RUNTIME_LIB")
    if env:
        if not os.path.isfile(env):
            raise FileNotFoundError(f"FA_T_RUNTIME_LIB={env!r} is not a file")
        return env
    bundled = Path(__file__).resolve().parent / "lib" / LIBRARY_NAME
    if bundled.is_file():
        return str(bundled)
    found = ctypes.util.find_library("fat_runtime")
    if found:
        return found
    raise FileNotFoundError(
        f"cannot find {LIBRARY_NAME}: build it (ninja -C build FatRuntime, or "
        f"cmake -S lib/Runtime -B build-rt && ninja -C build-rt) and set "
        f"FA_T_RUNTIME_LIB to build/lib/{LIBRARY_NAME}")


class Runtime:
    """One loaded libfat_runtime.so. Every failing call raises :class:`CudaError`
    carrying the library's message."""

    def __init__(self, path: Optional[str] = None):
        self.path = path or find_runtime_library()
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise FileNotFoundError(f"cannot load the fa-t runtime library {self.path!r}: {e} "
                                    f"(build it with scripts/build.sh; FA_T_RUNTIME_LIB names "
                                    f"it)") from None
        c_int, c_uint32, c_uint64, c_void_p, c_char_p = (
            ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p)
        u32_3 = ctypes.c_uint32 * 3
        signatures = {
            "fat_runtime_abi_version": ([], c_int),
            "fat_last_error": ([], c_char_p),
            "fat_runtime_init": ([c_char_p], c_int),
            "fat_runtime_is_initialized": ([], c_int),
            "fat_driver_version": ([ctypes.POINTER(c_int)], c_int),
            "fat_device_count": ([ctypes.POINTER(c_int)], c_int),
            "fat_device_compute_capability": (
                [c_int, ctypes.POINTER(c_int), ctypes.POINTER(c_int)], c_int),
            "fat_set_device": ([c_int], c_int),
            "fat_device_context": ([c_int, ctypes.POINTER(c_void_p)], c_int),
            "fat_module_load_ptx": ([c_char_p, ctypes.POINTER(c_void_p)], c_int),
            "fat_module_load_file": ([c_char_p, ctypes.POINTER(c_void_p)], c_int),
            "fat_module_unload": ([c_void_p], c_int),
            "fat_module_get_function": ([c_void_p, c_char_p, ctypes.POINTER(c_void_p)], c_int),
            "fat_function_set_max_dynamic_smem": ([c_void_p, ctypes.c_size_t], c_int),
            "fat_tensor_map_encode_tiled": (
                [c_void_p, c_int, c_uint32, c_uint64, ctypes.POINTER(c_uint64),
                 ctypes.POINTER(c_uint64), ctypes.POINTER(c_uint32), ctypes.POINTER(c_uint32),
                 c_int, c_int, c_int, c_int], c_int),
            "fat_tensor_map_replace_address": ([c_void_p, c_uint64], c_int),
            "fat_launch": ([c_void_p, u32_3, u32_3, c_uint32, c_void_p,
                            ctypes.POINTER(c_void_p)], c_int),
            "fat_launch_patched": ([ctypes.POINTER(LaunchPlan), c_void_p,
                                    ctypes.POINTER(c_uint64), c_uint32], c_int),
            "fat_synchronize": ([], c_int),
        }
        # The version first: a library built from an older fa-t lacks the
        # newer entry points, and its version says so better than their names.
        for name, (argtypes, restype) in signatures.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise CudaError(f"{self.path} is not the fa-t runtime library: it has no "
                                f"{name}") from None
            fn.argtypes, fn.restype = argtypes, restype
            if name == "fat_runtime_abi_version" and fn() != ABI_VERSION:
                raise CudaError(f"{self.path} implements runtime ABI version {fn()}; this "
                                f"fa_t needs version {ABI_VERSION} (rebuild the library)")
        self._lib = lib
        self._launch_patched = lib.fat_launch_patched

    def last_error(self) -> str:
        """The calling thread's last error message ("" after a success)."""
        return self._lib.fat_last_error().decode("utf-8", "replace")

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise CudaError(self.last_error())

    def init(self, driver_path: Optional[str] = None) -> None:
        """Loads the CUDA driver (default libcuda.so.1) and calls cuInit."""
        self._check(self._lib.fat_runtime_init(driver_path.encode() if driver_path else None))

    @property
    def initialized(self) -> bool:
        return bool(self._lib.fat_runtime_is_initialized())

    def driver_version(self) -> int:
        """The driver's CUDA version, e.g. 13000."""
        out = ctypes.c_int()
        self._check(self._lib.fat_driver_version(ctypes.byref(out)))
        return out.value

    def device_count(self) -> int:
        out = ctypes.c_int()
        self._check(self._lib.fat_device_count(ctypes.byref(out)))
        return out.value

    def compute_capability(self, device: int) -> tuple:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.fat_device_compute_capability(
            device, ctypes.byref(major), ctypes.byref(minor)))
        return major.value, minor.value

    def set_device(self, device: int) -> None:
        """Makes the device's primary context (PyTorch's) current on this thread."""
        self._check(self._lib.fat_set_device(device))

    def device_context(self, device: int) -> int:
        """The device's primary context (PyTorch's), retained, not made current:
        the ``context`` of :meth:`launch_patched`."""
        context = ctypes.c_void_p()
        self._check(self._lib.fat_device_context(device, ctypes.byref(context)))
        return context.value

    def load_ptx(self, ptx: str) -> int:
        """Loads PTX text into the current context; returns the module handle."""
        module = ctypes.c_void_p()
        self._check(self._lib.fat_module_load_ptx(ptx.encode("utf-8"), ctypes.byref(module)))
        return module.value

    def load_file(self, path) -> int:
        """Loads a PTX, cubin or fatbin file; returns the module handle."""
        module = ctypes.c_void_p()
        self._check(self._lib.fat_module_load_file(os.fsencode(path), ctypes.byref(module)))
        return module.value

    def unload(self, module: int) -> None:
        self._check(self._lib.fat_module_unload(module))

    def get_function(self, module: int, name: str) -> int:
        function = ctypes.c_void_p()
        self._check(self._lib.fat_module_get_function(module, name.encode(),
                                                      ctypes.byref(function)))
        return function.value

    def set_max_dynamic_smem(self, function: int, nbytes: int) -> None:
        self._check(self._lib.fat_function_set_max_dynamic_smem(function, nbytes))

    def encode_tensor_map(self, args: TensorMapArgs,
                          out: Optional[TensorMapBuffer] = None) -> TensorMapBuffer:
        """Validates and encodes one tensor map into ``out`` (a new buffer if None)."""
        out = out or TensorMapBuffer()
        rank = args.rank
        dims = (ctypes.c_uint64 * rank)(*args.dims)
        strides = (ctypes.c_uint64 * max(1, rank - 1))(*args.strides)
        box = (ctypes.c_uint32 * rank)(*args.box)
        self._check(self._lib.fat_tensor_map_encode_tiled(
            out.address, args.dtype, rank, args.address, dims, strides, box, None,
            args.interleave, args.swizzle, args.l2_promotion, args.oob_fill))
        return out

    def replace_address(self, tensor_map: TensorMapBuffer, address: int) -> None:
        """Points an encoded map at ``address`` (same shape and strides)."""
        self._check(self._lib.fat_tensor_map_replace_address(tensor_map.address, address))

    def launch(self, function: int, grid: Sequence[int], block: Sequence[int],
               dynamic_smem: int, stream: int, params) -> None:
        """cuLaunchKernel with ``params`` (a :class:`~fa_t.params.KernelParams`)."""
        if not hasattr(params, "array"):
            raise TypeError(f"expected params to be a fa_t.params.KernelParams (from "
                            f"build_params), got {type(params).__name__}")
        u32_3 = ctypes.c_uint32 * 3
        self._check(self._lib.fat_launch(
            function, u32_3(*grid), u32_3(*block), dynamic_smem, stream or None,
            ctypes.cast(params.array, ctypes.POINTER(ctypes.c_void_p))))

    def launch_patched(self, plan: LaunchPlan, stream: int, addresses=None) -> None:
        """``fat_launch_patched``: ``plan`` launched on ``stream`` with its patches
        re-pointed at ``addresses`` (a c_uint64 array; None launches it as
        packed). The plan is built once, so this, the per-call path, converts
        nothing."""
        if self._launch_patched(plan, stream, addresses,
                                0 if addresses is None else len(addresses)):
            raise CudaError(self.last_error())

    def synchronize(self) -> None:
        self._check(self._lib.fat_synchronize())


_lock = threading.Lock()
_runtime: Optional[Runtime] = None


def get_runtime() -> Runtime:
    """The process-wide runtime with the CUDA driver loaded (created on first use)."""
    global _runtime
    with _lock:
        if _runtime is None:
            rt = Runtime()
            rt.init()
            _runtime = rt
        return _runtime
