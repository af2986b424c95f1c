/* gemm.c: SGEMM, C (M,N) = op(A) op(B), on the host reference and on OpenCL devices.
 * Every output element is one in-order fma chain over k from 0, on every path, so all devices
 * and the host agree bit for bit. */
#include "internal.h"
#include "pgn_math.h"
#include "pgn_ops.h"

#define F32(t) ((float *)(t)->host)

static int check(bool ok, const char *what, pgn_error *err) {
    if (ok) return 0;
    pgn_error_set(err, "internal", "", "gemm: %s", what);
    return -1;
}

/* ---- gemm: C (M,N) = op(A) (M,K) op(B) (K,N) ---------------------------------------------- */

typedef struct {
    int a_rs, a_cs, b_rs, b_cs;
} gemm_strides;

static gemm_strides strides_for(int M, int N, int K, bool ta, bool tb) {
    gemm_strides s;
    s.a_rs = ta ? 1 : K;
    s.a_cs = ta ? M : 1;
    s.b_rs = tb ? 1 : N;
    s.b_cs = tb ? K : 1;
    return s;
}

static void gemm_host(int M, int N, int K, const float *a, gemm_strides s, const float *b,
                      float *c) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            c[i * N + j] = pgn_gemm_elem(K, a + i * s.a_rs, s.a_cs, b + j * s.b_cs, s.b_rs);
}

int pgn_op_gemm(int M, int N, int K, const pgn_tensor *a, bool ta, const pgn_tensor *b, bool tb,
                pgn_tensor *c, pgn_error *err) {
    if (check(a->dev == b->dev && a->dev == c->dev, "tensors on different devices", err) ||
        check(M > 0 && N > 0 && K > 0, "empty shape", err) ||
        check(pgn_tensor_count(a) >= (size_t)M * K, "A too small", err) ||
        check(pgn_tensor_count(b) >= (size_t)K * N, "B too small", err) ||
        check(pgn_tensor_count(c) >= (size_t)M * N, "C too small", err))
        return -1;
    gemm_strides s = strides_for(M, N, K, ta, tb);
    if (!c->dev) {
        gemm_host(M, N, K, F32(a), s, F32(b), F32(c));
        return 0;
    }
    int ldc = N;
    pgn_karg args[] = {KARG(M),      KARG(N),      KARG(K),      KARG(a->mem), KARG(s.a_rs),
                   KARG(s.a_cs), KARG(b->mem), KARG(s.b_rs), KARG(s.b_cs), KARG(c->mem),
                   KARG(ldc)};
    size_t global[2] = {(size_t)N, (size_t)M};
    return pgn_launch(c->dev, "gemm_naive", args, 11, 2, global, NULL, err);
}

