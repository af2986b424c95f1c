/* test_server.c: integration tests against a live paragond ($PARAGOND), spawned on a free
 * port with its own database and data dir: health and discovery endpoints, the XOR training
 * job end to end (API, metrics, rows in the SQLite file), every class of bad request (with
 * nothing stored), the dashboard files, flags, a restart mid-job, start-up without any
 * OpenCL device, bench jobs (one device and "all") and the benchmark export in CSV and JSON.
 * Waits are bounded; nothing asserts on time. */
#include "http_client.h"
#include "paragon.h"
#include "store.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HTTP_TIMEOUT_MS 30000
#define START_TIMEOUT_MS 120000 /* ASan + the first OpenCL probe can be slow */
#define STOP_TIMEOUT_MS 120000
#define JOB_TIMEOUT_MS 240000

static const char xor_spec[] =
    "{\"kind\":\"train\",\"name\":\"xor\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},"
    "\"data\":{\"source\":\"xor\"},\"optimizer\":{\"type\":\"sgd\",\"lr\":0.1,\"momentum\":0.9},"
    "\"batch_size\":4,\"epochs\":300,\"seed\":1}";
#define XOR_EPOCHS 300

static const char *const json_headers[] = {"Content-Type: application/json", NULL};

static char tmpdir[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/paragon-server-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

/* Children still running when a test ends (a failed assertion skips stop_server): they are
 * killed here, or they would hold the test runner's output pipe open. */
static pid_t live[8];
static size_t n_live;

static void forget(pid_t pid) {
    for (size_t i = 0; i < n_live; i++)
        if (live[i] == pid) live[i] = live[--n_live];
}

static void teardown(void) {
    for (size_t i = 0; i < n_live; i++) {
        kill(live[i], SIGKILL);
        waitpid(live[i], NULL, 0);
    }
    n_live = 0;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(server, .init = setup, .fini = teardown);

/* ---- process helpers -------------------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *paragond_path(void) {
    const char *p = getenv("PARAGOND");
    cr_assert_not_null(p, "PARAGOND must name the built paragond");
    return p;
}

typedef struct child {
    pid_t pid;
    int out_fd; /* its stdout */
    int err_fd; /* its stderr, when captured; else -1 */
} child;

/* Runs paragond with args; extra_env ("NAME=value" strings, NULL-ended) is added to ours. */
static child spawn(const char *const *args, const char *const *extra_env, bool capture_stderr) {
    const char *argv[32] = {paragond_path()};
    int argc = 1;
    for (const char *const *a = args; a && *a; a++) argv[argc++] = *a;
    argv[argc] = NULL;

    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    const char **envp = calloc(n_env + 16, sizeof *envp);
    size_t e = 0;
    for (size_t i = 0; i < n_env; i++) envp[e++] = environ[i];
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
static char *read_all(int fd, int timeout_ms) {
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
static int wait_exit(pid_t pid, int timeout_ms) {
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

typedef struct server {
    child proc;
    uint16_t port;
    char db[300];
    char data[300];
} server;

/* Starts paragond on a free port with the database and data dir in tmpdir; with calibrate, it
 * measures devices that have no benchmark rows at start, as a first start does (the other
 * tests skip that: it costs every start a second or two). */
static server start_server_calibrating(bool calibrate) {
    server s;
    snprintf(s.db, sizeof s.db, "%s/t.db", tmpdir);
    snprintf(s.data, sizeof s.data, "%s/data", tmpdir);
    const char *args[] = {"--port", "0", "--db", s.db, "--data-dir", s.data,
                          calibrate ? NULL : "--no-calibration", NULL};
    s.proc = spawn(args, NULL, false);

    /* The first line on stdout says where it listens. */
    char line[256];
    size_t len = 0;
    int64_t deadline = now_ms() + START_TIMEOUT_MS;
    while (len == 0 || line[len - 1] != '\n') {
        int64_t left = deadline - now_ms();
        cr_assert_gt(left, 0, "paragond did not print its listening line");
        struct pollfd p = {.fd = s.proc.out_fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        ssize_t n = read(s.proc.out_fd, line + len, 1);
        if (n < 0 && errno == EINTR) continue;
        cr_assert_gt(n, 0, "paragond exited before listening (status %d)",
                     wait_exit(s.proc.pid, STOP_TIMEOUT_MS));
        len++;
        cr_assert_lt(len, sizeof line);
    }
    line[len] = 0;
    unsigned port = 0;
    cr_assert_eq(sscanf(line, "paragond listening on http://127.0.0.1:%u\n", &port), 1,
                 "unexpected first line: %s", line);
    cr_assert(port > 0 && port < 65536);
    s.port = (uint16_t)port;
    return s;
}

static server start_server(void) { return start_server_calibrating(false); }

/* SIGTERM, then the clean exit (status 0; under ASan a leak would make it non-zero). */
static void stop_server(server *s) {
    cr_assert_eq(kill(s->proc.pid, SIGTERM), 0);
    cr_assert_eq(wait_exit(s->proc.pid, STOP_TIMEOUT_MS), 0, "paragond exits 0 on SIGTERM");
    char *rest = read_all(s->proc.out_fd, HTTP_TIMEOUT_MS);
    cr_assert_str_eq(rest, "", "the listening line is all paragond prints on stdout");
    free(rest);
    close(s->proc.out_fd);
}

/* ---- HTTP helpers ----------------------------------------------------------------------- */

static http_response request(const server *s, const char *method, const char *path,
                             const char *const *headers, const char *body) {
    http_response r;
    int rc = http_request(s->port, method, path, headers, body, body ? strlen(body) : 0,
                          HTTP_TIMEOUT_MS, &r);
    cr_assert_eq(rc, 0, "%s %s: %s", method, path, http_last_error());
    return r;
}

/* GET path, expect status, return the parsed body. */
static json_t *get_json(const server *s, const char *path, int status) {
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

static json_t *parse_body(const http_response *r) {
    json_t *v = json_loads(r->body, 0, NULL);
    cr_assert_not_null(v, "body is not JSON: %s", r->body);
    return v;
}

static const char *str(const json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

/* Asserts {"error":{"code":code,"field":field,...}} and returns the message. */
static void assert_error(const http_response *r, int status, const char *code,
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

static int64_t job_total(const server *s) {
    json_t *v = get_json(s, "/api/v1/jobs", 200);
    int64_t total = json_integer_value(json_object_get(v, "total"));
    json_decref(v);
    return total;
}

static int64_t submit(const server *s, const char *spec) {
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
static json_t *wait_state(const server *s, int64_t id, const char *until, int timeout_ms) {
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

/* ---- tests ------------------------------------------------------------------------------ */

Test(server, health_version_and_devices_answer) {
    server s = start_server();
    json_t *v = get_json(&s, "/healthz", 200);
    cr_assert_str_eq(str(v, "status"), "ok");
    json_decref(v);
    v = get_json(&s, "/readyz", 200);
    cr_assert(json_is_true(json_object_get(v, "ready")));
    json_decref(v);

    v = get_json(&s, "/api/v1/version", 200);
    cr_assert_str_eq(str(v, "version"), "0.1.0");
    json_t *opencl = json_object_get(v, "opencl");
    cr_assert(json_is_array(opencl) && json_array_size(opencl) >= 1, "platforms listed");
    json_decref(v);

    v = get_json(&s, "/api/v1/devices", 200);
    json_t *devices = json_object_get(v, "devices");
    cr_assert(json_is_array(devices));
    size_t n = json_array_size(devices);
    cr_assert_geq(n, 2, "at least one OpenCL device plus host");
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(devices, i);
        cr_assert(str(d, "id") && str(d, "type") && str(d, "name"));
        cr_assert_eq(json_integer_value(json_object_get(d, "queued")), 0);
        cr_assert(json_is_null(json_object_get(d, "running_job")));
        cr_assert_neq(strcmp(str(d, "type"), "host") == 0, i + 1 < n, "host is last, once");
    }
    cr_assert_str_eq(str(json_array_get(devices, n - 1), "id"), "host");
    json_decref(v);

    /* One keep-alive connection serves many requests. */
    http_conn *c = http_connect(s.port, HTTP_TIMEOUT_MS);
    cr_assert_not_null(c, "%s", http_last_error());
    for (int i = 0; i < 20; i++) {
        http_response r;
        cr_assert_eq(http_conn_request(c, "GET", "/healthz", NULL, NULL, 0, &r), 0, "%s",
                     http_last_error());
        cr_assert_eq(r.status, 200);
        cr_assert_str_eq(r.body, "{\"status\":\"ok\"}");
        http_response_free(&r);
    }
    http_close(c);
    stop_server(&s);
}

Test(server, xor_job_trains_to_full_accuracy) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_t *job = wait_state(&s, id, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    char *text = json_dumps(job, 0);
    cr_assert_str_eq(str(job, "state"), "succeeded", "job: %s", text);
    free(text);

    cr_assert_str_eq(str(job, "kind"), "train");
    cr_assert_str_eq(str(job, "name"), "xor");
    cr_assert_str_eq(str(job, "device_requested"), "auto");
    const char *device = str(job, "device");
    cr_assert(device && strcmp(device, "host") != 0, "auto picks an OpenCL device: %s", device);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 1);
    cr_assert_float_eq(json_real_value(json_object_get(job, "progress")), 1.0, 1e-9);
    cr_assert(json_is_null(json_object_get(job, "error")));
    cr_assert(str(job, "started_at") && str(job, "finished_at"));
    json_t *spec = json_object_get(job, "spec");
    cr_assert_eq(json_integer_value(json_object_get(spec, "epochs")), XOR_EPOCHS);
    json_t *result = json_object_get(job, "result");
    cr_assert(json_is_object(result));
    cr_assert_float_eq(json_number_value(json_object_get(result, "accuracy")), 1.0, 1e-12);
    const char *sha = str(result, "weights_sha256");
    cr_assert_not_null(sha);
    cr_assert_eq(strlen(sha), 64);
    for (const char *p = sha; *p; p++)
        cr_assert(isxdigit((unsigned char)*p) && !isupper((unsigned char)*p), "hex: %s", sha);
    char sha_copy[65];
    snprintf(sha_copy, sizeof sha_copy, "%s", sha);
    char device_copy[64];
    snprintf(device_copy, sizeof device_copy, "%s", device);
    json_decref(job);

    /* Metrics: one loss and one accuracy per epoch, in step order, learning visibly. */
    char path[128];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics", (long long)id);
    json_t *v = get_json(&s, path, 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "job_id")), id);
    json_t *metrics = json_object_get(v, "metrics");
    size_t n_loss = 0, n_acc = 0;
    double first_loss = 0, last_loss = 0, last_acc = 0;
    int64_t prev_step = INT64_MIN;
    const char *prev_name = "";
    size_t i;
    json_t *m;
    json_array_foreach(metrics, i, m) {
        const char *name = str(m, "name");
        int64_t step = json_integer_value(json_object_get(m, "step"));
        if (strcmp(name, prev_name) == 0) cr_assert_gt(step, prev_step, "ordered by step");
        else cr_assert_gt(strcmp(name, prev_name), 0, "ordered by name");
        prev_name = name;
        prev_step = step;
        double value = json_number_value(json_object_get(m, "value"));
        if (strcmp(name, "loss") == 0) {
            if (n_loss++ == 0) first_loss = value;
            last_loss = value;
        } else if (strcmp(name, "accuracy") == 0) {
            n_acc++;
            last_acc = value;
        }
    }
    cr_assert_eq(n_loss, XOR_EPOCHS);
    cr_assert_eq(n_acc, XOR_EPOCHS);
    cr_assert_lt(last_loss, first_loss, "loss falls: %g -> %g", first_loss, last_loss);
    cr_assert_float_eq(last_acc, 1.0, 1e-12);
    json_decref(v);

    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss", (long long)id);
    v = get_json(&s, path, 200);
    metrics = json_object_get(v, "metrics");
    cr_assert_eq(json_array_size(metrics), XOR_EPOCHS);
    int64_t cut = json_integer_value(json_object_get(json_array_get(metrics, XOR_EPOCHS - 11),
                                                     "step"));
    json_decref(v);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss&after_step=%lld",
             (long long)id, (long long)cut);
    v = get_json(&s, path, 200);
    metrics = json_object_get(v, "metrics");
    cr_assert_eq(json_array_size(metrics), 10, "after_step keeps the 10 later steps");
    json_array_foreach(metrics, i, m) cr_assert_str_eq(str(m, "name"), "loss");
    json_decref(v);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?after_step=soon", (long long)id);
    http_response r = request(&s, "GET", path, NULL, NULL);
    assert_error(&r, 400, "invalid_parameter", "after_step");
    http_response_free(&r);

    /* The list shows it, without its spec. */
    v = get_json(&s, "/api/v1/jobs?state=succeeded&kind=train", 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 1);
    json_t *listed = json_array_get(json_object_get(v, "jobs"), 0);
    cr_assert_eq(json_integer_value(json_object_get(listed, "id")), id);
    cr_assert_null(json_object_get(listed, "spec"));
    json_decref(v);

    /* What the server wrote into its database file. */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(s.db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT state, attempts, device, json_extract(result,"
                                    " '$.accuracy'), json_extract(result, '$.weights_sha256'),"
                                    " started_at IS NOT NULL, finished_at IS NOT NULL,"
                                    " json_extract(spec, '$.epochs') FROM jobs WHERE id = ?1",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "succeeded");
    cr_assert_eq(sqlite3_column_int(st, 1), 1);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 2), device_copy);
    cr_assert_float_eq(sqlite3_column_double(st, 3), 1.0, 1e-12);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 4), sha_copy);
    cr_assert_eq(sqlite3_column_int(st, 5), 1);
    cr_assert_eq(sqlite3_column_int(st, 6), 1);
    cr_assert_eq(sqlite3_column_int(st, 7), XOR_EPOCHS);
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT count(*), count(DISTINCT step) FROM metrics"
                                    " WHERE job_id = ?1 AND name = ?2",
                                    -1, &st, NULL),
                 SQLITE_OK);
    const char *names[] = {"loss", "accuracy"};
    for (int k = 0; k < 2; k++) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, names[k], -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(st, 0), XOR_EPOCHS, "%s rows", names[k]);
        cr_assert_eq(sqlite3_column_int(st, 1), XOR_EPOCHS, "%s steps are distinct", names[k]);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT group_concat(version) FROM"
                                    " (SELECT version FROM schema_migrations ORDER BY version)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "1,2,3");
    sqlite3_finalize(st);
    sqlite3_close(db);

    stop_server(&s);
}

