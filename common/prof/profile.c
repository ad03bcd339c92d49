/* profile.c — the per-rank counts behind HVD_PROFILE. See profile.h.
 * Public: profile_init, profile_enabled, profile_reset, profile_begin, profile_end,
 *         profile_since, profile_add,
 *         profile_get, profile_elapsed, profile_op_name, profile_note_timeline. */
#include "prof/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_switch.h"
#include "base/timer.h"
#include "prof/profile_state.h"

profile_state profile_S;

static const char *const NAMES[PROFILE_NOPS] = {
    "allreduce", "broadcast", "allgather", "barrier", "ring_allreduce", "shm_allreduce",
    "hierarchical_allreduce",
    "MPI_Isend", "MPI_Irecv", "MPI_Send", "MPI_Recv", "MPI_Sendrecv", "MPI_Wait", "MPI_Waitall",
    "MPI_Test", "MPI_Bcast", "MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv", "MPI_Barrier"};

const char *profile_op_name(profile_op op) { return NAMES[op]; }
int profile_enabled(void) { return profile_S.on; }

void profile_init(void)
{
    profile_S.on = env_switch("HVD_PROFILE", 0);
    profile_reset();
}

void profile_reset(void)
{
    memset(profile_S.c, 0, sizeof profile_S.c);
    profile_S.t0 = timer_seconds();
}

double profile_begin(void) { return profile_S.on ? timer_seconds() : 0; }

void profile_end(profile_op op, double bytes, double t)
{
    if (profile_S.on)
        profile_add(op, 1, bytes, timer_seconds() - t);
}

double profile_since(double t) { return profile_S.on ? timer_seconds() - t : 0; }

void profile_add(profile_op op, double calls, double bytes, double seconds)
{
    if (!profile_S.on)
        return;
    profile_S.c[op].calls += calls;
    profile_S.c[op].bytes += bytes;
    profile_S.c[op].seconds += seconds;
}

profile_count profile_get(profile_op op) { return profile_S.c[op]; }
double profile_elapsed(void) { return timer_seconds() - profile_S.t0; }

void profile_note_timeline(const char *path)
{
    snprintf(profile_S.timeline, sizeof profile_S.timeline, "%s", path ? path : "");
}
