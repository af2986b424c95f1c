/* pgn_ops.h: per-element and per-row bodies of the tensor ops, shared by the host reference
 * (engine/tensor/ops.c loops over them) and the OpenCL kernels (kernels/tensor.cl calls them once per
 * work-item). One body, two callers: that is what makes host and device bit-identical.
 * Requires pgn_math.h first. */
#ifndef PGN_OPS_H
#define PGN_OPS_H

#ifdef __OPENCL_VERSION__
#define PGN_GLOBAL __global
#else
#define PGN_GLOBAL
#endif

/* ---- the order of a sum over a row ---------------------------------------------------------------
 * A sum over a row (LayerNorm's statistics and its backward's, softmax + cross-entropy's and squared
 * error's, attention's softmax and its backward's dot, the global norm's chunks and their total, a
 * batch's loss) has one order, part of the op's definition: PGN_LANES lanes, lane l adding the
 * terms i = l, l + PGN_LANES, l + 2 PGN_LANES, ... in that order from zero, then the lanes folded in
 * halves, p[l] = p[l] + p[l + h] for h = PGN_LANES / 2, ..., 2, 1 (pgn_lanes_fold). A GPU computes it
 * with PGN_LANES work-items a row and the fold in local memory (kernels/tensor_gpu.cl); a CPU with a
 * 16-float vector, or two of 8; the host's loops lane by lane. Every caller gives the same bits. A
 * sequential sum (the order before) is computed by one GPU thread a row. Column sums, over the rows
 * of a batch, have their own order: chunks of PGN_SUM_ROWS rows, then the chunks in order. */
#define PGN_LANES 16

/* The lanes' partials folded in halves into p[0], returned (p is overwritten). */
PGN_INLINE float pgn_lanes_fold(float p[PGN_LANES]) {
    for (int h = PGN_LANES / 2; h > 0; h /= 2)
        for (int l = 0; l < h; l++) p[l] = p[l] + p[l + h];
    return p[0];
}

/* x[0] + ... + x[n - 1] in lane order, or, with y, x[0] y[0] + ... + x[n - 1] y[n - 1], each lane
 * a chain of fma. */
PGN_INLINE float pgn_lane_sum(int n, PGN_GLOBAL const float *x, PGN_GLOBAL const float *y) {
    int i = 0;
#ifdef __OPENCL_VERSION__ /* lane l in component l of one float16 */
    float16 v = (float16)(0.0f);
    for (; i + PGN_LANES <= n; i += PGN_LANES)
        v = y ? fma(vload16(0, x + i), vload16(0, y + i), v) : v + vload16(0, x + i);
    float p[PGN_LANES];
    vstore16(v, 0, p);
#else
    float p[PGN_LANES];
    for (int l = 0; l < PGN_LANES; l++) p[l] = 0.0f;
    for (; i + PGN_LANES <= n; i += PGN_LANES)
        for (int l = 0; l < PGN_LANES; l++) p[l] = y ? pgn_fma(x[i + l], y[i + l], p[l]) : p[l] + x[i + l];
#endif
    for (int l = 0; i + l < n; l++) p[l] = y ? pgn_fma(x[i + l], y[i + l], p[l]) : p[l] + x[i + l];
    return pgn_lanes_fold(p);
}

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

/* Activations by code (the values of pgn_activation in engine/include/paragon.h). */
#define PGN_ACT_CODE_NONE 0
#define PGN_ACT_CODE_RELU 1
#define PGN_ACT_CODE_GELU 2
#define PGN_ACT_CODE_TANH 3
#define PGN_ACT_CODE_SIGMOID 4

#define PGN_GELU_C 0.797884560802865355f /* sqrt(2/pi) */
#define PGN_GELU_A 0.044715f

/* GELU, tanh form (as GPT-2 and PyTorch's approximate="tanh"):
 * 0.5 x (1 + tanh(c (x + a x^3))). */
PGN_INLINE float pgn_gelu(float x) {
    float u = PGN_GELU_C * (x + PGN_GELU_A * x * x * x);
    return 0.5f * x * (1.0f + pgn_tanhf(u));
}

