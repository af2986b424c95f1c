/* scheduler.c: owns the scheduler's lifecycle and what it answers about its devices: a worker
 * per device with --jobs-per-device runner threads (worker.c), started after jobs queued on a device that is gone are
 * placed again (placement.c); cancelling a queued or running job; waking a device's worker; the
 * devices with their queues, running jobs, busy time and profiles; their utilisation history. */
#include "scheduler_internal.h"

#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

worker *sched_worker_of(pgd_scheduler *s, const char *device_id) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->devices[i].id, device_id) == 0) return &s->workers[i];
    return NULL;
}

bool sched_is_host(const pgn_device_info *info) {
    pgn_device_profile profile;
    pgn_device_profile_default(info, &profile);
    return profile.dev_class == PGN_CLASS_HOST;
}

const char *pgd_device_kind_named(const char *want) {
    return !strcmp(want, "cpu") ? "cpu" : !strcmp(want, "gpu") ? "gpu" : NULL;
}

const char *sched_kind_of(const pgn_device_info *info) {
    return info->type == PGN_DEVICE_CPU ? "cpu" : info->type == PGN_DEVICE_GPU ? "gpu" : NULL;
}

bool sched_serves(const worker *w, const char *device) {
    const char *kind = sched_kind_of(w->info);
    return !strcmp(w->info->id, device) || (kind && !strcmp(kind, device));
}

/* Jobs queued by an earlier run on a device that is gone (a GPU removed, a driver changed)
 * are placed again from what they asked for, or fail saying why. */
static int replace_orphans(pgd_scheduler *s, pgn_error *err) {
    pgd_job *queued;
    size_t n;
    if (pgd_store_queued_jobs(s->store, &queued, &n, err) < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        const pgd_job *job = &queued[i];
        int64_t id = job->id;
        const char *device = job->device, *want = job->device_requested;
        if (sched_worker_of(s, device) || pgd_device_kind_named(device)) continue;
        pgn_device_info info;
        pgn_error e, serr;
        pgn_error_clear(&e);
        if (want[0] && sched_place(s, want, &info, &e) == 0) {
            fprintf(stderr, "paragond: job %lld: device %s is gone, placed on %s\n",
                    (long long)id, device, info.id);
            if (pgd_store_job_reassign(s->store, id, info.id, &serr) < 0)
                fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
            else
                pgd_events_job_log(s->events, s->store, id, 0, "warn",
                                   "device %s is gone: placed again on %s", device, info.id);
        } else {
            if (!want[0]) pgn_error_set(&e, PGN_E_INVALID_SPEC, "device", "device: not recorded");
            fprintf(stderr, "paragond: job %lld cannot be placed again: %s\n", (long long)id,
                    e.message);
            if (pgd_store_job_finish(s->store, id, 0, PGD_JOB_FAILED, NULL, &e, NULL, &serr) < 0)
                fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
            pgd_events_job_log(s->events, s->store, id, 0, "error", "failed: cannot be placed again: %s",
                               e.message);
            pgd_events_job_changed(s->events, s->store, id, NULL, &serr);
        }
    }
    pgd_jobs_free(queued, n);
    return 0;
}

/* ---- lifecycle -------------------------------------------------------------------------- */

void sched_wake(worker *w) {
    for (size_t k = 0; k < w->n_runners; k++) w->runners[k].wake = true;
    pthread_cond_broadcast(&w->cond);
}

