#!/bin/sh
# compare_speed.sh OLD NEW — does a change of the runtime leave its speed where it was?
# OLD and NEW: two build folders (each holding bench/train_speed and bench/allreduce, as `make
# build/bench/train_speed build/bench/allreduce` makes them). Runs, ROUNDS times, OLD and NEW one
# after the other (the order swapped each round, so a drift of the machine's speed hits both):
#   - make bench-train's timed child, `train_speed --child` (a training step and the optimizer
#     at batch 128), for wrn-16-1 and wrn-16-4 at 1 and 2 threads: images/s;
#   - make bench-allreduce's program on 2 ranks, 64 KiB to 4 MiB: hvd_allreduce's median us per
#     call at each size, from its table.
# Prints one line per configuration: min and median of OLD and NEW and NEW/OLD of the medians
# (above 1 is faster for images/s, slower for us). Nothing is judged: the figures are for the
# reader (timings on a shared machine swing ±10 %).
# Env: ROUNDS (default 5), MPIRUN (default mpirun --oversubscribe, --allow-run-as-root as root).
set -u
[ $# -eq 2 ] || { echo "usage: compare_speed.sh OLD_BUILD NEW_BUILD" >&2; exit 2; }
for b in "$1" "$2"; do
    for p in bench/train_speed bench/allreduce; do
        [ -x "$b/$p" ] || { echo "compare_speed: $b/$p: not built" >&2; exit 2; }
    done
done
rounds=${ROUNDS:-5}
mpirun=${MPIRUN:-mpirun --oversubscribe $([ "$(id -u)" = 0 ] && echo --allow-run-as-root)}
work=$(mktemp -d "${TMPDIR:-/tmp}/compare-speed.XXXXXX")
trap 'rm -rf "$work"' EXIT

# one_run WHICH BUILD: appends "config value" lines to $work/WHICH.
one_run() {
    for m in "wrn-16-1 10" "wrn-16-4 3"; do
        set -- "$1" "$2" $m
        for t in 1 2; do
            v=$("$2/bench/train_speed" --child --model "$3" --threads "$t" --iters "$4" \
                --warmup 1 | awk '$1 == "kit.images_per_s" {print $2}')
            echo "train $3 threads=$t images/s ${v:-nan}" >>"$work/$1"
        done
    done
    # the table's rows: "size count | path min median ...": hvd_allreduce's median us per call
    $mpirun -n 2 "$2/bench/allreduce" --min-bytes 64K --max-bytes 4M --passes 20 2>/dev/null |
        awk -v out="$work/$1" '/^ *[0-9]+[KMG]? +[0-9]+ \|/ {print "allreduce " $1 " us/call", $6 >> out}'
}

i=0
while [ "$i" -lt "$rounds" ]; do
    if [ $((i % 2)) = 0 ]; then one_run old "$1"; one_run new "$2"; else one_run new "$2"; one_run old "$1"; fi
    i=$((i + 1))
done

# min and median of each configuration's values, OLD against NEW
stats() { # which config -> "min median"
    grep -F "$2 " "$work/$1" | awk '{print $NF}' | sort -g |
        awk '{v[NR] = $1} END {if (NR) printf "%s %s", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
echo "compare-speed: OLD $1, NEW $2, $rounds rounds interleaved; min / median"
awk '{$NF = ""; print}' "$work/old" | sort -u | sort -s -k1,1 -k2,2h | while read -r cfg; do
    o=$(stats old "$cfg")
    n=$(stats new "$cfg")
    echo "$o $n" | awk -v c="$cfg" '{printf "%-40s old %9.2f / %9.2f  new %9.2f / %9.2f  new/old %.3f\n", c, $1, $2, $3, $4, ($2 > 0 ? $4 / $2 : 0)}'
done
