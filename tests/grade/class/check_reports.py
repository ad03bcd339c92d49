#!/usr/bin/python3
"""check_reports.py: the class mode's reports read back as their readers read them, compared
with the expected verdicts.

  gradebook.csv   python's csv reader: the columns tools/grade_report.py documents, each
                  student's points and states, total = the sum, max = 10 a step
  results.json    against the fields Gradescope publishes for run_autograder's output
                  (gradescope-autograders.readthedocs.io, "Autograder Specifications"): only
                  known keys, their types and allowed values, score = the tests' sum
  junit.xml       parsed by xml.etree (xmllint --schema junit.xsd is run by report_test.sh):
                  a testsuite per student, a testcase per step, <failure type=STATE> iff not pass
  index.html      parsed by html.parser: no script, no event handler, no link out of OUT; the
                  grid's cells hold each step's state and points

Each verdict's message must come back from results.json exactly (the hostile student's text
quotes markup, quotes, control characters).
Usage: check_reports.py OUT EXPECTED [--page DOM]   (--page: only the grid, of DOM; EXPECTED:
id<TAB>step<TAB>state<TAB>points<TAB>flags, flags "-" or texts joined by "|", each a flag the
step must carry, or with a leading "!" one it must not)
Prints one line per problem and "reports: N checks, N failed"; exit 1 when any failed.
"""
import csv
import html.parser
import json
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tools"))
import grade_report  # noqa: E402  (the verdicts' reader, to compare messages)

TOP = {"score": (int, float), "execution_time": (int, float), "output": str,
       "output_format": str, "test_output_format": str, "test_name_format": str,
       "visibility": str, "stdout_visibility": str, "extra_data": dict, "tests": list,
       "leaderboard": list}
TEST = {"score": (int, float), "max_score": (int, float), "status": str, "name": str,
        "name_format": str, "number": str, "output": str, "output_format": str, "tags": list,
        "visibility": str, "extra_data": dict}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}

checks = 0
failed = 0


def check(ok, what):
    global checks, failed
    checks += 1
    if not ok:
        failed += 1
        print(f"reports: WRONG: {what}")


def read_expected(path):
    want = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            sid, step, state, points, flag = line.rstrip("\n").split("\t")
            want.setdefault(sid, {})[step] = (state, int(points), [] if flag == "-" else flag.split("|"))
    return want


