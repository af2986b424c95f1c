/* placement.c: owns where a job goes: the device its spec names, or for "auto" the OpenCL
 * device where the cost model (engine/bench/cost.c) expects it to finish first, counting when
 * the work already queued or running there lets it start (each of the device's jobs_per_device
 * slots taken in turn); the host pseudo-device joins them when no OpenCL device
 * is idle, so short jobs backfill it. Each device's rates and queue are cached on its worker,
 * re-read from the store only when stale, and each placement adds its own estimate to its
 * device's queue at once, so a burst of submissions spreads over the devices. */
#include "scheduler_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How stale the cost model's per-device queue sums may get (see queue_seconds), at the least;
 * and how many times its last read of the store's queue took, at the least: a queue of tens of
 * thousands of jobs is read at most a hundredth of the time. */
#define QUEUE_REFRESH_NS 100000000LL
#define QUEUE_REFRESH_READS 100
/* How long the cost model trusts a device's rates before it reads them from the store again
 * (new measurements come from calibration and bench jobs: rarely). */
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

/* The device's rates: what benchmark runs measured of it (estimated from its properties where
 * they measured nothing, or when the store cannot say). */
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
    pgn_measured_rates m;
    pgn_error err;
    if (pgd_store_rates_latest(s->store, info->id, &m, &err) == 0) pgn_device_rates_measured(info, &m, r);
    else pgn_device_rates_estimate(info, r);
    if (w) {
        pthread_mutex_lock(&s->lock);
        w->rates = *r;
        w->rates_read_ns = now;
        pthread_mutex_unlock(&s->lock);
    }
}

/* A device's queue as its slots (the jobs it runs at once): each running job holds one until its
 * estimate's share left is done, and each queued job, in the order claims take them, the slot that
 * frees first (list scheduling: jobs sharing a device are taken to run at their own estimates).
 * One slot: the sum of every estimate, as before several jobs could share a device. */
typedef struct {
    double *free_s; /* when each slot frees, from now */
    size_t slots;
    int64_t jobs; /* taken so far */
} queue_fill;

static double *first_free(const queue_fill *q) {
    double *first = &q->free_s[0];
    for (size_t i = 1; i < q->slots; i++)
        if (q->free_s[i] < *first) first = &q->free_s[i];
    return first;
}

static void queue_take(void *ctx, bool running, double seconds) {
    (void)running; /* running jobs come first: each takes an empty slot while there is one */
    queue_fill *q = ctx;
    *first_free(q) += seconds > 0 ? seconds : 0;
    q->jobs++;
}

/* Seconds until a job placed on the device now would start, as the cost model counts it. The
 * store's queue is read by one placement at a time, at most every QUEUE_REFRESH_NS (longer for a
 * long queue: QUEUE_REFRESH_READS); in between, each placement adds its own estimate (queue_add)
 * and each run's end counts one job fewer (sched_queue_drop), so a burst of "auto" submissions
 * still spreads over the devices. */
static double queue_seconds(pgd_scheduler *s, const char *device_id) {
    worker *w = sched_worker_of(s, device_id);
    pgn_error err;
    double free_s[PGD_JOBS_PER_DEVICE_LIMIT] = {0};
    queue_fill q = {free_s, w ? s->jobs_per_device : 1, 0};
    if (!w) return pgd_store_queue_each(s->store, device_id, queue_take, &q, &err) < 0 ? 0 : *first_free(&q);
    int64_t now = pgn_now_ns();
    pthread_mutex_lock(&s->lock);
    /* one placement reads the queue while the others take the view it replaces */
    bool read_it = now >= w->queue_fresh_ns && !w->queue_reading; /* 0: never read */
    w->queue_reading |= read_it;
    memcpy(free_s, w->slot_free_s, sizeof free_s);
    pthread_mutex_unlock(&s->lock);
    if (!read_it) return *first_free(&q);
    double read[PGD_JOBS_PER_DEVICE_LIMIT] = {0};
    queue_fill fill = {read, q.slots, 0};
    bool got = pgd_store_queue_each(s->store, w->info->id, queue_take, &fill, &err) == 0;
    int64_t took = pgn_now_ns() - now;
    pthread_mutex_lock(&s->lock);
    if (got) { /* else the view read before stands */
        memcpy(free_s, read, sizeof read);
        memcpy(w->slot_free_s, read, sizeof read);
        w->queue_fresh_ns = now + (took * QUEUE_REFRESH_READS > QUEUE_REFRESH_NS ? took * QUEUE_REFRESH_READS : QUEUE_REFRESH_NS);
        w->queue_jobs = fill.jobs;
    }
    w->queue_reading = false;
    pthread_mutex_unlock(&s->lock);
    return *first_free(&q);
}

