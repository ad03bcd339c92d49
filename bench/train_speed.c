/* train_speed.c — WRN training speed and memory, the kit next to PyTorch, in one run.
 *
 * For each model (default wrn-16-1, wrn-16-4, wrn-16-10) and thread count (2, then 1), batch
 * 128: training images/s of one step = wrn_train_batch (forward, loss, backward) +
 * optimizer_step (SGD, momentum 0.9), after warm-up steps, on a fixed random batch; the same for
 * PyTorch (bench/peer_torch.py: same network, batch, threads, SGD step, Debian's torch).
 * Every measurement is its own process (this program re-executes itself with --child, the peer
 * is /usr/bin/python3), so peak RSS (wait4's ru_maxrss) is per configuration; kit and torch runs
 * alternate (kit, torch, kit, torch, ...) and the table gives the median and the range.
 *
 * FLOPs (analytic, per image): each conv 2·H·W·Cout·Cin·k² forward, ×3 for training (forward,
 * backward-data, backward-weights) except the stem, ×2 (no gradient for the input image); the
 * dense layer 2·C·10, ×3. Batch norm, ReLU, dropout, pools, loss and the optimizer are not
 * counted. GFLOP/s = these nominal FLOPs / time: "effective" figures, since a library may do the
 * work in fewer FLOPs (Winograd, FFT); the kit asks oneDNN for Winograd on some layers
 * (HVDLAB_CONV_ALGO=auto, the default: nn/conv2d_dnnl.c) and direct convolution elsewhere or
 * with HVDLAB_CONV_ALGO=direct, and the
 * implementation oneDNN picked per layer is printed (ONEDNN_VERBOSE). Peak: the faster of an
 * AVX2 and an AVX-512 FMA loop on 1 and 2 threads, measured in this run (bench/fma_peak.h).
 * The kit's per-layer breakdown (layer_prof.h) comes from extra profiled steps after the timed
 * ones, so the hooks never touch the timed figure.
 *
 * Usage: train_speed [--models wrn-16-1,wrn-16-4,wrn-16-10] [--threads 2,1] [--batch 128]
 *                    [--rounds R] [--iters I] [--no-torch] [--peer bench/peer_torch.py]
 *        train_speed --child --model wrn-16-4 --threads 2 [--iters 3 --warmup 1 --profile 1]
 *                    [--precision fp32|bf16]
 * A child with --precision trains in that format (model/precision.h; one the build does not train
 * in: its one line, exit 2) and also prints kit.step_cpu_ms, the process's CPU time a timed step
 * (all threads): on a machine shared with other work, where the wall time of a step is not its
 * own, the figure to compare fp32 and bf16 by.
 * Default rounds/iterations per model keep a full run near 4-5 minutes on 2 cores: wrn-16-1
 * 3 rounds × 10 steps, wrn-16-4 2 rounds × 2 steps, wrn-16-10 1 round × 1 step (a step takes
 * 7-25 s there, so one step is already a long average; min = median then).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fma_peak.h"
#include "base/stats.h"
#include "base/threads.h"
#include "base/timer.h"
#include "model/params.h"
#include "model/wrn.h"
#include "nn/conv2d.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif
#include "nn/layer_prof.h"
#include "model/precision.h"
#include "optim/optim.h"

/* The oneDNN convolution algorithm in use (HVDLAB_CONV_ALGO), "none" in a build without oneDNN. */
static const char *conv_algo(void)
{
#ifdef HVDLAB_DNNL
    return conv2d_dnnl_algo();
#else
    return "none";
#endif
}

#define MAXM 8
#define MAXT 4
#define MAXR 8

/* ---- analytic FLOPs ------------------------------------------------------------------------ */

static double train_flops_per_image(int depth, int k)
{
    const int nblk = (depth - 4) / 6;
    double f = 2.0 * 28 * 28 * 16 * 1 * 9 * 2; /* stem: forward + backward-weights */
    int cin = 16, hw = 28;
    for (int g = 0; g < 3; g++) {
        const int w = (16 * k) << g;
        for (int b = 0; b < nblk; b++) {
            f += 3 * 2.0 * hw * hw * w * cin * 9;     /* conv1 */
            f += 3 * 2.0 * hw * hw * w * w * 9;       /* conv2 */
            if (cin != w)
                f += 3 * 2.0 * hw * hw * w * cin;     /* 1x1 shortcut */
            cin = w;
        }
        if (g < 2)
            hw /= 2;
    }
    return f + 3 * 2.0 * cin * 10; /* dense */
}

