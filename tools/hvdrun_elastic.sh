#!/bin/sh
# hvdrun_elastic.sh — the elastic launcher behind `./hvdrun --elastic` (Horovod's horovodrun
# --min-np/--max-np/--host-discovery-script, done the restart way).
#
#   ./hvdrun --elastic --min-np M --max-np N [-n NP] [--host-discovery-script S]
#            [--commit-every K] [--reset-limit R] [--discovery-interval SEC]
#            [--discovery-timeout SEC]
#            PROGRAM --use-checkpointing [--log-dir DIR] [flags]
#
# Open MPI 4.1 cannot shrink or grow a running communicator (no ULFM in Debian's build), so this
# is restart-based elasticity, as torchrun's elastic agent does it, not Horovod's in-process Gloo
# rendezvous: the launcher watches mpirun; when a rank dies (mpirun aborts the job and reports
# "process rank R ... exited on signal"), it starts the job again on the slots still there, and
# the program goes on from its last commit (common/train/elastic.h: rank 0 writes a checkpoint
# every K batches; a crash loses at most K batches). When the discovery script reports more
# slots, it asks the job to stop at its next commit (a notify file the ranks look for there) and
# starts it again with up to N ranks.
# Slots: with S, the sum of the `host[:slots]` lines S prints (slots 1 when left out; S is
# stopped after --discovery-timeout seconds, default 60, which counts as a failure); without,
# NP (default N) minus the ranks that died. Fewer than M: one line, exit 1.
# The ranks that died: every rank of the job less the survivors, each of which says so in its
# line "hvdlab: error: [rank r] rank R (pid ...) died: ..." (common/coll/watchdog.h); mpirun's
# own report names only the first death it saw, whatever else ended with it. A job where no rank
# speaks lost every rank (the kit's ranks always do: their watchdog), unless the watchdog is off
# (HVD_DEAD_RANK_CHECK_DISABLE=1): then mpirun's count is all there is.
# Only a rank lost to a signal (killed, crashed) restarts the job; a program that fails with an
# exit status (bad flags, bad data) would fail again, so its status is passed on. At most R
# restarts after failures (default 3); restarts to grow are not counted.
# SIGINT/SIGTERM: the ranks stop at the end of a step and save; exit 130/143, no restart.
# kill -9 of this launcher (no handler runs) leaves nothing: ./hvdrun gets SIGTERM when it is
# gone (its parent-death signal, util-linux's setpriv --pdeathsig; ./hvdrun then stops the job
# as at any SIGTERM, HVDRUN_GRACE), and a guard process removes the temporary folder.
# --help: this text.
# Lines (stderr): "hvdrun: elastic: ..." for each decision. The program's own: elastic.h, resume.h.
set -u -f # -f: no file names from a word (the discovery script's lines)
me="hvdrun: elastic"
die() { echo "$me: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)

min='' max='' np='' script='' every=10 limit=3 interval=1 dtimeout=60
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
int() { case $2 in '' | *[!0-9]* | ???????*) die "$1 $2: expected a whole number up to 999999";;
        esac; }
while [ $# -gt 0 ]; do
    case $1 in
    --elastic) shift ;;
    --help | -h) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --min-np) need "$@"; int "$1" "$2"; min=$2; shift 2 ;;
    --max-np) need "$@"; int "$1" "$2"; max=$2; shift 2 ;;
    -n | -np | --np) need "$@"; int "$1" "$2"; np=$2; shift 2 ;;
    --host-discovery-script) need "$@"; script=$2; shift 2 ;;
    --commit-every) need "$@"; int "$1" "$2"; every=$2; shift 2 ;;
    --reset-limit) need "$@"; int "$1" "$2"; limit=$2; shift 2 ;;
    --discovery-interval) need "$@"; int "$1" "$2"; interval=$2; shift 2 ;;
    --discovery-timeout) need "$@"; int "$1" "$2"; dtimeout=$2; shift 2 ;;
    -*) die "$1: not an elastic launcher option (see tools/hvdrun_elastic.sh)" ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || die "no program to run"
