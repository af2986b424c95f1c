/* api.c: owns the HTTP API of paragond: the route table (api.h) and its matching, request
 * validation, and the JSON it answers. Requests reach it through http.c; jobs run in
 * scheduler.c; server.c assembles the parts. */
#include "api.h"

#include "auth.h"
#include "assets.h"
#include "datasets.h"
#include "events.h"
#include "http.h"
#include "lock.h"
#include "admission.h"
#include "metrics.h"
#include "prometheus.h"
#include "scheduler.h"
#include "store.h"
#include "views.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
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

struct pgd_api {
    pgd_store *store;
    pgd_scheduler *sched;
    pgd_events *events; /* job events: the SSE streams read them */
    pgd_auth *auth;
    const pgn_device_info *devices; /* the OpenCL devices probed at start: what "all" expands to */
    size_t n_devices;
    const char *data_dir;
    const char *version_json; /* GET /api/v1/version never changes while we run */
    const atomic_bool *ready;
    int64_t max_queued;
    /* Held from counting the queue to inserting, so concurrent submissions cannot together
     * pass max_queued. Placement and parsing happen outside it. */
    pthread_mutex_t submit_lock;
    /* Under submit_lock: an upper bound on the queued jobs, the store's count at
     * queued_read_ns plus every job inserted since (jobs leaving the queue only lower the
     * truth). Counting is a scan of the queue, so it runs only when the bound comes near the
     * limit or grows old. */
    int64_t queued_bound, queued_read_ns;
    pgd_datasets *datasets; /* <data-dir>/datasets/ through the API (datasets.c) */
};

/* How old the queued-jobs bound may get before it is counted again. */
#define QUEUED_RECOUNT_NS 100000000LL

/* When the queue is full: long enough for a worker to finish a few jobs. */
#define QUEUE_FULL_RETRY_AFTER_S "5"



/* ---- small helpers ---------------------------------------------------------------------- */

static bool is_get(const pgd_request *req) {
    return strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
}

static enum MHD_Result not_allowed(const pgd_request *req, const char *allow) {
    pgn_error err;
    pgn_error_clear(&err);
    pgn_error_set(&err, PGN_E_METHOD_NOT_ALLOWED, "", "%s is not allowed on %s (allowed: %s)",
                  req->method, req->path, allow);
    const pgd_header h[] = {{MHD_HTTP_HEADER_ALLOW, allow}, {NULL, NULL}};
    return pgd_reply_pgn_error(req, &err, NULL, h);
}

static enum MHD_Result not_found(const pgd_request *req) {
    return pgd_reply_error(req, PGN_E_NOT_FOUND, NULL, "no such resource: %s %s",
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
    if (err->code == PGN_E_STORE_UNAVAILABLE) {
        const pgd_header h[] = {{MHD_HTTP_HEADER_RETRY_AFTER, STORE_UNAVAILABLE_RETRY_AFTER_S},
                                {NULL, NULL}};
        return pgd_reply_pgn_error(req, err, NULL, h);
    }
    return pgd_reply_pgn_error(req, err, NULL, NULL);
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

static enum MHD_Result get_devices(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgn_error err;
    json_t *devices = pgd_scheduler_devices_json(api->sched, &err);
    if (!devices) return internal_error(req, &err);
    return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "devices", devices), NULL);
}

