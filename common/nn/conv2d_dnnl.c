/* conv2d_dnnl.c — conv2d.h's convolution through oneDNN. See conv2d_dnnl.h.
 * Public: conv2d_dnnl_work_floats, conv2d_dnnl_forward, conv2d_dnnl_backward,
 *         conv2d_dnnl_backward_set, conv2d_dnnl_set_chunk, conv2d_dnnl_set_algo,
 *         conv2d_dnnl_algo, conv2d_dnnl_prefers_nchw16c, conv2d_dnnl_release.
 *
 * With conv2d_dims.blocked the caller's activations are nChw16c (16-channel multiples; images
 * still outermost, so the pieces below are contiguous too): where oneDNN prefers that layout
 * too, as its AVX-512 kernels do, no activation is reordered; elsewhere the same reorders run
 * between nChw16c and whatever oneDNN prefers, so results stay right on any CPU.
 *
 * One plan per shape (dims + whether there is a bias): the forward, backward-data and
 * backward-weights primitives with oneDNN's preferred layouts ("any"), and the reorders between
 * those layouts and the caller's NCHW / OIHW buffers. A tensor whose preferred layout already is
 * the caller's (e.g. the 1-channel input of the stem) is passed through without a copy.
 *
 * The batch goes through in pieces of chunk_images() images (the workspace then does not depend
 * on the batch size, and a piece's blocked copies are still in cache when the next primitive
 * reads them); the weights are reordered once per call, the pieces' dW and db are added up.
 *
 * Workspace (floats, 16-float aligned pieces; weight-sized ones first so that their offsets are
 * the same for every piece size):
 *   forward   [weights blocked][src blocked][dst blocked]
 *   backward  [weights for bwd-data][diff weights][diff bias][diff_dst blocked][src blocked,
 *             later diff_src blocked][diff_dst for bwd-data if its layout differs]
 * Backward runs backward-weights first, so its blocked src can be overwritten by diff_src.
 */
#ifdef HVDLAB_DNNL

#include "nn/conv2d_dnnl.h"

#include <ctype.h>
#include <errno.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "base/threads.h"

/* A reorder between two layouts of one tensor; p == NULL when the layouts are equal. */
typedef struct {
    dnnl_primitive_t p;
    dnnl_memory_t from, to;
} xfer;

typedef struct plan {
    conv2d_dims d;
    int bias;
    int bf16;    /* built for conv2d_dnnl_set_bf16(1): see build() */
    int threads; /* oneDNN fixes its split of the work when a primitive is created */
    int algo;    /* the setting it was built for: ALGO_DIRECT or ALGO_AUTO */
    struct plan *next;
    /* forward */
    dnnl_primitive_t fwd;
    dnnl_memory_t f_src, f_wei, f_bia, f_dst;
    xfer f_src_in, f_wei_in, f_dst_out;
    size_t f_off_src, f_off_dst, f_off_wei, f_floats;
    /* backward weights */
    dnnl_primitive_t bww;
    dnnl_memory_t w_src, w_dw, w_db, w_ddst;
    xfer w_src_in, w_ddst_in, w_dw_out; /* w_dw_out adds (sum post-op) */
    /* backward data */
    dnnl_primitive_t bwd;
    dnnl_memory_t d_dsrc, d_wei, d_ddst;
    xfer d_ddst_in, d_wei_in, d_dsrc_out; /* d_dsrc_out adds */
    xfer d_dsrc_set;                      /* overwrites (p NULL: diff_src is NCHW already) */
    int d_ddst_shared;                    /* bwd-data reads backward-weights' blocked diff_dst */
    size_t b_off_ddst, b_off_src, b_off_ddst_d, b_off_wei, b_off_dw, b_off_db, b_floats;
} plan;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static plan *plans;
static dnnl_engine_t engine;
static dnnl_stream_t stream;

#define DNNL_OK(call, d)                                                                         \
    do {                                                                                         \
        dnnl_status_t st_ = (call);                                                              \
        if (st_ != dnnl_success)                                                                 \
            fatal_error("conv2d_dnnl: %s failed (status %d) for conv %dx%d %d->%d on %dx%dx%d",   \
                        #call, (int)st_, (d)->k, (d)->k, (d)->cin, (d)->cout, (d)->n, (d)->h,       \
                        (d)->w);                                                                   \
    } while (0)

