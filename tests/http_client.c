/* http_client.c: a blocking HTTP/1.1 client for tests and benchmarks (see http_client.h).
 * Each request has a deadline; every socket wait is a poll() bounded by what is left of it.
 * Responses are framed by Content-Length, chunked encoding, or the end of the connection. */
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct http_conn {
    int fd;
    int timeout_ms;
    /* Bytes read past the end of the previous response (pipelined data, if any). */
    char *pending;
    size_t pending_len;
};

static _Thread_local char last_error[256];

const char *http_last_error(void) { return last_error; }

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes. */
static int wait_fd(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) return fail("timed out");
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)left);
        if (rc > 0) return 0;
        if (rc < 0 && errno != EINTR) return fail("poll: %s", strerror(errno));
    }
}

static int send_all(int fd, const char *data, size_t len, int64_t deadline) {
    while (len) {
        if (wait_fd(fd, POLLOUT, deadline) < 0) return -1;
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return fail("send: %s", strerror(errno));
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- a growable byte buffer ------------------------------------------------------------- */

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static int buf_reserve(buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return fail("out of memory");
    b->data = d;
    b->cap = cap;
    return 0;
}

static int buf_append(buf *b, const void *data, size_t len) {
    if (buf_reserve(b, len) < 0) return -1;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

/* Reads more bytes into b; returns the count, 0 at end of stream, -1 on error. */
static ssize_t read_more(int fd, buf *b, int64_t deadline) {
    if (buf_reserve(b, 16384) < 0) return -1;
    for (;;) {
        if (wait_fd(fd, POLLIN, deadline) < 0) return -1;
        ssize_t n = recv(fd, b->data + b->len, b->cap - b->len - 1, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return fail("recv: %s", strerror(errno));
        b->len += (size_t)n;
        b->data[b->len] = 0;
        return n;
    }
}

/* ---- response parsing ------------------------------------------------------------------- */

static const char *find_header(const char *head, const char *name, size_t *len) {
    size_t nlen = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ' || *v == '\t') v++;
            const char *end = strstr(v, "\r\n");
            *len = end ? (size_t)(end - v) : strlen(v);
            while (*len && (v[*len - 1] == ' ' || v[*len - 1] == '\t')) (*len)--;
            return v;
        }
    }
    return NULL;
}

const char *http_header(const http_response *resp, const char *name, char *out, size_t cap) {
    size_t len;
    const char *v = resp->head ? find_header(resp->head, name, &len) : NULL;
    if (!v || cap == 0) return NULL;
    if (len >= cap) len = cap - 1;
    memcpy(out, v, len);
    out[len] = 0;
    return out;
}

void http_response_free(http_response *resp) {
    free(resp->head);
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

/* Decodes a chunked body held whole in src[0..len); *used is how much of src it took.
 * Returns 1 when complete, 0 when more input is needed, -1 when malformed. */
static int dechunk(const char *src, size_t len, buf *out, size_t *used) {
    size_t pos = 0;
    out->len = 0;
    for (;;) {
        const char *eol = memmem(src + pos, len - pos, "\r\n", 2);
        if (!eol) return 0;
        char *end;
        unsigned long long size = strtoull(src + pos, &end, 16);
        if (end == src + pos) return fail("bad chunk size");
        pos = (size_t)(eol - src) + 2;
        if (size == 0) {
            /* Trailers end with an empty line. */
            const char *fin = memmem(src + pos - 2, len - pos + 2, "\r\n\r\n", 4);
            if (!fin) return 0;
            *used = (size_t)(fin - src) + 4;
            return 1;
        }
        if (len - pos < size + 2) return 0;
        if (buf_append(out, src + pos, (size_t)size) < 0) return -1;
        pos += (size_t)size + 2;
    }
}

/* Reads one response from fd; in holds bytes already received and keeps what follows. */
static int read_response(int fd, buf *in, bool head_request, int64_t deadline,
                         http_response *out, bool *closed) {
    memset(out, 0, sizeof *out);
    *closed = false;
    for (;;) {
        char *end;
        while (!(end = in->data ? strstr(in->data, "\r\n\r\n") : NULL)) {
            ssize_t n = read_more(fd, in, deadline);
            if (n < 0) return -1;
            if (n == 0) return fail("connection closed before a response");
        }
        size_t head_len = (size_t)(end - in->data) + 4;
        int status = 0;
        if (sscanf(in->data, "HTTP/1.%*d %d", &status) != 1 || status < 100)
            return fail("malformed status line");
        if (status >= 100 && status < 200) { /* interim (100 Continue): skip it */
            memmove(in->data, in->data + head_len, in->len - head_len + 1);
            in->len -= head_len;
            continue;
        }
        out->status = status;
        out->head = strndup(in->data, head_len - 2);
        if (!out->head) return fail("out of memory");
        memmove(in->data, in->data + head_len, in->len - head_len + 1);
        in->len -= head_len;
        break;
    }

    size_t vlen;
    const char *te = find_header(out->head, "Transfer-Encoding", &vlen);
    const char *cl = find_header(out->head, "Content-Length", &vlen);
    const char *conn = find_header(out->head, "Connection", &vlen);
    if (conn && strncasecmp(conn, "close", 5) == 0) *closed = true;
    buf body = {0};
    int rc = 0;
    if (head_request || out->status == 204 || out->status == 304) {
        /* no body */
    } else if (te && strncasecmp(te, "chunked", 7) == 0) {
        size_t used = 0;
        int done;
        while ((done = dechunk(in->data ? in->data : "", in->len, &body, &used)) == 0) {
            ssize_t n = read_more(fd, in, deadline);
            if (n <= 0) {
                rc = n < 0 ? -1 : fail("connection closed inside a chunked body");
                break;
            }
        }
        if (done < 0) rc = -1;
        if (done == 1) {
            memmove(in->data, in->data + used, in->len - used + 1);
            in->len -= used;
        }
    } else if (cl) {
        size_t want = (size_t)strtoull(cl, NULL, 10);
        while (in->len < want) {
            ssize_t n = read_more(fd, in, deadline);
            if (n <= 0) {
                rc = n < 0 ? -1 : fail("connection closed after %zu of %zu body bytes", in->len,
                                       want);
                break;
            }
        }
        if (rc == 0) {
            rc = buf_append(&body, in->data ? in->data : "", want);
            if (rc == 0) {
                memmove(in->data, in->data + want, in->len - want + 1);
                in->len -= want;
            }
        }
    } else {
        /* Framed by the end of the connection. */
        ssize_t n;
        while ((n = read_more(fd, in, deadline)) > 0) {
        }
        if (n < 0) rc = -1;
        else rc = buf_append(&body, in->data ? in->data : "", in->len);
        in->len = 0;
        *closed = true;
    }
    if (rc == 0 && !body.data) rc = buf_append(&body, "", 0);
    if (rc < 0) {
        free(body.data);
        http_response_free(out);
        return -1;
    }
    out->body = body.data;
    out->body_len = body.len;
    return 0;
}

/* ---- requests --------------------------------------------------------------------------- */

static int connect_local(uint16_t port, int64_t deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail("socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        if (errno != EINPROGRESS) {
            fail("connect to port %u: %s", (unsigned)port, strerror(errno));
            close(fd);
            return -1;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (wait_fd(fd, POLLOUT, deadline) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            if (err) fail("connect to port %u: %s", (unsigned)port, strerror(err));
            close(fd);
            return -1;
        }
    }
    return fd;
}

static int format_request(buf *req, const char *method, const char *path,
                          const char *const *headers, const char *body, size_t body_len,
                          bool close_after) {
    char line[512];
    int n = snprintf(line, sizeof line, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path);
    if (n < 0 || (size_t)n >= sizeof line) return fail("request line too long");
    if (buf_append(req, line, (size_t)n) < 0) return -1;
    for (const char *const *h = headers; h && *h; h++)
        if (buf_append(req, *h, strlen(*h)) < 0 || buf_append(req, "\r\n", 2) < 0) return -1;
    if (body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        n = snprintf(line, sizeof line, "Content-Length: %zu\r\n", body ? body_len : 0);
        if (buf_append(req, line, (size_t)n) < 0) return -1;
    }
    if (close_after && buf_append(req, "Connection: close\r\n", 19) < 0) return -1;
    if (buf_append(req, "\r\n", 2) < 0) return -1;
    if (body && body_len && buf_append(req, body, body_len) < 0) return -1;
    return 0;
}

static int exchange(int fd, const char *data, size_t len, bool head_request, int64_t deadline,
                    buf *in, http_response *out, bool *closed) {
    /* A server may answer (413) and stop reading before the whole body is sent: a failed
     * send is not the end if a response arrives. */
    int sent = send_all(fd, data, len, deadline);
    char why[sizeof last_error];
    snprintf(why, sizeof why, "%s", last_error);
    if (read_response(fd, in, head_request, deadline, out, closed) == 0) return 0;
    if (sent < 0) snprintf(last_error, sizeof last_error, "%s", why);
    return -1;
}

int http_raw(uint16_t port, const char *data, size_t len, int timeout_ms, http_response *out) {
    memset(out, 0, sizeof *out);
    int64_t deadline = now_ms() + timeout_ms;
    int fd = connect_local(port, deadline);
    if (fd < 0) return -1;
    buf in = {0};
    bool closed;
    int rc = exchange(fd, data, len, false, deadline, &in, out, &closed);
    free(in.data);
    close(fd);
    return rc;
}

int http_request(uint16_t port, const char *method, const char *path,
                 const char *const *headers, const char *body, size_t body_len, int timeout_ms,
                 http_response *out) {
    memset(out, 0, sizeof *out);
    buf req = {0};
    if (format_request(&req, method, path, headers, body, body_len, true) < 0) {
        free(req.data);
        return -1;
    }
    int64_t deadline = now_ms() + timeout_ms;
    int fd = connect_local(port, deadline);
    if (fd < 0) {
        free(req.data);
        return -1;
    }
    buf in = {0};
    bool closed;
    int rc = exchange(fd, req.data, req.len, strcmp(method, "HEAD") == 0, deadline, &in, out,
                      &closed);
    free(in.data);
    free(req.data);
    close(fd);
    return rc;
}

http_conn *http_connect(uint16_t port, int timeout_ms) {
    int fd = connect_local(port, now_ms() + timeout_ms);
    if (fd < 0) return NULL;
    http_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        fail("out of memory");
        return NULL;
    }
    c->fd = fd;
    c->timeout_ms = timeout_ms;
    return c;
}

int http_conn_request(http_conn *c, const char *method, const char *path,
                      const char *const *headers, const char *body, size_t body_len,
                      http_response *out) {
    memset(out, 0, sizeof *out);
    if (c->fd < 0) return fail("connection already closed");
    buf req = {0};
    if (format_request(&req, method, path, headers, body, body_len, false) < 0) {
        free(req.data);
        return -1;
    }
    buf in = {.data = c->pending, .len = c->pending_len, .cap = c->pending_len + 1};
    c->pending = NULL;
    c->pending_len = 0;
    bool closed = false;
    int rc = exchange(c->fd, req.data, req.len, strcmp(method, "HEAD") == 0,
                      now_ms() + c->timeout_ms, &in, out, &closed);
    free(req.data);
    if (rc == 0 && !closed && in.len) {
        c->pending = in.data;
        c->pending_len = in.len;
    } else {
        free(in.data);
    }
    if (rc < 0 || closed) {
        close(c->fd);
        c->fd = -1;
    }
    return rc;
}

void http_close(http_conn *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->pending);
    free(c);
}

/* ---- streamed responses ----------------------------------------------------------------- */

struct http_stream {
    int fd;
    http_response head;
    buf raw;  /* bytes received and not decoded yet */
    buf body; /* decoded body bytes not consumed yet */
    bool chunked, sized, done;
    size_t left;       /* sized: body bytes still to come; chunked: of the current chunk */
    bool chunk_crlf;   /* chunked: the CRLF after a chunk's data is due */
};

http_stream *http_stream_open(uint16_t port, const char *path, const char *const *headers,
                              int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    buf req = {0};
    if (format_request(&req, "GET", path, headers, NULL, 0, false) < 0) {
        free(req.data);
        return NULL;
    }
    int fd = connect_local(port, deadline);
    if (fd < 0 || send_all(fd, req.data, req.len, deadline) < 0) {
        if (fd >= 0) close(fd);
        free(req.data);
        return NULL;
    }
    free(req.data);
    http_stream *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        fail("out of memory");
        return NULL;
    }
    s->fd = fd;
    char *end;
    while (!(end = s->raw.data ? strstr(s->raw.data, "\r\n\r\n") : NULL)) {
        ssize_t n = read_more(fd, &s->raw, deadline);
        if (n <= 0) {
            if (n == 0) fail("connection closed before a response");
            http_stream_close(s);
            return NULL;
        }
    }
    size_t head_len = (size_t)(end - s->raw.data) + 4;
    if (sscanf(s->raw.data, "HTTP/1.%*d %d", &s->head.status) != 1) {
        fail("malformed status line");
        http_stream_close(s);
        return NULL;
    }
    s->head.head = strndup(s->raw.data, head_len - 2);
    memmove(s->raw.data, s->raw.data + head_len, s->raw.len - head_len + 1);
    s->raw.len -= head_len;
    size_t vlen;
    const char *te = find_header(s->head.head, "Transfer-Encoding", &vlen);
    const char *cl = find_header(s->head.head, "Content-Length", &vlen);
    s->chunked = te && strncasecmp(te, "chunked", 7) == 0;
    s->sized = !s->chunked && cl;
    if (s->sized) s->left = (size_t)strtoull(cl, NULL, 10);
    if (buf_append(&s->body, "", 0) < 0) {
        http_stream_close(s);
        return NULL;
    }
    return s;
}

