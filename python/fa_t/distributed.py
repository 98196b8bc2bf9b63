"""Ring attention: exact attention over a sequence sharded across torch.distributed ranks.

Each rank holds a shard of the sequence (q, k, v: [B, H, S_local, D]). The K/V
shards travel once around the ring; at every step a rank computes attention
of its queries against the shard it holds while the next shard is already in
flight (``batch_isend_irecv``: send the current buffer to rank + 1, receive
the next into the other of two buffers, then compute, then wait). Each step
yields partial results (O_i, LSE_i) over disjoint key sets, merged exactly::

    LSE = log Σ_i exp(LSE_i)          O = Σ_i exp(LSE_i − LSE) · O_i

computed pairwise in float32 (float64 for float64 inputs). A partial whose
rows see no key has LSE_i = −inf and weight exactly 0 (no NaN: where the
merged LSE is itself −inf, both weights are exp(−inf) = 0).

Sharding (``layout``), for a global length S over W ranks:

- ``"contiguous"``: rank r holds tokens [r·c, (r+1)·c) with c = ⌈S/W⌉, clipped
  to S, so when W does not divide S the last rank's shard is shorter (and, for
  tiny S, trailing shards may be empty). Causal attention is unbalanced: rank r
  computes r + 1 of the W blocks.
- ``"zigzag"``: the sequence is cut into 2W chunks of c = ⌈S/(2W)⌉ tokens
  (clipped to S, so only the tail chunks can be short or empty) and rank r
  holds chunks r and 2W − 1 − r, concatenated in that order. Causal work is
  then the same on every rank when 2W divides S. When it does not, the short
  chunk is the last one, which rank 0 holds: rank 0's shard is the shorter one.

:func:`shard_sequence` / :func:`unshard_sequence` / :func:`gather_sequence`
convert between a full sequence and the shards, both layouts, ragged or not.

Causal masks use global positions: query i sees key j iff j <= i. For each
(query chunk, key chunk) pair this is *full* (all keys precede all queries),
*none* (all follow: the compute is skipped, the shard still moves on) or a
*diagonal* block run as causal with ``diag`` = (first query − first key), the
kernel's "key index aligned with query row 0" (0 on the square diagonal of a
chunk with itself). Adjacent blocks merge into one call where one ``diag``
describes them (:func:`plan_blocks`).

The local block is pluggable (``local_attention``); by default CUDA tensors
run the fa-t kernel (:func:`fa_t.api._forward` with the LSE) and CPU tensors
the torch implementation of :mod:`fa_t.torch_ops`, so the whole ring runs on
gloo without a GPU. See docs/distributed.md.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from . import api, checks, torch_ops

LAYOUTS = ("contiguous", "zigzag")
#: dtypes by the code they travel under in the metadata exchange.
_DTYPE_CODES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)

Range = Tuple[int, int]
#: (q, k, v, *, causal, diag, scale) -> (O, LSE): one block of local attention.
LocalAttention = Callable[..., Tuple[torch.Tensor, torch.Tensor]]


# ---- sharding -----------------------------------------------------------------

def _check_layout(layout) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"expected layout to be one of {', '.join(map(repr, LAYOUTS))}, "
                         f"got {layout!r}")


def _check_count(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected {name} to be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"expected {name} ({value}) to be >= {minimum}")
    return value


def shard_ranges(seq_len: int, world_size: int, layout: str = "contiguous") -> List[List[Range]]:
    """The global token ranges [start, end) each rank holds, in its storage order.

    See the module doc for the two layouts; ranges may be empty.
    """
    _check_layout(layout)
    S = _check_count(seq_len, "seq_len", 0)
    W = _check_count(world_size, "world_size", 1)
    parts = W if layout == "contiguous" else 2 * W
    c = -(-S // parts)

    def chunk(i: int) -> Range:
        return min(i * c, S), min((i + 1) * c, S)
    if layout == "contiguous":
        return [[chunk(r)] for r in range(W)]
    return [[chunk(r), chunk(2 * W - 1 - r)] for r in range(W)]


def shard_lengths(seq_len: int, world_size: int, layout: str = "contiguous") -> List[int]:
    """S_local of every rank."""
    return [sum(b - a for a, b in ranges) for ranges in shard_ranges(seq_len, world_size, layout)]


def shard_sequence(x: torch.Tensor, rank: int, world_size: int, *, layout: str = "contiguous",
                   dim: int = 2) -> torch.Tensor:
    """Rank ``rank``'s shard of the full sequence ``x`` (sequence along ``dim``)."""
    _check_count(rank, "rank", 0)
    if rank >= world_size:
        raise ValueError(f"expected rank ({rank}) to be < world_size ({world_size})")
    parts = [x.narrow(dim, a, b - a)
             for a, b in shard_ranges(x.shape[dim], world_size, layout)[rank]]
    return torch.cat(parts, dim) if len(parts) > 1 else parts[0].contiguous()


