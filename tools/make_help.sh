#!/bin/sh
# make_help.sh — `make help`: every target with a `## ` comment in the Makefile and mk/*.mk,
# grouped by who asks: the student's loop first, then the instructor's, tests, benchmarks, the
# GPU, and the rest. A target's group comes from its name (the patterns below), so a new target
# needs no tag: one that fits no pattern is listed under "everything else", never left out.
# Usage: sh tools/make_help.sh Makefile mk/*.mk
set -u
grep -hE '^[a-zA-Z0-9_%-]+:.*## ' "$@" | sed -E 's/^([^:]+):.*## (.*)/\1\t\2/' | awk -F'\t' '
function group(t) {
    if (t ~ /^(grade|demo|check|lab|check-steps|progress-demo|timeline-image)$/) return 1
    if (t ~ /^grade-class/ || t ~ /^lab-images$/) return 2
    if (t ~ /gpu|^cuda-check$/) return 5
    if (t ~ /^bench|^scaling|^ring-model$|^warmup-experiment$/) return 4
    if (t == "check-build" || t == "tests") return 6
    if (t ~ /test|^check-|^asan-|^fuzz-|^faults-doc$|^lab-(graders|planted)$/) return 3
    return 6
}
BEGIN {
    title[1] = "Student: the lab loop (per step NN = 01..10: make stepNN, diffNN, gradeNN)"
    title[2] = "Instructor"
    title[3] = "Tests and checks"
    title[4] = "Benchmarks and studies"
    title[5] = "GPU (on a machine with an NVIDIA GPU; docs/gpu.md)"
    title[6] = "Everything else"
}
# the student group in the order of the loop: grade, demo, check, then the rest as they come
function order(t) { return t == "grade" ? 1 : t == "demo" ? 2 : t == "check" ? 3 : 9 }
{
    g = group($1); k = n[g]++ + 1
    # stable insertion by order()
    while (k > 1 && order($1) < key[g, k - 1]) {
        line[g, k] = line[g, k - 1]; key[g, k] = key[g, k - 1]; k--
    }
    line[g, k] = sprintf("  %-18s %s", $1, $2); key[g, k] = order($1)
}
END {
    first = 1
    for (g = 1; g <= 6; g++) {
        if (!n[g] && g != 1) continue
        if (!first) print ""
        first = 0
        print title[g] ":"
        if (g == 1) {
            print "  stepNN             build ./stepNN from your steps/stepNN.c"
            print "  diffNN             what is still different from solutions/stepNN.c"
            print "  gradeNN            build ./stepNN and run its grader"
            print "  solutionNN         build the finished program of step NN as ./solutionNN"
        }
        for (i = 1; i <= n[g]; i++) print line[g, i]
    }
    print ""
    print "Variables: CUDA=1 (GPU build), SANITIZE=1 (ASan+UBSan build), STEP=NN (make check);"
    print "the environment variables the kit reads: docs/api.md."
}'
