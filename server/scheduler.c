/* scheduler.c: owns placement (which device a job goes to) and the device workers.
 * Each device has one worker thread that opens the device once, on its first job, then takes
 * the oldest queued job of that device from the store, runs it through the engine and records
 * metrics, progress and the outcome. Shutdown stops a running job at a step boundary and
 * puts it back in the queue, as a restart would. */
#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Progress is a UI nicety: a few writes per second are enough and keep the store free. */
#define PROGRESS_INTERVAL_NS 250000000LL
/* Timed repeats of each calibration case: enough for a median, few enough for a quick start. */
#define CALIBRATION_REPEATS 3

typedef struct worker {
    pgd_scheduler *sched;
    const pgn_device_info *info; /* points into sched->devices */
    pthread_t thread;
    bool started;
    pthread_cond_t cond;
    bool wake;                   /* guarded by sched->lock: a job may be waiting */
    _Atomic int64_t running_job; /* 0 when idle */
    /* Owned by the worker thread alone. */
    pgn_device *dev;
    bool open_tried;
    pgn_error open_err; /* why opening failed, when dev is NULL after trying */
} worker;

struct pgd_scheduler {
    pgd_store *store;
    pthread_mutex_t lock;
    atomic_bool stopping;
    pgn_device_info *devices; /* the OpenCL devices, then host */
    size_t n;
    worker *workers; /* workers[i] serves devices[i] */
    pgn_run_options run_opts; /* data_dir points into the server's config, which outlives us */
    bool calibrate;           /* measure devices without benchmark rows at start */
};

static bool is_host(const pgn_device_info *info) { return info->type == PGN_DEVICE_HOST; }

/* ---- hooks the engine calls while a job runs -------------------------------------------- */

typedef struct run_ctx {
    worker *w;
    int64_t job_id;
    struct timespec last_progress;
    bool wrote_progress;
} run_ctx;

static void hook_metric(void *ctx, const char *name, int64_t step, double value) {
    run_ctx *r = ctx;
    pgn_error err;
    if (pgd_store_metric_add(r->w->sched->store, r->job_id, name, step, value, &err) < 0)
        fprintf(stderr, "paragond: job %lld: metric %s step %lld not stored: %s\n",
                (long long)r->job_id, name, (long long)step, err.message);
}