/* Workspace floats for a tensor of layout md, rounded up to 16 (a bf16 tensor of an odd size
 * takes a whole float for its last element). */
static size_t floats_of(const dnnl_memory_desc_t *md)
{
    return ((dnnl_memory_desc_get_size(md) + sizeof(float) - 1) / sizeof(float) + 15) &
           ~(size_t)15;
}

static dnnl_memory_t mem(const dnnl_memory_desc_t *md, const conv2d_dims *d)
{
    dnnl_memory_t m;
    DNNL_OK(dnnl_memory_create(&m, md, engine, DNNL_MEMORY_NONE), d);
    return m;
}

/* from -> to; with add = 1 the reorder adds into `to` (sum post-op, scale 1). */
static xfer make_xfer(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, int add,
                      const conv2d_dims *d)
{
    xfer x = {NULL, NULL, NULL};
    if (!add && dnnl_memory_desc_equal(from, to))
        return x;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if (add) {
        DNNL_OK(dnnl_primitive_attr_create(&attr), d);
        DNNL_OK(dnnl_post_ops_create(&po), d);
        DNNL_OK(dnnl_post_ops_append_sum(po, 1.0f), d);
        DNNL_OK(dnnl_primitive_attr_set_post_ops(attr, po), d);
    }
    dnnl_primitive_desc_t pd;
    DNNL_OK(dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, attr), d);
    DNNL_OK(dnnl_primitive_create(&x.p, pd), d);
    dnnl_primitive_desc_destroy(pd);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    x.from = mem(from, d);
    x.to = mem(to, d);
    return x;
}

static void free_xfer(xfer *x)
{
    if (!x->p)
        return;
    dnnl_primitive_destroy(x->p);
    dnnl_memory_destroy(x->from);
    dnnl_memory_destroy(x->to);
}

static void set(dnnl_memory_t m, const void *p, const conv2d_dims *d)
{
    DNNL_OK(dnnl_memory_set_data_handle(m, (void *)p), d);
}

static void run(dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args, const conv2d_dims *d)
{
    DNNL_OK(dnnl_primitive_execute(p, stream, nargs, args), d);
}

static void run_xfer(xfer *x, const void *from, void *to, const conv2d_dims *d)
{
    set(x->from, from, d);
    set(x->to, to, d);
    const dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, x->from}, {DNNL_ARG_TO, x->to}};
    run(x->p, 2, a, d);
}

/* Where a tensor of layout md lives for the primitive: the caller's buffer if no reorder is
 * needed, else the workspace piece at off (reordered from user first when `in`). */
static void *stage_in(xfer *x, const void *user, float *work, size_t off, const conv2d_dims *d)
{
    if (!x->p)
        return (void *)user;
    run_xfer(x, user, work + off, d);
    return work + off;
}

static size_t take(size_t *top, const dnnl_memory_desc_t *md)
{
    size_t at = *top;
    *top += floats_of(md);
    return at;
}

enum { ALGO_DIRECT = 0, ALGO_AUTO = 1 };
enum { PASS_FWD = 0, PASS_BWD_DATA = 1, PASS_BWD_WEIGHTS = 2 };

/* The algorithm of one pass of one layer under setting `algo`. auto: oneDNN's Winograd
 * F(4x4, 3x3) ("jit_wino_4x3", 2.25x fewer multiplications than direct) for the forward and
 * backward-data passes of 3x3 layers with 32 or more input channels, direct elsewhere. Measured
 * (kernels alone, batch pieces of 41-128 images, 1 thread, AVX-512): Winograd takes 0.64-0.88x
 * the time of direct on the 32- and 64-channel layers of wrn-16-1 but 1.2-1.3x on 16->16 28x28 and
 * 7-8x on the 1-channel stem; backward-weights stays direct (oneDNN 2.6's Winograd one crashed
 * (SIGSEGV in its kernel) on small batches in test_conv_backends, and oneDNN's own
 * convolution_auto never picks it for these shapes). Fixed by shape, not timed at run time: the
 * same setting gives the same bits run after run and on every rank. */
static dnnl_alg_kind_t pass_algo(int algo, int pass, const conv2d_dims *d)
{
    if (algo == ALGO_AUTO && d->k == 3 && d->cin >= 32 && pass != PASS_BWD_WEIGHTS)
        return dnnl_convolution_winograd;
    return dnnl_convolution_direct;
}