int pgd_scheduler_start(pgd_store *store, pgd_events *events, const pgn_device_info *devices,
                        size_t count, const char *data_dir, bool calibrate, int64_t max_attempts,
                        size_t jobs_per_device, pgd_scheduler **out, pgn_error *err) {
    *out = NULL;
    pgd_scheduler *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->store = store;
    s->events = events;
    s->calibrate = calibrate;
    s->max_attempts = max_attempts;
    s->run_opts.data_dir = data_dir;
    pthread_mutex_init(&s->lock, NULL);
    /* writers first: a flood of submissions must not keep the workers from claiming */
    pthread_rwlockattr_t admit_attr;
    pthread_rwlockattr_init(&admit_attr);
    pthread_rwlockattr_setkind_np(&admit_attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->admit, &admit_attr);
    pthread_rwlockattr_destroy(&admit_attr);
    pthread_mutex_init(&s->calibrating, NULL);
    atomic_init(&s->stopping, false);
    atomic_init(&s->cancel_gen, 0);
    pthread_cond_init(&s->lease_tick, NULL);
    s->lease_ms = pgd_store_lease_ms(store);
    s->cluster = pgd_store_shared(store);
    s->n = count + 1;
    s->jobs_per_device = jobs_per_device ? jobs_per_device : 1;
    s->devices = calloc(s->n, sizeof *s->devices);
    s->workers = calloc(s->n, sizeof *s->workers);
    runner *runners = calloc(s->n * s->jobs_per_device, sizeof *runners);
    if (!s->devices || !s->workers || !runners) {
        free(s->devices);
        free(s->workers);
        free(runners);
        pthread_mutex_destroy(&s->lock);
        pthread_rwlock_destroy(&s->admit);
        pthread_mutex_destroy(&s->calibrating);
        pthread_cond_destroy(&s->lease_tick);
        free(s);
        goto oom;
    }
    if (count) memcpy(s->devices, devices, count * sizeof *devices);
    pgn_device_info_host(&s->devices[count]);
    int64_t origin = pgn_now_ns();
    for (size_t i = 0; i < s->n; i++) {
        worker *w = &s->workers[i];
        pgd_busy_ring_init(&w->busy_ring, origin);
        w->sched = s;
        w->info = &s->devices[i];
        w->runners = runners + i * s->jobs_per_device;
        w->n_runners = s->jobs_per_device;
        for (size_t k = 0; k < w->n_runners; k++) {
            runner *r = &w->runners[k];
            r->w = w;
            r->sched = s;
            r->info = w->info;
            r->index = k;
            r->wake = true; /* look for jobs queued before we started */
            atomic_init(&r->running_job, 0);
            atomic_init(&r->running_attempt, 0);
            atomic_init(&r->running_bytes, 0);
            atomic_init(&r->lease_lost, false);
        }
        pthread_cond_init(&w->cond, NULL);
    }
    for (size_t i = 0; i < s->n; i++) { /* a bad PARAGON_KERNELS stops the start here */
        worker *w = &s->workers[i];
        if (pgn_device_profile_of(w->info, NULL, &w->profile, err) < 0) {
            pgd_scheduler_stop(s);
            return -1;
        }
        /* the stored tuning, as the device will open with it (until then, for GET /devices) */
        pgn_device_tuning t;
        bool found = false;
        pgn_error terr;
        pgn_kernel_family family = w->profile.family[PGN_OPS_GEMM];
        if (pgd_store_tuning_get(s->store, w->info->id, family, &t, &found, &terr) == 0 && found &&
            pgn_device_tuning_fits(&t, w->info, family))
            pgn_device_profile_tune(&w->profile, &t);
    }
    /* A cluster's job queued on a device this node lacks waits for a node that has it. */
    if (!s->cluster && replace_orphans(s, err) < 0) {
        pgd_scheduler_stop(s);
        return -1;
    }
    for (size_t i = 0; i < s->n * s->jobs_per_device; i++) {
        runner *r = &runners[i];
        int rc = pthread_create(&r->thread, NULL, sched_worker_main, r);
        if (rc != 0) {
            pgn_error_set(err, PGN_E_INTERNAL, "", "scheduler: cannot start the worker of %s: %s",
                          r->info->id, strerror(rc));
            pgd_scheduler_stop(s);
            return -1;
        }
        r->started = true;
    }
    int rc = pthread_create(&s->lease_thread, NULL, sched_lease_main, s);
    if (rc != 0) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "scheduler: cannot start the lease keeper: %s", strerror(rc));
        pgd_scheduler_stop(s);
        return -1;
    }
    s->lease_started = true;
    *out = s;
    return 0;
oom:
    pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "scheduler: out of memory");
    return -1;
}