def unshard_sequence(shards: Sequence[torch.Tensor], *, layout: str = "contiguous",
                     dim: int = 2) -> torch.Tensor:
    """The full sequence from every rank's shard (``shards[r]`` is rank r's)."""
    lengths = [s.shape[dim] for s in shards]
    seq_len = sum(lengths)
    expected = shard_lengths(seq_len, len(shards), layout)
    if lengths != expected:
        raise ValueError(f"expected the shard lengths {lengths} to be those of {layout} sharding "
                         f"of {seq_len} tokens over {len(shards)} ranks, {expected}")
    pieces = []
    for shard, ranges in zip(shards, shard_ranges(seq_len, len(shards), layout)):
        offset = 0
        for a, b in ranges:
            pieces.append((a, shard.narrow(dim, offset, b - a)))
            offset += b - a
    return torch.cat([p for _, p in sorted(pieces, key=lambda item: item[0])], dim)


def gather_sequence(x: torch.Tensor, *, layout: str = "contiguous", group=None, dim: int = 2,
                    seq_len: Optional[int] = None) -> torch.Tensor:
    """The full sequence on every rank, from each rank's shard ``x`` (a collective).

    ``seq_len`` (the global length) saves the exchange of shard lengths.
    """
    world, rank = _group_info(group)
    if seq_len is None:
        lengths = [int(n) for n in _all_gather_ints([x.shape[dim]], x.device, group, world)[:, 0]]
    else:
        lengths = shard_lengths(seq_len, world, layout)
    longest = max(lengths)
    padded = x.new_zeros(x.shape[:dim] + (longest,) + x.shape[dim + 1:])
    padded.narrow(dim, 0, x.shape[dim]).copy_(x)
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return unshard_sequence([g.narrow(dim, 0, n) for g, n in zip(gathered, lengths)],
                            layout=layout, dim=dim)


# ---- the per-step blocks -------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Block:
    """One local attention call: query rows ``q`` and KV rows ``kv`` (local
    [start, end) of the two shards), unmasked or causal with ``diag``."""

    q: Range
    kv: Range
    causal: bool = False
    diag: int = 0


def _local_chunks(ranges: Sequence[Range]) -> List[Tuple[int, int, int]]:
    """(local start, global start, global end) of each non-empty range."""
    chunks, offset = [], 0
    for a, b in ranges:
        if b > a:
            chunks.append((offset, a, b))
        offset += b - a
    return chunks


