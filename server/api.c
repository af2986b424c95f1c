/* api.c: owns the HTTP API of paragond (routing, request validation, the JSON it answers) and
 * the server's assembly: data dir, device probe, store, scheduler and listener, started and
 * stopped in order. Requests reach handlers through http.c; jobs run in scheduler.c. */
#include "api.h"

#include "embedded.h"
#include "http.h"
#include "scheduler.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 500
/* The benchmark export: enough rows for every case of every suite on a few devices over many
 * runs, and a cap that keeps one answer a few MB. */
#define BENCH_LIMIT_DEFAULT 1000
#define BENCH_LIMIT_MAX 10000

struct pgd_server {
    pgd_store *store;
    pgd_scheduler *sched;
    pgd_http *http;
    char *data_dir;
    pgn_device_info *devices; /* the OpenCL devices probed at start: what "all" expands to */
    size_t n_devices;
    char *version_json; /* GET /api/v1/version never changes while we run */
    atomic_bool ready;
};

/* Job kinds that DESIGN.md defines; a list filter on anything else is a typo. */
static const char *const known_kinds[] = {"train", "inet", "bench"};

static const char healthz_json[] = "{\"status\":\"ok\"}";
static const char ready_json[] = "{\"ready\":true}";
static const char not_ready_json[] = "{\"ready\":false}";

/* ---- small helpers ---------------------------------------------------------------------- */

static bool is_get(const pgd_request *req) {
    return strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
}

static bool is_post(const pgd_request *req) { return strcmp(req->method, "POST") == 0; }

static enum MHD_Result not_allowed(const pgd_request *req, const char *allow) {
    pgn_error err;
    pgn_error_clear(&err);
    pgn_error_set(&err, "method_not_allowed", "", "%s is not allowed on %s (allowed: %s)",
                  req->method, req->path, allow);
    const pgd_header h[] = {{MHD_HTTP_HEADER_ALLOW, allow}, {NULL, NULL}};
    return pgd_reply_pgn_error(req, MHD_HTTP_METHOD_NOT_ALLOWED, &err, NULL, h);
}

static enum MHD_Result not_found(const pgd_request *req) {
    return pgd_reply_error(req, MHD_HTTP_NOT_FOUND, "not_found", NULL, "no such resource: %s %s",
                           req->method, req->path);
}

/* Store and other server-side failures: the only 500s. */
static enum MHD_Result internal_error(const pgd_request *req, const pgn_error *err) {
    fprintf(stderr, "paragond: %s %s: %s\n", req->method, req->path, err->message);
    return pgd_reply_pgn_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, err, NULL, NULL);
}

/* A non-negative decimal integer, digits only. */
static bool parse_count(const char *text, int64_t *out) {
    if (!*text) return false;
    int64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        if (v > (INT64_MAX - (*p - '0')) / 10) return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

/* A decimal integer with an optional '-'. */
static bool parse_int(const char *text, int64_t *out) {
    if (*text == '-') {
        int64_t v;
        if (!parse_count(text + 1, &v)) return false;
        *out = -v;
        return true;
    }
    return parse_count(text, out);
}

/* A query argument; an empty value ("?state=") counts as absent, as forms send it. */
static const char *query(const pgd_request *req, const char *name) {
    const char *v = pgd_request_query(req, name);
    return v && *v ? v : NULL;
}

/* "application/json", any case, optionally followed by parameters ("; charset=utf-8"). */
static bool is_json_media_type(const char *ct) {
    if (!ct) return false;
    while (*ct == ' ' || *ct == '\t') ct++;
    static const char want[] = "application/json";
    if (strncasecmp(ct, want, sizeof want - 1) != 0) return false;
    ct += sizeof want - 1;
    while (*ct == ' ' || *ct == '\t') ct++;
    return *ct == 0 || *ct == ';';
}

static const char *content_type_for(const char *name) {
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');
    if (dot)
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot, types[i].ext) == 0) return types[i].type;
    return "application/octet-stream";
}

/* ---- handlers --------------------------------------------------------------------------- */

static enum MHD_Result get_devices(pgd_server *srv, const pgd_request *req) {
    pgn_error err;
    json_t *devices = pgd_scheduler_devices_json(srv->sched, &err);
    if (!devices) return internal_error(req, &err);
    return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "devices", devices), NULL);
}

/* Queues spec once per device in targets[0..n) in one transaction; ids[i] is targets[i]'s job.
 * For a spec that asked for "all", each stored spec names its own device, so that it re-runs
 * (`paragon run`, or a restart) as it ran, and device_requested keeps "all". */
