/* emu_memory.h — the CPU emulator's record of which host memory stands for the GPU's
 * (emu_memory.c), for the emulator's other parts (emu_nccl.c, emu_libs.c, emu_sched.c). */
#ifndef HVDLAB_EMU_MEMORY_H
#define HVDLAB_EMU_MEMORY_H

#include <stddef.h>

/* 1 when [p, p + bytes) lies in one live block of emulated device memory (cudaMalloc,
 * gpu_context_alloc); always, for 0 bytes. */
int emu_device_range(const void *p, size_t bytes);
/* The bytes of this process's live device blocks (cudaMalloc, gpu_context_alloc; not the
 * blocks opened through CUDA IPC): what cudaMemGetInfo's free memory lacks of its total. */
size_t emu_device_bytes(void);
/* Under the guard (emu_memory.c), device memory is closed to the host except between these (a
 * kernel, a copy, a library stand-in); they nest, and threads may share them. Without it,
 * nothing. */
void emu_device_open(void);
void emu_device_close(void);

#endif
