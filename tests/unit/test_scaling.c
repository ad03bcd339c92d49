/* test_scaling.c — make scaling's quick mode end to end: tools/scaling.sh runs bench/scaling at
 * W = 1 and 2 in strong and weak scaling; its scaling.csv must parse, hold one row per mode and
 * W, say which runs were oversubscribed, and have speedup and efficiency that follow from the
 * images/s it reports (the ideal: the ratio of cores in use), with a communication time from the profile at W = 2. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/ck_mpi.h"
#include "lib/file_io.h"

#define NCOL 19
static char build[1024];

typedef struct {
    char mode[16], over[8];
    double v[NCOL]; /* by column; text columns hold 0 */
} srow;
enum { C_MODE, C_RANKS, C_THREADS, C_OVER, C_BPR, C_GLOBAL, C_STEPS, C_ROUNDS, C_STEPMIN,
       C_STEP, C_COMPUTE, C_COMM, C_COMMMAX, C_COMMCLOCK, C_IPS, C_SPEEDUP, C_IDEAL, C_EFF, C_EFFMIN };

static int parse(char *line, srow *r)
{
    int n = 0;
    for (char *p = line; p; n++) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        if (n >= NCOL)
            return -1;
        if (n == C_MODE)
            snprintf(r->mode, sizeof r->mode, "%s", p);
        else if (n == C_OVER)
            snprintf(r->over, sizeof r->over, "%s", p);
        else {
            char *end;
            r->v[n] = strtod(p, &end);
            if (end == p || *end)
                return -1;
        }
        p = c ? c + 1 : NULL;
    }
    return n;
}

/* Runs the quick study with CORES=cores; returns the rows of scaling.csv (count in *n). */
static srow *run_quick(int cores, const char *more, int *n)
{
    char dir[] = "/tmp/hvdlab-scaling-XXXXXX", cmd[2048], path[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "BUILD=%s CORES=%d sh tools/scaling.sh --quick %s --out %s "
             ">%s/out.txt 2>&1", build, cores, more, dir, dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *out = file_read(path, NULL);
    ck_assert_msg(rc == 0, "%s failed:\n%s", cmd, out ? out : "");
    ck_assert_msg(out && strstr(out, "C(W) s"), "no table:\n%s", out ? out : "");
    free(out);
    snprintf(path, sizeof path, "%s/scaling.csv", dir);
    char *text = file_read(path, NULL);
    ck_assert_msg(text != NULL, "no %s", path);
    char **lines;
    size_t nl = file_lines(text, &lines);
    ck_assert_uint_ge(nl, 2);
    ck_assert_ptr_nonnull(strstr(lines[0], "mode,ranks,threads,oversubscribed"));
    srow *rows = calloc(nl, sizeof *rows);
    for (size_t i = 1; i < nl; i++)
        ck_assert_msg(parse(lines[i], &rows[i - 1]) == NCOL, "line %zu: does not parse", i + 1);
    *n = (int)nl - 1;
    free(lines);
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    return rows;
}

START_TEST(quick_study_rows)
{
    int n;
    srow *r = run_quick(2, "", &n);
    ck_assert_int_eq(n, 4); /* strong 1, 2; weak 1, 2 */
    double ips1 = 0;
    for (int i = 0; i < n; i++) {
        int w = (int)r[i].v[C_RANKS];
        ck_assert_msg(strcmp(r[i].mode, i < 2 ? "strong" : "weak") == 0, "row %d: %s", i,
                      r[i].mode);
        ck_assert_str_eq(r[i].over, "no");
        ck_assert_int_eq((int)r[i].v[C_THREADS], 2 / w);
        ck_assert_int_eq((int)r[i].v[C_GLOBAL], (int)r[i].v[C_BPR] * w);
        if (strcmp(r[i].mode, "strong") == 0)
            ck_assert_int_eq((int)r[i].v[C_GLOBAL], 32);
        else
            ck_assert_int_eq((int)r[i].v[C_BPR], 32);
        if (w == 1)
            ips1 = r[i].v[C_IPS];
        double sp = r[i].v[C_IPS] / ips1;
        ck_assert_msg(sp > 0.99 * r[i].v[C_SPEEDUP] && sp < 1.01 * r[i].v[C_SPEEDUP],
                      "speedup %g, images/s say %g", r[i].v[C_SPEEDUP], sp);
        /* 2 cores: W ranks of 2/W threads use the same cores as one rank, so the ideal is 1 */
        ck_assert_msg(r[i].v[C_IDEAL] == 1, "ideal %g with the cores shared", r[i].v[C_IDEAL]);
        ck_assert_msg(r[i].v[C_EFF] > 0.99 * sp && r[i].v[C_EFF] < 1.01 * sp,
                      "efficiency %g is not speedup/ideal = %g", r[i].v[C_EFF], sp);
        double sum = r[i].v[C_COMPUTE] + r[i].v[C_COMM];
        ck_assert_msg(r[i].v[C_COMPUTE] > 0 && sum > 0.5 * r[i].v[C_STEP] &&
                      sum < 1.5 * r[i].v[C_STEP], "compute %g + comm %g vs step %g",
                      r[i].v[C_COMPUTE], r[i].v[C_COMM], r[i].v[C_STEP]);
        if (w == 2)
            ck_assert_msg(r[i].v[C_COMM] > 0, "no communication measured at W = 2");
        ck_assert(r[i].v[C_STEPMIN] <= r[i].v[C_STEP] * 1.0001);
    }
    free(r);
}
END_TEST

START_TEST(more_ranks_than_cores_marked)
{
    int n;
    srow *r = run_quick(1, "--modes weak --ranks 2", &n);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(r[0].over, "yes");
    ck_assert_int_eq((int)r[0].v[C_THREADS], 1);
    free(r);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("scaling");
    TCase *tc = tcase_create("scaling");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, quick_study_rows);
    tcase_add_test(tc, more_ranks_than_cores_marked);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    char self[1024];
    snprintf(self, sizeof self, "%s", argv[0]);
    /* build/tests/unit/test_scaling: the flavour's build directory is three levels up */
    snprintf(build, sizeof build, "%s", dirname(dirname(dirname(self))));
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
