#!/usr/bin/python3
"""scaling_plot.py: chapter 11's plots, drawn with matplotlib from the files the study writes.

Kinds (each writes one SVG, or PNG by OUT's suffix, and prints one line saying what it drew):
  scaling  DIR FIT OUT      speedup and efficiency vs W, strong and weak, with the ideal line:
                            measured (median over rounds, and from the fastest step) and
                            predicted (compute + the ring model's C(W)). DIR: make scaling's
                            output (scaling.csv, raw.csv); FIT: make ring-model's fit.txt.
  split    DIR OUT          the time of one step split into compute (G/W) and communication (C(W))
  predicted CSV OUT         predicted weak-scaling efficiency vs W to 4096, one panel per model,
                            one line per link (make ring-model's predicted.csv)
  training OUT LOG:LABEL... training loss and accuracy per epoch of solution runs (their stdout):
                            the running loss at every progress line, val_accuracy at each epoch's
                            end; a run that stopped early (diverged) ends where it stopped
  lr       TRACE OUT        the learning rate of every optimizer step (HVDLAB_TRACE's rank-0.log)
Every series carries an SVG id (gid) "series-<name>", so a test can find it.
Bad input (a missing file, no data rows) gets one line naming the file and exit status 1.
Needs python3-matplotlib (Debian's; make scaling-plots installs it): run with /usr/bin/python3.
"""
import argparse
import csv
import math
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

# Text as <text> (greppable, and a test can read the labels); no random ids or dates, so the
# same data gives the same file; every data point kept as a vertex (no path simplification).
plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "hvdlab", "font.size": 9,
                     "path.simplify": False})


def fail(msg):
    sys.exit(f"scaling_plot: {msg}")


def read_csv(path):
    """Rows of a CSV with a header as dicts; at least one data row."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if not rows:
        fail(f"{path}: no data rows")
    return rows


def read_fit(path):
    """alpha_s and beta_s_per_byte of tools/ringmodel fit's output."""
    fit = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    fit[parts[0]] = parts[1]
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    try:
        return float(fit["alpha_s"]), float(fit["beta_s_per_byte"])
    except (KeyError, ValueError):
        fail(f"{path}: no alpha_s and beta_s_per_byte lines (tools/ringmodel fit's output)")


def ring_time(w, nbytes, alpha, beta):
    """C(W) of a ring allreduce: 2(W-1) latencies, 2(W-1)/W of the gradient through each link."""
    return 2 * (w - 1) * alpha + 2 * (w - 1) / w * nbytes * beta


def save(fig, out, what):
    fig.tight_layout()
    try:
        fig.savefig(out, metadata={"Date": None} if out.endswith(".svg") else None)
    except OSError as e:
        fail(f"{out}: {e.strerror}")
    plt.close(fig)
    print(f"scaling_plot: {out}: {what}")


def by_mode(rows):
    modes = {}
    for r in rows:
        modes.setdefault(r["mode"], []).append(r)
    for m in modes.values():
        m.sort(key=lambda r: int(r["ranks"]))
    return modes


def num(row, key, path):
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        fail(f"{path}: column {key} missing or not a number")


