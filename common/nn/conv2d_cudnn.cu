/* conv2d_cudnn.cu — the convolution of conv2d.h through cuDNN, the GPU twin of conv2d_gemm.c /
 * conv2d_dnnl.c. See conv2d.h.
 * Public: conv2d_cudnn_work_floats, conv2d_cudnn_forward, conv2d_cudnn_backward,
 *         conv2d_cudnn_backward_set, conv2d_cudnn_algos, conv2d_cudnn_release.
 *
 * cuDNN 9's legacy convolution API, float32: weights (Cout, Cin, k, k) are cuDNN's KCRS
 * filter layout, PyTorch's order, and conv2d.h's "same" convolution is cross-correlation with
 * padding k/2 and stride 1. Activations NCHW, or NHWC where the model keeps them so
 * (conv2d_dims.nhwc: HVDLAB_ACTIVATION_LAYOUT=nhwc; on an H100 cuDNN's Find summed 8.4 ms for
 * wrn-16-4's convolutions at batch 512 in NHWC against 10.9 in NCHW, and within 4 % at the other
 * rows, bench-conv-layout-gpu). NHWC convolutions take NHWC filters (KRSC), as that bench timed
 * them; the model's weights and gradients stay KCRS (checkpoints, optimizers and collectives do
 * not see the layout), so a 3x3 convolution with more than one input channel turns its weights
 * into KRSC before it uses them, and its filter gradient back into KCRS as it adds it
 * (krsc_kernel): two passes over the weights, small beside the activations'. With k = 1 or one
 * input channel the two orders are the same bytes.
 *
 * A plan per shape (N included, as cuDNN's choice depends on it) and TF32 setting holds the
 * descriptors and the three algorithms (forward, backward-data, backward-filter), made on first
 * use and kept until gpu_context_release. The algorithms are measured with cudnnFind*Algorithm
 * (which allocates its own scratch), fastest first, taking the first that succeeded, is
 * deterministic (unless HVDLAB_CUDNN_DETERMINISTIC=0), with TF32 off uses plain FMA math, and
 * whose workspace (asked of cuDNN with cudnnGet*WorkspaceSize) fits CONV2D_CUDNN_MAX_WORK_BYTES;
 * cuDNN's heuristics (cudnnGet*Algorithm_v7) stand in, under the same rules, if the measurement
 * gives none. Each direction has its own
 * convolution descriptor, set to the math type its algorithm was measured with (cuDNN picks
 * tensor-core kernels from algorithm + math type together).
 *
 * The += of backward is cuDNN's beta = 1: output = alpha·result + beta·output; backward_set's =
 * into din is beta = 0, with which cuDNN does not read din (no zeroing first, no read of it).
 *
 * The bias gradient (db += the sum of dout over N, H and W), NCHW: two cuBLAS matrix-vector
 * products with a vector of ones, Caffe's way (dout as N·C rows of H·W floats summed row by row,
 * then each channel's N sums into db), or cuDNN's cudnnConvolutionBackwardBias with
 * HVDLAB_BIAS_GRAD_CUBLAS=0 (read at the first plan). NHWC: batch norm's NHWC channel sums
 * (bn_nhwc_channel_sums_cuda, bn.h). All deterministic. Why: on an H200 (2026-11-27,
 * bench/conv_layout_gpu.c, the convolutions of a training step as the kit calls them) cuDNN's
 * backward bias took 5.5 of wrn-16-4's 14.4 ms a step at batch 512 in NCHW, where cuBLAS took
 * 0.84 (cuBLAS faster at every row). In NHWC the same calls took 21.3 ms, where Find timed the
 * convolutions themselves within 5 % of NCHW's: the bias passes are where NHWC lost, and the
 * 1x1 shortcuts, whose bias is not folded into batch norm, keep theirs. batch norm's NHWC sums
 * read a tensor about as fast as its other passes (untimed here as a bias gradient).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/env_switch.h"
#include "nn/gpu_context.h"

extern "C" {
#include "nn/bn.h"
}

extern "C" {
#include "nn/conv2d.h"
}

/* Shapes of one WRN at two batch sizes (full and last) with TF32 on and off fit many times. */
#define CONV_PLANS_MAX 128

