/* allreduce.c — the choice of algorithm for a fused host buffer. See allreduce.h.
 * Public: allreduce_init, allreduce_free, allreduce_run, allreduce_choice, allreduce_path_name,
 *         allreduce_hosts, allreduce_force_path, allreduce_reconfigure, allreduce_new_window,
 *         allreduce_host_node, allreduce_set_window_user.
 */
#include "coll/allreduce.h"

#include "base/memory.h"
#include "coll/cma.h"
#include "coll/hier.h"
#include "coll/shm.h"
#include "prof/profile.h"


/* The hosts and the settings that choose each buffer's algorithm. Owned by this file:
 * allreduce_init fills it (from hvd_init), allreduce_free empties it. */
typedef struct {
    int ready;
    int hierarchical, group_size;
    int buffers_mixed;           /* allreduce_init's: the ranks' buffer kinds may differ */
    void (*release_window)(void); /* allreduce_set_window_user's */
    allreduce_path forced;
    hier_topo topo;
} allreduce_state;
static allreduce_state paths = {.forced = ALLREDUCE_AUTO};

void allreduce_init(MPI_Comm comm, int hierarchical, int group_size, int buffers_mixed)
{
    if (paths.ready)
        allreduce_free();
    paths.hierarchical = hierarchical;
    paths.group_size = group_size;
    paths.buffers_mixed = buffers_mixed;
    hier_topo_init(&paths.topo, comm, group_size);
    paths.ready = 1;
}

void allreduce_free(void)
{
    if (!paths.ready)
        return;
    if (paths.release_window)
        paths.release_window(); /* it maps the host's window, forgotten next */
    hier_topo_free(&paths.topo);
    paths.ready = 0;
    paths.forced = ALLREDUCE_AUTO;
}

void allreduce_set_window_user(void (*release)(void)) { paths.release_window = release; }

void allreduce_reconfigure(int hierarchical, int group_size)
{
    if (paths.ready)
        allreduce_init(paths.topo.comm, hierarchical, group_size, paths.buffers_mixed);
}

void allreduce_force_path(allreduce_path p) { paths.forced = p; }

void allreduce_new_window(void)
{
    if (paths.ready)
        shm_node_free(&paths.topo.shm); /* the next shm call allocates one at today's piece size */
}
int allreduce_hosts(void) { return paths.ready ? paths.topo.nhosts : 1; }

shm_node *allreduce_host_node(MPI_Comm comm)
{
    return paths.ready && comm == paths.topo.comm && paths.topo.nhosts == 1 && paths.topo.size > 1
               ? &paths.topo.shm
               : NULL;
}

const char *allreduce_path_name(allreduce_path p)
{
    switch (p) {
    case ALLREDUCE_RING: return "ring";
    case ALLREDUCE_SHM: return "shm";
    case ALLREDUCE_HIERARCHICAL: return "hierarchical";
    case ALLREDUCE_CMA: return "cma";
    default: return "auto";
    }
}

/* The path for a buffer of this many bytes, on huge pages (memory_alloc's) or not. */
static allreduce_path choice(int on_huge_pages, size_t bytes)
{
    if (!paths.ready || paths.topo.size == 1)
        return ALLREDUCE_RING; /* the ring of one only scales */
    allreduce_path p = paths.forced;
    if (p == ALLREDUCE_AUTO && paths.topo.nhosts > 1)
        p = paths.hierarchical ? ALLREDUCE_HIERARCHICAL : ALLREDUCE_RING;
    if (p == ALLREDUCE_AUTO) {
        /* One host. Measured on the 2-core VM, make bench-allreduce with --cma-blocks and the
         * window alone, interleaved (2026-11-23, load average 0.4-1.9; median times):
         * - buffers on huge pages (memory_alloc), 2 ranks: the single copy beats the window from
         *   256 KiB on (9.0 vs 11.7 us; 1 MiB 33 vs 42, 4 MiB 128 vs 178, 64 MiB 3.8 vs 6.7 ms),
         *   ties it at 128 KiB (6.2 vs 6.3 us) and loses at 64 KiB (5.0 vs 4.2: two system
         *   calls of ~1 us each), and beats MPI_Allreduce's own single copy (vader's CMA)
         *   1.05-1.18x at 1-4 MiB, where the window lost (0.84-0.92x);
         * - 4 ranks on 2 cores: the single copy wins from 1 MiB (129 vs 132 us, 4 MiB 466 vs
         *   579, 256 MiB 42 vs 48 ms); below it the window, whose one or two barriers cost less
         *   than 6 system calls per rank (64 KiB 36 vs 42 us);
         * - plain malloc buffers (4 KiB pages, which the kernel pins one by one): the single
         *   copy ties the window with 2 ranks and takes twice its time with 4 (4 MiB 1.2 vs
         *   0.67 ms): the window, at every size. */
        size_t from = paths.topo.shm.shared_cores ? ALLREDUCE_CMA_FROM_SHARED_CORES
                                              : ALLREDUCE_CMA_FROM_OWN_CORES;
        /* The buffer's kind is this rank's own: where the ranks' kinds may differ (some stage
         * from a GPU into pinned memory, the others without one reduce the caller's), every
         * rank takes the window, since two ranks on different paths would wait for each other. */
        p = !paths.buffers_mixed && bytes >= from && on_huge_pages ? ALLREDUCE_CMA
                                                                      : ALLREDUCE_SHM;
    }
    if ((p == ALLREDUCE_SHM || p == ALLREDUCE_CMA) && paths.topo.nhosts > 1)
        p = ALLREDUCE_RING;
    return p;
}