static int64_t elapsed_ns(const struct timespec *a, const struct timespec *b) {
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

static void hook_progress(void *ctx, double fraction) {
    run_ctx *r = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (r->wrote_progress && fraction < 1.0 &&
        elapsed_ns(&r->last_progress, &now) < PROGRESS_INTERVAL_NS)
        return;
    r->last_progress = now;
    r->wrote_progress = true;
    pgn_error err;
    if (pgd_store_job_progress(r->w->sched->store, r->job_id, fraction, &err) < 0)
        fprintf(stderr, "paragond: job %lld: progress not stored: %s\n", (long long)r->job_id,
                err.message);
}

static bool hook_should_stop(void *ctx) {
    run_ctx *r = ctx;
    return atomic_load(&r->w->sched->stopping);
}

/* ---- the worker ------------------------------------------------------------------------- */

/* Opens the device on first use; a failure (e.g. a kernel build error) is remembered and
 * fails every job sent to this device, rather than rebuilding for each. */
static int worker_device(worker *w, pgn_error *err) {
    if (is_host(w->info) || w->dev) return 0;
    if (!w->open_tried) {
        w->open_tried = true;
        pgn_error_clear(&w->open_err);
        if (pgn_device_open(w->info, &w->dev, &w->open_err) == 0) return 0;
        w->dev = NULL;
        fprintf(stderr, "paragond: device %s cannot be opened: %s\n", w->info->id,
                w->open_err.message);
    }
    *err = w->open_err;
    return -1;
}

/* mkdir -p of <data_dir>/jobs/<id> (data_dir itself exists: the server created it). */
static int make_job_dir(const char *data_dir, const char *job_dir, pgn_error *err) {
    char jobs[PGN_PATH_MAX * 2];
    snprintf(jobs, sizeof jobs, "%s/jobs", data_dir);
    const char *dirs[2] = {jobs, job_dir};
    for (int i = 0; i < 2; i++) {
        if (mkdir(dirs[i], 0755) != 0 && errno != EEXIST) {
            pgn_error_set(err, "io", "", "cannot create '%s': %s", dirs[i], strerror(errno));
            return -1;
        }
    }
    return 0;
}

static void run_job(worker *w, int64_t id, const json_t *spec_json) {
    pgd_scheduler *s = w->sched;
    pgn_job_spec spec;
    pgn_error err;
    json_t *result = NULL;
    pgn_error_clear(&err);
    run_ctx ctx = {.w = w, .job_id = id};
    pgn_run_hooks hooks = {.ctx = &ctx,
                           .on_metric = hook_metric,
                           .on_progress = hook_progress,
                           .should_stop = hook_should_stop};

    /* Each job keeps its checkpoint in <data dir>/jobs/<id>/; a job that runs again after a
     * restart resumes from it (bit-identically: the engine's resume is deterministic). */
    char job_dir[PGN_PATH_MAX * 2];
    snprintf(job_dir, sizeof job_dir, "%s/jobs/%lld", s->run_opts.data_dir, (long long)id);
    pgn_run_options opts = s->run_opts;
    opts.checkpoint_dir = job_dir;
    opts.resume = true;

    atomic_store(&w->running_job, id);
    int rc = pgn_spec_parse(spec_json, &spec, &err);
    if (rc == 0) rc = make_job_dir(s->run_opts.data_dir, job_dir, &err);
    if (rc == 0) rc = worker_device(w, &err);
    if (rc == 0) rc = pgn_job_run(&spec, w->dev, &opts, &hooks, &result, &err);
    if (rc == 0 && !json_is_object(result)) {
        rc = -1;
        pgn_error_set(&err, "internal", "", "the engine returned no result object");
    }

    /* A bench job's rows are stored in the transaction that marks it succeeded; when they
     * cannot be, the job fails with the reason. */
    bool bench = rc == 0 && spec.kind == PGN_JOB_BENCH;
    if (bench && pgd_store_bench_finish(s->store, id, result, &err) < 0) rc = -1;

    pgn_error serr;
    if (rc < 0 && atomic_load(&s->stopping) && strcmp(err.code, "cancelled") == 0) {
        /* Interrupted by shutdown, not by the job: it runs again after the restart. */
        if (pgd_store_job_requeue(s->store, id, &serr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
    } else if (rc == 0) {
        if (!bench &&
            pgd_store_job_finish(s->store, id, PGD_JOB_SUCCEEDED, result, NULL, &serr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
    } else {
        json_t *e = pgd_error_json(&err);
        fprintf(stderr, "paragond: job %lld on %s failed: %s\n", (long long)id, w->info->id,
                err.message);
        if (pgd_store_job_finish(s->store, id, PGD_JOB_FAILED, NULL, e, &serr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
        json_decref(e);
    }
    json_decref(result);
    pgn_spec_free(&spec);
    atomic_store(&w->running_job, 0);
}

/* A first start on a device without benchmark rows measures it briefly (a second or two: the
 * training GEMM shape, one mid-sized inet program, the launch cost), so "auto" has numbers. */
static void calibrate(worker *w) {
    pgd_scheduler *s = w->sched;
    json_t *rows = NULL;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgd_store_bench_latest(s->store, w->info->id, NULL, &rows, &err) < 0) {
        fprintf(stderr, "paragond: %s: cannot read benchmark rows: %s\n", w->info->id, err.message);
        return;
    }
    bool have = json_array_size(rows) > 0;
    json_decref(rows);
    if (have || worker_device(w, &err) < 0) return;
    static const struct {
        const char *suite, *cases;
    } runs[] = {{"gemm", "fwd1"}, {"inet", "fib"}, {"tensor-micro", "add-1K"}};
    rows = json_array();
    int rc = 0;
    for (size_t i = 0; i < sizeof runs / sizeof *runs && rc == 0 && !atomic_load(&s->stopping); i++) {
        pgn_bench_spec b = {.n_cases = 1, .repeats = CALIBRATION_REPEATS};
        snprintf(b.suite, sizeof b.suite, "%s", runs[i].suite);
        snprintf(b.cases[0], sizeof b.cases[0], "%s", runs[i].cases);
        rc = pgn_bench_run(&b, w->dev, &s->run_opts, NULL, rows, &err);
    }
    if (rc == 0 && !atomic_load(&s->stopping)) rc = pgd_store_bench_add(s->store, 0, rows, &err);
    if (rc < 0) fprintf(stderr, "paragond: calibrating %s failed: %s\n", w->info->id, err.message);
    else fprintf(stderr, "paragond: calibrated %s (%zu benchmark rows)\n", w->info->id, json_array_size(rows));
    json_decref(rows);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    pgd_scheduler *s = w->sched;
    if (s->calibrate) calibrate(w);
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!w->wake && !atomic_load(&s->stopping)) pthread_cond_wait(&w->cond, &s->lock);
        w->wake = false;
        pthread_mutex_unlock(&s->lock);
        /* Drain this device's queue; a notify that arrives meanwhile costs one empty claim. */
        while (!atomic_load(&s->stopping)) {
            int64_t id;
            json_t *spec;
            pgn_error err;
            if (pgd_store_job_claim(s->store, w->info->id, &id, &spec, &err) < 0) {
                /* The job stays queued; the next submission retries. */
                fprintf(stderr, "paragond: worker %s: %s\n", w->info->id, err.message);
                break;
            }
            if (id == 0) break;
            run_job(w, id, spec);
            json_decref(spec);
        }
        if (atomic_load(&s->stopping)) break;
    }
    if (w->dev) pgn_device_close(w->dev);
    w->dev = NULL;
    return NULL;
}

/* ---- placement -------------------------------------------------------------------------- */

static int place(const pgd_scheduler *s, const char *want, pgn_device_info *out,
                 pgn_error *err) {
    pgn_error e;
    pgn_error_clear(&e);
    if (pgn_device_select(want, s->devices, s->n, out, &e) == 0) return 0;
    if (strncmp(e.message, "device", 6) == 0)
        pgn_error_set(err, "invalid_spec", "device", "%s", e.message);
    else
        pgn_error_set(err, "invalid_spec", "device", "device: %s", e.message);
    return -1;
}

int pgd_scheduler_place(pgd_scheduler *s, const char *want, pgn_device_info *out,
                        pgn_error *err) {
    return place(s, want, out, err);
}

/* The device's rates from its latest benchmark rows (estimated from its properties while it has
 * none, or when the store cannot say). */
static void device_rates(pgd_scheduler *s, const pgn_device_info *info, pgn_device_rates *r) {
    json_t *rows = NULL;
    pgn_error err;
    if (pgd_store_bench_latest(s->store, info->id, NULL, &rows, &err) < 0) rows = NULL;
    if (rows) pgn_device_rates_from_rows(info, rows, r);
    else pgn_device_rates_estimate(info, r);
    json_decref(rows);
}

/* One candidate: the job's estimate there plus the work already queued or running there. */
static json_t *candidate(pgd_scheduler *s, const pgn_job_spec *spec, const pgn_device_info *info,
                         double *total) {
    pgn_device_rates r;
    pgn_job_estimate e;
    device_rates(s, info, &r);
    pgn_job_estimate_on(spec, &r, &e);
    double queued = 0;
    pgn_error err;
    if (pgd_store_queue_seconds(s->store, info->id, &queued, &err) < 0) queued = 0;
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
        if (place(s, spec->device, out, err) < 0) return -1;
        double total;
        json_t *c = candidate(s, spec, out, &total);
        *estimate = json_pack("{s:s, s:o}", "reason", "asked for by name", "candidates", json_pack("[O]", c));
        json_object_update(*estimate, c);
        json_decref(c);
        return *estimate ? 0 : -1;
    }
    /* auto: the OpenCL device that would finish it first, counting what it already has to do;
     * the host pseudo-device only when there is no OpenCL device (it is asked for by name). */
    json_t *cands = json_array();
    const pgn_device_info *best = NULL;
    json_t *best_c = NULL;
    double best_total = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (is_host(&s->devices[i]) && s->n > 1) continue;
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
    return 0;
}

static const worker *find_worker(const pgd_scheduler *s, const char *id) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->devices[i].id, id) == 0) return &s->workers[i];
    return NULL;
}

