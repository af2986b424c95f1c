/* test_ops_gpt.c: the transformer ops (token + position embedding, LayerNorm, causal multi-head
 * self-attention) on the OpenCL device against the host reference bit for bit, and the host
 * against double-precision math: forward values directly, gradients against central differences
 * of the double forward, so identical-but-wrong cannot pass. */
#include <math.h>
#include <string.h>

#include "engine_helpers.h"

static pgn_device *dev;

static void setup(void) { dev = test_open_cl_device(); }
static void teardown(void) { pgn_device_close(dev); }

TestSuite(gpt, .init = setup, .fini = teardown);

/* The same checks with the gpu family's row and column kernels (kernels/tensor_gpu.cl) on pocl. */
static void setup_gpu(void) {
    setenv("PARAGON_KERNELS", "gpu", 1);
    dev = test_open_cl_device();
    cr_assert_eq(pgn_device_get_profile(dev)->family[PGN_OPS_ROWS], PGN_FAMILY_GPU);
}
TestSuite(gpt_gpu, .init = setup_gpu, .fini = teardown);

/* Outputs start as this NaN on both sides: an element an op should write and did not keeps it,
 * and one it should leave alone must still hold it. */
#define SENTINEL_BITS 0x7fc0deadu

static void pair_sentinel(pair *p, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    uint32_t *v = malloc(n * 4);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) v[i] = SENTINEL_BITS;
    pair_init(p, dev, rows, cols, v);
    free(v);
}


static const float *host(const pair *p) { return p->h.host; }
static uint32_t bits_at(const pair *p, size_t i) { return pgn_bits(host(p)[i]); }

/* The whole tensor is bit-identical on host and device. */
static void assert_identical(const pair *p, const char *what) {
    pgn_error err = {0};
    size_t n = pgn_tensor_count(&p->h);
    uint32_t *d = malloc(n * 4);
    cr_assert_not_null(d);
    cr_assert_eq(pgn_tensor_read(&p->d, d, n, &err), 0, "%s", err.message);
    if (memcmp(d, p->h.host, n * 4)) {
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(d[i], bits_at(p, i), "%s[%zu]: host %08x (%g) != device %08x (%g)", what,
                         i, bits_at(p, i), (double)host(p)[i], d[i], (double)pgn_float(d[i]));
    }
    free(d);
}

/* |got - want| <= abs + rel |want|. */
static void assert_near(double got, double want, double abs, double rel, const char *what,
                        size_t i) {
    cr_assert(fabs(got - want) <= abs + rel * fabs(want), "%s[%zu] = %.9g, want %.9g", what, i, got,
              want);
}

/* ---- embedding ---------------------------------------------------------------------------- */

enum { EV = 11, EC = 19, ET = 5, EP = 7, EB = 3, EROWS = EB * ET, EALLOC = EROWS + 2 };
/* Ids repeat (3 four times, 0 four times) and 1, 4, 6 and 8 never occur among the first EROWS
 * rows; the rows past them (a short batch) hold 1 and 4, which must not count. */
static const int32_t tokens[EALLOC] = {3, 3, 0, 7, 3, 10, 0, 0, 7, 2, 3, 5, 5, 0, 9, 1, 4};

