/* test_wrn.c — the WideResNet against PyTorch, and its configuration, layout and weights.
 *
 * Fixture tests/fixtures/wrn-10-1-b8.{txt,bin}: made by tests/reference/wrn_torch.py (the same
 * network built with torch.nn, loaded with the kit's initial weights; see its header, `make
 * wrn-fixture` regenerates it). It holds, for wrn-10-1, seed 1234, batch 8, dropout 0,
 * wd 5e-4: the batch, PyTorch's training-mode logits, cross-entropy and L2 term, every gradient,
 * the updated batch-norm running statistics, inference-mode logits after that step, and PyTorch's
 * parameter counts for wrn-16-1/4/10. This test needs neither Python nor torch.
 * Tolerance: per tensor, max |kit − torch| <= 1e-4 · max |torch| (float32 on both sides, sums
 * in different orders: the differences seen are ~1e-6 of the tensor's scale); for gradients the
 * scale is at least 1e-2 of the largest gradient (see against_pytorch).
 * The bin file is little-endian float32 (what every machine this kit targets uses).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "model/wrn.h"
#include "model/wrn_internal.h" /* white box: the training logits, block activations, BN */
#include "nn/act.h"
#include "nn/blocked16.h"
#include "nn/layer_math.h"

#define FIXTURE "tests/fixtures/wrn-10-1-b8"
#define FIX_TOL 1e-4

typedef struct {
    char name[80];
    size_t off, count;
} fix_tensor;

typedef struct {
    char model[32], checksum[32];
    int batch;
    unsigned long long seed;
    double wd, xent, l2;
    size_t counts[3]; /* wrn-16-1, -4, -10 */
    fix_tensor t[256];
    int nt;
    float *data;
} fixture;

static void load_fixture(fixture *f)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(FIXTURE ".txt", "r");
    ck_assert_msg(fp != NULL, "cannot open " FIXTURE ".txt (run from the repository root)");
    char line[256], key[64], a[80];
    size_t total = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long long v1, v2;
        if (line[0] == '#' || sscanf(line, "%63s", key) != 1)
            continue;
        if (!strcmp(key, "tensor") && sscanf(line, "%*s %79s %llu %llu", a, &v1, &v2) == 3) {
            ck_assert_msg(f->nt < 256, "fixture index: more than 256 tensors");
            fix_tensor *t = &f->t[f->nt++];
            snprintf(t->name, sizeof t->name, "%s", a);
            t->off = v1, t->count = v2;
            total = v1 + v2 > total ? v1 + v2 : total;
        } else if (!strcmp(key, "param_count") && sscanf(line, "%*s %79s %llu", a, &v1) == 2) {
            f->counts[!strcmp(a, "wrn-16-1") ? 0 : !strcmp(a, "wrn-16-4") ? 1 : 2] = v1;
        } else if (!strcmp(key, "model")) {
            sscanf(line, "%*s %31s", f->model);
        } else if (!strcmp(key, "init_checksum")) {
            sscanf(line, "%*s %31s", f->checksum);
        } else if (!strcmp(key, "batch")) {
            sscanf(line, "%*s %d", &f->batch);
        } else if (!strcmp(key, "seed")) {
            sscanf(line, "%*s %llu", &f->seed);
        } else if (!strcmp(key, "wd")) {
            sscanf(line, "%*s %lf", &f->wd);
        } else if (!strcmp(key, "xent")) {
            sscanf(line, "%*s %lf", &f->xent);
        } else if (!strcmp(key, "l2")) {
            sscanf(line, "%*s %lf", &f->l2);
        }
    }
    fclose(fp);
    size_t len = 0;
    f->data = (float *)file_read(FIXTURE ".bin", &len);
    ck_assert_msg(f->data != NULL, "cannot read " FIXTURE ".bin");
    ck_assert_msg(len == total * sizeof(float), FIXTURE ".bin: %zu bytes, its index says %zu", len,
                  total * sizeof(float));
}

