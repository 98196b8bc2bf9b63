"""The kernel configs the GPU tests use, in one place.

test_gpu_attention.py parametrizes over these constants, and the
ahead-of-time build of its kernels reads ``all_configs`` from here::

    python -m fa_t.aot --out .kernels-py test/Python/gpu_configs.py:all_configs

so the kernel folder carried to the GPU machine always covers the tests.
"""

import dataclasses
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from fa_t.config import KernelConfig  # noqa: E402

DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 128, 256)
#: (B, Hq, Hkv, Sq, Skv): one head, MQA, GQA, Sq = Skv = 1, ragged lengths,
#: Sq > Skv (bottom-right causal leaves rows with no key) and Sq << Skv.
SHAPES = [
    (1, 1, 1, 128, 128),
    (2, 8, 8, 1, 1),
    (2, 8, 2, 129, 257),
    (1, 16, 1, 1000, 1000),
    (2, 4, 4, 384, 77),
    (1, 4, 2, 63, 2048),
]
MASKS = ("none", "causal", "window", "causal+window")
WINDOW = (48, 16)
#: The accuracy-bar comparison with cuDNN: (B, H, S) per (dtype, D, causal).
CUDNN_SHAPE = (2, 8, 2048)
#: test_gpu_plan_cache.py: (B, H, S, D), bf16, causal (its H and D are the
#: cuDNN bar's, whose kernels it shares, plus one with LSE).
PLAN_CACHE_SHAPE = (2, 8, 256, 128)


#: test_gpu_mods.py: (B, H, Sq, Skv) with ragged lengths, and the
#: modifications it checks, by name: (causal, score_mod, mask_mod). Some read
#: captured tensors (document ids, slopes, a bias table), whose shapes the
#: regions' text and so the kernels carry; an empty row (no visible key)
#: comes from "sparse-rows". Those of BLOCK_SPARSE also pass a block mask
#: (fa_t.block_mask of their own mask_mod and causal flag: key ranges per 64
#: query rows, the kernel skipping the key blocks outside them).
MODS_SHAPE = (2, 8, 1000, 1531)
MODS_HEAD_DIMS = (("bf16", 64), ("bf16", 128), ("f16", 128))
BLOCK_SPARSE = ("document-causal-blocks", "prefix-lm-blocks", "document-runs-causal-blocks",
                "sliding-sink-blocks")
#: Score regions whose kernel without LSE is another program, tested on its
#: own too: ALiBi's row enters only as an added term, evaluated at each
#: tile's first row (fat-pipeline's rows_at_origin); the soft-cap's bound
#: reference sums its rows on the tensor cores (fat-tensorize's ones
#: columns, which kernels writing the LSE do not take).
WITHOUT_LSE = ("alibi-causal", "alibi-slopes", "softcap", "softcap-causal")
#: test_gpu_mods.py's causal ALiBi at D64 tuned for 4k keys without the
#: LSE: the weights on P with three consumer warpgroups (192 rows), which
#: fat-tensorize and fat-tile take there (linearBiasAsWeights).
ALIBI_4K_SHAPE = (1, 4, 4096, 4096)
#: test_gpu_mods.py's ALiBi past the bound of the weights form
#: (linear-bias=weights is exact only for |slope| up to its manifest's
#: linear_bias_max_factor, ~1.11): (B, H, S) at bf16, D64, causal, no LSE
#: (the weights are the default there), and the slopes, two of them past it.
ALIBI_BOUND_SHAPE = (1, 4, 4096)
ALIBI_BOUND_SLOPES = (0.5, 1.5, 0.25, 3.0)


