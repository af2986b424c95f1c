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

/* The chunk of a column-sum work-item (second global dimension): rows [*r0, *r1). */
static inline void sum_chunk(int rows, int *r0, int *r1) {
    *r0 = get_global_id(1) * PGN_SUM_ROWS;
    *r1 = min(rows, *r0 + PGN_SUM_ROWS);
}

#if PGN_COL_BLOCK != 16
#error "bias_act_backward_blocks takes a column block as one float16"
#endif
/* nb whole blocks of pgn_bias_act_backward_block for GELU, ReLU or none, from column j0, as
 * float16s (pgn_gelu_grad16; ReLU as pgn_relu_grad: dz = z > 0 ? dy : 0), row by row: the
 * scalar block's gradients and sums lane by lane, each column summed in row order from zero.
 * Without dz (NULL) and with none, pgn_colsum_block's sums of dy. Row by row, the blocks of a
 * row lie side by side; a block at a time down the chunk's rows (2 KB apart at GPT's 512
 * columns) took 1060 us for 2048 x 512 with GELU and 568 with ReLU (in cache). */
static inline void bias_act_backward_blocks(int r0, int r1, int cols, int j0, int nb, int act,
                                            __global const float *z, __global const float *dy,
                                            __global float *dz, __global float *part) {
    float16 acc[PGN_COL_GROUP];
#pragma unroll
    for (int b = 0; b < PGN_COL_GROUP; b++) acc[b] = (float16)(0.0f);
    for (int r = r0; r < r1; r++) {
        size_t base = (size_t)r * cols + j0;
#pragma unroll
        for (int b = 0; b < PGN_COL_GROUP; b++) {
            if (b >= nb) break;
            float16 d = vload16(b, dy + base), zv = vload16(b, z + base);
            float16 g = act == PGN_ACT_CODE_GELU   ? d * pgn_gelu_grad16(zv)
                        : act == PGN_ACT_CODE_RELU ? select((float16)(0.0f), d, zv > (float16)(0.0f))
                                                   : d;
            if (dz) vstore16(g, b, dz + base);
            acc[b] += g;
        }
    }
#pragma unroll
    for (int b = 0; b < PGN_COL_GROUP; b++)
        if (b < nb) vstore16(acc[b], b, part + j0);
}

/* dz = dy act'(z), and each chunk's column sums of dz into partials (chunks, cols) (colsum_finish
 * adds them up: db): a work-item takes PGN_COL_GROUP blocks of one chunk, the whole ones as
 * vectors when the activation has a vector form, the rest by the scalar block.
 * global: (ceil(cols / (PGN_COL_BLOCK * PGN_COL_GROUP)), chunks). */
