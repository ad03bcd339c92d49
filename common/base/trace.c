/* trace.c — HVDLAB_TRACE event files for the graders (see trace.h for the format).
 * Public: trace_enabled, trace_event, trace_quote, trace_reopen.
 */
#include "base/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fatal.h"
#include "base/timer.h"
#include "base/write_full.h"

/* HVDLAB_TRACE's file. Owned by this file: trace_reopen (hvd_init) names it per rank. */
typedef struct {
    int checked;  /* HVDLAB_TRACE looked up */
    const char *dir;
    int fd;       /* -1: not open */
    int failed;   /* an error was reported; tracing is off from then on */
    int named;    /* trace_reopen gave this process its rank: the file is rank-R.log */
    int rank, size; /* 0 and 1 until then; a rank file stays after hvd_shutdown */
    double t0;
    char path[4096]; /* the open file, for the warning when a write fails */
} trace_state;
static trace_state tracing = {.fd = -1, .size = 1};

/* Each rank says why its tracing stops: its own file (rank-R.log, pid-P.log), its memory. The
 * folder is one per host (per_host): every rank of the host gets the same error, so the host's
 * first rank says it once; another host's file systems may differ, so not rank 0 alone. */
static void fail(const char *what, const char *path, int per_host)
{
    fatal_warn(per_host ? FATAL_ONCE_PER_HOST : FATAL_EVERY_RANK,
               "HVDLAB_TRACE: %s %s: %s; tracing stops", what, path, strerror(errno));
    tracing.failed = 1;
    if (tracing.fd >= 0)
        close(tracing.fd);
    tracing.fd = -1;
}

/* Opens dir/rank-R.log (after hvd_init) or dir/pid-P.log (before), creating dir if needed. */
static int ensure_open(void)
{
    if (!tracing.checked) {
        tracing.checked = 1;
        const char *d = getenv("HVDLAB_TRACE");
        tracing.dir = (d && *d) ? d : NULL;
        tracing.t0 = timer_seconds();
    }
    if (!tracing.dir || tracing.failed)
        return 0;
    if (tracing.fd >= 0)
        return 1;
    if (mkdir(tracing.dir, 0777) != 0 && errno != EEXIST) {
        fail("cannot create", tracing.dir, 1);
        return 0;
    }
    char *path = tracing.path;
    if (tracing.named)
        snprintf(path, sizeof tracing.path, "%s/rank-%d.log", tracing.dir, tracing.rank);
    else
        snprintf(path, sizeof tracing.path, "%s/pid-%ld.log", tracing.dir, (long)getpid());
    tracing.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (tracing.fd < 0) {
        fail("cannot open", path, 0);
        return 0;
    }
    return 1;
}

int trace_enabled(void) { return ensure_open(); }

void trace_reopen(int rank, int size)
{
    tracing.named = 1;
    tracing.rank = rank;
    tracing.size = size;
    if (tracing.fd >= 0)
        close(tracing.fd);
    tracing.fd = -1;
}

void trace_event(const char *event, const char *fmt, ...)
{
    if (tracing.checked && (!tracing.dir || tracing.failed))
        return; /* the cheap path when tracing is off */
    if (!ensure_open())
        return;
    /* Most lines fit the stack buffer; longer ones (a shard's index list) get a heap buffer of
     * their exact size, so no line is ever cut. */
    char stack[8192], *line = stack;
    int n = snprintf(stack, sizeof stack, "event=%s rank=%d size=%d pid=%ld t=%.6f ", event,
                     tracing.rank, tracing.size, (long)getpid(), timer_seconds() - tracing.t0);
    if (n < 0 || (size_t)n >= sizeof stack / 2)
        return; /* an absurd event name: nothing sensible to write */
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(stack + n, sizeof stack - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len + 1 >= sizeof stack) {
        line = malloc(len + 2);
        if (!line) {
            fail("out of memory for a line of", tracing.dir, 0);
            return;
        }
        memcpy(line, stack, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(line + n, (size_t)m + 1, fmt, ap);
        va_end(ap);
    }
    line[len++] = '\n';
    size_t out = write_full(tracing.fd, line, len, -1);
    int e = errno;
    if (line != stack)
        free(line);
    if (out < len) {
        /* the part of the line that went out is cut off: the file holds whole lines only */
        off_t end = lseek(tracing.fd, 0, SEEK_CUR);
        if (end >= 0 && out > 0 && ftruncate(tracing.fd, end - (off_t)out) != 0)
            e = errno;
        errno = e;
        fail("cannot write to", tracing.path, 0);
    }
}

char *trace_quote(const char *s, char *out, size_t outlen)
{
    size_t j = 0;
    if (outlen < 3) {
        if (outlen)
            out[0] = '\0';
        return out;
    }
    out[j++] = '"';
    for (; *s && j + 3 < outlen; s++) {
        char c = *s;
        if (c == '"' || c == '\\') {
            out[j++] = '\\';
            out[j++] = c;
        } else if (c == '\n') {
            out[j++] = '\\';
            out[j++] = 'n';
        } else if (c == '\r') {
            continue; /* progress bars redraw with \r: keep the text, drop the control */
        } else {
            out[j++] = c;
        }
    }
    out[j++] = '"';
    out[j] = '\0';
    return out;
}
