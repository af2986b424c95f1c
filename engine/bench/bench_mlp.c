/* bench_mlp.c: the mlp-forward suite: Paragon-Py's MLP cases, one forward pass of the host
 * reference against the device, single sample and batch 256, with the bit-identity of the
 * outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "pgn_math.h"
#include "pgn_ops.h"

/* ---- mlp-forward ---------------------------------------------------------------------------
 * Paragon-Py's cases: 784 inputs, `hidden` ReLU layers of `width`, 10 softmax outputs. Weights
 * and biases are uniform in +-1/sqrt(fan_in) (PyTorch's nn.Linear default), inputs in [0, 1),
 * all from the counter RNG: every run and device sees the same numbers. */
#define MLP_INPUTS 784
#define MLP_CLASSES 10
#define MLP_BATCH 256
#define MLP_MAX_LAYERS 5
#define MLP_SEED 0x6d6c70ULL /* "mlp" */
#define MLP_STREAM_INPUT 100 /* streams 2l and 2l+1 are layer l's weights and biases */
#define MLP_STREAM_BATCH 101
/* Single-sample forwards timed back to back, this many a timed run (the median run's mean is
 * the figure), as cli/bench.c times numpy's: a server answers requests one after another, and a
 * lone forward would time the wake-up of idle threads as much as the forward. */
#define MLP_ONE_CALLS 20

typedef struct {
    const char *id;
    int hidden, width;
} mlp_case;

static const mlp_case mlp_cases[] = {
    {"S1", 1, 64},  {"S2", 1, 128}, {"S3", 1, 256},  {"M1", 2, 256},   {"M2", 2, 384},
    {"M3", 2, 512}, {"L1", 3, 768}, {"L2", 3, 1024}, {"XL1", 4, 1536}, {"XL2", 4, 2048},
};

/* One network on one side (dev NULL: the host reference). Layer l maps dims[l] to dims[l+1]:
 * w[l] (dims[l], dims[l+1]), b[l] (1, dims[l+1]); x, z[l] and y[l] hold MLP_BATCH rows, of which
 * a single-sample pass uses the first. On the device the weights live packed, in pw. */
typedef struct {
    pgn_device *dev;
    int layers, dims[MLP_MAX_LAYERS + 1];
    pgn_tensor w[MLP_MAX_LAYERS], b[MLP_MAX_LAYERS];
    pgn_gemm_packed pw[MLP_MAX_LAYERS]; /* weights packed once, as a server keeps them */
    pgn_tensor x, z[MLP_MAX_LAYERS], y[MLP_MAX_LAYERS];
} mlp_net;

static void mlp_release(mlp_net *n) {
    for (int l = 0; l < MLP_MAX_LAYERS; l++) {
        pgn_tensor_release(&n->w[l]);
        pgn_tensor_release(&n->b[l]);
        pgn_gemm_packed_release(&n->pw[l]);
        pgn_tensor_release(&n->z[l]);
        pgn_tensor_release(&n->y[l]);
    }
    pgn_tensor_release(&n->x);
}

/* An empty network of layers + 1 widths dims on dev (NULL: host): every tensor allocated. */
static int mlp_alloc(pgn_device *dev, int layers, const int *dims, mlp_net *n, pgn_error *err) {
    memset(n, 0, sizeof *n);
    n->dev = dev;
    n->layers = layers;
    memcpy(n->dims, dims, (size_t)(layers + 1) * sizeof *dims);
    if (pgn_tensor_init(&n->x, dev, MLP_BATCH, MLP_INPUTS, err)) return -1;
    for (int l = 0; l < layers; l++) {
        int K = dims[l], N = dims[l + 1];
        if (pgn_tensor_init(&n->w[l], dev, K, N, err) ||
            pgn_tensor_init(&n->b[l], dev, 1, N, err) ||
            pgn_tensor_init(&n->z[l], dev, MLP_BATCH, N, err) ||
            pgn_tensor_init(&n->y[l], dev, MLP_BATCH, N, err))
            return -1;
    }
    return 0;
}

