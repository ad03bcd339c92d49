/* grade_main.c — runs the program to grade, then one Check test per lab step up to the graded
 * one (a step's grader also checks every earlier step), and prints a report for the student.
 * Env: MPIRUN (mpirun with its flags), GRADE_KEEP=1 keeps the work directory, GRADE_TIMEOUT_S
 * the time limit of each run (default 60 s), TMPDIR where the work directory is made (/tmp),
 * GRADE_WRAP the sandbox each run starts in (grade.h), GRADE_RESULT_FILE a file the verdicts are
 * also written to, one line per run and per check, for the class runner (tools/grade_class.sh).
 * Class mode also: GRADE_SIZES_FILE the runs' sizes and seed (grade_sizes.h), GRADE_WORK_DIR a
 * new folder to make the runs in and keep (the reference run: the kit's solution graded so),
 * GRADE_REFERENCE_TRACE such a folder, whose traces the runs' must agree with, else a
 * "[FLAG] trace disagrees with the reference run" line (and a flag line in GRADE_RESULT_FILE).
 * Public: grade_main.
 */
#include "grade/grade_main.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grade/grade_checks.h"
#include "grade/grade_reference.h"
#include "grade/grade_sizes.h"

static grade_ctx G;
static int graded_step;
static int runs_ok; /* step 0 passed: the other checks are meaningful */

/* One Check test per step; _i is the step number (tcase_add_loop_test). */
START_TEST(step_behaviour)
{
    char msg[4096];
    if (_i > 0 && !runs_ok)
        ck_abort_msg("not checked: the program did not run to the end");
    int rc = grade_check(_i, &G, msg, sizeof msg);
    if (_i == 0)
        runs_ok = rc == 0;
    ck_assert_msg(rc == 0, "%s", msg);
}
END_TEST

/* Each graded run trains 512 images for a few seconds (1-10 s here, on 2 loaded cores): a
 * limit of 60 s is ample and still says "hung" within a minute. GRADE_TIMEOUT_S overrides it. */
static int run_limit_s(void)
{
    const char *e = getenv("GRADE_TIMEOUT_S");
    int t = e ? atoi(e) : 0;
    return t > 0 ? t : 60;
}

static void run_program(const char *prog, const char *work)
{
    int limit = run_limit_s();
    snprintf(G.logdir, sizeof G.logdir, "%s/logs", work);
    char args[2048], other[2048], launch[8192];
    /* In class mode the data and weights seed comes from SEED too (the reference run's), else
     * the programs' default; the seed mixes in the rank, so the ranks still start apart. */
    char seed[48] = "";
    if (G.seed >= 0)
        snprintf(seed, sizeof seed, "--seed %ld ", G.seed);
    char fmt[512];
    snprintf(fmt, sizeof fmt, "--model wrn-10-1 --train-subset %%d --test-subset %%d "
             "--batch-size %%d --val-batch-size 128 --epochs %%d --base-lr %%g "
             "--warmup-epochs %%d --optimizer %%s %s--use-checkpointing --log-dir %%s", seed);
    snprintf(args, sizeof args, fmt, G.train_n, G.test_n, G.batch, G.epochs, G.base_lr, G.warmup,
             "novograd", G.logdir);
    grade_run_prog(&G.a, prog, G.np, args, work, "a", limit);
    if (graded_step >= 7 && G.a.status == 0 && !grade_stopped()) {
        /* The resumed run: only rank 0's --log-dir holds the checkpoints; the other ranks get an
         * empty one, as on other nodes that cannot see rank 0's disk. Only a broadcast from
         * rank 0 can resume them. */
        char empty[1100];
        snprintf(empty, sizeof empty, "%s-other-ranks", G.logdir);
        mkdir(empty, 0777);
        chmod(empty, 0777); /* written by the sandbox's user under GRADE_WRAP */
        snprintf(args, sizeof args, fmt, G.train_n, G.test_n, G.batch, G.epochs + 1, G.base_lr,
                 G.warmup, "novograd", G.logdir);
        snprintf(other, sizeof other, fmt, G.train_n, G.test_n, G.batch, G.epochs + 1,
                 G.base_lr, G.warmup, "novograd", empty);
        snprintf(launch, sizeof launch, "-n 1 %s %s : -n %d %s %s", prog, args, G.np - 1, prog,
                 other);
        grade_run_launch(&G.b, prog, launch, work, "b", limit);
        G.have_b = 1;
    }
    if (graded_step >= 5 && G.a.status == 0 && !grade_stopped()) {
        /* 512 images do not split evenly over 3 ranks. With --optimizer sgd: step 10's
         * program must keep SGD unless asked for NovoGrad (the programs before it ignore the
         * flag). */
        snprintf(args, sizeof args, fmt, G.train_n, G.test_n, G.batch, 1, G.base_lr, G.warmup,
                 "sgd", G.logdir);
        strcat(args, "-3");
        grade_run_prog(&G.c, prog, 3, args, work, "c", limit);
        G.have_c = 1;
    }
}

