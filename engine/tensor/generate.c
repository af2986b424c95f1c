/* generate.c: text from a gpt checkpoint. The checkpoint is read and verified whole (its spec,
 * vocabulary and data digest); the prompt is encoded with its vocabulary; then one character at a
 * time through the batch-1 decoder (decode.c: each new character one row through the model,
 * attending to the cached positions), its logits read back and the next character drawn from them
 * on the host (temperature, top-k) with the counter RNG, so the same seed gives the same text on
 * every device. The model reads at most its context: once the text outgrows it, the decoder
 * starts over from the newer half of it (one re-read per context / 2 characters). Also the
 * generate job's spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/graph.h"
#include "pgn_math.h"

#define PGN_STREAM_SAMPLE 0x53414d504cULL /* "SAMPL" */
#define PGN_GENERATE_MAX_TOKENS 100000
#define PGN_GENERATE_MAX_PROMPT_BYTES 65536

/* ---- the spec ----------------------------------------------------------------------------- */

int pgn_generate_spec_parse(const json_t *root, pgn_generate_spec *g, pgn_error *err) {
    static const char *const keys[] = {"kind", "name", "device", "job", "prompt", "max_tokens", "temperature",
                                       "top_k", "seed", "stream", NULL};
    if (pgn_spec_only_keys(root, "", keys, err)) return -1;
    const json_t *prompt = json_object_get(root, "prompt");
    if (!prompt) return pgn_spec_fail(err, "prompt", "required (the text to continue)");
    if (!json_is_string(prompt)) return pgn_spec_fail(err, "prompt", "must be a string");
    size_t len = json_string_length(prompt);
    if (len == 0) return pgn_spec_fail(err, "prompt", "must not be empty");
    if (len > PGN_GENERATE_MAX_PROMPT_BYTES)
        return pgn_spec_fail(err, "prompt", "must be at most %d bytes", PGN_GENERATE_MAX_PROMPT_BYTES);
    if (strlen(json_string_value(prompt)) != len) return pgn_spec_fail(err, "prompt", "must not contain NUL characters");
    long long job = 0, max_tokens = 200, top_k = 0, seed = 0;
    g->temperature = 1.0f;
    if (pgn_spec_int(root, "job", "job", 1, (long long)9007199254740991LL, &job, err) ||
        pgn_spec_int(root, "max_tokens", "max_tokens", 1, PGN_GENERATE_MAX_TOKENS, &max_tokens, err) ||
        pgn_spec_float(root, "temperature", "temperature", 0.0, false, 100.0, &g->temperature, err) ||
        pgn_spec_int(root, "top_k", "top_k", 0, PGN_TEXT_MAX_VOCAB, &top_k, err) ||
        pgn_spec_int(root, "seed", "seed", 0, (long long)9007199254740991LL, &seed, err) ||
        pgn_spec_bool(root, "stream", "stream", &g->stream, err))
        return -1;
    g->prompt = strdup(json_string_value(prompt));
    if (!g->prompt) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    g->job = job;
    g->max_tokens = (int)max_tokens;
    g->top_k = (int)top_k;
    g->seed = (uint64_t)seed;
    return 0;
}

json_t *pgn_generate_spec_to_json(const pgn_generate_spec *g) {
    json_t *j = json_pack("{s:s, s:i, s:o, s:i, s:I, s:b}", "prompt", g->prompt ? g->prompt : "", "max_tokens",
                          g->max_tokens, "temperature", pgn_json_real_f32(g->temperature), "top_k", g->top_k, "seed",
                          (json_int_t)g->seed, "stream", g->stream);
    if (j && g->job) json_object_set_new(j, "job", json_integer((json_int_t)g->job));
    return j;
}

/* ---- sampling ------------------------------------------------------------------------------- */