/* The host network with its weights drawn (the source the device copies). */
static int mlp_host_init(const mlp_case *c, mlp_net *n, pgn_error *err) {
    int dims[MLP_MAX_LAYERS + 1], layers = c->hidden + 1;
    dims[0] = MLP_INPUTS;
    for (int l = 1; l <= c->hidden; l++) dims[l] = c->width;
    dims[layers] = MLP_CLASSES;
    if (mlp_alloc(NULL, layers, dims, n, err)) return -1;
    for (int l = 0; l < layers; l++) {
        int K = dims[l], N = dims[l + 1];
        float scale = 1.0f / sqrtf((float)K), *w = n->w[l].host, *b = n->b[l].host;
        for (size_t i = 0; i < (size_t)K * N; i++)
            w[i] = (2.0f * pgn_rand_unit(MLP_SEED, 2 * (pgn_u64)l, i) - 1.0f) * scale;
        for (int j = 0; j < N; j++)
            b[j] = (2.0f * pgn_rand_unit(MLP_SEED, 2 * (pgn_u64)l + 1, (pgn_u64)j) - 1.0f) * scale;
    }
    return 0;
}

/* The device network: allocates, uploads and packs the host's weights, and waits. */
static int mlp_device_init(pgn_device *dev, const mlp_net *h, mlp_net *n, pgn_error *err) {
    if (mlp_alloc(dev, h->layers, h->dims, n, err)) return -1;
    for (int l = 0; l < n->layers; l++) {
        int K = n->dims[l], N = n->dims[l + 1];
        if (pgn_tensor_write(&n->w[l], h->w[l].host, (size_t)K * N, err) ||
            pgn_tensor_write(&n->b[l], h->b[l].host, (size_t)N, err) ||
            pgn_gemm_pack(&n->w[l], K, N, &n->pw[l], err))
            return -1;
    }
    if (pgn_device_finish(dev, err)) return -1;
    for (int l = 0; l < n->layers; l++) pgn_tensor_release(&n->w[l]); /* the panels serve */
    return 0;
}

/* Softmax of each row of n logits, in place: the maximum, then the sum of exp(x - max) in
 * order, then one division per element. Both sides apply it to their read-back logits (the
 * engine's only softmax kernel is fused with the cross-entropy gradient), so the outputs are
 * bit-identical exactly when the logits are. */
static void softmax_rows(int rows, int n, float *x) {
    for (int r = 0; r < rows; r++) {
        float *v = x + (size_t)r * n, mx = v[0], sum = 0.0f;
        for (int j = 1; j < n; j++) mx = v[j] > mx ? v[j] : mx;
        for (int j = 0; j < n; j++) {
            v[j] = pgn_expf(v[j] - mx);
            sum += v[j];
        }
        for (int j = 0; j < n; j++) v[j] = v[j] / sum;
    }
}

/* A queued copy of host memory into a device tensor's first count floats: the host memory must
 * stay as it is until the queue has passed it (the blocking read that ends a forward). A pass
 * queues the input and the layers and ends in one blocking read of the logits, which waits for
 * all of it (an in-order queue): on pocl here, queued read + clFinish took 89-92 us for a
 * four-layer S1-sized pass and the blocking read 62-74 us (medians of 200; clFinish alone, on an
 * empty queue, costs ~25 us). Blocking writes cost a wake-up each: both blocking, 0.11-0.13 ms
 * (an earlier session). */
static int queue_write(pgn_tensor *t, const float *src, size_t count, pgn_error *err) {
    return pgn_device_write(t->dev, t->mem, 0, count * sizeof *src, src, false, err);
}

/* The layers' logits (rows, 10) for the input in n->x: GEMMs with fused bias + ReLU, the last
 * without ReLU, queued on the device or run by the host reference. */
