/* graph.c: building, planning and running op graphs; reverse-mode autodiff by each node's
 * vector-Jacobian product. Every op is one entry of the op table (ops[]): its forward and
 * backward stand side by side, with the shapes in a comment above them. The models' graphs,
 * their initialisation and their weights' hash: graph_models.c. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/graph.h"
#include "pgn_math.h"
#include "pgn_ops.h"


void pgn_graph_init(pgn_graph *g, pgn_device *dev, int max_batch, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->dev = dev;
    g->max_batch = max_batch;
    g->seed = seed;
    g->input = g->labels = g->loss = -1;
}

/* Makes room for one more element in *arr (of *cap, growing by doubling up to max). */
static int grow(void **arr, int *cap, int used, size_t size, int max, const char *what, pgn_error *err) {
    if (used < *cap) return 0;
    if (used >= max) {
        pgn_error_set(err, PGN_E_INVALID_SPEC, "model", "model: more than %d %s", max, what);
        return -1;
    }
    int want = *cap ? 2 * *cap : 64;
    if (want > max) want = max;
    void *bigger = realloc(*arr, (size_t)want * size);
    if (!bigger) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory building a graph of %d %s", want, what);
        return -1;
    }
    *arr = bigger;
    *cap = want;
    return 0;
}

static int add_node3(pgn_graph *g, pgn_node_kind kind, int a, int b, int c, int rows, int cols,
                     bool batched, pgn_error *err) {
    if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof *g->nodes, PGN_GRAPH_MAX_NODES,
             "graph nodes", err))
        return -1;
    const int in_ids[3] = {a, b, c};
    for (int in = 0; in < 3; in++) {
        int id = in_ids[in];
        if (id >= g->n_nodes) {
            pgn_error_set(err, PGN_E_INTERNAL, "", "graph: input %d of a %s node does not exist", id,
                          pgn_node_kind_name(kind));
            return -1;
        }
        if (id >= 0) g->nodes[id].consumers++;
    }
    pgn_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->a = a;
    n->b = b;
    n->c = c;
    n->rows = rows;
    n->cols = cols;
    n->batched = batched;
    n->epilogue = -1;
    for (int in = 0; in < 3; in++)
        if (in_ids[in] >= 0 && g->nodes[in_ids[in]].needs_grad) n->needs_grad = true;
    return g->n_nodes++;
}

static int add_node(pgn_graph *g, pgn_node_kind kind, int a, int b, int rows, int cols, bool batched,
                    pgn_error *err) {
    return add_node3(g, kind, a, b, -1, rows, cols, batched, err);
}

static int shape_error(pgn_graph *g, const char *op, pgn_error *err, const char *detail) {
    (void)g;
    pgn_error_set(err, PGN_E_INTERNAL, "", "graph: %s: %s", op, detail);
    return -1;
}

int pgn_graph_input(pgn_graph *g, int features, pgn_error *err) {
    g->input = add_node(g, PGN_NODE_INPUT, -1, -1, g->max_batch, features, true, err);
    return g->input;
}

int pgn_graph_labels(pgn_graph *g, pgn_error *err) {
    g->labels = add_node(g, PGN_NODE_LABELS, -1, -1, g->max_batch, 1, true, err);
    return g->labels;
}

int pgn_graph_param(pgn_graph *g, const char *name, int rows, int cols, pgn_error *err) {
    return pgn_graph_param_init(g, name, rows, cols, PGN_PARAM_INIT_SPEC, 0.0f, true, err);
}

int pgn_graph_param_init(pgn_graph *g, const char *name, int rows, int cols, pgn_param_init init,
                         float value, bool decay, pgn_error *err) {
    int cap = g->cap_params;
    if (grow((void **)&g->params, &cap, g->n_params, sizeof *g->params, PGN_GRAPH_MAX_PARAMS,
             "parameter tensors", err) ||
        grow((void **)&g->param_offset, &g->cap_params, g->n_params, sizeof *g->param_offset,
             PGN_GRAPH_MAX_PARAMS, "parameter tensors", err))
        return -1;
    int id = add_node(g, PGN_NODE_PARAM, -1, -1, rows, cols, false, err);
    if (id < 0) return -1;
    g->nodes[id].needs_grad = true;
    g->nodes[id].init = init;
    g->nodes[id].init_value = value;
    g->nodes[id].decay = decay;
    snprintf(g->nodes[id].name, sizeof g->nodes[id].name, "%s", name);
    g->params[g->n_params++] = id;
    return id;
}

int pgn_graph_matmul(pgn_graph *g, int a, bool ta, int b, bool tb, pgn_error *err) {
    const pgn_node *A = &g->nodes[a], *B = &g->nodes[b];
    int m = ta ? A->cols : A->rows, k = ta ? A->rows : A->cols;
    int kb = tb ? B->cols : B->rows, n = tb ? B->rows : B->cols;
    if (k != kb) return shape_error(g, "matmul", err, "inner dimensions differ");
    if ((ta && A->batched) || B->batched)
        return shape_error(g, "matmul", err, "the batch must be the rows of an untransposed a");
    int id = add_node(g, PGN_NODE_MATMUL, a, b, m, n, A->batched, err);
    if (id >= 0) {
        g->nodes[id].ta = ta;
        g->nodes[id].tb = tb;
    }
    return id;
}