static int insert_jobs(pgd_server *srv, pgn_job_spec *spec, const pgn_device_info *targets,
                       const json_t *estimate, size_t n, int64_t *ids, pgn_error *err) {
    char requested[sizeof spec->device];
    snprintf(requested, sizeof requested, "%s", spec->device[0] ? spec->device : "auto");
    bool all = strcmp(requested, "all") == 0;
    pgd_new_job *jobs = calloc(n, sizeof *jobs);
    if (!jobs) {
        pgn_error_set(err, "internal", "", "out of memory");
        return -1;
    }
    int rc = 0;
    size_t made = 0;
    while (made < n) {
        if (all) snprintf(spec->device, sizeof spec->device, "%s", targets[made].id);
        json_t *spec_json = pgn_spec_to_json(spec);
        if (!spec_json) {
            pgn_error_set(err, "internal", "", "the engine could not serialise the spec");
            rc = -1;
            break;
        }
        jobs[made] = (pgd_new_job){.kind = pgn_job_kind_name(spec->kind),
                                   .name = spec->name,
                                   .device_requested = requested,
                                   .device = targets[made].id,
                                   .spec = spec_json,
                                   .estimate = estimate};
        made++;
    }
    if (rc == 0) rc = pgd_store_jobs_insert(srv->store, jobs, n, ids, err);
    for (size_t i = 0; i < made; i++) json_decref((json_t *)jobs[i].spec);
    free(jobs);
    return rc;
}

static enum MHD_Result post_job(pgd_server *srv, const pgd_request *req) {
    if (!is_json_media_type(pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        const char *ct = pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
        return pgd_reply_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                               NULL, "Content-Type must be application/json, not %s%s%s",
                               ct ? "'" : "", ct ? ct : "missing", ct ? "'" : "");
    }

    json_error_t jerr;
    json_t *root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        pgn_error err;
        pgn_error_clear(&err);
        pgn_error_set(&err, "invalid_json", "", "invalid JSON at line %d, column %d: %s",
                      jerr.line, jerr.column, jerr.text);
        json_t *where = json_pack("{s:i, s:i}", "line", jerr.line, "column", jerr.column);
        enum MHD_Result r = pgd_reply_pgn_error(req, MHD_HTTP_BAD_REQUEST, &err, where, NULL);
        json_decref(where);
        return r;
    }

    pgn_job_spec spec;
    pgn_error err;
    pgn_error_clear(&err);
    int rc = pgn_spec_parse(root, &spec, &err);
    json_decref(root);
    if (rc < 0) {
        if (!err.code[0]) snprintf(err.code, sizeof err.code, "invalid_spec");
        return pgd_reply_pgn_error(req, MHD_HTTP_BAD_REQUEST, &err, NULL, NULL);
    }

    /* "all" (bench jobs only: the parser refuses it elsewhere) is one job per OpenCL device. */
    bool all = strcmp(spec.device, "all") == 0;
    pgn_device_info placed;
    json_t *estimate = NULL;
    if (!all && pgd_scheduler_place_job(srv->sched, &spec, &placed, &estimate, &err) < 0) {
        pgn_spec_free(&spec);
        return pgd_reply_pgn_error(req, MHD_HTTP_BAD_REQUEST, &err, NULL, NULL);
    }
    const pgn_device_info *targets = all ? srv->devices : &placed;
    size_t n = all ? srv->n_devices : 1; /* >= 1: the server does not start without a device */
    int64_t *ids = calloc(n, sizeof *ids);
    rc = ids ? insert_jobs(srv, &spec, targets, estimate, n, ids, &err) : -1;
    json_decref(estimate);
    if (!ids) pgn_error_set(&err, "internal", "", "out of memory");
    pgn_spec_free(&spec);

    json_t *obj = NULL;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++) pgd_scheduler_notify(srv->sched, targets[i].id);
        rc = pgd_store_job_get(srv->store, ids[0], true, &obj, &err);
    }
    if (rc == 0 && all) {
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(list, json_integer(ids[i]));
        json_object_set_new(obj, "ids", list);
    }
    char location[64];
    if (rc == 0) snprintf(location, sizeof location, "/api/v1/jobs/%" PRId64, ids[0]);
    free(ids);
    if (rc < 0) return internal_error(req, &err);
    const pgd_header h[] = {{MHD_HTTP_HEADER_LOCATION, location}, {NULL, NULL}};
    return pgd_reply_json(req, MHD_HTTP_CREATED, obj, h);
}

static enum MHD_Result bad_param(const pgd_request *req, const char *name, const char *value,
                                 const char *want) {
    return pgd_reply_error(req, MHD_HTTP_BAD_REQUEST, "invalid_parameter", name,
                           "%s: '%s' is not %s", name, value, want);
}