[ -n "$min" ] || die "--min-np is required"
[ -n "$max" ] || max=${np:-}
[ -n "$max" ] || die "--max-np is required"
[ "$min" -ge 1 ] || die "--min-np $min: expected at least 1"
[ "$max" -ge "$min" ] || die "--max-np $max is less than --min-np $min"
[ "$every" -ge 1 ] || die "--commit-every $every: expected at least 1"
[ "$dtimeout" -ge 1 ] || die "--discovery-timeout $dtimeout: expected at least 1"
[ "$interval" -ge 1 ] || die "--discovery-interval $interval: expected at least 1"
[ -z "$np" ] || [ "$np" -ge "$min" ] || die "-n $np is less than --min-np $min"
case " $* " in
*" --use-checkpointing "*) ;;
*) die "$1 needs --use-checkpointing: a restarted job goes on from its commits in --log-dir" ;;
esac
[ -z "$script" ] || { [ -f "$script" ] && [ -x "$script" ]; } ||
    die "--host-discovery-script $script: not an executable file"
case $script in */* | '') ;; *) script=./$script ;; esac # a file here, not one on PATH

tmp=$(mktemp -d /tmp/hvdrun-elastic-XXXXXX) || die "cannot create a temporary directory"
pid='' teepid='' guard=''
# The parent-death signal (prctl PR_SET_PDEATHSIG) of what this launcher starts: SIGTERM when
# the launcher is gone, even by kill -9. Without setpriv (not Linux): nothing.
watch=
command -v setpriv >/dev/null 2>&1 && watch="setpriv --pdeathsig TERM"
# The guard: removes the temporary folder when this launcher is gone without its EXIT trap
# (kill -9). A shell waiting on a sleep; its own end (the launcher's EXIT trap) takes the sleep.
if [ -n "$watch" ]; then
    $watch sh -c 'trap "kill \$s 2>/dev/null; rm -rf \"\$0\"; exit 0" TERM
                  sleep 2147483647 & s=$!; wait $s' "$tmp" </dev/null >/dev/null 2>&1 &
    guard=$!
fi
trap 'rm -rf "$tmp"; [ -z "$guard" ] || kill "$guard" 2>/dev/null' EXIT
# SIGTERM/SIGINT: passed on to ./hvdrun as SIGTERM (it was started in the background, where
# SIGINT is ignored), the ranks save (train/stop.h); no restart after that. One that comes
# between two runs (during discovery, at a restart) stops the launcher before it starts one.
stopping=''
on_stop() { stopping=$1; [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; }
trap 'on_stop TERM' TERM
trap 'on_stop INT' INT
sigrc() { [ "$stopping" = INT ] && echo 130 || echo 143; }

# discover: sets hosts (h1:s1,h2:s2) and slots (their sum); 1 when the script fails or hangs
# (timeout(1) stops it and what it started: a child holding the output would keep $(...) open).
discover() {
    out=$($watch timeout -k 2 "$dtimeout" "$script" 2>"$tmp/discovery.err")
    drc=$?
    if [ "$drc" = 124 ] || [ "$drc" = 137 ]; then
        echo "$me: $script did not finish in --discovery-timeout $dtimeout s" >&2; return 1
    elif [ "$drc" != 0 ]; then
        echo "$me: $script failed (exit $drc): $(head -1 "$tmp/discovery.err")" >&2; return 1
    fi
    hosts='' slots=0
    while IFS= read -r line; do # one host a line; set -f: a '*' is no file name here
        set -- $line # the spaces around it go; a blank line is none
        [ $# = 0 ] && continue
        [ $# = 1 ] || { echo "$me: $script printed '$line': expected host or host:slots," \
                             "one a line" >&2; return 1; }
        h=${1%%:*} s=1
        [ "$h" = "$1" ] || s=${1#*:}
        case $s in '' | *[!0-9]*) s=0 ;; esac
        s=${s#"${s%%[!0]*}"} # 08 is 8, not an octal number for $((...))
        case $s in '' | ???????*)
            echo "$me: $script printed '$1': expected host or host:slots (1 to 999999 slots)" >&2
            return 1;; esac
        case $h in '' | *[!A-Za-z0-9._-]*)
            echo "$me: $script printed '$1': '$h' is not a host name" >&2; return 1;; esac
        hosts=${hosts:+$hosts,}$h:$s
        slots=$((slots + s))
    done <<EOF
$out
EOF
    [ -n "$hosts" ] || { echo "$me: $script printed no host: expected host or host:slots" \
                             "lines" >&2; return 1; }
}

dead=0 failures=0 attempt=0 was=
base=${np:-$max}
while :; do
    if [ -n "$script" ]; then
        discover || exit 1
    else
        hosts='' slots=$((base - dead))
    fi
    if [ "$slots" -lt "$min" ]; then
        echo "$me: $slots slot(s) left, fewer than --min-np $min: stopping (the last commit is" \
             "in --log-dir; run again to go on from it)" >&2
        exit 1
    fi
    if [ -n "$stopping" ]; then
        echo "$me: SIG$stopping: stopping before start $((attempt + 1)) (the last commit, if" \
             "any, is in --log-dir; run again to go on from it)" >&2
        exit "$(sigrc)"
    fi
    n=$slots
    [ "$n" -le "$max" ] || n=$max
    attempt=$((attempt + 1))
    echo "$me: starting $n rank(s)${hosts:+ on $hosts} (start $attempt${was:+, was $was})" >&2
    rm -f "$tmp/notify" "$tmp/err.log" "$tmp/err"
    mkfifo "$tmp/err"
    tee "$tmp/err.log" <"$tmp/err" >&2 &
    teepid=$!
    # HVDLAB_ELASTIC_RUN: one id for every start, so that a start may take over the log dir's
    # lock that a lost host's rank 0 still holds on a network file system (ckpt_lock.c)
    HVDLAB_ELASTIC=1 HVDLAB_ELASTIC_COMMIT_STEPS=$every HVDLAB_ELASTIC_NOTIFY=$tmp/notify \
        HVDLAB_ELASTIC_RUN="$(hostname)-${tmp##*/}" \
        $watch "$here/hvdrun" -x HVDLAB_ELASTIC -x HVDLAB_ELASTIC_COMMIT_STEPS -x HVDLAB_ELASTIC_NOTIFY \
        -x HVDLAB_ELASTIC_RUN \
        ${hosts:+--host "$hosts"} -n "$n" "$@" 2>"$tmp/err" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep "$interval"
        [ -n "$script" ] && [ "$n" -lt "$max" ] && [ ! -e "$tmp/notify" ] || continue
        old_hosts=$hosts old_slots=$slots
        if discover && [ "$slots" -gt "$n" ]; then
            echo "$me: $script reports $slots slot(s): the job grows at its next commit" >&2
            : >"$tmp/notify"
        fi
        hosts=$old_hosts slots=$old_slots
    done
    wait "$pid"
    rc=$?
    while kill -0 "$pid" 2>/dev/null; do # a trapped signal ended the wait, not mpirun
        wait "$pid"; rc=$?
    done
    wait "$teepid"
    pid='' was=$n
    [ -n "$stopping" ] && { [ "$rc" = 143 ] && exit "$(sigrc)"; exit "$rc"; }
    [ "$rc" -eq 0 ] && exit 0
    if [ "$rc" -eq 75 ]; then # ELASTIC_EXIT_RESIZE: stopped at a commit to grow
        continue
    fi
    signalled=$(grep -c "mpirun noticed that process rank [0-9]* with PID [0-9]* on node .* exited on signal" \
           "$tmp/err.log")
    # every rank less the survivors, who each say who died (see the top)
    survivors=$(sed -n 's/^hvdlab: error: \[rank \([0-9]*\)\] rank [0-9]* (pid [0-9]* on .*) died: .*/\1/p' \
                "$tmp/err.log" | sort -u | wc -l)
    if [ "$signalled" -eq 0 ]; then lost=0
    elif [ "$survivors" -gt 0 ]; then lost=$((n - survivors))
    elif [ "${HVD_DEAD_RANK_CHECK_DISABLE:-0}" = 1 ]; then lost=$signalled
    else lost=$n; fi
    if [ "$lost" -eq 0 ]; then
        echo "$me: the job failed with exit status $rc and no rank was lost to a signal:" \
             "not restarting (it would fail the same way)" >&2
        exit "$rc"
    fi
    failures=$((failures + 1))
    if [ "$failures" -gt "$limit" ]; then
        echo "$me: the job lost ranks $failures times, more than --reset-limit $limit: stopping" >&2
        exit "$rc"
    fi
    dead=$((dead + lost))
    if [ -z "$script" ] && [ $((base - dead)) -lt "$min" ]; then
        echo "$me: lost $lost rank(s) (mpirun exit $rc)" >&2 # the next line: too few left
    else
        echo "$me: lost $lost rank(s) (mpirun exit $rc): restarting from the last commit" >&2
    fi
done
