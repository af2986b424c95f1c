/* test_hardening.c: integration tests of what keeps one paragond serving whatever its clients and
 * jobs do: one server per database, the crash-loop cap, the connection limits (held connections,
 * late headers, event streams). Each reproduces a failure an adversarial run found and fails
 * without its fix. Waits are bounded; nothing asserts on time. */
#include "paragond_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(hardening, .init = harness_setup, .fini = harness_teardown);

/* XOR for long enough to be running when the test acts, on the CPU device. */
static char *long_job(void) { return spec_with("\"epochs\":300", "\"epochs\":100000,\"device\":\"cpu\""); }

/* GET /api/v1/jobs/{id}/logs as text. */
static char *job_log(const server *s, int64_t id) {
    char url[96];
    http_response r = request(s, "GET", job_url(url, sizeof url, id, "/logs"), NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char *text = strdup(r.body);
    http_response_free(&r);
    return text;
}

static size_t count_of(const char *haystack, const char *needle) {
    size_t n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* ---- one paragond per database ---------------------------------------------------------- */

Test(hardening, a_second_paragond_on_the_same_database_exits_1_naming_the_first_and_changes_nothing) {
    int err_fd;
    server a = start_server_with(NULL, "127.0.0.1", &err_fd);
    char *spec = long_job();
    int64_t id = submit(&a, spec);
    free(spec);
    json_decref(wait_state(&a, id, "running", JOB_TIMEOUT_MS));

    /* Same database, its own data dir and port: it must not start, nor touch either. */
    char data2[320];
    snprintf(data2, sizeof data2, "%s/data2", tmpdir);
    const char *args[] = {"--port", "0", "--db", a.db, "--data-dir", data2, "--no-calibration", NULL};
    child b = spawn(args, NULL, true);
    cr_assert_eq(wait_exit(b.pid, STOP_TIMEOUT_MS), 1, "the second paragond exits 1");
    char *out = read_all(b.out_fd, HTTP_TIMEOUT_MS), *err = read_all(b.err_fd, HTTP_TIMEOUT_MS);
    close(b.out_fd);
    close(b.err_fd);
    cr_assert_str_eq(out, "", "it never listened: %s", out);
    char pid[64];
    snprintf(pid, sizeof pid, "pid %d", (int)a.proc.pid);
    cr_assert(strstr(err, pid), "the message names the holder's %s: %s", pid, err);
    cr_assert(strstr(err, "in use by another paragond"), "%s", err);
    free(out);
    free(err);
    struct stat st;
    cr_assert_neq(stat(data2, &st), 0, "its data dir was not created");

    /* The first one's running job was not re-queued under it. */
    json_t *job = job_now(&a, id);
    cr_assert_str_eq(str(job, "state"), "running");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 1);
    json_decref(job);
    cr_assert_eq(status_of(&a, "POST", id, "/cancel"), 202);
    json_decref(wait_state(&a, id, "cancelled", JOB_TIMEOUT_MS));
    free(stop_server_with(&a, err_fd));

    /* Once the first has stopped, the database is free again. */
    server c = start_server();
    stop_server(&c);
}

/* ---- the crash-loop cap ----------------------------------------------------------------- */

Test(hardening, a_job_running_whenever_the_server_dies_fails_as_crashed_at_max_attempts) {
    const char *const flags[] = {"--max-attempts", "2", NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    char *spec = long_job();
    int64_t id = submit(&s, spec);
    free(spec);
    json_decref(wait_state(&s, id, "running", JOB_TIMEOUT_MS));
    kill_server(&s);
    close(err_fd);

    /* First restart: interrupted once of at most two, so it runs again. */
    s = start_server_with(flags, "127.0.0.1", &err_fd);
    json_t *job = wait_state(&s, id, "running", JOB_TIMEOUT_MS);
    cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), 1);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    json_decref(job);
    char *log = job_log(&s, id);
    cr_assert(strstr(log, "interrupted run 1 of at most 2); queued again"), "%s", log);
    free(log);
    kill_server(&s);
    close(err_fd);

    /* Second restart: the cap is reached; the job fails and the server serves. */
    s = start_server_with(flags, "127.0.0.1", &err_fd);
    job = job_now(&s, id);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_t *e = json_object_get(job, "error");
    cr_assert_str_eq(str(e, "code"), "crashed");
    cr_assert(strstr(str(e, "message"), "2 times"), "%s", str(e, "message"));
    cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), 2);
    json_decref(job);
    log = job_log(&s, id);
    cr_assert(strstr(log, " error failed: crashed: paragond ended while this job ran, 2 times"),
              "%s", log);
    free(log);
    json_decref(get_json(&s, "/healthz", 200));
    char *err = stop_server_with(&s, err_fd);
    cr_assert(strstr(err, "1 job(s) left running by a previous run failed as crashed"), "%s", err);
    free(err);

    /* The flag's own errors. */
    const char *bad[][3] = {{"--max-attempts", "0", NULL}, {"--max-attempts", "x", NULL}};
    for (size_t i = 0; i < 2; i++) {
        const char *args[] = {"--port", "0", "--db", s.db, "--data-dir", s.data, bad[i][0], bad[i][1], NULL};
        child c = spawn(args, NULL, true);
        cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 2);
        char *text = read_all(c.err_fd, HTTP_TIMEOUT_MS);
        cr_assert(strstr(text, "--max-attempts: '") && strstr(text, "is not a count of runs"), "%s", text);
        free(text);
        close(c.out_fd);
        close(c.err_fd);
    }
}

