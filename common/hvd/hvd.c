/* hvd.c — the Horovod-shaped API: process set-up, settings, and the collective entry points.
 * Public: hvd_init, hvd_shutdown, hvd_is_initialized, hvd_rank, hvd_size, hvd_local_rank,
 *         hvd_local_size, hvd_barrier, hvd_allreduce, hvd_allreduce_ex,
 *         hvd_allreduce_async, hvd_synchronize, hvd_broadcast, hvd_broadcast_bytes,
 *         hvd_allgather, hvd_fusion_threshold, hvd_set_fusion_threshold,
 *         hvd_default_compression, hvd_fusion_stats, hvd_start_timeline, hvd_stop_timeline,
 *         hvd_stall_check, hvd_set_stall_check, hvd_set_gpu_stream, hvd_gpu_operations.
 */
#include "hvd/hvd.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/early_signal.h"
#include "base/env_switch.h"
#include "base/fatal.h"
#include "base/trace.h"
#include "coll/allreduce.h"
#include "coll/autotune.h"
#include "coll/backend.h"
#include "coll/fusion.h"
#include "coll/host_backend.h"
#include "coll_gpu/fusion_gpu.h"
#include "coll_gpu/gpu_backend.h"
#include "coll_gpu/gpu_ops.h"
#include "guard/agree.h"
#include "guard/coll_check.h"
#include "guard/stall.h"
#include "guard/vote.h"
#include "guard/watchdog.h"
#include "prof/profile.h"
#include "prof/timeline.h"

_Static_assert(FUSION_NAME_MAX == COLL_NAME_MAX, "a queued tensor's name is its descriptor's");

#define DEFAULT_STALL_CHECK_SECONDS 60.0
/* A wait on the GPU (NCCL or a staging copy) stops the job after this long when
 * HVD_STALL_SHUTDOWN_TIME_SECONDS does not say: every rank has entered the call by then. */
#define DEFAULT_GPU_WAIT_LIMIT_SECONDS 600.0

/* The job as hvd_init set it up: ranks, communicators, settings, the table of ways and the
 * queue. Owned by this file (hvd_init fills it, hvd_shutdown empties it); below hvd/ nothing
 * reads it: what a layer needs it is handed at init. */
typedef struct {
    int initialized;
    int we_initialized_mpi;
    int rank, size, local_rank, local_size;
    MPI_Comm comm;       /* our own copy of MPI_COMM_WORLD: user MPI traffic cannot collide */
    MPI_Comm check_comm; /* descriptor exchange of HVD_CHECK_COLLECTIVES */
    size_t fusion_threshold;
    int compression;
    int check;
    int stall_check;                 /* the stall inspector's entry handshake is on */
    double stall_warn_s, stall_shutdown_s;
    gpu_ops_request gpu_ops;         /* HVD_GPU_OPERATIONS */
    staged_reduce staged_reduce;     /* HVDLAB_STAGED_REDUCE (gpu_ops.h) */
    int staged_hugepages;            /* HVDLAB_STAGED_HOST=hugepages (gpu_ops.h) */
    int hierarchical;                /* HVD_HIERARCHICAL_ALLREDUCE */
    int host_group_size;             /* HVD_HOST_GROUP_SIZE (tests): 0 = real hosts */
    stall_inspector stall;
    const coll_backend *backends[GPU_BACKEND_ROWS + 1]; /* the ways, assembled by hvd_init */
    size_t nbackends;
    fusion_queue queue;
} hvd_state;
static hvd_state job = {.size = 1, .local_size = 1,
                        .fusion_threshold = HVD_DEFAULT_FUSION_THRESHOLD};

int hvd_is_initialized(void) { return job.initialized; }
int hvd_rank(void) { return job.initialized ? job.rank : 0; }
int hvd_size(void) { return job.initialized ? job.size : 1; }
int hvd_local_rank(void) { return job.initialized ? job.local_rank : 0; }
int hvd_local_size(void) { return job.initialized ? job.local_size : 1; }
size_t hvd_fusion_threshold(void) { return job.fusion_threshold; }
void hvd_set_fusion_threshold(size_t bytes) { job.fusion_threshold = bytes; }
int hvd_default_compression(void) { return job.compression; }
int hvd_stall_check(void) { return job.stall_check; }
void hvd_set_stall_check(int on) { job.stall_check = on; }

