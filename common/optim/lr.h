/* lr.h — learning-rate scaling, warmup and step schedules with Horovod's Keras callbacks'
 * semantics, and the schedule the lab uses.
 *
 *   Horovod / Keras lab                                   hvdlab
 *   lr = base_lr * hvd.size()                          -> lr_scaled(base_lr, hvd_size())
 *   hvd.callbacks.LearningRateWarmupCallback(...)      -> lr_warmup_at(...)
 *   hvd.callbacks.LearningRateScheduleCallback(...)    -> lr_schedule + lr_schedule_apply(...)
 *   the lab's warmup + 4 schedule callbacks            -> lr_lab_init, lr_lab_at,
 *                                                         lr_lab_epoch_end
 *   momentum correction (both callbacks)               -> lr_corrected_momentum (optimizer_step)
 *
 * Epochs and batches are 0-based, as in Keras callbacks (on_epoch_begin(epoch) gets 0 first);
 * only printed messages use Keras's 1-based epoch numbers.
 *
 * Public: lr_scaled, lr_warmup_at, lr_schedule_apply, lr_corrected_momentum, lr_lab_init,
 * lr_lab_at, lr_lab_position, lr_lab_epoch_end.
 */
#ifndef HVDLAB_LR_H
#define HVDLAB_LR_H

#include <stddef.h>
#include <stdio.h>

/* Goyal et al.: the LR grows with the global batch, i.e. with the number of workers. */
float lr_scaled(float base_lr, int size);

/* LearningRateWarmupCallback, before batch `batch` of epoch `epoch` (epoch < warmup_epochs):
 *   e = epoch + (batch + 1) / steps_per_epoch
 *   lr(e) = lr / size · (e · (size − 1) / warmup_epochs + 1)
 * from ≈ lr/size at the first batch to exactly lr at the last batch of epoch warmup_epochs − 1.
 * (Computed in double as lr · (e·(size−1) + warmup) / (warmup·size), so the end is exact.) */
float lr_warmup_at(float lr, int size, int warmup_epochs, int steps_per_epoch, int epoch,
                   int batch);

/* LearningRateScheduleCallback (Horovod <= 0.22): active while start_epoch <= epoch < end_epoch
 * (end_epoch < 0: no end); sets lr = initial_lr · multiplier. A constant multiplier (fn NULL)
 * is a step: staircase, adjusted at the first batch of each epoch (Horovod forces staircase
 * for constants). With fn, the multiplier is fn(epoch) at each epoch's first batch when
 * staircase, or fn(epoch + batch / steps_per_epoch) before every batch when not. */
typedef struct {
    int start_epoch;
    int end_epoch;                       /* < 0: open-ended */
    double multiplier;                   /* used when fn is NULL */
    double (*fn)(double epoch, void *ctx);
    void *ctx;
    int staircase;                       /* ignored (1) when fn is NULL */
} lr_schedule;

/* Horovod's on_batch_begin: when the schedule adjusts the LR before this batch, writes
 * initial_lr · multiplier into *lr and returns 1; otherwise leaves *lr and returns 0. */
int lr_schedule_apply(const lr_schedule *s, float initial_lr, int epoch, int batch,
                      int steps_per_epoch, float *lr);

/* Momentum correction (Goyal et al. §2.1, Horovod's callbacks): for the one batch where the LR
 * changes from old_lr to new_lr, the Keras velocity v = m·v − lr·g uses m·new_lr/old_lr, so
 * the velocity, which carries the old LR inside it, is rescaled to the new one. old_lr <= 0
 * (no previous step) or equal LRs: momentum unchanged. */
float lr_corrected_momentum(float momentum, float new_lr, float old_lr);

/* The lab's schedule (DLI fashion_mnist, step 6 on): warmup for warmup_epochs, then ×1 until
 * epoch 15, ×0.1 until 25, ×0.01 until 35, ×0.001 after, all relative to the scaled LR. */
#define LR_LAB_MAX_STEPS 4
typedef struct {
    float lr;             /* scaled initial LR (lr_scaled(base_lr, size)) */
    int size;
    int warmup_epochs;    /* 0: no warmup */
    int steps_per_epoch;
    FILE *out;            /* where the warmup message goes; NULL on non-verbose ranks */
    int announced;        /* the warmup message was printed */
    lr_schedule steps[LR_LAB_MAX_STEPS];
    int nsteps;
} lr_lab;

/* verbose: print the warmup message on this rank (the lab: rank 0). -1 and one line in err on
 * a bad argument (lr <= 0, size < 1, warmup_epochs < 0, steps_per_epoch < 1). */
int lr_lab_init(lr_lab *s, float lr, int size, int warmup_epochs, int steps_per_epoch,
                int verbose, char *err, size_t errlen);

/* The LR to use for batch `batch` of epoch `epoch`; remembered with the position (below). */
float lr_lab_at(const lr_lab *s, int epoch, int batch);

/* Where the training loop is: the arguments and answer of this process's last lr_lab_at call
 * (the step programs make it once per batch, just before optimizer_step). known = 0 before the
 * first call. For messages that name the epoch and step, e.g. a diverging run's. */
typedef struct {
    int known;
    int epoch, batch;      /* 0-based, as passed to lr_lab_at */
    int steps_per_epoch, warmup_epochs, size;
    float lr;              /* what lr_lab_at returned */
    float peak_lr;         /* the schedule's scaled LR: --base-lr x size */
} lr_position;
lr_position lr_lab_position(void);

/* Call after each epoch (Keras on_epoch_end): after epoch warmup_epochs − 1, prints once
 * "\nEpoch N: finished gradual learning rate warmup to X.\n" (N 1-based, X with %g) on a
 * verbose rank, as Horovod does. Returns 1 if it printed. */
int lr_lab_epoch_end(lr_lab *s, int epoch);

#endif
