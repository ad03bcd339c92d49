/* device.h — pin each rank to its own device: hvd_pin_device(hvd_local_rank(), NULL).
 *
 * CUDA build with GPUs: cudaSetDevice(local_rank % ngpus). Otherwise (CPU build, HVDLAB_DEVICE=cpu,
 * or a CUDA build that finds no GPU, which it says in one line): bind the rank to its own share of
 * the cores it may run on and set the BLAS thread count to that share, so N ranks on one node do
 * not fight over every core. HVDLAB_REPORT_BINDINGS=1 prints each rank's binding.
 */
#ifndef HVDLAB_DEVICE_H
#define HVDLAB_DEVICE_H

#include <stddef.h>

typedef enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 } device_backend;

typedef struct {
    device_backend backend;
    int gpu;          /* CUDA device index, or -1 */
    int ncores;       /* cores this rank is bound to */
    int cores[64];    /* their ids (first 64) */
    int blas_threads; /* BLAS thread count set */
} device_binding;

/* Returns 0; fills *out when out is not NULL. */
int hvd_pin_device(int local_rank, device_binding *out);
/* The GPU the last hvd_pin_device pinned this process to; -1 for the CPU, and before any
 * pinning. The step programs' flags put it into their model's config (args_defaults,
 * train/args.h): a model is built where it says, not where the rank was pinned later. */
int hvd_pinned_gpu(void);
/* "cores 0,1, 2 BLAS threads", "core 3, 1 BLAS thread" or "GPU 0" */
void device_describe(const device_binding *b, char *out, size_t outlen);

/* Split of ncpus allowed CPUs among local_size ranks: rank local_rank gets `count` of them
 * starting at list index `first` (ranks share cores round-robin when there are more ranks). */
void device_cpu_share(int ncpus, int local_size, int local_rank, int *first, int *count);

/* CUDA side (device_cuda.cu), present when built with CUDA=1. */
int device_cuda_count(char *why, size_t whylen); /* GPUs visible, or 0 with the reason */
int device_cuda_set(int gpu);                    /* 0 or -1 */
int device_nccl_version(void);                   /* e.g. 22703 */
int device_cudart_version(void);
/* One line on stdout: the GPU's name and memory, and whether cuDNN may use TF32 (HVDLAB_TF32). */
void device_cuda_announce(int gpu);
/* cuDNN's version as it reports itself (e.g. 91900), 0 if it cannot be loaded. */
int device_cudnn_version(void);
/* "NVIDIA H100 80GB HBM3, 79.2 GiB" into out; 0, or -1 when CUDA cannot describe the GPU. */
int device_cuda_name(int gpu, char *out, size_t outlen);
typedef enum { DEVICE_LIB_CUDART, DEVICE_LIB_CUDNN, DEVICE_LIB_NCCL } device_library;
/* The path of the shared library this program loaded for lib ("?" when unknown). */
const char *device_library_file(device_library lib);
/* The architectures the kernels were compiled for ("sm_80 sm_90": make's CUDA_ARCH). */
const char *device_cuda_archs(void);
/* 0 when GPU gpu can run this build's kernels; else -1 and why names the GPU's sm_XY, the
 * build's and the CUDA_ARCH to rebuild with. */
int device_cuda_image_check(int gpu, char *why, size_t whylen);

#endif
