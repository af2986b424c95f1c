/* bench_cost.c: the cost model's probes (cost.c's pgn_train_rates): short real training runs
 * on the device, as a job runs them, which say what a step's kernels, an MLP's and a gpt's FLOPs,
 * a run's setup and an idx data set's loading cost there. A calibration runs them on a device's
 * first start; each is a case of the train suite that runs only when named:
 *   cost-xor      XOR's MLP for COST_XOR_EPOCHS epochs: one step an epoch of 14 tiny kernels,
 *                 so the epoch's time is its launches (step_launch_us); what the run took beyond
 *                 its epochs and evaluations is an MLP run's setup (mlp_setup_s), its last
 *                 checkpoint written where paragond writes them (the data directory)
 *   cost-fashion  Fashion-MNIST's MLP (examples/jobs/fashion-mlp.json's) on COST_FASHION_SAMPLES
 *                 samples: the data set's loading (load_mbps: it is read whole) and the step's FLOP
 *                 rate once its launches are taken off (mlp_gflops)
 *   cost-gpt      char-gpt.json's model with COST_GPT_LAYERS blocks for COST_GPT_STEPS steps:
 *                 the step's FLOP rate, launches apart (gpt_gflops), and the run outside its
 *                 steps (gpt_setup_s: the text, the build, the evaluation, the checkpoint)
 * A machine without the data set gets a log line and no figure; cost.c falls back to the GEMM
 * rate and the queued launch cost. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define COST_XOR_EPOCHS 40
#define COST_XOR_SAMPLES 4 /* the data set, one batch */
#define COST_FASHION_SAMPLES 2560 /* 20 steps of 128 */
#define COST_FASHION_EPOCHS 3     /* the median epoch */
#define COST_GPT_LAYERS 2
#define COST_GPT_STEPS 3 /* the mean step: the host reference takes a second or two */
/* What a step's launches may take of its time before the FLOP rate is taken from the rest: a
 * probe that measured its launches longer than its steps took has said nothing of its FLOPs. */
#define COST_MAX_LAUNCH_SHARE 0.9

/* A directory for a probe's checkpoint beside paragond's (the data directory: its disk's
 * writes and syncs are a run's), else in TMPDIR. */
static int checkpoint_dir(const char *data_dir, char *dir, size_t size, pgn_error *err) {
    snprintf(dir, size, "%s/.cost-probe-XXXXXX", data_dir);
    if (mkdtemp(dir)) return 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/paragon-cost-probe-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir)) return 0;
    pgn_error_set(err, PGN_E_INTERNAL, "", "bench: cannot make a directory for a checkpoint in %s: %s", dir,
                  strerror(errno));
    return -1;
}

static void remove_checkpoint_dir(const char *dir) {
    char path[PGN_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, PGN_CHECKPOINT_FILE);
    unlink(path);
    rmdir(dir);
}

/* Runs the train spec j (taken) on the device, its last checkpoint written when save; NULL in
 * *result, and no error, when the machine lacks its data set (logged). */
static int probe_run(const pgn_bench_ctx *ctx, json_t *j, bool save, pgn_job_spec *spec, json_t **result,
                     pgn_error *err) {
    *result = NULL;
    *spec = (pgn_job_spec){.kind = PGN_JOB_TRAIN, .device = "auto", .seed = 0};
    if (!j) return pgn_bench_oom(err);
    snprintf(spec->name, sizeof spec->name, "%s", json_string_value(json_object_get(j, "name")));
    int rc = pgn_train_spec_parse(j, &spec->train, err);
    json_decref(j);
    char dir[PGN_PATH_MAX];
    if (rc || (save && checkpoint_dir(ctx->data_dir, dir, sizeof dir, err))) return -1;
    pgn_run_options opts = {.data_dir = ctx->data_dir, .checkpoint_dir = save ? dir : NULL};
    /* the run's own log lines and progress are not the benchmark's */
    pgn_run_hooks quiet = {0};
    if (ctx->hooks) quiet = (pgn_run_hooks){.ctx = ctx->hooks->ctx, .should_stop = ctx->hooks->should_stop};
    rc = pgn_train_run(spec, ctx->dev, &opts, &quiet, result, err);
    if (save) remove_checkpoint_dir(dir);
    if (rc && err->code == PGN_E_DATA && !strcmp(err->field, "data.source")) {
        pgn_hooks_log(ctx->hooks, "%s: skipped on %s: %s", spec->name, ctx->info->id, err->message);
        pgn_error_clear(err);
        return 0;
    }
    return rc;
}

