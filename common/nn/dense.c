/* dense.c — fully connected layer, CPU (OpenBLAS). See dense.h.
 * Public: dense_forward, dense_backward. */
#include "nn/dense.h"

#include <cblas.h>
#include <stddef.h>

void dense_forward(float *out, const float *in, const float *w, const float *b,
                   const dense_dims *d)
{
    for (int i = 0; i < d->n; i++)
        for (int o = 0; o < d->out; o++)
            out[(size_t)i * d->out + o] = b ? b[o] : 0.0f;
    /* out (N, O) += in (N, I) · Wᵀ (I, O) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->n, d->out, d->in, 1.0f, in, d->in, w,
                d->in, 1.0f, out, d->out);
}

void dense_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                    const float *w, const dense_dims *d)
{
    if (db)
        for (int i = 0; i < d->n; i++)
            for (int o = 0; o < d->out; o++)
                db[o] += dout[(size_t)i * d->out + o];
    if (dw) /* dW (O, I) += doutᵀ (O, N) · in (N, I) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d->out, d->in, d->n, 1.0f, dout,
                    d->out, in, d->in, 1.0f, dw, d->in);
    if (din) /* din (N, I) += dout (N, O) · W (O, I) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->n, d->in, d->out, 1.0f, dout,
                    d->out, w, d->in, 1.0f, din, d->in);
}
