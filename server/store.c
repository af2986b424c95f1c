/* store.c: owns paragond's SQLite database: opening it (WAL, foreign keys, busy timeout),
 * the migration runner over the embedded schema/NNN_name.sql files, and every read and write
 * of job, metric and benchmark rows. One connection, one mutex: statements are prepared once
 * and cached, each public call holds the mutex for its whole transaction, so HTTP and worker
 * threads never interleave inside one. */
#include "store.h"

#include "views.h" /* errors are stored as the API shows them */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
#define BUSY_TIMEOUT_MS 5000
#define STMT_CACHE_MAX 64

struct pgd_store {
    sqlite3 *db;
    pthread_mutex_t lock;
    /* Prepared statements keyed by the address of their static SQL text. */
    struct {
        const char *sql;
        sqlite3_stmt *stmt;
    } cache[STMT_CACHE_MAX];
    int n_cached;
};

static const char *const state_names[] = {"queued", "running", "succeeded", "failed",
                                          "cancelled"};

const char *pgd_job_state_name(pgd_job_state state) {
    if ((unsigned)state >= sizeof state_names / sizeof state_names[0]) return "unknown";
    return state_names[state];
}

int pgd_job_state_parse(const char *name, pgd_job_state *out) {
    for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++) {
        if (strcmp(name, state_names[i]) == 0) {
            *out = (pgd_job_state)i;
            return 0;
        }
    }
    return -1;
}

/* ---- helpers (callers hold the lock) ---------------------------------------------------- */

/* Failures of the database's state (disk full, I/O, another writer, no memory) pass when it
 * recovers, and are code "store_unavailable": callers retry a job's end on them, and the API
 * answers 503. Anything else is "store". */
static int db_fail(pgd_store *s, pgn_error *err, const char *what) {
    int rc = sqlite3_extended_errcode(s->db) & 0xff;
    bool passing = rc == SQLITE_FULL || rc == SQLITE_IOERR || rc == SQLITE_BUSY ||
                   rc == SQLITE_LOCKED || rc == SQLITE_READONLY || rc == SQLITE_NOMEM ||
                   rc == SQLITE_CANTOPEN || rc == SQLITE_PROTOCOL;
    pgn_error_set(err, passing ? PGD_STORE_UNAVAILABLE : "store", "", "store: %s: %s", what,
                  sqlite3_errmsg(s->db));
    return -1;
}

/* The cached statement for sql (a static string), reset and ready to bind. */
static sqlite3_stmt *stmt(pgd_store *s, const char *sql, pgn_error *err) {
    for (int i = 0; i < s->n_cached; i++)
        if (s->cache[i].sql == sql) return s->cache[i].stmt;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        db_fail(s, err, "prepare");
        return NULL;
    }
    if (s->n_cached == STMT_CACHE_MAX) {
        /* Only a programming error gets here: the set of statements is fixed. */
        sqlite3_finalize(st);
        pgn_error_set(err, "internal", "", "store: statement cache full");
        return NULL;
    }
    s->cache[s->n_cached].sql = sql;
    s->cache[s->n_cached].stmt = st;
    s->n_cached++;
    return st;
}