def plan_blocks(q_ranges: Sequence[Range], kv_ranges: Sequence[Range],
                causal: bool) -> List[Block]:
    """The calls that compute a query shard against a KV shard, by global position.

    Per (query chunk, key chunk) pair, with queries [qa, qb) and keys [ka, kb):
    full if not causal or kb − 1 <= qa; none if ka > qb − 1; else a diagonal
    block, causal with diag = qa − ka. For one query chunk, a run of adjacent
    full key chunks ending in at most one diagonal chunk (diag >= −1, so that
    the mask keeps every key of the full ones) is one call; query chunks with
    the same unmasked key range that are adjacent in the shard share one call.
    Every visible (query, key) pair is in exactly one block, no hidden one in any.
    """
    per_query: List[Block] = []
    for ql, qa, qb in _local_chunks(q_ranges):
        runs: List[list] = []  # [kv start, kv end, diag or None]
        for kl, ka, kb in _local_chunks(kv_ranges):
            if not causal or kb - 1 <= qa:
                diag = None
            elif ka > qb - 1:
                continue
            else:
                diag = qa - ka
            last = runs[-1] if runs else None
            if (last is not None and last[2] is None and last[1] == kl
                    and (diag is None or diag >= -1)):
                last[1] = kl + kb - ka
                if diag is not None:
                    last[2] = diag + kl - last[0]
            else:
                runs.append([kl, kl + kb - ka, diag])
        q_rows = (ql, ql + qb - qa)
        per_query += [Block(q_rows, (lo, hi), d is not None, d or 0) for lo, hi, d in runs]

    blocks: List[Block] = []
    for block in per_query:
        twin = next((b for b in blocks if not b.causal and not block.causal
                     and b.kv == block.kv and b.q[1] == block.q[0]), None)
        if twin is None:
            blocks.append(block)
        else:
            blocks[blocks.index(twin)] = dataclasses.replace(twin, q=(twin.q[0], block.q[1]))
    return blocks


def merge_partial(acc_o: torch.Tensor, acc_lse: torch.Tensor, o: torch.Tensor,
                  lse: torch.Tensor) -> None:
    """(acc_o, acc_lse) <- the exact merge with the partial (o, lse), in place.

    LSE' = logaddexp(LSE_acc, LSE_i); O' = exp(LSE_acc − LSE')·O_acc + exp(LSE_i − LSE')·O_i.
    Both weights are <= 1 (stable). Where LSE' = −inf (neither side saw a key)
    it is replaced by 0 in the exponents, giving weights exp(−inf) = 0, not NaN.
    """
    new = torch.logaddexp(acc_lse, lse.to(acc_lse.dtype))
    ref = torch.where(torch.isneginf(new), 0.0, new)
    acc_o.mul_(torch.exp(acc_lse - ref).unsqueeze(-1))
    acc_o.add_(o.to(acc_o.dtype) * torch.exp(lse - ref).unsqueeze(-1))
    acc_lse.copy_(new)


def default_local_attention(q, k, v, *, causal: bool, diag: int, scale: float):
    """fa-t's kernel on CUDA tensors, the torch implementation on CPU ones; (O, LSE)."""
    return torch_ops.attention_forward(q, k, v, causal=causal, scale=scale, diag=diag,
                                       want_lse=True)


# ---- the ring --------------------------------------------------------------------

def _group_info(group) -> Tuple[int, int]:
    if not (dist.is_available() and dist.is_initialized()):
        raise ValueError("ring attention needs an initialised torch.distributed process group: "
                         "call torch.distributed.init_process_group (nccl for CUDA tensors, "
                         "gloo for CPU ones) first")
    rank = dist.get_rank(group)
    if rank < 0:
        raise ValueError("this process is not a member of the group passed to ring attention")
    return dist.get_world_size(group), rank


def _all_gather_ints(values: Sequence[int], device, group, world: int) -> torch.Tensor:
    """[world, len(values)] int64 on the CPU: every rank's ``values``."""
    mine = torch.tensor(list(values), dtype=torch.int64, device=device)
    out = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(out, mine, group=group)
    return torch.stack(out).cpu()


def _meta_device(q, group):
    if isinstance(q, torch.Tensor):
        return q.device
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


#: Fields every rank must agree on, by position in the metadata row.
_META_FIELDS = ("batch size", "number of query heads", "number of KV heads", None,
                "head dim of q and k", "head dim of v", "dtype", "causal", "layout")


def _meta_value(field: int, code: int):
    """A metadata entry as the user wrote it (dtype, causal and layout are coded)."""
    name = _META_FIELDS[field - 1]
    if name == "dtype":
        return _DTYPE_CODES[code] if 0 <= code < len(_DTYPE_CODES) else "another dtype"
    if name == "causal":
        return bool(code)
    if name == "layout":
        return repr(LAYOUTS[code])
    return code


