/* test_gemm.c: engine/tensor/gemm.c and kernels/gemm.cl. Every path (host tiles; device operands in
 * place, their last rows loaded element by element, or packed into panels) must give, bit for
 * bit, the in-order fma chain over k that the contract defines, in all four transpose variants
 * and at every tile edge; and that chain must be close to the exact product. */
#include <math.h>
#include <string.h>

#include "engine_helpers.h"

static pgn_device *dev;

static void setup(void) { dev = test_open_cl_device(); }
static void teardown(void) { pgn_device_close(dev); }

TestSuite(gemm, .init = setup, .fini = teardown, .timeout = 300);

/* The contract, written as plainly as possible: acc = 0; acc = fma(a(i,k), b(k,j), acc). */
static float naive_elem(int M, int N, int K, const float *a, bool ta, const float *b, bool tb,
                        int i, int j) {
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        float av = ta ? a[(size_t)k * M + i] : a[(size_t)i * K + k];
        float bv = tb ? b[(size_t)j * K + k] : b[(size_t)k * N + j];
        acc = fmaf(av, bv, acc);
    }
    return acc;
}

static pgn_tensor make(pgn_device *d, int rows, int cols, const float *data) {
    pgn_error err = {0};
    pgn_tensor t;
    cr_assert_eq(pgn_tensor_init(&t, d, rows, cols, &err), 0, "%s", err.message);
    if (data)
        cr_assert_eq(pgn_tensor_write(&t, data, (size_t)rows * cols, &err), 0, "%s", err.message);
    return t;
}

/* C = op(A) op(B) on dev (NULL: host) into out. */
static void run_gemm(pgn_device *d, int M, int N, int K, const float *a, bool ta, const float *b,
                     bool tb, float *out) {
    pgn_error err = {0};
    pgn_tensor ta_ = make(d, ta ? K : M, ta ? M : K, a), tb_ = make(d, tb ? N : K, tb ? K : N, b);
    pgn_tensor tc = make(d, M, N, NULL);
    cr_assert_eq(pgn_op_gemm(M, N, K, &ta_, ta, &tb_, tb, &tc, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(&tc, out, (size_t)M * N, &err), 0, "%s", err.message);
    pgn_tensor_release(&ta_);
    pgn_tensor_release(&tb_);
    pgn_tensor_release(&tc);
}

static void assert_bits(const float *got, const float *want, int M, int N, const char *who,
                        int K, bool ta, bool tb) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            uint32_t g = pgn_bits(got[(size_t)i * N + j]), w = pgn_bits(want[(size_t)i * N + j]);
            cr_assert(test_same_bits(g, w), "%s %dx%dx%d ta=%d tb=%d C[%d][%d]: %08x (%.9g), chain %08x (%.9g)",
                         who, M, N, K, ta, tb, i, j, g, (double)pgn_float(g), w,
                         (double)pgn_float(w));
        }
}

/* Host and device against the naive chain, bit for bit, in all four transpose variants. */
static void check_shape(int M, int N, int K) {
    float *a = test_random((size_t)M * K, 1000u + (uint64_t)M * 7 + (uint64_t)K, 1.0f);
    float *b = test_random((size_t)K * N, 2000u + (uint64_t)N * 7 + (uint64_t)K, 1.0f);
    float *want = malloc((size_t)M * N * sizeof *want), *got = malloc((size_t)M * N * sizeof *got);
    cr_assert(want && got);
    for (int v = 0; v < 4; v++) {
        bool ta = v & 1, tb = v & 2;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                want[(size_t)i * N + j] = naive_elem(M, N, K, a, ta, b, tb, i, j);
        memset(got, 0xff, (size_t)M * N * sizeof *got);
        run_gemm(NULL, M, N, K, a, ta, b, tb, got);
        assert_bits(got, want, M, N, "host", K, ta, tb);
        memset(got, 0xff, (size_t)M * N * sizeof *got);
        run_gemm(dev, M, N, K, a, ta, b, tb, got);
        assert_bits(got, want, M, N, "device", K, ta, tb);
    }
    free(a);
    free(b);
    free(want);
    free(got);
}