void hvd_fusion_stats(size_t *allreduce_calls, size_t *tensors, size_t *bytes_copied)
{
    *allreduce_calls = job.queue.stats.allreduce_calls;
    *tensors = job.queue.stats.tensors;
    *bytes_copied = job.queue.stats.bytes_copied;
}

static void entry_check(const coll_desc *d);
static void enter_vote(const coll_desc *d);
static void enter_fused(const fusion_entry *e, size_t queued);

/* fatal_error's hook once hvd_init has run: every rank of the job goes down with this one, and
 * the watchdog passes the message to the others. */
static void abort_job(const char *msg)
{
    watchdog_note_fatal(msg);
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

/* "67108864", "64M", "64MiB", "1G", "0". Returns -1 on anything else. */
static int parse_bytes(const char *s, size_t *out)
{
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift) {
        end++;
        if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
            end += strlen(end);
    }
    if (*end != '\0' || (shift && v > (ULLONG_MAX >> shift)))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

/* Non-negative seconds, fractions allowed ("60", "2.5"). */
static double parse_seconds(const char *var, const char *v, double dflt)
{
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !(x >= 0) || x > 1e9)
        fatal_error("%s=%s: expected a number of seconds such as 60 or 2.5", var, v);
    return x;
}

static void read_settings(void)
{
    /* The kit's on/off switches (base/env_switch.h) are read where their code first runs, most of
     * it GPU code; checked here as well, in every build, so that HVDLAB_TF32=off stops a CPU build
     * too instead of passing unread, and a CUDA build says so at start rather than at its first
     * convolution. */
    env_switch_check_all();
    const char *v = getenv("HVD_FUSION_THRESHOLD");
    if (v && *v && parse_bytes(v, &job.fusion_threshold) != 0)
        fatal_error("HVD_FUSION_THRESHOLD=%s: expected a byte count such as 67108864, 64M or 0", v);
    v = getenv("HVD_COMPRESSION");
    if (!v || !*v || strcmp(v, "none") == 0)
        job.compression = HVD_COMPRESS_NONE;
    else if (strcmp(v, "fp16") == 0)
        job.compression = HVD_COMPRESS_FP16;
    else
        fatal_error("HVD_COMPRESSION=%s: expected none or fp16", v);
    /* Horovod's on/off flags: 0 or 1, another spelling stops (base/env_switch.h) */
    job.check = env_switch("HVD_CHECK_COLLECTIVES", 0);
    job.stall_check = !env_switch("HVD_STALL_CHECK_DISABLE", 0);
    job.stall_warn_s = parse_seconds("HVD_STALL_CHECK_TIME_SECONDS",
                                   getenv("HVD_STALL_CHECK_TIME_SECONDS"),
                                   DEFAULT_STALL_CHECK_SECONDS);
    if (job.stall_warn_s == 0 && job.stall_check) /* a warning a collective; off is another flag */
        fatal_error("HVD_STALL_CHECK_TIME_SECONDS=%s: expected more than 0 seconds, such as 60 "
                    "or 2.5 (HVD_STALL_CHECK_DISABLE=1 turns the check off)",
                    getenv("HVD_STALL_CHECK_TIME_SECONDS"));
    job.stall_shutdown_s = parse_seconds("HVD_STALL_SHUTDOWN_TIME_SECONDS",
                                       getenv("HVD_STALL_SHUTDOWN_TIME_SECONDS"), 0);
    job.hierarchical = env_switch("HVD_HIERARCHICAL_ALLREDUCE", 0);
    v = getenv("HVD_HOST_GROUP_SIZE");
    job.host_group_size = 0;
    if (v && *v) {
        char *end;
        errno = 0;
        long g = strtol(v, &end, 10);
        if (end == v || *end || errno || g < 1 || g > INT_MAX)
            fatal_error("HVD_HOST_GROUP_SIZE=%s: expected a number of ranks per test host, "
                        "at least 1", v);
        job.host_group_size = (int)g;
    }
    v = getenv("HVD_GPU_OPERATIONS");
    if (gpu_ops_parse(v, &job.gpu_ops) != 0)
        fatal_error("HVD_GPU_OPERATIONS=%s: expected nccl or mpi", v);
    v = getenv("HVDLAB_STAGED_REDUCE");
    if (staged_reduce_parse(v, &job.staged_reduce) != 0)
        fatal_error("HVDLAB_STAGED_REDUCE=%s: expected auto (the default), host, gpu or ipc", v);
    v = getenv("HVDLAB_STAGED_HOST");
    job.staged_hugepages = v && strcmp(v, "hugepages") == 0;
    if (v && *v && !job.staged_hugepages && strcmp(v, "pinned") != 0)
        fatal_error("HVDLAB_STAGED_HOST=%s: expected pinned (the default) or hugepages", v);
}

