/* test_export.c: a checkpoint's weights as PyTorch loads them (engine/tensor/export.c): an MLP's
 * as torch.nn.Sequential's keys and shapes (Linear weights [out, in], biases 1-D, indices past
 * the activation and dropout modules) that classify the test set as the job did when applied as
 * PyTorch applies them; a gpt's under GPT-2's names with 1-D biases and norms and the head as
 * nn.Linear holds it; no optimizer or trainer state; and the checkpoints it refuses. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "safetensors_check.h"

static char dir[64];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/pgn-export-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char datasets[96], path[128];
    snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR, dir);
    cr_assert_eq(mkdir(datasets, 0700), 0);
    snprintf(path, sizeof path, "%s/tiny.txt", datasets);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 60; i++) fprintf(f, "the quick brown fox jumps over the lazy dog %d. ", i % 7);
    fclose(f);
}

static void teardown(void) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(export, .init = setup, .fini = teardown);

/* Runs spec on the host with its checkpoints in <dir>/<sub>; returns the result. */
static json_t *train(const char *text, const char *sub, char *checkpoint, size_t size) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    char ckdir[128];
    snprintf(ckdir, sizeof ckdir, "%s/%s", dir, sub);
    cr_assert_eq(mkdir(ckdir, 0700), 0);
    snprintf(checkpoint, size, "%s/%s", ckdir, PGN_CHECKPOINT_FILE);
    pgn_run_options o = {.data_dir = dir, .checkpoint_dir = ckdir};
    json_t *result = NULL;
    cr_assert_eq(pgn_job_run(&spec, NULL, &o, NULL, &result, &err), 0, "%s", err.message);
    pgn_spec_free(&spec);
    return result;
}

/* A safetensors file in memory: its header and where its data begins. */
typedef struct {
    unsigned char *bytes;
    size_t len, data;
    json_t *header;
} st_bytes;

static st_bytes exported(const char *checkpoint) {
    st_bytes s = {0};
    pgn_error err = {0};
    cr_assert_eq(pgn_weights_export(checkpoint, -1, &s.bytes, &s.len, &err), 0, "%s", err.message);
    s.header = test_safetensors_header((const char *)s.bytes, s.len, &s.data);
    return s;
}

static st_bytes read_whole(const char *path) {
    st_bytes s = {0};
    char *bytes = pgn_read_file(path, &s.len);
    cr_assert_not_null(bytes, "%s", path);
    s.bytes = (unsigned char *)bytes;
    s.header = test_safetensors_header(bytes, s.len, &s.data);
    return s;
}

static void st_free(st_bytes *s) {
    json_decref(s->header);
    free(s->bytes);
}

/* Tensor name's shape as "[8, 2]", and its floats (malloc'd). */
static void shape_of(const st_bytes *s, const char *name, char *out, size_t size) {
    json_t *t = json_object_get(s->header, name);
    cr_assert(json_is_object(t), "'%s' is in the file", name);
    char *text = json_dumps(json_object_get(t, "shape"), JSON_COMPACT);
    snprintf(out, size, "%s", text);
    free(text);
}

static float *floats_of(const st_bytes *s, const char *name, size_t *n) {
    json_t *t = json_object_get(s->header, name);
    cr_assert(json_is_object(t), "'%s' is in the file", name);
    json_t *off = json_object_get(t, "data_offsets");
    size_t b = (size_t)json_integer_value(json_array_get(off, 0));
    size_t e = (size_t)json_integer_value(json_array_get(off, 1));
    *n = (e - b) / 4;
    float *v = malloc(e - b + 4);
    for (size_t i = 0; i < *n; i++) {
        uint32_t u = 0;
        for (int k = 0; k < 4; k++) u |= (uint32_t)s->bytes[s->data + b + 4 * i + (size_t)k] << (8 * k);
        memcpy(&v[i], &u, 4);
    }
    return v;
}

static void assert_shape(const st_bytes *s, const char *name, const char *want) {
    char got[64];
    shape_of(s, name, got, sizeof got);
    cr_assert_str_eq(got, want, "'%s' has shape %s, expected %s", name, got, want);
}

