/* stall.c — the stall inspector's entry handshake. See stall.h.
 * Public: stall_init, stall_free, stall_enter. */
#include "guard/stall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fatal.h"
#include "base/timer.h"

#define TAG_ENTRY 0x5345
#define TAG_VERDICT 0x5356

/* ENTERED: rank 0 is in the call and waits for others; it will decide, so a waiting rank
 * stops counting against rank 0 (sent once rank 0 has waited ENTERED_AFTER_S, not in step). */
enum { VERDICT_GO, VERDICT_WARNED, VERDICT_MISMATCH, VERDICT_ENTERED };
#define ENTERED_AFTER_S 1e-3

void stall_init(stall_inspector *si, MPI_Comm comm, double warn_s, double shutdown_s, int check)
{
    memset(si, 0, sizeof *si);
    MPI_Comm_dup(comm, &si->comm);
    MPI_Comm_rank(si->comm, &si->rank);
    MPI_Comm_size(si->comm, &si->size);
    si->warn_s = warn_s;
    si->shutdown_s = shutdown_s;
    si->check = check;
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(si->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    si->shared_cores = cores > 0 && local > cores;
    if (si->rank == 0) {
        si->got = calloc((size_t)si->size, sizeof *si->got);
        si->reqs = calloc((size_t)si->size, sizeof *si->reqs);
        si->arrived = calloc((size_t)si->size, sizeof *si->arrived);
        if (!si->got || !si->reqs || !si->arrived)
            fatal_error("stall inspector: out of memory for %d ranks", si->size);
    }
}

void stall_free(stall_inspector *si)
{
    free(si->got);
    free(si->reqs);
    free(si->arrived);
    if (si->comm != MPI_COMM_NULL)
        MPI_Comm_free(&si->comm);
    memset(si, 0, sizeof *si);
    si->comm = MPI_COMM_NULL;
}

/* Spin while the wait is short (calls in step arrive within microseconds); past a millisecond
 * give the core away in small naps, so a long wait does not starve an oversubscribed node. With
 * more ranks on the host than cores the rank waited for may need this very core: nap at once. */
static void relax(const stall_inspector *si, double waited)
{
    if (waited < 1e-3 && !si->shared_cores)
        return;
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
}

/* "ranks reached: 0, 2; missing ranks: 1 (not arrived), 3 (in barrier())" */
static void describe_ranks(const stall_inspector *si, const coll_desc *mine, char *out,
                           size_t len)
{
    size_t o = (size_t)snprintf(out, len, "ranks reached: 0");
    for (int r = 1; r < si->size && o < len; r++)
        if (si->arrived[r] && coll_desc_match(mine, &si->got[r]))
            o += (size_t)snprintf(out + o, len - o, ", %d", r);
    const char *sep = "; missing ranks: ";
    for (int r = 1; r < si->size && o < len; r++) {
        if (si->arrived[r] && coll_desc_match(mine, &si->got[r]))
            continue;
        if (!si->arrived[r]) {
            o += (size_t)snprintf(out + o, len - o, "%s%d (not arrived)", sep, r);
        } else {
            char d[200];
            coll_desc_format(&si->got[r], coll_desc_need_detail(mine, &si->got[r]), d, sizeof d);
            o += (size_t)snprintf(out + o, len - o, "%s%d (in %s)", sep, r, d);
        }
        sep = ", ";
    }
}

/* The call as the stall lines name it; detail when some rank differs only in op/compression. */
static void name_call(const stall_inspector *si, const coll_desc *mine, char *out, size_t len)
{
    int detail = 0;
    for (int r = 1; si->rank == 0 && r < si->size; r++)
        detail |= si->arrived[r] && coll_desc_need_detail(mine, &si->got[r]);
    coll_desc_format(mine, detail, out, len);
}

/* A rank in shutdown() never makes another call, and one that is not will never join it: as
 * Horovod, which shuts every rank down once one has, the job stops at once rather than after the
 * stall times (one rank given --help, or one that left its loop early). */
static void shutdown_mismatch_exit(const stall_inspector *si, const coll_desc *mine, int r)
{
    int gone = mine->kind == COLL_SHUTDOWN ? 0 : r, other = gone == 0 ? r : 0;
    char line[600];
    coll_early_shutdown_line(gone, other, gone == 0 ? &si->got[r] : mine, line, sizeof line);
    fatal_error("%s", line);
}

static void coordinate(stall_inspector *si, const coll_desc *mine)
{
    int pending = si->size - 1, mismatch = -1, ended = -1, warned = 0, told = 0;
    for (int r = 1; r < si->size; r++) {
        si->arrived[r] = 0;
        MPI_Irecv(&si->got[r], (int)sizeof *si->got, MPI_BYTE, r, TAG_ENTRY, si->comm,
                  &si->reqs[r]);
    }
    double t0 = timer_seconds();
    for (;;) {
        for (int r = 1; r < si->size; r++) {
            int flag = 0;
            if (si->arrived[r])
                continue;
            MPI_Test(&si->reqs[r], &flag, MPI_STATUS_IGNORE);
            if (flag) {
                si->arrived[r] = 1;
                pending--;
                if (warned) { /* a late arrival: the warning is out already */
                    int v = VERDICT_WARNED;
                    MPI_Send(&v, 1, MPI_INT, r, TAG_VERDICT, si->comm);
                }
                int differs = !coll_desc_match(mine, &si->got[r]);
                if (mismatch < 0 && differs)
                    mismatch = r;
                if (ended < 0 && differs &&
                    (mine->kind == COLL_SHUTDOWN || si->got[r].kind == COLL_SHUTDOWN))
                    ended = r;
            }
        }
        if (pending == 0 && mismatch < 0)
            break;
        if (pending == 0 && si->check) { /* every rank is here: they can all leave cleanly */
            int v = VERDICT_MISMATCH;
            for (int r = 1; r < si->size; r++)
                MPI_Send(&v, 1, MPI_INT, r, TAG_VERDICT, si->comm);
            coll_mismatch_exit(si->comm, mine, mismatch, &si->got[mismatch]);
        }
        if (ended >= 0)
            shutdown_mismatch_exit(si, mine, ended);
        double waited = timer_seconds() - t0;
        if (si->shutdown_s > 0 && waited >= si->shutdown_s) {
            char call[200], ranks[1024];
            name_call(si, mine, call, sizeof call);
            describe_ranks(si, mine, ranks, sizeof ranks);
            fatal_error("stall: %s has waited %g s (HVD_STALL_SHUTDOWN_TIME_SECONDS): %s; "
                        "stopping every rank", call, si->shutdown_s, ranks);
        }
        if (!told && !warned && waited >= ENTERED_AFTER_S) {
            told = 1; /* the ranks here wait for rank 0's word, not for rank 0 */
            int v = VERDICT_ENTERED;
            for (int r = 1; r < si->size; r++)
                if (si->arrived[r])
                    MPI_Send(&v, 1, MPI_INT, r, TAG_VERDICT, si->comm);
        }
        if (!warned && waited >= si->warn_s) {
            char call[200], ranks[1024];
            name_call(si, mine, call, sizeof call);
            describe_ranks(si, mine, ranks, sizeof ranks);
            fprintf(stderr, "hvdlab: warning: stall: %s has waited %g s "
                    "(HVD_STALL_CHECK_TIME_SECONDS): %s\n", call, si->warn_s, ranks);
            fflush(stderr);
            warned = 1;
            int v = VERDICT_WARNED; /* the waiting ranks need not say it again */
            for (int r = 1; r < si->size; r++)
                if (si->arrived[r])
                    MPI_Send(&v, 1, MPI_INT, r, TAG_VERDICT, si->comm);
        }
        relax(si, waited);
    }
    int v = VERDICT_GO;
    for (int r = 1; r < si->size; r++)
        MPI_Send(&v, 1, MPI_INT, r, TAG_VERDICT, si->comm);
}

static void follow(stall_inspector *si, const coll_desc *mine)
{
    MPI_Request sreq, rreq;
    int verdict = -1, heard = 0, warned = 0;
    MPI_Isend(mine, (int)sizeof *mine, MPI_BYTE, 0, TAG_ENTRY, si->comm, &sreq);
    MPI_Irecv(&verdict, 1, MPI_INT, 0, TAG_VERDICT, si->comm, &rreq);
    double t0 = timer_seconds();
    for (;;) {
        int flag = 0;
        MPI_Test(&rreq, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            if (verdict == VERDICT_GO)
                break;
            if (verdict == VERDICT_MISMATCH) {
                MPI_Wait(&sreq, MPI_STATUS_IGNORE);
                coll_mismatch_exit(si->comm, NULL, 0, NULL);
            }
            heard = 1; /* rank 0 is in the call (it warned, or waits): it decides */
            MPI_Irecv(&verdict, 1, MPI_INT, 0, TAG_VERDICT, si->comm, &rreq);
        }
        double waited = timer_seconds() - t0;
        /* Once rank 0 is in the call (ENTERED or WARNED) it stops the job itself if need be:
         * this is for a rank 0 that never reached the call, on the same clock as its own. */
        if (!heard && si->shutdown_s > 0 && waited >= si->shutdown_s) {
            char call[200];
            coll_desc_format(mine, 0, call, sizeof call);
            fatal_error("stall: %s has waited %g s for rank 0, the coordinator, which has not "
                        "reached it; stopping every rank", call, si->shutdown_s);
        }
        if (!heard && !warned && waited >= si->warn_s) {
            char call[200];
            coll_desc_format(mine, 0, call, sizeof call);
            fprintf(stderr, "hvdlab: warning: [rank %d] stall: %s has waited %g s for rank 0, "
                    "the coordinator, which has not reached it\n", si->rank, call, si->warn_s);
            fflush(stderr);
            warned = 1;
        }
        relax(si, waited);
    }
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
}

void stall_enter(stall_inspector *si, const coll_desc *mine)
{
    if (si->size < 2)
        return;
    if (si->rank == 0)
        coordinate(si, mine);
    else
        follow(si, mine);
}
