/* test_lab.c — the step programs' plumbing: loader_next_cyclic across epochs, the three lab
 * loaders' options and shards, lab_evaluate against metrics summed by hand, the batch buffers
 * and the banner line. Serial (no MPI). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/loader.h"
#include "lib/ck_mpi.h"
#include "train/args.h"
#include "train/lab.h"

static char err[256];

/* n images: pixel p of image i is (i * 31 + p * 7) % 256; labels i % 10. */
static uint8_t *make_images(size_t n, uint8_t **labels)
{
    uint8_t *img = malloc(n * LOADER_PIXELS + 1), *lab = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        for (size_t p = 0; p < LOADER_PIXELS; p++)
            img[i * LOADER_PIXELS + p] = (uint8_t)((i * 31 + p * 7) % 256);
        lab[i] = (uint8_t)(i % 10);
    }
    *labels = lab;
    return img;
}

/* A dataset over synthetic images: n_train training and n_test test samples. */
static dataset fake_dataset(size_t n_train, size_t n_test)
{
    dataset ds;
    memset(&ds, 0, sizeof ds);
    strcpy(ds.dir, "/data/fashion-mnist");
    uint8_t *lab;
    ds.train.images = make_images(n_train, &lab);
    ds.train.labels = lab;
    ds.train.n = n_train;
    ds.test.images = make_images(n_test, &lab);
    ds.test.labels = lab;
    ds.test.n = n_test;
    ds.mean = 72.94;
    ds.std = 90.02;
    return ds;
}

static void free_fake_dataset(dataset *ds)
{
    free((void *)ds->train.images);
    free((void *)ds->train.labels);
    free((void *)ds->test.images);
    free((void *)ds->test.labels);
}

static args small_args(void)
{
    args a;
    args_defaults(&a);
    a.batch_size = 4;
    a.val_batch_size = 6;
    a.train_subset = 30;
    a.test_subset = 20;
    a.seed = 77;
    return a;
}

static loader plain_loader(const uint8_t *img, const uint8_t *lab, size_t n, size_t batch)
{
    loader L;
    loader_options o = loader_defaults();
    o.batch_size = batch;
    o.seed = 5;
    o.mean = 72.94;
    o.std = 90.02;
    ck_assert_msg(loader_init(&L, img, lab, n, &o, err, sizeof err) == 0, "%s", err);
    return L;
}

START_TEST(next_cyclic_wraps_to_next_epoch)
{
    enum { N = 10, B = 4 };
    uint8_t *lab, *img = make_images(N, &lab);
    loader L = plain_loader(img, lab, N, B), ref = plain_loader(img, lab, N, B);
    float x[B * LOADER_PIXELS], xr[B * LOADER_PIXELS];
    int y[B], yr[B];
    /* Within an epoch it is loader_next: 4, 4, 2. */
    size_t sizes[3] = {4, 4, 2};
    for (int b = 0; b < 3; b++) {
        ck_assert_uint_eq(loader_next_cyclic(&L, x, y), sizes[b]);
        ck_assert_uint_eq(loader_next(&ref, xr, yr), sizes[b]);
        ck_assert_int_eq(memcmp(y, yr, sizes[b] * sizeof *y), 0);
        ck_assert_int_eq(memcmp(x, xr, sizes[b] * LOADER_PIXELS * sizeof *x), 0);
    }
    ck_assert_int_eq(L.epoch, 0);
    /* Past the end: epoch 1's first batch, not 0 and not epoch 0 again. */
    ck_assert_uint_eq(loader_next_cyclic(&L, x, y), B);
    ck_assert_int_eq(L.epoch, 1);
    loader_set_epoch(&ref, 1);
    ck_assert_uint_eq(loader_get_batch(&ref, 0, xr, yr), B);
    ck_assert_int_eq(memcmp(y, yr, sizeof y), 0);
    ck_assert_int_eq(memcmp(x, xr, sizeof x), 0);
    ck_assert_uint_eq(L.cursor, B); /* the next call continues epoch 1 */
    loader_free(&L);
    loader_free(&ref);
    free(img);
    free(lab);
}
END_TEST

