/* train.c: training throughput: runs a train job spec (default examples/jobs/fashion-mlp.json)
 * on each OpenCL device (and the host with --host) and prints seconds per epoch (median,
 * training loop only), samples/s, GFLOP/s, the test accuracy reached and the kernels a training
 * step launches (0 on the host). Each device first takes
 * its fastest GEMM tile (pgn_device_calibrate), as paragond's calibration has it do.
 *   build/bench/bench-train [--spec FILE] [--epochs N] [--host] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"

static void row(const char *device, const json_t *r) {
    printf("%-14s %10.3f %12.0f %9.2f %9.4f %9lld  %.16s\n", device,
           json_real_value(json_object_get(r, "seconds_per_epoch")),
           json_real_value(json_object_get(r, "samples_per_second")),
           json_real_value(json_object_get(r, "gflops")),
           json_real_value(json_object_get(r, "test_accuracy")),
           (long long)json_integer_value(json_object_get(r, "launches_per_step")),
           json_string_value(json_object_get(r, "weights_sha256")));
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *spec_path = "examples/jobs/fashion-mlp.json";
    int epochs = 0, with_host = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--spec") && i + 1 < argc)
            spec_path = argv[++i];
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
            epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--host"))
            with_host = 1;
        else {
            fprintf(stderr, "usage: bench-train [--spec FILE] [--epochs N] [--host]\n");
            return 2;
        }
    }
    size_t len = 0;
    char *text = pgn_read_file(spec_path, &len);
    pgn_job_spec spec;
    pgn_error err = {0};
    if (!text || pgn_spec_parse_text(text, len, &spec, &err)) {
        fprintf(stderr, "bench-train: %s: %s\n", spec_path, text ? err.message : "cannot read");
        free(text);
        return 1;
    }
    free(text);
    if (epochs > 0) spec.train.epochs = epochs;
    spec.train.checkpoint_every = 0;
    printf("%s: %d epochs, batch %d\n", spec.name, spec.train.epochs, spec.train.batch_size);
    printf("%-14s %10s %12s %9s %9s %9s  %s\n", "device", "s/epoch", "samples/s", "GFLOP/s",
           "test_acc", "launches", "weights_sha256");
    pgn_device_info *list = NULL;
    size_t n = 0;
    if (pgn_devices_list(&list, &n, &err)) {
        fprintf(stderr, "bench-train: %s\n", err.message);
        return 1;
    }
    pgn_run_options opts = {.data_dir = "data"};
    int status = 0;
    for (size_t d = 0; d < n + (size_t)with_host; d++) {
        pgn_device *dev = NULL;
        const char *id = d < n ? list[d].id : "host";
        pgn_device_tuning tuned;
        if (d < n && (pgn_device_open(&list[d], &dev, &err) ||
                      pgn_device_calibrate(dev, PGN_CALIBRATION_BUDGET_S, 5, NULL, &tuned, &err))) {
            fprintf(stderr, "bench-train: %s\n", err.message);
            pgn_device_close(dev);
            status = 1;
            continue;
        }
        if (dev) pgn_device_tune(dev, &tuned);
        json_t *result = NULL;
        if (pgn_job_run(&spec, dev, &opts, NULL, &result, &err)) {
            fprintf(stderr, "bench-train: %s: %s\n", id, err.message);
            status = 1;
        } else {
            row(id, result);
            json_decref(result);
        }
        pgn_device_close(dev);
    }
    free(list);
    return status;
}
