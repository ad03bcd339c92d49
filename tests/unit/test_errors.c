/* test_errors.c — what users see when things go wrong: runs prog_errors under a child mpirun and
 * checks the one-line message, the non-zero exit and that nothing hangs. Also the world of one
 * before hvd_init. Serial: this process never initialises MPI itself. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/json_check.h"
#include "lib/mpirun_cmd.h"

static char prog[1024];

typedef struct {
    int status; /* exit status of the child job, 124 for a timeout */
    char out[16384];
} job;

/* Runs `env mpirun launch` with a 60 s bound; stdout and stderr together. */
static job run_launch(const char *env, const char *launch)
{
    char dflt[128];
    const char *mpirun = mpirun_cmd(dflt, sizeof dflt);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s timeout 60 %s %s 2>&1", env, mpirun, launch);
    job j = {.status = -1};
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(j.out, 1, sizeof j.out - 1, p);
    j.out[n] = '\0';
    int st = pclose(p);
    j.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return j;
}

/* `env mpirun -n np prog_errors args` */
static job run_job(const char *env, int np, const char *args)
{
    char launch[3200];
    snprintf(launch, sizeof launch, "-n %d %s %s", np, prog, args);
    return run_launch(env, launch);
}

/* Two ranks, the variable given to one of them only (its own app context). */
static job run_one_rank_env(int which, const char *var, const char *args)
{
    char launch[3200];
    snprintf(launch, sizeof launch, "-n 1 %s%s %s %s : -n 1 %s%s %s %s", which == 0 ? "env " : "",
             which == 0 ? var : "", prog, args, which == 1 ? "env " : "", which == 1 ? var : "",
             prog, args);
    return run_launch("", launch);
}

/* The check runs inside the stall inspector's handshake when that is on (the default), on
 * its own exchange when it is off: both must stop every rank with the same line. */
static void expect_failure_line(const char *scenario, const char *line)
{
    /* the last two: the same on the hierarchical path, every rank a test host of its own and
     * two ranks per test host (HVD_HOST_GROUP_SIZE, coll/hier.h) */
    const char *envs[4] = {"HVD_CHECK_COLLECTIVES=1",
                           "HVD_CHECK_COLLECTIVES=1 HVD_STALL_CHECK_DISABLE=1",
                           "HVD_CHECK_COLLECTIVES=1 HVD_HIERARCHICAL_ALLREDUCE=1 "
                           "HVD_HOST_GROUP_SIZE=1",
                           "HVD_CHECK_COLLECTIVES=1 HVD_STALL_CHECK_DISABLE=1 "
                           "HVD_HIERARCHICAL_ALLREDUCE=1 HVD_HOST_GROUP_SIZE=2"};
    for (int e = 0; e < 4; e++) {
        job j = run_job(envs[e], 2, scenario);
        ck_assert_msg(j.status != 124, "%s, %s: the job hung (timeout)\n%s", scenario, envs[e],
                      j.out);
        ck_assert_msg(j.status != 0, "%s, %s: exit status 0, expected a failure\n%s", scenario,
                      envs[e], j.out);
        ck_assert_msg(strstr(j.out, line) != NULL, "%s, %s: missing line\n  %s\nin output:\n%s",
                      scenario, envs[e], line, j.out);
        ck_assert_msg(json_count(j.out, "hvdlab: error:") == 1,
                      "%s, %s: %zu error lines, want one\n%s", scenario, envs[e],
                      json_count(j.out, "hvdlab: error:"), j.out);
        ck_assert_msg(!strstr(j.out, "finished"), "%s, %s: a rank finished\n%s", scenario,
                      envs[e], j.out);
    }
}

