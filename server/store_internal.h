/* store_internal.h: what the store's files share and nothing else may use: the connection
 * and its mutex, the statement cache, and the helpers that run a statement or a transaction
 * and read a row's columns. One connection, one mutex: statements are prepared once and cached,
 * each public call holds the mutex for its whole transaction, so HTTP and worker threads never
 * interleave inside one. Helpers marked "caller holds the lock" run under s->lock. */
#ifndef PGD_STORE_INTERNAL_H
#define PGD_STORE_INTERNAL_H

#include "db.h"
#include "store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The time now as the store keeps times (ISO-8601 UTC with milliseconds); PostgreSQL's schema
 * defines this strftime (schema/postgresql/001_init.sql). */
#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
#define STMT_CACHE_MAX 64

/* Reader connections of a SQLite store: as many as paragond's HTTP threads by default. */
#define STORE_READERS 4

/* A write transaction's body waiting for the store (store_write_tx). */
typedef struct store_write {
    int (*fn)(pgd_store *, void *, pgn_error *);
    void *ctx;
    pgn_error *err;
    int rc;
    bool done; /* another thread's transaction ran and committed (or failed) it */
    struct store_write *next;
} store_write;

struct pgd_store {
    pgd_db *db;
    pthread_mutex_t lock;
    /* Write transactions waiting for the lock (SQLite): whoever takes it next commits them all
     * (group commit). Guarded by writes_lock, which is never held while waiting for `lock`. */
    pthread_mutex_t writes_lock;
    store_write *writes, **writes_tail;
    /* Prepared statements keyed by the address of their static SQL text. */
    struct {
        const char *sql;
        db_stmt *stmt;
    } cache[STMT_CACHE_MAX];
    int n_cached;
    char node[64];    /* pgd_store_set_node: the node runs claimed here belong to */
    int64_t lease_ms; /* the lease a claim or a renewal gives */
    bool shared;      /* a store several nodes share (PostgreSQL): a cluster's */
    /* SQLite: connections of their own for reading a job for GET /api/v1/jobs/{id}, each
     * behind its own mutex, so that reads run beside each other and beside a write (WAL: a read
     * sees every commit before it began); store_reader takes one. A state event's read, right
     * after its own write, stays on the writer's connection: its pages are in that cache, where
     * a reader would first have to read them again from the WAL (12% more CPU a submission). */
    struct pgd_store *readers[STORE_READERS];
    size_t n_readers;
};

/* A reader connection of s, locked (s itself, locked, where it has none): the first free, else
 * the caller's own by thread. Unlock its ->lock when done. */
pgd_store *store_reader(pgd_store *s);

/* The store's clock, in ms since 1970: one clock for every node, whatever theirs say. */
#define NOW_MS_SQL "CAST((julianday('now') - 2440587.5) * 86400000.0 AS BIGINT)"

/* ---- helpers (callers hold the lock) ---- */

/* A failed statement as code PGD_STORE_UNAVAILABLE (the database's state: retry) or "store". */
int store_fail(pgd_store *s, pgn_error *err, const char *what);
/* The cached statement for sql (a static string: its address is the key), reset and ready to
 * bind. */
db_stmt *store_stmt(pgd_store *s, const char *sql, pgn_error *err);
/* Resets st right after use, so that it holds no read transaction open. */
void store_stmt_done(db_stmt *st);
/* Fails with "not_found" naming the job id. */
int store_no_such_job(pgn_error *err, int64_t id);
/* A write of run `attempt` of job id changed nothing: "conflict" saying that the run is over
 * (the job's attempt and state now), or "not_found". Returns -1. */
int store_run_over(pgd_store *s, int64_t id, int64_t attempt, const char *what, pgn_error *err);
/* Runs a cached statement that returns no rows (BEGIN, COMMIT). */
int store_run(pgd_store *s, const char *sql, pgn_error *err, const char *what);
extern const char store_begin_sql[], store_begin_write_sql[], store_commit_sql[];
/* Steps st to its end, appending row(st) to arr for each row; resets st. */
int store_collect_rows(pgd_store *s, db_stmt *st, json_t *(*row)(db_stmt *),
                       json_t *arr, pgn_error *err, const char *what);
void store_bind_text_or_null(db_stmt *st, int idx, const char *text);
/* A column as JSON: text (null for NULL), a JSON document (text that does not parse comes
 * back as a string), a real (null for NULL). */
json_t *store_col_text(db_stmt *st, int col);
json_t *store_col_json(db_stmt *st, int col);
json_t *store_col_real(db_stmt *st, int col);

/* ---- helpers that take the lock ---- */

/* Runs fn(s, ctx, err) under the lock inside one write transaction: committed when fn returns
 * 0, rolled back otherwise; returns once that is done. On SQLite, writes that wait for the lock
 * together are committed together, each in its savepoint (fn may run on another caller's
 * thread: it touches the store and ctx alone). */
int store_write_tx(pgd_store *s, int (*fn)(pgd_store *, void *, pgn_error *), void *ctx,
                   pgn_error *err);
/* Reads the one row of numbers an aggregate query returns into out[0..n-1]; param, when not
 * NULL, binds ?1. */
int store_read_numbers(pgd_store *s, const char *sql, const char *param, double *out, int n,
                       const char *what, pgn_error *err);

/* ---- across files ---- */
/* pgd_store_log_add's insert, for a line written in another change's transaction (caller holds
 * the lock; attempt 0: unfenced) (store_series.c). */
int store_log_insert(pgd_store *s, int64_t job_id, int64_t attempt, const char *level, const char *line,
                     int64_t *seq, char created_at[32], pgn_error *err);
/* A run's metrics (pgd_store_metrics_add's rows), in the caller's write transaction. */
int store_metrics_insert(pgd_store *s, int64_t job_id, int64_t attempt, const pgd_metric *m, size_t n,
                         pgn_error *err);

/* Job id with its placement (its spec when with_spec; its spec's stored text into *spec_text
 * when that is not NULL) into *out, or "not_found" (store_jobs.c). Caller holds the lock; *out
 * (and *spec_text) are released on failure. */
int store_read_job(pgd_store *s, int64_t id, bool with_spec, char **spec_text, pgd_job *out, pgn_error *err);
/* The UPDATE that ends a queued or running job (store_job_states.c); result and error are JSON
 * text or NULL. Caller holds the lock. */
int store_finish_job(pgd_store *s, int64_t id, int64_t attempt, pgd_job_state state, const char *result,
                     const char *error, pgn_error *err);
/* A job's placement candidates (store_placements.c), written with the job and read back into
 * p (its reason is the job row's; p->candidates is appended to). Caller holds the lock. */
int store_placement_insert(pgd_store *s, int64_t job_id, const pgd_placement *p, pgn_error *err);
int store_placement_read(pgd_store *s, int64_t job_id, pgd_placement *p, pgn_error *err);

#endif
