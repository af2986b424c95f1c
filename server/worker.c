/* worker.c: owns a device's runner threads (a worker has --jobs-per-device of them). Each opens
 * the device for itself once, on its first job (applying its stored tuning, or calibrating it),
 * then takes the device's next queued job from the store (beside other runs, only one whose
 * memory fits), runs it through the engine with hooks that record metrics, progress and log
 * lines, and records the outcome, holding it while the store refuses writes. Shutdown stops a
 * running job at a step boundary (a train job checkpoints that exact step) and puts it back in
 * the queue, as a restart would; a cancel request stops it the same way and ends it cancelled. */
#include "scheduler_internal.h"

#include "admission.h"
#include "events.h"
#include "launcher.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What an inet program writes to stdout and stderr, kept in its result: the rest is counted. */
#define PGD_INET_OUTPUT_MAX (64u << 10)
/* Progress is a UI nicety: a few writes per second are enough and keep the store free. */
#define PROGRESS_INTERVAL_NS 250000000LL
/* A run's metrics reach the store in batches, one transaction each: at a step boundary once this
 * long has passed since the last batch (at once when steps are slower), when PENDING_METRICS are
 * waiting, before a checkpoint and at the run's end. The event stream has each value at once. */
#define METRICS_FLUSH_NS 100000000LL
#define PENDING_METRICS 64
#define PENDING_NAME_MAX 64
/* Timed repeats of each calibration case: enough for a median, few enough for a quick start. */
#define CALIBRATION_REPEATS 3
/* Retrying a job's end while the store refuses writes: quick at first (a lock held elsewhere
 * passes in milliseconds), then every 2 s (a full disk waits for a person). */
#define END_RETRY_FIRST_MS 50
#define END_RETRY_MAX_MS 2000

/* ---- hooks the engine calls while a job runs -------------------------------------------- */

typedef struct run_ctx {
    runner *rn;
    int64_t job_id;
    int64_t attempt;            /* the run's: every write names it (store.h, "runs") */
    struct timespec last_progress;
    bool wrote_progress;
    bool cancel_checked;        /* the store was asked at least once */
    uint_fast64_t cancel_seen;  /* sched->cancel_gen when it was last asked */
    bool cancel;                /* a cancel of this job was requested */
    int64_t expected_interactions; /* inet: what an earlier run of its program needed, 0: unknown */
    pgn_measured_rates rates;   /* bench: what the run measured, stored with its rows */
    int64_t unstored;           /* metrics and progress the store did not take since it last did */
    pgd_metric pending[PENDING_METRICS]; /* metrics not yet written (names in pending_names) */
    char pending_names[PENDING_METRICS][PENDING_NAME_MAX];
    size_t n_pending;
    int64_t flushed_ns;         /* when the last batch was written (pgn_now_ns) */
} run_ctx;

static void hook_progress(void *ctx, double fraction);

/* A write the store refused because this run is no longer the job's (another attempt took it):
 * the run stops at its next step, said once. Any other failure is the caller's to report. */
static bool run_refused(run_ctx *r, const pgn_error *err) {
    if (err->code != PGN_E_CONFLICT) return false;
    if (!atomic_exchange(&r->rn->lease_lost, true))
        fprintf(stderr, "paragond: job %lld: %s; this run stops now\n", (long long)r->job_id, err->message);
    return true;
}

/* How a write of n values, metric `name` at step first (NULL: of progress), went (rc, err):
 * while the store is away (a PostgreSQL restart) a fast run makes hundreds, so the first failure
 * is said, then how many were lost once it takes them again. */
static void note_write(run_ctx *r, int rc, const pgn_error *err, const char *name, int64_t step, size_t n) {
    if (rc == 0) {
        if (r->unstored > 0)
            fprintf(stderr, "paragond: job %lld: the store takes its metrics again (%lld not stored)\n",
                    (long long)r->job_id, (long long)r->unstored);
        r->unstored = 0;
        return;
    }
    if (run_refused(r, err)) return;
    r->unstored += (int64_t)n;
    if (r->unstored > (int64_t)n) return;
    char what[96] = "progress";
    if (name) snprintf(what, sizeof what, "metric %.48s step %lld", name, (long long)step);
    fprintf(stderr, "paragond: job %lld: %s not stored: %s (said once until the store takes them again)\n",
            (long long)r->job_id, what, err->message);
}

/* Writes the pending metrics in one transaction. */
static void flush_metrics(run_ctx *r) {
    if (r->n_pending == 0) return;
    pgn_error err;
    int rc = pgd_store_metrics_add(r->rn->sched->store, r->job_id, r->attempt, r->pending, r->n_pending, &err);
    note_write(r, rc, &err, r->pending[0].name, r->pending[0].step, r->n_pending);
    r->n_pending = 0;
    r->flushed_ns = pgn_now_ns();
}

static void hook_metric(void *ctx, const char *name, int64_t step, double value) {
    run_ctx *r = ctx;
    /* An inet reducer reports no fraction (none is known before the normal form); a program run
     * before needs the interactions it needed then, which makes the count so far a fraction. Short
     * of 1 until it ends: the end says succeeded, not the count. */
    if (r->expected_interactions > 0 && !strcmp(name, "interactions")) {
        double f = value / (double)r->expected_interactions;
        hook_progress(ctx, f < 0.99 ? f : 0.99);
    }
    if (strlen(name) >= PENDING_NAME_MAX) { /* not kept: written alone */
        flush_metrics(r);
        pgn_error err;
        int rc = pgd_store_metric_add(r->rn->sched->store, r->job_id, r->attempt, name, step, value, &err);
        note_write(r, rc, &err, name, step, 1);
    } else {
        if (r->n_pending == PENDING_METRICS) flush_metrics(r);
        char *kept = r->pending_names[r->n_pending];
        snprintf(kept, PENDING_NAME_MAX, "%s", name);
        r->pending[r->n_pending++] = (pgd_metric){kept, step, value};
    }
    pgd_events_metric(r->rn->sched->events, r->job_id, name, step, value);
}

