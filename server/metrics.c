/* metrics.c: owns /metrics. Request counts and latency histograms live in fixed arrays of
 * atomic counters indexed by route pattern, method and status: the request path costs a route
 * lookup and three relaxed adds, never a lock. Everything else (jobs by state, finished jobs,
 * queues, device busy time and memory, interactions and FLOPs done) is read from the store,
 * the scheduler and /proc per scrape. */
#include "metrics.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Route patterns: "other" first, for paths no route knows (404s of any shape), so a scan of
 * random URLs cannot grow the label set. */
static const char *const routes[] = {
    "other",
    "/",
    "/{file}",
    "/healthz",
    "/readyz",
    "/metrics",
    "/api/v1/version",
    "/api/v1/devices",
    "/api/v1/jobs",
    "/api/v1/jobs/{id}",
    "/api/v1/jobs/{id}/metrics",
    "/api/v1/jobs/{id}/cancel",
    "/api/v1/jobs/{id}/logs",
    "/api/v1/jobs/{id}/events",
    "/api/v1/jobs/{id}/checkpoint",
    "/api/v1/benchmarks",
    "/api/v1/events",
    "/api/v1/session",
};
#define N_ROUTES (sizeof routes / sizeof routes[0])
#define ROUTE_JOB 9 /* "/api/v1/jobs/{id}"; its sub-resources follow it in order */

static const char *const methods[] = {"GET",    "HEAD",    "POST", "PUT",
                                      "DELETE", "OPTIONS", "PATCH", "other"};
#define N_METHODS (sizeof methods / sizeof methods[0])

/* Every status paragond or libmicrohttpd answers with; any other counts under the last slot,
 * labelled by its class ("2xx"...). */
static const unsigned statuses[] = {200, 201, 202, 204, 206, 301, 302, 304, 400, 401, 403, 404,
                                    405, 406, 409, 410, 411, 412, 413, 414, 415, 416, 417, 429,
                                    431, 500, 501, 502, 503, 505};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])
#define N_CLASSES 5 /* 1xx .. 5xx for the rest */

/* Upper bounds in seconds: a GET of a job takes tens of microseconds, a submission a
 * millisecond or two, a large list or export tens of milliseconds. */
static const double bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])

typedef struct histogram {
    _Atomic uint64_t buckets[N_BOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
    _Atomic uint64_t sum_ns;
} histogram;

static _Atomic uint64_t requests[N_ROUTES][N_METHODS][N_STATUSES + N_CLASSES];
static histogram durations[N_ROUTES][N_METHODS];

static _Atomic uint64_t refusals[PGD_REFUSED_REASONS];
static const char *const refusal_names[PGD_REFUSED_REASONS] = {
    [PGD_REFUSED_CONNECTIONS] = "max_connections",
    [PGD_REFUSED_PER_IP] = "max_connections_per_ip",
    [PGD_REFUSED_HEADER_TIMEOUT] = "header_timeout",
    [PGD_REFUSED_STREAMS] = "max_streams",
};

/* ---- the request path ------------------------------------------------------------------- */

static size_t route_index(const char *path) {
    static const size_t exact[] = {1, 3, 4, 5, 6, 7, 8, 15, 16, 17};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(path, routes[exact[i]]) == 0) return exact[i];
    static const char jobs[] = "/api/v1/jobs/";
    if (strncmp(path, jobs, sizeof jobs - 1) == 0) {
        const char *id = path + sizeof jobs - 1;
        const char *slash = strchr(id, '/');
        if (slash == id || *id == 0) return 0;
        if (!slash) return ROUTE_JOB;
        static const char *const subs[] = {"/metrics", "/cancel", "/logs", "/events",
                                           "/checkpoint"};
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (strcmp(slash, subs[i]) == 0) return ROUTE_JOB + 1 + i;
        return 0;
    }
    if (path[0] == '/' && !strchr(path + 1, '/') && strncmp(path, "/api", 4) != 0) return 2;
    return 0;
}

const char *pgd_metrics_route(const char *path) { return routes[route_index(path)]; }

static size_t method_index(const char *method) {
    for (size_t i = 0; i + 1 < N_METHODS; i++)
        if (strcmp(method, methods[i]) == 0) return i;
    return N_METHODS - 1;
}

