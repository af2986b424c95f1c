/* test_dashboard_auth.c: integration tests of the dashboard off loopback (--host 0.0.0.0): the
 * page and its scripts load without a token, the API asks for one, and the session cookie that
 * POST /api/v1/session trades for the token lets a browser read, follow the event streams and
 * download a checkpoint (none of which can send a header), but never write. */
#include "paragond_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(dashboard_auth, .init = harness_setup, .fini = harness_teardown);

static const char *const any_host[] = {"--host", "0.0.0.0", NULL};

/* The token in <data>/token, without its newline (malloc'd). */
static char *token_of(const server *s) {
    char *t = read_token(s);
    t[strcspn(t, " \r\n")] = 0;
    return t;
}

/* POST /api/v1/session with the token; asserts the 204 and its Set-Cookie, and returns the
 * "Cookie: paragon_session=<value>" line a browser would send back. */
static void open_session(const server *s, char *cookie, size_t size) {
    http_response r = request(s, "POST", "/api/v1/session", NULL, NULL);
    cr_assert_eq(r.status, 204, "%d %s", r.status, r.body);
    char set[256], value[128];
    cr_assert_not_null(http_header(&r, "Set-Cookie", set, sizeof set), "%s", r.head);
    cr_assert_eq(sscanf(set, "paragon_session=%127[0-9a-f];", value), 1, "%s", set);
    cr_assert_eq(strlen(value), 64, "%s", set);
    const char *rest = set + strlen("paragon_session=") + 64;
    cr_assert_str_eq(rest, "; HttpOnly; SameSite=Strict; Path=/");
    char *token = token_of(s);
    cr_assert_null(strstr(set, token), "the token itself is not in the cookie: %s", set);
    free(token);
    char cc[64];
    cr_assert_not_null(http_header(&r, "Cache-Control", cc, sizeof cc));
    cr_assert_str_eq(cc, "no-store");
    http_response_free(&r);
    snprintf(cookie, size, "Cookie: paragon_session=%s", value);
}

/* The status of a request that carries only the given header lines (no token). */
static int bare_status(const server *s, const char *method, const char *path,
                       const char *const *headers, const char *body) {
    http_response r = bare_request(s, method, path, headers, body);
    int status = r.status;
    http_response_free(&r);
    return status;
}

Test(dashboard_auth, off_loopback_the_page_and_its_scripts_load_without_a_token_and_the_api_asks) {
    int err_fd;
    server s = start_server_with(any_host, "0.0.0.0", &err_fd);
    http_response r = bare_request(&s, "GET", "/", NULL, NULL);
    cr_assert_eq(r.status, 200, "GET /: %d %s", r.status, r.body);
    cr_assert(strstr(r.body, "<!doctype html>") && strstr(r.body, "id=\"token\""), "%s", r.body);
    http_response_free(&r);
    cr_assert_eq(bare_status(&s, "HEAD", "/", NULL, NULL), 200);
    /* Every file of web/: the page, its style sheet, and app.js with each module it imports
     * (a module refused here would leave the page blank, with nothing to ask for the token). */
    web_file files[WEB_FILES_MAX];
    size_t n = list_web_files(files);
    for (size_t i = 0; i < n; i++) {
        char path[80];
        snprintf(path, sizeof path, "/%.63s", files[i].name);
        r = bare_request(&s, "GET", path, NULL, NULL);
        cr_assert_eq(r.status, 200, "GET %s: %d %s", path, r.status, r.body);
        char h[96];
        cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
        cr_assert_str_eq(h, files[i].type, "%s", path);
        cr_assert_gt(r.body_len, 0, "%s", path);
        http_response_free(&r);
        cr_assert_eq(bare_status(&s, "HEAD", path, NULL, NULL), 200, "HEAD %s", path);
    }

    /* Only the embedded files are open: data and unknown paths still need the token. */
    char *token = token_of(&s);
    const char *closed[] = {"/api/v1/jobs", "/api/v1/devices", "/api/v1/events", "/metrics",
                            "/not-a-dashboard-file.js"};
    for (size_t i = 0; i < sizeof closed / sizeof closed[0]; i++) {
        r = bare_request(&s, "GET", closed[i], NULL, NULL);
        assert_unauthorized(&r, "missing Authorization header", token);
        cr_assert(strstr(r.body, "paragon_session cookie that POST /api/v1/session sets"),
                  "the 401 names the browser's way in: %s", r.body);
        http_response_free(&r);
    }
    free(token);
    free(stop_server_with(&s, err_fd));
}

