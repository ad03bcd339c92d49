/* emu_memory.c — the CPU emulator's device memory: host memory it remembers as the GPU's.
 *
 * cudaMalloc and gpu_context_alloc hand out host memory and record each block, so
 * cudaPointerGetAttributes can tell a device pointer from a host one the way CUDA does, and the
 * collectives take the path they take on a GPU: device tensors through NCCL or staged through
 * pinned host memory, host tensors through the CPU runtime. Every copy is checked against the
 * blocks as a GPU would refuse it: a device side that is not inside one live device block (a
 * host pointer given as the GPU's, or a copy past a block's end), a host side that is the GPU's,
 * or a free of what was not allocated so. Each stops the program with one line naming the call.
 *
 * Host code that reads or writes device memory directly (a device pointer handed to MPI, which
 * is not CUDA-aware here, or to memcpy) crashes on a GPU and works on plain host memory. So the
 * device blocks are pages of their own, closed to every access (PROT_NONE) except while a
 * kernel, a copy or a library stand-in runs (emu_device_open and emu_device_close): host code
 * that touches one stops with one line naming the address and the block, and a backtrace. That
 * guard is on by default (HVDLAB_EMU_GUARD=0 turns it off; it costs test_wrn_emu about 20 %)
 * except in an ASan build (make SANITIZE=1), where blocks of exactly their size let ASan report
 * a kernel's access past a block's end, which a block's last page would hide.
 */
#include "emu_memory.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "base/fatal.h"
#include "emu_stream.h"
#include "nn/gpu_context.h"

/* nn/gpu_context.h declares them for CUDA C++ only (emu_runtime.c). */
cudaStream_t gpu_context_stream(void);
void gpu_context_wait(cudaStream_t s, cudaEvent_t e);

/* Device memory, and the host memory pinned for the GPU: cudaMallocHost's (recorded so
 * cudaFreeHost can check) and cudaHostRegister's. Copies to and from pinned memory are
 * asynchronous; pageable memory's are not quite (cudaMemcpyAsync below). */
typedef enum { EMU_DEVICE = 0, EMU_HOST_ALLOC = 1, EMU_REGISTERED = 2 } emu_kind;

typedef struct {
    uintptr_t base;
    size_t bytes;
    emu_kind kind;
    int fd;       /* exported (cudaIpcGetMemHandle): the memfd its pages are now; else -1 */
    int imported; /* another process's block, opened by cudaIpcOpenMemHandle */
    unsigned *opens; /* exported or imported: how many processes have it open (CUDA IPC) */
} emu_block;

/* The live blocks, unordered: a few hundred at most (a model's tensors), looked up per
 * collective and per copy. The runtime's background thread looks too, hence the lock. */
static emu_block *blocks;
static size_t nblocks, cap;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The guard (read once, at the first allocation). opened: kernels, copies and stand-ins running
 * now (threads may nest them); the blocks are open while it is above 0. */
static int guard, opened;
static struct sigaction host_segv; /* the handler before ours: for faults that are not ours */

static size_t page_bytes(void) { return (size_t)sysconf(_SC_PAGESIZE); }
static size_t guard_bytes(size_t bytes)
{
    const size_t pg = page_bytes();
    return ((bytes ? bytes : 1) + pg - 1) / pg * pg;
}

/* Called with lock held. */
static void protect(const emu_block *b, int prot)
{
    if (mprotect((void *)b->base, guard_bytes(b->bytes), prot) != 0)
        fatal_error("emu: mprotect of a device block (%p, %zu bytes) failed", (void *)b->base,
                    b->bytes);
}

/* The device block holding address a, scanned without the lock: for the fault handler only. */
static const emu_block *block_at(uintptr_t a)
{
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].kind == EMU_DEVICE && a >= blocks[i].base &&
            a < blocks[i].base + guard_bytes(blocks[i].bytes))
            return &blocks[i];
    return NULL;
}

/* A fault in a closed device block is host code touching the GPU's memory; any other fault is
 * handed back to the handler that was there before (ASan's, Open MPI's, the default). */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
    const emu_block *b = block_at((uintptr_t)si->si_addr);
    if (!b) {
        sigaction(SIGSEGV, &host_segv, NULL);
        return; /* the access faults again, under that handler */
    }
    (void)sig, (void)uc;
    char line[300];
    int n = snprintf(line, sizeof line,
                     "hvdlab: error: emu: host code touched device memory at %p, byte %zu of a "
                     "block of %zu (on a GPU this crashes; HVDLAB_EMU_GUARD). Backtrace:\n",
                     si->si_addr, (size_t)((uintptr_t)si->si_addr - b->base), b->bytes);
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        _exit(EXIT_FAILURE);
    void *frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
    _exit(EXIT_FAILURE);
}

