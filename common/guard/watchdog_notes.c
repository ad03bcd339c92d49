/* watchdog_notes.c — the notes a rank leaves on its sockets (watchdog.h): the state the
 * watchdog's files share, sending and reading one note, and the notes of a dying rank.
 * Public: watchdog_note_signal, watchdog_note_fatal, watchdog_set_context, watchdog_make_note,
 *         watchdog_send_note, watchdog_broadcast_note, watchdog_read_note,
 *         watchdog_stop_every_rank. */
#include "guard/watchdog.h"
#include "guard/watchdog_net.h"
#include "guard/watchdog_state.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

watchdog_state wd = {.wake = {-1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- sending (also from signal handlers: send() is async-signal-safe) ---- */

void watchdog_send_note(int fd, const note *n)
{
    if (fd >= 0) {
        ssize_t r = watchdog_net_send(fd, n, sizeof *n);
        (void)r;
    }
}

void watchdog_broadcast_note(const note *n)
{
    if (!wd.on)
        return;
    for (int r = 0; r < wd.size; r++)
        if (r != wd.rank && !wd.left[r])
            watchdog_send_note(wd.fd[r], n);
}

note watchdog_make_note(int kind)
{
    note n;
    memset(&n, 0, sizeof n);
    n.magic = WATCHDOG_MAGIC;
    n.nonce = wd.nonce;
    n.kind = kind;
    n.rank = wd.rank;
    return n;
}

int watchdog_read_note(int fd, note *n)
{
    ssize_t got = watchdog_net_recv(fd, n, sizeof *n);
    return got == (ssize_t)sizeof *n && n->magic == WATCHDOG_MAGIC && n->nonce == wd.nonce;
}

void watchdog_note_signal(int sig, const char *how)
{
    if (!wd.on)
        return;
    note n = wd.signal_note; /* prebuilt: nothing here that is not async-signal-safe; a copy, */
    n.sig = sig;             /* as two threads may fault at once */
    size_t i = 0;            /* strncpy is not on POSIX's async-signal-safe list */
    for (; how[i] && i < sizeof n.text - 1; i++)
        n.text[i] = how[i];
    n.text[i] = 0;
    watchdog_broadcast_note(&n);
}

void watchdog_note_fatal(const char *msg)
{
    wd.dying = 1;
    if (!wd.on)
        return;
    note n = watchdog_make_note(NOTE_FATAL);
    snprintf(n.text, sizeof n.text, "%s", msg);
    watchdog_broadcast_note(&n);
}

void watchdog_set_context(void (*fn)(char *out, size_t len)) { wd.context = fn; }

void watchdog_stop_every_rank(const char *line)
{
    wd.dying = 1;
    note abort_note = watchdog_make_note(NOTE_ABORT);
    watchdog_broadcast_note(&abort_note);
    fflush(stdout);
    fprintf(stderr, "hvdlab: error: [rank %d] %s\n", wd.rank, line);
    fflush(stderr);
    _exit(1);
}
