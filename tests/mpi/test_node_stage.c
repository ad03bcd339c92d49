/* test_node_stage.c — node_stage.h's protocol (pinned slots, one barrier per piece, the next
 * piece's copy down overlapping this one's sum) under mpirun -n 1..4, on host buffers.
 *
 * The ops here do what the GPU's do (staged_node.c), with memcpy and sum_ranks.h (the function
 * the GPU's kernel runs per element), and as late as the protocol allows, the way streams may: a copy down runs only when down_wait is
 * called, a sum only when reduce_wait is, each after a random pause. A wait the engine forgot,
 * or a set reused too soon, then shows as a wrong sum. Results are compared bit for bit with
 * shm_allreduce's on the same data (both add in local-rank order) and across ranks, for both
 * element types, SUM and AVERAGE, lengths around the piece size and many pieces per call.
 * Every rank of mpirun is on this host, so the whole world is one node. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mpi.h>

#include "base/half.h"
#include "coll/shm.h"
#include "coll_gpu/node_stage.h"
#include "coll_gpu/sum_ranks.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"

/* Deferred work: at most one copy down and one sum are pending at a time (the engine waits for
 * each before it starts the next of its kind). */
typedef struct {
    const char *down_src;
    char *down_dst;
    size_t down_bytes;
    int down_pending;
    char *buf;
    char *const *slots;
    char *slot_copy[8]; /* the engine may reuse its array of slot pointers: keep them */
    int me, L, reduce_pending;
    size_t n;
    shm_elem t;
    float scale;
    unsigned seed;
    int downs, reduces; /* started, for the piece count check */
} late_ops;

static void pause_a_little(late_ops *o)
{
    if (rand_r(&o->seed) % 4 == 0)
        usleep((useconds_t)(rand_r(&o->seed) % 200));
}

static void down(void *ctx, const char *buf, char *slot, size_t bytes)
{
    late_ops *o = ctx;
    ck_assert(!o->down_pending);
    o->down_src = buf;
    o->down_dst = slot;
    o->down_bytes = bytes;
    o->down_pending = 1;
    o->downs++;
}

static void down_wait(void *ctx)
{
    late_ops *o = ctx;
    if (!o->down_pending)
        return;
    pause_a_little(o);
    memcpy(o->down_dst, o->down_src, o->down_bytes);
    o->down_pending = 0;
}

static void reduce(void *ctx, char *buf, char *const *slots, int me, int L, size_t n, shm_elem t,
                   float scale)
{
    late_ops *o = ctx;
    ck_assert(!o->reduce_pending && L <= 8);
    for (int r = 0; r < L; r++)
        o->slot_copy[r] = slots[r];
    o->buf = buf;
    o->me = me;
    o->L = L;
    o->n = n;
    o->t = t;
    o->scale = scale;
    o->reduce_pending = 1;
    o->reduces++;
}

/* What the GPU's op does (staged_node.c): sum_ranks.h per element, the very function the kernel
 * runs, over every rank's piece where it lies (the window on the GPUs reads the others' slots in
 * place; the host's window first copies them up, which changes no bit). */
static void reduce_wait(void *ctx)
{
    late_ops *o = ctx;
    if (!o->reduce_pending)
        return;
    pause_a_little(o);
    const char *x[8];
    for (int r = 0; r < o->L; r++)
        x[r] = r == o->me ? o->buf : o->slot_copy[r];
    for (size_t i = 0; i < o->n; i++) {
        if (o->t == SHM_F16)
            ((uint16_t *)o->buf)[i] =
                sum_ranks_f16((const uint16_t *const *)x, o->L, i, o->scale);
        else
            ((float *)o->buf)[i] = sum_ranks_f32((const float *const *)x, o->L, i, o->scale);
    }
    o->reduce_pending = 0;
}

static const node_stage_ops LATE = {down, down_wait, reduce, reduce_wait};

/* Values that tell positions and ranks apart, not exact in the sum (so the order shows). */
static void fill(char *b, size_t n, shm_elem t, int rank)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float)(rank + 1) * 0.1f + (float)(i % 4099) / 3.0f;
        if (t == SHM_F16)
            ((uint16_t *)b)[i] = half_from_float(v);
        else
            ((float *)b)[i] = v;
    }
}

