/* paragond_harness.c: what the integration tests against a live paragond share: a temporary
 * directory per test, spawning paragond (and killing what a failed test left running), requests
 * as its owner or as anyone, tables of refused requests, bounded waits on a job's state, and the
 * set-ups several files use (XOR for N epochs, a gemm bench job). Declared in paragond_harness.h. */
#include "paragond_harness.h"
#include "paragon.h"  /* pgn_read_file */
#include "pg_admin.h" /* a test's database on a PostgreSQL store */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char xor_spec[] =
    "{\"kind\":\"train\",\"name\":\"xor\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},"
    "\"data\":{\"source\":\"xor\"},\"optimizer\":{\"type\":\"sgd\",\"lr\":0.1,\"momentum\":0.9},"
    "\"batch_size\":4,\"epochs\":300,\"seed\":1}";
const char *const json_headers[] = {"Content-Type: application/json", NULL};
const char gemm_bench_spec[] =
    "{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":[\"N=128\"],\"repeats\":1}";

char tmpdir[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void harness_setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/paragon-server-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

/* Children still running when a test ends (a failed assertion skips stop_server): they are
 * killed here, or they would hold the test runner's output pipe open. */
static pid_t live[8];
static size_t n_live;

void forget(pid_t pid) {
    for (size_t i = 0; i < n_live; i++)
        if (live[i] == pid) live[i] = live[--n_live];
}

/* ---- the store: SQLite, or PostgreSQL under tests/with_postgresql.sh ------------------------ */

/* A suite registered a second time under tests/with_postgresql.sh (PARAGON_TEST_STORE=postgresql)
 * runs its servers on a PostgreSQL database of the test's own, as a lone node of a cluster: the
 * API on both engines. */
static bool on_postgresql(void) {
    const char *v = getenv("PARAGON_TEST_STORE");
    return v && !strcmp(v, "postgresql");
}

static char pg_db[64]; /* the test's database, once made */

/* The --store value of the test's servers into out (and their --data-dir's role). */
static void test_store(char *out, size_t size) {
    if (!on_postgresql()) {
        snprintf(out, size, "%s/t.db", tmpdir);
        return;
    }
    if (!pg_db[0]) {
        snprintf(pg_db, sizeof pg_db, "paragon_h_%d_%s", (int)getpid(), strrchr(tmpdir, '-') + 1);
        char sql[128];
        snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\"", pg_db);
        pg_admin(sql);
    }
    snprintf(out, size, "postgresql:///%s", pg_db);
}

void harness_teardown(void) {
    for (size_t i = 0; i < n_live; i++) {
        kill(live[i], SIGKILL);
        waitpid(live[i], NULL, 0);
    }
    n_live = 0;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (pg_db[0]) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", pg_db);
        pg_admin(sql);
        pg_db[0] = 0;
    }
}

/* ---- process helpers -------------------------------------------------------------------- */

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *paragond_path(void) {
    const char *p = getenv("PARAGOND");
    cr_assert_not_null(p, "PARAGOND must name the built paragond");
    return p;
}

/* Runs paragond with args; extra_env ("NAME=value" strings, NULL-ended) is added to ours. */
child spawn(const char *const *args, const char *const *extra_env, bool capture_stderr) {
    const char *argv[32] = {paragond_path()};
    int argc = 1;
    for (const char *const *a = args; a && *a; a++) argv[argc++] = *a;
    argv[argc] = NULL;

    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    const char **envp = calloc(n_env + 16, sizeof *envp);
    size_t e = 0;
    for (size_t i = 0; i < n_env; i++) { /* an extra NAME=value replaces ours */
        bool replaced = false;
        for (const char *const *x = extra_env; x && *x && !replaced; x++) {
            size_t name = strcspn(*x, "=");
            replaced = !strncmp(environ[i], *x, name + 1);
        }
        if (!replaced) envp[e++] = environ[i];
    }
    for (const char *const *x = extra_env; x && *x; x++) envp[e++] = *x;
    envp[e] = NULL;

    int out[2], err[2] = {-1, -1};
    cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
    if (capture_stderr) cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    if (capture_stderr) posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    child c = {.out_fd = out[0], .err_fd = err[0]};
    int rc = posix_spawn(&c.pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)envp);
    cr_assert_eq(rc, 0, "posix_spawn %s: %s", argv[0], strerror(rc));
    if (n_live < sizeof live / sizeof live[0]) live[n_live++] = c.pid;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (capture_stderr) close(err[1]);
    free(envp);
    return c;
}