/* The primitive descriptor of one pass with algorithm alg, or NULL where oneDNN has no
 * implementation of it (Winograd: only some shapes and CPUs). hint: the forward one. */
static dnnl_primitive_desc_t conv_pd(int pass, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *src,
                                     const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *bia,
                                     const dnnl_memory_desc_t *dst, const conv2d_dims *d,
                                     const_dnnl_primitive_desc_t hint)
{
    const dnnl_dims_t strides = {1, 1}, pad = {d->k / 2, d->k / 2};
    dnnl_convolution_desc_t cd;
    if (pass == PASS_FWD)
        DNNL_OK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, alg, src, wei, bia,
                                                   dst, strides, pad, pad), d);
    else if (pass == PASS_BWD_WEIGHTS)
        DNNL_OK(dnnl_convolution_backward_weights_desc_init(&cd, alg, src, wei, bia, dst, strides,
                                                            pad, pad), d);
    else
        DNNL_OK(dnnl_convolution_backward_data_desc_init(&cd, alg, src, wei, dst, strides, pad,
                                                         pad), d);
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &cd, NULL, engine, hint) != dnnl_success)
        return NULL;
    return pd;
}

/* conv_pd with the algorithm `algo` picks for this pass, direct where that one has none. */
static dnnl_primitive_desc_t pass_pd(int algo, int pass, const dnnl_memory_desc_t *src,
                                     const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *bia,
                                     const dnnl_memory_desc_t *dst, const conv2d_dims *d,
                                     const_dnnl_primitive_desc_t hint)
{
    const dnnl_alg_kind_t alg = pass_algo(algo, pass, d);
    dnnl_primitive_desc_t pd = conv_pd(pass, alg, src, wei, bia, dst, d, hint);
    if (!pd && alg != dnnl_convolution_direct)
        pd = conv_pd(pass, dnnl_convolution_direct, src, wei, bia, dst, d, hint);
    if (!pd)
        fatal_error("conv2d_dnnl: no oneDNN convolution for conv %dx%d %d->%d on %dx%dx%d", d->k,
                    d->k, d->cin, d->cout, d->n, d->h, d->w);
    return pd;
}

/* The caller's layout of an activation with c channels (conv2d_dims.blocked). When it is
 * oneDNN's preferred one too, the xfers below are NULL: no reorder at all. */
static dnnl_format_tag_t act_tag(const conv2d_dims *d, int c)
{
    return d->blocked && c % 16 == 0 ? dnnl_nChw16c : dnnl_nchw;
}

/* bf16 (--precision bf16 on the CPU): what the convolutions multiply, the input, the weights
 * and the gradient coming in, is rounded to bf16 by the reorders into oneDNN's layouts (the
 * caller's tensors and the weights' master copy stay f32), and oneDNN accumulates in f32 and
 * writes f32: the output, the gradient going out, the weights' and the bias's gradients. As
 * torch.autocast's CPU convolutions do, except that the output is not rounded to bf16. */
