/* placement.c: owns where a job goes: the device its spec names, or for "auto" the OpenCL
 * device where the cost model (engine/bench/cost.c) expects it to finish first, counting the
 * work already queued or running there. Each device's rates and queue are cached on its worker,
 * re-read from the store only when stale, and each placement adds its own estimate to its
 * device's queue at once, so a burst of submissions spreads over the devices. */
#include "scheduler_internal.h"

#include <string.h>

/* How stale the cost model's per-device queue sums may get (see queue_seconds). */
#define QUEUE_REFRESH_NS 100000000LL
/* How long the cost model trusts a device's rates before it reads its benchmark rows again
 * (new rows come from calibration and bench jobs: rarely). */
#define RATES_REFRESH_NS 1000000000LL

int sched_place(const pgd_scheduler *s, const char *want, pgn_device_info *out, pgn_error *err) {
    pgn_error e;
    pgn_error_clear(&e);
    if (pgn_device_select(want, s->devices, s->n, out, &e) == 0) return 0;
    /* The engine's message already names the field; to a submission it is a bad spec. */
    *err = e;
    err->code = PGN_E_INVALID_SPEC;
    return -1;
}

/* The device's rates from its latest benchmark rows (estimated from its properties while it has
 * none, or when the store cannot say). */
static void device_rates(pgd_scheduler *s, const pgn_device_info *info, pgn_device_rates *r) {
    worker *w = sched_worker_of(s, info->id);
    int64_t now = pgn_now_ns();
    if (w) {
        pthread_mutex_lock(&s->lock);
        bool fresh = w->rates_read_ns && now - w->rates_read_ns < RATES_REFRESH_NS;
        *r = w->rates;
        pthread_mutex_unlock(&s->lock);
        if (fresh) return;
    }
    json_t *rows = NULL;
    pgn_error err;
    if (pgd_store_bench_latest(s->store, info->id, NULL, &rows, &err) < 0) rows = NULL;
    if (rows) pgn_device_rates_from_rows(info, rows, r);
    else pgn_device_rates_estimate(info, r);
    json_decref(rows);
    if (w) {
        pthread_mutex_lock(&s->lock);
        w->rates = *r;
        w->rates_read_ns = now;
        pthread_mutex_unlock(&s->lock);
    }
}

/* Seconds of work queued or running on a device, as the cost model counts it. The store's
 * sum parses the estimate of every job there (about a millisecond per thousand queued jobs,
 * under the store's lock, for every submission), so it is re-read at most every
 * QUEUE_REFRESH_NS; in between, each placement adds its own estimate (queue_add), so a burst
 * of "auto" submissions still spreads over the devices. */
static double queue_seconds(pgd_scheduler *s, const char *device_id) {
    worker *w = sched_worker_of(s, device_id);
    double q = 0;
    pgn_error err;
    if (!w) return pgd_store_queue_seconds(s->store, device_id, &q, &err) < 0 ? 0 : q;
    int64_t now = pgn_now_ns();
    pthread_mutex_lock(&s->lock);
    bool fresh = w->queue_read_ns && now - w->queue_read_ns < QUEUE_REFRESH_NS;
    q = w->queue_s;
    pthread_mutex_unlock(&s->lock);
    if (fresh) return q;
    if (pgd_store_queue_seconds(s->store, w->info->id, &q, &err) < 0) return q;
    pthread_mutex_lock(&s->lock);
    w->queue_s = q;
    w->queue_read_ns = now;
    pthread_mutex_unlock(&s->lock);
    return q;
}

static void queue_add(pgd_scheduler *s, const char *device_id, double seconds) {
    worker *w = sched_worker_of(s, device_id);
    if (!w) return;
    pthread_mutex_lock(&s->lock);
    w->queue_s += seconds;
    pthread_mutex_unlock(&s->lock);
}

/* One candidate: the job's estimate there plus the work already queued or running there. */
static json_t *candidate(pgd_scheduler *s, const pgn_job_spec *spec, const pgn_device_info *info,
                         double *total) {
    pgn_device_rates r;
    pgn_job_estimate e;
    device_rates(s, info, &r);
    pgn_job_estimate_on(spec, &r, &e);
    double queued = queue_seconds(s, info->id);
    *total = e.seconds + queued;
    return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:b}", "device", info->id, "seconds",
                     e.seconds, "queue_seconds", queued, "total_seconds", *total, "work", e.work, "gflops",
                     r.gflops, "mips", r.mips, "launch_us", r.launch_us, "unit", e.unit, "measured",
                     r.measured);
}

int pgd_scheduler_place_job(pgd_scheduler *s, const pgn_job_spec *spec, pgn_device_info *out,
                            json_t **estimate, pgn_error *err) {
    *estimate = NULL;
    bool auto_ = strcmp(spec->device, "auto") == 0;
    if (!auto_) {
        if (sched_place(s, spec->device, out, err) < 0) return -1;
        double total;
        json_t *c = candidate(s, spec, out, &total);
        *estimate = json_pack("{s:s, s:o}", "reason", "asked for by name", "candidates", json_pack("[O]", c));
        json_object_update(*estimate, c);
        json_decref(c);
        queue_add(s, out->id, json_number_value(json_object_get(*estimate, "seconds")));
        return *estimate ? 0 : -1;
    }
    /* auto: the OpenCL device that would finish it first, counting what it already has to do;
     * the host pseudo-device only when there is no OpenCL device (it is asked for by name). */
    json_t *cands = json_array();
    const pgn_device_info *best = NULL;
    json_t *best_c = NULL;
    double best_total = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (sched_is_host(&s->devices[i]) && s->n > 1) continue;
        double total;
        json_t *c = candidate(s, spec, &s->devices[i], &total);
        json_array_append_new(cands, c);
        if (!best || total < best_total) {
            best = &s->devices[i];
            best_c = c;
            best_total = total;
        }
    }
    *out = *best;
    *estimate = json_deep_copy(best_c);
    json_object_set_new(*estimate, "reason",
                        json_string(json_array_size(cands) > 1 ? "the shortest estimated finish (estimate + queued)"
                                                                : "the only device"));
    json_object_set_new(*estimate, "candidates", cands);
    queue_add(s, out->id, json_number_value(json_object_get(*estimate, "seconds")));
    return 0;
}