typedef struct {
    int n, cin, h, w, cout, k, tf32, nhwc;
    int det; /* deterministic algorithms only */
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t fwd_desc, bwd_data_desc, bwd_filter_desc;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    cudnnMathType_t fwd_math, bwd_data_math, bwd_filter_math;
    size_t fwd_bytes, bwd_data_bytes, bwd_filter_bytes;
    size_t work_bytes; /* the largest of the three algorithms' workspaces */
} conv_plan;

/* Plans and the shared workspace belong to gpu_context's device and handles: they are freed by
 * gpu_context_release (conv2d_cudnn_release is registered with it). */
static conv_plan plans[CONV_PLANS_MAX];
static int nplans;
static void *shared_work; /* for calls with work = NULL */
static size_t shared_work_bytes;
static int deterministic = -1; /* HVDLAB_CUDNN_DETERMINISTIC, read at the first plan */
static int bias_grad_cublas = -1; /* HVDLAB_BIAS_GRAD_CUBLAS, read at the first plan */
/* The cuBLAS bias gradient's device buffers, grown at plan time to the largest plan's needs:
 * ones (max(H·W, N) of 1.0f) and row_sums (N·C, one sum per sample and channel). */
static float *bias_ones, *bias_row_sums;
static size_t bias_ones_n, bias_row_sums_n;
/* An NHWC plan's KRSC weights and filter gradient (needs_krsc), grown at plan time to the
 * largest such plan's filter. */
static float *krsc_w, *krsc_dw;
static size_t krsc_n;

/* Whether a measured or suggested algorithm may be used: never one that rounds fp32 to fp16
 * (ALLOW_CONVERSION), with TF32 off only plain FMA math, and by default only deterministic ones
 * (bitwise the same result for the same input, as PyTorch's deterministic flag asks). Its
 * workspace is checked separately (fitting below). */
template <typename Perf> static bool usable(const Perf &p, int tf32, int det)
{
    return p.status == CUDNN_STATUS_SUCCESS &&
           p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
           (tf32 || p.mathType == CUDNN_FMA_MATH) && (!det || p.determinism == CUDNN_DETERMINISTIC);
}

/* The first usable candidate whose workspace, asked of cuDNN for that algorithm and math type
 * (the heuristics' perf.memory is an estimate), fits CONV2D_CUDNN_MAX_WORK_BYTES; -1 if none.
 * Leaves desc set to the chosen math type and *bytes to its workspace. */
template <typename Perf, typename WorkSize>
static int first_fitting(const Perf *perf, int n, const conv_plan *p,
                         cudnnConvolutionDescriptor_t desc, WorkSize work_size, size_t *bytes)
{
    for (int i = 0; i < n; i++) {
        if (!usable(perf[i], p->tf32, p->det))
            continue;
        CUDA_CHECK(cudnnSetConvolutionMathType(desc, perf[i].mathType));
        size_t b = 0;
        if (work_size(perf[i].algo, &b) == CUDNN_STATUS_SUCCESS &&
            b <= CONV2D_CUDNN_MAX_WORK_BYTES) {
            *bytes = b;
            return i;
        }
    }
    /* the next search starts from the math type the plan asked for */
    CUDA_CHECK(cudnnSetConvolutionMathType(desc, p->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
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
    snprintf(buf, len, "N=%d Cin=%d %dx%d Cout=%d k=%d %s TF32 %s%s", p->n, p->cin, p->h, p->w,
             p->cout, p->k, p->nhwc ? "NHWC" : "NCHW", p->tf32 ? "on" : "off",
             p->det ? "" : " nondeterministic allowed");
}

static void no_algorithm(const conv_plan *p, const char *direction)
{
    char s[160];
    describe(s, sizeof s, p);
    fatal_error("conv2d_cudnn: no usable cuDNN %s algorithm within %zu bytes of workspace for %s%s",
                direction, (size_t)CONV2D_CUDNN_MAX_WORK_BYTES, s,
                p->det ? " (HVDLAB_CUDNN_DETERMINISTIC=0 allows nondeterministic ones)" : "");
}

/* Each choose_*: measured (Find), else cuDNN's heuristics (Get*_v7), the first that fits. */
static void choose_fwd(cudnnHandle_t h, conv_plan *p)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    auto size = [&](cudnnConvolutionFwdAlgo_t a, size_t *b) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->f, p->fwd_desc, p->y, a, b);
    };
    int n = 0, i = -1;
    if (cudnnFindConvolutionForwardAlgorithm(h, p->x, p->f, p->fwd_desc, p->y,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                             perf) == CUDNN_STATUS_SUCCESS)
        i = first_fitting(perf, n, p, p->fwd_desc, size, &p->fwd_bytes);
    if (i < 0) {
        CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            h, p->x, p->f, p->fwd_desc, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
        i = first_fitting(perf, n, p, p->fwd_desc, size, &p->fwd_bytes);
    }
    if (i < 0)
        no_algorithm(p, "forward");
    p->fwd = perf[i].algo;
    p->fwd_math = perf[i].mathType;
    CUDA_CHECK(cudnnSetConvolutionMathType(p->fwd_desc, perf[i].mathType));
}

