/* tensor_gpu.cl: the gpu family's row and column ops (docs/architecture.md, "Device profiles").
 * The cpu family's kernels give a work-item a block of rows or columns, so that pocl's one
 * thread per work-group keeps its lanes busy; a GPU given those blocks runs a few hundred
 * threads. These give a row PGN_LANES work-items (the sums over a row) or a work-item one column
 * (of one chunk), a work-group PGN_GPU_GROUP work-items, calling the same bodies (pgn_ops.h,
 * pgn_gpt.h) or computing their chains: every output is the same chain, in the same order, so the
 * bits are the host's. The launchers are in engine/tensor/ops.c and ops_gpt.c. */

/* ---- sums over a row in lane order: PGN_LANES work-items a row ---------------------------------
 * Work-item l of a row's PGN_LANES (the row's lane) computes lane l's chain of the order every
 * row sum has (pgn_ops.h: terms l, l + PGN_LANES, ... from zero), fold_lanes folds the lanes in
 * local memory as pgn_lanes_fold does: the host's bits. A work-group of PGN_GPU_GROUP holds
 * PGN_GPU_GROUP / PGN_LANES rows; a row past the last computes the last row again (every
 * work-item reaches every barrier) and stores nothing. global: rows * PGN_LANES, rounded up. */

/* This work-item's lane, its row (clamped to the last) and whether that row is its own. */
static inline int lane_row(int rows, int *l, bool *own) {
    int r = get_global_id(0) / PGN_LANES;
    *l = get_local_id(0) % PGN_LANES;
    *own = r < rows;
    return *own ? r : rows - 1;
}

/* This row's lanes' partials v folded into their sum (or, with max, their maximum, which is the
 * same in any order), returned to every lane, through p (the row's PGN_LANES floats of local
 * memory). Every work-item of the group calls it. */
