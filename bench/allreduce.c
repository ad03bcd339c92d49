/* bench/allreduce.c — hvd_allreduce against Open MPI's MPI_Allreduce, nccl-tests style.
 *
 * For each size from --min-bytes to --max-bytes (×2), the implementations reduce the same
 * in-place float buffer with SUM: hvd_allreduce on the path it picks for that size and layout
 * (coll/allreduce.h: shm when every rank is on one host, hierarchical with
 * HVD_HIERARCHICAL_ALLREDUCE=1 on several hosts, else the ring), MPI_Allreduce, and
 * hvd_allreduce forced onto the ring (the "ring" columns: the flat ring across all ranks).
 * They alternate A B B A A B … over many passes so that the
 * VM's fast and slow regimes hit both alike; each pass's time is the slowest rank's, and the
 * table shows min and median per call. busbw = algbw · 2(n-1)/n (nccl-tests). The memcpy
 * column is one rank copying a buffer of that size while the others wait: the ceiling.
 * hvd_allreduce runs with the settings in force (the stall inspector on unless
 * HVD_STALL_CHECK_DISABLE=1) and, interleaved with the rest, with the stall inspector off: the
 * line under each size gives that time and the inspector's cost per call.
 *
 *   mpirun -n 2 build/bench/allreduce [--min-bytes 4K] [--max-bytes 256M] [--passes N]
 *                                     [--plain-malloc] [--variants SEG:BLOCK,…]
 *                                     [--pieces BYTES,…] [--cma-blocks BYTES,…]
 *                                     [--shm-whole BYTES,…]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/fatal.h"
#include "base/stats.h"
#include "base/timer.h"
#include "coll/allreduce.h"
#include "coll/cma.h"
#include "coll/ring.h"
#include "coll/shm.h"
#include "hvd/hvd.h"

/* Implementations timed: 0 hvd_allreduce, 1 MPI_Allreduce, 2 hvd_allreduce with the stall
 * inspector off, 3 hvd_allreduce on the ring, 4.. hvd_allreduce with other ring tuning
 * (--variants SEG:BLOCK,…) or other shared-memory piece sizes (--pieces, forced onto shm) or
 * single-copy read sizes (--cma-blocks, forced onto cma) or whole-piece limits of the window
 * with more ranks than cores (--shm-whole, 0 = never, forced onto shm),
 * for tuning on a new machine. */
#define MAXIMPL 12
#define STALL_OFF 2
#define RING_ONLY 3
#define FIRST_VARIANT 4
static int nimpl = FIRST_VARIANT;
static size_t var_seg[MAXIMPL], var_block[MAXIMPL], var_piece[MAXIMPL]; /* piece: shm variant */
static size_t var_cma[MAXIMPL]; /* bytes per read: a single-copy variant (--cma-blocks) */
static size_t var_whole[MAXIMPL]; /* 1 + the window's whole-piece limit (--shm-whole), forced shm */
static int profile_hvd;

static size_t parse_size(const char *flag, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    size_t mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = (size_t)1 << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mult = (size_t)1 << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mult = (size_t)1 << 30, end++;
    if (end == s || *end || v <= 0)
        fatal_error("%s %s: expected a size such as 4K, 64M or 1G", flag, s);
    return (size_t)(v * (double)mult);
}

static void fmt_size(size_t b, char *out, size_t len)
{
    if (b >= ((size_t)1 << 20))
        snprintf(out, len, "%zuM", b >> 20);
    else
        snprintf(out, len, "%zuK", b >> 10);
}

typedef struct {
    double min, med;
} stat2;

static stat2 stats(double *v, int n)
{
    stats_sort(v, (size_t)n);
    stat2 s = {v[0], n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])};
    return s;
}

/* Minor page faults per call of the last timed() block, the most of any rank's. MPI_Allreduce
 * takes fresh pages on every call at sizes where its temporary buffer is above glibc's mmap
 * threshold (32 MiB at most: from 64 MiB up with 2 ranks); what a fault costs differs from VM to
 * VM, and so does MPI's time there (see docs/benchmarks.md, "Allreduce"). */
static long last_faults;

static long minor_faults(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

/* The machine's settings that MPI's large-size times depend on (rank 0 prints them). */
static void print_memory_setting(void)
{
    char thp[128] = "unknown";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(thp, sizeof thp, f))
            snprintf(thp, sizeof thp, "unknown");
        thp[strcspn(thp, "\n")] = 0;
        fclose(f);
    }
    const char *mx = getenv("MALLOC_MMAP_MAX_"), *th = getenv("MALLOC_MMAP_THRESHOLD_");
    printf("# memory: transparent huge pages %s; glibc malloc MALLOC_MMAP_MAX_=%s "
           "MALLOC_MMAP_THRESHOLD_=%s\n", thp, mx ? mx : "(unset)", th ? th : "(unset)");
}

