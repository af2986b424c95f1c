/* test_weights.c: GET /api/v1/jobs/{id}/weights through a live paragond: an MLP's weights as
 * torch.nn.Sequential's state_dict (Linear weights [out, in] counted past the activation and
 * dropout modules, 1-D biases, no optimizer state), a gpt's under GPT-2's names; where Debian's
 * torch is installed, examples/python/load_weights.py loads each with strict=True and reproduces
 * the job (the MLP's test accuracy and loss, the gpt's greedy text); and the refusals. */
#include "paragond_harness.h"
#include "paragon.h"
#include "safetensors_check.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

TestSuite(weights, .init = harness_setup, .fini = harness_teardown);

#define PYTHON "/usr/bin/python3"
#define PYTHON_TIMEOUT_MS 120000

/* Runs /usr/bin/python3 with args (bounded; killed past the limit) and returns its exit status,
 * with what it printed (stdout and stderr) in *out (malloc'd). extra_env: "NAME=value", NULL-ended. */
static int run_python(const char *const *args, const char *const *extra_env, char **out) {
    char log[320];
    snprintf(log, sizeof log, "%s/python.log", tmpdir);
    const char *argv[16] = {PYTHON};
    int argc = 1;
    for (const char *const *a = args; *a; a++) argv[argc++] = *a;
    argv[argc] = NULL;
    const char *envp[512];
    int n = 0;
    for (char **e = environ; *e && n < 480; e++) { /* an extra NAME=value replaces ours */
        bool replaced = false;
        for (const char *const *x = extra_env; x && *x && !replaced; x++)
            replaced = !strncmp(*e, *x, strcspn(*x, "=") + 1);
        if (!replaced) envp[n++] = *e;
    }
    for (const char *const *x = extra_env; x && *x; x++) envp[n++] = *x;
    envp[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, PYTHON, &fa, NULL, (char *const *)argv, (char *const *)envp);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "posix_spawn %s: %s", PYTHON, strerror(rc));
    int status = wait_exit(pid, PYTHON_TIMEOUT_MS);
    size_t len;
    *out = pgn_read_file(log, &len);
    cr_assert_not_null(*out, "%s", log);
    return status;
}

/* Debian's python3-torch, which the python checks need; without it they are skipped, saying so. */
static bool have_torch(void) {
    if (access(PYTHON, X_OK) != 0) {
        cr_log_info("%s is missing: the PyTorch checks are skipped", PYTHON);
        return false;
    }
    char *out;
    const char *args[] = {"-c", "import torch, numpy", NULL};
    int status = run_python(args, NULL, &out);
    if (status != 0) cr_log_info("%s cannot import torch and numpy (python3-torch): the PyTorch checks are skipped: %s",
                                 PYTHON, out);
    free(out);
    return status == 0;
}

/* examples/python/load_weights.py against this server, with args after the script. */
static int load_weights(const server *s, const char *const *args, char **out) {
    char script[512], url[64], token[400];
    snprintf(script, sizeof script, "%s/examples/python/load_weights.py",
             getenv("PARAGON_SOURCE_ROOT") ? getenv("PARAGON_SOURCE_ROOT") : ".");
    snprintf(url, sizeof url, "PARAGON_URL=http://127.0.0.1:%u", (unsigned)s->port);
    snprintf(token, sizeof token, "PARAGON_TOKEN_FILE=%s/token", s->data);
    const char *argv[16] = {script};
    int n = 1;
    for (const char *const *a = args; *a; a++) argv[n++] = *a;
    argv[n] = NULL;
    const char *env[] = {url, token, NULL};
    return run_python(argv, env, out);
}

/* GET /weights, 200, as the download of job-{id}-weights.safetensors; returns the response. */
static http_response get_weights(const server *s, int64_t id) {
    char name[64];
    snprintf(name, sizeof name, "job-%lld-weights.safetensors", (long long)id);
    return get_download(s, id, "/weights", name);
}

typedef struct {
    const char *name, *shape;
} tensor_shape;

