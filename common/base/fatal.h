/* fatal.h — the kit's one way to stop on an unrecoverable error, from any layer.
 *
 * fatal_error prints one line "hvdlab: error: [rank r] message" on stderr and ends the process
 * non-zero. It sits at the bottom so that every layer can stop without calling up: the rank in
 * the prefix and the way to take the other ranks down are handed to it from above. hvd_init
 * sets the rank and installs a hook that aborts the whole MPI job, so every rank exits
 * non-zero and none waits forever in a collective; before that (or without MPI) it just exits.
 *
 * fatal_warn prints "hvdlab: warning: message" once where every rank would print the same line:
 * from rank 0 only (FATAL_ONCE_PER_JOB), or from each host's first rank (FATAL_ONCE_PER_HOST);
 * a line that differs by rank comes from every rank (FATAL_EVERY_RANK).
 * It is the rule the runtime's own warnings follow with hvd_rank() == 0 (or a host's rank 0),
 * for the layers below hvd/, which cannot ask hvd_rank(): the ranks come from hvd_init here.
 */
#ifndef HVDLAB_FATAL_H
#define HVDLAB_FATAL_H

void fatal_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* The rank named in the prefix, and its place among its host's ranks (0 and 0 until set). */
void fatal_set_rank(int rank, int local_rank);
/* That rank: what hvd_rank() says, for the messages of the layers below hvd/. */
int fatal_job_rank(void);

typedef enum {
    FATAL_ONCE_PER_JOB,  /* the same on every rank: an environment variable's value (./hvdrun
                          * and mpirun -x give every rank the launcher's) */
    FATAL_ONCE_PER_HOST, /* a fact of the host that another host may not share: its file
                          * systems, whether it has a GPU */
    FATAL_EVERY_RANK,    /* a fact of this rank alone: its own file */
} fatal_scope;

/* The warning line on rank 0 (per job), on each host's local rank 0 (per host) only, or on
 * every rank. Before hvd_init has set the ranks, every process says it. */
void fatal_warn(fatal_scope scope, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Called with the message after the line is written, before exit(1); it should not return
 * (MPI_Abort). NULL: none. */
void fatal_set_abort_hook(void (*abort_job)(const char *msg));

#endif
