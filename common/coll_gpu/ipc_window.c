/* ipc_window.c — the host's ranks' slots in GPU memory, shared through CUDA IPC. See
 * ipc_window.h. Public: ipc_window_open, ipc_window_close. */
#ifdef HVDLAB_CUDA

#include "coll_gpu/ipc_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/fatal.h"

/* 1 on every rank when ok is 1 on every rank. */
static int all_ok(int ok, MPI_Comm comm)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* Records a failed call's reason (the first one) and clears CUDA's sticky last error. */
static int failed(cudaError_t e, const char *call, char *why, size_t len)
{
    if (why[0] == '\0')
        snprintf(why, len, "%s failed (%s)", call, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 0;
}

/* Closes the others' slots opened so far (non-NULL), after every rank has stopped opening. */
static void close_opened(ipc_window *w)
{
    for (int r = 0; r < w->size; r++)
        if (r != w->me && w->bases[r])
            cudaIpcCloseMemHandle(w->bases[r]);
}

static void empty(ipc_window *w, MPI_Comm comm)
{
    close_opened(w);
    MPI_Barrier(comm); /* nobody has this rank's slots open any more */
    if (w->mine)
        cudaFree(w->mine);
    free(w->bases);
    memset(w, 0, sizeof *w);
}

int ipc_window_open(ipc_window *w, MPI_Comm comm, size_t piece, char *why, size_t len)
{
    memset(w, 0, sizeof *w);
    why[0] = '\0';
    MPI_Comm_size(comm, &w->size);
    MPI_Comm_rank(comm, &w->me);
    w->bases = calloc((size_t)w->size, sizeof *w->bases);
    cudaIpcMemHandle_t mine, *all = calloc((size_t)w->size, sizeof *all);
    if (!w->bases || !all)
        fatal_error("GPU-summed staging through CUDA IPC: out of memory for %d ranks", w->size);
    memset(&mine, 0, sizeof mine);
    /* 2 MiB multiples: CUDA may carve a smaller cudaMalloc out of a larger block, and IPC
     * shares the whole block, neighbours included (CUDA C++ Programming Guide, "Interprocess
     * Communication") */
    const size_t align = (size_t)2 << 20, bytes = (2 * piece + align - 1) / align * align;
    cudaError_t e = cudaMalloc((void **)&w->mine, bytes);
    int ok = e == cudaSuccess || failed(e, "cudaMalloc of the slots", why, len);
    if (!ok)
        w->mine = NULL;
    if (ok && (e = cudaIpcGetMemHandle(&mine, w->mine)) != cudaSuccess)
        ok = failed(e, "cudaIpcGetMemHandle", why, len);
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, comm);
    if (all_ok(ok, comm)) {
        w->bases[w->me] = w->mine;
        for (int r = 0; r < w->size && ok; r++) {
            void *p = NULL;
            if (r == w->me)
                continue;
            e = cudaIpcOpenMemHandle(&p, all[r], cudaIpcMemLazyEnablePeerAccess);
            if (e == cudaSuccess)
                w->bases[r] = p;
            else
                ok = failed(e, "cudaIpcOpenMemHandle", why, len);
        }
    } else {
        ok = 0;
    }
    free(all);
    if (all_ok(ok, comm))
        return 0;
    empty(w, comm);
    return -1;
}

void ipc_window_close(ipc_window *w, MPI_Comm comm)
{
    if (w->bases)
        empty(w, comm);
}

#endif