Test(gemm, tiny_and_prime_shapes) {
    static const int shapes[][3] = {{1, 1, 1},  {1, 1, 7},   {1, 5, 1},   {5, 1, 1},
                                    {2, 3, 4},  {7, 13, 29}, {33, 65, 17}, {3, 17, 64},
                                    {13, 7, 1}, {31, 37, 41}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        check_shape(shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* Straddles the register tiles (device 8 x 32; host 8 x 32 with AVX-512, 6 x 16 with AVX2), the
 * pack kernel's 64-row chunks and the host's 256-row k-blocks. */
Test(gemm, shapes_straddling_every_tile_edge) {
    static const int ms[] = {5, 6, 7, 8, 9, 16, 17};
    static const int ns[] = {15, 16, 17, 31, 32, 33, 64, 65};
    static const int ks[] = {1, 63, 64, 65, 255, 256, 257};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++)
            check_shape(ms[i], ns[j], ks[(i + j) % (sizeof ks / sizeof *ks)]);
    check_shape(9, 33, 513);
}

/* Large enough that the device packs B (K*N > 256 Ki elements; transposed B always is) and
 * transposed A (M*K > 256 Ki) into panels, with partial last panels and pack blocks. */
Test(gemm, packed_panels) {
    check_shape(9, 600, 450);
    check_shape(17, 520, 513);
    check_shape(601, 9, 450);
    check_shape(520, 40, 513);
}

/* One row (inference, decoding: the device's gemm_vec), over B in place, packed, and with the
 * last rows of a panel loaded element by element. */
Test(gemm, one_row_products) {
    check_shape(1, 33, 300);
    check_shape(1, 64, 257);
    check_shape(1, 600, 450);
    check_shape(1, 2048, 129);
}

/* Every tile shape the device may choose gives the same bits (each element one in-order chain),
 * at shapes that straddle its rows and panels, with B in place and packed, A in place and
 * transposed (large transposed A is packed for the default tile alone). */
Test(gemm, every_tile_gives_the_same_bits) {
    pgn_error err = {0};
    for (int t = 0; t < pgn_gemm_tile_count(); t++) {
        if (pgn_gemm_tile_shape_of(t)->family != PGN_FAMILY_CPU) {
            cr_assert_eq(pgn_gemm_tile_set(dev, t, PGN_FROM_OVERRIDE, &err), -1, "a gpu shape on a cpu-family GEMM");
            cr_assert(strstr(err.message, "is of the gpu kernel family"), "%s", err.message);
            continue;
        }
        cr_assert_eq(pgn_gemm_tile_set(dev, t, PGN_FROM_OVERRIDE, &err), 0, "%s", err.message);
        check_shape(13, 65, 31);
        check_shape(29, 97, 300);
        check_shape(6, 600, 450);
        check_shape(601, 9, 450);
    }
    cr_assert_eq(pgn_gemm_tile_set(dev, pgn_gemm_tile_count(), PGN_FROM_OVERRIDE, &err), -1);
    cr_assert_eq(pgn_gemm_tile_find("6x64"), 2);
    cr_assert_eq(pgn_gemm_tile_set(dev, 0, PGN_FROM_DEFAULT, &err), 0);
}

/* The Fashion-MNIST MLP's GEMMs (784-256-256-10) at batch 16 instead of 128. */
Test(gemm, training_shapes_at_reduced_batch) {
    check_shape(16, 256, 784); /* forward x w1 (and the other variants of the same sizes) */
    check_shape(16, 256, 256);
    check_shape(16, 10, 256);
    check_shape(784, 256, 16); /* dW1 = x^T dz */
    check_shape(256, 10, 16);
    check_shape(16, 256, 10); /* dX = dz w^T */
}

/* The chain is accurate: within a few ulps of sum |a b| of the double-precision product. */
Test(gemm, close_to_the_exact_product) {
    enum { M = 37, N = 70, K = 300 };
    float *a = test_random((size_t)M * K, 77, 3.0f), *b = test_random((size_t)K * N, 78, 0.5f);
    float *c = malloc((size_t)M * N * sizeof *c);
    cr_assert_not_null(c);
    for (int v = 0; v < 4; v++) {
        bool ta = v & 1, tb = v & 2;
        run_gemm(dev, M, N, K, a, ta, b, tb, c);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double want = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    double p = (double)(ta ? a[k * M + i] : a[i * K + k]) *
                               (double)(tb ? b[j * K + k] : b[k * N + j]);
                    want += p;
                    mag += fabs(p);
                }
                cr_assert_float_eq((double)c[i * N + j], want, mag * K * 0x1p-24,
                                   "C[%d][%d] ta=%d tb=%d", i, j, ta, tb);
            }
    }
    free(a);
    free(b);
    free(c);
}

