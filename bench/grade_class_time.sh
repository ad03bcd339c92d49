#!/bin/sh
# bench/grade_class_time.sh [N] [STEPS] [JOBS] — time make grade-class on a class of N students
# (default 30) built from the fixtures, with the sandbox and without it (GRADE_NO_SANDBOX=1, a
# test knob), one run each, the order alternating with N's parity. The class cycles through five
# kinds: the solutions, the untouched exercises, a solution with one planted mistake per step
# (tests/grade/planted/), steps 01-05 only, and a hostile step 01 (of tests/grade/hostile/, only
# those harmless without the sandbox: the run without it would let the others loose). Prints
# the class's total and the mean per student. STEPS defaults to all ten, JOBS to 1. Root.
set -u
cd "$(dirname "$0")/.." || exit 2
n=${1:-30} steps=${2:-01 02 03 04 05 06 07 08 09 10} jobs=${3:-1}
W=$(mktemp -d /tmp/hvdlab-class-time.XXXXXX)
trap 'rm -rf "$W"' EXIT
hostile=$(ls tests/grade/hostile/fake_pass.c tests/grade/hostile/trace_forger.c \
           tests/grade/hostile/sleep_forever.c tests/grade/hostile/spin.c tests/grade/hostile/env_dump.c)
for i in $(seq "$n"); do
    d="$W/subs/student$(printf %02d "$i")"
    mkdir -p "$d"
    case $((i % 5)) in
    1) cp solutions/step*.c "$d/" ;;
    2) mkdir -p "$d/steps" && cp steps/step*.c "$d/steps/" ;;
    3) cp solutions/step*.c "$d/"
       for p in tests/grade/planted/*.patch; do
           s=$(basename "$p" | cut -c1-6)
           [ -f "$d/.$s" ] && continue
           patch -s -o "$d/$s.c.new" "solutions/$s.c" "$p" && mv "$d/$s.c.new" "$d/$s.c" && : >"$d/.$s"
       done
       rm -f "$d"/.step* ;;
    4) for s in 01 02 03 04 05; do cp "solutions/step$s.c" "$d/"; done ;;
    0) k=$(( (i / 5) % $(echo "$hostile" | wc -l) + 1 ))
       cp solutions/step*.c "$d/" && cp "$(echo "$hostile" | sed -n "${k}p")" "$d/step01.c" ;;
    esac
done
run() { # label, then env settings
    label=$1; shift
    rm -rf "$W/out"
    a=$(date +%s.%N)
    env "$@" GRADE_CFLAGS="$(pkg-config --cflags openblas zlib)" \
        GRADE_LDLIBS="$(pkg-config --libs openblas zlib) $( [ -f /usr/include/oneapi/dnnl/dnnl.h ] && echo -ldnnl) -lm" \
        sh tools/grade_class.sh --submissions "$W/subs" --out "$W/out" --steps "$steps" --jobs "$jobs" \
        >"$W/$label.log" 2>&1
    b=$(date +%s.%N)
    awk -v a="$a" -v b="$b" -v n="$n" -v l="$label" \
        'BEGIN { printf "%-12s %d students: %6.0f s in all, %5.1f s a student\n", l, n, b - a, (b - a) / n }'
    cat "$W"/out/*/verdicts.tsv | awk -F'\t' '$2 == "pass" { p++ } $2 == "not-graded" { g++ }
        END { printf "%-12s %d steps passed, %d not graded (time budget)\n", "", p, g }'
}
echo "grade_class_time: $n students, steps $(echo $steps | tr ' ' ,), $jobs at once, $(nproc) cores, $(date -u +%Y-%m-%d)"
if [ $((n % 2)) = 0 ]; then
    run sandbox HVDLAB_X=1
    run no-sandbox HVDLAB_SANDBOX_TEST=1 GRADE_NO_SANDBOX=1
else
    run no-sandbox HVDLAB_SANDBOX_TEST=1 GRADE_NO_SANDBOX=1
    run sandbox HVDLAB_X=1
fi