static void remove_work(const char *work)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    if (system(cmd) != 0)
        fprintf(stderr, "grade: could not remove %s\n", work);
}

/* Writes text to f with tabs as spaces, newlines as the two characters \n and backslashes
 * doubled (the class runner's verdicts.tsv format). */
static void put_escaped(FILE *f, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\t')
            fputc(' ', f);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\\')
            fputs("\\\\", f);
        else if (*p != '\r')
            fputc(*p, f);
    }
}

/* GRADE_RESULT_FILE: "run<TAB>tag<TAB>status<TAB>seconds" per run made (status 124: timed out)
 * and "check<TAB>NN<TAB>pass|fail<TAB>message" per check, written to a temp file then renamed. */
static void write_result_file(const char *path, TestResult **res, int nres,
                              char (*flags)[1200], int nflags)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror(tmp);
        return;
    }
    const grade_run *runs[3] = {&G.a, &G.b, &G.c};
    const char *tags[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        if (i == 0 || (i == 1 && G.have_b) || (i == 2 && G.have_c))
            fprintf(f, "run\t%s\t%d\t%.2f\n", tags[i], runs[i]->status, runs[i]->seconds);
    for (int k = 0; k < nres; k++) {
        int ok = tr_rtype(res[k]) == CK_PASS;
        fprintf(f, "check\t%02d\t%s\t", k, ok ? "pass" : "fail");
        put_escaped(f, ok ? grade_step_titles[k] : tr_msg(res[k]));
        fputc('\n', f);
    }
    for (int i = 0; i < nflags; i++) {
        fputs("flag\t", f);
        put_escaped(f, flags[i]);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        perror(path);
}

/* Class mode: each run the program made against the reference run's trace (GRADE_REFERENCE_TRACE,
 * the kit's solution graded with the same sizes, kept by GRADE_WORK_DIR). Flags, not verdicts:
 * the number of disagreements written into flags. */
static int reference_flags(const char *ref, char (*flags)[1200])
{
    if (!ref || !*ref || !G.a.nprocs)
        return 0;
    grade_run *runs[3] = {&G.a, &G.b, &G.c};
    const char *tags[3] = {"a", "b", "c"};
    int np[3] = {G.np, G.np, 3}, made[3] = {1, G.have_b, G.have_c}, n = 0;
    for (int i = 0; i < 3; i++)
        if (made[i] && grade_reference_compare(ref, tags[i], runs[i], np[i], flags[n], 1200) != 0)
            n++;
    return n;
}

/* Prints one check's result, its message indented. */
static void print_result(TestResult *res, int k)
{
    int ok = tr_rtype(res) == CK_PASS;
    printf("  [%s] step %02d: %s\n", ok ? "PASS" : "FAIL", k, grade_step_titles[k]);
    if (ok)
        return;
    const char *m = tr_msg(res);
    for (const char *p = m; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("         %.*s\n", n, p);
        p = nl ? nl + 1 : p + n;
    }
}

int grade_main(int argc, char **argv, int step)
{
    if (argc != 2 || access(argv[1], X_OK) != 0) {
        fprintf(stderr, "usage: %s PROGRAM   (an executable lab program, e.g. ./step%02d)\n",
                argv[0], step);
        return 2;
    }
    graded_step = step;
    char err[512];
    if (grade_sizes_load(&G, getenv("GRADE_SIZES_FILE"), err, sizeof err) != 0) {
        fprintf(stderr, "grade%02d: %s\n", step, err);
        return 2;
    }
    const char *tmpdir = getenv("TMPDIR");
    const char *keep_at = getenv("GRADE_WORK_DIR"); /* a reference run, kept there */
    char work[900]; /* room for "/logs" and more in G.logdir */
    snprintf(work, sizeof work, "%s/hvdlab-grade-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (keep_at && *keep_at) {
        snprintf(work, sizeof work, "%s", keep_at);
        if (mkdir(work, 0700) != 0) {
            fprintf(stderr, "grade%02d: GRADE_WORK_DIR %s: %s (it must be a new folder)\n", step,
                    work, strerror(errno));
            return 2;
        }
    } else if (!mkdtemp(work)) {
        perror("hvdlab grade: mkdtemp");
        return 2;
    }
    const char *wrap = getenv("GRADE_WRAP");
    if (wrap && *wrap) /* the sandbox's user writes the job's files here */
        chmod(work, 0777);
    printf("grade%02d: running %s under mpirun -n %d%s on a small subset (%d training images, "
           "%d test, batch %d, seed %s) ...\n", step, argv[1], G.np, step >= 5 ? " and -n 3" : "",
           G.train_n, G.test_n, G.batch, G.seed >= 0 ? "from SEED" : "default");
    fflush(stdout);
    run_program(argv[1], work);
    if (grade_stopped()) { /* Ctrl-C or kill: the job is stopped; stop too, tidily */
        fprintf(stderr, "grade%02d: interrupted (signal %d); the graded job was stopped\n", step,
                grade_stopped());
        remove_work(work);
        signal(grade_stopped(), SIG_DFL);
        raise(grade_stopped());
        return 130;
    }

    Suite *s = suite_create("grade");
    TCase *tc = tcase_create("steps");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, step_behaviour, 0, step + 1);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* the checks share the runs in G */
    srunner_run_all(sr, CK_SILENT);

    int nres = srunner_ntests_run(sr), passed = 0;
    TestResult **res = srunner_results(sr); /* in loop order: res[k] is step k */
    for (int i = 0; i < nres; i++)
        passed += tr_rtype(res[i]) == CK_PASS;
    /* What the student is working on first: this step's own check when it failed (unless the
     * program did not run, which step 00 explains), then the others in order. */
    int first = runs_ok && nres == step + 1 && tr_rtype(res[step]) != CK_PASS ? step : -1;
    if (first >= 0)
        print_result(res[first], first);
    for (int i = 0; i < nres; i++)
        if (i != first)
            print_result(res[i], i);
    char flags[4][1200];
    int nflags = reference_flags(getenv("GRADE_REFERENCE_TRACE"), flags);
    for (int i = 0; i < nflags; i++)
        printf("  [FLAG] %s\n", flags[i]);
    const char *result_file = getenv("GRADE_RESULT_FILE");
    if (result_file && *result_file)
        write_result_file(result_file, res, nres, flags, nflags);
    free(res);
    printf("grade%02d: %s (%d of %d checks passed, %.0f s)\n", step,
           passed == nres ? "PASS" : "FAIL", passed, nres, G.a.seconds + G.b.seconds + G.c.seconds);
    srunner_free(sr);
    if (getenv("GRADE_KEEP") || (keep_at && *keep_at))
        printf("grade%02d: work directory kept: %s\n", step, work);
    else
        remove_work(work);
    grade_run_free(&G.a);
    grade_run_free(&G.b);
    grade_run_free(&G.c);
    return passed == nres ? 0 : 1;
}

#ifdef GRADE_STEP
/* grade_stepNN is this file built with -DGRADE_STEP=N (mk/lab.mk): it checks steps 1..N. */
int main(int argc, char **argv) { return grade_main(argc, argv, GRADE_STEP); }
#endif
