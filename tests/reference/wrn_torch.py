#!/usr/bin/python3
"""wrn_torch.py — the WideResNet of common/model/wrn.h rebuilt in PyTorch, as an independent reference.

Makes tests/fixtures/wrn-10-1-b8.{txt,bin}, which tests/unit/test_wrn.c compares the kit with (the test
needs neither Python nor this script). Regenerate with (from the repository root):

    make wrn-fixture
    # which runs:
    #   build/tests/progs/prog_wrn_dump /tmp/hvdlab-wrn-init wrn-10-1 8 1234 5e-4
    #   /usr/bin/python3 tests/reference/wrn_torch.py /tmp/hvdlab-wrn-init tests/fixtures/wrn-10-1-b8

What it does:
  1. reads the kit's initial weights, batch-norm running statistics and a fixed batch (x, y)
     written by tests/progs/prog_wrn_dump.c (index INIT.txt, float32 data INIT.bin);
  2. builds the same network with torch.nn (keras-contrib post-activation blocks, 1x1 shortcut
     conv only where the width changes, 2x2 max-pool after groups 1 and 2, global average pool,
     dense 10), loads those tensors by name, dropout 0;
  3. one training-mode forward (batch statistics; BatchNorm2d momentum 0.1 is PyTorch's name for
     the Keras momentum 0.9: running = 0.9*running + 0.1*batch, unbiased variance; eps 1e-5),
     loss = mean cross-entropy + wd * sum of squares of conv and dense kernels (Keras L2, no 1/2),
     backward;
  4. writes OUT.txt / OUT.bin: logits, the cross-entropy and L2 terms, every gradient
     ("grad NAME"), the updated running statistics ("state NAME"), the logits of an
     inference-mode forward on the same batch after that step ("eval_logits"), the input batch,
     the kit's init checksum (so the test can tell a changed initialiser from a wrong gradient),
     and PyTorch's trainable parameter counts of wrn-16-1, wrn-16-4 and wrn-16-10.

Run with Debian's torch: /usr/bin/python3 (not the pyenv python3 on PATH). Double precision is
not used here on purpose: the reference runs in float32 like the kit, with PyTorch's own kernels.
"""
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, dropout):
        super().__init__()
        if cin != cout:
            self.short = nn.Conv2d(cin, cout, 1)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.dropout = dropout

    def forward(self, x):
        init = self.short(x) if hasattr(self, "short") else x
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.dropout(h, self.dropout, self.training)
        h = F.relu(self.bn2(self.conv2(h)))
        return init + h


class WRN(nn.Module):
    def __init__(self, depth, width, dropout=0.0):
        super().__init__()
        assert (depth - 4) % 6 == 0
        n = (depth - 4) // 6
        self.stem = nn.Module()
        self.stem.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.stem.bn = nn.BatchNorm2d(16, eps=1e-5, momentum=0.1)
        cin = 16
        self.groups = []
        for g in range(3):
            cout = (16 << g) * width
            group = nn.ModuleDict()
            for b in range(n):
                group["b%d" % b] = Block(cin, cout, dropout)
                cin = cout
            setattr(self, "g%d" % (g + 1), group)
            self.groups.append(group)
        self.fc = nn.Linear(cin, 10)

    def forward(self, x):
        x = F.relu(self.stem.bn(self.stem.conv(x)))
        for g, group in enumerate(self.groups):
            for block in group.values():
                x = block(x)
            if g < 2:
                x = F.max_pool2d(x, 2)
        x = x.mean(dim=(2, 3))
        return self.fc(x)


def torch_name(kit_name):
    """Kit view name -> state_dict key: .w/.gamma -> .weight, .b/.beta -> .bias,
    .mean/.var -> .running_mean/.running_var."""
    base, _, leaf = kit_name.rpartition(".")
    leaf = {"w": "weight", "gamma": "weight", "b": "bias", "beta": "bias",
            "mean": "running_mean", "var": "running_var"}[leaf]
    return base + "." + leaf


