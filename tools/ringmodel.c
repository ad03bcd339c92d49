/* ringmodel.c — the alpha-beta model of ring allreduce, fitted and used for predictions.
 *
 * A ring allreduce of S bytes over W workers takes 2(W-1) steps, each paying a latency alpha,
 * and sends 2(W-1)/W * S bytes through each worker's link at beta seconds per byte:
 *     C(W) = 2(W-1) alpha + 2(W-1)/W S beta
 * (the reduction's memory traffic, (W-1)/W S gamma, has the same shape in S; with timings at one
 * W it folds into beta, which is then the machine's effective cost per byte, not the link's).
 * A data-parallel step with per-worker compute G and no overlap takes G + C(W); weak-scaling
 * efficiency is G / (G + C(W)).
 *   ringmodel fit FILE [--ranks W]   FILE: lines "bytes seconds" (e.g. from bench-allreduce);
 *                                    weighted least squares on relative error; prints alpha, beta
 *   ringmodel predict [--alpha S] [--beta S/B | --gbps GB/s] [--csv FILE]
 *                                    C(W) and efficiency for W = 2..4096, wrn-16-1/4/10, the
 *                                    links of chapter 11 (and the fitted one when given)
 *   ringmodel published              predicted vs published (inputs in notebooks-md/11-scaling.md)
 * Public: main.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double ring_time(double alpha, double beta, double bytes, int w)
{
    return w < 2 ? 0 : 2.0 * (w - 1) * alpha + 2.0 * (w - 1) / w * bytes * beta;
}

/* T = a + b S by least squares weighted 1/T^2 (every size counts by its relative error). */
static int fit(const char *path, int w, double *alpha, double *beta)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0, s, t;
    int n = 0;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lf %lf", &s, &t) == 2 && t > 0) {
            double wt = 1 / (t * t);
            s00 += wt;
            s01 += wt * s;
            s11 += wt * s * s;
            r0 += wt * t;
            r1 += wt * s * t;
            n++;
        }
    fclose(f);
    double det = s00 * s11 - s01 * s01;
    if (n < 2 || det == 0)
        return -1;
    double a = (r0 * s11 - r1 * s01) / det, b = (s00 * r1 - s01 * r0) / det;
    *alpha = a / (2.0 * (w - 1));
    *beta = b / (2.0 * (w - 1) / w);
    return n;
}

typedef struct {
    const char *name;
    double gbps, alpha; /* effective bus bandwidth GB/s, latency per ring step s */
} link;

/* Assumed effective figures (see the chapter for where each comes from). */
static const link LINKS[] = {{"nvlink-v100", 130, 5e-6}, {"ib-200g", 23, 5e-6},
                             {"ib-100g", 11.5, 5e-6}, {"eth-25g", 2.8, 25e-6}};
#define NLINKS (int)(sizeof LINKS / sizeof LINKS[0])

/* The kit's models: gradient bytes (4 * parameters, wrn_param_count) and one step of batch 128
 * on this VM's 2 threads (docs/benchmarks.md, bench-train: 838.2, 80.8, 13.6 images/s). */
static const struct {
    const char *name;
    double bytes, step_s;
} MODELS[] = {{"wrn-16-1", 701352, 128 / 838.2}, {"wrn-16-4", 10.97e6, 128 / 80.8},
              {"wrn-16-10", 68.4e6, 128 / 13.6}};

static void predict(double alpha, double beta, const char *csv)
{
    FILE *c = csv ? fopen(csv, "w") : NULL;
    if (csv && !c) {
        fprintf(stderr, "ringmodel: cannot write %s\n", csv);
        exit(1);
    }
    if (c)
        fprintf(c, "model,link,workers,comm_s,efficiency\n");
    printf("%-10s %-12s %8s %12s %10s\n", "model", "link", "workers", "C(W) ms", "efficiency");
    for (size_t m = 0; m < sizeof MODELS / sizeof MODELS[0]; m++)
        for (int l = -1; l < NLINKS; l++) {
            if (l < 0 && beta <= 0)
                continue;
            double a = l < 0 ? alpha : LINKS[l].alpha, b = l < 0 ? beta : 1e-9 / LINKS[l].gbps;
            const char *ln = l < 0 ? "this-machine" : LINKS[l].name;
            for (int w = 2; w <= 4096; w *= 2) {
                double cw = ring_time(a, b, MODELS[m].bytes, w);
                double e = MODELS[m].step_s / (MODELS[m].step_s + cw);
                if (c)
                    fprintf(c, "%s,%s,%d,%.6g,%.5f\n", MODELS[m].name, ln, w, cw, e);
                if (w == 2 || w == 16 || w == 256 || w == 4096)
                    printf("%-10s %-12s %8d %12.3f %10.3f\n", MODELS[m].name, ln, w, cw * 1e3, e);
            }
        }
    if (c)
        fclose(c);
}

