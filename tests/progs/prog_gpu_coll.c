/* prog_gpu_coll.c — collectives on device buffers against the same calls on host buffers, for
 * test_gpu_collectives.c (which runs it under mpirun with 1, 2 and 3 ranks and both ways).
 *   mpirun -n N prog_gpu_coll [big] [mismatch-where | release | hung-stream]
 * Every case runs the CPU runtime (host buffers) and the device path (cudaMalloc'd buffers) on
 * the same data and compares. Values tell positions and ranks apart: element i of rank r is
 * (r + 1) + (i % 4099) / 4096, or a random value for fp16. The host-staged path and NCCL with one
 * rank run the CPU's arithmetic, so they must give the CPU's bits; NCCL over several GPUs adds in
 * another order: within 1e-6 of the scale (fp32) or 4e-3 (fp16).
 * release: a device param_set through the DistributedOptimizer's collectives, then freed with
 * the GPU context (release_case).
 * hung-stream (the emulator only): the usual cases, with another stream holding work that never
 * finishes while each device collective runs (hang), as a NCCL kernel whose peer died would.
 * Rank 0 prints "path=<nccl|mpi|none>" first and "prog_gpu_coll: C checks, F failures" last;
 * the exit status is 0 only when every rank saw no failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HVDLAB_CUDA

#include <math.h>
#include <mpi.h>

#include "base/cuda_check.h"
#include "hvd/device.h"
#include "hvd/hvd.h"
#include "model/params.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"
#include "optim/optim.h"
#include "optim/optim_cuda.h"
#ifdef HVDLAB_CUDA_EMU
#include "emu_stream.h"
#endif

static int rank, size, exact, checks, failures;
static cudaStream_t side; /* hung-stream: the stream that hangs */

/* on: side holds work that never finishes, until hang(0) (the emulator's emu_stream_hang). A
 * collective must not wait for it: no cudaDeviceSynchronize, and no cudaFree, cudaFreeHost or
 * cudaHostUnregister, which wait for the whole device. The emulator stops at such a wait with
 * one line, where a GPU would block for ever. The cases' own frees come after hang(0). */
static void hang(int on)
{
#ifdef HVDLAB_CUDA_EMU
    if (side)
        emu_stream_hang(side, on);
#else
    (void)on;
#endif
}

#define N_BASE 4099 /* lengths around it: not a multiple of any rank count here */

static float value(int r, size_t i) { return (float)(r + 1) + (float)(i % 4099) / 4096.0f; }

static float *host_copy(const float *h, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (n)
        memcpy(x, h, n * sizeof *x);
    return x;
}

