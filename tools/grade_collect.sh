#!/bin/sh
# tools/grade_collect.sh SRC DEST — take one student's submission (the class runner's first
# step). From SRC/ or SRC/steps/ only the regular files step01.c..step10.c of at most 256 KiB are
# copied to DEST/ (the one directly in SRC wins); every other entry under SRC is listed in
# DEST/ignored.txt as "path<TAB>why". A link is never followed. Copies are made first and
# checked after, so a file that changes meanwhile cannot slip past the size limit.
set -u
src=$1 dest=$2
max=262144
mkdir -p "$dest" || exit 1
: >"$dest/ignored.txt"
taken=""
for n in 01 02 03 04 05 06 07 08 09 10; do
    for rel in "step$n.c" "steps/step$n.c"; do
        f="$src/$rel"
        [ -e "$f" ] || [ -L "$f" ] || continue
        case " $taken " in *" step$n.c "*) continue ;; esac  # the other one is listed below
        if [ -L "$f" ] || [ ! -f "$f" ]; then continue; fi
        case "$rel" in steps/*) [ -L "$src/steps" ] && continue ;; esac
        head -c $((max + 1)) <"$f" >"$dest/step$n.c" 2>/dev/null || { rm -f "$dest/step$n.c"; continue; }
        if [ "$(wc -c <"$dest/step$n.c")" -gt "$max" ]; then
            rm -f "$dest/step$n.c"
            continue
        fi
        taken="$taken $rel"
        [ "$rel" = "step$n.c" ] && taken="$taken step$n.c"
        [ "$rel" = "steps/step$n.c" ] && taken="$taken step$n.c"
    done
done
# Everything not taken, with the reason (find does not follow links).
find "$src" -mindepth 1 \( -type d -name steps -path "$src/steps" \) -prune -o -print 2>/dev/null |
    sed "s|^$src/||" >"$dest/.all"
find "$src/steps" -mindepth 1 -print 2>/dev/null | sed "s|^$src/||" >>"$dest/.all"
[ -d "$src/steps" ] && [ ! -L "$src/steps" ] || { [ -e "$src/steps" ] || [ -L "$src/steps" ]; } && echo steps >>"$dest/.all"
sort -u "$dest/.all" | while IFS= read -r rel; do
    case " $taken " in *" $rel "*) continue ;; esac
    [ "$rel" = steps ] && [ -d "$src/steps" ] && [ ! -L "$src/steps" ] && continue
    f="$src/$rel"
    base=${rel##*/}
    if [ -L "$f" ]; then why="a link (never followed)"
    elif [ -d "$f" ]; then why="a folder"
    elif [ ! -f "$f" ]; then why="not a regular file"
    else
        case "$base" in
        step0[1-9].c | step10.c)
            if [ "$(wc -c <"$f")" -gt "$max" ]; then why="larger than 256 KiB"
            else why="another copy of $base was taken"; fi ;;
        *) why="not a stepNN.c (01-10)" ;;
        esac
    fi
    printf '%s\t%s\n' "$(printf '%s' "$rel" | tr '\t\n' '  ')" "$why"
done >"$dest/ignored.txt"
rm -f "$dest/.all"
