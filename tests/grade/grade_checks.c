/* grade_checks.c — one function per lab step, each checking that step's observable behaviour in
 * the trace of a real run (trace.h lists the events). Messages speak to the student and end with
 * a hint. Public: grade_check, grade_step_titles.
 */
#include "grade/grade_checks.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const grade_step_titles[GRADE_STEPS + 1] = {
    "the program runs",
    "hvd_init and pinning each rank to its own device",
    "progress output only on rank 0",
    "gradients averaged by the distributed optimizer",
    "initial state broadcast from rank 0",
    "each rank trains on its own shard",
    "metrics averaged over ranks",
    "checkpoints on rank 0 and resuming",
    "learning rate scaled by the number of ranks",
    "learning-rate warmup, then the schedule",
    "NovoGrad",
};

static int fail(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Optimizer steps each of np ranks makes per epoch: Keras' len(train_iter) // size, what the kit
 * uses. When the batches do not divide evenly, ceil (one step more) is as defensible. */
static int steps_per_epoch(const grade_ctx *g, int np)
{
    return (g->train_n + g->batch - 1) / g->batch / np;
}

static int steps_per_epoch_ceil(const grade_ctx *g, int np)
{
    int batches = (g->train_n + g->batch - 1) / g->batch;
    return (batches + np - 1) / np;
}

/* Every rank 0..np-1 wrote its own rank-R.log; 0 if so. */
static int have_all_ranks(grade_run *r, int np)
{
    for (int k = 0; k < np; k++)
        if (!grade_rank(r, k))
            return -1;
    return 0;
}

/* What a collective's name is in the student's program, for the mismatch message. */
static const char *call_meaning(const char *call)
{
    if (strstr(call, "DistributedOptimizer.grads"))
        return "the gradient averaging in optimizer_step (an optimizer wrapped by "
               "hvd_distributed_optimizer)";
    if (strstr(call, "resume_from_epoch"))
        return "the broadcast of the epoch to resume from";
    if (strstr(call, "broadcast.optimizer"))
        return "hvd_broadcast_optimizer_state";
    if (strstr(call, "broadcast."))
        return "hvd_broadcast_parameters";
    if (strstr(call, ".loss\"") || strstr(call, ".accuracy\""))
        return "hvd_metric_average";
    if (strstr(call, "\"lab."))
        return "the kit's own setup, before training: every rank made it";
    if (strstr(call, "shutdown("))
        return "hvd_shutdown: this rank had already finished";
    return "a collective of your own";
}

/* Copies the line of text holding key (from key to the end of the line) into out; 0 if found. */
static int line_with(const char *text, const char *key, char *out, size_t len)
{
    const char *p = text ? strstr(text, key) : NULL;
    if (!p)
        return -1;
    size_t n = strcspn(p, "\n");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
    return 0;
}

/* The run's own warning and error lines (hvdlab: warning|error: …), indented, at most 4; ""
 * when none. */
static void hvdlab_lines(const grade_run *r, char *out, size_t len)
{
    out[0] = '\0';
    size_t o = 0;
    int n = 0;
    const char *texts[2] = {r->err, r->out};
    for (int t = 0; t < 2; t++)
        for (const char *p = texts[t]; p && *p && n < 4 && o < len;) {
            size_t l = strcspn(p, "\n");
            if (strncmp(p, "hvdlab: warning: ", 17) == 0 || strncmp(p, "hvdlab: error: ", 15) == 0) {
                o += (size_t)snprintf(out + o, len - o, "    %.*s\n", (int)l, p);
                n++;
            }
            p += l + (p[l] == '\n');
        }
}

/* One line per rank: the last collective call its trace shows, and what it is. */
static void last_calls(grade_run *r, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int k = 0; k < GRADE_MAX_PROCS && o < len; k++) {
        grade_proc *p = grade_rank(r, k);
        if (!p)
            break;
        const grade_event *c = NULL;
        for (int i = 0; i < p->nev; i++)
            if (grade_is(&p->ev[i], "collective"))
                c = &p->ev[i];
        char call[300] = "none";
        if (c)
            snprintf(call, sizeof call, "%s(name=\"%s\")", grade_get(c, "op"),
                     grade_get(c, "name"));
        o += (size_t)snprintf(out + o, len - o, "  rank %d's last collective call: %s (%s)\n", k,
                              call, c ? call_meaning(call) : "none yet");
    }
}

static const char same_calls_hint[] =
    "  Hint: every rank must make the same collective calls in the same order: look for a call "
    "made on some ranks only (inside if (hvd_rank() == 0)), or ranks that run a different "
    "number of epochs or steps.";

/* The kit's own line for a rank killed by a signal (guard/watchdog.c), printed by a survivor
 * whichever exit mpirun reports first: "hvdlab: error: [rank 0] rank 1 (pid N on HOST) died:
 * killed by SIGSEGV; ...". 1 with *rank, *sig and its description (strsignal) when err has one. */
static int watchdog_death(const char *err, int *rank, int *sig, char *name, size_t len)
{
    const char *k = err ? strstr(err, ") died: killed by SIG") : NULL;
    if (!k)
        return 0;
    const char *line = k;
    while (line > err && line[-1] != '\n')
        line--;
    const char *r = strstr(line, "] rank ");
    char abbrev[16] = "";
    if (!r || r > k || sscanf(r, "] rank %d (pid", rank) != 1 ||
        sscanf(k, ") died: killed by SIG%15[A-Z0-9]", abbrev) != 1)
        return 0;
    for (int s = 1; s < NSIG; s++) {
        const char *a = sigabbrev_np(s);
        if (a && strcmp(a, abbrev) == 0) {
            *sig = s;
            snprintf(name, len, "%s", strsignal(s));
            return 1;
        }
    }
    return 0;
}

