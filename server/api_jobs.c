/* api_jobs.c: the job resources of the API: the list (newest first, by offset or by a cursor,
 * filtered by state, kind and tags), one job, its metrics, logs and events, cancelling and
 * deleting it, and text generated from a gpt job's checkpoint (as a generate job). */
#include "api_internal.h"

#include "views.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A page of the job list: its default size and the most a request may ask for. */
#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 500

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
        else ok = api_tag_key_valid(values[i], (size_t)(colon - values[i]), why, sizeof why) &&
                  api_tag_value_valid(colon + 1, strlen(colon + 1), why, sizeof why);
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
enum MHD_Result api_list_jobs(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgd_job_filter f = {.limit = LIST_LIMIT_DEFAULT, .offset = 0};
    const char *v, *cursor = api_query(req, "cursor");
    if ((v = api_query(req, "limit")) && !api_parse_count(v, &f.limit))
        return api_bad_param(req, "limit", v, "a non-negative integer");
    if (f.limit > LIST_LIMIT_MAX) f.limit = LIST_LIMIT_MAX;
    if ((v = api_query(req, "offset")) && !api_parse_count(v, &f.offset))
        return api_bad_param(req, "offset", v, "a non-negative integer");
    if (cursor && !cursor_parse(cursor, &f.before_id))
        return api_bad_param(req, "cursor", cursor, "a cursor this server gave (a page's next_cursor, passed back as it is)");
    if (cursor && f.offset)
        return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "offset",
                               "offset: a page after a cursor starts at the cursor; leave offset out");
    if ((v = api_query(req, "state"))) {
        if (pgd_job_state_parse(v, &f.state) < 0)
            return api_bad_param(req, "state", v, "a job state (queued, running, succeeded, failed, cancelled)");
        f.by_state = true;
    }
    if ((v = api_query(req, "kind"))) {
        if (pgn_job_kind_parse(v, &f.kind) < 0) {
            char expected[160];
            snprintf(expected, sizeof expected, "a job kind (%s)", pgn_job_kinds_text(false));
            return api_bad_param(req, "kind", v, expected);
        }
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
    if (rc < 0) return api_internal_error(req, &err);
    bool more = n > (size_t)limit;
    char next[CURSOR_CHARS + 1];
    if (more && limit > 0) cursor_make(jobs[limit - 1].id, next);
    pgn_json_writer w = {0};
    pgn_jw_object(&w);
    pgn_jw_key(&w, "jobs");
    pgn_jw_array(&w);
    for (size_t i = 0; i < n && i < (size_t)limit; i++) {
        pgn_jw_object(&w);
        pgd_job_members(&w, &jobs[i], &(pgd_job_shape){.list = true});
        pgn_jw_end(&w);
    }
    pgn_jw_end(&w);
    pgd_jobs_free(jobs, n);
    pgn_jw_key(&w, "total");
    pgn_jw_int(&w, total);
    pgn_jw_key(&w, "limit");
    pgn_jw_int(&w, limit);
    pgn_jw_key(&w, "offset");
    pgn_jw_int(&w, f.offset);
    pgn_jw_key(&w, "next_cursor");
    if (more && limit > 0) pgn_jw_string(&w, next);
    else pgn_jw_null(&w);
    pgn_jw_end(&w);
    return pgd_reply_json_text(req, MHD_HTTP_OK, pgn_jw_take(&w), NULL);
}

/* "1st", "2nd", "3rd", "11th" ... */
static const char *ordinal(int64_t n, char *out, size_t size) {
    int64_t tens = n % 100, ones = n % 10;
    const char *suffix = tens >= 11 && tens <= 13 ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
    snprintf(out, size, "%" PRId64 "%s", n, suffix);
    return out;
}

/* "40 s", "4 min", "1 h 5 min": a wait as people say it. */
static const char *duration_words(double s, char *out, size_t size) {
    if (s < 1) snprintf(out, size, "under a second");
    else if (s < 90) snprintf(out, size, "%.0f s", s);
    else if (s < 3600) snprintf(out, size, "%.0f min", s / 60);
    else snprintf(out, size, "%d h %d min", (int)(s / 3600), (int)(s - 3600 * (int)(s / 3600)) / 60);
    return out;
}

/* Seconds a running job has left: from its pace so far once its first run has made progress,
 * else its estimate less the time it has run (a run that resumed started at its checkpoint's
 * progress, which its pace would count as its own: the estimate's share left instead); < 0 when
 * neither is known. */