static int mlp_layers(mlp_net *n, int rows, pgn_error *err) {
    const pgn_tensor *a = &n->x;
    for (int l = 0; l < n->layers; l++) {
        int K = n->dims[l], N = n->dims[l + 1];
        int act = l + 1 < n->layers ? PGN_ACT_CODE_RELU : PGN_ACT_CODE_NONE;
        int rc = n->dev ? pgn_op_gemm_bias_act_packed(rows, a, &n->pw[l], &n->z[l], &n->b[l], act, &n->y[l], err)
                        : pgn_op_gemm_bias_act(rows, N, K, a, false, &n->w[l], false, &n->z[l], &n->b[l], act,
                                               &n->y[l], err);
        if (rc) return -1;
        a = &n->y[l];
    }
    return 0;
}

/* out (rows, 10) = the network's softmax outputs for in (rows, 784). On the device: queue the
 * input's upload and the layers, then read the logits back, which waits for them once. */
static int mlp_forward(mlp_net *n, int rows, const float *in, float *out, pgn_error *err) {
    size_t n_in = (size_t)rows * MLP_INPUTS, n_out = (size_t)rows * MLP_CLASSES;
    const pgn_tensor *logits = &n->y[n->layers - 1];
    if (!n->dev) {
        if (pgn_tensor_write(&n->x, in, n_in, err) || mlp_layers(n, rows, err) ||
            pgn_tensor_read(logits, out, n_out, err))
            return -1;
    } else if (queue_write(&n->x, in, n_in, err) || mlp_layers(n, rows, err) ||
               pgn_tensor_read(logits, out, n_out, err)) {
        pgn_error drain; /* queued copies may still use in and out: let them end first */
        pgn_device_finish(n->dev, &drain);
        return -1;
    }
    softmax_rows(rows, MLP_CLASSES, out);
    return 0;
}

typedef struct {
    mlp_net *net;
    int rows;
    const float *in;
    float *out;
} mlp_pass;

static int run_mlp_pass(void *arg, int calls, pgn_error *err) {
    mlp_pass *p = arg;
    for (int i = 0; i < calls; i++)
        if (mlp_forward(p->net, p->rows, p->in, p->out, err)) return -1;
    return 0;
}

/* Mean and max of |a - b| over n values (in double: exact for floats' differences' sizes). */
static void abs_diff(const float *a, const float *b, size_t n, double *mae, double *max) {
    double sum = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        sum += d;
        mx = d > mx ? d : mx;
    }
    *mae = n ? sum / (double)n : 0;
    *max = mx;
}

