/* test_server.c: integration tests against a live paragond ($PARAGOND), spawned on a free
 * port with its own database and data dir: health and discovery endpoints, the XOR training
 * job end to end (API, metrics, rows in the SQLite file), every class of bad request (with
 * nothing stored), the dashboard files, flags, a restart mid-job, start-up without any
 * OpenCL device, bench jobs (one device and "all") and the benchmark export in CSV and JSON.
 * Waits are bounded; nothing asserts on time. */
#include "paragond_harness.h"
#include "paragon.h"
#include "safetensors_check.h"
#include "store.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(server, .init = harness_setup, .fini = harness_teardown);

/* ---- tests ------------------------------------------------------------------------------ */

Test(server, health_version_and_devices_answer) {
    server s = start_server();
    json_t *v = get_json(&s, "/healthz", 200);
    cr_assert_str_eq(str(v, "status"), "ok");
    json_decref(v);
    v = get_json(&s, "/readyz", 200);
    cr_assert(json_is_true(json_object_get(v, "ready")));
    json_decref(v);

    v = get_json(&s, "/api/v1/version", 200);
    cr_assert_str_eq(str(v, "version"), "0.1.0");
    json_t *opencl = json_object_get(v, "opencl");
    cr_assert(json_is_array(opencl) && json_array_size(opencl) >= 1, "platforms listed");
    json_decref(v);

    v = get_json(&s, "/api/v1/devices", 200);
    json_t *devices = json_object_get(v, "devices");
    cr_assert(json_is_array(devices));
    size_t n = json_array_size(devices);
    cr_assert_geq(n, 2, "at least one OpenCL device plus host");
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(devices, i);
        cr_assert(str(d, "id") && str(d, "type") && str(d, "name"));
        cr_assert_eq(json_integer_value(json_object_get(d, "queued")), 0);
        cr_assert(json_is_null(json_object_get(d, "running_job")));
        cr_assert_neq(strcmp(str(d, "type"), "host") == 0, i + 1 < n, "host is last, once");
    }
    cr_assert_str_eq(str(json_array_get(devices, n - 1), "id"), "host");
    json_decref(v);

    /* One keep-alive connection serves many requests. */
    http_conn *c = http_connect(s.port, HTTP_TIMEOUT_MS);
    cr_assert_not_null(c, "%s", http_last_error());
    for (int i = 0; i < 20; i++) {
        http_response r;
        cr_assert_eq(http_conn_request(c, "GET", "/healthz", NULL, NULL, 0, &r), 0, "%s",
                     http_last_error());
        cr_assert_eq(r.status, 200);
        cr_assert_str_eq(r.body, "{\"status\":\"ok\"}");
        http_response_free(&r);
    }
    http_close(c);
    stop_server(&s);
}

Test(server, xor_job_trains_to_full_accuracy) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_t *job = wait_state(&s, id, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    char *text = json_dumps(job, 0);
    cr_assert_str_eq(str(job, "state"), "succeeded", "job: %s", text);
    free(text);

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
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "1,2,3,4,5,6,7");
    sqlite3_finalize(st);
    sqlite3_close(db);

    stop_server(&s);
}



Test(server, bad_requests_get_clear_errors_and_store_nothing) {
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

/* The embedded file must be byte-identical to web/<name> in the source tree. */
static void assert_asset(const server *s, const char *path, const char *file,
                         const char *type) {
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    cr_assert_not_null(root);
    char full[512];
    snprintf(full, sizeof full, "%s/web/%s", root, file);
    int fd = open(full, O_RDONLY);
    cr_assert_geq(fd, 0, "%s: %s", full, strerror(errno));
    char *want = read_all(fd, HTTP_TIMEOUT_MS);
    close(fd);
    http_response r = request(s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200, "GET %s: %d", path, r.status);
    char ct[128];
    cr_assert_not_null(http_header(&r, "Content-Type", ct, sizeof ct));
    cr_assert_str_eq(ct, type);
    cr_assert_eq(r.body_len, strlen(want));
    cr_assert_str_eq(r.body, want);
    http_response_free(&r);
    free(want);
}

Test(server, dashboard_files_are_served) {
    server s = start_server();
    assert_asset(&s, "/", "index.html", "text/html; charset=utf-8");
    /* Every file of web/ (the page, its style sheet, app.js and the modules it imports): one
     * missing from meson.build's web_files would break the page only in a browser. */
    web_file files[WEB_FILES_MAX];
    size_t n = list_web_files(files);
    for (size_t i = 0; i < n; i++) {
        char path[80];
        snprintf(path, sizeof path, "/%s", files[i].name);
        assert_asset(&s, path, files[i].name, files[i].type);
    }
    http_response r = request(&s, "POST", "/app.js", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    http_response_free(&r);
    r = request(&s, "GET", "/web/app.js", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    stop_server(&s);
}

Test(server, flags_help_version_and_errors) {
    const char *help[] = {"--help", NULL};
    child c = spawn(help, NULL, true);
    char *out = read_all(c.out_fd, HTTP_TIMEOUT_MS);
    char *err = read_all(c.err_fd, HTTP_TIMEOUT_MS);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 0);
    cr_assert(strstr(out, "usage: paragond") && strstr(out, "--data-dir"), "%s", out);
    free(out);
    free(err);
    close(c.out_fd);
    close(c.err_fd);

    const char *version[] = {"--version", NULL};
    c = spawn(version, NULL, true);
    out = read_all(c.out_fd, HTTP_TIMEOUT_MS);
    err = read_all(c.err_fd, HTTP_TIMEOUT_MS);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 0);
    cr_assert_str_eq(out, "paragond 0.1.0\n");
    free(out);
    free(err);
    close(c.out_fd);
    close(c.err_fd);

    const char *bad[][3] = {{"--verbose", NULL, NULL},
                            {"--port", "http", NULL},
                            {"--port", "70000", NULL},
                            {"--db", NULL, NULL},
                            {"stray", NULL, NULL}};
    const char *says[] = {"unknown option '--verbose'", "--port: 'http' is not a port number",
                          "--port: '70000'", "--db needs a value", "unexpected argument 'stray'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = spawn(bad[i], NULL, true);
        out = read_all(c.out_fd, HTTP_TIMEOUT_MS);
        err = read_all(c.err_fd, HTTP_TIMEOUT_MS);
        cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 2, "%s exits 2", bad[i][0]);
        cr_assert(strstr(err, says[i]), "stderr for %s: %s", bad[i][0], err);
        cr_assert_str_eq(out, "", "nothing on stdout");
        free(out);
        free(err);
        close(c.out_fd);
        close(c.err_fd);
    }
}

Test(server, no_opencl_device_exits_1_with_a_clear_message) {
    char vendors[300], env[320], db[300], data[300];
    snprintf(vendors, sizeof vendors, "%s/vendors", tmpdir);
    cr_assert_eq(mkdir(vendors, 0700), 0);
    snprintf(env, sizeof env, "OCL_ICD_VENDORS=%s", vendors);
    snprintf(db, sizeof db, "%s/t.db", tmpdir);
    snprintf(data, sizeof data, "%s/data", tmpdir);
    const char *args[] = {"--port", "0", "--db", db, "--data-dir", data, NULL};
    const char *extra[] = {env, NULL};
    child c = spawn(args, extra, true);
    char *out = read_all(c.out_fd, START_TIMEOUT_MS);
    char *err = read_all(c.err_fd, START_TIMEOUT_MS);
    cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), 1, "stderr: %s", err);
    cr_assert_str_eq(out, "", "it never claims to listen");
    cr_assert(strstr(err, "no OpenCL device found"), "stderr: %s", err);
    cr_assert(strstr(err, "pocl-opencl-icd"), "stderr names the fix: %s", err);
    cr_assert_neq(access(db, F_OK), 0, "no database is created");
    cr_assert_neq(access(data, F_OK), 0, "no data dir is created");
    free(out);
    free(err);
    close(c.out_fd);
    close(c.err_fd);
}