static void hook_text(void *ctx, int64_t index, const char *text, size_t len) {
    run_ctx *r = ctx;
    pgd_events_text(r->rn->sched->events, r->job_id, index, text, len);
}

/* Adds what a bench run measured to a record that may hold an earlier run's (a calibration runs
 * several suites, each measuring some figures). */
static void keep_rates(pgn_measured_rates *into, const pgn_measured_rates *r) {
#define KEEP(figure)                                                                               \
    if (r->figure > 0) into->figure = r->figure
    snprintf(into->device, sizeof into->device, "%s", r->device);
    KEEP(gflops);
    KEEP(mips);
    KEEP(launch_us);
    KEEP(train.step_launch_us);
    KEEP(train.mlp_gflops);
    KEEP(train.mlp_setup_s);
    KEEP(train.load_mbps);
    KEEP(train.gpt_gflops);
    KEEP(train.gpt_setup_s);
#undef KEEP
}

static void hook_rates(void *ctx, const pgn_measured_rates *rates) {
    run_ctx *r = ctx;
    keep_rates(&r->rates, rates);
}

static void hook_log(void *ctx, const char *line) {
    run_ctx *r = ctx;
    pgd_events_job_log(r->rn->sched->events, r->rn->sched->store, r->job_id, r->attempt, "info", "%s", line);
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
    int rc = pgd_store_job_progress(r->rn->sched->store, r->job_id, r->attempt, fraction, &err);
    note_write(r, rc, &err, NULL, 0, 1);
    pgd_events_progress(r->rn->sched->events, r->job_id, fraction);
}

/* Stops at shutdown, when this job's cancel was requested, or when its lease was lost (another
 * node may run it now: store.h, "runs"). The first poll always asks the
 * store (a cancel may have come between the claim and the run); later ones only after a cancel
 * request somewhere. The generation is read before the store, so a request committed after the
 * read bumps it again and is seen at the next poll. */
static bool hook_should_stop(void *ctx) {
    run_ctx *r = ctx;
    pgd_scheduler *s = r->rn->sched;
    /* a step boundary: its metrics go to the store unless a batch went less than
     * METRICS_FLUSH_NS ago (then with the next steps') */
    if (r->n_pending && pgn_now_ns() - r->flushed_ns >= METRICS_FLUSH_NS) flush_metrics(r);
    uint_fast64_t gen = atomic_load(&s->cancel_gen);
    if (!r->cancel && (!r->cancel_checked || gen != r->cancel_seen)) {
        r->cancel_checked = true;
        r->cancel_seen = gen;
        pgn_error err;
        bool requested = false;
        if (pgd_store_job_cancel_requested(s->store, r->job_id, &requested, &err) < 0)
            fprintf(stderr, "paragond: job %lld: cannot read its cancel request: %s\n",
                    (long long)r->job_id, err.message);
        r->cancel = requested;
    }
    return r->cancel || atomic_load(&s->stopping) || atomic_load(&r->rn->lease_lost) ||
           atomic_load(&r->rn->preempt_job) == r->job_id;
}

/* A checkpoint is written only while the run holds its job: its lease, renewed here, keeps any
 * other run off the job (and its files) for a whole lease from now. When the store cannot be
 * asked, the lease renewed last still holds for the rest of its time (half of it, for margin). */
static bool hook_may_commit(void *ctx) {
    run_ctx *r = ctx;
    runner *rn = r->rn;
    flush_metrics(r); /* every metric of the steps a checkpoint holds is stored before it */
    if (atomic_load(&rn->lease_lost)) return false;
    bool held = false;
    pgn_error err;
    if (pgd_store_lease_renew(rn->sched->store, r->job_id, r->attempt, &held, &err) < 0) {
        bool holds = pgn_now_ns() - atomic_load(&rn->lease_renewed_ns) < rn->sched->lease_ms * 500000LL;
        fprintf(stderr, "paragond: job %lld: its lease cannot be renewed (%s): checkpoint %s\n",
                (long long)r->job_id, err.message, holds ? "written within the lease it holds" : "not written");
        return holds;
    }
    if (!held) { /* said with "stops now" as the lease thread says it, whichever sees it first */
        bool first = !atomic_exchange(&rn->lease_lost, true);
        fprintf(stderr, "paragond: job %lld: checkpoint not written: attempt %lld no longer holds the job%s\n",
                (long long)r->job_id, (long long)r->attempt, first ? "; this run stops now" : "");
        return false;
    }
    atomic_store(&rn->lease_renewed_ns, pgn_now_ns());
    return true;
}

/* ---- the device ------------------------------------------------------------------------- */

/* The device's tuning (device_tunings): the stored one when it fits its driver and these
 * kernels, else (unless calibration is off) a calibration's, stored; set on the opened device. */
