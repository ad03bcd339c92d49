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

static struct {
    int checked;  /* HVDLAB_TRACE looked up */
    const char *dir;
    int fd;       /* -1: not open */
    int failed;   /* an error was reported; tracing is off from then on */
    int named;    /* trace_reopen gave this process its rank: the file is rank-R.log */
    int rank, size; /* 0 and 1 until then; a rank file stays after hvd_shutdown */
    double t0;
    char path[4096]; /* the open file, for the warning when a write fails */
} T = {.fd = -1, .size = 1};

/* Each rank says why its tracing stops: its own file (rank-R.log, pid-P.log), its memory. The
 * folder is one per host (per_host): every rank of the host gets the same error, so the host's
 * first rank says it once; another host's file systems may differ, so not rank 0 alone. */
static void fail(const char *what, const char *path, int per_host)
{
    fatal_warn(per_host ? FATAL_ONCE_PER_HOST : FATAL_EVERY_RANK,
               "HVDLAB_TRACE: %s %s: %s; tracing stops", what, path, strerror(errno));
    T.failed = 1;
    if (T.fd >= 0)
        close(T.fd);
    T.fd = -1;
}

/* Opens dir/rank-R.log (after hvd_init) or dir/pid-P.log (before), creating dir if needed. */
static int ensure_open(void)
{
    if (!T.checked) {
        T.checked = 1;
        const char *d = getenv("HVDLAB_TRACE");
        T.dir = (d && *d) ? d : NULL;
        T.t0 = timer_seconds();
    }
    if (!T.dir || T.failed)
        return 0;
    if (T.fd >= 0)
        return 1;
    if (mkdir(T.dir, 0777) != 0 && errno != EEXIST) {
        fail("cannot create", T.dir, 1);
        return 0;
    }
    char *path = T.path;
    if (T.named)
        snprintf(path, sizeof T.path, "%s/rank-%d.log", T.dir, T.rank);
    else
        snprintf(path, sizeof T.path, "%s/pid-%ld.log", T.dir, (long)getpid());
    T.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (T.fd < 0) {
        fail("cannot open", path, 0);
        return 0;
    }
    return 1;
}

int trace_enabled(void) { return ensure_open(); }

void trace_reopen(int rank, int size)
{
    T.named = 1;
    T.rank = rank;
    T.size = size;
    if (T.fd >= 0)
        close(T.fd);
    T.fd = -1;
}

void trace_event(const char *event, const char *fmt, ...)
{
    if (T.checked && (!T.dir || T.failed))
        return; /* the cheap path when tracing is off */
    if (!ensure_open())
        return;
    /* Most lines fit the stack buffer; longer ones (a shard's index list) get a heap buffer of
     * their exact size, so no line is ever cut. */
    char stack[8192], *line = stack;
    int n = snprintf(stack, sizeof stack, "event=%s rank=%d size=%d pid=%ld t=%.6f ", event,
                     T.rank, T.size, (long)getpid(), timer_seconds() - T.t0);
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
            fail("out of memory for a line of", T.dir, 0);
            return;
        }
        memcpy(line, stack, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(line + n, (size_t)m + 1, fmt, ap);
        va_end(ap);
    }
    line[len++] = '\n';
    size_t out = write_full(T.fd, line, len, -1);
    int e = errno;
    if (line != stack)
        free(line);
    if (out < len) {
        /* the part of the line that went out is cut off: the file holds whole lines only */
        off_t end = lseek(T.fd, 0, SEEK_CUR);
        if (end >= 0 && out > 0 && ftruncate(T.fd, end - (off_t)out) != 0)
            e = errno;
        errno = e;
        fail("cannot write to", T.path, 0);
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