void pgd_scheduler_stop(pgd_scheduler *s) {
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    atomic_store(&s->stopping, true);
    for (size_t i = 0; i < s->n; i++) pthread_cond_broadcast(&s->workers[i].cond);
    pthread_cond_signal(&s->lease_tick);
    pthread_mutex_unlock(&s->lock);
    /* The keeper stops first: the workers' runs end after it and write their ends, which no
     * lease needs (a requeue or an end takes the run from the store's running jobs). */
    if (s->lease_started) pthread_join(s->lease_thread, NULL);
    for (size_t i = 0; i < s->n; i++) {
        worker *w = &s->workers[i];
        for (size_t k = 0; w->runners && k < w->n_runners; k++)
            if (w->runners[k].started) pthread_join(w->runners[k].thread, NULL);
        pthread_cond_destroy(&w->cond);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_rwlock_destroy(&s->admit);
    pthread_mutex_destroy(&s->calibrating);
    pthread_cond_destroy(&s->lease_tick);
    free(s->n ? s->workers[0].runners : NULL);
    free(s->workers);
    free(s->devices);
    free(s);
}

void pgd_scheduler_job_dir(const pgd_scheduler *s, int64_t id, char *out, size_t size) {
    snprintf(out, size, "%s/jobs/%lld", s->run_opts.data_dir, (long long)id);
}

/* Whether a runner runs job id now. Caller holds s->admit (claims set running_job under it). */
static bool has_worker(const pgd_scheduler *s, int64_t id) {
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->workers[i].n_runners; k++)
            if (atomic_load(&s->workers[i].runners[k].running_job) == id) return true;
    return false;
}

bool pgd_scheduler_runs(pgd_scheduler *s, int64_t id) { return has_worker(s, id); }

struct timespec sched_deadline(int64_t ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

int pgd_scheduler_cancel(pgd_scheduler *s, int64_t id, pgd_job *job, pgn_error *err) {
    if (pgd_store_job_cancel(s->store, id, job, err) < 0) return -1;
    if (job->state == PGD_JOB_RUNNING) {
        pthread_rwlock_wrlock(&s->admit);
        bool elsewhere = false;
        pgn_error herr;
        if (!has_worker(s, id) && pgd_store_job_held_elsewhere(s->store, id, &elsewhere, &herr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, herr.message);
        /* a cluster's other node runs it: it reads the request (lease.c polls for it) */
        bool orphan = !has_worker(s, id) && !elsewhere;
        if (orphan) {
            /* Running in the store with nobody to stop it (its worker could not record its
             * end before it had to stop): the cancel ends it here. */
            pgn_error why, ferr;
            pgn_error_clear(&why);
            pgn_error_set(&why, PGN_E_CANCELLED, "", "cancelled on request; no worker was running it");
            int rc = pgd_store_job_finish(s->store, id, 0, PGD_JOB_CANCELLED, NULL, &why, NULL, &ferr);
            pthread_rwlock_unlock(&s->admit);
            pgd_job_release(job);
            if (rc < 0 && ferr.code != PGN_E_CONFLICT) {
                *err = ferr;
                return -1;
            }
            pgd_events_job_log(s->events, s->store, id, 0, "warn",
                               "cancelled: no worker was running it");
            pgn_error eerr;
            if (pgd_events_job_changed(s->events, s->store, id, NULL, &eerr) < 0)
                fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, eerr.message);
            return pgd_store_job_get(s->store, id, true, job, err);
        }
        pthread_rwlock_unlock(&s->admit);
        atomic_fetch_add(&s->cancel_gen, 1);
        pgd_events_job_log(s->events, s->store, id, 0, "warn",
                           "cancel requested: it stops at its next step%s",
                           elsewhere ? " (on the node that runs it)" : "");
        return 0;
    }
    /* A queued job ended here, not in a worker: its log and stream hear it from us. */
    pgd_events_job_log(s->events, s->store, id, 0, "warn", "cancelled before it started");
    pgn_error eerr;
    if (pgd_events_job_changed(s->events, s->store, id, NULL, &eerr) < 0)
        fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, eerr.message);
    return 0;
}