static void apply_tuning(runner *rn) {
    pgd_scheduler *s = rn->sched;
    pgn_kernel_family family = pgn_device_get_profile(rn->dev)->family[PGN_OPS_GEMM];
    pgn_device_tuning t;
    bool found = false;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgd_store_tuning_get(s->store, rn->info->id, family, &t, &found, &err) < 0) {
        fprintf(stderr, "paragond: %s: cannot read its tuning: %s\n", rn->info->id, err.message);
        return;
    }
    bool fits = found && pgn_device_tuning_fits(&t, rn->info, family);
    if (!fits && !s->calibrate) return; /* its type's defaults */
    if (!fits) {
        if (pgn_device_calibrate(rn->dev, PGN_CALIBRATION_BUDGET_S, PGN_CALIBRATION_REPEATS, NULL, &t, &err) < 0) {
            fprintf(stderr, "paragond: %s: calibrating failed: %s\n", rn->info->id, err.message);
            return;
        }
        if (pgd_store_tuning_put(s->store, &t, &err) < 0)
            fprintf(stderr, "paragond: %s: its tuning is not kept: %s\n", rn->info->id, err.message);
        if (t.too_slow)
            fprintf(stderr, "paragond: %s: too slow to calibrate within %.0f s: its type's defaults\n", rn->info->id,
                    PGN_CALIBRATION_BUDGET_S);
        else
            fprintf(stderr, "paragond: %s: tuned%s: GEMM tile %s (%.1f GFLOP/s)\n", rn->info->id,
                    found ? " again (its driver or the kernels changed)" : "", pgn_gemm_tile_name(t.gemm_tile),
                    t.gflops);
    }
    pgn_device_tune(rn->dev, &t);
}

/* Opens the device on first use; a failure (e.g. a kernel build error) is remembered and
 * fails every job sent to this device, rather than rebuilding for each. */
static int worker_device(runner *rn, pgn_error *err) {
    if (sched_is_host(rn->info) || rn->dev) return 0;
    if (!rn->open_tried) {
        rn->open_tried = true;
        pgn_error_clear(&rn->open_err);
        if (pgn_device_open(rn->info, &rn->dev, &rn->open_err) == 0) {
            apply_tuning(rn);
            pthread_mutex_lock(&rn->sched->lock);
            rn->w->profile = *pgn_device_get_profile(rn->dev);
            pthread_mutex_unlock(&rn->sched->lock);
            return 0;
        }
        rn->dev = NULL;
        fprintf(stderr, "paragond: device %s cannot be opened: %s\n", rn->info->id,
                rn->open_err.message);
    }
    *err = rn->open_err;
    return -1;
}