#if defined(__SANITIZE_ADDRESS__)
#define EMU_GUARD_DEFAULT 0
#else
#define EMU_GUARD_DEFAULT 1
#endif

static void read_guard(void)
{
    const char *v = getenv("HVDLAB_EMU_GUARD");
    guard = v && *v ? strcmp(v, "0") != 0 : EMU_GUARD_DEFAULT;
    if (guard) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &host_segv);
    }
}

static int guarded(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_guard);
    return guard;
}

void emu_device_open(void)
{
    if (!guarded())
        return;
    pthread_mutex_lock(&lock);
    if (opened++ == 0)
        for (size_t i = 0; i < nblocks; i++)
            if (blocks[i].kind == EMU_DEVICE)
                protect(&blocks[i], PROT_READ | PROT_WRITE);
    pthread_mutex_unlock(&lock);
}

void emu_device_close(void)
{
    if (!guarded())
        return;
    pthread_mutex_lock(&lock);
    if (--opened == 0)
        for (size_t i = 0; i < nblocks; i++)
            if (blocks[i].kind == EMU_DEVICE)
                protect(&blocks[i], PROT_NONE);
    pthread_mutex_unlock(&lock);
}

/* imported: cudaIpcOpenMemHandle's, with its count of opens. */
static void remember_as(void *p, size_t bytes, emu_kind kind, int imported, unsigned *opens)
{
    pthread_mutex_lock(&lock);
    if (nblocks == cap) {
        cap = cap ? 2 * cap : 256;
        blocks = realloc(blocks, cap * sizeof *blocks);
        if (!blocks)
            fatal_error("emu: out of memory for the table of device blocks");
    }
    blocks[nblocks++] = (emu_block){(uintptr_t)p, bytes, kind, -1, imported, opens};
    if (kind == EMU_DEVICE && guard && opened == 0)
        protect(&blocks[nblocks - 1], PROT_NONE);
    pthread_mutex_unlock(&lock);
}

static void remember(void *p, size_t bytes, emu_kind kind)
{
    remember_as(p, bytes, kind, 0, NULL);
}

/* The live block of that kind that p starts, or NULL. Called with lock held. */
static emu_block *starting_at(const void *p, emu_kind kind)
{
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].base == (uintptr_t)p && blocks[i].kind == kind)
            return &blocks[i];
    return NULL;
}

/* Drops p's block (a copy in *gone, if not NULL); 0, or -1 when p does not start a live block
 * of that kind. */
static int forget(const void *p, emu_kind kind, emu_block *gone)
{
    pthread_mutex_lock(&lock);
    emu_block *b = starting_at(p, kind);
    if (b) {
        if (gone)
            *gone = *b;
        *b = blocks[--nblocks];
    }
    pthread_mutex_unlock(&lock);
    return b ? 0 : -1;
}

size_t emu_device_bytes(void)
{
    size_t sum = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].kind == EMU_DEVICE && !blocks[i].imported)
            sum += blocks[i].bytes;
    pthread_mutex_unlock(&lock);
    return sum;
}

/* The block holding p, device memory or pinned host memory as device says: 1 and its end in
 * *end, or 0. */