static plan *build(const conv2d_dims *d, int bias, int algo, int bf16)
{
    plan *p = calloc(1, sizeof *p);
    if (!p)
        fatal_error("conv2d_dnnl: out of memory");
    p->d = *d;
    p->bias = bias;
    p->bf16 = bf16;
    const dnnl_data_type_t lo = bf16 ? dnnl_bf16 : dnnl_f32;
    const dnnl_dims_t sd = {d->n, d->cin, d->h, d->w}, wd = {d->cout, d->cin, d->k, d->k},
                      bd = {d->cout}, dd = {d->n, d->cout, d->h, d->w};
    dnnl_memory_desc_t src_any, wei_any, dst_any, bia, src_u, wei_u, dst_u;
    dnnl_memory_desc_t dsrc_any, dwei_any, ddst_any; /* the backward passes' f32 / lo sides */
    DNNL_OK(dnnl_memory_desc_init_by_tag(&src_any, 4, sd, lo, dnnl_format_tag_any), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_any, 4, wd, lo, dnnl_format_tag_any), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_any, 4, dd, dnnl_f32, dnnl_format_tag_any), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dsrc_any, 4, sd, dnnl_f32, dnnl_format_tag_any), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dwei_any, 4, wd, dnnl_f32, dnnl_format_tag_any), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&ddst_any, 4, dd, lo, dnnl_format_tag_any), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&bia, 1, bd, dnnl_f32, dnnl_x), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&src_u, 4, sd, dnnl_f32, act_tag(d, d->cin)), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_u, 4, wd, dnnl_f32, dnnl_oihw), d);
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_u, 4, dd, dnnl_f32, act_tag(d, d->cout)), d);

    /* forward */
    dnnl_primitive_desc_t fpd, wpd, dpd;
    fpd = pass_pd(algo, PASS_FWD, &src_any, &wei_any, bias ? &bia : NULL, &dst_any, d, NULL);
    DNNL_OK(dnnl_primitive_create(&p->fwd, fpd), d);
    const dnnl_memory_desc_t *fs = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *fw = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *fd = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
    p->f_src = mem(fs, d);
    p->f_wei = mem(fw, d);
    p->f_bia = mem(&bia, d);
    p->f_dst = mem(fd, d);
    p->f_src_in = make_xfer(&src_u, fs, 0, d);
    p->f_wei_in = make_xfer(&wei_u, fw, 0, d);
    p->f_dst_out = make_xfer(fd, &dst_u, 0, d);
    size_t top = 0; /* weights first: their offset is the same for every piece size */
    p->f_off_wei = take(&top, fw);
    p->f_off_src = take(&top, fs);
    p->f_off_dst = take(&top, fd);
    p->f_floats = top;

    /* backward weights (with bias gradient) */
    wpd = pass_pd(algo, PASS_BWD_WEIGHTS, &src_any, &dwei_any, &bia, &ddst_any, d, fpd);
    DNNL_OK(dnnl_primitive_create(&p->bww, wpd), d);
    const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(wpd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wdw = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0);
    const dnnl_memory_desc_t *wdb = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 1);
    const dnnl_memory_desc_t *wdd = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0);
    p->w_src = mem(ws, d);
    p->w_dw = mem(wdw, d);
    p->w_db = mem(wdb, d);
    p->w_ddst = mem(wdd, d);
    p->w_src_in = make_xfer(&src_u, ws, 0, d);
    p->w_ddst_in = make_xfer(&dst_u, wdd, 0, d);
    p->w_dw_out = make_xfer(wdw, &wei_u, 1, d);

    /* backward data */
    dpd = pass_pd(algo, PASS_BWD_DATA, &dsrc_any, &wei_any, NULL, &ddst_any, d, fpd);
    DNNL_OK(dnnl_primitive_create(&p->bwd, dpd), d);
    const dnnl_memory_desc_t *ds = dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_src_md, 0);
    const dnnl_memory_desc_t *dw = dnnl_primitive_desc_query_md(dpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ddd = dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_dst_md, 0);
    p->d_dsrc = mem(ds, d);
    p->d_wei = mem(dw, d);
    p->d_ddst = mem(ddd, d);
    p->d_ddst_shared = dnnl_memory_desc_equal(ddd, wdd);
    p->d_ddst_in = p->d_ddst_shared ? (xfer){NULL, NULL, NULL} : make_xfer(&dst_u, ddd, 0, d);
    p->d_wei_in = make_xfer(&wei_u, dw, 0, d);
    p->d_dsrc_out = make_xfer(ds, &src_u, 1, d);
    p->d_dsrc_set = make_xfer(ds, &src_u, 0, d);

    top = 0; /* weight-sized pieces first, as above */
    p->b_off_wei = take(&top, dw);
    p->b_off_dw = take(&top, wdw);
    p->b_off_db = take(&top, wdb);
    p->b_off_ddst = take(&top, wdd);
    p->b_off_src = top; /* blocked src for bwd-weights, then diff_src for bwd-data */
    top += floats_of(ws) > floats_of(ds) ? floats_of(ws) : floats_of(ds);
    p->b_off_ddst_d = p->d_ddst_shared ? p->b_off_ddst : take(&top, ddd);
    p->b_floats = top;

    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(wpd);
    dnnl_primitive_desc_destroy(dpd);
    return p;
}

/* HVDLAB_CONV_ALGO=direct|auto or conv2d_dnnl_set_algo() (conv2d_dnnl.h). Default auto: with the
 * activations blocked (wrn_layout.c) it takes a wrn-16-1 step from about 89 to 85 ms, and three
 * seeds learned as much per epoch as under direct (docs/benchmarks.md, "Winograd"). */
static int algo_setting = -1; /* -1: not read yet */

static int algo_of(const char *name)
{
    if (strcmp(name, "direct") == 0)
        return ALGO_DIRECT;
    if (strcmp(name, "auto") == 0)
        return ALGO_AUTO;
    return -1;
}

