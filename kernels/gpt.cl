/* gpt.cl: OpenCL kernels of the transformer ops (the embedding so far).
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
