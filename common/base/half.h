/* half.h — IEEE 754 binary16 <-> binary32 conversion for fp16 gradient compression.
 *
 * Bit-exact round-to-nearest-even, with subnormals, infinities and NaN, in plain integer
 * arithmetic so the same helpers compile for the CPU and, under nvcc, for the GPU
 * (HVD_HOST_DEVICE); the CPU unit tests therefore cover the GPU math too.
 */
#ifndef HVDLAB_HALF_H
#define HVDLAB_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define HVD_HOST_DEVICE __host__ __device__
#else
#define HVD_HOST_DEVICE
#endif

static inline HVD_HOST_DEVICE uint32_t half_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline HVD_HOST_DEVICE float half_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* float -> half, round to nearest even; overflow gives ±inf, NaN stays NaN (quiet). */
static inline HVD_HOST_DEVICE uint16_t half_from_float(float f)
{
    uint32_t x = half_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x0200u : 0u));
    if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) { /* below the smallest normal half (2^-14): subnormal or zero */
        if (absx < 0x33000000u) /* below half of the smallest subnormal (2^-25): zero */
            return (uint16_t)sign;
        uint32_t mant = (absx & 0x007fffffu) | 0x00800000u;
        int shift = 126 - (int)(absx >> 23); /* 14 .. 24 */
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    /* normal: rebias exponent 127 -> 15, keep 10 mantissa bits, round to nearest even */
    uint32_t h = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right answer */
    return (uint16_t)(sign | h);
}

static inline HVD_HOST_DEVICE float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1fu) /* inf or NaN */
        return half_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return half_bits_f32(sign);
        /* subnormal: value = mant * 2^-24 */
        float v = (float)mant * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return half_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

#endif
