/* bn_nhwc_cuda.cu — batch normalisation on NHWC tensors, for a GPU model that keeps its
 * activations so (HVDLAB_ACTIVATION_LAYOUT=nhwc: cuDNN's convolutions measured faster in NHWC at
 * wrn-16-4 batch 512 on an H100). Reached from bn_cuda.cu's entry points when bn_dims.nhwc is
 * set. Public (to nn/): bn_nhwc_forward_train, bn_nhwc_forward_infer, bn_nhwc_backward
 * (bn_cuda_fused.cuh); bn_nhwc_channel_sums_cuda (bn.h: an NHWC convolution's bias gradient).
 *
 * The tensor is M = N·H·W rows of C channels, element (row m, channel c) at m·C + c; row m is
 * image m / HW, position m % HW, so a channel's rows come in the NCHW walk's order (bn_walk.h's
 * j). The conventions are bn_cuda.cu's, term for term (the shift is the channel's first value,
 * the second pass squares in float, invstd in double, the same running update), and the fused
 * dropout takes the mask of each element's flat NCHW index, so the masks are the CPU's.
 *
 * Channel-fastest memory wants the threads across channels: a block is a tile of CT = min(C, 32)
 * channels by R = NT / CT row lanes, so a warp reads 32 (or two rows of 16) neighbouring floats
 * at once. A grid of (P parts of the rows, channel tiles) covers the tensor; each thread adds its
 * rows (one in R) in double, the block adds its R lanes per channel in lane order, and the block's
 * sum is its part's partial. A small kernel, a block per channel, then adds the P partials in a
 * fixed tree (part_total). So every sum has a fixed order and a result never depends on timing
 * (not the NCHW kernels' order: the two layouts agree to rounding, not bit for bit).
 * Training forward: Σ(x − shift) | the mean | Σ(x − mean)² | the statistics | the elementwise
 * pass, five kernels; backward: Σ dy and Σ dy·xhat | dgamma, dbeta and the channel means | din
 * (| the folded bias's gradient). Inference is elementwise.
 */
#include "base/cuda_check.h"
#include "nn/bn_cuda_fused.cuh"
#include "nn/bn_walk.h"
#include "nn/gpu_context.h"

#define NT 512                 /* threads a block */
#define NHWC_TILE 32           /* channels a block, at most */
#define NHWC_BLOCKS_MAX 2048   /* parts × channel tiles, at most */
#define NHWC_ROWS_PER_LANE 4   /* rows a thread adds, at least, where the rows allow */

/* The launch: channels a tile, tiles, parts. The same numbers on the host and in the kernels. */
struct nhwc_grid {
    int CT, T, P;
};

static nhwc_grid grid_for(const bn_dims *d)
{
    nhwc_grid g;
    g.CT = d->c < NHWC_TILE ? d->c : NHWC_TILE;
    g.T = (d->c + g.CT - 1) / g.CT;
    const size_t M = (size_t)d->n * (size_t)d->hw, R = (size_t)(NT / g.CT);
    size_t P = M / (NHWC_ROWS_PER_LANE * R);
    const size_t most = (size_t)(NHWC_BLOCKS_MAX / g.T > 0 ? NHWC_BLOCKS_MAX / g.T : 1);
    P = P < 1 ? 1 : P > most ? most : P;
    g.P = (int)P;
    return g;
}

/* This thread's place: its channel c, its row lane, and its part's rows [m0, m1). */
struct lane {
    int c, lc, lr, R;
    bool on; /* a channel of the tensor and a row lane of the tile */
    size_t m0, m1;
    __device__ lane(int C, int CT, size_t M)
    {
        R = NT / CT;
        lc = (int)threadIdx.x % CT;
        lr = (int)threadIdx.x / CT;
        c = (int)blockIdx.y * CT + lc;
        on = lr < R && c < C;
        bn_split_range(M, (int)gridDim.x, (int)blockIdx.x, &m0, &m1);
    }
};

/* Each channel's sum of a and b over the block's row lanes, in lane order; in lane 0's threads
 * (the others get 0). Called by every thread of the block. */
