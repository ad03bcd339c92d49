/* grade_reference.c — a graded run's trace against the reference run's (grade_reference.h).
 * Public: grade_reference_compare.
 */
#include "grade/grade_reference.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static int differ(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int differ(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* The shard event of p for the loader of n images (shuffled: the training loader) in epoch e. */
static const grade_event *train_shard(const grade_proc *p, const char *n, const char *e)
{
    const grade_event *sh;
    for (int i = 0; p && (sh = grade_nth(p, "shard", i)); i++)
        if (same(grade_get(sh, "n"), n) && same(grade_get(sh, "shuffle"), "1") &&
            same(grade_get(sh, "epoch"), e))
            return sh;
    return NULL;
}

static int compare_rank(grade_proc *ref, grade_proc *got, int k, char *msg, size_t len)
{
    int nref = grade_count(ref, "step"), ngot = got ? grade_count(got, "step") : 0;
    /* The weights are compared bit for bit on the CPU only, where two runs of one program agree
     * to the bit (checked); cuDNN may pick algorithms whose sums vary from run to run. */
    const grade_event *pin = grade_nth(ref, "pin", 0);
    int exact = !pin || !same(grade_get(pin, "device"), "cuda");
    if (!got) /* no rank-R.log: the process never reported this rank (no hvd_init) */
        return differ(msg, len, "no process reported itself as rank %d (rank-%d.log); the "
                      "reference run's rank %d made %d optimizer steps", k, k, k, nref);
    if (nref > 0 && ngot == 0)
        return differ(msg, len, "rank %d made no optimizer step; the reference run made %d",
                        k, nref);
    for (int i = 0; i < nref && i < ngot; i++) {
        const grade_event *a = grade_nth(ref, "step", i), *b = grade_nth(got, "step", i);
        double la = grade_num(a, "lr", NAN), lb = grade_num(b, "lr", NAN);
        if (!(fabs(la - lb) <= 1e-6 * fabs(la)))
            return differ(msg, len, "rank %d's step %d used learning rate %g, the reference "
                            "run's %g", k, i + 1, lb, la);
        if (i < GRADE_REF_STEPS && exact &&
            !same(grade_get(a, "param_sum"), grade_get(b, "param_sum")))
            return differ(msg, len, "rank %d's weights after step %d differ from the reference "
                            "run's (digest %s, the reference's %s)", k, i + 1,
                            grade_get(b, "param_sum") ? grade_get(b, "param_sum") : "none",
                            grade_get(a, "param_sum") ? grade_get(a, "param_sum") : "none");
    }
    const grade_event *sh;
    for (int i = 0; (sh = grade_nth(ref, "shard", i)); i++) {
        if (!same(grade_get(sh, "shuffle"), "1"))
            continue;
        const grade_event *mine = train_shard(got, grade_get(sh, "n"), grade_get(sh, "epoch"));
        if (!mine || !same(grade_get(mine, "sum"), grade_get(sh, "sum")))
            return differ(msg, len, "rank %d's training shard of epoch %s is %s the reference "
                            "run's", k, grade_get(sh, "epoch"),
                            mine ? "not" : "missing; it is in");
    }
    return 0;
}

int grade_reference_compare(const char *ref_dir, const char *tag, grade_run *r, int np, char *msg,
                            size_t len)
{
    char dir[2048];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/trace-%s", ref_dir, tag);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    grade_run ref;
    grade_read_trace_dir(&ref, dir);
    int rc = 0;
    char what[1024] = "";
    for (int k = 0; k < np && rc == 0; k++) {
        grade_proc *p = grade_rank(&ref, k);
        if (p)
            rc = compare_rank(p, grade_rank(r, k), k, what, sizeof what);
    }
    if (rc)
        snprintf(msg, len, "trace disagrees with the reference run (run %s: %s)", tag, what);
    grade_run_free(&ref);
    return rc;
}
