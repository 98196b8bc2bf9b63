"""Ahead-of-time kernel directories: scanning and lookup by config. CPU only."""

import json
import os

import pytest

from fa_t import KernelConfig, KernelNotFoundError, ManifestError, find_kernel
from fa_t.registry import kernel_dirs, scan_kernel_dir


def write_kernel(directory, name, manifest):
    manifest = dict(manifest, ptx=f"{name}.ptx")
    (directory / f"{name}.ptx").write_text("// ptx")
    (directory / f"{name}.json").write_text(json.dumps(manifest))


@pytest.fixture
def kernel_dir(tmp_path, manifest_dict):
    d = tmp_path / "kernels"
    d.mkdir()
    write_kernel(d, "b_causal", manifest_dict)
    plain = json.loads(json.dumps(manifest_dict))
    plain["config"]["causal"] = False
    plain["params"] = [p for p in plain["params"] if p.get("symbol") != "diag"]
    write_kernel(d, "a_plain", plain)
    (d / "configs.json").write_text(json.dumps([{"dtype": "bf16"}]))  # not a kernel
    return d


CAUSAL = KernelConfig("bf16", 128, 128, 16, 4, causal=True, lse=True)


def test_scan_skips_other_json(kernel_dir):
    names = [m.path.name for m in scan_kernel_dir(kernel_dir)]
    assert names == ["a_plain.json", "b_causal.json"]


def test_find_by_config(kernel_dir):
    assert find_kernel(CAUSAL, kernel_dir, allow_jit=False).path.name == "b_causal.json"
    plain = KernelConfig("bf16", 128, 128, 16, 4, lse=True)
    assert find_kernel(plain, str(kernel_dir), allow_jit=False).path.name == "a_plain.json"


def test_cost_model_kernel_wins_over_forced_variants(kernel_dir, manifest_dict):
    # Ablation variants of the same config, first by name, forced: the
    # cost model's kernel is still the one served.
    for name in ("a0_variant", "a1_variant"):
        forced = json.loads(json.dumps(manifest_dict))
        forced["schedule"] = {"overlap": False, "forced": True}
        write_kernel(kernel_dir, name, forced)
    assert find_kernel(CAUSAL, kernel_dir, allow_jit=False).path.name == "b_causal.json"
    # Only forced ones: the first by name.
    (kernel_dir / "b_causal.json").unlink()
    assert find_kernel(CAUSAL, kernel_dir, allow_jit=False).path.name == "a0_variant.json"


def test_forced_variants_are_picked_by_tuned_length(kernel_dir, manifest_dict):
    # A folder of one ablation (bench/feature_ablation.py build): forced
    # kernels of one config tuned for different lengths. A call for 4k keys
    # gets the one tuned for 4k and up, not the first by name (which made
    # `feature_ablation.py ncu` profile the 2k kernel at 4k).
    (kernel_dir / "b_causal.json").unlink()
    for name, seq_len in (("a_short", 2048), ("b_long", 16384)):
        forced = json.loads(json.dumps(manifest_dict))
        forced["schedule"] = {"overlap": False, "forced": True}
        forced["config"]["seq_len"] = seq_len
        write_kernel(kernel_dir, name, forced)
    def pick(seq_len):
        return find_kernel(CAUSAL, kernel_dir, allow_jit=False, seq_len=seq_len).path.name
    assert pick(1024) == "a_short.json"
    assert pick(4096) == "b_long.json"


def test_kernels_tuned_for_key_lengths(kernel_dir, manifest_dict):
    # One config built for ascending key lengths keeps one file per distinct
    # kernel, tuned for the longest length that chose it (python -m fa_t.aot
    # of bench.grid_configs): a call takes the kernel tuned for the shortest
    # length at least its own, past the longest the longest, and without a
    # length the first by name as before.
    (kernel_dir / "b_causal.json").unlink()
    for name, seq_len in (("c_short", 2048), ("d_long", 16384)):
        tuned = json.loads(json.dumps(manifest_dict))
        tuned["config"]["seq_len"] = seq_len
        write_kernel(kernel_dir, name, tuned)
    def pick(seq_len):
        return find_kernel(CAUSAL, kernel_dir, allow_jit=False, seq_len=seq_len).path.name
    assert pick(1) == pick(2048) == "c_short.json"
    assert pick(2049) == pick(16384) == "d_long.json"
    assert pick(65536) == "d_long.json"
    assert find_kernel(CAUSAL, kernel_dir, allow_jit=False).path.name == "c_short.json"
    # A kernel tuned for no length in particular (seq_len 0) serves the
    # lengths past every tuned one.
    untuned = json.loads(json.dumps(manifest_dict))
    untuned["config"]["seq_len"] = 0
    write_kernel(kernel_dir, "e_any", untuned)
    assert pick(65536) == "e_any.json"
    assert pick(4096) == "d_long.json"


def test_negative_seq_len_is_malformed(kernel_dir, manifest_dict):
    bad = json.loads(json.dumps(manifest_dict))
    bad["config"]["seq_len"] = -1
    write_kernel(kernel_dir, "z_bad", bad)
    with pytest.raises(ManifestError, match=r"config.seq_len: expected a non-negative integer"):
        scan_kernel_dir(kernel_dir)


def test_env_kernel_dirs(kernel_dir, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("FA_T_KERNEL_DIR", f"{empty}{os.pathsep}{kernel_dir}")
    assert kernel_dirs() == [empty, kernel_dir]
    assert find_kernel(CAUSAL, allow_jit=False).path.name == "b_causal.json"
    assert kernel_dirs([empty]) == [empty]


def test_no_match(kernel_dir):
    other = KernelConfig("f16", 128, 128, 16, 4, causal=True, lse=True)
    with pytest.raises(KernelNotFoundError, match=r"no kernel for .*'dtype': 'f16'.* in kernel "
                                                  r"directories: .*kernels"):
        find_kernel(other, kernel_dir, allow_jit=False)


def test_missing_dir(tmp_path):
    with pytest.raises(KernelNotFoundError, match=r"kernel directory .*nowhere does not exist"):
        find_kernel(CAUSAL, tmp_path / "nowhere", allow_jit=False)


def test_broken_kernel_in_dir_is_reported(kernel_dir, manifest_dict):
    manifest_dict["block"] = [0, 1, 1]
    write_kernel(kernel_dir, "c_broken", manifest_dict)
    with pytest.raises(ManifestError, match=r"c_broken.json: block\[0\]"):
        find_kernel(CAUSAL, kernel_dir, allow_jit=False)


def test_other_target_is_not_used(tmp_path, manifest_dict):
    manifest_dict["sm"] = "sm_100a"
    write_kernel(tmp_path, "blackwell", manifest_dict)
    with pytest.raises(KernelNotFoundError):
        find_kernel(CAUSAL, tmp_path, allow_jit=False)
