/* test_args.c — the step programs' flag parser: defaults, every flag, both spellings, one-line
 * errors naming the flag, --help, and the per-rank weight seed. Serial (no MPI). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "nn/conv2d_dnnl.h"
#include "train/args.h"

/* Parses a NULL-terminated list of arguments after a program name. */
static int parse(args *a, char *err, size_t errlen, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = "step05";
    va_list ap;
    va_start(ap, errlen);
    for (char *s; (s = va_arg(ap, char *)) != NULL && argc < 63;)
        argv[argc++] = s;
    va_end(ap);
    argv[argc] = NULL;
    char *copy[64]; /* the parser must not reorder argv: keep a copy to compare */
    memcpy(copy, argv, sizeof argv);
    int rc = args_parse(a, argc, argv, err, errlen);
    for (int i = 0; i < argc; i++)
        ck_assert_ptr_eq(argv[i], copy[i]);
    return rc;
}

START_TEST(defaults_are_the_laptop_lab)
{
    args a;
    char err[256] = "";
    ck_assert_int_eq(parse(&a, err, sizeof err, NULL), 0);
    ck_assert_int_eq(a.epochs, 3);
    ck_assert_int_eq(a.batch_size, 128);
    ck_assert_int_eq(a.val_batch_size, 256);
    ck_assert_double_eq(a.base_lr, 0.01);
    ck_assert_double_eq(a.momentum, 0.9);
    ck_assert_double_eq(a.wd, 5e-6);
    ck_assert_int_eq(a.warmup_epochs, 5);
    ck_assert_int_eq(a.model.depth, 16);
    ck_assert_int_eq(a.model.width, 1);
    ck_assert_float_eq(a.model.dropout, 0.01f);
    ck_assert_str_eq(a.model_name, "wrn-16-1");
    /* nothing pinned a GPU (a CPU build never does): the model is built on the CPU */
    ck_assert_msg(a.model.device.on_gpu == 0 && a.model.device.gpu == 0, "device %d, GPU %d",
                  a.model.device.on_gpu, a.model.device.gpu);
    ck_assert_str_eq(a.data_dir, "");
    ck_assert_uint_eq(a.train_subset, 12000);
    ck_assert_uint_eq(a.test_subset, 2000);
    ck_assert_int_eq(a.use_checkpointing, 0);
    ck_assert_str_eq(a.log_dir, "./logs");
    ck_assert_uint_eq(a.seed, 42);
    ck_assert_double_eq(a.target_accuracy, 0.85);
    ck_assert_int_eq(a.patience, 2);
    ck_assert_int_eq(a.optimizer, OPT_SGD);
    args b;
    args_defaults(&b);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
}
END_TEST

START_TEST(every_flag_sets_its_field)
{
    args a;
    char err[256] = "";
    int rc = parse(&a, err, sizeof err, "--epochs", "40", "--batch-size=512", "--val-batch-size",
                   "32", "--base-lr", "0.0125", "--momentum=0.5", "--wd", "0", "--warmup-epochs",
                   "2", "--model", "wrn-28-10", "--dropout", "0.3", "--data-dir", "/d/fm",
                   "--train-subset", "1000", "--test-subset=200", "--use-checkpointing",
                   "--log-dir", "runs/a b", "--seed", "18446744073709551615",
                   "--target-accuracy", "0.9", "--patience", "3", "--optimizer", "novograd", NULL);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_int_eq(a.epochs, 40);
    ck_assert_int_eq(a.batch_size, 512);
    ck_assert_int_eq(a.val_batch_size, 32);
    ck_assert_double_eq(a.base_lr, 0.0125);
    ck_assert_double_eq(a.momentum, 0.5);
    ck_assert_double_eq(a.wd, 0);
    ck_assert_int_eq(a.warmup_epochs, 2);
    ck_assert_int_eq(a.model.depth, 28);
    ck_assert_int_eq(a.model.width, 10);
    ck_assert_float_eq(a.model.dropout, 0.3f);
    ck_assert_str_eq(a.model_name, "wrn-28-10");
    ck_assert_str_eq(a.data_dir, "/d/fm");
    ck_assert_uint_eq(a.train_subset, 1000);
    ck_assert_uint_eq(a.test_subset, 200);
    ck_assert_int_eq(a.use_checkpointing, 1);
    ck_assert_str_eq(a.log_dir, "runs/a b");
    ck_assert_uint_eq(a.seed, UINT64_MAX);
    ck_assert_double_eq(a.target_accuracy, 0.9);
    ck_assert_int_eq(a.patience, 3);
    ck_assert_int_eq(a.optimizer, OPT_NOVOGRAD);
}
END_TEST

