/* wrn_build.c — WideResNet configuration, parameter layout, initial weights and buffers.
 * Public: wrn_device_of, wrn_config_parse, wrn_config_name, wrn_create, wrn_free, wrn_params,
 *         wrn_get_config, wrn_param_count (wrn.h). Forward and backward are in wrn.c.
 *
 * View names (model order; conv weights (Cout,Cin,k,k), dense (10, C), PyTorch order):
 *   stem.conv.w/.b  stem.bn.gamma/.beta
 *   gG.bB.short.w/.b (only when the width changes)  gG.bB.conv1.w/.b  gG.bB.bn1.gamma/.beta
 *   gG.bB.conv2.w/.b  gG.bB.bn2.gamma/.beta          (G = 1..3, B = 0..(D-4)/6-1)
 *   fc.w  fc.b
 * State views: <bn>.mean and <bn>.var for every batch norm, same order.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/fatal.h"
#include "base/memory.h"
#include "model/wrn_gpu.h"
#include "model/wrn_internal.h"
#include "model/wrn_place.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"

/* ---- configuration ---------------------------------------------------------------------- */

/* Up to 4 decimal digits at *p; advances *p. */
static int parse_num(const char **p, int *out)
{
    int v = 0, digits = 0;
    while (**p >= '0' && **p <= '9' && digits < 5) {
        v = v * 10 + (**p - '0');
        (*p)++;
        digits++;
    }
    *out = v;
    return digits >= 1 && digits <= 4;
}

wrn_device wrn_device_of(int gpu)
{
    return gpu < 0 ? (wrn_device){.on_gpu = 0, .gpu = 0} : (wrn_device){.on_gpu = 1, .gpu = gpu};
}

int wrn_config_parse(const char *name, wrn_config *cfg, char *err, size_t errlen)
{
    const char *p = name;
    int depth = 0, width = 0;
    if (strncmp(p, "wrn-", 4) != 0)
        goto bad_form;
    p += 4;
    if (!parse_num(&p, &depth) || *p++ != '-' || !parse_num(&p, &width) || *p != '\0')
        goto bad_form;
    if ((depth - 4) % 6 != 0)
        return errmsg_set(err, errlen, "--model",
                          "'%s': depth-4 must be divisible by 6 (depth 10, 16, 22, 28, 40, ...)",
                          name);
    if (depth < 10)
        return errmsg_set(err, errlen, "--model", "'%s': depth must be at least 10", name);
    if (width < 1)
        return errmsg_set(err, errlen, "--model", "'%s': width must be at least 1", name);
    cfg->depth = depth;
    cfg->width = width;
    return 0;
bad_form:
    return errmsg_set(err, errlen, "--model",
                      "'%s': expected wrn-D-K with depth D and width K (e.g. wrn-16-4)", name);
}

void wrn_config_name(const wrn_config *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "wrn-%d-%d", cfg->depth, cfg->width);
}

/* ---- view table ------------------------------------------------------------------------ */

typedef struct {
    param_view *v;
    int n, cap;
    size_t total; /* floats so far */
} view_table;

static void add_view(view_table *t, int decay, int ndim, const int *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void add_view(view_table *t, int decay, int ndim, const int *shape, const char *fmt, ...)
{
    param_view *pv = &t->v[t->n++]; /* capacity is computed exactly by the caller */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pv->name, sizeof pv->name, fmt, ap);
    va_end(ap);
    pv->ndim = ndim;
    pv->count = 1;
    for (int i = 0; i < PARAM_MAX_DIMS; i++) {
        pv->shape[i] = i < ndim ? shape[i] : 0;
        if (i < ndim)
            pv->count *= (size_t)shape[i];
    }
    pv->offset = t->total;
    pv->decay = decay;
    t->total += pv->count;
}

static void add_conv(view_table *t, const char *prefix, int cout, int cin, int k)
{
    add_view(t, 1, 4, (const int[]){cout, cin, k, k}, "%s.w", prefix);
    add_view(t, 0, 1, (const int[]){cout}, "%s.b", prefix);
}

static void add_bn(view_table *t, view_table *st, const char *prefix, int c)
{
    add_view(t, 0, 1, (const int[]){c}, "%s.gamma", prefix);
    add_view(t, 0, 1, (const int[]){c}, "%s.beta", prefix);
    add_view(st, 0, 1, (const int[]){c}, "%s.mean", prefix);
    add_view(st, 0, 1, (const int[]){c}, "%s.var", prefix);
}

