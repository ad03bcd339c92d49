/* ring.c — ring allreduce (reduce-scatter + allgather) over MPI point-to-point.
 * Public: ring_allreduce_f32, ring_allreduce_f16, ring_chunk_begin, ring_workspace_free,
 *         ring_set_tuning, ring_add_f32, ring_add_f16, ring_scale_f32, ring_scale_f16.
 *
 * Rank r sends to r+1 and receives from r-1. The buffer is cut into N chunks. In reduce-scatter
 * step s (0 <= s < N-1) rank r sends chunk (r-s) and receives chunk (r-s-1), adding it into its
 * own copy; after N-1 steps rank r holds the full sum of chunk (r+1). The allgather then passes
 * the finished chunks around the ring, received straight into place. Every element's sum is
 * formed on one rank only, so all ranks end with bitwise identical results.
 *
 * What makes it fast on one node (Open MPI's shared-memory transport copies large messages
 * with one kernel cross-memory copy, done by the receiving process):
 * - Blocks: a large buffer is reduced block by block (block_bytes per rank), each block through
 *   a whole reduce-scatter + allgather, so the chunk a neighbour has just summed is still in
 *   cache when we fetch it, instead of coming back from DRAM.
 * - Segments: the incoming chunk arrives in seg_bytes pieces into a few scratch slots that stay
 *   in cache; MPI_Allreduce receives into a fresh temporary instead, which page-faults on every
 *   call for large messages.
 * - Small buffers (latency-bound) on a power-of-two N use recursive doubling instead.
 */
#include "coll/ring.h"

#include "base/fatal.h"
#include "base/half.h"
#include "base/memory.h"
#include "prof/profile.h"

/* Defaults measured with bench/allreduce on a 2-core VM (ring_set_tuning changes them). */
#define DEFAULT_SEG_BYTES ((size_t)1 << 20)
#define DEFAULT_BLOCK_BYTES ((size_t)1 << 20)
static size_t seg_bytes = DEFAULT_SEG_BYTES;
static size_t block_bytes = DEFAULT_BLOCK_BYTES;

/* Recursive doubling for (RD_MIN, RD_MAX] bytes on a power-of-two N. Up to RD_MIN the ring's
 * half-size messages still fit Open MPI's 4 KiB shared-memory eager limit and win; past RD_MAX
 * bandwidth decides and the ring moves half the bytes. */
#define RD_MIN ((size_t)4 << 10)
#define RD_MAX ((size_t)128 << 10)

void ring_set_tuning(size_t segment_bytes, size_t block)
{
    seg_bytes = segment_bytes ? segment_bytes : DEFAULT_SEG_BYTES;
    block_bytes = block ? block : DEFAULT_BLOCK_BYTES;
}

#define NSLOTS 4                    /* pieces in flight */
#define GATHER_BYTES ((size_t)1 << 30) /* allgather message cap (keeps counts in int) */
#define TAG_RS 0x5253
#define TAG_AG 0x4147
#define TAG_RD 0x5244

size_t ring_chunk_begin(size_t n, int nchunks, int c)
{
    /* Balanced split: chunk sizes differ by at most one element. */
    size_t base = n / (size_t)nchunks, extra = n % (size_t)nchunks;
    size_t cc = (size_t)c;
    return cc * base + (cc < extra ? cc : extra);
}

void ring_workspace_free(ring_workspace *ws)
{
    memory_free(ws->scratch);
    ws->scratch = NULL;
    ws->scratch_bytes = 0;
}

static void *workspace_slots(ring_workspace *ws)
{
    size_t need = NSLOTS * seg_bytes > RD_MAX ? NSLOTS * seg_bytes : RD_MAX;
    if (ws->scratch_bytes < need) {
        memory_free(ws->scratch);
        ws->scratch = memory_alloc(need); /* pre-faulted: no page faults inside the ring */
        if (!ws->scratch)
            fatal_error("ring allreduce: cannot allocate %zu bytes of scratch", need);
        ws->scratch_bytes = need;
    }
    return ws->scratch;
}

/* Element type: the reduce kernel and the MPI datatype differ, the ring does not. */
typedef void (*reduce_fn)(void *dst, const void *src, size_t n, float scale);