static enum MHD_Result list_jobs(pgd_server *srv, const pgd_request *req) {
    pgd_job_filter f = {.limit = LIST_LIMIT_DEFAULT, .offset = 0};
    const char *v;
    if ((v = query(req, "limit")) && !parse_count(v, &f.limit))
        return bad_param(req, "limit", v, "a non-negative integer");
    if (f.limit > LIST_LIMIT_MAX) f.limit = LIST_LIMIT_MAX;
    if ((v = query(req, "offset")) && !parse_count(v, &f.offset))
        return bad_param(req, "offset", v, "a non-negative integer");
    pgd_job_state state;
    if ((f.state = query(req, "state")) && pgd_job_state_parse(f.state, &state) < 0)
        return bad_param(req, "state", f.state,
                         "a job state (queued, running, succeeded, failed, cancelled)");
    if ((f.kind = query(req, "kind"))) {
        bool known = false;
        for (size_t i = 0; i < sizeof known_kinds / sizeof known_kinds[0]; i++)
            known = known || strcmp(f.kind, known_kinds[i]) == 0;
        if (!known) return bad_param(req, "kind", f.kind, "a job kind (train, inet, bench)");
    }

    json_t *jobs;
    int64_t total;
    pgn_error err;
    if (pgd_store_jobs_list(srv->store, &f, &jobs, &total, &err) < 0)
        return internal_error(req, &err);
    return pgd_reply_json(req, MHD_HTTP_OK,
                          json_pack("{s:o, s:I, s:I, s:I}", "jobs", jobs, "total",
                                    (json_int_t)total, "limit", (json_int_t)f.limit, "offset",
                                    (json_int_t)f.offset),
                          NULL);
}

static enum MHD_Result job_missing(const pgd_request *req, const char *id_text) {
    return pgd_reply_error(req, MHD_HTTP_NOT_FOUND, "not_found", NULL, "job '%s' does not exist",
                           id_text);
}

static enum MHD_Result get_job(pgd_server *srv, const pgd_request *req, int64_t id) {
    json_t *job;
    pgn_error err;
    if (pgd_store_job_get(srv->store, id, true, &job, &err) < 0) {
        if (strcmp(err.code, "not_found") == 0)
            return pgd_reply_pgn_error(req, MHD_HTTP_NOT_FOUND, &err, NULL, NULL);
        return internal_error(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK, job, NULL);
}

static enum MHD_Result get_metrics(pgd_server *srv, const pgd_request *req, int64_t id) {
    const char *name = query(req, "name");
    const char *after = query(req, "after_step");
    int64_t after_step = 0;
    if (after && !parse_int(after, &after_step))
        return bad_param(req, "after_step", after, "an integer");
    json_t *metrics;
    pgn_error err;
    if (pgd_store_metrics_list(srv->store, id, name, after != NULL, after_step, &metrics, &err) <
        0) {
        if (strcmp(err.code, "not_found") == 0)
            return pgd_reply_pgn_error(req, MHD_HTTP_NOT_FOUND, &err, NULL, NULL);
        return internal_error(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK,
                          json_pack("{s:I, s:o}", "job_id", (json_int_t)id, "metrics", metrics),
                          NULL);
}

/* "mlp-forward, tensor-micro, ..." for messages. */
static void suite_names(char *out, size_t size) {
    out[0] = 0;
    for (const char *const *s = pgn_bench_suites; *s; s++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? ", " : "", *s);
}

/* Sends text (malloc'd; taken) with its media type and extra headers. */
static enum MHD_Result reply_text(const pgd_request *req, unsigned status, char *text,
                                  const char *content_type, const pgd_header *headers) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO; /* out of memory: MHD closes the connection */
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    for (const pgd_header *h = headers; h && h->name; h++)
        MHD_add_response_header(resp, h->name, h->value);
    enum MHD_Result r = MHD_queue_response(req->conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* GET /api/v1/benchmarks?suite=&device=&format=json|csv&limit=: the newest `limit` rows,
 * oldest first. CSV is one suite's table (Paragon-Py's columns for mlp-forward), so it needs a
 * suite; JSON may mix suites. */
static enum MHD_Result get_benchmarks(pgd_server *srv, const pgd_request *req) {
    const char *suite = query(req, "suite");
    const char *device = query(req, "device");
    const char *format = query(req, "format");
    const char *v;
    int64_t limit = BENCH_LIMIT_DEFAULT;
    if ((v = query(req, "limit")) && !parse_count(v, &limit))
        return bad_param(req, "limit", v, "a non-negative integer");
    if (limit > BENCH_LIMIT_MAX) limit = BENCH_LIMIT_MAX;
    bool csv = format && strcmp(format, "csv") == 0;
    if (format && !csv && strcmp(format, "json") != 0)
        return bad_param(req, "format", format, "a format (json or csv)");
    char names[256], want[300];
    suite_names(names, sizeof names);
    if (suite && !pgn_bench_suite_known(suite)) {
        snprintf(want, sizeof want, "a benchmark suite (%s)", names);
        return bad_param(req, "suite", suite, want);
    }
    if (csv && !suite)
        return pgd_reply_error(req, MHD_HTTP_BAD_REQUEST, "invalid_parameter", "suite",
                               "suite: format=csv needs a suite, one of: %s", names);

