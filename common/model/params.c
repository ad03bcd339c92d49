/* params.c — helpers over a flat parameter set. See params.h.
 * Public: params_checksum, params_find, params_add_l2, params_checksum_at, params_to_host,
 *         params_digest_at, params_from_host, params_buffer_alloc, params_buffer_free,
 *         params_device_stream, params_device_wait. */
#include "model/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "base/memory.h"
#include "nn/gpu_context.h" /* declares nothing in a CPU build */

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
#ifdef HVDLAB_CUDA
    if (ps->device)
        return params_add_l2_cuda(ps, wd);
#endif
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

/* ---- buffers that may live on the GPU ----------------------------------------------------- */

static void need_cuda(int device, const char *fn)
{
#ifndef HVDLAB_CUDA
    if (device)
        fatal_error("%s: a device buffer in a CPU build", fn);
#else
    (void)device;
    (void)fn;
#endif
}

/* buf readable on the host: buf itself, or (device) a host copy in *copy, which the caller
 * frees (free(NULL) when there was none). fn names the caller in the out-of-memory error. */
static const float *host_view(const float *buf, size_t n, int device, float **copy,
                              const char *fn)
{
    *copy = NULL;
    if (!device)
        return buf;
    *copy = malloc((n ? n : 1) * sizeof **copy);
    if (!*copy)
        fatal_error("%s: out of memory for %zu floats", fn, n);
    params_to_host(*copy, buf, n, device);
    return *copy;
}

uint64_t params_checksum_at(const float *buf, size_t n, int device)
{
    float *copy;
    const uint64_t sum =
        params_checksum(host_view(buf, n, device, &copy, "params_checksum_at"), n);
    free(copy);
    return sum;
}

void params_digest_at(const float *buf, size_t n, int device, double *dot, double *norm)
{
    float *copy;
    const float *h = host_view(buf, n, device, &copy, "params_digest_at");
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)i * 2654435761u; /* Knuth's multiplicative hash */
        d += ((double)(k >> 16) / 32768.0 - 1.0) * (double)h[i];
        s += (double)h[i] * (double)h[i];
    }
    free(copy);
    *dot = d;
    *norm = sqrt(s);
}

void params_to_host(float *dst, const float *src, size_t n, int device)
{
    need_cuda(device, "params_to_host");
#ifdef HVDLAB_CUDA
    if (device) {
        gpu_context_download(dst, src, n * sizeof *dst);
        return;
    }
#endif
    if (dst != src)
        memcpy(dst, src, n * sizeof *dst);
}

void params_from_host(float *dst, const float *src, size_t n, int device)
{
    need_cuda(device, "params_from_host");
#ifdef HVDLAB_CUDA
    if (device) {
        gpu_context_upload(dst, src, n * sizeof *dst);
        return;
    }
#endif
    if (dst != src)
        memcpy(dst, src, n * sizeof *dst);
}

float *params_buffer_alloc(size_t n, int device)
{
    need_cuda(device, "params_buffer_alloc");
    const size_t bytes = (n ? n : 1) * sizeof(float);
#ifdef HVDLAB_CUDA
    if (device) {
        float *p = params_cuda_try_alloc(bytes);
        if (p)
            gpu_context_zero(p, bytes);
        return p;
    }
#endif
    return memory_alloc(bytes); /* zeroed */
}

void params_buffer_free(float *p, int device)
{
#ifdef HVDLAB_CUDA
    if (device) {
        gpu_context_free(p);
        return;
    }
#endif
    (void)device;
    memory_free(p);
}

void *params_device_stream(void)
{
#ifdef HVDLAB_CUDA
    return params_cuda_stream();
#else
    return NULL;
#endif
}

void params_device_wait(void)
{
#ifdef HVDLAB_CUDA
    gpu_context_sync();
#endif
}