/* The allreduce's inner loop: built for AVX2 as well as the baseline, picked at load time. */
__attribute__((target_clones("avx2", "default")))
void ring_add_f32(void *dst_, const void *src_, size_t n, float scale)
{
    float *restrict dst = dst_;
    const float *restrict src = src_;
    if (scale == 1.0f) {
        for (size_t i = 0; i < n; i++)
            dst[i] += src[i];
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = (dst[i] + src[i]) * scale;
    }
}

void ring_add_f16(void *dst_, const void *src_, size_t n, float scale)
{
    uint16_t *restrict dst = dst_;
    const uint16_t *restrict src = src_;
    for (size_t i = 0; i < n; i++)
        dst[i] = half_from_float((half_to_float(dst[i]) + half_to_float(src[i])) * scale);
}

void ring_scale_f32(void *buf_, size_t n, float scale)
{
    float *buf = buf_;
    for (size_t i = 0; i < n; i++)
        buf[i] *= scale;
}

void ring_scale_f16(void *buf_, size_t n, float scale)
{
    uint16_t *buf = buf_;
    for (size_t i = 0; i < n; i++)
        buf[i] = half_from_float(half_to_float(buf[i]) * scale);
}

typedef struct {
    MPI_Comm comm;
    int rank, size, left, right;
    size_t esize;
    MPI_Datatype type;
    reduce_fn reduce;
    char *buf;
    size_t n;
} ring_ctx;

static char *chunk_ptr(const ring_ctx *c, int chunk, size_t *count)
{
    int k = ((chunk % c->size) + c->size) % c->size;
    size_t b = ring_chunk_begin(c->n, c->size, k), e = ring_chunk_begin(c->n, c->size, k + 1);
    *count = e - b;
    return c->buf + b * c->esize;
}

/* Elements in segment k of a chunk of count elements cut into pieces of seg. */
static int seg_count(size_t count, size_t seg, size_t k)
{
    size_t off = k * seg;
    return (int)(count - off < seg ? count - off : seg);
}

/* The sending half of a reduce-scatter step: segments of one chunk go right, at most NSLOTS
 * in flight. */
typedef struct {
    const char *p;
    size_t count, nseg, next;
    MPI_Request req[NSLOTS];
} seg_sender;

static void send_next(const ring_ctx *c, seg_sender *s, size_t seg)
{
    if (s->next >= s->nseg)
        return;
    MPI_Request *r = &s->req[s->next % NSLOTS];
    MPI_Wait(r, MPI_STATUS_IGNORE); /* the slot's previous segment has gone */
    MPI_Isend(s->p + s->next * seg * c->esize, seg_count(s->count, seg, s->next), c->type,
              c->right, TAG_RS, c->comm, r);
    s->next++;
}

/* One reduce-scatter step: send chunk `send` to the right in segments while receiving chunk
 * `recv` from the left in segments into the scratch slots, adding each into place. */
static void reduce_step(const ring_ctx *c, int send, int recv, float scale, char *slots)
{
    size_t seg = seg_bytes / c->esize, nr;
    seg_sender s = {.next = 0};
    s.p = chunk_ptr(c, send, &s.count);
    s.nseg = (s.count + seg - 1) / seg;
    char *rp = chunk_ptr(c, recv, &nr);
    size_t nrecv = (nr + seg - 1) / seg, posted = 0;
    MPI_Request rreq[NSLOTS];
    for (int i = 0; i < NSLOTS; i++)
        s.req[i] = rreq[i] = MPI_REQUEST_NULL;

    for (int i = 0; i < NSLOTS; i++) { /* prime: NSLOTS receives and sends in flight */
        if (posted < nrecv) {
            MPI_Irecv(slots + (size_t)i * seg_bytes, seg_count(nr, seg, posted), c->type, c->left,
                      TAG_RS, c->comm, &rreq[i]);
            posted++;
        }
        send_next(c, &s, seg);
    }
    for (size_t k = 0; k < nrecv; k++) {
        int slot = (int)(k % NSLOTS);
        char *slot_p = slots + (size_t)slot * seg_bytes;
        MPI_Wait(&rreq[slot], MPI_STATUS_IGNORE);
        c->reduce(rp + k * seg * c->esize, slot_p, (size_t)seg_count(nr, seg, k), scale);
        if (posted < nrecv) {
            MPI_Irecv(slot_p, seg_count(nr, seg, posted), c->type, c->left, TAG_RS, c->comm,
                      &rreq[slot]);
            posted++;
        }
        send_next(c, &s, seg); /* the send side keeps pace */
    }
    /* All sends are posted by now: chunks differ by at most one element, so the send chunk has
     * at most one segment more than the receive chunk, and priming posted NSLOTS >= 1 extra. */
    MPI_Waitall(NSLOTS, s.req, MPI_STATUSES_IGNORE);
}

