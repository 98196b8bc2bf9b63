"""fa_t.distributed: ring attention over gloo on the CPU, against the float64 reference.

One torch.multiprocessing launch per world size (1, 2, 3, 4) runs every case in
the same process group and writes its errors to JSON; the tests read them.
The ranks are forked, not spawned: a spawned rank imports torch afresh, about
5 s each on a 2-core machine, a forked one inherits it (the ranks set one
intra-op thread, so no OpenMP pool is used across the fork).
Every rank draws the full Q, K, V from one seed, takes its shard
(shard_sequence), runs ring_attention, and compares its rows with the rows of
attention_reference on the full sequence; the gathered output
(gather_sequence) is compared as a whole too. The local blocks run the CPU
implementation in float64, so the only error left is the merge's rounding.
"""

import dataclasses
import json
import math
import zlib
from datetime import timedelta
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from fa_t import distributed as fd  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402

if not dist.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

WORLDS = (1, 2, 3, 4)
#: |O − O_ref| and |LSE − LSE_ref| bounds: float64 blocks (merge rounding only)
#: and one float32 case (float32 scores and merge).
TOL = {"float64": 1e-10, "float32": 2e-5}


@dataclasses.dataclass(frozen=True)
class Case:
    layout: str
    causal: bool
    hq: int
    hkv: int
    seq: int
    dtype: str = "float64"
    pass_seq_len: bool = False

    @property
    def id(self):
        return (f"{self.layout}-{'causal' if self.causal else 'full'}-h{self.hq}_{self.hkv}-"
                f"s{self.seq}-{self.dtype}{'-seq_len' if self.pass_seq_len else ''}")


def cases(world):
    """Even (2W | S) and ragged (S = 8W − 1) lengths, MHA and GQA, both layouts,
    causal or not; a tiny S that leaves shards empty; one float32 case."""
    out = []
    for layout in fd.LAYOUTS:
        for causal in (False, True):
            for hq, hkv in ((4, 4), (4, 2)):
                for seq in sorted({8 * world, 8 * world - 1}):
                    out.append(Case(layout, causal, hq, hkv, seq, pass_seq_len=hkv == 2))
        out.append(Case(layout, True, 2, 1, 3))
        out.append(Case(layout, True, 4, 1, 8 * world - 1, "float32"))
    return out


def run_case(case, rank, world):
    dtype = getattr(torch, case.dtype)
    g = torch.Generator().manual_seed(zlib.crc32(case.id.encode()))  # same on every rank
    q, k, v = (torch.randn(2, h, case.seq, 8, generator=g, dtype=torch.float64)
               for h in (case.hq, case.hkv, case.hkv))
    ref_o, ref_lse = attention_reference(q, k, v, causal=case.causal, diag=0)
    shards = [fd.shard_sequence(t.to(dtype), rank, world, layout=case.layout)
              for t in (q, k, v)]
    o, lse = fd.ring_attention(*shards, causal=case.causal, layout=case.layout,
                               return_lse=True,
                               seq_len=case.seq if case.pass_seq_len else None)
    mine = [fd.shard_sequence(t, rank, world, layout=case.layout) for t in (ref_o, ref_lse)]
    full = fd.gather_sequence(o, layout=case.layout)
    return {"o": (o.double() - mine[0]).abs().max().item() if o.numel() else 0.0,
            "lse": (lse.double() - mine[1]).abs().max().item() if lse.numel() else 0.0,
            "gathered": (full.double() - ref_o).abs().max().item(),
            "nan": bool(torch.isnan(o).any() or torch.isnan(lse).any()),
            "dtypes": [str(o.dtype), str(lse.dtype)],
            "shape": list(o.shape)}


