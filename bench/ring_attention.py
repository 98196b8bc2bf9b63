#!/usr/bin/env python3
"""Ring attention (fa_t.distributed) on several GPUs: correctness, throughput, overlap.

Every rank runs fa-t's kernel on its blocks; K/V shards move over NCCL
(NVLink SHARP off: NCCL_NVLS_ENABLE=0, set here). Three parts, JSON out:

1. correctness, at --check-seq tokens (and a ragged length, --check-seq − 37):
   both layouts, causal and not, MHA (--heads/--kv-heads) and GQA
   (--heads/--gqa-kv-heads). The ring's gathered O and LSE against fa-t's
   single-GPU attention of the whole sequence and, up to --ref-max-seq tokens,
   against a float64 reference (the error bar: bf16 2e-2 / f16 4e-3 on O,
   1e-3 on LSE, as the GPU tests use).
2. throughput for S in --seq-lens (default 128k … 1M tokens): tokens/s of
   one GPU (rank 0 alone, the whole sequence) and of the ring, per layout.
3. overlap: the ring timed three ways, communication alone (the K/V shards
   go around, no compute), computation alone (every block, no transfer) and
   both (the real ring); overlap = (t_comm + t_comp − t_ring) / min(t_comm,
   t_comp), the share of the shorter one hidden under the other (1 = fully
   hidden). Per-rank compute times show the causal imbalance of contiguous
   sharding next to zig-zag.

Build the kernels here (no LLVM on the GPU machine), then run there:

  here: PYTHONPATH=python python3 -m fa_t.aot --fa-t-opt build/bin/fa-t-opt \\
            --out .kernels-ring bench/ring_attention.py:kernel_configs
  GPU:  FA_T_KERNEL_DIR=$PWD/.kernels-ring FA_T_RUNTIME_LIB=$PWD/build/lib/libfat_runtime.so \\
            torchrun --nproc-per-node 2 bench/ring_attention.py --json ring.json
        (or: python3 bench/ring_attention.py --nproc 2 --json ring.json, which
         starts the ranks itself; --dry-run first: small sizes, one timing)

kernel_configs() covers the default --dtype/--head-dim/--heads/--kv-heads/
--gqa-kv-heads; other values need their kernels built. The CPU path (gloo,
the torch implementation for the blocks) runs anywhere:

  python3 bench/ring_attention.py --device cpu --dry-run --nproc 2 --json /tmp/ring.json

Exit status 0 when every correctness case passes, 1 otherwise or on error.
"""
import argparse
import datetime
import json
import math
import os
import socket
import sys
import time
import traceback
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fa_t.config import KernelConfig  # noqa: E402

K = 1024
DEFAULTS = {"dtype": "bf16", "head_dim": 128, "heads": 16, "kv_heads": 16, "gqa_kv_heads": 4}
#: |O − O_ref| and |LSE − LSE_ref| bounds by dtype (those of test_gpu_attention.py).
O_TOL = {"bf16": 2e-2, "f16": 4e-3, "f32": 1e-4}
LSE_TOL = 1e-3


