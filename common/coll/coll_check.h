/* coll_check.h — HVD_CHECK_COLLECTIVES: ranks compare each collective call before running it.
 *
 * A rank that calls allreduce("a") while another calls broadcast("b") (or the same call with
 * another count, root or name, or hvd_shutdown) would otherwise hang forever inside MPI. Here
 * every rank first exchanges a small descriptor of the call it is about to make; on a mismatch,
 * rank 0 prints one line naming both ranks and both calls and every rank exits non-zero.
 */
#ifndef HVDLAB_COLL_CHECK_H
#define HVDLAB_COLL_CHECK_H

#include <mpi.h>
#include <stddef.h>

typedef enum {
    COLL_ALLREDUCE,
    COLL_BROADCAST,
    COLL_ALLGATHER,
    COLL_BARRIER,
    COLL_SYNCHRONIZE,
    COLL_SHUTDOWN
} coll_kind;

#define COLL_NAME_MAX 64

typedef struct {
    int kind;
    int root;    /* broadcast only, else -1 */
    long long count; /* elements; allgather counts may differ between ranks */
    char name[COLL_NAME_MAX];
} coll_desc;

const char *coll_kind_name(int kind);
coll_desc coll_describe(coll_kind kind, const char *name, size_t count, int root);
/* 1 when a and b are the same call (allgather ignores count). */
int coll_desc_match(const coll_desc *a, const coll_desc *b);
/* "allreduce(name="x", count=10)" */
void coll_desc_format(const coll_desc *d, char *out, size_t outlen);

/* Collective over comm: returns when every rank described the same call; otherwise stops the
 * job (one line from rank 0, exit status 1 on every rank). */
void coll_check(MPI_Comm comm, coll_kind kind, const char *name, size_t count, int root);

#endif
