/* test_hardening.c: integration tests of what keeps one paragond serving whatever its clients and
 * jobs do: one server per database, the crash-loop cap, the connection limits (held connections,
 * late headers, event streams). Each reproduces a failure an adversarial run found and fails
 * without its fix. Waits are bounded; nothing asserts on time. */
#include "paragond_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

/* The job's log once it holds needle: the line saying how a job ended is written just after its
 * final state, so a reader that saw the state may be a moment early. Bounded. */
static char *job_log_with(const server *s, int64_t id, const char *needle) {
    int64_t deadline = now_ms() + JOB_TIMEOUT_MS;
    for (;;) {
        char *log = job_log(s, id);
        if (strstr(log, needle)) return log;
        cr_assert_lt(now_ms(), deadline, "the log never said '%s': %s", needle, log);
        free(log);
        usleep(20000);
    }
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

/* The value of one sample line of /metrics text (a line that starts with name). */
static double sample(const char *text, const char *name) {
    const char *at = text;
    while ((at = strstr(at, name)) && at != text && at[-1] != '\n') at++;
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

/* ---- smaller defects -------------------------------------------------------------------- */

Test(hardening, values_the_engine_cannot_use_and_misplaced_fields_are_400s_that_store_nothing) {
    server s = start_server();
    int64_t before = job_total(&s);
    static const struct {
        const char *body, *field, *says;
    } cases[] = {
        /* > 0 as doubles, 0 as the floats the engine computes with */
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"data\":{\"source\":"
         "\"xor\"},\"optimizer\":{\"type\":\"sgd\",\"lr\":1e-320}}",
         "optimizer.lr", "32-bit float"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"data\":{\"source\":"
         "\"xor\"},\"optimizer\":{\"type\":\"adam\",\"eps\":1e-50}}",
         "optimizer.eps", "32-bit float"},
        {"{\"kind\":\"inet\",\"program\":\"@main = 1\",\"limits\":{\"timeout_s\":1e-46}}",
         "limits.timeout_s", "32-bit float"},
        /* one job per device is for benchmarks only */
        {"{\"kind\":\"inet\",\"device\":\"all\",\"program\":\"@main = 1\"}", "device", "only for bench"},
        /* a case the suite does not have would "succeed" with no rows */
        {"{\"kind\":\"bench\",\"suite\":\"mlp-forward\",\"cases\":[\"S1\",\"Q9\"]}", "cases[1]",
         "no case 'Q9'"},
        {"{\"kind\":\"bench\",\"suite\":\"all\",\"cases\":[\"nope\"]}", "cases[0]", "no case 'nope'"},
        /* names are shown in logs and terminals */
        {"{\"kind\":\"inet\",\"name\":\"red\\u001b[31m\",\"program\":\"@main = 1\"}", "name",
         "control character 0x1b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, cases[i].body);
        assert_error(&r, 400, "invalid_spec", cases[i].field);
        cr_assert(strstr(r.body, cases[i].says), "case %zu says '%s': %s", i, cases[i].says, r.body);
        http_response_free(&r);
    }
    cr_assert_eq(job_total(&s), before, "nothing was stored");
    /* A bench job that names real cases still goes in. */
    int64_t id = submit(&s, "{\"kind\":\"bench\",\"suite\":\"gemm\",\"device\":\"host\",\"cases\":[\"N=128\"],\"repeats\":1}");
    json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    cr_assert_eq(json_array_size(json_object_get(json_object_get(job, "result"), "rows")), 1);
    json_decref(job);
    stop_server(&s);
}

Test(hardening, control_characters_reach_the_log_and_stderr_escaped) {
    int err_fd;
    server s = start_server_with(NULL, "127.0.0.1", &err_fd);
    /* A dataset file is only read at run time: its failure quotes its path into the log. The
     * files must be there (a spec naming missing ones is refused at submission). */
    const char *names[] = {"red\x1b[31m.idx", "l", "ti", "tl"};
    for (size_t i = 0; i < 4; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/datasets/%s", s.data, names[i]);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "%s", path);
        fputs("not an idx file", f);
        fclose(f);
    }
    int64_t id = submit(&s, "{\"kind\":\"train\",\"device\":\"host\",\"model\":{\"type\":\"mlp\","
                            "\"layers\":[784,10]},\"data\":{\"source\":\"idx\",\"train_images\":"
                            "\"red\\u001b[31m.idx\",\"train_labels\":\"l\",\"test_images\":\"ti\","
                            "\"test_labels\":\"tl\"},\"epochs\":1}");
    json_decref(wait_state(&s, id, "failed", JOB_TIMEOUT_MS));
    char *log = job_log_with(&s, id, "failed (attempt 1)");
    cr_assert_null(strchr(log, 0x1b), "no raw escape in the log: %s", log);
    cr_assert(strstr(log, "red\\x1b[31m.idx"), "it is shown escaped: %s", log);
    free(log);
    char *err = stop_server_with(&s, err_fd);
    cr_assert_null(strchr(err, 0x1b), "no raw escape on stderr: %s", err);
    free(err);
}

Test(hardening, dataset_paths_cannot_reach_the_token) {
    int err_fd;
    server s = start_server_with(NULL, "127.0.0.1", &err_fd);
    char *token = read_token(&s);
    /* Relative to <data-dir>/datasets, and ".." is refused: the token is out of reach. */
    post_expect(&s, "{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[784,10]},\"data\":"
                    "{\"source\":\"idx\",\"train_images\":\"../token\",\"train_labels\":\"l\","
                    "\"test_images\":\"ti\",\"test_labels\":\"tl\"}}",
                400, "invalid_spec", "data.train_images");
    /* "token" is looked for in datasets/, where there is none: refused at submission. */
    static const char named_token[] =
        "{\"kind\":\"train\",\"device\":\"host\",\"model\":{\"type\":\"mlp\","
        "\"layers\":[784,10]},\"data\":{\"source\":\"idx\",\"train_images\":"
        "\"token\",\"train_labels\":\"token\",\"test_images\":\"token\","
        "\"test_labels\":\"token\"},\"epochs\":1}";
    post_expect(&s, named_token, 400, "invalid_spec", "data.train_images");
    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, named_token);
    cr_assert(strstr(r.body, "datasets/"), "the file is looked for in datasets/: %s", r.body);
    char part[9];
    snprintf(part, sizeof part, "%.8s", token);
    cr_assert_null(strstr(r.body, part), "no piece of the token: %s", r.body);
    http_response_free(&r);
    free(stop_server_with(&s, err_fd));

    /* A token file placed where specs can read is refused at start. */
    char inside[400];
    snprintf(inside, sizeof inside, "%s/datasets/token", s.data);
    FILE *f = fopen(inside, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s", token);
    fclose(f);
    const char *args[] = {"--port", "0", "--db", s.db, "--data-dir", s.data, "--token-file", inside, NULL};
    child c = spawn(args, NULL, true);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 1);
    char *why = read_all(c.err_fd, HTTP_TIMEOUT_MS);
    cr_assert(strstr(why, "where job specs name their datasets"), "%s", why);
    free(why);
    close(c.out_fd);
    close(c.err_fd);
    free(token);
}

Test(hardening, the_checkpoint_download_serves_only_the_jobs_own_plain_file) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_decref(wait_state(&s, id, "succeeded", JOB_TIMEOUT_MS));
    char url[96], path[700], moved[720];
    job_url(url, sizeof url, id, "/checkpoint");
    cr_assert_eq(status_of(&s, "GET", id, "/checkpoint"), 200);

    /* A link in place of the file, or of the job's directory: not followed. */
    snprintf(path, sizeof path, "%s/jobs/%lld/checkpoint.safetensors", s.data, (long long)id);
    snprintf(moved, sizeof moved, "%s.real", path);
    cr_assert_eq(rename(path, moved), 0);
    cr_assert_eq(symlink("/etc/passwd", path), 0);
    http_response r = request(&s, "GET", url, NULL, NULL);
    assert_error(&r, 404, "no_checkpoint", NULL);
    cr_assert_null(strstr(r.body, "root:"), "%s", r.body);
    http_response_free(&r);
    unlink(path);
    cr_assert_eq(rename(moved, path), 0);
    char dir[600], real_dir[600];
    snprintf(dir, sizeof dir, "%s/jobs/%lld", s.data, (long long)id);
    snprintf(real_dir, sizeof real_dir, "%s/elsewhere", tmpdir);
    cr_assert_eq(rename(dir, real_dir), 0);
    cr_assert_eq(symlink(real_dir, dir), 0);
    cr_assert_eq(status_of(&s, "GET", id, "/checkpoint"), 404, "the directory is a link");
    unlink(dir);
    cr_assert_eq(rename(real_dir, dir), 0);
    cr_assert_eq(status_of(&s, "GET", id, "/checkpoint"), 200);
    stop_server(&s);

    /* A fresh database over this data dir: the next jobs get ids 1, 2 ... again, and a queued
     * job must not be served the file the old job of its id left. */
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", s.db, suffixes[i]);
        unlink(path);
    }
    s = start_server();
    char *blocker = long_job();
    int64_t first = submit(&s, blocker);
    free(blocker);
    char *behind = spec_with("\"epochs\":300", "\"epochs\":300,\"device\":\"cpu\"");
    int64_t queued = submit(&s, behind);
    free(behind);
    /* Plant an old checkpoint at the queued job's id, older than the job. */
    snprintf(dir, sizeof dir, "%s/jobs/%lld", s.data, (long long)queued);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%.600s/checkpoint.safetensors", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("left by another job", f);
    fclose(f);
    struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    json_t *job = job_now(&s, queued);
    cr_assert_str_eq(str(job, "state"), "queued");
    json_decref(job);
    job_url(url, sizeof url, queued, "/checkpoint");
    r = request(&s, "GET", url, NULL, NULL);
    assert_error(&r, 404, "no_checkpoint", NULL);
    http_response_free(&r);
    cr_assert_eq(status_of(&s, "POST", first, "/cancel"), 202);
    json_decref(wait_state(&s, queued, "succeeded", JOB_TIMEOUT_MS));
    cr_assert_eq(status_of(&s, "GET", queued, "/checkpoint"), 200, "its own, once it wrote one");
    stop_server(&s);
}