static __device__ void tile_sum2(const lane &l, int CT, double *a, double *b)
{
    __shared__ double sa[NT], sb[NT];
    sa[threadIdx.x] = *a;
    sb[threadIdx.x] = *b;
    __syncthreads();
    double x = 0.0, y = 0.0;
    if (l.lr == 0)
        for (int r = 0; r < l.R; r++) {
            x += sa[r * CT + l.lc];
            y += sb[r * CT + l.lc];
        }
    __syncthreads(); /* the shared arrays are free again */
    *a = x;
    *b = y;
}

/* The element at (m, c) as batch norm normalises it: plus the folded bias where there is one. */
static __device__ __forceinline__ float input_at(const float *in, const float *pre, size_t m,
                                                 int c, int C)
{
    const float x = in[m * (size_t)C + (size_t)c];
    return pre ? x + pre[c] : x;
}

/* Row m, channel c's flat NCHW index: the dropout mask's. */
static __device__ __forceinline__ size_t nchw_index(size_t m, int c, int C, size_t HW)
{
    const size_t n = m / HW;
    return (n * (size_t)C + (size_t)c) * HW + (m - n * HW);
}

/* Channel c's P partials added by a block of FT threads (one block a channel: blockIdx.x):
 * thread t adds parts t, t + FT, … in order, then the threads' sums meet in a fixed tree. So the
 * order never depends on timing, and P = 1,024 partials are 4 loads a thread rather than 1,024
 * one after another in one thread. The total in thread 0; called by every thread. */
#define FT 256
static __device__ double part_total(const double *part, int c, int P)
{
    __shared__ double t[FT];
    double s = 0.0;
    for (int q = (int)threadIdx.x; q < P; q += FT)
        s += part[(size_t)c * P + q];
    t[threadIdx.x] = s;
    __syncthreads();
    for (int half = FT / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            t[threadIdx.x] += t[threadIdx.x + half];
        __syncthreads();
    }
    s = t[0];
    __syncthreads(); /* t is free again */
    return s;
}

/* ---- training forward ---------------------------------------------------------------------- */

/* SUM_SHIFTED: Σ (x − shift) with shift the channel's first value; SUM_SQUARED: Σ (x − mean)²,
 * squared in float; SUM_PLAIN: Σ x (bn_nhwc_channel_sums_cuda). One partial a block and channel. */
enum { SUM_SHIFTED = 0, SUM_SQUARED = 1, SUM_PLAIN = 2 };
template <int KIND>
static __global__ void __launch_bounds__(NT)
    sum_kernel(double *part, const float *in, const float *pre, const float *mean, int C, int CT,
               size_t M)
{
    const lane l(C, CT, M);
    double s = 0.0, unused = 0.0;
    if (l.on) {
        const float ref = KIND == SUM_SQUARED ? mean[l.c]
                          : KIND == SUM_PLAIN ? 0.0f
                                              : input_at(in, pre, 0, l.c, C);
        /* four rows' loads in flight before their adds, which keep their order (so their bits):
         * one load a thread at a time is too few to keep an H100's memory busy (bn_cuda.cu's
         * HVDLAB_BN_BATCH counts it); the loops that also store cannot, as out may be in */
#pragma unroll 4
        for (size_t m = l.m0 + (size_t)l.lr; m < l.m1; m += (size_t)l.R) {
            const float t = input_at(in, pre, m, l.c, C) - ref;
            s += KIND == SUM_SQUARED ? (double)(t * t) : (double)t;
        }
    }
    tile_sum2(l, CT, &s, &unused);
    if (l.on && l.lr == 0)
        part[(size_t)l.c * gridDim.x + blockIdx.x] = s;
}

/* mean[c] = shift + Σ(x − shift) / M, in float as bn.c. A block a channel. */
static __global__ void __launch_bounds__(FT)
    mean_kernel(float *mean, const double *part, const float *in, const float *pre, int C, int P,
                size_t M)
{
    const int c = (int)blockIdx.x;
    const double s = part_total(part, c, P);
    if (threadIdx.x == 0)
        mean[c] = (float)(input_at(in, pre, 0, c, C) + s / (double)M);
}

/* invstd and the running statistics from Σ(x − mean)². A block a channel. */
static __global__ void __launch_bounds__(FT)
    stats_kernel(float *invstd, float *run_mean, float *run_var, const float *mean,
                 const double *part, int P, size_t M, float eps, float momentum)
{
    const int c = (int)blockIdx.x;
    const double Md = (double)M, var = part_total(part, c, P) / Md;
    if (threadIdx.x == 0)
        store_stats(c, mean[c], (float)(1.0 / sqrt(var + eps)), var, Md, invstd, run_mean,
                    run_var, momentum);
}