static int current_algo(void)
{
    if (algo_setting < 0) {
        algo_setting = ALGO_AUTO;
        const char *e = getenv("HVDLAB_CONV_ALGO");
        if (e && *e) {
            if (algo_of(e) < 0) /* rank 0 says it: the value is the launcher's on every rank */
                fatal_warn(FATAL_ONCE_PER_JOB, "HVDLAB_CONV_ALGO=%s is not direct or auto; using "
                           "auto", e);
            else
                algo_setting = algo_of(e);
        }
    }
    return algo_setting;
}

int conv2d_dnnl_set_algo(const char *name)
{
    const int a = name ? algo_of(name) : -1;
    if (a < 0)
        return -1;
    algo_setting = a;
    return 0;
}

const char *conv2d_dnnl_algo(void) { return current_algo() == ALGO_AUTO ? "auto" : "direct"; }

static int bf16_setting; /* conv2d_dnnl_set_bf16 */

void conv2d_dnnl_set_bf16(int on) { bf16_setting = on != 0; }
int conv2d_dnnl_bf16(void) { return bf16_setting; }

/* AVX512_BF16 or AMX: oneDNN's own bf16 kernels, not its slower emulation on plain AVX-512
 * (bench/conv_micro --dtype bf16: brgconv:avx512_core_amx_bf16 on this kind of CPU). */
int conv2d_dnnl_bf16_native(void)
{
    return (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_bf16) ==
           dnnl_cpu_isa_avx512_core_bf16;
}

static plan *get_plan(const conv2d_dims *d, int bias, int bf16)
{
    const int threads = compute_threads(); /* also sets OpenMP's count for creation */
    const int algo = current_algo();
    pthread_mutex_lock(&lock);
    if (!engine) {
        DNNL_OK(dnnl_engine_create(&engine, dnnl_cpu, 0), d);
        DNNL_OK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), d);
    }
    plan *p = plans;
    while (p && !(memcmp(&p->d, d, sizeof *d) == 0 && p->bias == bias &&
                  p->threads == threads && p->algo == algo && p->bf16 == bf16))
        p = p->next;
    if (!p) {
        p = build(d, bias, algo, bf16);
        p->threads = threads;
        p->algo = algo;
        p->next = plans;
        plans = p;
    }
    pthread_mutex_unlock(&lock);
    return p;
}

/* Plans are keyed by every field of conv2d_dims: copy only those (no padding bytes). */
static conv2d_dims key_of(const conv2d_dims *d)
{
    conv2d_dims k;
    memset(&k, 0, sizeof k);
    k.n = d->n;
    k.cin = d->cin;
    k.h = d->h;
    k.w = d->w;
    k.cout = d->cout;
    k.k = d->k;
    k.blocked = d->blocked;
    return k;
}

/* Two reorders to the same weight layout (both NULL: the caller's own layout). The weights are
 * reordered once per call, not once per piece of the batch. */
static int same_weights(dnnl_memory_t a, dnnl_memory_t b)
{
    if (!a || !b)
        return a == b;
    const dnnl_memory_desc_t *ma, *mb;
    dnnl_memory_get_memory_desc(a, &ma);
    dnnl_memory_get_memory_desc(b, &mb);
    return dnnl_memory_desc_equal(ma, mb);
}

/* Images per primitive call. The batch goes through in pieces of this many images, so the
 * workspace does not depend on the batch size and a piece's blocked copies stay in cache
 * between the reorders and the convolution: input + output of a piece ≈ CHUNK_BYTES.
 * HVDLAB_DNNL_CHUNK=<images> overrides (for experiments). */
#define CHUNK_BYTES ((size_t)4 << 20)
#define CHUNK_MAX 4096 /* images: the workspace is sized for a whole piece, batch or not */

static int fixed_chunk = -1; /* -1: not read yet; 0: by size; > 0: images */

void conv2d_dnnl_set_chunk(int images) { fixed_chunk = images > 0 ? images : 0; }

/* HVDLAB_DNNL_CHUNK: unset or empty, by size; else a whole number from 1 to CHUNK_MAX, or one
 * line naming it (atoi read 1x as 1, and garbage or -1 as by size, in silence). */