Test(server, a_job_interrupted_by_shutdown_runs_again_after_restart) {
    /* Long enough to be caught running; the shutdown stops it at a step boundary. */
    char *spec = spec_with("\"epochs\":300", "\"epochs\":100000");
    server s = start_server();
    int64_t id = submit(&s, spec);
    json_t *job = wait_state(&s, id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    json_decref(job);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    bool shown = false;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(devs, "devices"), i, d) shown =
        shown || json_integer_value(json_object_get(d, "running_job")) == id;
    cr_assert(shown, "the devices list shows the running job");
    json_decref(devs);
    stop_server(&s);

    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT state, attempts FROM jobs WHERE id = ?1", -1,
                                    &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "queued",
                     "a shutdown puts the running job back in the queue");
    cr_assert_eq(sqlite3_column_int(st, 1), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* The next paragond picks it up by itself. */
    s = start_server();
    job = wait_state(&s, id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    json_decref(job);
    stop_server(&s);
    free(spec);
}

Test(server, jobs_queued_before_start_are_run_or_placed_again) {
    /* A first run creates the schema; then rows are queued "by a previous paragond", one on
     * a device that no longer exists but asked for auto, one that asked for that device. */
    server s = start_server();
    stop_server(&s);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "INSERT INTO jobs (kind, name, state, device_requested,"
                                    " device, spec) VALUES ('train', 'old', 'queued', ?1, ?2, ?3)",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    const char *rows[][2] = {{"auto", "gpu-0badc0de"}, {"gpu-0badc0de", "gpu-0badc0de"}};
    for (int i = 0; i < 2; i++) {
        sqlite3_bind_text(st, 1, rows[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, rows[i][1], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, xor_spec, -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);

    s = start_server();
    json_t *job = wait_state(&s, 1, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s",
                     str(json_object_get(job, "error"), "message"));
    cr_assert_str_neq(str(job, "device"), "gpu-0badc0de", "placed on a device that exists");
    json_decref(job);
    job = wait_state(&s, 2, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_t *e = json_object_get(job, "error");
    cr_assert_str_eq(str(e, "field"), "device");
    cr_assert(strstr(str(e, "message"), "gpu-0badc0de"), "%s", str(e, "message"));
    json_decref(job);
    stop_server(&s);
}

/* An inet program through the API: stored, reduced on an OpenCL device, its normal form and
 * interaction count in the result; a limit hit is a failed job naming the limit; a malformed
 * program is a 400 naming its line and column. */
Test(server, inet_jobs_run_and_report_their_normal_form) {
    server s = start_server();
    const char *fib_path = "examples/inet/fib.hvm";
    char path[512];
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", fib_path);
    size_t len = 0;
    char *program = pgn_read_file(path, &len);
    cr_assert_not_null(program, "%s", path);
    json_t *spec = json_pack("{s:s, s:s, s:s%}", "kind", "inet", "name", "fib", "program", program, len);
    char *body = json_dumps(spec, JSON_COMPACT);
    int64_t id = submit(&s, body);
    json_t *job = wait_state(&s, id, "succeeded failed", 60000);
    cr_assert_str_eq(str(job, "state"), "succeeded", "%s", json_dumps(json_object_get(job, "error"), 0));
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(result, "normal_form"), "17711");
    cr_assert_eq(json_integer_value(json_object_get(result, "interactions")), 718993);
    cr_assert_str_neq(str(job, "device"), "host", "auto places inet jobs on an OpenCL device");
    cr_assert_str_eq(str(result, "device"), str(job, "device"));
    json_decref(job);
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
    free(program);
    stop_server(&s);
}

/* ---- benchmarks ------------------------------------------------------------------------- */

static const char gemm_bench_spec[] =
    "{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":[\"N=128\"],\"repeats\":1}";

/* The suite's CSV header line as the engine defines it. */
static char *csv_header(const char *suite) {
    size_t n = 0;
    const pgn_bench_column *cols = pgn_bench_columns(suite, &n);
    cr_assert_not_null(cols, "suite %s has columns", suite);
    char *line = calloc(1, 1024);
    for (size_t i = 0; i < n; i++)
        snprintf(line + strlen(line), 1024 - strlen(line), "%s%s", i ? "," : "", cols[i].header);
    return line;
}

/* A finished bench job; skips the test while its suite is still a stub in the engine. */
static json_t *wait_bench(const server *s, int64_t id) {
    json_t *job = wait_state(s, id, "succeeded failed", JOB_TIMEOUT_MS);
    json_t *e = json_object_get(job, "error");
    if (json_is_object(e) && strcmp(str(e, "code"), "unsupported") == 0)
        cr_skip_test("the bench suite is not written yet: %s", str(e, "message"));
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s", str(e, "message"));
    return job;
}

static int64_t count_rows(const server *s, const char *sql, int64_t id) {
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s->db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

Test(server, a_bench_job_stores_its_rows_for_the_export) {
    server s = start_server();
    int64_t id = submit(&s, gemm_bench_spec);
    json_t *job = wait_bench(&s, id);
    cr_assert_str_eq(str(job, "kind"), "bench");
    cr_assert_str_eq(str(job, "device_requested"), "auto");
    const char *device = str(job, "device");
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(result, "suite"), "gemm");
    cr_assert_str_eq(str(result, "device"), device);
    json_t *rows = json_object_get(result, "rows");
    cr_assert_eq(json_array_size(rows), 1, "one case asked for");
    json_t *row = json_array_get(rows, 0);
    cr_assert_str_eq(str(row, "case"), "N=128");
    cr_assert_str_eq(str(row, "device"), device);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM benchmarks WHERE job_id = ?1", id), 1);

    /* JSON: the row as the job reported it, plus the store's id, job_id and created_at. */
    json_t *v = get_json(&s, "/api/v1/benchmarks?suite=gemm", 200);
    json_t *got = json_object_get(v, "rows");
    cr_assert_eq(json_array_size(got), 1);
    json_t *exported = json_array_get(got, 0);
    const char *key;
    json_t *value;
    json_object_foreach(row, key, value)
        cr_assert(json_equal(json_object_get(exported, key), value), "field %s", key);
    cr_assert_eq(json_integer_value(json_object_get(exported, "job_id")), id);
    cr_assert(json_is_integer(json_object_get(exported, "id")));
    cr_assert_eq(json_object_size(exported), json_object_size(row) + 3);
    json_decref(v);

    /* CSV: the suite's header, then the row. */
    http_response r = request(&s, "GET", "/api/v1/benchmarks?suite=gemm&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char *header = csv_header("gemm");
    cr_assert_eq(strncmp(r.body, header, strlen(header)), 0, "body: %s", r.body);
    cr_assert_eq(r.body[strlen(header)], '\n');
    cr_assert_eq(strncmp(r.body + strlen(header) + 1, "N=128,128,128,128,", 18), 0, "%s", r.body);
    free(header);
    http_response_free(&r);
    json_decref(job);
    stop_server(&s);
}

/* mlp-forward rows as the engine's suite makes them (figures from Paragon-Py's README). */
static json_t *mlp_row(const char *case_id, const char *device, const char *shape, double cpu_ms) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "suite",
                     "mlp-forward", "case", case_id, "device", device, "adapter",
                     "0x7d55 (0x8086), integrated-gpu", "version", "0.1.0", "shape", shape,
                     "est_mb", 0.19, "cpu_ms", cpu_ms, "gpu_ms", 0.95, "speedup", 5.04, "mae", 0.0,
                     "max", 0.0, "gpu_init_ms", 0.57);
}

Test(server, benchmark_export_in_csv_and_json) {
    server s = start_server();
    /* Rows reach the store the way a finished bench job's do, through a second connection. */
    json_t *rows = json_pack("[o, o, o]", mlp_row("S1", "cpu-aaaa", "784→64→10", 4.81),
                             mlp_row("M3", "cpu-aaaa", "784→512→512→10", 9.5),
                             mlp_row("S1", "gpu-bbbb", "784→64→10", 4.5));
    pgd_store *store;
    pgn_error err;
    cr_assert_eq(pgd_store_open(s.db, &store, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(store, 0, rows, &err), 0, "%s", err.message);
    pgd_store_close(store);

    /* CSV: Paragon-Py's header exactly, a download named for the suite. */
    http_response r =
        request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char h[128];
    cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
    cr_assert_str_eq(h, "text/csv; charset=utf-8");
    cr_assert_not_null(http_header(&r, "Content-Disposition", h, sizeof h));
    cr_assert_str_eq(h, "attachment; filename=\"mlp-forward.csv\"");
#define ADAPTER_CSV "\"0x7d55 (0x8086), integrated-gpu\"" /* quoted: it holds a comma */
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "S1,784→64→10,0.19,4.81,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n"
                             "M3,784→512→512→10,0.19,9.5,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n"
                             "S1,784→64→10,0.19,4.5,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n");
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv&device=gpu-bbbb", NULL,
                NULL);
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "S1,784→64→10,0.19,4.5,0.95,5.04,0,0,0.57," ADAPTER_CSV "\n");
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/benchmarks?suite=gemm&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200);
    char *header = csv_header("gemm");
    cr_assert_eq(strlen(r.body), strlen(header) + 1, "no gemm rows: the header alone: %s", r.body);
    free(header);
    http_response_free(&r);

    /* JSON (the default): every stored field, plus id, job_id and created_at. */
    json_t *v = get_json(&s, "/api/v1/benchmarks?suite=mlp-forward", 200);
    json_t *got = json_object_get(v, "rows");
    cr_assert_eq(json_array_size(got), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *want = json_deep_copy(json_array_get(rows, i));
        json_t *row = json_array_get(got, i);
        json_object_set_new(want, "id", json_integer((json_int_t)i + 1));
        json_object_set_new(want, "job_id", json_null());
        json_object_set(want, "created_at", json_object_get(row, "created_at"));
        cr_assert(str(row, "created_at"), "created_at is set");
        cr_assert(json_equal(row, want), "row %zu: %s", i, json_dumps(row, 0));
        json_decref(want);
    }
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?format=json&device=cpu-aaaa", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "rows")), 2);
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?limit=1", 200);
    got = json_object_get(v, "rows");
    cr_assert_eq(json_array_size(got), 1);
    cr_assert_str_eq(str(json_array_get(got, 0), "device"), "gpu-bbbb", "limit keeps the newest");
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?device=nowhere", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "rows")), 0);
    json_decref(v);

    /* Bad parameters name themselves; other methods are refused. */
    const char *bad[][2] = {
        {"/api/v1/benchmarks?format=csv", "suite"},
        {"/api/v1/benchmarks?format=csv&device=cpu-aaaa", "suite"},
        {"/api/v1/benchmarks?suite=mlp-forward&format=xml", "format"},
        {"/api/v1/benchmarks?suite=nope&format=csv", "suite"},
        {"/api/v1/benchmarks?suite=all", "suite"},
        {"/api/v1/benchmarks?limit=-1", "limit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = request(&s, "GET", bad[i][0], NULL, NULL);
        assert_error(&r, 400, "invalid_parameter", bad[i][1]);
        if (strcmp(bad[i][1], "suite") == 0)
            cr_assert(strstr(r.body, "mlp-forward, tensor-micro, gemm"), "lists the suites: %s",
                      r.body);
        http_response_free(&r);
    }
    r = request(&s, "POST", "/api/v1/benchmarks", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    cr_assert_not_null(http_header(&r, "Allow", h, sizeof h));
    cr_assert_str_eq(h, "GET, HEAD");
    http_response_free(&r);
    json_decref(rows);
    stop_server(&s);
}

Test(server, device_all_queues_one_bench_job_per_opencl_device) {
    server s = start_server();
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    json_t *opencl = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(devs, "devices"), i, d) {
        if (strcmp(str(d, "type"), "host") != 0)
            json_array_append(opencl, json_object_get(d, "id"));
    }
    json_decref(devs);
    size_t n = json_array_size(opencl);
    cr_assert_geq(n, 1);

    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers,
                              "{\"kind\":\"bench\",\"suite\":\"gemm\",\"device\":\"all\","
                              "\"cases\":[\"N=128\"],\"repeats\":1}");
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    json_t *body = parse_body(&r);
    json_t *ids = json_object_get(body, "ids");
    cr_assert_eq(json_array_size(ids), n, "one job per OpenCL device, none on host: %s", r.body);
    int64_t first = json_integer_value(json_object_get(body, "id"));
    cr_assert_eq(json_integer_value(json_array_get(ids, 0)), first);
    cr_assert_str_eq(str(body, "device"), json_string_value(json_array_get(opencl, 0)),
                     "the body is the first job: %s", r.body);
    cr_assert_str_eq(str(body, "device_requested"), "all");
    char loc[64], want[64];
    snprintf(want, sizeof want, "/api/v1/jobs/%lld", (long long)first);
    cr_assert_not_null(http_header(&r, "Location", loc, sizeof loc));
    cr_assert_str_eq(loc, want);
    http_response_free(&r);
    cr_assert_eq(job_total(&s), (int64_t)n);

    bool ran = true;
    for (i = 0; i < n; i++) {
        int64_t id = json_integer_value(json_array_get(ids, i));
        json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
        const char *device = json_string_value(json_array_get(opencl, i));
        cr_assert_str_eq(str(job, "kind"), "bench");
        cr_assert_str_eq(str(job, "device_requested"), "all");
        cr_assert_str_eq(str(job, "device"), device);
        cr_assert_str_eq(str(json_object_get(job, "spec"), "device"), device,
                         "the stored spec names the device it ran on");
        json_t *e = json_object_get(job, "error");
        if (json_is_object(e) && strcmp(str(e, "code"), "unsupported") == 0) ran = false;
        else cr_assert_str_eq(str(job, "state"), "succeeded", "%s", str(e, "message"));
        json_decref(job);
        if (!ran) continue;
        char path[160];
        snprintf(path, sizeof path, "/api/v1/benchmarks?suite=gemm&device=%s", device);
        json_t *v = get_json(&s, path, 200);
        json_t *rows = json_object_get(v, "rows");
        cr_assert_eq(json_array_size(rows), 1);
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(rows, 0), "job_id")), id);
        json_decref(v);
    }

    /* "all" is for bench jobs only. */
    char *spec = spec_with("\"seed\":1", "\"seed\":1,\"device\":\"all\"");
    post_expect(&s, spec, 400, "invalid_spec", "device");
    free(spec);
    cr_assert_eq(job_total(&s), (int64_t)n);
    json_decref(body);
    json_decref(opencl);
    stop_server(&s);
}