/* ---- connections ------------------------------------------------------------------------ */

/* A connection from source address src (any of 127.0.0.0/8 reaches a server on 127.0.0.1) that
 * sends the start of a request and never finishes its headers: a slowloris client. */
static int partial_request(const char *src, uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
    struct sockaddr_in from = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &from.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&from, sizeof from), 0, "bind %s: %s", src, strerror(errno));
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&to, sizeof to), 0, "connect: %s", strerror(errno));
    static const char start[] = "GET /healthz HTTP/1.1\r\nHost: paragond\r\nX-Slow: ";
    cr_assert_eq(send(fd, start, sizeof start - 1, MSG_NOSIGNAL), (ssize_t)(sizeof start - 1));
    return fd;
}

/* Whether the server closed fd within timeout_ms (end of stream or reset). */
static bool closed_by_server(int fd, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left > 0 ? (int)left : 0) <= 0) {
            if (left <= 0) return false;
            continue;
        }
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
}

/* The value of one sample line of /metrics text. */
static double sample(const char *text, const char *name) {
    const char *at = strstr(text, name);
    cr_assert_not_null(at, "%s in /metrics", name);
    return strtod(at + strlen(name), NULL);
}

Test(hardening, held_connections_past_the_per_ip_limit_are_closed_and_late_headers_time_out) {
    const char *const flags[] = {"--max-connections-per-ip", "16", "--header-timeout", "2", NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    enum { HELD = 40 };
    int fds[HELD];
    for (int i = 0; i < HELD; i++) fds[i] = partial_request("127.0.0.2", s.port);
    /* From another address, the probes and the API still answer. */
    json_decref(get_json(&s, "/healthz", 200));
    json_decref(get_json(&s, "/api/v1/devices", 200));

    /* Past 16 from one address, the server closes them at once; the 16 it keeps lose their
     * place when their headers do not arrive within 2 s. Both are waited for with room. */
    int closed = 0;
    for (int i = 0; i < HELD; i++) closed += closed_by_server(fds[i], 50);
    cr_assert_geq(closed, HELD - 16, "at least %d closed at once, %d were", HELD - 16, closed);
    for (int i = 0; i < HELD; i++)
        cr_assert(closed_by_server(fds[i], 60000), "connection %d is closed after the header timeout", i);
    for (int i = 0; i < HELD; i++) close(fds[i]);

    http_response r = request(&s, "GET", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_geq(sample(r.body, "paragon_http_refused_total{limit=\"max_connections_per_ip\"} "), HELD - 16);
    cr_assert_geq(sample(r.body, "paragon_http_refused_total{limit=\"header_timeout\"} "), 1);
    http_response_free(&r);
    char *err = stop_server_with(&s, err_fd);
    cr_assert_eq(count_of(err, "(--max-connections-per-ip)"), 1, "said once: %s", err);
    cr_assert_eq(count_of(err, "(--header-timeout)"), 1, "said once: %s", err);
    cr_assert_null(strstr(err, "http: Server reached"), "libmicrohttpd's own line is not repeated: %s", err);
    free(err);
}

/* Before the limits, libmicrohttpd's default of FD_SETSIZE - 4 = 1020 connections applied, and
 * about that many idle ones left /healthz waiting in the listen backlog. */
Test(hardening, healthz_answers_while_1100_idle_connections_are_held) {
    enum { HELD = 1100, ADDRESSES = 5 }; /* 220 per address: under the default per-IP limit */
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < HELD + 200) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > HELD + 200 ? HELD + 200 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < HELD + 200)
        cr_skip_test("the open-file limit (%llu) cannot hold %d connections here",
                     (unsigned long long)rl.rlim_cur, HELD);
    server s = start_server();
    int *fds = calloc(HELD, sizeof *fds);
    for (int i = 0; i < HELD; i++) {
        char src[16];
        snprintf(src, sizeof src, "127.0.0.%d", 2 + i % ADDRESSES);
        fds[i] = partial_request(src, s.port);
    }
    for (int round = 0; round < 3; round++) json_decref(get_json(&s, "/healthz", 200));
    int closed = 0;
    for (int i = 0; i < HELD; i++) closed += closed_by_server(fds[i], 0);
    cr_assert_eq(closed, 0, "all %d are held (within the default limits)", HELD);
    for (int i = 0; i < HELD; i++) close(fds[i]);
    free(fds);
    stop_server(&s);
}

