/* bench.h: the benchmark suites' shared pieces, for engine/bench*.c and tests. A suite appends
 * rows to a JSON array: one flat object per case and device, with the common keys
 *   "suite", "case", "device" (device id, "host" for the host reference alone), "adapter"
 *   (the device's name), "version" (PGN_VERSION)
 * and the suite's own figures (bench.c's column table lists them, in order, per suite). Times are
 * milliseconds (`*_ms`), throughputs per second, bandwidths GB/s (1e9 bytes). */
#ifndef PGN_BENCH_H
#define PGN_BENCH_H

#include "tensor/tensor.h"

typedef struct pgn_bench_ctx {
    pgn_device *dev;          /* the device under test; NULL: the host pseudo-device */
    const pgn_device_info *info;
    int repeats;              /* timed repeats after warm-up; the figure is their median */
    const char *const *cases; /* only these case ids; NULL: every case of the suite */
    size_t n_cases;
    const pgn_run_hooks *hooks; /* on_log for progress lines, should_stop polled between cases */
    const char *data_dir;       /* datasets (the train suite) */
    int steps;                  /* training steps of the gpt suite; 0: its own GPT_STEPS (tests
                                   shorten the run; the row says how many ran) */
    json_t *listing;            /* set: nothing runs; pgn_bench_wants appends each case id here */
    struct pgn_bench_count *count; /* cases begun of the run's total: on_progress (NULL: none) */
    pgn_measured_rates *rates;  /* what the run measured of the device's rates: each suite sets its
                                   figure (pgn_measured_rates says which); NULL: not kept */
} pgn_bench_ctx;

/* A run's cases: how many there are and how many have begun (pgn_bench_wants counts them). */
typedef struct pgn_bench_count {
    size_t begun, total;
} pgn_bench_count;

/* One GEMM a benchmark times: C (M x N) = op(A) op(B) with inner dimension K; ta/tb say
 * whether A/B are stored transposed. */
typedef struct {
    const char *name;
    int M, N, K;
    bool ta, tb;
} pgn_gemm_shape;

/* The Fashion-MNIST MLP 784-256-256-10's GEMMs at batch 128 (forward x w, dW = x^T dz,
 * dX = dz w^T): the gemm suite and bench-gemm both time them. */
#define PGN_MLP_GEMM_SHAPES 8
extern const pgn_gemm_shape pgn_mlp_gemm_shapes[PGN_MLP_GEMM_SHAPES];

/* A new row {"suite", "case", "device", "adapter", "version"} for ctx's device; the caller sets
 * the figures and appends it. */
json_t *pgn_bench_row(const pgn_bench_ctx *ctx, const char *suite, const char *case_id);
/* Whether ctx selects case_id (no filter selects every case). Every suite asks it before any
 * work on a case, which is how pgn_bench_cases lists them: a listing ctx records the id and
 * selects nothing. */
bool pgn_bench_wants(const pgn_bench_ctx *ctx, const char *case_id);
/* Whether a case filter names case_id: for cases that run only when asked for by name. */
bool pgn_bench_named(const pgn_bench_ctx *ctx, const char *case_id);
/* A run of an op or a pass, `calls` times over, queued without waiting. */
typedef int (*pgn_bench_run_fn)(void *arg, int calls, pgn_error *err);
/* Seconds per call: the median of reps timed runs of `calls` calls and one wait each, after one
 * untimed run (so the device's figures include the launches but never a finish per op). */
int pgn_bench_time_calls(pgn_bench_run_fn run, void *arg, int calls, int reps, double *sec,
                         pgn_error *err);
/* The number of calls that makes a run last about 5 ms (a micro-benchmark). */
int pgn_bench_calibrate_calls(pgn_bench_run_fn run, void *arg, int *calls, pgn_error *err);
/* "bench: out of memory"; returns -1. */
int pgn_bench_oom(pgn_error *err);
/* Fails with "cancelled" when hooks->should_stop says so; 0 otherwise. */
int pgn_bench_check_stop(const pgn_bench_ctx *ctx, pgn_error *err);

