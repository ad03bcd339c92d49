/* bn_cuda.cu — batch normalisation on the GPU, the twins of bn.c. See bn.h.
 * Public: bn_forward_train_cuda, bn_forward_infer_cuda, bn_backward_cuda,
 *         bn_relu_forward_train_cuda, bn_relu_forward_infer_cuda, bn_relu_backward_cuda.
 *
 * Conventions are bn.c's, term for term: the batch mean from sums of (x − shift) with shift the
 * channel's first value, the biased variance from a second pass over (x − (float)mean)², invstd
 * = 1/sqrt(var + eps) in double, running = momentum·running + (1 − momentum)·batch with the
 * unbiased variance var·M/(M−1) (M = N·H·W); the fused forms apply bn, ReLU, the dropout mask
 * of (key, flat NCHW index) and the add in that order; backward forms dy through the same
 * ReLU/dropout mask and uses lm_bn_grad.
 *
 * Training forward and backward: one block of BN_THREADS threads per channel does the whole
 * channel — its sums, then the elementwise pass — so no partial sums leave the block and no
 * scratch memory is needed. Each thread adds its elements in double; the block adds the
 * threads' sums in a fixed tree order (warp shuffles, then one warp), so a result never
 * depends on timing. A thread walks its elements with offsets stepped without division
 * (batch_walk), one at a time or, with HVDLAB_BN_BATCH=1, BN_BATCH at a time: all their loads
 * issued before any is used. Inference is elementwise over the whole tensor, the per-channel
 * values in shared memory.
 * The cost of this layout: only C blocks run (16 to 640 in the WRNs), fewer than an H100 has
 * room for on the narrowest layers; so by default a large channel is split over blocks (below;
 * HVDLAB_BN_SPLIT=0 keeps one block per channel).
 * NHWC tensors (bn_dims.nhwc, a GPU model with HVDLAB_ACTIVATION_LAYOUT=nhwc) go to
 * bn_nhwc_cuda.cu from the same entry points; what both layouts share is in bn_cuda_fused.cuh.
 */
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/env_switch.h"
#include "nn/bn_cuda_fused.cuh"
#include "nn/bn_walk.h"
#include "nn/gpu_context.h"

#define BN_THREADS 512
#define BN_WARPS (BN_THREADS / 32)

/* Sums a and b over the block; every thread gets both totals. Called by all threads. */
static __device__ void block_sum2(double *a, double *b)
{
    __shared__ double wa[BN_WARPS], wb[BN_WARPS], ta, tb;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    double x = *a, y = *b;
    for (int off = 16; off > 0; off /= 2) {
        x += __shfl_down_sync(0xffffffffu, x, off);
        y += __shfl_down_sync(0xffffffffu, y, off);
    }
    if (lane == 0) {
        wa[warp] = x;
        wb[warp] = y;
    }
    __syncthreads();
    if (warp == 0) {
        x = lane < BN_WARPS ? wa[lane] : 0.0;
        y = lane < BN_WARPS ? wb[lane] : 0.0;
        for (int off = 16; off > 0; off /= 2) {
            x += __shfl_down_sync(0xffffffffu, x, off);
            y += __shfl_down_sync(0xffffffffu, y, off);
        }
        if (lane == 0) {
            ta = x;
            tb = y;
        }
    }
    __syncthreads();
    *a = ta;
    *b = tb;
    __syncthreads(); /* the shared slots are free again for the next call */
}

/* ---- Walking a channel ------------------------------------------------------------------------
 * The elements of channel c that one block covers: j in [j0, j1) (j = n·HW + hw), walked by its
 * threads from j0 + threadIdx.x in steps of BN_THREADS (bn_walk.h, whose CPU test checks the
 * indexing). One block per channel covers [0, M) as part 0 of 1; split, part p of P. */
static_assert(BN_THREADS == BN_WALK_STEP, "a thread steps by the block size");
struct chan_range {
    int c, p, P;
    size_t HW, CHW, N, M, j0, j1;
};

