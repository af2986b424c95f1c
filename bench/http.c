/* http.c: paragond's HTTP throughput and latency, measured by our own HTTP/1.1 client over
 * keep-alive loopback connections (no external tool). It starts its own paragond on a free
 * port with a temporary database and data dir (--no-calibration, --max-queued high), then:
 *   1. GET /api/v1/jobs/{id} of one stored job: requests/s and latency percentiles;
 *   2. POST /api/v1/jobs of a small inet spec on the host pseudo-device ("@main = 1"): each 201
 *      is a job committed to SQLite (WAL, synchronous=NORMAL: durable across process crashes);
 *      submissions/s and latency percentiles; the jobs run meanwhile, as they would;
 *   3. submit-to-running on an idle device: one job at a time, from sending the POST to the
 *      first poll that no longer sees it queued (polls back to back on a second connection);
 *   4. phase 2 again while the host device is held by a sleep job (which uses no CPU), so that
 *      nothing runs: the cost of a submission alone (parse, place, insert, answer), the queue
 *      growing;
 *   5. /healthz latency as a health checker sees it (a new connection per probe), first on an
 *      idle server, then while HELD_CONNECTIONS slowloris connections (request headers begun,
 *      never finished) are held from HELD_ADDRESSES loopback addresses: what the connection
 *      limits keep possible.
 * Phases 1-2 are closed loops: every connection sends its next request when the answer to the
 * previous one is complete. Latency is per request, send to last byte.
 *   build/bench/bench-http [--connections N] [--threads T] [--seconds S] [--samples K]
 *                          [--paragond PATH] [--store postgresql://...]
 * --store runs paragond as a node of a cluster on that PostgreSQL store (its files in the
 * temporary directory as --shared-dir) instead of on a temporary SQLite file.
 * Every socket wait is bounded (IO_TIMEOUT_MS); an answer larger than RESP_MAX fails the run.
 * This client stays hand-written where the tests' and the CLI's use libcurl: a closed loop over a
 * thousand connections from one epoll set measures the server only if the client's cost per
 * request is a few hundred nanoseconds (libcurl's multi handle adds its own event loop, timers and
 * callbacks to each), and phase 5's connections send half a request, which libcurl cannot. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PARAGOND_PATH
#define PARAGOND_PATH "paragond"
#endif

#define RESP_MAX (64 * 1024)
#define IO_TIMEOUT_MS 10000
#define START_TIMEOUT_MS 60000
#define MAX_CONNECTIONS 1024
#define MAX_THREADS 64
/* Phase 5: 1,500 connections over 6 client addresses (250 each, under paragond's default
 * per-address limit of 256), the figure the hardening issue asks about. */
#define HELD_CONNECTIONS 1500
#define HELD_ADDRESSES 6

extern char **environ;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static pid_t server_pid;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-http: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (server_pid > 0) kill(server_pid, SIGKILL);
    exit(1);
}

/* ---- one connection --------------------------------------------------------------------- */

typedef struct conn {
    int fd;
    const char *req; /* the request to send, whole */
    size_t req_len, sent;
    char buf[RESP_MAX + 1];
    size_t len;
    int64_t started; /* when the current request's first byte went out */
    int64_t last_io;
} conn;

/* A connection from src (any of 127.0.0.0/8) that begins a request and never ends its headers. */
static int hold_connection(const char *src, uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket: %s (raise ulimit -n)", strerror(errno));
    struct sockaddr_in from = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &from.sin_addr);
    if (bind(fd, (struct sockaddr *)&from, sizeof from) < 0) die("bind %s: %s", src, strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect: %s", strerror(errno));
    static const char start[] = "GET /healthz HTTP/1.1\r\nHost: paragond\r\nX-Slow: ";
    if (send(fd, start, sizeof start - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof start - 1))
        die("send: %s", strerror(errno));
    return fd;
}

