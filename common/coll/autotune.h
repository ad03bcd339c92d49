/* autotune.h — HVD_AUTOTUNE=1 (Horovod's HOROVOD_AUTOTUNE): the fusion threshold is searched on
 * the job's real gradient traffic during its first steps, and the best one kept.
 *
 * A step, here, is the time from one gradient synchronisation to the next: a hvd_synchronize
 * that flushes two or more queued tensors (the distributed optimizer's per-view allreduces),
 * which covers that flush under the threshold in force, the update, and the next forward and
 * backward pass. Metric averages and broadcasts (one tensor each) are not steps.
 * Search: each candidate threshold (AUTOTUNE_CANDIDATES) in turn, forward then backward (two
 * rounds, so a drift of the machine's speed does not favour one end), each trial being W steps
 * not measured (the threshold has just changed) then S measured ones. A candidate's score is
 * the median of its 2·S step times on rank 0 — a robust statistic: a shared 2-core VM has
 * outliers of several times the typical step. After the last trial rank 0 broadcasts the
 * candidate with the lowest score, and every rank adopts it at the same synchronisation (all
 * ranks count the same synchronisations, so no other message is needed).
 * The kit's runtime has no background cycle (tensors are fused when the program synchronises),
 * so Horovod's second knob, HOROVOD_CYCLE_TIME, has nothing to tune here.
 *
 * Environment (the ranks must agree; hvd_init stops the job if not):
 *   HVD_AUTOTUNE=1                       on (0 or unset: off)
 *   HVD_AUTOTUNE_LOG=FILE                rank 0 writes the trials there as CSV (created at
 *                                        start: a path it cannot create stops the job)
 *   HVD_AUTOTUNE_STEPS_PER_SAMPLE=S      measured steps per trial (default 5)
 *   HVD_AUTOTUNE_WARMUP_SAMPLES=W        unmeasured steps after each change (default 1)
 * HVD_FUSION_THRESHOLD set as well: that value stays (Horovod keeps explicitly set parameters
 * fixed) and autotune is off, with one warning line.
 *
 * CSV: "trial,round,fusion_threshold_bytes,measured_steps,median_step_ms,score_ms,chosen", one
 * row per trial; score_ms is the candidate's median over both rounds, chosen is 1 on the rows of
 * the candidate adopted (whose score_ms is the lowest).
 * Line (rank 0, stderr): "hvdlab: autotune: fusion threshold T bytes chosen at step N (median
 * step X ms; the worst, T' bytes, Y ms; the default, 67108864 bytes, Z ms); trials in FILE".
 * A run that ends before the last trial chooses nothing: it keeps the threshold of the trial it
 * was in, and writes no CSV (2·6·(W+S) steps are needed: 72 with the defaults).
 * Trace (HVDLAB_TRACE, every rank): "autotune trial=I threshold=T sync=N" as each trial starts,
 * "autotune chosen threshold=T sync=N score_ms=X" when the choice is adopted.
 *
 * Public: autotune_init, autotune_sync, autotune_active.
 */
#ifndef HVDLAB_AUTOTUNE_H
#define HVDLAB_AUTOTUNE_H

#include <mpi.h>
#include <stddef.h>

/* At hvd_init, after the settings agree; collective over comm. *threshold is the threshold
 * the fusion code uses (autotune changes it in place); explicit: HVD_FUSION_THRESHOLD was set;
 * dflt: the threshold without it (HVD_DEFAULT_FUSION_THRESHOLD), which the report compares. */
void autotune_init(MPI_Comm comm, int rank, size_t *threshold, int explicit_threshold,
                   size_t dflt);
/* In hvd_synchronize before the flush of `queued` tensors; collective (every rank calls it at
 * the same synchronisation) once the trials end. */
void autotune_sync(size_t queued);
/* 1 while trials are running. */
int autotune_active(void);

#endif
