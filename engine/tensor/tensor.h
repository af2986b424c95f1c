/* tensor.h: the tensor engine's shared declarations (engine/tensor/): tensors on a device (or
 * the host), the op launchers, datasets, safetensors files and checkpoints, and the training run.
 * Built on the core (core.h); nothing outside engine/tensor, engine/bench and engine/jobs uses it. */
#ifndef PGN_TENSOR_H
#define PGN_TENSOR_H

#include "core.h"

/* ---- tensors (tensor.c) ----------------------------------------------------------------- */

/* A 2-D row-major array of 4-byte elements (float32, or int32 for labels) living on one
 * device. dev == NULL means the host pseudo-device: data is in `host`, otherwise in `mem`.
 * Ownership: the tensor owns its storage; pgn_tensor_release frees it. */
typedef struct pgn_tensor {
    pgn_device *dev;
    int rows, cols;
    void *host;
    cl_mem mem;
    bool view; /* storage belongs to another tensor (pgn_tensor_view) */
} pgn_tensor;

int pgn_tensor_init(pgn_tensor *t, pgn_device *dev, int rows, int cols, pgn_error *err);
/* Before the tensor's device closes: under Oclgrind's checker the device keeps the buffer. */
void pgn_tensor_release(pgn_tensor *t);
/* t shares all of parent's storage (no copy, no sub-buffer: parent may itself be a view or a
 * share). The parent must outlive it. */
int pgn_tensor_share(pgn_tensor *t, pgn_tensor *parent, pgn_error *err);
/* A (rows, cols) tensor over parent's elements from offset on; offset * 4 must be a multiple
 * of pgn_tensor_view_align(parent's device) elements. The parent must outlive the view. */
int pgn_tensor_view(pgn_tensor *t, pgn_tensor *parent, size_t offset, int rows, int cols,
                    pgn_error *err);
/* Element alignment of view offsets on dev (NULL: host). */
size_t pgn_tensor_view_align(const pgn_device *dev);
static inline size_t pgn_tensor_count(const pgn_tensor *t) { return (size_t)t->rows * t->cols; }
/* Copies count elements from src into the tensor's first elements (blocking). */
int pgn_tensor_write(pgn_tensor *t, const void *src, size_t count, pgn_error *err);
/* Copies the tensor's first count elements into dst (blocking: waits for queued work). */
int pgn_tensor_read(const pgn_tensor *t, void *dst, size_t count, pgn_error *err);
int pgn_tensor_fill_zero(pgn_tensor *t, pgn_error *err);

/* The tensor engine's own per-device state (the device holds it for it: pgn_device.part): the
 * scratch of GEMM's packed panels (gemm.c) and of column sums' partials (ops.c), each grown by
 * pgn_device_scratch_reserve, never shrunk, released with the device. */
typedef struct pgn_tensor_scratch {
    cl_mem gemm, reduce;
    size_t gemm_bytes, reduce_bytes;
} pgn_tensor_scratch;
/* dev's scratch, made on first use; NULL (err says why) without memory. */
pgn_tensor_scratch *pgn_tensor_scratch_of(pgn_device *dev, pgn_error *err);
/* Where a column sum's chunk partials (chunks x cols floats) go (ops.c): defer when given (its
 * storage, for pgn_op_finish_sums), else dev's reduction scratch (grown) into *ws, or on the host
 * (dev NULL) a malloc'd *host_part the caller frees after finishing them. op names errors. */
int pgn_tensor_partials(pgn_device *dev, int chunks, int cols, pgn_tensor *defer, cl_mem *ws, float **host_part,
                        const char *op, pgn_error *err);

/* ---- ops (ops.c) -------------------------------------------------------------------------
 * Each op runs the host reference when the tensors live on the host, or queues its kernel
 * (no finish) on the tensors' device. Shapes are checked; rows may be fewer than allocated
 * (a short last batch) where an op takes an explicit row count. */

