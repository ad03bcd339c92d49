#!/bin/sh
# check_layers.sh — the runtime's dependencies point one way, from the training glue down to the
# base: a file in common/<part>/ may include its own part and the parts below it, never one above
# or beside it. Includes name their folder ("hvd/hvd.h"), so one grep finds them all.
# Then, from the built objects in $BUILD (default build; with CUDA=1 also the .cu objects), that
# no two files call each other, directly or round a circle (nm: who defines and who uses each
# symbol; tsort finds the loops).
# Prints each include or circle that points the wrong way and exits 1; else one summary line.
set -u
B=${BUILD:-build}
me=check-layers
[ "${CUDA:-0}" = 1 ] && me=check-layers-cuda
cd "$(dirname "$0")/.."
# Each part and the parts it may include (besides itself), bottom to top.
allowed() {
    case $1 in
    base)     echo "" ;;
    prof)     echo "base" ;;
    guard)    echo "base" ;;
    coll)     echo "base prof guard" ;;
    coll_gpu) echo "base prof guard coll" ;;
    hvd)      echo "base prof guard coll coll_gpu" ;;
    data)     echo "base" ;;
    nn)       echo "base" ;;
    model)    echo "base nn" ;;
    optim)    echo "base hvd model" ;;
    ckpt)     echo "base model optim" ;;
    train)    echo "base guard hvd data model optim ckpt" ;;
    *)        echo "?" ;;
    esac
}
bad=0
n=0
for f in common/*/*.[ch] common/*/*.cu; do
    [ -e "$f" ] || continue
    part=$(basename "$(dirname "$f")")
    ok=$(allowed "$part")
    if [ "$ok" = "?" ]; then
        echo "$me: $f: common/$part/ is not a known part (add it to tools/check_layers.sh)"
        bad=$((bad + 1))
        continue
    fi
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        n=$((n + 1))
        case $inc in
        */*) to=${inc%%/*} ;;
        *) echo "$me: $f includes \"$inc\": name its folder (\"part/$inc\")"
           bad=$((bad + 1)); continue ;;
        esac
        [ "$to" = "$part" ] && continue
        case " $ok " in
        *" $to "*) ;;
        *) echo "$me: $f includes \"$inc\": $part/ may include only $part/${ok:+ and $ok}"
           bad=$((bad + 1)) ;;
        esac
    done
done
if [ "$bad" -gt 0 ]; then
    echo "$me: $bad include(s) point the wrong way (order: base, prof | guard, coll, coll_gpu, hvd | data | nn, model, optim, ckpt, train)"
    exit 1
fi

# Calls: "definer user" edges between the runtime's object files.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
objs=0
# A CUDA build (CUDA=1) is read with its .cu objects: host code calls into them and they call
# back, so a circle may pass through one.
srcs="common/*/*.c"
[ "${CUDA:-0}" = 1 ] && srcs="$srcs common/*/*.cu"
for src in $srcs; do
    [ -e "$src" ] || continue
    f=${src#common/}
    f=${f%.*}
    o=$B/common/$f.o # only objects of sources that exist: a renamed file leaves its old .o behind
    if [ ! -e "$o" ]; then
        echo "$me: $o is missing (build the runtime first: make lib)"
        exit 1
    fi
    objs=$((objs + 1))
    nm "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ { print $3, f }' >>"$tmp/defs"
    nm -u "$o" | awk -v f="$f" '{ print $NF, f }' >>"$tmp/uses"
done
sort -o "$tmp/defs" "$tmp/defs"
sort -o "$tmp/uses" "$tmp/uses"
join "$tmp/defs" "$tmp/uses" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$tmp/edges"
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loops"; then
    echo "$me: files in common/ that call each other (round a circle):"
    sed -n 's/^tsort: \([a-z_]*\/[a-z_0-9]*\)$/  \1/p' "$tmp/loops" | sort -u
    exit 1
fi
edges=$(wc -l <"$tmp/edges")
echo "$me: $n includes in common/*/ all point down (base <- prof, guard <- coll <- coll_gpu <- hvd; base <- data, nn <- model; hvd, model <- optim <- ckpt <- train); $edges calls between $objs files, no circle"
