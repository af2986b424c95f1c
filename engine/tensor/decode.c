/* decode.c: a gpt run one token at a time, for generation: the batch-1 path. Each block keeps a
 * cache of its q, k, v rows (laid out as the training graph's qkv), so a new token costs one row
 * through the model and its attention against the cache, never the prefix again. The weights
 * come from a checkpoint, packed once for the device's GEMM. Every op is the training graph's
 * on one row (GEMM elements, LayerNorm rows and GELU do not depend on the batch; attention's
 * decode is row t of its forward), so a token's logits have the bits the whole sequence's
 * forward gives its last row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "pgn_math.h"
#include "pgn_ops.h"

/* A linear layer x W + b: W (in, out) as stored, and its packed panels on a device. */
typedef struct {
    pgn_tensor w, b;
    pgn_gemm_packed packed;
} linear;

typedef struct {
    pgn_tensor ln1_w, ln1_b, ln2_w, ln2_b;
    linear attn, proj, fc, fc_proj;
    pgn_tensor cache; /* (context, 3C): q, k, v of every position so far */
} block;

struct pgn_gpt_decoder {
    pgn_device *dev;
    pgn_gpt_spec gpt;
    int V, pos;
    pgn_tensor wte, wpe, lnf_w, lnf_b, head; /* head: the untied output matrix (C, V) */
    block *blocks;
    /* activations: a context of rows for a prefill, the first row for a token */
    pgn_tensor tok, x, h, stats, qkv, a, z, f, g, logits, probs;
};

/* Every tensor of the decoder, each with the checkpoint name it loads from (NULL: not a
 * parameter). Calls fn(d, tensor, name, rows, cols, arg) in the checkpoint's order. */
typedef int (*tensor_fn)(pgn_gpt_decoder *d, pgn_tensor *t, const char *name, int rows, int cols, void *arg);

static int each_tensor(pgn_gpt_decoder *d, tensor_fn fn, void *arg) {
    int C = d->gpt.d_model, V = d->V, T = d->gpt.context;
    if (fn(d, &d->wte, "transformer.wte.weight", V, C, arg) || fn(d, &d->wpe, "transformer.wpe.weight", T, C, arg))
        return -1;
    for (int l = 0; l < d->gpt.n_layer; l++) {
        block *b = &d->blocks[l];
        const struct {
            pgn_tensor *t;
            const char *part;
            int rows, cols;
        } parts[] = {
            {&b->ln1_w, "ln_1.weight", 1, C},           {&b->ln1_b, "ln_1.bias", 1, C},
            {&b->attn.w, "attn.c_attn.weight", C, 3 * C}, {&b->attn.b, "attn.c_attn.bias", 1, 3 * C},
            {&b->proj.w, "attn.c_proj.weight", C, C},   {&b->proj.b, "attn.c_proj.bias", 1, C},
            {&b->ln2_w, "ln_2.weight", 1, C},           {&b->ln2_b, "ln_2.bias", 1, C},
            {&b->fc.w, "mlp.c_fc.weight", C, 4 * C},    {&b->fc.b, "mlp.c_fc.bias", 1, 4 * C},
            {&b->fc_proj.w, "mlp.c_proj.weight", 4 * C, C}, {&b->fc_proj.b, "mlp.c_proj.bias", 1, C},
        };
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
            char name[96];
            snprintf(name, sizeof name, "transformer.h.%d.%s", l, parts[i].part);
            if (fn(d, parts[i].t, name, parts[i].rows, parts[i].cols, arg)) return -1;
        }
        if (fn(d, &b->cache, NULL, T, 3 * C, arg)) return -1;
    }
    if (fn(d, &d->lnf_w, "transformer.ln_f.weight", 1, C, arg) || fn(d, &d->lnf_b, "transformer.ln_f.bias", 1, C, arg))
        return -1;
    if (!d->gpt.tie_embeddings && fn(d, &d->head, "lm_head.weight", C, V, arg)) return -1;
    const struct {
        pgn_tensor *t;
        int rows, cols;
    } row[] = {{&d->x, T, C}, {&d->h, T, C}, {&d->stats, T, 2}, {&d->qkv, 1, 3 * C}, {&d->a, T, C},
               {&d->z, T, C}, {&d->f, T, 4 * C}, {&d->g, T, 4 * C}, {&d->logits, T, V},
               {&d->probs, d->gpt.n_head * T, T}, {&d->tok, T, 1}};
    for (size_t i = 0; i < sizeof row / sizeof *row; i++)
        if (fn(d, row[i].t, NULL, row[i].rows, row[i].cols, arg)) return -1;
    return 0;
}

static int alloc_tensor(pgn_gpt_decoder *d, pgn_tensor *t, const char *name, int rows, int cols, void *arg) {
    (void)name, (void)arg;
    return pgn_tensor_init(t, d->dev, rows, cols, (pgn_error *)arg);
}