static int block_holding(const void *p, int device, uintptr_t *end)
{
    const uintptr_t a = (uintptr_t)p;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nblocks && !found; i++)
        if ((blocks[i].kind == EMU_DEVICE) == device && a >= blocks[i].base &&
            a < blocks[i].base + (blocks[i].bytes ? blocks[i].bytes : 1)) {
            *end = blocks[i].base + blocks[i].bytes;
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

/* 1 when [p, p + bytes) lies in one block of that kind (always, for 0 bytes). */
static int in_one_block(const void *p, size_t bytes, int device)
{
    uintptr_t end;
    return bytes == 0 ||
           (p != NULL && block_holding(p, device, &end) && (uintptr_t)p + bytes <= end);
}

static int emu_is_device(const void *p)
{
    uintptr_t end;
    return p != NULL && block_holding(p, 1, &end);
}

int emu_device_range(const void *p, size_t bytes) { return in_one_block(p, bytes, 1); }

/* 256-byte aligned, as cudaMalloc's; NaN-filled (all bits set), as nothing promises it zeros.
 * Guarded: whole pages of their own, for mprotect. Else exactly bytes long, not rounded up:
 * under ASan (make SANITIZE=1 test-emu) a kernel's access past a buffer's end is reported. */
static void *host_alloc(size_t bytes, int device)
{
    void *p = NULL;
    if (device && guarded()) {
        p = mmap(NULL, guard_bytes(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
        if (p == MAP_FAILED)
            fatal_error("emu: out of memory for %zu bytes of device memory", bytes);
    } else if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) {
        fatal_error("emu: out of memory for %zu bytes", bytes);
    }
    memset(p, 0xFF, bytes);
    return p;
}

/* cudaFree synchronizes the device first: no queued work still uses the block. */
static void device_free(void *p, const char *call)
{
    emu_stream_flush_all(call);
    emu_block b = {0, 0, EMU_DEVICE, -1, 0, NULL};
    if (p && forget(p, EMU_DEVICE, &b) != 0)
        fatal_error("emu: %s of %p, which is not a live device block", call, p);
    if (b.imported)
        fatal_error("emu: %s of %p, another process's memory that cudaIpcOpenMemHandle opened "
                    "(cudaIpcCloseMemHandle closes it)", call, p);
    if (b.opens) {
        unsigned others = __atomic_load_n(b.opens, __ATOMIC_SEQ_CST);
        if (others)
            fatal_error("emu: %s of %p, which %u other process(es) still have open through CUDA "
                        "IPC (undefined on a GPU: cudaIpcCloseMemHandle there first)", call, p,
                        others);
        munmap(b.opens, page_bytes());
    }
    if (b.fd >= 0)
        close(b.fd);
    if (p && guarded())
        munmap(p, guard_bytes(b.bytes));
    else
        free(p);
}

void *gpu_context_alloc(size_t bytes)
{
    void *p = host_alloc(bytes, 1);
    remember(p, bytes, EMU_DEVICE);
    return p;
}

void gpu_context_free(void *p) { device_free(p, "gpu_context_free"); }

static const char *kind_name(enum cudaMemcpyKind k)
{
    switch (k) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    default: return "cudaMemcpyDefault";
    }
}

/* One side of a copy: the GPU's when dev says so (all of [p, p+bytes) in one live device
 * block), else the host's (no byte of it in a device block). */
static void check_side(const char *call, enum cudaMemcpyKind k, const char *side, const void *p,
                       size_t bytes, int dev)
{
    if (bytes == 0)
        return;
    if (dev && !emu_device_range(p, bytes))
        fatal_error("emu: %s(%s): the %s (%p, %zu bytes) is not inside one device block%s", call,
                    kind_name(k), side, p, bytes,
                    emu_is_device(p) ? " (it runs past the block's end)" : "");
    if (!dev && (emu_is_device(p) || emu_is_device((const char *)p + bytes - 1)))
        fatal_error("emu: %s(%s): the %s (%p, %zu bytes) is device memory", call, kind_name(k),
                    side, p, bytes);
}

static void copy_checks(const char *call, void *dst, const void *src, size_t bytes,
                        enum cudaMemcpyKind k)
{
    if (k == cudaMemcpyDefault)
        return;
    check_side(call, k, "destination", dst, bytes,
               k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice);
    check_side(call, k, "source", src, bytes,
               k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice);
}

static void move(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    emu_device_open();
    memmove(dst, src, bytes);
    emu_device_close();
}

/* A copy queued on a stream: checked when queued (the error names the call), moved when run. */
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    void *staged; /* what src pointed to, read when queued (from pageable memory), or NULL */
} queued_copy;

static void run_copy(void *p)
{
    queued_copy *c = p;
    move(c->dst, c->src, c->bytes);
    free(c->staged);
    free(c);
}

/* As gpu_context.cu's: on the model's stream, the copies waited for, the zeroing not. */
void gpu_context_upload(void *dst, const void *src, size_t bytes)
{
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, gpu_context_stream());
    gpu_context_wait(gpu_context_stream(), NULL);
}
void gpu_context_download(void *dst, const void *src, size_t bytes)
{
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, gpu_context_stream());
    gpu_context_wait(gpu_context_stream(), NULL);
}

typedef struct {
    void *p;
    int value;
    size_t bytes;
} queued_set;

static void run_set(void *p)
{
    queued_set *q = p;
    emu_device_open();
    memset(q->p, q->value, q->bytes);
    emu_device_close();
    free(q);
}

