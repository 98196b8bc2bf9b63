"""Python score_mod / mask_mod, traced by fa_t.mods and compiled by fa-t.

The chain a user's function takes: ``fa_t.mods.attention_regions`` traces it
(torch.fx) into fat.attention's score / mask regions, ``fa-t-opt
--fat-to-cpu`` (and, for one case, --fat-tile --fat-tensorize first)
compiles the op, and the result must match the same functions evaluated by
torch in float64 (``fa_t.torch_ops.attention_math``) on fresh random inputs,
outputs poisoned first. Block masks' key ranges (``kv_ranges``) ride along as
the last capture.
"""

import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import fa_t  # noqa: E402
from fa_t import mods  # noqa: E402
from fa_t.torch_ops import attention_math  # noqa: E402

from fatcpu import CompiledModule, rel_error  # noqa: E402

B, H, S, D = 2, 4, 96, 64

SLOPES = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)])
DOCS = torch.sort(torch.randint(0, 6, (S,), generator=torch.Generator().manual_seed(5))).values
#: A packing per batch entry, [B, S].
BATCH_DOCS = torch.sort(torch.randint(0, 5, (B, S), generator=torch.Generator().manual_seed(6)),
                        dim=-1).values

CASES = {
    "softcap": dict(score_mod=fa_t.softcap(3.0)),
    "alibi_documents": dict(score_mod=fa_t.alibi(SLOPES), mask_mod=fa_t.document_mask(DOCS)),
    "batch_documents": dict(mask_mod=fa_t.document_mask(BATCH_DOCS)),
    "prefix_lm": dict(mask_mod=fa_t.prefix_lm(20)),
    "user": dict(score_mod=lambda s, b, h, q, k: torch.where(q >= k, s * (b + 1), -s) + h * 0.5,
                 mask_mod=lambda b, h, q, k: ((k % 4) != 3) | (q // 8 == k // 8)),
    # Block sparsity: a block mask's key ranges (the last capture, named by
    # {kv_ranges = N : i64}) conjoined into the mask. The document mask's own
    # ranges change nothing; hand-set ones (no mask_mod: an always-true mask
    # region) hide keys, a whole group's included; hand-set full ranges
    # (columns 2..3) keep their promise that the mask region holds there
    # (prefix_lm(20) keeps keys < 20 for rows 0..63 and keys <= 64 for rows
    # 64..95) and change nothing: the compiler tests first <= j < end only.
    "document_blocks": dict(mask_mod=fa_t.document_mask(BATCH_DOCS),
                            kv_ranges=fa_t.block_mask(fa_t.document_mask(BATCH_DOCS), B, H, S,
                                                      S, device="cpu").ranges),
    "ranges_only": dict(score_mod=fa_t.softcap(3.0),
                        kv_ranges=torch.tensor([[[5, 70], [40, 96]], [[0, 0], [33, 34]]],
                                               dtype=torch.int32)),
    "full_ranges": dict(mask_mod=fa_t.prefix_lm(20),
                        kv_ranges=torch.tensor([[[0, 96, 0, 20], [10, 96, 32, 65]],
                                                [[0, 60, 5, 20], [20, 96, 20, 64]]],
                                               dtype=torch.int32)),
}


def test_full_ranges_case_keeps_its_promise():
    # The hand-set table is one fa_t.attention accepts (it raises otherwise).
    case = CASES["full_ranges"]
    table = mods.BlockMask(case["kv_ranges"], B, H, S, S, False, case["mask_mod"])
    table.check_full_ranges(case["mask_mod"], "cpu")


def module_text(case, causal, dtype="f32"):
    regions, caps = mods.attention_regions(**case)
    t = f"memref<2x4x96x64x{dtype}>"
    cap_args = "".join(f", %c{i}: memref<{mods.tensor_type(c)[7:-1]}>" for i, c in enumerate(caps))
    cap_list = ", ".join(f"%c{i}" for i in range(len(caps)))
    cap_types = ", ".join(f"memref<{mods.tensor_type(c)[7:-1]}>" for c in caps)
    captures = f" captures({cap_list} : {cap_types})" if caps else ""
    return (f"func.func @attn(%q: {t}, %k: {t}, %v: {t}, %o: {t}, %l: memref<2x4x96xf32>{cap_args})"
            f" attributes {{llvm.emit_c_interface}} {{\n"
            f"  fat.attention ins(%q, %k, %v : {t}, {t}, {t}) outs(%o : {t})"
            f" lse(%l : memref<2x4x96xf32>){captures}{' causal' if causal else ''}{regions}\n"
            f"  return\n}}\n"), caps


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("causal", [False, True])
def test_traced_mods_compile_and_match(name, causal):
    case = CASES[name]
    text, caps = module_text(case, causal)
    mod = CompiledModule(text, block_m=64, block_n=32)
    g = torch.Generator().manual_seed(11)
    q, k, v = (torch.randn(B, H, S, D, generator=g) * 2 for _ in range(3))
    o = np.full((B, H, S, D), np.nan, dtype=np.float32)
    lse = np.full((B, H, S), np.nan, dtype=np.float32)
    mod.call("attn", q.numpy(), k.numpy(), v.numpy(), o, lse,
             *[np.ascontiguousarray(c.numpy()) for c in caps])
    ref_o, ref_lse = attention_math(q.double(), k.double(), v.double(), causal=causal,
                                    scale=1 / D ** 0.5, diag=0, **case)
    assert np.isfinite(o).all()
    assert rel_error(o.astype(np.float64), ref_o.numpy()) < 1e-5
    fin = np.isfinite(ref_lse.numpy())
    assert (np.isneginf(lse) == ~fin).all()
    assert rel_error(lse[fin].astype(np.float64), ref_lse.numpy()[fin]) < 1e-5


def test_traced_mods_through_the_tensorized_level():
    """The traced regions ride through fat-tensorize like written ones."""
    text, caps = module_text(CASES["alibi_documents"], causal=True, dtype="bf16")
    mod = CompiledModule(text, block_m=64, block_n=32, tensorize="rowsum=mma rescale=lazy")
    assert "fat.score_mod" in mod.tensorized_ir and "fat.wgmma" in mod.tensorized_ir


def test_traced_mods_compile_to_hopper_kernels(tmp_path):
    # The GPU path of the same functions, up to the kernels (a GPU runs them:
    # bench/bench_mods.py): fa_t.aot compiles a (config, tuning, regions)
    # entry with fa-t-opt, names the regions' compiler key in the folder's
    # modifications.json, and fa_t.find_kernel finds that kernel by the
    # regions' text without compiling again.
    import os
    from fa_t import aot, jit, registry
    from fa_t.config import KernelConfig
    opt = os.environ["FA_T_OPT"]
    config = KernelConfig("bf16", 64, 64, 8, 8, causal=True)
    softcap, _ = mods.attention_regions(score_mod=fa_t.softcap(30.0))
    prefix, _ = mods.attention_regions(mask_mod=fa_t.prefix_lm(64))
    out = tmp_path / "kernels"
    paths = aot.build([(config, jit.default_tuning(config, 4096), softcap),
                       (config, jit.default_tuning(config, 4096), prefix)], out, opt,
                      log=lambda *a: None)
    keys = [registry.load_manifest(p).config.modifications for p in paths]
    assert all(keys) and keys[0] != keys[1]
    index = __import__("json").loads((out / jit.MODIFICATIONS_INDEX).read_text())
    assert index == {jit.regions_id(softcap): [keys[0]], jit.regions_id(prefix): [keys[1]]}
    found = registry.find_kernel(config, out, allow_jit=False, seq_len=4096, regions=softcap)
    assert found.config.modifications == keys[0] and "_mod" + keys[0] in found.entry
    ptx = (out / found.ptx).read_text()
    assert "tanh.approx.f32" in ptx and "__nv_" not in ptx


def test_captured_tensors_compile_to_hopper_kernels(tmp_path):
    # A modification reading a tensor (document ids, [2, 256] int32) compiles
    # to a kernel that takes it by pointer after every other parameter
    # (capture0); the regions' text carries its type, so the registry finds
    # the kernel by it and a capture of another shape is another kernel.
    import os
    from fa_t import aot, jit, registry
    from fa_t.config import KernelConfig
    from fa_t.errors import KernelNotFoundError
    from fa_t.manifest import ParamSpec
    docs = torch.sort(torch.randint(0, 8, (2, 256), generator=torch.Generator().manual_seed(7)),
                      dim=-1).values
    regions, caps = mods.attention_regions(mask_mod=fa_t.document_mask(docs))
    assert [c.dtype for c in caps] == [torch.int32]
    config = KernelConfig("bf16", 64, 64, 8, 8, causal=True)
    out = tmp_path / "kernels"
    [path] = aot.build([(config, jit.default_tuning(config, 256), regions)], out,
                       os.environ["FA_T_OPT"], log=lambda *a: None)
    manifest = registry.load_manifest(path)
    assert manifest.config.modifications
    assert manifest.params[-1] == ParamSpec("ptr", tensor="capture0")
    assert [p.tensor for p in manifest.params
            if (p.tensor or "").startswith("capture")] == ["capture0"]
    found = registry.find_kernel(config, out, allow_jit=False, seq_len=256, regions=regions)
    assert found.entry == manifest.entry
    other, _ = mods.attention_regions(mask_mod=fa_t.document_mask(docs[:, :128]))
    with pytest.raises(KernelNotFoundError):
        registry.find_kernel(config, out, allow_jit=False, seq_len=256, regions=other)
