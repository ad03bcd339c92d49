/* hvdlab-info — what this build of hvdlab can do, in the shape of `horovodrun --check-build`.
 * Runs without mpirun (it never initialises MPI). `make check-build` runs it. */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "coll/device.h"
#include "coll/hvd.h"

int main(void)
{
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpi, &len); /* allowed before MPI_Init */
    char *nl = strchr(mpi, ',');
    if (nl)
        *nl = '\0';
    int cuda = 0, nccl = 0;
#ifdef HVDLAB_CUDA
    cuda = 1;
    nccl = device_nccl_version();
#endif
    printf("hvdlab v%s:\n\n", HVDLAB_VERSION);
    printf("Available Frameworks:\n    [X] hvdlab C runtime (libhvdlab.a)\n\n");
    printf("Available Controllers:\n    [X] MPI (%s)\n    [ ] Gloo\n\n", mpi);
    printf("Available Tensor Operations:\n");
    if (nccl)
        printf("    [X] NCCL (%d.%d.%d)\n", nccl / 10000, nccl / 100 % 100, nccl % 100);
    else
        printf("    [ ] NCCL%s\n", cuda ? " (library did not answer)" : " (build with make CUDA=1)");
    printf("    [ ] DDL\n    [ ] CCL\n    [X] MPI (ring allreduce over point-to-point, tensor fusion, "
           "fp16 compression)\n\n");
    printf("Device backend:\n");
    printf("    [X] CPU (%ld cores online, OpenBLAS: %s)\n", sysconf(_SC_NPROCESSORS_ONLN),
           openblas_get_config());
#ifdef HVDLAB_CUDA
    int rt = device_cudart_version();
    char why[256] = "";
    int ngpu = device_cuda_count(why, sizeof why);
    printf("    [X] CUDA (runtime %d.%d)\n", rt / 1000, rt % 1000 / 10);
    if (ngpu > 0)
        printf("        %d GPU(s) visible\n", ngpu);
    else
        printf("        no GPU visible (%s): programs run on the CPU\n", why);
#else
    printf("    [ ] CUDA (build with make CUDA=1)\n");
#endif
    return 0;
}
