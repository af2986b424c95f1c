/* store_bench.c: owns the benchmark rows and the rates their runs measured: checking the rows,
 * storing them with their rates (alone, or with the bench job that made them, in the
 * transaction that ends it), reading the rows back for the export and the rates for the cost
 * model. */
#include "store_internal.h"

#include "views.h" /* errors are stored as the API shows them */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- benchmarks ------------------------------------------------------------------------- */

static int bad_row(pgn_error *err, size_t i, const char *key, const char *what) {
    char field[128];
    if (key) snprintf(field, sizeof field, "rows[%zu].%s", i, key);
    else snprintf(field, sizeof field, "rows[%zu]", i);
    pgn_error_set(err, PGN_E_INVALID_ROW, field, "%s: %s", field, what);
    return -1;
}

/* Checks every row before anything is written (the rules are in store.h). */
static int check_bench_rows(const json_t *rows, pgn_error *err) {
    static const char *const required[] = {"suite", "case", "device"};
    static const char *const optional[] = {"adapter", "version"};
    static const char *const reserved[] = {"id", "job_id", "created_at"};
    if (!json_is_array(rows)) {
        pgn_error_set(err, PGN_E_INVALID_ROW, "rows", "rows: must be an array of benchmark rows");
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

static void bind_job_or_null(db_stmt *st, int idx, int64_t job_id) {
    if (job_id > 0) db_bind_int64(st, idx, job_id);
    else db_bind_null(st, idx);
}

/* A figure, or NULL when the run did not measure it. */
static void bind_figure(db_stmt *st, int idx, double v) {
    if (v > 0) db_bind_double(st, idx, v);
    else db_bind_null(st, idx);
}

/* What a run measured of its device's rates (nothing when rates is NULL or measured nothing),
 * stored at `now`. Caller is in a transaction. */
static int insert_rates(pgd_store *s, int64_t job_id, const pgn_measured_rates *rates, const char *now,
                        pgn_error *err) {
    static const char sql[] = "INSERT INTO device_rates (job_id, device, gflops, mips, launch_us, step_launch_us,"
                              " mlp_gflops, mlp_setup_s, load_mbps, gpt_gflops, gpt_setup_s, created_at)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
    if (!rates) return 0;
    const pgn_train_rates *t = &rates->train;
    const double figures[] = {rates->gflops,  rates->mips,       rates->launch_us, t->step_launch_us, t->mlp_gflops,
                              t->mlp_setup_s, t->load_mbps,      t->gpt_gflops,    t->gpt_setup_s};
    bool any = false;
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) any |= figures[i] > 0;
    if (!any) return 0;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    bind_job_or_null(st, 1, job_id);
    db_bind_text(st, 2, rates->device);
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) bind_figure(st, 3 + (int)i, figures[i]);
    db_bind_text(st, 12, now);
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc == DB_NO_PARENT) return store_no_such_job(err, job_id);
    return rc == DB_DONE ? 0 : store_fail(s, err, "insert device rates");
}

/* Inserts checked rows of job_id (0: none) and their run's rates with one created_at. Caller is
 * in a transaction. */
