/* conv_micro.c — micro-benchmark of the WRN convolution shapes: OpenBLAS im2col+sgemm vs oneDNN.
 *
 * For every distinct conv shape of wrn-16-K (batch N, default 128) it times forward, backward-data
 * and backward-weights (+bias) with:
 *   gemm   im2col of a chunk of images + one cblas_sgemm per chunk (OpenBLAS threads inside sgemm);
 *   gemm1  the same, but images split over OpenMP threads, each calling a 1-thread sgemm
 *          (backward-weights: one private dW per thread, summed in thread order);
 *   dnnl   oneDNN's own choice of layouts ("any": nChw8c on AVX2) WITHOUT the reorders, i.e. the
 *          cost if the activations already lived in oneDNN's blocked layout;
 *   dnnlr  the NCHW reorders that a drop-in NCHW oneDNN conv pays on top of `dnnl`
 *          (fwd: src in + dst out; bwd: diff_dst in, src in, diff_src out);
 *   dnnlp  oneDNN on plain NCHW memory (whatever implementation it picks for that).
 * Prints one line per shape and op (ms, GFLOP/s), then per-model sums weighted by how often each
 * shape occurs, as `name value unit` lines. Peer figures for the same shapes: bench/peer_torch_conv.py.
 *
 * Usage: conv_micro [--model 16-1,16-4] [--threads 1,2] [--batch 128] [--reps 3]
 *                   [--backends gemm,gemm1,dnnl,dnnlp] [--dtype f32|bf16]
 * --dtype bf16: oneDNN's activations and weights in bf16 (the bias, and bwd_w's diff weights, in
 * f32), accumulation in f32, to see whether this CPU's bf16 (AVX512_BF16, AMX) pays for a CPU
 * --precision bf16; the GEMM backends stay f32.
 * OPENBLAS_CORETYPE=Haswell in the environment selects OpenBLAS's AVX2 kernels.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#ifdef HVDLAB_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"

void openblas_set_num_threads(int);
char *openblas_get_corename(void);

#ifdef HVDLAB_DNNL
#define CHECK(x)                                                                    \
    do {                                                                            \
        dnnl_status_t s_ = (x);                                                     \
        if (s_ != dnnl_success) {                                                   \
            fprintf(stderr, "conv_micro: %s failed: %d (line %d)\n", #x, s_, __LINE__); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)
#endif

typedef struct {
    int cin, cout, hw, k, count; /* count: how many convs of this shape in the model */
} shape;

