/* store_job_states.c: owns a job's way through its states in the store: claiming the oldest
 * queued job of a device, progress, the end (finished, queued again, interrupted), cancelling,
 * deleting a finished job, moving a queued one to another device, and start-up recovery of the
 * jobs a dying paragond left running. Each change is one transaction on the job's row, and says
 * "not_found" or "conflict" (naming the state) when the row is not there or not in a state that
 * allows it. The rows as records are store_jobs.c's. */
#include "store_internal.h"

#include "views.h" /* errors are stored as the API shows them */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The claim's choice, read without taking it (store.h). */
int pgd_store_job_peek(pgd_store *s, const char *device, const char *kind, int64_t *id, json_t **spec,
                       pgn_error *err) {
    static const char sql[] = "SELECT id, spec FROM jobs WHERE state = 'queued' AND device IN (?1, ?2)"
                              " ORDER BY priority DESC, id LIMIT 1";
    *id = 0;
    *spec = NULL;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, device);
        db_bind_text(st, 2, kind ? kind : device);
        int rc = db_step(st);
        if (rc == DB_ROW) {
            *id = db_column_int64(st, 0);
            *spec = store_col_json(st, 1);
        }
        if (rc == DB_ROW || rc == DB_DONE) ret = 0;
        else store_fail(s, err, "read the next queued job");
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* What a claim takes and returns (pgd_store_job_claim_told). */
typedef struct {
    const char *device, *kind;
    int64_t only, *id, *attempt, *priority;
    json_t **spec;
    pgd_claim_text text; /* NULL: no line */
    void *text_ctx;
    pgd_log_line *line;
} claim_args;

/* One statement: SQLite runs it under its one write lock; on PostgreSQL the row is locked as
 * it is read (another node's claim skips it), and the outer state test makes a claim that
 * waited for a row another node took come back empty instead of taking it twice. Then the run's
 * first line, when asked for. Caller holds the lock (in a transaction when there is a line). */
static int claim(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = 'running', started_at = " NOW_SQL ", finished_at = NULL,"
        " attempts = attempts + 1, progress = 0, node = ?2, lease_ms = " NOW_MS_SQL " + ?3,"
        " device = ?1"
        " WHERE id = (SELECT id FROM jobs WHERE state = 'queued' AND device IN (?1, ?4)"
        "             AND (?5 = 0 OR id = ?5)"
        "             ORDER BY priority DESC, id LIMIT 1 /*postgresql: FOR UPDATE SKIP LOCKED*/)"
        "   AND state = 'queued'"
        " RETURNING id, spec, attempts, priority";
    claim_args *a = ctx;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_text(st, 1, a->device);
    db_bind_text(st, 2, s->node);
    db_bind_int64(st, 3, s->lease_ms);
    db_bind_text(st, 4, a->kind ? a->kind : a->device);
    db_bind_int64(st, 5, a->only);
    int rc = db_step(st);
    int64_t got = 0, run = 0, prio = 0;
    json_t *sp = NULL;
    if (rc == DB_ROW) {
        got = db_column_int64(st, 0);
        run = db_column_int64(st, 2);
        prio = db_column_int64(st, 3);
        sp = store_col_json(st, 1);
        rc = db_step(st); /* runs the statement to completion */
    }
    store_stmt_done(st);
    if (rc != DB_DONE) {
        json_decref(sp);
        return store_fail(s, err, "claim job");
    }
    if (got && a->text) {
        char text[512];
        a->text(a->text_ctx, run, text, sizeof text);
        if (store_log_insert(s, got, 0, a->line->level, text, &a->line->seq, a->line->time, err) < 0) {
            json_decref(sp);
            return -1;
        }
    }
    *a->id = got;
    *a->attempt = run;
    if (a->priority) *a->priority = prio;
    *a->spec = sp;
    return 0;
}

int pgd_store_job_claim_told(pgd_store *s, const char *device, const char *kind, int64_t only, int64_t *id,
                             int64_t *attempt, int64_t *priority, json_t **spec, pgd_claim_text text, void *text_ctx,
                             pgd_log_line *line, pgn_error *err) {
    *id = 0;
    *attempt = 0;
    if (priority) *priority = 0;
    *spec = NULL;
    if (line) line->seq = 0;
    claim_args a = {device, kind, only, id, attempt, priority, spec, line ? text : NULL, text_ctx, line};
    int ret;
    if (a.text) { /* the claim and its line: one commit */
        ret = store_write_tx(s, claim, &a, err);
    } else {
        pthread_mutex_lock(&s->lock);
        ret = claim(s, &a, err);
        pthread_mutex_unlock(&s->lock);
    }
    if (ret < 0) { /* a claim whose commit failed (the store went away after it) claimed nothing */
        json_decref(*spec);
        *spec = NULL;
        *id = 0;
        *attempt = 0;
        if (priority) *priority = 0;
    }
    return ret;
}

