/* memory.h — buffers for tensors that travel: 2 MiB aligned, backed by transparent huge pages
 * where the kernel allows (MADV_HUGEPAGE), zeroed and already faulted in.
 *
 * Why: the allreduce moves data between processes with the kernel's cross-memory copy, which
 * walks the page tables of both buffers on every call; with huge pages that walk is 512 times
 * shorter, and a pre-faulted buffer never page-faults in the middle of a collective. The
 * model's flat parameter and gradient buffers, the fusion buffer and the ring's scratch use it.
 */
#ifndef HVDLAB_MEMORY_H
#define HVDLAB_MEMORY_H

#include <stddef.h>

/* NULL when out of memory. Release with memory_free. */
void *memory_alloc(size_t bytes);
void memory_free(void *p);

/* Whether the kernel backs memory_alloc's buffers with huge pages (transparent huge pages
 * "always" or "madvise"): the same answer for every process of a host. */
int memory_huge_pages(void);
/* Whether [p, p + bytes) lies in one buffer of memory_alloc's that the kernel backs with huge
 * pages (transparent huge pages on, "always" or "madvise"): the allreduce picks its one-host
 * algorithm by it (coll/allreduce.c). */
int memory_on_huge_pages(const void *p, size_t bytes);

#endif
