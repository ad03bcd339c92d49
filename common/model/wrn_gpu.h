/* wrn_gpu.h — the GPU side of the model that is not a layer of nn/ (wrn_cuda.cu). Internal to
 * model/. The layers' CUDA twins are reached through the model's layer table (wrn_ops.h,
 * WRN_OPS_CUDA in wrn_ops_cuda.c); in a CPU build this header declares nothing.
 *
 * The input pipeline (wrn_input_*): the loader fills host buffers; wrn_input_upload copies the
 * batch into one of two pinned buffers (waiting only for that buffer's previous upload) and
 * enqueues the copy to the device on the model's stream, so the next batch's loading overlaps
 * the device work still queued (backward, allreduce, update). One device buffer suffices: work
 * on one stream runs in order, so the upload cannot overwrite an image backward still reads.
 *
 * Public (to model/, with HVDLAB_CUDA): wrn_add_cuda, wrn_input_create, wrn_input_free,
 *                                       wrn_input_upload, wrn_input_bytes.
 */
#ifndef HVDLAB_WRN_GPU_H
#define HVDLAB_WRN_GPU_H

#include <stddef.h>

#ifdef HVDLAB_CUDA
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
#endif

#endif
