/* stop.c — signals save the work (see stop.h): the handlers, the per-step vote, the save.
 * Public: stop_install, stop_step, stop_allow_mid_epoch, stop_settle, stop_finish.
 */
#include "train/stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/early_signal.h"
#include "base/errmsg.h"
#include "base/trace.h"
#include "ckpt/ckpt.h"
#include "guard/vote.h"
#include "guard/watchdog.h"
#include "hvd/hvd.h"

/* Atomics, not volatile sig_atomic_t: a signal may be handled on another thread (OpenMP's,
 * OpenBLAS's) while the main thread runs stop_finish, and the two must not miss each other
 * (lock-free atomic_int is async-signal-safe). */
static atomic_int caught;  /* the latest signal's number, 0 before the first */
static atomic_int trained; /* stop_finish ran: no step will vote again */
static int installed, mid_epoch_ok;

#define AFTER_TRAINING " after the training: exiting at once (nothing left to save)\n"
#define AFTER_HOW "exited after the training at" /* the others' line: "... died: <it> SIGTERM" */

static const char *sig_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1"
                                                                                : "a signal";
}

/* Writes its line, head + the signal's name + tail (tail NULL: head is the whole line), and
 * exits, from the handler: write(2), _exit and the copies are async-signal-safe. */
static void exit_at_once(int sig, const char *head, const char *tail, const char *how)
{
    char line[160];
    size_t n = 0;
    const char *parts[] = {head, tail ? sig_name(sig) : "", tail ? tail : ""};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(parts[i]);
        if (len > sizeof line - n)
            len = sizeof line - n;
        memcpy(line + n, parts[i], len);
        n += len;
    }
    ssize_t r = write(2, line, n);
    (void)r;
    watchdog_note_signal(sig, how); /* the others name this exit, not a vanished rank */
    _exit(128 + sig);
}

static void on_signal(int sig)
{
    if (atomic_exchange(&caught, sig)) /* the second: the user means it */
        exit_at_once(sig, "hvdlab: second signal: exiting at once\n", NULL, "exited at a second");
    /* After the training (the test, the last lines) no step votes any more, and mpirun sends
     * SIGKILL a second after its SIGTERM: say so and go, nothing is left to save. caught is set
     * before trained is read, stop_finish sets trained before it reads caught: one of the two
     * sees the other. */
    if (atomic_load(&trained))
        exit_at_once(sig, "hvdlab: stopped by ", AFTER_TRAINING, AFTER_HOW);
}

void stop_install(void)
{
    if (installed)
        return;
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* the step goes on: MPI and file calls are not interrupted */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    /* One that came during start-up counts (taken after the handlers are in: none falls between) */
    int early = early_signal_take();
    if (early)
        atomic_store(&caught, early);
}

void stop_allow_mid_epoch(void) { mid_epoch_ok = 1; }

static void stop_now(int sig, int epoch, int done, int steps)
{
    char head[160], path[4200], err[ERRMSG_LEN];
    snprintf(head, sizeof head, "hvdlab: stopped by %s in epoch %d after batch %d/%d",
             sig_name(sig), epoch + 1, done, steps);
    trace_event("stop", "signal=%d epoch=%d batch=%d", sig, epoch, done);
    if (!mid_epoch_ok)
        fprintf(stderr, "%s: nothing saved (this program resumes at epoch boundaries only; "
                "its newest checkpoint is the last finished epoch's)\n", head);
    else if (!ckpt_has_target())
        fprintf(stderr, hvd_rank() == 0 ? "%s: nothing saved (--use-checkpointing is off)\n"
                                        : "%s (rank 0 saves the checkpoint)\n", head);
    else if (ckpt_save_target(epoch, done, path, sizeof path, err, sizeof err) != 0)
        fprintf(stderr, "%s: not saved: %s\n", head, err);
    else
        fprintf(stderr, "%s: saved %s; run the same command again to go on from there\n",
                head, path);
    fflush(stderr);
    fflush(stdout);
    hvd_shutdown(); /* every rank is here, at the same step */
    exit(128 + sig);
}

void stop_step(int epoch, int done, int steps)
{
    if (!installed)
        return;
    int agreed = vote_finish(); /* the vote of the step before */
    if (agreed)
        stop_now(agreed, epoch, done, steps);
    vote_start(atomic_load(&caught));
}

void stop_settle(void)
{
    if (installed)
        vote_finish();
}

void stop_finish(void)
{
    if (!installed)
        return;
    /* One vote more (the last step's is finished first) counts every signal until here, on
     * every rank at the same point: the ranks stop together, as at a step's end. */
    vote_start(atomic_load(&caught));
    int agreed = vote_finish();
    if (agreed) {
        fprintf(stderr, "hvdlab: stopped by %s" AFTER_TRAINING, sig_name(agreed));
        trace_event("stop", "signal=%d after_training=1", agreed);
        fflush(stderr);
        fflush(stdout);
        hvd_shutdown();
        exit(128 + agreed);
    }
    atomic_store(&trained, 1);
    int late = atomic_load(&caught);
    if (late) /* it came during the vote */
        exit_at_once(late, "hvdlab: stopped by ", AFTER_TRAINING, AFTER_HOW);
}