allreduce_path allreduce_choice(const void *buf, size_t bytes)
{
    return choice(buf && memory_on_huge_pages(buf, bytes), bytes);
}

/* Whether the buffer's kind alone may change the path for this size: the single copy for
 * memory_alloc's, the window for others. The same answer on every rank (size, the host's
 * huge pages, the job's settings), so every rank knows whether to agree (allreduce_run). */
static int kind_decides(size_t bytes)
{
    return memory_huge_pages() && choice(1, bytes) != choice(0, bytes);
}

static void mark_group(const char *activity, char phase, void *ctx)
{
    const fusion_entry *const *g = ctx;
    size_t len = (size_t)(g[1] - g[0]);
    fusion_mark(g[0], len, activity, phase);
}

void allreduce_run(MPI_Comm comm, void *buf, size_t n, int fp16, float scale, ring_workspace *ws,
                   const fusion_entry *e, size_t len)
{
    size_t bytes = n * (fp16 ? 2 : 4);
    allreduce_path p =
        paths.ready && comm == paths.topo.comm ? allreduce_choice(buf, bytes) : ALLREDUCE_RING;
    if (p == ALLREDUCE_HIERARCHICAL) {
        const fusion_entry *g[2] = {e, e + len};
        double t = profile_begin();
        hier_allreduce(&paths.topo, buf, n, fp16, scale, ws, mark_group, g);
        profile_end(PROFILE_HIER, (double)bytes, t);
        return;
    }
    if (p == ALLREDUCE_CMA || p == ALLREDUCE_SHM) {
        /* The choice looked at this rank's buffer only. Where another rank's may be of the
         * other kind (a caller's plain buffer beside memory_alloc's), the ranks agree first, at
         * one barrier: the single copy only if every rank's buffer is on huge pages. Two ranks
         * on two paths waited for each other, or one ended with wrong values. */
        int decides = kind_decides(bytes); /* p is the choice's: paths.ready, paths.topo.comm */
        if ((p == ALLREDUCE_CMA || decides) && !cma_usable(&paths.topo.shm))
            p = ALLREDUCE_SHM; /* the host forbids the reads (cma.h): the same on every rank */
        else if (decides)
            p = cma_all_agree(&paths.topo.shm, p == ALLREDUCE_CMA) ? ALLREDUCE_CMA : ALLREDUCE_SHM;
    }
    if (p == ALLREDUCE_CMA || p == ALLREDUCE_SHM) { /* the host's two ways, one signature */
        const char *pass = p == ALLREDUCE_CMA ? "CMA_ALLREDUCE" : "SHM_ALLREDUCE";
        void (*reduce)(shm_node *, void *, size_t, shm_elem, float) =
            p == ALLREDUCE_CMA ? cma_allreduce : shm_allreduce;
        fusion_mark(e, len, pass, 'B');
        double t = profile_begin();
        reduce(&paths.topo.shm, buf, n, fp16 ? SHM_F16 : SHM_F32, scale);
        profile_end(PROFILE_SHM, (double)bytes, t);
        fusion_mark(e, len, pass, 'E');
        return;
    }
    fusion_mark(e, len, "MPI_ALLREDUCE", 'B');
    if (fp16)
        ring_allreduce_f16(comm, buf, n, scale, ws);
    else
        ring_allreduce_f32(comm, buf, n, scale, ws);
    fusion_mark(e, len, "MPI_ALLREDUCE", 'E');
}
