/* dense_cuda.cu — the fully connected layer on the GPU through cuBLAS, the twin of dense.c.
 * See dense.h.
 * Public: dense_forward_cuda, dense_backward_cuda.
 *
 * cuBLAS is column-major; a row-major (R, C) matrix is the column-major (C, R) one, its
 * transpose. So each row-major product of dense.c is written as the product of the transposes:
 *   out (N,O) = in · Wᵀ      ->  outᵀ (O,N) = W · inᵀ          sgemm(T, N, O, N, I)
 *   dW (O,I) += doutᵀ · in   ->  dWᵀ (I,O) += inᵀ · dout       sgemm(N, T, I, O, N)
 *   din (N,I) += dout · W    ->  dinᵀ (I,N) += Wᵀ · doutᵀ      sgemm(N, N, I, N, O)
 * with beta = 1 for the += outputs, and for the forward when the bias was written first (as
 * dense.c does: out = b, then out += in · Wᵀ).
 */
#include "base/cuda_check.h"
#include "nn/gpu_context.h"

extern "C" {
#include "nn/dense.h"
}

static __global__ void fill_bias_kernel(float *out, const float *b, size_t n, int O)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = b[i % (size_t)O];
}

/* db[o] += Σ_i dout[i][o], one thread per output in dense.c's order (rows first to last). */
static __global__ void bias_grad_kernel(float *db, const float *dout, int N, int O)
{
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < O; o += gridDim.x * blockDim.x) {
        float s = db[o];
        for (int i = 0; i < N; i++)
            s += dout[(size_t)i * O + o];
        db[o] = s;
    }
}

extern "C" void dense_forward_cuda(float *out, const float *in, const float *w, const float *b,
                                   const dense_dims *d)
{
    if (d->n == 0 || d->out == 0)
        return;
    const float one = 1.0f, zero = 0.0f;
    const size_t n = (size_t)d->n * d->out;
    cudaStream_t st = gpu_context_stream();
    if (b) {
        fill_bias_kernel<<<gpu_blocks(n), GPU_THREADS, 0, st>>>(out, b, n, d->out);
        CUDA_CHECK_LAUNCH(st);
    }
    if (d->in == 0) { /* no products: out is the bias or 0 (dense.c); lda = 0 is invalid */
        if (!b)
            gpu_context_zero(out, n * sizeof *out);
        return;
    }
    CUDA_CHECK(cublasSgemm(gpu_context_cublas(), CUBLAS_OP_T, CUBLAS_OP_N, d->out, d->n, d->in,
                           &one, w, d->in, in, d->in, b ? &one : &zero, out, d->out));
    CUDA_CHECK_LAUNCH(st);
}

extern "C" void dense_backward_cuda(float *din, float *dw, float *db, const float *dout,
                                    const float *in, const float *w, const dense_dims *d)
{
    if (d->n == 0 || d->out == 0)
        return;
    const float one = 1.0f;
    cudaStream_t st = gpu_context_stream();
    if (db) {
        bias_grad_kernel<<<gpu_blocks((size_t)d->out), GPU_THREADS, 0, st>>>(db, dout, d->n,
                                                                              d->out);
        CUDA_CHECK_LAUNCH(st);
    }
    if (d->in == 0) /* dw and din have no elements; ld = 0 is invalid */
        return;
    if (dw) {
        CUDA_CHECK(cublasSgemm(gpu_context_cublas(), CUBLAS_OP_N, CUBLAS_OP_T, d->in, d->out,
                               d->n, &one, in, d->in, dout, d->out, &one, dw, d->in));
        CUDA_CHECK_LAUNCH(st);
    }
    if (din) {
        CUDA_CHECK(cublasSgemm(gpu_context_cublas(), CUBLAS_OP_N, CUBLAS_OP_N, d->in, d->n,
                               d->out, &one, w, d->in, dout, d->out, &one, din, d->in));
        CUDA_CHECK_LAUNCH(st);
    }
}
