/* test_ops.c: every tensor op on the OpenCL device against the host reference, bit for bit,
 * and the host reference against double-precision math, so identical-but-wrong cannot pass. */
#include <math.h>
#include <string.h>

#include "engine_helpers.h"

static pgn_device *dev;

static void setup(void) { dev = test_open_cl_device(); }
static void teardown(void) { pgn_device_close(dev); }

TestSuite(ops, .init = setup, .fini = teardown);

/* The same data on the host and on the device. */
typedef struct {
    pgn_tensor h, d;
} pair;

static void pair_init(pair *p, int rows, int cols, const void *data) {
    pgn_error err = {0};
    cr_assert_eq(pgn_tensor_init(&p->h, NULL, rows, cols, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_init(&p->d, dev, rows, cols, &err), 0, "%s", err.message);
    if (data) {
        size_t n = (size_t)rows * cols;
        cr_assert_eq(pgn_tensor_write(&p->h, data, n, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_tensor_write(&p->d, data, n, &err), 0, "%s", err.message);
    }
}

static void pair_random(pair *p, int rows, int cols, uint64_t seed, float scale) {
    float *v = test_random((size_t)rows * cols, seed, scale);
    pair_init(p, rows, cols, v);
    free(v);
}

static void pair_release(pair *p) {
    pgn_tensor_release(&p->h);
    pgn_tensor_release(&p->d);
}

/* Asserts the first count elements are bit-identical on host and device; returns the host copy
 * (caller frees) for value checks. */
static uint32_t *assert_identical(pair *p, size_t count, const char *what) {
    pgn_error err = {0};
    uint32_t *h = malloc(count * 4), *d = malloc(count * 4);
    cr_assert(h && d);
    cr_assert_eq(pgn_tensor_read(&p->h, h, count, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(&p->d, d, count, &err), 0, "%s", err.message);
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(h[i], d[i], "%s[%zu]: host %08x (%g) != device %08x (%g)", what, i, h[i],
                     (double)pgn_float(h[i]), d[i], (double)pgn_float(d[i]));
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
    pair_random(&a, ta ? K : M, ta ? M : K, 11, 1.0f);
    pair_random(&b, tb ? N : K, tb ? K : N, 12, 1.0f);
    pair_init(&c, M, N, NULL);
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
    pair_init(&a, 2, 3, NULL);
    pair_init(&b, 3, 4, NULL);
    pair_init(&c, 2, 2, NULL); /* too small for (2, 4) */
    cr_assert_eq(pgn_op_gemm(2, 4, 3, &a.d, false, &b.d, false, &c.d, &err), -1);
    cr_assert_str_eq(err.message, "gemm: C too small");
    cr_assert_eq(pgn_op_gemm(2, 4, 3, &a.h, false, &b.d, false, &c.d, &err), -1);
    cr_assert_str_eq(err.message, "gemm: tensors on different devices");
    pair_release(&a);
    pair_release(&b);
    pair_release(&c);
}

Test(ops, bias_add_on_a_short_batch) {
    pgn_error err = {0};
    pair x, bias;
    pair_random(&x, 6, 10, 21, 2.0f);
    pair_random(&bias, 1, 10, 22, 1.0f);
    float *before = test_random(60, 21, 2.0f);
    cr_assert_eq(pgn_op_bias_add(4, &x.h, &bias.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_bias_add(4, &x.d, &bias.d, &err), 0, "%s", err.message);
    uint32_t *v = assert_identical(&x, 60, "bias_add");
    const float *bv = bias.h.host;
    for (int i = 0; i < 60; i++) {
        float want = i < 40 ? before[i] + bv[i % 10] : before[i]; /* rows past 4 untouched */
        cr_assert_eq(pgn_float(v[i]), want, "x[%d]", i);
    }
    free(v);
    free(before);
    pair_release(&x);
    pair_release(&bias);
}

Test(ops, relu_forward_and_backward) {
    pgn_error err = {0};
    pair x, y, dy, dx;
    pair_random(&x, 8, 16, 31, 1.0f);
    pair_random(&dy, 8, 16, 32, 1.0f);
    pair_init(&y, 8, 16, NULL);
    pair_init(&dx, 8, 16, NULL);
    cr_assert_eq(pgn_op_relu_forward(8, &x.h, &y.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_relu_forward(8, &x.d, &y.d, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_relu_backward(8, &x.h, &dy.h, &dx.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_relu_backward(8, &x.d, &dy.d, &dx.d, &err), 0, "%s", err.message);
    uint32_t *yv = assert_identical(&y, 128, "relu_forward");
    uint32_t *dxv = assert_identical(&dx, 128, "relu_backward");
    const float *xv = x.h.host, *dyv = dy.h.host;
    int positives = 0;
    for (int i = 0; i < 128; i++) {
        positives += xv[i] > 0;
        cr_assert_eq(pgn_float(yv[i]), xv[i] > 0 ? xv[i] : 0.0f);
        cr_assert_eq(pgn_float(dxv[i]), xv[i] > 0 ? dyv[i] : 0.0f);
    }
    cr_assert(positives > 20 && positives < 108, "test data should mix signs");
    free(yv);
    free(dxv);
    pair_release(&x);
    pair_release(&y);
    pair_release(&dy);
    pair_release(&dx);
}

Test(ops, colsum_sums_rows_in_order) {
    pgn_error err = {0};
    pair x, out;
    pair_random(&x, 37, 5, 41, 3.0f);
    pair_init(&out, 1, 5, NULL);
    cr_assert_eq(pgn_op_colsum(37, &x.h, &out.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_colsum(37, &x.d, &out.d, &err), 0, "%s", err.message);
    uint32_t *v = assert_identical(&out, 5, "colsum");
    const float *xv = x.h.host;
    for (int j = 0; j < 5; j++) {
        float want = 0.0f;
        for (int r = 0; r < 37; r++) want += xv[r * 5 + j];
        cr_assert_eq(pgn_float(v[j]), want, "column %d", j);
    }
    free(v);
    pair_release(&x);
    pair_release(&out);
}

Test(ops, softmax_xent_matches_double_reference) {
    pgn_error err = {0};
    enum { R = 33, C = 10 };
    pair logits, labels, dlogits, loss, pred;
    pair_random(&logits, R, C, 51, 8.0f);
    int32_t lab[R];
    for (int r = 0; r < R; r++) lab[r] = (int32_t)(pgn_rand64(5, 5, (uint64_t)r) % C);
    pair_init(&labels, R, 1, lab);
    pair_init(&dlogits, R, C, NULL);
    pair_init(&loss, R, 1, NULL);
    pair_init(&pred, R, 1, NULL);
    float scale = 1.0f / R;
    cr_assert_eq(pgn_op_softmax_xent(R, &logits.h, &labels.h, scale, &dlogits.h, &loss.h, &pred.h,
                                     &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_softmax_xent(R, &logits.d, &labels.d, scale, &dlogits.d, &loss.d, &pred.d,
                                     &err), 0, "%s", err.message);
    uint32_t *dv = assert_identical(&dlogits, R * C, "dlogits");
    uint32_t *lv = assert_identical(&loss, R, "loss");
    uint32_t *pv = assert_identical(&pred, R, "pred");
    const float *x = logits.h.host;
    for (int r = 0; r < R; r++) {
        double mx = x[r * C], sum = 0;
        int arg = 0;
        for (int j = 1; j < C; j++)
            if (x[r * C + j] > mx) mx = x[r * C + j], arg = j;
        for (int j = 0; j < C; j++) sum += exp((double)x[r * C + j] - mx);
        double want_loss = log(sum) - ((double)x[r * C + lab[r]] - mx);
        cr_assert_float_eq((double)pgn_float(lv[r]), want_loss, 1e-5 + 1e-5 * want_loss, "loss[%d]", r);
        cr_assert_eq((int32_t)pv[r], arg, "pred[%d]", r);
        for (int j = 0; j < C; j++) {
            double p = exp((double)x[r * C + j] - mx) / sum;
            double want = (p - (j == lab[r])) / R;
            cr_assert_float_eq((double)pgn_float(dv[r * C + j]), want, 1e-7, "dlogits[%d][%d]", r, j);
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

Test(ops, sgd_momentum_updates_weights_and_velocity) {
    pgn_error err = {0};
    pair w, g, v;
    pair_random(&w, 13, 7, 61, 1.0f);
    pair_random(&g, 13, 7, 62, 0.5f);
    pair_random(&v, 13, 7, 63, 0.1f);
    for (int step = 0; step < 3; step++) {
        cr_assert_eq(pgn_op_sgd_momentum(&w.h, &g.h, &v.h, 0.05f, 0.9f, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_sgd_momentum(&w.d, &g.d, &v.d, 0.05f, 0.9f, &err), 0, "%s", err.message);
    }
    uint32_t *wv = assert_identical(&w, 91, "w");
    uint32_t *vv = assert_identical(&v, 91, "v");
    float *w0 = test_random(91, 61, 1.0f), *g0 = test_random(91, 62, 0.5f), *v0 = test_random(91, 63, 0.1f);
    for (int i = 0; i < 91; i++) {
        double wd = w0[i], vd = v0[i];
        for (int step = 0; step < 3; step++) {
            vd = 0.9 * vd + g0[i];
            wd -= 0.05 * vd;
        }
        cr_assert_float_eq((double)pgn_float(wv[i]), wd, 1e-6, "w[%d]", i);
        cr_assert_float_eq((double)pgn_float(vv[i]), vd, 1e-6, "v[%d]", i);
    }
    free(w0);
    free(g0);
    free(v0);
    free(wv);
    free(vv);
    pair_release(&w);
    pair_release(&g);
    pair_release(&v);
}

Test(ops, kernel_build_failure_returns_the_compiler_log) {
    pgn_error err = {0};
    cl_program program = NULL;
    const char *broken = "__kernel void broken(__global float *x) { x[0] = undefined_name; }\n";
    cr_assert_eq(pgn_program_build(dev, broken, &program, &err), -1);
    cr_assert_null(program);
    cr_assert_str_eq(err.code, "kernel_build");
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