static void choose_bwd_data(cudnnHandle_t h, conv_plan *p)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    auto size = [&](cudnnConvolutionBwdDataAlgo_t a, size_t *b) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->f, p->y, p->bwd_data_desc, p->x,
                                                            a, b);
    };
    int n = 0, i = -1;
    if (cudnnFindConvolutionBackwardDataAlgorithm(h, p->f, p->y, p->bwd_data_desc, p->x,
                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
                                                  perf) == CUDNN_STATUS_SUCCESS)
        i = first_fitting(perf, n, p, p->bwd_data_desc, size, &p->bwd_data_bytes);
    if (i < 0) {
        CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, p->f, p->y, p->bwd_data_desc, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
            perf));
        i = first_fitting(perf, n, p, p->bwd_data_desc, size, &p->bwd_data_bytes);
    }
    if (i < 0)
        no_algorithm(p, "backward-data");
    p->bwd_data = perf[i].algo;
    p->bwd_data_math = perf[i].mathType;
    CUDA_CHECK(cudnnSetConvolutionMathType(p->bwd_data_desc, perf[i].mathType));
}

static void choose_bwd_filter(cudnnHandle_t h, conv_plan *p)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    auto size = [&](cudnnConvolutionBwdFilterAlgo_t a, size_t *b) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->bwd_filter_desc,
                                                              p->f, a, b);
    };
    int n = 0, i = -1;
    if (cudnnFindConvolutionBackwardFilterAlgorithm(h, p->x, p->y, p->bwd_filter_desc, p->f,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
                                                    perf) == CUDNN_STATUS_SUCCESS)
        i = first_fitting(perf, n, p, p->bwd_filter_desc, size, &p->bwd_filter_bytes);
    if (i < 0) {
        CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, p->x, p->y, p->bwd_filter_desc, p->f, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
            perf));
        i = first_fitting(perf, n, p, p->bwd_filter_desc, size, &p->bwd_filter_bytes);
    }
    if (i < 0)
        no_algorithm(p, "backward-filter");
    p->bwd_filter = perf[i].algo;
    p->bwd_filter_math = perf[i].mathType;
    CUDA_CHECK(cudnnSetConvolutionMathType(p->bwd_filter_desc, perf[i].mathType));
}

static void make_plan(conv_plan *p, const conv2d_dims *d, int tf32)
{
    cudnnHandle_t h = gpu_context_cudnn();
    char s[160];
    *p = conv_plan{};
    p->n = d->n, p->cin = d->cin, p->h = d->h, p->w = d->w, p->cout = d->cout, p->k = d->k;
    p->tf32 = tf32;
    p->nhwc = d->nhwc != 0;
    const cudnnTensorFormat_t fmt = p->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    p->det = deterministic;
    if (d->k != 1 && d->k != 3) {
        describe(s, sizeof s, p);
        fatal_error("conv2d_cudnn: kernel size must be 1 or 3 (%s)", s);
    }
    CUDA_CHECK(cudnnCreateTensorDescriptor(&p->x));
    CUDA_CHECK(cudnnCreateTensorDescriptor(&p->y));
    CUDA_CHECK(cudnnCreateTensorDescriptor(&p->bias));
    CUDA_CHECK(cudnnCreateFilterDescriptor(&p->f));
    CUDA_CHECK(cudnnSetTensor4dDescriptor(p->x, fmt, CUDNN_DATA_FLOAT, d->n, d->cin, d->h, d->w));
    CUDA_CHECK(cudnnSetTensor4dDescriptor(p->y, fmt, CUDNN_DATA_FLOAT, d->n, d->cout, d->h, d->w));
    /* (1, C, 1, 1): the same C floats in either format */
    CUDA_CHECK(cudnnSetTensor4dDescriptor(p->bias, fmt, CUDNN_DATA_FLOAT, 1, d->cout, 1, 1));
    CUDA_CHECK(cudnnSetFilter4dDescriptor(p->f, CUDNN_DATA_FLOAT, fmt, d->cout, d->cin, d->k,
                                          d->k));
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
    p->work_bytes = p->fwd_bytes > p->bwd_data_bytes ? p->fwd_bytes : p->bwd_data_bytes;
    if (p->bwd_filter_bytes > p->work_bytes)
        p->work_bytes = p->bwd_filter_bytes;
}