static enum MHD_Result get_utilisation(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    json_t *history = pgd_scheduler_utilisation_json(api->sched);
    if (!history) {
        pgn_error err;
        pgn_error_set(&err, PGN_E_OUT_OF_MEMORY, "", "devices' utilisation: out of memory");
        return internal_error(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK, history, NULL);
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

static void announce_queued(pgd_api *api, const pgd_new_job *jobs, size_t n, const int64_t *ids) {
    for (size_t i = 0; i < n; i++) {
        pgd_events_job_log_stored(api->events, ids[i], 1, "info", jobs[i].log_line, jobs[i].log_time);
        pgn_error err;
        if (pgd_events_job_changed(api->events, api->store, ids[i], NULL, &err) < 0)
            fprintf(stderr, "paragond: job %" PRId64 ": %s\n", ids[i], err.message);
    }
}

/* Queues spec once per device in targets[0..n) in one transaction; ids[i] is targets[i]'s job.
 * For a spec that asked for "all", each stored spec names its own device, so that it re-runs
 * (`paragon run`, or a restart) as it ran, and device_requested keeps "all". */
static int insert_jobs(pgd_api *api, pgn_job_spec *spec, const pgn_device_info *targets,
                       const json_t *estimate, const pgd_submission *sub, const json_t *tags, size_t n,
                       int64_t *ids, pgn_error *err) {
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
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    int rc = 0;
    size_t made = 0;
    while (made < n) {
        if (all) snprintf(spec->device, sizeof spec->device, "%s", targets[made].id);
        json_t *spec_json = pgn_spec_to_json(spec);
        if (!spec_json) {
            pgn_error_set(err, PGN_E_INTERNAL, "", "the engine could not serialise the spec");
            rc = -1;
            break;
        }
        placed_line(logs[made].line, sizeof logs[made].line, targets[made].id, requested, estimate);
        jobs[made] = (pgd_new_job){.kind = spec->kind,
                                   .name = spec->name,
                                   .device_requested = requested,
                                   .device = targets[made].id,
                                   .spec = spec_json,
                                   .estimate = estimate,
                                   .log_line = logs[made].line,
                                   .log_time = logs[made].time,
                                   .tags = tags};
        made++;
    }
    if (rc == 0) rc = pgd_store_jobs_insert_keyed(api->store, jobs, n, sub, ids, err);
    if (rc == 0) announce_queued(api, jobs, n, ids);
    for (size_t i = 0; i < made; i++) json_decref((json_t *)jobs[i].spec);
    free(jobs);
    free(logs);
    return rc;
}

/* An error reply with extra members (taken) merged into its error object. */
static enum MHD_Result reply_limit(const pgd_request *req, const pgn_error *err, json_t *extra,
                                   const pgd_header *headers) {
    enum MHD_Result r = pgd_reply_pgn_error(req, err, extra, headers);
    json_decref(extra);
    return r;
}

/* Jobs queued now, on every device. */
static int queued_jobs(pgd_api *api, int64_t *queued, pgn_error *err) {
    json_t *counts;
    *queued = 0;
    if (pgd_store_queued_counts(api->store, &counts, err) < 0) return -1;
    const char *device;
    json_t *n;
    json_object_foreach(counts, device, n) *queued += json_integer_value(n);
    json_decref(counts);
    return 0;
}

/* Whether n more jobs fit under max_queued: 0 yes, 1 no, -1 when the store cannot say.
 * *queued is the count judged by. The caller holds submit_lock until it has inserted. */
static int queue_room(pgd_api *api, size_t n, int64_t *queued, pgn_error *err) {
    int64_t now_ns = pgn_now_ns();
    if (api->queued_bound + (int64_t)n > api->max_queued ||
        now_ns - api->queued_read_ns > QUEUED_RECOUNT_NS) {
        int64_t counted;
        if (queued_jobs(api, &counted, err) < 0) return -1;
        api->queued_bound = counted;
        api->queued_read_ns = now_ns;
    }
    *queued = api->queued_bound;
    return *queued + (int64_t)n > api->max_queued ? 1 : 0;
}

/* The request's body as a JSON object: NULL after replying why it is not one (media type,
 * size and depth limits, syntax). */
static json_t *read_json_body(const pgd_request *req, enum MHD_Result *reply) {
    if (!is_json_media_type(pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        const char *ct = pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
        *reply = pgd_reply_error(req, PGN_E_UNSUPPORTED_MEDIA_TYPE, NULL,
                                 "Content-Type must be application/json, not %s%s%s", ct ? "'" : "",
                                 ct ? ct : "missing", ct ? "'" : "");
        return NULL;
    }
    pgn_error lerr;
    json_t *extra;
    if (pgd_admit_json(req->body, req->body_len, &lerr, &extra) < 0) {
        *reply = reply_limit(req, &lerr, extra, NULL);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        pgn_error err;
        pgn_error_clear(&err);
        pgn_error_set(&err, PGN_E_INVALID_JSON, "", "invalid JSON at line %d, column %d: %s",
                      jerr.line, jerr.column, jerr.text);
        json_t *where = json_pack("{s:i, s:i}", "line", jerr.line, "column", jerr.column);
        *reply = pgd_reply_pgn_error(req, &err, where, NULL);
        json_decref(where);
    }
    return root;
}

/* What a submission carries beside its spec (NULL: nothing): its idempotency key and tags. */
typedef struct job_extras {
    pgd_submission sub;
    const json_t *tags;
} job_extras;

/* Places, admits and queues a parsed spec: one job, or one per OpenCL device for "all".
 * 0 with *ids (malloc'd, *n of them); -1 after replying why not (*reply); -2 without a reply
 * when extras' key was taken meanwhile (a concurrent request with it won): nothing queued. */
static int queue_spec(pgd_api *api, const pgd_request *req, pgn_job_spec *spec, const job_extras *extras,
                      int64_t **ids_out, size_t *n_out, enum MHD_Result *reply) {
    pgn_error err, lerr;
    pgn_error_clear(&err);
    json_t *extra;
    /* "all" (bench jobs only: the parser refuses it elsewhere) is one job per OpenCL device. */
    bool all = strcmp(spec->device, "all") == 0;
    pgn_device_info placed;
    json_t *estimate = NULL;
    if (!all && pgd_scheduler_place_job(api->sched, spec, &placed, &estimate, &err) < 0) {
        *reply = pgd_reply_pgn_error(req, &err, NULL, NULL);
        return -1;
    }
    /* Parameters and device memory: a job that cannot fit is refused now, not failed later
     * (or worse, left to exhaust the device under the jobs beside it). */
    pgd_host_memory mem;
    if (pgd_host_memory_read(&mem) < 0) mem = (pgd_host_memory){0}; /* not judged */
    if (!all && pgd_admit_job(spec, &placed, &mem, &lerr, &extra) < 0) {
        json_decref(estimate);
        *reply = reply_limit(req, &lerr, extra, NULL);
        return -1;
    }
    const pgn_device_info *targets = all ? api->devices : &placed;
    size_t n = all ? api->n_devices : 1; /* >= 1: the server does not start without a device */
    int64_t *ids = calloc(n, sizeof *ids);
    int64_t queued = 0;
    pthread_mutex_lock(&api->submit_lock);
    int rc = ids ? queue_room(api, n, &queued, &err) : -1;
    bool full = rc == 1;
    if (rc == 0) {
        pgd_scheduler_admit_lock(api->sched);
        rc = insert_jobs(api, spec, targets, estimate, extras ? &extras->sub : NULL,
                         extras ? extras->tags : NULL, n, ids, &err);
        pgd_scheduler_admit_unlock(api->sched);
    }
    if (rc == 0) api->queued_bound += (int64_t)n;
    pthread_mutex_unlock(&api->submit_lock);
    json_decref(estimate);
    if (!ids) pgn_error_set(&err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
    if (full) {
        free(ids);
        pgn_error_clear(&lerr);
        pgn_error_set(&lerr, PGN_E_QUEUE_FULL, "",
                      "the queue is full: %" PRId64 " jobs are queued and the limit is %" PRId64
                      " (--max-queued); retry after a few finish",
                      queued, api->max_queued);
        extra = json_pack("{s:s, s:I, s:I}", "limit", "max_queued", "max",
                          (json_int_t)api->max_queued, "value", (json_int_t)queued);
        const pgd_header h[] = {{MHD_HTTP_HEADER_RETRY_AFTER, QUEUE_FULL_RETRY_AFTER_S},
                                {NULL, NULL}};
        *reply = reply_limit(req, &lerr, extra, h);
        return -1;
    }
    if (rc < 0 && err.code == PGN_E_CONFLICT && !strcmp(err.field, "submission_id")) {
        free(ids);
        return -2;
    }
    if (rc < 0) {
        free(ids);
        *reply = internal_error(req, &err);
        return -1;
    }
    for (size_t i = 0; i < n; i++) pgd_scheduler_notify(api->sched, targets[i].id);
    *ids_out = ids;
    *n_out = n;
    return 0;
}

/* ---- what a submission carries beside its spec: an idempotency key, tags -------------------- */

/* Whether key can be an idempotency key: 1 to PGD_SUBMISSION_ID_MAX printable ASCII characters
 * without spaces (what a header carries unchanged: it trims spaces and cannot hold the rest);
 * otherwise why not, into why. */
static bool key_valid(const char *key, size_t len, char *why, size_t size) {
    if (len == 0) {
        snprintf(why, size, "is empty");
        return false;
    }
    if (len > PGD_SUBMISSION_ID_MAX) {
        snprintf(why, size, "is %zu characters long; the most is %d", len, PGD_SUBMISSION_ID_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c < 0x21 || c > 0x7e) {
            char what[16];
            if (c == ' ') snprintf(what, sizeof what, "a space");
            else snprintf(what, sizeof what, "byte 0x%02X", c);
            snprintf(why, size, "has %s at character %zu; a key is printable ASCII without spaces (0x21-0x7E)",
                     what, i + 1);
            return false;
        }
    }
    return true;
}

/* x as an integer when it is a real holding a whole number (5.0, 5e0), else NULL. */
static json_t *as_integer(const json_t *x) {
    double d = json_is_real(x) ? json_real_value(x) : 0.5;
    return d == floor(d) && fabs(d) < 9007199254740992.0 ? json_integer((json_int_t)d) : NULL;
}

/* v with every whole number written as an integer, in place, so that a body's fingerprint follows
 * its values, not how they were spelt: a retry sending 5.0 for 5 was told from its first try.
 * Depth is bounded by the admission check (PGD_JSON_MAX_DEPTH). */
static json_t *same_numbers(json_t *v) {
    json_t *n;
    for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        if ((n = as_integer(json_object_iter_value(it)))) json_object_iter_set_new(v, it, n);
        else same_numbers(json_object_iter_value(it));
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
        if ((n = as_integer(json_array_get(v, i)))) json_array_set_new(v, i, n);
        else same_numbers(json_array_get(v, i));
    }
    return v;
}

/* The request's idempotency key (the Idempotency-Key header, or the body's submission_id; both
 * must then agree) into x->sub: key and, as body_sha256, the fingerprint of the body without
 * submission_id (its JSON with sorted keys, compact), so a retry with the same body is told from
 * another request under the same key. submission_id leaves root: the engine never sees it.
 * 0 (no key: x->sub.key NULL), or -1 after replying why the key cannot be one. */
static int take_submission(const pgd_request *req, json_t *root, job_extras *x, char key[PGD_SUBMISSION_ID_MAX + 1],
                           char sha[65], const char **field, enum MHD_Result *reply) {
    x->sub = (pgd_submission){0};
    const char *header = pgd_request_header(req, PGD_IDEMPOTENCY_HEADER);
    json_t *body_key = json_is_object(root) ? json_object_get(root, "submission_id") : NULL;
    char why[160];
    if (header && !key_valid(header, strlen(header), why, sizeof why)) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_PARAMETER, PGD_IDEMPOTENCY_HEADER, "%s: the header %s",
                                 PGD_IDEMPOTENCY_HEADER, why);
        return -1;
    }
    if (body_key && !json_is_string(body_key)) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "submission_id",
                                 "submission_id: must be a string (an idempotency key), not %s",
                                 json_is_null(body_key) ? "null" : json_is_number(body_key) ? "a number"
                                 : json_is_boolean(body_key) ? "a boolean" : json_is_array(body_key) ? "an array"
                                 : "an object");
        return -1;
    }
    const char *v = json_string_value(body_key);
    if (v && !key_valid(v, json_string_length(body_key), why, sizeof why)) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "submission_id", "submission_id: %s", why);
        return -1;
    }
    if (v && header && strcmp(v, header)) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "submission_id",
                                 "submission_id: '%s' differs from the %s header '%s'; send one of them, or the "
                                 "same key in both", v, PGD_IDEMPOTENCY_HEADER, header);
        return -1;
    }
    if (!header && !v) return 0;
    snprintf(key, PGD_SUBMISSION_ID_MAX + 1, "%s", header ? header : v);
    *field = header ? PGD_IDEMPOTENCY_HEADER : "submission_id";
    if (body_key) json_object_del(root, "submission_id");
    json_t *same = json_deep_copy(root);
    char *canon = same ? json_dumps(same_numbers(same), JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(same);
    if (!canon) {
        *reply = pgd_reply_error(req, PGN_E_OUT_OF_MEMORY, NULL, "out of memory");
        return -1;
    }
    pgn_sha256_hex_of(canon, strlen(canon), sha);
    free(canon);
    x->sub = (pgd_submission){.key = key, .body_sha256 = sha};
    return 0;
}

