/* emu_runtime.c — the host side of the CPU emulator: nn/gpu_context.h's functions and the CUDA
 * runtime calls the kit makes, over plain host memory. Device pointers are host pointers here
 * and every call runs to completion when made, so a stream's order is kept and a "sync" has
 * nothing to wait for. cuDNN, cuBLAS and NCCL are not here: emu_libs.c stands in for the kit's
 * files that call them, and anything else that calls them does not link into the emulator.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/fatal.h"
#include "nn/gpu_context.h"

/* gpu_context.h declares it for CUDA C++ only; the emulated kernel files call it. */
cudaStream_t gpu_context_stream(void);

#define EMU_AT_RELEASE_MAX 16

static int tf32 = 1;
static void *scratch;
static size_t scratch_bytes;
static void (*at_release[EMU_AT_RELEASE_MAX])(void);
static int nat_release;

void gpu_context_init(void) {}
int gpu_context_device(void) { return 0; }
void gpu_context_sync(void) {}
void gpu_context_set_tf32(int on) { tf32 = on != 0; }
int gpu_context_tf32(void) { return tf32; }

void gpu_context_at_release(void (*fn)(void))
{
    for (int i = 0; i < nat_release; i++)
        if (at_release[i] == fn)
            return;
    if (nat_release == EMU_AT_RELEASE_MAX)
        fatal_error("emu: more than %d gpu_context_at_release functions", EMU_AT_RELEASE_MAX);
    at_release[nat_release++] = fn;
}

void gpu_context_release(void)
{
    for (int i = 0; i < nat_release; i++)
        at_release[i]();
    nat_release = 0;
    free(scratch);
    scratch = NULL;
    scratch_bytes = 0;
}

/* 256-byte aligned, as cudaMalloc's; NaN-filled (all bits set), as nothing promises it zeros.
 * Exactly bytes long, not rounded up: under ASan (make SANITIZE=1 test-emu) a kernel's access
 * past a buffer's end is then reported. */
void *gpu_context_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
        fatal_error("emu: out of memory for %zu bytes", bytes);
    memset(p, 0xFF, bytes);
    return p;
}

void gpu_context_free(void *p) { free(p); }
void gpu_context_upload(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
void gpu_context_download(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
void gpu_context_zero(void *p, size_t bytes) { memset(p, 0, bytes); }

void *gpu_context_scratch(size_t bytes)
{
    if (bytes > scratch_bytes) {
        free(scratch);
        scratch = gpu_context_alloc(bytes);
        scratch_bytes = bytes;
    }
    return scratch;
}

/* A stream the kernels pass along and never look into. */
cudaStream_t gpu_context_stream(void) { return NULL; }

cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "an error in the CPU emulator";
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    (void)kind, (void)s;
    memmove(dst, src, bytes);
    return cudaSuccess;
}

/* ---- the rest of the runtime the kit calls: memory, devices, streams, events ----------------- */

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = gpu_context_alloc(bytes);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    *p = gpu_context_alloc(bytes);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags)
{
    (void)p, (void)bytes, (void)flags;
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void *p)
{
    (void)p;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *free_bytes = *total = (size_t)16 << 30;
    return cudaSuccess;
}
/* Every pointer is host memory here: the collectives take the host path. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    memset(a, 0, sizeof *a);
    a->type = cudaMemoryTypeUnregistered;
    a->hostPointer = (void *)p;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
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

/* Streams and events: the work is done when enqueued, so every query says done. */
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = NULL;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
static int emu_event; /* a non-NULL handle, the same for every event: none holds anything */
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = (cudaEvent_t)&emu_event;
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    return cudaEventCreate(e);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e, (void)s;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}
/* No clock: a GPU mark's time is 0 here. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    (void)a, (void)b;
    *ms = 0.0f;
    return cudaSuccess;
}
