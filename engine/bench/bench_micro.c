/* bench_micro.c: the tensor-micro suite: add, ReLU and a dense layer at a few sizes, the host
 * reference against device-resident kernels, GB/s, and the device's launch cost apart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "pgn_math.h"
#include "pgn_ops.h"

/* ---- tensor-micro ---------------------------------------------------------------------------
 * Elementwise add and ReLU (the act kernel) over 1K, 64K and 1M floats, and a dense layer
 * (GEMM + bias, one fused launch) of MICRO_DENSE_ROWS rows at 64 -> 64 and 256 -> 256, on
 * device-resident data. A run queues `calls` ops and waits once: per op, the kernel and its
 * launch. Bytes moved count each operand read and each result written once. */
#define MICRO_DENSE_ROWS 256
#define MICRO_SEED 0x6d6963ULL /* "mic" */
#define LAUNCH_CALLS 1000      /* queued 1-element kernels per launch-overhead run */

typedef enum { MICRO_ADD, MICRO_RELU, MICRO_DENSE } micro_kind;

typedef struct {
    const char *id;
    micro_kind kind;
    int n; /* elements, or the dense layer's width */
} micro_case;

static const micro_case micro_cases[] = {
    {"add-1K", MICRO_ADD, 1 << 10},     {"add-64K", MICRO_ADD, 1 << 16},
    {"add-1M", MICRO_ADD, 1 << 20},     {"relu-1K", MICRO_RELU, 1 << 10},
    {"relu-64K", MICRO_RELU, 1 << 16},  {"relu-1M", MICRO_RELU, 1 << 20},
    {"dense-64", MICRO_DENSE, 64},      {"dense-256", MICRO_DENSE, 256},
};

/* One side's operands. add: out = a + b, all (1, n); relu: out = relu(a) (b unused); dense:
 * z = a (MICRO_DENSE_ROWS, n) b (n, n) + bias (1, n), out = z (no activation). */
typedef struct {
    const micro_case *c;
    pgn_tensor a, b, bias, z, out;
} micro_ops;

static void micro_release(micro_ops *m) {
    pgn_tensor_release(&m->a);
    pgn_tensor_release(&m->b);
    pgn_tensor_release(&m->bias);
    pgn_tensor_release(&m->z);
    pgn_tensor_release(&m->out);
}

static int upload_random(pgn_tensor *t, pgn_u64 stream, pgn_error *err) {
    size_t n = pgn_tensor_count(t);
    float *v = malloc(n * sizeof *v);
    if (!v) return pgn_bench_oom(err);
    for (size_t i = 0; i < n; i++) v[i] = 2.0f * pgn_rand_unit(MICRO_SEED, stream, i) - 1.0f;
    int rc = pgn_tensor_write(t, v, n, err);
    free(v);
    return rc;
}

static int micro_init(const micro_case *c, pgn_device *dev, micro_ops *m, pgn_error *err) {
    memset(m, 0, sizeof *m);
    m->c = c;
    bool dense = c->kind == MICRO_DENSE;
    int n = c->n, rows = dense ? MICRO_DENSE_ROWS : 1;
    if (pgn_tensor_init(&m->a, dev, rows, n, err) ||
        pgn_tensor_init(&m->b, dev, dense ? n : 1, n, err) ||
        pgn_tensor_init(&m->out, dev, rows, n, err) || upload_random(&m->a, 1, err) ||
        upload_random(&m->b, 2, err))
        return -1;
    if (dense && (pgn_tensor_init(&m->bias, dev, 1, n, err) ||
                  pgn_tensor_init(&m->z, dev, rows, n, err) || upload_random(&m->bias, 3, err)))
        return -1;
    return 0;
}

static int micro_op(micro_ops *m, pgn_error *err) {
    switch (m->c->kind) {
    case MICRO_ADD: return pgn_op_add(1, &m->a, &m->b, &m->out, err);
    case MICRO_RELU: return pgn_op_act_forward(1, PGN_ACT_CODE_RELU, &m->a, &m->out, err);
    case MICRO_DENSE:
        return pgn_op_gemm_bias_act(MICRO_DENSE_ROWS, m->c->n, m->c->n, &m->a, false, &m->b,
                                    false, &m->z, &m->bias, PGN_ACT_CODE_NONE, &m->out, err);
    }
    return -1;
}

static int run_micro(void *arg, int calls, pgn_error *err) {
    micro_ops *m = arg;
    for (int i = 0; i < calls; i++)
        if (micro_op(m, err)) return -1;
    return pgn_device_finish(m->out.dev, err);
}