/* The raw download served a checkpoint whose bytes /weights refused as corrupt: now both answer
 * the same error, and a sound one is served whole. */
Test(hardening, a_corrupt_checkpoint_is_refused_by_the_download_as_by_weights) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_decref(wait_state(&s, id, "succeeded", JOB_TIMEOUT_MS));
    size_t len;
    char *sound = data_file(&s, id, &len);
    cr_assert_not_null(sound);
    char url[96];
    http_response r = request(&s, "GET", job_url(url, sizeof url, id, "/checkpoint"), NULL, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert(r.body_len == len && !memcmp(r.body, sound, len), "served whole");
    http_response_free(&r);
    /* one byte of the last tensor's data flipped, in place */
    char path[700];
    snprintf(path, sizeof path, "%s/jobs/%lld/checkpoint.safetensors", s.data, (long long)id);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)len - 3, SEEK_SET), 0);
    fputc(sound[len - 3] ^ 0x40, f);
    cr_assert_eq(fclose(f), 0);
    free(sound);
    const char *subs[] = {"/checkpoint", "/weights"};
    char *bodies[2];
    for (int i = 0; i < 2; i++) {
        r = request(&s, "GET", job_url(url, sizeof url, id, subs[i]), NULL, NULL);
        assert_error(&r, 500, "checkpoint", NULL);
        bodies[i] = strdup(r.body);
        http_response_free(&r);
    }
    cr_assert_str_eq(bodies[0], bodies[1], "the same words");
    free(bodies[0]);
    free(bodies[1]);
    stop_server(&s);
}