int pgd_store_job_claim(pgd_store *s, const char *device, const char *kind, int64_t only, int64_t *id,
                        int64_t *attempt, int64_t *priority, json_t **spec, pgn_error *err) {
    return pgd_store_job_claim_told(s, device, kind, only, id, attempt, priority, spec, NULL, NULL, NULL, err);
}

int store_run_over(pgd_store *s, int64_t id, int64_t attempt, const char *what, pgn_error *err) {
    static const char state_sql[] = "SELECT state, attempts FROM jobs WHERE id = ?1";
    db_stmt *q = store_stmt(s, state_sql, err);
    if (!q) return -1;
    db_bind_int64(q, 1, id);
    int rc = db_step(q);
    if (rc == DB_ROW && attempt > 0 && db_column_int64(q, 1) != attempt)
        pgn_error_set(err, PGN_E_CONFLICT, "",
                      "cannot %s job %lld: its attempt %lld is over (the job is on attempt %lld, %s)",
                      what, (long long)id, (long long)attempt, (long long)db_column_int64(q, 1),
                      db_column_text(q, 0));
    else if (rc == DB_ROW)
        pgn_error_set(err, PGN_E_CONFLICT, "", "cannot %s job %lld: it is %s", what, (long long)id,
                      db_column_text(q, 0));
    else if (rc == DB_DONE)
        store_no_such_job(err, id);
    else
        store_fail(s, err, what);
    store_stmt_done(q);
    return -1;
}

/* Runs a one-row UPDATE on job id (of run `attempt`, 0: any); when it changed nothing, says
 * whether the job is missing ("not_found"), in another state or on another attempt
 * ("conflict", naming it). Caller holds the lock. */
static int update_job(pgd_store *s, db_stmt *st, int64_t id, int64_t attempt, const char *what,
                      pgn_error *err) {
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc != DB_DONE) return store_fail(s, err, what);
    if (db_changes(s->db) > 0) return 0;
    return store_run_over(s, id, attempt, what, err);
}

int pgd_store_job_progress(pgd_store *s, int64_t id, int64_t attempt, double fraction, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET progress = ?2 WHERE id = ?1 AND state = 'running' AND (?3 = 0 OR attempts = ?3)";
    if (!(fraction >= 0)) fraction = 0; /* NaN too */
    if (fraction > 1) fraction = 1;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, id);
        db_bind_double(st, 2, fraction);
        db_bind_int64(st, 3, attempt);
        ret = update_job(s, st, id, attempt, "update progress of", err);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* The UPDATE that ends a queued or running job; result and error are JSON text or NULL.
 * Caller holds the lock. */
int store_finish_job(pgd_store *s, int64_t id, int64_t attempt, pgd_job_state state, const char *result,
                      const char *error, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = ?2, result = ?3, error = ?4, finished_at = " NOW_SQL ","
        " progress = CASE WHEN ?2 = 'succeeded' THEN 1 ELSE progress END, lease_ms = NULL"
        " WHERE id = ?1 AND state IN ('queued', 'running')"
        "   AND (?5 = 0 OR (attempts = ?5 AND state = 'running'))";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, id);
    db_bind_text(st, 2, pgd_job_state_name(state));
    store_bind_text_or_null(st, 3, result);
    store_bind_text_or_null(st, 4, error);
    db_bind_int64(st, 5, attempt);
    return update_job(s, st, id, attempt, "finish", err);
}

typedef struct {
    int64_t id, attempt;
    pgd_job_state state;
    const char *result, *error;
    pgd_log_line *line;
    const pgd_metric *metrics;
    size_t n_metrics;
} finish_args;

/* The run's last metrics, its end and the line telling it. */
static int finish_tx(pgd_store *s, void *ctx, pgn_error *err) {
    finish_args *a = ctx;
    if (store_metrics_insert(s, a->id, a->attempt, a->metrics, a->n_metrics, err) < 0 ||
        store_finish_job(s, a->id, a->attempt, a->state, a->result, a->error, err) < 0)
        return -1;
    return !a->line ? 0 : store_log_insert(s, a->id, 0, a->line->level, a->line->text, &a->line->seq, a->line->time, err);
}