/* Replaces the first occurrence of from in xor_spec with to. */
static char *spec_with(const char *from, const char *to) {
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

static void post_expect(const server *s, const char *body, int status, const char *code,
                        const char *field) {
    http_response r = request(s, "POST", "/api/v1/jobs", json_headers, body);
    assert_error(&r, status, code, field);
    cr_assert_eq(http_header(&r, "Location", (char[64]){0}, 64), NULL, "no Location on error");
    http_response_free(&r);
}

Test(server, bad_requests_get_clear_errors_and_store_nothing) {
    server s = start_server();
    int64_t before = job_total(&s);
    cr_assert_eq(before, 0);

    /* Malformed JSON names line and column. */
    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, "{\"kind\":\"train\",\n  ");
    assert_error(&r, 400, "invalid_json", NULL);
    json_t *v = parse_body(&r);
    json_t *e = json_object_get(v, "error");
    cr_assert_eq(json_integer_value(json_object_get(e, "line")), 2);
    cr_assert_gt(json_integer_value(json_object_get(e, "column")), 0);
    cr_assert(strstr(str(e, "message"), "line 2"), "%s", str(e, "message"));
    json_decref(v);
    http_response_free(&r);
    post_expect(&s, "", 400, "invalid_json", NULL);

    /* Spec errors name the field. */
    char *spec = spec_with("\"seed\":1", "\"seed\":1,\"bogus\":true");
    post_expect(&s, spec, 400, "invalid_spec", "bogus");
    free(spec);
    spec = spec_with("\"epochs\":300", "\"epochs\":\"many\"");
    post_expect(&s, spec, 400, "invalid_spec", "epochs");
    free(spec);
    spec = spec_with("[2,8,2]", "[2,0,2]");
    post_expect(&s, spec, 400, "invalid_spec", "model.layers[1]");
    free(spec);
    spec = spec_with("\"seed\":1", "\"seed\":1,\"device\":\"gpu-deadbeef\"");
    post_expect(&s, spec, 400, "invalid_spec", "device");
    free(spec);

    /* Media type, size, routes and methods. */
    const char *const text_plain[] = {"Content-Type: text/plain", NULL};
    r = request(&s, "POST", "/api/v1/jobs", text_plain, xor_spec);
    assert_error(&r, 415, "unsupported_media_type", NULL);
    http_response_free(&r);
    r = request(&s, "POST", "/api/v1/jobs", NULL, xor_spec);
    assert_error(&r, 415, "unsupported_media_type", NULL);
    http_response_free(&r);
    const char *const json_utf8[] = {"Content-Type: Application/JSON; charset=utf-8", NULL};
    r = request(&s, "POST", "/api/v1/jobs", json_utf8, "[1]");
    cr_assert_eq(r.status, 400, "a JSON media type with parameters is accepted: %s", r.body);
    http_response_free(&r);

    size_t big_len = 1024 * 1024 + 1;
    char *big = malloc(big_len + 1);
    memset(big, ' ', big_len);
    big[big_len] = 0;
    r = request(&s, "POST", "/api/v1/jobs", json_headers, big);
    assert_error(&r, 413, "too_large", NULL);
    http_response_free(&r);
    free(big);
    static const char huge[] = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 104857600\r\n\r\n";
    cr_assert_eq(http_raw(s.port, huge, sizeof huge - 1, HTTP_TIMEOUT_MS, &r), 0, "%s",
                 http_last_error());
    assert_error(&r, 413, "too_large", NULL);
    http_response_free(&r);

    r = request(&s, "GET", "/api/v1/nope", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/nope.js", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/abc", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/4242", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/4242/metrics", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);

    char allow[64];
    r = request(&s, "DELETE", "/api/v1/jobs", NULL, NULL);
    assert_error(&r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(&r, "Allow", allow, sizeof allow));
    cr_assert_str_eq(allow, "GET, HEAD, POST");
    http_response_free(&r);
    r = request(&s, "PUT", "/api/v1/devices", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(&r, "Allow", allow, sizeof allow));
    cr_assert_str_eq(allow, "GET, HEAD");
    http_response_free(&r);

    /* List parameters. */
    const char *bad_lists[][2] = {
        {"/api/v1/jobs?limit=-1", "limit"},    {"/api/v1/jobs?limit=ten", "limit"},
        {"/api/v1/jobs?offset=1.5", "offset"}, {"/api/v1/jobs?state=done", "state"},
        {"/api/v1/jobs?kind=poem", "kind"},
    };
    for (size_t i = 0; i < sizeof bad_lists / sizeof bad_lists[0]; i++) {
        r = request(&s, "GET", bad_lists[i][0], NULL, NULL);
        assert_error(&r, 400, "invalid_parameter", bad_lists[i][1]);
        http_response_free(&r);
    }
    v = get_json(&s, "/api/v1/jobs?limit=100000&offset=3", 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "limit")), 500, "limit is capped");
    cr_assert_eq(json_integer_value(json_object_get(v, "offset")), 3);
    json_decref(v);

    cr_assert_eq(job_total(&s), before, "no bad request stored a job");
    stop_server(&s);

    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* The embedded file must be byte-identical to web/<name> in the source tree. */
