/* pgn_gpt.h: bodies of the transformer ops (token + position embedding, LayerNorm, causal
 * multi-head self-attention), shared by the host reference (engine/tensor/ops_gpt.c) and the
 * kernels (kernels/gpt.cl). One body, two callers: host and device give the same bits.
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

/* Columns [c0, c1) of dwte row v (C) = the sum of dy's rows r with tok[r] == v, r ascending,
 * from 0: the embedding's backward as a scatter-add that one owner of each element does in row
 * order (each element its own chain: how the columns are split changes no bit). (Scanning the
 * ids 16 at a time with vector compares measured no faster at V = 65, 2048 rows.) */
PGN_INLINE void pgn_embed_wte_grad_cols(int rows, int C, int v, int c0, int c1, PGN_GLOBAL const int *tok,
                                        PGN_GLOBAL const float *dy, PGN_GLOBAL float *dw_row) {
    for (int c = c0; c < c1; c++) dw_row[c] = 0.0f;
    for (int r = 0; r < rows; r++) {
        if (tok[r] != v) continue;
        PGN_GLOBAL const float *g = dy + (size_t)r * C;
        for (int c = c0; c < c1; c++) dw_row[c] = dw_row[c] + g[c];
    }
}

/* The whole of dwte row v. */
PGN_INLINE void pgn_embed_wte_grad_row(int rows, int C, int v, PGN_GLOBAL const int *tok,
                                       PGN_GLOBAL const float *dy, PGN_GLOBAL float *dw_row) {
    pgn_embed_wte_grad_cols(rows, C, v, 0, C, tok, dy, dw_row);
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
 * Each row's sums run in lane order (pgn_ops.h, PGN_LANES): the host and the cpu family's kernels
 * a row at a time, the lanes side by side; the gpu family's with PGN_LANES work-items a row
 * (kernels/tensor_gpu.cl), the same chains. The cpu family's work-item takes PGN_LN_ROWS rows. */
#define PGN_LN_ROWS 16

/* Row r of x (rows, C): mean = sum(x) / C, var = sum((x - mean)^2) / C (fma), rstd =
 * 1 / sqrt(var + eps), y = fma(xhat, w, b) with xhat = (x - mean) rstd; stats[2 r] = mean,
 * stats[2 r + 1] = rstd. */
PGN_INLINE void pgn_layernorm_forward_row(size_t r, int C, float eps, PGN_GLOBAL const float *x,
                                          PGN_GLOBAL const float *w, PGN_GLOBAL const float *b,
                                          PGN_GLOBAL float *y, PGN_GLOBAL float *stats) {
    PGN_GLOBAL const float *xr = x + r * C;
    float mean = pgn_lane_sum(C, xr, 0) / (float)C, p[PGN_LANES];
    for (int l = 0; l < PGN_LANES; l++) p[l] = 0.0f;
    int c = 0;
    for (; c + PGN_LANES <= C; c += PGN_LANES)
        for (int l = 0; l < PGN_LANES; l++) {
            float d = xr[c + l] - mean;
            p[l] = pgn_fma(d, d, p[l]);
        }
    for (int l = 0; c + l < C; l++) {
        float d = xr[c + l] - mean;
        p[l] = pgn_fma(d, d, p[l]);
    }
    float rstd = 1.0f / pgn_sqrt(pgn_lanes_fold(p) / (float)C + eps);
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
    PGN_GLOBAL float *yr = y + r * C;
    for (c = 0; c < C; c++) yr[c] = pgn_fma((xr[c] - mean) * rstd, w[c], b[c]);
}

/* Lane l's terms of row r's two backward sums from column c: dn = w dy, sdn += dn,
 * sdnx = fma(dn, xhat, sdnx). */
PGN_INLINE void pgn_layernorm_backward_terms(int c, PGN_GLOBAL const float *xr, PGN_GLOBAL const float *w,
                                             PGN_GLOBAL const float *dyr, float mean, float rstd, float *sdn,
                                             float *sdnx) {
    float xhat = (xr[c] - mean) * rstd, dn = w[c] * dyr[c];
    *sdn = *sdn + dn;
    *sdnx = pgn_fma(dn, xhat, *sdnx);
}

/* dx of row r with its sums mdn = sum(dn) / C and mdnx = sum(dn xhat) / C, as llm.c's
 * layernorm_backward: dx = (dnorm - mdn - xhat mdnx) rstd, columns c ≡ c0 (mod step); with add,
 * dx = dx + that (a gradient's second contribution, as adding it afterwards would). */
PGN_INLINE void pgn_layernorm_backward_dx(int C, int c0, int step, PGN_GLOBAL const float *xr,
                                          PGN_GLOBAL const float *w, PGN_GLOBAL const float *dyr, float mean,
                                          float rstd, float mdn, float mdnx, int add, PGN_GLOBAL float *dxr) {
    for (int c = c0; c < C; c += step) {
        float xhat = (xr[c] - mean) * rstd, dn = w[c] * dyr[c];
        float v = (dn - mdn - xhat * mdnx) * rstd;
        dxr[c] = add ? dxr[c] + v : v;
    }
}

/* dx of row r: the two sums in lane order, then pgn_layernorm_backward_dx. */
PGN_INLINE void pgn_layernorm_backward_row(size_t r, int C, PGN_GLOBAL const float *x, PGN_GLOBAL const float *w,
                                           PGN_GLOBAL const float *stats, PGN_GLOBAL const float *dy, int add,
                                           PGN_GLOBAL float *dx) {
    PGN_GLOBAL const float *xr = x + r * C, *dyr = dy + r * C;
    float mean = stats[2 * r], rstd = stats[2 * r + 1], sdn[PGN_LANES], sdnx[PGN_LANES];
    for (int l = 0; l < PGN_LANES; l++) sdn[l] = sdnx[l] = 0.0f;
    int c = 0;
    for (; c + PGN_LANES <= C; c += PGN_LANES)
        for (int l = 0; l < PGN_LANES; l++)
            pgn_layernorm_backward_terms(c + l, xr, w, dyr, mean, rstd, &sdn[l], &sdnx[l]);
    for (int l = 0; c + l < C; l++) pgn_layernorm_backward_terms(c + l, xr, w, dyr, mean, rstd, &sdn[l], &sdnx[l]);
    float mdn = pgn_lanes_fold(sdn) / (float)C, mdnx = pgn_lanes_fold(sdnx) / (float)C;
    pgn_layernorm_backward_dx(C, 0, 1, xr, w, dyr, mean, rstd, mdn, mdnx, add, dx + r * C);
}

/* dw = sum over rows of dy xhat (fma) and db = sum of dy are column sums, in their order (pgn_ops.h:
 * chunks of PGN_SUM_ROWS rows, each in row order, then the chunks in order). Partials (chunks, 2C):
 * a chunk's row holds its dw sums in [0, C) and its db sums in [C, 2C). This takes columns
 * [c0, c0 + w) (w <= PGN_COL_BLOCK) of rows [r0, r1) into pw[c] (dw) and pw[C + c] (db), pw the
 * chunk's row of the partials. */
PGN_INLINE void pgn_layernorm_params_block(int r0, int r1, int C, int c0, int w, PGN_GLOBAL const float *x,
                                           PGN_GLOBAL const float *stats, PGN_GLOBAL const float *dy,
                                           PGN_GLOBAL float *pw) {
    float aw[PGN_COL_BLOCK], ab[PGN_COL_BLOCK];
    for (int j = 0; j < PGN_COL_BLOCK; j++) aw[j] = ab[j] = 0.0f;
    for (int r = r0; r < r1; r++) {
        float mean = stats[2 * (size_t)r], rstd = stats[2 * (size_t)r + 1];
        size_t o = (size_t)r * C + c0;
        for (int j = 0; j < w; j++) {
            float g = dy[o + j];
            aw[j] = pgn_fma(g, (x[o + j] - mean) * rstd, aw[j]);
            ab[j] += g;
        }
    }
    for (int j = 0; j < w; j++) {
        pw[c0 + j] = aw[j];
        pw[C + c0 + j] = ab[j];
    }
}

/* Column c of dw and db (either may be absent: NULL) from the chunks' partials, in chunk order. */
PGN_INLINE void pgn_layernorm_params_finish(int chunks, int C, int c, PGN_GLOBAL const float *partials,
                                            PGN_GLOBAL float *dw, PGN_GLOBAL float *db) {
    if (dw) dw[c] = pgn_sum_partials(chunks, 2 * C, partials, c);
    if (db) db[c] = pgn_sum_partials(chunks, 2 * C, partials, C + c);
}

/* ---- causal multi-head self-attention ---------------------------------------------------------
 * A work-item owns PGN_ATT_BLOCK queries (forward, dq) or keys (dk, dv) of one sequence b and
 * head h, and works in tiles of PGN_ATT_BLOCK x PGN_ATT_BLOCK accumulators: rows are its queries
 * or keys, lanes are keys (scores, dp) or head dimensions (y, dq, dk, dv). Every accumulator is
 * one in-order fma chain, over d for a dot product and over the causal range for a weighted
 * sum, so the lanes vectorise with no change of bits and the host's scalar loops match them; the
 * softmax's sum and the backward's dot, sums over a row, run in lane order (pgn_ops.h).
 * Layouts (tensor.h): qkv row b T + t holds q, k, v of every head at columns h hd, C + h hd,
 * 2C + h hd; att and the score gradients are (b, h, t, u) row-major, zero for u > t. */
#define PGN_ATT_BLOCK 16

typedef float pgn_att_tile[PGN_ATT_BLOCK][PGN_ATT_BLOCK];

/* The gpu family's work-group takes a block of queries with their rows of scores (T floats each)
 * in local memory, at most PGN_ATT_LOCAL_FLOATS of them (32 KB of the 48 KB OpenCL devices
 * offer): PGN_ATT_BLOCK rows up to T = 512, 4 at the longest context (2048). */
#define PGN_ATT_LOCAL_FLOATS 8192
PGN_INLINE int pgn_att_group_rows(int T) {
    int r = PGN_ATT_LOCAL_FLOATS / T;
    return r < 1 ? 1 : r > PGN_ATT_BLOCK ? PGN_ATT_BLOCK : r;
}

/* 1 / sqrt(hd), the same expression on both sides. */
PGN_INLINE float pgn_att_scale(int hd) { return 1.0f / pgn_sqrt((float)hd); }

/* acc[i][j] = sum over d < n, in order, of a_i[d] b_j[d] with a_i at a + i a_rs (i < na) and
 * b_j at b + j b_rs (j < nb); lanes past na or nb repeat the last row and are not used. The n
 * strided loads of b's 16 rows serve 16 rows of a (as a GEMM's packed panel does). */
PGN_INLINE void pgn_att_dot_tile(int n, PGN_GLOBAL const float *a, int a_rs, int na,
                                 PGN_GLOBAL const float *b, int b_rs, int nb, pgn_att_tile acc) {
#ifdef __OPENCL_VERSION__
    /* The same chains in 16 float16 accumulators, the rows unrolled: the char-GPT's forward
     * took 1.29 ms with the portable loops, 1.09 ms so. */
    float16 t[PGN_ATT_BLOCK];
    PGN_GLOBAL const float *ai[PGN_ATT_BLOCK], *bj[PGN_ATT_BLOCK];
#pragma unroll
    for (int i = 0; i < PGN_ATT_BLOCK; i++) {
        t[i] = (float16)(0.0f);
        ai[i] = a + (size_t)(i < na ? i : na - 1) * a_rs;
        bj[i] = b + (size_t)(i < nb ? i : nb - 1) * b_rs;
    }
    for (int d = 0; d < n; d++) {
        float bd[PGN_ATT_BLOCK];
#pragma unroll
        for (int j = 0; j < PGN_ATT_BLOCK; j++) bd[j] = bj[j][d];
        float16 bv = vload16(0, bd);
#pragma unroll
        for (int i = 0; i < PGN_ATT_BLOCK; i++) t[i] = fma((float16)(ai[i][d]), bv, t[i]);
    }
#pragma unroll
    for (int i = 0; i < PGN_ATT_BLOCK; i++) vstore16(t[i], 0, acc[i]);
#else
    for (int i = 0; i < PGN_ATT_BLOCK; i++)
        for (int j = 0; j < PGN_ATT_BLOCK; j++) acc[i][j] = 0.0f;
    for (int d = 0; d < n; d++) {
        float bd[PGN_ATT_BLOCK];
        for (int j = 0; j < PGN_ATT_BLOCK; j++) bd[j] = b[(size_t)(j < nb ? j : nb - 1) * b_rs + d];
        for (int i = 0; i < PGN_ATT_BLOCK; i++) {
            float ad = a[(size_t)(i < na ? i : na - 1) * a_rs + d];
            for (int j = 0; j < PGN_ATT_BLOCK; j++) acc[i][j] = pgn_fma(ad, bd[j], acc[i][j]);
        }
    }
#endif
}

/* Stores the causal part (u <= t) of a dot tile times scale into rows t0 + i (i < nq) of a
 * (T, T) matrix whose block rows start at out: keys u0 + j. */
PGN_INLINE void pgn_att_store_causal(int t0, int nq, int u0, int T, pgn_att_tile acc,
                                     float scale, PGN_GLOBAL float *out) {
    for (int i = 0; i < nq; i++) {
        int nj = pgn_gpt_min(PGN_ATT_BLOCK, t0 + i - u0 + 1);
        for (int j = 0; j < nj; j++) out[(size_t)i * T + u0 + j] = acc[i][j] * scale;
    }
}

/* Columns [d0, d0 + nd) of the weighted sums of pgn_att_mix (nd <= PGN_ATT_BLOCK; inlined with
 * nd = PGN_ATT_BLOCK for whole chunks, so the lanes have a constant count). */
PGN_INLINE void pgn_att_mix_chunk(int keys, int first, int ni, int T, PGN_GLOBAL const float *w,
                                  int w_is, int w_ss, PGN_GLOBAL const float *m, int m_rs,
                                  int d0, int nd, PGN_GLOBAL float *out, int out_rs) {
#ifdef __OPENCL_VERSION__
    if (nd == PGN_ATT_BLOCK) {
        /* Whole chunks in 16 float16 accumulators, the rows unrolled, and without a test per
         * row: every row's range holds [c0, c1), which runs over all rows (rows past ni repeat
         * the last and are not stored); each row's own rest, a triangle, comes before it (keys)
         * or after it (queries), so every row still sums in ascending s. LLVM compiled the
         * portable loops a row at a time, each row one chain of dependent fmas: the char-GPT's
         * dk and dv took 1.12 ms so, 0.30 ms with the 16 chains side by side. */
        int c0 = keys ? first + ni - 1 : 0, c1 = keys ? T : first + 1;
        float16 a[PGN_ATT_BLOCK];
#pragma unroll
        for (int i = 0; i < PGN_ATT_BLOCK; i++) a[i] = (float16)(0.0f);
        if (keys) {
#pragma unroll
            for (int i = 0; i < PGN_ATT_BLOCK; i++)
                for (int s = first + i; s < c0; s++)
                    a[i] = fma((float16)(w[(size_t)i * w_is + (size_t)s * w_ss]),
                               vload16(0, m + (size_t)s * m_rs + d0), a[i]);
        }
        for (int s = c0; s < c1; s++) {
            float16 mv = vload16(0, m + (size_t)s * m_rs + d0);
            PGN_GLOBAL const float *ws = w + (size_t)s * w_ss;
#pragma unroll
            for (int i = 0; i < PGN_ATT_BLOCK; i++)
                a[i] = fma((float16)(ws[(size_t)(i < ni ? i : ni - 1) * w_is]), mv, a[i]);
        }
        if (!keys) {
#pragma unroll
            for (int i = 0; i < PGN_ATT_BLOCK; i++)
                for (int s = c1; i < ni && s <= first + i; s++)
                    a[i] = fma((float16)(w[(size_t)i * w_is + (size_t)s * w_ss]),
                               vload16(0, m + (size_t)s * m_rs + d0), a[i]);
        }
        for (int i = 0; i < ni; i++) vstore16(a[i], 0, out + (size_t)i * out_rs + d0);
        return;
    }
#endif
    pgn_att_tile acc;
    for (int i = 0; i < PGN_ATT_BLOCK; i++)
        for (int j = 0; j < PGN_ATT_BLOCK; j++) acc[i][j] = 0.0f;
    int s0 = keys ? first : 0, s1 = keys ? T : first + ni;
    for (int s = s0; s < s1; s++) {
        PGN_GLOBAL const float *ms = m + (size_t)s * m_rs + d0;
        float mv[PGN_ATT_BLOCK];
        for (int j = 0; j < nd; j++) mv[j] = ms[j];
        for (int i = 0; i < PGN_ATT_BLOCK; i++) {
            if (i >= ni || (keys ? s < first + i : s > first + i)) continue;
            float wv = w[(size_t)i * w_is + (size_t)s * w_ss];
            for (int j = 0; j < nd; j++) acc[i][j] = pgn_fma(wv, mv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nd; j++) out[(size_t)i * out_rs + d0 + j] = acc[i][j];
}

/* out row i (i < ni, hd columns, row stride out_rs) = the sum over s ascending of
 * w_i(s) m_s, w_i(s) = w[i w_is + s w_ss], m_s the hd floats at m + s m_rs, s over row i's
 * causal range: for queries (keys == 0, row i is query first + i) s in [0, first + i]; for keys
 * (row i is key first + i) s in [first + i, T). */
PGN_INLINE void pgn_att_mix(int keys, int first, int ni, int T, PGN_GLOBAL const float *w,
                            int w_is, int w_ss, PGN_GLOBAL const float *m, int m_rs, int hd,
                            PGN_GLOBAL float *out, int out_rs) {
    for (int d0 = 0; d0 < hd; d0 += PGN_ATT_BLOCK) {
        if (hd - d0 >= PGN_ATT_BLOCK)
            pgn_att_mix_chunk(keys, first, ni, T, w, w_is, w_ss, m, m_rs, d0, PGN_ATT_BLOCK, out,
                              out_rs);
        else
            pgn_att_mix_chunk(keys, first, ni, T, w, w_is, w_ss, m, m_rs, d0, hd - d0, out,
                              out_rs);
    }
}

/* Softmax in place of rows t = t0 + i (i < n) of one (b, h)'s att, which hold the scaled
 * scores for u <= t (p points at row t0): max over u <= t, e = exp(s - max), their sum in lane
 * order, p = e / sum; zero for u > t. A max of numbers is the same in any order, so it runs in 16
 * lanes. */
PGN_INLINE void pgn_att_softmax_rows(int t0, int n, int T, PGN_GLOBAL float *p) {
    for (int i = 0; i < n; i++) {
        PGN_GLOBAL float *row = p + (size_t)i * T;
        int nu = t0 + i + 1, u = 0;
        float m[PGN_ATT_BLOCK];
        for (int j = 0; j < PGN_ATT_BLOCK; j++) m[j] = row[0];
        for (; u + PGN_ATT_BLOCK <= nu; u += PGN_ATT_BLOCK)
            for (int j = 0; j < PGN_ATT_BLOCK; j++) m[j] = row[u + j] > m[j] ? row[u + j] : m[j];
        for (; u < nu; u++) m[0] = row[u] > m[0] ? row[u] : m[0];
        float mx = m[0];
        for (int j = 1; j < PGN_ATT_BLOCK; j++) mx = m[j] > mx ? m[j] : mx;
        for (u = 0; u < nu; u++) row[u] = pgn_expf(row[u] - mx);
        float sum = pgn_lane_sum(nu, row, 0);
        for (u = 0; u < nu; u++) row[u] = row[u] / sum;
        for (u = nu; u < T; u++) row[u] = 0.0f;
    }
}

/* Queries [qb B, qb B + B) of sequence b, head h (B = PGN_ATT_BLOCK): s[u] = (q_t . k_u) scale,
 * p = softmax over u <= t into att, y_t = sum over u <= t of p[u] v_u. */
PGN_INLINE void pgn_attention_forward_block(int T, int H, int C, int b, int h, int qb,
                                            PGN_GLOBAL const float *qkv, PGN_GLOBAL float *att,
                                            PGN_GLOBAL float *y) {
    int hd = C / H, C3 = 3 * C, t0 = qb * PGN_ATT_BLOCK, nq = pgn_gpt_min(PGN_ATT_BLOCK, T - t0);
    float scale = pgn_att_scale(hd);
    PGN_GLOBAL const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hd;
    PGN_GLOBAL float *p = att + (((size_t)b * H + h) * T + t0) * T;
    pgn_att_tile acc;
    for (int u0 = 0; u0 < t0 + nq; u0 += PGN_ATT_BLOCK) {
        pgn_att_dot_tile(hd, q + (size_t)t0 * C3, C3, nq, q + C + (size_t)u0 * C3, C3,
                         pgn_gpt_min(PGN_ATT_BLOCK, T - u0), acc);
        pgn_att_store_causal(t0, nq, u0, T, acc, scale, p);
    }
    pgn_att_softmax_rows(t0, nq, T, p);
    pgn_att_mix(0, t0, nq, T, p, T, 1, q + 2 * C, C3, hd,
                y + ((size_t)b * T + t0) * C + (size_t)h * hd, C);
}

/* One new query against a cache, for decoding a sequence a token at a time: head h of the query
 * at position t of cache (P, 3C) rows laid out as qkv (rows 0..t hold q, k, v of the positions so
 * far), its probabilities into row (T columns) and its output into y (C, the heads side by side).
 * The same dot, softmax and mix chains as row t of pgn_attention_forward_block, so the bits are
 * those of the whole sequence's forward. */
PGN_INLINE void pgn_attention_decode_head(int t, int T, int H, int C, int h, PGN_GLOBAL const float *cache,
                                          PGN_GLOBAL float *row, PGN_GLOBAL float *y) {
    int hd = C / H, C3 = 3 * C;
    float scale = pgn_att_scale(hd);
    PGN_GLOBAL const float *q = cache + (size_t)h * hd;
    pgn_att_tile acc;
    for (int u0 = 0; u0 <= t; u0 += PGN_ATT_BLOCK) {
        pgn_att_dot_tile(hd, q + (size_t)t * C3, C3, 1, q + C + (size_t)u0 * C3, C3,
                         pgn_gpt_min(PGN_ATT_BLOCK, t - u0 + 1), acc);
        pgn_att_store_causal(t, 1, u0, T, acc, scale, row);
    }
    pgn_att_softmax_rows(t, 1, T, row);
    pgn_att_mix(0, t, 1, T, row, T, 1, q + 2 * C, C3, hd, y + (size_t)h * hd, C);
}

/* The backward's first half, per query block: dp[u] = dy_t . v_u, dot = sum over u of
 * p[u] dp[u] (fma, lane order), g[u] = (p[u] (dp[u] - dot)) scale into ds (zero for u > t),
 * dq_t = sum over u <= t of g[u] k_u. */
PGN_INLINE void pgn_attention_backward_query_block(int T, int H, int C, int b, int h, int qb,
                                                   PGN_GLOBAL const float *qkv,
                                                   PGN_GLOBAL const float *att,
                                                   PGN_GLOBAL const float *dy,
                                                   PGN_GLOBAL float *ds, PGN_GLOBAL float *dqkv) {
    int hd = C / H, C3 = 3 * C, t0 = qb * PGN_ATT_BLOCK, nq = pgn_gpt_min(PGN_ATT_BLOCK, T - t0);
    float scale = pgn_att_scale(hd);
    PGN_GLOBAL const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hd;
    PGN_GLOBAL const float *dyb = dy + (size_t)b * T * C + (size_t)h * hd;
    size_t rows0 = (((size_t)b * H + h) * T + t0) * T;
    PGN_GLOBAL const float *p = att + rows0;
    PGN_GLOBAL float *g = ds + rows0;
    pgn_att_tile acc;
    for (int u0 = 0; u0 < t0 + nq; u0 += PGN_ATT_BLOCK) {
        pgn_att_dot_tile(hd, dyb + (size_t)t0 * C, C, nq, q + 2 * C + (size_t)u0 * C3, C3,
                         pgn_gpt_min(PGN_ATT_BLOCK, T - u0), acc);
        pgn_att_store_causal(t0, nq, u0, T, acc, 1.0f, g);
    }
    for (int i = 0; i < nq; i++) {
        size_t o = (size_t)i * T;
        float dot = pgn_lane_sum(t0 + i + 1, p + o, g + o);
        for (int u = 0; u <= t0 + i; u++) g[o + u] = (p[o + u] * (g[o + u] - dot)) * scale;
        for (int u = t0 + i + 1; u < T; u++) g[o + u] = 0.0f;
    }
    pgn_att_mix(0, t0, nq, T, g, T, 1, q + C, C3, hd,
                dqkv + ((size_t)b * T + t0) * C3 + (size_t)h * hd, C3);
}

/* The backward's second half, per key block (after every query block's ds is written):
 * dk_u = sum over t >= u of g_t[u] q_t, dv_u = sum over t >= u of p_t[u] dy_t. */
PGN_INLINE void pgn_attention_backward_key_block(int T, int H, int C, int b, int h, int kb,
                                                 PGN_GLOBAL const float *qkv,
                                                 PGN_GLOBAL const float *att,
                                                 PGN_GLOBAL const float *dy,
                                                 PGN_GLOBAL const float *ds,
                                                 PGN_GLOBAL float *dqkv) {
    int hd = C / H, C3 = 3 * C, u0 = kb * PGN_ATT_BLOCK, nk = pgn_gpt_min(PGN_ATT_BLOCK, T - u0);
    PGN_GLOBAL const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hd;
    PGN_GLOBAL const float *dyb = dy + (size_t)b * T * C + (size_t)h * hd;
    size_t col0 = ((size_t)b * H + h) * T * T + u0;
    PGN_GLOBAL float *out = dqkv + ((size_t)b * T + u0) * C3 + (size_t)h * hd;
    pgn_att_mix(1, u0, nk, T, ds + col0, 1, T, q, C3, hd, out + C, C3);
    pgn_att_mix(1, u0, nk, T, att + col0, 1, T, dyb, C, hd, out + 2 * C, C3);
}

/* ---- the backward's key half a key at a time (the gpu family: kernels/gpt_gpu.cl) -----------------
 * The same chains as pgn_attention_backward_key_block's rows, for one key a work-item. test_ops_gpt
 * checks the bits against the host's blocks. */

/* The backward's key half for key u alone (row u of pgn_attention_backward_key_block), after
 * every query's ds: dk_u and dv_u, chains over t >= u ascending. */
PGN_INLINE void pgn_attention_backward_key(int T, int H, int C, int b, int h, int u, PGN_GLOBAL const float *qkv,
                                           PGN_GLOBAL const float *att, PGN_GLOBAL const float *dy,
                                           PGN_GLOBAL const float *ds, PGN_GLOBAL float *dqkv) {
    int hd = C / H, C3 = 3 * C;
    PGN_GLOBAL const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hd;
    PGN_GLOBAL const float *dyb = dy + (size_t)b * T * C + (size_t)h * hd;
    size_t col = ((size_t)b * H + h) * T * T + u;
    PGN_GLOBAL float *out = dqkv + ((size_t)b * T + u) * C3 + (size_t)h * hd;
    for (int d = 0; d < hd; d++) {
        float dk = 0.0f, dv = 0.0f;
        for (int t = u; t < T; t++) {
            dk = pgn_fma(ds[col + (size_t)t * T], q[(size_t)t * C3 + d], dk);
            dv = pgn_fma(att[col + (size_t)t * T], dyb[(size_t)t * C + d], dv);
        }
        out[C + d] = dk;
        out[2 * C + d] = dv;
    }
}

#endif