/* mkdir -p of <data_dir>/jobs/<id> (data_dir itself exists: the server created it). */
/* <data dir>/jobs, and job_dir in it (NULL: the first alone), made when missing. */
static int make_job_dir(const char *data_dir, const char *job_dir, pgn_error *err) {
    char jobs[PGN_PATH_MAX * 2];
    snprintf(jobs, sizeof jobs, "%s/jobs", data_dir);
    const char *dirs[2] = {jobs, job_dir};
    for (int i = 0; i < 2 && dirs[i]; i++) {
        if (mkdir(dirs[i], 0755) != 0 && errno != EEXIST) {
            pgn_error_set(err, PGN_E_IO, "", "cannot create '%s': %s", dirs[i], strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* ---- recording how a run ends ---------------------------------------------------------- */

/* How a run ended, as the store records it. */
typedef struct run_end {
    enum {
        END_FINISH,  /* succeeded, failed or cancelled */
        END_BENCH,   /* a bench job succeeded: its rows and rates with it */
        END_REQUEUE, /* stopped by shutdown: queued again */
    } kind;
    pgd_job_state state;             /* END_FINISH */
    const json_t *result;            /* END_FINISH of a success; END_BENCH: its rows */
    const pgn_error *error;          /* END_FINISH of a failure or a cancel */
    const pgn_measured_rates *rates; /* END_BENCH: what the run measured of the device */
    pgd_log_line *line;              /* END_FINISH: the line that tells it, stored with it */
    const pgd_metric *metrics;       /* END_FINISH: the run's last metrics, stored with it */
    size_t n_metrics;
} run_end;

static int write_end(pgd_scheduler *s, int64_t id, int64_t attempt, const run_end *end, pgn_error *err) {
    switch (end->kind) {
    case END_BENCH: return pgd_store_bench_finish(s->store, id, attempt, end->result, end->rates, err);
    case END_REQUEUE: return pgd_store_job_requeue(s->store, id, attempt, err);
    case END_FINISH: break;
    }
    return pgd_store_job_finish_with(s->store, id, attempt, end->state, end->result, end->error, end->line,
                                     end->metrics, end->n_metrics, err);
}

/* Sleeps up to ms, or less when the scheduler stops. */
static void pause_worker(runner *rn, int64_t ms) {
    pgd_scheduler *s = rn->sched;
    struct timespec until = sched_deadline(ms);
    pthread_mutex_lock(&s->lock);
    if (!atomic_load(&s->stopping)) pthread_cond_timedwait(&rn->w->cond, &s->lock, &until);
    pthread_mutex_unlock(&s->lock);
}

/* Writes a run's end. While the store cannot take writes (disk full, an I/O error: code
 * PGD_STORE_UNAVAILABLE) the worker holds the outcome and retries, with growing pauses, until
 * it can: the job stays running meanwhile and its result is not lost (the worker could claim
 * nothing else anyway: a claim is a write). Returns 0 once written (or when the job had already
 * ended: a conflict), -1 with err for any other failure, 1 when shutdown stopped the retries
 * (the job, still running in the store, is recovered at the next start). */
static int record_end(runner *rn, int64_t id, const run_end *end, pgn_error *err) {
    int64_t pause_ms = END_RETRY_FIRST_MS, waited_ms = 0;
    for (;;) {
        if (write_end(rn->sched, id, atomic_load(&rn->running_attempt), end, err) == 0) {
            /* the cost model's view of this device's queue holds the run as work to come: when
             * it was the last, a job placed just after this end would find the device busy for
             * the run's whole estimate (and go to the host) */
            sched_queue_drop(rn->sched, rn->w);
            if (waited_ms)
                fprintf(stderr, "paragond: job %lld: its end is recorded, %.1f s late\n",
                        (long long)id, (double)waited_ms / 1000.0);
            return 0;
        }
        if (err->code == PGN_E_CONFLICT) { /* it ended already, or its run is over (a lost lease) */
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, err->message);
            return 0;
        }
        if (err->code != PGN_E_STORE_UNAVAILABLE) return -1;
        if (atomic_load(&rn->sched->stopping)) {
            fprintf(stderr, "paragond: job %lld: its end is not recorded (%s); the next start "
                            "recovers it\n",
                    (long long)id, err->message);
            return 1;
        }
        if (!waited_ms)
            fprintf(stderr, "paragond: job %lld: cannot record its end (%s); retrying until the "
                            "store takes writes\n",
                    (long long)id, err->message);
        pause_worker(rn, pause_ms);
        waited_ms += pause_ms;
        pause_ms = pause_ms * 2 > END_RETRY_MAX_MS ? END_RETRY_MAX_MS : pause_ms * 2;
    }
}

/* The line that tells how a run ended (announce_end's words for it), into out; its level. */
static const char *end_line(pgd_job_state state, int64_t attempt, const json_t *result, const pgn_error *error,
                            char *out, size_t size) {
    switch (state) {
    case PGD_JOB_SUCCEEDED: {
        int64_t resumed = json_integer_value(json_object_get(result, "resumed_from_epoch"));
        char from[64] = "";
        if (resumed > 0) snprintf(from, sizeof from, ", resumed from epoch %" PRId64, resumed);
        snprintf(out, size, "succeeded (attempt %" PRId64 "%s)", attempt, from);
        return "info";
    }
    case PGD_JOB_FAILED:
        snprintf(out, size, "failed (attempt %" PRId64 "): %s: %s", attempt,
                 pgn_error_code_name(error ? error->code : PGN_E_INTERNAL), error ? error->message : "");
        return "error";
    case PGD_JOB_CANCELLED: snprintf(out, size, "cancelled (attempt %" PRId64 ")", attempt); return "warn";
    default: snprintf(out, size, "%s (attempt %" PRId64 ")", pgd_job_state_name(state), attempt); return "info";
    }
}

/* Records a run's end as state, with the line that tells it in the same transaction, and
 * publishes that line; true when the line was stored (and published). */
static bool finish_told(runner *rn, int64_t id, pgd_job_state state, const json_t *result, const pgn_error *error,
                        run_ctx *metrics, pgn_error *err, int *rc) {
    char text[sizeof error->message + 160];
    pgd_log_line line = {.text = text};
    line.level = end_line(state, atomic_load(&rn->running_attempt), result, error, text, sizeof text);
    run_end end = {.kind = END_FINISH, .state = state, .result = result, .error = error, .line = &line,
                   .metrics = metrics ? metrics->pending : NULL, .n_metrics = metrics ? metrics->n_pending : 0};
    *rc = record_end(rn, id, &end, err);
    if (*rc < 0 || line.seq == 0) return false; /* not recorded, or refused as over (a conflict) */
    pgd_events_job_log_stored(rn->sched->events, id, line.seq, line.level, text, line.time);
    return true;
}

/* Ends a run succeeded, failed or cancelled, with the run's last metrics when r has some (one
 * commit; else they are stored already). An outcome the store refuses for good (not for want of
 * space: it cannot be stored at all) ends the job failed, saying so, rather than leaving it
 * running without a worker. True when the line telling the end is out (else announce_end tells
 * it from the store). */
static bool record_outcome(runner *rn, int64_t id, pgd_job_state state, const json_t *result,
                           const pgn_error *error, run_ctx *r) {
    pgn_error err;
    int rc;
    bool told = finish_told(rn, id, state, result, error, r, &err, &rc);
    if (rc >= 0) {
        if (r) r->n_pending = 0;
        return told;
    }
    if (r) flush_metrics(r); /* alone, as far as the store takes them */
    fprintf(stderr, "paragond: job %lld: its outcome cannot be stored: %s\n", (long long)id,
            err.message);
    pgn_error why;
    pgn_error_clear(&why);
    pgn_error_set(&why, PGN_E_STORE, "", "the job ended %s but the store refused its outcome: %s",
                  pgd_job_state_name(state), err.message);
    told = finish_told(rn, id, PGD_JOB_FAILED, NULL, &why, NULL, &err, &rc);
    if (rc < 0) fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, err.message);
    return told;
}

/* Runs job id's claimed run; true when the line telling its end is out (record_outcome). */
static bool run_job(runner *rn, int64_t id, const json_t *spec_json, int64_t attempt) {
    pgd_scheduler *s = rn->sched;
    bool told = false;
    pgn_job_spec spec;
    pgn_error err;
    json_t *result = NULL;
    pgn_error_clear(&err);
    run_ctx ctx = {.rn = rn, .job_id = id, .attempt = attempt};
    pgn_run_hooks hooks = {.ctx = &ctx,
                           .on_metric = hook_metric,
                           .on_log = hook_log,
                           .on_progress = hook_progress,
                           .should_stop = hook_should_stop,
                           .on_text = hook_text,
                           .on_rates = hook_rates,
                           .may_commit = hook_may_commit};

    /* Each job keeps its checkpoint in <data dir>/jobs/<id>/; a job that runs again after a
     * restart resumes from it (bit-identically: the engine's resume is deterministic). */
    char job_dir[PGN_PATH_MAX * 2];
    pgd_scheduler_job_dir(s, id, job_dir, sizeof job_dir);
    pgn_run_options opts = s->run_opts;
    opts.checkpoint_dir = job_dir;
    /* Only a job that ran before resumes. A first run never does: a checkpoint already in its
     * directory belongs to another job that had the same id (a database started afresh over an
     * old data dir) and is removed. */
    opts.resume = attempt != 1;
    if (attempt == 1) {
        char stale[PGN_PATH_MAX * 2 + 32];
        snprintf(stale, sizeof stale, "%s/%s", job_dir, PGN_CHECKPOINT_FILE);
        bool removed = unlink(stale) == 0;
        snprintf(stale, sizeof stale, "%s/dist/committed", job_dir); /* a distributed job's */
        removed |= unlink(stale) == 0;
        if (removed)
            pgd_events_job_log(s->events, s->store, id, attempt, "warn",
                               "removed a checkpoint left in %s by an earlier job with this id", job_dir);
    }
    opts.checkpoint_on_stop = true; /* a shutdown loses no step; a cancel keeps what it learnt */

    atomic_store(&rn->running_job, id);
    int rc = pgn_spec_parse_stored(spec_json, &spec, &err);
    /* Train jobs write files (checkpoints); an inet program's IO stays in its directory, which
     * only its files or its first OPEN make (a directory per job would cost an inode each for
     * nothing), and its output goes to the log and the result. */
    if (rc == 0 && spec.kind == PGN_JOB_TRAIN)
        rc = make_job_dir(s->run_opts.data_dir, job_dir, &err);
    if (rc == 0 && spec.kind == PGN_JOB_INET) {
        pgn_error e;
        if (pgd_store_inet_expected(s->store, spec_json, &ctx.expected_interactions, &e) < 0)
            fprintf(stderr, "paragond: job %lld: no progress from an earlier run: %s\n", (long long)id, e.message);
        rc = make_job_dir(s->run_opts.data_dir, NULL, &err);
        opts.inet_io = PGN_INET_IO_CONFINED;
        opts.io_dir = job_dir;
        opts.io_output_max = PGD_INET_OUTPUT_MAX;
    }
    /* A generate job reads the checkpoint of the gpt job it names. */
    char source[PGN_PATH_MAX * 2 + 32];
    if (rc == 0 && spec.kind == PGN_JOB_GENERATE) {
        pgd_scheduler_job_dir(s, spec.generate.job, source, sizeof source);
        size_t len = strlen(source);
        snprintf(source + len, sizeof source - len, "/%s", PGN_CHECKPOINT_FILE);
        opts.source_checkpoint = source;
    }
    /* A distributed job runs as mpirun's ranks, which open their own devices (launcher.c); it
     * holds this worker meanwhile, as the work it places on this machine. */
    bool distributed = rc == 0 && spec.kind == PGN_JOB_TRAIN && spec.train.dist.ranks > 0;
    bool interrupted = false;
    if (rc == 0 && distributed) rc = pgd_launch_run(&spec, spec_json, &opts, &hooks, &result, &interrupted, &err);
    if (rc == 0 && !distributed) rc = worker_device(rn, &err);
    if (rc == 0 && !distributed) rc = pgn_job_run(&spec, rn->dev, &opts, &hooks, &result, &err);
    if (rc == 0 && !json_is_object(result)) {
        rc = -1;
        pgn_error_set(&err, PGN_E_INTERNAL, "", "the engine returned no result object");
    }
    /* a finished job's metrics are all stored: a success's in its end's transaction, any other
     * end's before it */
    bool succeeds = rc == 0 && spec.kind != PGN_JOB_BENCH && !atomic_load(&rn->lease_lost);
    if (!succeeds) flush_metrics(&ctx);

    /* A bench job's rows are stored in the transaction that marks it succeeded; when they
     * cannot be (a bad row), the job fails with the reason. */
    bool recorded = false;
    if (rc == 0 && spec.kind == PGN_JOB_BENCH) {
        int r = record_end(rn, id, &(run_end){.kind = END_BENCH, .result = result, .rates = &ctx.rates}, &err);
        if (r < 0) rc = -1;
        recorded = r >= 0;
    }

    bool stopped = rc < 0 && err.code == PGN_E_CANCELLED;
    if (recorded) {
    } else if (atomic_load(&rn->lease_lost)) {
        /* The run lost its lease (lease.c said why): the job is another run's now, or will be
         * once the store recovers it; this run writes nothing more (its writes would be refused). */
    } else if (stopped && ctx.cancel) {
        /* Stopped because someone asked: it ends cancelled, saying where it stopped. */
        char message[sizeof err.message];
        snprintf(message, sizeof message, "%s", err.message);
        pgn_error_set(&err, PGN_E_CANCELLED, "", "cancelled on request: %s", message);
        told = record_outcome(rn, id, PGD_JOB_CANCELLED, NULL, &err, NULL);
    } else if (stopped && (atomic_load(&s->stopping) || atomic_load(&rn->preempt_job) == id)) {
        /* Interrupted by shutdown, or preempted by a job of higher priority
         * (pgd_scheduler_preempt), not by the job: it runs again, from the checkpoint it just
         * wrote, after the restart or once its device takes it back (unless a cancel arrived
         * meanwhile: the store then ends it cancelled). */
        bool preempted = !atomic_load(&s->stopping);
        pgn_error serr;
        if (record_end(rn, id, &(run_end){.kind = END_REQUEUE}, &serr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
        else if (preempted)
            pgd_events_job_log(s->events, s->store, id, 0, "warn",
                               "preempted by job %" PRId64 " of higher priority (attempt %" PRId64
                               "); queued again, it resumes from its checkpoint",
                               atomic_load(&rn->preempted_by), attempt);
    } else if (rc == 0) {
        told = record_outcome(rn, id, PGD_JOB_SUCCEEDED, result, NULL, &ctx);
    } else if (interrupted) {
        /* A rank died, or mpirun could not reach one: run it again from its last committed
         * checkpoint, as after a crash of paragond (the same --max-attempts cap). */
        char what[sizeof err.message + 64];
        snprintf(what, sizeof what, "%s", err.message);
        pgd_recovery rec;
        pgn_error serr;
        if (pgd_store_job_interrupted(s->store, id, s->max_attempts, what, &rec, &serr) < 0)
            fprintf(stderr, "paragond: job %lld: %s\n", (long long)id, serr.message);
    } else {
        char *why = pgn_text_visible(err.message); /* it may quote the spec: no raw escapes */
        fprintf(stderr, "paragond: job %lld on %s failed: %s\n", (long long)id, rn->info->id,
                why ? why : err.message);
        free(why);
        told = record_outcome(rn, id, PGD_JOB_FAILED, NULL, &err, NULL);
    }
    json_decref(result);
    pgn_spec_free(&spec);
    atomic_store(&rn->running_job, 0);
    return told;
}

/* What a calibration's runs measured, and the scheduler whose stop ends them. */
typedef struct {
    pgn_measured_rates measured;
    pgd_scheduler *sched;
} calibration_ctx;

static void calibration_rates(void *ctx, const pgn_measured_rates *rates) {
    keep_rates(&((calibration_ctx *)ctx)->measured, rates);
}

static bool calibration_should_stop(void *ctx) { return atomic_load(&((calibration_ctx *)ctx)->sched->stopping); }

/* A first start on a device never measured measures it briefly, so "auto" has numbers: the
 * device's rates (a second or two: the training GEMM shape, one mid-sized inet program, the
 * launch cost) and, on a start that finds them missing (a store from before them too), what a
 * training run costs there (the cost suite's probes: a few seconds of short real runs). The rows
 * and what they measured are stored together. */
static void calibrate(runner *rn) {
    pgd_scheduler *s = rn->sched;
    pgn_measured_rates rates;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgd_store_rates_latest(s->store, rn->info->id, &rates, &err) < 0) {
        fprintf(stderr, "paragond: %s: cannot read its measured rates: %s\n", rn->info->id, err.message);
        return;
    }
    bool device = !(rates.gflops > 0 || rates.mips > 0 || rates.launch_us > 0);
    bool train = !(rates.train.step_launch_us > 0);
    if ((!device && !train) || worker_device(rn, &err) < 0) return;
    static const struct {
        const char *suite, *cases[3];
        bool train;
    } runs[] = {{"gemm", {"fwd1"}, false}, /* the tile: apply_tuning */
                {"inet", {"fib"}, false},
                {"tensor-micro", {"add-1K"}, false},
                {"train", {"cost-xor", "cost-fashion", "cost-gpt"}, true}}; /* one run: in that order */
    json_t *rows = json_array();
    calibration_ctx c = {.sched = s};
    pgn_run_hooks hooks = {.ctx = &c, .on_rates = calibration_rates, .should_stop = calibration_should_stop};
    int rc = rows ? 0 : -1;
    if (!rows) pgn_error_set(&err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
    for (size_t i = 0; i < sizeof runs / sizeof *runs && rc == 0 && !atomic_load(&s->stopping); i++) {
        if (!(runs[i].train ? train : device)) continue;
        pgn_bench_spec b = {.repeats = CALIBRATION_REPEATS};
        snprintf(b.suite, sizeof b.suite, "%s", runs[i].suite);
        for (; b.n_cases < 3 && runs[i].cases[b.n_cases]; b.n_cases++)
            snprintf(b.cases[b.n_cases], sizeof b.cases[b.n_cases], "%s", runs[i].cases[b.n_cases]);
        rc = pgn_bench_run(&b, rn->dev, &s->run_opts, &hooks, rows, &err);
    }
    bool stopped = atomic_load(&s->stopping); /* measured in part: measured again at the next start */
    if (rc == 0 && !stopped) rc = pgd_store_bench_add(s->store, 0, rows, &c.measured, &err);
    if (rc < 0 && !stopped) fprintf(stderr, "paragond: calibrating %s failed: %s\n", rn->info->id, err.message);
    else if (!stopped)
        fprintf(stderr, "paragond: calibrated %s (%zu benchmark rows)\n", rn->info->id, json_array_size(rows));
    json_decref(rows);
}

/* A run starts (running) or ends on w's device: the time one or more runs there joins its busy
 * total (two at once count once: the device was busy). */
static void busy_mark(worker *w, bool running) {
    int64_t now = pgn_now_ns();
    pthread_mutex_lock(&w->sched->lock);
    if (running) {
        if (w->active++ == 0) w->run_started_ns = now;
    } else if (--w->active == 0) {
        w->busy_ns += now - w->run_started_ns;
        pgd_busy_ring_add(&w->busy_ring, w->run_started_ns, now);
        w->run_started_ns = 0;
    }
    pthread_mutex_unlock(&w->sched->lock);
}

/* Finished runs plus the one in progress: grows steadily while a job runs. */
double sched_busy_seconds(pgd_scheduler *s, worker *w) {
    pthread_mutex_lock(&s->lock);
    int64_t ns = w->busy_ns + (w->run_started_ns ? pgn_now_ns() - w->run_started_ns : 0);
    pthread_mutex_unlock(&s->lock);
    return (double)ns * 1e-9;
}

/* ---- what a job's log and event stream hear from the scheduler ------------------------- */

/* The line a run starts with: "started" with the attempt (a later attempt resumes from the
 * job's checkpoint). The claim stores it in its transaction (pgd_claim_text). */
static void started_line(void *ctx, int64_t attempt, char *out, size_t size) {
    const runner *rn = ctx;
    snprintf(out, size, "started on %s (attempt %" PRId64 ")", rn->info->id, attempt);
}

/* A claimed job: its running state, then its first line, which the claim stored. */
static void announce_start(runner *rn, int64_t id, int64_t attempt, const pgd_log_line *line) {
    pgd_scheduler *s = rn->sched;
    pgn_error err;
    if (pgd_events_job_changed(s->events, s->store, id, NULL, &err) < 0)
        fprintf(stderr, "paragond: job %" PRId64 ": %s\n", id, err.message);
    char text[512];
    started_line(rn, attempt, text, sizeof text);
    pgd_events_job_log_stored(s->events, id, line->seq, line->level, text, line->time);
}

/* After a run: a line saying how it ended, then the state, in that order, because a job's event
 * stream closes at its final state. Read back from the store, so every ending is told the same
 * way whoever decided it (the engine, a cancel, shutdown), unless the run's own end was stored
 * with its line (told: record_outcome published it): then only the state. */
static void announce_end(runner *rn, int64_t id, int64_t run, bool told) {
    pgd_scheduler *s = rn->sched;
    pgd_job job;
    pgn_error err;
    if (!told && pgd_store_job_get(s->store, id, false, &job, &err) < 0) {
        fprintf(stderr, "paragond: job %" PRId64 ": %s\n", id, err.message);
        return;
    }
    if (!told) {
        int64_t attempt = job.attempts;
        if (attempt != run) { /* its lease was lost and another run took it: that run tells its end */
            pgd_job_release(&job);
            return;
        }
        char line[sizeof err.message + 160];
        switch (job.state) {
        case PGD_JOB_SUCCEEDED:
        case PGD_JOB_FAILED:
        case PGD_JOB_CANCELLED: {
            const char *level = end_line(job.state, attempt, job.result, job.has_error ? &job.error : NULL, line,
                                         sizeof line);
            pgd_events_job_log(s->events, s->store, id, 0, level, "%s", line);
            break;
        }
        case PGD_JOB_QUEUED: /* at shutdown; else the store's line said why (a distributed job's ranks) */
            if (atomic_load(&s->stopping))
                pgd_events_job_log(s->events, s->store, id, 0, "warn", "interrupted by shutdown (attempt %" PRId64 "); queued again", attempt);
            break;
        case PGD_JOB_RUNNING: break; /* its end could not be recorded: nothing to tell yet */
        }
        pgd_job_release(&job);
    }
    if (pgd_events_job_changed(s->events, s->store, id, NULL, &err) < 0)
        fprintf(stderr, "paragond: job %" PRId64 ": %s\n", id, err.message);
}

void pgd_scheduler_preempt(pgd_scheduler *s, const char *device, int64_t priority, int64_t by) {
    /* a device's own queue only: a job queued on a kind may go to another device of it; and
     * only when every runner there is busy (a free one takes the job, memory permitting): the
     * run of lowest priority below the job's, if it can stop at a step */
    worker *w = sched_worker_of(s, device);
    runner *rn = NULL;
    for (size_t k = 0; w && k < w->n_runners; k++) {
        runner *r = &w->runners[k];
        if (!atomic_load(&r->running_job)) return;
        if (atomic_load(&r->running_train) && atomic_load(&r->running_priority) < priority &&
            (!rn || atomic_load(&r->running_priority) < atomic_load(&rn->running_priority)))
            rn = r;
    }
    int64_t running = rn ? atomic_load(&rn->running_job) : 0;
    if (!running) return;
    int64_t none = 0;
    if (!atomic_compare_exchange_strong(&rn->preempt_job, &none, running)) return; /* already stopping */
    atomic_store(&rn->preempted_by, by);
    pgd_events_job_log(s->events, s->store, running, atomic_load(&rn->running_attempt), "warn",
                       "job %" PRId64 " (priority %" PRId64 ") preempts this one (priority %" PRId64
                       "): it stops at its next step, checkpointed",
                       by, priority, atomic_load(&rn->running_priority));
}

/* Whether another runner of rn's device holds a job now (under s->admit: claims set it there). */
static bool others_run(const runner *rn) {
    for (size_t k = 0; k < rn->w->n_runners; k++)
        if (k != rn->index && atomic_load(&rn->w->runners[k].running_job)) return true;
    return false;
}

/* The device memory a job (its stored spec) is estimated to hold on rn's device. */
static int64_t job_bytes(const runner *rn, const json_t *spec_json) {
    pgn_job_spec spec;
    pgn_error err;
    if (pgn_spec_parse_stored(spec_json, &spec, &err) < 0) return 0; /* it fails as it runs, saying why */
    int64_t bytes = (int64_t)pgd_job_bytes(&spec, rn->info);
    pgn_spec_free(&spec);
    return bytes;
}

/* Which job rn may claim beside the runs its device holds (caller holds s->admit): 0, any (the
 * queue's next, when nothing else runs there: admission judged a job alone on the device); else
 * the queue's next when its estimate and theirs fit the device's memory (-1: none fits, or
 * nothing is queued; it waits for a run's end). *bytes receives that job's estimate. */
static int64_t claimable(runner *rn, int64_t *bytes) {
    *bytes = 0;
    if (!others_run(rn)) return 0;
    pgd_scheduler *s = rn->sched;
    int64_t id;
    json_t *spec;
    pgn_error err;
    if (pgd_store_job_peek(s->store, rn->info->id, sched_kind_of(rn->info), &id, &spec, &err) < 0) {
        fprintf(stderr, "paragond: worker %s: %s\n", rn->info->id, err.message);
        return -1;
    }
    if (!id) return -1;
    *bytes = job_bytes(rn, spec);
    json_decref(spec);
    double held = 0, have = pgd_device_bytes(rn->info);
    for (size_t k = 0; k < rn->w->n_runners; k++)
        if (k != rn->index) held += (double)atomic_load(&rn->w->runners[k].running_bytes);
    return have <= 0 || held + (double)*bytes <= have ? id : -1;
}

void *sched_worker_main(void *arg) {
    runner *rn = arg;
    worker *w = rn->w;
    pgd_scheduler *s = rn->sched;
    /* the first runner measures the device; the others open it after that (its tuning stored) */
    if (rn->index == 0 && s->calibrate) {
        pthread_mutex_lock(&s->calibrating);
        calibrate(rn);
        pthread_mutex_unlock(&s->calibrating);
    }
    pthread_mutex_lock(&s->lock);
    if (rn->index == 0) {
        w->ready = true;
        pthread_cond_broadcast(&w->cond);
    }
    while (!w->ready && !atomic_load(&s->stopping)) pthread_cond_wait(&w->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!rn->wake && !atomic_load(&s->stopping)) pthread_cond_wait(&w->cond, &s->lock);
        rn->wake = false;
        pthread_mutex_unlock(&s->lock);
        /* Drain this device's queue; a notify that arrives meanwhile costs one empty claim. */
        while (!atomic_load(&s->stopping)) {
            int64_t id = 0, attempt, bytes;
            json_t *spec = NULL;
            pgn_error err;
            /* Not while a submission is between its insert and its announcement: a job's
             * "queued" state and "placed" line go out before its "running" and "started". */
            pthread_rwlock_wrlock(&s->admit);
            int64_t priority, only = claimable(rn, &bytes);
            pgd_log_line started = {.level = "info"};
            int claimed = only < 0 ? 0
                                   : pgd_store_job_claim_told(s->store, rn->info->id, sched_kind_of(rn->info), only,
                                                              &id, &attempt, &priority, &spec, started_line, rn,
                                                              &started, &err);
            /* Under the admit lock, so that a cancel never sees the job running with no
             * runner (it would end it), and the next claim here sees its memory held. */
            if (claimed == 0 && id) {
                atomic_store(&rn->lease_renewed_ns, pgn_now_ns());
                atomic_store(&rn->lease_lost, false);
                atomic_store(&rn->running_attempt, attempt);
                atomic_store(&rn->running_priority, priority);
                const char *kind = json_string_value(json_object_get(spec, "kind"));
                atomic_store(&rn->running_train, kind && !strcmp(kind, "train"));
                atomic_store(&rn->running_bytes, only ? bytes : w->n_runners > 1 ? job_bytes(rn, spec) : 0);
                atomic_store(&rn->preempt_job, 0);
                atomic_store(&rn->running_job, id);
            }
            pthread_rwlock_unlock(&s->admit);
            if (claimed < 0) {
                /* The job stays queued; the next submission retries. */
                fprintf(stderr, "paragond: worker %s: %s\n", rn->info->id, err.message);
                break;
            }
            if (id == 0 && only > 0) continue; /* another node took it meanwhile: the next one */
            if (id == 0) break;
            busy_mark(w, true);
            announce_start(rn, id, attempt, &started);
            bool told = run_job(rn, id, spec, attempt);
            announce_end(rn, id, attempt, told);
            busy_mark(w, false);
            atomic_store(&rn->running_bytes, 0);
            json_decref(spec);
            if (w->n_runners > 1) { /* its memory is free: the others may take what waited for it */
                pthread_mutex_lock(&s->lock);
                sched_wake(w);
                pthread_mutex_unlock(&s->lock);
            }
        }
        if (atomic_load(&s->stopping)) break;
    }
    if (rn->dev) pgn_device_close(rn->dev);
    rn->dev = NULL;
    return NULL;
}
