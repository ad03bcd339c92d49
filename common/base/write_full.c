/* write_full.c — write until the whole buffer is out or the kernel says why not. See
 * write_full.h.
 * Public: write_full. */
#include "base/write_full.h"

#include <errno.h>
#include <unistd.h>

size_t write_full(int fd, const void *buf, size_t len, off_t at)
{
    const char *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t w = at < 0 ? write(fd, p + done, len - done)
                           : pwrite(fd, p + done, len - done, at + (off_t)done);
        if (w < 0)
            break; /* errno says why */
        if (w == 0) {
            errno = ENOSPC;
            break;
        }
        done += (size_t)w;
    }
    return done;
}
