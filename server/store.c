/* store.c: owns paragond's SQLite database itself: opening it (WAL, foreign keys, busy
 * timeout), the migration runner over the embedded schema/NNN_name.sql files, the statement
 * cache and the transaction and row helpers the store's other files share (store_internal.h).
 * What is stored lives beside it: store_jobs.c (job rows, the queue and the counters),
 * store_job_states.c (a job's way through its states), store_placements.c (where jobs were
 * placed and why), store_series.c (metric series and logs), store_bench.c (benchmark rows and
 * their rates), store_tunings.c (device tunings), store_datasets.c (dataset records). */
#include "store_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* A failed statement as code "store_unavailable" (the database's state: callers retry a job's
 * end on it, and the API answers 503) or "store" (db.h). */
int store_fail(pgd_store *s, pgn_error *err, const char *what) { return db_fail(s->db, err, what); }

/* The cached statement for sql (a static string), reset and ready to bind. */
db_stmt *store_stmt(pgd_store *s, const char *sql, pgn_error *err) {
    for (int i = 0; i < s->n_cached; i++)
        if (s->cache[i].sql == sql) return s->cache[i].stmt;
    db_stmt *st = db_prepare(s->db, sql, err);
    if (!st) return NULL;
    if (s->n_cached == STMT_CACHE_MAX) {
        /* Only a programming error gets here: the set of statements is fixed. */
        db_finalize(st);
        pgn_error_set(err, PGN_E_INTERNAL, "", "store: statement cache full");
        return NULL;
    }
    s->cache[s->n_cached].sql = sql;
    s->cache[s->n_cached].stmt = st;
    s->n_cached++;
    return st;
}

/* Every statement is reset right after use so that it holds no read transaction open. */
void store_stmt_done(db_stmt *st) { db_reset(st); }

/* Fails with not_found naming the job id. */
int store_no_such_job(pgn_error *err, int64_t id) {
    pgn_error_set(err, PGN_E_NOT_FOUND, "", "job %lld does not exist", (long long)id);
    return -1;
}

static int exec_sql(pgd_store *s, const char *sql, pgn_error *err, const char *what) {
    return db_exec(s->db, sql, err, what);
}

/* Runs a cached statement that returns no rows (BEGIN, COMMIT). */
int store_run(pgd_store *s, const char *sql, pgn_error *err, const char *what) {
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    int rc = db_step(st);
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, what);
}

const char store_begin_sql[] = "BEGIN";
const char store_begin_write_sql[] = "BEGIN IMMEDIATE";
const char store_commit_sql[] = "COMMIT";

/* Waiting writes, each its body between SAVEPOINT and RELEASE (a body that fails is rolled back
 * alone), in one transaction: one commit, whose WAL frames hold each page once however many
 * bodies changed it. A lone write runs as it always did. Caller holds the lock. */
static const char savepoint_sql[] = "SAVEPOINT w", rollback_to_sql[] = "ROLLBACK TO w", release_sql[] = "RELEASE w";

static void run_writes(pgd_store *s, store_write *batch) {
    bool alone = batch->next == NULL;
    for (store_write *w = batch; w; w = w->next) w->rc = 1; /* not run */
    pgn_error e; /* why the transaction itself failed */
    pgn_error_clear(&e);
    bool broke = store_run(s, store_begin_write_sql, &e, "begin") < 0, undone = false;
    for (store_write *w = batch; w && !broke; w = w->next) {
        if (alone) {
            undone = (w->rc = w->fn(s, w->ctx, w->err)) < 0;
            break;
        }
        if ((broke = store_run(s, savepoint_sql, &e, "begin a write") < 0)) break;
        if ((w->rc = w->fn(s, w->ctx, w->err)) < 0) broke = store_run(s, rollback_to_sql, &e, "undo a write") < 0;
        if (!broke) broke = store_run(s, release_sql, &e, "end a write") < 0;
    }
    if (!broke && !undone) broke = store_run(s, store_commit_sql, &e, "commit") < 0;
    if (broke || undone) db_rollback(s->db);
    /* a body that failed says why; the others, why the transaction did not commit */
    for (store_write *w = batch; w && broke; w = w->next) {
        if (w->rc >= 0) *w->err = e;
        w->rc = -1;
    }
}

