/* gemm_gpu.cl: the gpu family's SGEMM (docs/architecture.md, "Device profiles"). A work-group
 * computes an MWG x NWG block of C with MDIMC x NDIMC work-items, each holding an MWI x NWI
 * register tile (MWI = MWG / MDIMC, NWI = NWG / NDIMC); KWG-deep tiles of op(A) and op(B) are
 * staged in local memory, read back four floats at a time. Every output is still one in-order
 * fma chain over k from zero (the k-tiles in order, each tile's k in order, no split-k), so the
 * bits equal the host reference's and the cpu family's (kernels/gemm.cl). pgn_math.h, pgn_ops.h
 * and pgn_gemm.h are prepended; the launchers are in engine/tensor/gemm.c, the shapes (one
 * kernel each, GEMM_GPU_KERNEL below) in engine/profile.c's tile table. */

/* The largest register tile a shape may give a work-item, and the vector width of its local
 * reads: MWI and NWI are multiples of GEMM_GPU_VW. */
#define GEMM_GPU_VW 4
#define GEMM_GPU_WI_MAX 8
#define GEMM_GPU_VEC_MAX (GEMM_GPU_WI_MAX / GEMM_GPU_VW)
/* Floats of padding after each k-row of a local tile (a row holds R + GEMM_GPU_PAD): staging an
 * operand whose contiguous dimension is k writes down a column of the tile, neighbouring
 * work-items GEMM_GPU_PAD + R floats apart; unpadded, R = 128 put 16 of them on one bank. Four
 * keep the rows' float4 reads aligned. */
#define GEMM_GPU_PAD 4
#define GEMM_GPU_PITCH4(R) ((R) / 4 + GEMM_GPU_PAD / 4) /* a tile row in float4s */

/* Stages rows [r0, r0 + R) x k [k0, k0 + KWG) of an operand into tile (KWG rows of R + GEMM_GPU_PAD):
 * tile[kk (R + GEMM_GPU_PAD) + r] = x(r0 + r, k0 + kk) = x[(r0 + r) rs + (k0 + kk) ks], zero past
 * rows or K. The work-items
 * walk the operand's contiguous dimension (k when ks == 1, else the rows), so neighbours read
 * neighbouring floats. */
PGN_INLINE void gemm_gpu_stage(int R, int KWG, int lid, int wg, int rows, int K, int r0, int k0,
                               __global const float *x, int rs, int ks, __local float *tile) {
    if (ks == 1) {
        for (int idx = lid; idx < R * KWG; idx += wg) {
            int r = idx / KWG, kk = idx % KWG;
            int gr = r0 + r, gk = k0 + kk;
            tile[kk * (R + GEMM_GPU_PAD) + r] = gr < rows && gk < K ? x[(size_t)gr * rs + gk] : 0.0f;
        }
    } else {
        for (int idx = lid; idx < R * KWG; idx += wg) {
            int kk = idx / R, r = idx % R;
            int gr = r0 + r, gk = k0 + kk;
            tile[kk * (R + GEMM_GPU_PAD) + r] = gr < rows && gk < K ? x[(size_t)gr * rs + (size_t)gk * ks] : 0.0f;
        }
    }
}

/* acc[m][n] = fma(A(row m, k), B(k, column n), acc[m][n]) for k in [0, kn) of the staged tiles,
 * in order. A work-item's rows are (tm + q MDIMC) GEMM_GPU_VW + v for q < MWI / GEMM_GPU_VW,
 * v < GEMM_GPU_VW (and its columns likewise with tn, NDIMC): neighbouring work-items read
 * neighbouring vectors of a tile row, so a warp's reads meet no bank twice. */
#define GEMM_GPU_STEPS(kn)                                                                      \
    for (int kk = 0; kk < (kn); kk++) {                                                         \
        float4 av[GEMM_GPU_VEC_MAX], bv[GEMM_GPU_VEC_MAX];                                      \
        _Pragma("unroll") for (int q = 0; q < mv; q++) av[q] = As[kk * GEMM_GPU_PITCH4(MWG) + tm + q * MDIMC]; \
        _Pragma("unroll") for (int q = 0; q < nv; q++) bv[q] = Bs[kk * GEMM_GPU_PITCH4(NWG) + tn + q * NDIMC]; \
        _Pragma("unroll") for (int q = 0; q < mv; q++) {                                        \
            float a4[4] = {av[q].s0, av[q].s1, av[q].s2, av[q].s3};                             \
            _Pragma("unroll") for (int v = 0; v < 4; v++) {                                     \
                _Pragma("unroll") for (int p = 0; p < nv; p++) acc[q * 4 + v][p] =              \
                    fma((float4)(a4[v]), bv[p], acc[q * 4 + v][p]);                             \
            }                                                                                   \
        }                                                                                       \
    }

/* C (M,N) = op(A) op(B): op(A)(i,k) = a[i a_rs + k a_cs], op(B)(k,j) = b[k b_rs + j b_cs], C rows
 * ldc apart; with the epilogue z = sum + bias stored in C and y = act(z), as gemm.cl's. The
 * shape's sizes are constants where it is inlined (GEMM_GPU_KERNEL), so the loops unroll and
 * the accumulators stay in registers. global (ceil(N / NWG) NDIMC, ceil(M / MWG) MDIMC), local
 * (NDIMC, MDIMC). */
