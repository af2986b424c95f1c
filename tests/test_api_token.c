/* test_api_token.c: the API token of a live paragond: made at the first start (private, reused
 * by the next), asked for by every write and, off loopback, by every read but the probes;
 * --token-file supplies one, and a bad one (or a bad --max-queued) stops the start, saying why. */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(api_token, .init = harness_setup, .fini = harness_teardown);

static const char inet_host_spec[] = "{\"kind\":\"inet\",\"device\":\"host\",\"program\":\"@main = 1\"}";

/* A job posted with this Authorization line (and no other credential) is accepted. */
static void assert_accepted(const server *s, const char *authorization) {
    const char *const headers[] = {"Content-Type: application/json", authorization, NULL};
    http_response r = bare_request(s, "POST", "/api/v1/jobs", headers, inet_host_spec);
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    http_response_free(&r);
}

/* Stops the server: its stderr says which file holds the token, and never shows the token. */
static void stop_naming_the_token_file(server *s, int err_fd, const char *file, const char *token) {
    char *err = stop_server_with(s, err_fd);
    char line[400];
    snprintf(line, sizeof line, "paragond: API token in %s\n", file);
    cr_assert(strstr(err, line), "stderr says where the token is: %s", err);
    cr_assert_null(strstr(err, token), "stderr does not show the token: %s", err);
    free(err);
}

Test(api_token, a_token_guards_mutations_while_loopback_reads_need_none) {
    int err_fd;
    server s = start_server_with(NULL, "127.0.0.1", &err_fd);
    char *token = read_token(&s);
    size_t len = strlen(token);
    cr_assert_eq(len, 65, "64 hex characters and a newline: '%s'", token);
    cr_assert_eq(token[64], '\n');
    token[64] = 0;
    for (const char *p = token; *p; p++)
        cr_assert(isxdigit((unsigned char)*p) && !isupper((unsigned char)*p), "hex: %s", token);
    char path[320];
    snprintf(path, sizeof path, "%s/token", s.data);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);

    /* Missing, not Bearer, empty, wrong (one character off: the same length, the same prefix;
     * or one character more): each says so, and nothing is stored. Every method but GET and
     * HEAD needs it, before any other check. */
    char wrong_value[128], off_by_one[160], one_more[160];
    snprintf(wrong_value, sizeof wrong_value, "%s", token);
    wrong_value[63] = wrong_value[63] == '0' ? '1' : '0';
    snprintf(off_by_one, sizeof off_by_one, "Authorization: Bearer %s", wrong_value);
    snprintf(one_more, sizeof one_more, "Authorization: Bearer %sx", token);
    const struct {
        const char *method, *path, *authorization, *body, *says;
    } refused[] = {
        {"POST", "/api/v1/jobs", NULL, inet_host_spec, "missing Authorization header"},
        {"POST", "/api/v1/jobs", "Authorization: Basic dXNlcjpwYXNz", inet_host_spec,
         "not a Bearer token"},
        {"POST", "/api/v1/jobs", "Authorization: Bearer ", inet_host_spec, "empty Bearer token"},
        {"POST", "/api/v1/jobs", off_by_one, inet_host_spec, "wrong token"},
        {"POST", "/api/v1/jobs", one_more, inet_host_spec, "wrong token"},
        {"DELETE", "/api/v1/jobs/1", NULL, NULL, "missing Authorization header"},
        {"PUT", "/api/v1/devices", NULL, "{}", "missing Authorization header"},
    };
    http_response r;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        const char *headers[3] = {NULL};
        size_t n = 0;
        if (refused[i].body) headers[n++] = "Content-Type: application/json";
        if (refused[i].authorization) headers[n++] = refused[i].authorization;
        r = bare_request(&s, refused[i].method, refused[i].path, headers, refused[i].body);
        assert_unauthorized(&r, refused[i].says, token);
        cr_assert_null(strstr(r.body, wrong_value), "the presented token is not echoed");
        http_response_free(&r);
    }
    cr_assert_eq(job_total(&s), 0, "no unauthorised request stored a job");

    /* On loopback, reads need no token: the API, the dashboard, the probes and /metrics. */
    const char *reads[] = {"/api/v1/jobs", "/api/v1/devices", "/api/v1/version", "/",
                           "/app.js", "/healthz", "/readyz", "/metrics"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        r = bare_request(&s, "GET", reads[i], NULL, NULL);
        cr_assert_eq(r.status, 200, "GET %s without a token: %d %s", reads[i], r.status, r.body);
        http_response_free(&r);
    }

    /* The right token, any case of "Bearer", extra spaces: accepted. */
    char good[160];
    snprintf(good, sizeof good, "Authorization: bEaReR   %s ", token);
    assert_accepted(&s, good);
    stop_naming_the_token_file(&s, err_fd, path, token);

    /* A restart reuses the file: the same token, still private, still accepted. */
    s = start_server_with(NULL, "127.0.0.1", &err_fd);
    char *again = read_token(&s);
    again[64] = 0;
    cr_assert_str_eq(again, token, "the token survives a restart");
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    assert_accepted(&s, good);
    stop_naming_the_token_file(&s, err_fd, path, token);
    free(again);
    free(token);
}

