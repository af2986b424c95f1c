/* test_ops.c: every tensor op on the OpenCL device against the host reference, bit for bit,
 * and the host reference against double-precision math, so identical-but-wrong cannot pass. */
#include <math.h>
#include <string.h>

#include "engine_helpers.h"
#include "pgn_ops.h"

static pgn_device *dev;

static void setup(void) { dev = test_open_cl_device(); }
static void teardown(void) { pgn_device_close(dev); }

TestSuite(ops, .init = setup, .fini = teardown);

/* The same checks with the gpu family's row and column kernels (kernels/tensor_gpu.cl) on pocl. */
static void setup_gpu(void) {
    setenv("PARAGON_KERNELS", "gpu", 1);
    dev = test_open_cl_device();
    cr_assert_eq(pgn_device_get_profile(dev)->family[PGN_OPS_ROWS], PGN_FAMILY_GPU);
}
TestSuite(ops_gpu, .init = setup_gpu, .fini = teardown);

/* Asserts the first count elements are the same bits on host and device (test_same_bits); returns
 * the host copy (caller frees) for value checks. */
static uint32_t *assert_identical(pair *p, size_t count, const char *what) {
    pgn_error err = {0};
    uint32_t *h = malloc(count * 4), *d = malloc(count * 4);
    cr_assert(h && d);
    cr_assert_eq(pgn_tensor_read(&p->h, h, count, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(&p->d, d, count, &err), 0, "%s", err.message);
    for (size_t i = 0; i < count; i++)
        cr_assert(test_same_bits(h[i], d[i]),
                  "%s[%zu]: host %08x (%g) != device %08x (%g)", what, i, h[i], (double)pgn_float(h[i]), d[i],
                  (double)pgn_float(d[i]));
    free(d);
    return h;
}

static int32_t ulp_distance(float a, float b) {
    int32_t ia = (int32_t)pgn_bits(a), ib = (int32_t)pgn_bits(b);
    if (ia < 0) ia = (int32_t)0x80000000 - ia;
    if (ib < 0) ib = (int32_t)0x80000000 - ib;
    return ia > ib ? ia - ib : ib - ia;
}

Test(math, expf_within_two_ulp_of_libm) {
    for (int i = 0; i <= 200000; i++) {
        float x = -103.0f + 192.0f * (float)i / 200000.0f;
        float want = (float)exp((double)x);
        float got = pgn_expf(x);
        cr_assert_leq(ulp_distance(got, want), 2, "exp(%.9g) = %.9g, want %.9g", (double)x,
                      (double)got, (double)want);
    }
    cr_assert_eq(pgn_expf(0.0f), 1.0f);
    cr_assert_eq(pgn_expf(-INFINITY), 0.0f);
    cr_assert(isinf(pgn_expf(INFINITY)));
    cr_assert(isinf(pgn_expf(89.0f)));
    cr_assert(isnan(pgn_expf(NAN)));
}

Test(math, logf_within_two_ulp_of_libm) {
    for (int i = 0; i < 200000; i++) {
        /* spread over every exponent, subnormals included */
        float x = pgn_float(0x00000001u + (uint32_t)((uint64_t)i * 0x7f7fffffu / 200000u));
        float want = (float)log((double)x);
        float got = pgn_logf(x);
        cr_assert_leq(ulp_distance(got, want), 2, "log(%.9g) = %.9g, want %.9g", (double)x,
                      (double)got, (double)want);
    }
    cr_assert_eq(pgn_logf(1.0f), 0.0f);
    cr_assert(isinf(pgn_logf(0.0f)) && pgn_logf(0.0f) < 0);
    cr_assert(isnan(pgn_logf(-1.0f)));
    cr_assert(isinf(pgn_logf(INFINITY)));
}

Test(math, counter_rng_is_uniform_and_stable) {
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        float u = pgn_rand_unit(7, 1, (uint64_t)i);
        cr_assert(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    cr_assert_float_eq(sum / 100000.0, 0.5, 0.01);
    cr_assert_eq(pgn_rand64(7, 1, 5), pgn_rand64(7, 1, 5));
    cr_assert_neq(pgn_rand64(7, 1, 5), pgn_rand64(8, 1, 5));
}

/* gemm in each transpose variant: device == host bit for bit, host ~= double reference. */
static void check_gemm(int M, int N, int K, bool ta, bool tb) {
    pgn_error err = {0};
    pair a, b, c;
    pair_random(&a, dev, ta ? K : M, ta ? M : K, 11, 1.0f);
    pair_random(&b, dev, tb ? N : K, tb ? K : N, 12, 1.0f);
    pair_init(&c, dev, M, N, NULL);
    cr_assert_eq(pgn_op_gemm(M, N, K, &a.h, ta, &b.h, tb, &c.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_gemm(M, N, K, &a.d, ta, &b.d, tb, &c.d, &err), 0, "%s", err.message);
    uint32_t *cv = assert_identical(&c, (size_t)M * N, "gemm");
    const float *av = a.h.host, *bv = b.h.host;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int k = 0; k < K; k++)
                want += (double)(ta ? av[k * M + i] : av[i * K + k]) *
                        (double)(tb ? bv[j * K + k] : bv[k * N + j]);
            cr_assert_float_eq((double)pgn_float(cv[i * N + j]), want, 1e-4 * K,
                               "C[%d][%d] (ta=%d tb=%d)", i, j, ta, tb);
        }
    free(cv);
    pair_release(&a);
    pair_release(&b);
    pair_release(&c);
}

Test(ops, gemm_nn) { check_gemm(7, 13, 29, false, false); }
Test(ops, gemm_tn) { check_gemm(9, 5, 33, true, false); }
Test(ops, gemm_nt) { check_gemm(16, 31, 8, false, true); }
Test(ops, gemm_tt) { check_gemm(3, 17, 64, true, true); }

Test(ops, gemm_rejects_mismatched_shapes) {
    pgn_error err = {0};
    pair a, b, c;
    pair_init(&a, dev, 2, 3, NULL);
    pair_init(&b, dev, 3, 4, NULL);
    pair_init(&c, dev, 2, 2, NULL); /* too small for (2, 4) */
    cr_assert_eq(pgn_op_gemm(2, 4, 3, &a.d, false, &b.d, false, &c.d, &err), -1);
    cr_assert_str_eq(err.message, "gemm: C too small");
    cr_assert_eq(pgn_op_gemm(2, 4, 3, &a.h, false, &b.d, false, &c.d, &err), -1);
    cr_assert_str_eq(err.message, "gemm: tensors on different devices");
    pair_release(&a);
    pair_release(&b);
    pair_release(&c);
}

Test(ops, bias_act_on_a_short_batch) {
    pgn_error err = {0};
    pair z, bias, y;
    pair_random(&z, dev, 6, 10, 21, 2.0f);
    pair_random(&bias, dev, 1, 10, 22, 1.0f);
    pair_init(&y, dev, 6, 10, NULL);
    float *before = test_random(60, 21, 2.0f);
    cr_assert_eq(pgn_op_bias_act_forward(4, &z.h, &bias.h, PGN_ACT_CODE_RELU, &y.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_bias_act_forward(4, &z.d, &bias.d, PGN_ACT_CODE_RELU, &y.d, &err), 0, "%s", err.message);
    uint32_t *zv = assert_identical(&z, 60, "z");
    uint32_t *yv = assert_identical(&y, 60, "y");
    const float *bv = bias.h.host;
    for (int i = 0; i < 60; i++) {
        float want = i < 40 ? before[i] + bv[i % 10] : before[i]; /* rows past 4 untouched */
        cr_assert_eq(pgn_float(zv[i]), want, "z[%d]", i);
        if (i < 40) cr_assert_eq(pgn_float(yv[i]), want > 0 ? want : 0.0f, "y[%d]", i);
    }
    free(zv);
    free(yv);
    free(before);
    pair_release(&z);
    pair_release(&bias);
    pair_release(&y);
}

static double act_ref(int act, double x) {
    switch (act) {
    case PGN_ACT_CODE_RELU: return x > 0 ? x : 0;
    case PGN_ACT_CODE_GELU: return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case PGN_ACT_CODE_TANH: return tanh(x);
    case PGN_ACT_CODE_SIGMOID: return 1 / (1 + exp(-x));
    }
    return x;
}

static double act_grad_ref(int act, double x) {
    const double h = 1e-5;
    return (act_ref(act, x + h) - act_ref(act, x - h)) / (2 * h);
}

Test(ops, activations_forward_and_backward) {
    const int acts[] = {PGN_ACT_CODE_RELU, PGN_ACT_CODE_GELU, PGN_ACT_CODE_TANH, PGN_ACT_CODE_SIGMOID};
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        int act = acts[a];
        pgn_error err = {0};
        pair x, y, dy, dx;
        pair_random(&x, dev, 16, 64, 31, 6.0f);
        pair_random(&dy, dev, 16, 64, 32, 1.0f);
        pair_init(&y, dev, 16, 64, NULL);
        pair_init(&dx, dev, 16, 64, NULL);
        cr_assert_eq(pgn_op_act_forward(16, act, &x.h, &y.h, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_act_forward(16, act, &x.d, &y.d, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_act_backward(16, act, &x.h, &y.h, &dy.h, &dx.h, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_act_backward(16, act, &x.d, &y.d, &dy.d, &dx.d, &err), 0, "%s", err.message);
        uint32_t *yv = assert_identical(&y, 1024, "act_forward");
        uint32_t *dxv = assert_identical(&dx, 1024, "act_backward");
        const float *xv = x.h.host, *dyv = dy.h.host;
        for (int i = 0; i < 1024; i++) {
            double want = act_ref(act, xv[i]);
            cr_assert_float_eq((double)pgn_float(yv[i]), want, 1e-6 + 1e-6 * fabs(want),
                               "act %d (%g)", act, (double)xv[i]);
            if (act == PGN_ACT_CODE_RELU && fabs(xv[i]) < 1e-4) continue; /* the kink */
            double wantg = dyv[i] * act_grad_ref(act, xv[i]);
            cr_assert_float_eq((double)pgn_float(dxv[i]), wantg, 1e-5 + 1e-5 * fabs(wantg),
                               "act %d grad (%g)", act, (double)xv[i]);
        }
        free(yv);
        free(dxv);
        pair_release(&x);
        pair_release(&y);
        pair_release(&dy);
        pair_release(&dx);
    }
}

Test(math, tanh_and_sigmoid_accuracy) {
    for (int i = -200000; i <= 200000; i++) {
        float x = (float)i * 1e-4f;
        double t = tanh((double)x), s = 1 / (1 + exp(-(double)x));
        cr_assert_leq(ulp_distance(pgn_tanhf(x), (float)t), 4, "tanh(%.9g) = %.9g", (double)x, (double)pgn_tanhf(x));
        cr_assert_leq(ulp_distance(pgn_sigmoidf(x), (float)s), 4, "sigmoid(%.9g)", (double)x);
    }
    cr_assert_eq(pgn_tanhf(30.0f), 1.0f);
    cr_assert_eq(pgn_tanhf(-30.0f), -1.0f);
    cr_assert_eq(pgn_sigmoidf(-200.0f), 0.0f);
}

/* Wider than one work-item's column group (PGN_COL_GROUP blocks) and not a whole number of
 * blocks, over two row chunks: every activation's backward and the column sums, host == device. */
static void bias_act_backward_and_colsum_span_column_groups(void) {
    enum { R = 70, C = PGN_COL_BLOCK * PGN_COL_GROUP + 37 };
    const int acts[] = {PGN_ACT_CODE_NONE, PGN_ACT_CODE_RELU, PGN_ACT_CODE_GELU, PGN_ACT_CODE_TANH};
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        pair z, y, dy, dz, db, sums;
        pgn_error err = {0};
        pair_random(&z, dev, R, C, 91 + a, 4.0f);
        pair_random(&y, dev, R, C, 93 + a, 1.0f);
        pair_random(&dy, dev, R, C, 95 + a, 1.0f);
        pair_init(&dz, dev, R, C, NULL);
        pair_init(&db, dev, 1, C, NULL);
        pair_init(&sums, dev, 1, C, NULL);
        for (int side = 0; side < 2; side++) {
            cr_assert_eq(pgn_op_bias_act_backward(R, side ? &z.d : &z.h, side ? &y.d : &y.h, side ? &dy.d : &dy.h,
                                                  acts[a], side ? &dz.d : &dz.h, side ? &db.d : &db.h, NULL, &err),
                         0, "%s", err.message);
            cr_assert_eq(pgn_op_colsum(R, side ? &dy.d : &dy.h, side ? &sums.d : &sums.h, NULL, &err), 0, "%s",
                         err.message);
        }
        char what[48];
        snprintf(what, sizeof what, "act %d dz", acts[a]);
        free(assert_identical(&dz, (size_t)R * C, what));
        snprintf(what, sizeof what, "act %d db", acts[a]);
        free(assert_identical(&db, C, what));
        free(assert_identical(&sums, C, "colsum"));
        pair *all[] = {&z, &y, &dy, &dz, &db, &sums};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
    }
}
Test(ops, bias_act_backward_and_colsum_span_column_groups) { bias_act_backward_and_colsum_span_column_groups(); }
Test(ops_gpu, bias_act_backward_and_colsum_span_column_groups) { bias_act_backward_and_colsum_span_column_groups(); }

/* Column sums deferred (their chunk partials into regions of one buffer) and finished in one
 * launch by a table, into offsets of one output, give the bits of finishing each at once. */
static void deferred_sums_finish_to_the_same_bits(void) {
    enum { R = 150, C1 = 37, C2 = 20, OUT = 100, CHUNKS = 3, AT2 = 128 };
    pgn_error err = {0};
    pair z, y, dy, x2, dz, db, sums, part, table, out;
    pair_random(&z, dev, R, C1, 61, 4.0f);
    pair_random(&y, dev, R, C1, 62, 1.0f);
    pair_random(&dy, dev, R, C1, 63, 1.0f);
    pair_random(&x2, dev, R, C2, 64, 2.0f);
    pair_init(&dz, dev, R, C1, NULL);
    pair_init(&db, dev, 1, C1, NULL);
    pair_init(&sums, dev, 1, C2, NULL);
    pair_init(&part, dev, 1, AT2 + CHUNKS * C2, NULL);
    const int32_t t[2 * PGN_SUM_ENTRY] = {0, C1, 0, C1, 5, C1, C2, AT2, C2, 60};
    pair_init(&table, dev, 2, PGN_SUM_ENTRY, t);
    float zeros[OUT] = {0};
    pair_init(&out, dev, 1, OUT, zeros);
    for (int side = 0; side < 2; side++) {
#define S(p) (side ? &(p).d : &(p).h)
        pgn_tensor r1, r2;
        cr_assert_eq(pgn_tensor_view(&r1, S(part), 0, CHUNKS, C1, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_tensor_view(&r2, S(part), AT2, CHUNKS, C2, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_bias_act_backward(R, S(z), S(y), S(dy), PGN_ACT_CODE_GELU, S(dz), S(db), NULL, &err), 0);
        cr_assert_eq(pgn_op_colsum(R, S(x2), S(sums), NULL, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_bias_act_backward(R, S(z), S(y), S(dy), PGN_ACT_CODE_GELU, S(dz), NULL, &r1, &err), 0,
                     "%s", err.message);
        cr_assert_eq(pgn_op_colsum(R, S(x2), NULL, &r2, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_finish_sums(2, C1 + C2, CHUNKS, S(table), S(part), S(out), &err), 0, "%s", err.message);
        pgn_tensor_release(&r1);
        pgn_tensor_release(&r2);
#undef S
    }
    uint32_t *o = assert_identical(&out, OUT, "finished"), *b = assert_identical(&db, C1, "db"),
             *c = assert_identical(&sums, C2, "colsum");
    for (int j = 0; j < OUT; j++) {
        uint32_t want = j >= 5 && j < 5 + C1 ? b[j - 5] : j >= 60 && j < 60 + C2 ? c[j - 60] : 0;
        cr_assert_eq(o[j], want, "out[%d]", j);
    }
    free(o);
    free(b);
    free(c);
    pair *all[] = {&z, &y, &dy, &x2, &dz, &db, &sums, &part, &table, &out};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
}
Test(ops, deferred_sums_finish_to_the_same_bits) { deferred_sums_finish_to_the_same_bits(); }
Test(ops_gpu, deferred_sums_finish_to_the_same_bits) { deferred_sums_finish_to_the_same_bits(); }

static void colsum_sums_chunks_of_rows_in_order(void) {
    pgn_error err = {0};
    pair x, out;
    enum { R = 150, C = 21 }; /* three chunks of rows; a whole column block and a part */
    pair_random(&x, dev, R, C, 41, 3.0f);
    pair_init(&out, dev, 1, C, NULL);
    cr_assert_eq(pgn_op_colsum(R, &x.h, &out.h, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_colsum(R, &x.d, &out.d, NULL, &err), 0, "%s", err.message);
    uint32_t *v = assert_identical(&out, C, "colsum");
    const float *xv = x.h.host;
    for (int j = 0; j < C; j++) { /* each chunk of PGN_SUM_ROWS in row order, then the chunks */
        float want = 0.0f;
        for (int r0 = 0; r0 < R; r0 += PGN_SUM_ROWS) {
            float chunk = 0.0f;
            for (int r = r0; r < R && r < r0 + PGN_SUM_ROWS; r++) chunk += xv[r * C + j];
            want += chunk;
        }
        cr_assert_eq(pgn_float(v[j]), want, "column %d", j);
    }
    free(v);
    pair_release(&x);
    pair_release(&out);
}
Test(ops, colsum_sums_chunks_of_rows_in_order) { colsum_sums_chunks_of_rows_in_order(); }
Test(ops_gpu, colsum_sums_chunks_of_rows_in_order) { colsum_sums_chunks_of_rows_in_order(); }

/* Softmax + cross-entropy (or squared error against one-hot labels: mse) of R rows of C on host
 * and device, bit for bit, and against double math; rows 0 and 1 hold ties for the arg-max, which
 * is the first of the maxima. */
static void check_fused_loss(int mse, int R, int C) {
    pgn_error err = {0};
    pair logits, labels, dlogits, loss, pred;
    pair_random(&logits, dev, R, C, 51, 8.0f);
    float *xs = logits.h.host;
    xs[3] = xs[C - 1] = 9.0f;       /* row 0: the first of two maxima is 3 */
    xs[C + 17 % C] = xs[C + 1] = 9.5f; /* row 1: lanes 1 and 17 (or one column) */
    cr_assert_eq(pgn_tensor_write(&logits.d, xs, (size_t)R * C, &err), 0, "%s", err.message);
    int32_t lab[64];
    cr_assert(R <= 64);
    for (int r = 0; r < R; r++) lab[r] = (int32_t)(pgn_rand64(5, 5, (uint64_t)r) % C);
    pair_init(&labels, dev, R, 1, lab);
    pair_init(&dlogits, dev, R, C, NULL);
    pair_init(&loss, dev, R, 1, NULL);
    pair_init(&pred, dev, R, 1, NULL);
    float scale = mse ? 1.0f / (R * C) : 1.0f / R;
    for (int side = 0; side < 2; side++) {
        pgn_tensor *x = side ? &logits.d : &logits.h, *y = side ? &labels.d : &labels.h, *dx = side ? &dlogits.d : &dlogits.h,
                   *l = side ? &loss.d : &loss.h, *p = side ? &pred.d : &pred.h;
        cr_assert_eq(mse ? pgn_op_mse_onehot(R, x, y, scale, dx, l, p, &err) : pgn_op_softmax_xent(R, x, y, scale, dx, l, p, &err),
                     0, "%s", err.message);
    }
    uint32_t *dv = assert_identical(&dlogits, R * C, "dlogits");
    uint32_t *lv = assert_identical(&loss, R, "loss");
    uint32_t *pv = assert_identical(&pred, R, "pred");
    const float *x = logits.h.host;
    for (int r = 0; r < R; r++) {
        double mx = x[r * C], sum = 0;
        int arg = 0;
        for (int j = 1; j < C; j++)
            if (x[r * C + j] > mx) mx = x[r * C + j], arg = j;
        cr_assert_eq((int32_t)pv[r], arg, "pred[%d]", r);
        if (r == 0) cr_assert_eq(arg, 3);
        for (int j = 0; j < C; j++) {
            double d = (double)x[r * C + j] - (j == lab[r]);
            sum += mse ? d * d : exp((double)x[r * C + j] - mx);
        }
        double want_loss = mse ? sum : log(sum) - ((double)x[r * C + lab[r]] - mx);
        cr_assert_float_eq((double)pgn_float(lv[r]), want_loss, 1e-5 + 1e-5 * want_loss, "loss[%d]", r);
        for (int j = 0; j < C; j++) {
            double d = (double)x[r * C + j] - (j == lab[r]);
            double want = mse ? 2.0 * d * scale : (exp((double)x[r * C + j] - mx) / sum - (j == lab[r])) / R;
            cr_assert_float_eq((double)pgn_float(dv[r * C + j]), want, 1e-6 * fabs(want) + 1e-7, "dlogits[%d][%d]", r, j);
        }
    }
    free(dv);
    free(lv);
    free(pv);
    pair_release(&logits);
    pair_release(&labels);
    pair_release(&dlogits);
    pair_release(&loss);
    pair_release(&pred);
}

Test(ops, softmax_xent_matches_double_reference) { check_fused_loss(0, 33, 10); }
Test(ops_gpu, softmax_xent_matches_double_reference) { check_fused_loss(0, 33, 10); }
Test(ops, softmax_xent_over_more_classes_than_lanes) { check_fused_loss(0, 37, 65); }
Test(ops_gpu, softmax_xent_over_more_classes_than_lanes) { check_fused_loss(0, 37, 65); }
Test(ops, mse_onehot_matches_double_reference) { check_fused_loss(1, 21, 40); }
Test(ops_gpu, mse_onehot_matches_double_reference) { check_fused_loss(1, 21, 40); }

/* Three optimizer steps on host and device; compared bit for bit and against double math. */
static void check_optimizer(int kind) {
    pgn_error err = {0};
    pair w, g, m, v, scale;
    pair_random(&w, dev, 13, 7, 61, 1.0f);
    pair_random(&g, dev, 13, 7, 62, 0.5f);
    pair_init(&m, dev, 13, 7, NULL);
    pair_init(&v, dev, 13, 7, NULL);
    const float sc[2] = {0.0f, 0.5f}; /* clipping halves the gradient */
    pair_init(&scale, dev, 1, 2, sc);
    const float lr = 0.05f, mu = 0.9f, wd = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    for (int step = 1; step <= 3; step++) {
        pgn_adam_args a = {.lr = lr, .b1 = b1, .b2 = b2, .eps = eps,
                           .bc1 = 1.0f - powf(b1, (float)step), .bc2 = 1.0f - powf(b2, (float)step),
                           .wd = wd, .decoupled = kind == 3};
        for (int side = 0; side < 2; side++) {
            pgn_tensor *W = side ? &w.d : &w.h, *G = side ? &g.d : &g.h, *M = side ? &m.d : &m.h,
                       *V = side ? &v.d : &v.h, *S = side ? &scale.d : &scale.h;
            int rc = kind <= 1 ? pgn_op_sgd_update(W, G, M, S, lr, mu, kind == 1, wd, &err)
                               : pgn_op_adam_update(W, G, M, V, S, &a, &err);
            cr_assert_eq(rc, 0, "%s", err.message);
        }
    }
    uint32_t *wv = assert_identical(&w, 91, "w");
    uint32_t *mv = assert_identical(&m, 91, "m");
    uint32_t *vv = assert_identical(&v, 91, "v");
    float *w0 = test_random(91, 61, 1.0f), *g0 = test_random(91, 62, 0.5f);
    for (int i = 0; i < 91; i++) {
        double wd_ = w0[i], md = 0, vd = 0, gs = 0.5 * g0[i];
        for (int step = 1; step <= 3; step++) {
            if (kind <= 1) {
                double gg = gs + wd * wd_;
                md = mu * md + gg;
                wd_ -= lr * (kind == 1 ? gg + mu * md : md);
            } else {
                double gg = kind == 2 ? gs + wd * wd_ : gs;
                if (kind == 3) wd_ -= lr * wd * wd_;
                md = b1 * md + (1 - b1) * gg;
                vd = b2 * vd + (1 - b2) * gg * gg;
                wd_ -= lr * (md / (1 - pow(b1, step))) / (sqrt(vd / (1 - pow(b2, step))) + eps);
            }
        }
        cr_assert_float_eq((double)pgn_float(wv[i]), wd_, 1e-5, "kind %d w[%d]", kind, i);
        cr_assert_float_eq((double)pgn_float(mv[i]), md, 1e-5, "kind %d m[%d]", kind, i);
    }
    free(w0);
    free(g0);
    free(wv);
    free(mv);
    free(vv);
    pair_release(&w);
    pair_release(&g);
    pair_release(&m);
    pair_release(&v);
    pair_release(&scale);
}

Test(ops, sgd_momentum_with_weight_decay) { check_optimizer(0); }
Test(ops, sgd_nesterov) { check_optimizer(1); }
Test(ops, adam) { check_optimizer(2); }
Test(ops, adamw) { check_optimizer(3); }

static void global_norm_clipping(void) {
    pgn_error err = {0};
    pair x, ranges, partials, clip;
    pair_random(&x, dev, 100, 100, 71, 1.0f); /* 10000 elements: 3 chunks of 4096 */
    const int32_t r[6] = {0, 4096, 4096, 4096, 8192, 1808};
    pair_init(&ranges, dev, 3, 2, r);
    pair_init(&partials, dev, 3, 1, NULL);
    pair_init(&clip, dev, 1, 2, NULL);
    for (int side = 0; side < 2; side++) {
        cr_assert_eq(pgn_op_sumsq_ranges(side ? &x.d : &x.h, 3, side ? &ranges.d : &ranges.h,
                                         side ? &partials.d : &partials.h, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_clip_scale(3, side ? &partials.d : &partials.h, 10.0f, side ? &clip.d : &clip.h, &err), 0);
    }
    uint32_t *cv = assert_identical(&clip, 2, "clip");
    const float *xv = x.h.host;
    double ss = 0;
    for (int i = 0; i < 10000; i++) ss += (double)xv[i] * xv[i];
    cr_assert_float_eq((double)pgn_float(cv[0]), sqrt(ss), 1e-3);
    cr_assert_float_eq((double)pgn_float(cv[1]), 10.0 / sqrt(ss), 1e-6);
    free(cv);
    pair_release(&x);
    pair_release(&ranges);
    pair_release(&partials);
    pair_release(&clip);
}

Test(ops, global_norm_clipping) { global_norm_clipping(); }
Test(ops_gpu, global_norm_clipping) { global_norm_clipping(); }

static void gather_rows_and_loss_stats(void) {
    pgn_error err = {0};
    pair src, idx, dst, loss, pred, labels, stats;
    enum { COLS = 37 }; /* two 16-element vectors and a tail */
    pair_random(&src, dev, 10, COLS, 81, 1.0f);
    const int32_t order[6] = {9, 0, 4, 4, 7, 2};
    pair_init(&idx, dev, 6, 1, order);
    pair_init(&dst, dev, 4, COLS, NULL);
    const float lv[4] = {0.5f, 0.25f, 1.0f, 2.0f};
    const int32_t pv[4] = {1, 2, 3, 4}, yv[4] = {1, 0, 3, 0};
    pair_init(&loss, dev, 4, 1, lv);
    pair_init(&pred, dev, 4, 1, pv);
    pair_init(&labels, dev, 4, 1, yv);
    pair_init(&stats, dev, 3, 2, NULL);
    for (int side = 0; side < 2; side++) {
        cr_assert_eq(pgn_op_gather_rows(4, side ? &src.d : &src.h, side ? &idx.d : &idx.h, 2, side ? &dst.d : &dst.h, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_loss_stats(3, side ? &loss.d : &loss.h, side ? &pred.d : &pred.h, side ? &labels.d : &labels.h, side ? &stats.d : &stats.h, 1, &err), 0, "%s", err.message);
    }
    uint32_t *dv = assert_identical(&dst, 4 * COLS, "gather");
    const float *sv = src.h.host;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < COLS; c++)
            cr_assert_eq(pgn_float(dv[r * COLS + c]), sv[order[2 + r] * COLS + c]);
    uint32_t *st = assert_identical(&stats, 6, "stats");
    cr_assert_eq(pgn_float(st[2]), 1.75f);
    cr_assert_eq(pgn_float(st[3]), 2.0f);
    free(dv);
    free(st);
    pair *all[] = {&src, &idx, &dst, &loss, &pred, &labels, &stats};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
}

/* The documented order of a sum over a row (kernels/pgn_ops.h): 16 lanes, lane l summing terms
 * l, l + 16, ... in order, the lanes folded in halves. The loss sum of 1000 rows and the global
 * norm's total over 300 partials, on host and device, equal that order computed here, not the
 * sequential sum's bits (which differ for these values). */
static float lane_order_sum(int n, const float *x) {
    float p[16] = {0};
    for (int i = 0; i < n; i++) p[i % 16] = p[i % 16] + x[i];
    for (int h = 8; h > 0; h /= 2)
        for (int l = 0; l < h; l++) p[l] = p[l] + p[l + h];
    return p[0];
}

static void row_sums_run_in_lane_order(void) {
    pgn_error err = {0};
    enum { N = 1000, P = 300 };
    pair loss, pred, labels, stats, parts, clip;
    pair_random(&loss, dev, N, 1, 91, 3.0f);
    pair_random(&parts, dev, P, 1, 92, 5.0f);
    float *lv = loss.h.host, *pv = parts.h.host;
    for (int i = 0; i < N; i++) lv[i] = 1.0f / (float)(i + 3); /* inexact, unlike test_random's */
    cr_assert_eq(pgn_tensor_write(&loss.d, lv, N, &err), 0, "%s", err.message);
    for (int i = 0; i < P; i++) pv[i] = pv[i] * pv[i]; /* partials are sums of squares */
    pv[0] = 1e8f; /* a big first chunk: in order, each small one adds at most an ulp of it */
    cr_assert_eq(pgn_tensor_write(&parts.d, pv, P, &err), 0, "%s", err.message);
    int32_t zeros[N] = {0};
    pair_init(&pred, dev, N, 1, zeros);
    pair_init(&labels, dev, N, 1, zeros);
    pair_init(&stats, dev, 1, 2, NULL);
    pair_init(&clip, dev, 1, 2, NULL);
    for (int side = 0; side < 2; side++) {
        cr_assert_eq(pgn_op_loss_stats(N, side ? &loss.d : &loss.h, side ? &pred.d : &pred.h, side ? &labels.d : &labels.h,
                                       side ? &stats.d : &stats.h, 0, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_clip_scale(P, side ? &parts.d : &parts.h, 1.0f, side ? &clip.d : &clip.h, &err), 0, "%s", err.message);
    }
    uint32_t *st = assert_identical(&stats, 2, "stats"), *cv = assert_identical(&clip, 2, "clip");
    float seq = 0.0f, seq_parts = 0.0f;
    for (int i = 0; i < N; i++) seq += lv[i];
    for (int i = 0; i < P; i++) seq_parts += pv[i];
    cr_assert_eq(st[0], pgn_bits(lane_order_sum(N, lv)));
    cr_assert_neq(st[0], pgn_bits(seq), "the values should tell the orders apart");
    cr_assert_eq(pgn_float(st[1]), (float)N);
    cr_assert_eq(cv[0], pgn_bits(sqrtf(lane_order_sum(P, pv))));
    cr_assert_neq(lane_order_sum(P, pv), seq_parts, "the values should tell the orders apart");
    free(st);
    free(cv);
    pair *all[] = {&loss, &pred, &labels, &stats, &parts, &clip};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
}

Test(ops, row_sums_run_in_lane_order) { row_sums_run_in_lane_order(); }
Test(ops_gpu, row_sums_run_in_lane_order) { row_sums_run_in_lane_order(); }

Test(ops, gather_rows_and_loss_stats) { gather_rows_and_loss_stats(); }
Test(ops_gpu, gather_rows_and_loss_stats) { gather_rows_and_loss_stats(); }

Test(ops, kernel_build_failure_returns_the_compiler_log) {
    pgn_error err = {0};
    cl_program program = NULL;
    const char *broken = "__kernel void broken(__global float *x) { x[0] = undefined_name; }\n";
    cr_assert_eq(pgn_program_build(dev, broken, &program, &err), -1);
    cr_assert_null(program);
    cr_assert_str_eq(pgn_error_code_name(err.code), "kernel_build");
    cr_assert(strstr(err.message, "CL_BUILD_PROGRAM_FAILURE"), "%s", err.message);
    cr_assert(strstr(err.message, "undefined_name"), "the log names the bad identifier: %s",
              err.message);
}

Test(ops, device_ids_are_stable_across_enumerations) {
    pgn_error err = {0};
    pgn_device_info *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    cr_assert_eq(pgn_devices_list(&a, &na, &err), 0);
    cr_assert_eq(pgn_devices_list(&b, &nb, &err), 0);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_str_eq(a[i].id, b[i].id);
        for (size_t j = 0; j < i; j++) cr_assert_str_neq(a[i].id, a[j].id, "ids are unique");
        cr_assert_gt(a[i].compute_units, 0);
        cr_assert(strncmp(a[i].id, pgn_device_type_name(a[i].type), strlen(pgn_device_type_name(a[i].type))) == 0);
    }
    free(a);
    free(b);
}

/* The GEMM's fused bias + activation epilogue equals gemm then bias_act_forward, bit for bit,
 * on full and partial tiles and for the vector (ReLU, none) and scalar (GELU, tanh) paths. */
static void gemm_bias_act_epilogue_matches_separate_ops(void) {
    const int acts[] = {PGN_ACT_CODE_NONE, PGN_ACT_CODE_RELU, PGN_ACT_CODE_GELU, PGN_ACT_CODE_TANH};
    const int shapes[][3] = {{16, 64, 40}, {13, 37, 19}, {9, 256, 784}};
    for (size_t si = 0; si < 3; si++)
        for (size_t ai = 0; ai < 4; ai++) {
            int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], act = acts[ai];
            pgn_error err = {0};
            pair a, b, bias, z1, y1, z2, y2;
            pair_random(&a, dev, M, K, 91, 1.0f);
            pair_random(&b, dev, K, N, 92, 0.2f);
            pair_random(&bias, dev, 1, N, 93, 0.5f);
            pair_init(&z1, dev, M, N, NULL);
            pair_init(&y1, dev, M, N, NULL);
            pair_init(&z2, dev, M, N, NULL);
            pair_init(&y2, dev, M, N, NULL);
            cr_assert_eq(pgn_op_gemm_bias_act(M, N, K, &a.d, false, &b.d, false, &z1.d, &bias.d,
                                              act, &y1.d, &err), 0, "%s", err.message);
            cr_assert_eq(pgn_op_gemm(M, N, K, &a.d, false, &b.d, false, &z2.d, &err), 0);
            cr_assert_eq(pgn_op_bias_act_forward(M, &z2.d, &bias.d, act, &y2.d, &err), 0);
            cr_assert_eq(pgn_op_gemm_bias_act(M, N, K, &a.h, false, &b.h, false, &z1.h, &bias.h,
                                              act, &y1.h, &err), 0, "%s", err.message);
            size_t n = (size_t)M * N;
            uint32_t *fz = assert_identical(&z1, n, "fused z vs host");
            uint32_t *fy = assert_identical(&y1, n, "fused y vs host");
            uint32_t *sz = malloc(n * 4), *sy = malloc(n * 4);
            pgn_tensor_read(&z2.d, sz, n, &err);
            pgn_tensor_read(&y2.d, sy, n, &err);
            cr_assert_eq(memcmp(fz, sz, n * 4), 0, "z differs (shape %zu, act %d)", si, act);
            cr_assert_eq(memcmp(fy, sy, n * 4), 0, "y differs (shape %zu, act %d)", si, act);
            free(fz);
            free(fy);
            free(sz);
            free(sy);
            pair *all[] = {&a, &b, &bias, &z1, &y1, &z2, &y2};
            for (size_t i = 0; i < 7; i++) pair_release(all[i]);
        }
}
Test(ops, gemm_bias_act_epilogue_matches_separate_ops) { gemm_bias_act_epilogue_matches_separate_ops(); }
Test(ops_gpu, gemm_bias_act_epilogue_matches_separate_ops) { gemm_bias_act_epilogue_matches_separate_ops(); }

/* Text windows: random starts from the counter RNG and an evenly spread evaluation set, each
 * window's labels the tokens after its inputs, the same on host and device. */
Test(ops, windows_cut_a_text_into_inputs_and_next_tokens) {
    enum { N = 500, B = 6, T = 9 };
    int32_t tokens[N];
    for (int i = 0; i < N; i++) tokens[i] = i; /* token = position: starts can be read back */
    pair tok, x, y;
    pair_init(&tok, dev, N, 1, tokens);
    pair_init(&x, dev, B * T, 1, NULL);
    pair_init(&y, dev, B * T, 1, NULL);
    pgn_error err = {0};
    const pgn_window_plan plans[2] = {{.random = true, .seed = 5, .lo = 0, .span = 400 - T},
                                      {.random = false, .lo = 400, .span = N - 400 - T - 1, .total = 24}};
    for (int k = 0; k < 2; k++) {
        for (uint64_t index0 = 0; index0 < 24; index0 += B) {
            cr_assert_eq(pgn_op_windows(B, T, &tok.h, &plans[k], index0, &x.h, &y.h, &err), 0, "%s", err.message);
            cr_assert_eq(pgn_op_windows(B, T, &tok.d, &plans[k], index0, &x.d, &y.d, &err), 0, "%s", err.message);
            const int32_t *xs = (const int32_t *)assert_identical(&x, B * T, "windows x");
            const int32_t *ys = (const int32_t *)assert_identical(&y, B * T, "windows y");
            for (int b = 0; b < B; b++) {
                int start = xs[b * T];
                uint64_t i = index0 + (uint64_t)b;
                if (k == 0) cr_assert(start >= 0 && start < 400 - T, "training windows stay in the split");
                else cr_assert_eq(start, 400 + (int)(i * (N - 400 - T - 1) / 24));
                for (int t = 0; t < T; t++) {
                    cr_assert_eq(xs[b * T + t], start + t);
                    cr_assert_eq(ys[b * T + t], start + t + 1);
                }
            }
            free((void *)xs);
            free((void *)ys);
        }
    }
    pgn_window_plan outside = {.random = false, .lo = 400, .span = N - 400, .total = 4};
    cr_assert_eq(pgn_op_windows(B, T, &tok.h, &outside, 0, &x.h, &y.h, &err), -1, "a window past the end");
    pair_release(&tok);
    pair_release(&x);
    pair_release(&y);
}

/* The device's vector activations (the GEMM epilogue; bias + GELU, ReLU or none backward, a
 * float16 of columns at a time) against the host's scalar ones, bit for bit, over the values that
 * matter: a dense sweep through both branches of tanh and their edges, tiny and huge magnitudes,
 * signed zeros, infinities and NaN. */
Test(ops, vector_activations_match_the_scalar_bits_everywhere) {
    enum { M = 2048, NMAX = 32 + 7 };
    float *x = malloc(M * sizeof *x);
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-45f, 0.3f, -0.3f, 9.0f, -9.0f, 1e10f,
                             -1e10f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN, 0.29999998f, 8.999999f};
    int ns = (int)(sizeof special / sizeof *special);
    for (int i = 0; i < M; i++) x[i] = i < ns ? special[i] : -12.0f + 24.0f * (float)(i - ns) / (float)(M - ns);
    float ones[NMAX], zeros[NMAX];
    for (int j = 0; j < NMAX; j++) ones[j] = 1.0f, zeros[j] = 0.0f;
    /* Two whole column blocks and a partial one (the scalar tail), every activation. */
    const struct {
        int act, cols;
        const char *name;
    } cases[] = {{PGN_ACT_CODE_RELU, NMAX, "relu"}, {PGN_ACT_CODE_NONE, NMAX, "none"}, {PGN_ACT_CODE_GELU, NMAX, "gelu"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int N = cases[c].cols, act = cases[c].act;
        pair a, b, bias, z, y, dy, dz, db;
        pair_init(&a, dev, M, 1, x);
        pair_init(&b, dev, 1, N, ones);
        pair_init(&bias, dev, 1, N, zeros);
        pair_init(&z, dev, M, N, NULL);
        pair_init(&y, dev, M, N, NULL);
        pair_random(&dy, dev, M, N, 77, 1.0f);
        pair_init(&dz, dev, M, N, NULL);
        pair_init(&db, dev, 1, N, NULL);
        pgn_error err = {0};
        for (int k = 0; k < 2; k++) {
            pgn_tensor *t[3] = {k ? &a.d : &a.h, k ? &b.d : &b.h, k ? &bias.d : &bias.h};
            cr_assert_eq(pgn_op_gemm_bias_act(M, N, 1, t[0], false, t[1], false, k ? &z.d : &z.h, t[2], act,
                                              k ? &y.d : &y.h, &err), 0, "%s", err.message);
            cr_assert_eq(pgn_op_bias_act_backward(M, k ? &z.d : &z.h, k ? &y.d : &y.h, k ? &dy.d : &dy.h, act,
                                                  k ? &dz.d : &dz.h, k ? &db.d : &db.h, NULL, &err),
                         0, "%s", err.message);
        }
        char what[64];
        float *ys = (float *)assert_identical(&y, (size_t)M * N, cases[c].name);
        snprintf(what, sizeof what, "%s backward dz", cases[c].name);
        free(assert_identical(&dz, (size_t)M * N, what));
        snprintf(what, sizeof what, "%s backward db", cases[c].name);
        free(assert_identical(&db, N, what));
        for (int i = 0; act == PGN_ACT_CODE_GELU && i < M; i++) { /* and the scalar form is GELU */
            double v = x[i], want = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
            if (isfinite(v) && fabs(v) < 1e10)
                cr_assert_float_eq(ys[i * N], want, 2e-6 * (1 + fabs(want)), "gelu(%g)", v);
        }
        free(ys);
        pair *all[] = {&a, &b, &bias, &z, &y, &dy, &dz, &db};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
    }
    free(x);
}