/* One block per channel: blockIdx.x is the channel. */
static __device__ chan_range whole_channel(int C, int HWi, int Ni)
{
    chan_range r;
    r.c = blockIdx.x;
    r.p = 0;
    r.P = 1;
    r.HW = (size_t)HWi;
    r.CHW = (size_t)C * r.HW;
    r.N = (size_t)Ni;
    r.M = r.N * r.HW;
    r.j0 = 0;
    r.j1 = r.M;
    return r;
}

/* Split: blockIdx.x is the part, blockIdx.y the channel. */
static __device__ chan_range channel_part(int C, int HWi, int Ni)
{
    chan_range r = whole_channel(C, HWi, Ni);
    r.c = blockIdx.y;
    r.p = blockIdx.x;
    r.P = gridDim.x;
    bn_split_range(r.M, r.P, r.p, &r.j0, &r.j1);
    return r;
}

/* The tensor batch norm normalises, element by element: in, plus channel c's bias of the
 * convolution before it where the model folds that in (bn_post.pre), in float as cuDNN's bias
 * add would have made it. Without it, in's own values, untouched. */
struct bn_input {
    const float *in;
    float pb; /* pre[c] */
    bool pre;
    __device__ bn_input(const float *t, const float *pre_bias, int c)
        : in(t), pb(pre_bias ? pre_bias[c] : 0.0f), pre(pre_bias != NULL)
    {
    }
    __device__ float at(size_t idx) const { return pre ? in[idx] + pb : in[idx]; }
};

/* A thread's elements of a range, B at a time (bn_walk_take): a batch's offsets first, then all
 * of its loads (load), then their use. With B = 1 a thread has one load per tensor in flight and
 * waits for it before the next; on the forward passes, which read one tensor, that was too few
 * to keep an H100's memory busy (a count, not yet a GPU timing: HVDLAB_BN_BATCH=1 asks for B =
 * BN_BATCH). The elements come in the same order for every B, so every sum is the same. */
template <int B>
struct batch_walk {
    bn_walk w;
    size_t j, j1, idx[B];
    int n; /* elements in the batch */
    __device__ explicit batch_walk(const chan_range &r) : j(r.j0 + threadIdx.x), j1(r.j1), n(0)
    {
        bn_walk_init(&w, r.c, j, r.HW, r.CHW, r.N);
    }
    __device__ bool take()
    {
        n = bn_walk_take(&w, &j, j1, idx, B);
        return n > 0;
    }
    /* v[u] = t[idx[u]] for the batch's elements, 0 for the rest */
    __device__ void load(float (&v)[B], const float *t) const
    {
#pragma unroll
        for (int u = 0; u < B; u++)
            v[u] = u < n ? t[idx[u]] : 0.0f;
    }
    /* the same of the tensor batch norm normalises (bn_input) */
    __device__ void load(float (&v)[B], const bn_input &x) const
    {
        load(v, x.in);
        if (x.pre)
#pragma unroll
            for (int u = 0; u < B; u++)
                v[u] += x.pb;
    }
};
#define BN_BATCH 4
static_assert(BN_BATCH <= BN_WALK_BATCH_MAX, "bn_walk_take's limit");

/* The terms of the statistics' two sums: x − shift, and (x − mean)² formed in float. */
struct shifted {
    float shift;
    __device__ double operator()(float x) const { return (double)(x - shift); }
};
struct squared {
    float mean;
    __device__ double operator()(float x) const
    {
        const float t = x - mean;
        return (double)(t * t);
    }
};

/* This thread's Σ term(x) over the range, in element order. */
template <int B, typename Term>
static __device__ __forceinline__ double sum_range(const chan_range &r, const bn_input &in,
                                                   Term term)
{
    double s = 0.0;
    for (batch_walk<B> w(r); w.take();) {
        float x[B];
        w.load(x, in);
#pragma unroll
        for (int u = 0; u < B; u++)
            if (u < w.n)
                s += term(x[u]);
    }
    return s;
}

/* out = post(bn(in)) over the range. A batch is loaded whole before any of it is stored: out may
 * be in's tensor or post.add, and each element is read before its own write. */