/* out = post(bn(in)) over the block's rows. Each element is read before its own write, by the
 * same thread, so out may be in or post.add. */
static __global__ void __launch_bounds__(NT)
    apply_kernel(float *out, const float *in, const float *gamma, const float *beta,
                 const float *mean, const float *invstd, bn_post post, int C, int CT, size_t M,
                 size_t HW)
{
    const lane l(C, CT, M);
    if (!l.on)
        return;
    const float m = mean[l.c], is = invstd[l.c], g = gamma[l.c], b = beta[l.c];
    const float keep = post.p > 0.0f ? 1.0f / (1.0f - post.p) : 1.0f;
    const uint32_t drop = lm_dropout_threshold(post.p);
    for (size_t r = l.m0 + (size_t)l.lr; r < l.m1; r += (size_t)l.R) {
        const size_t idx = r * (size_t)C + (size_t)l.c;
        const float x = input_at(in, post.pre, r, l.c, C);
        const float a = post.add ? post.add[idx] : 0.0f;
        out[idx] = apply_post(x, a, post.p > 0.0f ? nchw_index(r, l.c, C, HW) : 0, m, is, g, b,
                              post, keep, drop);
    }
}

static size_t rows(const bn_dims *d) { return (size_t)d->n * (size_t)d->hw; }

/* What a training call launches with: the stream, the grid of (parts, tiles), the blocks of the
 * per-channel kernels (a block a channel), and in the context's scratch three arrays of C·P
 * partials, then (backward) two of C floats. */
struct nhwc_launch {
    cudaStream_t st;
    nhwc_grid g;
    dim3 grid;
    unsigned cb;
    size_t M;
    double *p1, *p2, *p3;
    float *f;
};

static nhwc_launch launch_for(const bn_dims *d)
{
    nhwc_launch l;
    l.st = gpu_context_stream();
    l.g = grid_for(d);
    l.grid = dim3((unsigned)l.g.P, (unsigned)l.g.T);
    l.cb = (unsigned)d->c;
    l.M = rows(d);
    const size_t cp = (size_t)d->c * (size_t)l.g.P;
    l.p1 = (double *)gpu_context_scratch(3 * cp * sizeof(double) +
                                         2 * (size_t)d->c * sizeof(float));
    l.p2 = l.p1 + cp;
    l.p3 = l.p1 + 2 * cp;
    l.f = (float *)(l.p1 + 3 * cp);
    return l;
}

void bn_nhwc_forward_train(float *out, const float *in, const float *gamma, const float *beta,
                           float *mean, float *invstd, float *run_mean, float *run_var,
                           const bn_post &post, const bn_dims *d)
{
    const nhwc_launch l = launch_for(d);
    const int C = d->c, CT = l.g.CT, P = l.g.P;
    sum_kernel<SUM_SHIFTED><<<l.grid, NT, 0, l.st>>>(l.p1, in, post.pre, (const float *)NULL, C,
                                                     CT, l.M);
    CUDA_CHECK_LAUNCH(l.st);
    mean_kernel<<<l.cb, FT, 0, l.st>>>(mean, l.p1, in, post.pre, C, P, l.M);
    CUDA_CHECK_LAUNCH(l.st);
    sum_kernel<SUM_SQUARED><<<l.grid, NT, 0, l.st>>>(l.p2, in, post.pre, mean, C, CT, l.M);
    CUDA_CHECK_LAUNCH(l.st);
    stats_kernel<<<l.cb, FT, 0, l.st>>>(invstd, run_mean, run_var, mean, l.p2, P, l.M, d->eps,
                                        d->momentum);
    CUDA_CHECK_LAUNCH(l.st);
    apply_kernel<<<l.grid, NT, 0, l.st>>>(out, in, gamma, beta, mean, invstd, post, C, CT, l.M,
                                          (size_t)d->hw);
    CUDA_CHECK_LAUNCH(l.st);
}

/* ---- inference: elementwise, channel = index mod C ------------------------------------------ */