    json_t *rows;
    pgn_error err;
    if (pgd_store_bench_list(srv->store, suite, device, limit, &rows, &err) < 0)
        return internal_error(req, &err);
    if (!csv) return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "rows", rows), NULL);

    char *text = pgn_bench_csv(suite, rows);
    json_decref(rows);
    if (!text) {
        pgn_error_set(&err, "internal", "", "cannot render the %s rows as CSV", suite);
        return internal_error(req, &err);
    }
    char disposition[96];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s.csv\"", suite);
    const pgd_header h[] = {{MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition}, {NULL, NULL}};
    return reply_text(req, MHD_HTTP_OK, text, "text/csv; charset=utf-8", h);
}

/* ---- routing ---------------------------------------------------------------------------- */

/* rest is what follows "/api/v1/". */
static enum MHD_Result route_api_v1(pgd_server *srv, const pgd_request *req, const char *rest) {
    if (strcmp(rest, "version") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        return pgd_reply_static(req, MHD_HTTP_OK, srv->version_json, strlen(srv->version_json),
                                "application/json");
    }
    if (strcmp(rest, "devices") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        return get_devices(srv, req);
    }
    if (strcmp(rest, "jobs") == 0) {
        if (is_get(req)) return list_jobs(srv, req);
        if (is_post(req)) return post_job(srv, req);
        return not_allowed(req, "GET, HEAD, POST");
    }
    if (strcmp(rest, "benchmarks") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        return get_benchmarks(srv, req);
    }
    if (strncmp(rest, "jobs/", 5) == 0) {
        const char *id_text = rest + 5;
        const char *slash = strchr(id_text, '/');
        size_t id_len = slash ? (size_t)(slash - id_text) : strlen(id_text);
        const char *sub = slash ? slash : "";
        if (id_len == 0 || (*sub && strcmp(sub, "/metrics") != 0)) return not_found(req);
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        char text[32];
        int64_t id;
        if (id_len >= sizeof text) id_len = sizeof text - 1;
        memcpy(text, id_text, id_len);
        text[id_len] = 0;
        if (!parse_count(text, &id) || id == 0) return job_missing(req, text);
        return *sub ? get_metrics(srv, req, id) : get_job(srv, req, id);
    }
    return not_found(req);
}

/* "/" is the dashboard; "/<name>" any other embedded web file. */
static enum MHD_Result route_web(const pgd_request *req) {
    const char *name = req->path[1] ? req->path + 1 : "index.html";
    const pgn_embedded *file = NULL;
    if (req->path[0] == '/' && !strchr(name, '/')) file = pgn_embedded_find(pgn_web_sources, name);
    if (!file) return not_found(req);
    if (!is_get(req)) return not_allowed(req, "GET, HEAD");
    return pgd_reply_static(req, MHD_HTTP_OK, file->data, file->size, content_type_for(name));
}

