/* device_cuda.cu — the CUDA side of device.h, compiled by nvcc when building with CUDA=1.
 * Public: device_cuda_count, device_cuda_set, device_nccl_version, device_cudart_version,
 *         device_cudnn_version, device_cuda_announce, device_cuda_name, device_library_file,
 *         device_cuda_archs, device_cuda_image_check. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "base/env_switch.h"
#include "hvd/device.h"
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
    const int tf32 = env_switch_on(SWITCH_TF32);
    printf("hvdlab: GPU %d: %s, %.1f GiB; TF32 %s in cuDNN convolutions (%s)\n", gpu, p.name,
           (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), tf32 ? "on" : "off",
           tf32 ? "HVDLAB_TF32=0 turns it off" : "HVDLAB_TF32=0");
    fflush(stdout);
}

extern "C" int device_cuda_name(int gpu, char *out, size_t outlen)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, gpu) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    snprintf(out, outlen, "%s, %.1f GiB", p.name,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return 0;
}

/* The file each library was loaded from: the question on a machine with two cuDNNs (the CUDA
 * prefix's and PyTorch's) is which one this program runs. */
extern "C" const char *device_library_file(device_library lib)
{
    const void *sym = lib == DEVICE_LIB_CUDNN  ? (const void *)&cudnnGetVersion
                      : lib == DEVICE_LIB_NCCL ? (const void *)&ncclGetVersion
                                               : (const void *)&cudaRuntimeGetVersion;
    Dl_info info;
    return dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "?";
}

#ifndef HVDLAB_CUDA_ARCH
#define HVDLAB_CUDA_ARCH "?"
#endif

extern "C" const char *device_cuda_archs(void) { return HVDLAB_CUDA_ARCH; }

static __global__ void image_probe_kernel(void) {}

/* Whether this build has code the GPU can run: loading a kernel's attributes fails when neither
 * its binary (sm_XY) nor its PTX fits the device (the way CUB asks for its PTX version). */
extern "C" int device_cuda_image_check(int gpu, char *why, size_t whylen)
{
    cudaFuncAttributes a;
    const cudaError_t e = cudaFuncGetAttributes(&a, image_probe_kernel);
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError();
    cudaDeviceProp p;
    int major = 0, minor = 0;
    char name[256] = "?";
    if (cudaGetDeviceProperties(&p, gpu) == cudaSuccess) {
        major = p.major;
        minor = p.minor;
        snprintf(name, sizeof name, "%s", p.name);
    } else {
        (void)cudaGetLastError();
    }
    snprintf(why, whylen,
             "GPU %d (%s, sm_%d%d) cannot run this build's kernels, compiled for %s (%s): "
             "rebuild with make CUDA=1 CUDA_ARCH=sm_%d%d",
             gpu, name, major, minor, HVDLAB_CUDA_ARCH, cudaGetErrorString(e), major, minor);
    return -1;
}