static float *falloc(size_t n) {
    float *p = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64 + 64);
    if (!p) { fprintf(stderr, "conv_micro: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return p;
}

/* ---- im2col + sgemm path -------------------------------------------------------------------- */

/* col (Cin*k*k, nb*HW): row (c,ky,kx), column (image j, y, x). */
static void im2col(float *col, const float *in /* (nb, Cin, H, W) */, int nb, int cin, int h, int w,
                   int k) {
    int hw = h * w, p = k / 2;
    size_t ld = (size_t)nb * hw;
    for (int c = 0; c < cin; c++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                float *row = col + ((size_t)(c * k + ky) * k + kx) * ld;
                for (int j = 0; j < nb; j++) {
                    const float *src = in + ((size_t)j * cin + c) * hw;
                    float *dst = row + (size_t)j * hw;
                    for (int y = 0; y < h; y++) {
                        int sy = y + ky - p;
                        float *d = dst + y * w;
                        if (sy < 0 || sy >= h) { memset(d, 0, w * sizeof(float)); continue; }
                        const float *s = src + sy * w;
                        int dx = kx - p;
                        int x0 = dx < 0 ? -dx : 0, x1 = dx > 0 ? w - dx : w;
                        for (int x = 0; x < x0; x++) d[x] = 0;
                        memcpy(d + x0, s + x0 + dx, (x1 - x0) * sizeof(float));
                        for (int x = x1; x < w; x++) d[x] = 0;
                    }
                }
            }
}

static void col2im_add(float *in /* (nb, Cin, H, W) += */, const float *col, int nb, int cin, int h,
                       int w, int k) {
    int hw = h * w, p = k / 2;
    size_t ld = (size_t)nb * hw;
    for (int c = 0; c < cin; c++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                const float *row = col + ((size_t)(c * k + ky) * k + kx) * ld;
                for (int j = 0; j < nb; j++) {
                    float *dst = in + ((size_t)j * cin + c) * hw;
                    const float *src = row + (size_t)j * hw;
                    for (int y = 0; y < h; y++) {
                        int sy = y + ky - p;
                        if (sy < 0 || sy >= h) continue;
                        int dx = kx - p;
                        int x0 = dx < 0 ? -dx : 0, x1 = dx > 0 ? w - dx : w;
                        float *d = dst + sy * w + dx;
                        const float *s = src + y * w;
                        for (int x = x0; x < x1; x++) d[x] += s[x];
                    }
                }
            }
}

/* Images per chunk: enough columns for an efficient GEMM, col small enough for L2/L3. */
static int chunk_images(const shape *s, int n) {
    int hw = s->hw * s->hw;
    int nb = (1024 + hw - 1) / hw;
    if (nb > n) nb = n;
    return nb < 1 ? 1 : nb;
}

typedef struct {
    float *col, *tmp; /* (CK, nb*HW), (Cout, nb*HW) */
} gemm_ws;

/* ranges of images [i0, i1) → forward into out */
static void gemm_fwd_range(float *out, const float *in, const float *wt, const float *b,
                           const shape *s, int i0, int i1, gemm_ws *ws) {
    int hw = s->hw * s->hw, ck = s->cin * s->k * s->k;
    int nb = chunk_images(s, i1 - i0);
    for (int i = i0; i < i1; i += nb) {
        int m = i1 - i < nb ? i1 - i : nb;
        const float *src = in + (size_t)i * s->cin * hw;
        if (m == 1 && s->k == 1) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->cout, hw, ck, 1.f, wt, ck, src,
                        hw, 0.f, out + (size_t)i * s->cout * hw, hw);
        } else {
            im2col(ws->col, src, m, s->cin, s->hw, s->hw, s->k);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->cout, m * hw, ck, 1.f, wt, ck,
                        ws->col, m * hw, 0.f, ws->tmp, m * hw);
            for (int j = 0; j < m; j++)
                for (int o = 0; o < s->cout; o++)
                    memcpy(out + ((size_t)(i + j) * s->cout + o) * hw,
                           ws->tmp + (size_t)o * m * hw + (size_t)j * hw, hw * sizeof(float));
        }
        for (int j = 0; j < m; j++)
            for (int o = 0; o < s->cout; o++) {
                float *d = out + ((size_t)(i + j) * s->cout + o) * hw;
                for (int x = 0; x < hw; x++) d[x] += b[o];
            }
    }
}

static void gemm_bwd_data_range(float *din, const float *dout, const float *wt, const shape *s,
                                int i0, int i1, gemm_ws *ws) {
    int hw = s->hw * s->hw, ck = s->cin * s->k * s->k;
    int nb = chunk_images(s, i1 - i0);
    for (int i = i0; i < i1; i += nb) {
        int m = i1 - i < nb ? i1 - i : nb;
        for (int j = 0; j < m; j++) /* gather dout (Cout, m*HW) */
            for (int o = 0; o < s->cout; o++)
                memcpy(ws->tmp + (size_t)o * m * hw + (size_t)j * hw,
                       dout + ((size_t)(i + j) * s->cout + o) * hw, hw * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ck, m * hw, s->cout, 1.f, wt, ck,
                    ws->tmp, m * hw, 0.f, ws->col, m * hw);
        col2im_add(din + (size_t)i * s->cin * hw, ws->col, m, s->cin, s->hw, s->hw, s->k);
    }
}

static void gemm_bwd_w_range(float *dw, float *db, const float *dout, const float *in,
                             const shape *s, int i0, int i1, gemm_ws *ws) {
    int hw = s->hw * s->hw, ck = s->cin * s->k * s->k;
    int nb = chunk_images(s, i1 - i0);
    for (int i = i0; i < i1; i += nb) {
        int m = i1 - i < nb ? i1 - i : nb;
        for (int j = 0; j < m; j++)
            for (int o = 0; o < s->cout; o++) {
                const float *g = dout + ((size_t)(i + j) * s->cout + o) * hw;
                memcpy(ws->tmp + (size_t)o * m * hw + (size_t)j * hw, g, hw * sizeof(float));
                float acc = 0;
                for (int x = 0; x < hw; x++) acc += g[x];
                db[o] += acc;
            }
        im2col(ws->col, in + (size_t)i * s->cin * hw, m, s->cin, s->hw, s->hw, s->k);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->cout, ck, m * hw, 1.f, ws->tmp,
                    m * hw, ws->col, m * hw, 1.f, dw, ck);
    }
}