template <int B>
static __device__ __forceinline__ void apply_range(const chan_range &r, float *out,
                                                   const bn_input &in, float m, float is, float g,
                                                   float b, const bn_post &post)
{
    const float keep = post.p > 0.0f ? 1.0f / (1.0f - post.p) : 1.0f;
    const uint32_t drop = lm_dropout_threshold(post.p);
    for (batch_walk<B> w(r); w.take();) {
        float x[B], a[B];
        w.load(x, in);
        if (post.add)
            w.load(a, post.add);
#pragma unroll
        for (int u = 0; u < B; u++)
            if (u < w.n)
                out[w.idx[u]] = apply_post(x[u], post.add ? a[u] : 0.0f, w.idx[u], m, is, g, b,
                                           post, keep, drop);
    }
}

template <int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_train_kernel(float *out, const float *in, const float *gamma, const float *beta,
                    float *mean, float *invstd, float *run_mean, float *run_var, bn_post post,
                    int C, int HWi, int Ni, float eps, float momentum)
{
    const chan_range r = whole_channel(C, HWi, Ni);
    const int c = r.c;
    const double Md = (double)r.M;
    const bn_input x(in, post.pre, c);
    const float shift = x.at((size_t)c * r.HW);
    double s = sum_range<B>(r, x, shifted{shift}), unused = 0.0;
    block_sum2(&s, &unused);
    const float mf = (float)(shift + s / Md);
    double ss = sum_range<B>(r, x, squared{mf});
    unused = 0.0;
    block_sum2(&ss, &unused);
    const double var = ss / Md;
    const float is = (float)(1.0 / sqrt(var + eps));
    if (threadIdx.x == 0) {
        mean[c] = mf;
        store_stats(c, mf, is, var, Md, invstd, run_mean, run_var, momentum);
    }
    apply_range<B>(r, out, x, mf, is, gamma[c], beta[c], post);
}

/* Inference: elementwise over the flat NCHW tensor, grid-stride. Each thread tracks its element's
 * image position and channel as it strides (one division per thread, not per element). With
 * SHARED the block first puts every channel's mean, 1/sqrt(var + eps), gamma and beta in shared
 * memory (4·C floats; C <= BN_INFER_SHARED_C), else each element reads them and takes the root. */
#define BN_INFER_SHARED_C 1024

template <bool SHARED>
static __global__ void bn_infer_kernel(float *out, const float *in, const float *gamma,
                                       const float *beta, const float *run_mean,
                                       const float *run_var, bn_post post, size_t total, int C,
                                       size_t HW, float eps)
{
    extern __shared__ float tab[]; /* SHARED: m[C], is[C], g[C], b[C] */
    if (SHARED) {
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            tab[c] = run_mean[c];
            tab[C + c] = 1.0f / sqrtf(run_var[c] + eps);
            tab[2 * C + c] = gamma[c];
            tab[3 * C + c] = beta[c];
        }
        __syncthreads();
    }
    const size_t start = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x, Cs = (size_t)C;
    const size_t dplanes = stride / HW, dhw = stride - dplanes * HW;
    const int dc = (int)(dplanes % Cs);
    size_t hw = start % HW;
    int c = (int)((start / HW) % Cs);
    for (size_t idx = start; idx < total; idx += stride) {
        if (SHARED)
            out[idx] = apply_post(post.pre ? in[idx] + post.pre[c] : in[idx],
                                  post.add ? post.add[idx] : 0.0f, idx, tab[c],
                                  tab[C + c], tab[2 * C + c], tab[3 * C + c], post, 1.0f, 0u);
        else
            out[idx] = apply_post(post.pre ? in[idx] + post.pre[c] : in[idx],
                                  post.add ? post.add[idx] : 0.0f, idx, run_mean[c],
                                  1.0f / sqrtf(run_var[c] + eps), gamma[c], beta[c], post, 1.0f,
                                  0u);
        hw += dhw;
        c += dc;
        if (hw >= HW) {
            hw -= HW;
            c++;
        }
        if (c >= C) /* c + dc + 1 < 2C */
            c -= C;
    }
}

/* One channel's share of it: its statistics and parameters. */
struct grad_args {
    const float *dout, *outp;
    bn_input x;
    float keep, m, is, g, b;
    __device__ grad_args(const bn_grad_in &gi, int c)
        : dout(gi.dout), outp(gi.outp), x(gi.in, gi.pre, c), keep(gi.keep), m(gi.mean[c]),
          is(gi.invstd[c]), g(gi.gamma[c]), b(gi.beta ? gi.beta[c] : 0.0f)
    {
    }
};

