/* api_internal.h: what the API's files share and nothing else may use: the pgd_api record, the
 * handlers the route table (api.c) names from the other files, and the request readers and error
 * replies every handler uses (api_request.c). Each file owns one part of the API: api.c the
 * table, dispatch and the small routes; api_submit.c submissions; api_jobs.c the job resources;
 * api_downloads.c a job's files; api_benchmarks.c the benchmark export. */
#ifndef PGD_API_INTERNAL_H
#define PGD_API_INTERNAL_H

#include "api.h"
#include "datasets.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

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
    /* Held while a submission counts the queue and takes its room in it, so concurrent
     * submissions cannot together pass max_queued; the inserts run outside it, at once (the
     * store commits those that wait together). Placement and parsing happen outside it. */
    pthread_mutex_t submit_lock;
    /* Under submit_lock: an upper bound on the queued jobs, the store's count at
     * queued_read_ns plus every job given room since (jobs leaving the queue only lower the
     * truth); inserting: the jobs given room and not yet inserted (a count does not see them).
     * Counting is a scan of the queue, so it runs only when the bound comes near the limit or
     * grows old. */
    int64_t queued_bound, queued_read_ns, inserting;
    pgd_datasets *datasets; /* <data-dir>/datasets/ through the API (datasets.c) */
};

/* ---- handlers the route table names (api.h: pgd_route_fn) -------------------------------- */

enum MHD_Result api_post_job(pgd_api *api, const pgd_request *req, int64_t id);        /* api_submit.c */
enum MHD_Result api_list_jobs(pgd_api *api, const pgd_request *req, int64_t id);       /* api_jobs.c */
enum MHD_Result api_get_job(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_delete_job(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_get_metrics(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_cancel_job(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_resume_job(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_post_generate(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_get_job_logs(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_get_job_events(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_get_checkpoint(pgd_api *api, const pgd_request *req, int64_t id);  /* api_downloads.c */
enum MHD_Result api_get_weights(pgd_api *api, const pgd_request *req, int64_t id);
enum MHD_Result api_get_benchmarks(pgd_api *api, const pgd_request *req, int64_t id);  /* api_benchmarks.c */

/* ---- reading a request, and the replies for what is wrong with it (api_request.c) -------- */

/* A query argument; an empty value ("?state=") counts as absent, as forms send it. */
const char *api_query(const pgd_request *req, const char *name);
/* A non-negative decimal integer, digits only. */
bool api_parse_count(const char *text, int64_t *out);
/* A decimal integer with an optional '-'. */
bool api_parse_int(const char *text, int64_t *out);
/* A queued job's place in its device's queue (GET /api/v1/jobs/{id}, a resume), as o's "queue": {"position", "ahead", "device",
 * "running": {"id", "name", "priority", "seconds_left"} (the job running there, if any), "reason"
 * ("queued 2nd behind job 5 (char-gpt, 4 min left)")}. Nothing for other states, or when the
 * store cannot say. */
void api_job_queue(pgd_api *api, const pgd_job *job, json_t *o);
/* An ISO 8601 time parameter as the store writes created_at ("2025-01-31T12:00:00.000Z", UTC)
 * into out: NULL when it is one, else what is wrong (for api_bad_param). */
const char *api_iso_param(const char *text, char out[32]);
/* The request's body as a JSON object: NULL after replying why it is not one (media type,
 * size and depth limits, syntax). */
json_t *api_read_json_body(const pgd_request *req, enum MHD_Result *reply);

/* 400 invalid_parameter: "name: 'value' is not want". */
enum MHD_Result api_bad_param(const pgd_request *req, const char *name, const char *value, const char *want);
/* Store and other server-side failures: the only 500s, or 503 while the store refuses writes
 * for a reason that passes. */
enum MHD_Result api_internal_error(const pgd_request *req, const pgn_error *err);
/* A store error about one job: a missing job is 404, a job in the wrong state 409. */
enum MHD_Result api_job_error(const pgd_request *req, const pgn_error *err);
/* An error reply with extra members (taken) merged into its error object. */
enum MHD_Result api_reply_limit(const pgd_request *req, const pgn_error *err, json_t *extra,
                                const pgd_header *headers);

/* ---- across the handlers ------------------------------------------------------------------ */

/* What a submission carries beside its spec (api_submit.c). */
typedef struct api_job_extras api_job_extras;
/* Places, admits and queues a parsed spec: one job, or one per OpenCL device for "all".
 * 0 with *ids (malloc'd, *n of them); -1 after replying why not (*reply); -2 without a reply
 * when extras' key was taken meanwhile (a concurrent request with it won): nothing queued.
 * extras NULL: no key, no tags. *first (when given) receives the first job as it was announced
 * queued, with its spec (id 0 when it could not be read back: the caller reads it). (api_submit.c) */
int api_queue_spec(pgd_api *api, const pgd_request *req, pgn_job_spec *spec, const api_job_extras *extras,
                   int64_t **ids_out, size_t *n_out, pgd_job *first, enum MHD_Result *reply);
/* Whether k (len bytes) is a tag key, or v a tag value; else why not, into why. (api_submit.c) */
bool api_tag_key_valid(const char *k, size_t len, char *why, size_t size);
bool api_tag_value_valid(const char *v, size_t len, char *why, size_t size);
/* Opens <data dir>/jobs/<id>/<name> for reading, never through a link; the fd with *st, or -1
 * with errno. (api_downloads.c) */
int api_open_job_file(const pgd_api *api, int64_t id, const char *name, struct stat *st);

#endif
