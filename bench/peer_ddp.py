#!/usr/bin/python3
"""peer_ddp.py — PyTorch DistributedDataParallel peer for time to accuracy (tools/tta.sh).

An independent program of the lab's recipe, so that the kit's time to the lab's target accuracy
can be compared with PyTorch's on the same machine, in the same run. Run with Debian's torch
(/usr/bin/python3, python3-torch 1.13); it starts its own ranks (gloo on 127.0.0.1).

The recipe, as solutions/step10.c trains it (defaults of ./solution10 --help):
  network   the kit's WideResNet (bench/peer_torch.py's WRN, keras-contrib form, dropout 0.01),
            Keras initial weights: conv kernels he_normal (truncated normal, stddev
            sqrt(2/fan_in)/0.8796), dense kernel glorot_uniform, biases and beta 0, gamma 1
  data      Fashion-MNIST IDX files, standardised with the training set's pixel mean and std;
            training images augmented per image: integer shifts, nearest to U[-5.6, 5.6) pixels
            (Keras shift range 0.2), edge pixels repeated, and a horizontal flip half the time
  shards    each epoch a permutation of the training set (seeded by seed and epoch), rank r takes
            every size-th image from r, floor(n/size) each; ceil(n/batch)/size steps an epoch
            (the lab's steps_per_epoch); the test set sharded the same way, no shuffle
  loss      cross-entropy + Keras L2 wd·sum(w²) on conv and dense kernels (2·wd·w on the
            gradient, before the averaging)
  optimizer SGD momentum 0.9; LR = base_lr·size with Horovod's warmup over --warmup-epochs
            (from base_lr at the first batch to base_lr·size at the end of the warmup), then
            ×1 until epoch 15, ×0.1, ×0.01, ×0.001 at 15, 25, 35 (PyTorch's SGD form equals
            Keras's with Horovod's momentum correction)
  validate  the lab's validation_steps = 3·len(test_iter)//size batches per rank after every
            epoch (--val-oversample, default 3), drawn in turn from the rank's test shard,
            reshuffled at each pass (the kit's loader_next_cyclic: a short batch ends each pass),
            so that both programs do the same validation work; --val-oversample 1 is one pass
  stop      after --epochs, or once val_accuracy > --target-accuracy for --patience epochs

Device: --device cpu (default) or cuda: every rank on GPU 0, as the kit's ranks share one GPU
(make bench-tta-gpu), still with gloo (NCCL takes no two ranks on one GPU); TF32 convolutions as
PyTorch's default. --amp bf16: the forward passes and the loss under torch.autocast(bfloat16),
weights, gradients and optimizer state fp32 (PyTorch's mixed precision).

It prints one line per epoch (stdout, rank 0):
  epoch E loss L accuracy A val_loss VL val_accuracy VA
and at the end "Test accuracy: X"; tools/tta.sh stamps each line with the wall time since launch.
"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_torch import WRN, parse_model  # noqa: E402  the same network as the speed peer

DATA_DIRS = ["datasets/fashion-mnist", "/usr/share/datasets/fashion-mnist"]
SHIFT = 0.2 * 28  # Keras width/height_shift_range 0.2 of 28 pixels
STD_EPS = 1e-6


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    magic, = struct.unpack(">I", raw[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find_file(data_dir, name):
    dirs = [data_dir] if data_dir else ([os.environ["HVDLAB_DATA"]] if os.environ.get("HVDLAB_DATA")
                                         else DATA_DIRS)
    for d in dirs:
        for n in (name + ".gz", name):
            if os.path.exists(os.path.join(d, n)):
                return os.path.join(d, n)
    sys.exit(f"peer_ddp.py: error: {name} not found in {', '.join(dirs)}")


def load(data_dir, split, subset):
    x = read_idx(find_file(data_dir, f"{split}-images-idx3-ubyte"))
    y = read_idx(find_file(data_dir, f"{split}-labels-idx1-ubyte")).astype(np.int64)
    if subset:
        x, y = x[:subset], y[:subset]
    return x, y


def augment(x, rng):
    """x (n, 28, 28) uint8 -> shifted (nearest to U[-SHIFT, SHIFT)), edge-repeated, flipped."""
    n = x.shape[0]
    dy = np.floor((2 * rng.random(n) - 1) * SHIFT + 0.5).astype(np.int64)
    dx = np.floor((2 * rng.random(n) - 1) * SHIFT + 0.5).astype(np.int64)
    flip = rng.random(n) < 0.5
    r = np.arange(28)
    rows = np.clip(r[None, :] - dy[:, None], 0, 27)                      # (n, 28)
    cols = np.where(flip[:, None], 27 - r[None, :], r[None, :])
    cols = np.clip(cols - dx[:, None], 0, 27)                           # (n, 28)
    return x[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]


def keras_init(net):
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
            sd = math.sqrt(2.0 / fan_in) / 0.87962566103423978
            nn.init.trunc_normal_(m.weight, std=sd, a=-2 * sd, b=2 * sd)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)


def lr_at(a, size, epoch, batch, spe):
    lr = a.base_lr * size
    if epoch < a.warmup_epochs and a.warmup_epochs > 0 and size > 1:
        e = (epoch * spe + batch + 1) / spe
        return lr * (e * (size - 1) + a.warmup_epochs) / (a.warmup_epochs * size)
    mult = 1.0 if epoch < 15 else 0.1 if epoch < 25 else 0.01 if epoch < 35 else 0.001
    return lr * mult


def val_batches(n, a, rank, size, epoch):
    """The lab's validation draw (solutions/step10.c): 3·len(test_iter)//size batches from the
    rank's shard of the test set, cycling through it in a fresh order each pass."""
    steps = max(1, a.val_oversample * ((n + a.val_batch_size - 1) // a.val_batch_size) // size)
    shard = np.arange(rank, n, size)
    batches, p = [], 0
    while len(batches) < steps:
        order = shard[np.random.default_rng([a.seed, epoch, rank, 11, p]).permutation(len(shard))]
        batches += [order[s:s + a.val_batch_size] for s in range(0, len(order), a.val_batch_size)]
        p += 1
    return batches[:steps]


def autocast(a, dev):
    return torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.amp == "bf16")


def evaluate(net, x, y, a, rank, size, epoch, dev):
    net.eval()
    loss_sum, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for b in val_batches(len(x), a, rank, size, epoch):
            b = torch.from_numpy(b).to(dev)
            with autocast(a, dev):
                out = net(x[b])
                loss_sum += F.cross_entropy(out.float(), y[b], reduction="sum").item()
            correct += (out.argmax(1) == y[b]).sum().item()
            count += len(b)
    t = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
    dist.all_reduce(t)
    net.train()
    return t[0].item() / t[2].item(), t[1].item() / t[2].item()


def worker(rank, a):
    size = a.np
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank,
                            world_size=size)
    xtr, ytr = load(a.data_dir, "train", 0)
    mean, std = xtr.mean(dtype=np.float64), xtr.std(dtype=np.float64)  # all 60,000, as dataset.c
    if a.train_subset:
        xtr, ytr = xtr[:a.train_subset], ytr[:a.train_subset]
    xte, yte = load(a.data_dir, "t10k", a.test_subset)
    lut = ((np.arange(256) - mean) / (std + STD_EPS)).astype(np.float32)
    xte_t = torch.from_numpy(lut[xte]).unsqueeze(1).to(dev)
    yte_t = torch.from_numpy(yte).to(dev)

    depth, k = parse_model(a.model)
    torch.manual_seed(a.seed + rank)
    net = WRN(depth, k, a.dropout)
    keras_init(net)
    net = net.to(dev)
    # broadcasts rank 0's weights at the start
    ddp = nn.parallel.DistributedDataParallel(net, device_ids=[0] if dev.type == "cuda" else None)
    kernels = [m.weight for m in net.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    opt = torch.optim.SGD(net.parameters(), lr=a.base_lr, momentum=a.momentum)

    n = len(xtr)
    per_rank = n // size  # the kit's shards: equal, the remainder left out this epoch
    spe = ((n + a.batch_size - 1) // a.batch_size) // size  # the lab's steps_per_epoch
    above = 0
    for epoch in range(a.epochs):
        perm = np.random.default_rng([a.seed, epoch]).permutation(n)
        shard = perm[rank::size][:per_rank]
        rng = np.random.default_rng([a.seed, epoch, rank, 7])
        loss_sum, correct, count = 0.0, 0, 0
        for b in range(spe):
            idx = shard[b * a.batch_size:(b + 1) * a.batch_size]
            xb = torch.from_numpy(lut[augment(xtr[idx], rng)]).unsqueeze(1).to(dev)
            yb = torch.from_numpy(ytr[idx]).to(dev)
            for g in opt.param_groups:
                g["lr"] = lr_at(a, size, epoch, b, spe)
            opt.zero_grad(set_to_none=False)
            with autocast(a, dev):
                out = ddp(xb)
                loss = F.cross_entropy(out.float(), yb)
            if a.wd > 0:  # Keras L2 on the kernels: wd·sum(w²) joins the loss before averaging
                loss = loss + a.wd * sum((w * w).sum() for w in kernels)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx)
            correct += (out.argmax(1) == yb).sum().item()
            count += len(idx)
        t = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
        dist.all_reduce(t)
        vl, va = evaluate(net, xte_t, yte_t, a, rank, size, epoch, dev)
        if rank == 0:
            print(f"epoch {epoch + 1} loss {t[0] / t[2]:.4f} accuracy {t[1] / t[2]:.4f} "
                  f"val_loss {vl:.4f} val_accuracy {va:.4f}", flush=True)
        above = above + 1 if va > a.target_accuracy else 0
        if above >= a.patience:
            break
    if rank == 0:
        print(f"Test accuracy: {va:.4f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=2, help="ranks (processes)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--model", default="wrn-16-1")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--val-batch-size", type=int, default=256)
    p.add_argument("--val-oversample", type=int, default=3,
                   help="validation batches: this many x len(test_iter) // size (the lab: 3)")
    p.add_argument("--base-lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=5e-6)
    p.add_argument("--warmup-epochs", type=int, default=5)
    p.add_argument("--dropout", type=float, default=0.01)
    p.add_argument("--train-subset", type=int, default=0)
    p.add_argument("--test-subset", type=int, default=0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--target-accuracy", type=float, default=0.85)
    p.add_argument("--patience", type=int, default=2)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--port", type=int, default=29500 + os.getpid() % 1000)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cuda: every rank on GPU 0 (gloo between them)")
    p.add_argument("--amp", choices=["none", "bf16"], default="none",
                   help="bf16: forward and loss under torch.autocast(bfloat16)")
    a = p.parse_args()
    if a.np < 1 or a.threads < 1 or a.epochs < 1 or a.batch_size < 1 or a.val_oversample < 1:
        sys.exit("peer_ddp.py: error: --np, --threads, --epochs, --batch-size, --val-oversample "
                 "must be >= 1")
    t0 = time.perf_counter()
    mp.spawn(worker, args=(a,), nprocs=a.np, join=True)
    print(f"peer_ddp.wall_s {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
