/* test_api_conventions.c: the API's conventions against a live paragond: idempotent submission
 * (Idempotency-Key or submission_id, across restarts and racing requests), job tags and the
 * list's tag filter, list rows that carry a summary instead of the result, cursor pages, the
 * `end` event that closes a job's stream, the OpenAPI document held to the route table, and CORS
 * for a configured origin. Every bad input is shown refused with the field it names. */
#include "api.h"
#include "paragond_harness.h"
#include "store.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(api_conventions, .init = harness_setup, .fini = harness_teardown);

/* An inet job that ends at once: its normal form is the number. */
#define QUICK_SPEC "{\"kind\":\"inet\",\"program\":\"@main = 7\"}"

static const char *const key_a[] = {"Content-Type: application/json", "Idempotency-Key: run-2026-11-26/a",
                                    NULL};

/* POST /api/v1/jobs with headers and body; asserts the status, returns the job's id (0 when the
 * answer is not a job) and, when location is given, that Location names it. */
static int64_t post_job(const server *s, const char *const *headers, const char *body, int status) {
    http_response r = request(s, "POST", "/api/v1/jobs", headers, body);
    cr_assert_eq(r.status, status, "POST %s: want %d, got %d: %s", body, status, r.status, r.body);
    json_t *job = parse_body(&r);
    int64_t id = json_integer_value(json_object_get(job, "id"));
    if (status == 200 || status == 201) {
        char loc[64], want[64];
        snprintf(want, sizeof want, "/api/v1/jobs/%lld", (long long)id);
        cr_assert_not_null(http_header(&r, "Location", loc, sizeof loc), "%s", r.head);
        cr_assert_str_eq(loc, want);
    }
    json_decref(job);
    http_response_free(&r);
    return id;
}

/* ---- idempotent submission ------------------------------------------------------------- */

Test(api_conventions, a_resubmission_with_the_same_key_answers_the_job_it_made) {
    server s = start_server();
    int64_t id = post_job(&s, key_a, QUICK_SPEC, 201);
    /* The same request again, and the same body written otherwise: the same job, 200. */
    cr_assert_eq(post_job(&s, key_a, QUICK_SPEC, 200), id);
    cr_assert_eq(post_job(&s, key_a, "{ \"program\" : \"@main = 7\", \"kind\" : \"inet\" }", 200), id);
    /* The key in the body is the same key: the body without it is the same request. */
    cr_assert_eq(post_job(&s, json_headers,
                          "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"submission_id\":\"run-2026-11-26/a\"}", 200),
                 id);
    /* Numbers by their values: 5 and 5.0 (and 5e0) are the same body. */
    const char *const key_n[] = {"Content-Type: application/json", "Idempotency-Key: numbers", NULL};
    int64_t limited = post_job(&s, key_n, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"limits\":{\"timeout_s\":5}}", 201);
    cr_assert_eq(post_job(&s, key_n, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"limits\":{\"timeout_s\":5.0}}", 200),
                 limited);
    cr_assert_eq(post_job(&s, key_n, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"limits\":{\"timeout_s\":5e0}}", 200),
                 limited);
    http_response other_value = request(&s, "POST", "/api/v1/jobs", key_n,
                                        "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"limits\":{\"timeout_s\":5.5}}");
    assert_error(&other_value, 409, "conflict", "Idempotency-Key");
    http_response_free(&other_value);
    /* Both ways at once, agreeing. */
    cr_assert_eq(post_job(&s, key_a, "{\"submission_id\":\"run-2026-11-26/a\",\"kind\":\"inet\",\"program\":\"@main = 7\"}",
                          200),
                 id);
    json_t *job = wait_succeeded(&s, id);
    cr_assert_str_eq(str(job, "submission_id"), "run-2026-11-26/a");
    cr_assert_null(json_object_get(json_object_get(job, "spec"), "submission_id"), "the engine never sees it");
    json_decref(job);
    /* Once ended too, and the answer is the job as it is now. */
    http_response r = request(&s, "POST", "/api/v1/jobs", key_a, QUICK_SPEC);
    cr_assert_eq(r.status, 200, "%s", r.body);
    job = parse_body(&r);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    cr_assert_str_eq(str(json_object_get(job, "result"), "normal_form"), "7");
    json_decref(job);
    http_response_free(&r);

    /* The same key with another body: 409 naming the key and the job. */
    r = request(&s, "POST", "/api/v1/jobs", key_a, "{\"kind\":\"inet\",\"program\":\"@main = 8\"}");
    assert_error(&r, 409, "conflict", "Idempotency-Key");
    json_t *v = parse_body(&r);
    json_t *e = json_object_get(v, "error");
    cr_assert_str_eq(str(e, "submission_id"), "run-2026-11-26/a");
    cr_assert_eq(json_integer_value(json_object_get(e, "job_id")), id);
    char want[64];
    snprintf(want, sizeof want, "job %lld", (long long)id);
    cr_assert(strstr(str(e, "message"), want) && strstr(str(e, "message"), "run-2026-11-26/a"), "%s", r.body);
    json_decref(v);
    http_response_free(&r);
    post_expect(&s, "{\"kind\":\"inet\",\"program\":\"@main = 8\",\"submission_id\":\"run-2026-11-26/a\"}", 409,
                "conflict", "submission_id");

    /* One job, one key in the database (beside the numbers' one). */
    cr_assert_eq(job_total(&s), 2);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM submissions WHERE job_id = ?1", id), 1);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE submission_id = 'run-2026-11-26/a' AND id = ?1", id),
                 1);
    /* Another key is another job; none at all as well. */
    const char *const key_b[] = {"Content-Type: application/json", "Idempotency-Key: b", NULL};
    int64_t other = post_job(&s, key_b, QUICK_SPEC, 201);
    cr_assert_neq(other, id);
    cr_assert_neq(post_job(&s, json_headers, QUICK_SPEC, 201), other);
    stop_server(&s);
}

