/* test_bn_walk.c — the indexing of the GPU batch norm (nn/bn_walk.h, which bn_cuda.cu's kernels
 * call), run on the CPU as the kernels run it: for each channel, each part and each of the
 * block's BN_WALK_STEP threads, walk j = j0 + thread, + BN_WALK_STEP, … while j < j1. Every
 * element of every channel must be reached exactly once and only by its own channel, for the
 * WRNs' shapes at batch 8 to 512, awkward ones (HW above and below the step, N·HW not a multiple
 * of P), the part count bn_split_parts picks and a forced uneven one; and the one-block walk
 * (start = thread, while idx < end) must do the same. The kernels with HVDLAB_BN_BATCH=1 take a
 * thread's offsets a few at a time (bn_walk_take): taken 1, 3 or 4 at a time they must be the
 * same offsets in the same order, so every sum is the same. */
#include <stdlib.h>

#include "lib/ck_mpi.h"
#include "nn/bn_walk.h"

/* Counts a visit of offset idx by channel c; 1 when it lies outside the tensor or the channel. */
static int mark(unsigned char *seen, size_t total, size_t CHW, int HW, int c, size_t idx)
{
    if (idx >= total || (idx % CHW) / (size_t)HW != (size_t)c)
        return 1;
    seen[idx]++;
    return 0;
}

/* The offsets not visited exactly once; frees seen. */
static int tally(unsigned char *seen, size_t total)
{
    int bad = 0;
    for (size_t i = 0; i < total; i++)
        bad += seen[i] != 1;
    free(seen);
    return bad;
}

/* The split kernels: part p of each channel, thread t from j = j0 + t while j < j1, its offsets
 * taken bt at a time (bn_walk_take) and compared with bn_walk_next's, one by one. 0 when every
 * element was visited once, by its own channel, in the order of bn_walk_next. */
static int walk_all(int N, int C, int HW, int P, int bt)
{
    const size_t CHW = (size_t)C * HW, total = (size_t)N * CHW, M = (size_t)N * HW;
    unsigned char *seen = calloc(total, 1);
    ck_assert_ptr_nonnull(seen);
    int bad = 0;
    for (int c = 0; c < C; c++)
        for (int p = 0; p < P; p++) {
            size_t j0, j1;
            bn_split_range(M, P, p, &j0, &j1);
            for (int t = 0; t < BN_WALK_STEP; t++) {
                size_t j = j0 + (size_t)t, jone = j, idx[BN_WALK_BATCH_MAX];
                bn_walk w, one;
                bn_walk_init(&w, c, j, (size_t)HW, CHW, (size_t)N);
                bn_walk_init(&one, c, j, (size_t)HW, CHW, (size_t)N);
                for (int k; (k = bn_walk_take(&w, &j, j1, idx, bt)) > 0;) {
                    bad += k > bt || (k < bt && j < j1); /* a short batch only at the end */
                    for (int u = 0; u < k; u++, bn_walk_next(&one), jone += BN_WALK_STEP) {
                        bad += jone >= j1 || idx[u] != one.idx;
                        bad += mark(seen, total, CHW, HW, c, idx[u]);
                    }
                }
                bad += jone < j1; /* the plain walk had more */
            }
        }
    return bad + tally(seen, total);
}

/* The one-block kernels: thread t from j = t while the offset is inside the tensor. */
static int walk_one_block(int N, int C, int HW)
{
    const size_t CHW = (size_t)C * HW, total = (size_t)N * CHW;
    unsigned char *seen = calloc(total, 1);
    ck_assert_ptr_nonnull(seen);
    int bad = 0;
    for (int c = 0; c < C; c++)
        for (int t = 0; t < BN_WALK_STEP; t++) {
            bn_walk w;
            for (bn_walk_init(&w, c, (size_t)t, (size_t)HW, CHW, (size_t)N); w.idx < w.end;
                 bn_walk_next(&w))
                bad += mark(seen, total, CHW, HW, c, w.idx);
        }
    return bad + tally(seen, total);
}

static const int shapes[][3] = {
    {8, 16, 784},  {64, 16, 784}, {32, 160, 196}, {64, 16, 196}, {512, 64, 784}, {512, 16, 784},
    {128, 640, 49}, {512, 640, 49}, {512, 256, 49}, {3, 5, 7},    {1, 1, 1},     {7, 3, 1000},
};

START_TEST(every_element_once)
{
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int N = shapes[s][0], C = shapes[s][1], HW = shapes[s][2];
        const int P = bn_split_parts((size_t)N * HW, C);
        CK_EXPECT(P >= 1 && P <= BN_SPLIT_MAX_PARTS && (P == 1 || P * C <= BN_SPLIT_BLOCKS),
                  "N=%d C=%d HW=%d: %d parts", N, C, HW, P);
        for (int bt = 1; bt <= 4; bt += bt < 3 ? 2 : 1) /* 1, 3, 4 at a time */
            CK_EXPECT(walk_all(N, C, HW, P, bt) == 0, "N=%d C=%d HW=%d in %d parts, %d at a time: "
                      "elements missed, visited twice or out of order", N, C, HW, P, bt);
        CK_EXPECT(walk_all(N, C, HW, 7, 4) == 0, "N=%d C=%d HW=%d in 7 parts", N, C, HW);
        CK_EXPECT(walk_one_block(N, C, HW) == 0, "N=%d C=%d HW=%d, one block", N, C, HW);
    }
    CK_AGREE();
}
END_TEST

/* Splitting pays only where a channel is large: parts of at least BN_SPLIT_PART_MIN elements. */
START_TEST(parts_follow_the_shape)
{
    CK_EXPECT(bn_split_parts(8 * 196, 64) == 1, "wrn-16-4 g2 at batch 8: want 1 part");
    CK_EXPECT(bn_split_parts((size_t)512 * 784, 64) == 32, "batch 512, 64 channels of 28x28: "
              "want 32 parts (2048 blocks), got %d", bn_split_parts((size_t)512 * 784, 64));
    CK_EXPECT(bn_split_parts((size_t)512 * 784, 16) == 64, "16 channels: want the 64-part cap");
    CK_EXPECT(bn_split_parts((size_t)512 * 49, 4096) == 1, "more channels than blocks: want 1");
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("bn_walk");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_element_once);
    tcase_add_test(tc, parts_follow_the_shape);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
