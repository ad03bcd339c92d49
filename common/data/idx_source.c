/* idx_source.c — an IDX file's bytes, plain or through inflate (idx_source.h).
 * Public: idx_source_open, idx_source_read, idx_source_failed, idx_source_close.
 */
#include "data/idx_source.h"

#include "base/errmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SOURCE_CHUNK ((size_t)1 << 30) /* zlib counts in unsigned int */

int idx_source_open(idx_source *s, int fd, off_t fsize, int is_gzip, const char *path, char *err,
                    size_t errlen)
{
    memset(s, 0, sizeof *s); /* zalloc, zfree, opaque: Z_NULL */
    s->fd = fd;
    s->gz = is_gzip;
    s->fsize = fsize;
    if (!is_gzip)
        return 0;
    /* input buffer: 256 KiB for real data sets, small for small files */
    s->insz = fsize >= (1 << 18) ? (size_t)1 << 18 : (size_t)1 << 13;
    s->in = malloc(s->insz);
    s->zs.next_in = s->in;
    if (!s->in || inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK) { /* 16+: gzip wrapper only */
        free(s->in);
        s->in = NULL;
        return errmsg_set(err, errlen, path, "cannot open through zlib (out of memory?)");
    }
    return 0;
}

void idx_source_close(idx_source *s)
{
    if (s->gz) {
        inflateEnd(&s->zs);
        free(s->in);
    }
    s->in = NULL;
}

static ssize_t read_retry(int fd, void *buf, size_t n)
{
    ssize_t r;
    do
        r = read(fd, buf, n);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Moves the unread input to the front of the buffer and reads more after it. */
static void src_fill(idx_source *s)
{
    if (s->zs.avail_in && s->zs.next_in != s->in)
        memmove(s->in, s->zs.next_in, s->zs.avail_in);
    s->zs.next_in = s->in;
    ssize_t r = read_retry(s->fd, s->in + s->zs.avail_in, s->insz - s->zs.avail_in);
    if (r < 0) {
        s->errnum = errno;
        s->st = IDX_SRC_ERRNO;
        return;
    }
    s->in_eof = r == 0;
    s->zs.avail_in += (uInt)r;
    s->taken += r;
}

/* After a member's end: the end of the file, another member (RFC 1952 allows several; gzip -d
 * joins them, pigz and bgzip write them), or bytes that are an error here. */
static void src_next_member(idx_source *s)
{
    while (s->zs.avail_in < 2 && !s->in_eof && s->st == IDX_SRC_OK)
        src_fill(s);
    if (s->st != IDX_SRC_OK)
        return;
    if (s->zs.avail_in == 0) {
        s->st = IDX_SRC_END;
    } else if (s->zs.avail_in >= 2 && s->zs.next_in[0] == 0x1f && s->zs.next_in[1] == 0x8b) {
        s->between = 0;
        if (inflateReset(&s->zs) != Z_OK) {
            s->zerr = Z_STREAM_ERROR;
            s->st = IDX_SRC_ZERR;
        }
    } else {
        s->st = IDX_SRC_GARBAGE;
    }
}

static size_t src_read_gz(idx_source *s, uint8_t *dst, size_t n)
{
    size_t done = 0;
    while (done < n && s->st == IDX_SRC_OK) {
        if (s->between) {
            src_next_member(s);
            continue;
        }
        if (s->zs.avail_in == 0) {
            if (s->in_eof)
                s->st = IDX_SRC_CUT; /* the input ended inside a member */
            else
                src_fill(s);
            continue;
        }
        size_t want = n - done < SOURCE_CHUNK ? n - done : SOURCE_CHUNK;
        s->zs.next_out = dst + done;
        s->zs.avail_out = (uInt)want;
        int ret = inflate(&s->zs, Z_NO_FLUSH);
        done += want - s->zs.avail_out;
        if (ret == Z_STREAM_END) { /* CRC and length checked by inflate */
            s->between = 1;
        } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            s->zerr = ret;
            s->st = IDX_SRC_ZERR;
        }
    }
    return done;
}

static size_t src_read_plain(idx_source *s, uint8_t *dst, size_t n)
{
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < SOURCE_CHUNK ? n - done : SOURCE_CHUNK;
        ssize_t r = read_retry(s->fd, dst + done, want);
        if (r <= 0) {
            s->errnum = r < 0 ? errno : 0;
            s->st = r < 0 ? IDX_SRC_ERRNO : IDX_SRC_END;
            break;
        }
        done += (size_t)r;
    }
    return done;
}

size_t idx_source_read(idx_source *s, uint8_t *dst, size_t n)
{
    if (s->st != IDX_SRC_OK)
        return 0;
    size_t got = s->gz ? src_read_gz(s, dst, n) : src_read_plain(s, dst, n);
    s->out += got;
    return got;
}

int idx_source_failed(const idx_source *s, const char *name, char *err, size_t errlen,
                      int *cut_short)
{
    *cut_short = s->st == IDX_SRC_CUT;
    if (s->st == IDX_SRC_ERRNO)
        errmsg_set(err, errlen, name, "read error after %zu bytes: %s", s->out,
                   strerror(s->errnum));
    else if (s->st == IDX_SRC_ZERR && s->zerr == Z_MEM_ERROR)
        errmsg_set(err, errlen, name, "out of memory while decompressing");
    else if (s->st == IDX_SRC_ZERR)
        errmsg_set(err, errlen, name, "corrupt gzip data after %zu decompressed bytes: %s", s->out,
                   s->zs.msg && *s->zs.msg ? s->zs.msg : "unknown zlib error");
    else if (s->st == IDX_SRC_GARBAGE) {
        off_t at = s->taken - (off_t)s->zs.avail_in; /* where the last member ended */
        size_t extra = s->fsize > at ? (size_t)(s->fsize - at) : s->zs.avail_in;
        errmsg_set(err, errlen, name, "%zu unexpected byte(s) after the end of the gzip stream "
                   "(not another gzip member)", extra);
    } else
        return 0;
    return 1;
}

