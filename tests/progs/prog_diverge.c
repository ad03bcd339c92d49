/* prog_diverge.c — a small distributed training loop that can be made to diverge, for
 * tests/unit/test_divergence.c. Run under mpirun:
 *
 *   prog_diverge finite            4 steps of 2 epochs, all finite: prints "prog_diverge: done"
 *   prog_diverge nan-input R       rank R feeds a NaN pixel at epoch 1, step 2 (only its loss
 *                                  is NaN): every rank must stop there
 *   prog_diverge inf-grad          no schedule (no position known): an Inf gradient at the
 *                                  first step
 *   prog_diverge warmup            the NaN on rank 0 at epoch 2, step 1, during a 3-epoch warmup
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvdlab.h"

enum { B = 4, STEPS = 4 };

static void batch(float *x /* (B, 1, 28, 28) */, int *y /* (B) */, int step)
{
    for (int i = 0; i < B * 784; i++)
        x[i] = (float)((i * 37 + hvd_rank() * 11 + step * 5) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < B; i++)
        y[i] = (i + hvd_rank() + step) % 10;
}

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "finite";
    int nan_rank = argc > 2 ? atoi(argv[2]) : 1;
    char err[256];
    wrn_config cfg = {.depth = 10, .width = 1, .dropout = 0.0f};
    wrn_model *m = wrn_create(&cfg, B, 7, err, sizeof err);
    if (!m)
        fatal_error("%s", err);
    param_set *ps = wrn_params(m);
    optimizer *opt = hvd_distributed_optimizer(sgd_create(ps, 0.01f, 0.9f));
    hvd_broadcast_parameters(ps, 0);
    if (strcmp(mode, "inf-grad") == 0) {
        memset(ps->grads, 0, ps->n * sizeof *ps->grads);
        ps->grads[ps->n - 1] = INFINITY;
        optimizer_step(opt, ps);
        fatal_error("prog_diverge: an Inf gradient went through");
    }
    int warmup = strcmp(mode, "warmup") == 0 ? 3 : 0;
    int nan_epoch = warmup ? 1 : 0, nan_batch = warmup ? 0 : 1;
    if (warmup)
        nan_rank = 0;
    lr_lab schedule;
    if (lr_lab_init(&schedule, lr_scaled(0.01f, hvd_size()), hvd_size(), warmup, STEPS, 0, err,
                    sizeof err))
        fatal_error("%s", err);
    float x[B * 784];
    int y[B];
    for (int epoch = 0; epoch < 2; epoch++)
        for (int b = 0; b < STEPS; b++) {
            batch(x, y, epoch * STEPS + b);
            if (strcmp(mode, "finite") != 0 && hvd_rank() == nan_rank && epoch == nan_epoch &&
                b == nan_batch)
                x[100] = NAN;
            opt->lr = lr_lab_at(&schedule, epoch, b);
            wrn_train_batch(m, x, y, B, 5e-4f);
            optimizer_step(opt, ps);
        }
    if (hvd_rank() == 0)
        printf("prog_diverge: done\n");
    optimizer_free(opt);
    wrn_free(m);
    hvd_shutdown();
    return 0;
}