/* Signed zeros and non-finite values go through the same chain: acc starts at +0, so a product
 * of -0 gives +0, and inf/nan propagate. */
Test(gemm, zeros_and_non_finite_values_follow_the_chain) {
    enum { M = 9, N = 33, K = 3 };
    float a[M * K], b[K * N], want[M * N], got[M * N];
    for (int i = 0; i < M * K; i++) a[i] = i % 4 == 0 ? -0.0f : (i % 4 == 1 ? INFINITY : 1.5f);
    for (int i = 0; i < K * N; i++) b[i] = i % 5 == 0 ? 0.0f : (i % 5 == 1 ? -2.0f : -0.0f);
    a[5] = NAN;
    a[8 * K] = INFINITY, a[8 * K + 1] = 1.0f, a[8 * K + 2] = 1.0f; /* C[8][0] = inf */
    b[0] = b[N] = b[2 * N] = 1.0f;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) want[i * N + j] = naive_elem(M, N, K, a, false, b, false, i, j);
    run_gemm(NULL, M, N, K, a, false, b, false, got);
    assert_bits(got, want, M, N, "host", K, false, false);
    run_gemm(dev, M, N, K, a, false, b, false, got);
    assert_bits(got, want, M, N, "device", K, false, false);
    for (int i = 0; i < M; i++) { /* each row alone: the one-row paths */
        run_gemm(NULL, 1, N, K, a + i * K, false, b, false, got);
        assert_bits(got, want + i * N, 1, N, "host row", K, false, false);
        run_gemm(dev, 1, N, K, a + i * K, false, b, false, got);
        assert_bits(got, want + i * N, 1, N, "device row", K, false, false);
    }
    int nans = 0, infs = 0;
    for (int i = 0; i < M * N; i++) nans += isnan(want[i]) != 0, infs += isinf(want[i]) != 0;
    cr_assert(nans > 0 && infs > 0, "the data should exercise both (%d nan, %d inf)", nans, infs);
    float neg0 = -0.0f, one = 1.0f, c1;
    run_gemm(NULL, 1, 1, 1, &neg0, false, &one, false, &c1);
    cr_assert_eq(pgn_bits(c1), 0u, "host: fma(-0, 1, +0) is +0");
    run_gemm(dev, 1, 1, 1, &neg0, false, &one, false, &c1);
    cr_assert_eq(pgn_bits(c1), 0u, "device: fma(-0, 1, +0) is +0");
}

/* Several packed GEMMs queued back to back share the one scratch buffer: the in-order queue
 * must keep each product's panels until it has used them. */
Test(gemm, queued_gemms_share_the_scratch) {
    enum { M = 16, N = 300, K = 1000, R = 3 };
    pgn_error err = {0};
    cr_assert_gt(pgn_gemm_workspace_bytes(M, N, K, false, false), 0);
    float *a = test_random((size_t)M * K, 5, 1.0f);
    pgn_tensor ta_ = make(dev, M, K, a), tb_[R], tc[R];
    float *b[R];
    for (int r = 0; r < R; r++) {
        b[r] = test_random((size_t)K * N, 50u + (uint64_t)r, 1.0f);
        tb_[r] = make(dev, K, N, b[r]);
        tc[r] = make(dev, M, N, NULL);
    }
    for (int r = 0; r < R; r++)
        cr_assert_eq(pgn_op_gemm(M, N, K, &ta_, false, &tb_[r], false, &tc[r], &err), 0, "%s",
                     err.message);
    float *got = malloc((size_t)M * N * sizeof *got), *want = malloc((size_t)M * N * sizeof *want);
    cr_assert(got && want);
    for (int r = 0; r < R; r++) {
        cr_assert_eq(pgn_tensor_read(&tc[r], got, (size_t)M * N, &err), 0, "%s", err.message);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                want[i * N + j] = naive_elem(M, N, K, a, false, b[r], false, i, j);
        assert_bits(got, want, M, N, "device", K, false, false);
        pgn_tensor_release(&tb_[r]);
        pgn_tensor_release(&tc[r]);
        free(b[r]);
    }
    pgn_tensor_release(&ta_);
    free(a);
    free(got);
    free(want);
}

