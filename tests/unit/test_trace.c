/* test_trace.c — HVDLAB_TRACE files as the graders read them. Serial; it starts itself under a
 * child mpirun (`test_trace --child hooks|unwritable`) and reads what the ranks wrote:
 * pid-P.log before hvd_init, rank-R.log after, whole lines, quoting, and the events of the
 * runtime hooks (init, pin, collective, shard, metrics, progress). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fatal.h"
#include "base/trace.h"
#include "data/loader.h"
#include "hvd/device.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/json_check.h"
#include "lib/mpirun_cmd.h"
#include "lib/tmpdir.h"
#include "train/metrics.h"
#include "train/progress.h"

static char self[1024];

/* ---- the child: runs under mpirun with HVDLAB_TRACE set ------------------------------------ */

/* A loader over n blank images, this rank's shard of size, set to epoch 1. */
static void shard_epoch(size_t n, int rank, int size)
{
    uint8_t *img = calloc(n * LOADER_PIXELS, 1), *lab = calloc(n, 1);
    loader_options o = loader_defaults();
    o.rank = rank;
    o.size = size;
    o.batch_size = 8;
    o.seed = 7;
    loader L;
    char err[256];
    if (!img || !lab || loader_init(&L, img, lab, n, &o, err, sizeof err) != 0)
        fatal_error("loader: %s", err);
    loader_set_epoch(&L, 1);
    loader_free(&L);
    free(img);
    free(lab);
}

static int child_hooks(int argc, char **argv)
{
    float x[16] = {1, 2, 3};
    hvd_allreduce(x, 3, HVD_SUM, "before init"); /* a world of one: pid-P.log */
    hvd_init(&argc, &argv);
    int rank = hvd_rank(), size = hvd_size();
    hvd_pin_device(hvd_local_rank(), NULL);
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + rank);
    hvd_allreduce(x, 10, HVD_AVERAGE, "grads");
    hvd_allreduce_ex(x, 7, HVD_SUM, "ex", HVD_COMPRESS_FP16);
    hvd_allreduce_async(x, 4, HVD_SUM, "async.a", HVD_COMPRESS_NONE);
    hvd_allreduce_async(x + 4, 5, HVD_SUM, "async.b", HVD_COMPRESS_NONE);
    hvd_synchronize();
    hvd_allreduce(x, 1, HVD_AVERAGE, "odd \"name\" with\\ spaces");
    hvd_broadcast(x, 16, size - 1, "weights");
    char bytes[33] = {0};
    hvd_broadcast_bytes(bytes, sizeof bytes, 0, "state");
    size_t total;
    free(hvd_allgather(x, (size_t)rank + 1, &total, NULL, "gather"));
    shard_epoch(120, rank, size); /* 120 = 0 mod 1..4: disjoint shards that cover it all */
    shard_epoch(4096, 0, 1);      /* the longest list written in full: a 20 KB line */
    shard_epoch(5000, 0, 1);      /* too long: the hash only */
    metrics m;
    metrics_reset(&m);
    metrics_add(&m, 0.5 + rank, (size_t)rank + 1, 10);
    hvd_metric_average(&m, "val");
    progress p;
    progress_init(&p, rank == 0, 1, 100);
    progress_print(&p, "only rank 0 says \"hello\"");
    hvd_shutdown();
    trace_event("after_shutdown", "ok=1"); /* still this rank's file, under this rank */
    return 0;
}

static int child(int argc, char **argv)
{
    if (strcmp(argv[2], "hooks") == 0)
        return child_hooks(argc, argv);
    if (strcmp(argv[2], "unwritable") == 0) { /* HVDLAB_TRACE names a place that cannot exist */
        hvd_init(&argc, &argv);
        float x = 1;
        for (int i = 0; i < 3; i++)
            hvd_allreduce(&x, 1, HVD_SUM, "x");
        printf("unwritable: done\n");
        hvd_shutdown();
        return 0;
    }
    fprintf(stderr, "test_trace --child: unknown scenario %s\n", argv[2]);
    return 2;
}

/* ---- the parent: runs the child job and reads its files ------------------------------------ */

static int run_child(const char *trace_dir, int np, const char *scenario, char *out, size_t outlen)
{
    char dflt[128];
    const char *mpirun = mpirun_cmd(dflt, sizeof dflt);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env HVDLAB_TRACE='%s' timeout 60 %s -n %d %s --child %s 2>&1",
             trace_dir, mpirun, np, self, scenario);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The value of key in one line (quoted values unescaped) into out; 0 if found. */