int pgd_scheduler_resume(pgd_scheduler *s, int64_t id, pgd_job *job, pgn_error *err) {
    pthread_rwlock_wrlock(&s->admit); /* its "queued" goes out before any worker's "running" */
    int rc = pgd_store_job_resume(s->store, id, job, err);
    if (rc == 0) {
        pgd_events_job_log(s->events, s->store, id, 0, "info", "resumed on request: queued again on %s%s", job->device,
                           job->attempts == 0             ? ""
                           : job->kind == PGN_JOB_TRAIN ? "; it continues from its last checkpoint"
                                                        : "; it runs again from the start");
        pgn_error eerr;
        if (pgd_events_job_changed(s->events, s->store, id, NULL, &eerr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, eerr.message);
    }
    pthread_rwlock_unlock(&s->admit);
    if (rc == 0) pgd_scheduler_notify(s, job->device);
    return rc;
}

void pgd_scheduler_admit_lock(pgd_scheduler *s) { pthread_rwlock_rdlock(&s->admit); }
void pgd_scheduler_admit_unlock(pgd_scheduler *s) { pthread_rwlock_unlock(&s->admit); }

void pgd_scheduler_notify(pgd_scheduler *s, const char *device) {
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n; i++) {
        worker *w = &s->workers[i];
        if (!sched_serves(w, device)) continue;
        sched_wake(w);
    }
    pthread_mutex_unlock(&s->lock);
}

/* devices[i]'s description and profile. */
static json_t *device_json(pgd_scheduler *s, size_t i) {
    json_t *d = pgn_device_info_json(&s->devices[i]);
    if (!json_is_object(d)) {
        json_decref(d);
        d = json_pack("{s:s}", "id", s->devices[i].id);
    }
    pthread_mutex_lock(&s->lock);
    pgn_device_profile profile = s->workers[i].profile;
    pthread_mutex_unlock(&s->lock);
    json_object_set_new(d, "profile", pgn_device_profile_json(&profile));
    return d;
}

json_t *pgd_scheduler_profiles_json(pgd_scheduler *s) {
    json_t *arr = json_array();
    for (size_t i = 0; i < s->n; i++) json_array_append_new(arr, device_json(s, i));
    return arr;
}

json_t *pgd_scheduler_devices_json(pgd_scheduler *s, pgn_error *err) {
    json_t *counts;
    if (pgd_store_queued_counts(s->store, &counts, err) < 0) return NULL;
    json_t *arr = json_array();
    for (size_t i = 0; i < s->n; i++) {
        json_t *d = device_json(s, i);
        json_t *q = json_object_get(counts, s->devices[i].id);
        json_object_set_new(d, "queued", json_integer(q ? json_integer_value(q) : 0));
        /* running_job: the first runner's that runs one; running_jobs: every one, by runner */
        json_t *all = json_array();
        for (size_t k = 0; k < s->workers[i].n_runners; k++) {
            int64_t running = atomic_load(&s->workers[i].runners[k].running_job);
            if (running) json_array_append_new(all, json_integer(running));
        }
        json_object_set_new(d, "running_job", json_array_size(all) ? json_incref(json_array_get(all, 0)) : json_null());
        json_object_set_new(d, "running_jobs", all);
        json_object_set_new(d, "jobs_at_once", json_integer((json_int_t)s->workers[i].n_runners));
        json_object_set_new(d, "busy_seconds", json_real(sched_busy_seconds(s, &s->workers[i])));
        json_array_append_new(arr, d);
    }
    json_decref(counts);
    return arr;
}

json_t *pgd_scheduler_utilisation_json(pgd_scheduler *s) {
    pgd_busy_history *h = malloc(sizeof *h); /* 6 KiB: not on a request thread's stack */
    if (!h) return NULL;
    int64_t now = pgn_now_ns(); /* one instant for every device: their intervals line up */
    json_t *devices = json_array();
    for (size_t i = 0; i < s->n; i++) {
        worker *w = &s->workers[i];
        pthread_mutex_lock(&s->lock);
        pgd_busy_ring_read(&w->busy_ring, now, w->run_started_ns, h);
        pthread_mutex_unlock(&s->lock);
        json_t *busy = json_array();
        for (size_t k = 0; k < h->n; k++) json_array_append_new(busy, json_real(h->busy_s[k]));
        json_array_append_new(devices, json_pack("{s:s, s:o}", "id", s->devices[i].id,
                                                 "busy_seconds", busy));
    }
    json_t *out = json_pack("{s:f, s:f, s:o}", "interval_seconds", PGD_UTIL_INTERVAL_NS * 1e-9,
                            "last_interval_seconds", h->last_s, "devices", devices);
    free(h);
    return out;
}