/* C (M,N) = op(A) op(B). A is stored (M,K), or (K,M) when ta; B (K,N), or (N,K) when tb. */
int pgn_op_gemm(int M, int N, int K, const pgn_tensor *a, bool ta, const pgn_tensor *b, bool tb,
                pgn_tensor *c, pgn_error *err);
/* z = op(A) op(B) + bias, y = act(z) in one pass on a device (the GEMM's epilogue); on the host
 * the reference gemm then bias_act_forward. Bit-identical to those two ops. */
int pgn_op_gemm_bias_act(int M, int N, int K, const pgn_tensor *a, bool ta, const pgn_tensor *b,
                         bool tb, pgn_tensor *z, const pgn_tensor *bias, int act, pgn_tensor *y,
                         pgn_error *err);
/* A (K, N) weight matrix packed once into the GEMM's panels on its device, for many products of
 * few rows (inference) without repacking on each (engine/tensor/gemm.c). Owns its panels. */
typedef struct pgn_gemm_packed {
    int K, N;
    pgn_tensor panels;
} pgn_gemm_packed;
/* Queues the packing of w (not waited for). */
int pgn_gemm_pack(const pgn_tensor *w, int K, int N, pgn_gemm_packed *out, pgn_error *err);
void pgn_gemm_packed_release(pgn_gemm_packed *p);
/* z (M, N) = a (M, K) W + bias, y = act(z): pgn_op_gemm_bias_act's bits on a packed W. */
int pgn_op_gemm_bias_act_packed(int M, const pgn_tensor *a, const pgn_gemm_packed *w, pgn_tensor *z,
                                const pgn_tensor *bias, int act, pgn_tensor *y, pgn_error *err);

/* Device scratch bytes pgn_op_gemm needs for that call (0: none). */
size_t pgn_gemm_workspace_bytes(int M, int N, int K, bool ta, bool tb);
/* Grows dev's GEMM scratch to at least bytes (waits for queued work first when it grows), so
 * planned GEMMs never allocate in a step loop. A no-op for the host (dev == NULL). */
int pgn_gemm_reserve(pgn_device *dev, size_t bytes, pgn_error *err);
/* z (rows, cols) += bias (1, cols); y = act(z) (a PGN_ACT_CODE_*). y may be z for no act. */
int pgn_op_bias_act_forward(int rows, pgn_tensor *z, const pgn_tensor *bias, int act,
                            pgn_tensor *y, pgn_error *err);
/* dz = dy act'(z) (y is the forward output), db = column sums of dz; with defer (not NULL), the
 * sums' chunk partials (chunks x cols) go there instead, for pgn_op_finish_sums, and db is unused. */
int pgn_op_bias_act_backward(int rows, const pgn_tensor *z, const pgn_tensor *y,
                             const pgn_tensor *dy, int act, pgn_tensor *dz, pgn_tensor *db,
                             pgn_tensor *defer, pgn_error *err);
int pgn_op_act_forward(int rows, int act, const pgn_tensor *x, pgn_tensor *y, pgn_error *err);
int pgn_op_act_backward(int rows, int act, const pgn_tensor *x, const pgn_tensor *y,
                        const pgn_tensor *dy, pgn_tensor *dx, pgn_error *err);
/* mask = 0 with probability p else 1/(1-p), drawn from (seed, step, element); y = x mask. */
int pgn_op_dropout_forward(int rows, const pgn_tensor *x, float p, uint64_t seed, uint64_t step,
                           pgn_tensor *mask, pgn_tensor *y, pgn_error *err);
int pgn_op_mul(int rows, const pgn_tensor *a, const pgn_tensor *b, pgn_tensor *out, pgn_error *err);
int pgn_op_add(int rows, const pgn_tensor *a, const pgn_tensor *b, pgn_tensor *out, pgn_error *err);
/* out (1, cols) = column sums of the first rows rows of x; with defer, their chunk partials there
 * (as pgn_op_bias_act_backward's). */
int pgn_op_colsum(int rows, const pgn_tensor *x, pgn_tensor *out, pgn_tensor *defer, pgn_error *err);
/* The finish of column sums deferred from several ops, one launch: table holds n_entries entries
 * of PGN_SUM_ENTRY int32 (first column of the entry among total, columns n, partials offset,
 * partials row stride, out offset); out[out_off + j] = the chunks' partials[poff + c stride + j]
 * summed in chunk order. */