Test(hardening, metrics_counters_only_grow_and_say_build_outcomes_and_memory) {
    server s = start_server();
    int64_t id = submit(&s, "{\"kind\":\"inet\",\"device\":\"host\",\"program\":\"@main = (1 2)\"}");
    json_t *job = wait_state(&s, id, "succeeded", JOB_TIMEOUT_MS);
    double itrs = (double)json_integer_value(json_object_get(json_object_get(job, "result"), "interactions"));
    json_decref(job);
    http_response r = request(&s, "GET", "/metrics", NULL, NULL);
    double before = sample(r.body, "paragon_inet_interactions_total ");
    cr_assert_eq(before, itrs);
    cr_assert_eq(sample(r.body, "paragon_jobs_finished_total{outcome=\"succeeded\"} "), 1);
    cr_assert_eq(sample(r.body, "paragon_build_info{version=\"0.1.0\"} "), 1);
    cr_assert_gt(sample(r.body, "paragon_host_memory_available_bytes "), 0);
    cr_assert(strstr(r.body, "paragon_device_memory_bytes{device=\"cpu-"), "%s", r.body);
    http_response_free(&r);

    char url[96];
    r = request(&s, "DELETE", job_url(url, sizeof url, id, ""), NULL, NULL);
    cr_assert_eq(r.status, 204);
    http_response_free(&r);
    r = request(&s, "GET", "/metrics", NULL, NULL);
    cr_assert_eq(sample(r.body, "paragon_inet_interactions_total "), before, "a counter does not go down");
    cr_assert_eq(sample(r.body, "paragon_jobs_finished_total{outcome=\"succeeded\"} "), 1);
    http_response_free(&r);
    stop_server(&s);
}

