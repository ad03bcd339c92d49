/* prog_wrn_dump.c — writes a model's initial weights and a fixed batch for the PyTorch reference.
 *
 *   build/tests/progs/prog_wrn_dump OUT_PREFIX [MODEL [BATCH [SEED [WD]]]]
 *       defaults: wrn-10-1, 8, 1234, 5e-4; dropout 0
 *
 * Writes OUT_PREFIX.txt, an index with one line per item:
 *   model NAME | batch B | seed S | wd WD | dropout P | init_checksum HEX (params_checksum)
 *   param NAME OFFSET COUNT NDIM D0 D1 D2 D3 DECAY   (offset/count in floats into .bin)
 *   state NAME OFFSET COUNT NDIM D0 D1 D2 D3 0
 *   tensor x OFFSET COUNT 4 B 1 28 28 0              (the input batch)
 *   tensor y OFFSET COUNT 1 B 0 0 0 0                (labels, stored as floats)
 * and OUT_PREFIX.bin, the float32 (little-endian) data: params, state, x, y.
 * tests/reference/wrn_torch.py reads both (see its header for the whole procedure).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/wrn.h"
#include "nn/layer_math.h"

static void put_view(FILE *t, const char *kind, const param_view *v, size_t base)
{
    fprintf(t, "%s %s %zu %zu %d %d %d %d %d %d\n", kind, v->name, base + v->offset, v->count,
            v->ndim, v->shape[0], v->shape[1], v->shape[2], v->shape[3], v->decay);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT_PREFIX [MODEL [BATCH [SEED [WD]]]]\n", argv[0]);
        return 2;
    }
    const char *model = argc > 2 ? argv[2] : "wrn-10-1";
    const size_t B = argc > 3 ? strtoul(argv[3], NULL, 10) : 8;
    const uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1234;
    const float wd = argc > 5 ? strtof(argv[5], NULL) : 5e-4f;
    char err[256], path[4096];
    wrn_config cfg = {.dropout = 0.0f};
    if (wrn_config_parse(model, &cfg, err, sizeof err) != 0 || B < 1) {
        fprintf(stderr, "prog_wrn_dump: %s\n", B < 1 ? "batch must be >= 1" : err);
        return 2;
    }
    wrn_model *m = wrn_create(&cfg, B, seed, err, sizeof err);
    if (!m) {
        fprintf(stderr, "prog_wrn_dump: %s\n", err);
        return 1;
    }
    const param_set *ps = wrn_params(m);

    /* The batch: smooth per-image patterns plus noise, so positions and images differ. */
    const size_t npix = B * 28 * 28;
    float *x = malloc(npix * sizeof *x), *yf = malloc(B * sizeof *yf);
    uint64_t s = seed ^ 0xba7c4ull;
    for (size_t i = 0; i < npix; i++) {
        const size_t img = i / 784, r = i % 784 / 28, c = i % 28;
        const double u = (double)(lm_splitmix64(&s) >> 11) * 0x1.0p-53;
        x[i] = (float)(sin(0.3 * (double)r * (1 + img % 3) + 0.2 * (double)c) + 0.5 * (u - 0.5) +
                       0.1 * (double)img);
    }
    for (size_t i = 0; i < B; i++)
        yf[i] = (float)((i * 7 + 3) % 10);

    snprintf(path, sizeof path, "%s.txt", argv[1]);
    FILE *t = fopen(path, "w");
    snprintf(path, sizeof path, "%s.bin", argv[1]);
    FILE *b = fopen(path, "wb");
    if (!t || !b) {
        fprintf(stderr, "prog_wrn_dump: cannot write %s.{txt,bin}\n", argv[1]);
        return 1;
    }
    fprintf(t, "model %s\nbatch %zu\nseed %" PRIu64 "\nwd %.9g\ndropout 0\n", model, B, seed,
            (double)wd);
    fprintf(t, "init_checksum %016" PRIx64 "\n", params_checksum(ps->params, ps->n));
    for (int v = 0; v < ps->nviews; v++)
        put_view(t, "param", &ps->views[v], 0);
    for (int v = 0; v < ps->n_state_views; v++)
        put_view(t, "state", &ps->state_views[v], ps->n);
    const size_t xoff = ps->n + ps->n_state;
    fprintf(t, "tensor x %zu %zu 4 %zu 1 28 28 0\n", xoff, npix, B);
    fprintf(t, "tensor y %zu %zu 1 %zu 0 0 0 0\n", xoff + npix, B, B);
    fwrite(ps->params, sizeof(float), ps->n, b);
    fwrite(ps->state, sizeof(float), ps->n_state, b);
    fwrite(x, sizeof(float), npix, b);
    fwrite(yf, sizeof(float), B, b);
    int bad = ferror(t) || ferror(b);
    bad |= fclose(t) != 0;
    bad |= fclose(b) != 0;
    printf("prog_wrn_dump: %s: %zu params, %zu state, batch %zu -> %s.{txt,bin}\n", model, ps->n,
           ps->n_state, B, argv[1]);
    free(x);
    free(yf);
    wrn_free(m);
    return bad;
}
