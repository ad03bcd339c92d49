/* autotune.c — the fusion threshold searched on the first steps (autotune.h).
 * Public: autotune_init, autotune_sync, autotune_active.
 */
#include "coll/autotune.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_switch.h"
#include "base/fatal.h"
#include "base/stats.h"
#include "base/trace.h"
#include "guard/agree.h"

/* Bytes: fusion off, then buckets from a few layers' worth to the whole of a wide model. */
static const size_t AUTOTUNE_CANDIDATES[] = {0, 16u << 10, 128u << 10, 1u << 20, 8u << 20,
                                             64u << 20};
#define NCAND (sizeof AUTOTUNE_CANDIDATES / sizeof AUTOTUNE_CANDIDATES[0])
#define NTRIALS (2 * NCAND) /* forward, then backward */

/* HVD_AUTOTUNE's trials. Owned by this file: autotune_init (from hvd_init) starts them,
 * autotune_sync runs them until the threshold is chosen. */
typedef struct {
    int active;
    MPI_Comm comm;
    int rank;
    size_t *threshold;
    size_t dflt;           /* the threshold nobody chose (HVD_DEFAULT_FUSION_THRESHOLD) */
    int per_trial, warmup; /* S, W */
    const char *log;
    long sync;             /* gradient synchronisations seen */
    double last;           /* MPI_Wtime at the previous one */
    double *samples;       /* (NTRIALS, per_trial) step seconds, rank 0 */
} autotune_state;
static autotune_state tuning;

int autotune_active(void) { return tuning.active; }

static int candidate_of(int trial)
{
    return trial < (int)NCAND ? trial : (int)NTRIALS - 1 - trial;
}

/* Rank 0 at start: the log opened for appending (created when missing, an earlier run's
 * trials kept until this run's replace them), so that a path it cannot write stops the job
 * before the 72 steps of trials rather than after them. */
static void create_log(void)
{
    FILE *f = fopen(tuning.log, "a");
    if (!f || fclose(f) != 0)
        fatal_error("HVD_AUTOTUNE_LOG=%s: cannot create: %s", tuning.log, strerror(errno));
}

static int env_count(const char *var, int dflt, int lo)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno || x < lo || x > 1000)
        fatal_error("%s=%s: expected a whole number from %d to 1000", var, v, lo);
    return (int)x;
}

void autotune_init(MPI_Comm comm, int rank, size_t *threshold, int explicit_threshold,
                   size_t dflt)
{
    int on = env_switch("HVD_AUTOTUNE", 0);
    tuning.per_trial = env_count("HVD_AUTOTUNE_STEPS_PER_SAMPLE", 5, 1);
    tuning.warmup = env_count("HVD_AUTOTUNE_WARMUP_SAMPLES", 1, 0);
    agree_setting s[3];
    memset(s, 0, sizeof s);
    snprintf(s[0].name, sizeof s[0].name, "HVD_AUTOTUNE");
    snprintf(s[0].value, sizeof s[0].value, "%d", on);
    snprintf(s[1].name, sizeof s[1].name, "HVD_AUTOTUNE_STEPS_PER_SAMPLE");
    snprintf(s[1].value, sizeof s[1].value, "%d", tuning.per_trial);
    snprintf(s[2].name, sizeof s[2].name, "HVD_AUTOTUNE_WARMUP_SAMPLES");
    snprintf(s[2].value, sizeof s[2].value, "%d", tuning.warmup);
    agree_settings(comm, s, 3);
    if (!on)
        return;
    if (explicit_threshold) {
        if (rank == 0)
            fprintf(stderr, "hvdlab: autotune: HVD_FUSION_THRESHOLD=%zu is set and stays: nothing "
                    "to tune (unset it to let autotune choose)\n", *threshold);
        return;
    }
    tuning.samples = calloc(NTRIALS * (size_t)tuning.per_trial, sizeof *tuning.samples);
    if (!tuning.samples)
        fatal_error("autotune: out of memory");
    const char *v = getenv("HVD_AUTOTUNE_LOG");
    tuning.log = v && *v ? v : NULL;
    if (tuning.log && rank == 0)
        create_log();
    tuning.comm = comm;
    tuning.rank = rank;
    tuning.threshold = threshold;
    tuning.dflt = dflt;
    tuning.sync = 0;
    tuning.active = 1;
}

