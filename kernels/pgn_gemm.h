/* pgn_gemm.h: the GEMM kernels' tile and pack sizes, one home for kernels/gemm.cl (prepended to
 * the program) and engine/tensor/gemm.c (its launchers size their ranges and scratch by them). */
#ifndef PGN_GEMM_H
#define PGN_GEMM_H

/* One work-item computes a GEMM_MR x GEMM_NR tile of C in GEMM_MR * GEMM_NV float16
 * accumulators: a row of op(B) is GEMM_NV float16 loads, an element of A one broadcast scalar.
 * Measured on pocl (2-core AVX-512, FMA peak 453 GFLOP/s), best of runs, B packed: 8 x 32
 * (16 accumulators) 433-447 GFLOP/s at N = 1024 and 2048, 4 x 64: 431-438, 6 x 64: 419-426,
 * 12 x 32: 365-395, 14 x 32: 393-399; at 128 x 256 x 784 8 x 32 reached 390-409. */
#define GEMM_MR 8
#define GEMM_NR 32
#define GEMM_NV (GEMM_NR / 16)
/* The largest tile variant (gemm.cl's GEMM_TILE_KERNEL): its rows, and its GEMM_NR-wide panels. */
#define GEMM_TILE_MR_MAX 14
#define GEMM_TILE_NP_MAX 2
/* Rows of op(B) (and of transposed A) one pack work-item copies: a few groups per core at the
 * training shapes (K = 128-784). 16, 64 and 256 measured within noise of each other (a pocl
 * work-group costs under 20 ns: 128 empty groups ran in 3.3-9.1 µs, one in 2.4-6.6). */
#define GEMM_PACK_KC 64
/* Rows of transposed A one pack work-item copies: 64 contiguous floats (four cache lines) per k.
 * 8 rows per item (one panel, half a line) packed a 1024 x 1024 A in about 350 µs, 64 in 60. */
#define GEMM_PACK_AR 64
/* Panels one gemm_vec work-item (a product of one row) reads side by side: more chains in flight.
 * A 2048 x 2048 layer at one row took (median of 30, one call and wait) 0.50 ms with 1, 0.38 with
 * 2 and 0.44-0.51 with 4 panels on pocl here. */
#define GEMM_VEC_PANELS 2

/* The gpu family's one-row product (kernels/gemm_gpu.cl gemm_gpu_row): columns a work-group. */
#define GEMM_GPU_ROW_GROUP 64

#endif
