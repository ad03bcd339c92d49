/* vote.h — a non-blocking vote of all ranks on a small integer (the largest wins), overlapped
 * with the work between two calls: vote_start sends this rank's value, vote_finish (at the
 * next call site, on every rank) returns the largest. The training loop uses it once per step
 * to agree on stopping after a signal; a vote started at step n is decided at step n + 1, so
 * no rank ever waits for it (the step's gradient allreduce already waited for everyone) and a
 * frozen rank is seen by the collectives that inspect stalls, never here first.
 * Outside MPI (before hvd_init, or size 1) the vote is this rank's own value.
 * Not traced: it is bookkeeping, not a collective of the program. But it is one to the
 * collective check and the stall inspector: vote_start first joins their entry handshake as
 * "vote()", so a rank that votes while another waits in a collective of the program (the
 * distributed optimizer wrapped on some ranks only) is named like any other mismatch, and its
 * communicator is made at hvd_init, on every rank, not at the first vote.
 *
 * Public: vote_init, vote_free, vote_start, vote_finish, vote_pending.
 */
#ifndef HVDLAB_VOTE_H
#define HVDLAB_VOTE_H

#include <mpi.h>

#include "guard/coll_check.h"

/* hvd_init, collective over world: the vote's own communicator; enter_check (may be NULL) is
 * the entry handshake every vote first joins (the collective check / stall inspector). */
void vote_init(MPI_Comm world, void (*enter_check)(const coll_desc *d));
/* hvd_shutdown: settles a pending vote, frees the communicator; votes are local again. */
void vote_free(void);
/* Starts a vote with this rank's value (>= 0). A vote still pending is finished first. */
void vote_start(int mine);
/* The largest value of the pending vote over all ranks (waits for it); 0 when none is pending. */
int vote_finish(void);
/* 1 while a vote is pending. */
int vote_pending(void);

#endif
