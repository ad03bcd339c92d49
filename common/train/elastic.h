/* elastic.h — the training program's side of elastic training; the launcher's side is
 * tools/hvdrun_elastic.sh (./hvdrun --elastic). Open MPI cannot shrink or grow a running
 * communicator, so elasticity here is restart-based (torchrun's elastic agent, not Horovod's
 * in-process rendezvous): the launcher restarts the job with another number of ranks, and the
 * job goes on from its last commit.
 *
 * A commit (Horovod's state.commit()) is a mid-epoch checkpoint: after every K-th batch of an
 * epoch, rank 0 writes checkpoint-{E}.{B}.ckpt with the atomic checkpoint writer (ckpt.h) —
 * weights, optimizer state, the loader position (epoch, batch) and the counters the random
 * draws follow from, and the world size — then removes its previous commit. It is on disk, so
 * it survives the death of any rank, rank 0 included; a crash loses the batches since the last
 * commit, at most K. A restarted job resumes from it (resume.h maps the batch onto the new world
 * size; the learning rate and warmup follow from the new size as in any run).
 * When the launcher has more slots, it creates the notify file; at the next commit the ranks
 * see it (rank 0 looks, and tells the others) and stop after the commit with ELASTIC_EXIT_RESIZE.
 *
 * Environment (the launcher sets it; mpirun hands the local ranks its environment):
 *   HVDLAB_ELASTIC=1                  under the elastic launcher: a resumed run prints one line
 *                                     per rank (resume.c)
 *   HVDLAB_ELASTIC_COMMIT_STEPS=K     commit every K batches (0 or unset: no commits)
 *   HVDLAB_ELASTIC_NOTIFY=PATH        the launcher's "more slots" file
 * Commits need --use-checkpointing (rank 0 is then the checkpoint target); without it nothing
 * is written.
 * Lines: "hvdlab: elastic: more slots announced: stopping after the commit at epoch E batch
 * B/S" (rank 0, stderr).
 * Trace (HVDLAB_TRACE): "commit epoch=E batch=B iter=I ms=T sum=S path=P" (rank 0, after the
 * rename; E 0-based, I the optimizer steps applied, T the milliseconds the commit took, S the
 * params_checksum of the weights committed), "elastic_stop epoch=E batch=B" (every rank).
 *
 * Public: elastic_on, elastic_step, elastic_epoch_end, ELASTIC_EXIT_RESIZE.
 */
#ifndef HVDLAB_ELASTIC_H
#define HVDLAB_ELASTIC_H

#define ELASTIC_EXIT_RESIZE 75 /* EX_TEMPFAIL: "run me again", with the new slots */

/* 1 under the elastic launcher (HVDLAB_ELASTIC=1; 0 or unset: 0; another value stops the run,
 * base/env_switch.h). */
int elastic_on(void);
/* After batch `done` (1-based) of `steps` of epoch `epoch` (0-based), on every rank, after
 * stop_step: commits every K batches, and stops at a commit when the launcher asked. */
void elastic_step(int epoch, int done, int steps);
/* After the program saved the end of epoch `epochs_done` (1-based), on every rank: under the
 * launcher, rank 0 removes the commits that file supersedes (ckpt_drop_mid_epoch), which would
 * otherwise stay in --log-dir after the run. */
void elastic_epoch_end(int epochs_done);

#endif
