/* http.c: owns the libmicrohttpd daemon: listening (host, port, thread pool), the connection
 * limits (total, per client address, a deadline for each request's headers), gathering each
 * request body up to PGD_MAX_BODY (or streaming it to the API's sink: uploads), and building
 * responses. Routing and the API itself live in api.c; this file knows nothing of jobs. */
#include "http.h"
#include "metrics.h" /* pgd_metrics_observe, pgd_metrics_refused */
#include "views.h"   /* pgd_error_json */

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A body declared larger than the limit but below this is read and dropped before the 413,
 * so a client still writing it reads our answer instead of a reset connection; above it we
 * answer at once and close. */
#define DRAIN_MAX (8u * PGD_MAX_BODY)
/* A connection silent this long is closed (libmicrohttpd's own timeout; streams are parked, not
 * silent). */
#define CONNECTION_TIMEOUT_S 30u
/* File descriptors kept apart from connections: the store, pocl, job files, the listener and
 * the event loop's own. */
#define FD_RESERVE 256
/* How often the header deadlines are checked: a late connection lives at most this much past
 * its deadline. */
#define REAP_INTERVAL_NS 250000000LL

/* One open connection, known from libmicrohttpd's start and close notices: its socket, and the
 * time by which its next request's headers must have arrived (0 while a request is served). */
typedef struct conn_track {
    struct conn_track *prev, *next;
    MHD_socket fd;
    _Atomic int64_t deadline_ns;
    bool cut; /* shut down by the reaper; libmicrohttpd closes it */
} conn_track;

struct pgd_http {
    struct MHD_Daemon *daemon;
    pgd_handler handler;
    pgd_route_slot slot;
    pgd_sink_open sink_open;
    void *ctx;
    uint16_t port;
    pgd_http_limits limits;
    char **cors; /* the allowed origins, NULL-terminated (limits.cors_origins points here); NULL: none */
    /* Open connections, for the header deadline; the reaper thread walks them. */
    pthread_mutex_t conns_lock;
    pthread_cond_t reaper_wake;
    conn_track *conns;
    size_t n_conns;
    bool stopping;
    pthread_t reaper;
    bool reaper_started;
    /* Each limit is said on stderr the first time it is hit, then only counted. */
    atomic_bool said[PGD_REFUSED_REASONS];
};

/* Per-request state while a body arrives; freed when MHD reports the request complete. */
typedef struct body_buf {
    char *data;
    size_t len, cap;
    bool too_large;
    pgd_sink *sink;    /* a streamed body: chunks go there instead */
    bool dropping;     /* the sink keeps no more: len counts the bytes dropped */
    bool answered;     /* the sink's request was answered on its first call */
} body_buf;

/* Marks a request without a body in MHD's per-request pointer. */
static body_buf no_body;

static const char oom_json[] =
    "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\",\"field\":null}}";

/* ---- replies ---------------------------------------------------------------------------- */

enum MHD_Result pgd_queue_response(const pgd_request *req, unsigned status, struct MHD_Response *resp) {
    if (req->vary_origin) MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
    if (req->allow_origin) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, req->allow_origin);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_EXPOSE_HEADERS, PGD_CORS_EXPOSE);
    }
    return MHD_queue_response(req->conn, status, resp);
}

static enum MHD_Result queue(const pgd_request *req, unsigned status,
                             struct MHD_Response *resp, const char *content_type,
                             const pgd_header *headers) {
    if (!resp) return MHD_NO; /* out of memory: MHD closes the connection */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    for (const pgd_header *h = headers; h && h->name; h++)
        MHD_add_response_header(resp, h->name, h->value);
    enum MHD_Result r = pgd_queue_response(req, status, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result pgd_reply_text(const pgd_request *req, unsigned status, char *text, const char *content_type,
                               const pgd_header *headers) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) free(text);
    return queue(req, status, resp, content_type, headers);
}