/* The file's header holds exactly these tensors with these shapes (and its metadata). */
static json_t *assert_tensors(const http_response *r, const tensor_shape *want, size_t n, size_t *data_start) {
    json_t *header = test_safetensors_header(r->body, r->body_len, data_start);
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_object_get(header, want[i].name);
        cr_assert(json_is_object(t), "'%s' is in the file", want[i].name);
        char *shape = json_dumps(json_object_get(t, "shape"), JSON_COMPACT);
        cr_assert_str_eq(shape, want[i].shape, "'%s' is %s, expected %s", want[i].name, shape, want[i].shape);
        free(shape);
    }
    const char *name;
    json_t *t;
    json_object_foreach(header, name, t) {
        if (!strcmp(name, "__metadata__")) continue;
        cr_assert(strncmp(name, "optimizer.", 10) && strncmp(name, "trainer.", 8), "'%s': no optimizer or trainer state",
                  name);
        bool listed = false;
        for (size_t i = 0; i < n && !listed; i++) listed = !strcmp(name, want[i].name);
        cr_assert(listed, "'%s' is not one of the model's tensors", name);
    }
    return header;
}

/* Element k of tensor name as a float's bits. */
static uint32_t bits_at(const http_response *r, json_t *header, size_t data_start, const char *name, size_t k) {
    json_t *off = json_object_get(json_object_get(header, name), "data_offsets");
    size_t at = data_start + (size_t)json_integer_value(json_array_get(off, 0)) + 4 * k;
    uint32_t u = 0;
    for (int j = 0; j < 4; j++) u |= (uint32_t)(unsigned char)r->body[at + (size_t)j] << (8 * j);
    return u;
}

Test(weights, an_mlp_downloads_as_a_sequential_state_dict_that_pytorch_loads_and_scores_as_paragon) {
    server s = start_server();
    /* 2-8-8-2 with relu and dropout: Sequential(Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear) */
    char *spec = spec_with("\"layers\":[2,8,2]}", "\"layers\":[2,8,8,2],\"dropout\":0.05}");
    int64_t id = submit(&s, spec);
    free(spec);
    json_t *job = wait_succeeded(&s, id);
    json_t *result = json_object_get(job, "result");

    http_response r = get_weights(&s, id);
    const tensor_shape want[] = {{"0.weight", "[8,2]"}, {"0.bias", "[8]"}, {"3.weight", "[8,8]"},
                                 {"3.bias", "[8]"},     {"6.weight", "[2,8]"}, {"6.bias", "[2]"}};
    size_t data_start;
    json_t *header = assert_tensors(&r, want, sizeof want / sizeof *want, &data_start);
    json_t *meta = json_object_get(header, "__metadata__");
    cr_assert_str_eq(str(meta, "format"), "paragon-weights-1");
    cr_assert_str_eq(str(meta, "paragon_weights_sha256"), str(result, "weights_sha256"));
    cr_assert_str_eq(str(meta, "pytorch"),
                     "torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Dropout(p=0.05), "
                     "torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Dropout(p=0.05), torch.nn.Linear(8, 2))");

    /* the checkpoint's layers.0.weight (in 2, out 8), transposed to [out, in] bit for bit */
    char url[96];
    http_response ck = request(&s, "GET", job_url(url, sizeof url, id, "/checkpoint"), NULL, NULL);
    cr_assert_eq(ck.status, 200);
    size_t ck_start;
    json_t *ck_header = test_safetensors_header(ck.body, ck.body_len, &ck_start);
    for (size_t i = 0; i < 2; i++)
        for (size_t o = 0; o < 8; o++)
            cr_assert_eq(bits_at(&r, header, data_start, "0.weight", o * 2 + i),
                         bits_at(&ck, ck_header, ck_start, "layers.0.weight", i * 8 + o), "0.weight[%zu][%zu]", o, i);
    json_decref(ck_header);
    http_response_free(&ck);
    json_decref(header);
    http_response_free(&r);

    if (have_torch()) {
        char id_text[24], *out;
        snprintf(id_text, sizeof id_text, "%lld", (long long)id);
        const char *args[] = {id_text, NULL};
        int status = load_weights(&s, args, &out);
        cr_assert_eq(status, 0, "load_weights.py exited %d:\n%s", status, out);
        char line[64];
        snprintf(line, sizeof line, "test_accuracy %.4f (paragon: %.4f)",
                 json_number_value(json_object_get(result, "test_accuracy")),
                 json_number_value(json_object_get(result, "test_accuracy")));
        cr_assert_not_null(strstr(out, line), "'%s' in:\n%s", line, out);
        free(out);
    }
    json_decref(job);
    stop_server(&s);
}

static const char gpt_spec[] =
    "{\"kind\":\"train\",\"name\":\"tiny-gpt\",\"device\":\"cpu\",\"seed\":1,\"model\":{\"type\":\"gpt\","
    "\"n_layer\":1,\"n_head\":2,\"d_model\":16,\"context\":16,\"tie_embeddings\":false},"
    "\"data\":{\"source\":\"text\",\"path\":\"tiny.txt\"},\"optimizer\":{\"type\":\"adamw\",\"lr\":0.01},"
    "\"batch_size\":4,\"steps\":30,\"eval_every\":30,\"eval_windows\":4}";

