/* db_backend.h: what a backend of db.h provides (db_sqlite.c, db_postgresql.c) and db.c calls.
 * Each backend's connection and statement structs begin with pgd_db and db_stmt. */
#ifndef PGD_DB_BACKEND_H
#define PGD_DB_BACKEND_H

#include "db.h"

typedef struct db_ops {
    void (*close)(pgd_db *db);
    int (*exec)(pgd_db *db, const char *sql, pgn_error *err, const char *what);
    bool (*in_transaction)(pgd_db *db);
    db_stmt *(*prepare)(pgd_db *db, const char *sql, pgn_error *err);
    void (*finalize)(db_stmt *st);
    void (*reset)(db_stmt *st);
    void (*bind_int64)(db_stmt *st, int idx, int64_t v);
    void (*bind_double)(db_stmt *st, int idx, double v);
    void (*bind_text)(db_stmt *st, int idx, const char *text);
    void (*bind_null)(db_stmt *st, int idx);
    int (*step)(db_stmt *st);
    bool (*column_is_null)(db_stmt *st, int col);
    int64_t (*column_int64)(db_stmt *st, int col);
    double (*column_double)(db_stmt *st, int col);
    const char *(*column_text)(db_stmt *st, int col);
    int (*hold_name)(pgd_db *db, const char *name, pgn_error *err);
    int (*listen)(pgd_db *db, const char *channel, pgn_error *err);
    int (*notifications)(pgd_db *db, int timeout_ms, db_note *out, size_t max, size_t *n, pgn_error *err);
    int64_t (*changes)(pgd_db *db);
    int (*fail)(pgd_db *db, pgn_error *err, const char *what);
} db_ops;

struct pgd_db {
    const db_ops *ops;
    db_engine engine;
    char name[256]; /* the target as messages show it (no password) */
};

struct db_stmt {
    pgd_db *db;
};

/* The backends' openers: target is the path or the URL. */
int db_sqlite_open(const char *path, pgd_db **out, pgn_error *err);
int db_postgresql_open(const char *url, pgd_db **out, pgn_error *err);

#endif
