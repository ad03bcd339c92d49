/* ckpt.h — one checkpoint file per epoch: model config, flat parameters, batch-norm state and
 * optimizer state, written atomically and verified by CRC32 when read.
 *
 * The lab's step 7 (Horovod tutorials: rank 0 reads, broadcasts; rank 0 writes), in a step program:
 *   int resume = 0;                        // restart_epoch(): newest file, from --epochs down
 *   if (hvd_rank() == 0 && (resume = ckpt_latest_model(dir, model, opt, epochs, err, len)) < 0)
 *       fatal_error("%s", err);
 *   hvd_broadcast_bytes(&resume, sizeof resume, 0, "resume_epoch");
 *   if (resume > 0) {                      // hvd.load_model on rank 0, then broadcast
 *       if (hvd_rank() == 0 && ckpt_load_model(dir, resume, model, opt, err, len))
 *           fatal_error("%s", err);
 *       hvd_broadcast_parameters(wrn_params(model), 0);
 *       hvd_broadcast_optimizer_state(opt, 0);
 *   }
 *   for (int epoch = resume; epoch < epochs; epoch++) {
 *       ...                                // ModelCheckpoint('checkpoint-{epoch}.h5') on rank 0:
 *       if (hvd_rank() == 0 && ckpt_save_model(dir, epoch + 1, model, opt, err, len))
 *           fatal_error("%s", err);
 *   }
 *
 * Files: DIR/checkpoint-{epoch}.ckpt, where {epoch} counts finished epochs (the file written after
 * the 3rd epoch is checkpoint-3.ckpt; resuming from it starts at epoch index 3). A save writes
 * DIR/.checkpoint-{epoch}.ckpt.tmp-XXXXXX, fsyncs it, renames it over the final name and fsyncs
 * DIR, so a crash leaves either the old state or the complete new file, never a torn one.
 * Leftover temp files (from a killed writer) are ignored by every reader.
 *
 * Format, version 1. Little-endian; u32/u64 unsigned, i32/i64 signed two's complement, f32 IEEE.
 *
 *   offset size  field
 *        0    8  magic "HVDLCKPT"
 *        8    4  u32 version = 1
 *       12    4  u32 header_bytes = 128 (where the view table starts)
 *       16    8  u64 file_bytes: size of the whole file, trailer included
 *       24    4  i32 depth D         (model config: WideResNet-D-K, wrn.h)
 *       28    4  i32 width K
 *       32    4  f32 dropout
 *       36   32  char name[32]: "wrn-D-K", NUL-padded
 *       68    4  i32 epoch (finished epochs)
 *       72    4  i32 optimizer kind: 0 = SGD, 1 = NovoGrad (optim.h), -1 = none saved
 *       76    4  f32 last_lr (lr of the last applied step)
 *       80    8  i64 iterations (optimizer steps applied)
 *       88    8  u64 n_params      P (trainable floats)
 *       96    8  u64 n_state       S (batch-norm running mean/var floats)
 *      104    8  u64 n_opt_state   O (optimizer state floats)
 *      112    4  u32 n_views       V (views into the params)
 *      116    4  u32 n_state_views W (views into the state)
 *      120    4  u32 reserved = 0
 *      124    4  u32 header_crc = zlib crc32 of bytes 0..123
 *      128 104·(V+W)  view table, the V parameter views then the W state views, each 104 bytes:
 *                  +0 char name[64] NUL-padded ("g1.b0.conv1.w"), +64 u64 offset (in floats,
 *                  into params or state), +72 u64 count, +80 i32 ndim, +84 i32 shape[4] (PyTorch
 *                  order: conv (Cout, Cin, kh, kw), dense (out, in); unused dims 0),
 *                  +100 i32 decay (1: L2 weight decay applies)
 *        D  4·P  f32 params      where D = 128 + 104·(V+W)
 *           4·S  f32 state
 *           4·O  f32 optimizer state: SGD = velocity (P); NovoGrad = m (P) then v (V, one per view)
 *   file_bytes-4  4  u32 crc32 = zlib crc32 of every byte before it
 *
 * A view's weights are params[offset : offset+count] reshaped to shape[:ndim], so in PyTorch:
 *   torch.frombuffer(blob, dtype=torch.float32, offset=D + 4*offset, count=count).view(shape)
 * (tests/reference/ckpt_read.py does exactly this). Multi-byte fields need no alignment to read,
 * but every float array starts on a 4-byte boundary.
 *
 * Reading checks, in this order, each with its own one-line message naming the file: bad magic,
 * shorter than the header (truncated), unsupported version, header CRC, file size against
 * file_bytes (truncated / trailing bytes), whole-file CRC, internal consistency, then what the
 * caller expects (model config, optimizer kind, counts, view table). Config compatibility means
 * the same depth and width (the parameter layout); dropout is stored but may differ.
 *
 * Trace events (trace.h, HVDLAB_TRACE): "ckpt_save path=P epoch=N" after the rename,
 * "ckpt_restore path=P epoch=N" after a successful load, and from the model layer
 * "params when=restore epoch=N sum=<%016llx> state_sum=<%016llx>" (params_checksum) after the
 * weights are copied in (on the loading rank only; the broadcast traces its own line).
 * P is quoted (trace_quote) only when it holds a space, '"', '\' or '='.
 *
 * Public, on plain buffers (no model needed):
 *   ckpt.c (the format)        ckpt_path, ckpt_opt_name, ckpt_write_fd, ckpt_read_file,
 *                              ckpt_file_free, ckpt_check
 *   ckpt_files.c (directories) ckpt_mkdirs, ckpt_write_temp, ckpt_commit, ckpt_save, ckpt_load,
 *                              ckpt_latest_epoch
 * Public (ckpt_model.c, on a param_set and an optimizer):
 *   ckpt_data_of, ckpt_expect_of, ckpt_save_params, ckpt_load_params
 * Public (inline here, on a wrn_model): ckpt_save_model, ckpt_load_model, ckpt_latest_model
 */