enum MHD_Result pgd_reply_static(const pgd_request *req, unsigned status, const void *data,
                                 size_t len, const char *content_type) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    return queue(req, status, resp, content_type, NULL);
}

enum MHD_Result pgd_reply_json(const pgd_request *req, unsigned status, json_t *body,
                               const pgd_header *headers) {
    char *text = body ? pgn_json_dumps(body) : NULL;
    json_decref(body);
    return pgd_reply_json_text(req, status, text, headers);
}

enum MHD_Result pgd_reply_json_text(const pgd_request *req, unsigned status, char *text,
                                    const pgd_header *headers) {
    if (!text)
        return queue(req, MHD_HTTP_INTERNAL_SERVER_ERROR,
                     MHD_create_response_from_buffer(sizeof oom_json - 1, (void *)oom_json,
                                                     MHD_RESPMEM_PERSISTENT),
                     "application/json", NULL);
    return pgd_reply_text(req, status, text, "application/json", headers);
}

enum MHD_Result pgd_reply_pgn_error(const pgd_request *req, const pgn_error *err,
                                    const json_t *extra, const pgd_header *headers) {
    json_t *e = pgd_error_json(err);
    if (extra) json_object_update(e, (json_t *)extra);
    return pgd_reply_json(req, (unsigned)pgn_error_code_status(err->code),
                          json_pack("{s:o}", "error", e), headers);
}

enum MHD_Result pgd_reply_error(const pgd_request *req, pgn_error_code code, const char *field,
                                const char *fmt, ...) {
    pgn_error err;
    pgn_error_clear(&err);
    err.code = code;
    snprintf(err.field, sizeof err.field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.message, sizeof err.message, fmt, ap);
    va_end(ap);
    return pgd_reply_pgn_error(req, &err, NULL, NULL);
}

/* ---- connection limits ------------------------------------------------------------------ */

static int64_t next_deadline(const pgd_http *h) {
    return pgn_now_ns() + (int64_t)h->limits.header_timeout_s * 1000000000LL;
}

/* Counts a refusal and, the first time for its reason, says why on stderr. */
static void refused(pgd_http *h, pgd_refused_reason reason) {
    pgd_metrics_refused(reason);
    if (atomic_exchange(&h->said[reason], true)) return;
    switch (reason) {
    case PGD_REFUSED_CONNECTIONS:
        fprintf(stderr, "paragond: %u connections are open (--max-connections): new ones are closed "
                        "at once until some end; said once, counted in /metrics\n",
                h->limits.max_connections);
        break;
    case PGD_REFUSED_PER_IP:
        fprintf(stderr, "paragond: a client address has %u connections open "
                        "(--max-connections-per-ip): its new ones are closed at once; said once, "
                        "counted in /metrics\n",
                h->limits.max_connections_per_ip);
        break;
    case PGD_REFUSED_HEADER_TIMEOUT:
        fprintf(stderr, "paragond: closed a connection that sent no complete request headers "
                        "within %u s (--header-timeout); said once, counted in /metrics\n",
                h->limits.header_timeout_s);
        break;
    default: break;
    }
}

static conn_track *tracked(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    pgd_http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_track *t = info ? calloc(1, sizeof *t) : NULL;
        *socket_context = t; /* untracked when out of memory: only its deadline is lost */
        if (!t) return;
        t->fd = info->connect_fd;
        atomic_init(&t->deadline_ns, next_deadline(h));
        pthread_mutex_lock(&h->conns_lock);
        t->next = h->conns;
        if (h->conns) h->conns->prev = t;
        h->conns = t;
        h->n_conns++;
        pthread_mutex_unlock(&h->conns_lock);
        return;
    }
    /* Closed: libmicrohttpd closes the socket only after this returns, so the reaper, which
     * shuts sockets down under conns_lock, never touches a closed (or reused) descriptor. */
    conn_track *t = *socket_context;
    if (!t) return;
    pthread_mutex_lock(&h->conns_lock);
    if (t->prev) t->prev->next = t->next;
    else h->conns = t->next;
    if (t->next) t->next->prev = t->prev;
    h->n_conns--;
    pthread_mutex_unlock(&h->conns_lock);
    free(t);
    *socket_context = NULL;
}

