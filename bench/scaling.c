/* bench/scaling.c — one point of the scaling study: a fixed number of training steps of the lab's
 * program (same model, sharded loader, gradient allreduce, SGD), timed after a warm-up.
 *
 * T = G/W + C(W): per step, each rank's compute (loader + forward/backward + SGD update) is
 * clocked here; the communication C(W) is what HVD_PROFILE counted inside hvd_allreduce during
 * the timed steps (the profile is reset after the warm-up). The allreduce is also clocked from
 * outside, so the two measurements check each other, and compute + communication is checked
 * against the step's wall time. Needs HVD_PROFILE=1 on every rank (make scaling sets it).
 * Flags: the lab's (--model, --batch-size per rank, --train-subset, ...) plus --steps N (10) and
 * --warmup-steps N (3). Rank 0 prints one line "row,<fields>" for tools/scaling.sh:
 *   ranks,threads,batch_per_rank,steps,step_min_s,step_median_s,compute_s,comm_s,comm_max_s,
 *   comm_clock_s,images_per_s,grad_bytes
 * (per step; compute and comm are means over ranks, comm_max the slowest rank's).
 * Public: main.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/early_signal.h"
#include "base/stats.h"
#include "base/timer.h"
#include "hvdlab.h"
#include "prof/profile.h"

/* Takes --steps and --warmup-steps out of argv (the rest are the lab's flags). */
static void own_flags(int *argc, char **argv, int *steps, int *warmup)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        int *dst = strcmp(argv[i], "--steps") == 0          ? steps
                   : strcmp(argv[i], "--warmup-steps") == 0 ? warmup
                                                            : NULL;
        if (dst && i + 1 < *argc) {
            *dst = atoi(argv[++i]);
            if (*dst < 0 || (dst == steps && *dst < 1))
                fatal_error("%s: expected a count (steps >= 1)", argv[i - 1]);
        } else {
            argv[out++] = argv[i];
        }
    }
    *argc = out;
}

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    int nthreads = omp_get_max_threads(); /* OMP_NUM_THREADS, before the binding changes it */
    hvd_pin_device(hvd_local_rank(), NULL);
    if (!profile_enabled())
        fatal_error("bench/scaling measures communication with the profile: set HVD_PROFILE=1");
    int steps = 10, warmup = 3;
    own_flags(&argc, argv, &steps, &warmup);
    char err[ERRMSG_LEN];
    args a;
    args_defaults(&a);
    int rc = args_parse(&a, argc, argv, err, sizeof err);
    early_signal_release(); /* no stop.h handlers here: SIGUSR1 ends this bench at once */
    if (rc < 0)
        fatal_error("%s", err);
    if (rc > 0) {
        hvd_shutdown();
        return 0;
    }
    dataset ds;
    if (dataset_load(a.data_dir, &ds, err, sizeof err) != 0)
        fatal_error("%s", err);
    lab_shard me = {hvd_rank(), hvd_size()};
    loader train = lab_train_loader(&a, &ds, me); /* the lab's training batches, sharded */
    size_t batch = (size_t)a.batch_size;
    wrn_model *model = wrn_create(&a.model, batch, args_init_seed(&a, hvd_rank()), err,
                                  sizeof err);
    if (!model)
        fatal_error("%s", err);
    param_set *ps = wrn_params(model);
    optimizer *opt = sgd_create(ps, lr_scaled((float)a.base_lr, hvd_size()), (float)a.momentum);
    hvd_broadcast_parameters(ps, 0);
    hvd_broadcast_optimizer_state(opt, 0);

    float *x = lab_batch_images(batch);
    int *y = lab_batch_labels(batch);
    double *wall = malloc((size_t)steps * sizeof *wall);
    if (!wall)
        fatal_error("out of memory");
    double t_compute = 0, t_comm_clock = 0;
    for (int b = 0; b < warmup + steps; b++) {
        if (b == warmup) { /* the timed steps start together, with a clean profile */
            hvd_barrier();
            profile_reset();
            t_compute = t_comm_clock = 0;
        }
        double t0 = timer_seconds();
        size_t n = loader_next_cyclic(&train, x, y);
        wrn_train_batch(model, x, y, n, (float)a.wd);
        double t1 = timer_seconds();
        hvd_allreduce_gradients(ps, HVD_COMPRESS_DEFAULT); /* what the distributed optimizer does */
        double t2 = timer_seconds();
        optimizer_step(opt, ps);
        double t3 = timer_seconds();
        if (b >= warmup) {
            t_compute += (t1 - t0) + (t3 - t2);
            t_comm_clock += t2 - t1;
            wall[b - warmup] = t3 - t0;
        }
    }
    double comm = profile_get(PROFILE_ALLREDUCE).seconds;
    float mean[3] = {(float)(t_compute / steps), (float)(comm / steps),
                     (float)(t_comm_clock / steps)};
    float worst = mean[1];
    hvd_allreduce(mean, 3, HVD_AVERAGE, "scaling/mean");
    size_t total;
    float *all = hvd_allgather(&worst, 1, &total, NULL, "scaling/comm");
    for (size_t i = 0; i < total; i++)
        worst = all[i] > worst ? all[i] : worst;
    free(all);
    if (hvd_rank() == 0) {
        stats_sort(wall, (size_t)steps);
        double med = steps % 2 ? wall[steps / 2] : 0.5 * (wall[steps / 2 - 1] + wall[steps / 2]);
        printf("row,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.2f,%zu\n", hvd_size(), nthreads,
               a.batch_size, steps, wall[0], med, mean[0], mean[1], worst, mean[2],
               (double)a.batch_size * hvd_size() / med, ps->n * sizeof(float));
    }
    free(x);
    free(y);
    free(wall);
    optimizer_free(opt);
    wrn_free(model);
    loader_free(&train);
    dataset_free(&ds);
    hvd_shutdown();
    return 0;
}