/* The batch's dy (through the mask) and x. */
template <int MODE, int B>
static __device__ __forceinline__ void load_dy(const batch_walk<B> &w, const grad_args &a,
                                               float (&t)[B], float (&x)[B])
{
    float o[B];
    w.load(t, a.dout);
    w.load(x, a.x);
    if (MODE == MASK_FROM_OUT)
        w.load(o, a.outp);
#pragma unroll
    for (int u = 0; u < B; u++)
        t[u] = masked_dy<MODE>(t[u], x[u], MODE == MASK_FROM_OUT ? o[u] : x[u], a.keep, a.m, a.is,
                               a.g, a.b);
}

/* This thread's Σ dy and Σ dy·xhat over the range. */
template <int MODE, int B>
static __device__ __forceinline__ void grad_sums(const chan_range &r, const grad_args &a,
                                                 double *sdy, double *sdyx)
{
    for (batch_walk<B> w(r); w.take();) {
        float t[B], x[B];
        load_dy<MODE, B>(w, a, t, x);
#pragma unroll
        for (int u = 0; u < B; u++)
            if (u < w.n) {
                *sdy += (double)t[u];
                *sdyx += (double)(t[u] * ((x[u] - a.m) * a.is));
            }
    }
}

/* din over the range (+= when ACCUMULATE, else =), from the channel's mean dy and dy·xhat. With
 * sum_din, returns this thread's Σ of the values it computed (the folded bias's gradient), else 0. */
template <int MODE, bool ACCUMULATE, int B>
static __device__ __forceinline__ double grad_apply(const chan_range &r, const grad_args &a,
                                                    float *din, float mdy, float mdyx,
                                                    bool sum_din)
{
    double sv = 0.0;
    for (batch_walk<B> w(r); w.take();) {
        float t[B], x[B], prev[B];
        load_dy<MODE, B>(w, a, t, x);
        if (ACCUMULATE)
            w.load(prev, din);
#pragma unroll
        for (int u = 0; u < B; u++)
            if (u < w.n) {
                const float v = lm_bn_grad(t[u], x[u], a.m, a.is, a.g, mdy, mdyx);
                din[w.idx[u]] = ACCUMULATE ? prev[u] + v : v;
                if (sum_din)
                    sv += (double)v;
            }
    }
    return sv;
}

/* dgamma, dbeta += the channel's sums (either may be NULL; one thread per channel calls it). */
static __device__ __forceinline__ void add_param_grads(float *dgamma, float *dbeta, int c,
                                                       double sdy, double sdyx)
{
    if (dgamma)
        dgamma[c] += (float)sdyx;
    if (dbeta)
        dbeta[c] += (float)sdy;
}

/* One block per channel: Σ dy and Σ dy·xhat, then dgamma, dbeta +=, then din (+= when
 * ACCUMULATE, else =) and, with a folded bias, dpre += Σ din. */
template <int MODE, bool ACCUMULATE, int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_backward_kernel(float *din, float *dgamma, float *dbeta, bn_grad_in gi, int C, int HWi,
                       int Ni)
{
    const chan_range r = whole_channel(C, HWi, Ni);
    const grad_args a(gi, r.c);
    double sdy = 0.0, sdyx = 0.0;
    grad_sums<MODE, B>(r, a, &sdy, &sdyx);
    block_sum2(&sdy, &sdyx);
    if (threadIdx.x == 0)
        add_param_grads(dgamma, dbeta, r.c, sdy, sdyx);
    if (!din)
        return;
    double sv = grad_apply<MODE, ACCUMULATE, B>(r, a, din, (float)(sdy / (double)r.M),
                                                (float)(sdyx / (double)r.M), gi.dpre != NULL);
    if (gi.dpre) {
        double unused = 0.0;
        block_sum2(&sv, &unused);
        if (threadIdx.x == 0)
            gi.dpre[r.c] += (float)sv;
    }
}

