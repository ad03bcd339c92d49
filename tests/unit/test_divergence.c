/* test_divergence.c — a NaN or Inf in the gradient, or in one rank's loss, stops every rank at
 * that step with one line naming the epoch, the step, the LR in use and the cure. Runs
 * prog_diverge under a child mpirun; serial itself. */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "lib/mpi_job.h"

static char prog[1024];

/* The job stopped (no timeout, non-zero) with `line` on every one of np ranks or, when Open MPI's
 * abort took a rank down before it printed, on at least one; and no other error line. */
static void expect_stop(int np, const char *args, const char *line)
{
    char launch[2048];
    snprintf(launch, sizeof launch, "-n %d %s %s", np, prog, args);
    mpi_job *j = mpi_job_run("", launch);
    ck_assert_msg(j->status != 124, "%s: the job hung\n%s", args, j->out);
    ck_assert_msg(j->status != 0, "%s: exit status 0, expected a stop\n%s", args, j->out);
    size_t lines = mpi_job_count(j, "hvdlab: error:"), named = mpi_job_count(j, line);
    ck_assert_msg(named >= 1, "%s: missing line\n  %s\nin output:\n%s", args, line, j->out);
    ck_assert_msg(lines == named, "%s: %zu error lines, %zu of them the expected one\n%s", args,
                  lines, named, j->out);
    ck_assert_msg(!strstr(j->out, "prog_diverge: done"), "%s: training went on\n%s", args,
                  j->out);
    mpi_job_free(j);
}

START_TEST(finite_run_passes)
{
    char launch[2048];
    snprintf(launch, sizeof launch, "-n 2 %s finite", prog);
    mpi_job *j = mpi_job_run("", launch);
    ck_assert_msg(j->status == 0 && strstr(j->out, "prog_diverge: done"), "status %d\n%s",
                  j->status, j->out);
    mpi_job_free(j);
}
END_TEST

START_TEST(nan_loss_on_one_rank_stops_all)
{
    expect_stop(2, "nan-input 1",
                "] training diverged at epoch 1, step 2 of 4: the averaged gradient holds ");
    expect_stop(3, "nan-input 2", "] training diverged at epoch 1, step 2 of 4: ");
}
END_TEST

START_TEST(message_names_lr_and_cure)
{
    expect_stop(2, "nan-input 0",
                "; learning rate 0.02 in use (--base-lr 0.01 x 2 ranks, no warmup); warm up to "
                "it with --warmup-epochs (the lab uses 5) or use a smaller --base-lr\n");
}
END_TEST

START_TEST(during_warmup_the_cure_is_a_smaller_lr)
{
    expect_stop(2, "warmup", "] training diverged at epoch 2, step 1 of 4: ");
    expect_stop(2, "warmup", ", warming up to --base-lr 0.01 x 2 ranks over 3 epochs; use a "
                             "smaller --base-lr\n");
}
END_TEST

START_TEST(without_a_schedule_the_step_count_is_named)
{
    expect_stop(2, "inf-grad", "] training diverged after 0 optimizer steps: the averaged "
                               "gradient holds 1 NaN or Inf values of ");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("divergence");
    TCase *tc = tcase_create("stop");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, finite_run_passes);
    tcase_add_test(tc, nan_loss_on_one_rank_stops_all);
    tcase_add_test(tc, message_names_lr_and_cure);
    tcase_add_test(tc, during_warmup_the_cure_is_a_smaller_lr);
    tcase_add_test(tc, without_a_schedule_the_step_count_is_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    char self[1024];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(prog, sizeof prog, "%s/../progs/prog_diverge", dirname(self));
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
