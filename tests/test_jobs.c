/* test_jobs.c: jobs through the API of a live paragond, end to end: the XOR training job (its
 * result, metrics and rows in the SQLite file), an inet job's normal form and limits, cancel of a
 * queued and of a running job, delete with its rows and files, the checkpoint download. */
#include "assets.h"
#include "paragond_harness.h"
#include "paragon.h"
#include "safetensors_check.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(jobs, .init = harness_setup, .fini = harness_teardown);

Test(jobs, xor_job_trains_to_full_accuracy) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_t *job = wait_succeeded(&s, id);

    cr_assert_str_eq(str(job, "kind"), "train");
    cr_assert_str_eq(str(job, "name"), "xor");
    cr_assert_str_eq(str(job, "device_requested"), "auto");
    const char *device = str(job, "device");
    cr_assert(device && strcmp(device, "host") != 0, "auto picks an OpenCL device: %s", device);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 1);
    cr_assert_float_eq(json_real_value(json_object_get(job, "progress")), 1.0, 1e-9);
    cr_assert(json_is_null(json_object_get(job, "error")));
    cr_assert(str(job, "started_at") && str(job, "finished_at"));
    json_t *spec = json_object_get(job, "spec");
    cr_assert_eq(json_integer_value(json_object_get(spec, "epochs")), XOR_EPOCHS);
    json_t *result = json_object_get(job, "result");
    cr_assert(json_is_object(result));
    cr_assert_float_eq(json_number_value(json_object_get(result, "accuracy")), 1.0, 1e-12);
    const char *sha = str(result, "weights_sha256");
    cr_assert_not_null(sha);
    cr_assert_eq(strlen(sha), 64);
    for (const char *p = sha; *p; p++)
        cr_assert(isxdigit((unsigned char)*p) && !isupper((unsigned char)*p), "hex: %s", sha);
    char sha_copy[65];
    snprintf(sha_copy, sizeof sha_copy, "%s", sha);
    char device_copy[64];
    snprintf(device_copy, sizeof device_copy, "%s", device);
    json_decref(job);

    /* Metrics: one loss and one accuracy per epoch, in step order, learning visibly. */
    char path[128];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics", (long long)id);
    json_t *v = get_json(&s, path, 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "job_id")), id);
    json_t *metrics = json_object_get(v, "metrics");
    size_t n_loss = 0, n_acc = 0;
    double first_loss = 0, last_loss = 0, last_acc = 0;
    int64_t prev_step = INT64_MIN;
    const char *prev_name = "";
    size_t i;
    json_t *m;
    json_array_foreach(metrics, i, m) {
        const char *name = str(m, "name");
        int64_t step = json_integer_value(json_object_get(m, "step"));
        if (strcmp(name, prev_name) == 0) cr_assert_gt(step, prev_step, "ordered by step");
        else cr_assert_gt(strcmp(name, prev_name), 0, "ordered by name");
        prev_name = name;
        prev_step = step;
        double value = json_number_value(json_object_get(m, "value"));
        if (strcmp(name, "loss") == 0) {
            if (n_loss++ == 0) first_loss = value;
            last_loss = value;
        } else if (strcmp(name, "accuracy") == 0) {
            n_acc++;
            last_acc = value;
        }
    }
    cr_assert_eq(n_loss, XOR_EPOCHS);
    cr_assert_eq(n_acc, XOR_EPOCHS);
    cr_assert_lt(last_loss, first_loss, "loss falls: %g -> %g", first_loss, last_loss);
    cr_assert_float_eq(last_acc, 1.0, 1e-12);
    json_decref(v);

    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss", (long long)id);
    v = get_json(&s, path, 200);
    metrics = json_object_get(v, "metrics");
    cr_assert_eq(json_array_size(metrics), XOR_EPOCHS);
    int64_t cut = json_integer_value(json_object_get(json_array_get(metrics, XOR_EPOCHS - 11),
                                                     "step"));
    json_decref(v);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss&after_step=%lld",
             (long long)id, (long long)cut);
    v = get_json(&s, path, 200);
    metrics = json_object_get(v, "metrics");
    cr_assert_eq(json_array_size(metrics), 10, "after_step keeps the 10 later steps");
    json_array_foreach(metrics, i, m) cr_assert_str_eq(str(m, "name"), "loss");
    json_decref(v);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?after_step=soon", (long long)id);
    http_response r = request(&s, "GET", path, NULL, NULL);
    assert_error(&r, 400, "invalid_parameter", "after_step");
    http_response_free(&r);

    /* The list shows it, without its spec. */
    v = get_json(&s, "/api/v1/jobs?state=succeeded&kind=train", 200);
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 1);
    json_t *listed = json_array_get(json_object_get(v, "jobs"), 0);
    cr_assert_eq(json_integer_value(json_object_get(listed, "id")), id);
    cr_assert_null(json_object_get(listed, "spec"));
    json_decref(v);

    /* What the server wrote into its database file. */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(s.db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT state, attempts, device, json_extract(result,"
                                    " '$.accuracy'), json_extract(result, '$.weights_sha256'),"
                                    " started_at IS NOT NULL, finished_at IS NOT NULL,"
                                    " json_extract(spec, '$.epochs') FROM jobs WHERE id = ?1",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "succeeded");
    cr_assert_eq(sqlite3_column_int(st, 1), 1);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 2), device_copy);
    cr_assert_float_eq(sqlite3_column_double(st, 3), 1.0, 1e-12);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 4), sha_copy);
    cr_assert_eq(sqlite3_column_int(st, 5), 1);
    cr_assert_eq(sqlite3_column_int(st, 6), 1);
    cr_assert_eq(sqlite3_column_int(st, 7), XOR_EPOCHS);
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT count(*), count(DISTINCT step) FROM metrics"
                                    " WHERE job_id = ?1 AND name = ?2",
                                    -1, &st, NULL),
                 SQLITE_OK);
    const char *names[] = {"loss", "accuracy"};
    for (int k = 0; k < 2; k++) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, names[k], -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(st, 0), XOR_EPOCHS, "%s rows", names[k]);
        cr_assert_eq(sqlite3_column_int(st, 1), XOR_EPOCHS, "%s steps are distinct", names[k]);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT group_concat(version) FROM"
                                    " (SELECT version FROM schema_migrations ORDER BY version)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char versions[256] = ""; /* every migration paragond embeds, 1 to N */
    for (int v = 1; pgd_schema_sources[v - 1].name; v++)
        snprintf(versions + strlen(versions), sizeof versions - strlen(versions), "%s%d", v > 1 ? "," : "", v);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), versions);
    sqlite3_finalize(st);
    sqlite3_close(db);

    stop_server(&s);
}