def check_csv(out, want):
    with open(os.path.join(out, "gradebook.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    check(sorted(r["id"] for r in rows) == sorted(want), f"gradebook.csv ids {[r['id'] for r in rows]}")
    for r in rows:
        steps = want.get(r["id"], {})
        for n, (state, points, flag) in steps.items():
            check(r.get(f"step{n}_state") == state and r.get(f"step{n}_points") == str(points),
                  f"gradebook.csv {r['id']} step {n}: {r.get(f'step{n}_state')} "
                  f"{r.get(f'step{n}_points')}, expected {state} {points}")
            for f in flag:
                check((f[1:] not in r["flags"]) if f.startswith("!") else (f in r["flags"]),
                      f"gradebook.csv {r['id']} step {n}: flag {f!r} vs {r['flags']!r}")
        total = sum(p for _, p, _ in steps.values())
        check(r["total"] == str(total) and r["max"] == str(10 * len(steps)),
              f"gradebook.csv {r['id']}: total {r['total']}/{r['max']}, expected {total}/{10 * len(steps)}")
        for k in ("seconds", "commit", "seed"):
            check(r.get(k, "") != "", f"gradebook.csv {r['id']}: column {k} empty")


def check_types(obj, spec, where):
    for k, v in obj.items():
        check(k in spec, f"{where}: key {k!r} is not one of Gradescope's")
        if k in spec:
            check(isinstance(v, spec[k]) and not isinstance(v, bool), f"{where}: {k} is {type(v).__name__}")


def check_json(out, sid, steps, verdicts):
    with open(os.path.join(out, sid, "results.json"), encoding="utf-8") as f:
        doc = json.load(f)
    where = f"{sid}/results.json"
    check_types(doc, TOP, where)
    check(doc.get("visibility", "visible") in VISIBILITY, f"{where}: visibility {doc.get('visibility')}")
    check(doc.get("stdout_visibility", "hidden") in VISIBILITY, f"{where}: stdout_visibility")
    tests = doc.get("tests", [])
    check(len(tests) == len(steps), f"{where}: {len(tests)} tests, expected {len(steps)}")
    check(doc.get("score") == sum(t.get("score", 0) for t in tests), f"{where}: score is not the tests' sum")
    for t, (n, (state, points, flag)) in zip(tests, sorted(steps.items())):
        check_types(t, TEST, f"{where} test {n}")
        check(t.get("visibility", "visible") in VISIBILITY, f"{where} test {n}: visibility")
        check(all(isinstance(x, str) for x in t.get("tags", [])), f"{where} test {n}: tags")
        check(t.get("number") == str(int(n)) and t.get("name", "").startswith(f"step {n}:"),
              f"{where}: test {t.get('number')} {t.get('name')!r} where step {n} was expected")
        check(t.get("status") == ("passed" if state == "pass" else "failed"),
              f"{where} test {n}: status {t.get('status')}, state {state}")
        check(t.get("score") == points and t.get("max_score") == 10,
              f"{where} test {n}: {t.get('score')}/{t.get('max_score')}, expected {points}/10")
        msg = verdicts[n]["message"]
        check(msg in t.get("output", ""), f"{where} test {n}: the grader's message is not in output")
        for f in flag:
            out = t.get("output", "")
            check((f[1:] not in out) if f.startswith("!") else (f in out), f"{where} test {n}: flag {f!r}")


def check_junit(out, sid, steps, verdicts):
    where = f"{sid}/junit.xml"
    root = ET.parse(os.path.join(out, sid, "junit.xml")).getroot()
    suites = root.findall("testsuite") if root.tag == "testsuites" else [root]
    check(len(suites) == 1 and suites[0].get("name") == sid, f"{where}: not one testsuite named {sid}")
    cases = suites[0].findall("testcase")
    check(len(cases) == len(steps), f"{where}: {len(cases)} testcases, expected {len(steps)}")
    nfail = 0
    for c, (n, (state, _, _)) in zip(cases, sorted(steps.items())):
        fl = c.find("failure")
        check(c.get("name", "").startswith(f"step {n}:"), f"{where}: testcase {c.get('name')!r}")
        check((fl is None) == (state == "pass"), f"{where} step {n}: failure element vs state {state}")
        if fl is not None:
            nfail += 1
            check(fl.get("type") == state, f"{where} step {n}: failure type {fl.get('type')}")
            want = grade_report.xml_text(verdicts[n]["message"])
            check(want in (fl.text or ""), f"{where} step {n}: the message is not in <failure>")
            check(bool(fl.get("message")), f"{where} step {n}: <failure> has no message (the hint)")
    check(suites[0].get("failures") == str(nfail), f"{where}: failures={suites[0].get('failures')}, counted {nfail}")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.bad = []
        self.cells = {}  # (id, step) -> (state, points)
        self.row = None
        self.titles = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "iframe", "object", "embed", "img", "form"):
            self.bad.append(f"<{tag}>")
        for k, v in attrs:
            if k.startswith("on") or (k in ("href", "src") and (v or "").strip().lower().startswith(("javascript:", "http", "/", ".."))):
                self.bad.append(f"{tag} {k}={v!r}")
        if tag == "tr":
            self.row = a.get("data-id")
        if tag == "td" and self.row is not None and "data-state" in a:
            self.cells[(self.row, a.get("data-step"))] = (a["data-state"], a.get("data-points"))
            self.titles[(self.row, a.get("data-step"))] = a.get("title")


def check_html(out, want, page):
    """The grid of page (index.html, or the DOM a browser rendered from it): each cell's state,
    points and title (the hint a hover shows, the flags after it) as the verdicts say."""
    p = Page()
    with open(page, encoding="utf-8") as f:
        p.feed(f.read())
    where = os.path.basename(page)
    check(not p.bad, f"{where}: active content: {p.bad[:3]}")
    check(len({k[0] for k in p.cells}) == len(want), f"{where}: {len({k[0] for k in p.cells})} rows in the grid, expected {len(want)}")
    for sid, steps in want.items():
        verdicts = {v["step"]: v for v in grade_report.read_verdicts(os.path.join(out, sid, "verdicts.tsv"))}
        for n, (state, points, flag) in steps.items():
            got = p.cells.get((sid, n))
            check(got == (state, str(points)), f"{where} {sid} step {n}: {got}, expected {state} {points}")
            title = p.titles.get((sid, n)) or ""
            hint = grade_report.hint_of(verdicts[n]) if state != "pass" else "pass"
            check(title.startswith(hint), f"{where} {sid} step {n}: title {title[:60]!r}, expected the hint {hint[:60]!r}")
            for f in flag:
                check((f[1:] not in title) if f.startswith("!") else (f in title),
                      f"{where} {sid} step {n}: flag {f!r} vs the title {title[:80]!r}")


def main():
    out, expected = sys.argv[1], sys.argv[2]
    want = read_expected(expected)
    if len(sys.argv) == 5 and sys.argv[3] == "--page":  # only the grid of a rendered DOM
        check_html(out, want, sys.argv[4])
        print(f"page: {checks} checks, {failed} failed")
        return 1 if failed else 0
    check_csv(out, want)
    for sid, steps in want.items():
        verdicts = {v["step"]: v for v in grade_report.read_verdicts(os.path.join(out, sid, "verdicts.tsv"))}
        check_json(out, sid, steps, verdicts)
        check_junit(out, sid, steps, verdicts)
    check_html(out, want, os.path.join(out, "index.html"))
    print(f"reports: {checks} checks, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