/* Closes connections whose headers are late: shutdown() wakes libmicrohttpd's event loop, which
 * reads the end of the stream and closes the connection itself. */
static void *reaper_main(void *arg) {
    pgd_http *h = arg;
    pthread_mutex_lock(&h->conns_lock);
    while (!h->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += REAP_INTERVAL_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->reaper_wake, &h->conns_lock, &until);
        int64_t now = pgn_now_ns();
        for (conn_track *t = h->conns; t && !h->stopping; t = t->next) {
            int64_t deadline = atomic_load(&t->deadline_ns);
            if (t->cut || deadline == 0 || now < deadline) continue;
            t->cut = true;
            shutdown(t->fd, SHUT_RDWR);
            refused(h, PGD_REFUSED_HEADER_TIMEOUT);
        }
    }
    pthread_mutex_unlock(&h->conns_lock);
    return NULL;
}

/* libmicrohttpd's messages. Its refusals at the connection limits are counted (and said once);
 * a client that vanished is ordinary and not said at all. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    pgd_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (strstr(msg, "connection limit")) {
        /* One message for both limits: the total tells which was reached. */
        pthread_mutex_lock(&h->conns_lock);
        bool full = h->n_conns >= h->limits.max_connections;
        pthread_mutex_unlock(&h->conns_lock);
        refused(h, full ? PGD_REFUSED_CONNECTIONS : PGD_REFUSED_PER_IP);
        return;
    }
    /* Clients that go away mid-request or mid-stream: ordinary, and one line each would let
     * any client fill our log. */
    static const char *const ordinary[] = {"Failed to send the chunked response body",
                                           "closed by remote side", "Connection reset"};
    for (size_t i = 0; i < sizeof ordinary / sizeof *ordinary; i++)
        if (strstr(msg, ordinary[i])) return;
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    fprintf(stderr, "paragond: http: %s\n", msg);
}

/* libmicrohttpd aborts on what it holds for an internal error; say what it was first, so that a
 * paragond dying of SIGABRT leaves its reason on stderr. */
static void on_mhd_panic(void *cls, const char *file, unsigned int line, const char *reason) {
    (void)cls;
    fprintf(stderr, "paragond: libmicrohttpd gave up at %s:%u: %s\n", file ? file : "?", line,
            reason ? reason : "(no reason given)");
    abort();
}

