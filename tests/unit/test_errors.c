/* test_errors.c — what users see when things go wrong: runs prog_errors under a child mpirun and
 * checks the one-line message, the non-zero exit and that nothing hangs. Also the world of one
 * before hvd_init. Serial: this process never initialises MPI itself. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/json_check.h"
#include "lib/mpirun_cmd.h"

static char prog[1024];

typedef struct {
    int status; /* exit status of the child job, 124 for a timeout */
    char out[16384];
} job;

/* Runs `env mpirun -n np prog_errors args` with a 60 s bound; stdout and stderr together. */
static job run_job(const char *env, int np, const char *args)
{
    char dflt[128];
    const char *mpirun = mpirun_cmd(dflt, sizeof dflt);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env %s timeout 60 %s -n %d %s %s 2>&1", env, mpirun, np, prog,
             args);
    job j = {.status = -1};
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(j.out, 1, sizeof j.out - 1, p);
    j.out[n] = '\0';
    int st = pclose(p);
    j.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return j;
}

static void expect_failure_line(const char *scenario, const char *line)
{
    job j = run_job("HVD_CHECK_COLLECTIVES=1", 2, scenario);
    ck_assert_msg(j.status != 124, "%s: the job hung (timeout)\n%s", scenario, j.out);
    ck_assert_msg(j.status != 0, "%s: exit status 0, expected a failure\n%s", scenario, j.out);
    ck_assert_msg(strstr(j.out, line) != NULL, "%s: missing line\n  %s\nin output:\n%s", scenario,
                  line, j.out);
    ck_assert_msg(json_count(j.out, "hvdlab: error:") == 1, "%s: %zu error lines, want one\n%s",
                  scenario, json_count(j.out, "hvdlab: error:"), j.out);
}

START_TEST(mismatched_ops_named)
{
    expect_failure_line("mismatch-op",
                        "hvdlab: error: collective mismatch: rank 0 called allreduce(name=\"a\", "
                        "count=10) but rank 1 called broadcast(name=\"a\", count=10, root=0)");
}
END_TEST

START_TEST(mismatched_counts_named)
{
    expect_failure_line("mismatch-count", "rank 0 called allreduce(name=\"grad\", count=10) but "
                                          "rank 1 called allreduce(name=\"grad\", count=12)");
}
END_TEST

START_TEST(mismatched_names_named)
{
    expect_failure_line("mismatch-name", "rank 0 called allreduce(name=\"grad/conv1\", count=10) "
                                         "but rank 1 called allreduce(name=\"grad/conv2\", "
                                         "count=10)");
}
END_TEST

START_TEST(mismatched_roots_named)
{
    expect_failure_line("mismatch-root", "rank 0 called broadcast(name=\"weights\", count=10, "
                                         "root=0) but rank 1 called broadcast(name=\"weights\", "
                                         "count=10, root=1)");
}
END_TEST

START_TEST(rank_leaving_early_named)
{
    expect_failure_line("early-shutdown", "rank 0 called allreduce(name=\"loss\", count=10) but "
                                          "rank 1 called shutdown()");
}
END_TEST

START_TEST(agreeing_program_passes_checks)
{
    job j = run_job("HVD_CHECK_COLLECTIVES=1", 3, "agree");
    ck_assert_msg(j.status == 0 && strstr(j.out, "agree: done"), "status %d\n%s", j.status, j.out);
}
END_TEST

START_TEST(fatal_on_one_rank_stops_all)
{
    /* No checks: rank 0 sits in an allreduce that rank 1 never joins; fatal_error must end both. */
    job j = run_job("HVD_CHECK_COLLECTIVES=0", 2, "fatal-one-rank");
    ck_assert_msg(j.status != 124, "the job hung\n%s", j.out);
    ck_assert_msg(j.status != 0, "exit status 0\n%s", j.out);
    ck_assert_msg(strstr(j.out, "hvdlab: error: [rank 1] cannot open checkpoint "
                                "/nonexistent/ckpt-3.bin\n"),
                  "missing the error line\n%s", j.out);
}
END_TEST

START_TEST(bad_broadcast_root_named)
{
    job j = run_job("HVD_CHECK_COLLECTIVES=0", 2, "bad-root");
    ck_assert_msg(j.status != 0 && j.status != 124, "status %d\n%s", j.status, j.out);
    ck_assert_msg(strstr(j.out, "] broadcast \"weights\": root 5 is not a rank (size 2)\n"), "%s",
                  j.out);
}
END_TEST