static int insert_bench_rows(pgd_store *s, int64_t job_id, const json_t *rows, const pgn_measured_rates *rates,
                             pgn_error *err) {
    static const char now_sql[] = "SELECT " NOW_SQL;
    static const char sql[] =
        "INSERT INTO benchmarks (job_id, suite, case_id, device, adapter, version, created_at,"
        " data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    db_stmt *st = store_stmt(s, now_sql, err);
    if (!st) return -1;
    if (db_step(st) != DB_ROW) {
        store_stmt_done(st);
        return store_fail(s, err, "read the time");
    }
    char now[32];
    snprintf(now, sizeof now, "%s", db_column_text(st, 0));
    store_stmt_done(st);

    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        /* Full precision: the CSV prints each figure as the shortest text that reads back the
         * engine's double, so the export matches `paragon bench` bit for bit. */
        char *data = json_dumps(row, JSON_COMPACT);
        if (!data) {
            pgn_error_set(err, PGN_E_INTERNAL, "", "store: benchmark row %zu cannot be serialised", i);
            return -1;
        }
        st = store_stmt(s, sql, err);
        if (!st) {
            free(data);
            return -1;
        }
        bind_job_or_null(st, 1, job_id);
        store_bind_text_or_null(st, 2, row_string(row, "suite"));
        store_bind_text_or_null(st, 3, row_string(row, "case"));
        store_bind_text_or_null(st, 4, row_string(row, "device"));
        store_bind_text_or_null(st, 5, row_string(row, "adapter"));
        store_bind_text_or_null(st, 6, row_string(row, "version"));
        db_bind_text(st, 7, now);
        db_bind_text(st, 8, data);
        int rc = db_step(st);
        store_stmt_done(st);
        free(data);
        if (rc == DB_NO_PARENT) return store_no_such_job(err, job_id);
        if (rc != DB_DONE) return store_fail(s, err, "insert benchmark row");
    }
    return insert_rates(s, job_id, rates, now, err);
}

typedef struct bench_batch {
    int64_t job_id, attempt; /* attempt: bench_finish's run (0: any) */
    const json_t *rows;
    const pgn_measured_rates *rates;
    const char *result; /* bench_finish: the job's result as JSON text */
} bench_batch;

static int bench_add_tx(pgd_store *s, void *ctx, pgn_error *err) {
    const bench_batch *b = ctx;
    return insert_bench_rows(s, b->job_id, b->rows, b->rates, err);
}

int pgd_store_bench_add(pgd_store *s, int64_t job_id, const json_t *rows, const pgn_measured_rates *rates,
                        pgn_error *err) {
    if (check_bench_rows(rows, err) < 0) return -1;
    bench_batch b = {.job_id = job_id, .rows = rows, .rates = rates};
    return store_write_tx(s, bench_add_tx, &b, err);
}

static int bench_finish_tx(pgd_store *s, void *ctx, pgn_error *err) {
    const bench_batch *b = ctx;
    if (store_finish_job(s, b->job_id, b->attempt, PGD_JOB_SUCCEEDED, b->result, NULL, err) < 0) return -1;
    return insert_bench_rows(s, b->job_id, b->rows, b->rates, err);
}

int pgd_store_bench_finish(pgd_store *s, int64_t job_id, int64_t attempt, const json_t *result,
                           const pgn_measured_rates *rates, pgn_error *err) {
    const json_t *rows = json_object_get(result, "rows");
    if (check_bench_rows(rows, err) < 0) return -1;
    char *text = pgn_json_dumps(result);
    if (!text) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "store: the job's result cannot be serialised");
        return -1;
    }
    bench_batch b = {.job_id = job_id, .attempt = attempt, .rows = rows, .rates = rates, .result = text};
    int ret = store_write_tx(s, bench_finish_tx, &b, err);
    free(text);
    return ret;
}

/* The stored row plus the store's "id", "job_id" and "created_at" (columns 0-3). */
static json_t *bench_from_row(db_stmt *st) {
    json_t *o = store_col_json(st, 3);
    if (!json_is_object(o)) { /* the CHECK constraint keeps this from happening */
        json_decref(o);
        o = json_object();
    }
    json_object_set_new(o, "id", json_integer(db_column_int64(st, 0)));
    json_object_set_new(o, "job_id", db_column_is_null(st, 1)
                                         ? json_null()
                                         : json_integer(db_column_int64(st, 1)));
    json_object_set_new(o, "created_at", store_col_text(st, 2));
    return o;
}

/* Runs a read of benchmark rows (?1 suite, ?2 device: NULL when not given, ?3 limit; f's job
 * ?4, since ?5 and until ?6 when f is given) under the lock; *out is a new array, or NULL on
 * failure. */
