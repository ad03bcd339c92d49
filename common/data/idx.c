/* idx.c — IDX reader (plain or gzip through zlib) and writer. See idx.h for the format.
 * Public: idx_parse_buffer, idx_read_file, idx_read_kind, idx_write_file, idx_describe, idx_free.
 *
 * idx_parse_buffer is the from-memory parser (the fuzz target feeds it directly). idx_read_file
 * streams the file (idx_source.h: gzip through inflate, plain through read), decodes the header
 * with the same helpers, then reads exactly the payload the header promises and checks that
 * nothing follows it: no more data, an intact gzip trailer, no bytes after the last gzip member.
 * The payload buffer starts at the size the file suggests and doubles up to the promised size only
 * while data keeps arriving, so a header that lies about a huge count costs at most about twice
 * the memory of the data actually present.
 */
#include "data/idx.h"
#include "data/idx_source.h"

#include "base/errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDX_MIN_ALLOC ((size_t)4096) /* smallest first payload allocation when reading files */
#define IDX_WRITE_CHUNK ((size_t)1 << 30)  /* gzwrite takes an unsigned count */

/* "name: what is wrong" */
#define fail(err, errlen, name, ...) errmsg_set(err, errlen, (name) ? (name) : "(idx)", __VA_ARGS__)

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void describe_dims(uint32_t magic, const uint32_t *dims, char *buf, size_t len)
{
    if (magic == IDX_MAGIC_IMAGES)
        snprintf(buf, len, "%lu images of %lux%lu", (unsigned long)dims[0], (unsigned long)dims[1],
                 (unsigned long)dims[2]);
    else
        snprintf(buf, len, "%lu labels", (unsigned long)dims[0]);
}

void idx_describe(const idx_array *a, char *buf, size_t len)
{
    describe_dims(a->magic, a->dims, buf, len);
}

/* Checks the 4 magic bytes; returns the dimension count (1 or 3) or -1. */
static int parse_magic(const uint8_t *p, const char *name, char *err, size_t errlen)
{
    uint32_t magic = be32(p);
    if (magic == IDX_MAGIC_LABELS)
        return 1;
    if (magic == IDX_MAGIC_IMAGES)
        return 3;
    if (p[0] == 0x1f && p[1] == 0x8b)
        return fail(err, errlen, name,
                    "wrong magic 0x%08lx: the data is gzip-compressed (decompress it first)",
                    (unsigned long)magic);
    return fail(err, errlen, name,
                "wrong magic 0x%08lx (expected 0x00000801 for labels or 0x00000803 for images)",
                (unsigned long)magic);
}

/* A file of the other kind stops at its magic, before its header is read: a labels file whose
 * magic says images would otherwise read as a truncated images file. expect 0 takes either. */
static int wrong_kind(uint32_t magic, uint32_t expect, const char *name, char *err, size_t errlen)
{
    if (!expect || magic == expect)
        return 0;
    int labels = expect == IDX_MAGIC_LABELS;
    return fail(err, errlen, name,
                "expected %s (magic 0x%08lx) but this is %s file (magic 0x%08lx)",
                labels ? "labels" : "images", (unsigned long)expect,
                labels ? "an images" : "a labels", (unsigned long)magic);
}

/* Fills the header fields of *a from the full header hdr (4 + 4*ndims bytes). */
static int parse_dims(const uint8_t *hdr, int ndims, idx_array *a, const char *name, char *err,
                      size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->magic = be32(hdr);
    a->ndims = ndims;
    for (int i = 0; i < ndims; i++)
        a->dims[i] = be32(hdr + 4 + 4 * i);
    size_t item = 1;
    for (int i = 1; i < ndims; i++)
        if (__builtin_mul_overflow(item, (size_t)a->dims[i], &item))
            return fail(err, errlen, name, "header dimensions overflow the address space");
    a->count = a->dims[0];
    a->item_bytes = item;
    if (__builtin_mul_overflow(a->count, item, &a->nbytes))
        return fail(err, errlen, name, "header dimensions overflow the address space");
    return 0;
}

static int truncated_header(size_t have, int ndims, int cut, const char *name, char *err,
                            size_t errlen)
{
    const char *why = cut ? " (gzip stream cut short)" : "";
    if (have == 0)
        return cut ? fail(err, errlen, name, "truncated: the gzip stream ends before any data")
                   : fail(err, errlen, name, "empty file (expected an IDX header)");
    if (ndims == 0)
        return fail(err, errlen, name,
                    "truncated header: %zu byte(s), the IDX magic alone needs 4%s", have, why);
    return fail(err, errlen, name,
                "truncated header: %zu byte(s), an IDX header with %d dimension(s) needs %d%s",
                have, ndims, 4 + 4 * ndims, why);
}

