/* errmsg.c — one-line error messages for recoverable failures. See errmsg.h.
 * Public: errmsg_set. */
#include "base/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

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
