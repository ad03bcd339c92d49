/* test_gpu_collectives.c — the collectives on device buffers (NCCL, and staged through the host),
 * checked against the CPU runtime by prog_gpu_coll under child mpiruns:
 *   -n 1                         NCCL with one rank (path=nccl)
 *   -n 2, -n 3                   chosen automatically: host-staged when the ranks outnumber the
 *                                GPUs (path=mpi), else NCCL
 *   -n 1, 2, 3 with HVD_GPU_OPERATIONS=mpi      host-staged, forced; by default (auto) groups
 *                                from 2 MiB summed on the GPUs (through CUDA IPC from 8 MiB),
 *                                smaller ones by the CPU
 *   -n 2, 3 with HVDLAB_STAGED_REDUCE=host      host-staged, every group summed by the CPU
 *   -n 2, 3 with HVDLAB_STAGED_HOST=hugepages   the same from a registered huge-page buffer
 *   -n 2, 3 with HVDLAB_STAGED_REDUCE=gpu       host-staged, every group summed on the GPUs
 *                                (staged_node.h)
 *   -n 2, 3 with HVDLAB_STAGED_REDUCE=ipc       the same with the window in GPU memory shared
 *                                through CUDA IPC (ipc_window.h); where CUDA refuses IPC, the
 *                                host's window serves (said in a note; the emulator with its
 *                                guard must not refuse)
 *   -n 2, rank 1 unable to pin the host's window (the emulator only: HVDLAB_EMU_PIN_FAILS_ON_RANK)
 *                                by default the 384 MiB group still through CUDA IPC, the rest
 *                                added by the CPU, one warning line
 *   HVD_GPU_OPERATIONS=nccl with more ranks than GPUs: one error line, non-zero exit, no hang
 *   -n 1 and 2, release: a model's stream bound by the optimizer's calls and destroyed with the
 *                                GPU context; nothing left bound, no device memory left (the
 *                                latter under the emulator only)
 *   -n 1, a peer that never arrives at NCCL's set-up or shut-down (the emulator only:
 *                                HVDLAB_EMU_NCCL_STALL): one line naming the call, no hang
 *   -n 1 and 2, hung-stream (the emulator only): another stream's work never finishes while
 *                                each collective runs; none may wait for the whole device
 * each with the collective check on in one run, with a timeline whose activities are checked,
 * and 384 MiB allreduced once per path. A device tensor on one rank and a host tensor on another
 * is caught by the collective check: with two GPUs or more on NCCL, with one summed on the GPU.
 *
 * Needs a CUDA build and a GPU; when it skips (exit 77) or fails before it starts follows the one
 * rule of tests/lib/gpu_skip.h. */
#include <stdio.h>
#include <stdlib.h>

#include "lib/gpu_skip.h"

#ifdef HVDLAB_CUDA

#include <cuda_runtime_api.h>
#include <libgen.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/file_io.h"
#include "lib/mpirun_cmd.h"

static char prog[1024], dir[1024];
static int failed, jobs;
static char out[1 << 16];

/* `env ENV mpirun -n np prog args` bounded by limit seconds; stdout+stderr in out; the exit
 * status (124: cut by the limit). */