START_TEST(bad_settings_named)
{
    job j = run_job("HVD_FUSION_THRESHOLD=lots", 2, "init-only");
    ck_assert_msg(j.status != 0 && j.status != 124, "status %d\n%s", j.status, j.out);
    ck_assert_msg(strstr(j.out, "HVD_FUSION_THRESHOLD=lots: expected a byte count"), "%s", j.out);
    j = run_job("HVD_COMPRESSION=fp8", 1, "init-only");
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVD_COMPRESSION=fp8: expected none or fp16"),
                  "%s", j.out);
    j = run_job("HVD_TIMELINE=/nonexistent-dir/t.json", 2, "init-only");
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVD_TIMELINE=/nonexistent-dir/t.json: cannot "
                                                 "create"), "%s", j.out);
    j = run_job("HVD_FUSION_THRESHOLD=32M HVD_COMPRESSION=fp16", 2, "init-only");
    ck_assert_msg(j.status == 0, "valid settings refused: status %d\n%s", j.status, j.out);
}
END_TEST

START_TEST(killed_job_leaves_loadable_timeline)
{
    char dir[] = "/tmp/hvdlab-kill-XXXXXX", args[256], path[200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.json", dir);
    snprintf(args, sizeof args, "timeline-kill %s", path);
    job j = run_job("HVD_CHECK_COLLECTIVES=0", 2, args);
    ck_assert_msg(j.status != 0 && j.status != 124, "status %d\n%s", j.status, j.out);
    size_t len, where;
    char *t = file_read(path, &len);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(json_validate(t, len, &where) == 0, "invalid JSON at %zu of %zu", where, len);
    /* it really died midway: 34 of 40 allreduces made it in */
    ck_assert_uint_eq(json_count(t, "\"name\": \"MPI_ALLREDUCE\""), 34);
    free(t);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(binding_report)
{
    job j = run_job("HVDLAB_REPORT_BINDINGS=1", 2, "pin");
    ck_assert_msg(j.status == 0, "status %d\n%s", j.status, j.out);
    ck_assert_msg(strstr(j.out, "hvdlab: rank 0 (local 0 of 2) pinned to core") &&
                      strstr(j.out, "hvdlab: rank 1 (local 1 of 2) pinned to core"),
                  "%s", j.out);
}
END_TEST

START_TEST(world_of_one_before_init)
{
    ck_assert_int_eq(hvd_is_initialized(), 0);
    ck_assert_int_eq(hvd_rank(), 0);
    ck_assert_int_eq(hvd_size(), 1);
    ck_assert_int_eq(hvd_local_rank(), 0);
    ck_assert_int_eq(hvd_local_size(), 1);
    float v[3] = {1.5f, -2.0f, 3.25f};
    hvd_allreduce(v, 3, HVD_AVERAGE, "x");
    hvd_allreduce(v, 3, HVD_SUM, "x");
    hvd_broadcast(v, 3, 0, "x");
    hvd_barrier();
    ck_assert_msg(v[0] == 1.5f && v[1] == -2.0f && v[2] == 3.25f, "v = {%g, %g, %g}", v[0], v[1],
                  v[2]);
    size_t total, counts[1];
    float *all = hvd_allgather(v, 3, &total, counts, "g");
    ck_assert_uint_eq(total, 3);
    ck_assert_uint_eq(counts[0], 3);
    ck_assert_msg(all[0] == 1.5f && all[1] == -2.0f && all[2] == 3.25f, "gathered {%g, %g, %g}",
                  all[0], all[1], all[2]);
    free(all);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, world_of_one_before_init);
    tcase_add_test(tc, mismatched_ops_named);
    tcase_add_test(tc, mismatched_counts_named);
    tcase_add_test(tc, mismatched_names_named);
    tcase_add_test(tc, mismatched_roots_named);
    tcase_add_test(tc, rank_leaving_early_named);
    tcase_add_test(tc, agreeing_program_passes_checks);
    tcase_add_test(tc, fatal_on_one_rank_stops_all);
    tcase_add_test(tc, bad_broadcast_root_named);
    tcase_add_test(tc, bad_settings_named);
    tcase_add_test(tc, killed_job_leaves_loadable_timeline);
    tcase_add_test(tc, binding_report);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    char self[1024];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(prog, sizeof prog, "%s/../progs/prog_errors", dirname(self));
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
