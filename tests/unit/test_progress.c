/* test_progress.c — the Keras-style output byte for byte (fake clock), terminal redraws, the
 * lab's timing lines, early stop, and the trace of what was printed. Serial (no MPI).
 * `test_progress --demo` instead prints a short fake training run with the real clock. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/child_env.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/tmpdir.h"
#include "train/progress.h"

static double fake_now;
static double fake_clock(void) { return fake_now; }

/* A progress object writing into a memory stream, on the fake clock from t = 0. */
typedef struct {
    progress p;
    char *buf;
    size_t len;
} capture;

static void capture_start(capture *c, int verbose, int tty, int epochs, size_t images)
{
    fake_now = 0;
    progress_init(&c->p, verbose, epochs, images);
    c->buf = NULL;
    c->len = 0;
    c->p.out = open_memstream(&c->buf, &c->len);
    ck_assert_ptr_nonnull(c->p.out);
    c->p.tty = tty;
    c->p.clock = fake_clock;
    c->p.t_train = fake_now;
}

static const char *capture_text(capture *c)
{
    fflush(c->p.out);
    return c->buf ? c->buf : "";
}

static void capture_end(capture *c)
{
    fclose(c->p.out);
    free(c->buf);
}

/* One epoch of 14 batches, 0.357 s each, then 2 ms of validation: 5.000 s in all. The running
 * values depend on the step so each line can be told apart. */
static int run_epoch(progress *p, int epoch, double val_acc)
{
    progress_epoch_begin(p, epoch, 14);
    for (size_t s = 1; s <= 14; s++) {
        fake_now += 0.357;
        progress_batch(p, s, 1.0 / (double)s, 0.5 + 0.03 * (double)s);
    }
    fake_now += 0.002;
    return progress_epoch_end(p, 0.3165, 0.9028, 0.33, val_acc);
}

START_TEST(bar_matches_keras)
{
    char b[128];
    ck_assert_uint_eq(progress_format_bar(b, sizeof b, 3, 14), 38);
    ck_assert_str_eq(b, " 3/14 [=====>........................]");
    progress_format_bar(b, sizeof b, 0, 14);
    ck_assert_str_eq(b, " 0/14 [..............................]");
    progress_format_bar(b, sizeof b, 13, 14);
    ck_assert_str_eq(b, "13/14 [==========================>...]");
    progress_format_bar(b, sizeof b, 14, 14);
    ck_assert_str_eq(b, "14/14 [==============================]");
    progress_format_bar(b, sizeof b, 1, 100);
    ck_assert_str_eq(b, "  1/100 [..............................]");
    progress_format_bar(b, sizeof b, 10, 100);
    ck_assert_str_eq(b, " 10/100 [==>...........................]");
    progress_format_bar(b, sizeof b, 1, 1);
    ck_assert_str_eq(b, "1/1 [==============================]");
    progress_format_bar(b, sizeof b, 235, 469);
    ck_assert_str_eq(b, "235/469 [==============>...............]");
    progress_format_bar(b, sizeof b, 0, 0); /* an empty epoch is complete */
    ck_assert_str_eq(b, "0/0 [==============================]");
    progress_format_bar(b, 10, 3, 14); /* cut, never overrun */
    ck_assert_str_eq(b, " 3/14 [==");
}
END_TEST

START_TEST(eta_step_time_and_values_match_keras)
{
    char b[64];
    struct {
        double s;
        const char *want;
    } eta[] = {{0, "ETA: 0s"},        {4.284, "ETA: 4s"},          {59.99, "ETA: 59s"},
               {60, "ETA: 60s"},      {61, "ETA: 1:01"},           {600.5, "ETA: 10:00"},
               {3600, "ETA: 60:00"},  {3661.7, "ETA: 1:01:01"},    {-1, "ETA: 0s"}};
    for (size_t i = 0; i < sizeof eta / sizeof eta[0]; i++) {
        progress_format_eta(b, sizeof b, eta[i].s);
        ck_assert_msg(strcmp(b, eta[i].want) == 0, "%g s: '%s' want '%s'", eta[i].s, b,
                      eta[i].want);
    }
    struct {
        double t;
        const char *want;
    } per[] = {{0, "0s/step"},         {1, "1s/step"},          {2.4, "2s/step"},
               {0.357142, "357ms/step"}, {0.0015, "2ms/step"},  {0.001, "1ms/step"},
               {0.000854, "854us/step"}, {0.0000854, "85us/step"}};
    for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
        progress_format_per_step(b, sizeof b, per[i].t);
        ck_assert_msg(strcmp(b, per[i].want) == 0, "%g s: '%s' want '%s'", per[i].t, b,
                      per[i].want);
    }
    struct {
        double v;
        const char *want;
    } val[] = {{0.31654, "0.3165"},   {0.90275, "0.9028"},      {1234.5, "1234.5000"},
               {-0.5, "-0.5000"},     {0.0011, "0.0011"},       {0.001, "1.0000e-03"},
               {0, "0.0000e+00"},     {-0.00012345, "-1.2345e-04"}};
    for (size_t i = 0; i < sizeof val / sizeof val[0]; i++) {
        progress_format_value(b, sizeof b, val[i].v);
        ck_assert_msg(strcmp(b, val[i].want) == 0, "%g: '%s' want '%s'", val[i].v, b,
                      val[i].want);
    }
}
END_TEST