/* A tag key: what a filter (?tag=key:value) can name without quoting: no ':', nothing a JSON
 * path would need escaped. */
static bool tag_key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '/';
}

/* Whether k (len bytes) is a tag key; else why not, into why. */
static bool tag_key_valid(const char *k, size_t len, char *why, size_t size) {
    if (len == 0 || len > PGD_TAG_KEY_MAX) {
        snprintf(why, size, "a key is 1 to %d characters; '%.*s' is %zu", PGD_TAG_KEY_MAX, 80, k, len);
        return false;
    }
    for (size_t i = 0; i < len; i++)
        if (!tag_key_char(k[i])) {
            snprintf(why, size, "key '%.*s' has '%c' at character %zu; a key is letters, digits, '_', '-', '.' "
                     "and '/'", 80, k, (unsigned char)k[i] >= 0x20 && (unsigned char)k[i] < 0x7f ? k[i] : '?', i + 1);
            return false;
        }
    return true;
}

/* Whether v (len bytes of UTF-8, as jansson holds it) is a tag value; else why not. */
static bool tag_value_valid(const char *v, size_t len, char *why, size_t size) {
    if (len > PGD_TAG_VALUE_MAX) {
        snprintf(why, size, "the value is %zu bytes; the most is %d", len, PGD_TAG_VALUE_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
            snprintf(why, size, "the value has a control character (0x%02X) at byte %zu", (unsigned char)v[i], i + 1);
            return false;
        }
    return true;
}

/* The body's "tags" (taken out of root: the engine never sees them) into *tags, a new object,
 * or NULL when there are none; -1 after replying what is wrong with them. */
static int take_tags(const pgd_request *req, json_t *root, json_t **tags, enum MHD_Result *reply) {
    *tags = NULL;
    json_t *t = json_is_object(root) ? json_object_get(root, "tags") : NULL;
    if (!t) return 0;
    char why[200];
    if (!json_is_object(t)) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "tags",
                                 "tags: must be an object of strings ({\"team\":\"vision\"}), not %s",
                                 json_is_array(t) ? "an array" : json_is_string(t) ? "a string"
                                 : json_is_null(t) ? "null" : "a number or boolean");
        return -1;
    }
    if (json_object_size(t) > PGD_TAGS_MAX) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "tags", "tags: %zu tags; the most is %d",
                                 json_object_size(t), PGD_TAGS_MAX);
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(t, k, v) {
        if (!tag_key_valid(k, strlen(k), why, sizeof why)) {
            *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "tags", "tags: %s", why);
            return -1;
        }
        char field[8 + PGD_TAG_KEY_MAX];
        snprintf(field, sizeof field, "tags.%s", k);
        if (!json_is_string(v)) {
            *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, field, "%s: a tag's value must be a string", field);
            return -1;
        }
        if (!tag_value_valid(json_string_value(v), json_string_length(v), why, sizeof why)) {
            *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, field, "%s: %s", field, why);
            return -1;
        }
    }
    if (json_object_size(t) > 0) *tags = json_incref(t);
    json_object_del(root, "tags");
    return 0;
}

/* Answers a request whose key was used before: 200 with the job it made (and "ids" for "all")
 * when the bodies agree, else 409 naming the key and that job. 1 once answered; 0 when the key
 * was never used (nothing answered). */
static int answer_submission(pgd_api *api, const pgd_request *req, const job_extras *x, const char *field,
                             enum MHD_Result *reply) {
    bool found;
    char stored[65];
    int64_t first, *ids;
    size_t n;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgd_store_submission_get(api->store, x->sub.key, &found, stored, &first, &ids, &n, &err) < 0) {
        *reply = internal_error(req, &err);
        return 1;
    }
    if (!found) return 0;
    pgd_job job = {0};
    int rc = 0;
    if (strcmp(stored, x->sub.body_sha256) != 0 || n == 0) {
        pgn_error_set(&err, PGN_E_CONFLICT, field,
                      n ? "%s: '%s' was used for job %" PRId64 " with another body; a retry sends the same body, "
                          "another job needs another key"
                        : "%s: '%s' was used for job %" PRId64 ", which has been deleted since; another job "
                          "needs another key",
                      field, x->sub.key, first);
        json_t *extra = json_pack("{s:s, s:I}", "submission_id", x->sub.key, "job_id", (json_int_t)first);
        *reply = reply_limit(req, &err, extra, NULL);
    } else if ((rc = pgd_store_job_get(api->store, ids[0], true, &job, &err)) < 0) {
        /* deleted in between: 404 */
        *reply = err.code == PGN_E_NOT_FOUND ? pgd_reply_pgn_error(req, &err, NULL, NULL) : internal_error(req, &err);
    } else {
        json_t *obj = pgd_job_json(&job, true);
        if (!strcmp(job.device_requested, "all")) {
            json_t *list = json_array();
            for (size_t i = 0; i < n; i++) json_array_append_new(list, json_integer(ids[i]));
            json_object_set_new(obj, "ids", list);
        }
        char location[64];
        snprintf(location, sizeof location, "/api/v1/jobs/%" PRId64, ids[0]);
        const pgd_header h[] = {{MHD_HTTP_HEADER_LOCATION, location}, {NULL, NULL}};
        *reply = pgd_reply_json(req, MHD_HTTP_OK, obj, h);
    }
    pgd_job_release(&job);
    free(ids);
    return 1;
}

/* POST /api/v1/jobs: 201 with the new job, or, for a key used before, 200 with the job it made
 * (nothing is queued twice: the key is taken in the transaction that inserts the jobs). */
