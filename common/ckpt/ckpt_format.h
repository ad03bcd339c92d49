/* ckpt_format.h — the checkpoint file format on plain buffers: encoding a ckpt_data to a
 * descriptor, reading a file back and verifying it. It knows nothing of the model or the
 * optimizer beyond the numbers stored (a model config, an optimizer code, float arrays and the
 * view tables); what a run expects of a file, directories and the model-level save and load are
 * in ckpt.h, above it.
 *
 * Format, version 2. Little-endian; u32/u64 unsigned, i32/i64 signed two's complement, f32 IEEE.
 *
 *   offset size  field
 *        0    8  magic "HVDLCKPT"
 *        8    4  u32 version = 2 (1 is still read, see below)
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
 *      120    4  u32 resume_bytes R = 32 (the resume block; 0 in version 1)
 *      124    4  u32 header_crc = zlib crc32 of bytes 0..123
 *      128 104·(V+W)  view table, the V parameter views then the W state views, each 104 bytes:
 *                  +0 char name[64] NUL-padded ("g1.b0.conv1.w"), +64 u64 offset (in floats,
 *                  into params or state), +72 u64 count, +80 i32 ndim, +84 i32 shape[4] (PyTorch
 *                  order: conv (Cout, Cin, kh, kw), dense (out, in); unused dims 0),
 *                  +100 i32 decay (1: L2 weight decay applies)
 *        D  4·P  f32 params      where D = 128 + 104·(V+W)
 *           4·S  f32 state
 *           4·O  f32 optimizer state: SGD = velocity (P); NovoGrad = m (P) then v (V, one per view)
 *             R  resume block, what else the run's future depends on (ckpt_resume):
 *                  +0 u64 model_steps: training batches the model has run (keys its dropout masks)
 *                  +8 i32 batch: batches of epoch `epoch` (0-based) already run; 0 for the file
 *                     written at an epoch's end, > 0 for one written mid-epoch (on a signal)
 *                 +12 i32 world_size: ranks that ran those batches (elastic training resumes
 *                     with another count and maps `batch` onto it, train/resume.h); 0 = not
 *                     recorded (files written before it, or by programs outside the lab loop)
 *                 +16 i32 early_stop_count: epochs in a row above --target-accuracy after the
 *                     epoch this file ends (train/progress.h; 0 in files written before it,
 *                     which resume the count from 0 as they always did)
 *                 +20 i32 batch_size: images per batch and rank of those batches (a run resumed
 *                     with another --batch-size maps `batch` onto it, as for world_size); 0 =
 *                     not recorded
 *                 +24 8 bytes reserved = 0
 *                A reader takes the first 32 bytes and skips any more (a later version's fields).
 *                The data order, augmentation and learning rate follow from (epoch, batch) alone;
 *                the optimizer's step count and state are in the header and the arrays above.
 *   file_bytes-4  4  u32 crc32 = zlib crc32 of every byte before it
 *
 * Version 1 (no resume block, R = 0 at offset 120) still loads: its resume fields read as 0, so
 * a run resumed from it restarts the dropout counter (as version 1 itself did); the load says so
 * in one warning line.
 *
 * A view's weights are params[offset : offset+count] reshaped to shape[:ndim], so in PyTorch:
 *   torch.frombuffer(blob, dtype=torch.float32, offset=D + 4*offset, count=count).view(shape)
 * (tests/reference/ckpt_read.py does exactly this). Multi-byte fields need no alignment to read,
 * but every float array starts on a 4-byte boundary.
 *
 * Reading checks, in this order, each with its own one-line message naming the file: bad magic,
 * shorter than the header (truncated), unsupported version, header CRC, file size against
 * file_bytes (truncated / trailing bytes), whole-file CRC, internal consistency (ckpt_read_file);
 * then what the caller expects (ckpt_check, ckpt.h).
 *
 * Public (ckpt_format.c): ckpt_path, ckpt_path_at, ckpt_config_name, ckpt_write_fd,
 * ckpt_read_file, ckpt_file_free, ckpt_newer_format.
 */
#ifndef HVDLAB_CKPT_FORMAT_H
#define HVDLAB_CKPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "model/params.h" /* param_view: the view table's entries */

#define CKPT_MAGIC "HVDLCKPT"
#define CKPT_VERSION 2
#define CKPT_RESUME_BYTES 32 /* the resume block a version-2 writer stores */
#define CKPT_HEADER_BYTES 128
#define CKPT_VIEW_BYTES 104
#define CKPT_NAME_LEN 32 /* the name field at offset 36 */

/* The model config as stored: WideResNet-D-K and its dropout (the fields of wrn_config, wrn.h,
 * in the same order). */
typedef struct {
    int depth;
    int width;
    float dropout;
} ckpt_config;

/* The resume block: the run's position and counters besides weights and optimizer state. */
typedef struct {
    uint64_t model_steps; /* param_set.steps: training batches run, keys dropout */
    int batch;            /* batches of the current epoch already run (0: at an epoch's end) */
    int world_size;       /* ranks that ran them; 0: not recorded */
    int early_stop_count; /* epochs in a row above the early-stop target; 0: none or unknown */
    int batch_size;       /* images per batch and rank of those batches; 0: not recorded */
} ckpt_resume;

/* Everything a checkpoint holds. Arrays are borrowed: the writer reads them, the reader points
 * them into its file buffer (ckpt_file). */
typedef struct {
    ckpt_config cfg;          /* depth, width, dropout */
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
    ckpt_resume resume;       /* all 0 when read from a version-1 file */
} ckpt_data;

/* A checkpoint read into memory: d's arrays point into blob; views are decoded copies. */
typedef struct {
    ckpt_data d;
    char name[CKPT_NAME_LEN]; /* the "wrn-D-K" stored in the file */
    unsigned version;
    size_t file_bytes;
    size_t resume_bytes;      /* 0 in a version-1 file */
    param_view *views_buf;    /* (nviews + n_state_views) */
    void *blob;               /* the whole file */
} ckpt_file;

/* "dir/checkpoint-{epoch}.ckpt" into buf; -1 if it does not fit. */
int ckpt_path(char *buf, size_t len, const char *dir, int epoch);
/* The same for batch 0; "dir/checkpoint-{epoch}.{batch}.ckpt" for a file saved mid-epoch. */
int ckpt_path_at(char *buf, size_t len, const char *dir, int epoch, int batch);

/* The name field a writer stores for c: "wrn-D-K". */
void ckpt_config_name(const ckpt_config *c, char *buf, size_t len);

/* Writes d in the format above to fd (at its current position); path names it in messages.
 * 0, or -1 and one line in err. */
int ckpt_write_fd(int fd, const ckpt_data *d, const char *path, char *err, size_t errlen);

/* Reads and verifies path (magic, size, version, CRCs, consistency). 0, or -1 with one line. */
int ckpt_read_file(const char *path, ckpt_file *f, char *err, size_t errlen);
void ckpt_file_free(ckpt_file *f);

/* 1 when path is a checkpoint of a later format than this build reads: the magic, a version
 * above CKPT_VERSION and a header CRC that holds (a damaged version field fails the CRC). Such a
 * file is not damaged: a run stops at it rather than set it aside (ckpt_latest_epoch). */
int ckpt_newer_format(const char *path);

#endif
