/* test_bad_requests.c: every class of request a live paragond refuses, as tables of cases with
 * the error each must get: malformed JSON, bad specs, media types, sizes, routes, methods, list
 * parameters, nesting and array limits, parameter and memory limits, a full queue (429). None of
 * them stores a job. */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(bad_requests, .init = harness_setup, .fini = harness_teardown);

Test(bad_requests, bad_requests_get_clear_errors_and_store_nothing) {
    server s = start_server();
    int64_t before = job_total(&s);
    cr_assert_eq(before, 0);

    /* Malformed JSON names line and column. */
    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, "{\"kind\":\"train\",\n  ");
    assert_error(&r, 400, "invalid_json", NULL);
    json_t *v = parse_body(&r);
    json_t *e = json_object_get(v, "error");
    cr_assert_eq(json_integer_value(json_object_get(e, "line")), 2);
    cr_assert_gt(json_integer_value(json_object_get(e, "column")), 0);
    cr_assert(strstr(str(e, "message"), "line 2"), "%s", str(e, "message"));
    json_decref(v);
    http_response_free(&r);
    post_expect(&s, "", 400, "invalid_json", NULL);

    /* Spec errors name the field. */
    char *spec = spec_with("\"seed\":1", "\"seed\":1,\"bogus\":true");
    post_expect(&s, spec, 400, "invalid_spec", "bogus");
    free(spec);
    spec = spec_with("\"epochs\":300", "\"epochs\":\"many\"");
    post_expect(&s, spec, 400, "invalid_spec", "epochs");
    free(spec);
    spec = spec_with("[2,8,2]", "[2,0,2]");
    post_expect(&s, spec, 400, "invalid_spec", "model.layers[1]");
    free(spec);
    spec = spec_with("\"seed\":1", "\"seed\":1,\"device\":\"gpu-deadbeef\"");
    post_expect(&s, spec, 400, "invalid_spec", "device");
    free(spec);

    /* Media type, size, routes and methods. */
    const char *const text_plain[] = {"Content-Type: text/plain", NULL};
    r = request(&s, "POST", "/api/v1/jobs", text_plain, xor_spec);
    assert_error(&r, 415, "unsupported_media_type", NULL);
    http_response_free(&r);
    r = request(&s, "POST", "/api/v1/jobs", NULL, xor_spec);
    assert_error(&r, 415, "unsupported_media_type", NULL);
    http_response_free(&r);
    const char *const json_utf8[] = {"Content-Type: Application/JSON; charset=utf-8", NULL};
    r = request(&s, "POST", "/api/v1/jobs", json_utf8, "[1]");
    cr_assert_eq(r.status, 400, "a JSON media type with parameters is accepted: %s", r.body);
    http_response_free(&r);

    size_t big_len = 1024 * 1024 + 1;
    char *big = malloc(big_len + 1);
    memset(big, ' ', big_len);
    big[big_len] = 0;
    r = request(&s, "POST", "/api/v1/jobs", json_headers, big);
    assert_error(&r, 413, "too_large", NULL);
    http_response_free(&r);
    free(big);
    static const char huge[] = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 104857600\r\n\r\n";
    cr_assert_eq(http_raw(s.port, huge, sizeof huge - 1, HTTP_TIMEOUT_MS, &r), 0, "%s",
                 http_last_error());
    assert_error(&r, 413, "too_large", NULL);
    http_response_free(&r);

    r = request(&s, "GET", "/api/v1/nope", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/nope.js", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/abc", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/4242", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/4242/metrics", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);

    char allow[64];
    r = request(&s, "DELETE", "/api/v1/jobs", NULL, NULL);
    assert_error(&r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(&r, "Allow", allow, sizeof allow));
    cr_assert_str_eq(allow, "GET, HEAD, POST");
    http_response_free(&r);
    r = request(&s, "PUT", "/api/v1/devices", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(&r, "Allow", allow, sizeof allow));
    cr_assert_str_eq(allow, "GET, HEAD");
    http_response_free(&r);

    /* List parameters. */
    const char *bad_lists[][2] = {
        {"/api/v1/jobs?limit=-1", "limit"},    {"/api/v1/jobs?limit=ten", "limit"},
        {"/api/v1/jobs?offset=1.5", "offset"}, {"/api/v1/jobs?state=done", "state"},
        {"/api/v1/jobs?kind=poem", "kind"},
    };
    for (size_t i = 0; i < sizeof bad_lists / sizeof bad_lists[0]; i++) {
        r = request(&s, "GET", bad_lists[i][0], NULL, NULL);
        assert_error(&r, 400, "invalid_parameter", bad_lists[i][1]);
        http_response_free(&r);
    }
    v = get_json(&s, "/api/v1/jobs?limit=100000&offset=3", 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "limit")), 500, "limit is capped");
    cr_assert_eq(json_integer_value(json_object_get(v, "offset")), 3);
    json_decref(v);

    cr_assert_eq(job_total(&s), before, "no bad request stored a job");
    stop_server(&s);

    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Nesting, array length, parameters and device memory: 400 naming the limit; nothing stored. */
