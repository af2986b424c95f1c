/* mlp.c: a multi-layer perceptron built from the tensor ops: ReLU hidden layers, linear output
 * into fused softmax + cross-entropy. Forward and backward stand side by side; every buffer is
 * allocated once by pgn_mlp_init and reused for every step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pgn_math.h"

/* RNG streams: parameter l's weights use stream 2l, its biases 2l + 1. */
#define PGN_STREAM_WEIGHT(l) ((pgn_u64)(2 * (l)))
#define PGN_STREAM_BIAS(l) ((pgn_u64)(2 * (l) + 1))

static int init_uniform(pgn_tensor *t, uint64_t seed, pgn_u64 stream, float bound,
                        pgn_error *err) {
    size_t n = pgn_tensor_count(t);
    float *v = malloc(n * sizeof *v);
    if (!v) {
        pgn_error_set(err, "out_of_memory", "", "cannot allocate %zu floats", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (pgn_rand_unit(seed, stream, i) * 2.0f - 1.0f) * bound;
    int rc = pgn_tensor_write(t, v, n, err);
    free(v);
    return rc;
}

int pgn_mlp_init(pgn_mlp *m, pgn_device *dev, const int *widths, int n_widths, int max_batch,
                 uint64_t seed, pgn_error *err) {
    memset(m, 0, sizeof *m);
    m->dev = dev;
    m->n_weights = n_widths - 1;
    m->max_batch = max_batch;
    memcpy(m->widths, widths, (size_t)n_widths * sizeof *widths);
    int B = max_batch, L = m->n_weights;
    if (pgn_tensor_init(&m->x, dev, B, widths[0], err) ||
        pgn_tensor_init(&m->labels, dev, B, 1, err) || pgn_tensor_init(&m->loss, dev, B, 1, err) ||
        pgn_tensor_init(&m->pred, dev, B, 1, err))
        goto fail;
    for (int l = 0; l < L; l++) {
        int in = widths[l], out = widths[l + 1];
        if (pgn_tensor_init(&m->w[l], dev, in, out, err) ||
            pgn_tensor_init(&m->b[l], dev, 1, out, err) ||
            pgn_tensor_init(&m->gw[l], dev, in, out, err) ||
            pgn_tensor_init(&m->gb[l], dev, 1, out, err) ||
            pgn_tensor_init(&m->vw[l], dev, in, out, err) ||
            pgn_tensor_init(&m->vb[l], dev, 1, out, err) ||
            pgn_tensor_init(&m->z[l], dev, B, out, err) ||
            pgn_tensor_init(&m->dz[l], dev, B, out, err))
            goto fail;
        if (l < L - 1 && (pgn_tensor_init(&m->a[l], dev, B, out, err) ||
                          pgn_tensor_init(&m->da[l], dev, B, out, err)))
            goto fail;
        float bound = 1.0f / sqrtf((float)in);
        if (init_uniform(&m->w[l], seed, PGN_STREAM_WEIGHT(l), bound, err) ||
            init_uniform(&m->b[l], seed, PGN_STREAM_BIAS(l), bound, err))
            goto fail;
    }
    return 0;
fail:
    pgn_mlp_release(m);
    return -1;
}

void pgn_mlp_release(pgn_mlp *m) {
    for (int l = 0; l < PGN_MAX_WEIGHTS; l++) {
        pgn_tensor *ts[] = {&m->w[l], &m->b[l], &m->gw[l], &m->gb[l], &m->vw[l],
                            &m->vb[l], &m->z[l], &m->a[l], &m->dz[l], &m->da[l]};
        for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) pgn_tensor_release(ts[i]);
    }
    pgn_tensor_release(&m->x);
    pgn_tensor_release(&m->labels);
    pgn_tensor_release(&m->loss);
    pgn_tensor_release(&m->pred);
}

/* Input of weight layer l: the data for l = 0, else the previous hidden activation. */
static const pgn_tensor *layer_input(const pgn_mlp *m, int l) { return l == 0 ? &m->x : &m->a[l - 1]; }

// x (B, w0) -> z[l] (B, w[l+1]) = in w[l] + b[l]; a[l] = relu(z[l]) for hidden layers
int pgn_mlp_forward(pgn_mlp *m, int rows, pgn_error *err) {
    for (int l = 0; l < m->n_weights; l++) {
        int in = m->widths[l], out = m->widths[l + 1];
        if (pgn_op_gemm(rows, out, in, layer_input(m, l), false, &m->w[l], false, &m->z[l], err) ||
            pgn_op_bias_add(rows, &m->z[l], &m->b[l], err))
            return -1;
        if (l < m->n_weights - 1 && pgn_op_relu_forward(rows, &m->z[l], &m->a[l], err)) return -1;
    }
    return 0;
}

// logits z[L-1] (B, C), labels (B) -> loss (B), pred (B), dz[L-1] (B, C)
int pgn_mlp_loss(pgn_mlp *m, int rows, float scale, pgn_error *err) {
    int L = m->n_weights;
    return pgn_op_softmax_xent(rows, &m->z[L - 1], &m->labels, scale, &m->dz[L - 1], &m->loss,
                               &m->pred, err);
}

// dz[l] (B, out) -> gw[l] (in, out) = in^T dz[l]; gb[l] (out) = colsum dz[l];
//                   da[l-1] (B, in) = dz[l] w[l]^T; dz[l-1] = da[l-1] where z[l-1] > 0
int pgn_mlp_backward(pgn_mlp *m, int rows, pgn_error *err) {
    for (int l = m->n_weights - 1; l >= 0; l--) {
        int in = m->widths[l], out = m->widths[l + 1];
        if (pgn_op_gemm(in, out, rows, layer_input(m, l), true, &m->dz[l], false, &m->gw[l], err) ||
            pgn_op_colsum(rows, &m->dz[l], &m->gb[l], err))
            return -1;
        if (l == 0) break;
        if (pgn_op_gemm(rows, in, out, &m->dz[l], false, &m->w[l], true, &m->da[l - 1], err) ||
            pgn_op_relu_backward(rows, &m->z[l - 1], &m->da[l - 1], &m->dz[l - 1], err))
            return -1;
    }
    return 0;
}

int pgn_mlp_sgd(pgn_mlp *m, float lr, float momentum, pgn_error *err) {
    for (int l = 0; l < m->n_weights; l++)
        if (pgn_op_sgd_momentum(&m->w[l], &m->gw[l], &m->vw[l], lr, momentum, err) ||
            pgn_op_sgd_momentum(&m->b[l], &m->gb[l], &m->vb[l], lr, momentum, err))
            return -1;
    return 0;
}

static int hash_tensor(pgn_sha256 *s, const pgn_tensor *t, pgn_error *err) {
    size_t n = pgn_tensor_count(t);
    float *v = malloc(n * sizeof *v);
    unsigned char *bytes = malloc(n * 4);
    if (!v || !bytes) {
        free(v);
        free(bytes);
        pgn_error_set(err, "out_of_memory", "", "cannot allocate %zu floats", n);
        return -1;
    }
    int rc = pgn_tensor_read(t, v, n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) { /* little-endian whatever the host order */
        pgn_u32 u = pgn_bits(v[i]);
        for (int k = 0; k < 4; k++) bytes[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
    if (rc == 0) pgn_sha256_update(s, bytes, n * 4);
    free(v);
    free(bytes);
    return rc;
}

int pgn_mlp_sha256(pgn_mlp *m, char out[65], pgn_error *err) {
    pgn_sha256 s;
    pgn_sha256_init(&s);
    for (int l = 0; l < m->n_weights; l++)
        if (hash_tensor(&s, &m->w[l], err) || hash_tensor(&s, &m->b[l], err)) return -1;
    unsigned char digest[32];
    pgn_sha256_final(&s, digest);
    pgn_sha256_hex(digest, out);
    return 0;
}
