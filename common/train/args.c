/* args.c — the step programs' flags (getopt_long), their defaults, checks and usage. See args.h.
 * One table, FLAGS, says for each flag its kind, bounds, field and help; getopt_long's options,
 * apply's checks and args_usage all walk it.
 * Public: args_defaults, args_parse, args_usage, args_init_seed.
 */
#include "train/args.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/early_signal.h"
#include "base/errmsg.h"
#include "ckpt/ckpt.h"
#include "hvd/device.h"
#include "hvd/hvd.h"
#include "model/wrn.h"

/* How a flag's value is read and where it goes (struct flag's offset). */
typedef enum {
    F_INT,    /* int: digits only, in [min, max] */
    F_SIZE,   /* size_t: the same */
    F_U64,    /* uint64_t: the same */
    F_REAL,   /* double: a finite number in [lo, hi] (lo_open: (lo, ..; hi_open: .., hi)) */
    F_FLOAT,  /* float: the same */
    F_PATH,   /* char[ARGS_PATH_LEN]: not empty, fits */
    F_SWITCH, /* int set to 1; the flag takes no value */
    F_CALL,   /* parsed by the entry's call (a value the model or optimizer table reads) */
    F_HELP,   /* prints the usage */
} flag_kind;

typedef struct flag flag;
/* A value for one F_CALL flag; -1 and the message, prefixed with `name` ("--model"), if bad. */
typedef int (*flag_call)(args *a, const char *val, const char *name, char *err, size_t errlen);

/* One flag: getopt_long's option, the parser's check and the usage line, in usage order. */
struct flag {
    const char *name, *metavar; /* metavar NULL: the flag takes no value */
    flag_kind kind;
    size_t offset;                  /* offsetof(args, the field it sets) */
    unsigned long long min, max;    /* F_INT, F_SIZE, F_U64 */
    double lo, hi;                  /* F_REAL, F_FLOAT */
    int lo_open, hi_open;
    /* The messages on a bad value: "'V' is not <noun>"; for integers, a whole number past max
     * reads "'V': at most <max><cap>" (cap NULL: the noun's message again); for reals, cap
     * non-NULL: the value must be a finite float too (the model and optimizers take a float),
     * else "'V' is not <cap> (<FLT_MIN if lo_open> to <FLT_MAX>)". */
    const char *noun, *cap;
    flag_call call;                 /* F_CALL */
    const char *help;               /* NULL: written by help_of */
};

static int set_model(args *a, const char *val, const char *name, char *err, size_t errlen);
static int set_optimizer(args *a, const char *val, const char *name, char *err, size_t errlen);
static int set_precision(args *a, const char *val, const char *name, char *err, size_t errlen);

#define AT(field) offsetof(args, field)
#define BILLION 1000000000ull

/* The table behind getopt_long, the parser and the usage text, in usage order. */
static const flag FLAGS[] = {
    {"epochs", "N", F_INT, AT(epochs), .min = 1, .max = BILLION, .noun = "a positive integer",
     .cap = "", .help = "epochs to train (default 3; the original lab: 40)"},
    {"batch-size", "N", F_INT, AT(batch_size), .min = 1, .max = WRN_MAX_BATCH, /* wrn_create's */
     .noun = "a positive integer", .cap = " images a batch",
     .help = "training images per batch and rank (default 128)"},
    {"val-batch-size", "N", F_INT, AT(val_batch_size), .min = 1, .max = WRN_MAX_BATCH,
     .noun = "a positive integer", .cap = " images a batch",
     .help = "validation images per batch and rank (default 256)"},
    {"base-lr", "X", F_REAL, AT(base_lr), .lo = 0, .hi = INFINITY, .lo_open = 1,
     .noun = "a positive number", .cap = "a positive number a float holds",
     .help = "learning rate for one process (default 0.01)"},
    {"momentum", "X", F_REAL, AT(momentum), .lo = 0, .hi = 1, .hi_open = 1,
     .noun = "a number in [0, 1)", .help = "SGD momentum, 0 <= X < 1 (default 0.9)"},
    {"wd", "X", F_REAL, AT(wd), .lo = 0, .hi = INFINITY, .noun = "a number >= 0",
     .cap = "a number a float holds", .help = "weight decay, Keras L2 wd*sum(w^2) (default 5e-06)"},
    {"warmup-epochs", "N", F_INT, AT(warmup_epochs), .min = 0, .max = 1000000,
     .noun = "a whole number of epochs >= 0",
     .help = "learning-rate warmup epochs, 0 = none (default 5)"},
    {"model", "wrn-D-K", F_CALL, AT(model), .call = set_model,
     .help = "WideResNet depth D ((D-4)%6 == 0) and width K (default wrn-16-1)"},
    {"dropout", "X", F_FLOAT, AT(model.dropout), .lo = 0, .hi = 1, .hi_open = 1,
     .noun = "a number in [0, 1)", .help = "dropout rate in each block, 0 <= X < 1 (default 0.01)"},
    {"data-dir", "DIR", F_PATH, AT(data_dir),
     .help = "Fashion-MNIST directory (default: $HVDLAB_DATA, else the places in "
             "datasets/README.md)"},
    {"train-subset", "N", F_SIZE, AT(train_subset), .min = 0, .max = BILLION,
     .noun = "a count (0 = all)", .cap = "",
     .help = "train on the first N training images, 0 = all 60,000 (default 12000)"},
    {"test-subset", "N", F_SIZE, AT(test_subset), .min = 0, .max = BILLION,
     .noun = "a count (0 = all)", .cap = "",
     .help = "validate/test on the first N test images, 0 = all 10,000 (default 2000)"},
    {"use-checkpointing", NULL, F_SWITCH, AT(use_checkpointing),
     .help = "save a checkpoint every epoch, resume from the latest (default off)"},
    {"log-dir", "DIR", F_PATH, AT(log_dir), .help = "checkpoint directory (default ./logs)"},
    {"restart", NULL, F_SWITCH, AT(restart),
     .help = "with --use-checkpointing, start afresh: move the checkpoints in --log-dir into a "
             "dated subfolder (nothing is deleted; default off)"},
    {"seed", "N", F_U64, AT(seed), .min = 0, .max = UINT64_MAX, .noun = "a non-negative integer",
     .help = "data seed, the same on every rank; initial weights mix in the rank (default 42)"},
    {"target-accuracy", "X", F_REAL, AT(target_accuracy), .lo = 0, .hi = 1,
     .noun = "a number in [0, 1]",
     .help = "stop early when val_accuracy > X for --patience epochs in a row (default 0.85)"},
    {"patience", "N", F_INT, AT(patience), .min = 1, .max = BILLION, .noun = "a positive integer",
     .cap = "", .help = "epochs in a row above --target-accuracy before stopping (default 2)"},
    {"optimizer", "NAME", F_CALL, AT(optimizer), .call = set_optimizer}, /* help: help_of */
    {"precision", "NAME", F_CALL, AT(precision), .call = set_precision,
     .help = "fp32, bf16 or fp16: 16-bit convolutions, fp32 weights; the CPU build runs fp32 "
             "and bf16, the CUDA build fp32 (default fp32)"},
    {"help", NULL, F_HELP, 0, .help = "print this help and exit"},
};
#define NFLAGS (sizeof FLAGS / sizeof FLAGS[0])

