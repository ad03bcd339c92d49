/* vote.c — the non-blocking max-vote of vote.h on its own communicator (MPI_Iallreduce).
 * Public: vote_init, vote_free, vote_start, vote_finish, vote_pending.
 */
#include "guard/vote.h"

static MPI_Comm comm = MPI_COMM_NULL; /* our own: no other traffic can match the vote */
static void (*enter)(const coll_desc *d);
static MPI_Request req = MPI_REQUEST_NULL;
static int sendv, recvv, local; /* local: the value when there is no MPI vote */

void vote_init(MPI_Comm world, void (*enter_check)(const coll_desc *d))
{
    int size = 1;
    MPI_Comm_size(world, &size);
    if (size > 1 && comm == MPI_COMM_NULL)
        MPI_Comm_dup(world, &comm);
    enter = enter_check;
}

int vote_pending(void) { return req != MPI_REQUEST_NULL || local > 0; }

void vote_free(void)
{
    if (req != MPI_REQUEST_NULL)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    local = 0;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    enter = NULL;
}

void vote_start(int mine)
{
    if (vote_pending())
        vote_finish();
    if (comm == MPI_COMM_NULL) { /* before hvd_init, after hvd_shutdown, or a world of one */
        local = mine;
        return;
    }
    if (enter) { /* a rank that votes while another is in a collective is named there */
        coll_desc d = coll_describe(COLL_VOTE, "", 1, -1);
        enter(&d);
    }
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