/* What a log file (not a terminal) shows for one epoch: a line per further tenth, the end line,
 * the lab's two lines. 14 steps of 0.357 s, 5.000 s with validation, 1792 images. */
static const char *EPOCH1_PLAIN =
    "Epoch 1/3\n"
    " 2/14 [===>..........................] - ETA: 4s - loss: 0.5000 - accuracy: 0.5600\n"
    " 3/14 [=====>........................] - ETA: 3s - loss: 0.3333 - accuracy: 0.5900\n"
    " 5/14 [=========>....................] - ETA: 3s - loss: 0.2000 - accuracy: 0.6500\n"
    " 6/14 [===========>..................] - ETA: 2s - loss: 0.1667 - accuracy: 0.6800\n"
    " 7/14 [==============>...............] - ETA: 2s - loss: 0.1429 - accuracy: 0.7100\n"
    " 9/14 [==================>...........] - ETA: 1s - loss: 0.1111 - accuracy: 0.7700\n"
    "10/14 [====================>.........] - ETA: 1s - loss: 0.1000 - accuracy: 0.8000\n"
    "12/14 [========================>.....] - ETA: 0s - loss: 0.0833 - accuracy: 0.8600\n"
    "13/14 [==========================>...] - ETA: 0s - loss: 0.0769 - accuracy: 0.8900\n"
    "14/14 [==============================] - 5s 357ms/step - loss: 0.3165 - accuracy: 0.9028"
    " - val_loss: 0.3300 - val_accuracy: 0.8000\n"
    "Images/sec: 358.40\n"
    "Cumulative training time after epoch 1: 5.00\n";

START_TEST(plain_epoch_byte_for_byte)
{
    capture c;
    capture_start(&c, 1, 0, 3, 1792);
    ck_assert_int_eq(run_epoch(&c.p, 0, 0.80), 0);
    ck_assert_str_eq(capture_text(&c), EPOCH1_PLAIN);
    /* The second epoch: its own count and the training time so far. */
    fake_now += 1.0; /* time between epochs (e.g. a checkpoint) counts in the cumulative time */
    run_epoch(&c.p, 1, 0.80);
    const char *t = capture_text(&c) + strlen(EPOCH1_PLAIN);
    ck_assert_msg(strncmp(t, "Epoch 2/3\n", 10) == 0, "%s", t);
    ck_assert_ptr_nonnull(strstr(t, "\nCumulative training time after epoch 2: 11.00\n"));
    progress_train_end(&c.p);
    progress_test(&c.p, 0.34104, 0.87764);
    ck_assert_ptr_nonnull(strstr(capture_text(&c), "after epoch 2: 11.00\n"
                                                   "Cumulative training time: 11.00\n"
                                                   "Test loss: 0.3410\n"
                                                   "Test accuracy: 0.8776\n"));
    capture_end(&c);
}
END_TEST