static double number(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* An MLP run's mean epoch of `samples` samples (not the median the result reports: a job's time
 * is the sum of its epochs, the slow ones too). */
static double mean_epoch(const json_t *result, double samples) {
    double rate = number(result, "samples_per_second");
    return rate > 0 ? samples / rate : 0;
}

/* A step's launch cost as measured so far in this run (cost-xor), else the queued one. */
static double step_launch_us(const pgn_bench_ctx *ctx) {
    const pgn_measured_rates *r = ctx->rates;
    return !r ? 0 : r->train.step_launch_us > 0 ? r->train.step_launch_us : r->launch_us;
}

/* FLOPs a second of a step that took seconds, launches of them at launch_us apart. */
static double flop_rate(double flops, double seconds, double launches, double launch_us) {
    double busy = seconds - launches * launch_us * 1e-6;
    if (busy < seconds * (1 - COST_MAX_LAUNCH_SHARE)) busy = seconds * (1 - COST_MAX_LAUNCH_SHARE);
    return busy > 0 ? flops / busy * 1e-9 : 0;
}

/* A probe's row of the train suite: keys copied from its run's result. */
static json_t *probe_row(const pgn_bench_ctx *ctx, const char *case_id, const json_t *result, const char *const *keys,
                         size_t n_keys) {
    json_t *row = pgn_bench_row(ctx, "train", case_id);
    for (size_t i = 0; i < n_keys; i++) json_object_set(row, keys[i], json_object_get(result, keys[i]));
    return row;
}

static int cost_xor(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:[iii], s:s}, s:{s:s}, s:{s:s, s:f, s:f}, s:i, s:i}", "kind",
                          "train", "name", "cost-xor", "model", "type", "mlp", "layers", 2, 8, 2, "activation",
                          "relu", "data", "source", "xor", "optimizer", "type", "sgd", "lr", 0.1, "momentum", 0.9,
                          "batch_size", 4, "epochs", COST_XOR_EPOCHS);
    pgn_job_spec spec;
    json_t *result;
    if (probe_run(ctx, j, true, &spec, &result, err)) return -1;
    if (!result) return 0;
    double epoch = mean_epoch(result, COST_XOR_SAMPLES), launches = number(result, "launches_per_step");
    double launch_us = launches > 0 ? epoch / launches * 1e6 : 0;
    /* an evaluation of XOR's one batch: its kernels at that cost */
    double eval = PGN_MLP_EVAL_LAUNCHES(spec.train.n_layers - 1) * launch_us * 1e-6;
    double setup = fmax(number(result, "seconds") - COST_XOR_EPOCHS * (epoch + eval), 0);
    static const char *const keys[] = {"epochs", "seconds_per_epoch", "samples_per_second", "launches_per_step"};
    json_t *row = probe_row(ctx, "cost-xor", result, keys, sizeof keys / sizeof *keys);
    json_object_set_new(row, "step_launch_us", json_real(launch_us));
    json_object_set_new(row, "setup_s", json_real(setup));
    json_array_append_new(rows, row);
    if (ctx->rates) {
        ctx->rates->train.step_launch_us = launch_us;
        ctx->rates->train.mlp_setup_s = setup;
    }
    json_decref(result);
    return 0;
}

