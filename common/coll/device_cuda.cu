/* device_cuda.cu — the CUDA side of device.h, compiled by nvcc when building with CUDA=1.
 * Public: device_cuda_count, device_cuda_set, device_nccl_version, device_cudart_version. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "coll/device.h"
}

extern "C" int device_cuda_count(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, whylen, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0)
        snprintf(why, whylen, "cudaGetDeviceCount found 0 devices");
    return n;
}

extern "C" int device_cuda_set(int gpu) { return cudaSetDevice(gpu) == cudaSuccess ? 0 : -1; }

extern "C" int device_nccl_version(void)
{
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

extern "C" int device_cudart_version(void)
{
    int v = 0;
    return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
}

extern "C" int device_cudnn_version(void) { return (int)cudnnGetVersion(); }

/* TF32 follows the rule nn/gpu_context.cu applies when it makes the context. */
extern "C" void device_cuda_announce(int gpu)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, gpu) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    const char *env = getenv("HVDLAB_TF32");
    const int tf32 = !(env && strcmp(env, "0") == 0);
    printf("hvdlab: GPU %d: %s, %.1f GiB; TF32 %s in cuDNN convolutions (%s)\n", gpu, p.name,
           (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), tf32 ? "on" : "off",
           tf32 ? "HVDLAB_TF32=0 turns it off" : "HVDLAB_TF32=0");
    fflush(stdout);
}