def read_dump(prefix):
    meta, items = {}, []
    with open(prefix + ".txt") as f:
        for line in f:
            p = line.split()
            if p[0] in ("param", "state", "tensor"):
                shape = [int(d) for d in p[5:5 + int(p[4])]]
                items.append((p[0], p[1], int(p[2]), int(p[3]), shape, int(p[9])))
            else:
                meta[p[0]] = p[1]
    data = np.fromfile(prefix + ".bin", dtype="<f4")
    return meta, items, data


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: wrn_torch.py INIT_PREFIX OUT_PREFIX")
    torch.manual_seed(0)
    meta, items, data = read_dump(sys.argv[1])
    depth, width = (int(v) for v in meta["model"].split("-")[1:])
    wd = float(meta["wd"])
    model = WRN(depth, width).float()
    sd = model.state_dict()
    params, decay, tensors = [], [], {}
    for kind, name, off, cnt, shape, dec in items:
        t = torch.from_numpy(data[off:off + cnt].copy()).reshape(shape)
        if kind == "tensor":
            tensors[name] = t
            continue
        key = torch_name(name)
        assert tuple(sd[key].shape) == tuple(shape), (name, sd[key].shape, shape)
        sd[key].copy_(t)
        if kind == "param":
            params.append(name)
            if dec:
                decay.append(key)
    n_torch = sum(p.numel() for p in model.parameters())
    n_kit = sum(cnt for kind, _, _, cnt, _, _ in items if kind == "param")
    assert n_torch == n_kit, (n_torch, n_kit)

    x, y = tensors["x"], tensors["y"].long()
    model.train()
    logits = model(x)
    xent = F.cross_entropy(logits, y)  # mean over the batch
    named = dict(model.named_parameters())
    l2 = wd * sum((named[k] ** 2).sum() for k in decay)
    (xent + l2).backward()
    model.eval()
    with torch.no_grad():
        eval_logits = model(x)

    out = []  # (name, float32 array)
    out.append(("x", x.numpy().ravel()))
    out.append(("y", y.float().numpy()))
    out.append(("logits", logits.detach().numpy().ravel()))
    out.append(("eval_logits", eval_logits.numpy().ravel()))
    for name in params:
        out.append(("grad:" + name, named[torch_name(name)].grad.numpy().ravel()))
    for kind, name, _, _, _, _ in items:
        if kind == "state":
            out.append(("state:" + name, model.state_dict()[torch_name(name)].numpy().ravel()))
    counts = {}
    for k in (1, 4, 10):
        counts[k] = sum(p.numel() for p in WRN(16, k).parameters())

    off = 0
    with open(sys.argv[2] + ".txt", "w") as f:
        f.write("# made by tests/reference/wrn_torch.py with torch %s; see its header\n"
                % torch.__version__)
        for key in ("model", "batch", "seed", "wd", "dropout", "init_checksum"):
            f.write("%s %s\n" % (key, meta[key]))
        f.write("xent %.9g\n" % xent.item())
        f.write("l2 %.9g\n" % l2.item())
        for k in (1, 4, 10):
            f.write("param_count wrn-16-%d %d\n" % (k, counts[k]))
        for name, arr in out:
            f.write("tensor %s %d %d\n" % (name, off, arr.size))
            off += arr.size
    np.concatenate([a.astype("<f4") for _, a in out]).tofile(sys.argv[2] + ".bin")
    print("wrn_torch.py: %s batch %s: loss %.6f (xent %.6f + l2 %.6f), %d params; "
          "wrn-16-1/4/10: %d / %d / %d params -> %s.{txt,bin}"
          % (meta["model"], meta["batch"], xent.item() + l2.item(), xent.item(), l2.item(),
             n_torch, counts[1], counts[4], counts[10], sys.argv[2]))


if __name__ == "__main__":
    main()
