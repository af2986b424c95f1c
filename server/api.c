/* api.c: owns the HTTP API of paragond (routing, request validation, the JSON it answers) and
 * the server's assembly: data dir, device probe, store, scheduler and listener, started and
 * stopped in order. Requests reach handlers through http.c; jobs run in scheduler.c. */
#include "api.h"

#include "auth.h"
#include "embedded.h"
#include "events.h"
#include "http.h"
#include "lock.h"
#include "admission.h"
#include "metrics.h"
#include "scheduler.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 500
/* The benchmark export: enough rows for every case of every suite on a few devices over many
 * runs, and a cap that keeps one answer a few MB. */
#define BENCH_LIMIT_DEFAULT 1000
#define BENCH_LIMIT_MAX 10000

struct pgd_server {
    pgd_lock *lock; /* one paragond per database: taken first, released last */
    pgd_store *store;
    pgd_scheduler *sched;
    pgd_events *events; /* job events: the SSE streams read them */
    pgd_http *http;
    char *data_dir;
    pgn_device_info *devices; /* the OpenCL devices probed at start: what "all" expands to */
    size_t n_devices;
    char *version_json; /* GET /api/v1/version never changes while we run */
    atomic_bool ready;
    pgd_auth *auth;
    int64_t max_queued;
    /* Held from counting the queue to inserting, so concurrent submissions cannot together
     * pass max_queued. Placement and parsing happen outside it. */
    pthread_mutex_t submit_lock;
    /* Under submit_lock: an upper bound on the queued jobs, the store's count at
     * queued_read_ns plus every job inserted since (jobs leaving the queue only lower the
     * truth). Counting is a scan of the queue, so it runs only when the bound comes near the
     * limit or grows old. */
    int64_t queued_bound, queued_read_ns;
};

/* How old the queued-jobs bound may get before it is counted again. */
#define QUEUED_RECOUNT_NS 100000000LL

/* When the queue is full: long enough for a worker to finish a few jobs. */
#define QUEUE_FULL_RETRY_AFTER_S "5"

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

/* A store that cannot take writes just now (disk full): 503, come back later. */
#define STORE_UNAVAILABLE_RETRY_AFTER_S "5"

/* Store and other server-side failures: the only 500s, or 503 while the store refuses writes
 * for a reason that passes. */
static enum MHD_Result internal_error(const pgd_request *req, const pgn_error *err) {
    char *path = pgn_text_visible(req->path); /* a client's: %1b decodes to an escape */
    fprintf(stderr, "paragond: %s %s: %s\n", req->method, path ? path : "?", err->message);
    free(path);
    if (strcmp(err->code, PGD_STORE_UNAVAILABLE) == 0) {
        const pgd_header h[] = {{MHD_HTTP_HEADER_RETRY_AFTER, STORE_UNAVAILABLE_RETRY_AFTER_S},
                                {NULL, NULL}};
        return pgd_reply_pgn_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, err, NULL, h);
    }
    return pgd_reply_pgn_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, err, NULL, NULL);
}