/* getopt_long's value for FLAGS[i]: 'h' for --help (also -h), 256 + i for the others. */
static int flag_val(size_t i) { return FLAGS[i].kind == F_HELP ? 'h' : 256 + (int)i; }

static const flag *flag_of_val(int val)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (flag_val(i) == val)
            return &FLAGS[i];
    return NULL;
}

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
    /* built where hvd_pin_device pinned this rank (the steps pin first), or on the CPU */
    a->model = (wrn_config){.depth = 16, .width = 1, .dropout = 0.01f,
                            .device = wrn_device_of(hvd_pinned_gpu())};
    snprintf(a->model_name, sizeof a->model_name, "wrn-16-1");
    snprintf(a->log_dir, sizeof a->log_dir, "./logs");
    a->seed = 42;
    a->target_accuracy = 0.85;
    a->patience = 2;
    a->optimizer = OPT_SGD;
    a->precision = PRECISION_FP32;
}

/* The help of an entry whose text is not in the table (help NULL): written from another table. */
static void help_of(const flag *f, char *buf, size_t len)
{
    if (f->call == set_optimizer) {
        char names[128];
        optimizer_kind_names(names, sizeof names, ", ", " or ");
        snprintf(buf, len, "%s, honoured from lab step 10 on (default %s)", names,
                 optimizer_kind_of(OPT_SGD)->name);
    } else {
        snprintf(buf, len, "?");
    }
}

