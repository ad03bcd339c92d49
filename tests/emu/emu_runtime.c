/* emu_runtime.c — the host side of the CPU emulator: nn/gpu_context.h's functions and the few
 * CUDA runtime calls the kernel files make, over plain host memory. Device pointers are host
 * pointers here and every call runs to completion when made, so a stream's order is kept and a
 * "sync" has nothing to wait for. There is no cuDNN or cuBLAS: a file that calls them (or
 * gpu_context_cudnn, gpu_context_cublas) does not link into the emulator.
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
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emu error"; }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    (void)kind, (void)s;
    memmove(dst, src, bytes);
    return cudaSuccess;
}
