/* loader.c — per-epoch shuffle, DistributedSampler-style shards, Keras-style augmentation and
 * featurewise standardisation, batch by batch into float. See loader.h for the exact semantics.
 * Public: loader_defaults, loader_init, loader_free, loader_set_epoch, loader_seek_batch,
 *         loader_epoch_samples, loader_num_batches, loader_next, loader_next_cyclic,
 *         loader_get_batch, loader_shard, loader_permutation, loader_augment_params,
 *         loader_augment_image.
 */
#include "data/loader.h"

#include "base/errmsg.h"
#include "base/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stream tags keep the shuffle and the augmentation draws independent for the same seed. */
#define TAG_SHUFFLE 0x53485546464c45ull /* "SHUFFLE" */
#define TAG_AUGMENT 0x4155474d454e54ull /* "AUGMENT" */

static uint64_t mix64(uint64_t z) /* splitmix64 finaliser */
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    return mix64(*s);
}

/* Unbiased integer in [0, bound), bound >= 1 (Lemire's multiply-and-reject). */
static uint64_t bounded(uint64_t *s, uint64_t bound)
{
    __uint128_t m = (__uint128_t)splitmix64(s) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t threshold = -bound % bound;
        while (lo < threshold) {
            m = (__uint128_t)splitmix64(s) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

static uint64_t stream(uint64_t seed, uint64_t tag, int epoch)
{
    return mix64(mix64(seed ^ tag) ^ (uint64_t)(int64_t)epoch);
}

#define set_err(err, errlen, ...) errmsg_set(err, errlen, "loader", __VA_ARGS__)

void loader_permutation(uint64_t seed, int epoch, size_t n, size_t *perm)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    uint64_t s = stream(seed, TAG_SHUFFLE, epoch);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)bounded(&s, i);
        size_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

/* Nearest integer to a uniform real in [-range, range). */
static int draw_shift(uint64_t *s, double range)
{
    double u = (double)(splitmix64(s) >> 11) * 0x1.0p-53; /* [0, 1) */
    return (int)floor((2.0 * u - 1.0) * range + 0.5);
}

loader_aug loader_augment_params(uint64_t seed, int epoch, size_t index)
{
    uint64_t s = mix64(stream(seed, TAG_AUGMENT, epoch) ^ (uint64_t)index);
    loader_aug a;
    a.dy = draw_shift(&s, LOADER_SHIFT_RANGE * LOADER_ROWS);
    a.dx = draw_shift(&s, LOADER_SHIFT_RANGE * LOADER_COLS);
    a.flip = (int)(splitmix64(&s) >> 63);
    return a;
}

static int clampi(int v, int hi) /* into [0, hi) */
{
    return v < 0 ? 0 : v >= hi ? hi - 1 : v;
}

void loader_augment_image(const uint8_t *in /* (rows, cols) */, uint8_t *out /* (rows, cols) */,
                          int rows, int cols, loader_aug a)
{
    for (int y = 0; y < rows; y++) {
        const uint8_t *src = in + (size_t)clampi(y - a.dy, rows) * (size_t)cols;
        for (int x = 0; x < cols; x++) {
            int xs = a.flip ? cols - 1 - x : x; /* flip after shift: out[x] = shifted[cols-1-x] */
            out[(size_t)y * (size_t)cols + (size_t)x] = src[clampi(xs - a.dx, cols)];
        }
    }
}

loader_options loader_defaults(void)
{
    loader_options o;
    memset(&o, 0, sizeof o);
    o.rank = 0;
    o.size = 1;
    o.batch_size = 32;
    o.seed = 0;
    o.shuffle = 1;
    o.augment = 1;
    o.remainder = LOADER_PAD;
    o.subset = 0;
    o.mean = 0.0;
    o.std = 1.0;
    return o;
}

int loader_init(loader *L, const uint8_t *images /* (n, 28, 28) */, const uint8_t *labels /* (n) */,
                size_t n, const loader_options *opt, char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    if (!opt)
        return set_err(err, errlen, "no options given");
    if (opt->size < 1)
        return set_err(err, errlen, "size %d must be at least 1", opt->size);
    if (opt->rank < 0 || opt->rank >= opt->size)
        return set_err(err, errlen, "rank %d out of range for size %d", opt->rank, opt->size);
    if (opt->batch_size == 0)
        return set_err(err, errlen, "batch size must be at least 1");
    if (opt->remainder != LOADER_PAD && opt->remainder != LOADER_DROP)
        return set_err(err, errlen, "unknown remainder policy %d", (int)opt->remainder);
    if (!isfinite(opt->mean) || !isfinite(opt->std) || opt->std < 0.0)
        return set_err(err, errlen, "bad standardisation mean %g std %g", opt->mean, opt->std);
    const size_t available = n;
    if (opt->subset && opt->subset < n)
        n = opt->subset;
    if (n && (!images || !labels))
        return set_err(err, errlen, "no image or label data for %zu samples", n);
    L->opt = *opt;
    L->images = images;
    L->labels = labels;
    L->n = n;
    L->available = available;
    size_t size = (size_t)opt->size;
    if (opt->remainder == LOADER_DROP || n == 0)
        L->total = n / size * size;
    else
        L->total = (n + size - 1) / size * size;
    L->per_rank = L->total / size;
    L->perm = malloc((n ? n : 1) * sizeof *L->perm);
    L->shard = malloc((L->per_rank ? L->per_rank : 1) * sizeof *L->shard);
    if (!L->perm || !L->shard) {
        loader_free(L);
        return set_err(err, errlen, "out of memory for %zu samples", n);
    }
    for (int v = 0; v < 256; v++)
        L->lut[v] = (float)(((double)v - opt->mean) / (opt->std + LOADER_STD_EPS));
    loader_set_epoch(L, 0);
    return 0;
}

void loader_free(loader *L)
{
    if (!L)
        return;
    free(L->perm);
    free(L->shard);
    memset(L, 0, sizeof *L);
}

/* Trace event "shard": epoch, the loader's own rank and size (loader_rank, loader_size: before
 * step 5 every process is the loader's rank 0 of 1), n (samples in use), shuffle, count, first
 * index, sum = FNV-1a 64 over the indices as 8-byte little-endian integers, and, for shards of
 * at most TRACE_SHARD_LIST entries, the list itself (idx=3,17,42) so coverage can be checked. */
#define TRACE_SHARD_LIST 4096
static void trace_shard(const loader *L)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 0; k < L->per_rank; k++)
        for (int b = 0; b < 8; b++)
            h = (h ^ (((uint64_t)L->shard[k] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    char *list = NULL;
    size_t o = 0, cap = L->per_rank * 21 + 2;
    if (L->per_rank <= TRACE_SHARD_LIST && (list = malloc(cap)) != NULL) {
        list[0] = '\0';
        for (size_t k = 0; k < L->per_rank; k++)
            o += (size_t)snprintf(list + o, cap - o, "%s%zu", k ? "," : "", L->shard[k]);
    }
    trace_event("shard", "epoch=%d loader_rank=%d loader_size=%d n=%zu shuffle=%d count=%zu "
                         "first=%lld sum=%016llx%s%s", L->epoch, L->opt.rank, L->opt.size, L->n,
                L->opt.shuffle, L->per_rank, L->per_rank ? (long long)L->shard[0] : -1LL,
                (unsigned long long)h, list ? " idx=" : "", list ? list : "");
    free(list);
}

void loader_set_epoch(loader *L, int epoch)
{
    L->epoch = epoch;
    L->cursor = 0;
    if (L->opt.shuffle)
        loader_permutation(L->opt.seed, epoch, L->n, L->perm);
    else
        for (size_t i = 0; i < L->n; i++)
            L->perm[i] = i;
    /* Position p of the padded/truncated epoch list is perm[p % n] (wrap-around padding). */
    size_t size = (size_t)L->opt.size, rank = (size_t)L->opt.rank;
    for (size_t k = 0; k < L->per_rank; k++)
        L->shard[k] = L->perm[(rank + k * size) % L->n];
    if (trace_enabled())
        trace_shard(L);
}

void loader_seek_batch(loader *L, size_t b)
{
    size_t at = b * L->opt.batch_size;
    L->cursor = at < L->per_rank ? at : L->per_rank;
}

size_t loader_epoch_samples(const loader *L)
{
    return L->per_rank;
}

size_t loader_num_batches(const loader *L)
{
    return (L->per_rank + L->opt.batch_size - 1) / L->opt.batch_size;
}

const size_t *loader_shard(const loader *L, size_t *count)
{
    if (count)
        *count = L->per_rank;
    return L->shard;
}

/* One sample: augment (optional) and standardise straight from uint8 into float. */
static void fill_sample(const loader *L, size_t index, float *x /* (1, 28, 28) */)
{
    const uint8_t *img = L->images + index * LOADER_PIXELS;
    const float *lut = L->lut;
    if (!L->opt.augment) {
        for (int i = 0; i < LOADER_PIXELS; i++)
            x[i] = lut[img[i]];
        return;
    }
    loader_aug a = loader_augment_params(L->opt.seed, L->epoch, index);
    int col[LOADER_COLS];
    for (int c = 0; c < LOADER_COLS; c++)
        col[c] = clampi((a.flip ? LOADER_COLS - 1 - c : c) - a.dx, LOADER_COLS);
    for (int r = 0; r < LOADER_ROWS; r++) {
        const uint8_t *src = img + clampi(r - a.dy, LOADER_ROWS) * LOADER_COLS;
        float *dst = x + r * LOADER_COLS;
        for (int c = 0; c < LOADER_COLS; c++)
            dst[c] = lut[src[col[c]]];
    }
}

size_t loader_get_batch(const loader *L, size_t b, float *x /* (B, 1, 28, 28) */, int *y /* (B) */)
{
    size_t bs = L->opt.batch_size;
    if (b >= loader_num_batches(L))
        return 0;
    size_t start = b * bs, count = L->per_rank - start < bs ? L->per_rank - start : bs;
    for (size_t i = 0; i < count; i++) {
        size_t index = L->shard[start + i];
        fill_sample(L, index, x + i * LOADER_PIXELS);
        y[i] = L->labels[index];
    }
    return count;
}

size_t loader_next(loader *L, float *x /* (B, 1, 28, 28) */, int *y /* (B) */)
{
    size_t bs = L->opt.batch_size;
    if (L->cursor >= L->per_rank)
        return 0;
    size_t count = loader_get_batch(L, L->cursor / bs, x, y);
    L->cursor += count;
    return count;
}

size_t loader_next_cyclic(loader *L, float *x /* (B, 1, 28, 28) */, int *y /* (B) */)
{
    size_t n = loader_next(L, x, y);
    if (n == 0) {
        loader_set_epoch(L, L->epoch + 1);
        n = loader_next(L, x, y);
    }
    return n;
}
