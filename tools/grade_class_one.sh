# tools/grade_class_one.sh — one student of tools/grade_class.sh (sourced by it with id set; the
# GC_* variables say the rest). Writes OUT/+partial/<id>/ and moves it to OUT/<id>/ when done.
#
# OUT/<id>/verdicts.tsv: "step state points max seconds warnings flags message", one line per
# step of STEPS. state: pass, fail, not-submitted, no-compile, timeout, not-graded. points: 0
# (not submitted, no compile, not graded), 1 (compiles), 3 (also runs to the end), 10 (and the
# step's own check passes). An earlier step's check failing in a later step's grader is shown
# as the flag "regression: ..." and not charged again. message: tabs as spaces, newlines as \n,
# backslashes doubled. meta.tsv: id seed commit sandbox seconds started uid (the sandbox's, or
# none). stepNN.log: the compile,
# the grader's report and the end of the job's output, at most 64 KiB.
set -u
run_limit=${GRADE_RUN_LIMIT_S:-30}
student_limit=${GRADE_STUDENT_LIMIT_S:-360}
kit=$GC_KIT out=$GC_OUT scr=$GC_SCR
dest="$out/$id" part="$out/+partial/$id" src="$scr/src/$id" S="$scr/s/$id"

# Resume: results newer than every file of the student's are kept.
if [ -f "$dest/verdicts.tsv" ] && [ -f "$dest/meta.tsv" ] &&
   [ -z "$(find "$GC_SUBS/$id" -newer "$dest/verdicts.tsv" -print 2>/dev/null | head -1)" ]; then
    echo "grade-class: $id: results newer than its files, skipped"
    exec 8>>"$scr/done.txt" && flock 8 && echo "$id -" >&8
    exit 0
fi

# A uid of its own for this student's sandbox, held while it is graded: 61000 + the first slot
# no other grading (this class's or another's on this machine) holds.
uid="" slot=0
if [ "$(id -u)" = 0 ] && [ "$GC_SANDBOX" != none ]; then
    lockdir=/run/lock
    [ -d "$lockdir" ] && [ -w "$lockdir" ] || lockdir=/tmp
    while [ $slot -lt 64 ]; do
        exec 9>"$lockdir/hvdlab-sandbox-uid-$((61000 + slot))"
        if flock -n 9; then uid=$((61000 + slot)); break; fi
        exec 9>&-
        slot=$((slot + 1))
    done
    [ -n "$uid" ] || { echo "grade-class: $id: no free sandbox uid (64 gradings at once?)" >&2; exit 1; }
    # Nothing of this uid may run before the student starts (a stale process from a killed run).
    pkill -KILL -U "$uid" 2>/dev/null
fi
# Waits up to 5 s for every process of the sandbox's uid to be gone (its pid namespace ends them
# all, the kernel takes a moment); kills what is left, and says so (status 1).
reap_uid() {
    [ -n "$uid" ] || return 0
    k=0
    while pgrep -U "$uid" >/dev/null 2>&1; do
        k=$((k + 1))
        [ $k -le 50 ] || { pkill -KILL -U "$uid"; return 1; }
        sleep 0.1
    done
    return 0
}
t_start=$(date +%s)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

rm -rf "$part"
mkdir -p "$part" "$S" || exit 1
# The student's scratch: a tmpfs of its own (its size caps whatever the job writes: the compile,
# the grader's work folder with the traces and logs, the job's output).
if [ "$(id -u)" = 0 ]; then
    mount -t tmpfs -o size=512m,nr_inodes=20000,mode=0711 tmpfs "$S" || {
        echo "grade-class: $id: cannot mount its scratch tmpfs" >&2; exit 1; }
