/* api_benchmarks.c: GET /api/v1/benchmarks, the benchmark export: the stored rows by suite,
 * device, job and time, as JSON or as one suite's CSV (Paragon-Py's columns for mlp-forward). */
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The benchmark export: enough rows for every case of every suite on a few devices over many
 * runs, and a cap that keeps one answer a few MB. */
#define BENCH_LIMIT_DEFAULT 1000
#define BENCH_LIMIT_MAX 10000

/* "mlp-forward, tensor-micro, ..." for messages. */
static void suite_names(char *out, size_t size) {
    out[0] = 0;
    for (const char *const *s = pgn_bench_suites; *s; s++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? ", " : "", *s);
}

/* GET /api/v1/benchmarks?suite=&device=&job=&since=&until=&format=json|csv&limit=: the newest
 * `limit` rows, oldest first, of one job and stored in [since, until) when those are given. CSV
 * is one suite's table (Paragon-Py's columns, as it writes them, for mlp-forward), so it needs a
 * suite; JSON may mix suites, and each row carries its job_id and created_at. */
enum MHD_Result api_get_benchmarks(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    const char *suite = api_query(req, "suite");
    const char *device = api_query(req, "device");
    const char *format = api_query(req, "format");
    const char *v, *why;
    pgd_bench_filter f = {.suite = suite, .device = device};
    char since[32], until[32];
    if ((v = api_query(req, "job")) && (!api_parse_count(v, &f.job) || f.job == 0))
        return api_bad_param(req, "job", v, "a job id (a positive integer)");
    if ((v = api_query(req, "since")) && (why = api_iso_param(v, since)))
        return api_bad_param(req, "since", v, why);
    if (v) f.since = since;
    if ((v = api_query(req, "until")) && (why = api_iso_param(v, until)))
        return api_bad_param(req, "until", v, why);
    if (v) f.until = until;
    if (f.since && f.until && strcmp(f.until, f.since) <= 0)
        return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "until",
                               "until: %s is not after since (%s): the window [since, until) is empty",
                               f.until, f.since);
    int64_t limit = BENCH_LIMIT_DEFAULT;
    if ((v = api_query(req, "limit")) && !api_parse_count(v, &limit))
        return api_bad_param(req, "limit", v, "a non-negative integer");
    if (limit > BENCH_LIMIT_MAX) limit = BENCH_LIMIT_MAX;
    bool csv = format && strcmp(format, "csv") == 0;
    if (format && !csv && strcmp(format, "json") != 0)
        return api_bad_param(req, "format", format, "a format (json or csv)");
    char names[256], want[300];
    suite_names(names, sizeof names);
    if (suite && !pgn_bench_suite_known(suite)) {
        snprintf(want, sizeof want, "a benchmark suite (%s)", names);
        return api_bad_param(req, "suite", suite, want);
    }
    if (csv && !suite)
        return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "suite",
                               "suite: format=csv needs a suite, one of: %s", names);

    json_t *rows;
    pgn_error err;
    pgd_job job;
    if (f.job && pgd_store_job_get(api->store, f.job, false, &job, &err) < 0) {
        if (err.code != PGN_E_NOT_FOUND) return api_internal_error(req, &err);
        return pgd_reply_error(req, PGN_E_NOT_FOUND, "job", "job: job %" PRId64 " does not exist", f.job);
    }
    if (f.job) pgd_job_release(&job);
    f.limit = limit;
    if (pgd_store_bench_query(api->store, &f, &rows, &err) < 0)
        return api_internal_error(req, &err);
    if (!csv) return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "rows", rows), NULL);

    char *text = pgn_bench_csv(suite, rows);
    json_decref(rows);
    if (!text) {
        pgn_error_set(&err, PGN_E_INTERNAL, "", "cannot render the %s rows as CSV", suite);
        return api_internal_error(req, &err);
    }
    char disposition[96];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s.csv\"", suite);
    const pgd_header h[] = {{MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition}, {NULL, NULL}};
    return pgd_reply_text(req, MHD_HTTP_OK, text, "text/csv; charset=utf-8", h);
}
