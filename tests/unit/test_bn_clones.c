/* test_bn_clones.c — common/nn/bn.c's target clones give the same bits.
 *
 * bn.c's per-channel workers are built for x86-64-v4 (AVX-512), AVX2 and the baseline and picked
 * at load time, so two machines of one job, or a run and its resume on another machine, may run
 * different clones; the kit promises the same results. mk/bn_clones.mk builds bn.c once per
 * target (public names suffixed _v4, _avx2, _base); every public function of the three builds
 * runs here on the same inputs and must give identical outputs, batch statistics, running
 * statistics and gradients (memcmp). Shapes: the batch-norm layers of wrn-16-1 (16 channels at
 * 28x28, 32 at 14x14, 64 at 7x7) and wrn-16-4's 64 at 28x28, at batch 16, and rows with a tail
 * after the 8-float lanes (H·W = 30); dropout 0.3. A clone this CPU cannot run is skipped (said
 * on stdout); the baseline always runs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "nn/bn.h"
#include "nn/layer_math.h"

typedef void fwd_fn(float *, const float *, const float *, const float *, float *, float *,
                    float *, float *, const bn_dims *);
typedef void infer_fn(float *, const float *, const float *, const float *, const float *,
                      const float *, const bn_dims *);
typedef void bwd_fn(float *, float *, float *, const float *, const float *, const float *,
                    const float *, const float *, const bn_dims *);
typedef void relu_fwd_fn(float *, const float *, const float *, float, uint64_t, const float *,
                         const float *, float *, float *, float *, float *, const bn_dims *);
typedef void relu_infer_fn(float *, const float *, const float *, const float *, const float *,
                           const float *, const float *, const bn_dims *);
typedef void relu_bwd_fn(float *, float *, float *, const float *, const float *, const float *,
                         float, const float *, const float *, const float *, const float *,
                         const bn_dims *);

#define DECLARE(t)                                                                                 \
    fwd_fn bn_forward_train_##t;                                                                   \
    infer_fn bn_forward_infer_##t;                                                                 \
    bwd_fn bn_backward_##t;                                                                        \
    relu_fwd_fn bn_relu_forward_train_##t;                                                         \
    relu_infer_fn bn_relu_forward_infer_##t;                                                       \
    relu_bwd_fn bn_relu_backward_##t;
DECLARE(v4)
DECLARE(avx2)
DECLARE(base)

typedef struct {
    const char *name;
    fwd_fn *fwd;
    infer_fn *infer;
    bwd_fn *bwd;
    relu_fwd_fn *relu_fwd;
    relu_infer_fn *relu_infer;
    relu_bwd_fn *relu_bwd;
} clone;

#define CLONE(t)                                                                                   \
    {#t, bn_forward_train_##t, bn_forward_infer_##t, bn_backward_##t,                          \
     bn_relu_forward_train_##t, bn_relu_forward_infer_##t, bn_relu_backward_##t}
static const clone clones[3] = {CLONE(base), CLONE(avx2), CLONE(v4)};

/* Whether this CPU can run clone k (__builtin_cpu_supports takes a literal). */
static int cpu_runs(int k)
{
    __builtin_cpu_init();
    if (k == 1)
        return __builtin_cpu_supports("avx2");
    return k == 0 || __builtin_cpu_supports("x86-64-v4");
}

enum { OUT, MEAN, INVSTD, RMEAN, RVAR, DIN, DGAMMA, DBETA, NBUF };
static const char *buf_name[NBUF] = {"out", "mean", "invstd", "running mean", "running var",
                                     "din", "dgamma", "dbeta"};

typedef struct {
    float *b[NBUF];
} outputs;

static uint64_t rng = 1717;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

/* Every public function of clone k once, in the model's order, on the same inputs. form: 0 plain
 * batch norm, 1 bn + relu + dropout (mask from out), 2 bn + relu + add (mask recomputed). */