void args_usage(FILE *f, const char *prog)
{
    const char *slash = prog ? strrchr(prog, '/') : NULL;
    fprintf(f, "usage: %s [options]\n", slash ? slash + 1 : prog ? prog : "stepNN");
    for (size_t i = 0; i < NFLAGS; i++) {
        char left[64], help[256];
        snprintf(left, sizeof left, "--%s%s%s", FLAGS[i].name, FLAGS[i].metavar ? " " : "",
                 FLAGS[i].metavar ? FLAGS[i].metavar : "");
        if (!FLAGS[i].help)
            help_of(&FLAGS[i], help, sizeof help);
        fprintf(f, "  %-20s %s\n", left, FLAGS[i].help ? FLAGS[i].help : help);
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

/* Reals: a finite number and nothing after it, in [lo, hi] (lo_open, hi_open: without the end). */
static int parse_real(const char *s, double lo, double hi, int lo_open, int hi_open, double *out)
{
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi || (lo_open && v == lo) ||
        (hi_open && v == hi))
        return -1;
    *out = v;
    return 0;
}

/* A whole number past a flag's range is too large, not "not a number": digits only, not all 0. */
static int too_large(const char *val)
{
    return *val && val[strspn(val, "0123456789")] == '\0' && val[strspn(val, "0")] != '\0';
}

static int set_model(args *a, const char *val, const char *name, char *err, size_t errlen)
{
    wrn_config c = a->model; /* keeps the dropout, whichever flag comes first */
    char why[200];
    if (wrn_config_parse(val, &c, why, sizeof why) != 0) /* its message may name the flag */
        return errmsg_set(err, errlen, strncmp(why, name, strlen(name)) ? name : NULL, "%s", why);
    a->model.depth = c.depth;
    a->model.width = c.width;
    wrn_config_name(&a->model, a->model_name, sizeof a->model_name);
    return 0;
}

static int set_optimizer(args *a, const char *val, const char *name, char *err, size_t errlen)
{
    char why[200];
    const optimizer_kind *k = optimizer_kind_named(val, why, sizeof why);
    if (!k)
        return errmsg_set(err, errlen, name, "%s", why);
    a->optimizer = (opt_kind)k->code;
    return 0;
}

/* A name, then whether this build trains in it: the refusal is the parse's one line, so every
 * rank stops at the start alike. A parse that succeeds applies it to the layers (args_parse's
 * end): every step program parses its flags before it builds a model. */
static int set_precision(args *a, const char *val, const char *name, char *err, size_t errlen)
{
    char why[200];
    precision p;
    if (precision_parse(val, &p, why, sizeof why) != 0 || precision_check(p, why, sizeof why) != 0)
        return errmsg_set(err, errlen, name, "%s", why);
    a->precision = p;
    return 0;
}

/* Applies one flag's value to its field; -1 and the message on a bad value. */
static int apply(args *a, const flag *f, const char *val, char *err, size_t errlen)
{
    char name[40];
    snprintf(name, sizeof name, "--%s", f->name);
    char *field = (char *)a + f->offset;
    unsigned long long u;
    double d;
    switch (f->kind) {
    case F_INT:
    case F_SIZE:
    case F_U64:
        if (parse_uint(val, f->min, f->max, &u) != 0) {
            if (f->cap && too_large(val))
                return errmsg_set(err, errlen, name, "'%s': at most %llu%s", val, f->max, f->cap);
            return errmsg_set(err, errlen, name, "'%s' is not %s", val, f->noun);
        }
        if (f->kind == F_INT)
            *(int *)(void *)field = (int)u;
        else if (f->kind == F_SIZE)
            *(size_t *)(void *)field = (size_t)u;
        else
            *(uint64_t *)(void *)field = (uint64_t)u;
        return 0;
    case F_REAL:
    case F_FLOAT:
        if (parse_real(val, f->lo, f->hi, f->lo_open, f->hi_open, &d) != 0)
            return errmsg_set(err, errlen, name, "'%s' is not %s", val, f->noun);
        if (f->cap && f->lo_open && (d < FLT_MIN || d > FLT_MAX)) /* inf or 0 as a float */
            return errmsg_set(err, errlen, name, "'%s' is not %s (%g to %g)", val, f->cap,
                              (double)FLT_MIN, (double)FLT_MAX);
        if (f->cap && d > FLT_MAX)
            return errmsg_set(err, errlen, name, "'%s' is not %s (at most %g)", val, f->cap,
                              (double)FLT_MAX);
        if (f->kind == F_REAL)
            *(double *)(void *)field = d;
        else
            *(float *)(void *)field = (float)d;
        return 0;
    case F_PATH:
        if (!*val)
            return errmsg_set(err, errlen, name, "empty directory name");
        if (strlen(val) >= ARGS_PATH_LEN)
            return errmsg_set(err, errlen, name, "path longer than %d characters",
                              ARGS_PATH_LEN - 1);
        snprintf(field, ARGS_PATH_LEN, "%s", val);
        return 0;
    case F_SWITCH:
        *(int *)(void *)field = 1;
        return 0;
    case F_CALL:
        return f->call(a, val, name, err, errlen);
    case F_HELP:
        break; /* args_parse prints the usage */
    }
    return errmsg_set(err, errlen, name, "not handled"); /* unreachable: every kind is above */
}

int args_parse(args *a, int argc, char **argv, char *err, size_t errlen)
{
    early_signal_keep(); /* a step program: its progress installs stop.h's handlers */
    args_defaults(a);
    struct option longopts[NFLAGS + 1];
    for (size_t i = 0; i < NFLAGS; i++)
        longopts[i] = (struct option){FLAGS[i].name,
                                      FLAGS[i].metavar ? required_argument : no_argument, NULL,
                                      flag_val(i)};
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
        const flag *f = c == '?' ? flag_of_val(optopt) : flag_of_val(c);
        if (c == '?' && f && !f->metavar && strchr(given, '=')) {
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
        } else if (!f) {
            rc = errmsg_set(err, errlen, NULL, "unknown option '%s' (see --help)", given);
        } else if (f->kind == F_HELP) {
            if (hvd_rank() == 0) {
                args_usage(stdout, argc > 0 ? argv[0] : NULL);
                fflush(stdout);
            }
            rc = 1;
        } else {
            rc = apply(a, f, optarg, err, errlen);
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
    /* and --precision to the layers (precision_apply: the CPU build's bf16 convolutions) */
    if (rc == 0)
        precision_apply(a->precision);
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