int pgn_graph_bias_act(pgn_graph *g, int a, int bias, int act, pgn_error *err) {
    const pgn_node *A = &g->nodes[a], *B = &g->nodes[bias];
    if (A->kind != PGN_NODE_MATMUL || A->consumers != 0)
        return shape_error(g, "bias_act", err, "input must be a matmul read by nothing else");
    if (B->rows * B->cols != A->cols) return shape_error(g, "bias_act", err, "bias width");
    int id = add_node(g, PGN_NODE_BIAS_ACT, a, bias, A->rows, A->cols, A->batched, err);
    if (id >= 0) {
        g->nodes[id].act = act;
        g->nodes[a].epilogue = id; /* the matmul's kernel applies it: one pass, one launch */
    }
    return id;
}

int pgn_graph_act(pgn_graph *g, int a, int act, pgn_error *err) {
    const pgn_node *A = &g->nodes[a];
    int id = add_node(g, PGN_NODE_ACT, a, -1, A->rows, A->cols, A->batched, err);
    if (id >= 0) g->nodes[id].act = act;
    return id;
}

int pgn_graph_dropout(pgn_graph *g, int a, float p, pgn_error *err) {
    const pgn_node *A = &g->nodes[a];
    int id = add_node(g, PGN_NODE_DROPOUT, a, -1, A->rows, A->cols, A->batched, err);
    if (id >= 0) g->nodes[id].p = p;
    return id;
}

int pgn_graph_add(pgn_graph *g, int a, int b, pgn_error *err) {
    const pgn_node *A = &g->nodes[a], *B = &g->nodes[b];
    if (A->rows != B->rows || A->cols != B->cols || A->batched != B->batched)
        return shape_error(g, "add", err, "shapes differ");
    return add_node(g, PGN_NODE_ADD, a, b, A->rows, A->cols, A->batched, err);
}

int pgn_graph_sum_rows(pgn_graph *g, int a, bool mean, pgn_error *err) {
    const pgn_node *A = &g->nodes[a];
    return add_node(g, mean ? PGN_NODE_MEAN_ROWS : PGN_NODE_SUM_ROWS, a, -1, 1, A->cols, false,
                    err);
}

int pgn_graph_tokens(pgn_graph *g, pgn_error *err) {
    g->input = add_node(g, PGN_NODE_TOKENS, -1, -1, g->max_batch, 1, true, err);
    return g->input;
}

int pgn_graph_embed(pgn_graph *g, int tokens, int wte, int wpe, pgn_error *err) {
    const pgn_node *T = &g->nodes[tokens], *E = &g->nodes[wte], *P = &g->nodes[wpe];
    if (T->kind != PGN_NODE_TOKENS || E->kind != PGN_NODE_PARAM || P->kind != PGN_NODE_PARAM ||
        E->cols != P->cols)
        return shape_error(g, "embed", err, "needs tokens and two tables of the same width");
    return add_node3(g, PGN_NODE_EMBED, tokens, wte, wpe, T->rows, E->cols, true, err);
}

int pgn_graph_layernorm(pgn_graph *g, int x, int w, int b, pgn_error *err) {
    const pgn_node *X = &g->nodes[x];
    if (g->nodes[w].rows * g->nodes[w].cols != X->cols || g->nodes[b].rows * g->nodes[b].cols != X->cols)
        return shape_error(g, "layernorm", err, "weight and bias must have the input's width");
    return add_node3(g, PGN_NODE_LAYERNORM, x, w, b, X->rows, X->cols, X->batched, err);
}

int pgn_graph_attention(pgn_graph *g, int qkv, int heads, pgn_error *err) {
    const pgn_node *Q = &g->nodes[qkv];
    if (!Q->batched || Q->cols % 3 || heads < 1 || (Q->cols / 3) % heads)
        return shape_error(g, "attention", err, "needs batched (B, 3C) input with heads dividing C");
    int id = add_node(g, PGN_NODE_ATTENTION, qkv, -1, Q->rows, Q->cols / 3, true, err);
    if (id >= 0) g->nodes[id].heads = heads;
    return id;
}

static int loss_node(pgn_graph *g, pgn_node_kind kind, int x, int labels, pgn_error *err) {
    const pgn_node *X = &g->nodes[x];
    if (!X->batched || g->nodes[labels].kind != PGN_NODE_LABELS)
        return shape_error(g, pgn_node_kind_name(kind), err, "needs batched input and labels");
    int id = add_node(g, kind, x, labels, X->rows, 1, true, err);
    if (id >= 0) g->loss_is_mse = kind == PGN_NODE_MSE;
    return id;
}

int pgn_graph_xent(pgn_graph *g, int logits, int labels, pgn_error *err) {
    return loss_node(g, PGN_NODE_XENT, logits, labels, err);
}

