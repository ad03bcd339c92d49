/* prog_errors.c — a small MPI program that misbehaves on purpose, one scenario per run, for
 * test_errors.c (which runs it under mpirun and reads what it prints and how it exits).
 *   mpirun -n 2 prog_errors <scenario> [timeline path | rank]
 * Every rank that gets through prints "prog_errors: rank R finished" last. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/fatal.h"
#include "hvd/device.h"
#include "hvd/hvd.h"
#include "model/wrn.h"
#include "nn/conv2d.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif
#include "train/args.h"
#include "train/elastic.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog_errors <scenario>\n");
        return 2;
    }
    const char *s = argv[1];
    hvd_init(&argc, &argv);
    int rank = hvd_rank();
    float buf[16] = {0};
    if (strcmp(s, "mismatch-op") == 0) {
        if (rank == 0)
            hvd_allreduce(buf, 10, HVD_SUM, "a");
        else
            hvd_broadcast(buf, 10, 0, "a");
    } else if (strcmp(s, "mismatch-reduce") == 0) {
        hvd_allreduce(buf, 10, rank == 0 ? HVD_SUM : HVD_AVERAGE, "grad");
    } else if (strcmp(s, "mismatch-fp16") == 0) {
        hvd_allreduce_ex(buf, 10, HVD_SUM, "grad", rank == 0 ? HVD_COMPRESS_NONE : HVD_COMPRESS_FP16);
    } else if (strcmp(s, "skip-call") == 0) {
        hvd_allreduce(buf, 10, HVD_SUM, "a");
        if (rank != 1)
            hvd_allreduce(buf, 10, HVD_SUM, "b");
        hvd_allreduce(buf, 10, HVD_SUM, "c");
    } else if (strcmp(s, "stop-rank") == 0) {
        /* kill -STOP: the rank is frozen before its next call; only SIGKILL ends it */
        hvd_allreduce(buf, 10, HVD_SUM, "warm-up");
        if (rank == (argc > 2 ? atoi(argv[2]) : 1))
            raise(SIGSTOP);
        hvd_allreduce(buf, 10, HVD_SUM, "grad");
    } else if (strcmp(s, "slow-rank") == 0) {
        if (rank == 1)
            sleep(2); /* past HVD_STALL_CHECK_TIME_SECONDS=1, then it comes */
        hvd_allreduce(buf, 10, HVD_SUM, "grad");
    } else if (strcmp(s, "slow-coordinator") == 0) {
        /* rank 0 comes 2 s late and rank 2 4.5 s late: rank 1 waits 4.5 s in all, past
         * HVD_STALL_SHUTDOWN_TIME_SECONDS=3, but never 3 s for one rank */
        if (rank == 0 || rank == 2)
            usleep(rank == 0 ? 2000000 : 4500000);
        hvd_allreduce(buf, 10, HVD_SUM, "grad");
    } else if (strcmp(s, "lagging-rank") == 0) {
        /* the last rank 5 ms late at each of 200 calls: what the others' waits cost in CPU */
        for (int i = 0; i < 200; i++) {
            if (rank == hvd_size() - 1)
                usleep(5000);
            hvd_allreduce(buf, 10, HVD_SUM, "grad");
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("prog_errors: rank %d cpu %.0f ms\n", rank,
               (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
    } else if (strcmp(s, "mismatch-count") == 0) {
        hvd_allreduce(buf, rank == 0 ? 10 : 12, HVD_SUM, "grad");
    } else if (strcmp(s, "mismatch-name") == 0) {
        hvd_allreduce(buf, 10, HVD_AVERAGE, rank == 0 ? "grad/conv1" : "grad/conv2");
    } else if (strcmp(s, "mismatch-root") == 0) {
        hvd_broadcast(buf, 10, rank == 0 ? 0 : 1, "weights");
    } else if (strcmp(s, "early-shutdown") == 0) {
        if (rank == 0)
            hvd_allreduce(buf, 10, HVD_SUM, "loss");
    } else if (strcmp(s, "early-shutdown-0") == 0) { /* rank 0 leaves; 1 in a call, 2 leaves */
        if (rank == 1)
            hvd_allreduce(buf, 10, HVD_SUM, "loss");
    } else if (strcmp(s, "many-calls") == 0 || strcmp(s, "early-shutdown-late") == 0) {
        /* every kind of call, the ranks at different speeds; then, in early-shutdown-late, every
         * rank but rank 1 makes one more call, which rank 1, shut down, never joins */
        for (int i = 0; i < 20; i++) {
            if (i % 7 == rank)
                usleep(20000);
            hvd_allreduce_async(buf, 4, HVD_SUM, "a", HVD_COMPRESS_NONE);
            hvd_allreduce_async(buf + 4, 4, HVD_AVERAGE, "b", HVD_COMPRESS_FP16);
            hvd_synchronize();
            hvd_broadcast(buf, 10, i % hvd_size(), "w");
            size_t total = 0;
            free(hvd_allgather(buf, (size_t)rank + 1, &total, NULL, "g"));
            if (i % 5 == 0)
                hvd_barrier();
        }
        if (rank != 1 && strcmp(s, "early-shutdown-late") == 0)
            hvd_allreduce(buf, 10, HVD_SUM, "loss");
    } else if (strcmp(s, "skip-bcast-slow") == 0) {
        /* rank argv[2] (default 2) skips a broadcast from rank 0, works 1 s, then shuts down:
         * rank 0 is through the broadcast (it only sends) and in hvd_shutdown by then, while a
         * rank that gets the data through the skipping one (Open MPI's tree) waits for ever */
        int skip = argc > 2 ? atoi(argv[2]) : 2;
        if (argc <= 3) /* any argv[3]: no allreduce, no window, so hvd_shutdown does not wait */
            hvd_allreduce(buf, 10, HVD_SUM, "warm-up");
        if (rank != skip)
            hvd_broadcast(buf, 10, 0, "w");
        else
            sleep(1);
    } else if (strcmp(s, "usr1-early") == 0) { /* ./hvdrun's SIGUSR1 while rank 1 starts up */
        if (rank == 1)
            raise(SIGUSR1); /* kept by hvd_init (base/early_signal.h); no stop handlers here */
        hvd_allreduce(buf, 10, HVD_SUM, "after-usr1");
        printf("prog_errors: rank %d past the allreduce\n", rank);
        fflush(stdout);
    } else if (strcmp(s, "usr1-args") == 0) { /* the same, but the flags are a lab program's */
        args a;
        char err[256], *av[] = {argv[0], NULL};
        args_parse(&a, 1, av, err, sizeof err); /* keeps the signal for stop handlers never put in */
        if (rank == 1)
            raise(SIGUSR1);
        hvd_allreduce(buf, 10, HVD_SUM, "after-usr1");
    } else if (strcmp(s, "fatal-one-rank") == 0) {
        if (rank == 1)
            fatal_error("cannot open checkpoint /nonexistent/ckpt-3.bin");
        hvd_allreduce(buf, 10, HVD_SUM, "waits-forever-without-abort");
    } else if (strcmp(s, "bad-root") == 0) {
        hvd_broadcast(buf, 10, hvd_size() + 3, "weights");
    } else if (strcmp(s, "agree") == 0) {
        /* A correct program must pass the checks untouched. */
        for (int i = 0; i < 5; i++) {
            buf[0] = (float)rank;
            hvd_allreduce(buf, 16, HVD_SUM, "grad");
            hvd_allreduce_async(buf, 8, HVD_AVERAGE, "a", HVD_COMPRESS_NONE);
            hvd_allreduce_async(buf + 8, 8, HVD_AVERAGE, "b", HVD_COMPRESS_NONE);
            hvd_synchronize();
            hvd_broadcast(buf, 16, hvd_size() - 1, "w");
            size_t total;
            float *all = hvd_allgather(buf, (size_t)rank, &total, NULL, "g");
            free(all);
            hvd_barrier();
        }
        if (rank == 0)
            printf("agree: done\n");
    } else if (strcmp(s, "timeline-kill") == 0) {
        hvd_start_timeline(argv[2]);
        for (int i = 0; i < 40; i++) {
            hvd_allreduce(buf, 16, HVD_SUM, i % 2 ? "grad/odd" : "grad/even");
            if (i == 33 && rank == 0)
                raise(SIGKILL); /* no clean-up of any kind */
        }
    } else if (strcmp(s, "pin") == 0) {
        hvd_pin_device(hvd_local_rank(), NULL);
    } else if (strcmp(s, "layers") == 0) {
        /* The layers read their HVDLAB_* choices (HVDLAB_TRACE: hvd_init's first event) */
        char err[256];
        wrn_config cfg = {.dropout = 0.0f};
        if (wrn_config_parse("wrn-10-1", &cfg, err, sizeof err) != 0)
            fatal_error("%s", err);
        wrn_model *m = wrn_create(&cfg, 8, 1, err, sizeof err);
        if (!m)
            fatal_error("%s", err);
#ifdef HVDLAB_DNNL
        const char *algo = conv2d_dnnl_algo();
#else
        const char *algo = "none";
#endif
        printf("prog_errors: rank %d: conv %s, algo %s, layout %s\n", rank, conv2d_backend(), algo,
               wrn_activation_layout(m));
        wrn_free(m);
    } else if (strcmp(s, "elastic") == 0) {
        printf("prog_errors: rank %d: elastic %d\n", rank, elastic_on());
    } else if (strcmp(s, "init-only") == 0) {
        /* hvd_init has read the HVD_* settings; nothing else to do */
    } else {
        fatal_error("prog_errors: unknown scenario %s", s);
    }
    hvd_shutdown();
    printf("prog_errors: rank %d finished\n", rank);
    return 0;
}
