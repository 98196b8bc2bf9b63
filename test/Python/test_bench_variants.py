"""bench.py's lookup of ablation variants in kernel folders, with kernels the
real compiler of this tree builds (skipped when build/bin/fa-t-opt is absent).

A variant without ``block_n`` means the compiler's default width: a folder
holding the same schedule at two widths must not silently serve one of them
(run 18's "o" column at D = 256 read the 64-key kernel of the "on64"
variant that way)."""

import importlib.util
import pathlib

import pytest

from fa_t import aot

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAT_OPT = ROOT / "build" / "bin" / "fa-t-opt"

pytestmark = pytest.mark.skipif(not FAT_OPT.exists(), reason="fa-t-opt is not built")


def load_bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "bench" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(folder, config, label, bench):
    folder.mkdir(exist_ok=True)
    tuning = dict(bench.VARIANTS[label])
    aot.build_kernel(config, tuning, folder, str(FAT_OPT))


def test_width_variants_in_one_folder_are_ambiguous(tmp_path):
    bench = load_bench()
    config = bench.point_config("bf16", 256, False)
    both = tmp_path / "both"
    build(both, config, "o", bench)
    build(both, config, "on64", bench)
    assert bench.find_variant([str(both)], config, "on64").tuning["block_n"] == 64
    with pytest.raises(LookupError, match=r"ambiguous.*block_n \[64, 80\]"):
        bench.find_variant([str(both)], config, "o")


def test_folders_are_searched_in_order(tmp_path):
    bench = load_bench()
    config = bench.point_config("bf16", 256, False)
    plain, widths = tmp_path / "plain", tmp_path / "widths"
    build(plain, config, "o", bench)
    build(widths, config, "on64", bench)
    dirs = [str(plain), str(widths)]
    assert bench.find_variant(dirs, config, "o").tuning["block_n"] == 80
    assert bench.find_variant(dirs, config, "on64").tuning["block_n"] == 64
    with pytest.raises(LookupError, match="no variant 'ot'"):
        bench.find_variant(dirs, config, "ot")


def test_rep_orders_vary_each_slots_predecessor():
    """The timing order is a fresh permutation per repetition, so no slot
    sits behind the same implementation every time (run 37's slot bias)."""
    bench = load_bench()
    names = ["fa-t", "base", "cudnn", "flash"]
    orders = bench.rep_orders(names, 30)
    assert len(orders) == 30
    assert all(sorted(o) == sorted(names) for o in orders)
    for n in names:
        before = {o[o.index(n) - 1] if o.index(n) else None for o in orders}
        assert len(before) >= 3, (n, before)
    assert orders == bench.rep_orders(names, 30)  # seeded: repeatable
    assert orders != bench.rep_orders(names, 30, seed=1)


def test_exp2_poly_folder_builds_forced_d64_kernels(tmp_path):
    # Run 60's folders: D = 64's bf16 grid kernels with the fraction forced,
    # each tuned length kept, found by find_base as the forced schedule.
    bench = load_bench()
    entries = bench.poly12_d64_configs()
    assert entries and all(c.head_dim == 64 and c.dtype == "bf16" for c, _ in entries)
    assert all(t["exp2-poly"] == "0.125" and "seq_len" in t for _, t in entries)
    config, tuning = entries[0]
    manifest = aot.build_kernel(config, tuning, tmp_path, str(FAT_OPT))
    assert "e13" in manifest.stem
    found = bench.find_base([tmp_path], config, tuning["seq_len"])
    assert found.path == manifest
