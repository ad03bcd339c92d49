/* lab.h — what every step program needs and no lab step changes.
 *
 * The step programs (steps/, solutions/) show what Horovod changes. The lines that read the same
 * from step 1 to step 10, and that the Keras lab does not show either, live here:
 *
 *   Keras lab                                       hvdlab
 *   train_iter = ImageDataGenerator(…).flow(…)  ->  loader train = lab_train_loader(&a, &ds, me)
 *   validation_data=test_iter (random draws)    ->  loader val = lab_val_loader(&a, &ds, me)
 *   test_iter, for the final model.evaluate     ->  loader test = lab_test_loader(&a, &ds)
 *   model.evaluate(test_iter, steps=k)          ->  lab_evaluate(model, &test, k, x, y)
 *   model.summary()                             ->  lab_print_banner(model, &ds, train.n, val.n)
 *
 * Which shard a process draws is the caller's choice, passed as a lab_shard: {0, 1} draws the
 * whole data set, {hvd_rank(), hvd_size()} this rank's share of it (step 5). All three loaders
 * use the data seed --seed and the training set's mean and std; a loader that cannot be built
 * stops every rank with fatal_error and the loader's message.
 * Once hvd_init has run with more than one rank, lab_train_loader first checks that every rank
 * has the same data and flags for the epoch (lab_agree.h) and stops every rank if not.
 *
 * Public: lab_shard, lab_train_loader, lab_val_loader, lab_test_loader, lab_max_batch,
 *         lab_evaluate, lab_batch_images, lab_batch_labels, lab_print_banner.
 */
#ifndef HVDLAB_LAB_H
#define HVDLAB_LAB_H

#include <stddef.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "model/wrn.h"
#include "train/args.h"
#include "train/metrics.h"

typedef struct {
    int rank, size; /* draw shard `rank` of `size` (0 <= rank < size) */
} lab_shard;

/* The training images (--train-subset), batches of --batch-size, reshuffled every epoch and
 * augmented (flip + shift). Collective after hvd_init: every rank calls it (lab_agree_data). */
loader lab_train_loader(const args *a, const dataset *ds, lab_shard me);

/* The test images (--test-subset) drawn for validation after every epoch: batches of
 * --val-batch-size, reshuffled every epoch (the Keras lab draws them at random), not augmented. */
loader lab_val_loader(const args *a, const dataset *ds, lab_shard me);

/* The test images (--test-subset) for the final score: every image on every rank, in file order,
 * batches of --val-batch-size, not augmented. */
loader lab_test_loader(const args *a, const dataset *ds);

/* The most images one batch of these loaders can hold: each one's batch size, but no more than
 * the images it draws in an epoch on this rank (its shard). The model and the batch buffers are
 * sized by it, so a --val-batch-size far above the test set costs nothing. */
size_t lab_max_batch(const loader *train, const loader *val, const loader *test);

/* Mean loss and accuracy of the model over `steps` batches of L in inference mode, drawn with
 * loader_next_cyclic (so `steps` may exceed one pass). x and y hold one batch of L. */
metrics lab_evaluate(wrn_model *model, loader *L, int steps, float *x /* (B, 1, 28, 28) */,
                     int *y /* (B) */);

/* Buffers for one batch of up to max_batch images (max_batch x 1 x 28 x 28 floats) and their
 * labels; out of memory stops every rank with fatal_error. Release with free(). */
float *lab_batch_images(size_t max_batch);
int *lab_batch_labels(size_t max_batch);

/* One line on stdout: "Model wrn-D-K: P trainable parameters. Data from DIR: N training, M test
 * images." (n_train and n_test: the images in use after the subsets). */
void lab_print_banner(const wrn_model *model, const dataset *ds, size_t n_train, size_t n_test);

#endif