static void assert_asset(const server *s, const char *path, const char *file,
                         const char *type) {
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    cr_assert_not_null(root);
    char full[512];
    snprintf(full, sizeof full, "%s/web/%s", root, file);
    int fd = open(full, O_RDONLY);
    cr_assert_geq(fd, 0, "%s: %s", full, strerror(errno));
    char *want = read_all(fd, HTTP_TIMEOUT_MS);
    close(fd);
    http_response r = request(s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200, "GET %s: %d", path, r.status);
    char ct[128];
    cr_assert_not_null(http_header(&r, "Content-Type", ct, sizeof ct));
    cr_assert_str_eq(ct, type);
    cr_assert_eq(r.body_len, strlen(want));
    cr_assert_str_eq(r.body, want);
    http_response_free(&r);
    free(want);
}

Test(server, dashboard_files_are_served) {
    server s = start_server();
    assert_asset(&s, "/", "index.html", "text/html; charset=utf-8");
    assert_asset(&s, "/index.html", "index.html", "text/html; charset=utf-8");
    assert_asset(&s, "/app.js", "app.js", "text/javascript; charset=utf-8");
    assert_asset(&s, "/style.css", "style.css", "text/css; charset=utf-8");
    http_response r = request(&s, "POST", "/app.js", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/web/app.js", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    stop_server(&s);
}

Test(server, flags_help_version_and_errors) {
    const char *help[] = {"--help", NULL};
    child c = spawn(help, NULL, true);
    char *out = read_all(c.out_fd, HTTP_TIMEOUT_MS);
    char *err = read_all(c.err_fd, HTTP_TIMEOUT_MS);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 0);
    cr_assert(strstr(out, "usage: paragond") && strstr(out, "--data-dir"), "%s", out);
    free(out);
    free(err);
    close(c.out_fd);
    close(c.err_fd);

    const char *version[] = {"--version", NULL};
    c = spawn(version, NULL, true);
    out = read_all(c.out_fd, HTTP_TIMEOUT_MS);
    err = read_all(c.err_fd, HTTP_TIMEOUT_MS);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 0);
    cr_assert_str_eq(out, "paragond 0.1.0\n");
    free(out);
    free(err);
    close(c.out_fd);
    close(c.err_fd);

    const char *bad[][3] = {{"--verbose", NULL, NULL},
                            {"--port", "http", NULL},
                            {"--port", "70000", NULL},
                            {"--db", NULL, NULL},
                            {"stray", NULL, NULL}};
    const char *says[] = {"unknown option '--verbose'", "--port: 'http' is not a port number",
                          "--port: '70000'", "--db needs a value", "unexpected argument 'stray'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = spawn(bad[i], NULL, true);
        out = read_all(c.out_fd, HTTP_TIMEOUT_MS);
        err = read_all(c.err_fd, HTTP_TIMEOUT_MS);
        cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 2, "%s exits 2", bad[i][0]);
        cr_assert(strstr(err, says[i]), "stderr for %s: %s", bad[i][0], err);
        cr_assert_str_eq(out, "", "nothing on stdout");
        free(out);
        free(err);
        close(c.out_fd);
        close(c.err_fd);
    }
}

