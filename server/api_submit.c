/* api_submit.c: POST /api/v1/jobs: what a submission carries beside its spec (an idempotency
 * key, tags), taken out of the body before the engine parses it; then placement, admission, the
 * queue's limit and the insert, which api_post_generate shares; and the answer to a retry. */
#include "api_internal.h"

#include "admission.h"
#include "host_load.h"
#include "views.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How old the queued-jobs bound may get before it is counted again. */
#define QUEUED_RECOUNT_NS 100000000LL

/* When the queue is full: long enough for a worker to finish a few jobs. */
#define QUEUE_FULL_RETRY_AFTER_S "5"

/* Each new job's log starts with where it was placed and why (stored with the job); its
 * worker is woken only after that line and its queued state are published, so that "running"
 * follows them. */
static void placed_line(char *out, size_t size, const char *device, const char *requested,
                        const pgd_placement *placement, const char *nodes) {
    if (nodes && nodes[0]) { /* a cluster's: a kind any node's device takes, or another node's */
        char estimate[48] = "";
        if (placement && placement->n > 0)
            snprintf(estimate, sizeof estimate, "; estimate %.3g s here",
                     placement->candidates[placement->chosen].estimate.seconds);
        if (pgd_device_kind_named(device))
            snprintf(out, size, "queued for any node's %s device (%s%s)", device, nodes, estimate);
        else
            snprintf(out, size, "placed on %s (asked for by name; %s%s)", device, nodes, estimate);
    } else if (placement && placement->n > 0)
        snprintf(out, size, "placed on %s (asked for %s; %s; estimate %.3g s)", device, requested,
                 pgd_placement_reason_text(placement->reason),
                 placement->candidates[placement->chosen].estimate.seconds);
    else
        snprintf(out, size, "placed on %s (asked for %s)", device, requested);
    /* the cost model's rates are a quiet machine's: say when it is not */
    int cpus;
    double other = pgd_host_other_cpus(&cpus);
    size_t len = strlen(out);
    if (other >= PGD_HOST_LOADED_CPUS && len < size)
        snprintf(out + len, size - len,
                 "; the machine is busy with other work (%.1f of its %d CPUs over the last seconds): "
                 "runs here may take longer than estimated",
                 other, cpus);
}

/* Publishes each new job's first log line and state, as its insert read it back; the first job
 * is the submission's answer too (*first takes it over). */
static void announce_queued(pgd_api *api, const pgd_new_job *jobs, size_t n, const int64_t *ids, pgd_job *first) {
    for (size_t i = 0; i < n; i++) {
        pgd_events_job_log_stored(api->events, ids[i], 1, "info", jobs[i].log_line, jobs[i].log_time);
        pgd_events_job_queued(api->events, jobs[i].stored);
    }
    if (first) {
        *first = *jobs[0].stored;
        *jobs[0].stored = (pgd_job){0};
        first->spec = json_incref((json_t *)jobs[0].spec);
    }
}

/* Queues spec once per device in targets[0..n) in one transaction; ids[i] is targets[i]'s job.
 * For a spec that asked for "all", each stored spec names its own device, so that it re-runs
 * (`paragon run`, or a restart) as it ran, and device_requested keeps "all". */