Test(gpt, embedding_adds_the_token_and_position_rows) {
    pgn_error err = {0};
    pair tok, wte, wpe, y;
    pair_init(&tok, dev, EALLOC, 1, tokens);
    pair_random(&wte, dev, EV, EC, 1, 1.0f);
    pair_random(&wpe, dev, EP, EC, 2, 1.0f);
    pair_sentinel(&y, EALLOC, EC);
    cr_assert_eq(pgn_op_embed_forward(EROWS, ET, &tok.h, &wte.h, &wpe.h, &y.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_embed_forward(EROWS, ET, &tok.d, &wte.d, &wpe.d, &y.d, &err), 0, "%s", err.message);
    assert_identical(&y, "y");
    for (int r = 0; r < EALLOC; r++)
        for (int c = 0; c < EC; c++) {
            size_t i = (size_t)r * EC + c;
            if (r >= EROWS) {
                cr_assert_eq(bits_at(&y, i), SENTINEL_BITS, "y row %d is past rows", r);
                continue;
            }
            float want = host(&wte)[tokens[r] * EC + c] + host(&wpe)[(r % ET) * EC + c];
            cr_assert_eq(host(&y)[i], want, "y[%d][%d]", r, c);
        }
    pair *all[] = {&tok, &wte, &wpe, &y};
    for (size_t i = 0; i < 4; i++) pair_release(all[i]);
}

static void embedding_backward_sums_rows_per_token_and_position_in_row_order(void) {
    pgn_error err = {0};
    pair tok, dy, dwte, dwpe;
    pair_init(&tok, dev, EALLOC, 1, tokens);
    pair_random(&dy, dev, EALLOC, EC, 3, 1.0f);
    pair_sentinel(&dwte, EV, EC);
    pair_sentinel(&dwpe, EP, EC);
    cr_assert_eq(pgn_op_embed_backward(EROWS, ET, &tok.h, &dy.h, &dwte.h, &dwpe.h, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_embed_backward(EROWS, ET, &tok.d, &dy.d, &dwte.d, &dwpe.d, &err), 0, "%s", err.message);
    assert_identical(&dwte, "dwte");
    assert_identical(&dwpe, "dwpe");
    const float *g = host(&dy);
    for (int v = 0; v < EV; v++) {
        int count = 0;
        for (int c = 0; c < EC; c++) {
            float acc = 0.0f; /* the float sum in row order: the bits the op promises */
            double want = 0;
            count = 0;
            for (int r = 0; r < EROWS; r++)
                if (tokens[r] == v) {
                    acc += g[r * EC + c];
                    want += g[r * EC + c];
                    count++;
                }
            size_t i = (size_t)v * EC + c;
            cr_assert_eq(bits_at(&dwte, i), pgn_bits(acc), "dwte[%d][%d] is not the row-order sum", v, c);
            assert_near(host(&dwte)[i], want, 1e-6, 1e-6, "dwte", i);
            if (!count) cr_assert_eq(bits_at(&dwte, i), 0u, "dwte row %d: a token that never occurs", v);
        }
        bool absent = v == 1 || v == 4 || v == 6 || v == 8;
        cr_assert_eq(count == 0, absent, "token %d occurs %d times", v, count);
    }
    for (int t = 0; t < EP; t++)
        for (int c = 0; c < EC; c++) {
            float acc = 0.0f;
            for (int b = 0; t < ET && b < EB; b++) acc += g[(b * ET + t) * EC + c];
            cr_assert_eq(bits_at(&dwpe, (size_t)t * EC + c), pgn_bits(acc), "dwpe[%d][%d]", t, c);
        }
    /* either gradient alone gives the same bits */
    pair dwte2, dwpe2;
    pair_sentinel(&dwte2, EV, EC);
    pair_sentinel(&dwpe2, EP, EC);
    cr_assert_eq(pgn_op_embed_backward(EROWS, ET, &tok.d, &dy.d, &dwte2.d, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_embed_backward(EROWS, ET, &tok.d, &dy.d, NULL, &dwpe2.d, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_embed_backward(EROWS, ET, &tok.h, &dy.h, &dwte2.h, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_embed_backward(EROWS, ET, &tok.h, &dy.h, NULL, &dwpe2.h, &err), 0, "%s", err.message);
    assert_identical(&dwte2, "dwte alone");
    assert_identical(&dwpe2, "dwpe alone");
    cr_assert_eq(memcmp(dwte2.h.host, dwte.h.host, sizeof(float) * EV * EC), 0);
    cr_assert_eq(memcmp(dwpe2.h.host, dwpe.h.host, sizeof(float) * EP * EC), 0);
    pair *all[] = {&tok, &dy, &dwte, &dwpe, &dwte2, &dwpe2};
    for (size_t i = 0; i < 6; i++) pair_release(all[i]);
}
Test(gpt, embedding_backward_sums_rows_per_token_and_position_in_row_order) { embedding_backward_sums_rows_per_token_and_position_in_row_order(); }
Test(gpt_gpu, embedding_backward_sums_rows_per_token_and_position_in_row_order) { embedding_backward_sums_rows_per_token_and_position_in_row_order(); }

Test(gpt, embedding_refuses_unknown_tokens_and_wrong_shapes) {
    pgn_error err = {0};
    pair tok, wte, wpe, y;
    int32_t bad[EALLOC];
    memcpy(bad, tokens, sizeof bad);
    bad[2] = EV;
    pair_init(&tok, dev, EALLOC, 1, bad);
    pair_random(&wte, dev, EV, EC, 1, 1.0f);
    pair_random(&wpe, dev, ET - 1, EC, 2, 1.0f); /* P < T */
    pair_sentinel(&y, EALLOC, EC);
    cr_assert_eq(pgn_op_embed_forward(EROWS, ET - 1, &tok.h, &wte.h, &wpe.h, &y.h, &err), -1);
    cr_assert_str_eq(err.message, "embed: rows = 15 is not a positive multiple of T = 4");
    cr_assert_eq(pgn_op_embed_forward(EROWS, ET, &tok.h, &wte.h, &wpe.h, &y.h, &err), -1);
    cr_assert_str_eq(err.message, "embed: wpe is (4, 19), needs 19 columns and at least 5 rows");
    cr_assert_eq(pgn_op_embed_forward(ET, ET, &tok.h, &wte.h, &wte.h, &y.h, &err), -1);
    cr_assert_str_eq(err.message, "embed: tok[2] = 11 is not a token id (V = 11)");
    cr_assert_eq(pgn_op_embed_backward(ET, ET, &tok.h, &y.h, &wte.h, NULL, &err), -1);
    cr_assert_str_eq(err.message, "embed_backward: tok[2] = 11 is not a token id (V = 11)");
    cr_assert_eq(pgn_op_embed_forward(EROWS, ET, &tok.d, &wte.h, &wpe.d, &y.d, &err), -1);
    cr_assert_str_eq(err.message, "embed: tensors on different devices");
    pair *all[] = {&tok, &wte, &wpe, &y};
    for (size_t i = 0; i < 4; i++) pair_release(all[i]);
}

/* ---- LayerNorm ------------------------------------------------------------------------------ */

/* sum_c y_c g_c of one row of LayerNorm in double: the loss whose gradient the backward gives. */
static double layernorm_row_loss(int C, const double *x, const double *w, const double *b,
                                 const float *g, double *mean_out, double *rstd_out) {
    double mean = 0, var = 0, loss = 0;
    for (int c = 0; c < C; c++) mean += x[c];
    mean /= C;
    for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
    double rstd = 1 / sqrt(var / C + (double)PGN_LAYERNORM_EPS);
    for (int c = 0; c < C; c++) loss += ((x[c] - mean) * rstd * w[c] + b[c]) * g[c];
    if (mean_out) *mean_out = mean, *rstd_out = rstd;
    return loss;
}

static double *to_double(const float *v, size_t n) {
    double *d = malloc(n * sizeof *d);
    cr_assert_not_null(d);
    for (size_t i = 0; i < n; i++) d[i] = v[i];
    return d;
}

/* Forward and backward of rows rows (of alloc) with C columns; dw and db also checked when the
 * device computes them alone, or neither. */
static void check_layernorm(int rows, int alloc, int C, uint64_t seed) {
    pgn_error err = {0};
    pair x, w, b, y, stats, dy, dx, dw, db;
    float *xv = test_random((size_t)alloc * C, seed, 2.0f);
    for (int i = 0; i < alloc * C; i++) xv[i] += 0.75f; /* rows with a mean to remove */
    pair_init(&x, dev, alloc, C, xv);
    free(xv);
    float *wv = test_random((size_t)C, seed + 1, 0.5f);
    for (int c = 0; c < C; c++) wv[c] += 1.0f;
    pair_init(&w, dev, 1, C, wv);
    free(wv);
    pair_random(&b, dev, 1, C, seed + 2, 0.5f);
    pair_random(&dy, dev, alloc, C, seed + 3, 1.0f);
    pair_sentinel(&y, alloc, C);
    pair_sentinel(&stats, alloc, 2);
    pair_sentinel(&dx, alloc, C);
    pair_sentinel(&dw, 1, C);
    pair_sentinel(&db, 1, C);
    for (int side = 0; side < 2; side++) {
#define S(p) (side ? &(p).d : &(p).h)
        cr_assert_eq(pgn_op_layernorm_forward(rows, S(x), S(w), S(b), S(y), S(stats), &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_layernorm_backward(rows, S(x), S(w), S(stats), S(dy), S(dx), S(dw), S(db), false, NULL, &err), 0,
                     "%s", err.message);
#undef S
    }
    assert_identical(&y, "y");
    assert_identical(&stats, "stats");
    assert_identical(&dx, "dx");
    assert_identical(&dw, "dw");
    assert_identical(&db, "db");

    double *xd = to_double(host(&x), (size_t)alloc * C), *wd = to_double(host(&w), C),
           *bd = to_double(host(&b), C);
    const float *g = host(&dy);
    const double h = 1e-4;
    for (int r = 0; r < alloc; r++) {
        size_t o = (size_t)r * C;
        if (r >= rows) {
            for (int c = 0; c < C; c++) {
                cr_assert_eq(bits_at(&y, o + c), SENTINEL_BITS, "y row %d is past rows", r);
                cr_assert_eq(bits_at(&dx, o + c), SENTINEL_BITS, "dx row %d is past rows", r);
            }
            cr_assert_eq(bits_at(&stats, 2 * (size_t)r), SENTINEL_BITS);
            continue;
        }
        double mean, rstd;
        layernorm_row_loss(C, xd + o, wd, bd, g + o, &mean, &rstd);
        assert_near(host(&stats)[2 * r], mean, 1e-6, 1e-6, "mean", (size_t)r);
        assert_near(host(&stats)[2 * r + 1], rstd, 0, 1e-5, "rstd", (size_t)r);
        for (int c = 0; c < C; c++) {
            assert_near(host(&y)[o + c], (xd[o + c] - mean) * rstd * wd[c] + bd[c], 1e-5, 1e-5, "y", o + c);
            double keep = xd[o + c];
            xd[o + c] = keep + h;
            double lp = layernorm_row_loss(C, xd + o, wd, bd, g + o, NULL, NULL);
            xd[o + c] = keep - h;
            double lm = layernorm_row_loss(C, xd + o, wd, bd, g + o, NULL, NULL);
            xd[o + c] = keep;
            assert_near(host(&dx)[o + c], (lp - lm) / (2 * h), 1e-4, 1e-3, "dx", o + c);
        }
    }
    /* dw, db: the loss of every row moves with one weight */
    for (int c = 0; c < C; c++)
        for (int which = 0; which < 2; which++) {
            double *p = which ? bd : wd, keep = p[c], lp = 0, lm = 0;
            for (int r = 0; r < rows; r++) {
                size_t o = (size_t)r * C;
                p[c] = keep + h;
                lp += layernorm_row_loss(C, xd + o, wd, bd, g + o, NULL, NULL);
                p[c] = keep - h;
                lm += layernorm_row_loss(C, xd + o, wd, bd, g + o, NULL, NULL);
            }
            p[c] = keep;
            assert_near(which ? host(&db)[c] : host(&dw)[c], (lp - lm) / (2 * h), 1e-4, 1e-3,
                        which ? "db" : "dw", (size_t)c);
        }
    free(xd);
    free(wd);
    free(bd);

    /* dw alone, db alone, neither: dx and the one asked for keep their bits */
    pair dx2, dw2, db2;
    pair_sentinel(&dx2, alloc, C);
    pair_sentinel(&dw2, 1, C);
    pair_sentinel(&db2, 1, C);
    for (int side = 0; side < 2; side++) {
#define S(p) (side ? &(p).d : &(p).h)
        cr_assert_eq(pgn_op_layernorm_backward(rows, S(x), S(w), S(stats), S(dy), S(dx2), S(dw2), NULL, false, NULL, &err), 0,
                     "%s", err.message);
        cr_assert_eq(pgn_op_layernorm_backward(rows, S(x), S(w), S(stats), S(dy), S(dx2), NULL, S(db2), false, NULL, &err), 0,
                     "%s", err.message);
        cr_assert_eq(pgn_op_layernorm_backward(rows, S(x), S(w), S(stats), S(dy), S(dx2), NULL, NULL, false, NULL, &err), 0,
                     "%s", err.message);
#undef S
    }
    assert_identical(&dx2, "dx, no dw or db");
    assert_identical(&dw2, "dw alone");
    assert_identical(&db2, "db alone");
    cr_assert_eq(memcmp(dx2.h.host, dx.h.host, sizeof(float) * alloc * C), 0);
    cr_assert_eq(memcmp(dw2.h.host, dw.h.host, sizeof(float) * C), 0);
    cr_assert_eq(memcmp(db2.h.host, db.h.host, sizeof(float) * C), 0);

    /* add_dx: dx3 += dx, the bits of writing dx and adding it (a gradient's second contribution) */
    pair dx3;
    float *before = test_random((size_t)alloc * C, seed + 4, 1.0f);
    pair_init(&dx3, dev, alloc, C, before);
    for (int side = 0; side < 2; side++)
        cr_assert_eq(pgn_op_layernorm_backward(rows, side ? &x.d : &x.h, side ? &w.d : &w.h, side ? &stats.d : &stats.h,
                                               side ? &dy.d : &dy.h, side ? &dx3.d : &dx3.h, NULL, NULL, true, NULL, &err),
                     0, "%s", err.message);
    assert_identical(&dx3, "dx added");
    const float *d1 = dx.h.host, *d3 = dx3.h.host;
    for (size_t i = 0; i < (size_t)alloc * C; i++) {
        float want = i < (size_t)rows * C ? before[i] + d1[i] : before[i];
        cr_assert_eq(pgn_bits(d3[i]), pgn_bits(want), "dx3[%zu]", i);
    }
    free(before);
    pair *all[] = {&x, &w, &b, &y, &stats, &dy, &dx, &dw, &db, &dx2, &dw2, &db2, &dx3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
}

/* rows and columns that fill no block of 16, on a short batch */
Test(gpt, layernorm_on_awkward_shapes_matches_double_math_and_the_device) { check_layernorm(37, 40, 19, 10); }
Test(gpt_gpu, layernorm_on_awkward_shapes_matches_double_math_and_the_device) { check_layernorm(37, 40, 19, 10); }
Test(gpt, layernorm_at_the_char_gpt_width) { check_layernorm(64, 64, 128, 20); }
Test(gpt_gpu, layernorm_at_the_char_gpt_width) { check_layernorm(64, 64, 128, 20); }

Test(gpt, layernorm_refuses_wrong_shapes) {
    pgn_error err = {0};
    pair x, w, b, y, stats;
    pair_random(&x, dev, 4, 19, 1, 1.0f);
    pair_random(&w, dev, 1, 18, 2, 1.0f);
    pair_random(&b, dev, 1, 19, 3, 1.0f);
    pair_sentinel(&y, 4, 19);
    pair_sentinel(&stats, 3, 2);
    cr_assert_eq(pgn_op_layernorm_forward(4, &x.d, &w.d, &b.d, &y.d, &stats.d, &err), -1);
    cr_assert_str_eq(err.message, "layernorm: stats has 6 elements, needs at least 8");
    cr_assert_eq(pgn_op_layernorm_forward(3, &x.d, &w.d, &b.d, &y.d, &stats.d, &err), -1);
    cr_assert_str_eq(err.message, "layernorm: w and b have 18 and 19 elements, need C = 19");
    cr_assert_eq(pgn_op_layernorm_backward(3, &x.h, &b.h, &stats.h, &y.h, &y.h, &w.h, NULL, false, NULL, &err), -1);
    cr_assert_str_eq(err.message, "layernorm_backward: dw and db must have C = 19 elements");
    cr_assert_eq(pgn_op_layernorm_backward(3, &x.h, &b.h, &stats.d, &y.h, &y.h, NULL, NULL, false, NULL, &err), -1);
    cr_assert_str_eq(err.message, "layernorm_backward: tensors on different devices");
    pair *all[] = {&x, &w, &b, &y, &stats};
    for (size_t i = 0; i < 5; i++) pair_release(all[i]);
}

/* ---- attention ---------------------------------------------------------------------------- */

typedef struct {
    int B, T, H, hd;
} att_shape;

/* sum over t, d of y[t][d] dy[t][d] for sequence b, head h, in double (q, k, v from qkv with
 * 3C columns); p (T*T) receives the attention weights when given. */
static double attention_loss(att_shape s, const double *qkv, const float *dy, int b, int h,
                             double *p) {
    int C = s.H * s.hd, T = s.T;
    double loss = 0, *w = malloc(sizeof(double) * T);
    cr_assert_not_null(w);
    for (int t = 0; t < T; t++) {
        const double *q = qkv + (size_t)(b * T + t) * 3 * C + h * s.hd;
        double mx = -INFINITY, sum = 0;
        for (int u = 0; u <= t; u++) {
            const double *k = qkv + (size_t)(b * T + u) * 3 * C + C + h * s.hd;
            double dot = 0;
            for (int d = 0; d < s.hd; d++) dot += q[d] * k[d];
            w[u] = dot / sqrt((double)s.hd);
            mx = fmax(mx, w[u]);
        }
        for (int u = 0; u <= t; u++) sum += w[u] = exp(w[u] - mx);
        for (int u = 0; u <= t; u++) w[u] /= sum;
        for (int d = 0; d < s.hd; d++) {
            double y = 0;
            for (int u = 0; u <= t; u++) y += w[u] * qkv[(size_t)(b * T + u) * 3 * C + 2 * C + h * s.hd + d];
            loss += y * dy[(size_t)(b * T + t) * C + h * s.hd + d];
        }
        if (p)
            for (int u = 0; u < T; u++) p[t * T + u] = u <= t ? w[u] : 0;
    }
    free(w);
    return loss;
}

/* Forward and backward on a short batch (2 rows more than rows allocated everywhere, att and
 * scratch 5 elements longer): bits against the device, values against double math, dqkv
 * against central differences at every grad_stride-th element. */
static void check_attention(att_shape s, uint64_t seed, float scale, int grad_stride) {
    pgn_error err = {0};
    int C = s.H * s.hd, T = s.T, rows = s.B * T, alloc = rows + 2;
    size_t natt = (size_t)s.B * s.H * T * T;
    pair qkv, att, y, dy, scratch, dqkv;
    pair_random(&qkv, dev, alloc, 3 * C, seed, scale);
    pair_random(&dy, dev, alloc, C, seed + 1, 1.0f);
    pair_sentinel(&att, 1, (int)natt + 5);
    pair_sentinel(&scratch, 1, (int)natt + 5);
    pair_sentinel(&y, alloc, C);
    pair_sentinel(&dqkv, alloc, 3 * C);
    for (int side = 0; side < 2; side++) {
#define S(p) (side ? &(p).d : &(p).h)
        cr_assert_eq(pgn_op_attention_forward(rows, T, s.H, S(qkv), S(att), S(y), &err), 0, "%s", err.message);
        cr_assert_eq(pgn_op_attention_backward(rows, T, s.H, S(qkv), S(att), S(dy), S(scratch), S(dqkv), &err), 0,
                     "%s", err.message);
#undef S
    }
    assert_identical(&att, "att");
    assert_identical(&y, "y");
    assert_identical(&scratch, "scratch");
    assert_identical(&dqkv, "dqkv");

    for (size_t i = natt; i < natt + 5; i++) {
        cr_assert_eq(bits_at(&att, i), SENTINEL_BITS, "att[%zu] is past B H T T", i);
        cr_assert_eq(bits_at(&scratch, i), SENTINEL_BITS, "scratch[%zu] is past B H T T", i);
    }
    for (size_t i = (size_t)rows * C; i < (size_t)alloc * C; i++)
        cr_assert_eq(bits_at(&y, i), SENTINEL_BITS, "y[%zu] is past rows", i);
    for (size_t i = (size_t)rows * 3 * C; i < (size_t)alloc * 3 * C; i++)
        cr_assert_eq(bits_at(&dqkv, i), SENTINEL_BITS, "dqkv[%zu] is past rows", i);

    double *qd = to_double(host(&qkv), (size_t)alloc * 3 * C), *p = malloc(sizeof(double) * T * T);
    cr_assert_not_null(p);
    const float *g = host(&dy);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.H; h++) {
            attention_loss(s, qd, g, b, h, p);
            size_t base = ((size_t)b * s.H + h) * T * T;
            for (int t = 0; t < T; t++) {
                double sum = 0;
                for (int u = 0; u < T; u++) {
                    size_t i = base + (size_t)t * T + u;
                    if (u > t) cr_assert_eq(bits_at(&att, i), 0u, "att[%d][%d][%d][%d]: the mask", b, h, t, u);
                    if (u > t) cr_assert_eq(bits_at(&scratch, i), 0u, "ds[%d][%d][%d][%d]: the mask", b, h, t, u);
                    assert_near(host(&att)[i], p[t * T + u], 1e-6, 1e-5, "att", i);
                    sum += host(&att)[i];
                }
                cr_assert(fabs(sum - 1) < 1e-5, "att row (%d, %d, %d) sums to %.9g", b, h, t, sum);
                for (int d = 0; d < s.hd; d++) {
                    size_t i = (size_t)(b * T + t) * C + h * s.hd + d;
                    double want = 0;
                    for (int u = 0; u <= t; u++)
                        want += p[t * T + u] * qd[(size_t)(b * T + u) * 3 * C + 2 * C + h * s.hd + d];
                    assert_near(host(&y)[i], want, 1e-5, 1e-5, "y", i);
                }
            }
        }
    /* dL/dqkv, L = sum y dy, by central differences: an element moves only its (b, h)'s loss */
    const double eps = 1e-4;
    for (size_t i = 0; i < (size_t)rows * 3 * C; i += (size_t)grad_stride) {
        int b = (int)(i / (3 * (size_t)C) / T), h = (int)(i % (3 * (size_t)C) % C / s.hd);
        double keep = qd[i];
        qd[i] = keep + eps;
        double lp = attention_loss(s, qd, g, b, h, NULL);
        qd[i] = keep - eps;
        double lm = attention_loss(s, qd, g, b, h, NULL);
        qd[i] = keep;
        assert_near(host(&dqkv)[i], (lp - lm) / (2 * eps), 1e-4, 1e-3, "dqkv", i);
    }
    free(qd);
    free(p);
    pair *all[] = {&qkv, &att, &y, &dy, &scratch, &dqkv};
    for (size_t i = 0; i < 6; i++) pair_release(all[i]);
}

/* The attention cases, each run by the cpu family (suite gpt) and the gpu family's work-groups
 * (suite gpt_gpu): double math, and the host's bits. */
static const struct {
    att_shape s;
    uint64_t seed;
    float scale;
    int grad_stride;
} att_cases[] = {
    /* one partial block of queries and keys, hd under one lane vector */
    {{.B = 2, .T = 5, .H = 3, .hd = 7}, 30, 2.0f, 1},
    /* a whole block and a partial one of each, hd one lane vector and a tail */
    {{.B = 1, .T = 19, .H = 2, .hd = 20}, 40, 1.5f, 1},
    /* the char-GPT's head shape, gradients checked at a sample of elements */
    {{.B = 2, .T = 64, .H = 4, .hd = 32}, 50, 1.0f, 13},
    /* one token: each query attends to itself alone */
    {{.B = 3, .T = 1, .H = 2, .hd = 3}, 60, 1.0f, 1},
    /* a context past 512: the gpu family's work-groups take 13 queries (pgn_att_group_rows) and
     * each work-item several keys */
    {{.B = 1, .T = 600, .H = 1, .hd = 5}, 70, 1.0f, 997},
};
static void att_case(int i) {
    check_attention(att_cases[i].s, att_cases[i].seed, att_cases[i].scale, att_cases[i].grad_stride);
}
#define ATT_CASE(name, i)                                                                       \
    Test(gpt, name) { att_case(i); }                                                            \
    Test(gpt_gpu, name) { att_case(i); }
ATT_CASE(attention_with_odd_heads_matches_double_math_and_the_device, 0)
ATT_CASE(attention_across_block_edges, 1)
ATT_CASE(attention_at_the_char_gpt_head_shape, 2)
ATT_CASE(attention_of_one_token_copies_v, 3)
ATT_CASE(attention_past_a_context_of_512, 4)

Test(gpt, attention_refuses_wrong_shapes) {
    pgn_error err = {0};
    pair qkv, att, y, odd;
    pair_random(&qkv, dev, 10, 12, 1, 1.0f); /* C = 4 */
    pair_random(&odd, dev, 10, 13, 1, 1.0f);
    pair_sentinel(&att, 1, 2 * 2 * 25 - 1);
    pair_sentinel(&y, 10, 4);
    cr_assert_eq(pgn_op_attention_forward(10, 5, 2, &odd.h, &att.h, &y.h, &err), -1);
    cr_assert_str_eq(err.message, "attention: qkv has 13 columns, not 3C");
    cr_assert_eq(pgn_op_attention_forward(10, 5, 3, &qkv.h, &att.h, &y.h, &err), -1);
    cr_assert_str_eq(err.message, "attention: C = 4 is not a multiple of H = 3");
    cr_assert_eq(pgn_op_attention_forward(10, 4, 2, &qkv.h, &att.h, &y.h, &err), -1);
    cr_assert_str_eq(err.message, "attention: rows = 10 is not a positive multiple of T = 4");
    cr_assert_eq(pgn_op_attention_forward(10, 5, 2, &qkv.d, &att.d, &y.d, &err), -1);
    cr_assert_str_eq(err.message, "attention: att has 99 elements, needs at least 100");
    cr_assert_eq(pgn_op_attention_backward(5, 5, 2, &qkv.d, &att.d, &y.d, &att.d, &odd.d, &err), -1);
    cr_assert_str_eq(err.message, "attention_backward: dqkv is (10, 13), needs 12 columns and at least 5 rows");
    cr_assert_eq(pgn_op_attention_forward(5, 5, 2, &qkv.d, &att.h, &y.d, &err), -1);
    cr_assert_str_eq(err.message, "attention: tensors on different devices");
    pair *all[] = {&qkv, &odd, &att, &y};
    for (size_t i = 0; i < 4; i++) pair_release(all[i]);
}

/* gpt-small's attention (64 sequences of 256, 6 heads of 64) on the device: left to pocl, its
 * blocks went in work-groups of 3,072 work-items whose private tiles overflowed the thread's
 * stack (a crash). Every probability row sums to about 1 and y is finite. */
static void attention_at_gpt_small_s_shape_runs(void) {
    enum { B = 64, T = 256, H = 6, C = 384 };
    pgn_error err = {0};
    pgn_tensor qkv, att, y;
    cr_assert_eq(pgn_tensor_init(&qkv, dev, B * T, 3 * C, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_init(&att, dev, B * H * T, T, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_init(&y, dev, B * T, C, &err), 0, "%s", err.message);
    float *v = test_random((size_t)B * T * 3 * C, 70, 1.0f);
    cr_assert_eq(pgn_tensor_write(&qkv, v, (size_t)B * T * 3 * C, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_attention_forward(B * T, T, H, &qkv, &att, &y, &err), 0, "%s", err.message);
    float *p = malloc((size_t)B * H * T * T * sizeof *p), *out = malloc((size_t)B * T * C * sizeof *out);
    cr_assert(p && out);
    cr_assert_eq(pgn_tensor_read(&att, p, (size_t)B * H * T * T, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(&y, out, (size_t)B * T * C, &err), 0, "%s", err.message);
    for (size_t r = 0; r < (size_t)B * H * T; r += 997) {
        double sum = 0;
        for (int u = 0; u < T; u++) sum += p[r * T + u];
        cr_assert_float_eq(sum, 1.0, 1e-4, "row %zu sums to %g", r, sum);
    }
    for (size_t i = 0; i < (size_t)B * T * C; i++) cr_assert(isfinite(out[i]), "y[%zu]", i);
    free(v);
    free(p);
    free(out);
    pgn_tensor_release(&qkv);
    pgn_tensor_release(&att);
    pgn_tensor_release(&y);
}
Test(gpt, attention_at_gpt_small_s_shape_runs) { attention_at_gpt_small_s_shape_runs(); }
Test(gpt_gpu, attention_at_gpt_small_s_shape_runs) { attention_at_gpt_small_s_shape_runs(); }
