/* emu_sched.c — a CUDA grid run on the CPU, a block's threads as coroutines. See emu_sched.h.
 *
 * Each thread slot (up to 1024, a block's most) is a coroutine with a stack of its own, made
 * once with glibc's ucontext and kept for every later block and launch. The scheduler runs every
 * runnable thread of a block in turn until it exits or waits at a barrier, then opens the
 * barriers that are complete: a warp's shuffle once every lane of the warp waits at one,
 * __syncthreads once every live thread of the block waits there. Anything else with nobody left
 * to run is a kernel that would hang or misbehave on a GPU too, and stops the process.
 *
 * Switches after a slot's first use are _setjmp/_longjmp, which keep no signal mask: ucontext's
 * swapcontext makes a system call each time, and a block of batch norm's 512 threads switches
 * some 15,000 times (its reductions are shuffles), which took minutes for the test's cases.
 * _FORTIFY_SOURCE is undone below because its longjmp refuses a jump to another stack.
 *
 * A shuffle is one barrier: each lane leaves its value in one of two slots, chosen by how many
 * shuffles it has made (odd or even), waits for its warp, then reads its source lane's slot of
 * the same parity. A lane cannot overwrite that slot before every lane has read it: its next
 * shuffle uses the other slot, and the one after waits for the whole warp first.
 */
#undef _FORTIFY_SOURCE
#include "emu_sched.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "base/fatal.h"
#include "emu_memory.h"

#define EMU_WARP 32
#define EMU_MAX_THREADS 1024
#define EMU_STACK_BYTES (256 * 1024) /* a kernel's locals, and fatal_error's printf */

enum { RUNNABLE, AT_SYNC, AT_SHFL, EXITED };

typedef struct {
    jmp_buf resume; /* where the slot goes on: in a wait, or parked before its next body */
    char *stack;
    int state;
    unsigned shuffles; /* shuffles made so far: the parity picks the slot */
    uint64_t slot[2];  /* this lane's value for the shuffle of that parity */
} emu_thread;

uint3 emu_threadIdx, emu_blockIdx;
dim3 emu_blockDim, emu_gridDim;

static emu_thread threads[EMU_MAX_THREADS];
static int nslots;    /* slots made so far */
static int nthreads;  /* in this launch's blocks */
static int cur;       /* the slot running now */
static int running;   /* inside emu_launch */
static jmp_buf sched; /* the scheduler, waiting for the running slot to stop */
static void (*run_body)(void *);
static void *run_arg;
static unsigned char *dyn_shared;
static size_t dyn_shared_bytes, dyn_shared_cap;

static void block_error(const char *what)
{
    fatal_error("emu: block (%u,%u,%u) of a %ux%ux%u grid: %s", emu_blockIdx.x, emu_blockIdx.y,
                emu_blockIdx.z, emu_gridDim.x, emu_gridDim.y, emu_gridDim.z, what);
}

static void set_thread_idx(int i)
{
    const unsigned bx = emu_blockDim.x, by = emu_blockDim.y;
    emu_threadIdx.x = (unsigned)i % bx;
    emu_threadIdx.y = (unsigned)i / bx % by;
    emu_threadIdx.z = (unsigned)i / (bx * by);
}

/* Leaves the running slot t (to be resumed at this call's return): straight on to the next
 * runnable thread of the block after it, in the scheduler's order, or back to the scheduler
 * when there is none. Going thread to thread halves the jumps of a barrier. */
static void switch_away(emu_thread *t)
{
    if (_setjmp(t->resume) != 0)
        return;
    for (int i = cur + 1; running && i < nthreads; i++)
        if (threads[i].state == RUNNABLE) {
            cur = i;
            set_thread_idx(i);
            _longjmp(threads[i].resume, 1);
        }
    _longjmp(sched, 1);
}

/* A slot's life: park, and each time it is resumed there run the body once as the thread it
 * now is. */
static void slot_main(void)
{
    emu_thread *t = &threads[cur];
    for (;;) {
        switch_away(t);
        run_body(run_arg);
        t->state = EXITED;
    }
}

/* Makes slot i (its stack, and a first run that parks it). */
static void make_slot(int i)
{
    static ucontext_t boot, back;
    if (!(threads[i].stack = malloc(EMU_STACK_BYTES)) || getcontext(&boot) != 0)
        fatal_error("emu: cannot make a thread's stack");
    /* Stacks of the same size from mmap all start at the same offset in a page, so their tops
     * (where a waiting thread's frames are) would fall in the same cache sets: each slot's
     * stack starts a few cache lines further in than the last one's. */
    const size_t skew = (size_t)(i % 61) * 64;
    boot.uc_stack.ss_sp = threads[i].stack + skew;
    boot.uc_stack.ss_size = EMU_STACK_BYTES - skew;
    boot.uc_link = NULL; /* slot_main never returns */
    makecontext(&boot, slot_main, 0);
    cur = i;
    if (_setjmp(sched) == 0)
        swapcontext(&back, &boot); /* parks at once: _longjmp(sched) lands above */
}