static int field(const char *line, const char *key, char *out, size_t outlen)
{
    size_t k = strlen(key), j = 0;
    for (const char *s = line; (s = strstr(s, key)) != NULL; s++) {
        if ((s != line && s[-1] != ' ') || s[k] != '=')
            continue;
        const char *v = s + k + 1;
        if (*v == '"') {
            for (v++; *v && *v != '"' && j + 1 < outlen; v++) {
                if (*v == '\\' && v[1])
                    v++;
                out[j++] = *v;
            }
            ck_assert_msg(*v == '"', "unterminated quote in: %s", line);
        } else {
            while (*v && *v != ' ' && *v != '\n' && j + 1 < outlen)
                out[j++] = *v++;
        }
        out[j] = '\0';
        return 0;
    }
    return -1;
}

static long field_long(const char *line, const char *key)
{
    char v[64];
    ck_assert_msg(field(line, key, v, sizeof v) == 0, "no %s= in: %.200s", key, line);
    return strtol(v, NULL, 0);
}

/* The lines of a file (the buffer is modified; lines[] point into it). Every line must be whole:
 * the file ends with '\n' and each line is "event=NAME rank=… size=… pid=… t=… …". */
static size_t read_lines(const char *path, char **text, char ***lines)
{
    size_t len;
    *text = file_read(path, &len);
    ck_assert_msg(*text != NULL, "cannot read %s", path);
    ck_assert_msg(len > 0 && (*text)[len - 1] == '\n', "%s does not end with a newline", path);
    const size_t n = file_lines(*text, lines);
    for (size_t i = 0; i < n; i++) {
        const char *s = (*lines)[i];
        ck_assert_msg(strncmp(s, "event=", 6) == 0 && strstr(s, " rank=") &&
                          strstr(s, " size=") && strstr(s, " pid=") && strstr(s, " t="),
                      "%s line %zu is not a whole event line: %.200s", path, i + 1, s);
    }
    return n;
}

/* The i-th line of event ev (and optional extra key=value) in lines, or NULL. */
static const char *find_event(char **lines, size_t n, const char *ev, const char *has, int i)
{
    char want[64];
    snprintf(want, sizeof want, "event=%s ", ev);
    for (size_t k = 0; k < n; k++)
        if (strncmp(lines[k], want, strlen(want)) == 0 && (!has || strstr(lines[k], has)))
            if (i-- == 0)
                return lines[k];
    return NULL;
}

