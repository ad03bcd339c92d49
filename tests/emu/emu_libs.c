/* emu_libs.c — the CPU emulator's stand-ins for what the kit takes from NVIDIA's libraries:
 * the convolutions (nn/conv2d_cudnn.cu: cuDNN) and dense layers (nn/dense_cuda.cu: cuBLAS) as
 * the CPU layers themselves, on the emulator's host memory (NCCL: emu_nccl.c).
 *
 * So test_wrn_emu runs the GPU model with convolutions and dense layers that are the CPU's own:
 * what it compares with the CPU model is everything else the GPU path does (the kit's kernels,
 * the model's wiring on the GPU, the optimizers' kernels, checkpoints through the host). Whether
 * cuDNN and cuBLAS are called right is for a GPU (test_twins_cuda's convolution and dense cases).
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/fatal.h"
#include "emu_memory.h"
#include "nn/conv2d.h"
#include "nn/dense.h"

/* ---- convolutions: the CPU's (conv2d.h), NCHW ------------------------------------------------ */

static float *shared_work;
static size_t shared_work_floats;

size_t conv2d_cudnn_work_floats(const conv2d_dims *d) { return conv2d_work_floats(d); }

/* The caller's buffer when given, else one kept here, grown to the shape's need. */
static float *work_for(const conv2d_dims *d, float *work, size_t work_floats)
{
    const size_t need = conv2d_work_floats(d);
    if (work) {
        if (work_floats < need)
            fatal_error("emu: conv2d_cudnn: workspace of %zu floats, the shape needs %zu",
                        work_floats, need);
        return work;
    }
    if (need > shared_work_floats) {
        free(shared_work);
        if (!(shared_work = malloc((need ? need : 1) * sizeof *shared_work)))
            fatal_error("emu: conv2d_cudnn: out of memory for the workspace");
        shared_work_floats = need;
    }
    return shared_work;
}

void conv2d_cudnn_forward(float *out, const float *in, const float *w, const float *b,
                          const conv2d_dims *d, float *work, size_t work_floats)
{
    emu_device_open();
    conv2d_forward(out, in, w, b, d, work_for(d, work, work_floats));
    emu_device_close();
}

void conv2d_cudnn_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                           const float *w, const conv2d_dims *d, float *work, size_t work_floats)
{
    emu_device_open();
    conv2d_backward(din, dw, db, dout, in, w, d, work_for(d, work, work_floats));
    emu_device_close();
}

void conv2d_cudnn_backward_set(float *din, float *dw, float *db, const float *dout,
                               const float *in, const float *w, const conv2d_dims *d, float *work,
                               size_t work_floats)
{
    emu_device_open();
    conv2d_backward_set(din, dw, db, dout, in, w, d, work_for(d, work, work_floats));
    emu_device_close();
}

void conv2d_cudnn_algos(const conv2d_dims *d, char *buf, size_t len)
{
    (void)d;
    snprintf(buf, len, "emulated: the CPU's convolution (%s)", conv2d_backend());
}

void conv2d_cudnn_release(void)
{
    free(shared_work);
    shared_work = NULL;
    shared_work_floats = 0;
}

/* ---- dense: the CPU's (dense.h) -------------------------------------------------------------- */

void dense_forward_cuda(float *out, const float *in, const float *w, const float *b,
                        const dense_dims *d)
{
    emu_device_open();
    dense_forward(out, in, w, b, d);
    emu_device_close();
}

void dense_backward_cuda(float *din, float *dw, float *db, const float *dout, const float *in,
                         const float *w, const dense_dims *d)
{
    emu_device_open();
    dense_backward(din, dw, db, dout, in, w, d);
    emu_device_close();
}

/* ---- cuDNN's version: none ------------------------------------------------------------------ */

size_t cudnnGetVersion(void) { return 0; }
