/* cma.c — single-copy allreduce among one host's ranks (process_vm_readv/writev). See cma.h.
 * Public: cma_usable, cma_all_agree, cma_allreduce, cma_set_block_bytes. */
/* process_vm_readv: _GNU_SOURCE, which the Makefile defines */
#include "coll/cma.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/fatal.h"
#include "coll/ring.h"

/* What each rank posts on the board: one cache line per rank. */
typedef struct {
    int64_t pid;
    uint64_t addr;  /* this call's buffer; during the probe, the probe word's address */
    int32_t ok;     /* probe: this rank could read and write every other rank */
    int32_t agree;  /* cma_all_agree: this rank's vote */
    char pad[40];
} board_entry;
#define MAX_RANKS ((int)(SHM_BOARD_BYTES / sizeof(board_entry)))

/* Bytes per copy (bench/allreduce --cma-blocks 256K,512K,1M, 2026-11-23): 64 KiB blocks took
 * 1.4x the time at 1 MiB with 2 ranks (a system call costs ~1 us here); 1 MiB blocks were 5-7 %
 * faster than 256 KiB ones at 2-4 MiB with a core per rank (two interleaved runs: 4 MiB 126 vs
 * 134 us) but lost 10-40 % from 16 MiB with 2 ranks and from 4 MiB with 4 ranks on 2 cores (the
 * block, the peer's and the sum fall out of L2). */
#define BLOCK ((size_t)256 << 10)
#define BIG_BLOCK ((size_t)1 << 20)  /* a core per rank, buffers up to BIG_BLOCK_UP_TO */
#define BIG_BLOCK_UP_TO ((size_t)8 << 20)
static size_t forced_block; /* 0: by the rule above */

void cma_set_block_bytes(size_t bytes) { forced_block = bytes; }

static board_entry *entry(shm_node *s, int r) { return (board_entry *)shm_node_board(s) + r; }

/* len bytes between local memory and remote address `at` of process pid: into local (write 0)
 * or out of it (write 1). 0, or the errno. */
static int move_peer(pid_t pid, uint64_t at, void *local, size_t len, int write)
{
    while (len > 0) {
        struct iovec here = {local, len}, there = {(void *)(uintptr_t)at, len};
        ssize_t got = write ? process_vm_writev(pid, &here, 1, &there, 1, 0)
                            : process_vm_readv(pid, &here, 1, &there, 1, 0);
        if (got <= 0)
            return got < 0 ? errno : EIO;
        local = (char *)local + got; /* a transfer may stop short (page boundaries) */
        at += (uint64_t)got;
        len -= (size_t)got;
    }
    return 0;
}

/* Every rank reads one word of every other rank and writes it back; all agree on the outcome. */
static void probe(shm_node *s)
{
    static volatile int64_t word = 0x5eed;
    if (s->size > MAX_RANKS) {
        s->cma = -1;
        return;
    }
    board_entry *me = entry(s, s->rank);
    me->pid = (int64_t)getpid();
    me->addr = (uint64_t)(uintptr_t)&word;
    shm_node_barrier(s);
    int err = 0;
    for (int r = 0; r < s->size && !err; r++) {
        int64_t got = 0;
        if (r == s->rank)
            continue;
        err = move_peer((pid_t)entry(s, r)->pid, entry(s, r)->addr, &got, sizeof got, 0);
        if (!err && got != 0x5eed)
            err = EIO;
        if (!err) /* the same value back: the peer's word does not change */
            err = move_peer((pid_t)entry(s, r)->pid, entry(s, r)->addr, &got, sizeof got, 1);
    }
    me->ok = err == 0;
    shm_node_barrier(s);
    s->cma = 1;
    for (int r = 0; r < s->size; r++)
        if (!entry(s, r)->ok)
            s->cma = -1;
    if (s->cma < 0 && s->rank == 0)
        fprintf(stderr, "hvdlab: single-copy allreduce off on this host (process_vm_readv "
                        "between the ranks: %s); the shared window instead\n",
                strerror(err ? err : EPERM));
}