static __global__ void fill_kernel(float *p, size_t n, float v)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

/* The cuBLAS bias gradient's buffers grown to d's needs (at plan time: growing waits for the
 * stream, as queued calls may still read the old ones). */
static void bias_buffers(const conv2d_dims *d)
{
    const size_t hw = (size_t)d->h * d->w, ones = hw > (size_t)d->n ? hw : (size_t)d->n,
                 rows = (size_t)d->n * d->cout;
    if (ones <= bias_ones_n && rows <= bias_row_sums_n)
        return;
    cudaStream_t st = gpu_context_stream();
    CUDA_CHECK(cudaStreamSynchronize(st));
    if (ones > bias_ones_n) {
        gpu_context_free(bias_ones);
        bias_ones = (float *)gpu_context_alloc(ones * sizeof(float));
        bias_ones_n = ones;
        fill_kernel<<<gpu_blocks(ones), GPU_THREADS, 0, st>>>(bias_ones, ones, 1.0f);
        CUDA_CHECK_LAUNCH(st);
    }
    if (rows > bias_row_sums_n) {
        gpu_context_free(bias_row_sums);
        bias_row_sums = (float *)gpu_context_alloc(rows * sizeof(float));
        bias_row_sums_n = rows;
    }
}

/* db += the sum of dout (N, C, H, W) over N, H and W, by cuBLAS (column-major): dout is the
 * (H·W) x (N·C) matrix whose columns are the rows to sum, so row_sums = doutᵀ·ones; row_sums is
 * the C x N matrix of per-sample sums, so db += row_sums·ones. */
static void bias_grad_by_cublas(float *db, const float *dout, const conv2d_dims *d)
{
    cublasHandle_t cb = gpu_context_cublas();
    const int hw = d->h * d->w, rows = d->n * d->cout;
    const float one = 1.0f, zero = 0.0f;
    CUDA_CHECK(cublasSgemv(cb, CUBLAS_OP_T, hw, rows, &one, dout, hw, bias_ones, 1, &zero,
                           bias_row_sums, 1));
    CUDA_CHECK(cublasSgemv(cb, CUBLAS_OP_N, d->cout, d->n, &one, bias_row_sums, d->cout,
                           bias_ones, 1, &one, db, 1));
}

/* ---- KRSC weights for NHWC plans --------------------------------------------------------- */

/* Whether a plan's cuDNN filter (KRSC) differs from the model's weights (KCRS) in memory. */
static bool needs_krsc(const conv_plan *p) { return p->nhwc && p->k > 1 && p->cin > 1; }

/* KCRS -> KRSC (TO_KRSC: dst = the KRSC copy of src), or back, added: dst (KCRS) += src (KRSC).
 * One thread an element of the KCRS tensor, K x C x RS. */
template <bool TO_KRSC>
static __global__ void krsc_kernel(float *dst, const float *src, size_t n, int C, int RS)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t k = i / ((size_t)C * RS), rest = i % ((size_t)C * RS);
        const size_t c = rest / RS, rs = rest % RS, j = (k * RS + rs) * C + c;
        if (TO_KRSC)
            dst[j] = src[i];
        else
            dst[i] += src[j];
    }
}

static void krsc_buffers(size_t floats)
{
    if (floats <= krsc_n)
        return;
    CUDA_CHECK(cudaStreamSynchronize(gpu_context_stream())); /* queued calls may read them */
    gpu_context_free(krsc_w);
    gpu_context_free(krsc_dw);
    krsc_w = (float *)gpu_context_alloc(floats * sizeof(float));
    krsc_dw = (float *)gpu_context_alloc(floats * sizeof(float));
    krsc_n = floats;
}

/* The weights as cuDNN's filter descriptor takes them: w itself, or its KRSC copy. */
static const float *filter_of(const conv_plan *p, const float *w)
{
    if (!needs_krsc(p))
        return w;
    const size_t n = (size_t)p->cout * p->cin * p->k * p->k;
    cudaStream_t st = gpu_context_stream();
    krsc_kernel<true><<<gpu_blocks(n), GPU_THREADS, 0, st>>>(krsc_w, w, n, p->cin, p->k * p->k);
    CUDA_CHECK_LAUNCH(st);
    return krsc_w;
}

