/* ckpt.h — one checkpoint file per epoch: model config, flat parameters, batch-norm state and
 * optimizer state, written atomically and verified by CRC32 when read. The byte format (field
 * by field) is in ckpt_format.h, under this header; here: what a run expects of a file, the
 * files in a log directory, and saving and loading a model with its optimizer.
 *
 * The lab's step 7 (Horovod tutorials: rank 0 reads, broadcasts; rank 0 writes), as
 * solutions/step07.c does it:
 *   int resume = 0;                        // restart_epoch(): newest file, from --epochs down
 *   if (hvd_rank() == 0) {                 // hvd.load_model on rank 0
 *       if ((resume = ckpt_latest_model(dir, model, opt, epochs, err, len)) < 0)
 *           fatal_error("%s", err);
 *       if (resume > 0 && ckpt_load_model(dir, resume, model, opt, err, len))
 *           fatal_error("%s", err);
 *   }
 *   hvd_broadcast_bytes(&resume, sizeof resume, 0, "resume_from_epoch");
 *   hvd_broadcast_parameters(wrn_params(model), 0);    // step 4's broadcasts: rank 0's weights
 *   hvd_broadcast_optimizer_state(opt, 0);
 *   for (int epoch = resume; epoch < epochs; epoch++) {
 *       for (int b = resume_batch(&train, epoch); b < steps_per_epoch; b++) { ... }
 *       ...                                // ModelCheckpoint('checkpoint-{epoch}.h5') on rank 0:
 *       if (hvd_rank() == 0 && ckpt_save_model(dir, epoch + 1, model, opt, err, len))
 *           fatal_error("%s", err);
 *   }
 *
 * Files: DIR/checkpoint-{epoch}.ckpt, where {epoch} counts finished epochs (the file written after
 * the 3rd epoch is checkpoint-3.ckpt; resuming from it starts at epoch index 3), and
 * DIR/checkpoint-{epoch}.{batch}.ckpt, saved on a signal after `batch` batches of the next epoch
 * (train/stop.h; the step programs go on from it with resume_batch, train/resume.h). A save writes
 * DIR/.checkpoint-{epoch}.ckpt.tmp-XXXXXX, fsyncs it, renames it over the final name and fsyncs
 * DIR, so a crash leaves either the old state or the complete new file, never a torn one.
 * Leftover temp files (from a killed writer) are ignored by every reader.
 *
 * Reading checks first the format (ckpt_format.h: magic, size, version, CRCs, internal
 * consistency), then that every scalar of the header and the resume block is one a run writes
 * (ckpt_implausible: a NaN last_lr, a negative count), then what the caller expects (ckpt_check: model config, optimizer kind, counts,
 * view table). Config compatibility means the same depth and width (the parameter layout);
 * dropout is stored but may differ.
 *
 * Trace events (trace.h, HVDLAB_TRACE): "ckpt_save path=P epoch=N" after the rename,
 * "ckpt_restore path=P epoch=N" after a successful load (both with " batch=B" for a mid-epoch
 * file), and from the model layer
 * "params when=restore epoch=N sum=<%016llx> state_sum=<%016llx>" (params_checksum) after the
 * weights are copied in (on the loading rank only; the broadcast traces its own line).
 * P is quoted (trace_quote) only when it holds a space, '"', '\' or '='.
 *
 * Public, on plain buffers (the format's ckpt_data and ckpt_file):
 *   ckpt_check.c (expectations) ckpt_check, ckpt_opt_name, ckpt_nonfinite
 *   ckpt_plausible.c (scalars)  ckpt_implausible, ckpt_implausible_place
 *   ckpt_files.c (directories)  ckpt_mkdirs, ckpt_write_temp, ckpt_commit, ckpt_save, ckpt_load,
 *                               ckpt_latest_epoch, ckpt_newest_valid, ckpt_found_batch,
 *                               ckpt_set_aside, ckpt_move_noclobber
 *   ckpt_dir.c (the log dir)    ckpt_set_restart, ckpt_prepare_dir, ckpt_expect_bytes
 *   ckpt_lock.c (one run a dir) ckpt_lock_dir
 *   ckpt_drop.c (superseded)    ckpt_drop_mid_epoch
 * Public (ckpt_model.c, on a param_set and an optimizer):
 *   ckpt_data_of, ckpt_expect_of, ckpt_save_params, ckpt_load_params, ckpt_set_target,
 *   ckpt_has_target, ckpt_target_dir, ckpt_save_target, ckpt_target_iterations,
 *   ckpt_target_checksum,
 *   ckpt_set_world_size, ckpt_loaded_world_size, ckpt_set_batch_size, ckpt_loaded_batch_size,
 *   ckpt_set_early_stop_source, ckpt_loaded_early_stop_count, ckpt_check_loaded_place
 * Public (inline here, on a wrn_model): ckpt_save_model, ckpt_load_model, ckpt_latest_model
 */
