/* http.c: requests to paragond over libcurl for the client commands (client_jobs.c,
 * client_files.c, generate.c --job): the server's address and token, JSON calls, downloads and
 * Server-Sent Events streams. One CURL handle per command, so that its requests share a
 * connection. */
#include "http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "paragon.h"

/* A request without a stream: paragond answers within its own limits, so a minute without
 * completion means it is wedged or the address is wrong. */
#define REQUEST_TIMEOUT_S 60L
#define CONNECT_TIMEOUT_S 10L
/* A stream is pinged every PGD_EVENTS_PING_S (15 s): a minute of silence is a dead connection. */
#define STREAM_SILENCE_S 60L

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

void cli_catch_interrupt(void) {
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

bool cli_interrupted(void) { return interrupted != 0; }

int cli_exit_for(long status) { return status ? CLI_EXIT_FAILED : CLI_EXIT_UNREACHABLE; }

bool cli_job_id(const char *cmd, const char *text, long long *id) {
    char *end;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (!text || errno || end == text || *end || v < 1) {
        fprintf(stderr, "%s: '%s' is not a job id (a positive integer, as `paragon jobs` lists)\n", cmd,
                text ? text : "");
        return false;
    }
    *id = v;
    return true;
}

void cli_query_add(cli_server *s, pgn_text *path, const char *name, const char *value) {
    if (!value) return;
    char *escaped = curl_easy_escape(s->curl, value, 0);
    pgn_text_printf(path, "%c%s=%s", path->data && strchr(path->data, '?') ? '&' : '?', name,
                    escaped ? escaped : "");
    if (!escaped) path->oom = true;
    curl_free(escaped);
}

/* The token in a file: its first line, spaces trimmed. */
static int read_token(cli_server *s, const char *file, bool required) {
    size_t len = 0;
    char *text = pgn_read_file(file, &len);
    if (!text) {
        if (!required) return 0;
        fprintf(stderr, "%s: --token-file: cannot read '%s': %s\n", s->cmd, file, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    char *p = text;
    while (*p && isspace((unsigned char)*p)) p++;
    size_t n = strcspn(p, "\r\n");
    while (n && isspace((unsigned char)p[n - 1])) n--;
    if (n >= sizeof s->token) {
        fprintf(stderr, "%s: the token in '%s' is longer than %zu characters\n", s->cmd, file,
                sizeof s->token - 1);
        free(text);
        return CLI_EXIT_USAGE;
    }
    memcpy(s->token, p, n);
    s->token[n] = 0;
    free(text);
    return 0;
}

int cli_server_open(cli_server *s, const char *cmd, const char *url, const char *token_file) {
    memset(s, 0, sizeof *s);
    s->cmd = cmd;
    const char *env_url = getenv("PARAGON_URL");
    const char *from = url ? "--url" : env_url && *env_url ? "PARAGON_URL" : NULL;
    if (!url) url = env_url && *env_url ? env_url : CLI_DEFAULT_URL;
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
        fprintf(stderr, "%s: %s: '%s' is not an http:// or https:// URL\n", cmd, from ? from : "url", url);
        return CLI_EXIT_USAGE;
    }
    size_t n = strlen(url);
    while (n > 8 && url[n - 1] == '/') n--;
    if (n >= sizeof s->url) {
        fprintf(stderr, "%s: the URL is longer than %zu characters\n", cmd, sizeof s->url - 1);
        return CLI_EXIT_USAGE;
    }
    memcpy(s->url, url, n);
    s->url[n] = 0;

    /* the token itself, else a file named for it (the curl scripts' PARAGON_TOKEN_FILE) */
    const char *env_token = getenv("PARAGON_TOKEN"), *env_file = getenv("PARAGON_TOKEN_FILE");
    int rc = 0;
    if (token_file)
        rc = read_token(s, token_file, true);
    else if (env_token && *env_token)
        snprintf(s->token, sizeof s->token, "%s", env_token);
    else if (env_file && *env_file)
        rc = read_token(s, env_file, true);
    else
        rc = read_token(s, CLI_DEFAULT_TOKEN_FILE, false);
    if (rc) return rc;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(s->curl = curl_easy_init())) {
        fprintf(stderr, "%s: cannot start libcurl\n", cmd);
        return CLI_EXIT_FAILED;
    }
    return 0;
}

void cli_server_close(cli_server *s) {
    if (s->side) curl_easy_cleanup(s->side);
    s->side = NULL;
    if (s->curl) {
        curl_easy_cleanup(s->curl);
        curl_global_cleanup();
    }
    s->curl = NULL;
}

/* ---- one transfer ----------------------------------------------------------------------- */

/* What a transfer's write callback does with the body: keep it (JSON, text, an error), write it
 * to a file, or cut it into event frames. An error status is always kept, to print. */
typedef struct transfer {
    cli_server *s;
    CURL *curl;         /* the server's handle, or its side one while a stream holds that */
    pgn_text body;      /* the body kept, or the bytes of a frame not complete yet */
    long status;        /* known from the first body byte on */
    FILE *file;         /* download: where a 2xx body goes */
    size_t written;
    cli_event_fn on_event; /* stream: each frame */
    void *ctx;
    bool done;           /* the reader said done: the transfer was cut on purpose */
    FILE *upload;        /* upload: the body, read to its end */
    long long upload_size;
    const char *const *headers; /* more request headers ("Name: value"), NULL-ended; or NULL */
} transfer;

static bool ok_status(long status) { return status >= 200 && status < 300; }

/* Hands every complete frame ("...\n\n") in t->body to the reader; keeps the rest. */
static void take_frames(transfer *t) {
    char *buf = t->body.data;
    size_t start = 0;
    for (;;) {
        char *end = strstr(buf + start, "\n\n");
        if (!end) break;
        *end = 0;
        const char *name = "message", *id = "";
        pgn_text data = {0};
        bool any_data = false;
        for (char *line = buf + start; line && *line;) {
            char *next = strchr(line, '\n');
            if (next) *next++ = 0;
            if (line[0] == ':') { /* a comment: paragond's pings */
            } else if (!strncmp(line, "event:", 6)) {
                name = line + 6 + (line[6] == ' ');
            } else if (!strncmp(line, "id:", 3)) {
                id = line + 3 + (line[3] == ' ');
            } else if (!strncmp(line, "data:", 5)) {
                if (any_data) pgn_text_put(&data, "\n", 1);
                pgn_text_puts(&data, line + 5 + (line[5] == ' '));
                any_data = true;
            }
            line = next;
        }
        start = (size_t)(end - buf) + 2;
        char *text = any_data ? pgn_text_take(&data) : NULL;
        free(data.data);
        if (text) {
            cli_event ev = {name, text, id};
            if (t->on_event(t->ctx, &ev) == CLI_STREAM_DONE) t->done = true;
            free(text);
        }
        if (t->done) break;
    }
    memmove(buf, buf + start, t->body.len - start + 1);
    t->body.len -= start;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg) {
    transfer *t = arg;
    size_t len = size * n;
    if (!t->status) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (ok_status(t->status) && t->file) {
        if (fwrite(data, 1, len, t->file) != len) return 0;
        t->written += len;
        return len;
    }
    pgn_text_put(&t->body, data, len);
    if (t->body.oom) return 0;
    if (ok_status(t->status) && t->on_event) {
        take_frames(t);
        if (t->done) return 0; /* cuts the transfer: CURLE_WRITE_ERROR, expected */
    }
    return len;
}

static int on_xfer(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)arg, (void)a, (void)b, (void)c, (void)d;
    return interrupted != 0; /* non-zero aborts the transfer */
}

