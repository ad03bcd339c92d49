/* test_loader.c — shuffle, shards (drop and pad, size 1..8, several epochs), batches, subsets,
 * standardisation, augmentation rates/ranges and a hand-computed shifted image. Serial. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "lib/ck_mpi.h"

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

static loader_options opts(int rank, int size, size_t batch, loader_remainder rem)
{
    loader_options o = loader_defaults();
    o.rank = rank;
    o.size = size;
    o.batch_size = batch;
    o.seed = 1234;
    o.remainder = rem;
    o.mean = 72.94;
    o.std = 90.02;
    return o;
}

START_TEST(permutation_properties)
{
    enum { N = 1000 };
    size_t a[N], b[N], c[N];
    char seen[N];
    loader_permutation(7, 0, N, a);
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N; i++) {
        ck_assert_uint_lt(a[i], N);
        ck_assert_int_eq(seen[a[i]]++, 0);
    }
    loader_permutation(7, 0, N, b);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0); /* deterministic */
    loader_permutation(7, 1, N, b);
    loader_permutation(8, 0, N, c);
    int same_e = 0, same_s = 0, fixed = 0;
    for (int i = 0; i < N; i++) {
        same_e += a[i] == b[i];
        same_s += a[i] == c[i];
        fixed += a[i] == (size_t)i;
    }
    ck_assert_int_lt(same_e, 20); /* a random pair agrees in ~1 place */
    ck_assert_int_lt(same_s, 20);
    ck_assert_int_lt(fixed, 20); /* actually shuffled */
    /* uniformity: where element 0 lands over many epochs, roughly flat over 10 bins */
    int bins[10] = {0};
    for (int e = 0; e < 5000; e++) {
        size_t p[10];
        loader_permutation(99, e, 10, p);
        for (int i = 0; i < 10; i++)
            if (p[i] == 0)
                bins[i]++;
    }
    for (int i = 0; i < 10; i++)
        ck_assert_msg(bins[i] > 400 && bins[i] < 600, "bin %d: %d of 5000", i, bins[i]);
    loader_permutation(1, 0, 0, a); /* n = 0 and 1 are fine */
    loader_permutation(1, 0, 1, a);
    ck_assert_uint_eq(a[0], 0);
}
END_TEST

