/* progress.c — Keras-style progress output, the lab's timing lines, early stop. See progress.h.
 * Public: progress_init, progress_set_early_stop, progress_restore_early_stop,
 *         progress_epoch_begin, progress_batch,
 *         progress_epoch_end, progress_train_end, progress_test, progress_print,
 *         progress_format_bar, progress_format_eta, progress_format_per_step,
 *         progress_format_value.
 */
#include "train/progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fatal.h"
#include "base/timer.h"
#include "base/trace.h"
#include "train/dead_rank.h"
#include "ckpt/ckpt.h"
#include "train/elastic.h"
#include "train/metrics.h"
#include "train/stop.h"

#define LINE_LEN 1024

/* snprintf that appends at *o and never runs past len. */
static void add(char *buf, size_t len, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
    if (*o >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *o, len - *o, fmt, ap);
    va_end(ap);
    if (n > 0)
        *o = *o + (size_t)n < len ? *o + (size_t)n : len - 1;
}

size_t progress_format_bar(char *buf, size_t len, size_t current, size_t target)
{
    size_t o = 0;
    int digits = 1;
    for (size_t t = target; t >= 10; t /= 10)
        digits++;
    add(buf, len, &o, "%*zu/%zu [", digits, current, target);
    /* Keras: int(width * current / target) cells done, the last of them '>' while running. */
    size_t done = target ? (size_t)((double)PROGRESS_BAR_WIDTH * (double)current / (double)target)
                         : PROGRESS_BAR_WIDTH;
    if (done > PROGRESS_BAR_WIDTH)
        done = PROGRESS_BAR_WIDTH;
    for (size_t i = 0; i < PROGRESS_BAR_WIDTH; i++)
        add(buf, len, &o, "%c", i + 1 < done ? '=' : i + 1 == done ? (current < target ? '>' : '=')
                                                                   : '.');
    add(buf, len, &o, "]");
    return o;
}

size_t progress_format_eta(char *buf, size_t len, double seconds)
{
    long s = seconds > 0 ? (long)seconds : 0; /* Keras: '%d' of a float truncates */
    size_t o = 0;
    if (seconds > 3600)
        add(buf, len, &o, "ETA: %ld:%02ld:%02ld", s / 3600, s % 3600 / 60, s % 60);
    else if (seconds > 60)
        add(buf, len, &o, "ETA: %ld:%02ld", s / 60, s % 60);
    else
        add(buf, len, &o, "ETA: %lds", s);
    return o;
}

size_t progress_format_per_step(char *buf, size_t len, double t)
{
    size_t o = 0;
    if (t >= 1 || t <= 0)
        add(buf, len, &o, "%.0fs/step", t > 0 ? t : 0.0);
    else if (t >= 1e-3)
        add(buf, len, &o, "%.0fms/step", t * 1e3);
    else
        add(buf, len, &o, "%.0fus/step", t * 1e6);
    return o;
}

size_t progress_format_value(char *buf, size_t len, double v)
{
    size_t o = 0;
    add(buf, len, &o, fabs(v) > 1e-3 ? "%.4f" : "%.4e", v);
    return o;
}

/* HVDLAB_PROGRESS: bar 1, lines 0, auto (or unset, empty) -1. Another value stops with one line
 * (it meant auto in silence: "line" gave a bar in a log file), as the kit's display switch
 * HVDLAB_REPORT_BINDINGS does. */
static int progress_setting(void)
{
    const char *v = getenv("HVDLAB_PROGRESS");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return -1;
    if (strcmp(v, "bar") == 0)
        return 1;
    if (strcmp(v, "lines") == 0)
        return 0;
    fatal_error("HVDLAB_PROGRESS=%s: expected bar, lines or auto (unset: auto, a bar where the "
                "output ends on a terminal)", v);
}

/* Open MPI gives every rank a pseudo-terminal for stdout, even when mpirun's own output goes to
 * a file or a pipe; the bar is only right where the text finally lands on a terminal, so under a
 * launcher look at the launcher's stdout (our parent's fd 1). HVDLAB_PROGRESS decides unless it is
 * auto (setting: progress_setting's). */