Test(server, no_opencl_device_exits_1_with_a_clear_message) {
    char vendors[300], env[320], db[300], data[300];
    snprintf(vendors, sizeof vendors, "%s/vendors", tmpdir);
    cr_assert_eq(mkdir(vendors, 0700), 0);
    snprintf(env, sizeof env, "OCL_ICD_VENDORS=%s", vendors);
    snprintf(db, sizeof db, "%s/t.db", tmpdir);
    snprintf(data, sizeof data, "%s/data", tmpdir);
    const char *args[] = {"--port", "0", "--db", db, "--data-dir", data, NULL};
    const char *extra[] = {env, NULL};
    child c = spawn(args, extra, true);
    char *out = read_all(c.out_fd, START_TIMEOUT_MS);
    char *err = read_all(c.err_fd, START_TIMEOUT_MS);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 1, "stderr: %s", err);
    cr_assert_str_eq(out, "", "it never claims to listen");
    cr_assert(strstr(err, "no OpenCL device found"), "stderr: %s", err);
    cr_assert(strstr(err, "pocl-opencl-icd"), "stderr names the fix: %s", err);
    cr_assert_neq(access(db, F_OK), 0, "no database is created");
    cr_assert_neq(access(data, F_OK), 0, "no data dir is created");
    free(out);
    free(err);
    close(c.out_fd);
    close(c.err_fd);
}