Test(api_conventions, bad_idempotency_keys_are_refused_naming_the_field) {
    server s = start_server();
    char long_key[PGD_SUBMISSION_ID_MAX + 40], long_header[PGD_SUBMISSION_ID_MAX + 64], long_body[PGD_SUBMISSION_ID_MAX + 128];
    memset(long_key, 'k', PGD_SUBMISSION_ID_MAX + 1);
    long_key[PGD_SUBMISSION_ID_MAX + 1] = 0;
    snprintf(long_header, sizeof long_header, "Idempotency-Key: %s", long_key);
    snprintf(long_body, sizeof long_body, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"submission_id\":\"%s\"}",
             long_key);
    const char *const too_long[] = {"Content-Type: application/json", long_header, NULL};
    const char *const spaced[] = {"Content-Type: application/json", "Idempotency-Key: two words", NULL};
    const char *const non_ascii[] = {"Content-Type: application/json", "Idempotency-Key: caf\xc3\xa9", NULL};
    const refusal cases[] = {
        {"POST", "/api/v1/jobs", too_long, QUICK_SPEC, 400, "invalid_parameter", .field = "Idempotency-Key",
         .says = "129 characters long; the most is 128"},
        {"POST", "/api/v1/jobs", spaced, QUICK_SPEC, 400, "invalid_parameter", .field = "Idempotency-Key",
         .says = "a space at character 4"},
        {"POST", "/api/v1/jobs", non_ascii, QUICK_SPEC, 400, "invalid_parameter", .field = "Idempotency-Key",
         .says = "byte 0xC3 at character 4"},
        {"POST", "/api/v1/jobs", json_headers, long_body, 400, "invalid_spec", .field = "submission_id",
         .says = "the most is 128"},
        {"POST", "/api/v1/jobs", json_headers, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"submission_id\":\"\"}", 400,
         "invalid_spec", .field = "submission_id", .says = "is empty"},
        {"POST", "/api/v1/jobs", json_headers, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"submission_id\":\"a\\u0001\"}",
         400, "invalid_spec", .field = "submission_id", .says = "byte 0x01 at character 2"},
        {"POST", "/api/v1/jobs", json_headers, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"submission_id\":7}", 400,
         "invalid_spec", .field = "submission_id", .says = "must be a string"},
        {"POST", "/api/v1/jobs", key_a, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"submission_id\":\"other\"}", 400,
         "invalid_spec", .field = "submission_id", .says = "differs from the Idempotency-Key header"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    /* A spec the engine refuses is refused with its key: the key is not taken by it. */
    http_response r = request(&s, "POST", "/api/v1/jobs", key_a, "{\"kind\":\"inet\"}");
    assert_error(&r, 400, "invalid_spec", "program");
    http_response_free(&r);
    cr_assert_eq(job_total(&s), 0, "nothing was stored");
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM submissions WHERE ?1 = ?1", 0), 0);
    post_job(&s, key_a, QUICK_SPEC, 201);
    stop_server(&s);
}

Test(api_conventions, a_key_survives_a_restart_and_outlives_its_deleted_job) {
    server s = start_server();
    int64_t id = post_job(&s, key_a, QUICK_SPEC, 201);
    json_decref(wait_succeeded(&s, id));
    stop_server(&s);

    s = start_server(); /* the same database */
    cr_assert_eq(post_job(&s, key_a, QUICK_SPEC, 200), id, "the key was kept across the restart");
    cr_assert_eq(status_of(&s, "DELETE", id, ""), 204);
    /* The key stays taken: a retry cannot run the work again unnoticed. */
    http_response r = request(&s, "POST", "/api/v1/jobs", key_a, QUICK_SPEC);
    assert_error(&r, 409, "conflict", "Idempotency-Key");
    cr_assert(strstr(r.body, "deleted"), "%s", r.body);
    json_t *v = parse_body(&r);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(v, "error"), "job_id")), id);
    json_decref(v);
    http_response_free(&r);
    cr_assert_eq(job_total(&s), 0);
    stop_server(&s);
}

typedef struct racer {
    const server *s;
    pthread_barrier_t *start;
    int status;
    int64_t id;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    const char *const headers[] = {"Content-Type: application/json", "Idempotency-Key: raced", NULL};
    char auth[256];
    auth_header(r->s, auth, sizeof auth);
    const char *const all[] = {headers[0], headers[1], auth, NULL};
    pthread_barrier_wait(r->start);
    http_response resp;
    /* no Criterion asserts off the test's thread: the results are checked after the join */
    if (http_request(r->s->port, "POST", "/api/v1/jobs", all, QUICK_SPEC, strlen(QUICK_SPEC), HTTP_TIMEOUT_MS,
                     &resp) == 0) {
        r->status = resp.status;
        json_t *job = json_loads(resp.body, 0, NULL);
        r->id = json_integer_value(json_object_get(job, "id"));
        json_decref(job);
        http_response_free(&resp);
    }
    return NULL;
}

#define RACERS 8