#define PGN_SUM_ENTRY 5
int pgn_op_finish_sums(int n_entries, int total, int chunks, const pgn_tensor *table, const pgn_tensor *partials,
                       pgn_tensor *out, pgn_error *err);
/* dst (rows, cols) = src (1, cols) * scale in every row. */
int pgn_op_broadcast_rows(int rows, const pgn_tensor *src, float scale, pgn_tensor *dst,
                          pgn_error *err);
/* Fused softmax + cross-entropy on the first rows rows of logits (rows, classes) with int32
 * labels (rows, 1): dlogits = (softmax - onehot) * scale, loss (rows, 1), pred (rows, 1) int32. */
int pgn_op_softmax_xent(int rows, const pgn_tensor *logits, const pgn_tensor *labels, float scale,
                        pgn_tensor *dlogits, pgn_tensor *loss, pgn_tensor *pred, pgn_error *err);
/* Fused squared error against one-hot labels: loss[r] = sum_j (x - t)^2, dx = 2 (x - t) scale. */
int pgn_op_mse_onehot(int rows, const pgn_tensor *x, const pgn_tensor *labels, float scale,
                      pgn_tensor *dx, pgn_tensor *loss, pgn_tensor *pred, pgn_error *err);
/* dst row r = src row idx[offset + r], for 4-byte elements of any kind. */
int pgn_op_gather_rows(int rows, const pgn_tensor *src, const pgn_tensor *idx, int offset,
                       pgn_tensor *dst, pgn_error *err);
/* Where a batch of text windows starts (pgn_window_start in kernels/pgn_ops.h): at random in
 * [lo, lo + span) by the counter RNG from seed, or evenly over span for total windows. */
typedef struct pgn_window_plan {
    bool random;
    uint64_t seed, lo, span, total;
} pgn_window_plan;
/* B windows of T tokens from tokens (n, 1) int32, the i-th of them plan's window index0 + i:
 * x (B*T, 1) its first T tokens, y (B*T, 1) the T that follow each (next-token labels). Every
 * window must lie inside tokens (start + T < n): the caller's plan guarantees it. */
int pgn_op_windows(int B, int T, const pgn_tensor *tokens, const pgn_window_plan *plan, uint64_t index0,
                   pgn_tensor *x, pgn_tensor *y, pgn_error *err);
/* stats[2 slot] = sum of loss[0..rows) in order; stats[2 slot + 1] = count of pred == label. */
int pgn_op_loss_stats(int rows, const pgn_tensor *loss, const pgn_tensor *pred,
                      const pgn_tensor *labels, pgn_tensor *stats, int slot, pgn_error *err);
/* partials[c] = sum of squares, in order, of the ranges[2c + 1] elements of x from ranges[2c]
 * (ranges: int32 pairs), for c < n. */
int pgn_op_sumsq_ranges(const pgn_tensor *x, int n, const pgn_tensor *ranges, pgn_tensor *partials,
                        pgn_error *err);
/* out[0] = sqrt(sum of partials in order); out[1] = min(1, max_norm / (norm + 1e-6)), or 1
 * when max_norm <= 0. */
int pgn_op_clip_scale(int n_partials, const pgn_tensor *partials, float max_norm,
                      pgn_tensor *out, pgn_error *err);
/* SGD over w with gradient g * scale[1]; v is the momentum buffer. */
int pgn_op_sgd_update(pgn_tensor *w, const pgn_tensor *g, pgn_tensor *v, const pgn_tensor *scale,
                      float lr, float mu, bool nesterov, float wd, pgn_error *err);
typedef struct pgn_adam_args {
    float lr, b1, b2, eps, bc1, bc2, wd; /* bc = 1 - beta^t, computed by the host per step */
    bool decoupled;                      /* AdamW */
} pgn_adam_args;
int pgn_op_adam_update(pgn_tensor *w, const pgn_tensor *g, pgn_tensor *m, pgn_tensor *v,
                       const pgn_tensor *scale, const pgn_adam_args *a, pgn_error *err);

