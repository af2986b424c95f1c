/* bench_train.c: the train suite: the Fashion-MNIST MLP of examples/jobs/fashion-mlp.json for
 * a few epochs through the tensor engine: s/epoch, samples/s, GFLOP/s and the accuracy reached. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* ---- train --------------------------------------------------------------------------------
 * The Fashion-MNIST MLP of examples/jobs/fashion-mlp.json for TRAIN_EPOCHS epochs: seconds per
 * epoch (median, training loop only), samples/s, GFLOP/s and the test accuracy reached. */
#define TRAIN_EPOCHS 2

int pgn_bench_train(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    if (pgn_bench_cost_train(ctx, rows, err)) return -1;
    if (!pgn_bench_wants(ctx, "fashion-mlp")) return 0;
    json_t *j = json_pack("{s:s, s:s, s:I, s:{s:s, s:[iiii], s:s}, s:{s:s}, s:{s:s, s:f, s:f}, s:i, s:i}",
                          "kind", "train", "name", "fashion-mlp", "seed", (json_int_t)0, "model", "type", "mlp",
                          "layers", 784, 256, 256, 10, "activation", "relu", "data", "source", "fashion-mnist",
                          "optimizer", "type", "sgd", "lr", 0.05, "momentum", 0.9, "batch_size", 128, "epochs",
                          TRAIN_EPOCHS);
    /* Through the tensor engine itself, not the job front door (engine/jobs), which is above
     * the benchmarks. */
    pgn_job_spec spec = {.kind = PGN_JOB_TRAIN, .name = "fashion-mlp", .device = "auto", .seed = 0};
    int rc = j ? pgn_train_spec_parse(j, &spec.train, err) : -1;
    json_decref(j);
    if (rc) return -1;
    pgn_run_options opts = {.data_dir = ctx->data_dir};
    json_t *result = NULL;
    if (pgn_train_run(&spec, ctx->dev, &opts, ctx->hooks, &result, err)) return -1;
    json_t *row = pgn_bench_row(ctx, "train", "fashion-mlp");
    static const char *const keys[] = {"epochs",        "seconds_per_epoch", "samples_per_second", "gflops",
                                       "test_accuracy", "weights_sha256",    "launches_per_step"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        json_object_set(row, keys[i], json_object_get(result, keys[i]));
    json_decref(result);
    json_array_append_new(rows, row);
    return 0;
}
