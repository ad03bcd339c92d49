/* test_dataset.c — Fashion-MNIST location order and its not-found message, loading with the
 * images/labels cross-checks, pixel statistics, and the real data's counts when installed.
 * Serial (forked Check: setenv/chdir stay inside each test's process). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/dataset.h"
#include "lib/ck_mpi.h"
#include "lib/tmpdir.h"

static char oldcwd[PATH_MAX];
static char err[ERRMSG_LEN];

static void teardown(void)
{
    if (oldcwd[0] && chdir(oldcwd) != 0)
        perror("chdir");
    tmp_test_teardown();
}
static void setup(void)
{
    tmp_test_setup();
    ck_assert_ptr_nonnull(getcwd(oldcwd, sizeof oldcwd));
    unsetenv("HVDLAB_DATA");
    err[0] = '\0';
}

static void mkdir_p(const char *path)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    ck_assert_int_eq(mkdir(tmp, 0755) == 0 || errno == EEXIST, 1);
}

/* n images whose pixels encode (image, position) with a marker byte, and labels i*3 % 10. */
static void write_split(const char *dir, const char *prefix, size_t n, uint8_t marker, int gz)
{
    uint8_t *img = malloc(n * DATASET_PIXELS), *lab = malloc(n);
    for (size_t i = 0; i < n; i++) {
        for (int p = 0; p < DATASET_PIXELS; p++)
            img[i * DATASET_PIXELS + (size_t)p] = (uint8_t)(i * 13 + (size_t)p * 7);
        img[i * DATASET_PIXELS] = marker;
        lab[i] = (uint8_t)(i * 3 % 10);
    }
    char ip[600], lp[600];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte%s", dir, prefix, gz ? ".gz" : "");
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte%s", dir, prefix, gz ? ".gz" : "");
    uint32_t id[3] = {(uint32_t)n, 28, 28}, ld[1] = {(uint32_t)n};
    ck_assert_int_eq(idx_write_file(ip, IDX_MAGIC_IMAGES, id, img, gz, err, sizeof err), 0);
    ck_assert_int_eq(idx_write_file(lp, IDX_MAGIC_LABELS, ld, lab, gz, err, sizeof err), 0);
    free(img);
    free(lab);
}

static void make_data_dir(const char *dir, uint8_t marker, int gz)
{
    mkdir_p(dir);
    write_split(dir, "train", 12, marker, gz);
    write_split(dir, "t10k", 5, marker, gz);
}

