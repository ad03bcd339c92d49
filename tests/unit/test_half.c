/* test_half.c — the fp16 helpers of half.h (shared by the CPU ring and, under nvcc, GPU code):
 * every half value round-trips, and float -> half rounds to nearest even like the compiler's
 * own _Float16 conversion (an independent reference) on all special cases and 3 million samples. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/half.h"
#include "lib/ck_mpi.h"

#ifndef __FLT16_MAX__
#error "this test needs a compiler with _Float16 (GCC >= 12 on x86-64) as its reference"
#endif

static uint16_t ref_from_float(float f)
{
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}

static float ref_to_float(uint16_t u)
{
    _Float16 h;
    memcpy(&h, &u, sizeof h);
    return (float)h;
}

static int is_nan16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu); }

START_TEST(every_half_round_trips)
{
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        float f = half_to_float((uint16_t)h);
        if (is_nan16((uint16_t)h)) {
            ck_assert_msg(isnan(f), "0x%04x is NaN but gave %g", h, f);
            ck_assert_msg(is_nan16(half_from_float(f)), "NaN 0x%04x did not stay NaN", h);
            continue;
        }
        ck_assert_msg(memcmp(&(float){ref_to_float((uint16_t)h)}, &f, sizeof f) == 0,
                      "half 0x%04x -> %a, reference %a", h, f, ref_to_float((uint16_t)h));
        ck_assert_msg(half_from_float(f) == h, "0x%04x -> %a -> 0x%04x", h, f,
                      half_from_float(f));
    }
}
END_TEST

START_TEST(rounding_matches_reference)
{
    /* Midpoints between adjacent halves are where round-to-nearest-even bites. */
    for (uint32_t h = 0; h < 0x7c00u; h++) {
        float lo = half_to_float((uint16_t)h), hi = half_to_float((uint16_t)(h + 1));
        float mids[3] = {lo + (hi - lo) * 0.5f, nextafterf(lo + (hi - lo) * 0.5f, 0),
                         nextafterf(lo + (hi - lo) * 0.5f, INFINITY)};
        for (int k = 0; k < 3; k++)
            for (int sgn = 0; sgn < 2; sgn++) {
                float f = sgn ? -mids[k] : mids[k];
                ck_assert_msg(half_from_float(f) == ref_from_float(f),
                              "%a -> 0x%04x, reference 0x%04x", f, half_from_float(f),
                              ref_from_float(f));
            }
    }
    float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65519.99f, 65520.0f, 1e9f,
                       5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-30f, 6.1035e-5f, FLT_MIN};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        ck_assert_msg(half_from_float(special[i]) == ref_from_float(special[i]),
                      "%a -> 0x%04x, reference 0x%04x", special[i], half_from_float(special[i]),
                      ref_from_float(special[i]));
}
END_TEST

START_TEST(random_floats_match_reference)
{
    uint32_t x = 2463534242u;
    for (int i = 0; i < 3000000; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5; /* xorshift32 over all bit patterns */
        float f;
        memcpy(&f, &x, sizeof f);
        uint16_t got = half_from_float(f), want = ref_from_float(f);
        if (isnan(f))
            ck_assert_msg(is_nan16(got), "NaN %08x -> 0x%04x", x, got);
        else
            ck_assert_msg(got == want, "%a (%08x) -> 0x%04x, reference 0x%04x", f, x, got, want);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("half");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_half_round_trips);
    tcase_add_test(tc, rounding_matches_reference);
    tcase_add_test(tc, random_floats_match_reference);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
