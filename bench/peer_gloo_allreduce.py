#!/usr/bin/python3
"""peer_gloo_allreduce.py — PyTorch's allreduce over gloo: the peer of bench/allreduce_gpu.c.

NCCL refuses two ranks on one GPU, in PyTorch as in the kit, so with two ranks sharing a GPU
PyTorch's only allreduce of CUDA tensors is gloo's, which stages through host memory as the
kit's host-staged path does (coll_gpu/staged.c). This times torch.distributed.all_reduce (float
SUM, in place) on --device tensors, the sizes of allreduce_gpu (64 KiB .. 256 MiB), the same
way: a barrier, one call, the device synchronised, the slowest rank's time; the median of at
least --iters calls and at least 0.2 s per size.

  python3 bench/peer_gloo_allreduce.py [--np 2] [--device cuda|cpu] [--iters 20]
                                       [--min-bytes 64K] [--max-bytes 256M]

--device cuda (default) puts every rank's tensor on GPU 0 (or the GPU of local rank r when
there are several); --device cpu times gloo on host tensors. It starts its own ranks (gloo on
127.0.0.1). Prints, on rank 0, one line per size:
  gloo.<size>.time_us <median> us algbw <GB/s> busbw <GB/s>
(algbw = bytes / time, busbw = algbw·2(n−1)/n, as allreduce_gpu prints them).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def label(b):
    return f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K"


def worker(rank, a):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank,
                            world_size=a.np)
    if a.device == "cuda":
        dev = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    else:
        dev = torch.device("cpu")

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    buf = torch.zeros(a.max_bytes // 4, dtype=torch.float32, device=dev)
    b = a.min_bytes
    while b <= a.max_bytes:
        x = buf[:b // 4]
        for _ in range(3):  # warm-up: gloo's buffers, the pinned staging
            dist.all_reduce(x)
        sync()
        times, start, go = [], time.perf_counter(), True
        while go:
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            sync()
            dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(dt, op=dist.ReduceOp.MAX)  # the slowest rank's time
            times.append(dt.item())
            flag = torch.tensor([int(len(times) < a.iters or time.perf_counter() - start < 0.2)],
                                dtype=torch.int32)
            dist.broadcast(flag, 0)  # every rank stops together
            go = bool(flag.item())
        times.sort()
        t = times[len(times) // 2]
        if rank == 0:
            alg = b / t / 1e9
            print(f"gloo.{label(b)}.time_us {t * 1e6:.1f} us algbw {alg:.2f} "
                  f"busbw {alg * 2 * (a.np - 1) / a.np:.2f}", flush=True)
        b *= 2
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=2, help="ranks (processes)")
    p.add_argument("--device", default="cuda", help="cuda or cpu")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--min-bytes", default="64K")
    p.add_argument("--max-bytes", default="256M")
    p.add_argument("--port", type=int, default=29700 + os.getpid() % 1000)
    a = p.parse_args()
    try:
        a.min_bytes, a.max_bytes = parse_bytes(a.min_bytes), parse_bytes(a.max_bytes)
    except (ValueError, IndexError):
        sys.exit("peer_gloo_allreduce.py: error: --min-bytes/--max-bytes: a count of bytes with an "
                 "optional K, M or G")
    if a.np < 1 or a.iters < 1 or not 4 <= a.min_bytes <= a.max_bytes:
        sys.exit("peer_gloo_allreduce.py: error: --np and --iters must be >= 1, and "
                 "4 <= --min-bytes <= --max-bytes")
    if a.device not in ("cuda", "cpu"):
        sys.exit(f"peer_gloo_allreduce.py: error: --device {a.device}: cuda or cpu")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("peer_gloo_allreduce.py: error: --device cuda but PyTorch sees no GPU "
                 f"(torch {torch.__version__}); --device cpu times gloo on host tensors")
    print(f"# torch.distributed gloo allreduce, {a.np} rank(s), {a.device} tensors, torch "
          f"{torch.__version__}; float SUM in place; median of the slowest rank", flush=True)
    mp.spawn(worker, args=(a,), nprocs=a.np, join=True)


if __name__ == "__main__":
    main()