/* Reads fd to its end (bounded), into a NUL-terminated malloc'd string. */
char *read_all(int fd, int timeout_ms) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - now_ms();
        cr_assert_gt(left, 0, "timed out reading the child's output");
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        if (len + 1024 > cap) buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    buf[len] = 0;
    return buf;
}

/* Waits for the child to exit (bounded) and returns its exit status; a signal death fails. */
int wait_exit(pid_t pid, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            forget(pid);
            break;
        }
        cr_assert_eq(r, 0, "waitpid: %s", strerror(errno));
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            forget(pid);
            cr_assert_fail("paragond did not exit within %d ms", timeout_ms);
        }
        usleep(20000);
    }
    cr_assert(WIFEXITED(status), "paragond died of signal %d", WTERMSIG(status));
    return WEXITSTATUS(status);
}

int run_to_exit(const char *const *args, const char *const *extra_env, char **out, char **err) {
    child c = spawn(args, extra_env, true);
    *out = read_all(c.out_fd, START_TIMEOUT_MS);
    *err = read_all(c.err_fd, START_TIMEOUT_MS);
    int status = wait_exit(c.pid, STOP_TIMEOUT_MS);
    close(c.out_fd);
    close(c.err_fd);
    return status;
}

/* The first line paragond prints on stdout says where it listens; waits for it. */
void read_listening_line(const child *c, char *line, size_t size) {
    size_t len = 0;
    int64_t deadline = now_ms() + START_TIMEOUT_MS;
    while (len == 0 || line[len - 1] != '\n') {
        int64_t left = deadline - now_ms();
        cr_assert_gt(left, 0, "paragond did not print its listening line");
        struct pollfd p = {.fd = c->out_fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        ssize_t n = read(c->out_fd, line + len, 1);
        if (n < 0 && errno == EINTR) continue;
        cr_assert_gt(n, 0, "paragond exited before listening (status %d)", wait_exit(c->pid, STOP_TIMEOUT_MS));
        len++;
        cr_assert_lt(len, size);
    }
    line[len] = 0;
}

server start_server_env(bool calibrate, const char *const *extra_env) {
    server s;
    test_store(s.db, sizeof s.db);
    snprintf(s.data, sizeof s.data, "%s/data", tmpdir);
    const char *args[10] = {"--port", "0", "--store", s.db, "--data-dir", s.data};
    size_t n = 6;
    if (on_postgresql()) { /* a lone node of a cluster: its files in the shared directory */
        args[4] = "--shared-dir";
        args[n++] = "--node";
        args[n++] = "harness";
    }
    if (!calibrate) args[n++] = "--no-calibration";
    args[n] = NULL;
    s.proc = spawn(args, extra_env, false);

    char line[256];
    read_listening_line(&s.proc, line, sizeof line);
    unsigned port = 0;
    cr_assert_eq(sscanf(line, "paragond listening on http://127.0.0.1:%u\n", &port), 1,
                 "unexpected first line: %s", line);
    cr_assert(port > 0 && port < 65536);
    s.port = (uint16_t)port;
    return s;
}

server start_server_calibrating(bool calibrate) { return start_server_env(calibrate, NULL); }

server start_server(void) { return start_server_calibrating(false); }

/* SIGTERM, then the clean exit (status 0; under ASan a leak would make it non-zero). */
void stop_server(server *s) {
    cr_assert_eq(kill(s->proc.pid, SIGTERM), 0);
    cr_assert_eq(wait_exit(s->proc.pid, STOP_TIMEOUT_MS), 0, "paragond exits 0 on SIGTERM");
    char *rest = read_all(s->proc.out_fd, HTTP_TIMEOUT_MS);
    cr_assert_str_eq(rest, "", "the listening line is all paragond prints on stdout");
    free(rest);
    close(s->proc.out_fd);
}

/* ---- HTTP helpers ----------------------------------------------------------------------- */

/* "Authorization: Bearer <token>" from the server's <data>/token; "" while there is none. */
void auth_header(const server *s, char *out, size_t size) {
    char path[320];
    snprintf(path, sizeof path, "%s/token", s->data);
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char token[200];
    if (fscanf(f, "%199s", token) == 1) snprintf(out, size, "Authorization: Bearer %s", token);
    fclose(f);
}

/* Sends a request as the server's owner: with its token, so every test is an authorised
 * client; the auth tests call http_request directly to be anything else. */
http_response request(const server *s, const char *method, const char *path,
                             const char *const *headers, const char *body) {
    char auth[256];
    auth_header(s, auth, sizeof auth);
    const char *all[16];
    size_t n = 0;
    for (const char *const *h = headers; h && *h; h++) {
        cr_assert_lt(n, 14, "too many headers");
        all[n++] = *h;
    }
    if (auth[0]) all[n++] = auth;
    all[n] = NULL;
    http_response r;
    int rc = http_request(s->port, method, path, all, body, body ? strlen(body) : 0,
                          HTTP_TIMEOUT_MS, &r);
    cr_assert_eq(rc, 0, "%s %s: %s", method, path, http_last_error());
    return r;
}

/* GET path, expect status, return the parsed body. */
json_t *get_json(const server *s, const char *path, int status) {
    http_response r = request(s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, status, "GET %s: %d %s", path, r.status, r.body);
    char ct[128];
    cr_assert_not_null(http_header(&r, "Content-Type", ct, sizeof ct));
    cr_assert_str_eq(ct, "application/json");
    json_error_t e;
    json_t *v = json_loads(r.body, 0, &e);
    cr_assert_not_null(v, "GET %s: body is not JSON (%s): %s", path, e.text, r.body);
    http_response_free(&r);
    return v;
}

json_t *parse_body(const http_response *r) {
    json_t *v = json_loads(r->body, 0, NULL);
    cr_assert_not_null(v, "body is not JSON: %s", r->body);
    return v;
}

const char *str(const json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

/* Asserts {"error":{"code":code,"field":field,...}} and returns the message. */
void assert_error(const http_response *r, int status, const char *code,
                         const char *field) {
    cr_assert_eq(r->status, status, "want %d %s, got %d: %s", status, code, r->status, r->body);
    json_t *v = parse_body(r);
    json_t *e = json_object_get(v, "error");
    cr_assert(json_is_object(e), "no error object: %s", r->body);
    cr_assert_str_eq(str(e, "code"), code, "body: %s", r->body);
    const char *message = str(e, "message");
    cr_assert(message && *message, "the error has a message: %s", r->body);
    if (field) {
        cr_assert_str_eq(str(e, "field"), field, "body: %s", r->body);
        cr_assert(strstr(message, field), "the message names %s: %s", field, message);
    }
    json_decref(v);
}

int64_t job_total(const server *s) {
    json_t *v = get_json(s, "/api/v1/jobs", 200);
    int64_t total = json_integer_value(json_object_get(v, "total"));
    json_decref(v);
    return total;
}

int64_t submit(const server *s, const char *spec) {
    http_response r = request(s, "POST", "/api/v1/jobs", json_headers, spec);
    cr_assert_eq(r.status, 201, "POST /api/v1/jobs: %d %s", r.status, r.body);
    json_t *job = parse_body(&r);
    int64_t id = json_integer_value(json_object_get(job, "id"));
    cr_assert_gt(id, 0);
    char loc[64], want[64];
    snprintf(want, sizeof want, "/api/v1/jobs/%lld", (long long)id);
    cr_assert_not_null(http_header(&r, "Location", loc, sizeof loc));
    cr_assert_str_eq(loc, want);
    json_decref(job);
    http_response_free(&r);
    return id;
}

/* Polls the job until its state is one of `until` (a space-separated list); bounded. */
json_t *wait_state(const server *s, int64_t id, const char *until, int timeout_ms) {
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", (long long)id);
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        json_t *job = get_json(s, path, 200);
        const char *state = str(job, "state");
        cr_assert_not_null(state);
        char padded[32];
        snprintf(padded, sizeof padded, " %s ", state);
        char list[128];
        snprintf(list, sizeof list, " %s ", until);
        if (strstr(list, padded)) return job;
        if (now_ms() > deadline) {
            char *text = json_dumps(job, 0);
            cr_assert_fail("job %lld still %s: %s", (long long)id, state, text);
        }
        json_decref(job);
        usleep(50000);
    }
}


/* Replaces the first occurrence of from in xor_spec with to. */
char *spec_with(const char *from, const char *to) {
    const char *at = strstr(xor_spec, from);
    cr_assert_not_null(at, "'%s' is in the XOR spec", from);
    size_t head = (size_t)(at - xor_spec);
    size_t len = strlen(xor_spec) - strlen(from) + strlen(to);
    char *out = malloc(len + 1);
    memcpy(out, xor_spec, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    return out;
}

int64_t submit_xor(const server *s, int epochs, const char *device) {
    char to[96];
    if (device) snprintf(to, sizeof to, "\"epochs\":%d,\"device\":\"%s\"", epochs, device);
    else snprintf(to, sizeof to, "\"epochs\":%d", epochs);
    char *spec = spec_with("\"epochs\":300", to);
    int64_t id = submit(s, spec);
    free(spec);
    return id;
}

json_t *wait_succeeded(const server *s, int64_t id) {
    json_t *job = wait_state(s, id, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    json_t *e = json_object_get(job, "error");
    cr_assert_str_eq(str(job, "state"), "succeeded", "job %lld: %s: %s", (long long)id,
                     str(e, "code"), str(e, "message"));
    return job;
}

void post_expect(const server *s, const char *body, int status, const char *code,
                        const char *field) {
    http_response r = request(s, "POST", "/api/v1/jobs", json_headers, body);
    assert_error(&r, status, code, field);
    cr_assert_eq(http_header(&r, "Location", (char[64]){0}, 64), NULL, "no Location on error");
    http_response_free(&r);
}

char *job_url(char *buf, size_t size, int64_t id, const char *sub) {
    snprintf(buf, size, "/api/v1/jobs/%lld%s", (long long)id, sub);
    return buf;
}

json_t *job_now(const server *s, int64_t id) {
    char url[96];
    return get_json(s, job_url(url, sizeof url, id, ""), 200);
}

/* The status of method on /api/v1/jobs/{id}{sub}, with the body freed. */
int status_of(const server *s, const char *method, int64_t id, const char *sub) {
    char url[96];
    http_response r = request(s, method, job_url(url, sizeof url, id, sub), NULL, NULL);
    int status = r.status;
    http_response_free(&r);
    return status;
}

void assert_allow(const http_response *r, const char *allow) {
    char h[64];
    assert_error(r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(r, "Allow", h, sizeof h));
    cr_assert_str_eq(h, allow);
}

/* A file of the server's data dir, read whole; NULL when missing. */
char *data_file(const server *s, int64_t id, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/jobs/%lld/checkpoint.safetensors", s->data, (long long)id);
    return pgn_read_file(path, len);
}

char *source_file(const char *rel, size_t *len) {
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    char *text = pgn_read_file(path, len);
    cr_assert_not_null(text, "%s", path);
    return text;
}

json_t *inet_spec_from(const char *rel) {
    size_t len = 0;
    char *program = source_file(rel, &len);
    json_t *spec = json_pack("{s:s, s:s%}", "kind", "inet", "program", program, len);
    cr_assert_not_null(spec);
    free(program);
    return spec;
}

/* A finished bench job; skips the test while its suite is still a stub in the engine. */
json_t *wait_bench(const server *s, int64_t id) {
    json_t *job = wait_state(s, id, "succeeded failed", JOB_TIMEOUT_MS);
    json_t *e = json_object_get(job, "error");
    if (json_is_object(e) && strcmp(str(e, "code"), "unsupported") == 0)
        cr_skip_test("the bench suite is not written yet: %s", str(e, "message"));
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s", str(e, "message"));
    return job;
}

/* The first column of the first row of sql (?1 bound to id) in the server's database. */
int64_t count_rows(const server *s, const char *sql, int64_t id) {
    if (!strncmp(s->db, "postgresql:", 11)) { /* the same SQL, ?1 written $1 */
        char pg_sql[1024], param[24];
        size_t o = 0;
        for (const char *p = sql; *p && o + 2 < sizeof pg_sql; p++) pg_sql[o++] = *p == '?' ? '$' : *p;
        pg_sql[o] = 0;
        snprintf(param, sizeof param, "%lld", (long long)id);
        PGconn *c = PQconnectdb(s->db);
        cr_assert_eq(PQstatus(c), CONNECTION_OK, "PostgreSQL: %s", PQerrorMessage(c));
        const char *values[1] = {param};
        PGresult *r = PQexecParams(c, pg_sql, strstr(pg_sql, "$1") ? 1 : 0, NULL, values, NULL, NULL, 0);
        cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", pg_sql, PQerrorMessage(c));
        int64_t n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        PQfinish(c);
        return n;
    }
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s->db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

void kill_server(server *s) {
    cr_assert_eq(kill(s->proc.pid, SIGKILL), 0);
    int status;
    cr_assert_eq(waitpid(s->proc.pid, &status, 0), s->proc.pid);
    forget(s->proc.pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    close(s->proc.out_fd);
}

/* Starts paragond with extra flags and its stderr captured (*err_fd); host is the address its
 * listening line names. The database and data dir are start_server's. */
server start_server_with(const char *const *extra, const char *host, int *err_fd) {
    server s;
    snprintf(s.db, sizeof s.db, "%s/t.db", tmpdir);
    snprintf(s.data, sizeof s.data, "%s/data", tmpdir);
    const char *args[24] = {"--port", "0", "--db", s.db, "--data-dir", s.data, "--no-calibration"};
    size_t n = 7;
    for (const char *const *a = extra; a && *a; a++) args[n++] = *a;
    args[n] = NULL;
    s.proc = spawn(args, NULL, true);
    *err_fd = s.proc.err_fd;
    char line[256];
    read_listening_line(&s.proc, line, sizeof line);
    char want[64];
    snprintf(want, sizeof want, "paragond listening on http://%s:", host);
    cr_assert_eq(strncmp(line, want, strlen(want)), 0, "unexpected first line: %s", line);
    unsigned port = (unsigned)atoi(line + strlen(want));
    cr_assert(port > 0 && port < 65536, "%s", line);
    s.port = (uint16_t)port;
    return s;
}

/* Stops it as stop_server does and returns what it wrote on stderr. */
char *stop_server_with(server *s, int err_fd) {
    stop_server(s);
    char *err = read_all(err_fd, HTTP_TIMEOUT_MS);
    close(err_fd);
    return err;
}

/* A request exactly as given: no token added. */
http_response bare_request(const server *s, const char *method, const char *path,
                                  const char *const *headers, const char *body) {
    http_response r;
    int rc = http_request(s->port, method, path, headers, body, body ? strlen(body) : 0,
                          HTTP_TIMEOUT_MS, &r);
    cr_assert_eq(rc, 0, "%s %s: %s", method, path, http_last_error());
    return r;
}

char *read_token(const server *s) {
    char path[320];
    snprintf(path, sizeof path, "%s/token", s->data);
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    char *text = read_all(fd, HTTP_TIMEOUT_MS);
    close(fd);
    return text;
}

/* 401 unauthorized, its message saying what is wrong, the challenge header, no token. */
void assert_unauthorized(const http_response *r, const char *says, const char *token) {
    assert_error(r, 401, "unauthorized", NULL);
    char h[128];
    cr_assert_not_null(http_header(r, "WWW-Authenticate", h, sizeof h), "%s", r->head);
    cr_assert_str_eq(h, "Bearer realm=\"paragond\"");
    cr_assert(strstr(r->body, says), "the message says '%s': %s", says, r->body);
    if (token) cr_assert_null(strstr(r->body, token), "the token leaks: %s", r->body);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const web_file *)a)->name, ((const web_file *)b)->name);
}

size_t list_web_files(web_file files[WEB_FILES_MAX]) {
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript; charset=utf-8"},
                 {".css", "text/css; charset=utf-8"}};
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    cr_assert_not_null(root, "PARAGON_SOURCE_ROOT is not set: run through meson test");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/web", root);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    size_t n = 0;
    bool page = false, entry = false;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        cr_assert_lt(n, WEB_FILES_MAX, "more than %d files in %s", WEB_FILES_MAX, dir);
        cr_assert_lt(strlen(e->d_name), sizeof files[n].name, "web/%s: name too long", e->d_name);
        strcpy(files[n].name, e->d_name);
        const char *dot = strrchr(e->d_name, '.');
        files[n].type = NULL;
        for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
            if (strcmp(dot, types[i].ext) == 0) files[n].type = types[i].type;
        cr_assert_not_null(files[n].type, "web/%s: not a kind of file the dashboard is made of",
                           e->d_name);
        page |= strcmp(e->d_name, "index.html") == 0;
        entry |= strcmp(e->d_name, "app.js") == 0;
        n++;
    }
    closedir(d);
    cr_assert(page && entry, "%s lacks index.html or app.js", dir);
    qsort(files, n, sizeof files[0], by_name);
    return n;
}