def expect_error(fn):
    try:
        fn()
    except (TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return "no error"


def validation_cases(rank, world):
    """Inputs that must fail on every rank, with the message each rank raised."""
    x = torch.randn(1, 2, 4, 8, dtype=torch.float64)
    out = {}
    # Rank 1's head dim differs: found by the shape exchange, raised everywhere.
    y = torch.randn(1, 2, 4, 16 if rank == 1 else 8, dtype=torch.float64)
    out["head_dim"] = expect_error(lambda: fd.ring_attention(y, y, y))
    # Only rank 1's dtype is unsupported: it says why, the others that it failed.
    z = x.long() if rank == 1 else x
    out["dtype"] = expect_error(lambda: fd.ring_attention(z, z, z))
    out["causal"] = expect_error(lambda: fd.ring_attention(x, x, x, causal=rank == 1))
    # 5 and 7 tokens are not a contiguous sharding of 12 over 2 ranks (6, 6).
    w = torch.randn(1, 2, 5 if rank == 0 else 7, 8, dtype=torch.float64)
    out["lengths"] = expect_error(lambda: fd.ring_attention(w, w, w))
    out["heads"] = expect_error(lambda: fd.ring_attention(torch.randn(1, 3, 4, 8), x.float(),
                                                         x.float()))
    out["seq_len"] = expect_error(lambda: fd.ring_attention(x, x, x, seq_len=10))
    # The ring still works after all that (no rank is left behind in a collective).
    out["after"] = expect_error(lambda: fd.ring_attention(x, x, x, causal=True))

    calls = []

    def spy(q, k, v, *, causal, diag, scale):
        calls.append([q.shape[2], k.shape[2], causal, diag])
        return fd.default_local_attention(q, k, v, causal=causal, diag=diag, scale=scale)
    for layout in fd.LAYOUTS:
        calls.clear()
        s = torch.randn(1, 2, 8, 8, dtype=torch.float64)  # S = 16: chunks of 4 (zigzag)
        fd.ring_attention(s, s, s, causal=True, layout=layout, local_attention=spy, seq_len=16)
        out[f"calls_{layout}"] = list(calls)
    return out


def _worker(rank, world, init_file, out_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=60))
    results = {}
    for case in cases(world):
        try:
            results[case.id] = run_case(case, rank, world)
        except Exception as e:  # recorded, so one failure does not hide the rest
            results[case.id] = {"error": f"{type(e).__name__}: {e}"}
    if world == 2:
        results["validation"] = validation_cases(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))


_results = {}


def results(world, tmp_path_factory):
    """{rank: {case id: errors}} of the spawn for ``world`` (run once)."""
    if world not in _results:
        tmp = tmp_path_factory.mktemp(f"world{world}")
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        mp.start_processes(_worker, args=(world, str(tmp / "init"), str(tmp)), nprocs=world,
                           join=True, start_method=method)
        _results[world] = {r: json.loads((tmp / f"rank{r}.json").read_text())
                           for r in range(world)}
    return _results[world]


@pytest.mark.parametrize("world, case", [(w, c) for w in WORLDS for c in cases(w)],
                         ids=lambda x: str(x) if isinstance(x, int) else x.id)
def test_ring_matches_reference(world, case, tmp_path_factory):
    tol = TOL[case.dtype]
    lengths = fd.shard_lengths(case.seq, world, case.layout)
    for rank, res in results(world, tmp_path_factory).items():
        r = res[case.id]
        assert "error" not in r, f"rank {rank}: {r.get('error')}"
        assert not r["nan"], f"rank {rank}: NaN in O or LSE"
        assert r["shape"] == [2, case.hq, lengths[rank], 8]
        assert r["dtypes"] == [f"torch.{case.dtype}"] * 2
        assert r["o"] <= tol and r["lse"] <= tol and r["gathered"] <= tol, (rank, r)


def test_ring_validation(tmp_path_factory):
    res = results(2, tmp_path_factory)
    v0, v1 = res[0]["validation"], res[1]["validation"]
    for v in (v0, v1):
        assert v["head_dim"] == ("ValueError: expected every rank to pass the same head dim of "
                                 "q and k: rank 0 has 8, rank 1 has 16")
        assert v["causal"] == ("ValueError: expected every rank to pass the same causal: "
                               "rank 0 has False, rank 1 has True")
        assert v["lengths"].startswith("ValueError: expected the shard lengths [5, 7] to be "
                                       "those of contiguous sharding of 12 tokens over 2 ranks, "
                                       "[6, 6]")
        assert v["heads"] == ("ValueError: expected q.size(1) (3) to be a multiple of "
                              "k.size(1) (2)")
        assert v["after"] == "no error"
    assert v1["dtype"].startswith("TypeError: expected q.dtype to be one of")
    assert v0["dtype"] == ("ValueError: ring attention: rank(s) [1] rejected their inputs "
                           "(the error is raised there)")
    assert v0["seq_len"] == ("ValueError: expected q.size(2) (4) on rank 0 to be 5, its shard "
                             "of 10 tokens (contiguous sharding over 2 ranks)")