/* Every statement is reset right after use so that it holds no read transaction open. */
static void stmt_done(sqlite3_stmt *st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Fails with not_found naming the job id. */
static int no_such_job(pgn_error *err, int64_t id) {
    pgn_error_set(err, "not_found", "", "job %lld does not exist", (long long)id);
    return -1;
}

static int exec_sql(pgd_store *s, const char *sql, pgn_error *err, const char *what) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        pgn_error_set(err, "store", "", "store: %s: %s", what, msg ? msg : "unknown error");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* Runs a cached statement that returns no rows (BEGIN, COMMIT). */
static int run_stmt(pgd_store *s, const char *sql, pgn_error *err, const char *what) {
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    stmt_done(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, err, what);
}

static const char begin_sql[] = "BEGIN";
static const char begin_write_sql[] = "BEGIN IMMEDIATE";
static const char commit_sql[] = "COMMIT";

/* Runs fn(s, ctx, err) under the lock inside one write transaction: committed when fn returns
 * 0, rolled back otherwise. It takes the write lock first (BEGIN IMMEDIATE), so a transaction
 * that reads before it writes waits out another process's writer instead of failing. */
static int write_transaction(pgd_store *s, int (*fn)(pgd_store *, void *, pgn_error *),
                             void *ctx, pgn_error *err) {
    pthread_mutex_lock(&s->lock);
    int ret = run_stmt(s, begin_write_sql, err, "begin");
    if (ret == 0) ret = fn(s, ctx, err);
    if (ret == 0) ret = run_stmt(s, commit_sql, err, "commit");
    if (ret < 0 && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* Steps st to its end, appending row(st) to arr for each row; resets st. */
static int collect_rows(pgd_store *s, sqlite3_stmt *st, json_t *(*row)(sqlite3_stmt *),
                        json_t *arr, pgn_error *err, const char *what) {
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) json_array_append_new(arr, row(st));
    stmt_done(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, err, what);
}

static void bind_text_or_null(sqlite3_stmt *st, int idx, const char *text) {
    if (text) sqlite3_bind_text(st, idx, text, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, idx);
}

static json_t *col_text(sqlite3_stmt *st, int col) {
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? json_string((const char *)t) : json_null();
}

/* A JSON column as a JSON value; text that does not parse (never written by us) comes back
 * as a string rather than being dropped. */
static json_t *col_json(sqlite3_stmt *st, int col) {
    const char *t = (const char *)sqlite3_column_text(st, col);
    if (!t) return json_null();
    json_t *v = json_loads(t, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(t);
}

static json_t *col_real(sqlite3_stmt *st, int col) {
    if (sqlite3_column_type(st, col) == SQLITE_NULL) return json_null();
    return json_real(sqlite3_column_double(st, col));
}

/* ---- migrations ------------------------------------------------------------------------- */

typedef struct migration {
    int64_t version;
    const pgn_embedded *file;
} migration;

/* "001_init.sql" -> 1; -1 when the name does not follow NNN_name.sql. */
static int64_t migration_version(const char *name) {
    const char *p = name;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v > 1000000) return -1;
        p++;
    }
    if (p == name || *p != '_') return -1;
    size_t len = strlen(name);
    if (len < 5 || strcmp(name + len - 4, ".sql") != 0) return -1;
    return v;
}

static int migration_cmp(const void *a, const void *b) {
    const migration *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

static int apply_migration(pgd_store *s, const migration *m, pgn_error *err) {
    static const char is_applied_sql[] = "SELECT 1 FROM schema_migrations WHERE version = ?1";
    static const char record_sql[] =
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, " NOW_SQL ")";

    /* IMMEDIATE takes the write lock first, so two processes starting at once cannot both
     * decide that a version is missing. */
    if (exec_sql(s, "BEGIN IMMEDIATE", err, "begin migration") < 0) return -1;
    sqlite3_stmt *st = stmt(s, is_applied_sql, err);
    if (!st) goto fail;
    sqlite3_bind_int64(st, 1, m->version);
    int rc = sqlite3_step(st);
    stmt_done(st);
    if (rc == SQLITE_ROW) return exec_sql(s, "COMMIT", err, "commit migration");
    if (rc != SQLITE_DONE) {
        db_fail(s, err, "read schema_migrations");
        goto fail;
    }

    char *msg = NULL;
    if (sqlite3_exec(s->db, (const char *)m->file->data, NULL, NULL, &msg) != SQLITE_OK) {
        pgn_error_set(err, "store", "", "store: schema migration %s failed: %s", m->file->name,
                      msg ? msg : "unknown error");
        sqlite3_free(msg);
        goto fail;
    }
    st = stmt(s, record_sql, err);
    if (!st) goto fail;
    sqlite3_bind_int64(st, 1, m->version);
    sqlite3_bind_text(st, 2, m->file->name, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    stmt_done(st);
    if (rc != SQLITE_DONE) {
        db_fail(s, err, "record migration");
        goto fail;
    }
    if (exec_sql(s, "COMMIT", err, "commit migration") < 0) goto fail;
    return 0;
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

static int migrate(pgd_store *s, const pgn_embedded *table, pgn_error *err) {
    if (exec_sql(s,
                 "CREATE TABLE IF NOT EXISTS schema_migrations ("
                 " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
                 err, "create schema_migrations") < 0)
        return -1;

    size_t n = 0;
    while (table[n].name) n++;
    migration *list = calloc(n ? n : 1, sizeof *list);
    if (!list) {
        pgn_error_set(err, "internal", "", "store: out of memory");
        return -1;
    }
    int ret = -1;
    for (size_t i = 0; i < n; i++) {
        list[i].file = &table[i];
        list[i].version = migration_version(table[i].name);
        if (list[i].version < 0) {
            pgn_error_set(err, "store", "", "store: schema file '%s' is not named NNN_name.sql",
                          table[i].name);
            goto out;
        }
    }
    qsort(list, n, sizeof *list, migration_cmp);
    for (size_t i = 1; i < n; i++) {
        if (list[i].version == list[i - 1].version) {
            pgn_error_set(err, "store", "", "store: schema files '%s' and '%s' share version %lld",
                          list[i - 1].file->name, list[i].file->name,
                          (long long)list[i].version);
            goto out;
        }
    }

    /* A database written by a newer paragond has tables this one does not understand. */
    int64_t newest = 0;
    sqlite3_stmt *st = stmt(s, "SELECT coalesce(max(version), 0) FROM schema_migrations", err);
    if (!st) goto out;
    if (sqlite3_step(st) == SQLITE_ROW) newest = sqlite3_column_int64(st, 0);
    stmt_done(st);
    int64_t known = n ? list[n - 1].version : 0;
    if (newest > known) {
        pgn_error_set(err, "store", "",
                      "store: database schema version %lld is newer than this paragond "
                      "(it knows up to %lld)",
                      (long long)newest, (long long)known);
        goto out;
    }

    for (size_t i = 0; i < n; i++)
        if (apply_migration(s, &list[i], err) < 0) goto out;
    ret = 0;
out:
    free(list);
    return ret;
}

/* ---- open / close ----------------------------------------------------------------------- */

int pgd_store_open_with(const char *path, const pgn_embedded *migrations, pgd_store **out,
                        pgn_error *err) {
    *out = NULL;
    pgd_store *s = calloc(1, sizeof *s);
    if (!s) {
        pgn_error_set(err, "internal", "", "store: out of memory");
        return -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    /* NOMUTEX: our own mutex serialises every use of the connection. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        pgn_error_set(err, "store", "", "store: cannot open database '%s': %s", path,
                      s->db ? sqlite3_errmsg(s->db) : "out of memory");
        pgd_store_close(s);
        return -1;
    }
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(s->db, 1);
    /* WAL lets the test (or an operator's sqlite3 shell) read while we write; NORMAL sync is
     * durable across process crashes, which is what job recovery needs. */
    if (exec_sql(s, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                    "PRAGMA foreign_keys = ON;",
                 err, "configure database") < 0 ||
        migrate(s, migrations, err) < 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        pgn_error_set(err, "store", "", "%s (database '%s')", msg, path);
        pgd_store_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

int pgd_store_open(const char *path, pgd_store **out, pgn_error *err) {
    return pgd_store_open_with(path, pgn_schema_sources, out, err);
}

void pgd_store_close(pgd_store *s) {
    if (!s) return;
    for (int i = 0; i < s->n_cached; i++) sqlite3_finalize(s->cache[i].stmt);
    if (s->db) sqlite3_close(s->db);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Reads the one row of numbers an aggregate query returns into out[0..n-1]; param, when not
 * NULL, binds ?1. */
static int read_numbers(pgd_store *s, const char *sql, const char *param, double *out, int n,
                        const char *what, pgn_error *err) {
    for (int i = 0; i < n; i++) out[i] = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        if (param) sqlite3_bind_text(st, 1, param, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            for (int i = 0; i < n; i++) out[i] = sqlite3_column_double(st, i);
            ret = 0;
        } else {
            db_fail(s, err, what);
        }
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_schema_version(pgd_store *s, int64_t *version, pgn_error *err) {
    double v;
    int ret = read_numbers(s, "SELECT coalesce(max(version), 0) FROM schema_migrations", NULL,
                           &v, 1, "read schema version", err);
    *version = (int64_t)v;
    return ret;
}

/* ---- jobs ------------------------------------------------------------------------------- */

/* Column order every job query shares; spec, when selected, comes last (index 16). */
#define JOB_COLS                                                                               \
    "id, kind, name, state, device_requested, device, progress, attempts, result, error, "     \
    "created_at, started_at, finished_at, estimate, cancel_requested, interrupted"

static void col_copy(sqlite3_stmt *st, int col, char *out, size_t size) {
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(out, size, "%s", t ? (const char *)t : "");
}

/* A JSON column as an owned value; NULL for SQL NULL. */
static json_t *col_json_or_null(sqlite3_stmt *st, int col) {
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NULL : col_json(st, col);
}

static void job_from_row(sqlite3_stmt *st, bool with_spec, pgd_job *job) {
    *job = (pgd_job){.id = sqlite3_column_int64(st, 0)};
    char text[32];
    col_copy(st, 1, text, sizeof text);
    if (pgn_job_kind_parse(text, &job->kind) < 0) job->kind = PGN_JOB_TRAIN; /* CHECKed by schema use */
    col_copy(st, 2, job->name, sizeof job->name);
    col_copy(st, 3, text, sizeof text);
    if (pgd_job_state_parse(text, &job->state) < 0) job->state = PGD_JOB_FAILED; /* CHECK constraint */
    col_copy(st, 4, job->device_requested, sizeof job->device_requested);
    col_copy(st, 5, job->device, sizeof job->device);
    job->progress = sqlite3_column_double(st, 6);
    job->attempts = sqlite3_column_int64(st, 7);
    job->result = col_json_or_null(st, 8);
    json_t *error = col_json_or_null(st, 9);
    if (error) {
        job->has_error = true;
        pgd_error_from_json(error, &job->error);
        json_decref(error);
    }
    col_copy(st, 10, job->created_at, sizeof job->created_at);
    col_copy(st, 11, job->started_at, sizeof job->started_at);
    col_copy(st, 12, job->finished_at, sizeof job->finished_at);
    job->estimate = col_json_or_null(st, 13);
    job->cancel_requested = sqlite3_column_int(st, 14) != 0;
    job->interrupted = sqlite3_column_int64(st, 15);
    if (with_spec) job->spec = col_json_or_null(st, 16);
}

void pgd_job_release(pgd_job *job) {
    if (!job) return;
    json_decref(job->spec);
    json_decref(job->result);
    json_decref(job->estimate);
    job->spec = job->result = job->estimate = NULL;
}

void pgd_jobs_free(pgd_job *jobs, size_t n) {
    for (size_t i = 0; i < n; i++) pgd_job_release(&jobs[i]);
    free(jobs);
}

/* Steps st to its end, appending each row as a job (without spec) to *jobs; resets st. */
static int collect_jobs(pgd_store *s, sqlite3_stmt *st, pgd_job **jobs, size_t *n,
                        pgn_error *err, const char *what) {
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t grown = cap ? cap * 2 : 16;
            pgd_job *more = realloc(*jobs, grown * sizeof *more);
            if (!more) {
                stmt_done(st);
                pgn_error_set(err, "internal", "", "store: out of memory listing jobs");
                return -1;
            }
            *jobs = more;
            cap = grown;
        }
        job_from_row(st, false, &(*jobs)[(*n)++]);
    }
    stmt_done(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, err, what);
}

typedef struct insert_jobs {
    const pgd_new_job *jobs;
    size_t n;
    int64_t *ids;
} insert_jobs;

/* A new job's first log line, in the transaction that inserts the job: one commit a submission. */
static int insert_first_log(pgd_store *s, int64_t id, const char *line, char *time_out, pgn_error *err) {
    static const char sql[] = "INSERT INTO logs (job_id, seq, level, line) VALUES (?1, 1, 'info', ?2)"
                              " RETURNING created_at";
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return -1;
    char *visible = pgn_text_visible(line);
    if (!visible) {
        pgn_error_set(err, "internal", "", "store: out of memory");
        return -1;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, visible, -1, SQLITE_TRANSIENT);
    free(visible);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && time_out) {
        const char *at = (const char *)sqlite3_column_text(st, 0);
        snprintf(time_out, 32, "%s", at ? at : "");
    }
    if (rc == SQLITE_ROW) rc = sqlite3_step(st);
    stmt_done(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, err, "insert log line");
}

static int insert_jobs_tx(pgd_store *s, void *ctx, pgn_error *err) {
    /* Ids only grow: above every job there is and every job deleted (job_id_floor). */
    static const char sql[] =
        "INSERT INTO jobs (id, kind, name, state, device_requested, device, spec, estimate)"
        " VALUES ((SELECT max(coalesce(max(id), 0), (SELECT id FROM job_id_floor)) + 1"
        "          FROM jobs), ?1, ?2, 'queued', ?3, ?4, ?5, ?6)";
    insert_jobs *a = ctx;
    for (size_t i = 0; i < a->n; i++) {
        const pgd_new_job *job = &a->jobs[i];
        char *spec = pgn_json_dumps(job->spec);
        char *estimate = job->estimate ? pgn_json_dumps(job->estimate) : NULL;
        if (!spec || (job->estimate && !estimate)) {
            free(spec);
            free(estimate);
            pgn_error_set(err, "internal", "spec", "store: job spec cannot be serialised");
            return -1;
        }
        sqlite3_stmt *st = stmt(s, sql, err);
        if (!st) {
            free(spec);
            free(estimate);
            return -1;
        }
        sqlite3_bind_text(st, 1, pgn_job_kind_name(job->kind), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, job->name ? job->name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, job->device_requested, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, job->device, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, spec, -1, SQLITE_STATIC);
        if (estimate) sqlite3_bind_text(st, 6, estimate, -1, SQLITE_STATIC);
        else sqlite3_bind_null(st, 6);
        int rc = sqlite3_step(st);
        stmt_done(st);
        free(spec);
        free(estimate);
        if (rc != SQLITE_DONE) return db_fail(s, err, "insert job");
        a->ids[i] = sqlite3_last_insert_rowid(s->db);
        if (job->log_line && insert_first_log(s, a->ids[i], job->log_line, job->log_time, err) < 0) return -1;
    }
    return 0;
}

int pgd_store_jobs_insert(pgd_store *s, const pgd_new_job *jobs, size_t n, int64_t *ids,
                          pgn_error *err) {
    insert_jobs a = {.jobs = jobs, .n = n, .ids = ids};
    return write_transaction(s, insert_jobs_tx, &a, err);
}

int pgd_store_job_insert(pgd_store *s, const pgd_new_job *job, int64_t *id, pgn_error *err) {
    return pgd_store_jobs_insert(s, job, 1, id, err);
}

int pgd_store_queue_seconds(pgd_store *s, const char *device, double *seconds, pgn_error *err) {
    static const char sql[] = "SELECT total(json_extract(estimate, '$.seconds')) FROM jobs"
                              " WHERE state IN ('queued', 'running') AND device = ?1";
    return read_numbers(s, sql, device, seconds, 1, "sum queued work", err);
}

int pgd_store_job_get(pgd_store *s, int64_t id, bool with_spec, pgd_job *out, pgn_error *err) {
    static const char sql[] = "SELECT " JOB_COLS ", spec FROM jobs WHERE id = ?1";
    *out = (pgd_job){0};
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            job_from_row(st, with_spec, out);
            ret = 0;
        } else if (rc == SQLITE_DONE) {
            no_such_job(err, id);
        } else {
            db_fail(s, err, "read job");
        }
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_jobs_list(pgd_store *s, const pgd_job_filter *f, pgd_job **jobs, size_t *n,
                        int64_t *total, pgn_error *err) {
    /* One statement per filter combination, so each can use its index. */
    static const char list_any[] =
        "SELECT " JOB_COLS " FROM jobs ORDER BY id DESC LIMIT ?3 OFFSET ?4";
    static const char list_state[] =
        "SELECT " JOB_COLS " FROM jobs WHERE state = ?1 ORDER BY id DESC LIMIT ?3 OFFSET ?4";
    static const char list_kind[] =
        "SELECT " JOB_COLS " FROM jobs WHERE kind = ?2 ORDER BY id DESC LIMIT ?3 OFFSET ?4";
    static const char list_both[] = "SELECT " JOB_COLS " FROM jobs WHERE state = ?1 AND kind = ?2"
                                    " ORDER BY id DESC LIMIT ?3 OFFSET ?4";
    static const char count_any[] = "SELECT count(*) FROM jobs";
    static const char count_state[] = "SELECT count(*) FROM jobs WHERE state = ?1";
    static const char count_kind[] = "SELECT count(*) FROM jobs WHERE kind = ?2";
    static const char count_both[] = "SELECT count(*) FROM jobs WHERE state = ?1 AND kind = ?2";
    static const char *const list_sql[4] = {list_any, list_state, list_kind, list_both};
    static const char *const count_sql[4] = {count_any, count_state, count_kind, count_both};
    int which = (f->by_state ? 1 : 0) | (f->by_kind ? 2 : 0);
    const char *state = pgd_job_state_name(f->state), *kind = pgn_job_kind_name(f->kind);

    *jobs = NULL;
    *n = 0;
    pgd_job *list = NULL;
    size_t count = 0;
    int ret = -1;
    pthread_mutex_lock(&s->lock);
    /* Both reads in one transaction so total and the page agree. */
    if (run_stmt(s, begin_sql, err, "begin") < 0) goto unlock;
    sqlite3_stmt *st = stmt(s, count_sql[which], err);
    if (!st) goto rollback;
    if (f->by_state) sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
    if (f->by_kind) sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        db_fail(s, err, "count jobs");
        stmt_done(st);
        goto rollback;
    }
    *total = sqlite3_column_int64(st, 0);
    stmt_done(st);

    st = stmt(s, list_sql[which], err);
    if (!st) goto rollback;
    if (f->by_state) sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
    if (f->by_kind) sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, f->limit);
    sqlite3_bind_int64(st, 4, f->offset);
    if (collect_jobs(s, st, &list, &count, err, "list jobs") < 0) goto rollback;
    if (run_stmt(s, commit_sql, err, "commit") < 0) goto rollback;
    ret = 0;
    *jobs = list;
    *n = count;
    list = NULL;
    count = 0;
    goto unlock;
rollback:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
unlock:
    pthread_mutex_unlock(&s->lock);
    pgd_jobs_free(list, count);
    return ret;
}

int pgd_store_job_claim(pgd_store *s, const char *device, int64_t *id, json_t **spec,
                        pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = 'running', started_at = " NOW_SQL ", finished_at = NULL,"
        " attempts = attempts + 1, progress = 0"
        " WHERE id = (SELECT id FROM jobs WHERE state = 'queued' AND device = ?1"
        "             ORDER BY id LIMIT 1)"
        " RETURNING id, spec";
    *id = 0;
    *spec = NULL;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_text(st, 1, device, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            int64_t got = sqlite3_column_int64(st, 0);
            json_t *sp = col_json(st, 1);
            rc = sqlite3_step(st); /* runs the statement to completion: the commit */
            if (rc == SQLITE_DONE) {
                *id = got;
                *spec = sp;
                ret = 0;
            } else {
                json_decref(sp);
                db_fail(s, err, "claim job");
            }
        } else if (rc == SQLITE_DONE) {
            ret = 0;
        } else {
            db_fail(s, err, "claim job");
        }
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* Runs a one-row UPDATE on job id; when it changed nothing, says whether the job is missing
 * ("not_found") or in another state ("conflict", naming it). Caller holds the lock. */
static int update_job(pgd_store *s, sqlite3_stmt *st, int64_t id, const char *what,
                      pgn_error *err) {
    static const char state_sql[] = "SELECT state FROM jobs WHERE id = ?1";
    int rc = sqlite3_step(st);
    stmt_done(st);
    if (rc != SQLITE_DONE) return db_fail(s, err, what);
    if (sqlite3_changes(s->db) > 0) return 0;
    sqlite3_stmt *q = stmt(s, state_sql, err);
    if (!q) return -1;
    sqlite3_bind_int64(q, 1, id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        pgn_error_set(err, "conflict", "", "cannot %s job %lld: it is %s", what, (long long)id,
                      (const char *)sqlite3_column_text(q, 0));
    else if (rc == SQLITE_DONE)
        no_such_job(err, id);
    else
        db_fail(s, err, what);
    stmt_done(q);
    return -1;
}

int pgd_store_job_progress(pgd_store *s, int64_t id, double fraction, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET progress = ?2 WHERE id = ?1 AND state = 'running'";
    if (!(fraction >= 0)) fraction = 0; /* NaN too */
    if (fraction > 1) fraction = 1;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_double(st, 2, fraction);
        ret = update_job(s, st, id, "update progress of", err);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* The UPDATE that ends a queued or running job; result and error are JSON text or NULL.
 * Caller holds the lock. */
static int finish_job(pgd_store *s, int64_t id, pgd_job_state state, const char *result,
                      const char *error, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = ?2, result = ?3, error = ?4, finished_at = " NOW_SQL ","
        " progress = CASE WHEN ?2 = 'succeeded' THEN 1 ELSE progress END"
        " WHERE id = ?1 AND state IN ('queued', 'running')";
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, pgd_job_state_name(state), -1, SQLITE_STATIC);
    bind_text_or_null(st, 3, result);
    bind_text_or_null(st, 4, error);
    return update_job(s, st, id, "finish", err);
}

int pgd_store_job_finish(pgd_store *s, int64_t id, pgd_job_state state, const json_t *result,
                         const pgn_error *error, pgn_error *err) {
    if (state != PGD_JOB_SUCCEEDED && state != PGD_JOB_FAILED && state != PGD_JOB_CANCELLED) {
        pgn_error_set(err, "internal", "", "store: %s is not a final state",
                      pgd_job_state_name(state));
        return -1;
    }
    char *res = result ? pgn_json_dumps(result) : NULL;
    json_t *ej = error ? pgd_error_json(error) : NULL;
    char *er = ej ? pgn_json_dumps(ej) : NULL;
    json_decref(ej);
    pthread_mutex_lock(&s->lock);
    int ret = finish_job(s, id, state, res, er, err);
    pthread_mutex_unlock(&s->lock);
    free(res);
    free(er);
    return ret;
}

/* Ends running jobs (job id, or every one when id is 0) whose cancel was requested as
 * cancelled, with an error saying why: a job that was asked to stop never goes back to the
 * queue. *n receives how many. Caller is in a write transaction. */
static int end_cancel_requested(pgd_store *s, int64_t id, const char *why, int64_t *n,
                                pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = 'cancelled', finished_at = " NOW_SQL ","
        " error = json_object('code', 'cancelled', 'message', ?2, 'field', NULL)"
        " WHERE state = 'running' AND cancel_requested = 1 AND (?1 = 0 OR id = ?1)";
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, why, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    stmt_done(st);
    if (rc != SQLITE_DONE) return db_fail(s, err, "end cancelled jobs");
    *n = sqlite3_changes(s->db);
    return 0;
}

static int requeue_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] = "UPDATE jobs SET state = 'queued', started_at = NULL, progress = 0"
                              " WHERE id = ?1 AND state = 'running'";
    int64_t id = *(const int64_t *)ctx, ended = 0;
    if (end_cancel_requested(s, id, "cancelled on request while paragond was stopping", &ended,
                             err) < 0)
        return -1;
    if (ended) return 0;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    return update_job(s, st, id, "requeue", err);
}

int pgd_store_job_requeue(pgd_store *s, int64_t id, pgn_error *err) {
    return write_transaction(s, requeue_tx, &id, err);
}

/* The cancel of a queued job: it never ran, so there is nothing to stop. */
#define CANCELLED_QUEUED_MESSAGE "cancelled on request before it started"

typedef struct cancel_args {
    int64_t id;
    pgd_job *job; /* out: the job after the cancel */
    bool read;
} cancel_args;

static int cancel_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char state_sql[] = "SELECT state FROM jobs WHERE id = ?1";
    static const char queued_sql[] =
        "UPDATE jobs SET state = 'cancelled', finished_at = " NOW_SQL ", cancel_requested = 1,"
        " error = json_object('code', 'cancelled', 'message', '" CANCELLED_QUEUED_MESSAGE "',"
        " 'field', NULL) WHERE id = ?1 AND state = 'queued'";
    static const char running_sql[] =
        "UPDATE jobs SET cancel_requested = 1 WHERE id = ?1 AND state = 'running'";
    static const char get_sql[] = "SELECT " JOB_COLS ", spec FROM jobs WHERE id = ?1";
    cancel_args *a = ctx;
    sqlite3_stmt *st = stmt(s, state_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, a->id);
    int rc = sqlite3_step(st);
    pgd_job_state state = PGD_JOB_QUEUED;
    bool known = rc == SQLITE_ROW &&
                 pgd_job_state_parse((const char *)sqlite3_column_text(st, 0), &state) == 0;
    stmt_done(st);
    if (rc == SQLITE_DONE) return no_such_job(err, a->id);
    if (!known) return db_fail(s, err, "read job state");
    if (state != PGD_JOB_QUEUED && state != PGD_JOB_RUNNING) {
        pgn_error_set(err, "conflict", "", "job %lld has already finished (%s): nothing to cancel",
                      (long long)a->id, pgd_job_state_name(state));
        return -1;
    }
    st = stmt(s, state == PGD_JOB_QUEUED ? queued_sql : running_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, a->id);
    if (update_job(s, st, a->id, "cancel", err) < 0) return -1;
    st = stmt(s, get_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, a->id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        job_from_row(st, true, a->job);
        a->read = true;
    }
    stmt_done(st);
    return a->read ? 0 : db_fail(s, err, "read job");
}

int pgd_store_job_cancel(pgd_store *s, int64_t id, pgd_job *job, pgn_error *err) {
    *job = (pgd_job){0};
    cancel_args a = {.id = id, .job = job};
    int ret = write_transaction(s, cancel_tx, &a, err);
    if (ret < 0) pgd_job_release(job);
    return ret;
}

int pgd_store_job_cancel_requested(pgd_store *s, int64_t id, bool *requested, pgn_error *err) {
    static const char sql[] = "SELECT cancel_requested FROM jobs WHERE id = ?1";
    *requested = false;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *requested = sqlite3_column_int(st, 0) != 0;
            ret = 0;
        } else if (rc == SQLITE_DONE) {
            no_such_job(err, id);
        } else {
            db_fail(s, err, "read cancel request");
        }
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

static int delete_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char state_sql[] = "SELECT state FROM jobs WHERE id = ?1";
    /* Metrics, benchmark rows (and any other table keyed on the job) go with it: their
     * foreign keys are ON DELETE CASCADE. */
    static const char delete_sql[] =
        "DELETE FROM jobs WHERE id = ?1 AND state NOT IN ('queued', 'running')";
    int64_t id = *(const int64_t *)ctx;
    sqlite3_stmt *st = stmt(s, state_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    char state[16] = "";
    if (rc == SQLITE_ROW)
        snprintf(state, sizeof state, "%s", (const char *)sqlite3_column_text(st, 0));
    stmt_done(st);
    if (rc == SQLITE_DONE) return no_such_job(err, id);
    if (rc != SQLITE_ROW) return db_fail(s, err, "read job state");
    if (strcmp(state, "queued") == 0 || strcmp(state, "running") == 0) {
        pgn_error_set(err, "conflict", "",
                      "job %lld is %s: only a finished job can be deleted (cancel it first: "
                      "POST /api/v1/jobs/%lld/cancel)",
                      (long long)id, state, (long long)id);
        return -1;
    }
    st = stmt(s, delete_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    return update_job(s, st, id, "delete", err);
}

int pgd_store_job_delete(pgd_store *s, int64_t id, pgn_error *err) {
    return write_transaction(s, delete_tx, &id, err);
}

int pgd_store_job_reassign(pgd_store *s, int64_t id, const char *device, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET device = ?2 WHERE id = ?1 AND state = 'queued'";
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, device, -1, SQLITE_STATIC);
        ret = update_job(s, st, id, "reassign", err);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

typedef struct recover_args {
    int64_t max_attempts;
    pgd_recovery *out;
} recover_args;

/* Jobs left running by a process that ended without stopping them: each such run counts as
 * interrupted; a job interrupted max_attempts times ends failed ("crashed"), the others go back
 * to the queue. Both get a log line saying what happened. */
static int recover_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char count_sql[] =
        "UPDATE jobs SET interrupted = interrupted + 1 WHERE state = 'running'";
    /* The log lines come first, while the jobs are still 'running' and the two kinds tell apart
     * by their count; seq is the job's next, as pgd_store_log_add numbers it. */
    static const char log_sql[] =
        "INSERT INTO logs (job_id, seq, level, line)"
        " SELECT id, (SELECT coalesce(max(seq), 0) + 1 FROM logs WHERE job_id = jobs.id),"
        "  CASE WHEN interrupted >= ?1 THEN 'error' ELSE 'warn' END,"
        "  CASE WHEN interrupted >= ?1"
        "   THEN printf('failed: crashed: paragond ended while this job ran, %d times (run %d"
        " was the last); it is not run again (--max-attempts %d)', interrupted, attempts, ?1)"
        "   ELSE printf('paragond ended while this job ran (interrupted run %d of at most %d);"
        " queued again', interrupted, ?1) END"
        " FROM jobs WHERE state = 'running'";
    static const char crash_sql[] =
        "UPDATE jobs SET state = 'failed', finished_at = " NOW_SQL ","
        " error = json_object('code', 'crashed', 'message',"
        "  printf('paragond ended while this job ran, %d times; it is not run again"
        " (--max-attempts %d): it may be what ends the server', interrupted, ?1), 'field', NULL)"
        " WHERE state = 'running' AND interrupted >= ?1";
    static const char requeue_sql[] =
        "UPDATE jobs SET state = 'queued', started_at = NULL, progress = 0"
        " WHERE state = 'running'";
    recover_args *a = ctx;
    if (end_cancel_requested(s, 0, "cancelled on request; paragond ended before the job stopped",
                             &a->out->cancelled, err) < 0)
        return -1;
    const char *const steps[] = {count_sql, log_sql, crash_sql, requeue_sql};
    const char *const what[] = {"count interrupted runs", "log interrupted runs",
                                "end crashed jobs", "requeue running jobs"};
    int64_t *changed[] = {NULL, NULL, &a->out->crashed, &a->out->requeued};
    for (int i = 0; i < 4; i++) {
        sqlite3_stmt *st = stmt(s, steps[i], err);
        if (!st) return -1;
        if (i > 0) sqlite3_bind_int64(st, 1, a->max_attempts);
        int rc = sqlite3_step(st);
        stmt_done(st);
        if (rc != SQLITE_DONE) return db_fail(s, err, what[i]);
        if (changed[i]) *changed[i] = sqlite3_changes(s->db);
    }
    return 0;
}

int pgd_store_recover(pgd_store *s, int64_t max_attempts, pgd_recovery *out, pgn_error *err) {
    *out = (pgd_recovery){0};
    recover_args a = {.max_attempts = max_attempts > 0 ? max_attempts : 1, .out = out};
    int ret = write_transaction(s, recover_tx, &a, err);
    if (ret < 0) *out = (pgd_recovery){0};
    return ret;
}

int pgd_store_queued_jobs(pgd_store *s, pgd_job **jobs, size_t *n, pgn_error *err) {
    static const char sql[] = "SELECT " JOB_COLS " FROM jobs WHERE state = 'queued' ORDER BY id";
    *jobs = NULL;
    *n = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) ret = collect_jobs(s, st, jobs, n, err, "list queued jobs");
    pthread_mutex_unlock(&s->lock);
    if (ret < 0) {
        pgd_jobs_free(*jobs, *n);
        *jobs = NULL;
        *n = 0;
    }
    return ret;
}

int pgd_store_queued_counts(pgd_store *s, json_t **out, pgn_error *err) {
    static const char sql[] =
        "SELECT device, count(*) FROM jobs WHERE state = 'queued' GROUP BY device";
    *out = NULL;
    json_t *obj = json_object();
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            json_object_set_new(obj, (const char *)sqlite3_column_text(st, 0),
                                json_integer(sqlite3_column_int64(st, 1)));
        if (rc == SQLITE_DONE) ret = 0;
        else db_fail(s, err, "count queued jobs");
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    if (ret == 0) *out = obj;
    else json_decref(obj);
    return ret;
}


/* ---- metrics ---------------------------------------------------------------------------- */

int pgd_store_metric_add(pgd_store *s, int64_t job_id, const char *name, int64_t step,
                         double value, pgn_error *err) {
    static const char sql[] =
        "INSERT INTO metrics (job_id, name, step, value) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT (job_id, name, step) DO UPDATE"
        " SET value = excluded.value, created_at = excluded.created_at";
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, step);
        if (isfinite(value)) sqlite3_bind_double(st, 4, value);
        else sqlite3_bind_null(st, 4);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) ret = 0;
        else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            no_such_job(err, job_id);
        else db_fail(s, err, "insert metric");
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* 0 when job_id exists; else -1 with "not_found" (or the database's error). Under s->lock. */
static int job_exists(pgd_store *s, int64_t job_id, pgn_error *err) {
    static const char sql[] = "SELECT 1 FROM jobs WHERE id = ?1";
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, job_id);
    int rc = sqlite3_step(st);
    stmt_done(st);
    if (rc == SQLITE_ROW) return 0;
    if (rc == SQLITE_DONE) no_such_job(err, job_id);
    else db_fail(s, err, "read job");
    return -1;
}

