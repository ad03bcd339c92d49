/* params.c — helpers over a flat parameter set. See params.h.
 * Public: params_checksum, params_find, params_add_l2. */
#include "model/params.h"

#include <string.h>

uint64_t params_checksum(const float *buf, size_t n)
{
    const unsigned char *b = (const unsigned char *)buf;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis */
    for (size_t i = 0; i < n * sizeof *buf; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull; /* FNV 64 prime */
    }
    return h;
}

const param_view *params_find(const param_view *views, int nviews, const char *name)
{
    for (int i = 0; i < nviews; i++)
        if (strcmp(views[i].name, name) == 0)
            return &views[i];
    return NULL;
}

double params_add_l2(param_set *ps, float wd)
{
    if (wd == 0.0f)
        return 0.0;
    double sum = 0.0;
    for (int v = 0; v < ps->nviews; v++) {
        const param_view *pv = &ps->views[v];
        if (!pv->decay)
            continue;
        const float *w = ps->params + pv->offset;
        float *g = ps->grads + pv->offset;
        double s = 0.0;
        for (size_t i = 0; i < pv->count; i++) {
            s += (double)w[i] * w[i];
            g[i] += 2.0f * wd * w[i];
        }
        sum += s;
    }
    return wd * sum;
}