int pgn_graph_mse(pgn_graph *g, int pred, int labels, pgn_error *err) {
    return loss_node(g, PGN_NODE_MSE, pred, labels, err);
}

/* ---- the ops: each one's forward and backward side by side ------------------------------
 * A node's forward writes its value from its inputs' values; its backward takes its grad (dy)
 * and adds its inputs' vector-Jacobian products to their grads: the first contribution a
 * backward pass makes to an input goes straight into its grad, later ones through its tmp
 * (grad_target, finish_grad). Shapes are at the batch's rows B; (r, c) are the node's. */

/* One pass of the graph: its batch rows, tokens per sequence (sequence models), and whether it
 * trains (dropout on) at which step. */
typedef struct pass {
    int rows, seq;
    bool training;
    uint64_t step;
} pass;

static int rows_of(const pgn_node *n, int rows) { return n->batched ? rows : n->rows; }

static pgn_node *in_a(pgn_graph *g, const pgn_node *n) { return n->a >= 0 ? &g->nodes[n->a] : NULL; }
static pgn_node *in_b(pgn_graph *g, const pgn_node *n) { return n->b >= 0 ? &g->nodes[n->b] : NULL; }
static pgn_node *in_c(pgn_graph *g, const pgn_node *n) { return n->c >= 0 ? &g->nodes[n->c] : NULL; }

/* Where a gradient contribution for node x goes: straight into x->grad the first time in a
 * backward pass, else into x->tmp, to be added by finish_grad. */
static pgn_tensor *grad_target(pgn_node *x) { return x->grad_written ? &x->tmp : &x->grad; }

static int finish_grad(pgn_node *x, int rows, pgn_error *err) {
    if (!x->grad_written) {
        x->grad_written = true;
        return 0;
    }
    return pgn_op_add(rows_of(x, rows), &x->grad, &x->tmp, &x->grad, err);
}

/* C = op(A) op(B) with A, B, C of the given nodes' current shapes. */
static int gemm_nodes(int rows, const pgn_node *A, bool ta, const pgn_node *B, bool tb,
                      const pgn_tensor *a, const pgn_tensor *b, pgn_tensor *c, pgn_error *err) {
    int ar = rows_of(A, rows), br = rows_of(B, rows);
    int M = ta ? A->cols : ar, K = ta ? ar : A->cols, N = tb ? br : B->cols;
    return pgn_op_gemm(M, N, K, a, ta, b, tb, c, err);
}

/* input (B, features), labels and tokens (B, 1) int32, param (r, c): written by the caller or
 * the optimizer; no inputs, so nothing to pass back. */
static int leaf_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    (void)g, (void)n, (void)p, (void)err;
    return 0;
}
static int leaf_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    (void)g, (void)n, (void)p, (void)err;
    return 0;
}

/* matmul: op(A) (M, K), op(B) (K, N) -> C (M, N); with a fused bias_act the kernel also writes
 * z = C + bias in place and y = act(z) into the bias_act node. */
static int matmul_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n), *B = in_b(g, n);
    if (n->epilogue < 0)
        return gemm_nodes(p->rows, A, n->ta, B, n->tb, &A->value, &B->value, &n->value, err);
    pgn_node *e = &g->nodes[n->epilogue];
    int ar = rows_of(A, p->rows), K = n->ta ? ar : A->cols;
    return pgn_op_gemm_bias_act(rows_of(n, p->rows), n->cols, K, &A->value, n->ta, &B->value, n->tb,
                                &n->value, &g->nodes[e->b].value, e->act, &e->value, err);
}
/* dA = dC op(B)^T (stored transposed when ta), dB = op(A)^T dC (likewise when tb) */
static int matmul_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n), *B = in_b(g, n);
    int rows = p->rows;
    if (A->needs_grad) {
        pgn_tensor *t = grad_target(A);
        int rc = n->ta ? gemm_nodes(rows, B, n->tb, n, true, &B->value, &n->grad, t, err)
                       : gemm_nodes(rows, n, false, B, !n->tb, &n->grad, &B->value, t, err);
        if (rc || finish_grad(A, rows, err)) return -1;
    }
    if (B->needs_grad) {
        pgn_tensor *t = grad_target(B);
        int rc = n->tb ? gemm_nodes(rows, n, true, A, n->ta, &n->grad, &A->value, t, err)
                       : gemm_nodes(rows, A, !n->ta, n, false, &A->value, &n->grad, t, err);
        if (rc || finish_grad(B, rows, err)) return -1;
    }
    return 0;
}

/* bias_act: z (B, N) = a + bias (1, N), in place in a; y = act(z). Done by the matmul when
 * fused into it. */
static int bias_act_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n), *B = in_b(g, n);
    if (A->epilogue == (int)(n - g->nodes)) return 0;
    return pgn_op_bias_act_forward(rows_of(n, p->rows), &A->value, &B->value, n->act, &n->value, err);
}
/* The node's deferred column sums (plan_sums), or NULL: finish them now. */
static pgn_tensor *deferred(pgn_node *n) { return n->sums.rows ? &n->sums : NULL; }