Test(api_conventions, requests_racing_with_one_key_make_one_job) {
    server s = start_server();
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, RACERS);
    racer racers[RACERS];
    pthread_t threads[RACERS];
    for (int i = 0; i < RACERS; i++) {
        racers[i] = (racer){.s = &s, .start = &start};
        cr_assert_eq(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
    }
    for (int i = 0; i < RACERS; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    int created = 0;
    for (int i = 0; i < RACERS; i++) {
        cr_assert(racers[i].status == 201 || racers[i].status == 200, "racer %d: %d", i, racers[i].status);
        created += racers[i].status == 201;
        cr_assert_eq(racers[i].id, racers[0].id, "every racer gets the one job");
    }
    cr_assert_eq(created, 1, "exactly one request made the job");
    cr_assert_eq(job_total(&s), 1);
    stop_server(&s);
}

/* ---- tags ------------------------------------------------------------------------------- */

/* The ids of GET path's rows, newest first, into ids; returns how many. */
static size_t listed_ids(const server *s, const char *path, int64_t *ids, size_t cap, json_t **page) {
    json_t *v = get_json(s, path, 200);
    json_t *jobs = json_object_get(v, "jobs");
    size_t n = json_array_size(jobs);
    cr_assert_leq(n, cap);
    for (size_t i = 0; i < n; i++) ids[i] = json_integer_value(json_object_get(json_array_get(jobs, i), "id"));
    if (page) *page = v;
    else json_decref(v);
    return n;
}

Test(api_conventions, tags_are_kept_shown_and_filter_the_list) {
    server s = start_server();
    int64_t a = submit(&s, "{\"kind\":\"inet\",\"program\":\"@main = 1\",\"tags\":{\"team\":\"vision\",\"run\":\"3\"}}");
    int64_t b = submit(&s, "{\"kind\":\"inet\",\"program\":\"@main = 2\",\"tags\":{\"team\":\"vision\",\"run\":\"4\"}}");
    int64_t c = submit(&s, "{\"kind\":\"inet\",\"program\":\"@main = 3\",\"tags\":{\"team\":\"speech\","
                           "\"note\":\"caf\xc3\xa9 \xe2\x80\x94 ok\",\"a.b/c-d_e\":\"\"}}");
    int64_t d = submit(&s, QUICK_SPEC);

    json_t *job = wait_succeeded(&s, a);
    json_t *tags = json_object_get(job, "tags");
    cr_assert_eq(json_object_size(tags), 2);
    cr_assert_str_eq(str(tags, "team"), "vision");
    cr_assert_str_eq(str(tags, "run"), "3");
    cr_assert_null(json_object_get(json_object_get(job, "spec"), "tags"), "the engine never sees them");
    json_decref(job);
    job = wait_succeeded(&s, c);
    cr_assert_str_eq(str(json_object_get(job, "tags"), "note"), "caf\xc3\xa9 \xe2\x80\x94 ok");
    cr_assert_str_eq(str(json_object_get(job, "tags"), "a.b/c-d_e"), "");
    json_decref(job);
    job = wait_succeeded(&s, d);
    cr_assert(json_is_object(json_object_get(job, "tags")) && json_object_size(json_object_get(job, "tags")) == 0,
              "a job without tags has an empty object");
    cr_assert(json_is_null(json_object_get(job, "submission_id")));
    json_decref(job);
    json_decref(wait_succeeded(&s, b));
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE json_extract(tags, '$.team') = 'vision' AND id <= ?1", b),
                 2, "stored as JSON");

    int64_t ids[8];
    json_t *page;
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=team:vision", ids, 8, &page), 2);
    cr_assert_eq(ids[0], b);
    cr_assert_eq(ids[1], a);
    cr_assert_eq(json_integer_value(json_object_get(page, "total")), 2, "total counts the filtered list");
    cr_assert_str_eq(str(json_object_get(json_array_get(json_object_get(page, "jobs"), 0), "tags"), "run"), "4",
                     "rows carry their tags");
    json_decref(page);
    /* Repeated: every one must match. */
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=team:vision&tag=run:3", ids, 8, NULL), 1);
    cr_assert_eq(ids[0], a);
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=team:vision&tag=run:5", ids, 8, NULL), 0);
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=team:vision&tag=team:speech", ids, 8, NULL), 0);
    /* With the other filters, an empty value, a value with a colon or escapes. */
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=team:speech&kind=inet&state=succeeded", ids, 8, NULL), 1);
    cr_assert_eq(ids[0], c);
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=a.b/c-d_e:", ids, 8, NULL), 1);
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=note:caf%C3%A9%20%E2%80%94%20ok", ids, 8, NULL), 1);
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?tag=", ids, 8, NULL), 4, "an empty tag= filters nothing");
    stop_server(&s);
}

