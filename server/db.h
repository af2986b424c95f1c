/* db.h: the SQL engine under the store, one interface with two backends (db_sqlite.c: SQLite,
 * the embedded default; db_postgresql.c: PostgreSQL through libpq, for a cluster of paragond).
 * The store's files (store*.c) write their statements once, in the SQL both engines read, with
 * SQLite's ?N parameters; the PostgreSQL backend numbers them $N, and its schema
 * (schema/postgresql/) defines the few SQLite functions the statements use (strftime for now,
 * json_extract, json_each). Nothing outside the store includes this: callers never ask which
 * engine holds their jobs. A connection is not thread-safe; the store's mutex guards it. */
#ifndef PGD_DB_H
#define PGD_DB_H

#include "paragon.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct pgd_db pgd_db;
typedef struct db_stmt db_stmt;

typedef enum { DB_SQLITE, DB_POSTGRESQL } db_engine;

/* What db_step returns. */
enum {
    DB_ROW = 1,      /* a row is ready for db_column_* */
    DB_DONE = 0,     /* the statement ran to its end */
    DB_FAIL = -1,    /* it failed: db_fail says why */
    DB_NO_PARENT = -2, /* a foreign key named a row that does not exist (a deleted job) */
};

/* Which engine a --store value names: "postgresql://..." or "postgres://..." (a libpq URL),
 * "sqlite:PATH", or a plain path (SQLite). *rest is the path or the URL. */
db_engine db_engine_of(const char *target, const char **rest);

/* Opens target (as db_engine_of reads it). */
int db_open(const char *target, pgd_db **out, pgn_error *err);
void db_close(pgd_db *db);
db_engine db_engine_in(const pgd_db *db);
/* The target without a password, for messages. */
const char *db_name(const pgd_db *db);

/* Runs sql, which may hold several statements and no parameters (a migration, ROLLBACK). */
int db_exec(pgd_db *db, const char *sql, pgn_error *err, const char *what);
/* Rolls back the open transaction, if any (a failed statement inside one leaves it open). */
void db_rollback(pgd_db *db);

/* Prepares sql (valid while the statement lives). NULL with err set on failure. */
db_stmt *db_prepare(pgd_db *db, const char *sql, pgn_error *err);
void db_finalize(db_stmt *st);
/* Ends the statement's run and clears its parameters, ready to bind again. */
void db_reset(db_stmt *st);

/* Parameters count from 1 (?1). Text is copied. */
void db_bind_int64(db_stmt *st, int idx, int64_t v);
void db_bind_double(db_stmt *st, int idx, double v);
void db_bind_text(db_stmt *st, int idx, const char *text); /* NULL binds NULL */
void db_bind_null(db_stmt *st, int idx);

/* Runs the statement (first call after a reset) and moves to its next row. */
int db_step(db_stmt *st);
/* The current row's columns, from 0. Text is valid until the next step or reset; NULL for
 * SQL NULL. A boolean reads as 0 or 1. */
bool db_column_is_null(db_stmt *st, int col);
int64_t db_column_int64(db_stmt *st, int col);
double db_column_double(db_stmt *st, int col);
const char *db_column_text(db_stmt *st, int col);

/* Makes this connection the only one on the database that holds name (one paragond per node
 * id on a store): on PostgreSQL a session advisory lock keyed by the name, which the server drops
 * when the connection ends (a node that died holds nothing), taken again when a lost connection
 * is made again. SQLite's store has one paragond, held by a file lock taken before it opens
 * (lock.c): this holds nothing there. Code "locked" when another connection holds the name. */
int db_hold_name(pgd_db *db, const char *name, pgn_error *err);

/* Listens on channel (PostgreSQL's LISTEN; again after a lost connection is made again). 1 when
 * listening, 0 where the engine has no notifications (SQLite: one process writes the store). */
int db_listen(pgd_db *db, const char *channel, pgn_error *err);
/* A notification's payload: a decimal number, then optionally a space and a word. */
typedef struct db_note {
    int64_t number;
    char word[16]; /* "" when the payload has none */
} db_note;
/* Waits up to timeout_ms for notifications, putting up to max payloads into out: *n of them.
 * -1 with err when the connection failed (the next call makes it again). */
int db_notifications(pgd_db *db, int timeout_ms, db_note *out, size_t max, size_t *n, pgn_error *err);

/* Rows the last INSERT, UPDATE or DELETE changed. */
int64_t db_changes(pgd_db *db);

/* Sets err from the last failure: PGN_E_STORE_UNAVAILABLE when it passes once the database
 * recovers (disk full, I/O, a lock held elsewhere, a lost connection, a server in recovery or
 * shutting down), PGN_E_STORE otherwise. Returns -1. */
int db_fail(pgd_db *db, pgn_error *err, const char *what);

#endif