/* ---- transformer ops (ops_gpt.c; bodies in kernels/pgn_gpt.h, kernels in kernels/gpt.cl) ----
 * Sequences are rows of 2-D tensors: a batch of B sequences of T tokens is B*T rows, sequence b's
 * token t at row b*T + t; rows is always a multiple of T. Every sum runs in a fixed order (no
 * float atomics), so host and device give the same bits. */

/* y (rows, C) = wte[tok[r]] + wpe[r % T]: tok int32 (rows, 1) with ids < V, wte (V, C), wpe
 * (P, C) with P >= T. */
int pgn_op_embed_forward(int rows, int T, const pgn_tensor *tok, const pgn_tensor *wte,
                         const pgn_tensor *wpe, pgn_tensor *y, pgn_error *err);
/* The embedding's backward as a scatter-add in row order: dwte (V, C) row v = the sum of dy's
 * rows r with tok[r] == v, r ascending (zero for ids that do not occur); dwpe (P, C) row t < T =
 * the sum over b ascending of dy[b*T + t], rows t >= T zero. Every element of both is written.
 * Either may be NULL (not needed). */
int pgn_op_embed_backward(int rows, int T, const pgn_tensor *tok, const pgn_tensor *dy,
                          pgn_tensor *dwte, pgn_tensor *dwpe, pgn_error *err);

/* Epsilon of LayerNorm, as GPT-2 and PyTorch's default. */
#define PGN_LAYERNORM_EPS 1e-5f
/* LayerNorm with affine w, b (each (1, C) or C elements) over each row of x (rows, C):
 * mean = sum(x)/C, var = sum((x - mean)^2)/C (sums in column order), rstd = 1/sqrt(var + eps),
 * y = (x - mean) * rstd * w + b; stats (rows, 2) receives [mean, rstd] for the backward. */
int pgn_op_layernorm_forward(int rows, const pgn_tensor *x, const pgn_tensor *w,
                             const pgn_tensor *b, pgn_tensor *y, pgn_tensor *stats, pgn_error *err);
/* dx (rows, C) from dy, x, w and the forward's stats, or dx += that when add_dx (the bits of
 * writing it elsewhere and adding: one launch fewer); dw, db (C elements) = the column sums over
 * rows (chunks of 64 rows) of dy * xhat and dy: written, not accumulated. dw and db may be NULL.
 * With defer, their chunk partials (chunks x 2C: dw's in [0, C), db's in [C, 2C)) go there
 * instead, for pgn_op_finish_sums. */
int pgn_op_layernorm_backward(int rows, const pgn_tensor *x, const pgn_tensor *w,
                              const pgn_tensor *stats, const pgn_tensor *dy, pgn_tensor *dx,
                              pgn_tensor *dw, pgn_tensor *db, bool add_dx, pgn_tensor *defer, pgn_error *err);

/* Causal multi-head self-attention of B = rows / T sequences. qkv (rows, 3C): head h (of H,
 * hd = C / H) reads q at columns h*hd.., k at C + h*hd.., v at 2C + h*hd... For each b, h and
 * query t: s[u] = (q_t . k_u) * scale for u <= t (scale = 1/sqrt(hd)), p = softmax(s) over
 * u <= t, y[b*T + t, h*hd + d] = sum over u <= t of p[u] v_u[d]. att holds p as B*H*T*T floats
 * (b, h, t, u), zero for u > t: at least that many elements, any 2-D shape. */
int pgn_op_attention_forward(int rows, int T, int H, const pgn_tensor *qkv, pgn_tensor *att,
                             pgn_tensor *y, pgn_error *err);
/* Decoding one position: y (C) = head outputs of the query at position t (of a context of T)
 * against cache (>= t + 1 rows of 3C, laid out as qkv: rows 0..t are the positions so far);
 * p (H x T floats) receives its probabilities. The bits of row t of attention_forward. */