/* ---- Split channels (the default; HVDLAB_BN_SPLIT=0 turns it off; bn_cuda_set_split) ----------
 * With one block per channel only C blocks run: 16 to 64 on the WRNs' wide layers, where an H100
 * has room for over a thousand. Split, a channel's M = N·HW elements are cut into P parts (part p
 * holds the channel's elements j in [p·M/P, (p+1)·M/P), j = n·HW + hw), one block each, a grid
 * of (P, C). Each block leaves its partial sums, in double, in the context's scratch; a block
 * that needs a channel's total adds the channel's P partials in the order p = 0..P−1, the same in
 * every block and every run, so results still do not depend on timing. P depends on the shape
 * alone (bn_parts). Training forward is three kernels (Σ(x − shift); the mean and Σ(x − mean)²;
 * the statistics and the elementwise pass), backward two (Σ dy and Σ dy·xhat; dgamma, dbeta and
 * din). Parts and ranges: bn_walk.h (C·P <= BN_SPLIT_BLOCKS, so the partials fit 2 × 2048
 * doubles of scratch). The default since an H100 measured it (make bench-train-gpu,
 * 2026-11-26): training 4-31 % faster than one block per channel on wrn-16-4/10 at batch 128
 * and 512. */
static int split_mode = -1; /* -1: read HVDLAB_BN_SPLIT at the next call */
static int batch_mode = -1; /* -1: read HVDLAB_BN_BATCH at the next call */

extern "C" void bn_cuda_set_split(int on) { split_mode = on < 0 ? -1 : on != 0; }
extern "C" void bn_cuda_set_batch(int on) { batch_mode = on < 0 ? -1 : on != 0; }

/* Parts per channel for this shape: 1 means the one-block kernels. */
static int bn_parts(const bn_dims *d)
{
    if (split_mode < 0)
        split_mode = env_switch_on(SWITCH_BN_SPLIT);
    return split_mode ? bn_split_parts((size_t)d->n * (size_t)d->hw, d->c) : 1;
}

/* Elements per thread per batch of loads: BN_BATCH with HVDLAB_BN_BATCH=1, else 1. */
static int bn_batch(void)
{
    if (batch_mode < 0)
        batch_mode = env_switch_on(SWITCH_BN_BATCH);
    return batch_mode ? BN_BATCH : 1;
}

/* The partial sums of a split call: three arrays of C·P doubles in the context's scratch (at most
 * 3 × BN_SPLIT_BLOCKS, so it grows once), part[k] = the first + k·C·P. */
static double *split_scratch(const bn_dims *d, int P, double **part2, double **part3)
{
    const size_t cp = (size_t)d->c * P;
    double *part1 = (double *)gpu_context_scratch(3 * cp * sizeof(double));
    *part2 = part1 + cp;
    *part3 = part1 + 2 * cp;
    return part1;
}

/* The channel's total of P partials, in part order. */
static __device__ double part_total(const double *part, int c, int P)
{
    double t = 0.0;
    for (int q = 0; q < P; q++)
        t += part[(size_t)c * P + q];
    return t;
}

/* This block's sum (every thread's a, added by block_sum2) as its channel's partial p. */
static __device__ __forceinline__ void store_partial(double *part, const chan_range &r, double a)
{
    double unused = 0.0;
    block_sum2(&a, &unused);
    if (threadIdx.x == 0)
        part[(size_t)r.c * r.P + r.p] = a;
}

template <int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_sum_kernel(double *part1, const float *in, const float *pre, int C, int HWi, int Ni)
{
    const chan_range r = channel_part(C, HWi, Ni);
    const bn_input x(in, pre, r.c);
    store_partial(part1, r, sum_range<B>(r, x, shifted{x.at((size_t)r.c * r.HW)}));
}

/* The mean from the first partials (written to mean[c] by part 0), then Σ(x − mean)². */
template <int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_var_kernel(double *part2, const double *part1, float *mean, const float *in,
                        const float *pre, int C, int HWi, int Ni)
{
    const chan_range r = channel_part(C, HWi, Ni);
    const bn_input x(in, pre, r.c);
    const float shift = x.at((size_t)r.c * r.HW);
    const float mf = (float)(shift + part_total(part1, r.c, r.P) / (double)r.M);
    store_partial(part2, r, sum_range<B>(r, x, squared{mf}));
    if (threadIdx.x == 0 && r.p == 0)
        mean[r.c] = mf;
}