/* Elements the case produces and bytes it moves per op. */
static void micro_size(const micro_case *c, double *elements, double *bytes) {
    double n = c->n, rows = MICRO_DENSE_ROWS;
    *elements = c->kind == MICRO_DENSE ? rows * n : n;
    if (c->kind == MICRO_ADD) *bytes = 4 * 3 * n; /* a, b; out */
    else if (c->kind == MICRO_RELU) *bytes = 4 * 2 * n; /* x; y */
    else *bytes = 4 * (rows * n + n * n + n + 2 * rows * n); /* x, w, bias; z, y */
}

/* Median per-launch cost of a 1-element add, LAUNCH_CALLS queued then one wait. */
static int launch_overhead(pgn_device *dev, int reps, double *sec, pgn_error *err) {
    micro_case one = {"launch", MICRO_ADD, 1};
    micro_ops m;
    int rc = micro_init(&one, dev, &m, err) ||
             pgn_bench_time_calls(run_micro, &m, LAUNCH_CALLS, reps, sec, err);
    micro_release(&m);
    return rc ? -1 : 0;
}

/* Whether the host's and the device's results are bit-identical. */
static int same_bits(const micro_ops *h, const micro_ops *d, bool *same, pgn_error *err) {
    size_t n = pgn_tensor_count(&h->out);
    float *v = malloc(n * sizeof *v);
    if (!v) return pgn_bench_oom(err);
    int rc = pgn_tensor_read(&d->out, v, n, err);
    if (!rc) *same = !memcmp(v, h->out.host, n * sizeof *v);
    free(v);
    return rc;
}

static int micro_case_run(const pgn_bench_ctx *ctx, const micro_case *c, double launch_s,
                          json_t *row, pgn_error *err) {
    micro_ops h, d;
    memset(&d, 0, sizeof d);
    double elements, bytes, host_s, dev_s;
    int calls, rc = -1;
    micro_size(c, &elements, &bytes);
    if (micro_init(c, NULL, &h, err) || pgn_bench_calibrate_calls(run_micro, &h, &calls, err) ||
        pgn_bench_time_calls(run_micro, &h, calls, ctx->repeats, &host_s, err))
        goto done;
    json_object_set_new(row, "elements", json_integer((json_int_t)elements));
    json_object_set_new(row, "host_ms", json_real(host_s * 1e3));
    json_object_set_new(row, "host_gbps", json_real(bytes / host_s * 1e-9));
    if (!ctx->dev) {
        pgn_hooks_log(ctx->hooks, "tensor-micro %s: host %.4f ms", c->id, host_s * 1e3);
        rc = 0;
        goto done;
    }
    bool same = false;
    if (micro_init(c, ctx->dev, &d, err) || pgn_bench_calibrate_calls(run_micro, &d, &calls, err) ||
        pgn_bench_time_calls(run_micro, &d, calls, ctx->repeats, &dev_s, err) ||
        same_bits(&h, &d, &same, err))
        goto done;
    json_object_set_new(row, "device_ms", json_real(dev_s * 1e3));
    json_object_set_new(row, "speedup", json_real(host_s / dev_s));
    json_object_set_new(row, "device_gbps", json_real(bytes / dev_s * 1e-9));
    json_object_set_new(row, "device_elems_per_s", json_real(elements / dev_s));
    json_object_set_new(row, "launch_us", json_real(launch_s * 1e6));
    json_object_set_new(row, "identical", json_boolean(same));
    pgn_hooks_log(ctx->hooks, "tensor-micro %s: host %.4f ms, %s %.4f ms (x%.2f)%s", c->id, host_s * 1e3,
             ctx->info->id, dev_s * 1e3, host_s / dev_s, same ? "" : ", NOT bit-identical");
    rc = 0;
done:
    micro_release(&h);
    micro_release(&d);
    return rc;
}

int pgn_bench_tensor_micro(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    double launch_s = 0;
    bool measured = false;
    for (size_t i = 0; i < sizeof micro_cases / sizeof *micro_cases; i++) {
        const micro_case *c = &micro_cases[i];
        if (!pgn_bench_wants(ctx, c->id)) continue;
        if (pgn_bench_check_stop(ctx, err)) return -1;
        if (ctx->dev && !measured) {
            if (launch_overhead(ctx->dev, ctx->repeats, &launch_s, err)) return -1;
            measured = true;
        }
        json_t *row = pgn_bench_row(ctx, "tensor-micro", c->id);
        if (!row) return pgn_bench_oom(err);
        if (micro_case_run(ctx, c, launch_s, row, err)) {
            json_decref(row);
            return -1;
        }
        json_array_append_new(rows, row);
    }
    if (measured && ctx->rates) ctx->rates->launch_us = launch_s * 1e6;
    return 0;
}