/* ---- memory admission ------------------------------------------------------------------- */

/* A net that doubles forever: with 2^31 nodes allowed it used to grow until the OOM killer ended
 * paragond. */
#define FORK_PROGRAM "@f = (* (r0 r1)) & @f ~ (* r0) & @f ~ (* r1)\\n@main = r & @f ~ (* r)"

Test(hardening, an_inet_job_that_cannot_fit_is_refused_and_one_that_outgrows_its_limit_fails_alone) {
    server s = start_server();
    int64_t before = job_total(&s);
    static const char *const devices[] = {"host", "cpu"};
    for (size_t i = 0; i < 2; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"kind\":\"inet\",\"device\":\"%s\",\"program\":\"" FORK_PROGRAM "\","
                 "\"limits\":{\"max_nodes\":2147483648}}",
                 devices[i]);
        http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, body);
        assert_error(&r, 400, "limit_exceeded", "limits.max_nodes");
        json_t *v = parse_body(&r), *e = json_object_get(v, "error");
        cr_assert_gt(json_integer_value(json_object_get(e, "value")),
                     json_integer_value(json_object_get(e, "max")), "%s", r.body);
        cr_assert(strstr(r.body, "2147483648 nodes may need up to"), "%s", r.body);
        json_decref(v);
        http_response_free(&r);
    }
    cr_assert_eq(job_total(&s), before, "nothing was stored");

    /* Within its limit it runs until the limit stops it, on its own; the server serves on. */
    for (size_t i = 0; i < 2; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"kind\":\"inet\",\"device\":\"%s\",\"program\":\"" FORK_PROGRAM "\","
                 "\"limits\":{\"max_nodes\":65536}}",
                 devices[i]);
        int64_t id = submit(&s, body);
        json_t *job = wait_state(&s, id, "failed succeeded", JOB_TIMEOUT_MS);
        cr_assert_str_eq(str(job, "state"), "failed");
        json_t *e = json_object_get(job, "error");
        cr_assert_str_eq(str(e, "code"), "limit_exceeded");
        cr_assert_str_eq(str(e, "field"), "limits.max_nodes");
        json_decref(job);
        json_decref(get_json(&s, "/healthz", 200));
    }
    stop_server(&s);
}

