/* conv2d_cudnn.cu — the convolution of conv2d.h through cuDNN, the GPU twin of conv2d_gemm.c /
 * conv2d_dnnl.c. See conv2d.h.
 * Public: conv2d_cudnn_work_floats, conv2d_cudnn_forward, conv2d_cudnn_backward,
 *         conv2d_cudnn_release.
 *
 * cuDNN 9's legacy convolution API, NCHW float32: weights (Cout, Cin, k, k) are cuDNN's KCRS
 * filter layout, PyTorch's order, and conv2d.h's "same" convolution is cross-correlation with
 * padding k/2 and stride 1. NCHW because it is the layout of every other layer here; whether
 * NHWC is faster is a measurement for a GPU.
 *
 * A plan per shape (N included, as cuDNN's choice depends on it) and TF32 setting holds the
 * descriptors and the three algorithms (forward, backward-data, backward-filter), made on first
 * use and kept for the process. The algorithms are measured with cudnnFind*Algorithm (which
 * allocates its own scratch), fastest first, taking the first that succeeded within
 * CONV2D_CUDNN_MAX_WORK_BYTES and, with TF32 off, uses plain FMA math; cuDNN's heuristics
 * (cudnnGet*Algorithm_v7) stand in if the measurement gives none. Each direction has its own
 * convolution descriptor, set to the math type its algorithm was measured with (cuDNN picks
 * tensor-core kernels from algorithm + math type together).
 *
 * The += of backward is cuDNN's beta = 1: output = alpha·result + beta·output.
 */
#include <stdio.h>

#include "base/cuda_check.h"
#include "nn/gpu_context.h"

extern "C" {
#include "nn/conv2d.h"
}

/* Shapes of one WRN at two batch sizes (full and last) with TF32 on and off fit many times. */
#define CONV_PLANS_MAX 128

typedef struct {
    int n, cin, h, w, cout, k, tf32;
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t fwd_desc, bwd_data_desc, bwd_filter_desc;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t work_bytes; /* the largest of the three algorithms' workspaces */
} conv_plan;

static conv_plan plans[CONV_PLANS_MAX];
static int nplans;
static void *shared_work; /* for calls with work = NULL */
static size_t shared_work_bytes;

/* Whether a measured or suggested algorithm may be used: never one that rounds fp32 to fp16
 * (ALLOW_CONVERSION), and with TF32 off only plain FMA math. */
template <typename Perf> static bool usable(const Perf &p, int tf32)
{
    return p.status == CUDNN_STATUS_SUCCESS && p.memory <= CONV2D_CUDNN_MAX_WORK_BYTES &&
           p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
           (tf32 || p.mathType == CUDNN_FMA_MATH);
}

template <typename Perf> static int first_usable(const Perf *p, int n, int tf32)
{
    for (int i = 0; i < n; i++)
        if (usable(p[i], tf32))
            return i;
    return -1;
}

static cudnnConvolutionDescriptor_t conv_desc(int k, int tf32)
{
    cudnnConvolutionDescriptor_t c;
    CUDA_CHECK(cudnnCreateConvolutionDescriptor(&c));
    CUDA_CHECK(cudnnSetConvolution2dDescriptor(c, k / 2, k / 2, 1, 1, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDA_CHECK(cudnnSetConvolutionMathType(c, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    return c;
}

static void describe(char *buf, size_t len, const conv_plan *p)
{
    snprintf(buf, len, "N=%d Cin=%d %dx%d Cout=%d k=%d TF32 %s", p->n, p->cin, p->h, p->w,
             p->cout, p->k, p->tf32 ? "on" : "off");
}

static void choose_fwd(cudnnHandle_t h, conv_plan *p)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0, i = -1;
    if (cudnnFindConvolutionForwardAlgorithm(h, p->x, p->f, p->fwd_desc, p->y,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                             perf) == CUDNN_STATUS_SUCCESS)
        i = first_usable(perf, n, p->tf32);
    if (i < 0) {
        CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            h, p->x, p->f, p->fwd_desc, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
        i = first_usable(perf, n, p->tf32);
    }
    if (i < 0) {
        char s[128];
        describe(s, sizeof s, p);
        fatal_error("conv2d_cudnn: no cuDNN forward algorithm for %s", s);
    }
    p->fwd = perf[i].algo;
    CUDA_CHECK(cudnnSetConvolutionMathType(p->fwd_desc, perf[i].mathType));
}

static void choose_bwd_data(cudnnHandle_t h, conv_plan *p)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0, i = -1;
    if (cudnnFindConvolutionBackwardDataAlgorithm(h, p->f, p->y, p->bwd_data_desc, p->x,
                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
                                                  perf) == CUDNN_STATUS_SUCCESS)
        i = first_usable(perf, n, p->tf32);
    if (i < 0) {
        CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, p->f, p->y, p->bwd_data_desc, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
            perf));
        i = first_usable(perf, n, p->tf32);
    }
    if (i < 0) {
        char s[128];
        describe(s, sizeof s, p);
        fatal_error("conv2d_cudnn: no cuDNN backward-data algorithm for %s", s);
    }
    p->bwd_data = perf[i].algo;
    CUDA_CHECK(cudnnSetConvolutionMathType(p->bwd_data_desc, perf[i].mathType));
}

