/* store_tunings.c: owns the device_tunings table (schema/011_device_tunings.sql): a device's
 * tuning by kernel family, read when its worker opens it and written after a calibration. The
 * record is the engine's pgn_device_tuning, as its JSON. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pgd_store_tuning_get(pgd_store *s, const char *device_id, pgn_kernel_family family, pgn_device_tuning *out,
                         bool *found, pgn_error *err) {
    static const char sql[] = "SELECT driver_version, kernels_hash, params, figure, too_slow, measured_at"
                              " FROM device_tunings WHERE device_id = ?1 AND family = ?2";
    *found = false;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    json_t *record = NULL;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, device_id);
        db_bind_text(st, 2, pgn_kernel_family_name(family));
        int rc = db_step(st);
        if (rc == DB_ROW)
            record = json_pack("{s:s, s:o, s:o, s:s, s:o, s:{s:o}, s:b, s:o}", "device_id", device_id,
                               "driver_version", store_col_text(st, 0), "kernels_hash", store_col_text(st, 1),
                               "family", pgn_kernel_family_name(family), "params", store_col_json(st, 2), "figure",
                               "gflops", store_col_real(st, 3), "too_slow", db_column_int64(st, 4),
                               "measured_at", store_col_text(st, 5));
        store_stmt_done(st);
        ret = rc == DB_ROW || rc == DB_DONE ? 0 : store_fail(s, err, "read a device's tuning");
    }
    pthread_mutex_unlock(&s->lock);
    if (ret == 0 && record) {
        /* a row that is no tuning (edited by hand) is as good as none: the device is tuned again */
        pgn_error ignored;
        *found = pgn_device_tuning_parse(record, out, &ignored) == 0;
    }
    json_decref(record);
    return ret;
}

typedef struct {
    const pgn_device_tuning *t;
    const char *params;
} put_ctx;

static int put_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char sql[] =
        "INSERT INTO device_tunings (device_id, family, driver_version, kernels_hash, params, figure, too_slow,"
        " measured_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (device_id, family) DO UPDATE SET"
        " driver_version = excluded.driver_version, kernels_hash = excluded.kernels_hash, params = excluded.params,"
        " figure = excluded.figure, too_slow = excluded.too_slow, measured_at = excluded.measured_at";
    const put_ctx *p = ctx;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_text(st, 1, p->t->device_id);
    db_bind_text(st, 2, pgn_kernel_family_name(p->t->family));
    db_bind_text(st, 3, p->t->driver_version);
    db_bind_text(st, 4, p->t->kernels_hash);
    db_bind_text(st, 5, p->params);
    if (p->t->too_slow) db_bind_null(st, 6);
    else db_bind_double(st, 6, p->t->gflops);
    db_bind_int64(st, 7, p->t->too_slow);
    db_bind_text(st, 8, p->t->measured_at);
    int rc = db_step(st);
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, "record a device's tuning");
}

int pgd_store_tuning_put(pgd_store *s, const pgn_device_tuning *t, pgn_error *err) {
    json_t *j = pgn_device_tuning_json(t);
    char *params = j ? pgn_json_dumps(json_object_get(j, "params")) : NULL;
    json_decref(j);
    if (!params) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    put_ctx p = {t, params};
    int rc = store_write_tx(s, put_tx, &p, err);
    free(params);
    return rc;
}