/* The dashboard's files, open to anyone, are in test_dashboard_auth.c. */
Test(api_token, off_loopback_reads_need_the_token_too_but_the_probes_do_not) {
    const char *const any[] = {"--host", "0.0.0.0", NULL};
    int err_fd;
    server s = start_server_with(any, "0.0.0.0", &err_fd);
    char *token = read_token(&s);
    token[64] = 0;
    const char *closed[] = {"/api/v1/jobs", "/api/v1/devices", "/metrics", "/api/v1/jobs/1"};
    for (size_t i = 0; i < sizeof closed / sizeof closed[0]; i++) {
        http_response r = bare_request(&s, "GET", closed[i], NULL, NULL);
        assert_unauthorized(&r, "missing Authorization header", NULL);
        http_response_free(&r);
    }
    const char *open_paths[] = {"/healthz", "/readyz"};
    for (size_t i = 0; i < 2; i++) {
        http_response r = bare_request(&s, "GET", open_paths[i], NULL, NULL);
        cr_assert_eq(r.status, 200, "GET %s: %d %s", open_paths[i], r.status, r.body);
        http_response_free(&r);
    }
    json_t *v = get_json(&s, "/api/v1/jobs", 200); /* request() sends the token */
    json_decref(v);
    char *err = stop_server_with(&s, err_fd);
    free(err);
    free(token);
}

Test(api_token, token_file_flag_supplies_the_token_and_bad_files_stop_the_start) {
    char file[320];
    snprintf(file, sizeof file, "%s/my-token", tmpdir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("  s3cret-token-of-24-chars\n\n", f);
    fclose(f);
    chmod(file, 0600);
    const char *const flags[] = {"--token-file", file, NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    char token_path[320];
    snprintf(token_path, sizeof token_path, "%s/token", s.data);
    cr_assert_neq(access(token_path, F_OK), 0, "no token is created in the data dir");
    assert_accepted(&s, "Authorization: Bearer s3cret-token-of-24-chars");
    stop_naming_the_token_file(&s, err_fd, file, "s3cret-token-of-24-chars");

    /* Too short, missing, or a bad --max-queued: paragond does not start and says why. */
    f = fopen(file, "w");
    fputs("short\n", f);
    fclose(f);
    char db[300], data[300];
    snprintf(db, sizeof db, "%s/t.db", tmpdir);
    snprintf(data, sizeof data, "%s/data", tmpdir);
    char missing[320];
    snprintf(missing, sizeof missing, "%s/nowhere", tmpdir);
    const struct {
        const char *flag, *value;
        int status;
        const char *says;
    } bad[] = {
        {"--token-file", file, 1, "--token-file: token file"},
        {"--token-file", missing, 1, "No such file"},
        {"--max-queued", "0", 2, "--max-queued: '0'"},
        {"--max-queued", "many", 2, "--max-queued: 'many'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *args[] = {"--port", "0", "--db", db, "--data-dir", data, bad[i].flag, bad[i].value, NULL};
        char *out, *err;
        cr_assert_eq(run_to_exit(args, NULL, &out, &err), bad[i].status, "case %zu: %s", i, err);
        cr_assert(strstr(err, bad[i].says), "case %zu: stderr: %s", i, err);
        cr_assert_str_eq(out, "");
        free(out);
        free(err);
    }
}
