/* gpt.cl: OpenCL kernels of the transformer ops (embedding, LayerNorm, causal self-attention).
 * pgn_math.h, pgn_ops.h and pgn_gpt.h are prepended when the program is built, so each kernel
 * picks its work-item's rows, columns or block and calls the shared body the host reference in
 * engine/tensor/ops_gpt.c calls too. No float atomics: every output has one writer. */

/* y (rows, C) = wte[tok[r]] + wpe[r % T]; global: rows. */
__kernel void embed_forward(int rows, int T, int C, int V, __global const int *tok,
                            __global const float *wte, __global const float *wpe,
                            __global float *y) {
    int r = get_global_id(0);
    if (r >= rows) return;
    pgn_embed_row(C, V, tok[r], wte, wpe + (size_t)(r % T) * C, y + (size_t)r * C);
}

/* y (C) = wte[tok[0]] + wpe[pos]: one token at a position, for decoding. global: 1. */
__kernel void embed_at(int pos, int C, int V, __global const int *tok, __global const float *wte,
                       __global const float *wpe, __global float *y) {
    if (get_global_id(0) == 0) pgn_embed_row(C, V, tok[0], wte, wpe + (size_t)pos * C, y);
}

/* dwte row v = the sum of dy's rows with that token, in row order; global: V. */
__kernel void embed_backward_wte(int rows, int C, int V, __global const int *tok,
                                 __global const float *dy, __global float *dwte) {
    int v = get_global_id(0);
    if (v < V) pgn_embed_wte_grad_row(rows, C, v, tok, dy, dwte + (size_t)v * C);
}

/* dwpe (P, C): PGN_COL_BLOCK columns of one row per work-item; global: P * ceil(C / block). */
__kernel void embed_backward_wpe(int rows, int T, int C, int P, __global const float *dy,
                                 __global float *dwpe) {
    int blocks = (C + PGN_COL_BLOCK - 1) / PGN_COL_BLOCK, id = get_global_id(0);
    int t = id / blocks, c0 = id % blocks * PGN_COL_BLOCK;
    if (t >= P) return;
    if (C - c0 >= PGN_COL_BLOCK)
        pgn_embed_wpe_grad_block(rows, T, C, t, c0, PGN_COL_BLOCK, dy, dwpe);
    else
        pgn_embed_wpe_grad_block(rows, T, C, t, c0, C - c0, dy, dwpe);
}

/* LayerNorm of PGN_LN_ROWS rows per work-item, a row at a time; global: ceil(rows / PGN_LN_ROWS). */
__kernel void layernorm_forward(int rows, int C, float eps, __global const float *x,
                                __global const float *w, __global const float *b,
                                __global float *y, __global float *stats) {
    int r0 = get_global_id(0) * PGN_LN_ROWS;
    for (int r = r0; r < rows && r < r0 + PGN_LN_ROWS; r++) pgn_layernorm_forward_row(r, C, eps, x, w, b, y, stats);
}

/* dx (or dx += it, with add) of PGN_LN_ROWS rows per work-item; global: ceil(rows / PGN_LN_ROWS). */
__kernel void layernorm_backward(int rows, int C, __global const float *x,
                                 __global const float *w, __global const float *stats,
                                 __global const float *dy, int add, __global float *dx) {
    int r0 = get_global_id(0) * PGN_LN_ROWS;
    for (int r = r0; r < rows && r < r0 + PGN_LN_ROWS; r++) pgn_layernorm_backward_row(r, C, x, w, stats, dy, add, dx);
}

/* The LayerNorm parameters' gradient partials (pgn_layernorm_params_block) of PGN_COL_BLOCK
 * columns of chunk get_global_id(1) a work-item, into partials (chunks, 2C);
 * global: (ceil(C / PGN_COL_BLOCK), chunks). */
__kernel void layernorm_backward_params(int rows, int C, __global const float *x,
                                        __global const float *stats, __global const float *dy,
                                        __global float *partials) {
    int c0 = get_global_id(0) * PGN_COL_BLOCK, r0 = get_global_id(1) * PGN_SUM_ROWS, r1 = min(rows, r0 + PGN_SUM_ROWS);
    if (c0 >= C) return;
    __global float *pw = partials + (size_t)get_global_id(1) * 2 * C;
    if (C - c0 >= PGN_COL_BLOCK)
        pgn_layernorm_params_block(r0, r1, C, c0, PGN_COL_BLOCK, x, stats, dy, pw);
    else
        pgn_layernorm_params_block(r0, r1, C, c0, C - c0, x, stats, dy, pw);
}

/* dw, db (either may be NULL) from the partials, a column a work-item (both families); global: C. */
__kernel void layernorm_params_finish(int chunks, int C, __global const float *partials, __global float *dw,
                                      __global float *db) {
    int c = get_global_id(0);
    if (c < C) pgn_layernorm_params_finish(chunks, C, c, partials, dw, db);
}

/* Work-item id -> (sequence b, head h, block): blocks vary fastest, so that a work-group holds
 * blocks of every causal length and the groups' costs even out. */
PGN_INLINE bool att_block_of(int rows, int T, int H, int *b, int *h, int *blk) {
    int blocks = (T + PGN_ATT_BLOCK - 1) / PGN_ATT_BLOCK, id = get_global_id(0);
    if (id >= rows / T * H * blocks) return false;
    *blk = id % blocks;
    *h = id / blocks % H;
    *b = id / blocks / H;
    return true;
}

/* Causal self-attention forward; global: B * H * ceil(T / PGN_ATT_BLOCK). */
__kernel void attention_forward(int rows, int T, int H, int C, __global const float *qkv,
                                __global float *att, __global float *y) {
    int b, h, qb;
    if (att_block_of(rows, T, H, &b, &h, &qb))
        pgn_attention_forward_block(T, H, C, b, h, qb, qkv, att, y);
}

/* The query at position t against the cache (pgn_attention_decode_head); global: H. */
__kernel void attention_decode(int t, int T, int H, int C, __global const float *cache, __global float *p,
                               __global float *y) {
    int h = get_global_id(0);
    if (h < H) pgn_attention_decode_head(t, T, H, C, h, cache, p + (size_t)h * T, y);
}

/* The backward's query blocks: score gradients into ds, dq; same range as the forward. */
__kernel void attention_backward_query(int rows, int T, int H, int C,
                                       __global const float *qkv, __global const float *att,
                                       __global const float *dy, __global float *ds,
                                       __global float *dqkv) {
    int b, h, qb;
    if (att_block_of(rows, T, H, &b, &h, &qb))
        pgn_attention_backward_query_block(T, H, C, b, h, qb, qkv, att, dy, ds, dqkv);
}

/* The backward's key blocks: dk and dv from every query's ds and p; queued after
 * attention_backward_query. Same range. */
__kernel void attention_backward_key(int rows, int T, int H, int C, __global const float *qkv,
                                     __global const float *att, __global const float *dy,
                                     __global const float *ds, __global float *dqkv) {
    int b, h, kb;
    if (att_block_of(rows, T, H, &b, &h, &kb))
        pgn_attention_backward_key_block(T, H, C, b, h, kb, qkv, att, dy, ds, dqkv);
}
