/* graph.h: a model as a graph of ops, built once. Forward runs the nodes in order; backward
 * runs each node's vector-Jacobian product in reverse, so the backward graph is derived from
 * the forward one. Every buffer (values, gradients, masks) is planned and allocated when the
 * graph is built, for batches of up to max_batch rows, and reused every step. */
#ifndef PGN_GRAPH_H
#define PGN_GRAPH_H

#include "tensor/tensor.h"

/* Bounds on a graph's size, far above what a model of the specs needs (a 12-layer GPT is about
 * 300 nodes and 150 parameters): the arrays grow as nodes are added, up to these. */
#define PGN_GRAPH_MAX_NODES 8192
#define PGN_GRAPH_MAX_PARAMS 4096

typedef enum {
    PGN_NODE_INPUT,     /* (B, features) float batch */
    PGN_NODE_LABELS,    /* (B, 1) int32 batch */
    PGN_NODE_PARAM,     /* (rows, cols) trainable */
    PGN_NODE_MATMUL,    /* op(a) op(b) */
    PGN_NODE_BIAS_ACT,  /* act(a + bias b), fused; a is a matmul whose value becomes z in place */
    PGN_NODE_ACT,       /* act(a) */
    PGN_NODE_DROPOUT,   /* a * mask, mask from (seed, step, element) while training */
    PGN_NODE_ADD,       /* a + b, same shapes */
    PGN_NODE_SUM_ROWS,  /* (1, cols) = sum over the batch rows of a */
    PGN_NODE_MEAN_ROWS, /* (1, cols) = mean over the batch rows of a */
    PGN_NODE_XENT,      /* softmax + cross-entropy of logits a against labels b: (B, 1) */
    PGN_NODE_MSE,       /* squared error of a against one-hot labels b: (B, 1) */
    PGN_NODE_TOKENS,    /* (B, 1) int32 batch of token ids: a sequence model's input */
    PGN_NODE_EMBED,     /* token embedding b[a] + position embedding c[row % seq] */
    PGN_NODE_LAYERNORM, /* LayerNorm of a's rows with weight b and bias c */
    PGN_NODE_ATTENTION, /* causal self-attention of heads heads over packed q, k, v in a */
    PGN_NODE_KINDS
} pgn_node_kind;

/* How pgn_graph_init_params sets a parameter. */
typedef enum {
    PGN_PARAM_INIT_SPEC,   /* by the spec's pgn_init, from the fan-in (an MLP's weights, biases) */
    PGN_PARAM_INIT_NORMAL, /* normal(0, init_value) */
    PGN_PARAM_INIT_CONST,  /* every element init_value */
} pgn_param_init;

typedef struct pgn_node {
    pgn_node_kind kind;
    int a, b, c;       /* input node ids, -1 when unused */
    int rows, cols;    /* shape at max_batch */
    bool batched;      /* rows follow the batch size */
    bool ta, tb;       /* matmul: transpose a, b */
    int act;           /* PGN_ACT_CODE_* for bias_act and act */
    float p;           /* dropout probability */
    int heads;         /* attention: heads */
    pgn_param_init init; /* parameters: how they start, and init_value (std or constant) */
    float init_value;
    bool decay;        /* parameters: weight decay applies (matrices; not biases, norms, tables) */
    bool needs_grad;   /* a parameter, or computed from one */
    int consumers;     /* nodes that read this one */
    int epilogue;      /* matmul: the bias_act node fused into its kernel, or -1 */
    char name[48];     /* parameters: "layers.0.weight" */
    pgn_tensor value;
    pgn_tensor grad;   /* dL/dvalue, when needs_grad */
    int grad_of_input; /* add: its grad is input a's (0) or b's (1) grad buffer (pgn_graph_compile), else -1 */
    pgn_tensor aux;    /* dropout mask; loss nodes: int32 predictions */
    pgn_tensor tmp;    /* a second gradient contribution before it is added (consumers > 1) */
    pgn_tensor scratch; /* attention: the gradients of its scores, as large as aux */
    pgn_tensor sums;    /* bias_act, layernorm: its parameter gradients' chunk partials, a view of
                           the graph's sums_partials, finished with the others' in one launch */
    bool grad_written; /* this backward pass has written grad (later ones accumulate) */
    double prof_fwd, prof_bwd; /* seconds, with profiling on (pgn_graph_profile_enable) */
} pgn_node;

typedef struct pgn_graph {
    pgn_device *dev;
    int max_batch; /* rows: samples, or tokens (sequences times seq) */
    int seq;       /* a sequence model's tokens per sequence in the next pass (0: none) */
    uint64_t seed;
    int n_nodes, cap_nodes;
    pgn_node *nodes; /* owned; grows while the graph is built (pointers into it move then) */
    int n_params, cap_params;
    int *params; /* node ids in creation order: the checkpoint order; owned */
    int input, labels, loss;          /* node ids */
    /* Every parameter's value (and gradient) is a view into one store, at param_offset[p], so
     * an optimizer updates all of them in one launch. Padding between them stays zero. */
    pgn_tensor param_store, grad_store;
    size_t *param_offset; /* n_params of them; owned */
    size_t store_elems;
    size_t decay_elems; /* the parameters that decay come first in the stores: [0, decay_elems) */
    bool loss_is_mse;
    int loss_rows; /* the rows the loss is the mean over (0: the pass's): data-parallel ranks
                      each take part of a batch whose mean loss is their sum */
    bool profile; /* pgn_graph_profile_enable: each node's prof_fwd and prof_bwd */
    /* Column sums of parameter gradients (biases, LayerNorms' weights and biases) whose finish is
     * deferred to the end of a backward pass, all in one launch (pgn_op_finish_sums): the nodes'
     * chunk partials, the table of entries (PGN_SUM_ENTRY ints each) and each entry's node. */
    pgn_tensor sums_partials, sums_table;
    int n_sums, sums_total; /* entries, and their columns in all */
    int *sums_node;         /* n_sums node ids, ascending; owned */
} pgn_graph;