/* dz = dy act'(z) into the matmul's grad, dbias = colsum dz (one fused kernel); without an
 * activation dz is dy, which the matmul's grad already is (it shares the buffer: shares_matmul) */
static int bias_act_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n), *B = in_b(g, n);
    if (n->act == PGN_ACT_CODE_NONE)
        return pgn_op_colsum(rows_of(n, p->rows), &n->grad, grad_target(B), deferred(n), err) ||
               finish_grad(B, p->rows, err) || finish_grad(A, p->rows, err);
    if (pgn_op_bias_act_backward(rows_of(n, p->rows), &A->value, &n->value, &n->grad, n->act,
                                 grad_target(A), grad_target(B), deferred(n), err))
        return -1;
    return finish_grad(A, p->rows, err) || finish_grad(B, p->rows, err);
}

/* act: y (r, c) = act(x) */
static int act_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    return pgn_op_act_forward(rows_of(n, p->rows), n->act, &in_a(g, n)->value, &n->value, err);
}
/* dx = dy act'(x) */
static int act_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n);
    if (!A->needs_grad) return 0;
    return pgn_op_act_backward(rows_of(n, p->rows), n->act, &A->value, &n->value, &n->grad,
                               grad_target(A), err) ||
           finish_grad(A, p->rows, err);
}

/* dropout: y (r, c) = x mask, mask (r, c) from (seed, step, element) while training, else 1;
 * each dropout node draws from its own seed, so that equal shapes do not share masks */
static int dropout_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    uint64_t seed = g->seed + (uint64_t)(n - g->nodes) * 0x9e3779b97f4a7c15ULL;
    return pgn_op_dropout_forward(rows_of(n, p->rows), &in_a(g, n)->value, p->training ? n->p : 0.0f,
                                  seed, p->step, &n->aux, &n->value, err);
}
/* dx = dy mask */
static int dropout_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n);
    if (!A->needs_grad) return 0;
    return pgn_op_mul(rows_of(n, p->rows), &n->grad, &n->aux, grad_target(A), err) ||
           finish_grad(A, p->rows, err);
}

/* add: y (r, c) = a + b, same shapes */
static int add_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    return pgn_op_add(rows_of(n, p->rows), &in_a(g, n)->value, &in_b(g, n)->value, &n->value, err);
}
/* da = dy, db = dy (copied by the identity activation), except into the input whose grad buffer
 * n's is, which holds dy already when n is its first contribution. */
static int add_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    for (int in = 0; in < 2; in++) {
        pgn_node *X = in ? in_b(g, n) : in_a(g, n);
        if (!X->needs_grad) continue;
        if (!(in == n->grad_of_input && !X->grad_written) &&
            pgn_op_act_forward(rows_of(n, p->rows), PGN_ACT_CODE_NONE, &n->grad, grad_target(X), err))
            return -1;
        if (finish_grad(X, p->rows, err)) return -1;
    }
    return 0;
}

/* sum_rows, mean_rows: y (1, c) = the sum (or mean) over a's B rows */
static int sum_rows_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n);
    int ar = rows_of(A, p->rows);
    if (pgn_op_colsum(ar, &A->value, &n->value, NULL, err)) return -1;
    if (n->kind == PGN_NODE_SUM_ROWS) return 0;
    return pgn_op_broadcast_rows(1, &n->value, 1.0f / (float)ar, &n->value, err);
}
/* dx[r] = dy (sum) or dy / B (mean), every row */
static int sum_rows_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n);
    if (!A->needs_grad) return 0;
    int ar = rows_of(A, p->rows);
    float scale = n->kind == PGN_NODE_MEAN_ROWS ? 1.0f / (float)ar : 1.0f;
    return pgn_op_broadcast_rows(ar, &n->grad, scale, grad_target(A), err) ||
           finish_grad(A, p->rows, err);
}

/* The B the losses' gradients divide by: the pass's rows, or g->loss_rows when set. */
static int loss_rows(const pgn_graph *g, int r) { return g->loss_rows > 0 ? g->loss_rows : r; }

/* softmax_xent: logits (B, C), labels (B) -> loss (B), pred (B) in aux; the mean loss's
 * dlogits (softmax - onehot) / B is written here too (fused) */
static int xent_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n);
    int r = rows_of(n, p->rows);
    return pgn_op_softmax_xent(r, &A->value, &in_b(g, n)->value, 1.0f / (float)loss_rows(g, r), &A->grad,
                               &n->value, &n->aux, err);
}
/* mse: x (B, C) against one-hot labels (B) -> loss (B), pred (B); dx = 2 (x - onehot) / (B C)
 * written here (fused) */
static int mse_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *A = in_a(g, n);
    int r = rows_of(n, p->rows);
    return pgn_op_mse_onehot(r, &A->value, &in_b(g, n)->value, 1.0f / ((float)loss_rows(g, r) * (float)A->cols),
                             &A->grad, &n->value, &n->aux, err);
}
/* the forward pass wrote the input's gradient */
static int loss_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    (void)p, (void)err;
    in_a(g, n)->grad_written = true;
    return 0;
}