static json_t *metric_row(sqlite3_stmt *st) {
    json_t *m = json_object();
    json_object_set_new(m, "name", col_text(st, 0));
    json_object_set_new(m, "step", json_integer(sqlite3_column_int64(st, 1)));
    json_object_set_new(m, "value", col_real(st, 2));
    json_object_set_new(m, "created_at", col_text(st, 3));
    return m;
}

/* A job's rows from sql (bound by the caller: ?1 is the job id), with the job's existence checked
 * in the same read transaction, so a job deleted meanwhile is a 404 rather than no rows. */
static int list_job_rows(pgd_store *s, int64_t job_id, sqlite3_stmt *(*prepare)(pgd_store *, const void *, pgn_error *),
                         const void *args, json_t *(*row)(sqlite3_stmt *), const char *what, json_t **out,
                         pgn_error *err) {
    *out = NULL;
    json_t *arr = json_array();
    int ret = -1;
    pthread_mutex_lock(&s->lock);
    if (run_stmt(s, begin_sql, err, "begin") < 0) goto unlock;
    sqlite3_stmt *st = NULL;
    if (job_exists(s, job_id, err) < 0 || !(st = prepare(s, args, err)) ||
        collect_rows(s, st, row, arr, err, what) < 0 || run_stmt(s, commit_sql, err, "commit") < 0) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
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

static sqlite3_stmt *prepare_metrics(pgd_store *s, const void *args, pgn_error *err) {
    static const char all_sql[] = "SELECT name, step, value, created_at FROM metrics"
                                  " WHERE job_id = ?1 AND step > ?3 ORDER BY name, step";
    static const char one_sql[] = "SELECT name, step, value, created_at FROM metrics"
                                  " WHERE job_id = ?1 AND name = ?2 AND step > ?3"
                                  " ORDER BY name, step";
    const metrics_query *q = args;
    sqlite3_stmt *st = stmt(s, q->name ? one_sql : all_sql, err);
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, q->job_id);
    if (q->name) sqlite3_bind_text(st, 2, q->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, q->after);
    return st;
}

