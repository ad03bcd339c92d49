/* fusion_pack.c — a fused group into its buffer and back out. See fusion_pack.h.
 * Public: fusion_walk, fusion_host_pack, fusion_host_unpack. */
#include "coll/fusion_pack.h"

#include <stdint.h>
#include <string.h>

#include "base/half.h"

void fusion_walk(const fusion_entry *e, size_t len, const fusion_mover *m)
{
    for (size_t i = 0, o = 0; i < len;) {
        if (!e[i].gpu) {
            m->host(e[i].buf, e[i].n, o, m->host_ctx);
            o += e[i].n;
            i++;
            continue;
        }
        size_t j = i + fusion_device_run(e + i, len - i), n = 0;
        for (size_t k = i; k < j; k++)
            n += e[k].n;
        m->device(e[i].buf, n, o, m->device_ctx);
        o += n;
        i = j;
    }
}

void fusion_host_pack(float *t, size_t n, size_t off, void *ctx)
{
    const fusion_host_buffer *b = ctx;
    if (b->fp16)
        for (size_t j = 0; j < n; j++)
            ((uint16_t *)b->buf)[off + j] = half_from_float(t[j]);
    else if (n)
        memcpy((float *)b->buf + off, t, n * sizeof(float));
}

void fusion_host_unpack(float *t, size_t n, size_t off, void *ctx)
{
    const fusion_host_buffer *b = ctx;
    if (b->fp16)
        for (size_t j = 0; j < n; j++)
            t[j] = half_to_float(((const uint16_t *)b->buf)[off + j]);
    else if (n)
        memcpy(t, (const float *)b->buf + off, n * sizeof(float));
}