START_TEST(long_epochs_print_about_ten_lines)
{
    capture c;
    capture_start(&c, 1, 0, 1, 60000);
    progress_epoch_begin(&c.p, 0, 469);
    for (size_t s = 1; s <= 469; s++) {
        fake_now += 0.1;
        progress_batch(&c.p, s, 0.5, 0.5);
    }
    progress_epoch_end(&c.p, 0.5, 0.5, 0.5, 0.5);
    const char *t = capture_text(&c);
    size_t lines = 0, bars = 0;
    for (const char *s = t; (s = strchr(s, '\n')) != NULL; s++)
        lines++;
    for (const char *s = t; (s = strstr(s, "/469 [")) != NULL; s++)
        bars++;
    ck_assert_msg(bars == 10, "%zu bar lines, want 9 + the end line:\n%s", bars, t);
    ck_assert_uint_eq(lines, 13);
    ck_assert_ptr_nonnull(strstr(t, " 47/469 [==>"));  /* the first past 10 % */
    ck_assert_ptr_nonnull(strstr(t, "423/469 [==="));  /* the first past 90 % */
    ck_assert_ptr_nonnull(strstr(t, "469/469 [==============================] - 47s 100ms/step"));
    ck_assert_ptr_nonnull(strstr(t, "\nImages/sec: 1279.32\n"));
    ck_assert_ptr_null(strchr(t, '\r'));
    capture_end(&c);
}
END_TEST

/* The text a terminal shows at the end: apply each '\r' (back to column 0) and '\n'. */
static char *screen(const char *raw)
{
    char *out = calloc(strlen(raw) + 1, 1), *line = out;
    size_t col = 0;
    for (const char *s = raw; *s; s++) {
        if (*s == '\r') {
            col = 0;
        } else if (*s == '\n') {
            line += strlen(line);
            *line++ = '\n';
            col = 0;
        } else {
            line[col++] = *s;
        }
    }
    /* Trailing blanks on a line are what overwrote a longer earlier draw. */
    char *r = out, *w = out;
    for (; *r; r++) {
        if (*r == '\n')
            while (w > out && w[-1] == ' ')
                w--;
        *w++ = *r;
    }
    *w = '\0';
    return out;
}

START_TEST(terminal_redraws_in_place)
{
    capture c;
    capture_start(&c, 1, 1, 3, 1792);
    run_epoch(&c.p, 0, 0.80);
    const char *raw = capture_text(&c);
    /* Redrawn after every batch (0.357 s apart, more than the 50 ms interval). */
    size_t cr = 0;
    for (const char *s = raw; (s = strchr(s, '\r')) != NULL; s++)
        cr++;
    ck_assert_uint_eq(cr, 15); /* 14 batches + the end-of-epoch form */
    ck_assert_ptr_nonnull(strstr(raw, "\r 1/14 [=>....."));
    char *seen = screen(raw);
    /* What stays on the screen: the header, the end line, the lab lines. */
    const char *end = strstr(EPOCH1_PLAIN, "14/14");
    char want[1024];
    snprintf(want, sizeof want, "Epoch 1/3\n%s", end);
    ck_assert_str_eq(seen, want);
    free(seen);
    /* A line printed mid-epoch starts on its own line; the bar carries on below it. */
    progress_epoch_begin(&c.p, 1, 14);
    fake_now += 0.357;
    progress_batch(&c.p, 1, 0.7, 0.6);
    progress_print(&c.p, "Epoch 2: finished gradual learning rate warmup to 0.02.");
    ck_assert_ptr_nonnull(strstr(capture_text(&c), "accuracy: 0.6000\nEpoch 2: finished"));
    capture_end(&c);
}
END_TEST

START_TEST(terminal_draws_at_most_every_50ms)
{
    capture c;
    capture_start(&c, 1, 1, 1, 100);
    progress_epoch_begin(&c.p, 0, 100);
    for (size_t s = 1; s <= 100; s++) {
        fake_now += 0.01; /* 10 ms per batch: a redraw every 5th batch, plus the tenths */
        progress_batch(&c.p, s, 1, 1);
    }
    size_t cr = 0;
    for (const char *s = capture_text(&c); (s = strchr(s, '\r')) != NULL; s++)
        cr++;
    ck_assert_msg(cr >= 15 && cr <= 30, "%zu redraws for 100 batches at 10 ms", cr);
    capture_end(&c);
}
END_TEST

START_TEST(shorter_redraw_blanks_the_rest)
{
    capture c;
    capture_start(&c, 1, 1, 1, 100);
    progress_epoch_begin(&c.p, 0, 10);
    fake_now = 1000; /* 1000 s per step: ETA 2:30:00 */
    progress_batch(&c.p, 1, 1, 1);
    size_t first = strlen(strrchr(capture_text(&c), '\r') + 1);
    fake_now = 1000.1; /* step 9 right after: 111 s per step, ETA 1:51, three characters fewer */
    progress_batch(&c.p, 9, 1, 1);
    const char *second = strrchr(capture_text(&c), '\r') + 1;
    ck_assert_msg(strstr(second, "ETA: 1:51 - loss") != NULL, "%s", second);
    ck_assert_msg(strlen(second) == first, "second draw %zu chars, first %zu: blanks missing",
                  strlen(second), first);
    ck_assert_msg(strcmp(second + strlen(second) - 3, "   ") == 0, "no blank padding: '%s'",
                  second);
    capture_end(&c);
}
END_TEST