static void run(const clone *k, int form, const bn_dims *d, const float *x, const float *add,
                const float *dout, const float *g, const float *be, outputs *o)
{
    const size_t n = (size_t)d->n * d->c * d->hw, C = (size_t)d->c;
    const size_t len[NBUF] = {n, C, C, C, C, n, C, C};
    for (int i = 0; i < NBUF; i++) {
        o->b[i] = calloc(len[i], sizeof(float));
        if (i == RVAR)
            for (size_t c = 0; c < C; c++)
                o->b[i][c] = 1.0f;
    }
    float **b = o->b;
    const uint64_t key = 0xb0b0ull;
    if (form == 0) {
        k->fwd(b[OUT], x, g, be, b[MEAN], b[INVSTD], b[RMEAN], b[RVAR], d);
        k->bwd(b[DIN], b[DGAMMA], b[DBETA], dout, x, g, b[MEAN], b[INVSTD], d);
        float *inf = malloc(n * sizeof *inf);
        k->infer(inf, x, g, be, b[RMEAN], b[RVAR], d);
        for (size_t i = 0; i < n; i++) /* fold the inference output into out */
            b[OUT][i] += inf[i];
        free(inf);
    } else {
        const float p = form == 1 ? 0.3f : 0.0f;
        const float *a = form == 2 ? add : NULL;
        k->relu_fwd(b[OUT], x, a, p, key, g, be, b[MEAN], b[INVSTD], b[RMEAN], b[RVAR], d);
        k->relu_bwd(b[DIN], b[DGAMMA], b[DBETA], dout, x, form == 1 ? b[OUT] : NULL, p, g, be,
                    b[MEAN], b[INVSTD], d);
        float *inf = malloc(n * sizeof *inf);
        k->relu_infer(inf, x, a, g, be, b[RMEAN], b[RVAR], d);
        for (size_t i = 0; i < n; i++)
            b[OUT][i] += inf[i];
        free(inf);
    }
}

START_TEST(clones_give_the_same_bits)
{
    const int shapes[5][3] = {{16, 16, 784}, {16, 32, 196}, {16, 64, 49}, {16, 64, 784},
                              {5, 3, 30}};
    int ran[3] = {0};
    for (int s = 0; s < 5; s++) {
        const bn_dims d = {.n = shapes[s][0], .c = shapes[s][1], .hw = shapes[s][2],
                           .eps = BN_EPS, .momentum = BN_MOMENTUM};
        const size_t n = (size_t)d.n * d.c * d.hw, C = (size_t)d.c;
        float *x = randf(n, -2, 2), *add = randf(n, -1, 1), *dout = randf(n, -1, 1);
        for (size_t i = 0; i < n; i++) /* channels with their own offsets and spreads */
            x[i] = x[i] * (float)(1 + (i / d.hw) % d.c) + 3.0f * (float)((i / d.hw) % d.c);
        float *g = randf(C, 0.5f, 1.5f), *be = randf(C, -0.5f, 0.5f);
        const size_t len[NBUF] = {n, C, C, C, C, n, C, C};
        for (int form = 0; form < 3; form++) {
            outputs ref;
            run(&clones[0], form, &d, x, add, dout, g, be, &ref);
            ran[0] = 1;
            for (int k = 1; k < 3; k++) {
                if (!cpu_runs(k))
                    continue;
                ran[k] = 1;
                outputs o;
                run(&clones[k], form, &d, x, add, dout, g, be, &o);
                for (int i = 0; i < NBUF; i++) {
                    CK_EXPECT(memcmp(ref.b[i], o.b[i], len[i] * sizeof(float)) == 0,
                              "%s differs between the %s and baseline builds (form %d, shape "
                              "%dx%dx%d)",
                              buf_name[i], clones[k].name, form, d.n, d.c, d.hw);
                    free(o.b[i]);
                }
            }
            for (int i = 0; i < NBUF; i++)
                free(ref.b[i]);
        }
        free(x), free(add), free(dout), free(g), free(be);
    }
    for (int k = 0; k < 3; k++)
        printf("test_bn_clones: %s build %s\n", clones[k].name,
               ran[k] ? "compared" : "skipped (this CPU lacks it)");
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bn_clones");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, clones_give_the_same_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