/* ---- child: one configuration -------------------------------------------------------------- */

typedef struct {
    const char *model;
    int threads, batch, iters, warmup, profile;
    const char *precision; /* NULL: fp32, and no kit.step_cpu_ms line */
} child_opts;

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int child(const child_opts *o)
{
    char err[256];
    wrn_config cfg = {.dropout = 0.01f};
    if (wrn_config_parse(o->model, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "train_speed: %s\n", err);
        return 2;
    }
    compute_set_threads(o->threads);
    if (o->precision) {
        precision p;
        if (precision_parse(o->precision, &p, err, sizeof err) != 0 ||
            precision_check(p, err, sizeof err) != 0) {
            fprintf(stderr, "train_speed: --precision %s\n", err);
            return 2;
        }
        precision_apply(p);
    }
    wrn_model *m = wrn_create(&cfg, (size_t)o->batch, 42, err, sizeof err);
    if (!m) {
        fprintf(stderr, "train_speed: %s\n", err);
        return 1;
    }
    param_set *ps = wrn_params(m);
    optimizer *opt = sgd_create(ps, 0.01f, 0.9f);
    float *x = malloc((size_t)o->batch * 28 * 28 * sizeof(float));
    int *y = malloc((size_t)o->batch * sizeof(int));
    uint64_t s = 7;
    for (size_t i = 0; i < (size_t)o->batch * 28 * 28; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) * 0x1.0p-24) * 2.0f - 1.0f;
    }
    for (int i = 0; i < o->batch; i++)
        y[i] = i % 10;
    double loss = 0;
    for (int i = 0; i < o->warmup; i++) {
        loss = wrn_train_batch(m, x, y, (size_t)o->batch, 0.0f).loss;
        optimizer_step(opt, ps);
    }
    const double t0 = timer_seconds(), c0 = cpu_seconds();
    for (int i = 0; i < o->iters; i++) {
        loss = wrn_train_batch(m, x, y, (size_t)o->batch, 0.0f).loss;
        optimizer_step(opt, ps);
    }
    const double dt = timer_seconds() - t0, dc = cpu_seconds() - c0;
    if (o->precision)
        printf("kit.precision %s name\nkit.step_cpu_ms %.2f ms\n", o->precision,
               1e3 * dc / o->iters);
    printf("kit.images_per_s %.2f images/s\n", o->iters * o->batch / dt);
    printf("kit.step_ms %.2f ms\n", 1e3 * dt / o->iters);
    printf("kit.params %zu count\n", wrn_param_count(m));
    printf("kit.loss %.4f nats\n", loss);
    printf("kit.conv_backend %s name\n", conv2d_backend());
    printf("kit.conv_algo %s name\n", conv_algo());
    printf("kit.activation_layout %s name\n", wrn_activation_layout(m));
    if (o->profile > 0) {
        lprof_reset();
        lprof_enable(1);
        const double p0 = timer_seconds();
        for (int i = 0; i < o->profile; i++) {
            double t = lprof_start();
            wrn_train_batch(m, x, y, (size_t)o->batch, 0.0f);
            lprof_stop(t, "train_batch (total)");
            t = lprof_start();
            optimizer_step(opt, ps);
            lprof_stop(t, "sgd step");
        }
        const double pt = timer_seconds() - p0;
        lprof_enable(0);
        for (int i = 0; i < lprof_count(); i++) {
            const char *name;
            double sec;
            long calls;
            lprof_entry(i, &name, &sec, &calls);
            printf("prof %.3f %ld %s\n", 1e3 * sec / o->profile, calls / o->profile, name);
        }
        printf("prof %.3f 1 step (wall)\n", 1e3 * pt / o->profile);
    }
    fflush(stdout);
    optimizer_free(opt);
    wrn_free(m);
    free(x);
    free(y);
    return 0;
}

