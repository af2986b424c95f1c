/* test_bench_jobs.c: bench jobs on one device and on "all", the benchmark export in CSV and JSON,
 * the first start's calibration, and "auto" placement by the cost model, over one device and over
 * two of different speed with a queue. */
#include "paragond_harness.h"
#include "paragon.h"
#include "store.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(bench_jobs, .init = harness_setup, .fini = harness_teardown);

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

Test(bench_jobs, a_bench_job_stores_its_rows_for_the_export) {
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

/* MiB of float32 weights and biases of an MLP of `n` layer widths, as Paragon-Py's estMB, to four
 * decimals (a number the store keeps exactly as it is given). */
static double est_mib(const int *widths, int n) {
    double params = 0;
    for (int i = 0; i + 1 < n; i++) params += (double)widths[i] * widths[i + 1] + widths[i + 1];
    return round(params * 4 / 1048576.0 * 1e4) / 1e4;
}

/* mlp-forward rows as the engine's suite makes them (figures from Paragon-Py's README). */
static json_t *mlp_row(const char *case_id, const char *device, const char *shape, double cpu_ms,
                       double mib) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "suite",
                     "mlp-forward", "case", case_id, "device", device, "adapter",
                     "0x7d55 (0x8086) integrated-gpu", "version", "0.1.0", "shape", shape,
                     "est_mib", mib, "cpu_ms", cpu_ms, "gpu_ms", 0.954, "speedup", 5.04, "mae", 0.0,
                     "max", 0.0, "gpu_init_ms", 0.57);
}

static const int s1[] = {784, 64, 10}, m3[] = {784, 512, 512, 10};