static void queue_add(pgd_scheduler *s, const char *device_id, double seconds) {
    worker *w = sched_worker_of(s, device_id);
    if (!w) return;
    pthread_mutex_lock(&s->lock);
    queue_take(&(queue_fill){w->slot_free_s, s->jobs_per_device, 0}, false, seconds);
    w->queue_jobs++;
    pthread_mutex_unlock(&s->lock);
}

void sched_queue_drop(pgd_scheduler *s, worker *w) {
    pthread_mutex_lock(&s->lock);
    if (w->queue_jobs > 0 && --w->queue_jobs == 0) memset(w->slot_free_s, 0, sizeof w->slot_free_s);
    pthread_mutex_unlock(&s->lock);
}

/* One candidate: the job's estimate on info's device, and the work already queued or running
 * there. A train job of a shape that ran there before (shape, its pgd_store_shape_key; NULL for
 * other kinds) takes its time from that run, an epoch (a gpt's step) as long as that run's, start to
 * end: the cost model's figures alone missed real runs by 0.3-10x (a small net's launches, data
 * loading, evaluation), which no rate of the device's says. */
static void weigh(pgd_scheduler *s, const pgn_job_spec *spec, const char *shape, const pgn_device_info *info,
                  pgd_candidate *c) {
    *c = (pgd_candidate){0};
    snprintf(c->device, sizeof c->device, "%s", info->id);
    device_rates(s, info, &c->rates);
    pgn_job_estimate_on(spec, &c->rates, &c->estimate);
    pgn_device_rates_for(spec, &c->rates); /* the job shows the rates its estimate used */
    c->queue_seconds = queue_seconds(s, info->id);
    pgd_train_history h;
    pgn_error err;
    if (shape && pgd_store_train_history(s->store, shape, info->id, &h, &err) == 0 && h.job > 0) {
        double units = spec->train.model == PGN_MODEL_GPT ? spec->train.steps : spec->train.epochs;
        c->estimate.seconds = h.seconds * units / h.units;
    }
}

static double finish_seconds(const pgd_candidate *c) { return c->estimate.seconds + c->queue_seconds; }

/* Appends name to a comma-separated list in out (", " between), as far as it fits. */
static void list_add(char *out, size_t size, const char *name) {
    size_t len = strlen(out);
    if (len < size) snprintf(out + len, size - len, "%s%s", len ? ", " : "", name);
}

/* A cluster's request this node cannot place on a device of its own (or, for a kind, any
 * request: every node's device of that kind may take it), resolved against the devices the
 * nodes registered: out->device is one of them (a live node's first, else this node's own for a
 * kind), out->nodes which live nodes have one. An id no node ever registered is refused, naming
 * those that exist. */
static int cluster_place(pgd_scheduler *s, const char *want, const char *kind, pgd_target *out, pgn_error *err) {
    json_t *nodes;
    if (pgd_store_nodes_list(s->store, &nodes, err) < 0) return -1;
    bool found = false, live_found = false;
    int live_holders = 0;
    char ids[400] = "", holders[160] = "";
    size_t i, k;
    json_t *node, *dev;
    json_array_foreach(nodes, i, node) {
        double age = json_number_value(json_object_get(node, "heartbeat_age_s"));
        bool live = age * 1000.0 < (double)s->lease_ms;
        bool holds = false;
        json_array_foreach(json_object_get(node, "devices"), k, dev) {
            pgn_device_info info;
            if (pgn_device_info_from_json(dev, &info) < 0) continue;
            if (!strstr(ids, info.id)) list_add(ids, sizeof ids, info.id);
            const char *its = sched_kind_of(&info);
            if (kind ? !(its && !strcmp(its, kind)) : strcmp(info.id, want) != 0) continue;
            holds = true;
            if (!found || (live && !live_found)) out->device = info;
            found = true;
            live_found |= live;
        }
        if (holds && live) {
            live_holders++;
            const char *name = json_string_value(json_object_get(node, "id"));
            list_add(holders, sizeof holders, name ? name : "?");
        }
    }
    json_decref(nodes);
    if (!found && !kind) {
        pgn_error_set(err, PGN_E_INVALID_SPEC, "device",
                      "device: no node of the cluster has a device '%s' (expected auto, cpu, gpu, host "
                      "or an id a node lists: %s)",
                      want, ids[0] ? ids : "none");
        return -1;
    }
    pgn_error e;
    pgn_error_clear(&e);
    /* a kind is judged by this node's own device of that kind where it has one; by none (no
     * memory known) where no node has one */
    if (kind && sched_place(s, kind, &out->device, &e) < 0 && !found) {
        out->device = (pgn_device_info){.type = kind[0] == 'g' ? PGN_DEVICE_GPU : PGN_DEVICE_CPU};
        snprintf(out->device.id, sizeof out->device.id, "%s", kind);
    }
    if (kind && !live_found) {
        snprintf(out->nodes, sizeof out->nodes, "no node that has one is up now: it waits for one");
    } else {
        snprintf(out->nodes, sizeof out->nodes, "node%s with one: %s", live_holders == 1 ? "" : "s", holders);
    }
    snprintf(out->queue, sizeof out->queue, "%s", kind ? kind : want);
    return 0;
}

