/* coll_check.c — compare collective calls across ranks before running them. See coll_check.h.
 * Public: coll_kind_name, coll_describe, coll_desc_match, coll_desc_format, coll_check. */
#include "coll/coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"

const char *coll_kind_name(int kind)
{
    switch (kind) {
    case COLL_ALLREDUCE: return "allreduce";
    case COLL_BROADCAST: return "broadcast";
    case COLL_ALLGATHER: return "allgather";
    case COLL_BARRIER: return "barrier";
    case COLL_SYNCHRONIZE: return "synchronize";
    case COLL_SHUTDOWN: return "shutdown";
    default: return "unknown";
    }
}

coll_desc coll_describe(coll_kind kind, const char *name, size_t count, int root)
{
    coll_desc d;
    memset(&d, 0, sizeof d); /* the descriptor travels as bytes: no stale padding */
    d.kind = (int)kind;
    d.root = kind == COLL_BROADCAST ? root : -1;
    d.count = (long long)count;
    snprintf(d.name, sizeof d.name, "%s", name ? name : "");
    return d;
}

int coll_desc_match(const coll_desc *a, const coll_desc *b)
{
    if (a->kind != b->kind || a->root != b->root || strcmp(a->name, b->name) != 0)
        return 0;
    return a->kind == COLL_ALLGATHER || a->count == b->count;
}

void coll_desc_format(const coll_desc *d, char *out, size_t outlen)
{
    switch (d->kind) {
    case COLL_BARRIER:
    case COLL_SHUTDOWN:
        snprintf(out, outlen, "%s()", coll_kind_name(d->kind));
        break;
    case COLL_SYNCHRONIZE:
        snprintf(out, outlen, "synchronize(%lld queued)", d->count);
        break;
    case COLL_BROADCAST:
        snprintf(out, outlen, "broadcast(name=\"%s\", count=%lld, root=%d)", d->name, d->count,
                 d->root);
        break;
    default:
        snprintf(out, outlen, "%s(name=\"%s\", count=%lld)", coll_kind_name(d->kind), d->name,
                 d->count);
    }
}

void coll_check(MPI_Comm comm, coll_kind kind, const char *name, size_t count, int root)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    coll_desc mine = coll_describe(kind, name, count, root);
    coll_desc *all = malloc((size_t)size * sizeof *all);
    if (!all)
        fatal_error("collective check: out of memory");
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, comm);
    int bad = -1;
    for (int r = 1; r < size && bad < 0; r++)
        if (!coll_desc_match(&all[0], &all[r]))
            bad = r;
    if (bad < 0) {
        free(all);
        return;
    }
    /* Every rank saw the same table, so every rank reaches this point: no one is left waiting. */
    if (rank == 0) {
        char a[160], b[160];
        coll_desc_format(&all[0], a, sizeof a);
        coll_desc_format(&all[bad], b, sizeof b);
        fprintf(stderr,
                "hvdlab: error: collective mismatch: rank 0 called %s but rank %d called %s "
                "(every rank must make the same collective calls in the same order)\n",
                a, bad, b);
        fflush(stderr);
    }
    free(all);
    MPI_Barrier(comm); /* the line is out before anyone exits */
    MPI_Finalize();
    exit(EXIT_FAILURE);
}
