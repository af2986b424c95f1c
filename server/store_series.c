/* store_series.c: owns what a job appends while it runs: its metric series (one value per
 * name and step) and its log lines (numbered from 1, control characters made visible). */
#include "store_internal.h"

#include "views.h" /* errors are stored as the API shows them */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- metrics ---------------------------------------------------------------------------- */

/* A run's writes name its attempt (0: unfenced): a row is added only while that run is the
 * job's (store.h, "runs"). */
#define RUN_IS_THE_JOBS(job, attempt)                                                             \
    "(" attempt " = 0 OR EXISTS (SELECT 1 FROM jobs WHERE id = " job " AND attempts = " attempt    \
    " AND state = 'running'))"

/* A batch's start: the store's time now, which its rows carry (one clock, the store's, read
 * once rather than for each row), when run `attempt` (0: any) is the job's; else the run's
 * conflict or "not_found". On PostgreSQL the job's row is held until the commit, so that the run
 * cannot end under the batch. Caller is in a write transaction. */
static int batch_start(pgd_store *s, int64_t job_id, int64_t attempt, char *now, size_t size, pgn_error *err) {
    static const char sql[] = "SELECT " NOW_SQL " FROM jobs WHERE id = ?1"
                              " AND (?2 = 0 OR (attempts = ?2 AND state = 'running')) /*postgresql: FOR SHARE*/";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, job_id);
    db_bind_int64(st, 2, attempt);
    int rc = db_step(st);
    if (rc == DB_ROW) snprintf(now, size, "%s", db_column_text(st, 0));
    store_stmt_done(st);
    if (rc == DB_ROW) return 0;
    if (rc == DB_DONE) return store_run_over(s, job_id, attempt, "add a metric to", err);
    return store_fail(s, err, "insert metric");
}

/* One metric value at the batch's time (caller holds the lock, in the batch's transaction). */
static int insert_metric(pgd_store *s, int64_t job_id, const pgd_metric *m, const char *now, pgn_error *err) {
    static const char sql[] = "INSERT INTO metrics (job_id, name, step, value, created_at)"
                              " VALUES (?1, ?2, ?3, CAST(?4 AS DOUBLE PRECISION), ?5)"
                              " ON CONFLICT (job_id, name, step) DO UPDATE"
                              " SET value = excluded.value, created_at = excluded.created_at";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, job_id);
    db_bind_text(st, 2, m->name);
    db_bind_int64(st, 3, m->step);
    if (isfinite(m->value)) db_bind_double(st, 4, m->value);
    else db_bind_null(st, 4);
    db_bind_text(st, 5, now);
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc == DB_DONE) return 0;
    if (rc == DB_NO_PARENT) return store_no_such_job(err, job_id);
    return store_fail(s, err, "insert metric");
}

typedef struct {
    int64_t job_id, attempt;
    const pgd_metric *m;
    size_t n;
} metrics_batch;

/* A run's writes name its attempt (0: unfenced): its rows are added only while that run is the
 * job's (store.h, "runs"), which the batch's start checks once. */
int store_metrics_insert(pgd_store *s, int64_t job_id, int64_t attempt, const pgd_metric *m, size_t n,
                         pgn_error *err) {
    char now[40];
    if (n == 0) return 0;
    if (batch_start(s, job_id, attempt, now, sizeof now, err) < 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (insert_metric(s, job_id, &m[i], now, err) < 0) return -1;
    return 0;
}

static int insert_metrics_tx(pgd_store *s, void *ctx, pgn_error *err) {
    const metrics_batch *b = ctx;
    return store_metrics_insert(s, b->job_id, b->attempt, b->m, b->n, err);
}

int pgd_store_metrics_add(pgd_store *s, int64_t job_id, int64_t attempt, const pgd_metric *m, size_t n,
                          pgn_error *err) {
    if (n == 0) return 0;
    return store_write_tx(s, insert_metrics_tx, &(metrics_batch){job_id, attempt, m, n}, err);
}

int pgd_store_metric_add(pgd_store *s, int64_t job_id, int64_t attempt, const char *name,
                         int64_t step, double value, pgn_error *err) {
    return pgd_store_metrics_add(s, job_id, attempt, &(pgd_metric){name, step, value}, 1, err);
}

/* 0 when job_id exists; else -1 with "not_found" (or the database's error). Under s->lock. */
static int job_exists(pgd_store *s, int64_t job_id, pgn_error *err) {
    static const char sql[] = "SELECT 1 FROM jobs WHERE id = ?1";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, job_id);
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc == DB_ROW) return 0;
    if (rc == DB_DONE) store_no_such_job(err, job_id);
    else store_fail(s, err, "read job");
    return -1;
}

static json_t *metric_row(db_stmt *st) {
    json_t *m = json_object();
    json_object_set_new(m, "name", store_col_text(st, 0));
    json_object_set_new(m, "step", json_integer(db_column_int64(st, 1)));
    json_object_set_new(m, "value", store_col_real(st, 2));
    json_object_set_new(m, "created_at", store_col_text(st, 3));
    return m;
}

/* A job's rows from sql (bound by the caller: ?1 is the job id), with the job's existence checked
 * in the same read transaction, so a job deleted meanwhile is a 404 rather than no rows. */
