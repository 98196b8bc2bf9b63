"""Finding the kernel for a configuration and loading it onto a device.

Lookup order: the ahead-of-time kernel directories (the ``kernel_dir=``
argument, else ``$FA_T_KERNEL_DIR``, a ``os.pathsep``-separated list), then a
just-in-time compile with fa-t-opt (:mod:`fa_t.jit`). In a directory every
``*.json`` whose ``format`` is ``fa-t-kernel`` is a kernel; among those whose
config equals the requested one and whose target is sm_90a, a kernel whose
schedule the compiler's cost model chose wins over forced ablation variants
(``schedule.forced``). Given the call's key length, the cost model's kernels
are ranked by the length they were tuned for (the manifest's ``seq_len``,
:func:`pick_for_seq_len`); otherwise the first by file name wins.

A kernel of ``linear_bias`` "weights" is exact only up to a bound on the
linear bias' factor, which the launcher checks per call (fa_t.api); past it
the launcher asks for ``allow_weights=False``: a kernel of another form from
the folders, else one compiled with tuning ``linear_bias=vector``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from . import jit
from .config import KernelConfig
from .errors import CompileError, CudaError, KernelNotFoundError
from .manifest import FORMAT, Manifest, load_manifest

PathLike = Union[str, os.PathLike]


def kernel_dirs(kernel_dir: Union[None, PathLike, Sequence[PathLike]] = None) -> List[Path]:
    """The AOT directories to search: ``kernel_dir`` if given, else $FA_T_KERNEL_DIR."""
    if kernel_dir is None:
        env = os.environ.get("FA_T_KERNEL_DIR", "")
        return [Path(p) for p in env.split(os.pathsep) if p]
    if isinstance(kernel_dir, (str, os.PathLike)):
        return [Path(kernel_dir)]
    return [Path(p) for p in kernel_dir]


_scan_cache: Dict[Tuple[str, int], List[Manifest]] = {}


def scan_kernel_dir(directory: Path) -> List[Manifest]:
    """Every kernel manifest in ``directory``, sorted by file name.

    JSON files of another format are skipped; a file that claims the fa-t
    format but breaks the ABI raises ManifestError, naming it. Results are
    cached until the directory's mtime changes (files added or removed).
    """
    if not directory.is_dir():
        raise KernelNotFoundError(f"kernel directory {directory} does not exist")
    key = (str(directory.resolve()), directory.stat().st_mtime_ns)
    if key not in _scan_cache:
        manifests = []
        for path in sorted(directory.glob("*.json")):
            try:
                head = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(head, dict) and head.get("format") == FORMAT:
                manifests.append(load_manifest(path))
        _scan_cache[key] = manifests
    return _scan_cache[key]


def pick_for_seq_len(manifests: Sequence[Manifest], seq_len: int) -> Manifest:
    """The kernel tuned for the shortest length that is at least ``seq_len``;
    else one tuned for no length in particular (``seq_len`` 0); else the one
    tuned for the longest. Kernels of one config built for ascending lengths
    (``python -m fa_t.aot`` keeps the last build of each distinct kernel) then
    cover each length with the kernel the compiler chose for the lengths up to
    it."""
    def tuned(m):
        return int(m.tuning.get("seq_len", 0))
    covering = [m for m in manifests if tuned(m) >= seq_len]
    if covering:
        return min(covering, key=tuned)
    untuned = [m for m in manifests if tuned(m) == 0]
    return untuned[0] if untuned else max(manifests, key=tuned)


def _with_modifications(config: KernelConfig, directory: Path,
                        regions: str) -> List[KernelConfig]:
    """``config`` with each key ``directory``'s modifications index gives
    ``regions`` (none where it holds no kernel of them)."""
    index_path = Path(directory) / jit.MODIFICATIONS_INDEX
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entry = index.get(jit.regions_id(regions)) if isinstance(index, dict) else None
    return [dataclasses.replace(config, modifications=key)
            for key in jit.modification_keys(entry)]


#: The JIT tuning of a kernel that must not be of the weights form.
NOT_WEIGHTS_TUNING = {"linear_bias": "vector"}


def find_kernel(config: KernelConfig, kernel_dir=None, allow_jit: bool = True,
                seq_len: Optional[int] = None, regions: str = "",
                allow_weights: bool = True) -> Manifest:
    """The kernel for ``config`` (for ``seq_len`` keys, when given; of the
    score / mask modification text ``regions``, when given); see the module
    doc for the search order. ``allow_weights`` False never returns a kernel
    of ``linear_bias`` "weights": the folders' kernels of other forms, else
    a JIT compile with :data:`NOT_WEIGHTS_TUNING`."""
    dirs = kernel_dirs(kernel_dir)
    skipped = 0
    for directory in dirs:
        wanted = _with_modifications(config, directory, regions) if regions else [config]
        matches = [m for m in scan_kernel_dir(directory)
                   if m.config in wanted and m.sm == jit.SM]
        if not allow_weights:
            kept = [m for m in matches if m.linear_bias != "weights"]
            skipped += len(matches) - len(kept)
            matches = kept
        if matches:
            # The cost model's kernels if any; else (a folder of ablation
            # variants) the forced ones, still picked by their tuned length.
            chosen = [m for m in matches if not m.schedule_forced] or matches
            return pick_for_seq_len(chosen, seq_len) if seq_len else chosen[0]
    searched = ", ".join(str(d) for d in dirs) or "none (set FA_T_KERNEL_DIR)"
    if skipped:
        searched += (f" ({skipped} kernel(s) of linear_bias \"weights\" skipped: one of "
                     f"another form is asked for)")
    if not allow_jit:
        raise KernelNotFoundError(f"no kernel for {config.to_dict()} in kernel directories: "
                                  f"{searched}")
    fat_opt = jit.find_fat_opt()
    if fat_opt is None:
        raise KernelNotFoundError(
            f"no kernel for {config.to_dict()}: none in the kernel directories ({searched}), "
            f"and fa-t-opt, which would compile one, is not available (set FA_T_OPT or put "
            f"it on PATH)")
    if allow_weights:
        return jit.compile_kernel(config, fat_opt, seq_len, regions)
    manifest = jit.compile_kernel(config, fat_opt, seq_len, regions, NOT_WEIGHTS_TUNING)
    if manifest.linear_bias == "weights":
        raise CompileError(f"{manifest.path}: fa-t-opt compiled linear_bias \"weights\" with "
                           f"tuning {NOT_WEIGHTS_TUNING}")
    return manifest


class LoadedKernel:
    """A kernel's module and function in one device's primary context."""

    def __init__(self, manifest: Manifest, module: int, function: int):
        self.manifest = manifest
        self.module = module
        self.function = function


_loaded: Dict[Tuple[str, int], LoadedKernel] = {}
_loaded_lock = threading.Lock()


def load_kernel(manifest: Manifest, device: int, runtime) -> LoadedKernel:
    """Loads ``manifest``'s PTX on ``device`` once and opts it into its shared memory.

    ``runtime`` is a :class:`~fa_t.runtime.Runtime`; the device's context must
    be current (Runtime.set_device). Loaded kernels are kept for the process.
    """
    key = (str(manifest.ptx_path), device)
    with _loaded_lock:
        kernel = _loaded.get(key)
        if kernel is None:
            try:
                module = runtime.load_file(manifest.ptx_path)
            except CudaError as e:
                raise CompileError(f"loading {manifest.ptx_path} on cuda:{device}: {e}") from None
            function = runtime.get_function(module, manifest.entry)
            runtime.set_max_dynamic_smem(function, manifest.dynamic_smem_bytes)
            kernel = _loaded[key] = LoadedKernel(manifest, module, function)
        return kernel