#ifdef HVDLAB_DNNL
/* ---- oneDNN ------------------------------------------------------------------------------- */

typedef struct {
    dnnl_engine_t eng;
    dnnl_stream_t st;
} dnnl_ctx;

static dnnl_memory_t mem_of(dnnl_ctx *c, const dnnl_memory_desc_t *md) {
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, c->eng, DNNL_MEMORY_ALLOCATE));
    return m;
}

static dnnl_data_type_t act_dt = dnnl_f32; /* --dtype */

static double time_prim(dnnl_ctx *c, dnnl_primitive_t p, int nargs, dnnl_exec_arg_t *args,
                        int reps) {
    double best = 1e30;
    CHECK(dnnl_primitive_execute(p, c->st, nargs, args)); /* warm-up */
    CHECK(dnnl_stream_wait(c->st));
    for (int r = 0; r < reps; r++) {
        double t0 = timer_seconds();
        CHECK(dnnl_primitive_execute(p, c->st, nargs, args));
        CHECK(dnnl_stream_wait(c->st));
        double dt = timer_seconds() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

static double time_reorder(dnnl_ctx *c, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                           int reps) {
    if (dnnl_memory_desc_equal(from, to)) return 0;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, from, c->eng, to, c->eng, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    dnnl_memory_t a = mem_of(c, from), b = mem_of(c, to);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
    double t = time_prim(c, p, 2, args, reps);
    dnnl_memory_destroy(a);
    dnnl_memory_destroy(b);
    dnnl_primitive_destroy(p);
    dnnl_primitive_desc_destroy(pd);
    return t;
}

static const char *impl_of(dnnl_primitive_desc_t pd) {
    const char *s = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
    return s;
}

/* t[0..2] = fwd, bwd data, bwd weights; r[0..2] = reorder overheads (NCHW <-> chosen layout). */
static void dnnl_times(dnnl_ctx *c, const shape *s, int n, int plain, int reps, double t[3],
                       double r[3], char impl[3][48]) {
    dnnl_dims_t sd = {n, s->cin, s->hw, s->hw}, wd = {s->cout, s->cin, s->k, s->k},
                bd = {s->cout}, dd = {n, s->cout, s->hw, s->hw};
    dnnl_dims_t strides = {1, 1}, pad = {s->k / 2, s->k / 2};
    dnnl_format_tag_t act = plain ? dnnl_nchw : dnnl_format_tag_any;
    dnnl_memory_desc_t src, wei, bia, dst, src_nchw, dst_nchw;
    dnnl_memory_desc_t wdiff;
    CHECK(dnnl_memory_desc_init_by_tag(&src, 4, sd, act_dt, act));
    CHECK(dnnl_memory_desc_init_by_tag(&wei, 4, wd, act_dt, plain ? dnnl_oihw : dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&wdiff, 4, wd, dnnl_f32, plain ? dnnl_oihw : dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&bia, 1, bd, dnnl_f32, dnnl_x));
    CHECK(dnnl_memory_desc_init_by_tag(&dst, 4, dd, act_dt, act));
    CHECK(dnnl_memory_desc_init_by_tag(&src_nchw, 4, sd, act_dt, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&dst_nchw, 4, dd, act_dt, dnnl_nchw));

    dnnl_convolution_desc_t fd, bdd, bwd;
    CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct,
                                             &src, &wei, &bia, &dst, strides, pad, pad));
    dnnl_primitive_desc_t fpd, dpd, wpd;
    CHECK(dnnl_primitive_desc_create(&fpd, &fd, NULL, c->eng, NULL));
    CHECK(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src, &wei, &dst,
                                                   strides, pad, pad));
    CHECK(dnnl_primitive_desc_create(&dpd, &bdd, NULL, c->eng, fpd));
    CHECK(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &src, &wdiff,
                                                      &bia, &dst, strides, pad, pad));
    CHECK(dnnl_primitive_desc_create(&wpd, &bwd, NULL, c->eng, fpd));
    snprintf(impl[0], 48, "%s", impl_of(fpd));
    snprintf(impl[1], 48, "%s", impl_of(dpd));
    snprintf(impl[2], 48, "%s", impl_of(wpd));

    const dnnl_memory_desc_t *fsrc = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *fwei = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *fdst = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *dsrc = dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_src_md, 0);
    const dnnl_memory_desc_t *dwei = dnnl_primitive_desc_query_md(dpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ddst = dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_dst_md, 0);
    const dnnl_memory_desc_t *wsrc = dnnl_primitive_desc_query_md(wpd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wdw = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0);
    const dnnl_memory_desc_t *wdb = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 1);
    const dnnl_memory_desc_t *wdd = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0);

    dnnl_primitive_t fp, dp, wp;
    CHECK(dnnl_primitive_create(&fp, fpd));
    CHECK(dnnl_primitive_create(&dp, dpd));
    CHECK(dnnl_primitive_create(&wp, wpd));
    dnnl_memory_t m_src = mem_of(c, fsrc), m_wei = mem_of(c, fwei), m_bia = mem_of(c, &bia),
                  m_dst = mem_of(c, fdst), m_dsrc = mem_of(c, dsrc), m_dwei = mem_of(c, dwei),
                  m_ddst = mem_of(c, ddst), m_wsrc = mem_of(c, wsrc), m_dw = mem_of(c, wdw),
                  m_db = mem_of(c, wdb), m_wdd = mem_of(c, wdd);
    /* fill with something finite */
    dnnl_memory_t all[] = {m_src, m_wei, m_bia, m_dst, m_dsrc, m_dwei, m_ddst, m_wsrc, m_dw, m_db, m_wdd};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        void *h;
        const dnnl_memory_desc_t *md;
        CHECK(dnnl_memory_get_data_handle(all[i], &h));
        CHECK(dnnl_memory_get_memory_desc(all[i], &md));
        size_t bytes = dnnl_memory_desc_get_size(md);
        if (md->data_type == dnnl_bf16) /* the upper half of each float */
            for (size_t j = 0; j < bytes / 2; j++) {
                float v = (float)(j % 97) * 0.01f - 0.3f;
                uint32_t u;
                memcpy(&u, &v, sizeof u);
                ((uint16_t *)h)[j] = (uint16_t)(u >> 16);
            }
        else
            for (size_t j = 0; j < bytes / 4; j++) ((float *)h)[j] = (float)(j % 97) * 0.01f - 0.3f;
    }
    dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_WEIGHTS, m_wei}, {DNNL_ARG_BIAS, m_bia},
                            {DNNL_ARG_DST, m_dst}};
    dnnl_exec_arg_t da[] = {{DNNL_ARG_DIFF_SRC, m_dsrc}, {DNNL_ARG_WEIGHTS, m_dwei},
                            {DNNL_ARG_DIFF_DST, m_ddst}};
    dnnl_exec_arg_t wa[] = {{DNNL_ARG_SRC, m_wsrc}, {DNNL_ARG_DIFF_WEIGHTS, m_dw},
                            {DNNL_ARG_DIFF_BIAS, m_db}, {DNNL_ARG_DIFF_DST, m_wdd}};
    t[0] = time_prim(c, fp, 4, fa, reps);
    t[1] = time_prim(c, dp, 3, da, reps);
    t[2] = time_prim(c, wp, 4, wa, reps);
    /* What a NCHW caller pays on top (weights reorders are small and not counted). */
    r[0] = time_reorder(c, &src_nchw, fsrc, reps) + time_reorder(c, fdst, &dst_nchw, reps);
    r[1] = time_reorder(c, &dst_nchw, ddst, reps) + time_reorder(c, dsrc, &src_nchw, reps);
    r[2] = time_reorder(c, &dst_nchw, wdd, reps) + time_reorder(c, &src_nchw, wsrc, reps);
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) dnnl_memory_destroy(all[i]);
    dnnl_primitive_destroy(fp);
    dnnl_primitive_destroy(dp);
    dnnl_primitive_destroy(wp);
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(dpd);
    dnnl_primitive_desc_destroy(wpd);
}