static float *dev_copy(const float *h, size_t n)
{
    float *d = NULL;
    CUDA_CHECK(cudaMalloc((void **)&d, (n ? n : 1) * sizeof *d));
    if (n)
        CUDA_CHECK(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    return d;
}

/* The copy up queued on the legacy default stream, not waited for: a collective with no stream
 * bound must come after it (gpu_ops.h). Under the emulator it runs only when something waits
 * for that stream, so a collective that does not reads the block's 0xFF bytes. */
static float *dev_copy_queued(const float *h, size_t n)
{
    float *d = NULL;
    CUDA_CHECK(cudaMalloc((void **)&d, (n ? n : 1) * sizeof *d));
    if (n)
        CUDA_CHECK(cudaMemcpyAsync(d, h, n * sizeof *d, cudaMemcpyHostToDevice,
                                   cudaStreamLegacy));
    return d;
}

static float *download(const float *d, size_t n)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    if (n)
        CUDA_CHECK(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
    return h;
}

/* got (downloaded from the device) against want (the CPU runtime's), exactly or within tol of
 * want's scale. */
static void expect(const char *what, const float *got, const float *want, size_t n, double tol)
{
    checks++;
    double err = 0, scale = 0;
    size_t bad = n;
    for (size_t i = 0; i < n; i++) {
        if (tol == 0 && memcmp(&got[i], &want[i], sizeof *got) != 0) {
            bad = i;
            break;
        }
        double d = fabs((double)got[i] - want[i]);
        err = d > err || d != d ? d : err;
        scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    }
    if (tol == 0 && bad < n) {
        failures++;
        printf("FAIL [rank %d] %s: element %zu of %zu is %.9g on the device path, %.9g on the "
               "CPU\n", rank, what, bad, n, got[bad], want[bad]);
    } else if (tol > 0 && err > tol * (scale > 0 ? scale : 1)) {
        failures++;
        printf("FAIL [rank %d] %s: %.3g off (scale %.3g, tolerance %.1g)\n", rank, what, err,
               scale, tol);
    }
}

static void allreduce_case(size_t n, hvd_op op, int comp)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    uint64_t st = 7 + (uint64_t)rank;
    for (size_t i = 0; i < n; i++)
        h[i] = comp == HVD_COMPRESS_FP16 ? (float)((lm_splitmix64(&st) >> 40) * 0x1.0p-24) * 8 - 4
                                         : value(rank, i);
    float *want = host_copy(h, n), *d = dev_copy_queued(h, n);
    hvd_allreduce_ex(want, n, op, "t", comp);
    hang(1);
    hvd_allreduce_ex(d, n, op, "t", comp);
    hang(0);
    float *got = download(d, n);
    char what[128];
    snprintf(what, sizeof what, "allreduce n=%zu %s %s", n, op == HVD_SUM ? "sum" : "average",
             comp == HVD_COMPRESS_FP16 ? "fp16" : "fp32");
    expect(what, got, want, n, exact ? 0 : comp == HVD_COMPRESS_FP16 ? 4e-3 : 1e-6);
    free(h), free(want), free(got);
    CUDA_CHECK(cudaFree(d));
}

/* Queued tensors: slices of one buffer (the flat gradients: reduced in place), separate
 * allocations (through the fusion buffer), or separate ones of which every other lies in host
 * memory (mixed: one group holds both), under a threshold that cuts them into groups. */
enum { BACK_TO_BACK = 0, SEPARATE = 1, MIXED = 2 };
static void fused_case(int separate, int comp, size_t threshold)
{
    enum { NT = 6 };
    const size_t len[NT] = {1, 4097, 0, 333, 20000, 3};
    size_t total = 0, off[NT];
    for (int t = 0; t < NT; total += len[t], t++)
        off[t] = total;
    float *h = malloc(total * sizeof *h);
    for (size_t i = 0; i < total; i++)
        h[i] = value(rank, i * 3);
    float *want = host_copy(h, total), *flat = dev_copy(h, total), *sep[NT];
    for (int t = 0; t < NT; t++)
        sep[t] = separate == MIXED && t % 2 ? host_copy(h + off[t], len[t])
                                            : dev_copy(h + off[t], len[t]);
    size_t saved = hvd_fusion_threshold();
    hvd_set_fusion_threshold(threshold);
    char name[32];
    for (int t = 0; t < NT; t++) {
        snprintf(name, sizeof name, "w%d", t);
        hvd_allreduce_async(want + off[t], len[t], HVD_AVERAGE, name, comp);
    }
    hvd_synchronize();
    hang(1);
    for (int t = 0; t < NT; t++) {
        snprintf(name, sizeof name, "w%d", t);
        hvd_allreduce_async(separate ? sep[t] : flat + off[t], len[t], HVD_AVERAGE, name, comp);
    }
    hvd_synchronize();
    hang(0);
    hvd_set_fusion_threshold(saved);
    float *got = malloc(total * sizeof *got);
    for (int t = 0; t < NT; t++) {
        float *g = separate == MIXED && t % 2 ? host_copy(sep[t], len[t])
                                              : download(separate ? sep[t] : flat + off[t], len[t]);
        memcpy(got + off[t], g, len[t] * sizeof *g);
        free(g);
    }
    char what[128];
    snprintf(what, sizeof what, "fused %s tensors, %s, threshold %zu",
             separate == MIXED ? "device and host" : separate ? "separate" : "back-to-back",
             comp ? "fp16" : "fp32", threshold);
    expect(what, got, want, total, exact ? 0 : comp ? 4e-3 : 1e-6);
    free(h), free(want), free(got);
    CUDA_CHECK(cudaFree(flat));
    for (int t = 0; t < NT; t++) {
        if (separate == MIXED && t % 2)
            free(sep[t]);
        else
            CUDA_CHECK(cudaFree(sep[t]));
    }
}

