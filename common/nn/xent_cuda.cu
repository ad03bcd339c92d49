/* xent_cuda.cu — softmax cross-entropy and argmax accuracy on the GPU, the twins of xent.c.
 * See xent.h.
 * Public: xent_forward_cuda, xent_backward_cuda, xent_correct_cuda.
 *
 * The loss and the correct count are one number each per batch: one block of XENT_THREADS
 * threads takes rows tid, tid + XENT_THREADS, ... (a batch has at most a few thousand rows of
 * ten classes), each row with xent.c's operations (float maximum, exp and log in double), and
 * the block adds the rows' results up in a fixed tree order. Only that number comes back to the
 * host, through the context's scratch. The backward is elementwise, xent.c's float expression.
 */
#include <limits.h>

#include "base/cuda_check.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"

extern "C" {
#include "nn/xent.h"
}

#define XENT_THREADS 256

typedef struct {
    double loss;   /* Σ over rows of lse − z[label] */
    int bad_row;   /* first row with a label outside [0, k), or INT_MAX */
    int bad_label; /* its label */
} xent_result;

static __global__ void __launch_bounds__(XENT_THREADS)
    xent_fwd_kernel(xent_result *res, float *probs, const float *logits, const int *labels,
                    int n, int k)
{
    __shared__ double part[XENT_THREADS];
    __shared__ int bad;
    const int tid = threadIdx.x;
    if (tid == 0)
        bad = INT_MAX;
    __syncthreads();
    double total = 0.0;
    for (int i = tid; i < n; i += XENT_THREADS) {
        const int y = labels[i];
        if (y < 0 || y >= k) {
            atomicMin(&bad, i);
            continue;
        }
        const float *z = logits + (size_t)i * k;
        float *p = probs + (size_t)i * k;
        const double lse = lm_softmax_row(p, z, k);
        total += lse - z[y];
    }
    part[tid] = total;
    __syncthreads();
    for (int half = XENT_THREADS / 2; half > 0; half /= 2) {
        if (tid < half)
            part[tid] += part[tid + half];
        __syncthreads();
    }
    if (tid == 0) {
        res->loss = part[0];
        res->bad_row = bad;
        res->bad_label = bad == INT_MAX ? 0 : labels[bad];
    }
}

static __global__ void xent_bwd_kernel(float *dlogits, const float *probs, const int *labels,
                                       size_t nk, int k, float s)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < nk;
         e += (size_t)gridDim.x * blockDim.x) {
        const int j = (int)(e % (size_t)k);
        dlogits[e] += s * (probs[e] - (j == labels[e / (size_t)k] ? 1.0f : 0.0f));
    }
}

static __global__ void __launch_bounds__(XENT_THREADS)
    xent_correct_kernel(int *res, const float *logits, const int *labels, int n, int k)
{
    __shared__ int part[XENT_THREADS];
    const int tid = threadIdx.x;
    int correct = 0;
    for (int i = tid; i < n; i += XENT_THREADS) {
        const float *z = logits + (size_t)i * k;
        int best = 0;
        for (int j = 1; j < k; j++)
            if (z[j] > z[best])
                best = j;
        correct += best == labels[i];
    }
    part[tid] = correct;
    __syncthreads();
    for (int half = XENT_THREADS / 2; half > 0; half /= 2) {
        if (tid < half)
            part[tid] += part[tid + half];
        __syncthreads();
    }
    if (tid == 0)
        *res = part[0];
}

extern "C" double xent_forward_cuda(float *probs, const float *logits, const int *labels, int n,
                                    int k)
{
    if (n <= 0)
        return 0.0;
    xent_result *dres = (xent_result *)gpu_context_scratch(sizeof(xent_result));
    xent_fwd_kernel<<<1, XENT_THREADS, 0, gpu_context_stream()>>>(dres, probs, logits, labels, n,
                                                                  k);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
    xent_result r;
    gpu_context_download(&r, dres, sizeof r);
    if (r.bad_row != INT_MAX)
        fatal_error("xent_forward: label %d of row %d is outside 0..%d", r.bad_label, r.bad_row,
                    k - 1);
    return r.loss / n;
}

extern "C" void xent_backward_cuda(float *dlogits, const float *probs, const int *labels, int n,
                                   int k, float scale)
{
    const size_t nk = (size_t)(n > 0 ? n : 0) * (size_t)(k > 0 ? k : 0);
    if (nk == 0)
        return;
    const float s = scale / (float)n;
    xent_bwd_kernel<<<gpu_blocks(nk), GPU_THREADS, 0, gpu_context_stream()>>>(dlogits, probs,
                                                                              labels, nk, k, s);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

extern "C" int xent_correct_cuda(const float *logits, const int *labels, int n, int k)
{
    if (n <= 0)
        return 0;
    int *dres = (int *)gpu_context_scratch(sizeof(int));
    xent_correct_kernel<<<1, XENT_THREADS, 0, gpu_context_stream()>>>(dres, logits, labels, n, k);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
    int r = 0;
    gpu_context_download(&r, dres, sizeof r);
    return r;
}
