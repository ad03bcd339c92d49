/* ring.h — bandwidth-optimal ring allreduce over MPI point-to-point.
 *
 * Reduce-scatter then allgather around the ring: each rank sends and receives 2(N-1)/N of the
 * buffer. Incoming data is received in small segments into a reusable scratch buffer (so it
 * stays in cache and never page-faults) and added in place, overlapping the next receive.
 * Handles any length, including 0 and lengths not divisible by the number of ranks. Buffers of
 * over 4 KiB up to 128 KiB on a power-of-two number of ranks take recursive doubling (ring.c).
 */
#ifndef HVDLAB_RING_H
#define HVDLAB_RING_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    void *scratch; /* receive slots for the reduce-scatter, pre-touched */
    size_t scratch_bytes;
} ring_workspace;

void ring_workspace_free(ring_workspace *ws);

/* In place. scale multiplies the reduced result (1 for SUM, 1/N for AVERAGE). */
void ring_allreduce_f32(MPI_Comm comm, float *buf, size_t n, float scale, ring_workspace *ws);
/* Same over IEEE half values; sums are formed in float and rounded back to half. */
void ring_allreduce_f16(MPI_Comm comm, uint16_t *buf, size_t n, float scale, ring_workspace *ws);

/* Benchmarks only: reduce-scatter segment and per-rank block sizes in bytes (0 = default). */
void ring_set_tuning(size_t segment_bytes, size_t block_bytes);

/* Chunk c of n elements split over nchunks: [ring_chunk_begin(c), ring_chunk_begin(c+1)). */
size_t ring_chunk_begin(size_t n, int nchunks, int c);

/* The ring's reduction kernels, shared with the shared-memory paths (shm.c) so that every path
 * rounds alike: dst[i] = (dst[i] + src[i]) * scale, and buf[i] *= scale. The f16 ones work on
 * IEEE half values, adding in float and rounding back to half after every addition. */
void ring_add_f32(void *dst, const void *src, size_t n, float scale);
void ring_add_f16(void *dst, const void *src, size_t n, float scale);
void ring_scale_f32(void *buf, size_t n, float scale);
void ring_scale_f16(void *buf, size_t n, float scale);

#endif
