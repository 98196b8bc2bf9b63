"""Where a modification kernel's error against float64 comes from, on a GPU.

For the document-causal mask with and without its block mask (key ranges),
on several fresh random inputs per kernel of test_gpu_mods.py, prints the
largest |O - ref|, the reference's |O| there, that row's number of visible
keys, the error in units of the output type's ulp at |ref|, and the largest
difference between the dense and the block-sparse kernel on the same inputs.
A rounding error stays within a few ulps of |O| (rows that see few keys have
|O| near a single V row, up to ~4); a skipped visible key does not.

    FA_T_KERNEL_DIR=.kernels-py python3 test/GPU/mods_error_study.py [--seeds 4]
"""

import argparse
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(root / "python"), str(root / "test" / "Python")]

import torch  # noqa: E402

from fa_t import api, mods  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402
from gpu_configs import MODS_HEAD_DIMS, MODS_SHAPE, block_mask_of, modifications  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def run(name, q, k, v, scale):
    causal, score_mod, mask_mod = modifications("cuda")[name]
    bm = block_mask_of(name, causal, mask_mod, "cuda")
    regions, captures = mods.attention_regions(score_mod, mask_mod,
                                               None if bm is None else bm.ranges)
    out = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:3], float("nan"), device="cuda", dtype=torch.float32)
    o, _ = api._forward(q, k, v, causal=causal, window=(-1, -1), diag=None, scale=scale,
                        want_lse=True, out=out, lse_out=lse, regions=regions,
                        captures=captures)
    ref, _ = attention_reference(q, k, v, causal=causal, scale=scale, score_mod=score_mod,
                                 mask_mod=mask_mod, block_mask=bm)
    return o, ref, mask_mod


def visible_keys(mask_mod, b, h, row, sq, skv):
    kv = torch.arange(skv, device="cuda")
    seen = mask_mod(torch.tensor(b), torch.tensor(h), torch.tensor(row, device="cuda"), kv)
    seen = seen & (kv <= row + skv - sq)  # causal, bottom-right
    return int(seen.sum())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=4)
    args = p.parse_args()
    b, h, sq, skv = MODS_SHAPE
    for dtype, d in MODS_HEAD_DIMS:
        t = DTYPES[dtype]
        eps = torch.finfo(t).eps
        for seed in range(args.seeds):
            torch.manual_seed(seed)
            q = torch.randn(b, h, sq, d, device="cuda", dtype=t) * 2
            k = torch.randn(b, h, skv, d, device="cuda", dtype=t) * 2
            v = torch.randn(b, h, skv, d, device="cuda", dtype=t)
            outs = {}
            for name in ("document-causal", "document-causal-blocks"):
                o, ref, mask_mod = run(name, q, k, v, d ** -0.5)
                err = (o.double() - ref).abs()
                i = int(err.argmax())
                bi, hi, row, col = (int(x) for x in torch.unravel_index(torch.tensor(i),
                                                                        err.shape))
                mag = ref[bi, hi, row, col].abs().item()
                ulp = eps * 2.0 ** torch.tensor(max(mag, 1e-30)).log2().floor().item()
                rel = (err / ref.abs().clamp_min(1.0)).max().item()
                print(f"{dtype} D{d} seed {seed} {name:24s} max|err| {err.max().item():.3g} "
                      f"at (b{bi} h{hi} row {row}) |ref| {mag:.3f} = {err.max().item() / ulp:.2f} "
                      f"ulp, keys {visible_keys(mask_mod, bi, hi, row, sq, skv)}; "
                      f"max err/max(1,|ref|) {rel:.3g}", flush=True)
                outs[name] = o
            diff = (outs["document-causal"].double() - outs["document-causal-blocks"]).abs()
            print(f"{dtype} D{d} seed {seed} dense vs blocks: max diff {diff.max().item():.3g}, "
                  f"{int((diff > 0).sum())} elements differ", flush=True)


if __name__ == "__main__":
    main()