static enum MHD_Result post_job(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    enum MHD_Result reply;
    json_t *root = read_json_body(req, &reply);
    if (!root) return reply;
    job_extras x = {0};
    char key[PGD_SUBMISSION_ID_MAX + 1], sha[65];
    const char *key_field = "submission_id";
    json_t *tags = NULL;
    if (take_submission(req, root, &x, key, sha, &key_field, &reply) < 0 ||
        take_tags(req, root, &tags, &reply) < 0 ||
        (x.sub.key && answer_submission(api, req, &x, key_field, &reply))) {
        json_decref(root);
        json_decref(tags);
        return reply;
    }
    x.tags = tags;
    pgn_job_spec spec;
    pgn_error err;
    pgn_error_clear(&err);
    int rc = pgn_spec_parse(root, &spec, &err);
    json_decref(root);
    if (rc == 0 && spec.kind == PGN_JOB_GENERATE) {
        pgn_spec_free(&spec);
        pgn_error_set(&err, PGN_E_INVALID_SPEC, "kind",
                      "kind: a generate job is made by POST /api/v1/jobs/{id}/generate on the gpt job it reads");
        rc = -1;
    }
    if (rc < 0) {
        json_decref(tags);
        if (err.code == PGN_E_NONE) err.code = PGN_E_INVALID_SPEC;
        return pgd_reply_pgn_error(req, &err, NULL, NULL);
    }
    int64_t *ids;
    size_t n;
    bool all = strcmp(spec.device, "all") == 0;
    /* The datasets a train spec names exist, and stay until its job is queued: a delete or a
     * replace checks the queue under the same lock. Other specs do not wait for it. */
    bool names_data = spec.kind == PGN_JOB_TRAIN &&
                      (spec.train.data.source == PGN_DATA_IDX || spec.train.data.source == PGN_DATA_TEXT);
    if (names_data) pgd_datasets_lock(api->datasets);
    if (names_data && pgd_datasets_check_spec(api->datasets, &spec, &err) < 0) {
        reply = pgd_reply_pgn_error(req, &err, NULL, NULL);
        rc = -1;
    } else {
        rc = queue_spec(api, req, &spec, &x, &ids, &n, &reply);
    }
    if (names_data) pgd_datasets_unlock(api->datasets);
    pgn_spec_free(&spec);
    json_decref(tags);
    if (rc == -2 && !answer_submission(api, req, &x, key_field, &reply)) {
        pgn_error_set(&err, PGN_E_INTERNAL, "", "%s '%s' was taken, then not found", key_field, key);
        return internal_error(req, &err);
    }
    if (rc < 0) return reply;
    pgd_job first;
    json_t *obj = NULL;
    rc = pgd_store_job_get(api->store, ids[0], true, &first, &err);
    if (rc == 0) obj = pgd_job_json(&first, true);
    pgd_job_release(&first);
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
    return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, name,
                           "%s: '%s' is not %s", name, value, want);
}

/* ---- the job list's cursor --------------------------------------------------------------
 * A page's cursor is the id of its last job (the list is newest first, so the next page is the
 * jobs below it: a keyset, which jobs arriving meanwhile do not shift), sent as the 11
 * characters of its 8 bytes in base64url. Clients pass it back as it is; anything this does not
 * decode to a job id is a 400. */

#define CURSOR_CHARS 11

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void cursor_make(int64_t id, char out[CURSOR_CHARS + 1]) {
    uint64_t v = (uint64_t)id;
    /* 64 bits in 11 six-bit digits: the last digit holds the low 4 bits, shifted left by 2 */
    for (int i = 0; i < CURSOR_CHARS; i++) {
        int shift = 58 - 6 * i;
        unsigned digit = shift >= 0 ? (unsigned)(v >> shift) & 63u : (unsigned)(v << -shift) & 63u;
        out[i] = b64url[digit];
    }
    out[CURSOR_CHARS] = 0;
}

static bool cursor_parse(const char *text, int64_t *id) {
    if (strlen(text) != CURSOR_CHARS) return false;
    uint64_t v = 0;
    for (int i = 0; i < CURSOR_CHARS; i++) {
        const char *at = strchr(b64url, text[i]);
        if (!at || !text[i]) return false;
        unsigned digit = (unsigned)(at - b64url);
        int shift = 58 - 6 * i;
        if (shift >= 0) v |= (uint64_t)digit << shift;
        else if (digit & 3u) return false; /* not one this server made */
        else v |= (uint64_t)digit >> -shift;
    }
    if (v == 0 || v > (uint64_t)INT64_MAX) return false;
    *id = (int64_t)v;
    return true;
}

/* The list's ?tag=key:value filters into *out ([[key, value], ...], a new array; NULL for
 * none); -1 after replying which one is wrong. */
static int tag_filters(const pgd_request *req, json_t **out, enum MHD_Result *reply) {
    *out = NULL;
    const char *values[PGD_TAGS_MAX];
    size_t n = pgd_request_query_all(req, "tag", values, PGD_TAGS_MAX);
    if (n > PGD_TAGS_MAX) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "tag", "tag: %zu filters; the most is %d (a job has "
                                 "at most %d tags)", n, PGD_TAGS_MAX, PGD_TAGS_MAX);
        return -1;
    }
    json_t *list = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!*values[i]) continue; /* "?tag=" as a form sends it: no filter */
        const char *colon = strchr(values[i], ':');
        char why[200];
        bool ok = colon != NULL;
        if (!ok) snprintf(why, sizeof why, "a tag filter is key:value");
        else ok = tag_key_valid(values[i], (size_t)(colon - values[i]), why, sizeof why) &&
                  tag_value_valid(colon + 1, strlen(colon + 1), why, sizeof why);
        json_t *pair = ok ? json_pack("[s#, s]", values[i], (int)(colon - values[i]), colon + 1) : NULL;
        if (ok && !pair) snprintf(why, sizeof why, "the value is not UTF-8"); /* jansson takes only that */
        if (!pair) {
            json_decref(list);
            char *shown = pgn_text_visible(values[i]);
            *reply = pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "tag", "tag: '%s': %s", shown ? shown : "?", why);
            free(shown);
            return -1;
        }
        if (!list) list = json_array();
        json_array_append_new(list, pair);
    }
    *out = list;
    return 0;
}

/* GET /api/v1/jobs: a page of job rows (summaries, not results), newest first, by offset or by
 * cursor, with the cursor of the next page (null at the end). */
static enum MHD_Result list_jobs(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgd_job_filter f = {.limit = LIST_LIMIT_DEFAULT, .offset = 0};
    const char *v, *cursor = query(req, "cursor");
    if ((v = query(req, "limit")) && !parse_count(v, &f.limit))
        return bad_param(req, "limit", v, "a non-negative integer");
    if (f.limit > LIST_LIMIT_MAX) f.limit = LIST_LIMIT_MAX;
    if ((v = query(req, "offset")) && !parse_count(v, &f.offset))
        return bad_param(req, "offset", v, "a non-negative integer");
    if (cursor && !cursor_parse(cursor, &f.before_id))
        return bad_param(req, "cursor", cursor, "a cursor this server gave (a page's next_cursor, passed back as it is)");
    if (cursor && f.offset)
        return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "offset",
                               "offset: a page after a cursor starts at the cursor; leave offset out");
    if ((v = query(req, "state"))) {
        if (pgd_job_state_parse(v, &f.state) < 0)
            return bad_param(req, "state", v,
                             "a job state (queued, running, succeeded, failed, cancelled)");
        f.by_state = true;
    }
    if ((v = query(req, "kind"))) {
        if (pgn_job_kind_parse(v, &f.kind) < 0)
            return bad_param(req, "kind", v, "a job kind (train, inet, bench)");
        f.by_kind = true;
    }
    enum MHD_Result reply;
    json_t *tags;
    if (tag_filters(req, &tags, &reply) < 0) return reply;
    f.tags = tags;

    pgd_job *jobs;
    size_t n;
    int64_t total, limit = f.limit;
    f.limit = limit + 1; /* one more than shown says whether a next page exists */
    pgn_error err;
    int rc = pgd_store_jobs_list(api->store, &f, &jobs, &n, &total, &err);
    json_decref(tags);
    if (rc < 0) return internal_error(req, &err);
    bool more = n > (size_t)limit;
    json_t *list = json_array();
    for (size_t i = 0; i < n && i < (size_t)limit; i++) json_array_append_new(list, pgd_job_list_json(&jobs[i]));
    char next[CURSOR_CHARS + 1];
    if (more && limit > 0) cursor_make(jobs[limit - 1].id, next);
    pgd_jobs_free(jobs, n);
    return pgd_reply_json(req, MHD_HTTP_OK,
                          json_pack("{s:o, s:I, s:I, s:I, s:s?}", "jobs", list, "total", (json_int_t)total,
                                    "limit", (json_int_t)limit, "offset", (json_int_t)f.offset, "next_cursor",
                                    more && limit > 0 ? next : NULL),
                          NULL);
}