Test(api_conventions, bad_tags_are_refused_naming_the_field) {
    server s = start_server();
    /* 17 tags; a key one longer than the most; a value one longer than the most */
    char many[1024] = "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"tags\":{";
    for (int i = 0; i <= PGD_TAGS_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s\"k%d\":\"v\"", i ? "," : "", i);
    strcat(many, "}}");
    char long_key[PGD_TAG_KEY_MAX + 2], long_value[PGD_TAG_VALUE_MAX + 2], key_body[512], value_body[512];
    memset(long_key, 'k', PGD_TAG_KEY_MAX + 1);
    long_key[PGD_TAG_KEY_MAX + 1] = 0;
    memset(long_value, 'v', PGD_TAG_VALUE_MAX + 1);
    long_value[PGD_TAG_VALUE_MAX + 1] = 0;
    snprintf(key_body, sizeof key_body, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"tags\":{\"%s\":\"v\"}}", long_key);
    snprintf(value_body, sizeof value_body, "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"tags\":{\"k\":\"%s\"}}",
             long_value);
#define WITH_TAGS(t) "{\"kind\":\"inet\",\"program\":\"@main = 7\",\"tags\":" t "}"
    const refusal cases[] = {
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("[\"a\"]"), 400, "invalid_spec", .field = "tags",
         .says = "must be an object of strings"},
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("\"team=vision\""), 400, "invalid_spec", .field = "tags"},
        {"POST", "/api/v1/jobs", json_headers, many, 400, "invalid_spec", .field = "tags",
         .says = "17 tags; the most is 16"},
        {"POST", "/api/v1/jobs", json_headers, key_body, 400, "invalid_spec", .field = "tags",
         .says = "a key is 1 to 64 characters"},
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("{\"\":\"v\"}"), 400, "invalid_spec", .field = "tags",
         .says = "a key is 1 to 64 characters"},
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("{\"a:b\":\"v\"}"), 400, "invalid_spec", .field = "tags",
         .says = "key 'a:b' has ':' at character 2"},
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("{\"t\\u00e9am\":\"v\"}"), 400, "invalid_spec",
         .field = "tags", .says = "a key is letters, digits"},
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("{\"run\":3}"), 400, "invalid_spec", .field = "tags.run",
         .says = "must be a string"},
        {"POST", "/api/v1/jobs", json_headers, value_body, 400, "invalid_spec", .field = "tags.k",
         .says = "the value is 257 bytes; the most is 256"},
        {"POST", "/api/v1/jobs", json_headers, WITH_TAGS("{\"k\":\"two\\nlines\"}"), 400, "invalid_spec",
         .field = "tags.k", .says = "control character (0x0A) at byte 4"},
        {"GET", "/api/v1/jobs?tag=team", NULL, NULL, 400, "invalid_parameter", .field = "tag",
         .says = "a tag filter is key:value"},
        {"GET", "/api/v1/jobs?tag=te%20am:vision", NULL, NULL, 400, "invalid_parameter", .field = "tag",
         .says = "has ' ' at character 3"},
        {"GET", "/api/v1/jobs?tag=:vision", NULL, NULL, 400, "invalid_parameter", .field = "tag",
         .says = "a key is 1 to 64"},
        {"GET", "/api/v1/jobs?tag=k:a%0Ab", NULL, NULL, 400, "invalid_parameter", .field = "tag",
         .says = "control character"},
        {"GET", "/api/v1/jobs?tag=a:1&tag=a:2&tag=a:3&tag=a:4&tag=a:5&tag=a:6&tag=a:7&tag=a:8&tag=a:9&tag=a:10"
                "&tag=a:11&tag=a:12&tag=a:13&tag=a:14&tag=a:15&tag=a:16&tag=a:17",
         NULL, NULL, 400, "invalid_parameter", .field = "tag", .says = "17 filters; the most is 16"},
    };
#undef WITH_TAGS
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    cr_assert_eq(job_total(&s), 0, "nothing was stored");
    stop_server(&s);
}

/* ---- list rows: summaries ---------------------------------------------------------------- */

/* GET /api/v1/jobs's row of job id (a new reference). */
static json_t *list_row(const server *s, int64_t id) {
    json_t *v = get_json(s, "/api/v1/jobs?limit=500", 200);
    json_t *jobs = json_object_get(v, "jobs"), *row = NULL;
    for (size_t i = 0; i < json_array_size(jobs) && !row; i++)
        if (json_integer_value(json_object_get(json_array_get(jobs, i), "id")) == id)
            row = json_incref(json_array_get(jobs, i));
    json_decref(v);
    cr_assert_not_null(row, "job %lld is listed", (long long)id);
    cr_assert_null(json_object_get(row, "result"), "a row has no result");
    cr_assert_null(json_object_get(row, "spec"), "a row has no spec");
    return row;
}