/* The run r did not end well: what happened, in the student's terms. */
static int explain_run(grade_run *r, const char *which, char *msg, size_t len)
{
    char line[1024], lines[2048], calls[1500];
    hvdlab_lines(r, lines, sizeof lines);
    last_calls(r, calls, sizeof calls);
    if (r->interrupted)
        return fail(msg, len, "the %s run was interrupted (signal %d).", which, r->interrupted);
    if (r->status == 124)
        return fail(msg, len, "the %s run did not finish in %d s (it takes a few seconds): it "
                    "hung and was stopped.\n%s%s  Did every rank make the same calls? A rank "
                    "waiting in a collective the others never call hangs the job.\n%s\n  The "
                    "run: %s", which, r->limit, lines, calls, same_calls_hint, r->cmd);
    if (line_with(r->err, "collective mismatch: ", line, sizeof line) == 0 ||
        line_with(r->out, "collective mismatch: ", line, sizeof line) == 0) {
        int ra = -1, rb = -1;
        char ca[400] = "?", cb[400] = "?";
        const char *p = line + strlen("collective mismatch: ");
        const char *but = strstr(p, " but rank ");
        const char *tail = strstr(p, " (every rank must");
        if (but && tail && sscanf(p, "rank %d called", &ra) == 1 &&
            sscanf(but, " but rank %d called", &rb) == 1) {
            const char *a0 = strstr(p, "called ") + 7, *b0 = strstr(but, "called ") + 7;
            snprintf(ca, sizeof ca, "%.*s", (int)(but - a0), a0);
            snprintf(cb, sizeof cb, "%.*s", (int)(tail - b0), b0);
        }
        return fail(msg, len, "the %s run stopped after %.0f s: rank %d called %s but rank %d "
                    "called %s: did every rank make the same calls?\n%s%s\n  The run: %s", which,
                    r->seconds, ra, ca, rb, cb, calls, same_calls_hint, r->cmd);
    }
    if (line_with(r->err, "has shut down (hvd_shutdown) while rank ", line, sizeof line) == 0) {
        /* guard/stall.c: a rank left while another waited in a call it will never join */
        int gone = -1, other = -1;
        char call[400] = "?";
        const char *in = strstr(line, " is in "), *which_rank = strstr(line, ", which rank ");
        sscanf(line, "has shut down (hvd_shutdown) while rank %d", &other);
        if (in && which_rank && which_rank > in) {
            snprintf(call, sizeof call, "%.*s", (int)(which_rank - in - 7), in + 7);
            sscanf(which_rank, ", which rank %d", &gone);
        }
        return fail(msg, len, "the %s run stopped after %.0f s: rank %d called %s but rank %d "
                    "called hvd_shutdown (it had finished): did every rank make the same "
                    "calls?\n%s%s\n  The run: %s", which, r->seconds, other, call, gone, calls,
                    same_calls_hint, r->cmd);
    }
    if (strstr(lines, "stall:"))
        return fail(msg, len, "the %s run stopped after %.0f s: a collective waited for ranks "
                    "that never joined it: did every rank make the same calls?\n%s%s%s\n  The "
                    "run: %s", which, r->seconds, lines, calls, same_calls_hint, r->cmd);
    int rank = -1, sig = 0;
    char signame[64] = "";
    const char *d = r->err ? strstr(r->err, "process rank ") : NULL;
    if ((d && strstr(d, "exited on signal") &&
         sscanf(d, "process rank %d", &rank) == 1 &&
         sscanf(strstr(d, "exited on signal"), "exited on signal %d (%63[^)])", &sig, signame) >= 1) ||
        watchdog_death(r->err, &rank, &sig, signame, sizeof signame))
        return fail(msg, len, "the %s run crashed: rank %d died: %s (signal %d) after %.0f s.\n"
                    "%s  Last lines of its output:\n%s%s  Hint: run it yourself, e.g. %s; a crash "
                    "on one rank only often means a rank-dependent branch (if (hvd_rank() …)) "
                    "uses something only rank 0 set up.", which, rank, signame[0] ? signame : "?",
                    sig, r->seconds, lines, grade_tail(r->out, 3), grade_tail(r->err, 4), r->cmd);
    char died[512] = "";
    if (line_with(r->err, "exited on signal", line, sizeof line) == 0)
        snprintf(died, sizeof died, "  mpirun: %.400s\n", line);
    return fail(msg, len, "the %s run failed (exit %d) after %.0f s: %s\n%s%s  Last lines of its "
                "output:\n%s%s", which, r->status, r->seconds, r->cmd, died, lines,
                grade_tail(r->out, 4), grade_tail(r->err, 6));
}

static int check_runs(grade_ctx *g, grade_run *r, const char *which, char *msg, size_t len)
{
    if (r->status != 0)
        return explain_run(r, which, msg, len);
    if (!strstr(r->out, "Test accuracy:"))
        return fail(msg, len, "the %s run printed no \"Test accuracy:\" line.\n  Hint: keep the "
                    "final evaluation at the end of main.", which);
    (void)g;
    return 0;
}

/* Ranks on GPUs must use as many as there are (up to one each): with fewer GPUs than ranks,
 * sharing is what hvd_pin_device(hvd_local_rank(), …) does, and the collectives stage through
 * the host; with enough GPUs, two ranks on one means the local rank was not passed. */
static int check_gpu_spread(const int *gpu, int np, int gpus, char *msg, size_t len)
{
    int distinct = 0, want = np < gpus ? np : gpus;
    for (int k = 0; k < np; k++) {
        int seen = 0;
        for (int j = 0; j < k; j++)
            seen |= gpu[j] == gpu[k];
        distinct += !seen;
    }
    if (distinct >= want)
        return 0;
    for (int k = 1; k < np; k++)
        for (int j = 0; j < k; j++)
            if (gpu[j] == gpu[k])
                return fail(msg, len, "ranks %d and %d were pinned to the same GPU (%d) though "
                            "%d are visible: they fight over it while another idles.\n  Hint: "
                            "pass hvd_local_rank() to hvd_pin_device.", j, k, gpu[k], gpus);
    return 0;
}

/* Whether the process of rank p pinned itself before hvd_init: its pid-P.log (the trace before
 * hvd_init) holds a pin event. */
static int pinned_before_init(grade_run *r, const grade_proc *p)
{
    const char *pid = p->nev > 0 ? grade_get(&p->ev[0], "pid") : NULL;
    for (int i = 0; pid && i < r->nprocs; i++) {
        const grade_proc *q = &r->procs[i];
        if (strstr(q->file, "/pid-") && q->nev > 0 && same(grade_get(&q->ev[0], "pid"), pid)
            && grade_nth(q, "pin", 0))
            return 1;
    }
    return 0;
}

