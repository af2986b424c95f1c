/* tensor_gpu.cl: the gpu family's row and column ops (docs/architecture.md, "Device profiles").
 * The cpu family's kernels give a work-item a block of rows or columns, so that pocl's one
 * thread per work-group keeps its lanes busy; a GPU given those blocks runs a few hundred
 * threads. These give a work-item one row or one column (of one chunk) and a work-group
 * PGN_GPU_GROUP of them, calling the same bodies (pgn_ops.h, pgn_gpt.h) with one lane: every
 * output is the same chain, in the same order, so the bits are the host's. The launchers are in
 * engine/tensor/ops.c and ops_gpt.c. */

/* LayerNorm of row get_global_id(0); global: rows (rounded up to the group). */
__kernel void layernorm_forward_gpu(int rows, int C, float eps, __global const float *x, __global const float *w,
                                    __global const float *b, __global float *y, __global float *stats) {
    int r = get_global_id(0);
    if (r < rows) pgn_layernorm_forward_rows(r, 1, 1, C, eps, x, w, b, y, stats);
}

/* dx of row get_global_id(0); global: rows. */
__kernel void layernorm_backward_gpu(int rows, int C, __global const float *x, __global const float *w,
                                     __global const float *stats, __global const float *dy, __global float *dx) {
    int r = get_global_id(0);
    if (r < rows) pgn_layernorm_backward_rows(r, 1, 1, C, x, w, stats, dy, dx);
}

/* dw, db (either may be NULL) of column get_global_id(0) over all the rows; global: C. */
__kernel void layernorm_backward_params_gpu(int rows, int C, __global const float *x, __global const float *stats,
                                            __global const float *dy, __global float *dw, __global float *db) {
    int c = get_global_id(0);
    if (c < C) pgn_layernorm_params_block(rows, C, c, 1, x, stats, dy, dw, db);
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
