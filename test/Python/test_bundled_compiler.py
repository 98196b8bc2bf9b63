"""The compiler the wheel carries: fa_t/bin/fa-t-opt (pyproject.toml).

find_fat_opt takes $FA_T_OPT, else the bundled fa-t-opt when it runs on this
machine, else PATH. On a machine without LLVM/MLIR 22 the bundled binary
cannot start; then the ahead-of-time kernel folders keep working and a JIT
request says "fa-t-opt not usable" with the loader's reason. Stand-in
compilers only (scripts/test-wheel.sh runs the real wheel). CPU only.
"""

import json
import stat
import sys
from pathlib import Path

import pytest

import fa_t
from fa_t import CompileError, KernelConfig, KernelNotFoundError, aot, find_kernel, jit
from conftest import EXAMPLE_MANIFEST
from test_jit import FAKE_OPT

CONFIG = KernelConfig("bf16", 128, 128, 16, 4, causal=True, lse=True)

#: What the dynamic loader prints for a binary whose libMLIR is missing.
LOADER_ERROR = ("fa-t-opt: error while loading shared libraries: libMLIR.so.22.1: "
                "cannot open shared object file: No such file or directory")


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _working(path: Path) -> Path:
    """A stand-in fa-t-opt that answers --version and compiles (test_jit's)."""
    return _script(path, FAKE_OPT.format(python=sys.executable))


def _broken(path: Path, runs: Path) -> Path:
    """A stand-in for the wheel's fa-t-opt on a machine without libMLIR: the
    loader refuses it (exit 127) before main. Each start is logged in runs."""
    return _script(path, f"#!/bin/sh\necho run >> '{runs}'\necho '{LOADER_ERROR}' >&2\n"
                         f"exit 127\n")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No FA_T_OPT, an empty PATH, a fresh cache; the stand-in compiler's inputs."""
    monkeypatch.delenv("FA_T_OPT", raising=False)
    monkeypatch.delenv("FA_T_KERNEL_DIR", raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("FA_T_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_OPT_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_OPT_MANIFEST", json.dumps(EXAMPLE_MANIFEST))
    monkeypatch.setattr(jit, "_problems", {})
    return tmp_path


def test_bundled_path_is_inside_the_package():
    assert jit.BUNDLED_FAT_OPT == Path(fa_t.__file__).resolve().parent / "bin" / "fa-t-opt"


def test_no_compiler_anywhere(env, monkeypatch):
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", env / "pkg" / "bin" / "fa-t-opt")
    assert jit.find_fat_opt() is None


def test_bundled_is_found_without_env_and_compiles(env, monkeypatch):
    bundled = _working(env / "pkg" / "bin" / "fa-t-opt")
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", bundled)
    assert jit.find_fat_opt() == str(bundled)
    manifest = find_kernel(CONFIG)  # JIT through the bundled compiler
    assert manifest.config == CONFIG
    assert manifest.ptx_path.is_file() and (env / "cache") in manifest.ptx_path.parents


def test_env_overrides_bundled_and_bundled_precedes_path(env, monkeypatch):
    bundled = _working(env / "pkg" / "bin" / "fa-t-opt")
    on_path = _working(env / "empty-path" / "fa-t-opt")
    override = _working(env / "override" / "fa-t-opt")
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", bundled)
    assert jit.find_fat_opt() == str(bundled)
    monkeypatch.setenv("FA_T_OPT", str(override))
    assert jit.find_fat_opt() == str(override)
    monkeypatch.delenv("FA_T_OPT")
    bundled.unlink()
    assert jit.find_fat_opt() == str(on_path)


def test_unusable_bundled_says_why_once(env, monkeypatch):
    runs = env / "runs.log"
    bundled = _broken(env / "pkg" / "bin" / "fa-t-opt", runs)
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", bundled)
    pattern = (r"fa-t-opt not usable: .*pkg/bin/fa-t-opt does not run on this machine "
               r"\(--version exited with 127: .*libMLIR\.so\.22\.1: cannot open shared object "
               r"file.*\).*FA_T_OPT.*FA_T_KERNEL_DIR")
    with pytest.raises(CompileError, match=pattern):
        jit.find_fat_opt()
    with pytest.raises(CompileError, match=pattern):
        find_kernel(CONFIG)  # no kernel folder: the JIT would need it
    assert runs.read_text().splitlines() == ["run"]  # checked once per process


def test_unusable_bundled_falls_back_to_path(env, monkeypatch):
    bundled = _broken(env / "pkg" / "bin" / "fa-t-opt", env / "runs.log")
    on_path = _working(env / "empty-path" / "fa-t-opt")
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", bundled)
    assert jit.find_fat_opt() == str(on_path)


def test_unusable_bundled_keeps_kernel_folders_working(env, monkeypatch):
    # The GPU machine without LLVM: kernels compiled elsewhere, in a folder.
    runs = env / "runs.log"
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", _broken(env / "pkg" / "bin" / "fa-t-opt", runs))
    folder = env / "kernels"
    folder.mkdir()
    manifest = dict(EXAMPLE_MANIFEST, ptx="k.ptx")
    (folder / "k.ptx").write_text("// ptx")
    (folder / "k.json").write_text(json.dumps(manifest))
    assert find_kernel(CONFIG, kernel_dir=folder).config == CONFIG
    monkeypatch.setenv("FA_T_KERNEL_DIR", str(folder))
    assert find_kernel(CONFIG).config == CONFIG
    assert not runs.exists()  # the compiler was never asked for
    with pytest.raises(KernelNotFoundError, match="no kernel for"):
        find_kernel(KernelConfig("bf16", 64, 64, 8, 8), kernel_dir=folder, allow_jit=False)


def test_aot_names_the_unusable_compiler(env, monkeypatch, capsys):
    monkeypatch.setattr(jit, "BUNDLED_FAT_OPT", _broken(env / "pkg" / "bin" / "fa-t-opt",
                                                         env / "runs.log"))
    configs = env / "configs.json"
    configs.write_text(json.dumps([CONFIG.to_dict()]))
    with pytest.raises(SystemExit) as exit_info:
        aot.main(["--out", str(env / "out"), str(configs)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "fa-t-opt not usable:" in err and "libMLIR.so.22.1" in err
    assert "Traceback" not in err
