/* timeline.c — Chrome-trace JSON writer, valid after every event. See timeline.h.
 * Public: timeline_open, timeline_close, timeline_enabled, timeline_event. */
#include "prof/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/write_full.h"

#define TAIL "]\n"

static struct {
    int fd;
    char *path;     /* for the warning when a write fails */
    off_t pos;      /* where the closing bracket starts */
    int nevents;
    double t0;      /* timer_seconds() at open */
    char **tensors; /* index + 1 = pid */
    int ntensors, cap;
} tl = {.fd = -1};

int timeline_enabled(void) { return tl.fd >= 0; }

int timeline_open(const char *path, char *err, unsigned errlen)
{
    timeline_close();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "HVD_TIMELINE=%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    if (pwrite(fd, "[" TAIL, 1 + strlen(TAIL), 0) < 0) {
        snprintf(err, errlen, "HVD_TIMELINE=%s: cannot write: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    tl.fd = fd;
    tl.path = strdup(path);
    tl.pos = 1;
    tl.nevents = 0;
    tl.t0 = timer_seconds();
    return 0;
}

void timeline_close(void)
{
    if (tl.fd >= 0)
        close(tl.fd);
    tl.fd = -1;
    free(tl.path);
    tl.path = NULL;
    for (int i = 0; i < tl.ntensors; i++)
        free(tl.tensors[i]);
    free(tl.tensors);
    tl.tensors = NULL;
    tl.ntensors = tl.cap = 0;
}

/* JSON string body: quotes, backslashes and control characters escaped. */
static void json_escape(const char *s, char *out, size_t outlen)
{
    size_t o = 0;
    for (; *s && o + 7 < outlen; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20) {
            o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
}

/* Appends one event and the closing bracket in a single write. */
static void append(const char *event)
{
    if (tl.fd < 0) /* stopped by the write before (a new tensor's two events) */
        return;
    char line[1024];
    int len = snprintf(line, sizeof line, "%s%s" TAIL, tl.nevents ? ",\n" : "", event);
    if (len < 0 || (size_t)len >= sizeof line)
        return;
    if (write_full(tl.fd, line, (size_t)len, tl.pos) != (size_t)len) {
        /* disk full or similar: stop tracing, the file as it was before this event */
        int err = errno;
        /* The closing bracket back where it was (bytes the file already had, so no new space)
         * and what the failed write left after it cut off: the events so far, valid JSON. */
        const size_t tail = strlen(TAIL);
        int valid = pwrite(tl.fd, TAIL, tail, tl.pos) == (ssize_t)tail &&
                    ftruncate(tl.fd, tl.pos + (off_t)tail) == 0;
        fprintf(stderr, "hvdlab: warning: HVD_TIMELINE=%s: write failed (%s); timeline stopped "
                "after %d events%s\n", tl.path ? tl.path : "?", strerror(err),
                tl.nevents, valid ? "" : ", the file is not valid JSON");
        close(tl.fd);
        tl.fd = -1;
        return;
    }
    tl.pos += len - (off_t)strlen(TAIL);
    tl.nevents++;
}

static int tensor_pid(const char *tensor)
{
    for (int i = 0; i < tl.ntensors; i++)
        if (strcmp(tl.tensors[i], tensor) == 0)
            return i + 1;
    if (tl.ntensors == tl.cap) {
        int cap = tl.cap ? 2 * tl.cap : 64;
        char **t = realloc(tl.tensors, (size_t)cap * sizeof *t);
        if (!t)
            return 0;
        tl.tensors = t;
        tl.cap = cap;
    }
    char *copy = strdup(tensor);
    if (!copy)
        return 0;
    tl.tensors[tl.ntensors++] = copy;
    int pid = tl.ntensors;
    char name[300], ev[512];
    json_escape(tensor, name, sizeof name);
    snprintf(ev, sizeof ev, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
             "\"args\": {\"name\": \"%s\"}}", pid, name);
    append(ev);
    snprintf(ev, sizeof ev, "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, "
             "\"args\": {\"sort_index\": %d}}", pid, pid);
    append(ev);
    return pid;
}

void timeline_event(const char *tensor, const char *activity, char phase)
{
    if (tl.fd < 0)
        return;
    int pid = tensor_pid(tensor && *tensor ? tensor : "unnamed");
    if (pid == 0 || tl.fd < 0)
        return;
    long long us = (long long)((timer_seconds() - tl.t0) * 1e6);
    char ev[256];
    if (phase == 'B')
        snprintf(ev, sizeof ev, "{\"name\": \"%s\", \"ph\": \"B\", \"ts\": %lld, \"pid\": %d, "
                 "\"tid\": 0}", activity, us, pid);
    else
        snprintf(ev, sizeof ev, "{\"ph\": \"E\", \"ts\": %lld, \"pid\": %d, \"tid\": 0}", us, pid);
    append(ev);
}