Test(server, a_job_interrupted_by_shutdown_runs_again_after_restart) {
    /* Long enough to be caught running; the shutdown stops it at a step boundary. */
    char *spec = spec_with("\"epochs\":300", "\"epochs\":100000");
    server s = start_server();
    int64_t id = submit(&s, spec);
    json_t *job = wait_state(&s, id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    json_decref(job);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    bool shown = false;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(devs, "devices"), i, d) shown =
        shown || json_integer_value(json_object_get(d, "running_job")) == id;
    cr_assert(shown, "the devices list shows the running job");
    json_decref(devs);
    stop_server(&s);

    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT state, attempts FROM jobs WHERE id = ?1", -1,
                                    &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "queued",
                     "a shutdown puts the running job back in the queue");
    cr_assert_eq(sqlite3_column_int(st, 1), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* The next paragond picks it up by itself. */
    s = start_server();
    job = wait_state(&s, id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    json_decref(job);
    stop_server(&s);
    free(spec);
}

Test(server, jobs_queued_before_start_are_run_or_placed_again) {
    /* A first run creates the schema; then rows are queued "by a previous paragond", one on
     * a device that no longer exists but asked for auto, one that asked for that device. */
    server s = start_server();
    stop_server(&s);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "INSERT INTO jobs (kind, name, state, device_requested,"
                                    " device, spec) VALUES ('train', 'old', 'queued', ?1, ?2, ?3)",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    const char *rows[][2] = {{"auto", "gpu-0badc0de"}, {"gpu-0badc0de", "gpu-0badc0de"}};
    for (int i = 0; i < 2; i++) {
        sqlite3_bind_text(st, 1, rows[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, rows[i][1], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, xor_spec, -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);

    s = start_server();
    json_t *job = wait_state(&s, 1, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s",
                     str(json_object_get(job, "error"), "message"));
    cr_assert_str_neq(str(job, "device"), "gpu-0badc0de", "placed on a device that exists");
    json_decref(job);
    job = wait_state(&s, 2, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_t *e = json_object_get(job, "error");
    cr_assert_str_eq(str(e, "field"), "device");
    cr_assert(strstr(str(e, "message"), "gpu-0badc0de"), "%s", str(e, "message"));
    json_decref(job);
    stop_server(&s);
}

/* An inet program through the API: stored, reduced on an OpenCL device, its normal form and
 * interaction count in the result; a limit hit is a failed job naming the limit; a malformed
 * program is a 400 naming its line and column. */
Test(server, inet_jobs_run_and_report_their_normal_form) {
    server s = start_server();
    const char *fib_path = "examples/inet/fib.hvm";
    char path[512];
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", fib_path);
    size_t len = 0;
    char *program = pgn_read_file(path, &len);
    cr_assert_not_null(program, "%s", path);
    json_t *spec = json_pack("{s:s, s:s, s:s%}", "kind", "inet", "name", "fib", "program", program, len);
    char *body = json_dumps(spec, JSON_COMPACT);
    int64_t id = submit(&s, body);
    json_t *job = wait_state(&s, id, "succeeded failed", 60000);
    cr_assert_str_eq(str(job, "state"), "succeeded", "%s", json_dumps(json_object_get(job, "error"), 0));
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(result, "normal_form"), "17711");
    cr_assert_eq(json_integer_value(json_object_get(result, "interactions")), 718993);
    cr_assert_str_neq(str(job, "device"), "host", "auto places inet jobs on an OpenCL device");
    cr_assert_str_eq(str(result, "device"), str(job, "device"));
    json_decref(job);
    free(body);

    json_object_set_new(spec, "limits", json_pack("{s:i}", "max_interactions", 1000));
    body = json_dumps(spec, JSON_COMPACT);
    id = submit(&s, body);
    job = wait_state(&s, id, "succeeded failed", 60000);
    cr_assert_str_eq(str(job, "state"), "failed");
    const char *msg = str(json_object_get(job, "error"), "message");
    cr_assert(msg && strstr(msg, "max_interactions"), "%s", msg ? msg : "(none)");
    json_decref(job);
    free(body);

    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers,
                              "{\"kind\":\"inet\",\"program\":\"@main = (a b)\"}");
    assert_error(&r, 400, "invalid_spec", "program");
    cr_assert(strstr(r.body, "line 1, col"), "%s", r.body);
    http_response_free(&r);

    json_decref(spec);
    free(program);
    stop_server(&s);
}

/* ---- benchmarks ------------------------------------------------------------------------- */

static const char gemm_bench_spec[] =
    "{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":[\"N=128\"],\"repeats\":1}";

/* The suite's CSV header line as the engine defines it. */
static char *csv_header(const char *suite) {
    size_t n = 0;
    const pgn_bench_column *cols = pgn_bench_columns(suite, &n);
    cr_assert_not_null(cols, "suite %s has columns", suite);
    char *line = calloc(1, 1024);
    for (size_t i = 0; i < n; i++)
        snprintf(line + strlen(line), 1024 - strlen(line), "%s%s", i ? "," : "", cols[i].header);
    return line;
}

/* A finished bench job; skips the test while its suite is still a stub in the engine. */
static json_t *wait_bench(const server *s, int64_t id) {
    json_t *job = wait_state(s, id, "succeeded failed", JOB_TIMEOUT_MS);
    json_t *e = json_object_get(job, "error");
    if (json_is_object(e) && strcmp(str(e, "code"), "unsupported") == 0)
        cr_skip_test("the bench suite is not written yet: %s", str(e, "message"));
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s", str(e, "message"));
    return job;
}

static int64_t count_rows(const server *s, const char *sql, int64_t id) {
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

Test(server, a_bench_job_stores_its_rows_for_the_export) {
    server s = start_server();
    int64_t id = submit(&s, gemm_bench_spec);
    json_t *job = wait_bench(&s, id);
    cr_assert_str_eq(str(job, "kind"), "bench");
    cr_assert_str_eq(str(job, "device_requested"), "auto");
    const char *device = str(job, "device");
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(result, "suite"), "gemm");
    cr_assert_str_eq(str(result, "device"), device);
    json_t *rows = json_object_get(result, "rows");
    cr_assert_eq(json_array_size(rows), 1, "one case asked for");
    json_t *row = json_array_get(rows, 0);
    cr_assert_str_eq(str(row, "case"), "N=128");
    cr_assert_str_eq(str(row, "device"), device);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM benchmarks WHERE job_id = ?1", id), 1);

    /* JSON: the row as the job reported it, plus the store's id, job_id and created_at. */
    json_t *v = get_json(&s, "/api/v1/benchmarks?suite=gemm", 200);
    json_t *got = json_object_get(v, "rows");
    cr_assert_eq(json_array_size(got), 1);
    json_t *exported = json_array_get(got, 0);
    const char *key;
    json_t *value;
    json_object_foreach(row, key, value)
        cr_assert(json_equal(json_object_get(exported, key), value), "field %s", key);
    cr_assert_eq(json_integer_value(json_object_get(exported, "job_id")), id);
    cr_assert(json_is_integer(json_object_get(exported, "id")));
    cr_assert_eq(json_object_size(exported), json_object_size(row) + 3);
    json_decref(v);

    /* CSV: the suite's header, then the row. */
    http_response r = request(&s, "GET", "/api/v1/benchmarks?suite=gemm&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char *header = csv_header("gemm");
    cr_assert_eq(strncmp(r.body, header, strlen(header)), 0, "body: %s", r.body);
    cr_assert_eq(r.body[strlen(header)], '\n');
    cr_assert_eq(strncmp(r.body + strlen(header) + 1, "N=128,128,128,128,", 18), 0, "%s", r.body);
    free(header);
    http_response_free(&r);
    json_decref(job);
    stop_server(&s);
}

/* mlp-forward rows as the engine's suite makes them (figures from Paragon-Py's README). */
static json_t *mlp_row(const char *case_id, const char *device, const char *shape, double cpu_ms) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "suite",
                     "mlp-forward", "case", case_id, "device", device, "adapter",
                     "0x7d55 (0x8086), integrated-gpu", "version", "0.1.0", "shape", shape,
                     "est_mb", 0.19, "cpu_ms", cpu_ms, "gpu_ms", 0.95, "speedup", 5.04, "mae", 0.0,
                     "max", 0.0, "gpu_init_ms", 0.57);
}

Test(server, benchmark_export_in_csv_and_json) {
    server s = start_server();
    /* Rows reach the store the way a finished bench job's do, through a second connection. */
    json_t *rows = json_pack("[o, o, o]", mlp_row("S1", "cpu-aaaa", "784→64→10", 4.81),
                             mlp_row("M3", "cpu-aaaa", "784→512→512→10", 9.5),
                             mlp_row("S1", "gpu-bbbb", "784→64→10", 4.5));
    pgd_store *store;
    pgn_error err;
    cr_assert_eq(pgd_store_open(s.db, &store, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(store, 0, rows, &err), 0, "%s", err.message);
    pgd_store_close(store);

    /* CSV: Paragon-Py's header exactly, a download named for the suite. */
    http_response r =
        request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char h[128];
    cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
    cr_assert_str_eq(h, "text/csv; charset=utf-8");
    cr_assert_not_null(http_header(&r, "Content-Disposition", h, sizeof h));
    cr_assert_str_eq(h, "attachment; filename=\"mlp-forward.csv\"");
#define ADAPTER_CSV "\"0x7d55 (0x8086), integrated-gpu\"" /* quoted: it holds a comma */
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "S1,784→64→10,0.19,4.81,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n"
                             "M3,784→512→512→10,0.19,9.5,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n"
                             "S1,784→64→10,0.19,4.5,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n");
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv&device=gpu-bbbb", NULL,
                NULL);
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "S1,784→64→10,0.19,4.5,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n");
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/benchmarks?suite=gemm&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200);
    char *header = csv_header("gemm");
    cr_assert_eq(strlen(r.body), strlen(header) + 1, "no gemm rows: the header alone: %s", r.body);
    free(header);
    http_response_free(&r);

    /* JSON (the default): every stored field, plus id, job_id and created_at. */
    json_t *v = get_json(&s, "/api/v1/benchmarks?suite=mlp-forward", 200);
    json_t *got = json_object_get(v, "rows");
    cr_assert_eq(json_array_size(got), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *want = json_deep_copy(json_array_get(rows, i));
        json_t *row = json_array_get(got, i);
        json_object_set_new(want, "id", json_integer((json_int_t)i + 1));
        json_object_set_new(want, "job_id", json_null());
        json_object_set(want, "created_at", json_object_get(row, "created_at"));
        cr_assert(str(row, "created_at"), "created_at is set");
        cr_assert(json_equal(row, want), "row %zu: %s", i, json_dumps(row, 0));
        json_decref(want);
    }
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?format=json&device=cpu-aaaa", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "rows")), 2);
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?limit=1", 200);
    got = json_object_get(v, "rows");
    cr_assert_eq(json_array_size(got), 1);
    cr_assert_str_eq(str(json_array_get(got, 0), "device"), "gpu-bbbb", "limit keeps the newest");
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?device=nowhere", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "rows")), 0);
    json_decref(v);

    /* Bad parameters name themselves; other methods are refused. */
    const char *bad[][2] = {
        {"/api/v1/benchmarks?format=csv", "suite"},
        {"/api/v1/benchmarks?format=csv&device=cpu-aaaa", "suite"},
        {"/api/v1/benchmarks?suite=mlp-forward&format=xml", "format"},
        {"/api/v1/benchmarks?suite=nope&format=csv", "suite"},
        {"/api/v1/benchmarks?suite=all", "suite"},
        {"/api/v1/benchmarks?limit=-1", "limit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = request(&s, "GET", bad[i][0], NULL, NULL);
        assert_error(&r, 400, "invalid_parameter", bad[i][1]);
        if (strcmp(bad[i][1], "suite") == 0)
            cr_assert(strstr(r.body, "mlp-forward, tensor-micro, gemm"), "lists the suites: %s",
                      r.body);
        http_response_free(&r);
    }
    r = request(&s, "POST", "/api/v1/benchmarks", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(&r, "Allow", h, sizeof h));
    cr_assert_str_eq(h, "GET, HEAD");
    http_response_free(&r);
    json_decref(rows);
    stop_server(&s);
}