int pgd_store_metrics_list(pgd_store *s, int64_t job_id, const char *name, bool has_after,
                           int64_t after_step, json_t **out, pgn_error *err) {
    metrics_query q = {job_id, name, has_after ? after_step : INT64_MIN};
    return list_job_rows(s, job_id, prepare_metrics, &q, metric_row, "list metrics", out, err);
}

/* ---- logs ------------------------------------------------------------------------------- */


int pgd_store_log_add(pgd_store *s, int64_t job_id, const char *level, const char *line,
                      int64_t *seq, char created_at[32], pgn_error *err) {
    /* The next seq is read and written in one statement under the lock: no gaps, no repeats. */
    static const char sql[] =
        "INSERT INTO logs (job_id, seq, level, line)"
        " SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3 FROM logs WHERE job_id = ?1"
        " RETURNING seq, created_at";
    *seq = 0;
    created_at[0] = 0;
    char *visible = pgn_text_visible(line);
    if (!visible) {
        pgn_error_set(err, "internal", "", "store: out of memory");
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_text(st, 2, level, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, visible, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            int64_t got = sqlite3_column_int64(st, 0);
            const char *at = (const char *)sqlite3_column_text(st, 1);
            snprintf(created_at, 32, "%s", at ? at : "");
            rc = sqlite3_step(st); /* runs the statement to completion: the commit */
            if (rc == SQLITE_DONE) {
                *seq = got;
                ret = 0;
            }
        }
        if (ret < 0 && rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            no_such_job(err, job_id);
        else if (ret < 0)
            db_fail(s, err, "insert log line");
        stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    free(visible);
    return ret;
}

static json_t *log_row(sqlite3_stmt *st) {
    const char *line = (const char *)sqlite3_column_text(st, 2);
    json_t *e = json_object();
    json_object_set_new(e, "seq", json_integer(sqlite3_column_int64(st, 0)));
    json_object_set_new(e, "level", col_text(st, 1));
    json_object_set_new(e, "line", pgd_json_string_lossy(line ? line : ""));
    json_object_set_new(e, "created_at", col_text(st, 3));
    return e;
}

typedef struct {
    int64_t job_id, after;
} logs_query;

static sqlite3_stmt *prepare_logs(pgd_store *s, const void *args, pgn_error *err) {
    static const char sql[] = "SELECT seq, level, line, created_at FROM logs"
                              " WHERE job_id = ?1 AND seq > ?2 ORDER BY seq";
    const logs_query *q = args;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, q->job_id);
    sqlite3_bind_int64(st, 2, q->after);
    return st;
}

int pgd_store_logs_list(pgd_store *s, int64_t job_id, int64_t after, json_t **out,
                        pgn_error *err) {
    logs_query q = {job_id, after};
    return list_job_rows(s, job_id, prepare_logs, &q, log_row, "list log lines", out, err);
}

/* ---- benchmarks ------------------------------------------------------------------------- */

static int bad_row(pgn_error *err, size_t i, const char *key, const char *what) {
    char field[128];
    if (key) snprintf(field, sizeof field, "rows[%zu].%s", i, key);
    else snprintf(field, sizeof field, "rows[%zu]", i);
    pgn_error_set(err, "invalid_row", field, "%s: %s", field, what);
    return -1;
}

/* Checks every row before anything is written (the rules are in store.h). */
static int check_bench_rows(const json_t *rows, pgn_error *err) {
    static const char *const required[] = {"suite", "case", "device"};
    static const char *const optional[] = {"adapter", "version"};
    static const char *const reserved[] = {"id", "job_id", "created_at"};
    if (!json_is_array(rows)) {
        pgn_error_set(err, "invalid_row", "rows", "rows: must be an array of benchmark rows");
        return -1;
    }
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        if (!json_is_object(row)) return bad_row(err, i, NULL, "must be an object");
        for (size_t k = 0; k < sizeof required / sizeof *required; k++) {
            const json_t *v = json_object_get(row, required[k]);
            if (!json_is_string(v) || json_string_length(v) == 0)
                return bad_row(err, i, required[k], "must be a non-empty string");
        }
        for (size_t k = 0; k < sizeof optional / sizeof *optional; k++) {
            const json_t *v = json_object_get(row, optional[k]);
            if (v && !json_is_string(v) && !json_is_null(v))
                return bad_row(err, i, optional[k], "must be a string");
        }
        for (size_t k = 0; k < sizeof reserved / sizeof *reserved; k++)
            if (json_object_get(row, reserved[k]))
                return bad_row(err, i, reserved[k], "is set by the store, not by a row");
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)row, key, v) {
            if (json_is_object(v) || json_is_array(v))
                return bad_row(err, i, key,
                               "must be a number, string, boolean or null (rows are flat)");
        }
    }
    return 0;
}