def test_ring_blocks_called(tmp_path_factory):
    # S = 16 over 2 ranks, causal. [Sq, Skv, causal, diag] per local call.
    res = results(2, tmp_path_factory)
    # Contiguous: rank 0 sees only its own diagonal block; rank 1 its own and all of rank 0's.
    assert res[0]["validation"]["calls_contiguous"] == [[8, 8, True, 0]]
    assert res[1]["validation"]["calls_contiguous"] == [[8, 8, True, 0], [8, 8, False, 0]]
    # Zig-zag (chunks of 4; rank 0 holds 0 and 3, rank 1 holds 1 and 2): step 0 is
    # chunk r on itself and chunk 2W-1-r on both own chunks (diag 4), step 1 one
    # unmasked 4x8 or 8x4 block: the same work on both ranks.
    assert res[0]["validation"]["calls_zigzag"] == [[4, 4, True, 0], [4, 8, True, 4],
                                                    [4, 8, False, 0]]
    assert res[1]["validation"]["calls_zigzag"] == [[4, 4, True, 0], [4, 8, True, 4],
                                                    [8, 4, False, 0]]


# ---- single-process parts ---------------------------------------------------------

@pytest.mark.parametrize("layout", fd.LAYOUTS)
@pytest.mark.parametrize("seq, world", [(16, 2), (15, 2), (23, 3), (31, 4), (3, 4), (0, 3),
                                        (100, 1)])
def test_shard_unshard_round_trip(layout, seq, world):
    x = torch.arange(2 * 3 * seq).view(2, 3, seq)
    shards = [fd.shard_sequence(x, r, world, layout=layout) for r in range(world)]
    assert [s.shape[2] for s in shards] == fd.shard_lengths(seq, world, layout)
    assert sum(fd.shard_lengths(seq, world, layout)) == seq
    assert torch.equal(fd.unshard_sequence(shards, layout=layout), x)


def test_shard_ranges_definition():
    assert fd.shard_ranges(10, 3) == [[(0, 4)], [(4, 8)], [(8, 10)]]
    # 2W = 4 chunks of ceil(10 / 4) = 3: the last one is short and rank 0 holds it.
    assert fd.shard_ranges(10, 2, "zigzag") == [[(0, 3), (9, 10)], [(3, 6), (6, 9)]]
    assert fd.shard_lengths(16, 4, "zigzag") == [4, 4, 4, 4]
    with pytest.raises(ValueError, match=r"expected layout to be one of 'contiguous', 'zigzag'"):
        fd.shard_ranges(8, 2, "striped")
    with pytest.raises(ValueError, match=r"expected the shard lengths \[3, 3\] to be those of "
                                         r"zigzag sharding of 6 tokens over 2 ranks, \[2, 4\]"):
        fd.unshard_sequence([torch.zeros(3), torch.zeros(3)], layout="zigzag", dim=0)


def _visible(blocks, q_ranges, kv_ranges):
    """The (query, key) local pairs each block makes visible, checking no overlap."""
    q_pos = [i for a, b in q_ranges for i in range(a, b)]
    kv_pos = [j for a, b in kv_ranges for j in range(a, b)]
    seen = torch.zeros(len(q_pos), len(kv_pos), dtype=torch.int64)
    for blk in blocks:
        rows = torch.arange(blk.q[1] - blk.q[0]).unsqueeze(1)
        cols = torch.arange(blk.kv[1] - blk.kv[0]).unsqueeze(0)
        vis = (cols <= rows + blk.diag) if blk.causal else torch.ones_like(rows * cols,
                                                                          dtype=torch.bool)
        seen[blk.q[0]:blk.q[1], blk.kv[0]:blk.kv[1]] += vis.long()
    truth = torch.tensor(kv_pos).unsqueeze(0) <= torch.tensor(q_pos).unsqueeze(1)
    return seen, truth


@pytest.mark.parametrize("layout", fd.LAYOUTS)
@pytest.mark.parametrize("seq, world", [(16, 2), (15, 2), (23, 3), (32, 4), (29, 4), (5, 4)])
def test_plan_blocks_cover_the_causal_mask_exactly(layout, seq, world):
    ranges = fd.shard_ranges(seq, world, layout)
    for r in range(world):
        for s in range(world):
            blocks = fd.plan_blocks(ranges[r], ranges[s], causal=True)
            seen, truth = _visible(blocks, ranges[r], ranges[s])
            assert torch.equal(seen, truth.long()), (r, s, blocks)
            full = fd.plan_blocks(ranges[r], ranges[s], causal=False)
            seen, _ = _visible(full, ranges[r], ranges[s])
            assert torch.all(seen == 1) and len(full) <= 1


