"""Just-in-time kernels: running ``fa-t-opt`` and caching what it writes.

``fa-t-opt`` is found at ``$FA_T_OPT``, else beside this package
(``fa_t/bin/fa-t-opt``, where the wheel installs it) when it runs on this
machine, else on PATH (:func:`find_fat_opt`). Kernels land in
``$FA_T_CACHE_DIR`` (default ``~/.cache/fa-t``), one folder per
:func:`cache_key` of (config, tuning, compiler version and binary hash), so a
new compiler build never reuses an old kernel. The command line is built in one place,
:func:`fat_opt_command`, and its input in :func:`jit_input_mlir`. Each
compile is logged (INFO, logger ``fa_t.jit``) with its kernel and time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from .config import KernelConfig
from .errors import CompileError, ManifestError
from .manifest import Manifest, load_manifest

log = logging.getLogger(__name__)

#: Target of every kernel (Hopper with the wgmma/TMA features).
SM = "sm_90a"
#: Seconds fa-t-opt may take for one kernel before it is considered stuck.
COMPILE_TIMEOUT_S = 600
#: Entry-point name given to JIT kernels; the manifest states the real one.
JIT_FUNCTION = "fat_attention_fwd"


#: fa-t-opt as the wheel installs it (pyproject.toml): fa_t/bin/fa-t-opt.
BUNDLED_FAT_OPT = Path(__file__).resolve().parent / "bin" / "fa-t-opt"

#: (path, mtime) -> None when ``path --version`` ran, else why it did not.
_problems: Dict[tuple, Optional[str]] = {}


def fat_opt_problem(fat_opt) -> Optional[str]:
    """None when ``fat_opt --version`` runs and exits 0; else why not, in one
    line (cached per path and mtime, so it runs once per process).

    The wheel's fa-t-opt links the system's libMLIR.so / libLLVM.so 22
    (/usr/lib/llvm-22/lib); on a machine without them the dynamic loader
    refuses it before it starts, and this says so.
    """
    try:
        key = (str(fat_opt), os.stat(fat_opt).st_mtime_ns)
    except OSError as e:
        return f"cannot stat it: {e.strerror}"
    if key not in _problems:
        try:
            done = subprocess.run([str(fat_opt), "--version"], capture_output=True, text=True,
                                  timeout=60)
        except subprocess.TimeoutExpired:
            problem = "--version did not answer within 60 s"
        except OSError as e:
            problem = f"cannot run it: {e.strerror or e}"
        else:
            lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
            problem = None if done.returncode == 0 else (
                f"--version exited with {done.returncode}" + (f": {lines[-1]}" if lines else ""))
        _problems[key] = problem
    return _problems[key]


def find_fat_opt() -> Optional[str]:
    """Path of fa-t-opt, or None when there is none.

    In order: ``$FA_T_OPT`` (an override; it must be executable); the wheel's
    own, :data:`BUNDLED_FAT_OPT`, when it runs here (:func:`fat_opt_problem`);
    ``fa-t-opt`` on PATH. When the wheel's cannot run (a machine without
    LLVM/MLIR 22) and PATH has none, raises :class:`CompileError` starting
    "fa-t-opt not usable:" with the loader's reason. This is asked only when
    no ahead-of-time kernel matched, so kernel folders ($FA_T_KERNEL_DIR)
    keep working on such a machine.
    """
    env = os.environ.get("FA_T_OPT")
    if env:
        if not os.access(env, os.X_OK):
            raise CompileError(f"FA_T_OPT={env!r} is not an executable file")
        return env
    problem = None
    if BUNDLED_FAT_OPT.is_file():
        problem = fat_opt_problem(BUNDLED_FAT_OPT)
        if problem is None:
            return str(BUNDLED_FAT_OPT)
        log.debug("the bundled %s does not run here: %s", BUNDLED_FAT_OPT, problem)
    found = shutil.which("fa-t-opt")
    if found or problem is None:
        return found
    raise CompileError(
        f"fa-t-opt not usable: {BUNDLED_FAT_OPT} does not run on this machine ({problem}). "
        f"It links the system's LLVM/MLIR 22 (/usr/lib/llvm-22/lib: Debian's libmlir-22 and "
        f"libllvm22 packages); install them, set FA_T_OPT to a fa-t-opt that runs here, or "
        f"use kernels compiled ahead of time (python -m fa_t.aot elsewhere, then "
        f"FA_T_KERNEL_DIR)")


_versions: Dict[tuple, str] = {}


def compiler_version(fat_opt: str) -> str:
    """``fa-t-opt --version`` and a hash of the binary (cached per path and mtime).

    The version string alone names a release, not a build: a compiler rebuilt
    from newer sources (a new default schedule, a fixed lowering) keeps it.
    fa-t-opt links the fa-t libraries statically, so the hash of its bytes
    changes with every change to what it emits, and the JIT cache with it.
    """
    key = (fat_opt, os.stat(fat_opt).st_mtime_ns)
    if key not in _versions:
        try:
            done = subprocess.run([fat_opt, "--version"], capture_output=True, text=True,
                                  timeout=60)
        except OSError as e:
            raise CompileError(f"cannot run {fat_opt} --version: {e}") from None
        if done.returncode != 0:
            raise CompileError(f"{fat_opt} --version exited with {done.returncode}: "
                               f"{done.stderr.strip()}")
        digest = hashlib.sha256(Path(fat_opt).read_bytes()).hexdigest()[:16]
        _versions[key] = f"{done.stdout.strip()} [{digest}]"
    return _versions[key]


def cache_dir() -> Path:
    """Root of the kernel cache: ``$FA_T_CACHE_DIR`` or ``~/.cache/fa-t``."""
    env = os.environ.get("FA_T_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "fa-t"


def default_tuning(config: KernelConfig, seq_len: Optional[int] = None) -> Dict[str, int]:
    """Tuning for a JIT kernel: no tile sizes, so the compiler's own defaults
    decide (``defaultBlockM``/``defaultBlockN`` in fa-t-opt, by head dim, mask
    and schedule); keeping that rule in one place means a kernel built here is
    the one ``fa-t-opt`` builds by default. The compiler version is part of
    :func:`cache_key`, so a new default rebuilds.

    ``seq_len`` (the call's key length) becomes ``seq-len``, rounded up to a
    power of two: the compiler tunes the tiles for that length (some tiles
    win only at short or long sequences), and one kernel serves each octave
    of lengths instead of one per length.
    """
    del config
    return {"seq_len": seq_len_bucket(seq_len)} if seq_len else {}


def seq_len_bucket(seq_len: int) -> int:
    """``seq_len`` rounded up to a power of two (the JIT's tuning length)."""
    return 1 << max(0, (int(seq_len) - 1).bit_length())


#: The index file of a kernel directory that names, for each score / mask
#: modification text it holds kernels of (by :func:`regions_id`), the keys the
#: compiler gave those regions (the manifests' ``config.modifications``; one
#: text may compile to several forms, each named by its own key).
MODIFICATIONS_INDEX = "modifications.json"


def modification_keys(entry) -> List[str]:
    """The keys of one :data:`MODIFICATIONS_INDEX` entry: a list of keys, or
    one key (folders built before a text could have several)."""
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, list):
        return [k for k in entry if isinstance(k, str)]
    return []


def regions_id(regions: str) -> str:
    """A stable name for a modification text (the lookup key of
    :data:`MODIFICATIONS_INDEX`)."""
    return hashlib.sha256(regions.encode()).hexdigest()[:16]


def cache_key(config: KernelConfig, tuning: Dict[str, int], compiler: str,
              regions: str = "") -> str:
    """A stable hash of what determines a JIT kernel's bytes (``regions``: the
    fat.attention score / mask regions' text, see :func:`jit_input_mlir`)."""
    what = {"config": config.to_dict(), "tuning": tuning, "compiler": compiler, "sm": SM}
    if regions:
        what["regions"] = regions
    blob = json.dumps(what, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _tensor_type(dims: List[Optional[int]], elem: str) -> str:
    return "tensor<" + "x".join("?" if d is None else str(d) for d in dims) + f"x{elem}>"


#: A captured tensor among a region's block arguments (``%cap0: tensor<4xf32>``).
_CAPTURE_ARG = re.compile(r"%cap(\d+): (tensor<[^>]*>)")


def capture_types(regions: str) -> List[str]:
    """The ``tensor<…>`` type of each tensor the regions capture, in capture
    order, read from the first region's block arguments (every region of
    :func:`fa_t.mods.attention_regions` lists all of them)."""
    start = regions.find("^bb0(")
    if start < 0:
        return []
    header = regions[start:regions.index(")", start)]
    types = {int(i): t for i, t in _CAPTURE_ARG.findall(header)}
    if sorted(types) != list(range(len(types))):
        raise ValueError(f"expected the regions' captures to be %cap0 to "
                         f"%cap{len(types) - 1}, got {header!r}")
    return [types[i] for i in range(len(types))]


def jit_input_mlir(config: KernelConfig, regions: str = "") -> str:
    """The ``fat.attention`` function fa-t-opt compiles for ``config``.

    B and the sequence lengths are dynamic; heads and head dims static. The
    diagonal is an operand (the launcher passes it as ``diag``) and the scale
    is left at its default: the kernel takes both at run time (ABI params).
    ``regions`` is the ``score {…} mask {…}`` text of the modifications
    (:func:`fa_t.mods.attention_regions`); the tensors they capture become
    the last arguments, ``%capture0…``, passed in ``captures(...)``. Their static
    shapes are in the text, so each capture shape is a kernel of its own.
    """
    elem = config.dtype
    bshd = config.layout == "bshd"

    def shape(heads, dim):  # physical order of a 4-D operand under the layout
        return [None, None, heads, dim] if bshd else [None, heads, None, dim]

    tq = _tensor_type(shape(config.num_heads_q, config.head_dim), elem)
    tk = _tensor_type(shape(config.num_heads_kv, config.head_dim), elem)
    tv = _tensor_type(shape(config.num_heads_kv, config.head_dim_v), elem)
    to = _tensor_type(shape(config.num_heads_q, config.head_dim_v), elem)
    tl = _tensor_type([None, config.num_heads_q, None], "f32")
    args = [f"%q: {tq}", f"%k: {tk}", f"%v: {tv}", f"%o: {to}"]
    results = [to]
    clauses = [f"    outs(%o : {to})"]
    if config.lse:
        args.append(f"%lse: {tl}")
        results.append(tl)
        clauses.append(f"    lse(%lse : {tl})")
    if config.masked:
        args.append("%diag: index")
        clauses.append("    diagonal(%diag)")
    captures = capture_types(regions)
    if captures:
        # Not %capN: the regions' block arguments have those names, and
        # fat.attention's regions see the function's values.
        values = [f"%capture{i}" for i in range(len(captures))]
        args += [f"{value}: {t}" for value, t in zip(values, captures)]
        clauses.append(f"    captures({', '.join(values)} : {', '.join(captures)})")
    if config.causal:
        clauses.append("    causal")
    if config.window != (-1, -1):
        clauses.append(f"    window [{config.window[0]}, {config.window[1]}]")
    if bshd:
        clauses.append("    layout(bshd)")
    if regions:
        clauses.append(regions.strip("\n"))
    names = "%r:2" if config.lse else "%r"
    rets = "%r#0, %r#1" if config.lse else "%r"
    return "\n".join([
        f"// fa-t JIT input for {json.dumps(config.to_dict(), sort_keys=True)}",
        f"func.func @{JIT_FUNCTION}({', '.join(args)}) -> ({', '.join(results)}) {{",
        f"  {names} = fat.attention",
        f"    ins(%q, %k, %v : {tq}, {tk}, {tv})",
        *clauses,
        f"    -> {', '.join(results)}",
        f"  return {rets} : {', '.join(results)}",
        "}",
        "",
    ])


def _pass_option(value: str) -> str:
    """Quotes a pass-option value that contains spaces (MLIR's option syntax)."""
    return f'"{value}"' if any(c.isspace() for c in value) else value


def fat_opt_command(fat_opt: str, input_path: Path, output_dir: Path,
                    tuning: Dict[str, int]) -> List[str]:
    """The fa-t-opt command line that compiles ``input_path`` into ``output_dir``.

    The problem itself is in the input; the options carry the target and tile
    sizes. fa-t-opt writes ``<name>.ptx`` and ``<name>.json`` into output_dir.
    """
    # Tuning keys are the pass's option names with '_' for '-' (block_m -> block-m).
    options = [f"sm={SM}"] + [f"{key.replace('_', '-')}={_pass_option(str(value))}"
                              for key, value in sorted(tuning.items())]
    options.append(f"output-dir={_pass_option(str(output_dir))}")
    return [fat_opt, str(input_path), f"--fat-to-ptx={' '.join(options)}"]


def _single_manifest(directory: Path) -> Path:
    manifests = sorted(directory.glob("*.json"))
    if len(manifests) != 1:
        raise CompileError(f"expected fa-t-opt to write one manifest (*.json) into {directory}, "
                           f"found {len(manifests)}")
    return manifests[0]


def check_compiled(manifest: Manifest, config: KernelConfig, where: Path,
                   regions: str = "") -> None:
    """Raises CompileError unless ``manifest`` is the kernel of ``config``
    (and of modifications, when ``regions`` asked for some)."""
    # With regions the compiler names them (config.modifications): any key,
    # as long as there is one.
    if regions:
        if not manifest.config.modifications:
            raise CompileError(f"{where}: fa-t-opt compiled no modifications where "
                               f"score / mask regions were asked for")
        config = dataclasses.replace(config, modifications=manifest.config.modifications)
    if manifest.config != config:
        raise CompileError(f"{where}: fa-t-opt compiled config {manifest.config.to_dict()} "
                           f"where {config.to_dict()} was asked for")


def compile_kernel(config: KernelConfig, fat_opt: Optional[str] = None,
                   seq_len: Optional[int] = None, regions: str = "",
                   tuning: Optional[Dict[str, object]] = None) -> Manifest:
    """The cached JIT kernel for ``config`` (tuned for ``seq_len`` keys, see
    :func:`default_tuning`), compiling it on a cache miss. ``tuning`` adds
    options on top of the default tuning (``{"linear_bias": "vector"}``:
    ``linear-bias=vector``); it is part of the cache key.

    Compilation happens in a temporary folder inside the cache that is renamed
    into place only when complete, so concurrent processes and interrupted
    runs never leave a half-written kernel behind.
    """
    fat_opt = fat_opt or find_fat_opt()
    if not fat_opt:
        raise CompileError("fa-t-opt not found: install the fa_t wheel (pip install . in "
                           "the fa-t repository), set FA_T_OPT or put it on PATH")
    tuning = {**default_tuning(config, seq_len), **(tuning or {})}
    key = cache_key(config, tuning, compiler_version(fat_opt), regions)
    root = cache_dir()
    final = root / key
    if final.is_dir():
        try:
            manifest = load_manifest(_single_manifest(final))
            check_compiled(manifest, config, final, regions)
            log.debug("kernel cache hit: %s (%s)", manifest.entry, final)
            return manifest
        except (ManifestError, CompileError):
            # A damaged cache entry is rebuilt rather than trusted.
            shutil.rmtree(final, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        source = work / "input.mlir"
        source.write_text(jit_input_mlir(config, regions))
        out = work / "kernel"
        out.mkdir()
        command = fat_opt_command(fat_opt, source, out, tuning)
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CompileError(f"fa-t-opt took more than {COMPILE_TIMEOUT_S} s: "
                               f"{' '.join(command)}") from None
        if done.returncode != 0:
            raise CompileError(f"fa-t-opt exited with {done.returncode} compiling "
                               f"{config.to_dict()}\ncommand: {' '.join(command)}\n"
                               f"{done.stderr.strip()}")
        manifest = load_manifest(_single_manifest(out))
        check_compiled(manifest, config, out, regions)
        log.info("compiled %s in %.2f s into %s", manifest.entry, time.perf_counter() - start,
                 final)
        # Keep the input beside the kernel, for whoever debugs it later.
        shutil.copy(source, out / "input.mlir")
        try:
            out.rename(final)
        except OSError:
            if not final.is_dir():  # not a lost race with another process
                raise
        return load_manifest(_single_manifest(final))
    finally:
        shutil.rmtree(work, ignore_errors=True)
