/* train_speed_gpu.c — training images/s of the kit on the GPU (forward + backward + SGD update,
 * after warm-up, the loss coming back every batch as in the lab) and the GPU memory the process
 * holds at its peak (cudaMemGetInfo: device total − free, sampled after each step), and how
 * long the host waited for the GPU a step (gpu_context_waited: the loss, the correct count and
 * the NaN check each bring a number back and wait for it; the step's time less those waits is
 * the host's own, kernel launches included, so a step where the host hardly waits is limited by
 * the host, not the GPU), one line per (model, batch), in the key/value form of train_speed.c.
 * make bench-train-gpu runs it beside bench/peer_torch.py --device cuda and prints the ratio.
 * Then --profile steps with a CUDA event on the stream before and after every layer
 * (layer_prof.h's clock, nn/gpu_marks.h; nothing waits for the stream in between, so the
 * profiled steps run as the timed ones do): where the step's GPU time goes, largest first, as
 * "kit.<model>.b<batch>.prof <ms> ms <share> % <calls>x <layer>" lines, the share of the
 * profiled steps' wall time.
 *
 * The learning rate is 0.001, not the peer's 0.01: one fixed batch learnt for 33 steps at 0.01
 * diverges for wrn-16-10 (loss 16.5 -> 367 by step 7 on the CPU kit too; the kit's He-normal
 * initialisation gives larger logits than PyTorch's default), and the kit's divergence check
 * stops the run, where PyTorch computes on with NaN. The kernels run are the same at any rate.
 *
 * Usage: train_speed_gpu [--models wrn-16-4,wrn-16-10] [--batches 128,512] [--iters 30]
 *                        [--profile 3] [--precision fp32|bf16|fp16]
 * --precision: the format the model trains in (model/precision.h); one the build does not train in
 * stops with one line naming it, exit 2 (tools/bench_train_gpu_mixed.sh shows that row as "-").
 * A CPU build, or no GPU: one line saying so, exit 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvdlab.h"

#ifdef HVDLAB_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "base/timer.h"
#include "nn/gpu_context.h"
#include "nn/gpu_marks.h"
#include "nn/layer_prof.h"
#include "model/precision.h"

static size_t used_bytes(void)
{
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        return 0;
    return total - free_b;
}

typedef struct {
    const char *name;
    double ms;
    long calls;
} prof_row;

static int by_time(const void *a, const void *b)
{
    const double x = ((const prof_row *)a)->ms, y = ((const prof_row *)b)->ms;
    return (x < y) - (x > y);
}

/* steps more training steps, each layer timed on the GPU by a mark before and after it. */
static void profile(wrn_model *m, optimizer *opt, const float *x, const int *y, int batch,
                    int steps, const char *tag)
{
    static const lprof_clock marks = {gpu_marks_mark, gpu_marks_seconds, gpu_marks_release};
    double step_s = 0.0;
    lprof_set_clock(&marks);
    lprof_enable(1);
    for (int pass = 0; pass < 2; pass++) { /* a step that makes the events, then the steps */
        lprof_reset();
        gpu_context_sync();
        const double t0 = timer_seconds();
        for (int i = 0; i < (pass ? steps : 1); i++) {
            LPROF("train_batch", wrn_train_batch(m, x, y, (size_t)batch, 0.0f));
            LPROF("optimizer step", optimizer_step(opt, wrn_params(m)));
        }
        gpu_context_sync();
        step_s = timer_seconds() - t0;
        lprof_flush(); /* the marks' seconds, read after the steps so that none waits for them */
    }
    lprof_enable(0);
    lprof_set_clock(NULL);
    prof_row rows[256];
    int n = lprof_count() < 256 ? lprof_count() : 256;
    for (int i = 0; i < n; i++) {
        double sec;
        lprof_entry(i, &rows[i].name, &sec, &rows[i].calls);
        rows[i].ms = 1e3 * sec / steps;
    }
    qsort(rows, (size_t)n, sizeof *rows, by_time);
    const double step_ms = 1e3 * step_s / steps;
    printf("kit.%s.b%d.prof_step_ms %.2f ms (profiled: CUDA events around each layer)\n", tag,
           batch, step_ms);
    for (int i = 0, shown = 0; i < n && shown < 12; i++) {
        if (!strcmp(rows[i].name, "train_batch"))
            continue; /* the whole; its parts follow */
        printf("kit.%s.b%d.prof %.3f ms %.1f %% %ldx %s\n", tag, batch, rows[i].ms,
               100.0 * rows[i].ms / step_ms, rows[i].calls / steps, rows[i].name);
        shown++;
    }
    fflush(stdout);
}

