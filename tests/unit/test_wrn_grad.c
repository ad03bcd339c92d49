/* test_wrn_grad.c — gradient checks of a residual block (1x1 shortcut, identity shortcut,
 * dropout) and of a whole tiny WideResNet, against central differences of double-precision
 * forwards written independently in ref_double.h and below.
 *
 * Block: L = Σ r·block(x); h = 1e-6 in double; tolerance 1e-4 of the largest |gradient| of each
 *   variable, floored at the block's largest gradient (float backward is ~1e-6 off).
 * Whole network: wrn-10-1 (all three groups, 1x1 shortcuts in groups 2 and 3, both pools) and
 *   wrn-16-1 (two blocks per group: identity blocks fed by blocks), batch 2, dropout 0,
 *   wd 1e-3, with random gammas, betas and biases so that no parameter sits at a special value;
 *   L = mean cross-entropy + wd·Σw² computed in double from the kit's parameters through the
 *   view table; up to 5 (wrn-10-1) or 2 (wrn-16-1) entries of every view, first and last
 *   included; h = 1e-6; tolerance 1e-4 relative to the largest |gradient| of the view, floored
 *   at 1e-3 of the largest gradient of the network (conv biases in front of a batch norm have
 *   an exact gradient of 0, where float rounding is all there is to see).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "lib/ref_double.h"
#include "model/wrn.h"
#include "model/wrn_block.h"

#define PREFILL 0.015625f
#define H_STEP 1e-6

static uint64_t rng = 777;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

static float *filled(size_t n, float v) { return const_floats(n, v); }

static void report(const char *what, ref_check rc, double tol)
{
    printf("  %-40s %5zu entries, worst error %.2e (tolerance %.0e)\n", what, rc.checked,
           rc.worst, tol);
    ck_assert_msg(rc.msg[0] == 0, "%s: %s", what, rc.msg);
    ck_assert_msg(rc.max_abs > 1e-3, "%s: gradient is trivially zero (max %g)", what, rc.max_abs);
}

/* ---- one block ------------------------------------------------------------------------------ */

enum { W1, B1, G1, BE1, W2, B2, G2, BE2, WS, BS, NPAR };
static const char *const par_name[NPAR] = {"conv1.w", "conv1.b", "bn1.gamma", "bn1.beta",
                                           "conv2.w", "conv2.b", "bn2.gamma", "bn2.beta",
                                           "short.w", "short.b"};

typedef struct {
    int B, cin, cout, H, W, has_short;
    double p;
    uint64_t key;
    double *x, *par[NPAR], *r, *t1, *t2, *out;
} block_ctx;

/* Double forward of the block, straight from its definition (wrn_block.h). */
static void ref_block(block_ctx *c)
{
    const int HW = c->H * c->W;
    const size_t n = (size_t)c->B * c->cout * HW;
    double **q = c->par;
    ref_conv(c->t1, c->x, q[W1], q[B1], c->B, c->cin, c->cout, c->H, c->W, 3);
    ref_bn(c->t2, c->t1, q[G1], q[BE1], c->B, c->cout, HW, BN_EPS, NULL, NULL);
    ref_relu(c->t2, n);
    ref_dropout(c->t2, n, c->p, c->key);
    ref_conv(c->t1, c->t2, q[W2], q[B2], c->B, c->cout, c->cout, c->H, c->W, 3);
    ref_bn(c->t2, c->t1, q[G2], q[BE2], c->B, c->cout, HW, BN_EPS, NULL, NULL);
    ref_relu(c->t2, n);
    if (c->has_short)
        ref_conv(c->out, c->x, q[WS], q[BS], c->B, c->cin, c->cout, c->H, c->W, 1);
    else
        memcpy(c->out, c->x, n * sizeof *c->out);
    for (size_t i = 0; i < n; i++)
        c->out[i] += c->t2[i];
}

static double block_loss(void *p)
{
    block_ctx *c = p;
    ref_block(c);
    double s = 0;
    for (size_t i = 0; i < (size_t)c->B * c->cout * c->H * c->W; i++)
        s += c->r[i] * c->out[i];
    return s;
}