int pgd_store_job_finish(pgd_store *s, int64_t id, int64_t attempt, pgd_job_state state,
                         const json_t *result, const pgn_error *error, pgd_log_line *line, pgn_error *err) {
    return pgd_store_job_finish_with(s, id, attempt, state, result, error, line, NULL, 0, err);
}

int pgd_store_job_finish_with(pgd_store *s, int64_t id, int64_t attempt, pgd_job_state state,
                              const json_t *result, const pgn_error *error, pgd_log_line *line,
                              const struct pgd_metric *metrics, size_t n_metrics, pgn_error *err) {
    if (state != PGD_JOB_SUCCEEDED && state != PGD_JOB_FAILED && state != PGD_JOB_CANCELLED) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "store: %s is not a final state",
                      pgd_job_state_name(state));
        return -1;
    }
    char *res = result ? pgn_json_dumps(result) : NULL;
    json_t *ej = error ? pgd_error_json(error) : NULL;
    char *er = ej ? pgn_json_dumps(ej) : NULL;
    json_decref(ej);
    int ret;
    if (line || n_metrics) { /* the end, its line and the run's last metrics: one commit */
        ret = store_write_tx(s, finish_tx, &(finish_args){id, attempt, state, res, er, line, metrics, n_metrics}, err);
    } else {
        pthread_mutex_lock(&s->lock);
        ret = store_finish_job(s, id, attempt, state, res, er, err);
        pthread_mutex_unlock(&s->lock);
    }
    free(res);
    free(er);
    return ret;
}

/* Which running jobs a recovery or a requeue takes. */
typedef struct run_set {
    int64_t id;      /* 0: every running job */
    int64_t attempt; /* > 0: only that run of job id */
    bool expired;    /* only runs whose lease ran out */
    const char *node; /* only runs of this node; NULL: any */
} run_set;

/* Ends the running jobs of set whose cancel was requested as cancelled, with an error saying
 * why: a job that was asked to stop never goes back to the queue. *n receives how many. Caller
 * is in a write transaction. */
static int end_cancel_requested(pgd_store *s, const run_set *set, const char *why, int64_t *n,
                                pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = 'cancelled', finished_at = " NOW_SQL ", lease_ms = NULL,"
        " error = json_object('code', 'cancelled', 'message', ?2, 'field', NULL)"
        " WHERE state = 'running' AND cancel_requested = 1 AND (?1 = 0 OR id = ?1)"
        "   AND (?3 = 0 OR attempts = ?3) AND (?4 = 0 OR lease_ms < " NOW_MS_SQL ")"
        "   AND (?5 IS NULL OR node = ?5)";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, set->id);
    db_bind_text(st, 2, why);
    db_bind_int64(st, 3, set->attempt);
    db_bind_int64(st, 4, set->expired);
    db_bind_text(st, 5, set->node);
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc != DB_DONE) return store_fail(s, err, "end cancelled jobs");
    *n = db_changes(s->db);
    return 0;
}

/* The device a job goes back to the queue on: in a shared store (a cluster), a job that asked
 * for a kind of device ("cpu", "gpu") waits for any node's device of that kind again, not only
 * for the one its last run had (its node may be gone); elsewhere its device stays. */
#define REQUEUED_DEVICE_SQL(shared)                                                               \
    "CASE WHEN " shared " = 1 AND device_requested IN ('cpu', 'gpu')"                             \
    " THEN device_requested ELSE device END"

static int requeue_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] = "UPDATE jobs SET state = 'queued', started_at = NULL, progress = 0,"
                              " lease_ms = NULL, device = " REQUEUED_DEVICE_SQL("?3")
                              " WHERE id = ?1 AND state = 'running' AND (?2 = 0 OR attempts = ?2)";
    const run_set *set = ctx;
    int64_t ended = 0;
    if (end_cancel_requested(s, set, "cancelled on request while paragond was stopping", &ended,
                             err) < 0)
        return -1;
    if (ended) return 0;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, set->id);
    db_bind_int64(st, 2, set->attempt);
    db_bind_int64(st, 3, s->shared);
    return update_job(s, st, set->id, set->attempt, "requeue", err);
}

int pgd_store_job_requeue(pgd_store *s, int64_t id, int64_t attempt, pgn_error *err) {
    run_set set = {.id = id, .attempt = attempt};
    return store_write_tx(s, requeue_tx, &set, err);
}