static __global__ void infer_kernel(float *out, const float *in, const float *gamma,
                                    const float *beta, const float *run_mean,
                                    const float *run_var, bn_post post, size_t total, int C,
                                    float eps)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const int c = (int)(idx % (size_t)C);
        out[idx] = apply_post(post.pre ? in[idx] + post.pre[c] : in[idx],
                              post.add ? post.add[idx] : 0.0f, idx, run_mean[c],
                              1.0f / sqrtf(run_var[c] + eps), gamma[c], beta[c], post, 1.0f, 0u);
    }
}

void bn_nhwc_forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                           const float *run_mean, const float *run_var, const bn_post &post,
                           const bn_dims *d)
{
    cudaStream_t st = gpu_context_stream();
    const size_t total = rows(d) * (size_t)d->c;
    infer_kernel<<<gpu_blocks(total), GPU_THREADS, 0, st>>>(out, in, gamma, beta, run_mean,
                                                            run_var, post, total, d->c, d->eps);
    CUDA_CHECK_LAUNCH(st);
}

/* ---- backward ------------------------------------------------------------------------------- */

/* Element (r, c)'s dy through the mask, and its x. */
template <int MODE>
static __device__ __forceinline__ float dy_at(const bn_grad_in &gi, size_t r, int c, int C,
                                              float m, float is, float g, float b, float *x)
{
    const size_t idx = r * (size_t)C + (size_t)c;
    *x = input_at(gi.in, gi.pre, r, c, C);
    return masked_dy<MODE>(gi.dout[idx], *x, MODE == MASK_FROM_OUT ? gi.outp[idx] : *x, gi.keep,
                           m, is, g, b);
}

/* Per channel, the channel's scalars backward uses. */
struct chan_vals {
    float m, is, g, b;
    __device__ chan_vals(const bn_grad_in &gi, int c)
        : m(gi.mean[c]), is(gi.invstd[c]), g(gi.gamma[c]), b(gi.beta ? gi.beta[c] : 0.0f)
    {
    }
};

/* Σ dy and Σ dy·xhat: one partial each a block and channel. */
template <int MODE>
static __global__ void __launch_bounds__(NT)
    grad_sums_kernel(double *p1, double *p2, bn_grad_in gi, int C, int CT, size_t M)
{
    const lane l(C, CT, M);
    double sdy = 0.0, sdyx = 0.0;
    if (l.on) {
        const chan_vals v(gi, l.c);
#pragma unroll 4 /* as sum_kernel's */
        for (size_t r = l.m0 + (size_t)l.lr; r < l.m1; r += (size_t)l.R) {
            float x;
            const float t = dy_at<MODE>(gi, r, l.c, C, v.m, v.is, v.g, v.b, &x);
            sdy += (double)t;
            sdyx += (double)(t * ((x - v.m) * v.is));
        }
    }
    tile_sum2(l, CT, &sdy, &sdyx);
    if (l.on && l.lr == 0) {
        p1[(size_t)l.c * gridDim.x + blockIdx.x] = sdy;
        p2[(size_t)l.c * gridDim.x + blockIdx.x] = sdyx;
    }
}

/* dgamma, dbeta += the channel's sums; mdy, mdyx: their means over the M rows. A block a
 * channel. */
static __global__ void __launch_bounds__(FT)
    grad_params_kernel(float *dgamma, float *dbeta, float *mdy, float *mdyx, const double *p1,
                       const double *p2, int P, size_t M)
{
    const int c = (int)blockIdx.x;
    const double sdy = part_total(p1, c, P), sdyx = part_total(p2, c, P);
    if (threadIdx.x != 0)
        return;
    if (dgamma)
        dgamma[c] += (float)sdyx;
    if (dbeta)
        dbeta[c] += (float)sdy;
    mdy[c] = (float)(sdy / (double)M);
    mdyx[c] = (float)(sdyx / (double)M);
}