#ifndef HVDLAB_CKPT_H
#define HVDLAB_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h" /* ERRMSG_LEN */
#include "model/params.h"
#include "model/wrn.h"
#include "optim/optim.h"

#define CKPT_MAGIC "HVDLCKPT"
#define CKPT_VERSION 1
#define CKPT_HEADER_BYTES 128
#define CKPT_VIEW_BYTES 104

/* Everything a checkpoint holds. Arrays are borrowed: the writer reads them, the reader points
 * them into its file buffer (ckpt_file). */
typedef struct {
    wrn_config cfg;           /* depth, width, dropout */
    int epoch;                /* finished epochs, >= 1 for files the lab writes (0 allowed) */
    int opt_kind;             /* optimizer code (optimizer_kind.code, optim.h), -1: no optimizer
                                 (n_opt_state 0) */
    long iterations;
    float last_lr;
    const param_view *views;  /* (nviews) into params */
    int nviews;
    const float *params;      /* (n_params) */
    size_t n_params;
    const param_view *state_views; /* (n_state_views) into state */
    int n_state_views;
    const float *state;       /* (n_state) */
    size_t n_state;
    const float *opt_state;   /* (n_opt_state) */
    size_t n_opt_state;
} ckpt_data;

/* A checkpoint read into memory: d's arrays point into blob; views are decoded copies. */
typedef struct {
    ckpt_data d;
    char name[WRN_NAME_LEN];  /* the "wrn-D-K" stored in the file */
    unsigned version;
    size_t file_bytes;
    param_view *views_buf;    /* (nviews + n_state_views) */
    void *blob;               /* the whole file */
} ckpt_file;

/* What a reader requires of a checkpoint. */
typedef struct {
    wrn_config cfg;           /* depth and width must match */
    int opt_kind;             /* -1: any */
    int check_counts;         /* 1: n_params, n_state, n_opt_state must match the ones below */
    size_t n_params, n_state, n_opt_state;
    const param_view *views;  /* (nviews) when not NULL: names, offsets and shapes must match */
    int nviews;
    const param_view *state_views; /* (n_state_views) likewise */
    int n_state_views;
} ckpt_expect;

/* "dir/checkpoint-{epoch}.ckpt" into buf; -1 if it does not fit. */
int ckpt_path(char *buf, size_t len, const char *dir, int epoch);

/* Writes d in the format above to fd (at its current position); path names it in messages.
 * 0, or -1 and one line in err. */
int ckpt_write_fd(int fd, const ckpt_data *d, const char *path, char *err, size_t errlen);

/* mkdir -p dir. -1 and "dir: cannot create checkpoint directory: <reason>". */
int ckpt_mkdirs(const char *dir, char *err, size_t errlen);

