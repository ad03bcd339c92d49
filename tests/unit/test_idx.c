/* test_idx.c — IDX reader: round trips (plain, gzip, memory), every failure with its message,
 * headers truncated at every byte offset, damaged gzip streams. Serial (forked Check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/idx.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/tmpdir.h"

static char err[ERRMSG_LEN];

static void setup(void)
{
    tmp_test_setup();
    err[0] = '\0';
}

static void write_raw(const char *path, const void *buf, size_t len, int gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb9");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(gzwrite(f, buf, (unsigned)len), (int)len);
        ck_assert_int_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
        fclose(f);
    }
}

/* A 5 x 3 x 4 image file whose bytes tell positions apart, serialised by hand (not by the
 * writer under test): magic, dims, payload 0, 7, 14, ... mod 251. */
enum { NI = 5, NR = 3, NC = 4, PAY = NI * NR * NC, HL = 16 };
static size_t image_bytes(uint8_t *b /* (HL + PAY) */)
{
    const uint8_t hdr[HL] = {0, 0, 8, 3, 0, 0, 0, NI, 0, 0, 0, NR, 0, 0, 0, NC};
    memcpy(b, hdr, HL);
    for (int i = 0; i < PAY; i++)
        b[HL + i] = (uint8_t)((i * 7) % 251);
    return HL + PAY;
}

static void check_images(const idx_array *a)
{
    ck_assert_uint_eq(a->magic, IDX_MAGIC_IMAGES);
    ck_assert_int_eq(a->ndims, 3);
    ck_assert_uint_eq(a->dims[0], NI);
    ck_assert_uint_eq(a->dims[1], NR);
    ck_assert_uint_eq(a->dims[2], NC);
    ck_assert_uint_eq(a->count, NI);
    ck_assert_uint_eq(a->item_bytes, NR * NC);
    ck_assert_uint_eq(a->nbytes, PAY);
    for (int i = 0; i < PAY; i++)
        ck_assert_uint_eq(a->data[i], (uint8_t)((i * 7) % 251));
}

START_TEST(roundtrip_plain_gz_memory)
{
    uint8_t b[HL + PAY];
    size_t len = image_bytes(b);
    idx_array a;
    for (int gz = 0; gz < 2; gz++) {
        const char *p = tmp_path(gz ? "img.gz" : "img");
        write_raw(p, b, len, gz);
        ck_assert_msg(idx_read_file(p, &a, err, sizeof err) == 0, "%s", err);
        check_images(&a);
        idx_free(&a);
        ck_assert_ptr_null(a.data);
    }
    /* gzip content decides, whatever the name */
    write_raw(tmp_path("gz-without-suffix"), b, len, 1);
    ck_assert_msg(idx_read_file(tmp_path("gz-without-suffix"), &a, err, sizeof err) == 0, "%s", err);
    check_images(&a);
    idx_free(&a);
    ck_assert_msg(idx_parse_buffer(b, len, "mem", &a, err, sizeof err) == 0, "%s", err);
    check_images(&a);
    char d[64];
    idx_describe(&a, d, sizeof d);
    ck_assert_str_eq(d, "5 images of 3x4");
    idx_free(&a);
    idx_free(&a); /* twice is harmless */
}
END_TEST