/* Orders candidates (qsort_r): the larger logit first, the smaller index among equals. */
static int by_logit(const void *a, const void *b, void *logits) {
    const float *l = logits;
    int i = *(const int *)a, j = *(const int *)b;
    if (l[i] != l[j]) return l[i] > l[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

int pgn_sample_token(const float *logits, int V, float temperature, int top_k, uint64_t seed, uint64_t index) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0.0f || top_k == 1) return best;
    /* the top_k likeliest, summed in index order whatever k */
    bool *in = malloc((size_t)V * sizeof *in);
    int *order = top_k > 0 && top_k < V ? malloc((size_t)V * sizeof *order) : NULL;
    if (!in || (top_k > 0 && top_k < V && !order)) {
        free(in);
        free(order);
        return best; /* no memory for sampling: the likeliest is still a valid answer */
    }
    for (int i = 0; i < V; i++) in[i] = !order;
    if (order) {
        for (int i = 0; i < V; i++) order[i] = i;
        qsort_r(order, (size_t)V, sizeof *order, by_logit, (void *)logits);
        for (int r = 0; r < top_k; r++) in[order[r]] = true;
    }
    float sum = 0.0f;
    for (int i = 0; i < V; i++)
        if (in[i]) sum += pgn_expf((logits[i] - logits[best]) / temperature);
    float target = pgn_rand_unit(seed, PGN_STREAM_SAMPLE, index) * sum, acc = 0.0f;
    int pick = best; /* when rounding leaves target at the total */
    for (int i = 0; i < V; i++) {
        if (!in[i]) continue;
        acc += pgn_expf((logits[i] - logits[best]) / temperature);
        if (target < acc) {
            pick = i;
            break;
        }
    }
    free(in);
    free(order);
    return pick;
}

/* ---- the checkpoint --------------------------------------------------------------------------- */

/* A gpt checkpoint opened for generation: its file, train spec and vocabulary. */
typedef struct {
    pgn_st_file file;
    bool open;
    pgn_train_spec train;
    uint64_t seed;
    pgn_vocab vocab;
    int64_t step;
} gpt_checkpoint;

static void checkpoint_close(gpt_checkpoint *c) {
    if (c->open) pgn_safetensors_close(&c->file);
    c->open = false;
    pgn_vocab_free(&c->vocab);
}

static int checkpoint_open(const char *path, gpt_checkpoint *c, pgn_error *err) {
    memset(c, 0, sizeof *c);
    if (!path) {
        pgn_error_set(err, PGN_E_NO_CHECKPOINT, "", "no checkpoint to generate from");
        return -1;
    }
    if (pgn_safetensors_open(path, &c->file, err)) {
        if (err->code == PGN_E_CHECKPOINT && strstr(err->message, "No such file"))
            err->code = PGN_E_NO_CHECKPOINT;
        return -1;
    }
    c->open = true;
    const char *spec_text = json_string_value(json_object_get(c->file.metadata, "spec"));
    const char *step = json_string_value(json_object_get(c->file.metadata, "step"));
    json_t *spec = spec_text ? json_loads(spec_text, 0, NULL) : NULL;
    pgn_error perr = {0};
    if (!spec || pgn_train_spec_parse(spec, &c->train, &perr) || c->train.model != PGN_MODEL_GPT) {
        json_decref(spec);
        checkpoint_close(c);
        return pgn_checkpoint_fail(err, path, "is not a gpt checkpoint (its spec: %s)",
                                   perr.message[0] ? perr.message : "not a gpt's");
    }
    c->seed = (uint64_t)json_integer_value(json_object_get(spec, "seed"));
    json_decref(spec);
    c->step = step ? strtoll(step, NULL, 10) : 0;
    if (pgn_checkpoint_vocab(&c->file, &c->vocab, err)) {
        checkpoint_close(c);
        return -1;
    }
    return 0;
}

/* The prompt's tokens (malloc'd, *n of them), checked against the model. */
static int encode_prompt(const pgn_generate_spec *g, const gpt_checkpoint *c, int32_t **tokens, size_t *n,
                         pgn_error *err) {
    size_t len = g->prompt ? strlen(g->prompt) : 0;
    if (len == 0) return pgn_spec_fail(err, "prompt", "must not be empty");
    *tokens = malloc(len * sizeof **tokens);
    if (!*tokens) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    if (pgn_vocab_encode(&c->vocab, g->prompt, len, *tokens, n, "prompt", err)) goto fail;
    int context = c->train.gpt.context;
    if (*n > (size_t)context) {
        pgn_spec_fail(err, "prompt", "%zu characters; the model's context holds %d", *n, context);
        goto fail;
    }
    if (g->top_k > c->vocab.size) {
        pgn_spec_fail(err, "top_k", "must be at most the vocabulary's %d characters", c->vocab.size);
        goto fail;
    }
    return 0;
fail:
    free(*tokens);
    *tokens = NULL;
    return -1;
}

