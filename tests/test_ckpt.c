/* test_ckpt.c — checkpoint files: bit-exact round trip and the documented byte layout, every
 * single-byte corruption and every truncation detected with its own message, config/optimizer/
 * view mismatches, the newest valid epoch (skipping bad files with one warning each), writers
 * killed before the rename, the param_set layer and its trace lines. Serial (forked Check). */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "ckpt.h"
#include "ck_mpi.h"
#include "tmpdir.h"

static char err[CKPT_ERRLEN];

static void setup(void)
{
    tmp_test_setup();
    err[0] = '\0';
}

/* ---- a small checkpoint whose values tell positions apart, with awkward floats ---- */

enum { NP = 18 + 2 + 6, NS = 4, NO = NP };
typedef struct {
    param_view views[3], sviews[2];
    float params[NP], state[NS], opt[NO];
    ckpt_data d;
} fixture;

static param_view view(const char *name, size_t off, int ndim, const int *shape, int decay)
{
    param_view v = {.offset = off, .ndim = ndim, .decay = decay, .count = 1};
    snprintf(v.name, sizeof v.name, "%s", name);
    for (int k = 0; k < ndim; k++)
        v.count *= (size_t)(v.shape[k] = shape[k]);
    return v;
}

static void make_fixture(fixture *f, int depth, int width, int epoch)
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
    /* bit patterns a lossy path would change: -0, a denormal, NaN with a payload, inf */
    uint32_t nan = 0x7fc01234u;
    f->params[3] = -0.0f;
    f->params[4] = 1e-40f;
    memcpy(&f->params[5], &nan, 4);
    f->opt[6] = INFINITY;
    f->d = (ckpt_data){.cfg = {depth, width, 0.01f}, .epoch = epoch, .opt_kind = OPT_SGD,
                       .iterations = 1234567890123L, .last_lr = 0.0125f, .views = f->views,
                       .nviews = 3, .params = f->params, .n_params = NP, .state_views = f->sviews,
                       .n_state_views = 2, .state = f->state, .n_state = NS,
                       .opt_state = f->opt, .n_opt_state = NO};
}

static ckpt_expect expect_of(const fixture *f)
{
    return (ckpt_expect){.cfg = f->d.cfg, .opt_kind = f->d.opt_kind, .check_counts = 1,
                         .n_params = NP, .n_state = NS, .n_opt_state = NO, .views = f->views,
                         .nviews = 3, .state_views = f->sviews, .n_state_views = 2};
}

#define FILE_BYTES (128 + 104 * 5 + 4 * (NP + NS + NO) + 4)
#define DATA_AT (128 + 104 * 5)

static void save(const char *dir, const fixture *f)
{
    ck_assert_msg(ckpt_save(dir, &f->d, err, sizeof err) == 0, "%s", err);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 1);
    ck_assert_uint_eq(fread(b, 1, *len, fp), *len);
    fclose(fp);
    return b;
}

static void spit(const char *path, const void *b, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(b, 1, len, fp), len);
    fclose(fp);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static void set_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}
/* Re-seals a hand-edited file: header CRC and trailer CRC recomputed. */
static void reseal(uint8_t *b, size_t len)
{
    set_le32(b + 124, (uint32_t)crc32(0, b, 124));
    set_le32(b + len - 4, (uint32_t)crc32(0, b, (uInt)(len - 4)));
}

/* stderr into a file for the duration of a call. */
static int saved_fd = -1;
static void capture_begin(void)
{
    fflush(stderr);
    saved_fd = dup(2);
    int fd = open(tmp_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    close(fd);
}
static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    size_t n;
    char *s = (char *)slurp(tmp_path("stderr.txt"), &n);
    s[n] = '\0';
    return s;
}

/* ---- tests ---- */