static int cost_fashion(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:[iiii], s:s}, s:{s:s, s:i, s:i}, s:{s:s, s:f, s:f}, s:i, s:i}",
                          "kind", "train", "name", "cost-fashion", "model", "type", "mlp", "layers", 784, 256, 256,
                          10, "activation", "relu", "data", "source", "fashion-mnist", "train_samples",
                          COST_FASHION_SAMPLES, "test_samples", 128, "optimizer", "type", "sgd", "lr", 0.05,
                          "momentum", 0.9, "batch_size", 128, "epochs", COST_FASHION_EPOCHS);
    pgn_job_spec spec;
    json_t *result;
    if (probe_run(ctx, j, false, &spec, &result, err)) return -1;
    if (!result) return 0;
    double steps = ceil((double)COST_FASHION_SAMPLES / spec.train.batch_size);
    double gflops = flop_rate(pgn_train_flops_per_sample(&spec.train) * COST_FASHION_SAMPLES,
                              mean_epoch(result, COST_FASHION_SAMPLES), steps * number(result, "launches_per_step"),
                              step_launch_us(ctx));
    /* the two sets' pixels, a byte each, as the files hold them */
    double load = number(result, "load_seconds");
    double mbps = load > 0 ? (PGN_FASHION_TRAIN + PGN_FASHION_TEST) * spec.train.layers[0] / load * 1e-6 : 0;
    static const char *const keys[] = {"epochs", "seconds_per_epoch", "samples_per_second", "launches_per_step",
                                       "load_seconds"};
    json_t *row = probe_row(ctx, "cost-fashion", result, keys, sizeof keys / sizeof *keys);
    json_object_set_new(row, "gflops", json_real(gflops));
    json_object_set_new(row, "load_mbps", json_real(mbps));
    json_array_append_new(rows, row);
    if (ctx->rates) {
        ctx->rates->train.mlp_gflops = gflops;
        ctx->rates->train.load_mbps = mbps;
    }
    json_decref(result);
    return 0;
}

static int cost_gpt(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:i, s:i, s:i, s:i, s:f, s:b}, s:{s:s}, s:{s:s, s:f, s:f}, s:i, s:i,"
                          " s:i, s:i, s:i, s:i}",
                          "kind", "train", "name", "cost-gpt", "model", "type", "gpt", "n_layer", COST_GPT_LAYERS,
                          "n_head", 4, "d_model", 128, "context", 64, "dropout", 0.0, "tie_embeddings", 1, "data",
                          "source", "fortunes", "optimizer", "type", "adamw", "lr", 1e-3, "weight_decay", 0.01,
                          "batch_size", 32, "steps", COST_GPT_STEPS, "log_every", COST_GPT_STEPS, "eval_every",
                          COST_GPT_STEPS, "eval_windows", 32, "checkpoint_every", 0);
    pgn_job_spec spec;
    json_t *result;
    if (probe_run(ctx, j, true, &spec, &result, err)) return -1;
    if (!result) return 0;
    /* the mean step: the training's time, with the evaluation at the end (its one batch's
     * forward) */
    double step = number(result, "train_seconds") / (COST_GPT_STEPS + PGN_FORWARD_SHARE);
    double gflops = flop_rate(pgn_train_flops_per_sample(&spec.train) * spec.train.batch_size, step,
                              number(result, "launches_per_step"), step_launch_us(ctx));
    double setup = fmax(number(result, "seconds") - COST_GPT_STEPS * step, 0);
    static const char *const keys[] = {"steps", "ms_per_step", "tokens_per_second", "launches_per_step"};
    json_t *row = probe_row(ctx, "cost-gpt", result, keys, sizeof keys / sizeof *keys);
    json_object_set_new(row, "gflops", json_real(gflops));
    json_object_set_new(row, "setup_s", json_real(setup));
    json_array_append_new(rows, row);
    if (ctx->rates) {
        ctx->rates->train.gpt_gflops = gflops;
        ctx->rates->train.gpt_setup_s = setup;
    }
    json_decref(result);
    return 0;
}

/* In this order: the later probes take the launches cost-xor measured off their steps. */
int pgn_bench_cost_train(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    static const struct {
        const char *id;
        int (*run)(const pgn_bench_ctx *, json_t *, pgn_error *);
    } probes[] = {{"cost-xor", cost_xor}, {"cost-fashion", cost_fashion}, {"cost-gpt", cost_gpt}};
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
        if ((ctx->listing || pgn_bench_named(ctx, probes[i].id)) && pgn_bench_wants(ctx, probes[i].id) &&
            (pgn_bench_check_stop(ctx, err) || probes[i].run(ctx, rows, err)))
            return -1;
    return 0;
}