/* One allgather step: finished chunk `send` goes right, chunk `recv` arrives from the left
 * straight into place. */
static void gather_step(const ring_ctx *c, int send, int recv)
{
    size_t ns, nr;
    char *sp = chunk_ptr(c, send, &ns), *rp = chunk_ptr(c, recv, &nr);
    size_t cap = GATHER_BYTES / c->esize;
    for (size_t off = 0; off < ns || off < nr; off += cap) {
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        if (off < nr)
            MPI_Irecv(rp + off * c->esize, (int)(nr - off < cap ? nr - off : cap), c->type, c->left,
                      TAG_AG, c->comm, &req[0]);
        if (off < ns)
            MPI_Isend(sp + off * c->esize, (int)(ns - off < cap ? ns - off : cap), c->type,
                      c->right, TAG_AG, c->comm, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
}

/* Small buffers on a power-of-two number of ranks: recursive doubling, log2(N) exchanges of the
 * whole buffer instead of 2(N-1) ring steps; latency, not bandwidth, decides at this size.
 * Partners add in the same order (a+b and b+a are the same float), so all ranks agree bitwise. */
static void recursive_doubling(const ring_ctx *c, float scale, char *tmp,
                               void (*scale_all)(void *, size_t, float))
{
    for (int mask = 1; mask < c->size; mask <<= 1) {
        int partner = c->rank ^ mask;
        MPI_Sendrecv(c->buf, (int)c->n, c->type, partner, TAG_RD, tmp, (int)c->n, c->type,
                     partner, TAG_RD, c->comm, MPI_STATUS_IGNORE);
        c->reduce(c->buf, tmp, c->n, 1.0f);
    }
    if (scale != 1.0f)
        scale_all(c->buf, c->n, scale);
}

static void ring_run(ring_ctx *c, float scale, ring_workspace *ws,
                     void (*scale_all)(void *, size_t, float))
{
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    if (c->size == 1 || c->n == 0) {
        if (scale != 1.0f && c->n)
            scale_all(c->buf, c->n, scale);
        return;
    }
    c->left = (c->rank - 1 + c->size) % c->size;
    c->right = (c->rank + 1) % c->size;
    char *slots = workspace_slots(ws);
    size_t bytes = c->n * c->esize;
    if (bytes > RD_MIN && bytes <= RD_MAX && (c->size & (c->size - 1)) == 0) {
        recursive_doubling(c, scale, slots, scale_all);
        return;
    }
    size_t block = block_bytes / c->esize * (size_t)c->size;
    char *base = c->buf;
    size_t total = c->n;
    for (size_t off = 0; off < total; off += block) {
        c->buf = base + off * c->esize;
        c->n = total - off < block ? total - off : block;
        for (int s = 0; s < c->size - 1; s++) {
            int last = s == c->size - 2; /* the final addition also applies the scale */
            reduce_step(c, c->rank - s, c->rank - s - 1, last ? scale : 1.0f, slots);
        }
        for (int s = 0; s < c->size - 1; s++)
            gather_step(c, c->rank + 1 - s, c->rank - s);
    }
}

void ring_allreduce_f32(MPI_Comm comm, float *buf, size_t n, float scale, ring_workspace *ws)
{
    ring_ctx c = {.comm = comm, .esize = sizeof(float), .type = MPI_FLOAT, .reduce = ring_add_f32,
                  .buf = (char *)buf, .n = n};
    double t = profile_begin();
    ring_run(&c, scale, ws, ring_scale_f32);
    profile_end(PROFILE_RING, (double)n * sizeof *buf, t);
}

void ring_allreduce_f16(MPI_Comm comm, uint16_t *buf, size_t n, float scale, ring_workspace *ws)
{
    ring_ctx c = {.comm = comm, .esize = sizeof(uint16_t), .type = MPI_UINT16_T,
                  .reduce = ring_add_f16, .buf = (char *)buf, .n = n};
    double t = profile_begin();
    ring_run(&c, scale, ws, ring_scale_f16);
    profile_end(PROFILE_RING, (double)n * sizeof *buf, t);
}