/* An inet program through the API: stored, reduced on an OpenCL device, its normal form and
 * interaction count in the result; a limit hit is a failed job naming the limit; a malformed
 * program is a 400 naming its line and column. */
Test(jobs, inet_jobs_run_and_report_their_normal_form) {
    server s = start_server();
    json_t *spec = inet_spec_from("examples/inet/fib.hvm");
    json_object_set_new(spec, "name", json_string("fib"));
    char *body = json_dumps(spec, JSON_COMPACT);
    int64_t id = submit(&s, body);
    json_t *job = wait_succeeded(&s, id);
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(result, "normal_form"), "17711");
    cr_assert_eq(json_integer_value(json_object_get(result, "interactions")), 718993);
    cr_assert_str_neq(str(job, "device"), "host", "auto places inet jobs on an OpenCL device");
    cr_assert_str_eq(str(result, "device"), str(job, "device"));
    json_decref(job);
    /* its metrics end with the final count and rate, at the count as their step */
    char url[128];
    json_t *m = get_json(&s, job_url(url, sizeof url, id, "/metrics"), 200);
    json_t *rows = json_object_get(m, "metrics");
    int64_t last_step = 0;
    size_t i;
    json_t *row;
    bool final_count = false, final_rate = false;
    json_array_foreach(rows, i, row) {
        int64_t step = json_integer_value(json_object_get(row, "step"));
        if (step > last_step) last_step = step;
        final_count |= !strcmp(str(row, "name"), "interactions") && step == 718993 &&
                       json_number_value(json_object_get(row, "value")) == 718993;
        final_rate |= !strcmp(str(row, "name"), "mips") && step == 718993;
    }
    cr_assert(final_count && final_rate && last_step == 718993, "%s", json_dumps(m, 0));
    json_decref(m);
    free(body);

    json_object_set_new(spec, "limits", json_pack("{s:i}", "max_interactions", 1000));
    body = json_dumps(spec, JSON_COMPACT);
    id = submit(&s, body);
    job = wait_state(&s, id, "succeeded failed", 60000);
    cr_assert_str_eq(str(job, "state"), "failed");
    const char *msg = str(json_object_get(job, "error"), "message");
    cr_assert(msg && strstr(msg, "max_interactions"), "%s", msg ? msg : "(none)");
    json_decref(job);
    free(body);

    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers,
                              "{\"kind\":\"inet\",\"program\":\"@main = (a b)\"}");
    assert_error(&r, 400, "invalid_spec", "program");
    cr_assert(strstr(r.body, "line 1, col"), "%s", r.body);
    http_response_free(&r);

    json_decref(spec);
    stop_server(&s);
}