#endif /* HVDLAB_DNNL */

/* ---- GEMM timing -------------------------------------------------------------------------- */

static void gemm_times(const shape *s, int n, int threads, int split, int reps, double t[3]) {
    int hw = s->hw * s->hw, ck = s->cin * s->k * s->k;
    size_t nin = (size_t)n * s->cin * hw, nout = (size_t)n * s->cout * hw;
    float *in = falloc(nin), *out = falloc(nout), *din = falloc(nin), *dout = falloc(nout);
    float *wt = falloc((size_t)s->cout * ck), *b = falloc(s->cout);
    int nt = split ? threads : 1;
    float *dw = falloc((size_t)nt * s->cout * ck), *db = falloc((size_t)nt * s->cout);
    gemm_ws ws[8];
    int nb = chunk_images(s, n);
    for (int i = 0; i < nt; i++) {
        ws[i].col = falloc((size_t)ck * nb * hw);
        ws[i].tmp = falloc((size_t)s->cout * nb * hw);
    }
    openblas_set_num_threads(split ? 1 : threads);
    for (int op = 0; op < 3; op++) {
        double best = 1e30;
        for (int r = 0; r <= reps; r++) {
            double t0 = timer_seconds();
            if (!split) {
                if (op == 0) gemm_fwd_range(out, in, wt, b, s, 0, n, &ws[0]);
                if (op == 1) gemm_bwd_data_range(din, dout, wt, s, 0, n, &ws[0]);
                if (op == 2) gemm_bwd_w_range(dw, db, dout, in, s, 0, n, &ws[0]);
            } else {
#pragma omp parallel num_threads(nt)
                {
                    int id = omp_get_thread_num();
                    int i0 = n * id / nt, i1 = n * (id + 1) / nt;
                    if (op == 0) gemm_fwd_range(out, in, wt, b, s, i0, i1, &ws[id]);
                    if (op == 1) gemm_bwd_data_range(din, dout, wt, s, i0, i1, &ws[id]);
                    if (op == 2)
                        gemm_bwd_w_range(dw + (size_t)id * s->cout * ck, db + (size_t)id * s->cout,
                                         dout, in, s, i0, i1, &ws[id]);
                }
                if (op == 2) /* fixed-order reduction of the per-thread dW */
                    for (int i = 1; i < nt; i++) {
                        for (size_t j = 0; j < (size_t)s->cout * ck; j++)
                            dw[j] += dw[(size_t)i * s->cout * ck + j];
                        for (int j = 0; j < s->cout; j++) db[j] += db[(size_t)i * s->cout + j];
                    }
            }
            double dt = timer_seconds() - t0;
            if (r > 0 && dt < best) best = dt; /* r = 0 is warm-up */
        }
        t[op] = best;
    }
    for (int i = 0; i < nt; i++) {
        free(ws[i].col);
        free(ws[i].tmp);
    }
    free(in); free(out); free(din); free(dout); free(wt); free(b); free(dw); free(db);
}

