/* test_stall.c — the stall inspector, seen from outside: runs prog_errors under a child mpirun
 * with short thresholds (warn after 1 s, stop after 3 s) and checks the exact lines, that every
 * rank ends non-zero (none prints "finished") and how long the job took. Serial: this process
 * never initialises MPI itself. */
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/timer.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/json_check.h"
#include "lib/mpirun_cmd.h"

#define STALL_ENV "HVD_STALL_CHECK_TIME_SECONDS=1 HVD_STALL_SHUTDOWN_TIME_SECONDS=3"

static char prog[1024];

typedef struct {
    int status; /* exit status of the child job, 124 (137 when it ignored SIGTERM) for a timeout */
    double secs;
    char out[16384];
} job;

/* `env ENV mpirun -n np prog_errors args` bounded by 30 s (a SIGKILL 2 s later: a hung mpirun
 * may ignore the SIGTERM); stdout and stderr together, written to a file as a batch system's
 * log is (mpirun's teardown races show more often so than into a pipe). */
static job run_job(const char *env, int np, const char *args)
{
    char dflt[128], cmd[4096], log[] = "/tmp/test_stall.XXXXXX";
    const char *mpirun = mpirun_cmd(dflt, sizeof dflt);
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "env %s timeout -k 2 30 %s -n %d %s %s >%s 2>&1 </dev/null", env,
             mpirun, np, prog, args, log);
    job j = {.status = -1};
    double t0 = timer_seconds();
    int st = system(cmd);
    j.secs = timer_seconds() - t0;
    fd = open(log, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    fd_read_text(fd, j.out, sizeof j.out);
    unlink(log);
    j.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return j;
}

static int hung(const job *j) { return j->status == 124 || j->status == 137; }

/* line is a whole line of out. */
static int has_line(const char *out, const char *line)
{
    size_t len = strlen(line);
    for (const char *p = strstr(out, line); p; p = strstr(p + 1, line))
        if ((p == out || p[-1] == '\n') && p[len] == '\n')
            return 1;
    return 0;
}

/* A job stopped by the inspector: no hang, a non-zero exit, the line error, exactly `warnings`
 * warning lines (warning, when given, among them) and one error line, and no rank finished. */
static job expect_stopped(const char *env, const char *scenario, int np, size_t warnings,
                          const char *warning, const char *error)
{
    job j = run_job(env, np, scenario);
    ck_assert_msg(!hung(&j), "%s: the job hung (timeout)\n%s", scenario, j.out);
    ck_assert_msg(j.status != 0, "%s: exit status 0\n%s", scenario, j.out);
    ck_assert_msg(!warning || has_line(j.out, warning), "%s: missing line\n  %s\nin output:\n%s",
                  scenario, warning ? warning : "", j.out);
    ck_assert_msg(has_line(j.out, error), "%s: missing line\n  %s\nin output:\n%s", scenario,
                  error, j.out);
    ck_assert_msg(json_count(j.out, "hvdlab: warning:") == warnings &&
                      json_count(j.out, "hvdlab: error:") == 1,
                  "%s: want %zu warning(s) and one error line\n%s", scenario, warnings, j.out);
    ck_assert_msg(!strstr(j.out, "finished"), "%s: a rank finished\n%s", scenario, j.out);
    return j;
}

/* A stall that never resolves: one warning, then one error line once the shutdown time is up,
 * and every rank gone non-zero within a few seconds of it. */
static void expect_stall_env(const char *env, const char *scenario, int np, const char *warning,
                             const char *error)
{
    job j = expect_stopped(env, scenario, np, 1, warning, error);
    ck_assert_msg(j.secs >= 3.0 && j.secs < 15.0, "%s: took %.1f s, want 3 s and a little\n%s",
                  scenario, j.secs, j.out);
}

static void expect_stall(const char *scenario, int np, const char *warning, const char *error)
{
    expect_stall_env(STALL_ENV, scenario, np, warning, error);
}

START_TEST(stopped_rank_named)
{
    expect_stall("stop-rank 1", 3,
                 "hvdlab: warning: stall: allreduce(name=\"grad\", count=10) has waited 1 s "
                 "(HVD_STALL_CHECK_TIME_SECONDS): ranks reached: 0, 2; missing ranks: 1 (not "
                 "arrived)",
                 "hvdlab: error: [rank 0] stall: allreduce(name=\"grad\", count=10) has waited 3 s "
                 "(HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks reached: 0, 2; missing ranks: 1 (not "
                 "arrived); stopping every rank");
}
END_TEST