/* A first start measures each device that has no benchmark rows; "auto" placement then records
 * on the job which device the cost model chose, its estimate and every candidate's. */
Test(server, first_start_calibrates_and_auto_placement_records_its_estimate) {
    server s = start_server_calibrating(true);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    size_t i, n_dev = json_array_size(json_object_get(devs, "devices"));
    json_t *d;
    int64_t deadline = now_ms() + 120000;
    json_array_foreach(json_object_get(devs, "devices"), i, d) {
        char path[256];
        snprintf(path, sizeof path, "/api/v1/benchmarks?device=%s", str(d, "id"));
        for (;;) {
            json_t *b = get_json(&s, path, 200);
            size_t rows = json_array_size(json_object_get(b, "rows"));
            json_decref(b);
            if (rows >= 3) break; /* gemm fwd1, inet fib, tensor-micro add-1K */
            cr_assert_lt(now_ms(), deadline, "device %s was not calibrated", str(d, "id"));
            usleep(100000);
        }
    }
    json_decref(devs);

    int64_t id = submit(&s, "{\"kind\":\"train\",\"name\":\"xor\",\"data\":{\"source\":\"xor\"},"
                            "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"epochs\":5}");
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", (long long)id);
    json_t *job = get_json(&s, path, 200);
    json_t *est = json_object_get(job, "estimate");
    cr_assert(json_is_object(est), "the job records the cost model's estimate");
    cr_assert_str_eq(str(est, "device"), str(job, "device"), "the estimate names the chosen device");
    cr_assert_str_neq(str(job, "device"), "host", "auto places on an OpenCL device");
    cr_assert_gt(json_number_value(json_object_get(est, "seconds")), 0);
    cr_assert_str_eq(str(est, "unit"), "flop");
    cr_assert(json_is_true(json_object_get(est, "measured")), "rates come from the calibration rows");
    cr_assert_eq(json_array_size(json_object_get(est, "candidates")), n_dev - 1, "every OpenCL device is weighed");
    json_decref(job);
    job = wait_state(&s, id, "succeeded failed", 60000);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    stop_server(&s);
}

/* ---- job logs and event streams --------------------------------------------------------- */

#define STREAM_TIMEOUT_MS 60000 /* the longest wait for one event or the end of a stream */

typedef struct sse_event {
    char type[32]; /* "state", "metric", "progress", "log", "reset" */
    uint64_t id;   /* 0 when the event had none */
    json_t *data;
} sse_event;

/* Opens path as an event stream and checks its head. extra: one more header line, or NULL. */
static http_stream *open_events(const server *s, const char *path, const char *extra) {
    const char *headers[] = {extra, NULL};
    http_stream *st = http_stream_open(s->port, path, extra ? headers : NULL, HTTP_TIMEOUT_MS);
    cr_assert_not_null(st, "GET %s: %s", path, http_last_error());
    const http_response *h = http_stream_head(st);
    cr_assert_eq(h->status, 200, "GET %s: %d", path, h->status);
    char v[128];
    cr_assert_not_null(http_header(h, "Content-Type", v, sizeof v));
    cr_assert_str_eq(v, "text/event-stream");
    cr_assert_not_null(http_header(h, "Cache-Control", v, sizeof v));
    cr_assert_str_eq(v, "no-cache");
    return st;
}

/* The next event of the stream; false when the stream ended. Comments (": ping") and "retry"
 * blocks are skipped; a stream that neither sends nor ends in time fails the test. */
static bool next_event(http_stream *st, sse_event *e) {
    memset(e, 0, sizeof *e);
    for (;;) {
        size_t len;
        const char *data = http_stream_data(st, &len);
        const char *end = strstr(data, "\n\n");
        if (!end) {
            int n = http_stream_read(st, STREAM_TIMEOUT_MS);
            cr_assert_geq(n, 0, "event stream: %s", http_last_error());
            if (n == 0) {
                cr_assert_eq(len, 0, "the stream ended inside an event: '%s'", data);
                return false;
            }
            continue;
        }
        size_t block = (size_t)(end - data) + 2;
        char *text = strndup(data, block - 2);
        http_stream_consume(st, block);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "event: ", 7) == 0) snprintf(e->type, sizeof e->type, "%s", line + 7);
            else if (strncmp(line, "id: ", 4) == 0) e->id = strtoull(line + 4, NULL, 10);
            else if (strncmp(line, "data: ", 6) == 0) {
                cr_assert_null(e->data, "one data line per event");
                e->data = json_loads(line + 6, 0, NULL);
                cr_assert_not_null(e->data, "event data is JSON: %s", line + 6);
            } else {
                cr_assert(line[0] == ':' || strncmp(line, "retry: ", 7) == 0, "line '%s'", line);
            }
        }
        free(text);
        if (e->type[0] || e->data) {
            cr_assert(e->type[0] && e->data && e->id > 0, "an event has a type, an id and data");
            return true;
        }
    }
}