static int run_for(int limit, const char *env, int np, const char *args)
{
    char dflt[128], cmd[4096];
    snprintf(cmd, sizeof cmd, "env %s timeout %d %s -n %d %s %s 2>&1", env, limit,
             mpirun_cmd(dflt, sizeof dflt), np, prog, args);
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("cannot run: %s\n", cmd);
        exit(EXIT_FAILURE);
    }
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    jobs++;
    printf("== %s -n %d %s: %s", env, np, args, out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(const char *env, int np, const char *args) { return run_for(300, env, np, args); }

static void expect(int ok, const char *fmt, const char *what)
{
    if (ok)
        return;
    failed++;
    printf("FAIL: ");
    printf(fmt, what);
    printf("\n");
}

static size_t count(const char *hay, const char *needle)
{
    size_t k = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        k++;
    return k;
}

/* Whether a refusal of CUDA IPC is a failure: under the emulator with its guard (on by default
 * outside ASan builds), which shares device blocks between processes; a GPU may refuse. */
static int ipc_required(void)
{
#if defined(HVDLAB_CUDA_EMU) && !defined(__SANITIZE_ADDRESS__)
    const char *g = getenv("HVDLAB_EMU_GUARD");
    return !(g && strcmp(g, "0") == 0);
#else
    return 0;
#endif
}

/* A run that must pass on the expected path; its timeline must show that path's activities. */
static void passing(const char *env, int np, const char *want_path, int with_timeline)
{
    char tl[1200] = "", full[1600], path_line[32];
    if (with_timeline)
        snprintf(tl, sizeof tl, "HVD_TIMELINE=%s/gpu_timeline.%ld.json", dir, (long)getpid());
    snprintf(full, sizeof full, "%s %s HVD_CHECK_COLLECTIVES=%d", env, tl, np % 2);
    const int big = np == 1 || strstr(env, "mpi") != NULL; /* the 384 MiB case too */
    int rc = run(full, np, big ? "big" : "");
    snprintf(path_line, sizeof path_line, "path=%s\n", want_path);
    expect(rc == 0, "%s: exit status not 0", full);
    expect(strstr(out, path_line) != NULL, "%s: not on the expected path", full);
    expect(strstr(out, ", 0 failures") != NULL, "%s: failures in the checks", full);
    const int by_ipc = strstr(env, "HVDLAB_STAGED_REDUCE=ipc") != NULL,
              by_gpu = by_ipc || strstr(env, "HVDLAB_STAGED_REDUCE=gpu") != NULL,
              by_cpu = strstr(env, "HVDLAB_STAGED_REDUCE=host") != NULL;
    const int mpi = strcmp(want_path, "mpi") == 0, automatic = mpi && !by_gpu && !by_cpu;
    /* ipc (and auto): every rank opened the others' slots, or every rank went to the host's
     * window */
    const int ipc_refused = (by_ipc || automatic) &&
                            strstr(out, "the host's shared window serves instead");
    if (ipc_refused) {
        printf("note: %s: CUDA IPC refused here, the host's window served\n", full);
        expect(!ipc_required(), "%s: CUDA IPC refused under the emulator's guard", full);
    }
    if (by_gpu && mpi) {
        char says[160];
        snprintf(says, sizeof says, "HVDLAB_STAGED_REDUCE=%s: %s", by_ipc ? "ipc" : "gpu",
                 np == 1  ? "one rank, nothing to add"
                 : by_ipc ? "summed on the GPUs, their window shared by CUDA IPC"
                          : "summed on the GPUs");
        expect(strstr(out, says) != NULL, "%s: rank 0's line does not say who adds", full);
    }
    if (automatic)
        expect((strstr(out, "; summed on the GPUs from 2 MiB (through CUDA IPC from 8 MiB), by "
                            "the CPU below") != NULL) == (np > 1),
               "%s: rank 0's line does not say who adds (only with several ranks)", full);
    if (by_cpu)
        expect(strstr(out, "summed on the GPUs") == NULL, "%s: the GPUs add, asked for the CPU",
               full);
    if (!with_timeline)
        return;
    char file[1300];
    snprintf(file, sizeof file, "%s/gpu_timeline.%ld.json", dir, (long)getpid());
    size_t len = 0;
    char *t = file_read(file, &len);
    remove(file); /* read; the next job writes its own */
    expect(t != NULL, "%s: no timeline written", file);
    if (!t)
        return;
    if (strcmp(want_path, "nccl") == 0) {
        expect(strstr(t, "\"NCCL_ALLREDUCE\"") != NULL, "%s: no NCCL_ALLREDUCE", file);
    } else if (automatic && np > 1) {
        /* the 1 Mi-float cases on the GPUs through the host's window, the 384 MiB one (where
         * run) through the GPUs' (unless CUDA refused IPC), the small ones through the host
         * buffer */
        expect(strstr(t, "\"STAGED_GPU_ALLREDUCE\"") != NULL &&
                   strstr(t, "\"MEMCPY_IN_HOST_BUFFER\"") != NULL,
               "%s: want both STAGED_GPU_ALLREDUCE and MEMCPY_IN_HOST_BUFFER", file);
        expect((strstr(t, "\"IPC_GPU_ALLREDUCE\"") != NULL) == (big && !ipc_refused),
               "%s: IPC_GPU_ALLREDUCE missing for the 384 MiB group, or there without it or "
               "though CUDA IPC was refused", file);
    } else if (by_gpu && np > 1) {
        /* the pieces' copies and sums overlap: one span; no device group takes staged.c's
         * copy into the host buffer (the CPU reference's host tensors still take the host's
         * own passes) */
        const char *ipc = "\"IPC_GPU_ALLREDUCE\"", *host = "\"STAGED_GPU_ALLREDUCE\"";
        const int on_gpu = by_ipc && !ipc_refused; /* the window on the GPUs */
        const char *want = on_gpu ? ipc : host, *not = on_gpu ? host : ipc;
        expect(strstr(t, want) != NULL, "%s: its span is not in the timeline", want);
        expect(strstr(t, not) == NULL, "%s: in the timeline, the other window's span", not);
        expect(strstr(t, "\"MEMCPY_IN_HOST_BUFFER\"") == NULL,
               "%s: MEMCPY_IN_HOST_BUFFER on the GPU-summed path", file);
    } else {
        expect(strstr(t, "\"MEMCPY_IN_HOST_BUFFER\"") != NULL, "%s: no MEMCPY_IN_HOST_BUFFER",
               file);
        /* the host path's pass: shared memory or the single copy on one host, the ring across
         * hosts */
        expect(strstr(t, "\"SHM_ALLREDUCE\"") != NULL || strstr(t, "\"CMA_ALLREDUCE\"") != NULL ||
                   strstr(t, "\"MPI_ALLREDUCE\"") != NULL,
               "%s: no SHM_ALLREDUCE, CMA_ALLREDUCE or MPI_ALLREDUCE", file);
        expect(strstr(t, "\"MEMCPY_OUT_HOST_BUFFER\"") != NULL, "%s: no MEMCPY_OUT_HOST_BUFFER",
               file);
    }
    free(t);
}

/* A model's stream bound by the DistributedOptimizer's calls, then destroyed with the GPU
 * context: the collectives after must not use it (the emulator stops at a destroyed stream's
 * use; on a GPU that is undefined, so there the check is that nothing is left bound), and the
 * model leaves no device memory behind (the emulator only). */
static void released_context(int np)
{
    char what[64];
    snprintf(what, sizeof what, "release -n %d", np);
    int rc = run("", np, "release");
    expect(rc == 0, "%s: exit status not 0", what);
    expect(strstr(out, ", 0 failures") != NULL, "%s: failures in the checks", what);
}

#ifdef HVDLAB_CUDA_EMU
/* A peer that never arrives at NCCL's set-up, or never leaves its shut-down (the emulator's
 * HVDLAB_EMU_NCCL_STALL): after HVD_STALL_SHUTDOWN_TIME_SECONDS the rank stops with one line
 * naming the call and itself, where a blocking communicator waited for ever. */
static void nccl_stalls(const char *step, const char *line)
{
    char env[160], what[200];
    snprintf(env, sizeof env, "HVDLAB_EMU_NCCL_STALL=%s HVD_STALL_SHUTDOWN_TIME_SECONDS=2", step);
    snprintf(what, sizeof what, "%s -n 1", env);
    int rc = run_for(60, env, 1, "");
    expect(rc != 0 && rc != 124, "%s: want a failure, not success or a timeout", what);
    expect(count(out, "hvdlab: error:") == 1, "%s: want exactly one error line", what);
    expect(strstr(out, line) != NULL, "%s: the line does not name the call and the rank", what);
}

/* Another stream holds work that never finishes while each device collective runs (prog_gpu_coll
 * hung-stream: the emulator's emu_stream_hang), as one with a NCCL kernel whose peer died. The
 * collectives must still finish with the CPU's bits: no cudaDeviceSynchronize with no stream
 * bound, no cudaFree, cudaFreeHost or cudaHostUnregister of a buffer outgrown (each waits for
 * the whole device; the emulator stops there with one line, a GPU would block for ever). */
static void hung_stream(const char *env, int np)
{
    char what[160];
    snprintf(what, sizeof what, "%s%s-n %d hung-stream", env, *env ? " " : "", np);
    int rc = run_for(120, env, np, "hung-stream");
    expect(rc == 0, "%s: exit status not 0", what);
    expect(strstr(out, ", 0 failures") != NULL, "%s: failures in the checks", what);
    expect(strstr(out, "waits for the whole device") == NULL, "%s: a collective waited for the "
           "whole device", what);
}

/* A rank that cannot pin the host's window (the emulator refuses cudaHostRegister in rank 1, as
 * a locked-memory limit may on a GPU machine): by default (auto) the groups from 8 MiB still go
 * through the GPUs' window, the smaller ones are added by the CPU, and rank 1 says so in one
 * line. The bits are still the CPU runtime's. */
static void host_window_unpinned(void)
{
    const char *what = "HVDLAB_EMU_PIN_FAILS_ON_RANK=1 -n 2";
    char file[1300], env[1500];
    snprintf(file, sizeof file, "%s/gpu_timeline_unpinned.%ld.json", dir, (long)getpid());
    snprintf(env, sizeof env, "HVDLAB_EMU_PIN_FAILS_ON_RANK=1 HVD_GPU_OPERATIONS=mpi "
             "HVD_TIMELINE=%s", file);
    const int rc = run(env, 2, "big");
    expect(rc == 0, "%s: exit status not 0", what);
    expect(strstr(out, ", 0 failures") != NULL, "%s: failures in the checks", what);
    expect(count(out, "cudaHostRegister of the") == 1 &&
               strstr(out, "rank 1: cudaHostRegister of the") != NULL &&
               strstr(out, "the CPU adds the groups below 8 MiB instead (the GPUs' window the "
                           "rest)") != NULL,
           "%s: want one warning, from rank 1, saying who adds what", what);
    size_t len = 0;
    char *t = file_read(file, &len);
    remove(file);
    expect(t != NULL, "%s: no timeline written", what);
    if (!t)
        return;
    expect(strstr(t, "\"IPC_GPU_ALLREDUCE\"") != NULL,
           "%s: the 384 MiB group not through the GPUs' window", what);
    expect(strstr(t, "\"STAGED_GPU_ALLREDUCE\"") == NULL,
           "%s: a group through the host's window, which rank 1 could not pin", what);
    expect(strstr(t, "\"MEMCPY_IN_HOST_BUFFER\"") != NULL,
           "%s: the small groups not added by the CPU", what);
    free(t);
}
#endif

int main(int argc, char **argv)
{
    (void)argc;
    int ngpu = 0;
    const int rc = gpu_skip_status(&ngpu);
    if (rc != 0)
        return rc;
    char self[1024];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(prog, sizeof prog, "%s/../progs/prog_gpu_coll", dirname(self));
    snprintf(dir, sizeof dir, "%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    passing("", 1, "nccl", 1);
    passing("HVD_GPU_OPERATIONS=mpi", 1, "mpi", 1);
    passing("HVD_GPU_OPERATIONS=mpi HVDLAB_STAGED_REDUCE=gpu", 1, "mpi", 0);
    for (int np = 2; np <= 3; np++) {
        passing("", np, ngpu >= np ? "nccl" : "mpi", 1);
        passing("HVD_GPU_OPERATIONS=mpi", np, "mpi", np == 2);
        passing("HVD_GPU_OPERATIONS=mpi HVDLAB_STAGED_REDUCE=host", np, "mpi", 1);
        /* the staged buffer on huge pages registered with CUDA (staged.c) */
        passing("HVD_GPU_OPERATIONS=mpi HVDLAB_STAGED_REDUCE=host HVDLAB_STAGED_HOST=hugepages",
                np, "mpi", np == 2);
        /* summed on the GPUs: automatic staging (one GPU) and forced, fp32 and fp16 */
        passing("HVD_GPU_OPERATIONS=mpi HVDLAB_STAGED_REDUCE=gpu", np, "mpi", 1);
        if (ngpu < np)
            passing("HVDLAB_STAGED_REDUCE=gpu HVD_COMPRESSION=fp16 HVD_FUSION_THRESHOLD=4K", np,
                    "mpi", 1);
        /* the window on the GPUs, shared through CUDA IPC */
        passing("HVD_GPU_OPERATIONS=mpi HVDLAB_STAGED_REDUCE=ipc", np, "mpi", 1);
        if (ngpu < np)
            passing("HVDLAB_STAGED_REDUCE=ipc HVD_COMPRESSION=fp16 HVD_FUSION_THRESHOLD=4K", np,
                    "mpi", 1);
        passing("HVD_COMPRESSION=fp16 HVD_FUSION_THRESHOLD=4K", np, ngpu >= np ? "nccl" : "mpi",
                0);
    }
#ifdef HVDLAB_CUDA_EMU
    if (ipc_required()) /* the GPUs' window must open: the emulator with its guard */
        host_window_unpinned();
    nccl_stalls("init", "hvdlab: error: [rank 0] NCCL set-up: ncclCommInitRankConfig: no "
                "progress in NCCL for 2 s");
    nccl_stalls("finalize", "hvdlab: error: [rank 0] NCCL shut-down: ncclCommFinalize: no "
                "progress in NCCL for 2 s");
    hung_stream("", 1);
    hung_stream("HVD_GPU_OPERATIONS=mpi", 2);
    hung_stream("HVDLAB_STAGED_REDUCE=host HVDLAB_STAGED_HOST=hugepages", 2);
    hung_stream("HVDLAB_STAGED_REDUCE=ipc", 2);
#endif
    released_context(1);
    released_context(2);
    if (ngpu < 2) { /* NCCL refuses two ranks on one GPU: said in one line, not a hang */
        int rc = run("HVD_GPU_OPERATIONS=nccl", 2, "");
        expect(rc != 0 && rc != 124, "%s: want a failure, not success or a timeout",
               "HVD_GPU_OPERATIONS=nccl -n 2");
        expect(count(out, "hvdlab: error:") == 1, "%s: want exactly one error line",
               "HVD_GPU_OPERATIONS=nccl -n 2");
        expect(strstr(out, "HVD_GPU_OPERATIONS=nccl, but ranks 0 and 1 share GPU") != NULL,
               "%s: the line does not say which ranks share a GPU",
               "HVD_GPU_OPERATIONS=nccl -n 2");
        /* summed on the GPUs: a device tensor on one rank and a host one on the other would
         * meet in different windows; the collective check names it */
        const char *summed = "HVDLAB_STAGED_REDUCE=gpu mismatch-where";
        rc = run("HVD_CHECK_COLLECTIVES=1 HVDLAB_STAGED_REDUCE=gpu", 2, "mismatch-where");
        expect(rc != 0 && rc != 124, "%s: want a failure", summed);
        expect(strstr(out, "on the GPU (host-staged, summed on the GPUs)") &&
                   strstr(out, "on the host"),
               "%s: the mismatch line does not say where each tensor lies", summed);
    } else { /* NCCL: a device tensor on one rank, a host one on the other */
        int rc = run("HVD_CHECK_COLLECTIVES=1", 2, "mismatch-where");
        expect(rc != 0 && rc != 124, "%s: want a failure", "mismatch-where");
        expect(strstr(out, "on the GPU (NCCL)") && strstr(out, "on the host"),
               "%s: the mismatch line does not say where each tensor lies", "mismatch-where");
    }
    printf("test_gpu_collectives: %d jobs, %d failure(s)\n", jobs, failed);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#else

int main(void) { return gpu_skip_status(NULL); }

#endif
