/* store_datasets.c: owns the datasets table (schema/009_datasets.sql): the digests, formats and
 * shapes datasets.c computed for the files of the datasets directory, keyed by name and good while
 * the file's size and mtime match; and the query for the datasets the live jobs name. */
#include "datasets.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_col(db_stmt *st, int col, char *out, size_t size) {
    const char *t = db_column_text(st, col);
    snprintf(out, size, "%s", t ? t : "");
}

int pgd_store_dataset_get(pgd_store *s, const char *name, pgd_dataset_meta *out, bool *found,
                          pgn_error *err) {
    static const char sql[] = "SELECT bytes, mtime_ns, sha256, format, info, created_at FROM datasets"
                              " WHERE name = ?1";
    memset(out, 0, sizeof *out);
    *found = false;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, name);
        int rc = db_step(st);
        if (rc == DB_ROW) {
            snprintf(out->name, sizeof out->name, "%s", name);
            out->bytes = db_column_int64(st, 0);
            out->mtime_ns = db_column_int64(st, 1);
            copy_col(st, 2, out->sha256, sizeof out->sha256);
            copy_col(st, 3, out->format, sizeof out->format);
            out->info = store_col_json(st, 4);
            copy_col(st, 5, out->created_at, sizeof out->created_at);
            *found = true;
        }
        store_stmt_done(st);
        ret = rc == DB_ROW || rc == DB_DONE ? 0 : store_fail(s, err, "read a dataset record");
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

typedef struct put_ctx {
    const pgd_dataset_meta *m;
    const char *info;
} put_ctx;

static int put_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] =
        "INSERT INTO datasets (name, bytes, mtime_ns, sha256, format, info, created_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (name) DO UPDATE SET"
        " bytes = excluded.bytes, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256,"
        " format = excluded.format, info = excluded.info, created_at = excluded.created_at";
    const put_ctx *p = ctx;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_text(st, 1, p->m->name);
    db_bind_int64(st, 2, p->m->bytes);
    db_bind_int64(st, 3, p->m->mtime_ns);
    db_bind_text(st, 4, p->m->sha256);
    db_bind_text(st, 5, p->m->format);
    db_bind_text(st, 6, p->info);
    store_bind_text_or_null(st, 7, p->m->created_at[0] ? p->m->created_at : NULL);
    int rc = db_step(st);
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, "record a dataset");
}

int pgd_store_dataset_put(pgd_store *s, const pgd_dataset_meta *m, pgn_error *err) {
    char *info = m->info ? pgn_json_dumps(m->info) : strdup("{}");
    if (!info) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    put_ctx p = {m, info};
    int rc = store_write_tx(s, put_tx, &p, err);
    free(info);
    return rc;
}

static int forget_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] = "DELETE FROM datasets WHERE name = ?1";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_text(st, 1, ctx);
    int rc = db_step(st);
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, "forget a dataset");
}

int pgd_store_dataset_forget(pgd_store *s, const char *name, pgn_error *err) {
    return store_write_tx(s, forget_tx, (void *)name, err);
}

static json_t *in_use_row(db_stmt *st) {
    return json_pack("{s:I, s:o, s:o}", "id", (json_int_t)db_column_int64(st, 0), "state",
                     store_col_text(st, 1), "data", store_col_json(st, 2));
}

int pgd_store_datasets_in_use(pgd_store *s, json_t **out, pgn_error *err) {
    static const char sql[] = "SELECT id, state, json_extract(spec, '$.data') FROM jobs"
                              " WHERE state IN ('queued', 'running') AND kind = 'train' ORDER BY id";
    *out = NULL;
    json_t *arr = json_array();
    pthread_mutex_lock(&s->lock);
    db_stmt *st = store_stmt(s, sql, err);
    int ret = st ? store_collect_rows(s, st, in_use_row, arr, err, "list the datasets in use") : -1;
    pthread_mutex_unlock(&s->lock);
    if (ret == 0) *out = arr;
    else json_decref(arr);
    return ret;
}
