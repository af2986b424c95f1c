/* pgn_gpt.h: bodies of the transformer ops (token + position embedding so far), shared by the
 * host reference (engine/tensor/ops_gpt.c) and the kernels (kernels/gpt.cl). One body, two
 * callers: host and device give the same bits.
 * Requires pgn_math.h and pgn_ops.h (PGN_GLOBAL, PGN_COL_BLOCK) first. */
#ifndef PGN_GPT_H
#define PGN_GPT_H

PGN_INLINE int pgn_gpt_min(int a, int b) { return a < b ? a : b; }

/* ---- embedding: y[r] = wte[tok[r]] + wpe[r % T] ------------------------------------------- */

/* One row of the embedding. An id outside [0, V) gives a row of NaN: the host refuses such ids
 * before it gets here, a device cannot, and must neither read out of bounds nor train on a
 * silently wrong row. */
PGN_INLINE void pgn_embed_row(int C, int V, int v, PGN_GLOBAL const float *wte,
                              PGN_GLOBAL const float *wpe_row, PGN_GLOBAL float *y_row) {
    if (v < 0 || v >= V) {
        for (int c = 0; c < C; c++) y_row[c] = PGN_NAN;
        return;
    }
    PGN_GLOBAL const float *e = wte + (size_t)v * C;
    for (int c = 0; c < C; c++) y_row[c] = e[c] + wpe_row[c];
}

/* dwte row v (C) = the sum of dy's rows r with tok[r] == v, r ascending, from 0: the
 * embedding's backward as a scatter-add that one owner of each row does in row order. (Scanning
 * the ids 16 at a time with vector compares measured no faster at V = 65, 2048 rows.) */
PGN_INLINE void pgn_embed_wte_grad_row(int rows, int C, int v, PGN_GLOBAL const int *tok,
                                       PGN_GLOBAL const float *dy, PGN_GLOBAL float *dw_row) {
    for (int c = 0; c < C; c++) dw_row[c] = 0.0f;
    for (int r = 0; r < rows; r++) {
        if (tok[r] != v) continue;
        PGN_GLOBAL const float *g = dy + (size_t)r * C;
        for (int c = 0; c < C; c++) dw_row[c] = dw_row[c] + g[c];
    }
}

/* Columns [c0, c0 + w) (w <= PGN_COL_BLOCK) of dwpe row t: the sum over b ascending of
 * dy[b T + t] for t < T, zero for t >= T. Called with w = PGN_COL_BLOCK for whole blocks, so
 * the inner loop has a constant trip count and vectorises. */
PGN_INLINE void pgn_embed_wpe_grad_block(int rows, int T, int C, int t, int c0, int w,
                                         PGN_GLOBAL const float *dy, PGN_GLOBAL float *dwpe) {
    float acc[PGN_COL_BLOCK];
    for (int j = 0; j < PGN_COL_BLOCK; j++) acc[j] = 0.0f;
    if (t < T)
        for (int r = t; r < rows; r += T) {
            PGN_GLOBAL const float *g = dy + (size_t)r * C + c0;
            for (int j = 0; j < w; j++) acc[j] += g[j];
        }
    for (int j = 0; j < w; j++) dwpe[(size_t)t * C + c0 + j] = acc[j];
}

#endif