/* Each row: per-worker step compute G = batch / (images/s of one worker), gradient bytes, link;
 * predicted efficiency G / (G + C(W)) against the published one. */
static void published(void)
{
    static const struct {
        const char *what;
        double batch, ips1, bytes, gbps, alpha;
        int w;
        double published; /* efficiency, or images/s when > 1 */
    } R[] = {
        {"DLI wrn-16-10, 4 V100 (images/s)", 512, 1600, 68.4e6, 130, 5e-6, 4, 5700},
        {"Horovod Inception V3, 512 P100", 64, 142, 95.3e6, 2.8, 25e-6, 512, 0.90},
        {"Horovod ResNet-101, 512 P100", 64, 130, 178e6, 2.8, 25e-6, 512, 0.90},
        {"Horovod VGG-16, 512 P100", 64, 144, 553e6, 2.8, 25e-6, 512, 0.68},
    };
    printf("%-36s %8s %10s %10s %10s %8s\n", "case", "W", "C(W) ms", "predicted", "published",
           "error");
    for (size_t i = 0; i < sizeof R / sizeof R[0]; i++) {
        double g = R[i].batch / R[i].ips1;
        double cw = ring_time(R[i].alpha, 1e-9 / R[i].gbps, R[i].bytes, R[i].w);
        double e = g / (g + cw), pred = R[i].published > 1 ? e * R[i].w * R[i].ips1 : e;
        printf("%-36s %8d %10.2f %10.3g %10.3g %+7.1f%%\n", R[i].what, R[i].w, cw * 1e3, pred,
               R[i].published, 100 * (pred - R[i].published) / R[i].published);
    }
    /* ALCF PyTorch on Polaris (A100, 4 per node, Slingshot 200 Gb/s between nodes): the total
     * time of a fixed job, T(W) = T(1)/W + steps(W) C(W), for a small CNN whose allreduce is
     * latency-bound; the model gives a monotone fall, which the published 16-GPU rise defies. */
    static const int aw[] = {1, 8, 16};
    static const double at[] = {499.8, 58.8, 63.8};
    for (int i = 0; i < 3; i++) {
        double steps = 10 * 60000.0 / (64.0 * aw[i]); /* 10 epochs, batch 64 per GPU (assumed) */
        double gbps = aw[i] <= 4 ? 130 : 23;            /* NVLink in a node, else the network */
        double t = 499.8 / aw[i] + steps * ring_time(5e-6, 1e-9 / gbps, 4 * 1.2e6, aw[i]);
        printf("%-36s %8d %10s %10.1f %10.1f %+7.1f%%\n", "ALCF PyTorch MNIST CNN (s)", aw[i],
               "", t, at[i], 100 * (t - at[i]) / at[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "fit") == 0) {
        int w = argc >= 5 && strcmp(argv[3], "--ranks") == 0 ? atoi(argv[4]) : 2;
        double a, b;
        int n = w >= 2 ? fit(argv[2], w, &a, &b) : -1;
        if (n < 0) {
            fprintf(stderr, "ringmodel: %s: need two or more \"bytes seconds\" lines, W >= 2\n",
                    argv[2]);
            return 1;
        }
        printf("points %d\nranks %d\nalpha_s %.6g\nbeta_s_per_byte %.6g\neffective_GBps %.4g\n",
               n, w, a, b, 1e-9 / b);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "predict") == 0) {
        double alpha = 0, beta = 0;
        const char *csv = NULL;
        for (int i = 2; i + 1 < argc; i += 2) {
            if (strcmp(argv[i], "--alpha") == 0)
                alpha = atof(argv[i + 1]);
            else if (strcmp(argv[i], "--beta") == 0)
                beta = atof(argv[i + 1]);
            else if (strcmp(argv[i], "--gbps") == 0)
                beta = 1e-9 / atof(argv[i + 1]);
            else if (strcmp(argv[i], "--csv") == 0)
                csv = argv[i + 1];
        }
        predict(alpha, beta, csv);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "published") == 0) {
        published();
        return 0;
    }
    fprintf(stderr, "usage: ringmodel fit FILE [--ranks W] | predict [--alpha S] [--beta S | "
            "--gbps G] [--csv F] | published\n");
    return 2;
}
