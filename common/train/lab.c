/* lab.c — the step programs' unchanging plumbing: their loaders, evaluation, batch buffers and
 * banner. Public: lab_train_loader, lab_val_loader, lab_test_loader, lab_max_batch,
 * lab_evaluate, lab_batch_images, lab_batch_labels, lab_print_banner.
 */
#include "train/lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/fatal.h"
#include "base/trace.h"
#include "train/dead_rank.h"
#include "train/lab_agree.h"
#include "train/resume.h"

/* What the three loaders share: the data seed, the training set's standardisation, the shard. */
static loader_options common_options(const args *a, const dataset *ds, lab_shard me)
{
    loader_options o = loader_defaults();
    o.rank = me.rank;
    o.size = me.size;
    o.seed = a->seed;
    o.mean = ds->mean;
    o.std = ds->std;
    return o;
}

static loader make_loader(const dataset_split *s, const loader_options *o, const char *which)
{
    /* A subset larger than the data is a mistake (a typo, or a smaller data set than meant):
     * stopping says so; clamping would train on less than asked without a word. */
    if (o->subset > s->n)
        fatal_error("--%s-subset %zu: the data hold only %zu %s images (0 uses them all)", which,
                    o->subset, s->n, strcmp(which, "train") ? "test" : "training");
    loader L;
    char err[ERRMSG_LEN];
    if (loader_init(&L, s->images, s->labels, s->n, o, err, sizeof err))
        fatal_error("%s", err);
    return L;
}

loader lab_train_loader(const args *a, const dataset *ds, lab_shard me)
{
    lab_agree_data(a, ds); /* before any step: ranks on different data would never line up */
    dead_rank_watch(a);    /* a peer that dies from here is named with the epoch and the resume */
    loader_options o = common_options(a, ds, me);
    o.shuffle = 1;
    o.augment = 1;
    o.batch_size = (size_t)a->batch_size;
    o.subset = a->train_subset;
    return make_loader(&ds->train, &o, "train");
}

loader lab_val_loader(const args *a, const dataset *ds, lab_shard me)
{
    loader_options o = common_options(a, ds, me);
    o.shuffle = 1;
    o.augment = 0;
    o.batch_size = (size_t)a->val_batch_size;
    o.subset = a->test_subset;
    return make_loader(&ds->test, &o, "test");
}

loader lab_test_loader(const args *a, const dataset *ds)
{
    loader_options o = common_options(a, ds, (lab_shard){0, 1});
    o.shuffle = 0;
    o.augment = 0;
    o.batch_size = (size_t)a->val_batch_size;
    o.subset = a->test_subset;
    return make_loader(&ds->test, &o, "test");
}

/* A loader's batches hold at most its batch size, and never more than its shard: loader_next
 * stops at the shard's end. */
static size_t fills(const loader *L)
{
    size_t shard = loader_epoch_samples(L);
    return L->opt.batch_size < shard ? L->opt.batch_size : shard;
}

size_t lab_max_batch(const loader *train, const loader *val, const loader *test)
{
    size_t m = fills(train);
    if (fills(val) > m)
        m = fills(val);
    if (fills(test) > m)
        m = fills(test);
    return m ? m : 1;
}

metrics lab_evaluate(wrn_model *model, loader *L, int steps, float *x, int *y)
{
    metrics m;
    metrics_reset(&m);
    resume_validation(L, steps); /* a resumed run draws what the uninterrupted one would */
    for (int b = 0; b < steps; b++) {
        size_t n = loader_next_cyclic(L, x, y);
        wrn_result r = wrn_eval_batch(model, x, y, n, NULL);
        metrics_add(&m, r.loss, (size_t)r.correct, r.count);
    }
    trace_event("evaluate", "steps=%d loss=%.17g accuracy=%.17g count=%zu", steps,
                metrics_loss(&m), metrics_accuracy(&m), metrics_count(&m));
    /* After the last update no gradient follows that optimizer_step would check. */
    optimizer_check_loss(metrics_loss(&m));
    return m;
}

float *lab_batch_images(size_t max_batch)
{
    float *x = malloc(max_batch * LOADER_PIXELS * sizeof *x);
    if (!x)
        fatal_error("out of memory for a batch of %zu images", max_batch);
    return x;
}

int *lab_batch_labels(size_t max_batch)
{
    int *y = malloc(max_batch * sizeof *y);
    if (!y)
        fatal_error("out of memory for a batch of %zu images", max_batch);
    return y;
}

void lab_print_banner(const wrn_model *model, const dataset *ds, size_t n_train, size_t n_test)
{
    char name[WRN_NAME_LEN];
    wrn_config_name(wrn_get_config(model), name, sizeof name);
    printf("Model %s: %zu trainable parameters. Data from %s: %zu training, %zu test images.\n",
           name, wrn_param_count(model), ds->dir, n_train, n_test);
}