int pgn_op_attention_decode(int t, int T, int H, const pgn_tensor *cache, pgn_tensor *p, pgn_tensor *y,
                            pgn_error *err);
/* Decoding one position: y (C) = wte[tok[0]] + wpe[pos]. */
int pgn_op_embed_at(int pos, const pgn_tensor *tok, const pgn_tensor *wte, const pgn_tensor *wpe, pgn_tensor *y,
                    pgn_error *err);
/* dqkv (rows, 3C), every element written, from dy (rows, C), the forward's qkv and att;
 * scratch (as large as att) holds the gradients of the scores. */
int pgn_op_attention_backward(int rows, int T, int H, const pgn_tensor *qkv, const pgn_tensor *att,
                              const pgn_tensor *dy, pgn_tensor *scratch, pgn_tensor *dqkv,
                              pgn_error *err);

/* ---- datasets (data.c) ------------------------------------------------------------------ */

/* n samples of `features` floats (row-major, pixels scaled to [0,1]) with int32 labels in
 * [0, classes). Ownership: the dataset owns x and y; pgn_dataset_free releases them. */
typedef struct pgn_dataset {
    int n, features, classes;
    float *x;
    int32_t *y;
} pgn_dataset;

/* Loads the training and evaluation sets a data spec names; data_dir (the datasets directory,
 * <data dir>/PGN_DATASETS_SUBDIR for a job) is where fashion-mnist is looked for first and where
 * idx paths are confined. Errors name the file at fault. */
int pgn_dataset_load(const pgn_data_spec *spec, const char *data_dir, pgn_dataset *train,
                     pgn_dataset *test, pgn_error *err);
void pgn_dataset_free(pgn_dataset *d);
/* Resolves data_dir/rel (following symlinks) into out (PATH_MAX bytes), which must then lie
 * inside the resolved data directory: a symlink may not lead a job to files outside it. field
 * names the spec field the errors blame. */
int pgn_data_resolve(const char *data_dir, const char *rel, const char *field, char *out, pgn_error *err);

/* ---- text (corpus.c) -------------------------------------------------------------------- */

/* The most distinct characters a text may have, and the share of it kept for validation: the
 * last n / PGN_TEXT_VALIDATION_DIVISOR tokens. */
#define PGN_TEXT_MAX_VOCAB 65536
#define PGN_TEXT_VALIDATION_DIVISOR 10

/* A character vocabulary: token t is chars[t], sorted ascending; characters are Unicode code
 * points (utf8) or bytes. Owns chars. */
typedef struct pgn_vocab {
    int size;
    uint32_t *chars;
    bool utf8;
} pgn_vocab;

void pgn_vocab_free(pgn_vocab *v);
/* The tokens of UTF-8 text (len bytes) into out (room for len), *n of them; bytes that are not
 * UTF-8, or a character not in v, fail naming field and the character's position. A byte
 * vocabulary's characters are the code points below 256 (Latin-1). */
int pgn_vocab_encode(const pgn_vocab *v, const char *text, size_t len, int32_t *out, size_t *n,
                     const char *field, pgn_error *err);
/* The UTF-8 bytes of token's character into out (a byte vocabulary's bytes as Latin-1, so text
 * out is always UTF-8); returns how many (1-4). */
size_t pgn_vocab_put(const pgn_vocab *v, int32_t token, char out[4]);
/* {"encoding":"utf-8"|"bytes","chars":[...]}, and back (errors: code "checkpoint", naming what). */
json_t *pgn_vocab_to_json(const pgn_vocab *v);
int pgn_vocab_from_json(const json_t *j, pgn_vocab *v, const char *what, pgn_error *err);
bool pgn_vocab_equal(const pgn_vocab *a, const pgn_vocab *b);

/* A text read whole as tokens: [0, n_train) trains, [n_train, n) validates. Owns its arrays. */
typedef struct pgn_corpus {
    pgn_vocab vocab;
    int32_t *tokens;
    int64_t n, n_train;
    char sha256[65]; /* of the text's bytes: a checkpoint resumes only on the same text */
    char what[PGN_PATH_MAX + 2]; /* "'path'" or "fortunes", for messages */
} pgn_corpus;