/* Every setting above changes what goes over the wire (or, for the stall times, which rank
 * speaks when), so the ranks must agree on them; HVD_TIMELINE is rank 0's alone. */
static void agree_on_settings(void)
{
    agree_setting v[12];
    memset(v, 0, sizeof v); /* exchanged as bytes */
    snprintf(v[0].name, sizeof v[0].name, "HVD_CHECK_COLLECTIVES");
    snprintf(v[0].value, sizeof v[0].value, "%d", job.check);
    snprintf(v[1].name, sizeof v[1].name, "HVD_FUSION_THRESHOLD");
    snprintf(v[1].value, sizeof v[1].value, "%zu", job.fusion_threshold);
    snprintf(v[2].name, sizeof v[2].name, "HVD_COMPRESSION");
    snprintf(v[2].value, sizeof v[2].value, "%s",
             job.compression == HVD_COMPRESS_FP16 ? "fp16" : "none");
    snprintf(v[3].name, sizeof v[3].name, "HVD_STALL_CHECK_DISABLE");
    snprintf(v[3].value, sizeof v[3].value, "%d", !job.stall_check);
    snprintf(v[4].name, sizeof v[4].name, "HVD_STALL_CHECK_TIME_SECONDS");
    snprintf(v[4].value, sizeof v[4].value, "%g", job.stall_warn_s);
    snprintf(v[5].name, sizeof v[5].name, "HVD_STALL_SHUTDOWN_TIME_SECONDS");
    snprintf(v[5].value, sizeof v[5].value, "%g", job.stall_shutdown_s);
    snprintf(v[6].name, sizeof v[6].name, "HVD_GPU_OPERATIONS"); /* which wire device tensors use */
    snprintf(v[6].value, sizeof v[6].value, "%s", gpu_ops_request_name(job.gpu_ops));
    snprintf(v[7].name, sizeof v[7].name, "HVD_PROFILE"); /* its report at shutdown is collective */
    snprintf(v[7].value, sizeof v[7].value, "%d", profile_enabled());
    snprintf(v[8].name, sizeof v[8].name, "HVD_HIERARCHICAL_ALLREDUCE");
    snprintf(v[8].value, sizeof v[8].value, "%d", job.hierarchical);
    snprintf(v[9].name, sizeof v[9].name, "HVD_HOST_GROUP_SIZE"); /* which ranks share a window */
    snprintf(v[9].value, sizeof v[9].value, "%d", job.host_group_size);
    snprintf(v[10].name, sizeof v[10].name, "HVDLAB_STAGED_REDUCE"); /* who adds: CPU or GPU */
    snprintf(v[10].value, sizeof v[10].value, "%s", staged_reduce_name(job.staged_reduce));
    snprintf(v[11].name, sizeof v[11].name, "HVDLAB_STAGED_HOST"); /* which host path runs */
    snprintf(v[11].value, sizeof v[11].value, "%s", job.staged_hugepages ? "hugepages" : "pinned");
    agree_settings(job.comm, v, 12);
}

/* Collectives run in the order they were called: queued allreduces go before anything else. */
static void flush_queue(void)
{
    if (job.queue.len)
        hvd_synchronize();
}