/* Collects the parameters as safetensors entries, with copies of their names (each_tensor's
 * are on its stack). */
typedef struct {
    pgn_st_entry *e;
    char (*names)[96];
    int n;
} entries;

static int list_param(pgn_gpt_decoder *d, pgn_tensor *t, const char *name, int rows, int cols, void *arg) {
    (void)d, (void)rows, (void)cols;
    entries *l = arg;
    if (!name) return 0;
    snprintf(l->names[l->n], sizeof l->names[0], "%s", name);
    l->e[l->n] = (pgn_st_entry){l->names[l->n], t};
    l->n++;
    return 0;
}

static int count_param(pgn_gpt_decoder *d, pgn_tensor *t, const char *name, int rows, int cols, void *arg) {
    (void)d, (void)t, (void)rows, (void)cols;
    if (name) ++*(int *)arg;
    return 0;
}

static int release_tensor(pgn_gpt_decoder *d, pgn_tensor *t, const char *name, int rows, int cols, void *arg) {
    (void)d, (void)name, (void)rows, (void)cols, (void)arg;
    pgn_tensor_release(t);
    return 0;
}

/* The parameters from the checkpoint (whose data digest pgn_safetensors_open checked). */
static int load(pgn_gpt_decoder *d, const pgn_st_file *f, pgn_error *err) {
    int n = 0;
    each_tensor(d, count_param, &n);
    entries l = {calloc((size_t)n, sizeof *l.e), calloc((size_t)n, sizeof *l.names), 0};
    int rc = -1;
    if (l.e && l.names) {
        each_tensor(d, list_param, &l);
        rc = pgn_safetensors_load_some(f, l.e, l.n, err);
    } else {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
    }
    free(l.e);
    free(l.names);
    return rc;
}

void pgn_gpt_decoder_close(pgn_gpt_decoder *d) {
    if (!d) return;
    for (int l = 0; d->blocks && l < d->gpt.n_layer; l++) {
        linear *lin[4] = {&d->blocks[l].attn, &d->blocks[l].proj, &d->blocks[l].fc, &d->blocks[l].fc_proj};
        for (int i = 0; i < 4; i++) pgn_gemm_packed_release(&lin[i]->packed);
    }
    if (d->blocks) each_tensor(d, release_tensor, NULL);
    free(d->blocks);
    free(d);
}

