/* gpu_marks.h — marks on the layers' stream (gpu_context.h), the clock of layer_prof.h's GPU
 * profile: a mark is a CUDA event recorded where the stream is when the mark is made, and the
 * seconds between two marks are the GPU's time from one to the other (its kernels and any gap
 * between them), without the host waiting for the stream in between.
 *
 * Marks come from a pool of events that grows as needed (cudaEventCreate, so the first profiled
 * steps make them and later ones reuse them); gpu_marks_release makes every mark reusable, and
 * the pool is freed with the context (gpu_context_release).
 *
 *   static const lprof_clock clock = {gpu_marks_mark, gpu_marks_seconds, gpu_marks_release};
 *   lprof_set_clock(&clock);
 *
 * Public: gpu_marks_mark, gpu_marks_seconds, gpu_marks_release, gpu_marks_free. CUDA builds only.
 */
#ifndef HVDLAB_GPU_MARKS_H
#define HVDLAB_GPU_MARKS_H

#ifdef HVDLAB_CUDA

#ifdef __cplusplus
extern "C" {
#endif

/* Records the next mark on the stream; its number. */
int gpu_marks_mark(void);
/* Seconds from mark a to mark b (waits until the GPU has passed b). */
double gpu_marks_seconds(int a, int b);
/* Every mark may be reused (the events stay). */
void gpu_marks_release(void);
/* Destroys the events (gpu_context_release's hook). */
void gpu_marks_free(void);

#ifdef __cplusplus
}
#endif

#endif /* HVDLAB_CUDA */
#endif