static enum MHD_Result job_missing(const pgd_request *req, const char *id_text) {
    return pgd_reply_error(req, PGN_E_NOT_FOUND, NULL, "job '%s' does not exist",
                           id_text);
}

static enum MHD_Result get_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgd_job job;
    pgn_error err;
    if (pgd_store_job_get(api->store, id, true, &job, &err) < 0) {
        if (err.code == PGN_E_NOT_FOUND)
            return pgd_reply_pgn_error(req, &err, NULL, NULL);
        return internal_error(req, &err);
    }
    json_t *o = pgd_job_json(&job, true);
    pgd_job_release(&job);
    return pgd_reply_json(req, MHD_HTTP_OK, o, NULL);
}

static enum MHD_Result get_metrics(pgd_api *api, const pgd_request *req, int64_t id) {
    const char *name = query(req, "name");
    const char *after = query(req, "after_step");
    int64_t after_step = 0;
    if (after && !parse_int(after, &after_step))
        return bad_param(req, "after_step", after, "an integer");
    json_t *metrics;
    pgn_error err;
    if (pgd_store_metrics_list(api->store, id, name, after != NULL, after_step, &metrics, &err) <
        0) {
        if (err.code == PGN_E_NOT_FOUND)
            return pgd_reply_pgn_error(req, &err, NULL, NULL);
        return internal_error(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK,
                          json_pack("{s:I, s:o}", "job_id", (json_int_t)id, "metrics", metrics),
                          NULL);
}

/* A store error about one job: a missing job is 404, a job in the wrong state 409. */
static enum MHD_Result job_error(const pgd_request *req, const pgn_error *err) {
    if (err->code == PGN_E_NOT_FOUND)
        return pgd_reply_pgn_error(req, err, NULL, NULL);
    if (err->code == PGN_E_CONFLICT)
        return pgd_reply_pgn_error(req, err, NULL, NULL);
    return internal_error(req, err);
}

/* POST /api/v1/jobs/{id}/cancel: 200 with the job when it is cancelled now (it was queued),
 * 202 when it stops at its next step boundary (it is running). */
static enum MHD_Result cancel_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgd_job job;
    pgn_error err;
    if (pgd_scheduler_cancel(api->sched, id, &job, &err) < 0) return job_error(req, &err);
    bool ended = job.state == PGD_JOB_CANCELLED;
    json_t *o = pgd_job_json(&job, true);
    pgd_job_release(&job);
    return pgd_reply_json(req, ended ? MHD_HTTP_OK : MHD_HTTP_ACCEPTED, o, NULL);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* DELETE /api/v1/jobs/{id}: a finished job's rows go in one transaction, then its files. Files
 * that cannot be removed are reported on stderr, not to the client: the job is gone either way
 * and a retry could only answer 404. */
static enum MHD_Result delete_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgn_error err;
    if (pgd_store_job_delete(api->store, id, &err) < 0) return job_error(req, &err);
    char dir[PGN_PATH_MAX * 2];
    pgd_scheduler_job_dir(api->sched, id, dir, sizeof dir);
    if (nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        fprintf(stderr, "paragond: job %lld is deleted but not all of %s could be removed: %s\n",
                (long long)id, dir, strerror(errno));
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_NO_CONTENT, resp);
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
static int open_job_file(const pgd_api *api, int64_t id, const char *name, struct stat *st) {
    char id_text[24];
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *const parts[] = {"jobs", id_text};
    int dir = open(api->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

/* Opens train job id's checkpoint.safetensors for a download, or answers why not (*reply): the
 * engine replaces it by rename, so the open file stays one whole checkpoint while it is read.
 * Only a file the job wrote is served: one older than the job (left by an earlier job with this
 * id under a database started afresh) is not, nor anything that is not a plain file. Returns the
 * fd (with *st), or -1 once *reply is queued. */
static int open_checkpoint(pgd_api *api, const pgd_request *req, int64_t id, struct stat *st,
                           enum MHD_Result *reply) {
    pgd_job job;
    pgn_error err;
    if (pgd_store_job_get(api->store, id, false, &job, &err) < 0) {
        *reply = job_error(req, &err);
        return -1;
    }
    const char *kind = pgn_job_kind_name(job.kind);
    bool train = job.kind == PGN_JOB_TRAIN;
    int fd = train ? open_job_file(api, id, PGN_CHECKPOINT_FILE, st) : -1;
    int open_errno = errno;
    int64_t created_ms;
    if (fd >= 0 && iso_ms(job.created_at, &created_ms) &&
        (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000 < created_ms) {
        close(fd);
        fd = -1;
        open_errno = ENOENT; /* not this job's */
    }
    bool planted = open_errno == ELOOP || open_errno == ENOTDIR || open_errno == EINVAL;
    if (fd < 0 && train && planted)
        fprintf(stderr, "paragond: job %lld: its checkpoint path is not a plain file (%s); not served\n",
                (long long)id, strerror(open_errno));
    if (fd < 0 && train && open_errno != ENOENT && !planted) {
        pgn_error_set(&err, PGN_E_INTERNAL, "", "cannot read the checkpoint of job %lld: %s",
                      (long long)id, strerror(open_errno));
        *reply = internal_error(req, &err);
    } else if (fd < 0 && !train) {
        *reply = pgd_reply_error(req, PGN_E_NO_CHECKPOINT, NULL,
                                 "job %lld has no checkpoint: it is a%s %s job, and only train jobs "
                                 "keep one",
                                 (long long)id, strchr("aeiou", kind[0]) ? "n" : "", kind);
    } else if (fd < 0) {
        *reply = pgd_reply_error(req, PGN_E_NO_CHECKPOINT, NULL,
                                 "job %lld has no checkpoint yet (it is %s): a train job writes one "
                                 "every checkpoint_every epochs, when it is stopped, and when it "
                                 "finishes",
                                 (long long)id, pgd_job_state_name(job.state));
    }
    pgd_job_release(&job);
    return fd;
}

/* A download of a response: application/octet-stream, attachment `filename`. */
static enum MHD_Result reply_download(const pgd_request *req, struct MHD_Response *resp,
                                      const char *filename) {
    char disposition[96];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", filename);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return r;
}

/* A checkpoint that fails the engine's checks: its error, told to the log and answered. */
static enum MHD_Result refuse_checkpoint(const pgd_request *req, int64_t id, const pgn_error *err) {
    fprintf(stderr, "paragond: job %lld: its checkpoint fails its checks: %s\n", (long long)id, err->message);
    return pgd_reply_pgn_error(req, err, NULL, NULL);
}

/* The checkpoint's name in messages: its place in the data dir. */
static void checkpoint_name(int64_t id, char *out, size_t size) {
    snprintf(out, size, "jobs/%lld/%s", (long long)id, PGN_CHECKPOINT_FILE);
}

/* GET /api/v1/jobs/{id}/checkpoint: the job's checkpoint.safetensors as it is, once it passes the
 * checks /weights makes (a corrupt file was served here while /weights refused it). */
static enum MHD_Result get_checkpoint(pgd_api *api, const pgd_request *req, int64_t id) {
    struct stat st;
    enum MHD_Result reply;
    int fd = open_checkpoint(api, req, id, &st, &reply);
    if (fd < 0) return reply;
    char name[64];
    checkpoint_name(id, name, sizeof name);
    pgn_error err;
    pgn_error_clear(&err);
    if (pgn_checkpoint_verify(name, fd, &err) < 0) {
        close(fd);
        return refuse_checkpoint(req, id, &err);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    char filename[48];
    snprintf(filename, sizeof filename, "job-%lld.safetensors", (long long)id);
    return reply_download(req, resp, filename); /* MHD closes fd when it is done with it */
}

/* GET /api/v1/jobs/{id}/weights: the checkpoint's weights alone, as PyTorch's modules load them
 * (pgn_weights_export). A checkpoint that fails its checks answers the engine's error, naming
 * the file by its place in the data dir. */
static enum MHD_Result get_weights(pgd_api *api, const pgd_request *req, int64_t id) {
    struct stat st;
    enum MHD_Result reply;
    int fd = open_checkpoint(api, req, id, &st, &reply);
    if (fd < 0) return reply;
    char name[64];
    checkpoint_name(id, name, sizeof name);
    unsigned char *bytes;
    size_t len;
    pgn_error err;
    pgn_error_clear(&err);
    int rc = pgn_weights_export(name, fd, &bytes, &len, &err);
    close(fd);
    if (rc < 0) return refuse_checkpoint(req, id, &err);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, bytes, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(bytes);
        return MHD_NO;
    }
    char filename[48];
    snprintf(filename, sizeof filename, "job-%lld-weights.safetensors", (long long)id);
    return reply_download(req, resp, filename);
}

/* "mlp-forward, tensor-micro, ..." for messages. */
/* POST /api/v1/jobs/{id}/generate: text from train job id's gpt checkpoint, as a generate job
 * that runs like any other (on the device the train job ran on, unless the body names one).
 * The body: prompt, max_tokens, temperature, top_k, seed, stream, device, name. With "stream"
 * the reply is the new job's events (a "token" event per character, then its final state with
 * the whole text); otherwise one JSON body, the ended job (its result: text, completion,
 * tokens_per_second). */
static enum MHD_Result post_generate(pgd_api *api, const pgd_request *req, int64_t id) {
    enum MHD_Result reply;
    json_t *root = read_json_body(req, &reply);
    if (!root) return reply;
    pgn_error err;
    pgn_error_clear(&err);
    pgd_job source;
    if (!json_is_object(root) || json_object_get(root, "kind") || json_object_get(root, "job")) {
        json_decref(root);
        return pgd_reply_error(req, PGN_E_INVALID_SPEC, "",
                               "the body is an object of prompt, max_tokens, temperature, top_k, seed, stream, "
                               "device and name (the job is the one in the path)");
    }
    if (pgd_store_job_get(api->store, id, true, &source, &err) < 0) {
        json_decref(root);
        return job_error(req, &err);
    }
    const char *model = json_string_value(json_object_get(json_object_get(source.spec, "model"), "type"));
    if (source.kind != PGN_JOB_TRAIN || !model || strcmp(model, "gpt")) {
        json_decref(root);
        pgd_job_release(&source);
        return pgd_reply_error(req, PGN_E_CONFLICT, "",
                               "job %" PRId64 " is not a gpt train job: only a gpt's checkpoint generates text", id);
    }
    char name[64];
    snprintf(name, sizeof name, "generate-%" PRId64, id);
    json_object_set_new(root, "kind", json_string("generate"));
    json_object_set_new(root, "job", json_integer((json_int_t)id));
    if (!json_object_get(root, "name")) json_object_set_new(root, "name", json_string(name));
    if (!json_object_get(root, "device")) json_object_set_new(root, "device", json_string(source.device));
    pgd_job_release(&source);
    pgn_job_spec spec;
    int rc = pgn_spec_parse(root, &spec, &err);
    json_decref(root);
    if (rc < 0) return pgd_reply_pgn_error(req, &err, NULL, NULL);
    /* only the job's own checkpoint, opened as the download is (no link, not an older job's) */
    char path[PGN_PATH_MAX * 2 + 32];
    snprintf(path, sizeof path, "%s/jobs/%" PRId64 "/%s", api->data_dir, id, PGN_CHECKPOINT_FILE);
    struct stat st;
    int fd = open_job_file(api, id, PGN_CHECKPOINT_FILE, &st);
    if (fd >= 0) close(fd);
    if (fd < 0) {
        pgn_spec_free(&spec);
        return pgd_reply_error(req, PGN_E_NO_CHECKPOINT, "",
                               "job %" PRId64 " has no checkpoint yet: a gpt job writes one every checkpoint_every "
                               "steps, when it is stopped, and when it finishes",
                               id);
    }
    if (pgn_generate_check(&spec.generate, path, NULL, &err) < 0) {
        pgn_spec_free(&spec);
        return pgd_reply_pgn_error(req, &err, NULL, NULL);
    }
    bool stream = spec.generate.stream;
    uint64_t since = pgd_events_next(api->events);
    int64_t *ids;
    size_t n;
    rc = queue_spec(api, req, &spec, NULL, &ids, &n, &reply);
    pgn_spec_free(&spec);
    if (rc < 0) return reply;
    int64_t gen = ids[0];
    free(ids);
    return pgd_events_reply_job_since(api->events, req, gen, since, !stream);
}

static void suite_names(char *out, size_t size) {
    out[0] = 0;
    for (const char *const *s = pgn_bench_suites; *s; s++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? ", " : "", *s);
}

/* Exactly n decimal digits at *p into *out, moving past them. */
static bool take_digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9') return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

/* An ISO 8601 time as the store writes created_at ("2025-01-31T12:00:00.000Z", UTC): a date
 * alone is its midnight in UTC; a time needs its zone (Z or +hh:mm/-hh:mm), seconds and their
 * fraction are optional (cut to milliseconds). NULL when it is one, else what is wrong. */
static const char *iso_param(const char *text, char out[32]) {
    static const char *const not_iso = "an ISO 8601 time (2025-01-31, 2025-01-31T12:00:00Z, "
                                       "2025-01-31T14:00:00.250+02:00)";
    struct tm tm = {0};
    int year, mon, day, hour = 0, min = 0, sec = 0, ms = 0, off = 0;
    const char *p = text;
    if (!take_digits(&p, 4, &year) || *p++ != '-' || !take_digits(&p, 2, &mon) || *p++ != '-' ||
        !take_digits(&p, 2, &day))
        return not_iso;
    if (*p) {
        if (*p != 'T' && *p != 't') return not_iso;
        p++;
        if (!take_digits(&p, 2, &hour) || *p++ != ':' || !take_digits(&p, 2, &min)) return not_iso;
        if (*p == ':' && (p++, !take_digits(&p, 2, &sec))) return not_iso;
        if (*p == '.' || *p == ',') {
            p++;
            int digits = 0;
            for (; *p >= '0' && *p <= '9'; p++, digits++)
                if (digits < 3) ms = ms * 10 + (*p - '0');
            if (!digits) return not_iso;
            for (; digits < 3; digits++) ms *= 10;
        }
        if (!*p) return "an ISO 8601 time with its zone: end it with Z (UTC) or an offset such as +02:00";
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om;
            if (!take_digits(&p, 2, &oh) || *p++ != ':' || !take_digits(&p, 2, &om) || oh > 23 || om > 59)
                return not_iso;
            off = sign * (oh * 60 + om) * 60;
        }
        if (*p) return not_iso;
    }
    if (hour > 23 || min > 59 || sec > 59) return "an ISO 8601 time: hours 00-23, minutes and seconds 00-59";
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    /* timegm normalises 2025-02-30 to March: a date that moved was not one. */
    if (mon < 1 || mon > 12 || day < 1 || tm.tm_mon != mon - 1 || tm.tm_mday != day)
        return "an ISO 8601 time: that day does not exist";
    t -= off;
    struct tm utc;
    gmtime_r(&t, &utc);
    char stamp[24];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    snprintf(out, 32, "%.19s.%03uZ", stamp, (unsigned)ms % 1000u); /* ms is 0..999 already */
    return NULL;
}

/* GET /api/v1/benchmarks?suite=&device=&job=&since=&until=&format=json|csv&limit=: the newest
 * `limit` rows, oldest first, of one job and stored in [since, until) when those are given. CSV
 * is one suite's table (Paragon-Py's columns, as it writes them, for mlp-forward), so it needs a
 * suite; JSON may mix suites, and each row carries its job_id and created_at. */
static enum MHD_Result get_benchmarks(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    const char *suite = query(req, "suite");
    const char *device = query(req, "device");
    const char *format = query(req, "format");
    const char *v, *why;
    pgd_bench_filter f = {.suite = suite, .device = device};
    char since[32], until[32];
    if ((v = query(req, "job")) && (!parse_count(v, &f.job) || f.job == 0))
        return bad_param(req, "job", v, "a job id (a positive integer)");
    if ((v = query(req, "since")) && (why = iso_param(v, since)))
        return bad_param(req, "since", v, why);
    if (v) f.since = since;
    if ((v = query(req, "until")) && (why = iso_param(v, until)))
        return bad_param(req, "until", v, why);
    if (v) f.until = until;
    if (f.since && f.until && strcmp(f.until, f.since) <= 0)
        return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "until",
                               "until: %s is not after since (%s): the window [since, until) is empty",
                               f.until, f.since);
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
        return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "suite",
                               "suite: format=csv needs a suite, one of: %s", names);

    json_t *rows;
    pgn_error err;
    pgd_job job;
    if (f.job && pgd_store_job_get(api->store, f.job, false, &job, &err) < 0) {
        if (err.code != PGN_E_NOT_FOUND) return internal_error(req, &err);
        return pgd_reply_error(req, PGN_E_NOT_FOUND, "job", "job: job %" PRId64 " does not exist", f.job);
    }
    if (f.job) pgd_job_release(&job);
    f.limit = limit;
    if (pgd_store_bench_query(api->store, &f, &rows, &err) < 0)
        return internal_error(req, &err);
    if (!csv) return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "rows", rows), NULL);

    char *text = pgn_bench_csv(suite, rows);
    json_decref(rows);
    if (!text) {
        pgn_error_set(&err, PGN_E_INTERNAL, "", "cannot render the %s rows as CSV", suite);
        return internal_error(req, &err);
    }
    char disposition[96];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s.csv\"", suite);
    const pgd_header h[] = {{MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition}, {NULL, NULL}};
    return pgd_reply_text(req, MHD_HTTP_OK, text, "text/csv; charset=utf-8", h);
}

