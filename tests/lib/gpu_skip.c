/* gpu_skip.c — the skip rule of the CUDA suites. See gpu_skip.h.
 * Public: gpu_skip_status. */
#include "lib/gpu_skip.h"

#include <stdio.h>

#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>
#include <glob.h>
#include <unistd.h>

/* Whether the NVIDIA kernel driver is here: its control node or a GPU's node (a container may
 * show only the GPUs it was given, /dev/nvidia3 without /dev/nvidia0). */
static int nvidia_device_node(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0)
        return 1;
    glob_t g;
    if (glob("/dev/nvidia[0-9]*", 0, NULL, &g) != 0)
        return 0;
    const int found = g.gl_pathc > 0;
    globfree(&g);
    return found;
}

int gpu_skip_status(int *ngpu)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (ngpu)
        *ngpu = e == cudaSuccess ? n : 0;
    if (e == cudaSuccess && n > 0)
        return 0;
    char why[256];
    if (e == cudaSuccess)
        snprintf(why, sizeof why, "cudaGetDeviceCount found 0 devices");
    else
        snprintf(why, sizeof why, "cudaGetDeviceCount: %s (%d)", cudaGetErrorString(e), (int)e);
    const int node = nvidia_device_node();
    const int no_driver = e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
                          e == cudaErrorInitializationError || e == cudaErrorSystemDriverMismatch;
    if (e == cudaErrorNoDevice || ((e == cudaSuccess || no_driver) && !node)) {
        printf("skipped: no GPU (%s%s)\n", why, node ? "" : "; no /dev/nvidia* device node");
        return 77;
    }
    printf("FAILED: a GPU is present but CUDA cannot use it (%s)\n", why);
    return 1;
}

#else

int gpu_skip_status(int *ngpu)
{
    if (ngpu)
        *ngpu = 0;
    printf("skipped: no GPU (a CPU build: HVDLAB_CUDA is not defined)\n");
    return 77;
}

#endif
