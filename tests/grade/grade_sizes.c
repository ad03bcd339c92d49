/* grade_sizes.c — the graded runs' sizes, from the defaults or a GRADE_SIZES_FILE.
 * Public: grade_sizes_load.
 */
#include "grade/grade_sizes.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each key, its default (make gradeNN's sizes) and the range the checks accept: np is 2 (run b's
 * MPMD line assumes it; run c adds a rank), epochs >= 2 (metrics and NovoGrad's falling loss are
 * judged across epochs), a warmup shorter than the run. seed -1: the programs' own default. */
enum { NP, TRAIN_N, TEST_N, BATCH, EPOCHS, WARMUP, BASE_LR, SEED, NKEYS };
static const struct {
    const char *key;
    double dflt, lo, hi;
} KEYS[NKEYS] = {
    [NP] = {"np", 2, 2, 2},           [TRAIN_N] = {"train_n", 512, 256, 2048},
    [TEST_N] = {"test_n", 256, 128, 1024}, [BATCH] = {"batch", 64, 16, 128},
    [EPOCHS] = {"epochs", 2, 2, 3},   [WARMUP] = {"warmup", 1, 1, 2},
    [BASE_LR] = {"base_lr", 0.01, 1e-4, 0.1}, [SEED] = {"seed", -1, 0, 2147483647},
};

static int bad(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* One "key=value" line into v; 0, or -1 with the message. */
static int take_line(const char *path, int n, const char *line, double *v, char *err, size_t len)
{
    const char *eq = strchr(line, '=');
    int i = 0;
    while (eq && i < NKEYS && (strlen(KEYS[i].key) != (size_t)(eq - line) ||
                               strncmp(KEYS[i].key, line, (size_t)(eq - line)) != 0))
        i++;
    if (!eq || i == NKEYS)
        return bad(err, len, "GRADE_SIZES_FILE %s:%d: '%.60s' is not key=value with a key of np, "
                   "train_n, test_n, batch, epochs, warmup, base_lr, seed", path, n, line);
    char *end;
    double x = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || x < KEYS[i].lo || x > KEYS[i].hi ||
        (i != BASE_LR && x != floor(x)))
        return bad(err, len, "GRADE_SIZES_FILE %s:%d: %s=%.40s: expected %s from %g to %g", path,
                   n, KEYS[i].key, eq + 1, i == BASE_LR ? "a number" : "a whole number",
                   KEYS[i].lo, KEYS[i].hi);
    v[i] = x;
    return 0;
}

int grade_sizes_load(grade_ctx *g, const char *path, char *err, size_t len)
{
    double v[NKEYS];
    for (int i = 0; i < NKEYS; i++)
        v[i] = KEYS[i].dflt;
    int rc = 0;
    if (path) {
        FILE *f = fopen(path, "r");
        if (!f)
            return bad(err, len, "GRADE_SIZES_FILE %s: %s", path, strerror(errno));
        char line[256];
        for (int n = 1; rc == 0 && fgets(line, sizeof line, f); n++) {
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0] && line[0] != '#')
                rc = take_line(path, n, line, v, err, len);
        }
        fclose(f);
        if (rc == 0 && v[WARMUP] >= v[EPOCHS])
            rc = bad(err, len, "GRADE_SIZES_FILE %s: warmup=%g must be less than epochs=%g",
                     path, v[WARMUP], v[EPOCHS]);
    }
    g->np = (int)v[NP];
    g->train_n = (int)v[TRAIN_N];
    g->test_n = (int)v[TEST_N];
    g->batch = (int)v[BATCH];
    g->epochs = (int)v[EPOCHS];
    g->warmup = (int)v[WARMUP];
    g->base_lr = v[BASE_LR];
    g->seed = (long)v[SEED];
    return rc;
}