/* GET /metrics: the Prometheus text exposition (metrics.c). */
static enum MHD_Result get_prometheus(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgn_error err;
    char *text = pgd_prometheus_render(api->store, api->sched, &err);
    if (!text) return internal_error(req, &err);
    return pgd_reply_text(req, MHD_HTTP_OK, text, PGD_METRICS_CONTENT_TYPE, NULL);
}

/* ---- small routes ----------------------------------------------------------------------- */

static const char healthz_json[] = "{\"status\":\"ok\"}";
static const char ready_json[] = "{\"ready\":true}";
static const char not_ready_json[] = "{\"ready\":false}";

static enum MHD_Result get_healthz(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)api, (void)id;
    return pgd_reply_static(req, MHD_HTTP_OK, healthz_json, sizeof healthz_json - 1,
                            "application/json");
}

static enum MHD_Result get_readyz(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    if (atomic_load(api->ready))
        return pgd_reply_static(req, MHD_HTTP_OK, ready_json, sizeof ready_json - 1,
                                "application/json");
    return pgd_reply_static(req, MHD_HTTP_SERVICE_UNAVAILABLE, not_ready_json,
                            sizeof not_ready_json - 1, "application/json");
}

static enum MHD_Result get_version(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_reply_static(req, MHD_HTTP_OK, api->version_json, strlen(api->version_json),
                            "application/json");
}

