/* tensor.cl: OpenCL kernels of the tensor ops other than GEMM. pgn_math.h and pgn_ops.h are
 * prepended when the program is built (engine/device.c), so each kernel is a thin loop over a
 * shared body and gives the same bits as the host reference in engine/tensor/ops.c, where the
 * launchers live. Shapes are row-major (rows, cols); n = rows * cols. */

/* z (rows, cols) += bias (cols); y = act(z). y may be z when act is none. global: n. */
__kernel void bias_act_forward(int n, int cols, int act, __global float *z,
                               __global const float *bias, __global float *y) {
    int i = get_global_id(0);
    if (i >= n) return;
    float v = z[i] + bias[i % cols];
    z[i] = v;
    y[i] = pgn_act(act, v);
}

/* Columns [j0, j0 + w) of bias_act_backward. Inlined with w = PGN_COL_BLOCK for whole blocks,
 * so the inner loop has a constant trip count and vectorises; the last block passes its width. */
static inline void bias_act_backward_block(int rows, int cols, int j0, int w, int act,
                                           __global const float *z, __global const float *y,
                                           __global const float *dy, __global float *dz,
                                           __global float *db) {
    float acc[PGN_COL_BLOCK];
    for (int jj = 0; jj < PGN_COL_BLOCK; jj++) acc[jj] = 0.0f;
    for (int r = 0; r < rows; r++) {
        int base = r * cols + j0;
        for (int jj = 0; jj < w; jj++) {
            float g = pgn_act_grad(act, z[base + jj], y[base + jj], dy[base + jj]);
            dz[base + jj] = g;
            acc[jj] += g;
        }
    }
    for (int jj = 0; jj < w; jj++) db[j0 + jj] = acc[jj];
}

/* dz = dy act'(z) and db (cols) = column sums of dz, rows in order (each column its own
 * in-order sum, as on the host). global: ceil(cols / PGN_COL_BLOCK). */
__kernel void bias_act_backward(int rows, int cols, int act, __global const float *z,
                                __global const float *y, __global const float *dy,
                                __global float *dz, __global float *db) {
    int j0 = get_global_id(0) * PGN_COL_BLOCK;
    if (j0 >= cols) return;
    if (cols - j0 >= PGN_COL_BLOCK)
        bias_act_backward_block(rows, cols, j0, PGN_COL_BLOCK, act, z, y, dy, dz, db);
    else
        bias_act_backward_block(rows, cols, j0, cols - j0, act, z, y, dy, dz, db);
}

/* y = act(x); global: n. */
__kernel void act_forward(int n, int act, __global const float *x, __global float *y) {
    int i = get_global_id(0);
    if (i < n) y[i] = pgn_act(act, x[i]);
}

/* act_forward for ReLU, without the switch: pocl vectorises across work-items only a body
 * without the branch (measured 1M elements: 14-26 GB/s with it, add's ~75-125 without). */
__kernel void relu_forward(int n, __global const float *x, __global float *y) {
    int i = get_global_id(0);
    if (i < n) y[i] = pgn_relu(x[i]);
}

/* dx = dy act'(x); global: n. */
__kernel void act_backward(int n, int act, __global const float *x, __global const float *y,
                           __global const float *dy, __global float *dx) {
    int i = get_global_id(0);
    if (i < n) dx[i] = pgn_act_grad(act, x[i], y[i], dy[i]);
}

/* mask = 0 or 1/(1-p) from the counter RNG; y = x mask. global: n. */
__kernel void dropout_forward(int n, float p, float scale, ulong seed, ulong step,
                              __global const float *x, __global float *mask,
                              __global float *y) {
    int i = get_global_id(0);
    if (i >= n) return;
    float m = pgn_dropout_mask(seed, step, (ulong)i, p, scale);
    mask[i] = m;
    y[i] = x[i] * m;
}

/* out = a * b, elementwise; global: n. */
__kernel void mul(int n, __global const float *a, __global const float *b, __global float *out) {
    int i = get_global_id(0);
    if (i < n) out[i] = a[i] * b[i];
}

/* out = a + b, elementwise; global: n. */
__kernel void add(int n, __global const float *a, __global const float *b, __global float *out) {
    int i = get_global_id(0);
    if (i < n) out[i] = a[i] + b[i];
}

/* out (cols) = column sums of x (rows, cols); global: cols. */
__kernel void colsum(int rows, int cols, __global const float *x, __global float *out) {
    int j = get_global_id(0);
    if (j < cols) out[j] = pgn_colsum_elem(rows, cols, x, j);
}

/* dst (rows, cols) = src (cols) * scale, every row; global: n. */
__kernel void broadcast_rows(int n, int cols, float scale, __global const float *src,
                             __global float *dst) {
    int i = get_global_id(0);
    if (i < n) dst[i] = src[i % cols] * scale;
}