static const char *row_string(const json_t *row, const char *key) {
    return json_string_value(json_object_get(row, key)); /* NULL for null or absent */
}

/* Inserts checked rows of job_id (0: none) with one created_at. Caller is in a transaction. */
static int insert_bench_rows(pgd_store *s, int64_t job_id, const json_t *rows,
                             pgn_error *err) {
    static const char now_sql[] = "SELECT " NOW_SQL;
    static const char sql[] =
        "INSERT INTO benchmarks (job_id, suite, case_id, device, adapter, version, created_at,"
        " data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    sqlite3_stmt *st = stmt(s, now_sql, err);
    if (!st) return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        stmt_done(st);
        return db_fail(s, err, "read the time");
    }
    char now[32];
    snprintf(now, sizeof now, "%s", (const char *)sqlite3_column_text(st, 0));
    stmt_done(st);

    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        /* Full precision: the CSV prints each figure as the shortest text that reads back the
         * engine's double, so the export matches `paragon bench` bit for bit. */
        char *data = json_dumps(row, JSON_COMPACT);
        if (!data) {
            pgn_error_set(err, "internal", "", "store: benchmark row %zu cannot be serialised", i);
            return -1;
        }
        st = stmt(s, sql, err);
        if (!st) {
            free(data);
            return -1;
        }
        if (job_id > 0) sqlite3_bind_int64(st, 1, job_id);
        else sqlite3_bind_null(st, 1);
        bind_text_or_null(st, 2, row_string(row, "suite"));
        bind_text_or_null(st, 3, row_string(row, "case"));
        bind_text_or_null(st, 4, row_string(row, "device"));
        bind_text_or_null(st, 5, row_string(row, "adapter"));
        bind_text_or_null(st, 6, row_string(row, "version"));
        sqlite3_bind_text(st, 7, now, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, data, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        stmt_done(st);
        free(data);
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return no_such_job(err, job_id);
        if (rc != SQLITE_DONE) return db_fail(s, err, "insert benchmark row");
    }
    return 0;
}