/* ---- driver ------------------------------------------------------------------------------- */

typedef struct {
    double ips, rss_mib;
    int ok;
} result;

typedef struct {
    char name[48];
    double ms;
    long calls;
} prof_line;

static prof_line prof[MAXM][MAXT][128];
static int nprof[MAXM][MAXT];
static double prof_step_ms[MAXM][MAXT];

/* Runs argv, returns its stdout (malloc'd) and peak RSS in MiB; NULL on failure. */
static char *run_capture(char *const argv[], double *rss_mib)
{
    int fd[2];
    if (pipe(fd) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0)
        return NULL;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "train_speed: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(fd[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (cap - len < 1024)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    close(fd[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "train_speed: %s exited abnormally\n", argv[0]);
        free(buf);
        return NULL;
    }
    *rss_mib = (double)ru.ru_maxrss / 1024.0;
    return buf;
}

static double find_value(const char *out, const char *key)
{
    const char *p = out;
    size_t kl = strlen(key);
    while ((p = strstr(p, key))) {
        if ((p == out || p[-1] == '\n') && p[kl] == ' ')
            return atof(p + kl + 1);
        p += kl;
    }
    return -1;
}

static void split_list(const char *s, char out[][32], int *n, int max)
{
    *n = 0;
    while (*s && *n < max) {
        size_t l = strcspn(s, ",");
        snprintf(out[*n], 32, "%.*s", (int)l, s);
        (*n)++;
        s += l;
        if (*s == ',')
            s++;
    }
}

/* Which implementation oneDNN picked for each convolution of `model` (one untimed child step run
 * with ONEDNN_VERBOSE=1): a line per implementation and pass with the layer shapes it ran. The
 * kit asks for Winograd on some layers (HVDLAB_CONV_ALGO=auto, the default; nn/conv2d_dnnl.c), so
 * its nominal FLOP count is the work done only where the list shows no "wino"; PyTorch's choice is not reported,
 * which is why both GFLOP/s columns are "effective". */
static void report_dnnl_impls(const char *self, const char *model, const char *threads)
{
    char *argv[] = {(char *)self, "--child", "--model", (char *)model, "--threads",
                    (char *)threads, "--iters", "1", "--warmup", "0", NULL};
    double rss;
    setenv("ONEDNN_VERBOSE", "1", 1);
    char *out = run_capture(argv, &rss);
    unsetenv("ONEDNN_VERBOSE");
    if (!out)
        return;
    enum { MAXI = 32 };
    char key[MAXI][96], shapes[MAXI][512];
    int n = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "onednn_verbose,exec,cpu,convolution,", 36) != 0)
            continue;
        char *f[16];
        int nf = 0;
        for (char *p = line; nf < 16; p++) { /* split on ',' in place */
            f[nf++] = p;
            p = strchr(p, ',');
            if (!p)
                break;
            *p = 0;
        }
        if (nf < 11)
            continue;
        char k[96], shape[64];
        snprintf(k, sizeof k, "%s %s", f[4], f[5]); /* implementation, pass */
        const char *ic = strstr(f[nf - 2], "_ic"), *kh = strstr(f[nf - 2], "kh");
        snprintf(shape, sizeof shape, "%.*s", ic && kh ? (int)(kh - ic - 1) : 0, ic ? ic + 1 : "");
        int i = 0;
        while (i < n && strcmp(key[i], k) != 0)
            i++;
        if (i == n) {
            if (n == MAXI)
                continue;
            snprintf(key[n], sizeof key[n], "%s", k);
            shapes[n++][0] = 0;
        }
        if (!strstr(shapes[i], shape) && strlen(shapes[i]) + strlen(shape) + 2 < sizeof shapes[i])
            strcat(strcat(shapes[i], " "), shape);
    }
    printf("# %s: oneDNN convolution implementations (ONEDNN_VERBOSE, %s thread(s), "
           "HVDLAB_CONV_ALGO=%s):\n", model, threads, conv_algo());
    for (int i = 0; i < n; i++)
        printf("#   %-40s%s\n", key[i], shapes[i]);
    fflush(stdout);
    free(out);
}

