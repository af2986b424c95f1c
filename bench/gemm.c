/* gemm.c: SGEMM throughput of the host reference and each OpenCL device, with a bit-identity
 * check of every result against the host. Prints one row per (size, device).
 *   build/bench/bench-gemm [N ...]   (default sizes 128 256 512; median of 5 runs each) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pgn_math.h"

#define REPEATS 5

/* Median seconds of REPEATS runs of C = A B on dev (NULL: host), after one warm-up. */
static double time_gemm(pgn_device *dev, int n, const float *a, const float *b, float *c) {
    pgn_error err = {0};
    pgn_tensor ta, tb, tc;
    if (pgn_tensor_init(&ta, dev, n, n, &err) || pgn_tensor_init(&tb, dev, n, n, &err) ||
        pgn_tensor_init(&tc, dev, n, n, &err) || pgn_tensor_write(&ta, a, (size_t)n * n, &err) ||
        pgn_tensor_write(&tb, b, (size_t)n * n, &err)) {
        fprintf(stderr, "bench-gemm: %s\n", err.message);
        exit(1);
    }
    double t[REPEATS + 1];
    for (int r = 0; r <= REPEATS; r++) {
        double t0 = pgn_now_s();
        if (pgn_op_gemm(n, n, n, &ta, false, &tb, false, &tc, &err) ||
            pgn_device_finish(dev, &err)) {
            fprintf(stderr, "bench-gemm: %s\n", err.message);
            exit(1);
        }
        t[r] = pgn_now_s() - t0;
    }
    pgn_tensor_read(&tc, c, (size_t)n * n, &err);
    pgn_tensor_release(&ta);
    pgn_tensor_release(&tb);
    pgn_tensor_release(&tc);
    return pgn_median(t + 1, REPEATS); /* t[0] is the warm-up */
}

int main(int argc, char **argv) {
    int sizes[16] = {128, 256, 512}, n_sizes = 3;
    if (argc > 1) {
        n_sizes = 0;
        for (int i = 1; i < argc && n_sizes < 16; i++) sizes[n_sizes++] = atoi(argv[i]);
    }
    pgn_error err = {0};
    pgn_device_info *list = NULL;
    size_t n_dev = 0;
    if (pgn_devices_list(&list, &n_dev, &err)) {
        fprintf(stderr, "bench-gemm: %s\n", err.message);
        return 1;
    }
    pgn_device **devs = calloc(n_dev ? n_dev : 1, sizeof *devs);
    for (size_t d = 0; d < n_dev; d++)
        if (pgn_device_open(&list[d], &devs[d], &err)) fprintf(stderr, "bench-gemm: %s\n", err.message);
    printf("%6s  %-14s %10s %10s  %s\n", "N", "device", "ms", "GFLOP/s", "identical");
    for (int s = 0; s < n_sizes; s++) {
        int n = sizes[s];
        if (n <= 0) continue;
        size_t count = (size_t)n * n;
        float *a = malloc(count * 4), *b = malloc(count * 4), *ref = malloc(count * 4),
              *c = malloc(count * 4);
        for (size_t i = 0; i < count; i++) {
            a[i] = pgn_rand_unit(1, 1, i) - 0.5f;
            b[i] = pgn_rand_unit(1, 2, i) - 0.5f;
        }
        double flops = 2.0 * n * n * (double)n;
        double th = time_gemm(NULL, n, a, b, ref);
        printf("%6d  %-14s %10.3f %10.2f  %s\n", n, "host", th * 1e3, flops / th * 1e-9, "-");
        for (size_t d = 0; d < n_dev; d++) {
            if (!devs[d]) continue;
            double td = time_gemm(devs[d], n, a, b, c);
            printf("%6d  %-14s %10.3f %10.2f  %s\n", n, list[d].id, td * 1e3, flops / td * 1e-9,
                   memcmp(c, ref, count * 4) ? "NO" : "yes");
        }
        fflush(stdout);
        free(a);
        free(b);
        free(ref);
        free(c);
    }
    for (size_t d = 0; d < n_dev; d++) pgn_device_close(devs[d]);
    free(devs);
    free(list);
    return 0;
}