Test(api_conventions, list_rows_carry_a_summary_instead_of_the_result) {
    server s = start_server();
    /* An inet job whose normal form is long: (1 (2 (3 ... (40 0)...))) */
    char program[1024] = "0";
    for (int i = 40; i >= 1; i--) {
        char next[1024];
        snprintf(next, sizeof next, "(%d %s)", i, program);
        snprintf(program, sizeof program, "%s", next);
    }
    char body[1200];
    snprintf(body, sizeof body, "{\"kind\":\"inet\",\"program\":\"@main = %s\"}", program);
    int64_t inet = submit(&s, body);
    int64_t xor = submit_xor(&s, 20, NULL);
    int64_t bench = submit(&s, gemm_bench_spec);
    json_t *fib = inet_spec_from("examples/inet/fib.hvm");
    json_object_set_new(fib, "limits", json_pack("{s:i}", "max_interactions", 1000));
    char *fib_body = json_dumps(fib, JSON_COMPACT);
    int64_t failing = submit(&s, fib_body);
    free(fib_body);
    json_decref(fib);

    json_t *job = wait_succeeded(&s, inet);
    const char *full = str(json_object_get(job, "result"), "normal_form");
    cr_assert_str_eq(full, program, "the job keeps its whole result");
    cr_assert(json_is_object(json_object_get(job, "summary")), "a job carries its summary too");
    json_decref(job);
    json_t *row = list_row(&s, inet);
    json_t *sum = json_object_get(row, "summary");
    const char *cut = str(sum, "normal_form");
    cr_assert_eq(strlen(cut), 64 + 3, "64 characters and an ellipsis: %s", cut);
    cr_assert_eq(strncmp(cut, program, 64), 0);
    cr_assert_str_eq(cut + 64, "\xe2\x80\xa6");
    cr_assert_gt(json_integer_value(json_object_get(sum, "interactions")), 0);
    cr_assert(json_is_number(json_object_get(sum, "mips")));
    json_decref(row);

    json_decref(wait_succeeded(&s, xor));
    row = list_row(&s, xor);
    sum = json_object_get(row, "summary");
    double acc = json_number_value(json_object_get(sum, "accuracy"));
    cr_assert(json_is_number(json_object_get(sum, "accuracy")) && acc >= 0 && acc <= 1, "accuracy %g", acc);
    cr_assert(json_is_number(json_object_get(sum, "loss")));
    cr_assert_eq(json_integer_value(json_object_get(sum, "epochs")), 20);
    cr_assert_gt(json_integer_value(json_object_get(sum, "steps")), 0);
    cr_assert_null(json_object_get(sum, "weights_sha256"), "only the headline figures");
    json_decref(row);

    job = wait_bench(&s, bench);
    size_t rows = json_array_size(json_object_get(json_object_get(job, "result"), "rows"));
    cr_assert_gt(rows, 0);
    json_decref(job);
    row = list_row(&s, bench);
    sum = json_object_get(row, "summary");
    cr_assert_str_eq(str(sum, "suite"), "gemm");
    cr_assert_eq(json_integer_value(json_object_get(sum, "rows")), (json_int_t)rows, "the rows' count, not the rows");
    json_decref(row);

    job = wait_state(&s, failing, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_decref(job);
    row = list_row(&s, failing);
    cr_assert(json_is_null(json_object_get(row, "summary")), "no result, no summary");
    cr_assert(json_is_object(json_object_get(row, "error")), "a row keeps its error");
    json_decref(row);
    stop_server(&s);
}

/* ---- cursor pages ------------------------------------------------------------------------- */

Test(api_conventions, cursor_pages_do_not_shift_as_jobs_arrive) {
    server s = start_server();
    int64_t made[8];
    for (int i = 0; i < 5; i++) made[i] = submit(&s, QUICK_SPEC);
    int64_t ids[8];
    json_t *page;
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?limit=2", ids, 8, &page), 2);
    cr_assert_eq(ids[0], made[4]);
    cr_assert_eq(ids[1], made[3]);
    char next[64];
    snprintf(next, sizeof next, "%s", str(page, "next_cursor"));
    json_decref(page);
    /* Two jobs arrive: an offset page would shift by two, the cursor's does not. */
    made[5] = submit(&s, QUICK_SPEC);
    made[6] = submit(&s, QUICK_SPEC);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/jobs?limit=2&cursor=%s", next);
    cr_assert_eq(listed_ids(&s, path, ids, 8, &page), 2);
    cr_assert_eq(ids[0], made[2]);
    cr_assert_eq(ids[1], made[1]);
    cr_assert_eq(json_integer_value(json_object_get(page, "total")), 7, "total is the whole list");
    snprintf(next, sizeof next, "%s", str(page, "next_cursor"));
    json_decref(page);
    snprintf(path, sizeof path, "/api/v1/jobs?limit=2&cursor=%s", next);
    cr_assert_eq(listed_ids(&s, path, ids, 8, &page), 1);
    cr_assert_eq(ids[0], made[0]);
    cr_assert(json_is_null(json_object_get(page, "next_cursor")), "null at the end");
    json_decref(page);
    /* A page that ends exactly at the end says so too; offset works as before. */
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?limit=7", ids, 8, &page), 7);
    cr_assert(json_is_null(json_object_get(page, "next_cursor")));
    json_decref(page);
    cr_assert_eq(listed_ids(&s, "/api/v1/jobs?limit=2&offset=1", ids, 8, &page), 2);
    cr_assert_eq(ids[0], made[5]);
    cr_assert_eq(ids[1], made[4]);
    cr_assert(json_is_string(json_object_get(page, "next_cursor")), "an offset page has a next cursor too");
    json_decref(page);
    /* With filters: the cursor walks the filtered list. */
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE kind = 'inet' AND id > ?1", 0), 7);

    const refusal cases[] = {
        {"GET", "/api/v1/jobs?cursor=zzz", NULL, NULL, 400, "invalid_parameter", .field = "cursor",
         .says = "is not a cursor this server gave"},
        {"GET", "/api/v1/jobs?cursor=AAAAAAAAAAA", NULL, NULL, 400, "invalid_parameter", .field = "cursor"},
        {"GET", "/api/v1/jobs?cursor=AAAAAAAAAAB", NULL, NULL, 400, "invalid_parameter", .field = "cursor"},
        {"GET", "/api/v1/jobs?cursor=AAAAAAAAAA!", NULL, NULL, 400, "invalid_parameter", .field = "cursor"},
        {"GET", "/api/v1/jobs?cursor=gAAAAAAAAAA", NULL, NULL, 400, "invalid_parameter", .field = "cursor"},
        {"GET", "/api/v1/jobs?cursor=AAAAAAAAAAM&offset=2", NULL, NULL, 400, "invalid_parameter", .field = "offset",
         .says = "leave offset out"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}

/* ---- the end of a job's event stream ----------------------------------------------------- */

/* Reads a job's event stream to its end: the names of its events in order into names (a space
 * after each), the last event's data into *last. */
static void read_stream(const server *s, int64_t id, char *names, size_t size, json_t **last) {
    char path[64], auth[256];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    auth_header(s, auth, sizeof auth);
    const char *const headers[] = {auth, NULL};
    http_stream *st = http_stream_open(s->port, path, auth[0] ? headers : NULL, HTTP_TIMEOUT_MS);
    cr_assert_not_null(st, "%s", http_last_error());
    cr_assert_eq(http_stream_head(st)->status, 200);
    int n;
    while ((n = http_stream_read(st, JOB_TIMEOUT_MS)) > 0) {
    }
    cr_assert_eq(n, 0, "the stream ends: %s", http_last_error());
    size_t len;
    char *text = strdup(http_stream_data(st, &len));
    http_stream_close(st);
    names[0] = 0;
    *last = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "event: ", 7)) snprintf(names + strlen(names), size - strlen(names), "%s ", line + 7);
        if (!strncmp(line, "data: ", 6)) {
            json_decref(*last);
            *last = json_loads(line + 6, 0, NULL);
        }
    }
    free(text);
}

