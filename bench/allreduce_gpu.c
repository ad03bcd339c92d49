/* bench/allreduce_gpu.c — hvd_allreduce on device buffers, nccl-tests style, 64 KiB .. 256 MiB.
 *
 *   mpirun -n 1 build/cuda/bench/allreduce_gpu   the NCCL path with one rank (a copy on the GPU:
 *                                                its fixed cost), and the ceiling of the staged
 *                                                path: cudaMemcpy device->pinned + pinned->device
 *   mpirun -n 2 build/cuda/bench/allreduce_gpu   two ranks on one GPU: the host-staged path, and
 *                                                the same copies with both ranks copying at once
 *
 * Each size: warm-up calls, then timed calls (at least --iters, at least 0.2 s), each call's time
 * the slowest rank's; the table shows the median. algbw = bytes / time; busbw = algbw·2(n−1)/n
 * (0 with one rank, where there is no bus). The staged ceiling is bytes / (t_d2h + t_h2d): the
 * staged path cannot beat its own two copies. With several ranks on one GPU every rank copies at
 * the same time (time_median starts them together), so they share the GPU's copy engines and its
 * link: that ceiling is the one the staged path of those ranks meets. Float SUM, in place,
 * results on the device.
 * make bench-allreduce-gpu runs both. Needs a CUDA build and a GPU.
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef HVDLAB_CUDA

#include <mpi.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/stats.h"
#include "base/timer.h"
#include "hvd/device.h"
#include "hvd/hvd.h"

#define MAX_ITERS 1000

/* Median over calls of the slowest rank's time for one call of fn. */
static double time_median(void (*fn)(void *, size_t), void *buf, size_t bytes, int min_iters)
{
    static double t[MAX_ITERS];
    for (int w = 0; w < 3; w++)
        fn(buf, bytes);
    int n = 0;
    double start = timer_seconds(), go = 1;
    while (go && n < MAX_ITERS) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = timer_seconds();
        fn(buf, bytes);
        double dt = timer_seconds() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[n++] = dt;
        go = n < min_iters || timer_seconds() - start < 0.2;
        MPI_Bcast(&go, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* every rank stops together */
    }
    stats_sort(t, (size_t)n);
    return t[n / 2];
}

static void allreduce(void *buf, size_t bytes)
{
    hvd_allreduce((float *)buf, bytes / sizeof(float), HVD_SUM, "bench");
}

static void *pinned;
static void d2h(void *buf, size_t bytes)
{
    CUDA_CHECK(cudaMemcpy(pinned, buf, bytes, cudaMemcpyDeviceToHost));
}
static void h2d(void *buf, size_t bytes)
{
    CUDA_CHECK(cudaMemcpy(buf, pinned, bytes, cudaMemcpyHostToDevice));
}

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    hvd_pin_device(hvd_local_rank(), NULL);
    int size = hvd_size(), rank = hvd_rank(), iters = 20;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--iters") == 0)
            iters = atoi(argv[i + 1]);
    const size_t min_b = (size_t)64 << 10, max_b = (size_t)256 << 20;
    void *buf = NULL;
    CUDA_CHECK(cudaMalloc(&buf, max_b));
    CUDA_CHECK(cudaMemset(buf, 0, max_b));
    CUDA_CHECK(cudaMallocHost(&pinned, max_b));
    if (rank == 0) {
        printf("# hvd_allreduce on device buffers, %d rank(s), path %s; float SUM in place; "
               "median of the slowest rank\n", size, hvd_gpu_operations());
        printf("# %9s | %10s %9s %9s%s\n", "size", "time us", "algbw", "busbw",
               size == 1 ? " | d2h GB/s h2d GB/s staged-ceiling GB/s"
                         : " | d2h GB/s h2d GB/s staged-ceiling GB/s (every rank copying)");
    }
    for (size_t b = min_b; b <= max_b; b *= 2) {
        double t = time_median(allreduce, buf, b, iters);
        double alg = (double)b / t / 1e9, bus = alg * 2.0 * (size - 1) / size;
        char extra[128];
        double td = time_median(d2h, buf, b, iters), tu = time_median(h2d, buf, b, iters);
        snprintf(extra, sizeof extra, " | %8.2f %8.2f %19.2f", (double)b / td / 1e9,
                 (double)b / tu / 1e9, (double)b / (td + tu) / 1e9);
        if (rank == 0) {
            char sz[16];
            snprintf(sz, sizeof sz, b >= ((size_t)1 << 20) ? "%zuM" : "%zuK",
                     b >= ((size_t)1 << 20) ? b >> 20 : b >> 10);
            printf("  %9s | %10.1f %9.2f %9.2f%s\n", sz, t * 1e6, alg, bus, extra);
            fflush(stdout);
        }
    }
    CUDA_CHECK(cudaFreeHost(pinned));
    CUDA_CHECK(cudaFree(buf));
    hvd_shutdown();
    return 0;
}

#else

int main(void)
{
    fprintf(stderr, "bench/allreduce_gpu: needs a CUDA build and a GPU "
                    "(make bench-allreduce-gpu)\n");
    return 1;
}

#endif
