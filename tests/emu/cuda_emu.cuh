/* cuda_emu.cuh — what a kernel file (.cu) needs to compile as plain C++ and run on the CPU
 * (emu_sched.h): force-included (g++ -include) before the file, after tests/emu/emu_cu.sh has
 * rewritten its launches `k<<<grid, block, shared, stream>>>(args)` as
 * `emu_kernel(k, grid, block, shared, stream)(args)` and each `extern __shared__ T a[];` as a
 * pointer to the block's dynamic shared memory.
 *
 * The CUDA toolkit's own headers give the host API's types (cudaStream_t, dim3, cudnn.h's and
 * cublas_v2.h's, which base/cuda_check.h names); they are read first, as a host compiler reads
 * them. Then the device qualifiers become nothing (__shared__: static, one copy for the block
 * running now, as blocks run one at a time), the built-in variables become emu_sched's, and
 * __CUDACC__ is defined so that the kit's headers declare their CUDA C++ parts
 * (gpu_context_stream, gpu_blocks, HVD_HOST_DEVICE).
 *
 * Emulated: __syncthreads, __shfl_down_sync (full mask), atomicAdd and atomicMin (threads never
 * run at once here, so a plain read-modify-write is atomic), __float_as_uint, and
 * cudaFuncGetAttributes on a kernel. A kernel that uses anything else does not compile, which
 * names it.
 */
#ifndef HVDLAB_CUDA_EMU_CUH
#define HVDLAB_CUDA_EMU_CUH

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <string.h>

#include <tuple>
#include <utility>

#include "emu_sched.h"
#include "emu_stream.h"

/* cuda_runtime.h (which some kernel files include) is nvcc's view: device built-ins and math
 * that clash with the host's and with the ones below. Its host API is cuda_runtime_api.h's. */
#define __CUDA_RUNTIME_H__

#undef __host__
#undef __device__
#undef __global__
#undef __shared__
#undef __forceinline__
#undef __launch_bounds__
#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __CUDACC__ 1

#define threadIdx emu_threadIdx
#define blockIdx emu_blockIdx
#define blockDim emu_blockDim
#define gridDim emu_gridDim

static inline void __syncthreads(void) { emu_syncthreads(); }

template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta)
{
    static_assert(sizeof(T) <= sizeof(uint64_t), "emu: shuffles of at most 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = emu_shfl_down(mask, bits, delta);
    memcpy(&v, &bits, sizeof v);
    return v;
}

static inline unsigned int __float_as_uint(float x)
{
    unsigned int u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* cuda_runtime.h's overload for a kernel itself */
template <typename T> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, T *f)
{
    return cudaFuncGetAttributes(a, reinterpret_cast<const void *>(f));
}

template <typename T> static inline T atomicAdd(T *p, T v)
{
    const T old = *p;
    *p = old + v;
    return old;
}

template <typename T> static inline T atomicMin(T *p, T v)
{
    const T old = *p;
    *p = v < old ? v : old;
    return old;
}

/* A launch: the kernel's arguments converted to its parameter types once, as a launch copies
 * them, and every thread called with its own copy of those. It runs when its stream runs it
 * (emu_stream.h: when the host waits for it). */
template <typename... P> struct emu_launcher {
    void (*kernel)(P...);
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
    struct call {
        void (*kernel)(P...);
        std::tuple<P...> args;
        dim3 grid, block;
        size_t shared;
    };
    static void run(void *p)
    {
        call *c = static_cast<call *>(p);
        std::apply(c->kernel, c->args);
    }
    static void launch(void *p)
    {
        call *c = static_cast<call *>(p);
        emu_launch(c->grid, c->block, c->shared, run, c);
        delete c;
    }
    template <typename... A> void operator()(A &&...a) const
    {
        emu_stream_enqueue(stream, launch,
                           new call{kernel, std::tuple<P...>(std::forward<A>(a)...), grid, block,
                                    shared});
    }
};

template <typename... P>
static inline emu_launcher<P...> emu_kernel(void (*kernel)(P...), dim3 grid, dim3 block,
                                            size_t shared = 0, cudaStream_t stream = 0)
{
    return emu_launcher<P...>{kernel, grid, block, shared, stream};
}

#endif