static conv_plan *plan_for(const conv2d_dims *d)
{
    const int tf32 = gpu_context_tf32(); /* also: stops if another device is current */
    if (deterministic < 0) {
        deterministic = env_switch_on(SWITCH_CUDNN_DETERMINISTIC);
        bias_grad_cublas = env_switch_on(SWITCH_BIAS_GRAD_CUBLAS);
    }
    for (int i = 0; i < nplans; i++) {
        conv_plan *p = &plans[i];
        if (p->n == d->n && p->cin == d->cin && p->h == d->h && p->w == d->w &&
            p->cout == d->cout && p->k == d->k && p->tf32 == tf32 && p->nhwc == (d->nhwc != 0))
            return p;
    }
    if (nplans == CONV_PLANS_MAX)
        fatal_error("conv2d_cudnn: more than %d convolution shapes; raise CONV_PLANS_MAX",
                    CONV_PLANS_MAX);
    gpu_context_at_release(conv2d_cudnn_release);
    make_plan(&plans[nplans], d, tf32);
    if (bias_grad_cublas && !d->nhwc)
        bias_buffers(d);
    if (needs_krsc(&plans[nplans]))
        krsc_buffers((size_t)d->cout * d->cin * d->k * d->k);
    return &plans[nplans++];
}

/* The caller's workspace, or the shared one grown to this plan's size. A caller's buffer that is
 * too small stops the process rather than falling back to the shared one: it was sized by
 * conv2d_cudnn_work_floats for other dims or another TF32 setting, a sizing bug that a silent
 * fallback would hide (and pay for with an unplanned allocation of up to the cap). */
static void *workspace(const conv_plan *p, float *work, size_t work_floats)
{
    if (work) {
        if (work_floats * sizeof(float) < p->work_bytes) {
            char s[160];
            describe(s, sizeof s, p);
            fatal_error("conv2d_cudnn: workspace of %zu floats given, %s needs %zu "
                        "(conv2d_cudnn_work_floats)",
                        work_floats, s, (p->work_bytes + sizeof(float) - 1) / sizeof(float));
        }
        return work;
    }
    if (p->work_bytes == 0)
        return NULL;
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

static const char *math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op+conversion";
    case CUDNN_FMA_MATH: return "FMA";
    default: return "?";
    }
}

extern "C" void conv2d_cudnn_algos(const conv2d_dims *d, char *buf, size_t len)
{
    static const char *const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                      "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *const bwd_data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
                                           "WINOGRAD_NONFUSED"};
    static const char *const bwd_filter[] = {"ALGO_0",   "ALGO_1", "FFT", "ALGO_3", "WINOGRAD",
                                             "WINOGRAD_NONFUSED", "FFT_TILING"};
    if (d->n <= 0) {
        snprintf(buf, len, "no algorithms (empty batch)");
        return;
    }
    const conv_plan *p = plan_for(d);
#define NAME(t, a) ((unsigned)(a) < sizeof t / sizeof *t ? t[(unsigned)(a)] : "?")
    snprintf(buf, len, "%sfwd %s/%s, bwd-data %s/%s, bwd-filter %s/%s, workspace %zu B%s",
             p->nhwc ? "NHWC: " : "", NAME(fwd, p->fwd), math_name(p->fwd_math),
             NAME(bwd_data, p->bwd_data),
             math_name(p->bwd_data_math), NAME(bwd_filter, p->bwd_filter),
             math_name(p->bwd_filter_math), p->work_bytes,
             p->det ? "" : ", nondeterministic allowed");
#undef NAME
}

extern "C" void conv2d_cudnn_forward(float *out, const float *in, const float *w, const float *b,
                                     const conv2d_dims *d, float *work, size_t work_floats)
{
    if (d->n <= 0)
        return;
    const conv_plan *p = plan_for(d);
    cudnnHandle_t h = gpu_context_cudnn();
    cudaStream_t st = gpu_context_stream();
    const float one = 1.0f, zero = 0.0f;
    CUDA_CHECK(cudnnConvolutionForward(h, &one, p->x, in, p->f, filter_of(p, w), p->fwd_desc,
                                       p->fwd, workspace(p, work, work_floats), p->fwd_bytes,
                                       &zero, p->y, out));
    CUDA_CHECK_LAUNCH(st);
    if (b) {
        CUDA_CHECK(cudnnAddTensor(h, &one, p->bias, b, &one, p->y, out));
        CUDA_CHECK_LAUNCH(st);
    }
}