/* Reads a text source (PGN_DATA_TEXT: spec->path under datasets_dir, confined to it;
 * PGN_DATA_FORTUNES: Debian's fortunes package). Errors name the spec field and the file. */
int pgn_corpus_load(const pgn_data_spec *spec, const char *datasets_dir, pgn_corpus *c, pgn_error *err);
void pgn_corpus_free(pgn_corpus *c);

/* ---- safetensors (safetensors.c) -------------------------------------------------------- */

typedef struct pgn_st_entry {
    const char *name;
    pgn_tensor *t;
} pgn_st_entry;

/* The metadata key under which every write stores the SHA-256 (hex) of the whole tensor data
 * section: parameters and optimizer state alike. */
#define PGN_ST_DATA_SHA256 "data_sha256"
/* Every tensor is F32: 4 little-endian bytes an element. */
#define PGN_ST_F32_BYTES 4

/* Writes the tensors (downloaded from their device) and string metadata atomically, adding
 * PGN_ST_DATA_SHA256 to the metadata. */
int pgn_safetensors_write(const char *path, const pgn_st_entry *entries, int n,
                          const json_t *metadata, pgn_error *err);

/* The pieces of pgn_safetensors_write, for files built in memory (export.c): a tensor's header
 * entry (F32 of shape's rank dims, its bytes from offset on); the bytes that precede the tensor
 * data (the 8-byte length and the header: tensors' entries and "__metadata__", metadata's strings
 * with PGN_ST_DATA_SHA256 of data, padded to 8; malloc'd, *len bytes; NULL with err set); and a
 * file of head then data, written atomically (a temporary name, synced, renamed). */
json_t *pgn_safetensors_entry(const int64_t *shape, int rank, size_t offset);
unsigned char *pgn_safetensors_head(const json_t *tensors, const json_t *metadata,
                                    const unsigned char *data, size_t data_len, size_t *len,
                                    pgn_error *err);
int pgn_safetensors_write_bytes(const char *path, const void *head, size_t head_len,
                                const void *data, size_t data_len, pgn_error *err);

/* A safetensors file read whole and checked, none of it used yet. */
typedef struct pgn_st_file {
    const char *path;     /* borrowed: every error names it */
    json_t *header;       /* name -> {dtype, shape, data_offsets}, metadata removed; owned */
    json_t *metadata;     /* the "__metadata__" object of strings, or NULL; owned */
    unsigned char *data;  /* the tensor data section, data_len bytes; owned */
    size_t data_len;
    bool digest_checked;  /* the metadata held PGN_ST_DATA_SHA256 and it matched the data */
} pgn_st_file;

/* Reads path and checks it: header length, JSON, every tensor F32 with data_offsets in order,
 * inside the data and as long as its shape needs, the tensors tiling the data with no overlap
 * or hole, metadata all strings, and the data against PGN_ST_DATA_SHA256 when present (the
 * caller decides whether its absence is acceptable). Errors have code "checkpoint" and say
 * what is wrong. On success the caller closes f. */
int pgn_safetensors_open(const char *path, pgn_st_file *f, pgn_error *err);
/* The same from an open descriptor (read from its start, left open); path names it in errors. */
int pgn_safetensors_open_fd(int fd, const char *path, pgn_st_file *f, pgn_error *err);
/* Copies the file's tensors into entries[i].t after checking that the file holds exactly the
 * entries' names with their (rows, cols): a missing, unexpected or misshapen tensor is named
 * and nothing is copied. */
int pgn_safetensors_load(const pgn_st_file *f, const pgn_st_entry *entries, int n,
                         pgn_error *err);
/* The same for some of the file's tensors (a model's weights without its optimizer state). */
int pgn_safetensors_load_some(const pgn_st_file *f, const pgn_st_entry *entries, int n, pgn_error *err);
void pgn_safetensors_close(pgn_st_file *f);