static void broadcast_case(size_t n, int root)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = value(rank, i) * (rank == root ? 1 : -1);
    float *want = host_copy(h, n), *d = dev_copy(h, n);
    hvd_broadcast(want, n, root, "b");
    hang(1);
    hvd_broadcast(d, n, root, "b");
    hang(0);
    float *got = download(d, n);
    char what[64];
    snprintf(what, sizeof what, "broadcast n=%zu root=%d", n, root);
    expect(what, got, want, n, 0); /* a copy: exact on every path */
    /* bytes: an odd count, from the same root */
    unsigned char hb[7], *db = NULL, gb[7];
    for (int i = 0; i < 7; i++)
        hb[i] = (unsigned char)(rank * 16 + i);
    CUDA_CHECK(cudaMalloc((void **)&db, sizeof hb));
    CUDA_CHECK(cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice));
    hang(1);
    hvd_broadcast_bytes(db, sizeof hb, root, "bytes");
    hang(0);
    CUDA_CHECK(cudaMemcpy(gb, db, sizeof gb, cudaMemcpyDeviceToHost));
    checks++;
    for (int i = 0; i < 7; i++)
        if (gb[i] != (unsigned char)(root * 16 + i)) {
            failures++;
            printf("FAIL [rank %d] broadcast_bytes root=%d: byte %d is %d, want %d\n", rank, root,
                   i, gb[i], root * 16 + i);
            break;
        }
    free(h), free(want), free(got);
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFree(db));
}

/* Uneven counts, some ranks empty. */
static void allgather_case(size_t (*count)(int r))
{
    size_t n = count(rank);
    float *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = value(rank, i);
    float *d = dev_copy(h, n);
    size_t tw = 0, tg = 0, *cw = malloc((size_t)size * sizeof *cw),
           *cg = malloc((size_t)size * sizeof *cg);
    float *want = hvd_allgather(h, n, &tw, cw, "g");
    hang(1);
    float *got = hvd_allgather(d, n, &tg, cg, "g");
    hang(0);
    checks++;
    if (tw != tg || memcmp(cw, cg, (size_t)size * sizeof *cw) != 0) {
        failures++;
        printf("FAIL [rank %d] allgather: %zu elements on the device path, %zu on the CPU\n", rank,
               tg, tw);
    } else {
        expect("allgather", got, want, tw, 0);
    }
    free(h), free(want), free(got), free(cw), free(cg);
    CUDA_CHECK(cudaFree(d));
}

/* Device memory in use, as cudaMemGetInfo says. */
static size_t device_in_use(void)
{
    size_t free_b = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
    return total - free_b;
}

/* A GPU model's life as a program or a test ends it: its parameters broadcast and its gradients
 * averaged by the DistributedOptimizer's calls (which bind its stream), the NaN check, then the
 * buffers freed and the GPU context released (its stream destroyed). After that no stream may be
 * left bound to the collectives, which must still work, and nothing of the model's may stay on
 * the device (checked under the emulator only, which counts device memory to the byte: a GPU
 * counts in pages and keeps memory of its own). */