const http_response *http_stream_head(const http_stream *s) { return &s->head; }

/* Moves what s->raw holds of the body into s->body; -1 when the framing is broken. */
static int stream_decode(http_stream *s) {
    size_t pos = 0;
    while (!s->done && pos < s->raw.len) {
        if (!s->chunked) {
            size_t n = s->raw.len - pos;
            if (s->sized && n > s->left) n = s->left;
            if (buf_append(&s->body, s->raw.data + pos, n) < 0) return -1;
            pos += n;
            if (s->sized && (s->left -= n) == 0) s->done = true;
        } else if (s->left) {
            size_t n = s->raw.len - pos < s->left ? s->raw.len - pos : s->left;
            if (buf_append(&s->body, s->raw.data + pos, n) < 0) return -1;
            pos += n;
            s->left -= n;
            s->chunk_crlf = s->left == 0;
        } else if (s->chunk_crlf) {
            if (s->raw.len - pos < 2) break;
            if (memcmp(s->raw.data + pos, "\r\n", 2) != 0) return fail("bad chunk end");
            pos += 2;
            s->chunk_crlf = false;
        } else {
            const char *eol = memmem(s->raw.data + pos, s->raw.len - pos, "\r\n", 2);
            if (!eol) break;
            char *end;
            unsigned long long size = strtoull(s->raw.data + pos, &end, 16);
            if (end == s->raw.data + pos) return fail("bad chunk size");
            pos = (size_t)(eol - s->raw.data) + 2;
            if (size == 0) s->done = true; /* trailers, if any, are not read */
            s->left = (size_t)size;
        }
    }
    memmove(s->raw.data, s->raw.data + pos, s->raw.len - pos + 1);
    s->raw.len -= pos;
    return 0;
}

int http_stream_read(http_stream *s, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    size_t before = s->body.len;
    for (;;) {
        if (s->raw.len && stream_decode(s) < 0) return -1;
        if (s->body.len > before) return (int)(s->body.len - before);
        if (s->done) return 0;
        ssize_t n = read_more(s->fd, &s->raw, deadline);
        if (n < 0) return -1;
        if (n == 0) {
            if (s->chunked || s->sized) return fail("connection closed inside the body");
            s->done = true;
            return 0;
        }
    }
}

const char *http_stream_data(const http_stream *s, size_t *len) {
    *len = s->body.len;
    return s->body.data;
}

void http_stream_consume(http_stream *s, size_t n) {
    if (n > s->body.len) n = s->body.len;
    memmove(s->body.data, s->body.data + n, s->body.len - n + 1);
    s->body.len -= n;
}

void http_stream_close(http_stream *s) {
    if (!s) return;
    close(s->fd);
    http_response_free(&s->head);
    free(s->raw.data);
    free(s->body.data);
    free(s);
}
