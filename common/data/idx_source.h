/* idx_source.h — the bytes of an IDX file as idx_read_file (idx.c) reads them: read(2) for a
 * plain file, zlib's inflate for gzip. Not gzread: once inflate has filled the caller's buffer
 * and swallowed the last input bytes (a cut trailer among them) gzread reports a clean end of
 * file, and it ignores whatever follows a gzip member. Here input that ends before a member's end
 * is "cut", and only another gzip member (RFC 1952 allows several; gzip -d joins them) may follow
 * one.
 *
 * Public: idx_source_open, idx_source_read, idx_source_failed, idx_source_close.
 */
#ifndef HVDLAB_IDX_SOURCE_H
#define HVDLAB_IDX_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>

typedef enum {
    IDX_SRC_OK,
    IDX_SRC_END,     /* the end of the file, after a whole gzip member */
    IDX_SRC_CUT,     /* the input ended inside a gzip member (its trailer among what is missing) */
    IDX_SRC_ERRNO,   /* read(2) failed: errnum */
    IDX_SRC_ZERR,    /* inflate failed: zerr */
    IDX_SRC_GARBAGE  /* bytes after a member that start no other */
} idx_source_state;

typedef struct {
    int fd;
    int gz;           /* 1: gzip through inflate, 0: plain */
    z_stream zs;      /* gzip only */
    uint8_t *in;      /* gzip input buffer, insz bytes */
    size_t insz;
    int in_eof;       /* read() said end of file */
    int between;      /* a gzip member ended; what follows it is not looked at yet */
    size_t out;       /* bytes delivered so far (decompressed for gzip) */
    off_t taken;      /* bytes read() from the file so far */
    off_t fsize;      /* the file's size, to count bytes after the last member */
    idx_source_state st;
    int zerr, errnum; /* why, for IDX_SRC_ZERR and IDX_SRC_ERRNO */
} idx_source;

/* Reads fd (fsize bytes; is_gzip: through inflate). 0, or -1 with one line in err naming path. */
int idx_source_open(idx_source *s, int fd, off_t fsize, int is_gzip, const char *path, char *err,
                    size_t errlen);
/* Reads up to n bytes; returns how many arrived (fewer means the end, a cut or an error). */
size_t idx_source_read(idx_source *s, uint8_t *dst, size_t n);
/* After a short read: 1 if it was an error (message written, naming name), 0 on a clean end or
 * a cut (then *cut_short is 1). */
int idx_source_failed(const idx_source *s, const char *name, char *err, size_t errlen,
                      int *cut_short);
/* Frees what idx_source_open took (not fd). */
void idx_source_close(idx_source *s);

#endif
