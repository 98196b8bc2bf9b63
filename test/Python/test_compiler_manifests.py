"""The manifests fa-t-opt writes parse with fa_t's manifest reader (the ABI).

Compiles one kernel per grid form and schedule with the real compiler of
this tree: the default grids (query blocks in x, or heads in x for causal
masks) and the persistent kernels' one-dimensional grid bounded by the SMs,
whose batch size is a parameter. Skipped when build/bin/fa-t-opt is absent.
"""

import pathlib
import subprocess

import pytest

from fa_t import jit
from fa_t.config import KernelConfig
from fa_t.manifest import load_manifest
from fa_t.params import launch_grid

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAT_OPT = ROOT / "build" / "bin" / "fa-t-opt"

pytestmark = pytest.mark.skipif(not FAT_OPT.exists(), reason="fa-t-opt is not built")

SYMBOLS = {"B": 3, "Hq": 8, "Hkv": 8, "Sq": 1000, "Skv": 1000, "D": 64, "Dv": 64}


def query_blocks(m, causal):
    """⌈Sq/block-m⌉, with the cost model's block-m pinned: 192 rows (three
    consumer warpgroups) at D = 64 without a mask, 128 with one."""
    block_m = m.tuning["block_m"]
    assert block_m == (128 if causal else 192)
    return -(-SYMBOLS["Sq"] // block_m)


def compile_one(tmp_path, config, tuning):
    tmp_path.mkdir(exist_ok=True)
    source = tmp_path / "in.mlir"
    source.write_text(jit.jit_input_mlir(config))
    command = jit.fat_opt_command(str(FAT_OPT), source, tmp_path, tuning)
    subprocess.run(command, check=True, capture_output=True, text=True)
    (json_path,) = tmp_path.glob("*.json")
    return load_manifest(json_path)


@pytest.mark.parametrize("causal", [False, True])
def test_one_cta_per_tile_grid(tmp_path, causal):
    config = KernelConfig("bf16", 64, 64, 8, 8, causal=causal)
    m = compile_one(tmp_path, config, {**jit.default_tuning(config), "persistent": "off"})
    assert m.config == config
    assert "B" not in [p.symbol for p in m.params if p.kind == "i32"]
    # (query blocks, heads, B), or (heads, query blocks, B) for causal masks.
    blocks = query_blocks(m, causal)
    assert launch_grid(m.grid, SYMBOLS) == ((8, blocks, 3) if causal else (blocks, 8, 3))


@pytest.mark.parametrize("causal", [False, True])
def test_default_schedule_grid(tmp_path, causal):
    # The cost model: persistent CTAs, over 6·8·3 = 144 tiles of 192 rows
    # without a mask and over 4·8·3 = 96 pairs of 128-row query blocks with
    # the causal mask (132 SMs); one CTA per tile with a window.
    # Without a mask (no ping-pong turns) the tiles also overlap: suffix c.
    config = KernelConfig("bf16", 64, 64, 8, 8, causal=causal)
    m = compile_one(tmp_path, config, jit.default_tuning(config))
    assert m.entry.endswith("t132" if causal else "t132c")
    assert launch_grid(m.grid, SYMBOLS) == ((96 if causal else 132), 1, 1)
    windowed = KernelConfig("bf16", 64, 64, 8, 8, causal=causal, window=(100, 0))
    m = compile_one(tmp_path / "w", windowed, jit.default_tuning(windowed))
    assert "t132" not in m.entry


@pytest.mark.parametrize("causal", [False, True])
def test_persistent_grid_and_batch_parameter(tmp_path, causal):
    config = KernelConfig("bf16", 64, 64, 8, 8, causal=causal)
    tuning = {**jit.default_tuning(config), "persistent": "on", "num-sms": 132}
    m = compile_one(tmp_path, config, tuning)
    assert m.entry.endswith("t132" if causal else "t132c")
    assert [p.symbol for p in m.params if p.kind == "i32"][-1] == "B"
    # 6 query blocks of 192 rows x 8 heads x 3 batches = 144 tiles on 132
    # SMs; with a causal mask the work units are pairs of 128-row query
    # blocks (4 per head).
    blocks = query_blocks(m, causal)
    units_per_head = (blocks + 1) // 2 if causal else blocks
    assert launch_grid(m.grid, SYMBOLS) == (min(units_per_head * 8 * 3, 132), 1, 1)
    assert launch_grid(m.grid, {**SYMBOLS, "B": 1}) == (units_per_head * 8, 1, 1)


def test_persistent_kernel_params_end_with_batch(tmp_path):
    """The launcher fills the persistent kernel's trailing i32 with B."""
    import ctypes
    import struct
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from fakes import BF16, FakeTensor
    from fa_t.params import TensorMapBuffer, build_params, problem_symbols

    config = KernelConfig("bf16", 64, 64, 8, 8, causal=True)
    tuning = {**jit.default_tuning(config), "persistent": "on"}
    m = compile_one(tmp_path, config, tuning)
    q = FakeTensor((3, 8, 1000, 64), BF16, ptr=0x10000)
    k = FakeTensor((3, 8, 1000, 64), BF16, ptr=0x20000)
    v = FakeTensor((3, 8, 1000, 64), BF16, ptr=0x30000)
    o = FakeTensor((3, 8, 1000, 64), BF16, ptr=0x40000)
    symbols = problem_symbols(q.shape, k.shape, v.shape, diag=0, scale=0.125)
    p = build_params(m, {"q": q, "k": k, "v": v, "o": o}, symbols,
                     lambda args: TensorMapBuffer())
    last = p.array[len(p) - 1]
    assert struct.unpack("<i", ctypes.string_at(last, 4))[0] == 3


@pytest.mark.parametrize("seq_len,form", [(4096, "weights"), (1024, "mma")])
def test_alibi_weights_manifest_records_its_bound(tmp_path, seq_len, form):
    # Causal ALiBi at D64 from 4k keys is weights on P (the cost model's
    # choice), exact for |slope| <= 35 / 31.5 with 64-key runs: the manifest
    # says so, and fa_t's reader takes the bound the launcher checks.
    import torch
    import fa_t
    from fa_t import mods
    regions, _ = mods.attention_regions(fa_t.alibi(torch.tensor([0.5, 0.25, 0.125, 0.0625])))
    config = KernelConfig("bf16", 64, 64, 4, 4, causal=True)
    source = tmp_path / "in.mlir"
    source.write_text(jit.jit_input_mlir(config, regions))
    command = jit.fat_opt_command(str(FAT_OPT), source, tmp_path, {"seq_len": seq_len})
    subprocess.run(command, check=True, capture_output=True, text=True)
    (path,) = tmp_path.glob("*.json")
    m = load_manifest(path)
    assert m.linear_bias == form and not m.schedule_forced
    if form == "weights":
        assert m.linear_bias_max_factor == pytest.approx(35 / 31.5)
    else:
        assert m.linear_bias_max_factor is None
