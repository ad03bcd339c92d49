#!/usr/bin/env python3
"""timeline_plot.py: draws a Chrome-trace timeline (HVD_TIMELINE=t.json, Horovod's format) as a
PNG or SVG image, for a terminal with no browser (an ssh session) and for the lab text.

One row per tensor (the trace's "process_name"), in the trace's order; each B/E span (or X event)
a bar: NEGOTIATE_ALLREDUCE light, ALLREDUCE mid, MPI_ALLREDUCE (the ring pass) dark and narrower,
inside it. By default it shows training step --step (1-based, default 3: past the first steps'
warm-up) and the --steps-1 steps after it, a step being one round of the gradient tensors'
allreduces; --from-ms/--to-ms pick any window instead (ms after the first event).

Usage: python3 tools/timeline_plot.py TIMELINE.json OUT.png|OUT.svg [--step N] [--steps K]
           [--from-ms A --to-ms B] [--title T]
Prints one line: what it drew. Needs python3-matplotlib (make timeline-image installs it).
"""
import argparse
import json
import sys

PHASE_COLOR = {
    "NEGOTIATE_ALLREDUCE": "#d9d9d9",
    "ALLREDUCE": "#6baed6",
    "MPI_ALLREDUCE": "#08519c",
    "BROADCAST": "#fd8d3c",
    "ALLGATHER": "#74c476",
}


def load_events(path):
    """The trace's event list (a bare array or {"traceEvents": [...]})."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"timeline_plot: {path}: {e}")
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        sys.exit(f"timeline_plot: {path}: not a Chrome trace (no event array)")
    return events


def spans_of(events):
    """(rows, spans): rows = [(pid, name)] in sort order; spans = (pid, name, t0_us, t1_us, depth)."""
    names, order, spans, open_ = {}, {}, [], {}
    for e in events:
        ph, pid = e.get("ph"), e.get("pid")
        if ph == "M":
            if e.get("name") == "process_name":
                names[pid] = e.get("args", {}).get("name", str(pid))
            elif e.get("name") == "process_sort_index":
                order[pid] = e.get("args", {}).get("sort_index", pid)
        elif ph == "B":
            stack = open_.setdefault((pid, e.get("tid")), [])
            stack.append((e.get("name", "?"), e["ts"]))
        elif ph == "E":
            stack = open_.get((pid, e.get("tid")))
            if stack:
                name, t0 = stack.pop()
                spans.append((pid, name, t0, e["ts"], len(stack)))
        elif ph == "X":
            spans.append((pid, e.get("name", "?"), e["ts"], e["ts"] + e.get("dur", 0), 0))
    pids = sorted({s[0] for s in spans}, key=lambda p: (order.get(p, p), p))
    return [(p, names.get(p, str(p))) for p in pids], spans


def step_window(rows, spans, step, steps):
    """(t0, t1) in us around training steps step..step+steps-1: a step starts where the first
    gradient tensor's row negotiates again."""
    grad_rows = [p for p, n in rows if n.startswith("DistributedOptimizer.grads")]
    if not grad_rows:
        return None
    first = grad_rows[0]
    starts = sorted(s[2] for s in spans if s[0] == first and s[1] == "NEGOTIATE_ALLREDUCE")
    if len(starts) < step:
        step = max(1, len(starts) - steps + 1)
    i0 = step - 1
    t0 = starts[i0]
    t1 = starts[i0 + steps] if i0 + steps < len(starts) else None
    grad = set(grad_rows)
    ends = [s[3] for s in spans if s[0] in grad and s[2] >= t0 and (t1 is None or s[2] < t1)]
    return t0, max(ends), step


def main():
    ap = argparse.ArgumentParser(description="draw an HVD_TIMELINE Chrome trace as PNG/SVG")
    ap.add_argument("timeline")
    ap.add_argument("out")
    ap.add_argument("--step", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--from-ms", type=float)
    ap.add_argument("--to-ms", type=float)
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    if not a.out.endswith((".png", ".svg")):
        sys.exit(f"timeline_plot: {a.out}: the output must end in .png or .svg")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        sys.exit("timeline_plot: needs matplotlib: sh tools/setup.sh python3-matplotlib")

    rows, spans = spans_of(load_events(a.timeline))
    if not spans:
        sys.exit(f"timeline_plot: {a.timeline}: no events to draw")
    origin = min(s[2] for s in spans)
    if a.from_ms is not None or a.to_ms is not None:
        t0 = origin + 1000 * (a.from_ms or 0)
        t1 = origin + 1000 * a.to_ms if a.to_ms is not None else max(s[3] for s in spans)
        what = f"{(t0 - origin) / 1000:.1f}-{(t1 - origin) / 1000:.1f} ms"
    else:
        w = step_window(rows, spans, a.step, a.steps)
        if w is None:
            t0, t1 = origin, max(s[3] for s in spans)
            what = "the whole run (no gradient allreduces in it)"
        else:
            t0, t1, step = w
            what = f"training step {step}" + (f"-{step + a.steps - 1}" if a.steps > 1 else "")
    pad = 0.03 * (t1 - t0 or 1)
    lo, hi = t0 - pad, t1 + pad
    shown = [(p, n) for p, n in rows if any(s[0] == p and s[3] >= lo and s[2] <= hi for s in spans)]
    if not shown:
        sys.exit(f"timeline_plot: nothing happens in {what}")
    y = {p: i for i, (p, _) in enumerate(shown)}

    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.17 * len(shown)))
    bars = {}
    for pid, name, s0, s1, depth in spans:
        if pid not in y or s1 < lo or s0 > hi:
            continue
        h = 0.8 if depth == 0 else 0.45
        ax.broken_barh([((s0 - t0) / 1000, max((s1 - s0) / 1000, 1e-3))], (y[pid] - h / 2, h),
                       color=PHASE_COLOR.get(name, "#969696"), zorder=2 + depth)
        key = name + (" nested" if depth else "")
        bars[key] = bars.get(key, 0) + 1
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([n.replace("DistributedOptimizer.grads/", "grads/") for _, n in shown],
                       fontsize=6)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_xlim((lo - t0) / 1000, (hi - t0) / 1000)
    ax.set_xlabel(f"ms (0 = start of {what})")
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    drawn = {k.split()[0] for k in bars}
    ax.legend(handles=[Patch(color=PHASE_COLOR[k], label=k) for k in PHASE_COLOR if k in drawn],
              loc="upper right", fontsize=7)
    ax.set_title(a.title or f"{a.timeline}: {what}", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(bars.items()))
    print(f"timeline_plot: {a.out}: {what}, {len(shown)} rows ({counts}), "
          f"{(t1 - t0) / 1000:.1f} ms")


if __name__ == "__main__":
    main()
