/* cma.h — allreduce among the ranks of one host with one kernel copy per byte moved between
 * processes (Linux cross-memory attach: process_vm_readv / process_vm_writev), no staging
 * through a shared window.
 *
 * Each call, every rank posts its buffer's address on the host window's board (shm.h) and meets
 * the others at the window's barrier. Rank r owns slice r of the buffer (ring_chunk_begin). Block
 * by block (256 KiB or 1 MiB, cma.c says when: a block stays in cache) it reads the other ranks'
 * values of its slice straight out of their buffers, adds them in local-rank order (rank 0's
 * values first, then 1, 2, ...: the ring's kernels; the last addition applies scale) into its
 * own buffer, and writes the block's sum straight into every other rank's buffer while it is
 * still in cache. A second barrier, and every rank holds the whole sum. Only rank r touches slice r of any buffer, so nothing else
 * needs ordering; the second barrier also keeps every rank in the call until nobody reads or
 * writes its buffer any more.
 *
 * A rank moves (L-1)/L of the buffer in and (L-1)/L out with the kernel's copy and adds (L-1)/L
 * of it: the shm path moves the same bytes through the window with a copy in and a copy out each.
 * Two barriers per call, whatever the size, and 2(L-1) system calls per block (~1 us each here).
 * The kernel pins the peer's pages for each copy: cheap on the kit's 2 MiB pages
 * (base/memory.h), costly on 4 KiB ones, so allreduce.c takes this path for memory_alloc
 * buffers only. Every element is summed on one rank only, in local-rank order, so every rank
 * ends with the same bits, the shm path's (and with 2 ranks the ring's).
 *
 * The kernel allows these copies between processes of one user unless ptrace is restricted
 * (Yama ptrace_scope 2 or 3; or 1 in a container without CAP_SYS_PTRACE, the ranks not being
 * each other's ancestors): the first call probes them on every rank, and when any rank may not,
 * the path is off for the window's life (cma_usable says 0 on every rank; rank 0 says why once).
 */
#ifndef HVDLAB_CMA_H
#define HVDLAB_CMA_H

#include <stddef.h>

#include "coll/shm.h"

/* Whether every rank of the node may read every other's memory: the same answer on every rank.
 * Collective over the node's ranks the first time for a window (it probes), local after. */
int cma_usable(shm_node *s);
/* Collective over the node's ranks, where cma_usable said 1: 1 on every rank when every rank
 * passed mine = 1 (its buffer suits this path), else 0 on every rank. One barrier; the caller
 * runs a path with a barrier of its own before it calls this again. */
int cma_all_agree(shm_node *s, int mine);
/* Collective over the node's ranks, where cma_usable said 1. In place:
 * buf = scale * (sum over the node's ranks). */
void cma_allreduce(shm_node *s, void *buf, size_t n, shm_elem t, float scale);

/* Benchmarks: bytes per block, per system call (0: the default). */
void cma_set_block_bytes(size_t bytes);

#endif