/* Default schedule per model: rounds, timed steps, warm-up steps. */
static void schedule(int k, int *rounds, int *iters, int *warmup)
{
    if (k <= 2) {
        *rounds = 3, *iters = 10, *warmup = 3;
    } else if (k <= 6) {
        *rounds = 2, *iters = 2, *warmup = 1;
    } else {
        *rounds = 1, *iters = 1, *warmup = 1;
    }
}

int main(int argc, char **argv)
{
    const char *models = "wrn-16-1,wrn-16-4,wrn-16-10", *threads = "2,1";
    const char *peer = "bench/peer_torch.py";
    int batch = 128, rounds_opt = 0, iters_opt = 0, no_torch = 0, is_child = 0;
    child_opts co = {.model = "wrn-16-1", .threads = 1, .batch = 128, .iters = 5, .warmup = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--child")) is_child = 1;
        else if (!strcmp(a, "--no-torch")) no_torch = 1;
        else if (!v) { fprintf(stderr, "train_speed: %s needs a value\n", a); return 2; }
        else if (!strcmp(a, "--models")) models = v, i++;
        else if (!strcmp(a, "--model")) co.model = v, i++;
        else if (!strcmp(a, "--threads")) threads = v, co.threads = atoi(v), i++;
        else if (!strcmp(a, "--batch")) batch = co.batch = atoi(v), i++;
        else if (!strcmp(a, "--rounds")) rounds_opt = atoi(v), i++;
        else if (!strcmp(a, "--iters")) iters_opt = co.iters = atoi(v), i++;
        else if (!strcmp(a, "--warmup")) co.warmup = atoi(v), i++;
        else if (!strcmp(a, "--profile")) co.profile = atoi(v), i++;
        else if (!strcmp(a, "--peer")) peer = v, i++;
        else if (!strcmp(a, "--precision")) co.precision = v, i++;
        else { fprintf(stderr, "train_speed: unknown option %s\n", a); return 2; }
    }
    if (is_child)
        return child(&co);

    char ml[MAXM][32], tl[MAXT][32];
    int nm, nt;
    split_list(models, ml, &nm, MAXM);
    split_list(threads, tl, &nt, MAXT);
    if (access(peer, R_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
        if (!no_torch)
            printf("train_speed: no PyTorch peer (%s or /usr/bin/python3 missing)\n", peer);
        no_torch = 1;
    }
    double peak[MAXT + 1] = {0};
    printf("# peak fp32, measured now (FMA loops, bench/fma_peak.h):");
    for (int t = 0; t < nt; t++) {
        const int T = atoi(tl[t]);
        const char *isa;
        double p2, p512;
        peak[t] = fma_peak_gflops(T, &isa, &p2, &p512);
        char w512[32] = "absent";
        if (p512 > 0)
            snprintf(w512, sizeof w512, "%.1f", p512);
        printf(" %d thread%s %.1f GFLOP/s (%s; avx2 %.1f, avx512 %s);", T, T > 1 ? "s" : "",
               peak[t], isa, p2, w512);
    }
    printf("\n");
    fflush(stdout);

    result kit[MAXM][MAXT][MAXR], tor[MAXM][MAXT][MAXR];
    memset(kit, 0, sizeof kit);
    memset(tor, 0, sizeof tor);
    int nrounds[MAXM];
    double flops[MAXM];
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "train_speed: cannot find my own executable\n");
        return 1;
    }
    self[sl] = 0;
    const double t_start = timer_seconds();
    for (int mi = 0; mi < nm; mi++) {
        int depth, k;
        if (sscanf(ml[mi], "wrn-%d-%d", &depth, &k) != 2) {
            fprintf(stderr, "train_speed: bad model %s\n", ml[mi]);
            return 2;
        }
        int rounds, iters, warmup;
        schedule(k, &rounds, &iters, &warmup);
        if (rounds_opt > 0) rounds = rounds_opt;
        if (iters_opt > 0) iters = iters_opt;
        if (rounds > MAXR) rounds = MAXR;
        nrounds[mi] = rounds;
        flops[mi] = train_flops_per_image(depth, k);
        printf("# %s: %d round(s) x (kit, torch) per thread count, %d warm-up + %d timed step(s) "
               "of batch %d each\n", ml[mi], rounds, warmup, iters, batch);
        fflush(stdout);
        report_dnnl_impls(self, ml[mi], tl[0]);
        for (int r = 0; r < rounds; r++)
            for (int t = 0; t < nt; t++) {
                char sb[16], si[16], sw[16], sp[16];
                snprintf(sb, sizeof sb, "%d", batch);
                snprintf(si, sizeof si, "%d", iters);
                snprintf(sw, sizeof sw, "%d", warmup);
                /* profile in the first round; wrn-16-10 only with the first thread count */
                snprintf(sp, sizeof sp, "%d", r > 0 ? 0 : k <= 6 ? 2 : t == 0 ? 1 : 0);
                char *kargv[] = {self, "--child", "--model", ml[mi], "--threads", tl[t],
                                 "--batch", sb, "--iters", si, "--warmup", sw, "--profile", sp,
                                 NULL};
                result *kr = &kit[mi][t][r];
                char *out = run_capture(kargv, &kr->rss_mib);
                if (out) {
                    kr->ips = find_value(out, "kit.images_per_s");
                    kr->ok = kr->ips > 0;
                    if (r == 0) { /* keep the profile */
                        const char *p = out;
                        while ((p = strstr(p, "prof ")) && nprof[mi][t] < 128) {
                            prof_line *pl = &prof[mi][t][nprof[mi][t]];
                            int used = 0;
                            if (sscanf(p, "prof %lf %ld %n", &pl->ms, &pl->calls, &used) >= 2) {
                                size_t l = strcspn(p + used, "\n");
                                snprintf(pl->name, sizeof pl->name, "%.*s", (int)l, p + used);
                                if (!strcmp(pl->name, "step (wall)"))
                                    prof_step_ms[mi][t] = pl->ms;
                                else
                                    nprof[mi][t]++;
                            }
                            p += 5;
                        }
                    }
                    free(out);
                }
                printf("  round %d, %s, %s thread(s): kit %.1f images/s, %.0f MiB", r + 1,
                       ml[mi], tl[t], kr->ips, kr->rss_mib);
                fflush(stdout);
                if (!no_torch) {
                    char *pargv[] = {"/usr/bin/python3", (char *)peer, "--model", ml[mi],
                                     "--threads", tl[t], "--batch", sb, "--iters", si,
                                     "--warmup", sw, NULL};
                    result *tr = &tor[mi][t][r];
                    char key[96];
                    snprintf(key, sizeof key, "torch.%s.t%s.images_per_s", ml[mi], tl[t]);
                    out = run_capture(pargv, &tr->rss_mib);
                    if (out) {
                        tr->ips = find_value(out, key);
                        tr->ok = tr->ips > 0;
                        free(out);
                    }
                    printf("; torch %.1f images/s, %.0f MiB", tr->ips, tr->rss_mib);
                }
                printf("\n");
                fflush(stdout);
            }
    }
    const double total = timer_seconds() - t_start;

    /* ---- table ---- */
    printf("\n%-10s %3s | %-24s | %-24s | %5s | %6s %5s | %6s %5s | %7s %7s\n", "model", "thr",
           "kit images/s med (range)", "torch images/s med (rng)", "ratio", "kit eGF", "%pk",
           "tch eGF", "%pk", "kit MiB", "tch MiB");
    char lines[MAXM * MAXT * 12][160];
    int nl = 0;
    for (int mi = 0; mi < nm; mi++)
        for (int t = 0; t < nt; t++) {
            double kv[MAXR], tv[MAXR], krss = 0, trss = 0;
            int nk = 0, ntv = 0;
            for (int r = 0; r < nrounds[mi]; r++) {
                if (kit[mi][t][r].ok) kv[nk++] = kit[mi][t][r].ips;
                if (tor[mi][t][r].ok) tv[ntv++] = tor[mi][t][r].ips;
                if (kit[mi][t][r].rss_mib > krss) krss = kit[mi][t][r].rss_mib;
                if (tor[mi][t][r].rss_mib > trss) trss = tor[mi][t][r].rss_mib;
            }
            const double km = stats_median(kv, (size_t)nk), tm = stats_median(tv, (size_t)ntv);
            const double kg = km * flops[mi] / 1e9, tg = tm * flops[mi] / 1e9;
            char kcol[40], tcol[40];
            snprintf(kcol, sizeof kcol, "%.1f (%.1f-%.1f)", km, nk ? kv[0] : 0,
                     nk ? kv[nk - 1] : 0);
            snprintf(tcol, sizeof tcol, "%.1f (%.1f-%.1f)", tm, ntv ? tv[0] : 0,
                     ntv ? tv[ntv - 1] : 0);
            printf("%-10s %3s | %-24s | %-24s | %5.2f | %6.1f %4.0f%% | %6.1f %4.0f%% | %7.0f %7.0f\n",
                   ml[mi], tl[t], kcol, tcol, tm > 0 ? km / tm : 0, kg, 100 * kg / peak[t], tg,
                   100 * tg / peak[t], krss, trss);
            const char *tag = ml[mi], *th = tl[t];
#define LINE(...) snprintf(lines[nl++], sizeof lines[0], __VA_ARGS__)
            LINE("train.%s.t%s.kit.images_per_s %.1f images/s", tag, th, km);
            LINE("train.%s.t%s.kit.images_per_s_min %.1f images/s", tag, th, nk ? kv[0] : 0);
            LINE("train.%s.t%s.torch.images_per_s %.1f images/s", tag, th, tm);
            LINE("train.%s.t%s.torch.images_per_s_min %.1f images/s", tag, th, ntv ? tv[0] : 0);
            LINE("train.%s.t%s.ratio %.3f x", tag, th, tm > 0 ? km / tm : 0);
            LINE("train.%s.t%s.kit.gflops %.1f GFLOP/s", tag, th, kg);
            LINE("train.%s.t%s.kit.peak_fraction %.3f fraction", tag, th, kg / peak[t]);
            LINE("train.%s.t%s.torch.gflops %.1f GFLOP/s", tag, th, tg);
            LINE("train.%s.t%s.torch.peak_fraction %.3f fraction", tag, th, tg / peak[t]);
            LINE("train.%s.t%s.kit.peak_rss %.0f MiB", tag, th, krss);
            LINE("train.%s.t%s.torch.peak_rss %.0f MiB", tag, th, trss);
            LINE("train.%s.t%s.rss_ratio %.3f x", tag, th, trss > 0 ? krss / trss : 0);
        }
    printf("\neGF: effective GFLOP/s, nominal direct-convolution FLOPs per second; FLOPs per "
           "training image (analytic, see the header):");
    for (int mi = 0; mi < nm; mi++)
        printf(" %s %.3f GFLOP;", ml[mi], flops[mi] / 1e9);
    printf("\n");

    /* ---- per-layer breakdown (kit, first round) ---- */
    for (int mi = 0; mi < nm; mi++)
        for (int t = 0; t < nt; t++) {
            if (!nprof[mi][t])
                continue;
            printf("\n# kit per-layer time, %s, %s thread(s), one step %.1f ms (profiled step)\n",
                   ml[mi], tl[t], prof_step_ms[mi][t]);
            for (int i = 0; i < nprof[mi][t]; i++) {
                const prof_line *pl = &prof[mi][t][i];
                printf("  %-40s %9.2f ms %5.1f%%  x%ld\n", pl->name, pl->ms,
                       prof_step_ms[mi][t] > 0 ? 100 * pl->ms / prof_step_ms[mi][t] : 0,
                       pl->calls);
            }
        }
    printf("\n");
    for (int t = 0; t < nt; t++)
        printf("machine.peak_fp32.t%s %.1f GFLOP/s\n", tl[t], peak[t]);
    for (int i = 0; i < nl; i++)
        printf("%s\n", lines[i]);
    printf("train.bench_seconds %.0f s\n", total);
    return 0;
}