static int bench_query(pgd_store *s, const char *sql, const char *suite, const char *device,
                       int64_t limit, const pgd_bench_filter *f, json_t **out, pgn_error *err) {
    *out = NULL;
    json_t *arr = json_array();
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        if (suite) db_bind_text(st, 1, suite);
        if (device) db_bind_text(st, 2, device);
        db_bind_int64(st, 3, limit);
        if (f && f->job) db_bind_int64(st, 4, f->job);
        if (f && f->since) db_bind_text(st, 5, f->since);
        if (f && f->until) db_bind_text(st, 6, f->until);
        ret = store_collect_rows(s, st, bench_from_row, arr, err, "list benchmark rows");
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
    " ORDER BY id DESC LIMIT ?3) AS newest ORDER BY id"

/* The time window, [?5, ?6), each end open when NULL: created_at is ISO text of one width, so
 * text order is time order. */
#define BENCH_WINDOW " (?5 IS NULL OR created_at >= ?5) AND (?6 IS NULL OR created_at < ?6)"

int pgd_store_bench_query(pgd_store *s, const pgd_bench_filter *f, json_t **rows, pgn_error *err) {
    /* One statement per combination of suite, device and job, so each can use its index. */
    static const char any[] = BENCH_NEWEST(" WHERE" BENCH_WINDOW);
    static const char by_suite[] = BENCH_NEWEST(" WHERE suite = ?1 AND" BENCH_WINDOW);
    static const char by_device[] = BENCH_NEWEST(" WHERE device = ?2 AND" BENCH_WINDOW);
    static const char by_both[] = BENCH_NEWEST(" WHERE suite = ?1 AND device = ?2 AND" BENCH_WINDOW);
    static const char by_job[] = BENCH_NEWEST(" WHERE job_id = ?4 AND" BENCH_WINDOW);
    static const char by_job_suite[] = BENCH_NEWEST(" WHERE job_id = ?4 AND suite = ?1 AND" BENCH_WINDOW);
    static const char by_job_device[] = BENCH_NEWEST(" WHERE job_id = ?4 AND device = ?2 AND" BENCH_WINDOW);
    static const char by_job_both[] =
        BENCH_NEWEST(" WHERE job_id = ?4 AND suite = ?1 AND device = ?2 AND" BENCH_WINDOW);
    static const char *const sql[8] = {any,    by_suite,     by_device,     by_both,
                                       by_job, by_job_suite, by_job_device, by_job_both};
    return bench_query(s, sql[(f->suite ? 1 : 0) | (f->device ? 2 : 0) | (f->job ? 4 : 0)], f->suite,
                       f->device, f->limit < 0 ? 0 : f->limit, f, rows, err);
}

int pgd_store_bench_list(pgd_store *s, const char *suite, const char *device, int64_t limit,
                         json_t **rows, pgn_error *err) {
    pgd_bench_filter f = {.suite = suite, .device = device, .limit = limit};
    return pgd_store_bench_query(s, &f, rows, err);
}

int pgd_store_rates_latest(pgd_store *s, const char *device, pgn_measured_rates *out, pgn_error *err) {
#define NEWEST(figure)                                                                             \
    "(SELECT " figure " FROM device_rates WHERE device = ?1 AND " figure " IS NOT NULL ORDER BY id DESC LIMIT 1)"
    static const char sql[] = "SELECT " NEWEST("gflops") ", " NEWEST("mips") ", " NEWEST("launch_us") ", "
                              NEWEST("step_launch_us") ", " NEWEST("mlp_gflops") ", " NEWEST("mlp_setup_s") ", "
                              NEWEST("load_mbps") ", " NEWEST("gpt_gflops") ", " NEWEST("gpt_setup_s");
#undef NEWEST
    double v[9];
    *out = (pgn_measured_rates){0};
    snprintf(out->device, sizeof out->device, "%s", device);
    if (store_read_numbers(s, sql, device, v, 9, "read device rates", err) < 0) return -1;
    out->gflops = v[0];
    out->mips = v[1];
    out->launch_us = v[2];
    out->train = (pgn_train_rates){.step_launch_us = v[3], .mlp_gflops = v[4], .mlp_setup_s = v[5],
                                   .load_mbps = v[6], .gpt_gflops = v[7], .gpt_setup_s = v[8]};
    return 0;
}