/* embed: tokens (B, 1), wte (V, C), wpe (P, C) -> y (B, C) = wte[tokens] + wpe[row % seq] */
static int embed_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    return pgn_op_embed_forward(p->rows, p->seq, &in_a(g, n)->value, &in_b(g, n)->value,
                                &in_c(g, n)->value, &n->value, err);
}
/* dwte = scatter-add of dy's rows at their tokens, dwpe[t] = sum over sequences of dy[t], both
 * summed in row order */
static int embed_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *E = in_b(g, n), *P = in_c(g, n);
    return pgn_op_embed_backward(p->rows, p->seq, &in_a(g, n)->value, &n->grad,
                                 E->needs_grad ? grad_target(E) : NULL, P->needs_grad ? grad_target(P) : NULL,
                                 err) ||
           (E->needs_grad && finish_grad(E, p->rows, err)) || (P->needs_grad && finish_grad(P, p->rows, err));
}

/* layernorm: x (B, C), w (1, C), b (1, C) -> y (B, C) = (x - mean) rstd w + b per row;
 * aux (B, 2) keeps [mean, rstd] */
static int layernorm_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    return pgn_op_layernorm_forward(rows_of(n, p->rows), &in_a(g, n)->value, &in_b(g, n)->value,
                                    &in_c(g, n)->value, &n->value, &n->aux, err);
}
/* dx = (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) rstd with dxhat = dy w, added into X's
 * gradient when that is already written (no second buffer, no add launch); dw = colsum dy xhat,
 * db = colsum dy */
static int layernorm_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *X = in_a(g, n), *W = in_b(g, n), *B = in_c(g, n);
    int r = rows_of(n, p->rows);
    bool add = X->grad_written;
    if (pgn_op_layernorm_backward(r, &X->value, &W->value, &n->aux, &n->grad, &X->grad,
                                  W->needs_grad ? grad_target(W) : NULL, B->needs_grad ? grad_target(B) : NULL, add,
                                  deferred(n), err))
        return -1;
    X->grad_written = true;
    return (W->needs_grad && finish_grad(W, p->rows, err)) ||
           (B->needs_grad && finish_grad(B, p->rows, err));
}

/* attention: qkv (B, 3C) -> y (B, C): per sequence and head, softmax((q k^T) / sqrt(hd)) over
 * earlier positions times v; aux keeps the probabilities (sequences x heads x seq x seq) */
static int attention_forward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    return pgn_op_attention_forward(p->rows, p->seq, n->heads, &in_a(g, n)->value, &n->aux, &n->value, err);
}
/* dqkv from dy through the weighted sum, the softmax and the scores (scratch: score gradients) */
static int attention_backward(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err) {
    pgn_node *Q = in_a(g, n);
    return pgn_op_attention_backward(p->rows, p->seq, n->heads, &Q->value, &n->aux, &n->grad, &n->scratch,
                                     grad_target(Q), err) ||
           finish_grad(Q, p->rows, err);
}

typedef struct op_def {
    const char *name;
    int (*forward)(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err);
    int (*backward)(pgn_graph *g, pgn_node *n, const pass *p, pgn_error *err);
    bool loss; /* its forward writes its input's gradient: a backward pass starts here */
} op_def;

/* The op table: one entry per node kind. Adding an op is its two functions above and a line. */
static const op_def ops[] = {
    [PGN_NODE_INPUT] = {"input", leaf_forward, leaf_backward, false},
    [PGN_NODE_LABELS] = {"labels", leaf_forward, leaf_backward, false},
    [PGN_NODE_PARAM] = {"param", leaf_forward, leaf_backward, false},
    [PGN_NODE_MATMUL] = {"matmul", matmul_forward, matmul_backward, false},
    [PGN_NODE_BIAS_ACT] = {"bias_act", bias_act_forward, bias_act_backward, false},
    [PGN_NODE_ACT] = {"act", act_forward, act_backward, false},
    [PGN_NODE_DROPOUT] = {"dropout", dropout_forward, dropout_backward, false},
    [PGN_NODE_ADD] = {"add", add_forward, add_backward, false},
    [PGN_NODE_SUM_ROWS] = {"sum_rows", sum_rows_forward, sum_rows_backward, false},
    [PGN_NODE_MEAN_ROWS] = {"mean_rows", sum_rows_forward, sum_rows_backward, false},
    [PGN_NODE_XENT] = {"softmax_xent", xent_forward, loss_backward, true},
    [PGN_NODE_MSE] = {"mse", mse_forward, loss_backward, true},
    [PGN_NODE_TOKENS] = {"tokens", leaf_forward, leaf_backward, false},
    [PGN_NODE_EMBED] = {"embed", embed_forward, embed_backward, false},
    [PGN_NODE_LAYERNORM] = {"layernorm", layernorm_forward, layernorm_backward, false},
    [PGN_NODE_ATTENTION] = {"attention", attention_forward, attention_backward, false},
};
_Static_assert(sizeof ops / sizeof *ops == PGN_NODE_KINDS, "every node kind has its op");