static const float *fix_get(const fixture *f, const char *name, size_t count)
{
    for (int i = 0; i < f->nt; i++)
        if (!strcmp(f->t[i].name, name)) {
            ck_assert_msg(f->t[i].count == count, "fixture %s: %zu values, kit has %zu", name,
                          f->t[i].count, count);
            return f->data + f->t[i].off;
        }
    ck_abort_msg("fixture has no tensor %s", name);
    return NULL;
}

/* max |a − ref| / max(max |ref|, floor) */
static double rel_err_floor(const float *a, const float *ref, size_t n, double floor)
{
    double e = 0, m = floor > 1e-30 ? floor : 1e-30;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - ref[i]));
        m = fmax(m, fabs(ref[i]));
    }
    return e / m;
}

static double rel_err(const float *a, const float *ref, size_t n) { return rel_err_floor(a, ref, n, 0); }

static wrn_model *make(const char *name, float dropout, size_t batch, uint64_t seed)
{
    char err[256];
    wrn_config cfg = {.dropout = dropout};
    ck_assert_msg(wrn_config_parse(name, &cfg, err, sizeof err) == 0, "%s", err);
    wrn_model *m = wrn_create(&cfg, batch, seed, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

START_TEST(against_pytorch)
{
    fixture f;
    load_fixture(&f);
    const int B = f.batch;
    wrn_model *m = make(f.model, 0.0f, (size_t)B, f.seed);
    param_set *ps = wrn_params(m);
    char sum[32];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)params_checksum(ps->params, ps->n));
    ck_assert_msg(!strcmp(sum, f.checksum),
                  "initial weights changed (checksum %s, fixture made from %s): if on purpose, "
                  "regenerate with `make wrn-fixture`", sum, f.checksum);
    const float *x = fix_get(&f, "x", (size_t)B * 784), *yf = fix_get(&f, "y", (size_t)B);
    int y[64];
    for (int i = 0; i < B; i++)
        y[i] = (int)yf[i];

    const wrn_result r = wrn_train_batch(m, x, y, (size_t)B, (float)f.wd);
    const double want = f.xent + f.l2;
    printf("  %s batch %d: loss kit %.7f torch %.7f (xent %.7f + l2 %.7f)\n", f.model, B, r.loss,
           want, f.xent, f.l2);
    ck_assert_msg(fabs(r.loss - want) < 1e-5 * want, "loss %.8f, torch %.8f", r.loss, want);
    ck_assert_uint_eq(r.count, (size_t)B);

    double worst = 0;
    const char *worst_name = "";
    const double el = rel_err(m->logits, fix_get(&f, "logits", (size_t)B * 10), (size_t)B * 10);
    ck_assert_msg(el < FIX_TOL, "training logits off by %.3g of their scale", el);
    /* conv biases in front of a batch norm have an exact gradient of 0, so both sides hold
     * rounding noise there: each tensor's scale is floored at 1e-2 of the largest gradient */
    double gmax = 0;
    for (size_t i = 0; i < ps->n; i++)
        gmax = fmax(gmax, fabsf(ps->grads[i]));
    for (int v = 0; v < ps->nviews; v++) {
        char name[96];
        snprintf(name, sizeof name, "grad:%s", ps->views[v].name);
        const double e = rel_err_floor(ps->grads + ps->views[v].offset,
                                       fix_get(&f, name, ps->views[v].count), ps->views[v].count,
                                       1e-2 * gmax);
        ck_assert_msg(e < FIX_TOL, "%s off by %.3g of its scale (tolerance %g)", name, e, FIX_TOL);
        if (e > worst)
            worst = e, worst_name = ps->views[v].name;
    }
    double worst_state = 0;
    for (int v = 0; v < ps->n_state_views; v++) {
        char name[96];
        snprintf(name, sizeof name, "state:%s", ps->state_views[v].name);
        const double e = rel_err(ps->state + ps->state_views[v].offset,
                                 fix_get(&f, name, ps->state_views[v].count),
                                 ps->state_views[v].count);
        ck_assert_msg(e < FIX_TOL, "%s off by %.3g (tolerance %g)", name, e, FIX_TOL);
        worst_state = fmax(worst_state, e);
    }
    float logits[64 * 10];
    const wrn_result ev = wrn_eval_batch(m, x, y, (size_t)B, logits);
    const double ee = rel_err(logits, fix_get(&f, "eval_logits", (size_t)B * 10), (size_t)B * 10);
    printf("  max error / scale: training logits %.1e, gradients %.1e (worst %s), running stats "
           "%.1e, inference logits %.1e (tolerance %.0e)\n", el, worst, worst_name, worst_state,
           ee, FIX_TOL);
    ck_assert_msg(ee < FIX_TOL, "inference logits off by %.3g", ee);
    ck_assert_uint_eq(ev.count, (size_t)B);
    ck_assert_int_ge(ev.correct, 0);
    ck_assert_int_le(ev.correct, B);
    wrn_free(m);
    free(f.data);
}
END_TEST

