/* test_api_basics.c: what a live paragond answers about itself: health, readiness, version and
 * devices (over one keep-alive connection), /metrics after real work, the dashboard's files byte
 * for byte; and its command line: --help, --version, bad flags, no OpenCL device at start. */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(api_basics, .init = harness_setup, .fini = harness_teardown);

Test(api_basics, health_version_and_devices_answer) {
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
        json_t *profile = json_object_get(d, "profile");
        cr_assert_str_eq(str(profile, "class"), str(d, "type"), "each device shows its profile");
        cr_assert_str_eq(str(json_object_get(json_object_get(profile, "families"), "inet"), "from"), "default");
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

/* The embedded file must be byte-identical to web/<name> in the source tree. */
static void assert_asset(const server *s, const char *path, const char *file,
                         const char *type) {
    char rel[128];
    snprintf(rel, sizeof rel, "web/%s", file);
    size_t len;
    char *want = source_file(rel, &len);
    http_response r = request(s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200, "GET %s: %d", path, r.status);
    char ct[128];
    cr_assert_not_null(http_header(&r, "Content-Type", ct, sizeof ct));
    cr_assert_str_eq(ct, type);
    cr_assert_eq(r.body_len, len);
    cr_assert_str_eq(r.body, want);
    http_response_free(&r);
    free(want);
}

Test(api_basics, dashboard_files_are_served) {
    server s = start_server();
    assert_asset(&s, "/", "index.html", "text/html; charset=utf-8");
    /* Every file of web/ (the page, its style sheet, app.js and the modules it imports): one
     * missing from meson.build's web_files would break the page only in a browser. */
    web_file files[WEB_FILES_MAX];
    size_t n = list_web_files(files);
    for (size_t i = 0; i < n; i++) {
        char path[80];
        snprintf(path, sizeof path, "/%.63s", files[i].name);
        assert_asset(&s, path, files[i].name, files[i].type);
    }
    const refusal cases[] = {
        {"POST", "/app.js", json_headers, "{}", 405, "method_not_allowed", .field = NULL},
        {"GET", "/web/app.js", NULL, NULL, 404, "not_found", .field = NULL},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    stop_server(&s);
}

Test(api_basics, flags_help_version_and_errors) {
    char *out, *err;
    const char *help[] = {"--help", NULL};
    cr_assert_eq(run_to_exit(help, NULL, &out, &err), 0);
    cr_assert(strstr(out, "usage: paragond") && strstr(out, "--data-dir"), "%s", out);
    free(out);
    free(err);

    const char *version[] = {"--version", NULL};
    cr_assert_eq(run_to_exit(version, NULL, &out, &err), 0);
    cr_assert_str_eq(out, "paragond 0.1.0\n");
    free(out);
    free(err);

    /* Each bad command line exits 2 and says what is wrong on stderr, nothing on stdout. */
    static const struct {
        const char *args[3];
        const char *says;
    } bad[] = {
        {{"--verbose", NULL}, "unknown option '--verbose'"},
        {{"--port", "http", NULL}, "--port: 'http' is not a port number"},
        {{"--port", "70000", NULL}, "--port: '70000'"},
        {{"--db", NULL}, "--db needs a value"},
        {{"stray", NULL}, "unexpected argument 'stray'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(run_to_exit(bad[i].args, NULL, &out, &err), 2, "%s exits 2", bad[i].args[0]);
        cr_assert(strstr(err, bad[i].says), "stderr for %s: %s", bad[i].args[0], err);
        cr_assert_str_eq(out, "", "nothing on stdout");
        free(out);
        free(err);
    }
}

Test(api_basics, no_opencl_device_exits_1_with_a_clear_message) {
    char vendors[300], env[320], db[300], data[300];
    snprintf(vendors, sizeof vendors, "%s/vendors", tmpdir);
    cr_assert_eq(mkdir(vendors, 0700), 0);
    snprintf(env, sizeof env, "OCL_ICD_VENDORS=%s", vendors);
    snprintf(db, sizeof db, "%s/t.db", tmpdir);
    snprintf(data, sizeof data, "%s/data", tmpdir);
    const char *args[] = {"--port", "0", "--db", db, "--data-dir", data, NULL};
    const char *extra[] = {env, NULL};
    char *out, *err;
    cr_assert_eq(run_to_exit(args, extra, &out, &err), 1, "stderr: %s", err);
    cr_assert_str_eq(out, "", "it never claims to listen");
    cr_assert(strstr(err, "no OpenCL device found"), "stderr: %s", err);
    cr_assert(strstr(err, "pocl-opencl-icd"), "stderr names the fix: %s", err);
    cr_assert_neq(access(db, F_OK), 0, "no database is created");
    cr_assert_neq(access(data, F_OK), 0, "no data dir is created");
    free(out);
    free(err);
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

Test(api_basics, metrics_exposes_jobs_queues_requests_and_work_done) {
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
    json_t *spec = inet_spec_from("examples/inet/fib.hvm");
    char *body = json_dumps(spec, JSON_COMPACT);
    int64_t fib = submit(&s, body);
    int64_t xor = submit(&s, xor_spec);
    json_t *job = wait_succeeded(&s, fib);
    char device[64];
    snprintf(device, sizeof device, "%s", str(job, "device"));
    json_decref(job);
    json_decref(wait_succeeded(&s, xor));
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
    /* the standard process series, as every Prometheus client exports them */
    cr_assert_gt(metric_value(m, "process_cpu_seconds_total"), 0, "the jobs took CPU time");
    cr_assert_gt(metric_value(m, "process_resident_memory_bytes"), 1 << 20);
    cr_assert_geq(metric_value(m, "process_virtual_memory_bytes"), metric_value(m, "process_resident_memory_bytes"));
    double fds = metric_value(m, "process_open_fds");
    cr_assert(fds >= 3 && fds <= metric_value(m, "process_max_fds"), "%g open fds", fds);
    double start = metric_value(m, "process_start_time_seconds"), now = (double)time(NULL);
    cr_assert(start > now - 600 && start <= now + 1, "started at %.0f, now %.0f", start, now);
    cr_assert(strstr(m, "# TYPE process_cpu_seconds_total counter\n"), "%s", m);
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
    json_decref(spec);
    stop_server(&s);
}