START_TEST(roundtrip_writer_labels_and_images)
{
    uint8_t lab[300], img[7 * 28 * 28];
    for (int i = 0; i < 300; i++)
        lab[i] = (uint8_t)(i % 10);
    for (int i = 0; i < 7 * 28 * 28; i++)
        img[i] = (uint8_t)(i * 31 + 5);
    uint32_t ld[1] = {300}, id[3] = {7, 28, 28};
    for (int gz = 0; gz < 2; gz++) {
        idx_array a;
        const char *lp = tmp_path(gz ? "l.gz" : "l"), *ip = tmp_path(gz ? "i.gz" : "i");
        ck_assert_int_eq(idx_write_file(lp, IDX_MAGIC_LABELS, ld, lab, gz, err, sizeof err), 0);
        ck_assert_int_eq(idx_write_file(ip, IDX_MAGIC_IMAGES, id, img, gz, err, sizeof err), 0);
        ck_assert_msg(idx_read_file(lp, &a, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(a.magic, IDX_MAGIC_LABELS);
        ck_assert_int_eq(a.ndims, 1);
        ck_assert_uint_eq(a.count, 300);
        ck_assert_uint_eq(a.item_bytes, 1);
        ck_assert_int_eq(memcmp(a.data, lab, 300), 0);
        idx_free(&a);
        ck_assert_msg(idx_read_file(ip, &a, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(a.count, 7);
        ck_assert_uint_eq(a.item_bytes, 28 * 28);
        ck_assert_int_eq(memcmp(a.data, img, sizeof img), 0);
        idx_free(&a);
    }
    /* An empty set (0 items) is a valid IDX file. */
    uint32_t z[3] = {0, 28, 28};
    idx_array a;
    ck_assert_int_eq(idx_write_file(tmp_path("z"), IDX_MAGIC_IMAGES, z, NULL, 0, err, sizeof err), 0);
    ck_assert_msg(idx_read_file(tmp_path("z"), &a, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(a.count, 0);
    ck_assert_uint_eq(a.nbytes, 0);
    idx_free(&a);
}
END_TEST

/* Reads path and expects failure with exactly "path: tail". */
static void expect_fail(const char *path, const char *tail)
{
    idx_array a;
    char want[ERRMSG_LEN + 300];
    memset(&a, 0x5a, sizeof a);
    ck_assert_int_eq(idx_read_file(path, &a, err, sizeof err), -1);
    ck_assert_ptr_null(a.data);
    snprintf(want, sizeof want, "%s: %s", path, tail);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(missing_directory_empty)
{
    expect_fail(tmp_path("nope.gz"), "cannot open: No such file or directory");
    expect_fail(tmp_dir, "is a directory, expected an IDX file");
    write_raw(tmp_path("empty"), "", 0, 0);
    expect_fail(tmp_path("empty"), "empty file (expected an IDX header)");
    write_raw(tmp_path("empty.gz"), "", 0, 0);
    expect_fail(tmp_path("empty.gz"), "empty file (expected an IDX header)");
    write_raw(tmp_path("empty-gzip.gz"), "", 0, 1); /* valid gzip of nothing */
    expect_fail(tmp_path("empty-gzip.gz"), "empty file (expected an IDX header)");
}
END_TEST

START_TEST(not_gzip)
{
    uint8_t b[HL + PAY];
    size_t len = image_bytes(b);
    write_raw(tmp_path("plain.gz"), b, len, 0);
    expect_fail(tmp_path("plain.gz"),
                "not gzip: named .gz but starts with 0x00 0x00 instead of the gzip signature "
                "0x1f 0x8b");
    write_raw(tmp_path("one.gz"), "\x1f", 1, 0);
    expect_fail(tmp_path("one.gz"), "not gzip: named .gz but only 1 byte long");
    /* the same bytes without the suffix are a fine plain file */
    write_raw(tmp_path("plain"), b, len, 0);
    idx_array a;
    ck_assert_msg(idx_read_file(tmp_path("plain"), &a, err, sizeof err) == 0, "%s", err);
    idx_free(&a);
}
END_TEST

START_TEST(wrong_magic)
{
    uint8_t b[HL + PAY];
    size_t len = image_bytes(b);
    b[3] = 2;
    write_raw(tmp_path("m2"), b, len, 0);
    expect_fail(tmp_path("m2"),
                "wrong magic 0x00000802 (expected 0x00000801 for labels or 0x00000803 for images)");
    b[3] = 3;
    b[2] = 0x0d; /* float IDX */
    write_raw(tmp_path("mf.gz"), b, len, 1);
    expect_fail(tmp_path("mf.gz"),
                "wrong magic 0x00000d03 (expected 0x00000801 for labels or 0x00000803 for images)");
    b[2] = 8;
    b[0] = 1;
    idx_array a;
    ck_assert_int_eq(idx_parse_buffer(b, len, "buf", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "buf: wrong magic 0x01000803 (expected 0x00000801 for labels or "
                          "0x00000803 for images)");
    /* a gzip stream handed to the memory parser says so */
    uint8_t g[4] = {0x1f, 0x8b, 8, 0};
    ck_assert_int_eq(idx_parse_buffer(g, 4, "buf", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "buf: wrong magic 0x1f8b0800: the data is gzip-compressed (decompress "
                          "it first)");
}
END_TEST

static void header_msg(size_t k, int ndims, char *out, size_t len)
{
    if (k == 0)
        snprintf(out, len, "empty file (expected an IDX header)");
    else if (k < 4)
        snprintf(out, len, "truncated header: %zu byte(s), the IDX magic alone needs 4", k);
    else
        snprintf(out, len,
                 "truncated header: %zu byte(s), an IDX header with %d dimension(s) needs %d", k,
                 ndims, 4 + 4 * ndims);
}

START_TEST(header_truncated_at_every_offset)
{
    uint8_t b[HL + PAY];
    image_bytes(b);
    const uint8_t lab[12] = {0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 3, 4};
    char tail[ERRMSG_LEN], want[ERRMSG_LEN + 64];
    for (int which = 0; which < 2; which++) {
        const uint8_t *src = which ? lab : b;
        int ndims = which ? 1 : 3;
        size_t hl = 4 + 4 * (size_t)ndims;
        for (size_t k = 0; k < hl; k++) {
            header_msg(k, ndims, tail, sizeof tail);
            idx_array a;
            ck_assert_int_eq(idx_parse_buffer(src, k, "mem", &a, err, sizeof err), -1);
            snprintf(want, sizeof want, "mem: %s", tail);
            ck_assert_str_eq(err, want);
            for (int gz = 0; gz < 2; gz++) {
                const char *p = tmp_path(gz ? "h.gz" : "h");
                write_raw(p, src, k, gz);
                expect_fail(p, tail);
            }
        }
    }
}
END_TEST

START_TEST(payload_truncated_and_trailing)
{
    uint8_t b[HL + PAY + 3];
    size_t len = image_bytes(b);
    b[len] = b[len + 1] = b[len + 2] = 9;
    char tail[ERRMSG_LEN];
    for (int gz = 0; gz < 2; gz++) {
        const char *p = tmp_path(gz ? "t.gz" : "t");
        for (size_t got = 0; got < PAY; got += 13) {
            write_raw(p, b, HL + got, gz);
            snprintf(tail, sizeof tail,
                     "truncated: header says 5 images of 3x4 (60 payload bytes) but the file ends "
                     "after %zu bytes of payload",
                     got);
            expect_fail(p, tail);
            idx_array a;
            ck_assert_int_eq(idx_parse_buffer(b, HL + got, "m", &a, err, sizeof err), -1);
            ck_assert_ptr_nonnull(strstr(err, tail));
        }
        write_raw(p, b, len + 1, gz);
        expect_fail(p, "1 unexpected byte(s) after the payload of 5 images of 3x4 (60 bytes)");
        write_raw(p, b, len + 3, gz);
        expect_fail(p, "3 unexpected byte(s) after the payload of 5 images of 3x4 (60 bytes)");
        idx_array a;
        ck_assert_int_eq(idx_parse_buffer(b, len + 3, "m", &a, err, sizeof err), -1);
        ck_assert_str_eq(err, "m: 3 unexpected byte(s) after the payload of 5 images of 3x4 "
                              "(60 bytes)");
    }
    /* a label file one byte short */
    const uint8_t lab[12] = {0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 3, 4};
    write_raw(tmp_path("lab"), lab, 11, 0);
    expect_fail(tmp_path("lab"), "truncated: header says 4 labels (4 payload bytes) but the file "
                              "ends after 3 bytes of payload");
}
END_TEST

START_TEST(huge_or_overflowing_header)
{
    /* 4e9 images of 28x28 claimed by a 20-byte file: rejected without allocating it all */
    uint8_t h[20] = {0, 0, 8, 3, 0xee, 0x6b, 0x28, 0, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3, 4};
    write_raw(tmp_path("huge.gz"), h, sizeof h, 1);
    expect_fail(tmp_path("huge.gz"), "truncated: header says 4000000000 images of 28x28 "
                                  "(3136000000000 payload bytes) but the file ends after 4 bytes "
                                  "of payload");
}
END_TEST

START_TEST(overflow_dims)
{
    uint8_t h[16] = {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                     0xff, 0xff, 0xff, 0xff};
    write_raw(tmp_path("ovf"), h, sizeof h, 0);
    expect_fail(tmp_path("ovf"), "header dimensions overflow the address space");
    idx_array a;
    ck_assert_int_eq(idx_parse_buffer(h, sizeof h, "m", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "m: header dimensions overflow the address space");
}
END_TEST

START_TEST(damaged_gzip)
{
    uint8_t b[HL + PAY];
    size_t len = image_bytes(b);
    write_raw(tmp_path("ok.gz"), b, len, 1);
    size_t glen;
    uint8_t *g = (uint8_t *)file_read(tmp_path("ok.gz"), &glen);
    ck_assert_ptr_nonnull(g);
    /* cut the compressed file at every length: always a clean, named failure */
    for (size_t k = 2; k < glen; k++) {
        write_raw(tmp_path("cut.gz"), g, k, 0);
        idx_array a;
        ck_assert_int_eq(idx_read_file(tmp_path("cut.gz"), &a, err, sizeof err), -1);
        ck_assert_ptr_null(a.data);
        ck_assert_msg(strncmp(err, tmp_path("cut.gz"), strlen(tmp_path("cut.gz"))) == 0, "%s", err);
        ck_assert_msg(strstr(err, "truncated") || strstr(err, "corrupt"), "cut at %zu: %s", k,
                      err);
    }
    /* all the payload but no trailer */
    write_raw(tmp_path("cut.gz"), g, glen - 8, 0);
    expect_fail(tmp_path("cut.gz"), "truncated gzip stream: all 60 payload bytes arrived but the "
                                 "gzip trailer (CRC and length) is missing or incomplete");
    /* a wrong CRC in the trailer */
    g[glen - 8] ^= 0xff;
    write_raw(tmp_path("crc.gz"), g, glen, 0);
    idx_array a;
    ck_assert_int_eq(idx_read_file(tmp_path("crc.gz"), &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "crc.gz: corrupt gzip data after ") &&
                      strstr(err, " decompressed bytes: incorrect data check"),
                  "%s", err);
    g[glen - 8] ^= 0xff;
    /* a wrong length (ISIZE) in the trailer */
    g[glen - 4] ^= 0x01;
    write_raw(tmp_path("len.gz"), g, glen, 0);
    ck_assert_int_eq(idx_read_file(tmp_path("len.gz"), &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "len.gz: corrupt gzip data after 76 decompressed bytes: incorrect "
                              "length check"),
                  "%s", err);
    g[glen - 4] ^= 0x01;
    /* an invalid deflate block type right after the 10-byte gzip header */
    g[10] |= 0x06;
    write_raw(tmp_path("bad.gz"), g, glen, 0);
    ck_assert_int_eq(idx_read_file(tmp_path("bad.gz"), &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "corrupt gzip data after 0 decompressed bytes: invalid block type"),
                  "%s", err);
    free(g);
}
END_TEST

/* Expects path to fail with a message that starts with "path: " and contains part. */
static void expect_fail_with(const char *path, const char *part)
{
    idx_array a;
    ck_assert_int_eq(idx_read_file(path, &a, err, sizeof err), -1);
    ck_assert_ptr_null(a.data);
    ck_assert_msg(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':', "%s", err);
    ck_assert_msg(strstr(err, part), "want '%s' in: %s", part, err);
}

/* Writes the first len bytes of a, then the n bytes of b, to path. */
static void write_two(const char *path, const void *a, size_t len, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(a, 1, len, f), len);
    if (n)
        ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Cuts 1..10 bytes off the end of the gzip file src (payload bytes pay) and appends non-gzip
 * bytes to it: every one a named failure. Payloads bigger than zlib's buffer matter: gzread
 * then inflates straight into the caller's buffer and used to miss a partial trailer. */
static void cut_and_append(const uint8_t *g, size_t glen, size_t pay, const char *name)
{
    char p[4096], tail[ERRMSG_LEN];
    snprintf(p, sizeof p, "%s", tmp_path(name));
    snprintf(tail, sizeof tail,
             "truncated gzip stream: all %zu payload bytes arrived but the gzip trailer (CRC and "
             "length) is missing or incomplete",
             pay);
    write_two(p, g, glen, "", 0);
    idx_array a;
    ck_assert_msg(idx_read_file(p, &a, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(a.nbytes, pay);
    idx_free(&a);
    for (size_t k = 1; k <= 8; k++) { /* the 8-byte trailer: CRC32, ISIZE */
        write_two(p, g, glen - k, "", 0);
        expect_fail(p, tail);
    }
    for (size_t k = 9; k <= 10; k++) { /* into the deflate data: still all the payload, or not */
        write_two(p, g, glen - k, "", 0);
        expect_fail_with(p, "truncated");
    }
    write_two(p, g, glen, "garbage!!", 9);
    expect_fail(p, "9 unexpected byte(s) after the end of the gzip stream (not another gzip "
                   "member)");
    write_two(p, g, glen, "\0\0\0", 3); /* zero padding is not a gzip member either */
    expect_fail(p, "3 unexpected byte(s) after the end of the gzip stream (not another gzip "
                   "member)");
    write_two(p, g, glen, "\x1f", 1); /* half a gzip signature */
    expect_fail(p, "1 unexpected byte(s) after the end of the gzip stream (not another gzip "
                   "member)");
}

enum { BIG_N = 100, BIG_PAY = BIG_N * 28 * 28 };

START_TEST(gzip_trailer_and_trailing_bytes)
{
    /* 100 noisy 28x28 images: ~78 KB compressed, far more than zlib's input buffer */
    static uint8_t b[16 + BIG_PAY];
    const uint8_t hdr[16] = {0, 0, 8, 3, 0, 0, 0, BIG_N, 0, 0, 0, 28, 0, 0, 0, 28};
    memcpy(b, hdr, 16);
    uint32_t x = 12345;
    for (int i = 0; i < BIG_PAY; i++) {
        x = x * 1664525u + 1013904223u;
        b[16 + i] = (uint8_t)(x >> 24);
    }
    write_raw(tmp_path("big.gz"), b, sizeof b, 1);
    size_t glen;
    uint8_t *g = (uint8_t *)file_read(tmp_path("big.gz"), &glen);
    ck_assert_ptr_nonnull(g);
    cut_and_append(g, glen, BIG_PAY, "big-cut.gz");
    free(g);
}
END_TEST

/* gzip allows several members in one file (gzip -d joins them; pigz and bgzip write such
 * files): the reader joins them too, and the IDX checks apply to the joined bytes. */
START_TEST(gzip_concatenated_members)
{
    uint8_t b[HL + PAY];
    size_t len = image_bytes(b);
    size_t l1, l2, l0;
    write_raw(tmp_path("m1.gz"), b, 20, 1);
    write_raw(tmp_path("m2.gz"), b + 20, len - 20, 1);
    write_raw(tmp_path("m0.gz"), "", 0, 1);
    uint8_t *g1 = (uint8_t *)file_read(tmp_path("m1.gz"), &l1);
    uint8_t *g2 = (uint8_t *)file_read(tmp_path("m2.gz"), &l2);
    uint8_t *g0 = (uint8_t *)file_read(tmp_path("m0.gz"), &l0);
    ck_assert(g1 && g2 && g0);
    const char *p = tmp_path("two.gz");
    write_two(p, g1, l1, g2, l2);
    idx_array a;
    ck_assert_msg(idx_read_file(p, &a, err, sizeof err) == 0, "%s", err);
    check_images(&a);
    idx_free(&a);
    uint8_t *g12 = malloc(l1 + l2);
    ck_assert_ptr_nonnull(g12);
    memcpy(g12, g1, l1);
    memcpy(g12 + l1, g2, l2);
    write_two(p, g12, l1 + l2, g0, l0); /* an empty member at the end is harmless */
    ck_assert_msg(idx_read_file(p, &a, err, sizeof err) == 0, "%s", err);
    check_images(&a);
    idx_free(&a);
    write_two(p, g12, l1 + l2 - 1, "", 0); /* the second member's trailer cut */
    expect_fail(p, "truncated gzip stream: all 60 payload bytes arrived but the gzip trailer "
                   "(CRC and length) is missing or incomplete");
    write_two(p, g12, l1 + l2, "garbage!!", 9);
    expect_fail(p, "9 unexpected byte(s) after the end of the gzip stream (not another gzip "
                   "member)");
    write_two(p, g12, l1 + l2, g1, l1); /* a third member: its 20 bytes follow the payload */
    expect_fail(p, "20 unexpected byte(s) after the payload of 5 images of 3x4 (60 bytes)");
    free(g12);
    free(g0);
    free(g2);
    free(g1);
}
END_TEST

/* The real data set, copied and damaged (a label file, small, and an image file, big). */
START_TEST(real_files_damaged)
{
    static const char *dir = "/usr/share/datasets/fashion-mnist";
    static const char *files[2] = {"train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"};
    static const size_t pays[2] = {60000, 10000 * 28 * 28};
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("test_idx: SKIP real_files_damaged: %s absent\n", dir);
        return;
    }
    for (int i = 0; i < 2; i++) {
        char src[4096];
        snprintf(src, sizeof src, "%s/%s", dir, files[i]);
        size_t glen;
        uint8_t *g = (uint8_t *)file_read(src, &glen);
        ck_assert_msg(g != NULL, "cannot read %s", src);
        cut_and_append(g, glen, pays[i], files[i]);
        free(g);
    }
}
END_TEST

START_TEST(small_error_buffers)
{
    idx_array a;
    char tiny[8];
    ck_assert_int_eq(idx_read_file(tmp_path("nope"), &a, tiny, sizeof tiny), -1);
    ck_assert_uint_eq(strlen(tiny), sizeof tiny - 1);
    ck_assert_int_eq(idx_read_file(tmp_path("nope"), &a, NULL, 0), -1);
    ck_assert_int_eq(idx_read_file("", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "(idx): no file name given");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("idx");
    TCase *tc = tcase_create("idx");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, setup, tmp_test_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, roundtrip_plain_gz_memory);
    tcase_add_test(tc, roundtrip_writer_labels_and_images);
    tcase_add_test(tc, missing_directory_empty);
    tcase_add_test(tc, not_gzip);
    tcase_add_test(tc, wrong_magic);
    tcase_add_test(tc, header_truncated_at_every_offset);
    tcase_add_test(tc, payload_truncated_and_trailing);
    tcase_add_test(tc, huge_or_overflowing_header);
    tcase_add_test(tc, overflow_dims);
    tcase_add_test(tc, damaged_gzip);
    tcase_add_test(tc, gzip_trailer_and_trailing_bytes);
    tcase_add_test(tc, gzip_concatenated_members);
    tcase_add_test(tc, real_files_damaged);
    tcase_add_test(tc, small_error_buffers);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
