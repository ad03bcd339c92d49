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

/* NULL when out of memory. Release with memory_free. A buffer larger than the memory available
 * (memory_available) is refused at once: faulting it in would wake the out-of-memory killer,
 * which ends the process without a word, instead of returning NULL. */
void *memory_alloc(size_t bytes);

/* Bytes this process could still take: the kernel's MemAvailable (/proc/meminfo), or less where
 * the process's cgroup (v2) has a lower limit left (memory.max - memory.current); 0 if neither
 * can be read (then nothing is refused). */
size_t memory_available(void);
void memory_free(void *p);

/* Whether the kernel backs memory_alloc's buffers with huge pages (transparent huge pages
 * "always" or "madvise"): the same answer for every process of a host. */
int memory_huge_pages(void);
/* Whether [p, p + bytes) lies in one buffer of memory_alloc's that the kernel backs with huge
 * pages (transparent huge pages on, "always" or "madvise"): the allreduce picks its one-host
 * algorithm by it (coll/allreduce.c). */
int memory_on_huge_pages(const void *p, size_t bytes);

#endif
