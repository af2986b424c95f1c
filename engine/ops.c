/* ops.c: the tensor ops. Each op's host reference and its kernel launcher stand side by side,
 * both built on the shared bodies in kernels/pgn_ops.h, so they give the same bits.
 *
 * GEMM lives in gemm.c.
 *
 *   op            host reference         kernel (kernels/tensor.cl)   backward of
 *   bias_add      bias_add_host          bias_add                     colsum
 *   relu_forward  relu_forward_host      relu_forward                 relu_backward
 *   relu_backward relu_backward_host     relu_backward                -
 *   colsum        colsum_host            colsum                       -
 *   softmax_xent  softmax_xent_host      softmax_xent                 (fused: writes dlogits)
 *   sgd_momentum  sgd_momentum_host      sgd_momentum                 -
 */
#include <stdio.h>

#include "internal.h"
#include "pgn_math.h"
#include "pgn_ops.h"

static int check(bool ok, const char *op, const char *what, pgn_error *err) {
    if (ok) return 0;
    pgn_error_set(err, "internal", "", "%s: %s", op, what);
    return -1;
}

static bool same_dev(const pgn_tensor *a, const pgn_tensor *b) { return a->dev == b->dev; }

#define F32(t) ((float *)(t)->host)
#define I32(t) ((int *)(t)->host)

/* ---- bias_add: x (rows, cols) += bias (cols) ---------------------------------------------- */

static void bias_add_host(int n, int cols, float *x, const float *bias) {
    for (int i = 0; i < n; i++) x[i] = x[i] + bias[i % cols];
}

int pgn_op_bias_add(int rows, pgn_tensor *x, const pgn_tensor *bias, pgn_error *err) {
    if (check(same_dev(x, bias), "bias_add", "tensors on different devices", err) ||
        check(rows <= x->rows && bias->rows * bias->cols == x->cols, "bias_add", "shape", err))
        return -1;
    int n = rows * x->cols, cols = x->cols;
    if (!x->dev) {
        bias_add_host(n, cols, F32(x), F32(bias));
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(cols), KARG(x->mem), KARG(bias->mem)};
    size_t global[1] = {(size_t)n};
    return pgn_launch(x->dev, "bias_add", args, 4, 1, global, NULL, err);
}

/* ---- relu: y = max(x, 0); dx = dy * (x > 0) ----------------------------------------------- */

static void relu_forward_host(int n, const float *x, float *y) {
    for (int i = 0; i < n; i++) y[i] = pgn_relu(x[i]);
}

int pgn_op_relu_forward(int rows, const pgn_tensor *x, pgn_tensor *y, pgn_error *err) {
    if (check(same_dev(x, y), "relu_forward", "tensors on different devices", err) ||
        check(rows <= x->rows && rows <= y->rows && x->cols == y->cols, "relu_forward", "shape",
              err))
        return -1;
    int n = rows * x->cols;
    if (!x->dev) {
        relu_forward_host(n, F32(x), F32(y));
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(x->mem), KARG(y->mem)};
    size_t global[1] = {(size_t)n};
    return pgn_launch(x->dev, "relu_forward", args, 3, 1, global, NULL, err);
}

static void relu_backward_host(int n, const float *x, const float *dy, float *dx) {
    for (int i = 0; i < n; i++) dx[i] = pgn_relu_grad(x[i], dy[i]);
}

int pgn_op_relu_backward(int rows, const pgn_tensor *x, const pgn_tensor *dy, pgn_tensor *dx,
                         pgn_error *err) {
    if (check(same_dev(x, dy) && same_dev(x, dx), "relu_backward", "tensors on different devices",
              err) ||
        check(rows <= x->rows && rows <= dy->rows && rows <= dx->rows && x->cols == dy->cols &&
                  x->cols == dx->cols,
              "relu_backward", "shape", err))
        return -1;
    int n = rows * x->cols;
    if (!x->dev) {
        relu_backward_host(n, F32(x), F32(dy), F32(dx));
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(x->mem), KARG(dy->mem), KARG(dx->mem)};
    size_t global[1] = {(size_t)n};
    return pgn_launch(x->dev, "relu_backward", args, 4, 1, global, NULL, err);
}