static void choose_bwd_filter(cudnnHandle_t h, conv_plan *p)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0, i = -1;
    if (cudnnFindConvolutionBackwardFilterAlgorithm(h, p->x, p->y, p->bwd_filter_desc, p->f,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
                                                    perf) == CUDNN_STATUS_SUCCESS)
        i = first_usable(perf, n, p->tf32);
    if (i < 0) {
        CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, p->x, p->y, p->bwd_filter_desc, p->f, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
            perf));
        i = first_usable(perf, n, p->tf32);
    }
    if (i < 0) {
        char s[128];
        describe(s, sizeof s, p);
        fatal_error("conv2d_cudnn: no cuDNN backward-filter algorithm for %s", s);
    }
    p->bwd_filter = perf[i].algo;
    CUDA_CHECK(cudnnSetConvolutionMathType(p->bwd_filter_desc, perf[i].mathType));
}

static void make_plan(conv_plan *p, const conv2d_dims *d, int tf32)
{
    cudnnHandle_t h = gpu_context_cudnn();
    char s[128];
    *p = conv_plan{};
    p->n = d->n, p->cin = d->cin, p->h = d->h, p->w = d->w, p->cout = d->cout, p->k = d->k;
    p->tf32 = tf32;
    if (d->k != 1 && d->k != 3) {
        describe(s, sizeof s, p);
        fatal_error("conv2d_cudnn: kernel size must be 1 or 3 (%s)", s);
    }
    CUDA_CHECK(cudnnCreateTensorDescriptor(&p->x));
    CUDA_CHECK(cudnnCreateTensorDescriptor(&p->y));
    CUDA_CHECK(cudnnCreateTensorDescriptor(&p->bias));
    CUDA_CHECK(cudnnCreateFilterDescriptor(&p->f));
    CUDA_CHECK(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n, d->cin,
                                          d->h, d->w));
    CUDA_CHECK(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n,
                                          d->cout, d->h, d->w));
    CUDA_CHECK(cudnnSetTensor4dDescriptor(p->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, d->cout,
                                          1, 1));
    CUDA_CHECK(cudnnSetFilter4dDescriptor(p->f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d->cout,
                                          d->cin, d->k, d->k));
    p->fwd_desc = conv_desc(d->k, tf32);
    p->bwd_data_desc = conv_desc(d->k, tf32);
    p->bwd_filter_desc = conv_desc(d->k, tf32);
    /* "same" padding keeps H x W; cuDNN must agree before y's descriptor means anything */
    int on, oc, oh, ow;
    CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(p->fwd_desc, p->x, p->f, &on, &oc, &oh, &ow));
    if (on != d->n || oc != d->cout || oh != d->h || ow != d->w) {
        describe(s, sizeof s, p);
        fatal_error("conv2d_cudnn: cuDNN gives output %dx%dx%dx%d for %s", on, oc, oh, ow, s);
    }
    choose_fwd(h, p);
    choose_bwd_data(h, p);
    choose_bwd_filter(h, p);
    size_t a = 0, b = 0, c = 0;
    CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->f, p->fwd_desc, p->y, p->fwd,
                                                       &a));
    CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->f, p->y, p->bwd_data_desc, p->x,
                                                            p->bwd_data, &b));
    CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->bwd_filter_desc,
                                                              p->f, p->bwd_filter, &c));
    p->work_bytes = a > b ? a : b;
    if (c > p->work_bytes)
        p->work_bytes = c;
}