static int insert_jobs(pgd_api *api, pgn_job_spec *spec, const pgn_device_info *targets,
                       const pgd_placement *placement, const char *nodes, const pgd_submission *sub,
                       const json_t *tags, int64_t priority, size_t n, int64_t *ids, pgd_job *first,
                       pgn_error *err) {
    char requested[sizeof spec->device];
    snprintf(requested, sizeof requested, "%s", spec->device[0] ? spec->device : "auto");
    bool all = strcmp(requested, "all") == 0;
    /* each job: its record, its first log line and that line's stored time */
    typedef struct {
        char line[512], time[32];
    } first_log;
    pgd_new_job *jobs = calloc(n, sizeof *jobs);
    first_log *logs = calloc(n, sizeof *logs);
    pgd_job *stored = calloc(n, sizeof *stored);
    if (!jobs || !logs || !stored) {
        free(jobs);
        free(logs);
        free(stored);
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
        placed_line(logs[made].line, sizeof logs[made].line, targets[made].id, requested, placement,
                    nodes);
        jobs[made] = (pgd_new_job){.kind = spec->kind,
                                   .name = spec->name,
                                   .device_requested = requested,
                                   .device = targets[made].id,
                                   .spec = spec_json,
                                   .placement = placement,
                                   .log_line = logs[made].line,
                                   .log_time = logs[made].time,
                                   .stored = &stored[made],
                                   .tags = tags,
                                   .priority = priority};
        made++;
    }
    if (rc == 0) rc = pgd_store_jobs_insert_keyed(api->store, jobs, n, sub, ids, err);
    if (rc == 0) announce_queued(api, jobs, n, ids, first);
    for (size_t i = 0; i < made; i++) json_decref((json_t *)jobs[i].spec);
    for (size_t i = 0; i < n; i++) pgd_job_release(&stored[i]);
    free(stored);
    free(jobs);
    free(logs);
    return rc;
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
 * *queued is the count judged by. The caller holds submit_lock. */
static int queue_room(pgd_api *api, size_t n, int64_t *queued, pgn_error *err) {
    int64_t now_ns = pgn_now_ns();
    if (api->queued_bound + (int64_t)n > api->max_queued ||
        now_ns - api->queued_read_ns > QUEUED_RECOUNT_NS) {
        int64_t counted;
        if (queued_jobs(api, &counted, err) < 0) return -1;
        api->queued_bound = counted + api->inserting;
        api->queued_read_ns = now_ns;
    }
    *queued = api->queued_bound;
    return *queued + (int64_t)n > api->max_queued ? 1 : 0;
}

/* What a submission carries beside its spec (NULL: nothing): its idempotency key, tags and
 * priority. */
struct api_job_extras {
    pgd_submission sub;
    const json_t *tags;
    int64_t priority;
};

/* Places, admits and queues a parsed spec (api_internal.h). */
int api_queue_spec(pgd_api *api, const pgd_request *req, pgn_job_spec *spec, const api_job_extras *extras,
                   int64_t **ids_out, size_t *n_out, pgd_job *first, enum MHD_Result *reply) {
    if (first) *first = (pgd_job){0};
    pgn_error err, lerr;
    pgn_error_clear(&err);
    json_t *extra;
    /* "all" (bench jobs only: the parser refuses it elsewhere) is one job per OpenCL device. */
    bool all = strcmp(spec->device, "all") == 0;
    pgd_target where = {0};
    pgd_placement placement = {0}; /* "all": none */
    if (!all && pgd_scheduler_place_job(api->sched, spec, &where, &placement, &err) < 0) {
        *reply = pgd_reply_pgn_error(req, &err, NULL, NULL);
        return -1;
    }
    /* Parameters and device memory: a job that cannot fit is refused now, not failed later
     * (or worse, left to exhaust the device under the jobs beside it). */
    pgd_host_memory mem;
    if (pgd_host_memory_read(&mem) < 0) mem = (pgd_host_memory){0}; /* not judged */
    if (!all && pgd_admit_job(spec, &where.device, &mem, &lerr, &extra) < 0) {
        pgd_placement_release(&placement);
        *reply = api_reply_limit(req, &lerr, extra, NULL);
        return -1;
    }
    pgn_device_info placed = where.device; /* queued on where.queue: a device or a cluster's kind */
    snprintf(placed.id, sizeof placed.id, "%s", where.queue);
    const pgn_device_info *targets = all ? api->devices : &placed;
    size_t n = all ? api->n_devices : 1; /* >= 1: the server does not start without a device */
    int64_t *ids = calloc(n, sizeof *ids);
    int64_t queued = 0;
    pthread_mutex_lock(&api->submit_lock);
    int rc = ids ? queue_room(api, n, &queued, &err) : -1;
    bool full = rc == 1;
    if (rc == 0) { /* its room, taken before it is inserted */
        api->queued_bound += (int64_t)n;
        api->inserting += (int64_t)n;
    }
    pthread_mutex_unlock(&api->submit_lock);
    if (rc == 0) {
        pgd_scheduler_admit_lock(api->sched); /* shared with other submissions; claims wait */
        rc = insert_jobs(api, spec, targets, &placement, where.nodes, extras ? &extras->sub : NULL,
                         extras ? extras->tags : NULL, extras ? extras->priority : 0, n, ids, first, &err);
        pgd_scheduler_admit_unlock(api->sched);
        pthread_mutex_lock(&api->submit_lock);
        api->inserting -= (int64_t)n;
        if (rc < 0) api->queued_bound -= (int64_t)n;
        pthread_mutex_unlock(&api->submit_lock);
    }
    pgd_placement_release(&placement);
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
        *reply = api_reply_limit(req, &lerr, extra, h);
        return -1;
    }
    if (rc < 0 && err.code == PGN_E_CONFLICT && !strcmp(err.field, "submission_id")) {
        free(ids);
        return -2;
    }
    if (rc < 0) {
        free(ids);
        *reply = api_internal_error(req, &err);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        pgd_scheduler_notify(api->sched, targets[i].id);
        if (extras && extras->priority > PGD_PRIORITY_MIN) pgd_scheduler_preempt(api->sched, targets[i].id, extras->priority, ids[i]);
    }
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
static int take_submission(const pgd_request *req, json_t *root, api_job_extras *x, char key[PGD_SUBMISSION_ID_MAX + 1],
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
bool api_tag_key_valid(const char *k, size_t len, char *why, size_t size) {
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
bool api_tag_value_valid(const char *v, size_t len, char *why, size_t size) {
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
        if (!api_tag_key_valid(k, strlen(k), why, sizeof why)) {
            *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "tags", "tags: %s", why);
            return -1;
        }
        char field[8 + PGD_TAG_KEY_MAX];
        snprintf(field, sizeof field, "tags.%s", k);
        if (!json_is_string(v)) {
            *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, field, "%s: a tag's value must be a string", field);
            return -1;
        }
        if (!api_tag_value_valid(json_string_value(v), json_string_length(v), why, sizeof why)) {
            *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, field, "%s: %s", field, why);
            return -1;
        }
    }
    if (json_object_size(t) > 0) *tags = json_incref(t);
    json_object_del(root, "tags");
    return 0;
}