/* Prints the server's error for a non-2xx answer: its message, else the status and body. */
static void print_error(const transfer *t) {
    json_t *root = t->body.data ? json_loads(t->body.data, 0, NULL) : NULL;
    json_t *e = json_object_get(root, "error");
    const char *message = json_string_value(json_object_get(e, "message"));
    const char *code = json_string_value(json_object_get(e, "code"));
    char *shown = message ? pgn_text_visible(message) : NULL; /* it may quote what was sent */
    if (message)
        fprintf(stderr, "%s: %s (%s, HTTP %ld)\n", t->s->cmd, shown ? shown : "", code ? code : "error", t->status);
    else if (t->status == 401)
        fprintf(stderr, "%s: HTTP 401: the server asks for the API token (--token-file FILE or "
                        "PARAGON_TOKEN; paragond writes it to <data-dir>/token)\n", t->s->cmd);
    else
        fprintf(stderr, "%s: HTTP %ld%s%.200s\n", t->s->cmd, t->status, t->body.len ? ": " : "",
                t->body.data ? t->body.data : "");
    free(shown);
    json_decref(root);
}

/* Runs one transfer; on failure prints why and returns -1 (-2: interrupted). */
static int perform(transfer *t, const char *method, const char *path, const json_t *body,
                   const char *last_id, bool stream) {
    cli_server *s = t->s;
    if (s->streaming && !s->side && !(s->side = curl_easy_init())) {
        fprintf(stderr, "%s: cannot start libcurl\n", s->cmd);
        return -1;
    }
    CURL *c = t->curl = s->streaming ? s->side : s->curl;
    curl_easy_reset(c);
    char url[2048], auth[600], last[128];
    snprintf(url, sizeof url, "%s%s", s->url, path);
    char *json = body ? pgn_json_dumps(body) : NULL;
    struct curl_slist *headers = NULL;
    if (s->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
        headers = curl_slist_append(headers, auth);
    }
    if (json) headers = curl_slist_append(headers, "Content-Type: application/json");
    if (t->upload) headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    for (const char *const *h = t->headers; h && *h; h++) headers = curl_slist_append(headers, *h);
    if (stream) headers = curl_slist_append(headers, "Accept: text/event-stream");
    if (last_id && *last_id) {
        snprintf(last, sizeof last, "Last-Event-ID: %s", last_id);
        headers = curl_slist_append(headers, last);
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (json) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
    } else if (!strcmp(method, "POST")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    }
    if (!strcmp(method, "GET")) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "paragon/" PGN_VERSION);
    if (t->upload) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READDATA, t->upload);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)t->upload_size);
    }
    if (stream || t->upload) { /* as long as it takes, while bytes move */
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, STREAM_SILENCE_S);
    } else {
        curl_easy_setopt(c, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
    }
    if (stream) s->streaming = true; /* requests from the stream's reader take the side handle */
    CURLcode rc = curl_easy_perform(c);
    if (!t->status) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t->status);
    curl_slist_free_all(headers);
    free(json);
    if (rc == CURLE_ABORTED_BY_CALLBACK) return -2;
    if (rc == CURLE_WRITE_ERROR && t->done) return 0;
    if (rc != CURLE_OK && !(stream && ok_status(t->status))) {
        if (t->file && rc == CURLE_WRITE_ERROR)
            fprintf(stderr, "%s: cannot write the download: %s\n", s->cmd, strerror(errno));
        else
            fprintf(stderr, "%s: no answer from paragond at %s: %s (is it running? --url or "
                            "PARAGON_URL names another address)\n",
                    s->cmd, s->url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        t->status = 0;
        return -1;
    }
    if (!ok_status(t->status)) {
        print_error(t);
        return -1;
    }
    return 0;
}