static void queue_set(const char *call, void *p, int value, size_t bytes, cudaStream_t s)
{
    if (!emu_device_range(p, bytes))
        fatal_error("emu: %s: %p, %zu bytes, is not inside one device block", call, p, bytes);
    queued_set *q = malloc(sizeof *q);
    if (!q)
        fatal_error("emu: out of memory for a queued %s", call);
    *q = (queued_set){p, value, bytes};
    emu_stream_enqueue(s, run_set, q);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
    queue_set("cudaMemsetAsync", p, value, bytes, s);
    return cudaSuccess;
}

void gpu_context_zero(void *p, size_t bytes)
{
    cudaMemsetAsync(p, 0, bytes, gpu_context_stream());
}

/* Synchronous, on the default stream: after the work queued there (not the kit's streams'). */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    emu_stream_flush(NULL);
    copy_checks("cudaMemcpy", dst, src, bytes, kind);
    move(dst, src, bytes);
    return cudaSuccess;
}
/* As CUDA's rules for cudaMemcpyAsync: between device and pinned memory (or device and device)
 * it is queued on s. From pageable memory the source is read before the call returns (CUDA
 * copies it to a staging buffer): here into a copy that the queued work moves from. To pageable
 * memory the call returns once the copy is done, after the work queued before it on s. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    copy_checks("cudaMemcpyAsync", dst, src, bytes, kind);
    const int from_pageable = !emu_is_device(src) && !in_one_block(src, bytes, 0),
              to_pageable = !emu_is_device(dst) && !in_one_block(dst, bytes, 0);
    if (bytes && to_pageable) {
        emu_stream_flush(s);
        move(dst, src, bytes);
        return cudaSuccess;
    }
    queued_copy *c = malloc(sizeof *c);
    if (!c)
        fatal_error("emu: out of memory for a queued copy");
    *c = (queued_copy){dst, src, bytes, NULL};
    if (bytes && from_pageable) {
        if (!(c->staged = malloc(bytes)))
            fatal_error("emu: out of memory for %zu bytes staged from pageable memory", bytes);
        memcpy(c->staged, src, bytes);
        c->src = c->staged;
    }
    emu_stream_enqueue(s, run_copy, c);
    return cudaSuccess;
}

/* HVDLAB_EMU_PIN_FAILS_ON_RANK=r: refused in MPI rank r (OMPI_COMM_WORLD_RANK), as a
 * locked-memory limit refuses it on a GPU, for the tests of the paths that then serve
 * (test_gpu_collectives). */
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags)
{
    (void)flags;
    const char *fail = getenv("HVDLAB_EMU_PIN_FAILS_ON_RANK"),
               *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (fail && rank && strcmp(fail, rank) == 0)
        return cudaErrorMemoryAllocation;
    remember(p, bytes, EMU_REGISTERED);
    return cudaSuccess;
}

/* It synchronizes the device, as cudaFree does: no queued copy still uses the memory. */
cudaError_t cudaHostUnregister(void *p)
{
    emu_stream_flush_all("cudaHostUnregister");
    if (forget(p, EMU_REGISTERED, NULL) != 0)
        fatal_error("emu: cudaHostUnregister of %p, which cudaHostRegister did not pin", p);
    return cudaSuccess;
}

/* Synchronous, on the default stream: after the work queued there. */
cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    queue_set("cudaMemset", p, value, bytes, NULL);
    emu_stream_flush(NULL);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = gpu_context_alloc(bytes);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    device_free(p, "cudaFree");
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    *p = host_alloc(bytes, 0);
    remember(*p, bytes, EMU_HOST_ALLOC);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p)
{
    emu_stream_flush_all("cudaFreeHost"); /* it synchronizes the device, as cudaFree does */
    if (p && forget(p, EMU_HOST_ALLOC, NULL) != 0)
        fatal_error("emu: cudaFreeHost of %p, which cudaMallocHost did not give", p);
    free(p);
    return cudaSuccess;
}

/* Device blocks are the GPU's; anything else is host memory, pinned or not. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    memset(a, 0, sizeof *a);
    if (emu_is_device(p)) {
        a->type = cudaMemoryTypeDevice;
        a->devicePointer = (void *)p;
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->hostPointer = (void *)p;
    }
    return cudaSuccess;
}

/* ---- CUDA IPC: another process's device memory ------------------------------------------------
 * An exported block's pages become a memfd's, mapped at the same address (MAP_FIXED, its bytes
 * kept), and the handle names the exporting process and the descriptor; the importer maps the
 * same pages through /proc/<pid>/fd/<fd>. So two ranks share the bytes, as two processes on one
 * GPU do, and each process's guard closes its own mapping. A page after the block's counts the
 * processes that have it open: freeing it while one still does stops with one line (undefined
 * on a GPU, and harmless here, where the pages outlive the free). Only blocks of pages of their
 * own can be remapped so: without the guard (an ASan build, HVDLAB_EMU_GUARD=0) export fails
 * with cudaErrorNotSupported, which the kit must survive too. */