/* Creates dir if needed, writes d to a temp file there, fsyncs and closes it, and returns its
 * path in tmp (the first half of ckpt_save, split out so tests can stop between write and rename). */
int ckpt_write_temp(const char *dir, const ckpt_data *d, char *tmp, size_t tmplen, char *err,
                    size_t errlen);
/* Renames tmp to dir/checkpoint-{epoch}.ckpt, fsyncs dir, traces ckpt_save. Unlinks tmp on
 * failure. */
int ckpt_commit(const char *dir, const char *tmp, int epoch, char *err, size_t errlen);
/* ckpt_write_temp + ckpt_commit: dir/checkpoint-{d->epoch}.ckpt. 0, or -1 and one line in err. */
int ckpt_save(const char *dir, const ckpt_data *d, char *err, size_t errlen);

/* Reads and verifies path (magic, size, version, CRCs, consistency). 0, or -1 with one line. */
int ckpt_read_file(const char *path, ckpt_file *f, char *err, size_t errlen);
void ckpt_file_free(ckpt_file *f);
/* 0 if f satisfies want; else -1 and one line naming path and both sides. */
int ckpt_check(const ckpt_file *f, const ckpt_expect *want, const char *path, char *err,
               size_t errlen);
/* Reads dir/checkpoint-{epoch}.ckpt, checks it against want (NULL: no requirement) and the
 * epoch stored in it, traces ckpt_restore. On error f holds nothing to free. */
int ckpt_load(const char *dir, int epoch, const ckpt_expect *want, ckpt_file *f, char *err,
              size_t errlen);

/* Newest epoch e <= max_epoch (max_epoch <= 0: any) whose dir/checkpoint-e.ckpt is valid and
 * satisfies want; 0 if none or dir does not exist. Each invalid file it tries gets one line
 * on stderr ("hvdlab: warning: <message>; skipped") and the search goes on to older ones.
 * -1 and one line in err only when dir exists but cannot be listed. */
int ckpt_latest_epoch(const char *dir, const ckpt_expect *want, int max_epoch, char *err,
                      size_t errlen);

/* The name of an optimizer code as messages show it: its kind's name (optim.h), "no" (-1),
 * else "optimizer-kind-N". */
const char *ckpt_opt_name(int kind);

/* ---- model layer (ckpt_model.c) ---- */

/* The checkpoint contents of (cfg, ps, opt) at epoch. opt may be NULL (no optimizer state). */
ckpt_data ckpt_data_of(const wrn_config *cfg, const param_set *ps, const optimizer *opt,
                       int epoch);
/* Requirements that make a file loadable into (cfg, ps, opt): config, optimizer kind, counts
 * and view tables. */
ckpt_expect ckpt_expect_of(const wrn_config *cfg, const param_set *ps, const optimizer *opt);

int ckpt_save_params(const char *dir, int epoch, const wrn_config *cfg, const param_set *ps,
                     const optimizer *opt, char *err, size_t errlen);
/* Loads params, state, optimizer state, iterations and last_lr (opt may be NULL: skipped);
 * traces params when=restore. Nothing is changed when it fails. */
int ckpt_load_params(const char *dir, int epoch, const wrn_config *cfg, param_set *ps,
                     optimizer *opt, char *err, size_t errlen);

/* The same on a wrn_model (inline, so that programs that never call them need not link wrn.c). */
static inline int ckpt_save_model(const char *dir, int epoch, wrn_model *m, const optimizer *opt,
                                  char *err, size_t errlen)
{
    return ckpt_save_params(dir, epoch, wrn_get_config(m), wrn_params(m), opt, err, errlen);
}
static inline int ckpt_load_model(const char *dir, int epoch, wrn_model *m, optimizer *opt,
                                  char *err, size_t errlen)
{
    return ckpt_load_params(dir, epoch, wrn_get_config(m), wrn_params(m), opt, err, errlen);
}
/* ckpt_latest_epoch with the requirements of (m, opt): config, optimizer kind, counts, views. */
static inline int ckpt_latest_model(const char *dir, wrn_model *m, const optimizer *opt,
                                    int max_epoch, char *err, size_t errlen)
{
    ckpt_expect want = ckpt_expect_of(wrn_get_config(m), wrn_params(m), opt);
    return ckpt_latest_epoch(dir, &want, max_epoch, err, errlen);
}

#endif