Test(api_conventions, a_job_stream_ends_with_an_end_event_after_its_final_state) {
    server s = start_server();
    int64_t id = submit_xor(&s, 200, NULL);
    char names[65536];
    json_t *last;
    read_stream(&s, id, names, sizeof names, &last); /* opened while it is queued or running */
    size_t len = strlen(names), tail = strlen("state end ");
    cr_assert(len > tail && !strcmp(names + len - tail, "state end "), "the final state, then end: ...%s",
              len > 60 ? names + len - 60 : names);
    cr_assert_eq(json_integer_value(json_object_get(last, "id")), id);
    cr_assert_str_eq(str(last, "state"), "succeeded");
    json_decref(last);
    /* A finished job's stream: its state, then end. */
    read_stream(&s, id, names, sizeof names, &last);
    cr_assert_str_eq(names, "state end ");
    cr_assert_str_eq(str(last, "state"), "succeeded");
    json_decref(last);
    /* A cancelled one says so. */
    int64_t queued = submit_xor(&s, 100000, NULL);
    cr_assert_eq(status_of(&s, "POST", queued, "/cancel") / 100, 2);
    json_decref(wait_state(&s, queued, "cancelled", JOB_TIMEOUT_MS));
    read_stream(&s, queued, names, sizeof names, &last);
    cr_assert_str_eq(names, "state end ");
    cr_assert_str_eq(str(last, "state"), "cancelled");
    json_decref(last);
    /* `paragon submit --follow` follows this stream and still ends with the job. */
    char spec_file[300], args[400], *out, *err;
    snprintf(spec_file, sizeof spec_file, "%s/quick.json", tmpdir);
    FILE *f = fopen(spec_file, "w");
    cr_assert_not_null(f);
    fputs(QUICK_SPEC, f);
    fclose(f);
    snprintf(args, sizeof args, "submit '%s' --follow", spec_file);
    cr_assert_eq(run_cli(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "succeeded"), "%s", out);
    free(out), free(err);
    stop_server(&s);
}

/* ---- the OpenAPI document ---------------------------------------------------------------- */

/* The doc's operation for a route ("GET" -> "get"), or NULL. */
static json_t *operation(json_t *doc, const char *pattern, const char *method) {
    char lower[16];
    size_t i = 0;
    for (; method[i] && i + 1 < sizeof lower; i++) lower[i] = (char)(method[i] | 0x20);
    lower[i] = 0;
    return json_object_get(json_object_get(json_object_get(doc, "paths"), pattern), lower);
}

/* A parameter as written or through its $ref to components.parameters. */
static json_t *resolve(json_t *doc, json_t *p) {
    const char *ref = str(p, "$ref");
    const char *prefix = "#/components/parameters/";
    if (!ref) return p;
    cr_assert_eq(strncmp(ref, prefix, strlen(prefix)), 0, "%s", ref);
    json_t *to = json_object_get(json_object_get(json_object_get(doc, "components"), "parameters"), ref + strlen(prefix));
    cr_assert_not_null(to, "%s resolves", ref);
    return to;
}

static const char *const methods[] = {"get", "put", "post", "delete", "patch", "head", "options", "trace"};

/* Every route of server/api.c's table is in the document with its method and its path
 * parameters, and every operation of the document is a route. A new route fails this until it
 * is described in server/openapi.json. */