START_TEST(early_stop_after_patience_epochs_above_target)
{
    double acc[] = {0.80, 0.86, 0.84, 0.85, 0.86, 0.87, 0.90};
    int decided[2][7] = {{0}};
    capture run[2]; /* a verbose rank and a quiet one, fed the same metrics */
    for (int v = 1; v >= 0; v--) {
        capture_start(&run[v], v, 0, 7, 1000);
        progress_set_early_stop(&run[v].p, 0.85, 2);
        for (int e = 0; e < 7; e++)
            if ((decided[v][e] = run_epoch(&run[v].p, e, acc[e])) != 0)
                break;
        progress_train_end(&run[v].p);
    }
    /* 0.86 then 0.84 resets; 0.85 is not above 0.85; 0.86, 0.87: two in a row at epoch 6. */
    for (int e = 0; e < 7; e++) {
        ck_assert_int_eq(decided[1][e], e == 5);
        ck_assert_int_eq(decided[0][e], decided[1][e]); /* printing does not change it */
    }
    const char *t = capture_text(&run[1]);
    ck_assert_ptr_nonnull(strstr(t, "Cumulative training time after epoch 6: 30.00\n"
                                    "Early stopping after epoch 6\n"
                                    "Cumulative training time: 30.00\n"));
    ck_assert_ptr_null(strstr(t, "Epoch 7/7"));
    ck_assert_str_eq(capture_text(&run[0]), ""); /* a non-verbose rank prints nothing */
    capture_end(&run[0]);
    capture_end(&run[1]);

    /* patience 1 stops at the first epoch above; patience 0 never stops. */
    capture c;
    capture_start(&c, 0, 0, 3, 10);
    progress_set_early_stop(&c.p, 0.5, 1);
    ck_assert_int_eq(run_epoch(&c.p, 0, 0.51), 1);
    progress_set_early_stop(&c.p, 0.5, 0);
    for (int e = 0; e < 3; e++)
        ck_assert_int_eq(run_epoch(&c.p, e, 0.99), 0);
    capture_end(&c);
    /* Without progress_set_early_stop: off. */
    capture_start(&c, 0, 0, 3, 10);
    for (int e = 0; e < 3; e++)
        ck_assert_int_eq(run_epoch(&c.p, e, 1.0), 0);
    capture_end(&c);
}
END_TEST

/* The trace file of this (forked) test process, read whole (malloc'd). */
static char *read_trace(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/pid-%ld.log", tmp_dir, (long)getpid());
    char *text = file_read(path, NULL);
    ck_assert_msg(text != NULL, "no trace file %s", path);
    return text;
}

START_TEST(printed_lines_and_epoch_metrics_are_traced)
{
    setenv("HVDLAB_TRACE", tmp_dir, 1);
    capture c;
    capture_start(&c, 1, 1, 3, 1792); /* a terminal: the trace still gets the plain lines */
    run_epoch(&c.p, 0, 0.80);
    progress_print(&c.p, "a \"quoted\" \\ line");
    char *tr = read_trace();
    /* Every line of the plain output appears as progress text="…", in order. */
    const char *at = tr;
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", EPOCH1_PLAIN);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        char want[600];
        snprintf(want, sizeof want, "event=progress rank=0 size=1 pid=%ld ", (long)getpid());
        const char *hit = strstr(at, want);
        ck_assert_msg(hit != NULL, "no more progress events for '%s'", line);
        const char *text = strstr(hit, " text=\"");
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(strncmp(text + 7, line, strlen(line)) == 0 && text[7 + strlen(line)] == '"',
                      "traced '%.120s', printed '%s'", text + 7, line);
        at = text;
    }
    ck_assert_ptr_nonnull(strstr(tr, " text=\"a \\\"quoted\\\" \\\\ line\"\n"));
    ck_assert_ptr_nonnull(strstr(tr, "event=metrics rank=0 size=1 "));
    ck_assert_ptr_nonnull(strstr(tr, " when=epoch epoch=1 loss=0.3165 accuracy=0.9028 "
                                     "val_loss=0.33 val_accuracy=0.8\n"));
    free(tr);
    capture_end(&c);
    /* A non-verbose rank traces its epoch metrics but no progress text. */
    capture q;
    capture_start(&q, 0, 0, 3, 1792);
    tr = read_trace();
    const size_t before = strlen(tr);
    free(tr);
    run_epoch(&q.p, 1, 0.81);
    tr = read_trace();
    ck_assert_ptr_null(strstr(tr + before, "event=progress"));
    ck_assert_ptr_nonnull(strstr(tr + before, " when=epoch epoch=2 "));
    free(tr);
    capture_end(&q);
}
END_TEST

