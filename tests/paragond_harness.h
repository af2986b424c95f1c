/* paragond_harness.h: the shared harness of the integration tests (integration_tests in
 * tests/meson.build): paragond spawned on a free port with its database and data dir in a
 * per-test temporary directory, requests as its owner or as anyone, tables of refusals, bounded
 * waits. Every helper asserts (Criterion) instead of returning errors; nothing asserts on time. */
#ifndef PGN_TEST_PARAGOND_HARNESS_H
#define PGN_TEST_PARAGOND_HARNESS_H

#include "http_client.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_TIMEOUT_MS 30000
#define START_TIMEOUT_MS 120000 /* ASan + the first OpenCL probe can be slow */
#define STOP_TIMEOUT_MS 120000
#define JOB_TIMEOUT_MS 240000

/* XOR 2-8-2, SGD with momentum, 300 epochs: trains to full accuracy in about a second. */
extern const char xor_spec[];
#define XOR_EPOCHS 300
/* The metrics of one of its epochs: loss, accuracy, test_loss, test_accuracy; and for its one
 * step (4 samples, batch 4) the step_loss point an epoch's last step gives, samples_per_second
 * with it, and the epoch's mark ("epoch"). */
#define XOR_METRICS_PER_EPOCH 7

extern const char *const json_headers[]; /* Content-Type: application/json */

/* The current test's temporary directory (the suite's .init creates it, .fini removes it). */
extern char tmpdir[256];
void harness_setup(void);
/* Kills every paragond a failed test left running, then removes tmpdir. */
void harness_teardown(void);

/* ---- processes ---- */

int64_t now_ms(void);
const char *paragond_path(void); /* $PARAGOND */

typedef struct child {
    pid_t pid;
    int out_fd; /* its stdout */
    int err_fd; /* its stderr, when captured; else -1 */
} child;

/* Runs paragond with args; extra_env ("NAME=value" strings, NULL-ended) is added to ours,
 * replacing a variable of the same name. */
child spawn(const char *const *args, const char *const *extra_env, bool capture_stderr);
/* No longer a child to kill at teardown (it was waited for). */
void forget(pid_t pid);
/* Reads fd to its end (bounded), into a NUL-terminated malloc'd string. */
char *read_all(int fd, int timeout_ms);
/* Waits for the child to exit (bounded) and returns its exit status; a signal death fails. */
int wait_exit(pid_t pid, int timeout_ms);
/* Runs paragond with args (extra_env as spawn's) to its exit, bounded; returns its exit status
 * and what it wrote on stdout and stderr (*out and *err, malloc'd). */
int run_to_exit(const char *const *args, const char *const *extra_env, char **out, char **err);

typedef struct server {
    child proc;
    uint16_t port;
    char db[300];
    char data[300];
} server;

/* The first line paragond prints on stdout says where it listens; waits for it. */
void read_listening_line(const child *c, char *line, size_t size);
/* Starts paragond on a free port with the database and data dir in tmpdir; with calibrate, it
 * measures devices that have no benchmark rows at start, as a first start does (the other
 * tests skip that: it costs every start a second or two). */
server start_server_env(bool calibrate, const char *const *extra_env);
server start_server_calibrating(bool calibrate);
server start_server(void);
/* The same with extra flags and its stderr captured (*err_fd); host is the address its
 * listening line names. */
server start_server_with(const char *const *extra, const char *host, int *err_fd);
/* SIGTERM, then the clean exit (status 0; under ASan a leak would make it non-zero). */
void stop_server(server *s);
/* Stops it as stop_server does and returns what it wrote on stderr. */
char *stop_server_with(server *s, int err_fd);
/* SIGKILL, and the death by it. */
void kill_server(server *s);

/* ---- requests ---- */

/* "Authorization: Bearer <token>" from the server's <data>/token; "" while there is none. */
void auth_header(const server *s, char *out, size_t size);
/* A request as the server's owner (with its token). */
http_response request(const server *s, const char *method, const char *path,
                      const char *const *headers, const char *body);
/* A request exactly as given: no token added. */
http_response bare_request(const server *s, const char *method, const char *path,
                           const char *const *headers, const char *body);
/* GET path, expect status, return the parsed body. */
json_t *get_json(const server *s, const char *path, int status);
json_t *parse_body(const http_response *r);
const char *str(const json_t *o, const char *key);
/* Asserts {"error":{"code":code,"field":field,...}}; the message names field when given. */
void assert_error(const http_response *r, int status, const char *code, const char *field);
/* 401 unauthorized, its message saying what is wrong, the challenge header, no token. */
void assert_unauthorized(const http_response *r, const char *says, const char *token);
/* 405 with exactly this Allow header. */
void assert_allow(const http_response *r, const char *allow);
char *read_token(const server *s);

