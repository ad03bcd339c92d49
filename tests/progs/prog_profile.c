/* prog_profile.c — a known workload for HVD_PROFILE's table: K allreduces of S bytes, then one
 * broadcast of S bytes and one allgather of S bytes per rank.
 * Usage: mpirun -n N prog_profile K S
 * Public: main. */
#include <stdio.h>
#include <stdlib.h>

#include "hvdlab.h"

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    if (argc != 3)
        fatal_error("usage: prog_profile K S (K allreduces of S bytes)");
    int k = atoi(argv[1]);
    size_t n = (size_t)atol(argv[2]) / sizeof(float);
    float *buf = calloc(n ? n : 1, sizeof *buf);
    if (!buf)
        fatal_error("out of memory");
    for (int i = 0; i < k; i++)
        hvd_allreduce(buf, n, HVD_AVERAGE, "t");
    hvd_broadcast(buf, n, 0, "b");
    size_t total;
    free(hvd_allgather(buf, n, &total, NULL, "g"));
    free(buf);
    hvd_shutdown();
    return 0;
}
