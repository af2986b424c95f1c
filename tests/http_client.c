/* http_client.c: the tests' HTTP client (see http_client.h) on libcurl, which frames responses
 * (Content-Length, chunked, the end of the connection), skips interim 100s and keeps connections
 * alive; this file only adapts it to the tests' calls. http_raw alone writes to a socket itself,
 * since its requests are malformed on purpose and libcurl would not send them. */
#include "http_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char last_error[CURL_ERROR_SIZE + 64];

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

/* ---- a growable byte buffer, always NUL-terminated ---------------------------------------- */

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static int buf_append(buf *b, const void *data, size_t len) {
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return fail("out of memory");
        b->data = d;
        b->cap = cap;
    }
    if (len) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

/* ---- headers of a response ---------------------------------------------------------------- */

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

/* ---- one transfer ------------------------------------------------------------------------- */

/* What libcurl's callbacks fill: the head of the final response (an interim 100's is dropped
 * when the next status line comes), the body as it arrives. */
typedef struct transfer {
    buf head, body;
    int status;
    bool head_done; /* the final response's head is complete */
    bool oom;
} transfer;

static size_t on_header(char *data, size_t size, size_t n, void *ctx) {
    transfer *t = ctx;
    size_t len = size * n;
    bool status_line = len >= 5 && !memcmp(data, "HTTP/", 5);
    if (t->head_done && !status_line) return len; /* trailers: the head is what came before */
    if (status_line) { /* a new response's head */
        t->head.len = 0;
        t->head_done = false;
        if (sscanf(data, "HTTP/%*s %d", &t->status) != 1) t->status = 0;
    }
    if (len == 2 && !memcmp(data, "\r\n", 2)) { /* the end of a head */
        t->head_done = t->status >= 200;
        return len;
    }
    if (buf_append(&t->head, data, len) < 0) t->oom = true;
    return t->oom ? 0 : len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
    transfer *t = ctx;
    if (buf_append(&t->body, data, size * n) < 0) t->oom = true;
    return t->oom ? 0 : size * n;
}

static bool has_header(const char *const *headers, const char *name) {
    size_t n = strlen(name);
    for (const char *const *h = headers; h && *h; h++)
        if (!strncasecmp(*h, name, n) && (*h)[n] == ':') return true;
    return false;
}

/* The request's headers as libcurl takes them: the caller's, with libcurl's own Accept, Expect
 * (a 100-continue wait before large bodies) and form Content-Type left out unless the caller
 * sets them, so that a request carries what the test wrote and nothing else of note. */
static struct curl_slist *header_list(const char *const *headers, bool close_after) {
    struct curl_slist *list = NULL;
    for (const char *const *h = headers; h && *h; h++) list = curl_slist_append(list, *h);
    if (!has_header(headers, "Accept")) list = curl_slist_append(list, "Accept:");
    if (!has_header(headers, "Expect")) list = curl_slist_append(list, "Expect:");
    if (!has_header(headers, "Content-Type")) list = curl_slist_append(list, "Content-Type:");
    if (close_after && !has_header(headers, "Connection")) list = curl_slist_append(list, "Connection: close");
    return list;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Sets c up for method path on 127.0.0.1:port; body (may be NULL) goes with POST and PUT, as
 * Content-Length 0 when NULL, and with any other method when given. */
static void setup(CURL *c, uint16_t port, const char *method, const char *path, struct curl_slist *headers,
                  const char *body, size_t body_len, transfer *t, char *errbuf) {
    char url[2048];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", (unsigned)port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* the tests' paths as written: no ../ folding */
    bool head = !strcmp(method, "HEAD");
    curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
    if (body || !strcmp(method, "POST") || !strcmp(method, "PUT")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    } else if (!head) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, head || !strcmp(method, "GET") ? NULL : method);
}