/* Runs slot i, and the runnable ones after it, until each waits or exits. */
static void run_slot(int i)
{
    cur = i;
    set_thread_idx(i);
    if (_setjmp(sched) == 0)
        _longjmp(threads[i].resume, 1);
}

static void wait_at(int state)
{
    if (!running)
        fatal_error("emu: a barrier or shuffle outside a kernel launch");
    emu_thread *t = &threads[cur];
    t->state = state;
    switch_away(t);
}

/* Lets a warp whose lanes all wait at a shuffle go on; returns whether it did. */
static int open_warp(int w)
{
    const int lo = w * EMU_WARP, hi = lo + EMU_WARP < nthreads ? lo + EMU_WARP : nthreads;
    int waiting = 0, exited = 0;
    for (int i = lo; i < hi; i++) {
        waiting += threads[i].state == AT_SHFL;
        exited += threads[i].state == EXITED;
    }
    if (waiting == 0 || waiting + exited < hi - lo)
        return 0;
    if (exited > 0)
        block_error("a full-warp shuffle that some lanes of the warp exited before");
    for (int i = lo; i < hi; i++) {
        if (threads[i].shuffles != threads[lo].shuffles)
            block_error("the lanes of a warp wait at different shuffles");
        threads[i].state = RUNNABLE;
    }
    return 1;
}

static void run_block(void)
{
    for (int i = 0; i < nthreads; i++) {
        threads[i].state = RUNNABLE;
        threads[i].shuffles = 0;
    }
    if (dyn_shared_bytes) /* uninitialised on a GPU: NaN here, so a read before a write shows */
        memset(dyn_shared, 0xFF, dyn_shared_bytes);
    for (;;) {
        for (int i = 0; i < nthreads; i++)
            if (threads[i].state == RUNNABLE)
                run_slot(i);
        int opened = 0, live = 0, at_sync = 0;
        for (int w = 0; w * EMU_WARP < nthreads; w++)
            opened |= open_warp(w);
        for (int i = 0; i < nthreads; i++) {
            live += threads[i].state != EXITED;
            at_sync += threads[i].state == AT_SYNC;
        }
        if (live == 0)
            return;
        if (!opened && at_sync == live) {
            for (int i = 0; i < nthreads; i++)
                threads[i].state = RUNNABLE;
            opened = 1;
        }
        if (!opened)
            block_error(at_sync > 0 ? "some threads wait at __syncthreads, others at a shuffle "
                                      "or exited (a __syncthreads not every thread reaches)"
                                    : "threads wait at shuffles that cannot complete");
    }
}

void emu_launch(dim3 grid, dim3 block, size_t shared_bytes, void (*body)(void *), void *arg)
{
    const unsigned long long nt = (unsigned long long)block.x * block.y * block.z;
    if (running)
        fatal_error("emu: a launch from inside a kernel");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || nt == 0 || nt > EMU_MAX_THREADS)
        fatal_error("emu: invalid launch: grid %ux%ux%u, block %ux%ux%u (at most %d threads)",
                    grid.x, grid.y, grid.z, block.x, block.y, block.z, EMU_MAX_THREADS);
    while (nslots < (int)nt)
        make_slot(nslots++);
    if (shared_bytes > dyn_shared_cap) {
        free(dyn_shared);
        if (!(dyn_shared = malloc(shared_bytes)))
            fatal_error("emu: out of memory for %zu bytes of shared memory", shared_bytes);
        dyn_shared_cap = shared_bytes;
    }
    dyn_shared_bytes = shared_bytes;
    nthreads = (int)nt;
    emu_blockDim = block;
    emu_gridDim = grid;
    run_body = body;
    run_arg = arg;
    running = 1;
    emu_device_open();
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                emu_blockIdx.x = x;
                emu_blockIdx.y = y;
                emu_blockIdx.z = z;
                run_block();
            }
    emu_device_close();
    running = 0;
}

void emu_syncthreads(void) { wait_at(AT_SYNC); }

uint64_t emu_shfl_down(unsigned mask, uint64_t bits, unsigned delta)
{
    if (mask != 0xffffffffu)
        block_error("a shuffle with a partial mask (only full-warp shuffles are emulated)");
    const int me = cur, lane = me % EMU_WARP;
    const unsigned parity = threads[me].shuffles & 1u;
    threads[me].slot[parity] = bits;
    threads[me].shuffles++;
    wait_at(AT_SHFL);
    const int src = me + (int)delta;
    /* past the warp, or past a last warp that is not whole: the lane keeps its own value */
    if (delta >= EMU_WARP || lane + (int)delta >= EMU_WARP || src >= nthreads)
        return bits;
    return threads[src].slot[parity];
}

void *emu_dynamic_shared(void) { return dyn_shared; }