#ifndef HVDLAB_CKPT_H
#define HVDLAB_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h" /* ERRMSG_LEN */
#include "ckpt/ckpt_format.h"
#include "model/params.h"
#include "model/wrn.h"
#include "optim/optim.h"

/* What a reader requires of a checkpoint. */
typedef struct {
    ckpt_config cfg;          /* depth and width must match */
    int opt_kind;             /* optimizer code (optim.h), -1: any */
    int check_counts;         /* 1: n_params, n_state, n_opt_state must match the ones below */
    size_t n_params, n_state, n_opt_state;
    const param_view *views;  /* (nviews) when not NULL: names, offsets and shapes must match */
    int nviews;
    const param_view *state_views; /* (n_state_views) likewise */
    int n_state_views;
} ckpt_expect;

/* mkdir -p dir. -1 and "dir: cannot create checkpoint directory: <reason>". */
int ckpt_mkdirs(const char *dir, char *err, size_t errlen);

/* Creates dir if needed, writes d to a temp file there, fsyncs and closes it, and returns its
 * path in tmp (the first half of ckpt_save, split out so tests can stop between write and rename). */
int ckpt_write_temp(const char *dir, const ckpt_data *d, char *tmp, size_t tmplen, char *err,
                    size_t errlen);
/* Renames tmp to dir/checkpoint-{epoch}.ckpt, fsyncs dir, traces ckpt_save. Unlinks tmp on
 * failure. */
int ckpt_commit(const char *dir, const char *tmp, int epoch, char *err, size_t errlen);
/* ckpt_write_temp + ckpt_commit: dir/checkpoint-{d->epoch}.ckpt. 0, or -1 and one line in err. */
int ckpt_save(const char *dir, const ckpt_data *d, char *err, size_t errlen);

/* 0 if f satisfies want; else -1 and one line naming path and both sides. */
int ckpt_check(const ckpt_file *f, const ckpt_expect *want, const char *path, char *err,
               size_t errlen);
/* The name of an optimizer code as messages show it: its kind's name (optim.h), "no" (-1),
 * else "optimizer-kind-N". */
const char *ckpt_opt_name(int kind);

/* 1 if d holds a NaN or infinity (what then names the first: "parameter 12 is nan"), else 0.
 * No such checkpoint is ever written (ckpt_write_temp refuses it) or loaded (ckpt_load and the
 * scan treat it as damaged): a diverged run must not poison the runs that resume from it. */
int ckpt_nonfinite(const ckpt_data *d, char *what, size_t len);

/* 1 if a scalar of d's header or resume block is one no run writes (what then names the field,
 * its value and what it may be: "last_lr nan (a learning rate: finite, at least 0)"), else 0:
 * a dropout outside [0, 1), a negative epoch, iterations, batch, world_size or batch_size, a
 * NaN, infinite or negative last_lr, a batch_size past WRN_MAX_BATCH, an early_stop_count past
 * the epoch. Treated as ckpt_nonfinite is: never written, and a file holding one is damaged. */
int ckpt_implausible(const ckpt_data *d, char *what, size_t len);
/* 1 if r's place mid-epoch (batch batches of batch_size images on world_size ranks) lies past
 * an epoch of `images` training images (the data's, before any --train-subset), with the
 * fields in what; 0 for an end-of-epoch block (batch 0). */
int ckpt_implausible_place(const ckpt_resume *r, size_t images, char *what, size_t len);

/* Reads dir/checkpoint-{epoch}.ckpt, checks it against want (NULL: no requirement) and the
 * epoch stored in it, traces ckpt_restore. On error f holds nothing to free. */
int ckpt_load(const char *dir, int epoch, const ckpt_expect *want, ckpt_file *f, char *err,
              size_t errlen);

/* How a run that must not touch a log directory's checkpoints goes on (the end of its error). */
#define CKPT_WAYS_ON "use another --log-dir, or --restart which moves the old files aside into " \
                     "a dated subfolder; nothing is deleted"

/* Newest epoch e <= max_epoch (max_epoch <= 0: any) whose dir/checkpoint-e.ckpt is valid and
 * satisfies want; 0 if none or dir does not exist. Nothing saved is ever overwritten by an
 * unrelated run: a damaged file it meets (format, CRC, non-finite value, wrong epoch) is renamed
 * to <name>.damaged (.damaged.2, ... when taken) with one warning line and the search goes on
 * to older ones; a valid file that does not satisfy want (another model or optimizer), one of
 * a newer format (ckpt_newer_format: left in place), a damaged one that cannot be renamed aside,
 * or a directory whose checkpoints are all damaged, gives -1 and one line naming the file,
 * what differs and CKPT_WAYS_ON.
 * -1 and one line in err also when dir exists but cannot be listed. */