START_TEST(param_counts_match_pytorch)
{
    fixture f;
    load_fixture(&f);
    const char *names[3] = {"wrn-16-1", "wrn-16-4", "wrn-16-10"};
    for (int i = 0; i < 3; i++) {
        wrn_model *m = make(names[i], 0.01f, 1, 1);
        printf("  %-9s %9zu trainable parameters (PyTorch: %zu)\n", names[i], wrn_param_count(m),
               f.counts[i]);
        ck_assert_uint_eq(wrn_param_count(m), f.counts[i]);
        ck_assert_uint_gt(f.counts[i], 0);
        wrn_free(m);
    }
    free(f.data);
}
END_TEST

START_TEST(config_parse)
{
    wrn_config c = {.dropout = 0.25f};
    char err[256], name[WRN_NAME_LEN];
    ck_assert_msg(wrn_config_parse("wrn-16-4", &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.depth, 16);
    ck_assert_int_eq(c.width, 4);
    ck_assert_float_eq(c.dropout, 0.25f);
    wrn_config_name(&c, name, sizeof name);
    ck_assert_str_eq(name, "wrn-16-4");
    ck_assert_msg(wrn_config_parse("wrn-40-10", &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.depth, 40);
    ck_assert_int_eq(c.width, 10);
    const struct {
        const char *in, *msg;
    } bad[] = {
        {"wrn-15-2", "--model: 'wrn-15-2': depth-4 must be divisible by 6"},
        {"wrn-13-1", "--model: 'wrn-13-1': depth-4 must be divisible by 6"}, /* 9: by 3 only */
        {"wrn-4-2", "--model: 'wrn-4-2': depth must be at least 10"},
        {"wrn-16-0", "--model: 'wrn-16-0': width must be at least 1"},
        {"resnet-16-4", "--model: 'resnet-16-4': expected wrn-D-K"},
        {"wrn-16", "--model: 'wrn-16': expected wrn-D-K"},
        {"wrn-16-4x", "--model: 'wrn-16-4x': expected wrn-D-K"},
        {"wrn--16-4", "--model: 'wrn--16-4': expected wrn-D-K"},
        {"wrn-16-99999", "--model: 'wrn-16-99999': expected wrn-D-K"},
        {"", "--model: '': expected wrn-D-K"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = (wrn_config){.depth = 7, .width = 7};
        ck_assert_msg(wrn_config_parse(bad[i].in, &c, err, sizeof err) == -1, "%s", bad[i].in);
        ck_assert_msg(!strncmp(err, bad[i].msg, strlen(bad[i].msg)), "'%s' gave '%s'", bad[i].in,
                      err);
        ck_assert_msg(c.depth == 7 && c.width == 7, "'%s' changed the config to depth %d width %d",
                      bad[i].in, c.depth, c.width); /* untouched on error */
    }
    c = (wrn_config){.depth = 16, .width = 1, .dropout = 1.0f};
    ck_assert_ptr_null(wrn_create(&c, 8, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "dropout") != NULL, "dropout 1: %s", err);
    c.dropout = 0;
    ck_assert_ptr_null(wrn_create(&c, 0, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "max_batch") != NULL, "max_batch 0: %s", err);
    c.depth = 17;
    ck_assert_ptr_null(wrn_create(&c, 8, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "wrn-17-1") != NULL, "depth 17: %s", err);
}
END_TEST

/* Where a model is built is its config's device: zero is the CPU, never GPU 0; wrn_config_parse
 * keeps it, as it keeps the dropout; a device the build cannot serve is refused with one line. */
START_TEST(device_in_the_config)
{
    const wrn_device cpu = wrn_device_of(-1), gpu3 = wrn_device_of(3);
    ck_assert_msg(cpu.on_gpu == 0 && cpu.gpu == 0, "-1: on_gpu %d gpu %d", cpu.on_gpu, cpu.gpu);
    ck_assert_msg(gpu3.on_gpu == 1 && gpu3.gpu == 3, "3: on_gpu %d gpu %d", gpu3.on_gpu, gpu3.gpu);
    char err[256];
    wrn_config c = {.dropout = 0.0f, .device = gpu3};
    ck_assert_int_eq(wrn_config_parse("wrn-10-1", &c, err, sizeof err), 0);
    ck_assert_msg(c.device.on_gpu == 1 && c.device.gpu == 3, "parse changed the device");
    c.device = (wrn_device){0};
    wrn_model *m = wrn_create(&c, 2, 1, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(wrn_params(m)->device, 0);
    wrn_free(m);
    c.device = (wrn_device){.on_gpu = 1, .gpu = -1};
    ck_assert_ptr_null(wrn_create(&c, 2, 1, err, sizeof err));
    ck_assert_str_eq(err, "wrn_create: 'wrn-10-1': GPU -1 is not a device index");
#ifndef HVDLAB_CUDA
    c.device = wrn_device_of(0);
    ck_assert_ptr_null(wrn_create(&c, 2, 1, err, sizeof err));
    ck_assert_str_eq(err, "wrn_create: 'wrn-10-1' on GPU 0: this build has no CUDA (make CUDA=1)");
#endif
}
END_TEST

/* Views tile the buffers in order, names are unique, shapes and decay flags as documented. */
START_TEST(view_table)
{
    const struct {
        const char *model;
        int shortcut_g1;
    } cases[] = {{"wrn-16-1", 0}, {"wrn-10-2", 1}};
    for (int k = 0; k < 2; k++) {
        wrn_model *m = make(cases[k].model, 0.0f, 2, 5);
        const param_set *ps = wrn_params(m);
        const wrn_config *cfg = wrn_get_config(m);
        size_t off = 0;
        for (int v = 0; v < ps->nviews; v++) {
            const param_view *pv = &ps->views[v];
            size_t prod = 1;
            for (int d = 0; d < pv->ndim; d++)
                prod *= (size_t)pv->shape[d];
            ck_assert_msg(pv->offset == off && pv->count == prod, "%s layout", pv->name);
            off += pv->count;
            ck_assert_ptr_eq(params_find(ps->views, ps->nviews, pv->name), pv); /* unique */
            const int is_kernel = strlen(pv->name) > 2 && !strcmp(pv->name + strlen(pv->name) - 2, ".w");
            ck_assert_msg(pv->decay == is_kernel, "%s decay flag", pv->name);
        }
        ck_assert_uint_eq(off, ps->n);
        ck_assert_uint_eq(wrn_param_count(m), ps->n);
        off = 0;
        for (int v = 0; v < ps->n_state_views; v++) {
            ck_assert_msg(ps->state_views[v].offset == off, "%s at %zu, want %zu",
                          ps->state_views[v].name, ps->state_views[v].offset, off);
            off += ps->state_views[v].count;
        }
        ck_assert_uint_eq(off, ps->n_state);
        const int K = cfg->width, nbn = 1 + 2 * 3 * (cfg->depth - 4) / 6;
        ck_assert_int_eq(ps->n_state_views, 2 * nbn);
        const param_view *v = params_find(ps->views, ps->nviews, "g2.b0.conv1.w");
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->ndim, 4);
        ck_assert_int_eq(v->shape[0], 32 * K);
        ck_assert_int_eq(v->shape[1], 16 * K);
        ck_assert_int_eq(v->shape[2], 3);
        ck_assert_int_eq(v->shape[3], 3);
        v = params_find(ps->views, ps->nviews, "g3.b0.short.w");
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->shape[0], 64 * K);
        ck_assert_int_eq(v->shape[1], 32 * K);
        ck_assert_int_eq(v->shape[2], 1);
        ck_assert_ptr_null(params_find(ps->views, ps->nviews, "g3.b1.short.w"));
        ck_assert_int_eq(params_find(ps->views, ps->nviews, "g1.b0.short.w") != NULL,
                         cases[k].shortcut_g1);
        v = params_find(ps->views, ps->nviews, "fc.w");
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->ndim, 2);
        ck_assert_int_eq(v->shape[0], 10);
        ck_assert_int_eq(v->shape[1], 64 * K);
        ck_assert_ptr_nonnull(params_find(ps->state_views, ps->n_state_views, "g1.b0.bn2.var"));
        ck_assert_str_eq(ps->views[0].name, "stem.conv.w");
        ck_assert_str_eq(ps->views[ps->nviews - 1].name, "fc.b");
        wrn_free(m);
    }
}
END_TEST

/* Keras initialisers: he_normal (truncated at 2 sd), glorot_uniform, zeros, ones; seeded. */
START_TEST(initial_weights)
{
    wrn_model *m = make("wrn-16-4", 0.0f, 1, 42), *m2 = make("wrn-16-4", 0.0f, 1, 42);
    wrn_model *m3 = make("wrn-16-4", 0.0f, 1, 43);
    const param_set *ps = wrn_params(m);
    const uint64_t sum = params_checksum(ps->params, ps->n);
    ck_assert_uint_eq(sum, params_checksum(wrn_params(m2)->params, ps->n));
    ck_assert_uint_ne(sum, params_checksum(wrn_params(m3)->params, ps->n));
    for (int v = 0; v < ps->nviews; v++) {
        const param_view *pv = &ps->views[v];
        const float *w = ps->params + pv->offset;
        double s = 0, ss = 0, mx = 0;
        for (size_t i = 0; i < pv->count; i++)
            s += w[i], ss += (double)w[i] * w[i], mx = fmax(mx, fabs(w[i]));
        const double mean = s / pv->count, sd = sqrt(ss / pv->count - mean * mean);
        if (pv->ndim == 4) {
            const double fan_in = (double)pv->shape[1] * pv->shape[2] * pv->shape[3];
            const double want = sqrt(2 / fan_in); /* the truncated draw has this sd */
            const double tol = 5 * want / sqrt(2.0 * pv->count) + 0.002 * want;
            ck_assert_msg(fabs(sd - want) < tol, "%s: sd %g, want %g", pv->name, sd, want);
            ck_assert_msg(fabs(mean) < 5 * want / sqrt((double)pv->count), "%s: mean %g", pv->name, mean);
            ck_assert_msg(mx <= 2 * want / 0.87962566103423978 * (1 + 1e-6), "%s: max %g", pv->name, mx);
            if (pv->count > 10000) /* tails are cut: nothing beyond 2 sd of the untruncated normal */
                ck_assert_msg(mx > 1.9 * want / 0.8796, "%s: max %g too small", pv->name, mx);
        } else if (pv->ndim == 2) {
            const double lim = sqrt(6.0 / (pv->shape[0] + pv->shape[1]));
            ck_assert_msg(mx <= lim && mx > 0.95 * lim, "%s: max %g, limit %g", pv->name, mx, lim);
            ck_assert_msg(fabs(sd - lim / sqrt(3)) < 0.1 * lim, "%s: sd %g, want %g", pv->name, sd,
                          lim / sqrt(3));
        } else {
            const float want = strstr(pv->name, ".gamma") ? 1.0f : 0.0f;
            for (size_t i = 0; i < pv->count; i++)
                ck_assert_msg(w[i] == want, "%s[%zu] = %g", pv->name, i, w[i]);
        }
    }
    for (int v = 0; v < ps->n_state_views; v++) {
        const param_view *pv = &ps->state_views[v];
        const float want = strstr(pv->name, ".var") ? 1.0f : 0.0f;
        for (size_t i = 0; i < pv->count; i++)
            ck_assert_msg(ps->state[pv->offset + i] == want, "%s[%zu] = %g, want %g", pv->name, i,
                          ps->state[pv->offset + i], want);
    }
    wrn_free(m), wrn_free(m2), wrn_free(m3);
}
END_TEST

static float *batch(size_t B, int **y)
{
    float *x = malloc(B * 784 * sizeof *x);
    *y = malloc(B * sizeof **y);
    for (size_t i = 0; i < B * 784; i++)
        x[i] = sinf(0.37f * (float)(i % 784) + (float)(i / 784)) + 0.001f * (float)(i % 97);
    for (size_t i = 0; i < B; i++)
        (*y)[i] = (int)((i * 3 + 1) % 10);
    return x;
}

/* Elements of block b's dropout output r1 (B images) that are not relu(bn1(c1)) times the mask
 * of training step `step`: element i (flat NCHW) dropped when lm_uniform01(key, i) < p, else
 * scaled by 1/(1-p), key = dropout_key(seed, step, b) (act.h, layer_math.h). bn1 with the batch
 * statistics the training forward saved. */
static size_t mask_mismatches(const wrn_model *m, int b, int B, uint64_t step)
{
    const wrn_block *blk = &m->blocks[b];
    const wrn_bn *bn = &blk->bn1;
    const size_t HW = (size_t)blk->h * blk->w, n = (size_t)B * blk->cout * HW;
    const uint64_t key = dropout_key(m->seed, step, (uint32_t)b);
    const double p = blk->dropout;
    /* a blocked model's activations are nChw16c: read them as NCHW (the mask's index is) */
    float *c1 = malloc(n * sizeof *c1), *r1 = malloc(n * sizeof *r1);
    if (m->blocked) {
        nchw_from_nchw16c(c1, blk->c1, B, blk->cout, (int)HW);
        nchw_from_nchw16c(r1, blk->r1, B, blk->cout, (int)HW);
    } else {
        memcpy(c1, blk->c1, n * sizeof *c1);
        memcpy(r1, blk->r1, n * sizeof *r1);
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t c = i / HW % (size_t)blk->cout;
        const double pre = fmax(0.0, (double)bn->gamma[c] * ((c1[i] - bn->mean[c]) *
                                                             (double)bn->invstd[c]) + bn->beta[c]);
        const double want = lm_uniform01(key, i) < p ? 0.0 : pre / (1 - p);
        bad += fabs(r1[i] - want) > 1e-5 * (1 + fabs(want));
    }
    free(c1), free(r1);
    return bad;
}

/* Sets every batch norm's running statistics of m to the batch statistics (mean, biased
 * variance) that the last training step of src used. */
static void running_from_batch(wrn_model *m, const wrn_model *src)
{
    wrn_bn *dst[64];
    const wrn_bn *from[64];
    int k = 0;
    dst[k] = &m->stem_bn, from[k++] = &src->stem_bn;
    for (int b = 0; b < m->nblocks && k + 2 <= 64; b++) {
        dst[k] = &m->blocks[b].bn1, from[k++] = &src->blocks[b].bn1;
        dst[k] = &m->blocks[b].bn2, from[k++] = &src->blocks[b].bn2;
    }
    for (int j = 0; j < k; j++)
        for (int c = 0; c < from[j]->d.c; c++) {
            const double is = from[j]->invstd[c];
            dst[j]->run_mean[c] = from[j]->mean[c];
            dst[j]->run_var[c] = (float)(1 / (is * is) - BN_EPS);
        }
}

/* A batch smaller than max_batch gives what a model built for that batch gives; dropout is
 * seeded (same seed, same result), keyed by the training step and the block, and off at
 * inference, which normalises with the running statistics. */
START_TEST(batch_size_dropout_and_modes)
{
    int *y;
    float *x = batch(5, &y);
    wrn_model *big = make("wrn-10-1", 0.2f, 8, 3), *exact = make("wrn-10-1", 0.2f, 3, 3);
    const param_set *pb = wrn_params(big), *pe = wrn_params(exact);
    const wrn_result rb = wrn_train_batch(big, x, y, 3, 0.0f);
    const wrn_result re = wrn_train_batch(exact, x, y, 3, 0.0f);
    ck_assert_msg(fabs(rb.loss - re.loss) <= 1e-6 * re.loss, "%g vs %g", rb.loss, re.loss);
    const double eg = rel_err(pb->grads, pe->grads, pb->n);
    ck_assert_msg(eg < 1e-5, "gradients differ by %.3g of their scale (tolerance 1e-5)", eg);
    const double es = rel_err(pb->state, pe->state, pb->n_state);
    ck_assert_msg(es < 1e-6, "running statistics differ by %.3g (tolerance 1e-6)", es);

    /* training step k (k steps run before it) masks block b with dropout_key(seed, k, b): step 0,
     * then step 1, which therefore differs from step 0's mask */
    float *g1 = malloc(pb->n * sizeof *g1);
    for (uint64_t k = 0; k < 2; k++) {
        if (k == 1)
            wrn_train_batch(big, x, y, 3, 0.0f);
        for (int b = 0; b < big->nblocks; b++) {
            const wrn_block *blk = &big->blocks[b];
            const size_t n = (size_t)3 * blk->cout * blk->h * blk->w;
            const size_t bad = mask_mismatches(big, b, 3, k);
            ck_assert_msg(bad == 0, "training step %llu, block %d: %zu of %zu dropout outputs are "
                          "not relu(bn1) x the mask of dropout_key(seed, %llu, %d)",
                          (unsigned long long)k, b, bad, n, (unsigned long long)k, b);
            const size_t other = mask_mismatches(big, b, 3, 1 - k);
            ck_assert_msg(other > n / 20, "training step %llu, block %d: only %zu of %zu outputs "
                          "tell its mask from step %llu's", (unsigned long long)k, b, other, n,
                          (unsigned long long)(1 - k));
            printf("  dropout p=0.2, training step %llu, block %d: %zu outputs, all as keyed; "
                   "%zu would differ under step %llu's key\n", (unsigned long long)k, b, n, other,
                   (unsigned long long)(1 - k));
        }
    }
    /* without dropout, two steps on the same weights give the same gradients (up to the BN
     * running statistics, which training does not read) */
    wrn_model *nodrop = make("wrn-10-1", 0.0f, 8, 3);
    const param_set *pn = wrn_params(nodrop);
    wrn_train_batch(nodrop, x, y, 3, 0.0f);
    memcpy(g1, pn->grads, pn->n * sizeof *g1);
    wrn_train_batch(nodrop, x, y, 3, 0.0f);
    const double e2 = rel_err(pn->grads, g1, pn->n);
    ck_assert_msg(e2 < 1e-6, "no dropout: two steps' gradients differ by %.3g (tolerance 1e-6)",
                  e2);

    /* inference: deterministic, dropout off (a dropout model with the same weights and running
     * statistics gives the same logits as the no-dropout one) */
    float l1[50], l2[50], l3[50];
    memcpy(pe->params, pn->params, pn->n * sizeof(float));
    memcpy(pe->state, pn->state, pn->n_state * sizeof(float));
    wrn_eval_batch(exact, x, y, 3, l1);
    wrn_eval_batch(exact, x, y, 3, l2);
    wrn_eval_batch(nodrop, x, y, 3, l3);
    ck_assert_msg(memcmp(l1, l2, sizeof(float) * 30) == 0, "inference is not deterministic");
    const double e3 = rel_err(l1, l3, 30);
    ck_assert_msg(e3 < 1e-6, "inference logits with dropout 0.2 and 0 differ by %.3g", e3);

    /* inference = running statistics, no dropout: with the dropout model's running statistics
     * set to the batch statistics of a no-dropout training step, its inference logits are that
     * step's training logits, for the batch and for each image on its own (where the batch
     * statistics of one image would differ) */
    const wrn_result tr = wrn_train_batch(nodrop, x, y, 3, 0.0f);
    float tl[30];
    memcpy(tl, nodrop->logits, sizeof tl);
    running_from_batch(exact, nodrop);
    const wrn_result ev = wrn_eval_batch(exact, x, y, 3, l1);
    ck_assert_msg(fabs(ev.loss - tr.loss) <= 1e-5 * tr.loss,
                  "inference loss %.8f, training loss with these statistics %.8f", ev.loss,
                  tr.loss);
    const double eb = rel_err(l1, tl, 30);
    ck_assert_msg(eb < 1e-5, "inference logits off the training ones by %.3g (tolerance 1e-5)", eb);
    for (int i = 0; i < 3; i++) {
        const wrn_result e1 = wrn_eval_batch(exact, x + (size_t)i * 784, y + i, 1, l2);
        const double ei = rel_err(l2, tl + 10 * i, 10);
        ck_assert_msg(ei < 1e-5, "image %d alone: inference logits off the training ones by %.3g "
                      "(loss %.6f)", i, ei, e1.loss);
    }
    printf("  inference with running stats = a training step's batch stats: loss %.6f vs %.6f, "
           "logits off by %.1e\n", ev.loss, tr.loss, eb);
    /* an empty batch is a no-op with zero gradients */
    const wrn_result z = wrn_train_batch(nodrop, x, y, 0, 0.0f);
    ck_assert_uint_eq(z.count, 0);
    ck_assert_double_eq(z.loss, 0);
    ck_assert_float_eq(pn->grads[0], 0.0f);
    free(g1), free(x), free(y);
    wrn_free(big), wrn_free(exact), wrn_free(nodrop);
}
END_TEST

/* A few SGD steps on one batch drive its loss down (the model can learn). */
/* A batch whose activations cannot fit is refused with one line saying how much they take and
 * how much this process may take: a buffer that large faulted in would wake the out-of-memory
 * killer, which ends the process without a word. */
START_TEST(too_large_a_batch_is_named)
{
    wrn_config c = {.depth = 28, .width = 10, .dropout = 0.0f};
    char e[1024];
    ck_assert_ptr_null(wrn_create(&c, WRN_MAX_BATCH, 1, e, sizeof e));
    ck_assert_msg(strstr(e, "wrn_create: 'wrn-28-10' for batches of 1048576 images: its "
                            "activations take ") &&
                      strstr(e, " GB, more than the ") &&
                      strstr(e, " GB this process may still take (use smaller batches)"),
                  "%s", e);
}
END_TEST

START_TEST(learns_a_batch)
{
    int *y;
    float *x = batch(8, &y);
    wrn_model *m = make("wrn-10-1", 0.0f, 8, 11);
    param_set *ps = wrn_params(m);
    double first = 0, last = 0;
    for (int it = 0; it < 12; it++) {
        const wrn_result r = wrn_train_batch(m, x, y, 8, 5e-4f);
        first = it == 0 ? r.loss : first;
        last = r.loss;
        for (size_t i = 0; i < ps->n; i++)
            ps->params[i] -= 0.05f * ps->grads[i];
    }
    printf("  wrn-10-1, 12 SGD steps on one batch: loss %.4f -> %.4f\n", first, last);
    ck_assert_msg(last < 0.5 * first, "loss %.4f -> %.4f: not halved", first, last);
    free(x), free(y);
    wrn_free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wrn");
    TCase *t = tcase_create("wrn");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, against_pytorch);
    tcase_add_test(t, param_counts_match_pytorch);
    tcase_add_test(t, config_parse);
    tcase_add_test(t, device_in_the_config);
    tcase_add_test(t, view_table);
    tcase_add_test(t, initial_weights);
    tcase_add_test(t, batch_size_dropout_and_modes);
    tcase_add_test(t, learns_a_batch);
    tcase_add_test(t, too_large_a_batch_is_named);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
