/* vote.c — the non-blocking max-vote of vote.h on its own communicator (MPI_Iallreduce).
 * Public: vote_start, vote_finish, vote_pending.
 */
#include "coll/vote.h"

#include <mpi.h>

#include "coll/hvd.h"

static MPI_Comm comm = MPI_COMM_NULL; /* our own: no other traffic can match the vote */
static MPI_Request req = MPI_REQUEST_NULL;
static int sendv, recvv, local; /* local: the value when there is no MPI vote */

int vote_pending(void) { return req != MPI_REQUEST_NULL || local > 0; }

void vote_start(int mine)
{
    if (vote_pending())
        vote_finish();
    if (!hvd_is_initialized() || hvd_size() == 1) {
        local = mine;
        return;
    }
    if (comm == MPI_COMM_NULL) /* collective, and every rank votes at the same step */
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    sendv = mine;
    MPI_Iallreduce(&sendv, &recvv, 1, MPI_INT, MPI_MAX, comm, &req);
}

int vote_finish(void)
{
    if (req == MPI_REQUEST_NULL) {
        int v = local;
        local = 0;
        return v;
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return recvv;
}
