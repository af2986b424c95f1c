/* http_client.h: a small blocking HTTP/1.1 client to 127.0.0.1 on libcurl, for the integration
 * tests. Every call is bounded by a timeout. One-shot requests send "Connection: close"; an
 * http_conn keeps one connection alive across requests. A request carries the caller's headers
 * and Host, with libcurl's Accept, Expect and form Content-Type left out.
 * Calls return 0 on success, -1 on failure with the reason in http_last_error(). */
#ifndef PGN_TEST_HTTP_CLIENT_H
#define PGN_TEST_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct http_response {
    int status;      /* e.g. 200 */
    char *head;      /* status line and headers as received, NUL-terminated */
    char *body;      /* NUL-terminated (chunked bodies are decoded) */
    size_t body_len;
} http_response;

/* headers: "Name: value" strings ended by NULL, or NULL for none. body may be NULL. */
int http_request(uint16_t port, const char *method, const char *path,
                 const char *const *headers, const char *body, size_t body_len, int timeout_ms,
                 http_response *out);

/* Sends data verbatim (a hand-written request) and reads one response. */
int http_raw(uint16_t port, const char *data, size_t len, int timeout_ms, http_response *out);

/* A keep-alive connection: requests on it reuse one socket. */
typedef struct http_conn http_conn;
http_conn *http_connect(uint16_t port, int timeout_ms);
int http_conn_request(http_conn *conn, const char *method, const char *path,
                      const char *const *headers, const char *body, size_t body_len,
                      http_response *out);
void http_close(http_conn *conn);

/* Copies the value of header name (case-insensitive) into buf; NULL when absent. */
const char *http_header(const http_response *resp, const char *name, char *buf, size_t cap);

void http_response_free(http_response *resp);

/* Why the last call on this thread failed. */
const char *http_last_error(void);

/* A streamed GET (Server-Sent Events): http_stream_open sends the request and reads the head;
 * the body then arrives piece by piece through http_stream_read, chunked encoding decoded.
 * headers as http_request's. NULL on failure. */
typedef struct http_stream http_stream;
http_stream *http_stream_open(uint16_t port, const char *path, const char *const *headers,
                              int timeout_ms);
/* The response head: status code and headers. */
const http_response *http_stream_head(const http_stream *s);
/* Waits up to timeout_ms for more body bytes: the count added (> 0), 0 at the end of the body,
 * -1 on error or timeout. */
int http_stream_read(http_stream *s, int timeout_ms);
/* Body bytes received and not consumed yet (NUL-terminated); consume drops the first n. */
const char *http_stream_data(const http_stream *s, size_t *len);
void http_stream_consume(http_stream *s, size_t n);
/* Closes the connection, mid-body or not, and frees the stream. */
void http_stream_close(http_stream *s);

#endif