static int output_is_terminal(FILE *out, int setting)
{
    if (setting >= 0)
        return setting;
    if (!isatty(fileno(out)))
        return 0;
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK"))
        return 1;
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/%ld/fd/1", (long)getppid());
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

void progress_init(progress *p, int verbose, int epochs, size_t total_images)
{
    memset(p, 0, sizeof *p);
    p->verbose = verbose;
    p->out = stdout;
    const int setting = progress_setting(); /* every rank: a bad value stops them all */
    p->tty = verbose ? output_is_terminal(stdout, setting) : 0;
    p->clock = timer_seconds;
    p->epochs = epochs;
    p->total_images = total_images;
    p->t_train = p->clock();
    stop_install(); /* from here a signal stops the training at a step's end (stop.h) */
}

/* The early stop a checkpoint records (ckpt_set_early_stop_source): the count after the epoch
 * whose validation was averaged last, which the step programs save before progress_epoch_end
 * has counted it. */
static progress *early_stop;

static int early_stop_count(void)
{
    const progress *p = early_stop;
    double acc;
    if (!p || p->patience <= 0)
        return 0;
    if (metrics_last_validation(&acc) != p->val_seen)
        return acc > p->target ? p->met + 1 : 0;
    return p->met;
}

void progress_set_early_stop(progress *p, double target, int patience)
{
    p->target = target;
    p->patience = patience > 0 ? patience : 0;
    p->met = 0;
    p->val_seen = metrics_last_validation(NULL);
    early_stop = p;
    ckpt_set_early_stop_source(early_stop_count);
}

void progress_restore_early_stop(int count)
{
    if (early_stop && count > 0)
        early_stop->met = count;
}

/* A whole line to the trace as progress text="…". */
static void trace_line(const char *line)
{
    if (!trace_enabled())
        return;
    char q[2 * LINE_LEN + 3];
    trace_event("progress", "text=%s", trace_quote(line, q, sizeof q));
}

/* Ends a terminal bar that is still open, so the next text starts on its own line. */
static void close_bar(progress *p)
{
    if (p->bar_open) {
        fputc('\n', p->out);
        p->bar_open = 0;
        p->drawn_width = 0;
    }
}

static void emit(progress *p, const char *line)
{
    close_bar(p);
    fprintf(p->out, "%s\n", line);
    fflush(p->out);
    trace_line(line);
}

void progress_print(progress *p, const char *fmt, ...)
{
    if (!p->verbose)
        return;
    char line[LINE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(p, line);
}

void progress_epoch_begin(progress *p, int epoch, size_t steps)
{
    close_bar(p);
    dead_rank_at(epoch, 0, (int)steps); /* before "Epoch E/N" is out */
    p->epoch = epoch;
    p->steps = steps;
    p->plain_decile = 0;
    p->t_epoch = p->clock();
    p->t_drawn = -INFINITY;
    progress_print(p, "Epoch %d/%d", epoch + 1, p->epochs);
}

/* " - loss: 0.3165 - accuracy: 0.9028" */
static void add_value(char *line, size_t len, size_t *o, const char *name, double v)
{
    char num[64];
    progress_format_value(num, sizeof num, v);
    add(line, len, o, " - %s: %s", name, num);
}

/* The bar with the running values: ETA form (final = 0) or the end-of-epoch form. */
static size_t format_line(progress *p, char *line, size_t len, size_t step, int final,
                          double now, double loss, double acc)
{
    size_t o = progress_format_bar(line, len, step, p->steps);
    double elapsed = now - p->t_epoch;
    double per_step = step ? elapsed / (double)step : 0;
    char piece[64];
    if (final) {
        progress_format_per_step(piece, sizeof piece, per_step);
        add(line, len, &o, " - %.0fs %s", elapsed > 0 ? elapsed : 0.0, piece);
    } else {
        progress_format_eta(piece, sizeof piece, per_step * (double)(p->steps - step));
        add(line, len, &o, " - %s", piece);
    }
    add_value(line, len, &o, "loss", loss);
    add_value(line, len, &o, "accuracy", acc);
    return o;
}

/* Terminal: back to the start of the line, the text, blanks over what the last draw left. */
static void redraw(progress *p, const char *line, size_t n)
{
    fprintf(p->out, "\r%s", line);
    for (size_t i = n; i < p->drawn_width; i++)
        fputc(' ', p->out);
    fflush(p->out);
    p->drawn_width = n;
    p->bar_open = 1;
}

void progress_batch(progress *p, size_t step, double loss, double accuracy)
{
    dead_rank_at(p->epoch, (int)step, (int)p->steps); /* what a dead peer's line says */
    stop_step(p->epoch, (int)step, (int)p->steps); /* every rank, at every step's end */
    elastic_step(p->epoch, (int)step, (int)p->steps); /* a commit every K steps (elastic.h) */
    if (!p->verbose || step == 0)
        return;
    if (step > p->steps)
        step = p->steps;
    /* Plain lines at each further tenth of the epoch; the last step is left to epoch_end. */
    int decile = p->steps ? (int)(10 * step / p->steps) : 10;
    int plain = step < p->steps && decile > p->plain_decile;
    double now = p->clock();
    int draw = p->tty && (now - p->t_drawn >= PROGRESS_TTY_INTERVAL || plain);
    if (!plain && !draw)
        return;
    char line[LINE_LEN];
    size_t n = format_line(p, line, sizeof line, step, 0, now, loss, accuracy);
    if (plain) {
        p->plain_decile = decile;
        trace_line(line);
    }
    if (p->tty) {
        redraw(p, line, n);
        p->t_drawn = now;
    } else if (plain) {
        fprintf(p->out, "%s\n", line);
        fflush(p->out);
    }
}

int progress_epoch_end(progress *p, double loss, double accuracy, double val_loss,
                       double val_accuracy)
{
    int n_epoch = p->epoch + 1;
    elastic_epoch_end(n_epoch); /* the step program saved the epoch before this call */
    trace_event("metrics", "when=epoch epoch=%d loss=%.9g accuracy=%.9g val_loss=%.9g "
                           "val_accuracy=%.9g", n_epoch, loss, accuracy, val_loss, val_accuracy);
    if (p->verbose) {
        double now = p->clock(), elapsed = now - p->t_epoch;
        char line[LINE_LEN];
        size_t n = format_line(p, line, sizeof line, p->steps, 1, now, loss, accuracy);
        add_value(line, sizeof line, &n, "val_loss", val_loss);
        add_value(line, sizeof line, &n, "val_accuracy", val_accuracy);
        if (p->tty && p->bar_open) {
            redraw(p, line, n);
            fputc('\n', p->out);
            p->bar_open = 0;
            p->drawn_width = 0;
            trace_line(line);
        } else {
            emit(p, line);
        }
        progress_print(p, "Images/sec: %.2f",
                       elapsed > 0 ? (double)p->total_images / elapsed : 0.0);
        progress_print(p, "Cumulative training time after epoch %d: %.2f", n_epoch,
                       now - p->t_train);
    }
    /* The lab's StopAtAccuracy: strictly above the target, patience epochs in a row. */
    p->val_seen = metrics_last_validation(NULL);
    if (p->patience <= 0)
        return 0;
    p->met = val_accuracy > p->target ? p->met + 1 : 0;
    if (p->met >= p->patience) {
        p->stopped_epoch = n_epoch;
        return 1;
    }
    return 0;
}

void progress_train_end(progress *p)
{
    stop_finish();
    if (p->stopped_epoch)
        progress_print(p, "Early stopping after epoch %d", p->stopped_epoch);
    progress_print(p, "Cumulative training time: %.2f", p->clock() - p->t_train);
}

void progress_test(progress *p, double loss, double accuracy)
{
    progress_print(p, "Test loss: %.4f", loss);
    progress_print(p, "Test accuracy: %.4f", accuracy);
}
