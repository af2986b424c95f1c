/* metrics.h: the request metrics, in process-wide lock-free counters (as a Prometheus client's
 * default registry): requests by route pattern, method and status, their latency, and the
 * connections refused at a limit. Knows nothing of jobs: the route patterns are the API's,
 * registered at start; prometheus.c renders the whole of /metrics. */
#ifndef PGD_METRICS_H
#define PGD_METRICS_H

#include "paragon.h"

#include <stddef.h>

#define PGD_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define PGD_METRICS_MAX_ROUTES 64

/* Registers the route patterns (borrowed: they live as long as the process) as slots 1..n;
 * slot 0 is "other", for paths no route knows. */
int pgd_metrics_set_routes(const char *const *patterns, size_t n, pgn_error *err);

/* The label of a slot ("other" for 0 or one not registered). */
const char *pgd_metrics_route_label(unsigned slot);

/* Counts one answered request under its route slot, method and status, with the seconds its
 * handler took. Safe from any thread; a few relaxed atomic adds. status 0 (no response
 * queued) is not counted. */
void pgd_metrics_observe(unsigned slot, const char *method, unsigned status, double seconds);

/* Why a connection or stream was refused or cut; counted in paragon_http_refused_total. */
typedef enum {
    PGD_REFUSED_CONNECTIONS,    /* --max-connections */
    PGD_REFUSED_PER_IP,         /* --max-connections-per-ip */
    PGD_REFUSED_HEADER_TIMEOUT, /* --header-timeout */
    PGD_REFUSED_STREAMS,        /* --max-streams */
    PGD_REFUSED_REASONS
} pgd_refused_reason;

void pgd_metrics_refused(pgd_refused_reason reason);

/* ---- for prometheus.c ---- */

/* "# HELP name help\n# TYPE name type\n" */
void pgd_metrics_family(pgn_text *t, const char *name, const char *type, const char *help);
/* A label value with \, " and newlines escaped as the format asks. */
const char *pgd_metrics_label(const char *value, char *buf, size_t size);
/* The request and refusal families. */
void pgd_metrics_render_http(pgn_text *t);

#endif