__kernel void bias_act_backward(int rows, int cols, int act, __global const float *z,
                                __global const float *y, __global const float *dy,
                                __global float *dz, __global float *partials) {
    int j0 = get_global_id(0) * PGN_COL_BLOCK * PGN_COL_GROUP, r0, r1;
    if (j0 >= cols) return;
    sum_chunk(rows, &r0, &r1);
    __global float *part = partials + (size_t)get_global_id(1) * cols;
    int j1 = min(cols, j0 + PGN_COL_BLOCK * PGN_COL_GROUP), nb = 0;
    if (act == PGN_ACT_CODE_GELU || act == PGN_ACT_CODE_RELU || act == PGN_ACT_CODE_NONE) {
        nb = (j1 - j0) / PGN_COL_BLOCK;
        if (nb > 0) bias_act_backward_blocks(r0, r1, cols, j0, nb, act, z, dy, dz, part);
    }
    for (int j = j0 + nb * PGN_COL_BLOCK; j < j1; j += PGN_COL_BLOCK)
        pgn_bias_act_backward_block(r0, r1, cols, j, min(PGN_COL_BLOCK, j1 - j), act, z, y, dy, dz, part);
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

/* Each chunk's column sums of x (rows, cols) into partials (chunks, cols), PGN_COL_GROUP blocks
 * of PGN_COL_BLOCK columns a work-item, as bias_act_backward's.
 * global: (ceil(cols / (PGN_COL_BLOCK * PGN_COL_GROUP)), chunks). */
__kernel void colsum_partial(int rows, int cols, __global const float *x, __global float *partials) {
    int j0 = get_global_id(0) * PGN_COL_BLOCK * PGN_COL_GROUP, r0, r1;
    if (j0 >= cols) return;
    sum_chunk(rows, &r0, &r1);
    __global float *part = partials + (size_t)get_global_id(1) * cols;
    int j1 = min(cols, j0 + PGN_COL_BLOCK * PGN_COL_GROUP), nb = (j1 - j0) / PGN_COL_BLOCK;
    if (nb > 0) bias_act_backward_blocks(r0, r1, cols, j0, nb, PGN_ACT_CODE_NONE, x, x, 0, part);
    if (j0 + nb * PGN_COL_BLOCK < j1)
        pgn_colsum_block(r0, r1, cols, j0 + nb * PGN_COL_BLOCK, j1 - j0 - nb * PGN_COL_BLOCK, x, part);
}

/* out (cols) = the chunk sums of partials (chunks, cols) added up in chunk order; global: cols. */
__kernel void colsum_finish(int chunks, int cols, __global const float *partials, __global float *out) {
    int j = get_global_id(0);
    if (j < cols) out[j] = pgn_sum_partials(chunks, cols, partials, j);
}

/* Column j (of total) of the deferred column sums (pgn_op_finish_sums): its entry's out[out_off +
 * j - first] = the chunks' partials in chunk order. table: 5 ints an entry (first, n, poff,
 * stride, out_off), in column order. global: total. */
__kernel void finish_sums(int n_entries, int total, int chunks, __global const int *table,
                          __global const float *partials, __global float *out) {
    int j = get_global_id(0), e = 0;
    if (j >= total) return;
    while (e + 1 < n_entries && table[5 * (e + 1)] <= j) e++;
    __global const int *en = table + 5 * e;
    out[en[4] + j - en[0]] = pgn_sum_partials(chunks, en[3], partials + en[2], j - en[0]);
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

/* dst row r = src row idx[offset + r] (4-byte elements, floats or ints), a row per work-item in
 * 16-element vectors: one work-item per element, with a division and a remainder each, took
 * 119 us for a Fashion-MNIST batch's 128 x 784 on pocl. global: rows. */
__kernel void gather_rows(int rows, int cols, __global const uint *src, __global const int *idx,
                          int offset, __global uint *dst) {
    int r = get_global_id(0);
    if (r >= rows) return;
    __global const uint *s = src + (long)idx[offset + r] * cols;
    __global uint *d = dst + (long)r * cols;
    int j = 0;
    for (; j + 16 <= cols; j += 16) vstore16(vload16(0, s + j), 0, d + j);
    for (; j < cols; j++) d[j] = s[j];
}

/* B windows of T tokens: x[b T + t] = tokens[start_b + t], y the next token (the label);
 * start_b = pgn_window_start(random, seed, index0 + b, lo, span, total). global: B*T. */
__kernel void windows(int B, int T, __global const int *tokens, int random, ulong seed, ulong index0,
                      ulong lo, ulong span, ulong total, __global int *x, __global int *y) {
    int i = get_global_id(0);
    if (i >= B * T) return;
    ulong start = pgn_window_start(random, seed, index0 + (ulong)(i / T), lo, span, total);
    x[i] = tokens[start + (ulong)(i % T)];
    y[i] = tokens[start + (ulong)(i % T) + 1];
}

/* stats[2 slot] = sum of loss over rows (lane order), stats[2 slot + 1] = correct predictions.
 * A single work-item. */
__kernel void loss_stats(int rows, __global const float *loss, __global const int *pred,
                         __global const int *labels, __global float *stats, int slot) {
    if (get_global_id(0) != 0) return;
    int correct = 0;
    for (int r = 0; r < rows; r++) correct += pred[r] == labels[r];
    stats[2 * slot] = pgn_lane_sum(rows, loss, 0);
    stats[2 * slot + 1] = (float)correct;
}

/* partials[c] = sum of squares of x[ranges[2c] .. + ranges[2c + 1]) in lane order; global: n. */
__kernel void sumsq_ranges(int n, __global const int *ranges, __global const float *x,
                           __global float *partials) {
    int c = get_global_id(0);
    if (c < n) partials[c] = pgn_sumsq(ranges[2 * c + 1], x + ranges[2 * c]);
}

/* Global-norm clipping: norm = sqrt(sum of partials in lane order); out[0] = norm,
 * out[1] = min(1, max_norm / (norm + 1e-6)). A single work-item. */
__kernel void clip_scale(int n_partials, __global const float *partials, float max_norm,
                         __global float *out) {
    if (get_global_id(0) != 0) return;
    float norm = pgn_sqrt(pgn_lane_sum(n_partials, partials, 0));
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