static int group_width(const wrn_config *cfg, int g) { return (16 << g) * cfg->width; }

/* Input channels of block b (0-based, over all groups). */
static int block_cin(const wrn_config *cfg, int per_group, int b)
{
    if (b == 0)
        return WRN_STEM;
    return group_width(cfg, (b - 1) / per_group);
}

static void block_prefix(char *buf, size_t len, int per_group, int b)
{
    snprintf(buf, len, "g%d.b%d", b / per_group + 1, b % per_group);
}

static void build_views(const wrn_config *cfg, int per_group, view_table *t, view_table *st)
{
    char pre[PARAM_NAME_LEN], name[PARAM_NAME_LEN + 8];
    add_conv(t, "stem.conv", WRN_STEM, 1, 3);
    add_bn(t, st, "stem.bn", WRN_STEM);
    for (int b = 0; b < 3 * per_group; b++) {
        const int cin = block_cin(cfg, per_group, b), cout = group_width(cfg, b / per_group);
        block_prefix(pre, sizeof pre, per_group, b);
        if (cin != cout) {
            snprintf(name, sizeof name, "%s.short", pre);
            add_conv(t, name, cout, cin, 1);
        }
        snprintf(name, sizeof name, "%s.conv1", pre);
        add_conv(t, name, cout, cin, 3);
        snprintf(name, sizeof name, "%s.bn1", pre);
        add_bn(t, st, name, cout);
        snprintf(name, sizeof name, "%s.conv2", pre);
        add_conv(t, name, cout, cout, 3);
        snprintf(name, sizeof name, "%s.bn2", pre);
        add_bn(t, st, name, cout);
    }
    add_view(t, 1, 2, (const int[]){WRN_CLASSES, group_width(cfg, 2)}, "fc.w");
    add_view(t, 0, 1, (const int[]){WRN_CLASSES}, "fc.b");
}

/* ---- initial weights (Keras defaults) ---------------------------------------------------- */

static double uniform01(uint64_t *s) { return (double)(lm_splitmix64(s) >> 11) * 0x1.0p-53; }

