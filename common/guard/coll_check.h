/* coll_check.h — HVD_CHECK_COLLECTIVES: ranks compare each collective call before running it.
 *
 * A rank that calls allreduce("a") while another calls broadcast("b") (or the same call with
 * another count, root, name, reduce op or compression, or hvd_shutdown) would otherwise hang
 * forever inside MPI, or for a different op or compression finish with a wrong result. Here
 * every rank first exchanges a small descriptor of the call it is about to make; on a mismatch,
 * rank 0 prints one line naming both ranks and both calls and every rank exits non-zero.
 */
#ifndef HVDLAB_COLL_CHECK_H
#define HVDLAB_COLL_CHECK_H

#include <mpi.h>
#include <stddef.h>

#include "base/reduce_op.h"

typedef enum {
    COLL_ALLREDUCE,
    COLL_BROADCAST,
    COLL_ALLGATHER,
    COLL_BARRIER,
    COLL_SYNCHRONIZE,
    COLL_SHUTDOWN,
    COLL_VOTE /* guard/vote.h: the training's per-step stop vote, and the resume's votes */
} coll_kind;

#define COLL_NAME_MAX 64

enum { COLL_GPU_NCCL = 1, COLL_GPU_SUMMED = 2 };

typedef struct {
    int kind;
    int root;    /* broadcast only, else -1 */
    int op;      /* allreduce only (hvd_op), else -1 */
    int fp16;    /* allreduce only: 1 when the tensor travels as IEEE half */
    int gpu;     /* COLL_GPU_NCCL: a device tensor on the NCCL path, whose wire is NCCL's, not
                  * MPI's; COLL_GPU_SUMMED: one staged and summed on the GPUs (staged_node.h),
                  * whose window is not the host path's; 0: anything else */
    long long count; /* elements; allgather counts may differ between ranks */
    char name[COLL_NAME_MAX];
} coll_desc;

const char *coll_kind_name(int kind);
coll_desc coll_describe(coll_kind kind, const char *name, size_t count, int root);
coll_desc coll_describe_allreduce(const char *name, size_t count, hvd_op op, int fp16);
/* 1 when a and b are the same call (allgather ignores count). */
int coll_desc_match(const coll_desc *a, const coll_desc *b);
/* "allreduce(name="x", count=10)"; detail is a mask: COLL_DETAIL_OP adds an allreduce's
 * ", op=sum, compression=none", COLL_DETAIL_WHERE any call's ", on the GPU (NCCL)" or
 * ", on the host". */
#define COLL_DETAIL_OP 1
#define COLL_DETAIL_WHERE 2
void coll_desc_format(const coll_desc *d, int detail, char *out, size_t outlen);
/* The detail (mask) the short form lacks to tell a and b apart: COLL_DETAIL_OP for allreduces
 * that differ in op or compression, COLL_DETAIL_WHERE for calls that differ in where the tensor
 * lies; 0 when neither. */
int coll_desc_need_detail(const coll_desc *a, const coll_desc *b);

/* Collective over comm: returns when every rank described the same call; otherwise stops the
 * job (one line from rank 0, exit status 1 on every rank). */
void coll_check(MPI_Comm comm, const coll_desc *mine);

/* The line for a rank that has shut down while another waits in a call it will never join (the
 * stall inspector's and the watchdog's, stall.h and watchdog.h): "rank 1 has shut down
 * (hvd_shutdown) while rank 0 is in allreduce(name="x", count=10), which rank 1 will never join
 * (…); stopping every rank". */
void coll_early_shutdown_line(int gone, int waiting, const coll_desc *call, char *out,
                              size_t outlen);

/* The mismatch ending, for any exchange in which every rank has arrived: rank 0 (the caller
 * passing a and b) prints the line naming rank 0's call a and rank bad's call b; then every rank
 * of comm exits with status 1. Collective over comm. */
void coll_mismatch_exit(MPI_Comm comm, const coll_desc *a, int bad, const coll_desc *b)
    __attribute__((noreturn));

#endif