static size_t tensor_count(const st_bytes *s) {
    return json_object_size(s->header) - (json_object_get(s->header, "__metadata__") ? 1 : 0);
}

static const char *meta(const st_bytes *s, const char *key) {
    return json_string_value(json_object_get(json_object_get(s->header, "__metadata__"), key));
}

/* spiral [2, 16, 16, 3] with tanh and dropout: Sequential(Linear, Tanh, Dropout, Linear, Tanh,
 * Dropout, Linear), so the Linears are modules 0, 3 and 6. */
#define MLP_SPEC                                                                                   \
    "{\"kind\":\"train\",\"seed\":5,\"model\":{\"type\":\"mlp\",\"layers\":[2,16,16,3],"             \
    "\"activation\":\"tanh\",\"dropout\":0.1},\"data\":{\"source\":\"spiral\",\"samples\":60},"      \
    "\"optimizer\":{\"type\":\"adam\",\"lr\":0.02},\"batch_size\":20,\"epochs\":30}"

/* The class PyTorch's Sequential gives x in eval mode: each Linear as x W^T + b, tanh between. */
static int torch_classify(const float *x, float *const *w, float *const *b, const int *widths, int layers) {
    float a[16], z[16];
    memcpy(a, x, (size_t)widths[0] * sizeof *a);
    for (int l = 0; l < layers; l++) {
        int in = widths[l], out = widths[l + 1];
        for (int j = 0; j < out; j++) {
            float acc = 0.0f;
            for (int k = 0; k < in; k++) acc += a[k] * w[l][(size_t)j * in + k]; /* weight [out, in] */
            z[j] = acc + b[l][j];
        }
        for (int j = 0; j < out; j++) a[j] = l + 1 < layers ? tanhf(z[j]) : z[j];
    }
    int best = 0;
    for (int j = 1; j < widths[layers]; j++)
        if (a[j] > a[best]) best = j;
    return best;
}