#define EMU_IPC_MAGIC 0x68766469u /* "hvdi" */

typedef struct {
    uint32_t magic;
    int32_t pid, fd;
    uint64_t bytes;
} emu_ipc_handle;

/* The count of opens: the memfd's page after the block's gb bytes, mapped. */
static unsigned *open_count(int fd, size_t gb)
{
    void *c = mmap(NULL, page_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)gb);
    if (c == MAP_FAILED)
        fatal_error("emu: CUDA IPC: the count page of a shared block: %s", strerror(errno));
    return c;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    _Static_assert(sizeof(emu_ipc_handle) <= sizeof h->reserved, "the handle fits CUDA's");
    if (!guarded())
        return cudaErrorNotSupported;
    emu_stream_flush_all(NULL); /* no queued work writes the block while it is remapped */
    pthread_mutex_lock(&lock);
    emu_block *b = starting_at(p, EMU_DEVICE);
    if (!b || b->imported)
        fatal_error("emu: cudaIpcGetMemHandle of %p, which does not start a device block this "
                    "process allocated", p);
    const size_t gb = guard_bytes(b->bytes);
    if (b->fd < 0) {
        int fd = memfd_create("hvdlab-emu-device", MFD_CLOEXEC);
        char *keep = malloc(b->bytes ? b->bytes : 1);
        if (fd < 0 || ftruncate(fd, (off_t)(gb + page_bytes())) != 0 || !keep)
            fatal_error("emu: cudaIpcGetMemHandle: no memfd of %zu bytes", gb);
        protect(b, PROT_READ | PROT_WRITE);
        memcpy(keep, p, b->bytes);
        if (mmap(p, gb, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != p)
            fatal_error("emu: cudaIpcGetMemHandle: the block at %p could not be remapped", p);
        memcpy(p, keep, b->bytes);
        free(keep);
        if (opened == 0)
            protect(b, PROT_NONE);
        b->fd = fd;
        b->opens = open_count(fd, gb);
    }
    emu_ipc_handle e = {EMU_IPC_MAGIC, (int32_t)getpid(), b->fd, b->bytes};
    pthread_mutex_unlock(&lock);
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &e, sizeof e);
    return cudaSuccess;
}

/* A process cannot open its own handles: CUDA refuses that with an error too. */
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned flags)
{
    if (flags != cudaIpcMemLazyEnablePeerAccess) /* the one flag CUDA takes */
        return cudaErrorInvalidValue;
    emu_ipc_handle e;
    memcpy(&e, h.reserved, sizeof e);
    if (e.magic != EMU_IPC_MAGIC)
        fatal_error("emu: cudaIpcOpenMemHandle of a handle cudaIpcGetMemHandle did not give");
    if (e.pid == (int32_t)getpid())
        return cudaErrorInvalidValue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)e.pid, (int)e.fd);
    int fd = open(path, O_RDWR);
    if (fd < 0) { /* /proc hidden (hidepid), another PID namespace: refused, as a GPU may */
        fprintf(stderr, "emu: cudaIpcOpenMemHandle: open %s: %s\n", path, strerror(errno));
        return cudaErrorMapBufferObjectFailed;
    }
    const size_t gb = guard_bytes(e.bytes);
    void *q = mmap(NULL, gb, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (q == MAP_FAILED)
        fatal_error("emu: cudaIpcOpenMemHandle: mmap of %s: %s", path, strerror(errno));
    unsigned *opens = open_count(fd, gb);
    close(fd);
    __atomic_add_fetch(opens, 1, __ATOMIC_SEQ_CST);
    remember_as(q, e.bytes, EMU_DEVICE, 1, opens);
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *p)
{
    emu_stream_flush_all(NULL); /* no queued work still reads it */
    emu_block b;
    if (forget(p, EMU_DEVICE, &b) != 0 || !b.imported)
        fatal_error("emu: cudaIpcCloseMemHandle of %p, which cudaIpcOpenMemHandle did not open", p);
    __atomic_sub_fetch(b.opens, 1, __ATOMIC_SEQ_CST);
    munmap(b.opens, page_bytes());
    munmap(p, guard_bytes(b.bytes));
    return cudaSuccess;
}
