/* bench/train.c — one epoch of data-parallel training on real Fashion-MNIST, timed by phase.
 *
 * What a step costs, T = G/W + C(W): every rank trains on its shard (compute, G/W) and then
 * averages the gradients with the others (communication, C(W)). This program does exactly what
 * the lab's solution does per batch (sharded loader, WRN forward/backward, gradient allreduce,
 * SGD with the scaled LR), but calls the allreduce itself so each phase gets its own clock, and
 * prints the Keras-style progress on rank 0 (validation: one pass over each rank's shard of
 * the test set, outside the timed part) followed by `name value unit` lines:
 *   images_per_sec   training images of the whole job per second of the epoch (validation excluded)
 *   data_s / compute_s / allreduce_s / update_s   rank 0's seconds in each phase
 *   allreduce_fraction   allreduce_s / epoch seconds: the share communication takes
 *   allreduce_mbps   gradient bytes averaged per second of allreduce (algorithm bandwidth)
 *   (allreduce_s includes waiting for the slowest rank: a rank that finishes its compute first
 *   waits inside the allreduce, so load imbalance shows up there.)
 * Usage: mpirun -n 2 build/bench/train [the lab's flags; default: the full training set, 1 epoch]
 * Public: main.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/timer.h"
#include "hvdlab.h"

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    hvd_pin_device(hvd_local_rank(), NULL);
    char err[ERRMSG_LEN];
    args a;
    args_defaults(&a);
    int rc = args_parse(&a, argc, argv, err, sizeof err);
    if (rc < 0)
        fatal_error("%s", err);
    if (rc > 0) {
        hvd_shutdown();
        return 0;
    }
    int verbose = hvd_rank() == 0;

    dataset ds;
    if (dataset_load(a.data_dir, &ds, err, sizeof err) != 0)
        fatal_error("%s", err);
    loader train;
    loader_options o = loader_defaults();
    o.rank = hvd_rank();
    o.size = hvd_size();
    o.seed = a.seed;
    o.mean = ds.mean;
    o.std = ds.std;
    o.batch_size = (size_t)a.batch_size;
    o.subset = a.train_subset;
    if (loader_init(&train, ds.train.images, ds.train.labels, ds.train.n, &o, err, sizeof err))
        fatal_error("%s", err);
    loader val;
    o.shuffle = 0;
    o.augment = 0;
    o.subset = a.test_subset;
    if (loader_init(&val, ds.test.images, ds.test.labels, ds.test.n, &o, err, sizeof err))
        fatal_error("%s", err);
    int steps = (int)((train.n + o.batch_size - 1) / o.batch_size) / hvd_size();

    wrn_model *model = wrn_create(&a.model, o.batch_size, args_init_seed(&a, hvd_rank()), err,
                                  sizeof err);
    if (!model)
        fatal_error("%s", err);
    param_set *ps = wrn_params(model);
    optimizer *opt = sgd_create(ps, lr_scaled((float)a.base_lr, hvd_size()), (float)a.momentum);
    hvd_broadcast_parameters(ps, 0);
    hvd_broadcast_optimizer_state(opt, 0);
    if (verbose) {
        char name[WRN_NAME_LEN];
        wrn_config_name(&a.model, name, sizeof name);
        printf("bench/train: %s (%zu parameters), %d ranks, %zu images, batch %d per rank, "
               "%d steps\n", name, wrn_param_count(model), hvd_size(), train.n, a.batch_size,
               steps);
    }

    float *x = malloc(o.batch_size * LOADER_PIXELS * sizeof *x); /* (B, 1, 28, 28) */
    int *y = malloc(o.batch_size * sizeof *y);                    /* (B) */
    if (!x || !y)
        fatal_error("out of memory");
    progress p;
    progress_init(&p, verbose, 1, train.n);
    progress_epoch_begin(&p, 0, (size_t)steps);
    metrics m;
    metrics_reset(&m);
    double t_data = 0, t_compute = 0, t_allreduce = 0, t_update = 0;
    hvd_barrier();
    double t_start = timer_seconds();
    for (int b = 0; b < steps; b++) {
        double t0 = timer_seconds();
        size_t n = loader_next(&train, x, y);
        double t1 = timer_seconds();
        wrn_result r = wrn_train_batch(model, x, y, n, (float)a.wd);
        double t2 = timer_seconds();
        hvd_allreduce_gradients(ps, HVD_COMPRESS_DEFAULT); /* what the distributed optimizer does */
        double t3 = timer_seconds();
        optimizer_step(opt, ps);
        double t4 = timer_seconds();
        t_data += t1 - t0;
        t_compute += t2 - t1;
        t_allreduce += t3 - t2;
        t_update += t4 - t3;
        metrics_add(&m, r.loss, (size_t)r.correct, r.count);
        progress_batch(&p, (size_t)b + 1, metrics_loss(&m), metrics_accuracy(&m));
    }
    hvd_barrier();
    double epoch_s = timer_seconds() - t_start;
    hvd_metric_average(&m, "train");
    metrics v; /* one pass over this rank's shard of the test set (not timed above) */
    metrics_reset(&v);
    for (size_t n; (n = loader_next(&val, x, y)) > 0;) {
        wrn_result r = wrn_eval_batch(model, x, y, n, NULL);
        metrics_add(&v, r.loss, (size_t)r.correct, r.count);
    }
    hvd_metric_average(&v, "val");
    progress_epoch_end(&p, metrics_loss(&m), metrics_accuracy(&m), metrics_loss(&v),
                       metrics_accuracy(&v));

    double images = (double)steps * (double)o.batch_size * hvd_size();
    double grad_bytes = (double)ps->n * sizeof(float) * steps;
    if (verbose) {
        printf("images_per_sec %.1f images/s\n", images / epoch_s);
        printf("epoch_s %.2f s\n", epoch_s);
        printf("data_s %.2f s\ncompute_s %.2f s\nallreduce_s %.2f s\nupdate_s %.2f s\n", t_data,
               t_compute, t_allreduce, t_update);
        printf("allreduce_fraction %.3f\n", t_allreduce / epoch_s);
        printf("allreduce_mbps %.1f MB/s\n", t_allreduce > 0 ? grad_bytes / t_allreduce / 1e6 : 0);
    }
    free(x);
    free(y);
    optimizer_free(opt);
    wrn_free(model);
    loader_free(&train);
    loader_free(&val);
    dataset_free(&ds);
    hvd_shutdown();
    return 0;
}