/* The statistics (part 0 writes invstd and the running values), then the elementwise pass. The
 * mean comes from mean[c], not from in: with out == in, another part may have overwritten the
 * channel's first element (the shift) already. */
template <int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_apply_kernel(float *out, const float *in, const float *gamma, const float *beta,
                          const float *mean, float *invstd, float *run_mean, float *run_var,
                          bn_post post, const double *part2, int C, int HWi, int Ni, float eps,
                          float momentum)
{
    const chan_range r = channel_part(C, HWi, Ni);
    const double Md = (double)r.M, var = part_total(part2, r.c, r.P) / Md;
    const float mf = mean[r.c], is = (float)(1.0 / sqrt(var + eps));
    if (threadIdx.x == 0 && r.p == 0)
        store_stats(r.c, mf, is, var, Md, invstd, run_mean, run_var, momentum);
    apply_range<B>(r, out, bn_input(in, post.pre, r.c), mf, is, gamma[r.c], beta[r.c], post);
}

template <int MODE, int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_grad_sums_kernel(double *part1, double *part2, bn_grad_in gi, int C, int HWi, int Ni)
{
    const chan_range r = channel_part(C, HWi, Ni);
    const grad_args a(gi, r.c);
    double sdy = 0.0, sdyx = 0.0;
    grad_sums<MODE, B>(r, a, &sdy, &sdyx);
    block_sum2(&sdy, &sdyx);
    if (threadIdx.x == 0) {
        part1[(size_t)r.c * r.P + r.p] = sdy;
        part2[(size_t)r.c * r.P + r.p] = sdyx;
    }
}

/* dgamma, dbeta (part 0), then din; with a folded bias, this block's Σ din as partial p. */
template <int MODE, bool ACCUMULATE, int B>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_grad_apply_kernel(float *din, float *dgamma, float *dbeta, const double *part1,
                               const double *part2, double *part3, bn_grad_in gi, int C, int HWi,
                               int Ni)
{
    const chan_range r = channel_part(C, HWi, Ni);
    const double sdy = part_total(part1, r.c, r.P), sdyx = part_total(part2, r.c, r.P);
    if (threadIdx.x == 0 && r.p == 0)
        add_param_grads(dgamma, dbeta, r.c, sdy, sdyx);
    if (!din)
        return;
    const double sv = grad_apply<MODE, ACCUMULATE, B>(
        r, grad_args(gi, r.c), din, (float)(sdy / (double)r.M), (float)(sdyx / (double)r.M),
        gi.dpre != NULL);
    if (gi.dpre)
        store_partial(part3, r, sv);
}

/* dpre[c] += the channel's P partials of Σ din, in part order; a thread a channel. */
static __global__ void bn_split_dpre_kernel(float *dpre, const double *part3, int C, int P)
{
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x)
        dpre[c] += (float)part_total(part3, c, P);
}

static int empty(const bn_dims *d) { return d->n <= 0 || d->c <= 0 || d->hw <= 0; }

/* Backward in the layout of this shape (split or one block per channel), B elements a batch. */
template <int MODE, bool ACCUMULATE, int B>
static void backward_b(float *din, float *dgamma, float *dbeta, const bn_grad_in &gi,
                       const bn_dims *d)
{
    cudaStream_t st = gpu_context_stream();
    const int P = bn_parts(d);
    if (P > 1) {
        double *part2, *part3, *part1 = split_scratch(d, P, &part2, &part3);
        const dim3 grid((unsigned)P, (unsigned)d->c);
        bn_split_grad_sums_kernel<MODE, B><<<grid, BN_THREADS, 0, st>>>(part1, part2, gi, d->c,
                                                                        d->hw, d->n);
        CUDA_CHECK_LAUNCH(st);
        bn_split_grad_apply_kernel<MODE, ACCUMULATE, B><<<grid, BN_THREADS, 0, st>>>(
            din, dgamma, dbeta, part1, part2, part3, gi, d->c, d->hw, d->n);
        if (gi.dpre && din) {
            CUDA_CHECK_LAUNCH(st);
            bn_split_dpre_kernel<<<gpu_blocks((size_t)d->c), GPU_THREADS, 0, st>>>(gi.dpre, part3,
                                                                                  d->c, P);
        }
    } else {
        bn_backward_kernel<MODE, ACCUMULATE, B><<<d->c, BN_THREADS, 0, st>>>(din, dgamma, dbeta,
                                                                           gi, d->c, d->hw, d->n);
    }
    CUDA_CHECK_LAUNCH(st);
}

