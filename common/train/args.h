/* args.h — the one command-line parser of every step program (getopt_long).
 *
 *   args a;
 *   char err[256];
 *   int rc = args_parse(&a, argc, argv, err, sizeof err);
 *   if (rc < 0) fatal_error("%s", err);   // every rank exits non-zero, one line names the flag
 *   if (rc > 0) { hvd_shutdown(); return 0; }   // --help: usage printed (by rank 0)
 *
 * Flags (DESIGN.md §4, the lab's argparse flags; defaults sized for a 2-core laptop):
 *   --epochs N  --batch-size N  --val-batch-size N  --base-lr X  --momentum X  --wd X
 *   --warmup-epochs N  --model wrn-D-K  --dropout X  --data-dir DIR  --train-subset N
 *   --test-subset N  --use-checkpointing  --log-dir DIR  --restart  --seed N  --target-accuracy X
 *   --patience N  --optimizer sgd|novograd  --precision fp32|bf16|fp16  --help
 * `--flag=value` and `--flag value` both work. Positional arguments are an error.
 * One table in args.c (FLAGS: name, kind, bounds, field offset, messages, help) drives
 * getopt_long, the checks and the usage text: a new flag is a field here and a row there.
 *
 * Seeds: `seed` is the data seed (shuffle and augmentation), identical on every rank.
 * args_init_seed mixes the rank in for the initial weights, so each process draws its own
 * initial weights as in every framework (DESIGN.md §5) and a missing broadcast is visible.
 *
 * Public: args_defaults, args_parse, args_usage, args_init_seed.
 */
#ifndef HVDLAB_ARGS_H
#define HVDLAB_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/precision.h" /* precision */
#include "model/wrn.h"       /* wrn_config */
#include "optim/optim.h" /* opt_kind */

#define ARGS_PATH_LEN 1024

typedef struct {
    int epochs;             /* --epochs, >= 1 (default 3) */
    int batch_size;         /* --batch-size, >= 1 (128) */
    int val_batch_size;     /* --val-batch-size, >= 1 (256) */
    double base_lr;         /* --base-lr, > 0 (0.01, the lab's; before any × size) */
    double momentum;        /* --momentum, in [0, 1) (0.9) */
    double wd;              /* --wd, >= 0 (5e-6; Keras L2: wd·Σw² in the loss) */
    int warmup_epochs;      /* --warmup-epochs, >= 0 (5; 0 = no warmup) */
    wrn_config model;       /* --model wrn-D-K (wrn-16-1) with --dropout (0.01); its device
                               is the GPU hvd_pin_device pinned, else the CPU (no flag) */
    char model_name[WRN_NAME_LEN];   /* "wrn-16-1" as given */
    char data_dir[ARGS_PATH_LEN];    /* --data-dir, "" = the default search (dataset.h) */
    size_t train_subset;    /* --train-subset, 0 = all 60,000 (default 12,000) */
    size_t test_subset;     /* --test-subset, 0 = all 10,000 (default 2,000) */
    int use_checkpointing;  /* --use-checkpointing (off) */
    char log_dir[ARGS_PATH_LEN];     /* --log-dir (./logs) */
    int restart;            /* --restart: move --log-dir's checkpoints aside first (off) */
    uint64_t seed;          /* --seed (42): the data seed, the same on every rank */
    double target_accuracy; /* --target-accuracy, in [0, 1] (0.85) */
    int patience;           /* --patience, >= 1 (2) */
    opt_kind optimizer;     /* --optimizer sgd|novograd (sgd) */
    precision precision;    /* --precision fp32|bf16|fp16 (fp32); one this build does not train
                               in is refused at parse time, one line; an accepted one is applied
                               to the layers then (precision_apply, model/precision.h) */
} args;

/* The defaults. The model's device (a.model.device) is where hvd_pin_device pinned this rank
 * when it runs (hvd_pinned_gpu): the step programs pin first, then parse, so their model is
 * built on the rank's GPU. Before any pinning it is the CPU, and a program that pins only after
 * parsing still builds its model on the CPU (its collectives then take host tensors). */
void args_defaults(args *a);

/* Fills *a from the defaults and argv[1..argc-1]. Returns 0 on success; 1 after --help, once
 * the usage has been printed on stdout by rank 0 (hvd_rank() == 0, also before hvd_init);
 * -1 with one line in err naming the flag, e.g. "--batch-size: 'abc' is not a positive integer".
 * argv is not reordered. */
int args_parse(args *a, int argc, char **argv, char *err, size_t errlen);

/* One line per flag with its default. prog is argv[0] (or NULL). */
void args_usage(FILE *f, const char *prog);

/* The seed of this rank's initial weights: a mix of a->seed and rank, distinct per rank. */
uint64_t args_init_seed(const args *a, int rank);

#endif