static int check_init(grade_ctx *g, char *msg, size_t len)
{
    grade_run *r = &g->a;
    if (have_all_ranks(r, g->np) != 0) {
        int uninit = 0;
        for (int i = 0; i < r->nprocs; i++)
            uninit += strstr(r->procs[i].file, "/pid-") != NULL;
        if (uninit)
            return fail(msg, len, "%d processes ran, but each one thinks it is rank 0 of 1.\n"
                        "  Hint: call hvd_init(&argc, &argv) at the start of main.", uninit);
        return fail(msg, len, "not every rank 0..%d reported in (no trace of hvd_init).\n"
                    "  Hint: call hvd_init(&argc, &argv) at the start of main.", g->np - 1);
    }
    const char *cpus[GRADE_MAX_PROCS] = {0};
    int gpu[GRADE_MAX_PROCS], gpus = 0;
    for (int k = 0; k < g->np; k++) {
        grade_proc *p = grade_rank(r, k);
        if (p->size != g->np)
            return fail(msg, len, "rank %d reports a world of %d processes, mpirun started %d.",
                        k, p->size, g->np);
        const grade_event *pin = grade_nth(p, "pin", 0);
        if (!pin && pinned_before_init(r, p))
            return fail(msg, len, "rank %d called hvd_pin_device before hvd_init, when it did not "
                        "know its local rank yet.\n  Hint: call hvd_init(&argc, &argv) first, "
                        "then hvd_pin_device(hvd_local_rank(), NULL).", k);
        if (!pin)
            return fail(msg, len, "rank %d never pinned itself to a device.\n  Hint: after "
                        "hvd_init, call hvd_pin_device(hvd_local_rank(), NULL).", k);
        const char *dev = grade_get(pin, "device");
        gpu[k] = -1 - k; /* a rank on the CPU shares no GPU */
        if (same(dev, "cuda")) { /* judged below, over all ranks */
            /* On one GPU every rank shares GPU 0 whatever it passed, so the argument is what
             * tells hvd_pin_device(hvd_local_rank()) from hvd_pin_device(0). */
            const grade_event *init = grade_nth(p, "init", 0);
            const char *want = init ? grade_get(init, "local_rank") : NULL;
            const char *got = grade_get(pin, "local_rank");
            if (want && got && !same(want, got))
                return fail(msg, len, "rank %d (local rank %s) passed %s to hvd_pin_device: on "
                            "a machine with one GPU per rank, ranks would share a GPU.\n  Hint: "
                            "pass hvd_local_rank() to hvd_pin_device.", k, want, got);
            gpu[k] = atoi(grade_get(pin, "gpu") ? grade_get(pin, "gpu") : "-1");
            gpus = atoi(grade_get(pin, "gpus") ? grade_get(pin, "gpus") : "0");
            continue;
        }
        cpus[k] = same(dev, "cpu") ? grade_get(pin, "cpus") : dev;
        for (int j = 0; j < k; j++)
            if (same(cpus[j], cpus[k]))
                return fail(msg, len, "ranks %d and %d were pinned to the same %s (%s): they fight "
                            "over it.\n  Hint: pass hvd_local_rank() to hvd_pin_device.", j, k,
                            same(dev, "cpu") ? "cores" : "device", cpus[k]);
    }
    return gpus > 0 ? check_gpu_spread(gpu, g->np, gpus, msg, len) : 0;
}

static int check_rank0_prints(grade_ctx *g, char *msg, size_t len)
{
    grade_run *r = &g->a;
    grade_proc *p0 = grade_rank(r, 0);
    if (!p0 || grade_count(p0, "progress") == 0)
        return fail(msg, len, "rank 0 printed no progress.\n  Hint: rank 0 is the one that should "
                    "print (verbose = hvd_rank() == 0).");
    for (int k = 1; k < g->np; k++) {
        grade_proc *p = grade_rank(r, k);
        int n = grade_count(p, "progress");
        if (n > 0)
            return fail(msg, len, "rank %d printed %d progress lines too, e.g. \"%s\": the output "
                        "is repeated once per rank.\n  Hint: print only where hvd_rank() == 0 "
                        "(pass verbose = hvd_rank() == 0 to the progress output).", k, n,
                        grade_get(grade_nth(p, "progress", 0), "text"));
    }
    /* The bar is not all: verbose also guards the banner and the warmup's message (printed once
     * a run), which the trace does not hold; count them in the job's output. */
    static const char *const once[] = {"trainable parameters. Data from",
                                       "finished gradual learning rate warmup"};
    for (size_t i = 0; i < sizeof once / sizeof *once; i++) {
        int n = 0;
        const char *first = r->out ? strstr(r->out, once[i]) : NULL;
        for (const char *q = first; q && (q = strstr(q, once[i])) != NULL; q++)
            n++;
        if (n < 2)
            continue;
        while (first > r->out && first[-1] != '\n') /* the whole line */
            first--;
        return fail(msg, len, "the line \"%.*s\" was printed %d times: ranks other than 0 print "
                    "it too.\n  Hint: set verbose = hvd_rank() == 0 and pass it to everything "
                    "that prints: progress_init, lr_lab_init, and the if (verbose) before the "
                    "model's line.", (int)strcspn(first, "\n"), first, n);
    }
    return 0;
}

/* Compares key of the i-th step event of run r across ranks; -1 with the first difference. */
static int run_steps_agree(grade_ctx *g, grade_run *r, const char *key, int *bad_step,
                           int *bad_rank)
{
    grade_proc *p0 = grade_rank(r, 0);
    int n = grade_count(p0, "step");
    for (int i = 0; i < n; i++) {
        const char *v0 = grade_get(grade_nth(p0, "step", i), key);
        for (int k = 1; k < g->np; k++) {
            grade_proc *pk = grade_rank(r, k);
            const grade_event *e = pk ? grade_nth(pk, "step", i) : NULL;
            if (!e || !same(v0, grade_get(e, key))) {
                *bad_step = i + 1;
                *bad_rank = k;
                return -1;
            }
        }
    }
    return 0;
}

static int steps_agree(grade_ctx *g, const char *key, int *bad_step, int *bad_rank)
{
    return run_steps_agree(g, &g->a, key, bad_step, bad_rank);
}

/* The name of an allreduce of gradients of the program's own (not the distributed optimizer's,
 * not the kit's, not a metric average: those hold 1 to 4 numbers, the smallest gradient, fc.b,
 * 10) when p made some but none between a train_batch and the next step, where averaging the
 * gradients must happen; NULL otherwise. */
static const char *misplaced_allreduce(const grade_proc *p)
{
    const char *name = NULL;
    int in_step = 0; /* after a train_batch, before its step */
    for (int i = 0; p && i < p->nev; i++) {
        const grade_event *ev = &p->ev[i];
        if (grade_is(ev, "train_batch"))
            in_step = 1;
        else if (grade_is(ev, "step"))
            in_step = 0;
        else if (grade_is(ev, "collective") && same(grade_get(ev, "op"), "allreduce")) {
            const char *n = grade_get(ev, "name");
            if (!n || strstr(n, "DistributedOptimizer") || strncmp(n, "lab.", 4) == 0 ||
                grade_num(ev, "count", 0) < 10)
                continue;
            if (in_step)
                return NULL;
            if (!name)
                name = n;
        }
    }
    return name;
}

