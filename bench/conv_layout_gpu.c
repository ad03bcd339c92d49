/* conv_layout_gpu.c — NCHW or NHWC for the WideResNet's convolutions on this GPU: what issue 12
 * asks to measure before choosing (a GPU model is NHWC by default since an H200 timed the whole
 * step both ways, HVDLAB_ACTIVATION_LAYOUT=nchw the other way). This asks cuDNN's Find to time every algorithm for every convolution of one training step
 * (forward, backward-data except the stem's, backward-filter), in both layouts, the way PyTorch's
 * cudnn.benchmark chooses, and adds the fastest times up per step (each shape times the number of
 * layers that have it). Two sums per layout: the fastest algorithm, and the fastest the kit
 * would take by default (deterministic ones only). TF32 as the kit: on unless HVDLAB_TF32=0.
 * Then the kit's own calls, timed on the GPU as the model makes them (conv2d_cudnn_forward with
 * the bias, conv2d_cudnn_backward_set into din for the 3x3 convolutions, conv2d_cudnn_backward
 * adding for the shortcuts, no din for the stem; the algorithms its plans chose), with the bias,
 * with it in the forward pass only, and without it: the differences are the bias passes
 * (cudnnAddTensor forward, cudnnConvolutionBackwardBias backward), each on its own, and what is
 * left beyond Find's sum the way the kit calls cuDNN (those three with HVDLAB_BIAS_GRAD_CUBLAS=0).
 * A fourth time with NHWC activations (as a model calls them by default: its KRSC weights made
 * each call, the bias gradient by batch norm's NHWC channel sums), and a fifth in NCHW with the
 * bias gradient by cuBLAS (HVDLAB_BIAS_GRAD_CUBLAS=1, NCHW's default since the H200 timed it).
 *
 * Usage: conv_layout_gpu [--models wrn-16-4,wrn-16-10] [--batches 128,512]
 * Prints "conv.<model>.b<batch>.<nchw|nhwc>.<fastest|deterministic>_ms <ms> ms" lines; -1 where
 * some convolution of the step had no usable (or no deterministic) algorithm in that layout;
 * and "conv.<model>.b<batch>.<kit|kit_nobias|kit_fwd_bias|kit_nhwc|kit_cublas_bias>_ms <ms> ms".
 * A CPU build, or no GPU: one line saying so, exit 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "base/timer.h"
#include "nn/conv2d.h"
#include "nn/gpu_context.h"

static void check(int ok, const char *call, const char *why)
{
    if (ok)
        return;
    fprintf(stderr, "conv_layout_gpu: %s failed: %s\n", call, why);
    exit(1);
}
#define DNN(call) check((call) == CUDNN_STATUS_SUCCESS, #call, "cuDNN error")

typedef struct {
    double fastest, deterministic; /* ms; 0 while none found */
} best;

/* The first usable entry (Find sorts by time) and the first deterministic one. */
#define PICK(perf, n, tf32, out)                                                                   \
    do {                                                                                           \
        for (int i_ = 0; i_ < (n); i_++) {                                                         \
            if ((perf)[i_].status != CUDNN_STATUS_SUCCESS ||                                       \
                (perf)[i_].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||                    \
                (!(tf32) && (perf)[i_].mathType != CUDNN_FMA_MATH))                                \
                continue;                                                                          \
            if ((out).fastest == 0.0)                                                              \
                (out).fastest = (perf)[i_].time;                                                   \
            if ((out).deterministic == 0.0 && (perf)[i_].determinism == CUDNN_DETERMINISTIC)       \
                (out).deterministic = (perf)[i_].time;                                             \
        }                                                                                          \
    } while (0)