static int connect_loopback(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* Parses a complete response at the start of c->buf: 1 with *status and the body (pointing
 * into buf, NUL-terminated) and *used, 0 while incomplete. Content-Length framing only, which
 * is what paragond sends for every route measured here. */
static int parse_response(conn *c, int *status, const char **body, size_t *body_len, size_t *used) {
    c->buf[c->len] = 0;
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end) {
        if (c->len >= RESP_MAX) die("a response head is larger than %d bytes", RESP_MAX);
        return 0;
    }
    if (strncmp(c->buf, "HTTP/1.1 ", 9) != 0) die("not an HTTP/1.1 response: %.40s", c->buf);
    *status = atoi(c->buf + 9);
    size_t cl = 0;
    bool have_cl = false;
    for (char *line = strstr(c->buf, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
        if (strncasecmp(line, "Content-Length:", 15) == 0) {
            cl = strtoull(line + 15, NULL, 10);
            have_cl = true;
        }
    }
    if (!have_cl) die("a response without Content-Length (status %d)", *status);
    size_t head = (size_t)(end + 4 - c->buf);
    if (head + cl > RESP_MAX) die("a response of %zu bytes is over the %d limit", head + cl, RESP_MAX);
    if (c->len < head + cl) return 0;
    *body = c->buf + head;
    *body_len = cl;
    *used = head + cl;
    return 1;
}

static void consume(conn *c, size_t used) {
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
}

/* Sends what is left of the request; 0 when all of it went out, 1 when the socket is full. */
static int send_some(conn *c) {
    while (c->sent < c->req_len) {
        ssize_t n = send(c->fd, c->req + c->sent, c->req_len - c->sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 1;
        if (n < 0) die("send: %s", strerror(errno));
        c->sent += (size_t)n;
    }
    return 0;
}

static void start_request(conn *c, const char *req, size_t len) {
    c->req = req;
    c->req_len = len;
    c->sent = 0;
    c->started = c->last_io = now_ns();
    send_some(c);
}

/* Reads what is there; false at end of stream. */
static bool recv_some(conn *c) {
    for (;;) {
        if (c->len >= RESP_MAX) die("a response is larger than %d bytes", RESP_MAX);
        ssize_t n = recv(c->fd, c->buf + c->len, RESP_MAX - c->len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return true;
        if (n < 0) die("recv: %s", strerror(errno));
        if (n == 0) return false;
        c->len += (size_t)n;
        c->last_io = now_ns();
    }
}

/* One request and its whole answer on a connection, waiting with poll (bounded). */
static int roundtrip(conn *c, const char *req, size_t len, const char **body, size_t *body_len) {
    int status;
    size_t used;
    if (c->len) die("unexpected bytes before a request");
    start_request(c, req, len);
    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = c->sent < c->req_len ? POLLOUT : POLLIN};
        int rc = poll(&p, 1, IO_TIMEOUT_MS);
        if (rc == 0) die("no answer within %d ms", IO_TIMEOUT_MS);
        if (rc < 0 && errno != EINTR) die("poll: %s", strerror(errno));
        if (c->sent < c->req_len) {
            send_some(c);
            continue;
        }
        if (!recv_some(c)) die("the server closed the connection");
        if (parse_response(c, &status, body, body_len, &used)) {
            /* the body stays readable until the next request; consumed then */
            c->len -= used;
            if (c->len) die("unexpected bytes after a response");
            return status;
        }
    }
}

/* ---- closed-loop load ------------------------------------------------------------------- */

typedef struct samples {
    int64_t *ns;
    size_t n, cap;
} samples;

static void sample_add(samples *s, int64_t ns) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 65536;
        s->ns = realloc(s->ns, s->cap * sizeof *s->ns);
        if (!s->ns) die("out of memory");
    }
    s->ns[s->n++] = ns;
}

typedef struct load {
    uint16_t port;
    const char *req; /* every connection sends this, again and again */
    size_t req_len;
    int want_status;
    int connections;
    int64_t deadline;
    /* per thread */
    samples lat;
    uint64_t ok, other;
    int first_other_status;
    char first_other_body[200];
} load;

static void *load_thread(void *arg) {
    load *l = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    conn *conns = calloc((size_t)l->connections, sizeof *conns);
    if (ep < 0 || !conns) die("epoll/calloc: %s", strerror(errno));
    for (int i = 0; i < l->connections; i++) {
        conn *c = &conns[i];
        c->fd = connect_loopback(l->port);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
        start_request(c, l->req, l->req_len);
    }
    int active = l->connections;
    struct epoll_event evs[64];
    while (active > 0) {
        int n = epoll_wait(ep, evs, 64, 1000);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait: %s", strerror(errno));
        int64_t now = now_ns();
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (c->fd < 0) continue;
            if (c->sent < c->req_len && send_some(c)) continue;
            if (!recv_some(c)) die("the server closed a connection");
            int status;
            const char *body;
            size_t body_len, used;
            while (c->fd >= 0 && parse_response(c, &status, &body, &body_len, &used)) {
                int64_t done = now_ns();
                sample_add(&l->lat, done - c->started);
                if (status == l->want_status) {
                    l->ok++;
                } else if (l->other++ == 0) {
                    l->first_other_status = status;
                    snprintf(l->first_other_body, sizeof l->first_other_body, "%.*s",
                             (int)(body_len < 199 ? body_len : 199), body);
                }
                consume(c, used);
                if (done < l->deadline) {
                    start_request(c, l->req, l->req_len);
                } else {
                    close(c->fd);
                    c->fd = -1;
                    active--;
                }
            }
        }
        for (int i = 0; i < l->connections; i++)
            if (conns[i].fd >= 0 && now - conns[i].last_io > (int64_t)IO_TIMEOUT_MS * 1000000)
                die("a request went unanswered for %d ms", IO_TIMEOUT_MS);
    }
    close(ep);
    free(conns);
    return NULL;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct_ms(const samples *s, double p) {
    if (!s->n) return 0;
    size_t i = (size_t)(p / 100.0 * (double)(s->n - 1) + 0.5);
    return (double)s->ns[i] * 1e-6;
}