/* Behaviour, not code: the gradient every rank applied at a step must be the mean of the ranks'
 * own gradients of that step, however the student averaged them (hvd_distributed_optimizer or
 * an allreduce by hand). The trace gives each a linear digest (grad_dot, params_digest_at): the
 * applied gradient's digest must be the mean of the local ones, within 1% of the gradients' norm
 * (fp16 compression errs by ~0.03%; a sum, or one rank's own gradient, by tens of per cent). */
/* Rank p wrapped an optimizer (hvd_distributed_optimizer traces "wrap") but the optimizer
 * that stepped was not the wrapped one (distributed=0 in its step events, or no optimizer_step
 * at all): the update bypassed the wrapper. */
static int bypassed_wrapper(const grade_proc *p)
{
    if (!p || !grade_nth(p, "wrap", 0))
        return 0;
    const grade_event *st = grade_nth(p, "step", 0);
    return !st || same(grade_get(st, "distributed"), "0");
}

static const char bypass_msg[] =
    "rank %d wrapped an optimizer with hvd_distributed_optimizer, but the updates bypassed the "
    "wrapper: %s, so no gradient was averaged over the ranks.\n  Hint: make every update with "
    "the optimizer the wrapper returned, through optimizer_step: "
    "opt = hvd_distributed_optimizer(opt); ... optimizer_step(opt, ps); (not a second, unwrapped "
    "optimizer, nor its update function called by hand).";

static int check_distributed(grade_ctx *g, char *msg, size_t len)
{
    for (int k = 0; k < g->np; k++) {
        grade_proc *p = grade_rank(&g->a, k);
        if (bypassed_wrapper(p))
            return fail(msg, len, bypass_msg, k, grade_nth(p, "step", 0)
                        ? "optimizer_step was called with an optimizer that is not the wrapped one"
                        : "no update went through optimizer_step");
        if (!grade_nth(p, "step", 0))
            return fail(msg, len, "rank %d made no optimizer step.", k);
    }
    int s, k;
    if (steps_agree(g, "grad_sum", &s, &k) != 0) {
        char where[400] = "";
        const char *name = misplaced_allreduce(grade_rank(&g->a, 0));
        if (name)
            snprintf(where, sizeof where, "\n  Your allreduce(name=\"%s\") ran, but not between "
                     "wrn_train_batch, which computes the gradients, and optimizer_step, which "
                     "applies them: the updates used gradients that were never averaged.", name);
        return fail(msg, len, "at step %d rank %d applied different gradients from rank 0: each "
                    "rank updated its weights with its own gradients only.%s\n  Hint: wrap the "
                    "optimizer so it averages the gradients over the ranks: "
                    "opt = hvd_distributed_optimizer(opt);", s, k, where);
    }
    int n = grade_count(grade_rank(&g->a, 0), "step");
    for (int i = 0; i < n; i++) {
        double mean = 0, scale = 0;
        for (k = 0; k < g->np; k++) {
            const grade_event *b = grade_nth(grade_rank(&g->a, k), "train_batch", i);
            if (!b)
                return fail(msg, len, "rank %d made step %d without computing gradients "
                            "(wrn_train_batch) first.", k, i + 1);
            mean += grade_num(b, "grad_dot", NAN) / g->np;
            scale = fmax(scale, grade_num(b, "grad_norm", NAN));
        }
        for (k = 0; k < g->np; k++) {
            const grade_event *st = grade_nth(grade_rank(&g->a, k), "step", i);
            double got = grade_num(st, "grad_dot", NAN);
            if (fabs(got - mean) <= 1e-2 * scale)
                continue;
            if (fabs(got - mean / g->np) <= 1e-2 * scale && fabs(mean) > 1e-2 * scale)
                return fail(msg, len, "at step %d the ranks applied the mean of their gradients "
                            "divided by %d again: the average was applied twice, so the "
                            "effective learning rate is %d times too small.\n  Hint: average "
                            "once: HVD_AVERAGE already divides by the number of ranks (and the "
                            "wrapper averages by itself): opt = hvd_distributed_optimizer(opt); "
                            "and nothing more.", i + 1, g->np, g->np);
            if (fabs(got - g->np * mean) <= 1e-2 * scale)
                return fail(msg, len, "at step %d the ranks applied the SUM of their gradients, "
                            "not the mean: %d times the average, so the effective learning rate "
                            "is %d times too large.\n  Hint: average, do not sum: "
                            "hvd_allreduce(…, HVD_AVERAGE, …), or simply "
                            "opt = hvd_distributed_optimizer(opt);", i + 1, g->np, g->np);
            return fail(msg, len, "at step %d rank %d applied a gradient that is not the mean of "
                        "the ranks' gradients (digest %.6g, the mean's %.6g).\n  Hint: average "
                        "the gradients over the ranks after computing them and before the "
                        "update: opt = hvd_distributed_optimizer(opt);", i + 1, k, got, mean);
        }
    }
    return 0;
}

