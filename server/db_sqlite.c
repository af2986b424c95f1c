/* db_sqlite.c: db.h on SQLite, the embedded default: one file, WAL (readers beside the writer,
 * such as an operator's sqlite3 shell), NORMAL sync (durable across a process's crash, which job
 * recovery needs), foreign keys on, and a busy timeout for another process's writer. */
#include "db_backend.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_TIMEOUT_MS 5000

typedef struct {
    pgd_db base;
    sqlite3 *db;
    int last_rc; /* the extended code of the last failure */
    char last_msg[256];
} lite_db;

typedef struct {
    db_stmt base;
    sqlite3_stmt *st;
} lite_stmt;

static lite_db *DB(pgd_db *db) { return (lite_db *)db; }
static sqlite3_stmt *ST(db_stmt *st) { return ((lite_stmt *)st)->st; }

static void remember(lite_db *d) {
    d->last_rc = sqlite3_extended_errcode(d->db);
    snprintf(d->last_msg, sizeof d->last_msg, "%s", sqlite3_errmsg(d->db));
}

static void lite_close(pgd_db *db) {
    sqlite3_close(DB(db)->db);
    free(db);
}

static int lite_exec(pgd_db *db, const char *sql, pgn_error *err, const char *what) {
    lite_db *d = DB(db);
    char *msg = NULL;
    if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    d->last_rc = sqlite3_extended_errcode(d->db);
    snprintf(d->last_msg, sizeof d->last_msg, "%s", msg ? msg : sqlite3_errmsg(d->db));
    sqlite3_free(msg);
    return err ? db_fail(db, err, what) : -1;
}

static bool lite_in_transaction(pgd_db *db) { return !sqlite3_get_autocommit(DB(db)->db); }

static db_stmt *lite_prepare(pgd_db *db, const char *sql, pgn_error *err) {
    lite_db *d = DB(db);
    lite_stmt *s = calloc(1, sizeof *s);
    if (!s) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return NULL;
    }
    if (sqlite3_prepare_v3(d->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st, NULL) != SQLITE_OK) {
        remember(d);
        db_fail(db, err, "prepare");
        free(s);
        return NULL;
    }
    s->base.db = db;
    return &s->base;
}

static void lite_finalize(db_stmt *st) {
    sqlite3_finalize(ST(st));
    free(st);
}

static void lite_reset(db_stmt *st) {
    sqlite3_reset(ST(st));
    sqlite3_clear_bindings(ST(st));
}

static void lite_bind_int64(db_stmt *st, int idx, int64_t v) { sqlite3_bind_int64(ST(st), idx, v); }
static void lite_bind_double(db_stmt *st, int idx, double v) { sqlite3_bind_double(ST(st), idx, v); }
static void lite_bind_text(db_stmt *st, int idx, const char *t) {
    sqlite3_bind_text(ST(st), idx, t, -1, SQLITE_TRANSIENT); /* NULL binds NULL */
}
static void lite_bind_null(db_stmt *st, int idx) { sqlite3_bind_null(ST(st), idx); }

static int lite_step(db_stmt *st) {
    int rc = sqlite3_step(ST(st));
    if (rc == SQLITE_ROW) return DB_ROW;
    if (rc == SQLITE_DONE) return DB_DONE;
    remember(DB(st->db));
    return rc == SQLITE_CONSTRAINT_FOREIGNKEY ? DB_NO_PARENT : DB_FAIL;
}

static bool lite_is_null(db_stmt *st, int col) { return sqlite3_column_type(ST(st), col) == SQLITE_NULL; }
static int64_t lite_int64(db_stmt *st, int col) { return sqlite3_column_int64(ST(st), col); }
static double lite_double(db_stmt *st, int col) { return sqlite3_column_double(ST(st), col); }
static const char *lite_text(db_stmt *st, int col) { return (const char *)sqlite3_column_text(ST(st), col); }
static int64_t lite_changes(pgd_db *db) { return sqlite3_changes(DB(db)->db); }
static int lite_hold_name(pgd_db *db, const char *name, pgn_error *err) {
    (void)db, (void)name, (void)err; /* lock.c's file lock, taken before the store opened */
    return 0;
}

/* Failures of the database's state (disk full, I/O, another writer, no memory) pass when it
 * recovers. */
static int lite_fail(pgd_db *db, pgn_error *err, const char *what) {
    lite_db *d = DB(db);
    int rc = d->last_rc & 0xff;
    bool passing = rc == SQLITE_FULL || rc == SQLITE_IOERR || rc == SQLITE_BUSY ||
                   rc == SQLITE_LOCKED || rc == SQLITE_READONLY || rc == SQLITE_NOMEM ||
                   rc == SQLITE_CANTOPEN || rc == SQLITE_PROTOCOL;
    pgn_error_set(err, passing ? PGN_E_STORE_UNAVAILABLE : PGN_E_STORE, "", "store: %s: %s", what,
                  d->last_msg[0] ? d->last_msg : "unknown error");
    return -1;
}

static int lite_listen(pgd_db *db, const char *channel, pgn_error *err) {
    (void)db, (void)channel, (void)err; /* one process writes a SQLite store: nothing to hear */
    return 0;
}

static int lite_notifications(pgd_db *db, int timeout_ms, db_note *out, size_t max, size_t *n,
                              pgn_error *err) {
    (void)db, (void)timeout_ms, (void)out, (void)max, (void)err;
    *n = 0;
    return 0;
}

static const db_ops lite_ops = {
    lite_close,      lite_exec,       lite_in_transaction, lite_prepare,    lite_finalize,
    lite_reset,      lite_bind_int64, lite_bind_double,    lite_bind_text,  lite_bind_null,
    lite_step,       lite_is_null,    lite_int64,          lite_double,     lite_text,
    lite_hold_name,  lite_listen,     lite_notifications, lite_changes, lite_fail,
};

/* Once per process, before SQLite's first use: no global allocation statistics (they take a
 * process-wide mutex on every malloc and free SQLite makes; nothing here reads them). */
static void lite_configure(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

int db_sqlite_open(const char *path, pgd_db **out, pgn_error *err) {
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, lite_configure);
    lite_db *d = calloc(1, sizeof *d);
    if (!d) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }
    d->base.ops = &lite_ops;
    d->base.engine = DB_SQLITE;
    snprintf(d->base.name, sizeof d->base.name, "%s", path);
    /* NOMUTEX: the store's mutex serialises every use of the connection. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &d->db, flags, NULL) != SQLITE_OK) {
        pgn_error_set(err, PGN_E_STORE, "", "store: cannot open database '%s': %s", path,
                      d->db ? sqlite3_errmsg(d->db) : "out of memory");
        lite_close(&d->base);
        return -1;
    }
    /* Lookaside: small allocations of this connection from a slab of its own rather than
     * malloc (a job's life makes thousands); 512 slots of 1200 bytes instead of 100. */
    sqlite3_db_config(d->db, SQLITE_DBCONFIG_LOOKASIDE, NULL, 1200, 512);
    sqlite3_busy_timeout(d->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(d->db, 1);
    if (lite_exec(&d->base, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                            "PRAGMA foreign_keys = ON;",
                  err, "configure database") < 0) {
        lite_close(&d->base);
        return -1;
    }
    *out = &d->base;
    return 0;
}
