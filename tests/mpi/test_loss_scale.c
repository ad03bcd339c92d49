/* test_loss_scale.c — dynamic loss scaling (optim/loss_scale.h) under mpirun -n 1..4.
 *
 * Overflows are planted: at chosen steps one rank (a different one each time) holds an Inf or a
 * NaN, or a gradient too large for fp16 compression. Every rank must skip those steps alike,
 * back off the scale, grow it after growth_interval clean steps, and apply the others with the
 * gradients divided by the scale, holding bit-identical weights, optimizer state and scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "model/params.h"
#include "optim/loss_scale.h"
#include "optim/optim.h"

#define STEPS 12
/* Steps with a planted overflow (on rank step % size only), interval 3: the scale after each. */
static const int planted[STEPS] = {0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0};
static const float scale_after[STEPS] = {65536, 32768, 32768, 32768, 65536, 32768,
                                         16384, 16384, 16384, 32768, 32768, 32768};

static loss_scale test_scale(void)
{
    loss_scale ls = loss_scale_defaults();
    ls.growth_interval = 3;
    return ls;
}

static void expect_same_on_every_rank(const float *buf, size_t n, const char *what)
{
    float ref[64];
    ck_assert_uint_le(n, sizeof ref / sizeof ref[0]);
    memcpy(ref, buf, n * sizeof(float));
    hvd_broadcast(ref, n, 0, "test.reference");
    CK_EXPECT(memcmp(ref, buf, n * sizeof(float)) == 0, "%s: rank %d differs from rank 0", what,
              hvd_rank());
}

/* The verdicts alone: only rank t % size sees the planted overflow; every rank must skip. */
START_TEST(one_ranks_overflow_skips_on_every_rank)
{
    int rank = hvd_rank(), size = hvd_size();
    loss_scale ls = test_scale();
    for (int t = 0; t < STEPS; t++) {
        int apply = loss_scale_update(&ls, planted[t] && rank == t % size);
        CK_EXPECT(apply == !planted[t], "step %d on rank %d: %s, want %s", t, rank,
                  apply ? "applied" : "skipped", planted[t] ? "skipped" : "applied");
        CK_EXPECT(ls.scale == scale_after[t], "step %d on rank %d: scale %g, want %g", t, rank,
                  (double)ls.scale, (double)scale_after[t]);
    }
    CK_EXPECT(ls.skipped == 3 && ls.grown == 2, "rank %d: %ld skipped, %ld grown, want 3 and 2",
              rank, ls.skipped, ls.grown);
    float s = ls.scale;
    expect_same_on_every_rank(&s, 1, "scale");
    CK_AGREE();
}
END_TEST

START_TEST(scale_stays_within_its_bounds)
{
    loss_scale ls = loss_scale_defaults();
    ls.scale = 2.0f;
    for (int t = 0; t < 4; t++)
        loss_scale_update(&ls, 1);
    CK_EXPECT(ls.scale == 1.0f, "backed off to %g, below min_scale 1", (double)ls.scale);
    ls.scale = ls.max_scale;
    ls.growth_interval = 1;
    loss_scale_update(&ls, 0);
    CK_EXPECT(ls.scale == ls.max_scale, "grew to %g, above max_scale %g", (double)ls.scale,
              (double)ls.max_scale);
    CK_AGREE();
}
END_TEST

START_TEST(unscale_divides_and_counts_non_finite)
{
    loss_scale ls = loss_scale_defaults();
    float g[5] = {65536.0f, -32768.0f, INFINITY, NAN, 3.0f};
    size_t bad = loss_scale_unscale(&ls, g, 5);
    CK_EXPECT(bad == 2, "%zu non-finite, want 2", bad);
    CK_EXPECT(g[0] == 1.0f && g[1] == -0.5f && g[4] == 3.0f / 65536.0f,
              "unscaled to %g %g %g", (double)g[0], (double)g[1], (double)g[4]);
    CK_AGREE();
}
END_TEST