/* Jobs queued by an earlier run on a device that is gone (a GPU removed, a driver changed)
 * are placed again from what they asked for, or fail saying why. */
static int replace_orphans(pgd_scheduler *s, pgn_error *err) {
    json_t *queued;
    if (pgd_store_queued_jobs(s->store, &queued, err) < 0) return -1;
    size_t i;
    json_t *job;
    json_array_foreach(queued, i, job) {
        int64_t id = json_integer_value(json_object_get(job, "id"));
        const char *device = json_string_value(json_object_get(job, "device"));
        const char *want = json_string_value(json_object_get(job, "device_requested"));
        if (device && find_worker(s, device)) continue;
        pgn_device_info info;
        pgn_error e, serr;
        if (want && place(s, want, &info, &e) == 0) {
            fprintf(stderr, "paragond: job %lld: device %s is gone, placed on %s\n",
                    (long long)id, device ? device : "?", info.id);
            if (pgd_store_job_reassign(s->store, id, info.id, &serr) < 0)
                fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
        } else {
            if (!want) pgn_error_set(&e, "invalid_spec", "device", "device: not recorded");
            fprintf(stderr, "paragond: job %lld cannot be placed again: %s\n", (long long)id,
                    e.message);
            json_t *ej = pgd_error_json(&e);
            if (pgd_store_job_finish(s->store, id, PGD_JOB_FAILED, NULL, ej, &serr) < 0)
                fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
            json_decref(ej);
        }
    }
    json_decref(queued);
    return 0;
}

