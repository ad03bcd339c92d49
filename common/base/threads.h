/* threads.h — how many threads the CPU layers use (OpenMP loops and oneDNN).
 *
 * One number for the whole process: compute_set_threads(n) when the program says so, otherwise
 * OpenBLAS's thread count, which hvd_pin_device sets to the rank's share of the cores. So a
 * pinned rank's elementwise loops, oneDNN convolutions and BLAS calls all use the same cores.
 * Every OpenMP loop in the layers asks compute_threads() and splits its work into fixed pieces,
 * so results do not depend on the thread count (see DESIGN.md §3, "deterministic").
 *
 * Oversubscription: OpenMP threads (libgomp, and oneDNN inside it) spin at their barriers, so
 * ranks that are not pinned and each run all cores' worth of threads slow each other down a lot
 * (2 ranks x 2 threads on 2 cores: ~4x slower per rank than 1 thread each; measured in
 * bench/train_speed's child). hvd_pin_device gives each rank its share and this follows it.
 * OMP_WAIT_POLICY=passive in the environment softens it (and costs ~13% when pinned).
 *
 * Public: compute_set_threads, compute_threads, compute_zero.
 */
#ifndef HVDLAB_THREADS_H
#define HVDLAB_THREADS_H

#include <stddef.h>

/* n >= 1: that many threads from now on (also sets OpenBLAS's count). n <= 0: follow OpenBLAS. */
void compute_set_threads(int n);
/* >= 1 */
int compute_threads(void);

/* p[0..n) = 0, split over the threads (a memset of a large activation is bandwidth-bound, and
 * two cores pull more bandwidth than one). */
void compute_zero(float *p /* (n) */, size_t n);

#endif
