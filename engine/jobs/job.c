/* job.c: pgn_job_run, the engine's single entry point for running a validated job spec. */
#include "bench/bench.h"
#include "inet/inet.h"
#include "jobs/sleep.h"
#include "tensor/tensor.h"

int pgn_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    *result = NULL;
    pgn_run_options defaults = {.data_dir = PGN_DEFAULT_DATA_DIR};
    if (!opts) opts = &defaults;
    switch (spec->kind) {
    case PGN_JOB_TRAIN: return pgn_train_run(spec, dev, opts, hooks, result, err);
    case PGN_JOB_INET: return pgn_inet_job_run(spec, dev, opts, hooks, result, err);
    case PGN_JOB_BENCH: return pgn_bench_job_run(spec, dev, opts, hooks, result, err);
    case PGN_JOB_GENERATE: return pgn_generate_run(spec, dev, opts, hooks, result, err);
    case PGN_JOB_SLEEP: return pgn_sleep_run(&spec->sleep, hooks, result, err);
    }
    pgn_error_set(err, PGN_E_INVALID_SPEC, "kind", "kind: unsupported job kind");
    return -1;
}