/* Checks one (n, size, policy, epoch) against the documented sharding. */
static void check_shards(const uint8_t *img, const uint8_t *lab, size_t n, int size,
                         loader_remainder rem, int epoch, size_t **prev_rank0)
{
    size_t per = rem == LOADER_DROP ? n / (size_t)size : (n + (size_t)size - 1) / (size_t)size;
    size_t total = per * (size_t)size;
    size_t *perm = malloc((n + 1) * sizeof *perm);
    int *count = calloc(n + 1, sizeof *count);
    char *pos_taken = calloc(total + 1, 1);
    loader_permutation(1234, epoch, n, perm);
    for (int r = 0; r < size; r++) {
        loader L, L2;
        loader_options o = opts(r, size, 16, rem);
        ck_assert_msg(loader_init(&L, img, lab, n, &o, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(loader_init(&L2, img, lab, n, &o, err, sizeof err) == 0, "%s", err);
        loader_set_epoch(&L, epoch);
        if (epoch != 2)
            loader_set_epoch(&L2, 2); /* history must not matter */
        loader_set_epoch(&L2, epoch);
        size_t cnt, cnt2;
        const size_t *s = loader_shard(&L, &cnt), *s2 = loader_shard(&L2, &cnt2);
        ck_assert_uint_eq(cnt, per); /* every rank draws the same count */
        ck_assert_uint_eq(loader_epoch_samples(&L), per);
        ck_assert_uint_eq(cnt2, cnt);
        ck_assert_int_eq(memcmp(s, s2, cnt * sizeof *s), 0); /* separately built loaders agree */
        for (size_t k = 0; k < cnt; k++) {
            size_t pos = (size_t)r + k * (size_t)size; /* DistributedSampler's strided layout */
            ck_assert_uint_lt(pos, total);
            ck_assert_int_eq(pos_taken[pos]++, 0); /* shards are disjoint positions */
            ck_assert_uint_eq(s[k], perm[pos % n]);
            ck_assert_uint_lt(s[k], n);
            count[s[k]]++;
        }
        if (r == 0 && n >= 100) {
            if (*prev_rank0)
                ck_assert_msg(memcmp(*prev_rank0, s, cnt * sizeof *s) != 0,
                              "rank 0 shard repeats between epochs (n %zu size %d)", n, size);
            free(*prev_rank0);
            *prev_rank0 = malloc((cnt + 1) * sizeof *s);
            memcpy(*prev_rank0, s, cnt * sizeof *s);
        }
        loader_free(&L);
        loader_free(&L2);
    }
    size_t drawn = 0, distinct = 0, dup = 0;
    for (size_t i = 0; i < n; i++) {
        drawn += (size_t)count[i];
        distinct += count[i] > 0;
        if (count[i] > 1)
            dup += (size_t)count[i] - 1;
    }
    ck_assert_uint_eq(drawn, total);
    if (rem == LOADER_DROP) { /* each sample at most once, exactly n % size left out */
        ck_assert_uint_eq(distinct, total);
        ck_assert_uint_eq(n - distinct, n % (size_t)size);
        for (size_t p = total; p < n; p++)
            ck_assert_int_eq(count[perm[p]], 0); /* the dropped are the permutation's tail */
    } else if (n > 0) { /* every sample at least once; the padding repeats the permutation's head */
        ck_assert_uint_eq(distinct, n);
        ck_assert_uint_eq(dup, total - n);
        for (size_t p = n; p < total; p++)
            ck_assert_int_ge(count[perm[p % n]], 2);
    }
    free(perm);
    free(count);
    free(pos_taken);
}

START_TEST(sharding_size_1_to_8)
{
    const size_t ns[] = {1000, 1003, 997, 7, 3, 1, 0};
    uint8_t *lab, *img = make_images(1003, &lab);
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
        for (int size = 1; size <= 8; size++)
            for (int rem = 0; rem < 2; rem++) {
                size_t *prev = NULL;
                for (int epoch = 0; epoch < 4; epoch++)
                    check_shards(img, lab, ns[t], size, (loader_remainder)rem, epoch, &prev);
                free(prev);
            }
    free(img);
    free(lab);
}
END_TEST

START_TEST(batches_and_subset)
{
    uint8_t *lab, *img = make_images(103, &lab);
    loader L;
    loader_options o = opts(1, 3, 8, LOADER_PAD);
    o.subset = 50;
    ck_assert_int_eq(loader_init(&L, img, lab, 103, &o, err, sizeof err), 0);
    ck_assert_uint_eq(L.n, 50);
    ck_assert_uint_eq(loader_epoch_samples(&L), 17); /* ceil(50 / 3) */
    ck_assert_uint_eq(loader_num_batches(&L), 3);    /* 8 + 8 + 1 */
    float x[8 * LOADER_PIXELS], x2[8 * LOADER_PIXELS];
    int y[8], y2[8];
    for (int epoch = 0; epoch < 2; epoch++) {
        loader_set_epoch(&L, epoch);
        size_t cnt;
        const size_t *shard = loader_shard(&L, &cnt);
        size_t got = 0, b = 0, k;
        while ((k = loader_next(&L, x, y)) > 0) {
            ck_assert_uint_eq(k, b < 2 ? 8 : 1);
            ck_assert_uint_eq(loader_get_batch(&L, b, x2, y2), k);
            ck_assert_int_eq(memcmp(x, x2, k * LOADER_PIXELS * sizeof *x), 0);
            for (size_t i = 0; i < k; i++) {
                ck_assert_uint_lt(shard[got + i], 50); /* only the first 50 samples */
                ck_assert_int_eq(y[i], lab[shard[got + i]]);
                ck_assert_int_eq(y2[i], y[i]);
            }
            got += k;
            b++;
        }
        ck_assert_uint_eq(got, 17);
        ck_assert_uint_eq(loader_next(&L, x, y), 0);       /* stays exhausted */
        ck_assert_uint_eq(loader_get_batch(&L, 3, x, y), 0); /* past the end */
    }
    loader_free(&L);
    free(img);
    free(lab);
}
END_TEST

START_TEST(test_split_standardised_not_augmented)
{
    uint8_t *lab, *img = make_images(20, &lab);
    loader L;
    loader_options o = opts(0, 1, 6, LOADER_PAD);
    o.shuffle = 0;
    o.augment = 0;
    ck_assert_int_eq(loader_init(&L, img, lab, 20, &o, err, sizeof err), 0);
    float x[6 * LOADER_PIXELS];
    int y[6];
    size_t seen = 0, k;
    while ((k = loader_next(&L, x, y)) > 0) {
        for (size_t i = 0; i < k; i++) {
            size_t idx = seen + i; /* file order */
            ck_assert_int_eq(y[i], lab[idx]);
            for (size_t p = 0; p < LOADER_PIXELS; p++) {
                double want = (img[idx * LOADER_PIXELS + p] - 72.94) / (90.02 + 1e-6);
                ck_assert_double_eq_tol(x[i * LOADER_PIXELS + p], want, 1e-6);
            }
        }
        seen += k;
    }
    ck_assert_uint_eq(seen, 20);
    loader_free(&L);
    free(img);
    free(lab);
}
END_TEST

START_TEST(hand_computed_shift)
{
    const uint8_t in[4 * 5] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    uint8_t out[4 * 5];
    /* down 1, right 2: the top row and left column are repeated (nearest fill) */
    const uint8_t want1[20] = {1, 1, 1, 2, 3, 1, 1, 1, 2, 3, 6, 6, 6, 7, 8, 11, 11, 11, 12, 13};
    loader_augment_image(in, out, 4, 5, (loader_aug){.flip = 0, .dy = 1, .dx = 2});
    ck_assert_int_eq(memcmp(out, want1, 20), 0);
    /* up 2, left 1, then mirrored */
    const uint8_t want2[20] = {15, 15, 14, 13, 12, 20, 20, 19, 18, 17,
                               20, 20, 19, 18, 17, 20, 20, 19, 18, 17};
    loader_augment_image(in, out, 4, 5, (loader_aug){.flip = 1, .dy = -2, .dx = -1});
    ck_assert_int_eq(memcmp(out, want2, 20), 0);
    const uint8_t want3[20] = {5, 4, 3, 2, 1, 10, 9, 8, 7, 6, 15, 14, 13, 12, 11, 20, 19, 18, 17, 16};
    loader_augment_image(in, out, 4, 5, (loader_aug){.flip = 1, .dy = 0, .dx = 0});
    ck_assert_int_eq(memcmp(out, want3, 20), 0);
    loader_augment_image(in, out, 4, 5, (loader_aug){0, 0, 0});
    ck_assert_int_eq(memcmp(out, in, 20), 0);
    /* a shift past the whole image leaves only edge copies */
    loader_augment_image(in, out, 4, 5, (loader_aug){.flip = 0, .dy = 9, .dx = -9});
    for (int i = 0; i < 20; i++)
        ck_assert_uint_eq(out[i], 5);
}
END_TEST

/* Images with one bright pixel at (10, 6) on black: the loader's output reveals the draw. */
enum { R0 = 10, C0 = 6 };
START_TEST(augmentation_rates_from_loader_output)
{
    enum { N = 20000, EPOCHS = 3, B = 128 };
    uint8_t *img = calloc((size_t)N * LOADER_PIXELS, 1), *lab = calloc(N, 1);
    for (size_t i = 0; i < N; i++)
        img[i * LOADER_PIXELS + R0 * LOADER_COLS + C0] = 255;
    loader L;
    loader_options o = opts(0, 1, B, LOADER_PAD);
    o.mean = 0;
    o.std = 1;
    ck_assert_int_eq(loader_init(&L, img, lab, N, &o, err, sizeof err), 0);
    float *x = malloc(B * LOADER_PIXELS * sizeof *x);
    int y[B];
    long flips = 0, dy_hist[13] = {0}, dx_hist[13] = {0}, draws = 0, moved = 0;
    double sxy = 0;
    for (int e = 0; e < EPOCHS; e++) {
        loader_set_epoch(&L, e);
        size_t cnt, got = 0, k;
        const size_t *shard = loader_shard(&L, &cnt);
        while ((k = loader_next(&L, x, y)) > 0) {
            for (size_t i = 0; i < k; i++) {
                int hits = 0, r = -1, c = -1;
                for (int p = 0; p < LOADER_PIXELS; p++)
                    if (x[i * LOADER_PIXELS + p] > 128) {
                        hits++;
                        r = p / LOADER_COLS;
                        c = p % LOADER_COLS;
                    }
                ck_assert_int_eq(hits, 1); /* an interior pixel is never duplicated by the fill */
                int flip = c >= 15, dy = r - R0, dx = flip ? (LOADER_COLS - 1 - c) - C0 : c - C0;
                ck_assert_int_le(abs(dy), 6);
                ck_assert_int_le(abs(dx), 6);
                loader_aug a = loader_augment_params(1234, e, shard[got + i]);
                ck_assert_int_eq(a.flip, flip); /* the documented draw is what was applied */
                ck_assert_int_eq(a.dy, dy);
                ck_assert_int_eq(a.dx, dx);
                flips += flip;
                dy_hist[dy + 6]++;
                dx_hist[dx + 6]++;
                sxy += (double)dx * dy;
                moved += dx != 0 || dy != 0 || flip;
                draws++;
            }
            got += k;
        }
    }
    ck_assert_int_eq(draws, (long)N * EPOCHS);
    double d = (double)draws;
    ck_assert_msg(fabs(flips / d - 0.5) < 0.01, "flip rate %f", flips / d);
    for (int v = -6; v <= 6; v++) {
        double p = abs(v) == 6 ? 0.1 / 11.2 : 1.0 / 11.2, tol = abs(v) == 6 ? 0.003 : 0.006;
        ck_assert_msg(fabs(dy_hist[v + 6] / d - p) < tol, "dy=%d rate %f want %f", v,
                      dy_hist[v + 6] / d, p);
        ck_assert_msg(fabs(dx_hist[v + 6] / d - p) < tol, "dx=%d rate %f want %f", v,
                      dx_hist[v + 6] / d, p);
    }
    ck_assert_int_gt(dy_hist[0] + dy_hist[12], 0); /* the +-6 tails do occur */
    ck_assert_msg(fabs(sxy / d) < 0.3, "dx, dy correlated: E[dx dy] = %f", sxy / d);
    ck_assert_int_gt(moved, (long)(0.95 * d));
    free(x);
    free(img);
    free(lab);
    loader_free(&L);
}
END_TEST

START_TEST(augmentation_independent_of_rank_count)
{
    enum { N = 301 };
    uint8_t *lab, *img = make_images(N, &lab);
    float *ref = malloc((size_t)N * LOADER_PIXELS * sizeof *ref), x[LOADER_PIXELS];
    int y;
    for (int size = 1; size <= 4; size++)
        for (int r = 0; r < size; r++) {
            loader L;
            loader_options o = opts(r, size, 1, LOADER_DROP);
            ck_assert_int_eq(loader_init(&L, img, lab, N, &o, err, sizeof err), 0);
            loader_set_epoch(&L, 5);
            size_t cnt;
            const size_t *shard = loader_shard(&L, &cnt);
            for (size_t k = 0; k < cnt; k++) {
                ck_assert_uint_eq(loader_next(&L, x, &y), 1);
                size_t idx = shard[k];
                if (size == 1) {
                    memcpy(ref + idx * LOADER_PIXELS, x, sizeof x);
                    /* and the fused fill equals the reference shift + flip + standardise */
                    uint8_t aug[LOADER_PIXELS];
                    loader_augment_image(img + idx * LOADER_PIXELS, aug, 28, 28,
                                         loader_augment_params(1234, 5, idx));
                    for (int p = 0; p < LOADER_PIXELS; p++)
                        ck_assert_double_eq_tol(x[p], (aug[p] - 72.94) / (90.02 + 1e-6), 1e-6);
                } else {
                    ck_assert_int_eq(memcmp(ref + idx * LOADER_PIXELS, x, sizeof x), 0);
                }
            }
            loader_free(&L);
        }
    free(ref);
    free(img);
    free(lab);
}
END_TEST

START_TEST(bad_options)
{
    uint8_t img[LOADER_PIXELS] = {0}, lab[1] = {0};
    loader L;
    loader_options o = opts(4, 4, 8, LOADER_PAD);
    ck_assert_int_eq(loader_init(&L, img, lab, 1, &o, err, sizeof err), -1);
    ck_assert_str_eq(err, "loader: rank 4 out of range for size 4");
    o = opts(0, 0, 8, LOADER_PAD);
    ck_assert_int_eq(loader_init(&L, img, lab, 1, &o, err, sizeof err), -1);
    ck_assert_str_eq(err, "loader: size 0 must be at least 1");
    o = opts(0, 1, 0, LOADER_PAD);
    ck_assert_int_eq(loader_init(&L, img, lab, 1, &o, err, sizeof err), -1);
    ck_assert_str_eq(err, "loader: batch size must be at least 1");
    o = opts(0, 1, 8, (loader_remainder)7);
    ck_assert_int_eq(loader_init(&L, img, lab, 1, &o, err, sizeof err), -1);
    ck_assert_str_eq(err, "loader: unknown remainder policy 7");
    o = opts(0, 1, 8, LOADER_PAD);
    o.std = -1;
    ck_assert_int_eq(loader_init(&L, img, lab, 1, &o, err, sizeof err), -1);
    ck_assert_str_eq(err, "loader: bad standardisation mean 72.94 std -1");
    o = opts(0, 1, 8, LOADER_PAD);
    ck_assert_int_eq(loader_init(&L, NULL, lab, 1, &o, err, sizeof err), -1);
    ck_assert_str_eq(err, "loader: no image or label data for 1 samples");
    ck_assert_int_eq(loader_init(&L, NULL, NULL, 0, &o, err, sizeof err), 0); /* empty is fine */
    ck_assert_uint_eq(loader_num_batches(&L), 0);
    float x[LOADER_PIXELS];
    int y;
    ck_assert_uint_eq(loader_next(&L, x, &y), 0);
    loader_free(&L);
    loader_free(&L);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *tc = tcase_create("loader");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, permutation_properties);
    tcase_add_test(tc, sharding_size_1_to_8);
    tcase_add_test(tc, batches_and_subset);
    tcase_add_test(tc, test_split_standardised_not_augmented);
    tcase_add_test(tc, hand_computed_shift);
    tcase_add_test(tc, augmentation_rates_from_loader_output);
    tcase_add_test(tc, augmentation_independent_of_rank_count);
    tcase_add_test(tc, bad_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
