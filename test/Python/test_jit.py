"""JIT compilation: cache keys, the fa-t-opt command line, the input MLIR and
the on-disk cache, with a stand-in fa-t-opt script. CPU only."""

import hashlib
import json
import os
import re
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from fa_t import CompileError, KernelConfig, KernelNotFoundError, find_kernel, jit
from conftest import EXAMPLE_MANIFEST

CONFIG = KernelConfig("bf16", 128, 128, 16, 4, causal=True, lse=True)


def test_cache_key_is_stable_and_sensitive():
    t = jit.default_tuning(CONFIG)
    key = jit.cache_key(CONFIG, t, "fa-t 0.1.0")
    assert key == jit.cache_key(KernelConfig.from_dict(CONFIG.to_dict()), dict(t), "fa-t 0.1.0")
    assert len(key) == 24 and all(c in "0123456789abcdef" for c in key)
    others = {
        jit.cache_key(CONFIG, t, "fa-t 0.1.1"),
        jit.cache_key(KernelConfig("bf16", 128, 128, 16, 4, causal=False, lse=True), t, "fa-t 0.1.0"),
        jit.cache_key(KernelConfig("f16", 128, 128, 16, 4, causal=True, lse=True), t, "fa-t 0.1.0"),
        jit.cache_key(KernelConfig("bf16", 128, 128, 16, 4, causal=True, lse=True,
                                   window=(64, 0)), t, "fa-t 0.1.0"),
        jit.cache_key(CONFIG, {"block_m": 64, "block_n": 128}, "fa-t 0.1.0"),
    }
    assert key not in others and len(others) == 5


def test_default_tuning():
    # The compiler's defaults decide (one definition, in KernelConfig.cpp);
    # a call's key length becomes seq-len, rounded up to a power of two.
    assert jit.default_tuning(CONFIG) == {}
    assert jit.default_tuning(KernelConfig("bf16", 256, 256, 8, 8)) == {}
    assert jit.default_tuning(CONFIG, 1000) == {"seq_len": 1024}
    assert jit.default_tuning(CONFIG, 4096) == {"seq_len": 4096}
    assert [jit.seq_len_bucket(n) for n in (1, 2, 3, 513, 16384)] == [1, 2, 4, 1024, 16384]


def test_command_line(tmp_path):
    cmd = jit.fat_opt_command("/opt/fa-t-opt", tmp_path / "in.mlir", tmp_path / "out",
                              {"block_m": 128, "block_n": 64})
    assert cmd == ["/opt/fa-t-opt", str(tmp_path / "in.mlir"),
                   f"--fat-to-ptx=sm=sm_90a block-m=128 block-n=64 output-dir={tmp_path / 'out'}"]
    spaced = jit.fat_opt_command("fa-t-opt", "in.mlir", "/a b/out", {"block_m": 1, "block_n": 2})
    assert spaced[-1].endswith('output-dir="/a b/out"')


def test_input_mlir_causal_lse():
    text = jit.jit_input_mlir(CONFIG)
    assert "func.func @fat_attention_fwd(%q: tensor<?x16x?x128xbf16>, " \
           "%k: tensor<?x4x?x128xbf16>, %v: tensor<?x4x?x128xbf16>, " \
           "%o: tensor<?x16x?x128xbf16>, %lse: tensor<?x16x?xf32>, %diag: index)" in text
    assert "%r:2 = fat.attention" in text
    assert "lse(%lse : tensor<?x16x?xf32>)" in text
    assert "diagonal(%diag)" in text and "    causal" in text
    assert "window [" not in text
    assert "return %r#0, %r#1" in text


def test_input_mlir_window_bshd_no_lse():
    c = KernelConfig("f16", 64, 64, 8, 8, layout="bshd", window=(256, 0))
    text = jit.jit_input_mlir(c)
    assert "%q: tensor<?x?x8x64xf16>" in text
    assert "window [256, 0]" in text and "layout(bshd)" in text
    assert "causal" not in text.split("\n", 1)[1]  # only in the JSON comment
    assert "lse(" not in text and "%r = fat.attention" in text


def test_input_mlir_unmasked_has_no_diag():
    text = jit.jit_input_mlir(KernelConfig("bf16", 128, 128, 8, 8))
    assert "%diag" not in text and "diagonal" not in text