static void read_or_die(const shm_node *s, int r, pid_t pid, uint64_t from, void *to, size_t len)
{
    int err = move_peer(pid, from, to, len, 0);
    if (err)
        fatal_error("single-copy allreduce: rank %d reading %zu bytes of local rank %d: %s",
                    s->rank, len, r, strerror(err));
}

static void write_or_die(const shm_node *s, int r, pid_t pid, uint64_t to, void *from, size_t len)
{
    int err = move_peer(pid, to, from, len, 1);
    if (err)
        fatal_error("single-copy allreduce: rank %d writing %zu bytes to local rank %d: %s",
                    s->rank, len, r, strerror(err));
}

/* Slice [b, e) of this rank: x_0 + x_1 + ... + x_{L-1}, in place in buf and then into every
 * other rank's buf, block by block. Ranks 0 and 1 add into their own values (x_1 + x_0 ==
 * x_0 + x_1 bitwise); the others gather x_0 + x_1 + ... in acc first. */
static void reduce_own_slice(shm_node *s, char *buf, size_t b, size_t e, size_t n, shm_elem t,
                             float scale)
{
    size_t es = t == SHM_F16 ? 2 : 4;
    size_t block = forced_block                                        ? forced_block
                   : !s->shared_cores && n * es <= BIG_BLOCK_UP_TO ? BIG_BLOCK
                                                                       : BLOCK;
    size_t per = block / es;
    void (*add)(void *, const void *, size_t, float) = t == SHM_F16 ? ring_add_f16 : ring_add_f32;
    /* one allreduce at a time per process, as for the window: static, not on the stack */
    _Alignas(64) static char acc_mem[(size_t)1 << 20], tmp_mem[(size_t)1 << 20];
    if (per * es > sizeof acc_mem)
        per = sizeof acc_mem / es;
    int L = s->size, me = s->rank;
    for (size_t i = b; i < e; i += per) {
        size_t k = e - i < per ? e - i : per, bytes = k * es;
        char *mine = buf + i * es, *acc = me <= 1 ? mine : acc_mem;
        for (int r = 0; r < L; r++) {
            float sc = r == L - 1 ? scale : 1.0f;
            const board_entry *p = entry(s, r);
            if (me <= 1 && r <= 1) { /* acc is mine: add the other of ranks 0 and 1 */
                if (r == me)
                    continue;
                read_or_die(s, r, (pid_t)p->pid, p->addr + i * es, tmp_mem, bytes);
                add(acc, tmp_mem, k, L == 2 ? scale : 1.0f);
            } else if (r == 0) {
                read_or_die(s, r, (pid_t)p->pid, p->addr + i * es, acc, bytes);
            } else if (r == me) {
                add(acc, mine, k, sc);
            } else {
                read_or_die(s, r, (pid_t)p->pid, p->addr + i * es, tmp_mem, bytes);
                add(acc, tmp_mem, k, sc);
            }
        }
        if (acc != mine)
            memcpy(mine, acc, bytes);
        for (int r = 0; r < L; r++) /* the sum to the others while it is in cache */
            if (r != me)
                write_or_die(s, r, (pid_t)entry(s, r)->pid, entry(s, r)->addr + i * es, mine,
                             bytes);
    }
}

int cma_usable(shm_node *s)
{
    if (s->cma == 0)
        probe(s);
    return s->cma > 0;
}

int cma_all_agree(shm_node *s, int mine)
{
    entry(s, s->rank)->agree = mine;
    shm_node_barrier(s); /* every vote posted; the path that follows has a barrier before any
                          * rank posts its next vote, so every rank reads these ones */
    for (int r = 0; r < s->size; r++)
        if (!entry(s, r)->agree)
            return 0;
    return 1;
}

void cma_allreduce(shm_node *s, void *buf_, size_t n, shm_elem t, float scale)
{
    char *buf = buf_;
    int L = s->size, me = s->rank;
    entry(s, me)->addr = (uint64_t)(uintptr_t)buf;
    shm_node_barrier(s); /* every buffer posted and filled */
    size_t b = ring_chunk_begin(n, L, me), e = ring_chunk_begin(n, L, me + 1);
    reduce_own_slice(s, buf, b, e, n, t, scale);
    shm_node_barrier(s); /* every slice summed and written to every rank */
}
