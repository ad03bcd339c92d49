/* ckpt_model.c — checkpoints of a model's param_set and its optimizer (the layer under the step
 * programs' ckpt_save_model / ckpt_load_model, which are inline in ckpt.h); the file format and
 * I/O are in ckpt_format.c, which works on plain buffers.
 * Public: ckpt_data_of, ckpt_expect_of, ckpt_save_params, ckpt_load_params, ckpt_set_target,
 * ckpt_has_target, ckpt_target_dir, ckpt_save_target, ckpt_set_world_size, ckpt_loaded_world_size,
 * ckpt_set_batch_size, ckpt_loaded_batch_size, ckpt_target_iterations, ckpt_target_checksum,
 * ckpt_set_early_stop_source, ckpt_loaded_early_stop_count, ckpt_check_loaded_place.
 */
#include "ckpt/ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/trace.h"

/* wrn_config as the format stores it. */
static ckpt_config stored_config(const wrn_config *c)
{
    return (ckpt_config){.depth = c->depth, .width = c->width, .dropout = c->dropout};
}

static int world_size;   /* stored in every file written from now on (ckpt_set_world_size) */
static int loaded_world; /* the last file ckpt_load_params read */
static int loaded_early_stop;              /* likewise */
static int batch_size, loaded_batch_size;  /* as world_size and loaded_world */
static int (*early_stop_source)(void);     /* ckpt_set_early_stop_source */
static struct {
    char path[4096];
    ckpt_resume r;
} loaded; /* the last file ckpt_load_params read: its place mid-epoch (ckpt_check_loaded_place) */

void ckpt_set_world_size(int n) { world_size = n > 0 ? n : 0; }
int ckpt_loaded_world_size(void) { return loaded_world; }
void ckpt_set_batch_size(int n) { batch_size = n > 0 ? n : 0; }
int ckpt_loaded_batch_size(void) { return loaded_batch_size; }
void ckpt_set_early_stop_source(int (*count)(void)) { early_stop_source = count; }
int ckpt_loaded_early_stop_count(void) { return loaded_early_stop; }

int ckpt_check_loaded_place(size_t images, char *err, size_t errlen)
{
    char what[256];
    if (!ckpt_implausible_place(&loaded.r, images, what, sizeof what))
        return 0;
    return errmsg_set(err, errlen, loaded.path, "implausible checkpoint: %s, refused", what);
}

ckpt_data ckpt_data_of(const wrn_config *cfg, const param_set *ps, const optimizer *opt,
                       int epoch)
{
    ckpt_data d = {
        .cfg = stored_config(cfg),
        .epoch = epoch,
        .opt_kind = opt ? opt->kind->code : -1,
        .iterations = opt ? opt->iterations : 0,
        .last_lr = opt ? opt->last_lr : 0.0f,
        .views = ps->views,
        .nviews = ps->nviews,
        .params = ps->params,
        .n_params = ps->n,
        .state_views = ps->state_views,
        .n_state_views = ps->n_state_views,
        .state = ps->state,
        .n_state = ps->n_state,
        .opt_state = opt ? opt->state : NULL,
        .n_opt_state = opt ? opt->n_state : 0,
        .resume = {.model_steps = ps->steps, .world_size = world_size,
                   .early_stop_count = early_stop_source ? early_stop_source() : 0,
                   .batch_size = batch_size},
    };
    return d;
}

ckpt_expect ckpt_expect_of(const wrn_config *cfg, const param_set *ps, const optimizer *opt)
{
    ckpt_expect w = {
        .cfg = stored_config(cfg),
        .opt_kind = opt ? opt->kind->code : -1,
        .check_counts = 1,
        .n_params = ps->n,
        .n_state = ps->n_state,
        .n_opt_state = opt ? opt->n_state : 0,
        .views = ps->views,
        .nviews = ps->nviews,
        .state_views = ps->state_views,
        .n_state_views = ps->n_state_views,
    };
    return w;
}

/* A GPU model's numbers copied to one host block, d pointed at it (the format is the CPU's,
 * so a GPU checkpoint resumes on the CPU and back). NULL when there is nothing to copy. */
