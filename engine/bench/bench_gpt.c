/* bench_gpt.c: the gpt suite and the char-gpt benchmark behind it and bench-gpt: the character
 * GPT of examples/jobs/char-gpt.json trained on the fortunes for a few steps (ms/step, tokens/s,
 * GFLOP/s, the validation loss reached, parameters), then characters/s of generation at batch 1
 * from the checkpoint that run wrote. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

/* ---- the benchmark ------------------------------------------------------------------------
 * char-gpt.json's model (4 layers, d_model 128, 4 heads, context 64) and batch (32 windows),
 * AdamW lr 1e-3 and weight decay 0.01 as there, but a constant learning rate and no clipping:
 * bench/gpt_torch.py's defaults, so that PyTorch runs the same optimisation. */
#define GPT_SEED 0
/* Generation starts from a line break (where a fortune starts) and takes the likeliest
 * character each time: the same text on every device, and no sampling in the timed loop. */
#define GEN_PROMPT "\n"
#define GEN_TEMPERATURE 0.0

int pgn_bench_gpt_spec(const pgn_bench_gpt_config *cfg, pgn_job_spec *spec, pgn_error *err) {
    json_t *j = json_pack("{s:s, s:s, s:I, s:{s:s, s:i, s:i, s:i, s:i, s:f, s:b}, s:{s:s},"
                          " s:{s:s, s:f, s:f, s:s, s:f}, s:i, s:i, s:i, s:i, s:i, s:i}",
                          "kind", "train", "name", "char-gpt", "seed", (json_int_t)GPT_SEED, "model", "type", "gpt",
                          "n_layer", 4, "n_head", 4, "d_model", 128, "context", 64, "dropout", 0.0,
                          "tie_embeddings", 1, "data", "source", "fortunes", "optimizer", "type", "adamw", "lr",
                          1e-3, "weight_decay", 0.01, "schedule", "constant", "clip_norm", 0.0, "batch_size", 32,
                          "steps", cfg->steps, "log_every", cfg->log_every, "eval_every", cfg->steps,
                          "eval_windows", cfg->eval_windows, "checkpoint_every", 0);
    /* Through the tensor engine itself, not the job front door (engine/jobs), which is above
     * the benchmarks. */
    *spec = (pgn_job_spec){.kind = PGN_JOB_TRAIN, .name = "char-gpt", .device = "auto", .seed = GPT_SEED};
    int rc = j ? pgn_train_spec_parse(j, &spec->train, err) : pgn_bench_oom(err);
    json_decref(j);
    return rc;
}

/* Characters from the checkpoint in dir at batch 1: the generate job's result. */
static int generate(const pgn_bench_gpt_config *cfg, pgn_device *dev, const char *dir, const pgn_run_hooks *hooks,
                    json_t **result, pgn_error *err) {
    json_t *j = json_pack("{s:s, s:s, s:i, s:f}", "kind", "generate", "prompt", GEN_PROMPT, "max_tokens",
                          cfg->gen_chars, "temperature", GEN_TEMPERATURE);
    pgn_job_spec spec = {.kind = PGN_JOB_GENERATE, .name = "char-gpt", .device = "auto"};
    int rc = j ? pgn_generate_spec_parse(j, &spec.generate, err) : pgn_bench_oom(err);
    json_decref(j);
    char path[PGN_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, PGN_CHECKPOINT_FILE);
    /* Characters are not passed on as they come: the timed loop is the model's alone. */
    pgn_run_hooks quiet = {0};
    if (hooks) quiet = (pgn_run_hooks){.ctx = hooks->ctx, .on_log = hooks->on_log, .should_stop = hooks->should_stop};
    pgn_run_options opts = {.source_checkpoint = path};
    if (rc == 0) rc = pgn_generate_run(&spec, dev, &opts, &quiet, result, err);
    free(spec.generate.prompt);
    return rc;
}

