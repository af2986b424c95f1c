/* api.c: owns the HTTP API of paragond: the route table (api.h) and its matching, dispatch
 * (the token first, then 404 and 405), the small routes (health, readiness, version, the API's
 * document, the dashboard's files, devices, sessions, events, datasets) and the API's lifecycle.
 * The other handlers live in api_*.c by concern (api_internal.h). Requests reach it through
 * http.c; jobs run in the scheduler's workers (worker.c); server.c assembles the parts. */
#include "api_internal.h"

#include "assets.h"
#include "admission.h" /* PGD_DEFAULT_MAX_QUEUED */
#include "metrics.h"
#include "prometheus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* ---- small routes ----------------------------------------------------------------------- */

/* Every paragond on the store, with its devices, heartbeat and the jobs it runs. */
static enum MHD_Result get_nodes(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgn_error err;
    json_t *nodes;
    if (pgd_store_nodes_list(api->store, &nodes, &err) < 0) return api_job_error(req, &err);
    return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "nodes", nodes), NULL);
}

static enum MHD_Result get_devices(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgn_error err;
    json_t *devices = pgd_scheduler_devices_json(api->sched, &err);
    if (!devices) return api_internal_error(req, &err);
    return pgd_reply_json(req, MHD_HTTP_OK, json_pack("{s:o}", "devices", devices), NULL);
}

static enum MHD_Result get_utilisation(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    json_t *history = pgd_scheduler_utilisation_json(api->sched);
    if (!history) {
        pgn_error err;
        pgn_error_set(&err, PGN_E_OUT_OF_MEMORY, "", "devices' utilisation: out of memory");
        return api_internal_error(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK, history, NULL);
}

/* GET /metrics: the Prometheus text exposition (metrics.c). */
static enum MHD_Result get_prometheus(pgd_api *api, const pgd_request *req, int64_t id) {
    (void)id;
    pgn_error err;
    char *text = pgd_prometheus_render(api->store, api->sched, &err);
    if (!text) return api_internal_error(req, &err);
    return pgd_reply_text(req, MHD_HTTP_OK, text, PGD_METRICS_CONTENT_TYPE, NULL);
}

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
 * 404). docs/api.md's route table lists
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
    {"GET", "/api/v1/nodes", get_nodes, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs", api_list_jobs, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs", api_post_job, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}", api_get_job, PGD_ROUTE_TOKEN},
    {"DELETE", "/api/v1/jobs/{id}", api_delete_job, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/metrics", api_get_metrics, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs/{id}/cancel", api_cancel_job, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs/{id}/resume", api_resume_job, PGD_ROUTE_TOKEN},
    {"POST", "/api/v1/jobs/{id}/generate", api_post_generate, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/logs", api_get_job_logs, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/events", api_get_job_events, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/checkpoint", api_get_checkpoint, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/jobs/{id}/weights", api_get_weights, PGD_ROUTE_TOKEN},
    {"GET", "/api/v1/benchmarks", api_get_benchmarks, PGD_ROUTE_TOKEN},
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

/* An {id} that is not a job id: the job it names does not exist. */
static enum MHD_Result job_missing(const pgd_request *req, const char *id_text) {
    return pgd_reply_error(req, PGN_E_NOT_FOUND, NULL, "job '%s' does not exist", id_text);
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
        if (!api_parse_count(text, &id) || id == 0) return job_missing(req, text);
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
