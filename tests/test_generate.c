/* test_generate.c: a character GPT through a live paragond: the train job on a text under the
 * datasets directory, its per-step metrics, then text from its checkpoint with
 * POST /api/v1/jobs/{id}/generate as one JSON body and as a stream of token events, the same
 * text as the engine gives, and the refusals: prompts the model cannot read, jobs without a
 * gpt checkpoint; text from a job still training runs on the host at once. */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(generate, .init = harness_setup, .fini = harness_teardown);

static http_response post_generate(const server *s, int64_t id, const char *body) {
    char path[96];
    return request(s, "POST", job_url(path, sizeof path, id, "/generate"), json_headers, body);
}

Test(generate, a_gpt_job_trains_and_generates_as_json_and_as_a_stream) {
    server s = start_server();
    int64_t id = train_tiny_gpt(&s);
    json_t *job = job_now(&s, id);
    char device[64];
    snprintf(device, sizeof device, "%s", str(job, "device"));
    json_t *result = json_object_get(job, "result");
    cr_assert_eq(json_integer_value(json_object_get(result, "steps")), 20);
    cr_assert(json_number_value(json_object_get(result, "val_loss")) > 0);
    json_decref(job);
    /* the loss every log_every steps, so a chart moves before the end */
    char path[128];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss", (long long)id);
    json_t *m = get_json(&s, path, 200);
    cr_assert_eq(json_array_size(json_object_get(m, "metrics")), 10);
    json_decref(m);
    /* and a log line each log_every steps (logs -f follows them), an evaluation's own at its steps */
    http_response log = request(&s, "GET", job_url(path, sizeof path, id, "/logs"), NULL, NULL);
    cr_assert(strstr(log.body, "step 2/20: loss ") && strstr(log.body, "step 8/20: loss ") &&
              strstr(log.body, "step 10/20: loss ") && strstr(log.body, "val_loss"), "%s", log.body);
    http_response_free(&log);

    const char *ask = "{\"prompt\":\"the lazy\",\"max_tokens\":24,\"temperature\":0.7,\"top_k\":4,\"seed\":5}";
    http_response r = post_generate(&s, id, ask);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    json_t *gen = parse_body(&r);
    http_response_free(&r);
    cr_assert_str_eq(str(gen, "state"), "succeeded");
    cr_assert_str_eq(str(gen, "kind"), "generate");
    cr_assert_str_eq(str(gen, "device"), device, "it runs where its model trained");
    json_t *res = json_object_get(gen, "result");
    const char *completion = str(res, "completion");
    cr_assert_eq(strlen(completion), 24, "%s", completion);
    cr_assert_eq(strncmp(str(res, "text"), "the lazy", 8), 0);
    cr_assert(json_number_value(json_object_get(res, "tokens_per_second")) > 0);
    char first[64];
    snprintf(first, sizeof first, "%s", completion);

    /* streamed: a token event per character, then the final state with the same text; on the
     * host reference this time, and the same text (the draws do not depend on the device) */
    const char *streamed = "{\"prompt\":\"the lazy\",\"max_tokens\":24,\"temperature\":0.7,\"top_k\":4,\"seed\":5,"
                           "\"stream\":true,\"device\":\"host\"}";
    r = post_generate(&s, id, streamed);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    char type[64];
    cr_assert_not_null(http_header(&r, "Content-Type", type, sizeof type));
    cr_assert_str_eq(type, "text/event-stream");
    char text[64] = "";
    int tokens = 0;
    for (const char *p = strstr(r.body, "event: token\ndata: "); p; p = strstr(p + 1, "event: token\ndata: ")) {
        json_t *ev = json_loads(p + strlen("event: token\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
        cr_assert_not_null(ev);
        cr_assert_eq(json_integer_value(json_object_get(ev, "index")), tokens);
        strncat(text, json_string_value(json_object_get(ev, "text")), sizeof text - strlen(text) - 1);
        tokens++;
        json_decref(ev);
    }
    cr_assert_eq(tokens, 24);
    cr_assert_str_eq(text, first);
    const char *last = strstr(r.body, "\"state\":\"succeeded\"");
    cr_assert_not_null(last, "the stream ends with the job's final state: %s", r.body);
    http_response_free(&r);
    json_decref(gen);
    stop_server(&s);
}

Test(generate, requests_it_cannot_serve_are_refused_naming_the_problem) {
    server s = start_server();
    int64_t id = train_tiny_gpt(&s);
    char path[96], other[96], xor_path[96];
    job_url(path, sizeof path, id, "/generate");
    job_url(other, sizeof other, 999, "/generate");
    int64_t xor = submit_xor(&s, 5, NULL);
    json_decref(wait_succeeded(&s, xor));
    job_url(xor_path, sizeof xor_path, xor, "/generate");
    const refusal cases[] = {
        {"POST", path, json_headers, "{\"prompt\":\"the QUICK\"}", 400, "invalid_spec", .field = "prompt",
         .says = "character 4 ('Q') is not in the model's vocabulary"},
        {"POST", path, json_headers, "{\"prompt\":\"\"}", 400, "invalid_spec", .field = "prompt", .says = "empty"},
        {"POST", path, json_headers, "{\"prompt\":\"the quick brown\"}", 400, "invalid_spec", .field = "prompt",
         .says = "the model's context holds 8"},
        {"POST", path, json_headers, "{\"prompt\":\"the\",\"max_tokens\":0}", 400, "invalid_spec",
         .field = "max_tokens"},
        {"POST", path, json_headers, "{\"prompt\":\"the\",\"colour\":1}", 400, "invalid_spec", .field = "colour"},
        {"POST", path, json_headers, "{\"prompt\":\"the\",\"device\":\"tpu-9\"}", 400, "invalid_spec", .field = "device"},
        {"POST", path, json_headers, "{\"kind\":\"train\",\"prompt\":\"the\"}", 400, "invalid_spec", .says = "the job is the one in the path"},
        {"POST", path, NULL, "{\"prompt\":\"the\"}", 415, "unsupported_media_type", .says = "Content-Type"},
        {"POST", other, json_headers, "{\"prompt\":\"the\"}", 404, "not_found", .says = "999"},
        {"POST", xor_path, json_headers, "{\"prompt\":\"the\"}", 409, "conflict", .says = "not a gpt train job"},
        {"POST", "/api/v1/jobs", json_headers, "{\"kind\":\"generate\",\"prompt\":\"the\",\"job\":1}", 400,
         "invalid_spec", .field = "kind", .says = "/generate"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}

/* Text from a gpt job that still trains runs on the host, beside the training, instead of waiting
 * for its device; once the training ends, on the device it ran on. */
Test(generate, text_from_a_job_still_training_runs_on_the_host_at_once) {
    server s = start_server();
    write_tiny_text(&s);
    int64_t id = submit(&s, "{\"kind\":\"train\",\"name\":\"tiny-gpt\",\"device\":\"cpu\",\"seed\":1,\"model\":{\"type\":"
                            "\"gpt\",\"n_layer\":1,\"n_head\":2,\"d_model\":16,\"context\":8},\"data\":{\"source\":"
                            "\"text\",\"path\":\"tiny.txt\"},\"optimizer\":{\"type\":\"adamw\",\"lr\":0.01},"
                            "\"batch_size\":4,\"steps\":1000000,\"checkpoint_every\":5,\"log_every\":100}");
    char url[128];
    http_response r = {0};
    for (int tries = 0; tries < 3000; tries++) { /* its first checkpoint */
        http_response_free(&r);
        r = request(&s, "GET", job_url(url, sizeof url, id, "/checkpoint"), NULL, NULL);
        if (r.status == 200) break;
        usleep(10000);
    }
    cr_assert_eq(r.status, 200, "a checkpoint within 30 s: %s", r.body);
    http_response_free(&r);
    r = request(&s, "POST", job_url(url, sizeof url, id, "/generate"), json_headers,
                "{\"prompt\":\"a\",\"max_tokens\":5}");
    cr_assert_eq(r.status, 200, "%ld: %s", r.status, r.body);
    json_t *gen = parse_body(&r);
    http_response_free(&r);
    cr_assert_str_eq(str(gen, "state"), "succeeded", "it did not wait for the training: %s", json_dumps(gen, 0));
    cr_assert_str_eq(str(gen, "device"), "host");
    json_decref(gen);
    json_t *job = job_now(&s, id);
    cr_assert_str_eq(str(job, "state"), "running", "the training goes on");
    json_decref(job);
    cr_assert_eq(status_of(&s, "POST", id, "/cancel"), 202);
    json_decref(wait_state(&s, id, "cancelled", JOB_TIMEOUT_MS));
    stop_server(&s);
}