START_TEST(roundtrip_bit_exact_and_layout)
{
    fixture f;
    make_fixture(&f, 16, 4, 3);
    char dir[512]; /* tmp_path reuses its buffers */
    snprintf(dir, sizeof dir, "%s", tmp_path("logs"));
    save(dir, &f);
    /* the bytes at the offsets ckpt.h documents, checked without the reader */
    size_t len;
    uint8_t *b = slurp(tmp_path("logs/checkpoint-3.ckpt"), &len);
    ck_assert_uint_eq(len, FILE_BYTES);
    ck_assert_int_eq(memcmp(b, "HVDLCKPT", 8), 0);
    ck_assert_uint_eq(le32(b + 8), 1);
    ck_assert_uint_eq(le32(b + 12), 128);
    ck_assert_uint_eq(le32(b + 16), FILE_BYTES);
    ck_assert_uint_eq(le32(b + 24), 16);
    ck_assert_uint_eq(le32(b + 28), 4);
    ck_assert_str_eq((char *)b + 36, "wrn-16-4");
    ck_assert_uint_eq(le32(b + 68), 3);
    ck_assert_uint_eq(le32(b + 72), OPT_SGD);
    ck_assert_uint_eq(le32(b + 80) | (uint64_t)le32(b + 84) << 32, 1234567890123ull);
    ck_assert_uint_eq(le32(b + 88), NP);
    ck_assert_uint_eq(le32(b + 112), 3);
    ck_assert_uint_eq(le32(b + 116), 2);
    ck_assert_uint_eq(le32(b + 124), (uint32_t)crc32(0, b, 124));
    ck_assert_str_eq((char *)b + 128 + 104 * 2, "fc.w");
    ck_assert_uint_eq(le32(b + 128 + 104 * 2 + 64), 20);           /* offset */
    ck_assert_uint_eq(le32(b + 128 + 104 * 2 + 84), 3);            /* shape[0] */
    ck_assert_str_eq((char *)b + 128 + 104 * 4, "stem.bn.var");
    ck_assert_int_eq(memcmp(b + DATA_AT, f.params, sizeof f.params), 0);
    ck_assert_int_eq(memcmp(b + DATA_AT + 4 * NP, f.state, sizeof f.state), 0);
    ck_assert_int_eq(memcmp(b + DATA_AT + 4 * (NP + NS), f.opt, sizeof f.opt), 0);
    ck_assert_uint_eq(le32(b + len - 4), (uint32_t)crc32(0, b, (uInt)(len - 4)));
    free(b);
    /* the reader gives back every bit */
    ckpt_file r;
    ckpt_expect want = expect_of(&f);
    ck_assert_msg(ckpt_load(dir, 3, &want, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(r.name, "wrn-16-4");
    ck_assert_uint_eq(r.version, 1);
    ck_assert_int_eq(r.d.cfg.depth, 16);
    ck_assert_int_eq(r.d.cfg.width, 4);
    ck_assert(r.d.cfg.dropout == 0.01f);
    ck_assert_int_eq(r.d.epoch, 3);
    ck_assert_int_eq(r.d.opt_kind, OPT_SGD);
    ck_assert_int_eq(r.d.iterations, 1234567890123L);
    ck_assert(r.d.last_lr == 0.0125f);
    ck_assert_int_eq(memcmp(r.d.params, f.params, sizeof f.params), 0);
    ck_assert_int_eq(memcmp(r.d.state, f.state, sizeof f.state), 0);
    ck_assert_int_eq(memcmp(r.d.opt_state, f.opt, sizeof f.opt), 0);
    ck_assert_int_eq(memcmp(r.d.views, f.views, sizeof f.views), 0);
    ck_assert_int_eq(memcmp(r.d.state_views, f.sviews, sizeof f.sviews), 0);
    ckpt_file_free(&r);
    /* no temp file left behind; saving the same epoch again replaces the file */
    f.params[0] = 42.0f;
    save(dir, &f);
    DIR *dp = opendir(dir);
    int entries = 0;
    for (struct dirent *de; (de = readdir(dp));)
        entries += de->d_name[0] != '.' || de->d_name[1] == 'c';
    closedir(dp);
    ck_assert_int_eq(entries, 1);
    ck_assert_msg(ckpt_read_file(tmp_path("logs/checkpoint-3.ckpt"), &r, err, sizeof err) == 0,
                  "%s", err);
    ck_assert(r.d.params[0] == 42.0f);
    ckpt_file_free(&r);
}
END_TEST

/* Each byte of the file flipped in turn: always rejected, with the message of its region. */
START_TEST(every_single_byte_corruption_detected)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    save(tmp_dir, &f);
    size_t len;
    uint8_t *b = slurp(tmp_path("checkpoint-1.ckpt"), &len);
    char p[512]; /* tmp_path reuses its buffers */
    snprintf(p, sizeof p, "%s", tmp_path("bad.ckpt"));
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 7) { /* lowest and highest bit of the byte */
            b[i] ^= (uint8_t)(1u << bit);
            spit(p, b, len);
            b[i] ^= (uint8_t)(1u << bit);
            ckpt_file r;
            ck_assert_msg(ckpt_read_file(p, &r, err, sizeof err) == -1, "byte %zu bit %d accepted",
                          i, bit);
            const char *want = i < 8     ? "not an hvdlab checkpoint (bad magic)"
                               : i < 12  ? "checkpoint format version "
                               : i < 128 ? "corrupt checkpoint header (header CRC mismatch)"
                                         : "corrupt checkpoint: CRC32 ";
            ck_assert_msg(strstr(err, want) && !strncmp(err, p, strlen(p)), "byte %zu: %s", i, err);
        }
    }
    free(b);
}
END_TEST

