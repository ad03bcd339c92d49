#!/bin/sh
# tests/grade/hostile_test.sh — the class mode against hostile submissions (make test-grade-class).
#  A. tests/grade/hostile/*.c, each a student's step01.c, graded as a class by tools/grade_class.sh
#     beside an honest student graded before: the kit (sources, build/), OUT's other results and
#     the other student's files keep their hashes, no process of a sandbox uid is left, the run
#     ends in bounded time, the port opened outside gets no connection, the grader's secret is in
#     no result, and each hostile student is failed or flagged.
#  B. each piece of the sandbox taken out in turn (SANDBOX_DROP, HVDLAB_SANDBOX_TEST=1), for each
#     backend (bwrap, unshare): the attack it holds back must then get through, and must not with
#     the whole sandbox.
# Root only (the sandbox's uids, the scratch tmpfs); prints "skipped" otherwise. BUILD: build dir.
set -u
kit=$(cd "$(dirname "$0")/../.." && pwd)
cd "$kit" || exit 2
BUILD=${BUILD:-build}
if [ "$(id -u)" != 0 ]; then
    echo "hostile_test: skipped (needs root: the sandbox's uids and its scratch tmpfs)"
    exit 0
fi
if [ -z "${HOSTILE_NS:-}" ]; then # a private mount namespace for the work folders' tmpfs
    HOSTILE_NS=1 exec unshare --mount --propagation private sh "$0" "$@"
fi
T=$(mktemp -d /tmp/hvdlab-hostile.XXXXXX)
chmod 755 "$T"
listener=""
# HOSTILE_KEEP=1 keeps the folder (its path is printed) to look at the logs.
trap '[ -n "$listener" ] && kill "$listener" 2>/dev/null; umount "$T/work" 2>/dev/null
      if [ "${HOSTILE_KEEP:-}" = 1 ]; then echo "hostile_test: kept $T"; else rm -rf "$T"; fi' EXIT
