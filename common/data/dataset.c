/* dataset.c — locate and load Fashion-MNIST, training-set mean/std. See dataset.h.
 * Public: dataset_locate, dataset_locate_in, dataset_file_path, dataset_load_files,
 *         dataset_load_split, dataset_load, dataset_pixel_stats, dataset_free_split, dataset_free.
 */
#include "data/dataset.h"

#include "base/errmsg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const PREFIXES[2] = {"train", "t10k"};
static const char *const KINDS[2] = {"images", "labels"};

#define set_err(err, errlen, ...) errmsg_set(err, errlen, NULL, __VA_ARGS__)

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void base_name(const char *prefix, const char *kind, char *out, size_t len)
{
    snprintf(out, len, "%s-%s-idx%d-ubyte", prefix, kind, strcmp(kind, "images") == 0 ? 3 : 1);
}

int dataset_file_path(const char *dir, const char *prefix, const char *kind, char *out,
                      size_t outlen)
{
    char name[64];
    base_name(prefix, kind, name, sizeof name);
    snprintf(out, outlen, "%s/%s", dir, name);
    if (is_file(out)) {
        /* prefer the .gz beside it if both exist (it is what the package ships) */
        char gz[DATASET_PATHLEN];
        snprintf(gz, sizeof gz, "%s/%s.gz", dir, name);
        if (is_file(gz))
            snprintf(out, outlen, "%s", gz);
        return 0;
    }
    snprintf(out, outlen, "%s/%s.gz", dir, name);
    return is_file(out) ? 0 : -1;
}

/* What stands under DIR/NAME.gz or DIR/NAME where neither is a file to read (a directory, a
 * FIFO, a link to nothing): 1 and that in out, "NAME.gz is a directory, not a file"; 0 when
 * neither name exists (the file is missing). */
static int what_is_there(const char *dir, const char *name, char *out, size_t len)
{
    for (int gz = 1; gz >= 0; gz--) {
        char p[DATASET_PATHLEN];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s%s", dir, name, gz ? ".gz" : "");
        if (lstat(p, &st) != 0)
            continue;
        if (stat(p, &st) != 0)
            snprintf(out, len, "%s%s is a link to nothing (%s)", name, gz ? ".gz" : "",
                     strerror(errno));
        else
            snprintf(out, len, "%s%s is %s, not a file", name, gz ? ".gz" : "",
                     S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "no plain file");
        return 1;
    }
    return 0;
}

int dataset_locate_in(const char *const *places, const char *const *origins, size_t nplaces,
                      char *dir, size_t dirlen, char *err, size_t errlen)
{
    char tried[ERRMSG_LEN] = "";
    int ntried = 0;
    for (size_t i = 0; i < nplaces; i++) {
        const char *p = places[i];
        if (!p || !*p)
            continue;
        const char *origin = origins && origins[i] ? origins[i] : "dir";
        errmsg_append(tried, sizeof tried, "%s%s [%s]: ", ntried++ ? "; " : "", p, origin);
        struct stat st;
        if (stat(p, &st) != 0) {
            errmsg_append(tried, sizeof tried, "%s", strerror(errno));
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            errmsg_append(tried, sizeof tried, "not a directory");
            continue;
        }
        /* the missing names first, then what stands where a file should (a directory, ...) */
        int missing = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int s = 0; s < 2; s++)
                for (int k = 0; k < 2; k++) {
                    char path[DATASET_PATHLEN], name[64], there[DATASET_PATHLEN];
                    if (dataset_file_path(p, PREFIXES[s], KINDS[k], path, sizeof path) == 0)
                        continue;
                    base_name(PREFIXES[s], KINDS[k], name, sizeof name);
                    int other = what_is_there(p, name, there, sizeof there);
                    if (!other && pass == 0)
                        errmsg_append(tried, sizeof tried, "%s%s[.gz]",
                                      missing ? ", " : "missing ", name);
                    else if (other && pass == 1)
                        errmsg_append(tried, sizeof tried, "%s%s", missing ? ", and " : "",
                                      there);
                    missing += other == pass;
                }
        if (!missing) {
            if (strlen(p) + 1 > dirlen)
                return set_err(err, errlen, "%s [%s]: path too long", p, origin);
            snprintf(dir, dirlen, "%s", p);
            return 0;
        }
    }
    return set_err(err, errlen, "Fashion-MNIST not found; tried: %s; install it with: %s",
                   ntried ? tried : "no places", DATASET_INSTALL_HINT);
}

int dataset_locate(const char *data_dir, char *dir, size_t dirlen, char *err, size_t errlen)
{
    /* An explicit --data-dir is what the user asked for: no silent fall-back to another place. */
    if (data_dir && *data_dir) {
        const char *const only[1] = {data_dir}, *const origin[1] = {"--data-dir"};
        return dataset_locate_in(only, origin, 1, dir, dirlen, err, errlen);
    }
    const char *places[4] = {data_dir, getenv("HVDLAB_DATA"), DATASET_LOCAL_DIR,
                             DATASET_SYSTEM_DIR};
    const char *const origins[4] = {"--data-dir", "$HVDLAB_DATA", "current directory",
                                     "Debian package"};
    return dataset_locate_in(places, origins, 4, dir, dirlen, err, errlen);
}

