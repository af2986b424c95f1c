/* pgn_gpt.h: bodies of the transformer ops (token + position embedding, LayerNorm), shared by
 * the host reference (engine/tensor/ops_gpt.c) and the kernels (kernels/gpt.cl). One body, two
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

/* ---- LayerNorm ------------------------------------------------------------------------------
 * Each row's sums are one in-order chain over the columns: one row alone waits on the adder's
 * latency at every column. A block of PGN_LN_ROWS rows runs its rows' chains side by side
 * (rows as lanes); lanes past the last row repeat it and are not stored. The char-GPT's
 * forward (2048 x 128) took 0.16 ms a row at a time, 0.08 ms so. */
#define PGN_LN_ROWS 16

/* Rows [r0, r0 + n) (n <= PGN_LN_ROWS) of x (rows, C): mean = sum(x) / C, var =
 * sum((x - mean)^2) / C (fma), rstd = 1 / sqrt(var + eps), y = fma(xhat, w, b) with
 * xhat = (x - mean) rstd; stats[2 r] = mean, stats[2 r + 1] = rstd. */
PGN_INLINE void pgn_layernorm_forward_rows(int r0, int n, int C, float eps,
                                           PGN_GLOBAL const float *x, PGN_GLOBAL const float *w,
                                           PGN_GLOBAL const float *b, PGN_GLOBAL float *y,
                                           PGN_GLOBAL float *stats) {
    PGN_GLOBAL const float *xb = x + (size_t)r0 * C;
    float mean[PGN_LN_ROWS], var[PGN_LN_ROWS];
    for (int i = 0; i < PGN_LN_ROWS; i++) mean[i] = var[i] = 0.0f;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < PGN_LN_ROWS; i++) mean[i] += xb[(size_t)(i < n ? i : n - 1) * C + c];
    for (int i = 0; i < PGN_LN_ROWS; i++) mean[i] = mean[i] / (float)C;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < PGN_LN_ROWS; i++) {
            float d = xb[(size_t)(i < n ? i : n - 1) * C + c] - mean[i];
            var[i] = pgn_fma(d, d, var[i]);
        }
    for (int i = 0; i < n; i++) {
        float rstd = 1.0f / pgn_sqrt(var[i] / (float)C + eps);
        stats[2 * ((size_t)r0 + i)] = mean[i];
        stats[2 * ((size_t)r0 + i) + 1] = rstd;
        PGN_GLOBAL const float *xr = xb + (size_t)i * C;
        PGN_GLOBAL float *yr = y + ((size_t)r0 + i) * C;
        for (int c = 0; c < C; c++) yr[c] = pgn_fma((xr[c] - mean[i]) * rstd, w[c], b[c]);
    }
}

/* dx for rows [r0, r0 + n), as llm.c's layernorm_backward: dnorm = w dy,
 * dx = (dnorm - mean(dnorm) - xhat mean(dnorm xhat)) rstd, both means in-order column sums
 * (the second with fma) divided by C. */
PGN_INLINE void pgn_layernorm_backward_rows(int r0, int n, int C, PGN_GLOBAL const float *x,
                                            PGN_GLOBAL const float *w,
                                            PGN_GLOBAL const float *stats,
                                            PGN_GLOBAL const float *dy, PGN_GLOBAL float *dx) {
    float mean[PGN_LN_ROWS], rstd[PGN_LN_ROWS], sdn[PGN_LN_ROWS], sdnx[PGN_LN_ROWS];
    for (int i = 0; i < PGN_LN_ROWS; i++) {
        size_t r = (size_t)r0 + (i < n ? i : n - 1);
        mean[i] = stats[2 * r];
        rstd[i] = stats[2 * r + 1];
        sdn[i] = sdnx[i] = 0.0f;
    }
    for (int c = 0; c < C; c++)
        for (int i = 0; i < PGN_LN_ROWS; i++) {
            size_t o = ((size_t)r0 + (i < n ? i : n - 1)) * C + c;
            float xhat = (x[o] - mean[i]) * rstd[i];
            float dn = w[c] * dy[o];
            sdn[i] += dn;
            sdnx[i] = pgn_fma(dn, xhat, sdnx[i]);
        }
    for (int i = 0; i < n; i++) {
        float mdn = sdn[i] / (float)C, mdnx = sdnx[i] / (float)C;
        size_t o = ((size_t)r0 + i) * C;
        for (int c = 0; c < C; c++) {
            float xhat = (x[o + c] - mean[i]) * rstd[i];
            float dn = w[c] * dy[o + c];
            dx[o + c] = (dn - mdn - xhat * mdnx) * rstd[i];
        }
    }
}

/* Columns [c0, c0 + w) (w <= PGN_COL_BLOCK) of dw = sum over rows (ascending, fma) of
 * dy xhat and db = sum of dy; either output may be absent (NULL). */
PGN_INLINE void pgn_layernorm_params_block(int rows, int C, int c0, int w,
                                           PGN_GLOBAL const float *x,
                                           PGN_GLOBAL const float *stats,
                                           PGN_GLOBAL const float *dy, PGN_GLOBAL float *dw,
                                           PGN_GLOBAL float *db) {
    float aw[PGN_COL_BLOCK], ab[PGN_COL_BLOCK];
    for (int j = 0; j < PGN_COL_BLOCK; j++) aw[j] = ab[j] = 0.0f;
    for (int r = 0; r < rows; r++) {
        float mean = stats[2 * (size_t)r], rstd = stats[2 * (size_t)r + 1];
        size_t o = (size_t)r * C + c0;
        for (int j = 0; j < w; j++) {
            float g = dy[o + j];
            aw[j] = pgn_fma(g, (x[o + j] - mean) * rstd, aw[j]);
            ab[j] += g;
        }
    }
    for (int j = 0; j < w; j++) {
        if (dw) dw[c0 + j] = aw[j];
        if (db) db[c0 + j] = ab[j];
    }
}

#endif