START_TEST(stopped_rank_named_hierarchical)
{
    /* The same on the hierarchical path: test hosts {0, 1} and {2} (coll/hier.h). */
    expect_stall_env(STALL_ENV " HVD_HIERARCHICAL_ALLREDUCE=1 HVD_HOST_GROUP_SIZE=2",
                     "stop-rank 1", 3,
                     "hvdlab: warning: stall: allreduce(name=\"grad\", count=10) has waited 1 s "
                     "(HVD_STALL_CHECK_TIME_SECONDS): ranks reached: 0, 2; missing ranks: 1 (not "
                     "arrived)",
                     "hvdlab: error: [rank 0] stall: allreduce(name=\"grad\", count=10) has "
                     "waited 3 s (HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks reached: 0, 2; missing "
                     "ranks: 1 (not arrived); stopping every rank");
}
END_TEST

START_TEST(stopped_coordinator_named)
{
    /* Rank 0 cannot speak: rank 1 does, at the times the settings name (1 s, 3 s) */
    expect_stall("stop-rank 0", 2,
                 "hvdlab: warning: [rank 1] stall: allreduce(name=\"grad\", count=10) has waited "
                 "1 s for rank 0, the coordinator, which has not reached it",
                 "hvdlab: error: [rank 1] stall: allreduce(name=\"grad\", count=10) has waited "
                 "3 s for rank 0, the coordinator, which has not reached it; stopping every rank");
}
END_TEST

START_TEST(broadcast_against_allreduce_named)
{
    expect_stall("mismatch-op", 2,
                 "hvdlab: warning: stall: allreduce(name=\"a\", count=10) has waited 1 s "
                 "(HVD_STALL_CHECK_TIME_SECONDS): ranks reached: 0; missing ranks: 1 (in "
                 "broadcast(name=\"a\", count=10, root=0))",
                 "hvdlab: error: [rank 0] stall: allreduce(name=\"a\", count=10) has waited 3 s "
                 "(HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks reached: 0; missing ranks: 1 (in "
                 "broadcast(name=\"a\", count=10, root=0)); stopping every rank");
}
END_TEST

START_TEST(different_counts_named)
{
    expect_stall("mismatch-count", 2,
                 "hvdlab: warning: stall: allreduce(name=\"grad\", count=10) has waited 1 s "
                 "(HVD_STALL_CHECK_TIME_SECONDS): ranks reached: 0; missing ranks: 1 (in "
                 "allreduce(name=\"grad\", count=12))",
                 "hvdlab: error: [rank 0] stall: allreduce(name=\"grad\", count=10) has waited 3 s "
                 "(HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks reached: 0; missing ranks: 1 (in "
                 "allreduce(name=\"grad\", count=12)); stopping every rank");
}
END_TEST

START_TEST(skipped_call_named)
{
    expect_stall("skip-call", 2,
                 "hvdlab: warning: stall: allreduce(name=\"b\", count=10) has waited 1 s "
                 "(HVD_STALL_CHECK_TIME_SECONDS): ranks reached: 0; missing ranks: 1 (in "
                 "allreduce(name=\"c\", count=10))",
                 "hvdlab: error: [rank 0] stall: allreduce(name=\"b\", count=10) has waited 3 s "
                 "(HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks reached: 0; missing ranks: 1 (in "
                 "allreduce(name=\"c\", count=10)); stopping every rank");
}
END_TEST

/* A rank in shutdown() can join no other call: the job stops at once, before the stall's first
 * warning (1 s), with one line, every rank non-zero (Horovod shuts every rank down too). */
static void expect_stop_at_once_env(const char *env, const char *scenario, int np,
                                    const char *error)
{
    job j = expect_stopped(env, scenario, np, 0, NULL, error);
    /* no warning: the job stopped before the stall's first second; the time, start-up and
     * teardown included, only has to stay below the stall's 3 s stop with a margin for load */
    ck_assert_msg(j.secs < 10.0, "%s: took %.1f s\n%s", scenario, j.secs, j.out);
}

static void expect_stop_at_once(const char *scenario, int np, const char *error)
{
    expect_stop_at_once_env(STALL_ENV, scenario, np, error);
}

/* The same without the entry handshake: the watchdog counts the calls (watchdog.h). */
static void expect_stop_at_once_unchecked(const char *scenario, int np, const char *error)
{
    expect_stop_at_once_env(STALL_ENV " HVD_STALL_CHECK_DISABLE=1", scenario, np, error);
}