typedef struct bench_batch {
    int64_t job_id;
    const json_t *rows;
    const char *result; /* bench_finish: the job's result as JSON text */
} bench_batch;

static int bench_add_tx(pgd_store *s, void *ctx, pgn_error *err) {
    const bench_batch *b = ctx;
    return insert_bench_rows(s, b->job_id, b->rows, err);
}

int pgd_store_bench_add(pgd_store *s, int64_t job_id, const json_t *rows, pgn_error *err) {
    if (check_bench_rows(rows, err) < 0) return -1;
    bench_batch b = {.job_id = job_id, .rows = rows};
    return write_transaction(s, bench_add_tx, &b, err);
}

static int bench_finish_tx(pgd_store *s, void *ctx, pgn_error *err) {
    const bench_batch *b = ctx;
    if (finish_job(s, b->job_id, PGD_JOB_SUCCEEDED, b->result, NULL, err) < 0) return -1;
    return insert_bench_rows(s, b->job_id, b->rows, err);
}

int pgd_store_bench_finish(pgd_store *s, int64_t job_id, const json_t *result,
                           pgn_error *err) {
    const json_t *rows = json_object_get(result, "rows");
    if (check_bench_rows(rows, err) < 0) return -1;
    char *text = pgn_json_dumps(result);
    if (!text) {
        pgn_error_set(err, "internal", "", "store: the job's result cannot be serialised");
        return -1;
    }
    bench_batch b = {.job_id = job_id, .rows = rows, .result = text};
    int ret = write_transaction(s, bench_finish_tx, &b, err);
    free(text);
    return ret;
}