/* Fails with code "checkpoint" and "checkpoint '<path>': <message>". Returns -1. */
int pgn_checkpoint_fail(pgn_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- training (train.c) ------------------------------------------------------------------ */

int pgn_train_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                  const pgn_run_hooks *hooks, json_t **result, pgn_error *err);
/* A gpt's run (lm.c): windows of a text, steps, validation every eval_every steps. */
int pgn_lm_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
               const pgn_run_hooks *hooks, json_t **result, pgn_error *err);
/* Steps queued before waiting for the device: bounds the queue and keeps progress honest. */
#define PGN_SYNC_EVERY_STEPS 32

/* ---- a train job's spec (train_spec.c) ---- */

/* The train part of a job spec (model, data, optimizer, batch_size, epochs, checkpoint_every)
 * from the spec's root object, defaults filled in; keys of other parts are refused. */
int pgn_train_spec_parse(const json_t *root, pgn_train_spec *t, pgn_error *err);
/* Those fields as a new object, defaults included. */
json_t *pgn_train_spec_to_json(const pgn_train_spec *t);
/* FLOPs of one sample's forward and backward pass: through the MLP (its GEMMs), or a gpt's
 * window of context tokens (at PGN_TEXT_NOMINAL_VOCAB characters; the run reports its own). */
double pgn_train_flops_per_sample(const pgn_train_spec *t);
/* A gpt's parameters and its FLOPs per token (forward and backward) at a vocabulary size. */
uint64_t pgn_gpt_param_count(const pgn_gpt_spec *g, int vocab);
double pgn_gpt_flops_per_token(const pgn_gpt_spec *g, int vocab);

/* ---- generation (generate.c) ---- */

/* A generate job's own fields from the spec's root (prompt, job, max_tokens, temperature, top_k,
 * seed, stream), and back. */
int pgn_generate_spec_parse(const json_t *root, pgn_generate_spec *g, pgn_error *err);
json_t *pgn_generate_spec_to_json(const pgn_generate_spec *g);
/* The next token from a row of V logits: the likeliest at temperature 0 (or top_k 1), else a
 * draw from softmax(logits / temperature) over the top_k likeliest (all when 0), summed in token
 * order, with the counter RNG at (seed, index): the same draw on every machine. */
int pgn_sample_token(const float *logits, int V, float temperature, int top_k, uint64_t seed, uint64_t index);
/* Runs a generate job from opts->source_checkpoint, calling hooks->on_text per character. */
int pgn_generate_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                     const pgn_run_hooks *hooks, json_t **result, pgn_error *err);

/* ---- decoding a gpt a token at a time (decode.c) ---- */

typedef struct pgn_gpt_decoder pgn_gpt_decoder;
/* A decoder of the gpt whose checkpoint f holds (its spec and vocabulary size given), on dev
 * (NULL: the host reference), at position 0. */
int pgn_gpt_decoder_open(pgn_device *dev, const pgn_gpt_spec *gpt, int vocab, const pgn_st_file *f,
                         pgn_gpt_decoder **out, pgn_error *err);
void pgn_gpt_decoder_close(pgn_gpt_decoder *d);
/* Feeds token at the next position (< context) and, when logits is not NULL, reads back the V
 * logits of the token after it: the bits the whole sequence's forward gives that row. */
int pgn_gpt_decoder_feed(pgn_gpt_decoder *d, int32_t token, float *logits, pgn_error *err);
/* Starts the sequence over with tokens[0..n) (1 <= n <= context) in one pass of n rows (the
 * bits of n feeds), reading back the logits after the last when logits is not NULL. */
int pgn_gpt_decoder_prefill(pgn_gpt_decoder *d, const int32_t *tokens, int n, float *logits, pgn_error *err);
/* Positions fed so far; reset starts the sequence over. */
int pgn_gpt_decoder_position(const pgn_gpt_decoder *d);
void pgn_gpt_decoder_reset(pgn_gpt_decoder *d);

/* ---- checkpoints (checkpoint.c) ---- */

typedef struct pgn_graph pgn_graph;
typedef struct pgn_optimizer pgn_optimizer;

