/* test_metrics.c — running loss/accuracy and hvd_metric_average under mpirun -n 1..4.
 * Ranks hold different values and different sample counts, so a weighted mean, a sum, or a
 * rank's own value would each give a different answer than the plain mean of MetricAverage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "train/metrics.h"

START_TEST(running_means_weight_batches_by_size)
{
    metrics m;
    metrics_reset(&m);
    ck_assert_double_eq(metrics_loss(&m), 0.0);
    ck_assert_double_eq(metrics_accuracy(&m), 0.0);
    metrics_add(&m, 2.0, 3, 4);  /* batch of 4, mean loss 2, 3 right */
    ck_assert_double_eq_tol(metrics_loss(&m), 2.0, 1e-15);
    ck_assert_double_eq_tol(metrics_accuracy(&m), 0.75, 1e-15);
    metrics_add(&m, 0.5, 1, 12); /* a larger batch counts more: (2·4 + 0.5·12) / 16 */
    ck_assert_double_eq_tol(metrics_loss(&m), 14.0 / 16.0, 1e-15);
    ck_assert_double_eq_tol(metrics_accuracy(&m), 4.0 / 16.0, 1e-15);
    ck_assert_uint_eq(metrics_count(&m), 16);
    metrics_add(&m, 7.0, 0, 0); /* an empty batch changes nothing */
    ck_assert_double_eq_tol(metrics_loss(&m), 14.0 / 16.0, 1e-15);
    metrics_reset(&m);
    ck_assert_uint_eq(metrics_count(&m), 0);
    ck_assert_double_eq(metrics_loss(&m), 0.0);
}
END_TEST

/* Rank r: two batches, 8·(r+1)² samples in all, running loss (r+1)·0.25 + 0.125 and accuracy
 * close to (r+1)/(r+2). */
static void fill(metrics *m, int r)
{
    metrics_reset(m);
    size_t n = 8 * (size_t)(r + 1) * (size_t)(r + 1);
    size_t right = n / (size_t)(r + 2) * (size_t)(r + 1);
    double loss = (r + 1) * 0.25 + 0.125;
    metrics_add(m, loss - 0.0625, right / 2, n / 2);
    metrics_add(m, loss + 0.0625, right - right / 2, n - n / 2);
}

START_TEST(average_is_the_plain_mean_of_the_ranks_and_identical)
{
    int rank = hvd_rank(), size = hvd_size();
    metrics m;
    fill(&m, rank);
    float local[2] = {(float)metrics_loss(&m), (float)metrics_accuracy(&m)};
    hvd_metric_average(&m, "train");
    double loss = metrics_loss(&m), acc = metrics_accuracy(&m);

    /* Every rank's local values, to compute the expected mean here in double. */
    size_t total = 0;
    float *all = hvd_allgather(local, 2, &total, NULL, "locals");
    CK_EXPECT(total == 2 * (size_t)size, "allgather gave %zu floats", total);
    double want_loss = 0, want_acc = 0, wsum = 0, wsum_n = 0;
    for (int r = 0; r < size; r++) {
        want_loss += all[2 * r] / size;
        want_acc += all[2 * r + 1] / size;
        metrics t;
        fill(&t, r);
        wsum += metrics_accuracy(&t) * (double)metrics_count(&t);
        wsum_n += (double)metrics_count(&t);
    }
    free(all);
    CK_EXPECT(fabs(loss - want_loss) <= 1e-6 * want_loss, "rank %d: loss %.9g, mean of ranks %.9g",
              rank, loss, want_loss);
    CK_EXPECT(fabs(acc - want_acc) <= 1e-6 * want_acc, "rank %d: accuracy %.9g, mean %.9g", rank,
              acc, want_acc);
    if (size > 1) /* the sample-weighted mean is a different number: make sure it is not that */
        CK_EXPECT(fabs(acc - wsum / wsum_n) > 1e-3, "rank %d: accuracy %.9g is the weighted mean",
                  rank, acc);

    /* The same bits everywhere: compare with rank 0's result. */
    float mine[2] = {(float)loss, (float)acc}, ref[2] = {mine[0], mine[1]};
    hvd_broadcast(ref, 2, 0, "reference");
    CK_EXPECT(memcmp(mine, ref, sizeof mine) == 0, "rank %d: averaged (%.9g, %.9g) differs from "
              "rank 0's (%.9g, %.9g)", rank, mine[0], mine[1], ref[0], ref[1]);
    CK_EXPECT(metrics_count(&m) == 8 * (size_t)(rank + 1) * (size_t)(rank + 1),
              "count changed by averaging: %zu", metrics_count(&m));

    /* Adding a batch returns to this rank's own running values. */
    metrics_add(&m, 0, 0, 0);
    CK_EXPECT(fabs(metrics_loss(&m) - local[0]) < 1e-6, "rank %d: after add, loss %.9g want %.9g",
              rank, metrics_loss(&m), local[0]);
    CK_AGREE();
}
END_TEST

START_TEST(train_and_val_averaged_separately)
{
    int rank = hvd_rank(), size = hvd_size();
    metrics train, val;
    fill(&train, rank);
    metrics_reset(&val);
    metrics_add(&val, 1.0 + rank, (size_t)rank, 4); /* accuracy rank/4, loss 1 + rank */
    hvd_metric_average(&train, "train");
    hvd_metric_average(&val, "val");
    double want_val_loss = 1.0 + (size - 1) / 2.0, want_val_acc = (size - 1) / 8.0;
    CK_EXPECT(fabs(metrics_loss(&val) - want_val_loss) < 1e-6, "rank %d: val loss %.9g want %.9g",
              rank, metrics_loss(&val), want_val_loss);
    CK_EXPECT(fabs(metrics_accuracy(&val) - want_val_acc) < 1e-6,
              "rank %d: val accuracy %.9g want %.9g", rank, metrics_accuracy(&val), want_val_acc);
    /* Averaging again is idempotent: every rank already holds the mean. */
    double once = metrics_loss(&val);
    hvd_metric_average(&val, "val");
    CK_EXPECT(fabs(metrics_loss(&val) - once) < 1e-6, "rank %d: second average moved %.9g -> %.9g",
              rank, once, metrics_loss(&val));
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_add_test(tc, running_means_weight_batches_by_size);
    tcase_add_test(tc, average_is_the_plain_mean_of_the_ranks_and_identical);
    tcase_add_test(tc, train_and_val_averaged_separately);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
