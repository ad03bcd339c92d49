#!/usr/bin/python3
"""peer_torch_conv.py — PyTorch peer for bench/conv_micro.c: the WRN conv shapes, one op at a time.

For each distinct conv shape of wrn-16-K (batch N) times, best of --reps after one warm-up:
  fwd       F.conv2d(x, w, b, padding=k//2)                       (NCHW in, NCHW out)
  bwd_data  aten.convolution_backward(..., output_mask=[T, F, F])  (grad input)
  bwd_w     aten.convolution_backward(..., output_mask=[F, T, T])  (grad weight and bias)
Debian's torch 1.13 runs these through oneDNN (mkldnn) with NCHW<->blocked reorders inside.
Prints the same layout as conv_micro plus `conv.wrn-D-K.tT.torch.total <ms> ms (...)` lines.

Usage: peer_torch_conv.py [--model 16-1,16-4] [--threads 1,2] [--batch 128] [--reps 3]
"""
import argparse
import time

import torch
import torch.nn.functional as F


def model_shapes(depth, k):
    nblk = (depth - 4) // 6
    shapes = [(1, 16, 28, 3)]
    cin, hw = 16, 28
    for g in range(3):
        w = (16 * k) << g
        for _ in range(nblk):
            shapes.append((cin, w, hw, 3))
            shapes.append((w, w, hw, 3))
            if cin != w:
                shapes.append((cin, w, hw, 1))
            cin = w
        if g < 2:
            hw //= 2
    out = {}
    for s in shapes:
        out[s] = out.get(s, 0) + 1
    return out


def best(fn, reps):
    fn()
    t = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="16-1,16-4")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    cb = torch.ops.aten.convolution_backward
    for m in a.model.split(","):
        depth, k = map(int, m.split("-"))
        for T in map(int, a.threads.split(",")):
            torch.set_num_threads(T)
            tot = [0.0, 0.0, 0.0]
            print(f"\n# torch wrn-{depth}-{k}, batch {a.batch}, {T} thread(s): ms (GFLOP/s)")
            for (cin, cout, hw, ks), cnt in model_shapes(depth, k).items():
                x = torch.randn(a.batch, cin, hw, hw)
                w = torch.randn(cout, cin, ks, ks) * 0.1
                b = torch.zeros(cout)
                g = torch.randn(a.batch, cout, hw, hw)
                pad = ks // 2
                fl = 2.0 * a.batch * hw * hw * cout * cin * ks * ks / 1e9
                ops = [
                    lambda: F.conv2d(x, w, b, padding=pad),
                    lambda: cb(g, x, w, [cout], [1, 1], [pad, pad], [1, 1], False, [0, 0], 1,
                               [True, False, False]),
                    lambda: cb(g, x, w, [cout], [1, 1], [pad, pad], [1, 1], False, [0, 0], 1,
                               [False, True, True]),
                ]
                for i, (name, fn) in enumerate(zip(("fwd", "bwd_data", "bwd_w"), ops)):
                    t = best(fn, a.reps)
                    tot[i] += cnt * t
                    lab = f"{cin}>{cout} {hw} k{ks} x{cnt}"
                    print(f"{lab:22s} {name:8s} {1e3 * t:8.2f} ({fl / t:5.1f})")
            print(f"conv.wrn-{depth}-{k}.t{T}.torch.total {1e3 * sum(tot):.1f} ms "
                  f"(fwd {1e3 * tot[0]:.1f}, bwd_data {1e3 * tot[1]:.1f}, bwd_w {1e3 * tot[2]:.1f})")


if __name__ == "__main__":
    main()
