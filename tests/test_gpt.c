/* test_gpt.c: the character GPT end to end in the engine: host and OpenCL train to the same bits,
 * the loss falls, a run stopped and resumed from its checkpoint ends where an uninterrupted one
 * does, weight decay touches matrices only, and generation gives the same text on every device
 * for a seed, refusing prompts the model cannot read. */
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "tensor/graph.h"
#include "tensor/optim.h"

static char dir[64], datasets[96];

static void write_text(const char *name, const char *text, int repeats) {
    char path[160];
    snprintf(path, sizeof path, "%s/%s", datasets, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    for (int i = 0; i < repeats; i++) fprintf(f, "%s %d. ", text, i % 7);
    fclose(f);
}

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/pgn-gpt-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR, dir);
    cr_assert_eq(mkdir(datasets, 0700), 0);
    write_text("tiny.txt", "the quick brown fox jumps over the lazy dog", 120);
    write_text("other.txt", "pack my box with five dozen liquor jugs", 120);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void teardown(void) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(gpt, .init = setup, .fini = teardown);

#define TINY_GPT(steps, extra)                                                                     \
    "{\"kind\":\"train\",\"seed\":3,\"model\":{\"type\":\"gpt\",\"n_layer\":2,\"n_head\":2,\"d_model\":16," \
    "\"context\":8},\"data\":{\"source\":\"text\",\"path\":\"tiny.txt\"},\"optimizer\":{\"type\":\"adamw\","  \
    "\"lr\":0.01,\"weight_decay\":0.1,\"clip_norm\":1.0},\"batch_size\":4,\"steps\":" #steps                  \
    ",\"log_every\":3,\"eval_every\":5,\"eval_windows\":6" extra "}"

static pgn_job_spec parse(const char *text) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    return spec;
}

typedef struct {
    char names[256][24];
    int64_t steps[256];
    double values[256];
    int count, stop_at, polls;
} recorder;

static void on_metric(void *ctx, const char *name, int64_t step, double value) {
    recorder *r = ctx;
    cr_assert_lt(r->count, 256);
    if (!strcmp(name, "tokens_per_second")) return; /* a timing: differs from run to run */
    snprintf(r->names[r->count], sizeof r->names[0], "%s", name);
    r->steps[r->count] = step;
    r->values[r->count++] = value;
}

static bool should_stop(void *ctx) {
    recorder *r = ctx;
    return r->stop_at && ++r->polls > r->stop_at;
}

/* Runs spec (checkpointing into ckpt when not NULL); 0 or -1 with err. */
static int run(const pgn_job_spec *spec, pgn_device *dev, const char *ckpt, bool resume, recorder *r,
               json_t **result, pgn_error *err) {
    pgn_run_options opts = {.data_dir = dir, .checkpoint_dir = ckpt, .resume = resume, .checkpoint_on_stop = true};
    pgn_run_hooks hooks = {.ctx = r, .on_metric = on_metric, .should_stop = should_stop};
    *result = NULL;
    return pgn_job_run(spec, dev, &opts, &hooks, result, err);
}

static const char *sha_of(const json_t *result) {
    return json_string_value(json_object_get(result, "weights_sha256"));
}