/* Through optimizer_step: a distributed SGD fed S·g (S the scaler's current scale), planted
 * overflows on one rank, against one plain SGD fed the ranks' mean g on the clean steps only. */
#define N 6
static void run_optimizer(int compression, const char *what)
{
    int rank = hvd_rank(), size = hvd_size();
    float *w = memory_alloc(N * sizeof(float)), *gr = memory_alloc(N * sizeof(float));
    float wr[N], grr[N]; /* the plain run's: never allreduced */
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(gr);
    param_view view = {.name = "w", .offset = 0, .count = N, .ndim = 1, .shape = {N}};
    param_set ps = {.params = w, .grads = gr, .n = N, .views = &view, .nviews = 1};
    param_set ref = {.params = wr, .grads = grr, .n = N, .views = &view, .nviews = 1};
    for (int i = 0; i < N; i++)
        w[i] = wr[i] = 0.25f * (float)(i + 1);
    loss_scale ls = test_scale();
    optimizer *od = hvd_distributed_optimizer_ex(sgd_create(&ps, 0.5f, 0.9f), compression, 1);
    optimizer *orf = sgd_create(&ref, 0.5f, 0.9f);
    od->loss_scale = &ls;
    long applied = 0;
    for (int t = 0; t < STEPS; t++) {
        float before[N];
        memcpy(before, w, sizeof before);
        for (int i = 0; i < N; i++) {
            float g = (float)((i + 1) * (rank + 1) + t) / 256.0f; /* exact in fp16 too */
            gr[i] = g * ls.scale;
            double mean = 0.0;
            for (int r = 0; r < size; r++)
                mean += (double)((i + 1) * (r + 1) + t) / 256.0;
            grr[i] = (float)(mean / size);
        }
        if (planted[t] && rank == t % size) {
            if (compression == HVD_COMPRESS_FP16)
                gr[t % N] = 1e5f; /* finite here, beyond fp16's 65504 in the allreduce */
            else
                gr[t % N] = t % 2 ? INFINITY : NAN;
        }
        int stepped = optimizer_step(od, &ps);
        CK_EXPECT(stepped == !planted[t], "%s: step %d on rank %d %s", what, t, rank,
                  stepped ? "applied" : "skipped");
        if (!planted[t]) {
            optimizer_step(orf, &ref);
            applied++;
        } else {
            CK_EXPECT(memcmp(before, w, sizeof before) == 0, "%s: step %d skipped, weights changed",
                      what, t);
        }
    }
    double d = 0.0;
    for (int i = 0; i < N; i++)
        d = fmax(d, fabs((double)w[i] - (double)wr[i]));
    CK_EXPECT(d < 1e-5, "%s: weights %.3g from the unscaled run's", what, d);
    CK_EXPECT(od->iterations == applied, "%s: %ld iterations, want %ld", what, od->iterations,
              applied);
    CK_EXPECT(ls.scale == scale_after[STEPS - 1], "%s: scale %g, want %g", what,
              (double)ls.scale, (double)scale_after[STEPS - 1]);
    CK_EXPECT(fabs((double)w[0] - 0.25) > 0.1, "%s: weights barely moved", what);
    expect_same_on_every_rank(w, N, what);
    expect_same_on_every_rank(od->state, od->n_state, what);
    optimizer_free(od);
    optimizer_free(orf);
    memory_free(w);
    memory_free(gr);
}

START_TEST(optimizer_skips_planted_overflows_and_unscales)
{
    run_optimizer(HVD_COMPRESS_NONE, "no compression");
    CK_AGREE();
}
END_TEST

START_TEST(fp16_compression_overflow_skips)
{
    run_optimizer(HVD_COMPRESS_FP16, "fp16 compression");
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("loss_scale");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_ranks_overflow_skips_on_every_rank);
    tcase_add_test(tc, scale_stays_within_its_bounds);
    tcase_add_test(tc, unscale_divides_and_counts_non_finite);
    tcase_add_test(tc, optimizer_skips_planted_overflows_and_unscales);
    tcase_add_test(tc, fp16_compression_overflow_skips);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
