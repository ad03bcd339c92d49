/* cuda_check.h — one checking macro for CUDA runtime, cuDNN and cuBLAS calls.
 *
 *   CUDA_CHECK(cudaMalloc(&p, bytes));
 *   CUDA_CHECK(cudnnConvolutionForward(...));
 *   CUDA_CHECK(cublasSgemm(...));
 *   CUDA_CHECK_LAUNCH(stream);          after a kernel launch or a library call that enqueues
 *
 * A failing call stops the process through fatal_error (fatal.h) with one line naming the
 * file:line, the call as written and the library's own error string, e.g.
 *   hvdlab: error: [rank 0] common/nn/bn_cuda.cu:88: cudaMalloc(&p, bytes): out of memory (2)
 * The status type picks the library: overloads in CUDA C++ (.cu files), _Generic in C.
 *
 * Work enqueued on a stream fails later, at whatever call next returns the error. For a first
 * run on a new GPU, HVDLAB_CUDA_SYNC=1 in the environment makes CUDA_CHECK_LAUNCH also wait for
 * the stream, so a fault is reported at the line that launched the failing work (slower: every
 * launch waits).
 *
 * Only for CUDA builds: include it from .cu files, or from C under #ifdef HVDLAB_CUDA.
 */
#ifndef HVDLAB_CUDA_CHECK_H
#define HVDLAB_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "base/env_switch.h"
#include "base/fatal.h"
#ifdef __cplusplus
}

static inline bool cuda_check_failed(cudaError_t e) { return e != cudaSuccess; }
static inline bool cuda_check_failed(cudnnStatus_t s) { return s != CUDNN_STATUS_SUCCESS; }
static inline bool cuda_check_failed(cublasStatus_t s) { return s != CUBLAS_STATUS_SUCCESS; }
static inline const char *cuda_check_string(cudaError_t e) { return cudaGetErrorString(e); }
static inline const char *cuda_check_string(cudnnStatus_t s) { return cudnnGetErrorString(s); }
static inline const char *cuda_check_string(cublasStatus_t s) { return cublasGetStatusString(s); }
#define CUDA_CHECK_TYPE(call) decltype(call)
#define CUDA_CHECK_FAILED(s) cuda_check_failed(s)
#define CUDA_CHECK_STRING(s) cuda_check_string(s)
#else
/* Every success status is 0 (cudaSuccess, CUDNN_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS). */
#define CUDA_CHECK_TYPE(call) __typeof__(call)
#define CUDA_CHECK_FAILED(s) ((int)(s) != 0)
#define CUDA_CHECK_STRING(s)                                                                       \
    _Generic((s), cudaError_t: cudaGetErrorString, cudnnStatus_t: cudnnGetErrorString,             \
             cublasStatus_t: cublasGetStatusString)(s)
#endif

/* The status is evaluated once; the call's text is printed as written. */
#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        CUDA_CHECK_TYPE(call) cuda_check_status_ = (call);                                         \
        if (CUDA_CHECK_FAILED(cuda_check_status_))                                                 \
            fatal_error("%s:%d: %s: %s (%d)", __FILE__, __LINE__, #call,                           \
                        CUDA_CHECK_STRING(cuda_check_status_), (int)cuda_check_status_);           \
    } while (0)

/* HVDLAB_CUDA_SYNC=1, read once per source file. */
static inline int cuda_check_sync(void)
{
    static int on = -1;
    if (on < 0) {
        on = env_switch_on(SWITCH_CUDA_SYNC);
    }
    return on;
}

/* After a launch: its own error now; with HVDLAB_CUDA_SYNC=1 also the error of running it. */
#define CUDA_CHECK_LAUNCH(stream)                                                                  \
    do {                                                                                           \
        CUDA_CHECK(cudaGetLastError());                                                            \
        if (cuda_check_sync()) {                                                                   \
            cudaError_t cuda_check_sync_ = cudaStreamSynchronize(stream);                          \
            if (cuda_check_sync_ != cudaSuccess)                                                   \
                fatal_error("%s:%d: the work enqueued here failed (HVDLAB_CUDA_SYNC=1): %s (%d)",  \
                            __FILE__, __LINE__, cudaGetErrorString(cuda_check_sync_),              \
                            (int)cuda_check_sync_);                                                \
        }                                                                                          \
    } while (0)

#endif
