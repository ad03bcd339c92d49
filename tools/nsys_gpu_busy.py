#!/usr/bin/env python3
"""nsys_gpu_busy.py — what limits a training step on the GPU, from an Nsight Systems capture.

make bench-train-gpu-nsys profiles bench/train_speed_gpu's timed steps (the program brackets them
with cudaProfilerStart/Stop; nsys captures that range alone) and exports the report to SQLite;
this reads the GPU activity tables of that export and prints, per training step:

  - the span (first GPU activity's start to the last one's end) and how much of it the GPU was
    busy: the union of kernel, copy and memset intervals, overlaps counted once. The idle rest is
    the GPU waiting for the host: kernel launches, the loss coming back, host work between steps;
  - the kernels: how many, their summed time, and the largest by summed time (name, ms a step,
    share of the span, launches a step);
  - the memory copies (host to device, device to host, on the device): time and bytes a step.

Tables read (Nsight Systems' SQLite export schema): CUPTI_ACTIVITY_KIND_KERNEL (start, end,
shortName -> StringIds), CUPTI_ACTIVITY_KIND_MEMCPY (start, end, bytes),
CUPTI_ACTIVITY_KIND_MEMSET (start, end); a missing copy or memset table means none happened.

Usage: nsys_gpu_busy.py REPORT.sqlite --steps N [--label TEXT] [--top K]
Exit 1 with one line when the export has no kernels (nothing was captured).
"""
import argparse
import sqlite3
import sys

PREFIX = "bench-train-gpu-nsys:"


def table_exists(db, name):
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                     (name,)).fetchone()
    return row is not None


def rows(db, table, query):
    """query's rows, or none when the export has no such table (nothing of that kind ran)."""
    return db.execute(query).fetchall() if table_exists(db, table) else []


def union_ns(spans):
    """Length of the union of [start, end) intervals: overlaps (streams) count once."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sqlite")
    ap.add_argument("--steps", type=int, required=True, help="training steps captured")
    ap.add_argument("--label", default="", help="what was profiled, e.g. 'wrn-16-4 batch 512'")
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    if a.steps < 1:
        sys.exit(f"{PREFIX} --steps {a.steps}: expected a positive number of steps")
    try:
        db = sqlite3.connect(f"file:{a.sqlite}?mode=ro", uri=True)
        kernels = rows(db, "CUPTI_ACTIVITY_KIND_KERNEL",
                       "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                       "JOIN StringIds AS s ON s.id = k.shortName")
        copies = rows(db, "CUPTI_ACTIVITY_KIND_MEMCPY",
                      "SELECT start, end, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY")
        memsets = rows(db, "CUPTI_ACTIVITY_KIND_MEMSET",
                       "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET")
    except sqlite3.Error as e:
        sys.exit(f"{PREFIX} {a.sqlite}: {e}")
    label = f" {a.label}" if a.label else ""
    if not kernels:
        sys.exit(f"{PREFIX}{label}: no kernels in {a.sqlite} (was the range between "
                 "cudaProfilerStart and cudaProfilerStop captured?)")
    spans = [(s, e) for s, e, _ in kernels] + [(s, e) for s, e, _ in copies] + list(memsets)
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    n = a.steps

    def ms(ns):  # per step, in ms
        return ns / 1e6 / n

    span, busy = max(last - first, 1), union_ns(spans)
    kern_ns = sum(e - s for s, e, _ in kernels)
    by_name = {}
    for s, e, name in kernels:
        t = by_name.setdefault(name, [0, 0])
        t[0] += e - s
        t[1] += 1
    copy_ns = sum(e - s for s, e, _ in copies)
    copy_bytes = sum(b for _, _, b in copies)
    print(f"{PREFIX}{label}: {n} steps; a step spans {ms(span):.2f} ms on the GPU, busy "
          f"{ms(busy):.2f} ms ({100.0 * busy / span:.1f} %), idle {ms(span - busy):.2f} ms "
          f"(waiting for the host: launches, the loss coming back)")
    print(f"{PREFIX}{label}: kernels {len(kernels) / n:.0f} a step, {ms(kern_ns):.2f} ms summed "
          f"(mean {kern_ns / len(kernels) / 1e3:.1f} us each); memory copies "
          f"{ms(copy_ns):.3f} ms, {copy_bytes / n / 2**20:.2f} MiB a step")
    top = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:a.top]
    for name, (t, calls) in top:
        print(f"{PREFIX}{label}:   {ms(t):7.3f} ms {100.0 * t / span:5.1f} % "
              f"{calls / n:4.0f}x {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