static const char *str_of(const json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
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

/* Each new job's log starts with where it was placed and why (stored with the job); its
 * worker is woken only after that line and its queued state are published, so that "running"
 * follows them. */
static void placed_line(char *out, size_t size, const char *device, const char *requested, const json_t *estimate) {
    const char *reason = json_string_value(json_object_get(estimate, "reason"));
    if (reason)
        snprintf(out, size, "placed on %s (asked for %s; %s; estimate %.3g s)", device, requested, reason,
                 json_number_value(json_object_get(estimate, "seconds")));
    else
        snprintf(out, size, "placed on %s (asked for %s)", device, requested);
}

static void announce_queued(pgd_server *srv, const pgd_new_job *jobs, size_t n, const int64_t *ids) {
    for (size_t i = 0; i < n; i++) {
        pgd_events_job_log_stored(srv->events, ids[i], 1, "info", jobs[i].log_line, jobs[i].log_time);
        pgn_error err;
        if (pgd_events_job_changed(srv->events, srv->store, ids[i], NULL, &err) < 0)
            fprintf(stderr, "paragond: job %" PRId64 ": %s\n", ids[i], err.message);
    }
}

/* Queues spec once per device in targets[0..n) in one transaction; ids[i] is targets[i]'s job.
 * For a spec that asked for "all", each stored spec names its own device, so that it re-runs
 * (`paragon run`, or a restart) as it ran, and device_requested keeps "all". */
static int insert_jobs(pgd_server *srv, pgn_job_spec *spec, const pgn_device_info *targets,
                       const json_t *estimate, size_t n, int64_t *ids, pgn_error *err) {
    char requested[sizeof spec->device];
    snprintf(requested, sizeof requested, "%s", spec->device[0] ? spec->device : "auto");
    bool all = strcmp(requested, "all") == 0;
    /* each job: its record, its first log line and that line's stored time */
    typedef struct {
        char line[512], time[32];
    } first_log;
    pgd_new_job *jobs = calloc(n, sizeof *jobs);
    first_log *logs = calloc(n, sizeof *logs);
    if (!jobs || !logs) {
        free(jobs);
        free(logs);
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
        placed_line(logs[made].line, sizeof logs[made].line, targets[made].id, requested, estimate);
        jobs[made] = (pgd_new_job){.kind = pgn_job_kind_name(spec->kind),
                                   .name = spec->name,
                                   .device_requested = requested,
                                   .device = targets[made].id,
                                   .spec = spec_json,
                                   .estimate = estimate,
                                   .log_line = logs[made].line,
                                   .log_time = logs[made].time};
        made++;
    }
    if (rc == 0) rc = pgd_store_jobs_insert(srv->store, jobs, n, ids, err);
    if (rc == 0) announce_queued(srv, jobs, n, ids);
    for (size_t i = 0; i < made; i++) json_decref((json_t *)jobs[i].spec);
    free(jobs);
    free(logs);
    return rc;
}

/* An error reply with extra members (taken) merged into its error object. */
static enum MHD_Result reply_limit(const pgd_request *req, unsigned status, const pgn_error *err,
                                   json_t *extra, const pgd_header *headers) {
    enum MHD_Result r = pgd_reply_pgn_error(req, status, err, extra, headers);
    json_decref(extra);
    return r;
}

/* Jobs queued now, on every device. */
static int queued_jobs(pgd_server *srv, int64_t *queued, pgn_error *err) {
    json_t *counts;
    *queued = 0;
    if (pgd_store_queued_counts(srv->store, &counts, err) < 0) return -1;
    const char *device;
    json_t *n;
    json_object_foreach(counts, device, n) *queued += json_integer_value(n);
    json_decref(counts);
    return 0;
}

/* Whether n more jobs fit under max_queued: 0 yes, 1 no, -1 when the store cannot say.
 * *queued is the count judged by. The caller holds submit_lock until it has inserted. */
static int queue_room(pgd_server *srv, size_t n, int64_t *queued, pgn_error *err) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    if (srv->queued_bound + (int64_t)n > srv->max_queued ||
        now_ns - srv->queued_read_ns > QUEUED_RECOUNT_NS) {
        int64_t counted;
        if (queued_jobs(srv, &counted, err) < 0) return -1;
        srv->queued_bound = counted;
        srv->queued_read_ns = now_ns;
    }
    *queued = srv->queued_bound;
    return *queued + (int64_t)n > srv->max_queued ? 1 : 0;
}

static enum MHD_Result post_job(pgd_server *srv, const pgd_request *req) {
    if (!is_json_media_type(pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        const char *ct = pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
        return pgd_reply_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                               NULL, "Content-Type must be application/json, not %s%s%s",
                               ct ? "'" : "", ct ? ct : "missing", ct ? "'" : "");
    }