Test(bad_requests, request_and_job_limits_are_clear_400s) {
    server s = start_server();
    /* 33 levels is one too many; 32 is parsed (and then is not a spec). */
    char deep[80] = "";
    for (int i = 0; i < 33; i++) strcat(deep, "[");
    for (int i = 0; i < 33; i++) strcat(deep, "]");
    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, deep);
    assert_error(&r, 400, "limit_exceeded", NULL);
    json_t *v = parse_body(&r);
    json_t *e = json_object_get(v, "error");
    cr_assert_str_eq(str(e, "limit"), "json_depth");
    cr_assert_eq(json_integer_value(json_object_get(e, "max")), 32);
    cr_assert(strstr(str(e, "message"), "deeper than 32"), "%s", str(e, "message"));
    json_decref(v);
    http_response_free(&r);
    deep[32] = 0;
    memset(deep + 32, ']', 32);
    deep[64] = 0;
    post_expect(&s, deep + 0, 400, "invalid_spec", NULL);
    /* Brackets inside strings are text, not nesting. */
    char *quoted = spec_with("\"seed\":1", "\"seed\":1,\"bogus\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"");
    post_expect(&s, quoted, 400, "invalid_spec", "bogus");
    free(quoted);

    /* 10001 cases is too long an array; 10000 reaches the spec parser. */
    size_t cap = 20 * 10001 + 100;
    char *body = malloc(cap);
    cr_assert_not_null(body);
    for (int n = 10000; n <= 10001; n++) {
        char *at = body + sprintf(body, "{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":[");
        for (int i = 0; i < n; i++) at += sprintf(at, i ? ",\"x\"" : "\"x\"");
        strcpy(at, "]}");
        r = request(&s, "POST", "/api/v1/jobs", json_headers, body);
        if (n == 10000) {
            assert_error(&r, 400, "invalid_spec", "cases");
        } else {
            assert_error(&r, 400, "limit_exceeded", NULL);
            cr_assert(strstr(r.body, "\"limit\":\"json_array_length\""), "%s", r.body);
            cr_assert(strstr(r.body, "longer than 10000"), "%s", r.body);
        }
        http_response_free(&r);
    }
    free(body);

    /* Parameters: 784*65536 + 65536*65536 + 65536*10 weights is far past 50M. */
    r = request(&s, "POST", "/api/v1/jobs", json_headers,
                "{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\"},\"model\":{\"type\":"
                "\"mlp\",\"layers\":[784,65536,65536,10]}}");
    assert_error(&r, 400, "limit_exceeded", "model.layers");
    cr_assert(strstr(r.body, "4347133962 parameters"), "%s", r.body);
    cr_assert(strstr(r.body, "\"limit\":\"max_params\""), "%s", r.body);
    http_response_free(&r);

    /* Device memory: few parameters, but a batch of 65536 through 65536-wide layers needs
     * hundreds of GB of activations, on any device (and on host, more than the machine). */
    const char *devices[] = {"auto", "host"};
    for (int i = 0; i < 2; i++) {
        char spec[512];
        snprintf(spec, sizeof spec,
                 "{\"kind\":\"train\",\"device\":\"%s\",\"data\":{\"source\":\"xor\"},"
                 "\"model\":{\"type\":\"mlp\",\"layers\":[2,65536,1,65536,1,65536,1,65536,2]},"
                 "\"batch_size\":65536,\"epochs\":1}",
                 devices[i]);
        r = request(&s, "POST", "/api/v1/jobs", json_headers, spec);
        assert_error(&r, 400, "limit_exceeded", "batch_size");
        v = parse_body(&r);
        e = json_object_get(v, "error");
        cr_assert_str_eq(str(e, "limit"), "device_memory");
        cr_assert(strstr(str(e, "message"), "device memory"), "%s", str(e, "message"));
        json_t *est = json_object_get(e, "estimate");
        cr_assert_gt(json_integer_value(json_object_get(est, "activations")),
                     json_integer_value(json_object_get(e, "max")), "%s", r.body);
        cr_assert_eq(json_integer_value(json_object_get(e, "value")),
                     json_integer_value(json_object_get(est, "total")));
        if (i == 1) cr_assert_str_eq(str(e, "device"), "host");
        json_decref(v);
        http_response_free(&r);
    }
    cr_assert_eq(job_total(&s), 0, "no refused job was stored");
    stop_server(&s);
}

/* --max-queued: past it, 429 with Retry-After; the running job is undisturbed. */
Test(bad_requests, a_full_queue_answers_429_with_retry_after) {
    const char *const flags[] = {"--max-queued", "2", NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    char *spec = spec_with("\"epochs\":300", "\"epochs\":100000");
    int64_t first = submit(&s, spec);
    json_t *job = wait_state(&s, first, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    json_decref(job);
    submit(&s, spec);
    submit(&s, spec); /* two queued behind the running one: the limit */
    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, spec);
    assert_error(&r, 429, "queue_full", NULL);
    char h[64];
    cr_assert_not_null(http_header(&r, "Retry-After", h, sizeof h), "%s", r.head);
    cr_assert_gt(atoi(h), 0, "Retry-After: %s", h);
    cr_assert(strstr(r.body, "--max-queued"), "the message names the flag: %s", r.body);
    cr_assert(strstr(r.body, "\"max\":2"), "%s", r.body);
    http_response_free(&r);
    cr_assert_eq(job_total(&s), 3);
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", (long long)first);
    json_t *v = get_json(&s, path, 200);
    cr_assert_str_eq(str(v, "state"), "running", "the running job goes on");
    json_decref(v);
    free(spec);
    free(stop_server_with(&s, err_fd));
}
