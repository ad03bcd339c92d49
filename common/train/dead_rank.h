/* dead_rank.h — what a rank says when a peer dies (guard/watchdog.h names the dead rank and how
 * it died; this adds where the training was and where it goes on):
 *   "this rank was in epoch 2 after batch 17/128 (the ranks move in step); run the same command
 *    again to resume after epoch 1 from DIR/checkpoint-1.ckpt, the newest valid checkpoint
 *    there" (the run has --use-checkpointing: the same command resumes)
 * or "... no checkpoint in DIR yet: a run with --use-checkpointing starts from scratch" (rank 0,
 * which writes them; another rank, whose disk may not be rank 0's, says "no checkpoint in DIR as
 * this rank sees it"), or "--use-checkpointing is off: nothing was saved". The newest valid checkpoint is looked up when the line is written
 * (read only: nothing is renamed; ckpt_newest_valid).
 *
 * Public: dead_rank_watch, dead_rank_at.
 */
#ifndef HVDLAB_DEAD_RANK_H
#define HVDLAB_DEAD_RANK_H

#include "train/args.h"

/* Gives the watchdog this context, with a's --log-dir and --use-checkpointing (copied). */
void dead_rank_watch(const args *a);
/* After batch `done` of `steps` of epoch `epoch` (0-based; done 0 at the epoch's start), on
 * every rank. */
void dead_rank_at(int epoch, int done, int steps);

#endif