/* ---- building --------------------------------------------------------------------------- */

void pgn_graph_init(pgn_graph *g, pgn_device *dev, int max_batch, uint64_t seed);
int pgn_graph_input(pgn_graph *g, int features, pgn_error *err);
int pgn_graph_labels(pgn_graph *g, pgn_error *err);
int pgn_graph_param(pgn_graph *g, const char *name, int rows, int cols, pgn_error *err);
/* A parameter with its own initialisation and weight-decay rule (pgn_graph_param: the spec's
 * initialiser, and decay). */
int pgn_graph_param_init(pgn_graph *g, const char *name, int rows, int cols, pgn_param_init init,
                         float value, bool decay, pgn_error *err);
/* Sequence models: token ids (B, 1) int32 as the graph's input. */
int pgn_graph_tokens(pgn_graph *g, pgn_error *err);
/* (B, C) = wte[tokens] + wpe[row % seq]: wte (V, C), wpe (context, C). */
int pgn_graph_embed(pgn_graph *g, int tokens, int wte, int wpe, pgn_error *err);
/* LayerNorm of x's rows with weight w and bias b (each (1, C)). */
int pgn_graph_layernorm(pgn_graph *g, int x, int w, int b, pgn_error *err);
/* Causal self-attention of heads heads over qkv (B, 3C) -> (B, C); seq gives the sequences. */
int pgn_graph_attention(pgn_graph *g, int qkv, int heads, pgn_error *err);
int pgn_graph_matmul(pgn_graph *g, int a, bool ta, int b, bool tb, pgn_error *err);
int pgn_graph_bias_act(pgn_graph *g, int a, int bias, int act, pgn_error *err);
int pgn_graph_act(pgn_graph *g, int a, int act, pgn_error *err);
int pgn_graph_dropout(pgn_graph *g, int a, float p, pgn_error *err);
int pgn_graph_add(pgn_graph *g, int a, int b, pgn_error *err);
int pgn_graph_sum_rows(pgn_graph *g, int a, bool mean, pgn_error *err);
int pgn_graph_xent(pgn_graph *g, int logits, int labels, pgn_error *err);
int pgn_graph_mse(pgn_graph *g, int pred, int labels, pgn_error *err);

/* Allocates every buffer on the graph's device; after this no step allocates. */
int pgn_graph_compile(pgn_graph *g, int loss, pgn_error *err);
/* Releases the buffers and the graph's arrays (safe after a failed build, and twice). */
void pgn_graph_release(pgn_graph *g);

/* ---- running ---------------------------------------------------------------------------- */

/* Queues the forward pass over the first rows rows of the input. training enables dropout
 * (masks drawn for this step). The loss node's pred and loss values, and the gradient of its
 * input, are ready after it. */
int pgn_graph_forward(pgn_graph *g, int rows, bool training, uint64_t step, pgn_error *err);
/* Queues the backward pass; the gradients of every parameter are ready after it. */
int pgn_graph_backward(pgn_graph *g, int rows, pgn_error *err);
/* The same from any node whose grad the caller has filled (a vector-Jacobian seed); used by
 * gradient checks. */
int pgn_graph_backward_from(pgn_graph *g, int from, int rows, pgn_error *err);

/* Parameter initialisation by the counter RNG from the graph's seed (host side, then upload):
 * pytorch: U(-1/sqrt(fan_in), +); kaiming: U(-sqrt(6/fan_in), +); xavier: U(-sqrt(6/(fan_in +
 * fan_out)), +). Biases: pytorch U(-1/sqrt(fan_in), +), otherwise zero. */
int pgn_graph_init_params(pgn_graph *g, pgn_init kind, pgn_error *err);

/* Builds the MLP of a train spec: input -> (matmul -> bias_act [-> dropout])* -> loss. */
int pgn_graph_build_mlp(pgn_graph *g, const pgn_train_spec *t, pgn_error *err);
/* Builds the GPT of a train spec over a vocabulary of vocab characters, for batches of up to
 * g->max_batch tokens (sequences of t->gpt.context), compiles it and initialises it (GPT-2:
 * weights normal(0, 0.02), the residual projections 0.02 / sqrt(2 n_layer), biases 0,
 * LayerNorms 1 and 0). Parameters take GPT-2's names ("transformer.h.0.attn.c_attn.weight",
 * stored (in, out) as GPT-2's Conv1D); weight decay applies to the blocks' matrices only. */
int pgn_graph_build_gpt(pgn_graph *g, const pgn_train_spec *t, int vocab, pgn_error *err);

/* SHA-256 over the parameters in order, as little-endian float32 bytes. */
int pgn_graph_weights_sha256(pgn_graph *g, char out[65], pgn_error *err);

/* Per-node timing: on a device, the OpenCL event time of each node's kernels (each launch is
 * waited for, so the run slows); on the host, wall time. For finding where time goes. */
void pgn_graph_profile_enable(pgn_graph *g, bool on);
/* {"forward":[{"node","op","seconds"}...],"backward":[...]} New reference. */
json_t *pgn_graph_profile_json(const pgn_graph *g);

const char *pgn_node_kind_name(pgn_node_kind kind);

#endif
