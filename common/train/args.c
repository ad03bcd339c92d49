/* args.c — the step programs' flags (getopt_long), their defaults, checks and usage. See args.h.
 * Public: args_defaults, args_parse, args_usage, args_init_seed.
 */
#include "train/args.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/early_signal.h"
#include "base/errmsg.h"
#include "ckpt/ckpt.h"
#include "hvd/hvd.h"
#include "model/wrn.h"

enum {
    A_EPOCHS = 256, A_BATCH, A_VAL_BATCH, A_LR, A_MOMENTUM, A_WD, A_WARMUP, A_MODEL, A_DROPOUT,
    A_DATA_DIR, A_TRAIN_SUBSET, A_TEST_SUBSET, A_CKPT, A_LOG_DIR, A_SEED, A_TARGET, A_PATIENCE,
    A_OPTIMIZER, A_RESTART, A_HELP = 'h'
};

/* The table behind both getopt_long and the usage text, in usage order. */
static const struct flag {
    const char *name, *metavar, *help;
    int id;
} FLAGS[] = {
    {"epochs", "N", "epochs to train (default 3; the original lab: 40)", A_EPOCHS},
    {"batch-size", "N", "training images per batch and rank (default 128)", A_BATCH},
    {"val-batch-size", "N", "validation images per batch and rank (default 256)", A_VAL_BATCH},
    {"base-lr", "X", "learning rate for one process (default 0.01)", A_LR},
    {"momentum", "X", "SGD momentum, 0 <= X < 1 (default 0.9)", A_MOMENTUM},
    {"wd", "X", "weight decay, Keras L2 wd*sum(w^2) (default 5e-06)", A_WD},
    {"warmup-epochs", "N", "learning-rate warmup epochs, 0 = none (default 5)", A_WARMUP},
    {"model", "wrn-D-K", "WideResNet depth D ((D-4)%6 == 0) and width K (default wrn-16-1)",
     A_MODEL},
    {"dropout", "X", "dropout rate in each block, 0 <= X < 1 (default 0.01)", A_DROPOUT},
    {"data-dir", "DIR", "Fashion-MNIST directory (default: $HVDLAB_DATA, else the places in "
                        "datasets/README.md)", A_DATA_DIR},
    {"train-subset", "N", "train on the first N training images, 0 = all 60,000 (default 12000)",
     A_TRAIN_SUBSET},
    {"test-subset", "N", "validate/test on the first N test images, 0 = all 10,000 (default 2000)",
     A_TEST_SUBSET},
    {"use-checkpointing", NULL, "save a checkpoint every epoch, resume from the latest "
                                "(default off)",
     A_CKPT},
    {"log-dir", "DIR", "checkpoint directory (default ./logs)", A_LOG_DIR},
    {"restart", NULL, "with --use-checkpointing, start afresh: move the checkpoints in --log-dir "
                      "into a dated subfolder (nothing is deleted; default off)", A_RESTART},
    {"seed", "N", "data seed, the same on every rank; initial weights mix in the rank "
                  "(default 42)", A_SEED},
    {"target-accuracy", "X", "stop early when val_accuracy > X for --patience epochs in a row "
                             "(default 0.85)", A_TARGET},
    {"patience", "N", "epochs in a row above --target-accuracy before stopping (default 2)",
     A_PATIENCE},
    {"optimizer", "NAME", NULL, A_OPTIMIZER}, /* help written from the optimizer table */
    {"help", NULL, "print this help and exit", A_HELP},
};
#define NFLAGS (sizeof FLAGS / sizeof FLAGS[0])

void args_defaults(args *a)
{
    memset(a, 0, sizeof *a);
    a->epochs = 3; /* with the subsets below: a minute or two per run on 2 cores (DESIGN.md §4) */
    a->batch_size = 128;
    a->val_batch_size = 256;
    a->base_lr = 0.01;
    a->momentum = 0.9;
    a->wd = 5e-6;
    a->warmup_epochs = 5;
    a->train_subset = 12000;
    a->test_subset = 2000;
    a->model = (wrn_config){.depth = 16, .width = 1, .dropout = 0.01f};
    snprintf(a->model_name, sizeof a->model_name, "wrn-16-1");
    snprintf(a->log_dir, sizeof a->log_dir, "./logs");
    a->seed = 42;
    a->target_accuracy = 0.85;
    a->patience = 2;
    a->optimizer = OPT_SGD;
}

void args_usage(FILE *f, const char *prog)
{
    const char *slash = prog ? strrchr(prog, '/') : NULL;
    fprintf(f, "usage: %s [options]\n", slash ? slash + 1 : prog ? prog : "stepNN");
    for (size_t i = 0; i < NFLAGS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", FLAGS[i].name, FLAGS[i].metavar ? " " : "",
                 FLAGS[i].metavar ? FLAGS[i].metavar : "");
        if (FLAGS[i].id == A_OPTIMIZER) {
            char names[128];
            optimizer_kind_names(names, sizeof names, ", ", " or ");
            fprintf(f, "  %-20s %s, honoured from lab step 10 on (default %s)\n", left, names,
                    optimizer_kind_of(OPT_SGD)->name);
        } else {
            fprintf(f, "  %-20s %s\n", left, FLAGS[i].help);
        }
    }
}