/* Fused loss over (rows, n) predictions, one work-item per row: softmax + cross-entropy, or
 * squared error against one-hot labels when mse is set. */
__kernel void fused_loss(int mse, int rows, int n, __global const float *x,
                         __global const int *labels, float scale, __global float *dx,
                         __global float *loss, __global int *pred) {
    int r = get_global_id(0);
    if (r >= rows) return;
    loss[r] = mse ? pgn_mse_onehot_row(n, x + r * n, labels[r], scale, dx + r * n, pred + r)
                  : pgn_softmax_xent_row(n, x + r * n, labels[r], scale, dx + r * n, pred + r);
}

/* dst row r = src row idx[offset + r] (4-byte elements, floats or ints); global: rows*cols. */
__kernel void gather_rows(int n, int cols, __global const uint *src, __global const int *idx,
                          int offset, __global uint *dst) {
    int i = get_global_id(0);
    if (i >= n) return;
    int r = i / cols;
    dst[i] = src[(long)idx[offset + r] * cols + i % cols];
}

/* stats[2 slot] = sum of loss over rows (in order), stats[2 slot + 1] = correct predictions.
 * A single work-item: the order of the sum is fixed. */
__kernel void loss_stats(int rows, __global const float *loss, __global const int *pred,
                         __global const int *labels, __global float *stats, int slot) {
    if (get_global_id(0) != 0) return;
    float sum = 0.0f;
    int correct = 0;
    for (int r = 0; r < rows; r++) {
        sum += loss[r];
        correct += pred[r] == labels[r];
    }
    stats[2 * slot] = sum;
    stats[2 * slot + 1] = (float)correct;
}

/* partials[offset + c] = sum of squares of chunk c of x; global: chunks. */
__kernel void sumsq_chunks(int n, int chunk, __global const float *x, __global float *partials,
                           int offset) {
    int c = get_global_id(0);
    int start = c * chunk;
    if (start >= n) return;
    int len = n - start < chunk ? n - start : chunk;
    partials[offset + c] = pgn_sumsq(len, x + start);
}

/* Global-norm clipping: norm = sqrt(sum of partials in order); out[0] = norm,
 * out[1] = min(1, max_norm / (norm + 1e-6)). A single work-item. */
__kernel void clip_scale(int n_partials, __global const float *partials, float max_norm,
                         __global float *out) {
    if (get_global_id(0) != 0) return;
    float acc = 0.0f;
    for (int i = 0; i < n_partials; i++) acc += partials[i];
    float norm = pgn_sqrt(acc);
    out[0] = norm;
    out[1] = pgn_clip_factor(norm, max_norm);
}

/* SGD (momentum, Nesterov, L2) over n parameters; g is scaled by scale[1]. global: n. */
__kernel void sgd_update(int n, __global float *w, __global const float *g, __global float *v,
                         __global const float *scale, float lr, float mu, int nesterov,
                         float wd) {
    int i = get_global_id(0);
    if (i < n) pgn_sgd_elem(w + i, v + i, g[i] * scale[1], lr, mu, nesterov, wd);
}

/* Adam / AdamW over n parameters; g is scaled by scale[1]. global: n. */
__kernel void adam_update(int n, __global float *w, __global const float *g, __global float *m,
                          __global float *v, __global const float *scale, float lr, float b1,
                          float b2, float eps, float bc1, float bc2, float wd, int decoupled) {
    int i = get_global_id(0);
    if (i < n)
        pgn_adam_elem(w + i, m + i, v + i, g[i] * scale[1], lr, b1, b2, eps, bc1, bc2, wd,
                      decoupled);
}

/* Stores for engine/device.c's pgn_device_write, pgn_device_fill_u32 and pgn_device_copy on
 * Oclgrind, whose uninitialised-value checker follows a kernel's stores but not the host's:
 * dst[dst_off + i] = src[src_off + i], or = value, for i < n, per_item words per work-item.
 * global: ceil(n / per_item). */
__kernel void copy_u32(ulong n, uint per_item, __global const uint *src, ulong src_off,
                       __global uint *dst, ulong dst_off) {
    ulong i0 = get_global_id(0) * (ulong)per_item;
    for (ulong i = i0; i < n && i < i0 + per_item; i++) dst[dst_off + i] = src[src_off + i];
}

__kernel void fill_u32(ulong n, uint per_item, __global uint *dst, ulong off, uint value) {
    ulong i0 = get_global_id(0) * (ulong)per_item;
    for (ulong i = i0; i < n && i < i0 + per_item; i++) dst[off + i] = value;
}