/* ---- driver ------------------------------------------------------------------------------- */

static int model_shapes(int depth, int k, shape *out) {
    int nblk = (depth - 4) / 6, ns = 0;
    shape all[64];
    int na = 0;
    all[na++] = (shape){1, 16, 28, 3, 1};
    int cin = 16, hw = 28;
    for (int g = 0; g < 3; g++) {
        int wdt = 16 * k << g;
        for (int b = 0; b < nblk; b++) {
            all[na++] = (shape){cin, wdt, hw, 3, 1};
            all[na++] = (shape){wdt, wdt, hw, 3, 1};
            if (cin != wdt) all[na++] = (shape){cin, wdt, hw, 1, 1};
            cin = wdt;
        }
        if (g < 2) hw /= 2;
    }
    for (int i = 0; i < na; i++) { /* merge equal shapes */
        int j;
        for (j = 0; j < ns; j++)
            if (out[j].cin == all[i].cin && out[j].cout == all[i].cout && out[j].hw == all[i].hw &&
                out[j].k == all[i].k)
                break;
        if (j < ns) out[j].count++;
        else out[ns++] = all[i];
    }
    return ns;
}

/* name is one of the comma-separated words of list */
static int has(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == 0)) return 1;
    return 0;
}

static double flops(const shape *s, int n) {
    return 2.0 * n * s->hw * s->hw * s->cout * s->cin * s->k * s->k;
}

int main(int argc, char **argv) {
    const char *models = "16-1,16-4", *threads = "1,2", *backends = "gemm,gemm1,dnnl,dnnlp";
    int n = 128, reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) models = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = argv[i + 1];
        else if (!strcmp(argv[i], "--batch")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--backends")) backends = argv[i + 1];
#ifdef HVDLAB_DNNL
        else if (!strcmp(argv[i], "--dtype") && !strcmp(argv[i + 1], "f32")) act_dt = dnnl_f32;
        else if (!strcmp(argv[i], "--dtype") && !strcmp(argv[i + 1], "bf16")) act_dt = dnnl_bf16;
#endif
        else { fprintf(stderr, "conv_micro: unknown option %s\n", argv[i]); return 2; }
    }
    printf("openblas_core %s\n", openblas_get_corename());