int pgn_gpt_decoder_open(pgn_device *dev, const pgn_gpt_spec *gpt, int vocab, const pgn_st_file *f,
                         pgn_gpt_decoder **out, pgn_error *err) {
    *out = NULL;
    pgn_gpt_decoder *d = calloc(1, sizeof *d);
    if (d) d->blocks = calloc((size_t)gpt->n_layer, sizeof *d->blocks);
    if (!d || !d->blocks) {
        free(d);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    d->dev = dev;
    d->gpt = *gpt;
    d->V = vocab;
    int rc = each_tensor(d, alloc_tensor, err);
    if (rc == 0) rc = load(d, f, err);
    for (int l = 0; rc == 0 && dev && l < gpt->n_layer; l++) {
        linear *lin[4] = {&d->blocks[l].attn, &d->blocks[l].proj, &d->blocks[l].fc, &d->blocks[l].fc_proj};
        for (int i = 0; rc == 0 && i < 4; i++) rc = pgn_gemm_pack(&lin[i]->w, lin[i]->w.rows, lin[i]->w.cols, &lin[i]->packed, err);
    }
    if (rc) {
        pgn_gpt_decoder_close(d);
        return -1;
    }
    *out = d;
    return 0;
}

/* y = act(x W + b) for rows rows, z the pre-activation (y may be z): the packed panels on a
 * device, the host's reference GEMM there; the same bits. */
static int linear_rows(int rows, const linear *l, const pgn_tensor *x, pgn_tensor *z, int act, pgn_tensor *y,
                       pgn_error *err) {
    if (x->dev) return pgn_op_gemm_bias_act_packed(rows, x, &l->packed, z, &l->b, act, y, err);
    return pgn_op_gemm_bias_act(rows, l->w.cols, l->w.rows, x, false, &l->w, false, z, &l->b, act, y, err);
}

/* The last LayerNorm and the head over rows rows, and the logits of the last read back. */
static int head_rows(pgn_gpt_decoder *d, int rows, float *logits, pgn_error *err) {
    int C = d->gpt.d_model, V = d->V;
    if (pgn_op_layernorm_forward(rows, &d->x, &d->lnf_w, &d->lnf_b, &d->h, &d->stats, err)) return -1;
    int rc = d->gpt.tie_embeddings ? pgn_op_gemm(rows, V, C, &d->h, false, &d->wte, true, &d->logits, err)
                                   : pgn_op_gemm(rows, V, C, &d->h, false, &d->head, false, &d->logits, err);
    if (rc) return -1;
    if (rows == 1) return pgn_tensor_read(&d->logits, logits, (size_t)V, err);
    float *all = malloc((size_t)rows * V * sizeof *all);
    if (!all) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    rc = pgn_tensor_read(&d->logits, all, (size_t)rows * V, err);
    if (rc == 0) memcpy(logits, all + (size_t)(rows - 1) * V, (size_t)V * sizeof *logits);
    free(all);
    return rc;
}

/* The MLP half of a block over rows rows: x += c_proj(gelu(c_fc(ln_2(x)))). */
static int mlp_rows(pgn_gpt_decoder *d, block *b, int rows, pgn_error *err) {
    return pgn_op_layernorm_forward(rows, &d->x, &b->ln2_w, &b->ln2_b, &d->h, &d->stats, err) ||
           linear_rows(rows, &b->fc, &d->h, &d->f, PGN_ACT_CODE_GELU, &d->g, err) ||
           linear_rows(rows, &b->fc_proj, &d->g, &d->z, PGN_ACT_CODE_NONE, &d->z, err) ||
           pgn_op_add(rows, &d->x, &d->z, &d->x, err);
}

int pgn_gpt_decoder_position(const pgn_gpt_decoder *d) { return d->pos; }

void pgn_gpt_decoder_reset(pgn_gpt_decoder *d) { d->pos = 0; }

int pgn_gpt_decoder_prefill(pgn_gpt_decoder *d, const int32_t *tokens, int n, float *logits, pgn_error *err) {
    int T = d->gpt.context;
    if (n < 1 || n > T) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "decoder: a prefill of %d tokens in a context of %d", n, T);
        return -1;
    }
    d->pos = 0;
    if (pgn_tensor_write(&d->tok, tokens, (size_t)n, err) ||
        pgn_op_embed_forward(n, n, &d->tok, &d->wte, &d->wpe, &d->x, err))
        return -1;
    for (int l = 0; l < d->gpt.n_layer; l++) {
        block *b = &d->blocks[l];
        /* the positions' q, k, v go straight into the cache, which attention reads as qkv */
        if (pgn_op_layernorm_forward(n, &d->x, &b->ln1_w, &b->ln1_b, &d->h, &d->stats, err) ||
            linear_rows(n, &b->attn, &d->h, &b->cache, PGN_ACT_CODE_NONE, &b->cache, err) ||
            pgn_op_attention_forward(n, n, d->gpt.n_head, &b->cache, &d->probs, &d->a, err) ||
            linear_rows(n, &b->proj, &d->a, &d->z, PGN_ACT_CODE_NONE, &d->z, err) ||
            pgn_op_add(n, &d->x, &d->z, &d->x, err) || mlp_rows(d, b, n, err))
            return -1;
    }
    d->pos = n;
    return logits ? head_rows(d, n, logits, err) : 0;
}

int pgn_gpt_decoder_feed(pgn_gpt_decoder *d, int32_t token, float *logits, pgn_error *err) {
    int C = d->gpt.d_model, T = d->gpt.context, t = d->pos;
    if (t >= T) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "decoder: position %d is past the context of %d", t, T);
        return -1;
    }
    if (pgn_tensor_write(&d->tok, &token, 1, err) || pgn_op_embed_at(t, &d->tok, &d->wte, &d->wpe, &d->x, err))
        return -1;
    size_t row_bytes = (size_t)3 * C * sizeof(float);
    for (int l = 0; l < d->gpt.n_layer; l++) {
        block *b = &d->blocks[l];
        /* x += proj(attention(c_attn(ln_1(x)))), this position's q, k, v kept in the cache */
        if (pgn_op_layernorm_forward(1, &d->x, &b->ln1_w, &b->ln1_b, &d->h, &d->stats, err) ||
            linear_rows(1, &b->attn, &d->h, &d->qkv, PGN_ACT_CODE_NONE, &d->qkv, err))
            return -1;
        if (d->dev ? pgn_device_copy(d->dev, d->qkv.mem, 0, b->cache.mem, (size_t)t * row_bytes, row_bytes, err)
                   : (memcpy((char *)b->cache.host + (size_t)t * row_bytes, d->qkv.host, row_bytes), 0))
            return -1;
        if (pgn_op_attention_decode(t, T, d->gpt.n_head, &b->cache, &d->probs, &d->a, err) ||
            linear_rows(1, &b->proj, &d->a, &d->z, PGN_ACT_CODE_NONE, &d->z, err) ||
            pgn_op_add(1, &d->x, &d->z, &d->x, err) || mlp_rows(d, b, 1, err))
            return -1;
    }
    d->pos++;
    return logits ? head_rows(d, 1, logits, err) : 0;
}