void assert_refusals(const server *s, const refusal *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const refusal *c = &cases[i];
        http_response r = request(s, c->method, c->path, c->headers, c->body);
        cr_assert_eq(r.status, c->status, "case %zu, %s %s: want %d %s, got %d: %s", i, c->method,
                     c->path, c->status, c->code, r.status, r.body);
        assert_error(&r, c->status, c->code, c->field);
        json_t *v = parse_body(&r);
        json_t *e = json_object_get(v, "error");
        if (c->limit) cr_assert_str_eq(str(e, "limit"), c->limit, "case %zu: %s", i, r.body);
        if (c->max) cr_assert_eq(json_integer_value(json_object_get(e, "max")), c->max, "case %zu: %s", i, r.body);
        if (c->says)
            cr_assert(strstr(str(e, "message"), c->says), "case %zu, %s %s: the message says '%s': %s",
                      i, c->method, c->path, c->says, r.body);
        json_decref(v);
        char h[128];
        if (c->allow) {
            cr_assert_not_null(http_header(&r, "Allow", h, sizeof h), "case %zu: %s", i, r.head);
            cr_assert_str_eq(h, c->allow, "case %zu: %s %s", i, c->method, c->path);
        }
        cr_assert_null(http_header(&r, "Location", h, sizeof h), "case %zu: no Location on error", i);
        http_response_free(&r);
    }
}