void hvd_start_timeline(const char *path)
{
    flush_queue(); /* what was queued before belongs before the timeline */
    if (hvd_rank() != 0)
        return;
    profile_note_timeline(path); /* the profile's CSV goes beside it */
    char err[512];
    if (timeline_open(path, err, sizeof err) != 0)
        fatal_error("%s", err);
}

void hvd_stop_timeline(void)
{
    flush_queue();
    timeline_close();
}

int hvd_init(int *argc, char ***argv)
{
    if (job.initialized)
        return 0;
    fatal_set_abort_hook(abort_job);
    early_signal_catch(); /* ./hvdrun's SIGUSR1 while the rank starts up (early_signal.h) */
    int mpi_init = 0;
    MPI_Initialized(&mpi_init);
    if (!mpi_init) {
        if (MPI_Init(argc, argv) != MPI_SUCCESS)
            fatal_error("MPI_Init failed");
        job.we_initialized_mpi = 1;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &job.comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &job.check_comm);
    MPI_Comm_rank(job.comm, &job.rank);
    MPI_Comm_size(job.comm, &job.size);
    MPI_Comm local;
    MPI_Comm_split_type(job.comm, MPI_COMM_TYPE_SHARED, job.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &job.local_rank);
    MPI_Comm_size(local, &job.local_size);
    MPI_Comm_free(&local);
    job.initialized = 1;
    fatal_set_rank(job.rank, job.local_rank);
    trace_reopen(job.rank, job.size); /* events from here on go to rank-R.log */
    trace_event("init", "local_rank=%d local_size=%d", job.local_rank, job.local_size); /* + size */
    read_settings();
    profile_init();
    agree_on_settings();
    const char *ft = getenv("HVD_FUSION_THRESHOLD");
    autotune_init(job.comm, job.rank, &job.fusion_threshold, ft && *ft, /* HVD_AUTOTUNE */
                  HVD_DEFAULT_FUSION_THRESHOLD);
    stall_init(&job.stall, job.comm, job.stall_warn_s, job.stall_shutdown_s, job.check);
    gpu_ops_config g = {.comm = job.comm, .rank = job.rank, .size = job.size,
                        .local_rank = job.local_rank, .request = job.gpu_ops,
                        .staged_reduce = job.staged_reduce,
                        .staged_hugepages = job.staged_hugepages,
                        .host_group_size = job.host_group_size,
                        .warn_s = job.stall_warn_s,
                        .limit_s = job.stall_shutdown_s > 0 ? job.stall_shutdown_s
                                                          : DEFAULT_GPU_WAIT_LIMIT_SECONDS};
    gpu_ops_init(&g); /* after the settings agree: the choice is collective */
    /* the hosts, for allreduce.h */
    allreduce_init(job.comm, job.hierarchical, job.host_group_size, gpu_ops_ranks_mixed());
    /* The ways collectives travel (backend.h), as Horovod's operation manager: the GPU's rows
     * first (none in a CPU build), the host's last, which takes any tensor. */
    job.nbackends = gpu_backend_rows(job.backends);
    job.backends[job.nbackends++] = &host_backend;
    job.queue.backends = job.backends;
    job.queue.nbackends = job.nbackends;
    vote_init(job.comm, enter_vote); /* the vote's communicator, here: collective on every rank */
    watchdog_set_progress_check(job.stall_check ? job.stall_warn_s : 0, job.stall_shutdown_s);
    watchdog_start(job.comm); /* a rank that dies is named by the others (watchdog.h) */
    const char *tl = getenv("HVD_TIMELINE");
    if (tl && *tl)
        hvd_start_timeline(tl);
    return 0;
}

/* Before every collective: the stall inspector's handshake (which also does the collective
 * check when it is on), or the check alone. The vote (vote.h) joins it too. */
static void entry_check(const coll_desc *d)
{
    if (job.stall_check)
        stall_enter(&job.stall, d);
    else if (job.check)
        coll_check(job.check_comm, d);
}

