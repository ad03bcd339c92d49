/* hvdlab-info — what this build of hvdlab can do, in the shape of `horovodrun --check-build`.
 * Runs without mpirun (it never initialises MPI). `make check-build` runs it. */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env_switch.h"
#include "coll_gpu/nccl.h"
#include "hvd/device.h"
#include "hvd/hvd.h"

int main(int argc, char **argv)
{
    if (argc > 1) { /* a typo must not look like an answer */
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: %s (no arguments): what this build of hvdlab can do, as horovodrun "
                   "--check-build prints it\n", argv[0]);
            return 0;
        }
        fprintf(stderr, "%s: unexpected argument '%s' (it takes none; --help says what it "
                "prints)\n", argv[0], argv[1]);
        return 2;
    }
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpi, &len); /* allowed before MPI_Init */
    char *nl = strchr(mpi, ',');
    if (nl)
        *nl = '\0';
    /* [X] NCCL only when a communicator can be made here, as Horovod's check means it works. */
    char nccl_ver[32], why[256] = "";
    nccl_version(nccl_ver, sizeof nccl_ver);
    int nccl = nccl_probe(why, sizeof why) == 0;
    printf("hvdlab v%s:\n\n", HVDLAB_VERSION);
    printf("Available Frameworks:\n    [X] hvdlab C runtime (libhvdlab.a)\n\n");
    printf("Available Controllers:\n    [X] MPI (%s)\n    [ ] Gloo\n\n", mpi);
    printf("Available Tensor Operations:\n");
#ifdef HVDLAB_CUDA
    if (nccl)
        printf("    [X] NCCL (%s, %s)\n", nccl_ver, device_library_file(DEVICE_LIB_NCCL));
    else
        printf("    [ ] NCCL (%s linked from %s, but no communicator: %s)\n", nccl_ver,
               device_library_file(DEVICE_LIB_NCCL), why);
#else
    if (nccl)
        printf("    [X] NCCL (%s)\n", nccl_ver);
    else
        printf("    [ ] NCCL (%s)\n", why);
#endif
    printf("    [ ] DDL\n    [ ] CCL\n    [X] MPI (allreduce through shared memory within a host, "
           "ring over point-to-point across hosts; tensor fusion, fp16 compression%s)\n"
           "    [ ] Gloo\n\n",
           nccl ? "; device tensors staged through pinned host memory when ranks share a GPU"
                : "");
    printf("Device backend:\n");
    printf("    [X] CPU (%ld cores online, OpenBLAS: %s)\n", sysconf(_SC_NPROCESSORS_ONLN),
           openblas_get_config());
#ifdef HVDLAB_CUDA
    int rt = device_cudart_version();
    int ngpu = device_cuda_count(why, sizeof why);
    printf("    [X] CUDA (runtime %d.%d, %s; kernels for %s)\n", rt / 1000, rt % 1000 / 10,
           device_library_file(DEVICE_LIB_CUDART), device_cuda_archs());
    for (int g = 0; g < ngpu; g++) {
        char name[256];
        if (device_cuda_name(g, name, sizeof name) == 0)
            printf("        GPU %d: %s\n", g, name);
        else
            printf("        GPU %d: (cudaGetDeviceProperties failed)\n", g);
        if (device_cuda_set(g) == 0 && device_cuda_image_check(g, why, sizeof why) != 0)
            printf("        %s\n", why);
    }
    if (ngpu <= 0)
        printf("        no GPU visible (%s): programs run on the CPU\n", why);
    const int dnn = device_cudnn_version();
    if (dnn > 0)
        printf("    [X] cuDNN (%d.%d.%d, %s)\n", dnn / 10000, dnn / 100 % 100, dnn % 100,
               device_library_file(DEVICE_LIB_CUDNN));
    else
        printf("    [ ] cuDNN (linked, but it could not be loaded)\n");
    printf("        TF32 in convolutions: %s\n", env_switch_on(SWITCH_TF32)
                                                    ? "on (HVDLAB_TF32=0 turns it off)"
                                                    : "off (HVDLAB_TF32=0)");
#else
    printf("    [ ] CUDA (build with make CUDA=1)\n");
#endif
    return 0;
}
