/* gpt_gpu.cl: the gpu family's attention (docs/architecture.md, "Device profiles"). The cpu
 * family's kernels give a work-item a block of 16 queries or keys, so that pocl's one thread per
 * work-group runs 16 chains side by side; a GPU given those blocks runs B H T / 16 threads. Here
 * a work-group of PGN_GPU_GROUP takes a block of queries of one (sequence, head) with their rows
 * of scores in local memory (forward, the backward's query half), and a work-item takes one key
 * (the key half). Every score, sum and output is the chain the host's blocks compute (pgn_gpt.h),
 * so the bits are the host's. The launchers are in engine/tensor/ops_gpt.c. */

/* The (sequence b, head h) and first query t0 of this work-group's block of nq queries
 * (pgn_att_group_rows(T) a block), blocks fastest. */
PGN_INLINE void att_block_of_group(int T, int H, int *b, int *h, int *t0, int *nq) {
    int qb = pgn_att_group_rows(T), blocks = (T + qb - 1) / qb, g = get_group_id(0);
    *t0 = g % blocks * qb;
    *nq = min(qb, T - *t0);
    *h = g / blocks % H;
    *b = g / blocks / H;
}

/* S (nq rows of T in local memory) = the dot products, each a chain over d in order from zero
 * (pgn_att_dot_tile's), of rows a_i = a + (t0 + i) a_rs (i < nq) with b_u = b + u b_rs for the
 * causal pairs u <= t0 + i, times scale. A work-item takes keys u ≡ lid (mod PGN_GPU_GROUP) and
 * all the block's rows: each b_u[d] read once serves PGN_ATT_BLOCK chains. */