/* Seconds per call for `iters` calls, the slowest rank's. */
static double timed(int which, float *buf, size_t n, int iters)
{
    if (which >= FIRST_VARIANT && var_whole[which]) {
        shm_set_whole_bytes(var_whole[which] - 1);
        allreduce_force_path(ALLREDUCE_SHM);
    } else if (which >= FIRST_VARIANT && var_cma[which]) {
        cma_set_block_bytes(var_cma[which]);
        allreduce_force_path(ALLREDUCE_CMA);
    } else if (which >= FIRST_VARIANT && var_piece[which]) {
        shm_set_piece_bytes(var_piece[which]);
        allreduce_new_window(); /* collective; allocated (untimed) by the warm-up call below */
        allreduce_force_path(ALLREDUCE_SHM);
    } else if (which >= FIRST_VARIANT) {
        ring_set_tuning(var_seg[which], var_block[which]);
    }
    if (which == RING_ONLY)
        allreduce_force_path(ALLREDUCE_RING);
    if (which >= FIRST_VARIANT && var_piece[which] && iters > 0)
        hvd_allreduce(buf, n, HVD_SUM, "bench"); /* the window's allocation is not timed */
    int stall_was = hvd_stall_check();
    if (which == STALL_OFF)
        hvd_set_stall_check(0); /* every rank switches here, between calls */
    MPI_Barrier(MPI_COMM_WORLD);
    const long f0 = minor_faults();
    double t0 = timer_seconds();
    for (int i = 0; i < iters; i++) {
        if (which != 1)
            hvd_allreduce(buf, n, HVD_SUM, "bench");
        else
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double t = (timer_seconds() - t0) / iters, tmax;
    const long faults = iters > 0 ? (minor_faults() - f0) / iters : 0;
    ring_set_tuning(0, 0);
    cma_set_block_bytes(0);
    shm_set_whole_bytes((size_t)-1);
    allreduce_force_path(ALLREDUCE_AUTO);
    if (which >= FIRST_VARIANT && var_piece[which]) {
        shm_set_piece_bytes(0);
        allreduce_new_window();
        hvd_allreduce(buf, n, HVD_SUM, "bench"); /* the default window again, untimed */
    }
    hvd_set_stall_check(stall_was);
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&faults, &last_faults, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

/* Both implementations must give the exact sum of position- and rank-dependent values. */
static void verify(float *buf, size_t n, int rank, int size)
{
    for (int which = 0; which < 2; which++) {
        for (size_t i = 0; i < n; i++)
            buf[i] = (float)((i % 1000) + 1000 * rank);
        if (which == 0)
            hvd_allreduce(buf, n, HVD_SUM, "bench");
        else
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (size_t i = 0; i < n; i++) {
            float want = (float)((i % 1000) * size + 1000 * size * (size - 1) / 2);
            if (buf[i] != want)
                fatal_error("%s gave %g at index %zu of %zu, expected %g",
                            which ? "MPI_Allreduce" : "hvd_allreduce", buf[i], i, n, want);
        }
    }
    memset(buf, 0, n * sizeof *buf); /* timing runs on zeros: sums stay finite */
}

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    size_t min_b = 4 << 10, max_b = (size_t)256 << 20;
    int passes_arg = 0, plain = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--min-bytes") == 0)
            min_b = parse_size(argv[i], argv[i + 1]), i++;
        else if (i + 1 < argc && strcmp(argv[i], "--max-bytes") == 0)
            max_b = parse_size(argv[i], argv[i + 1]), i++;
        else if (i + 1 < argc && strcmp(argv[i], "--passes") == 0)
            passes_arg = atoi(argv[++i]);
        else if (strcmp(argv[i], "--profile-hvd") == 0)
            profile_hvd = 1; /* time hvd_allreduce only (for perf record) */
        else if (strcmp(argv[i], "--plain-malloc") == 0)
            plain = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--shm-whole") == 0) {
            for (char *tok = strtok(argv[++i], ","); tok && nimpl < MAXIMPL;
                 tok = strtok(NULL, ","))
                var_whole[nimpl++] = 1 + (strcmp(tok, "0") ? parse_size("--shm-whole", tok) : 0);
        }
        else if (i + 1 < argc && strcmp(argv[i], "--cma-blocks") == 0) {
            for (char *tok = strtok(argv[++i], ","); tok && nimpl < MAXIMPL;
                 tok = strtok(NULL, ","))
                var_cma[nimpl++] = parse_size("--cma-blocks", tok);
        }
        else if (i + 1 < argc && strcmp(argv[i], "--pieces") == 0) {
            for (char *tok = strtok(argv[++i], ","); tok && nimpl < MAXIMPL;
                 tok = strtok(NULL, ","))
                var_piece[nimpl++] = parse_size("--pieces", tok);
        }
        else if (i + 1 < argc && strcmp(argv[i], "--variants") == 0) {
            for (char *tok = strtok(argv[++i], ","); tok && nimpl < MAXIMPL; tok = strtok(NULL, ",")) {
                char *colon = strchr(tok, ':');
                if (!colon)
                    fatal_error("--variants %s: expected SEG:BLOCK pairs such as 256K:1M", tok);
                *colon = '\0';
                var_seg[nimpl] = parse_size("--variants", tok);
                var_block[nimpl] = parse_size("--variants", colon + 1);
                nimpl++;
            }
        }
        else
            fatal_error("unknown argument %s (use --min-bytes, --max-bytes, --passes, "
                        "--plain-malloc, --variants, --pieces, --cma-blocks, --shm-whole)",
                        argv[i]);
    }
    int rank = hvd_rank(), size = hvd_size();
    double worst_ratio = 1e30, at64[2] = {0, 0}; /* median busbw: hvd, MPI */
    double stall_cost_min = 0, stall_cost_med = 0; /* at the smallest size, seconds per call */
    size_t worst_at = 0;
    double bus = size > 1 ? 2.0 * (size - 1) / size : 1.0;
    if (rank == 0) {
        printf("# hvd_allreduce (%d ranks, %d host(s)%s, %s buffers) vs MPI_Allreduce and the "
               "ring alone, in place, float SUM; times per call, min/median over interleaved "
               "passes\n", size, allreduce_hosts(),
               getenv("HVD_HIERARCHICAL_ALLREDUCE") ? ", HVD_HIERARCHICAL_ALLREDUCE set" : "",
               plain ? "malloc" : "memory_alloc");
        print_memory_setting();
        printf("# %9s %11s | %-12s %21s %15s | %21s %15s | %21s | %6s %6s | %7s | %13s\n",
               "size", "count", "hvd path", "hvd time(us) min/med", "busbw GB/s m/m",
               "MPI time(us) min/med", "busbw GB/s m/m", "ring time(us) min/med", "MPI/hvd",
               "MPI/ring", "memcpy", "faults hvd/MPI");
    }
    /* The same kind of buffer the kit's model uses for its flat gradients (memory_alloc), for
     * both implementations; --plain-malloc for buffers of the C library instead. */
    float *buf = plain ? malloc(max_b) : memory_alloc(max_b);
    char *src = plain ? malloc(max_b) : memory_alloc(max_b), *dst = plain ? malloc(max_b) : memory_alloc(max_b);
    if (!buf || !src || !dst)
        fatal_error("cannot allocate 3 x %zu bytes", max_b);
    memset(src, 1, max_b);
    memset(dst, 0, max_b);
    for (size_t bytes = min_b; bytes <= max_b; bytes *= 2) {
        size_t n = bytes / sizeof(float);
        verify(buf, n, rank, size);
        /* Calls per timed block: ~8 MiB of traffic, at least one. */
        int iters = (int)((size_t)8 << 20) / (int)(bytes < ((size_t)8 << 20) ? bytes : (8 << 20));
        int passes = passes_arg ? passes_arg : (bytes >= ((size_t)64 << 20) ? 8 : 20);
        double *t[MAXIMPL];
        for (int k = 0; k < nimpl; k++) {
            t[k] = malloc((size_t)passes * sizeof(double));
            timed(k, buf, n, 1); /* warm-up */
        }
        long faults[MAXIMPL] = {0}; /* per call, the most of any pass */
        for (int p = 0; p < passes; p++) /* A B B A A B …: rotate, reverse every other pass */
            for (int j = 0; j < nimpl; j++) {
                int k = (p % 2 ? nimpl - 1 - j : j + p / 2) % nimpl;
                if (profile_hvd && k != 0) { /* --profile-hvd: only hvd_allreduce runs */
                    t[k][p] = 1.0;
                    continue;
                }
                t[k][p] = timed(k, buf, n, iters);
                faults[k] = last_faults > faults[k] ? last_faults : faults[k];
            }
        /* memcpy ceiling on rank 0 alone */
        double mc = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double best = 1e30;
            for (int p = 0; p < 5; p++) {
                double t0 = timer_seconds();
                for (int i = 0; i < iters; i++)
                    memcpy(dst, src, bytes);
                double dt = (timer_seconds() - t0) / iters;
                best = dt < best ? dt : best;
            }
            mc = (double)bytes / best / 1e9;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            stat2 h = stats(t[0], passes), m = stats(t[1], passes);
            char sz[32];
            fmt_size(bytes, sz, sizeof sz);
            double hb_min = bus * bytes / h.med / 1e9, hb_max = bus * bytes / h.min / 1e9;
            double mb_min = bus * bytes / m.med / 1e9, mb_max = bus * bytes / m.min / 1e9;
            stat2 rg = stats(t[RING_ONLY], passes);
            printf("  %9s %11zu | %-12s %10.1f %10.1f %7.2f %7.2f | %10.1f %10.1f %7.2f %7.2f | "
                   "%10.1f %10.1f | %7.2f %8.2f | %7.2f | %6ld %6ld\n", sz, n,
                   allreduce_path_name(allreduce_choice(buf, bytes)), h.min * 1e6, h.med * 1e6,
                   hb_max, hb_min, m.min * 1e6, m.med * 1e6, mb_max, mb_min, rg.min * 1e6,
                   rg.med * 1e6, m.med / h.med, m.med / rg.med, mc, faults[0], faults[1]);
            if (bytes >= (64u << 10) && m.med / h.med < worst_ratio) {
                worst_ratio = m.med / h.med;
                worst_at = bytes;
            }
            if (bytes == ((size_t)64 << 20)) { /* a WideResNet-16-10's gradients: 68 MiB */
                at64[0] = hb_min;
                at64[1] = mb_min;
            }
            stat2 off = stats(t[STALL_OFF], passes);
            printf("  %9s   stall inspector off: %10.1f %10.1f us; %s %+.1f us min, %+.1f us "
                   "median per call\n", "", off.min * 1e6, off.med * 1e6,
                   hvd_stall_check() ? "cost of it on:" : "off in both here, difference:",
                   (h.min - off.min) * 1e6, (h.med - off.med) * 1e6);
            if (bytes == min_b) {
                stall_cost_min = h.min - off.min;
                stall_cost_med = h.med - off.med;
            }
            for (int k = FIRST_VARIANT; k < nimpl; k++) {
                stat2 v = stats(t[k], passes);
                if (var_whole[k]) {
                    printf("  %9s   variant shm whole <= %zuK: %10.1f %10.1f us, ratio %.2f\n",
                           "", (var_whole[k] - 1) >> 10, v.min * 1e6, v.med * 1e6,
                           m.med / v.med);
                    continue;
                }
                if (var_cma[k]) {
                    printf("  %9s   variant cma block %zuK: %10.1f %10.1f us, ratio %.2f\n", "",
                           var_cma[k] >> 10, v.min * 1e6, v.med * 1e6, m.med / v.med);
                    continue;
                }
                if (var_piece[k]) {
                    printf("  %9s   variant shm piece %zuK: %10.1f %10.1f us, ratio %.2f\n", "",
                           var_piece[k] >> 10, v.min * 1e6, v.med * 1e6, m.med / v.med);
                    continue;
                }
                printf("  %9s   variant seg %zuK block %zuK: %10.1f %10.1f us, ratio %.2f\n", "",
                       var_seg[k] >> 10, var_block[k] >> 10, v.min * 1e6, v.med * 1e6,
                       m.med / v.med);
            }
            fflush(stdout);
        }
        for (int k = 0; k < nimpl; k++)
            free(t[k]);
    }
    if (rank == 0) {
        printf("# busbw m/m = from the min time / from the median time; MPI/hvd, MPI/ring = MPI "
               "median time / hvd's, the ring's (> 1: faster than MPI); memcpy = GB/s of one "
               "rank's memcpy; faults hvd/MPI = minor page faults per call, the most of any "
               "rank and pass\n");
        if (at64[0] > 0)
            printf("hvd_allreduce_busbw_64M %.2f GB/s\nmpi_allreduce_busbw_64M %.2f GB/s\n"
                   "ratio_64M %.2f x\n", at64[0], at64[1], at64[0] / at64[1]);
        printf("stall_inspector_cost_%zuK %+.2f us min %+.2f us median per call (%s)\n",
               min_b >> 10, stall_cost_min * 1e6, stall_cost_med * 1e6,
               hvd_stall_check() ? "on - off" : "off in this run");
        if (worst_at) {
            char sz[32];
            fmt_size(worst_at, sz, sizeof sz);
            printf("lowest_ratio_from_64K %.2f x (at %s)\n", worst_ratio, sz);
        }
    }
    if (plain) {
        free(buf);
        free(src);
        free(dst);
    } else {
        memory_free(buf);
        memory_free(src);
        memory_free(dst);
    }
    hvd_shutdown();
    return 0;
}