/* What each op keeps besides its value and grad, (rows, cols) at the largest batch: dropout its
 * mask, a loss its predictions, LayerNorm each row's mean and rstd, attention its probabilities
 * (sequences x heads x seq x seq: max_batch heads rows of seq). */
static void aux_shape(const pgn_graph *g, const pgn_node *n, int *rows, int *cols) {
    *rows = n->rows;
    *cols = 0;
    if (n->kind == PGN_NODE_DROPOUT) *cols = n->cols;
    else if (ops[n->kind].loss) *cols = 1;
    else if (n->kind == PGN_NODE_LAYERNORM) *cols = 2;
    else if (n->kind == PGN_NODE_ATTENTION) {
        *rows = n->rows * n->heads;
        *cols = g->seq;
    }
}

/* ---- planning --------------------------------------------------------------------------- */

/* Lays the parameters out in the two stores, those that decay first (so an optimizer updates
 * each group in one launch), and makes each one's value and grad a view. */
static int plan_params(pgn_graph *g, pgn_error *err) {
    size_t align = pgn_tensor_view_align(g->dev), total = 0;
    for (int group = 0; group < 2; group++) {
        for (int p = 0; p < g->n_params; p++) {
            const pgn_node *n = &g->nodes[g->params[p]];
            if (n->decay != (group == 0)) continue;
            g->param_offset[p] = total;
            total += ((size_t)n->rows * n->cols + align - 1) / align * align;
        }
        if (group == 0) g->decay_elems = total;
    }
    g->store_elems = total;
    if (total > (size_t)INT32_MAX) {
        pgn_error_set(err, PGN_E_INVALID_SPEC, "model", "model: %zu parameters is more than supported",
                      total);
        return -1;
    }
    if (pgn_tensor_init(&g->param_store, g->dev, 1, (int)total, err) ||
        pgn_tensor_init(&g->grad_store, g->dev, 1, (int)total, err))
        return -1;
    for (int p = 0; p < g->n_params; p++) {
        pgn_node *n = &g->nodes[g->params[p]];
        if (pgn_tensor_view(&n->value, &g->param_store, g->param_offset[p], n->rows, n->cols, err) ||
            pgn_tensor_view(&n->grad, &g->grad_store, g->param_offset[p], n->rows, n->cols, err))
            return -1;
    }
    return 0;
}

/* A bias_act without an activation fused into its matmul shares the matmul's value and grad. */
static bool shares_matmul(const pgn_graph *g, const pgn_node *n) {
    return n->kind == PGN_NODE_BIAS_ACT && n->act == PGN_ACT_CODE_NONE &&
           g->nodes[n->a].epilogue == (int)(n - g->nodes) && g->nodes[n->a].needs_grad == n->needs_grad;
}

/* The input (0: a, 1: b) of add node n whose grad buffer n's grad can be, else -1: one that needs
 * a gradient, is no parameter (those live in the gradient store), has n's shape and has n as its
 * last consumer, so that n's backward is the first to write its gradient and n's gradient, which
 * n's consumers write before that, is dead after it. A residual stream's adds so share one buffer
 * and skip a copy each (fewer launches: docs/architecture.md). last[i] is node i's last consumer. */
static int add_grad_input(const pgn_graph *g, const pgn_node *n, const int *last) {
    if (n->kind != PGN_NODE_ADD || !n->needs_grad) return -1;
    int self = (int)(n - g->nodes);
    for (int in = 0; in < 2; in++) {
        const pgn_node *X = &g->nodes[in ? n->b : n->a];
        if (X->needs_grad && X->kind != PGN_NODE_PARAM && last[in ? n->b : n->a] == self && X->rows == n->rows &&
            X->cols == n->cols && X->batched == n->batched)
            return in;
    }
    return -1;
}

/* The gradient store's offset of parameter node id. */
static size_t param_offset_of(const pgn_graph *g, int id) {
    for (int p = 0; p < g->n_params; p++)
        if (g->params[p] == id) return g->param_offset[p];
    return 0; /* not reached: callers pass parameters */
}

/* Whether parameter node id's gradient can come from a deferred sum: it is a parameter and its
 * one consumer is the node asking, so the deferred finish is its only write. */
static bool sum_param(const pgn_graph *g, int id) {
    const pgn_node *P = &g->nodes[id];
    return P->kind == PGN_NODE_PARAM && P->consumers == 1;
}

/* The deferred column sums (graph.h): a batched bias_act whose bias, or a batched layernorm
 * whose weight and bias (those that need a gradient), have it only from this node. Regions of
 * sums_partials are aligned for views; the table is written once, here. */