nfail=0 nok=0
ok() { nok=$((nok + 1)); echo "  ok   $*"; }
bad() { nfail=$((nfail + 1)); echo "  FAIL $*"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
# verdict DESC STATUS: ok when STATUS is 0 (for conditions on student-made text, not eval'd).
verdict() { if [ "$2" = 0 ]; then ok "$1"; else bad "$1"; fi; }

# A listener on 127.0.0.1 outside every sandbox; each connection appends a line to $T/conn.
port=$((40000 + $$ % 20000))
: >"$T/conn"
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("connection\n"); c.close()
' "$port" "$T/conn" &
listener=$!
sleep 0.5
export HVDLAB_HOSTILE_PORT=$port GRADER_SECRET=s3cr3t-of-the-grader
# Core files allowed out here, so that the sandbox's limit of 0 is what the test sees.
ulimit -c unlimited 2>/dev/null

# ---------------------------------------------------------------- A: a class of hostile students
echo "hostile_test: A. hostile students graded as a class (step 01, 30 s a run, 2 at once)"
SUB="$T/subs" OUT="$T/out"
mkdir -p "$SUB/honest"
cp solutions/step01.c "$SUB/honest/step01.c"
run_class() {
    GRADE_CFLAGS="$(pkg-config --cflags openblas zlib)" \
    GRADE_LDLIBS="$(pkg-config --libs openblas zlib) $( [ -f /usr/include/oneapi/dnnl/dnnl.h ] && echo -ldnnl) -lm" \
    BUILD=$BUILD sh tools/grade_class.sh --submissions "$SUB" --out "$OUT" --steps 01 --jobs 2 "$@"
}
run_class >"$T/class1.log" 2>&1
check "the honest student is graded first (pass)" \
    "grep -q '^01	pass	10' '$OUT/honest/verdicts.tsv' 2>/dev/null"
for f in tests/grade/hostile/*.c; do
    h=$(basename "$f" .c | tr _ -)
    mkdir -p "$SUB/$h"
    cp "$f" "$SUB/$h/step01.c"
done
mkdir -p "$SUB/include-abs"
printf '#include "%s/solutions/step01.c"\n' "$kit" >"$SUB/include-abs/step01.c"
export HVDLAB_HOSTILE_TARGETS="$SUB/honest:$OUT/honest:$OUT:$kit/build:$kit/build/tests/grade:$kit/solutions:$kit/common"
export HVDLAB_HOSTILE_SOLUTION="$kit/$BUILD/solutions/step01"
sums() { # the kit's tracked files, its build (libraries, graders, solutions), the honest student
    { git ls-files -z | xargs -0 sha256sum
      find "$BUILD/libhvdlab.a" "$BUILD/tests/grade" "$BUILD/solutions" -type f -exec sha256sum {} +
      find "$OUT/honest" "$SUB/honest" -type f -exec sha256sum {} +
    } 2>/dev/null | sha256sum
}
before=$(sums)
t0=$(date +%s)
run_class >"$T/class2.log" 2>&1
secs=$(($(date +%s) - t0))
sed 's/^/    /' "$T/class2.log"
check "the kit, the honest student's files and results unchanged" "[ '$before' = '$(sums)' ]"
check "no file written into OUT but the graded students' folders" \
    "[ -z \"\$(find '$OUT' -name hostile-was-here)\" ]"
# The uids this class's students had (other classes on the machine may use others meanwhile).
uids=$(cat "$OUT"/*/meta.tsv | awk -F'\t' '$1 == "uid" { printf "%s ", $2 }')
left=$(ps -eo uid= | awk -v u=" $uids" 'index(u, " " $1 " ")' | wc -l)
check "no process of the students' sandbox uids ($uids) left ($left)" "[ -n '$uids' ] && [ $left = 0 ]"
check "the class of $(ls "$SUB" | wc -l) ended in bounded time ($secs s <= 420 s)" "[ $secs -le 420 ]"
check "the port opened outside got no connection" "[ ! -s '$T/conn' ]"
check "the grader's secret is in no result" "! grep -rq s3cr3t '$OUT'"
check "the honest student was not graded again" "grep -q 'honest: results newer than its files, skipped' '$T/class2.log'"
for d in "$SUB"/*; do
    h=${d##*/}
    [ "$h" = honest ] && continue
    v=$(sed -n 2p "$OUT/$h/verdicts.tsv" 2>/dev/null)
    state=$(printf '%s' "$v" | cut -f2) flags=$(printf '%s' "$v" | cut -f7)
    [ -n "$state" ] && { [ "$state" != pass ] || [ -n "$flags" ]; }
    verdict "$h: failed or flagged (state ${state:-none}${flags:+, flagged: $flags})" $?
done
v() { sed -n 2p "$OUT/$1/verdicts.tsv" | cut -f2; }
check "sleep-forever and spin: timeout" "[ \"\$(v sleep-forever)\" = timeout ] && [ \"\$(v spin)\" = timeout ]"
check "include-solution and include-abs: do not compile (solutions/ is not there)" \
    "[ \"\$(v include-solution)\" = no-compile ] && [ \"\$(v include-abs)\" = no-compile ]"

