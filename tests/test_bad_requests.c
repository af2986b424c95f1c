/* test_bad_requests.c: every class of request a live paragond refuses, as tables of cases with
 * the error each must get: malformed JSON, bad specs, media types, sizes, routes, methods, list
 * parameters, nesting and array limits, parameter and memory limits, a full queue (429). None of
 * them stores a job. */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <jansson.h>
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

    /* Spec errors name the field: the XOR spec with one edit each. */
    static const struct {
        const char *from, *to, *field;
    } edits[] = {
        {"\"seed\":1", "\"seed\":1,\"bogus\":true", "bogus"},
        {"\"epochs\":300", "\"epochs\":\"many\"", "epochs"},
        {"[2,8,2]", "[2,0,2]", "model.layers[1]"},
        {"\"seed\":1", "\"seed\":1,\"device\":\"gpu-deadbeef\"", "device"},
        {"\"seed\":1", "\"seed\":1,\"distributed\":{\"ranks\":0,\"algorithm\":\"ddp\"}", "distributed.ranks"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char *spec = spec_with(edits[i].from, edits[i].to);
        post_expect(&s, spec, 400, "invalid_spec", edits[i].field);
        free(spec);
    }

    /* Media type, size, routes, methods and list parameters. */
    const char *const text_plain[] = {"Content-Type: text/plain", NULL};
    const char *const json_utf8[] = {"Content-Type: Application/JSON; charset=utf-8", NULL};
    size_t big_len = 1024 * 1024 + 1;
    char *big = malloc(big_len + 1);
    memset(big, ' ', big_len);
    big[big_len] = 0;
    const refusal cases[] = {
        {"POST", "/api/v1/jobs", json_headers, "", 400, "invalid_json", .field = NULL},
        {"POST", "/api/v1/jobs", text_plain, xor_spec, 415, "unsupported_media_type", .field = NULL},
        {"POST", "/api/v1/jobs", NULL, xor_spec, 415, "unsupported_media_type", .field = NULL},
        /* a JSON media type with parameters is accepted: what is wrong is the body */
        {"POST", "/api/v1/jobs", json_utf8, "[1]", 400, "invalid_spec", .field = NULL},
        {"POST", "/api/v1/jobs", json_headers, big, 413, "too_large", .field = NULL},
        {"GET", "/api/v1/nope", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", "/nope.js", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", "/api/v1/jobs/abc", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", "/api/v1/jobs/4242", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", "/api/v1/jobs/4242/metrics", NULL, NULL, 404, "not_found", .field = NULL},
        {"DELETE", "/api/v1/jobs", NULL, NULL, 405, "method_not_allowed", .allow = "GET, HEAD, POST"},
        {"PUT", "/api/v1/devices", json_headers, "{}", 405, "method_not_allowed", .allow = "GET, HEAD"},
        {"GET", "/api/v1/jobs?limit=-1", NULL, NULL, 400, "invalid_parameter", .field = "limit"},
        {"GET", "/api/v1/jobs?limit=ten", NULL, NULL, 400, "invalid_parameter", .field = "limit"},
        {"GET", "/api/v1/jobs?offset=1.5", NULL, NULL, 400, "invalid_parameter", .field = "offset"},
        {"GET", "/api/v1/jobs?state=done", NULL, NULL, 400, "invalid_parameter", .field = "state"},
        {"GET", "/api/v1/jobs?kind=poem", NULL, NULL, 400, "invalid_parameter", .field = "kind"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    free(big);
    /* A Content-Length past the limit is refused before the body is read. */
    static const char huge[] = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 104857600\r\n\r\n";
    cr_assert_eq(http_raw(s.port, huge, sizeof huge - 1, HTTP_TIMEOUT_MS, &r), 0, "%s",
                 http_last_error());
    assert_error(&r, 413, "too_large", NULL);
    http_response_free(&r);

    v = get_json(&s, "/api/v1/jobs?limit=100000&offset=3", 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "limit")), 500, "limit is capped");
    cr_assert_eq(json_integer_value(json_object_get(v, "offset")), 3);
    json_decref(v);

    cr_assert_eq(job_total(&s), before, "no bad request stored a job");
    stop_server(&s);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs", 0), 0, "nor is one in the database");
}

/* A bench spec with n cases (malloc'd): an array as long as the caller wants. */
static char *bench_with_cases(int n) {
    char *body = malloc(20 * (size_t)n + 100);
    cr_assert_not_null(body);
    char *at = body + sprintf(body, "{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":[");
    for (int i = 0; i < n; i++) at += sprintf(at, i ? ",\"x\"" : "\"x\"");
    strcpy(at, "]}");
    return body;
}

/* Nesting, array length, parameters and device memory: 400 naming the limit; nothing stored. */
Test(bad_requests, request_and_job_limits_are_clear_400s) {
    server s = start_server();
    /* 33 levels is one too many; 32 is parsed (and then is not a spec). */
    char deep33[67], deep32[65];
    memset(deep33, '[', 33);
    memset(deep33 + 33, ']', 33);
    deep33[66] = 0;
    memset(deep32, '[', 32);
    memset(deep32 + 32, ']', 32);
    deep32[64] = 0;
    /* Brackets inside strings are text, not nesting. */
    char *quoted = spec_with("\"seed\":1", "\"seed\":1,\"bogus\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"");
    /* 10001 cases is too long an array; 10000 reaches the spec parser. */
    char *cases_10000 = bench_with_cases(10000), *cases_10001 = bench_with_cases(10001);
    const refusal cases[] = {
        {"POST", "/api/v1/jobs", json_headers, deep33, 400, "limit_exceeded", .limit = "json_depth",
         .max = 32, .says = "deeper than 32"},
        {"POST", "/api/v1/jobs", json_headers, deep32, 400, "invalid_spec", .field = NULL},
        {"POST", "/api/v1/jobs", json_headers, quoted, 400, "invalid_spec", .field = "bogus"},
        {"POST", "/api/v1/jobs", json_headers, cases_10000, 400, "invalid_spec", .field = "cases"},
        {"POST", "/api/v1/jobs", json_headers, cases_10001, 400, "limit_exceeded",
         .limit = "json_array_length", .says = "longer than 10000"},
        /* Parameters: 784*65536 + 65536*65536 + 65536*10 weights is far past 50M. */
        {"POST", "/api/v1/jobs", json_headers,
         "{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\"},\"model\":{\"type\":"
         "\"mlp\",\"layers\":[784,65536,65536,10]}}",
         400, "limit_exceeded", .field = "model.layers", .limit = "max_params",
         .says = "4347133962 parameters"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    free(quoted);
    free(cases_10000);
    free(cases_10001);

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
        http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, spec);
        assert_error(&r, 400, "limit_exceeded", "batch_size");
        json_t *v = parse_body(&r);
        json_t *e = json_object_get(v, "error");
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
    /* on one device by name: "auto" would backfill the idle host with the second */
    char *spec = spec_with("\"epochs\":300", "\"epochs\":100000,\"device\":\"cpu\"");
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
