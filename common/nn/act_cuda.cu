/* act_cuda.cu — ReLU and inverted dropout on the GPU, the twins of act.c. See act.h.
 * Public: relu_forward_cuda, relu_backward_cuda, dropout_forward_cuda, dropout_backward_cuda.
 *
 * One thread per element in a grid-stride loop; every element calls the layer_math.h helper the
 * CPU loop calls with the same index, so the dropout mask of element i is lm_dropout_scale(key,
 * i, p) on both sides: the same bits for the same key.
 */
#include "base/cuda_check.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"

extern "C" {
#include "nn/act.h"
}

static __global__ void relu_fwd_kernel(float *out, const float *in, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = lm_relu(in[i]);
}

static __global__ void relu_bwd_kernel(float *din, const float *dout, const float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        din[i] += lm_relu_grad(dout[i], out[i]);
}

static __global__ void dropout_fwd_kernel(float *out, const float *in, size_t n, float p,
                                          uint64_t key)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i] * lm_dropout_scale(key, i, p);
}

/* p = 0 adds dout unscaled, as act.c does. */
static __global__ void dropout_bwd_kernel(float *din, const float *dout, size_t n, float p,
                                          uint64_t key)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        din[i] += p == 0.0f ? dout[i] : dout[i] * lm_dropout_scale(key, i, p);
}

extern "C" void relu_forward_cuda(float *out, const float *in, size_t n)
{
    if (n == 0)
        return;
    relu_fwd_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(out, in, n);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void relu_backward_cuda(float *din, const float *dout, const float *out, size_t n)
{
    if (n == 0)
        return;
    relu_bwd_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(din, dout, out, n);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void dropout_forward_cuda(float *out, const float *in, size_t n, float p,
                                     uint64_t key, int train)
{
    if (n == 0)
        return;
    /* act.c copies with memmove and loops in order; a device copy between overlapping ranges is
     * undefined and the kernel's threads would race, so only out == in or disjoint */
    const size_t bytes = n * sizeof *out;
    if (out != in && (const char *)out < (const char *)in + bytes &&
        (const char *)in < (const char *)out + bytes)
        fatal_error("dropout_forward_cuda: out and in overlap without being the same buffer");
    if (!train || p == 0.0f) {
        if (out != in)
            CUDA_CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice,
                                       gpu_context_stream()));
        return;
    }
    dropout_fwd_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(out, in, n, p,
                                                                                   key);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" void dropout_backward_cuda(float *din, const float *dout, size_t n, float p,
                                      uint64_t key)
{
    if (n == 0)
        return;
    dropout_bwd_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(din, dout, n, p,
                                                                                   key);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}
