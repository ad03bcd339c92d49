#!/bin/sh
# grade_screen.sh — the class mode's forgery screen, run by tools/grade_class.sh before grading,
# outside the sandbox (it reads sources and objects; it runs nothing of the student's). It flags
# for review and never changes points. Per submitted step it flags:
#   - an #include of anything but the kit's common/ headers ("..." found under common/) and the
#     system's (<...>): a path with .. or /, a header missing from common/, a computed #include;
#   - inline assembly, and any mention of HVDLAB_TRACE (the graders' trace folder);
#   - with GRADE_OBJ_DIR set (the runner's compiled stepNN.o, and stepNN.d when it kept the
#     compiler's dependency list): undefined symbols on the deny list below (nm -u), and any
#     header the compiler read from outside common/ and the system's folders;
#   - the same normalised source (comments and white space removed, cpp -fpreprocessed) as the
#     kit's solution of this step ("same as the reference") or of another step, or as another
#     student's file of this step ("same as <id>"); the untouched exercise is not flagged.
# Usage: grade_screen.sh STUDENT_SRC_DIR ID SUBMISSIONS_DIR KIT_ROOT
# Prints "stepNN<TAB>flag" lines on stdout; exit 0 even when it flags; 2 on bad arguments.
set -u
if [ $# -ne 4 ]; then
    echo "usage: grade_screen.sh STUDENT_SRC_DIR ID SUBMISSIONS_DIR KIT_ROOT" >&2
    exit 2
fi
src=$1 id=$2 subs=$3 kit=$4
for d in "$src" "$subs" "$kit/common" "$kit/solutions" "$kit/steps"; do
    [ -d "$d" ] || { echo "grade_screen: $d: not a folder" >&2; exit 2; }
done
MAX=262144 # the runner takes step files of at most 256 KiB
# Calls a submission has no business making: the trace writer (trace_*), starting programs,
# the network, other processes, loading code, raw system calls.
DENY='trace_[a-z_]* execl execle execlp execv execve execvp execvpe fexecve system popen fork
vfork clone clone3 posix_spawn posix_spawnp socket connect ptrace dlopen dlmopen dlsym syscall
kill tgkill tkill pidfd_send_signal process_vm_writev'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A step file the runner would take: a regular file (no link), not too large.
step_file() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(wc -c <"$1")" -le $MAX ]; }

# The file's text without comments and white space, as a hash; "" if cpp cannot read it.
norm_hash() {
    cpp -fpreprocessed -dD -P -w "$1" 2>/dev/null | tr -d ' \t\r\n\f\v' | sha256sum | cut -c1-64
}

# The other students' file of step n: SUBMISSIONS/<id>/stepNN.c or .../steps/stepNN.c.
other_file() {
    for f in "$1/step$2.c" "$1/steps/step$2.c"; do
        step_file "$f" && { echo "$f"; return 0; }
    done
    return 1
}

flag() { printf 'step%s\t%s\n' "$1" "$2"; }

# The kit's exercises and solutions, hashed once.
for r in 01 02 03 04 05 06 07 08 09 10; do
    echo "$r $(norm_hash "$kit/steps/step$r.c") $(norm_hash "$kit/solutions/step$r.c")"
done >"$tmp/kit"

for n in 01 02 03 04 05 06 07 08 09 10; do
    f=$src/step$n.c
    step_file "$f" || continue
    # One logical line per directive: backslash-newlines joined.
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$f" >"$tmp/joined"
    grep -E '^[[:space:]]*#[[:space:]]*include' "$tmp/joined" | while IFS= read -r line; do
        h=$(printf '%s\n' "$line" | sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*([<"][^>"]*[>"]).*/\1/p')
        name=$(printf '%s' "$h" | cut -c2- | sed 's/.$//')
        case $h in
        '') flag $n "computed #include: $(printf '%s' "$line" | cut -c1-80)" ;;
        *..* | [\<\"]/*) flag $n "header outside common/ and the system's: $h" ;;
        \"*) [ -f "$kit/common/$name" ] || flag $n "header outside common/ and the system's: $h" ;;
        esac
    done
    grep -qE '(^|[^A-Za-z0-9_])(__asm__|__asm|asm)[[:space:]]*(volatile|__volatile__)?[[:space:]]*\(' "$tmp/joined" &&
        flag $n "inline assembly"
    grep -q 'HVDLAB_TRACE' "$tmp/joined" && flag $n "names HVDLAB_TRACE, the graders' trace folder"

    obj=${GRADE_OBJ_DIR:-}/step$n.o
    if [ -n "${GRADE_OBJ_DIR:-}" ] && [ -f "$obj" ]; then
        nm -u "$obj" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$tmp/undef"
        denied=$(for p in $DENY; do grep -xE "$p" "$tmp/undef"; done | sort -u | tr '\n' ' ')
        [ -n "$denied" ] && flag $n "calls on the deny list: ${denied% }"
        strings -a "$obj" 2>/dev/null | grep -q HVDLAB_TRACE && ! grep -q HVDLAB_TRACE "$tmp/joined" &&
            flag $n "its object names HVDLAB_TRACE, the graders' trace folder"
    fi
    dep=${GRADE_OBJ_DIR:-}/step$n.d
    if [ -n "${GRADE_OBJ_DIR:-}" ] && [ -f "$dep" ]; then
        # make-style: "target: dep dep \" lines; the first dependency is the source itself.
        sed 's/\\$//' "$dep" | tr ' ' '\n' | grep -vE '^$|:$' | tail -n +2 | while IFS= read -r h; do
            case $h in
            /usr/* | /etc/alternatives/*) ;;
            common/* | */common/* | /kit/common/*) # /kit: the kit as the sandbox shows it
                case $h in *..*) flag $n "compiled with a header outside common/: $h" ;; esac ;;
            *) flag $n "compiled with a header outside common/ and the system's: $h" ;;
            esac
        done
    fi

    mine=$(norm_hash "$f")
    grep -q "^$n $mine " "$tmp/kit" && continue # the untouched exercise
    for r in $(awk -v h="$mine" '$3 == h {print $1}' "$tmp/kit"); do
        if [ "$r" = $n ]; then flag $n "same as the reference"
        else flag $n "same as the reference of step $r"; fi
    done
    for d in "$subs"/*/; do
        other=$(basename "$d")
        [ "$other" = "$id" ] && continue
        g=$(other_file "${d%/}" $n) || continue
        [ "$mine" = "$(norm_hash "$g")" ] && flag $n "same as $other"
    done
done | awk '!seen[$0]++'
exit 0