/* One shape in one layout: forward + backward-data (unless stem) + backward-filter. */
static best time_shape(cudnnHandle_t h, cudnnTensorFormat_t fmt, int tf32, int n, int cin,
                       int cout, int hw, int k, int stem)
{
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t cd;
    DNN(cudnnCreateTensorDescriptor(&x));
    DNN(cudnnCreateTensorDescriptor(&y));
    DNN(cudnnCreateFilterDescriptor(&f));
    DNN(cudnnCreateConvolutionDescriptor(&cd));
    DNN(cudnnSetTensor4dDescriptor(x, fmt, CUDNN_DATA_FLOAT, n, cin, hw, hw));
    DNN(cudnnSetTensor4dDescriptor(y, fmt, CUDNN_DATA_FLOAT, n, cout, hw, hw));
    DNN(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, fmt, cout, cin, k, k));
    DNN(cudnnSetConvolution2dDescriptor(cd, k / 2, k / 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT));
    DNN(cudnnSetConvolutionMathType(cd, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    best fwd = {0, 0}, bd = {0, 0}, bf = {0, 0};
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t pf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    /* a Find that fails (a layout cuDNN does not take for a shape) leaves that direction
     * without a time, and the step's sum unknown, rather than stopping the other shapes */
    if (cudnnFindConvolutionForwardAlgorithm(h, x, f, cd, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                             &got, pf) == CUDNN_STATUS_SUCCESS)
        PICK(pf, got, tf32, fwd);
    if (!stem) {
        cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        if (cudnnFindConvolutionBackwardDataAlgorithm(h, f, y, cd, x,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got,
                                                      pd) == CUDNN_STATUS_SUCCESS)
            PICK(pd, got, tf32, bd);
    }
    cudnnConvolutionBwdFilterAlgoPerf_t pw[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    if (cudnnFindConvolutionBackwardFilterAlgorithm(h, x, y, cd, f,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
                                                    pw) == CUDNN_STATUS_SUCCESS)
        PICK(pw, got, tf32, bf);
    cudnnDestroyConvolutionDescriptor(cd);
    cudnnDestroyFilterDescriptor(f);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
    /* a direction with no usable (or no deterministic) algorithm makes its sum unknown: -1 */
    best r;
    r.fastest = fwd.fastest > 0 && bf.fastest > 0 && (stem || bd.fastest > 0)
                    ? fwd.fastest + bd.fastest + bf.fastest
                    : -1.0;
    r.deterministic = fwd.deterministic > 0 && bf.deterministic > 0 &&
                              (stem || bd.deterministic > 0)
                          ? fwd.deterministic + bd.deterministic + bf.deterministic
                          : -1.0;
    return r;
}

static void add(best *sum, best b, int times)
{
    sum->fastest = sum->fastest < 0 || b.fastest < 0 ? -1.0 : sum->fastest + times * b.fastest;
    sum->deterministic = sum->deterministic < 0 || b.deterministic < 0
                             ? -1.0
                             : sum->deterministic + times * b.deterministic;
}

/* wrn-16-K: the stem, then per group a 3x3 cin->w and a 1x1 shortcut where cin != w, and three
 * 3x3 w->w (the second conv of block 0 and both of block 1). */
static best step(cudnnHandle_t h, cudnnTensorFormat_t fmt, int tf32, int K, int n)
{
    best sum = {0, 0};
    add(&sum, time_shape(h, fmt, tf32, n, 1, 16, 28, 3, 1), 1);
    int cin = 16;
    for (int g = 0; g < 3; g++) {
        const int w = (16 << g) * K, hw = 28 >> g;
        add(&sum, time_shape(h, fmt, tf32, n, cin, w, hw, 3, 0), 1);
        if (cin != w)
            add(&sum, time_shape(h, fmt, tf32, n, cin, w, hw, 1, 0), 1);
        add(&sum, time_shape(h, fmt, tf32, n, w, w, hw, 3, 0), 3);
        cin = w;
    }
    return sum;
}

/* One convolution as the model runs it, forward and backward, in ms a call (after two calls
 * that make its plan). how: 's' din = (3x3), 'a' din += (shortcut), 'n' no din (stem).
 * bias: 2 with the bias and its gradient, 1 with the bias in the forward pass only (db NULL),
 * 0 without either (b and db NULL), the convolution's own calls alone. nhwc: NHWC activations,
 * as a model with HVDLAB_ACTIVATION_LAYOUT=nhwc calls them (KRSC weights made each call). */
static double kit_shape(int n, int cin, int cout, int hw, int k, char how, int bias, int nhwc)
{
    const conv2d_dims d = {
        .n = n, .cin = cin, .h = hw, .w = hw, .cout = cout, .k = k, .nhwc = nhwc};
    const size_t ni = (size_t)n * cin * hw * hw * sizeof(float),
                 no = (size_t)n * cout * hw * hw * sizeof(float),
                 nw = (size_t)cout * cin * k * k * sizeof(float), nb = (size_t)cout * sizeof(float);
    float *x = gpu_context_alloc(ni), *dx = gpu_context_alloc(ni), *y = gpu_context_alloc(no),
          *dy = gpu_context_alloc(no), *w = gpu_context_alloc(nw), *dw = gpu_context_alloc(nw),
          *b = gpu_context_alloc(nb), *db = gpu_context_alloc(nb);
    float *bufs[] = {x, dx, y, dy, w, dw, b, db};
    const size_t sizes[] = {ni, ni, no, no, nw, nw, nb, nb};
    for (int i = 0; i < 8; i++)
        gpu_context_zero(bufs[i], sizes[i]);
    enum { WARM = 2, REPS = 10 };
    float *grad_b = bias == 2 ? db : NULL;
    double t0 = 0.0;
    for (int r = 0; r < WARM + REPS; r++) {
        if (r == WARM) {
            gpu_context_sync();
            t0 = timer_seconds();
        }
        conv2d_cudnn_forward(y, x, w, bias ? b : NULL, &d, NULL, 0);
        if (how == 's')
            conv2d_cudnn_backward_set(dx, dw, grad_b, dy, x, w, &d, NULL, 0);
        else
            conv2d_cudnn_backward(how == 'a' ? dx : NULL, dw, grad_b, dy, x, w, &d, NULL, 0);
    }
    gpu_context_sync();
    const double ms = (timer_seconds() - t0) * 1e3 / REPS;
    for (int i = 0; i < 8; i++)
        gpu_context_free(bufs[i]);
    return ms;
}

/* The kit's calls for one step of wrn-16-K (the shapes of step() below), bias as kit_shape's,
 * its gradient by cuBLAS or by cuDNN, activations NCHW or NHWC. conv2d_cudnn reads the switch at
 * its first plan, so a change of it drops the plans (and Find runs again); the same setting
 * keeps them. */
static double kit_step(int K, int n, int bias, int cublas_bias, int nhwc)
{
    static int plans_cublas = -1; /* the setting the current plans were made with */
    if (cublas_bias != plans_cublas) {
        setenv("HVDLAB_BIAS_GRAD_CUBLAS", cublas_bias ? "1" : "0", 1);
        conv2d_cudnn_release();
        plans_cublas = cublas_bias;
    }
    double ms = kit_shape(n, 1, 16, 28, 3, 'n', bias, nhwc);
    int cin = 16;
    for (int g = 0; g < 3; g++) {
        const int w = (16 << g) * K, hw = 28 >> g;
        ms += kit_shape(n, cin, w, hw, 3, 's', bias, nhwc);
        if (cin != w)
            ms += kit_shape(n, cin, w, hw, 1, 'a', bias, nhwc);
        ms += 3 * kit_shape(n, w, w, hw, 3, 's', bias, nhwc);
        cin = w;
    }
    return ms;
}

int main(int argc, char **argv)
{
    const char *models = "wrn-16-4,wrn-16-10", *batches = "128,512";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--models"))
            models = argv[i + 1];
        else if (!strcmp(argv[i], "--batches"))
            batches = argv[i + 1];
    }
    int ngpu = 0;
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
        printf("conv_layout_gpu: skipped, no GPU\n");
        return 77;
    }
    const char *t = getenv("HVDLAB_TF32");
    const int tf32 = !(t && strcmp(t, "0") == 0);
    cudnnHandle_t h;
    DNN(cudnnCreate(&h));
    char ml[256], bl[64];
    snprintf(ml, sizeof ml, "%s", models);
    for (char *sm = NULL, *m = strtok_r(ml, ",", &sm); m; m = strtok_r(NULL, ",", &sm)) {
        int K = 0;
        check(sscanf(m, "wrn-16-%d", &K) == 1 && K > 0, m, "want wrn-16-K");
        snprintf(bl, sizeof bl, "%s", batches);
        for (char *sb = NULL, *b = strtok_r(bl, ",", &sb); b; b = strtok_r(NULL, ",", &sb)) {
            const int n = atoi(b);
            const best nchw = step(h, CUDNN_TENSOR_NCHW, tf32, K, n);
            const best nhwc = step(h, CUDNN_TENSOR_NHWC, tf32, K, n);
            printf("conv.%s.b%d.nchw.fastest_ms %.3f ms\n", m, n, nchw.fastest);
            printf("conv.%s.b%d.nchw.deterministic_ms %.3f ms\n", m, n, nchw.deterministic);
            printf("conv.%s.b%d.nhwc.fastest_ms %.3f ms\n", m, n, nhwc.fastest);
            printf("conv.%s.b%d.nhwc.deterministic_ms %.3f ms\n", m, n, nhwc.deterministic);
            printf("conv.%s.b%d.kit_ms %.3f ms\n", m, n, kit_step(K, n, 2, 0, 0));
            printf("conv.%s.b%d.kit_nobias_ms %.3f ms\n", m, n, kit_step(K, n, 0, 0, 0));
            printf("conv.%s.b%d.kit_fwd_bias_ms %.3f ms\n", m, n, kit_step(K, n, 1, 0, 0));
            printf("conv.%s.b%d.kit_nhwc_ms %.3f ms\n", m, n, kit_step(K, n, 2, 0, 1));
            printf("conv.%s.b%d.kit_cublas_bias_ms %.3f ms\n", m, n, kit_step(K, n, 2, 1, 0));
            fflush(stdout);
        }
    }
    cudnnDestroy(h);
    return 0;
}
#else
int main(void)
{
    printf("conv_layout_gpu: skipped, a CPU build (make CUDA=1)\n");
    return 77;
}
#endif
