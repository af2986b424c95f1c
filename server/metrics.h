/* metrics.h: GET /metrics, paragond's Prometheus text exposition (format 0.0.4): HTTP
 * request counts and latencies kept here, in process-wide lock-free counters (as a Prometheus
 * client's default registry), and job, queue, device and work figures read at scrape time
 * from the store and the scheduler. */
#ifndef PGD_METRICS_H
#define PGD_METRICS_H

#include "paragon.h"
#include "scheduler.h"
#include "store.h"

#define PGD_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Counts one answered request under its route pattern ("/api/v1/jobs/{id}", from the raw
 * path), method and status, with the seconds its handler took. Safe from any thread; a few
 * relaxed atomic adds. status 0 (no response queued) is not counted. */
void pgd_metrics_observe(const char *method, const char *path, unsigned status, double seconds);

/* Why a connection or stream was refused or cut; counted in paragon_http_refused_total. */
typedef enum {
    PGD_REFUSED_CONNECTIONS,    /* --max-connections */
    PGD_REFUSED_PER_IP,         /* --max-connections-per-ip */
    PGD_REFUSED_HEADER_TIMEOUT, /* --header-timeout */
    PGD_REFUSED_STREAMS,        /* --max-streams */
    PGD_REFUSED_REASONS
} pgd_refused_reason;

void pgd_metrics_refused(pgd_refused_reason reason);

/* The route pattern path falls under ("other" for anything unknown), so labels stay few. */
const char *pgd_metrics_route(const char *path);

/* The whole exposition, malloc'd; NULL with err set when the store cannot be read. */
char *pgd_metrics_render(pgd_store *store, pgd_scheduler *sched, pgn_error *err);

#endif