START_TEST(mismatched_ops_named)
{
    expect_failure_line("mismatch-op",
                        "hvdlab: error: [rank 0] collective mismatch: rank 0 called "
                        "allreduce(name=\"a\", count=10) but rank 1 called "
                        "broadcast(name=\"a\", count=10, root=0)");
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

START_TEST(mismatched_reduce_ops_named)
{
    expect_failure_line("mismatch-reduce",
                        "hvdlab: error: [rank 0] collective mismatch: rank 0 called "
                        "allreduce(name=\"grad\", count=10, op=sum, compression=none) but rank 1 called "
                        "allreduce(name=\"grad\", count=10, op=average, compression=none) (every "
                        "rank must make the same collective calls in the same order)\n");
}
END_TEST

START_TEST(mismatched_compression_named)
{
    expect_failure_line("mismatch-fp16",
                        "rank 0 called allreduce(name=\"grad\", count=10, op=sum, compression=none) "
                        "but rank 1 called allreduce(name=\"grad\", count=10, op=sum, "
                        "compression=fp16)");
}
END_TEST

START_TEST(settings_on_one_rank_named)
{
    /* Each of these, set on one rank only, changes what that rank sends; the job must stop at
     * hvd_init with one line rather than hang or mix results. */
    static const struct {
        int which;
        const char *var, *line;
    } cases[] = {
        {0, "HVD_CHECK_COLLECTIVES=1",
         "hvdlab: error: [rank 0] setting mismatch: HVD_CHECK_COLLECTIVES=1 on rank 0 but "
         "HVD_CHECK_COLLECTIVES=0 on rank 1 (every rank must have the same "
         "HVD_CHECK_COLLECTIVES; mpirun -x HVD_CHECK_COLLECTIVES passes it to all)\n"},
        {1, "HVD_FUSION_THRESHOLD=0",
         "setting mismatch: HVD_FUSION_THRESHOLD=67108864 on rank 0 but HVD_FUSION_THRESHOLD=0 "
         "on rank 1 "},
        {1, "HVD_COMPRESSION=fp16",
         "setting mismatch: HVD_COMPRESSION=none on rank 0 but HVD_COMPRESSION=fp16 on rank 1 "},
        {0, "HVD_STALL_CHECK_DISABLE=1",
         "setting mismatch: HVD_STALL_CHECK_DISABLE=1 on rank 0 but HVD_STALL_CHECK_DISABLE=0 on "
         "rank 1 "},
        {1, "HVD_STALL_SHUTDOWN_TIME_SECONDS=30",
         "setting mismatch: HVD_STALL_SHUTDOWN_TIME_SECONDS=0 on rank 0 but "
         "HVD_STALL_SHUTDOWN_TIME_SECONDS=30 on rank 1 "},
        {1, "HVD_HIERARCHICAL_ALLREDUCE=1",
         "setting mismatch: HVD_HIERARCHICAL_ALLREDUCE=0 on rank 0 but "
         "HVD_HIERARCHICAL_ALLREDUCE=1 on rank 1 "},
        {0, "HVD_HOST_GROUP_SIZE=1",
         "setting mismatch: HVD_HOST_GROUP_SIZE=1 on rank 0 but HVD_HOST_GROUP_SIZE=0 on "
         "rank 1 "},
        {1, "HVDLAB_STAGED_REDUCE=gpu",
         "setting mismatch: HVDLAB_STAGED_REDUCE=auto on rank 0 but HVDLAB_STAGED_REDUCE=gpu on "
         "rank 1 "},
        {0, "HVDLAB_STAGED_HOST=hugepages",
         "setting mismatch: HVDLAB_STAGED_HOST=hugepages on rank 0 but "
         "HVDLAB_STAGED_HOST=pinned on rank 1 "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        job j = run_one_rank_env(cases[i].which, cases[i].var, "agree");
        ck_assert_msg(j.status != 0 && j.status != 124, "%s: status %d\n%s", cases[i].var,
                      j.status, j.out);
        ck_assert_msg(strstr(j.out, cases[i].line), "%s: missing line\n  %s\nin output:\n%s",
                      cases[i].var, cases[i].line, j.out);
        ck_assert_msg(json_count(j.out, "hvdlab: error:") == 1 && !strstr(j.out, "finished"),
                      "%s: want one error line and no rank finishing\n%s", cases[i].var, j.out);
    }
    /* The same value spelled two ways is the same setting. */
    job j = run_one_rank_env(0, "HVD_FUSION_THRESHOLD=64M", "agree");
    ck_assert_msg(j.status == 0 && strstr(j.out, "agree: done"), "status %d\n%s", j.status, j.out);
}
END_TEST

START_TEST(agreeing_program_passes_checks)
{
    const char *envs[4] = {"HVD_CHECK_COLLECTIVES=1", "HVD_CHECK_COLLECTIVES=0",
                           "HVD_CHECK_COLLECTIVES=1 HVD_STALL_CHECK_DISABLE=1",
                           "HVD_CHECK_COLLECTIVES=1 HVD_HIERARCHICAL_ALLREDUCE=1 "
                           "HVD_HOST_GROUP_SIZE=2"};
    for (int e = 0; e < 4; e++) {
        job j = run_job(envs[e], 3, "agree");
        ck_assert_msg(j.status == 0 && strstr(j.out, "agree: done"), "%s: status %d\n%s",
                      envs[e], j.status, j.out);
        ck_assert_msg(!strstr(j.out, "hvdlab: warning"), "%s\n%s", envs[e], j.out);
    }
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

/* Rank 1 of `scenario` died of its start-up SIGUSR1: no hang, a non-zero exit, the survivor
 * names it, and rank 1 never printed `went_on`. */
static void expect_killed_by_usr1(const char *env, const char *scenario, const char *went_on)
{
    job j = run_job(env, 2, scenario);
    ck_assert_msg(j.status != 124, "[%s] the job hung\n%s", env, j.out);
    ck_assert_msg(j.status != 0, "[%s] exit status 0: the SIGUSR1 was lost\n%s", env, j.out);
    ck_assert_msg(strstr(j.out, "rank 1 (pid ") && strstr(j.out, "killed by SIGUSR1"),
                  "[%s] the survivor does not name rank 1's SIGUSR1\n%s", env, j.out);
    ck_assert_msg(!strstr(j.out, went_on), "[%s] rank 1 went on\n%s", env, j.out);
}

START_TEST(early_usr1_ends_a_program_without_stop_handlers)
{
    /* hvd_init records a SIGUSR1 for stop.h's handlers; a program that never installs them
     * (args_parse not called) must still die of it, at its next call, as it would have at once:
     * with the entry checks, and without them (no stall inspector, no collective check). */
    expect_killed_by_usr1("", "usr1-early", "rank 1 past the allreduce");
    expect_killed_by_usr1("HVD_STALL_CHECK_DISABLE=1 HVD_CHECK_COLLECTIVES=0", "usr1-early",
                          "rank 1 past the allreduce");
}
END_TEST

START_TEST(early_usr1_ends_an_args_program_without_stop_handlers)
{
    /* args_parse keeps the signal for stop.h's handlers; a program that parses the lab's flags
     * but never installs them must not lose it: it dies of it at hvd_shutdown at the latest. */
    expect_killed_by_usr1("", "usr1-args", "rank 1 finished");
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
    j = run_job("HVD_STALL_CHECK_TIME_SECONDS=-1", 2, "init-only");
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVD_STALL_CHECK_TIME_SECONDS=-1: expected a "
                                                 "number of seconds such as 60 or 2.5"), "%s", j.out);
    j = run_job("HVD_STALL_CHECK_TIME_SECONDS=0", 2, "init-only"); /* a warning a collective */
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVD_STALL_CHECK_TIME_SECONDS=0: expected more "
                                                 "than 0 seconds"), "%s", j.out);
    j = run_job("HVD_HOST_GROUP_SIZE=0", 2, "init-only");
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVD_HOST_GROUP_SIZE=0: expected a number of "
                                                 "ranks per test host, at least 1"), "%s", j.out);
    j = run_job("HVDLAB_STAGED_REDUCE=cpu", 2, "init-only");
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVDLAB_STAGED_REDUCE=cpu: expected auto (the "
                                                 "default), host, gpu or ipc"), "%s", j.out);
    /* checked at hvd_init on every build, not at the first staged call of a CUDA one */
    j = run_job("HVDLAB_STAGED_HOST=huge", 2, "init-only");
    ck_assert_msg(j.status != 0 && strstr(j.out, "HVDLAB_STAGED_HOST=huge: expected pinned (the "
                                                 "default) or hugepages"), "%s", j.out);
    j = run_job("HVD_FUSION_THRESHOLD=32M HVD_COMPRESSION=fp16 HVDLAB_STAGED_REDUCE=gpu "
                "HVDLAB_STAGED_HOST=hugepages", 2, "init-only");
    ck_assert_msg(j.status == 0, "valid settings refused: status %d\n%s", j.status, j.out);
    j = run_job("HVDLAB_STAGED_REDUCE=host", 2, "init-only");
    ck_assert_msg(j.status == 0, "valid settings refused: status %d\n%s", j.status, j.out);
    j = run_job("HVDLAB_STAGED_REDUCE=auto", 2, "init-only");
    ck_assert_msg(j.status == 0, "valid settings refused: status %d\n%s", j.status, j.out);
}
END_TEST