static float *host_copies(ckpt_data *d, const param_set *ps, const optimizer *opt)
{
    if (!ps->device)
        return NULL;
    const size_t no = opt ? opt->n_state : 0;
    float *h = malloc((ps->n + ps->n_state + no + 1) * sizeof *h);
    if (!h)
        return NULL;
    params_to_host(h, ps->params, ps->n, 1);
    params_to_host(h + ps->n, ps->state, ps->n_state, 1);
    if (opt)
        params_to_host(h + ps->n + ps->n_state, opt->state, no, opt->device);
    d->params = h;
    d->state = h + ps->n;
    d->opt_state = opt ? h + ps->n + ps->n_state : NULL;
    return h;
}

int ckpt_save_params(const char *dir, int epoch, const wrn_config *cfg, const param_set *ps,
                     const optimizer *opt, char *err, size_t errlen)
{
    ckpt_data d = ckpt_data_of(cfg, ps, opt, epoch);
    float *h = host_copies(&d, ps, opt);
    if (ps->device && !h)
        return errmsg_set(err, errlen, dir, "out of host memory to copy the model off the GPU");
    const int rc = ckpt_save(dir, &d, err, errlen);
    free(h);
    return rc;
}

int ckpt_load_params(const char *dir, int epoch, const wrn_config *cfg, param_set *ps,
                     optimizer *opt, char *err, size_t errlen)
{
    ckpt_expect want = ckpt_expect_of(cfg, ps, opt);
    ckpt_file f;
    if (ckpt_load(dir, epoch, &want, &f, err, errlen))
        return -1;
    /* The counts were checked against ps and opt, so every copy fits. */
    params_from_host(ps->params, f.d.params, ps->n, ps->device);
    params_from_host(ps->state, f.d.state, ps->n_state, ps->device);
    ps->steps = f.d.resume.model_steps;
    loaded_world = f.d.resume.world_size > 0 ? f.d.resume.world_size : 0;
    loaded_early_stop = f.d.resume.early_stop_count > 0 ? f.d.resume.early_stop_count : 0;
    loaded_batch_size = f.d.resume.batch_size > 0 ? f.d.resume.batch_size : 0;
    loaded.r = f.d.resume;
    ckpt_path_at(loaded.path, sizeof loaded.path, dir, epoch, f.d.resume.batch);
    if (!f.resume_bytes) /* version 1 kept no dropout counter */
        fprintf(stderr, "hvdlab: warning: %s/checkpoint-%d.ckpt: format version 1 has no dropout "
                "counter; the resumed run draws new dropout masks\n", dir, epoch);
    if (opt) {
        params_from_host(opt->state, f.d.opt_state, opt->n_state, opt->device);
        opt->iterations = f.d.iterations;
        opt->last_lr = f.d.last_lr;
    }
    /* the file's copy has the same bits as ps's, and is on the host even for a GPU model */
    trace_event("params", "when=restore epoch=%d sum=%016llx state_sum=%016llx", epoch,
                (unsigned long long)params_checksum(f.d.params, ps->n),
                (unsigned long long)params_checksum(f.d.state, ps->n_state));
    ckpt_file_free(&f);
    return 0;
}

/* What a signal saves; the step program owns the objects, which outlive its training loop. */
static struct {
    char dir[4096];
    const wrn_config *cfg;
    const param_set *ps;
    const optimizer *opt;
} target;

void ckpt_set_target(const char *dir, const wrn_config *cfg, const param_set *ps,
                     const optimizer *opt)
{
    snprintf(target.dir, sizeof target.dir, "%s", dir ? dir : "");
    target.cfg = cfg;
    target.ps = ps;
    target.opt = opt;
}

int ckpt_has_target(void) { return target.ps != NULL; }

const char *ckpt_target_dir(void) { return target.dir; }

long ckpt_target_iterations(void) { return target.opt ? target.opt->iterations : 0; }

uint64_t ckpt_target_checksum(void)
{
    return target.ps ? params_checksum_at(target.ps->params, target.ps->n, target.ps->device) : 0;
}

int ckpt_save_target(int epoch, int batch, char *path, size_t pathlen, char *err, size_t errlen)
{
    if (!target.ps)
        return errmsg_set(err, errlen, NULL, "no checkpoint target");
    ckpt_data d = ckpt_data_of(target.cfg, target.ps, target.opt, epoch);
    d.resume.batch = batch;
    ckpt_path_at(path, pathlen, target.dir, epoch, batch);
    return ckpt_save(target.dir, &d, err, errlen);
}