START_TEST(dropout_and_model_in_either_order)
{
    args a;
    char err[256] = "";
    ck_assert_int_eq(parse(&a, err, sizeof err, "--dropout", "0.2", "--model", "wrn-10-2", NULL),
                     0);
    ck_assert_float_eq(a.model.dropout, 0.2f);
    ck_assert_int_eq(a.model.depth, 10);
    ck_assert_int_eq(a.model.width, 2);
    ck_assert_int_eq(parse(&a, err, sizeof err, "--model", "wrn-10-2", "--dropout", "0.2", NULL),
                     0);
    ck_assert_float_eq(a.model.dropout, 0.2f);
    ck_assert_int_eq(parse(&a, err, sizeof err, "--optimizer", "sgd", NULL), 0);
    ck_assert_int_eq(a.optimizer, OPT_SGD);
    ck_assert_int_eq(parse(&a, err, sizeof err, "--precision", "fp32", NULL), 0);
    ck_assert_int_eq(a.precision, PRECISION_FP32);
#if defined(HVDLAB_DNNL) && !defined(HVDLAB_CUDA)
    /* bf16 where this CPU has it: accepted and applied to the convolutions; the next parse
     * without it is fp32 again */
    if (conv2d_dnnl_bf16_native()) {
        ck_assert_msg(parse(&a, err, sizeof err, "--precision", "bf16", NULL) == 0, "%s", err);
        ck_assert_int_eq(a.precision, PRECISION_BF16);
        ck_assert_int_eq(conv2d_dnnl_bf16(), 1);
        ck_assert_int_eq(parse(&a, err, sizeof err, NULL), 0); /* the default: fp32 again */
        ck_assert_int_eq(conv2d_dnnl_bf16(), 0);
    }
#endif
    /* A second parse starts from the defaults again. */
    ck_assert_int_eq(parse(&a, err, sizeof err, NULL), 0);
    ck_assert_float_eq(a.model.dropout, 0.01f);
    ck_assert_int_eq(a.optimizer, OPT_SGD);
}
END_TEST