static enum MHD_Result handle(void *ctx, const pgd_request *req) {
    pgd_server *srv = ctx;
    const char *path = req->path;
    if (strncmp(path, "/api/v1/", 8) == 0) return route_api_v1(srv, req, path + 8);
    if (strcmp(path, "/healthz") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        return pgd_reply_static(req, MHD_HTTP_OK, healthz_json, sizeof healthz_json - 1,
                                "application/json");
    }
    if (strcmp(path, "/readyz") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        if (atomic_load(&srv->ready))
            return pgd_reply_static(req, MHD_HTTP_OK, ready_json, sizeof ready_json - 1,
                                    "application/json");
        return pgd_reply_static(req, MHD_HTTP_SERVICE_UNAVAILABLE, not_ready_json,
                                sizeof not_ready_json - 1, "application/json");
    }
    if (strncmp(path, "/api/", 5) == 0 || strcmp(path, "/api") == 0) return not_found(req);
    return route_web(req);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

/* mkdir -p */
static int make_dirs(const char *path, pgn_error *err) {
    size_t len = strlen(path);
    if (len == 0) {
        pgn_error_set(err, "data_dir", "data_dir", "the data directory path is empty");
        return -1;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        pgn_error_set(err, "internal", "", "out of memory");
        return -1;
    }
    memcpy(copy, path, len + 1);
    int ret = 0;
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char saved = *p;
        *p = 0;
        if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
            pgn_error_set(err, "data_dir", "data_dir", "cannot create data directory '%s': %s",
                          copy, strerror(errno));
            ret = -1;
            break;
        }
        *p = saved;
        if (!saved) break;
    }
    struct stat st;
    if (ret == 0 && (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))) {
        pgn_error_set(err, "data_dir", "data_dir", "data directory '%s' is not a directory",
                      path);
        ret = -1;
    }
    free(copy);
    return ret;
}

static int probe_devices(pgn_device_info **devices, size_t *count, pgn_error *err) {
    pgn_error e;
    pgn_error_clear(&e);
    *devices = NULL;
    *count = 0;
    if (pgn_devices_list(devices, count, &e) < 0 || *count == 0) {
        free(*devices);
        *devices = NULL;
        pgn_error_set(err, "no_device", "",
                      "no OpenCL device found%s%s. paragond needs at least one OpenCL device: "
                      "install an OpenCL driver (on Debian/Ubuntu, 'apt install "
                      "pocl-opencl-icd' provides a CPU device) and check that "
                      "/etc/OpenCL/vendors (or $OCL_ICD_VENDORS) lists its .icd file",
                      e.message[0] ? ": " : "", e.message);
        return -1;
    }
    return 0;
}

int pgd_server_start(const pgd_config *cfg, pgd_server **out, pgn_error *err) {
    *out = NULL;
    pgd_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        pgn_error_set(err, "internal", "", "out of memory");
        return -1;
    }
    atomic_init(&srv->ready, false);
    pgn_device_info *devices = NULL;
    size_t count = 0;

    srv->data_dir = strdup(cfg->data_dir ? cfg->data_dir : PGD_DEFAULT_DATA_DIR);
    if (!srv->data_dir) {
        pgn_error_set(err, "internal", "", "out of memory");
        goto fail;
    }
    /* Devices first: a machine that cannot run anything gets no files either. */
    if (probe_devices(&devices, &count, err) < 0) goto fail;
    if (make_dirs(srv->data_dir, err) < 0) goto fail;

    json_t *version = json_pack("{s:s, s:o}", "version", PGN_VERSION, "opencl",
                                pgn_opencl_platforms_json());
    srv->version_json = version ? pgn_json_dumps(version) : NULL;
    json_decref(version);
    if (!srv->version_json) {
        pgn_error_set(err, "internal", "", "cannot describe the OpenCL platforms");
        goto fail;
    }

    if (pgd_store_open(cfg->db_path ? cfg->db_path : PGD_DEFAULT_DB, &srv->store, err) < 0)
        goto fail;
    int64_t requeued = 0;
    if (pgd_store_recover(srv->store, &requeued, err) < 0) goto fail;
    if (requeued)
        fprintf(stderr, "paragond: %lld job(s) left running by a previous run are queued again\n",
                (long long)requeued);
    if (pgd_scheduler_start(srv->store, devices, count, srv->data_dir, !cfg->no_calibration, &srv->sched, err) < 0)
        goto fail;
    srv->devices = devices;
    srv->n_devices = count;
    devices = NULL;

    if (pgd_http_start(cfg->host ? cfg->host : PGD_DEFAULT_HOST, cfg->port,
                       cfg->http_threads ? cfg->http_threads : PGD_DEFAULT_HTTP_THREADS, handle,
                       srv, &srv->http, err) < 0)
        goto fail;
    atomic_store(&srv->ready, true);
    *out = srv;
    return 0;
fail:
    free(devices);
    pgd_server_stop(srv);
    return -1;
}

uint16_t pgd_server_port(const pgd_server *srv) { return pgd_http_port(srv->http); }

void pgd_server_stop(pgd_server *srv) {
    if (!srv) return;
    atomic_store(&srv->ready, false);
    /* Requests in flight may still use the scheduler and store: the listener goes first. */
    pgd_http_quiesce(srv->http);
    pgd_http_stop(srv->http);
    pgd_scheduler_stop(srv->sched);
    pgd_store_close(srv->store);
    free(srv->version_json);
    free(srv->devices);
    free(srv->data_dir);
    free(srv);
}
