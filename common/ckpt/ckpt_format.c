/* ckpt_format.c — the checkpoint format (see ckpt_format.h): encoding to a descriptor, reading
 * and verifying a file. What a run expects of a file is ckpt_check.c; directories, temp files,
 * renames and the newest-epoch scan are ckpt_files.c.
 * Public: ckpt_path, ckpt_path_at, ckpt_config_name, ckpt_write_fd, ckpt_read_file, ckpt_file_free.
 */
#include "ckpt/ckpt_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/errmsg.h"

/* Float arrays go to disk straight from memory, so the host must be little-endian like the
 * format (every platform the kit targets is). A big-endian port would byte-swap them here. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ckpt_format.c writes float arrays as they are in memory; the format is little-endian"
#endif

/* ---- little-endian fields ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_f32(uint8_t *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(p, v);
}
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static float get_f32(const uint8_t *p)
{
    uint32_t v = get_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* zlib returns 0 for a NULL buffer (its "initial value" idiom), so empty arrays are skipped. */
static uint32_t crc(uint32_t c, const void *p, size_t n)
{
    return n ? (uint32_t)crc32_z(c, p, n) : c;
}

void ckpt_config_name(const ckpt_config *c, char *buf, size_t len)
{
    snprintf(buf, len, "wrn-%d-%d", c->depth, c->width);
}