int ckpt_latest_epoch(const char *dir, const ckpt_expect *want, int max_epoch, char *err,
                      size_t errlen);

/* The newest valid checkpoint of dir (format, CRCs, finite, its name), whatever its model:
 * 0 and *epoch, *batch (0 for an end-of-epoch file); -1 if none or dir cannot be listed.
 * Read only: unlike ckpt_latest_epoch it renames nothing (the dead-rank line asks it). */
int ckpt_newest_valid(const char *dir, int *epoch, int *batch);

/* The batch of the mid-epoch file the last ckpt_latest_epoch of dir (NULL: of any dir) found
 * at epoch, else 0.
 * Files saved mid-epoch (on a signal, ckpt_save_target) are named checkpoint-{epoch}.{batch}.ckpt
 * and sort between checkpoint-{epoch} and checkpoint-{epoch+1}; when the scan picks one,
 * ckpt_load (and so ckpt_load_model) of that epoch reads it. */
int ckpt_found_batch(const char *dir, int epoch);

/* Once checkpoint-{epoch}.ckpt is in dir, the mid-epoch files of the epochs before it
 * (checkpoint-{e}.{b}.ckpt, e < epoch: the elastic launcher's commits, a signal's save) hold
 * nothing a run would resume from: removes them (ckpt_drop.c). The number removed; 0 when that
 * file is not there. */
int ckpt_drop_mid_epoch(const char *dir, int epoch);
/* The directory of the target (ckpt_set_target; "" none). */
const char *ckpt_target_dir(void);

/* Renames path to path.damaged, or the first of path.damaged.2, .3, ... no file holds (an
 * earlier damaged file is never overwritten); one warning line on stderr with why and the name
 * used. 0, or -1 and errno, with nothing printed (ckpt_latest_epoch then stops the run: the
 * file would be overwritten). */
int ckpt_set_aside(const char *path, const char *why);
/* Renames from to to unless to exists (then -1, errno EEXIST): renameat2 RENAME_NOREPLACE, else
 * link + unlink, else (no hard links) a look then rename. 0, or -1 and errno. */
int ckpt_move_noclobber(const char *from, const char *to);

/* ---- the log directory (ckpt_dir.c) ---- */

/* --restart (args_parse sets it): ckpt_prepare_dir first moves every checkpoint, damaged and
 * temp file of an earlier run into a new dir/restart-YYYYmmdd-HHMMSS/ (-2, -3, ... appended when
 * an earlier restart holds that name; one line on stderr names it). */
void ckpt_set_restart(int on);
/* Before the first batch: creates and locks dir (ckpt_lock_dir), (--restart), removes the temp
 * files of killed writers, writes and removes a probe file, and checks that the free space holds
 * two checkpoints of file_bytes (0: no check). 0, or -1 and one line naming dir. */
int ckpt_prepare_dir(const char *dir, size_t file_bytes, char *err, size_t errlen);
/* One run at a time in dir: an flock on dir/.hvdlab-lock, held until the process ends, the file
 * naming its holder ("pid=P host=H job=J since=T"). Taken again by the same process, or by
 * another rank of the same job (HVDLAB_ELASTIC_RUN, one id for all starts of an elastic run,
 * else PMIX_NAMESPACE), it passes; a child forked without exec lets go of its copy; held by another run it waits 3 s for
 * it to end, then -1 and "dir: another run is using this --log-dir (pid P on H, since T): wait
 * for it to end, or use another --log-dir" (without the holder where the file names an ended
 * process: a lock file this user may not write is locked read-only, and keeps the line of the
 * run before; a read-only one that cannot be locked, as on NFS: -1 and a line naming it).
 * Where the file system has no flock it passes; where no lock file is there and
 * none can be made, too (the probe of ckpt_prepare_dir names the directory). One that cannot be
 * opened (a directory in its place): -1 and "dir/.hvdlab-lock: cannot open this log dir's lock
 * file: <reason> (remove it, or use another --log-dir)". */
int ckpt_lock_dir(const char *dir, char *err, size_t errlen);
/* The bytes of a file that satisfies want (its counts). */
size_t ckpt_expect_bytes(const ckpt_expect *want);

/* ---- model layer (ckpt_model.c) ---- */

