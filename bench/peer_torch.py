#!/usr/bin/python3
"""peer_torch.py — PyTorch peer for bench/train_speed.c: WRN training images/s and peak memory.

Run with Debian's torch (/usr/bin/python3, python3-torch 1.13). The network is the kit's
(common/model/wrn.h), keras-contrib form on 28x28x1 inputs:
  stem conv3x3(16)-BN-ReLU; three groups of (D-4)/6 blocks at widths 16K, 32K, 64K; each block
  conv3x3-BN-ReLU-dropout-conv3x3-BN-ReLU added to the block input (1x1 conv on the shortcut
  when the width changes); 2x2 max-pool after groups 1 and 2; global average pool; dense 10.
  Convs keep their biases; BN momentum 0.1 (torch convention = Keras 0.9), eps 1e-5.
One timed step = forward + cross-entropy + backward + SGD(momentum 0.9) step, training mode,
on a fixed random batch (N, 1, 28, 28), after warm-up steps.

Usage: peer_torch.py [--model wrn-16-1[,wrn-16-4...]] [--threads 2[,1...]] [--batch 128]
                     [--warmup 3] [--iters 20] [--min-seconds 0] [--dropout 0.01]
                     [--device cpu|cuda] [--compile] [--amp bf16] [--flops]
Prints `name value unit` lines, for each model and thread count:
  torch.<model>.t<T>.images_per_s   <v> images/s   (steps·batch / wall time of the timed steps)
  torch.<model>.t<T>.step_ms        <v> ms
  torch.<model>.t<T>.params         <n> count      (trainable parameters)
  (with --compile the network runs through torch.compile: compiled_images_per_s, compiled_step_ms,
  compiled_peak_gpu, and compile_s, the warm-up steps' time, which includes the compilation;
  "compiled n/a" where the torch has no torch.compile, such as Debian's 1.13)
  (with --amp bf16 the forward pass and the loss run under torch.autocast(bfloat16): weights,
  optimizer state and gradients stay fp32, as PyTorch's mixed precision does; names get bf16_,
  before compiled_ when both)
  --flops: no training; torch.<model>.train_gflop_per_image, the nominal convolution and dense
  FLOPs of one 28x28 image's forward pass x3 (forward, backward data, backward weights), for a
  fraction of the GPU's dense tensor rate
and once at the end (whole process; run one configuration per process for per-config peaks):
  torch.peak_rss <v> MiB  (VmHWM from /proc/self/status)
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, dropout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=True)
        self.bn1 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=True)
        self.bn2 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.short = nn.Conv2d(cin, cout, 1, bias=True) if cin != cout else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.drop(y)
        y = F.relu(self.bn2(self.conv2(y)))
        s = self.short(x) if self.short is not None else x
        return y + s


class WRN(nn.Module):
    def __init__(self, depth, k, dropout, classes=10):
        super().__init__()
        assert (depth - 4) % 6 == 0 and depth >= 10 and k >= 1
        n = (depth - 4) // 6
        self.stem = nn.Conv2d(1, 16, 3, padding=1, bias=True)
        self.stem_bn = nn.BatchNorm2d(16, eps=1e-5, momentum=0.1)
        layers = []
        cin = 16
        for g, width in enumerate((16 * k, 32 * k, 64 * k)):
            for _ in range(n):
                layers.append(Block(cin, width, dropout))
                cin = width
            if g < 2:
                layers.append(nn.MaxPool2d(2))
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.relu(self.stem_bn(self.stem(x)))
        x = self.body(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def parse_model(name):
    parts = name.split("-")
    if len(parts) != 3 or parts[0] != "wrn":
        sys.exit(f"peer_torch.py: error: --model {name!r}: expected wrn-D-K")
    return int(parts[1]), int(parts[2])


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(model_name, threads, a):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    depth, k = parse_model(model_name)
    dev = torch.device(a.device)
    if dev.type == "cuda":  # TF32 in convolutions as the kit: on unless HVDLAB_TF32=0
        torch.backends.cudnn.allow_tf32 = os.environ.get("HVDLAB_TF32", "1") != "0"
        torch.backends.cudnn.benchmark = True
        torch.cuda.reset_peak_memory_stats()
    net = WRN(depth, k, a.dropout).train().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)
    tag = f"torch.{model_name}.t{threads}"
    fwd, pre = net, "bf16_" if a.amp == "bf16" else ""
    if a.compile:  # the network through torch.compile (PyTorch 2); its first steps compile it
        if not hasattr(torch, "compile"):
            print(f"{tag}.compiled n/a (torch {torch.__version__} has no torch.compile)")
            sys.stdout.flush()
            return
        fwd, pre = torch.compile(net), pre + "compiled_"
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.amp == "bf16")

    def step():
        opt.zero_grad(set_to_none=False)
        with amp:
            loss = F.cross_entropy(fwd(x), y)
        loss.backward()
        opt.step()
        return loss

    w0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    if a.compile:
        print(f"{tag}.compile_s {time.perf_counter() - w0:.1f} s (the {a.warmup} warm-up steps)")
    iters = 0
    t0 = time.perf_counter()
    while iters < a.iters or time.perf_counter() - t0 < a.min_seconds:
        loss = step()
        if dev.type == "cuda":
            loss.item()  # per batch the loss comes back, as the kit's does
        iters += 1
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    nparams = sum(p.numel() for p in net.parameters())
    print(f"{tag}.{pre}images_per_s {iters * a.batch / dt:.1f} images/s")
    print(f"{tag}.{pre}step_ms {1e3 * dt / iters:.2f} ms")
    print(f"{tag}.{pre}iters {iters} count")
    print(f"{tag}.params {nparams} count")
    if dev.type == "cuda":
        print(f"{tag}.{pre}peak_gpu {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
    sys.stdout.flush()


def train_gflop_per_image(model_name, dropout):
    """2 x multiply-adds of every Conv2d and Linear for one image, forward only, x3."""
    depth, k = parse_model(model_name)
    net = WRN(depth, k, dropout).eval()
    total = [0]

    def count(m, inp, out):
        if isinstance(m, nn.Conv2d):
            total[0] += 2 * out.numel() * m.in_channels // m.groups * m.kernel_size[0] * \
                m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            total[0] += 2 * m.in_features * m.out_features
    hooks = [m.register_forward_hook(count) for m in net.modules()
             if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        net(torch.zeros(1, 1, 28, 28))
    for h in hooks:
        h.remove()
    return 3 * total[0] / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="wrn-16-1")
    p.add_argument("--threads", default="2")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--min-seconds", type=float, default=0.0)
    p.add_argument("--dropout", type=float, default=0.01)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--compile", action="store_true",
                   help="run the network through torch.compile (names get compiled_)")
    p.add_argument("--amp", choices=["none", "bf16"], default="none",
                   help="bf16: forward and loss under torch.autocast(bfloat16) (names get bf16_)")
    p.add_argument("--flops", action="store_true",
                   help="print each model's nominal training GFLOP per image and exit")
    a = p.parse_args()
    if a.flops:
        for m in a.model.split(","):
            print(f"torch.{m}.train_gflop_per_image {train_gflop_per_image(m, a.dropout):.4f} "
                  "GFLOP")
        return
    for m in a.model.split(","):
        for t in a.threads.split(","):
            run(m, int(t), a)
    print(f"torch.peak_rss {peak_rss_mib():.1f} MiB")


if __name__ == "__main__":
    main()