/* The lock was taken on the path's text + ".lock": a symbolic link to the database started a
 * second server on it. Now every link resolves to the one file's lock, and a second hard link
 * (a name the lock cannot see) is refused. */
Test(hardening, a_link_to_the_database_does_not_start_a_second_paragond) {
    int err_fd;
    server a = start_server_with(NULL, "127.0.0.1", &err_fd);
    char dir_link[320], db_link[320], hard[320], data2[320];
    snprintf(dir_link, sizeof dir_link, "%s/dir-link", tmpdir);
    snprintf(db_link, sizeof db_link, "%s/link.db", tmpdir);
    snprintf(hard, sizeof hard, "%s/hard.db", tmpdir);
    snprintf(data2, sizeof data2, "%s/data2", tmpdir);
    cr_assert_eq(symlink(a.db, db_link), 0, "%s", strerror(errno));
    cr_assert_eq(symlink(tmpdir, dir_link), 0, "%s", strerror(errno));
    const char *base = strrchr(a.db, '/') + 1;
    char through_dir[400];
    snprintf(through_dir, sizeof through_dir, "%s/%s", dir_link, base);
    const char *links[] = {db_link, through_dir};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"--port", "0", "--db", links[i], "--data-dir", data2, "--no-calibration", NULL};
        child b = spawn(args, NULL, true);
        cr_assert_eq(wait_exit(b.pid, STOP_TIMEOUT_MS), 1, "a paragond on %s exits 1", links[i]);
        char *out = read_all(b.out_fd, HTTP_TIMEOUT_MS), *err = read_all(b.err_fd, HTTP_TIMEOUT_MS);
        close(b.out_fd);
        close(b.err_fd);
        cr_assert_str_eq(out, "", "it never listened: %s", out);
        cr_assert(strstr(err, "in use by another paragond"), "%s", err);
        free(out);
        free(err);
    }
    cr_assert_eq(link(a.db, hard), 0, "%s", strerror(errno));
    const char *args[] = {"--port", "0", "--db", hard, "--data-dir", data2, "--no-calibration", NULL};
    child b = spawn(args, NULL, true);
    cr_assert_eq(wait_exit(b.pid, STOP_TIMEOUT_MS), 1);
    char *out = read_all(b.out_fd, HTTP_TIMEOUT_MS), *err = read_all(b.err_fd, HTTP_TIMEOUT_MS);
    close(b.out_fd);
    close(b.err_fd);
    cr_assert_str_eq(out, "");
    cr_assert(strstr(err, "has 2 hard links"), "%s", err);
    free(out);
    free(err);
    cr_assert_eq(unlink(hard), 0);
    json_decref(get_json(&a, "/healthz", 200));
    stop_server(&a);
    close(err_fd);
}

/* ---- pgl programs at submission ----------------------------------------------------------- */

/* POSTs a pgl inet job of program on the host; the response (caller frees). */
static http_response post_pgl(const server *s, const char *program) {
    json_t *spec = json_pack("{s:s, s:s, s:s, s:s}", "kind", "inet", "language", "pgl", "device", "host", "program", program);
    char *body = json_dumps(spec, JSON_COMPACT);
    http_response r = request(s, "POST", "/api/v1/jobs", json_headers, body);
    free(body);
    json_decref(spec);
    return r;
}

/* What t holds (the caller's), and t open again, empty. */
static char *take_text(FILE **t, char **text, size_t *len) {
    cr_assert_eq(fclose(*t), 0);
    char *whole = *text;
    *t = open_memstream(text, len);
    cr_assert_not_null(*t);
    return whole;
}