/* The stored row plus the store's "id", "job_id" and "created_at" (columns 0-3). */
static json_t *bench_from_row(sqlite3_stmt *st) {
    json_t *o = col_json(st, 3);
    if (!json_is_object(o)) { /* the CHECK constraint keeps this from happening */
        json_decref(o);
        o = json_object();
    }
    json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, 0)));
    json_object_set_new(o, "job_id", sqlite3_column_type(st, 1) == SQLITE_NULL
                                         ? json_null()
                                         : json_integer(sqlite3_column_int64(st, 1)));
    json_object_set_new(o, "created_at", col_text(st, 2));
    return o;
}

/* Runs a read of benchmark rows (?1 suite, ?2 device: NULL when not given, ?3 limit) under the
 * lock; *out is a new array, or NULL on failure. */
static int bench_query(pgd_store *s, const char *sql, const char *suite, const char *device,
                       int64_t limit, json_t **out, pgn_error *err) {
    *out = NULL;
    json_t *arr = json_array();
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        if (suite) sqlite3_bind_text(st, 1, suite, -1, SQLITE_STATIC);
        if (device) sqlite3_bind_text(st, 2, device, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, limit);
        ret = collect_rows(s, st, bench_from_row, arr, err, "list benchmark rows");
    }
    pthread_mutex_unlock(&s->lock);
    if (ret == 0) *out = arr;
    else json_decref(arr);
    return ret;
}