    pgn_error lerr;
    json_t *extra;
    if (pgd_admit_json(req->body, req->body_len, &lerr, &extra) < 0)
        return reply_limit(req, MHD_HTTP_BAD_REQUEST, &lerr, extra, NULL);

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
    /* Parameters and device memory: a job that cannot fit is refused now, not failed later
     * (or worse, left to exhaust the device under the jobs beside it). */
    pgd_host_memory mem;
    if (pgd_host_memory_read(&mem) < 0) mem = (pgd_host_memory){0}; /* not judged */
    if (!all && pgd_admit_job(&spec, &placed, &mem, &lerr, &extra) < 0) {
        pgn_spec_free(&spec);
        json_decref(estimate);
        return reply_limit(req, MHD_HTTP_BAD_REQUEST, &lerr, extra, NULL);
    }
    const pgn_device_info *targets = all ? srv->devices : &placed;
    size_t n = all ? srv->n_devices : 1; /* >= 1: the server does not start without a device */
    int64_t *ids = calloc(n, sizeof *ids);
    int64_t queued = 0;
    bool full = false;
    pthread_mutex_lock(&srv->submit_lock);
    rc = ids ? queue_room(srv, n, &queued, &err) : -1;
    full = rc == 1;
    if (rc == 0) {
        pgd_scheduler_admit_lock(srv->sched);
        rc = insert_jobs(srv, &spec, targets, estimate, n, ids, &err);
        pgd_scheduler_admit_unlock(srv->sched);
    }
    if (rc == 0) srv->queued_bound += (int64_t)n;
    pthread_mutex_unlock(&srv->submit_lock);
    json_decref(estimate);
    if (!ids) pgn_error_set(&err, "internal", "", "out of memory");
    pgn_spec_free(&spec);
    if (full) {
        free(ids);
        pgn_error_clear(&lerr);
        pgn_error_set(&lerr, "queue_full", "",
                      "the queue is full: %" PRId64 " jobs are queued and the limit is %" PRId64
                      " (--max-queued); retry after a few finish",
                      queued, srv->max_queued);
        extra = json_pack("{s:s, s:I, s:I}", "limit", "max_queued", "max",
                          (json_int_t)srv->max_queued, "value", (json_int_t)queued);
        const pgd_header h[] = {{MHD_HTTP_HEADER_RETRY_AFTER, QUEUE_FULL_RETRY_AFTER_S},
                                {NULL, NULL}};
        return reply_limit(req, MHD_HTTP_TOO_MANY_REQUESTS, &lerr, extra, h);
    }

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

/* A store error about one job: a missing job is 404, a job in the wrong state 409. */
static enum MHD_Result job_error(const pgd_request *req, const pgn_error *err) {
    if (strcmp(err->code, "not_found") == 0)
        return pgd_reply_pgn_error(req, MHD_HTTP_NOT_FOUND, err, NULL, NULL);
    if (strcmp(err->code, "conflict") == 0)
        return pgd_reply_pgn_error(req, MHD_HTTP_CONFLICT, err, NULL, NULL);
    return internal_error(req, err);
}

/* POST /api/v1/jobs/{id}/cancel: 200 with the job when it is cancelled now (it was queued),
 * 202 when it stops at its next step boundary (it is running). */
static enum MHD_Result cancel_job(pgd_server *srv, const pgd_request *req, int64_t id) {
    json_t *job;
    pgn_error err;
    if (pgd_scheduler_cancel(srv->sched, id, &job, &err) < 0) return job_error(req, &err);
    bool ended = strcmp(json_string_value(json_object_get(job, "state")), "cancelled") == 0;
    return pgd_reply_json(req, ended ? MHD_HTTP_OK : MHD_HTTP_ACCEPTED, job, NULL);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* DELETE /api/v1/jobs/{id}: a finished job's rows go in one transaction, then its files. Files
 * that cannot be removed are reported on stderr, not to the client: the job is gone either way
 * and a retry could only answer 404. */
static enum MHD_Result delete_job(pgd_server *srv, const pgd_request *req, int64_t id) {
    pgn_error err;
    if (pgd_store_job_delete(srv->store, id, &err) < 0) return job_error(req, &err);
    char dir[PGN_PATH_MAX * 2];
    pgd_scheduler_job_dir(srv->sched, id, dir, sizeof dir);
    if (nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        fprintf(stderr, "paragond: job %lld is deleted but not all of %s could be removed: %s\n",
                (long long)id, dir, strerror(errno));
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    enum MHD_Result r = MHD_queue_response(req->conn, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Milliseconds since the epoch of the store's "2024-05-01T12:00:00.123Z"; false if it is not. */
static bool iso_ms(const char *text, int64_t *ms) {
    struct tm tm = {0};
    int milli = 0, used = 0;
    if (!text || sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &tm.tm_year, &tm.tm_mon,
                        &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &milli, &used) != 7 ||
        text[used] != 0)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *ms = (int64_t)timegm(&tm) * 1000 + milli;
    return true;
}

/* Opens <data dir>/jobs/<id>/<name> for reading, never through a link: each directory below
 * the data dir is opened with O_NOFOLLOW, then the file, which must be a regular file (a link
 * planted there could otherwise serve /etc/passwd). Returns the fd with *st, or -1 with errno
 * (ENOENT for missing, ELOOP/ENOTDIR/EINVAL for something that is not a plain file there). */
static int open_job_file(const pgd_server *srv, int64_t id, const char *name, struct stat *st) {
    char id_text[24];
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *const parts[] = {"jobs", id_text};
    int dir = open(srv->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; i < 2 && dir >= 0; i++) {
        int next = openat(dir, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        close(dir);
        errno = saved;
        dir = next;
    }
    if (dir < 0) return -1;
    /* O_NONBLOCK: a FIFO planted there must not hang this thread. */
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int saved = errno;
    close(dir);
    if (fd >= 0 && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode))) {
        close(fd);
        fd = -1;
        saved = EINVAL;
    }
    errno = saved;
    return fd;
}

/* GET /api/v1/jobs/{id}/checkpoint: the job's checkpoint.safetensors as a download. The engine
 * replaces it by rename, so the open file stays one whole checkpoint while it is sent. Only a
 * file the job wrote is served: one older than the job (left by an earlier job with this id
 * under a database started afresh) is not, nor anything that is not a plain file. */
static enum MHD_Result get_checkpoint(pgd_server *srv, const pgd_request *req, int64_t id) {
    json_t *job;
    pgn_error err;
    if (pgd_store_job_get(srv->store, id, false, &job, &err) < 0) return job_error(req, &err);
    const char *kind = json_string_value(json_object_get(job, "kind"));
    bool train = kind && strcmp(kind, "train") == 0;
    struct stat st;
    int fd = train ? open_job_file(srv, id, PGN_CHECKPOINT_FILE, &st) : -1;
    int open_errno = errno;
    int64_t created_ms;
    if (fd >= 0 && iso_ms(str_of(job, "created_at"), &created_ms) &&
        (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 < created_ms) {
        close(fd);
        fd = -1;
        open_errno = ENOENT; /* not this job's */
    }
    bool planted = open_errno == ELOOP || open_errno == ENOTDIR || open_errno == EINVAL;
    if (fd < 0 && train && planted)
        fprintf(stderr, "paragond: job %lld: its checkpoint path is not a plain file (%s); not served\n",
                (long long)id, strerror(open_errno));
    enum MHD_Result r;
    if (fd < 0 && train && open_errno != ENOENT && !planted) {
        pgn_error_set(&err, "internal", "", "cannot read the checkpoint of job %lld: %s",
                      (long long)id, strerror(open_errno));
        r = internal_error(req, &err);
    } else if (fd < 0 && !train) {
        r = pgd_reply_error(req, MHD_HTTP_NOT_FOUND, "no_checkpoint", NULL,
                            "job %lld has no checkpoint: it is a%s %s job, and only train jobs "
                            "keep one",
                            (long long)id, kind && strchr("aeiou", kind[0]) ? "n" : "",
                            kind ? kind : "unknown");
    } else if (fd < 0) {
        r = pgd_reply_error(req, MHD_HTTP_NOT_FOUND, "no_checkpoint", NULL,
                            "job %lld has no checkpoint yet (it is %s): a train job writes one "
                            "every checkpoint_every epochs, when it is stopped, and when it "
                            "finishes",
                            (long long)id, str_of(job, "state"));
    } else {
        struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
        if (!resp) {
            close(fd);
            json_decref(job);
            return MHD_NO;
        }
        char disposition[80];
        snprintf(disposition, sizeof disposition, "attachment; filename=\"job-%lld.safetensors\"",
                 (long long)id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
        r = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp); /* MHD closes fd when it is done with the response */
    }
    json_decref(job);
    return r;
}

/* "mlp-forward, tensor-micro, ..." for messages. */
static void suite_names(char *out, size_t size) {
    out[0] = 0;
    for (const char *const *s = pgn_bench_suites; *s; s++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? ", " : "", *s);
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
    return pgd_reply_text(req, MHD_HTTP_OK, text, "text/csv; charset=utf-8", h);
}

/* GET /metrics: the Prometheus text exposition (metrics.c). */
static enum MHD_Result get_prometheus(pgd_server *srv, const pgd_request *req) {
    pgn_error err;
    char *text = pgd_metrics_render(srv->store, srv->sched, &err);
    if (!text) return internal_error(req, &err);
    return pgd_reply_text(req, MHD_HTTP_OK, text, PGD_METRICS_CONTENT_TYPE, NULL);
}

/* ---- routing ---------------------------------------------------------------------------- */

/* jobs/{id}/logs and jobs/{id}/events; id_text runs up to tail ("/logs" or "/events"). */
static enum MHD_Result route_job_log_events(pgd_server *srv, const pgd_request *req,
                                            const char *id_text, const char *tail) {
    if (!is_get(req)) return not_allowed(req, "GET, HEAD");
    char text[32];
    size_t id_len = (size_t)(tail - id_text);
    if (id_len >= sizeof text) id_len = sizeof text - 1;
    memcpy(text, id_text, id_len);
    text[id_len] = 0;
    int64_t id;
    if (!parse_count(text, &id) || id == 0) return job_missing(req, text);
    if (strcmp(tail, "/events") == 0) return pgd_events_reply_job(srv->events, req, id);
    const char *v = query(req, "after");
    int64_t after = 0;
    if (v && !parse_count(v, &after)) return bad_param(req, "after", v, "a non-negative integer");
    return pgd_events_reply_logs(srv->store, req, id, after);
}

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
    if (strcmp(rest, "events") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        return pgd_events_reply_all(srv->events, req);
    }
    if (strcmp(rest, "session") == 0) { /* the browser's cookie (auth.h); the token was checked */
        if (is_post(req)) return pgd_auth_reply_session(srv->auth, req, true);
        if (strcmp(req->method, "DELETE") == 0) return pgd_auth_reply_session(srv->auth, req, false);
        return not_allowed(req, "POST, DELETE");
    }
    const char *tail = strncmp(rest, "jobs/", 5) == 0 ? strchr(rest + 5, '/') : NULL;
    if (tail && tail > rest + 5 && (strcmp(tail, "/logs") == 0 || strcmp(tail, "/events") == 0))
        return route_job_log_events(srv, req, rest + 5, tail);
    if (strncmp(rest, "jobs/", 5) == 0) {
        const char *id_text = rest + 5;
        const char *slash = strchr(id_text, '/');
        size_t id_len = slash ? (size_t)(slash - id_text) : strlen(id_text);
        const char *sub = slash ? slash : "";
        bool cancel = strcmp(sub, "/cancel") == 0, checkpoint = strcmp(sub, "/checkpoint") == 0;
        if (id_len == 0 || (*sub && strcmp(sub, "/metrics") != 0 && !cancel && !checkpoint))
            return not_found(req);
        if (cancel && !is_post(req)) return not_allowed(req, "POST");
        bool delete = !*sub && strcmp(req->method, "DELETE") == 0;
        if (!cancel && !delete && !is_get(req))
            return not_allowed(req, *sub ? "GET, HEAD" : "GET, HEAD, DELETE");
        char text[32];
        int64_t id;
        if (id_len >= sizeof text) id_len = sizeof text - 1;
        memcpy(text, id_text, id_len);
        text[id_len] = 0;
        if (!parse_count(text, &id) || id == 0) return job_missing(req, text);
        if (cancel) return cancel_job(srv, req, id);
        if (delete) return delete_job(srv, req, id);
        if (checkpoint) return get_checkpoint(srv, req, id);
        return *sub ? get_metrics(srv, req, id) : get_job(srv, req, id);
    }
    return not_found(req);
}

/* "/" is the dashboard; "/<name>" any other embedded web file; NULL for any other path. */
static const pgn_embedded *web_file(const char *path, const char **name) {
    *name = path[1] ? path + 1 : "index.html";
    if (path[0] != '/' || strchr(*name, '/')) return NULL;
    return pgn_embedded_find(pgn_web_sources, *name);
}

static enum MHD_Result route_web(const pgd_request *req) {
    const char *name;
    const pgn_embedded *file = web_file(req->path, &name);
    if (!file) return not_found(req);
    if (!is_get(req)) return not_allowed(req, "GET, HEAD");
    return pgd_reply_static(req, MHD_HTTP_OK, file->data, file->size, content_type_for(name));
}

static enum MHD_Result handle(void *ctx, const pgd_request *req) {
    pgd_server *srv = ctx;
    const char *path = req->path;
    /* The dashboard's files hold no data: anyone may load them, so that off loopback the page
     * comes up and asks for the token. */
    const char *name;
    if (web_file(path, &name)) return route_web(req);
    const char *refused = pgd_auth_refusal(srv->auth, req);
    if (refused) return pgd_auth_reply_unauthorized(req, refused);
    if (strncmp(path, "/api/v1/", 8) == 0) return route_api_v1(srv, req, path + 8);
    if (strcmp(path, "/metrics") == 0) {
        if (!is_get(req)) return not_allowed(req, "GET, HEAD");
        return get_prometheus(srv, req);
    }
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

/* A spec's dataset paths reach anything under datasets: the token must not be there. */
static int token_readable_by_jobs(const char *token, const char *datasets, pgn_error *err) {
    char t[PATH_MAX], d[PATH_MAX];
    if (!realpath(token, t) || !realpath(datasets, d)) return 0; /* both exist: auth made one */
    size_t n = strlen(d);
    if (strncmp(t, d, n) != 0 || t[n] != '/') return 0;
    pgn_error_set(err, "auth", "token_file",
                  "--token-file %s is inside %s, where job specs name their datasets: any job "
                  "could read it; keep the token elsewhere",
                  token, datasets);
    return -1;
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
    pthread_mutex_init(&srv->submit_lock, NULL);
    srv->max_queued = cfg->max_queued > 0 ? cfg->max_queued : PGD_DEFAULT_MAX_QUEUED;
    srv->queued_bound = INT64_MAX / 2; /* unknown: the first submission counts */
    pgn_device_info *devices = NULL;
    size_t count = 0;

    /* Before anything is created, read or recovered: a second paragond on this database must
     * leave everything as it found it. */
    if (pgd_lock_take(cfg->db_path ? cfg->db_path : PGD_DEFAULT_DB, &srv->lock, err) < 0)
        goto fail;
    srv->data_dir = strdup(cfg->data_dir ? cfg->data_dir : PGD_DEFAULT_DATA_DIR);
    if (!srv->data_dir) {
        pgn_error_set(err, "internal", "", "out of memory");
        goto fail;
    }
    /* Devices first: a machine that cannot run anything gets no files either. */
    if (probe_devices(&devices, &count, err) < 0) goto fail;
    char datasets[PGN_PATH_MAX * 2];
    snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR, srv->data_dir);
    if (make_dirs(srv->data_dir, err) < 0 || make_dirs(datasets, err) < 0) goto fail;
    if (pgd_auth_open(cfg->token_file, srv->data_dir, cfg->host ? cfg->host : PGD_DEFAULT_HOST,
                      &srv->auth, err) < 0)
        goto fail;
    if (token_readable_by_jobs(pgd_auth_token_path(srv->auth), datasets, err)) goto fail;
    fprintf(stderr, "paragond: API token in %s\n", pgd_auth_token_path(srv->auth));

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
    int64_t max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts : PGD_DEFAULT_MAX_ATTEMPTS;
    pgd_recovery rec;
    if (pgd_store_recover(srv->store, max_attempts, &rec, err) < 0) goto fail;
    if (rec.requeued)
        fprintf(stderr, "paragond: %lld job(s) left running by a previous run are queued again\n",
                (long long)rec.requeued);
    if (rec.crashed)
        fprintf(stderr,
                "paragond: %lld job(s) left running by a previous run failed as crashed: paragond "
                "ended while each ran, %lld times (--max-attempts)\n",
                (long long)rec.crashed, (long long)max_attempts);
    if (pgd_events_create(srv->store,
                          (size_t)(cfg->max_streams > 0 ? cfg->max_streams : PGD_DEFAULT_MAX_STREAMS),
                          &srv->events, err) < 0)
        goto fail;
    if (pgd_scheduler_start(srv->store, srv->events, devices, count, srv->data_dir,
                            !cfg->no_calibration, &srv->sched, err) < 0)
        goto fail;
    srv->devices = devices;
    srv->n_devices = count;
    devices = NULL;

