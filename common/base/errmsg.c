/* errmsg.c — one-line error messages for recoverable failures. See errmsg.h.
 * Public: errmsg_set, errmsg_append, errmsg_strerror. */
#include "base/errmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

int errmsg_set(char *err, size_t errlen, const char *prefix, const char *fmt, ...)
{
    if (!err || !errlen)
        return -1;
    int n = prefix ? snprintf(err, errlen, "%s: ", prefix) : 0;
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void errmsg_append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strnlen(buf, len);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

const char *errmsg_strerror(int e)
{
    static _Thread_local char buf[160];
    struct rlimit rl;
    if (e == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(buf, sizeof buf, "%s (this process may have %llu open: ulimit -n)", strerror(e),
                 (unsigned long long)rl.rlim_cur);
    else if (e == ENFILE)
        snprintf(buf, sizeof buf, "%s (the whole system's limit: fs.file-max)", strerror(e));
    else
        snprintf(buf, sizeof buf, "%s", strerror(e));
    return buf;
}