int ckpt_path_at(char *buf, size_t len, const char *dir, int epoch, int batch)
{
    int n = batch > 0 ? snprintf(buf, len, "%s/checkpoint-%d.%d.ckpt", dir, epoch, batch)
                      : snprintf(buf, len, "%s/checkpoint-%d.ckpt", dir, epoch);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int ckpt_path(char *buf, size_t len, const char *dir, int epoch)
{
    return ckpt_path_at(buf, len, dir, epoch, 0);
}

/* Total bytes of a file with these counts; -1 on overflow. */
static int file_size_of(uint64_t nv, uint64_t np, uint64_t ns, uint64_t no, uint64_t rb,
                        uint64_t *out)
{
    uint64_t floats, fbytes, vbytes, t;
    if (rb > UINT32_MAX || __builtin_add_overflow(np, ns, &floats) ||
        __builtin_add_overflow(floats, no, &floats) ||
        __builtin_mul_overflow(floats, 4, &fbytes) ||
        __builtin_mul_overflow(nv, CKPT_VIEW_BYTES, &vbytes) ||
        __builtin_add_overflow(fbytes, vbytes, &t) ||
        __builtin_add_overflow(t, CKPT_HEADER_BYTES + 4 + rb, &t))
        return -1;
    *out = t;
    return 0;
}

/* ---- writing ---- */

typedef struct {
    int fd;
    uint32_t crc;
    const char *path;
    char *err;
    size_t errlen;
} writer;

static int wr(writer *w, const void *buf, size_t n)
{
    w->crc = crc(w->crc, buf, n);
    const char *p = buf;
    while (n) {
        ssize_t k = write(w->fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return errmsg_set(w->err, w->errlen, w->path, "cannot write checkpoint: %s",
                              k < 0 ? strerror(errno) : "no progress");
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void encode_header(uint8_t *h, const ckpt_data *d, uint64_t file_bytes)
{
    memset(h, 0, CKPT_HEADER_BYTES);
    memcpy(h, CKPT_MAGIC, 8);
    put_u32(h + 8, CKPT_VERSION);
    put_u32(h + 12, CKPT_HEADER_BYTES);
    put_u64(h + 16, file_bytes);
    put_u32(h + 24, (uint32_t)d->cfg.depth);
    put_u32(h + 28, (uint32_t)d->cfg.width);
    put_f32(h + 32, d->cfg.dropout);
    ckpt_config_name(&d->cfg, (char *)h + 36, CKPT_NAME_LEN);
    put_u32(h + 68, (uint32_t)d->epoch);
    put_u32(h + 72, (uint32_t)d->opt_kind);
    put_f32(h + 76, d->last_lr);
    put_u64(h + 80, (uint64_t)(int64_t)d->iterations);
    put_u64(h + 88, d->n_params);
    put_u64(h + 96, d->n_state);
    put_u64(h + 104, d->n_opt_state);
    put_u32(h + 112, (uint32_t)d->nviews);
    put_u32(h + 116, (uint32_t)d->n_state_views);
    put_u32(h + 120, CKPT_RESUME_BYTES);
    put_u32(h + 124, crc(0, h, 124));
}

static void encode_view(uint8_t *b, const param_view *v)
{
    memset(b, 0, CKPT_VIEW_BYTES);
    memcpy(b, v->name, strnlen(v->name, PARAM_NAME_LEN - 1));
    put_u64(b + 64, v->offset);
    put_u64(b + 72, v->count);
    put_u32(b + 80, (uint32_t)v->ndim);
    for (int i = 0; i < PARAM_MAX_DIMS; i++)
        put_u32(b + 84 + 4 * i, (uint32_t)(i < v->ndim ? v->shape[i] : 0));
    put_u32(b + 100, (uint32_t)v->decay);
}

static void encode_resume(uint8_t *b, const ckpt_resume *r)
{
    memset(b, 0, CKPT_RESUME_BYTES);
    put_u64(b, r->model_steps);
    put_u32(b + 8, (uint32_t)r->batch);
    put_u32(b + 12, (uint32_t)r->world_size);
    put_u32(b + 16, (uint32_t)r->early_stop_count);
    put_u32(b + 20, (uint32_t)r->batch_size);
}

static void decode_resume(const uint8_t *b, ckpt_resume *r)
{
    r->model_steps = get_u64(b);
    r->batch = (int)get_u32(b + 8);
    r->world_size = (int)get_u32(b + 12);
    r->early_stop_count = (int)get_u32(b + 16);
    r->batch_size = (int)get_u32(b + 20);
}

int ckpt_write_fd(int fd, const ckpt_data *d, const char *path, char *err, size_t errlen)
{
    uint64_t fb;
    if (d->nviews < 0 || d->n_state_views < 0 || d->epoch < 0 ||
        file_size_of((uint64_t)d->nviews + (uint64_t)d->n_state_views, d->n_params, d->n_state,
                     d->n_opt_state, CKPT_RESUME_BYTES, &fb))
        return errmsg_set(err, errlen, path, "bad checkpoint contents (negative or huge counts)");
    writer wt = {.fd = fd, .path = path, .err = err, .errlen = errlen}, *w = &wt;
    uint8_t h[CKPT_HEADER_BYTES], vb[CKPT_VIEW_BYTES], rb[CKPT_RESUME_BYTES], t[4];
    encode_header(h, d, fb);
    if (wr(w, h, sizeof h))
        return -1;
    for (int i = 0; i < d->nviews + d->n_state_views; i++) {
        encode_view(vb, i < d->nviews ? &d->views[i] : &d->state_views[i - d->nviews]);
        if (wr(w, vb, sizeof vb))
            return -1;
    }
    if (wr(w, d->params, d->n_params * 4) || wr(w, d->state, d->n_state * 4) ||
        wr(w, d->opt_state, d->n_opt_state * 4))
        return -1;
    encode_resume(rb, &d->resume);
    if (wr(w, rb, sizeof rb))
        return -1;
    put_u32(t, w->crc);
    return wr(w, t, 4);
}

/* ---- reading ---- */

void ckpt_file_free(ckpt_file *f)
{
    free(f->views_buf);
    free(f->blob);
    memset(f, 0, sizeof *f);
}

static int decode_view(const uint8_t *b, param_view *v, size_t limit, const char *path, int i,
                       char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    if (!memchr(b, '\0', PARAM_NAME_LEN))
        return errmsg_set(err, errlen, path, "inconsistent checkpoint: view %d name not terminated",
                          i);
    memcpy(v->name, b, PARAM_NAME_LEN);
    uint64_t off = get_u64(b + 64), cnt = get_u64(b + 72), prod = 1;
    v->ndim = (int)get_u32(b + 80);
    v->decay = (int)get_u32(b + 100);
    if (v->ndim < 0 || v->ndim > PARAM_MAX_DIMS)
        return errmsg_set(err, errlen, path, "inconsistent checkpoint: view %s has %d dims",
                          v->name, v->ndim);
    for (int k = 0; k < v->ndim; k++) {
        v->shape[k] = (int)get_u32(b + 84 + 4 * k);
        if (v->shape[k] < 0 || __builtin_mul_overflow(prod, (uint64_t)v->shape[k], &prod))
            return errmsg_set(err, errlen, path, "inconsistent checkpoint: view %s has a bad shape",
                              v->name);
    }
    if (prod != cnt || off > limit || cnt > limit - off)
        return errmsg_set(err, errlen, path, "inconsistent checkpoint: view %s (offset %llu, count "
                          "%llu) outside its buffer of %zu or not its shape's size", v->name,
                          (unsigned long long)off, (unsigned long long)cnt, limit);
    v->offset = (size_t)off;
    v->count = (size_t)cnt;
    return 0;
}

/* Reads the whole file into *blob. */
static int slurp(const char *path, uint8_t **blob, size_t *size, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO (or a device) under a checkpoint's name must not block the open until
     * a writer comes; it is refused below. A regular file reads the same either way. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errmsg_set(err, errlen, path, "cannot open checkpoint: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return errmsg_set(err, errlen, path, "not a regular file");
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        close(fd);
        return errmsg_set(err, errlen, path, "out of memory reading %zu bytes", n);
    }
    while (got < n) {
        ssize_t k = read(fd, b + got, n - got > (1u << 30) ? (1u << 30) : n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(b);
            close(fd);
            return errmsg_set(err, errlen, path, "cannot read checkpoint: %s", strerror(e));
        }
        if (k == 0)
            break; /* shrank under us: judged below as a truncated file */
        got += (size_t)k;
    }
    close(fd);
    *blob = b;
    *size = got;
    return 0;
}

/* Checks the header and the sizes; fills f->d's scalars and counts. */
static int parse(const uint8_t *b, size_t size, const char *path, ckpt_file *f, char *err,
                 size_t errlen)
{
    if (memcmp(b, CKPT_MAGIC, size < 8 ? size : 8) != 0)
        return errmsg_set(err, errlen, path, "not an hvdlab checkpoint (bad magic)");
    if (size < CKPT_HEADER_BYTES)
        return errmsg_set(err, errlen, path, "truncated checkpoint: %zu bytes, shorter than the "
                          "%d-byte header", size, CKPT_HEADER_BYTES);
    f->version = get_u32(b + 8);
    if (f->version != CKPT_VERSION && f->version != 1)
        return errmsg_set(err, errlen, path, "checkpoint format version %u, this hvdlab reads "
                          "versions 1 and %d", f->version, CKPT_VERSION);
    if (get_u32(b + 124) != crc(0, b, 124))
        return errmsg_set(err, errlen, path, "corrupt checkpoint header (header CRC mismatch)");
    uint64_t fb = get_u64(b + 16);
    if (size < fb)
        return errmsg_set(err, errlen, path, "truncated checkpoint: %zu bytes, its header says "
                          "%llu", size, (unsigned long long)fb);
    if (size > fb)
        return errmsg_set(err, errlen, path, "corrupt checkpoint: %zu bytes, its header says %llu "
                          "(trailing bytes)", size, (unsigned long long)fb);
    uint32_t stored = get_u32(b + size - 4), computed = crc(0, b, size - 4);
    if (stored != computed)
        return errmsg_set(err, errlen, path, "corrupt checkpoint: CRC32 %08x stored, %08x "
                          "computed", stored, computed);
    /* CRC-valid from here: what follows only fails for a file from a buggy writer. */
    ckpt_data *d = &f->d;
    f->file_bytes = size;
    d->cfg.depth = (int)get_u32(b + 24);
    d->cfg.width = (int)get_u32(b + 28);
    d->cfg.dropout = get_f32(b + 32);
    memcpy(f->name, b + 36, 32);
    f->name[CKPT_NAME_LEN - 1] = '\0';
    d->epoch = (int)get_u32(b + 68);
    d->opt_kind = (int)get_u32(b + 72);
    d->last_lr = get_f32(b + 76);
    d->iterations = (long)(int64_t)get_u64(b + 80);
    uint64_t np = get_u64(b + 88), ns = get_u64(b + 96), no = get_u64(b + 104), want;
    uint64_t nv = get_u32(b + 112), nsv = get_u32(b + 116), rb = get_u32(b + 120);
    if (get_u32(b + 12) != CKPT_HEADER_BYTES || file_size_of(nv + nsv, np, ns, no, rb, &want) ||
        want != fb || nv > INT32_MAX || nsv > INT32_MAX ||
        (f->version == 1 ? rb != 0 : rb < CKPT_RESUME_BYTES))
        return errmsg_set(err, errlen, path, "inconsistent checkpoint: counts (%llu views, %llu "
                          "floats) do not add up to its %llu bytes", (unsigned long long)(nv + nsv),
                          (unsigned long long)(np + ns + no), (unsigned long long)fb);
    d->n_params = (size_t)np;
    d->n_state = (size_t)ns;
    d->n_opt_state = (size_t)no;
    d->nviews = (int)nv;
    d->n_state_views = (int)nsv;
    f->resume_bytes = (size_t)rb;
    return 0;
}

int ckpt_newer_format(const char *path)
{
    uint8_t h[CKPT_HEADER_BYTES];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* as slurp: a FIFO must not block */
    if (fd < 0)
        return 0;
    struct stat st;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, h, sizeof h) : -1;
    close(fd);
    return got == (ssize_t)sizeof h && memcmp(h, CKPT_MAGIC, 8) == 0 &&
           get_u32(h + 8) > CKPT_VERSION && get_u32(h + 124) == crc(0, h, 124);
}

int ckpt_read_file(const char *path, ckpt_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    uint8_t *b = NULL;
    size_t size = 0;
    if (slurp(path, &b, &size, err, errlen))
        return -1;
    f->blob = b;
    if (parse(b, size, path, f, err, errlen))
        goto fail;
    ckpt_data *d = &f->d;
    int nv = d->nviews + d->n_state_views;
    f->views_buf = malloc((size_t)(nv ? nv : 1) * sizeof *f->views_buf);
    if (!f->views_buf) {
        errmsg_set(err, errlen, path, "out of memory");
        goto fail;
    }
    for (int i = 0; i < nv; i++)
        if (decode_view(b + CKPT_HEADER_BYTES + (size_t)i * CKPT_VIEW_BYTES, &f->views_buf[i],
                        i < d->nviews ? d->n_params : d->n_state, path, i, err, errlen))
            goto fail;
    const float *data = (const float *)(b + CKPT_HEADER_BYTES + (size_t)nv * CKPT_VIEW_BYTES);
    d->views = f->views_buf;
    d->state_views = f->views_buf + d->nviews;
    d->params = data;
    d->state = data + d->n_params;
    d->opt_state = data + d->n_params + d->n_state;
    if (f->resume_bytes)
        decode_resume((const uint8_t *)(d->opt_state + d->n_opt_state), &d->resume);
    return 0;
fail:
    ckpt_file_free(f);
    return -1;
}