Test(gpt, host_and_opencl_train_to_the_same_bits_and_the_loss_falls) {
    pgn_job_spec spec = parse(TINY_GPT(15, ""));
    pgn_device *dev = test_open_cl_device();
    static recorder a, b;
    json_t *ra, *rb;
    pgn_error err = {0};
    cr_assert_eq(run(&spec, NULL, NULL, false, &a, &ra, &err), 0, "%s", err.message);
    cr_assert_eq(run(&spec, dev, NULL, false, &b, &rb, &err), 0, "%s", err.message);
    cr_assert_str_eq(sha_of(ra), sha_of(rb));
    cr_assert_eq(a.count, b.count);
    for (int i = 0; i < a.count; i++)
        cr_assert_eq(a.values[i], b.values[i], "metric %d (%s, step %lld)", i, a.names[i], (long long)a.steps[i]);
    /* loss per log_every (3) steps, lr with it, val_loss and val_accuracy per eval_every (5) */
    int losses = 0, vals = 0;
    double first_loss = 0, last_val = 0;
    for (int i = 0; i < a.count; i++) {
        if (!strcmp(a.names[i], "loss") && losses++ == 0) first_loss = a.values[i];
        if (!strcmp(a.names[i], "val_loss")) {
            vals++;
            last_val = a.values[i];
        }
    }
    cr_assert_eq(losses, 5);
    cr_assert_eq(vals, 3);
    int vocab = (int)json_integer_value(json_object_get(ra, "vocab"));
    cr_assert(vocab > 20 && vocab < 40, "%d characters", vocab);
    cr_assert_float_eq(first_loss, log((double)vocab), 0.5, "starts near ln V: %g", first_loss);
    cr_assert_lt(last_val, first_loss - 0.5, "val_loss %g after 15 steps from %g", last_val, first_loss);
    cr_assert_eq(json_integer_value(json_object_get(ra, "params")),
                 (json_int_t)pgn_gpt_param_count(&spec.train.gpt, vocab));
    json_decref(ra);
    json_decref(rb);
    pgn_device_close(dev);
}

/* Stopped (as a shutdown does: checkpoint where it stands) at step 7 of 15, mid log window,
 * then resumed: the same final weights and the same metrics as the run that never stopped. */
