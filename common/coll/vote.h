/* vote.h — a non-blocking vote of all ranks on a small integer (the largest wins), overlapped
 * with the work between two calls: vote_start sends this rank's value, vote_finish (at the
 * next call site, on every rank) returns the largest. The training loop uses it once per step
 * to agree on stopping after a signal; a vote started at step n is decided at step n + 1, so
 * no rank ever waits for it (the step's gradient allreduce already waited for everyone) and a
 * frozen rank is seen by the collectives that inspect stalls, never here first.
 * Outside MPI (before hvd_init, or size 1) the vote is this rank's own value.
 * Not traced: it is bookkeeping, not a collective of the program.
 *
 * Public: vote_start, vote_finish, vote_pending.
 */
#ifndef HVDLAB_VOTE_H
#define HVDLAB_VOTE_H

/* Starts a vote with this rank's value (>= 0). A vote still pending is finished first. */
void vote_start(int mine);
/* The largest value of the pending vote over all ranks (waits for it); 0 when none is pending. */
int vote_finish(void);
/* 1 while a vote is pending. */
int vote_pending(void);

#endif
