/* export.c: a train job's weights as PyTorch loads them. From a checkpoint, verified as a resume
 * verifies it (layout, data digest, format, and the parameters read against its weights_sha256),
 * a safetensors file of the parameters alone, under the names and in the layout of the module
 * PyTorch code builds for the spec: an MLP's torch.nn.Sequential, a gpt's transformers
 * GPT2LMHeadModel (paragon.h says which exactly). No optimizer or trainer state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor/tensor.h"

#define PGN_WEIGHTS_FORMAT "paragon-weights-1"

/* One tensor of the export: the checkpoint's parameter `from`, (rows, cols) as paragon stores it,
 * under PyTorch's name; a vector (1-D, cols long) where PyTorch's module holds one (a bias, a
 * LayerNorm's weight), transposed to (cols, rows) where it holds the matrix as nn.Linear does
 * ([out, in]; paragon computes x W with W (in, out)). An alias is a second name for a parameter
 * listed before it (a tied head): not a parameter of its own, so not in weights_sha256. */
typedef struct {
    char from[96], name[96];
    int rows, cols;
    bool vector, transpose, alias;
} export_tensor;

/* The tensors in the order the model's graph creates its parameters: weights_sha256's order. */
typedef struct {
    export_tensor *t;
    int n, cap;
    bool oom;
} export_list;

static void put(export_list *l, const char *from, const char *name, int rows, int cols, bool vector,
                bool transpose, bool alias) {
    if (l->oom) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        export_tensor *grown = realloc(l->t, (size_t)cap * sizeof *grown);
        if (!grown) {
            l->oom = true;
            return;
        }
        l->t = grown;
        l->cap = cap;
    }
    export_tensor *t = &l->t[l->n++];
    *t = (export_tensor){.rows = rows, .cols = cols, .vector = vector, .transpose = transpose, .alias = alias};
    snprintf(t->from, sizeof t->from, "%s", from);
    snprintf(t->name, sizeof t->name, "%s", name);
}

/* ---- the MLP: torch.nn.Sequential ----------------------------------------------------------
 * Built the natural way from the spec: for each layer Linear(in, out), then, for a hidden layer,
 * its activation's module (none for "none") and Dropout(p) when the spec has dropout; the
 * output layer is the Linear alone. Layer k's Linear is module k * (modules of a hidden layer). */

static const char *torch_activation(pgn_activation act) {
    switch (act) {
    case PGN_ACT_RELU: return "torch.nn.ReLU()";
    case PGN_ACT_GELU: return "torch.nn.GELU(approximate=\"tanh\")"; /* pgn_gelu: the tanh form */
    case PGN_ACT_TANH: return "torch.nn.Tanh()";
    case PGN_ACT_SIGMOID: return "torch.nn.Sigmoid()";
    case PGN_ACT_NONE: break;
    }
    return NULL;
}

static int hidden_modules(const pgn_train_spec *t) {
    return 1 + (torch_activation(t->activation) != NULL) + (t->dropout > 0.0f);
}

static void mlp_tensors(const pgn_train_spec *t, export_list *l) {
    for (int k = 0; k + 1 < t->n_layers; k++) {
        char from[96], name[96];
        int in = t->layers[k], out = t->layers[k + 1], module = k * hidden_modules(t);
        snprintf(from, sizeof from, "layers.%d.weight", k);
        snprintf(name, sizeof name, "%d.weight", module);
        put(l, from, name, in, out, false, true, false);
        snprintf(from, sizeof from, "layers.%d.bias", k);
        snprintf(name, sizeof name, "%d.bias", module);
        put(l, from, name, 1, out, true, false, false);
    }
}

static void mlp_module(const pgn_train_spec *t, pgn_text *s) {
    pgn_text_puts(s, "torch.nn.Sequential(");
    for (int k = 0; k + 1 < t->n_layers; k++) {
        pgn_text_printf(s, "%storch.nn.Linear(%d, %d)", k ? ", " : "", t->layers[k], t->layers[k + 1]);
        if (k + 2 == t->n_layers) break;
        const char *act = torch_activation(t->activation);
        if (act) pgn_text_printf(s, ", %s", act);
        if (t->dropout > 0.0f) pgn_text_printf(s, ", torch.nn.Dropout(p=%g)", (double)t->dropout);
    }
    pgn_text_puts(s, ")");
}