Test(dashboard_auth, the_session_cookie_reads_streams_and_downloads_but_never_writes) {
    int err_fd;
    server s = start_server_with(any_host, "0.0.0.0", &err_fd);
    char *spec = spec_with("\"epochs\":300", "\"epochs\":50");
    int64_t id = submit(&s, spec); /* with the bearer token */
    free(spec);
    json_decref(wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS));

    /* No token, no session. */
    http_response r = bare_request(&s, "POST", "/api/v1/session", NULL, NULL);
    assert_unauthorized(&r, "missing Authorization header", NULL);
    http_response_free(&r);
    char cookie[128];
    open_session(&s, cookie, sizeof cookie);
    const char *with_cookie[] = {cookie, NULL};

    /* Reads: the job list, the job's event stream, the stream of all events, the checkpoint. */
    r = bare_request(&s, "GET", "/api/v1/jobs", with_cookie, NULL);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    json_t *list = parse_body(&r);
    cr_assert_eq(json_integer_value(json_object_get(list, "total")), 1);
    json_decref(list);
    http_response_free(&r);

    char url[96], h[128];
    r = bare_request(&s, "GET", job_url(url, sizeof url, id, "/events"), with_cookie, NULL);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
    cr_assert_str_eq(h, "text/event-stream");
    cr_assert(strstr(r.body, "event: state") && strstr(r.body, "\"succeeded\""),
              "the finished job's stream carries its final state: %s", r.body);
    http_response_free(&r);

    http_stream *all = http_stream_open(s.port, "/api/v1/events", with_cookie, HTTP_TIMEOUT_MS);
    cr_assert_not_null(all, "%s", http_last_error());
    cr_assert_eq(http_stream_head(all)->status, 200);
    http_stream_close(all);

    r = bare_request(&s, "GET", job_url(url, sizeof url, id, "/checkpoint"), with_cookie, NULL);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    size_t len;
    char *file = data_file(&s, id, &len);
    cr_assert_not_null(file);
    cr_assert_eq(r.body_len, len);
    cr_assert_eq(memcmp(r.body, file, len), 0, "the download is the checkpoint file");
    free(file);
    http_response_free(&r);

    /* Among other cookies, as a browser sends it. */
    char several[200];
    snprintf(several, sizeof several, "Cookie: theme=dark; %s; lang=en", cookie + 8);
    const char *mixed[] = {several, NULL};
    cr_assert_eq(bare_status(&s, "GET", "/api/v1/devices", mixed, NULL), 200);

    /* Writes: the cookie alone is refused and nothing changes. */
    const char *post_headers[] = {cookie, "Content-Type: application/json", NULL};
    r = bare_request(&s, "POST", "/api/v1/jobs", post_headers, xor_spec);
    assert_unauthorized(&r, "only GET and HEAD accept the paragon_session cookie", NULL);
    http_response_free(&r);
    cr_assert_eq(job_total(&s), 1, "no job was queued");
    cr_assert_eq(bare_status(&s, "DELETE", job_url(url, sizeof url, id, ""), with_cookie, NULL),
                 401);
    cr_assert_eq(status_of(&s, "GET", id, ""), 200, "the job is still there");
    cr_assert_eq(bare_status(&s, "POST", "/api/v1/session", with_cookie, NULL), 401);
    cr_assert_eq(bare_status(&s, "DELETE", "/api/v1/session", with_cookie, NULL), 401);

    /* A wrong cookie says so. */
    const char *wrong[] = {"Cookie: paragon_session=0123456789abcdef", NULL};
    r = bare_request(&s, "GET", "/api/v1/jobs", wrong, NULL);
    assert_unauthorized(&r, "the paragon_session cookie is not valid", NULL);
    http_response_free(&r);

    /* DELETE /api/v1/session, with the token, tells the browser to drop the cookie. */
    r = request(&s, "DELETE", "/api/v1/session", NULL, NULL);
    cr_assert_eq(r.status, 204, "%d %s", r.status, r.body);
    char set[160];
    cr_assert_not_null(http_header(&r, "Set-Cookie", set, sizeof set), "%s", r.head);
    cr_assert_str_eq(set, "paragon_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    http_response_free(&r);
    /* What the browser then sends: an empty cookie, or none. */
    const char *cleared[] = {"Cookie: paragon_session=", NULL};
    r = bare_request(&s, "GET", "/api/v1/jobs", cleared, NULL);
    assert_unauthorized(&r, "missing Authorization header", NULL);
    http_response_free(&r);
    free(stop_server_with(&s, err_fd));
}

Test(dashboard_auth, a_session_outlives_a_restart_and_ends_when_the_token_changes) {
    int err_fd;
    server s = start_server_with(any_host, "0.0.0.0", &err_fd);
    char cookie[128];
    open_session(&s, cookie, sizeof cookie);
    const char *with_cookie[] = {cookie, NULL};
    free(stop_server_with(&s, err_fd));

    s = start_server_with(any_host, "0.0.0.0", &err_fd);
    cr_assert_eq(bare_status(&s, "GET", "/api/v1/jobs", with_cookie, NULL), 200,
                 "the same token gives the same session after a restart");
    free(stop_server_with(&s, err_fd));

    char path[320];
    snprintf(path, sizeof path, "%s/token", s.data);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("a-new-token-after-a-leak-0123456789\n", f);
    fclose(f);
    s = start_server_with(any_host, "0.0.0.0", &err_fd);
    http_response r = bare_request(&s, "GET", "/api/v1/jobs", with_cookie, NULL);
    assert_unauthorized(&r, "the paragon_session cookie is not valid", NULL);
    http_response_free(&r);
    char fresh[128];
    open_session(&s, fresh, sizeof fresh);
    cr_assert_str_neq(fresh, cookie, "the new token gives a new session");
    free(stop_server_with(&s, err_fd));
}

Test(dashboard_auth, on_loopback_the_session_route_answers_as_well) {
    /* The dashboard opens a session wherever it runs; on loopback reads need nothing. */
    server s = start_server();
    char cookie[128];
    open_session(&s, cookie, sizeof cookie);
    cr_assert_eq(bare_status(&s, "GET", "/api/v1/jobs", NULL, NULL), 200);
    cr_assert_eq(bare_status(&s, "POST", "/api/v1/session", NULL, NULL), 401);
    const char *const with_cookie[] = {cookie, "Content-Type: application/json", NULL};
    cr_assert_eq(bare_status(&s, "POST", "/api/v1/jobs", with_cookie, xor_spec), 401,
                 "on loopback too, a cookie cannot write");
    http_response r = request(&s, "GET", "/api/v1/session", NULL, NULL);
    assert_allow(&r, "POST, DELETE");
    http_response_free(&r);
    stop_server(&s);
}
