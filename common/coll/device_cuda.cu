/* device_cuda.cu — the CUDA side of device.h, compiled by nvcc when building with CUDA=1.
 * Public: device_cuda_count, device_cuda_set, device_nccl_version, device_cudart_version. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>

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
