#!/usr/bin/env python3
"""timeline_plot.py: draws a Chrome-trace timeline (HVD_TIMELINE=t.json, Horovod's format) as a
PNG or SVG image, for a terminal with no browser (an ssh session) and for the lab text.

One row per tensor (the trace's "process_name"), in the trace's order; each B/E span (or X event)
a bar: NEGOTIATE_ALLREDUCE light, ALLREDUCE mid, and inside it, dark and narrower, the pass that
moved the bytes: MPI_ALLREDUCE (the ring), SHM_ALLREDUCE (one host's shared window) or
CMA_ALLREDUCE (one host's ranks reading each other's buffers, a single copy); on a GPU
NCCL_ALLREDUCE, STAGED_GPU_ALLREDUCE or IPC_GPU_ALLREDUCE, and the MEMCPY_* copies around them,
lighter. It shows training step --step (1-based; default: a typical step, the one of median
length, or with --zoom of median allreduce phase) and the --steps-1 steps after it, a step being
one round of the gradient tensors' allreduces; --from-ms/--to-ms pick any window instead (ms
after the first event).

Usage: python3 tools/timeline_plot.py TIMELINE.json OUT.png|OUT.svg [--step N] [--steps K]
           [--zoom] [--from-ms A --to-ms B] [--title T]
Prints one line: what it drew. Needs python3-matplotlib (make timeline-image installs it).
"""
import argparse
import json
import sys

PHASE_COLOR = {
    "NEGOTIATE_ALLREDUCE": "#d9d9d9",
    "ALLREDUCE": "#6baed6",
    "MPI_ALLREDUCE": "#08519c",
    "SHM_ALLREDUCE": "#08519c",  # one host's ranks through a shared window (coll/shm.c)
    "CMA_ALLREDUCE": "#08519c",  # one host's ranks, a single cross-process copy (coll/cma.c)
    "SHM_REDUCE": "#08519c",  # the hierarchy's phases (coll/hier.c)
    "SHM_BROADCAST": "#08519c",
    "NCCL_ALLREDUCE": "#08519c",  # device tensors on NCCL (coll_gpu/nccl.c)
    "STAGED_GPU_ALLREDUCE": "#08519c",  # host-staged, summed on the GPUs (coll_gpu/staged_node.c)
    "IPC_GPU_ALLREDUCE": "#08519c",  # the same, the window on the GPUs (coll_gpu/ipc_window.c)
    "MEMCPY_IN_FUSION_BUFFER": "#9ecae1",
    "MEMCPY_OUT_FUSION_BUFFER": "#9ecae1",
    "MEMCPY_IN_HOST_BUFFER": "#9ecae1",  # host-staged: device to pinned host memory and back
    "MEMCPY_OUT_HOST_BUFFER": "#9ecae1",
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


def step_windows(rows, spans):
    """[(t0, t1)] in us, one per training step: a step starts where the first gradient tensor's
    row negotiates again and ends with the last gradient span that started before the next."""
    grad_rows = [p for p, n in rows if n.startswith("DistributedOptimizer.grads")]
    if not grad_rows:
        return []
    first, grad = grad_rows[0], set(grad_rows)
    starts = sorted(s[2] for s in spans if s[0] == first and s[1] == "NEGOTIATE_ALLREDUCE")
    out = []
    for i, t0 in enumerate(starts):
        t1 = starts[i + 1] if i + 1 < len(starts) else None
        ends = [s[3] for s in spans if s[0] in grad and s[2] >= t0 and (t1 is None or s[2] < t1)]
        out.append((t0, max(ends)))
    return out


def allreduce_start(spans, t0, t1):
    """The first ALLREDUCE start in [t0, t1] (the end of the wait for the other ranks), or t0."""
    return min((s[2] for s in spans if s[1] == "ALLREDUCE" and t0 <= s[2] <= t1), default=t0)


def pick_step(windows, step, steps, length):
    """(t0, t1, step): steps step..step+steps-1 (1-based); step 0: a typical one, of median
    length(t0, t1) among all but the first."""
    if step <= 0:
        cand = sorted(range(1, len(windows)) or [0], key=lambda i: length(*windows[i]))
        step = cand[len(cand) // 2] + 1
    step = max(1, min(step, len(windows) - steps + 1))
    last = windows[min(step + steps - 2, len(windows) - 1)]
    return windows[step - 1][0], last[1], step


def main():
    ap = argparse.ArgumentParser(description="draw an HVD_TIMELINE Chrome trace as PNG/SVG")
    ap.add_argument("timeline")
    ap.add_argument("out")
    ap.add_argument("--step", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--from-ms", type=float)
    ap.add_argument("--to-ms", type=float)
    ap.add_argument("--zoom", action="store_true",
                    help="start at the step's first ALLREDUCE: cut the negotiation (the wait for "
                    "the other ranks, long when one rank is slower)")
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
        windows = step_windows(rows, spans)
        if not windows:
            t0, t1 = origin, max(s[3] for s in spans)
            what = "the whole run (no gradient allreduces in it)"
        else:
            # Typical: the median whole step, or with --zoom the median allreduce phase (a
            # straggling rank stretches a step's negotiation; a descheduled one, its passes).
            def length(w0, w1):
                return w1 - (allreduce_start(spans, w0, w1) if a.zoom else w0)
            t0, t1, step = pick_step(windows, a.step, a.steps, length)
            what = f"training step {step}" + (f"-{step + a.steps - 1}" if a.steps > 1 else "")
            if a.zoom:
                t0 = allreduce_start(spans, t0, t1)
                what += "'s allreduces"
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