def plot_scaling(args):
    path = f"{args.dir}/scaling.csv"
    modes = by_mode(read_csv(path))
    raw = read_csv(f"{args.dir}/raw.csv")
    grad_bytes = num(raw[0], "grad_bytes", f"{args.dir}/raw.csv")
    alpha, beta = read_fit(args.fit)
    fig, axes = plt.subplots(2, len(modes), figsize=(4.2 * len(modes), 6), squeeze=False)
    for col, (mode, rows) in enumerate(sorted(modes.items())):
        ws = [int(r["ranks"]) for r in rows]
        base = rows[0]
        if int(base["ranks"]) != 1:
            fail(f"{path}: {mode} has no W = 1 row to measure speedup against")
        # Predicted: the W = 1 compute of the fastest step, scaled by the work per core in use
        # (images per step over the ideal), plus the ring model's C(W).
        t1 = num(base, "step_min_s", path)
        g1 = num(base, "global_batch", path)
        pred_sp = []
        for r in rows:
            ideal = num(r, "ideal", path)
            g = num(r, "global_batch", path)
            t = t1 * (g / g1) / ideal + ring_time(int(r["ranks"]), grad_bytes, alpha, beta)
            pred_sp.append((g / t) / (g1 / t1))
        ideal = [num(r, "ideal", path) for r in rows]
        series = {
            "speedup": [num(r, "speedup", path) for r in rows],
            "speedup-min": [num(r, "efficiency_from_min", path) * num(r, "ideal", path)
                            for r in rows],
            "speedup-predicted": pred_sp,
        }
        for row_i, (key, label) in enumerate((("speedup", "speedup"), ("efficiency", "efficiency"))):
            ax = axes[row_i][col]
            div = ideal if key == "efficiency" else [1] * len(ws)
            ax.plot(ws, [i / d for i, d in zip(ideal, div)], "k--", lw=1, label="ideal",
                    gid=f"series-{mode}-{key}-ideal")
            ax.plot(ws, [s / d for s, d in zip(series["speedup"], div)], "o-",
                    label="measured (median)", gid=f"series-{mode}-{key}-measured")
            ax.plot(ws, [s / d for s, d in zip(series["speedup-min"], div)], "s:",
                    label="measured (fastest step)", gid=f"series-{mode}-{key}-fastest")
            ax.plot(ws, [s / d for s, d in zip(pred_sp, div)], "^-", alpha=0.7,
                    label="predicted (compute + ring model)", gid=f"series-{mode}-{key}-predicted")
            for w, r in zip(ws, rows):
                if r["oversubscribed"] == "yes":
                    ax.axvspan(w * 0.9, w * 1.1, color="0.9", zorder=0)
            ax.set_xscale("log", base=2)
            ax.set_xticks(ws, [str(w) for w in ws])
            ax.set_xlabel("workers W (ranks)")
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.set_title(f"{mode} scaling, batch {base['batch_per_rank']} "
                         f"{'global' if mode == 'strong' else 'per rank'}")
            ax.grid(alpha=0.3)
        axes[0][col].legend(fontsize=7)
    save(fig, args.out, f"speedup and efficiency vs W for {', '.join(sorted(modes))} "
                        "(grey: oversubscribed)")


def plot_split(args):
    path = f"{args.dir}/scaling.csv"
    modes = by_mode(read_csv(path))
    fig, axes = plt.subplots(1, len(modes), figsize=(4.2 * len(modes), 3.4), squeeze=False)
    for col, (mode, rows) in enumerate(sorted(modes.items())):
        ax = axes[0][col]
        names = [f"W={r['ranks']}" + ("*" if r["oversubscribed"] == "yes" else "") for r in rows]
        comp = [num(r, "compute_s", path) * 1e3 for r in rows]
        comm = [num(r, "comm_s", path) * 1e3 for r in rows]
        x = list(range(len(rows)))
        bars = {"compute": ax.bar(x, comp, color="#6baed6", label="compute G/W"),
                "comm": ax.bar(x, comm, bottom=comp, color="#fd8d3c", label="communication C(W)")}
        for part, rects in bars.items():
            for r, rect in zip(rows, rects):
                rect.set_gid(f"series-{mode}-{part}-{r['ranks']}")
        ax.set_xticks(x, names)
        ax.set_ylabel("ms per step (median over rounds)")
        ax.set_title(f"{mode} scaling")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, args.out, f"per-step compute and communication for {', '.join(sorted(modes))} "
                        "(*: oversubscribed)")


def plot_predicted(args):
    models = {}
    for r in read_csv(args.csv):
        links = models.setdefault(r["model"], {})
        links.setdefault(r["link"], []).append((int(r["workers"]), num(r, "efficiency", args.csv)))
    fig, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 3.6), squeeze=False,
                             sharey=True)
    styles = ["-", "--", "-.", ":", (0, (5, 1, 1, 1))]
    for ax, (model, links) in zip(axes[0], models.items()):
        for i, (link, pts) in enumerate(links.items()):
            pts.sort()
            # Links whose lines coincide (latency-bound) stay visible by their dash pattern.
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=styles[i % len(styles)],
                    label=link, gid=f"series-{model}-{link}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers W")
        ax.set_ylim(0, 1.02)
        ax.set_title(model)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("predicted weak-scaling efficiency G/(G + C(W))")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle("ring allreduce model, G = one step of batch 128 on this machine", fontsize=9)
    save(fig, args.out, f"predicted efficiency of {len(models)} models for "
                        f"{len(next(iter(models.values())))} links")


PROGRESS = re.compile(r"^\s*(\d+)/(\d+) \[.*?loss: ([-+0-9.eEinfa]+) - accuracy: ([0-9.eE+-]+)"
                      r"(?: - val_loss: ([-+0-9.eEinfa]+) - val_accuracy: ([0-9.eE+-]+))?")