START_TEST(next_cyclic_empty_shard_returns_zero)
{
    uint8_t *lab, *img = make_images(2, &lab);
    loader L;
    loader_options o = loader_defaults();
    o.rank = 2;
    o.size = 3;
    o.remainder = LOADER_DROP; /* 2 samples over 3 ranks: nothing for anyone */
    ck_assert_msg(loader_init(&L, img, lab, 2, &o, err, sizeof err) == 0, "%s", err);
    float x[32 * LOADER_PIXELS];
    int y[32];
    ck_assert_uint_eq(loader_next_cyclic(&L, x, y), 0);
    loader_free(&L);
    free(img);
    free(lab);
}
END_TEST

/* The options each lab loader was built with, and the split it reads. */
static void check_loader(const loader *L, const dataset_split *s, int rank, int size, int shuffle,
                         int augment, size_t batch, size_t n)
{
    ck_assert_ptr_eq(L->images, s->images);
    ck_assert_ptr_eq(L->labels, s->labels);
    ck_assert_int_eq(L->opt.rank, rank);
    ck_assert_int_eq(L->opt.size, size);
    ck_assert_int_eq(L->opt.shuffle, shuffle);
    ck_assert_int_eq(L->opt.augment, augment);
    ck_assert_uint_eq(L->opt.batch_size, batch);
    ck_assert_uint_eq(L->n, n);
    ck_assert_uint_eq(L->opt.seed, 77);
    ck_assert_int_eq(L->opt.remainder, LOADER_PAD);
    ck_assert_double_eq(L->opt.mean, 72.94);
    ck_assert_double_eq(L->opt.std, 90.02);
    ck_assert_int_eq(L->epoch, 0);
}

START_TEST(loaders_from_args)
{
    dataset ds = fake_dataset(50, 40);
    args a = small_args();
    lab_shard me = {1, 3};
    loader train = lab_train_loader(&a, &ds, me);
    loader val = lab_val_loader(&a, &ds, me);
    loader test = lab_test_loader(&a, &ds);
    check_loader(&train, &ds.train, 1, 3, 1, 1, 4, 30);
    check_loader(&val, &ds.test, 1, 3, 1, 0, 6, 20);
    check_loader(&test, &ds.test, 0, 1, 0, 0, 6, 20);
    ck_assert_uint_eq(loader_epoch_samples(&train), 10); /* 30 over 3 ranks */
    ck_assert_uint_eq(loader_epoch_samples(&val), 7);    /* 20 over 3, padded */
    size_t cnt;
    const size_t *order = loader_shard(&test, &cnt);
    ck_assert_uint_eq(cnt, 20);
    for (size_t i = 0; i < cnt; i++)
        ck_assert_uint_eq(order[i], i); /* every test image, in file order */
    loader_free(&train);
    loader_free(&val);
    loader_free(&test);
    free_fake_dataset(&ds);
}
END_TEST

/* The model and batch buffers are sized by what a batch can hold: the batch size, but no more
 * than a loader's shard. A --val-batch-size far past the test set (issue: 32768 for 256 images
 * took 21.6 GB on one rank) costs only the test set. */
START_TEST(max_batch_is_what_a_batch_can_hold)
{
    dataset ds = fake_dataset(50, 40);
    args a = small_args(); /* batches of 4 and 6; 30 training, 20 test images */
    lab_shard me = {1, 3};
    loader train = lab_train_loader(&a, &ds, me), val = lab_val_loader(&a, &ds, me);
    loader test = lab_test_loader(&a, &ds);
    ck_assert_uint_eq(lab_max_batch(&train, &val, &test), 6); /* the flags: all fit */
    loader_free(&val);
    loader_free(&test);
    a.val_batch_size = 32768; /* the test loader holds 20, the validation shard 7 */
    val = lab_val_loader(&a, &ds, me);
    test = lab_test_loader(&a, &ds);
    ck_assert_uint_eq(lab_max_batch(&train, &val, &test), 20);
    loader_free(&train);
    a.batch_size = 1000; /* this rank's training shard: 10 */
    train = lab_train_loader(&a, &ds, me);
    ck_assert_uint_eq(lab_max_batch(&train, &val, &test), 20);
    loader_free(&train);
    loader_free(&val);
    loader_free(&test);
    free_fake_dataset(&ds);
}
END_TEST

