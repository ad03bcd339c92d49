/* gpu_marks.cu — CUDA events as marks on the layers' stream. See gpu_marks.h.
 * Public: gpu_marks_mark, gpu_marks_seconds, gpu_marks_release, gpu_marks_free. */
#include <stdlib.h>

#include "base/cuda_check.h"
#include "nn/gpu_context.h"
#include "nn/gpu_marks.h"

static cudaEvent_t *events; /* the pool: events[0 .. made) exist, [0 .. used) are marks */
static int made, used, cap;

extern "C" int gpu_marks_mark(void)
{
    cudaStream_t st = gpu_context_stream();
    if (used == made) {
        if (made == cap) {
            const int ncap = cap ? 2 * cap : 256;
            cudaEvent_t *p = (cudaEvent_t *)realloc(events, (size_t)ncap * sizeof *p);
            if (!p)
                fatal_error("gpu_marks: out of memory for %d events", ncap);
            events = p;
            cap = ncap;
        }
        gpu_context_at_release(gpu_marks_free);
        CUDA_CHECK(cudaEventCreate(&events[made])); /* with timing, unlike the ordering events */
        made++;
    }
    CUDA_CHECK(cudaEventRecord(events[used], st));
    return used++;
}

extern "C" double gpu_marks_seconds(int a, int b)
{
    if (a < 0 || b < 0 || a >= used || b >= used)
        fatal_error("gpu_marks: marks %d and %d, but only %d made since the last release", a, b,
                    used);
    float ms = 0.0f;
    CUDA_CHECK(cudaEventSynchronize(events[b]));
    CUDA_CHECK(cudaEventElapsedTime(&ms, events[a], events[b]));
    return ms * 1e-3;
}

extern "C" void gpu_marks_release(void) { used = 0; }

extern "C" void gpu_marks_free(void)
{
    for (int i = 0; i < made; i++)
        CUDA_CHECK(cudaEventDestroy(events[i]));
    free(events);
    events = NULL;
    made = used = cap = 0;
}
