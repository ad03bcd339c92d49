/* stop.c — signals save the work (see stop.h): the handlers, the per-step vote, the save.
 * Public: stop_install, stop_step, stop_allow_mid_epoch, stop_finish.
 */
#include "train/stop.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/trace.h"
#include "ckpt/ckpt.h"
#include "coll/hvd.h"
#include "coll/vote.h"
#include "coll/watchdog.h"

static volatile sig_atomic_t caught; /* the first signal's number, 0 before */
static int installed, mid_epoch_ok;

static void on_signal(int sig)
{
    if (caught) { /* the second: the user means it; write(2) is async-signal-safe */
        static const char msg[] = "hvdlab: second signal: exiting at once\n";
        ssize_t r = write(2, msg, sizeof msg - 1);
        (void)r;
        watchdog_note_signal(sig); /* the others name this exit, not a vanished rank */
        _exit(128 + sig);
    }
    caught = sig;
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
}

void stop_allow_mid_epoch(void) { mid_epoch_ok = 1; }

static const char *sig_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1"
                                                                                : "a signal";
}

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
        fprintf(stderr, "%s: saved %s; run again with --use-checkpointing to go on from there\n",
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
    vote_start(caught);
}

void stop_finish(void)
{
    if (installed)
        vote_finish();
}