Test(server, device_all_queues_one_bench_job_per_opencl_device) {
    server s = start_server();
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    json_t *opencl = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(devs, "devices"), i, d) {
        if (strcmp(str(d, "type"), "host") != 0)
            json_array_append(opencl, json_object_get(d, "id"));
    }
    json_decref(devs);
    size_t n = json_array_size(opencl);
    cr_assert_geq(n, 1);

    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers,
                              "{\"kind\":\"bench\",\"suite\":\"gemm\",\"device\":\"all\","
                              "\"cases\":[\"N=128\"],\"repeats\":1}");
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    json_t *body = parse_body(&r);
    json_t *ids = json_object_get(body, "ids");
    cr_assert_eq(json_array_size(ids), n, "one job per OpenCL device, none on host: %s", r.body);
    int64_t first = json_integer_value(json_object_get(body, "id"));
    cr_assert_eq(json_integer_value(json_array_get(ids, 0)), first);
    cr_assert_str_eq(str(body, "device"), json_string_value(json_array_get(opencl, 0)),
                     "the body is the first job: %s", r.body);
    cr_assert_str_eq(str(body, "device_requested"), "all");
    char loc[64], want[64];
    snprintf(want, sizeof want, "/api/v1/jobs/%lld", (long long)first);
    cr_assert_not_null(http_header(&r, "Location", loc, sizeof loc));
    cr_assert_str_eq(loc, want);
    http_response_free(&r);
    cr_assert_eq(job_total(&s), (int64_t)n);

    bool ran = true;
    for (i = 0; i < n; i++) {
        int64_t id = json_integer_value(json_array_get(ids, i));
        json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
        const char *device = json_string_value(json_array_get(opencl, i));
        cr_assert_str_eq(str(job, "kind"), "bench");
        cr_assert_str_eq(str(job, "device_requested"), "all");
        cr_assert_str_eq(str(job, "device"), device);
        cr_assert_str_eq(str(json_object_get(job, "spec"), "device"), device,
                         "the stored spec names the device it ran on");
        json_t *e = json_object_get(job, "error");
        if (json_is_object(e) && strcmp(str(e, "code"), "unsupported") == 0) ran = false;
        else cr_assert_str_eq(str(job, "state"), "succeeded", "%s", str(e, "message"));
        json_decref(job);
        if (!ran) continue;
        char path[160];
        snprintf(path, sizeof path, "/api/v1/benchmarks?suite=gemm&device=%s", device);
        json_t *v = get_json(&s, path, 200);
        json_t *rows = json_object_get(v, "rows");
        cr_assert_eq(json_array_size(rows), 1);
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(rows, 0), "job_id")), id);
        json_decref(v);
    }

    /* "all" is for bench jobs only. */
    char *spec = spec_with("\"seed\":1", "\"seed\":1,\"device\":\"all\"");
    post_expect(&s, spec, 400, "invalid_spec", "device");
    free(spec);
    cr_assert_eq(job_total(&s), (int64_t)n);
    json_decref(body);
    json_decref(opencl);
    stop_server(&s);
}