typedef struct result {
    uint64_t ok, other;
    double seconds, per_s;
    samples lat;
    double server_cpu_s, client_cpu_s; /* user + system CPU time during the phase */
} result;


/* CPU seconds (user + system) paragond has used so far, from /proc. */
static double server_cpu(void) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)server_pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* Runs the closed loop for `seconds` over `connections` split across `threads`. */
static result run_load(uint16_t port, const char *req, int want_status, int connections,
                       int threads, double seconds) {
    load ls[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    double server0 = server_cpu(), client0 = self_cpu();
    int64_t t0 = now_ns();
    int64_t deadline = t0 + (int64_t)(seconds * 1e9);
    for (int t = 0; t < threads; t++) {
        ls[t] = (load){.port = port, .req = req, .req_len = strlen(req),
                       .want_status = want_status,
                       .connections = connections / threads + (t < connections % threads),
                       .deadline = deadline};
        if (pthread_create(&tid[t], NULL, load_thread, &ls[t]) != 0) die("pthread_create");
    }
    result r = {0};
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        r.ok += ls[t].ok;
        r.other += ls[t].other;
        if (ls[t].other)
            fprintf(stderr, "bench-http: %llu unexpected answers, first %d: %s\n",
                    (unsigned long long)ls[t].other, ls[t].first_other_status,
                    ls[t].first_other_body);
        for (size_t i = 0; i < ls[t].lat.n; i++) sample_add(&r.lat, ls[t].lat.ns[i]);
        free(ls[t].lat.ns);
    }
    r.seconds = (double)(now_ns() - t0) * 1e-9;
    r.server_cpu_s = server_cpu() - server0;
    r.client_cpu_s = self_cpu() - client0;
    r.per_s = (double)r.ok / r.seconds;
    qsort(r.lat.ns, r.lat.n, sizeof *r.lat.ns, cmp_i64);
    return r;
}

static void print_result(const char *what, const char *unit, const result *r) {
    double n = r->ok + r->other ? (double)(r->ok + r->other) : 1;
    printf("%-30s %8llu %-8s %7.0f/s  p50 %6.3f ms  p90 %6.3f ms  p99 %6.3f ms  "
           "cpu/req: server %5.1f us, client %5.1f us\n",
           what, (unsigned long long)r->ok, unit, r->per_s, pct_ms(&r->lat, 50),
           pct_ms(&r->lat, 90), pct_ms(&r->lat, 99), r->server_cpu_s / n * 1e6,
           r->client_cpu_s / n * 1e6);
}

/* ---- the server ------------------------------------------------------------------------- */

static char tmpdir[256];
static char token[256];
static const char *store_url; /* --store: a PostgreSQL store, else a SQLite file in tmpdir */

