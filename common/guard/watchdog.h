/* watchdog.h — a dead rank is named. When a rank dies (a signal, a crash, fatal_error, SIGKILL or
 * the out-of-memory killer), the others are blocked inside a collective that will never end, and
 * Open MPI ends them (SIGCONT, then SIGTERM 1 s later, then SIGKILL 1 s after that, measured with
 * Open MPI 4.1) without a word of the kit's. The watchdog makes the survivors say who died, how,
 * where the training was and where it resumes, and exit within milliseconds.
 *
 * How: at hvd_init every rank opens one TCP connection to rank 0 (a star, over the hosts' own
 * network; rank 0 listens on an ephemeral port and publishes its addresses with MPI), and a
 * thread of each rank sleeps in poll() on it, costing nothing while all is well. The kernel
 * closes a process's sockets however it ends, SIGKILL included, so a peer's death is an EOF on
 * its socket, seen at once also across hosts. Before dying, a rank leaves a note on its socket
 * when it can: its fatal-signal handlers (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, and the
 * signals whose default ends a process, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
 * SIGPIPE, SIGALRM, while nobody else handles or ignores them) and stop.h's exits at a signal.
 * An EOF without a note means SIGKILL or the OOM killer. A rank that stops with fatal_error has
 * printed its one line (hvdlab: error: [rank r] …) and takes every rank down with MPI_Abort: its
 * note only tells the others to add nothing. A clean end (hvd_shutdown, or exit() after
 * hvd_init) says goodbye first. Rank 0 sees every other rank's socket and relays a death to the
 * rest; the others see rank 0's.
 *
 * The survivor's line (stderr, then _exit(1)):
 *   hvdlab: error: [rank 0] rank 1 (pid 4242 on h2) died: killed by SIGSEGV; <context>
 * "died:" is followed by "killed by SIGSEGV" (or SIGHUP, …), "exited at a second SIGTERM",
 * "exited after the training at SIGTERM", or "vanished without a word: SIGKILL or the
 * out-of-memory killer". <context> comes from the layer above (watchdog_set_context: the
 * training's epoch and step, where --use-checkpointing resumes), else "stopping this rank too".
 * A rank whose own fatal_error is under way says nothing: its own line is the one to read.
 *
 * What it cannot see: a host that vanishes without its kernel closing the sockets (power, cable)
 * — mpirun's own report says that one.
 *
 * The progress check (the stall inspector's second half, stall.h watching the entries): a call
 * that every rank has entered (the entry handshake is over, watchdog_busy) and that has not
 * ended (watchdog_idle) after HVD_STALL_CHECK_TIME_SECONDS makes the thread ping the others over
 * the same sockets: a watchdog thread answers even while its rank's main thread is blocked, so
 * only a stopped (SIGSTOP), hung-up or unreachable process stays silent; on one host
 * /proc/PID/stat says which. Rank 0 pings everyone and speaks; another rank pings rank 0 and
 * speaks only when rank 0 is silent. One warning per call:
 *   hvdlab: warning: [rank 0] stall: allreduce(name="x", count=N), entered by every rank, has not
 *     finished after 2 s (HVD_STALL_CHECK_TIME_SECONDS): not answering: rank 1 (pid 42 on vm,
 *     stopped (SIGSTOP?))
 * and after HVD_STALL_SHUTDOWN_TIME_SECONDS (when set) the same as an error ending in "stopping
 * every rank": the others are told to exit (silently) and this rank exits 1.
 *
 * The shutdown rule where no entry handshake runs (HVD_STALL_CHECK_DISABLE=1 without
 * HVD_CHECK_COLLECTIVES, watchdog_leave.c): a rank in hvd_shutdown joins no other call, and
 * without the handshake a rank waiting in one would wait for ever. Every collective call counts
 * (watchdog_enter); hvd_shutdown tells the others how many calls its rank made, and a rank that
 * is, or gets, into a later one prints the stall inspector's line and stops every rank:
 *   hvdlab: error: [rank 0] rank 1 has shut down (hvd_shutdown) while rank 0 is in
 *     allreduce(name="x", count=10), which rank 1 will never join (…); stopping every rank
 * Rank 0 hears every rank's count and the others rank 0's. Until rank 0 shuts down it is in
 * every later call and says the line; from then on it passes every count on, and stays on the
 * star until each rank has told its count or gone, for a rank may be left in a call rank 0 could
 * finish alone (a broadcast it roots); the others wait for its goodbye before MPI_Finalize, so
 * no rank has finalized when a peer stops the job (Open MPI 4.1's mpirun may hang then). Where
 * rank 0 is the one gone, each rank left waiting says it. A peer whose count came and whose
 * socket then ends has gone, not died.
 *
 * HVD_DEAD_RANK_CHECK_DISABLE=1 turns it off (it is agreed across ranks at hvd_init).
 * Public: watchdog_start, watchdog_stop, watchdog_set_context, watchdog_note_fatal,
 *         watchdog_note_signal, watchdog_set_progress_check, watchdog_busy, watchdog_idle,
 *         watchdog_enter.
 */
#ifndef HVDLAB_WATCHDOG_H
#define HVDLAB_WATCHDOG_H

#include <mpi.h>
#include <stddef.h>

#include "guard/coll_check.h"

/* Collective over comm: connects the ranks and starts the thread. When some rank cannot reach
 * rank 0, every rank goes on without the watchdog, and rank 0 says so in one warning line. */
void watchdog_start(MPI_Comm comm);
/* Says goodbye (a clean end, not a death), stops the thread, closes the sockets. Idempotent;
 * also run at exit(). */
void watchdog_stop(void);
/* fn writes what the survivors add to their line: where the work was and how to go on. Called
 * on the watchdog's thread while the main thread is blocked; NULL: none. */
void watchdog_set_context(void (*fn)(char *out, size_t len));
/* fatal_error's hook, before the job is aborted: leaves msg as this rank's note and keeps this
 * rank's watchdog quiet; the others' stay quiet too (this rank's line is out). */
void watchdog_note_fatal(const char *msg);
/* Async-signal-safe: leaves "<how> <signal's name>" as this rank's note ("killed by" from the
 * fatal-signal handlers; stop.h's "exited at a second" and "exited after the training at"), for
 * a handler that is about to _exit. */
void watchdog_note_signal(int sig, const char *how);

/* Turns the progress check on (warn_s > 0) before watchdog_start; shutdown_s 0: never abort. */
void watchdog_set_progress_check(double warn_s, double shutdown_s);
/* Every rank has entered call d; its transfer starts (the main thread, after the handshake). */
void watchdog_busy(const coll_desc *d);
/* The call has ended. */
void watchdog_idle(void);

/* The shutdown rule (above), for the calls no entry handshake sees: this rank enters its next
 * collective call d, or with d->kind COLL_SHUTDOWN its hvd_shutdown. Stops every rank when a
 * peer has shut down before this call. */
void watchdog_enter(const coll_desc *d);

#endif