template <int MODE, bool ACCUMULATE>
static void backward(float *din, float *dgamma, float *dbeta, const bn_grad_in &gi,
                     const bn_dims *d)
{
    if (empty(d))
        return;
    if (d->nhwc)
        bn_nhwc_backward(MODE, ACCUMULATE, din, dgamma, dbeta, gi, d);
    else if (bn_batch() > 1)
        backward_b<MODE, ACCUMULATE, BN_BATCH>(din, dgamma, dbeta, gi, d);
    else
        backward_b<MODE, ACCUMULATE, 1>(din, dgamma, dbeta, gi, d);
}

template <int B>
static void forward_train_b(float *out, const float *in, const float *gamma, const float *beta,
                            float *mean, float *invstd, float *run_mean, float *run_var,
                            const bn_post &post, const bn_dims *d)
{
    cudaStream_t st = gpu_context_stream();
    const int P = bn_parts(d);
    if (P > 1) {
        double *part2, *part3, *part1 = split_scratch(d, P, &part2, &part3);
        const dim3 grid((unsigned)P, (unsigned)d->c);
        bn_split_sum_kernel<B><<<grid, BN_THREADS, 0, st>>>(part1, in, post.pre, d->c, d->hw,
                                                            d->n);
        CUDA_CHECK_LAUNCH(st);
        bn_split_var_kernel<B><<<grid, BN_THREADS, 0, st>>>(part2, part1, mean, in, post.pre,
                                                            d->c, d->hw, d->n);
        CUDA_CHECK_LAUNCH(st);
        bn_split_apply_kernel<B><<<grid, BN_THREADS, 0, st>>>(out, in, gamma, beta, mean, invstd,
                                                              run_mean, run_var, post, part2,
                                                              d->c, d->hw, d->n, d->eps,
                                                              d->momentum);
    } else {
        bn_train_kernel<B><<<d->c, BN_THREADS, 0, st>>>(out, in, gamma, beta, mean, invstd,
                                                        run_mean, run_var, post, d->c, d->hw,
                                                        d->n, d->eps, d->momentum);
    }
    CUDA_CHECK_LAUNCH(st);
}

