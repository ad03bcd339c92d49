/* emu_sched.h — runs a CUDA kernel's grid on the CPU: one block after another, the block's
 * threads as coroutines (glibc's ucontext) that run until they reach a barrier, so that
 * __syncthreads and warp shuffles mean what they mean on a GPU.
 *
 * Why: the kit's kernels (its *_cuda.cu files) can then run where there is no GPU, against the
 * CPU layers and model, in test_twins_emu and test_wrn_emu (tests/emu/README.md). They check
 * the kernels' arithmetic and indexing; not speed, races (threads never run at once here) or
 * anything of cuDNN or cuBLAS.
 *
 * Rules a kernel must keep, or the launch stops the process with one line naming the block:
 * every live thread of a block reaches the same __syncthreads; a full-mask shuffle is reached by
 * every lane of its warp, none of them exited. Blocks run in grid order (x fastest); launches run
 * to completion when made, so a stream's order is kept.
 *
 * Public: emu_threadIdx, emu_blockIdx, emu_blockDim, emu_gridDim, emu_launch, emu_syncthreads,
 *         emu_shfl_down, emu_dynamic_shared.
 */
#ifndef HVDLAB_EMU_SCHED_H
#define HVDLAB_EMU_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <vector_types.h> /* dim3, uint3 */

#ifdef __cplusplus
extern "C" {
#endif

/* threadIdx, blockIdx, blockDim, gridDim of the thread running now (cuda_emu.cuh maps the names) */
extern uint3 emu_threadIdx, emu_blockIdx;
extern dim3 emu_blockDim, emu_gridDim;

/* Runs body(arg) once per thread of every block of grid, with shared_bytes of dynamic shared
 * memory per block (emu_dynamic_shared); returns when the last block is done. */
void emu_launch(dim3 grid, dim3 block, size_t shared_bytes, void (*body)(void *), void *arg);
/* __syncthreads: waits until every live thread of the block is here. */
void emu_syncthreads(void);
/* __shfl_down_sync on a value's bits (up to 8 bytes): lane + delta's value, or this lane's own
 * where lane + delta is past the warp. mask must be the full warp's. */
uint64_t emu_shfl_down(unsigned mask, uint64_t bits, unsigned delta);
/* The block's extern __shared__ array. */
void *emu_dynamic_shared(void);

#ifdef __cplusplus
}
#endif

#endif
