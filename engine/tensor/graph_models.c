/* graph_models.c: the graphs of the models a train job names (the MLP, the GPT), the
 * initialisation of their parameters from the counter RNG, and the weights' SHA-256 that runs
 * are compared by. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/graph.h"
#include "pgn_math.h"
#include "pgn_ops.h"

/* RNG streams for initialisation: parameter i uses stream PGN_STREAM_INIT + i. */
#define PGN_STREAM_INIT 0x494e4954ULL /* "INIT" */

/* A standard normal draw by Marsaglia's polar method from the counter RNG at *counter (which it
 * advances): only +, *, / and our own log and the correctly rounded sqrt, so the draw is the same
 * on every machine. */
static float normal_draw(uint64_t seed, uint64_t stream, uint64_t *counter) {
    for (;;) {
        float u = pgn_rand_unit(seed, stream, (*counter)++) * 2.0f - 1.0f;
        float v = pgn_rand_unit(seed, stream, (*counter)++) * 2.0f - 1.0f;
        float s = u * u + v * v;
        if (s > 0.0f && s < 1.0f) return u * pgn_sqrt(-2.0f * pgn_logf(s) / s);
    }
}

/* The uniform bound of a PGN_PARAM_INIT_SPEC parameter: weights are (fan_in, fan_out); a bias
 * (1, fan_out) takes the fan-in of the weight created just before it. */
static float spec_bound(const pgn_graph *g, int p, pgn_init kind) {
    const pgn_node *n = &g->nodes[g->params[p]];
    bool is_bias = n->rows == 1 && p > 0;
    int fan_in = is_bias ? g->nodes[g->params[p - 1]].rows : n->rows;
    int fan_out = n->cols;
    if (kind == PGN_INIT_KAIMING) return is_bias ? 0.0f : sqrtf(6.0f / (float)fan_in);
    if (kind == PGN_INIT_XAVIER) return is_bias ? 0.0f : sqrtf(6.0f / (float)(fan_in + fan_out));
    return 1.0f / sqrtf((float)fan_in);
}

int pgn_graph_init_params(pgn_graph *g, pgn_init kind, pgn_error *err) {
    for (int p = 0; p < g->n_params; p++) {
        pgn_node *n = &g->nodes[g->params[p]];
        size_t count = pgn_tensor_count(&n->value);
        float *v = malloc(count * sizeof *v);
        if (!v) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %zu floats", count);
            return -1;
        }
        uint64_t stream = PGN_STREAM_INIT + (uint64_t)p, counter = 0;
        float bound = n->init == PGN_PARAM_INIT_SPEC ? spec_bound(g, p, kind) : 0.0f;
        for (size_t i = 0; i < count; i++) {
            switch (n->init) {
            case PGN_PARAM_INIT_SPEC:
                v[i] = kind == PGN_INIT_ZEROS ? 0.0f : (pgn_rand_unit(g->seed, stream, i) * 2.0f - 1.0f) * bound;
                break;
            case PGN_PARAM_INIT_NORMAL: v[i] = normal_draw(g->seed, stream, &counter) * n->init_value; break;
            case PGN_PARAM_INIT_CONST: v[i] = n->init_value; break;
            }
        }
        int rc = pgn_tensor_write(&n->value, v, count, err);
        free(v);
        if (rc) return -1;
    }
    return 0;
}