/* The parse fails with exactly this one-line message. */
static void expect_error(const char *want, ...)
{
    char *argv[16];
    int argc = 0;
    argv[argc++] = "step05";
    va_list ap;
    va_start(ap, want);
    for (char *s; (s = va_arg(ap, char *)) != NULL && argc < 15;)
        argv[argc++] = s;
    va_end(ap);
    argv[argc] = NULL;
    args a;
    char err[256] = "";
    int rc = args_parse(&a, argc, argv, err, sizeof err);
    ck_assert_msg(rc == -1, "%s %s: rc %d, want -1", argv[1], argc > 2 ? argv[2] : "", rc);
    ck_assert_msg(strcmp(err, want) == 0, "%s %s:\n got '%s'\nwant '%s'", argv[1],
                  argc > 2 ? argv[2] : "", err, want);
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(bad_values_name_the_flag)
{
    expect_error("--batch-size: 'abc' is not a positive integer", "--batch-size", "abc", NULL);
    expect_error("--batch-size: '0' is not a positive integer", "--batch-size=0", NULL);
    expect_error("--batch-size: '-3' is not a positive integer", "--batch-size", "-3", NULL);
    expect_error("--batch-size: '12x' is not a positive integer", "--batch-size", "12x", NULL);
    expect_error("--batch-size: '1048577': at most 1048576 images a batch", "--batch-size",
                 "1048577", NULL);
    expect_error("--val-batch-size: '1000000000': at most 1048576 images a batch",
                 "--val-batch-size=1000000000", NULL);
    expect_error("--epochs: '' is not a positive integer", "--epochs=", NULL);
    expect_error("--epochs: '99999999999999999999': at most 1000000000", "--epochs",
                 "99999999999999999999", NULL);
    expect_error("--patience: '1000000001': at most 1000000000", "--patience", "1000000001",
                 NULL);
    expect_error("--batch-size: '2147483647': at most 1048576 images a batch", "--batch-size",
                 "2147483647", NULL);
    expect_error("--train-subset: '99999999999': at most 1000000000", "--train-subset",
                 "99999999999", NULL);
    expect_error("--epochs: '000' is not a positive integer", "--epochs", "000", NULL);
    expect_error("--val-batch-size: '1.5' is not a positive integer", "--val-batch-size", "1.5",
                 NULL);
    expect_error("--patience: '0' is not a positive integer", "--patience", "0", NULL);
    expect_error("--train-subset: '-1' is not a count (0 = all)", "--train-subset", "-1", NULL);
    expect_error("--test-subset: 'all' is not a count (0 = all)", "--test-subset", "all", NULL);
    expect_error("--seed: '-1' is not a non-negative integer", "--seed", "-1", NULL);
    expect_error("--seed: '18446744073709551616' is not a non-negative integer", "--seed",
                 "18446744073709551616", NULL);
    expect_error("--base-lr: '0' is not a positive number", "--base-lr", "0", NULL);
    expect_error("--base-lr: 'nan' is not a positive number", "--base-lr", "nan", NULL);
    expect_error("--base-lr: 'inf' is not a positive number", "--base-lr", "inf", NULL);
    expect_error("--base-lr: '0.1x' is not a positive number", "--base-lr", "0.1x", NULL);
    /* the runtime takes them as floats: beyond a float's range they would become inf or 0 */
    expect_error("--base-lr: '1e39' is not a positive number a float holds (1.17549e-38 to "
                 "3.40282e+38)", "--base-lr", "1e39", NULL);
    expect_error("--base-lr: '1e-50' is not a positive number a float holds (1.17549e-38 to "
                 "3.40282e+38)", "--base-lr", "1e-50", NULL);
    expect_error("--wd: '1e39' is not a number a float holds (at most 3.40282e+38)", "--wd",
                 "1e39", NULL);
    expect_error("--momentum: '1' is not a number in [0, 1)", "--momentum", "1", NULL);
    expect_error("--momentum: '-0.1' is not a number in [0, 1)", "--momentum", "-0.1", NULL);
    expect_error("--dropout: '1.5' is not a number in [0, 1)", "--dropout", "1.5", NULL);
    expect_error("--wd: '-1e-5' is not a number >= 0", "--wd", "-1e-5", NULL);
    expect_error("--warmup-epochs: 'five' is not a whole number of epochs >= 0", "--warmup-epochs",
                 "five", NULL);
    expect_error("--warmup-epochs: '2.5' is not a whole number of epochs >= 0", "--warmup-epochs",
                 "2.5", NULL);
    expect_error("--target-accuracy: '85' is not a number in [0, 1]", "--target-accuracy", "85",
                 NULL);
    expect_error("--optimizer: 'adam' is not sgd or novograd", "--optimizer", "adam", NULL);
    expect_error("--precision: 'fp64' is not fp32, bf16 or fp16", "--precision", "fp64", NULL);
    /* No build trains in 16 bits yet: both refuse, each saying why. */
#ifdef HVDLAB_CUDA
    expect_error("--precision: bf16: this build trains in fp32 only (the CUDA build's cuDNN bf16 "
                 "convolutions and 16-bit kernels are not built yet); leave --precision out",
                 "--precision", "bf16", NULL);
#elif defined(HVDLAB_DNNL)
    expect_error("--precision: fp16: the CPU build trains in fp32 and bf16 only (Debian's oneDNN "
                 "2.6 has no fp16 convolutions on the CPU); leave --precision out",
                 "--precision=fp16", NULL);
    if (!conv2d_dnnl_bf16_native())
        expect_error("--precision: bf16: this CPU has neither AVX512_BF16 nor AMX, where oneDNN "
                     "would only emulate bf16 convolutions; leave --precision out",
                     "--precision", "bf16", NULL);
#else
    expect_error("--precision: bf16: this build has no oneDNN (libdnnl-dev), whose bf16 "
                 "convolutions the CPU build uses, so it trains in fp32 only; leave --precision "
                 "out", "--precision", "bf16", NULL);
#endif
    expect_error("--data-dir: empty directory name", "--data-dir", "", NULL);
    expect_error("--log-dir: empty directory name", "--log-dir=", NULL);
}
END_TEST

START_TEST(bad_models_name_the_flag)
{
    args a;
    char err[256] = "";
    const char *bad[] = {"wrn-15-1", "wrn-4-1", "wrn-16-0", "resnet50", "wrn-16", "wrn-16-1x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {"step05", "--model", (char *)bad[i], NULL};
        ck_assert_int_eq(args_parse(&a, 3, argv, err, sizeof err), -1);
        ck_assert_msg(strncmp(err, "--model: ", 9) == 0 && strstr(err + 1, "--model") == NULL,
                      "%s: '%s'", bad[i], err);
        ck_assert_msg(strstr(err, bad[i]) != NULL, "%s: message does not quote it: %s", bad[i],
                      err);
    }
}
END_TEST

START_TEST(unknown_missing_and_stray_arguments)
{
    expect_error("unknown option '--epoch-count' (see --help)", "--epoch-count", "3", NULL);
    expect_error("unknown option '--lr=0.1' (see --help)", "--lr=0.1", NULL);
    expect_error("unknown option '-x' (see --help)", "-x", NULL);
    expect_error("--epochs: missing value", "--epochs", NULL);
    expect_error("--model: missing value", "--seed", "1", "--model", NULL);
    expect_error("--use-checkpointing: takes no value", "--use-checkpointing=yes", NULL);
    expect_error("--restart: only with --use-checkpointing (it moves that run's checkpoints in "
                 "--log-dir aside)", "--restart", NULL);
    expect_error("--restart: only with --use-checkpointing (it moves that run's checkpoints in "
                 "--log-dir aside)", "--log-dir", "l", "--restart", "--epochs", "2", NULL);
    expect_error("unexpected argument 'wrn-16-4' (flags start with --, see --help)", "wrn-16-4",
                 NULL);
    expect_error("unexpected argument 'extra' (flags start with --, see --help)", "--epochs", "2",
                 "extra", NULL);
    /* Nothing is reordered (GNU getopt would move "extra" behind the flags). */
    args a;
    char err[256] = "";
    ck_assert_int_eq(parse(&a, err, sizeof err, "extra", "--epochs", "2", NULL), -1);
    ck_assert_str_eq(err, "unexpected argument 'extra' (flags start with --, see --help)");
}
END_TEST

/* Runs args_parse with stdout sent to a pipe; returns what was printed. */
static int parse_capturing(char **argv, int argc, char *out, size_t outlen)
{
    fflush(stdout);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    int saved = dup(1);
    dup2(fds[1], 1);
    args a;
    char err[256] = "";
    int rc = args_parse(&a, argc, argv, err, sizeof err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(fds[1]);
    fd_read_text(fds[0], out, outlen);
    return rc;
}

START_TEST(help_lists_every_flag_with_its_default)
{
    static char out[8192];
    char *argv[] = {"./build/step05", "--epochs", "3", "--help", NULL};
    ck_assert_int_eq(parse_capturing(argv, 4, out, sizeof out), 1);
    ck_assert_msg(strncmp(out, "usage: step05 [options]\n", 24) == 0, "%s", out);
    const char *flags[] = {"--epochs N ", "--batch-size N ", "--val-batch-size N ", "--base-lr X ",
                           "--momentum X ", "--wd X ", "--warmup-epochs N ", "--model wrn-D-K ",
                           "--dropout X ", "--data-dir DIR ", "--train-subset N ",
                           "--test-subset N ", "--use-checkpointing ", "--log-dir DIR ",
                           "--restart ", "--seed N ", "--target-accuracy X ", "--patience N ",
                           "--optimizer NAME ", "--precision NAME ", "--help "};
    const char *defaults[] = {"(default 3;", "(default 128)", "(default 256)", "(default 0.01)",
                              "(default 0.9)", "(default 5e-06)", "(default 5)",
                              "(default wrn-16-1)", "(default 0.01)", "(default: $HVDLAB_DATA",
                              "(default 12000)", "(default 2000)", "(default off)",
                              "(default ./logs)", "default off)", "(default 42)", "(default 0.85)",
                              "(default 2)", "(default sgd)", "(default fp32)", "exit"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char *line = strstr(out, flags[i]);
        ck_assert_msg(line != NULL, "usage lacks %s:\n%s", flags[i], out);
        char *eol = strchr(line, '\n');
        ck_assert_ptr_nonnull(eol);
        *eol = '\0';
        ck_assert_msg(strstr(line, defaults[i]) != NULL, "line '%s' lacks '%s'", line,
                      defaults[i]);
        *eol = '\n';
    }
    size_t lines = 0;
    for (const char *s = out; *s; s++)
        lines += *s == '\n';
    ck_assert_uint_eq(lines, 1 + sizeof flags / sizeof flags[0]); /* one line each */
    /* -h is the same; a bad flag before --help still fails first. */
    char *argv2[] = {"step05", "-h", NULL};
    ck_assert_int_eq(parse_capturing(argv2, 2, out, sizeof out), 1);
    char *argv3[] = {"step05", "--epochs", "x", "--help", NULL};
    ck_assert_int_eq(parse_capturing(argv3, 4, out, sizeof out), -1);
    ck_assert_str_eq(out, "");
    /* A parse that stopped inside the cluster "-hx" leaves no state for the next parse. */
    char *argv4[] = {"step05", "-hx", NULL};
    ck_assert_int_eq(parse_capturing(argv4, 2, out, sizeof out), 1);
    args a;
    char err[256] = "";
    char *argv5[] = {"step05", "--epochs", "3", NULL};
    ck_assert_msg(args_parse(&a, 3, argv5, err, sizeof err) == 0, "after -hx: %s", err);
    ck_assert_int_eq(a.epochs, 3);
}
END_TEST

START_TEST(init_seed_differs_per_rank_and_follows_the_seed)
{
    args a, b;
    args_defaults(&a);
    args_defaults(&b);
    b.seed = 43;
    uint64_t s[64];
    for (int r = 0; r < 64; r++) {
        s[r] = args_init_seed(&a, r);
        ck_assert_uint_ne(s[r], a.seed); /* not the data seed itself */
        ck_assert_uint_ne(s[r], args_init_seed(&b, r));
        ck_assert_uint_eq(s[r], args_init_seed(&a, r)); /* deterministic */
        for (int q = 0; q < r; q++)
            ck_assert_msg(s[q] != s[r], "ranks %d and %d draw the same weights", q, r);
    }
    /* Not a shifted copy: seed 43 on rank 0 is not seed 42 on rank 1. */
    ck_assert_uint_ne(args_init_seed(&b, 0), args_init_seed(&a, 1));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("args");
    TCase *tc = tcase_create("args");
    tcase_add_test(tc, defaults_are_the_laptop_lab);
    tcase_add_test(tc, every_flag_sets_its_field);
    tcase_add_test(tc, dropout_and_model_in_either_order);
    tcase_add_test(tc, bad_values_name_the_flag);
    tcase_add_test(tc, bad_models_name_the_flag);
    tcase_add_test(tc, unknown_missing_and_stray_arguments);
    tcase_add_test(tc, help_lists_every_flag_with_its_default);
    tcase_add_test(tc, init_seed_differs_per_rank_and_follows_the_seed);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
