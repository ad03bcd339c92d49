/* allreduce.c — the choice of algorithm for a fused host buffer. See allreduce.h.
 * Public: allreduce_init, allreduce_free, allreduce_run, allreduce_choice, allreduce_path_name,
 *         allreduce_hosts, allreduce_force_path, allreduce_reconfigure, allreduce_new_window.
 */
#include "coll/allreduce.h"

#include "coll/hier.h"
#include "coll/profile.h"
#include "coll/shm.h"


static struct {
    int ready;
    int hierarchical, group_size;
    allreduce_path forced;
    hier_topo topo;
} A = {.forced = ALLREDUCE_AUTO};

void allreduce_init(MPI_Comm comm, int hierarchical, int group_size)
{
    if (A.ready)
        allreduce_free();
    A.hierarchical = hierarchical;
    A.group_size = group_size;
    hier_topo_init(&A.topo, comm, group_size);
    A.ready = 1;
}

void allreduce_free(void)
{
    if (!A.ready)
        return;
    hier_topo_free(&A.topo);
    A.ready = 0;
    A.forced = ALLREDUCE_AUTO;
}

void allreduce_reconfigure(int hierarchical, int group_size)
{
    if (A.ready)
        allreduce_init(A.topo.comm, hierarchical, group_size);
}

void allreduce_force_path(allreduce_path p) { A.forced = p; }

void allreduce_new_window(void)
{
    if (A.ready)
        shm_node_free(&A.topo.shm); /* the next shm call allocates one at today's piece size */
}
int allreduce_hosts(void) { return A.ready ? A.topo.nhosts : 1; }

const char *allreduce_path_name(allreduce_path p)
{
    switch (p) {
    case ALLREDUCE_RING: return "ring";
    case ALLREDUCE_SHM: return "shm";
    case ALLREDUCE_HIERARCHICAL: return "hierarchical";
    default: return "auto";
    }
}

allreduce_path allreduce_choice(size_t bytes)
{
    (void)bytes; /* every path serves every size today; the choice stays per call */
    if (!A.ready || A.topo.size == 1)
        return ALLREDUCE_RING; /* the ring of one only scales */
    allreduce_path p = A.forced;
    if (p == ALLREDUCE_AUTO) {
        /* One host: the shared window at every size. Measured quiet on the 2-core VM
         * (make bench-allreduce, 2026-11-23; MPI_Allreduce median time / this path's): with
         * plain malloc buffers 1.2-4.9x at every size from 64 KiB to 256 MiB, 2 and 4 ranks; with
         * the kit's huge-page buffers 1.0-4.5x with 2 ranks except 1-4 MiB (0.74-0.89), where
         * Open MPI's single cross-process copy (vader's CMA) on 2 MiB pages beats the window's
         * copy-in, sum, copy-out and the ring only ties MPI; 4 ranks on 2 cores lose below
         * 8 MiB (0.67-0.92), waiting at the window's barriers. One path for every size keeps a
         * model's fused buffers on one code path; the ring stays one allreduce_force_path
         * away for comparison. */
        if (A.topo.nhosts == 1)
            p = ALLREDUCE_SHM;
        else
            p = A.hierarchical ? ALLREDUCE_HIERARCHICAL : ALLREDUCE_RING;
    }
    if (p == ALLREDUCE_SHM && A.topo.nhosts > 1)
        p = ALLREDUCE_RING;
    return p;
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
    allreduce_path p = A.ready && comm == A.topo.comm ? allreduce_choice(bytes) : ALLREDUCE_RING;
    if (p == ALLREDUCE_HIERARCHICAL) {
        const fusion_entry *g[2] = {e, e + len};
        double t = profile_begin();
        hier_allreduce(&A.topo, buf, n, fp16, scale, ws, mark_group, g);
        profile_end(PROFILE_HIER, (double)bytes, t);
        return;
    }
    if (p == ALLREDUCE_SHM) {
        fusion_mark(e, len, "SHM_ALLREDUCE", 'B');
        double t = profile_begin();
        shm_allreduce(&A.topo.shm, buf, n, fp16 ? SHM_F16 : SHM_F32, scale);
        profile_end(PROFILE_SHM, (double)bytes, t);
        fusion_mark(e, len, "SHM_ALLREDUCE", 'E');
        return;
    }
    fusion_mark(e, len, "MPI_ALLREDUCE", 'B');
    if (fp16)
        ring_allreduce_f16(comm, buf, n, scale, ws);
    else
        ring_allreduce_f32(comm, buf, n, scale, ws);
    fusion_mark(e, len, "MPI_ALLREDUCE", 'E');
}