static enum MHD_Result get_events(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_events_reply_all(api->events, req);
}

static enum MHD_Result get_job_events(pgd_api *api, const pgd_request *req, int64_t id) {
    return pgd_events_reply_job(api->events, req, id);
}

static enum MHD_Result get_job_logs(pgd_api *api, const pgd_request *req, int64_t id) {
    const char *v = query(req, "after");
    int64_t after = 0;
    if (v && !parse_count(v, &after)) return bad_param(req, "after", v, "a non-negative integer");
    return pgd_events_reply_logs(api->store, req, id, after);
}

/* The browser's session cookie (auth.h); the request's token was checked on the way in. */
static enum MHD_Result post_session(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_auth_reply_session(api->auth, req, true);
}

static enum MHD_Result delete_session(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_auth_reply_session(api->auth, req, false);
}

/* GET /api/v1/openapi.json: server/openapi.json as built in (tests/test_api_conventions.c holds
 * it to the route table, both ways). Open: it says what the API is, nothing of its data. */
static enum MHD_Result get_openapi(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)api, (void)id;
    const pgn_embedded *doc = pgn_embedded_find(pgd_api_docs, PGD_OPENAPI_FILE);
    if (!doc) return not_found(req); /* not reached: meson embeds it */
    return pgd_reply_static(req, MHD_HTTP_OK, doc->data, doc->size, "application/json");
}

/* "/" is the dashboard; "/<name>" any other embedded web file. */
static enum MHD_Result get_web_file(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)api, (void)id;
    const char *name = req->path[1] ? req->path + 1 : "index.html";
    const pgn_embedded *file = pgn_embedded_find(pgd_web_sources, name);
    if (!file) return not_found(req); /* not reached: the route matched an embedded file */
    return pgd_reply_static(req, MHD_HTTP_OK, file->data, file->size, content_type_for(name));
}

/* ---- datasets (datasets.c) -------------------------------------------------------------- */

static enum MHD_Result list_datasets(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_datasets_list(api->datasets, req);
}

static enum MHD_Result put_dataset(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_datasets_put(api->datasets, req);
}

static enum MHD_Result get_dataset(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_datasets_get(api->datasets, req);
}

static enum MHD_Result delete_dataset(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    return pgd_datasets_delete(api->datasets, req);
}

/* ---- the route table -------------------------------------------------------------------- */

/* Matching order: the first route whose pattern matches a path decides which routes answer it
 * (by method: GET also answers HEAD; another method is a 405 listing them). Patterns' segments
 * are literal, or {id} (a non-empty segment; a job id, parsed after the method is known, so a
 * bad one is a 404 naming it) or {file} (an embedded web file); a final {name} takes the rest of
 * the path (a dataset's name, which its handler judges: "a/b" is a 400 naming the rule, not a
 * 404). The README's API table lists
 * exactly these (tests/test_api_routes.c). */