class _Ring:
    """One validated ring-attention call, ready to run (see :func:`ring_attention`).

    ``run(communicate, compute)`` exists in parts so that bench/ring_attention.py
    can time the communication alone, the computation alone, and both overlapped.
    """

    def __init__(self, q, k, v, *, causal, group, scale, layout, seq_len, local_attention):
        _check_layout(layout)
        if not isinstance(causal, bool):
            raise TypeError(f"expected causal to be a bool, got {type(causal).__name__}")
        error = None
        try:
            torch_ops.check_inputs(q, k, v, names=("q", "k", "v"))
            api._check_no_grad(torch, (q, k, v), ("q", "k", "v"))
            if k.shape[2] != q.shape[2]:
                raise ValueError(f"expected k.size(2) ({k.shape[2]}) to equal q.size(2) "
                                 f"({q.shape[2]}): ring attention shards q, k and v alike")
        except (TypeError, ValueError, NotImplementedError) as e:
            error = e
        if error is not None and not (dist.is_available() and dist.is_initialized()):
            raise error
        world, rank = _group_info(group)
        if seq_len is None:
            # One small all-gather: every rank learns every shard length and checks
            # that the ranks agree, so a bad input fails on all ranks instead of
            # leaving the others blocked in the ring.
            row = [0] * 10 if error is not None else [
                0, *q.shape[:2], k.shape[1], q.shape[2], q.shape[3], v.shape[3],
                _DTYPE_CODES.index(q.dtype) if q.dtype in _DTYPE_CODES else -1,
                int(causal), LAYOUTS.index(layout)]
            row[0] = int(error is not None)
            meta = _all_gather_ints(row, _meta_device(q, group), group, world).tolist()
            if error is not None:
                raise error
            failed = [r for r, m in enumerate(meta) if m[0]]
            if failed:
                raise ValueError(f"ring attention: rank(s) {failed} rejected their inputs "
                                 f"(the error is raised there)")
            for i, name in enumerate(_META_FIELDS, start=1):
                odd = next((r for r, m in enumerate(meta) if m[i] != meta[0][i]), None)
                if name is not None and odd is not None:
                    raise ValueError(f"expected every rank to pass the same {name}: rank 0 has "
                                     f"{_meta_value(i, meta[0][i])}, rank {odd} has "
                                     f"{_meta_value(i, meta[odd][i])}")
            lengths = [m[4] for m in meta]
            seq_len = sum(lengths)
            expected = shard_lengths(seq_len, world, layout)
            if lengths != expected:
                raise ValueError(
                    f"expected the shard lengths {lengths} to be those of {layout} sharding of "
                    f"{seq_len} tokens over {world} ranks, {expected} (shard the sequence with "
                    f"fa_t.distributed.shard_sequence)")
        else:
            if error is not None:
                raise error
            expected = shard_lengths(seq_len, world, layout)
            if q.shape[2] != expected[rank]:
                raise ValueError(f"expected q.size(2) ({q.shape[2]}) on rank {rank} to be "
                                 f"{expected[rank]}, its shard of {seq_len} tokens "
                                 f"({layout} sharding over {world} ranks)")
        self.q, self.k, self.v = q, k, v
        self.causal, self.group, self.world, self.rank = causal, group, world, rank
        self.scale = checks.check_scale(scale, q.shape[3])
        self.local = local_attention or default_local_attention
        self.ranges = shard_ranges(seq_len, world, layout)
        self.lengths = shard_lengths(seq_len, world, layout)
        B, Hkv, D, Dv = k.shape[0], k.shape[1], k.shape[3], v.shape[3]
        longest = max(self.lengths)
        self.kv_shapes = ((B, Hkv, D), (B, Hkv, Dv))
        self.k_numel = B * Hkv * longest * D
        numel = self.k_numel + B * Hkv * longest * Dv
        # Two buffers, each holding one K shard and one V shard; every message
        # is a whole buffer, so a ragged shard needs no message of its own size.
        self.buffers = [q.new_empty(numel) for _ in range(2 if world > 1 else 1)]
        own_k, own_v = self._view(self.buffers[0], rank)
        own_k.copy_(k)
        own_v.copy_(v)
        self.next_peer, self.prev_peer = (
            r if group is None else dist.get_global_rank(group, r)
            for r in ((rank + 1) % world, (rank - 1) % world))

    def _view(self, buffer, source) -> Tuple[torch.Tensor, torch.Tensor]:
        """The K and V shard of rank ``source`` inside ``buffer``."""
        n = self.lengths[source]
        (B, H, D), (_, _, Dv) = self.kv_shapes
        k = buffer[:B * H * n * D].view(B, H, n, D)
        v = buffer[self.k_numel:self.k_numel + B * H * n * Dv].view(B, H, n, Dv)
        return k, v

    @torch.no_grad()
    def run(self, communicate: bool = True, compute: bool = True):
        """The ring; returns (O in q's dtype, LSE float32, or float64 for float64 q)."""
        q = self.q
        acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
        B, Hq, S_local = q.shape[:3]
        acc_o = torch.zeros(B, Hq, S_local, self.v.shape[3], dtype=acc_dtype, device=q.device)
        acc_lse = torch.full((B, Hq, S_local), float("-inf"), dtype=acc_dtype, device=q.device)
        moving = communicate and self.world > 1 and self.buffers[0].numel() > 0
        for step in range(self.world):
            source = (self.rank - step) % self.world
            current = self.buffers[step % 2] if moving else self.buffers[0]
            pending = []
            if moving and step < self.world - 1:
                # Issue the next shard's transfer before computing on this one.
                pending = dist.batch_isend_irecv([
                    dist.P2POp(dist.isend, current, self.next_peer, self.group),
                    dist.P2POp(dist.irecv, self.buffers[(step + 1) % 2], self.prev_peer,
                               self.group)])
            if compute:
                # Without communication (a timing mode) the blocks run on this
                # rank's buffer, sized as the source's shard.
                k, v = self._view(current, source)
                for block in plan_blocks(self.ranges[self.rank], self.ranges[source],
                                         self.causal):
                    (qa, qb), (ka, kb) = block.q, block.kv
                    o, lse = self.local(q[:, :, qa:qb], k[:, :, ka:kb], v[:, :, ka:kb],
                                        causal=block.causal, diag=block.diag, scale=self.scale)
                    merge_partial(acc_o[:, :, qa:qb], acc_lse[:, :, qa:qb], o, lse)
            for work in pending:
                work.wait()
        return acc_o.to(q.dtype), acc_lse