/* A start-up SIGUSR1 that no stop handler will take (early_signal.h): die of it now. */
static void die_of_unkept_signal(void)
{
    int sig = early_signal_unkept();
    if (sig) {
        watchdog_note_signal(sig, "killed by");
        early_signal_release();
    }
}

/* An entry check runs at every call: the stall inspector's handshake or the collective check.
 * Without one, the shutdown rule has only the watchdog's count (watchdog.h). */
static int entry_checked(void) { return job.stall_check || job.check; }

/* The entry of a vote (vote.h), which does not block: checked, or else counted. */
static void enter_vote(const coll_desc *d)
{
    entry_check(d);
    if (!entry_checked())
        watchdog_enter(d);
}

static void enter_call(const coll_desc *d)
{
    die_of_unkept_signal();
    enter_vote(d);
    watchdog_busy(d); /* every rank is in: from here the progress check watches (watchdog.h) */
}

/* fusion_flush's entry (fusion.h): the queue's length, then each tensor as it travels. */
static void enter_fused(const fusion_entry *e, size_t queued)
{
    if (!e) {
        coll_desc d = coll_describe(COLL_SYNCHRONIZE, "", queued, -1);
        enter_call(&d);
        return;
    }
    coll_desc d = coll_describe_allreduce(e->name, e->n, e->op, e->fp16);
    d.gpu = e->gpu == FUSION_NCCL ? COLL_GPU_NCCL
            : e->gpu == FUSION_STAGED && gpu_ops_node_reduce() ? COLL_GPU_SUMMED
                                                               : 0;
    enter_call(&d);
}

void hvd_shutdown(void)
{
    if (!job.initialized)
        return;
    flush_queue(); /* nothing queued is lost */
    /* A start-up SIGUSR1 that args_parse kept but no stop handler took (a program with the lab's
     * flags but not its progress) must not be lost: enter_call dies of it (early_signal.h). */
    early_signal_unkeep();
    coll_desc d = coll_describe(COLL_SHUTDOWN, "", 0, -1);
    enter_call(&d);
    watchdog_idle();
    profile_report(job.comm); /* every rank is here: the stall handshake above saw them all */
    for (size_t i = 0; i < job.nbackends; i++) /* each way's buffers, then the GPU's streams */
        if (job.backends[i]->shutdown)
            job.backends[i]->shutdown();
    job.nbackends = 0;
    fusion_free(&job.queue);
    allreduce_free(); /* the shared window goes here, on every rank of each host */
    vote_free();
    stall_free(&job.stall);
    watchdog_stop(); /* a goodbye: the end of this rank is no death */
    timeline_close();
    MPI_Comm_free(&job.check_comm);
    MPI_Comm_free(&job.comm);
    job.initialized = 0;
    fatal_set_rank(0, 0); /* hvd_rank() is 0 again */
    if (job.we_initialized_mpi)
        MPI_Finalize();
    early_signal_release(); /* SIGUSR1's default, where no stop handler replaced record() */
}

/* Trace event "collective" (HVDLAB_TRACE), also before hvd_init; the name is quoted. reduce
 * ("sum"/"average", allreduce only) adds reduce= and fp16=. */
static void trace_collective(const char *op, const char *name, size_t count, int root,
                             const char *reduce, int fp16)
{
    if (!trace_enabled())
        return;
    char q[512], r[64] = "";
    if (reduce)
        snprintf(r, sizeof r, " reduce=%s fp16=%d", reduce, fp16);
    trace_event("collective", "op=%s name=%s count=%zu root=%d%s", op,
                trace_quote(name ? name : "", q, sizeof q), count, root, r);
}

/* nccl: the tensor goes over NCCL (the ranks must agree on that too). */
static void check_call(coll_kind kind, const char *name, size_t count, int root, int nccl)
{
    coll_desc d = coll_describe(kind, name, count, root);
    d.gpu = nccl;
    enter_call(&d);
}

void *hvd_set_gpu_stream(void *cuda_stream) { return gpu_ops_set_stream(cuda_stream); }

const char *hvd_gpu_operations(void)
{
    switch (gpu_ops_path()) {
    case GPU_PATH_NCCL: return "nccl";
    case GPU_PATH_STAGED: return "mpi";
    default: return "none";
    }
}