/* Runs one request on c and moves the response into out. */
static int perform(CURL *c, uint16_t port, const char *method, const char *path, const char *const *headers,
                   const char *body, size_t body_len, int timeout_ms, bool close_after, http_response *out) {
    memset(out, 0, sizeof *out);
    pthread_once(&curl_once, curl_start);
    transfer t = {0};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *list = header_list(headers, close_after);
    setup(c, port, method, path, list, body, body_len, &t, errbuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, close_after ? 1L : 0L);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(list);
    /* A server may answer (413) and stop reading before the whole body is sent: a failed send is
     * not the end when a whole response came. */
    bool answered = t.head_done && (rc == CURLE_OK || rc == CURLE_SEND_ERROR);
    if (!answered || t.oom || buf_append(&t.body, "", 0) < 0) {
        free(t.head.data);
        free(t.body.data);
        if (t.oom) return fail("out of memory");
        return fail("%s %s: %s", method, path, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    }
    out->status = t.status;
    out->head = t.head.data;
    out->body = t.body.data;
    out->body_len = t.body.len;
    return 0;
}

int http_request(uint16_t port, const char *method, const char *path, const char *const *headers,
                 const char *body, size_t body_len, int timeout_ms, http_response *out) {
    pthread_once(&curl_once, curl_start);
    CURL *c = curl_easy_init();
    if (!c) {
        memset(out, 0, sizeof *out);
        return fail("cannot start libcurl");
    }
    int rc = perform(c, port, method, path, headers, body, body_len, timeout_ms, true, out);
    curl_easy_cleanup(c);
    return rc;
}

/* ---- keep-alive connections: one libcurl handle, which keeps its connection open ---------- */

struct http_conn {
    CURL *curl;
    uint16_t port;
    int timeout_ms;
};

http_conn *http_connect(uint16_t port, int timeout_ms) {
    pthread_once(&curl_once, curl_start);
    http_conn *c = calloc(1, sizeof *c);
    if (!c || !(c->curl = curl_easy_init())) {
        free(c);
        fail("cannot start libcurl");
        return NULL;
    }
    c->port = port; /* the connection opens with the first request and stays for the next */
    c->timeout_ms = timeout_ms;
    return c;
}

int http_conn_request(http_conn *c, const char *method, const char *path, const char *const *headers,
                      const char *body, size_t body_len, http_response *out) {
    return perform(c->curl, c->port, method, path, headers, body, body_len, c->timeout_ms, false, out);
}

void http_close(http_conn *c) {
    if (!c) return;
    if (c->curl) curl_easy_cleanup(c->curl);
    free(c);
}

/* ---- http_raw: bytes as given, one response read back -------------------------------------- */

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

/* Reads into in until it holds a whole response framed by Content-Length (what paragond's
 * refusals carry) or the connection ends; *head_len is the head's length with its blank line. */
static int read_raw_response(int fd, buf *in, int64_t deadline, size_t *head_len) {
    for (;;) {
        const char *end = in->data ? strstr(in->data, "\r\n\r\n") : NULL;
        if (end) {
            *head_len = (size_t)(end - in->data) + 4;
            size_t vlen;
            const char *cl = find_header(in->data, "Content-Length", &vlen);
            if (cl && in->len - *head_len >= (size_t)strtoull(cl, NULL, 10)) return 0;
        }
        char chunk[16384];
        if (wait_fd(fd, POLLIN, deadline) < 0) return -1;
        ssize_t n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return fail("recv: %s", strerror(errno));
        if (n == 0) return end ? 0 : fail("connection closed before a response");
        if (buf_append(in, chunk, (size_t)n) < 0) return -1;
    }
}

int http_raw(uint16_t port, const char *data, size_t len, int timeout_ms, http_response *out) {
    memset(out, 0, sizeof *out);
    int64_t deadline = now_ms() + timeout_ms;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail("socket: %s", strerror(errno));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(fd);
        return fail("connect to port %u: %s", (unsigned)port, strerror(errno));
    }
    /* A server may answer and stop reading before all is sent: a failed send is not the end. */
    for (size_t sent = 0; sent < len;) {
        ssize_t n = send(fd, data + sent, len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        sent += (size_t)n;
    }
    buf in = {0};
    size_t head_len = 0;
    int rc = read_raw_response(fd, &in, deadline, &head_len);
    close(fd);
    if (rc == 0 && sscanf(in.data, "HTTP/1.%*d %d", &out->status) != 1) rc = fail("malformed status line");
    if (rc == 0) {
        out->head = strndup(in.data, head_len - 2);
        buf body = {0};
        if (!out->head || buf_append(&body, in.data + head_len, in.len - head_len) < 0) {
            rc = fail("out of memory");
            free(body.data);
            http_response_free(out);
        } else {
            out->body = body.data;
            out->body_len = body.len;
        }
    }
    free(in.data);
    return rc;
}

/* ---- streamed responses: a libcurl multi handle driven as the caller reads ---------------- */

struct http_stream {
    CURLM *multi;
    CURL *curl;
    struct curl_slist *headers;
    transfer t;        /* t.body: decoded body bytes not consumed yet */
    http_response head;
    bool done;         /* the transfer ended */
    CURLcode result;
    char errbuf[CURL_ERROR_SIZE];
};

/* Lets libcurl move what has come; the transfer's end sets s->done. */
static int stream_perform(http_stream *s) {
    int running;
    if (curl_multi_perform(s->multi, &running) != CURLM_OK) return fail("libcurl multi failed");
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(s->multi, &left)))
        if (m->msg == CURLMSG_DONE) {
            s->done = true;
            s->result = m->data.result;
        }
    return 0;
}

