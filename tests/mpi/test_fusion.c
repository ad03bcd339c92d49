/* test_fusion.c — tensor fusion under mpirun -n 1..4: values, grouping, zero-copy for tensors
 * that sit back to back in one of the kit's buffers (memory_alloc, as the model's), and a
 * caller's plain buffers on some ranks beside the kit's on others. */
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "coll/fusion.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"

#define NT 10

static float val(int t, size_t i, int rank) { return (float)(t * 100 + (int)(i % 251)) + 0.5f * (float)rank; }

static float want(int t, size_t i, int size, hvd_op op)
{
    float s = (float)size * (float)(t * 100 + (int)(i % 251)) + 0.25f * (float)(size * (size - 1));
    return op == HVD_AVERAGE ? s / (float)size : s;
}

static const size_t sizes[NT] = {1, 7, 1000, 0, 33333, 5, 4096, 100001, 2, 777};

typedef struct {
    float *t[NT];
    float *flat; /* when contiguous: all tensors are views into this */
    int plain;   /* malloc's buffers, not memory_alloc's */
} tensors;

static float *alloc(size_t n, int plain)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    return plain ? malloc(bytes) : memory_alloc(bytes);
}

static tensors make(int contiguous, int rank, int plain)
{
    tensors ts = {.flat = NULL, .plain = plain};
    size_t total = 0;
    for (int t = 0; t < NT; t++)
        total += sizes[t];
    if (contiguous)
        ts.flat = alloc(total, plain);
    for (int t = 0, o = 0; t < NT; o += (int)sizes[t], t++) {
        ts.t[t] = contiguous ? ts.flat + o : alloc(sizes[t], plain);
        for (size_t i = 0; i < sizes[t]; i++)
            ts.t[t][i] = val(t, i, rank);
    }
    return ts;
}

static void release(tensors *ts)
{
    void (*del)(void *) = ts->plain ? free : memory_free;
    if (ts->flat)
        del(ts->flat);
    else
        for (int t = 0; t < NT; t++)
            del(ts->t[t]);
}

/* Queue all NT tensors (ops alternate when mixed), synchronize, check every value. plain: in
 * malloc's buffers on this rank. */
static void run_on(int contiguous, int mixed_ops, size_t threshold, int plain, size_t *calls,
                   size_t *copied)
{
    int rank = hvd_rank(), size = hvd_size();
    hvd_set_fusion_threshold(threshold);
    tensors ts = make(contiguous, rank, plain);
    size_t c0, t0, b0, c1, t1, b1;
    hvd_fusion_stats(&c0, &t0, &b0);
    char name[32];
    for (int t = 0; t < NT; t++) {
        snprintf(name, sizeof name, "grad/%d", t);
        hvd_op op = mixed_ops && (t % 3 == 2) ? HVD_SUM : HVD_AVERAGE;
        hvd_allreduce_async(ts.t[t], sizes[t], op, name, HVD_COMPRESS_NONE);
    }
    hvd_synchronize();
    hvd_fusion_stats(&c1, &t1, &b1);
    size_t bad = 0;
    for (int t = 0; t < NT; t++) {
        hvd_op op = mixed_ops && (t % 3 == 2) ? HVD_SUM : HVD_AVERAGE;
        for (size_t i = 0; i < sizes[t]; i++) {
            float w = want(t, i, size, op), d = ts.t[t][i] - w;
            bad += d > 1e-4f * w || d < -1e-4f * w;
        }
    }
    CK_EXPECT(bad == 0, "contiguous=%d mixed=%d threshold=%zu: %zu values wrong", contiguous,
              mixed_ops, threshold, bad);
    CK_EXPECT(t1 - t0 == NT, "%zu tensors reduced, %d queued", t1 - t0, NT);
    *calls = c1 - c0;
    *copied = b1 - b0;
    release(&ts);
    hvd_set_fusion_threshold(HVD_DEFAULT_FUSION_THRESHOLD);
}

static void run(int contiguous, int mixed_ops, size_t threshold, size_t *calls, size_t *copied)
{
    run_on(contiguous, mixed_ops, threshold, 0, calls, copied);
}

static size_t total_bytes(void)
{
    size_t b = 0;
    for (int t = 0; t < NT; t++)
        b += sizes[t] * sizeof(float);
    return b;
}

START_TEST(contiguous_tensors_fuse_without_copy)
{
    size_t calls, copied;
    run(1, 0, HVD_DEFAULT_FUSION_THRESHOLD, &calls, &copied);
    CK_EXPECT(calls == 1, "one fused ring pass expected, ran %zu", calls);
    CK_EXPECT(copied == 0, "contiguous tensors copied %zu bytes", copied);
    CK_AGREE();
}
END_TEST

