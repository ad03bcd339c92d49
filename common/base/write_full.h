/* write_full.h — a write that either puts a whole buffer out or says why not.
 *
 * A short write(2) sets no errno: the reason (a full disk, a file-size limit) shows only when
 * the rest is written. The trace files and the timeline cut off what a failed write left, and
 * name the cause in their one warning.
 *
 * Public (write_full.c): write_full. */
#ifndef HVDLAB_WRITE_FULL_H
#define HVDLAB_WRITE_FULL_H

#include <stddef.h>
#include <sys/types.h>

/* Writes len bytes of buf to fd, at offset at (pwrite), or where the file offset is when at < 0
 * (write, so O_APPEND appends). Returns the bytes written: fewer than len only with errno set
 * (ENOSPC where a write makes no progress and gives no reason). */
size_t write_full(int fd, const void *buf, size_t len, off_t at);

#endif