static void check_resume(pgn_device *dev) {
    pgn_job_spec spec = parse(TINY_GPT(15, ",\"checkpoint_every\":4"));
    char ckpt[128];
    snprintf(ckpt, sizeof ckpt, "%s/ck-%s", dir, dev ? "dev" : "host");
    cr_assert_eq(mkdir(ckpt, 0700), 0);
    static recorder whole, first, second;
    memset(&whole, 0, sizeof whole);
    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    json_t *rw, *r1, *r2;
    pgn_error err = {0};
    cr_assert_eq(run(&spec, dev, NULL, false, &whole, &rw, &err), 0, "%s", err.message);
    first.stop_at = 7;
    cr_assert_eq(run(&spec, dev, ckpt, false, &first, &r1, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert(strstr(err.message, "stopped at step 7; checkpointed"), "%s", err.message);
    cr_assert_eq(run(&spec, dev, ckpt, true, &second, &r2, &err), 0, "%s", err.message);
    cr_assert_str_eq(sha_of(rw), sha_of(r2));
    cr_assert_eq(json_integer_value(json_object_get(r2, "resumed_from_step")), 7);
    cr_assert_eq(first.count + second.count, whole.count);
    for (int i = 0; i < whole.count; i++) {
        const recorder *r = i < first.count ? &first : &second;
        int k = i < first.count ? i : i - first.count;
        cr_assert_str_eq(r->names[k], whole.names[i]);
        cr_assert_eq(r->values[k], whole.values[i], "%s at step %lld", whole.names[i], (long long)whole.steps[i]);
    }
    /* the finished checkpoint resumes to the same end, and another text is refused */
    static recorder again;
    memset(&again, 0, sizeof again);
    json_t *r3;
    cr_assert_eq(run(&spec, dev, ckpt, true, &again, &r3, &err), 0, "%s", err.message);
    cr_assert_str_eq(sha_of(r3), sha_of(rw));
    snprintf(spec.train.data.path, sizeof spec.train.data.path, "other.txt");
    pgn_job_spec other = spec;
    json_t *r4;
    cr_assert_eq(run(&other, dev, ckpt, true, &again, &r4, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "checkpoint");
    cr_assert(strstr(err.message, "different job spec") || strstr(err.message, "another text"), "%s", err.message);
    json_decref(rw);
    json_decref(r2);
    json_decref(r3);
}

/* The first element at which a tensor's bits differ between host and device (test_same_bits),
 * or -1. */
static long first_difference(const pgn_tensor *h, const pgn_tensor *d, uint32_t *hb, uint32_t *db) {
    size_t n = pgn_tensor_count(h);
    pgn_error err = {0};
    cr_assert_eq(pgn_tensor_read(h, hb, n, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(d, db, n, &err), 0, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        if (!test_same_bits(hb[i], db[i])) return (long)i;
    return -1;
}

/* One training step, node by node: from the same parameters and batch, every node's value and
 * gradient, and then every parameter after AdamW, has the host's bits on the device. Where the
 * SHA-256 comparison above says only that a device broke bit-identity, this names the op. */
Test(gpt, every_node_of_a_step_gives_the_host_bits) {
    pgn_job_spec spec = parse(TINY_GPT(1, ""));
    const pgn_train_spec *t = &spec.train;
    enum { V = 23, ROWS_MAX = 64 };
    int rows = t->batch_size * t->gpt.context;
    cr_assert_leq(rows, ROWS_MAX);
    int32_t tokens[ROWS_MAX], labels[ROWS_MAX];
    for (int i = 0; i < rows; i++) tokens[i] = (i * 7 + 3) % V, labels[i] = (i * 5 + 1) % V;
    pgn_device *dev = test_open_cl_device();
    pgn_graph g[2];
    pgn_optimizer o[2];
    pgn_error err = {0};
    for (int k = 0; k < 2; k++) {
        pgn_graph_init(&g[k], k ? dev : NULL, rows, spec.seed);
        cr_assert_eq(pgn_graph_build_gpt(&g[k], t, V, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_optim_init(&o[k], &g[k], &t->optimizer, t->steps, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_tensor_write(&g[k].nodes[g[k].input].value, tokens, (size_t)rows, &err), 0, "%s",
                     err.message);
        cr_assert_eq(pgn_tensor_write(&g[k].nodes[g[k].labels].value, labels, (size_t)rows, &err), 0, "%s",
                     err.message);
        cr_assert_eq(pgn_graph_forward(&g[k], rows, true, 0, &err), 0, "%s", err.message);
        cr_assert_eq(pgn_graph_backward(&g[k], rows, &err), 0, "%s", err.message);
    }
    size_t most = 0;
    for (int n = 0; n < g[0].n_nodes; n++) {
        size_t c = pgn_tensor_count(&g[0].nodes[n].value);
        if (c > most) most = c;
    }
    uint32_t *hb = malloc(most * 4), *db = malloc(most * 4);
    cr_assert(hb && db);
    for (int n = 0; n < g[0].n_nodes; n++) {
        const pgn_node *h = &g[0].nodes[n], *d = &g[1].nodes[n];
        const char *what[] = {"value", "gradient"};
        for (int w = 0; w < 2; w++) {
            if (w == 1 && !h->needs_grad) continue;
            long i = first_difference(w ? &h->grad : &h->value, w ? &d->grad : &d->value, hb, db);
            cr_assert_eq(i, -1, "node %d (%s %s): %s[%ld]: host %08x (%g) != device %08x (%g)", n,
                         pgn_node_kind_name(h->kind), h->name, what[w], i, hb[i < 0 ? 0 : i],
                         (double)pgn_float(hb[i < 0 ? 0 : i]), db[i < 0 ? 0 : i], (double)pgn_float(db[i < 0 ? 0 : i]));
        }
    }
    for (int k = 0; k < 2; k++) cr_assert_eq(pgn_optim_step(&o[k], &g[k], &err), 0, "%s", err.message);
    for (int p = 0; p < g[0].n_params; p++) { /* the stores' padding differs: parameter by parameter */
        const pgn_node *h = &g[0].nodes[g[0].params[p]], *d = &g[1].nodes[g[1].params[p]];
        long i = first_difference(&h->value, &d->value, hb, db);
        cr_assert_eq(i, -1, "%s after AdamW: [%ld]: host %08x != device %08x", h->name, i, hb[i < 0 ? 0 : i],
                     db[i < 0 ? 0 : i]);
    }
    free(hb);
    free(db);
    for (int k = 0; k < 2; k++) pgn_optim_release(&o[k]), pgn_graph_release(&g[k]);
    pgn_device_close(dev);
}

Test(gpt, a_stopped_run_resumes_bit_identically_on_host) { check_resume(NULL); }

Test(gpt, a_stopped_run_resumes_bit_identically_on_opencl) {
    pgn_device *dev = test_open_cl_device();
    check_resume(dev);
    pgn_device_close(dev);
}

/* AdamW decays the blocks' matrices (and an untied head) only: with zero gradients an update
 * shrinks exactly those by lr * weight_decay and leaves embeddings, biases and LayerNorms. */
Test(gpt, weight_decay_touches_matrices_only) {
    pgn_job_spec spec = parse(TINY_GPT(1, ""));
    spec.train.gpt.tie_embeddings = false;
    pgn_graph g;
    pgn_error err = {0};
    pgn_graph_init(&g, NULL, 16, 1);
    cr_assert_eq(pgn_graph_build_gpt(&g, &spec.train, 11, &err), 0, "%s", err.message);
    pgn_optimizer o;
    cr_assert_eq(pgn_optim_init(&o, &g, &spec.train.optimizer, 1, &err), 0, "%s", err.message);
    size_t n = g.store_elems;
    float *before = malloc(n * 4), *after = malloc(n * 4);
    cr_assert_eq(pgn_tensor_read(&g.param_store, before, n, &err), 0);
    cr_assert_eq(pgn_tensor_fill_zero(&g.grad_store, &err), 0);
    cr_assert_eq(pgn_optim_step(&o, &g, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(&g.param_store, after, n, &err), 0);
    int decayed = 0;
    for (int p = 0; p < g.n_params; p++) {
        const pgn_node *node = &g.nodes[g.params[p]];
        bool matrix = strstr(node->name, "c_attn.weight") || strstr(node->name, "c_proj.weight") ||
                      strstr(node->name, "c_fc.weight") || strstr(node->name, "lm_head.weight");
        cr_assert_eq(node->decay, matrix, "%s", node->name);
        size_t off = g.param_offset[p], count = pgn_tensor_count(&node->value);
        for (size_t i = 0; i < count; i++) {
            float w = before[off + i], want = matrix ? w - 0.01f * 0.1f * w : w;
            cr_assert(after[off + i] == want || (matrix && fabsf(after[off + i] - want) <= 1e-6f * fabsf(w)),
                      "%s[%zu]: %g -> %g", node->name, i, (double)w, (double)after[off + i]);
        }
        decayed += matrix;
    }
    cr_assert_eq(decayed, 2 * 4 + 1, "c_attn, c_proj, c_fc, c_proj of two blocks and the head");
    free(before);
    free(after);
    pgn_optim_release(&o);
    pgn_graph_release(&g);
}

/* Trains a tiny model into dir/gen (once) and returns its checkpoint's path. */
static const char *trained_checkpoint(void) {
    static char path[160];
    char ckpt[128];
    snprintf(ckpt, sizeof ckpt, "%s/gen", dir);
    snprintf(path, sizeof path, "%s/" PGN_CHECKPOINT_FILE, ckpt);
    if (access(path, R_OK) == 0) return path;
    cr_assert_eq(mkdir(ckpt, 0700), 0);
    pgn_job_spec spec = parse(TINY_GPT(30, ""));
    static recorder r;
    json_t *res;
    pgn_error err = {0};
    cr_assert_eq(run(&spec, NULL, ckpt, false, &r, &res, &err), 0, "%s", err.message);
    json_decref(res);
    return path;
}

static pgn_job_spec generate_spec(const char *prompt, int max_tokens, double temperature, int top_k) {
    json_t *j = json_pack("{s:s, s:s, s:i, s:f, s:i, s:i}", "kind", "generate", "prompt", prompt, "max_tokens",
                          max_tokens, "temperature", temperature, "top_k", top_k, "seed", 42);
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse(j, &spec, &err), 0, "%s", err.message);
    json_decref(j);
    return spec;
}

typedef struct {
    char text[512];
    size_t len;
    int64_t next;
} collected;

static void on_text(void *ctx, int64_t index, const char *text, size_t len) {
    collected *c = ctx;
    cr_assert_eq(index, c->next++, "characters come in order");
    cr_assert_lt(c->len + len, sizeof c->text);
    memcpy(c->text + c->len, text, len);
    c->len += len;
}

static json_t *generate(const pgn_job_spec *spec, pgn_device *dev, const char *ckpt, collected *c) {
    memset(c, 0, sizeof *c);
    pgn_run_options opts = {.source_checkpoint = ckpt};
    pgn_run_hooks hooks = {.ctx = c, .on_text = on_text};
    json_t *result = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(spec, dev, &opts, &hooks, &result, &err), 0, "%s", err.message);
    return result;
}

Test(gpt, generation_is_the_same_text_on_every_device_for_a_seed) {
    const char *ckpt = trained_checkpoint();
    pgn_device *dev = test_open_cl_device();
    pgn_job_spec spec = generate_spec("the quic", 40, 0.8, 5);
    collected h, d;
    json_t *rh = generate(&spec, NULL, ckpt, &h);
    json_t *rd = generate(&spec, dev, ckpt, &d);
    cr_assert_eq(h.next, 40);
    cr_assert_str_eq(json_string_value(json_object_get(rh, "completion")), json_string_value(json_object_get(rd, "completion")));
    cr_assert_eq(h.len, d.len);
    cr_assert_eq(memcmp(h.text, d.text, h.len), 0, "streamed characters are the completion");
    cr_assert_eq(strncmp(json_string_value(json_object_get(rh, "completion")), h.text, h.len), 0);
    cr_assert_eq(strncmp(json_string_value(json_object_get(rh, "text")), "the quic", 8), 0);
    /* past the context (8): the model reads the last 8 characters */
    pgn_job_spec greedy = generate_spec("the lazy", 30, 0.0, 0);
    collected g1, g2;
    json_t *a = generate(&greedy, NULL, ckpt, &g1), *b = generate(&greedy, dev, ckpt, &g2);
    cr_assert_eq(g1.len, 30);
    cr_assert_str_eq(json_string_value(json_object_get(a, "completion")), json_string_value(json_object_get(b, "completion")));
    /* another seed draws another text */
    spec.generate.seed = 7;
    collected h2;
    json_t *rh2 = generate(&spec, NULL, ckpt, &h2);
    cr_assert(h2.len != h.len || memcmp(h2.text, h.text, h.len), "seed 7 drew the same 40 characters as seed 42");
    json_decref(rh);
    json_decref(rd);
    json_decref(rh2);
    json_decref(a);
    json_decref(b);
    pgn_spec_free(&spec);
    pgn_spec_free(&greedy);
    pgn_device_close(dev);
}

Test(gpt, prompts_the_model_cannot_read_are_refused_naming_the_problem) {
    const char *ckpt = trained_checkpoint();
    struct {
        const char *prompt;
        int top_k;
        const char *field, *fragment;
    } bad[] = {
        {"the QUICK", 0, "prompt", "character 4 ('Q') is not in the model's vocabulary"},
        {"the quick brown", 0, "prompt", "15 characters; the model's context holds 8"},
        {"the", 500, "top_k", "must be at most the vocabulary's"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pgn_job_spec spec = generate_spec(bad[i].prompt, 5, 1.0, bad[i].top_k);
        pgn_error err = {0};
        cr_assert_eq(pgn_generate_check(&spec.generate, ckpt, NULL, &err), -1, "%s", bad[i].prompt);
        cr_assert_str_eq(err.field, bad[i].field);
        cr_assert(strstr(err.message, bad[i].fragment), "%s", err.message);
        pgn_spec_free(&spec);
    }
    pgn_job_spec spec;
    pgn_error err = {0};
    const char *empty = "{\"kind\":\"generate\",\"prompt\":\"\"}";
    cr_assert_eq(pgn_spec_parse_text(empty, strlen(empty), &spec, &err), -1);
    cr_assert_str_eq(err.message, "prompt: must not be empty");
    pgn_job_spec ok = generate_spec("the", 5, 1.0, 0);
    pgn_gpt_info info;
    cr_assert_eq(pgn_generate_check(&ok.generate, ckpt, &info, &err), 0, "%s", err.message);
    cr_assert_eq(info.gpt.context, 8);
    cr_assert_eq(info.step, 30);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none/" PGN_CHECKPOINT_FILE, dir);
    cr_assert_eq(pgn_generate_check(&ok.generate, missing, NULL, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "no_checkpoint");
    pgn_spec_free(&ok);
}

Test(gpt, sampling_follows_temperature_and_top_k) {
    const float logits[5] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    cr_assert_eq(pgn_sample_token(logits, 5, 0.0f, 0, 1, 0), 1, "temperature 0: the likeliest, first of equals");
    int seen[5] = {0};
    for (uint64_t i = 0; i < 2000; i++) seen[pgn_sample_token(logits, 5, 1.0f, 2, 9, i)]++;
    cr_assert_eq(seen[0] + seen[2] + seen[4], 0, "top 2: only the two largest logits");
    cr_assert(seen[1] > 850 && seen[3] > 850, "%d / %d", seen[1], seen[3]);
    memset(seen, 0, sizeof seen);
    for (uint64_t i = 0; i < 4000; i++) seen[pgn_sample_token(logits, 5, 1.0f, 0, 9, i)]++;
    /* softmax(1, 3, 2, 3, -1) = 0.054, 0.401, 0.147, 0.401, 0.007 */
    cr_assert(seen[2] > 480 && seen[2] < 700 && seen[0] > 130 && seen[0] < 300, "%d %d", seen[0], seen[2]);
    cr_assert_eq(pgn_sample_token(logits, 5, 1.0f, 0, 9, 17), pgn_sample_token(logits, 5, 1.0f, 0, 9, 17));
}

/* The batch-1 decoder (a token at a time against its cache) gives each position the logits the
 * whole sequence's forward through the training graph gives that row, bit for bit, on the host
 * and on the device. */
static void check_decoder(pgn_device *dev) {
    const char *ckpt = trained_checkpoint();
    pgn_st_file f;
    pgn_error err = {0};
    cr_assert_eq(pgn_safetensors_open(ckpt, &f, &err), 0, "%s", err.message);
    pgn_vocab vocab;
    cr_assert_eq(pgn_checkpoint_vocab(&f, &vocab, &err), 0, "%s", err.message);
    pgn_job_spec spec = parse(TINY_GPT(30, ""));
    const pgn_train_spec *t = &spec.train;
    int T = t->gpt.context, V = vocab.size;
    int32_t tokens[8];
    size_t n = 0;
    cr_assert_eq(pgn_vocab_encode(&vocab, "the lazy", 8, tokens, &n, "prompt", &err), 0, "%s", err.message);
    /* the whole sequence through the graph */
    pgn_graph g;
    pgn_graph_init(&g, dev, T, 3);
    cr_assert_eq(pgn_graph_build_gpt(&g, t, V, &err), 0, "%s", err.message);
    pgn_st_entry *e = calloc((size_t)g.n_params, sizeof *e);
    for (int p = 0; p < g.n_params; p++) e[p] = (pgn_st_entry){g.nodes[g.params[p]].name, &g.nodes[g.params[p]].value};
    cr_assert_eq(pgn_safetensors_load_some(&f, e, g.n_params, &err), 0, "%s", err.message);
    free(e);
    cr_assert_eq(pgn_tensor_write(&g.nodes[g.input].value, tokens, (size_t)T, &err), 0);
    cr_assert_eq(pgn_tensor_fill_zero(&g.nodes[g.labels].value, &err), 0);
    cr_assert_eq(pgn_graph_forward(&g, T, false, 0, &err), 0, "%s", err.message);
    float *whole = malloc((size_t)T * V * sizeof *whole), *row = malloc((size_t)V * sizeof *row);
    cr_assert_eq(pgn_tensor_read(&g.nodes[g.nodes[g.loss].a].value, whole, (size_t)T * V, &err), 0);
    /* a token at a time */
    pgn_gpt_decoder *d;
    cr_assert_eq(pgn_gpt_decoder_open(dev, &t->gpt, V, &f, &d, &err), 0, "%s", err.message);
    for (int pos = 0; pos < T; pos++) {
        cr_assert_eq(pgn_gpt_decoder_feed(d, tokens[pos], row, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(row, whole + (size_t)pos * V, (size_t)V * sizeof *row), 0,
                     "position %d: the decoder's logits differ from the forward's row", pos);
    }
    cr_assert_eq(pgn_gpt_decoder_position(d), T);
    cr_assert_eq(pgn_gpt_decoder_feed(d, tokens[0], row, &err), -1, "past the context");
    pgn_gpt_decoder_reset(d);
    cr_assert_eq(pgn_gpt_decoder_feed(d, tokens[0], row, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(row, whole, (size_t)V * sizeof *row), 0, "after a reset: position 0 again");
    /* a prefill of n tokens in one pass is n feeds, and feeds continue after it */
    for (int n = 1; n <= T; n += 3) {
        cr_assert_eq(pgn_gpt_decoder_prefill(d, tokens, n, row, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(row, whole + (size_t)(n - 1) * V, (size_t)V * sizeof *row), 0, "prefill of %d", n);
        for (int pos = n; pos < T; pos++) {
            cr_assert_eq(pgn_gpt_decoder_feed(d, tokens[pos], row, &err), 0, "%s", err.message);
            cr_assert_eq(memcmp(row, whole + (size_t)pos * V, (size_t)V * sizeof *row), 0, "%d after a prefill of %d",
                         pos, n);
        }
    }
    pgn_gpt_decoder_close(d);
    free(whole);
    free(row);
    pgn_graph_release(&g);
    pgn_vocab_free(&vocab);
    pgn_safetensors_close(&f);
}

Test(gpt, the_decoder_gives_each_position_the_forward_s_logits_on_host) { check_decoder(NULL); }

Test(gpt, the_decoder_gives_each_position_the_forward_s_logits_on_opencl) {
    pgn_device *dev = test_open_cl_device();
    check_decoder(dev);
    pgn_device_close(dev);
}

/* The gpu kernel family (its GEMM, row and column kernels; --kernels gpu) on pocl: the tiny
 * GPT trains to the host's weights and metrics, a step's launches are counted, and its decoder
 * (one-row products on copied weights) gives the forward's logits. */
static pgn_device *open_gpu_family(void) {
    setenv("PARAGON_KERNELS", "gpu", 1);
    pgn_device *dev = test_open_cl_device();
    const pgn_device_profile *p = pgn_device_get_profile(dev);
    cr_assert(p->family[PGN_OPS_GEMM] == PGN_FAMILY_GPU && p->family[PGN_OPS_ROWS] == PGN_FAMILY_GPU);
    return dev;
}

Test(gpt, the_gpu_family_trains_to_the_host_bits) {
    pgn_job_spec spec = parse(TINY_GPT(9, ""));
    static recorder a, b;
    json_t *ra, *rb;
    pgn_error err = {0};
    cr_assert_eq(run(&spec, NULL, NULL, false, &a, &ra, &err), 0, "%s", err.message);
    pgn_device *dev = open_gpu_family();
    cr_assert_eq(run(&spec, dev, NULL, false, &b, &rb, &err), 0, "%s", err.message);
    cr_assert_str_eq(sha_of(ra), sha_of(rb));
    cr_assert_eq(a.count, b.count);
    for (int i = 0; i < a.count; i++)
        cr_assert_eq(a.values[i], b.values[i], "metric %d (%s, step %lld)", i, a.names[i], (long long)a.steps[i]);
    cr_assert_eq(json_integer_value(json_object_get(ra, "launches_per_step")), 0, "the host launches nothing");
    cr_assert_gt(json_integer_value(json_object_get(rb, "launches_per_step")), 20, "a step of 2 blocks: dozens");
    json_decref(ra);
    json_decref(rb);
    check_decoder(dev);
    pgn_device_close(dev);
}