/* Where a tensor of this rank goes: FUSION_HOST, _STAGED or _NCCL. Empty tensors stay on the
 * host path, which moves nothing. */
static int tensor_way(const void *buf, size_t count)
{
    if (!count || !gpu_ops_is_device(buf))
        return FUSION_HOST;
    return gpu_ops_path() == GPU_PATH_NCCL ? FUSION_NCCL : FUSION_STAGED;
}

void hvd_barrier(void)
{
    if (!job.initialized)
        return;
    double t = profile_begin();
    check_call(COLL_BARRIER, "", 0, -1, 0);
    MPI_Barrier(job.comm);
    watchdog_idle();
    profile_end(PROFILE_BARRIER, 0, t);
}

static int resolve_compression(int compression)
{
    if (compression == HVD_COMPRESS_DEFAULT)
        return job.compression;
    if (compression != HVD_COMPRESS_NONE && compression != HVD_COMPRESS_FP16)
        fatal_error("allreduce: unknown compression %d (use HVD_COMPRESS_NONE or _FP16)",
                    compression);
    return compression;
}

void hvd_allreduce_async(float *buf, size_t n, hvd_op op, const char *name, int compression)
{
    if (op != HVD_SUM && op != HVD_AVERAGE)
        fatal_error("allreduce \"%s\": unknown op %d (use HVD_SUM or HVD_AVERAGE)",
                    name ? name : "", (int)op);
    if (n && !buf)
        fatal_error("allreduce \"%s\": NULL buffer for %zu elements", name ? name : "", n);
    int fp16 = resolve_compression(compression) == HVD_COMPRESS_FP16;
    trace_collective("allreduce", name, n, -1, op == HVD_SUM ? "sum" : "average", fp16);
    if (!job.initialized)
        return; /* world of one: the sum and the average are the tensor itself */
    profile_add(PROFILE_ALLREDUCE, 1, (double)n * sizeof *buf, 0); /* its time: synchronize's */
    fusion_enqueue(&job.queue, buf, n, op, fp16, tensor_way(buf, n), name);
}

/* Where no entry check runs, the shutdown rule (watchdog.h) counts a flush as one call, named as
 * the check would (the tensor, or synchronize(N queued)): the same count on every rank, for a
 * fraction of the check's per-tensor cost (bench/allreduce's line "stall inspector off"). */
static void count_flush(void)
{
    if (entry_checked() || job.queue.len == 0)
        return;
    const fusion_entry *e = job.queue.entries;
    coll_desc d = job.queue.len == 1 ? coll_describe_allreduce(e->name, e->n, e->op, e->fp16)
                                   : coll_describe(COLL_SYNCHRONIZE, "", job.queue.len, -1);
    watchdog_enter(&d);
}

void hvd_synchronize(void)
{
    if (!job.initialized)
        return;
    die_of_unkept_signal(); /* also where no entry check runs (HVD_STALL_CHECK_DISABLE=1) */
    autotune_sync(job.queue.len); /* HVD_AUTOTUNE: may set the threshold for this flush */
    double t = profile_begin();
    count_flush();
    fusion_flush(&job.queue, job.comm, job.fusion_threshold, entry_checked() ? enter_fused : NULL);
    watchdog_idle();
    profile_add(PROFILE_ALLREDUCE, 0, 0, profile_since(t));
}

void hvd_allreduce_ex(float *buf, size_t n, hvd_op op, const char *name, int compression)
{
    hvd_allreduce_async(buf, n, op, name, compression);
    hvd_synchronize();
}

void hvd_allreduce(float *buf, size_t n, hvd_op op, const char *name)
{
    hvd_allreduce_ex(buf, n, op, name, HVD_COMPRESS_DEFAULT);
}