static const pgd_route routes[] = {
    {"GET", "/", get_web_file, PGD_ROUTE_OPEN},
    {"GET", "/healthz", get_healthz, PGD_ROUTE_OPEN},
    {"GET", "/readyz", get_readyz, PGD_ROUTE_OPEN},
    {"GET", "/metrics", get_prometheus, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/version", get_version, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/openapi.json", get_openapi, PGD_ROUTE_OPEN},
    {"GET", "/api/v1/devices", get_devices, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/devices/utilisation", get_utilisation, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs", list_jobs, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs", post_job, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}", get_job, PGD_ROUTE_TOKEN},
    {"DELETE", "/api/v1/jobs/{id}", delete_job, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/metrics", get_metrics, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs/{id}/cancel", cancel_job, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs/{id}/generate", post_generate, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/logs", get_job_logs, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/events", get_job_events, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/checkpoint", get_checkpoint, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/weights", get_weights, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/benchmarks", get_benchmarks, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/datasets", list_datasets, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/datasets/{name}", get_dataset, PGD_ROUTE_TOKEN},
    {"PUT", "/api/v1/datasets/{name}", put_dataset, PGD_ROUTE_TOKEN},
    {"DELETE", "/api/v1/datasets/{name}", delete_dataset, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/events", get_events, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/session", post_session, PGD_ROUTE_TOKEN},
    {"DELETE", "/api/v1/session", delete_session, PGD_ROUTE_TOKEN},
    /* The dashboard's files hold no data: anyone may load them, so that off loopback the page
     * comes up and asks for the token. */
    {"GET", "/{file}", get_web_file, PGD_ROUTE_OPEN},
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

const pgd_route *pgd_api_routes(size_t *n) {
    *n = N_ROUTES;
    return routes;
}

/* How a {file} segment is judged: as a route, it must name an embedded file; as a metrics
 * label, any single segment not starting with "api" takes it, so that label sets stay small
 * without looking files up. */
typedef enum { MATCH_ROUTE, MATCH_LABEL } match_mode;

/* Whether path matches pattern; *id_text and *id_len receive the {id} segment when it has one. */
static bool match(const char *pattern, const char *path, match_mode mode, const char **id_text,
                  size_t *id_len) {
    const char *p = pattern, *s = path;
    while (*p) {
        if (!strcmp(p, "{name}")) return *s != 0;
        if (*p == '{') {
            const char *close = strchr(p, '}');
            size_t len = strcspn(s, "/");
            if (!close || len == 0) return false;
            if (!strncmp(p, "{id}", 4)) {
                *id_text = s;
                *id_len = len;
            } else if (mode == MATCH_LABEL) {
                if (!strncmp(s, "api", 3)) return false;
            } else {
                char name[128];
                if (len >= sizeof name) return false;
                memcpy(name, s, len);
                name[len] = 0;
                if (!pgn_embedded_find(pgd_web_sources, name)) return false;
            }
            p = close + 1;
            s += len;
            continue;
        }
        if (*p++ != *s++) return false;
    }
    return *s == 0;
}

/* The first route whose pattern matches path, or -1. */
static int find_route(const char *path, match_mode mode, const char **id_text, size_t *id_len) {
    for (size_t i = 0; i < N_ROUTES; i++)
        if (match(routes[i].pattern, path, mode, id_text, id_len)) return (int)i;
    return -1;
}

/* Metric slots: 0 for no route, then one per distinct pattern in table order. */
static unsigned slot_of(int route) {
    if (route < 0) return 0;
    unsigned slot = 0;
    for (int i = 0; i <= route; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(routes[j].pattern, routes[i].pattern);
        if (!seen) slot++;
    }
    return slot;
}

unsigned pgd_api_route_slot(void *ctx, const char *path) {
    (void)ctx;
    const char *id_text;
    size_t id_len;
    return slot_of(find_route(path, MATCH_LABEL, &id_text, &id_len));
}

static bool method_is(const pgd_request *req, const char *method) {
    if (!strcmp(method, "GET")) return is_get(req);
    return !strcmp(req->method, method);
}

/* 405 with Allow naming every method the pattern's routes answer. */
static enum MHD_Result not_allowed_on(const pgd_request *req, const char *pattern) {
    char allow[64] = "";
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (strcmp(routes[i].pattern, pattern)) continue;
        const char *m = !strcmp(routes[i].method, "GET") ? "GET, HEAD" : routes[i].method;
        snprintf(allow + strlen(allow), sizeof allow - strlen(allow), "%s%s", allow[0] ? ", " : "", m);
    }
    return not_allowed(req, allow);
}

/* Uploads stream to a file (datasets.c); every other body is gathered by http.c. The token is
 * asked for now, from the headers: a stranger's upload is answered 401 before a byte is kept. */
pgd_sink *pgd_api_sink_open(void *ctx, const pgd_request *req) {
    pgd_api *api = ctx;
    const char *id_text = NULL;
    size_t id_len = 0;
    int found = find_route(req->path, MATCH_ROUTE, &id_text, &id_len);
    const pgd_route *upload = NULL;
    for (size_t i = 0; found >= 0 && i < N_ROUTES && !upload; i++)
        if (!strcmp(routes[i].pattern, routes[found].pattern) && method_is(req, routes[i].method) &&
            routes[i].handler == put_dataset)
            upload = &routes[i];
    if (!upload) return NULL;
    return pgd_datasets_sink_open(api->datasets, req, pgd_auth_refusal(api->auth, req) != NULL);
}

enum MHD_Result pgd_api_handle(void *ctx, const pgd_request *req) {
    pgd_api *api = ctx;
    const char *id_text = NULL;
    size_t id_len = 0;
    int found = find_route(req->path, MATCH_ROUTE, &id_text, &id_len);
    const pgd_route *route = NULL;
    for (size_t i = 0; found >= 0 && i < N_ROUTES && !route; i++)
        if (!strcmp(routes[i].pattern, routes[found].pattern) && method_is(req, routes[i].method))
            route = &routes[i];
    /* Anything but an open route asks auth.c first, unknown paths included: off loopback a
     * stranger learns nothing, not even which paths exist. */
    if (!route || route->access != PGD_ROUTE_OPEN) {
        const char *refused = pgd_auth_refusal(api->auth, req);
        if (refused) return pgd_auth_reply_unauthorized(req, refused);
    }
    if (found < 0) return not_found(req);
    if (!route) return not_allowed_on(req, routes[found].pattern);
    int64_t id = 0;
    if (id_text) {
        char text[32];
        size_t n = id_len < sizeof text ? id_len : sizeof text - 1;
        memcpy(text, id_text, n);
        text[n] = 0;
        if (!parse_count(text, &id) || id == 0) return job_missing(req, text);
    }
    return route->handler(api, req, id);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

int pgd_api_create(const pgd_api_deps *deps, pgd_api **out, pgn_error *err) {
    *out = NULL;
    pgd_api *api = calloc(1, sizeof *api);
    if (!api) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    api->store = deps->store;
    api->sched = deps->sched;
    api->events = deps->events;
    api->auth = deps->auth;
    api->devices = deps->devices;
    api->n_devices = deps->n_devices;
    api->data_dir = deps->data_dir;
    api->version_json = deps->version_json;
    api->ready = deps->ready;
    api->max_queued = deps->max_queued > 0 ? deps->max_queued : PGD_DEFAULT_MAX_QUEUED;
    api->queued_bound = INT64_MAX / 2; /* unknown: the first submission counts */
    pthread_mutex_init(&api->submit_lock, NULL);
    if (pgd_datasets_create(api->data_dir, api->store,
                            deps->max_dataset_bytes > 0 ? deps->max_dataset_bytes
                                                        : (int64_t)PGD_DEFAULT_MAX_DATASET_MB << 20,
                            &api->datasets, err) < 0) {
        pgd_api_destroy(api);
        return -1;
    }
    /* The request metrics label each request by its route's pattern. */
    const char *labels[N_ROUTES];
    size_t n = 0;
    for (size_t i = 0; i < N_ROUTES; i++)
        if (slot_of((int)i) > n) labels[n++] = routes[i].pattern;
    if (pgd_metrics_set_routes(labels, n, err) < 0) {
        pgd_api_destroy(api);
        return -1;
    }
    *out = api;
    return 0;
}

void pgd_api_destroy(pgd_api *api) {
    if (!api) return;
    pgd_datasets_destroy(api->datasets);
    pthread_mutex_destroy(&api->submit_lock);
    free(api);
}