/* A request the server must refuse, and the error it must answer: a row of a table of bad
 * requests. Zero fields are not checked. */
typedef struct refusal {
    const char *method, *path;
    const char *const *headers; /* beside the owner's token, which request() adds */
    const char *body;           /* NULL: none */
    int status;
    const char *code;
    const char *field; /* error.field, which the message must name too */
    const char *limit; /* error.limit and error.max, for limit_exceeded */
    int64_t max;
    const char *says;  /* a fragment of error.message */
    const char *allow; /* a 405's Allow header */
} refusal;
/* Sends each case as the server's owner and asserts its error, and that no Location came. */
void assert_refusals(const server *s, const refusal *cases, size_t n);

/* ---- jobs ---- */

int64_t job_total(const server *s);
/* POSTs spec, asserts 201 with its Location, returns the id. */
int64_t submit(const server *s, const char *spec);
/* POSTs body and asserts the error (and no Location). */
void post_expect(const server *s, const char *body, int status, const char *code,
                 const char *field);
/* Polls the job until its state is one of `until` (a space-separated list); bounded. */
json_t *wait_state(const server *s, int64_t id, const char *until, int timeout_ms);
/* xor_spec with the first occurrence of from replaced by to (malloc'd). */
char *spec_with(const char *from, const char *to);
/* Submits XOR for `epochs` epochs, on device (NULL: "auto"); returns the id. */
int64_t submit_xor(const server *s, int epochs, const char *device);
/* Waits for the job to end (bounded) and asserts it succeeded, naming its error when it did not;
 * returns the job. */
json_t *wait_succeeded(const server *s, int64_t id);
char *job_url(char *buf, size_t size, int64_t id, const char *sub);
json_t *job_now(const server *s, int64_t id);
/* The status of method on /api/v1/jobs/{id}{sub}, with the body freed. */
int status_of(const server *s, const char *method, int64_t id, const char *sub);
/* <data>/jobs/<id>/checkpoint.safetensors, read whole; NULL when missing. */
char *data_file(const server *s, int64_t id, size_t *len);
/* A file of the source tree ($PARAGON_SOURCE_ROOT, else .), read whole (malloc'd). */
char *source_file(const char *rel, size_t *len);
/* {"kind":"inet","program":<the source file rel>}. */
json_t *inet_spec_from(const char *rel);
/* The first column of the first row of sql (?1 bound to id) in the server's database. */
int64_t count_rows(const server *s, const char *sql, int64_t id);

/* One gemm case, repeated once: a bench job that finishes in moments on any device. */
extern const char gemm_bench_spec[];
/* A finished bench job; skips the test while its suite is still a stub in the engine. */
json_t *wait_bench(const server *s, int64_t id);

/* ---- the paragon command ---- */

/* Runs `paragon ARGS` ($PARAGON_CLI; ARGS shell-quoted) in the source tree as a client of s
 * (PARAGON_URL and PARAGON_TOKEN set to it; s NULL: both empty), with no standard input; its
 * stdout into *out, its stderr into *err (malloc'd). Returns its exit status. */
int run_cli(const server *s, const char *args, char **out, char **err);

/* A tiny character GPT (1 layer, d_model 16, 20 steps) trained on s from a text it writes under
 * the datasets directory; returns the succeeded job's id. */
int64_t train_tiny_gpt(const server *s);
/* Writes <data>/datasets/tiny.txt, the text the tiny gpt specs train on (about 4.8 KB). */
void write_tiny_text(const server *s);
/* GET /api/v1/jobs/{id}{sub}: asserts a 200 download, application/octet-stream, named filename
 * (Content-Disposition); returns the response. */
http_response get_download(const server *s, int64_t id, const char *sub, const char *filename);

/* ---- the dashboard ---- */

/* A file of the source tree's web/, and the Content-Type paragond must serve it with. */
typedef struct web_file {
    char name[64];
    const char *type;
} web_file;
#define WEB_FILES_MAX 64
/* Every file of $PARAGON_SOURCE_ROOT/web, sorted by name; asserts that there is at least the page
 * and its entry module, and that each is of a kind paragond has a type for. Returns how many. */
size_t list_web_files(web_file files[WEB_FILES_MAX]);

#endif