/* Horovod's on/off flags spelled otherwise stop every rank with one line, as the kit's own
 * switches do: any value but 0 used to count as on, so HVD_HIERARCHICAL_ALLREDUCE=false turned
 * the hierarchical path on and HVD_STALL_CHECK_DISABLE=no turned the inspector off, the opposite
 * of what was asked (and of Horovod, which reads both as 0). */
START_TEST(horovod_flags_spelled_otherwise_named)
{
    const char *flags[] = {"HVD_CHECK_COLLECTIVES", "HVD_STALL_CHECK_DISABLE",
                           "HVD_HIERARCHICAL_ALLREDUCE", "HVD_DEAD_RANK_CHECK_DISABLE",
                           "HVD_AUTOTUNE", "HVD_PROFILE"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char env[96], want[128];
        snprintf(env, sizeof env, "%s=false", flags[i]);
        snprintf(want, sizeof want, "] %s=false: expected 0 or 1 (unset: 0)\n", flags[i]);
        job j = run_job(env, 2, "init-only");
        ck_assert_msg(j.status != 0 && j.status != 124 && strstr(j.out, want),
                      "%s: status %d, want an error with: %s\n%s", env, j.status, want, j.out);
    }
    /* the elastic launcher's own flag, read the kit's way too */
    job e = run_job("HVDLAB_ELASTIC=false", 2, "elastic");
    ck_assert_msg(e.status != 0 && e.status != 124 &&
                  strstr(e.out, "] HVDLAB_ELASTIC=false: expected 0 or 1 (unset: 0)\n"),
                  "HVDLAB_ELASTIC=false: status %d\n%s", e.status, e.out);
    e = run_job("HVDLAB_ELASTIC=1", 2, "elastic");
    ck_assert_msg(e.status == 0 && strstr(e.out, "rank 1: elastic 1"), "status %d\n%s", e.status,
                  e.out);
    job j = run_job("HVD_CHECK_COLLECTIVES=1 HVD_STALL_CHECK_DISABLE=0 "
                    "HVD_HIERARCHICAL_ALLREDUCE=0 HVD_DEAD_RANK_CHECK_DISABLE=0 HVD_AUTOTUNE=0 "
                    "HVD_PROFILE=0", 2, "init-only");
    ck_assert_msg(j.status == 0, "valid flags refused: status %d\n%s", j.status, j.out);
}
END_TEST