/* din_beta: 1 adds into din, 0 overwrites it. */
static void backward(float *din, float din_beta, float *dw, float *db, const float *dout,
                     const float *in, const float *w, const conv2d_dims *d, float *work,
                     size_t work_floats)
{
    if (d->n <= 0)
        return;
    const conv_plan *p = plan_for(d);
    cudnnHandle_t h = gpu_context_cudnn();
    cudaStream_t st = gpu_context_stream();
    const float one = 1.0f;
    void *ws = workspace(p, work, work_floats);
    if (db && d->nhwc) {
        const bn_dims sums = {d->n, d->cout, d->h * d->w, 0.0f, 0.0f, 1};
        bn_nhwc_channel_sums_cuda(db, dout, &sums);
    } else if (db && bias_grad_cublas) {
        bias_grad_by_cublas(db, dout, d);
        CUDA_CHECK_LAUNCH(st);
    } else if (db) {
        CUDA_CHECK(cudnnConvolutionBackwardBias(h, &one, p->y, dout, &one, p->bias, db));
        CUDA_CHECK_LAUNCH(st);
    }
    if (dw && needs_krsc(p)) { /* into the KRSC scratch (=), then added into dw in KCRS */
        const float zero = 0.0f;
        const size_t n = (size_t)p->cout * p->cin * p->k * p->k;
        CUDA_CHECK(cudnnConvolutionBackwardFilter(h, &one, p->x, in, p->y, dout,
                                                  p->bwd_filter_desc, p->bwd_filter, ws,
                                                  p->bwd_filter_bytes, &zero, p->f, krsc_dw));
        CUDA_CHECK_LAUNCH(st);
        krsc_kernel<false><<<gpu_blocks(n), GPU_THREADS, 0, st>>>(dw, krsc_dw, n, p->cin,
                                                                  p->k * p->k);
        CUDA_CHECK_LAUNCH(st);
    } else if (dw) {
        CUDA_CHECK(cudnnConvolutionBackwardFilter(h, &one, p->x, in, p->y, dout,
                                                  p->bwd_filter_desc, p->bwd_filter, ws,
                                                  p->bwd_filter_bytes, &one, p->f, dw));
        CUDA_CHECK_LAUNCH(st);
    }
    if (din) {
        CUDA_CHECK(cudnnConvolutionBackwardData(h, &one, p->f, filter_of(p, w), p->y, dout,
                                                p->bwd_data_desc, p->bwd_data, ws,
                                                p->bwd_data_bytes, &din_beta, p->x, din));
        CUDA_CHECK_LAUNCH(st);
    }
}

extern "C" void conv2d_cudnn_backward(float *din, float *dw, float *db, const float *dout,
                                      const float *in, const float *w, const conv2d_dims *d,
                                      float *work, size_t work_floats)
{
    backward(din, 1.0f, dw, db, dout, in, w, d, work, work_floats);
}

extern "C" void conv2d_cudnn_backward_set(float *din, float *dw, float *db, const float *dout,
                                          const float *in, const float *w, const conv2d_dims *d,
                                          float *work, size_t work_floats)
{
    backward(din, 0.0f, dw, db, dout, in, w, d, work, work_floats);
}

/* Also gpu_context_release's hook; with no plans and no workspace it touches no context, so a
 * call after gpu_context_release does not make a new one. */
extern "C" void conv2d_cudnn_release(void)
{
    if (nplans == 0 && !shared_work && !bias_ones && !bias_row_sums && !krsc_w) {
        deterministic = -1;
        bias_grad_cublas = -1;
        return;
    }
    gpu_context_sync(); /* queued convolutions may still use the descriptors and the workspace */
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
    gpu_context_free(shared_work);
    shared_work = NULL;
    shared_work_bytes = 0;
    gpu_context_free(bias_ones);
    gpu_context_free(bias_row_sums);
    bias_ones = bias_row_sums = NULL;
    bias_ones_n = bias_row_sums_n = 0;
    gpu_context_free(krsc_w);
    gpu_context_free(krsc_dw);
    krsc_w = krsc_dw = NULL;
    krsc_n = 0;
    deterministic = -1;
    bias_grad_cublas = -1;
}