static void release_case(void)
{
    const size_t n = N_BASE;
    param_set ps = {.n = n, .n_state = 1, .device = 1};
    ps.params = params_buffer_alloc(n, 1);
    ps.grads = params_buffer_alloc(n, 1);
    ps.state = params_buffer_alloc(1, 1);
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = value(rank, i);
    float *want = host_copy(h, n);
    params_from_host(ps.grads, h, n, 1);
    hvd_broadcast_parameters(&ps, 0);
    hvd_allreduce_gradients(&ps, HVD_COMPRESS_NONE);
    hvd_allreduce_ex(want, n, HVD_AVERAGE, "t", HVD_COMPRESS_NONE);
    float *got = download(ps.grads, n);
    expect("hvd_allreduce_gradients on a device param_set", got, want, n, exact ? 0 : 1e-6);
    const size_t in_use = device_in_use(), model = (2 * n + 1) * sizeof(float);
    size_t first = 0;
    checks++;
    if (optim_non_finite_cuda(ps.grads, n, &first) != 0) {
        failures++;
        printf("FAIL [rank %d] optim_non_finite_cuda found values that are not finite\n", rank);
    }
    params_buffer_free(ps.params, 1);
    params_buffer_free(ps.grads, 1);
    params_buffer_free(ps.state, 1);
    gpu_context_release();
#ifdef HVDLAB_CUDA_EMU
    checks++;
    if (device_in_use() != in_use - model) {
        failures++;
        printf("FAIL [rank %d] after the model's buffers and the GPU context went, %zu bytes "
               "more than before the model stay on the device\n", rank,
               device_in_use() - (in_use - model));
    }
#else
    (void)in_use, (void)model;
#endif
    allreduce_case(n, HVD_SUM, HVD_COMPRESS_NONE); /* on no destroyed stream */
    checks++;
    void *bound = hvd_set_gpu_stream(NULL);
    if (bound) {
        failures++;
        printf("FAIL [rank %d] the optimizer's calls left stream %p bound to the collectives\n",
               rank, bound);
    }
    free(h), free(want), free(got);
}

static size_t count_rising(int r) { return (size_t)r * 1000 + 1; }
static size_t count_holes(int r) { return (size_t)((r * 37) % 5) * 3; }

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    hvd_pin_device(hvd_local_rank(), NULL);
    rank = hvd_rank();
    size = hvd_size();
    const char *path = hvd_gpu_operations();
    exact = strcmp(path, "mpi") == 0 || size == 1;
    if (rank == 0) {
        printf("path=%s\n", path);
        fflush(stdout);
    }
    int big = 0, mismatch = 0, release = 0;
    for (int i = 1; i < argc; i++) {
        big |= strcmp(argv[i], "big") == 0;
        mismatch |= strcmp(argv[i], "mismatch-where") == 0;
        release |= strcmp(argv[i], "release") == 0;
        if (strcmp(argv[i], "hung-stream") == 0)
            CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    }
    if (strcmp(path, "none") == 0) {
        failures++;
        printf("FAIL [rank %d] a GPU is visible but device tensors have no path\n", rank);
    } else if (mismatch) { /* rank 0 hands a device tensor, the others a host one */
        float h[10] = {0}, *d = dev_copy(h, 10);
        hvd_allreduce(rank == 0 ? d : h, 10, HVD_SUM, "grad");
    } else if (release) {
        release_case();
    } else {
        const size_t lens[] = {0, 1, 2, 3, N_BASE - 1, N_BASE, N_BASE + 1, (size_t)1 << 20};
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
            for (int op = HVD_SUM; op <= HVD_AVERAGE; op++) {
                allreduce_case(lens[k], (hvd_op)op, HVD_COMPRESS_NONE);
                allreduce_case(lens[k], (hvd_op)op, HVD_COMPRESS_FP16);
            }
        for (int sep = BACK_TO_BACK; sep <= MIXED; sep++)
            for (int comp = 0; comp <= 1; comp++) {
                fused_case(sep, comp, HVD_DEFAULT_FUSION_THRESHOLD);
                fused_case(sep, comp, 16 << 10);
                fused_case(sep, comp, 0);
            }
        const size_t blens[] = {0, 1, N_BASE - 1, N_BASE + 1};
        for (int root = 0; root < size; root++)
            for (size_t k = 0; k < sizeof blens / sizeof *blens; k++)
                broadcast_case(blens[k], root);
        allgather_case(count_rising);
        allgather_case(count_holes);
        if (big) /* hundreds of MiB: 96 Mi floats */
            allreduce_case((size_t)96 << 20, HVD_SUM, HVD_COMPRESS_NONE);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("prog_gpu_coll: %d checks, %d failures\n", checks, all);
    hvd_shutdown();
    if (side)
        CUDA_CHECK(cudaStreamDestroy(side));
    return all ? 1 : 0;
}

#else

int main(void)
{
    printf("skipped: no GPU (a CPU build: HVDLAB_CUDA is not defined)\n");
    return 77;
}

#endif
