/* fingerprint.c — a cheap content hash of loaded data, so ranks can tell whether they read the
 * same files without sending them. See dataset.h.
 * Public: dataset_fingerprint.
 */
#include "data/dataset.h"

#include <string.h>

/* Four independent multiply-xor lanes over 8-byte words: one multiply per 8 bytes and no chain
 * between lanes, so the 47 MB of training images take a few milliseconds. Not cryptographic:
 * it only has to tell two different files apart. */
#define FP_PRIME 0x9e3779b97f4a7c15ull

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

uint64_t dataset_fingerprint(const uint8_t *bytes, size_t n)
{
    uint64_t lane[4] = {1, 2, 3, 4};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, bytes + i + 8 * (size_t)k, sizeof w);
            lane[k] = (lane[k] ^ w) * FP_PRIME;
        }
    uint64_t h = mix((uint64_t)n);
    for (int k = 0; k < 4; k++)
        h = mix(h ^ lane[k]);
    for (; i < n; i++)
        h = (h ^ bytes[i]) * FP_PRIME;
    return mix(h);
}
