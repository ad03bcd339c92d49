/* profile_mpi.c — the MPI calls under the collectives, counted through MPI's profiling interface
 * (PMPI): these definitions stand in front of the library's, count when HVD_PROFILE is on, and
 * call the library's PMPI_ entry point. This is how mpitrace sees every MPI call without a hook
 * in the code that makes it. Bytes: what the call sends (or receives, for a receive).
 * Public: the MPI functions below. */
#include <mpi.h>

#include "base/timer.h"
#include "prof/profile_state.h"

static double nbytes(int count, MPI_Datatype type)
{
    int size = 0;
    if (count > 0)
        PMPI_Type_size(type, &size);
    return (double)count * size;
}

/* Wraps one call of op moving nb bytes; the call's result is passed through. */
#define COUNTED(op, nb, call)                                                              \
    do {                                                                                      \
        if (!profile_S.on)                                                                    \
            return call;                                                                      \
        double t_ = timer_seconds();                                                          \
        int rc_ = call;                                                                       \
        profile_count *c_ = &profile_S.c[op];                                                 \
        c_->calls += 1;                                                                       \
        c_->bytes += (nb);                                                                    \
        c_->seconds += timer_seconds() - t_;                                                  \
        return rc_;                                                                           \
    } while (0)

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    COUNTED(PROFILE_MPI_ISEND, nbytes(count, type),
            PMPI_Isend(buf, count, type, dest, tag, comm, req));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    COUNTED(PROFILE_MPI_IRECV, nbytes(count, type),
            PMPI_Irecv(buf, count, type, src, tag, comm, req));
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    COUNTED(PROFILE_MPI_SEND, nbytes(count, type), PMPI_Send(buf, count, type, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
             MPI_Status *st)
{
    COUNTED(PROFILE_MPI_RECV, nbytes(count, type),
            PMPI_Recv(buf, count, type, src, tag, comm, st));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
    COUNTED(PROFILE_MPI_SENDRECV, nbytes(scount, stype),
            PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm,
                          st));
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    COUNTED(PROFILE_MPI_WAIT, 0, PMPI_Wait(req, st));
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status *sts)
{
    COUNTED(PROFILE_MPI_WAITALL, 0, PMPI_Waitall(n, reqs, sts));
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    COUNTED(PROFILE_MPI_TEST, 0, PMPI_Test(req, flag, st));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    COUNTED(PROFILE_MPI_BCAST, nbytes(count, type), PMPI_Bcast(buf, count, type, root, comm));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    COUNTED(PROFILE_MPI_ALLREDUCE, nbytes(count, type),
            PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    COUNTED(PROFILE_MPI_ALLGATHER, nbytes(scount, stype),
            PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    COUNTED(PROFILE_MPI_ALLGATHERV, nbytes(scount, stype),
            PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Barrier(MPI_Comm comm) { COUNTED(PROFILE_MPI_BARRIER, 0, PMPI_Barrier(comm)); }