static inline void att_scores_local(int t0, int nq, int T, int hd, __global const float *a, int a_rs,
                                    __global const float *b, int b_rs, float scale, __local float *S) {
    __global const float *ai[PGN_ATT_BLOCK];
#pragma unroll
    for (int i = 0; i < PGN_ATT_BLOCK; i++) ai[i] = a + (size_t)(t0 + (i < nq ? i : nq - 1)) * a_rs;
    for (int u = get_local_id(0); u < t0 + nq; u += PGN_GPU_GROUP) {
        __global const float *bu = b + (size_t)u * b_rs;
        float acc[PGN_ATT_BLOCK];
#pragma unroll
        for (int i = 0; i < PGN_ATT_BLOCK; i++) acc[i] = 0.0f;
        for (int d = 0; d < hd; d++) {
            float bd = bu[d];
#pragma unroll
            for (int i = 0; i < PGN_ATT_BLOCK; i++) acc[i] = fma(ai[i][d], bd, acc[i]);
        }
#pragma unroll
        for (int i = 0; i < PGN_ATT_BLOCK; i++)
            if (i < nq && u <= t0 + i) S[i * T + u] = acc[i] * scale;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* out row i (i < nq; element d at out + i out_rs + d) = the sum over u <= t0 + i ascending of
 * S[i][u] m_u[d] (fma from zero; m_u = m + u m_rs): pgn_att_mix's chains, an output a work-item
 * in turn, neighbouring work-items on neighbouring d. */
static inline void att_mix_local(int t0, int nq, int T, int hd, __local const float *S, __global const float *m,
                                 int m_rs, __global float *out, int out_rs) {
    for (int k = get_local_id(0); k < nq * hd; k += PGN_GPU_GROUP) {
        int i = k / hd, d = k % hd;
        float acc = 0.0f;
        for (int u = 0; u <= t0 + i; u++) acc = fma(S[i * T + u], m[(size_t)u * m_rs + d], acc);
        out[(size_t)i * out_rs + d] = acc;
    }
}

/* Rows t0 .. t0 + nq - 1 of a (T, T) matrix at rows (row t0 first) = S, zero past the diagonal. */
static inline void att_store_rows(int t0, int nq, int T, __local const float *S, __global float *rows) {
    for (int i = 0; i < nq; i++)
        for (int u = get_local_id(0); u < T; u += PGN_GPU_GROUP) rows[(size_t)i * T + u] = u <= t0 + i ? S[i * T + u] : 0.0f;
}

/* Causal self-attention forward (pgn_attention_forward_block's bits) of a block of queries a
 * work-group: scores into S, each row's softmax by PGN_LANES work-items (max, exp, the sum in
 * lane order), att's rows, then y. S: pgn_att_group_rows(T) rows of T floats.
 * global: B H ceil(T / pgn_att_group_rows(T)) groups of PGN_GPU_GROUP. */
__kernel void attention_forward_gpu(int rows, int T, int H, int C, __global const float *qkv, __global float *att,
                                    __global float *y, __local float *S) {
    __local float part[PGN_GPU_GROUP];
    int b, h, t0, nq, hd = C / H, C3 = 3 * C, lid = get_local_id(0), l = lid % PGN_LANES;
    att_block_of_group(T, H, &b, &h, &t0, &nq);
    __global const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hd;
    att_scores_local(t0, nq, T, hd, q, C3, q + C, C3, pgn_att_scale(hd), S);
    __local float *p = part + lid - l;
    for (int i0 = 0; i0 < nq; i0 += PGN_GPU_GROUP / PGN_LANES) {
        /* lanes of a row past nq touch no row but fold with the others (every barrier is met) */
        int i = i0 + lid / PGN_LANES, nu = i < nq ? t0 + i + 1 : 0;
        __local float *row = S + (i < nq ? i : 0) * T;
        float m = nu ? row[0] : 0.0f;
        for (int u = l; u < nu; u += PGN_LANES) m = row[u] > m ? row[u] : m;
        float mx = fold_lanes(p, l, m, true), acc = 0.0f;
        for (int u = l; u < nu; u += PGN_LANES) {
            row[u] = pgn_expf(row[u] - mx);
            acc = acc + row[u];
        }
        float sum = fold_lanes(p, l, acc, false);
        for (int u = l; u < nu; u += PGN_LANES) row[u] = row[u] / sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    att_store_rows(t0, nq, T, S, att + (((size_t)b * H + h) * T + t0) * T);
    att_mix_local(t0, nq, T, hd, S, q + 2 * C, C3, y + ((size_t)b * T + t0) * C + (size_t)h * hd, C);
}

/* The backward's query half (pgn_attention_backward_query_block's bits) of a block of queries a
 * work-group: dp = dy_t . v_u into G, each row's dot (lane order) by PGN_LANES work-items, the
 * score gradients g into G and ds, then dq. G: pgn_att_group_rows(T) rows of T floats. */
__kernel void attention_backward_query_gpu(int rows, int T, int H, int C, __global const float *qkv,
                                           __global const float *att, __global const float *dy, __global float *ds,
                                           __global float *dqkv, __local float *G) {
    __local float part[PGN_GPU_GROUP];
    int b, h, t0, nq, hd = C / H, C3 = 3 * C, lid = get_local_id(0), l = lid % PGN_LANES;
    att_block_of_group(T, H, &b, &h, &t0, &nq);
    float scale = pgn_att_scale(hd);
    __global const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hd;
    size_t rows0 = (((size_t)b * H + h) * T + t0) * T;
    att_scores_local(t0, nq, T, hd, dy + (size_t)b * T * C + (size_t)h * hd, C, q + 2 * C, C3, 1.0f, G);
    __local float *p = part + lid - l;
    for (int i0 = 0; i0 < nq; i0 += PGN_GPU_GROUP / PGN_LANES) {
        int i = i0 + lid / PGN_LANES, nu = i < nq ? t0 + i + 1 : 0; /* as in the forward */
        __local float *g = G + (i < nq ? i : 0) * T;
        __global const float *pr = att + rows0 + (size_t)(i < nq ? i : 0) * T;
        float acc = 0.0f;
        for (int u = l; u < nu; u += PGN_LANES) acc = fma(pr[u], g[u], acc);
        float dot = fold_lanes(p, l, acc, false);
        for (int u = l; u < nu; u += PGN_LANES) g[u] = (pr[u] * (g[u] - dot)) * scale;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    att_store_rows(t0, nq, T, G, ds + rows0);
    att_mix_local(t0, nq, T, hd, G, q + C, C3, dqkv + ((size_t)b * T + t0) * C3 + (size_t)h * hd, C3);
}

/* Work-item id -> (sequence b, head h, key u), keys fastest. */
PGN_INLINE bool att_row_of(int rows, int T, int H, int *b, int *h, int *u) {
    int id = get_global_id(0);
    if (id >= rows * H) return false;
    *u = id % T;
    *h = id / T % H;
    *b = id / T / H;
    return true;
}

/* The backward's key half, a key a work-item, queued after the query half: dk and dv
 * (pgn_attention_backward_key). global: B H T (rounded up to the group). */
__kernel void attention_backward_key_gpu(int rows, int T, int H, int C, __global const float *qkv,
                                         __global const float *att, __global const float *dy, __global const float *ds,
                                         __global float *dqkv) {
    int b, h, u;
    if (att_row_of(rows, T, H, &b, &h, &u)) pgn_attention_backward_key(T, H, C, b, h, u, qkv, att, dy, ds, dqkv);
}
