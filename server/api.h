/* api.h: paragond's HTTP API: one table of routes (method, path pattern, handler, whether the
 * token is asked for) drives routing, the Allow header of a 405, the route labels of the request
 * metrics, and docs/api.md's route table (a test compares them). Handlers answer with the JSON of
 * the store's typed records; jobs run in scheduler.c. */
#ifndef PGD_API_H
#define PGD_API_H

#include "auth.h"
#include "events.h"
#include "http.h"
#include "scheduler.h"
#include "store.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pgd_api pgd_api;

/* The header that carries a submission's idempotency key (the body's "submission_id" may carry
 * it instead; its bounds are PGD_SUBMISSION_ID_MAX's, store.h). */
#define PGD_IDEMPOTENCY_HEADER "Idempotency-Key"
/* A job's tags: a few labels to find jobs by, not a document (the list filters on them). */
#define PGD_TAGS_MAX 16
#define PGD_TAG_KEY_MAX 64
#define PGD_TAG_VALUE_MAX 256 /* bytes of UTF-8 */

/* What the API answers from; every part outlives it. */
typedef struct pgd_api_deps {
    pgd_store *store;
    pgd_scheduler *sched;
    pgd_events *events;
    pgd_auth *auth;
    const pgn_device_info *devices; /* the OpenCL devices: what a bench job's "all" expands to */
    size_t n_devices;
    const char *data_dir;
    const char *version_json; /* GET /api/v1/version */
    const atomic_bool *ready; /* GET /readyz */
    int64_t max_queued;       /* submissions beyond this many queued jobs get 429 */
    int64_t max_dataset_bytes; /* larger uploads get 413; 0: PGD_DEFAULT_MAX_DATASET_MB */
} pgd_api_deps;

int pgd_api_create(const pgd_api_deps *deps, pgd_api **out, pgn_error *err);
void pgd_api_destroy(pgd_api *api);

/* The pgd_handler for http.c (ctx: the pgd_api), and its pgd_route_slot: the request-metrics
 * slot of a path (0 for a path no route's pattern matches). */
enum MHD_Result pgd_api_handle(void *api, const pgd_request *req);
unsigned pgd_api_route_slot(void *api, const char *path);
/* The pgd_sink_open for http.c: a sink for the routes that stream their bodies (dataset
 * uploads), else NULL. */
pgd_sink *pgd_api_sink_open(void *api, const pgd_request *req);

/* ---- the route table -------------------------------------------------------------------- */

/* Who may call a route: anyone (health probes, the dashboard's files, which hold no data), or
 * whoever auth.c lets through (the token for writes; for reads too off loopback). */
typedef enum { PGD_ROUTE_OPEN, PGD_ROUTE_TOKEN } pgd_route_access;

/* A route's handler; id is the {id} segment's value for patterns that have one (else 0). */
typedef enum MHD_Result (*pgd_route_fn)(pgd_api *api, const pgd_request *req, int64_t id);

typedef struct pgd_route {
    const char *method;  /* "GET" (HEAD is answered as GET), "POST", "DELETE" */
    const char *pattern; /* "/api/v1/jobs/{id}/cancel": {id} is a positive job id, {file} a web file */
    pgd_route_fn handler;
    pgd_route_access access;
} pgd_route;

/* Every route, in matching order (n receives the count). */
const pgd_route *pgd_api_routes(size_t *n);

#endif