Test(export, an_mlp_exports_as_a_sequential_that_classifies_as_the_job_did) {
    char checkpoint[160];
    json_t *result = train(MLP_SPEC, "mlp", checkpoint, sizeof checkpoint);
    st_bytes s = exported(checkpoint);

    const struct {
        const char *name, *shape;
    } want[] = {{"0.weight", "[16,2]"}, {"0.bias", "[16]"}, {"3.weight", "[16,16]"},
                {"3.bias", "[16]"},     {"6.weight", "[3,16]"}, {"6.bias", "[3]"}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_shape(&s, want[i].name, want[i].shape);
    cr_assert_eq(tensor_count(&s), 6, "the weights and nothing else (no optimizer state)");
    cr_assert_str_eq(meta(&s, "format"), "paragon-weights-1");
    cr_assert_str_eq(meta(&s, "model"), "mlp");
    cr_assert_str_eq(meta(&s, "pytorch"),
                     "torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Dropout(p=0.1), "
                     "torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Dropout(p=0.1), torch.nn.Linear(16, 3))");
    cr_assert_str_eq(meta(&s, "paragon_weights_sha256"),
                     json_string_value(json_object_get(result, "weights_sha256")));
    cr_assert_str_eq(meta(&s, "epoch"), "30");
    cr_assert_not_null(strstr(meta(&s, "spec"), "\"layers\":[2,16,16,3]"));

    /* the checkpoint's (in, out) matrices, transposed bit for bit */
    st_bytes ck = read_whole(checkpoint);
    for (int l = 0; l < 3; l++) {
        char from[32], to[32];
        snprintf(from, sizeof from, "layers.%d.weight", l);
        snprintf(to, sizeof to, "%d.weight", 3 * l);
        size_t n, m;
        float *a = floats_of(&ck, from, &n), *b = floats_of(&s, to, &m);
        cr_assert_eq(n, m);
        int in = l ? 16 : 2, out = l == 2 ? 3 : 16;
        for (int i = 0; i < in; i++)
            for (int j = 0; j < out; j++)
                cr_assert_eq(pgn_bits(a[i * out + j]), pgn_bits(b[j * in + i]), "%s[%d][%d]", to, j, i);
        free(a);
        free(b);
    }

    /* applied as PyTorch applies them, they classify the test set as the job did */
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(MLP_SPEC, strlen(MLP_SPEC), &spec, &err), 0, "%s", err.message);
    pgn_dataset tr, te;
    cr_assert_eq(pgn_dataset_load(&spec.train.data, dir, &tr, &te, &err), 0, "%s", err.message);
    float *w[3], *b[3];
    for (int l = 0; l < 3; l++) {
        char name[32];
        size_t n;
        snprintf(name, sizeof name, "%d.weight", 3 * l);
        w[l] = floats_of(&s, name, &n);
        snprintf(name, sizeof name, "%d.bias", 3 * l);
        b[l] = floats_of(&s, name, &n);
    }
    const int widths[] = {2, 16, 16, 3};
    int right = 0;
    for (int i = 0; i < te.n; i++) right += torch_classify(&te.x[2 * i], w, b, widths, 3) == te.y[i];
    double acc = (double)right / te.n, job_acc = json_number_value(json_object_get(result, "test_accuracy"));
    cr_assert_gt(job_acc, 0.5, "the job learnt something (%.4f), so the comparison means something", job_acc);
    cr_assert_eq(round(acc * 1e4), round(job_acc * 1e4), "accuracy %.4f from the export, %.4f reported", acc, job_acc);
    for (int l = 0; l < 3; l++) {
        free(w[l]);
        free(b[l]);
    }
    pgn_dataset_free(&tr);
    pgn_dataset_free(&te);

    /* from a descriptor and to a file: the same bytes */
    int fd = open(checkpoint, O_RDONLY);
    cr_assert_geq(fd, 0);
    unsigned char *again;
    size_t len;
    cr_assert_eq(pgn_weights_export("named", fd, &again, &len, &err), 0, "%s", err.message);
    close(fd);
    cr_assert_eq(len, s.len);
    cr_assert_eq(memcmp(again, s.bytes, len), 0);
    free(again);
    char out[160];
    snprintf(out, sizeof out, "%s/weights.safetensors", dir);
    cr_assert_eq(pgn_weights_export_file(checkpoint, out, &err), 0, "%s", err.message);
    st_bytes file = read_whole(out);
    cr_assert_eq(file.len, s.len);
    cr_assert_eq(memcmp(file.bytes, s.bytes, s.len), 0);
    st_free(&file);
    st_free(&ck);
    st_free(&s);
    json_decref(result);
}

Test(export, layers_without_an_activation_or_dropout_take_one_index_each) {
    char checkpoint[160];
    json_t *result = train("{\"kind\":\"train\",\"seed\":1,\"model\":{\"type\":\"mlp\",\"layers\":[2,4,4,2],"
                           "\"activation\":\"none\"},\"data\":{\"source\":\"xor\"},\"batch_size\":4,\"epochs\":2}",
                           "none", checkpoint, sizeof checkpoint);
    st_bytes s = exported(checkpoint);
    assert_shape(&s, "0.weight", "[4,2]");
    assert_shape(&s, "1.weight", "[4,4]");
    assert_shape(&s, "2.weight", "[2,4]");
    assert_shape(&s, "2.bias", "[2]");
    cr_assert_eq(tensor_count(&s), 6);
    cr_assert_str_eq(meta(&s, "pytorch"), "torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Linear(4, 4), "
                                          "torch.nn.Linear(4, 2))");
    st_free(&s);
    json_decref(result);
}

#define GPT_SPEC(tie)                                                                                   \
    "{\"kind\":\"train\",\"seed\":2,\"model\":{\"type\":\"gpt\",\"n_layer\":2,\"n_head\":2,\"d_model\":8," \
    "\"context\":8,\"tie_embeddings\":" tie "},\"data\":{\"source\":\"text\",\"path\":\"tiny.txt\"},"         \
    "\"optimizer\":{\"type\":\"adamw\",\"lr\":0.01},\"batch_size\":2,\"steps\":6,\"eval_every\":6,"        \
    "\"eval_windows\":2}"