/* A warning every rank would print alike comes once per job (or per host, where the fact is the
 * host's), not once per rank: 8 ranks gave 8 copies of each. One that names the rank's own file
 * still comes from that rank, rank 0 or not. */
START_TEST(layer_warnings_once_per_job)
{
    char file[] = "/tmp/hvdlab-warn-XXXXXX", dir[] = "/tmp/hvdlab-warn-XXXXXX", env[512];
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(env, sizeof env, "HVDLAB_CONV=fast HVDLAB_CONV_ALGO=fast "
             "HVDLAB_ACTIVATION_LAYOUT=fast HVDLAB_TRACE=%s/trace", file); /* under a file */
    job j = run_job(env, 2, "layers");
    ck_assert_msg(j.status == 0, "status %d\n%s", j.status, j.out);
    const char *once[] = {
        "warning: HVDLAB_CONV=fast is not a convolution backend of this build",
#ifdef HVDLAB_DNNL
        "warning: HVDLAB_CONV_ALGO=fast is not direct or auto; using auto\n",
#endif
        "warning: HVDLAB_ACTIVATION_LAYOUT=fast is not auto, nchw, nChw16c or nhwc; using auto\n",
        "warning: HVDLAB_TRACE: cannot create ", /* one host here: once */
    };
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++)
        ck_assert_msg(json_count(j.out, once[i]) == 1, "%zu times, want once: %s\n%s",
                      json_count(j.out, once[i]), once[i], j.out);
    j = run_job("HVDLAB_ACTIVATION_LAYOUT=nhwc", 2, "layers"); /* a GPU model's layout */
    ck_assert_msg(j.status == 0 && json_count(j.out, "warning: HVDLAB_ACTIVATION_LAYOUT=nhwc is "
                                                     "not for a model on the CPU") == 1,
                  "status %d, want the warning once\n%s", j.status, j.out);
    /* rank 1's own trace file cannot be opened: rank 1 says so, rank 0 traces on */
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[64], log0[64];
    snprintf(sub, sizeof sub, "%s/rank-1.log", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    snprintf(env, sizeof env, "HVDLAB_TRACE=%s", dir);
    j = run_job(env, 2, "layers");
    char want[128];
    snprintf(want, sizeof want, "warning: HVDLAB_TRACE: cannot open %s: Is a directory", sub);
    snprintf(log0, sizeof log0, "%s/rank-0.log", dir);
    ck_assert_msg(j.status == 0 && json_count(j.out, want) == 1 &&
                      json_count(j.out, "HVDLAB_TRACE") == 1 && access(log0, F_OK) == 0,
                  "status %d, want once: %s\n%s", j.status, want, j.out);
    unlink(log0);
    rmdir(sub);
    rmdir(dir);
    unlink(file);
}
END_TEST