static double seconds_left(const pgd_job *r) {
    int64_t started;
    if (!pgn_utc_ms(r->started_at, &started)) return -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* the store's times are UTC wall-clock times */
    double ran = (double)((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - started) / 1000.0;
    if (ran < 0) ran = 0;
    if (r->attempts <= 1 && r->progress >= 0.02) return ran * (1 - r->progress) / r->progress;
    if (r->placement.n == 0) return -1;
    double estimate = r->placement.candidates[r->placement.chosen].estimate.seconds;
    double left = r->attempts <= 1 ? estimate - ran : estimate * (1 - r->progress);
    return left > 0 ? left : 0;
}

void api_job_queue(pgd_api *api, const pgd_job *job, json_t *o) {
    if (job->state != PGD_JOB_QUEUED) return;
    int64_t ahead, running_id;
    pgn_error err;
    if (pgd_store_job_queue_place(api->store, job->id, &ahead, &running_id, &err) < 0) return; /* not said */
    pgd_job running = {0};
    bool has_running = running_id > 0 && pgd_store_job_get(api->store, running_id, false, &running, &err) == 0;
    char pos[24], left_words[32], reason[400];
    ordinal(ahead + 1, pos, sizeof pos);
    json_t *q = json_pack("{s:I, s:I, s:s}", "position", (json_int_t)(ahead + 1), "ahead", (json_int_t)ahead,
                          "device", job->device);
    if (has_running) {
        double left = seconds_left(&running);
        json_object_set_new(q, "running", json_pack("{s:I, s:s, s:I, s:o}", "id", (json_int_t)running.id, "name",
                                                    running.name, "priority", (json_int_t)running.priority,
                                                    "seconds_left", left >= 0 ? json_real(left) : json_null()));
        int n = snprintf(reason, sizeof reason, "queued %s behind job %" PRId64 " (%s%s%s%s)", pos, running.id,
                         running.name[0] ? running.name : pgn_job_kind_name(running.kind),
                         left >= 0 ? ", " : "", left >= 0 ? duration_words(left, left_words, sizeof left_words) : "",
                         left >= 0 ? " left" : "");
        if (ahead == 0 && job->priority > running.priority && running.kind == PGN_JOB_TRAIN && n > 0 &&
            (size_t)n < sizeof reason)
            snprintf(reason + n, sizeof reason - (size_t)n, "; it stops at its next step for this one (priority %" PRId64
                     " over %" PRId64 ")", job->priority, running.priority);
    } else if (ahead > 0) {
        snprintf(reason, sizeof reason, "queued %s on %s", pos, job->device);
    } else {
        snprintf(reason, sizeof reason, "queued 1st on %s: it starts when its device takes it", job->device);
    }
    json_object_set_new(q, "reason", json_string(reason));
    json_object_set_new(o, "queue", q);
    pgd_job_release(&running);
}

enum MHD_Result api_get_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgd_job job;
    pgn_error err;
    char *spec;
    if (pgd_store_job_get_spec_text(api->store, id, &job, &spec, &err) < 0) {
        if (err.code == PGN_E_NOT_FOUND)
            return pgd_reply_pgn_error(req, &err, NULL, NULL);
        return api_internal_error(req, &err);
    }
    json_t *queue = json_object();
    api_job_queue(api, &job, queue);
    char *text = pgd_job_text(&job, &(pgd_job_shape){.spec = true, .spec_text = spec}, queue);
    json_decref(queue);
    pgd_job_release(&job);
    free(spec);
    return pgd_reply_json_text(req, MHD_HTTP_OK, text, NULL);
}

