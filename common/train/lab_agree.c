/* lab_agree.c — compare what defines the epoch across ranks. See lab_agree.h.
 * Public: lab_agree_data.
 */
#include "train/lab_agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/fatal.h"
#include "hvd/hvd.h"

enum { TRAIN_N, TEST_N, TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS, TRAIN_SUBSET,
       TEST_SUBSET, BATCH, VAL_BATCH, SEED, EPOCHS, MODEL, DROPOUT, OPTIMIZER, BASE_LR, MOMENTUM,
       WD, WARMUP, TARGET, PATIENCE, CHECKPOINTING, RESTART, NITEMS };

/* How an item's value prints: a count, a fingerprint (hex), a double's bits (REAL32: of a float
 * widened, as --dropout, which is shown as the float it is), wrn-D-K. */
enum { INT, HEX, REAL, REAL32, NET, OPT };

/* How each item is named in the message. Sizes and files come first: a different file usually
 * also changes a size, and the size is the clearer thing to read. The flags after --seed do not
 * change the epoch, but a rank given another value would train another way (another learning
 * rate: weights that drift apart unseen) or end at another time (a hang). */
static const struct {
    const char *name;
    int shown;    /* INT, HEX, ... */
    int from_dir; /* the value comes from the data directory: name each rank's */
} ITEMS[NITEMS] = {
    [TRAIN_N] = {"the training set size", INT, 1},
    [TEST_N] = {"the test set size", INT, 1},
    [TRAIN_IMAGES] = {"the fingerprint of train-images-idx3-ubyte", HEX, 1},
    [TRAIN_LABELS] = {"the fingerprint of train-labels-idx1-ubyte", HEX, 1},
    [TEST_IMAGES] = {"the fingerprint of t10k-images-idx3-ubyte", HEX, 1},
    [TEST_LABELS] = {"the fingerprint of t10k-labels-idx1-ubyte", HEX, 1},
    [TRAIN_SUBSET] = {"--train-subset", INT, 0},
    [TEST_SUBSET] = {"--test-subset", INT, 0},
    [BATCH] = {"--batch-size", INT, 0},
    [VAL_BATCH] = {"--val-batch-size", INT, 0},
    [SEED] = {"--seed", INT, 0},
    [EPOCHS] = {"--epochs", INT, 0},
    [MODEL] = {"--model", NET, 0},
    [DROPOUT] = {"--dropout", REAL32, 0},
    [OPTIMIZER] = {"--optimizer", OPT, 0},
    [BASE_LR] = {"--base-lr", REAL, 0},
    [MOMENTUM] = {"--momentum", REAL, 0},
    [WD] = {"--wd", REAL, 0},
    [WARMUP] = {"--warmup-epochs", INT, 0},
    [TARGET] = {"--target-accuracy", REAL, 0},
    [PATIENCE] = {"--patience", INT, 0},
    [CHECKPOINTING] = {"--use-checkpointing (0 off, 1 on)", INT, 0},
    [RESTART] = {"--restart (0 off, 1 on)", INT, 0},
};

static unsigned long long real_bits(double x)
{
    unsigned long long u;
    memcpy(&u, &x, sizeof u);
    return u;
}

#define DIR_SHOWN 200 /* enough of each rank's data directory to tell them apart */

typedef struct {
    unsigned long long v[NITEMS];
    char dir[DIR_SHOWN];
} record;

static record describe(const args *a, const dataset *ds)
{
    record r;
    memset(&r, 0, sizeof r); /* travels as bytes: no stale padding */
    const dataset_split *tr = &ds->train, *te = &ds->test;
    r.v[TRAIN_N] = tr->n;
    r.v[TEST_N] = te->n;
    r.v[TRAIN_IMAGES] = dataset_fingerprint(tr->images, tr->n * DATASET_PIXELS);
    r.v[TRAIN_LABELS] = dataset_fingerprint(tr->labels, tr->n);
    r.v[TEST_IMAGES] = dataset_fingerprint(te->images, te->n * DATASET_PIXELS);
    r.v[TEST_LABELS] = dataset_fingerprint(te->labels, te->n);
    r.v[TRAIN_SUBSET] = a->train_subset;
    r.v[TEST_SUBSET] = a->test_subset;
    r.v[BATCH] = (unsigned long long)a->batch_size;
    r.v[VAL_BATCH] = (unsigned long long)a->val_batch_size;
    r.v[SEED] = a->seed;
    r.v[EPOCHS] = (unsigned long long)a->epochs;
    r.v[MODEL] = (unsigned long long)a->model.depth << 32 | (unsigned)a->model.width;
    r.v[DROPOUT] = real_bits(a->model.dropout);
    r.v[OPTIMIZER] = (unsigned long long)a->optimizer;
    r.v[BASE_LR] = real_bits(a->base_lr);
    r.v[MOMENTUM] = real_bits(a->momentum);
    r.v[WD] = real_bits(a->wd);
    r.v[WARMUP] = (unsigned long long)a->warmup_epochs;
    r.v[TARGET] = real_bits(a->target_accuracy);
    r.v[PATIENCE] = (unsigned long long)a->patience;
    r.v[CHECKPOINTING] = (unsigned long long)a->use_checkpointing;
    r.v[RESTART] = (unsigned long long)a->restart;
    size_t n = strnlen(ds->dir, sizeof r.dir - 1); /* a longer path is cut: only shown */
    memcpy(r.dir, ds->dir, n);
    return r;
}