/* The suites, one file each (bench_mlp.c, bench_micro.c, bench_gemm.c, bench_inet.c,
 * bench_train.c, bench_gpt.c). Each appends its rows to rows; -1 with err on failure (rows
 * appended so far stay). */
int pgn_bench_mlp_forward(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);
int pgn_bench_tensor_micro(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);
int pgn_bench_gemm(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);
int pgn_bench_inet(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);
int pgn_bench_train(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);
int pgn_bench_gpt(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);
/* The cost model's probes (bench_cost.c): the train suite's cost-xor, cost-fashion and
 * cost-gpt, each run only when named; they set ctx->rates->train. */
int pgn_bench_cost_train(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err);

/* Kernels the engine queues, counted on its runs (launches_per_step in a train result): an MLP's
 * training step (train.c's run_batch: two gathers, the forward, backward and update, the loss's
 * statistics) 9 for one layer and 5 more for each further one; an evaluation batch the gathers,
 * a GEMM with its epilogue a layer, the loss and its statistics; a gpt's step 17 outside its
 * blocks, 36 a block and 2 for clipping (the global norm, the scale). The cost model counts with
 * them (cost.c), and its probes take a step's launches off its time with them (bench_cost.c). */
#define PGN_MLP_STEP_LAUNCHES(layers) (4.0 + 5.0 * (layers))
#define PGN_MLP_EVAL_LAUNCHES(layers) (4.0 + (layers))
#define PGN_GPT_STEP_LAUNCHES(n_layer, clips) (17.0 + 36.0 * (n_layer) + ((clips) ? 2.0 : 0.0))
/* Of a training step's FLOPs and kernels, what its forward alone (an evaluation) takes: the
 * backward is about twice the forward. */
#define PGN_FORWARD_SHARE (1.0 / 3.0)
/* Fashion-MNIST's two sets, read whole whatever train_samples keeps (data.c's take_first). */
#define PGN_FASHION_TRAIN 60000.0
#define PGN_FASHION_TEST 10000.0

/* The char-gpt benchmark (bench_gpt.c): the gpt suite's run and bench-gpt's paragon side. */
typedef struct pgn_bench_gpt_config {
    int steps, log_every, eval_windows;
    int gen_chars; /* characters generated from the trained checkpoint; 0: no generation */
} pgn_bench_gpt_config;

/* The train spec of examples/jobs/char-gpt.json's model, batch and AdamW, at a constant learning
 * rate without clipping, for cfg's steps, log windows and validation windows (evaluated once, at
 * the end). bench-gpt gives PyTorch the same figures from it. */
int pgn_bench_gpt_spec(const pgn_bench_gpt_config *cfg, pgn_job_spec *spec, pgn_error *err);
/* Trains it on dev (NULL: the host reference); *train is the run's result (ms_per_step,
 * tokens_per_second, gflops, val_loss, params, vocab, ...). Then, when cfg->gen_chars, generates
 * that many characters at batch 1, temperature 0, from the checkpoint the run wrote to a
 * temporary directory (removed after); *generate is that run's result (tokens_per_second: the
 * generation loop alone), else NULL. Data errors (no fortunes) keep their code, "data". */
int pgn_bench_gpt_run(const pgn_bench_gpt_config *cfg, pgn_device *dev, const char *data_dir,
                      const pgn_run_hooks *hooks, json_t **train, json_t **generate, pgn_error *err);

/* A bench job: {"suite", "device", "rows": [...]} (bench.c). */
int pgn_bench_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                      const pgn_run_hooks *hooks, json_t **result, pgn_error *err);

/* The bench part of a job spec (suite, cases, repeats) from its root object (bench_spec.c),
 * and back, as a new object. */
int pgn_bench_spec_parse(const json_t *root, pgn_bench_spec *b, pgn_error *err);
json_t *pgn_bench_spec_to_json(const pgn_bench_spec *b);

#endif
