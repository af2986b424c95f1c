/* pgn_ops.h: per-element and per-row bodies of the tensor ops, shared by the host reference
 * (engine/ops.c loops over them) and the OpenCL kernels (kernels/tensor.cl calls them once per
 * work-item). One body, two callers: that is what makes host and device bit-identical.
 * Requires pgn_math.h first. */
#ifndef PGN_OPS_H
#define PGN_OPS_H

#ifdef __OPENCL_VERSION__
#define PGN_GLOBAL __global
#else
#define PGN_GLOBAL
#endif

/* GEMM element: C(i,j) = sum_k A(i,k) B(k,j), accumulated over k in order with fma, from 0.
 * Strides make every transpose variant the same loop: A(i,k) = a[i*a_rs + k*a_cs]. */
PGN_INLINE float pgn_gemm_elem(int K, PGN_GLOBAL const float *a, int a_cs,
                               PGN_GLOBAL const float *b, int b_rs) {
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc = pgn_fma(a[k * a_cs], b[k * b_rs], acc);
    return acc;
}

/* y = max(x, 0); the backward passes dy where the forward input was positive. */
PGN_INLINE float pgn_relu(float x) { return x > 0.0f ? x : 0.0f; }
PGN_INLINE float pgn_relu_grad(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

/* Column sum of a (rows, cols) row-major matrix, rows in order from 0. */
PGN_INLINE float pgn_colsum_elem(int rows, int cols, PGN_GLOBAL const float *x, int col) {
    float acc = 0.0f;
    for (int r = 0; r < rows; r++) acc += x[r * cols + col];
    return acc;
}

/* SGD with momentum (PyTorch's form, no dampening): v = mu v + g; w = w - lr v. */
PGN_INLINE void pgn_sgd_momentum_elem(PGN_GLOBAL float *w, PGN_GLOBAL float *v, float g, float lr,
                                      float mu) {
    float vn = pgn_fma(mu, *v, g);
    *v = vn;
    *w = pgn_fma(-lr, vn, *w);
}

/* Fused softmax + cross-entropy for one row of logits x (n classes) with label y.
 * Writes dx = (softmax(x) - onehot(y)) * scale (scale = 1/batch for a mean loss), returns the
 * row's loss log(sum exp(x - max)) - (x[y] - max) and stores the arg-max in *pred.
 * Sums run over the classes in order. */
PGN_INLINE float pgn_softmax_xent_row(int n, PGN_GLOBAL const float *x, int y, float scale,
                                      PGN_GLOBAL float *dx, PGN_GLOBAL int *pred) {
    float mx = x[0];
    int arg = 0;
    for (int j = 1; j < n; j++) {
        if (x[j] > mx) {
            mx = x[j];
            arg = j;
        }
    }
    float sum = 0.0f;
    for (int j = 0; j < n; j++) sum += pgn_expf(x[j] - mx);
    for (int j = 0; j < n; j++) {
        float p = pgn_expf(x[j] - mx) / sum;
        dx[j] = (p - (j == y ? 1.0f : 0.0f)) * scale;
    }
    *pred = arg;
    return pgn_logf(sum) - (x[y] - mx);
}

#endif