/* Runs fn(s, ctx, err) under the lock inside one write transaction: committed when fn returns
 * 0, rolled back otherwise. It takes the write lock first (BEGIN IMMEDIATE), so a transaction
 * that reads before it writes waits out another process's writer instead of failing. On SQLite
 * the writes that wait for the lock meanwhile go in the same transaction (run_writes): each
 * still returns only once its work is committed. */
int store_write_tx(pgd_store *s, int (*fn)(pgd_store *, void *, pgn_error *),
                             void *ctx, pgn_error *err) {
    store_write me = {.fn = fn, .ctx = ctx, .err = err, .rc = -1};
    if (s->shared) { /* PostgreSQL: every node's writes take the store's advisory lock anyway */
        pthread_mutex_lock(&s->lock);
        run_writes(s, &me);
        pthread_mutex_unlock(&s->lock);
        return me.rc;
    }
    pthread_mutex_lock(&s->writes_lock);
    *s->writes_tail = &me;
    s->writes_tail = &me.next;
    pthread_mutex_unlock(&s->writes_lock);
    pthread_mutex_lock(&s->lock);
    pthread_mutex_lock(&s->writes_lock);
    store_write *batch = me.done ? NULL : s->writes; /* ours is in it */
    if (batch) {
        s->writes = NULL;
        s->writes_tail = &s->writes;
    }
    pthread_mutex_unlock(&s->writes_lock);
    if (batch) {
        run_writes(s, batch);
        pthread_mutex_lock(&s->writes_lock);
        for (store_write *w = batch; w; w = w->next) w->done = true;
        pthread_mutex_unlock(&s->writes_lock);
    }
    pthread_mutex_unlock(&s->lock);
    return me.rc;
}

/* Steps st to its end, appending row(st) to arr for each row; resets st. */
int store_collect_rows(pgd_store *s, db_stmt *st, json_t *(*row)(db_stmt *),
                        json_t *arr, pgn_error *err, const char *what) {
    int rc;
    while ((rc = db_step(st)) == DB_ROW) json_array_append_new(arr, row(st));
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, what);
}

void store_bind_text_or_null(db_stmt *st, int idx, const char *text) {
    db_bind_text(st, idx, text);
}

json_t *store_col_text(db_stmt *st, int col) {
    const char *t = db_column_text(st, col);
    return t ? json_string(t) : json_null();
}

/* A JSON column as a JSON value; text that does not parse (never written by us) comes back
 * as a string rather than being dropped. */
json_t *store_col_json(db_stmt *st, int col) {
    const char *t = db_column_text(st, col);
    if (!t) return json_null();
    json_t *v = pgn_json_loads(t);
    return v ? v : json_string(t);
}

json_t *store_col_real(db_stmt *st, int col) {
    if (db_column_is_null(st, col)) return json_null();
    return json_real(db_column_double(st, col));
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

    /* A write transaction takes the write lock first, so two processes starting at once cannot
     * both decide that a version is missing. */
    if (store_run(s, store_begin_write_sql, err, "begin migration") < 0) return -1;
    db_stmt *st = store_stmt(s, is_applied_sql, err);
    if (!st) goto fail;
    db_bind_int64(st, 1, m->version);
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc == DB_ROW) return exec_sql(s, "COMMIT", err, "commit migration");
    if (rc != DB_DONE) {
        store_fail(s, err, "read schema_migrations");
        goto fail;
    }

    char what[160];
    snprintf(what, sizeof what, "schema migration %s failed", m->file->name);
    if (db_exec(s->db, (const char *)m->file->data, err, what) < 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        pgn_error_set(err, PGN_E_STORE, "", "%s", msg);
        goto fail;
    }
    st = store_stmt(s, record_sql, err);
    if (!st) goto fail;
    db_bind_int64(st, 1, m->version);
    db_bind_text(st, 2, m->file->name);
    rc = db_step(st);
    store_stmt_done(st);
    if (rc != DB_DONE) {
        store_fail(s, err, "record migration");
        goto fail;
    }
    if (exec_sql(s, "COMMIT", err, "commit migration") < 0) goto fail;
    return 0;