/* Every event up to the end of the stream. */
static size_t read_to_end(http_stream *st, sse_event *out, size_t cap) {
    size_t n = 0;
    sse_event e;
    while (next_event(st, &e)) {
        cr_assert_lt(n, cap, "more events than expected");
        out[n++] = e;
    }
    return n;
}

static void free_events(sse_event *evs, size_t n) {
    for (size_t i = 0; i < n; i++) json_decref(evs[i].data);
}

/* The job id an event is about: state and reset events carry the job object ("id"). */
static int64_t event_job(const sse_event *e) {
    const char *key = strcmp(e->type, "state") == 0 || strcmp(e->type, "reset") == 0 ? "id"
                                                                                       : "job_id";
    return json_integer_value(json_object_get(e->data, key));
}

static int state_rank(const char *state) {
    static const char *const order[] = {"queued", "running", "succeeded"};
    for (int i = 0; i < 3; i++)
        if (state && strcmp(state, order[i]) == 0) return i;
    cr_assert_fail("unexpected state %s", state ? state : "(none)");
    return -1;
}

/* The events of one job, as a stream about it delivers them: state changes only forward
 * (queued, running, succeeded, each at most once), ids increasing after the first (a snapshot
 * carries the id before the events that follow it), metrics and logs of this job only, and
 * the final state last. Returns how many states and metrics it saw. */
static void check_job_events(const sse_event *evs, size_t n, int64_t id, size_t *states,
                             size_t *metrics) {
    cr_assert_gt(n, 0, "the stream sent events");
    *states = *metrics = 0;
    int rank = -1;
    for (size_t i = 0; i < n; i++) {
        const sse_event *e = &evs[i];
        cr_assert_eq(event_job(e), id, "event %zu (%s) is about job %lld", i, e->type,
                     (long long)id);
        if (i > 0) cr_assert_gt(e->id, evs[i - 1].id, "ids increase");
        if (strcmp(e->type, "state") == 0) {
            int r = state_rank(str(e->data, "state"));
            cr_assert_gt(r, rank, "states move forward: %s after rank %d", str(e->data, "state"),
                         rank);
            rank = r;
            (*states)++;
        } else if (strcmp(e->type, "metric") == 0) {
            cr_assert(str(e->data, "name") && json_is_integer(json_object_get(e->data, "step")) &&
                          json_is_number(json_object_get(e->data, "value")),
                      "a metric has name, step and value");
            (*metrics)++;
        } else if (strcmp(e->type, "log") == 0) {
            cr_assert(str(e->data, "line") && str(e->data, "level") && str(e->data, "time"));
            cr_assert_gt(json_integer_value(json_object_get(e->data, "seq")), 0);
        } else {
            cr_assert_str_eq(e->type, "progress", "unexpected event type");
            double p = json_number_value(json_object_get(e->data, "progress"));
            cr_assert(p >= 0 && p <= 1, "progress %g", p);
        }
    }
    cr_assert_str_eq(evs[n - 1].type, "state", "the last event is the final state");
    cr_assert_str_eq(str(evs[n - 1].data, "state"), "succeeded");
}

/* Index of the first log event from `from` on whose line starts with prefix; n when none. */
static size_t find_log(const sse_event *evs, size_t n, size_t from, const char *prefix) {
    for (size_t i = from; i < n; i++)
        if (strcmp(evs[i].type, "log") == 0 &&
            strncmp(str(evs[i].data, "line"), prefix, strlen(prefix)) == 0)
            return i;
    return n;
}

#define SHORT_EPOCHS 20
#define MAX_EVENTS 4096

Test(server, a_job_event_stream_follows_xor_training_to_its_end) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":20");
    http_stream *all = open_events(&s, "/api/v1/events", NULL);
    int64_t id = submit(&s, spec);
    free(spec);
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    /* A client that connects now: it starts from the job's current state, whatever that is. */
    http_stream *live = open_events(&s, path, NULL);

    /* The all-jobs stream opened before the job existed: its first event is the job queued. */
    sse_event e;
    cr_assert(next_event(all, &e));
    cr_assert_str_eq(e.type, "log", "the job's log starts with its placement");
    cr_assert_eq(event_job(&e), id);
    cr_assert(strncmp(str(e.data, "line"), "placed on ", 10) == 0, "%s", str(e.data, "line"));
    uint64_t placed_id = e.id;
    json_decref(e.data);
    cr_assert(next_event(all, &e));
    cr_assert_str_eq(e.type, "state");
    cr_assert_str_eq(str(e.data, "state"), "queued");
    cr_assert_eq(event_job(&e), id);
    cr_assert_gt(e.id, placed_id);
    json_decref(e.data);
    http_stream_close(all);

    /* Replayed from before the placement (Last-Event-ID), the job's stream is its whole life, in
     * order, whatever the timing: queued, running, every metric, succeeded, then the end. */
    char last[64];
    snprintf(last, sizeof last, "Last-Event-ID: %llu", (unsigned long long)(placed_id - 1));
    http_stream *replay = open_events(&s, path, last);
    sse_event *evs = calloc(MAX_EVENTS, sizeof *evs);
    size_t n = read_to_end(replay, evs, MAX_EVENTS);
    http_stream_close(replay);
    size_t states, metrics;
    check_job_events(evs, n, id, &states, &metrics);
    cr_assert_eq(states, 3, "queued, running, succeeded");
    cr_assert_eq(metrics, 4 * SHORT_EPOCHS, "loss, accuracy, test_loss, test_accuracy per epoch");
    cr_assert_eq(evs[0].id, placed_id, "the replay starts right after Last-Event-ID");
    size_t at = find_log(evs, n, 0, "placed on ");
    cr_assert_eq(at, 0);
    at = find_log(evs, n, at, "started on ");
    cr_assert_lt(at, n, "a 'started' line");
    cr_assert(strstr(str(evs[at].data, "line"), "(attempt 1)"), "%s", str(evs[at].data, "line"));
    at = find_log(evs, n, at, "training xor on ");
    cr_assert_lt(at, n, "the engine's first line");
    at = find_log(evs, n, at, "done: ");
    cr_assert_lt(at, n, "the engine's last line");
    at = find_log(evs, n, at, "succeeded (attempt 1)");
    cr_assert_eq(at, n - 2, "the scheduler's last line comes right before the final state");
    free_events(evs, n);

    /* The live client saw a suffix of the same: a current state first, the final state last. */
    n = read_to_end(live, evs, MAX_EVENTS);
    http_stream_close(live);
    check_job_events(evs, n, id, &states, &metrics);
    cr_assert_str_eq(evs[0].type, "state", "a stream starts with the job's current state");
    free_events(evs, n);
    free(evs);
    stop_server(&s);
}

Test(server, a_job_log_is_text_and_a_finished_jobs_stream_is_its_final_state) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":5");
    int64_t id = submit(&s, spec);
    free(spec);
    json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    char device[64];
    snprintf(device, sizeof device, "%s", str(job, "device"));
    json_decref(job);

    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs", (long long)id);
    http_response r = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char v[128];
    cr_assert_not_null(http_header(&r, "Content-Type", v, sizeof v));
    cr_assert_str_eq(v, "text/plain; charset=utf-8");
    /* One line per entry: "<ISO time> <level> <text>". */
    char *lines[64];
    size_t n = 0;
    char *all = strdup(r.body);
    for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
        cr_assert_lt(n, 64);
        cr_assert_gt(strlen(line), 31, "line '%s'", line);
        cr_assert(line[4] == '-' && line[10] == 'T' && line[19] == '.' && line[23] == 'Z' &&
                      line[24] == ' ',
                  "line '%s' starts with its ISO time", line);
        cr_assert(strncmp(line + 25, "info  ", 6) == 0 || strncmp(line + 25, "warn  ", 6) == 0 ||
                      strncmp(line + 25, "error ", 6) == 0,
                  "then its level: '%s'", line);
        lines[n++] = line + 31;
    }
    cr_assert_eq(r.body[strlen(r.body) - 1], '\n');
    const char *want[] = {"placed on ", "started on ", "training xor on ", "epoch 5/5: ",
                          "done: ", "succeeded (attempt 1)"};
    size_t k = 0;
    for (size_t i = 0; i < n && k < 6; i++)
        if (strncmp(lines[i], want[k], strlen(want[k])) == 0) k++;
    cr_assert_eq(k, 6, "placed, started, the engine's lines, succeeded, in order:\n%s", r.body);
    cr_assert(strstr(lines[0], device) && strstr(lines[1], device), "%s", r.body);
    cr_assert_str_eq(lines[n - 1], "succeeded (attempt 1)");

    /* ?after=SEQ: the lines after line SEQ. */
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs?after=2", (long long)id);
    http_response tail = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(tail.status, 200);
    const char *third = r.body;
    for (int i = 0; i < 2; i++) third = strchr(third, '\n') + 1;
    cr_assert_str_eq(tail.body, third);
    http_response_free(&tail);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs?after=%zu", (long long)id, n);
    tail = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(tail.status, 200);
    cr_assert_str_eq(tail.body, "");
    http_response_free(&tail);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM logs WHERE job_id = ?1", id), (int64_t)n);
    cr_assert_eq(count_rows(&s, "SELECT max(seq) FROM logs WHERE job_id = ?1", id), (int64_t)n);
    free(all);
    http_response_free(&r);

    /* Bad requests. */
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs?after=last", (long long)id);
    r = request(&s, "GET", path, NULL, NULL);
    assert_error(&r, 400, "invalid_parameter", "after");
    http_response_free(&r);
    const char *missing[] = {"/api/v1/jobs/999/logs", "/api/v1/jobs/999/events",
                             "/api/v1/jobs/x/logs"};
    for (size_t i = 0; i < 3; i++) {
        r = request(&s, "GET", missing[i], NULL, NULL);
        assert_error(&r, 404, "not_found", NULL);
        http_response_free(&r);
    }
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    r = request(&s, "POST", path, json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    http_response_free(&r);

    /* A finished job's stream is its final state, and ends. */
    sse_event evs[4];
    http_stream *st = open_events(&s, path, NULL);
    size_t got = read_to_end(st, evs, 4);
    http_stream_close(st);
    cr_assert_eq(got, 1, "one event");
    cr_assert_str_eq(evs[0].type, "state");
    cr_assert_str_eq(str(evs[0].data, "state"), "succeeded");
    cr_assert_eq(event_job(&evs[0]), id);
    cr_assert(json_is_object(json_object_get(evs[0].data, "result")), "the whole job object");
    free_events(evs, got);
    /* A client resuming from an id the server no longer holds gets a reset to the same. */
    st = open_events(&s, path, "Last-Event-ID: 1");
    got = read_to_end(st, evs, 4);
    http_stream_close(st);
    cr_assert_eq(got, 1);
    cr_assert_str_eq(evs[0].type, "reset");
    cr_assert_str_eq(str(evs[0].data, "state"), "succeeded");
    free_events(evs, got);
    stop_server(&s);
}

