/* stop.h — a signal saves the work. On SIGTERM, SIGINT or SIGUSR1 (a batch system's time limit,
 * Ctrl-C, Slurm's --signal) the ranks agree to stop at the end of a training step, the ranks
 * that write checkpoints save that exact point mid-epoch (checkpoint-{epoch}.{batch}.ckpt, from
 * which --use-checkpointing resumes exactly), every rank prints one line and exits with 128 + the
 * signal number. A second signal exits at once, and so does one after the training (during the
 * test: nothing is left to save, and mpirun's SIGKILL follows its SIGTERM by a second).
 *
 * The step programs need not call any of it: progress_init installs the handlers (a SIGUSR1 that
 * came while the rank started up counts as caught there: base/early_signal.h), progress_batch
 * (every rank, at the end of every step) votes, progress_train_end votes once more. The
 * vote (guard/vote.h) is started at one step and read at the next, so it never waits; the ranks
 * stop one step after the first of them saw the signal, all at the same step.
 * A mid-epoch save needs a program that can resume mid-epoch (resume_batch, resume.h, says it
 * can); any other stops without saving, its newest checkpoint being the last epoch's.
 *
 * Lines (stderr, one per rank; E 1-based as printed, B batches of its S done):
 *   hvdlab: stopped by SIGTERM in epoch E after batch B/S: saved DIR/checkpoint-{E-1}.B.ckpt;
 *           run the same command again to go on from there           (rank 0, one line)
 *   hvdlab: stopped by SIGTERM in epoch E after batch B/S (rank 0 saves the checkpoint)
 *   hvdlab: stopped by SIGTERM in epoch E after batch B/S: nothing saved (<why>)
 *   hvdlab: second signal: exiting at once
 *   hvdlab: stopped by SIGTERM after the training: exiting at once (nothing left to save)
 * Trace (HVDLAB_TRACE): "stop signal=N epoch=E batch=B" on every rank before its line ("stop
 * signal=N after_training=1" at the training's end).
 *
 * Public: stop_install, stop_step, stop_allow_mid_epoch, stop_settle, stop_finish.
 */
#ifndef HVDLAB_STOP_H
#define HVDLAB_STOP_H

/* Installs the handlers (once; later calls do nothing). */
void stop_install(void);
/* After batch `done` (1-based) of `steps` in epoch `epoch` (0-based), on every rank: votes, and
 * when the ranks agreed to stop, saves, prints and exits (does not return). */
void stop_step(int epoch, int done, int steps);
/* The program resumes mid-epoch (resume_batch): a signal may save mid-epoch. */
void stop_allow_mid_epoch(void);
/* Before an exit at a step's end that is not a stop (elastic.h's resize), on every rank: settles
 * the pending vote, so that no request outlives MPI. */
void stop_settle(void);
/* After the training loop, on every rank: votes once more; when any rank has had a signal,
 * every rank prints its line and exits (the last epoch's checkpoint already saved). From here a
 * signal exits at once with its line. */
void stop_finish(void);

#endif