START_TEST(truncated_at_every_length_and_trailing_bytes)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    save(tmp_dir, &f);
    size_t len;
    uint8_t *b = slurp(tmp_path("checkpoint-1.ckpt"), &len);
    char p[512]; /* tmp_path reuses its buffers */
    snprintf(p, sizeof p, "%s", tmp_path("cut.ckpt"));
    char want[600];
    for (size_t n = 0; n < len; n++) {
        spit(p, b, n);
        ckpt_file r;
        ck_assert_int_eq(ckpt_read_file(p, &r, err, sizeof err), -1);
        if (n < 128)
            snprintf(want, sizeof want, "%s: truncated checkpoint: %zu bytes, shorter than the "
                     "128-byte header", p, n);
        else
            snprintf(want, sizeof want, "%s: truncated checkpoint: %zu bytes, its header says %d",
                     p, n, FILE_BYTES);
        ck_assert_str_eq(err, want);
    }
    b = realloc(b, len + 1);
    b[len] = 0;
    spit(p, b, len + 1);
    ckpt_file r;
    ck_assert_int_eq(ckpt_read_file(p, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: corrupt checkpoint: %d bytes, its header says %d (trailing "
             "bytes)", p, FILE_BYTES + 1, FILE_BYTES);
    ck_assert_str_eq(err, want);
    free(b);
}
END_TEST

/* Damage that keeps the CRCs valid (a buggy writer, another version) and unreadable files. */
START_TEST(version_inconsistency_and_open_errors)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    save(tmp_dir, &f);
    size_t len;
    uint8_t *b = slurp(tmp_path("checkpoint-1.ckpt"), &len);
    char p[512]; /* tmp_path reuses its buffers */
    snprintf(p, sizeof p, "%s", tmp_path("x.ckpt"));
    char want[600];
    ckpt_file r;
    struct { size_t at; uint32_t val; const char *msg; } cases[] = {
        {8, 2, "checkpoint format version 2, this hvdlab reads version 1"},
        {112, 4, "inconsistent checkpoint: counts (6 views, 56 floats) do not add up to its 876 "
                 "bytes"},
        {128 + 64, 20, "inconsistent checkpoint: view stem.conv.w (offset 20, count 18) outside "
                       "its buffer of 26 or not its shape's size"},
        {128 + 84, 3, "inconsistent checkpoint: view stem.conv.w (offset 0, count 18) outside "
                      "its buffer of 26 or not its shape's size"},
        {128 + 80, 5, "inconsistent checkpoint: view stem.conv.w has 5 dims"},
    };
    ck_assert_int_eq(FILE_BYTES, 876);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint32_t old = le32(b + cases[c].at);
        set_le32(b + cases[c].at, cases[c].val);
        reseal(b, len);
        spit(p, b, len);
        set_le32(b + cases[c].at, old);
        ck_assert_int_eq(ckpt_read_file(p, &r, err, sizeof err), -1);
        snprintf(want, sizeof want, "%s: %s", p, cases[c].msg);
        ck_assert_str_eq(err, want);
    }
    spit(p, "\x89HDF\r\n\x1a\n", 8); /* the original lab's .h5 checkpoints */
    ck_assert_int_eq(ckpt_read_file(p, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: not an hvdlab checkpoint (bad magic)", p);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ckpt_read_file(tmp_path("none.ckpt"), &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot open checkpoint: No such file or directory",
             tmp_path("none.ckpt"));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ckpt_read_file(tmp_dir, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: not a regular file", tmp_dir);
    ck_assert_str_eq(err, want);
    free(b);
}
END_TEST

START_TEST(config_optimizer_and_view_mismatch)
{
    fixture f;
    make_fixture(&f, 16, 4, 2);
    save(tmp_dir, &f);
    char p[512]; /* tmp_path reuses its buffers */
    snprintf(p, sizeof p, "%s", tmp_path("checkpoint-2.ckpt"));
    char want[800];
    ckpt_file r;
    ckpt_expect w = expect_of(&f);
    w.cfg = (wrn_config){16, 1, 0.01f};
    ck_assert_int_eq(ckpt_load(tmp_dir, 2, &w, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint of model wrn-16-4 (depth 16, width 4), but this "
             "run builds wrn-16-1 (depth 16, width 1)", p);
    ck_assert_str_eq(err, want);
    w = expect_of(&f);
    w.cfg.dropout = 0.3f; /* same layout: loads */
    ck_assert_msg(ckpt_load(tmp_dir, 2, &w, &r, err, sizeof err) == 0, "%s", err);
    ckpt_file_free(&r);
    w.opt_kind = OPT_NOVOGRAD;
    ck_assert_int_eq(ckpt_load(tmp_dir, 2, &w, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint holds sgd optimizer state, but this run uses "
             "novograd", p);
    ck_assert_str_eq(err, want);
    w = expect_of(&f);
    w.n_opt_state = NO + 3;
    ck_assert_int_eq(ckpt_load(tmp_dir, 2, &w, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint has 26 parameters, 4 state and 26 optimizer "
             "values; this wrn-16-4 run has 26, 4 and 29", p);
    ck_assert_str_eq(err, want);
    w = expect_of(&f);
    param_view other[3];
    memcpy(other, f.views, sizeof other);
    other[2] = view("fc.w", 20, 2, (int[]){2, 3}, 1); /* transposed */
    w.views = other;
    ck_assert_int_eq(ckpt_load(tmp_dir, 2, &w, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: parameter view 2 is fc.w (3, 2) at 20 in the checkpoint, "
             "fc.w (2, 3) at 20 in the model", p);
    ck_assert_str_eq(err, want);
    w = expect_of(&f);
    w.n_state_views = 1;
    ck_assert_int_eq(ckpt_load(tmp_dir, 2, &w, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint has 2 state views, the model has 1", p);
    ck_assert_str_eq(err, want);
    /* a file renamed to another epoch */
    rename(p, tmp_path("checkpoint-5.ckpt"));
    ck_assert_int_eq(ckpt_load(tmp_dir, 5, NULL, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint holds epoch 2, its name says 5",
             tmp_path("checkpoint-5.ckpt"));
    ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(latest_skips_bad_files_with_one_warning_each)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("run"));
    ckpt_expect w;
    fixture f;
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 0); /* no dir yet */
    for (int e = 1; e <= 4; e++) {
        make_fixture(&f, e == 4 ? 22 : 10, 2, e); /* epoch 4 is another model */
        save(dir, &f);
    }
    make_fixture(&f, 10, 2, 1);
    w = expect_of(&f);
    /* noise the scan must ignore: a leftover temp file, other names, a newer file of another run */
    spit(tmp_path("run/.checkpoint-9.ckpt.tmp-abcdef"), "HVDLCKPT", 8);
    spit(tmp_path("run/checkpoint-07.ckpt"), "x", 1);
    spit(tmp_path("run/checkpoint-8.ckpt.bak"), "x", 1);
    spit(tmp_path("run/checkpoint-8.h5"), "x", 1);
    /* corrupt epoch 3 (one data byte) and truncate epoch 2 */
    size_t len;
    uint8_t *b = slurp(tmp_path("run/checkpoint-3.ckpt"), &len);
    b[DATA_AT + 5] ^= 0x10;
    spit(tmp_path("run/checkpoint-3.ckpt"), b, len);
    spit(tmp_path("run/checkpoint-2.ckpt"), b, len - 100);
    free(b);
    capture_begin();
    int e = ckpt_latest_epoch(dir, &w, 10, err, sizeof err);
    char *out = capture_end();
    ck_assert_msg(e == 1, "latest %d: %s / %s", e, err, out);
    char want[2048], crcs[64];
    const char *c = strstr(out, "CRC32 ");
    ck_assert_ptr_nonnull(c);
    snprintf(crcs, sizeof crcs, "%.31s", c); /* "CRC32 xxxxxxxx stored, yyyyyyyy computed" */
    snprintf(want, sizeof want,
             "hvdlab: warning: %s/checkpoint-4.ckpt: checkpoint of model wrn-22-2 (depth 22, "
             "width 2), but this run builds wrn-10-2 (depth 10, width 2); skipped\n"
             "hvdlab: warning: %s/checkpoint-3.ckpt: corrupt checkpoint: %s computed; skipped\n"
             "hvdlab: warning: %s/checkpoint-2.ckpt: truncated checkpoint: %d bytes, its header "
             "says %d; skipped\n",
             dir, dir, crcs, dir, FILE_BYTES - 100, FILE_BYTES);
    ck_assert_str_eq(out, want);
    free(out);
    /* max_epoch bounds the scan (the lab scans from --epochs down); files above it are not read */
    capture_begin();
    e = ckpt_latest_epoch(dir, &w, 1, err, sizeof err);
    out = capture_end();
    ck_assert_int_eq(e, 1);
    ck_assert_str_eq(out, "");
    free(out);
    /* without requirements the other model's epoch 4 is the newest valid file */
    capture_begin();
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 4);
    free(capture_end());
    /* nothing valid at all -> 0 */
    unlink(tmp_path("run/checkpoint-1.ckpt"));
    capture_begin();
    ck_assert_int_eq(ckpt_latest_epoch(dir, &w, 0, err, sizeof err), 0);
    free(capture_end());
    /* a path that is not a directory is an error, not "no checkpoint" */
    ck_assert_int_eq(ckpt_latest_epoch(tmp_path("run/checkpoint-8.h5"), &w, 0, err, sizeof err),
                     -1);
    snprintf(want, sizeof want, "%s: cannot list checkpoint directory: Not a directory",
             tmp_path("run/checkpoint-8.h5"));
    ck_assert_str_eq(err, want);
}
END_TEST

static int count_temp_files(const char *dir)
{
    DIR *dp = opendir(dir);
    int n = 0;
    for (struct dirent *de; dp && (de = readdir(dp));)
        n += strncmp(de->d_name, ".checkpoint-", 12) == 0;
    if (dp)
        closedir(dp);
    return n;
}

/* A writer stopped between write and rename (the split API, and a process killed there) leaves
 * the previous checkpoint as the latest; so does a writer killed at any moment. */
START_TEST(killed_writer_leaves_previous_checkpoint)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("k"));
    save(dir, &f);
    make_fixture(&f, 10, 1, 2);
    char tmp[4096];
    ck_assert_msg(ckpt_write_temp(dir, &f.d, tmp, sizeof tmp, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 1);
    pid_t pid = fork();
    if (pid == 0) {
        char t2[4096];
        if (ckpt_write_temp(dir, &f.d, t2, sizeof t2, err, sizeof err) == 0)
            raise(SIGKILL); /* dies where a crash before the rename would */
        _exit(3);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    ck_assert_int_eq(count_temp_files(dir), 2);
    capture_begin();
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 1);
    char *out = capture_end();
    ck_assert_str_eq(out, ""); /* temp files are not even looked at */
    free(out);
    ck_assert_msg(ckpt_commit(dir, tmp, 2, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 2);

    /* SIGKILL at growing delays into the save of a 8 MiB checkpoint */
    size_t big = 1u << 20;
    float *pbig = malloc(big * 4), *obig = malloc(big * 4);
    for (size_t i = 0; i < big; i++)
        pbig[i] = obig[i] = (float)i;
    param_view bv = view("w", 0, 1, (int[]){(int)big}, 1);
    ckpt_data d = {.cfg = {10, 1, 0}, .epoch = 2, .views = &bv, .nviews = 1, .params = pbig,
                   .n_params = big, .opt_state = obig, .n_opt_state = big};
    int delays_us[] = {0, 100, 300, 1000, 2000, 4000, 8000, 16000, 50000, 200000};
    int torn = 0, done = 0;
    for (int k = 0; k < (int)(sizeof delays_us / sizeof delays_us[0]); k++) {
        char sub[32];
        snprintf(sub, sizeof sub, "kill%d", k);
        char kd[512];
        snprintf(kd, sizeof kd, "%s", tmp_path(sub));
        d.epoch = 1;
        ck_assert_msg(ckpt_save(kd, &d, err, sizeof err) == 0, "%s", err);
        d.epoch = 2;
        pid = fork();
        if (pid == 0)
            _exit(ckpt_save(kd, &d, err, sizeof err) == 0 ? 0 : 3);
        usleep((useconds_t)delays_us[k]);
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFSIGNALED(st) || WEXITSTATUS(st) == 0);
        capture_begin();
        int e = ckpt_latest_epoch(kd, NULL, 0, err, sizeof err);
        out = capture_end();
        ck_assert_msg(e == 1 || e == 2, "delay %d us: latest %d", delays_us[k], e);
        ck_assert_msg(out[0] == '\0', "delay %d us: %s", delays_us[k], out);
        free(out);
        torn += e == 1;
        done += e == 2;
    }
    fprintf(stderr, "killed_writer: %d saves killed before the rename, %d completed\n", torn, done);
    free(pbig);
    free(obig);
}
END_TEST

START_TEST(creates_log_dir_or_names_it)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    save(tmp_path("a/b/c/"), &f);
    ck_assert_int_eq(access(tmp_path("a/b/c/checkpoint-1.ckpt"), R_OK), 0);
    spit(tmp_path("plain"), "x", 1);
    char want[600];
    ck_assert_int_eq(ckpt_save(tmp_path("plain/sub"), &f.d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot create checkpoint directory: %s is not a directory",
             tmp_path("plain/sub"), tmp_path("plain"));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ckpt_save(tmp_path("plain"), &f.d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot create checkpoint directory: %s is not a directory",
             tmp_path("plain"), tmp_path("plain"));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ckpt_save("", &f.d, err, sizeof err), -1);
    ck_assert_str_eq(err, "(ckpt): no checkpoint directory given");
}
END_TEST

/* The param_set layer: restore into a fresh model and optimizer; trace lines; a failed load
 * changes nothing. */
START_TEST(param_set_layer_and_trace)
{
    fixture f;
    make_fixture(&f, 16, 2, 4);
    setenv("HVDLAB_TRACE", tmp_path("trace"), 1);
    float grads[NP] = {0};
    param_set ps = {.params = f.params, .grads = grads, .n = NP, .views = f.views, .nviews = 3,
                    .state = f.state, .n_state = NS, .state_views = f.sviews, .n_state_views = 2};
    optimizer opt = {.kind = OPT_SGD, .state = f.opt, .n_state = NO, .iterations = 77,
                     .last_lr = 0.5f};
    wrn_config cfg = {16, 2, 0.01f};
    ck_assert_msg(ckpt_save_params(tmp_path("log"), 4, &cfg, &ps, &opt, err, sizeof err) == 0,
                  "%s", err);
    float p2[NP] = {0}, s2[NS] = {0}, o2[NO] = {0};
    param_set ps2 = ps;
    ps2.params = p2;
    ps2.state = s2;
    optimizer opt2 = {.kind = OPT_NOVOGRAD, .state = o2, .n_state = NO};
    char want[800];
    ck_assert_int_eq(ckpt_load_params(tmp_path("log"), 4, &cfg, &ps2, &opt2, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint holds sgd optimizer state, but this run uses "
             "novograd", tmp_path("log/checkpoint-4.ckpt"));
    ck_assert_str_eq(err, want);
    float zeros[NP] = {0};
    ck_assert_int_eq(memcmp(p2, zeros, sizeof p2), 0); /* untouched */
    opt2.kind = OPT_SGD;
    param_view tv[3]; /* same counts, another layout: refused */
    memcpy(tv, f.views, sizeof tv);
    tv[2] = view("fc.w", 20, 2, (int[]){2, 3}, 1);
    ps2.views = tv;
    ck_assert_int_eq(ckpt_load_params(tmp_path("log"), 4, &cfg, &ps2, &opt2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "parameter view 2 is fc.w (3, 2) at 20 in the checkpoint, fc.w "
                              "(2, 3) at 20 in the model"), "%s", err);
    ps2.views = f.views;
    ck_assert_msg(ckpt_load_params(tmp_path("log"), 4, &cfg, &ps2, &opt2, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(memcmp(p2, f.params, sizeof p2), 0);
    ck_assert_int_eq(memcmp(s2, f.state, sizeof s2), 0);
    ck_assert_int_eq(memcmp(o2, f.opt, sizeof o2), 0);
    ck_assert_int_eq(opt2.iterations, 77);
    ck_assert(opt2.last_lr == 0.5f);
    /* no optimizer: saved as kind -1, refused by a run that has one */
    ck_assert_msg(ckpt_save_params(tmp_path("log"), 5, &cfg, &ps, NULL, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(ckpt_load_params(tmp_path("log"), 5, &cfg, &ps2, &opt2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "checkpoint holds no optimizer state, but this run uses sgd"), "%s",
                  err);
    ck_assert_msg(ckpt_load_params(tmp_path("log"), 5, &cfg, &ps2, NULL, err, sizeof err) == 0,
                  "%s", err);
    /* trace: save, restore, params for epoch 4 then for epoch 5; the failed loads left no line */
    char tp[600];
    snprintf(tp, sizeof tp, "trace/pid-%ld.log", (long)getpid());
    size_t n;
    char *log = (char *)slurp(tmp_path(tp), &n);
    log[n] = '\0';
    unsigned long long sum = (unsigned long long)params_checksum(f.params, NP),
                       ssum = (unsigned long long)params_checksum(f.state, NS);
    const char *expect[] = {"ckpt_save", "ckpt_restore", "params", "ckpt_save", "ckpt_restore",
                            "params"};
    const char *line = log;
    for (int i = 0; i < 6; i++, line = strchr(line, '\n') + 1) {
        char ev[64];
        snprintf(ev, sizeof ev, "event=%s ", expect[i]);
        ck_assert_msg(!strncmp(line, ev, strlen(ev)), "line %d: %s", i, line);
        int epoch = i < 3 ? 4 : 5;
        if (expect[i][0] == 'c')
            snprintf(want, sizeof want, " path=%s/checkpoint-%d.ckpt epoch=%d\n",
                     tmp_path("log"), epoch, epoch);
        else
            snprintf(want, sizeof want, " when=restore epoch=%d sum=%016llx state_sum=%016llx\n",
                     epoch, sum, ssum);
        const char *nl = strchr(line, '\n');
        ck_assert_msg(nl && (size_t)(nl + 1 - line) > strlen(want) &&
                          !strncmp(nl + 1 - strlen(want), want, strlen(want)),
                      "line %d: %.*s, want ...%s", i, (int)(nl - line), line, want);
    }
    ck_assert_str_eq(line, "");
    free(log);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("ckpt");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, setup, tmp_test_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, roundtrip_bit_exact_and_layout);
    tcase_add_test(tc, every_single_byte_corruption_detected);
    tcase_add_test(tc, truncated_at_every_length_and_trailing_bytes);
    tcase_add_test(tc, version_inconsistency_and_open_errors);
    tcase_add_test(tc, config_optimizer_and_view_mismatch);
    tcase_add_test(tc, latest_skips_bad_files_with_one_warning_each);
    tcase_add_test(tc, killed_writer_leaves_previous_checkpoint);
    tcase_add_test(tc, creates_log_dir_or_names_it);
    tcase_add_test(tc, param_set_layer_and_trace);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
