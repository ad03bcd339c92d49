/* fatal.h — the kit's one way to stop on an unrecoverable error, from any layer.
 *
 * fatal_error prints one line "hvdlab: error: [rank r] message" on stderr and ends the process
 * non-zero. It sits at the bottom so that every layer can stop without calling up: the rank in
 * the prefix and the way to take the other ranks down are handed to it from above. hvd_init
 * sets the rank and installs a hook that aborts the whole MPI job, so every rank exits
 * non-zero and none waits forever in a collective; before that (or without MPI) it just exits.
 */
#ifndef HVDLAB_FATAL_H
#define HVDLAB_FATAL_H

void fatal_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* The rank named in the prefix (0 until set). */
void fatal_set_rank(int rank);

/* Called with the message after the line is written, before exit(1); it should not return
 * (MPI_Abort). NULL: none. */
void fatal_set_abort_hook(void (*abort_job)(const char *msg));

#endif