int pgn_graph_build_mlp(pgn_graph *g, const pgn_train_spec *t, pgn_error *err) {
    int x = pgn_graph_input(g, t->layers[0], err);
    int labels = pgn_graph_labels(g, err);
    if (x < 0 || labels < 0) return -1;
    int L = t->n_layers - 1;
    for (int l = 0; l < L; l++) {
        char wname[48], bname[48];
        snprintf(wname, sizeof wname, "layers.%d.weight", l);
        snprintf(bname, sizeof bname, "layers.%d.bias", l);
        int w = pgn_graph_param(g, wname, t->layers[l], t->layers[l + 1], err);
        int b = pgn_graph_param(g, bname, 1, t->layers[l + 1], err);
        if (w < 0 || b < 0) return -1;
        int z = pgn_graph_matmul(g, x, false, w, false, err);
        if (z < 0) return -1;
        bool hidden = l < L - 1;
        x = pgn_graph_bias_act(g, z, b, hidden ? (int)t->activation : PGN_ACT_CODE_NONE, err);
        if (x < 0) return -1;
        if (hidden && t->dropout > 0.0f && (x = pgn_graph_dropout(g, x, t->dropout, err)) < 0)
            return -1;
    }
    int loss = t->loss == PGN_LOSS_MSE ? pgn_graph_mse(g, x, labels, err)
                                       : pgn_graph_xent(g, x, labels, err);
    if (loss < 0 || pgn_graph_compile(g, loss, err)) return -1;
    return pgn_graph_init_params(g, t->init, err);
}

/* GPT-2's initialisation (as nanoGPT): matrices and tables normal(0, 0.02), the projections back
 * into the residual stream 0.02 / sqrt(2 n_layer), biases 0, LayerNorms weight 1, bias 0. */
#define GPT_INIT_STD 0.02f

/* A parameter named prefix.name; -1 on failure. */
static int gpt_param(pgn_graph *g, const char *prefix, const char *name, int rows, int cols, pgn_param_init init,
                     float value, bool decay, pgn_error *err) {
    char full[sizeof g->nodes[0].name];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    return pgn_graph_param_init(g, full, rows, cols, init, value, decay, err);
}

/* LayerNorm with its weight and bias named prefix.{weight,bias}. */
static int gpt_layernorm(pgn_graph *g, int x, const char *prefix, int C, pgn_error *err) {
    int w = gpt_param(g, prefix, ".weight", 1, C, PGN_PARAM_INIT_CONST, 1.0f, false, err);
    int b = gpt_param(g, prefix, ".bias", 1, C, PGN_PARAM_INIT_CONST, 0.0f, false, err);
    return w < 0 || b < 0 ? -1 : pgn_graph_layernorm(g, x, w, b, err);
}

/* x (B, in) W (in, out) + bias, then act, with W and bias named prefix.{weight,bias}. */
static int gpt_linear(pgn_graph *g, int x, const char *prefix, int in, int out, int act, float std,
                      pgn_error *err) {
    int w = gpt_param(g, prefix, ".weight", in, out, PGN_PARAM_INIT_NORMAL, std, true, err);
    int b = gpt_param(g, prefix, ".bias", 1, out, PGN_PARAM_INIT_CONST, 0.0f, false, err);
    if (w < 0 || b < 0) return -1;
    int z = pgn_graph_matmul(g, x, false, w, false, err);
    return z < 0 ? -1 : pgn_graph_bias_act(g, z, b, act, err);
}

static int gpt_dropout(pgn_graph *g, int x, float p, pgn_error *err) {
    return p > 0.0f ? pgn_graph_dropout(g, x, p, err) : x;
}