/* d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2), t = tanh(u). */
PGN_INLINE float pgn_gelu_grad(float x) {
    float u = PGN_GELU_C * (x + PGN_GELU_A * x * x * x);
    float t = pgn_tanhf(u);
    float du = PGN_GELU_C * (1.0f + 3.0f * PGN_GELU_A * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

#ifdef __OPENCL_VERSION__
/* float16 forms of GELU and its gradient for the device's vector paths (the GEMM epilogue, the
 * backward of bias + GELU): the scalar functions' operations lane by lane, branches turned into
 * selects, so every lane has the scalar result's bits (tests/test_ops.c checks them across the
 * float range). The scalar forms stay the definition: a branchy exp and tanh per element ran
 * GPT's 2048 x 512 GELU at 14 ns an element on pocl. */
PGN_INLINE float16 pgn_pow2i16(int16 k) { return as_float16(convert_uint16(k + 127) << 23); }

/* pgn_expf for x in [-103.97, 88.72] (no NaN, no overflow): the same steps. */
PGN_INLINE float16 pgn_expf16_finite(float16 x) {
    float16 n = floor(fma(x, (float16)(1.44269502162933349609f), (float16)(0.5f)));
    float16 r = fma(-n, (float16)(0.693145751953125f), x);
    r = fma(-n, (float16)(1.42860682030941723212e-06f), r);
    float16 p = (float16)(2.48015873015873015873e-05f);
    p = fma(p, r, (float16)(1.98412698412698412698e-04f));
    p = fma(p, r, (float16)(1.38888888888888888889e-03f));
    p = fma(p, r, (float16)(8.33333333333333333333e-03f));
    p = fma(p, r, (float16)(4.16666666666666666667e-02f));
    p = fma(p, r, (float16)(1.66666666666666666667e-01f));
    p = fma(p, r, (float16)(0.5f));
    p = fma(p, r, (float16)(1.0f));
    p = fma(p, r, (float16)(1.0f));
    int16 k = convert_int16(n);
    int16 k1 = k / 2;
    return p * pgn_pow2i16(k1) * pgn_pow2i16(k - k1);
}

PGN_INLINE float16 pgn_tanhf16(float16 x) {
    float16 ax = select(x, -x, x < (float16)(0.0f));
    float16 x2 = ax * ax;
    float16 p = (float16)(-0.00886323552990219656f);
    p = fma(p, x2, (float16)(0.0218694885361552028f));
    p = fma(p, x2, (float16)(-0.0539682539682539683f));
    p = fma(p, x2, (float16)(0.133333333333333333f));
    p = fma(p, x2, (float16)(-0.333333333333333333f));
    float16 small = fma(p * x2, ax, ax);
    /* lanes past 9 (and NaN) compute on a clamped argument and are selected away */
    float16 e = pgn_expf16_finite(fmin(2.0f * ax, (float16)(18.0f)));
    float16 mid = 1.0f - 2.0f / (e + 1.0f);
    float16 r = select((float16)(1.0f), mid, ax < (float16)(9.0f));
    r = select(r, small, ax < (float16)(0.3f));
    r = select(r, -r, x < (float16)(0.0f));
    return select(r, x, isnan(x));
}

PGN_INLINE float16 pgn_gelu16(float16 x) {
    float16 u = PGN_GELU_C * (x + PGN_GELU_A * x * x * x);
    return 0.5f * x * (1.0f + pgn_tanhf16(u));
}

PGN_INLINE float16 pgn_gelu_grad16(float16 x) {
    float16 u = PGN_GELU_C * (x + PGN_GELU_A * x * x * x);
    float16 t = pgn_tanhf16(u);
    float16 du = PGN_GELU_C * (1.0f + 3.0f * PGN_GELU_A * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}
#endif

/* y = act(z). */
PGN_INLINE float pgn_act(int act, float z) {
    switch (act) {
    case PGN_ACT_CODE_RELU: return pgn_relu(z);
    case PGN_ACT_CODE_GELU: return pgn_gelu(z);
    case PGN_ACT_CODE_TANH: return pgn_tanhf(z);
    case PGN_ACT_CODE_SIGMOID: return pgn_sigmoidf(z);
    default: return z;
    }
}

/* dz = dy act'(z), using the forward output y where it is cheaper (tanh, sigmoid). */
PGN_INLINE float pgn_act_grad(int act, float z, float y, float dy) {
    switch (act) {
    case PGN_ACT_CODE_RELU: return pgn_relu_grad(z, dy);
    case PGN_ACT_CODE_GELU: return dy * pgn_gelu_grad(z);
    case PGN_ACT_CODE_TANH: return dy * (1.0f - y * y);
    case PGN_ACT_CODE_SIGMOID: return dy * (y * (1.0f - y));
    default: return dy;
    }
}

/* Dropout mask value for element i of a step: 0 with probability p, else 1/(1-p) (given as
 * scale). The draw depends only on (seed, step, i): identical on every device. */
PGN_INLINE float pgn_dropout_mask(pgn_u64 seed, pgn_u64 step, pgn_u64 i, float p, float scale) {
    return pgn_rand_unit(seed, step, i) < p ? 0.0f : scale;
}

/* Windows of a text for a character model (kernels/tensor.cl windows, engine/tensor/ops.c):
 * window i of a plan starts uniformly at random in [lo, lo + span) from the counter RNG (stream
 * PGN_STREAM_WINDOWS, index i: the same starts on every device), or, for a fixed evaluation set,
 * evenly spread: lo + floor(i span / total). */
#define PGN_STREAM_WINDOWS 0x57494e44UL /* "WIND" */
PGN_INLINE pgn_u64 pgn_window_start(int random, pgn_u64 seed, pgn_u64 i, pgn_u64 lo, pgn_u64 span,
                                    pgn_u64 total) {
    if (random) return lo + pgn_rand64(seed, PGN_STREAM_WINDOWS, i) % span;
    return lo + i * span / total;
}

/* Columns per work-item in the column-sum kernels: a work-item walks the rows reading 16
 * contiguous floats per row, which LLVM vectorises. One column per work-item walked a strided
 * column: bias_act_backward took 70 us for 128x256 on pocl; fashion-mlp went from 0.555 to
 * 0.503 s/epoch with the blocks. */
#define PGN_COL_BLOCK 16
/* Column blocks one work-item of the device's bias_act_backward and colsum_partial takes, side by
 * side along each row of its chunk (kernels/tensor.cl), its accumulators in registers. On pocl,
 * GELU and ReLU backward of 2048 x 512, mean of the two, with z and dy in cache / evicted first:
 * 4 blocks 553 / 1253 us, 8: 475 / 915, 16: 459 / 771, 32 (spilling): 836 / 1318. */
#define PGN_COL_GROUP 16

/* Column sums run in two passes: the rows in chunks of PGN_SUM_ROWS, each chunk's column sums in
 * row order (a work-item a block of PGN_COL_BLOCK columns of one chunk), then for each column the
 * chunks' sums in chunk order from 0. One work-item walking a column block down all the rows
 * (the order before) summed a 2048 x 512 matrix in 2.5 ms on pocl, 2 KB strides thrashing the
 * cache, where 2048 x 384 took 0.43 ms; in chunks every shape is a dense walk. */
#define PGN_SUM_ROWS 64

/* Work-items a work-group in the gpu family's row and column kernels (kernels/tensor_gpu.cl),
 * which give a work-item one row or column. */
#define PGN_GPU_GROUP 64

PGN_INLINE int pgn_sum_chunks(int rows) { return (rows + PGN_SUM_ROWS - 1) / PGN_SUM_ROWS; }

/* Column j's sum from the chunk sums partials (chunks, cols), in chunk order. */
PGN_INLINE float pgn_sum_partials(int chunks, int cols, PGN_GLOBAL const float *partials, int j) {
    float acc = 0.0f;
    for (int c = 0; c < chunks; c++) acc += partials[c * cols + j];
    return acc;
}

/* Columns [j0, j0 + w) (w <= PGN_COL_BLOCK) of rows [r0, r1) of x (rows, cols) summed in row
 * order into part[j0..]. Kernels inline it with w = PGN_COL_BLOCK for whole blocks, so the inner
 * loop has a constant trip count and vectorises. */
PGN_INLINE void pgn_colsum_block(int r0, int r1, int cols, int j0, int w, PGN_GLOBAL const float *x,
                                 PGN_GLOBAL float *part) {
    float acc[PGN_COL_BLOCK];
    for (int jj = 0; jj < PGN_COL_BLOCK; jj++) acc[jj] = 0.0f;
    for (int r = r0; r < r1; r++)
        for (int jj = 0; jj < w; jj++) acc[jj] += x[r * cols + j0 + jj];
    for (int jj = 0; jj < w; jj++) part[j0 + jj] = acc[jj];
}

/* The same block of bias_act's backward: dz = dy act'(z) over the rows, its sums into part. */
PGN_INLINE void pgn_bias_act_backward_block(int r0, int r1, int cols, int j0, int w, int act,
                                            PGN_GLOBAL const float *z, PGN_GLOBAL const float *y,
                                            PGN_GLOBAL const float *dy, PGN_GLOBAL float *dz,
                                            PGN_GLOBAL float *part) {
    float acc[PGN_COL_BLOCK];
    for (int jj = 0; jj < PGN_COL_BLOCK; jj++) acc[jj] = 0.0f;
    for (int r = r0; r < r1; r++) {
        int base = r * cols + j0;
        for (int jj = 0; jj < w; jj++) {
            float g = pgn_act_grad(act, z[base + jj], y[base + jj], dy[base + jj]);
            dz[base + jj] = g;
            acc[jj] += g;
        }
    }
    for (int jj = 0; jj < w; jj++) part[j0 + jj] = acc[jj];
}

/* SGD as PyTorch's torch.optim.SGD: g += wd w (L2); v = mu v + g (when mu > 0);
 * step = nesterov ? g + mu v : v; w -= lr step. g arrives already scaled by clipping. */
PGN_INLINE void pgn_sgd_elem(PGN_GLOBAL float *w, PGN_GLOBAL float *v, float g, float lr, float mu,
                             int nesterov, float wd) {
    float wv = *w;
    if (wd != 0.0f) g = pgn_fma(wd, wv, g);
    float step = g;
    if (mu != 0.0f) {
        float vn = pgn_fma(mu, *v, g);
        *v = vn;
        step = nesterov ? pgn_fma(mu, vn, g) : vn;
    }
    *w = pgn_fma(-lr, step, wv);
}

/* Adam / AdamW as PyTorch's: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * w -= lr (m / bc1) / (sqrt(v / bc2) + eps), bc = 1 - b^t given by the host.
 * AdamW first decays w by lr wd (decoupled); Adam adds wd w to g (L2). */
PGN_INLINE void pgn_adam_elem(PGN_GLOBAL float *w, PGN_GLOBAL float *m, PGN_GLOBAL float *v,
                              float g, float lr, float b1, float b2, float eps, float bc1,
                              float bc2, float wd, int decoupled) {
    float wv = *w;
    if (wd != 0.0f) {
        if (decoupled)
            wv = pgn_fma(-lr * wd, wv, wv);
        else
            g = pgn_fma(wd, wv, g);
    }
    float mn = pgn_fma(b1, *m, (1.0f - b1) * g);
    float vn = pgn_fma(b2, *v, (1.0f - b2) * (g * g));
    *m = mn;
    *v = vn;
    float denom = pgn_sqrt(vn / bc2) + eps;
    *w = wv - lr * ((mn / bc1) / denom);
}

/* Sum of squares of x[0..n) in lane order: one chunk of the global-norm reduction. */
PGN_INLINE float pgn_sumsq(int n, PGN_GLOBAL const float *x) { return pgn_lane_sum(n, x, x); }

/* Global-norm clipping factor: min(1, max_norm / (norm + 1e-6)); 1 when clipping is off. */
PGN_INLINE float pgn_clip_factor(float norm, float max_norm) {
    if (max_norm <= 0.0f) return 1.0f;
    float f = max_norm / (norm + 1e-6f);
    return f < 1.0f ? f : 1.0f;
}

/* The arg-max's step: (b, ib) replaces (a, ia) when greater, or equal with a smaller index, so the
 * lanes' pick, folded in any order, is the first of the maxima (NaN is never picked). */
PGN_INLINE int pgn_argmax_takes(float a, int ia, float b, int ib) { return b > a || (b == a && ib < ia); }

/* The first index of row x's (n) maximum and the maximum, in lanes (lanes without elements hold
 * -inf at index n). A row of NaN gives index 0 and -inf. */
PGN_INLINE int pgn_argmax_lanes(int n, PGN_GLOBAL const float *x, float *max) {
    float m[PGN_LANES];
    int at[PGN_LANES];
    for (int l = 0; l < PGN_LANES; l++) {
        m[l] = -PGN_INF;
        at[l] = n;
    }
    for (int j = 0; j < n; j++)
        if (pgn_argmax_takes(m[j % PGN_LANES], at[j % PGN_LANES], x[j], j)) {
            m[j % PGN_LANES] = x[j];
            at[j % PGN_LANES] = j;
        }
    for (int h = PGN_LANES / 2; h > 0; h /= 2)
        for (int l = 0; l < h; l++)
            if (pgn_argmax_takes(m[l], at[l], m[l + h], at[l + h])) {
                m[l] = m[l + h];
                at[l] = at[l + h];
            }
    *max = m[0];
    return at[0] < n ? at[0] : 0;
}

/* Fused mean-squared error against one-hot labels for one row of n predictions:
 * returns sum_j (x_j - t_j)^2 (lane order, fma), writes dx = 2 (x - t) scale (scale = 1/(rows n)),
 * the arg-max into *pred. */
PGN_INLINE float pgn_mse_onehot_row(int n, PGN_GLOBAL const float *x, int y, float scale,
                                    PGN_GLOBAL float *dx, PGN_GLOBAL int *pred) {
    float p[PGN_LANES], mx;
    for (int l = 0; l < PGN_LANES; l++) p[l] = 0.0f;
    for (int j = 0; j < n; j++) {
        float d = x[j] - (j == y ? 1.0f : 0.0f);
        p[j % PGN_LANES] = pgn_fma(d, d, p[j % PGN_LANES]);
        dx[j] = 2.0f * d * scale;
    }
    *pred = pgn_argmax_lanes(n, x, &mx);
    return pgn_lanes_fold(p);
}

/* Fused softmax + cross-entropy for one row of logits x (n classes) with label y.
 * Writes dx = (softmax(x) - onehot(y)) * scale (scale = 1/batch for a mean loss), returns the
 * row's loss log(sum exp(x - max)) - (x[y] - max) and stores the arg-max in *pred. The sum runs
 * in lane order. */
PGN_INLINE float pgn_softmax_xent_row(int n, PGN_GLOBAL const float *x, int y, float scale,
                                      PGN_GLOBAL float *dx, PGN_GLOBAL int *pred) {
    float mx, p[PGN_LANES];
    *pred = pgn_argmax_lanes(n, x, &mx);
    for (int l = 0; l < PGN_LANES; l++) p[l] = 0.0f;
    for (int j = 0; j < n; j++) p[j % PGN_LANES] = p[j % PGN_LANES] + pgn_expf(x[j] - mx);
    float sum = pgn_lanes_fold(p);
    for (int j = 0; j < n; j++) {
        float e = pgn_expf(x[j] - mx) / sum;
        dx[j] = (e - (j == y ? 1.0f : 0.0f)) * scale;
    }
    return pgn_logf(sum) - (x[y] - mx);
}

#endif