static int plan_sums(pgn_graph *g, pgn_error *err) {
    int *table = malloc((size_t)g->n_nodes * 2 * PGN_SUM_ENTRY * sizeof *table);
    g->sums_node = malloc((size_t)g->n_nodes * 2 * sizeof *g->sums_node);
    size_t *at = malloc((size_t)g->n_nodes * sizeof *at), align = pgn_tensor_view_align(g->dev), total = 0;
    if (!table || !g->sums_node || !at) {
        free(table);
        free(at);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory compiling the graph");
        return -1;
    }
    int n_entries = 0, cols = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        pgn_node *n = &g->nodes[i];
        at[i] = SIZE_MAX;
        bool ln = n->kind == PGN_NODE_LAYERNORM;
        if (!n->needs_grad || !n->batched || (n->kind != PGN_NODE_BIAS_ACT && !ln)) continue;
        int ids[2] = {n->b, ln ? n->c : -1}, want = 0, ok = 0;
        for (int k = 0; k < 2; k++) {
            bool grad = ids[k] >= 0 && g->nodes[ids[k]].needs_grad;
            want += grad;
            ok += grad && sum_param(g, ids[k]);
        }
        if (!want || ok != want) continue;
        int width = ln ? 2 * n->cols : n->cols;
        at[i] = total;
        total += ((size_t)pgn_sum_chunks(n->rows) * width + align - 1) / align * align;
        for (int k = 0; k < 2; k++) {
            if (ids[k] < 0 || !g->nodes[ids[k]].needs_grad) continue;
            int *e = table + (size_t)n_entries * PGN_SUM_ENTRY;
            e[0] = cols;
            e[1] = n->cols;
            e[2] = (int)at[i] + k * n->cols;
            e[3] = width;
            e[4] = (int)param_offset_of(g, ids[k]);
            g->sums_node[n_entries++] = i;
            cols += n->cols;
        }
    }
    g->n_sums = n_entries;
    g->sums_total = cols;
    int rc = 0;
    if (n_entries) {
        rc = pgn_tensor_init(&g->sums_partials, g->dev, 1, (int)total, err) ||
             pgn_tensor_fill_zero(&g->sums_partials, err) ||
             pgn_tensor_init(&g->sums_table, g->dev, n_entries, PGN_SUM_ENTRY, err) ||
             pgn_tensor_write(&g->sums_table, table, (size_t)n_entries * PGN_SUM_ENTRY, err);
        for (int i = 0; !rc && i < g->n_nodes; i++) {
            pgn_node *n = &g->nodes[i];
            if (at[i] == SIZE_MAX) continue;
            int width = n->kind == PGN_NODE_LAYERNORM ? 2 * n->cols : n->cols;
            rc = pgn_tensor_view(&n->sums, &g->sums_partials, at[i], pgn_sum_chunks(n->rows), width, err);
        }
    }
    free(table);
    free(at);
    return rc ? -1 : 0;
}

int pgn_graph_compile(pgn_graph *g, int loss, pgn_error *err) {
    g->loss = loss;
    if (plan_params(g, err)) return -1;
    int *last = malloc((size_t)g->n_nodes * sizeof *last);
    if (!last) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory compiling the graph");
        return -1;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        last[i] = -1;
        const pgn_node *n = &g->nodes[i];
        const int in_ids[3] = {n->a, n->b, n->c};
        for (int k = 0; k < 3; k++)
            if (in_ids[k] >= 0) last[in_ids[k]] = i;
    }
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i].grad_of_input = add_grad_input(g, &g->nodes[i], last);
    free(last);
    for (int i = 0; i < g->n_nodes; i++) {
        pgn_node *n = &g->nodes[i];
        bool param = n->kind == PGN_NODE_PARAM;
        if (n->grad_of_input >= 0) {
            if (pgn_tensor_init(&n->value, g->dev, n->rows, n->cols, err) ||
                pgn_tensor_share(&n->grad, &g->nodes[n->grad_of_input ? n->b : n->a].grad, err))
                return -1;
        } else if (shares_matmul(g, n)) {
            /* bias without an activation: y is z, and dy is the matmul's dz; one buffer each */
            pgn_node *A = &g->nodes[n->a];
            if (pgn_tensor_view(&n->value, &A->value, 0, n->rows, n->cols, err) ||
                (n->needs_grad && pgn_tensor_view(&n->grad, &A->grad, 0, n->rows, n->cols, err)))
                return -1;
        } else {
            if (!param && pgn_tensor_init(&n->value, g->dev, n->rows, n->cols, err)) return -1;
            if (!param && n->needs_grad && pgn_tensor_init(&n->grad, g->dev, n->rows, n->cols, err))
                return -1;
        }
        if (n->needs_grad && n->consumers > 1 &&
            pgn_tensor_init(&n->tmp, g->dev, n->rows, n->cols, err))
            return -1;
        int ar, ac;
        aux_shape(g, n, &ar, &ac);
        if (ac && pgn_tensor_init(&n->aux, g->dev, ar, ac, err)) return -1;
        if (n->kind == PGN_NODE_ATTENTION && n->needs_grad && pgn_tensor_init(&n->scratch, g->dev, ar, ac, err))
            return -1;
    }
    if (plan_sums(g, err)) return -1;
    /* The loss node's input gets its gradient from the fused loss kernel: it must exist. */
    const pgn_node *L = &g->nodes[loss];
    if (!ops[L->kind].loss) return shape_error(g, "compile", err, "the loss must be a loss op");
    if (!g->nodes[L->a].needs_grad)
        return shape_error(g, "compile", err, "the loss does not depend on any parameter");
    return 0;
}

