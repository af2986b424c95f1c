/* http_client.h: a small blocking HTTP/1.1 client over TCP to 127.0.0.1, for the integration
 * tests and the benchmarks. Every call is bounded by a timeout. One-shot requests send
 * "Connection: close"; an http_conn keeps one connection alive across requests.
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

#endif
