/* ckpt_fixture.h — shared by test_ckpt.c and test_ckpt_files.c: a small checkpoint whose values
 * tell positions apart (with -0, a denormal and the largest finite floats; NaN and inf are never
 * saved), file helpers, and stderr capture. Everything is static inline so each test uses what
 * it needs. */
#ifndef HVDLAB_CKPT_FIXTURE_H
#define HVDLAB_CKPT_FIXTURE_H

#include <check.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "ckpt/ckpt.h"
#include "lib/file_io.h"
#include "lib/tmpdir.h"

extern char err[ERRMSG_LEN]; /* each test file defines it */

enum { NP = 18 + 2 + 6, NS = 4, NO = NP };
typedef struct {
    param_view views[3], sviews[2];
    float params[NP], state[NS], opt[NO];
    ckpt_data d;
} fixture;

static inline param_view view(const char *name, size_t off, int ndim, const int *shape, int decay)
{
    param_view v = {.offset = off, .ndim = ndim, .decay = decay, .count = 1};
    snprintf(v.name, sizeof v.name, "%s", name);
    for (int k = 0; k < ndim; k++)
        v.count *= (size_t)(v.shape[k] = shape[k]);
    return v;
}

static inline void make_fixture(fixture *f, int depth, int width, int epoch)
{
    memset(f, 0, sizeof *f);
    f->views[0] = view("stem.conv.w", 0, 4, (int[]){2, 1, 3, 3}, 1);
    f->views[1] = view("stem.conv.b", 18, 1, (int[]){2}, 0);
    f->views[2] = view("fc.w", 20, 2, (int[]){3, 2}, 1);
    f->sviews[0] = view("stem.bn.mean", 0, 1, (int[]){2}, 0);
    f->sviews[1] = view("stem.bn.var", 2, 1, (int[]){2}, 0);
    for (int i = 0; i < NP; i++) {
        f->params[i] = (float)(i + 1) * 0.37f - 3.0f + (float)epoch;
        f->opt[i] = -(float)i / 7.0f;
    }
    for (int i = 0; i < NS; i++)
        f->state[i] = (float)(i * i) + 0.5f;
    /* bit patterns a lossy path would change: -0, a denormal, the largest finite floats */
    f->params[3] = -0.0f;
    f->params[4] = 1e-40f;
    f->params[5] = -FLT_MAX;
    f->opt[6] = FLT_MAX;
    f->d = (ckpt_data){.cfg = {depth, width, 0.01f}, .epoch = epoch, .opt_kind = OPT_SGD,
                       .iterations = 1234567890123L, .last_lr = 0.0125f, .views = f->views,
                       .nviews = 3, .params = f->params, .n_params = NP, .state_views = f->sviews,
                       .n_state_views = 2, .state = f->state, .n_state = NS,
                       .opt_state = f->opt, .n_opt_state = NO,
                       .resume = {.model_steps = 9876543210ull, .batch = 0, .world_size = 3,
                                  .batch_size = 32}};
}

static inline ckpt_expect expect_of(const fixture *f)
{
    return (ckpt_expect){.cfg = f->d.cfg, .opt_kind = f->d.opt_kind, .check_counts = 1,
                         .n_params = NP, .n_state = NS, .n_opt_state = NO, .views = f->views,
                         .nviews = 3, .state_views = f->sviews, .n_state_views = 2};
}

#define FILE_BYTES (128 + 104 * 5 + 4 * (NP + NS + NO) + 32 + 4)
#define RESUME_AT (DATA_AT + 4 * (NP + NS + NO))
#define DATA_AT (128 + 104 * 5)

static inline void save(const char *dir, const fixture *f)
{
    ck_assert_msg(ckpt_save(dir, &f->d, err, sizeof err) == 0, "%s", err);
}

static inline uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *b = (uint8_t *)file_read(path, len);
    ck_assert_msg(b != NULL, "cannot read %s", path);
    return b;
}

static inline void spit(const char *path, const void *b, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(b, 1, len, fp), len);
    fclose(fp);
}

static inline uint32_t le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void set_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}
/* Re-seals a hand-edited file: header CRC and trailer CRC recomputed. */
static inline void reseal(uint8_t *b, size_t len)
{
    set_le32(b + 124, (uint32_t)crc32(0, b, 124));
    set_le32(b + len - 4, (uint32_t)crc32(0, b, (uInt)(len - 4)));
}

/* stderr into a file for the duration of a call. */
static inline int capture_begin(void) /* returns the saved stderr for capture_end */
{
    fflush(stderr);
    int saved_fd = dup(2);
    int fd = open(tmp_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    close(fd);
    return saved_fd;
}
static inline char *capture_end(int saved_fd)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    size_t n;
    char *s = (char *)slurp(tmp_path("stderr.txt"), &n);
    s[n] = '\0';
    return s;
}

#endif