/* What a finished MLP run reported of its training (NaN: not known), kept in its final
 * checkpoint's metadata under the result's names, so that resuming it, with nothing left to
 * train, reports them again rather than zeros. */
typedef struct pgn_train_report {
    double train_loss, train_accuracy, seconds_per_epoch, samples_per_second;
} pgn_train_report;

/* What a checkpoint holds of a training run, and where it goes (dir NULL: nowhere). */
typedef struct pgn_train_state {
    const pgn_job_spec *spec;
    const char *dir;
    pgn_graph *graph;
    pgn_optimizer *optim;
    pgn_tensor *stats; /* the epoch's per-step statistics so far */
    int steps_per_epoch;
    int epochs;        /* mlp: the spec's; gpt: 1, its steps the one "epoch" */
    const pgn_corpus *corpus; /* gpt: its text, whose vocabulary and SHA-256 the checkpoint keeps */
    const char *file;  /* the file in dir (NULL: PGN_CHECKPOINT_FILE) */
    const pgn_st_entry *extra; /* more tensors saved and loaded with the rest (a distributed
                                  run's outer momentum), n_extra of them */
    int n_extra;
    pgn_train_report *report; /* mlp: saved with a finished run (epochs_done == epochs); a load of
                                 one fills it (each figure the metadata lacks NaN); NULL: neither */
    const pgn_run_hooks *hooks; /* may_commit, asked before a save (NULL: none) */
} pgn_train_state;

/* Writes <dir>/PGN_CHECKPOINT_FILE atomically: epochs_done whole epochs, then epoch_step steps
 * of the next (0: at an epoch boundary); sha is the weights' SHA-256. */
int pgn_checkpoint_save(const pgn_train_state *s, int epochs_done, int epoch_step, const char *sha,
                        pgn_error *err);
/* Resumes from <dir>/PGN_CHECKPOINT_FILE when there is one (else *epochs_done and *epoch_step
 * stay 0), setting the optimizer's step. Before any step runs from it, all of it checks out;
 * one that fails any check fails the run (code PGN_E_CHECKPOINT): training from scratch would
 * silently discard it. */
int pgn_checkpoint_load(const pgn_train_state *s, int *epochs_done, int *epoch_step, pgn_error *err);
/* The train spec a checkpoint holds, once its metadata shows it is one this paragon wrote (its
 * format) and its data digest was verified (code "checkpoint" otherwise). */
int pgn_checkpoint_spec(const pgn_st_file *f, pgn_train_spec *t, pgn_error *err);
/* The vocabulary a gpt checkpoint's metadata holds (code "checkpoint" when missing or malformed). */
int pgn_checkpoint_vocab(const pgn_st_file *f, pgn_vocab *v, pgn_error *err);

/* Whether dev runs the gpu family's row and column kernels (kernels/tensor_gpu.cl; its profile,
 * engine/profile.c): ops.c and ops_gpt.c launch those, PGN_LANES work-items a row (sums over a
 * row) or a row or column a work-item, in groups of PGN_GPU_GROUP. */
static inline bool pgn_rows_on_gpu(const pgn_device *dev) {
    return dev && dev->profile.family[PGN_OPS_ROWS] == PGN_FAMILY_GPU;
}
/* n rounded up to a multiple of a work-group of `group` items: a launch's range (OpenCL 1.2
 * wants whole groups); for the gpu family's group PGN_GPU_GROUP (kernels/pgn_ops.h, which the
 * callers include). */
#define pgn_range_of(n, group) (((size_t)(n) + (size_t)(group) - 1) / (size_t)(group) * (size_t)(group))
#define pgn_gpu_range(n) pgn_range_of(n, PGN_GPU_GROUP)
#define PGN_GPU_LOCAL1 ((size_t[1]){PGN_GPU_GROUP})
/* The range of a gpu-family kernel giving each of n rows PGN_LANES work-items. */
#define pgn_gpu_lanes_range(n) pgn_gpu_range((size_t)(n) * PGN_LANES)

#endif