Test(bench_jobs, benchmark_export_in_csv_and_json) {
    server s = start_server();
    /* Rows reach the store the way a finished bench job's do, through a second connection. */
    json_t *rows = json_pack("[o, o, o]", mlp_row("S1", "cpu-aaaa", "784→64→10", 4.809, est_mib(s1, 3)),
                             mlp_row("M3", "cpu-aaaa", "784→512→512→10", 9.5, est_mib(m3, 4)),
                             mlp_row("S1", "gpu-bbbb", "784→64→10", 4.5, est_mib(s1, 3)));
    /* A row stored before the export followed Paragon-Py: decimal MB, '-' between layers, an
     * error of 1.5e-8. It is written as Paragon-Py writes it all the same. */
    json_t *old = mlp_row("S1", "cpu-old", "784-64-10", 4.809, 0);
    json_object_del(old, "est_mib");
    json_object_set_new(old, "est_mb", json_real(est_mib(s1, 3) * 1048576.0 / 1e6));
    json_object_set_new(old, "mae", json_real(1.5e-8));
    pgd_store *store;
    pgn_error err;
    cr_assert_eq(pgd_store_open(s.db, &store, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(store, 0, rows, NULL, &err), 0, "%s", err.message);
    json_t *olds = json_pack("[o]", old);
    cr_assert_eq(pgd_store_bench_add(store, 0, olds, NULL, &err), 0, "%s", err.message);
    json_decref(olds);
    pgd_store_close(store);

    /* CSV: Paragon-Py's header exactly, a download named for the suite; S1's line is the line of
     * Paragon-Py's README, byte for byte. */
    http_response r =
        request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char h[128];
    cr_assert_not_null(http_header(&r, "Content-Type", h, sizeof h));
    cr_assert_str_eq(h, "text/csv; charset=utf-8");
    cr_assert_not_null(http_header(&r, "Content-Disposition", h, sizeof h));
    cr_assert_str_eq(h, "attachment; filename=\"mlp-forward.csv\"");
#define ADAPTER_CSV "\"0x7d55 (0x8086) integrated-gpu\"" /* quoted, as Paragon-Py quotes it */
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "S1,\"784→64→10\",0.19,4.81,0.95,5.04,0.00E+00,0.00E+00,0.57," ADAPTER_CSV "\n"
                             "M3,\"784→512→512→10\",2.55,9.50,0.95,5.04,0.00E+00,0.00E+00,0.57," ADAPTER_CSV "\n"
                             "S1,\"784→64→10\",0.19,4.50,0.95,5.04,0.00E+00,0.00E+00,0.57," ADAPTER_CSV "\n"
                             "S1,\"784→64→10\",0.19,4.81,0.95,5.04,1.50E-08,0.00E+00,0.57," ADAPTER_CSV "\n");
    http_response_free(&r);
    r = request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv&device=gpu-bbbb", NULL,
                NULL);
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "S1,\"784→64→10\",0.19,4.50,0.95,5.04,0.00E+00,0.00E+00,0.57," ADAPTER_CSV "\n");
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
    cr_assert_eq(json_array_size(got), 4);
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
    cr_assert_str_eq(str(json_array_get(got, 0), "device"), "cpu-old", "limit keeps the newest");
    json_decref(v);
    v = get_json(&s, "/api/v1/benchmarks?device=nowhere", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "rows")), 0);
    json_decref(v);

    /* Bad parameters name themselves (a bad suite lists the suites); other methods are refused. */
    const char *suites = "mlp-forward, tensor-micro, gemm";
    const refusal cases[] = {
        {"GET", "/api/v1/benchmarks?format=csv", NULL, NULL, 400, "invalid_parameter",
         .field = "suite", .says = suites},
        {"GET", "/api/v1/benchmarks?format=csv&device=cpu-aaaa", NULL, NULL, 400,
         "invalid_parameter", .field = "suite", .says = suites},
        {"GET", "/api/v1/benchmarks?suite=mlp-forward&format=xml", NULL, NULL, 400,
         "invalid_parameter", .field = "format"},
        {"GET", "/api/v1/benchmarks?suite=nope&format=csv", NULL, NULL, 400, "invalid_parameter",
         .field = "suite", .says = suites},
        {"GET", "/api/v1/benchmarks?suite=all", NULL, NULL, 400, "invalid_parameter",
         .field = "suite", .says = suites},
        {"GET", "/api/v1/benchmarks?limit=-1", NULL, NULL, 400, "invalid_parameter", .field = "limit"},
        {"GET", "/api/v1/benchmarks?job=0", NULL, NULL, 400, "invalid_parameter", .field = "job"},
        {"GET", "/api/v1/benchmarks?job=first", NULL, NULL, 400, "invalid_parameter", .field = "job"},
        {"GET", "/api/v1/benchmarks?job=4242", NULL, NULL, 404, "not_found", .field = "job",
         .says = "job 4242 does not exist"},
        {"GET", "/api/v1/benchmarks?since=yesterday", NULL, NULL, 400, "invalid_parameter",
         .field = "since", .says = "ISO 8601"},
        {"GET", "/api/v1/benchmarks?since=2025-13-01", NULL, NULL, 400, "invalid_parameter",
         .field = "since", .says = "does not exist"},
        {"GET", "/api/v1/benchmarks?until=2025-02-30", NULL, NULL, 400, "invalid_parameter",
         .field = "until", .says = "does not exist"},
        {"GET", "/api/v1/benchmarks?since=2025-01-31T12:00", NULL, NULL, 400, "invalid_parameter",
         .field = "since", .says = "zone"},
        {"GET", "/api/v1/benchmarks?until=2025-01-31T24:00Z", NULL, NULL, 400, "invalid_parameter",
         .field = "until", .says = "hours 00-23"},
        {"GET", "/api/v1/benchmarks?since=2025-02-01&until=2025-01-01", NULL, NULL, 400,
         "invalid_parameter", .field = "until", .says = "not after since"},
        {"POST", "/api/v1/benchmarks", json_headers, "{}", 405, "method_not_allowed",
         .allow = "GET, HEAD"},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);
    json_decref(rows);
    stop_server(&s);
}

/* Stamps benchmark row id with a stored time of our choosing, as if it had been stored then. */
static void set_created_at(const server *s, int64_t row, const char *when) {
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s->db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "UPDATE benchmarks SET created_at = ?2 WHERE id = ?1", -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, row);
    sqlite3_bind_text(st, 2, when, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_changes(db), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* The cases of the rows of GET path, joined with ' '. */
static void cases_of(const server *s, const char *path, char *out, size_t size) {
    json_t *v = get_json(s, path, 200);
    out[0] = 0;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(v, "rows"), i, row)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? " " : "", str(row, "case"));
    json_decref(v);
}