#ifdef HVDLAB_DNNL
/* HVDLAB_DNNL_CHUNK was read with atoi: 1x ran pieces of 1 image, garbage, -1 and 0 ran by size,
 * in silence. Now a whole number from 1 to 4096 (the workspace is sized for a whole piece), or
 * every rank stops at its first convolution with one line. */
START_TEST(dnnl_chunk_checked)
{
    const char *bad[] = {"1x", "garbage", "-1", "0", "4097", "+5", " 5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char env[96], want[160];
        snprintf(env, sizeof env, "'HVDLAB_DNNL_CHUNK=%s'", bad[i]);
        snprintf(want, sizeof want, "] HVDLAB_DNNL_CHUNK=%s: expected a whole number of images "
                 "from 1 to 4096 (unset: by size)\n", bad[i]);
        job j = run_job(env, 2, "layers");
        ck_assert_msg(j.status != 0 && j.status != 124 && strstr(j.out, want) &&
                          !strstr(j.out, "finished"),
                      "%s: status %d, want an error with: %s\n%s", env, j.status, want, j.out);
    }
    job j = run_job("HVDLAB_DNNL_CHUNK=7", 2, "layers");
    ck_assert_msg(j.status == 0, "HVDLAB_DNNL_CHUNK=7 refused: status %d\n%s", j.status, j.out);
    j = run_job("HVDLAB_DNNL_CHUNK=4096", 1, "layers");
    ck_assert_msg(j.status == 0, "HVDLAB_DNNL_CHUNK=4096 refused: status %d\n%s", j.status,
                  j.out);
}
END_TEST
#endif

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
    /* it really died midway: 34 of 40 allreduces made it in (2 ranks on one host: their pass
     * is SHM_ALLREDUCE, coll/allreduce.h) */
    ck_assert_uint_eq(json_count(t, "\"name\": \"SHM_ALLREDUCE\""), 34);
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
    /* An on/off switch spelled otherwise stops every rank with one line (base/env_switch.h),
     * where it used to count as on: "no" must not mean yes. */
    j = run_job("HVDLAB_REPORT_BINDINGS=no", 2, "pin");
    ck_assert_msg(j.status != 0 && j.status != 124 &&
                      strstr(j.out, "HVDLAB_REPORT_BINDINGS=no: expected 0 or 1 (unset: 0)") &&
                      !strstr(j.out, "pinned to"),
                  "status %d\n%s", j.status, j.out);
    /* The GPU code's switches too, in a CPU build, where nothing else reads them */
    j = run_job("HVDLAB_TF32=off", 2, "pin");
    ck_assert_msg(j.status != 0 && j.status != 124 &&
                      strstr(j.out, "HVDLAB_TF32=off: expected 0 or 1 (unset: 1)"),
                  "status %d\n%s", j.status, j.out);
    j = run_job("HVDLAB_DEVICE=CPU", 2, "pin"); /* in a CUDA build it would have meant the GPU */
    ck_assert_msg(j.status != 0 && j.status != 124 &&
                      strstr(j.out, "HVDLAB_DEVICE=CPU: expected cpu (the CPU even where a GPU "
                                    "is visible) or auto"),
                  "status %d\n%s", j.status, j.out);
    j = run_job("HVDLAB_DEVICE=cpu HVDLAB_REPORT_BINDINGS=0", 2, "pin");
    ck_assert_msg(j.status == 0 && !strstr(j.out, "pinned to"), "status %d\n%s", j.status, j.out);
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
    tcase_add_test(tc, mismatched_reduce_ops_named);
    tcase_add_test(tc, mismatched_compression_named);
    tcase_add_test(tc, settings_on_one_rank_named);
    tcase_add_test(tc, agreeing_program_passes_checks);
    tcase_add_test(tc, fatal_on_one_rank_stops_all);
    tcase_add_test(tc, early_usr1_ends_a_program_without_stop_handlers);
    tcase_add_test(tc, early_usr1_ends_an_args_program_without_stop_handlers);
    tcase_add_test(tc, bad_broadcast_root_named);
    tcase_add_test(tc, bad_settings_named);
    tcase_add_test(tc, horovod_flags_spelled_otherwise_named);
    tcase_add_test(tc, layer_warnings_once_per_job);
#ifdef HVDLAB_DNNL
    tcase_add_test(tc, dnnl_chunk_checked);
#endif
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
