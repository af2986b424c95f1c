/* gemm.cl: SGEMM kernels. pgn_math.h and pgn_ops.h are prepended when the program is built.
 * Launchers live in engine/gemm.c; every output is one in-order fma chain over k (bit-exact
 * with the host reference). */

/* C (M,N) = op(A) (M,K) * op(B) (K,N); one work-item per output, in-order fma over k.
 * global size (N, M). */
__kernel void gemm_naive(int M, int N, int K,
                         __global const float *a, int a_rs, int a_cs,
                         __global const float *b, int b_rs, int b_cs,
                         __global float *c, int ldc) {
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= M || j >= N) return;
    c[i * ldc + j] = pgn_gemm_elem(K, a + i * a_rs, a_cs, b + j * b_cs, b_rs);
}
