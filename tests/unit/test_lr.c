/* test_lr.c — LR scaling, Horovod's warmup, step schedules (staircase and smooth), the lab's
 * schedule and its warmup message, momentum correction; values computed by hand.
 *
 * Warmup example: lr 0.1, 4 workers, 5 warmup epochs, 10 steps per epoch, so
 * lr(e) = 0.025·(0.6·e + 1) with e = epoch + (batch + 1)/10. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "optim/lr.h"

#define REL 1e-6 /* float results of double formulas */

static void expect_lr(float got, double want, const char *what, int epoch, int batch)
{
    ck_assert_msg(fabs((double)got - want) <= REL * fabs(want),
                  "%s at epoch %d batch %d: got %.9g want %.9g", what, epoch, batch, (double)got, want);
}

START_TEST(scaled_by_size)
{
    ck_assert_float_eq(lr_scaled(0.01f, 4), 0.04f);
    expect_lr(lr_scaled(0.0125f, 3), 0.0375, "lr_scaled", 0, 0);
    ck_assert_float_eq(lr_scaled(0.01f, 1), 0.01f);
}
END_TEST

START_TEST(warmup_curve_by_hand)
{
    const struct {
        int epoch, batch;
        double want;
    } pts[] = {
        {0, 0, 0.0265},  /* e = 0.1: 0.025·1.06 — one batch in, not lr/size itself */
        {0, 9, 0.04},    /* e = 1 */
        {2, 4, 0.0625},  /* e = 2.5 */
        {4, 8, 0.0985},  /* e = 4.9 */
        {4, 9, 0.1},     /* e = 5: the end of epoch warmup − 1 */
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        expect_lr(lr_warmup_at(0.1f, 4, 5, 10, pts[i].epoch, pts[i].batch), pts[i].want, "warmup",
                  pts[i].epoch, pts[i].batch);
    /* strictly increasing batch after batch */
    float prev = 0.0f;
    for (int e = 0; e < 5; e++)
        for (int b = 0; b < 10; b++) {
            float lr = lr_warmup_at(0.1f, 4, 5, 10, e, b);
            ck_assert_msg(lr > prev, "warmup not increasing at epoch %d batch %d", e, b);
            prev = lr;
        }
}
END_TEST

/* The last warmup batch gives exactly lr (bit for bit), for many shapes. */
START_TEST(warmup_ends_exactly_at_lr)
{
    const float lrs[] = {0.1f, 0.05f, 0.0125f, 0.37f, 3e-4f};
    for (size_t l = 0; l < sizeof lrs / sizeof lrs[0]; l++)
        for (int size = 1; size <= 8; size++)
            for (int w = 1; w <= 6; w++)
                for (int spe = 1; spe <= 60; spe += 7) {
                    float got = lr_warmup_at(lrs[l], size, w, spe, w - 1, spe - 1);
                    ck_assert_msg(got == lrs[l], "lr %g size %d warmup %d spe %d: ends at %.9g",
                                  (double)lrs[l], size, w, spe, (double)got);
                }
}
END_TEST

START_TEST(warmup_degenerate_cases)
{
    ck_assert_float_eq(lr_warmup_at(0.1f, 1, 5, 10, 0, 0), 0.1f); /* one worker: no ramp */
    ck_assert_float_eq(lr_warmup_at(0.1f, 4, 0, 10, 0, 0), 0.1f); /* no warmup epochs */
}
END_TEST

START_TEST(schedule_constant_is_staircase_on_start_end)
{
    lr_schedule s = {.start_epoch = 5, .end_epoch = 15, .multiplier = 0.1, .staircase = 0};
    float lr = -1.0f;
    ck_assert_int_eq(lr_schedule_apply(&s, 0.4f, 4, 0, 10, &lr), 0); /* before start */
    ck_assert_float_eq(lr, -1.0f);
    ck_assert_int_eq(lr_schedule_apply(&s, 0.4f, 5, 0, 10, &lr), 1); /* first batch of start */
    expect_lr(lr, 0.04, "step", 5, 0);
    lr = -1.0f;
    /* a constant forces staircase even when staircase = 0 (Horovod <= 0.22) */
    ck_assert_int_eq(lr_schedule_apply(&s, 0.4f, 5, 3, 10, &lr), 0);
    ck_assert_int_eq(lr_schedule_apply(&s, 0.4f, 14, 0, 10, &lr), 1); /* last epoch inside */
    ck_assert_int_eq(lr_schedule_apply(&s, 0.4f, 15, 0, 10, &lr), 0); /* end is exclusive */
    lr_schedule open = {.start_epoch = 35, .end_epoch = -1, .multiplier = 1e-3};
    ck_assert_int_eq(lr_schedule_apply(&open, 0.4f, 1000, 0, 10, &lr), 1);
    expect_lr(lr, 4e-4, "open-ended", 1000, 0);
}
END_TEST

static double halve(double epoch, void *ctx)
{
    (void)ctx;
    return pow(0.5, epoch);
}

/* multiplier 0.5^epoch from epoch 1: staircase uses the whole epoch at its first batch;
 * smooth uses epoch + batch/steps before every batch (batch/steps, not (batch+1)/steps). */
START_TEST(schedule_function_staircase_vs_smooth)
{
    lr_schedule st = {.start_epoch = 1, .end_epoch = -1, .fn = halve, .staircase = 1};
    lr_schedule sm = st;
    sm.staircase = 0;
    float lr = 0.0f;
    ck_assert_int_eq(lr_schedule_apply(&st, 1.0f, 2, 0, 4, &lr), 1);
    expect_lr(lr, 0.25, "staircase", 2, 0);
    ck_assert_int_eq(lr_schedule_apply(&st, 1.0f, 2, 2, 4, &lr), 0);
    ck_assert_int_eq(lr_schedule_apply(&sm, 1.0f, 2, 2, 4, &lr), 1);
    expect_lr(lr, pow(0.5, 2.5), "smooth", 2, 2);
    ck_assert_int_eq(lr_schedule_apply(&sm, 1.0f, 2, 0, 4, &lr), 1);
    expect_lr(lr, 0.25, "smooth at batch 0", 2, 0);
    ck_assert_int_eq(lr_schedule_apply(&sm, 1.0f, 0, 3, 4, &lr), 0); /* before start */
}
END_TEST

START_TEST(momentum_correction_ratio)
{
    ck_assert_float_eq_tol(lr_corrected_momentum(0.9f, 0.05f, 0.1f), 0.45f, 1e-7f);
    ck_assert_float_eq_tol(lr_corrected_momentum(0.9f, 0.0265f, 0.025f), 0.954f, 1e-6f);
    ck_assert_float_eq(lr_corrected_momentum(0.9f, 0.1f, 0.1f), 0.9f);  /* unchanged LR */
    ck_assert_float_eq(lr_corrected_momentum(0.9f, 0.1f, 0.0f), 0.9f);  /* first step */
}
END_TEST

/* The lab: base 0.01 on 4 workers → 0.04; warmup 5 epochs of 10 steps. */
START_TEST(lab_schedule_by_hand)
{
    lr_lab s;
    char err[128];
    ck_assert_int_eq(lr_lab_init(&s, 0.04f, 4, 5, 10, 0, err, sizeof err), 0);
    const struct {
        int epoch, batch;
        double want;
    } pts[] = {
        {0, 0, 0.0106}, {2, 4, 0.025}, {4, 9, 0.04},                  /* warmup */
        {5, 0, 0.04},   {5, 7, 0.04},  {14, 9, 0.04},                 /* ×1 until 15 */
        {15, 0, 0.004}, {15, 9, 0.004}, {24, 9, 0.004},               /* ×0.1 until 25 */
        {25, 0, 4e-4},  {34, 9, 4e-4},                                /* ×0.01 until 35 */
        {35, 0, 4e-5},  {99, 3, 4e-5},                                /* ×0.001 after */
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        expect_lr(lr_lab_at(&s, pts[i].epoch, pts[i].batch), pts[i].want, "lab", pts[i].epoch,
                  pts[i].batch);
    ck_assert_float_eq(lr_lab_at(&s, 4, 9), 0.04f); /* exactly */
}
END_TEST

/* Callbacks run in the lab's order (warmup, then the steps); the last to adjust wins. With a
 * warmup longer than 15 epochs the 0.1 step adjusts at each epoch's first batch and warmup
 * takes over again from batch 1, as under Keras. Without warmup the steps start at epoch 0. */
START_TEST(lab_schedule_odd_warmups)
{
    lr_lab s;
    ck_assert_int_eq(lr_lab_init(&s, 0.04f, 4, 20, 10, 0, NULL, 0), 0);
    expect_lr(lr_lab_at(&s, 16, 0), 0.004, "warmup 20", 16, 0);
    expect_lr(lr_lab_at(&s, 16, 1), 0.01 * ((16.2 * 3.0) / 20.0 + 1.0), "warmup 20", 16, 1);
    expect_lr(lr_lab_at(&s, 20, 5), 0.004, "warmup 20", 20, 5);
    ck_assert_int_eq(lr_lab_init(&s, 0.04f, 4, 0, 10, 0, NULL, 0), 0);
    expect_lr(lr_lab_at(&s, 0, 0), 0.04, "no warmup", 0, 0);
    expect_lr(lr_lab_at(&s, 15, 3), 0.004, "no warmup", 15, 3);
    ck_assert_int_eq(lr_lab_init(&s, 0.01f, 1, 5, 10, 0, NULL, 0), 0);
    expect_lr(lr_lab_at(&s, 0, 0), 0.01, "one worker", 0, 0);
}
END_TEST

static const char *capture_epoch_end(lr_lab *s, int epoch, int *printed)
{
    static char buf[256];
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    if (s->out)
        s->out = f;
    *printed = lr_lab_epoch_end(s, epoch);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    if (s->out)
        s->out = stdout;
    return buf;
}

START_TEST(lab_warmup_message_once)
{
    lr_lab s;
    ck_assert_int_eq(lr_lab_init(&s, 0.04f, 4, 5, 10, 1, NULL, 0), 0);
    int printed;
    const char *out = capture_epoch_end(&s, 3, &printed);
    ck_assert_int_eq(printed, 0);
    ck_assert_str_eq(out, "");
    out = capture_epoch_end(&s, 4, &printed); /* 0-based epoch 4 = Keras "Epoch 5" */
    ck_assert_int_eq(printed, 1);
    ck_assert_str_eq(out, "\nEpoch 5: finished gradual learning rate warmup to 0.04.\n");
    out = capture_epoch_end(&s, 4, &printed);
    ck_assert_int_eq(printed, 0);
    ck_assert_str_eq(out, "");
    /* a quiet rank prints nothing */
    ck_assert_int_eq(lr_lab_init(&s, 0.04f, 4, 5, 10, 0, NULL, 0), 0);
    ck_assert_ptr_null(s.out);
    ck_assert_int_eq(lr_lab_epoch_end(&s, 4), 0);
    /* no warmup, no message */
    ck_assert_int_eq(lr_lab_init(&s, 0.04f, 4, 0, 10, 1, NULL, 0), 0);
    out = capture_epoch_end(&s, 0, &printed);
    ck_assert_int_eq(printed, 0);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(lab_init_rejects_bad_arguments)
{
    lr_lab s;
    char err[128];
    ck_assert_int_eq(lr_lab_init(&s, 0.0f, 4, 5, 10, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "learning rate"), "%s", err);
    /* --base-lr times the ranks beyond a float's range: inf would pass "> 0" */
    ck_assert_int_eq(lr_lab_init(&s, INFINITY, 4, 5, 10, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "learning rate inf must be finite"), "%s", err);
    ck_assert_int_eq(lr_lab_init(&s, NAN, 4, 5, 10, 0, err, sizeof err), -1);
    ck_assert_int_eq(lr_lab_init(&s, 0.1f, 0, 5, 10, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "size 0"), "%s", err);
    ck_assert_int_eq(lr_lab_init(&s, 0.1f, 2, -1, 10, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "warmup_epochs -1"), "%s", err);
    ck_assert_int_eq(lr_lab_init(&s, 0.1f, 2, 5, 0, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "steps_per_epoch 0"), "%s", err);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("lr");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, scaled_by_size);
    tcase_add_test(tc, warmup_curve_by_hand);
    tcase_add_test(tc, warmup_ends_exactly_at_lr);
    tcase_add_test(tc, warmup_degenerate_cases);
    tcase_add_test(tc, schedule_constant_is_staircase_on_start_end);
    tcase_add_test(tc, schedule_function_staircase_vs_smooth);
    tcase_add_test(tc, momentum_correction_ratio);
    tcase_add_test(tc, lab_schedule_by_hand);
    tcase_add_test(tc, lab_schedule_odd_warmups);
    tcase_add_test(tc, lab_warmup_message_once);
    tcase_add_test(tc, lab_init_rejects_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