Test(hardening, event_streams_past_max_streams_get_503_with_retry_after) {
    const char *const flags[] = {"--max-streams", "2", NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    http_stream *open[2];
    for (int i = 0; i < 2; i++) {
        open[i] = http_stream_open(s.port, "/api/v1/events", NULL, HTTP_TIMEOUT_MS);
        cr_assert_not_null(open[i], "%s", http_last_error());
        cr_assert_eq(http_stream_head(open[i])->status, 200);
    }
    http_response r = request(&s, "GET", "/api/v1/events", NULL, NULL);
    assert_error(&r, 503, "too_many_streams", NULL);
    cr_assert(strstr(r.body, "--max-streams"), "%s", r.body);
    char h[16];
    cr_assert_not_null(http_header(&r, "Retry-After", h, sizeof h));
    cr_assert_str_eq(h, "5");
    http_response_free(&r);
    json_decref(get_json(&s, "/healthz", 200));

    /* A stream that ends gives its place back (noticed by the server when it next writes: a
     * ping at the latest). */
    http_stream_close(open[0]);
    http_stream *again = NULL;
    int64_t deadline = now_ms() + 60000;
    while (!again && now_ms() < deadline) {
        http_stream *st = http_stream_open(s.port, "/api/v1/events", NULL, HTTP_TIMEOUT_MS);
        cr_assert_not_null(st, "%s", http_last_error());
        if (http_stream_head(st)->status == 200) again = st;
        else {
            http_stream_close(st);
            usleep(100000);
        }
    }
    cr_assert_not_null(again, "a place came free");
    http_stream_close(again);
    http_stream_close(open[1]);
    char *err = stop_server_with(&s, err_fd);
    cr_assert_eq(count_of(err, "(--max-streams)"), 1, "said once: %s", err);
    free(err);
}
