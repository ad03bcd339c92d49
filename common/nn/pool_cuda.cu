/* pool_cuda.cu — 2x2 max pooling and global average pooling on the GPU, the twins of pool.c.
 * See pool.h.
 * Public: maxpool2_forward_cuda, maxpool2_backward_cuda, gap_forward_cuda, gap_backward_cuda.
 *
 * One thread per output element (max-pool, GAP forward) or per input element (GAP backward), in
 * grid-stride loops. The 2x2 windows do not overlap, so the max-pool backward's one thread per
 * window is the only writer of its four inputs: no atomics. GAP forward sums a plane in one
 * thread, in the CPU's order: the planes it averages are small (7x7 in the WRNs), and the
 * result is then the CPU's bits.
 */
#include "base/cuda_check.h"
#include "nn/gpu_context.h"

extern "C" {
#include "nn/pool.h"
}

static __global__ void maxpool2_fwd_kernel(float *out, const float *in, size_t nout, int H, int W)
{
    const int Ho = H / 2, Wo = W / 2;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < nout;
         o += (size_t)gridDim.x * blockDim.x) {
        const size_t pl = o / ((size_t)Ho * Wo);
        const int r = (int)(o % ((size_t)Ho * Wo)), i = r / Wo, j = r % Wo;
        const float *r0 = in + pl * H * W + (size_t)(2 * i) * W, *r1 = r0 + W;
        /* pool.c's comparisons in its order: the first of equal maxima wins */
        float m = r0[2 * j];
        if (r0[2 * j + 1] > m)
            m = r0[2 * j + 1];
        if (r1[2 * j] > m)
            m = r1[2 * j];
        if (r1[2 * j + 1] > m)
            m = r1[2 * j + 1];
        out[o] = m;
    }
}

static __global__ void maxpool2_bwd_kernel(float *din, const float *dout, const float *in,
                                           const float *out, size_t nout, int H, int W)
{
    const int Ho = H / 2, Wo = W / 2;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < nout;
         o += (size_t)gridDim.x * blockDim.x) {
        const size_t pl = o / ((size_t)Ho * Wo);
        const int r = (int)(o % ((size_t)Ho * Wo)), i = r / Wo, j = r % Wo;
        const float *x = in + pl * H * W;
        float *dx = din + pl * H * W;
        const float m = out[o], g = dout[o];
        const size_t p0 = (size_t)(2 * i) * W + 2 * j;
        const size_t win[4] = {p0, p0 + 1, p0 + W, p0 + W + 1};
        for (int t = 0; t < 4; t++) {
            if (x[win[t]] == m) {
                dx[win[t]] += g;
                break;
            }
        }
    }
}

static __global__ void gap_fwd_kernel(float *out, const float *in, size_t planes, size_t HW)
{
    for (size_t pl = blockIdx.x * (size_t)blockDim.x + threadIdx.x; pl < planes;
         pl += (size_t)gridDim.x * blockDim.x) {
        const float *x = in + pl * HW;
        float s = 0.0f;
        for (size_t i = 0; i < HW; i++)
            s += x[i];
        out[pl] = s / (float)HW;
    }
}

static __global__ void gap_bwd_kernel(float *din, const float *dout, size_t n, size_t HW)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        din[i] += dout[i / HW] / (float)HW;
}

extern "C" void maxpool2_forward_cuda(float *out, const float *in, const pool_dims *d)
{
    const size_t nout = (size_t)d->n * d->c * (d->h / 2) * (d->w / 2);
    if (nout == 0)
        return;
    maxpool2_fwd_kernel<<<gpu_blocks(nout), GPU_THREADS, 0, gpu_context_stream()>>>(
        out, in, nout, d->h, d->w);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void maxpool2_backward_cuda(float *din, const float *dout, const float *in,
                                       const float *out, const pool_dims *d)
{
    const size_t nout = (size_t)d->n * d->c * (d->h / 2) * (d->w / 2);
    if (nout == 0)
        return;
    maxpool2_bwd_kernel<<<gpu_blocks(nout), GPU_THREADS, 0, gpu_context_stream()>>>(
        din, dout, in, out, nout, d->h, d->w);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void gap_forward_cuda(float *out, const float *in, const pool_dims *d)
{
    const size_t planes = (size_t)d->n * d->c, HW = (size_t)d->h * d->w;
    if (planes == 0)
        return;
    gap_fwd_kernel<<<gpu_blocks(planes), GPU_THREADS, 0, gpu_context_stream()>>>(out, in, planes,
                                                                                  HW);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void gap_backward_cuda(float *din, const float *dout, const pool_dims *d)
{
    const size_t HW = (size_t)d->h * d->w, n = (size_t)d->n * d->c * HW;
    if (n == 0)
        return;
    gap_bwd_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(din, dout, n, HW);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}