/* ---- the gpt: transformers' GPT2LMHeadModel --------------------------------------------------
 * graph.c names a gpt's parameters as GPT-2 does and stores its block matrices (in, out) as
 * GPT-2's Conv1D holds them; PyTorch wants the biases and LayerNorms 1-D, and the head as
 * nn.Linear(d_model, vocab) holds it. GPT2LMHeadModel's state_dict lists a tied head under both
 * names, so a tied model's file has lm_head.weight too: the token table again. */

static void gpt_vector(export_list *l, const char *name, int n) {
    put(l, name, name, 1, n, true, false, false);
}

static void gpt_layernorm(export_list *l, const char *prefix, int C) {
    char name[96];
    snprintf(name, sizeof name, "%s.weight", prefix);
    gpt_vector(l, name, C);
    snprintf(name, sizeof name, "%s.bias", prefix);
    gpt_vector(l, name, C);
}

static void gpt_conv1d(export_list *l, const char *prefix, int in, int out) {
    char name[96];
    snprintf(name, sizeof name, "%s.weight", prefix);
    put(l, name, name, in, out, false, false, false);
    snprintf(name, sizeof name, "%s.bias", prefix);
    gpt_vector(l, name, out);
}

static void gpt_tensors(const pgn_train_spec *t, int vocab, export_list *l) {
    const pgn_gpt_spec *g = &t->gpt;
    int C = g->d_model;
    put(l, "transformer.wte.weight", "transformer.wte.weight", vocab, C, false, false, false);
    put(l, "transformer.wpe.weight", "transformer.wpe.weight", g->context, C, false, false, false);
    for (int b = 0; b < g->n_layer; b++) {
        char p[64];
        snprintf(p, sizeof p, "transformer.h.%d.ln_1", b);
        gpt_layernorm(l, p, C);
        snprintf(p, sizeof p, "transformer.h.%d.attn.c_attn", b);
        gpt_conv1d(l, p, C, 3 * C);
        snprintf(p, sizeof p, "transformer.h.%d.attn.c_proj", b);
        gpt_conv1d(l, p, C, C);
        snprintf(p, sizeof p, "transformer.h.%d.ln_2", b);
        gpt_layernorm(l, p, C);
        snprintf(p, sizeof p, "transformer.h.%d.mlp.c_fc", b);
        gpt_conv1d(l, p, C, 4 * C);
        snprintf(p, sizeof p, "transformer.h.%d.mlp.c_proj", b);
        gpt_conv1d(l, p, 4 * C, C);
    }
    gpt_layernorm(l, "transformer.ln_f", C);
    if (g->tie_embeddings)
        put(l, "transformer.wte.weight", "lm_head.weight", vocab, C, false, false, true);
    else
        put(l, "lm_head.weight", "lm_head.weight", C, vocab, false, true, false);
}

static void gpt_module(const pgn_train_spec *t, int vocab, pgn_text *s) {
    const pgn_gpt_spec *g = &t->gpt;
    pgn_text_printf(s, "transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=%d, n_positions=%d, "
                    "n_embd=%d, n_layer=%d, n_head=%d, n_inner=%d, activation_function=\"gelu_new\", "
                    "layer_norm_epsilon=%g, embd_pdrop=%g, resid_pdrop=%g, attn_pdrop=0.0, "
                    "tie_word_embeddings=%s))",
                    vocab, g->context, g->d_model, g->n_layer, g->n_head, 4 * g->d_model,
                    (double)PGN_LAYERNORM_EPS, (double)t->dropout, (double)t->dropout,
                    g->tie_embeddings ? "True" : "False");
}

/* ---- the conversion ------------------------------------------------------------------------- */

/* The export's pieces: its tensor data and the bytes before it (pgn_safetensors_head). */
typedef struct {
    unsigned char *head, *data;
    size_t head_len, data_len;
} export_parts;