static int chunk_from_env(void)
{
    const char *e = getenv("HVDLAB_DNNL_CHUNK");
    if (!e || !*e)
        return 0;
    char *end;
    errno = 0;
    const long v = strtol(e, &end, 10);
    if (!isdigit((unsigned char)e[0]) || *end || errno || v < 1 || v > CHUNK_MAX)
        fatal_error("HVDLAB_DNNL_CHUNK=%s: expected a whole number of images from 1 to %d "
                    "(unset: by size)", e, CHUNK_MAX);
    return (int)v;
}

static int chunk_images(const conv2d_dims *d)
{
    if (fixed_chunk < 0)
        fixed_chunk = chunk_from_env();
    if (fixed_chunk > 0)
        return fixed_chunk;
    const size_t per_image = (size_t)(d->cin + d->cout) * (size_t)d->h * (size_t)d->w * 4;
    const size_t nb = CHUNK_BYTES / (per_image ? per_image : 1);
    return nb < 1 ? 1 : nb > CHUNK_MAX ? CHUNK_MAX : (int)nb;
}

/* The plan for `images` images of d's shape. */
static plan *plan_for(const conv2d_dims *d, int images, int bias)
{
    conv2d_dims k = key_of(d);
    k.n = images;
    return get_plan(&k, bias, bf16_setting);
}

int conv2d_dnnl_prefers_nchw16c(const conv2d_dims *d)
{
    conv2d_dims k = key_of(d);
    k.n = chunk_images(d);
    k.blocked = 1;
    /* asked in f32 whatever the precision: in bf16 every activation is converted anyway, and
     * the layout is the f32 layers' (and a nChw16c f32 -> bf16 reorder is a plain copy) */
    const plan *p = get_plan(&k, 1, 0);
    /* caller's nChw16c == every pass's preferred layout for src/dst: no activation reorder */
    return !p->f_src_in.p && !p->f_dst_out.p && !p->w_src_in.p && !p->w_ddst_in.p &&
           !p->d_ddst_in.p && !p->d_dsrc_set.p;
}

size_t conv2d_dnnl_work_floats(const conv2d_dims *d)
{
    const plan *p = plan_for(d, chunk_images(d), 1);
    return p->f_floats > p->b_floats ? p->f_floats : p->b_floats;
}

void conv2d_dnnl_forward(float *out, const float *in, const float *w, const float *b,
                         const conv2d_dims *d, float *work)
{
    const size_t in_img = (size_t)d->cin * d->h * d->w, out_img = (size_t)d->cout * d->h * d->w;
    const int nb = chunk_images(d);
    compute_threads(); /* sets oneDNN's (OpenMP's) thread count */
    const plan *staged = NULL; /* the plan whose weight layout is in the workspace... */
    const void *wei = NULL;    /* ...at wei */
    for (int i0 = 0; i0 < d->n; i0 += nb) {
        const int m = d->n - i0 < nb ? d->n - i0 : nb;
        plan *p = plan_for(d, m, b != NULL);
        const float *x = in + (size_t)i0 * in_img;
        float *y = out + (size_t)i0 * out_img;
        set(p->f_src, stage_in(&p->f_src_in, x, work, p->f_off_src, d), d);
        if (!staged || !same_weights(staged->f_wei_in.to, p->f_wei_in.to)) {
            wei = stage_in(&p->f_wei_in, w, work, p->f_off_wei, d);
            staged = p;
        }
        set(p->f_wei, wei, d);
        float *dst = p->f_dst_out.p ? work + p->f_off_dst : y;
        set(p->f_dst, dst, d);
        if (b)
            set(p->f_bia, b, d);
        const dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, p->f_src}, {DNNL_ARG_WEIGHTS, p->f_wei},
                                      {DNNL_ARG_DST, p->f_dst}, {DNNL_ARG_BIAS, p->f_bia}};
        run(p->fwd, b ? 4 : 3, a, d);
        if (p->f_dst_out.p)
            run_xfer(&p->f_dst_out, dst, y, d);
    }
}

/* set: din = ∂L/∂in (a plain reorder out of oneDNN's layout, or none) instead of += (a reorder
 * with a sum post-op, which oneDNN 2.6 runs in its generic "jit:uni" kernel: 3-4x slower than
 * the plain "jit:blk" one on the 16-channel layers). */