static int check_broadcast(grade_ctx *g, char *msg, size_t len)
{
    int s, k;
    if (steps_agree(g, "param_sum", &s, &k) != 0) {
        /* Broadcast right, update not: the same weights in, the same gradient applied (step
         * 3's check), different weights out: the ranks stepped with different settings. The
         * broadcast must come before the step (events in trace order): one made after training
         * also leaves equal sums, and there the broadcast is what is wrong. */
        const grade_event *b0 = grade_find(grade_rank(&g->a, 0), "params", "when", "broadcast");
        const grade_event *bk = grade_find(grade_rank(&g->a, k), "params", "when", "broadcast");
        const grade_event *e0 = grade_nth(grade_rank(&g->a, 0), "step", s - 1);
        const grade_event *ek = grade_nth(grade_rank(&g->a, k), "step", s - 1);
        if (b0 && bk && e0 && ek && b0 < e0 && bk < ek
            && same(grade_get(b0, "sum"), grade_get(bk, "sum"))
            && same(grade_get(e0, "grad_sum"), grade_get(ek, "grad_sum")))
            return fail(msg, len, "ranks ended step %d with different weights (rank %d differs "
                        "from rank 0), though they started from the same broadcast weights and "
                        "applied the same gradient: the update differed (learning rate %s on "
                        "rank 0, %s on rank %d).\n  Hint: every rank must set up the optimizer "
                        "and its learning rate the same way: no if (hvd_rank() == 0) there.", s,
                        k, grade_get(e0, "lr"), grade_get(ek, "lr"), k);
        if (b0 && e0 && b0 > e0) { /* trace order: the broadcast came after step s */
            const grade_proc *p0 = grade_rank(&g->a, 0);
            int before = 0; /* rank 0's steps before its broadcast (one array: in trace order) */
            while (grade_nth(p0, "step", before) && grade_nth(p0, "step", before) < b0)
                before++;
            return fail(msg, len, "ranks ended step %d with different weights (rank %d differs "
                        "from rank 0): the broadcast from rank 0 came too late, after %d "
                        "optimizer step(s) of rank 0, when the ranks had already trained "
                        "apart.\n  Hint: broadcast once, before the training loop (after the "
                        "model, the optimizer and the resume code): "
                        "hvd_broadcast_parameters(ps, 0); hvd_broadcast_optimizer_state(opt, 0);",
                        s, k, before);
        }
        return fail(msg, len, "ranks ended step %d with different weights (rank %d differs from "
                    "rank 0).\n  Hint: did you broadcast the initial parameters and optimizer "
                    "state from rank 0? hvd_broadcast_parameters(ps, 0); "
                    "hvd_broadcast_optimizer_state(opt, 0);", s, k);
    }
    /* Equal weights also come from another root, or with the optimizer state left out while it
     * is all zeros; both go wrong once only rank 0 has loaded a checkpoint (step 7). */
    grade_proc *p0 = grade_rank(&g->a, 0);
    const grade_event *bp = grade_find(p0, "params", "when", "broadcast");
    const grade_event *bo = grade_find(p0, "collective", "name", "broadcast.optimizer_header");
    const char *root = bp ? grade_get(bp, "root") : NULL;
    if (!root && bo)
        root = grade_get(bo, "root");
    if (root && !same(root, "0"))
        return fail(msg, len, "the initial state was broadcast from rank %s, not from rank 0: "
                    "the weights agree now, but it is rank 0 that loads a checkpoint (step 7), "
                    "and the others must take its state.\n  Hint: the root is the last "
                    "argument: hvd_broadcast_parameters(ps, 0); "
                    "hvd_broadcast_optimizer_state(opt, 0);", root);
    if (!bo)
        return fail(msg, len, "the optimizer state (momentum, step count) was never broadcast: "
                    "harmless while it is all zeros, not once rank 0 has loaded it from a "
                    "checkpoint (step 7).\n  Hint: after the resume code, "
                    "hvd_broadcast_optimizer_state(opt, 0);");
    if (!same(grade_get(bo, "root"), "0"))
        return fail(msg, len, "the optimizer state was broadcast from rank %s, not from rank "
                    "0.\n  Hint: the root is the last argument: "
                    "hvd_broadcast_optimizer_state(opt, 0);", grade_get(bo, "root"));
    return 0;
}

/* Parses "3,17,42" into a 0/1 mark per index, counting repeats; -1 on an index out of range. */
static int mark_indices(const char *list, int n, unsigned char *seen, int *repeats)
{
    const char *p = list;
    while (p && *p) {
        char *end;
        long i = strtol(p, &end, 10);
        if (end == p || i < 0 || i >= n)
            return -1;
        *repeats += seen[i];
        seen[i] = 1;
        p = *end == ',' ? end + 1 : NULL;
    }
    return 0;
}

/* What a loader's shards are checked for: its images and the words of its messages. */
typedef struct {
    int n;            /* images in use: the shard events with n=<n>, shuffle=1 */
    const char *data; /* "training", "validation" */
    const char *did;  /* "trained", "validated" */
    const char *hint;
} shard_kind;

/* The ranks' shards of epoch e (0-based) of one loader must be disjoint and cover its images; the
 * only repeats allowed are DistributedSampler's padding (ceil(n/np)*np - n samples drawn twice).
 * A loader's first shard event of the epoch is taken (it traces one when created, too). */
static int shards_split(grade_run *r, int np, int e, const shard_kind *s, char *msg, size_t len)
{
    int pad = (s->n + np - 1) / np * np - s->n;
    char nstr[32];
    snprintf(nstr, sizeof nstr, "%d", s->n);
    unsigned char *seen = calloc((size_t)s->n, 1);
    if (!seen)
        return fail(msg, len, "out of memory for %d image marks.", s->n);
    int rc = 0, repeats = 0, found = 0;
    for (int k = 0; k < np && rc == 0; k++) {
        grade_proc *p = grade_rank(r, k);
        const grade_event *sh = NULL;
        for (int i = 0; p && (sh = grade_nth(p, "shard", i)); i++)
            if (same(grade_get(sh, "n"), nstr) && same(grade_get(sh, "shuffle"), "1") &&
                (int)grade_num(sh, "epoch", -1) == e)
                break;
        if (!sh)
            continue;
        found++;
        if (mark_indices(grade_get(sh, "idx"), s->n, seen, &repeats) != 0)
            rc = fail(msg, len, "rank %d's %s shard of epoch %d has no readable index list.", k,
                      s->data, e + 1);
    }
    if (rc == 0 && found < np)
        rc = fail(msg, len, "with %d ranks, epoch %d: only %d ranks started the %s data.", np,
                  e + 1, found, s->data);
    else if (rc == 0 && repeats > pad)
        rc = fail(msg, len, "with %d ranks, epoch %d: the ranks %s on the same images (%d of %d "
                  "%s images drawn by more than one rank).\n  Hint: %s", np, e + 1, s->did,
                  repeats, s->n, s->data, s->hint);
    for (int i = 0; i < s->n && rc == 0; i++)
        if (!seen[i])
            rc = fail(msg, len, "with %d ranks, epoch %d: image %d of the %s set was never "
                      "drawn: the shards do not cover the data.", np, e + 1, i, s->data);
    free(seen);
    return rc;
}

/* Each epoch the ranks' shards of the training set must split it; so must the validation
 * loader's (its first epoch: it cycles through more as validations draw batches). Then each rank
 * makes its share of the steps. */