#define LONG_EPOCHS 3000 /* about 12000 metric events: more than the ring holds */

Test(server, an_event_client_that_vanishes_does_not_stop_the_job) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":3000");
    int64_t id = submit(&s, spec);
    free(spec);
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    /* One client hangs up mid-training, once metrics flow; another before reading anything. */
    http_stream *a = open_events(&s, path, NULL);
    http_stream_close(open_events(&s, path, NULL));
    sse_event e;
    for (;;) {
        cr_assert(next_event(a, &e), "the stream ends only after metrics");
        bool metric = strcmp(e.type, "metric") == 0;
        json_decref(e.data);
        if (metric) break;
    }
    http_stream_close(a);

    json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss", (long long)id);
    json_t *m = get_json(&s, path, 200);
    cr_assert_eq(json_array_size(json_object_get(m, "metrics")), LONG_EPOCHS, "every epoch ran");
    json_decref(m);

    /* Shutdown ends the streams still open (an idle one included) and exits cleanly. */
    http_stream *idle = open_events(&s, "/api/v1/events", NULL);
    cr_assert_gt(http_stream_read(idle, HTTP_TIMEOUT_MS), 0, "the stream has begun");
    stop_server(&s);
    cr_assert(!next_event(idle, &e), "the stream ended at shutdown");
    http_stream_close(idle);
}

Test(server, the_all_jobs_stream_delivers_every_jobs_events_to_every_client) {
    server s = start_server();
    /* More idle streams than the HTTP pool has threads (4): parked, they hold none. */
    enum { CLIENTS = 6 };
    http_stream *st[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) st[i] = open_events(&s, "/api/v1/events", NULL);
    json_t *v = get_json(&s, "/healthz", 200);
    json_decref(v);

    char *spec = spec_with("\"epochs\":300", "\"epochs\":10");
    int64_t ids[2] = {submit(&s, spec), submit(&s, spec)};
    free(spec);
    sse_event *evs = calloc(MAX_EVENTS, sizeof *evs);
    for (int c = 0; c < CLIENTS; c++) {
        /* Read until both jobs have succeeded; then each job's events read as its own stream. */
        size_t n = 0;
        int done = 0;
        while (done < 2) {
            cr_assert_lt(n, MAX_EVENTS);
            cr_assert(next_event(st[c], &evs[n]), "the all-jobs stream does not end");
            const sse_event *e = &evs[n++];
            cr_assert_neq(strcmp(e->type, "reset"), 0, "nothing was missed");
            if (strcmp(e->type, "state") == 0 && strcmp(str(e->data, "state"), "succeeded") == 0)
                done++;
        }
        for (int j = 0; j < 2; j++) {
            sse_event *mine = calloc(n, sizeof *mine);
            size_t m = 0;
            for (size_t i = 0; i < n; i++) {
                int64_t job = event_job(&evs[i]);
                cr_assert(job == ids[0] || job == ids[1], "events of the two jobs only");
                if (job == ids[j]) mine[m++] = evs[i];
            }
            size_t states, metrics;
            check_job_events(mine, m, ids[j], &states, &metrics);
            cr_assert_eq(states, 3, "client %d, job %lld: queued, running, succeeded", c,
                         (long long)ids[j]);
            cr_assert_eq(metrics, 4 * 10);
            free(mine);
        }
        free_events(evs, n);
        http_stream_close(st[c]);
    }
    free(evs);
    stop_server(&s);
}

/* ---- cancel, delete, checkpoint download, durability ------------------------------------ */






Test(server, cancel_ends_a_queued_job_at_once_and_a_running_one_at_its_next_step) {
    server s = start_server();
    /* A long job on the CPU device, and one queued behind it on the same device. */
    char *spec = spec_with("\"epochs\":300", "\"epochs\":100000,\"device\":\"cpu\"");
    int64_t running = submit(&s, spec);
    int64_t queued = submit(&s, spec);
    free(spec);
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
    r = request(&s, "POST", job_url(url, sizeof url, queued, "/cancel"), NULL, NULL);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    job = parse_body(&r);
    http_response_free(&r);
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
    r = request(&s, "POST", job_url(url, sizeof url, running, "/cancel"), NULL, NULL);
    cr_assert_eq(r.status, 202, "%d %s", r.status, r.body);
    job = parse_body(&r);
    http_response_free(&r);
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
    spec = spec_with("\"epochs\":300", "\"epochs\":5,\"device\":\"cpu\"");
    int64_t done = submit(&s, spec);
    free(spec);
    job = wait_state(&s, done, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    r = request(&s, "POST", job_url(url, sizeof url, done, "/cancel"), NULL, NULL);
    assert_error(&r, 409, "conflict", NULL);
    cr_assert(strstr(r.body, "succeeded"), "%s", r.body);
    http_response_free(&r);
    job = job_now(&s, done);
    cr_assert_str_eq(str(job, "state"), "succeeded", "a refused cancel changes nothing");
    cr_assert(json_is_false(json_object_get(job, "cancel_requested")));
    json_decref(job);

    /* Unknown jobs and other methods. */
    r = request(&s, "POST", "/api/v1/jobs/4242/cancel", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "POST", "/api/v1/jobs/abc/cancel", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "GET", job_url(url, sizeof url, done, "/cancel"), NULL, NULL);
    assert_allow(&r, "POST");
    http_response_free(&r);
    r = request(&s, "DELETE", job_url(url, sizeof url, done, "/cancel"), NULL, NULL);
    assert_allow(&r, "POST");
    http_response_free(&r);
    r = request(&s, "PUT", job_url(url, sizeof url, done, ""), json_headers, "{}");
    assert_allow(&r, "GET, HEAD, DELETE");
    http_response_free(&r);
    stop_server(&s);
}

Test(server, delete_removes_a_finished_job_with_its_rows_and_files) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":20,\"device\":\"cpu\"");
    int64_t trained = submit(&s, spec);
    free(spec);
    int64_t bench = submit(&s, gemm_bench_spec);
    json_t *job = wait_state(&s, trained, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    json_decref(wait_bench(&s, bench));
    size_t len;
    char *file = data_file(&s, trained, &len);
    cr_assert_not_null(file, "the finished train job has its checkpoint");
    free(file);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM metrics WHERE job_id = ?1", trained), 4 * 20);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM benchmarks WHERE job_id = ?1", bench), 1);

    /* Queued and running jobs are refused; cancel them first. */
    spec = spec_with("\"epochs\":300", "\"epochs\":100000,\"device\":\"cpu\"");
    int64_t running = submit(&s, spec);
    int64_t queued = submit(&s, spec);
    free(spec);
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

    http_response r = request(&s, "DELETE", "/api/v1/jobs/4242", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "DELETE", "/api/v1/jobs/4242/metrics", NULL, NULL);
    assert_allow(&r, "GET, HEAD");
    http_response_free(&r);
    stop_server(&s);
}

