/* emu_libs.c — the CPU emulator's stand-ins for what the kit takes from NVIDIA's libraries:
 * the convolutions (nn/conv2d_cudnn.cu: cuDNN) and dense layers (nn/dense_cuda.cu: cuBLAS) as
 * the CPU layers themselves, on the emulator's host memory, and NCCL as an error.
 *
 * So test_wrn_emu runs the GPU model with convolutions and dense layers that are the CPU's own:
 * what it compares with the CPU model is everything else the GPU path does (the kit's kernels,
 * the model's wiring on the GPU, the optimizers' kernels, checkpoints through the host). Whether
 * cuDNN and cuBLAS are called right is for a GPU (test_twins_cuda's convolution and dense cases).
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/fatal.h"
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
    conv2d_forward(out, in, w, b, d, work_for(d, work, work_floats));
}

void conv2d_cudnn_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                           const float *w, const conv2d_dims *d, float *work, size_t work_floats)
{
    conv2d_backward(din, dw, db, dout, in, w, d, work_for(d, work, work_floats));
}

void conv2d_cudnn_backward_set(float *din, float *dw, float *db, const float *dout,
                               const float *in, const float *w, const conv2d_dims *d, float *work,
                               size_t work_floats)
{
    conv2d_backward_set(din, dw, db, dout, in, w, d, work_for(d, work, work_floats));
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
    dense_forward(out, in, w, b, d);
}

void dense_backward_cuda(float *din, float *dw, float *db, const float *dout, const float *in,
                         const float *w, const dense_dims *d)
{
    dense_backward(din, dw, db, dout, in, w, d);
}

/* ---- cuDNN's version, NCCL: none ------------------------------------------------------------ */

size_t cudnnGetVersion(void) { return 0; }

/* Every NCCL call fails; the version 0 says there is none. Nothing the emulated suites run
 * makes a communicator (they have no hvd_init). */
static ncclResult_t no_nccl(void) { return ncclInvalidUsage; }
const char *ncclGetErrorString(ncclResult_t r)
{
    (void)r;
    return "NCCL is not in the CPU emulator";
}
const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return "NCCL is not in the CPU emulator";
}
ncclResult_t ncclGetVersion(int *version)
{
    *version = 0;
    return no_nccl();
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    (void)id;
    return no_nccl();
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)comm, (void)nranks, (void)id, (void)rank;
    return no_nccl();
}
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    (void)comm, (void)ndev, (void)devlist;
    return no_nccl();
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    (void)comm;
    *err = ncclSuccess;
    return no_nccl();
}
ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    (void)comm;
    return no_nccl();
}
ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    (void)comm;
    return no_nccl();
}
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    (void)comm;
    return no_nccl();
}
ncclResult_t ncclGroupStart(void) { return no_nccl(); }
ncclResult_t ncclGroupEnd(void) { return no_nccl(); }
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)send, (void)recv, (void)count, (void)type, (void)op, (void)comm, (void)stream;
    return no_nccl();
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream)
{
    (void)send, (void)recv, (void)count, (void)type, (void)root, (void)comm, (void)stream;
    return no_nccl();
}