/* A first start measures each device that has no benchmark rows; "auto" placement then records
 * on the job which device the cost model chose, its estimate and every candidate's. */
Test(server, first_start_calibrates_and_auto_placement_records_its_estimate) {
    server s = start_server_calibrating(true);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    size_t i, n_dev = json_array_size(json_object_get(devs, "devices"));
    json_t *d;
    int64_t deadline = now_ms() + 120000;
    json_array_foreach(json_object_get(devs, "devices"), i, d) {
        char path[256];
        snprintf(path, sizeof path, "/api/v1/benchmarks?device=%s", str(d, "id"));
        for (;;) {
            json_t *b = get_json(&s, path, 200);
            size_t rows = json_array_size(json_object_get(b, "rows"));
            json_decref(b);
            if (rows >= 3) break; /* gemm fwd1, inet fib, tensor-micro add-1K */
            cr_assert_lt(now_ms(), deadline, "device %s was not calibrated", str(d, "id"));
            usleep(100000);
        }
    }
    json_decref(devs);

    int64_t id = submit(&s, "{\"kind\":\"train\",\"name\":\"xor\",\"data\":{\"source\":\"xor\"},"
                            "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"epochs\":5}");
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", (long long)id);
    json_t *job = get_json(&s, path, 200);
    json_t *est = json_object_get(job, "estimate");
    cr_assert(json_is_object(est), "the job records the cost model's estimate");
    cr_assert_str_eq(str(est, "device"), str(job, "device"), "the estimate names the chosen device");
    cr_assert_str_neq(str(job, "device"), "host", "auto places on an OpenCL device");
    cr_assert_gt(json_number_value(json_object_get(est, "seconds")), 0);
    cr_assert_str_eq(str(est, "unit"), "flop");
    cr_assert(json_is_true(json_object_get(est, "measured")), "rates come from the calibration rows");
    cr_assert_eq(json_array_size(json_object_get(est, "candidates")), n_dev - 1, "every OpenCL device is weighed");
    json_decref(job);
    job = wait_state(&s, id, "succeeded failed", 60000);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    stop_server(&s);
}