/* The id of a 201's Location. */
static int64_t created_id(const http_response *r) {
    cr_assert_eq(r->status, 201, "%s", r->body);
    json_t *v = parse_body(r);
    int64_t id = json_integer_value(json_object_get(v, "id"));
    json_decref(v);
    return id;
}

/* Programs that nested deeper than the request thread's stack (a 5,000-term chain, a 3,000-deep
 * call) crashed paragond, and each crash counted against whatever ran (three failed a training
 * job as crashed); one of 527 definitions each writing out 65,536 nodes held a core for a
 * minute. Now: 400s naming the limit, a 1,500-item list and that program run, the training job
 * runs on untouched, and the server serves throughout. */
Test(hardening, pgl_programs_that_nest_deep_or_write_out_much_never_take_paragond_down) {
    server s = start_server();
    char *spec = long_job();
    int64_t train = submit(&s, spec);
    free(spec);
    json_decref(wait_state(&s, train, "running", JOB_TIMEOUT_MS));

    char *text;
    size_t text_len;
    FILE *t = open_memstream(&text, &text_len);
    fputs("main = 1", t);
    for (int i = 1; i < 5000; i++) fputs("+1", t);
    char *chain = take_text(&t, &text, &text_len);
    fputs("f(x) = x\nmain = ", t);
    for (int i = 0; i < 3000; i++) fputs("f(", t);
    fputs("1", t);
    for (int i = 0; i < 3000; i++) fputs(")", t);
    char *calls = take_text(&t, &text, &text_len);
    const char *deep[] = {chain, calls};
    const char *says[] = {"the expression nests deeper than 2048 levels", "the expression nests deeper than 512"};
    for (int i = 0; i < 2; i++) {
        http_response r = post_pgl(&s, deep[i]);
        assert_error(&r, 400, "invalid_spec", "program");
        cr_assert(strstr(r.body, says[i]) && strstr(r.body, "line "), "%s", r.body);
        http_response_free(&r);
        json_decref(get_json(&s, "/healthz", 200));
    }
    free(chain);
    free(calls);

    fputs("main = [0", t);
    for (int i = 1; i < 1500; i++) fprintf(t, ", %d", i);
    fputs("]", t);
    char *list = take_text(&t, &text, &text_len);
    fputs("id(x) = x\nf1(x) = id(id(id(id(x))))\n", t);
    for (int i = 2; i <= 11; i++) fprintf(t, "f%d(x) = f%d(f%d(f%d(f%d(x))))\n", i, i - 1, i - 1, i - 1, i - 1);
    for (int i = 0; i < 527; i++) fprintf(t, "g%d(x) = f11(x) + f11(x + 1)\n", i);
    fputs("main = g0(1)\n", t);
    char *bomb = take_text(&t, &text, &text_len);
    cr_assert_gt(strlen(bomb), (size_t)16000);
    http_response r = post_pgl(&s, list);
    int64_t list_id = created_id(&r);
    http_response_free(&r);
    r = post_pgl(&s, bomb);
    int64_t bomb_id = created_id(&r);
    http_response_free(&r);
    json_t *job = wait_succeeded(&s, list_id);
    const char *value = str(json_object_get(job, "result"), "value");
    cr_assert(!strncmp(value, "[0, 1, 2, ", 10) && strstr(value, ", 1498, 1499]"), "%.60s", value);
    json_decref(job);
    job = wait_succeeded(&s, bomb_id);
    cr_assert_str_eq(str(json_object_get(job, "result"), "value"), "3");
    json_decref(job);
    free(list);
    free(bomb);
    fclose(t);
    free(text);

    job = job_now(&s, train);
    cr_assert_str_eq(str(job, "state"), "running", "the training job runs on");
    cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), 0);
    json_decref(job);
    cr_assert_eq(status_of(&s, "POST", train, "/cancel"), 202);
    json_decref(wait_state(&s, train, "cancelled", JOB_TIMEOUT_MS));
    stop_server(&s);
}