    pgd_http_limits limits = {
        .max_connections = (unsigned)(cfg->max_connections > 0 ? cfg->max_connections
                                                               : PGD_DEFAULT_MAX_CONNECTIONS),
        .max_connections_per_ip =
            (unsigned)(cfg->max_connections_per_ip > 0 ? cfg->max_connections_per_ip
                                                       : PGD_DEFAULT_MAX_CONNECTIONS_PER_IP),
        .header_timeout_s = (unsigned)(cfg->header_timeout_s > 0 ? cfg->header_timeout_s
                                                                 : PGD_DEFAULT_HEADER_TIMEOUT_S),
    };
    if (pgd_http_start(cfg->host ? cfg->host : PGD_DEFAULT_HOST, cfg->port,
                       cfg->http_threads ? cfg->http_threads : PGD_DEFAULT_HTTP_THREADS, &limits,
                       handle, srv, &srv->http, err) < 0)
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

const char *pgd_server_token_path(const pgd_server *srv) { return pgd_auth_token_path(srv->auth); }

void pgd_server_stop(pgd_server *srv) {
    if (!srv) return;
    atomic_store(&srv->ready, false);
    /* Requests in flight may still use the scheduler and store: the listener goes first. */
    pgd_http_quiesce(srv->http);
    /* Event streams end first: the daemon must not stop with a parked connection. */
    pgd_events_close(srv->events);
    pgd_http_stop(srv->http);
    pgd_scheduler_stop(srv->sched);
    pgd_events_destroy(srv->events); /* the workers publish until they stop */
    pgd_store_close(srv->store);
    pgd_auth_close(srv->auth);
    pthread_mutex_destroy(&srv->submit_lock);
    free(srv->version_json);
    free(srv->devices);
    free(srv->data_dir);
    pgd_lock_release(srv->lock);
    free(srv);
}