void pgn_graph_release(pgn_graph *g) {
    for (int i = g->n_nodes - 1; i >= 0; i--) { /* views (of earlier nodes) before their parents */
        pgn_node *n = &g->nodes[i];
        pgn_tensor_release(&n->value);
        pgn_tensor_release(&n->grad);
        pgn_tensor_release(&n->aux);
        pgn_tensor_release(&n->tmp);
        pgn_tensor_release(&n->scratch);
        pgn_tensor_release(&n->sums);
    }
    pgn_tensor_release(&g->sums_partials); /* after the views into it */
    pgn_tensor_release(&g->sums_table);
    free(g->sums_node);
    g->sums_node = NULL;
    g->n_sums = 0;
    pgn_tensor_release(&g->param_store); /* after the views into it */
    pgn_tensor_release(&g->grad_store);
    free(g->nodes);
    free(g->params);
    free(g->param_offset);
    g->nodes = NULL;
    g->params = NULL;
    g->param_offset = NULL;
    g->n_nodes = g->cap_nodes = g->n_params = g->cap_params = 0;
}

/* With profiling on, a node's time is the sum of its kernels' OpenCL event times on a device
 * (pgn_launch adds them to the sink), or its host time on the host reference. */
static void profile_begin(pgn_graph *g, double *slot) {
    if (g->profile && g->dev) g->dev->profile_sink = slot;
}

static int profile_end(pgn_graph *g, double *slot, int rc, double t0) {
    if (!g->profile) return rc;
    if (g->dev)
        g->dev->profile_sink = NULL;
    else
        *slot += pgn_now_s() - t0;
    return rc;
}

int pgn_graph_forward(pgn_graph *g, int rows, bool training, uint64_t step, pgn_error *err) {
    if (rows < 1 || rows > g->max_batch || (g->seq && rows % g->seq))
        return shape_error(g, "forward", err, "batch rows");
    const pass p = {rows, g->seq, training, step};
    for (int i = 0; i < g->n_nodes; i++) {
        pgn_node *n = &g->nodes[i];
        double t0 = g->profile ? pgn_now_s() : 0;
        profile_begin(g, &n->prof_fwd);
        if (profile_end(g, &n->prof_fwd, ops[n->kind].forward(g, n, &p, err), t0)) return -1;
    }
    return 0;
}

int pgn_graph_backward(pgn_graph *g, int rows, pgn_error *err) {
    return pgn_graph_backward_from(g, g->loss, rows, err);
}

int pgn_graph_backward_from(pgn_graph *g, int from, int rows, pgn_error *err) {
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i].grad_written = false;
    g->nodes[from].grad_written = true; /* the caller's seed, unless from is the loss */
    const pass p = {rows, g->seq, false, 0};
    for (int i = from; i >= 0; i--) {
        pgn_node *n = &g->nodes[i];
        if (!n->needs_grad && !ops[n->kind].loss) continue;
        if (n->needs_grad && !n->grad_written && n->kind != PGN_NODE_PARAM)
            continue; /* nothing downstream of it reaches the loss */
        double t0 = g->profile ? pgn_now_s() : 0;
        profile_begin(g, &n->prof_bwd);
        if (profile_end(g, &n->prof_bwd, ops[n->kind].backward(g, n, &p, err), t0)) return -1;
    }
    /* the deferred column sums of the nodes up to from (entries are in node order) */
    int k = 0, total = 0;
    for (; k < g->n_sums && g->sums_node[k] <= from; k++) total += g->nodes[g->sums_node[k]].cols;
    return k ? pgn_op_finish_sums(k, total, pgn_sum_chunks(rows), &g->sums_table, &g->sums_partials, &g->grad_store,
                                  err)
             : 0;
}

const char *pgn_node_kind_name(pgn_node_kind kind) {
    return (unsigned)kind < PGN_NODE_KINDS ? ops[kind].name : "?";
}

/* ---- profiling -------------------------------------------------------------------------- */

void pgn_graph_profile_enable(pgn_graph *g, bool on) {
    g->profile = on;
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i].prof_fwd = g->nodes[i].prof_bwd = 0;
}

json_t *pgn_graph_profile_json(const pgn_graph *g) {
    json_t *fwd = json_array(), *bwd = json_array();
    for (int i = 0; i < g->n_nodes; i++) {
        const pgn_node *n = &g->nodes[i];
        if (n->kind == PGN_NODE_INPUT || n->kind == PGN_NODE_LABELS || n->kind == PGN_NODE_PARAM)
            continue;
        char label[96];
        snprintf(label, sizeof label, "%d:%s(%dx%d)", i, pgn_node_kind_name(n->kind), n->rows,
                 n->cols);
        json_array_append_new(fwd, json_pack("{s:s, s:f}", "node", label, "seconds", n->prof_fwd));
        json_array_append_new(bwd, json_pack("{s:s, s:f}", "node", label, "seconds", n->prof_bwd));
    }
    return json_pack("{s:o, s:o}", "forward", fwd, "backward", bwd);
}
