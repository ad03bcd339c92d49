/* emu_stream.c — the CPU emulator's streams and events: work queued on a stream the kit created
 * runs only when the host waits for it. See emu_stream.h.
 * Public: emu_stream_*, and the CUDA runtime's stream, event (cudaStreamWaitEvent too) and
 *         device-synchronize calls. */
#include "emu_stream.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/fatal.h"

typedef struct emu_op {
    void (*run)(void *);
    void *arg;
    struct emu_op *next;
} emu_op;

/* cudaStream_t is a pointer to this (opaque in CUDA's headers). */
struct CUstream_st {
    emu_op *head, *tail;
    struct CUstream_st *next_live; /* the live streams, for emu_stream_flush_all */
    int dead; /* destroyed: kept, never freed, so that a later use is caught, not undefined */
    int hung; /* emu_stream_hang: its queued work never finishes */
};

/* An event: the stream of its latest record, and which records' marks have run. */
struct CUevent_st {
    cudaStream_t stream;
    unsigned long recorded; /* records so far */
    unsigned long reached;  /* the latest record whose mark has run */
    unsigned long queued;   /* marks not yet run (on any stream) */
};

typedef struct {
    cudaEvent_t e;
    unsigned long seq;
} event_mark;

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static struct CUstream_st *live;

static void make_lock(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &a);
    pthread_mutexattr_destroy(&a);
}

/* Held while work runs or a queue changes: one kernel or copy at a time, whatever the thread
 * (the scheduler is not reentrant). Recursive. */
static void emu_stream_lock(void)
{
    pthread_once(&lock_once, make_lock);
    pthread_mutex_lock(&lock);
}
static void emu_stream_unlock(void) { pthread_mutex_unlock(&lock); }

/* NULL, cudaStreamLegacy (1) and cudaStreamPerThread (2): one queue, the default stream's. The
 * kit's own streams are non-blocking, so it is ordered with none of them, as on a GPU. */
static struct CUstream_st legacy;
static int special(cudaStream_t s) { return (uintptr_t)s <= 2; }
static cudaStream_t queue_of(cudaStream_t s) { return special(s) ? &legacy : s; }

/* A stream used after cudaStreamDestroy: undefined on a GPU (the handle may be reused, or the
 * call fail), one line here. */
static cudaStream_t live_queue(cudaStream_t s, const char *call)
{
    s = queue_of(s);
    if (s->dead)
        fatal_error("emu: %s on stream %p after its cudaStreamDestroy", call, (void *)s);
    return s;
}

void emu_stream_enqueue(cudaStream_t s, void (*run)(void *), void *arg)
{
    emu_op *op = malloc(sizeof *op);
    if (!op)
        fatal_error("emu: out of memory for a stream's queue");
    *op = (emu_op){run, arg, NULL};
    emu_stream_lock();
    s = live_queue(s, "work queued");
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    emu_stream_unlock();
}

/* Hung, with work queued: a wait for it never returns on a GPU. */
static int stuck(cudaStream_t s) { return s->hung && s->head; }

void emu_stream_flush(cudaStream_t s)
{
    s = live_queue(s, "a wait");
    if (stuck(s))
        fatal_error("emu: a wait for stream %p, whose work never finishes (emu_stream_hang): on "
                    "a GPU it would block for ever", (void *)s);
    emu_stream_lock();
    while (s->head) {
        emu_op *op = s->head;
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        op->run(op->arg);
        free(op);
    }
    emu_stream_unlock();
}

void emu_stream_flush_all(const char *call)
{
    emu_stream_lock();
    emu_stream_flush(&legacy);
    for (struct CUstream_st *s = live; s; s = s->next_live) {
        if (stuck(s) && call)
            fatal_error("emu: %s waits for the whole device, and stream %p has work that never "
                        "finishes (as a NCCL kernel whose peer died): on a GPU it would block "
                        "for ever", call, (void *)s);
        if (!stuck(s))
            emu_stream_flush(s);
    }
    emu_stream_unlock();
}

static void never(void *arg) { (void)arg; }

void emu_stream_hang(cudaStream_t s, int on)
{
    emu_stream_lock();
    s = live_queue(s, "emu_stream_hang");
    if (on && !s->hung)
        emu_stream_enqueue(s, never, NULL); /* what a wait for it waits for */
    s->hung = on;
    emu_stream_unlock();
}

/* ---- the CUDA runtime's calls --------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    struct CUstream_st *n = calloc(1, sizeof *n);
    if (!n)
        return cudaErrorMemoryAllocation;
    emu_stream_lock();
    n->next_live = live;
    live = n;
    emu_stream_unlock();
    *s = n;
    return cudaSuccess;
}

/* As on a GPU, the work already queued still runs. The stream is marked dead, not freed. */
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (special(s))
        return cudaErrorInvalidResourceHandle;
    emu_stream_lock();
    emu_stream_flush(s);
    struct CUstream_st **p = &live;
    while (*p && *p != s)
        p = &(*p)->next_live;
    if (*p)
        *p = s->next_live;
    s->dead = 1;
    emu_stream_unlock();
    return cudaSuccess;
}

/* Work still queued: not ready, and it runs now, so the next query says done (a polling loop
 * sees both answers). */
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    if (!live_queue(s, "cudaStreamQuery")->head)
        return cudaSuccess;
    if (stuck(queue_of(s)))
        return cudaErrorNotReady; /* for ever */
    emu_stream_flush(s);
    return cudaErrorNotReady;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    emu_stream_flush(s);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    emu_stream_flush_all("cudaDeviceSynchronize");
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = calloc(1, sizeof **e);
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    return cudaEventCreate(e);
}

static void mark(void *p)
{
    event_mark *m = p;
    if (m->seq > m->e->reached)
        m->e->reached = m->seq;
    m->e->queued--;
    free(m);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    event_mark *m = malloc(sizeof *m);
    if (!m)
        return cudaErrorMemoryAllocation;
    emu_stream_lock();
    e->stream = s;
    *m = (event_mark){e, ++e->recorded};
    e->queued++;
    emu_stream_enqueue(s, mark, m);
    emu_stream_unlock();
    return cudaSuccess;
}

/* Queued on the waiting stream: when it runs, the event's stream runs up to the record waited
 * for (and on to its end, as cudaEventSynchronize). */
static void await_mark(void *p)
{
    event_mark *m = p;
    if (m->e->reached < m->seq)
        emu_stream_flush(m->e->stream);
    m->e->queued--;
    free(m);
}

/* s's later work waits for e's latest record (none: no wait). */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    if (!e->recorded)
        return cudaSuccess;
    event_mark *m = malloc(sizeof *m);
    if (!m)
        return cudaErrorMemoryAllocation;
    emu_stream_lock();
    *m = (event_mark){e, e->recorded};
    e->queued++; /* cudaEventDestroy lets it run first */
    emu_stream_enqueue(s, await_mark, m);
    emu_stream_unlock();
    return cudaSuccess;
}

/* Its stream runs up to the latest record's mark and on to its end: a GPU may be that far too. */
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    emu_stream_lock();
    if (e->reached < e->recorded)
        emu_stream_flush(e->stream);
    emu_stream_unlock();
    return cudaSuccess;
}

/* As on a GPU, an event whose marks are still queued is freed once they have run. */
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    emu_stream_lock();
    if (e->queued)
        emu_stream_flush_all(NULL); /* a GPU does not wait here */
    emu_stream_unlock();
    free(e);
    return cudaSuccess;
}

/* No clock: a GPU mark's time is 0 here. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    (void)a, (void)b;
    *ms = 0.0f;
    return cudaSuccess;
}