int dataset_load_files(const char *images_path, const char *labels_path, dataset_split *out,
                       char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    idx_array im, lb;
    if (idx_read_kind(images_path, IDX_MAGIC_IMAGES, &im, err, errlen))
        return -1;
    if (im.dims[1] != DATASET_ROWS || im.dims[2] != DATASET_COLS) {
        set_err(err, errlen, "%s: images are %lux%lu, expected %dx%d", images_path,
                (unsigned long)im.dims[1], (unsigned long)im.dims[2], DATASET_ROWS, DATASET_COLS);
        idx_free(&im);
        return -1;
    }
    if (im.count == 0) {
        idx_free(&im);
        return set_err(err, errlen, "%s: contains no images", images_path);
    }
    if (idx_read_kind(labels_path, IDX_MAGIC_LABELS, &lb, err, errlen)) {
        idx_free(&im);
        return -1;
    }
    int rc = 0;
    if (lb.count != im.count) {
        rc = set_err(err, errlen,
                     "%s: counts disagree: %zu labels but %s has %zu images", labels_path,
                     lb.count, images_path, im.count);
    } else {
        for (size_t i = 0; i < lb.count; i++)
            if (lb.data[i] >= DATASET_CLASSES) {
                rc = set_err(err, errlen,
                             "%s: label out of range: %u at index %zu (expected 0..%d)",
                             labels_path, (unsigned)lb.data[i], i, DATASET_CLASSES - 1);
                break;
            }
    }
    if (rc) {
        idx_free(&im);
        idx_free(&lb);
        return rc;
    }
    out->n = im.count;
    out->image_idx = im;
    out->label_idx = lb;
    out->images = out->image_idx.data;
    out->labels = out->label_idx.data;
    return 0;
}

int dataset_load_split(const char *dir, const char *prefix, dataset_split *out, char *err,
                       size_t errlen)
{
    char ip[DATASET_PATHLEN], lp[DATASET_PATHLEN];
    memset(out, 0, sizeof *out);
    /* A missing file still gets a path (the .gz name), so idx_read_file reports it. */
    dataset_file_path(dir, prefix, "images", ip, sizeof ip);
    dataset_file_path(dir, prefix, "labels", lp, sizeof lp);
    return dataset_load_files(ip, lp, out, err, errlen);
}

int dataset_load(const char *data_dir, dataset *ds, char *err, size_t errlen)
{
    memset(ds, 0, sizeof *ds);
    if (dataset_locate(data_dir, ds->dir, sizeof ds->dir, err, errlen))
        return -1;
    if (dataset_load_split(ds->dir, "train", &ds->train, err, errlen))
        return -1;
    if (dataset_load_split(ds->dir, "t10k", &ds->test, err, errlen)) {
        dataset_free_split(&ds->train);
        return -1;
    }
    dataset_pixel_stats(&ds->train, &ds->mean, &ds->std);
    return 0;
}

void dataset_pixel_stats(const dataset_split *s, double *mean, double *std)
{
    /* A histogram makes both moments exact sums of integers (no float accumulation error). */
    uint64_t hist[4][256];
    memset(hist, 0, sizeof hist);
    size_t total = s->n * DATASET_PIXELS, i = 0;
    const uint8_t *p = s->images;
    for (; i + 4 <= total; i += 4) {
        hist[0][p[i]]++;
        hist[1][p[i + 1]]++;
        hist[2][p[i + 2]]++;
        hist[3][p[i + 3]]++;
    }
    for (; i < total; i++)
        hist[0][p[i]]++;
    if (total == 0) {
        *mean = 0.0;
        *std = 0.0;
        return;
    }
    uint64_t sum = 0;
    for (int v = 0; v < 256; v++) {
        hist[0][v] += hist[1][v] + hist[2][v] + hist[3][v];
        sum += hist[0][v] * (uint64_t)v;
    }
    double m = (double)sum / (double)total, ss = 0.0;
    for (int v = 0; v < 256; v++)
        ss += (double)hist[0][v] * ((double)v - m) * ((double)v - m);
    *mean = m;
    *std = sqrt(ss / (double)total);
}

void dataset_free_split(dataset_split *s)
{
    if (!s)
        return;
    idx_free(&s->image_idx);
    idx_free(&s->label_idx);
    memset(s, 0, sizeof *s);
}

void dataset_free(dataset *ds)
{
    if (!ds)
        return;
    dataset_free_split(&ds->train);
    dataset_free_split(&ds->test);
    ds->mean = ds->std = 0.0;
}
