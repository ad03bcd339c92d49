#!/usr/bin/python3
"""novograd_ref.py — an independent NumPy implementation of NovoGrad (tensorflow-addons form)
that writes the fixtures tests/unit/test_optim.c compares common/optim/novograd.c with.

Rule (tensorflow-addons tensorflow_addons/optimizers/novograd.py; Ginsburg et al.,
arXiv:1905.11286), per tensor t with gradient g:
    v_t = |g|^2 at the first step, else beta2*v_t + (1-beta2)*|g|^2
    g'  = g / (sqrt(v_t) + eps);  g' += wd*w if wd > 0;  g' *= (1-beta1) if grad_averaging
          and not the first step
    m   = beta1*m - lr*g';  w += m          (Keras momentum: lr folded into m, as tfa does)

Problem: three tensors ("views" of one flat buffer) with loss sum_t s_t/2 |w_t - target_t|^2,
so g_t = s_t (w_t - target_t) depends on the weights and the trajectory matters. The LR changes
between steps, which tells the Keras momentum form from "m = b1*m + g'; w -= lr*m".
Computed in float64 from float32 inputs (weights, targets, hyperparameters rounded to float32,
as the C code holds them), so the fixture is the exact trajectory the float32 code approximates.

Usage: /usr/bin/python3 tests/reference/novograd_ref.py [outdir]   (default tests/fixtures)
"""
import os
import sys

import numpy as np

VIEWS = [("conv.w", 6, 1.0), ("conv.b", 2, 3.0), ("fc.w", 6, 0.25)]  # name, count, scale s_t
LRS = [0.1, 0.1, 0.05, 0.08, 0.02, 0.02]
CONFIGS = {
    "defaults": dict(beta1=0.9, beta2=0.999, eps=1e-7, weight_decay=0.0, grad_averaging=0),
    "wd-avg": dict(beta1=0.95, beta2=0.98, eps=1e-8, weight_decay=0.01, grad_averaging=1),
}


def f32(x):
    return np.float64(np.float32(x))


def run(cfg, w0, target):
    b1, b2, eps, wd = (f32(cfg[k]) for k in ("beta1", "beta2", "eps", "weight_decay"))
    # split the flat buffer into per-tensor arrays (copies; the flat form is only for output)
    bounds = np.cumsum([0] + [c for _, c, _ in VIEWS])
    w = [w0[bounds[i]:bounds[i + 1]].copy() for i in range(len(VIEWS))]
    tg = [target[bounds[i]:bounds[i + 1]] for i in range(len(VIEWS))]
    m = [np.zeros_like(x) for x in w]
    v = [0.0] * len(VIEWS)
    out = []
    for it, lr in enumerate(LRS):
        lr = f32(lr)
        for t, (_, _, s) in enumerate(VIEWS):
            g = s * (w[t] - tg[t])
            g2 = float(np.dot(g, g))
            v[t] = g2 if it == 0 else b2 * v[t] + (1.0 - b2) * g2
            gp = g / (np.sqrt(v[t]) + eps)
            if wd > 0:
                gp = gp + wd * w[t]
            if cfg["grad_averaging"] and it != 0:
                gp = gp * (1.0 - b1)
            m[t] = b1 * m[t] - lr * gp
            w[t] = w[t] + m[t]
        out.append((lr, np.concatenate(w)))
    return out


def fmt(a):
    return " ".join("%.17g" % x for x in a)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..",
                                                                 "fixtures")
    rng = np.random.RandomState(20190528)  # the paper's arXiv date; any fixed seed does
    n = sum(c for _, c, _ in VIEWS)
    w0 = rng.uniform(-1, 1, n).astype(np.float32).astype(np.float64)
    target = rng.uniform(-1, 1, n).astype(np.float32).astype(np.float64)
    for name, cfg in CONFIGS.items():
        lines = ["# NovoGrad (tensorflow-addons form) reference trajectory, written by",
                 "# tests/reference/novograd_ref.py (NumPy, float64 from float32 inputs).",
                 "# loss = sum_t s_t/2 |w_t - target_t|^2; 'view NAME OFFSET COUNT S'.",
                 "name %s" % name]
        lines += ["%s %.9g" % (k, cfg[k]) for k in ("beta1", "beta2", "eps", "weight_decay")]
        lines.append("grad_averaging %d" % cfg["grad_averaging"])
        lines.append("n %d" % n)
        lines.append("views %d" % len(VIEWS))
        off = 0
        for vname, c, s in VIEWS:
            lines.append("view %s %d %d %.9g" % (vname, off, c, s))
            off += c
        lines.append("w0 " + fmt(w0))
        lines.append("target " + fmt(target))
        traj = run(cfg, w0, target)
        lines.append("steps %d" % len(traj))
        for i, (lr, w) in enumerate(traj):
            lines.append("step %d lr %.9g w %s" % (i + 1, lr, fmt(w)))
        path = os.path.join(outdir, "novograd-%s.txt" % name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        print("wrote", path)


if __name__ == "__main__":
    main()
