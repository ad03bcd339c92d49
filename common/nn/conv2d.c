/* conv2d.c — the one dispatch point of the 2-D convolution: picks the backend (conv2d.h) and
 * hands each call to it: conv2d_gemm.c (im2col + OpenBLAS, the reference) or conv2d_dnnl.c
 * (oneDNN, when the build found it).
 *
 * Public: conv2d_work_floats, conv2d_forward, conv2d_backward, conv2d_backward_set,
 *         conv2d_set_backend, conv2d_backend (conv2d.h).
 */
#include "nn/conv2d.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif

enum { BACKEND_UNSET = -1, BACKEND_GEMM = 0, BACKEND_DNNL = 1 };
static int backend = BACKEND_UNSET;

static int backend_of(const char *name)
{
    if (strcmp(name, "gemm") == 0)
        return BACKEND_GEMM;
#ifdef HVDLAB_DNNL
    if (strcmp(name, "dnnl") == 0)
        return BACKEND_DNNL;
#endif
    return BACKEND_UNSET;
}

/* First use: HVDLAB_CONV if set (a name this build lacks is reported once, by rank 0: the value
 * is the launcher's on every rank; then ignored), else the fastest backend built in. */
static int current_backend(void)
{
    if (backend != BACKEND_UNSET)
        return backend;
#ifdef HVDLAB_DNNL
    backend = BACKEND_DNNL;
#else
    backend = BACKEND_GEMM;
#endif
    const char *env = getenv("HVDLAB_CONV");
    if (env && *env) {
        const int b = backend_of(env);
        if (b == BACKEND_UNSET)
            fatal_warn(FATAL_ONCE_PER_JOB, "HVDLAB_CONV=%s is not a convolution backend of this "
                       "build (gemm%s); using %s", env,
#ifdef HVDLAB_DNNL
                       ", dnnl",
#else
                       "",
#endif
                       backend == BACKEND_DNNL ? "dnnl" : "gemm");
        else
            backend = b;
    }
    return backend;
}

int conv2d_set_backend(const char *name)
{
    const int b = name ? backend_of(name) : BACKEND_UNSET;
    if (b == BACKEND_UNSET)
        return -1;
    backend = b;
    return 0;
}

const char *conv2d_backend(void) { return current_backend() == BACKEND_DNNL ? "dnnl" : "gemm"; }

size_t conv2d_work_floats(const conv2d_dims *d)
{
    size_t n = conv2d_gemm_work_floats(d);
#ifdef HVDLAB_DNNL
    const size_t nd = conv2d_dnnl_work_floats(d);
    if (nd > n)
        n = nd;
#endif
    return n;
}

/* The nChw16c activations of conv2d_dims.blocked exist only on the oneDNN path. */
static void check_layout(const conv2d_dims *d)
{
    if (d->blocked && current_backend() != BACKEND_DNNL)
        fatal_error("conv2d: blocked (nChw16c) activations need the dnnl backend, not %s "
                    "(was the backend changed after the model was built?)", conv2d_backend());
}

void conv2d_forward(float *out, const float *in, const float *w, const float *b,
                    const conv2d_dims *d, float *work)
{
    check_layout(d);
#ifdef HVDLAB_DNNL
    if (current_backend() == BACKEND_DNNL) {
        conv2d_dnnl_forward(out, in, w, b, d, work);
        return;
    }
#endif
    conv2d_gemm_forward(out, in, w, b, d, work);
}

void conv2d_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                     const float *w, const conv2d_dims *d, float *work)
{
    check_layout(d);
#ifdef HVDLAB_DNNL
    if (current_backend() == BACKEND_DNNL) {
        conv2d_dnnl_backward(din, dw, db, dout, in, w, d, work);
        return;
    }
#endif
    conv2d_gemm_backward(din, dw, db, dout, in, w, d, work);
}

void conv2d_backward_set(float *din, float *dw, float *db, const float *dout, const float *in,
                         const float *w, const conv2d_dims *d, float *work)
{
    check_layout(d);
#ifdef HVDLAB_DNNL
    if (current_backend() == BACKEND_DNNL) {
        conv2d_dnnl_backward_set(din, dw, db, dout, in, w, d, work);
        return;
    }
#endif
    if (din)
        memset(din, 0, (size_t)d->n * d->cin * d->h * d->w * sizeof *din);
    conv2d_gemm_backward(din, dw, db, dout, in, w, d, work);
}