/* A short fake run with the real clock, for the eye (make progress-demo): 14 steps of 60 ms,
 * validation above 0.85 after epochs 3 and 4, so patience 2 stops it after epoch 4 of 5. */
static int demo(void)
{
    progress p;
    progress_init(&p, 1, 5, 14 * 128);
    progress_set_early_stop(&p, 0.85, 2);
    double acc = 0.72;
    for (int e = 0; e < 5; e++) {
        progress_epoch_begin(&p, e, 14);
        for (size_t s = 1; s <= 14; s++) {
            nanosleep(&(struct timespec){0, 60 * 1000 * 1000}, NULL);
            acc += 0.004;
            progress_batch(&p, s, 1.2 - acc, acc);
        }
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        if (progress_epoch_end(&p, 1.2 - acc, acc, 1.19 - acc, acc + 0.01))
            break;
    }
    progress_train_end(&p);
    progress_test(&p, 1.2 - acc, acc + 0.005);
    return 0;
}

static int progress_body(void *verbose)
{
    progress p;
    progress_init(&p, *(int *)verbose, 1, 100);
    return 10 + p.tty;
}

/* In a child with HVDLAB_PROGRESS=value: progress_init on a rank that prints (verbose) or not.
 * The exit status (10 + the bar chosen, 0 or 1) and the child's stderr. */
static int progress_child(const char *value, int verbose, char *err, size_t errlen)
{
    return child_env_run("HVDLAB_PROGRESS", value, progress_body, &verbose, err, errlen);
}

/* HVDLAB_PROGRESS is bar, lines or auto; another value stopped nothing and meant auto, so a
 * student who wrote "line" or "plain" got a bar in their log file in silence. Every rank stops
 * with one line, the ones that print nothing too. */
START_TEST(progress_setting_spelled_otherwise_stops)
{
    char err[512];
    CK_EXPECT(progress_child("bar", 1, err, sizeof err) == 11, "bar: no bar: %s", err);
    CK_EXPECT(progress_child("lines", 1, err, sizeof err) == 10, "lines: a bar: %s", err);
    CK_EXPECT(progress_child("auto", 1, err, sizeof err) == 10, "auto: %s", err); /* a pipe */
    CK_EXPECT(progress_child("", 1, err, sizeof err) == 10, "empty: %s", err);
    const char *bad[] = {"line", "plain", "Bar", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int verbose = 0; verbose <= 1; verbose++) {
            char want[160];
            snprintf(want, sizeof want, "] HVDLAB_PROGRESS=%s: expected bar, lines or auto "
                     "(unset: auto, a bar where the output ends on a terminal)\n", bad[i]);
            int st = progress_child(bad[i], verbose, err, sizeof err);
            CK_EXPECT(st != 10 && st != 11 && strstr(err, want),
                      "HVDLAB_PROGRESS=%s, verbose %d: status %d, stderr: %s", bad[i], verbose,
                      st, err);
        }
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("progress");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, tmp_test_setup, tmp_test_teardown);
    tcase_add_test(tc, bar_matches_keras);
    tcase_add_test(tc, eta_step_time_and_values_match_keras);
    tcase_add_test(tc, plain_epoch_byte_for_byte);
    tcase_add_test(tc, long_epochs_print_about_ten_lines);
    tcase_add_test(tc, terminal_redraws_in_place);
    tcase_add_test(tc, terminal_draws_at_most_every_50ms);
    tcase_add_test(tc, shorter_redraw_blanks_the_rest);
    tcase_add_test(tc, early_stop_after_patience_epochs_above_target);
    tcase_add_test(tc, printed_lines_and_epoch_metrics_are_traced);
    tcase_add_test(tc, progress_setting_spelled_otherwise_stops);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--demo") == 0)
        return demo();
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
