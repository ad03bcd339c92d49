/* dataset.h — find and load Fashion-MNIST (IDX files, plain or .gz), training-set pixel stats.
 *
 * Location (see datasets/README.md): a non-empty data_dir (--data-dir) is the only place looked
 * at; without one, the first place that holds all four files wins:
 *   1. $HVDLAB_DATA
 *   2. datasets/fashion-mnist/ relative to the current directory
 *   3. /usr/share/datasets/fashion-mnist/ (Debian package dataset-fashion-mnist)
 * Each of the four files may be plain (train-images-idx3-ubyte) or gzip (…-ubyte.gz; tried first).
 * Errors: status -1 and one line in err; ERRMSG_LEN is enough for every message.
 */
#ifndef HVDLAB_DATASET_H
#define HVDLAB_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "data/idx.h"

#define DATASET_ROWS 28
#define DATASET_COLS 28
#define DATASET_PIXELS (DATASET_ROWS * DATASET_COLS)
#define DATASET_CLASSES 10
#define DATASET_PATHLEN 4096
#define DATASET_SYSTEM_DIR "/usr/share/datasets/fashion-mnist"
#define DATASET_LOCAL_DIR "datasets/fashion-mnist"
#define DATASET_INSTALL_HINT "sudo apt-get install dataset-fashion-mnist (or: make setup)"

typedef struct {
    size_t n;               /* number of samples */
    const uint8_t *images;  /* (n, 28, 28) row-major grey pixels 0..255 */
    const uint8_t *labels;  /* (n) class ids 0..9 */
    idx_array image_idx;    /* owners of the two buffers above */
    idx_array label_idx;
} dataset_split;

typedef struct {
    char dir[DATASET_PATHLEN]; /* where the files were found */
    dataset_split train, test;
    double mean, std;          /* over all training pixels, pixel units (Keras featurewise) */
} dataset;

/* Finds the directory (order above). On success copies it into dir (dirlen bytes) and returns 0;
 * otherwise the error lists every place tried, what it lacked, and DATASET_INSTALL_HINT. */
int dataset_locate(const char *data_dir, char *dir, size_t dirlen, char *err, size_t errlen);

/* The same search over an explicit list: places[i] is a directory (NULL entries are skipped),
 * origins[i] says where it came from for the message ("--data-dir", "$HVDLAB_DATA", …). */
int dataset_locate_in(const char *const *places, const char *const *origins, size_t nplaces,
                      char *dir, size_t dirlen, char *err, size_t errlen);

/* Path of one of the four files in dir: prefix "train"/"t10k", kind "images"/"labels"; picks
 * "<name>.gz" if it exists, else "<name>" if it exists; returns 0 if found, -1 (and the .gz
 * path in out) if neither exists. */
int dataset_file_path(const char *dir, const char *prefix, const char *kind, char *out,
                      size_t outlen);

/* Loads an images file and a labels file and cross-checks them: kinds (magic), 28x28 images,
 * equal counts, labels < 10. */
int dataset_load_files(const char *images_path, const char *labels_path, dataset_split *out,
                       char *err, size_t errlen);

/* Loads "train" or "t10k" from dir. */
int dataset_load_split(const char *dir, const char *prefix, dataset_split *out, char *err,
                       size_t errlen);

/* Locate + load train and test + training stats. Release with dataset_free. */
int dataset_load(const char *data_dir, dataset *ds, char *err, size_t errlen);

/* One mean and one (population) standard deviation over all pixels of the split, in pixel
 * units 0..255 — what Keras ImageDataGenerator.fit computes for one grey channel. */
void dataset_pixel_stats(const dataset_split *s, double *mean, double *std);

/* A 64-bit hash of n bytes (fingerprint.c): equal data give equal values on every rank, a
 * changed byte almost surely another. For the ranks' check that they train on the same files. */
uint64_t dataset_fingerprint(const uint8_t *bytes, size_t n);

void dataset_free_split(dataset_split *s);
void dataset_free(dataset *ds);

#endif
