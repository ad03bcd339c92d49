/* agree.h — settings every rank must share, compared across ranks once at hvd_init.
 *
 * A setting that changes the communication pattern (collective check, stall inspector, fusion
 * threshold, compression) and differs between ranks makes the ranks wait for messages that never
 * come. Rather than adopt rank 0's values silently, the job stops with one line naming the
 * variable and both values: the launch is wrong, and the fix (give every rank the variable,
 * mpirun -x VAR) is the user's to make.
 */
#ifndef HVDLAB_AGREE_H
#define HVDLAB_AGREE_H

#include <mpi.h>

typedef struct {
    char name[40];  /* HVD_FUSION_THRESHOLD */
    char value[40]; /* the value in force on this rank, normalised: 67108864, fp16, 1 */
} agree_setting;

/* Collective over comm: returns when every rank has the same n values; otherwise rank 0 prints
 * one line naming the first variable that differs, rank 0's value and the other rank's, and
 * every rank exits with status 1. */
void agree_settings(MPI_Comm comm, const agree_setting *mine, int n);

#endif