static int truncated_payload(const idx_array *a, size_t got, const char *why, const char *name,
                             char *err, size_t errlen)
{
    char what[96];
    idx_describe(a, what, sizeof what);
    return fail(err, errlen, name,
                "truncated: header says %s (%zu payload bytes) but the file ends after %zu bytes "
                "of payload%s",
                what, a->nbytes, got, why);
}

static int trailing(const idx_array *a, size_t extra, int at_least, const char *name, char *err,
                    size_t errlen)
{
    char what[96];
    idx_describe(a, what, sizeof what);
    return fail(err, errlen, name, "%s%zu unexpected byte(s) after the payload of %s (%zu bytes)",
                at_least ? "at least " : "", extra, what, a->nbytes);
}

int idx_parse_buffer(const uint8_t *buf, size_t len, const char *name, idx_array *out, char *err,
                     size_t errlen)
{
    idx_array a;
    memset(out, 0, sizeof *out);
    if (len < 4)
        return truncated_header(len, 0, 0, name, err, errlen);
    int ndims = parse_magic(buf, name, err, errlen);
    if (ndims < 0)
        return -1;
    size_t hlen = 4 + 4 * (size_t)ndims;
    if (len < hlen)
        return truncated_header(len, ndims, 0, name, err, errlen);
    if (parse_dims(buf, ndims, &a, name, err, errlen))
        return -1;
    size_t avail = len - hlen;
    if (avail < a.nbytes)
        return truncated_payload(&a, avail, "", name, err, errlen);
    if (avail > a.nbytes)
        return trailing(&a, avail - a.nbytes, 0, name, err, errlen);
    a.data = malloc(a.nbytes ? a.nbytes : 1);
    if (!a.data)
        return fail(err, errlen, name, "out of memory for %zu payload bytes", a.nbytes);
    if (a.nbytes)
        memcpy(a.data, buf + hlen, a.nbytes);
    *out = a;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* hint: the expected decoded file size (plain: st_size; gzip: the trailer's ISIZE), only used to
 * size the first allocation; the buffer then doubles while data keeps arriving. */
static int read_stream(idx_source *s, size_t hint, uint32_t expect, const char *path,
                       idx_array *out, char *err, size_t errlen)
{
    uint8_t hdr[16];
    int cut = 0;
    size_t got = idx_source_read(s, hdr, 4);
    if (got < 4) {
        if (idx_source_failed(s, path, err, errlen, &cut))
            return -1;
        return truncated_header(got, 0, cut, path, err, errlen);
    }
    int ndims = parse_magic(hdr, path, err, errlen);
    if (ndims < 0 || wrong_kind(be32(hdr), expect, path, err, errlen))
        return -1;
    size_t hlen = 4 + 4 * (size_t)ndims;
    got += idx_source_read(s, hdr + 4, hlen - 4);
    if (got < hlen) {
        if (idx_source_failed(s, path, err, errlen, &cut))
            return -1;
        return truncated_header(got, ndims, cut, path, err, errlen);
    }
    idx_array a;
    if (parse_dims(hdr, ndims, &a, path, err, errlen))
        return -1;

    size_t cap = hint > hlen + IDX_MIN_ALLOC ? hint - hlen : IDX_MIN_ALLOC;
    if (cap > a.nbytes)
        cap = a.nbytes;
    uint8_t *data = malloc(cap ? cap : 1);
    if (!data)
        return fail(err, errlen, path, "out of memory for %zu payload bytes", cap);
    size_t have = 0;
    while (have < a.nbytes) {
        if (have == cap) { /* grow towards the promised size only as data keeps arriving */
            size_t ncap = cap > a.nbytes / 2 ? a.nbytes : cap * 2;
            uint8_t *nd = realloc(data, ncap);
            if (!nd) {
                free(data);
                return fail(err, errlen, path, "out of memory for %zu payload bytes", ncap);
            }
            data = nd;
            cap = ncap;
        }
        size_t r = idx_source_read(s, data + have, cap - have);
        have += r;
        if (have < cap) {
            free(data);
            if (idx_source_failed(s, path, err, errlen, &cut))
                return -1;
            return truncated_payload(&a, have, cut ? " (gzip stream cut short)" : "", path, err,
                                     errlen);
        }
    }
    /* Nothing may follow the payload. Reading on to the end also checks the gzip trailer. */
    uint8_t scratch[4096];
    size_t extra = 0, r;
    int capped = 0;
    while ((r = idx_source_read(s, scratch, sizeof scratch)) > 0) {
        extra += r;
        if (extra >= ((size_t)1 << 20)) { /* enough to say it is wrong */
            capped = 1;
            break;
        }
    }
    if (!capped && idx_source_failed(s, path, err, errlen, &cut)) {
        free(data);
        return -1;
    }
    if (extra) {
        free(data);
        return trailing(&a, extra, capped, path, err, errlen);
    }
    if (cut) {
        free(data);
        return fail(err, errlen, path,
                    "truncated gzip stream: all %zu payload bytes arrived but the gzip trailer "
                    "(CRC and length) is missing or incomplete",
                    a.nbytes);
    }
    a.data = data;
    *out = a;
    return 0;
}

/* The gzip trailer's ISIZE (decoded length mod 2^32, little-endian, the last 4 bytes) as a size
 * hint, or 0 when it cannot be true. */
static size_t gzip_size_hint(int fd, off_t fsize)
{
    uint8_t t[4];
    if (fsize < 4 || pread(fd, t, 4, fsize - 4) != 4)
        return 0;
    size_t hint = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    /* deflate expands at most ~1032:1, so a bigger claim is a lie; do not allocate for it */
    return hint / 1100 > (size_t)fsize ? 0 : hint;
}

/* Reads the open file fd (fsize bytes, gzip or plain) through an idx_source. */
static int read_fd(int fd, off_t fsize, int is_gzip, uint32_t expect, const char *path,
                   idx_array *out, char *err, size_t errlen)
{
    idx_source s;
    if (idx_source_open(&s, fd, fsize, is_gzip, path, err, errlen))
        return -1;
    size_t hint = is_gzip ? gzip_size_hint(fd, fsize) : (size_t)fsize;
    int rc = read_stream(&s, hint, expect, path, out, err, errlen);
    idx_source_close(&s);
    return rc;
}

int idx_read_file(const char *path, idx_array *out, char *err, size_t errlen)
{
    return idx_read_kind(path, 0, out, err, errlen);
}

int idx_read_kind(const char *path, uint32_t expect, idx_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!path || !*path)
        return fail(err, errlen, "(idx)", "no file name given");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, path, "cannot stat: %s", strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return fail(err, errlen, path, "is a directory, expected an IDX file");
    }
    uint8_t sig[2] = {0, 0};
    ssize_t ns = pread(fd, sig, 2, 0);
    if (ns < 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, path, "read error: %s", strerror(e));
    }
    if (ns == 0) {
        close(fd);
        return truncated_header(0, 0, 0, path, err, errlen);
    }
    int is_gzip = ns == 2 && sig[0] == 0x1f && sig[1] == 0x8b;
    if (!is_gzip && ends_with(path, ".gz")) {
        close(fd);
        if (ns < 2)
            return fail(err, errlen, path, "not gzip: named .gz but only 1 byte long");
        return fail(err, errlen, path,
                    "not gzip: named .gz but starts with 0x%02x 0x%02x instead of the gzip "
                    "signature 0x1f 0x8b",
                    sig[0], sig[1]);
    }
    int rc = read_fd(fd, st.st_size, is_gzip, expect, path, out, err, errlen);
    close(fd);
    return rc;
}