static void check_block(int cin, int cout, float p)
{
    const int B = 3, H = 6, W = 5, HW = H * W;
    const size_t nx = (size_t)B * cin * HW, ny = (size_t)B * cout * HW;
    const size_t sz[NPAR] = {(size_t)cout * cin * 9, cout, cout, cout, (size_t)cout * cout * 9,
                             cout, cout, cout, (size_t)cout * cin, cout};
    const float lo[NPAR] = {-0.3f, -0.3f, 0.5f, -0.5f, -0.3f, -0.3f, 0.5f, -0.5f, -0.5f, -0.3f};
    const float hi[NPAR] = {0.3f, 0.3f, 1.5f, 0.5f, 0.3f, 0.3f, 1.5f, 0.5f, 0.5f, 0.3f};
    float *par[NPAR], *grad[NPAR];
    for (int i = 0; i < NPAR; i++) {
        par[i] = randf(sz[i], lo[i], hi[i]);
        grad[i] = filled(sz[i], PREFILL);
    }
    wrn_block blk = {.cin = cin, .cout = cout, .h = H, .w = W, .has_short = cin != cout,
                     .dropout = p, .ops = &WRN_OPS_CPU};
    wrn_conv *convs[3] = {&blk.conv1, &blk.conv2, &blk.shortcut};
    const int conv_par[3] = {W1, W2, WS}, conv_cin[3] = {cin, cout, cin}, conv_k[3] = {3, 3, 1};
    size_t work_n = 1;
    for (int i = 0; i < 3; i++) {
        wrn_conv *cv = convs[i];
        cv->d = (conv2d_dims){.cin = conv_cin[i], .h = H, .w = W, .cout = cout, .k = conv_k[i]};
        cv->ops = &WRN_OPS_CPU;
        cv->w = par[conv_par[i]], cv->b = par[conv_par[i] + 1];
        cv->dw = grad[conv_par[i]], cv->db = grad[conv_par[i] + 1];
        if (conv2d_work_floats(&cv->d) > work_n)
            work_n = conv2d_work_floats(&cv->d);
    }
    wrn_bn *bns[2] = {&blk.bn1, &blk.bn2};
    for (int i = 0; i < 2; i++) {
        wrn_bn *bn = bns[i];
        const int g = i ? G2 : G1;
        bn->d = (bn_dims){.c = cout, .hw = HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
        bn->ops = &WRN_OPS_CPU;
        bn->gamma = par[g], bn->beta = par[g + 1], bn->dgamma = grad[g], bn->dbeta = grad[g + 1];
        bn->run_mean = filled(cout, 0), bn->run_var = filled(cout, 1);
        bn->mean = filled(cout, 0), bn->invstd = filled(cout, 0);
    }
    blk.c1 = filled(ny, 0), blk.r1 = filled(ny, 0), blk.c2 = filled(ny, 0);
    float *x = randf(nx, -1, 1), *r = randf(ny, -1, 1), *out = filled(ny, 0);
    float *dx = filled(nx, PREFILL), *t1 = filled(ny, 0), *t2 = filled(ny, 0);
    float *work = filled(work_n, 0);
    const uint64_t key = 0xfeedull;

    wrn_block_forward(&blk, out, x, B, 1, key, work);
    wrn_block_backward(&blk, dx, r, x, B, key, t1, t2, work);

    block_ctx c = {B, cin, cout, H, W, cin != cout, p, key, ref_from_float(x, nx), {0},
                   ref_from_float(r, ny), calloc(ny, sizeof(double)), calloc(ny, sizeof(double)),
                   calloc(ny, sizeof(double))};
    for (int i = 0; i < NPAR; i++)
        c.par[i] = ref_from_float(par[i], sz[i]);
    ref_block(&c);
    double e = 0, m = 0;
    for (size_t i = 0; i < ny; i++) {
        e = fmax(e, fabs(out[i] - c.out[i]));
        m = fmax(m, fabs(c.out[i]));
    }
    ck_assert_msg(e < 1e-5 * m, "block forward off by %g of %g", e, m);

    ref_var v[1 + NPAR];
    int nv = 0;
    v[nv++] = (ref_var){"in", c.x, dx, nx, 0.0f}; /* overwritten, not added to */
    for (int i = 0; i < (blk.has_short ? NPAR : WS); i++)
        v[nv++] = (ref_var){par_name[i], c.par[i], grad[i], sz[i], PREFILL};
    char what[80];
    snprintf(what, sizeof what, "block %d->%d%s, dropout %.1f", cin, cout,
             blk.has_short ? " (1x1 shortcut)" : " (identity)", (double)p);
    /* conv biases in front of a batch norm have gradient 0: floor each variable's scale at the
     * largest gradient of the block */
    double gmax = 0;
    for (int i = 0; i < nv; i++)
        for (size_t j = 0; j < v[i].n; j++)
            gmax = fmax(gmax, fabs(v[i].grad[j] - v[i].prefill));
    report(what, ref_gradcheck(block_loss, &c, v, nv, 200, H_STEP, 1e-4, gmax), 1e-4);

    for (int i = 0; i < NPAR; i++)
        free(par[i]), free(grad[i]), free(c.par[i]);
    for (int i = 0; i < 2; i++)
        free(bns[i]->run_mean), free(bns[i]->run_var), free(bns[i]->mean), free(bns[i]->invstd);
    free(blk.c1), free(blk.r1), free(blk.c2), free(x), free(r), free(out);
    free(dx), free(t1), free(t2), free(work), free(c.x), free(c.r), free(c.t1), free(c.t2);
    free(c.out);
}

START_TEST(block_shortcut) { check_block(3, 5, 0.0f); }
END_TEST
START_TEST(block_identity) { check_block(4, 4, 0.0f); }
END_TEST
START_TEST(block_shortcut_dropout) { check_block(3, 5, 0.3f); }
END_TEST

/* ---- a whole network ------------------------------------------------------------------------ */

typedef struct {
    const param_set *ps;
    double *p;  /* double copy of ps->params, the variables */
    double *x;  /* (B, 1, 28, 28) */
    const int *y;
    int B, depth, width;
    double wd;
    double *buf[5]; /* scratch, each the largest activation */
} net_ctx;

static double *P(net_ctx *c, const char *fmt, const char *a, const char *b)
{
    char name[PARAM_NAME_LEN];
    snprintf(name, sizeof name, fmt, a, b);
    const param_view *v = params_find(c->ps->views, c->ps->nviews, name);
    ck_assert_msg(v != NULL, "no view %s", name);
    return c->p + v->offset;
}

/* Mean cross-entropy + wd·Σ(conv and dense kernels)², all in double. */
static double net_loss(void *ctx)
{
    net_ctx *c = ctx;
    const int B = c->B, n = (c->depth - 4) / 6;
    double *cur = c->buf[0], *t1 = c->buf[1], *t2 = c->buf[2], *nxt = c->buf[3];
    ref_conv(t1, c->x, P(c, "stem.conv.%s%s", "w", ""), P(c, "stem.conv.%s%s", "b", ""), B, 1,
             16, 28, 28, 3);
    ref_bn(cur, t1, P(c, "stem.bn.%s%s", "gamma", ""), P(c, "stem.bn.%s%s", "beta", ""), B, 16,
           784, BN_EPS, NULL, NULL);
    ref_relu(cur, (size_t)B * 16 * 784);
    int C = 16, S = 28;
    for (int g = 0; g < 3; g++) {
        const int cout = (16 << g) * c->width;
        for (int b = 0; b < n; b++) {
            char pre[32];
            snprintf(pre, sizeof pre, "g%d.b%d", g + 1, b);
            const size_t na = (size_t)B * cout * S * S;
            ref_conv(t1, cur, P(c, "%s.%s", pre, "conv1.w"), P(c, "%s.%s", pre, "conv1.b"), B, C,
                     cout, S, S, 3);
            ref_bn(t2, t1, P(c, "%s.%s", pre, "bn1.gamma"), P(c, "%s.%s", pre, "bn1.beta"), B,
                   cout, S * S, BN_EPS, NULL, NULL);
            ref_relu(t2, na);
            ref_conv(t1, t2, P(c, "%s.%s", pre, "conv2.w"), P(c, "%s.%s", pre, "conv2.b"), B,
                     cout, cout, S, S, 3);
            ref_bn(t2, t1, P(c, "%s.%s", pre, "bn2.gamma"), P(c, "%s.%s", pre, "bn2.beta"), B,
                   cout, S * S, BN_EPS, NULL, NULL);
            ref_relu(t2, na);
            if (C != cout)
                ref_conv(nxt, cur, P(c, "%s.%s", pre, "short.w"), P(c, "%s.%s", pre, "short.b"),
                         B, C, cout, S, S, 1);
            else
                memcpy(nxt, cur, na * sizeof *nxt);
            for (size_t i = 0; i < na; i++)
                nxt[i] += t2[i];
            double *t = cur;
            cur = nxt, nxt = t;
            C = cout;
        }
        if (g < 2) {
            ref_maxpool(nxt, cur, B, C, S, S);
            double *t = cur;
            cur = nxt, nxt = t;
            S /= 2;
        }
    }
    double *feat = c->buf[4], logits[8 * 10];
    ref_gap(feat, cur, B, C, S * S);
    ref_dense(logits, feat, P(c, "fc.%s%s", "w", ""), P(c, "fc.%s%s", "b", ""), B, C, 10);
    double l2 = 0;
    for (int v = 0; v < c->ps->nviews; v++) {
        const param_view *pv = &c->ps->views[v];
        if (pv->decay)
            for (size_t i = 0; i < pv->count; i++)
                l2 += c->p[pv->offset + i] * c->p[pv->offset + i];
    }
    return ref_xent(logits, c->y, B, 10) + c->wd * l2;
}

static void check_net(const char *model, int depth, size_t per_view)
{
    const int B = 2;
    const float wd = 1e-3f;
    char err[256];
    wrn_config cfg = {.dropout = 0.0f};
    ck_assert_msg(wrn_config_parse(model, &cfg, err, sizeof err) == 0, "%s", err);
    wrn_model *m = wrn_create(&cfg, B, 99, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    param_set *ps = wrn_params(m);
    for (int v = 0; v < ps->nviews; v++) { /* move gammas, betas and biases off 1 and 0 */
        const param_view *pv = &ps->views[v];
        if (pv->ndim != 1)
            continue;
        float *r = randf(pv->count, -0.3f, 0.3f);
        for (size_t i = 0; i < pv->count; i++)
            ps->params[pv->offset + i] += r[i];
        free(r);
    }
    float *x = randf((size_t)B * 784, -1.5f, 1.5f);
    const int y[2] = {4, 7};
    const wrn_result res = wrn_train_batch(m, x, y, B, wd);

    net_ctx c = {ps, ref_from_float(ps->params, ps->n), ref_from_float(x, (size_t)B * 784), y, B,
                 depth, 1, wd, {0}};
    for (int i = 0; i < 5; i++)
        c.buf[i] = calloc((size_t)B * 64 * 784, sizeof(double));
    const double loss = net_loss(&c);
    printf("  %s batch 2: kit loss %.7f, double %.7f\n", model, res.loss, loss);
    ck_assert_msg(fabs(res.loss - loss) < 1e-5 * loss, "loss %g vs %g", res.loss, loss);

    double gmax = 0;
    for (size_t i = 0; i < ps->n; i++)
        gmax = fmax(gmax, fabsf(ps->grads[i]));
    ref_var *v = calloc((size_t)ps->nviews, sizeof *v);
    for (int i = 0; i < ps->nviews; i++)
        v[i] = (ref_var){ps->views[i].name, c.p + ps->views[i].offset,
                         ps->grads + ps->views[i].offset, ps->views[i].count, 0.0f};
    char what[64];
    snprintf(what, sizeof what, "%s, every view", model);
    report(what, ref_gradcheck(net_loss, &c, v, ps->nviews, per_view, H_STEP, 1e-4, 1e-3 * gmax),
           1e-4);
    free(v);
    for (int i = 0; i < 5; i++)
        free(c.buf[i]);
    free(c.p), free(c.x), free(x);
    wrn_free(m);
}

/* wrn-10-1: one block per group; wrn-16-1: two, so blocks also take another block's output. */
START_TEST(whole_wrn_10_1) { check_net("wrn-10-1", 10, 5); }
END_TEST
START_TEST(whole_wrn_16_1) { check_net("wrn-16-1", 16, 2); }
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wrn_grad");
    TCase *t = tcase_create("gradcheck");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, block_shortcut);
    tcase_add_test(t, block_identity);
    tcase_add_test(t, block_shortcut_dropout);
    tcase_add_test(t, whole_wrn_10_1);
    tcase_add_test(t, whole_wrn_16_1);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
