/* http.h: the libmicrohttpd glue: a daemon with an internal thread pool, request bodies
 * gathered up to a size limit, and reply helpers (JSON, error objects, static bytes).
 * Handlers see one complete pgd_request and answer it with exactly one pgd_reply_* call. */
#ifndef PGD_HTTP_H
#define PGD_HTTP_H

#include "paragon.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/* Larger request bodies are answered 413 without being kept. */
#define PGD_MAX_BODY (1024 * 1024)

/* A request body that goes somewhere other than memory (a dataset upload streams to a file,
 * hundreds of MB): made by the API when a request's headers arrive (pgd_sink_open), fed each
 * chunk as it comes, handed to the handler as req->sink, released when the request ends,
 * answered or not. PGD_MAX_BODY does not apply: a sink keeps its own limit. */
typedef struct pgd_sink pgd_sink;
struct pgd_sink {
    /* Takes the next chunk; false: keep nothing more (the sink knows why); the rest of the
     * body is read and dropped, then the handler answers. */
    bool (*write)(pgd_sink *sink, const char *data, size_t len);
    void (*release)(pgd_sink *sink);
    /* Set by the opener: answer before reading the body (a refusal known from the headers). */
    bool answer_now;
};

typedef struct pgd_request {
    struct MHD_Connection *conn;
    const char *method;
    const char *path; /* without the query string */
    const char *body; /* NUL-terminated; "" when there is none */
    size_t body_len;
    pgd_sink *sink; /* a streamed body (then body is ""), else NULL */
    /* CORS (--cors-origin): the request's Origin when it is one the server allows, else NULL;
     * vary_origin when any is configured (every answer then depends on Origin). */
    const char *allow_origin;
    bool vary_origin;
} pgd_request;

typedef enum MHD_Result (*pgd_handler)(void *ctx, const pgd_request *req);
/* Whether a request streams its body: a sink for it, or NULL to gather the body as usual. Called
 * once its headers are in (req has no body yet). */
typedef pgd_sink *(*pgd_sink_open)(void *ctx, const pgd_request *req);
/* The request-metrics slot of a path (metrics.h): which route pattern it falls under. */
typedef unsigned (*pgd_route_slot)(void *ctx, const char *path);

typedef struct pgd_http pgd_http;

/* What the listener holds at most. Each limit, the first time it is hit, is said once on
 * stderr; every refusal counts in /metrics (paragon_http_refused_total). */
typedef struct pgd_http_limits {
    unsigned max_connections;        /* beyond it, new connections are closed at once */
    unsigned max_connections_per_ip; /* the same for one client address */
    unsigned header_timeout_s;       /* a request's headers must arrive within it (counted from
                                        the connection's start or its previous request's end),
                                        or the connection is closed */
    /* The browser origins ("https://app.example:8443") whose pages may call the API (CORS),
     * NULL-terminated and copied; NULL: none, and no CORS header is ever sent. */
    const char *const *cors_origins;
} pgd_http_limits;

/* Listens on host:port (port 0 picks a free one) with `threads` worker threads and calls
 * handler for each complete request, counting it in the request metrics under slot(path);
 * sink_open (may be NULL) says which requests stream their bodies.
 * host is a numeric IPv4/IPv6 address or a name. The
 * process's open-file limit is raised to fit max_connections where the hard limit allows;
 * where it does not, max_connections is lowered to fit, and that is said on stderr. */
int pgd_http_start(const char *host, uint16_t port, unsigned threads,
                   const pgd_http_limits *limits, pgd_handler handler, pgd_route_slot slot,
                   pgd_sink_open sink_open, void *ctx, pgd_http **out, pgn_error *err);
/* The port actually bound. */
uint16_t pgd_http_port(const pgd_http *http);
/* Closes every connection and frees the daemon. */
void pgd_http_stop(pgd_http *http);

/* Query-string argument or request header; NULL when absent. */
const char *pgd_request_query(const pgd_request *req, const char *name);
const char *pgd_request_header(const pgd_request *req, const char *name);
/* Every value of a repeatable query argument ("?tag=a:1&tag=b:2"), in order, into out[0..max);
 * returns how many the query has, which may be more than max. */
size_t pgd_request_query_all(const pgd_request *req, const char *name, const char **out, size_t max);

/* Extra response headers: pairs of name and value, ended by a NULL name. */
typedef struct pgd_header {
    const char *name;
    const char *value;
} pgd_header;

/* Sends body (stolen: decref'd here) as application/json. */
enum MHD_Result pgd_reply_json(const pgd_request *req, unsigned status, json_t *body,
                               const pgd_header *headers);
/* The same from its text (malloc'd; taken): a 500 saying memory ran out when text is NULL. */
enum MHD_Result pgd_reply_json_text(const pgd_request *req, unsigned status, char *text,
                                    const pgd_header *headers);
/* Sends {"error":{"code","message","field"}} with the code's HTTP status (PGN_ERROR_CODES);
 * field NULL or "" gives null. */
enum MHD_Result pgd_reply_error(const pgd_request *req, pgn_error_code code, const char *field,
                                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same from an engine/store error, with extra members merged into the error object
 * (borrowed; may be NULL). */
enum MHD_Result pgd_reply_pgn_error(const pgd_request *req, const pgn_error *err,
                                    const json_t *extra, const pgd_header *headers);
/* Sends bytes that live as long as the process (embedded files). */
/* Sends text (malloc'd; taken) with its media type and extra headers. */
enum MHD_Result pgd_reply_text(const pgd_request *req, unsigned status, char *text, const char *content_type,
                               const pgd_header *headers);
enum MHD_Result pgd_reply_static(const pgd_request *req, unsigned status, const void *data,
                                 size_t len, const char *content_type);
/* Queues resp (the caller still destroys its reference) with what every answer carries: the CORS
 * headers for an allowed origin. Replies built outside the helpers above go through it. */
enum MHD_Result pgd_queue_response(const pgd_request *req, unsigned status, struct MHD_Response *resp);

/* CORS: what a preflight may ask for. The headers are those the API reads. */
#define PGD_CORS_METHODS "GET, HEAD, POST, PUT, DELETE"
#define PGD_CORS_HEADERS "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Content-SHA256, If-None-Match"
#define PGD_CORS_EXPOSE "Location, Retry-After"
/* How long a browser may keep a preflight's answer: ten minutes (Chromium keeps at most two
 * hours, Firefox a day), so a changed --cors-origin takes hold soon. */
#define PGD_CORS_MAX_AGE_S "600"
#define PGD_CORS_ORIGINS_MAX 16

#endif
