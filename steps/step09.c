/* Fashion-MNIST with a WideResNet — the lab's training program.
 *
 * It trains the model on the training images, checks it on the test images after every epoch,
 * and prints its progress the way Keras does. Run it with `mpirun -n 2 ./stepNN [flags]`;
 * `./stepNN --help` lists the flags. Each lab step makes it a little more distributed. What no
 * step changes (the three loaders, evaluation, the batch buffers) is in common/train/lab.h.
 */
#include <stdlib.h>

#include "hvdlab.h"

int main(int argc, char **argv)
{
    /* Horovod: initialise, and pin this process to its own cores (or GPU). */
    hvd_init(&argc, &argv);
    hvd_pin_device(hvd_local_rank(), NULL);

    char err[ERRMSG_LEN];
    args a;
    int rc = args_parse(&a, argc, argv, err, sizeof err);
    if (rc < 0)
        fatal_error("%s", err);
    if (rc > 0) { /* --help */
        hvd_shutdown();
        return 0;
    }
    int verbose = hvd_rank() == 0; /* Horovod: only rank 0 prints */

    /* The data: Fashion-MNIST, standardised with the training set's mean and std. */
    dataset ds;
    if (dataset_load(a.data_dir, &ds, err, sizeof err) != 0)
        fatal_error("%s", err);
    loader test = lab_test_loader(&a, &ds); /* the whole test set, in order, for the final score */

    lab_shard me = {hvd_rank(), hvd_size()}; /* Horovod: each rank draws its own shard */
    loader train = lab_train_loader(&a, &ds, me); /* shuffled, augmented training batches */
    loader val = lab_val_loader(&a, &ds, me);     /* validation batches after every epoch */

    /* Keras' len(train_iter) and len(test_iter): batches in one pass over the data. */
    int steps_per_epoch = (int)((train.n + (size_t)a.batch_size - 1) / (size_t)a.batch_size);
    int val_steps = (int)((val.n + (size_t)a.val_batch_size - 1) / (size_t)a.val_batch_size);
    /* Horovod: each rank does its share of an epoch; validation draws 3x more, as the lab. */
    steps_per_epoch = steps_per_epoch / hvd_size();
    val_steps = 3 * val_steps / hvd_size();
    if (steps_per_epoch < 1 || val_steps < 1)
        fatal_error("less than one batch per rank: %zu training images in batches of %d, %zu test "
                    "images in batches of %d, %d ranks", train.n, a.batch_size, val.n,
                    a.val_batch_size, hvd_size());

    /* The model, with this process's own random initial weights. */
    size_t max_batch = lab_max_batch(&train, &val, &test); /* what one batch can really hold */
    wrn_model *model = wrn_create(&a.model, max_batch, args_init_seed(&a, hvd_rank()), err,
                                  sizeof err);
    if (!model)
        fatal_error("%s", err);
    param_set *ps = wrn_params(model);

    float lr = lr_scaled((float)a.base_lr, hvd_size()); /* Horovod: base LR x size */
    optimizer *opt = sgd_create(ps, lr, (float)a.momentum);
    opt = hvd_distributed_optimizer(opt); /* Horovod: average gradients over the ranks */

    /* Resume from the newest checkpoint in --log-dir, if any. Horovod: rank 0 looks and loads,
     * tells everyone the epoch; the broadcast below hands its weights to every rank. */
    int resume_from_epoch = 0;
    if (a.use_checkpointing && hvd_rank() == 0) {
        resume_from_epoch = ckpt_latest_model(a.log_dir, model, opt, a.epochs, err, sizeof err);
        if (resume_from_epoch < 0)
            fatal_error("%s", err);
        if (resume_from_epoch > 0 &&
            ckpt_load_model(a.log_dir, resume_from_epoch, model, opt, err, sizeof err) != 0)
            fatal_error("%s", err);
    }
    hvd_broadcast_bytes(&resume_from_epoch, sizeof resume_from_epoch, 0, "resume_from_epoch");

    /* Horovod: start every rank from rank 0's weights and optimizer state. */
    hvd_broadcast_parameters(ps, 0);
    hvd_broadcast_optimizer_state(opt, 0);

    /* The learning rate, batch by batch: x1 until epoch 15, x0.1 until 25, x0.01 until 35,
     * x0.001 after. */
    lr_lab schedule;
    // TODO: Step 9: warm up from lr/size to lr over --warmup-epochs, then the schedule: pass hvd_size() and a.warmup_epochs to lr_lab_init
    if (lr_lab_init(&schedule, lr, 1, 0, steps_per_epoch, verbose, err, sizeof err) != 0)
        fatal_error("%s", err);

    if (verbose)
        lab_print_banner(model, &ds, train.n, val.n);
    progress p;
    progress_init(&p, verbose, a.epochs, train.n);
    progress_set_early_stop(&p, a.target_accuracy, a.patience);

    float *x = lab_batch_images(max_batch); /* (B, 1, 28, 28), B <= max_batch */
    int *y = lab_batch_labels(max_batch);   /* (B) */

    for (int epoch = resume_from_epoch; epoch < a.epochs; epoch++) {
        loader_set_epoch(&train, epoch);
        progress_epoch_begin(&p, epoch, (size_t)steps_per_epoch);
        metrics train_m;
        metrics_reset(&train_m);
        /* A checkpoint saved on a signal stopped mid-epoch: its epoch goes on from that batch. */
        for (int b = resume_batch(&train, epoch); b < steps_per_epoch; b++) {
            size_t n = loader_next_cyclic(&train, x, y);
            opt->lr = lr_lab_at(&schedule, epoch, b);
            wrn_result r = wrn_train_batch(model, x, y, n, (float)a.wd);
            optimizer_step(opt, ps);
            metrics_add(&train_m, r.loss, (size_t)r.correct, r.count);
            progress_batch(&p, (size_t)b + 1, metrics_loss(&train_m), metrics_accuracy(&train_m));
        }
        metrics val_m = lab_evaluate(model, &val, val_steps, x, y);
        hvd_metric_average(&train_m, "train"); /* Horovod: the same metrics on every rank */
        hvd_metric_average(&val_m, "val");
        lr_lab_epoch_end(&schedule, epoch);

        if (a.use_checkpointing && hvd_rank() == 0 && /* Horovod: only rank 0 writes */
            ckpt_save_model(a.log_dir, epoch + 1, model, opt, err, sizeof err) != 0)
            fatal_error("%s", err);
        if (progress_epoch_end(&p, metrics_loss(&train_m), metrics_accuracy(&train_m),
                               metrics_loss(&val_m), metrics_accuracy(&val_m)))
            break; /* early stop: the target accuracy was reached --patience times */
    }
    progress_train_end(&p);

    /* The final score on the whole test set. */
    metrics test_m = lab_evaluate(model, &test, (int)loader_num_batches(&test), x, y);
    progress_test(&p, metrics_loss(&test_m), metrics_accuracy(&test_m));

    free(x);
    free(y);
    optimizer_free(opt);
    wrn_free(model);
    loader_free(&train);
    loader_free(&val);
    loader_free(&test);
    dataset_free(&ds);
    hvd_shutdown();
    return 0;
}
