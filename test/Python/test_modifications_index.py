"""A kernel folder's modifications index when one modification text compiles
to two forms: ALiBi's kernel without an LSE takes the bias onto the tensor
cores (fat-tensorize linear-bias=auto) and is named by its bias columns, the
one writing the LSE keeps the score region and its key. The registry must
find each (run 116b's GPU tier missed both no-LSE kernels when the index held
one key per text). Built with this tree's compiler (skipped without it)."""

import json
import pathlib

import pytest

torch = pytest.importorskip("torch")

import fa_t  # noqa: E402
from fa_t import aot, jit, mods, registry  # noqa: E402
from fa_t.config import KernelConfig  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAT_OPT = ROOT / "build" / "bin" / "fa-t-opt"

pytestmark = pytest.mark.skipif(not FAT_OPT.exists(), reason="fa-t-opt is not built")


def test_both_forms_of_one_text_are_found(tmp_path):
    regions, _ = mods.attention_regions(score_mod=fa_t.alibi(torch.tensor([0.5, 0.25])))
    no_lse = KernelConfig("bf16", 64, 64, 2, 2, causal=True)
    with_lse = KernelConfig("bf16", 64, 64, 2, 2, causal=True, lse=True)
    built = {c.lse: aot.load_manifest(aot.build_kernel(c, {"seq_len": 256}, tmp_path,
                                                       str(FAT_OPT), str(regions)))
             for c in (no_lse, with_lse)}
    keys = {lse: m.config.modifications for lse, m in built.items()}
    assert keys[False] != keys[True]
    index = json.loads((tmp_path / jit.MODIFICATIONS_INDEX).read_text())
    assert index[jit.regions_id(str(regions))] == sorted(keys.values())
    # The tensor-core form: no score region left in the kernel, the bias
    # columns' wgmma step instead.
    ptx = (tmp_path / built[False].ptx).read_text()
    assert ptx.count("wgmma.mma_async") > (tmp_path / built[True].ptx).read_text().count(
        "wgmma.mma_async")
    for config in (no_lse, with_lse):
        found = registry.find_kernel(config, kernel_dir=str(tmp_path), allow_jit=False,
                                     regions=str(regions))
        assert found.config.modifications == keys[config.lse]


def test_an_index_of_single_keys_still_reads(tmp_path):
    # Folders built before a text could have several forms hold one key.
    assert jit.modification_keys("ab12cd34") == ["ab12cd34"]
    assert jit.modification_keys(["a", 3, "b"]) == ["a", "b"]
    assert jit.modification_keys(None) == []
    (tmp_path / jit.MODIFICATIONS_INDEX).write_text(json.dumps({jit.regions_id("x"): "k1"}))
    config = KernelConfig("bf16", 64, 64, 2, 2)
    assert registry._with_modifications(config, tmp_path, "x")[0].modifications == "k1"
    assert registry._with_modifications(config, tmp_path, "y") == []
