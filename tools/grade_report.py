#!/usr/bin/python3
"""grade_report.py: the class mode's results, written from the runner's verdicts.

Reads OUT/<id>/verdicts.tsv and OUT/<id>/meta.tsv (tools/grade_class.sh writes them; the format
is in tools/grade_report.sh) and writes, each to a temporary file renamed into place:
  OUT/<id>/results.json  Gradescope's autograder results (score, execution_time, output, tests[])
  OUT/<id>/junit.xml     a testsuite per student, a testcase per step, the hint in <failure>
  OUT/gradebook.csv      id, total, max, points and state per step, flags, seconds, commit, seed
  OUT/index.html         a students x steps grid, per step the pass count and the commonest hints
The messages quote the students' output, so every text is escaped by the format's own library
(json, csv, xml.etree, html); the page also forbids scripts (Content-Security-Policy).
The two class files are written only when every student folder has its verdicts: otherwise
OUT/gradebook.partial.csv is written, an older gradebook.csv and index.html are removed, and the
exit status is 3. Bad input: one line naming the file, exit 1.

Usage: python3 tools/grade_report.py OUT
"""
import collections
import csv
import html
import io
import json
import os
import re
import sys
import urllib.parse
import xml.etree.ElementTree as ET

STATES = ("pass", "fail", "not-submitted", "no-compile", "timeout", "not-graded")
COLUMNS = ["step", "state", "points", "max", "seconds", "warnings", "flags", "message"]
ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_FILE = 4 << 20  # a verdicts file is a few KiB; refuse anything absurd
# XML 1.0 cannot hold these characters even escaped; a student's output may.
XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class BadInput(Exception):
    pass


