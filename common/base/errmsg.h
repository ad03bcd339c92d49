/* errmsg.h — the one-line error messages that recoverable failures return.
 *
 * Library functions that can fail on bad input return -1 and write one line into a caller's
 * buffer (char *err, size_t errlen) naming the file or argument; this writes it. */
#ifndef HVDLAB_ERRMSG_H
#define HVDLAB_ERRMSG_H

#include <stddef.h>

/* The size of an error buffer anywhere in the kit: a message naming a long path and two
 * model configurations fits. */
#define ERRMSG_LEN 2048

/* Writes "prefix: message" (or just the message when prefix is NULL) into err, cut to errlen;
 * err may be NULL. Always returns -1, so `return errmsg_set(...)` reports the failure. */
int errmsg_set(char *err, size_t errlen, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends the formatted text to buf (NUL-terminated, len bytes), cut silently when full: for
 * messages built up piece by piece. */
void errmsg_append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* strerror(e), and for a process out of file descriptors (EMFILE) the limit it hit and where
 * it comes from: "Too many open files (this process may have 21 open: ulimit -n)". A
 * thread-local buffer: valid until the thread's next call. */
const char *errmsg_strerror(int e);

#endif