/* An IO program through paragond: its stdout in the result's output and the job's log, its files
 * in the job's directory, the spec's given files there first; a path outside refused. */
Test(jobs, inet_io_stays_in_the_jobs_directory) {
    server s = start_server();
    json_t *spec = inet_spec_from("examples/inet/io_files.hvm");
    json_object_set_new(spec, "device", json_string("host"));
    json_object_set_new(spec, "files", json_pack("{s:s}", "given.txt", "from the spec\n"));
    char *body = json_dumps(spec, JSON_COMPACT);
    int64_t id = submit(&s, body);
    json_t *job = wait_succeeded(&s, id);
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(result, "output"), "a line written and read back\n");
    cr_assert_eq(json_integer_value(json_object_get(result, "io_calls")), 7);
    cr_assert_eq(json_integer_value(json_object_get(result, "output_truncated")), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/jobs/%lld/io_files.txt", s.data, (long long)id);
    char *written = pgn_read_file(path, &(size_t){0});
    cr_assert_str_eq(written, "a line written and read back\n", "the file is in the job's directory");
    free(written);
    snprintf(path, sizeof path, "%s/jobs/%lld/given.txt", s.data, (long long)id);
    written = pgn_read_file(path, &(size_t){0});
    cr_assert_str_eq(written, "from the spec\n");
    free(written);
    char url[96];
    http_response r = request(&s, "GET", job_url(url, sizeof url, id, "/logs"), NULL, NULL);
    cr_assert(strstr(r.body, "stdout: a line written and read back"), "%s", r.body);
    http_response_free(&r);
    json_decref(job);
    free(body);
    json_decref(spec);

    spec = inet_spec_from("examples/inet/io_errors.hvm");
    body = json_dumps(spec, JSON_COMPACT);
    job = wait_succeeded(&s, submit(&s, body));
    cr_assert(strstr(str(json_object_get(job, "result"), "normal_form"), "(((2 (+13 "),
              "../outside.txt refused with EACCES: %s", str(json_object_get(job, "result"), "normal_form"));
    json_decref(job);
    free(body);
    json_decref(spec);

    r = request(&s, "POST", "/api/v1/jobs", json_headers,
                "{\"kind\":\"inet\",\"program\":\"@main = 1\",\"files\":{\"../x\":\"y\"}}");
    assert_error(&r, 400, "invalid_spec", "files");
    http_response_free(&r);
    stop_server(&s);
}

/* POST /api/v1/jobs/{id}/cancel: asserts the status and returns the job it answers with. */
static json_t *cancel(const server *s, int64_t id, int status) {
    char url[96];
    http_response r = request(s, "POST", job_url(url, sizeof url, id, "/cancel"), NULL, NULL);
    cr_assert_eq(r.status, status, "%d %s", r.status, r.body);
    json_t *job = parse_body(&r);
    http_response_free(&r);
    return job;
}