static uint64_t fnv_indices(const long *idx, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 0; k < n; k++)
        for (int b = 0; b < 8; b++)
            h = (h ^ (((uint64_t)idx[k] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    return h;
}

/* Checks a shard line's count/first/sum against its idx list; returns the list (malloc'd). */
static long *check_shard(const char *line, size_t *count)
{
    *count = (size_t)field_long(line, "count");
    char *list = malloc(*count * 21 + 2), sum[32];
    ck_assert_int_eq(field(line, "idx", list, *count * 21 + 2), 0);
    long *idx = malloc(*count * sizeof *idx);
    size_t k = 0;
    for (char *s = list; *s && k < *count; k++) {
        idx[k] = strtol(s, &s, 10);
        if (*s == ',')
            s++;
    }
    ck_assert_uint_eq(k, *count);
    ck_assert_int_eq(idx[0], field_long(line, "first"));
    ck_assert_int_eq(field(line, "sum", sum, sizeof sum), 0);
    ck_assert_msg(strtoull(sum, NULL, 16) == fnv_indices(idx, k), "sum=%s is not FNV-1a of idx",
                  sum);
    free(list);
    return idx;
}

static void check_hooks_run(int np)
{
    static char out[16384];
    int st = run_child(tmp_dir, np, "hooks", out, sizeof out);
    ck_assert_msg(st == 0, "child job exit %d:\n%s", st, out);
    /* Before hvd_init: one pid-P.log per process, rank 0 of 1, nothing else in it. */
    DIR *d = opendir(tmp_dir);
    ck_assert_ptr_nonnull(d);
    long pids[8];
    int npid = 0, nrank = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        long v;
        if (sscanf(e->d_name, "pid-%ld.log", &v) == 1 && npid < 8)
            pids[npid++] = v;
        else if (strncmp(e->d_name, "rank-", 5) == 0)
            nrank++;
    }
    closedir(d);
    ck_assert_int_eq(npid, np);
    ck_assert_int_eq(nrank, np);
    for (int i = 0; i < npid; i++) {
        char name[64], *text, **lines;
        snprintf(name, sizeof name, "pid-%ld.log", pids[i]);
        size_t n = read_lines(tmp_path(name), &text, &lines);
        ck_assert_uint_eq(n, 1);
        ck_assert_ptr_nonnull(strstr(lines[0], "event=collective rank=0 size=1 "));
        ck_assert_int_eq(field_long(lines[0], "pid"), pids[i]);
        ck_assert_ptr_nonnull(strstr(lines[0], " op=allreduce name=\"before init\" count=3 "
                                               "root=-1 reduce=sum fp16=0"));
        free(lines);
        free(text);
    }
    /* After: rank-R.log for each rank. */
    char *seen = calloc(120, 1), *cpus_taken = calloc(4096, 1);
    float avg_loss[4], local_sum = 0;
    int ncpu = 0;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        ncpu = CPU_COUNT(&allowed);
    for (int r = 0; r < np; r++) {
        char name[64], *text, **lines, v[256];
        snprintf(name, sizeof name, "rank-%d.log", r);
        size_t n = read_lines(tmp_path(name), &text, &lines);
        long pid = field_long(lines[0], "pid");
        int pid_known = 0;
        double t_prev = 0;
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(field_long(lines[i], "rank"), r);
            ck_assert_int_eq(field_long(lines[i], "size"), np);
            ck_assert_int_eq(field_long(lines[i], "pid"), pid);
            ck_assert_int_eq(field(lines[i], "t", v, sizeof v), 0);
            ck_assert_msg(atof(v) >= t_prev, "time goes back at line %zu", i + 1);
            t_prev = atof(v);
        }
        ck_assert_msg(strncmp(lines[n - 1], "event=after_shutdown ", 21) == 0, "last line: %s",
                      lines[n - 1]);
        for (int i = 0; i < npid; i++)
            pid_known |= pids[i] == pid;
        ck_assert_msg(pid_known, "rank %d (pid %ld) wrote no pid file before init", r, pid);
        ck_assert_msg(strncmp(lines[0], "event=init ", 11) == 0, "first line: %s", lines[0]);
        ck_assert_int_eq(field_long(lines[0], "local_rank"), r); /* one node */
        ck_assert_int_eq(field_long(lines[0], "local_size"), np);
        const char *pin = find_event(lines, n, "pin", NULL, 0);
        ck_assert_ptr_nonnull(pin);
        ck_assert_int_eq(field(pin, "device", v, sizeof v), 0);
        ck_assert_str_eq(v, "cpu");
        ck_assert_int_eq(field(pin, "cpus", v, sizeof v), 0);
        int ncores = 0;
        for (char *s = v; *s; ncores++) {
            long c = strtol(s, &s, 10);
            if (np <= ncpu && c >= 0 && c < 4096) { /* enough cores: no two ranks share one */
                ck_assert_msg(!cpus_taken[c], "core %ld given to two ranks", c);
                cpus_taken[c] = 1;
            }
            if (*s == ',')
                s++;
        }
        ck_assert_int_eq(field_long(pin, "threads"), ncores);
        /* One collective event per call, with what was asked for. */
        const char *want[] = {
            "op=allreduce name=\"grads\" count=10 root=-1 reduce=average fp16=0",
            "op=allreduce name=\"ex\" count=7 root=-1 reduce=sum fp16=1",
            "op=allreduce name=\"async.a\" count=4 root=-1 reduce=sum fp16=0",
            "op=allreduce name=\"async.b\" count=5 root=-1 reduce=sum fp16=0",
            "op=allreduce name=\"odd \\\"name\\\" with\\\\ spaces\" count=1 root=-1",
            NULL, "op=broadcast_bytes name=\"state\" count=33 root=0", NULL};
        char bc[128], ag[128];
        snprintf(bc, sizeof bc, "op=broadcast name=\"weights\" count=16 root=%d", np - 1);
        snprintf(ag, sizeof ag, "op=allgather name=\"gather\" count=%d root=-1", r + 1);
        want[5] = bc;
        want[7] = ag;
        for (int i = 0; i < 8; i++) {
            const char *c = find_event(lines, n, "collective", NULL, i);
            ck_assert_msg(c && strstr(c, want[i]), "rank %d collective %d: %s\nwant ...%s", r, i,
                          c ? c : "(none)", want[i]);
        }
        ck_assert_int_eq(field(find_event(lines, n, "collective", NULL, 4), "name", v, sizeof v),
                         0);
        ck_assert_str_eq(v, "odd \"name\" with\\ spaces"); /* the quoting round-trips */
        /* Shards: epoch 0 (loader_init) and 1 (set_epoch) of the 120-sample loader. */
        const char *sh = find_event(lines, n, "shard", " epoch=1 ", 0);
        ck_assert_ptr_nonnull(sh);
        ck_assert_int_eq(field_long(sh, "loader_rank"), r);
        ck_assert_int_eq(field_long(sh, "loader_size"), np);
        ck_assert_int_eq(field_long(sh, "n"), 120);
        size_t cnt;
        long *idx = check_shard(sh, &cnt);
        ck_assert_uint_eq(cnt, 120 / (size_t)np);
        for (size_t k = 0; k < cnt; k++) {
            ck_assert_msg(idx[k] >= 0 && idx[k] < 120 && !seen[idx[k]],
                          "sample %ld drawn twice in epoch 1", idx[k]);
            seen[idx[k]] = 1;
        }
        free(idx);
        const char *big = find_event(lines, n, "shard", " n=4096 ", 1);
        ck_assert_msg(big && strlen(big) > 16000, "the 4096-entry shard line is missing or cut");
        free(check_shard(big, &cnt));
        ck_assert_uint_eq(cnt, 4096);
        const char *huge = find_event(lines, n, "shard", " n=5000 ", 1);
        ck_assert_ptr_nonnull(huge);
        ck_assert_ptr_null(strstr(huge, " idx="));
        ck_assert_int_eq(field_long(huge, "count"), 5000);
        ck_assert_ptr_nonnull(strstr(huge, " sum="));
        /* Metrics before and after averaging. */
        const char *loc = find_event(lines, n, "metrics", " when=local ", 0);
        const char *avg = find_event(lines, n, "metrics", " when=averaged ", 0);
        ck_assert_ptr_nonnull(loc);
        ck_assert_ptr_nonnull(avg);
        ck_assert_msg(loc < avg, "the averaged metrics line (byte %td) comes before the local one "
                      "(byte %td)", avg - text, loc - text); /* local before averaged */
        ck_assert_int_eq(field(loc, "name", v, sizeof v), 0);
        ck_assert_str_eq(v, "val");
        ck_assert_int_eq(field(loc, "loss", v, sizeof v), 0);
        ck_assert_float_eq_tol(atof(v), 0.5 + r, 1e-6);
        local_sum += (float)atof(v);
        ck_assert_int_eq(field(avg, "loss", v, sizeof v), 0);
        avg_loss[r] = (float)atof(v);
        /* Progress text only where it was printed. */
        const char *pr = find_event(lines, n, "progress", NULL, 0);
        if (r == 0) {
            ck_assert_ptr_nonnull(pr);
            ck_assert_int_eq(field(pr, "text", v, sizeof v), 0);
            ck_assert_str_eq(v, "only rank 0 says \"hello\"");
        } else {
            ck_assert_msg(pr == NULL, "rank %d traced progress it did not print: %s", r, pr);
        }
        free(lines);
        free(text);
    }
    for (int k = 0; k < 120; k++)
        ck_assert_msg(seen[k], "sample %d in no shard of epoch 1", k);
    for (int r = 0; r < np; r++) {
        ck_assert_msg(avg_loss[r] == avg_loss[0], "averaged loss differs on rank %d", r);
        ck_assert_float_eq_tol(avg_loss[r], local_sum / (float)np, 1e-5);
    }
    free(seen);
    free(cpus_taken);
}