START_TEST(scattered_tensors_go_through_fusion_buffer)
{
    size_t calls, copied;
    run(0, 0, HVD_DEFAULT_FUSION_THRESHOLD, &calls, &copied);
    CK_EXPECT(calls == 1, "one fused ring pass expected, ran %zu", calls);
    CK_EXPECT(copied == 2 * total_bytes(), "copied %zu bytes, expected in+out %zu", copied,
              2 * total_bytes());
    CK_AGREE();
}
END_TEST

START_TEST(fusion_off_reduces_each_tensor)
{
    size_t calls, copied;
    run(0, 0, 0, &calls, &copied);
    CK_EXPECT(calls == NT, "threshold 0: %zu ring passes for %d tensors", calls, NT);
    CK_EXPECT(copied == 0, "threshold 0 copied %zu bytes", copied);
    CK_AGREE();
}
END_TEST

START_TEST(small_threshold_splits_groups)
{
    /* 64 KiB = 16384 floats: a group ends where the next tensor would overflow it; a tensor
     * larger than the threshold goes alone. */
    size_t threshold = 64 << 10, calls, copied;
    fusion_entry e[NT];
    for (int t = 0; t < NT; t++) {
        e[t].n = sizes[t];
        e[t].op = HVD_AVERAGE;
        e[t].fp16 = 0;
    }
    size_t groups = 0;
    for (size_t i = 0; i < NT; groups++)
        i += fusion_group_len(e + i, NT - i, threshold);
    /* By hand: {1,7,1000,0} {33333} {5,4096} {100001} {2,777} */
    CK_EXPECT(groups == 5, "planned %zu groups, 5 by hand", groups);
    run(1, 0, threshold, &calls, &copied);
    CK_EXPECT(calls == groups, "ran %zu ring passes, planned %zu", calls, groups);
    CK_AGREE();
}
END_TEST

START_TEST(mixed_ops_do_not_fuse_across)
{
    size_t calls, copied;
    run(1, 1, HVD_DEFAULT_FUSION_THRESHOLD, &calls, &copied);
    /* ops by index: A A S A A S A A S A -> 7 runs of equal op */
    CK_EXPECT(calls == 7, "mixed ops: %zu ring passes, 7 expected", calls);
    CK_AGREE();
}
END_TEST

/* The one-host path depends on the buffer's kind (allreduce.h): with the kit's buffers on even
 * ranks and a caller's plain ones on odd ranks, the ranks must still take one path (before,
 * rank 0 read the others' buffers by single copy while rank 1 used the shared window: rank 1
 * ended with wrong values, rank 0 waited for ever). They agree on the window; nothing is copied
 * through the fusion buffer on either side. */
START_TEST(plain_buffers_beside_the_kits_take_one_path)
{
    int plain = hvd_rank() % 2;
    for (int contiguous = 0; contiguous <= 1; contiguous++) {
        size_t calls, copied;
        run_on(contiguous, 0, contiguous ? HVD_DEFAULT_FUSION_THRESHOLD : 0, plain, &calls,
               &copied); /* checks the values */
        CK_EXPECT(copied == 0, "contiguous=%d, %s buffers: copied %zu bytes", contiguous,
                  plain ? "plain" : "the kit's", copied);
    }
    CK_AGREE();
}
END_TEST

START_TEST(shutdown_flushes_nothing_lost_order_kept)
{
    /* A queued allreduce followed by a broadcast: the broadcast must see the reduced values. */
    int rank = hvd_rank(), size = hvd_size();
    float a[3] = {1.0f + (float)rank, 2.0f, 3.0f};
    hvd_allreduce_async(a, 3, HVD_SUM, "queued", HVD_COMPRESS_NONE);
    hvd_broadcast(a, 3, size - 1, "after");
    CK_EXPECT(a[0] == (float)(size + size * (size - 1) / 2) && a[1] == 2.0f * (float)size,
              "broadcast ran before the queued allreduce: %g %g", a[0], a[1]);
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("fusion");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, contiguous_tensors_fuse_without_copy);
    tcase_add_test(tc, scattered_tensors_go_through_fusion_buffer);
    tcase_add_test(tc, fusion_off_reduces_each_tensor);
    tcase_add_test(tc, small_threshold_splits_groups);
    tcase_add_test(tc, mixed_ops_do_not_fuse_across);
    tcase_add_test(tc, plain_buffers_beside_the_kits_take_one_path);
    tcase_add_test(tc, shutdown_flushes_nothing_lost_order_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