enum MHD_Result api_get_metrics(pgd_api *api, const pgd_request *req, int64_t id) {
    const char *name = api_query(req, "name");
    const char *after = api_query(req, "after_step");
    int64_t after_step = 0;
    if (after && !api_parse_int(after, &after_step))
        return api_bad_param(req, "after_step", after, "an integer");
    json_t *metrics;
    pgn_error err;
    if (pgd_store_metrics_list(api->store, id, name, after != NULL, after_step, &metrics, &err) <
        0) {
        if (err.code == PGN_E_NOT_FOUND)
            return pgd_reply_pgn_error(req, &err, NULL, NULL);
        return api_internal_error(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK,
                          json_pack("{s:I, s:o}", "job_id", (json_int_t)id, "metrics", metrics),
                          NULL);
}

/* POST /api/v1/jobs/{id}/cancel: 200 with the job when it is cancelled now (it was queued),
 * 202 when it stops at its next step boundary (it is running). */
enum MHD_Result api_cancel_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgd_job job;
    pgn_error err;
    if (pgd_scheduler_cancel(api->sched, id, &job, &err) < 0) return api_job_error(req, &err);
    bool ended = job.state == PGD_JOB_CANCELLED;
    char *text = pgd_job_text(&job, &(pgd_job_shape){.spec = true}, NULL);
    pgd_job_release(&job);
    return pgd_reply_json_text(req, ended ? MHD_HTTP_OK : MHD_HTTP_ACCEPTED, text, NULL);
}

/* POST /api/v1/jobs/{id}/resume: 200 with a cancelled job queued again (its next run resumes
 * from its checkpoint); 409 when it is not cancelled. */
enum MHD_Result api_resume_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgd_job job;
    pgn_error err;
    if (pgd_scheduler_resume(api->sched, id, &job, &err) < 0) return api_job_error(req, &err);
    json_t *queue = json_object();
    api_job_queue(api, &job, queue);
    char *text = pgd_job_text(&job, &(pgd_job_shape){.spec = true}, queue);
    json_decref(queue);
    pgd_job_release(&job);
    return pgd_reply_json_text(req, MHD_HTTP_OK, text, NULL);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* DELETE /api/v1/jobs/{id}: a finished job's rows go in one transaction, then its files. Files
 * that cannot be removed are reported on stderr, not to the client: the job is gone either way
 * and a retry could only answer 404. */
enum MHD_Result api_delete_job(pgd_api *api, const pgd_request *req, int64_t id) {
    pgn_error err;
    if (pgd_store_job_delete(api->store, id, &err) < 0) return api_job_error(req, &err);
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

/* POST /api/v1/jobs/{id}/generate: text from train job id's gpt checkpoint, as a generate job
 * that runs like any other (on the device the train job ran on, or on the host while it still
 * trains, unless the body names one).
 * The body: prompt, max_tokens, temperature, top_k, seed, stream, device, name. With "stream"
 * the reply is the new job's events (a "token" event per character, then its final state with
 * the whole text); otherwise one JSON body, the ended job (its result: text, completion,
 * tokens_per_second). */
enum MHD_Result api_post_generate(pgd_api *api, const pgd_request *req, int64_t id) {
    enum MHD_Result reply;
    json_t *root = api_read_json_body(req, &reply);
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
        return api_job_error(req, &err);
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
    /* on the train job's device; while it still trains there, on the host (the same bits), so that
     * the text does not wait for the training to end */
    bool training = source.state == PGD_JOB_QUEUED || source.state == PGD_JOB_RUNNING;
    if (!json_object_get(root, "device")) json_object_set_new(root, "device", json_string(training ? "host" : source.device));
    pgd_job_release(&source);
    pgn_job_spec spec;
    int rc = pgn_spec_parse(root, &spec, &err);
    json_decref(root);
    if (rc < 0) return pgd_reply_pgn_error(req, &err, NULL, NULL);
    /* only the job's own checkpoint, opened as the download is (no link, not an older job's) */
    char path[PGN_PATH_MAX * 2 + 32];
    snprintf(path, sizeof path, "%s/jobs/%" PRId64 "/%s", api->data_dir, id, PGN_CHECKPOINT_FILE);
    struct stat st;
    int fd = api_open_job_file(api, id, PGN_CHECKPOINT_FILE, &st);
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
    rc = api_queue_spec(api, req, &spec, NULL, &ids, &n, NULL, &reply);
    pgn_spec_free(&spec);
    if (rc < 0) return reply;
    int64_t gen = ids[0];
    free(ids);
    return pgd_events_reply_job_since(api->events, req, gen, since, !stream);
}

enum MHD_Result api_get_job_events(pgd_api *api, const pgd_request *req, int64_t id) {
    return pgd_events_reply_job(api->events, req, id);
}

enum MHD_Result api_get_job_logs(pgd_api *api, const pgd_request *req, int64_t id) {
    const char *v = api_query(req, "after");
    int64_t after = 0;
    if (v && !api_parse_count(v, &after)) return api_bad_param(req, "after", v, "a non-negative integer");
    return pgd_events_reply_logs(api->store, req, id, after);
}
