/* gemm.cl: SGEMM kernels: packing op(B) (and transposed A) into zero-padded panels, and the
 * register-tiled product. pgn_math.h, pgn_ops.h and pgn_gemm.h are prepended when the program is built; the
 * launchers and the choice of what to pack live in engine/tensor/gemm.c. Every output is one in-order
 * fma chain over k from 0 (each vector lane is its own chain), bit-exact with the host. */

/* The tile and pack sizes (GEMM_MR, GEMM_NR, GEMM_NV, GEMM_PACK_KC, GEMM_PACK_AR) are in
 * kernels/pgn_gemm.h, which engine/tensor/gemm.c includes too. */

PGN_INLINE int gemm_ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Transposition of a 16 x 16 block held as 16 float16 rows r[0..15], by swapping the
 * off-diagonal d x d sub-blocks of every 2d x 2d block for d = 1, 2, 4, 8: rows i and i+d (i with
 * bit d clear) exchange, lane by lane, r[i][j+d] and r[i+d][j] (j with bit d clear). Constant
 * shuffles only: gathers and scatters are slow on this CPU. An element-by-element transposing
 * pack of a 256 x 256 B took about 50 µs; this one, launch included, under 7 µs. */
/* No variadic macros (OpenCL C forbids them; NVIDIA's compiler refuses them): a stage names its
 * masks by suffix, GEMM_SHUF takes one by name, and the lane list expands inside it. */
#if defined(__clang__) && defined(__has_builtin) && !defined(PGN_OCLGRIND)
#if __has_builtin(__builtin_shufflevector)
#define GEMM_SHUF(x, y, mask) __builtin_shufflevector((x), (y), mask)
#endif
#endif
#ifndef GEMM_SHUF /* Oclgrind 21.10 takes lane index 11 of a shufflevector for an undefined lane and
                   * reports the result as uninitialised; its shuffle2 is exact (engine/device.c:
                   * PGN_OCLGRIND) */