/* The newest ?3 rows matching `where`, put back in id order. */
#define BENCH_COLS "id, job_id, created_at, data"
#define BENCH_NEWEST(where)                                                                    \
    "SELECT " BENCH_COLS " FROM (SELECT " BENCH_COLS " FROM benchmarks" where                  \
    " ORDER BY id DESC LIMIT ?3) ORDER BY id"

int pgd_store_bench_list(pgd_store *s, const char *suite, const char *device, int64_t limit,
                         json_t **rows, pgn_error *err) {
    /* One statement per filter combination, so each can use its index. */
    static const char any[] = BENCH_NEWEST("");
    static const char by_suite[] = BENCH_NEWEST(" WHERE suite = ?1");
    static const char by_device[] = BENCH_NEWEST(" WHERE device = ?2");
    static const char by_both[] = BENCH_NEWEST(" WHERE suite = ?1 AND device = ?2");
    static const char *const sql[4] = {any, by_suite, by_device, by_both};
    return bench_query(s, sql[(suite ? 1 : 0) | (device ? 2 : 0)], suite, device,
                       limit < 0 ? 0 : limit, rows, err);
}

int pgd_store_bench_latest(pgd_store *s, const char *device, const char *suite,
                           json_t **rows, pgn_error *err) {
    /* newest: per suite, the run of its highest id (SQLite takes the bare columns of a
     * max() query from the row that holds the max). A run is a job's rows; rows stored
     * without a job form one run per batch, told apart by the created_at it shares. */
    static const char sql[] =
        "WITH newest AS (SELECT suite, job_id, created_at, max(id) FROM benchmarks"
        "                WHERE device = ?2 AND (?1 IS NULL OR suite = ?1) GROUP BY suite)"
        " SELECT b.id, b.job_id, b.created_at, b.data FROM benchmarks AS b JOIN newest AS n"
        "   ON b.suite = n.suite AND b.job_id IS n.job_id"
        "  AND (n.job_id IS NOT NULL OR b.created_at = n.created_at)"
        " WHERE b.device = ?2 ORDER BY b.id LIMIT ?3";
    return bench_query(s, sql, suite, device, -1, rows, err);
}

/* ---- figures for /metrics --------------------------------------------------------------- */

int pgd_store_job_state_counts(pgd_store *s, int64_t counts[PGD_JOB_STATES], pgn_error *err) {
    static const char sql[] = "SELECT state, count(*) FROM jobs GROUP BY state";
    for (int i = 0; i < PGD_JOB_STATES; i++) counts[i] = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1, rc = SQLITE_ERROR;
    sqlite3_stmt *st = stmt(s, sql, err);
    if (st) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            pgd_job_state state;
            const char *name = (const char *)sqlite3_column_text(st, 0);
            if (name && pgd_job_state_parse(name, &state) == 0)
                counts[state] = sqlite3_column_int64(st, 1);
        }
        stmt_done(st);
        ret = rc == SQLITE_DONE ? 0 : db_fail(s, err, "count jobs by state");
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_counters(pgd_store *s, pgd_counters *out, pgn_error *err) {
    static const char sql[] =
        "SELECT (SELECT value FROM counters WHERE name = 'inet_interactions'),"
        " (SELECT value FROM counters WHERE name = 'flops'),"
        " (SELECT value FROM counters WHERE name = 'jobs_succeeded'),"
        " (SELECT value FROM counters WHERE name = 'jobs_failed'),"
        " (SELECT value FROM counters WHERE name = 'jobs_cancelled')";
    double v[5];
    int ret = read_numbers(s, sql, NULL, v, 5, "read counters", err);
    *out = (pgd_counters){.interactions = v[0], .flops = v[1]};
    out->finished[PGD_JOB_SUCCEEDED] = v[2];
    out->finished[PGD_JOB_FAILED] = v[3];
    out->finished[PGD_JOB_CANCELLED] = v[4];
    return ret;
}