static int check_shards_of(grade_ctx *g, grade_run *r, int np, int epochs, char *msg, size_t len)
{
    /* The two loaders are told apart by their sizes (the test loader does not shuffle). */
    const shard_kind train = {g->train_n, "training", "trained", "build the training loader for "
                              "this rank's shard: rank = hvd_rank(), size = hvd_size()."};
    const shard_kind val = {g->test_n, "validation", "validated", "give the validation loader "
                            "this rank's shard too: lab_val_loader(&a, &ds, me), with lab_shard "
                            "me = {hvd_rank(), hvd_size()};"};
    for (int e = 0; e < epochs; e++)
        if (shards_split(r, np, e, &train, msg, len))
            return -1;
    if (shards_split(r, np, 0, &val, msg, len))
        return -1;
    int spe = steps_per_epoch(g, np);
    int spe_ceil = steps_per_epoch_ceil(g, np);
    for (int k = 0; k < np; k++) {
        int steps = grade_count(grade_rank(r, k), "step");
        if (steps != spe * epochs && steps != spe_ceil * epochs) {
            char also[64] = "";
            if (spe_ceil != spe)
                snprintf(also, sizeof also, " (or %d, rounding up)", spe_ceil);
            return fail(msg, len, "with %d ranks, rank %d made %d optimizer steps in %d epoch(s); "
                        "with %d images and batch %d each rank should make %d per epoch%s.\n  "
                        "Hint: steps_per_epoch = ceil(train images / batch) / hvd_size() (the kit "
                        "rounds this division down).", np, k, steps, epochs, g->train_n, g->batch,
                        spe, also);
        }
    }
    return 0;
}

static int check_shards(grade_ctx *g, char *msg, size_t len)
{
    if (check_shards_of(g, &g->a, g->np, g->epochs, msg, len))
        return -1;
    if (!g->have_c)
        return 0;
    if (check_runs(g, &g->c, "3-rank", msg, len))
        return -1;
    return check_shards_of(g, &g->c, 3, 1, msg, len);
}

static const char *const metric_keys[] = {"loss", "accuracy", "val_loss", "val_accuracy"};

/* The n-th (0-based) "metrics" event of p with when=<when>, or NULL. */
static const grade_event *metrics_nth(const grade_proc *p, const char *when, int n)
{
    const grade_event *m;
    for (int i = 0; p && (m = grade_nth(p, "metrics", i)); i++)
        if (same(grade_get(m, "when"), when) && n-- == 0)
            return m;
    return NULL;
}

/* What p reported at the end of epoch e (1-based), or NULL. */
static const grade_event *metrics_of_epoch(const grade_proc *p, int e)
{
    char es[16];
    snprintf(es, sizeof es, "%d", e);
    const grade_event *m;
    for (int i = 0; (m = metrics_nth(p, "epoch", i)); i++)
        if (same(grade_get(m, "epoch"), es))
            return m;
    return NULL;
}

/* What rank p measured on its own in epoch e (1-based): loss, accuracy of its training batches
 * (train_batch events after its training loader's shard event of that epoch) and of its
 * validation (its e-th evaluate event). 0 if it has both. */
static int local_metrics(const grade_ctx *g, const grade_proc *p, int e, double out[4])
{
    double loss = 0, correct = 0, count = 0;
    int epoch = -1;
    for (int i = 0; p && i < p->nev; i++) {
        const grade_event *ev = &p->ev[i];
        if (grade_is(ev, "shard") && (int)grade_num(ev, "n", -1) == g->train_n)
            epoch = (int)grade_num(ev, "epoch", -1);
        else if (grade_is(ev, "train_batch") && epoch == e - 1) {
            double c = grade_num(ev, "count", 0);
            loss += grade_num(ev, "loss", NAN) * c;
            correct += grade_num(ev, "correct", 0);
            count += c;
        }
    }
    const grade_event *val = p ? grade_nth(p, "evaluate", e - 1) : NULL;
    if (count == 0 || !val)
        return -1;
    out[0] = loss / count;
    out[1] = correct / count;
    out[2] = grade_num(val, "loss", NAN);
    out[3] = grade_num(val, "accuracy", NAN);
    return 0;
}

static int check_metrics(grade_ctx *g, char *msg, size_t len)
{
    grade_proc *p0 = grade_rank(&g->a, 0);
    /* 1. The end-of-epoch metrics: every rank that reports them reports rank 0's values (a
     *    solution may skip the progress calls on silent ranks altogether). */
    for (int e = 1; e <= g->epochs; e++) {
        const grade_event *m0 = metrics_of_epoch(p0, e);
        if (!m0)
            return fail(msg, len, "rank 0 reported no metrics for epoch %d.", e);
        for (int k = 1; k < g->np; k++) {
            const grade_event *m = metrics_of_epoch(grade_rank(&g->a, k), e);
            for (size_t j = 0; m && j < sizeof metric_keys / sizeof *metric_keys; j++)
                if (!same(grade_get(m, metric_keys[j]), grade_get(m0, metric_keys[j])))
                    return fail(msg, len, "epoch %d: rank %d ended with %s = %s, rank 0 with %s: "
                                "each rank only knows its own shard's metrics.\n  Hint: average "
                                "the train and validation metrics over the ranks with "
                                "hvd_metric_average before printing them.", e, k,
                                metric_keys[j], grade_get(m, metric_keys[j]),
                                grade_get(m0, metric_keys[j]));
        }
    }
    /* 2. What rank 0 printed is the mean over the ranks of what each measured on its own shard
     *    (train_batch and evaluate events), whichever call averaged it (hvd_metric_average or an
     *    allreduce by hand). */
    for (int e = 1; e <= g->epochs; e++) {
        const grade_event *m0 = metrics_of_epoch(p0, e);
        double want[4] = {0, 0, 0, 0};
        for (int k = 0; k < g->np; k++) {
            double local[4];
            if (local_metrics(g, grade_rank(&g->a, k), e, local) != 0)
                return fail(msg, len, "rank %d did not train and validate in epoch %d.", k, e);
            for (int j = 0; j < 4; j++)
                want[j] += local[j] / g->np;
        }
        for (int j = 0; j < 4; j++) {
            double got = grade_num(m0, metric_keys[j], NAN);
            if (fabs(got - want[j]) <= 1e-5 * (1 + fabs(want[j])))
                continue;
            double own[4], sum = g->np * want[j];
            if (fabs(got - sum) <= 1e-5 * (1 + fabs(sum)))
                return fail(msg, len, "epoch %d: rank 0 printed %s = %.6g, the SUM over the ranks, "
                            "not the mean (%.6g): %d times what the job measured.\n  Hint: "
                            "average, do not sum: hvd_allreduce(…, HVD_AVERAGE, …), or simply "
                            "hvd_metric_average(&train_m, \"train\");", e, metric_keys[j], got,
                            want[j], g->np);
            local_metrics(g, p0, e, own);
            const char *why = fabs(got - own[j]) <= 1e-5 * (1 + fabs(own[j]))
                                  ? " (rank 0's own value: it was not averaged)" : "";
            return fail(msg, len, "epoch %d: rank 0 printed %s = %.6g, but the mean over the ranks "
                        "of what each measured is %.6g%s.\n  Hint: average the train and "
                        "validation metrics over the ranks before printing them: "
                        "hvd_metric_average(&train_m, \"train\");", e, metric_keys[j], got,
                        want[j], why);
        }
    }
    return 0;
}