Test(server, the_checkpoint_downloads_as_a_safetensors_file) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":50");
    int64_t id = submit(&s, spec);
    free(spec);
    json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    const char *sha = str(json_object_get(job, "result"), "weights_sha256");

    char url[96], h[128], want[64];
    http_response r = request(&s, "GET", job_url(url, sizeof url, id, "/checkpoint"), NULL, NULL);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
    cr_assert_str_eq(h, "application/octet-stream");
    cr_assert_not_null(http_header(&r, "Content-Disposition", h, sizeof h));
    snprintf(want, sizeof want, "attachment; filename=\"job-%lld.safetensors\"", (long long)id);
    cr_assert_str_eq(h, want);

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
    job = wait_state(&s, inet, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    r = request(&s, "GET", job_url(url, sizeof url, inet, "/checkpoint"), NULL, NULL);
    assert_error(&r, 404, "no_checkpoint", NULL);
    cr_assert(strstr(r.body, "only train jobs"), "%s", r.body);
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/jobs/4242/checkpoint", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "POST", job_url(url, sizeof url, id, "/checkpoint"), json_headers, "{}");
    assert_allow(&r, "GET, HEAD");
    http_response_free(&r);
    stop_server(&s);
}

/* Fashion-MNIST on the pocl CPU device: about half a second an epoch there, so a kill lands
 * mid-run. */
#define FASHION_SPEC(epochs, every)                                                            \
    "{\"kind\":\"train\",\"name\":\"fashion\",\"device\":\"cpu\",\"seed\":7,"                 \
    "\"model\":{\"type\":\"mlp\",\"layers\":[784,256,256,10]},"                               \
    "\"data\":{\"source\":\"fashion-mnist\"},"                                                 \
    "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.05,\"momentum\":0.9},\"batch_size\":128,"       \
    "\"epochs\":" #epochs ",\"checkpoint_every\":" #every "}"
#define FASHION_STEPS_PER_EPOCH 469 /* 60000 samples in batches of 128 */

static const char *const metric_names[] = {"accuracy", "loss", "test_accuracy", "test_loss"};

/* The job's metric rows as the database holds them: [{name, step, value, created_at}]. */
static json_t *metric_rows(const server *s, int64_t id) {
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s->db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT name, step, value, created_at FROM metrics"
                                    " WHERE job_id = ?1 ORDER BY name, step",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    json_t *rows = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(rows, json_pack("{s:s, s:I, s:f, s:s}", "name",
                                              (const char *)sqlite3_column_text(st, 0), "step",
                                              (json_int_t)sqlite3_column_int64(st, 1), "value",
                                              sqlite3_column_double(st, 2), "created_at",
                                              (const char *)sqlite3_column_text(st, 3)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

static json_t *metric_row(const json_t *rows, const char *name, int64_t step) {
    size_t i;
    json_t *m;
    json_array_foreach(rows, i, m) {
        if (strcmp(str(m, "name"), name) == 0 &&
            json_integer_value(json_object_get(m, "step")) == step)
            return m;
    }
    return NULL;
}

/* Every metric of every epoch 1..epochs, once. */
static void assert_every_epoch_once(const json_t *rows, int epochs) {
    cr_assert_eq(json_array_size(rows), 4 * (size_t)epochs, "one row per metric and epoch");
    for (int n = 0; n < 4; n++)
        for (int e = 1; e <= epochs; e++)
            cr_assert_not_null(metric_row(rows, metric_names[n], e), "%s of epoch %d",
                               metric_names[n], e);
}


Test(server, a_kill_9_mid_training_resumes_from_the_last_checkpoint_bit_identically) {
    server s = start_server();
    int64_t t0 = now_ms();
    int64_t id = submit(&s, FASHION_SPEC(8, 1));

    /* The download answers once the first epoch's checkpoint is written. */
    int64_t deadline = now_ms() + JOB_TIMEOUT_MS;
    int status;
    while ((status = status_of(&s, "GET", id, "/checkpoint")) != 200) {
        cr_assert_eq(status, 404);
        cr_assert_lt(now_ms(), deadline, "no checkpoint was written");
        usleep(20000);
    }
    int64_t t_checkpoint = now_ms();
    json_t *before = metric_rows(&s, id);
    json_t *job = job_now(&s, id);
    cr_assert_str_eq(str(job, "state"), "running", "still running when it is killed");
    json_decref(job);
    kill_server(&s);
    int64_t t_kill = now_ms();
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'running'", id),
                 1, "a killed server leaves its job running in the database");

    /* The next start resumes it; the same spec queued behind it runs uninterrupted. */
    s = start_server();
    int64_t t_restart = now_ms();
    int64_t ref = submit(&s, FASHION_SPEC(8, 1));
    job = wait_state(&s, id, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    int64_t t_done = now_ms();
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s",
                     str(json_object_get(job, "error"), "message"));
    cr_assert_geq(json_integer_value(json_object_get(job, "attempts")), 2);
    int64_t resumed = json_integer_value(json_object_get(result, "resumed_from_epoch"));
    cr_assert(resumed >= 1 && resumed < 8, "resumed_from_epoch %lld", (long long)resumed);
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_step")),
                 resumed * FASHION_STEPS_PER_EPOCH);
    json_t *ref_job = wait_state(&s, ref, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    json_t *ref_result = json_object_get(ref_job, "result");
    cr_assert_str_eq(str(ref_job, "state"), "succeeded");
    cr_assert_eq(json_integer_value(json_object_get(ref_result, "resumed_from_epoch")), 0);
    cr_assert_str_eq(str(result, "weights_sha256"), str(ref_result, "weights_sha256"),
                     "resume is bit-identical to the uninterrupted run");
    cr_assert_eq(json_integer_value(json_object_get(result, "steps")),
                 json_integer_value(json_object_get(ref_result, "steps")));

    /* No metric row was lost or doubled: the killed run's epochs up to its checkpoint are the
     * rows it wrote (older than the second attempt); later ones were written again, equal. */
    json_t *after = metric_rows(&s, id), *ref_rows = metric_rows(&s, ref);
    assert_every_epoch_once(after, 8);
    const char *restarted_at = str(job, "started_at");
    size_t i;
    json_t *m;
    json_array_foreach(after, i, m) {
        int64_t step = json_integer_value(json_object_get(m, "step"));
        bool kept = strcmp(str(m, "created_at"), restarted_at) < 0;
        cr_assert_eq(kept, step <= resumed, "%s of epoch %lld written %s, second start %s",
                     str(m, "name"), (long long)step, str(m, "created_at"), restarted_at);
        json_t *same = metric_row(ref_rows, str(m, "name"), step);
        cr_assert_eq(json_real_value(json_object_get(m, "value")),
                     json_real_value(json_object_get(same, "value")), "%s of epoch %lld",
                     str(m, "name"), (long long)step);
    }
    json_array_foreach(before, i, m) {
        json_t *now = metric_row(after, str(m, "name"), json_integer_value(json_object_get(m, "step")));
        cr_assert_not_null(now);
        cr_assert_eq(json_real_value(json_object_get(m, "value")),
                     json_real_value(json_object_get(now, "value")));
        if (json_integer_value(json_object_get(m, "step")) <= resumed)
            cr_assert_str_eq(str(m, "created_at"), str(now, "created_at"), "the same row");
    }
    cr_assert_geq(json_array_size(before), 4, "epoch 1 was recorded before the kill");
    fprintf(stderr,
            "kill -9 test: first checkpoint after %lld ms, killed %lld ms later at epoch >= %lld; "
            "restart took %lld ms; resumed job done %lld ms after the restart "
            "(resumed_from_epoch %lld, attempts %lld)\n",
            (long long)(t_checkpoint - t0), (long long)(t_kill - t_checkpoint),
            (long long)json_array_size(before) / 4, (long long)(t_restart - t_kill),
            (long long)(t_done - t_restart), (long long)resumed,
            (long long)json_integer_value(json_object_get(job, "attempts")));
    json_decref(before);
    json_decref(after);
    json_decref(ref_rows);
    json_decref(job);
    json_decref(ref_job);
    stop_server(&s);
}

Test(server, sigterm_checkpoints_the_running_job_requeues_it_and_the_next_start_resumes_it) {
    server s = start_server();
    /* No periodic checkpoints: whatever the restart resumes from, the shutdown wrote. */
    int64_t id = submit(&s, FASHION_SPEC(6, 0));
    int64_t ref = submit(&s, FASHION_SPEC(6, 0)); /* queued behind it on the same device */
    int64_t deadline = now_ms() + JOB_TIMEOUT_MS;
    for (;;) {
        json_t *job = job_now(&s, id);
        double progress = json_number_value(json_object_get(job, "progress"));
        bool running = strcmp(str(job, "state"), "running") == 0;
        cr_assert(running || strcmp(str(job, "state"), "queued") == 0, "state %s",
                  str(job, "state"));
        json_decref(job);
        if (running && progress >= 0.2) break; /* inside the second epoch */
        cr_assert_lt(now_ms(), deadline, "the job did not get going");
        usleep(20000);
    }
    stop_server(&s); /* SIGTERM; exits 0 */

    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'queued'"
                                " AND attempts = 1 AND started_at IS NULL AND progress = 0", id),
                 1, "the running job is queued again, its attempt counted");
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'queued'"
                                " AND attempts = 0", ref),
                 1, "the queued job was not started by a stopping server");
    size_t len, data_start;
    char *file = data_file(&s, id, &len);
    cr_assert_not_null(file, "the shutdown checkpointed the running job");
    json_t *header = test_safetensors_header(file, len, &data_start);
    cr_assert_not_null(json_object_get(header, "layers.2.weight"));
    json_t *meta = json_object_get(header, "__metadata__");
    int64_t step = atoll(str(meta, "step"));
    int64_t epoch = atoll(str(meta, "epoch")), in_epoch = atoll(str(meta, "epoch_step"));
    cr_assert_geq(step, FASHION_STEPS_PER_EPOCH / 5, "stopped past 20 %% of the run: step %lld",
                  (long long)step);
    cr_assert_eq(step, epoch * FASHION_STEPS_PER_EPOCH + in_epoch);
    json_decref(header);
    free(file);

    s = start_server();
    json_t *job = wait_state(&s, id, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    json_t *result = json_object_get(job, "result");
    cr_assert_str_eq(str(job, "state"), "succeeded", "error: %s",
                     str(json_object_get(job, "error"), "message"));
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_step")), step,
                 "it resumed where the shutdown stopped it");
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_epoch")), epoch);
    json_t *ref_job = wait_state(&s, ref, "succeeded failed cancelled", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(ref_job, "state"), "succeeded");
    cr_assert_eq(json_integer_value(json_object_get(ref_job, "attempts")), 1);
    cr_assert_str_eq(str(result, "weights_sha256"),
                     str(json_object_get(ref_job, "result"), "weights_sha256"),
                     "a stop and resume mid-epoch is bit-identical to no stop");
    json_t *rows = metric_rows(&s, id), *ref_rows = metric_rows(&s, ref);
    assert_every_epoch_once(rows, 6);
    size_t i;
    json_t *m;
    json_array_foreach(rows, i, m) {
        json_t *same = metric_row(ref_rows, str(m, "name"), json_integer_value(json_object_get(m, "step")));
        cr_assert_eq(json_real_value(json_object_get(m, "value")),
                     json_real_value(json_object_get(same, "value")), "%s of epoch %lld",
                     str(m, "name"), (long long)json_integer_value(json_object_get(m, "step")));
    }
    json_decref(rows);
    json_decref(ref_rows);
    json_decref(job);
    json_decref(ref_job);
    stop_server(&s);
}