/* Makes room for the connections in the open-file limit; returns how many fit. */
static unsigned fit_open_files(unsigned want) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return want;
    rlim_t need = (rlim_t)want + FD_RESERVE;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rlim_t raised = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        struct rlimit up = {.rlim_cur = raised, .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl.rlim_cur = raised;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return want;
    unsigned fit = rl.rlim_cur > FD_RESERVE + 16 ? (unsigned)(rl.rlim_cur - FD_RESERVE) : 16;
    fprintf(stderr, "paragond: the open-file limit (%llu, hard limit %llu) fits %u connections: "
                    "--max-connections lowered from %u\n",
            (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, fit, want);
    return fit;
}

/* ---- requests --------------------------------------------------------------------------- */

const char *pgd_request_query(const pgd_request *req, const char *name) {
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *pgd_request_header(const pgd_request *req, const char *name) {
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

typedef struct query_values {
    const char *name;
    const char **out;
    size_t max, n;
} query_values;

static enum MHD_Result collect_value(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    query_values *q = cls;
    if (strcmp(key, q->name) != 0) return MHD_YES;
    if (q->n < q->max) q->out[q->n] = value ? value : "";
    q->n++;
    return MHD_YES;
}

size_t pgd_request_query_all(const pgd_request *req, const char *name, const char **out, size_t max) {
    query_values q = {.name = name, .out = out, .max = max};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, collect_value, &q);
    return q.n;
}

static enum MHD_Result reply_too_large(pgd_http *h, const pgd_request *req) {
    enum MHD_Result r = pgd_reply_error(req, PGN_E_TOO_LARGE, NULL,
                                        "request body is larger than %d bytes", PGD_MAX_BODY);
    pgd_metrics_observe(h->slot(h->ctx, req->path), req->method, MHD_HTTP_CONTENT_TOO_LARGE, 0.0);
    return r;
}

/* The request's Origin when --cors-origin allows it. */
static const char *allowed_origin(const pgd_http *h, const pgd_request *req) {
    const char *origin = h->cors ? pgd_request_header(req, "Origin") : NULL;
    for (char **o = h->cors; origin && *o; o++)
        if (strcasecmp(*o, origin) == 0) return *o;
    return NULL;
}

/* A CORS preflight from an allowed origin: 204 saying what its page may send. Answered before
 * the API sees it, for any path: a preflight carries no token, and the request it precedes gets
 * the API's own answer (a 404, a 401) anyway. */
static enum MHD_Result reply_preflight(const pgd_request *req) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS, PGD_CORS_METHODS);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_HEADERS, PGD_CORS_HEADERS);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_MAX_AGE, PGD_CORS_MAX_AGE_S);
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Runs the handler and counts the request for /metrics: its route, method, the status it
 * queued and the time the handler took. */
static enum MHD_Result dispatch(pgd_http *h, const pgd_request *req) {
    int64_t t0 = pgn_now_ns();
    bool preflight = req->allow_origin && strcmp(req->method, MHD_HTTP_METHOD_OPTIONS) == 0 &&
                     pgd_request_header(req, "Access-Control-Request-Method");
    enum MHD_Result r = preflight ? reply_preflight(req) : h->handler(h->ctx, req);
    int64_t t1 = pgn_now_ns();
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    double seconds = (double)(t1 - t0) * 1e-9;
    pgd_metrics_observe(h->slot(h->ctx, req->path), req->method, info ? info->http_status : 0,
                        seconds);
    return r;
}