/* Rank 0: every candidate's score (median over both rounds) and each trial's own median. */
static void score(double *cand_ms, double *trial_ms)
{
    const int s = tuning.per_trial;
    double *pool = malloc(2 * (size_t)s * sizeof *pool), *one = malloc((size_t)s * sizeof *one);
    if (!pool || !one)
        fatal_error("autotune: out of memory");
    for (int c = 0; c < (int)NCAND; c++) {
        int n = 0;
        for (int t = 0; t < (int)NTRIALS; t++) {
            if (candidate_of(t) != c)
                continue;
            memcpy(one, tuning.samples + (size_t)t * s, (size_t)s * sizeof *one);
            memcpy(pool + n, one, (size_t)s * sizeof *one);
            n += s;
            trial_ms[t] = 1e3 * stats_median(one, s);
        }
        cand_ms[c] = 1e3 * stats_median(pool, n);
    }
    free(pool);
    free(one);
}

static void write_log(const double *cand_ms, const double *trial_ms, int best)
{
    FILE *f = fopen(tuning.log, "w");
    if (!f) {
        fprintf(stderr, "hvdlab: autotune: %s: cannot write the trials: %s\n", tuning.log,
                strerror(errno));
        return;
    }
    fprintf(f, "trial,round,fusion_threshold_bytes,measured_steps,median_step_ms,score_ms,chosen\n");
    for (int t = 0; t < (int)NTRIALS; t++) {
        int c = candidate_of(t);
        fprintf(f, "%d,%d,%zu,%d,%.3f,%.3f,%d\n", t, t < (int)NCAND ? 1 : 2,
                AUTOTUNE_CANDIDATES[c], tuning.per_trial, trial_ms[t], cand_ms[c], c == best);
    }
    if (fclose(f) != 0)
        fprintf(stderr, "hvdlab: autotune: %s: cannot write the trials: %s\n", tuning.log,
                strerror(errno));
}

/* After the last trial, on every rank: rank 0 picks, everyone adopts. */
static void choose(void)
{
    int best = 0, worst = 0, dflt = 0;
    double cand_ms[NCAND] = {0}, trial_ms[NTRIALS] = {0};
    if (tuning.rank == 0) {
        score(cand_ms, trial_ms);
        for (int c = 1; c < (int)NCAND; c++) {
            if (cand_ms[c] < cand_ms[best])
                best = c;
            if (cand_ms[c] > cand_ms[worst])
                worst = c;
        }
    }
    MPI_Bcast(&best, 1, MPI_INT, 0, tuning.comm);
    *tuning.threshold = AUTOTUNE_CANDIDATES[best];
    tuning.active = 0;
    trace_event("autotune", "chosen threshold=%zu sync=%ld score_ms=%.3f", *tuning.threshold,
                tuning.sync,
                tuning.rank == 0 ? cand_ms[best] : 0.0);
    if (tuning.rank == 0) {
        for (int c = 0; c < (int)NCAND; c++)
            if (AUTOTUNE_CANDIDATES[c] == tuning.dflt)
                dflt = c;
        if (tuning.log)
            write_log(cand_ms, trial_ms, best);
        fprintf(stderr, "hvdlab: autotune: fusion threshold %zu bytes chosen at step %ld (median step "
                "%.2f ms; the worst, %zu bytes, %.2f ms; the default, %zu bytes, %.2f ms)%s%s\n",
                AUTOTUNE_CANDIDATES[best], tuning.sync, cand_ms[best], AUTOTUNE_CANDIDATES[worst],
                cand_ms[worst], AUTOTUNE_CANDIDATES[dflt], cand_ms[dflt],
                tuning.log ? "; trials in " : "", tuning.log ? tuning.log : "");
    }
    free(tuning.samples);
    tuning.samples = NULL;
}

void autotune_sync(size_t queued)
{
    if (!tuning.active || queued < 2)
        return;
    const int per = tuning.warmup + tuning.per_trial; /* steps per trial */
    double now = MPI_Wtime();
    /* the step since the last sync ran under trial (sync-1) */
    if (tuning.sync > 0 && tuning.rank == 0) {
        long k = tuning.sync - 1;
        int t = (int)(k / per), pos = (int)(k % per) - tuning.warmup;
        if (pos >= 0)
            tuning.samples[(size_t)t * tuning.per_trial + pos] = now - tuning.last;
    }
    tuning.last = now;
    if (tuning.sync == (long)NTRIALS * per) {
        choose();
        return;
    }
    if (tuning.sync % per == 0) { /* a trial starts with this flush */
        int t = (int)(tuning.sync / per);
        *tuning.threshold = AUTOTUNE_CANDIDATES[candidate_of(t)];
        trace_event("autotune", "trial=%d threshold=%zu sync=%ld", t, *tuning.threshold,
                    tuning.sync);
    }
    tuning.sync++;
}