/* din (+= when ACCUMULATE, else =); with a folded bias, the block's Σ din as its partial in p3. */
template <int MODE, bool ACCUMULATE>
static __global__ void __launch_bounds__(NT)
    grad_apply_kernel(float *din, double *p3, const float *mdy, const float *mdyx, bn_grad_in gi,
                      int C, int CT, size_t M)
{
    const lane l(C, CT, M);
    double sv = 0.0, unused = 0.0;
    if (l.on) {
        const chan_vals v(gi, l.c);
        const float my = mdy[l.c], myx = mdyx[l.c];
        for (size_t r = l.m0 + (size_t)l.lr; r < l.m1; r += (size_t)l.R) {
            float x;
            const float t = dy_at<MODE>(gi, r, l.c, C, v.m, v.is, v.g, v.b, &x);
            const size_t idx = r * (size_t)C + (size_t)l.c;
            const float g = lm_bn_grad(t, x, v.m, v.is, v.g, my, myx);
            din[idx] = ACCUMULATE ? din[idx] + g : g;
            sv += (double)g;
        }
    }
    if (!gi.dpre)
        return; /* the same for every thread of the grid: no __syncthreads is skipped by some */
    tile_sum2(l, CT, &sv, &unused);
    if (l.on && l.lr == 0)
        p3[(size_t)l.c * gridDim.x + blockIdx.x] = sv;
}

/* dpre[c] += the channel's P partials of Σ din. A block a channel. */
static __global__ void __launch_bounds__(FT) dpre_kernel(float *dpre, const double *p3, int P)
{
    const int c = (int)blockIdx.x;
    const double s = part_total(p3, c, P);
    if (threadIdx.x == 0)
        dpre[c] += (float)s;
}

template <int MODE, bool ACCUMULATE>
static void backward_nhwc(float *din, float *dgamma, float *dbeta, const bn_grad_in &gi,
                          const bn_dims *d)
{
    const nhwc_launch l = launch_for(d);
    const int C = d->c, CT = l.g.CT, P = l.g.P;
    float *mdy = l.f, *mdyx = l.f + C;
    grad_sums_kernel<MODE><<<l.grid, NT, 0, l.st>>>(l.p1, l.p2, gi, C, CT, l.M);
    CUDA_CHECK_LAUNCH(l.st);
    grad_params_kernel<<<l.cb, FT, 0, l.st>>>(dgamma, dbeta, mdy, mdyx, l.p1, l.p2, P, l.M);
    CUDA_CHECK_LAUNCH(l.st);
    if (!din)
        return;
    grad_apply_kernel<MODE, ACCUMULATE><<<l.grid, NT, 0, l.st>>>(din, l.p3, mdy, mdyx, gi, C, CT,
                                                                 l.M);
    CUDA_CHECK_LAUNCH(l.st);
    if (gi.dpre) {
        dpre_kernel<<<l.cb, FT, 0, l.st>>>(gi.dpre, l.p3, P);
        CUDA_CHECK_LAUNCH(l.st);
    }
}

void bn_nhwc_backward(int mode, bool accumulate, float *din, float *dgamma, float *dbeta,
                      const bn_grad_in &gi, const bn_dims *d)
{
    if (mode == MASK_FROM_OUT)
        accumulate ? backward_nhwc<MASK_FROM_OUT, true>(din, dgamma, dbeta, gi, d)
                   : backward_nhwc<MASK_FROM_OUT, false>(din, dgamma, dbeta, gi, d);
    else if (mode == MASK_RECOMPUTE)
        accumulate ? backward_nhwc<MASK_RECOMPUTE, true>(din, dgamma, dbeta, gi, d)
                   : backward_nhwc<MASK_RECOMPUTE, false>(din, dgamma, dbeta, gi, d);
    else
        accumulate ? backward_nhwc<MASK_NONE, true>(din, dgamma, dbeta, gi, d)
                   : backward_nhwc<MASK_NONE, false>(din, dgamma, dbeta, gi, d);
}

/* ---- a channel's plain sum (an NHWC convolution's bias gradient) ---------------------------- */

extern "C" void bn_nhwc_channel_sums_cuda(float *acc, const float *x, const bn_dims *d)
{
    if ((size_t)d->n * (size_t)d->hw == 0)
        return;
    const nhwc_launch l = launch_for(d);
    sum_kernel<SUM_PLAIN><<<l.grid, NT, 0, l.st>>>(l.p1, x, (const float *)NULL,
                                                   (const float *)NULL, d->c, l.g.CT, l.M);
    CUDA_CHECK_LAUNCH(l.st);
    dpre_kernel<<<l.cb, FT, 0, l.st>>>(acc, l.p1, l.g.P); /* acc += the partials' total */
    CUDA_CHECK_LAUNCH(l.st);
}
