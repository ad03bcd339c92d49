#!/usr/bin/python3
"""test_scaling_plot.py: tools/scaling_plot.py draws every kind of chapter 11's plots from real
outputs of the study (tests/fixtures/scaling-plots/: make scaling's CSVs, make ring-model's fit
and predictions, solution runs' stdout, a trace), and each SVG is checked with an XML parser:
it is SVG, it holds every series (by the id the tool gives it) with one vertex per data point,
bar heights in proportion to the CSV's times, and the axis labels. Bad input (an empty CSV, a
log with no progress lines, a missing file) must exit 1 with one line naming the file and write
no image.

Run: /usr/bin/python3 tests/plots/test_scaling_plot.py (make test-scaling-plots). Exits 77
(skipped) when Debian's python3-matplotlib is not installed.
"""
import csv
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "scaling_plot.py")
FIX = os.path.join(ROOT, "tests", "fixtures", "scaling-plots")
SVG = "{http://www.w3.org/2000/svg}"
failures = []


def check(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def draw(*args):
    """Runs the tool; returns (exit status, stdout + stderr)."""
    p = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, (p.stdout + p.stderr).strip()


def parse(path):
    """The SVG's tree, or None (and a failure) when it is not well-formed SVG."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        check(False, f"{os.path.basename(path)} parses as XML ({e})")
        return None
    check(root.tag == SVG + "svg", f"{os.path.basename(path)} is an SVG document (root <svg>)")
    return root


def series(root):
    """{id: element} of every element whose id starts with "series-"."""
    return {e.get("id"): e for e in root.iter() if (e.get("id") or "").startswith("series-")}


def vertices(elem):
    """Vertices of the first path inside elem (M and L commands of its d)."""
    for p in elem.iter(SVG + "path"):
        return len(re.findall(r"[ML]", p.get("d", "")))
    return 0


def texts(root):
    return {"".join(t.itertext()).strip() for t in root.iter(SVG + "text")}


def bar_height(elem):
    """Height of a bar: the spread of the y coordinates of its rectangle's path."""
    p = next(elem.iter(SVG + "path"))
    ys = [float(y) for y in re.findall(r"[ML] [-0-9.e]+ ([-0-9.e]+)", p.get("d", ""))]
    return max(ys) - min(ys)


def expect_drawn(out, rc, msg, kind):
    check(rc == 0, f"{kind}: exit 0 (got {rc}: {msg})")
    # The last line (matplotlib may warn above it on a first run, building its font cache).
    check(re.fullmatch(rf"scaling_plot: {re.escape(out)}: .+", msg.splitlines()[-1] if msg else "")
          is not None, f"{kind}: one line saying what it drew")
    return parse(out) if os.path.exists(out) else None


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_scaling(tmp):
    out = os.path.join(tmp, "scaling.svg")
    rc, msg = draw("scaling", FIX, os.path.join(FIX, "fit.txt"), out)
    root = expect_drawn(out, rc, msg, "scaling")
    if root is None:
        return
    rows = rows_of(os.path.join(FIX, "scaling.csv"))
    s = series(root)
    for mode in sorted({r["mode"] for r in rows}):
        n = sum(r["mode"] == mode for r in rows)
        for panel in ("speedup", "efficiency"):
            for kind in ("ideal", "measured", "fastest", "predicted"):
                gid = f"series-{mode}-{panel}-{kind}"
                check(gid in s and vertices(s[gid]) == n,
                      f"scaling: {gid} has {n} points (one per W; got "
                      f"{vertices(s[gid]) if gid in s else 'no such series'})")
    t = texts(root)
    for label in ("speedup", "efficiency", "workers W (ranks)"):
        check(label in t, f"scaling: axis label '{label}'")


def test_split(tmp):
    out = os.path.join(tmp, "split.svg")
    rc, msg = draw("split", FIX, out)
    root = expect_drawn(out, rc, msg, "split")
    if root is None:
        return
    s = series(root)
    for r in rows_of(os.path.join(FIX, "scaling.csv")):
        for part in ("compute", "comm"):
            gid = f"series-{r['mode']}-{part}-{r['ranks']}"
            check(gid in s, f"split: bar {gid}")
    # Within a panel, bars share a scale: heights in the CSV's proportions.
    for mode in ("strong", "weak"):
        rs = [r for r in rows_of(os.path.join(FIX, "scaling.csv")) if r["mode"] == mode]
        ids = [f"series-{mode}-compute-{r['ranks']}" for r in rs]
        if all(i in s for i in ids):
            h = [bar_height(s[i]) for i in ids]
            v = [float(r["compute_s"]) for r in rs]
            ok = all(abs(h[i] / h[0] - v[i] / v[0]) < 0.01 * v[i] / v[0] for i in range(len(v)))
            check(ok, f"split: {mode} compute bars in the proportions of compute_s "
                      f"({[round(x, 1) for x in h]} vs {v})")
    check("ms per step (median over rounds)" in texts(root), "split: axis label")


def test_predicted(tmp):
    out = os.path.join(tmp, "predicted.svg")
    path = os.path.join(FIX, "predicted.csv")
    rc, msg = draw("predicted", path, out)
    root = expect_drawn(out, rc, msg, "predicted")
    if root is None:
        return
    counts = {}
    for r in rows_of(path):
        counts[(r["model"], r["link"])] = counts.get((r["model"], r["link"]), 0) + 1
    s = series(root)
    for (model, link), n in counts.items():
        gid = f"series-{model}-{link}"
        check(gid in s and vertices(s[gid]) == n, f"predicted: {gid} has {n} points")
    check("workers W" in texts(root), "predicted: axis label 'workers W'")


def progress_lines(path):
    with open(path, errors="replace") as f:
        return sum(1 for line in f if re.match(r"^\s*\d+/\d+ \[.*loss: ", line))


def test_training(tmp):
    out = os.path.join(tmp, "training.svg")
    runs = [("ranks1.txt", "1 rank"), ("ranks2.txt", "2 ranks"), ("diverged.txt", "no warmup")]
    rc, msg = draw("training", out, *[f"{os.path.join(FIX, f)}:{label}" for f, label in runs])
    root = expect_drawn(out, rc, msg, "training")
    if root is None:
        return
    s = series(root)
    for f, label in runs:
        name = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")
        n = progress_lines(os.path.join(FIX, f))
        gid = f"series-{name}-loss"
        check(n > 0 and gid in s and vertices(s[gid]) == n,
              f"training: {gid} has {n} points (one per progress line)")
    check("series-no-warmup-diverged" in s, "training: the diverged run is marked where it stopped")
    check("series-1-rank-val-accuracy" in s, "training: validation accuracy of a finished run")
    t = texts(root)
    check("epoch" in t and "accuracy" in t, "training: axis labels 'epoch' and 'accuracy'")


def test_lr(tmp):
    out = os.path.join(tmp, "lr.svg")
    trace = os.path.join(FIX, "trace-rank-0.log")
    rc, msg = draw("lr", trace, out)
    root = expect_drawn(out, rc, msg, "lr")
    if root is None:
        return
    with open(trace) as f:
        n = sum(1 for line in f if line.startswith("event=step "))
    s = series(root)
    check("series-lr" in s and vertices(s["series-lr"]) == n, f"lr: one point per step ({n})")
    check("learning rate" in texts(root), "lr: axis label 'learning rate'")


def test_bad_input(tmp):
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    with open(os.path.join(FIX, "scaling.csv")) as f:
        header = f.readline()
    for name in ("scaling.csv", "raw.csv"):
        with open(os.path.join(empty, name), "w") as f:
            f.write(header if name == "scaling.csv" else "round,mode\n")
    empty_log = os.path.join(tmp, "empty.txt")
    with open(empty_log, "w") as f:
        f.write("Model wrn-16-1: 175338 trainable parameters.\n")
    cases = [
        (["scaling", empty, os.path.join(FIX, "fit.txt")], os.path.join(empty, "scaling.csv"),
         "no data rows"),
        (["split", empty], os.path.join(empty, "scaling.csv"), "no data rows"),
        (["predicted", os.path.join(empty, "scaling.csv")], os.path.join(empty, "scaling.csv"),
         "no data rows"),
        (["training"], empty_log, "no progress lines"),
        (["lr", empty_log], empty_log, "no event=step lines"),
        (["split", os.path.join(tmp, "missing")], os.path.join(tmp, "missing", "scaling.csv"),
         "No such file"),
    ]
    for args, named, words in cases:
        out = os.path.join(tmp, "bad.svg")
        if args[0] == "training":
            argv = ["training", out, f"{empty_log}:empty"]
        else:
            argv = args + [out]
        rc, msg = draw(*argv)
        last = msg.splitlines()[-1] if msg else ""
        check(rc == 1 and "Traceback" not in msg and last.startswith("scaling_plot: ")
              and named in last and words in last and not os.path.exists(out),
              f"{args[0]} of {os.path.relpath(named, tmp)}: exit 1, one line naming it "
              f"('{words}'), no image (got {rc}: {msg[-200:]!r})")
        if os.path.exists(out):
            os.remove(out)


def main():
    probe = subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True)
    if probe.returncode != 0:
        print("test_scaling_plot: skipped: no matplotlib for "
              f"{sys.executable} (sh tools/setup.sh python3-matplotlib)")
        return 77
    with tempfile.TemporaryDirectory(prefix="hvdlab-plots-") as tmp:
        for t in (test_scaling, test_split, test_predicted, test_training, test_lr,
                  test_bad_input):
            print(f"== {t.__name__}")
            t(tmp)
    print(f"test_scaling_plot: {'FAILED, ' + str(len(failures)) + ' checks' if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
