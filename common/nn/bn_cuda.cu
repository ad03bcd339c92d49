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
 * (chan_walk). Inference is elementwise over the whole tensor, the per-channel values in shared
 * memory.
 * The cost of this layout: only C blocks run (16 to 640 in the WRNs), fewer than an H100 has
 * room for on the narrowest layers; so by default a large channel is split over blocks (below;
 * HVDLAB_BN_SPLIT=0 keeps one block per channel).
 */
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/env_switch.h"
#include "nn/bn_walk.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"

extern "C" {
#include "nn/bn.h"
}

#define BN_THREADS 512
#define BN_WARPS (BN_THREADS / 32)

/* What follows batch norm in a fused call (bn.c's bn_post). */
typedef struct {
    int relu;
    float p;          /* dropout rate, 0: none */
    uint64_t key;     /* dropout key (act.h) */
    const float *add; /* added last, or NULL */
} bn_post;

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

/* A channel's elements j = start, start + BN_THREADS, ... as NCHW offsets (bn_walk.h, whose
 * CPU test checks the indexing). */
static_assert(BN_THREADS == BN_WALK_STEP, "a thread steps by the block size");
struct chan_walk : bn_walk {
    __device__ chan_walk(int c, size_t start, size_t HW, size_t CHW, size_t N)
    {
        bn_walk_init(this, c, start, HW, CHW, N);
    }
    __device__ bool more() const { return idx < end; }
    __device__ void next() { bn_walk_next(this); }
};

static __device__ __forceinline__ float apply_post(float x, size_t idx, float m, float is,
                                                   float g, float b, const bn_post &post,
                                                   float keep, uint32_t drop)
{
    const float y = lm_bn_apply(x, m, is, g, b);
    if (!post.relu)
        return y;
    float v = lm_relu(y);
    if (post.p > 0.0f) /* drop = lm_uniform01 < p, as integers (bn.c) */
        v = v * (lm_bits24(post.key, idx) < drop ? 0.0f : keep);
    return post.add ? v + post.add[idx] : v;
}

/* Channel c's 1/sqrt(var + eps) for backward and its running statistics, from the batch mean
 * and the biased variance over Md elements (one thread of the channel's blocks calls it). */
static __device__ __forceinline__ void store_stats(int c, float mf, float is, double var,
                                                   double Md, float *invstd, float *run_mean,
                                                   float *run_var, float momentum)
{
    invstd[c] = is;
    run_mean[c] = lm_running(run_mean[c], mf, momentum);
    run_var[c] = lm_running(run_var[c], (float)(Md > 1.0 ? var * Md / (Md - 1.0) : var), momentum);
}

