/* tensor.cl: OpenCL kernels of the tensor ops. pgn_math.h and pgn_ops.h are prepended when the
 * program is built (engine/device.c), so each kernel is a thin loop over a shared body and gives
 * the same bits as the host reference in engine/ops.c. Launchers live in engine/ops.c. */

/* x (rows, cols) += bias (cols) broadcast over rows; global size rows*cols. */
__kernel void bias_add(int n, int cols, __global float *x, __global const float *bias) {
    int i = get_global_id(0);
    if (i < n) x[i] = x[i] + bias[i % cols];
}

/* y = relu(x); global size n. */
__kernel void relu_forward(int n, __global const float *x, __global float *y) {
    int i = get_global_id(0);
    if (i < n) y[i] = pgn_relu(x[i]);
}

/* dx = dy where x > 0; global size n. */
__kernel void relu_backward(int n, __global const float *x, __global const float *dy,
                            __global float *dx) {
    int i = get_global_id(0);
    if (i < n) dx[i] = pgn_relu_grad(x[i], dy[i]);
}

/* out (cols) = column sums of x (rows, cols); global size cols. */
__kernel void colsum(int rows, int cols, __global const float *x, __global float *out) {
    int j = get_global_id(0);
    if (j < cols) out[j] = pgn_colsum_elem(rows, cols, x, j);
}

/* Fused softmax + cross-entropy over (rows, n) logits; one work-item per row.
 * loss (rows), pred (rows), dx (rows, n). */
__kernel void softmax_xent(int rows, int n, __global const float *x, __global const int *labels,
                           float scale, __global float *dx, __global float *loss,
                           __global int *pred) {
    int r = get_global_id(0);
    if (r < rows)
        loss[r] = pgn_softmax_xent_row(n, x + r * n, labels[r], scale, dx + r * n, pred + r);
}

/* SGD with momentum over n parameters; global size n. */
__kernel void sgd_momentum(int n, __global float *w, __global const float *g, __global float *v,
                           float lr, float mu) {
    int i = get_global_id(0);
    if (i < n) pgn_sgd_momentum_elem(w + i, v + i, g[i], lr, mu);
}
