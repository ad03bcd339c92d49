/* profile.h — HVD_PROFILE=1: where the communication time goes, as mpitrace shows it.
 *
 * Every rank counts, per operation, its calls, the bytes they moved and the seconds spent inside
 * them: the hvd_* collectives (allreduce, broadcast, allgather, barrier), the passes under the
 * allreduce (ring, one host's shm or cma, hierarchical), and the MPI calls under both (caught
 * through MPI's profiling interface, so the ring needs no hooks of its own). At hvd_shutdown rank 0
 * gathers every rank's counts and prints one table (profile_report.c): #calls per rank, average
 * bytes per call, seconds min/mean/max over ranks, then the total communication time (the hvd_*
 * rows; the rows below them are inside those) against the elapsed time since hvd_init. With a
 * timeline it also writes the table as CSV beside it: timeline.json -> timeline.profile.csv.
 *
 * The gather at shutdown is a collective, so every rank must have the same HVD_PROFILE: hvd_init
 * compares it with the other settings. Off, every hook is one test of a flag.
 */
#ifndef HVDLAB_PROFILE_H
#define HVDLAB_PROFILE_H

#include <mpi.h>
#include <stddef.h>

typedef enum {
    /* the hvd_* collectives: their sum is the communication time */
    PROFILE_ALLREDUCE, PROFILE_BROADCAST, PROFILE_ALLGATHER, PROFILE_BARRIER,
    PROFILE_RING, /* one ring pass of the fused allreduce */
    PROFILE_SHM,  /* one pass on one host instead: window or single copy (allreduce.h) */
    PROFILE_HIER, /* one hierarchical pass: its ring across the hosts is counted as RING too */
    /* MPI, underneath */
    PROFILE_MPI_ISEND, PROFILE_MPI_IRECV, PROFILE_MPI_SEND, PROFILE_MPI_RECV, PROFILE_MPI_SENDRECV,
    PROFILE_MPI_WAIT, PROFILE_MPI_WAITALL, PROFILE_MPI_TEST, PROFILE_MPI_BCAST,
    PROFILE_MPI_ALLREDUCE, PROFILE_MPI_ALLGATHER, PROFILE_MPI_ALLGATHERV, PROFILE_MPI_BARRIER,
    PROFILE_NOPS
} profile_op;
#define PROFILE_NCOLL PROFILE_RING /* ops before this are the hvd_* collectives */

typedef struct {
    double calls, bytes, seconds;
} profile_count;

/* Reads HVD_PROFILE ("1" on; unset, empty or "0" off) and, when on, starts the elapsed clock. */
void profile_init(void);
int profile_enabled(void);
/* Zeroes this rank's counts and restarts its elapsed clock (benchmarks, after their warm-up;
 * every rank at the same point). */
void profile_reset(void);

/* The hooks: t = profile_begin(); ...; profile_end(op, bytes, t) adds one call. */
double profile_begin(void);
void profile_end(profile_op op, double bytes, double t);
/* Seconds since t = profile_begin() (0 when off). */
double profile_since(double t);
/* A call counted without its time (a queued allreduce: its time is the synchronize's). */
void profile_add(profile_op op, double calls, double bytes, double seconds);

/* This rank's counts so far, and its seconds since hvd_init or profile_reset. */
profile_count profile_get(profile_op op);
double profile_elapsed(void);
const char *profile_op_name(profile_op op);

/* Rank 0 will also write the CSV beside this timeline (hvd_start_timeline's path). */
void profile_note_timeline(const char *path);
/* Collective over comm: rank 0 prints the table to stderr and writes the CSV; then off. */
void profile_report(MPI_Comm comm);

#endif
