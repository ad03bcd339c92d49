#!/bin/sh
# tools/sandbox/run.sh — run one untrusted command (a student's compile or mpirun job) sealed off.
#
#   run.sh --work DIR [--bind-ro PATH]... [--bind-rw DIR]... [--kit KIT [--kit-lib LIB]]
#          [--uid N] [--tmp-size BYTES] -- COMMAND [ARG]...
#
# Inside: its own pid, net (loopback only, up), ipc, uts and mount namespaces; user N (never root;
# default 65534); limits on processes, open files, file size, CPU time, address space and core
# files (SANDBOX_NPROC, _NOFILE, _FSIZE, _CPU, _AS override the defaults below); a file system
# made of an allow-list only: /usr (and its /bin, /lib links), the few files of /etc that
# Open MPI and the dynamic loader read, /proc of its own pid namespace, a minimal /dev, /tmp and
# /dev/shm as size-capped tmpfs, KIT/common and LIB (default KIT/build/libhvdlab.a) read-only at
# /kit/common and /kit/lib/libhvdlab.a, the paths given with --bind-ro/--bind-rw (at their own path), and DIR as the
# current directory. The environment is an allow-list too: PATH, HOME, TMPDIR, LANG and the
# HVDLAB_*, HVD_*, OMPI_MCA_* and OMP_* variables of the caller.
# Backends: bubblewrap (bwrap, Debian's bubblewrap) when it works here, else, as root, unshare +
# chroot + setpriv + prlimit (tools/sandbox/inside.sh builds the same view). SANDBOX_BACKEND=bwrap
# or unshare forces one. Exit: the command's status; 125 when no sandbox can be made.
#
# Test knob, used only by tests/grade/hostile_test.sh: with HVDLAB_SANDBOX_TEST=1,
# SANDBOX_DROP=piece[,piece] takes pieces out (net, pid, user, limits, fs, disk, env) so a test
# can show that each containment breaks without its piece. Without HVDLAB_SANDBOX_TEST=1 it is
# refused.
set -u
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "sandbox: $*" >&2; exit 125; }

work="" kit="" kit_lib="" uid=65534 tmp_size=$((256 * 1024 * 1024))
ro_list="" rw_list=""
# Paths are kept newline-separated; a path with a newline is refused.
add() { case "$2" in *'
'*) die "path with a newline: refused";; esac; printf '%s\n%s' "$1" "$2"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --work) work=${2:?}; shift 2 ;;
    --bind-ro) ro_list=$(add "$ro_list" "${2:?}"); shift 2 ;;
    --bind-rw) rw_list=$(add "$rw_list" "${2:?}"); shift 2 ;;
    --kit) kit=${2:?}; shift 2 ;;
    --kit-lib) kit_lib=${2:?}; shift 2 ;;
    --uid) uid=${2:?}; shift 2 ;;
    --tmp-size) tmp_size=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (usage: run.sh --work DIR [options] -- COMMAND...)" ;;
    esac
done
[ $# -gt 0 ] || die "no command after --"
[ -n "$work" ] && [ -d "$work" ] || die "--work '$work' is not a directory"
case "$uid" in '' | *[!0-9]*) die "--uid '$uid' is not a number" ;; esac
[ "$uid" != 0 ] || die "--uid 0: the sandbox never runs as root"
[ -n "$kit" ] && [ -z "$kit_lib" ] && kit_lib="$kit/build/libhvdlab.a"

drop=${SANDBOX_DROP:-}
if [ -n "$drop" ]; then
    [ "${HVDLAB_SANDBOX_TEST:-}" = 1 ] || die "SANDBOX_DROP is a test knob (needs HVDLAB_SANDBOX_TEST=1)"
    echo "sandbox: TEST KNOB: running without: $drop" >&2
fi
dropped() { case ",$drop," in *",$1,"*) return 0 ;; esac; return 1; }

# Limits. RLIMIT_NPROC counts every process and thread of the user: mpirun, 3 ranks and their
# OpenMP, Open MPI and oneDNN threads stay well under 256 (solution 10: 4 threads a rank). Address space: 2 GiB
# a process (solution 10 on the graded sizes peaks at 0.75 GiB).
nproc=${SANDBOX_NPROC:-256} nofile=${SANDBOX_NOFILE:-512} fsize=${SANDBOX_FSIZE:-67108864}
cpu=${SANDBOX_CPU:-120} as=${SANDBOX_AS:-2147483648}
limits="--nproc=$nproc --nofile=$nofile --fsize=$fsize --cpu=$cpu --as=$as --core=0"
dropped limits && limits=""

# The allow-listed environment, as NAME=VALUE lines.
envs=$(env | grep -E '^(HVDLAB_|HVD_|OMPI_MCA_|OMP_)[A-Za-z0-9_]*=' | grep -v '^HVDLAB_SANDBOX_TEST=')
base_env="PATH=/usr/local/bin:/usr/bin:/bin
HOME=$work
TMPDIR=/tmp
LANG=C.UTF-8"