static size_t status_index(unsigned status) {
    for (size_t i = 0; i < N_STATUSES; i++)
        if (statuses[i] == status) return i;
    unsigned cls = status / 100;
    return N_STATUSES + (cls >= 1 && cls <= 5 ? cls - 1 : N_CLASSES - 1);
}

void pgd_metrics_observe(const char *method, const char *path, unsigned status, double seconds) {
    if (status == 0) return;
    size_t r = route_index(path), m = method_index(method);
    atomic_fetch_add_explicit(&requests[r][m][status_index(status)], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < N_BOUNDS && seconds > bounds[b]) b++;
    histogram *h = &durations[r][m];
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    uint64_t ns = seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

void pgd_metrics_refused(pgd_refused_reason reason) {
    if ((unsigned)reason < PGD_REFUSED_REASONS)
        atomic_fetch_add_explicit(&refusals[reason], 1, memory_order_relaxed);
}

/* ---- the exposition --------------------------------------------------------------------- */

static void family(pgn_text *t, const char *name, const char *type, const char *help) {
    pgn_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newlines escaped as the format asks. */
static const char *label(const char *value, char *buf, size_t size) {
    size_t o = 0;
    for (const char *p = value; *p && o + 3 < size; p++) {
        if (*p == '\\' || *p == '"') buf[o++] = '\\';
        if (*p == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
            continue;
        }
        buf[o++] = *p;
    }
    buf[o] = 0;
    return buf;
}

static void render_http(pgn_text *t) {
    family(t, "paragon_http_requests_total", "counter",
           "HTTP requests answered, by method, route pattern and status.");
    for (size_t r = 0; r < N_ROUTES; r++)
        for (size_t m = 0; m < N_METHODS; m++)
            for (size_t s = 0; s < N_STATUSES + N_CLASSES; s++) {
                uint64_t n = atomic_load_explicit(&requests[r][m][s], memory_order_relaxed);
                if (!n) continue;
                char status[8];
                if (s < N_STATUSES) snprintf(status, sizeof status, "%u", statuses[s]);
                else snprintf(status, sizeof status, "%zuxx", s - N_STATUSES + 1);
                pgn_text_printf(t, "paragon_http_requests_total{method=\"%s\",route=\"%s\",status=\"%s\"} %llu\n",
                    methods[m], routes[r], status, (unsigned long long)n);
            }

    family(t, "paragon_http_request_duration_seconds", "histogram",
           "Time the server took to answer a request (handler, not network), by method and "
           "route pattern.");
    for (size_t r = 0; r < N_ROUTES; r++)
        for (size_t m = 0; m < N_METHODS; m++) {
            histogram *h = &durations[r][m];
            uint64_t counts[N_BOUNDS + 1], total = 0;
            for (size_t b = 0; b <= N_BOUNDS; b++) {
                counts[b] = atomic_load_explicit(&h->buckets[b], memory_order_relaxed);
                total += counts[b];
            }
            if (!total) continue;
            uint64_t cum = 0;
            for (size_t b = 0; b <= N_BOUNDS; b++) {
                cum += counts[b];
                char le[16];
                if (b < N_BOUNDS) snprintf(le, sizeof le, "%g", bounds[b]);
                else snprintf(le, sizeof le, "+Inf");
                pgn_text_printf(t,
                    "paragon_http_request_duration_seconds_bucket{method=\"%s\",route=\"%s\","
                    "le=\"%s\"} %llu\n",
                    methods[m], routes[r], le, (unsigned long long)cum);
            }
            double sum = (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) * 1e-9;
            pgn_text_printf(t, "paragon_http_request_duration_seconds_sum{method=\"%s\",route=\"%s\"} %.9g\n",
                methods[m], routes[r], sum);
            pgn_text_printf(t, "paragon_http_request_duration_seconds_count{method=\"%s\",route=\"%s\"} %llu\n",
                methods[m], routes[r], (unsigned long long)total);
        }

    family(t, "paragon_http_refused_total", "counter",
           "Connections closed or event streams refused at a limit, by the limit's flag.");
    for (size_t i = 0; i < PGD_REFUSED_REASONS; i++)
        pgn_text_printf(t, "paragon_http_refused_total{limit=\"%s\"} %llu\n", refusal_names[i],
                        (unsigned long long)atomic_load_explicit(&refusals[i], memory_order_relaxed));
}

/* What the host has free for jobs that run on it, as /proc/meminfo says (0 when it does not). */
static double mem_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (double)kb * 1024.0;
}

char *pgd_metrics_render(pgd_store *store, pgd_scheduler *sched, pgn_error *err) {
    int64_t states[PGD_JOB_STATES];
    pgd_counters counters;
    if (pgd_store_job_state_counts(store, states, err) < 0 ||
        pgd_store_counters(store, &counters, err) < 0)
        return NULL;
    json_t *devices = pgd_scheduler_devices_json(sched, err);
    if (!devices) return NULL;

    pgn_text t = {0};

    family(&t, "paragon_build_info", "gauge", "The running paragond's version (always 1).");
    pgn_text_printf(&t, "paragon_build_info{version=\"%s\"} 1\n", PGN_VERSION);

    family(&t, "paragon_jobs", "gauge", "Jobs in the store, by state.");
    for (int s = 0; s < PGD_JOB_STATES; s++)
        pgn_text_printf(&t, "paragon_jobs{state=\"%s\"} %lld\n", pgd_job_state_name((pgd_job_state)s),
            (long long)states[s]);
    family(&t, "paragon_jobs_finished_total", "counter",
           "Jobs that reached a final state, by outcome (deleting a job does not lower it).");
    static const pgd_job_state outcomes[] = {PGD_JOB_SUCCEEDED, PGD_JOB_FAILED, PGD_JOB_CANCELLED};
    for (size_t k = 0; k < sizeof outcomes / sizeof *outcomes; k++)
        pgn_text_printf(&t, "paragon_jobs_finished_total{outcome=\"%s\"} %.17g\n",
                        pgd_job_state_name(outcomes[k]), counters.finished[outcomes[k]]);

    char id[128];
    size_t i;
    json_t *d;
    family(&t, "paragon_queue_length", "gauge", "Jobs queued on each device.");
    json_array_foreach(devices, i, d)
        pgn_text_printf(&t, "paragon_queue_length{device=\"%s\"} %lld\n",
            label(json_string_value(json_object_get(d, "id")), id, sizeof id),
            (long long)json_integer_value(json_object_get(d, "queued")));
    family(&t, "paragon_device_busy_seconds_total", "counter",
           "Seconds each device's worker spent running jobs since paragond started.");
    json_array_foreach(devices, i, d)
        pgn_text_printf(&t, "paragon_device_busy_seconds_total{device=\"%s\"} %.9g\n",
            label(json_string_value(json_object_get(d, "id")), id, sizeof id),
            json_number_value(json_object_get(d, "busy_seconds")));
    family(&t, "paragon_device_memory_bytes", "gauge",
           "Global memory each OpenCL device reports (0 for the host pseudo-device: see "
           "paragon_host_memory_available_bytes).");
    json_array_foreach(devices, i, d)
        pgn_text_printf(&t, "paragon_device_memory_bytes{device=\"%s\"} %.17g\n",
            label(json_string_value(json_object_get(d, "id")), id, sizeof id),
            json_number_value(json_object_get(d, "global_mem_bytes")));
    json_decref(devices);
    family(&t, "paragon_host_memory_available_bytes", "gauge",
           "Memory the host has available now (MemAvailable), what host jobs are admitted against.");
    pgn_text_printf(&t, "paragon_host_memory_available_bytes %.17g\n", mem_available_bytes());

    render_http(&t);

    family(&t, "paragon_inet_interactions_total", "counter",
           "Interactions reduced by the inet jobs that succeeded.");
    pgn_text_printf(&t, "paragon_inet_interactions_total %.17g\n", counters.interactions);
    family(&t, "paragon_flops_total", "counter",
           "Floating-point operations of the train jobs that succeeded.");
    pgn_text_printf(&t, "paragon_flops_total %.17g\n", counters.flops);

    char *out = pgn_text_take(&t);
    if (!out) pgn_error_set(err, "internal", "", "out of memory rendering /metrics");
    return out;
}
