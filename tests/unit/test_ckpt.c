/* test_ckpt.c — the checkpoint format: bit-exact round trip and the documented byte layout,
 * every single-byte corruption and every truncation detected with its own message, CRC-valid
 * inconsistencies, config/optimizer/view mismatches. Serial (forked Check). Files, the newest
 * epoch, killed writers and the param_set layer: test_ckpt_files.c. */
#include <dirent.h>

#include "lib/ck_mpi.h"
#include "lib/ckpt_fixture.h"

char err[ERRMSG_LEN];

static void setup(void)
{
    tmp_test_setup();
    err[0] = '\0';
}

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
    ck_assert_uint_eq(le32(b + 8), 2);
    ck_assert_uint_eq(le32(b + 12), 128);
    ck_assert_uint_eq(le32(b + 120), 32);
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
    ck_assert_uint_eq(le32(b + RESUME_AT) | (uint64_t)le32(b + RESUME_AT + 4) << 32, 9876543210ull);
    ck_assert_uint_eq(le32(b + RESUME_AT + 8), 0); /* batch: written at the epoch's end */
    ck_assert_uint_eq(le32(b + RESUME_AT + 12), 3); /* world_size: the ranks that wrote it */
    ck_assert_uint_eq(le32(b + RESUME_AT + 16), 0);  /* early_stop_count */
    ck_assert_uint_eq(le32(b + RESUME_AT + 20), 32); /* batch_size: images a batch and rank */
    for (int k = 24; k < 32; k += 4)
        ck_assert_uint_eq(le32(b + RESUME_AT + k), 0); /* reserved */
    ck_assert_uint_eq(le32(b + len - 4), (uint32_t)crc32(0, b, (uInt)(len - 4)));
    free(b);
    /* the reader gives back every bit */
    ckpt_file r;
    ckpt_expect want = expect_of(&f);
    ck_assert_msg(ckpt_load(dir, 3, &want, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(r.name, "wrn-16-4");
    ck_assert_uint_eq(r.version, 2);
    ck_assert_int_eq(memcmp(&r.d.resume, &f.d.resume, sizeof f.d.resume), 0);
    ck_assert_int_eq(r.d.cfg.depth, 16);
    ck_assert_int_eq(r.d.cfg.width, 4);
    ck_assert_float_eq(r.d.cfg.dropout, 0.01f);
    ck_assert_int_eq(r.d.epoch, 3);
    ck_assert_int_eq(r.d.opt_kind, OPT_SGD);
    ck_assert_int_eq(r.d.iterations, 1234567890123L);
    ck_assert_float_eq(r.d.last_lr, 0.0125f);
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
    ck_assert_float_eq(r.d.params[0], 42.0f);
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
        {8, 3, "checkpoint format version 3, this hvdlab reads versions 1 and 2"},
        {112, 4, "inconsistent checkpoint: counts (6 views, 56 floats) do not add up to its 908 "
                 "bytes"},
        {120, 0, "inconsistent checkpoint: counts (5 views, 56 floats) do not add up to its 908 "
                 "bytes"},
        {128 + 64, 20, "inconsistent checkpoint: view stem.conv.w (offset 20, count 18) outside "
                       "its buffer of 26 or not its shape's size"},
        {128 + 84, 3, "inconsistent checkpoint: view stem.conv.w (offset 0, count 18) outside "
                      "its buffer of 26 or not its shape's size"},
        {128 + 80, 5, "inconsistent checkpoint: view stem.conv.w has 5 dims"},
    };
    ck_assert_int_eq(FILE_BYTES, 908);
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
    w.cfg = (ckpt_config){16, 1, 0.01f};
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

/* A version-1 file (no resume block) still loads, its resume fields 0; a version-2 header that
 * claims no block does not. */
START_TEST(version_1_still_loads)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    save(tmp_dir, &f);
    size_t len;
    uint8_t *b = slurp(tmp_path("checkpoint-1.ckpt"), &len);
    size_t v1 = len - 32;
    memmove(b + RESUME_AT, b + RESUME_AT + 32, 4);
    set_le32(b + 8, 1);
    set_le32(b + 16, (uint32_t)v1);
    set_le32(b + 120, 0);
    reseal(b, v1);
    spit(tmp_path("checkpoint-1.ckpt"), b, v1);
    ckpt_file r;
    ckpt_expect want = expect_of(&f);
    ck_assert_msg(ckpt_load(tmp_dir, 1, &want, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(r.version, 1);
    ck_assert_uint_eq(r.resume_bytes, 0);
    ck_assert_uint_eq(r.d.resume.model_steps, 0);
    ck_assert_int_eq(memcmp(r.d.opt_state, f.opt, sizeof f.opt), 0);
    ckpt_file_free(&r);
    free(b);
}
END_TEST

/* No NaN or infinity is saved; a file holding one (written under the format layer) is refused
 * by its name, and the scan skips it. */
START_TEST(nonfinite_never_saved_nor_loaded)
{
    fixture f;
    make_fixture(&f, 10, 1, 2);
    f.params[9] = NAN;
    ck_assert_int_eq(ckpt_save(tmp_dir, &f.d, err, sizeof err), -1);
    char want[800];
    snprintf(want, sizeof want, "%s/checkpoint-2.ckpt: not saved: parameter 9 is nan (the "
             "training diverged; try a smaller --base-lr or more --warmup-epochs)", tmp_dir);
    ck_assert_str_eq(err, want);
    ck_assert_int_ne(access(tmp_path("checkpoint-2.ckpt"), F_OK), 0);
    f.params[9] = 1.0f;
    f.opt[3] = -INFINITY;
    ck_assert_int_eq(ckpt_save(tmp_dir, &f.d, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not saved: optimizer state 3 is -inf"));
    int fd = open(tmp_path("checkpoint-2.ckpt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_eq(ckpt_write_fd(fd, &f.d, "x", err, sizeof err), 0);
    close(fd);
    ckpt_file r;
    ck_assert_int_eq(ckpt_load(tmp_dir, 2, NULL, &r, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s/checkpoint-2.ckpt: checkpoint holds a non-finite value "
             "(optimizer state 3 is -inf), refused", tmp_dir);
    ck_assert_str_eq(err, want);
}
END_TEST

/* A scalar no run writes (CRCs fixed up after the edit) is refused, naming the file and the
 * field; the scan sets such a file aside as damaged; no such file is saved. */
START_TEST(implausible_scalars_refused_by_name)
{
    fixture f;
    make_fixture(&f, 10, 1, 2);
    save(tmp_dir, &f);
    size_t len;
    uint8_t *b = slurp(tmp_path("checkpoint-2.ckpt"), &len);
    char p[512], want[800];
    snprintf(p, sizeof p, "%s", tmp_path("checkpoint-2.ckpt"));
    const long neg_iter = (long)(int64_t)(0xffffffffull << 32 | (1234567890123ull & 0xffffffffu));
    char iter_msg[120];
    snprintf(iter_msg, sizeof iter_msg, "iterations %ld (optimizer steps, at least 0)", neg_iter);
    struct { size_t at; uint32_t val; const char *msg; } cases[] = {
        {24, 0, "depth 0, width 1 (both at least 1)"},
        {32, 0x3f800000, "dropout 1 (from 0 up to 1, not 1)"},
        {32, 0x7fc00000, "dropout nan (from 0 up to 1, not 1)"},
        {68, 0xffffffff, "epoch -1 (finished epochs, at least 0)"},
        {76, 0x7fc00000, "last_lr nan (a learning rate: finite, at least 0)"},
        {76, 0x7f800000, "last_lr inf (a learning rate: finite, at least 0)"},
        {76, 0xbf000000, "last_lr -0.5 (a learning rate: finite, at least 0)"},
        {84, 0xffffffff, iter_msg},
        {RESUME_AT + 4, 0x80000000, "model_steps 9223372038141384426 (training batches, below "
                                    "2^63)"},
        {RESUME_AT + 8, 0xffffffff, "batch -1 (batches of the epoch run, at least 0)"},
        {RESUME_AT + 12, 0xfffffffe, "world_size -2 (ranks, at least 0: 0 is not recorded)"},
        {RESUME_AT + 16, 3, "early_stop_count 3 (epochs in a row above the target, 0 to the "
                            "file's epoch 2)"},
        {RESUME_AT + 20, 0x7fffffff, "batch_size 2147483647 (images a batch, 0 (not recorded) "
                                     "to 1048576)"},
    };
    ckpt_file r;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint32_t old = le32(b + cases[c].at);
        set_le32(b + cases[c].at, cases[c].val);
        reseal(b, len);
        spit(p, b, len);
        set_le32(b + cases[c].at, old);
        ck_assert_int_eq(ckpt_load(tmp_dir, 2, NULL, &r, err, sizeof err), -1);
        snprintf(want, sizeof want, "%s: implausible checkpoint: %s, refused", p, cases[c].msg);
        ck_assert_str_eq(err, want);
    }
    /* the scan: the last case's file is set aside, the search goes on (none left: 0) */
    int saved = capture_begin();
    int e = ckpt_latest_epoch(tmp_dir, NULL, 0, err, sizeof err);
    char *said = capture_end(saved);
    ck_assert_int_eq(e, -1); /* every checkpoint damaged */
    ck_assert_msg(strstr(said, "implausible checkpoint: batch_size 2147483647") &&
                  strstr(said, "checkpoint-2.ckpt.damaged"), "%s", said);
    free(said);
    ck_assert_int_eq(access(tmp_path("checkpoint-2.ckpt.damaged"), F_OK), 0);
    /* the writer refuses one too */
    f.d.last_lr = NAN;
    ck_assert_int_eq(ckpt_save(tmp_dir, &f.d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: not saved: implausible last_lr nan (a learning rate: "
             "finite, at least 0)", p);
    ck_assert_str_eq(err, want);
    free(b);
}
END_TEST

/* A mid-epoch place past the data: batches x images x ranks above the training images. */
START_TEST(implausible_place_past_the_data)
{
    char what[256];
    ckpt_resume r = {.batch = 5, .world_size = 2, .batch_size = 32};
    ck_assert_int_eq(ckpt_implausible_place(&r, 320, what, sizeof what), 0);
    ck_assert_int_eq(ckpt_implausible_place(&r, 319, what, sizeof what), 1);
    r.world_size = 1000;
    ck_assert_int_eq(ckpt_implausible_place(&r, 60000, what, sizeof what), 1);
    ck_assert_str_eq(what, "batch 5, world_size 1000, batch_size 32 (5 batches of 32 images on "
                     "each of 1000 ranks are more than the 60000 training images of an epoch)");
    r = (ckpt_resume){.batch = 0x7fffffff, .world_size = 0x7fffffff, .batch_size = 0x7fffffff};
    ck_assert_int_eq(ckpt_implausible_place(&r, 60000, what, sizeof what), 1); /* past 64 bits */
    r = (ckpt_resume){.batch = 0, .world_size = 1000, .batch_size = 32}; /* an epoch's end */
    ck_assert_int_eq(ckpt_implausible_place(&r, 60000, what, sizeof what), 0);
    r = (ckpt_resume){.batch = 7}; /* nothing recorded: one image a batch on one rank */
    ck_assert_int_eq(ckpt_implausible_place(&r, 7, what, sizeof what), 0);
    ck_assert_int_eq(ckpt_implausible_place(&r, 6, what, sizeof what), 1);
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
    tcase_add_test(tc, version_1_still_loads);
    tcase_add_test(tc, nonfinite_never_saved_nor_loaded);
    tcase_add_test(tc, implausible_scalars_refused_by_name);
    tcase_add_test(tc, implausible_place_past_the_data);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
