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
 * depends on timing. Inference is elementwise over the whole tensor.
 * The cost of this layout: only C blocks run (16 to 640 in the WRNs), fewer than an H100 has
 * room for on the narrowest layers; splitting a channel over blocks is the next step for speed.
 */
#include "base/cuda_check.h"
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

/* Offset of the j-th element (0 <= j < N·HW) of channel c. */
static __device__ __forceinline__ size_t chan_idx(size_t j, int c, size_t HW, size_t CHW)
{
    const size_t n = j / HW;
    return n * CHW + (size_t)c * HW + (j - n * HW);
}

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

static __global__ void __launch_bounds__(BN_THREADS)
    bn_train_kernel(float *out, const float *in, const float *gamma, const float *beta,
                    float *mean, float *invstd, float *run_mean, float *run_var, bn_post post,
                    int C, int HWi, int Ni, float eps, float momentum)
{
    const int c = blockIdx.x;
    const size_t HW = (size_t)HWi, CHW = (size_t)C * HW, M = (size_t)Ni * HW;
    const double Md = (double)M;
    const float shift = in[(size_t)c * HW];
    double s = 0.0, unused = 0.0;
    for (size_t j = threadIdx.x; j < M; j += BN_THREADS)
        s += (double)(in[chan_idx(j, c, HW, CHW)] - shift);
    block_sum2(&s, &unused);
    const double mu = shift + s / Md;
    const float mf = (float)mu;
    double ss = 0.0;
    unused = 0.0;
    for (size_t j = threadIdx.x; j < M; j += BN_THREADS) {
        const float t = in[chan_idx(j, c, HW, CHW)] - mf;
        ss += (double)(t * t);
    }
    block_sum2(&ss, &unused);
    const double var = ss / Md;
    const float is = (float)(1.0 / sqrt(var + eps));
    if (threadIdx.x == 0) {
        mean[c] = mf;
        invstd[c] = is;
        run_mean[c] = lm_running(run_mean[c], mf, momentum);
        run_var[c] = lm_running(run_var[c], (float)(Md > 1.0 ? var * Md / (Md - 1.0) : var),
                                momentum);
    }
    const float g = gamma[c], b = beta[c];
    const float keep = post.p > 0.0f ? 1.0f / (1.0f - post.p) : 1.0f;
    const uint32_t drop = lm_dropout_threshold(post.p);
    /* out may be in or add: each element is read before its own write, by the same thread */
    for (size_t j = threadIdx.x; j < M; j += BN_THREADS) {
        const size_t idx = chan_idx(j, c, HW, CHW);
        out[idx] = apply_post(in[idx], idx, mf, is, g, b, post, keep, drop);
    }
}

static __global__ void bn_infer_kernel(float *out, const float *in, const float *gamma,
                                       const float *beta, const float *run_mean,
                                       const float *run_var, bn_post post, size_t total, int C,
                                       size_t HW, float eps)
{
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int c = (int)((idx / HW) % (size_t)C);
        const float m = run_mean[c], is = 1.0f / sqrtf(run_var[c] + eps);
        out[idx] = apply_post(in[idx], idx, m, is, gamma[c], beta[c], post, 1.0f, 0u);
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
    const size_t HW = (size_t)HWi, CHW = (size_t)C * HW, M = (size_t)Ni * HW;
    const float m = mean[c], is = invstd[c], g = gamma[c], b = beta ? beta[c] : 0.0f;
    double sdy = 0.0, sdyx = 0.0;
    for (size_t j = threadIdx.x; j < M; j += BN_THREADS) {
        const size_t idx = chan_idx(j, c, HW, CHW);
        const float x = in[idx];
        const float t = masked_dy<MODE>(dout[idx], x, outp ? outp[idx] : x, keep, m, is, g, b);
        sdy += (double)t;
        sdyx += (double)(t * ((x - m) * is));
    }
    block_sum2(&sdy, &sdyx);
    if (threadIdx.x == 0) {
        if (dgamma)
            dgamma[c] += (float)sdyx;
        if (dbeta)
            dbeta[c] += (float)sdy;
    }
    if (!din)
        return;
    const float mdy = (float)(sdy / (double)M), mdyx = (float)(sdyx / (double)M);
    for (size_t j = threadIdx.x; j < M; j += BN_THREADS) {
        const size_t idx = chan_idx(j, c, HW, CHW);
        const float x = in[idx];
        const float t = masked_dy<MODE>(dout[idx], x, outp ? outp[idx] : x, keep, m, is, g, b);
        const float v = lm_bn_grad(t, x, m, is, g, mdy, mdyx);
        din[idx] = ACCUMULATE ? din[idx] + v : v;
    }
}

static int empty(const bn_dims *d) { return d->n <= 0 || d->c <= 0 || d->hw <= 0; }

static void forward_train(float *out, const float *in, const float *gamma, const float *beta,
                          float *mean, float *invstd, float *run_mean, float *run_var,
                          const bn_post &post, const bn_dims *d)
{
    if (empty(d))
        return;
    bn_train_kernel<<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
        out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d->c, d->hw, d->n, d->eps,
        d->momentum);
    CUDA_CHECK(cudaGetLastError());
}

static void forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                          const float *run_mean, const float *run_var, const bn_post &post,
                          const bn_dims *d)
{
    if (empty(d))
        return;
    const size_t total = (size_t)d->n * d->c * d->hw;
    bn_infer_kernel<<<gpu_blocks(total), GPU_THREADS, 0, gpu_context_stream()>>>(
        out, in, gamma, beta, run_mean, run_var, post, total, d->c, (size_t)d->hw, d->eps);
    CUDA_CHECK(cudaGetLastError());
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
    bn_backward_kernel<MASK_NONE, true><<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
        din, dgamma, dbeta, dout, in, NULL, 1.0f, gamma, NULL, mean, invstd, d->c, d->hw, d->n);
    CUDA_CHECK(cudaGetLastError());
}

extern "C" void bn_relu_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                                      const float *in, const float *out, float p,
                                      const float *gamma, const float *beta, const float *mean,
                                      const float *invstd, const bn_dims *d)
{
    if (empty(d))
        return;
    const float keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    if (out)
        bn_backward_kernel<MASK_FROM_OUT, false><<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
            din, dgamma, dbeta, dout, in, out, keep, gamma, beta, mean, invstd, d->c, d->hw,
            d->n);
    else
        bn_backward_kernel<MASK_RECOMPUTE, false><<<d->c, BN_THREADS, 0, gpu_context_stream()>>>(
            din, dgamma, dbeta, dout, in, NULL, keep, gamma, beta, mean, invstd, d->c, d->hw,
            d->n);
    CUDA_CHECK(cudaGetLastError());
}
