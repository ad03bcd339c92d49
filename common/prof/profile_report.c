/* profile_report.c — HVD_PROFILE's table at shutdown: every rank's counts gathered on rank 0,
 * printed mpitrace-style and written as CSV beside the timeline. See profile.h.
 * Public: profile_report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "prof/profile_state.h"

#define PER_RANK (3 * PROFILE_NOPS + 1) /* calls, bytes, seconds per op; then elapsed */

typedef struct {
    double calls, bytes; /* summed over ranks */
    double min, mean, max; /* seconds, over ranks */
} row;

/* Column j of the gathered table: min, mean and max over the ranks. */
static row over_ranks(const double *all, int size, int op, int elapsed)
{
    row r = {0, 0, 1e300, 0, -1e300};
    for (int k = 0; k < size; k++) {
        const double *mine = all + (size_t)k * PER_RANK;
        double s = elapsed ? mine[3 * PROFILE_NOPS] : mine[3 * op + 2];
        if (!elapsed) {
            r.calls += mine[3 * op];
            r.bytes += mine[3 * op + 1];
        }
        r.mean += s / size;
        r.min = s < r.min ? s : r.min;
        r.max = s > r.max ? s : r.max;
    }
    return r;
}

/* timeline.json -> timeline.profile.csv (any other name gets .profile.csv appended). */
static void csv_path(const char *timeline, char *out, size_t len)
{
    size_t n = strlen(timeline);
    if (n > 5 && strcmp(timeline + n - 5, ".json") == 0)
        n -= 5;
    snprintf(out, len, "%.*s.profile.csv", (int)n, timeline);
}

static void print_table(FILE *f, const double *all, int size)
{
    fprintf(f, "hvdlab profile: %d rank%s; seconds are each rank's total in the call, min / mean"
            " / max over ranks\n", size, size == 1 ? "" : "s");
    fprintf(f, "%-18s %10s %12s %10s %10s %10s\n", "operation", "#calls", "avg. bytes", "min s",
            "mean s", "max s");
    row comm = {0, 0, 0, 0, 0};
    double *tot = calloc((size_t)size, sizeof *tot); /* each rank's communication seconds */
    if (!tot)
        fatal_error("profile: out of memory");
    int nested = 0; /* the heading of the rows inside the hvd_* calls is out */
    for (int op = 0; op < PROFILE_NOPS; op++) {
        row r = over_ranks(all, size, op, 0);
        if (op < PROFILE_NCOLL)
            for (int k = 0; k < size; k++)
                tot[k] += all[(size_t)k * PER_RANK + 3 * op + 2];
        if (r.calls == 0)
            continue;
        /* before the first nested row, whichever it is: on one host no ring pass runs */
        if (op >= PROFILE_NCOLL && !nested) {
            fprintf(f, "  (inside the calls above)\n");
            nested = 1;
        }
        fprintf(f, "%s%-*s %10.0f %12.0f %10.6f %10.6f %10.6f\n", op < PROFILE_NCOLL ? "" : "  ",
                op < PROFILE_NCOLL ? 18 : 16, profile_op_name((profile_op)op), r.calls / size,
                r.bytes / r.calls, r.min, r.mean, r.max);
    }
    comm.min = 1e300;
    for (int k = 0; k < size; k++) {
        comm.mean += tot[k] / size;
        comm.min = tot[k] < comm.min ? tot[k] : comm.min;
        comm.max = tot[k] > comm.max ? tot[k] : comm.max;
    }
    free(tot);
    row el = over_ranks(all, size, 0, 1);
    fprintf(f, "total communication time = %.4f s of %.4f s elapsed (%.1f %%; mean over ranks, "
            "communication min %.4f max %.4f s)\n", comm.mean, el.mean,
            el.mean > 0 ? 100 * comm.mean / el.mean : 0, comm.min, comm.max);
}

/* The CSV's level column: an hvd_* collective, an algorithm's pass under it, or MPI. */
static const char *level_name(int op)
{
    if (op < PROFILE_NCOLL)
        return "hvd";
    return op == PROFILE_RING ? "ring" : op == PROFILE_SHM ? "shm"
           : op == PROFILE_HIER ? "hier" : "mpi";
}

/* 0, or -1 with one warning naming the file and why (a full disk shows at the flush). */
static int write_csv(const char *path, const double *all, int size)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hvdlab: warning: profile: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "operation,level,ranks,calls_per_rank,avg_bytes,time_min_s,time_mean_s,"
            "time_max_s\n");
    double comm[3] = {1e300, 0, -1e300};
    for (int k = 0; k < size; k++) {
        double s = 0;
        for (int op = 0; op < PROFILE_NCOLL; op++)
            s += all[(size_t)k * PER_RANK + 3 * op + 2];
        comm[0] = s < comm[0] ? s : comm[0];
        comm[1] += s / size;
        comm[2] = s > comm[2] ? s : comm[2];
    }
    for (int op = 0; op < PROFILE_NOPS; op++) {
        row r = over_ranks(all, size, op, 0);
        if (r.calls == 0)
            continue;
        fprintf(f, "%s,%s,%d,%.10g,%.10g,%.6g,%.6g,%.6g\n", profile_op_name((profile_op)op),
                level_name(op), size,
                r.calls / size, r.bytes / r.calls, r.min, r.mean, r.max);
    }
    row el = over_ranks(all, size, 0, 1);
    fprintf(f, "total_communication,total,%d,,,%.6g,%.6g,%.6g\n", size, comm[0], comm[1], comm[2]);
    fprintf(f, "total_elapsed,total,%d,,,%.6g,%.6g,%.6g\n", size, el.min, el.mean, el.max);
    errno = 0;
    int failed = fflush(f) != 0 || ferror(f);
    int e = errno ? errno : EIO;
    if (fclose(f) != 0 && !failed) {
        failed = 1;
        e = errno;
    }
    if (failed)
        fprintf(stderr, "hvdlab: warning: profile: cannot write %s: %s (the file is incomplete)\n",
                path, strerror(e));
    return failed ? -1 : 0;
}

void profile_report(MPI_Comm comm)
{
    if (!profile_S.on)
        return;
    double mine[PER_RANK];
    for (int op = 0; op < PROFILE_NOPS; op++) {
        mine[3 * op] = profile_S.c[op].calls;
        mine[3 * op + 1] = profile_S.c[op].bytes;
        mine[3 * op + 2] = profile_S.c[op].seconds;
    }
    mine[3 * PROFILE_NOPS] = profile_elapsed();
    profile_S.on = 0; /* the gather below is not the program's communication */
    int rank, size;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    double *all = rank == 0 ? malloc((size_t)size * PER_RANK * sizeof *all) : NULL;
    if (rank == 0 && !all)
        fatal_error("profile: out of memory gathering %d ranks", size);
    PMPI_Gather(mine, PER_RANK, MPI_DOUBLE, all, PER_RANK, MPI_DOUBLE, 0, comm);
    if (rank == 0) {
        print_table(stderr, all, size);
        if (profile_S.timeline[0]) {
            char path[1100];
            csv_path(profile_S.timeline, path, sizeof path);
            if (write_csv(path, all, size) == 0)
                fprintf(stderr, "hvdlab profile: written to %s\n", path);
        }
        fflush(stderr);
        free(all);
    }
}