int pgn_graph_build_gpt(pgn_graph *g, const pgn_train_spec *t, int vocab, pgn_error *err) {
    const pgn_gpt_spec *s = &t->gpt;
    int C = s->d_model, L = s->n_layer;
    float proj_std = GPT_INIT_STD / sqrtf(2.0f * (float)L);
    g->seq = s->context;
    int tok = pgn_graph_tokens(g, err), labels = pgn_graph_labels(g, err);
    int wte = pgn_graph_param_init(g, "transformer.wte.weight", vocab, C, PGN_PARAM_INIT_NORMAL, GPT_INIT_STD,
                                   false, err);
    int wpe = pgn_graph_param_init(g, "transformer.wpe.weight", s->context, C, PGN_PARAM_INIT_NORMAL,
                                   GPT_INIT_STD, false, err);
    if (tok < 0 || labels < 0 || wte < 0 || wpe < 0) return -1;
    int x = gpt_dropout(g, pgn_graph_embed(g, tok, wte, wpe, err), t->dropout, err);
    for (int l = 0; l < L && x >= 0; l++) {
        char p[64], q[80];
        snprintf(p, sizeof p, "transformer.h.%d", l);
        /* x = x + proj(attention(c_attn(ln_1(x)))) */
        snprintf(q, sizeof q, "%s.ln_1", p);
        int h = gpt_layernorm(g, x, q, C, err);
        snprintf(q, sizeof q, "%s.attn.c_attn", p);
        int qkv = h < 0 ? -1 : gpt_linear(g, h, q, C, 3 * C, PGN_ACT_CODE_NONE, GPT_INIT_STD, err);
        int a = qkv < 0 ? -1 : pgn_graph_attention(g, qkv, s->n_head, err);
        snprintf(q, sizeof q, "%s.attn.c_proj", p);
        a = a < 0 ? -1 : gpt_dropout(g, gpt_linear(g, a, q, C, C, PGN_ACT_CODE_NONE, proj_std, err), t->dropout, err);
        x = a < 0 ? -1 : pgn_graph_add(g, x, a, err);
        /* x = x + c_proj(gelu(c_fc(ln_2(x)))) */
        snprintf(q, sizeof q, "%s.ln_2", p);
        h = x < 0 ? -1 : gpt_layernorm(g, x, q, C, err);
        snprintf(q, sizeof q, "%s.mlp.c_fc", p);
        int f = h < 0 ? -1 : gpt_linear(g, h, q, C, 4 * C, PGN_ACT_CODE_GELU, GPT_INIT_STD, err);
        snprintf(q, sizeof q, "%s.mlp.c_proj", p);
        f = f < 0 ? -1 : gpt_dropout(g, gpt_linear(g, f, q, 4 * C, C, PGN_ACT_CODE_NONE, proj_std, err), t->dropout, err);
        x = f < 0 ? -1 : pgn_graph_add(g, x, f, err);
    }
    x = x < 0 ? -1 : gpt_layernorm(g, x, "transformer.ln_f", C, err);
    if (x < 0) return -1;
    int logits;
    if (s->tie_embeddings) {
        logits = pgn_graph_matmul(g, x, false, wte, true, err);
    } else {
        int head = pgn_graph_param_init(g, "lm_head.weight", C, vocab, PGN_PARAM_INIT_NORMAL, GPT_INIT_STD, true, err);
        logits = head < 0 ? -1 : pgn_graph_matmul(g, x, false, head, false, err);
    }
    int loss = logits < 0 ? -1 : pgn_graph_xent(g, logits, labels, err);
    if (loss < 0 || pgn_graph_compile(g, loss, err)) return -1;
    return pgn_graph_init_params(g, PGN_INIT_PYTORCH, err);
}

static int hash_tensor(pgn_sha256 *s, const pgn_tensor *t, pgn_error *err) {
    size_t n = pgn_tensor_count(t);
    float *v = malloc(n * sizeof *v);
    unsigned char *bytes = malloc(n * 4);
    if (!v || !bytes) {
        free(v);
        free(bytes);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %zu floats", n);
        return -1;
    }
    int rc = pgn_tensor_read(t, v, n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) { /* little-endian whatever the host order */
        pgn_u32 u = pgn_bits(v[i]);
        for (int k = 0; k < 4; k++) bytes[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
    if (rc == 0) pgn_sha256_update(s, bytes, n * 4);
    free(v);
    free(bytes);
    return rc;
}

int pgn_graph_weights_sha256(pgn_graph *g, char out[65], pgn_error *err) {
    pgn_sha256 s;
    pgn_sha256_init(&s);
    for (int p = 0; p < g->n_params; p++)
        if (hash_tensor(&s, &g->nodes[g->params[p]].value, err)) return -1;
    unsigned char digest[32];
    pgn_sha256_final(&s, digest);
    pgn_sha256_hex(digest, out);
    return 0;
}

