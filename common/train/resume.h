/* resume.h — where in its epoch a resumed run starts. A checkpoint saved on a signal (stop.h)
 * holds a point mid-epoch; the training loop of a step program that resumes from it starts its
 * first epoch at that batch:
 *
 *   for (int b = resume_batch(&train, epoch); b < steps_per_epoch; b++) { ... }
 *
 * The validation loader runs on across epochs (lab_evaluate draws with loader_next_cyclic), so
 * resume_validation puts it where the uninterrupted run's would be.
 *
 * The whole resume, from finding the file to the first batch, is told in order at the top of
 * resume.c, with the ckpt/ and optim/ calls each step makes.
 *
 * Public: resume_batch, resume_validation.
 */
#ifndef HVDLAB_RESUME_H
#define HVDLAB_RESUME_H

#include "data/loader.h"

/* Call after loader_set_epoch, on every rank, at every epoch's start. In the epoch the run
 * resumed in: moves the loader to the saved batch and returns it (rank 0's, as it loaded the
 * checkpoint; counted in this run's batches when --batch-size or the number of ranks differs
 * from the saved run's, so that no image is skipped); else 0. The first call also tells stop.h
 * that this program can go on from a mid-epoch checkpoint. */
int resume_batch(loader *train, int epoch);

/* Before the first draw from a shuffled validation loader drawn `steps` batches per epoch: in a
 * run that resumed (resume_batch) at epoch E > 0, moves it past the E·steps batches the earlier
 * run drew. Unshuffled loaders (the final test) and other runs are left alone. */
void resume_validation(loader *val, int steps);

#endif