Test(jobs, cancel_ends_a_queued_job_at_once_and_a_running_one_at_its_next_step) {
    server s = start_server();
    /* A long job on the CPU device, and one queued behind it on the same device. */
    int64_t running = submit_xor(&s, 100000, "cpu");
    int64_t queued = submit_xor(&s, 100000, "cpu");
    json_t *job = wait_state(&s, running, "running succeeded failed cancelled", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    cr_assert(json_is_false(json_object_get(job, "cancel_requested")));
    json_decref(job);

    char url[96];
    http_response r = request(&s, "GET", job_url(url, sizeof url, queued, "/checkpoint"), NULL, NULL);
    assert_error(&r, 404, "no_checkpoint", NULL);
    cr_assert(strstr(r.body, "queued"), "says why: %s", r.body);
    http_response_free(&r);

    /* Queued: cancelled now, in the answer and in the database. */
    job = cancel(&s, queued, 200);
    cr_assert_eq(json_integer_value(json_object_get(job, "id")), queued);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    cr_assert_not_null(str(job, "finished_at"));
    cr_assert(json_is_null(json_object_get(job, "started_at")), "it never ran");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 0);
    cr_assert_str_eq(str(json_object_get(job, "error"), "code"), "cancelled");
    cr_assert(json_is_object(json_object_get(job, "spec")), "the whole job object");
    json_decref(job);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'cancelled'"
                                " AND finished_at IS NOT NULL", queued), 1);
    r = request(&s, "POST", job_url(url, sizeof url, queued, "/cancel"), NULL, NULL);
    assert_error(&r, 409, "conflict", NULL);
    cr_assert(strstr(r.body, "cancelled"), "names the state: %s", r.body);
    http_response_free(&r);

    /* Running: 202, it stops at its next step and ends cancelled, not failed. */
    job = cancel(&s, running, 202);
    cr_assert_str_eq(str(job, "state"), "running");
    cr_assert(json_is_true(json_object_get(job, "cancel_requested")));
    json_decref(job);
    job = wait_state(&s, running, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    json_t *e = json_object_get(job, "error");
    cr_assert_str_eq(str(job, "state"), "cancelled", "error: %s", str(e, "message"));
    cr_assert_str_eq(str(e, "code"), "cancelled");
    cr_assert(strstr(str(e, "message"), "cancelled on request: stopped at epoch"), "%s",
              str(e, "message"));
    cr_assert_not_null(str(job, "finished_at"));
    cr_assert(json_is_null(json_object_get(job, "result")));
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 1);
    json_decref(job);
    cr_assert_eq(status_of(&s, "GET", running, "/checkpoint"), 200,
                 "the stopped job keeps a checkpoint of where it stopped");
    r = request(&s, "POST", job_url(url, sizeof url, running, "/cancel"), NULL, NULL);
    assert_error(&r, 409, "conflict", NULL);
    http_response_free(&r);

    /* The device is free again; a finished job cannot be cancelled. */
    int64_t done = submit_xor(&s, 5, "cpu");
    json_decref(wait_succeeded(&s, done));
    r = request(&s, "POST", job_url(url, sizeof url, done, "/cancel"), NULL, NULL);
    assert_error(&r, 409, "conflict", NULL);
    cr_assert(strstr(r.body, "succeeded"), "%s", r.body);
    http_response_free(&r);
    job = job_now(&s, done);
    cr_assert_str_eq(str(job, "state"), "succeeded", "a refused cancel changes nothing");
    cr_assert(json_is_false(json_object_get(job, "cancel_requested")));
    json_decref(job);

    /* Unknown jobs and other methods. */
    char done_url[96], cancel[96];
    job_url(done_url, sizeof done_url, done, "");
    job_url(cancel, sizeof cancel, done, "/cancel");
    const refusal cases[] = {
        {"POST", "/api/v1/jobs/4242/cancel", NULL, NULL, 404, "not_found", .field = NULL},
        {"POST", "/api/v1/jobs/abc/cancel", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", cancel, NULL, NULL, 405, "method_not_allowed", .allow = "POST"},
        {"DELETE", cancel, NULL, NULL, 405, "method_not_allowed", .allow = "POST"},
        {"PUT", done_url, json_headers, "{}", 405, "method_not_allowed", .allow = "GET, HEAD, DELETE"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}

Test(jobs, delete_removes_a_finished_job_with_its_rows_and_files) {
    server s = start_server();
    int64_t trained = submit_xor(&s, 20, "cpu");
    int64_t bench = submit(&s, gemm_bench_spec);
    json_decref(wait_succeeded(&s, trained));
    json_decref(wait_bench(&s, bench));
    size_t len;
    char *file = data_file(&s, trained, &len);
    cr_assert_not_null(file, "the finished train job has its checkpoint");
    free(file);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM metrics WHERE job_id = ?1", trained), XOR_METRICS_PER_EPOCH * 20);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM benchmarks WHERE job_id = ?1", bench), 1);

    /* Queued and running jobs are refused; cancel them first. */
    int64_t running = submit_xor(&s, 100000, "cpu");
    int64_t queued = submit_xor(&s, 100000, "cpu");
    json_decref(wait_state(&s, running, "running", JOB_TIMEOUT_MS));
    char url[96];
    int64_t ids[2] = {running, queued};
    for (int i = 0; i < 2; i++) {
        http_response r = request(&s, "DELETE", job_url(url, sizeof url, ids[i], ""), NULL, NULL);
        assert_error(&r, 409, "conflict", NULL);
        cr_assert(strstr(r.body, "cancel it first"), "says what to do: %s", r.body);
        http_response_free(&r);
        cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1", ids[i]), 1);
    }
    cr_assert_eq(status_of(&s, "POST", queued, "/cancel"), 200);
    cr_assert_eq(status_of(&s, "POST", running, "/cancel"), 202);
    json_decref(wait_state(&s, running, "cancelled", JOB_TIMEOUT_MS));

    /* Finished jobs of every kind and end go, with their rows and files. */
    int64_t gone[] = {trained, bench, running, queued};
    bool logs_table = count_rows(&s, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                                     " AND name = 'logs'", 0) == 1;
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        http_response r = request(&s, "DELETE", job_url(url, sizeof url, gone[i], ""), NULL, NULL);
        cr_assert_eq(r.status, 204, "DELETE job %lld: %d %s", (long long)gone[i], r.status, r.body);
        cr_assert_eq(r.body_len, 0);
        http_response_free(&r);
        r = request(&s, "GET", job_url(url, sizeof url, gone[i], ""), NULL, NULL);
        assert_error(&r, 404, "not_found", NULL);
        http_response_free(&r);
        r = request(&s, "DELETE", job_url(url, sizeof url, gone[i], ""), NULL, NULL);
        assert_error(&r, 404, "not_found", NULL);
        http_response_free(&r);
        cr_assert_eq(status_of(&s, "GET", gone[i], "/metrics"), 404);
        cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1", gone[i]), 0);
        cr_assert_eq(count_rows(&s, "SELECT count(*) FROM metrics WHERE job_id = ?1", gone[i]), 0);
        cr_assert_eq(count_rows(&s, "SELECT count(*) FROM benchmarks WHERE job_id = ?1", gone[i]),
                     0);
        if (logs_table)
            cr_assert_eq(count_rows(&s, "SELECT count(*) FROM logs WHERE job_id = ?1", gone[i]), 0);
        char dir[512];
        snprintf(dir, sizeof dir, "%s/jobs/%lld", s.data, (long long)gone[i]);
        cr_assert_neq(access(dir, F_OK), 0, "%s is removed", dir);
    }
    cr_assert_eq(job_total(&s), 0);
    json_t *v = get_json(&s, "/api/v1/benchmarks?suite=gemm", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "rows")), 0, "the export forgets the run");
    json_decref(v);

    const refusal cases[] = {
        {"DELETE", "/api/v1/jobs/4242", NULL, NULL, 404, "not_found", .field = NULL},
        {"DELETE", "/api/v1/jobs/4242/metrics", NULL, NULL, 405, "method_not_allowed",
         .allow = "GET, HEAD"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}

Test(jobs, the_checkpoint_downloads_as_a_safetensors_file) {
    server s = start_server();
    int64_t id = submit_xor(&s, 50, NULL);
    json_t *job = wait_succeeded(&s, id);
    const char *sha = str(json_object_get(job, "result"), "weights_sha256");

    char url[96], name[64];
    snprintf(name, sizeof name, "job-%lld.safetensors", (long long)id);
    http_response r = get_download(&s, id, "/checkpoint", name);

    /* What any safetensors reader sees: the header, the model's tensors by their names. */
    size_t data_start;
    json_t *header = test_safetensors_header(r.body, r.body_len, &data_start);
    const struct {
        const char *name;
        int rows, cols;
    } tensors[] = {{"layers.0.weight", 2, 8}, {"layers.0.bias", 1, 8},
                   {"layers.1.weight", 8, 2}, {"layers.1.bias", 1, 2}};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        json_t *t = json_object_get(header, tensors[i].name);
        cr_assert(json_is_object(t), "%s is in the file", tensors[i].name);
        json_t *shape = json_object_get(t, "shape");
        cr_assert_eq(json_integer_value(json_array_get(shape, 0)), tensors[i].rows);
        cr_assert_eq(json_integer_value(json_array_get(shape, 1)), tensors[i].cols);
        /* trained weights: finite, not all zero */
        size_t b = (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
        bool nonzero = false;
        for (int k = 0; k < tensors[i].rows * tensors[i].cols; k++) {
            uint32_t u = 0;
            for (int j = 0; j < 4; j++)
                u |= (uint32_t)(unsigned char)r.body[data_start + b + 4 * (size_t)k + j] << (8 * j);
            float f;
            memcpy(&f, &u, sizeof f);
            cr_assert(isfinite(f), "%s[%d] is finite", tensors[i].name, k);
            nonzero = nonzero || f != 0;
        }
        cr_assert(nonzero || strstr(tensors[i].name, "bias"), "%s is trained", tensors[i].name);
    }
    json_t *meta = json_object_get(header, "__metadata__");
    cr_assert_str_eq(str(meta, "weights_sha256"), sha, "the weights the job reported");
    cr_assert_str_eq(str(meta, "epoch"), "50");
    json_decref(header);

    /* Byte for byte the file in the data dir. */
    size_t len;
    char *file = data_file(&s, id, &len);
    cr_assert_not_null(file);
    cr_assert_eq(len, r.body_len);
    cr_assert_eq(memcmp(file, r.body, len), 0);
    free(file);
    http_response_free(&r);
    json_decref(job);

    /* No checkpoint: an inet job, an unknown job; other methods. */
    int64_t inet = submit(&s, "{\"kind\":\"inet\",\"program\":\"@main = 42\"}");
    json_decref(wait_succeeded(&s, inet));
    char inet_checkpoint[96];
    job_url(inet_checkpoint, sizeof inet_checkpoint, inet, "/checkpoint");
    job_url(url, sizeof url, id, "/checkpoint");
    const refusal cases[] = {
        {"GET", inet_checkpoint, NULL, NULL, 404, "no_checkpoint", .says = "only train jobs"},
        {"GET", "/api/v1/jobs/4242/checkpoint", NULL, NULL, 404, "not_found", .field = NULL},
        {"POST", url, json_headers, "{}", 405, "method_not_allowed", .allow = "GET, HEAD"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}

/* The highest progress a running job shows while polled until it ends (it must succeed). */
static double progress_while_running(const server *s, int64_t id) {
    double most = 0;
    int64_t deadline = now_ms() + 120000;
    for (;;) {
        json_t *job = job_now(s, id);
        const char *state = str(job, "state");
        bool running = !strcmp(state, "running"), ended = !running && strcmp(state, "queued");
        if (running && json_number_value(json_object_get(job, "progress")) > most)
            most = json_number_value(json_object_get(job, "progress"));
        if (ended) cr_assert_str_eq(state, "succeeded");
        json_decref(job);
        if (ended) return most;
        cr_assert_lt(now_ms(), deadline, "job %lld did not end", (long long)id);
        usleep(20000);
    }
}

/* An inet job has no fraction done while it runs (its count is known only at its normal form),
 * unless the same program ran before: then its count so far over that run's is the progress. */
Test(jobs, an_inet_job_shows_progress_once_its_program_ran_before) {
    server s = start_server();
    json_t *spec = inet_spec_from("examples/inet/tree_sum20.hvm"); /* 2-3 s on host under ASan */
    json_object_set_new(spec, "device", json_string("host"));
    char *body = json_dumps(spec, JSON_COMPACT);
    cr_assert_eq(progress_while_running(&s, submit(&s, body)), 0, "the first run shows no fraction");
    double second = progress_while_running(&s, submit(&s, body));
    cr_assert(second > 0 && second < 1, "the second run's progress while running: %g", second);
    free(body);
    json_decref(spec);
    stop_server(&s);
}

/* A sleep job holds its device for its seconds without computing, and a cancel stops it within
 * a slice. */
Test(jobs, a_sleep_job_holds_its_device_for_its_seconds_and_stops_on_cancel) {
    server s = start_server();
    int64_t id = submit(&s, "{\"kind\":\"sleep\",\"seconds\":0.3,\"device\":\"host\"}");
    json_t *job = wait_succeeded(&s, id);
    double held = json_real_value(json_object_get(json_object_get(job, "result"), "seconds"));
    cr_assert(held >= 0.3 && held < 10, "held %g s", held);
    cr_assert_str_eq(str(job, "device"), "host");
    json_decref(job);
    id = submit(&s, "{\"kind\":\"sleep\",\"seconds\":600,\"device\":\"host\"}");
    json_decref(wait_state(&s, id, "running", JOB_TIMEOUT_MS));
    cr_assert_eq(status_of(&s, "POST", id, "/cancel"), 202);
    int64_t asked = now_ms();
    job = wait_state(&s, id, "cancelled succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    fprintf(stderr, "jobs: a sleep job stopped %lld ms after its cancel\n", (long long)(now_ms() - asked));
    json_decref(job);
    stop_server(&s);
}
