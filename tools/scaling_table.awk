# scaling_table.awk — raw.csv of tools/scaling.sh to scaling.csv (file csv) and a terminal table:
# per mode and W the median over rounds of each time, the fastest step of all rounds, and
# speedup and efficiency against the same mode's W = 1: speedup = images/s ratio; the ideal grows
# with the cores in use, min(W x threads, cores) (var cores), so on one machine whose cores are
# split among the ranks the ideal is 1; efficiency = speedup / ideal. eff_min: the same from
# the fastest step of each (the less noisy figure on a shared machine).
function median(key,    n, i, j, t, a) {
    n = split(vals[key], a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    k = $col["mode"] SUBSEP $col["ranks"]
    if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
    used[k] = $col["ranks"] * $col["threads"]; if (used[k] > cores) used[k] = cores
    info[k] = $col["threads"] "," $col["oversubscribed"] "," $col["batch_per_rank"] "," $col["global_batch"] "," $col["steps"]
    split("step_median_s compute_s comm_s comm_max_s comm_clock_s images_per_s", f, " ")
    for (i in f) vals[k SUBSEP f[i]] = vals[k SUBSEP f[i]] " " $col[f[i]]
    if (!(k in smin) || $col["step_min_s"] + 0 < smin[k]) smin[k] = $col["step_min_s"] + 0
    rounds[k]++
}
END {
    print "mode,ranks,threads,oversubscribed,batch_per_rank,global_batch,steps,rounds,step_min_s,step_median_s,compute_s,comm_s,comm_max_s,comm_clock_s,images_per_s,speedup,ideal,efficiency,efficiency_from_min" > csv
    printf "%-6s %3s %4s %5s %6s %8s %8s %8s %8s %9s %7s %5s %6s %7s\n", "mode", "W", "thr", "batch", "global", "step s", "min s", "G/W s", "C(W) s", "images/s", "speedup", "ideal", "eff.", "eff.min"
    for (n = 1; n <= nk; n++) {
        k = order[n]; split(k, km, SUBSEP); split(info[k], in_, ",")
        ips = median(k SUBSEP "images_per_s")
        base = km[1] SUBSEP 1
        ips1 = (base in seen) ? median(base SUBSEP "images_per_s") : 0
        sp = ips1 > 0 ? ips / ips1 : 0
        ideal = (base in seen) ? used[k] / used[base] : 1
        eff = sp / ideal
        effmin = (base in seen) ? (in_[4] / smin[k]) / (split(info[base], b_, ",") ? b_[4] / smin[base] : 1) / ideal : 0
        printf "%s,%s,%s,%s,%s,%s,%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.2f,%.4f,%.4f,%.4f,%.4f\n", km[1], km[2], in_[1], in_[2], in_[3], in_[4], in_[5], rounds[k], smin[k], median(k SUBSEP "step_median_s"), median(k SUBSEP "compute_s"), median(k SUBSEP "comm_s"), median(k SUBSEP "comm_max_s"), median(k SUBSEP "comm_clock_s"), ips, sp, ideal, eff, effmin > csv
        printf "%-6s %3s %4s %5s %6s %8.4f %8.4f %8.4f %8.4f %9.1f %7.2f %5.2f %6.3f %7.3f%s\n", km[1], km[2], in_[1], in_[3], in_[4], median(k SUBSEP "step_median_s"), smin[k], median(k SUBSEP "compute_s"), median(k SUBSEP "comm_s"), ips, sp, ideal, eff, effmin, in_[2] == "yes" ? "  oversubscribed" : ""
    }
    print "(medians over rounds; min s: the fastest step of all rounds; G/W: compute per step per rank; C(W): time in hvd_allreduce per step from HVD_PROFILE)"
    print "written: " csv
}