FAKE_OPT = textwrap.dedent('''\
    #!{python}
    """A stand-in for fa-t-opt: reads the config from the input's first line
    and writes a manifest and PTX, as --fat-to-ptx would."""
    import json, os, sys
    if sys.argv[1:] == ["--version"]:
        print("fa-t 0.1.0-test (LLVM 22)")
        sys.exit(0)
    with open(os.environ["FAKE_OPT_LOG"], "a") as log:
        log.write(json.dumps(sys.argv[1:]) + "\\n")
    source, option = sys.argv[1], sys.argv[2]
    assert option.startswith("--fat-to-ptx="), option
    opts = dict(kv.split("=", 1) for kv in option[len("--fat-to-ptx="):].split(" "))
    if os.environ.get("FAKE_OPT_FAIL"):
        sys.stderr.write(source + ":3:5: error: 'fat.attention' op is broken\\n")
        sys.exit(1)
    config = json.loads(open(source).readline().split(" for ", 1)[1])
    manifest = json.loads(os.environ["FAKE_OPT_MANIFEST"])
    manifest["config"] = dict(config, block_m=int(opts.get("block-m", 128)),
                              block_n=int(opts.get("block-n", 128)), stages=2)
    if not config["lse"]:
        manifest["params"] = [p for p in manifest["params"] if p.get("tensor") != "lse"]
    if not config["causal"] and config["window"] == [-1, -1]:
        manifest["params"] = [p for p in manifest["params"] if p.get("symbol") != "diag"]
    out = opts["output-dir"]
    with open(os.path.join(out, manifest["ptx"]), "w") as f:
        f.write(os.environ.get("FAKE_OPT_PTX", "// ptx") + "\\n")
    with open(os.path.join(out, "kernel.json"), "w") as f:
        json.dump(manifest, f)
''')