#ifdef HVDLAB_DNNL
    dnnl_ctx c;
    CHECK(dnnl_engine_create(&c.eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&c.st, c.eng, dnnl_stream_default_flags));
#else
    printf("built without oneDNN (libdnnl-dev): GEMM backends only\n");
#endif
    static const char *opname[3] = {"fwd", "bwd_data", "bwd_w"};
    char mbuf[256], tbuf[64];
    snprintf(mbuf, sizeof mbuf, "%s", models);
    for (char *mp = strtok(mbuf, ","); mp; mp = strtok(NULL, ",")) {
        int depth, k;
        if (sscanf(mp, "%d-%d", &depth, &k) != 2) return 2;
        shape sh[32];
        int ns = model_shapes(depth, k, sh);
        snprintf(tbuf, sizeof tbuf, "%s", threads);
        int tl[4], nt = 0;
        for (char *tp = tbuf; *tp && nt < 4;) {
            tl[nt++] = atoi(tp);
            char *comma = strchr(tp, ',');
            if (!comma) break;
            tp = comma + 1;
        }
        for (int ti = 0; ti < nt; ti++) {
            int T = tl[ti];
            omp_set_num_threads(T);
            double sum[5][3] = {{0}};
            printf("\n# wrn-%d-%d, batch %d, %d thread(s): ms (GFLOP/s); dnnl = blocked, no reorders; "
                   "dnnlr = reorders a NCHW caller adds\n", depth, k, n, T);
            printf("%-22s %-8s %16s %16s %16s %10s %16s  %s\n", "shape (cin>cout hw k)x#", "op", "gemm",
                   "gemm1", "dnnl", "dnnlr", "dnnlp", "dnnl impl / dnnlp impl");
            for (int i = 0; i < ns; i++) {
                const shape *s = &sh[i];
                double tg[3] = {0}, tg1[3] = {0}, td[3] = {0}, tr[3] = {0}, tp[3] = {0}, trp[3];
                char impl[3][48] = {"", "", ""}, implp[3][48] = {"", "", ""};
                if (has(backends, "gemm")) gemm_times(s, n, T, 0, reps, tg);
                if (has(backends, "gemm1")) gemm_times(s, n, T, 1, reps, tg1);
#ifdef HVDLAB_DNNL
                if (has(backends, "dnnl")) dnnl_times(&c, s, n, 0, reps, td, tr, impl);
                if (has(backends, "dnnlp")) dnnl_times(&c, s, n, 1, reps, tp, trp, implp);
#else
                (void)trp;
#endif
                for (int op = 0; op < 3; op++) {
                    double f = flops(s, n) / 1e9;
                    char lab[32];
                    snprintf(lab, sizeof lab, "%d>%d %d k%d x%d", s->cin, s->cout, s->hw, s->k, s->count);
                    printf("%-22s %-8s %8.2f (%5.1f) %8.2f (%5.1f) %8.2f (%5.1f) %10.2f %8.2f (%5.1f)  %s / %s\n",
                           lab, opname[op], 1e3 * tg[op], tg[op] > 0 ? f / tg[op] : 0, 1e3 * tg1[op],
                           tg1[op] > 0 ? f / tg1[op] : 0, 1e3 * td[op], td[op] > 0 ? f / td[op] : 0,
                           1e3 * tr[op], 1e3 * tp[op], tp[op] > 0 ? f / tp[op] : 0, impl[op], implp[op]);
                    sum[0][op] += s->count * tg[op];
                    sum[1][op] += s->count * tg1[op];
                    sum[2][op] += s->count * td[op];
                    sum[3][op] += s->count * tr[op];
                    sum[4][op] += s->count * tp[op];
                }
            }
            static const char *bn[5] = {"gemm", "gemm1", "dnnl", "dnnl_reorders", "dnnlp"};
            for (int b = 0; b < 5; b++)
                printf("conv.wrn-%d-%d.t%d.%s.total %.1f ms (fwd %.1f, bwd_data %.1f, bwd_w %.1f)\n",
                       depth, k, T, bn[b], 1e3 * (sum[b][0] + sum[b][1] + sum[b][2]), 1e3 * sum[b][0],
                       1e3 * sum[b][1], 1e3 * sum[b][2]);
            fflush(stdout);
        }
    }
#ifdef HVDLAB_DNNL
    dnnl_stream_destroy(c.st);
    dnnl_engine_destroy(c.eng);
#endif
    return 0;
}