static inline float fold_lanes(__local float *p, int l, float v, bool max) {
    p[l] = v;
    for (int h = PGN_LANES / 2; h > 0; h /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < h) p[l] = max ? (p[l + h] > p[l] ? p[l + h] : p[l]) : p[l] + p[l + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = p[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

/* LayerNorm (pgn_layernorm_forward_row) of a row per PGN_LANES work-items. */
__kernel void layernorm_forward_gpu(int rows, int C, float eps, __global const float *x, __global const float *w,
                                    __global const float *b, __global float *y, __global float *stats) {
    __local float part[PGN_GPU_GROUP];
    int l;
    bool own;
    size_t r = lane_row(rows, &l, &own);
    __local float *p = part + get_local_id(0) - l;
    __global const float *xr = x + r * C;
    float acc = 0.0f;
    for (int c = l; c < C; c += PGN_LANES) acc = acc + xr[c];
    float mean = fold_lanes(p, l, acc, false) / (float)C;
    acc = 0.0f;
    for (int c = l; c < C; c += PGN_LANES) {
        float d = xr[c] - mean;
        acc = fma(d, d, acc);
    }
    float rstd = 1.0f / sqrt(fold_lanes(p, l, acc, false) / (float)C + eps);
    if (!own) return;
    if (l == 0) {
        stats[2 * r] = mean;
        stats[2 * r + 1] = rstd;
    }
    for (int c = l; c < C; c += PGN_LANES) y[r * C + c] = fma((xr[c] - mean) * rstd, w[c], b[c]);
}

/* dx, or dx += it with add (pgn_layernorm_backward_row), of a row per PGN_LANES work-items. */
__kernel void layernorm_backward_gpu(int rows, int C, __global const float *x, __global const float *w,
                                     __global const float *stats, __global const float *dy, int add,
                                     __global float *dx) {
    __local float part[PGN_GPU_GROUP];
    int l;
    bool own;
    size_t r = lane_row(rows, &l, &own);
    __local float *p = part + get_local_id(0) - l;
    __global const float *xr = x + r * C, *dyr = dy + r * C;
    float mean = stats[2 * r], rstd = stats[2 * r + 1], sdn = 0.0f, sdnx = 0.0f;
    for (int c = l; c < C; c += PGN_LANES) pgn_layernorm_backward_terms(c, xr, w, dyr, mean, rstd, &sdn, &sdnx);
    float mdn = fold_lanes(p, l, sdn, false) / (float)C, mdnx = fold_lanes(p, l, sdnx, false) / (float)C;
    if (own) pgn_layernorm_backward_dx(C, l, PGN_LANES, xr, w, dyr, mean, rstd, mdn, mdnx, add, dx + r * C);
}

/* Softmax + cross-entropy, or squared error against one-hot labels when mse is set
 * (pgn_softmax_xent_row, pgn_mse_onehot_row), of a row per PGN_LANES work-items: the arg-max's
 * lanes and fold as pgn_argmax_lanes, the sum's as the row sums'. */
__kernel void fused_loss_gpu(int mse, int rows, int n, __global const float *x, __global const int *labels,
                             float scale, __global float *dx, __global float *loss, __global int *pred) {
    __local float part[PGN_GPU_GROUP];
    __local int part_at[PGN_GPU_GROUP];
    int l;
    bool own;
    size_t r = lane_row(rows, &l, &own);
    int o = get_local_id(0) - l, y = labels[r];
    __global const float *xr = x + r * n;
    __global float *dxr = dx + r * n;
    float m = -INFINITY;
    int at = n;
    for (int j = l; j < n; j += PGN_LANES)
        if (pgn_argmax_takes(m, at, xr[j], j)) {
            m = xr[j];
            at = j;
        }
    part[o + l] = m;
    part_at[o + l] = at;
    for (int h = PGN_LANES / 2; h > 0; h /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < h && pgn_argmax_takes(part[o + l], part_at[o + l], part[o + l + h], part_at[o + l + h])) {
            part[o + l] = part[o + l + h];
            part_at[o + l] = part_at[o + l + h];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float mx = part[o];
    int arg = part_at[o];
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc = 0.0f;
    for (int j = l; j < n; j += PGN_LANES) {
        if (mse) {
            float d = xr[j] - (j == y ? 1.0f : 0.0f);
            acc = fma(d, d, acc);
            if (own) dxr[j] = 2.0f * d * scale;
        } else {
            acc = acc + pgn_expf(xr[j] - mx);
        }
    }
    float sum = fold_lanes(part + o, l, acc, false);
    if (!own) return;
    if (!mse)
        for (int j = l; j < n; j += PGN_LANES) dxr[j] = (pgn_expf(xr[j] - mx) / sum - (j == y ? 1.0f : 0.0f)) * scale;
    if (l == 0) {
        loss[r] = mse ? sum : pgn_logf(sum) - (xr[y] - mx);
        pred[r] = arg < n ? arg : 0;
    }
}

/* A batch's loss sum (in lane order) and correct predictions into stats[2 slot], stats[2 slot + 1]
 * (loss_stats in tensor.cl): one work-group of PGN_LANES. */
__kernel void loss_stats_gpu(int rows, __global const float *loss, __global const int *pred,
                             __global const int *labels, __global float *stats, int slot) {
    __local float part[PGN_LANES];
    __local int count[PGN_LANES];
    int l = get_local_id(0), correct = 0;
    float acc = 0.0f;
    for (int r = l; r < rows; r += PGN_LANES) {
        acc = acc + loss[r];
        correct += pred[r] == labels[r];
    }
    count[l] = correct;
    float sum = fold_lanes(part, l, acc, false); /* its barriers also publish count */
    if (l != 0) return;
    for (int i = 1; i < PGN_LANES; i++) correct += count[i];
    stats[2 * slot] = sum;
    stats[2 * slot + 1] = (float)correct;
}

/* partials[c] = the sum of squares of x[ranges[2c] .. + ranges[2c + 1]) in lane order
 * (pgn_sumsq), a chunk per PGN_LANES work-items. global: n * PGN_LANES, rounded up. */
__kernel void sumsq_ranges_gpu(int n, __global const int *ranges, __global const float *x,
                               __global float *partials) {
    __local float part[PGN_GPU_GROUP];
    int l;
    bool own;
    int c = lane_row(n, &l, &own);
    __global const float *xc = x + ranges[2 * c];
    float acc = 0.0f;
    for (int i = l; i < ranges[2 * c + 1]; i += PGN_LANES) acc = fma(xc[i], xc[i], acc);
    float sum = fold_lanes(part + get_local_id(0) - l, l, acc, false);
    if (own && l == 0) partials[c] = sum;
}

/* The global norm from the partials (their sum in lane order) and the clipping factor, as
 * clip_scale in tensor.cl: one work-group of PGN_LANES. */
__kernel void clip_scale_gpu(int n_partials, __global const float *partials, float max_norm, __global float *out) {
    __local float part[PGN_LANES];
    int l = get_local_id(0);
    float acc = 0.0f;
    for (int i = l; i < n_partials; i += PGN_LANES) acc = acc + partials[i];
    float norm = sqrt(fold_lanes(part, l, acc, false));
    if (l != 0) return;
    out[0] = norm;
    out[1] = pgn_clip_factor(norm, max_norm);
}

/* The LayerNorm parameters' gradient partials of column get_global_id(0) of chunk
 * get_global_id(1), into partials (chunks, 2C), which layernorm_params_finish adds up.
 * global: (C, chunks). */
__kernel void layernorm_backward_params_gpu(int rows, int C, __global const float *x, __global const float *stats,
                                            __global const float *dy, __global float *partials) {
    int c = get_global_id(0), r0 = get_global_id(1) * PGN_SUM_ROWS;
    if (c < C)
        pgn_layernorm_params_block(r0, min(rows, r0 + PGN_SUM_ROWS), C, c, 1, x, stats, dy,
                                   partials + (size_t)get_global_id(1) * 2 * C);
}

/* Column get_global_id(0) of chunk get_global_id(1) (PGN_SUM_ROWS rows): its sum into
 * partials (chunks, cols), which colsum_finish adds up. global: (cols, chunks). */
__kernel void colsum_partial_gpu(int rows, int cols, __global const float *x, __global float *partials) {
    int j = get_global_id(0), r0 = get_global_id(1) * PGN_SUM_ROWS;
    if (j < cols) pgn_colsum_block(r0, min(rows, r0 + PGN_SUM_ROWS), cols, j, 1, x, partials + (size_t)get_global_id(1) * cols);
}

/* dz = dy act'(z) of column get_global_id(0) of chunk get_global_id(1), and its sum into
 * partials. global: (cols, chunks). */
__kernel void bias_act_backward_gpu(int rows, int cols, int act, __global const float *z, __global const float *y,
                                    __global const float *dy, __global float *dz, __global float *partials) {
    int j = get_global_id(0), r0 = get_global_id(1) * PGN_SUM_ROWS;
    if (j < cols)
        pgn_bias_act_backward_block(r0, min(rows, r0 + PGN_SUM_ROWS), cols, j, 1, act, z, y, dy, dz,
                                    partials + (size_t)get_global_id(1) * cols);
}

/* dwte[v][c] for column c = get_global_id(0), token v = get_global_id(1): neighbouring
 * work-items read neighbouring floats of each row of dy. global: (C, V). */
__kernel void embed_backward_wte_gpu(int rows, int C, int V, __global const int *tok, __global const float *dy,
                                     __global float *dwte) {
    int c = get_global_id(0), v = get_global_id(1);
    if (c < C && v < V) pgn_embed_wte_grad_cols(rows, C, v, c, c + 1, tok, dy, dwte + (size_t)v * C);
}