@pytest.fixture
def fake_opt(tmp_path, monkeypatch):
    """A fake fa-t-opt on FA_T_OPT, a fresh cache, and the log of its compile calls."""
    path = tmp_path / "fa-t-opt"
    path.write_text(FAKE_OPT.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FA_T_OPT", str(path))
    monkeypatch.setenv("FA_T_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_OPT_LOG", str(log))
    monkeypatch.setenv("FAKE_OPT_MANIFEST", json.dumps(EXAMPLE_MANIFEST))
    monkeypatch.delenv("FA_T_KERNEL_DIR", raising=False)

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return path, calls


def _identity(path):
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    return f"fa-t 0.1.0-test (LLVM 22) [{digest}]"


def test_compiler_version(fake_opt):
    assert jit.compiler_version(str(fake_opt[0])) == _identity(fake_opt[0])


def test_rebuilt_compiler_gets_a_new_cache_key(fake_opt):
    # Same --version, different bytes: a rebuild from newer sources.
    path = fake_opt[0]
    before = jit.compiler_version(str(path))
    path.write_text(path.read_text() + "\n# rebuilt\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    after = jit.compiler_version(str(path))
    assert after != before and after.startswith("fa-t 0.1.0-test (LLVM 22) [")


def test_jit_compiles_once_then_hits_the_cache(fake_opt, tmp_path):
    _, calls = fake_opt
    m = find_kernel(CONFIG)
    assert m.config == CONFIG
    assert m.tuning == {"block_m": 128, "block_n": 128, "stages": 2}
    key = jit.cache_key(CONFIG, jit.default_tuning(CONFIG), _identity(fake_opt[0]))
    assert m.path.parent == (tmp_path / "cache" / key).resolve()
    assert (m.path.parent / "input.mlir").is_file()
    assert m.ptx_path.read_text() == "// ptx\n"
    assert len(calls()) == 1
    assert calls()[0][1].startswith("--fat-to-ptx=sm=sm_90a output-dir=")
    # No temporary folders are left behind.
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [key]

    again = find_kernel(CONFIG)
    assert again.path == m.path and len(calls()) == 1

    other = KernelConfig("bf16", 128, 128, 16, 4)
    assert find_kernel(other).config == other
    assert len(calls()) == 2


def test_jit_tunes_for_the_key_length_octave(fake_opt):
    # One kernel per octave of key lengths: 3000 and 4000 share the
    # seq-len=4096 compile, 5000 gets its own (seq-len=8192).
    _, calls = fake_opt
    first = find_kernel(CONFIG, seq_len=3000)
    assert "seq-len=4096" in calls()[0][1]
    assert find_kernel(CONFIG, seq_len=4000).path == first.path and len(calls()) == 1
    assert find_kernel(CONFIG, seq_len=5000).path != first.path
    assert "seq-len=8192" in calls()[1][1]


def test_jit_rebuilds_a_damaged_cache_entry(fake_opt):
    _, calls = fake_opt
    m = find_kernel(CONFIG)
    m.path.write_text("{broken")
    assert find_kernel(CONFIG).config == CONFIG
    assert len(calls()) == 2


def test_jit_failure_reports_stderr(fake_opt, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_OPT_FAIL", "1")
    with pytest.raises(CompileError, match=r"(?s)fa-t-opt exited with 1 compiling .*"
                                           r"error: 'fat.attention' op is broken"):
        find_kernel(CONFIG)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []


def test_jit_rejects_a_kernel_for_another_config(fake_opt, monkeypatch):
    # A compiler that ignores the request (here: always answers head_dim 64).
    path, _ = fake_opt
    path.write_text(path.read_text().replace(
        "manifest[\"config\"] = dict(config,", "manifest[\"config\"] = dict(config, head_dim=64,"))
    with pytest.raises(CompileError, match=r"fa-t-opt compiled config .*'head_dim': 64"):
        find_kernel(CONFIG)


def test_no_kernel_and_no_compiler(monkeypatch, tmp_path):
    monkeypatch.delenv("FA_T_OPT", raising=False)
    monkeypatch.delenv("FA_T_KERNEL_DIR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KernelNotFoundError, match=r"no kernel for .*none in the kernel "
                                                  r"directories \(none \(set FA_T_KERNEL_DIR\)\)"
                                                  r", and fa-t-opt.*is not available"):
        find_kernel(CONFIG)


def test_bad_fa_t_opt_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FA_T_OPT", str(tmp_path / "nope"))
    with pytest.raises(CompileError, match=r"FA_T_OPT=.*nope' is not an executable file"):
        jit.find_fat_opt()


def test_default_cache_dir(monkeypatch):
    monkeypatch.delenv("FA_T_CACHE_DIR", raising=False)
    assert jit.cache_dir() == jit.Path.home() / ".cache" / "fa-t"
    monkeypatch.setenv("FA_T_CACHE_DIR", "/x/y")
    assert str(jit.cache_dir()) == "/x/y"


def test_aot_refuses_one_name_for_two_codes(fake_opt, tmp_path, monkeypatch):
    # A kernel's name must spell out every choice that changes its code: a
    # second build under a name already in the folder (another tuned length)
    # may only produce the same PTX, else the folder would silently keep
    # whichever came last.
    from fa_t import aot
    c = KernelConfig("bf16", 128, 128, 16, 16)
    out = tmp_path / "kernels"
    quiet = lambda *args: None  # noqa: E731
    aot.build([(c, {"seq_len": 512}), (c, {"seq_len": 1024})], out, str(fake_opt[0]), log=quiet)
    monkeypatch.setenv("FAKE_OPT_PTX", "// other code")
    with pytest.raises(CompileError, match=r"compiled to other code than the kernel of that "
                                           r"name already in"):
        aot.build([(c, {"seq_len": 8192})], out, str(fake_opt[0]), log=quiet)


@pytest.mark.parametrize("spec, message", [
    ("missing.json", "No such file or directory"),
    ("not-json.json", "Expecting value"),
    ("no-dv.json", r"no-dv.json\[0\].head_dim_v: missing"),
    ("configs.py:nothing", "configs.py has no 'nothing'"),
    ("configs.txt", "expected FILE.json or FILE.py:NAME, got 'configs.txt'"),
])
def test_aot_cli_names_a_bad_config_list(spec, message, fake_opt, tmp_path, monkeypatch, capsys):
    # python -m fa_t.aot on a list it cannot read: exit 1 and one line on
    # stderr naming the list and what is wrong with it, no traceback, and
    # nothing compiled.
    from fa_t import aot
    (tmp_path / "not-json.json").write_text("not json")
    (tmp_path / "no-dv.json").write_text('[{"dtype": "bf16", "head_dim": 64}]')
    (tmp_path / "configs.py").write_text("configs = []\n")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "kernels"
    assert aot.main([spec, "--out", str(out), "--fa-t-opt", str(fake_opt[0])]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fa_t.aot: ")
    assert re.search(message, err[0]), err[0]
    assert not out.exists() or not list(out.glob("*.ptx"))