static uint16_t start_paragond(const char *path, int log_fd) {
    char db[300], data[300];
    snprintf(db, sizeof db, "%s/bench.db", tmpdir);
    snprintf(data, sizeof data, "%s/data", tmpdir);
    /* High enough that no submission of the run meets the queue limit. */
    const char *argv[] = {path, "--port", "0", "--db", db, "--data-dir", data,
                          "--no-calibration", "--max-queued", "1000000000", NULL};
    const char *cluster[] = {path, "--port", "0", "--store", store_url, "--shared-dir", data,
                             "--no-calibration", "--max-queued", "1000000000", NULL};
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) die("pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, log_fd, STDERR_FILENO);
    int rc = posix_spawn(&server_pid, path, &fa, NULL, (char *const *)(store_url ? cluster : argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) die("cannot start %s: %s", path, strerror(rc));
    char line[256];
    size_t len = 0;
    int64_t deadline = now_ns() + (int64_t)START_TIMEOUT_MS * 1000000;
    while (len == 0 || line[len - 1] != '\n') {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        if (now_ns() > deadline) die("paragond did not print its listening line");
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t n = read(out[0], line + len, 1);
        if (n <= 0) die("paragond exited before listening (see %s/paragond.log)", tmpdir);
        if (++len == sizeof line) die("paragond's first line is too long");
    }
    line[len] = 0;
    close(out[0]);
    unsigned port = 0;
    if (sscanf(line, "paragond listening on http://127.0.0.1:%u", &port) != 1)
        die("unexpected first line: %s", line);
    char tpath[320];
    snprintf(tpath, sizeof tpath, "%s/token", data);
    FILE *f = fopen(tpath, "r");
    if (!f || fscanf(f, "%255s", token) != 1) die("cannot read the token in %s", tpath);
    fclose(f);
    return (uint16_t)port;
}

static void stop_paragond(void) {
    kill(server_pid, SIGTERM);
    int status;
    waitpid(server_pid, &status, 0);
    server_pid = 0;
}

/* ---- phases ----------------------------------------------------------------------------- */

static char *post_request(const char *spec) {
    char *req = malloc(strlen(spec) + 512);
    if (!req) die("out of memory");
    sprintf(req,
            "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Authorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n%s",
            token, strlen(spec), spec);
    return req;
}

static char *get_request(const char *path) {
    char *req = malloc(strlen(path) + 128);
    if (!req) die("out of memory");
    sprintf(req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    return req;
}

/* The "id" of a job object, or of the list's "total". */
static long long json_number_after(const char *body, const char *key) {
    const char *p = strstr(body, key);
    if (!p) die("no %s in %.200s", key, body);
    return atoll(p + strlen(key));
}

/* A job's state, from its object (the first "state" is the job's own). */
static void job_state(const char *body, char *out, size_t size) {
    const char *p = strstr(body, "\"state\":\"");
    if (!p) die("no state in %.200s", body);
    p += 9;
    size_t n = strcspn(p, "\"");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
}

/* Submit-to-running on device: samples jobs, one at a time, each on an idle device. */
static void submit_to_running(uint16_t port, const char *device, int n_samples, int warmup) {
    char spec[256];
    snprintf(spec, sizeof spec, "{\"kind\":\"inet\",\"device\":\"%s\",\"program\":\"@main = 1\"}",
             device);
    char *post = post_request(spec);
    conn *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    a->fd = connect_loopback(port);
    b->fd = connect_loopback(port);
    samples lat = {0};
    long polls = 0;
    for (int i = 0; i < warmup + n_samples; i++) {
        const char *body;
        size_t body_len;
        int64_t t0 = now_ns();
        int status = roundtrip(a, post, strlen(post), &body, &body_len);
        if (status != 201) die("POST on %s: %d %s", device, status, body);
        char path[64], state[32];
        snprintf(path, sizeof path, "/api/v1/jobs/%lld", json_number_after(body, "\"id\":"));
        char *get = get_request(path);
        int64_t seen = 0;
        for (;;) {
            status = roundtrip(b, get, strlen(get), &body, &body_len);
            if (status != 200) die("GET %s: %d %s", path, status, body);
            job_state(body, state, sizeof state);
            if (!seen && strcmp(state, "queued") != 0) seen = now_ns();
            if (strcmp(state, "succeeded") == 0) break;
            if (strcmp(state, "failed") == 0 || strcmp(state, "cancelled") == 0)
                die("job %s on %s %s: %.300s", path, device, state, body);
            if (seen) usleep(200); /* started: wait for the end without hammering */
            else polls++;
        }
        free(get);
        if (i >= warmup) sample_add(&lat, seen - t0);
    }
    qsort(lat.ns, lat.n, sizeof *lat.ns, cmp_i64);
    char what[96];
    snprintf(what, sizeof what, "submit-to-running on %s (idle)", device);
    printf("%-34s %9d %-9s %11s   p50 %6.3f ms  p90 %6.3f ms  p99 %6.3f ms  (%.1f polls/job)\n",
           what, n_samples, "jobs", "", pct_ms(&lat, 50), pct_ms(&lat, 90), pct_ms(&lat, 99),
           (double)polls / (warmup + n_samples));
    close(a->fd);
    close(b->fd);
    free(a);
    free(b);
    free(lat.ns);
    free(post);
}

/* The body of GET path on a new connection (200 or the benchmark dies); the caller frees it. */
static char *get_body(uint16_t port, const char *path) {
    conn *c = calloc(1, sizeof *c);
    c->fd = connect_loopback(port);
    char *get = get_request(path);
    const char *body;
    size_t len;
    if (roundtrip(c, get, strlen(get), &body, &len) != 200) die("GET %s", path);
    char *copy = strndup(body, len);
    free(get);
    close(c->fd);
    free(c);
    return copy;
}

/* The OpenCL device "auto" places an inet job on (its id from the POST answer). */
static void first_opencl_device(uint16_t port, char *out, size_t size) {
    char *body = get_body(port, "/api/v1/devices");
    const char *p = strstr(body, "\"id\":\"");
    if (!p) die("no device in %.200s", body);
    p += 6;
    size_t n = strcspn(p, "\"");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
    free(body);
}

static long long stored_jobs(uint16_t port) {
    char *body = get_body(port, "/api/v1/jobs?limit=0");
    long long total = json_number_after(body, "\"total\":");
    free(body);
    return total;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* n probes of GET /healthz, each on a new connection (connect to last byte); p50/p99/max. */
static void healthz_probes(uint16_t port, int n, const char *what) {
    samples lat = {0};
    char *req = get_request("/healthz");
    for (int i = 0; i < n; i++) {
        conn *c = calloc(1, sizeof *c);
        int64_t t0 = now_ns();
        c->fd = connect_loopback(port);
        const char *body;
        size_t len;
        if (roundtrip(c, req, strlen(req), &body, &len) != 200) die("GET /healthz: %s", body);
        sample_add(&lat, now_ns() - t0);
        close(c->fd);
        free(c);
    }
    qsort(lat.ns, lat.n, sizeof *lat.ns, cmp_i64);
    printf("  %-34s %d probes, new connection each: p50 %.3f ms  p99 %.3f ms  max %.3f ms\n", what,
           n, pct_ms(&lat, 50), pct_ms(&lat, 99), pct_ms(&lat, 100));
    free(lat.ns);
    free(req);
}

/* Phase 5: /healthz idle, then with HELD_CONNECTIONS slow-header connections held. */
static void held_connections(uint16_t port, int n_samples) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < HELD_CONNECTIONS + 256) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > HELD_CONNECTIONS + 256
                          ? HELD_CONNECTIONS + 256
                          : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    printf("/healthz while connections are held:\n");
    healthz_probes(port, n_samples, "idle server");
    int *fds = malloc(HELD_CONNECTIONS * sizeof *fds);
    for (int i = 0; i < HELD_CONNECTIONS; i++) {
        char src[16];
        snprintf(src, sizeof src, "127.0.0.%d", 2 + i % HELD_ADDRESSES);
        fds[i] = hold_connection(src, port);
    }
    char what[64];
    snprintf(what, sizeof what, "%d held (%d addresses)", HELD_CONNECTIONS, HELD_ADDRESSES);
    healthz_probes(port, n_samples, what);
    /* The server keeps them until the header timeout; count how many it had already cut. */
    int closed = 0;
    for (int i = 0; i < HELD_CONNECTIONS; i++) {
        char b;
        closed += recv(fds[i], &b, 1, MSG_DONTWAIT) == 0;
        close(fds[i]);
    }
    printf("  %d of the %d held connections were closed by the server meanwhile\n", closed,
           HELD_CONNECTIONS);
    free(fds);
}

int main(int argc, char **argv) {
    int connections = 16, threads = 2, n_samples = 200;
    double seconds = 5;
    const char *paragond = getenv("PARAGOND") ? getenv("PARAGOND") : PARAGOND_PATH;
    const char *only = NULL; /* get, post, latency or held: one phase (for profiling) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--connections") && v) connections = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--seconds") && v) seconds = atof(argv[++i]);
        else if (!strcmp(a, "--samples") && v) n_samples = atoi(argv[++i]);
        else if (!strcmp(a, "--paragond") && v) paragond = argv[++i];
        else if (!strcmp(a, "--only") && v) only = argv[++i];
        else if (!strcmp(a, "--store") && v) store_url = argv[++i];
        else {
            fprintf(stderr,
                    "usage: bench-http [--connections N] [--threads T] [--seconds S] "
                    "[--samples K] [--paragond PATH] [--only get|post|latency|held] "
                    "[--store postgresql://...]\n");
            return 2;
        }
    }
    if (threads < 1 || threads > MAX_THREADS || connections < threads ||
        connections > MAX_CONNECTIONS || seconds <= 0 || n_samples < 1)
        die("bad arguments: need 1 <= threads <= %d <= connections <= %d", MAX_THREADS,
            MAX_CONNECTIONS);
    signal(SIGPIPE, SIG_IGN);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bench-http-XXXXXX");
    if (!mkdtemp(tmpdir)) die("mkdtemp: %s", strerror(errno));
    char log_path[320];
    snprintf(log_path, sizeof log_path, "%s/paragond.log", tmpdir);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0) die("%s: %s", log_path, strerror(errno));
    uint16_t port = start_paragond(paragond, log_fd);
    printf("bench-http: %s on 127.0.0.1:%u; %d connections on %d client threads, %.0f s per "
           "phase\n",
           paragond, (unsigned)port, connections, threads, seconds);

    /* 1. reads of one job (its answer is the full job object with spec and estimate) */
    static const char host_spec[] = "{\"kind\":\"inet\",\"device\":\"host\",\"program\":\"@main = 1\"}";
    char *post = post_request(host_spec);
    conn *c = calloc(1, sizeof *c);
    c->fd = connect_loopback(port);
    const char *body;
    size_t len;
    if (roundtrip(c, post, strlen(post), &body, &len) != 201) die("POST: %s", body);
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", json_number_after(body, "\"id\":"));
    close(c->fd);
    free(c);
    char *get = get_request(path);
    result r;
    if (!only || !strcmp(only, "get")) {
        r = run_load(port, get, 200, connections, threads, seconds);
        print_result("GET /api/v1/jobs/{id}", "requests", &r);
        free(r.lat.ns);
    }
    free(get);

    /* 2. durable submissions */
    if (!only || !strcmp(only, "post")) {
        long long before = stored_jobs(port);
        r = run_load(port, post, 201, connections, threads, seconds);
        print_result("POST /api/v1/jobs (durable)", "jobs", &r);
        long long stored = stored_jobs(port) - before;
        if (stored != (long long)r.ok)
            die("%llu submissions were answered 201 but %lld jobs were stored",
                (unsigned long long)r.ok, stored);
        free(r.lat.ns);
    }
    if (!only || !strcmp(only, "held")) held_connections(port, n_samples);
    if (only && strcmp(only, "latency") != 0) {
        free(post);
        stop_paragond();
        close(log_fd);
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
    }

    /* 3. submit-to-running, once the host worker has drained what phase 2 queued */
    for (;;) {
        conn *q = calloc(1, sizeof *q);
        q->fd = connect_loopback(port);
        char *g = get_request("/api/v1/jobs?state=queued&limit=0");
        if (roundtrip(q, g, strlen(g), &body, &len) != 200) die("GET queued");
        long long queued = json_number_after(body, "\"total\":");
        free(g);
        close(q->fd);
        free(q);
        if (queued == 0) break;
        usleep(100000);
    }
    submit_to_running(port, "host", n_samples, 5);
    char opencl[64];
    first_opencl_device(port, opencl, sizeof opencl);
    /* The first job on an OpenCL device opens it and builds the kernels: warm-up. */
    submit_to_running(port, opencl, n_samples, 5);

    /* 4. submissions alone: the host worker is held by a sleep job, so every job stays queued and
     * the server's CPU is the submissions' (a training job here had been a third of it) */
    static const char long_spec[] = "{\"kind\":\"sleep\",\"device\":\"host\",\"seconds\":3600}";
    char *long_post = post_request(long_spec);
    c = calloc(1, sizeof *c);
    c->fd = connect_loopback(port);
    if (roundtrip(c, long_post, strlen(long_post), &body, &len) != 201) die("POST: %s", body);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", json_number_after(body, "\"id\":"));
    get = get_request(path);
    for (char state[32] = "queued"; strcmp(state, "running") != 0; usleep(10000)) {
        if (roundtrip(c, get, strlen(get), &body, &len) != 200) die("GET %s", path);
        job_state(body, state, sizeof state);
        if (strcmp(state, "queued") && strcmp(state, "running")) die("the long job is %s", state);
    }
    close(c->fd);
    free(c);
    free(get);
    free(long_post);
    r = run_load(port, post, 201, connections, threads, seconds);
    print_result("POST /api/v1/jobs (queued only)", "jobs", &r);
    free(r.lat.ns);
    free(post);

    stop_paragond();
    close(log_fd);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