fi
mkdir -p "$S/src" "$S/bin" "$S/grader"
cp "$src"/step*.c "$S/src/" 2>/dev/null
chmod 755 "$S/src" && chmod 644 "$S/src"/* 2>/dev/null
chmod 711 "$S/grader"
[ -n "$uid" ] && chown "$uid:$uid" "$S/bin"
[ -n "$uid" ] || chmod 777 "$S/bin"
cp "$src/ignored.txt" "$part/ignored.txt"
[ -n "$uid" ] && echo "$uid" >"$part/sandbox_uid" # for a stopped run's check (tests)

# The sandbox, as the grader gets it (it adds --work and the command) and as the compile uses it.
if [ "$GC_SANDBOX" = none ]; then
    wrap=""
    box() { w=$1; shift 2; (cd "$w" && "$@"); }
else
    # --kit: the copy tools/grade_class.sh made in the scratch (tools/sandbox/stage_kit.sh)
    wrap="$kit/tools/sandbox/run.sh --kit $scr/kit ${uid:+--uid $uid} --bind-ro $S/src --bind-ro $S/bin"
    box() { # box WORKDIR -- COMMAND...
        w=$1; shift 2
        "$kit/tools/sandbox/run.sh" --kit "$scr/kit" ${uid:+--uid "$uid"} --bind-ro "$S/src" --work "$w" -- "$@"
    }
fi
if [ "$GC_SANDBOX" = none ]; then inc="$kit/common" lib="$GC_BUILD/libhvdlab.a"
else inc=/kit/common lib=/kit/lib/libhvdlab.a; fi
# In the sandbox mpirun runs as its unprivileged user; without it (a test knob), as this one.
mpirun="mpirun --oversubscribe"
[ "$GC_SANDBOX" = none ] && [ "$(id -u)" = 0 ] && mpirun="$mpirun --allow-run-as-root"
# The kit's compile flags less -Werror: a warning costs nothing in class mode (it is counted).
cflags="-std=c11 -O2 -g -Wall -Wextra -fopenmp -D_GNU_SOURCE -I$inc ${GRADE_CFLAGS:-}"
ldlibs="${GRADE_LDLIBS:--lopenblas -lz -lm}"

# Compile every submitted step, in the sandbox (the grader's limit: 60 s a file).
for n in $GC_STEPS; do
    [ -f "$S/src/step$n.c" ] || continue
    box "$S/bin" -- timeout -k 5 60 sh -c "mpicc $cflags -MMD -MF step$n.d -c '$S/src/step$n.c' -o step$n.o && mpicc -fopenmp step$n.o $lib $ldlibs -o step$n" \
        >"$S/compile$n.log" 2>&1
    echo $? >"$S/compile$n.rc"
    reap_uid || echo "processes of the sandbox's user were left after the compile: killed" >>"$S/compile$n.log"
done

# The screen (flags only, never points): lines "stepNN<TAB>flag".
: >"$S/flags.tsv"
if [ -f "$kit/tools/grade_screen.sh" ]; then
    GRADE_OBJ_DIR="$S/bin" sh "$kit/tools/grade_screen.sh" "$src" "$id" "$scr/src" "$kit" \
        >"$S/flags.tsv" 2>"$S/screen.err" || echo "grade-class: $id: the screen failed: $(head -1 "$S/screen.err")" >&2
fi

# One verdicts.tsv line: step state points seconds warnings flags message.
clean() { tr '\t\n' '  ' | sed 's/ *$//'; }
verdict_line() {
    total=$((total + $3))
    printf '%s\t%s\t%s\t10\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" \
        "$(printf '%s' "$6" | clean)" "$(printf '%s' "$7" | clean)" >>"$part/verdicts.tsv"
}
printf 'step\tstate\tpoints\tmax\tseconds\twarnings\tflags\tmessage\n' >"$part/verdicts.tsv"
esc() { sed 's/\\/\\\\/g' | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }' | tr '\t' ' '; }

total=0
for n in $GC_STEPS; do
    t0=$(date +%s.%N)
    flags=$(awk -F'\t' -v s="step$n" '$1 == s { sub(/^[^\t]*\t/, ""); printf "%s%s", sep, $0; sep = "; " }' "$S/flags.tsv")
    log="$part/step$n.log"
    if [ ! -f "$S/src/step$n.c" ]; then
        verdict_line "$n" not-submitted 0 0 0 "$flags" "step$n.c was not submitted"
        continue
    fi
    warnings=$(grep -c 'warning:' "$S/compile$n.log")
    { echo "== compile (in the sandbox)"; head -c 16384 "$S/compile$n.log"; } >"$log"
    if [ "$(cat "$S/compile$n.rc")" != 0 ]; then
        verdict_line "$n" no-compile 0 0 "$warnings" "$flags" \
            "$(grep -m 5 -E 'error|timeout' "$S/compile$n.log" | sed "s|$S/src/||g" | esc)"
        continue
    fi
    left=$((student_limit - ($(date +%s) - t_start)))
    if [ "$left" -lt 10 ]; then
        verdict_line "$n" not-graded 0 0 "$warnings" "$flags" "not graded: time budget (6 min a student) spent"
        echo "== not graded: time budget" >>"$log"
        continue
    fi
    # The grader: up to three runs of run_limit seconds each, and its own checks.
    glim=$((3 * run_limit + 30)); [ "$glim" -gt "$left" ] && glim=$left
    res="$S/result$n.tsv"
    rm -f "$res"
    # From the student's scratch: without the sandbox (the test knob) the job's files land there.
    (cd "$S/grader" && exec env MPIRUN="$mpirun" GRADE_TIMEOUT_S="$run_limit" TMPDIR="$S/grader" \
        GRADE_WRAP="$wrap" GRADE_RESULT_FILE="$res" ${GC_SIZES:+GRADE_SIZES_FILE="$GC_SIZES"} \
        ${GC_REF:+GRADE_REFERENCE_TRACE="$GC_REF/step$n"} \
        timeout -k 5 "$glim" "$GC_BUILD/tests/grade/grade_step$n" "$S/bin/step$n") >"$S/grade$n.out" 2>&1
    grc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    { echo "== grader (outside the sandbox), exit $grc"; head -c 32768 "$S/grade$n.out"; } >>"$log"
    # Every process of the sandbox's user has ended with its pid namespace; make sure.
    reap_uid || echo "== processes of the sandbox's user were left after the job: killed" >>"$log"
    if [ ! -f "$res" ]; then
        if [ "$grc" = 124 ] || [ "$grc" = 137 ]; then
            st=timeout; [ "$glim" -lt $((3 * run_limit + 30)) ] && st=not-graded
            verdict_line "$n" "$st" 1 "$secs" "$warnings" "$flags" \
                "$([ $st = timeout ] && echo "timed out: the grader's runs took longer than ${glim} s" || echo "not graded: time budget (6 min a student) spent")"
        else
            verdict_line "$n" fail 1 "$secs" "$warnings" "$flags" \
                "the grader stopped (exit $grc): $(tail -3 "$S/grade$n.out" | esc)"
        fi
        continue
    fi
    runs=$(awk -F'\t' '$1 == "check" && $2 == "00" { print $3 }' "$res")
    own=$(awk -F'\t' -v s="$n" '$1 == "check" && $2 == s { print $3 }' "$res")
    timed=$(awk -F'\t' '$1 == "run" && $3 == 124 { print $2 }' "$res" | head -1)
    msg=$(awk -F'\t' -v s="$n" '$1 == "check" && $2 == s && $3 == "fail" { print $4 }' "$res")
    [ "$runs" = fail ] && msg=$(awk -F'\t' '$1 == "check" && $2 == "00" { print $4 }' "$res")
    regress=$(awk -F'\t' -v s="$n" '$1 == "check" && $2 != "00" && $2 != s && $3 == "fail" {
        printf "%sregression: step %s'"'"'s check fails here (charged in step %s)", sep, $2, $2; sep = "; " }' "$res")
    [ -n "$regress" ] && flags="${flags:+$flags; }$regress"
    # The grader's own flags (the trace against the reference run's): shown, not charged.
    gflags=$(awk -F'\t' '$1 == "flag" { printf "%s%s", sep, $2; sep = "; " }' "$res")
    [ -n "$gflags" ] && flags="${flags:+$flags; }$gflags"
    if [ -n "$timed" ]; then
        verdict_line "$n" timeout 1 "$secs" "$warnings" "$flags" \
            "timed out: run $timed did not end within ${run_limit} s. $msg"
    elif [ "$runs" = pass ] && [ "$own" = pass ]; then
        verdict_line "$n" pass 10 "$secs" "$warnings" "$flags" ""
    elif [ "$runs" = pass ]; then
        verdict_line "$n" fail 3 "$secs" "$warnings" "$flags" "$msg"
    else
        verdict_line "$n" fail 1 "$secs" "$warnings" "$flags" "$msg"
    fi
done

secs=$(($(date +%s) - t_start))
printf 'id\t%s\nseed\t%s\ncommit\t%s\nsandbox\t%s\nseconds\t%s\nstarted\t%s\nuid\t%s\n' "$id" "$GC_SEED" \
    "$GC_COMMIT" "$GC_SANDBOX" "$secs" "$started" "${uid:-none}" >"$part/meta.tsv"
rm -f "$part/sandbox_uid"
for f in "$part"/step*.log; do
    [ -f "$f" ] && [ "$(wc -c <"$f")" -gt 65536 ] && { head -c 65536 "$f" >"$f.t"; mv "$f.t" "$f"; }
done
[ "$(id -u)" = 0 ] && umount "$S" 2>/dev/null
rm -rf "$S"
# No process of the student's user may be left.
reap_uid || echo "grade-class: $id: processes of its sandbox user were left and killed" >&2
rm -rf "$dest"
mv "$part" "$dest" || exit 1

# The line with the ETA.
exec 8>>"$scr/done.txt"
flock 8
echo "$id $secs" >&8
done_n=$(wc -l <"$scr/done.txt")
avg=$(awk '$2 != "-" { s += $2; k++ } END { printf "%d", k ? s / k : 0 }' "$scr/done.txt")
eta=$(( (GC_N - done_n) * avg / GC_JOBS ))
max=$(($(echo $GC_STEPS | wc -w) * 10))
printf 'grade-class: [%d/%d] %-20s %3d/%d  %4d s   ETA %d min %02d s\n' "$done_n" "$GC_N" "$id" "$total" "$max" \
    "$secs" $((eta / 60)) $((eta % 60))
flock -u 8
exit 0
