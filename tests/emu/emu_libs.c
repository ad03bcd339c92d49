/* emu_libs.c — the CPU emulator's stand-ins for what the kit takes from NVIDIA's libraries:
 * the convolutions (nn/conv2d_cudnn.cu: cuDNN) and dense layers (nn/dense_cuda.cu: cuBLAS) as
 * the CPU layers themselves, on the emulator's host memory (NCCL: emu_nccl.c), queued on the
 * model's stream as cuDNN's and cuBLAS's calls are.
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
#include "emu_stream.h"
#include "lib/nhwc.h"
#include "nn/conv2d.h"
#include "nn/dense.h"

/* nn/gpu_context.h declares it for CUDA C++ only (emu_runtime.c). */
cudaStream_t gpu_context_stream(void);

/* ---- convolutions: the CPU's (conv2d.h), NCHW; NHWC through NCHW copies -------------------- */

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

/* A library call as cuDNN and cuBLAS make it: queued on the model's stream (emu_stream.h), its
 * arguments copied, the workspace picked when it runs. */
typedef enum {
    CONV_FORWARD,
    CONV_BACKWARD,
    CONV_BACKWARD_SET,
    DENSE_FORWARD,
    DENSE_BACKWARD
} lib_op;
typedef struct {
    lib_op op;
    float *out, *dw, *db;       /* forward: out; backward: din, dw, db */
    const float *in, *w, *b, *dout;
    conv2d_dims conv;
    dense_dims dense;
    float *work;
    size_t work_floats;
} lib_call;

/* NHWC <-> NCHW of an (N, C, HW) tensor, into a new buffer (to_nchw) or back into dst. */
static float *to_nchw(const float *src, int N, int C, int HW)
{
    const size_t n = (size_t)N * C * HW;
    float *dst = malloc((n ? n : 1) * sizeof *dst);
    if (!dst)
        fatal_error("emu: out of memory for an NHWC convolution's NCHW copy");
    if (src)
        nhwc_transpose(dst, src, n, (size_t)C, (size_t)HW, 0);
    return dst;
}

static void to_nhwc(float *dst, float *src, int N, int C, int HW)
{
    nhwc_transpose(dst, src, (size_t)N * C * HW, (size_t)C, (size_t)HW, 1);
    free(src);
}

/* An NHWC convolution (conv2d_dims.nhwc, as cuDNN takes it): the CPU's NCHW one on copies. */
static void run_nhwc(const lib_call *c, float *work)
{
    conv2d_dims d = c->conv;
    d.nhwc = 0;
    const int N = d.n, HW = d.h * d.w;
    float *in = to_nchw(c->in, N, d.cin, HW);
    if (c->op == CONV_FORWARD) {
        float *out = to_nchw(NULL, N, d.cout, HW);
        conv2d_forward(out, in, c->w, c->b, &d, work);
        to_nhwc(c->out, out, N, d.cout, HW);
    } else {
        /* backward adds into din, backward_set overwrites it: only the former reads it */
        float *din = c->out ? to_nchw(c->op == CONV_BACKWARD ? c->out : NULL, N, d.cin, HW) : NULL;
        float *dout = to_nchw(c->dout, N, d.cout, HW);
        (c->op == CONV_BACKWARD ? conv2d_backward : conv2d_backward_set)(din, c->dw, c->db, dout,
                                                                          in, c->w, &d, work);
        if (din)
            to_nhwc(c->out, din, N, d.cin, HW);
        free(dout);
    }
    free(in);
}

static void run_call(void *p)
{
    lib_call *c = p;
    emu_device_open();
    if ((c->op == CONV_FORWARD || c->op == CONV_BACKWARD || c->op == CONV_BACKWARD_SET) &&
        c->conv.nhwc) {
        run_nhwc(c, work_for(&c->conv, c->work, c->work_floats));
        emu_device_close();
        free(c);
        return;
    }
    switch (c->op) {
    case CONV_FORWARD:
        conv2d_forward(c->out, c->in, c->w, c->b, &c->conv,
                       work_for(&c->conv, c->work, c->work_floats));
        break;
    case CONV_BACKWARD:
        conv2d_backward(c->out, c->dw, c->db, c->dout, c->in, c->w, &c->conv,
                        work_for(&c->conv, c->work, c->work_floats));
        break;
    case CONV_BACKWARD_SET:
        conv2d_backward_set(c->out, c->dw, c->db, c->dout, c->in, c->w, &c->conv,
                            work_for(&c->conv, c->work, c->work_floats));
        break;
    case DENSE_FORWARD: dense_forward(c->out, c->in, c->w, c->b, &c->dense); break;
    case DENSE_BACKWARD: dense_backward(c->out, c->dw, c->db, c->dout, c->in, c->w, &c->dense);
    }
    emu_device_close();
    free(c);
}

static void queue_call(lib_call c)
{
    lib_call *q = malloc(sizeof *q);
    if (!q)
        fatal_error("emu: out of memory for a queued library call");
    *q = c;
    emu_stream_enqueue(gpu_context_stream(), run_call, q);
}

void conv2d_cudnn_forward(float *out, const float *in, const float *w, const float *b,
                          const conv2d_dims *d, float *work, size_t work_floats)
{
    queue_call((lib_call){.op = CONV_FORWARD, .out = out, .in = in, .w = w, .b = b, .conv = *d,
                          .work = work, .work_floats = work_floats});
}

void conv2d_cudnn_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                           const float *w, const conv2d_dims *d, float *work, size_t work_floats)
{
    queue_call((lib_call){.op = CONV_BACKWARD, .out = din, .dw = dw, .db = db, .dout = dout,
                          .in = in, .w = w, .conv = *d, .work = work, .work_floats = work_floats});
}

void conv2d_cudnn_backward_set(float *din, float *dw, float *db, const float *dout,
                               const float *in, const float *w, const conv2d_dims *d, float *work,
                               size_t work_floats)
{
    queue_call((lib_call){.op = CONV_BACKWARD_SET, .out = din, .dw = dw, .db = db, .dout = dout,
                          .in = in, .w = w, .conv = *d, .work = work, .work_floats = work_floats});
}

void conv2d_cudnn_algos(const conv2d_dims *d, char *buf, size_t len)
{
    (void)d;
    snprintf(buf, len, "emulated: the CPU's convolution (%s)", conv2d_backend());
}

void conv2d_cudnn_release(void)
{
    emu_stream_flush(gpu_context_stream()); /* no queued call still uses the workspace */
    free(shared_work);
    shared_work = NULL;
    shared_work_floats = 0;
}

/* ---- dense: the CPU's (dense.h) -------------------------------------------------------------- */

void dense_forward_cuda(float *out, const float *in, const float *w, const float *b,
                        const dense_dims *d)
{
    queue_call(
        (lib_call){.op = DENSE_FORWARD, .out = out, .in = in, .w = w, .b = b, .dense = *d});
}

void dense_backward_cuda(float *din, float *dw, float *db, const float *dout, const float *in,
                         const float *w, const dense_dims *d)
{
    queue_call((lib_call){.op = DENSE_BACKWARD, .out = din, .dw = dw, .db = db, .dout = dout,
                          .in = in, .w = w, .dense = *d});
}

/* ---- cuDNN's version: none ------------------------------------------------------------------ */

size_t cudnnGetVersion(void) { return 0; }
