# allreduce_gpu_ways.awk — make bench-allreduce-gpu's last table: the 2-rank host-staged runs
# side by side, the time of each way per size and the fastest, and for each opt-in way against
# the default whether it is faster at every size (an opt-in becomes the default only so).
#
#   awk -v ways="auto ipc host gpu hugepages" -f tools/allreduce_gpu_ways.awk N2 N2I N2C N2G N2H
# Each file: `mpirun -n 2 build/cuda/bench/allreduce_gpu` with one HVDLAB_STAGED_REDUCE way (rows
# "size | time algbw busbw ..."); ways names them in the files' order, the default first. A file
# without rows (a run that failed or was cut) shows "-" and is left out of the verdicts.
# A file's way is its place among the arguments: an empty file has no line to count it by.
BEGIN { nw = split(ways, name, " "); for (i = 1; i < ARGC; i++) way[ARGV[i]] = i }
$2 == "|" && NF >= 5 && $1 !~ /^#/ {
    w = way[FILENAME]
    if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
    t[w, $1] = $3; has[w] = 1
}
END {
    if (n == 0) { print "bench-allreduce-gpu: ways: no rows"; exit 1 }
    printf "%9s |", "size"
    for (i = 1; i <= nw; i++) printf " %11s", name[i] " us"
    printf " | %s\n", "fastest"
    for (k = 1; k <= n; k++) {
        s = order[k]; best = 0
        printf "%9s |", s
        for (i = 1; i <= nw; i++) {
            printf " %11s", ((i, s) in t) ? t[i, s] : "-"
            if (((i, s) in t) && (best == 0 || t[i, s] < t[best, s])) best = i
        }
        printf " | %s\n", best ? name[best] : "-"
    }
    for (i = 2; i <= nw; i++) {
        if (!has[i] || !has[1]) {
            printf "bench-allreduce-gpu: %s against %s: no rows from %s\n", name[i], name[1],
                   has[i] ? name[1] : name[i]
            continue
        }
        slower = ""; lo = -1; hi = 0
        for (k = 1; k <= n; k++) {
            s = order[k]
            if (!((i, s) in t) || !((1, s) in t) || t[i, s] <= 0) continue
            r = t[1, s] / t[i, s]
            if (r < 1.0) slower = slower " " s
            if (lo < 0 || r < lo) lo = r
            if (r > hi) hi = r
        }
        printf "bench-allreduce-gpu: %s against %s: %s (%.2f-%.2fx the default's speed)\n",
               name[i], name[1], slower == "" ? "faster at every size" : "slower at" slower, lo, hi
    }
}