/* ---- auth, request limits and /metrics -------------------------------------------------- */






static const char inet_host_spec[] = "{\"kind\":\"inet\",\"device\":\"host\",\"program\":\"@main = 1\"}";

Test(server, a_token_guards_mutations_while_loopback_reads_need_none) {
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

    /* Missing, not Bearer, empty, wrong: each says so, and nothing is stored. */
    const char *const no_auth[] = {"Content-Type: application/json", NULL};
    http_response r = bare_request(&s, "POST", "/api/v1/jobs", no_auth, inet_host_spec);
    assert_unauthorized(&r, "missing Authorization header", NULL);
    http_response_free(&r);
    const char *const basic[] = {"Content-Type: application/json",
                                 "Authorization: Basic dXNlcjpwYXNz", NULL};
    r = bare_request(&s, "POST", "/api/v1/jobs", basic, inet_host_spec);
    assert_unauthorized(&r, "not a Bearer token", NULL);
    http_response_free(&r);
    const char *const empty[] = {"Content-Type: application/json", "Authorization: Bearer ", NULL};
    r = bare_request(&s, "POST", "/api/v1/jobs", empty, inet_host_spec);
    assert_unauthorized(&r, "empty Bearer token", NULL);
    http_response_free(&r);
    /* One character off: the same length, the same prefix. */
    char wrong_value[128], wrong_header[160];
    snprintf(wrong_value, sizeof wrong_value, "%s", token);
    wrong_value[63] = wrong_value[63] == '0' ? '1' : '0';
    snprintf(wrong_header, sizeof wrong_header, "Authorization: Bearer %s", wrong_value);
    const char *const wrong[] = {"Content-Type: application/json", wrong_header, NULL};
    r = bare_request(&s, "POST", "/api/v1/jobs", wrong, inet_host_spec);
    assert_unauthorized(&r, "wrong token", token);
    cr_assert_null(strstr(r.body, wrong_value), "the presented token is not echoed");
    http_response_free(&r);
    snprintf(wrong_header, sizeof wrong_header, "Authorization: Bearer %sx", token);
    r = bare_request(&s, "POST", "/api/v1/jobs", wrong, inet_host_spec);
    assert_unauthorized(&r, "wrong token", token);
    http_response_free(&r);
    /* Every method but GET and HEAD needs it, before any other check. */
    r = bare_request(&s, "DELETE", "/api/v1/jobs/1", NULL, NULL);
    assert_unauthorized(&r, "missing Authorization header", NULL);
    http_response_free(&r);
    r = bare_request(&s, "PUT", "/api/v1/devices", no_auth, "{}");
    assert_unauthorized(&r, "missing Authorization header", NULL);
    http_response_free(&r);
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
    const char *const ok[] = {"Content-Type: application/json", good, NULL};
    r = bare_request(&s, "POST", "/api/v1/jobs", ok, inet_host_spec);
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    http_response_free(&r);
    char *err = stop_server_with(&s, err_fd);
    char line[400];
    snprintf(line, sizeof line, "paragond: API token in %s\n", path);
    cr_assert(strstr(err, line), "stderr says where the token is: %s", err);
    cr_assert_null(strstr(err, token), "stderr does not show the token: %s", err);
    free(err);

    /* A restart reuses the file: the same token, still private, still accepted. */
    s = start_server_with(NULL, "127.0.0.1", &err_fd);
    char *again = read_token(&s);
    again[64] = 0;
    cr_assert_str_eq(again, token, "the token survives a restart");
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    r = bare_request(&s, "POST", "/api/v1/jobs", ok, inet_host_spec);
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    http_response_free(&r);
    err = stop_server_with(&s, err_fd);
    cr_assert(strstr(err, line), "%s", err);
    free(err);
    free(again);
    free(token);
}