def ring_attention(q, k, v, *, causal: bool = False, group=None, scale: Optional[float] = None,
                   layout: str = "contiguous", return_lse: bool = False,
                   seq_len: Optional[int] = None,
                   local_attention: Optional[LocalAttention] = None):
    """Attention over a sequence sharded across the ranks of ``group``.

    Args:
        q: this rank's queries [B, Hq, S_local, D]; k, v: its keys and values
            [B, Hkv, S_local, D] / [B, Hkv, S_local, Dv], Hq a multiple of Hkv.
            CUDA tensors (bf16/f16, the fa-t kernel's head dims; NCCL, with
            ``torch.cuda.set_device`` called for this rank's GPU) or CPU
            tensors (float32/float64/bf16/f16; gloo). Shards as
            :func:`shard_sequence` cuts them, for ``layout``.
        causal: query i sees key j iff j <= i, in global positions.
        group: the process group (default: the world).
        scale: softmax scale, default 1/sqrt(D).
        layout: ``"contiguous"`` or ``"zigzag"`` (see the module doc).
        return_lse: also return the LSE [B, Hq, S_local] of the full attention.
        seq_len: the global length. Given, every rank derives every shard length
            from it and the call needs no collective before the ring; absent,
            one all-gather of shapes learns them and checks that all ranks agree
            (a mismatch raises ValueError on every rank).
        local_attention: ``f(q, k, v, *, causal, diag, scale) -> (O, LSE)`` for
            one block; default :func:`default_local_attention`.

    Returns:
        O [B, Hq, S_local, Dv] in q's dtype (this rank's rows of the full
        attention); with return_lse, (O, LSE) with LSE float32 (float64 for
        float64 inputs).
    """
    ring = _Ring(q, k, v, causal=causal, group=group, scale=scale, layout=layout,
                 seq_len=seq_len, local_attention=local_attention)
    o, lse = ring.run()
    return (o, lse) if return_lse else o
