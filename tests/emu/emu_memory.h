/* emu_memory.h — the CPU emulator's record of which host memory stands for the GPU's
 * (emu_memory.c), for the emulator's other parts (emu_nccl.c, emu_libs.c, emu_sched.c). */
#ifndef HVDLAB_EMU_MEMORY_H
#define HVDLAB_EMU_MEMORY_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* 1 when p lies in a live block of emulated device memory (cudaMalloc, gpu_context_alloc). */
int emu_is_device(const void *p);
/* 1 when [p, p + bytes) lies in one live device block (always, for 0 bytes). */
int emu_device_range(const void *p, size_t bytes);
/* memmove, after checking both sides against kind as a GPU would; a wrong side stops the
 * program with one line naming call. */
void emu_copy(const char *call, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k);
/* Under HVDLAB_EMU_GUARD=1, device memory is closed to the host except between these (a
 * kernel, a copy, a library stand-in); they nest, and threads may share them. Otherwise
 * nothing. */
void emu_device_open(void);
void emu_device_close(void);

#endif