def read_text(path):
    """The file's text, not following a link; BadInput names the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise BadInput(f"{path}: larger than {MAX_FILE} bytes")
    return data.decode("utf-8", errors="replace")


def unescape(s):
    """The runner's message escapes: \\n is a newline, \\\\ a backslash; any other backslash
    stays as it is."""
    return re.sub(r"\\([n\\])", lambda m: "\n" if m.group(1) == "n" else "\\", s)


def read_verdicts(path):
    lines = read_text(path).split("\n")
    if lines[0].rstrip("\r").split("\t") != COLUMNS:
        raise BadInput(f"{path}: the first line is not the header {'<TAB>'.join(COLUMNS)}")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        f = line.rstrip("\r").split("\t")
        if len(f) != len(COLUMNS):
            raise BadInput(f"{path}:{n}: {len(f)} fields, expected {len(COLUMNS)}")
        v = dict(zip(COLUMNS, f))
        try:
            if not re.fullmatch(r"\d\d", v["step"]) or v["state"] not in STATES:
                raise ValueError
            v["points"], v["max"], v["warnings"] = int(v["points"]), int(v["max"]), int(v["warnings"])
            v["seconds"] = float(v["seconds"])
            if not 0 <= v["points"] <= v["max"] or v["warnings"] < 0 or v["seconds"] < 0:
                raise ValueError
        except ValueError:
            raise BadInput(f"{path}:{n}: a step, state, number or points out of range: {line[:80]!r}") from None
        v["message"] = unescape(v["message"])
        v["flags"] = [x for x in v["flags"].split("; ") if x]
        rows.append(v)
    if not rows:
        raise BadInput(f"{path}: no step graded")
    return rows


def read_meta(path):
    meta = {}
    if os.path.lexists(path):
        for line in read_text(path).split("\n"):
            k, sep, v = line.rstrip("\r").partition("\t")
            if sep:
                meta[k] = v
    return meta


def step_titles(kit):
    """The steps' titles from the graders' own table (tests/grade/grade_checks.c)."""
    try:
        src = read_text(os.path.join(kit, "tests/grade/grade_checks.c"))
    except BadInput:
        return {}
    table = re.search(r"grade_step_titles\[[^]]*\]\s*=\s*\{(.*?)\};", src, re.S)
    if not table:
        return {}
    return {f"{i:02d}": t for i, t in enumerate(re.findall(r'"([^"]*)"', table.group(1)))}


def hint_of(v):
    """The line a student reads first: the hint when the message has one, else its first line."""
    lines = [x.strip() for x in v["message"].split("\n") if x.strip()]
    for x in lines:
        if x.startswith("Hint:"):
            return x
    if lines:
        return lines[0]
    return {"not-submitted": "not submitted", "no-compile": "does not compile",
            "timeout": "timed out", "not-graded": "not graded"}.get(v["state"], v["state"])


def points_story(v):
    p = v["points"]
    parts = [f"compiles {1 if p >= 1 else 0}/1", f"runs to the end {2 if p >= 3 else 0}/2",
             f"behaviour {7 if p >= 10 else 0}/7"]
    s = f"{v['state']}: {p} of {v['max']} points ({', '.join(parts)})"
    if v["warnings"]:
        s += f"; {v['warnings']} compiler warning(s), not charged"
    return s


def test_output(v):
    out = points_story(v)
    if v["flags"]:
        out += "\nFlagged for review (points unchanged): " + "; ".join(v["flags"])
    if v["message"]:
        out += "\n" + v["message"]
    return out


def write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def student_summary(sid, rows, meta):
    total = sum(v["points"] for v in rows)
    most = sum(v["max"] for v in rows)
    flagged = [f"step {v['step']}: {x}" for v in rows for x in v["flags"]]
    s = (f"hvdlab class grading of {sid}: {total} of {most} points. "
         f"Graded with kit commit {meta.get('commit', 'unknown')}, seed {meta.get('seed', '?')}.")
    if flagged:
        s += "\nFlagged for review (points unchanged):\n" + "\n".join(flagged)
    return total, most, s


def results_json(sid, rows, meta, titles):
    total, _, summary = student_summary(sid, rows, meta)
    try:
        seconds = float(meta.get("seconds", ""))
    except ValueError:
        seconds = sum(v["seconds"] for v in rows)
    tests = []
    for v in rows:
        tags = [v["state"]] + (["flagged"] if v["flags"] else []) + (["warnings"] if v["warnings"] else [])
        tests.append({"score": v["points"], "max_score": v["max"],
                      "status": "passed" if v["state"] == "pass" else "failed",
                      "name": f"step {v['step']}: {titles.get(v['step'], 'lab step')}",
                      "number": str(int(v["step"])), "output": test_output(v), "tags": tags,
                      "visibility": "visible"})
    doc = {"score": total, "execution_time": int(round(seconds)), "output": summary,
           "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}
    return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"


def xml_text(s):
    return XML_BAD.sub("\ufffd", s)


def junit_xml(sid, rows, meta, titles):
    fails = sum(v["state"] != "pass" for v in rows)
    suite = ET.Element("testsuite", name=xml_text(sid), tests=str(len(rows)), failures=str(fails),
                       errors="0", skipped="0", time=f"{sum(v['seconds'] for v in rows):.3f}")
    props = ET.SubElement(suite, "properties")
    for k in ("seed", "commit", "sandbox", "started"):
        ET.SubElement(props, "property", name=k, value=xml_text(meta.get(k, "")))
    for v in rows:
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"hvdlab.{sid}"),
                             name=xml_text(f"step {v['step']}: {titles.get(v['step'], 'lab step')}"),
                             time=f"{v['seconds']:.3f}")
        if v["state"] != "pass":
            fl = ET.SubElement(case, "failure", message=xml_text(hint_of(v)), type=v["state"])
            fl.text = xml_text(test_output(v))
        else:
            ET.SubElement(case, "system-out").text = xml_text(test_output(v))
    root = ET.Element("testsuites", name="hvdlab", tests=str(len(rows)), failures=str(fails),
                      errors="0")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def csv_cell(s):
    """A text cell a spreadsheet will not run as a formula (OWASP's CSV injection advice)."""
    s = str(s)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def gradebook_csv(students, steps):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["id", "total", "max"]
    for n in steps:
        head += [f"step{n}_points", f"step{n}_state"]
    w.writerow(head + ["flags", "seconds", "commit", "seed"])
    for sid, rows, meta in students:
        by = {v["step"]: v for v in rows}
        total, most, _ = student_summary(sid, rows, meta)
        row = [csv_cell(sid), total, most]
        for n in steps:
            v = by.get(n)
            row += [v["points"], v["state"]] if v else ["", ""]
        flags = "; ".join(f"step {v['step']}: {x}" for v in rows for x in v["flags"])
        row += [csv_cell(flags), meta.get("seconds", ""), csv_cell(meta.get("commit", "unknown")),
                csv_cell(meta.get("seed", ""))]
        w.writerow(row)
    return buf.getvalue()


MARK = {"pass": "pass", "fail": "fail", "not-submitted": "missing", "no-compile": "no compile",
        "timeout": "timeout", "not-graded": "not graded"}
STYLE = """body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}
td,th{border:1px solid #999;padding:2px 6px;text-align:center}th.id,td.id{text-align:left}
td.pass{background:#cfc}td.fail,td.timeout,td.no-compile{background:#fcc}
td.not-submitted,td.not-graded{background:#eee}td.flagged{outline:3px solid #e90}
td.hints{text-align:left;vertical-align:top;font-size:small;min-width:12em;max-width:18em}"""


def index_html(students, steps, titles, meta0):
    e = html.escape
    rows_html = []
    hints = {n: collections.Counter() for n in steps}
    passes = collections.Counter()
    for sid, rows, meta in students:
        by = {v["step"]: v for v in rows}
        total, most, _ = student_summary(sid, rows, meta)
        cells = [f'<td class="id">{e(sid)}</td>']
        for n in steps:
            v = by.get(n)
            if not v:
                cells.append(f'<td class="not-graded" data-step="{n}" data-state="none">-</td>')
                continue
            passes[n] += v["state"] == "pass"
            if v["state"] != "pass":
                hints[n][hint_of(v)] += 1
            title = hint_of(v) if v["state"] != "pass" else "pass"
            if v["flags"]:
                title += "\nflagged: " + "; ".join(v["flags"])
            cls = v["state"] + (" flagged" if v["flags"] else "")
            log = urllib.parse.quote(f"{sid}/step{n}.log")
            cells.append(f'<td class="{cls}" data-step="{n}" data-state="{v["state"]}" data-points="{v["points"]}" '
                         f'title="{e(title)}"><a href="{log}">{e(MARK[v["state"]])} '
                         f'{v["points"]}</a>{" &#9873;" if v["flags"] else ""}</td>')
        cells.append(f'<td class="total">{total}/{most}</td>')
        rows_html.append(f'<tr data-id="{e(sid)}">' + "".join(cells) + "</tr>")
    n_students = len(students)
    foot = ['<th class="id">passed</th>']
    foot += [f'<td class="passcount" data-step="{n}">{passes[n]}/{n_students}</td>' for n in steps]
    hint_cells = ['<th class="id">commonest failures</th>']
    for n in steps:
        items = "".join(f"<li>{c}&times; {e(h)}</li>" for h, c in hints[n].most_common(3))
        hint_cells.append(f'<td class="hints" data-step="{n}"><ul>{items}</ul></td>')
    head = "".join(f'<th title="{e(titles.get(n, ""))}">{n}</th>' for n in steps)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>hvdlab class results</title><style>{STYLE}</style></head><body>
<h1>hvdlab class results</h1>
<p>{n_students} students, kit commit {e(meta0.get("commit", "unknown"))}, seed {e(meta0.get("seed", "?"))}.
Each cell: the step's state and points (of 10); its hint on hover; a click opens the log.
&#9873; = flagged for review (points unchanged).</p>
<table id="grid"><thead><tr><th class="id">student</th>{head}<th>total</th></tr></thead>
<tbody>
{chr(10).join(rows_html)}
</tbody><tfoot><tr>{"".join(foot)}<td></td></tr><tr>{"".join(hint_cells)}<td></td></tr></tfoot>
</table></body></html>
"""


def main(argv):
    if len(argv) != 2:
        print("usage: grade_report.py OUT", file=sys.stderr)
        return 2
    out = argv[1]
    if not os.path.isdir(out):
        print(f"grade_report: {out}: not a folder", file=sys.stderr)
        return 1
    kit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    titles = step_titles(kit)
    students, missing = [], []
    try:
        for sid in sorted(os.listdir(out)):
            d = os.path.join(out, sid)
            if not ID_RE.match(sid) or os.path.islink(d) or not os.path.isdir(d):
                continue
            vpath = os.path.join(d, "verdicts.tsv")
            if not os.path.lexists(vpath):
                missing.append(sid)
                continue
            rows, meta = read_verdicts(vpath), read_meta(os.path.join(d, "meta.tsv"))
            students.append((sid, rows, meta))
            write_atomic(os.path.join(d, "results.json"), results_json(sid, rows, meta, titles))
            write_atomic(os.path.join(d, "junit.xml"), junit_xml(sid, rows, meta, titles))
    except BadInput as ex:
        print(f"grade_report: {ex}", file=sys.stderr)
        return 1
    if not students and not missing:
        print(f"grade_report: {out}: no student folders", file=sys.stderr)
        return 1
    steps = sorted({v["step"] for _, rows, _ in students for v in rows})
    book = os.path.join(out, "gradebook.csv")
    page = os.path.join(out, "index.html")
    if missing:
        for p in (book, page):
            if os.path.lexists(p):
                os.unlink(p)
        write_atomic(os.path.join(out, "gradebook.partial.csv"), gradebook_csv(students, steps))
        print(f"grade_report: PARTIAL: {len(missing)} of {len(missing) + len(students)} students "
              f"have no verdicts yet ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); "
              f"wrote {out}/gradebook.partial.csv, no gradebook.csv or index.html")
        return 3
    partial = os.path.join(out, "gradebook.partial.csv")
    if os.path.lexists(partial):
        os.unlink(partial)
    write_atomic(book, gradebook_csv(students, steps))
    write_atomic(page, index_html(students, steps, titles, students[0][2]))
    print(f"grade_report: {len(students)} students: {book}, {page}, and each student's "
          f"results.json and junit.xml")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
