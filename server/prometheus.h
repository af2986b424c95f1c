/* prometheus.h: GET /metrics, paragond's Prometheus text exposition (format 0.0.4): the request
 * metrics (metrics.h) and the job, queue, device and work figures read per scrape from the store
 * and the scheduler. */
#ifndef PGD_PROMETHEUS_H
#define PGD_PROMETHEUS_H

#include "paragon.h"
#include "scheduler.h"
#include "store.h"

/* The whole exposition, malloc'd; NULL with err set when the store cannot be read. */
char *pgd_prometheus_render(pgd_store *store, pgd_scheduler *sched, pgn_error *err);

#endif