def test_plan_blocks_zigzag_balance():
    # 2W | S: every rank runs the same number of query·key pairs on every step
    # that is not its own diagonal step.
    ranges = fd.shard_ranges(64, 4, "zigzag")
    for r in range(4):
        for s in range(4):
            blocks = fd.plan_blocks(ranges[r], ranges[s], causal=True)
            work = sum((b.q[1] - b.q[0]) * (b.kv[1] - b.kv[0]) for b in blocks)
            assert (len(blocks), work) == ((2, 8 * 8 + 8 * 16) if r == s else (1, 8 * 16))


def test_merge_partial_is_exact_and_nan_free():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(3, 10, generator=g, dtype=torch.float64)
    s[0, :] = -math.inf          # a row no partial sees
    s[1, :5] = -math.inf         # a row only the second partial sees
    v = torch.randn(10, 4, generator=g, dtype=torch.float64)
    acc_o = torch.zeros(3, 4, dtype=torch.float64)
    acc_lse = torch.full((3,), -math.inf, dtype=torch.float64)
    for part in (slice(0, 5), slice(5, 10)):
        lse = torch.logsumexp(s[:, part], -1)
        p = torch.exp(s[:, part] - torch.where(torch.isneginf(lse), 0.0, lse)[:, None])
        fd.merge_partial(acc_o, acc_lse, p @ v[part], lse)
    lse = torch.logsumexp(s, -1)
    expected = torch.softmax(s[1:], -1) @ v
    assert not torch.isnan(acc_o).any() and torch.all(acc_o[0] == 0)
    assert torch.isneginf(acc_lse[0]) and torch.allclose(acc_lse[1:], lse[1:])
    torch.testing.assert_close(acc_o[1:], expected)


def test_errors_without_a_process_group():
    assert not dist.is_initialized()
    x = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match=r"needs an initialised torch.distributed process group"):
        fd.ring_attention(x, x, x)
    with pytest.raises(TypeError, match=r"expected q.dtype to be one of"):
        fd.ring_attention(x.int(), x.int(), x.int())
    with pytest.raises(ValueError, match=r"expected k.size\(2\) \(3\) to equal q.size\(2\) \(4\)"):
        fd.ring_attention(x, x[:, :, :3], x[:, :, :3])
    with pytest.raises(ValueError, match=r"expected layout to be one of"):
        fd.ring_attention(x, x, x, layout="ring")
    with pytest.raises(NotImplementedError, match=r"no backward pass"):
        fd.ring_attention(x.requires_grad_(), x, x)
    with pytest.raises(ValueError, match=r"needs an initialised"):
        fd.gather_sequence(x)


def test_ring_bench_cpu_dry_run(tmp_path):
    # bench/ring_attention.py's whole path (correctness, the three timings, the
    # JSON) on 2 gloo ranks; on the GPU machine the same runs over NCCL.
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "bench" / "ring_attention.py"
    spec = importlib.util.spec_from_file_location("ring_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "ring.json"
    args = bench.parse_args(["--device", "cpu", "--dry-run", "--nproc", "2", "--json", str(out),
                             "--heads", "4", "--kv-heads", "2", "--gqa-kv-heads", "1",
                             "--head-dim", "16"])
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    bench.launch(args, start_method=method)
    result = json.loads(out.read_text())
    assert result["ok"] and result["meta"]["world_size"] == 2
    assert result["meta"]["nccl_nvls_enable"] == "0"
    assert len(result["correctness"]) == 16  # 2 lengths x 2 head sets x 2 layouts x 2 masks
    rows = result["throughput"]
    assert [(r["S"], r["layout"]) for r in rows] == [(96, "contiguous"), (96, "zigzag"),
                                                    (192, "contiguous"), (192, "zigzag")]
    for r in rows:
        assert r["ring_s"] > 0 and r["comm_only_s"] > 0 and len(r["compute_per_rank_s"]) == 2
        assert 0.0 <= r["overlap_fraction"] <= 1.0 and r["speedup"] > 0
