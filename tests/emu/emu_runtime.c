/* emu_runtime.c — the host side of the CPU emulator: nn/gpu_context.h's functions and the CUDA
 * runtime calls the kit makes, over plain host memory, one GPU. Memory and copies are
 * emu_memory.c's (which host memory stands for the GPU's), streams and events emu_stream.c's
 * (work on the kit's streams runs when waited for). cuDNN and cuBLAS are not here: emu_libs.c
 * stands in for the kit's files that call them; NCCL is emu_nccl.c's.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/fatal.h"
#include "base/timer.h"
#include "emu_memory.h"
#include "nn/gpu_context.h"

/* gpu_context.h declares them for CUDA C++ only; the emulated kernel files call them. */
cudaStream_t gpu_context_stream(void);
void gpu_context_wait(cudaStream_t s, cudaEvent_t e);

#define EMU_AT_RELEASE_MAX 16

static int tf32 = 1;
static void *scratch;
static size_t scratch_bytes;
static void (*at_release[EMU_AT_RELEASE_MAX])(void);
static int nat_release;
/* The model's stream: non-blocking, as gpu_context.cu's, so its work runs when waited for. */
static cudaStream_t stream;
/* The host's waits, as gpu_context.cu counts them (here the queued work runs in them). */
static double waited_s;
static long waits;

void gpu_context_init(void)
{
    if (!stream && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        fatal_error("emu: cannot create the model's stream");
}
cudaStream_t gpu_context_stream(void)
{
    gpu_context_init();
    return stream;
}
int gpu_context_device(void) { return 0; }
void gpu_context_wait(cudaStream_t s, cudaEvent_t e)
{
    const double t0 = timer_seconds();
    if (e)
        cudaEventSynchronize(e);
    else
        cudaStreamSynchronize(s);
    waited_s += timer_seconds() - t0;
    waits++;
}
double gpu_context_waited(long *count)
{
    if (count)
        *count = waits;
    return waited_s;
}
void gpu_context_sync(void) { gpu_context_wait(gpu_context_stream(), NULL); }
void gpu_context_set_tf32(int on) { tf32 = on != 0; }
int gpu_context_tf32(void) { return tf32; }

void gpu_context_at_release(void (*fn)(void))
{
    gpu_context_init(); /* as gpu_context.cu's: release then has something to release */
    for (int i = 0; i < nat_release; i++)
        if (at_release[i] == fn)
            return;
    if (nat_release == EMU_AT_RELEASE_MAX)
        fatal_error("emu: more than %d gpu_context_at_release functions", EMU_AT_RELEASE_MAX);
    at_release[nat_release++] = fn;
}

/* As gpu_context.cu's: the stream's work done, then the last registered function first. */
void gpu_context_release(void)
{
    if (!stream)
        return;
    gpu_context_sync();
    for (int i = nat_release - 1; i >= 0; i--)
        at_release[i]();
    nat_release = 0;
    gpu_context_free(scratch);
    scratch = NULL;
    scratch_bytes = 0;
    cudaStreamDestroy(stream);
    stream = NULL;
}

void *gpu_context_scratch(size_t bytes)
{
    if (bytes > scratch_bytes) {
        gpu_context_free(scratch); /* after the work queued that may read it (cudaFree's rule) */
        scratch = gpu_context_alloc(bytes);
        scratch_bytes = bytes;
    }
    return scratch;
}

cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess             ? "no error"
           : e == cudaErrorNotReady     ? "device not ready"
           : e == cudaErrorNotSupported ? "operation not supported"
           : e == cudaErrorInvalidValue ? "invalid argument"
           : e == cudaErrorMemoryAllocation ? "out of memory"
                                        : "an error in the CPU emulator";
}

/* ---- the rest of the runtime the kit calls: devices ------------------------------------------ */

/* Free: the total less the live device blocks, to the byte (a GPU counts in pages and holds
 * memory of its own), so that a block nobody frees shows. */
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *total = (size_t)16 << 30;
    *free_bytes = *total - emu_device_bytes();
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (d != 0)
        return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    strcpy(p->name, "CPU emulator (tests/emu)");
    p->totalGlobalMem = (size_t)16 << 30;
    p->major = 9;
    p->multiProcessorCount = 1;
    return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *f)
{
    (void)f;
    memset(a, 0, sizeof *a);
    return cudaSuccess;
}