def modifications(device="cpu"):
    """name -> (causal, score_mod, mask_mod); captured tensors on ``device``
    (made from one seed, so every call captures the same values)."""
    import torch
    import fa_t

    b, h, sq, skv = MODS_SHAPE
    g = torch.Generator().manual_seed(0)
    # 8 documents of random lengths per batch entry over the key positions.
    starts = (torch.rand(b, 7, generator=g) * skv).long().sort(-1).values
    docs = torch.searchsorted(starts, torch.arange(skv).repeat(b, 1), right=True).int()
    slopes = torch.tensor([2.0 ** (-8 * (i + 1) / h) for i in range(h)])
    table = torch.randn(h, sq + skv - 1, generator=g) * 4  # by kv_idx - q_idx
    docs, slopes, table = (t.to(device) for t in (docs, slopes, table))

    def relative_bias(score, b, h, q_idx, kv_idx):
        return score + table[h, kv_idx - q_idx + sq - 1]

    def alibi_from_head(score, b, h, q_idx, kv_idx):
        return score + torch.exp((h + 1) * -0.6931) * (kv_idx - q_idx)

    def user_score(score, b, h, q_idx, kv_idx):
        return torch.where(q_idx >= kv_idx, score * (b + 1), -score) + h * 0.25

    def key_term(score, b, h, q_idx, kv_idx):
        # A term of the key alone, which ignores the row (on the CPU path
        # test_mods.py's test_score_mods_that_ignore_indices_under_a_causal_mask).
        return score + kv_idx * 0.01

    def row_head_term(score, b, h, q_idx, kv_idx):
        return score - q_idx * 0.01 + h

    def sliding_sink(b, h, q_idx, kv_idx):
        # Four sinks and a 256-key window: a hole between them (six-column
        # block mask) for the rows past ~260 + Skv − Sq.
        return (kv_idx < 4) | (q_idx - kv_idx < 256 - (skv - sq))

    def sparse_rows(b, h, q_idx, kv_idx):
        return ((q_idx % 7) != 3) & ((kv_idx % 4) != 1)

    def band_causal(b, h, q_idx, kv_idx):
        # Key bounds alone under the causal flag (per-row limits beside the
        # causal mask; perf log runs 158–159), the key on either side: the
        # causal diagonal (i + Skv − Sq = i + 531) binds above, the band
        # below.
        return (kv_idx > q_idx - 200) & (q_idx + 600 >= kv_idx)

    def band_and_rest(b, h, q_idx, kv_idx):
        # Bounds on the key either side and strict or not (the kernel's
        # per-row limits, perf log run 158) beside a conjunct that is none.
        return (q_idx >= kv_idx) & (kv_idx > q_idx - 100) & ((kv_idx % 3) != 1)

    return {
        "softcap": (False, fa_t.softcap(30.0), None),
        "softcap-causal": (True, fa_t.softcap(20.0), None),
        "alibi-causal": (True, alibi_from_head, None),
        "prefix-lm": (False, None, fa_t.prefix_lm(300)),
        # Most of its visited blocks are full: the kernel skips the region there.
        "prefix-lm-blocks": (False, None, fa_t.prefix_lm(300)),
        "user-both": (False, user_score, sparse_rows),
        "band-and-rest": (False, None, band_and_rest),
        "band-causal": (True, None, band_causal),
        "document-causal": (True, None, fa_t.document_mask(docs)),
        "document-causal-blocks": (True, None, fa_t.document_mask(docs)),
        # The same packings as each query's run of keys (two bounds per row).
        "document-runs-causal": (True, None, fa_t.document_mask(docs, runs=True)),
        "document-runs-causal-blocks": (True, None, fa_t.document_mask(docs, runs=True)),
        "alibi-slopes": (True, fa_t.alibi(slopes), None),
        "sliding-sink": (True, None, sliding_sink),
        "sliding-sink-blocks": (True, None, sliding_sink),
        "relative-bias": (False, relative_bias, None),
        "key-term-causal": (True, key_term, None),
        "row-head-term": (False, row_head_term, None),
    }


def block_mask_of(name, causal, mask_mod, device="cpu"):
    """The block mask a modification of that name runs with (None unless
    BLOCK_SPARSE), on ``device`` (its ranges' shape, the same on any
    device, is in the regions' text)."""
    if name not in BLOCK_SPARSE:
        return None
    import fa_t
    b, _, sq, skv = MODS_SHAPE
    return fa_t.block_mask(mask_mod, b, None, sq, skv, causal=causal, device=device)


