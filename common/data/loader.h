/* loader.h — sharded, shuffled, augmented, standardised batches of 28x28 grey images.
 *
 * No MPI in here: the caller passes (rank, size) as plain integers, so every rank builds the same
 * loader and takes its own shard.
 *
 * Per epoch e (loader_set_epoch):
 *   1. Shuffle: a permutation of the n samples from (seed, e) alone, identical on every rank
 *      (Fisher-Yates driven by splitmix64; never rand()). shuffle = 0 keeps the file order.
 *   2. Shard, PyTorch DistributedSampler style: rank r takes positions r, r+size, r+2*size, … of
 *      the permutation. Remainder (n not divisible by size):
 *        LOADER_PAD  (default, DistributedSampler drop_last=False): the permutation is extended by
 *                    wrapping around to its start until its length is ceil(n/size)*size, so every
 *                    rank draws ceil(n/size) samples and a few samples appear twice in the epoch;
 *        LOADER_DROP (drop_last=True): the last n % size positions of the permutation are dropped,
 *                    every rank draws floor(n/size) samples, each sample at most once.
 *      Either way the shards are disjoint (as positions) and all ranks draw the same count.
 *   3. Batches of batch_size consecutive shard entries; the last batch of an epoch may be smaller.
 *   4. Augmentation (augment = 1, training): as Keras ImageDataGenerator(horizontal_flip=True,
 *      width_shift_range=0.2, height_shift_range=0.2, fill_mode='nearest'): a real shift t is drawn
 *      uniform in [-0.2*28, +0.2*28) = [-5.6, 5.6) per axis and rounded to the nearest integer, which
 *      is what Keras' nearest-neighbour resampling of a translation amounts to, so shifts are
 *      integers in -6..6 (each of -5..5 with probability 1/11.2 = 8.93 %, -6 and +6 with 0.1/11.2 =
 *      0.89 % each); then a horizontal flip with probability 1/2 (Keras flips after the shift).
 *      Pixels shifted in from outside copy the nearest edge pixel. The draws depend only on
 *      (seed, epoch, dataset index of the sample), never on rank, size or batch position.
 *   5. Standardisation, after augmentation: x = (pixel - mean) / (std + 1e-6) in float, mean and std
 *      being the training-set figures (dataset_pixel_stats). Loaders of the test images:
 *      augment = 0, same mean/std; shuffle = 0 for the final score, 1 for validation (lab.h).
 * Decoded images stay uint8 (borrowed, not copied); floats are produced per batch in the caller's
 * buffer of shape (B, 1, 28, 28).
 */
#ifndef HVDLAB_LOADER_H
#define HVDLAB_LOADER_H

#include <stddef.h>
#include <stdint.h>

#define LOADER_ROWS 28
#define LOADER_COLS 28
#define LOADER_PIXELS (LOADER_ROWS * LOADER_COLS)
#define LOADER_SHIFT_RANGE 0.2 /* fraction of width/height, Keras width/height_shift_range */
#define LOADER_STD_EPS 1e-6    /* Keras featurewise_std_normalization epsilon */

typedef enum { LOADER_PAD = 0, LOADER_DROP = 1 } loader_remainder;

typedef struct {
    int rank, size;             /* this process's shard of `size` (0 <= rank < size) */
    size_t batch_size;          /* > 0 */
    uint64_t seed;              /* shuffle and augmentation seed, the same on every rank */
    int shuffle;                /* reshuffle every epoch (training) */
    int augment;                /* flip + shift (training) */
    loader_remainder remainder; /* LOADER_PAD or LOADER_DROP */
    size_t subset;              /* 0: all samples; K: only the first K (--train-subset etc.) */
    double mean, std;           /* standardisation: (x - mean) / (std + 1e-6) */
} loader_options;

typedef struct {
    int flip;   /* 1: mirror left-right (after the shift) */
    int dy, dx; /* content moves down by dy rows and right by dx columns: out[y][x] = in[y-dy][x-dx] */
} loader_aug;

typedef struct {
    loader_options opt;
    const uint8_t *images; /* (n, 28, 28) borrowed */
    const uint8_t *labels; /* (n) borrowed */
    size_t n;              /* samples in use (after subset) */
    size_t available;      /* samples the source holds (before subset) */
    int epoch;
    size_t *perm;          /* (n) this epoch's permutation of 0..n-1 */
    size_t *shard;         /* (per_rank) dataset indices this rank draws this epoch, in order */
    size_t per_rank;       /* samples per rank per epoch */
    size_t total;          /* samples per epoch over all ranks (after pad/drop) */
    size_t cursor;         /* next shard position for loader_next */
    float lut[256];        /* standardised value of each pixel value */
} loader;

/* Defaults: rank 0 of 1, batch 32, seed 0, shuffle and augment on, LOADER_PAD, no subset,
 * mean 0 / std 1. */
loader_options loader_defaults(void);

/* Sets up epoch 0. images/labels are borrowed and must outlive the loader. */
int loader_init(loader *L, const uint8_t *images /* (n, 28, 28) */, const uint8_t *labels /* (n) */,
                size_t n, const loader_options *opt, char *err, size_t errlen);
void loader_free(loader *L);

/* Reshuffles and reshards for epoch (>= 0) and rewinds loader_next. */
void loader_set_epoch(loader *L, int epoch);

/* The next loader_next returns batch b of the current epoch (a run resumed mid-epoch). */
void loader_seek_batch(loader *L, size_t b);

size_t loader_epoch_samples(const loader *L); /* samples this rank draws per epoch */
size_t loader_num_batches(const loader *L);   /* ceil(epoch_samples / batch_size) */

/* Next batch of this rank's shard into x (B, 1, 28, 28) and y (B); returns B (<= batch_size),
 * 0 once the epoch is exhausted. */
size_t loader_next(loader *L, float *x, int *y);

/* As loader_next, but an exhausted epoch moves L on to the next one (loader_set_epoch with
 * epoch + 1) and returns its first batch: 0 only when this rank's shard is empty. Validation uses
 * it: split over ranks, it draws more batches than one pass holds. */
size_t loader_next_cyclic(loader *L, float *x, int *y);

/* Batch b (0-based) of the current epoch, independent of the cursor; returns B, 0 if past the end. */
size_t loader_get_batch(const loader *L, size_t b, float *x /* (B, 1, 28, 28) */, int *y /* (B) */);

/* Dataset indices this rank draws in the current epoch; *count = loader_epoch_samples. */
const size_t *loader_shard(const loader *L, size_t *count);

/* The shared per-epoch shuffle: perm (n) becomes a permutation of 0..n-1 from (seed, epoch). */
void loader_permutation(uint64_t seed, int epoch, size_t n, size_t *perm);

/* The augmentation drawn for dataset sample `index` in `epoch` (shift range for 28x28 images). */
loader_aug loader_augment_params(uint64_t seed, int epoch, size_t index);

/* Applies a shift then a flip with nearest (edge) fill to an image of rows x cols. */
void loader_augment_image(const uint8_t *in /* (rows, cols) */, uint8_t *out /* (rows, cols) */,
                          int rows, int cols, loader_aug a);

#endif