static int check_checkpoints(grade_ctx *g, char *msg, size_t len)
{
    for (int k = 1; k < g->np; k++) {
        int n = grade_count(grade_rank(&g->a, k), "ckpt_save");
        if (n)
            return fail(msg, len, "rank %d wrote %d checkpoints too: every rank writes the same "
                        "file at once.\n  Hint: save only where hvd_rank() == 0.", k, n);
    }
    grade_proc *p0 = grade_rank(&g->a, 0);
    for (int e = 1; e <= g->epochs; e++) {
        char es[16];
        snprintf(es, sizeof es, "%d", e);
        const grade_event *s = grade_find(p0, "ckpt_save", "epoch", es);
        if (!s)
            return fail(msg, len, "no checkpoint was written after epoch %d.\n  Hint: with "
                        "--use-checkpointing, rank 0 saves one at the end of every epoch.", e);
        if (access(grade_get(s, "path"), R_OK) != 0)
            return fail(msg, len, "checkpoint %s was reported but is not there.",
                        grade_get(s, "path"));
        /* Written after the epoch's steps (trace order: one array), not before them. */
        int before = 0;
        while (grade_nth(p0, "step", before) && grade_nth(p0, "step", before) < s)
            before++;
        if (before < e * steps_per_epoch(g, g->np))
            return fail(msg, len, "the checkpoint of epoch %d was written before the epoch "
                        "trained: after %d optimizer steps, where epoch %d ends after %d. It "
                        "holds the weights of the epoch before, and a resumed run would train "
                        "epoch %d again from them.\n  Hint: save at the end of the epoch loop's "
                        "body, after the training and the validation: "
                        "ckpt_save_model(a.log_dir, epoch + 1, …) where hvd_rank() == 0.", e,
                        before, e, e * steps_per_epoch(g, g->np), e);
    }
    if (!g->have_b)
        return 0;
    if (check_runs(g, &g->b, "resumed", msg, len)) {
        size_t used = strlen(msg);
        snprintf(msg + used, len - used, "\n  In the resumed run only rank 0's --log-dir holds "
                 "the checkpoints; the other ranks' is empty, as on nodes that cannot see rank 0's "
                 "disk: rank 0 reads, then broadcasts the epoch and the weights to everyone.");
        return -1;
    }
    grade_proc *b0 = grade_rank(&g->b, 0);
    char last[16];
    snprintf(last, sizeof last, "%d", g->epochs);
    const grade_event *rs = b0 ? grade_find(b0, "ckpt_restore", "epoch", last) : NULL;
    if (!rs)
        return fail(msg, len, "run again with --epochs %d, rank 0 did not restore the checkpoint "
                    "of epoch %d.\n  Hint: rank 0 finds the latest epoch (ckpt_latest_epoch), "
                    "broadcasts it, and loads that checkpoint.", g->epochs + 1, g->epochs);
    const grade_event *lastep = grade_nth(p0, "step", grade_count(p0, "step") - 1);
    const grade_event *rp = grade_find(b0, "params", "when", "restore");
    if (!rp || !lastep || !same(grade_get(rp, "sum"), grade_get(lastep, "param_sum")))
        return fail(msg, len, "the restored weights are not the ones saved at the end of the "
                    "first run.");
    for (int k = 0; k < g->np; k++) {
        grade_proc *p = grade_rank(&g->b, k);
        const grade_event *first = p ? grade_nth(p, "step", 0) : NULL;
        int found = 0;
        for (int i = 0; p && i < p->nev && &p->ev[i] != first; i++)
            found |= grade_is(&p->ev[i], "params") && same(grade_get(&p->ev[i], "sum"),
                                                          grade_get(rp, "sum"));
        if (!found)
            return fail(msg, len, "after resuming, rank %d did not start from the restored "
                        "weights.\n  Hint: load on rank 0, then broadcast parameters and "
                        "optimizer state from rank 0 to everyone.", k);
    }
    int spe = steps_per_epoch(g, g->np);
    char first_epoch[64], skipped[64];
    snprintf(first_epoch, sizeof first_epoch, "Epoch %d/%d", g->epochs + 1, g->epochs + 1);
    snprintf(skipped, sizeof skipped, "Epoch 1/%d", g->epochs + 1);
    if (!strstr(g->b.out, first_epoch) || strstr(g->b.out, skipped))
        return fail(msg, len, "resuming after epoch %d should train only \"%s\"; the output "
                    "was:\n%s\n  Hint: start the epoch loop at the resumed epoch.", g->epochs,
                    first_epoch, grade_tail(g->b.out, 8));
    int spe_ceil = steps_per_epoch_ceil(g, g->np);
    if (grade_count(b0, "step") != spe && grade_count(b0, "step") != spe_ceil)
        return fail(msg, len, "the resumed run made %d steps on rank 0, expected one epoch (%d).",
                    grade_count(b0, "step"), spe);
    /* What holds for a fresh run holds for a resumed one: every rank the same weights after
     * every step (their momentum and step count too, or the weights part at the first step). */
    int s, k;
    if (run_steps_agree(g, &g->b, "param_sum", &s, &k) != 0)
        return fail(msg, len, "after resuming, the ranks ended step %d of epoch %d with different "
                    "weights (rank %d differs from rank 0): they train different models.\n  Hint: "
                    "rank 0 restored the optimizer's state (momentum, step count) with the "
                    "weights; hand it to everyone too: hvd_broadcast_optimizer_state(opt, 0); "
                    "after loading.", s, g->epochs + 1, k);
    /* The third part: a run stopped by a signal saves mid-epoch only when the program resumes
     * mid-epoch, which resume_batch says (train/stop.h); it traces the resumed epoch. */
    if (!grade_nth(b0, "resume", 0))
        return fail(msg, len, "the resumed run never asked resume_batch where its epoch starts: "
                    "without it a run stopped by a signal saves nothing mid-epoch (\"nothing "
                    "saved (this program resumes at epoch boundaries only; …)\") and loses the "
                    "epoch's work.\n  Hint: start the batch loop there: for (int b = "
                    "resume_batch(&train, epoch); b < steps_per_epoch; b++)");
    return 0;
}

