/* progress.h — the lab's Keras-style output and its early stop.
 *
 *   Keras / the lab                                  hvdlab
 *   fit(verbose=1 if hvd.rank() == 0 else 0)      -> progress_init(&p, hvd_rank() == 0, epochs,
 *                                                                   total_images)
 *   ProgbarLogger: "Epoch 3/10", the bar          -> progress_epoch_begin / progress_batch
 *   PrintThroughput, PrintTotalTime (epoch end)   -> progress_epoch_end (returns 1: stop now)
 *   StopAtAccuracy(target, patience)              -> progress_set_early_stop
 *   PrintTotalTime (train end), early-stop line   -> progress_train_end
 *   print('Test loss:', …), ('Test accuracy:', …) -> progress_test
 *
 * Output of a verbose process (stdout):
 *   Epoch 3/10
 *   14/14 [==============================] - 5s 357ms/step - loss: 0.3165 - accuracy: 0.9028
 *         - val_loss: 0.3301 - val_accuracy: 0.8810          (one line)
 *   Images/sec: 11804.72
 *   Cumulative training time after epoch 3: 15.27
 *   …
 *   Early stopping after epoch 7
 *   Cumulative training time: 35.61
 *   Test loss: 0.3410
 *   Test accuracy: 0.8776
 * The bar is Keras' Progbar (width 30; '=' done, '>' the head, '.' to go; the step count right-
 * aligned to the target's digits; " - ETA: 0s" while running; " - 5s 357ms/step" at the end;
 * values "%.4f", or "%.4e" when |v| <= 1e-3). On a terminal it is redrawn in place with '\r'
 * after every batch (at most every 50 ms); otherwise (logs, CI, notebooks) a plain line is
 * printed when the epoch passes each further 10 % of its steps and the full line at the end.
 * Images/sec = total_images / wall time of the epoch (validation included), as the lab.
 * Times are seconds with two decimals (the lab's round(t, 2)).
 *
 * Early stop (the lab's StopAtAccuracy): an epoch with val_accuracy > target counts, any other
 * resets the count; when the count reaches patience, progress_epoch_end returns 1. It depends
 * only on the values passed in (pass the averaged metrics and every rank decides the same) and
 * is decided on every rank, verbose or not. The count is part of every checkpoint written after
 * progress_set_early_stop (counting the epoch whose validation was averaged last, even when the
 * program saves before progress_epoch_end), and a resumed run goes on from it
 * (progress_restore_early_stop, which resume_batch calls), so it stops where an uninterrupted
 * run would.
 *
 * Trace (HVDLAB_TRACE): every line printed → "progress text=\"…\"" (the plain-mode lines, also
 * on a terminal); every rank at epoch end → "metrics when=epoch epoch=N loss= accuracy=
 * val_loss= val_accuracy=" (N counts finished epochs, 1-based as printed).
 *
 * Public: progress_init, progress_set_early_stop, progress_restore_early_stop,
 *         progress_epoch_begin, progress_batch,
 *         progress_epoch_end, progress_train_end, progress_test, progress_print,
 *         progress_format_bar, progress_format_eta, progress_format_per_step,
 *         progress_format_value.
 */
#ifndef HVDLAB_PROGRESS_H
#define HVDLAB_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#define PROGRESS_BAR_WIDTH 30     /* Keras Progbar width */
#define PROGRESS_TTY_INTERVAL 0.05 /* Keras Progbar interval: seconds between redraws */

typedef struct {
    int verbose;          /* print (the ranks Keras would run with verbose=1) */
    FILE *out;            /* stdout */
    int tty;              /* out is a terminal: redraw the bar in place */
    double (*clock)(void); /* seconds, monotonic (tests may replace it) */
    int epochs;           /* for "Epoch N/E" */
    size_t total_images;  /* for Images/sec */
    /* Current epoch. */
    int epoch;            /* 0-based */
    size_t steps;         /* target steps */
    double t_epoch;       /* clock at epoch begin */
    double t_train;       /* clock at progress_init */
    double t_drawn;       /* last terminal redraw */
    int plain_decile;     /* last tenth of the epoch printed in plain mode */
    size_t drawn_width;   /* characters of the bar on screen (terminal) */
    int bar_open;         /* a terminal bar is drawn without its newline */
    /* Early stop. */
    double target;        /* val_accuracy must exceed this … */
    int patience;         /* … this many epochs in a row (0: early stop off) */
    int met;              /* epochs in a row above target so far */
    unsigned val_seen;    /* metrics_last_validation's count at the last epoch end */
    int stopped_epoch;    /* 1-based epoch it stopped after, 0 = not stopped */
} progress;

/* verbose: print on this rank. epochs: the --epochs total. total_images: images per epoch for
 * Images/sec (the training-set size, like the lab's len(y_train)). Starts the training clock
 * and installs stop.h's signal handlers. Output goes to stdout; tty: stdout is a terminal and,
 * under mpirun, so is the launcher's (HVDLAB_PROGRESS=bar|lines overrides, auto does not; every
 * rank stops with one line on another value). Early stop starts off. */
void progress_init(progress *p, int verbose, int epochs, size_t total_images);
/* The lab's --target-accuracy and --patience (patience 0 switches early stop off). */
void progress_set_early_stop(progress *p, double target, int patience);
/* The count a resumed run's checkpoint recorded (every rank the same), for the progress of the
 * last progress_set_early_stop. */
void progress_restore_early_stop(int count);

/* Prints "Epoch N/E" (N = epoch + 1) and starts the epoch's clock; steps = batches to come. */
void progress_epoch_begin(progress *p, int epoch /* 0-based */, size_t steps);
/* After batch `step` (1-based) with the running loss and accuracy so far. */
void progress_batch(progress *p, size_t step, double loss, double accuracy);
/* Ends the epoch: the final bar line with the validation values, Images/sec, cumulative time.
 * Returns 1 if training should stop now (early stop), 0 otherwise. */
int progress_epoch_end(progress *p, double loss, double accuracy, double val_loss,
                       double val_accuracy);
/* "Early stopping after epoch N" (when it did) and "Cumulative training time: X". */
void progress_train_end(progress *p);
/* "Test loss: X" and "Test accuracy: X". */
void progress_test(progress *p, double loss, double accuracy);
/* Any other line on verbose ranks (ends an open terminal bar first), also traced. */
void progress_print(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The pieces, exactly as Keras formats them (no '\r', no '\n'); each returns strlen(buf). */
/* " 3/14 [=====>........................]" (current right-aligned to the digits of target) */
size_t progress_format_bar(char *buf, size_t len, size_t current, size_t target);
/* "ETA: 7s", "ETA: 1:05", "ETA: 1:01:05" (whole seconds, truncated) */
size_t progress_format_eta(char *buf, size_t len, double seconds);
/* "2s/step", "357ms/step", "85us/step" (rounded; 0 gives "0s/step") */
size_t progress_format_per_step(char *buf, size_t len, double seconds_per_step);
/* "0.3165", or "1.2000e-04" when |v| <= 1e-3 */
size_t progress_format_value(char *buf, size_t len, double v);

#endif
