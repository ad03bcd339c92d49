/* train_speed_gpu.c — training images/s of the kit on the GPU (forward + backward + SGD update,
 * after warm-up, the loss coming back every batch as in the lab) and the GPU memory the process
 * holds at its peak (cudaMemGetInfo: device total − free, sampled after each step), one line
 * per (model, batch), in the key/value form of train_speed.c. make bench-train-gpu runs it beside
 * bench/peer_torch.py --device cuda and prints the ratio.
 *
 * Usage: train_speed_gpu [--models wrn-16-4,wrn-16-10] [--batches 128,512] [--iters 30]
 * A CPU build, or no GPU: one line saying so, exit 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvdlab.h"

#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>

#include "base/compute_device.h"
#include "base/timer.h"
#include "nn/gpu_context.h"

static size_t used_bytes(void)
{
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        return 0;
    return total - free_b;
}

static void one(const char *name, int batch, int iters)
{
    wrn_config cfg = {.dropout = 0.01f};
    char err[256];
    if (wrn_config_parse(name, &cfg, err, sizeof err) != 0)
        fatal_error("%s", err);
    const size_t base = used_bytes();
    wrn_model *m = wrn_create(&cfg, (size_t)batch, 1, err, sizeof err);
    if (!m)
        fatal_error("%s", err);
    optimizer *opt = sgd_create(wrn_params(m), 0.01f, 0.9f);
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
    const double t0 = timer_seconds();
    for (int i = 0; i < iters; i++) {
        wrn_train_batch(m, x, y, (size_t)batch, 0.0f);
        optimizer_step(opt, wrn_params(m));
        const size_t u = used_bytes();
        peak = u > peak ? u : peak;
    }
    gpu_context_sync();
    const double dt = timer_seconds() - t0;
    const char *tag = name;
    printf("kit.%s.b%d.images_per_s %.1f images/s\n", tag, batch, iters * (double)batch / dt);
    printf("kit.%s.b%d.step_ms %.2f ms\n", tag, batch, 1e3 * dt / iters);
    printf("kit.%s.b%d.peak_gpu %.1f MiB\n", tag, batch,
           (double)(peak > base ? peak - base : 0) / (1024.0 * 1024.0));
    fflush(stdout);
    free(x);
    free(y);
    optimizer_free(opt);
    wrn_free(m);
}

int main(int argc, char **argv)
{
    const char *models = "wrn-16-4,wrn-16-10", *batches = "128,512";
    int iters = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--models")) models = argv[i + 1];
        else if (!strcmp(argv[i], "--batches")) batches = argv[i + 1];
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("train_speed_gpu: skipped, no GPU\n");
        return 77;
    }
    compute_device_set(0); /* as hvd_pin_device would */
    char ml[256], bl[64];
    snprintf(ml, sizeof ml, "%s", models);
    for (char *sm = NULL, *mname = strtok_r(ml, ",", &sm); mname; mname = strtok_r(NULL, ",", &sm)) {
        snprintf(bl, sizeof bl, "%s", batches);
        for (char *sb = NULL, *b = strtok_r(bl, ",", &sb); b; b = strtok_r(NULL, ",", &sb))
            one(mname, atoi(b), iters);
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