/* lr of the i-th step of rank k in run r, or NAN. */
static double step_lr(grade_run *r, int k, int i)
{
    const grade_event *e = grade_nth(grade_rank(r, k), "step", i);
    return e ? grade_num(e, "lr", NAN) : NAN;
}

static int close_to(double a, double b) { return fabs(a - b) <= 1e-5 * fabs(b); }

/* Run r on np ranks: every rank steps with rank 0's rates, and they reach base LR x np. */
static int lr_scaled_in(grade_ctx *g, grade_run *r, int np, char *msg, size_t len)
{
    double max = 0;
    int n = grade_count(grade_rank(r, 0), "step");
    /* Rank 0's rate is the one checked below; every other rank must step with the same. */
    for (int k = 1; k < np; k++)
        for (int i = 0; i < n; i++)
            if (!close_to(step_lr(r, k, i), step_lr(r, 0, i)))
                return fail(msg, len, "at step %d rank %d used learning rate %g, rank 0 %g: "
                            "the ranks apply the same averaged gradient with different rates, "
                            "so their weights part.\n  Hint: scale the learning rate the same "
                            "way on every rank: lr_scaled(base_lr, hvd_size()).", i + 1, k,
                            step_lr(r, k, i), step_lr(r, 0, i));
    for (int i = 0; i < n; i++)
        max = fmax(max, step_lr(r, 0, i));
    double want = g->base_lr * np;
    /* Still rising at the run's last steps: a warmup (step 9) had not ended, and whether the
     * target is right shows only after it: step 9's check judges the ramp. No advice to scale
     * here, which would be wrong for a student who scaled and got the warmup wrong. */
    int rising = n >= 2 && step_lr(r, 0, n - 1) > step_lr(r, 0, n - 2);
    if (!close_to(max, want) && rising && max < want)
        return 0;
    if (!close_to(max, want))
        return fail(msg, len, "the learning rate reached %g; with --base-lr %g on %d ranks it "
                    "should reach %g.\n  Hint: the effective batch is %d times larger, so scale "
                    "the learning rate: lr_scaled(base_lr, hvd_size()).", max, g->base_lr, np,
                    want, np);
    return 0;
}

/* Both runs: a right answer on 2 ranks only (a hard-coded 2) shows on 3. */
static int check_lr_scaled(grade_ctx *g, char *msg, size_t len)
{
    if (lr_scaled_in(g, &g->a, g->np, msg, len))
        return -1;
    return g->have_c ? lr_scaled_in(g, &g->c, 3, msg, len) : 0;
}

/* Run r on np ranks, epochs long: the rate of every step is Horovod's warmup, then lr. */
static int warmup_in(grade_ctx *g, grade_run *r, int np, int epochs, char *msg, size_t len)
{
    int n = grade_count(grade_rank(r, 0), "step");
    /* The program's own steps per epoch (rounded down, or up: step 5 accepts both). */
    int spe = n % epochs == 0 && n / epochs == steps_per_epoch_ceil(g, np)
                  ? n / epochs : steps_per_epoch(g, np);
    for (int i = 0; i < n; i++) {
        int epoch = i / spe, batch = i % spe;
        double e = epoch + (batch + 1.0) / spe, want = g->base_lr * np;
        if (epoch < g->warmup) /* Horovod: lr/size * (e*(size-1)/warmup + 1), lr = base*size */
            want = g->base_lr * (e * (np - 1) / g->warmup + 1);
        if (!close_to(step_lr(r, 0, i), want))
            return fail(msg, len, "epoch %d batch %d used learning rate %g; with %d warmup "
                        "epoch(s) on %d ranks it should be %g.\n  Hint: ramp the learning rate "
                        "from base_lr up to base_lr * hvd_size() over --warmup-epochs, batch by "
                        "batch, then follow the schedule: lr_lab_init(&schedule, lr, hvd_size(), "
                        "a.warmup_epochs, …).", epoch + 1, batch + 1, step_lr(r, 0, i),
                        g->warmup, np, want);
    }
    return 0;
}

static int check_warmup(grade_ctx *g, char *msg, size_t len)
{
    if (warmup_in(g, &g->a, g->np, g->epochs, msg, len))
        return -1;
    return g->have_c ? warmup_in(g, &g->c, 3, 1, msg, len) : 0;
}

static int check_novograd(grade_ctx *g, char *msg, size_t len)
{
    grade_proc *p0 = grade_rank(&g->a, 0);
    const char *opt = grade_get(grade_nth(p0, "step", 0), "opt");
    if (!same(opt, "novograd"))
        return fail(msg, len, "the optimizer is %s.\n  Hint: create it with novograd_create "
                    "(then wrap it with hvd_distributed_optimizer as before).", opt ? opt : "?");
    grade_proc *c0 = g->have_c ? grade_rank(&g->c, 0) : NULL;
    const char *copt = c0 ? grade_get(grade_nth(c0, "step", 0), "opt") : NULL;
    if (c0 && !same(copt, "sgd"))
        return fail(msg, len, "the 3-rank run asked for --optimizer sgd and got %s.\n  Hint: "
                    "create NovoGrad only when a.optimizer == OPT_NOVOGRAD, and keep "
                    "sgd_create otherwise.", copt ? copt : "no optimizer step");
    double first = NAN, last = NAN;
    for (int i = 0; i < p0->nev; i++)
        if (grade_is(&p0->ev[i], "metrics") && same(grade_get(&p0->ev[i], "when"), "epoch")) {
            if (isnan(first))
                first = grade_num(&p0->ev[i], "loss", NAN);
            last = grade_num(&p0->ev[i], "loss", NAN);
        }
    if (!(last < first))
        return fail(msg, len, "the training loss did not fall with NovoGrad (first epoch %g, "
                    "last %g).\n  Hint: NovoGrad takes the scaled learning rate too.", first, last);
    return 0;
}

int grade_check(int step, grade_ctx *g, char *msg, size_t len)
{
    msg[0] = '\0';
    switch (step) {
    case 0: return check_runs(g, &g->a, "graded", msg, len);
    case 1: return check_init(g, msg, len);
    case 2: return check_rank0_prints(g, msg, len);
    case 3: return check_distributed(g, msg, len);
    case 4: return check_broadcast(g, msg, len);
    case 5: return check_shards(g, msg, len);
    case 6: return check_metrics(g, msg, len);
    case 7: return check_checkpoints(g, msg, len);
    case 8: return check_lr_scaled(g, msg, len);
    case 9: return check_warmup(g, msg, len);
    case 10: return check_novograd(g, msg, len);
    }
    return fail(msg, len, "no step %d", step);
}
