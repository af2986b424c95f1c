/* ops.c: the tensor ops. Each op's host reference and its kernel launcher stand side by side,
 * both built on the shared bodies in kernels/pgn_ops.h, so they give the same bits.
 *
 *   op            host reference         kernel (kernels/tensor.cl)   backward of
 *   gemm          gemm_host              gemm_naive                   itself, transposed
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

typedef struct {
    size_t size;
    const void *value;
} karg;

#define KARG(x) {sizeof(x), &(x)}

/* Queues one kernel over a 1-D or 2-D range; no finish (DESIGN.md: launches queue at ~2 us). */
static int launch(pgn_device *dev, pgn_kernel_id id, const karg *args, int nargs, cl_uint dims,
                  const size_t *global, pgn_error *err) {
    cl_kernel k = dev->kernels[id];
    for (int i = 0; i < nargs; i++) {
        cl_int st = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (st != CL_SUCCESS) {
            pgn_error_set(err, "device", "", "%s: argument %d: %s", pgn_kernel_names[id], i,
                          pgn_cl_status_name(st));
            return -1;
        }
    }
    cl_int st = clEnqueueNDRangeKernel(dev->queue, k, dims, NULL, global, NULL, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, "device", "", "%s: launch on %s failed: %s", pgn_kernel_names[id],
                      dev->info.id, pgn_cl_status_name(st));
        return -1;
    }
    return 0;
}

static int check(bool ok, const char *op, const char *what, pgn_error *err) {
    if (ok) return 0;
    pgn_error_set(err, "internal", "", "%s: %s", op, what);
    return -1;
}

static bool same_dev(const pgn_tensor *a, const pgn_tensor *b) { return a->dev == b->dev; }

#define F32(t) ((float *)(t)->host)
#define I32(t) ((int *)(t)->host)

/* ---- gemm: C (M,N) = op(A) (M,K) op(B) (K,N) ---------------------------------------------- */

typedef struct {
    int a_rs, a_cs, b_rs, b_cs;
} gemm_strides;

static gemm_strides strides_for(int M, int N, int K, bool ta, bool tb) {
    gemm_strides s;
    s.a_rs = ta ? 1 : K;
    s.a_cs = ta ? M : 1;
    s.b_rs = tb ? 1 : N;
    s.b_cs = tb ? K : 1;
    return s;
}

static void gemm_host(int M, int N, int K, const float *a, gemm_strides s, const float *b,
                      float *c) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            c[i * N + j] = pgn_gemm_elem(K, a + i * s.a_rs, s.a_cs, b + j * s.b_cs, s.b_rs);
}

int pgn_op_gemm(int M, int N, int K, const pgn_tensor *a, bool ta, const pgn_tensor *b, bool tb,
                pgn_tensor *c, pgn_error *err) {
    if (check(same_dev(a, b) && same_dev(a, c), "gemm", "tensors on different devices", err) ||
        check(M > 0 && N > 0 && K > 0, "gemm", "empty shape", err) ||
        check(pgn_tensor_count(a) >= (size_t)M * K, "gemm", "A too small", err) ||
        check(pgn_tensor_count(b) >= (size_t)K * N, "gemm", "B too small", err) ||
        check(pgn_tensor_count(c) >= (size_t)M * N, "gemm", "C too small", err))
        return -1;
    gemm_strides s = strides_for(M, N, K, ta, tb);
    if (!c->dev) {
        gemm_host(M, N, K, F32(a), s, F32(b), F32(c));
        return 0;
    }
    int ldc = N;
    karg args[] = {KARG(M),      KARG(N),      KARG(K),      KARG(a->mem), KARG(s.a_rs),
                   KARG(s.a_cs), KARG(b->mem), KARG(s.b_rs), KARG(s.b_cs), KARG(c->mem),
                   KARG(ldc)};
    size_t global[2] = {(size_t)N, (size_t)M};
    return launch(c->dev, PGN_K_GEMM_NAIVE, args, 11, 2, global, err);
}

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
    karg args[] = {KARG(n), KARG(cols), KARG(x->mem), KARG(bias->mem)};
    size_t global[1] = {(size_t)n};
    return launch(x->dev, PGN_K_BIAS_ADD, args, 4, 1, global, err);
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
    karg args[] = {KARG(n), KARG(x->mem), KARG(y->mem)};
    size_t global[1] = {(size_t)n};
    return launch(x->dev, PGN_K_RELU_FORWARD, args, 3, 1, global, err);
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
    karg args[] = {KARG(n), KARG(x->mem), KARG(dy->mem), KARG(dx->mem)};
    size_t global[1] = {(size_t)n};
    return launch(x->dev, PGN_K_RELU_BACKWARD, args, 4, 1, global, err);
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
    karg args[] = {KARG(rows), KARG(cols), KARG(x->mem), KARG(out->mem)};
    size_t global[1] = {(size_t)cols};
    return launch(x->dev, PGN_K_COLSUM, args, 4, 1, global, err);
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
    karg args[] = {KARG(rows),          KARG(n),         KARG(logits->mem), KARG(labels->mem),
                   KARG(scale),         KARG(dlogits->mem), KARG(loss->mem), KARG(pred->mem)};
    size_t global[1] = {(size_t)rows};
    return launch(logits->dev, PGN_K_SOFTMAX_XENT, args, 8, 1, global, err);
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
    karg args[] = {KARG(n), KARG(w->mem), KARG(g->mem), KARG(v->mem), KARG(lr), KARG(mu)};
    size_t global[1] = {(size_t)n};
    return launch(w->dev, PGN_K_SGD_MOMENTUM, args, 6, 1, global, err);
}