Test(weights, a_gpt_downloads_under_gpt2_names_and_generates_the_same_text_in_pytorch) {
    server s = start_server();
    write_tiny_text(&s);
    int64_t id = submit(&s, gpt_spec);
    json_decref(wait_succeeded(&s, id));

    http_response r = get_weights(&s, id);
    size_t data_start;
    json_t *probe = test_safetensors_header(r.body, r.body_len, &data_start);
    json_t *wte = json_object_get(json_object_get(probe, "transformer.wte.weight"), "shape");
    int vocab = (int)json_integer_value(json_array_get(wte, 0));
    json_decref(probe);
    cr_assert_gt(vocab, 10);
    char table[32];
    snprintf(table, sizeof table, "[%d,16]", vocab);
    const tensor_shape want[] = {
        {"transformer.wte.weight", table},
        {"transformer.wpe.weight", "[16,16]"},
        {"transformer.h.0.ln_1.weight", "[16]"},
        {"transformer.h.0.ln_1.bias", "[16]"},
        {"transformer.h.0.attn.c_attn.weight", "[16,48]"},
        {"transformer.h.0.attn.c_attn.bias", "[48]"},
        {"transformer.h.0.attn.c_proj.weight", "[16,16]"},
        {"transformer.h.0.attn.c_proj.bias", "[16]"},
        {"transformer.h.0.ln_2.weight", "[16]"},
        {"transformer.h.0.ln_2.bias", "[16]"},
        {"transformer.h.0.mlp.c_fc.weight", "[16,64]"},
        {"transformer.h.0.mlp.c_fc.bias", "[64]"},
        {"transformer.h.0.mlp.c_proj.weight", "[64,16]"},
        {"transformer.h.0.mlp.c_proj.bias", "[16]"},
        {"transformer.ln_f.weight", "[16]"},
        {"transformer.ln_f.bias", "[16]"},
        {"lm_head.weight", table},
    };
    json_t *header = assert_tensors(&r, want, sizeof want / sizeof *want, &data_start);
    json_t *meta = json_object_get(header, "__metadata__");
    cr_assert_str_eq(str(meta, "model"), "gpt");
    cr_assert_not_null(strstr(str(meta, "vocab"), "\"chars\""), "the vocabulary travels with the weights");
    json_decref(header);
    http_response_free(&r);

    if (have_torch()) {
        char id_text[24], *out;
        snprintf(id_text, sizeof id_text, "%lld", (long long)id);
        /* "the " and 12 characters stay inside the context: no restart from its newer half */
        const char *args[] = {id_text, "--prompt", "the ", "--max-tokens", "12", NULL};
        int status = load_weights(&s, args, &out);
        cr_assert_eq(status, 0, "load_weights.py exited %d:\n%s", status, out);
        cr_assert_not_null(strstr(out, "(strict)"), "%s", out);
        cr_assert_not_null(strstr(out, "paragon: 'the '"), "%s", out);
        free(out);
    }
    stop_server(&s);
}

Test(weights, jobs_without_a_checkpoint_have_no_weights) {
    server s = start_server();
    int64_t inet = submit(&s, "{\"kind\":\"inet\",\"program\":\"@main = 42\"}");
    json_decref(wait_succeeded(&s, inet));
    int64_t xor = submit_xor(&s, 5, NULL);
    json_decref(wait_succeeded(&s, xor));
    char inet_url[96], url[96];
    job_url(inet_url, sizeof inet_url, inet, "/weights");
    job_url(url, sizeof url, xor, "/weights");
    /* a checkpoint removed from under a finished job */
    char ck[400];
    snprintf(ck, sizeof ck, "%s/jobs/%lld/%s", s.data, (long long)xor, "checkpoint.safetensors");
    cr_assert_eq(unlink(ck), 0, "%s", ck);
    const refusal cases[] = {
        {"GET", inet_url, NULL, NULL, 404, "no_checkpoint", .says = "only train jobs"},
        {"GET", url, NULL, NULL, 404, "no_checkpoint", .says = "no checkpoint yet"},
        {"GET", "/api/v1/jobs/4242/weights", NULL, NULL, 404, "not_found", .says = "4242"},
        {"POST", url, json_headers, "{}", 405, "method_not_allowed", .allow = "GET, HEAD"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}