#define GEMM_SHUF(x, y, mask) shuffle2((x), (y), (uint16)(mask))
#endif
#define GEMM_T1_LO 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define GEMM_T1_HI 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#define GEMM_T2_LO 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define GEMM_T2_HI 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define GEMM_T4_LO 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define GEMM_T4_HI 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define GEMM_T8_LO 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define GEMM_T8_HI 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define GEMM_TSTAGE(d, T)                                                                       \
    _Pragma("unroll") for (int i = 0; i < 16; i++) {                                            \
        if (i & (d)) continue;                                                                  \
        float16 x = r[i], y = r[i + (d)];                                                       \
        r[i] = GEMM_SHUF(x, y, GEMM_##T##_LO);                                                  \
        r[i + (d)] = GEMM_SHUF(x, y, GEMM_##T##_HI);                                            \
    }

PGN_INLINE void gemm_transpose16(float16 *r) {
    GEMM_TSTAGE(1, T1)
    GEMM_TSTAGE(2, T2)
    GEMM_TSTAGE(4, T4)
    GEMM_TSTAGE(8, T8)
}

/* One k-chunk [k0, k1) of panel p of op(B) (K,N) into dst (K, GEMM_NR), columns past N zero.
 * op(B)(k,j) = b[k*b_rs + j*b_cs] with b_cs == 1 (B as stored) or b_rs == 1 (stored (N,K)). */
PGN_INLINE void gemm_pack_b_chunk(int K, int N, __global const float *b, int b_rs, int b_cs,
                                  int p, int k0, int k1, __global float *dst) {
    int j0 = p * GEMM_NR;
    int cols = min(GEMM_NR, N - j0);
    dst += (size_t)p * K * GEMM_NR;
    if (b_cs == 1) {
        for (int k = k0; k < k1; k++) {
            __global const float *row = b + (size_t)k * b_rs + j0;
            __global float *out = dst + (size_t)k * GEMM_NR;
            if (cols == GEMM_NR) {
#pragma unroll
                for (int v = 0; v < GEMM_NV; v++) vstore16(vload16(v, row), v, out);
            } else {
                for (int jj = 0; jj < GEMM_NR; jj++) out[jj] = jj < cols ? row[jj] : 0.0f;
            }
        }
        return;
    }
    /* Transposed: column jj of op(B) is contiguous; move 16 x 16 blocks through registers. */
    int k = k0;
    for (; k + 16 <= k1; k += 16) {
#pragma unroll
        for (int h = 0; h < GEMM_NV; h++) {
            float16 r[16];
#pragma unroll
            for (int l = 0; l < 16; l++) {
                int jj = h * 16 + l;
                r[l] = jj < cols ? vload16(0, b + (size_t)(j0 + jj) * b_cs + k) : (float16)(0.0f);
            }
            gemm_transpose16(r);
#pragma unroll
            for (int l = 0; l < 16; l++)
                vstore16(r[l], 0, dst + (size_t)(k + l) * GEMM_NR + h * 16);
        }
    }
    for (; k < k1; k++)
        for (int jj = 0; jj < GEMM_NR; jj++)
            dst[(size_t)k * GEMM_NR + jj] = jj < cols ? b[(size_t)(j0 + jj) * b_cs + k] : 0.0f;
}

/* One k-chunk of op(A) (M,K), stored transposed (K,M), rows [q0*GEMM_MR, +GEMM_PACK_AR), into
 * its GEMM_MR-row panels at dst (panels, K, GEMM_MR), rows past M zero: the tile then reads
 * GEMM_MR contiguous floats per k instead of a cache line (at M = 1024, a page) per k. */
PGN_INLINE void gemm_pack_a_chunk(int M, int K, __global const float *a, int q0, int k0, int k1,
                                  __global float *dst) {
    int i0 = q0 * GEMM_MR;
    int rows = min(GEMM_PACK_AR, M - i0);
    for (int k = k0; k < k1; k++) {
        __global const float *col = a + (size_t)k * M + i0;
        if (rows == GEMM_PACK_AR) {
#pragma unroll
            for (int q = 0; q < GEMM_PACK_AR / GEMM_MR; q++)
                vstore8(vload8(q, col), 0, dst + ((size_t)(q0 + q) * K + k) * GEMM_MR);
        } else {
            for (int r = 0; r < gemm_ceil_div(rows, GEMM_MR) * GEMM_MR; r++)
                dst[((size_t)(q0 + r / GEMM_MR) * K + k) * GEMM_MR + r % GEMM_MR] =
                    r < rows ? col[r] : 0.0f;
        }
    }
}

/* Packs, in one launch, op(B) into b_panels zero-padded GEMM_NR-column panels at ws (panels, K,
 * GEMM_NR) when b_panels > 0, and op(A), stored (K,M), into GEMM_MR-row panels at ws + a_off
 * (panels, K, GEMM_MR), GEMM_PACK_AR rows per work-item, when a_blocks > 0.
 * global (b_panels + a_blocks, ceil(K / GEMM_PACK_KC)), one work-item per group. */
__kernel void gemm_pack(int M, int N, int K, __global const float *a, int a_blocks, long a_off,
                        __global const float *b, int b_rs, int b_cs, int b_panels,
                        __global float *ws) {
    int p = get_global_id(0);
    int k0 = get_global_id(1) * GEMM_PACK_KC;
    int k1 = min(k0 + GEMM_PACK_KC, K);
    if (p < b_panels)
        gemm_pack_b_chunk(K, N, b, b_rs, b_cs, p, k0, k1, ws);
    else if (p - b_panels < a_blocks)
        gemm_pack_a_chunk(M, K, a, (p - b_panels) * (GEMM_PACK_AR / GEMM_MR), k0, k1, ws + a_off);
}

/* acc[r][q][v] = fma(A(i0+r, k), B(k, panel p0+q, columns 16v..16v+15), acc[r][q][v]) for k
 * in [k_begin, k_end) in order, with bv[q][v] = LOAD_B(q, k, v). Rows past M read row M-1
 * (computed, never stored). */
#define GEMM_TILE_LOOP(k_begin, k_end, LOAD_B)                                                  \
    for (int k = (k_begin); k < (k_end); k++) {                                                 \
        float16 bv[GEMM_TILE_NP_MAX][GEMM_NV];                                                  \
        _Pragma("unroll") for (int q = 0; q < np; q++)                                          \
            _Pragma("unroll") for (int v = 0; v < GEMM_NV; v++) bv[q][v] = LOAD_B(q, k, v);     \
        _Pragma("unroll") for (int r = 0; r < mr; r++) {                                        \
            float16 av = (float16)(ar[r][(size_t)k * a_cs]);                                    \
            _Pragma("unroll") for (int q = 0; q < np; q++)                                      \
                _Pragma("unroll") for (int v = 0; v < GEMM_NV; v++) acc[r][q][v] =              \
                    fma(av, bv[q][v], acc[r][q][v]);                                            \
        }                                                                                       \
    }

/* Row k of panel p0+q as 16-float vectors. Lanes past the panel's last column read whatever
 * follows in B (the next row): those lanes are computed and never stored. */
#define GEMM_LOAD_ROW(q, k, v) vload16(v, bpan[q] + (size_t)(k) * b_rs)

/* The same for the last rows, where a full-width load would run past b_len: element by element,
 * indices clamped into B (only the lanes that are never stored can be clamped). */
PGN_INLINE float16 gemm_load_tail(__global const float *b, long base, int v, long b_len) {
    float t[16];
    for (int l = 0; l < 16; l++) t[l] = b[min(base + v * 16 + l, b_len - 1)];
    return vload16(0, t);
}
#define GEMM_LOAD_TAIL(q, k, v) gemm_load_tail(b, pbase[q] + (long)(k) * b_rs, v, b_len)

/* Row `at` (an offset into c and y) of a tile, columns [j0, j0 + cols): c = the sums, or with the
 * epilogue (fused bias + activation, as bias_act_forward) z = sum + bias stored in c and
 * y = act(z) in y, the same roundings as the separate kernel. */
PGN_INLINE void gemm_store_row(float16 acc[GEMM_NV], int cols, int j0, size_t at, __global float *c, int epilogue,
                               __global const float *bias, int act, __global float *y) {
    __global float *cr = c + at + j0;
    if (cols == GEMM_NR && (!epilogue || act == PGN_ACT_CODE_RELU || act == PGN_ACT_CODE_NONE ||
                            act == PGN_ACT_CODE_GELU)) {
#pragma unroll
        for (int v = 0; v < GEMM_NV; v++) {
            float16 z = acc[v];
            if (epilogue) {
                z = z + vload16(v, bias + j0);
                float16 yv = act == PGN_ACT_CODE_RELU   ? select((float16)(0.0f), z, z > (float16)(0.0f))
                             : act == PGN_ACT_CODE_GELU ? pgn_gelu16(z)
                                                        : z;
                vstore16(yv, v, y + at + j0);
            }
            vstore16(z, v, cr);
        }
        return;
    }
    float t[GEMM_NR];
#pragma unroll
    for (int v = 0; v < GEMM_NV; v++) vstore16(acc[v], v, t);
    for (int jj = 0; jj < cols; jj++) {
        float z = t[jj];
        if (epilogue) {
            z = z + bias[j0 + jj];
            y[at + j0 + jj] = pgn_act(act, z);
        }
        cr[jj] = z;
    }
}

/* C (M,N) = op(A) (M,K) * op(B) (K,N), one tile of mr rows and np panels (np * GEMM_NR columns)
 * per work-item: mr and np are constants where it is inlined (gemm_tile and its variants below),
 * so the loops unroll and the accumulators stay in registers.
 * A, from a + a_off: row i = t*mr + r of op(A) (t its tile row) starts at t*a_ps + r*a_rs and
 * its elements are a_cs apart: packed panels of GEMM_MR rows (a_ps = K*GEMM_MR, a_rs = 1,
 * a_cs = GEMM_MR, only for mr = GEMM_MR) or A in place (a_ps = mr*a_rs). op(B), b_len floats from
 * b, is read row-wise: panel p (columns p*GEMM_NR ...) starts at p*b_ps and its rows are b_rs
 * apart: packed panels (b_ps = K*GEMM_NR, b_rs = GEMM_NR) or B in place, not transposed
 * (b_ps = GEMM_NR, b_rs = N). C rows are ldc apart.
 * global (ceil(M / mr), ceil(panels / np)), one work-item per group: consecutive groups share
 * the panels of B, which stay in cache while A streams (the other order measured the same at the
 * training shapes and 3-5 % slower at 2048). */
PGN_INLINE void gemm_tile_body(int mr, int np, int M, int N, int K, __global const float *a, long a_off, int a_ps,
                               int a_rs, int a_cs, __global const float *b, int b_ps, int b_rs, long b_len,
                               __global float *c, int ldc, int epilogue, __global const float *bias, int act,
                               __global float *y) {
    int t = get_global_id(0);
    int i0 = t * mr;
    int p0 = get_global_id(1) * np;
    int panels = gemm_ceil_div(N, GEMM_NR), nq = min(np, panels - p0);
    long pbase[GEMM_TILE_NP_MAX];
    __global const float *bpan[GEMM_TILE_NP_MAX];
    int k_full = K;
#pragma unroll
    for (int q = 0; q < np; q++) { /* panels past N: the last one, computed and never stored */
        pbase[q] = (long)(p0 + min(q, nq - 1)) * b_ps;
        bpan[q] = b + pbase[q];
        /* rows k with pbase + k*b_rs + GEMM_NR <= b_len load as whole vectors */
        long room = b_len - pbase[q] - GEMM_NR;
        k_full = min(k_full, room < 0 ? 0 : (int)min((long)K, room / b_rs + 1));
    }
    __global const float *ar[GEMM_TILE_MR_MAX];
#pragma unroll
    for (int r = 0; r < mr; r++) /* rows past M: row M-1, computed and never stored */
        ar[r] = a + a_off + (size_t)t * a_ps + (size_t)min(r, M - 1 - i0) * a_rs;
    float16 acc[GEMM_TILE_MR_MAX][GEMM_TILE_NP_MAX][GEMM_NV];
#pragma unroll
    for (int r = 0; r < mr; r++)
#pragma unroll
        for (int q = 0; q < np; q++)
#pragma unroll
            for (int v = 0; v < GEMM_NV; v++) acc[r][q][v] = (float16)(0.0f);
    GEMM_TILE_LOOP(0, k_full, GEMM_LOAD_ROW)
    GEMM_TILE_LOOP(k_full, K, GEMM_LOAD_TAIL)
#pragma unroll
    for (int r = 0; r < mr; r++) {
        if (i0 + r >= M) break;
        for (int q = 0; q < nq; q++) {
            int j0 = (p0 + q) * GEMM_NR;
            gemm_store_row(acc[r][q], min(GEMM_NR, N - j0), j0, (size_t)(i0 + r) * ldc, c, epilogue, bias, act, y);
        }
    }
}

/* The tiles (pgn_gemm_tiles in engine/tensor/gemm.c lists them with their shapes): gemm_tile is
 * GEMM_MR x GEMM_NR, the shape chosen on the machine the kernels were first tuned on, and the
 * one transposed A's packed panels fit; a device may measure the others and take the fastest. */
#define GEMM_TILE_KERNEL(name, mr, np)                                                               \
    __kernel void name(int M, int N, int K, __global const float *a, long a_off, int a_ps, int a_rs, int a_cs,     \
                       __global const float *b, int b_ps, int b_rs, long b_len, __global float *c, int ldc,        \
                       int epilogue, __global const float *bias, int act, __global float *y) {                     \
        if (a_cs == 1 && b_rs == GEMM_NR) /* A in place, B packed: constant strides */                     \
            gemm_tile_body(mr, np, M, N, K, a, a_off, a_ps, a_rs, 1, b, b_ps, GEMM_NR, b_len, c, ldc, epilogue,     \
                           bias, act, y);                                                            \
        else                                                                                         \
            gemm_tile_body(mr, np, M, N, K, a, a_off, a_ps, a_rs, a_cs, b, b_ps, b_rs, b_len, c, ldc, epilogue,    \
                           bias, act, y);                                                            \
    }
GEMM_TILE_KERNEL(gemm_tile, GEMM_MR, 1)
GEMM_TILE_KERNEL(gemm_tile_4x64, 4, 2)
GEMM_TILE_KERNEL(gemm_tile_6x64, 6, 2)
GEMM_TILE_KERNEL(gemm_tile_12x32, 12, 1)
GEMM_TILE_KERNEL(gemm_tile_14x32, 14, 1)

/* A product of one row (M = 1: inference, decoding) over op(B) read as gemm_tile reads it, with
 * one accumulator row instead of a tile's GEMM_MR (gemm_tile with M = 1 computed its one row
 * GEMM_MR times: all its rows alias it), and GEMM_VEC_PANELS panels per work-item, so that
 * 2 x GEMM_VEC_PANELS chains run side by side. The same in-order fma chain per element and the
 * same epilogue: the same bits. global: ceil(panels / GEMM_VEC_PANELS), one work-item per group. */
__kernel void gemm_vec(int N, int K, __global const float *a, __global const float *b, int b_ps, int b_rs,
                       long b_len, __global float *c, int epilogue, __global const float *bias, int act,
                       __global float *y) {
    int p0 = get_global_id(0) * GEMM_VEC_PANELS;
    int np = min(GEMM_VEC_PANELS, gemm_ceil_div(N, GEMM_NR) - p0);
    float16 acc[GEMM_VEC_PANELS][GEMM_NV];
#pragma unroll
    for (int q = 0; q < GEMM_VEC_PANELS; q++)
#pragma unroll
        for (int v = 0; v < GEMM_NV; v++) acc[q][v] = (float16)(0.0f);
    __global const float *bp[GEMM_VEC_PANELS];
#pragma unroll
    for (int q = 0; q < GEMM_VEC_PANELS; q++) bp[q] = b + (long)(p0 + min(q, np - 1)) * b_ps;
    /* whole panels read as vectors when the last one's last row fits in B; else one by one with
     * the tail loads of gemm_tile */
    if (np == GEMM_VEC_PANELS && (long)(p0 + np - 1) * b_ps + (long)(K - 1) * b_rs + GEMM_NR <= b_len) {
        for (int k = 0; k < K; k++) {
            float16 av = (float16)(a[k]);
#pragma unroll
            for (int q = 0; q < GEMM_VEC_PANELS; q++)
#pragma unroll
                for (int v = 0; v < GEMM_NV; v++) acc[q][v] = fma(av, vload16(v, bp[q] + (size_t)k * b_rs), acc[q][v]);
        }
    } else {
        for (int q = 0; q < np; q++) {
            long pbase = (long)(p0 + q) * b_ps;
            __global const float *bpan = b + pbase;
            long room = b_len - pbase - GEMM_NR;
            int k_full = room < 0 ? 0 : (int)min((long)K, room / b_rs + 1);
            for (int k = 0; k < K; k++) {
                float16 av = (float16)(a[k]);
#pragma unroll
                for (int v = 0; v < GEMM_NV; v++)
                    acc[q][v] = fma(av, k < k_full ? vload16(v, bpan + (size_t)k * b_rs)
                                                   : gemm_load_tail(b, pbase + (long)k * b_rs, v, b_len),
                                    acc[q][v]);
            }
        }
    }
    for (int q = 0; q < np; q++) {
        int j0 = (p0 + q) * GEMM_NR;
        gemm_store_row(acc[q], min(GEMM_NR, N - j0), j0, 0, c, epilogue, bias, act, y);
    }
}
