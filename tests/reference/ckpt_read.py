#!/usr/bin/python3
"""ckpt_read.py — reads an hvdlab checkpoint (format in common/ckpt/ckpt.h) with NumPy and PyTorch.

    /usr/bin/python3 tests/reference/ckpt_read.py LOGDIR/checkpoint-3.ckpt [BATCH.bin]

Checks magic, version, both CRC32s and the size, maps every view name to a tensor of its shape,
loads them into the PyTorch WideResNet of tests/reference/wrn_torch.py (strict: every name and
shape must match) and prints a summary. With BATCH.bin (float32: B images (B, 1, 28, 28), then the
kit's inference logits (B, 10) for them) it also runs the PyTorch model in eval mode on the batch
and compares. Not needed by the tests; it shows the documented format is all a reader needs.
"""
import os
import struct
import sys
import zlib

import numpy as np
import torch

HEADER = struct.Struct("<8sIIQiif32siifqQQQIIII")  # the 128 bytes at offset 0, see ckpt.h
VIEW = struct.Struct("<64sQQi4ii")                  # 104 bytes per view
RESUME = struct.Struct("<Qi20x")                    # version 2: the 32-byte resume block


def read_ckpt(path):
    blob = open(path, "rb").read()
    (magic, version, header_bytes, file_bytes, depth, width, dropout, name, epoch, opt_kind,
     last_lr, iterations, n_params, n_state, n_opt, n_views, n_state_views, resume_bytes,
     header_crc) = HEADER.unpack_from(blob, 0)
    assert magic == b"HVDLCKPT" and version in (1, 2), (magic, version)  # 1: no resume block
    assert header_crc == zlib.crc32(blob[:124]), "header CRC"
    assert len(blob) == file_bytes, ("truncated or trailing bytes", len(blob), file_bytes)
    assert struct.unpack_from("<I", blob, len(blob) - 4)[0] == zlib.crc32(blob[:-4]), "CRC"
    views = [VIEW.unpack_from(blob, header_bytes + VIEW.size * i)
             for i in range(n_views + n_state_views)]
    data = header_bytes + VIEW.size * len(views)
    flat = np.frombuffer(blob, dtype="<f4", offset=data, count=n_params + n_state + n_opt)
    params, state = flat[:n_params], flat[n_params:n_params + n_state]
    resume = (RESUME.unpack_from(blob, data + 4 * (n_params + n_state + n_opt))
              if resume_bytes else (0, 0))
    tensors = {}
    for i, (vname, offset, count, ndim, s0, s1, s2, s3, decay) in enumerate(views):
        buf = params if i < n_views else state
        shape = (s0, s1, s2, s3)[:ndim]
        tensors[vname.rstrip(b"\0").decode()] = torch.from_numpy(
            buf[offset:offset + count].copy()).view(shape)
    meta = dict(name=name.rstrip(b"\0").decode(), depth=depth, width=width, dropout=dropout,
                epoch=epoch, optimizer={0: "sgd", 1: "novograd"}.get(opt_kind, "none"),
                iterations=iterations, last_lr=last_lr, n_params=n_params, n_state=n_state,
                n_opt_state=n_opt, opt_state=flat[n_params + n_state:], version=version,
                model_steps=resume[0], batch=resume[1])
    return meta, tensors


def main():
    meta, tensors = read_ckpt(sys.argv[1])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from wrn_torch import WRN, torch_name  # the independent PyTorch network (tests/reference/wrn_torch.py)
    model = WRN(meta["depth"], meta["width"]).float()
    model.load_state_dict({torch_name(k): v for k, v in tensors.items()}, strict=False)
    missing = set(model.state_dict()) - {torch_name(k) for k in tensors}
    assert missing <= {k for k in model.state_dict() if k.endswith("num_batches_tracked")}, missing
    n_torch = sum(p.numel() for p in model.parameters())
    print("%s: version %d, %s epoch %d (+%d batches), %s optimizer after %d iterations "
          "(last lr %g), %d named tensors, "
          "%d params (PyTorch model: %d), %d state, %d optimizer floats; CRCs ok"
          % (sys.argv[1], meta["version"], meta["name"], meta["epoch"], meta["batch"],
             meta["optimizer"], meta["iterations"],
             meta["last_lr"], len(tensors), meta["n_params"], n_torch, meta["n_state"],
             meta["n_opt_state"]))
    for k in ("stem.conv.w", "g1.b0.conv1.w", "fc.w", "fc.b", "stem.bn.mean"):
        if k in tensors:
            t = tensors[k]
            print("  %-14s %-18s first %s" % (k, tuple(t.shape), t.flatten()[:3].tolist()))
    if len(sys.argv) > 2:
        raw = np.fromfile(sys.argv[2], dtype="<f4")
        b = raw.size // (784 + 10)
        x = torch.from_numpy(raw[:b * 784].copy()).view(b, 1, 28, 28)
        kit = torch.from_numpy(raw[b * 784:].copy()).view(b, 10)
        model.eval()
        with torch.no_grad():
            mine = model(x)
        print("  eval logits on %d images: max |PyTorch - kit| = %.3g (logits up to %.3g)"
              % (b, (mine - kit).abs().max().item(), kit.abs().max().item()))


if __name__ == "__main__":
    main()
