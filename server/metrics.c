/* metrics.c: owns the request metrics: counts and latency histograms in fixed arrays of atomic
 * counters indexed by route slot, method and status (the request path costs a few relaxed adds,
 * never a lock), the refusals at the connection limits, and their Prometheus text. The rest of
 * /metrics (jobs, queues, devices, work done) is prometheus.c's. */
#include "metrics.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Route labels: "other" (slot 0) for paths no route knows (404s of any shape), so a scan of
 * random URLs cannot grow the label set; then the API's route patterns, registered at start
 * (pgd_metrics_set_routes), one slot each. */
#define N_ROUTES (PGD_METRICS_MAX_ROUTES + 1)
static const char *routes[N_ROUTES] = {"other"};
static size_t n_routes = 1;

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

int pgd_metrics_set_routes(const char *const *patterns, size_t n, pgn_error *err) {
    if (n > PGD_METRICS_MAX_ROUTES) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "metrics: %zu route patterns, room for %d", n,
                      PGD_METRICS_MAX_ROUTES);
        return -1;
    }
    for (size_t i = 0; i < n; i++) routes[i + 1] = patterns[i];
    n_routes = n + 1;
    return 0;
}

const char *pgd_metrics_route_label(unsigned slot) { return slot < n_routes ? routes[slot] : routes[0]; }

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

void pgd_metrics_observe(unsigned slot, const char *method, unsigned status, double seconds) {
    if (status == 0) return;
    size_t r = slot < n_routes ? slot : 0, m = method_index(method);
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

void pgd_metrics_family(pgn_text *t, const char *name, const char *type, const char *help) {
    pgn_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newlines escaped as the format asks. */
const char *pgd_metrics_label(const char *value, char *buf, size_t size) {
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

void pgd_metrics_render_http(pgn_text *t) {
    pgd_metrics_family(t, "paragon_http_requests_total", "counter",
           "HTTP requests answered, by method, route pattern and status.");
    for (size_t r = 0; r < n_routes; r++)
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

    pgd_metrics_family(t, "paragon_http_request_duration_seconds", "histogram",
           "Time the server took to answer a request (handler, not network), by method and "
           "route pattern.");
    for (size_t r = 0; r < n_routes; r++)
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

    pgd_metrics_family(t, "paragon_http_refused_total", "counter",
           "Connections closed or event streams refused at a limit, by the limit's flag.");
    for (size_t i = 0; i < PGD_REFUSED_REASONS; i++)
        pgn_text_printf(t, "paragon_http_refused_total{limit=\"%s\"} %llu\n", refusal_names[i],
                        (unsigned long long)atomic_load_explicit(&refusals[i], memory_order_relaxed));
}

