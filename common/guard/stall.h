/* stall.h — the stall inspector: every collective first joins a small entry handshake, so that a
 * rank waiting for the others can say for whom, instead of hanging silently inside MPI.
 *
 * Each rank sends the descriptor of the call it is about to make to rank 0 (the coordinator)
 * and waits for its go; rank 0 gives the go once every rank has described the same call. While
 * waiting, a rank polls with a deadline:
 * - rank 0, after warn_s seconds: one warning line naming the call, the ranks that reached it
 *   and the missing ones (with the call a missing rank is making instead, when it is known);
 *   after shutdown_s (> 0) seconds: fatal_error, which takes every rank down.
 * - any other rank hears from rank 0 once rank 0 is in the call and has waited a millisecond
 *   (or warns); from then on rank 0 decides. Without any word from rank 0 (frozen, or busy
 *   elsewhere) it warns after warn_s (rank 0 has not reached the call) and stops the job after
 *   shutdown_s, the times the settings name, as rank 0 would.
 * With check set (HVD_CHECK_COLLECTIVES), a mismatch seen by rank 0 stops the job at once with
 * coll_check's line instead of waiting. A rank in shutdown() while another makes a different call
 * (rank 0 either of the two) stops the job at once, check or not: no call can follow shutdown().
 *
 * It covers the entry of every call (as Horovod's, which watches negotiation only). A rank
 * stopped in the middle of a transfer, after every rank has entered, is the watchdog's progress
 * check's (watchdog.h): the same two settings, a warning naming the rank that does not answer.
 */
#ifndef HVDLAB_STALL_H
#define HVDLAB_STALL_H

#include <mpi.h>

#include "guard/coll_check.h"

typedef struct {
    MPI_Comm comm; /* own duplicate: entry messages never meet collective traffic */
    int rank, size;
    double warn_s, shutdown_s; /* shutdown_s 0: never */
    int check;
    int shared_cores; /* more ranks on this host than cores: a waiting rank naps at once */
    coll_desc *got;     /* rank 0: descriptors received, (size,) */
    MPI_Request *reqs;  /* rank 0: their receives, (size,) */
    int *arrived;       /* rank 0: 1 once rank r's descriptor is in */
} stall_inspector;

/* Duplicates comm (collective over it). */
void stall_init(stall_inspector *si, MPI_Comm comm, double warn_s, double shutdown_s, int check);
void stall_free(stall_inspector *si);

/* Collective over the inspector's communicator: returns once every rank has entered the same
 * call (coll_desc_match). */
void stall_enter(stall_inspector *si, const coll_desc *mine);

#endif