/* Where the tensor `from` of f begins; its shape must be (rows, cols). */
static int locate(const pgn_st_file *f, const export_tensor *t, size_t *begin, pgn_error *err) {
    const json_t *e = json_object_get(f->header, t->from);
    if (!e)
        return pgn_checkpoint_fail(err, f->path, "tensor '%s' is missing (the spec's model has it)", t->from);
    const json_t *shape = json_object_get(e, "shape");
    if (json_array_size(shape) != 2 || json_integer_value(json_array_get(shape, 0)) != t->rows ||
        json_integer_value(json_array_get(shape, 1)) != t->cols)
        return pgn_checkpoint_fail(err, f->path, "tensor '%s' is not (%d, %d), the shape the spec gives it",
                                   t->from, t->rows, t->cols);
    /* open checked that data_offsets lie inside the data and match the shape */
    *begin = (size_t)json_integer_value(json_array_get(json_object_get(e, "data_offsets"), 0));
    return 0;
}

/* Copies a (rows, cols) matrix of 4-byte elements as (cols, rows): the bits unchanged. */
static void transpose4(const unsigned char *src, int rows, int cols, unsigned char *dst) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            memcpy(dst + ((size_t)c * rows + r) * PGN_ST_F32_BYTES,
                   src + ((size_t)r * cols + c) * PGN_ST_F32_BYTES, PGN_ST_F32_BYTES);
}

/* The data and header of l's tensors from f, after checking every one is there in its shape and
 * that the parameters, read in the graph's order, hash to the checkpoint's weights_sha256. */
static int convert(const pgn_st_file *f, const export_list *l, json_t *tensors, export_parts *p,
                   pgn_error *err) {
    size_t *begin = calloc((size_t)l->n + 1, sizeof *begin);
    if (!begin) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory exporting weights");
        return -1;
    }
    size_t total = 0;
    pgn_sha256 sha;
    pgn_sha256_init(&sha);
    for (int i = 0; i < l->n; i++) {
        const export_tensor *t = &l->t[i];
        if (locate(f, t, &begin[i], err)) goto fail;
        size_t bytes = (size_t)t->rows * t->cols * PGN_ST_F32_BYTES;
        if (!t->alias) pgn_sha256_update(&sha, f->data + begin[i], bytes);
        total += bytes;
    }
    unsigned char digest[32];
    char got[65];
    pgn_sha256_final(&sha, digest);
    pgn_sha256_hex(digest, got);
    const char *want = json_string_value(json_object_get(f->metadata, "weights_sha256"));
    if (!want) {
        pgn_checkpoint_fail(err, f->path, "metadata has no \"weights_sha256\"");
        goto fail;
    }
    if (strcmp(want, got)) {
        pgn_checkpoint_fail(err, f->path, "its parameters do not match its weights_sha256 (it holds "
                            "other tensors than its spec's model)");
        goto fail;
    }
    p->data = malloc(total ? total : 1);
    if (!p->data) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %zu bytes exporting weights", total);
        goto fail;
    }
    size_t at = 0;
    for (int i = 0; i < l->n; i++) {
        const export_tensor *t = &l->t[i];
        size_t bytes = (size_t)t->rows * t->cols * PGN_ST_F32_BYTES;
        if (t->transpose) transpose4(f->data + begin[i], t->rows, t->cols, p->data + at);
        else memcpy(p->data + at, f->data + begin[i], bytes);
        int64_t shape[2] = {t->rows, t->cols};
        if (t->transpose) shape[0] = t->cols, shape[1] = t->rows;
        json_object_set_new(tensors, t->name,
                            t->vector ? pgn_safetensors_entry(&shape[1], 1, at) : pgn_safetensors_entry(shape, 2, at));
        at += bytes;
    }
    p->data_len = total;
    free(begin);
    return 0;
fail:
    free(begin);
    return -1;
}