static void check(node_stage *w, shm_node *node, size_t n, shm_elem t, float scale)
{
    size_t es = t == SHM_F16 ? 2 : 4;
    char *got = malloc(n * es + 1), *want = malloc(n * es + 1), *ref = malloc(n * es + 1);
    ck_assert(got && want && ref);
    fill(got, n, t, node->rank);
    memcpy(want, got, n * es);
    late_ops o = {.seed = (unsigned)(node->rank * 7919 + n)};
    node_stage_allreduce(w, got, n, t, scale, &LATE, &o);
    shm_allreduce(node, want, n, t, scale);
    size_t per = w->piece / es, pieces = n ? (n + per - 1) / per : 0;
    const char *what = t == SHM_F16 ? "f16" : "f32";
    CK_EXPECT(memcmp(got, want, n * es) == 0, "%s n=%zu scale=%g: rank %d differs from shm", what,
              n, (double)scale, node->rank);
    CK_EXPECT((size_t)o.downs == pieces && (size_t)o.reduces == pieces,
              "%s n=%zu: %d copies down and %d sums for %zu pieces", what, n, o.downs, o.reduces,
              pieces);
    memcpy(ref, got, n * es);
    MPI_Bcast(ref, (int)(n * es), MPI_BYTE, 0, node->comm);
    CK_EXPECT(memcmp(ref, got, n * es) == 0, "%s n=%zu: rank %d differs from rank 0", what, n,
              node->rank);
    free(got);
    free(want);
    free(ref);
}

/* piece: slot bytes; lengths around it and across many pieces. */
static void check_all(size_t piece)
{
    node_stage_set_piece_bytes(piece);
    shm_node node;
    shm_node_init(&node, MPI_COMM_WORLD);
    node_stage w;
    node_stage_init(&w, &node);
    size_t bytes = 0;
    char *slots = node_stage_window(&w, &bytes);
    CK_EXPECT(((uintptr_t)slots & 4095) == 0, "slots at %p: not page aligned", (void *)slots);
    CK_EXPECT(bytes == 2 * (size_t)node.size * w.piece, "window of %zu bytes", bytes);
    for (int ti = 0; ti < 2; ti++) {
        shm_elem t = ti ? SHM_F16 : SHM_F32;
        size_t per = w.piece / (t == SHM_F16 ? 2 : 4);
        size_t lens[] = {0, 1, per - 1, per, per + 1, 3 * per + 7, 17 * per + 1};
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
            check(&w, &node, lens[k], t, 1.0f);
            check(&w, &node, lens[k], t, 1.0f / (float)node.size);
        }
    }
    node_stage_free(&w);
    shm_node_free(&node);
    node_stage_set_piece_bytes(0);
    CK_AGREE();
}

START_TEST(small_pieces) { check_all(4096); }
END_TEST

START_TEST(default_pieces) { check_all(0); }
END_TEST

/* Calls back to back reuse the sets across calls: one piece each, then two, alternating. */
START_TEST(calls_back_to_back)
{
    node_stage_set_piece_bytes(4096);
    shm_node node;
    shm_node_init(&node, MPI_COMM_WORLD);
    node_stage w;
    node_stage_init(&w, &node);
    for (int i = 0; i < 40; i++)
        check(&w, &node, i % 2 ? 1024 + 3 : 1024 + 1025, SHM_F32, 1.0f);
    node_stage_free(&w);
    shm_node_free(&node);
    node_stage_set_piece_bytes(0);
    CK_AGREE();
}
END_TEST

/* Each rank makes a shared-memory segment of bytes and maps every rank's, in rank order, as
 * separate mappings (the way staged_node.c's attached windows lie); the names are gone once
 * every rank has mapped them. */