START_TEST(hooks_one_rank) { check_hooks_run(1); }
END_TEST

START_TEST(hooks_two_ranks) { check_hooks_run(2); }
END_TEST

START_TEST(hooks_three_ranks) { check_hooks_run(3); }
END_TEST

START_TEST(unwritable_dir_warns_once_and_runs_on)
{
    static char out[16384];
    int st = run_child("/proc/hvdlab-no-such-dir", 2, "unwritable", out, sizeof out);
    ck_assert_msg(st == 0, "exit %d:\n%s", st, out);
    ck_assert_uint_eq(json_count(out, "unwritable: done\n"), 2);
    /* One warning per host (the folder is the host's), not one per event or per rank. */
    ck_assert_msg(json_count(out, "hvdlab: warning: HVDLAB_TRACE: cannot create "
                                  "/proc/hvdlab-no-such-dir: ") == 1, "%s", out);
}
END_TEST

START_TEST(quoting)
{
    char q[64];
    ck_assert_str_eq(trace_quote("plain", q, sizeof q), "\"plain\"");
    ck_assert_str_eq(trace_quote("a \"b\" \\c\nd\re", q, sizeof q), "\"a \\\"b\\\" \\\\c\\nde\"");
    ck_assert_str_eq(trace_quote("", q, sizeof q), "\"\"");
    /* Cut to the buffer, still closed, never a dangling backslash. */
    ck_assert_str_eq(trace_quote("abcdefgh", q, 8), "\"abcd\"");
    ck_assert_str_eq(trace_quote("ab\"cdefg", q, 8), "\"ab\\\"\"");
    ck_assert_str_eq(trace_quote("abc\"", q, 7), "\"abc\"");
    ck_assert_str_eq(trace_quote("x", q, 3), "\"\"");
    q[0] = 'z';
    trace_quote("x", q, 2);
    ck_assert_int_eq(q[0], '\0');
}
END_TEST

