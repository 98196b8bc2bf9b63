"""A float64 attention reference for testing kernels.

Written directly from the semantics in docs/kernel-abi.md, sharing no code
with the kernel path (no fa_t.checks, params or config), so an error in one
is not mirrored in the other.
"""

from __future__ import annotations

import math


def attention_reference(q, k, v, *, causal=False, scale=None, window=None, diag=None,
                        score_mod=None, mask_mod=None, block_mask=None):
    """Attention in float64 on q's device; returns (O, LSE), both float64.

    q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv], Hq a multiple
    of Hkv. ``diag`` is the key index aligned with query row 0; default
    Skv - Sq (bottom-right), pass 0 for torch's top-left ``is_causal``.
    Key j is visible from query i iff (not causal or j <= i + diag) and
    (i + diag - left <= j if left >= 0) and (j <= i + diag + right if right >= 0).
    A row with no visible key gets O = 0 and LSE = -inf. ``score_mod(s, b,
    h, i, j)`` and ``mask_mod(b, h, i, j)`` (FlexAttention's style) modify
    the scaled scores and hide keys, evaluated here on broadcast index
    tensors b [B,1,1,1], h [1,Hq,1,1], i [1,1,Sq,1], j [1,1,1,Skv].
    ``block_mask`` (fa_t.block_mask) also hides key j from query i of batch
    entry b unless first <= j < end, (first, end) = its ranges[b, i // 64,
    :2] (ranges [1, G, ...] serve every b); its full ranges (columns 2-3)
    only promise that mask_mod holds there, so they change nothing here.
    Without ``mask_mod`` its own mask_mod applies.
    """
    import torch

    q64, k64, v64 = (t.detach().to(torch.float64) for t in (q, k, v))
    sq, skv = q64.shape[2], k64.shape[2]
    group = q64.shape[1] // k64.shape[1]
    k64 = k64.repeat_interleave(group, dim=1)
    v64 = v64.repeat_interleave(group, dim=1)
    if scale is None:
        scale = 1.0 / math.sqrt(q64.shape[-1])
    if diag is None:
        diag = skv - sq

    rows = torch.arange(sq, device=q64.device).unsqueeze(1)
    cols = torch.arange(skv, device=q64.device).unsqueeze(0)
    visible = torch.ones(sq, skv, dtype=torch.bool, device=q64.device)
    if causal:
        visible &= cols <= rows + diag
    if window is not None:
        left, right = window
        if left >= 0:
            visible &= cols >= rows + diag - left
        if right >= 0:
            visible &= cols <= rows + diag + right

    scores = torch.einsum("bhid,bhjd->bhij", q64, k64) * scale
    if block_mask is not None:
        if mask_mod is None:
            mask_mod = block_mask.mask_mod
        ranges = block_mask.ranges.to(q64.device).long()
        per_row = ranges[:, torch.arange(sq, device=q64.device) // 64]   # [B or 1, Sq, 2 or 4]
        visible = visible & (cols >= per_row[..., 0:1]) & (cols < per_row[..., 1:2])
        visible = visible.unsqueeze(1)                                    # [B or 1, 1, Sq, Skv]
    if score_mod is not None or mask_mod is not None:
        dev = q64.device
        b = torch.arange(scores.shape[0], device=dev).view(-1, 1, 1, 1)
        h = torch.arange(scores.shape[1], device=dev).view(1, -1, 1, 1)
        i, j = rows.view(1, 1, sq, 1), cols.view(1, 1, 1, skv)
        if score_mod is not None:
            # as_tensor: the function may return a plain number.
            scores = torch.broadcast_to(torch.as_tensor(score_mod(scores, b, h, i, j),
                                                        device=dev), scores.shape).double()
        if mask_mod is not None:
            visible = visible & torch.broadcast_to(
                torch.as_tensor(mask_mod(b, h, i, j), device=dev), scores.shape)
    scores = scores.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    empty = torch.isneginf(lse).unsqueeze(-1)
    # exp(-inf - (-inf)) is NaN on empty rows; those rows are defined as zero.
    probs = torch.where(empty, torch.zeros_like(scores), torch.exp(scores - lse.unsqueeze(-1)))
    out = torch.einsum("bhij,bhjd->bhid", probs, v64)
    return out, lse