/* Weighs a job on this node's devices: the one asked for (out), or for "auto" each OpenCL
 * device, choosing the one the cost model expects to finish it first (into out). */
static int place_here(pgd_scheduler *s, const pgn_job_spec *spec, bool auto_, pgn_device_info *out,
                      pgd_placement *placement, pgn_error *err) {
    /* auto weighs every OpenCL device; the host pseudo-device when there is none, and as the
     * backfill when none is idle (work queued or running on each): its results are the same
     * bits, so a short job runs there at once instead of waiting behind a long one. A bench job
     * measures an OpenCL device: the host only when there is none (or by name). */
    placement->candidates = calloc(auto_ ? s->n : 1, sizeof *placement->candidates);
    if (!placement->candidates) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "placement: out of memory");
        return -1;
    }
    /* a train job's shape, once for every device weighed */
    char key[65];
    json_t *spec_json = spec->kind == PGN_JOB_TRAIN ? pgn_spec_to_json(spec) : NULL;
    const char *shape = spec_json && pgd_store_shape_key(spec_json, key) ? key : NULL;
    json_decref(spec_json);
    if (!auto_) {
        weigh(s, spec, shape, out, &placement->candidates[placement->n++]);
        placement->reason = PGD_PLACED_BY_NAME;
    }
    /* auto: the device that would finish it first, counting what it already has to do */
    const pgn_device_info *best = NULL;
    for (size_t i = 0; auto_ && i < s->n; i++) {
        bool host = sched_is_host(&s->devices[i]);
        if (host && s->n > 1 &&
            (spec->kind == PGN_JOB_BENCH || placement->candidates[placement->chosen].queue_seconds <= 0))
            continue; /* the host comes last (scheduler.h): best is the OpenCL devices' */
        pgd_candidate *c = &placement->candidates[placement->n];
        weigh(s, spec, shape, &s->devices[i], c);
        if (!best || finish_seconds(c) < finish_seconds(&placement->candidates[placement->chosen])) {
            best = &s->devices[i];
            placement->chosen = placement->n;
        }
        placement->n++;
    }
    if (auto_) {
        *out = *best;
        placement->reason = placement->n > 1 ? PGD_PLACED_FASTEST : PGD_PLACED_ONLY;
    }
    queue_add(s, out->id, placement->candidates[placement->chosen].estimate.seconds);
    return 0;
}

int pgd_scheduler_place_job(pgd_scheduler *s, const pgn_job_spec *spec, pgd_target *out,
                            pgd_placement *placement, pgn_error *err) {
    *placement = (pgd_placement){0};
    *out = (pgd_target){0};
    bool auto_ = strcmp(spec->device, "auto") == 0;
    const char *kind = pgd_device_kind_named(spec->device);
    if (!auto_ && s->cluster && (kind || !sched_worker_of(s, spec->device))) {
        if (cluster_place(s, spec->device, kind, out, err) < 0) return -1;
        /* judged on a device this node does not have, or on none: no estimate to weigh */
        if (!sched_worker_of(s, out->device.id)) return 0;
    } else if (!auto_ && sched_place(s, spec->device, &out->device, err) < 0) {
        return -1;
    }
    int rc = place_here(s, spec, auto_, &out->device, placement, err);
    if (rc == 0 && !out->queue[0]) snprintf(out->queue, sizeof out->queue, "%s", out->device.id);
    return rc;
}