START_TEST(load_small_files)
{
    for (int gz = 0; gz < 2; gz++) {
        const char *d = tmp_path(gz ? "gz" : "plain");
        make_data_dir(d, 77, gz);
        dataset_split s;
        ck_assert_msg(dataset_load_split(d, "train", &s, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(s.n, 12);
        for (size_t i = 0; i < 12; i++) {
            ck_assert_uint_eq(s.labels[i], i * 3 % 10);
            ck_assert_uint_eq(s.images[i * DATASET_PIXELS], 77);
            ck_assert_uint_eq(s.images[i * DATASET_PIXELS + 100], (uint8_t)(i * 13 + 700));
        }
        dataset_free_split(&s);
        ck_assert_ptr_null(s.images);
        ck_assert_msg(dataset_load_split(d, "t10k", &s, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(s.n, 5);
        dataset_free_split(&s);
    }
}
END_TEST

/* Loads (images, labels) expecting failure with exactly `want`. */
static void expect_load_fail(const char *ip, const char *lp, const char *want)
{
    dataset_split s;
    ck_assert_int_eq(dataset_load_files(ip, lp, &s, err, sizeof err), -1);
    ck_assert_ptr_null(s.images);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(cross_checks)
{
    char want[ERRMSG_LEN];
    uint8_t img[12 * DATASET_PIXELS] = {0}, lab[12] = {0};
    uint32_t id[3] = {12, 28, 28}, ld11[1] = {11}, ld12[1] = {12}, id32[3] = {1, 32, 32};
    const char *ip = tmp_path("i"), *lp = tmp_path("l.gz"), *l11 = tmp_path("l11"), *odd = tmp_path("odd");
    ck_assert_int_eq(idx_write_file(ip, IDX_MAGIC_IMAGES, id, img, 0, err, sizeof err), 0);
    ck_assert_int_eq(idx_write_file(l11, IDX_MAGIC_LABELS, ld11, lab, 0, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s: counts disagree: 11 labels but %s has 12 images", l11, ip);
    expect_load_fail(ip, l11, want);

    lab[7] = 10;
    ck_assert_int_eq(idx_write_file(lp, IDX_MAGIC_LABELS, ld12, lab, 1, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s: label out of range: 10 at index 7 (expected 0..9)", lp);
    expect_load_fail(ip, lp, want);
    lab[7] = 9;
    lab[11] = 255;
    ck_assert_int_eq(idx_write_file(lp, IDX_MAGIC_LABELS, ld12, lab, 1, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s: label out of range: 255 at index 11 (expected 0..9)", lp);
    expect_load_fail(ip, lp, want);
    lab[11] = 0;
    ck_assert_int_eq(idx_write_file(lp, IDX_MAGIC_LABELS, ld12, lab, 1, err, sizeof err), 0);
    dataset_split s;
    ck_assert_msg(dataset_load_files(ip, lp, &s, err, sizeof err) == 0, "%s", err);
    dataset_free_split(&s);

    /* swapped arguments */
    snprintf(want, sizeof want,
             "%s: expected images (magic 0x00000803) but this is a labels file (magic 0x00000801)",
             lp);
    expect_load_fail(lp, ip, want);
    snprintf(want, sizeof want,
             "%s: expected labels (magic 0x00000801) but this is an images file (magic 0x00000803)",
             ip);
    expect_load_fail(ip, ip, want);
    /* a labels file whose magic alone says images: the wrong kind, not a truncated images file */
    const char *bent = tmp_path("bent");
    ck_assert_int_eq(idx_write_file(bent, IDX_MAGIC_LABELS, ld12, lab, 0, err, sizeof err), 0);
    FILE *f = fopen(bent, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 3, SEEK_SET), 0);
    ck_assert_int_eq(fputc(0x03, f), 0x03);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(want, sizeof want,
             "%s: expected labels (magic 0x00000801) but this is an images file (magic 0x00000803)",
             bent);
    expect_load_fail(ip, bent, want);
    /* not 28x28 */
    ck_assert_int_eq(idx_write_file(odd, IDX_MAGIC_IMAGES, id32, img, 0, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s: images are 32x32, expected 28x28", odd);
    expect_load_fail(odd, lp, want);
    /* errors from the IDX layer come through with the file name */
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", tmp_path("gone"));
    expect_load_fail(ip, tmp_path("gone"), want);
    expect_load_fail(tmp_path("gone"), lp, want);
}
END_TEST

START_TEST(locate_order)
{
    const char *a = tmp_path("a"), *b = tmp_path("b"), *partial = tmp_path("partial");
    char dir[DATASET_PATHLEN];
    make_data_dir(a, 1, 1);
    make_data_dir(b, 2, 0); /* plain files are found too */
    make_data_dir(tmp_path("cwd/datasets/fashion-mnist"), 3, 1);
    mkdir_p(partial);
    write_split(partial, "train", 3, 4, 1); /* no test files: never a hit */
    ck_assert_int_eq(chdir(tmp_path("cwd")), 0);

    setenv("HVDLAB_DATA", b, 1);
    ck_assert_msg(dataset_locate(a, dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(dir, a); /* --data-dir first */
    ck_assert_msg(dataset_locate(NULL, dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(dir, b); /* then $HVDLAB_DATA */
    /* an explicit --data-dir without all four files is an error naming it, never a fall-back */
    ck_assert_int_eq(dataset_locate(partial, dir, sizeof dir, err, sizeof err), -1);
    ck_assert_msg(strstr(err, partial) && strstr(err, "[--data-dir]"), "%s", err);
    ck_assert_msg(strstr(err, "$HVDLAB_DATA") == NULL, "%s", err);
    setenv("HVDLAB_DATA", partial, 1); /* the search skips an incomplete place */
    ck_assert_msg(dataset_locate(NULL, dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(dir, DATASET_LOCAL_DIR);
    unsetenv("HVDLAB_DATA");
    ck_assert_msg(dataset_locate(NULL, dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(dir, DATASET_LOCAL_DIR); /* then ./datasets/fashion-mnist */
    setenv("HVDLAB_DATA", "", 1);             /* empty means unset, and so does --data-dir "" */
    ck_assert_msg(dataset_locate("", dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(dir, DATASET_LOCAL_DIR);

    /* what was found is what gets loaded */
    dataset ds;
    ck_assert_msg(dataset_load(b, &ds, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(ds.dir, b);
    ck_assert_uint_eq(ds.train.n, 12);
    ck_assert_uint_eq(ds.test.n, 5);
    ck_assert_uint_eq(ds.train.images[0], 2);
    dataset_free(&ds);

    /* with nothing local, the system directory is next (when the package is installed) */
    ck_assert_int_eq(chdir(tmp_dir), 0);
    struct stat st;
    int have_system = stat(DATASET_SYSTEM_DIR "/train-images-idx3-ubyte.gz", &st) == 0;
    int rc = dataset_locate(NULL, dir, sizeof dir, err, sizeof err);
    if (have_system) {
        ck_assert_int_eq(rc, 0);
        ck_assert_str_eq(dir, DATASET_SYSTEM_DIR);
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_ptr_nonnull(strstr(err, DATASET_INSTALL_HINT));
    }
}
END_TEST

START_TEST(not_found_message)
{
    const char *partial = tmp_path("partial"), *file = tmp_path("file");
    mkdir_p(partial);
    write_split(partial, "train", 3, 4, 1);
    FILE *f = fopen(file, "w");
    fclose(f);
    const char *places[5] = {tmp_path("missing"), NULL, partial, file, ""};
    const char *origins[5] = {"--data-dir", "$HVDLAB_DATA", "current directory", "system", "x"};
    char dir[DATASET_PATHLEN] = "untouched", want[ERRMSG_LEN];
    ck_assert_int_eq(dataset_locate_in(places, origins, 5, dir, sizeof dir, err, sizeof err), -1);
    ck_assert_str_eq(dir, "untouched");
    snprintf(want, sizeof want,
             "Fashion-MNIST not found; tried: %s [--data-dir]: No such file or directory; "
             "%s [current directory]: missing t10k-images-idx3-ubyte[.gz], "
             "t10k-labels-idx1-ubyte[.gz]; %s [system]: not a directory; "
             "install it with: sudo apt-get install dataset-fashion-mnist (or: make setup)",
             places[0], partial, file);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(dataset_locate_in(places, origins, 0, dir, sizeof dir, err, sizeof err), -1);
    ck_assert_str_eq(err, "Fashion-MNIST not found; tried: no places; install it with: sudo "
                          "apt-get install dataset-fashion-mnist (or: make setup)");

    /* dataset_locate itself, when neither the arguments nor the system have it */
    ck_assert_int_eq(chdir(tmp_dir), 0);
    setenv("HVDLAB_DATA", partial, 1);
    struct stat st;
    if (stat(DATASET_SYSTEM_DIR, &st) != 0) {
        ck_assert_int_eq(dataset_locate(file, dir, sizeof dir, err, sizeof err), -1);
        ck_assert_ptr_nonnull(strstr(err, "[--data-dir]: not a directory"));
        ck_assert_ptr_nonnull(strstr(err, "[$HVDLAB_DATA]: missing t10k-images"));
        ck_assert_ptr_nonnull(strstr(err, DATASET_LOCAL_DIR " [current directory]: No such"));
        ck_assert_ptr_nonnull(strstr(err, DATASET_SYSTEM_DIR));
        ck_assert_ptr_nonnull(strstr(err, DATASET_INSTALL_HINT));
    }
}
END_TEST

/* A name taken by something that is not a file (a directory, a FIFO, a device, a link to
 * nothing) is said as such, after the names that are missing: it was counted as missing too,
 * and 'missing t10k-labels-idx1-ubyte[.gz]' sent the user to a file that was there. */
START_TEST(what_stands_in_a_files_place_is_named)
{
    const char *d = tmp_path("odd");
    char p[DATASET_PATHLEN], dir[DATASET_PATHLEN], want[ERRMSG_LEN];
    mkdir_p(d);
    write_split(d, "train", 3, 4, 1);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", d);
    ck_assert_int_eq(unlink(p), 0);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", d);
    ck_assert_int_eq(unlink(p), 0);
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", d);
    ck_assert_int_eq(symlink("/dev/null", p), 0);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", d);
    ck_assert_int_eq(symlink("nowhere", p), 0);
    const char *places[1] = {d}, *origins[1] = {"--data-dir"};
    ck_assert_int_eq(dataset_locate_in(places, origins, 1, dir, sizeof dir, err, sizeof err), -1);
    snprintf(want, sizeof want, "Fashion-MNIST not found; tried: %s [--data-dir]: "
             "train-images-idx3-ubyte.gz is a directory, not a file, and "
             "train-labels-idx1-ubyte.gz is a FIFO, not a file, and t10k-images-idx3-ubyte is a "
             "device, not a file, and t10k-labels-idx1-ubyte.gz is a link to nothing (No such "
             "file or directory); install it with: sudo apt-get install dataset-fashion-mnist "
             "(or: make setup)", d);
    ck_assert_str_eq(err, want);
    /* the missing ones first, then the others */
    ck_assert_int_eq(unlink(p), 0);
    ck_assert_int_eq(dataset_locate_in(places, origins, 1, dir, sizeof dir, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "[--data-dir]: missing t10k-labels-idx1-ubyte[.gz], and train-"
                              "images-idx3-ubyte.gz is a directory, not a file, and ") != NULL,
                  "%s", err);
}
END_TEST

START_TEST(file_path_preference)
{
    char p[DATASET_PATHLEN], want[DATASET_PATHLEN];
    const char *d = tmp_path("d");
    mkdir_p(d);
    snprintf(want, sizeof want, "%s/train-images-idx3-ubyte.gz", d);
    ck_assert_int_eq(dataset_file_path(d, "train", "images", p, sizeof p), -1);
    ck_assert_str_eq(p, want); /* the name an error message will show */
    write_split(d, "train", 2, 0, 0);
    snprintf(want, sizeof want, "%s/train-images-idx3-ubyte", d);
    ck_assert_int_eq(dataset_file_path(d, "train", "images", p, sizeof p), 0);
    ck_assert_str_eq(p, want);
    write_split(d, "train", 2, 0, 1);
    snprintf(want, sizeof want, "%s/train-labels-idx1-ubyte.gz", d);
    ck_assert_int_eq(dataset_file_path(d, "train", "labels", p, sizeof p), 0);
    ck_assert_str_eq(p, want);
}
END_TEST

START_TEST(pixel_stats)
{
    /* half 0, half 255: mean 127.5, std 127.5 */
    uint8_t img[2 * DATASET_PIXELS];
    for (int i = 0; i < 2 * DATASET_PIXELS; i++)
        img[i] = i % 2 ? 255 : 0;
    dataset_split s;
    memset(&s, 0, sizeof s);
    s.n = 2;
    s.images = img;
    double m, sd;
    dataset_pixel_stats(&s, &m, &sd);
    ck_assert_double_eq_tol(m, 127.5, 1e-12);
    ck_assert_double_eq_tol(sd, 127.5, 1e-12);
    /* against a two-pass loop on uneven data (odd pixel count tail included) */
    for (int i = 0; i < 2 * DATASET_PIXELS; i++)
        img[i] = (uint8_t)((i * i * 7 + i / 3) % 256);
    double sum = 0, ss = 0;
    for (int i = 0; i < 2 * DATASET_PIXELS; i++)
        sum += img[i];
    double mm = sum / (2 * DATASET_PIXELS);
    for (int i = 0; i < 2 * DATASET_PIXELS; i++)
        ss += (img[i] - mm) * (img[i] - mm);
    dataset_pixel_stats(&s, &m, &sd);
    ck_assert_double_eq_tol(m, mm, 1e-9);
    ck_assert_double_eq_tol(sd, sqrt(ss / (2 * DATASET_PIXELS)), 1e-9);
    ck_assert_double_gt(sd, 10.0);
}
END_TEST

START_TEST(real_fashion_mnist)
{
    struct stat st;
    if (stat(DATASET_SYSTEM_DIR, &st) != 0) {
        printf("test_dataset: SKIP real_fashion_mnist: %s absent (install: %s)\n",
               DATASET_SYSTEM_DIR, DATASET_INSTALL_HINT);
        return;
    }
    dataset ds;
    ck_assert_int_eq(chdir(tmp_dir), 0); /* so no ./datasets/ copy can stand in */
    ck_assert_msg(dataset_load(NULL, &ds, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(ds.dir, DATASET_SYSTEM_DIR);
    ck_assert_uint_eq(ds.train.n, 60000);
    ck_assert_uint_eq(ds.train.image_idx.dims[1], 28);
    ck_assert_uint_eq(ds.train.image_idx.dims[2], 28);
    ck_assert_uint_eq(ds.test.n, 10000);
    size_t per[DATASET_CLASSES] = {0}, tper[DATASET_CLASSES] = {0};
    for (size_t i = 0; i < ds.train.n; i++)
        per[ds.train.labels[i]]++;
    for (size_t i = 0; i < ds.test.n; i++)
        tper[ds.test.labels[i]]++;
    for (int c = 0; c < DATASET_CLASSES; c++) {
        ck_assert_uint_eq(per[c], 6000);
        ck_assert_uint_eq(tper[c], 1000);
    }
    /* the well-known Fashion-MNIST statistics: 0.2860 and 0.3530 of 255 */
    ck_assert_double_eq_tol(ds.mean, 0.2860 * 255, 0.05);
    ck_assert_double_eq_tol(ds.std, 0.3530 * 255, 0.05);
    dataset_free(&ds);
    ck_assert_ptr_null(ds.train.images);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("dataset");
    TCase *tc = tcase_create("dataset");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, load_small_files);
    tcase_add_test(tc, cross_checks);
    tcase_add_test(tc, locate_order);
    tcase_add_test(tc, not_found_message);
    tcase_add_test(tc, what_stands_in_a_files_place_is_named);
    tcase_add_test(tc, file_path_preference);
    tcase_add_test(tc, pixel_stats);
    tcase_add_test(tc, real_fashion_mnist);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
