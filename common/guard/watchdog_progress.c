/* watchdog_progress.c — the progress half of the stall inspector (watchdog.h): a call every rank
 * entered that does not end makes the watchdog's thread ping the others and name who is silent.
 * Public: watchdog_set_progress_check, watchdog_busy, watchdog_idle, watchdog_progress_tick. */
#include "guard/watchdog.h"
#include "guard/watchdog_state.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/timer.h"

/* "stopped (SIGSTOP)" etc. from /proc/PID/stat on this host; "" elsewhere or when running. */
static const char *process_state(int r)
{
    char host[sizeof wd.who[0].host] = "", path[64], buf[512];
    gethostname(host, sizeof host - 1);
    if (strcmp(host, wd.who[r].host) != 0)
        return "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)wd.who[r].pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return ", gone";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *c = strrchr(buf, ')'); /* the state follows the command name */
    char st = c && c[1] == ' ' ? c[2] : '?';
    return st == 'T' ? ", stopped (SIGSTOP?)" : st == 't' ? ", stopped by a debugger"
         : st == 'D' ? ", in uninterruptible sleep" : st == 'Z' ? ", a zombie" : "";
}

/* The ranks that did not answer the ping: "rank 1 (pid 42 on vm, stopped (SIGSTOP?))". */
static int silent_ranks(char *out, size_t len)
{
    size_t o = 0;
    int n = 0;
    out[0] = '\0';
    for (int r = 0; r < wd.size && o < len; r++) {
        if (r == wd.rank || wd.ponged[r] || wd.left[r] || (wd.rank != 0 && r != 0))
            continue;
        o += (size_t)snprintf(out + o, len - o, "%srank %d (pid %d on %s%s)", n ? ", " : "", r,
                              (int)wd.who[r].pid, wd.who[r].host, process_state(r));
        n++;
    }
    return n;
}

void watchdog_progress_tick(void)
{
    pthread_mutex_lock(&wd.lock);
    int busy = wd.busy;
    unsigned seq = wd.busy_seq;
    double since = wd.busy_since;
    coll_desc d = wd.busy_desc;
    pthread_mutex_unlock(&wd.lock);
    double now = timer_seconds();
    if (!busy || now - since < wd.warn_s) {
        wd.ping_sent = 0;
        return;
    }
    if (wd.ping_sent == 0) { /* who still answers? a stopped process cannot */
        memset(wd.ponged, 0, (size_t)wd.size * sizeof *wd.ponged);
        note ping = watchdog_make_note(NOTE_PING);
        watchdog_broadcast_note(&ping);
        wd.ping_sent = now;
        return;
    }
    if (now - wd.ping_sent < 1.0)
        return;
    char call[200], who[2048];
    coll_desc_format(&d, 0, call, sizeof call);
    int silent = silent_ranks(who, sizeof who);
    wd.ping_sent = 0; /* the next tick asks again */
    if (!silent && wd.rank != 0)
        return; /* rank 0 answers, and speaks for everyone */
    if (wd.shutdown_s > 0 && now - since >= wd.shutdown_s) {
        char line[sizeof call + sizeof who + 200];
        snprintf(line, sizeof line, "stall: %s, entered by every rank, has not finished after "
                 "%g s (HVD_STALL_SHUTDOWN_TIME_SECONDS): %s%s; stopping every rank", call,
                 wd.shutdown_s, silent ? "not answering: " : "",
                 silent ? who : "every rank answers (a network that does not move?)");
        watchdog_stop_every_rank(line);
    }
    if (wd.warned_seq != seq) {
        wd.warned_seq = seq;
        fprintf(stderr, "hvdlab: warning: [rank %d] stall: %s, entered by every rank, has not "
                "finished after %g s (HVD_STALL_CHECK_TIME_SECONDS): %s%s\n", wd.rank, call,
                wd.warn_s, silent ? "not answering: " : "",
                silent ? who : "every rank answers (a network that does not move?)");
        fflush(stderr);
    }
}

void watchdog_busy(const coll_desc *d)
{
    if (!wd.on || wd.warn_s <= 0)
        return;
    pthread_mutex_lock(&wd.lock);
    wd.busy = 1;
    wd.busy_seq++;
    wd.busy_since = timer_seconds();
    wd.busy_desc = *d;
    pthread_mutex_unlock(&wd.lock);
}

void watchdog_idle(void)
{
    if (!wd.on || wd.warn_s <= 0)
        return;
    pthread_mutex_lock(&wd.lock);
    wd.busy = 0;
    pthread_mutex_unlock(&wd.lock);
}

void watchdog_set_progress_check(double warn_s, double shutdown_s)
{
    wd.warn_s = warn_s;
    wd.shutdown_s = shutdown_s;
}
