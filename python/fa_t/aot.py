"""Ahead-of-time kernel directories: compile a list of configs with fa-t-opt.

A GPU machine without LLVM cannot compile kernels just in time, so the
kernels it needs are built where fa-t-opt lives and the folder is carried
over. One command builds the folder from a list of configs::

    python -m fa_t.aot --out .kernels-py test/Python/gpu_configs.py:all_configs
    FA_T_KERNEL_DIR=.kernels-py python -m pytest test/Python -m gpu   # on the GPU

A config list is ``FILE.json`` (a JSON list) or ``FILE.py:NAME`` (a list or a
function returning one, in a Python file). Each entry is a manifest
``config`` object (:class:`~fa_t.config.KernelConfig` fields), optionally with
tuning keys (``block_m``, ``block_n``, ``stages``, or any other ``--fat-to-ptx``
option spelled with '_' for '-'); in Python files entries may also be
``KernelConfig`` objects, ``(KernelConfig, tuning dict)`` pairs or
``(KernelConfig, tuning dict, regions)`` triples, ``regions`` the score / mask
modification text of :func:`fa_t.mods.attention_regions` (a JSON entry spells
it ``"regions"``); the folder's ``modifications.json`` then names the
compiler's keys of each text (one per form it compiled to: ALiBi with and
without an LSE differ), which is how :mod:`fa_t.registry` finds those
kernels for ``fa_t.attention(score_mod=…, mask_mod=…)``. Untuned
entries get :func:`fa_t.jit.default_tuning`. The folder is flat: every
kernel's ``<name>.ptx`` and ``<name>.json`` side by side, names unique per
config and tuning (fa-t-opt derives them from both), which is the layout
:mod:`fa_t.registry` scans.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple

from . import jit
from .config import TUNING_KEYS, KernelConfig
from .errors import CompileError
from .manifest import load_manifest

Entry = Tuple[KernelConfig, Dict[str, Any], str]


def _entry(item: Any, where: str) -> Entry:
    """One (config, tuning, regions) triple from any of the accepted spellings."""
    if isinstance(item, KernelConfig):
        return item, jit.default_tuning(item), ""
    if isinstance(item, tuple) and len(item) in (2, 3) and isinstance(item[0], KernelConfig):
        config, tuning = item[0], item[1]
        regions = item[2] if len(item) == 3 else ""
        if not isinstance(regions, str):
            raise ValueError(f"{where}: expected the regions as text, got {regions!r}")
        return config, {**jit.default_tuning(config), **tuning}, regions
    if isinstance(item, dict):
        fields = dict(item)
        tuning = dict(fields.pop("tuning", {}))
        tuning.update({k: fields.pop(k) for k in TUNING_KEYS if k in fields})
        regions = fields.pop("regions", "")
        if not isinstance(regions, str):
            raise ValueError(f"{where}.regions: expected text, got {regions!r}")
        config = KernelConfig.from_dict(fields, where)  # names unknown keys
        return config, {**jit.default_tuning(config), **tuning}, regions
    raise ValueError(f"{where}: expected a config object, a KernelConfig, a "
                     f"(KernelConfig, tuning) pair or a (KernelConfig, tuning, regions) "
                     f"triple, got {item!r}")


def load_config_list(spec: str) -> List[Entry]:
    """The entries named by ``FILE.json`` or ``FILE.py:NAME``, duplicates removed."""
    if spec.endswith(".json"):
        items = json.loads(Path(spec).read_text(encoding="utf-8"))
    else:
        path, sep, name = spec.rpartition(":")
        if not sep or not path.endswith(".py"):
            raise ValueError(f"expected FILE.json or FILE.py:NAME, got {spec!r}")
        module_spec = importlib.util.spec_from_file_location(Path(path).stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot load {path}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        if not hasattr(module, name):
            raise ValueError(f"{path} has no {name!r}")
        items = getattr(module, name)
        items = items() if callable(items) else items
    if not isinstance(items, Iterable):
        raise ValueError(f"{spec}: expected a list of configs")
    entries: List[Entry] = []
    seen = set()
    for i, item in enumerate(items):
        config, tuning, regions = _entry(item, f"{spec}[{i}]")
        key = (config, tuple(sorted(tuning.items())), regions)
        if key not in seen:
            seen.add(key)
            entries.append((config, tuning, regions))
    return entries


def build_kernel(config: KernelConfig, tuning: Dict[str, Any], out: Path, fat_opt: str,
                 regions: str = "") -> Path:
    """Compiles one kernel (of the modification text ``regions``) into
    ``out``; returns its manifest path."""
    with tempfile.TemporaryDirectory(prefix=".fa-t-aot-", dir=out) as tmp:
        work = Path(tmp)
        source = work / "input.mlir"
        source.write_text(jit.jit_input_mlir(config, regions))
        kernel = work / "kernel"
        kernel.mkdir()
        command = jit.fat_opt_command(fat_opt, source, kernel, tuning)
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=jit.COMPILE_TIMEOUT_S)
        if done.returncode != 0:
            raise CompileError(f"fa-t-opt exited with {done.returncode} compiling "
                               f"{config.to_dict()} {tuning}\ncommand: {' '.join(command)}\n"
                               f"{done.stderr.strip()}")
        (manifest_path,) = kernel.glob("*.json")
        manifest = load_manifest(manifest_path)
        jit.check_compiled(manifest, config, manifest_path, regions)
        if regions:
            _record_modifications(out, regions, manifest.config.modifications)
        # A forced build (an ablation variant) of the kernel the cost model
        # already chose keeps the existing manifest's "forced": false, as
        # fa-t-opt does when it writes into a folder (same code either way).
        target = out / manifest_path.name
        # A kernel's name stands for its code: a second build of the name
        # (another tuned length, a variant the cost model also chose) must
        # produce the same PTX, or the folder would keep whichever came last.
        ptx_name = manifest.ptx
        if (out / ptx_name).exists() and \
                (out / ptx_name).read_bytes() != (kernel / ptx_name).read_bytes():
            raise CompileError(f"{ptx_name}: {config.to_dict()} {tuning} compiled to other "
                               f"code than the kernel of that name already in {out} (the "
                               f"kernel name does not spell out a choice that differs)")
        keep_manifest = (manifest.schedule_forced and target.exists()
                         and not load_manifest(target).schedule_forced)
        for f in kernel.iterdir():
            if f.name == manifest_path.name and keep_manifest:
                continue
            shutil.move(str(f), out / f.name)
        return target


def _record_modifications(out: Path, regions: str, key: str) -> None:
    """Adds ``regions``' compiler key to ``out``'s modifications index (one
    text may have several: ALiBi's kernels without an LSE take the bias onto
    the tensor cores and are named by its columns, those with one by the
    score region)."""
    index_path = out / jit.MODIFICATIONS_INDEX
    index = json.loads(index_path.read_text(encoding="utf-8")) if index_path.exists() else {}
    keys = jit.modification_keys(index.get(jit.regions_id(regions)))
    index[jit.regions_id(regions)] = sorted(set(keys) | {key})
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def build(entries: List[Entry], out: Path, fat_opt: str, log=print) -> List[Path]:
    """Compiles every entry, a (config, tuning[, regions]) tuple, into the flat
    folder ``out``; returns the manifests."""
    out.mkdir(parents=True, exist_ok=True)
    manifests = []
    for entry in entries:
        config, tuning, regions = (*entry, "")[:3]
        start = time.perf_counter()
        path = build_kernel(config, tuning, out, fat_opt, regions)
        log(f"{path.name}  ({time.perf_counter() - start:.2f} s)")
        manifests.append(path)
    return manifests


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fa_t.aot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lists", nargs="+", metavar="FILE.json|FILE.py:NAME",
                    help="config lists to compile")
    ap.add_argument("--out", required=True, type=Path, help="the kernel directory to fill")
    ap.add_argument("--fa-t-opt", help="the compiler (default: $FA_T_OPT, else the wheel's "
                                       "fa_t/bin/fa-t-opt, else PATH)")
    args = ap.parse_args(argv)
    try:
        fat_opt = args.fa_t_opt or jit.find_fat_opt()
    except CompileError as e:  # the wheel's fa-t-opt cannot run here
        ap.error(str(e))
    if not fat_opt:
        ap.error("fa-t-opt not found: pass --fa-t-opt, set FA_T_OPT or install the fa_t wheel")
    entries: List[Entry] = []
    start = time.perf_counter()
    try:
        # A list that is missing, not JSON or not configs is the user's
        # input: one line naming it, like a compile error, not a traceback.
        for spec in args.lists:
            entries += [e for e in load_config_list(spec) if e not in entries]
        build(entries, args.out, fat_opt)
    except (CompileError, ValueError, OSError) as e:
        print(f"fa_t.aot: {e}", file=sys.stderr)
        return 1
    print(f"built {len(entries)} kernels into {args.out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