static void forward_train(float *out, const float *in, const float *gamma, const float *beta,
                          float *mean, float *invstd, float *run_mean, float *run_var,
                          const bn_post &post, const bn_dims *d)
{
    if (empty(d))
        return;
    if (d->nhwc)
        bn_nhwc_forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
    else if (bn_batch() > 1)
        forward_train_b<BN_BATCH>(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
    else
        forward_train_b<1>(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
}

static void forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                          const float *run_mean, const float *run_var, const bn_post &post,
                          const bn_dims *d)
{
    if (empty(d))
        return;
    if (d->nhwc) {
        bn_nhwc_forward_infer(out, in, gamma, beta, run_mean, run_var, post, d);
        return;
    }
    const size_t total = (size_t)d->n * d->c * d->hw, C = (size_t)d->c;
    cudaStream_t st = gpu_context_stream();
    if (d->c <= BN_INFER_SHARED_C) {
        /* each block fills the 4·C table, so give it at least 4·C elements to use it on */
        const size_t fill = total / (4 * C);
        unsigned blocks = gpu_blocks(total);
        if (fill < blocks)
            blocks = fill > 0 ? (unsigned)fill : 1u;
        bn_infer_kernel<true><<<blocks, GPU_THREADS, 4 * C * sizeof(float), st>>>(
            out, in, gamma, beta, run_mean, run_var, post, total, d->c, (size_t)d->hw, d->eps);
    } else {
        bn_infer_kernel<false><<<gpu_blocks(total), GPU_THREADS, 0, st>>>(
            out, in, gamma, beta, run_mean, run_var, post, total, d->c, (size_t)d->hw, d->eps);
    }
    CUDA_CHECK_LAUNCH(st);
}

extern "C" void bn_forward_train_cuda(float *out, const float *in, const float *gamma,
                                      const float *beta, float *mean, float *invstd,
                                      float *run_mean, float *run_var, const bn_dims *d)
{
    const bn_post post = {0, 0.0f, 0, NULL, NULL};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
}

extern "C" void bn_forward_infer_cuda(float *out, const float *in, const float *gamma,
                                      const float *beta, const float *run_mean,
                                      const float *run_var, const bn_dims *d)
{
    const bn_post post = {0, 0.0f, 0, NULL, NULL};
    forward_infer(out, in, gamma, beta, run_mean, run_var, post, d);
}

extern "C" void bn_relu_forward_train_cuda(float *out, const float *in, const float *add, float p,
                                           uint64_t key, const float *gamma, const float *beta,
                                           float *mean, float *invstd, float *run_mean,
                                           float *run_var, const bn_dims *d)
{
    const bn_post post = {1, p, key, add, NULL};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
}

extern "C" void bn_relu_forward_infer_cuda(float *out, const float *in, const float *add,
                                           const float *gamma, const float *beta,
                                           const float *run_mean, const float *run_var,
                                           const bn_dims *d)
{
    const bn_post post = {1, 0.0f, 0, add, NULL};
    forward_infer(out, in, gamma, beta, run_mean, run_var, post, d);
}

extern "C" void bn_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                                 const float *in, const float *gamma, const float *mean,
                                 const float *invstd, const bn_dims *d)
{
    const bn_grad_in gi = {dout, in, NULL, gamma, NULL, mean, invstd, NULL, NULL, 1.0f};
    backward<MASK_NONE, true>(din, dgamma, dbeta, gi, d);
}

/* The fused backward, with or without a folded bias (pre, dpre). */
static void relu_backward(float *din, float *dpre, float *dgamma, float *dbeta, const float *dout,
                          const float *in, const float *pre, const float *out, float p,
                          const float *gamma, const float *beta, const float *mean,
                          const float *invstd, const bn_dims *d)
{
    const float keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const bn_grad_in gi = {dout, in, out, gamma, beta, mean, invstd, pre, pre ? dpre : NULL, keep};
    if (out)
        backward<MASK_FROM_OUT, false>(din, dgamma, dbeta, gi, d);
    else
        backward<MASK_RECOMPUTE, false>(din, dgamma, dbeta, gi, d);
}

extern "C" void bn_relu_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                                      const float *in, const float *out, float p,
                                      const float *gamma, const float *beta, const float *mean,
                                      const float *invstd, const bn_dims *d)
{
    relu_backward(din, NULL, dgamma, dbeta, dout, in, NULL, out, p, gamma, beta, mean, invstd, d);
}

/* ---- A convolution's bias folded in (bn.h: bn_relu_*_pre_cuda) ------------------------------- */

extern "C" void bn_relu_forward_train_pre_cuda(float *out, const float *in, const float *pre,
                                               const float *add, float p, uint64_t key,
                                               const float *gamma, const float *beta, float *mean,
                                               float *invstd, float *run_mean, float *run_var,
                                               const bn_dims *d)
{
    const bn_post post = {1, p, key, add, pre};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
}

extern "C" void bn_relu_forward_infer_pre_cuda(float *out, const float *in, const float *pre,
                                               const float *add, const float *gamma,
                                               const float *beta, const float *run_mean,
                                               const float *run_var, const bn_dims *d)
{
    const bn_post post = {1, 0.0f, 0, add, pre};
    forward_infer(out, in, gamma, beta, run_mean, run_var, post, d);
}

extern "C" void bn_relu_backward_pre_cuda(float *din, float *dpre, float *dgamma, float *dbeta,
                                          const float *dout, const float *in, const float *pre,
                                          const float *out, float p, const float *gamma,
                                          const float *beta, const float *mean,
                                          const float *invstd, const bn_dims *d)
{
    relu_backward(din, dpre, dgamma, dbeta, dout, in, pre, out, p, gamma, beta, mean, invstd, d);
}