Test(api_conventions, the_openapi_document_describes_exactly_the_routes) {
    server s = start_server();
    http_response r = bare_request(&s, "GET", "/api/v1/openapi.json", NULL, NULL);
    cr_assert_eq(r.status, 200, "no token needed: %s", r.body);
    char ct[64];
    cr_assert_str_eq(http_header(&r, "Content-Type", ct, sizeof ct), "application/json");
    json_t *doc = parse_body(&r);
    http_response_free(&r);
    cr_assert(!strncmp(str(doc, "openapi"), "3.0", 3), "OpenAPI 3.0: %s", str(doc, "openapi"));
    cr_assert_not_null(str(json_object_get(doc, "info"), "title"));

    size_t n;
    const pgd_route *routes = pgd_api_routes(&n);
    char missing[2048] = ""; /* every route not described, said at once at the end */
    for (size_t i = 0; i < n; i++) {
        json_t *op = operation(doc, routes[i].pattern, routes[i].method);
        if (!op) {
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s %s;", routes[i].method,
                     routes[i].pattern);
            continue;
        }
        cr_assert(json_is_object(json_object_get(op, "responses")) && json_object_size(json_object_get(op, "responses")),
                  "%s %s has responses", routes[i].method, routes[i].pattern);
        /* open routes say so (an empty security list); the others ask for the token */
        json_t *security = json_object_get(op, "security");
        if (routes[i].access == PGD_ROUTE_OPEN)
            cr_assert(json_is_array(security) && json_array_size(security) == 0, "%s %s is open", routes[i].method,
                      routes[i].pattern);
        else
            cr_assert_null(security, "%s %s takes the document's default (the token)", routes[i].method,
                           routes[i].pattern);
        /* each {name} of the pattern is a path parameter, and there are no others */
        size_t in_path = 0;
        json_t *params = json_object_get(op, "parameters"), *p;
        size_t k;
        json_array_foreach(params, k, p) {
            json_t *q = resolve(doc, p);
            if (strcmp(str(q, "in"), "path")) continue;
            char braced[64];
            snprintf(braced, sizeof braced, "{%s}", str(q, "name"));
            cr_assert(strstr(routes[i].pattern, braced), "%s %s: path parameter %s", routes[i].method,
                      routes[i].pattern, braced);
            cr_assert(json_is_true(json_object_get(q, "required")), "path parameters are required");
            in_path++;
        }
        size_t braces = 0;
        for (const char *c = routes[i].pattern; *c; c++) braces += *c == '{';
        cr_assert_eq(in_path, braces, "%s %s: every path parameter is described", routes[i].method, routes[i].pattern);
    }
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
            if (!json_object_get(item, methods[m])) continue;
            bool routed = false;
            for (size_t i = 0; i < n && !routed; i++) {
                char lower[16];
                size_t c = 0;
                for (; routes[i].method[c] && c + 1 < sizeof lower; c++) lower[c] = (char)(routes[i].method[c] | 0x20);
                lower[c] = 0;
                routed = !strcmp(routes[i].pattern, path) && !strcmp(lower, methods[m]);
            }
            cr_assert(routed, "the document's %s %s is a route of server/api.c", methods[m], path);
        }
    }
    /* The bounds it states are the server's own. */
    json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    json_t *tags = json_object_get(schemas, "Tags");
    cr_assert_eq(json_integer_value(json_object_get(tags, "maxProperties")), PGD_TAGS_MAX);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(tags, "additionalProperties"), "maxLength")),
                 PGD_TAG_VALUE_MAX);
    char pattern[64];
    snprintf(pattern, sizeof pattern, "{1,%d}$", PGD_TAG_KEY_MAX);
    cr_assert(strstr(str(tags, "x-key-pattern"), pattern), "key length");
    json_t *sub = json_object_get(json_object_get(json_object_get(schemas, "JobSubmission"), "properties"), "submission_id");
    cr_assert_eq(json_integer_value(json_object_get(sub, "maxLength")), PGD_SUBMISSION_ID_MAX);
    json_decref(doc);
    stop_server(&s);
    cr_assert_str_eq(missing, "", "server/openapi.json describes every route; it lacks:%s", missing);
}

/* ---- CORS -------------------------------------------------------------------------------- */

#define ORIGIN "http://app.example:8443"

static bool has_header(const http_response *r, const char *name, const char *want) {
    char v[256];
    if (!http_header(r, name, v, sizeof v)) return false;
    cr_assert_str_eq(v, want, "%s", name);
    return true;
}