/* Every parameter of the checkpoint is in the export under its own (GPT-2) name, nothing else
 * is but the head, and the shapes are PyTorch's. */
static void assert_gpt(const st_bytes *s, const st_bytes *ck, int vocab) {
    const char *name;
    json_t *t;
    size_t params = 0;
    json_object_foreach(ck->header, name, t) {
        if (!strcmp(name, "__metadata__") || !strncmp(name, "optimizer.", 10) || !strncmp(name, "trainer.", 8))
            continue;
        params++;
        cr_assert(json_is_object(json_object_get(s->header, name)), "'%s' is exported under its name", name);
    }
    bool tied = !json_object_get(ck->header, "lm_head.weight");
    cr_assert_eq(tensor_count(s), params + tied, "the parameters%s and nothing else", tied ? " and the head" : "");
    char wte[32];
    snprintf(wte, sizeof wte, "[%d,8]", vocab);
    assert_shape(s, "transformer.wte.weight", wte);
    assert_shape(s, "lm_head.weight", wte);
    assert_shape(s, "transformer.wpe.weight", "[8,8]");
    assert_shape(s, "transformer.h.1.ln_1.weight", "[8]");
    assert_shape(s, "transformer.h.1.ln_1.bias", "[8]");
    assert_shape(s, "transformer.h.1.attn.c_attn.weight", "[8,24]");
    assert_shape(s, "transformer.h.1.attn.c_attn.bias", "[24]");
    assert_shape(s, "transformer.h.1.attn.c_proj.weight", "[8,8]");
    assert_shape(s, "transformer.h.1.mlp.c_fc.weight", "[8,32]");
    assert_shape(s, "transformer.h.1.mlp.c_fc.bias", "[32]");
    assert_shape(s, "transformer.h.1.mlp.c_proj.weight", "[32,8]");
    assert_shape(s, "transformer.h.1.mlp.c_proj.bias", "[8]");
    assert_shape(s, "transformer.ln_f.weight", "[8]");
    /* Conv1D matrices as paragon holds them: the same bits */
    size_t n, m;
    float *a = floats_of(ck, "transformer.h.0.attn.c_attn.weight", &n);
    float *b = floats_of(s, "transformer.h.0.attn.c_attn.weight", &m);
    cr_assert_eq(n, m);
    cr_assert_eq(memcmp(a, b, n * 4), 0);
    free(a);
    free(b);
    /* the head as nn.Linear(d_model, vocab) holds it: [vocab, d_model] */
    float *head = floats_of(s, "lm_head.weight", &n);
    float *src = floats_of(ck, tied ? "transformer.wte.weight" : "lm_head.weight", &m);
    cr_assert_eq(n, m);
    for (int v = 0; v < vocab; v++)
        for (int c = 0; c < 8; c++)
            cr_assert_eq(pgn_bits(head[v * 8 + c]), pgn_bits(tied ? src[v * 8 + c] : src[c * vocab + v]),
                         "lm_head.weight[%d][%d]", v, c);
    free(head);
    free(src);
    cr_assert_str_eq(meta(s, "model"), "gpt");
    cr_assert_not_null(meta(s, "vocab"), "the vocabulary travels with the weights");
    char want[512];
    snprintf(want, sizeof want,
             "transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=%d, n_positions=8, n_embd=8, "
             "n_layer=2, n_head=2, n_inner=32, activation_function=\"gelu_new\", layer_norm_epsilon=1e-05, "
             "embd_pdrop=0, resid_pdrop=0, attn_pdrop=0.0, tie_word_embeddings=%s))",
             vocab, tied ? "True" : "False");
    cr_assert_str_eq(meta(s, "pytorch"), want);
}

Test(export, a_gpt_exports_under_gpt2_names_with_its_head_tied_or_not) {
    const char *ties[] = {"true", "false"};
    const char *specs[] = {GPT_SPEC("true"), GPT_SPEC("false")};
    for (int i = 0; i < 2; i++) {
        char checkpoint[160];
        json_t *result = train(specs[i], ties[i], checkpoint, sizeof checkpoint);
        st_bytes s = exported(checkpoint), ck = read_whole(checkpoint);
        size_t n;
        float *wte = floats_of(&ck, "transformer.wte.weight", &n);
        assert_gpt(&s, &ck, (int)(n / 8));
        cr_assert_str_eq(meta(&s, "paragon_weights_sha256"),
                         json_string_value(json_object_get(result, "weights_sha256")));
        free(wte);
        st_free(&s);
        st_free(&ck);
        json_decref(result);
    }
}