/* ---- lifecycle -------------------------------------------------------------------------- */

int pgd_scheduler_start(pgd_store *store, const pgn_device_info *devices, size_t count,
                        const char *data_dir, bool calibrate, pgd_scheduler **out, pgn_error *err) {
    *out = NULL;
    pgd_scheduler *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->store = store;
    s->calibrate = calibrate;
    s->run_opts.data_dir = data_dir;
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->stopping, false);
    s->n = count + 1;
    s->devices = calloc(s->n, sizeof *s->devices);
    s->workers = calloc(s->n, sizeof *s->workers);
    if (!s->devices || !s->workers) {
        free(s->devices);
        free(s->workers);
        pthread_mutex_destroy(&s->lock);
        free(s);
        goto oom;
    }
    if (count) memcpy(s->devices, devices, count * sizeof *devices);
    pgn_device_info_host(&s->devices[count]);
    for (size_t i = 0; i < s->n; i++) {
        worker *w = &s->workers[i];
        w->sched = s;
        w->info = &s->devices[i];
        w->wake = true; /* look for jobs queued before we started */
        atomic_init(&w->running_job, 0);
        pthread_cond_init(&w->cond, NULL);
    }
    if (replace_orphans(s, err) < 0) {
        pgd_scheduler_stop(s);
        return -1;
    }
    for (size_t i = 0; i < s->n; i++) {
        worker *w = &s->workers[i];
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            pgn_error_set(err, "internal", "", "scheduler: cannot start the worker of %s: %s",
                          w->info->id, strerror(rc));
            pgd_scheduler_stop(s);
            return -1;
        }
        w->started = true;
    }
    *out = s;
    return 0;
oom:
    pgn_error_set(err, "internal", "", "scheduler: out of memory");
    return -1;
}

void pgd_scheduler_stop(pgd_scheduler *s) {
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    atomic_store(&s->stopping, true);
    for (size_t i = 0; i < s->n; i++) pthread_cond_signal(&s->workers[i].cond);
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < s->n; i++) {
        if (s->workers[i].started) pthread_join(s->workers[i].thread, NULL);
        pthread_cond_destroy(&s->workers[i].cond);
    }
    pthread_mutex_destroy(&s->lock);
    free(s->workers);
    free(s->devices);
    free(s);
}

void pgd_scheduler_notify(pgd_scheduler *s, const char *device_id) {
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->devices[i].id, device_id) != 0) continue;
        pthread_mutex_lock(&s->lock);
        s->workers[i].wake = true;
        pthread_cond_signal(&s->workers[i].cond);
        pthread_mutex_unlock(&s->lock);
        return;
    }
}

json_t *pgd_scheduler_devices_json(pgd_scheduler *s, pgn_error *err) {
    json_t *counts;
    if (pgd_store_queued_counts(s->store, &counts, err) < 0) return NULL;
    json_t *arr = json_array();
    for (size_t i = 0; i < s->n; i++) {
        json_t *d = pgn_device_info_json(&s->devices[i]);
        if (!json_is_object(d)) {
            json_decref(d);
            d = json_pack("{s:s}", "id", s->devices[i].id);
        }
        json_t *q = json_object_get(counts, s->devices[i].id);
        json_object_set_new(d, "queued", json_integer(q ? json_integer_value(q) : 0));
        int64_t running = atomic_load(&s->workers[i].running_job);
        json_object_set_new(d, "running_job", running ? json_integer(running) : json_null());
        json_array_append_new(arr, d);
    }
    json_decref(counts);
    return arr;
}