static conv_plan *plan_for(const conv2d_dims *d)
{
    const int tf32 = gpu_context_tf32();
    for (int i = 0; i < nplans; i++) {
        conv_plan *p = &plans[i];
        if (p->n == d->n && p->cin == d->cin && p->h == d->h && p->w == d->w &&
            p->cout == d->cout && p->k == d->k && p->tf32 == tf32)
            return p;
    }
    if (nplans == CONV_PLANS_MAX)
        fatal_error("conv2d_cudnn: more than %d convolution shapes; raise CONV_PLANS_MAX",
                    CONV_PLANS_MAX);
    make_plan(&plans[nplans], d, tf32);
    return &plans[nplans++];
}

/* The caller's workspace, or the shared one grown to this plan's size. */
static void *workspace(const conv_plan *p, float *work)
{
    if (work || p->work_bytes == 0)
        return work;
    if (p->work_bytes > shared_work_bytes) {
        /* queued convolutions may still use the old one */
        CUDA_CHECK(cudaStreamSynchronize(gpu_context_stream()));
        gpu_context_free(shared_work);
        shared_work = NULL;
        shared_work_bytes = 0;
        shared_work = gpu_context_alloc(p->work_bytes);
        shared_work_bytes = p->work_bytes;
    }
    return shared_work;
}

extern "C" size_t conv2d_cudnn_work_floats(const conv2d_dims *d)
{
    if (d->n <= 0)
        return 0;
    return (plan_for(d)->work_bytes + sizeof(float) - 1) / sizeof(float);
}

extern "C" void conv2d_cudnn_forward(float *out, const float *in, const float *w, const float *b,
                                     const conv2d_dims *d, float *work)
{
    if (d->n <= 0)
        return;
    const conv_plan *p = plan_for(d);
    cudnnHandle_t h = gpu_context_cudnn();
    const float one = 1.0f, zero = 0.0f;
    CUDA_CHECK(cudnnConvolutionForward(h, &one, p->x, in, p->f, w, p->fwd_desc, p->fwd,
                                       workspace(p, work), p->work_bytes, &zero, p->y, out));
    if (b)
        CUDA_CHECK(cudnnAddTensor(h, &one, p->bias, b, &one, p->y, out));
}

extern "C" void conv2d_cudnn_backward(float *din, float *dw, float *db, const float *dout,
                                      const float *in, const float *w, const conv2d_dims *d,
                                      float *work)
{
    if (d->n <= 0)
        return;
    const conv_plan *p = plan_for(d);
    cudnnHandle_t h = gpu_context_cudnn();
    const float one = 1.0f;
    void *ws = workspace(p, work);
    if (db)
        CUDA_CHECK(cudnnConvolutionBackwardBias(h, &one, p->y, dout, &one, p->bias, db));
    if (dw)
        CUDA_CHECK(cudnnConvolutionBackwardFilter(h, &one, p->x, in, p->y, dout,
                                                  p->bwd_filter_desc, p->bwd_filter, ws,
                                                  p->work_bytes, &one, p->f, dw));
    if (din)
        CUDA_CHECK(cudnnConvolutionBackwardData(h, &one, p->f, w, p->y, dout, p->bwd_data_desc,
                                                p->bwd_data, ws, p->work_bytes, &one, p->x, din));
}

extern "C" void conv2d_cudnn_release(void)
{
    for (int i = 0; i < nplans; i++) {
        conv_plan *p = &plans[i];
        CUDA_CHECK(cudnnDestroyTensorDescriptor(p->x));
        CUDA_CHECK(cudnnDestroyTensorDescriptor(p->y));
        CUDA_CHECK(cudnnDestroyTensorDescriptor(p->bias));
        CUDA_CHECK(cudnnDestroyFilterDescriptor(p->f));
        CUDA_CHECK(cudnnDestroyConvolutionDescriptor(p->fwd_desc));
        CUDA_CHECK(cudnnDestroyConvolutionDescriptor(p->bwd_data_desc));
        CUDA_CHECK(cudnnDestroyConvolutionDescriptor(p->bwd_filter_desc));
    }
    nplans = 0;
    if (shared_work) {
        CUDA_CHECK(cudaStreamSynchronize(gpu_context_stream()));
        gpu_context_free(shared_work);
    }
    shared_work = NULL;
    shared_work_bytes = 0;
}