# ---------------------------------------------------------------- B: each piece taken out
echo "hostile_test: B. each piece of the sandbox taken out"
mkdir -p "$T/bin" "$T/work"
for f in tests/grade/hostile/*.c; do
    [ "$f" = tests/grade/hostile/include_solution.c ] && continue
    mpicc -std=c11 -O1 -D_GNU_SOURCE "$f" -o "$T/bin/$(basename "$f" .c)" || bad "compile $f"
done
# Decoys of what a student must not write: root's folders, as the kit's and OUT are.
mkdir -p "$T/decoy/other" "$T/decoy/out" "$T/decoy/build"
for d in other out build; do echo keep >"$T/decoy/$d/file"; done
chmod -R go-w "$T/decoy"
uid=61099 # the test's own; tools/grade_class.sh takes 61000-61063
# The solution run_solution tries: a copy outside the allow-list that the uid could run were the
# file system not sealed (the kit's own may sit in a folder closed to it, such as /root).
mkdir -p "$T/solution" && cp "$BUILD/solutions/step01" "$T/solution/" && chmod -R a+rX "$T/solution"
export HVDLAB_HOSTILE_SOLUTION="$T/solution/step01"
# The kit where that uid can read it, as tools/grade_class.sh stages it.
sh tools/sandbox/stage_kit.sh "$kit" "$BUILD/libhvdlab.a" "$T/kit" || bad "stage the kit"
export HVDLAB_SANDBOX_TEST=1
# sb [drop] -- cmd...: the program in the sandbox as the runner starts it, its folder a fresh
# 32 MiB tmpfs; stderr to $T/err.
sb() {
    drop=$1; shift 2
    umount "$T/work" 2>/dev/null
    mount -t tmpfs -o size=32m,mode=0777 tmpfs "$T/work"
    SANDBOX_DROP=$drop timeout 60 tools/sandbox/run.sh --kit "$T/kit" --uid $uid --tmp-size 67108864 \
        --bind-ro "$T/bin" --work "$T/work" -- "$@" 2>"$T/err"
}
reaped() { # no process of the uid within 5 s
    k=0
    while pgrep -U $uid >/dev/null; do k=$((k + 1)); [ $k -le 50 ] || return 1; sleep 0.1; done
}
num() { grep -o "hostile: $1 [0-9]*" "$T/err" | grep -o '[0-9]*$' | head -1; }
for backend in bwrap unshare; do
    export SANDBOX_BACKEND=$backend
    echo " backend $backend"
    : >"$T/conn"
    sb "" -- "$T/bin/tcp_connect"
    check "net: no connection out ($(grep -o 'connect [a-z]*' "$T/err"))" "[ ! -s '$T/conn' ] && grep -q 'connect refused' '$T/err'"
    sb net -- "$T/bin/tcp_connect"
    k=0; while [ ! -s "$T/conn" ] && [ $k -lt 30 ]; do sleep 0.1; k=$((k + 1)); done # the listener's write
    check "net dropped: the connection gets through" "[ -s '$T/conn' ] && grep -q 'connect made' '$T/err'"

    sb "" -- "$T/bin/setsid_daemon" >/dev/null
    check "pid: the setsid daemon ends with the sandbox" reaped
    sb pid -- "$T/bin/setsid_daemon" >/dev/null
    sleep 1
    if pgrep -U $uid >/dev/null; then ok "pid dropped: the daemon lives on"; else bad "pid dropped: the daemon lives on"; fi
    pkill -KILL -U $uid; reaped

    sb "" -- "$T/bin/run_solution" --help >/dev/null
    check "fs: the built solution cannot be run" "grep -q 'hostile: exec' '$T/err'"
    sb fs -- "$T/bin/run_solution" --help >/dev/null
    check "fs dropped: the built solution runs" "! grep -q 'hostile: exec' '$T/err'"
    sb "" -- mpicc -fsyntax-only -I"$kit/common" "$SUB/include-abs/step01.c" 2>/dev/null
    check "fs: solutions/ cannot be #included" "grep -q 'No such file' '$T/err'"
    sb fs -- mpicc -fsyntax-only -I"$kit/common" "$SUB/include-abs/step01.c"
    check "fs dropped: the #include of solutions/ compiles" "! grep -q 'No such file' '$T/err'"

    export HVDLAB_HOSTILE_TARGETS="$T/decoy/other:$T/decoy/out:$T/decoy/build"
    for drop in "" fs user; do
        sb "$drop" -- "$T/bin/write_other" >/dev/null
        check "fs+user${drop:+ (without $drop)}: no write into other folders ($(num writes) writes)" \
            "[ '$(num writes)' = 0 ]"
    done
    sb fs,user -- "$T/bin/write_other" >/dev/null
    check "fs and user dropped: the writes get through ($(num writes))" "[ '$(num writes)' -gt 0 ]"
    rm -f "$T/decoy"/*/hostile-was-here; for d in other out build; do echo keep >"$T/decoy/$d/file"; done

    sb "" -- "$T/bin/fork_bomb" >/dev/null
    check "limits: the fork bomb is stopped ($(num forks) forks)" "[ '$(num forks)' -lt 600 ]"
    reaped
    sb limits -- "$T/bin/fork_bomb" >/dev/null
    check "limits dropped: the fork bomb gets all its 600" "[ '$(num forks)' = 600 ]"
    pkill -KILL -U $uid; reaped
    sb "" -- "$T/bin/output_flood" >"$T/flood"
    check "limits: the output flood stops at 64 MiB ($(num flood) MiB)" "[ '$(num flood)' -le 64 ]"
    sb limits -- "$T/bin/output_flood" >"$T/flood"
    check "limits dropped: the flood writes all its 256 MiB" "[ '$(num flood)' = 256 ]"
    rm -f "$T/flood"
    sb "" -- "$T/bin/alloc_forever"
    check "limits: the allocation stops under 2 GiB ($(num allocated) MiB)" "[ '$(num allocated)' -lt 2048 ]"
    sb limits -- "$T/bin/alloc_forever"
    check "limits dropped: it allocates all its 3 GiB" "[ '$(num allocated)' = 3072 ]"
    HVDLAB_HOSTILE_SPIN_S=4 SANDBOX_CPU=1 sb "" -- "$T/bin/spin"
    check "limits: the spinner is stopped after 1 s of CPU" "! grep -q 'hostile: spun' '$T/err'"
    HVDLAB_HOSTILE_SPIN_S=4 SANDBOX_CPU=1 sb limits -- "$T/bin/spin"
    check "limits dropped: it spins its 4 s" "grep -q 'hostile: spun 4' '$T/err'"
    check "limits: no core files (ulimit -c is $(sb '' -- sh -c 'ulimit -c'))" "[ \"\$(sb '' -- sh -c 'ulimit -c')\" = 0 ]"
    check "limits dropped: core files allowed" "[ \"\$(sb limits -- sh -c 'ulimit -c')\" != 0 ]"

    sb "" -- "$T/bin/disk_filler"
    check "disk: /tmp fills to its 64 MiB only ($(grep -o 'hostile: .*' "$T/err"))" \
        "grep -q 'and 64 MiB in tmp' '$T/err' && grep -q 'wrote 3[0-2] MiB here' '$T/err'"
    sb disk -- "$T/bin/disk_filler"
    check "disk dropped: /tmp takes all 512 MiB" "grep -q 'and 512 MiB in tmp' '$T/err'"

    fds=$(sb "" -- sh -c 'ls /proc/$$/fd' 7>"$T/conn.fd" 9>"$T/conn.fd" | tr '\n' ' ')
    check "fds: only stdin, stdout and stderr of the caller's go in (the shell's: $fds)" "[ '$fds' = '0 1 2 ' ]"
    sb "" -- "$T/bin/env_dump"
    check "env: the grader's secret is not seen" "! grep -q s3cr3t '$T/err'"
    sb env -- "$T/bin/env_dump"
    check "env dropped: the secret is seen" "grep -q s3cr3t '$T/err'"