START_TEST(off_is_cheap_and_writes_nothing)
{
    unsetenv("HVDLAB_TRACE");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 1000000; i++)
        trace_event("collective", "op=%s count=%d", "allreduce", i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    ck_assert_msg(s < 0.1, "1e6 events with tracing off took %.3f s", s);
    ck_assert_int_eq(trace_enabled(), 0);
    DIR *d = opendir(tmp_dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        files += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(files, 0);
}
END_TEST

START_TEST(empty_value_is_off)
{
    setenv("HVDLAB_TRACE", "", 1);
    trace_event("x", "y=1");
    ck_assert_int_eq(trace_enabled(), 0);
}
END_TEST

/* A full disk (here the file-size limit, SIGXFSZ ignored) stops tracing with one warning that
 * names the file and the cause, and the file keeps whole lines only: a write that went out in
 * part was cut off (it once stayed, half a line for the grader, and the warning named the
 * directory with a stale errno: 'No such file or directory'). Forked: the limit and the trace
 * state end with the test. */
START_TEST(full_disk_keeps_whole_lines_and_says_why)
{
    char dir[512], want[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("full"));
    setenv("HVDLAB_TRACE", dir, 1);
    fflush(stderr);
    int saved = dup(2), fd = open(tmp_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    close(fd);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &lim), 0);
    lim.rlim_cur = 1000;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (int i = 0; i < 100; i++) /* about 80 bytes each */
        trace_event("collective", "op=allreduce name=\"grad/%d\" count=%d", i, i);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_int_eq(trace_enabled(), 0);
    char *err = file_read(tmp_path("stderr.txt"), NULL);
    ck_assert_ptr_nonnull(err);
    snprintf(want, sizeof want, "hvdlab: warning: HVDLAB_TRACE: cannot write to %s/pid-%ld.log: "
             "%s; tracing stops\n", dir, (long)getpid(), strerror(EFBIG));
    ck_assert_str_eq(err, want);
    free(err);
    char path[600];
    snprintf(path, sizeof path, "%s/pid-%ld.log", dir, (long)getpid());
    size_t len = 0;
    char *t = file_read(path, &len);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(len > 0 && len <= 1000 && t[len - 1] == '\n', "%zu bytes, the last %d", len,
                  len ? t[len - 1] : -1);
    free(t);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, tmp_test_setup, tmp_test_teardown);
    tcase_add_test(tc, quoting);
    tcase_add_test(tc, off_is_cheap_and_writes_nothing);
    tcase_add_test(tc, empty_value_is_off);
    tcase_add_test(tc, hooks_one_rank);
    tcase_add_test(tc, hooks_two_ranks);
    tcase_add_test(tc, hooks_three_ranks);
    tcase_add_test(tc, unwritable_dir_warns_once_and_runs_on);
    tcase_add_test(tc, full_disk_keeps_whole_lines_and_says_why);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return child(argc, argv);
    snprintf(self, sizeof self, "%s", argv[0]);
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