int pgn_bench_gpt_run(const pgn_bench_gpt_config *cfg, pgn_device *dev, const char *data_dir,
                      const pgn_run_hooks *hooks, json_t **train, json_t **generated, pgn_error *err) {
    *train = *generated = NULL;
    pgn_job_spec spec;
    if (pgn_bench_gpt_spec(cfg, &spec, err)) return -1;
    const char *tmp = getenv("TMPDIR");
    char dir[PGN_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/paragon-bench-gpt-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (cfg->gen_chars && !mkdtemp(dir)) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "bench: cannot make a directory for the checkpoint in %s: %s",
                      tmp && tmp[0] ? tmp : "/tmp", strerror(errno));
        return -1;
    }
    pgn_run_options opts = {.data_dir = data_dir, .checkpoint_dir = cfg->gen_chars ? dir : NULL};
    int rc = pgn_train_run(&spec, dev, &opts, hooks, train, err);
    if (rc == 0 && cfg->gen_chars) rc = generate(cfg, dev, dir, hooks, generated, err);
    if (cfg->gen_chars) {
        char path[PGN_PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", dir, PGN_CHECKPOINT_FILE);
        unlink(path);
        rmdir(dir);
    }
    if (rc) {
        json_decref(*train);
        *train = NULL;
    }
    return rc;
}

/* ---- the gpt suite ------------------------------------------------------------------------
 * Case char-gpt: the benchmark's training for GPT_STEPS steps, ms/step the median of its
 * GPT_LOG_EVERY-step windows, the validation loss over GPT_EVAL_WINDOWS windows at the end.
 * Case generate: GPT_GEN_CHARS characters from that run's checkpoint (selected alone, it still
 * trains first: the checkpoint comes from the training). One run whatever ctx->repeats: the
 * median is over the run's windows. A machine without the fortunes gets a log line, no rows. */
#define GPT_STEPS 40        /* about 4 s on pocl here: --suite all stays in seconds */
#define GPT_LOG_EVERY 10    /* four windows of ten steps for the median */
#define GPT_EVAL_WINDOWS 64 /* two batches of 32 */
#define GPT_GEN_CHARS 200   /* the first 63 see a shorter context than the model's 64 */

int pgn_bench_gpt(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    bool train = pgn_bench_wants(ctx, "char-gpt"), gen = pgn_bench_wants(ctx, "generate");
    if (!train && !gen) return 0;
    if (pgn_bench_check_stop(ctx, err)) return -1;
    pgn_bench_gpt_config cfg = {.steps = ctx->steps > 0 ? ctx->steps : GPT_STEPS,
                                .log_every = GPT_LOG_EVERY,
                                .eval_windows = GPT_EVAL_WINDOWS,
                                .gen_chars = gen ? GPT_GEN_CHARS : 0};
    json_t *trained, *generated;
    if (pgn_bench_gpt_run(&cfg, ctx->dev, ctx->data_dir, ctx->hooks, &trained, &generated, err)) {
        if (err->code != PGN_E_DATA || strcmp(err->field, "data.source")) return -1;
        pgn_hooks_log(ctx->hooks, "gpt: skipped on %s: %s", ctx->info->id, err->message);
        pgn_error_clear(err);
        return 0;
    }
    if (train) {
        json_t *row = pgn_bench_row(ctx, "gpt", "char-gpt");
        static const char *const keys[] = {"steps", "ms_per_step", "tokens_per_second", "gflops", "val_loss",
                                           "params", "vocab", "weights_sha256", "launches_per_step"};
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            json_object_set(row, keys[i], json_object_get(trained, keys[i]));
        json_array_append_new(rows, row);
    }
    if (gen) {
        json_t *row = pgn_bench_row(ctx, "gpt", "generate");
        json_object_set(row, "characters", json_object_get(generated, "tokens"));
        json_object_set(row, "characters_per_second", json_object_get(generated, "tokens_per_second"));
        json_object_set(row, "params", json_object_get(trained, "params"));
        json_object_set(row, "vocab", json_object_get(trained, "vocab"));
        json_array_append_new(rows, row);
    }
    json_decref(trained);
    json_decref(generated);
    return 0;
}
