/* grade_checks.h — the behaviour each lab step adds, checked from a traced run.
 *
 * grade_check(step, g, msg, len) returns 0 when the run shows step's behaviour, else -1 with a
 * message for the student: what is wrong and a hint naming what is probably missing.
 */
#ifndef HVDLAB_GRADE_CHECKS_H
#define HVDLAB_GRADE_CHECKS_H

#include <stddef.h>

#include "grade/grade.h"

typedef struct {
    int np;            /* ranks of the graded runs */
    int train_n;       /* --train-subset */
    int test_n;        /* --test-subset: the validation loader's images */
    int batch;         /* --batch-size */
    int epochs;        /* --epochs of run a */
    int warmup;        /* --warmup-epochs */
    double base_lr;    /* --base-lr */
    long seed;         /* --seed, or -1: the programs' default (class mode: from SEED) */
    grade_run a;       /* the main run: --epochs epochs --use-checkpointing */
    grade_run b;       /* step >= 7: the same with one epoch more, resuming from a's checkpoints */
    int have_b;
    grade_run c;       /* step >= 5: one epoch on 3 ranks (shards with padding) */
    int have_c;
    char logdir[1024]; /* --log-dir of both runs */
} grade_ctx;

#define GRADE_STEPS 10
extern const char *const grade_step_titles[GRADE_STEPS + 1];

/* Step 0 is "the program runs": exit 0 and a test accuracy printed. */
int grade_check(int step, grade_ctx *g, char *msg, size_t len);

#endif