START_TEST(rank_leaving_early_named)
{
    expect_stop_at_once("early-shutdown", 2,
                        "hvdlab: error: [rank 0] rank 1 has shut down (hvd_shutdown) while rank 0 "
                        "is in allreduce(name=\"loss\", count=10), which rank 1 will never join "
                        "(every rank must make the same collective calls, and none once another "
                        "rank has shut down); stopping every rank");
}
END_TEST

START_TEST(coordinator_leaving_early_named)
{
    expect_stop_at_once("early-shutdown-0", 3,
                        "hvdlab: error: [rank 0] rank 0 has shut down (hvd_shutdown) while rank 1 "
                        "is in allreduce(name=\"loss\", count=10), which rank 0 will never join "
                        "(every rank must make the same collective calls, and none once another "
                        "rank has shut down); stopping every rank");
}
END_TEST

START_TEST(rank_leaving_after_calls_named)
{
    expect_stop_at_once("early-shutdown-late", 3,
                        "hvdlab: error: [rank 0] rank 1 has shut down (hvd_shutdown) while rank 0 "
                        "is in allreduce(name=\"loss\", count=10), which rank 1 will never join "
                        "(every rank must make the same collective calls, and none once another "
                        "rank has shut down); stopping every rank");
}
END_TEST

/* HVD_STALL_CHECK_DISABLE=1 turns the handshake off, not the shutdown rule: the watchdog stops
 * the job instead of a hang (where rank 0 left, the rank that waits says it). */
START_TEST(rank_leaving_early_named_without_the_check)
{
    const char *line = "hvdlab: error: [rank 0] rank 1 has shut down (hvd_shutdown) while rank 0 "
                       "is in allreduce(name=\"loss\", count=10), which rank 1 will never join "
                       "(every rank must make the same collective calls, and none once another "
                       "rank has shut down); stopping every rank";
    expect_stop_at_once_unchecked("early-shutdown", 2, line);
    expect_stop_at_once_unchecked("early-shutdown-late", 3, line);
    /* Four times: rank 2 shuts down cleanly while rank 1 stops the job. Were rank 2 let into
     * MPI_Finalize by then, Open MPI 4.1's mpirun would hang in about one run of four
     * (watchdog_await_counts keeps it out). */
    for (int i = 0; i < 4; i++)
        expect_stop_at_once_unchecked("early-shutdown-0", 3,
                                      "hvdlab: error: [rank 1] rank 0 has shut down "
                                      "(hvd_shutdown) while rank 1 is in allreduce(name=\"loss\", "
                                      "count=10), which rank 0 will never join (every rank must "
                                      "make the same collective calls, and none once another "
                                      "rank has shut down); stopping every rank");
}
END_TEST

/* A rank left waiting in a call that rank 0 has already finished (a broadcast rank 0 roots,
 * which rank 1 skipped and rank 3 gets through rank 1 in Open MPI's tree): rank 0 is in
 * hvd_shutdown when rank 1's count comes, and passes it on; the job stops, with one line. */
START_TEST(rank_left_behind_rank_0_named_without_the_check)
{
    job j = run_job(STALL_ENV " HVD_STALL_CHECK_DISABLE=1", 4, "skip-bcast-slow 1");
    ck_assert_msg(!hung(&j), "the job hung (timeout)\n%s", j.out);
    ck_assert_msg(json_count(j.out, "hvdlab: error:") <= 1, "more than one error line\n%s", j.out);
    if (j.status != 0) /* stopped: the waiting rank names rank 1 */
        ck_assert_msg(strstr(j.out, "rank 1 has shut down (hvd_shutdown) while rank 3 is in "
                                    "broadcast(name=\"w\", count=10, root=0)"), "%s", j.out);
}
END_TEST

/* ... and every call of a job that makes the same calls on every rank is counted alike: no
 * rank is taken for gone, however the ranks' speeds differ. */
START_TEST(same_calls_without_the_check_finish)
{
    for (int np = 2; np <= 3; np++) {
        job j = run_job(STALL_ENV " HVD_STALL_CHECK_DISABLE=1", np, "many-calls");
        ck_assert_msg(j.status == 0 && json_count(j.out, "finished") == (size_t)np,
                      "-n %d: status %d\n%s", np, j.status, j.out);
        ck_assert_msg(!strstr(j.out, "hvdlab:"), "-n %d:\n%s", np, j.out);
    }
}
END_TEST

