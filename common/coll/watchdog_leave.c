/* watchdog_leave.c — the stall inspector's shutdown rule where no entry handshake runs
 * (watchdog.h): a rank that has shut down joins no later call, so a rank in one stops the job.
 * Public: watchdog_enter, watchdog_heard_shutdown. */
#include "coll/watchdog.h"
#include "coll/watchdog_state.h"

#include <stdio.h>
#include <unistd.h>

/* Under wd.lock: a peer that shut down before the call this rank is in, or -1. */
static int gone_before_call(void)
{
    if (wd.shutting || wd.calls == 0)
        return -1;
    for (int r = 0; r < wd.size; r++)
        if (r != wd.rank && wd.shut_calls[r] >= 0 && wd.calls > wd.shut_calls[r])
            return r;
    return -1;
}

/* The one line, then every rank goes: the others silently (rank 0 relays the abort). Called
 * with wd.lock held; never returns. */
static void stop_every_rank(int gone)
{
    char line[600];
    coll_early_shutdown_line(gone, wd.rank, &wd.call_desc, line, sizeof line);
    wd.dying = 1;
    note abort_note = watchdog_make_note(NOTE_ABORT);
    watchdog_broadcast_note(&abort_note);
    fflush(stdout);
    fprintf(stderr, "hvdlab: error: [rank %d] %s\n", wd.rank, line);
    fflush(stderr);
    _exit(1);
}

void watchdog_enter(const coll_desc *d)
{
    if (!wd.on)
        return;
    pthread_mutex_lock(&wd.lock);
    if (d->kind == COLL_SHUTDOWN) { /* the others learn how far this rank went */
        wd.shutting = 1;
        note n = watchdog_make_note(NOTE_SHUTDOWN);
        n.calls = wd.calls;
        pthread_mutex_unlock(&wd.lock);
        watchdog_broadcast_note(&n);
        return;
    }
    wd.calls++;
    wd.call_desc = *d;
    int gone = gone_before_call();
    if (gone >= 0)
        stop_every_rank(gone);
    pthread_mutex_unlock(&wd.lock);
}

void watchdog_heard_shutdown(int r, const note *n)
{
    pthread_mutex_lock(&wd.lock);
    wd.shut_calls[r] = n->calls;
    int gone = gone_before_call();
    if (gone >= 0)
        stop_every_rank(gone);
    pthread_mutex_unlock(&wd.lock);
}