static void backward(float *din, float *dw, float *db, const float *dout, const float *in,
                     const float *w, const conv2d_dims *d, float *work, int set_din)
{
    const size_t in_img = (size_t)d->cin * d->h * d->w, out_img = (size_t)d->cout * d->h * d->w;
    const int nb = chunk_images(d);
    compute_threads();
    const plan *staged = NULL; /* the plan whose bwd-data weight layout is in the workspace... */
    const void *wei = NULL;    /* ...at wei */
    for (int i0 = 0; i0 < d->n; i0 += nb) {
        const int m = d->n - i0 < nb ? d->n - i0 : nb;
        plan *p = plan_for(d, m, 1);
        const float *x = in + (size_t)i0 * in_img, *g = dout + (size_t)i0 * out_img;
        const void *ddst = stage_in(&p->w_ddst_in, g, work, p->b_off_ddst, d);
        if (dw || db) { /* this piece's dW, db, added to the caller's */
            set(p->w_src, stage_in(&p->w_src_in, x, work, p->b_off_src, d), d);
            set(p->w_ddst, ddst, d);
            set(p->w_dw, work + p->b_off_dw, d);
            set(p->w_db, work + p->b_off_db, d);
            const dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, p->w_src},
                                          {DNNL_ARG_DIFF_DST, p->w_ddst},
                                          {DNNL_ARG_DIFF_WEIGHTS, p->w_dw},
                                          {DNNL_ARG_DIFF_BIAS, p->w_db}};
            run(p->bww, 4, a, d);
            if (dw)
                run_xfer(&p->w_dw_out, work + p->b_off_dw, dw, d);
            if (db)
                for (int c = 0; c < d->cout; c++)
                    db[c] += work[p->b_off_db + (size_t)c];
        }
        if (din) {
            const void *dd = p->d_ddst_shared
                                 ? ddst
                                 : stage_in(&p->d_ddst_in, g, work, p->b_off_ddst_d, d);
            set(p->d_ddst, dd, d);
            if (!staged || !same_weights(staged->d_wei_in.to, p->d_wei_in.to)) {
                wei = stage_in(&p->d_wei_in, w, work, p->b_off_wei, d);
                staged = p;
            }
            set(p->d_wei, wei, d);
            float *user = din + (size_t)i0 * in_img;
            const int direct = set_din && !p->d_dsrc_set.p; /* bwd-data writes din itself */
            set(p->d_dsrc, direct ? user : work + p->b_off_src, d);
            const dnnl_exec_arg_t a[3] = {{DNNL_ARG_DIFF_DST, p->d_ddst},
                                          {DNNL_ARG_WEIGHTS, p->d_wei},
                                          {DNNL_ARG_DIFF_SRC, p->d_dsrc}};
            run(p->bwd, 3, a, d);
            if (!direct)
                run_xfer(set_din ? &p->d_dsrc_set : &p->d_dsrc_out, work + p->b_off_src, user, d);
        }
    }
}

void conv2d_dnnl_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                          const float *w, const conv2d_dims *d, float *work)
{
    backward(din, dw, db, dout, in, w, d, work, 0);
}

void conv2d_dnnl_backward_set(float *din, float *dw, float *db, const float *dout,
                              const float *in, const float *w, const conv2d_dims *d, float *work)
{
    backward(din, dw, db, dout, in, w, d, work, 1);
}

static void free_plan(plan *p)
{
    dnnl_primitive_destroy(p->fwd);
    dnnl_primitive_destroy(p->bww);
    dnnl_primitive_destroy(p->bwd);
    dnnl_memory_t ms[] = {p->f_src, p->f_wei, p->f_bia, p->f_dst, p->w_src, p->w_dw,
                          p->w_db,  p->w_ddst, p->d_dsrc, p->d_wei, p->d_ddst};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        dnnl_memory_destroy(ms[i]);
    xfer *xs[] = {&p->f_src_in, &p->f_wei_in, &p->f_dst_out, &p->w_src_in, &p->w_ddst_in,
                  &p->w_dw_out, &p->d_ddst_in, &p->d_wei_in, &p->d_dsrc_out, &p->d_dsrc_set};
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++)
        free_xfer(xs[i]);
    free(p);
}

void conv2d_dnnl_release(void)
{
    pthread_mutex_lock(&lock);
    while (plans) {
        plan *next = plans->next;
        free_plan(plans);
        plans = next;
    }
    if (engine) {
        dnnl_stream_destroy(stream);
        dnnl_engine_destroy(engine);
        engine = NULL;
    }
    pthread_mutex_unlock(&lock);
}

#endif /* HVDLAB_DNNL */