START_TEST(different_reduce_ops_named)
{
    expect_stall("mismatch-reduce", 2,
                 "hvdlab: warning: stall: allreduce(name=\"grad\", count=10, op=sum, "
                 "compression=none) has waited 1 s (HVD_STALL_CHECK_TIME_SECONDS): ranks reached: "
                 "0; missing ranks: 1 (in allreduce(name=\"grad\", count=10, op=average, "
                 "compression=none))",
                 "hvdlab: error: [rank 0] stall: allreduce(name=\"grad\", count=10, op=sum, "
                 "compression=none) has waited 3 s (HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks "
                 "reached: 0; missing ranks: 1 (in allreduce(name=\"grad\", count=10, op=average, "
                 "compression=none)); stopping every rank");
}
END_TEST

START_TEST(different_compression_named)
{
    expect_stall("mismatch-fp16", 2,
                 "hvdlab: warning: stall: allreduce(name=\"grad\", count=10, op=sum, "
                 "compression=none) has waited 1 s (HVD_STALL_CHECK_TIME_SECONDS): ranks reached: "
                 "0; missing ranks: 1 (in allreduce(name=\"grad\", count=10, op=sum, "
                 "compression=fp16))",
                 "hvdlab: error: [rank 0] stall: allreduce(name=\"grad\", count=10, op=sum, "
                 "compression=none) has waited 3 s (HVD_STALL_SHUTDOWN_TIME_SECONDS): ranks "
                 "reached: 0; missing ranks: 1 (in allreduce(name=\"grad\", count=10, op=sum, "
                 "compression=fp16)); stopping every rank");
}
END_TEST

START_TEST(slow_rank_warned_then_runs_on)
{
    /* Rank 1 arrives 2 s late: one warning, then the job finishes normally. */
    job j = run_job(STALL_ENV, 2, "slow-rank");
    ck_assert_msg(j.status == 0, "status %d\n%s", j.status, j.out);
    ck_assert_msg(has_line(j.out, "hvdlab: warning: stall: allreduce(name=\"grad\", count=10) has "
                                  "waited 1 s (HVD_STALL_CHECK_TIME_SECONDS): ranks reached: 0; "
                                  "missing ranks: 1 (not arrived)"),
                  "%s", j.out);
    ck_assert_msg(json_count(j.out, "hvdlab: warning:") == 1 &&
                      json_count(j.out, "finished") == 2 && !strstr(j.out, "hvdlab: error"),
                  "%s", j.out);
}
END_TEST

START_TEST(late_coordinator_decides)
{
    /* Rank 0 comes 2 s after rank 1, then waits 2.5 s for rank 2: rank 1 warns that rank 0 has
     * not reached the call, rank 0 that rank 2 has not, and nobody stops the job (rank 0, once
     * in the call, keeps the clock). */
    job j = run_job(STALL_ENV, 3, "slow-coordinator");
    ck_assert_msg(j.status == 0 && json_count(j.out, "finished") == 3 &&
                      !strstr(j.out, "hvdlab: error"), "status %d\n%s", j.status, j.out);
    ck_assert_msg(has_line(j.out, "hvdlab: warning: [rank 1] stall: allreduce(name=\"grad\", "
                                  "count=10) has waited 1 s for rank 0, the coordinator, which "
                                  "has not reached it") &&
                      strstr(j.out, "missing ranks: 2 (not arrived)"), "%s", j.out);
}
END_TEST

START_TEST(disabled_says_nothing)
{
    job j = run_job(STALL_ENV " HVD_STALL_CHECK_DISABLE=1", 2, "slow-rank");
    ck_assert_msg(j.status == 0 && json_count(j.out, "finished") == 2, "status %d\n%s", j.status,
                  j.out);
    ck_assert_msg(!strstr(j.out, "hvdlab:"), "%s", j.out);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("stall");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, stopped_rank_named);
    tcase_add_test(tc, stopped_rank_named_hierarchical);
    tcase_add_test(tc, stopped_coordinator_named);
    tcase_add_test(tc, late_coordinator_decides);
    tcase_add_test(tc, broadcast_against_allreduce_named);
    tcase_add_test(tc, different_counts_named);
    tcase_add_test(tc, skipped_call_named);
    tcase_add_test(tc, rank_leaving_early_named);
    tcase_add_test(tc, coordinator_leaving_early_named);
    tcase_add_test(tc, rank_leaving_after_calls_named);
    tcase_add_test(tc, rank_leaving_early_named_without_the_check);
    tcase_add_test(tc, rank_left_behind_rank_0_named_without_the_check);
    tcase_add_test(tc, same_calls_without_the_check_finish);
    tcase_add_test(tc, different_reduce_ops_named);
    tcase_add_test(tc, different_compression_named);
    tcase_add_test(tc, slow_rank_warned_then_runs_on);
    tcase_add_test(tc, disabled_says_nothing);
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