/* A planner reserves once; later GEMMs that fit never reallocate. */
Test(gemm, reserve_grows_once_and_is_reused) {
    pgn_error err = {0};
    enum { M = 8, N = 1024, K = 512 };
    size_t need = pgn_gemm_workspace_bytes(M, N, K, false, false);
    cr_assert_eq(need, (size_t)N * K * sizeof(float), "panels of 32 columns, no padding at 1024");
    cr_assert_eq(pgn_gemm_workspace_bytes(M, 33, 300, false, true), 64u * 300 * sizeof(float));
    cr_assert_eq(pgn_gemm_workspace_bytes(128, 256, 256, true, false), 0,
                 "small operands are read in place");
    cr_assert_eq(pgn_gemm_reserve(NULL, need, &err), 0, "the host needs no scratch");
    cr_assert_eq(pgn_gemm_reserve(dev, need, &err), 0, "%s", err.message);
    pgn_tensor_scratch *sc = pgn_tensor_scratch_of(dev, &err);
    cr_assert_not_null(sc, "%s", err.message);
    cl_mem ws = sc->gemm;
    cr_assert_not_null(ws);
    cr_assert_eq(pgn_gemm_reserve(dev, need / 2, &err), 0, "%s", err.message);
    cr_assert_eq(sc->gemm, ws, "a smaller request keeps the buffer");
    float *a = test_random((size_t)M * K, 8, 1.0f), *b = test_random((size_t)K * N, 9, 1.0f);
    float *c = malloc((size_t)M * N * sizeof *c);
    cr_assert_not_null(c);
    run_gemm(dev, M, N, K, a, false, b, false, c);
    cr_assert_eq(sc->gemm, ws, "a GEMM that fits does not reallocate");
    cr_assert_eq(sc->gemm_bytes, need);
    for (int i = 0; i < M; i += 7)
        for (int j = 0; j < N; j += 97)
            cr_assert_eq(pgn_bits(c[i * N + j]),
                         pgn_bits(naive_elem(M, N, K, a, false, b, false, i, j)));
    free(a);
    free(b);
    free(c);
}

Test(gemm, rejects_bad_arguments) {
    pgn_error err = {0};
    pgn_tensor a = make(dev, 2, 3, NULL), b = make(dev, 3, 4, NULL), c = make(dev, 2, 4, NULL);
    pgn_tensor small = make(dev, 2, 2, NULL), host = make(NULL, 3, 4, NULL);
    cr_assert_eq(pgn_op_gemm(2, 4, 3, &a, false, &b, false, &small, &err), -1);
    cr_assert_str_eq(err.message, "gemm: C too small");
    cr_assert_eq(pgn_op_gemm(2, 4, 3, &a, false, &host, false, &c, &err), -1);
    cr_assert_str_eq(err.message, "gemm: tensors on different devices");
    cr_assert_eq(pgn_op_gemm(2, 4, 0, &a, false, &b, false, &c, &err), -1);
    cr_assert_str_eq(err.message, "gemm: empty shape");
    cr_assert_eq(pgn_op_gemm(2, 4, 4, &a, false, &b, false, &c, &err), -1);
    cr_assert_str_eq(err.message, "gemm: A too small");
    cr_assert_eq(pgn_op_gemm(2, 5, 3, &a, false, &b, false, &small, &err), -1);
    cr_assert_str_eq(err.message, "gemm: B too small");
    cr_assert_eq(pgn_op_gemm(2, 3, 2, &a, false, &b, false, &a, &err), -1);
    cr_assert_str_eq(err.message, "gemm: C must not be an input");
    pgn_tensor_release(&a);
    pgn_tensor_release(&b);
    pgn_tensor_release(&c);
    pgn_tensor_release(&small);
    pgn_tensor_release(&host);
}

/* ---- the gpu family (kernels/gemm_gpu.cl) on the same device -------------------------------
 * PARAGON_KERNELS=gpu: the work-group shapes, staging operands in local memory, give the same
 * chain's bits in every transpose variant, at every block and k-tile edge, in every shape. */

static void setup_gpu(void) {
    setenv("PARAGON_KERNELS", "gpu", 1);
    dev = test_open_cl_device();
    cr_assert_eq(pgn_device_get_profile(dev)->family[PGN_OPS_GEMM], PGN_FAMILY_GPU);
}