static char **map_every_segment(size_t bytes, const char *tag, int L)
{
    char name[64], *names = malloc((size_t)L * sizeof name);
    char **bases = calloc((size_t)L, sizeof *bases);
    ck_assert(names && bases);
    snprintf(name, sizeof name, "/hvdlab-%s-test-%ld", tag, (long)getpid());
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    ck_assert_msg(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0, "shm_open %s", name);
    close(fd);
    MPI_Allgather(name, sizeof name, MPI_CHAR, names, sizeof name, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < L; r++) {
        int f = shm_open(names + (size_t)r * sizeof name, O_RDWR, 0);
        ck_assert(f >= 0);
        bases[r] = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        ck_assert(bases[r] != MAP_FAILED);
        close(f);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every rank has mapped every name */
    shm_unlink(name);
    free(names);
    return bases;
}

static void unmap_every_segment(char **bases, int L, size_t bytes)
{
    for (int r = 0; r < L; r++)
        munmap(bases[r], bytes);
    free(bases);
}

/* A window attached from outside, as staged_node.c attaches the GPU's (node_stage_attach): each
 * rank's two slots are a mapping of their own, at other addresses in every process (so an
 * engine that went by the host segment's layout, or took one rank's slots for another's, would
 * sum the wrong pieces). */
START_TEST(attached_window_of_separate_mappings)
{
    const size_t piece = 4096;
    shm_node node;
    shm_node_init(&node, MPI_COMM_WORLD);
    int L = node.size, me = node.rank;
    char **bases = map_every_segment(2 * piece, "attach", L);
    node_stage w;
    node_stage_init(&w, &node);
    node_stage_attach(&w, bases, piece);
    for (int ti = 0; ti < 2; ti++) {
        shm_elem t = ti ? SHM_F16 : SHM_F32;
        size_t per = piece / (t == SHM_F16 ? 2 : 4);
        size_t lens[] = {1, per - 1, per + 1, 5 * per + 3};
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
            check(&w, &node, lens[k], t, 1.0f / (float)L);
    }
    CK_EXPECT(w.slots == NULL, "rank %d: a segment mapped beside the attached window", me);
    node_stage_free(&w);
    unmap_every_segment(bases, L, 2 * piece);
    shm_node_free(&node);
    CK_AGREE();
}
END_TEST

/* Two windows on the node's one barrier, as HVDLAB_STAGED_REDUCE=auto uses them
 * (staged_node.c: the host's window for the groups below 8 MiB, the GPU's attached one from
 * there, call by call): a segment of 4 KiB pieces and an attached window of 32 KiB pieces,
 * 60 calls whose lengths send them to one or the other, f32 and f16, each checked against
 * shm_allreduce. Dropping the wait for a rank's own sums before the barrier (node_stage.c) fails
 * it. */
START_TEST(two_windows_alternating)
{
    const size_t piece = 4096, big = 8 * piece;
    node_stage_set_piece_bytes(piece);
    shm_node node;
    shm_node_init(&node, MPI_COMM_WORLD);
    int L = node.size;
    node_stage w, wi;
    node_stage_init(&w, &node);
    node_stage_init(&wi, &node);
    size_t bytes;
    ck_assert(node_stage_window(&w, &bytes));
    char **bases = map_every_segment(2 * big, "two-windows", L);
    node_stage_attach(&wi, bases, big);
    for (int i = 0; i < 60; i++) {
        const size_t n = (size_t)((i * 2654435761u) % 40000) + 1;
        const shm_elem t = i % 3 ? SHM_F32 : SHM_F16;
        node_stage *x = n * (t == SHM_F16 ? 2 : 4) >= big ? &wi : &w;
        check(x, &node, n, t, i % 2 ? 1.0f : 1.0f / (float)L);
    }
    node_stage_free(&w);
    node_stage_free(&wi);
    unmap_every_segment(bases, L, 2 * big);
    shm_node_free(&node);
    node_stage_set_piece_bytes(0);
    CK_AGREE();
}
END_TEST

/* No segment name outlives the call that mapped it (node rank 0 unlinks it at once). Names
 * carry rank 0's pid: only this job's are counted. Collective. */
static int stage_names_in_dev_shm(void)
{
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls /dev/shm 2>/dev/null | grep -c '^hvdlab-stage-%ld-'", pid);
    FILE *p = popen(cmd, "r");
    int k = -1;
    if (p) {
        if (fscanf(p, "%d", &k) != 1)
            k = -1;
        pclose(p);
    }
    return k;
}

START_TEST(nothing_left_in_dev_shm)
{
    shm_node node;
    shm_node_init(&node, MPI_COMM_WORLD);
    node_stage w;
    node_stage_init(&w, &node);
    size_t bytes = 0;
    CK_EXPECT(node_stage_window(&w, &bytes) != NULL, "no window: %s", w.error);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = stage_names_in_dev_shm();
    CK_EXPECT(left == 0, "%d hvdlab-stage-* name(s) left in /dev/shm", left);
    node_stage_free(&w);
    shm_node_free(&node);
    CK_AGREE();
}
END_TEST

/* A segment /dev/shm cannot hold: NULL on every rank, rank 0 says which call failed, no name is
 * left behind, and the next call says NULL again without a collective (ranks 1.. return at
 * once; a collective there would hang on rank 0, which does not call). */
START_TEST(segment_too_large_refused_on_every_rank)
{
    node_stage_set_piece_bytes((size_t)1 << 50);
    shm_node node;
    shm_node_init(&node, MPI_COMM_WORLD);
    node_stage w;
    node_stage_init(&w, &node);
    size_t bytes = 1;
    char *slots = node_stage_window(&w, &bytes);
    CK_EXPECT(slots == NULL && bytes == 0 && w.failed, "rank %d: a window of %zu bytes",
              node.rank, bytes);
    if (node.rank == 0)
        CK_EXPECT(strstr(w.error, "posix_fallocate of the ") && strstr(w.error, "/dev/shm: "),
                  "rank 0's reason: \"%s\"", w.error);
    else
        CK_EXPECT(w.error[0] == 0, "rank %d speaks too: %s", node.rank, w.error);
    if (node.rank != 0)
        CK_EXPECT(node_stage_window(&w, &bytes) == NULL, "rank %d: a window the second time",
                  node.rank);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = stage_names_in_dev_shm();
    CK_EXPECT(left == 0, "%d hvdlab-stage-* name(s) left in /dev/shm", left);
    node_stage_free(&w);
    shm_node_free(&node);
    node_stage_set_piece_bytes(0);
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("node_stage");
    TCase *tc = tcase_create("protocol");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, small_pieces);
    tcase_add_test(tc, default_pieces);
    tcase_add_test(tc, calls_back_to_back);
    tcase_add_test(tc, attached_window_of_separate_mappings);
    tcase_add_test(tc, two_windows_alternating);
    tcase_add_test(tc, nothing_left_in_dev_shm);
    tcase_add_test(tc, segment_too_large_refused_on_every_rank);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
