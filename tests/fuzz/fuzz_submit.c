/* fuzz_submit.c: a libFuzzer target for paragond's submission path with pgl programs: each input
 * drives a small generator of pgl source (long operator chains, deep calls, long lists, many
 * parameters, lets, switches, matches, tuples: the shapes that once overflowed a request
 * thread), which is submitted as an inet job to a live paragond ($PARAGOND, started once here on
 * a temporary database) and compiled here too, on a thread with a default stack. Not part of the
 * build or the tests: see README.md here. Beyond "no crash and no sanitizer report" here, it
 * fails when:
 *   - paragond stops answering or dies (its exit is reported), or answers a 5xx;
 *   - a 400 is not invalid_spec on the field "program" with "line L, column C" inside the input;
 *   - paragond and the compiler here disagree (one takes the program, the other refuses it). */
#include "http_client.h"
#include "paragon.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t server_pid;
static uint16_t server_port;
static char auth[160], dir[] = "/tmp/fuzz_submit.XXXXXX";

static void stop_server(void) {
    if (server_pid > 0) kill(server_pid, SIGKILL), waitpid(server_pid, NULL, 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *paragond = getenv("PARAGOND");
    if (!paragond || !mkdtemp(dir)) {
        fprintf(stderr, "fuzz_submit: set PARAGOND to a paragond binary (build/paragond)\n");
        exit(2);
    }
    char db[256], data[256];
    snprintf(db, sizeof db, "%s/p.db", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    int out[2];
    if (pipe(out)) exit(2);
    server_pid = fork();
    if (server_pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        /* a queue as long as the fuzzer needs: jobs are tiny and run on the host meanwhile */
        execl(paragond, paragond, "--port", "0", "--db", db, "--data-dir", data, "--no-calibration",
              "--max-queued", "100000", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    atexit(stop_server);
    FILE *f = fdopen(out[0], "r");
    char line[256];
    if (!f || !fgets(line, sizeof line, f) || !strstr(line, "listening on http://127.0.0.1:")) {
        fprintf(stderr, "fuzz_submit: paragond did not start\n");
        exit(2);
    }
    server_port = (uint16_t)atoi(strstr(line, "127.0.0.1:") + 10);
    char token_path[300], token[128] = "";
    snprintf(token_path, sizeof token_path, "%s/token", data);
    FILE *t = fopen(token_path, "r");
    if (!t || !fgets(token, sizeof token, t)) exit(2);
    fclose(t);
    token[strcspn(token, "\n")] = 0;
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    return 0;
}

/* ---- the generator: input bytes as choices ------------------------------------------------ */

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    FILE *out;
    int budget; /* expressions left to write */
} gen;

static unsigned pick(gen *g, unsigned n) { return g->pos < g->size ? g->data[g->pos++] % n : 0; }

/* A count, now and then a large one (the lengths that overflowed: thousands). */
static unsigned count(gen *g) {
    unsigned c = pick(g, 256);
    return c < 128 ? c % 8 : (c - 127) * 48;
}

static void expr(gen *g, int depth);

/* open n times, an expression, close n times: calls or parentheses inside each other */
static void nested(gen *g, int depth, const char *open, const char *close) {
    unsigned n = count(g) + 1;
    for (unsigned i = 0; i < n; i++) fputs(open, g->out);
    expr(g, depth + 1);
    for (unsigned i = 0; i < n; i++) fputs(close, g->out);
}

static void atom(gen *g) {
    static const char *const names[] = {"x", "y", "n", "f", "main", "g", "Nil", "Cons", "h"};
    switch (pick(g, 3)) {
    case 0: fprintf(g->out, "%u", pick(g, 256) * pick(g, 256)); break;
    case 1: fputs(names[pick(g, 9)], g->out); break;
    default: fprintf(g->out, "%u.5", pick(g, 10)); break;
    }
}

static void expr(gen *g, int depth) {
    if (--g->budget < 0 || depth > 600 || g->pos >= g->size) {
        atom(g);
        return;
    }
    static const char *const ops[] = {"+", "-", "*", "/", "%", "==", "<", ">>", "&", "|"};
    unsigned n;
    switch (pick(g, 12)) {
    case 0: /* an operator chain */
        n = count(g) + 1;
        atom(g);
        for (unsigned i = 0; i < n && g->budget-- > 0; i++) fprintf(g->out, " %s ", ops[pick(g, 10)]), atom(g);
        break;
    case 1: nested(g, depth, "g(", ")"); break;
    case 2: /* a list */
        n = count(g);
        fputs("[", g->out);
        for (unsigned i = 0; i < n; i++) {
            if (i) fputs(", ", g->out);
            if (pick(g, 4)) atom(g);
            else expr(g, depth + 1);
        }
        fputs("]", g->out);
        break;
    case 3: /* a lambda of many parameters, applied */
        n = count(g) + 1;
        fputs("(\\", g->out);
        for (unsigned i = 0; i < n; i++) fprintf(g->out, "p%u ", i);
        fputs(". ", g->out);
        expr(g, depth + 1);
        fputs(")(", g->out);
        n = n + pick(g, 3) - 1;
        for (unsigned i = 0; i < n; i++) fprintf(g->out, "%s%u", i ? ", " : "", i);
        fputs(")", g->out);
        break;
    case 4: fputs("let x = ", g->out), expr(g, depth + 1), fputs("; ", g->out), expr(g, depth + 1); break;
    case 5:
        fputs("switch ", g->out), expr(g, depth + 1), fputs(" { 0: ", g->out), expr(g, depth + 1);
        fputs("; _ n: ", g->out), expr(g, depth + 1), fputs(" }", g->out);
        break;
    case 6:
        fputs("match ", g->out), expr(g, depth + 1), fputs(" { Nil: ", g->out), expr(g, depth + 1);
        fputs("; Cons(h, t): ", g->out), expr(g, depth + 1), fputs(" }", g->out);
        break;
    case 7: fputs("(", g->out), expr(g, depth + 1), fputs(", ", g->out), expr(g, depth + 1), fputs(")", g->out); break;
    case 8: fputs("f(", g->out), expr(g, depth + 1), fputs(", ", g->out), expr(g, depth + 1), fputs(")", g->out); break;
    case 9: nested(g, depth, "(", ")"); break;
    case 10: fputs("\\y. ", g->out), expr(g, depth + 1); break;
    default: atom(g); break;
    }
}

/* A program: a few definitions, main among them (or not), from the input. */
static char *program(const uint8_t *data, size_t size) {
    char *text = NULL;
    size_t len = 0;
    gen g = {data, size, 0, open_memstream(&text, &len), 20000};
    if (!g.out) return NULL;
    unsigned defs = pick(&g, 4);
    static const char *const heads[] = {"f(x, y) = ", "g(n) = ", "h = ", "k(f) = "};
    for (unsigned i = 0; i < defs; i++) {
        fputs(heads[pick(&g, 4)], g.out);
        expr(&g, 1);
        fputs("\n", g.out);
    }
    if (pick(&g, 8)) fputs("main = ", g.out), expr(&g, 1), fputs("\n", g.out);
    fclose(g.out);
    return text;
}

/* ---- the compile here, on a thread with a default stack (as a request thread's) ----------- */

typedef struct {
    const char *src;
    pgn_error err;
    bool ok;
} compile_job;

static void *compile_here(void *arg) {
    compile_job *j = arg;
    char *net = pgn_pgl_compile(j->src, strlen(j->src), &j->err);
    j->ok = net != NULL;
    free(net);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = program(data, size);
    if (!src) return 0;
    if (getenv("FUZZ_SUBMIT_SHOW")) fprintf(stderr, "---- program\n%s----\n", src); /* replaying one input */
    compile_job job = {.src = src};
    pthread_t t;
    if (pthread_create(&t, NULL, compile_here, &job) || pthread_join(t, NULL)) abort();

    json_t *spec = json_pack("{s:s, s:s, s:s, s:s, s:{s:i, s:f}}", "kind", "inet", "language", "pgl", "device",
                             "host", "program", src, "limits", "max_interactions", 100000, "timeout_s", 2.0);
    char *body = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    const char *headers[] = {"Content-Type: application/json", auth, NULL};
    http_response r;
    if (http_request(server_port, "POST", "/api/v1/jobs", headers, body, strlen(body), 60000, &r)) {
        int status;
        if (waitpid(server_pid, &status, WNOHANG) == server_pid)
            fprintf(stderr, "paragond died (%s %d) on:\n%s\n", WIFSIGNALED(status) ? "signal" : "exit",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), src);
        else
            fprintf(stderr, "paragond did not answer (%s) on:\n%s\n", http_last_error(), src);
        abort();
    }
    free(body);
    if (r.status >= 500 || (r.status != 201 && r.status != 400 && r.status != 429)) {
        fprintf(stderr, "paragond answered %d: %s\non:\n%s\n", r.status, r.body, src);
        abort();
    }
    if (r.status == 400) {
        json_t *v = json_loads(r.body, 0, NULL), *e = json_object_get(v, "error");
        const char *field = json_string_value(json_object_get(e, "field"));
        const char *message = json_string_value(json_object_get(e, "message"));
        int line = 0, col = 0, lines = 1;
        for (const char *p = src; *p; p++) lines += *p == '\n';
        const char *at = message ? strstr(message, "line ") : NULL;
        bool placed = at && sscanf(at, "line %d, column %d", &line, &col) == 2 && line >= 1 && line <= lines && col >= 1;
        if (!field || strcmp(field, "program") || !message ||
            (!placed && !strstr(message ? message : "", "no 'main' definition"))) {
            fprintf(stderr, "a 400 that names no place in the program: %s\non:\n%s\n", r.body, src);
            abort();
        }
        json_decref(v);
    }
    if (r.status != 429 && (r.status == 201) != job.ok) {
        fprintf(stderr, "paragond answered %d, the compiler here %s (%s), on:\n%s\n", r.status,
                job.ok ? "took it" : "refused it", job.err.message, src);
        abort();
    }
    http_response_free(&r);
    free(src);
    return 0;
}