def mods_entries():
    """(KernelConfig, tuning, regions) of every modification test_gpu_mods.py runs."""
    from fa_t import jit, mods, registry
    out = []
    for (dtype, d), (name, (causal, score_mod, mask_mod)) in itertools.product(
            MODS_HEAD_DIMS, modifications().items()):
        config = KernelConfig(dtype, d, d, MODS_SHAPE[1], MODS_SHAPE[1], causal=causal,
                              lse=True)
        bm = block_mask_of(name, causal, mask_mod)
        regions, _ = mods.attention_regions(score_mod, mask_mod,
                                            None if bm is None else bm.ranges)
        out.append((config, jit.default_tuning(config, MODS_SHAPE[3]), regions))
        if name in WITHOUT_LSE:
            # The kernel without LSE is another program (rows_at_origin,
            # the ones columns): test_gpu_mods checks it too.
            nolse = dataclasses.replace(config, lse=False)
            out.append((nolse, jit.default_tuning(nolse, MODS_SHAPE[3]), regions))
    _, score_mod, _ = modifications()["alibi-causal"]
    regions, _ = mods.attention_regions(score_mod, None, None)
    b, h, sq, skv = ALIBI_4K_SHAPE
    config = KernelConfig("bf16", 64, 64, h, h, causal=True)
    out.append((config, jit.default_tuning(config, skv), regions))
    # The weights form (the default there) and the vector form, which the
    # launcher takes for the slopes past the weights' bound.
    import torch
    import fa_t
    b, h, s = ALIBI_BOUND_SHAPE
    regions, _ = mods.attention_regions(fa_t.alibi(torch.tensor(ALIBI_BOUND_SLOPES)))
    config = KernelConfig("bf16", 64, 64, h, h, causal=True)
    out.append((config, jit.default_tuning(config, s), regions))
    out.append((config, {**jit.default_tuning(config, s), **registry.NOT_WEIGHTS_TUNING},
                regions))
    return out


def mask_args(mask):
    """(causal, window) of a MASKS entry."""
    return "causal" in mask, (WINDOW if "window" in mask else (-1, -1))


def all_configs():
    """Every KernelConfig some GPU test launches."""
    configs = []
    for dtype, d, shape, mask in itertools.product(DTYPES, HEAD_DIMS, SHAPES, MASKS):
        causal, window = mask_args(mask)
        configs.append(KernelConfig(dtype=dtype, head_dim=d, head_dim_v=d, num_heads_q=shape[1],
                                    num_heads_kv=shape[2], causal=causal, window=window,
                                    lse=True))
    # test_attention_api_defaults_and_scale: GQA 8/4, with and without LSE.
    configs += [KernelConfig("bf16", 128, 128, 8, 4, causal=True, lse=True),
                KernelConfig("bf16", 128, 128, 8, 4)]
    # test_sdpa_matches_torch: f16 D64 GQA 8/2, no LSE.
    configs += [KernelConfig("f16", 64, 64, 8, 2, causal=c) for c in (False, True)]
    # test_error_within_cudnn_bar: through scaled_dot_product_attention, no LSE.
    configs += [KernelConfig(dtype, d, d, CUDNN_SHAPE[1], CUDNN_SHAPE[1], causal=c)
                for dtype, d, c in itertools.product(DTYPES, HEAD_DIMS, (False, True))]
    # test_gpu_plan_cache.py: the CUDA graph of fa_t.attention with the LSE.
    h, d = PLAN_CACHE_SHAPE[1], PLAN_CACHE_SHAPE[3]
    configs.append(KernelConfig("bf16", d, d, h, h, causal=True, lse=True))
    # test_gpu_mods.py: the kernels of score / mask modifications.
    configs += mods_entries()
    return configs
