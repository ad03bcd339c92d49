# allreduce_gpu_compare.awk — make bench-allreduce-gpu's verdict: the host-staged path (2 ranks
# on one GPU) against PyTorch's gloo allreduce of CUDA tensors (the peer) and against its own
# copy ceiling, per size, and issue 13's two targets.
#
#   awk -f tools/allreduce_gpu_compare.awk N1 N2 GLOO
# N1: `mpirun -n 1 build/cuda/bench/allreduce_gpu` (rows "size | time algbw busbw | d2h h2d
#     ceiling"); N2: the same with -n 2 (rows "size | time algbw busbw", and "| d2h h2d ceiling"
#     measured with both ranks copying at once); GLOO: bench/peer_gloo_allreduce.py (rows
#     "gloo.<size>.time_us T us algbw A busbw B").
# Targets: staged time <= gloo time at every size (ratio gloo/staged >= 1.0) and staged algbw
# >= 70 % of the ceiling (bytes / (t_d2h + t_h2d), one rank's copies) from 64 MiB. A third line
# holds the staged path to the ceiling its two ranks can have: their copies at once on the one
# GPU ("% both"), where N2 measured it.
function bytes(s) { return s ~ /M$/ ? s * 1048576 : s * 1024 } # awk reads "64K" as 64
# "% of ceiling" for row s against c (an array), or 0 where c has no figure
function pct(s, c) { return (s in c) && c[s] > 0 ? 100 * alg[s] / c[s] : 0 }
FILENAME == ARGV[1] && $2 == "|" && NF >= 9 { ceil[$1] = $9 }
FILENAME == ARGV[2] && $2 == "|" && NF >= 5 {
    st[$1] = $3; alg[$1] = $4; order[++n] = $1
    if (NF >= 9) both[$1] = $9
}
FILENAME == ARGV[3] && $1 ~ /^gloo\./ { split($1, f, "."); gl[f[2]] = $2 }
END {
    if (n == 0) { print "bench-allreduce-gpu: no staged rows (did the 2-rank run fail?)"; exit 1 }
    printf "%9s | %12s %12s %11s | %13s %13s %8s | %13s %8s\n", "size", "staged us", "gloo us",
           "gloo/staged", "staged GB/s", "ceiling GB/s", "% ceil", "both at once", "% both"
    slow = ""; low = ""; lowb = ""; missing = ""; pcs = ""; pcb = ""; rmin = -1
    for (i = 1; i <= n; i++) {
        s = order[i]
        r = (s in gl) && st[s] > 0 ? gl[s] / st[s] : 0
        pc = pct(s, ceil); pb = pct(s, both)
        printf "%9s | %12.1f %12s %11s | %13.2f %13s %8s | %13s %8s\n", s, st[s],
               (s in gl) ? sprintf("%.1f", gl[s]) : "-", r ? sprintf("%.2f", r) : "-", alg[s],
               (s in ceil) ? ceil[s] : "-", pc ? sprintf("%.0f", pc) : "-",
               (s in both) ? both[s] : "-", pb ? sprintf("%.0f", pb) : "-"
        if (!(s in gl)) missing = missing " " s
        else if (r < 1.0) slow = slow " " s
        if ((s in gl) && (rmin < 0 || r < rmin)) { rmin = r; rat = s }
        if (bytes(s) >= 64 * 1048576) {
            if (pc < 70) low = low " " s
            pcs = pcs (pcs == "" ? "" : ", ") s " " sprintf("%.0f", pc) "%"
            if (s in both) {
                if (pb < 70) lowb = lowb " " s
                pcb = pcb (pcb == "" ? "" : ", ") s " " sprintf("%.0f", pb) "%"
            }
        }
    }
    # the figures behind each verdict, so that the summary line alone can be quoted
    fig = rmin >= 0 ? sprintf(" (lowest gloo/staged %.2f, at %s)", rmin, rat) : ""
    figc = pcs != "" ? " (" pcs ")" : ""
    printf "bench-allreduce-gpu: staged >= 1.0x gloo at every size: %s\n",
           (missing != "" ? "no gloo figure for" missing : slow == "" ? "met" : "NOT met at" slow) fig
    printf "bench-allreduce-gpu: staged >= 70%% of its copy ceiling from 64 MiB: %s\n",
           (low == "" ? "met" : "NOT met at" low) figc
    if (pcb != "")
        printf "bench-allreduce-gpu: staged >= 70%% of the copy ceiling of both ranks copying " \
               "at once from 64 MiB: %s (%s)\n", (lowb == "" ? "met" : "NOT met at" lowb), pcb
}
