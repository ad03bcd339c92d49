/* resume.h — where in its epoch a resumed run starts. A checkpoint saved on a signal (stop.h)
 * holds a point mid-epoch; the training loop of a step program that resumes from it starts its
 * first epoch at that batch:
 *
 *   for (int b = resume_batch(&train, epoch); b < steps_per_epoch; b++) { ... }
 *
 * Public: resume_batch.
 */
#ifndef HVDLAB_RESUME_H
#define HVDLAB_RESUME_H

#include "data/loader.h"

/* Call after loader_set_epoch, on every rank, at every epoch's start. In the epoch the run
 * resumed in: moves the loader to the saved batch and returns it (rank 0's, as it loaded the
 * checkpoint); else 0. The first call also tells stop.h that this program can go on from a
 * mid-epoch checkpoint. */
int resume_batch(loader *train, int epoch);

#endif
