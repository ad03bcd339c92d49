/* bench/loader.c — data pipeline throughput on one core, printed as `name value unit` lines.
 *
 *   decode: idx_read_file of train-images-idx3-ubyte.gz (26 MB gzip, 47 MB of pixels), best of
 *           --repeats; peer: zlib alone inflating the same file into a buffer (gzread, no parsing).
 *   pipeline: the training loader (rank 0 of 1, batch 128): per-epoch shuffle, flip + shift
 *           augmentation, standardisation into float (B, 1, 28, 28), over --epochs epochs of the full
 *           60,000 images; peer: the test-style loader (no shuffle, no augmentation, standardise
 *           only) over the same images. Target: >= 20,000 images/s.
 * The process pins itself to the core it starts on, so "one core" is literal.
 * Usage: build/bench/loader [--data-dir DIR] [--epochs N] [--batch B] [--repeats R]
 * Public: main.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/timer.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/loader.h"

/* Inflates the whole file with zlib and nothing else; returns seconds, -1 on error. */
static double inflate_only(const char *path, size_t expect, double *sum)
{
    uint8_t *buf = malloc(expect + 4096);
    if (!buf)
        return -1;
    double t0 = timer_seconds();
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        free(buf);
        return -1;
    }
    gzbuffer(gz, 256 * 1024);
    size_t got = 0;
    int r;
    while ((r = gzread(gz, buf + got, (unsigned)(expect + 4096 - got))) > 0)
        got += (size_t)r;
    gzclose(gz);
    double t = timer_seconds() - t0;
    *sum += buf[got / 2];
    free(buf);
    return got + 1 >= expect ? t : -1;
}

/* Runs `epochs` epochs of a loader over the split; returns images per second. */
static double run_loader(const dataset_split *s, const loader_options *o, int epochs, double *sum)
{
    loader L;
    char err[256];
    if (loader_init(&L, s->images, s->labels, s->n, o, err, sizeof err)) {
        fprintf(stderr, "bench/loader: %s\n", err);
        exit(1);
    }
    float *x = malloc(o->batch_size * LOADER_PIXELS * sizeof *x);
    int *y = malloc(o->batch_size * sizeof *y);
    size_t images = 0, k;
    double t0 = timer_seconds();
    for (int e = 0; e < epochs; e++) {
        loader_set_epoch(&L, e);
        while ((k = loader_next(&L, x, y)) > 0) {
            images += k;
            *sum += x[(k - 1) * LOADER_PIXELS + 400] + y[0];
        }
    }
    double t = timer_seconds() - t0;
    free(x);
    free(y);
    loader_free(&L);
    return (double)images / t;
}

int main(int argc, char **argv)
{
    const char *data_dir = NULL;
    int epochs = 2, repeats = 3;
    size_t batch = 128;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data-dir") && i + 1 < argc)
            data_dir = argv[++i];
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
            epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--data-dir DIR] [--epochs N] [--batch B] [--repeats R]\n",
                    argv[0]);
            return 2;
        }
    }
    if (epochs < 1 || repeats < 1 || batch < 1) {
        fprintf(stderr, "bench/loader: --epochs, --batch and --repeats must be >= 1\n");
        return 2;
    }
    int cpu = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu < 0 ? 0 : cpu, &set);
    sched_setaffinity(0, sizeof set, &set);

    char err[ERRMSG_LEN], dir[DATASET_PATHLEN], path[DATASET_PATHLEN];
    if (dataset_locate(data_dir, dir, sizeof dir, err, sizeof err)) {
        fprintf(stderr, "bench/loader: %s\n", err);
        return 1;
    }
    dataset_file_path(dir, "train", "images", path, sizeof path);
    double sum = 0, best = 1e30, best_peer = 1e30;
    size_t nbytes = 0;
    for (int r = 0; r < repeats; r++) {
        idx_array a;
        double t0 = timer_seconds();
        if (idx_read_file(path, &a, err, sizeof err)) {
            fprintf(stderr, "bench/loader: %s\n", err);
            return 1;
        }
        double t = timer_seconds() - t0;
        best = t < best ? t : best;
        nbytes = a.nbytes;
        sum += a.data[a.nbytes / 3];
        idx_free(&a);
        double tp = inflate_only(path, nbytes + 16, &sum);
        if (tp >= 0 && tp < best_peer)
            best_peer = tp;
    }
    printf("# data: %s (%zu pixel bytes decoded), best of %d\n", path, nbytes, repeats);
    printf("decode_train_images %.3f s\n", best);
    if (best_peer < 1e30) {
        printf("peer_zlib_inflate_only %.3f s\n", best_peer);
        printf("ratio_decode_vs_inflate_only %.2f x\n", best / best_peer);
    }

    dataset ds;
    double t0 = timer_seconds();
    if (dataset_load(dir, &ds, err, sizeof err)) {
        fprintf(stderr, "bench/loader: %s\n", err);
        return 1;
    }
    printf("dataset_load_train_test_stats %.3f s\n", timer_seconds() - t0);

    loader_options o = loader_defaults();
    o.batch_size = batch;
    o.seed = 42;
    o.mean = ds.mean;
    o.std = ds.std;
    double ips = run_loader(&ds.train, &o, epochs, &sum);
    o.shuffle = 0;
    o.augment = 0;
    double peer = run_loader(&ds.train, &o, epochs, &sum);
    printf("# pipeline: %zu images x %d epochs, batch %zu, core %d\n", ds.train.n, epochs, batch,
           cpu);
    printf("pipeline_shuffle_augment_standardise %.0f images/s\n", ips);
    printf("peer_standardise_only %.0f images/s\n", peer);
    printf("ratio_pipeline_vs_standardise_only %.2f x\n", ips / peer);
    printf("ratio_pipeline_vs_target_20000 %.1f x\n", ips / 20000.0);
    printf("# checksum %.1f\n", sum);
    dataset_free(&ds);
    return 0;
}