/* count elements of esize bytes; the collective check compares element counts. */
static void broadcast(void *buf, size_t count, size_t esize, int root, const char *name)
{
    if (root < 0 || root >= hvd_size())
        fatal_error("broadcast \"%s\": root %d is not a rank (size %d)", name ? name : "", root,
                    hvd_size());
    trace_collective(esize == 1 ? "broadcast_bytes" : "broadcast", name, count, root, NULL, 0);
    if (!job.initialized)
        return;
    flush_queue();
    double t = profile_begin();
    int way = tensor_way(buf, count);
    check_call(COLL_BROADCAST, name, count, root, way == FUSION_NCCL);
    if (timeline_enabled())
        timeline_event(name, "BROADCAST", 'B');
    size_t nbytes = count * esize;
    char what[COLL_NAME_MAX + 32];
    snprintf(what, sizeof what, "broadcast \"%s\"", name ? name : "");
    fusion_entry tensor = {.buf = buf, .n = count, .gpu = way};
    const coll_backend *way_row = backend_for(job.backends, job.nbackends, &tensor, 1);
    way_row->broadcast(job.comm, buf, nbytes, root, what);
    watchdog_idle();
    if (timeline_enabled())
        timeline_event(name, "BROADCAST", 'E');
    profile_end(PROFILE_BROADCAST, (double)nbytes, t);
}

void hvd_broadcast_bytes(void *buf, size_t nbytes, int root, const char *name)
{
    broadcast(buf, nbytes, 1, root, name);
}

void hvd_broadcast(float *buf, size_t n, int root, const char *name)
{
    broadcast(buf, n, sizeof(float), root, name);
}

float *hvd_allgather(const float *buf, size_t n, size_t *total, size_t *counts, const char *name)
{
    int size = hvd_size();
    long long mine = (long long)n;
    long long *all = malloc((size_t)size * sizeof *all);
    double t = 0;
    if (!all)
        fatal_error("allgather \"%s\": out of memory", name ? name : "");
    trace_collective("allgather", name, n, -1, NULL, 0);
    if (job.initialized) {
        flush_queue();
        t = profile_begin();
        check_call(COLL_ALLGATHER, name, n, -1, 0); /* the device way is agreed below */
        if (timeline_enabled())
            timeline_event(name, "ALLGATHER", 'B');
        MPI_Allgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, job.comm);
    } else {
        all[0] = mine;
    }
    size_t sum = 0;
    for (int r = 0; r < size; r++)
        sum += (size_t)all[r];
    if (sum > INT_MAX)
        fatal_error("allgather \"%s\": %zu elements in all exceeds this runtime's limit of %d",
                    name ? name : "", sum, INT_MAX);
    float *out = malloc((sum ? sum : 1) * sizeof *out);
    int *cnt = malloc((size_t)size * sizeof *cnt), *disp = malloc((size_t)size * sizeof *disp);
    if (!out || !cnt || !disp)
        fatal_error("allgather \"%s\": cannot allocate %zu floats", name ? name : "", sum);
    for (int r = 0, d = 0; r < size; d += (int)all[r], r++) {
        cnt[r] = (int)all[r];
        disp[r] = d;
        if (counts)
            counts[r] = (size_t)all[r];
    }
    if (job.initialized) {
        char what[COLL_NAME_MAX + 32];
        snprintf(what, sizeof what, "allgather \"%s\"", name ? name : "");
        int way = tensor_way(buf, n);
        if (gpu_ops_path() == GPU_PATH_NCCL) {
            /* Counts differ between ranks, so may the ways (an empty tensor is a host one):
             * when any rank's tensor is on the GPU every rank joins NCCL, a host tensor
             * uploaded. */
            int any = way == FUSION_NCCL;
            MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, job.comm);
            way = any ? FUSION_NCCL : way;
        }
        fusion_entry tensor = {.buf = (float *)buf, .n = n, .gpu = way};
        backend_for(job.backends, job.nbackends, &tensor, 1)->allgather(job.comm, buf, n, out, cnt,
                                                                    disp, sum, what);
        if (timeline_enabled())
            timeline_event(name, "ALLGATHER", 'E');
    } else if (n) {
        memcpy(out, buf, n * sizeof *out);
    }
    watchdog_idle();
    profile_end(PROFILE_ALLGATHER, (double)n * sizeof *buf, t);
    free(all);
    free(cnt);
    free(disp);
    *total = sum;
    return out;
}
