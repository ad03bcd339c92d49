/* trace.h — HVDLAB_TRACE=dir: every process appends plain "key=value" event lines to a file in
 * dir. The step graders read these files; nothing else depends on them. When HVDLAB_TRACE is
 * unset every call returns at once (one cached flag test).
 *
 * File: dir/rank-R.log once hvd_init has run (R = world rank). Before hvd_init (the serial step 1
 * program, started under mpirun anyway) the process writes dir/pid-P.log and reports rank=0 size=1.
 * Each line: "event=NAME rank=R size=S pid=P t=SECONDS key=value ...\n", written with one write()
 * on an O_APPEND descriptor, so lines never interleave and a killed job leaves whole lines.
 *
 * Events (who writes them):
 *   init          local_rank local_size (size: in every line)         (hvd_init)
 *   pin           device=cpu|cuda gpu gpus cpus=0,1 threads local_rank  (hvd_pin_device)
 *   collective    op=allreduce|broadcast|broadcast_bytes|allgather name="…" count root
 *                 [reduce=sum|average fp16=0|1]; also before hvd_init (hvd_allreduce/_ex/_async:
 *                 one event per call; hvd_broadcast, hvd_broadcast_bytes, hvd_allgather)
 *   params        when=broadcast root | when=restore epoch; sum=<params_checksum of params>
 *                 state_sum=<of the BN state>      (hvd_broadcast_parameters, ckpt_load_params)
 *   wrap          opt compression passes       (hvd_distributed_optimizer, _ex)
 *   train_batch   loss correct count grad_dot grad_norm: this rank's own gradients, before any
 *                 averaging (params_digest_at)                             (wrn_train_batch)
 *   step          opt=sgd|novograd lr distributed iter grad_sum=<hex, after averaging>
 *                 param_sum=<hex, after the update> grad_dot grad_norm (of the gradients
 *                 applied)                                                 (optimizer_step)
 *   shard         epoch loader_rank loader_size n shuffle count first sum=<FNV-1a 64 of the
 *                 indices as 8-byte LE integers> [idx=3,17,42 when count <= 4096]
 *                 (loader_set_epoch)
 *   ckpt_save     path epoch [batch] / ckpt_restore path epoch [batch] (batch: a mid-epoch file)
 *   metrics       when=local|averaged name loss accuracy [count] (hvd_metric_average);
 *                 when=epoch epoch loss accuracy val_loss val_accuracy (progress_epoch_end)
 *   evaluate      steps loss accuracy count: this rank's own, before averaging  (lab_evaluate)
 *   progress      text="<the line printed, quoted>"
 *   resume        epoch batch saved_batch world was batch_size batch_size_was: where a resumed
 *                 run starts (the batch mapped from saved_batch of `was` ranks and batch_size_was
 *                 images onto `world` and batch_size)                          (resume_batch)
 *   stop          signal epoch batch | signal after_training=1: a signal stops the run
 *                                                                            (train/stop.h)
 *   commit        epoch batch iter ms sum path: an elastic commit (rank 0)    (train/elastic.h)
 *   elastic_stop  epoch batch: the ranks stop after a commit to grow          (train/elastic.h)
 *   autotune      trial threshold sync | chosen threshold sync score_ms      (coll/autotune.h)
 */
#ifndef HVDLAB_TRACE_H
#define HVDLAB_TRACE_H

#include <stddef.h>
#include <stdint.h>

int trace_enabled(void); /* HVDLAB_TRACE set and the file could be opened */

/* Appends one event line: "event=<event> rank=… size=… pid=… t=… " then the formatted fields
 * (the caller writes "key=value key=value"). Values with spaces must be quoted by the caller
 * (trace_quote). Errors (disk full, …) are reported once on stderr, naming the file and the
 * cause, and tracing stops; a line that went out in part is cut off (whole lines only). A folder
 * that cannot be created is reported by each host's first rank, a rank's own file by that rank. */
void trace_event(const char *event, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes s into out as a double-quoted string with \" \\ \n escaped; returns out. */
char *trace_quote(const char *s, char *out, size_t outlen);

/* From now on this process is rank of size: closes the pid file, and the next event opens
 * rank-R.log (hvd_init calls it; the file stays the rank's after hvd_shutdown). */
void trace_reopen(int rank, int size);

#endif