/* Parses a Content-Length value; MHD has already rejected malformed ones. */
static bool content_length(struct MHD_Connection *conn, unsigned long long *out) {
    const char *v =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!v) return false;
    errno = 0;
    char *end;
    *out = strtoull(v, &end, 10);
    if (errno || end == v) *out = ~0ull;
    return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    pgd_http *h = cls;
    pgd_request req = {.conn = conn, .method = method, .path = url, .body = "", .body_len = 0,
                       .vary_origin = h->cors != NULL};
    req.allow_origin = allowed_origin(h, &req);
    body_buf *b = *con_cls;

    if (!b) {
        /* Its headers are here: no deadline while it is served. */
        conn_track *t = tracked(conn);
        if (t) atomic_store(&t->deadline_ns, 0);
        pgd_sink *sink = h->sink_open ? h->sink_open(h->ctx, &req) : NULL;
        if (sink) {
            b = calloc(1, sizeof *b);
            if (!b) {
                sink->release(sink);
                return MHD_NO;
            }
            b->sink = sink;
            *con_cls = b;
            if (!sink->answer_now) return MHD_YES;
            /* A reply queued on this first call closes the connection: what is refused from its
             * headers alone is not read. */
            b->answered = true;
            req.sink = sink;
            return dispatch(h, &req);
        }
        unsigned long long len = 0;
        bool has_len = content_length(conn, &len);
        bool chunked = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
        /* No body (the common GET): nothing to allocate. Answering only on the next call
         * matters: MHD closes the connection after a reply queued on this first call. */
        if (!chunked && (!has_len || len == 0)) {
            *con_cls = (void *)&no_body;
            return MHD_YES;
        }
        /* A client that waits for "100 Continue" has sent nothing yet: refuse at once. */
        const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_EXPECT);
        if (has_len && (len > DRAIN_MAX || (len > PGD_MAX_BODY && expect)))
            return reply_too_large(h, &req);
        b = calloc(1, sizeof *b);
        if (!b) return MHD_NO;
        if (has_len && len > PGD_MAX_BODY) {
            b->too_large = true;
        } else if (has_len) {
            b->cap = (size_t)len + 1;
            b->data = malloc(b->cap);
            if (!b->data) {
                free(b);
                return MHD_NO;
            }
        }
        *con_cls = b;
        return MHD_YES;
    }

    if (b == &no_body) return dispatch(h, &req);

    if (b->sink) {
        req.sink = b->sink;
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (b->answered) return MHD_YES;
        if (n && !b->dropping && b->sink->write(b->sink, upload_data, n)) return MHD_YES;
        if (n) {
            /* A sink that keeps no more (over its limit, a failed write): libmicrohttpd takes a
             * reply only once the body has ended, so the rest is read and dropped, up to
             * DRAIN_MAX; a client still sending past that is cut off. */
            b->dropping = true;
            b->len += n;
            return b->len > DRAIN_MAX ? MHD_NO : MHD_YES;
        }
        b->answered = true;
        return dispatch(h, &req);
    }

    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (b->too_large) return MHD_YES;
        if (b->len + n > PGD_MAX_BODY) {
            /* Stop keeping the body; read and drop the rest, then answer 413. */
            b->too_large = true;
            free(b->data);
            b->data = NULL;
            b->len = b->cap = 0;
            return MHD_YES;
        }
        if (b->len + n + 1 > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap < b->len + n + 1) cap *= 2;
            char *grown = realloc(b->data, cap);
            if (!grown) return MHD_NO;
            b->data = grown;
            b->cap = cap;
        }
        memcpy(b->data + b->len, upload_data, n);
        b->len += n;
        return MHD_YES;
    }

    if (b->too_large) return reply_too_large(h, &req);
    if (b->data) {
        b->data[b->len] = 0;
        req.body = b->data;
        req.body_len = b->len;
    }
    return dispatch(h, &req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)toe;
    pgd_http *h = cls;
    /* A kept-alive connection's next request has the same time to send its headers. */
    conn_track *t = tracked(conn);
    if (t) atomic_store(&t->deadline_ns, next_deadline(h));
    body_buf *b = *con_cls;
    if (!b || b == &no_body) return;
    if (b->sink) b->sink->release(b->sink);
    free(b->data);
    free(b);
    *con_cls = NULL;
}


static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The URL's (and each query argument's) %XX escapes decoded in place, as libmicrohttpd's own
 * unescaper does, except %00: a NUL there ended the C string every handler reads, so
 * "/datasets/a.idx%00.txt" reached the upload as "a.idx". Kept as the three characters, it is a
 * '%' the name checks refuse. */