fail:
    db_rollback(s->db);
    return -1;
}

static int migrate(pgd_store *s, const pgn_embedded *table, pgn_error *err) {
    /* In a write transaction: nodes of a cluster that start at once would race to create it. */
    if (store_run(s, store_begin_write_sql, err, "begin") < 0) return -1;
    if (exec_sql(s,
                 "CREATE TABLE IF NOT EXISTS schema_migrations ("
                 " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
                 err, "create schema_migrations") < 0 ||
        exec_sql(s, "COMMIT", err, "commit schema_migrations") < 0) {
        db_rollback(s->db);
        return -1;
    }

    size_t n = 0;
    while (table[n].name) n++;
    migration *list = calloc(n ? n : 1, sizeof *list);
    if (!list) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }
    int ret = -1;
    for (size_t i = 0; i < n; i++) {
        list[i].file = &table[i];
        list[i].version = migration_version(table[i].name);
        if (list[i].version < 0) {
            pgn_error_set(err, PGN_E_STORE, "", "store: schema file '%s' is not named NNN_name.sql",
                          table[i].name);
            goto out;
        }
    }
    qsort(list, n, sizeof *list, migration_cmp);
    for (size_t i = 1; i < n; i++) {
        if (list[i].version == list[i - 1].version) {
            pgn_error_set(err, PGN_E_STORE, "", "store: schema files '%s' and '%s' share version %lld",
                          list[i - 1].file->name, list[i].file->name,
                          (long long)list[i].version);
            goto out;
        }
    }

    /* A database written by a newer paragond has tables this one does not understand. */
    int64_t newest = 0;
    db_stmt *st = store_stmt(s, "SELECT coalesce(max(version), 0) FROM schema_migrations", err);
    if (!st) goto out;
    if (db_step(st) == DB_ROW) newest = db_column_int64(st, 0);
    store_stmt_done(st);
    int64_t known = n ? list[n - 1].version : 0;
    if (newest > known) {
        pgn_error_set(err, PGN_E_STORE, "",
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

/* A store with no connection yet (NULL: out of memory, said in err). */
static pgd_store *store_new(pgn_error *err) {
    pgd_store *s = calloc(1, sizeof *s);
    if (!s) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->writes_lock, NULL);
    s->writes_tail = &s->writes;
    s->lease_ms = PGD_LEASE_DEFAULT_MS;
    return s;
}

int pgd_store_open_with(const char *target, const pgn_embedded *migrations, pgd_store **out,
                        pgn_error *err) {
    *out = NULL;
    pgd_store *s = store_new(err);
    if (!s) return -1;
    if (db_open(target, &s->db, err) < 0) {
        pgd_store_close(s);
        return -1;
    }
    s->shared = db_engine_in(s->db) == DB_POSTGRESQL;
    if (!migrations) migrations = s->shared ? pgd_schema_postgresql : pgd_schema_sources;
    if (migrate(s, migrations, err) < 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        pgn_error_set(err, err->code == PGN_E_STORE_UNAVAILABLE ? PGN_E_STORE_UNAVAILABLE : PGN_E_STORE,
                      "", "%s (database '%s')", msg, db_name(s->db));
        pgd_store_close(s);
        return -1;
    }
    const char *file = pgd_store_file(target); /* readers of a file; a database in memory is one connection's */
    bool readable = !s->shared && file && *file && strcmp(file, ":memory:") != 0 && strncmp(file, "file:", 5) != 0;
    for (; readable && s->n_readers < STORE_READERS; s->n_readers++) {
        pgd_store *r = store_new(err);
        if (!r || db_open(target, &r->db, err) < 0) {
            pgd_store_close(r);
            pgd_store_close(s);
            return -1;
        }
        s->readers[s->n_readers] = r;
    }
    *out = s;
    return 0;
}

pgd_store *store_reader(pgd_store *s) {
    static atomic_uint threads; /* numbers each thread that reads once, for its own reader */
    static _Thread_local unsigned me;
    for (size_t i = 0; i < s->n_readers; i++)
        if (pthread_mutex_trylock(&s->readers[i]->lock) == 0) return s->readers[i];
    if (!me) me = atomic_fetch_add(&threads, 1) + 1;
    pgd_store *r = s->n_readers ? s->readers[me % s->n_readers] : s;
    pthread_mutex_lock(&r->lock);
    return r;
}

int pgd_store_open(const char *target, pgd_store **out, pgn_error *err) {
    return pgd_store_open_with(target, NULL, out, err);
}

bool pgd_store_shared(const pgd_store *s) { return s->shared; }

void pgd_store_set_node(pgd_store *s, const char *node, int64_t lease_ms) {
    pthread_mutex_lock(&s->lock);
    snprintf(s->node, sizeof s->node, "%s", node ? node : "");
    s->lease_ms = lease_ms > 0 ? lease_ms : PGD_LEASE_DEFAULT_MS;
    pthread_mutex_unlock(&s->lock);
}

int64_t pgd_store_lease_ms(pgd_store *s) {
    pthread_mutex_lock(&s->lock);
    int64_t ms = s->lease_ms;
    pthread_mutex_unlock(&s->lock);
    return ms;
}

int pgd_store_hold_node(pgd_store *s, pgn_error *err) {
    pthread_mutex_lock(&s->lock);
    char name[128];
    snprintf(name, sizeof name, "paragond node %s", s->node);
    int ret = db_hold_name(s->db, name, err);
    if (ret < 0 && err->code == PGN_E_LOCKED)
        pgn_error_set(err, PGN_E_LOCKED, "node",
                      "node '%s' is running on this store already: give this paragond another --node", s->node);
    pthread_mutex_unlock(&s->lock);
    return ret;
}

const char *pgd_store_file(const char *target) {
    const char *rest;
    return db_engine_of(target, &rest) == DB_SQLITE ? rest : NULL;
}

struct pgd_store_watch {
    pgd_db *db;
};

int pgd_store_watch_open(const char *target, pgd_store_watch **out, pgn_error *err) {
    *out = NULL;
    pgd_db *db;
    if (db_open(target, &db, err) < 0) return -1;
    int rc = db_listen(db, PGD_STORE_CHANNEL, err);
    if (rc <= 0) {
        db_close(db);
        return rc;
    }
    pgd_store_watch *w = calloc(1, sizeof *w);
    if (!w) {
        db_close(db);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }
    w->db = db;
    *out = w;
    return 0;
}

int pgd_store_watch_wait(pgd_store_watch *w, int timeout_ms, pgd_job_note *notes, size_t max, size_t *n,
                         pgn_error *err) {
    db_note got[PGD_STORE_WATCH_MAX];
    if (max > sizeof got / sizeof *got) max = sizeof got / sizeof *got;
    if (db_notifications(w->db, timeout_ms, got, max, n, err) < 0) return -1;
    for (size_t i = 0; i < *n; i++) {
        notes[i].id = got[i].number;
        snprintf(notes[i].state, sizeof notes[i].state, "%s", got[i].word);
    }
    return 0;
}

void pgd_store_watch_close(pgd_store_watch *w) {
    if (!w) return;
    db_close(w->db);
    free(w);
}

void pgd_store_close(pgd_store *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_readers; i++) pgd_store_close(s->readers[i]);
    for (int i = 0; i < s->n_cached; i++) db_finalize(s->cache[i].stmt);
    db_close(s->db);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->writes_lock);
    free(s);
}

/* Reads the one row of numbers an aggregate query returns into out[0..n-1]; param, when not
 * NULL, binds ?1. */
int store_read_numbers(pgd_store *s, const char *sql, const char *param, double *out, int n,
                        const char *what, pgn_error *err) {
    for (int i = 0; i < n; i++) out[i] = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        if (param) db_bind_text(st, 1, param);
        if (db_step(st) == DB_ROW) {
            for (int i = 0; i < n; i++) out[i] = db_column_double(st, i);
            ret = 0;
        } else {
            store_fail(s, err, what);
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_schema_version(pgd_store *s, int64_t *version, pgn_error *err) {
    double v;
    int ret = store_read_numbers(s, "SELECT coalesce(max(version), 0) FROM schema_migrations", NULL,
                           &v, 1, "read schema version", err);
    *version = (int64_t)v;
    return ret;
}
