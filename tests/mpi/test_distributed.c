/* test_distributed.c — hvd_distributed_optimizer and the broadcasts, under mpirun -n 1..4.
 *
 * Model: a small MLP written here (5 inputs → 4 tanh → 3 softmax, cross-entropy; views fc1.w,
 * fc1.b, fc2.w, fc2.b, 39 parameters; no batch norm), so the test does not depend on the WRN.
 * Rank r's batch at step t is samples (t·size + r)·B … +B; the reference is one optimizer,
 * not distributed, fed the mean gradient over the union of all ranks' batches. Averaging
 * per-rank means equals the union mean (equal batch sizes), so the weights agree to float
 * rounding (1e-6; 6e-8 seen at -n 4); and every rank must hold bit-identical weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "model/params.h"
#include "optim/optim.h"

#define D 5
#define H 4
#define C 3
#define NP (H * D + H + C * H + C)
#define NSTATE 6
#define B 4

typedef struct {
    param_set ps;
    param_view views[4];
    float *params, *grads, state[NSTATE];
} mlp;

static void mlp_init(mlp *m, int seed)
{
    memset(m, 0, sizeof *m);
    m->params = memory_alloc(NP * sizeof(float));
    m->grads = memory_alloc(NP * sizeof(float));
    ck_assert_ptr_nonnull(m->params);
    ck_assert_ptr_nonnull(m->grads);
    const struct {
        const char *name;
        int rows, cols;
    } shape[4] = {{"fc1.w", H, D}, {"fc1.b", H, 1}, {"fc2.w", C, H}, {"fc2.b", C, 1}};
    size_t off = 0;
    for (int v = 0; v < 4; v++) {
        param_view *pv = &m->views[v];
        snprintf(pv->name, sizeof pv->name, "%s", shape[v].name);
        pv->offset = off;
        pv->count = (size_t)(shape[v].rows * shape[v].cols);
        pv->ndim = shape[v].cols > 1 ? 2 : 1;
        pv->shape[0] = shape[v].rows;
        pv->shape[1] = shape[v].cols;
        pv->decay = shape[v].cols > 1;
        off += pv->count;
    }
    for (int i = 0; i < NP; i++)
        m->params[i] = 0.5f * sinf((float)seed * 12.9898f + (float)i * 78.233f);
    for (int i = 0; i < NSTATE; i++)
        m->state[i] = (float)(seed * 10 + i);
    m->ps = (param_set){.params = m->params, .grads = m->grads, .n = NP, .views = m->views,
                        .nviews = 4, .state = m->state, .n_state = NSTATE};
}

static void mlp_free(mlp *m)
{
    memory_free(m->params);
    memory_free(m->grads);
}

static void sample(long i, float *x, int *y)
{
    double s = 0.0;
    for (int j = 0; j < D; j++) {
        x[j] = (float)sin(0.7 * (double)i + 1.3 * j);
        s += x[j] * (j - 2.0);
    }
    *y = s > 0.5 ? 0 : (s < -0.5 ? 1 : 2);
}

/* grads = mean over samples first … first+count−1 of d(cross-entropy)/d(params). */
static void mlp_grad(mlp *m, long first, long count)
{
    const float *W1 = m->params, *b1 = W1 + H * D, *W2 = b1 + H, *b2 = W2 + C * H;
    double g[NP] = {0};
    double *gW1 = g, *gb1 = g + H * D, *gW2 = gb1 + H, *gb2 = gW2 + C * H;
    for (long s = first; s < first + count; s++) {
        float x[D];
        int y;
        sample(s, x, &y);
        double h[H], z[C], zmax = -1e300, sum = 0.0;
        for (int a = 0; a < H; a++) {
            double t = b1[a];
            for (int j = 0; j < D; j++)
                t += (double)W1[a * D + j] * x[j];
            h[a] = tanh(t);
        }
        for (int c = 0; c < C; c++) {
            z[c] = b2[c];
            for (int a = 0; a < H; a++)
                z[c] += (double)W2[c * H + a] * h[a];
            zmax = z[c] > zmax ? z[c] : zmax;
        }
        for (int c = 0; c < C; c++)
            sum += exp(z[c] - zmax);
        double dh[H] = {0};
        for (int c = 0; c < C; c++) {
            double dz = (exp(z[c] - zmax) / sum - (c == y)) / (double)count;
            gb2[c] += dz;
            for (int a = 0; a < H; a++) {
                gW2[c * H + a] += dz * h[a];
                dh[a] += dz * W2[c * H + a];
            }
        }
        for (int a = 0; a < H; a++) {
            double dp = dh[a] * (1.0 - h[a] * h[a]);
            gb1[a] += dp;
            for (int j = 0; j < D; j++)
                gW1[a * D + j] += dp * x[j];
        }
    }
    for (int i = 0; i < NP; i++)
        m->grads[i] = (float)g[i];
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

static void expect_identical_across_ranks(const float *buf, size_t n, const char *what)
{
    float ref[NP + NSTATE + 64];
    ck_assert_uint_le(n, sizeof ref / sizeof ref[0]);
    memcpy(ref, buf, n * sizeof(float));
    hvd_broadcast(ref, n, 0, "test.reference");
    CK_EXPECT(memcmp(ref, buf, n * sizeof(float)) == 0, "%s: rank %d differs from rank 0", what,
              hvd_rank());
}

static optimizer *make_opt(mlp *m, int novograd, float lr)
{
    if (!novograd)
        return sgd_create(&m->ps, lr, 0.9f);
    novograd_options o = novograd_defaults();
    o.weight_decay = 0.01f;
    o.grad_averaging = 1;
    return novograd_create(&m->ps, lr, &o);
}

static const float LRS[] = {0.5f, 0.5f, 0.25f, 0.3f, 0.3f, 0.1f}; /* changes: momentum correction */
#define T ((int)(sizeof LRS / sizeof LRS[0]))

/* Trains T steps distributed (each rank on its own batch) and as one process on the union;
 * returns the largest weight difference. */
static double train_vs_union(int novograd, int compression, float lr_scale, const char *what)
{
    int rank = hvd_rank(), size = hvd_size();
    mlp dist, ref;
    mlp_init(&dist, 7);
    mlp_init(&ref, 7);
    optimizer *od = hvd_distributed_optimizer_ex(make_opt(&dist, novograd, LRS[0]), compression, 1);
    optimizer *orf = make_opt(&ref, novograd, LRS[0]);
    for (int t = 0; t < T; t++) {
        od->lr = orf->lr = LRS[t] * lr_scale;
        mlp_grad(&dist, ((long)t * size + rank) * B, B);
        CK_EXPECT(optimizer_step(od, &dist.ps) == 1, "%s: step %d not applied", what, t);
        mlp_grad(&ref, (long)t * size * B, (long)size * B);
        optimizer_step(orf, &ref.ps);
    }
    double d = max_diff(dist.params, ref.params, NP);
    if (rank == 0)
        printf("%s, %d ranks: max weight difference from the union run %.3g\n", what, size, d);
    expect_identical_across_ranks(dist.params, NP, what);
    expect_identical_across_ranks(od->state, od->n_state, what);
    CK_EXPECT(od->iterations == T, "%s: %ld iterations", what, od->iterations);
    /* the run really moved the weights (a no-op optimizer would also agree) */
    mlp start;
    mlp_init(&start, 7);
    CK_EXPECT(max_diff(start.params, dist.params, NP) > 1e-2, "%s: weights barely moved", what);
    mlp_free(&start);
    optimizer_free(od);
    optimizer_free(orf);
    mlp_free(&dist);
    mlp_free(&ref);
    return d;
}

START_TEST(sgd_equals_one_rank_on_the_union)
{
    double d = train_vs_union(0, HVD_COMPRESS_NONE, 1.0f, "sgd");
    CK_EXPECT(d <= 1e-6, "sgd: weights differ from the union run by %g", d);
    CK_AGREE();
}
END_TEST

START_TEST(novograd_equals_one_rank_on_the_union)
{
    double d = train_vs_union(1, HVD_COMPRESS_NONE, 0.1f, "novograd");
    CK_EXPECT(d <= 1e-6, "novograd: weights differ from the union run by %g", d);
    CK_AGREE();
}
END_TEST

/* fp16 on the wire: each gradient element rounded to 11 significant bits, so the weights land
 * within ~1e-3 of the exact run (T steps of lr·|g|·2^-11); ranks still agree bit for bit. */
START_TEST(fp16_compression_close_to_exact)
{
    double d = train_vs_union(0, HVD_COMPRESS_FP16, 1.0f, "sgd fp16");
    CK_EXPECT(d <= 1e-3, "fp16: weights differ from the exact union run by %g", d);
    /* exact runs differ by < 1e-7 (rounding order); fp16 leaves ~1e-4: it travelled as half */
    CK_EXPECT(d > 1e-5, "fp16: weights within %g of the exact run: were gradients sent as half?",
              d);
    CK_AGREE();
}
END_TEST

/* k = 3 local passes per update: the update uses Σ_passes (average over ranks), Horovod's
 * default (average_aggregated_gradients=False). Reference: that sum computed on the union. */
START_TEST(backward_passes_per_step_accumulates_locally)
{
    int rank = hvd_rank(), size = hvd_size();
    const int k = 3;
    mlp dist, ref;
    mlp_init(&dist, 3);
    mlp_init(&ref, 3);
    optimizer *od = hvd_distributed_optimizer_ex(sgd_create(&dist.ps, 0.2f, 0.9f),
                                                 HVD_COMPRESS_NONE, k);
    optimizer *orf = sgd_create(&ref.ps, 0.2f, 0.9f);
    float sum[NP];
    for (int u = 0; u < 2; u++) { /* two updates */
        memset(sum, 0, sizeof sum);
        for (int j = 0; j < k; j++) {
            long pass = (long)u * k + j;
            mlp_grad(&dist, (pass * size + rank) * B, B);
            int applied = optimizer_step(od, &dist.ps);
            CK_EXPECT(applied == (j == k - 1), "update %d pass %d: step returned %d", u, j,
                      applied);
            mlp_grad(&ref, pass * size * B, (long)size * B);
            for (int i = 0; i < NP; i++)
                sum[i] += ref.grads[i];
        }
        memcpy(ref.grads, sum, sizeof sum);
        optimizer_step(orf, &ref.ps);
        double d = max_diff(dist.params, ref.params, NP);
        CK_EXPECT(d <= 1e-6, "update %d: weights differ from the union run by %g", u, d);
        CK_EXPECT(od->iterations == u + 1, "update %d: %ld iterations", u, od->iterations);
    }
    expect_identical_across_ranks(dist.params, NP, "accumulated");
    optimizer_free(od);
    optimizer_free(orf);
    mlp_free(&dist);
    mlp_free(&ref);
    CK_AGREE();
}
END_TEST

/* Root = the last rank. Every rank starts from its own weights and BN-like state; afterwards
 * all hold the root's, bit for bit. */
START_TEST(broadcast_parameters_from_nonzero_root)
{
    int rank = hvd_rank(), root = hvd_size() - 1;
    mlp m, want;
    mlp_init(&m, 100 + rank);
    mlp_init(&want, 100 + root);
    if (rank != root)
        CK_EXPECT(max_diff(m.params, want.params, NP) > 0.0, "rank %d started equal", rank);
    hvd_broadcast_parameters(&m.ps, root);
    CK_EXPECT(memcmp(m.params, want.params, NP * sizeof(float)) == 0,
              "rank %d: params differ from root %d's", rank, root);
    CK_EXPECT(memcmp(m.state, want.state, NSTATE * sizeof(float)) == 0,
              "rank %d: state differs from root %d's", rank, root);
    mlp_free(&m);
    mlp_free(&want);
    CK_AGREE();
}
END_TEST

/* A rank's local history: r+1 steps at lr 0.01·(r+1), not distributed. */
static optimizer *local_history(mlp *m, int novograd, int r)
{
    mlp_init(m, 200 + r);
    optimizer *o = make_opt(m, novograd, 0.01f * (float)(r + 1));
    for (int t = 0; t <= r; t++) {
        mlp_grad(m, (long)(t + 10 * r) * B, B);
        optimizer_step(o, &m->ps);
    }
    return o;
}

START_TEST(broadcast_optimizer_state_from_nonzero_root)
{
    int rank = hvd_rank(), root = hvd_size() - 1;
    for (int novograd = 0; novograd < 2; novograd++) {
        mlp m, w;
        optimizer *o = local_history(&m, novograd, rank);
        optimizer *want = local_history(&w, novograd, root);
        hvd_broadcast_optimizer_state(o, root);
        CK_EXPECT(memcmp(o->state, want->state, o->n_state * sizeof(float)) == 0,
                  "%s rank %d: state differs from root's", optimizer_name(o), rank);
        CK_EXPECT(o->iterations == root + 1, "%s rank %d: iterations %ld, root has %d",
                  optimizer_name(o), rank, o->iterations, root + 1);
        CK_EXPECT(o->last_lr == want->last_lr, "%s rank %d: last_lr %g, root has %g",
                  optimizer_name(o), rank, (double)o->last_lr, (double)want->last_lr);
        optimizer_free(o);
        optimizer_free(want);
        mlp_free(&m);
        mlp_free(&w);
    }
    CK_AGREE();
}
END_TEST

/* Step 4 of the lab in miniature: ranks initialise differently (seed + rank); broadcasting
 * from rank 0 then training distributed keeps them identical, and equal to one process on the
 * union starting from rank 0's weights. */
START_TEST(different_starts_identical_after_broadcast)
{
    int rank = hvd_rank(), size = hvd_size();
    mlp m, ref;
    mlp_init(&m, 300 + rank);
    mlp_init(&ref, 300);
    optimizer *o = hvd_distributed_optimizer(sgd_create(&m.ps, 0.3f, 0.9f));
    optimizer *orf = sgd_create(&ref.ps, 0.3f, 0.9f);
    hvd_broadcast_parameters(&m.ps, 0);
    hvd_broadcast_optimizer_state(o, 0);
    for (int t = 0; t < 4; t++) {
        mlp_grad(&m, ((long)t * size + rank) * B, B);
        optimizer_step(o, &m.ps);
        mlp_grad(&ref, (long)t * size * B, (long)size * B);
        optimizer_step(orf, &ref.ps);
    }
    expect_identical_across_ranks(m.params, NP, "after broadcast");
    double d = max_diff(m.params, ref.params, NP);
    CK_EXPECT(d <= 1e-6, "after broadcast: %g from the union run", d);
    optimizer_free(o);
    optimizer_free(orf);
    mlp_free(&m);
    mlp_free(&ref);
    CK_AGREE();
}
END_TEST

/* One allreduce per view, fused by the runtime: with the default threshold the four
 * contiguous gradient tensors go in one ring pass with no copy; with fusion off, four passes. */
START_TEST(gradients_fused_into_one_ring_pass)
{
    mlp m;
    mlp_init(&m, 5);
    optimizer *o =
        hvd_distributed_optimizer_ex(sgd_create(&m.ps, 0.1f, 0.9f), HVD_COMPRESS_NONE, 1);
    size_t saved = hvd_fusion_threshold();
    size_t c0, t0, b0, c1, t1, b1;
    for (int off = 0; off < 2; off++) {
        hvd_set_fusion_threshold(off ? 0 : HVD_DEFAULT_FUSION_THRESHOLD);
        mlp_grad(&m, 0, B);
        hvd_fusion_stats(&c0, &t0, &b0);
        optimizer_step(o, &m.ps);
        hvd_fusion_stats(&c1, &t1, &b1);
        size_t want_calls = off ? 4 : 1;
        CK_EXPECT(c1 - c0 == want_calls && t1 - t0 == 4 && b1 == b0,
                  "fusion %s: %zu ring passes for %zu tensors, %zu bytes copied (want %zu, 4, 0)",
                  off ? "off" : "on", c1 - c0, t1 - t0, b1 - b0, want_calls);
    }
    hvd_set_fusion_threshold(saved);
    optimizer_free(o);
    mlp_free(&m);
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("distributed");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sgd_equals_one_rank_on_the_union);
    tcase_add_test(tc, novograd_equals_one_rank_on_the_union);
    tcase_add_test(tc, fp16_compression_close_to_exact);
    tcase_add_test(tc, backward_passes_per_step_accumulates_locally);
    tcase_add_test(tc, broadcast_parameters_from_nonzero_root);
    tcase_add_test(tc, broadcast_optimizer_state_from_nonzero_root);
    tcase_add_test(tc, different_starts_identical_after_broadcast);
    tcase_add_test(tc, gradients_fused_into_one_ring_pass);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