/* Waits up to timeout_ms for the connection to have something for libcurl, then lets it move
 * that: a wait only when the last perform left nothing to take. */
static int stream_pump(http_stream *s, int timeout_ms) {
    if (curl_multi_poll(s->multi, NULL, 0, timeout_ms, NULL) != CURLM_OK) return fail("libcurl poll failed");
    return stream_perform(s);
}

http_stream *http_stream_open(uint16_t port, const char *path, const char *const *headers, int timeout_ms) {
    pthread_once(&curl_once, curl_start);
    http_stream *s = calloc(1, sizeof *s);
    if (!s || !(s->multi = curl_multi_init()) || !(s->curl = curl_easy_init())) {
        fail("cannot start libcurl");
        http_stream_close(s);
        return NULL;
    }
    s->headers = header_list(headers, false);
    setup(s->curl, port, "GET", path, s->headers, NULL, 0, &s->t, s->errbuf);
    curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_multi_add_handle(s->multi, s->curl);
    int64_t deadline = now_ms() + timeout_ms;
    if (stream_perform(s) < 0) {
        http_stream_close(s);
        return NULL;
    }
    while (!s->t.head_done && !s->done) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            fail("GET %s: no response head in %d ms", path, timeout_ms);
            http_stream_close(s);
            return NULL;
        }
        if (stream_pump(s, (int)left) < 0) {
            http_stream_close(s);
            return NULL;
        }
    }
    if (!s->t.head_done || s->t.oom || buf_append(&s->t.body, "", 0) < 0) {
        fail("GET %s: %s", path, s->errbuf[0] ? s->errbuf : curl_easy_strerror(s->result));
        http_stream_close(s);
        return NULL;
    }
    s->head.status = s->t.status;
    s->head.head = s->t.head.data; /* owned by t; freed with it */
    return s;
}

const http_response *http_stream_head(const http_stream *s) { return &s->head; }

int http_stream_read(http_stream *s, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    size_t before = s->t.body.len;
    for (;;) {
        if (s->t.oom) return fail("out of memory");
        if (s->t.body.len > before) return (int)(s->t.body.len - before);
        if (s->done)
            return s->result == CURLE_OK ? 0 : fail("%s", s->errbuf[0] ? s->errbuf : curl_easy_strerror(s->result));
        int64_t left = deadline - now_ms();
        if (left <= 0) return fail("timed out");
        if (stream_pump(s, (int)left) < 0) return -1;
    }
}

const char *http_stream_data(const http_stream *s, size_t *len) {
    *len = s->t.body.len;
    return s->t.body.data;
}

void http_stream_consume(http_stream *s, size_t n) {
    if (n > s->t.body.len) n = s->t.body.len;
    memmove(s->t.body.data, s->t.body.data + n, s->t.body.len - n + 1);
    s->t.body.len -= n;
}

void http_stream_close(http_stream *s) {
    if (!s) return;
    if (s->curl) {
        if (s->multi) curl_multi_remove_handle(s->multi, s->curl);
        curl_easy_cleanup(s->curl);
    }
    if (s->multi) curl_multi_cleanup(s->multi);
    curl_slist_free_all(s->headers);
    free(s->t.head.data);
    free(s->t.body.data);
    free(s);
}