/* "rank 1" or "ranks 0, 2, 3": the ranks whose item `it` equals rank `like`'s. */
static void ranks_like(char *buf, size_t len, const record *all, int size, int it, int like)
{
    int count = 0;
    for (int r = 0; r < size; r++)
        count += all[r].v[it] == all[like].v[it];
    errmsg_append(buf, len, "%s", count > 1 ? "ranks " : "rank ");
    for (int r = 0, k = 0; r < size; r++)
        if (all[r].v[it] == all[like].v[it])
            errmsg_append(buf, len, "%s%d", k++ ? ", " : "", r);
}

static void value(char *buf, size_t len, const record *rec, int it)
{
    unsigned long long v = rec->v[it];
    double x;
    memcpy(&x, &v, sizeof x);
    switch (ITEMS[it].shown) {
    case HEX: errmsg_append(buf, len, "%016llx", v); break;
    case REAL:
    case REAL32: { /* as typed (0.05), unless that would hide the difference */
        char g[40];
        snprintf(g, sizeof g, "%g", x);
        if (ITEMS[it].shown == REAL32 ? (float)strtod(g, NULL) != (float)x : strtod(g, NULL) != x)
            snprintf(g, sizeof g, ITEMS[it].shown == REAL32 ? "%.9g" : "%.17g", x);
        errmsg_append(buf, len, "%s", g);
        break;
    }
    case NET: errmsg_append(buf, len, "wrn-%llu-%llu", v >> 32, v & 0xffffffffu); break;
    case OPT: { /* the registry's name (optim.h), as --optimizer takes it */
        const optimizer_kind *k = optimizer_kind_of((int)v);
        errmsg_append(buf, len, "%s", k ? k->name : "?");
        break;
    }
    default: errmsg_append(buf, len, "%llu", v);
    }
}

/* One line: the item, each distinct value with its ranks, where each rank read its data. */
static void describe_difference(char *msg, size_t len, const record *all, int size, int it)
{
    snprintf(msg, len, "the ranks disagree on %s: %s is ",
             it <= SEED ? "the data that defines an epoch" : "how to train", ITEMS[it].name);
    for (int r = 0, groups = 0; r < size; r++) {
        int first = 1;
        for (int q = 0; q < r; q++)
            first &= all[q].v[it] != all[r].v[it];
        if (!first)
            continue;
        errmsg_append(msg, len, "%s", groups++ ? " but " : "");
        value(msg, len, &all[r], it);
        errmsg_append(msg, len, " on ");
        ranks_like(msg, len, all, size, it, r);
    }
    if (ITEMS[it].from_dir) {
        errmsg_append(msg, len, " (data from");
        for (int r = 0; r < size; r++)
            errmsg_append(msg, len, "%s %s on rank %d", r ? "," : "", all[r].dir, r);
        errmsg_append(msg, len, "); every rank must read the same four files");
    } else {
        errmsg_append(msg, len, "; every rank must be given the same %s", ITEMS[it].name);
    }
}

void lab_agree_data(const args *a, const dataset *ds)
{
    if (!hvd_is_initialized() || hvd_size() < 2)
        return;
    int size = hvd_size();
    record *all = calloc((size_t)size, sizeof *all);
    if (!all)
        fatal_error("out of memory comparing the data of %d ranks", size);
    all[hvd_rank()] = describe(a, ds);
    /* Every rank gets every record, so every rank reaches the same verdict: all stop or none. */
    for (int r = 0; r < size; r++)
        hvd_broadcast_bytes(&all[r], sizeof all[r], r, "lab.data_agreement");
    for (int it = 0; it < NITEMS; it++)
        for (int r = 1; r < size; r++)
            if (all[r].v[it] != all[0].v[it]) {
                char msg[ERRMSG_LEN];
                describe_difference(msg, sizeof msg, all, size, it);
                fatal_error("%s", msg);
            }
    free(all);
}