/* The dashboard's files, open to anyone, are in test_dashboard_auth.c. */
Test(server, off_loopback_reads_need_the_token_too_but_the_probes_do_not) {
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

Test(server, token_file_flag_supplies_the_token_and_bad_files_stop_the_start) {
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
    const char *const ok[] = {"Content-Type: application/json",
                              "Authorization: Bearer s3cret-token-of-24-chars", NULL};
    http_response r = bare_request(&s, "POST", "/api/v1/jobs", ok, inet_host_spec);
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    http_response_free(&r);
    char *err = stop_server_with(&s, err_fd);
    char line[400];
    snprintf(line, sizeof line, "paragond: API token in %s\n", file);
    cr_assert(strstr(err, line), "%s", err);
    free(err);

    /* Too short, missing, or a bad --max-queued: paragond does not start and says why. */
    f = fopen(file, "w");
    fputs("short\n", f);
    fclose(f);
    char db[300], data[300];
    snprintf(db, sizeof db, "%s/t.db", tmpdir);
    snprintf(data, sizeof data, "%s/data", tmpdir);
    char missing[320];
    snprintf(missing, sizeof missing, "%s/nowhere", tmpdir);
    const char *bad[][10] = {
        {"--port", "0", "--db", db, "--data-dir", data, "--token-file", file, NULL},
        {"--port", "0", "--db", db, "--data-dir", data, "--token-file", missing, NULL},
        {"--port", "0", "--db", db, "--data-dir", data, "--max-queued", "0", NULL},
        {"--port", "0", "--db", db, "--data-dir", data, "--max-queued", "many", NULL},
    };
    const int status[] = {1, 1, 2, 2};
    const char *says[] = {"--token-file: token file", "No such file", "--max-queued: '0'",
                          "--max-queued: 'many'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        child c = spawn(bad[i], NULL, true);
        char *out = read_all(c.out_fd, START_TIMEOUT_MS);
        err = read_all(c.err_fd, START_TIMEOUT_MS);
        cr_assert_eq(wait_exit(c.pid, STOP_TIMEOUT_MS), status[i], "case %zu: %s", i, err);
        cr_assert(strstr(err, says[i]), "case %zu: stderr: %s", i, err);
        cr_assert_str_eq(out, "");
        free(out);
        free(err);
        close(c.out_fd);
        close(c.err_fd);
    }
}

/* Nesting, array length, parameters and device memory: 400 naming the limit; nothing stored. */
Test(server, request_and_job_limits_are_clear_400s) {
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
Test(server, a_full_queue_answers_429_with_retry_after) {
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

/* The value of the exposition line that starts with prefix (the metric and its labels). */
static double metric_value(const char *text, const char *prefix) {
    const char *p = text;
    size_t n = strlen(prefix);
    while ((p = strstr(p, prefix))) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
        p += n;
    }
    cr_assert_fail("no line '%s ...' in:\n%s", prefix, text);
    return 0;
}

Test(server, metrics_exposes_jobs_queues_requests_and_work_done) {
    server s = start_server();
    http_response r = request(&s, "GET", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char ct[128];
    cr_assert_not_null(http_header(&r, "Content-Type", ct, sizeof ct));
    cr_assert_str_eq(ct, "text/plain; version=0.0.4; charset=utf-8");
    cr_assert_eq(metric_value(r.body, "paragon_jobs{state=\"queued\"}"), 0);
    cr_assert_eq(metric_value(r.body, "paragon_queue_length{device=\"host\"}"), 0);
    cr_assert_eq(metric_value(r.body, "paragon_inet_interactions_total"), 0);
    cr_assert(strstr(r.body, "# TYPE paragon_http_request_duration_seconds histogram\n"));
    http_response_free(&r);

    /* fib on an OpenCL device (718993 interactions) and the XOR training job. */
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/examples/inet/fib.hvm", root ? root : ".");
    size_t len = 0;
    char *program = pgn_read_file(path, &len);
    cr_assert_not_null(program, "%s", path);
    json_t *spec = json_pack("{s:s, s:s%}", "kind", "inet", "program", program, len);
    char *body = json_dumps(spec, JSON_COMPACT);
    int64_t fib = submit(&s, body);
    int64_t xor = submit(&s, xor_spec);
    json_t *job = wait_state(&s, fib, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    char device[64];
    snprintf(device, sizeof device, "%s", str(job, "device"));
    json_decref(job);
    job = wait_state(&s, xor, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    r = request(&s, "GET", "/api/v1/nope/42", NULL, NULL);
    http_response_free(&r);

    r = request(&s, "GET", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 200);
    const char *m = r.body;
    cr_assert_eq(metric_value(m, "paragon_jobs{state=\"succeeded\"}"), 2);
    cr_assert_eq(metric_value(m, "paragon_jobs{state=\"running\"}"), 0);
    cr_assert_eq(metric_value(m, "paragon_inet_interactions_total"), 718993);
    cr_assert_gt(metric_value(m, "paragon_flops_total"), 0, "the XOR job's FLOPs");
    char line[200];
    snprintf(line, sizeof line, "paragon_device_busy_seconds_total{device=\"%s\"}", device);
    cr_assert_gt(metric_value(m, line), 0, "the device ran fib");
    snprintf(line, sizeof line, "paragon_queue_length{device=\"%s\"}", device);
    cr_assert_eq(metric_value(m, line), 0);
    /* Requests by route pattern, never by raw path; polls of the jobs were GETs of {id}. */
    cr_assert_eq(metric_value(m, "paragon_http_requests_total{method=\"POST\",route=\"/api/v1/jobs\","
                                 "status=\"201\"}"),
                 2);
    cr_assert_geq(metric_value(m, "paragon_http_requests_total{method=\"GET\",route="
                                  "\"/api/v1/jobs/{id}\",status=\"200\"}"),
                  2);
    cr_assert_eq(metric_value(m, "paragon_http_requests_total{method=\"GET\",route=\"other\","
                                 "status=\"404\"}"),
                 1);
    cr_assert_null(strstr(m, "/api/v1/nope"), "raw paths are not labels");
    char id_path[64];
    snprintf(id_path, sizeof id_path, "/api/v1/jobs/%lld\"", (long long)fib);
    cr_assert_null(strstr(m, id_path), "job ids are not labels");
    double count = metric_value(m, "paragon_http_request_duration_seconds_count{method=\"GET\","
                                   "route=\"/api/v1/jobs/{id}\"}");
    cr_assert_eq(metric_value(m, "paragon_http_request_duration_seconds_bucket{method=\"GET\","
                                 "route=\"/api/v1/jobs/{id}\",le=\"+Inf\"}"),
                 count);
    cr_assert_gt(metric_value(m, "paragon_http_request_duration_seconds_sum{method=\"GET\","
                                 "route=\"/api/v1/jobs/{id}\"}"),
                 0);
    http_response_free(&r);
    r = request(&s, "POST", "/metrics", json_headers, "{}");
    assert_error(&r, 405, "method_not_allowed", NULL);
    http_response_free(&r);
    free(body);
    free(program);
    json_decref(spec);
    stop_server(&s);
}

/* Two pocl devices of different speed (pthread on both cores, basic on one): after the first
 * start's calibration, "auto" puts a big job where the cost model expects it to finish first,
 * and a second one where it would finish first counting the first one's queued estimate; both
 * choices and their reasons are on the jobs. */
Test(server, auto_placement_weighs_two_devices_and_their_queues) {
    const char *const env[] = {"POCL_DEVICES=pthread basic", NULL};
    server s = start_server_env(true, env);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    size_t i, n_opencl = 0;
    json_t *d;
    int64_t deadline = now_ms() + 120000;
    json_array_foreach(json_object_get(devs, "devices"), i, d) {
        if (!strcmp(str(d, "type"), "host")) continue;
        n_opencl++;
        char path[256];
        snprintf(path, sizeof path, "/api/v1/benchmarks?device=%s", str(d, "id"));
        for (;;) { /* calibrated: its rates come from measurements */
            json_t *b = get_json(&s, path, 200);
            size_t rows = json_array_size(json_object_get(b, "rows"));
            json_decref(b);
            if (rows >= 3) break;
            cr_assert_lt(now_ms(), deadline, "device %s was not calibrated", str(d, "id"));
            usleep(100000);
        }
    }
    json_decref(devs);
    cr_assert_eq(n_opencl, 2, "POCL_DEVICES=\"pthread basic\" gives two devices");

    /* a big job: 50 epochs of a 1024-wide MLP on 3,000 spiral points (about 1e12 FLOPs) */
    static const char big[] = "{\"kind\":\"train\",\"name\":\"big\",\"data\":{\"source\":\"spiral\","
                              "\"samples\":1000,\"classes\":3},\"model\":{\"type\":\"mlp\","
                              "\"layers\":[2,1024,1024,3]},\"batch_size\":100,\"epochs\":50}";
    json_t *jobs[2];
    for (int k = 0; k < 2; k++) {
        int64_t id = submit(&s, big);
        char path[64];
        snprintf(path, sizeof path, "/api/v1/jobs/%lld", (long long)id);
        jobs[k] = get_json(&s, path, 200);
        json_t *est = json_object_get(jobs[k], "estimate");
        json_t *cands = json_object_get(est, "candidates");
        cr_assert_eq(json_array_size(cands), 2, "both OpenCL devices are weighed");
        /* the chosen device is the candidate with the shortest estimated finish */
        const char *best = NULL;
        double best_total = 0;
        size_t c;
        json_t *cand;
        json_array_foreach(cands, c, cand) {
            cr_assert(json_is_true(json_object_get(cand, "measured")));
            double total = json_number_value(json_object_get(cand, "total_seconds"));
            if (!best || total < best_total) {
                best = str(cand, "device");
                best_total = total;
            }
        }
        cr_assert_str_eq(str(jobs[k], "device"), best, "job %d went to the shortest estimated finish", k);
        if (k == 1) {
            /* the first job's estimate counts on its device's queue */
            const char *first = str(jobs[0], "device");
            double first_s = json_number_value(json_object_get(json_object_get(jobs[0], "estimate"), "seconds"));
            json_array_foreach(cands, c, cand) {
                if (!strcmp(str(cand, "device"), first))
                    cr_assert_geq(json_number_value(json_object_get(cand, "queue_seconds")), first_s * 0.999,
                                  "the queued job counts");
            }
        }
    }
    /* the measured devices differ, and the first job took the faster one */
    json_t *c0 = json_object_get(json_object_get(jobs[0], "estimate"), "candidates");
    double g0 = json_number_value(json_object_get(json_array_get(c0, 0), "gflops"));
    double g1 = json_number_value(json_object_get(json_array_get(c0, 1), "gflops"));
    const char *faster = str(json_array_get(c0, g0 > g1 ? 0 : 1), "device");
    cr_assert_str_eq(str(jobs[0], "device"), faster, "the big job went to the device with more GFLOP/s (%g vs %g)", g0, g1);
    for (int k = 0; k < 2; k++) {
        char path[96];
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/cancel", (long long)json_integer_value(json_object_get(jobs[k], "id")));
        http_response r = request(&s, "POST", path, json_headers, "");
        cr_assert(r.status == 200 || r.status == 202, "cancel: %d %s", r.status, r.body);
        http_response_free(&r);
        json_decref(jobs[k]);
    }
    stop_server(&s);
}

/* A database started afresh over an old data dir: job ids start again at 1, and the old job 1's
 * checkpoint must not be resumed by the new job 1 (it runs from scratch, and says so). */
Test(server, a_fresh_database_over_an_old_data_dir_does_not_resume_another_jobs_checkpoint) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_t *job = wait_state(&s, id, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    stop_server(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/jobs/%lld/checkpoint.safetensors", s.data, (long long)id);
    cr_assert_eq(access(path, F_OK), 0, "the first job left its checkpoint: %s", path);
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", s.db, suffixes[i]);
        unlink(path);
    }

    s = start_server();
    int64_t again = submit(&s, xor_spec);
    cr_assert_eq(again, id, "ids start again in a new database");
    job = wait_state(&s, again, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_t *result = json_object_get(job, "result");
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_epoch")), 0, "it ran from scratch");
    json_decref(job);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs", (long long)again);
    http_response r = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "removed a checkpoint left in"), "the log says so: %s", r.body);
    http_response_free(&r);
    stop_server(&s);
}