TestSuite(gemm_gpu, .init = setup_gpu, .fini = teardown, .timeout = 300);

Test(gemm_gpu, tiny_and_prime_shapes) {
    static const int shapes[][3] = {{1, 1, 1}, {2, 3, 4}, {7, 13, 29}, {33, 65, 17}, {13, 7, 1}, {31, 37, 41}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        check_shape(shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* Every gpu shape, at sizes that straddle its blocks (32, 64, 128) and its k-tiles (16, 32). */
Test(gemm_gpu, every_shape_gives_the_same_bits_at_its_edges) {
    pgn_error err = {0};
    static const int shapes[][3] = {{31, 33, 15}, {65, 63, 17}, {129, 127, 33}, {64, 128, 32}, {130, 70, 47}};
    for (int t = 0; t < pgn_gemm_tile_count(); t++) {
        if (pgn_gemm_tile_shape_of(t)->family != PGN_FAMILY_GPU) continue;
        cr_assert_eq(pgn_gemm_tile_set(dev, t, PGN_FROM_OVERRIDE, &err), 0, "%s", err.message);
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            check_shape(shapes[s][0], shapes[s][1], shapes[s][2]);
    }
}

/* One row (gemm_gpu_row) and the MLP's training shapes, where small outputs take small blocks. */
Test(gemm_gpu, one_row_and_training_shapes) {
    check_shape(1, 33, 300);
    check_shape(1, 600, 45);
    check_shape(16, 256, 784);
    check_shape(784, 256, 16);
    check_shape(256, 10, 16);
}

/* The fused epilogue (z = C + bias, y = act(z)) and the packed-weights path give the host's. */
Test(gemm_gpu, the_epilogue_and_packed_weights_give_the_host_bits) {
    enum { M = 37, N = 70, K = 45 };
    pgn_error err = {0};
    float *a = test_random((size_t)M * K, 31, 1.0f), *w = test_random((size_t)K * N, 32, 1.0f);
    float *bias = test_random(N, 33, 1.0f);
    float *want = malloc((size_t)2 * M * N * sizeof *want), *got = malloc((size_t)2 * M * N * sizeof *got);
    cr_assert(want && got);
    for (int act = PGN_ACT_NONE; act <= PGN_ACT_SIGMOID; act++)
        for (int rows = 1; rows <= M; rows += M - 1) {
            pgn_tensor t[2][5];
            for (int side = 0; side < 2; side++) {
                pgn_device *d = side ? dev : NULL;
                t[side][0] = make(d, rows, K, a);
                t[side][1] = make(d, K, N, w);
                t[side][2] = make(d, 1, N, bias);
                t[side][3] = make(d, rows, N, NULL);
                t[side][4] = make(d, rows, N, NULL);
                cr_assert_eq(pgn_op_gemm_bias_act(rows, N, K, &t[side][0], false, &t[side][1], false, &t[side][3],
                                                  &t[side][2], act, &t[side][4], &err),
                             0, "%s", err.message);
                float *out = side ? got : want;
                cr_assert_eq(pgn_tensor_read(&t[side][3], out, (size_t)rows * N, &err), 0, "%s", err.message);
                cr_assert_eq(pgn_tensor_read(&t[side][4], out + (size_t)M * N, (size_t)rows * N, &err), 0, "%s",
                             err.message);
            }
            assert_bits(got, want, rows, N, "epilogue z", K, false, false);
            assert_bits(got + (size_t)M * N, want + (size_t)M * N, rows, N, "epilogue y", K, false, false);
            pgn_gemm_packed packed;
            cr_assert_eq(pgn_gemm_pack(&t[1][1], K, N, &packed, &err), 0, "%s", err.message);
            cr_assert_eq(pgn_op_gemm_bias_act_packed(rows, &t[1][0], &packed, &t[1][3], &t[1][2], act, &t[1][4], &err),
                         0, "%s", err.message);
            cr_assert_eq(pgn_tensor_read(&t[1][4], got, (size_t)rows * N, &err), 0, "%s", err.message);
            assert_bits(got, want + (size_t)M * N, rows, N, "packed y", K, false, false);
            pgn_gemm_packed_release(&packed);
            for (int side = 0; side < 2; side++)
                for (int i = 0; i < 5; i++) pgn_tensor_release(&t[side][i]);
        }
    free(a);
    free(w);
    free(bias);
    free(want);
    free(got);
}
