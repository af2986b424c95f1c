/* db.c: db.h's calls, each handed to the connection's backend (db_backend.h), and the reading
 * of a --store value that chooses one. */
#include "db_backend.h"

#include <string.h>

db_engine db_engine_of(const char *target, const char **rest) {
    if (strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0) {
        *rest = target;
        return DB_POSTGRESQL;
    }
    *rest = strncmp(target, "sqlite:", 7) == 0 ? target + 7 : target;
    return DB_SQLITE;
}

int db_open(const char *target, pgd_db **out, pgn_error *err) {
    const char *rest;
    *out = NULL;
    if (db_engine_of(target, &rest) == DB_POSTGRESQL) return db_postgresql_open(rest, out, err);
    if (!*rest) {
        pgn_error_set(err, PGN_E_STORE, "", "store: 'sqlite:' names no file");
        return -1;
    }
    return db_sqlite_open(rest, out, err);
}

void db_close(pgd_db *db) {
    if (db) db->ops->close(db);
}
db_engine db_engine_in(const pgd_db *db) { return db->engine; }
const char *db_name(const pgd_db *db) { return db->name; }
int db_exec(pgd_db *db, const char *sql, pgn_error *err, const char *what) {
    return db->ops->exec(db, sql, err, what);
}
void db_rollback(pgd_db *db) {
    if (db->ops->in_transaction(db)) db->ops->exec(db, "ROLLBACK", NULL, "rollback");
}
db_stmt *db_prepare(pgd_db *db, const char *sql, pgn_error *err) { return db->ops->prepare(db, sql, err); }
void db_finalize(db_stmt *st) {
    if (st) st->db->ops->finalize(st);
}
void db_reset(db_stmt *st) { st->db->ops->reset(st); }
void db_bind_int64(db_stmt *st, int idx, int64_t v) { st->db->ops->bind_int64(st, idx, v); }
void db_bind_double(db_stmt *st, int idx, double v) { st->db->ops->bind_double(st, idx, v); }
void db_bind_text(db_stmt *st, int idx, const char *text) { st->db->ops->bind_text(st, idx, text); }
void db_bind_null(db_stmt *st, int idx) { st->db->ops->bind_null(st, idx); }
int db_step(db_stmt *st) { return st->db->ops->step(st); }
bool db_column_is_null(db_stmt *st, int col) { return st->db->ops->column_is_null(st, col); }
int64_t db_column_int64(db_stmt *st, int col) { return st->db->ops->column_int64(st, col); }
double db_column_double(db_stmt *st, int col) { return st->db->ops->column_double(st, col); }
const char *db_column_text(db_stmt *st, int col) { return st->db->ops->column_text(st, col); }
int db_hold_name(pgd_db *db, const char *name, pgn_error *err) { return db->ops->hold_name(db, name, err); }
int db_listen(pgd_db *db, const char *channel, pgn_error *err) { return db->ops->listen(db, channel, err); }
int db_notifications(pgd_db *db, int timeout_ms, db_note *out, size_t max, size_t *n, pgn_error *err) {
    return db->ops->notifications(db, timeout_ms, out, max, n, err);
}
int64_t db_changes(pgd_db *db) { return db->ops->changes(db); }
int db_fail(pgd_db *db, pgn_error *err, const char *what) { return db->ops->fail(db, err, what); }
