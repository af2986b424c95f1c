/* bench_mlp.c: the mlp-forward and tensor-micro suites (being written). */
#include "bench.h"

int pgn_bench_mlp_forward(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    (void)ctx;
    (void)rows;
    pgn_error_set(err, "unsupported", "suite", "suite: mlp-forward is not written yet");
    return -1;
}

int pgn_bench_tensor_micro(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    (void)ctx;
    (void)rows;
    pgn_error_set(err, "unsupported", "suite", "suite: tensor-micro is not written yet");
    return -1;
}
