/* idx.h — reader (and small writer) for the IDX format of MNIST / Fashion-MNIST.
 *
 * An IDX file is a big-endian header followed by the raw payload:
 *   bytes 0-1  zero
 *   byte  2    data type, 0x08 = unsigned byte (the only type hvdlab reads)
 *   byte  3    number of dimensions: 1 (labels, magic 0x00000801) or 3 (images, magic 0x00000803)
 *   then one big-endian uint32 per dimension, then prod(dims) bytes, and nothing after them.
 *
 * Files may be plain or gzip-compressed; the content decides (gzip signature 1f 8b), with one
 * extra check: a file whose name ends in ".gz" but is not gzip is rejected ("not gzip"), since that
 * is almost always a broken download. Every failure returns -1 and writes one line naming the file
 * and what is wrong into err (errlen bytes, ERRMSG_LEN is plenty); nothing here aborts or exits.
 */
#ifndef HVDLAB_IDX_H
#define HVDLAB_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h" /* ERRMSG_LEN */

#define IDX_MAGIC_LABELS 0x00000801u /* ubyte, 1 dimension  (N) */
#define IDX_MAGIC_IMAGES 0x00000803u /* ubyte, 3 dimensions (N, rows, cols) */

typedef struct {
    uint32_t magic;      /* IDX_MAGIC_LABELS or IDX_MAGIC_IMAGES */
    int ndims;           /* 1 or 3 */
    uint32_t dims[3];    /* dims[0] = item count; unused entries are 0 */
    size_t count;        /* dims[0] */
    size_t item_bytes;   /* bytes per item: 1 for labels, rows*cols for images */
    size_t nbytes;       /* payload bytes = count * item_bytes */
    uint8_t *data;       /* owned, nbytes long // (dims[0], dims[1], dims[2]) */
} idx_array;

/* Parses an IDX file held in memory (not compressed). name is used in messages only.
 * On success fills *out (payload copied; release with idx_free) and returns 0. */
int idx_parse_buffer(const uint8_t *buf, size_t len, const char *name, idx_array *out, char *err,
                     size_t errlen);

/* Reads an IDX file, plain or gzip, from path. Same contract as idx_parse_buffer. */
int idx_read_file(const char *path, idx_array *out, char *err, size_t errlen);

/* idx_read_file for one kind: expect is IDX_MAGIC_LABELS or IDX_MAGIC_IMAGES, and a file of the
 * other kind fails with "expected labels (magic 0x00000801) but this is an images file (…)". */
int idx_read_kind(const char *path, uint32_t expect, idx_array *out, char *err, size_t errlen);

/* Writes a (uncompressed) IDX file with the given magic, dims and payload; gz = 1 writes gzip.
 * dims has 1 entry for IDX_MAGIC_LABELS and 3 for IDX_MAGIC_IMAGES. */
int idx_write_file(const char *path, uint32_t magic, const uint32_t *dims,
                   const uint8_t *data /* (prod(dims)) */, int gz, char *err, size_t errlen);

/* "60000 images of 28x28" / "60000 labels" for messages. */
void idx_describe(const idx_array *a, char *buf, size_t len);

/* Frees the payload and zeroes *a; safe on a zeroed or already freed array. */
void idx_free(idx_array *a);

#endif