/* ---- the paragon command ---- */

int run_cli(const server *s, const char *args, char **out, char **err) {
    const char *cli = getenv("PARAGON_CLI"), *root = getenv("PARAGON_SOURCE_ROOT");
    cr_assert(cli && root, "PARAGON_CLI and PARAGON_SOURCE_ROOT are set by meson");
    char env[512] = "PARAGON_URL= PARAGON_TOKEN=";
    if (s) {
        char *token = read_token(s);
        token[strcspn(token, "\r\n")] = 0;
        snprintf(env, sizeof env, "PARAGON_URL=http://127.0.0.1:%u PARAGON_TOKEN=%s", s->port, token);
        free(token);
    }
    char errfile[300], cmd[4096];
    snprintf(errfile, sizeof errfile, "%s/cli-stderr", tmpdir);
    snprintf(cmd, sizeof cmd, "cd '%s' && env %s '%s' %s 2>'%s' </dev/null", root, env, cli, args, errfile);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen: %s", strerror(errno));
    *out = read_all(fileno(p), JOB_TIMEOUT_MS);
    int status = pclose(p);
    int fd = open(errfile, O_RDONLY);
    cr_assert_geq(fd, 0, "%s: %s", errfile, strerror(errno));
    *err = read_all(fd, HTTP_TIMEOUT_MS);
    close(fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char tiny_gpt_spec[] =
    "{\"kind\":\"train\",\"name\":\"tiny-gpt\",\"device\":\"cpu\",\"seed\":1,\"model\":{\"type\":\"gpt\","
    "\"n_layer\":1,\"n_head\":2,\"d_model\":16,\"context\":8},\"data\":{\"source\":\"text\",\"path\":\"tiny.txt\"},"
    "\"optimizer\":{\"type\":\"adamw\",\"lr\":0.01},\"batch_size\":4,\"steps\":20,\"log_every\":2,"
    "\"eval_every\":10,\"eval_windows\":4}";

void write_tiny_text(const server *s) {
    char dir[400], path[420];
    snprintf(dir, sizeof dir, "%s/datasets", s->data);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/tiny.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 100; i++) fprintf(f, "the quick brown fox jumps over the lazy dog %d. ", i % 5);
    fclose(f);
}

http_response get_download(const server *s, int64_t id, const char *sub, const char *filename) {
    char url[96], h[128], want[160];
    http_response r = request(s, "GET", job_url(url, sizeof url, id, sub), NULL, NULL);
    cr_assert_eq(r.status, 200, "GET %s: %d %s", url, r.status, r.body);
    cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
    cr_assert_str_eq(h, "application/octet-stream");
    cr_assert_not_null(http_header(&r, "Content-Disposition", h, sizeof h));
    snprintf(want, sizeof want, "attachment; filename=\"%s\"", filename);
    cr_assert_str_eq(h, want);
    return r;
}

int64_t train_tiny_gpt(const server *s) {
    write_tiny_text(s);
    int64_t id = submit(s, tiny_gpt_spec);
    json_decref(wait_succeeded(s, id));
    return id;
}