done
unset SANDBOX_BACKEND

# The run's time limit (the grader's): a rank that sleeps for ever is stopped at the limit; with
# no limit the run would go on (the outer 12 s timeout stops it).
mkdir -p "$T/g" && chmod 711 "$T/g"
wrap="$kit/tools/sandbox/run.sh --kit $T/kit --uid $uid --bind-ro $T/bin"
t0=$(date +%s)
TMPDIR="$T/g" MPIRUN="mpirun --oversubscribe" GRADE_TIMEOUT_S=3 GRADE_WRAP="$wrap" \
    timeout 12 "$BUILD/tests/grade/grade_step01" "$T/bin/sleep_forever" >/dev/null 2>&1
rc=$? secs=$(($(date +%s) - t0))
check "time: the sleeping rank is stopped at the run's 3 s limit (grader exit $rc after $secs s)" "[ $rc = 1 ] && [ $secs -le 8 ]"
reaped
TMPDIR="$T/g" MPIRUN="mpirun --oversubscribe" GRADE_TIMEOUT_S=100000 GRADE_WRAP="$wrap" \
    timeout 12 "$BUILD/tests/grade/grade_step01" "$T/bin/sleep_forever" >/dev/null 2>&1
rc=$?
check "time limit taken out: the run goes on until the outer timeout (exit $rc)" "[ $rc = 124 ]"
pkill -KILL -U $uid; reaped

echo "hostile_test: $nok passed, $nfail failed"
[ "$nfail" = 0 ]