static void one(const char *name, int batch, int iters, int prof_steps)
{
    wrn_config cfg = {.dropout = 0.01f, .device = wrn_device_of(0)}; /* CUDA's current device */
    char err[256];
    if (wrn_config_parse(name, &cfg, err, sizeof err) != 0)
        fatal_error("%s", err);
    const size_t base = used_bytes();
    wrn_model *m = wrn_create(&cfg, (size_t)batch, 1, err, sizeof err);
    if (!m)
        fatal_error("%s", err);
    optimizer *opt = sgd_create(wrn_params(m), 0.001f, 0.9f); /* see the top of the file */
    float *x = malloc((size_t)batch * 28 * 28 * sizeof *x);
    int *y = malloc((size_t)batch * sizeof *y);
    for (size_t i = 0; i < (size_t)batch * 28 * 28; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int i = 0; i < batch; i++)
        y[i] = i % 10;
    size_t peak = 0;
    for (int i = 0; i < 3; i++) { /* warm-up: cuDNN plans for this batch */
        wrn_train_batch(m, x, y, (size_t)batch, 0.0f);
        optimizer_step(opt, wrn_params(m));
    }
    gpu_context_sync();
    /* The timed steps are the range a profiler started with --capture-range=cudaProfilerApi
     * records (make bench-train-gpu-nsys); without one they do nothing. Any error they give is
     * cleared, so that the next launch check does not report it as its own. */
    if (cudaProfilerStart() != cudaSuccess)
        (void)cudaGetLastError();
    long waits0, waits1;
    const double w0 = gpu_context_waited(&waits0);
    const double t0 = timer_seconds();
    for (int i = 0; i < iters; i++) {
        wrn_train_batch(m, x, y, (size_t)batch, 0.0f);
        optimizer_step(opt, wrn_params(m));
        const size_t u = used_bytes();
        peak = u > peak ? u : peak;
    }
    gpu_context_sync();
    const double dt = timer_seconds() - t0;
    const double waited = gpu_context_waited(&waits1) - w0;
    if (cudaProfilerStop() != cudaSuccess)
        (void)cudaGetLastError();
    const char *tag = name;
    printf("kit.%s.b%d.images_per_s %.1f images/s\n", tag, batch, iters * (double)batch / dt);
    printf("kit.%s.b%d.step_ms %.2f ms\n", tag, batch, 1e3 * dt / iters);
    printf("kit.%s.b%d.peak_gpu %.1f MiB\n", tag, batch,
           (double)(peak > base ? peak - base : 0) / (1024.0 * 1024.0));
    printf("kit.%s.b%d.host_wait_ms %.2f ms in %.1f waits a step (the host waiting for the "
           "GPU)\n", tag, batch, 1e3 * waited / iters, (double)(waits1 - waits0) / iters);
    printf("kit.%s.b%d.activation_layout %s name\n", tag, batch, wrn_activation_layout(m));
    fflush(stdout);
    if (prof_steps > 0)
        profile(m, opt, x, y, batch, prof_steps, tag);
    free(x);
    free(y);
    optimizer_free(opt);
    wrn_free(m);
}

int main(int argc, char **argv)
{
    const char *models = "wrn-16-4,wrn-16-10", *batches = "128,512";
    int iters = 30, prof_steps = 3;
    precision prec = PRECISION_FP32;
    char err[256];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--precision")) {
            if (precision_parse(argv[i + 1], &prec, err, sizeof err) < 0 ||
                precision_check(prec, err, sizeof err) < 0) {
                printf("train_speed_gpu: error: --precision %s\n", err);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--models")) models = argv[i + 1];
        else if (!strcmp(argv[i], "--batches")) batches = argv[i + 1];
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--profile")) prof_steps = atoi(argv[i + 1]);
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("train_speed_gpu: skipped, no GPU\n");
        return 77;
    }
    char ml[256], bl[64];
    snprintf(ml, sizeof ml, "%s", models);
    for (char *sm = NULL, *mname = strtok_r(ml, ",", &sm); mname; mname = strtok_r(NULL, ",", &sm)) {
        snprintf(bl, sizeof bl, "%s", batches);
        for (char *sb = NULL, *b = strtok_r(bl, ",", &sb); b; b = strtok_r(NULL, ",", &sb))
            one(mname, atoi(b), iters, prof_steps);
    }
    return 0;
}
#else
int main(void)
{
    printf("train_speed_gpu: skipped, a CPU build (make CUDA=1)\n");
    return 77;
}
#endif