/* Standard normal truncated to [-2, 2], as tf.random.truncated_normal (redraw outside). */
static double truncated_normal(uint64_t *s)
{
    for (;;) {
        const double u1 = 1.0 - uniform01(s), u2 = uniform01(s); /* u1 in (0, 1] */
        const double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        if (z >= -2.0 && z <= 2.0)
            return z;
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Conv kernels: he_normal = VarianceScaling(2, fan_in, truncated_normal): stddev
 * sqrt(2/fan_in)/0.87962566103423978 (the std of a unit normal truncated at ±2, so the result has
 * variance 2/fan_in), fan_in = Cin·k·k. Dense kernel: glorot_uniform, U(±sqrt(6/(in+out))).
 * Biases and beta 0, gamma 1; running mean 0, variance 1. One stream, views in model order. */
static void init_weights(param_set *ps, uint64_t seed)
{
    uint64_t s = lm_mix64(seed ^ 0x494e4954574e52ull); /* "INITWNR" */
    for (int v = 0; v < ps->nviews; v++) {
        const param_view *pv = &ps->views[v];
        float *w = ps->params + pv->offset;
        if (pv->ndim == 4) {
            const double fan_in = (double)pv->shape[1] * pv->shape[2] * pv->shape[3];
            const double sd = sqrt(2.0 / fan_in) / 0.87962566103423978;
            for (size_t i = 0; i < pv->count; i++)
                w[i] = (float)(sd * truncated_normal(&s));
        } else if (pv->ndim == 2) {
            const double lim = sqrt(6.0 / (pv->shape[0] + pv->shape[1]));
            for (size_t i = 0; i < pv->count; i++)
                w[i] = (float)(lim * (2.0 * uniform01(&s) - 1.0));
        } else {
            const float c = ends_with(pv->name, ".gamma") ? 1.0f : 0.0f;
            for (size_t i = 0; i < pv->count; i++)
                w[i] = c;
        }
    }
    for (int v = 0; v < ps->n_state_views; v++) {
        const param_view *pv = &ps->state_views[v];
        const float c = ends_with(pv->name, ".var") ? 1.0f : 0.0f;
        for (size_t i = 0; i < pv->count; i++)
            ps->state[pv->offset + i] = c;
    }
}

/* ---- wiring and buffers -------------------------------------------------------------------- */

static size_t offset_of(const param_view *views, int n, const char *prefix, const char *suffix)
{
    char name[PARAM_NAME_LEN + 16];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    const param_view *pv = params_find(views, n, name);
    return pv ? pv->offset : 0; /* every name asked for was added by build_views */
}

/* The layers' layout flags: nChw16c on the CPU, NHWC on a GPU (wrn_layout.c). */
typedef struct {
    int blocked, nhwc;
} layout;

static void wire_conv(param_set *ps, wrn_conv *c, const char *prefix, int cin, int cout, int k,
                      int hw, layout lo)
{
    const size_t ow = offset_of(ps->views, ps->nviews, prefix, "w");
    const size_t ob = offset_of(ps->views, ps->nviews, prefix, "b");
    c->d = (conv2d_dims){.n = 0, .cin = cin, .h = hw, .w = hw, .cout = cout, .k = k,
                         .blocked = lo.blocked, .nhwc = lo.nhwc};
    c->w = ps->params + ow;
    c->dw = ps->grads + ow;
    c->b = ps->params + ob;
    c->db = ps->grads + ob;
}

/* Bump allocator over the arena: a first pass with base NULL only measures. */
typedef struct {
    float *base;
    size_t used;
} carver;

static float *take(carver *cv, size_t floats)
{
    float *p = cv->base ? cv->base + cv->used : NULL;
    cv->used += (floats + 15) & ~(size_t)15; /* 64-byte aligned pieces */
    return p;
}

static void wire_bn(param_set *ps, wrn_bn *bn, carver *cv, const char *prefix, int c, int hw,
                    layout lo)
{
    const size_t og = offset_of(ps->views, ps->nviews, prefix, "gamma");
    const size_t ob = offset_of(ps->views, ps->nviews, prefix, "beta");
    bn->d = (bn_dims){
        .n = 0, .c = c, .hw = hw, .eps = BN_EPS, .momentum = BN_MOMENTUM, .nhwc = lo.nhwc};
    bn->gamma = ps->params + og;
    bn->dgamma = ps->grads + og;
    bn->beta = ps->params + ob;
    bn->dbeta = ps->grads + ob;
    bn->run_mean = ps->state + offset_of(ps->state_views, ps->n_state_views, prefix, "mean");
    bn->run_var = ps->state + offset_of(ps->state_views, ps->n_state_views, prefix, "var");
    bn->mean = take(cv, (size_t)c);
    bn->invstd = take(cv, (size_t)c);
    bn->blocked = lo.blocked;
}

/* Points every layer at its parameters and every activation into the arena (or, with
 * cv->base NULL, only measures the arena). */
static void wire(wrn_model *m, carver *cv)
{
    const wrn_config *cfg = &m->cfg;
    param_set *ps = &m->ps;
    const size_t B = m->max_batch;
    const size_t stem_act = B * WRN_STEM * WRN_IMG * WRN_IMG;
    size_t max_act = stem_act, work = 0;
    char pre[PARAM_NAME_LEN], name[PARAM_NAME_LEN + 8];
    const layout lo = {.blocked = m->blocked, .nhwc = m->nhwc};

    wire_conv(ps, &m->stem_conv, "stem.conv", 1, WRN_STEM, 3, WRN_IMG, lo);
    wire_bn(ps, &m->stem_bn, cv, "stem.bn", WRN_STEM, WRN_IMG * WRN_IMG, lo);
    m->stem_c = take(cv, stem_act);
    m->stem_r = take(cv, stem_act);
    work = conv2d_work_floats(&m->stem_conv.d);
    for (int b = 0; b < m->nblocks; b++) {
        wrn_block *blk = &m->blocks[b];
        const int g = b / m->per_group, hw = WRN_IMG >> g;
        blk->cin = block_cin(cfg, m->per_group, b);
        blk->cout = group_width(cfg, g);
        blk->h = blk->w = hw;
        blk->has_short = blk->cin != blk->cout;
        blk->dropout = cfg->dropout;
        block_prefix(pre, sizeof pre, m->per_group, b);
        if (blk->has_short) {
            snprintf(name, sizeof name, "%s.short", pre);
            wire_conv(ps, &blk->shortcut, name, blk->cin, blk->cout, 1, hw, lo);
        }
        snprintf(name, sizeof name, "%s.conv1", pre);
        wire_conv(ps, &blk->conv1, name, blk->cin, blk->cout, 3, hw, lo);
        snprintf(name, sizeof name, "%s.bn1", pre);
        wire_bn(ps, &blk->bn1, cv, name, blk->cout, hw * hw, lo);
        snprintf(name, sizeof name, "%s.conv2", pre);
        wire_conv(ps, &blk->conv2, name, blk->cout, blk->cout, 3, hw, lo);
        snprintf(name, sizeof name, "%s.bn2", pre);
        wire_bn(ps, &blk->bn2, cv, name, blk->cout, hw * hw, lo);
        const size_t act = B * (size_t)blk->cout * hw * hw;
        blk->c1 = take(cv, act);
        blk->r1 = take(cv, act);
        blk->c2 = take(cv, act);
        m->block_out[b] = take(cv, act);
        if (act > max_act)
            max_act = act;
        size_t w1 = conv2d_work_floats(&blk->conv1.d), w2 = conv2d_work_floats(&blk->conv2.d);
        work = w1 > work ? w1 : work;
        work = w2 > work ? w2 : work;
    }
    for (int g = 0; g < 2; g++)
        m->pool[g] = take(cv, B * group_width(cfg, g) * (size_t)(WRN_IMG >> (g + 1)) *
                                  (size_t)(WRN_IMG >> (g + 1)));
    const int c3 = group_width(cfg, 2);
    m->feat = take(cv, B * c3);
    m->dfeat = take(cv, B * c3);
    m->logits = take(cv, B * WRN_CLASSES);
    m->probs = take(cv, B * WRN_CLASSES);
    m->dlogits = take(cv, B * WRN_CLASSES);
    const size_t ow = offset_of(ps->views, ps->nviews, "fc", "w");
    const size_t ob = offset_of(ps->views, ps->nviews, "fc", "b");
    m->fc_w = ps->params + ow;
    m->fc_dw = ps->grads + ow;
    m->fc_b = ps->params + ob;
    m->fc_db = ps->grads + ob;
    m->fc = (dense_dims){.n = 0, .in = c3, .out = WRN_CLASSES};
    for (int i = 0; i < 4; i++)
        m->g[i] = take(cv, max_act);
    if (m->gpu)
        work = wrn_place_conv_work(m); /* cuDNN's plans, not the CPU backends' */
    m->work_floats = work ? work : 1;
    m->work = take(cv, m->work_floats);
}

#ifdef HVDLAB_CUDA
/* The same layout on the GPU, allocated once; the weights are drawn on the host (the same
 * numbers as a CPU model of this seed) and uploaded. */
static wrn_model *create_on_gpu(wrn_model *m, uint64_t seed, const char *name, char *err,
                                size_t errlen)
{
    param_set *ps = &m->ps;
    ps->device = 1;
    m->nhwc = wrn_layout_nhwc(); /* before wire: the convs' plans depend on it */
    carver cv = {0};
    wire(m, &cv); /* measure */
    const size_t bytes = (2 * ps->n + ps->n_state + cv.used) * sizeof(float) +
                         wrn_input_bytes(m->max_batch);
    ps->params = params_buffer_alloc(ps->n, 1);
    ps->grads = params_buffer_alloc(ps->n, 1);
    ps->state = params_buffer_alloc(ps->n_state, 1);
    m->arena = params_buffer_alloc(cv.used, 1);
    m->input = ps->params && ps->grads && ps->state && m->arena
                   ? wrn_input_create(m->max_batch) : NULL;
    if (!m->input) {
        wrn_place_oom(m, name, bytes, err, errlen);
        wrn_free(m);
        return NULL;
    }
    cv = (carver){.base = m->arena};
    wire(m, &cv);
    wrn_place_mark(m);
    param_set h = *ps;
    h.device = 0;
    h.params = memory_alloc(ps->n * sizeof(float));
    h.state = memory_alloc(ps->n_state * sizeof(float));
    if (!h.params || !h.state)
        fatal_error("wrn_create: out of host memory for the initial weights of '%s'", name);
    init_weights(&h, seed);
    params_from_host(ps->params, h.params, ps->n, 1);
    params_from_host(ps->state, h.state, ps->n_state, 1);
    memory_free(h.params);
    memory_free(h.state);
    return m;
}
#endif

wrn_model *wrn_create(const wrn_config *cfg, size_t max_batch, uint64_t seed, char *err,
                      size_t errlen)
{
    char name[WRN_NAME_LEN];
    wrn_config_name(cfg, name, sizeof name);
    if (cfg->depth < 10 || (cfg->depth - 4) % 6 != 0 || cfg->width < 1 || cfg->width > 9999 ||
        cfg->depth > 9999) {
        errmsg_set(err, errlen, "wrn_create", "'%s': not a valid wrn-D-K (D = 6n+4 >= 10, K >= 1)",
                   name);
        return NULL;
    }
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f)) {
        errmsg_set(err, errlen, "wrn_create", "dropout %g: must be in [0, 1)", cfg->dropout);
        return NULL;
    }
    if (max_batch < 1 || max_batch > WRN_MAX_BATCH) {
        errmsg_set(err, errlen, "wrn_create", "max_batch %zu: must be in 1..%u", max_batch,
                   WRN_MAX_BATCH);
        return NULL;
    }
    wrn_model *m = calloc(1, sizeof *m);
    if (!m)
        goto oom;
    m->cfg = *cfg;
    m->max_batch = max_batch;
    m->seed = seed;
    m->per_group = (cfg->depth - 4) / 6;
    m->nblocks = 3 * m->per_group;
    const int cap = 6 + 10 * m->nblocks, scap = 2 + 4 * m->nblocks;
    view_table t = {.v = calloc((size_t)cap, sizeof(param_view)), .cap = cap};
    view_table st = {.v = calloc((size_t)scap, sizeof(param_view)), .cap = scap};
    m->ps.views = t.v;
    m->ps.state_views = st.v;
    m->blocks = calloc((size_t)m->nblocks, sizeof *m->blocks);
    m->block_out = calloc((size_t)m->nblocks, sizeof *m->block_out);
    if (!t.v || !st.v || !m->blocks || !m->block_out)
        goto oom;
    build_views(cfg, m->per_group, &t, &st);
    m->ps.nviews = t.n;
    m->ps.n = t.total;
    m->ps.n_state_views = st.n;
    m->ps.n_state = st.total;
    m->gpu = wrn_place_wanted(cfg, name, err, errlen);
    if (m->gpu < 0) {
        m->gpu = 0; /* nothing is allocated yet: wrn_free frees host pointers, all NULL */
        wrn_free(m);
        return NULL;
    }
#ifdef HVDLAB_CUDA
    if (m->gpu)
        return create_on_gpu(m, seed, name, err, errlen);
#endif
    m->ps.params = memory_alloc(m->ps.n * sizeof(float));
    m->ps.grads = memory_alloc(m->ps.n * sizeof(float));
    m->ps.state = memory_alloc(m->ps.n_state * sizeof(float));
    if (!m->ps.params || !m->ps.grads || !m->ps.state)
        goto oom;
    m->blocked = wrn_layout_blocked(m); /* before wire: the convs' plans depend on it */
    carver cv = {0};
    wire(m, &cv); /* measure */
    m->arena = memory_alloc(cv.used * sizeof(float));
    if (!m->arena) { /* the activations grow with the batch: say by how much */
        const double need = (double)cv.used * sizeof(float), have = (double)memory_available();
        errmsg_set(err, errlen, "wrn_create", "'%s' for batches of %zu images: its activations "
                   "take %.1f GB, %s %.1f GB this process may still take (use smaller batches)",
                   name, max_batch, need / 1e9, need > have ? "more than the" : "and out of "
                   "memory with", have / 1e9);
        wrn_free(m);
        return NULL;
    }
    cv = (carver){.base = m->arena};
    wire(m, &cv);
    wrn_place_mark(m);
    init_weights(&m->ps, seed);
    return m;
oom:
    errmsg_set(err, errlen, "wrn_create", "'%s' at batch %zu: out of memory", name, max_batch);
    wrn_free(m);
    return NULL;
}

void wrn_free(wrn_model *m)
{
    if (!m)
        return;
#ifdef HVDLAB_CUDA
    if (m->gpu) {
        gpu_context_sync(); /* nothing queued may still use what goes now */
        wrn_input_free(m->input);
    }
#endif
    params_buffer_free(m->arena, m->gpu);
    params_buffer_free(m->ps.params, m->gpu);
    params_buffer_free(m->ps.grads, m->gpu);
    params_buffer_free(m->ps.state, m->gpu);
    free(m->ps.views);
    free(m->ps.state_views);
    free(m->blocks);
    free(m->block_out);
    free(m);
}

param_set *wrn_params(wrn_model *m) { return &m->ps; }
const wrn_config *wrn_get_config(const wrn_model *m) { return &m->cfg; }
size_t wrn_param_count(const wrn_model *m) { return m->ps.n; }