json_t *cli_call(cli_server *s, const char *method, const char *path, const json_t *body,
                 long *status) {
    transfer t = {.s = s};
    int rc = perform(&t, method, path, body, NULL, false);
    *status = t.status;
    json_t *out = NULL;
    if (rc == 0 && !t.body.len) {
        out = json_object(); /* 204 No Content: a DELETE */
    } else if (rc == 0) {
        json_error_t jerr;
        out = json_loads(t.body.data, 0, &jerr);
        if (!out) {
            fprintf(stderr, "%s: the answer to %s %s is not JSON: %s\n", s->cmd, method, path, jerr.text);
            *status = 0;
        }
    }
    free(t.body.data);
    return out;
}

char *cli_get_text(cli_server *s, const char *path, long *status) {
    transfer t = {.s = s};
    int rc = perform(&t, "GET", path, NULL, NULL, false);
    *status = t.status;
    if (rc == 0) return pgn_text_take(&t.body);
    free(t.body.data);
    return NULL;
}

int cli_download(cli_server *s, const char *path, const char *to, long *status, size_t *bytes) {
    bool out_stdout = !strcmp(to, "-");
    char part[4096];
    snprintf(part, sizeof part, "%s.part", to);
    transfer t = {.s = s, .file = out_stdout ? stdout : fopen(part, "wb")};
    if (!t.file) {
        fprintf(stderr, "%s: cannot write '%s': %s\n", s->cmd, part, strerror(errno));
        *status = 0;
        return -1;
    }
    int rc = perform(&t, "GET", path, NULL, NULL, false);
    *status = t.status;
    *bytes = t.written;
    free(t.body.data);
    if (out_stdout) return rc ? -1 : fflush(stdout);
    if (fclose(t.file) && !rc) {
        fprintf(stderr, "%s: cannot write '%s': %s\n", s->cmd, part, strerror(errno));
        rc = -1;
    }
    if (!rc && rename(part, to)) {
        fprintf(stderr, "%s: cannot rename '%s' to '%s': %s\n", s->cmd, part, to, strerror(errno));
        rc = -1;
    }
    if (rc) unlink(part);
    return rc ? -1 : 0;
}

json_t *cli_upload(cli_server *s, const char *path, FILE *from, long long size, const char *const *headers,
                   long *status) {
    transfer t = {.s = s, .upload = from, .upload_size = size, .headers = headers};
    int rc = perform(&t, "PUT", path, NULL, NULL, false);
    *status = t.status;
    json_t *out = NULL;
    if (rc == 0) {
        json_error_t jerr;
        out = json_loads(t.body.data ? t.body.data : "", 0, &jerr);
        if (!out) {
            fprintf(stderr, "%s: the answer to PUT %s is not JSON: %s\n", s->cmd, path, jerr.text);
            *status = 0;
        }
    }
    free(t.body.data);
    return out;
}

char *cli_path_escape(cli_server *s, const char *segment) {
    char *e = curl_easy_escape(s->curl, segment, 0);
    char *out = e ? strdup(e) : NULL;
    curl_free(e);
    return out;
}

int cli_stream(cli_server *s, const char *method, const char *path, const json_t *body,
               const char *last_id, cli_event_fn fn, void *ctx, long *status) {
    transfer t = {.s = s, .on_event = fn, .ctx = ctx};
    int rc = perform(&t, method, path, body, last_id, true);
    s->streaming = false;
    *status = t.status;
    free(t.body.data);
    if (rc) return rc;
    return t.done ? 1 : 0;
}
