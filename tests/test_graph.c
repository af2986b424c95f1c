/* test_graph.c: every graph op's backward (vector-Jacobian product) against central finite
 * differences of the same graph evaluated in double precision on the host, and whole graphs
 * bit-identical between the host reference and the OpenCL device. */
#include <math.h>
#include <string.h>

#include "engine_helpers.h"
#include "tensor/graph.h"
#include "pgn_ops.h"

enum { ROWS = 5, FEATURES = 4, HIDDEN = 6, CLASSES = 3 };

/* ---- a double-precision evaluator of a graph ---------------------------------------------- */

typedef struct {
    double *v[64]; /* the graphs here have a few dozen nodes */
} dvals;

static double act_d(int act, double z) {
    switch (act) {
    case PGN_ACT_CODE_RELU: return z > 0 ? z : 0;
    case PGN_ACT_CODE_GELU: return 0.5 * z * (1 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
    case PGN_ACT_CODE_TANH: return tanh(z);
    case PGN_ACT_CODE_SIGMOID: return 1 / (1 + exp(-z));
    default: return z;
    }
}

static double *host_floats(const pgn_tensor *t) {
    size_t n = pgn_tensor_count(t);
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    pgn_error err = {0};
    cr_assert_eq(pgn_tensor_read(t, f, n, &err), 0, "%s", err.message);
    for (size_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    return d;
}

/* Evaluates every node in double from the graph's current parameter and input values (the
 * dropout masks of the last float forward pass are reused), returns node `out`'s values. */
static void eval_double(pgn_graph *g, dvals *dv, const int32_t *labels) {
    cr_assert_leq(g->n_nodes, 64);
    for (int i = 0; i < g->n_nodes; i++) {
        pgn_node *n = &g->nodes[i];
        int r = n->rows, c = n->cols;
        double *A = n->a >= 0 ? dv->v[n->a] : NULL, *B = n->b >= 0 ? dv->v[n->b] : NULL;
        const pgn_node *na = n->a >= 0 ? &g->nodes[n->a] : NULL;
        double *o = calloc((size_t)r * c, sizeof *o);
        switch (n->kind) {
        case PGN_NODE_INPUT:
        case PGN_NODE_PARAM: free(o); o = host_floats(&n->value); break;
        case PGN_NODE_LABELS: break;
        case PGN_NODE_TOKENS: {
            int32_t *tok = malloc((size_t)r * sizeof *tok);
            pgn_error err = {0};
            cr_assert_eq(pgn_tensor_read(&n->value, tok, (size_t)r, &err), 0);
            for (int k = 0; k < r; k++) o[k] = tok[k];
            free(tok);
            break;
        }
        case PGN_NODE_EMBED: {
            const double *P = dv->v[n->c];
            for (int k = 0; k < r; k++)
                for (int j = 0; j < c; j++)
                    o[k * c + j] = B[(int)A[k] * c + j] + P[(k % g->seq) * c + j];
            break;
        }
        case PGN_NODE_LAYERNORM: {
            const double *bias = dv->v[n->c];
            for (int k = 0; k < r; k++) {
                const double *x = A + k * c;
                double mean = 0, var = 0;
                for (int j = 0; j < c; j++) mean += x[j] / c;
                for (int j = 0; j < c; j++) var += (x[j] - mean) * (x[j] - mean) / c;
                double rstd = 1 / sqrt(var + 1e-5);
                for (int j = 0; j < c; j++) o[k * c + j] = (x[j] - mean) * rstd * B[j] + bias[j];
            }
            break;
        }
        case PGN_NODE_ATTENTION: {
            int T = g->seq, H = n->heads, hd = c / H, C3 = 3 * c;
            for (int b = 0; b < r / T; b++)
                for (int h = 0; h < H; h++)
                    for (int t = 0; t < T; t++) {
                        const double *q = A + (b * T + t) * C3 + h * hd;
                        double sc[64], mx = -1e300, sum = 0;
                        for (int u = 0; u <= t; u++) {
                            const double *kk = A + (b * T + u) * C3 + c + h * hd;
                            double dot = 0;
                            for (int d = 0; d < hd; d++) dot += q[d] * kk[d];
                            sc[u] = dot / sqrt((double)hd);
                            mx = fmax(mx, sc[u]);
                        }
                        for (int u = 0; u <= t; u++) sum += (sc[u] = exp(sc[u] - mx));
                        for (int d = 0; d < hd; d++) {
                            double acc = 0;
                            for (int u = 0; u <= t; u++) acc += sc[u] / sum * A[(b * T + u) * C3 + 2 * c + h * hd + d];
                            o[(b * T + t) * c + h * hd + d] = acc;
                        }
                    }
            break;
        }
        case PGN_NODE_MATMUL: {
            const pgn_node *nb = &g->nodes[n->b];
            int K = n->ta ? na->rows : na->cols;
            for (int i2 = 0; i2 < r; i2++)
                for (int j = 0; j < c; j++) {
                    double acc = 0;
                    for (int k = 0; k < K; k++) {
                        double a = n->ta ? A[k * na->cols + i2] : A[i2 * na->cols + k];
                        double b = n->tb ? B[j * nb->cols + k] : B[k * nb->cols + j];
                        acc += a * b;
                    }
                    o[i2 * c + j] = acc;
                }
            break;
        }
        case PGN_NODE_BIAS_ACT:
            for (int k = 0; k < r * c; k++) o[k] = act_d(n->act, A[k] + B[k % c]);
            break;
        case PGN_NODE_ACT:
            for (int k = 0; k < r * c; k++) o[k] = act_d(n->act, A[k]);
            break;
        case PGN_NODE_ADD:
            for (int k = 0; k < r * c; k++) o[k] = A[k] + B[k];
            break;
        case PGN_NODE_DROPOUT: {
            double *mask = host_floats(&n->aux);
            for (int k = 0; k < r * c; k++) o[k] = A[k] * mask[k];
            free(mask);
            break;
        }
        case PGN_NODE_SUM_ROWS:
        case PGN_NODE_MEAN_ROWS:
            for (int j = 0; j < c; j++) {
                for (int k = 0; k < na->rows; k++) o[j] += A[k * c + j];
                if (n->kind == PGN_NODE_MEAN_ROWS) o[j] /= na->rows;
            }
            break;
        case PGN_NODE_XENT:
        case PGN_NODE_MSE:
            for (int k = 0; k < r; k++) {
                const double *x = A + k * na->cols;
                double loss = 0;
                if (n->kind == PGN_NODE_XENT) {
                    double mx = x[0], sum = 0;
                    for (int j = 1; j < na->cols; j++) mx = fmax(mx, x[j]);
                    for (int j = 0; j < na->cols; j++) sum += exp(x[j] - mx);
                    loss = log(sum) - (x[labels[k]] - mx);
                } else {
                    for (int j = 0; j < na->cols; j++) {
                        double d = x[j] - (j == labels[k]);
                        loss += d * d;
                    }
                }
                o[k] = loss;
            }
            break;
        default: cr_assert_fail("no double evaluator for %s nodes", pgn_node_kind_name(n->kind));
        }
        free(dv->v[i]);
        dv->v[i] = o;
    }
}

static void dvals_free(dvals *dv) {
    for (int i = 0; i < 64; i++) free(dv->v[i]);
}

/* The scalar the check differentiates: sum(seed * out), or the mean loss when out is the loss. */
static double objective(pgn_graph *g, int out, const double *seed, const int32_t *labels) {
    dvals dv = {0};
    eval_double(g, &dv, labels);
    const pgn_node *n = &g->nodes[out];
    double L = 0;
    for (int k = 0; k < n->rows * n->cols; k++) L += seed ? seed[k] * dv.v[out][k] : dv.v[out][k];
    if (!seed) L /= g->loss_is_mse ? (double)n->rows * g->nodes[n->a].cols : n->rows;
    dvals_free(&dv);
    return L;
}

/* Runs forward and backward (from `out` seeded with `seed`, or from the loss), then compares
 * every parameter's gradient with central differences of the double objective. */
static void check_gradients(pgn_graph *g, int out, const int32_t *labels) {
    pgn_error err = {0};
    float *fseed = NULL;
    double *seed = NULL;
    cr_assert_eq(pgn_graph_forward(g, ROWS, true, 7, &err), 0, "%s", err.message);
    if (out != g->loss) {
        size_t n = pgn_tensor_count(&g->nodes[out].value);
        fseed = test_random(n, 123, 1.0f);
        seed = malloc(n * sizeof *seed);
        for (size_t i = 0; i < n; i++) seed[i] = fseed[i];
        cr_assert_eq(pgn_tensor_write(&g->nodes[out].grad, fseed, n, &err), 0);
        cr_assert_eq(pgn_graph_backward_from(g, out, ROWS, &err), 0, "%s", err.message);
    } else {
        cr_assert_eq(pgn_graph_backward(g, ROWS, &err), 0, "%s", err.message);
    }
    int checked = 0;
    for (int p = 0; p < g->n_params; p++) {
        pgn_node *n = &g->nodes[g->params[p]];
        float *v = n->value.host;
        const float *grad = n->grad.host;
        for (size_t i = 0; i < pgn_tensor_count(&n->value); i++) {
            float saved = v[i];
            const float h = 1e-2f;
            float hi = saved + h, lo = saved - h;
            v[i] = hi;
            double up = objective(g, out, seed, labels);
            v[i] = lo;
            double down = objective(g, out, seed, labels);
            v[i] = saved;
            double numeric = (up - down) / ((double)hi - (double)lo);
            /* h is large enough to cross a ReLU kink now and then: tolerate those */
            cr_assert_float_eq((double)grad[i], numeric, 2e-3 + 2e-3 * fabs(numeric),
                               "%s[%zu]: analytic %.7g numeric %.7g", n->name, i, (double)grad[i],
                               numeric);
            checked++;
        }
    }
    cr_assert_gt(checked, 0);
    free(fseed);
    free(seed);
}

/* input (ROWS, FEATURES), labels, and the first layer W0 (FEATURES, HIDDEN), b0 (HIDDEN). */
static int base(pgn_graph *g, int *x, int *labels, int32_t *label_values) {
    pgn_error err = {0};
    pgn_graph_init(g, NULL, ROWS, 11);
    *x = pgn_graph_input(g, FEATURES, &err);
    *labels = pgn_graph_labels(g, &err);
    for (int r = 0; r < ROWS; r++) label_values[r] = r % CLASSES;
    return 0;
}

static void finish(pgn_graph *g, int x, int labels, int loss, const int32_t *label_values) {
    pgn_error err = {0};
    cr_assert_eq(pgn_graph_compile(g, loss, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_graph_init_params(g, PGN_INIT_XAVIER, &err), 0, "%s", err.message);
    float *xv = test_random(ROWS * FEATURES, 5, 1.5f);
    cr_assert_eq(pgn_tensor_write(&g->nodes[x].value, xv, ROWS * FEATURES, &err), 0);
    cr_assert_eq(pgn_tensor_write(&g->nodes[labels].value, label_values, ROWS, &err), 0);
    free(xv);
    /* biases start at zero under xavier: give them values so their gradients are exercised */
    for (int p = 0; p < g->n_params; p++) {
        pgn_node *n = &g->nodes[g->params[p]];
        if (n->rows != 1) continue;
        float *b = test_random(pgn_tensor_count(&n->value), 40 + (uint64_t)p, 0.5f);
        pgn_tensor_write(&n->value, b, pgn_tensor_count(&n->value), &err);
        free(b);
    }
}

/* x -> matmul W0 -> bias_act(act) -> matmul W1 -> bias_act(none) -> xent */
static void check_layer(int act, bool mse) {
    pgn_graph g;
    int x, labels;
    int32_t lab[ROWS];
    pgn_error err = {0};
    base(&g, &x, &labels, lab);
    int w0 = pgn_graph_param(&g, "w0", FEATURES, HIDDEN, &err);
    int b0 = pgn_graph_param(&g, "b0", 1, HIDDEN, &err);
    int w1 = pgn_graph_param(&g, "w1", HIDDEN, CLASSES, &err);
    int b1 = pgn_graph_param(&g, "b1", 1, CLASSES, &err);
    int h = pgn_graph_bias_act(&g, pgn_graph_matmul(&g, x, false, w0, false, &err), b0, act, &err);
    int y = pgn_graph_bias_act(&g, pgn_graph_matmul(&g, h, false, w1, false, &err), b1,
                               PGN_ACT_CODE_NONE, &err);
    int loss = mse ? pgn_graph_mse(&g, y, labels, &err) : pgn_graph_xent(&g, y, labels, &err);
    cr_assert_geq(loss, 0, "%s", err.message);
    finish(&g, x, labels, loss, lab);
    check_gradients(&g, loss, lab);
    pgn_graph_release(&g);
}

Test(gradcheck, bias_relu_and_softmax_xent) { check_layer(PGN_ACT_CODE_RELU, false); }
Test(gradcheck, bias_gelu) { check_layer(PGN_ACT_CODE_GELU, false); }
Test(gradcheck, bias_tanh) { check_layer(PGN_ACT_CODE_TANH, false); }
Test(gradcheck, bias_sigmoid) { check_layer(PGN_ACT_CODE_SIGMOID, false); }
Test(gradcheck, mse_loss) { check_layer(PGN_ACT_CODE_TANH, true); }

/* Every transpose variant of matmul, with parameters on both sides, seeded directly. */
Test(gradcheck, matmul_all_transposes) {
    for (int variant = 0; variant < 4; variant++) {
        bool ta = variant & 1, tb = variant & 2;
        pgn_graph g;
        int x, labels;
        int32_t lab[ROWS];
        pgn_error err = {0};
        base(&g, &x, &labels, lab);
        /* a (HIDDEN, FEATURES) as op(a) = (.., FEATURES) needs ta; build shapes to match */
        int a = pgn_graph_param(&g, "a", ta ? FEATURES : HIDDEN, ta ? HIDDEN : FEATURES, &err);
        int b = pgn_graph_param(&g, "b", tb ? CLASSES : FEATURES, tb ? FEATURES : CLASSES, &err);
        int m = pgn_graph_matmul(&g, a, ta, b, tb, &err);
        cr_assert_geq(m, 0, "%s", err.message);
        int logits = pgn_graph_matmul(&g, x, false, pgn_graph_param(&g, "w", FEATURES, CLASSES, &err), false, &err);
        int loss = pgn_graph_xent(&g, logits, labels, &err);
        finish(&g, x, labels, loss, lab);
        check_gradients(&g, m, lab);
        pgn_graph_release(&g);
    }
}

/* act, dropout, sum_rows and mean_rows, each seeded at its own output. */
Test(gradcheck, act_dropout_and_reductions) {
    for (int which = 0; which < 4; which++) {
        pgn_graph g;
        int x, labels;
        int32_t lab[ROWS];
        pgn_error err = {0};
        base(&g, &x, &labels, lab);
        int w = pgn_graph_param(&g, "w", FEATURES, HIDDEN, &err);
        int z = pgn_graph_matmul(&g, x, false, w, false, &err);
        int out = which == 0   ? pgn_graph_act(&g, z, PGN_ACT_CODE_GELU, &err)
                  : which == 1 ? pgn_graph_dropout(&g, z, 0.4f, &err)
                               : pgn_graph_sum_rows(&g, z, which == 3, &err);
        int w2 = pgn_graph_param(&g, "w2", FEATURES, CLASSES, &err);
        int loss = pgn_graph_xent(&g, pgn_graph_matmul(&g, x, false, w2, false, &err), labels, &err);
        cr_assert_geq(loss, 0, "%s", err.message);
        finish(&g, x, labels, loss, lab);
        check_gradients(&g, out, lab);
        if (which == 1) { /* the mask really drops and scales */
            float mask[ROWS * HIDDEN];
            pgn_tensor_read(&g.nodes[out].aux, mask, ROWS * HIDDEN, &err);
            int zeros = 0;
            for (int i = 0; i < ROWS * HIDDEN; i++) {
                zeros += mask[i] == 0.0f;
                cr_assert(mask[i] == 0.0f || mask[i] == 1.0f / 0.6f);
            }
            cr_assert(zeros > 3 && zeros < 24, "%d of 30 dropped at p = 0.4", zeros);
        }
        pgn_graph_release(&g);
    }
}

/* A gradient reaching one node from two consumers is the sum of both. */
Test(gradcheck, fan_out_accumulates) {
    pgn_graph g;
    int x, labels;
    int32_t lab[ROWS];
    pgn_error err = {0};
    base(&g, &x, &labels, lab);
    int w = pgn_graph_param(&g, "w", FEATURES, HIDDEN, &err);
    int z = pgn_graph_matmul(&g, x, false, w, false, &err);
    int t = pgn_graph_act(&g, z, PGN_ACT_CODE_TANH, &err);
    int s = pgn_graph_act(&g, z, PGN_ACT_CODE_SIGMOID, &err); /* z read twice */
    int u = pgn_graph_add(&g, t, s, &err);
    int w2 = pgn_graph_param(&g, "w2", HIDDEN, CLASSES, &err);
    int loss = pgn_graph_xent(&g, pgn_graph_matmul(&g, u, false, w2, false, &err), labels, &err);
    cr_assert_geq(loss, 0, "%s", err.message);
    finish(&g, x, labels, loss, lab);
    cr_assert_eq(g.nodes[z].consumers, 2);
    check_gradients(&g, loss, lab);
    pgn_graph_release(&g);
}

/* The same MLP training step on host and device: every parameter bit-identical after it. */
Test(graph, mlp_steps_bit_identical_on_device) {
    pgn_device *dev = test_open_cl_device();
    pgn_train_spec t = {.layers = {FEATURES, 9, 7, CLASSES}, .n_layers = 4,
                        .activation = PGN_ACT_GELU, .dropout = 0.25f, .init = PGN_INIT_KAIMING};
    pgn_graph gh, gd;
    pgn_error err = {0};
    pgn_graph_init(&gh, NULL, ROWS, 3);
    pgn_graph_init(&gd, dev, ROWS, 3);
    cr_assert_eq(pgn_graph_build_mlp(&gh, &t, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_graph_build_mlp(&gd, &t, &err), 0, "%s", err.message);
    float *xv = test_random(ROWS * FEATURES, 9, 2.0f);
    int32_t lab[ROWS] = {0, 1, 2, 1, 0};
    pgn_graph *gs[2] = {&gh, &gd};
    for (int k = 0; k < 2; k++) {
        pgn_graph *g = gs[k];
        cr_assert_eq(pgn_tensor_write(&g->nodes[g->input].value, xv, ROWS * FEATURES, &err), 0);
        cr_assert_eq(pgn_tensor_write(&g->nodes[g->labels].value, lab, ROWS, &err), 0);
        for (int step = 0; step < 3; step++) {
            cr_assert_eq(pgn_graph_forward(g, ROWS - step % 2, true, (uint64_t)step, &err), 0, "%s", err.message);
            cr_assert_eq(pgn_graph_backward(g, ROWS - step % 2, &err), 0, "%s", err.message);
        }
    }
    for (int p = 0; p < gh.n_params; p++) {
        pgn_node *a = &gh.nodes[gh.params[p]], *b = &gd.nodes[gd.params[p]];
        size_t n = pgn_tensor_count(&a->grad);
        float *ga = malloc(n * 4), *gb = malloc(n * 4);
        pgn_tensor_read(&a->grad, ga, n, &err);
        pgn_tensor_read(&b->grad, gb, n, &err);
        cr_assert_eq(memcmp(ga, gb, n * 4), 0, "gradient of %s differs", a->name);
        free(ga);
        free(gb);
    }
    char sh[65], sd[65];
    cr_assert_eq(pgn_graph_weights_sha256(&gh, sh, &err), 0);
    cr_assert_eq(pgn_graph_weights_sha256(&gd, sd, &err), 0);
    cr_assert_str_eq(sh, sd);
    free(xv);
    pgn_graph_release(&gh);
    pgn_graph_release(&gd);
    pgn_device_close(dev);
}

/* A tiny GPT as pgn_graph_build_gpt makes it (embeddings, LayerNorms, attention, GELU MLP,
 * residuals, the head), every parameter at random values of a useful size, its gradients
 * against central differences of the graph in double. */
static void check_gpt(int n_layer, bool tie) {
    enum { SEQ = 4, SEQS = 2, VOCAB = 5 };
    pgn_train_spec t = {.model = PGN_MODEL_GPT,
                        .gpt = {.n_layer = n_layer, .n_head = 2, .d_model = 6, .context = SEQ, .tie_embeddings = tie}};
    pgn_graph g;
    pgn_error err = {0};
    pgn_graph_init(&g, NULL, SEQ * SEQS, 17);
    cr_assert_eq(pgn_graph_build_gpt(&g, &t, VOCAB, &err), 0, "%s", err.message);
    for (int p = 0; p < g.n_params; p++) {
        pgn_node *n = &g.nodes[g.params[p]];
        float *v = test_random(pgn_tensor_count(&n->value), 60 + (uint64_t)p, 0.6f);
        if (strstr(n->name, "ln_") && strstr(n->name, "weight"))
            for (size_t i = 0; i < pgn_tensor_count(&n->value); i++) v[i] += 1.0f;
        pgn_tensor_write(&n->value, v, pgn_tensor_count(&n->value), &err);
        free(v);
    }
    int32_t tok[SEQ * SEQS] = {0, 3, 3, 1, 4, 0, 2, 3}, lab[SEQ * SEQS] = {3, 3, 1, 4, 0, 2, 3, 1};
    cr_assert_eq(pgn_tensor_write(&g.nodes[g.input].value, tok, SEQ * SEQS, &err), 0);
    cr_assert_eq(pgn_tensor_write(&g.nodes[g.labels].value, lab, SEQ * SEQS, &err), 0);
    cr_assert_eq(pgn_graph_forward(&g, SEQ * SEQS, true, 0, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_graph_backward(&g, SEQ * SEQS, &err), 0, "%s", err.message);
    int checked = 0;
    for (int p = 0; p < g.n_params; p++) {
        pgn_node *n = &g.nodes[g.params[p]];
        float *v = n->value.host;
        const float *grad = n->grad.host;
        for (size_t i = 0; i < pgn_tensor_count(&n->value); i++) {
            float saved = v[i], hi = saved + 1e-2f, lo = saved - 1e-2f;
            v[i] = hi;
            double up = objective(&g, g.loss, NULL, lab);
            v[i] = lo;
            double down = objective(&g, g.loss, NULL, lab);
            v[i] = saved;
            double numeric = (up - down) / ((double)hi - (double)lo);
            cr_assert_float_eq((double)grad[i], numeric, 1e-3 + 2e-3 * fabs(numeric),
                               "%s[%zu]: analytic %.7g numeric %.7g", n->name, i, (double)grad[i], numeric);
            checked++;
        }
    }
    cr_assert_gt(checked, 200);
    pgn_graph_release(&g);
}

Test(gradcheck, gpt_one_layer_tied_head) { check_gpt(1, true); }
Test(gradcheck, gpt_two_layers_own_head) { check_gpt(2, false); }

/* A graph as deep as a 12-layer GPT (hundreds of nodes, over a hundred parameters) builds,
 * compiles and runs: the arrays grow as it is built. */
Test(graph, grows_past_hundreds_of_nodes_and_parameters) {
    pgn_graph g;
    int x, labels;
    int32_t lab[ROWS];
    pgn_error err = {0};
    base(&g, &x, &labels, lab);
    int h = x;
    for (int l = 0; l < 150; l++) {
        char name[32];
        snprintf(name, sizeof name, "w%d", l);
        int w = pgn_graph_param(&g, name, FEATURES, FEATURES, &err);
        h = pgn_graph_act(&g, pgn_graph_matmul(&g, h, false, w, false, &err), PGN_ACT_CODE_TANH, &err);
        cr_assert_geq(h, 0, "%s", err.message);
    }
    int wo = pgn_graph_param(&g, "wo", FEATURES, CLASSES, &err);
    int loss = pgn_graph_xent(&g, pgn_graph_matmul(&g, h, false, wo, false, &err), labels, &err);
    cr_assert_geq(loss, 0, "%s", err.message);
    cr_assert_gt(g.n_nodes, 400);
    cr_assert_eq(g.n_params, 151);
    finish(&g, x, labels, loss, lab);
    cr_assert_eq(pgn_graph_forward(&g, ROWS, true, 0, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_graph_backward(&g, ROWS, &err), 0, "%s", err.message);
    float grad[FEATURES * FEATURES];
    cr_assert_eq(pgn_tensor_read(&g.nodes[g.params[0]].grad, grad, FEATURES * FEATURES, &err), 0);
    bool any = false;
    for (int i = 0; i < FEATURES * FEATURES; i++) any |= grad[i] != 0.0f;
    cr_assert(any, "the gradient reaches the first of 151 layers");
    pgn_graph_release(&g);
}