int pgd_store_job_held_elsewhere(pgd_store *s, int64_t id, bool *elsewhere, pgn_error *err) {
    static const char sql[] = "SELECT 1 FROM jobs WHERE id = ?1 AND state = 'running' AND node IS NOT NULL"
                              " AND node <> ?2 AND lease_ms >= " NOW_MS_SQL;
    *elsewhere = false;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, id);
        db_bind_text(st, 2, s->node);
        int rc = db_step(st);
        store_stmt_done(st);
        if (rc == DB_ROW || rc == DB_DONE) {
            *elsewhere = rc == DB_ROW;
            ret = 0;
        } else {
            store_fail(s, err, "read where a job runs");
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_lease_renew(pgd_store *s, int64_t id, int64_t attempt, bool *held, pgn_error *err) {
    static const char sql[] = "UPDATE jobs SET lease_ms = " NOW_MS_SQL " + ?3"
                              " WHERE id = ?1 AND attempts = ?2 AND state = 'running'";
    *held = false;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, id);
        db_bind_int64(st, 2, attempt);
        db_bind_int64(st, 3, s->lease_ms);
        int rc = db_step(st);
        store_stmt_done(st);
        if (rc == DB_DONE) {
            *held = db_changes(s->db) > 0;
            ret = 0;
        } else {
            store_fail(s, err, "renew a lease");
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* The cancel of a queued job: it never ran, so there is nothing to stop. */
#define CANCELLED_QUEUED_MESSAGE "cancelled on request before it started"

typedef struct cancel_args {
    int64_t id;
    pgd_job *job; /* out: the job after the cancel */
} cancel_args;

/* Job id's state, in the caller's transaction; "not_found" when there is no such job. */
static int read_state(pgd_store *s, int64_t id, pgd_job_state *state, pgn_error *err) {
    static const char sql[] = "SELECT state FROM jobs WHERE id = ?1";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    bool known = rc == DB_ROW && pgd_job_state_parse(db_column_text(st, 0), state) == 0;
    store_stmt_done(st);
    if (rc == DB_DONE) return store_no_such_job(err, id);
    return known ? 0 : store_fail(s, err, "read job state");
}

static int cancel_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char queued_sql[] =
        "UPDATE jobs SET state = 'cancelled', finished_at = " NOW_SQL ", cancel_requested = 1,"
        " error = json_object('code', 'cancelled', 'message', '" CANCELLED_QUEUED_MESSAGE "',"
        " 'field', NULL) WHERE id = ?1 AND state = 'queued'";
    static const char running_sql[] =
        "UPDATE jobs SET cancel_requested = 1 WHERE id = ?1 AND state = 'running'";
    cancel_args *a = ctx;
    pgd_job_state state;
    if (read_state(s, a->id, &state, err) < 0) return -1;
    if (state != PGD_JOB_QUEUED && state != PGD_JOB_RUNNING) {
        pgn_error_set(err, PGN_E_CONFLICT, "", "job %lld has already finished (%s): nothing to cancel",
                      (long long)a->id, pgd_job_state_name(state));
        return -1;
    }
    db_stmt *st = store_stmt(s, state == PGD_JOB_QUEUED ? queued_sql : running_sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, a->id);
    if (update_job(s, st, a->id, 0, "cancel", err) < 0) return -1;
    return store_read_job(s, a->id, true, NULL, a->job, err);
}

static int resume_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = 'queued', started_at = NULL, finished_at = NULL, error = NULL,"
        " cancel_requested = 0, progress = 0, lease_ms = NULL, device = " REQUEUED_DEVICE_SQL("?2")
        " WHERE id = ?1 AND state = 'cancelled'";
    cancel_args *a = ctx;
    pgd_job_state state;
    if (read_state(s, a->id, &state, err) < 0) return -1;
    if (state != PGD_JOB_CANCELLED) {
        pgn_error_set(err, PGN_E_CONFLICT, "", "job %lld is %s: only a cancelled job resumes%s", (long long)a->id,
                      pgd_job_state_name(state),
                      state == PGD_JOB_QUEUED || state == PGD_JOB_RUNNING ? " (it has not stopped)"
                      : state == PGD_JOB_FAILED ? " (a failed one would fail again: submit it anew)"
                                                : "");
        return -1;
    }
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, a->id);
    db_bind_int64(st, 2, s->shared);
    if (update_job(s, st, a->id, 0, "resume", err) < 0) return -1;
    return store_read_job(s, a->id, true, NULL, a->job, err);
}