Test(api_conventions, cors_answers_a_configured_origin_and_no_other) {
    int err_fd;
    const char *const flags[] = {"--cors-origin", ORIGIN, "--cors-origin=https://other.example", NULL};
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    const char *const preflight[] = {"Origin: " ORIGIN, "Access-Control-Request-Method: POST",
                                     "Access-Control-Request-Headers: authorization, content-type, idempotency-key",
                                     NULL};
    http_response r = bare_request(&s, "OPTIONS", "/api/v1/jobs", preflight, NULL);
    cr_assert_eq(r.status, 204, "%s", r.head);
    cr_assert(has_header(&r, "Access-Control-Allow-Origin", ORIGIN));
    cr_assert(has_header(&r, "Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, DELETE"));
    cr_assert(has_header(&r, "Access-Control-Allow-Headers",
                         "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Content-SHA256, If-None-Match"));
    cr_assert(has_header(&r, "Access-Control-Max-Age", "600"));
    cr_assert(has_header(&r, "Vary", "Origin"));
    http_response_free(&r);

    /* Answers to the origin carry it, errors and streams included; the second origin too. */
    const char *const from[] = {"Origin: " ORIGIN, NULL};
    const char *paths[] = {"/api/v1/jobs", "/api/v1/jobs/999", "/healthz"};
    for (size_t i = 0; i < 3; i++) {
        r = request(&s, "GET", paths[i], from, NULL);
        cr_assert(has_header(&r, "Access-Control-Allow-Origin", ORIGIN), "%s: %s", paths[i], r.head);
        cr_assert(has_header(&r, "Vary", "Origin"), "%s", paths[i]);
        cr_assert(has_header(&r, "Access-Control-Expose-Headers", "Location, Retry-After"));
        http_response_free(&r);
    }
    const char *const other[] = {"Origin: https://other.example", NULL};
    r = request(&s, "GET", "/api/v1/jobs", other, NULL);
    cr_assert(has_header(&r, "Access-Control-Allow-Origin", "https://other.example"));
    http_response_free(&r);
    const char *const post[] = {"Origin: " ORIGIN, "Content-Type: application/json", NULL};
    r = request(&s, "POST", "/api/v1/jobs", post, QUICK_SPEC);
    cr_assert_eq(r.status, 201);
    cr_assert(has_header(&r, "Access-Control-Allow-Origin", ORIGIN));
    http_response_free(&r);

    /* An origin not configured gets no CORS header, and its preflight is no preflight. */
    const char *const stranger[] = {"Origin: http://evil.example", "Access-Control-Request-Method: POST", NULL};
    r = bare_request(&s, "OPTIONS", "/api/v1/jobs", stranger, NULL);
    cr_assert_neq(r.status, 204);
    cr_assert_null(http_header(&r, "Access-Control-Allow-Origin", (char[8]){0}, 8), "%s", r.head);
    cr_assert_null(http_header(&r, "Access-Control-Allow-Methods", (char[8]){0}, 8));
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs", stranger, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_null(http_header(&r, "Access-Control-Allow-Origin", (char[8]){0}, 8), "%s", r.head);
    cr_assert(has_header(&r, "Vary", "Origin"), "the answer depends on Origin for caches");
    http_response_free(&r);
    free(stop_server_with(&s, err_fd));

    /* Without the flag nothing changes. */
    s = start_server();
    r = bare_request(&s, "OPTIONS", "/api/v1/jobs", preflight, NULL);
    cr_assert_neq(r.status, 204);
    cr_assert_null(http_header(&r, "Access-Control-Allow-Origin", (char[8]){0}, 8), "%s", r.head);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs", from, NULL);
    cr_assert_null(http_header(&r, "Access-Control-Allow-Origin", (char[8]){0}, 8), "%s", r.head);
    cr_assert_null(http_header(&r, "Vary", (char[8]){0}, 8), "%s", r.head);
    http_response_free(&r);
    stop_server(&s);
}

Test(api_conventions, a_bad_cors_origin_stops_paragond_at_start) {
    const struct {
        const char *value, *says;
    } cases[] = {
        {"*", "'*' is not an origin"},
        {"app.example", "'app.example' is not an origin"},
        {"http://app.example/", "is not an origin"},
        {"http://app.example:8443/path", "is not an origin"},
        {"ftp://app.example", "is not an origin"},
        {"http://app.example:port", "is not an origin"},
        {"", "the value is empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *args[] = {"--cors-origin", cases[i].value, NULL};
        char *out, *err;
        cr_assert_eq(run_to_exit(args, NULL, &out, &err), 2, "--cors-origin '%s': %s", cases[i].value, err);
        cr_assert(strstr(err, cases[i].says), "--cors-origin '%s': %s", cases[i].value, err);
        free(out), free(err);
    }
    /* one more than the most, each as one argument (--cors-origin=ORIGIN) */
    const char *args[PGD_CORS_ORIGINS_MAX + 2];
    char values[PGD_CORS_ORIGINS_MAX + 1][48];
    size_t n = 0;
    for (int i = 0; i <= PGD_CORS_ORIGINS_MAX; i++) {
        snprintf(values[i], sizeof values[i], "--cors-origin=http://o%d.example", i);
        args[n++] = values[i];
    }
    args[n] = NULL;
    char *out, *err;
    cr_assert_eq(run_to_exit(args, NULL, &out, &err), 2, "%s", err);
    cr_assert(strstr(err, "more than 16 origins"), "%s", err);
    free(out), free(err);
}

/* ---- the paragon command ----------------------------------------------------------------- */

Test(api_conventions, paragon_jobs_prints_summaries_and_the_next_cursor) {
    server s = start_server();
    int64_t first = submit(&s, "{\"kind\":\"inet\",\"program\":\"@main = 41\",\"tags\":{\"team\":\"vision\"}}");
    int64_t second = submit(&s, QUICK_SPEC);
    json_decref(wait_succeeded(&s, first));
    json_decref(wait_succeeded(&s, second));
    char *out, *err;
    cr_assert_eq(run_cli(&s, "jobs --limit 1", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "SUMMARY"), "%s", out);
    cr_assert(strstr(out, "normal_form 7"), "the row's summary: %s", out);
    const char *at = strstr(out, "next page: --cursor ");
    cr_assert_not_null(at, "%s", out);
    char cursor[32];
    cr_assert_eq(sscanf(at, "next page: --cursor %31s", cursor), 1);
    free(out), free(err);
    char args[96];
    snprintf(args, sizeof args, "jobs --limit 1 --cursor %s", cursor);
    cr_assert_eq(run_cli(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "normal_form 41"), "the page after the cursor: %s", out);
    cr_assert_null(strstr(out, "next page"), "the last page: %s", out);
    free(out), free(err);
    cr_assert_eq(run_cli(&s, "jobs --tag team:vision", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "normal_form 41") && !strstr(out, "normal_form 7"), "%s", out);
    free(out), free(err);
    cr_assert_eq(run_cli(&s, "jobs --cursor nope", &out, &err), 1);
    cr_assert(strstr(err, "cursor: 'nope' is not a cursor"), "%s", err);
    free(out), free(err);
    stop_server(&s);
}
