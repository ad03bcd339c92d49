#!/bin/sh
# tools/sandbox/inside.sh — the unshare backend's second half (see run.sh): runs as root in the
# new namespaces, builds a root file system from the allow-list on a small tmpfs, brings lo up,
# then chroots and drops to the unprivileged uid (setpriv), never back to root. Env from run.sh:
# SB_WORK SB_KIT SB_KIT_LIB SB_UID SB_TMP_SIZE SB_RO SB_RW SB_ETC SB_DROP SB_ENV. "$@" is the command.
set -u
die() { echo "sandbox: $*" >&2; exit 125; }
dropped() { case ",$SB_DROP," in *",$1,"*) return 0 ;; esac; return 1; }
case ",$SB_DROP," in *,net,*) ;; *) ip link set lo up || die "cannot bring lo up" ;; esac

R=$(mktemp -d /tmp/hvdlab-sandbox-root.XXXXXX) || die "mktemp failed"
mount -t tmpfs -o size=16m,mode=0755 tmpfs "$R" || die "cannot mount the root tmpfs"
# bind SRC at the same path under R; ro when $2 = ro
bind() {
    [ -e "$1" ] || return 0
    if [ -d "$1" ]; then mkdir -p "$R$1"; else mkdir -p "$R$(dirname "$1")" && : >"$R$1"; fi
    mount --rbind "$1" "$R$1" || die "cannot bind $1"
    [ "$2" = ro ] && { mount -o remount,bind,ro "$R$1" || die "cannot make $1 read-only"; }
    return 0
}
bind_to() { # SRC DST ro
    [ -e "$1" ] || return 0
    if [ -d "$1" ]; then mkdir -p "$R$2"; else mkdir -p "$R$(dirname "$2")" && : >"$R$2"; fi
    mount --bind "$1" "$R$2" && mount -o remount,bind,ro "$R$2" || die "cannot bind $1"
}
tmpfs_at() {
    mkdir -p "$R$1"
    if dropped disk; then mount -t tmpfs -o mode=1777 tmpfs "$R$1"
    else mount -t tmpfs -o "size=$SB_TMP_SIZE,mode=1777" tmpfs "$R$1"; fi || die "cannot mount $1"
}
if dropped fs; then
    umount "$R"; rmdir "$R"; R=""
else
    bind /usr ro
    for l in bin lib lib64 sbin; do ln -s "usr/$l" "$R/$l"; done
    for f in $SB_ETC; do bind "$f" ro; done
    bind /sys/devices/system/cpu ro
    mkdir -p "$R/proc" && mount -t proc proc "$R/proc" || die "cannot mount /proc"
    mkdir -p "$R/dev" && mount -t tmpfs -o size=1m,mode=0755 tmpfs "$R/dev"
    for d in null zero full random urandom tty; do bind "/dev/$d" rw; done
    ln -s /proc/self/fd "$R/dev/fd"
    tmpfs_at /tmp
    tmpfs_at /dev/shm
    if [ -n "$SB_KIT" ]; then
        bind_to "$SB_KIT/common" /kit/common
        bind_to "$SB_KIT_LIB" /kit/lib/libhvdlab.a
        bind_to "$SB_KIT/datasets/fashion-mnist" /kit/datasets/fashion-mnist
    fi
    IFS='
'
    for p in $SB_RO; do bind "$p" ro; done
    for p in $SB_RW; do bind "$p" rw; done
    unset IFS
    bind "$SB_WORK" rw
    mount -o remount,bind,ro "$R" || die "cannot make the root read-only"
fi

user="setpriv --reuid=$SB_UID --regid=$SB_UID --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs"
dropped user && user=""
envl=$SB_ENV
dropped env && envl=$(env)
root=/
[ -n "$R" ] && root=$R
# sh -c, not exec: the command is not pid 1 (pid 1 ignores signals it has no handler for).
# shellcheck disable=SC2086,SC2016
exec chroot "$root" $user env -i "SB_ENV=$envl" sh -c 'IFS="
"; for kv in $SB_ENV; do case ${kv%%=*} in "$kv" | "" | *[!A-Za-z0-9_]*) ;; *) export "$kv" ;; esac; done
unset SB_ENV IFS
cd "$1" || exit 125; shift; "$@"; exit $?' sh "$SB_WORK" "$@"