/* Rewrites a checkpoint with its metadata changed by edit (the data digest made anew). */
static void rewrite(const char *checkpoint, const char *out, void (*edit)(json_t *meta)) {
    pgn_st_file f;
    pgn_error err = {0};
    cr_assert_eq(pgn_safetensors_open(checkpoint, &f, &err), 0, "%s", err.message);
    json_t *meta = json_copy(f.metadata);
    json_object_del(meta, PGN_ST_DATA_SHA256);
    edit(meta);
    size_t head_len;
    unsigned char *head = pgn_safetensors_head(f.header, meta, f.data, f.data_len, &head_len, &err);
    cr_assert_not_null(head, "%s", err.message);
    cr_assert_eq(pgn_safetensors_write_bytes(out, head, head_len, f.data, f.data_len, &err), 0, "%s", err.message);
    free(head);
    json_decref(meta);
    pgn_safetensors_close(&f);
}

static void other_layers(json_t *meta) {
    const char *spec = json_string_value(json_object_get(meta, "spec"));
    char *at = strstr(spec, "[2,16,16,3]"), text[2048];
    cr_assert_not_null(at);
    snprintf(text, sizeof text, "%.*s[2,16,12,3]%s", (int)(at - spec), spec, at + strlen("[2,16,16,3]"));
    json_object_set_new(meta, "spec", json_string(text));
}

static void no_format(json_t *meta) {
    json_object_del(meta, "format");
}

static void other_weights(json_t *meta) {
    json_object_set_new(meta, "weights_sha256", json_string("00"));
}

static void assert_refused(const char *path, const char *code, const char *says) {
    unsigned char *out = NULL;
    size_t len = 0;
    pgn_error err = {0};
    cr_assert_eq(pgn_weights_export(path, -1, &out, &len, &err), -1, "%s is refused", path);
    cr_assert_null(out);
    cr_assert_str_eq(pgn_error_code_name(err.code), code, "%s", err.message);
    cr_assert_not_null(strstr(err.message, says), "'%s' says '%s'", err.message, says);
    cr_assert_not_null(strstr(err.message, path), "'%s' names the file", err.message);
}

Test(export, checkpoints_it_cannot_trust_are_refused_naming_what_is_wrong) {
    char checkpoint[160], bad[160];
    json_t *result = train(MLP_SPEC, "mlp", checkpoint, sizeof checkpoint);
    snprintf(bad, sizeof bad, "%s/missing.safetensors", dir);
    assert_refused(bad, "no_checkpoint", "no such file");
    snprintf(bad, sizeof bad, "%s/layers.safetensors", dir);
    rewrite(checkpoint, bad, other_layers);
    assert_refused(bad, "checkpoint", "tensor 'layers.1.weight' is not (16, 12)");
    snprintf(bad, sizeof bad, "%s/format.safetensors", dir);
    rewrite(checkpoint, bad, no_format);
    assert_refused(bad, "checkpoint", "not a paragon checkpoint");
    snprintf(bad, sizeof bad, "%s/sha.safetensors", dir);
    rewrite(checkpoint, bad, other_weights);
    assert_refused(bad, "checkpoint", "do not match its weights_sha256");
    /* a flipped byte: the data digest */
    st_bytes s = read_whole(checkpoint);
    s.bytes[s.len - 1] ^= 1;
    snprintf(bad, sizeof bad, "%s/flipped.safetensors", dir);
    FILE *f = fopen(bad, "wb");
    cr_assert_eq(fwrite(s.bytes, 1, s.len, f), s.len);
    fclose(f);
    assert_refused(bad, "checkpoint", "does not match its data_sha256");
    st_free(&s);
    json_decref(result);
}