/* Integers: all digits (no sign, no trailing text), in [lo, hi]. */
static int parse_uint(const char *s, unsigned long long lo, unsigned long long hi,
                      unsigned long long *out)
{
    if (!*s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Reals: a finite number and nothing after it, in [lo, hi] (hi_open: [lo, hi)). */
static int parse_real(const char *s, double lo, double hi, int hi_open, double *out)
{
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi || (hi_open && v == hi))
        return -1;
    *out = v;
    return 0;
}

static int copy_path(char *dst, const char *val, const char *flag, char *err, size_t errlen)
{
    if (!*val)
        return errmsg_set(err, errlen, flag, "empty directory name");
    if (strlen(val) >= ARGS_PATH_LEN)
        return errmsg_set(err, errlen, flag, "path longer than %d characters", ARGS_PATH_LEN - 1);
    snprintf(dst, ARGS_PATH_LEN, "%s", val);
    return 0;
}

/* A whole number past a flag's range is too large, not "not a number": digits only, not all 0. */
static int too_large(const char *val)
{
    return *val && val[strspn(val, "0123456789")] == '\0' && val[strspn(val, "0")] != '\0';
}

/* Applies one flag's value; -1 and the message on a bad value. */
static int apply(args *a, int id, const char *val, char *err, size_t errlen)
{
    char flag[40] = "--";
    for (size_t i = 0; i < NFLAGS; i++)
        if (FLAGS[i].id == id)
            snprintf(flag, sizeof flag, "--%s", FLAGS[i].name);
    unsigned long long u;
    double d;
    switch (id) {
    case A_EPOCHS:
    case A_BATCH:
    case A_VAL_BATCH:
    case A_PATIENCE: {
        int bad = parse_uint(val, 1, 1000000000, &u) != 0, big = bad && too_large(val);
        if (bad && !big)
            return errmsg_set(err, errlen, flag, "'%s' is not a positive integer", val);
        if ((id == A_BATCH || id == A_VAL_BATCH) && (big || u > WRN_MAX_BATCH)) /* wrn_create's */
            return errmsg_set(err, errlen, flag, "'%s': at most %u images a batch", val,
                              WRN_MAX_BATCH);
        if (big)
            return errmsg_set(err, errlen, flag, "'%s': at most 1000000000", val);
        *(id == A_EPOCHS ? &a->epochs : id == A_BATCH ? &a->batch_size
                         : id == A_VAL_BATCH ? &a->val_batch_size : &a->patience) = (int)u;
        return 0;
    }
    case A_TRAIN_SUBSET:
    case A_TEST_SUBSET:
        if (parse_uint(val, 0, 1000000000, &u) != 0)
            return errmsg_set(err, errlen, flag, too_large(val) ? "'%s': at most 1000000000"
                                                                : "'%s' is not a count (0 = all)",
                              val);
        *(id == A_TRAIN_SUBSET ? &a->train_subset : &a->test_subset) = (size_t)u;
        return 0;
    case A_SEED:
        if (parse_uint(val, 0, UINT64_MAX, &u) != 0)
            return errmsg_set(err, errlen, flag, "'%s' is not a non-negative integer", val);
        a->seed = (uint64_t)u;
        return 0;
    case A_LR:
        if (parse_real(val, 0, INFINITY, 0, &d) != 0 || d == 0)
            return errmsg_set(err, errlen, flag, "'%s' is not a positive number", val);
        if (d < FLT_MIN || d > FLT_MAX) /* the optimizers take it as a float: inf or 0 there */
            return errmsg_set(err, errlen, flag, "'%s' is not a positive number a float holds "
                              "(%g to %g)", val, (double)FLT_MIN, (double)FLT_MAX);
        a->base_lr = d;
        return 0;
    case A_WARMUP:
        if (parse_uint(val, 0, 1000000, &u) != 0)
            return errmsg_set(err, errlen, flag, "'%s' is not a whole number of epochs >= 0", val);
        a->warmup_epochs = (int)u;
        return 0;
    case A_WD:
        if (parse_real(val, 0, INFINITY, 0, &d) != 0)
            return errmsg_set(err, errlen, flag, "'%s' is not a number >= 0", val);
        if (d > FLT_MAX) /* the model takes it as a float */
            return errmsg_set(err, errlen, flag, "'%s' is not a number a float holds (at most "
                              "%g)", val, (double)FLT_MAX);
        a->wd = d;
        return 0;
    case A_MOMENTUM:
    case A_DROPOUT:
        if (parse_real(val, 0, 1, 1, &d) != 0)
            return errmsg_set(err, errlen, flag, "'%s' is not a number in [0, 1)", val);
        if (id == A_MOMENTUM)
            a->momentum = d;
        else
            a->model.dropout = (float)d;
        return 0;
    case A_TARGET:
        if (parse_real(val, 0, 1, 0, &d) != 0)
            return errmsg_set(err, errlen, flag, "'%s' is not a number in [0, 1]", val);
        a->target_accuracy = d;
        return 0;
    case A_MODEL: {
        wrn_config c = a->model; /* keeps the dropout, whichever flag comes first */
        char why[200];
        if (wrn_config_parse(val, &c, why, sizeof why) != 0) /* its message may name the flag */
            return errmsg_set(err, errlen, strncmp(why, flag, strlen(flag)) ? flag : NULL, "%s",
                              why);
        a->model.depth = c.depth;
        a->model.width = c.width;
        wrn_config_name(&a->model, a->model_name, sizeof a->model_name);
        return 0;
    }
    case A_OPTIMIZER: {
        char why[200];
        const optimizer_kind *k = optimizer_kind_named(val, why, sizeof why);
        if (!k)
            return errmsg_set(err, errlen, flag, "%s", why);
        a->optimizer = (opt_kind)k->code;
        return 0;
    }
    case A_DATA_DIR:
        return copy_path(a->data_dir, val, flag, err, errlen);
    case A_LOG_DIR:
        return copy_path(a->log_dir, val, flag, err, errlen);
    case A_CKPT:
        a->use_checkpointing = 1;
        return 0;
    case A_RESTART:
        a->restart = 1;
        return 0;
    }
    return errmsg_set(err, errlen, flag, "not handled"); /* unreachable: every id is above */
}

int args_parse(args *a, int argc, char **argv, char *err, size_t errlen)
{
    early_signal_keep(); /* a step program: its progress installs stop.h's handlers */
    args_defaults(a);
    struct option longopts[NFLAGS + 1];
    for (size_t i = 0; i < NFLAGS; i++)
        longopts[i] = (struct option){FLAGS[i].name,
                                      FLAGS[i].metavar ? required_argument : no_argument, NULL,
                                      FLAGS[i].id};
    longopts[NFLAGS] = (struct option){0, 0, 0, 0};
    /* "+": stop at the first non-option (no reordering of argv); ":": report a missing value as
     * ':' instead of printing; opterr = 0: every message is ours. optind = 0 re-initialises
     * glibc's getopt, so the parser can run more than once in a process. */
    int saved_opterr = opterr;
    opterr = 0;
    optind = 0;
    int rc = 0, c;
    while (rc == 0 && (c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        const char *given = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        if (c == '?' && (optopt == A_HELP || optopt == A_CKPT || optopt == A_RESTART) &&
            strchr(given, '=')) {
            char name[64];
            snprintf(name, sizeof name, "%s", given);
            name[strcspn(name, "=")] = '\0';
            rc = errmsg_set(err, errlen, name, "takes no value");
        } else if (c == '?') {
            if (optopt > 0 && optopt < 128 && optopt != '?')
                rc = errmsg_set(err, errlen, NULL, "unknown option '-%c' (see --help)", optopt);
            else
                rc = errmsg_set(err, errlen, NULL, "unknown option '%s' (see --help)", given);
        } else if (c == ':') {
            char name[64];
            snprintf(name, sizeof name, "%s", given);
            name[strcspn(name, "=")] = '\0';
            rc = errmsg_set(err, errlen, name, "missing value");
        } else if (c == A_HELP) {
            if (hvd_rank() == 0) {
                args_usage(stdout, argc > 0 ? argv[0] : NULL);
                fflush(stdout);
            }
            rc = 1;
        } else {
            rc = apply(a, c, optarg, err, errlen);
        }
    }
    if (rc == 0 && optind < argc)
        rc = errmsg_set(err, errlen, NULL, "unexpected argument '%s' (flags start with --, see "
                                           "--help)", argv[optind]);
    /* Without checkpoints a run neither resumes nor saves: a --restart alone would leave the old
     * files where the next --use-checkpointing run resumes from them, without a word. */
    if (rc == 0 && a->restart && !a->use_checkpointing)
        rc = errmsg_set(err, errlen, "--restart", "only with --use-checkpointing (it moves that "
                                                  "run's checkpoints in --log-dir aside)");
    opterr = saved_opterr;
    optind = 1;
    /* The step programs hand the checkpoint layer only --log-dir; --restart goes to it here. */
    ckpt_set_restart(rc == 0 && a->restart);
    return rc;
}

/* splitmix64 finaliser: a bijection, so distinct (seed, rank) inputs stay distinct. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t args_init_seed(const args *a, int rank)
{
    /* The weights' stream must differ from the data stream (seed itself) and between ranks. */
    return mix64(mix64(a->seed ^ 0x574549474854530aull /* "WEIGHTS" */) + (uint64_t)rank);
}