int pgn_generate_check(const pgn_generate_spec *g, const char *checkpoint, pgn_gpt_info *info, pgn_error *err) {
    gpt_checkpoint c;
    if (checkpoint_open(checkpoint, &c, err)) return -1;
    int32_t *tokens = NULL;
    size_t n = 0;
    int rc = encode_prompt(g, &c, &tokens, &n, err);
    if (rc == 0 && info) *info = (pgn_gpt_info){.gpt = c.train.gpt, .vocab = c.vocab.size, .step = c.step};
    free(tokens);
    checkpoint_close(&c);
    return rc;
}

/* ---- generating ------------------------------------------------------------------------------ */

int pgn_generate_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                     const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    const pgn_generate_spec *g = &spec->generate;
    gpt_checkpoint c;
    if (checkpoint_open(opts->source_checkpoint, &c, err)) return -1;
    int T = c.train.gpt.context, V = c.vocab.size;
    /* past the context the model keeps reading its newer half: one re-read per T / 2 tokens */
    size_t keep = T / 2 > 0 ? (size_t)(T / 2) : 1;
    int32_t *tokens = NULL, *all = NULL;
    size_t n_prompt = 0;
    float *logits = malloc((size_t)V * sizeof *logits);
    pgn_text text = {0};
    pgn_gpt_decoder *dec = NULL;
    int rc = logits ? 0 : -1;
    if (rc) pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
    if (rc == 0 && !c.file.digest_checked)
        rc = pgn_checkpoint_fail(err, c.file.path, "metadata has no \"%s\", so its tensor data cannot be verified",
                                 PGN_ST_DATA_SHA256);
    if (rc == 0) rc = encode_prompt(g, &c, &tokens, &n_prompt, err);
    if (rc == 0 && !(all = malloc((n_prompt + (size_t)g->max_tokens) * sizeof *all))) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        rc = -1;
    }
    if (rc == 0) rc = pgn_gpt_decoder_open(dev, &c.train.gpt, V, &c.file, &dec, err);
    pgn_text_puts(&text, g->prompt ? g->prompt : "");
    double t0 = pgn_now_s();
    size_t n = n_prompt;
    if (rc == 0) {
        memcpy(all, tokens, n_prompt * sizeof *all);
        rc = pgn_gpt_decoder_prefill(dec, all, (int)n, logits, err);
    }
    for (int i = 0; rc == 0 && i < g->max_tokens; i++) {
        if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
            pgn_error_set(err, PGN_E_CANCELLED, "", "stopped after %d characters", i);
            rc = -1;
            break;
        }
        int32_t next = pgn_sample_token(logits, V, g->temperature, g->top_k, g->seed, (uint64_t)i);
        all[n++] = next;
        char piece[4];
        size_t bytes = pgn_vocab_put(&c.vocab, next, piece);
        pgn_text_put(&text, piece, bytes);
        if (hooks && hooks->on_text) hooks->on_text(hooks->ctx, i, piece, bytes);
        if (i + 1 == g->max_tokens) break;
        rc = pgn_gpt_decoder_position(dec) < T ? pgn_gpt_decoder_feed(dec, next, logits, err)
                                               : pgn_gpt_decoder_prefill(dec, all + n - keep, (int)keep, logits, err);
    }
    double seconds = pgn_now_s() - t0;
    char *full = pgn_text_take(&text);
    if (rc == 0 && !full) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        rc = -1;
    }
    if (rc == 0) {
        size_t plen = strlen(g->prompt);
        int made = (int)(n - n_prompt);
        *result = json_pack("{s:s, s:s, s:s, s:i, s:f, s:f, s:s, s:I, s:I, s:i}", "text", full, "prompt", g->prompt,
                            "completion", full + plen, "tokens", made, "seconds", seconds, "tokens_per_second",
                            seconds > 0 ? made / seconds : 0.0, "device", dev ? dev->info.id : "host", "seed",
                            (json_int_t)g->seed, "checkpoint_step", (json_int_t)c.step, "vocab", V);
    }
    free(full);
    free(all);
    free(tokens);
    free(logits);
    pgn_gpt_decoder_close(dec);
    checkpoint_close(&c);
    return rc;
}