/* The body's "priority" (taken out of root: the engine never sees it; a job's order in its
 * device's queue is no part of what it computes) into *priority, 0 when absent; -1 after
 * replying what is wrong with it. */
static int take_priority(const pgd_request *req, json_t *root, int64_t *priority, enum MHD_Result *reply) {
    *priority = 0;
    json_t *p = json_is_object(root) ? json_object_get(root, "priority") : NULL;
    if (!p) return 0;
    double v = json_number_value(p);
    if (!json_is_number(p) || v != (double)(int64_t)v || v < PGD_PRIORITY_MIN || v > PGD_PRIORITY_MAX) {
        *reply = pgd_reply_error(req, PGN_E_INVALID_SPEC, "priority",
                                 "priority: must be a whole number from %d to %d (higher runs first; 0 by "
                                 "default), not %s",
                                 PGD_PRIORITY_MIN, PGD_PRIORITY_MAX,
                                 json_is_string(p) ? "a string" : json_is_number(p) ? "that number"
                                 : json_is_null(p) ? "null" : "that");
        return -1;
    }
    *priority = (int64_t)v;
    json_object_del(root, "priority");
    return 0;
}

/* A submission's answer: its first job's object, with every job's id in "ids" when it asked for
 * every device ("all"). malloc'd; NULL when memory ran out. */