/* lab_evaluate over more batches than one pass equals the metrics summed batch by batch on a
 * twin loader that starts its next epoch by hand. */
START_TEST(evaluate_matches_hand_sums)
{
    enum { N = 10, B = 4, STEPS = 5 };
    char e[256];
    wrn_config cfg = {.dropout = 0.0f};
    ck_assert_msg(wrn_config_parse("wrn-10-1", &cfg, e, sizeof e) == 0, "%s", e);
    wrn_model *model = wrn_create(&cfg, B, 3, e, sizeof e);
    ck_assert_msg(model != NULL, "%s", e);
    uint8_t *lab, *img = make_images(N, &lab);
    loader L = plain_loader(img, lab, N, B), ref = plain_loader(img, lab, N, B);
    float *x = lab_batch_images(B);
    int *y = lab_batch_labels(B);
    metrics m = lab_evaluate(model, &L, STEPS, x, y);

    double loss_sum = 0;
    size_t correct = 0, count = 0;
    for (int b = 0; b < STEPS; b++) {
        size_t n = loader_next(&ref, x, y);
        if (n == 0) {
            loader_set_epoch(&ref, ref.epoch + 1);
            n = loader_next(&ref, x, y);
        }
        wrn_result r = wrn_eval_batch(model, x, y, n, NULL);
        loss_sum += r.loss * (double)r.count;
        correct += (size_t)r.correct;
        count += r.count;
    }
    ck_assert_uint_eq(count, 4 + 4 + 2 + 4 + 4); /* the sixth batch is epoch 1's second */
    ck_assert_uint_eq(metrics_count(&m), count);
    ck_assert_double_eq_tol(metrics_loss(&m), loss_sum / (double)count, 1e-9);
    ck_assert_double_eq_tol(metrics_accuracy(&m), (double)correct / (double)count, 1e-12);
    ck_assert_int_eq(L.epoch, 1);
    free(x);
    free(y);
    loader_free(&L);
    loader_free(&ref);
    wrn_free(model);
    free(img);
    free(lab);
}
END_TEST

START_TEST(banner_line)
{
    char e[256];
    wrn_config cfg = {.dropout = 0.0f};
    ck_assert_msg(wrn_config_parse("wrn-10-2", &cfg, e, sizeof e) == 0, "%s", e);
    wrn_model *model = wrn_create(&cfg, 2, 1, e, sizeof e);
    ck_assert_msg(model != NULL, "%s", e);
    dataset ds = fake_dataset(1, 1);
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fileno(f), STDOUT_FILENO);
    lab_print_banner(model, &ds, 12000, 2000);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    char line[256], want[256];
    rewind(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    snprintf(want, sizeof want, "Model wrn-10-2: %zu trainable parameters. Data from "
             "/data/fashion-mnist: 12000 training, 2000 test images.\n", wrn_param_count(model));
    ck_assert_str_eq(line, want);
    fclose(f);
    free_fake_dataset(&ds);
    wrn_free(model);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("lab");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, next_cyclic_wraps_to_next_epoch);
    tcase_add_test(tc, next_cyclic_empty_shard_returns_zero);
    tcase_add_test(tc, loaders_from_args);
    tcase_add_test(tc, max_batch_is_what_a_batch_can_hold);
    tcase_add_test(tc, evaluate_matches_hand_sums);
    tcase_add_test(tc, banner_line);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