static int list_job_rows(pgd_store *s, int64_t job_id, db_stmt *(*prepare)(pgd_store *, const void *, pgn_error *),
                         const void *args, json_t *(*row)(db_stmt *), const char *what, json_t **out,
                         pgn_error *err) {
    *out = NULL;
    json_t *arr = json_array();
    int ret = -1;
    pthread_mutex_lock(&s->lock);
    if (store_run(s, store_begin_sql, err, "begin") < 0) goto unlock;
    db_stmt *st = NULL;
    if (job_exists(s, job_id, err) < 0 || !(st = prepare(s, args, err)) ||
        store_collect_rows(s, st, row, arr, err, what) < 0 || store_run(s, store_commit_sql, err, "commit") < 0) {
        db_rollback(s->db);
        goto unlock;
    }
    *out = arr;
    arr = NULL;
    ret = 0;
unlock:
    pthread_mutex_unlock(&s->lock);
    json_decref(arr);
    return ret;
}

typedef struct {
    int64_t job_id;
    const char *name;
    int64_t after;
} metrics_query;

static db_stmt *prepare_metrics(pgd_store *s, const void *args, pgn_error *err) {
    static const char all_sql[] = "SELECT name, step, value, created_at FROM metrics"
                                  " WHERE job_id = ?1 AND step > ?3 ORDER BY name, step";
    static const char one_sql[] = "SELECT name, step, value, created_at FROM metrics"
                                  " WHERE job_id = ?1 AND name = ?2 AND step > ?3"
                                  " ORDER BY name, step";
    const metrics_query *q = args;
    db_stmt *st = store_stmt(s, q->name ? one_sql : all_sql, err);
    if (!st) return NULL;
    db_bind_int64(st, 1, q->job_id);
    if (q->name) db_bind_text(st, 2, q->name);
    db_bind_int64(st, 3, q->after);
    return st;
}

int pgd_store_metrics_list(pgd_store *s, int64_t job_id, const char *name, bool has_after,
                           int64_t after_step, json_t **out, pgn_error *err) {
    metrics_query q = {job_id, name, has_after ? after_step : INT64_MIN};
    return list_job_rows(s, job_id, prepare_metrics, &q, metric_row, "list metrics", out, err);
}

int pgd_store_metrics_last_step(pgd_store *s, int64_t job_id, int64_t *step, pgn_error *err) {
    static const char sql[] = "SELECT coalesce(max(step), -1) FROM metrics WHERE job_id = ?1";
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, job_id);
        if (db_step(st) == DB_ROW) {
            *step = db_column_int64(st, 0);
            ret = 0;
        } else {
            store_fail(s, err, "read the last step of metrics");
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* ---- logs ------------------------------------------------------------------------------- */


int store_log_insert(pgd_store *s, int64_t job_id, int64_t attempt, const char *level, const char *line,
                     int64_t *seq, char created_at[32], pgn_error *err) {
    /* The next seq is read and written in one statement under the lock: no gaps, no repeats. */
    static const char sql[] =
        "INSERT INTO logs (job_id, seq, level, line)"
        " SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3 FROM logs WHERE job_id = ?1"
        " HAVING " RUN_IS_THE_JOBS("?1", "?4")
        " RETURNING seq, created_at";
    *seq = 0;
    created_at[0] = 0;
    char *visible = pgn_text_visible(line);
    if (!visible) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, job_id);
        db_bind_text(st, 2, level);
        db_bind_text(st, 3, visible);
        db_bind_int64(st, 4, attempt);
        int rc = db_step(st);
        bool added = rc == DB_ROW;
        if (rc == DB_ROW) {
            int64_t got = db_column_int64(st, 0);
            const char *at = db_column_text(st, 1);
            snprintf(created_at, 32, "%s", at ? at : "");
            rc = db_step(st); /* runs the statement to completion: the commit */
            if (rc == DB_DONE) {
                *seq = got;
                ret = 0;
            }
        }
        if (ret < 0 && rc == DB_DONE && !added)
            store_run_over(s, job_id, attempt, "log a line of", err);
        else if (ret < 0 && rc == DB_NO_PARENT)
            store_no_such_job(err, job_id);
        else if (ret < 0)
            store_fail(s, err, "insert log line");
        store_stmt_done(st);
    }
    free(visible);
    return ret;
}

int pgd_store_log_add(pgd_store *s, int64_t job_id, int64_t attempt, const char *level,
                      const char *line, int64_t *seq, char created_at[32], pgn_error *err) {
    pthread_mutex_lock(&s->lock);
    int ret = store_log_insert(s, job_id, attempt, level, line, seq, created_at, err);
    pthread_mutex_unlock(&s->lock);
    return ret;
}

static json_t *log_row(db_stmt *st) {
    const char *line = db_column_text(st, 2);
    json_t *e = json_object();
    json_object_set_new(e, "seq", json_integer(db_column_int64(st, 0)));
    json_object_set_new(e, "level", store_col_text(st, 1));
    json_object_set_new(e, "line", pgd_json_string_lossy(line ? line : ""));
    json_object_set_new(e, "created_at", store_col_text(st, 3));
    return e;
}

typedef struct {
    int64_t job_id, after;
} logs_query;

static db_stmt *prepare_logs(pgd_store *s, const void *args, pgn_error *err) {
    static const char sql[] = "SELECT seq, level, line, created_at FROM logs"
                              " WHERE job_id = ?1 AND seq > ?2 ORDER BY seq";
    const logs_query *q = args;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return NULL;
    db_bind_int64(st, 1, q->job_id);
    db_bind_int64(st, 2, q->after);
    return st;
}

int pgd_store_logs_list(pgd_store *s, int64_t job_id, int64_t after, json_t **out,
                        pgn_error *err) {
    logs_query q = {job_id, after};
    return list_job_rows(s, job_id, prepare_logs, &q, log_row, "list log lines", out, err);
}
