#!/bin/sh
# grade_report.sh OUT — the class mode's reports (results.json and junit.xml per student,
# gradebook.csv and index.html for the class) from the runner's verdicts; see grade_report.py.
# What it reads, written by tools/grade_class.sh:
#   OUT/<id>/verdicts.tsv  header "step state points max seconds warnings flags message" (tabs),
#                          a line per graded step; state: pass, fail, not-submitted, no-compile,
#                          timeout, not-graded; flags joined by "; "; in message a newline is
#                          written \n and a backslash \\
#   OUT/<id>/meta.tsv      key<TAB>value: id, seed, commit, sandbox, seconds, started
# Exit 0; 3 when some student has no verdicts yet (only gradebook.partial.csv); 1 on bad input.
[ -x /usr/bin/python3 ] || sh "$(dirname "$0")/setup.sh" python3 >&2 || exit 1
exec /usr/bin/python3 "$(dirname "$0")/grade_report.py" "$@"