/* ---- colsum: out (cols) = sum over rows of x (rows, cols) --------------------------------- */

static void colsum_host(int rows, int cols, const float *x, float *out) {
    for (int j = 0; j < cols; j++) out[j] = pgn_colsum_elem(rows, cols, x, j);
}

int pgn_op_colsum(int rows, const pgn_tensor *x, pgn_tensor *out, pgn_error *err) {
    if (check(same_dev(x, out), "colsum", "tensors on different devices", err) ||
        check(rows <= x->rows && pgn_tensor_count(out) >= (size_t)x->cols, "colsum", "shape",
              err))
        return -1;
    int cols = x->cols;
    if (!x->dev) {
        colsum_host(rows, cols, F32(x), F32(out));
        return 0;
    }
    pgn_karg args[] = {KARG(rows), KARG(cols), KARG(x->mem), KARG(out->mem)};
    size_t global[1] = {(size_t)cols};
    return pgn_launch(x->dev, "colsum", args, 4, 1, global, NULL, err);
}

/* ---- softmax_xent: fused softmax + cross-entropy, forward and backward --------------------- */

static void softmax_xent_host(int rows, int n, const float *x, const int *labels, float scale,
                              float *dx, float *loss, int *pred) {
    for (int r = 0; r < rows; r++)
        loss[r] = pgn_softmax_xent_row(n, x + r * n, labels[r], scale, dx + r * n, pred + r);
}

int pgn_op_softmax_xent(int rows, const pgn_tensor *logits, const pgn_tensor *labels, float scale,
                        pgn_tensor *dlogits, pgn_tensor *loss, pgn_tensor *pred,
                        pgn_error *err) {
    if (check(same_dev(logits, labels) && same_dev(logits, dlogits) && same_dev(logits, loss) &&
                  same_dev(logits, pred),
              "softmax_xent", "tensors on different devices", err) ||
        check(rows <= logits->rows && rows <= dlogits->rows && logits->cols == dlogits->cols &&
                  pgn_tensor_count(labels) >= (size_t)rows &&
                  pgn_tensor_count(loss) >= (size_t)rows && pgn_tensor_count(pred) >= (size_t)rows,
              "softmax_xent", "shape", err))
        return -1;
    int n = logits->cols;
    if (!logits->dev) {
        softmax_xent_host(rows, n, F32(logits), I32(labels), scale, F32(dlogits), F32(loss),
                          I32(pred));
        return 0;
    }
    pgn_karg args[] = {KARG(rows),          KARG(n),         KARG(logits->mem), KARG(labels->mem),
                   KARG(scale),         KARG(dlogits->mem), KARG(loss->mem), KARG(pred->mem)};
    size_t global[1] = {(size_t)rows};
    return pgn_launch(logits->dev, "softmax_xent", args, 8, 1, global, NULL, err);
}

/* ---- sgd_momentum: v = mu v + g; w -= lr v ------------------------------------------------ */

static void sgd_momentum_host(int n, float *w, const float *g, float *v, float lr, float mu) {
    for (int i = 0; i < n; i++) pgn_sgd_momentum_elem(w + i, v + i, g[i], lr, mu);
}

int pgn_op_sgd_momentum(pgn_tensor *w, const pgn_tensor *g, pgn_tensor *v, float lr, float mu,
                        pgn_error *err) {
    if (check(same_dev(w, g) && same_dev(w, v), "sgd_momentum", "tensors on different devices",
              err) ||
        check(pgn_tensor_count(g) == pgn_tensor_count(w) &&
                  pgn_tensor_count(v) == pgn_tensor_count(w),
              "sgd_momentum", "shape", err))
        return -1;
    int n = (int)pgn_tensor_count(w);
    if (!w->dev) {
        sgd_momentum_host(n, F32(w), F32(g), F32(v), lr, mu);
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(w->mem), KARG(g->mem), KARG(v->mem), KARG(lr), KARG(mu)};
    size_t global[1] = {(size_t)n};
    return pgn_launch(w->dev, "sgd_momentum", args, 6, 1, global, NULL, err);
}