/* The checkpoint contents of (cfg, ps, opt) at epoch. opt may be NULL (no optimizer state). */
ckpt_data ckpt_data_of(const wrn_config *cfg, const param_set *ps, const optimizer *opt,
                       int epoch);
/* Requirements that make a file loadable into (cfg, ps, opt): config, optimizer kind, counts
 * and view tables. */
ckpt_expect ckpt_expect_of(const wrn_config *cfg, const param_set *ps, const optimizer *opt);

int ckpt_save_params(const char *dir, int epoch, const wrn_config *cfg, const param_set *ps,
                     const optimizer *opt, char *err, size_t errlen);
/* Loads params, state, optimizer state, iterations and last_lr (opt may be NULL: skipped);
 * traces params when=restore. Nothing is changed when it fails. */
int ckpt_load_params(const char *dir, int epoch, const wrn_config *cfg, param_set *ps,
                     optimizer *opt, char *err, size_t errlen);

/* The same on a wrn_model (inline, so that programs that never call them need not link wrn.c). */
static inline int ckpt_save_model(const char *dir, int epoch, wrn_model *m, const optimizer *opt,
                                  char *err, size_t errlen)
{
    return ckpt_save_params(dir, epoch, wrn_get_config(m), wrn_params(m), opt, err, errlen);
}
static inline int ckpt_load_model(const char *dir, int epoch, wrn_model *m, optimizer *opt,
                                  char *err, size_t errlen)
{
    return ckpt_load_params(dir, epoch, wrn_get_config(m), wrn_params(m), opt, err, errlen);
}
/* The model a signal saves (ckpt_save_target): ckpt_latest_model sets it on the ranks that look
 * for checkpoints, which are the ranks that write them. */
void ckpt_set_target(const char *dir, const wrn_config *cfg, const param_set *ps,
                     const optimizer *opt);
int ckpt_has_target(void);
/* Saves the target as checkpoint-{epoch}.{batch}.ckpt (batch batches of epoch `epoch`, 0-based,
 * done; epoch = finished epochs); its path into path. 0, or -1 and one line in err. */
int ckpt_save_target(int epoch, int batch, char *path, size_t pathlen, char *err, size_t errlen);
/* The target optimizer's step count (0 without one): what a commit's trace line records. */
long ckpt_target_iterations(void);
/* params_checksum of the target's weights (0 without a target): what a commit's trace line
 * records, to be compared with the "params when=broadcast" line of the run resumed from it. */
uint64_t ckpt_target_checksum(void);
/* The world size every file written from now on records in its resume block (n <= 0: none);
 * train/resume.c sets it, so that a run resumed with another size can map the batch. */
void ckpt_set_world_size(int n);
/* The world size recorded in the file the last ckpt_load_params read; 0 when none was. */
int ckpt_loaded_world_size(void);
/* Likewise the images per batch and rank (--batch-size), for a run resumed with another. */
void ckpt_set_batch_size(int n);
int ckpt_loaded_batch_size(void);
/* After ckpt_load_params of a mid-epoch file: ckpt_implausible_place of its resume block with
 * the run's training data of `images` (train/resume.c asks it on the rank that loaded). 0 when
 * it fits or nothing was loaded; else -1 and "PATH: implausible checkpoint: batch B, world_size
 * W, batch_size S (...), refused". */
int ckpt_check_loaded_place(size_t images, char *err, size_t errlen);
/* count() gives the early-stop count every file written from now on records (train/progress.c
 * sets it); NULL: 0. */
void ckpt_set_early_stop_source(int (*count)(void));
/* The early-stop count recorded in the file the last ckpt_load_params read; 0 when none was. */
int ckpt_loaded_early_stop_count(void);

/* ckpt_prepare_dir, then ckpt_latest_epoch with the requirements of (m, opt): config, optimizer
 * kind, counts, views; (m, opt) become the signal's target. A file saved mid-epoch in the
 * first epoch is loaded here (the caller loads only epochs > 0). */
static inline int ckpt_latest_model(const char *dir, wrn_model *m, optimizer *opt, int max_epoch,
                                    char *err, size_t errlen)
{
    ckpt_expect want = ckpt_expect_of(wrn_get_config(m), wrn_params(m), opt);
    ckpt_set_target(dir, wrn_get_config(m), wrn_params(m), opt);
    if (ckpt_prepare_dir(dir, ckpt_expect_bytes(&want), err, errlen))
        return -1;
    int e = ckpt_latest_epoch(dir, &want, max_epoch, err, errlen);
    if (e == 0 && ckpt_found_batch(dir, 0) &&
        ckpt_load_params(dir, 0, wrn_get_config(m), wrn_params(m), opt, err, errlen))
        return -1;
    return e;
}

#endif
