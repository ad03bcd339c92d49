/* wrn_gpu.h — the model's device dispatch and its GPU side (wrn_cuda.cu). Internal to model/.
 *
 * WRN_DISPATCH(gpu, gpu_call, cpu_call) is the one place a layer call picks its twin: the block
 * code (wrn_block.c) and the network code (wrn.c) wrap each layer in it. In a CPU build the GPU
 * call is not even compiled, so the CPU path is the code it always was.
 *
 * The input pipeline (wrn_input_*): the loader fills host buffers; wrn_input_upload copies the
 * batch into one of two pinned buffers (waiting only for that buffer's previous upload) and
 * enqueues the copy to the device on the model's stream, so the next batch's loading overlaps
 * the device work still queued (backward, allreduce, update). One device buffer suffices: work
 * on one stream runs in order, so the upload cannot overwrite an image backward still reads.
 *
 * Public (to model/): WRN_DISPATCH, WRN_ZERO, wrn_gpu_work; with HVDLAB_CUDA wrn_add_cuda,
 *                     wrn_input_create, wrn_input_free, wrn_input_upload, wrn_input_bytes.
 */
#ifndef HVDLAB_WRN_GPU_H
#define HVDLAB_WRN_GPU_H

#include <stddef.h>

#include "base/threads.h"
#include "model/wrn_block.h"
#include "nn/layer_prof.h"

#ifdef HVDLAB_CUDA
#include "nn/act.h"
#include "nn/bn.h"
#include "nn/conv2d.h"
#include "nn/dense.h"
#include "nn/gpu_context.h"
#include "nn/pool.h"
#include "nn/xent.h"

#define WRN_DISPATCH(gpu, gpu_call, cpu_call)                                                      \
    do {                                                                                           \
        if (gpu) {                                                                                 \
            gpu_call;                                                                              \
        } else {                                                                                   \
            cpu_call;                                                                              \
        }                                                                                          \
    } while (0)

/* The model's workspace when the cuDNN plan for c's shape fits it, else NULL (conv2d_cudnn's
 * own, grown once): a smaller last batch may choose algorithms that need more. */
static inline float *wrn_gpu_work(const wrn_conv *c, float *work)
{
    return work && conv2d_cudnn_work_floats(&c->d) <= c->work_floats ? work : NULL;
}

/* din[i] += dout[i] (the identity shortcut's gradient), on the model's stream. */
void wrn_add_cuda(float *din, const float *dout, size_t n);

typedef struct wrn_input wrn_input;
/* Pinned host buffers and device buffers for batches of up to max_batch; NULL when out of
 * (device or pinned) memory. */
wrn_input *wrn_input_create(size_t max_batch);
void wrn_input_free(wrn_input *in);
size_t wrn_input_bytes(size_t max_batch); /* device bytes wrn_input_create takes */
/* Enqueues the upload of x (B, 784) and y (B); *dx, *dy: where the batch will be on the device. */
void wrn_input_upload(wrn_input *in, const float *x, const int *y, size_t B, const float **dx,
                      const int **dy);
#else
#define WRN_DISPATCH(gpu, gpu_call, cpu_call)                                                      \
    do {                                                                                           \
        (void)(gpu);                                                                               \
        cpu_call;                                                                                  \
    } while (0)
#endif

/* p[0..n) = 0 on the model's device. */
#define WRN_ZERO(gpu, p, n)                                                                        \
    LPROF("zero", WRN_DISPATCH(gpu, gpu_context_zero((p), (n) * sizeof(float)),                   \
                               compute_zero((p), (n))))

#endif