EPOCH = re.compile(r"^Epoch (\d+)/(\d+)")


def read_training(path):
    """From a solution's stdout: [(epoch_float, loss, accuracy)] at every progress line and
    [(epoch, val_loss, val_accuracy)] at every epoch's end, and the error line if it stopped."""
    steps, epochs, epoch, error = [], [], 0, None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n").split("\r")[-1]
                m = EPOCH.match(line)
                if m:
                    epoch = int(m.group(1))
                    continue
                m = PROGRESS.match(line)
                if m and epoch:
                    done, total = int(m.group(1)), int(m.group(2))
                    steps.append((epoch - 1 + done / total, float(m.group(3)), float(m.group(4))))
                    if m.group(6) is not None:
                        epochs.append((epoch, float(m.group(5)), float(m.group(6))))
                elif "training diverged" in line and error is None:
                    error = line
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if not steps:
        fail(f"{path}: no progress lines (the stdout of a solution or step program)")
    return steps, epochs, error


def plot_training(args):
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(8.4, 3.4))
    for i, spec in enumerate(args.runs):
        path, _, label = spec.partition(":")
        label = label or path
        steps, epochs, error = read_training(path)
        color = f"C{i}"
        name = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")
        xs = [s[0] for s in steps]
        # A NaN loss is not drawn; the run's last point gets an x when it stopped on an error.
        ax_loss.plot(xs, [s[1] if math.isfinite(s[1]) else float("nan") for s in steps],
                     color=color, label=label, gid=f"series-{name}-loss")
        ax_acc.plot(xs, [s[2] for s in steps], color=color, alpha=0.5, lw=1,
                    label=f"{label}: training", gid=f"series-{name}-accuracy")
        if epochs:
            ax_acc.plot([e[0] for e in epochs], [e[2] for e in epochs], "o-", color=color,
                        label=f"{label}: validation", gid=f"series-{name}-val-accuracy")
        if error:
            ax_loss.plot([xs[-1]], [steps[-1][1]], "x", color=color, ms=9,
                         gid=f"series-{name}-diverged")
            ax_acc.annotate("diverged (NaN)", (xs[-1], steps[-1][2]), color=color, fontsize=7,
                            xytext=(4, 4), textcoords="offset points")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss (running mean)")
    ax_loss.set_yscale("log")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_ylim(0, 1)
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title, fontsize=9)
    save(fig, args.out, f"training loss and accuracy of {len(args.runs)} runs")


def plot_lr(args):
    pts = []
    try:
        with open(args.trace, encoding="utf-8") as f:
            for line in f:
                if line.startswith("event=step "):
                    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
                    pts.append((int(kv["iter"]), float(kv["lr"])))
    except OSError as e:
        fail(f"{args.trace}: {e.strerror}")
    except (KeyError, ValueError):
        fail(f"{args.trace}: an event=step line without iter= and lr=")
    if not pts:
        fail(f"{args.trace}: no event=step lines (HVDLAB_TRACE's rank-0.log of a training run)")
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot([p[0] for p in pts], [p[1] for p in pts], label="lr", gid="series-lr")
    if args.steps_per_epoch:
        for e in range(1, pts[-1][0] // args.steps_per_epoch + 1):
            ax.axvline(e * args.steps_per_epoch + 0.5, color="0.7", lw=0.8, ls=":")
    ax.set_xlabel("optimizer step (iter)")
    ax.set_ylabel("learning rate")
    ax.set_ylim(bottom=0)
    if args.title:
        ax.set_title(args.title)
    ax.grid(alpha=0.3)
    save(fig, args.out, f"learning rate of {len(pts)} steps")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    p = sub.add_parser("scaling")
    p.add_argument("dir")
    p.add_argument("fit")
    p.add_argument("out")
    p.set_defaults(func=plot_scaling)
    p = sub.add_parser("split")
    p.add_argument("dir")
    p.add_argument("out")
    p.set_defaults(func=plot_split)
    p = sub.add_parser("predicted")
    p.add_argument("csv")
    p.add_argument("out")
    p.set_defaults(func=plot_predicted)
    p = sub.add_parser("training")
    p.add_argument("out")
    p.add_argument("runs", nargs="+", metavar="LOG:LABEL")
    p.add_argument("--title")
    p.set_defaults(func=plot_training)
    p = sub.add_parser("lr")
    p.add_argument("trace")
    p.add_argument("out")
    p.add_argument("--steps-per-epoch", type=int, default=0)
    p.add_argument("--title")
    p.set_defaults(func=plot_lr)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
