/* watchdog_leave.c — the stall inspector's shutdown rule where no entry handshake runs
 * (watchdog.h): a rank that has shut down joins no later call, so a rank in one stops the job.
 * Public: watchdog_enter, watchdog_heard_shutdown, watchdog_await_counts. */
#include "guard/watchdog.h"
#include "guard/watchdog_state.h"

#include <unistd.h>

/* Under wd.lock: a peer that shut down before the call this rank is in, or -1. */
static int gone_before_call(void)
{
    if (wd.shutting)
        return -1;
    for (int r = 0; r < wd.size; r++)
        if (r != wd.rank && wd.shut_calls[r] >= 0 && wd.calls > wd.shut_calls[r])
            return r;
    return -1;
}

/* The one line, then every rank goes: the others silently. Called with wd.lock held. */
static void stop_every_rank(int gone) __attribute__((noreturn));
static void stop_every_rank(int gone)
{
    char line[600];
    coll_early_shutdown_line(gone, wd.rank, &wd.busy_desc, line, sizeof line);
    watchdog_stop_every_rank(line);
}

/* Under wd.lock, rank 0 in hvd_shutdown: peer from's count to every other rank. Until rank 0
 * shuts down it is in every later call and says the line itself; from then on a rank may be left
 * waiting in a call rank 0 has finished (a broadcast it roots), and only hears of the gone rank
 * so. */
static void relay_count(int from, int64_t calls)
{
    note n = watchdog_make_note(NOTE_SHUTDOWN);
    n.rank = from;
    n.calls = calls;
    for (int p = 1; p < wd.size; p++)
        if (p != from && !wd.left[p] && wd.shut_calls[p] < 0) /* one that shut down may close */
            watchdog_send_note(wd.fd[p], &n);
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
        watchdog_broadcast_note(&n);
        for (int r = 1; wd.rank == 0 && r < wd.size; r++)
            if (wd.shut_calls[r] >= 0)
                relay_count(r, wd.shut_calls[r]);
        pthread_mutex_unlock(&wd.lock);
        return;
    }
    wd.calls++;
    wd.busy_desc = *d;
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
    if (wd.rank == 0 && wd.shutting)
        relay_count(r, n->calls);
    pthread_mutex_unlock(&wd.lock);
}

/* From watchdog_stop, once this rank has shut down under the rule. Rank 0 is the one that passes
 * the counts on, so it stays on the star until every other rank has told its count or gone (as
 * MPI_Finalize waits for them anyway). A rank whose count comes late (it worked on after skipping
 * a call rank 0 has finished) is still heard by the one left waiting in that call.
 * Every other rank stays until rank 0 has done so (its goodbye, or its end): no rank is inside
 * MPI_Finalize while a peer may still stop the job, for Open MPI 4.1's mpirun can hang for ever
 * when some ranks have finalized and another then exits non-zero. The stop (NOTE_ABORT) or a
 * death still reaches a rank here, on the watchdog's thread. */
void watchdog_await_counts(void)
{
    if (!wd.on)
        return;
    pthread_mutex_lock(&wd.lock);
    for (int r = wd.rank == 0 ? 1 : 0; wd.shutting && r < wd.size;) {
        int told = wd.rank == 0 ? wd.shut_calls[r] >= 0 : 0; /* rank 0's goodbye: left[0] */
        if (told || wd.left[r] || wd.fd[r] < 0) {
            r = wd.rank == 0 ? r + 1 : wd.size;
            continue;
        }
        pthread_mutex_unlock(&wd.lock);
        usleep(2000);
        pthread_mutex_lock(&wd.lock);
    }
    pthread_mutex_unlock(&wd.lock);
}