PGN_INLINE void gemm_gpu_body(int MWG, int NWG, int KWG, int MDIMC, int NDIMC, int M, int N, int K,
                              __global const float *a, int a_rs, int a_cs, __global const float *b, int b_rs,
                              int b_cs, __global float *c, int ldc, int epilogue, __global const float *bias,
                              int act, __global float *y, __local float4 *As, __local float4 *Bs) {
    int mv = MWG / MDIMC / GEMM_GPU_VW, nv = NWG / NDIMC / GEMM_GPU_VW;
    int tn = get_local_id(0), tm = get_local_id(1), lid = tm * NDIMC + tn, wg = MDIMC * NDIMC;
    int col0 = get_group_id(0) * NWG, row0 = get_group_id(1) * MWG;
    float4 acc[GEMM_GPU_WI_MAX][GEMM_GPU_VEC_MAX];
#pragma unroll
    for (int m = 0; m < GEMM_GPU_WI_MAX; m++)
#pragma unroll
        for (int p = 0; p < GEMM_GPU_VEC_MAX; p++) acc[m][p] = (float4)(0.0f);
    for (int k0 = 0; k0 < K; k0 += KWG) {
        /* op(A) rows are C's rows; op(B) columns are C's: op(B)(k, j) = b[j b_cs + k b_rs] */
        gemm_gpu_stage(MWG, KWG, lid, wg, M, K, row0, k0, a, a_rs, a_cs, (__local float *)As);
        gemm_gpu_stage(NWG, KWG, lid, wg, N, K, col0, k0, b, b_cs, b_rs, (__local float *)Bs);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (K - k0 >= KWG) {
            GEMM_GPU_STEPS(KWG)
        } else {
            GEMM_GPU_STEPS(K - k0)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int q = 0; q < mv; q++)
#pragma unroll
        for (int v = 0; v < 4; v++) {
            int i = row0 + (tm + q * MDIMC) * 4 + v;
            if (i >= M) continue;
#pragma unroll
            for (int p = 0; p < nv; p++) {
                float r4[4] = {acc[q * 4 + v][p].s0, acc[q * 4 + v][p].s1, acc[q * 4 + v][p].s2,
                               acc[q * 4 + v][p].s3};
#pragma unroll
                for (int w = 0; w < 4; w++) {
                    int j = col0 + (tn + p * NDIMC) * 4 + w;
                    if (j >= N) continue;
                    float z = r4[w];
                    size_t at = (size_t)i * ldc + j;
                    if (epilogue) {
                        z = z + bias[j];
                        y[at] = pgn_act(act, z);
                    }
                    c[at] = z;
                }
            }
        }
}

/* A shape: the kernel NAME computing MWG x NWG blocks, KWG deep, with MDIMC x NDIMC work-items.
 * Its local tiles are declared here (OpenCL C 1.2 allows __local variables at kernel scope
 * only). */
#define GEMM_GPU_KERNEL(name, MWG, NWG, KWG, MDIMC, NDIMC)                                              \
    __kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1))) void name(                         \
        int M, int N, int K, __global const float *a, int a_rs, int a_cs, __global const float *b, int b_rs, \
        int b_cs, __global float *c, int ldc, int epilogue, __global const float *bias, int act,         \
        __global float *y) {                                                                            \
        __local float4 As[(KWG) * GEMM_GPU_PITCH4(MWG)], Bs[(KWG) * GEMM_GPU_PITCH4(NWG)];              \
        gemm_gpu_body(MWG, NWG, KWG, MDIMC, NDIMC, M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, epilogue, \
                      bias, act, y, As, Bs);                                                            \
    }
/* The shapes (engine/profile.c lists them with their sizes, which must match): CLBlast's tuned
 * entries for an A100 (32 x 64, 8 x 16 work-items) and an RTX 4090 (128 x 64, 32 x 8) as starting
 * points, square blocks for large products, and small blocks that fill a chip's compute units
 * when the output is small (the weight gradients). */
GEMM_GPU_KERNEL(gemm_gpu_128x128, 128, 128, 16, 16, 16)
GEMM_GPU_KERNEL(gemm_gpu_128x64, 128, 64, 16, 32, 8)
GEMM_GPU_KERNEL(gemm_gpu_64x128, 64, 128, 16, 8, 32)
GEMM_GPU_KERNEL(gemm_gpu_64x64, 64, 64, 16, 16, 16)
GEMM_GPU_KERNEL(gemm_gpu_32x64, 32, 64, 32, 8, 16)
GEMM_GPU_KERNEL(gemm_gpu_32x32, 32, 32, 32, 8, 8)

/* One row of C (M = 1: decoding a token, a batch-1 forward): work-item j computes C(0, j), one
 * in-order fma chain over k from zero, with the same epilogue. op(B) is read as stored: rows
 * b_rs apart, columns b_cs apart. global: N rounded up to the work-group. */
__kernel void gemm_gpu_row(int N, int K, __global const float *a, int a_cs, __global const float *b, int b_rs,
                           int b_cs, __global float *c, int epilogue, __global const float *bias, int act,
                           __global float *y) {
    int j = get_global_id(0);
    if (j >= N) return;
    __global const float *bj = b + (size_t)j * b_cs;
    float z = 0.0f;
    for (int k = 0; k < K; k++) z = fma(a[(size_t)k * a_cs], bj[(size_t)k * b_rs], z);
    if (epilogue) {
        z = z + bias[j];
        y[j] = pgn_act(act, z);
    }
    c[j] = z;
}