static char *submission_text(const pgd_job *job, const int64_t *ids, size_t n, bool all) {
    pgn_json_writer w = {0};
    pgn_jw_object(&w);
    pgd_job_members(&w, job, &(pgd_job_shape){.spec = true});
    if (all) {
        pgn_jw_key(&w, "ids");
        pgn_jw_array(&w);
        for (size_t i = 0; i < n; i++) pgn_jw_int(&w, ids[i]);
        pgn_jw_end(&w);
    }
    pgn_jw_end(&w);
    return pgn_jw_take(&w);
}

/* Answers a request whose key was used before: 200 with the job it made (and "ids" for "all")
 * when the bodies agree, else 409 naming the key and that job. 1 once answered; 0 when the key
 * was never used (nothing answered). */
static int answer_submission(pgd_api *api, const pgd_request *req, const api_job_extras *x, const char *field,
                             enum MHD_Result *reply) {
    bool found;
    char stored[65];
    int64_t first, *ids;
    size_t n;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgd_store_submission_get(api->store, x->sub.key, &found, stored, &first, &ids, &n, &err) < 0) {
        *reply = api_internal_error(req, &err);
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
        *reply = api_reply_limit(req, &err, extra, NULL);
    } else if ((rc = pgd_store_job_get(api->store, ids[0], true, &job, &err)) < 0) {
        /* deleted in between: 404 */
        *reply = err.code == PGN_E_NOT_FOUND ? pgd_reply_pgn_error(req, &err, NULL, NULL) : api_internal_error(req, &err);
    } else {
        char *text = submission_text(&job, ids, n, !strcmp(job.device_requested, "all"));
        char location[64];
        snprintf(location, sizeof location, "/api/v1/jobs/%" PRId64, ids[0]);
        const pgd_header h[] = {{MHD_HTTP_HEADER_LOCATION, location}, {NULL, NULL}};
        *reply = pgd_reply_json_text(req, MHD_HTTP_OK, text, h);
    }
    pgd_job_release(&job);
    free(ids);
    return 1;
}

/* POST /api/v1/jobs: 201 with the new job, or, for a key used before, 200 with the job it made
 * (nothing is queued twice: the key is taken in the transaction that inserts the jobs). */
enum MHD_Result api_post_job(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    enum MHD_Result reply;
    json_t *root = api_read_json_body(req, &reply);
    if (!root) return reply;
    api_job_extras x = {0};
    char key[PGD_SUBMISSION_ID_MAX + 1], sha[65];
    const char *key_field = "submission_id";
    json_t *tags = NULL;
    if (take_submission(req, root, &x, key, sha, &key_field, &reply) < 0 ||
        take_tags(req, root, &tags, &reply) < 0 || take_priority(req, root, &x.priority, &reply) < 0 ||
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
    pgd_job first = {0};
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
        rc = api_queue_spec(api, req, &spec, &x, &ids, &n, &first, &reply);
    }
    if (names_data) pgd_datasets_unlock(api->datasets);
    pgn_spec_free(&spec);
    json_decref(tags);
    if (rc == -2 && !answer_submission(api, req, &x, key_field, &reply)) {
        pgn_error_set(&err, PGN_E_INTERNAL, "", "%s '%s' was taken, then not found", key_field, key);
        return api_internal_error(req, &err);
    }
    if (rc < 0) {
        pgd_job_release(&first);
        return reply;
    }
    char *text = NULL;
    rc = 0;
    if (first.id != ids[0] || !first.spec) { /* not read back as it was announced: read it now */
        pgd_job_release(&first);
        rc = pgd_store_job_get(api->store, ids[0], true, &first, &err);
    }
    if (rc == 0) text = submission_text(&first, ids, n, all); /* no "queue": reading it costs a submission two queries */
    pgd_job_release(&first);
    char location[64];
    if (rc == 0) snprintf(location, sizeof location, "/api/v1/jobs/%" PRId64, ids[0]);
    free(ids);
    if (rc < 0) return api_internal_error(req, &err);
    const pgd_header h[] = {{MHD_HTTP_HEADER_LOCATION, location}, {NULL, NULL}};
    return pgd_reply_json_text(req, MHD_HTTP_CREATED, text, h);
}