Test(bench_jobs, the_export_filters_by_job_and_by_time) {
    server s = start_server();
    int64_t id = submit(&s, gemm_bench_spec);
    json_decref(wait_bench(&s, id));
    /* Three rows of no job, stored (as we say) on three days of 2025. */
    json_t *rows = json_pack("[o, o, o]", mlp_row("S1", "cpu-aaaa", "784→64→10", 4.809, est_mib(s1, 3)),
                             mlp_row("S2", "cpu-aaaa", "784→128→10", 5.5, 0.39),
                             mlp_row("M3", "cpu-aaaa", "784→512→512→10", 9.5, est_mib(m3, 4)));
    pgd_store *store;
    pgn_error err;
    cr_assert_eq(pgd_store_open(s.db, &store, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(store, 0, rows, NULL, &err), 0, "%s", err.message);
    pgd_store_close(store);
    json_decref(rows);
    json_t *v = get_json(&s, "/api/v1/benchmarks?suite=mlp-forward", 200);
    int64_t first = json_integer_value(json_object_get(json_array_get(json_object_get(v, "rows"), 0), "id"));
    json_decref(v);
    set_created_at(&s, first, "2025-01-01T00:00:00.000Z");
    set_created_at(&s, first + 1, "2025-03-01T12:00:00.000Z");
    set_created_at(&s, first + 2, "2025-06-01T00:00:00.000Z");

    /* By job: the gemm job's rows alone, each saying whose they are and when. */
    char path[256], got[256];
    snprintf(path, sizeof path, "/api/v1/benchmarks?job=%lld", (long long)id);
    v = get_json(&s, path, 200);
    json_t *list = json_object_get(v, "rows");
    cr_assert_geq(json_array_size(list), 1);
    size_t i;
    json_t *row;
    json_array_foreach(list, i, row) {
        cr_assert_eq(json_integer_value(json_object_get(row, "job_id")), id);
        cr_assert_str_eq(str(row, "suite"), "gemm");
        cr_assert_not_null(str(row, "created_at"));
    }
    json_decref(v);
    snprintf(path, sizeof path, "/api/v1/benchmarks?job=%lld&suite=mlp-forward", (long long)id);
    cases_of(&s, path, got, sizeof got);
    cr_assert_str_eq(got, "", "the job has no mlp-forward rows");

    /* By time: [since, until), dates at midnight UTC, offsets converted. */
    cases_of(&s, "/api/v1/benchmarks?since=2025-02-01&until=2025-06-01", got, sizeof got);
    cr_assert_str_eq(got, "S2", "until is not included");
    cases_of(&s, "/api/v1/benchmarks?suite=mlp-forward&since=2025-03-01T14:00:00%2B02:00", got, sizeof got);
    cr_assert_str_eq(got, "S2 M3", "since is included, +02:00 is 12:00Z");
    cases_of(&s, "/api/v1/benchmarks?until=2025-03-01T12:00:00.000Z", got, sizeof got);
    cr_assert_str_eq(got, "S1");
    cases_of(&s, "/api/v1/benchmarks?since=2025-03-01T11:59:59.9999Z&until=2025-03-01T12:00:00.001Z", got,
             sizeof got);
    cr_assert_str_eq(got, "S2", "fractions to the millisecond");
    cases_of(&s, "/api/v1/benchmarks?since=2026-01-01", got, sizeof got);
    cr_assert(strstr(got, "N=128") && !strstr(got, "S1"), "only what was stored since: %s", got);

    /* The CSV takes the same filters and keeps Paragon-Py's columns. */
    http_response r =
        request(&s, "GET", "/api/v1/benchmarks?suite=mlp-forward&format=csv&since=2025-06-01", NULL, NULL);
    cr_assert_str_eq(r.body, "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n"
                             "M3,\"784→512→512→10\",2.55,9.50,0.95,5.04,0.00E+00,0.00E+00,0.57,"
                             "\"0x7d55 (0x8086) integrated-gpu\"\n");
    http_response_free(&r);
    stop_server(&s);
}

Test(bench_jobs, device_all_queues_one_bench_job_per_opencl_device) {
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
/* A device's row of device_tunings, read straight from the database. */
typedef struct {
    bool found, too_slow;
    char tile[16], measured_at[40], kernels_hash[72];
} tuning;

static tuning tuning_of(const server *s, const char *device) {
    tuning t = {0};
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s->db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT json_extract(params, '$.gemm_tile'), measured_at, kernels_hash, too_slow"
                                    " FROM device_tunings WHERE device_id = ?1 AND family = 'cpu'",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, device, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        t.found = true;
        snprintf(t.tile, sizeof t.tile, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(t.measured_at, sizeof t.measured_at, "%s", (const char *)sqlite3_column_text(st, 1));
        snprintf(t.kernels_hash, sizeof t.kernels_hash, "%s", (const char *)sqlite3_column_text(st, 2));
        t.too_slow = sqlite3_column_int(st, 3);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return t;
}

/* The first OpenCL device's id (the device tests here calibrate and run on). */
static char *first_cl_device(const server *s) {
    json_t *devs = get_json(s, "/api/v1/devices", 200);
    const char *id = str(json_array_get(json_object_get(devs, "devices"), 0), "id");
    cr_assert_str_neq(id, "host", "an OpenCL device is first");
    char *copy = strdup(id);
    json_decref(devs);
    return copy;
}

/* Runs XOR on device to its end: the worker opens the device (and tunes it when it must). */
static void run_xor_on(const server *s, const char *device) {
    char *spec = spec_with("\"epochs\":300", "\"epochs\":2");
    json_t *root = json_loads(spec, 0, NULL);
    json_object_set_new(root, "device", json_string(device));
    char *body = json_dumps(root, JSON_COMPACT);
    json_decref(wait_succeeded(s, submit(s, body)));
    free(body);
    json_decref(root);
    free(spec);
}

/* A calibration's choice is a tuning of its own (device_tunings), not benchmark rows: kept across
 * restarts without measuring again, and measured again once the kernels it was made with change. */
Test(bench_jobs, a_tuning_is_kept_across_restarts_and_redone_when_the_kernels_change) {
    server s = start_server_calibrating(true);
    char *dev = first_cl_device(&s);
    int64_t deadline = now_ms() + 120000;
    while (!tuning_of(&s, dev).found) {
        cr_assert_lt(now_ms(), deadline, "%s was not tuned at the first start", dev);
        usleep(100000);
    }
    tuning first = tuning_of(&s, dev);
    cr_assert_str_eq(first.kernels_hash, pgn_kernels_hash());
    stop_server(&s);

    sleep(1); /* measured_at counts seconds: a new measurement would show */
    s = start_server_calibrating(true);
    run_xor_on(&s, dev);
    tuning again = tuning_of(&s, dev);
    cr_assert_str_eq(again.measured_at, first.measured_at, "the stored tuning was used, not measured again");
    stop_server(&s);

    /* kernels that changed since (as a new build would): tuned again when the device opens */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE device_tunings SET kernels_hash = 'another build'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    s = start_server_calibrating(true); /* its benchmark rows stand: the device is tuned when it opens */
    run_xor_on(&s, dev);
    tuning redone = tuning_of(&s, dev);
    cr_assert_str_eq(redone.kernels_hash, pgn_kernels_hash(), "measured for these kernels");
    cr_assert_str_neq(redone.measured_at, first.measured_at);
    stop_server(&s);
    free(dev);
}

Test(bench_jobs, first_start_calibrates_and_auto_placement_records_its_estimate) {
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
            if (rows >= 4) break; /* gemm fwd1, inet fib, tensor-micro add-1K, the cost probes */
            cr_assert_lt(now_ms(), deadline, "device %s was not calibrated", str(d, "id"));
            usleep(100000);
        }
        /* what a training run costs there: the cost suite's probes ran with the rest */
        snprintf(path, sizeof path, "/api/v1/benchmarks?device=%s&suite=train", str(d, "id"));
        json_t *probes = get_json(&s, path, 200);
        bool xor_probe = false;
        size_t r;
        json_t *row;
        json_array_foreach(json_object_get(probes, "rows"), r, row) xor_probe |= !strcmp(str(row, "case"), "cost-xor");
        json_decref(probes);
        cr_assert(xor_probe, "%s: the cost suite's cost-xor ran at the calibration", str(d, "id"));
        if (!strcmp(str(d, "id"), "host")) continue;
        /* an OpenCL device was tuned: its choice in a table of its own, and in its profile */
        tuning t = tuning_of(&s, str(d, "id"));
        cr_assert(t.found, "%s has a tuning", str(d, "id"));
        cr_assert_geq(pgn_gemm_tile_find(t.tile), 0, "%s", t.tile);
        json_t *now = get_json(&s, "/api/v1/devices", 200), *e;
        size_t k;
        json_array_foreach(json_object_get(now, "devices"), k, e) {
            if (strcmp(str(e, "id"), str(d, "id"))) continue;
            json_t *gemm = json_object_get(json_object_get(e, "profile"), "gemm");
            cr_assert_str_eq(str(gemm, "from"), t.too_slow ? "default" : "tuning");
            if (!t.too_slow) cr_assert_str_eq(str(gemm, "tile"), t.tile);
            if (!t.too_slow) /* the dashboard shows the tuned tile's figure */
                cr_assert_gt(json_number_value(json_object_get(gemm, "gflops")), 0, "%s", json_dumps(gemm, 0));
        }
        json_decref(now);
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
    json_decref(wait_succeeded(&s, id));
    stop_server(&s);
}

/* Two pocl devices of different speed (pthread on both cores, basic on one): after the first
 * start's calibration, "auto" puts a big job where the cost model expects it to finish first,
 * and a second one where it would finish first counting the first one's queued estimate; both
 * choices and their reasons are on the jobs. */
Test(bench_jobs, auto_placement_weighs_two_devices_and_their_queues) {
    const char *const env[] = {"POCL_DEVICES=pthread basic", NULL};
    server s = start_server_env(true, env);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    size_t i, n_opencl = 0;
    json_t *d;
    int64_t deadline = now_ms() + 120000;
    json_array_foreach(json_object_get(devs, "devices"), i, d) {
        n_opencl += strcmp(str(d, "type"), "host") != 0;
        char path[256];
        snprintf(path, sizeof path, "/api/v1/benchmarks?device=%s", str(d, "id"));
        /* calibrated, the host too (it is a candidate: the calibrations run one after another,
         * so it may be the last): every rate comes from measurements; a device's rows are stored
         * together */
        for (;;) {
            json_t *b = get_json(&s, path, 200);
            size_t rows = json_array_size(json_object_get(b, "rows"));
            json_decref(b);
            if (rows >= 1) break;
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
        /* the chosen device is the candidate with the shortest estimated finish */
        const char *best = NULL;
        double best_total = 0;
        size_t c, opencl = 0;
        json_t *cand;
        json_array_foreach(cands, c, cand) {
            opencl += strcmp(str(cand, "device"), "host") != 0;
            cr_assert(json_is_true(json_object_get(cand, "measured")), "%s: its rates are measured", str(cand, "device"));
            double total = json_number_value(json_object_get(cand, "total_seconds"));
            if (!best || total < best_total) {
                best = str(cand, "device");
                best_total = total;
            }
        }
        /* both OpenCL devices; the host too when the best of them has work queued (the backfill:
         * a loaded machine's calibration can make one device look twice as fast as the other,
         * and then the second job is best behind the first there) */
        char *cands_text = json_dumps(cands, JSON_COMPACT);
        cr_assert_eq(opencl, 2, "both OpenCL devices are weighed: %s", cands_text);
        cr_assert_leq(json_array_size(cands), 3, "%s", cands_text);
        free(cands_text);
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
    /* the measured devices differ, and the first job took the one that runs it faster (its FLOPs
     * at the device's training rate, its kernels at a step's launch cost there: both measured) */
    json_t *c0 = json_object_get(json_object_get(jobs[0], "estimate"), "candidates");
    double s0 = json_number_value(json_object_get(json_array_get(c0, 0), "seconds"));
    double s1 = json_number_value(json_object_get(json_array_get(c0, 1), "seconds"));
    cr_assert_neq(s0, s1, "two devices measured alike to the bit");
    const char *faster = str(json_array_get(c0, s0 < s1 ? 0 : 1), "device");
    cr_assert_str_eq(str(jobs[0], "device"), faster, "the big job went to the device that runs it faster (%g vs %g s)",
                     s0, s1);
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