static size_t keep_nul(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls, (void)c;
    char *out = s;
    for (const char *in = s; *in;) {
        int hi = in[0] == '%' ? hex_digit(in[1]) : -1, lo = hi >= 0 ? hex_digit(in[2]) : -1;
        if (lo >= 0 && (hi | lo)) {
            *out++ = (char)(hi * 16 + lo);
            in += 3;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
    return (size_t)(out - s);
}

/* ---- daemon ----------------------------------------------------------------------------- */

int pgd_http_start(const char *host, uint16_t port, unsigned threads,
                   const pgd_http_limits *limits, pgd_handler handler, pgd_route_slot slot,
                   pgd_sink_open sink_open, void *ctx, pgd_http **out, pgn_error *err) {
    *out = NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *addrs = NULL;
    char port_text[8];
    snprintf(port_text, sizeof port_text, "%u", (unsigned)port);
    int rc = getaddrinfo(host, port_text, &hints, &addrs);
    if (rc != 0) {
        pgn_error_set(err, PGN_E_HTTP, "host", "--host %s: %s", host, gai_strerror(rc));
        return -1;
    }
    pgd_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(addrs);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "http: out of memory");
        return -1;
    }
    h->handler = handler;
    h->slot = slot;
    h->sink_open = sink_open;
    h->ctx = ctx;
    h->limits = *limits;
    h->limits.max_connections = fit_open_files(limits->max_connections);
    MHD_set_panic_func(on_mhd_panic, NULL);
    pthread_mutex_init(&h->conns_lock, NULL);
    pthread_cond_init(&h->reaper_wake, NULL);
    for (int i = 0; i < PGD_REFUSED_REASONS; i++) atomic_init(&h->said[i], false);
    size_t n_cors = 0;
    while (limits->cors_origins && limits->cors_origins[n_cors]) n_cors++;
    h->cors = n_cors ? calloc(n_cors + 1, sizeof *h->cors) : NULL;
    bool cors_ok = !n_cors || h->cors;
    for (size_t i = 0; h->cors && i < n_cors; i++) cors_ok &= (h->cors[i] = strdup(limits->cors_origins[i])) != NULL;
    h->limits.cors_origins = (const char *const *)h->cors;
    if (!cors_ok) {
        freeaddrinfo(addrs);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "http: out of memory");
        pgd_http_stop(h);
        return -1;
    }
    int trc = pthread_create(&h->reaper, NULL, reaper_main, h);
    if (trc != 0) {
        freeaddrinfo(addrs);
        pgn_error_set(err, PGN_E_INTERNAL, "", "http: cannot start the header-deadline thread: %s",
                      strerror(trc));
        pgd_http_stop(h);
        return -1;
    }
    h->reaper_started = true;

    /* Suspend/resume parks idle event streams (events.c) so that they hold no thread of the
     * pool. AUTO picks epoll here, so connections are not bound by select()'s FD_SETSIZE
     * (libmicrohttpd's default limit of 1020 connections came from it: past it, /healthz waited
     * in the backlog). No MHD_quiesce_daemon at shutdown: in libmicrohttpd 0.9.75 it and a pool
     * thread at the connection limit both take the listener out of that thread's epoll set,
     * unlocked, and the loser panics (paragond died of SIGABRT at a shutdown with 1,100
     * connections held, about once in ten runs); MHD_stop_daemon alone closes the listener. */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (addrs->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    errno = 0;
    h->daemon = MHD_start_daemon(
        flags, port, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
        MHD_OPTION_SOCK_ADDR, addrs->ai_addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads ? threads : 1u, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
        h->limits.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        h->limits.max_connections_per_ip, MHD_OPTION_UNESCAPE_CALLBACK, keep_nul, NULL, MHD_OPTION_END);
    int saved = errno;
    freeaddrinfo(addrs);
    if (!h->daemon) {
        pgn_error_set(err, PGN_E_HTTP, "port", "cannot listen on %s port %u%s%s", host,
                      (unsigned)port, saved ? ": " : "", saved ? strerror(saved) : "");
        pgd_http_stop(h);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info && info->port ? info->port : port;
    *out = h;
    return 0;
}

uint16_t pgd_http_port(const pgd_http *h) { return h->port; }

void pgd_http_stop(pgd_http *h) {
    if (!h) return;
    if (h->daemon) MHD_stop_daemon(h->daemon); /* closes every connection: the list empties */
    pthread_mutex_lock(&h->conns_lock);
    h->stopping = true;
    pthread_cond_signal(&h->reaper_wake);
    pthread_mutex_unlock(&h->conns_lock);
    if (h->reaper_started) pthread_join(h->reaper, NULL);
    pthread_cond_destroy(&h->reaper_wake);
    pthread_mutex_destroy(&h->conns_lock);
    for (char **o = h->cors; o && *o; o++) free(*o);
    free(h->cors);
    free(h);
}