static __global__ void __launch_bounds__(BN_THREADS)
    bn_train_kernel(float *out, const float *in, const float *gamma, const float *beta,
                    float *mean, float *invstd, float *run_mean, float *run_var, bn_post post,
                    int C, int HWi, int Ni, float eps, float momentum)
{
    const int c = blockIdx.x;
    const size_t HW = (size_t)HWi, CHW = (size_t)C * HW, N = (size_t)Ni, M = N * HW;
    const double Md = (double)M;
    const float shift = in[(size_t)c * HW];
    double s = 0.0, unused = 0.0;
    for (chan_walk it(c, threadIdx.x, HW, CHW, N); it.more(); it.next())
        s += (double)(in[it.idx] - shift);
    block_sum2(&s, &unused);
    const double mu = shift + s / Md;
    const float mf = (float)mu;
    double ss = 0.0;
    unused = 0.0;
    for (chan_walk it(c, threadIdx.x, HW, CHW, N); it.more(); it.next()) {
        const float t = in[it.idx] - mf;
        ss += (double)(t * t);
    }
    block_sum2(&ss, &unused);
    const double var = ss / Md;
    const float is = (float)(1.0 / sqrt(var + eps));
    if (threadIdx.x == 0) {
        mean[c] = mf;
        store_stats(c, mf, is, var, Md, invstd, run_mean, run_var, momentum);
    }
    const float g = gamma[c], b = beta[c];
    const float keep = post.p > 0.0f ? 1.0f / (1.0f - post.p) : 1.0f;
    const uint32_t drop = lm_dropout_threshold(post.p);
    /* out may be in or add: each element is read before its own write, by the same thread */
    for (chan_walk it(c, threadIdx.x, HW, CHW, N); it.more(); it.next())
        out[it.idx] = apply_post(in[it.idx], it.idx, mf, is, g, b, post, keep, drop);
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
            out[idx] = apply_post(in[idx], idx, tab[c], tab[C + c], tab[2 * C + c],
                                  tab[3 * C + c], post, 1.0f, 0u);
        else
            out[idx] = apply_post(in[idx], idx, run_mean[c], 1.0f / sqrtf(run_var[c] + eps),
                                  gamma[c], beta[c], post, 1.0f, 0u);
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

/* How dy is formed from dout (bn.c): as is, through the fused ReLU/dropout mask read off the
 * fused output, or through the ReLU mask recomputed from in. */
enum { MASK_NONE, MASK_FROM_OUT, MASK_RECOMPUTE };

template <int MODE>
static __device__ __forceinline__ float masked_dy(float dy, float x, float o, float keep, float m,
                                                  float is, float g, float b)
{
    if (MODE == MASK_FROM_OUT)
        return dy * (o > 0.0f ? keep : 0.0f);
    if (MODE == MASK_RECOMPUTE)
        return lm_relu_grad(dy, lm_bn_apply(x, m, is, g, b));
    return dy;
}

/* Adds element idx's dy and dy·xhat to a thread's sums (both backward layouts). */
template <int MODE>
static __device__ __forceinline__ void add_grad_terms(double *sdy, double *sdyx, size_t idx,
                                                      const float *dout, const float *in,
                                                      const float *outp, float keep, float m,
                                                      float is, float g, float b)
{
    const float x = in[idx];
    const float t = masked_dy<MODE>(dout[idx], x, outp ? outp[idx] : x, keep, m, is, g, b);
    *sdy += (double)t;
    *sdyx += (double)(t * ((x - m) * is));
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

/* din of element idx (+= when ACCUMULATE, else =), both backward layouts. */
template <int MODE, bool ACCUMULATE>
static __device__ __forceinline__ void store_din(float *din, size_t idx, const float *dout,
                                                 const float *in, const float *outp, float keep,
                                                 float m, float is, float g, float b, float mdy,
                                                 float mdyx)
{
    const float x = in[idx];
    const float t = masked_dy<MODE>(dout[idx], x, outp ? outp[idx] : x, keep, m, is, g, b);
    const float v = lm_bn_grad(t, x, m, is, g, mdy, mdyx);
    din[idx] = ACCUMULATE ? din[idx] + v : v;
}

/* One block per channel: Σ dy and Σ dy·xhat, then dgamma, dbeta +=, then din (+= when
 * ACCUMULATE, else =). */
template <int MODE, bool ACCUMULATE>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_backward_kernel(float *din, float *dgamma, float *dbeta, const float *dout,
                       const float *in, const float *outp, float keep, const float *gamma,
                       const float *beta, const float *mean, const float *invstd, int C, int HWi,
                       int Ni)
{
    const int c = blockIdx.x;
    const size_t HW = (size_t)HWi, CHW = (size_t)C * HW, N = (size_t)Ni, M = N * HW;
    const float m = mean[c], is = invstd[c], g = gamma[c], b = beta ? beta[c] : 0.0f;
    double sdy = 0.0, sdyx = 0.0;
    for (chan_walk it(c, threadIdx.x, HW, CHW, N); it.more(); it.next())
        add_grad_terms<MODE>(&sdy, &sdyx, it.idx, dout, in, outp, keep, m, is, g, b);
    block_sum2(&sdy, &sdyx);
    if (threadIdx.x == 0)
        add_param_grads(dgamma, dbeta, c, sdy, sdyx);
    if (!din)
        return;
    const float mdy = (float)(sdy / (double)M), mdyx = (float)(sdyx / (double)M);
    for (chan_walk it(c, threadIdx.x, HW, CHW, N); it.more(); it.next())
        store_din<MODE, ACCUMULATE>(din, it.idx, dout, in, outp, keep, m, is, g, b, mdy, mdyx);
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

extern "C" void bn_cuda_set_split(int on) { split_mode = on < 0 ? -1 : on != 0; }

/* Parts per channel for this shape: 1 means the one-block kernels. */
static int bn_parts(const bn_dims *d)
{
    if (split_mode < 0) {
        split_mode = env_switch("HVDLAB_BN_SPLIT", 1);
    }
    return split_mode ? bn_split_parts((size_t)d->n * (size_t)d->hw, d->c) : 1;
}

/* The partial sums of a split call: two arrays of C·P doubles in the context's scratch (at most
 * 2 × BN_SPLIT_BLOCKS, so it grows once). */
static double *split_scratch(const bn_dims *d, int P, double **part2)
{
    double *part1 = (double *)gpu_context_scratch(2 * (size_t)d->c * P * sizeof(double));
    *part2 = part1 + (size_t)d->c * P;
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

/* This block's elements of channel c: j in [j0, j1), walked from j0 + threadIdx.x. */
struct split_part {
    int c, p, P;
    size_t HW, CHW, N, M, j0, j1;
    __device__ split_part(int C, int HWi, int Ni)
    {
        p = blockIdx.x;
        P = gridDim.x;
        c = blockIdx.y;
        HW = (size_t)HWi;
        CHW = (size_t)C * HW;
        N = (size_t)Ni;
        M = N * HW;
        bn_split_range(M, P, p, &j0, &j1);
    }
};

static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_sum_kernel(double *part1, const float *in, int C, int HWi, int Ni)
{
    const split_part s(C, HWi, Ni);
    const float shift = in[(size_t)s.c * s.HW];
    double sum = 0.0, unused = 0.0;
    size_t j = s.j0 + threadIdx.x;
    for (chan_walk it(s.c, j, s.HW, s.CHW, s.N); j < s.j1; it.next(), j += BN_THREADS)
        sum += (double)(in[it.idx] - shift);
    block_sum2(&sum, &unused);
    if (threadIdx.x == 0)
        part1[(size_t)s.c * s.P + s.p] = sum;
}

/* The mean from the first partials (written to mean[c] by part 0), then Σ(x − mean)². */
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_var_kernel(double *part2, const double *part1, float *mean, const float *in, int C,
                        int HWi, int Ni)
{
    const split_part s(C, HWi, Ni);
    const float shift = in[(size_t)s.c * s.HW];
    const float mf = (float)(shift + part_total(part1, s.c, s.P) / (double)s.M);
    double ss = 0.0, unused = 0.0;
    size_t j = s.j0 + threadIdx.x;
    for (chan_walk it(s.c, j, s.HW, s.CHW, s.N); j < s.j1; it.next(), j += BN_THREADS) {
        const float t = in[it.idx] - mf;
        ss += (double)(t * t);
    }
    block_sum2(&ss, &unused);
    if (threadIdx.x == 0) {
        part2[(size_t)s.c * s.P + s.p] = ss;
        if (s.p == 0)
            mean[s.c] = mf;
    }
}

/* The statistics (part 0 writes invstd and the running values), then the elementwise pass. The
 * mean comes from mean[c], not from in: with out == in, another part may have overwritten the
 * channel's first element (the shift) already. */
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_apply_kernel(float *out, const float *in, const float *gamma, const float *beta,
                          const float *mean, float *invstd, float *run_mean, float *run_var,
                          bn_post post, const double *part2, int C, int HWi, int Ni, float eps,
                          float momentum)
{
    const split_part s(C, HWi, Ni);
    const double Md = (double)s.M, var = part_total(part2, s.c, s.P) / Md;
    const float mf = mean[s.c], is = (float)(1.0 / sqrt(var + eps));
    if (threadIdx.x == 0 && s.p == 0)
        store_stats(s.c, mf, is, var, Md, invstd, run_mean, run_var, momentum);
    const float g = gamma[s.c], b = beta[s.c];
    const float keep = post.p > 0.0f ? 1.0f / (1.0f - post.p) : 1.0f;
    const uint32_t drop = lm_dropout_threshold(post.p);
    size_t j = s.j0 + threadIdx.x;
    for (chan_walk it(s.c, j, s.HW, s.CHW, s.N); j < s.j1; it.next(), j += BN_THREADS)
        out[it.idx] = apply_post(in[it.idx], it.idx, mf, is, g, b, post, keep, drop);
}

template <int MODE>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_grad_sums_kernel(double *part1, double *part2, const float *dout, const float *in,
                              const float *outp, float keep, const float *gamma,
                              const float *beta, const float *mean, const float *invstd, int C,
                              int HWi, int Ni)
{
    const split_part s(C, HWi, Ni);
    const float m = mean[s.c], is = invstd[s.c], g = gamma[s.c], b = beta ? beta[s.c] : 0.0f;
    double sdy = 0.0, sdyx = 0.0;
    size_t j = s.j0 + threadIdx.x;
    for (chan_walk it(s.c, j, s.HW, s.CHW, s.N); j < s.j1; it.next(), j += BN_THREADS)
        add_grad_terms<MODE>(&sdy, &sdyx, it.idx, dout, in, outp, keep, m, is, g, b);
    block_sum2(&sdy, &sdyx);
    if (threadIdx.x == 0) {
        part1[(size_t)s.c * s.P + s.p] = sdy;
        part2[(size_t)s.c * s.P + s.p] = sdyx;
    }
}

template <int MODE, bool ACCUMULATE>
static __global__ void __launch_bounds__(BN_THREADS)
    bn_split_grad_apply_kernel(float *din, float *dgamma, float *dbeta, const double *part1,
                               const double *part2, const float *dout, const float *in,
                               const float *outp, float keep, const float *gamma,
                               const float *beta, const float *mean, const float *invstd, int C,
                               int HWi, int Ni)
{
    const split_part s(C, HWi, Ni);
    const double sdy = part_total(part1, s.c, s.P), sdyx = part_total(part2, s.c, s.P);
    if (threadIdx.x == 0 && s.p == 0)
        add_param_grads(dgamma, dbeta, s.c, sdy, sdyx);
    if (!din)
        return;
    const float m = mean[s.c], is = invstd[s.c], g = gamma[s.c], b = beta ? beta[s.c] : 0.0f;
    const float mdy = (float)(sdy / (double)s.M), mdyx = (float)(sdyx / (double)s.M);
    size_t j = s.j0 + threadIdx.x;
    for (chan_walk it(s.c, j, s.HW, s.CHW, s.N); j < s.j1; it.next(), j += BN_THREADS)
        store_din<MODE, ACCUMULATE>(din, it.idx, dout, in, outp, keep, m, is, g, b, mdy, mdyx);
}

/* Backward in the split layout: the sums, then dgamma, dbeta and din. */
template <int MODE, bool ACCUMULATE>
static void split_backward(float *din, float *dgamma, float *dbeta, const float *dout,
                           const float *in, const float *outp, float keep, const float *gamma,
                           const float *beta, const float *mean, const float *invstd,
                           const bn_dims *d, int P)
{
    cudaStream_t st = gpu_context_stream();
    double *part2, *part1 = split_scratch(d, P, &part2);
    const dim3 grid((unsigned)P, (unsigned)d->c);
    bn_split_grad_sums_kernel<MODE><<<grid, BN_THREADS, 0, st>>>(
        part1, part2, dout, in, outp, keep, gamma, beta, mean, invstd, d->c, d->hw, d->n);
    CUDA_CHECK_LAUNCH(st);
    bn_split_grad_apply_kernel<MODE, ACCUMULATE><<<grid, BN_THREADS, 0, st>>>(
        din, dgamma, dbeta, part1, part2, dout, in, outp, keep, gamma, beta, mean, invstd, d->c,
        d->hw, d->n);
    CUDA_CHECK_LAUNCH(st);
}

static int empty(const bn_dims *d) { return d->n <= 0 || d->c <= 0 || d->hw <= 0; }

static void forward_train(float *out, const float *in, const float *gamma, const float *beta,
                          float *mean, float *invstd, float *run_mean, float *run_var,
                          const bn_post &post, const bn_dims *d)
{
    if (empty(d))
        return;
    cudaStream_t st = gpu_context_stream();
    const int P = bn_parts(d);
    if (P > 1) {
        double *part2, *part1 = split_scratch(d, P, &part2);
        const dim3 grid((unsigned)P, (unsigned)d->c);
        bn_split_sum_kernel<<<grid, BN_THREADS, 0, st>>>(part1, in, d->c, d->hw, d->n);
        CUDA_CHECK_LAUNCH(st);
        bn_split_var_kernel<<<grid, BN_THREADS, 0, st>>>(part2, part1, mean, in, d->c, d->hw,
                                                         d->n);
        CUDA_CHECK_LAUNCH(st);
        bn_split_apply_kernel<<<grid, BN_THREADS, 0, st>>>(out, in, gamma, beta, mean, invstd,
                                                           run_mean, run_var, post, part2, d->c,
                                                           d->hw, d->n, d->eps, d->momentum);
        CUDA_CHECK_LAUNCH(st);
        return;
    }
    bn_train_kernel<<<d->c, BN_THREADS, 0, st>>>(out, in, gamma, beta, mean, invstd, run_mean,
                                                 run_var, post, d->c, d->hw, d->n, d->eps,
                                                 d->momentum);
    CUDA_CHECK_LAUNCH(st);
}

static void forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                          const float *run_mean, const float *run_var, const bn_post &post,
                          const bn_dims *d)
{
    if (empty(d))
        return;
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
    const bn_post post = {0, 0.0f, 0, NULL};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
}

extern "C" void bn_forward_infer_cuda(float *out, const float *in, const float *gamma,
                                      const float *beta, const float *run_mean,
                                      const float *run_var, const bn_dims *d)
{
    const bn_post post = {0, 0.0f, 0, NULL};
    forward_infer(out, in, gamma, beta, run_mean, run_var, post, d);
}

extern "C" void bn_relu_forward_train_cuda(float *out, const float *in, const float *add, float p,
                                           uint64_t key, const float *gamma, const float *beta,
                                           float *mean, float *invstd, float *run_mean,
                                           float *run_var, const bn_dims *d)
{
    const bn_post post = {1, p, key, add};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d);
}

extern "C" void bn_relu_forward_infer_cuda(float *out, const float *in, const float *add,
                                           const float *gamma, const float *beta,
                                           const float *run_mean, const float *run_var,
                                           const bn_dims *d)
{
    const bn_post post = {1, 0.0f, 0, add};
    forward_infer(out, in, gamma, beta, run_mean, run_var, post, d);
}

extern "C" void bn_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                                 const float *in, const float *gamma, const float *mean,
                                 const float *invstd, const bn_dims *d)
{
    if (empty(d))
        return;
    const int P = bn_parts(d);
    if (P > 1) {
        split_backward<MASK_NONE, true>(din, dgamma, dbeta, dout, in, NULL, 1.0f, gamma, NULL,
                                        mean, invstd, d, P);
        return;
    }
    bn_backward_kernel<MASK_NONE, true><<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
        din, dgamma, dbeta, dout, in, NULL, 1.0f, gamma, NULL, mean, invstd, d->c, d->hw, d->n);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void bn_relu_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                                      const float *in, const float *out, float p,
                                      const float *gamma, const float *beta, const float *mean,
                                      const float *invstd, const bn_dims *d)
{
    if (empty(d))
        return;
    const float keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const int P = bn_parts(d);
    if (P > 1 && out)
        split_backward<MASK_FROM_OUT, false>(din, dgamma, dbeta, dout, in, out, keep, gamma, beta,
                                             mean, invstd, d, P);
    else if (P > 1)
        split_backward<MASK_RECOMPUTE, false>(din, dgamma, dbeta, dout, in, NULL, keep, gamma,
                                              beta, mean, invstd, d, P);
    else if (out)
        bn_backward_kernel<MASK_FROM_OUT, false><<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
            din, dgamma, dbeta, dout, in, out, keep, gamma, beta, mean, invstd, d->c, d->hw,
            d->n);
    else
        bn_backward_kernel<MASK_RECOMPUTE, false><<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
            din, dgamma, dbeta, dout, in, NULL, keep, gamma, beta, mean, invstd, d->c, d->hw,
            d->n);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}