int idx_write_file(const char *path, uint32_t magic, const uint32_t *dims,
                   const uint8_t *data /* (prod(dims)) */, int gz, char *err, size_t errlen)
{
    int ndims = magic == IDX_MAGIC_LABELS ? 1 : magic == IDX_MAGIC_IMAGES ? 3 : 0;
    if (!ndims)
        return fail(err, errlen, path, "cannot write magic 0x%08lx (only 0x801 and 0x803)",
                    (unsigned long)magic);
    uint8_t hdr[16];
    size_t n = 1;
    for (int i = 0; i < 4; i++)
        hdr[i] = (uint8_t)(magic >> (24 - 8 * i));
    for (int d = 0; d < ndims; d++) {
        for (int i = 0; i < 4; i++)
            hdr[4 + 4 * d + i] = (uint8_t)(dims[d] >> (24 - 8 * i));
        if (__builtin_mul_overflow(n, (size_t)dims[d], &n))
            return fail(err, errlen, path, "dimensions overflow the address space");
    }
    size_t hlen = 4 + 4 * (size_t)ndims;
    if (gz) {
        gzFile f = gzopen(path, "wb6");
        if (!f)
            return fail(err, errlen, path, "cannot create: %s", strerror(errno));
        int ok = gzwrite(f, hdr, (unsigned)hlen) == (int)hlen;
        for (size_t off = 0; ok && off < n; off += IDX_WRITE_CHUNK) {
            size_t k = n - off < IDX_WRITE_CHUNK ? n - off : IDX_WRITE_CHUNK;
            ok = gzwrite(f, data + off, (unsigned)k) == (int)k;
        }
        if (gzclose(f) != Z_OK || !ok)
            return fail(err, errlen, path, "write error");
        return 0;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return fail(err, errlen, path, "cannot create: %s", strerror(errno));
    int ok = fwrite(hdr, 1, hlen, f) == hlen && (n == 0 || fwrite(data, 1, n, f) == n);
    if (fclose(f) != 0 || !ok)
        return fail(err, errlen, path, "write error: %s", strerror(errno));
    return 0;
}

void idx_free(idx_array *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}
