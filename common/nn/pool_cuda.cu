/* pool_cuda.cu — 2x2 max pooling and global average pooling on the GPU, the twins of pool.c.
 * See pool.h.
 * Public: maxpool2_forward_cuda, maxpool2_backward_cuda, gap_forward_cuda, gap_backward_cuda.
 *
 * One thread per output element (max-pool, GAP forward) or per input element (GAP backward), in
 * grid-stride loops. The 2x2 windows do not overlap, so the max-pool backward's one thread per
 * window is the only writer of its four inputs: no atomics. GAP forward sums a plane in one
 * thread, in the CPU's order: the planes it averages are small (7x7 in the WRNs), and the
 * result is then the CPU's bits.
 * NHWC tensors (pool_dims.nhwc, a GPU model with HVDLAB_ACTIVATION_LAYOUT=nhwc): the same
 * kernels, an element's place found through its layout (plane_at); each output is still computed
 * in the CPU's order, so the bits are the NCHW kernels'.
 */
#include "base/cuda_check.h"
#include "nn/gpu_context.h"

extern "C" {
#include "nn/pool.h"
}

/* Where output element o's input window starts, and the step between neighbouring pixels:
 * NCHW: plane (n, c) of H·W, pixels one apart; NHWC: (n, y, x, c), pixels C apart. *i, *j: the
 * output's row and column. */
static __device__ __forceinline__ size_t plane_at(size_t o, int C, int H, int W, bool nhwc,
                                                  size_t *step, int *i, int *j)
{
    const int Ho = H / 2, Wo = W / 2;
    if (!nhwc) {
        const size_t pl = o / ((size_t)Ho * Wo);
        const int r = (int)(o % ((size_t)Ho * Wo));
        *i = r / Wo;
        *j = r % Wo;
        *step = 1;
        return pl * H * W;
    }
    const int c = (int)(o % (size_t)C);
    size_t q = o / (size_t)C;
    *j = (int)(q % (size_t)Wo);
    q /= (size_t)Wo;
    *i = (int)(q % (size_t)Ho);
    *step = (size_t)C;
    return q / (size_t)Ho * H * W * C + (size_t)c;
}

static __global__ void maxpool2_fwd_kernel(float *out, const float *in, size_t nout, int C, int H,
                                           int W, bool nhwc)
{
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < nout;
         o += (size_t)gridDim.x * blockDim.x) {
        size_t s;
        int i, j;
        const float *x = in + plane_at(o, C, H, W, nhwc, &s, &i, &j);
        const size_t p0 = ((size_t)(2 * i) * W + 2 * j) * s, p1 = p0 + (size_t)W * s;
        /* pool.c's comparisons in its order: the first of equal maxima wins */
        float m = x[p0];
        if (x[p0 + s] > m)
            m = x[p0 + s];
        if (x[p1] > m)
            m = x[p1];
        if (x[p1 + s] > m)
            m = x[p1 + s];
        out[o] = m;
    }
}

static __global__ void maxpool2_bwd_kernel(float *din, const float *dout, const float *in,
                                           const float *out, size_t nout, int C, int H, int W,
                                           bool nhwc)
{
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < nout;
         o += (size_t)gridDim.x * blockDim.x) {
        size_t s;
        int i, j;
        const size_t base = plane_at(o, C, H, W, nhwc, &s, &i, &j);
        const float *x = in + base;
        float *dx = din + base;
        const float m = out[o], g = dout[o];
        const size_t p0 = ((size_t)(2 * i) * W + 2 * j) * s, p1 = p0 + (size_t)W * s;
        const size_t win[4] = {p0, p0 + s, p1, p1 + s};
        for (int t = 0; t < 4; t++) {
            if (x[win[t]] == m) {
                dx[win[t]] += g;
                break;
            }
        }
    }
}

/* out[n·C + c], the mean of plane (n, c): HW values one apart (NCHW) or C apart (NHWC). */
static __global__ void gap_fwd_kernel(float *out, const float *in, size_t planes, int C,
                                      size_t HW, bool nhwc)
{
    for (size_t pl = blockIdx.x * (size_t)blockDim.x + threadIdx.x; pl < planes;
         pl += (size_t)gridDim.x * blockDim.x) {
        const size_t step = nhwc ? (size_t)C : 1;
        const float *x = nhwc ? in + pl / C * HW * C + pl % C : in + pl * HW;
        float s = 0.0f;
        for (size_t i = 0; i < HW; i++)
            s += x[i * step];
        out[pl] = s / (float)HW;
    }
}

static __global__ void gap_bwd_kernel(float *din, const float *dout, size_t n, int C, size_t HW,
                                      bool nhwc)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        din[i] += dout[nhwc ? i / (HW * C) * C + i % C : i / HW] / (float)HW;
}

extern "C" void maxpool2_forward_cuda(float *out, const float *in, const pool_dims *d)
{
    const size_t nout = (size_t)d->n * d->c * (d->h / 2) * (d->w / 2);
    if (nout == 0)
        return;
    maxpool2_fwd_kernel<<<gpu_blocks(nout), GPU_THREADS, 0, gpu_context_stream()>>>(
        out, in, nout, d->c, d->h, d->w, d->nhwc != 0);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void maxpool2_backward_cuda(float *din, const float *dout, const float *in,
                                       const float *out, const pool_dims *d)
{
    const size_t nout = (size_t)d->n * d->c * (d->h / 2) * (d->w / 2);
    if (nout == 0)
        return;
    maxpool2_bwd_kernel<<<gpu_blocks(nout), GPU_THREADS, 0, gpu_context_stream()>>>(
        din, dout, in, out, nout, d->c, d->h, d->w, d->nhwc != 0);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void gap_forward_cuda(float *out, const float *in, const pool_dims *d)
{
    const size_t planes = (size_t)d->n * d->c, HW = (size_t)d->h * d->w;
    if (planes == 0)
        return;
    gap_fwd_kernel<<<gpu_blocks(planes), GPU_THREADS, 0, gpu_context_stream()>>>(
        out, in, planes, d->c, HW, d->nhwc != 0);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void gap_backward_cuda(float *din, const float *dout, const pool_dims *d)
{
    const size_t HW = (size_t)d->h * d->w, n = (size_t)d->n * d->c * HW;
    if (n == 0)
        return;
    gap_bwd_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(din, dout, n, d->c,
                                                                             HW, d->nhwc != 0);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}