/* One case: its row, or -1. */
static int mlp_case_run(const pgn_bench_ctx *ctx, const mlp_case *c, json_t *row,
                        pgn_error *err) {
    mlp_net host, dev;
    memset(&host, 0, sizeof host);
    memset(&dev, 0, sizeof dev);
    float in[MLP_INPUTS], out_h[MLP_CLASSES], out_d[MLP_CLASSES];
    size_t batch_in_n = (size_t)MLP_BATCH * MLP_INPUTS;
    size_t batch_out_n = (size_t)MLP_BATCH * MLP_CLASSES;
    float *batch_in = malloc(batch_in_n * sizeof *batch_in);
    float *batch_h = malloc(batch_out_n * sizeof *batch_h);
    float *batch_d = malloc(batch_out_n * sizeof *batch_d);
    int rc = -1;
    if (!batch_in || !batch_h || !batch_d) {
        pgn_bench_oom(err);
        goto done;
    }
    for (int i = 0; i < MLP_INPUTS; i++)
        in[i] = pgn_rand_unit(MLP_SEED, MLP_STREAM_INPUT, (pgn_u64)i);
    for (size_t i = 0; i < batch_in_n; i++)
        batch_in[i] = pgn_rand_unit(MLP_SEED, MLP_STREAM_BATCH, i);
    if (mlp_host_init(c, &host, err)) goto done;

    /* The shape and size as Paragon-Py gives them: layers joined by '→', the float32
     * parameters' bytes in MiB (S1: 0.19). */
    char shape[128];
    int len = snprintf(shape, sizeof shape, "%d", MLP_INPUTS);
    double params = 0;
    for (int l = 0; l < host.layers; l++) {
        len += snprintf(shape + len, sizeof shape - (size_t)len, "\u2192%d", host.dims[l + 1]);
        params += (double)host.dims[l] * host.dims[l + 1] + host.dims[l + 1];
    }
    json_object_set_new(row, "shape", json_string(shape));
    json_object_set_new(row, "est_mib", json_real(params * sizeof(float) / 1048576.0));
    json_object_set_new(row, "batch", json_integer(MLP_BATCH));

    double cpu_s, cpu_batch_s;
    mlp_pass one_h = {&host, 1, in, out_h}, batch_hp = {&host, MLP_BATCH, batch_in, batch_h};
    if (pgn_bench_time_calls(run_mlp_pass, &one_h, MLP_ONE_CALLS, ctx->repeats, &cpu_s, err) ||
        pgn_bench_time_calls(run_mlp_pass, &batch_hp, 1, ctx->repeats, &cpu_batch_s, err))
        goto done;
    json_object_set_new(row, "cpu_ms", json_real(cpu_s * 1e3));
    json_object_set_new(row, "cpu_batch_sps", json_real(MLP_BATCH / cpu_batch_s));
    if (!ctx->dev) { /* the host pseudo-device: the reference is all there is */
        pgn_hooks_log(ctx->hooks, "mlp-forward %s (%s): cpu %.3f ms, batch %.0f samples/s", c->id, shape,
                 cpu_s * 1e3, MLP_BATCH / cpu_batch_s);
        rc = 0;
        goto done;
    }

    double t0 = pgn_now_s();
    if (mlp_device_init(ctx->dev, &host, &dev, err)) goto done;
    double init_s = pgn_now_s() - t0, gpu_s, gpu_batch_s;
    mlp_pass one_d = {&dev, 1, in, out_d}, batch_dp = {&dev, MLP_BATCH, batch_in, batch_d};
    if (pgn_bench_time_calls(run_mlp_pass, &one_d, MLP_ONE_CALLS, ctx->repeats, &gpu_s, err) ||
        pgn_bench_time_calls(run_mlp_pass, &batch_dp, 1, ctx->repeats, &gpu_batch_s, err))
        goto done;
    double mae, max;
    abs_diff(out_h, out_d, MLP_CLASSES, &mae, &max);
    bool same = !memcmp(out_h, out_d, sizeof out_h) &&
                !memcmp(batch_h, batch_d, batch_out_n * sizeof *batch_h);
    json_object_set_new(row, "gpu_ms", json_real(gpu_s * 1e3));
    json_object_set_new(row, "speedup", json_real(cpu_s / gpu_s));
    json_object_set_new(row, "mae", json_real(mae));
    json_object_set_new(row, "max", json_real(max));
    json_object_set_new(row, "gpu_init_ms", json_real(init_s * 1e3));
    json_object_set_new(row, "gpu_batch_sps", json_real(MLP_BATCH / gpu_batch_s));
    json_object_set_new(row, "identical", json_boolean(same));
    pgn_hooks_log(ctx->hooks, "mlp-forward %s (%s): cpu %.3f ms, %s %.3f ms (x%.2f), max |diff| %g%s", c->id,
             shape, cpu_s * 1e3, ctx->info->id, gpu_s * 1e3, cpu_s / gpu_s, max,
             same ? "" : ", NOT bit-identical");
    rc = 0;
done:
    mlp_release(&host);
    mlp_release(&dev);
    free(batch_in);
    free(batch_h);
    free(batch_d);
    return rc;
}

int pgn_bench_mlp_forward(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    for (size_t i = 0; i < sizeof mlp_cases / sizeof *mlp_cases; i++) {
        const mlp_case *c = &mlp_cases[i];
        if (!pgn_bench_wants(ctx, c->id)) continue;
        if (pgn_bench_check_stop(ctx, err)) return -1;
        json_t *row = pgn_bench_row(ctx, "mlp-forward", c->id);
        if (!row) return pgn_bench_oom(err);
        if (mlp_case_run(ctx, c, row, err)) {
            json_decref(row);
            return -1;
        }
        json_array_append_new(rows, row);
    }
    return 0;
}