int pgd_store_job_resume(pgd_store *s, int64_t id, pgd_job *job, pgn_error *err) {
    *job = (pgd_job){0};
    cancel_args a = {.id = id, .job = job};
    int ret = store_write_tx(s, resume_tx, &a, err);
    if (ret < 0) pgd_job_release(job);
    return ret;
}

int pgd_store_job_cancel(pgd_store *s, int64_t id, pgd_job *job, pgn_error *err) {
    *job = (pgd_job){0};
    cancel_args a = {.id = id, .job = job};
    int ret = store_write_tx(s, cancel_tx, &a, err);
    if (ret < 0) pgd_job_release(job);
    return ret;
}

/* Runs sql (one row of job id, ?1) under the lock and hands the row to read(st, ctx); a missing
 * job is "not_found", what names the read in the database's errors. */
static int read_job_row(pgd_store *s, const char *sql, int64_t id, void (*read)(db_stmt *, void *),
                        void *ctx, const char *what, pgn_error *err) {
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, id);
        int rc = db_step(st);
        if (rc == DB_ROW) {
            read(st, ctx);
            ret = 0;
        } else if (rc == DB_DONE) {
            store_no_such_job(err, id);
        } else {
            store_fail(s, err, what);
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

static void read_flag(db_stmt *st, void *ctx) { *(bool *)ctx = db_column_int64(st, 0) != 0; }

int pgd_store_job_cancel_requested(pgd_store *s, int64_t id, bool *requested, pgn_error *err) {
    static const char sql[] = "SELECT cancel_requested FROM jobs WHERE id = ?1";
    *requested = false;
    return read_job_row(s, sql, id, read_flag, requested, "read cancel request", err);
}

static int delete_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char state_sql[] = "SELECT state FROM jobs WHERE id = ?1";
    /* Metrics, benchmark rows (and any other table keyed on the job) go with it: their
     * foreign keys are ON DELETE CASCADE. */
    static const char delete_sql[] =
        "DELETE FROM jobs WHERE id = ?1 AND state NOT IN ('queued', 'running')";
    int64_t id = *(const int64_t *)ctx;
    db_stmt *st = store_stmt(s, state_sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    char state[16] = "";
    if (rc == DB_ROW)
        snprintf(state, sizeof state, "%s", db_column_text(st, 0));
    store_stmt_done(st);
    if (rc == DB_DONE) return store_no_such_job(err, id);
    if (rc != DB_ROW) return store_fail(s, err, "read job state");
    if (strcmp(state, "queued") == 0 || strcmp(state, "running") == 0) {
        pgn_error_set(err, PGN_E_CONFLICT, "",
                      "job %lld is %s: only a finished job can be deleted (cancel it first: "
                      "POST /api/v1/jobs/%lld/cancel)",
                      (long long)id, state, (long long)id);
        return -1;
    }
    st = store_stmt(s, delete_sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, id);
    return update_job(s, st, id, 0, "delete", err);
}

int pgd_store_job_delete(pgd_store *s, int64_t id, pgn_error *err) {
    return store_write_tx(s, delete_tx, &id, err);
}

int pgd_store_job_reassign(pgd_store *s, int64_t id, const char *device, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET device = ?2 WHERE id = ?1 AND state = 'queued'";
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, id);
        db_bind_text(st, 2, device);
        ret = update_job(s, st, id, 0, "reassign", err);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

typedef struct recover_args {
    int64_t max_attempts;
    run_set set;                /* the runs that ended */
    const char *what, *blame;   /* what ended the run; what a crash may mean */
    const char *cancelled;      /* the message of a job whose cancel was requested */
    pgd_recovery *out;
} recover_args;

/* Running jobs (a->set) whose run ended without stopping them: each such run counts as
 * interrupted; a job interrupted max_attempts times ends failed ("crashed"), the others go back
 * to the queue. Both get a log line saying what happened. */
static int recover_tx(pgd_store *s, void *ctx, pgn_error *err) {
#define RUNNING                                                                                    \
    " WHERE state = 'running' AND (?3 = 0 OR id = ?3) AND (?5 = 0 OR lease_ms < " NOW_MS_SQL ")"    \
    " AND (?6 IS NULL OR node = ?6)"
    static const char count_sql[] = "UPDATE jobs SET interrupted = interrupted + 1" RUNNING;
    /* The log lines come first, while the jobs are still 'running' and the two kinds tell apart
     * by their count; seq is the job's next, as pgd_store_log_add numbers it. */
    static const char log_sql[] =
        "INSERT INTO logs (job_id, seq, level, line)"
        " SELECT id, (SELECT coalesce(max(seq), 0) + 1 FROM logs WHERE job_id = jobs.id),"
        "  CASE WHEN interrupted >= ?1 THEN 'error' ELSE 'warn' END,"
        "  CASE WHEN interrupted >= ?1"
        "   THEN format('failed: crashed: %s, %s times (run %s was the last); it is not run again"
        " (--max-attempts %s)', ?2, interrupted, attempts, ?1)"
        "   ELSE format('%s (interrupted run %s of at most %s); queued again', ?2, interrupted, ?1) END"
        " FROM jobs" RUNNING;
    static const char crash_sql[] =
        "UPDATE jobs SET state = 'failed', finished_at = " NOW_SQL ", lease_ms = NULL,"
        " error = json_object('code', 'crashed', 'message',"
        "  format('%s, %s times; it is not run again (--max-attempts %s): %s', ?2, interrupted, ?1, ?4),"
        "  'field', NULL)" RUNNING " AND interrupted >= ?1";
    static const char requeue_sql[] =
        "UPDATE jobs SET state = 'queued', started_at = NULL, progress = 0, lease_ms = NULL,"
        " device = " REQUEUED_DEVICE_SQL("?7") RUNNING;
#undef RUNNING
    recover_args *a = ctx;
    if (end_cancel_requested(s, &a->set, a->cancelled, &a->out->cancelled, err) < 0)
        return -1;
    const char *const steps[] = {count_sql, log_sql, crash_sql, requeue_sql};
    const char *const what[] = {"count interrupted runs", "log interrupted runs",
                                "end crashed jobs", "requeue running jobs"};
    int64_t *changed[] = {NULL, NULL, &a->out->crashed, &a->out->requeued};
    for (int i = 0; i < 4; i++) {
        db_stmt *st = store_stmt(s, steps[i], err);
        if (!st) return -1;
        db_bind_int64(st, 1, a->max_attempts);
        db_bind_text(st, 2, a->what);
        db_bind_int64(st, 3, a->set.id);
        db_bind_text(st, 4, a->blame);
        db_bind_int64(st, 5, a->set.expired);
        db_bind_text(st, 6, a->set.node);
        db_bind_int64(st, 7, s->shared);
        int rc = db_step(st);
        store_stmt_done(st);
        if (rc != DB_DONE) return store_fail(s, err, what[i]);
        if (changed[i]) *changed[i] = db_changes(s->db);
    }
    return 0;
}

static int recover(pgd_store *s, recover_args *a, pgn_error *err) {
    *a->out = (pgd_recovery){0};
    if (a->max_attempts <= 0) a->max_attempts = 1;
    int ret = store_write_tx(s, recover_tx, a, err);
    if (ret < 0) *a->out = (pgd_recovery){0};
    return ret;
}

int pgd_store_recover(pgd_store *s, int64_t max_attempts, bool this_node_only, pgd_recovery *out,
                      pgn_error *err) {
    recover_args a = {.max_attempts = max_attempts, .set = {.node = this_node_only ? s->node : NULL},
                      .what = "paragond ended while this job ran",
                      .blame = "it may be what ends the server",
                      .cancelled = "cancelled on request; paragond ended before the job stopped", .out = out};
    return recover(s, &a, err);
}

int pgd_store_job_interrupted(pgd_store *s, int64_t id, int64_t max_attempts, const char *what,
                              pgd_recovery *out, pgn_error *err) {
    recover_args a = {.max_attempts = max_attempts, .set = {.id = id}, .what = what,
                      .blame = "it may be what makes it fail",
                      .cancelled = "cancelled on request; its run ended before the job stopped", .out = out};
    return recover(s, &a, err);
}

int pgd_store_recover_expired(pgd_store *s, int64_t max_attempts, pgd_recovery *out, pgn_error *err) {
    recover_args a = {.max_attempts = max_attempts, .set = {.expired = true},
                      .what = "its node stopped renewing the run's lease (it died, or lost the store)",
                      .blame = "it may be what ends its node",
                      .cancelled = "cancelled on request; its node stopped renewing the run's lease before the job stopped",
                      .out = out};
    return recover(s, &a, err);
}