backend=${SANDBOX_BACKEND:-}
if [ -z "$backend" ]; then
    if command -v bwrap >/dev/null 2>&1 && bwrap --unshare-all --ro-bind / / true 2>/dev/null; then
        backend=bwrap
    elif [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v setpriv >/dev/null \
         && command -v prlimit >/dev/null; then
        backend=unshare
    else
        die "no sandbox available: bwrap cannot make namespaces here, and not root for unshare (install Debian's bubblewrap)"
    fi
fi

# No descriptor of the caller's but stdin, stdout and stderr goes in (the class runner's locks,
# anything the grader left open): bash closes the others, then execs the rest of the line.
closefds="bash -c 'for f in /proc/\$\$/fd/*; do n=\${f##*/}; [ \"\$n\" -gt 2 ] && eval \"exec \$n>&-\" 2>/dev/null; done; exec \"\$@\"' bash"

# What /etc the programs inside need: the loader's cache, Open MPI's and PMIx's settings, the
# alternatives links (mpicc, mpirun), hosts for localhost.
etc_files="/etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d /etc/alternatives /etc/openmpi \
/etc/hosts /etc/nsswitch.conf /etc/localtime /etc/passwd /etc/group"

if [ "$backend" = bwrap ]; then
    opts=""
    # o ARG...: appends each, single-quoted for the eval below (builtins only: a run starts fast).
    o() {
        for a in "$@"; do
            r=""
            while :; do
                case $a in
                *"'"*) r="$r${a%%"'"*}'\\''"; a=${a#*"'"} ;;
                *) r="$r$a"; break ;;
                esac
            done
            opts="$opts '$r'"
        done
    }
    o --die-with-parent --new-session --clearenv
    dropped net || o --unshare-net
    dropped pid || o --unshare-pid
    o --unshare-ipc --unshare-uts --unshare-cgroup-try --hostname localhost
    if dropped fs; then
        o --bind / /
    else
        o --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
          --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
        for f in $etc_files; do o --ro-bind-try "$f" "$f"; done
        o --ro-bind-try /sys/devices/system/cpu /sys/devices/system/cpu
        o --proc /proc --dev /dev
        dropped disk || o --size "$tmp_size"
        o --tmpfs /tmp
        dropped disk || o --size "$tmp_size"
        o --tmpfs /dev/shm
        if [ -n "$kit" ]; then
            o --ro-bind "$kit/common" /kit/common --ro-bind "$kit_lib" /kit/lib/libhvdlab.a
            [ -d "$kit/datasets/fashion-mnist" ] && o --ro-bind "$kit/datasets/fashion-mnist" /kit/datasets/fashion-mnist
        fi
        old_ifs=$IFS; IFS='
'
        for p in $ro_list; do o --ro-bind "$p" "$p"; done
        for p in $rw_list; do o --bind "$p" "$p"; done
        IFS=$old_ifs
        o --bind "$work" "$work"
    fi
    o --chdir "$work"
    if dropped env; then
        IFS='
'; for kv in $(env); do o --setenv "${kv%%=*}" "${kv#*=}"; done; unset IFS
    else
        IFS='
'; for kv in $base_env $envs; do o --setenv "${kv%%=*}" "${kv#*=}"; done; unset IFS
    fi
    # As root: drop to the unprivileged uid first, so bwrap makes an unprivileged user namespace
    # and the processes are that uid outside too (their count is what RLIMIT_NPROC limits).
    user=""
    if [ "$(id -u)" = 0 ] && ! dropped user; then
        user="setpriv --reuid=$uid --regid=$uid --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs"
    fi
    lim=""
    [ -n "$limits" ] && lim="prlimit $limits --"
    eval "exec $closefds $lim $user bwrap $opts -- \"\$@\""
fi

# unshare backend (root only): new namespaces, then inside.sh (as root in them) builds the root
# from the same allow-list, brings lo up, and chroots + setpriv's to the uid.
[ "$(id -u)" = 0 ] || die "the unshare backend needs root"
ns="--mount --ipc --uts --propagation private --fork --kill-child"
dropped net || ns="$ns --net"
dropped pid || ns="$ns --pid --mount-proc"
lim=""
[ -n "$limits" ] && lim="prlimit $limits --"
export SB_WORK="$work" SB_KIT="$kit" SB_KIT_LIB="$kit_lib" SB_UID="$uid" SB_TMP_SIZE="$tmp_size" SB_RO="$ro_list" \
       SB_RW="$rw_list" SB_ETC="$etc_files" SB_DROP="$drop" SB_ENV="$base_env
$envs"
# shellcheck disable=SC2086
eval "exec $closefds $lim unshare $ns sh \"\$here/inside.sh\" \"\$@\""