def kernel_configs(dtype=DEFAULTS["dtype"], head_dim=DEFAULTS["head_dim"],
                   heads=DEFAULTS["heads"], kv_heads_list=None):
    """The kernels a run needs, for ``python -m fa_t.aot``: unmasked and causal,
    with LSE (every ring block and the single-GPU baseline return it)."""
    kv_heads_list = kv_heads_list or (DEFAULTS["kv_heads"], DEFAULTS["gqa_kv_heads"])
    return [KernelConfig(dtype=dtype, head_dim=head_dim, head_dim_v=head_dim, num_heads_q=heads,
                         num_heads_kv=hkv, causal=causal, lse=True)
            for hkv in sorted(set(kv_heads_list)) for causal in (False, True)]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the results here (rank 0)")
    ap.add_argument("--nproc", type=int, help="ranks to start when not under torchrun "
                    "(default: every GPU; 2 on the CPU)")
    ap.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda if available")
    ap.add_argument("--dry-run", action="store_true",
                    help="small sizes and one timed run: checks the whole script quickly")
    ap.add_argument("--dtype", choices=("bf16", "f16"), default=DEFAULTS["dtype"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=DEFAULTS["heads"])
    ap.add_argument("--kv-heads", type=int, default=DEFAULTS["kv_heads"])
    ap.add_argument("--gqa-kv-heads", type=int, default=DEFAULTS["gqa_kv_heads"],
                    help="KV heads of the GQA correctness cases (0: none)")
    ap.add_argument("--head-dim", type=int, default=DEFAULTS["head_dim"])
    ap.add_argument("--seq-lens", default="128k,256k,512k,1024k",
                    help="global lengths of the throughput part (k = 1024)")
    ap.add_argument("--layouts", default="contiguous,zigzag")
    ap.add_argument("--masks", default="causal",
                    help="throughput masks: causal, full, or both (causal,full)")
    ap.add_argument("--iters", type=int, default=2, help="timed runs per measurement")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--check-seq", type=int, default=4096)
    ap.add_argument("--ref-max-seq", type=int, default=8192,
                    help="longest sequence compared with the float64 reference")
    ap.add_argument("--single-max-seq", default="1024k",
                    help="longest sequence timed on one GPU (memory and time)")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--no-bench", action="store_true")
    args = ap.parse_args(argv)
    args.seq_lens = [_tokens(s) for s in args.seq_lens.split(",") if s]
    args.single_max_seq = _tokens(args.single_max_seq)
    args.layouts = [s for s in args.layouts.split(",") if s]
    args.masks = [s for s in args.masks.split(",") if s]
    bad = [m for m in args.masks if m not in ("causal", "full")]
    if bad:
        ap.error(f"--masks: expected causal and/or full, got {bad}")
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.dry_run:
        small = args.device == "cpu"
        args.seq_lens = [96, 192] if small else [16 * K, 32 * K]
        args.check_seq = 64 if small else 1024
        args.iters, args.warmup = 1, 0
        args.single_max_seq = max(args.seq_lens)
    if args.device == "cpu":
        args.dtype = "f32"
        if not args.dry_run:
            ap.error("--device cpu is meant for --dry-run (CPU blocks are float32 torch math)")
    return args


def _tokens(text):
    text = text.strip().lower()
    return int(text[:-1]) * K if text.endswith("k") else int(text)


# ---- one rank -------------------------------------------------------------------

class Rank:
    """This process's place in the ring and the helpers every part uses."""

    def __init__(self, args):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.args = torch, dist, args
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.cuda = args.device == "cuda"
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.cuda else \
            torch.device("cpu")
        self.dtype = {"bf16": torch.bfloat16, "f16": torch.float16,
                      "f32": torch.float32}[args.dtype]

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def log(self, *parts):
        if self.rank == 0:
            print(*parts, flush=True)

    def randn(self, *shape, seed=None):
        """Normal values; with ``seed``, the same on every rank (drawn on the CPU)."""
        torch = self.torch
        if seed is None:
            return torch.randn(*shape, dtype=self.dtype, device=self.device)
        g = torch.Generator().manual_seed(seed)
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(self.device, self.dtype)

    def timed(self, fn, barrier=True):
        """Seconds per call of ``fn`` (mean of --iters after --warmup), on this rank.

        With ``barrier`` the ranks start together and the time is the slowest
        rank's (every rank returns the same number).
        """
        for _ in range(self.args.warmup):
            fn()
        self.sync()
        if barrier:
            self.dist.barrier()
        start = time.perf_counter()
        for _ in range(self.args.iters):
            fn()
        self.sync()
        elapsed = (time.perf_counter() - start) / self.args.iters
        if barrier:
            return max(self.all_values(elapsed))
        return elapsed

    def all_values(self, value):
        """``value`` (a float) of every rank, in rank order."""
        torch = self.torch
        mine = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        out = [torch.empty_like(mine) for _ in range(self.world)]
        self.dist.all_gather(out, mine)
        return [t.item() for t in out]


def check_kernels(r):
    """Fails early, naming the missing kernels and how to build them."""
    if not r.cuda:
        return
    from fa_t import registry
    from fa_t.errors import CompileError, KernelNotFoundError
    a = r.args
    missing = []
    for config in kernel_configs(a.dtype, a.head_dim, a.heads,
                                 [h for h in (a.kv_heads, a.gqa_kv_heads) if h]):
        try:
            registry.find_kernel(config)
        except (KernelNotFoundError, CompileError) as e:
            missing.append(f"{config.to_dict()}: {e}".splitlines()[0])
    if missing:
        raise SystemExit("missing kernels (build them where fa-t-opt is: PYTHONPATH=python "
                         "python3 -m fa_t.aot --out .kernels-ring "
                         "bench/ring_attention.py:kernel_configs, then FA_T_KERNEL_DIR=.kernels-ring):\n  "
                         + "\n  ".join(missing))


def correctness(r, results, save):
    from fa_t import distributed as fd
    from fa_t import torch_ops
    from fa_t.reference import attention_reference
    torch, a = r.torch, r.args
    head_sets = [(a.heads, a.kv_heads)] + ([(a.heads, a.gqa_kv_heads)] if a.gqa_kv_heads else [])
    tol = O_TOL[a.dtype]
    for seq in (a.check_seq, a.check_seq - 37):
        for hq, hkv in head_sets:
            for layout in a.layouts:
                for causal in (False, True):
                    seed = zlib.crc32(repr((seq, hq, hkv, layout, causal)).encode())
                    q, k, v = (r.randn(a.batch, h, seq, a.head_dim, seed=seed + i)
                               for i, h in enumerate((hq, hkv, hkv)))
                    shards = [fd.shard_sequence(t, r.rank, r.world, layout=layout)
                              for t in (q, k, v)]
                    o, lse = fd.ring_attention(*shards, causal=causal, layout=layout,
                                               return_lse=True, seq_len=seq)
                    o_full = fd.gather_sequence(o, layout=layout, seq_len=seq)
                    lse_full = fd.gather_sequence(lse.unsqueeze(-1), layout=layout,
                                                  seq_len=seq).squeeze(-1)
                    row = {"S": seq, "Hq": hq, "Hkv": hkv, "layout": layout, "causal": causal}
                    if r.rank == 0:
                        scale = 1.0 / math.sqrt(a.head_dim)
                        one_o, one_lse = torch_ops.attention_forward(
                            q, k, v, causal=causal, scale=scale, diag=0, want_lse=True)
                        row["vs_single_o"] = _err(o_full, one_o)
                        row["vs_single_lse"] = _err(lse_full, one_lse)
                        row["nan"] = bool(torch.isnan(o_full).any() or torch.isnan(lse_full).any())
                        ok = not row["nan"] and row["vs_single_o"] <= 2 * tol
                        if seq <= a.ref_max_seq:
                            ref_o, ref_lse = attention_reference(q, k, v, causal=causal, diag=0)
                            row["vs_ref_o"] = _err(o_full, ref_o)
                            row["vs_ref_lse"] = _err(lse_full, ref_lse)
                            row["single_vs_ref_o"] = _err(one_o, ref_o)
                            ok = ok and row["vs_ref_o"] <= tol and row["vs_ref_lse"] <= LSE_TOL
                        row["ok"] = ok
                        results["correctness"].append(row)
                        r.log(f"{'PASS' if ok else 'FAIL'} S={seq} H={hq}/{hkv} {layout:10s} "
                              f"{'causal' if causal else 'full  '} "
                              + " ".join(f"{k}={v:.2e}" for k, v in row.items()
                                         if isinstance(v, float)))
                        save()
                    del q, k, v, shards, o, lse, o_full, lse_full


def _err(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def time_single(r, seq, causal):
    """Seconds of fa-t on one GPU over the whole sequence (rank 0; the others wait)."""
    from fa_t import torch_ops
    a = r.args
    seconds = 0.0
    if r.rank == 0:
        q, k, v = (r.randn(a.batch, h, seq, a.head_dim) for h in (a.heads, a.kv_heads, a.kv_heads))
        seconds = r.timed(lambda: torch_ops.attention_forward(
            q, k, v, causal=causal, scale=1.0 / math.sqrt(a.head_dim), diag=0, want_lse=True),
            barrier=False)
    return r.all_values(seconds)[0]


def time_ring(r, seq, causal, layout):
    """(overlapped, communication only, computation only per rank) seconds of the ring."""
    from fa_t import distributed as fd
    a = r.args
    n = fd.shard_lengths(seq, r.world, layout)[r.rank]
    q, k, v = (r.randn(a.batch, h, n, a.head_dim) for h in (a.heads, a.kv_heads, a.kv_heads))
    ring = fd._Ring(q, k, v, causal=causal, group=None, scale=None, layout=layout,
                    seq_len=seq, local_attention=None)
    t_ring = r.timed(ring.run)
    t_comm = r.timed(lambda: ring.run(compute=False))
    # Computation alone, each rank's own (the ranks start together, then run free).
    r.dist.barrier()
    per_rank = r.all_values(r.timed(lambda: ring.run(communicate=False), barrier=False))
    return t_ring, t_comm, per_rank


def throughput(r, results, save):
    torch, a = r.torch, r.args
    for seq in a.seq_lens:
        for mask in a.masks:
            causal = mask == "causal"
            tokens = a.batch * seq
            flops = 4 * a.batch * a.heads * seq * seq * a.head_dim / (2 if causal else 1)
            single = time_single(r, seq, causal) if seq <= a.single_max_seq else None
            for layout in a.layouts:
                if r.cuda:
                    torch.cuda.empty_cache()
                t_ring, t_comm, per_rank = time_ring(r, seq, causal, layout)
                t_comp = max(per_rank)
                hidden = t_comm + t_comp - t_ring
                row = {"S": seq, "B": a.batch, "Hq": a.heads, "Hkv": a.kv_heads,
                       "D": a.head_dim, "causal": causal, "layout": layout,
                       "world_size": r.world, "ring_s": t_ring, "comm_only_s": t_comm,
                       "compute_only_s": t_comp, "compute_per_rank_s": per_rank,
                       "overlap_fraction": max(0.0, min(1.0, hidden / min(t_comm, t_comp)))
                       if min(t_comm, t_comp) > 0 else None,
                       "exposed_comm_s": max(0.0, t_ring - t_comp),
                       "tokens_per_s_ring": tokens / t_ring,
                       "tflops_ring": flops / t_ring / 1e12,
                       "single_s": single,
                       "tokens_per_s_single": tokens / single if single else None,
                       "speedup": single / t_ring if single else None}
                if single:
                    row["scaling_efficiency"] = row["speedup"] / r.world
                results["throughput"].append(row)
                overlap = row["overlap_fraction"]
                r.log(f"S={seq} {mask:6s} {layout:10s} W={r.world}: ring {t_ring:.3f} s "
                      f"({row['tokens_per_s_ring']:.3g} tok/s, {row['tflops_ring']:.1f} TFLOP/s)"
                      f"  comm {t_comm:.3f} s  compute {t_comp:.3f} s "
                      f"[{', '.join(f'{t:.3f}' for t in per_rank)}]  overlap "
                      f"{'-' if overlap is None else f'{overlap:.2f}'}"
                      + (f"  | 1 GPU {single:.3f} s, speedup {row['speedup']:.2f}x"
                         if single else ""))
                save()


def worker(local_rank, world, args, env):
    """One rank: set up the process group, run the parts, write JSON on rank 0."""
    os.environ.update(env)
    if local_rank is not None:  # started by launch(), not torchrun
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank),
                          WORLD_SIZE=str(world))
    import torch
    import torch.distributed as dist
    local = int(os.environ.get("LOCAL_RANK", 0))
    kwargs = {}
    if args.device == "cuda":
        if local >= torch.cuda.device_count():
            raise SystemExit(f"rank {local}: only {torch.cuda.device_count()} CUDA devices")
        torch.cuda.set_device(local)
        kwargs["device_id"] = torch.device("cuda", local)
    else:
        torch.set_num_threads(1)
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo",
                            timeout=datetime.timedelta(minutes=15), **kwargs)
    r = Rank(args)
    results = {"meta": {"world_size": r.world, "device": args.device,
                        "gpu": torch.cuda.get_device_name() if r.cuda else None,
                        "torch": torch.__version__, "dtype": args.dtype,
                        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
                        "args": {k: (str(v) if isinstance(v, Path) else v)
                                 for k, v in vars(args).items()}},
               "correctness": [], "throughput": []}

    def save():
        if r.rank == 0 and args.json:
            results["ok"] = all(c["ok"] for c in results["correctness"])
            args.json.write_text(json.dumps(results, indent=1))
    status = 0
    try:
        check_kernels(r)
        if not args.no_check:
            correctness(r, results, save)
        if not args.no_bench:
            throughput(r, results, save)
        save()
        if r.rank == 0 and not all(c["ok"] for c in results["correctness"]):
            status = 1
        r.log(f"{sum(c['ok'] for c in results['correctness'])} of "
              f"{len(results['correctness'])} correctness cases pass"
              + (f"; results in {args.json}" if args.json else ""))
    except BaseException as e:
        text = str(e) if isinstance(e, SystemExit) else traceback.format_exc()
        print(f"rank {r.rank}: {text}", file=sys.stderr, flush=True)
        results["error"] = text
        save()
        os._exit(1)  # leave no rank waiting in a collective
    dist.destroy_process_group()
    if status:
        sys.exit(status)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args, start_method="spawn"):
    """Runs ``worker`` on --nproc local ranks (when not started by torchrun)."""
    import torch
    import torch.multiprocessing as mp
    n = args.nproc or (torch.cuda.device_count() if args.device == "cuda" else 2)
    if args.device == "cuda" and not 1 <= n <= torch.cuda.device_count():
        raise SystemExit(f"--nproc {n}: this machine has {torch.cuda.device_count()} CUDA devices")
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
           "NCCL_NVLS_ENABLE": "0"}
    mp.start_processes(worker, args=(n, args, env), nprocs=n, join=True,
                       start_method=start_method)


def main(argv=None):
    # NVLink SHARP (NVLS) multicast stays off on the lent machines.
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    args = parse_args(argv)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun
        worker(None, None, args, {"NCCL_NVLS_ENABLE": "0"})
    else:
        import torch.multiprocessing as mp
        try:
            launch(args)
        except (mp.ProcessExitedException, mp.ProcessRaisedException) as e:
            print(f"ring_attention.py: {e}".splitlines()[0], file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