/* The export's metadata: what it is, what built it, and what PyTorch module takes it. */
static json_t *export_metadata(const pgn_st_file *f, const pgn_train_spec *t, const char *module) {
    json_t *m = json_pack("{s:s, s:s, s:s, s:s}", "format", PGN_WEIGHTS_FORMAT, "paragon_version",
                          PGN_VERSION, "model", t->model == PGN_MODEL_GPT ? "gpt" : "mlp", "pytorch", module);
    static const char *const copied[][2] = {{"spec", "spec"},   {"epoch", "epoch"},
                                            {"step", "step"},   {"weights_sha256", "paragon_weights_sha256"},
                                            {"vocab", "vocab"}, {"text_sha256", "text_sha256"}};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        const char *v = json_string_value(json_object_get(f->metadata, copied[i][0]));
        if (v) json_object_set_new(m, copied[i][1], json_string(v));
    }
    return m;
}

static int export_parts_of(const char *checkpoint, int fd, export_parts *p, pgn_error *err) {
    memset(p, 0, sizeof *p);
    struct stat st;
    if (fd < 0 && stat(checkpoint, &st) && errno == ENOENT) {
        pgn_error_set(err, PGN_E_NO_CHECKPOINT, "", "checkpoint '%s': no such file", checkpoint);
        return -1;
    }
    pgn_st_file f;
    if (fd < 0 ? pgn_safetensors_open(checkpoint, &f, err) : pgn_safetensors_open_fd(fd, checkpoint, &f, err))
        return -1;
    pgn_train_spec t;
    pgn_vocab vocab = {0};
    export_list l = {0};
    pgn_text module = {0};
    json_t *tensors = json_object(), *meta = NULL;
    char *module_text = NULL;
    int rc = -1;
    if (pgn_checkpoint_spec(&f, &t, err)) goto out;
    if (t.model == PGN_MODEL_GPT) {
        if (pgn_checkpoint_vocab(&f, &vocab, err)) goto out;
        gpt_tensors(&t, vocab.size, &l);
        gpt_module(&t, vocab.size, &module);
    } else {
        mlp_tensors(&t, &l);
        mlp_module(&t, &module);
    }
    module_text = pgn_text_take(&module);
    if (l.oom || !module_text) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory exporting weights");
        goto out;
    }
    if (convert(&f, &l, tensors, p, err)) goto out;
    meta = export_metadata(&f, &t, module_text);
    p->head = pgn_safetensors_head(tensors, meta, p->data, p->data_len, &p->head_len, err);
    rc = p->head ? 0 : -1;
out:
    if (rc) {
        free(p->data);
        memset(p, 0, sizeof *p);
    }
    json_decref(meta);
    json_decref(tensors);
    free(module_text);
    free(l.t);
    pgn_vocab_free(&vocab);
    pgn_safetensors_close(&f);
    return rc;
}

int pgn_weights_export(const char *checkpoint, int fd, unsigned char **out, size_t *len, pgn_error *err) {
    export_parts p;
    if (export_parts_of(checkpoint, fd, &p, err)) return -1;
    /* the data moves up behind the head in its own buffer: the weights are held once, not twice */
    unsigned char *whole = realloc(p.data, p.head_len + p.data_len);
    if (!whole) {
        free(p.head);
        free(p.data);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %zu bytes exporting weights",
                      p.head_len + p.data_len);
        return -1;
    }
    memmove(whole + p.head_len, whole, p.data_len);
    memcpy(whole, p.head, p.head_len);
    free(p.head);
    *out = whole;
    *len = p.head_len + p.data_len;
    return 0;
}

int pgn_checkpoint_verify(const char *checkpoint, int fd, pgn_error *err) {
    export_parts p;
    if (export_parts_of(checkpoint, fd, &p, err)) return -1;
    free(p.head);
    free(p.data);
    return 0;
}

int pgn_weights_export_file(const char *checkpoint, const char *path, pgn_error *err) {
    export_parts p;
    if (export_parts_of(checkpoint, -1, &p, err)) return -1;
    int rc = pgn_safetensors_write_bytes(path, p.head, p.head_len, p.data, p.data_len, err);
    free(p.head);
    free(p.data);
    return rc;
}
