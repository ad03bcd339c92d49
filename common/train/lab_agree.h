/* lab_agree.h — the ranks check that they train on the same epoch before the first batch.
 *
 * Ranks that read different files (another --data-dir, a stale copy on one node) or were given
 * different flags in an MPMD launch would disagree on the steps per epoch and end in a raw MPI
 * error or a hang. What defines the epoch is compared once at start: the sizes of the training
 * and test sets, a fingerprint of each of the four files' decoded contents (so a .gz and its
 * gunzipped copy agree), --train-subset, --test-subset, --batch-size, --val-batch-size and
 * --seed; then the flags that say how to train: --epochs, --model, --dropout, --optimizer,
 * --base-lr, --momentum, --wd, --warmup-epochs, --target-accuracy, --patience,
 * --use-checkpointing and --restart (another learning rate on one rank would make the weights
 * drift apart unseen; another --epochs or --model would hang; rank 0 alone acts on --restart,
 * so one given to another rank only resumed the run it asked to set aside). The first item that
 * differs stops every rank with one line naming it, its values and the ranks holding each (and
 * where each rank read its data):
 *   the ranks disagree on the data that defines an epoch: --seed is 1 on rank 0 but 42 on rank 1;
 *   every rank must be given the same --seed
 *   the ranks disagree on how to train: --base-lr is 0.01 on rank 0 but 0.05 on ranks 1, 2; ...
 *
 * Public: lab_agree_data.
 */
#ifndef HVDLAB_LAB_AGREE_H
#define HVDLAB_LAB_AGREE_H

#include "data/dataset.h"
#include "train/args.h"

/* Collective: every rank calls it, after hvd_init. A no-op before hvd_init or with one rank. */
void lab_agree_data(const args *a, const dataset *ds);

#endif
