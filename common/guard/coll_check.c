/* coll_check.c — compare collective calls across ranks before running them. See coll_check.h.
 * Public: coll_kind_name, coll_describe, coll_describe_allreduce, coll_desc_match,
 *         coll_desc_format, coll_desc_need_detail, coll_check, coll_mismatch_exit,
 *         coll_early_shutdown_line. */
#include "guard/coll_check.h"

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
    case COLL_VOTE: return "vote";
    default: return "unknown";
    }
}

coll_desc coll_describe(coll_kind kind, const char *name, size_t count, int root)
{
    coll_desc d;
    memset(&d, 0, sizeof d); /* the descriptor travels as bytes: no stale padding */
    d.kind = (int)kind;
    d.root = kind == COLL_BROADCAST ? root : -1;
    d.op = -1;
    d.count = (long long)count;
    snprintf(d.name, sizeof d.name, "%s", name ? name : "");
    return d;
}

coll_desc coll_describe_allreduce(const char *name, size_t count, hvd_op op, int fp16)
{
    coll_desc d = coll_describe(COLL_ALLREDUCE, name, count, -1);
    d.op = (int)op;
    d.fp16 = fp16;
    return d;
}

int coll_desc_match(const coll_desc *a, const coll_desc *b)
{
    if (a->kind != b->kind || a->root != b->root || strcmp(a->name, b->name) != 0 ||
        a->op != b->op || a->fp16 != b->fp16 || a->gpu != b->gpu)
        return 0;
    return a->kind == COLL_ALLGATHER || a->count == b->count;
}

int coll_desc_need_detail(const coll_desc *a, const coll_desc *b)
{
    int d = a->kind == COLL_ALLREDUCE && b->kind == COLL_ALLREDUCE &&
            (a->op != b->op || a->fp16 != b->fp16);
    return d | (a->gpu != b->gpu ? COLL_DETAIL_WHERE : 0);
}

static void format_call(const coll_desc *d, int detail, char *out, size_t outlen)
{
    switch (d->kind) {
    case COLL_BARRIER:
    case COLL_SHUTDOWN:
    case COLL_VOTE:
        snprintf(out, outlen, "%s()", coll_kind_name(d->kind));
        break;
    case COLL_SYNCHRONIZE:
        snprintf(out, outlen, "synchronize(%lld queued)", d->count);
        break;
    case COLL_BROADCAST:
        snprintf(out, outlen, "broadcast(name=\"%s\", count=%lld, root=%d)", d->name, d->count,
                 d->root);
        break;
    case COLL_ALLREDUCE:
        if (detail & COLL_DETAIL_OP) {
            snprintf(out, outlen, "allreduce(name=\"%s\", count=%lld, op=%s, compression=%s)",
                     d->name, d->count, d->op == HVD_SUM ? "sum" : "average",
                     d->fp16 ? "fp16" : "none");
            break;
        }
        /* fall through */
    default:
        snprintf(out, outlen, "%s(name=\"%s\", count=%lld)", coll_kind_name(d->kind), d->name,
                 d->count);
    }
}

void coll_desc_format(const coll_desc *d, int detail, char *out, size_t outlen)
{
    format_call(d, detail, out, outlen);
    size_t o = strlen(out);
    if ((detail & COLL_DETAIL_WHERE) && o && out[o - 1] == ')') /* inside the parentheses */
        snprintf(out + o - 1, outlen - (o - 1), ", %s)",
                 d->gpu == COLL_GPU_NCCL     ? "on the GPU (NCCL)"
                 : d->gpu == COLL_GPU_SUMMED ? "on the GPU (host-staged, summed on the GPUs)"
                                             : "on the host");
}

void coll_early_shutdown_line(int gone, int waiting, const coll_desc *call, char *out,
                              size_t outlen)
{
    char c[200];
    coll_desc_format(call, 0, c, sizeof c);
    snprintf(out, outlen, "rank %d has shut down (hvd_shutdown) while rank %d is in %s, which "
             "rank %d will never join (every rank must make the same collective calls, and none "
             "once another rank has shut down); stopping every rank", gone, waiting, c, gone);
}

void coll_mismatch_exit(MPI_Comm comm, const coll_desc *a, int bad, const coll_desc *b)
{
    if (a && b) {
        char sa[200], sb[200];
        int detail = coll_desc_need_detail(a, b);
        coll_desc_format(a, detail, sa, sizeof sa);
        coll_desc_format(b, detail, sb, sizeof sb);
        fprintf(stderr,
                "hvdlab: error: [rank 0] collective mismatch: rank 0 called %s but rank %d called "
                "%s (every rank must make the same collective calls in the same order)\n",
                sa, bad, sb);
        fflush(stderr);
    }
    MPI_Barrier(comm); /* the line is out before anyone exits */
    MPI_Finalize();
    exit(EXIT_FAILURE);
}

void coll_check(MPI_Comm comm, const coll_desc *mine)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    coll_desc *all = malloc((size_t)size * sizeof *all);
    if (!all)
        fatal_error("collective check: out of memory");
    MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, comm);
    int bad = -1;
    for (int r = 1; r < size && bad < 0; r++)
        if (!coll_desc_match(&all[0], &all[r]))
            bad = r;
    if (bad < 0) {
        free(all);
        return;
    }
    /* Every rank saw the same table, so every rank reaches this point: no one is left waiting. */
    coll_desc a = all[0], b = all[bad];
    free(all);
    coll_mismatch_exit(comm, rank == 0 ? &a : NULL, bad, &b);
}
