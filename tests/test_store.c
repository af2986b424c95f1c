/* test_store.c: server/store*.c against real SQLite files, and the same tests against a real
 * PostgreSQL when PARAGON_TEST_STORE=postgresql (tests/with_postgresql.sh starts a throwaway
 * one; each test gets a database of its own): the migration runner (fresh, repeated, added,
 * failing, newer), job rows through every transition, their placements, listing with filters
 * and paging, metric series, benchmark rows and their rates (batches, export filters, the newest
 * figures, a bench job's success), start-up recovery, and concurrent use from several threads.
 * The few tests of SQLite's own files and migrations say so and skip on PostgreSQL. */
#include "assets.h"
#include "pg_admin.h"
#include "store.h"
#include "views.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];
static char dbpath[300]; /* the store's target: a SQLite file, or a PostgreSQL URL */
static char pg_name[64]; /* this test's PostgreSQL database; "" on SQLite */

static bool on_postgresql(void) {
    const char *e = getenv("PARAGON_TEST_STORE");
    return e && strcmp(e, "postgresql") == 0;
}


/* Tests of SQLite's own file and migration history. */
#define SQLITE_ONLY()                                                                              \
    do {                                                                                           \
        if (on_postgresql()) cr_skip_test("a test of SQLite's file");                              \
    } while (0)

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/paragon-store-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    snprintf(dbpath, sizeof dbpath, "%s/t.db", tmpdir);
    pg_name[0] = 0;
    if (on_postgresql()) {
        static int n;
        snprintf(pg_name, sizeof pg_name, "paragon_test_%d_%d", (int)getpid(), ++n);
        char sql[128];
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", pg_name);
        pg_admin(sql);
        snprintf(dbpath, sizeof dbpath, "postgresql:///%s", pg_name);
    }
}

static void teardown(void) {
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (pg_name[0]) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", pg_name);
        pg_admin(sql);
    }
}

TestSuite(store, .init = setup, .fini = teardown);

/* ---- helpers ---------------------------------------------------------------------------- */

static pgd_store *open_store(void) {
    pgd_store *s = NULL;
    pgn_error err;
    pgn_error_clear(&err);
    cr_assert_eq(pgd_store_open(dbpath, &s, &err), 0, "open: %s", err.message);
    cr_assert_not_null(s);
    return s;
}

/* A second, plain connection to check what is really in the database. */
typedef struct raw_conn {
    sqlite3 *lite;
    PGconn *pg;
    char msg[512]; /* the last raw_exec's error */
} raw_conn;

static raw_conn *raw_db(void) {
    raw_conn *db = calloc(1, sizeof *db);
    cr_assert_not_null(db);
    if (on_postgresql()) {
        db->pg = PQconnectdb(dbpath);
        cr_assert_eq(PQstatus(db->pg), CONNECTION_OK, "%s", PQerrorMessage(db->pg));
        return db;
    }
    cr_assert_eq(sqlite3_open(dbpath, &db->lite), SQLITE_OK);
    sqlite3_busy_timeout(db->lite, 5000);
    return db;
}

static void raw_close(raw_conn *db) {
    if (db->pg) PQfinish(db->pg);
    if (db->lite) sqlite3_close(db->lite);
    free(db);
}

/* Runs sql (no rows); 0, or -1 with db->msg. */
static int raw_exec(raw_conn *db, const char *sql) {
    if (db->pg) {
        PGresult *r = PQexec(db->pg, sql);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        snprintf(db->msg, sizeof db->msg, "%s", ok ? "" : PQresultErrorMessage(r));
        PQclear(r);
        return ok ? 0 : -1;
    }
    char *msg = NULL;
    int rc = sqlite3_exec(db->lite, sql, NULL, NULL, &msg);
    snprintf(db->msg, sizeof db->msg, "%s", msg ? msg : "");
    sqlite3_free(msg);
    return rc == SQLITE_OK ? 0 : -1;
}

/* The first column of the one row sql returns, as text (NULL for NULL; the caller frees). */
static char *raw_text(raw_conn *db, const char *sql) {
    char *copy = NULL;
    if (db->pg) {
        PGresult *r = PQexec(db->pg, sql);
        cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
        cr_assert_eq(PQntuples(r), 1, "%s returned no row", sql);
        if (!PQgetisnull(r, 0, 0)) copy = strdup(PQgetvalue(r, 0, 0));
        PQclear(r);
        return copy;
    }
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db->lite, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db->lite));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s returned no row", sql);
    const char *t = (const char *)sqlite3_column_text(st, 0);
    copy = t ? strdup(t) : NULL;
    sqlite3_finalize(st);
    return copy;
}

static int64_t raw_int(raw_conn *db, const char *sql) {
    char *t = raw_text(db, sql);
    int64_t v = t ? strtoll(t, NULL, 10) : 0;
    free(t);
    return v;
}

/* The store hands out pgd_job records; these tests read them as the API shows them (views.h),
 * which is also what they asserted before the records were typed. */
static int job_get_json(pgd_store *s, int64_t id, bool with_spec, json_t **out, pgn_error *err) {
    pgd_job job;
    *out = NULL;
    if (pgd_store_job_get(s, id, with_spec, &job, err) < 0) return -1;
    *out = pgd_job_json(&job, with_spec);
    pgd_job_release(&job);
    return 0;
}

static int cancel_json(pgd_store *s, int64_t id, json_t **out, pgn_error *err) {
    pgd_job job;
    *out = NULL;
    if (pgd_store_job_cancel(s, id, &job, err) < 0) return -1;
    *out = pgd_job_json(&job, true);
    pgd_job_release(&job);
    return 0;
}

/* A filter by names, as the API's query arguments give it. */
typedef struct text_filter {
    const char *state, *kind; /* NULL: any */
    int64_t limit, offset;
} text_filter;

static int list_json(pgd_store *s, const text_filter *t, json_t **out, int64_t *total,
                     pgn_error *err) {
    pgd_job_filter f = {.limit = t->limit, .offset = t->offset};
    f.by_state = t->state && pgd_job_state_parse(t->state, &f.state) == 0;
    f.by_kind = t->kind && pgn_job_kind_parse(t->kind, &f.kind) == 0;
    pgd_job *jobs;
    size_t n;
    *out = NULL;
    if (pgd_store_jobs_list(s, &f, &jobs, &n, total, err) < 0) return -1;
    *out = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(*out, pgd_job_json(&jobs[i], false));
    pgd_jobs_free(jobs, n);
    return 0;
}

/* Queued jobs as [{"id","device_requested","device"}]. */
static int queued_json(pgd_store *s, json_t **out, pgn_error *err) {
    pgd_job *jobs;
    size_t n;
    *out = NULL;
    if (pgd_store_queued_jobs(s, &jobs, &n, err) < 0) return -1;
    *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(*out, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)jobs[i].id,
                                               "device_requested", jobs[i].device_requested,
                                               "device", jobs[i].device));
    pgd_jobs_free(jobs, n);
    return 0;
}

/* Finishes with an error given as its JSON object (NULL: none). */
static int finish_json(pgd_store *s, int64_t id, pgd_job_state state, const json_t *result,
                       const json_t *error, pgn_error *err) {
    pgn_error e;
    if (error) pgd_error_from_json(error, &e);
    return pgd_store_job_finish(s, id, 0, state, result, error ? &e : NULL, NULL, err);
}

static pgn_job_kind kind_of(const char *name) {
    pgn_job_kind k = PGN_JOB_TRAIN;
    cr_assert_eq(pgn_job_kind_parse(name, &k), 0, "a kind: %s", name);
    return k;
}

static int64_t insert(pgd_store *s, const char *kind, const char *name, const char *device) {
    json_t *spec = json_pack("{s:s, s:s, s:i}", "kind", kind, "name", name, "epochs", 3);
    pgd_new_job job = {.kind = kind_of(kind), .name = name, .device_requested = "auto",
                       .device = device, .spec = spec};
    int64_t id = 0;
    pgn_error err;
    cr_assert_eq(pgd_store_jobs_insert(s, &job, 1, &id, &err), 0, "insert: %s", err.message);
    json_decref(spec);
    cr_assert_gt(id, 0);
    return id;
}

static json_t *get(pgd_store *s, int64_t id) {
    json_t *job = NULL;
    pgn_error err;
    cr_assert_eq(job_get_json(s, id, true, &job, &err), 0, "get %lld: %s", (long long)id,
                 err.message);
    return job;
}

static const char *str(const json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}

/* "2024-05-01T12:00:00.123Z" */
static void assert_timestamp(const char *t) {
    cr_assert_not_null(t);
    cr_assert_eq(strlen(t), 24, "timestamp '%s'", t);
    cr_assert(t[4] == '-' && t[7] == '-' && t[10] == 'T' && t[13] == ':' && t[16] == ':' &&
                  t[19] == '.' && t[23] == 'Z',
              "timestamp '%s' is not ISO-8601 UTC with milliseconds", t);
}

/* Claims the oldest queued job on device: its id (0: none queued there), its run's attempt. */
static int64_t claim_run(pgd_store *s, const char *device, int64_t *attempt) {
    int64_t id = -1;
    json_t *spec = NULL;
    pgn_error err;
    cr_assert_eq(pgd_store_job_claim(s, device, NULL, 0, &id, attempt, NULL, &spec, &err), 0, "claim: %s", err.message);
    if (id) cr_assert(json_is_object(spec) && *attempt > 0, "a claimed job comes with its spec and attempt");
    else cr_assert_null(spec);
    json_decref(spec);
    return id;
}

static int64_t claim(pgd_store *s, const char *device) {
    int64_t attempt;
    return claim_run(s, device, &attempt);
}

/* ---- migrations ------------------------------------------------------------------------- */

/* The newest version paragond knows: its migrations are numbered 1 to N without gaps, so N is
 * how many it embeds (a new migration changes no test). */
static int64_t newest_migration(void) {
    int64_t n = 0;
    while (pgd_schema_sources[n].name) n++;
    return n;
}

Test(store, fresh_database_records_every_version_and_creates_tables) {
    pgd_store *s = open_store();
    int64_t version = 0;
    pgn_error err;
    cr_assert_eq(pgd_store_schema_version(s, &version, &err), 0);
    cr_assert_eq(version, newest_migration());

    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM schema_migrations"), newest_migration());
    char *name = raw_text(db, "SELECT name FROM schema_migrations WHERE version = 1");
    cr_assert_str_eq(name, "001_init.sql");
    free(name);
    name = raw_text(db, "SELECT name FROM schema_migrations WHERE version = 2");
    cr_assert_str_eq(name, "002_benchmarks.sql");
    free(name);
    name = raw_text(db, "SELECT name FROM schema_migrations WHERE version = 3");
    cr_assert_str_eq(name, "003_job_estimates.sql");
    free(name);
    name = raw_text(db, "SELECT name FROM schema_migrations WHERE version = 4");
    cr_assert_str_eq(name, "004_job_cancel_delete.sql");
    free(name);
    name = raw_text(db, "SELECT name FROM schema_migrations WHERE version = 5");
    cr_assert_str_eq(name, "005_job_logs.sql");
    free(name);
    char *at = raw_text(db, "SELECT applied_at FROM schema_migrations WHERE version = 1");
    assert_timestamp(at);
    free(at);
    if (on_postgresql()) {
        cr_assert_eq(raw_int(db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                                 " AND tablename IN ('jobs', 'metrics', 'benchmarks', 'schema_migrations')"),
                     4);
        cr_assert_eq(raw_int(db, "SELECT count(*) FROM pg_indexes WHERE schemaname = 'public'"
                                 " AND indexname IN ('jobs_queue', 'jobs_state', 'jobs_kind',"
                                 " 'benchmarks_export', 'benchmarks_latest', 'benchmarks_job')"),
                     6);
    } else {
        cr_assert_eq(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                                 " AND name IN ('jobs', 'metrics', 'benchmarks', 'schema_migrations')"),
                     4);
        cr_assert_eq(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                 " AND name IN ('jobs_queue', 'jobs_state', 'jobs_kind',"
                                 " 'benchmarks_export', 'benchmarks_latest', 'benchmarks_job')"),
                     6);
        char *mode = raw_text(db, "PRAGMA journal_mode");
        cr_assert_str_eq(mode, "wal");
        free(mode);
    }
    raw_close(db);
    pgd_store_close(s);
}

#define APPLIED_AT_SQL                                                                             \
    (on_postgresql() ? "SELECT string_agg(applied_at, ',' ORDER BY version) FROM schema_migrations"  \
                     : "SELECT group_concat(applied_at) FROM schema_migrations")

Test(store, reopening_applies_nothing_again) {
    pgd_store_close(open_store());
    raw_conn *db = raw_db();
    char *first = raw_text(db, APPLIED_AT_SQL);
    raw_close(db);
    usleep(5000); /* a re-application would get a later applied_at */

    pgd_store *s = open_store();
    int64_t id = insert(s, "train", "kept", "host");
    pgd_store_close(s);
    s = open_store();

    db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM schema_migrations"), newest_migration());
    char *again = raw_text(db, APPLIED_AT_SQL);
    cr_assert_str_eq(again, first);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM jobs"), 1, "data survives a restart");
    raw_close(db);
    json_t *job = get(s, id);
    cr_assert_str_eq(str(job, "name"), "kept");
    json_decref(job);
    free(first);
    free(again);
    pgd_store_close(s);
}

static const pgn_embedded *find_init(void) {
    const pgn_embedded *init = pgn_embedded_find(pgd_schema_sources, "001_init.sql");
    cr_assert_not_null(init, "001_init.sql is embedded");
    return init;
}

#define SQL_FILE(name, text) {name, (const unsigned char *)(text), sizeof(text) - 1}

Test(store, a_new_migration_is_applied_once_in_order) {
    SQLITE_ONLY();
    const pgn_embedded *init = find_init();
    /* Listed out of order: the runner orders by the NNN prefix. */
    const pgn_embedded two[] = {
        SQL_FILE("002_extra.sql", "CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (7);"),
        *init,
        {NULL, NULL, 0}};
    const pgn_embedded one[] = {*init, {NULL, NULL, 0}};
    pgd_store *s;
    pgn_error err;
    cr_assert_eq(pgd_store_open_with(dbpath, one, &s, &err), 0, "%s", err.message);
    pgd_store_close(s);
    cr_assert_eq(pgd_store_open_with(dbpath, two, &s, &err), 0, "%s", err.message);
    pgd_store_close(s);
    cr_assert_eq(pgd_store_open_with(dbpath, two, &s, &err), 0, "%s", err.message);
    int64_t version;
    cr_assert_eq(pgd_store_schema_version(s, &version, &err), 0);
    cr_assert_eq(version, 2);
    pgd_store_close(s);

    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM extra"), 1, "002 ran exactly once");
    char *versions = raw_text(db, "SELECT group_concat(version, ',') FROM"
                                  " (SELECT version FROM schema_migrations ORDER BY version)");
    cr_assert_str_eq(versions, "1,2");
    free(versions);
    raw_close(db);
}

Test(store, a_failing_migration_rolls_back_and_names_the_file) {
    SQLITE_ONLY();
    const pgn_embedded *init = find_init();
    const pgn_embedded bad[] = {
        *init, SQL_FILE("002_broken.sql", "CREATE TABLE half (x INTEGER); THIS IS NOT SQL;"),
        {NULL, NULL, 0}};
    pgd_store *s = (pgd_store *)1;
    pgn_error err;
    pgn_error_clear(&err);
    cr_assert_eq(pgd_store_open_with(dbpath, bad, &s, &err), -1);
    cr_assert_null(s);
    cr_assert(strstr(err.message, "002_broken.sql"), "message: %s", err.message);
    cr_assert(strstr(err.message, "syntax error"), "message: %s", err.message);

    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT max(version) FROM schema_migrations"), 1);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'half'"), 0,
                 "the failed migration left nothing behind");
    raw_close(db);
}

Test(store, badly_named_or_newer_schemas_are_refused) {
    SQLITE_ONLY();
    const pgn_embedded misnamed[] = {SQL_FILE("init.sql", "SELECT 1;"), {NULL, NULL, 0}};
    pgd_store *s;
    pgn_error err;
    cr_assert_eq(pgd_store_open_with(dbpath, misnamed, &s, &err), -1);
    cr_assert(strstr(err.message, "'init.sql' is not named NNN_name.sql"), "%s", err.message);

    pgd_store_close(open_store());
    raw_conn *db = raw_db();
    cr_assert_eq(raw_exec(db, "INSERT INTO schema_migrations VALUES (999, '999_future.sql',"
                              " '2030-01-01T00:00:00.000Z')"),
                 0, "%s", db->msg);
    raw_close(db);
    cr_assert_eq(pgd_store_open(dbpath, &s, &err), -1);
    cr_assert(strstr(err.message, "schema version 999 is newer"), "%s", err.message);
}

/* ---- jobs ------------------------------------------------------------------------------- */

Test(store, insert_then_get_returns_every_field) {
    pgd_store *s = open_store();
    json_t *spec = json_pack("{s:s, s:s, s:{s:[i,i,i]}}", "kind", "train", "name", "xor", "model",
                             "layers", 2, 8, 2);
    pgd_new_job job = {.kind = PGN_JOB_TRAIN, .name = "xor", .device_requested = "cpu",
                       .device = "cpu-0000abcd", .spec = spec};
    int64_t id;
    pgn_error err;
    cr_assert_eq(pgd_store_jobs_insert(s, &job, 1, &id, &err), 0);
    cr_assert_eq(id, 1);

    json_t *o = get(s, id);
    cr_assert_eq(json_integer_value(json_object_get(o, "id")), 1);
    cr_assert_str_eq(str(o, "kind"), "train");
    cr_assert_str_eq(str(o, "name"), "xor");
    cr_assert_str_eq(str(o, "state"), "queued");
    cr_assert_str_eq(str(o, "device_requested"), "cpu");
    cr_assert_str_eq(str(o, "device"), "cpu-0000abcd");
    cr_assert(json_equal(json_object_get(o, "spec"), spec), "spec round-trips as JSON");
    cr_assert_float_eq(json_real_value(json_object_get(o, "progress")), 0.0, 1e-12);
    cr_assert_eq(json_integer_value(json_object_get(o, "attempts")), 0);
    cr_assert(json_is_null(json_object_get(o, "result")));
    cr_assert(json_is_null(json_object_get(o, "error")));
    assert_timestamp(str(o, "created_at"));
    cr_assert(json_is_null(json_object_get(o, "started_at")));
    cr_assert(json_is_null(json_object_get(o, "finished_at")));
    cr_assert(json_is_null(json_object_get(o, "estimate")));
    cr_assert(json_is_false(json_object_get(o, "cancel_requested")));
    cr_assert_eq(json_integer_value(json_object_get(o, "interrupted")), 0);
    cr_assert(json_is_null(json_object_get(o, "summary")), "no result, no summary");
    cr_assert(json_is_object(json_object_get(o, "tags")) && json_object_size(json_object_get(o, "tags")) == 0);
    cr_assert(json_is_null(json_object_get(o, "submission_id")));
    cr_assert_eq(json_integer_value(json_object_get(o, "priority")), 0);
    cr_assert_eq(json_object_size(o), 21);
    json_decref(o);

    cr_assert_eq(job_get_json(s, id, false, &o, &err), 0);
    cr_assert_null(json_object_get(o, "spec"), "without spec when asked");
    json_decref(o);

    o = (json_t *)1;
    cr_assert_eq(job_get_json(s, 42, true, &o, &err), -1);
    cr_assert_null(o);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_str_eq(err.message, "job 42 does not exist");
    json_decref(spec);
    pgd_store_close(s);
}

Test(store, claim_takes_the_oldest_queued_job_of_its_device) {
    pgd_store *s = open_store();
    int64_t a1 = insert(s, "train", "a1", "dev-a");
    int64_t b1 = insert(s, "train", "b1", "dev-b");
    int64_t a2 = insert(s, "train", "a2", "dev-a");

    cr_assert_eq(claim(s, "dev-a"), a1);
    json_t *o = get(s, a1);
    cr_assert_str_eq(str(o, "state"), "running");
    cr_assert_eq(json_integer_value(json_object_get(o, "attempts")), 1);
    assert_timestamp(str(o, "started_at"));
    json_decref(o);

    cr_assert_eq(claim(s, "dev-a"), a2);
    cr_assert_eq(claim(s, "dev-a"), 0, "nothing left on dev-a");
    cr_assert_eq(claim(s, "dev-c"), 0);
    cr_assert_eq(claim(s, "dev-b"), b1);
    pgd_store_close(s);
}

/* A claim that writes its run's first line: worded with the attempt the claim gave, stored in
 * the claim's transaction; nothing claimed, no line. */
static void started_text(void *ctx, int64_t attempt, char *out, size_t size) {
    snprintf(out, size, "started on %s (attempt %lld)", (const char *)ctx, (long long)attempt);
}

Test(store, a_claim_can_store_its_runs_first_line) {
    pgd_store *s = open_store();
    int64_t id = insert(s, "train", "a", "dev-a");
    int64_t got, attempt, priority;
    json_t *spec;
    pgd_log_line line = {.level = "info"};
    pgn_error err;
    cr_assert_eq(pgd_store_job_claim_told(s, "dev-a", NULL, 0, &got, &attempt, &priority, &spec, started_text,
                                          "dev-a", &line, &err), 0, "%s", err.message);
    cr_assert_eq(got, id);
    cr_assert_eq(attempt, 1);
    cr_assert_gt(line.seq, 0);
    assert_timestamp(line.time);
    json_decref(spec);
    json_t *logs;
    cr_assert_eq(pgd_store_logs_list(s, id, 0, &logs, &err), 0, "%s", err.message);
    json_t *last = json_array_get(logs, json_array_size(logs) - 1);
    cr_assert_eq(json_integer_value(json_object_get(last, "seq")), line.seq);
    cr_assert_str_eq(str(last, "line"), "started on dev-a (attempt 1)");
    cr_assert_str_eq(str(last, "level"), "info");
    json_decref(logs);

    line = (pgd_log_line){.level = "info", .seq = 7};
    cr_assert_eq(pgd_store_job_claim_told(s, "dev-a", NULL, 0, &got, &attempt, &priority, &spec, started_text,
                                          "dev-a", &line, &err), 0, "%s", err.message);
    cr_assert(got == 0 && line.seq == 0, "nothing queued: nothing claimed, no line");
    pgd_store_close(s);
}

/* A success's last metrics go in with its end, in one transaction: both or neither. */
Test(store, an_end_can_store_the_runs_last_metrics_with_it) {
    pgd_store *s = open_store();
    int64_t id = insert(s, "train", "a", "d"), attempt;
    cr_assert_eq(claim_run(s, "d", &attempt), id);
    pgn_error err;
    const pgd_metric last[] = {{"loss", 5, 0.25}, {"accuracy", 5, 0.75}};
    json_t *result = json_pack("{s:f}", "loss", 0.25);
    /* a late run's end is refused, and its metrics with it */
    cr_assert_eq(pgd_store_job_finish_with(s, id, attempt + 1, PGD_JOB_SUCCEEDED, result, NULL, NULL, last, 2, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    json_t *m;
    cr_assert_eq(pgd_store_metrics_list(s, id, NULL, false, 0, &m, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(m), 0, "no metric of a refused end");
    json_decref(m);
    pgd_log_line line = {.level = "info", .text = "succeeded"};
    cr_assert_eq(pgd_store_job_finish_with(s, id, attempt, PGD_JOB_SUCCEEDED, result, NULL, &line, last, 2, &err), 0,
                 "%s", err.message);
    cr_assert_gt(line.seq, 0);
    cr_assert_eq(pgd_store_metrics_list(s, id, NULL, false, 0, &m, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(m), 2, "both metrics with the end");
    json_decref(m);
    json_t *o = get(s, id);
    cr_assert_str_eq(str(o, "state"), "succeeded");
    json_decref(o);
    json_decref(result);
    pgd_store_close(s);
}

Test(store, finish_records_result_or_error_once) {
    pgd_store *s = open_store();
    int64_t ok = insert(s, "train", "ok", "d");
    int64_t bad = insert(s, "train", "bad", "d");
    cr_assert_eq(claim(s, "d"), ok);
    cr_assert_eq(claim(s, "d"), bad);
    pgn_error err;

    cr_assert_eq(pgd_store_job_progress(s, ok, 0, 0.25, &err), 0);
    json_t *o = get(s, ok);
    cr_assert_float_eq(json_real_value(json_object_get(o, "progress")), 0.25, 1e-12);
    json_decref(o);
    cr_assert_eq(pgd_store_job_progress(s, ok, 0, 7.0, &err), 0);
    o = get(s, ok);
    cr_assert_float_eq(json_real_value(json_object_get(o, "progress")), 1.0, 1e-12,
                       "progress is clamped to 1");
    json_decref(o);

    json_t *result = json_pack("{s:f, s:s}", "accuracy", 1.0, "weights_sha256", "ab");
    cr_assert_eq(finish_json(s, ok, PGD_JOB_SUCCEEDED, result, NULL, &err), 0);
    o = get(s, ok);
    cr_assert_str_eq(str(o, "state"), "succeeded");
    cr_assert(json_equal(json_object_get(o, "result"), result));
    cr_assert(json_is_null(json_object_get(o, "error")));
    assert_timestamp(str(o, "finished_at"));
    cr_assert_float_eq(json_real_value(json_object_get(o, "progress")), 1.0, 1e-12);
    json_decref(o);

    pgn_error jerr;
    pgn_error_clear(&jerr);
    pgn_error_set(&jerr, PGN_E_KERNEL_BUILD, "", "build failed: \xff\xfe log");
    json_t *ej = pgd_error_json(&jerr);
    cr_assert_str_eq(str(ej, "message"), "build failed: ?? log", "invalid UTF-8 is replaced");
    cr_assert(json_is_null(json_object_get(ej, "field")));
    cr_assert_eq(finish_json(s, bad, PGD_JOB_FAILED, NULL, ej, &err), 0);
    o = get(s, bad);
    cr_assert_str_eq(str(o, "state"), "failed");
    cr_assert_str_eq(str(json_object_get(o, "error"), "code"), "kernel_build");
    cr_assert(json_is_null(json_object_get(o, "result")));
    json_decref(o);

    cr_assert_eq(finish_json(s, ok, PGD_JOB_FAILED, NULL, ej, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "it is succeeded"), "%s", err.message);
    cr_assert_eq(pgd_store_job_progress(s, ok, 0, 0.5, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert_eq(finish_json(s, 999, PGD_JOB_FAILED, NULL, ej, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_eq(finish_json(s, bad, PGD_JOB_RUNNING, NULL, NULL, &err), -1,
                 "running is not a final state");
    json_decref(ej);
    json_decref(result);
    pgd_store_close(s);
}

Test(store, list_filters_pages_and_counts) {
    pgd_store *s = open_store();
    int64_t ids[7];
    for (int i = 0; i < 7; i++) ids[i] = insert(s, i < 5 ? "train" : "bench", "j", "d");
    /* ids[0] and ids[1] run; ids[0] succeeds. */
    cr_assert_eq(claim(s, "d"), ids[0]);
    cr_assert_eq(claim(s, "d"), ids[1]);
    pgn_error err;
    json_t *r = json_object();
    cr_assert_eq(finish_json(s, ids[0], PGD_JOB_SUCCEEDED, r, NULL, &err), 0);
    json_decref(r);

    json_t *jobs;
    int64_t total;
    text_filter f = {.limit = 3, .offset = 0};
    cr_assert_eq(list_json(s, &f, &jobs, &total, &err), 0);
    cr_assert_eq(total, 7);
    cr_assert_eq(json_array_size(jobs), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *j = json_array_get(jobs, i);
        cr_assert_eq(json_integer_value(json_object_get(j, "id")), ids[6 - i], "newest first");
        cr_assert_null(json_object_get(j, "spec"), "lists leave the spec out");
    }
    json_decref(jobs);

    f.offset = 5;
    cr_assert_eq(list_json(s, &f, &jobs, &total, &err), 0);
    cr_assert_eq(total, 7);
    cr_assert_eq(json_array_size(jobs), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 1), "id")), ids[0]);
    json_decref(jobs);

    f = (text_filter){.state = "queued", .limit = 50};
    cr_assert_eq(list_json(s, &f, &jobs, &total, &err), 0);
    cr_assert_eq(total, 5);
    cr_assert_eq(json_array_size(jobs), 5);
    json_decref(jobs);

    f = (text_filter){.kind = "bench", .limit = 50};
    cr_assert_eq(list_json(s, &f, &jobs, &total, &err), 0);
    cr_assert_eq(total, 2);
    cr_assert_str_eq(str(json_array_get(jobs, 0), "kind"), "bench");
    json_decref(jobs);

    f = (text_filter){.state = "running", .kind = "train", .limit = 50};
    cr_assert_eq(list_json(s, &f, &jobs, &total, &err), 0);
    cr_assert_eq(total, 1);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 0), "id")), ids[1]);
    json_decref(jobs);

    f = (text_filter){.state = "succeeded", .limit = 0};
    cr_assert_eq(list_json(s, &f, &jobs, &total, &err), 0);
    cr_assert_eq(total, 1, "limit 0 still counts");
    cr_assert_eq(json_array_size(jobs), 0);
    json_decref(jobs);

    json_t *counts;
    cr_assert_eq(pgd_store_queued_counts(s, &counts, &err), 0);
    cr_assert_eq(json_integer_value(json_object_get(counts, "d")), 5);
    cr_assert_eq(json_object_size(counts), 1);
    json_decref(counts);
    pgd_store_close(s);
}

Test(store, state_names_round_trip) {
    for (int i = PGD_JOB_QUEUED; i <= PGD_JOB_CANCELLED; i++) {
        pgd_job_state st;
        cr_assert_eq(pgd_job_state_parse(pgd_job_state_name((pgd_job_state)i), &st), 0);
        cr_assert_eq((int)st, i);
    }
    pgd_job_state st;
    cr_assert_eq(pgd_job_state_parse("done", &st), -1);
}

/* ---- metrics ---------------------------------------------------------------------------- */

Test(store, metrics_are_ordered_filtered_and_replaced) {
    pgd_store *s = open_store();
    int64_t id = insert(s, "train", "m", "d");
    pgn_error err;
    for (int step = 4; step >= 0; step--) { /* written out of order on purpose */
        cr_assert_eq(pgd_store_metric_add(s, id, 0, "loss", step, 1.0 / (step + 1), &err), 0);
        cr_assert_eq(pgd_store_metric_add(s, id, 0, "accuracy", step, step / 4.0, &err), 0);
    }
    json_t *m;
    cr_assert_eq(pgd_store_metrics_list(s, id, NULL, false, 0, &m, &err), 0);
    cr_assert_eq(json_array_size(m), 10);
    for (size_t i = 0; i < 10; i++) {
        json_t *row = json_array_get(m, i);
        cr_assert_str_eq(str(row, "name"), i < 5 ? "accuracy" : "loss");
        cr_assert_eq(json_integer_value(json_object_get(row, "step")), (json_int_t)(i % 5));
        assert_timestamp(str(row, "created_at"));
    }
    cr_assert_float_eq(json_real_value(json_object_get(json_array_get(m, 5), "value")), 1.0,
                       1e-12);
    cr_assert_float_eq(json_real_value(json_object_get(json_array_get(m, 9), "value")), 0.2,
                       1e-12);
    json_decref(m);

    cr_assert_eq(pgd_store_metrics_list(s, id, "loss", true, 2, &m, &err), 0);
    cr_assert_eq(json_array_size(m), 2, "only steps after 2");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(m, 0), "step")), 3);
    json_decref(m);

    /* A re-run of a step (after a restart) replaces it; a NaN reads back as null. */
    cr_assert_eq(pgd_store_metric_add(s, id, 0, "loss", 4, 0.5, &err), 0);
    cr_assert_eq(pgd_store_metric_add(s, id, 0, "loss", 5, NAN, &err), 0);
    cr_assert_eq(pgd_store_metrics_list(s, id, "loss", true, 3, &m, &err), 0);
    cr_assert_eq(json_array_size(m), 2);
    cr_assert_float_eq(json_real_value(json_object_get(json_array_get(m, 0), "value")), 0.5,
                       1e-12);
    cr_assert(json_is_null(json_object_get(json_array_get(m, 1), "value")));
    json_decref(m);

    cr_assert_eq(pgd_store_metrics_list(s, id, "nothing", false, 0, &m, &err), 0);
    cr_assert_eq(json_array_size(m), 0);
    json_decref(m);

    cr_assert_eq(pgd_store_metric_add(s, 777, 0, "loss", 0, 1.0, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    m = (json_t *)1;
    cr_assert_eq(pgd_store_metrics_list(s, 777, NULL, false, 0, &m, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_null(m);
    pgd_store_close(s);

    /* Deleting a job deletes its series (ON DELETE CASCADE). */
    raw_conn *db = raw_db();
    cr_assert_eq(raw_exec(db, on_postgresql() ? "DELETE FROM jobs" : "PRAGMA foreign_keys = ON; DELETE FROM jobs;"),
                 0, "%s", db->msg);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM metrics"), 0);
    raw_close(db);
}

Test(store, schema_rejects_unknown_states) {
    pgd_store *s = open_store();
    insert(s, "train", "x", "d");
    pgd_store_close(s);
    raw_conn *db = raw_db();
    cr_assert_neq(raw_exec(db, "UPDATE jobs SET state = 'done'"), 0);
    cr_assert(strstr(db->msg, "CHECK constraint failed") || strstr(db->msg, "violates check constraint"),
              "%s", db->msg);
    raw_close(db);
}

/* ---- benchmarks ------------------------------------------------------------------------- */

Test(store, a_version_1_database_gains_the_benchmarks_table) {
    SQLITE_ONLY();
    const pgn_embedded one[] = {*find_init(), {NULL, NULL, 0}};
    pgd_store *s;
    pgn_error err;
    cr_assert_eq(pgd_store_open_with(dbpath, one, &s, &err), 0, "%s", err.message);
    pgd_store_close(s);
    /* a job of that version, written as that version's server wrote it */
    raw_conn *db = raw_db();
    cr_assert_eq(raw_exec(db, "INSERT INTO jobs (kind, name, device_requested, device, spec)"
                                  " VALUES ('bench', 'old', 'auto', 'd', '{}')"), 0);
    int64_t id = sqlite3_last_insert_rowid(db->lite);
    raw_close(db);

    s = open_store(); /* every embedded migration */
    int64_t version = 0;
    cr_assert_eq(pgd_store_schema_version(s, &version, &err), 0);
    cr_assert_eq(version, newest_migration());
    json_t *job = get(s, id);
    cr_assert_str_eq(str(job, "name"), "old", "jobs survive the upgrade");
    json_decref(job);
    json_t *rows = json_pack("[{s:s, s:s, s:s}]", "suite", "gemm", "case", "N=128", "device", "d");
    cr_assert_eq(pgd_store_bench_add(s, id, rows, NULL, &err), 0, "%s", err.message);
    json_decref(rows);
    pgd_store_close(s);
}

/* ---- placements ------------------------------------------------------------------------- */

/* What placement.c makes of a train job on two devices, the second chosen: measured rates on
 * one, guessed on the other. */
static pgd_placement two_candidates(pgd_candidate c[2]) {
    c[0] = (pgd_candidate){.device = "cpu-a",
                           .rates = {.gflops = 40.5, .mips = 12.25, .launch_us = 35, .measured = true},
                           .estimate = {.work = 3e9, .unit = PGN_WORK_FLOP, .launches = 800, .seconds = 0.1},
                           .queue_seconds = 2.5};
    c[1] = (pgd_candidate){.device = "cpu-b",
                           .rates = {.gflops = 20, .mips = 80, .launch_us = 10, .measured = false},
                           .estimate = {.work = 3e9, .unit = PGN_WORK_FLOP, .launches = 800, .seconds = 0.158},
                           .queue_seconds = 0};
    return (pgd_placement){.reason = PGD_PLACED_FASTEST, .chosen = 1, .n = 2, .candidates = c};
}

static void assert_same_candidate(const pgd_candidate *got, const pgd_candidate *want) {
    cr_assert_str_eq(got->device, want->device);
    cr_assert_eq(got->rates.gflops, want->rates.gflops);
    cr_assert_eq(got->rates.mips, want->rates.mips);
    cr_assert_eq(got->rates.launch_us, want->rates.launch_us);
    cr_assert_eq(got->rates.measured, want->rates.measured);
    cr_assert_eq(got->estimate.work, want->estimate.work);
    cr_assert_eq(got->estimate.unit, want->estimate.unit);
    cr_assert_eq(got->estimate.launches, want->estimate.launches);
    cr_assert_eq(got->estimate.seconds, want->estimate.seconds);
    cr_assert_eq(got->queue_seconds, want->queue_seconds);
}


/* A device's queue as pgd_store_queue_each hands it over, in its order. */
typedef struct {
    bool running[8];
    double seconds[8];
    size_t n;
} queue_seen;

static void queue_seen_add(void *ctx, bool running, double seconds) {
    queue_seen *q = ctx;
    cr_assert_lt(q->n, 8);
    q->running[q->n] = running;
    q->seconds[q->n++] = seconds;
}

static queue_seen queue_of(pgd_store *s, const char *device) {
    queue_seen q = {0};
    pgn_error err;
    cr_assert_eq(pgd_store_queue_each(s, device, queue_seen_add, &q, &err), 0, "%s", err.message);
    return q;
}
Test(store, a_placement_is_kept_in_typed_columns_and_read_back_as_it_was_made) {
    pgd_store *s = open_store();
    pgd_candidate c[2];
    pgd_placement made = two_candidates(c);
    json_t *spec = json_pack("{s:s}", "kind", "train");
    pgd_new_job job = {.kind = PGN_JOB_TRAIN, .name = "placed", .device_requested = "auto", .device = "cpu-b",
                       .spec = spec, .placement = &made};
    pgd_new_job unplaced = {.kind = PGN_JOB_BENCH, .name = "all", .device_requested = "all", .device = "cpu-a",
                            .spec = spec};
    int64_t id = 0, other = 0;
    pgn_error err;
    cr_assert_eq(pgd_store_jobs_insert(s, &job, 1, &id, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_jobs_insert(s, &unplaced, 1, &other, &err), 0, "%s", err.message);
    json_decref(spec);

    pgd_job got;
    cr_assert_eq(pgd_store_job_get(s, id, false, &got, &err), 0, "%s", err.message);
    cr_assert_eq(got.placement.reason, PGD_PLACED_FASTEST);
    cr_assert_eq(got.placement.n, 2);
    cr_assert_eq(got.placement.chosen, 1);
    for (size_t i = 0; i < 2; i++) assert_same_candidate(&got.placement.candidates[i], &c[i]);
    pgd_job_release(&got);
    cr_assert_eq(pgd_store_job_get(s, other, false, &got, &err), 0, "%s", err.message);
    cr_assert_eq(got.placement.n, 0, "a job placed without the cost model has no placement");
    json_t *shown = pgd_job_json(&got, false);
    cr_assert(json_is_null(json_object_get(shown, "estimate")), "its estimate is null");
    json_decref(shown);
    pgd_job_release(&got);

    /* the list reads it too */
    pgd_job *jobs;
    size_t n;
    int64_t total;
    pgd_job_filter f = {.limit = 10};
    cr_assert_eq(pgd_store_jobs_list(s, &f, &jobs, &n, &total, &err), 0, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_assert_eq(jobs[1].id, id);
    cr_assert_eq(jobs[1].placement.n, 2);
    assert_same_candidate(&jobs[1].placement.candidates[1], &c[1]);
    cr_assert_eq(jobs[0].placement.n, 0);
    pgd_jobs_free(jobs, n);

    /* in columns, not a document */
    raw_conn *db = raw_db();
    char *reason = raw_text(db, "SELECT placement FROM jobs WHERE placement IS NOT NULL");
    cr_assert_str_eq(reason, "fastest");
    free(reason);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM job_candidates WHERE chosen = 1 AND device = 'cpu-b' AND unit = 'flop'"), 1);
    cr_assert_eq(raw_int(db, on_postgresql() ? "SELECT count(*) FROM information_schema.columns"
                                               " WHERE table_name = 'jobs' AND column_name = 'estimate'"
                                             : "SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'estimate'"),
                 0);
    raw_close(db);

    /* the queue as the cost model reads it: the chosen candidate's estimate of each queued or
     * running job */
    queue_seen q = queue_of(s, "cpu-b");
    cr_assert(q.n == 1 && !q.running[0] && q.seconds[0] == 0.158, "%zu", q.n);
    cr_assert_eq(queue_of(s, "cpu-a").n, 0, "cpu-a was weighed, not chosen; its bench job has no estimate");
    cr_assert_eq(claim(s, "cpu-b"), id);
    q = queue_of(s, "cpu-b");
    cr_assert(q.n == 1 && q.running[0] && q.seconds[0] == 0.158, "a running job still counts");
    cr_assert_eq(pgd_store_job_progress(s, id, 1, 0.25, &err), 0, "%s", err.message);
    q = queue_of(s, "cpu-b");
    cr_assert_float_eq(q.seconds[0], 0.158 * 0.75, 1e-12, "what its progress leaves of it");
    cr_assert_eq(pgd_store_job_finish(s, id, 0, PGD_JOB_SUCCEEDED, NULL, NULL, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(queue_of(s, "cpu-b").n, 0, "a finished job does not");

    /* the candidates go with their job */
    cr_assert_eq(pgd_store_job_delete(s, id, &err), 0, "%s", err.message);
    db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM job_candidates"), 0);
    raw_close(db);
    pgd_store_close(s);
}

/* Before 012 the estimate was a JSON document on the job; the migration moves each one into the
 * typed columns, and the API shows the same document as before (less nothing it had). */
/* The job an insert reads back (what a submission answers and announces, without a second read)
 * is the job as the store reads it: every field the API shows, for a job placed by the cost
 * model with tags and a key, and for one placed by name. */
Test(store, an_insert_gives_the_job_as_the_store_reads_it) {
    pgd_store *s = open_store();
    pgd_candidate c[2];
    pgd_placement made = two_candidates(c);
    json_t *spec = json_pack("{s:s}", "kind", "train"), *tags = json_pack("{s:s}", "team", "a");
    pgd_job stored[2] = {0};
    pgd_new_job jobs[2] = {{.kind = PGN_JOB_TRAIN, .name = "placed", .device_requested = "auto", .device = "cpu-b",
                            .spec = spec, .placement = &made, .tags = tags, .priority = 7, .log_line = "queued",
                            .stored = &stored[0]},
                           {.kind = PGN_JOB_INET, .name = "by name", .device_requested = "cpu-a",
                            .device = "cpu-a", .spec = spec, .stored = &stored[1]}};
    pgd_submission sub = {.key = "k-1", .body_sha256 = "00"};
    int64_t ids[2];
    pgn_error err;
    cr_assert_eq(pgd_store_jobs_insert_keyed(s, jobs, 2, &sub, ids, &err), 0, "%s", err.message);
    for (size_t i = 0; i < 2; i++) {
        pgd_job got;
        cr_assert_eq(pgd_store_job_get(s, ids[i], false, &got, &err), 0, "%s", err.message);
        json_t *read = pgd_job_json(&got, false), *given = pgd_job_json(&stored[i], false);
        char *want = pgn_json_dumps(read), *have = pgn_json_dumps(given);
        cr_assert_str_eq(have, want, "job %zu as its insert gave it", i);
        cr_assert_eq(stored[i].state, PGD_JOB_QUEUED);
        free(want);
        free(have);
        json_decref(read);
        json_decref(given);
        pgd_job_release(&got);
        pgd_job_release(&stored[i]);
    }
    json_decref(spec);
    json_decref(tags);
    pgd_store_close(s);
}

Test(store, estimates_stored_as_json_before_012_move_into_typed_columns) {
    SQLITE_ONLY();
    pgn_embedded before[64];
    size_t k = 0;
    for (size_t i = 0; pgd_schema_sources[i].name; i++)
        if (strcmp(pgd_schema_sources[i].name, "012") < 0) before[k++] = pgd_schema_sources[i];
    before[k] = (pgn_embedded){NULL, NULL, 0};
    pgd_store *s;
    pgn_error err;
    cr_assert_eq(pgd_store_open_with(dbpath, before, &s, &err), 0, "%s", err.message);
    pgd_store_close(s);
    static const char estimate[] =
        "{\"device\":\"cpu-b\",\"seconds\":0.158,\"queue_seconds\":0.0,\"total_seconds\":0.158,\"work\":3e9,"
        "\"gflops\":20.0,\"mips\":80.0,\"launch_us\":10.0,\"unit\":\"flop\",\"measured\":false,"
        "\"reason\":\"the shortest estimated finish (estimate + queued)\",\"candidates\":["
        "{\"device\":\"cpu-a\",\"seconds\":0.1,\"queue_seconds\":2.5,\"total_seconds\":2.6,\"work\":3e9,"
        "\"gflops\":40.5,\"mips\":12.25,\"launch_us\":35.0,\"unit\":\"flop\",\"measured\":true},"
        "{\"device\":\"cpu-b\",\"seconds\":0.158,\"queue_seconds\":0.0,\"total_seconds\":0.158,\"work\":3e9,"
        "\"gflops\":20.0,\"mips\":80.0,\"launch_us\":10.0,\"unit\":\"flop\",\"measured\":false}]}";
    raw_conn *db = raw_db();
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db->lite, "INSERT INTO jobs (kind, name, device_requested, device, spec, estimate)"
                                        " VALUES ('train', 'old', 'auto', 'cpu-b', '{}', ?1)", -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db->lite));
    sqlite3_bind_text(st, 1, estimate, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db->lite));
    sqlite3_finalize(st);
    int64_t id = sqlite3_last_insert_rowid(db->lite);
    raw_close(db);

    s = open_store();
    pgd_job got;
    cr_assert_eq(pgd_store_job_get(s, id, false, &got, &err), 0, "%s", err.message);
    pgd_candidate c[2];
    pgd_placement want = two_candidates(c);
    cr_assert_eq(got.placement.reason, want.reason);
    cr_assert_eq(got.placement.n, 2);
    cr_assert_eq(got.placement.chosen, 1);
    for (size_t i = 0; i < 2; i++) {
        c[i].estimate.launches = 0; /* the document did not keep them */
        assert_same_candidate(&got.placement.candidates[i], &c[i]);
    }
    json_t *job = pgd_job_json(&got, false), *old = json_loads(estimate, 0, NULL);
    json_t *shown = json_object_get(job, "estimate");
    cr_assert(json_equal(shown, old), "the API shows what it showed before: %s", json_dumps(shown, JSON_COMPACT));
    json_decref(job);
    json_decref(old);
    pgd_job_release(&got);
    pgd_store_close(s);
}

/* A row as the engine makes it, with one figure. */
static json_t *bench_row(const char *suite, const char *case_id, const char *device,
                         double ms) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:b, s:i}", "suite", suite, "case", case_id,
                     "device", device, "adapter", "Adapter, Inc.", "version", "0.1.0",
                     "device_ms", ms, "bit_identical", 1, "m", 128);
}

static json_t *bench_list(pgd_store *s, const char *suite, const char *device, int64_t limit) {
    json_t *rows = NULL;
    pgn_error err;
    cr_assert_eq(pgd_store_bench_list(s, suite, device, limit, &rows, &err), 0, "%s",
                 err.message);
    cr_assert(json_is_array(rows));
    return rows;
}

static int64_t row_int(const json_t *rows, size_t i, const char *key) {
    return json_integer_value(json_object_get(json_array_get(rows, i), key));
}

static const char *row_str(const json_t *rows, size_t i, const char *key) {
    return json_string_value(json_object_get(json_array_get(rows, i), key));
}

Test(store, bench_rows_are_stored_in_one_batch_and_listed_with_filters_and_limit) {
    pgd_store *s = open_store();
    int64_t job = insert(s, "bench", "b", "cpu-1");
    json_t *rows = json_pack("[o, o, o]", bench_row("gemm", "N=128", "cpu-1", 0.5),
                             bench_row("gemm", "N=256", "cpu-1", 2.0),
                             bench_row("inet", "fib", "cpu-1", 7.0));
    pgn_error err;
    cr_assert_eq(pgd_store_bench_add(s, job, rows, NULL, &err), 0, "%s", err.message);
    json_t *other = json_pack("[o]", bench_row("gemm", "N=128", "gpu-2", 0.25));
    cr_assert_eq(pgd_store_bench_add(s, 0, other, NULL, &err), 0, "rows without a job: %s",
                 err.message);

    json_t *all = bench_list(s, NULL, NULL, 1000);
    cr_assert_eq(json_array_size(all), 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(row_int(all, i, "id"), (int64_t)i + 1, "oldest first");
    /* Every stored field comes back, plus the store's own. */
    json_t *first = json_array_get(all, 0);
    json_t *want = json_deep_copy(json_array_get(rows, 0));
    json_object_set_new(want, "id", json_integer(1));
    json_object_set_new(want, "job_id", json_integer(job));
    json_object_set(want, "created_at", json_object_get(first, "created_at"));
    cr_assert(json_equal(first, want), "row: %s", json_dumps(first, 0));
    json_decref(want);
    assert_timestamp(row_str(all, 0, "created_at"));
    cr_assert_str_eq(row_str(all, 0, "created_at"), row_str(all, 2, "created_at"),
                     "one batch, one created_at");
    cr_assert(json_is_null(json_object_get(json_array_get(all, 3), "job_id")));
    cr_assert_float_eq(json_real_value(json_object_get(json_array_get(all, 1), "device_ms")), 2.0,
                       0);
    json_decref(all);

    json_t *l = bench_list(s, "gemm", NULL, 1000);
    cr_assert_eq(json_array_size(l), 3);
    cr_assert_str_eq(row_str(l, 2, "device"), "gpu-2");
    json_decref(l);
    l = bench_list(s, NULL, "cpu-1", 1000);
    cr_assert_eq(json_array_size(l), 3);
    cr_assert_str_eq(row_str(l, 2, "suite"), "inet");
    json_decref(l);
    l = bench_list(s, "gemm", "cpu-1", 1000);
    cr_assert_eq(json_array_size(l), 2);
    cr_assert_str_eq(row_str(l, 0, "case"), "N=128");
    cr_assert_str_eq(row_str(l, 1, "case"), "N=256");
    json_decref(l);
    l = bench_list(s, "train", NULL, 1000);
    cr_assert_eq(json_array_size(l), 0);
    json_decref(l);

    /* limit keeps the newest rows, still oldest first. */
    l = bench_list(s, "gemm", NULL, 2);
    cr_assert_eq(json_array_size(l), 2);
    cr_assert_eq(row_int(l, 0, "id"), 2);
    cr_assert_eq(row_int(l, 1, "id"), 4);
    json_decref(l);
    l = bench_list(s, NULL, NULL, 0);
    cr_assert_eq(json_array_size(l), 0);
    json_decref(l);

    /* The columns beside the JSON are what the rows say. */
    pgd_store_close(s);
    raw_conn *db = raw_db();
    char *cols = raw_text(db, on_postgresql()
                                  ? "SELECT string_agg(suite || '/' || case_id || '/' || device || '/'"
                                    " || adapter || '/' || version, ';' ORDER BY id) FROM benchmarks"
                                  : "SELECT group_concat(suite || '/' || case_id || '/' || device || '/'"
                                    " || adapter || '/' || version, ';') FROM benchmarks");
    cr_assert_str_eq(cols, "gemm/N=128/cpu-1/Adapter, Inc./0.1.0;gemm/N=256/cpu-1/Adapter, "
                           "Inc./0.1.0;inet/fib/cpu-1/Adapter, Inc./0.1.0;gemm/N=128/gpu-2/"
                           "Adapter, Inc./0.1.0");
    free(cols);
    raw_close(db);
    json_decref(rows);
    json_decref(other);
}

Test(store, bad_bench_rows_name_the_field_and_store_nothing) {
    pgd_store *s = open_store();
    int64_t job = insert(s, "bench", "b", "d");
    struct {
        const char *json, *field, *says;
    } cases[] = {
        {"{}", "rows", "must be an array"},
        {"[1]", "rows[0]", "must be an object"},
        {"[{\"suite\":\"gemm\",\"case\":\"a\",\"device\":\"d\"},"
         " {\"suite\":\"gemm\",\"device\":\"d\"}]",
         "rows[1].case", "non-empty string"},
        {"[{\"suite\":\"\",\"case\":\"a\",\"device\":\"d\"}]", "rows[0].suite", "non-empty"},
        {"[{\"suite\":\"gemm\",\"case\":\"a\",\"device\":7}]", "rows[0].device", "string"},
        {"[{\"suite\":\"gemm\",\"case\":\"a\",\"device\":\"d\",\"adapter\":[1]}]",
         "rows[0].adapter", "must be a string"},
        {"[{\"suite\":\"gemm\",\"case\":\"a\",\"device\":\"d\",\"id\":3}]", "rows[0].id",
         "set by the store"},
        {"[{\"suite\":\"gemm\",\"case\":\"a\",\"device\":\"d\",\"created_at\":\"x\"}]",
         "rows[0].created_at", "set by the store"},
        {"[{\"suite\":\"gemm\",\"case\":\"a\",\"device\":\"d\",\"shape\":[784,10]}]",
         "rows[0].shape", "rows are flat"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *rows = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        cr_assert_not_null(rows, "%s", cases[i].json);
        pgn_error err;
        pgn_error_clear(&err);
        cr_assert_eq(pgd_store_bench_add(s, job, rows, NULL, &err), -1, "%s", cases[i].json);
        cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_row");
        cr_assert_str_eq(err.field, cases[i].field);
        cr_assert(strstr(err.message, cases[i].field) && strstr(err.message, cases[i].says),
                  "%s: %s", cases[i].json, err.message);
        json_decref(rows);
    }
    json_t *rows = json_pack("[o]", bench_row("gemm", "N=128", "d", 1));
    pgn_error err;
    cr_assert_eq(pgd_store_bench_add(s, 999, rows, NULL, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_str_eq(err.message, "job 999 does not exist");
    json_decref(rows);
    json_t *none = bench_list(s, NULL, NULL, 1000);
    cr_assert_eq(json_array_size(none), 0, "no bad batch stored a row");
    json_decref(none);
    pgd_store_close(s);
}

/* What runs measured of a device's rates: kept beside their rows, each figure the newest run's
 * that measured it, per device; a run's rates go with its job. */
Test(store, rates_are_the_newest_each_run_measured_and_go_with_their_job) {
    pgd_store *s = open_store();
    pgn_error err;
    int64_t old = insert(s, "bench", "old", "cpu-1");
    int64_t new = insert(s, "bench", "new", "cpu-1");
    json_t *a = json_pack("[o, o]", bench_row("gemm", "fwd1", "cpu-1", 1), bench_row("inet", "fib", "cpu-1", 3));
    json_t *b = json_pack("[o]", bench_row("gemm", "fwd1", "cpu-1", 0.8));
    json_t *c = json_pack("[o]", bench_row("gemm", "fwd1", "gpu-2", 0.1));
    pgn_measured_rates ra = {.device = "cpu-1", .gflops = 100, .mips = 50, .launch_us = 30,
                             .train = {.step_launch_us = 12, .mlp_gflops = 80, .mlp_setup_s = 0.01,
                                       .load_mbps = 110, .gpt_gflops = 60, .gpt_setup_s = 0.25}};
    pgn_measured_rates rb = {.device = "cpu-1", .gflops = 120}; /* a gemm run alone */
    pgn_measured_rates rc = {.device = "gpu-2", .gflops = 900};
    cr_assert_eq(pgd_store_bench_add(s, old, a, &ra, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(s, new, b, &rb, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(s, 0, c, &rc, &err), 0, "%s", err.message);

    pgn_measured_rates m;
    cr_assert_eq(pgd_store_rates_latest(s, "cpu-1", &m, &err), 0, "%s", err.message);
    cr_assert_str_eq(m.device, "cpu-1");
    cr_assert_eq(m.gflops, 120, "the newer run's GEMM rate");
    cr_assert_eq(m.mips, 50, "the reducer's rate is still the older run's: the newer did not measure it");
    cr_assert_eq(m.launch_us, 30);
    const pgn_train_rates *t = &m.train; /* the cost suite's figures, each the newest */
    cr_assert(t->step_launch_us == 12 && t->mlp_gflops == 80 && t->mlp_setup_s == 0.01 && t->load_mbps == 110 &&
                  t->gpt_gflops == 60 && t->gpt_setup_s == 0.25,
              "%g %g %g %g %g %g", t->step_launch_us, t->mlp_gflops, t->mlp_setup_s, t->load_mbps, t->gpt_gflops,
              t->gpt_setup_s);
    cr_assert_eq(pgd_store_rates_latest(s, "gpu-2", &m, &err), 0, "%s", err.message);
    cr_assert_eq(m.gflops, 900, "a run without a job counts too");
    cr_assert_eq(m.mips, 0);
    cr_assert_eq(pgd_store_rates_latest(s, "gpu-9", &m, &err), 0, "%s", err.message);
    cr_assert(m.gflops == 0 && m.mips == 0 && m.launch_us == 0 && m.train.step_launch_us == 0,
              "a device never measured has no figures");

    /* rows without rates (nothing measured) store no figures */
    json_t *d = json_pack("[o]", bench_row("mlp-forward", "S1", "cpu-3", 5));
    pgn_measured_rates none = {.device = "cpu-3"};
    cr_assert_eq(pgd_store_bench_add(s, 0, d, &none, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_add(s, 0, d, NULL, &err), 0, "%s", err.message);
    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM device_rates WHERE device = 'cpu-3'"), 0);
    raw_close(db);

    /* deleting the newer job withdraws its run from the cost model */
    cr_assert_eq(claim(s, "cpu-1"), old);
    cr_assert_eq(claim(s, "cpu-1"), new);
    cr_assert_eq(pgd_store_job_finish(s, new, 0, PGD_JOB_FAILED, NULL, NULL, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_job_delete(s, new, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_rates_latest(s, "cpu-1", &m, &err), 0, "%s", err.message);
    cr_assert_eq(m.gflops, 100, "the older run's again");

    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    pgd_store_close(s);
}

Test(store, bench_finish_stores_rows_and_success_together_or_neither) {
    pgd_store *s = open_store();
    int64_t ok = insert(s, "bench", "ok", "d");
    int64_t bad = insert(s, "bench", "bad", "d");
    int64_t queued = insert(s, "bench", "never claimed", "d2");
    cr_assert_eq(claim(s, "d"), ok);
    cr_assert_eq(claim(s, "d"), bad);
    pgn_error err;

    json_t *result = json_pack("{s:s, s:s, s:[o, o]}", "suite", "gemm", "device", "d", "rows",
                               bench_row("gemm", "N=128", "d", 1),
                               bench_row("gemm", "N=256", "d", 2));
    pgn_measured_rates rates = {.device = "d", .gflops = 42};
    cr_assert_eq(pgd_store_bench_finish(s, ok, 0, result, &rates, &err), 0, "%s", err.message);
    pgn_measured_rates m;
    cr_assert_eq(pgd_store_rates_latest(s, "d", &m, &err), 0, "%s", err.message);
    cr_assert_eq(m.gflops, 42, "the rates are stored with the rows");
    json_t *o = get(s, ok);
    cr_assert_str_eq(str(o, "state"), "succeeded");
    cr_assert(json_equal(json_object_get(o, "result"), result));
    json_decref(o);
    json_t *l = bench_list(s, NULL, NULL, 100);
    cr_assert_eq(json_array_size(l), 2);
    cr_assert_eq(row_int(l, 1, "job_id"), ok);
    json_decref(l);

    /* Finished already: conflict, and no second copy of the rows. */
    cr_assert_eq(pgd_store_bench_finish(s, ok, 0, result, NULL, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    l = bench_list(s, NULL, NULL, 100);
    cr_assert_eq(json_array_size(l), 2);
    json_decref(l);

    /* A bad row: the job is not marked succeeded and nothing is stored. */
    json_t *broken = json_pack("{s:[{s:s}]}", "rows", "suite", "gemm");
    pgn_measured_rates other = {.device = "d", .gflops = 7};
    cr_assert_eq(pgd_store_bench_finish(s, bad, 0, broken, &other, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_row");
    cr_assert_str_eq(err.field, "rows[0].case");
    o = get(s, bad);
    cr_assert_str_eq(str(o, "state"), "running");
    json_decref(o);
    json_t *no_rows = json_pack("{s:s}", "suite", "gemm");
    cr_assert_eq(pgd_store_bench_finish(s, bad, 0, no_rows, NULL, &err), -1);
    cr_assert_str_eq(err.field, "rows");
    cr_assert_eq(pgd_store_rates_latest(s, "d", &m, &err), 0, "%s", err.message);
    cr_assert_eq(m.gflops, 42, "a refused run's rates are not stored either");
    l = bench_list(s, NULL, NULL, 100);
    cr_assert_eq(json_array_size(l), 2);
    json_decref(l);

    /* A queued job may finish too (as pgd_store_job_finish allows); a missing one may not. */
    cr_assert_eq(pgd_store_bench_finish(s, queued, 0, result, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_bench_finish(s, 4242, 0, result, NULL, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    pgd_store_close(s);

    /* Deleting a job deletes its rows (ON DELETE CASCADE); rows without a job stay. */
    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM benchmarks"), 4);
    char sql[128];
    snprintf(sql, sizeof sql, "%sDELETE FROM jobs WHERE id = %lld;",
             on_postgresql() ? "" : "PRAGMA foreign_keys = ON; ", (long long)ok);
    cr_assert_eq(raw_exec(db, sql), 0, "%s", db->msg);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM benchmarks"), 2);
    cr_assert_eq(raw_exec(db, "INSERT INTO benchmarks (suite, case_id, device, data)"
                                  " VALUES ('gemm', 'a', 'd', '[1]')"),
                 -1, "data must be a JSON object");
    cr_assert(strstr(db->msg, "CHECK constraint failed") || strstr(db->msg, "violates check constraint"),
              "%s", db->msg);
    raw_close(db);
    json_decref(result);
    json_decref(broken);
    json_decref(no_rows);
}

Test(store, jobs_inserted_together_are_all_stored_or_none) {
    pgd_store *s = open_store();
    json_t *spec = json_pack("{s:s}", "kind", "bench");
    pgd_new_job jobs[3] = {
        {.kind = PGN_JOB_BENCH, .name = "a", .device_requested = "all", .device = "cpu-1", .spec = spec},
        {.kind = PGN_JOB_BENCH, .name = "b", .device_requested = "all", .device = "gpu-2", .spec = spec},
        {.kind = PGN_JOB_BENCH, .name = "c", .device_requested = "all", .device = "gpu-3", .spec = spec},
    };
    int64_t ids[3] = {0};
    pgn_error err;
    cr_assert_eq(pgd_store_jobs_insert(s, jobs, 3, ids, &err), 0, "%s", err.message);
    cr_assert(ids[0] == 1 && ids[1] == 2 && ids[2] == 3);
    json_t *o = get(s, ids[1]);
    cr_assert_str_eq(str(o, "device"), "gpu-2");
    cr_assert_str_eq(str(o, "device_requested"), "all");
    json_decref(o);

    jobs[2].device = NULL; /* NOT NULL fails on the third insert */
    cr_assert_eq(pgd_store_jobs_insert(s, jobs, 3, ids, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "store");
    cr_assert(strstr(err.message, "NOT NULL") || strstr(err.message, "not-null"), "%s", err.message);
    json_t *list;
    int64_t total = 0;
    text_filter f = {.limit = 50};
    cr_assert_eq(list_json(s, &f, &list, &total, &err), 0);
    cr_assert_eq(total, 3, "the failed batch left none of its jobs");
    json_decref(list);
    json_decref(spec);
    pgd_store_close(s);
}

/* ---- recovery --------------------------------------------------------------------------- */

Test(store, restart_puts_running_jobs_back_in_the_queue) {
    pgd_store *s = open_store();
    int64_t run = insert(s, "train", "interrupted", "d");
    int64_t wait = insert(s, "train", "waiting", "d");
    cr_assert_eq(claim(s, "d"), run);
    pgn_error err;
    cr_assert_eq(pgd_store_job_progress(s, run, 0, 0.5, &err), 0);
    pgd_store_close(s); /* the process "dies" with the job running */

    s = open_store();
    pgd_recovery rec;
    cr_assert_eq(pgd_store_recover(s, 3, false, &rec, &err), 0);
    cr_assert_eq(rec.requeued, 1);
    cr_assert_eq(rec.crashed, 0);
    json_t *o = get(s, run);
    cr_assert_str_eq(str(o, "state"), "queued");
    cr_assert_eq(json_integer_value(json_object_get(o, "attempts")), 1, "attempts are kept");
    cr_assert(json_is_null(json_object_get(o, "started_at")));
    cr_assert_float_eq(json_real_value(json_object_get(o, "progress")), 0.0, 1e-12);
    json_decref(o);
    cr_assert_eq(pgd_store_recover(s, 3, false, &rec, &err), 0);
    cr_assert_eq(rec.requeued, 0, "recovery is idempotent");

    json_t *q;
    cr_assert_eq(queued_json(s, &q, &err), 0);
    cr_assert_eq(json_array_size(q), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(q, 0), "id")), run);
    json_decref(q);

    cr_assert_eq(claim(s, "d"), run, "the interrupted job is still the oldest");
    o = get(s, run);
    cr_assert_eq(json_integer_value(json_object_get(o, "attempts")), 2);
    json_decref(o);

    /* A shutdown mid-run requeues the same way; reassign moves a queued job. */
    cr_assert_eq(pgd_store_job_requeue(s, run, 0, &err), 0);
    cr_assert_eq(pgd_store_job_requeue(s, wait, 0, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert_eq(pgd_store_job_reassign(s, wait, "other", &err), 0);
    cr_assert_eq(claim(s, "other"), wait);
    cr_assert_eq(pgd_store_job_reassign(s, wait, "d", &err), -1, "only queued jobs move");
    pgd_store_close(s);
}

/* ---- concurrency ------------------------------------------------------------------------ */

typedef struct worker_arg {
    pgd_store *s;
    int n;
    int64_t claimed[64];
    int n_claimed;
} worker_arg;

static void *hammer(void *p) {
    worker_arg *a = p;
    pgn_error err;
    for (int i = 0; i < a->n; i++) {
        json_t *spec = json_object();
        pgd_new_job job = {.kind = PGN_JOB_TRAIN, .name = "c", .device_requested = "auto",
                           .device = "shared", .spec = spec};
        int64_t id;
        if (pgd_store_jobs_insert(a->s, &job, 1, &id, &err) == 0)
            pgd_store_metric_add(a->s, id, 0, "loss", 0, 1.0, &err);
        json_decref(spec);
        json_t *got = NULL;
        int64_t cid = 0, run = 0;
        if (pgd_store_job_claim(a->s, "shared", NULL, 0, &cid, &run, NULL, &got, &err) == 0 && cid)
            a->claimed[a->n_claimed++] = cid;
        json_decref(got);
    }
    return NULL;
}

Test(store, concurrent_threads_never_claim_a_job_twice) {
    pgd_store *s = open_store();
    enum { THREADS = 4, EACH = 40 };
    worker_arg args[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){.s = s, .n = EACH};
        cr_assert_eq(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        total += args[i].n_claimed;
    }
    /* Every thread inserts before it claims, so every claim finds a job. */
    cr_assert_eq(total, THREADS * EACH);
    int64_t seen[THREADS * EACH + 1];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < args[i].n_claimed; j++) {
            int64_t id = args[i].claimed[j];
            cr_assert(id >= 1 && id <= THREADS * EACH);
            cr_assert_eq(seen[id], 0, "job %lld claimed twice", (long long)id);
            seen[id] = 1;
        }
    pgd_store_close(s);
    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM jobs WHERE state = 'running'"),
                 THREADS * EACH);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM metrics"), THREADS * EACH);
    raw_close(db);
}

/* Writes that fail, each among others that succeed (SQLite commits the writes that wait for the
 * store together, each in a savepoint of its own): a two-job insert whose second job breaks a
 * constraint after the first is in, a key taken twice, the delete of a job that does not exist. */
typedef struct mixed_arg {
    pgd_store *s;
    int t, n;
    int ok, failed;
    char why[3][2400]; /* the first failure of each kind, as told */
} mixed_arg;

static void *mixed_writes(void *p) {
    mixed_arg *a = p;
    pgn_error err;
    for (int i = 0; i < a->n; i++) {
        json_t *spec = json_object();
        pgd_new_job good = {.kind = PGN_JOB_TRAIN, .name = "g", .device_requested = "auto", .device = "d", .spec = spec};
        pgd_new_job pair[2] = {good, good};
        pair[1].device = NULL; /* jobs.device is NOT NULL: the second insert fails after the first */
        char key[32];
        snprintf(key, sizeof key, "t%d-%d", a->t, i / 6); /* each key twice (i % 3 == 1): the second is refused */
        pgd_submission sub = {.key = key, .body_sha256 = "00"};
        int64_t ids[2];
        int kind = i % 3;
        int rc = kind == 0   ? pgd_store_jobs_insert(a->s, pair, 2, ids, &err)
                 : kind == 1 ? pgd_store_jobs_insert_keyed(a->s, &good, 1, &sub, ids, &err)
                             : pgd_store_job_delete(a->s, 1000000 + a->t * 1000 + i, &err);
        if (rc == 0) a->ok++;
        else {
            a->failed++;
            if (!a->why[kind][0]) snprintf(a->why[kind], sizeof a->why[kind], "%s: %s", pgn_error_code_name(err.code), err.message);
        }
        int64_t id;
        if (pgd_store_jobs_insert(a->s, &good, 1, &id, &err) == 0) a->ok++; /* and one that succeeds */
        json_decref(spec);
    }
    return NULL;
}

Test(store, a_write_that_fails_among_concurrent_ones_is_undone_alone) {
    pgd_store *s = open_store();
    enum { THREADS = 4, EACH = 60 };
    mixed_arg args[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (mixed_arg){.s = s, .t = i, .n = EACH};
        cr_assert_eq(pthread_create(&t[i], NULL, mixed_writes, &args[i]), 0);
    }
    int ok = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ok += args[i].ok;
        /* per thread: 20 pairs refused, 20 keyed inserts of which the 10 repeats are refused, 20
         * deletes of nothing; 60 plain inserts */
        cr_assert_eq(args[i].failed, 20 + 10 + 20, "thread %d: %d failed", i, args[i].failed);
        cr_assert(strstr(args[i].why[0], "store: "), "%s", args[i].why[0]);
        cr_assert(strstr(args[i].why[1], "conflict: submission_id: 't"), "%s", args[i].why[1]);
        cr_assert(strstr(args[i].why[2], "not_found: job 1"), "%s", args[i].why[2]);
    }
    cr_assert_eq(ok, THREADS * (EACH + 10));
    pgd_store_close(s);
    raw_conn *db = raw_db();
    /* no job of a refused pair is left, and every other insert is in */
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM jobs"), THREADS * (EACH + 10));
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM jobs WHERE name = 'g' AND device = 'd'"), THREADS * (EACH + 10));
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM submissions"), THREADS * 10);
    raw_close(db);
}

/* ---- cancel and delete ------------------------------------------------------------------ */

Test(store, cancel_ends_a_queued_job_and_flags_a_running_one) {
    pgd_store *s = open_store();
    int64_t run = insert(s, "train", "running", "d");
    int64_t wait = insert(s, "train", "waiting", "d");
    cr_assert_eq(claim(s, "d"), run);
    pgn_error err;
    json_t *job = NULL;

    cr_assert_eq(cancel_json(s, wait, &job, &err), 0, "%s", err.message);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    assert_timestamp(str(job, "finished_at"));
    cr_assert_str_eq(str(json_object_get(job, "error"), "code"), "cancelled");
    cr_assert_not_null(json_object_get(job, "spec"));
    json_decref(job);
    cr_assert_eq(claim(s, "d"), 0, "a cancelled job is never claimed");

    bool requested = true;
    cr_assert_eq(pgd_store_job_cancel_requested(s, run, &requested, &err), 0);
    cr_assert(!requested);
    cr_assert_eq(cancel_json(s, run, &job, &err), 0, "%s", err.message);
    cr_assert_str_eq(str(job, "state"), "running", "a running job stops at its next step");
    cr_assert(json_is_true(json_object_get(job, "cancel_requested")));
    cr_assert(json_is_null(json_object_get(job, "finished_at")));
    json_decref(job);
    cr_assert_eq(cancel_json(s, run, &job, &err), 0, "asking twice is the same");
    json_decref(job);
    cr_assert_eq(pgd_store_job_cancel_requested(s, run, &requested, &err), 0);
    cr_assert(requested);

    /* The worker ends it cancelled; then it is finished like any other. */
    json_t *e = json_pack("{s:s, s:s}", "code", "cancelled", "message", "stopped");
    cr_assert_eq(finish_json(s, run, PGD_JOB_CANCELLED, NULL, e, &err), 0);
    json_decref(e);
    job = (json_t *)1;
    cr_assert_eq(cancel_json(s, run, &job, &err), -1);
    cr_assert_null(job);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "cancelled"), "%s", err.message);
    cr_assert_eq(cancel_json(s, 4242, &job, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_eq(pgd_store_job_cancel_requested(s, 4242, &requested, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    pgd_store_close(s);
}

Test(store, a_requested_cancel_survives_a_shutdown_and_a_crash) {
    pgd_store *s = open_store();
    int64_t a = insert(s, "train", "a", "d"), b = insert(s, "train", "b", "d");
    int64_t c = insert(s, "train", "c", "e");
    cr_assert_eq(claim(s, "d"), a);
    cr_assert_eq(claim(s, "e"), c);
    pgn_error err;
    json_t *job;
    cr_assert_eq(cancel_json(s, a, &job, &err), 0);
    json_decref(job);
    /* A shutdown puts a running job back in the queue, unless it was asked to stop. */
    cr_assert_eq(pgd_store_job_requeue(s, a, 0, &err), 0, "%s", err.message);
    job = get(s, a);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    cr_assert_str_eq(str(json_object_get(job, "error"), "code"), "cancelled");
    assert_timestamp(str(job, "finished_at"));
    json_decref(job);

    cr_assert_eq(claim(s, "d"), b);
    cr_assert_eq(cancel_json(s, b, &job, &err), 0);
    json_decref(job);
    pgd_store_close(s); /* the process dies with b (cancel requested) and c running */

    s = open_store();
    pgd_recovery rec;
    cr_assert_eq(pgd_store_recover(s, 3, false, &rec, &err), 0);
    cr_assert_eq(rec.requeued, 1, "only c goes back to the queue");
    cr_assert_eq(rec.cancelled, 1);
    job = get(s, b);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    cr_assert(strstr(str(json_object_get(job, "error"), "message"), "cancelled on request"));
    json_decref(job);
    job = get(s, c);
    cr_assert_str_eq(str(job, "state"), "queued");
    json_decref(job);
    pgd_store_close(s);
}

/* The log line recovery wrote for job id: its last. */
static json_t *last_log(pgd_store *s, int64_t id) {
    json_t *lines;
    pgn_error err;
    cr_assert_eq(pgd_store_logs_list(s, id, 0, &lines, &err), 0, "%s", err.message);
    cr_assert_gt(json_array_size(lines), 0);
    json_t *line = json_incref(json_array_get(lines, json_array_size(lines) - 1));
    json_decref(lines);
    return line;
}

Test(store, a_job_interrupted_max_attempts_times_fails_as_crashed) {
    pgd_store *s = open_store();
    int64_t id = insert(s, "inet", "kills the server", "d");
    pgn_error err;
    pgd_recovery rec;
    for (int run = 1; run <= 2; run++) {
        cr_assert_eq(claim(s, "d"), id, "run %d", run);
        pgd_store_close(s); /* the server dies with it running */
        s = open_store();
        cr_assert_eq(pgd_store_recover(s, 2, false, &rec, &err), 0, "%s", err.message);
        json_t *job = get(s, id);
        json_t *line = last_log(s, id);
        cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), run);
        cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), run);
        if (run == 1) {
            cr_assert_eq(rec.requeued, 1);
            cr_assert_eq(rec.crashed, 0);
            cr_assert_str_eq(str(job, "state"), "queued");
            cr_assert_str_eq(str(line, "level"), "warn");
            cr_assert(strstr(str(line, "line"), "interrupted run 1 of at most 2"), "%s",
                      str(line, "line"));
        } else {
            cr_assert_eq(rec.requeued, 0);
            cr_assert_eq(rec.crashed, 1);
            cr_assert_str_eq(str(job, "state"), "failed");
            json_t *e = json_object_get(job, "error");
            cr_assert_str_eq(str(e, "code"), "crashed");
            cr_assert(strstr(str(e, "message"), "2 times"), "%s", str(e, "message"));
            cr_assert(strstr(str(e, "message"), "--max-attempts 2"), "%s", str(e, "message"));
            assert_timestamp(str(job, "finished_at"));
            cr_assert_str_eq(str(line, "level"), "error");
            cr_assert(strstr(str(line, "line"), "crashed"), "%s", str(line, "line"));
        }
        json_decref(line);
        json_decref(job);
    }
    cr_assert_eq(claim(s, "d"), 0, "a crashed job is not run again");
    cr_assert_eq(pgd_store_recover(s, 2, false, &rec, &err), 0);
    cr_assert_eq(rec.crashed + rec.requeued, 0, "recovery is idempotent");
    /* A graceful requeue (SIGTERM) is not an interruption. */
    int64_t other = insert(s, "inet", "stopped politely", "d");
    cr_assert_eq(claim(s, "d"), other);
    cr_assert_eq(pgd_store_job_requeue(s, other, 0, &err), 0);
    json_t *job = get(s, other);
    cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), 0);
    json_decref(job);
    pgd_store_close(s);
}

Test(store, counters_count_finished_jobs_and_work_and_never_go_down) {
    pgd_store *s = open_store();
    pgn_error err;
    pgd_counters c;
    cr_assert_eq(pgd_store_counters(s, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.interactions, 0);
    cr_assert_eq(c.finished[PGD_JOB_SUCCEEDED], 0);

    int64_t inet = insert(s, "inet", "fib", "d"), train = insert(s, "train", "xor", "d");
    int64_t doomed = insert(s, "inet", "broken", "d"), dropped = insert(s, "inet", "dropped", "d");
    cr_assert_eq(claim(s, "d"), inet);
    json_t *r = json_pack("{s:I}", "interactions", (json_int_t)718993);
    cr_assert_eq(finish_json(s, inet, PGD_JOB_SUCCEEDED, r, NULL, &err), 0);
    json_decref(r);
    cr_assert_eq(claim(s, "d"), train);
    r = json_pack("{s:f}", "flops", 2.5e9);
    cr_assert_eq(finish_json(s, train, PGD_JOB_SUCCEEDED, r, NULL, &err), 0);
    json_decref(r);
    json_t *e = json_pack("{s:s}", "code", "device");
    cr_assert_eq(finish_json(s, doomed, PGD_JOB_FAILED, NULL, e, &err), 0);
    json_decref(e);
    json_t *job;
    cr_assert_eq(cancel_json(s, dropped, &job, &err), 0, "%s", err.message);
    json_decref(job);

    cr_assert_eq(pgd_store_counters(s, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.interactions, 718993);
    cr_assert_eq(c.flops, 2.5e9);
    cr_assert_eq(c.finished[PGD_JOB_SUCCEEDED], 2);
    cr_assert_eq(c.finished[PGD_JOB_FAILED], 1);
    cr_assert_eq(c.finished[PGD_JOB_CANCELLED], 1);
    /* Finishing twice is refused and counts nothing. */
    cr_assert_eq(finish_json(s, inet, PGD_JOB_SUCCEEDED, NULL, NULL, &err), -1);
    /* Deleting the jobs leaves the counters: a Prometheus counter only grows. */
    for (int64_t id = inet; id <= dropped; id++)
        cr_assert_eq(pgd_store_job_delete(s, id, &err), 0, "%s", err.message);
    pgd_counters after;
    cr_assert_eq(pgd_store_counters(s, &after, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(&after, &c, sizeof c), 0, "nothing went down");
    pgd_store_close(s);
}

Test(store, delete_takes_a_finished_job_with_its_rows_in_one_go) {
    pgd_store *s = open_store();
    int64_t done = insert(s, "bench", "done", "d");
    int64_t other = insert(s, "train", "other", "d");
    pgn_error err;
    cr_assert_eq(pgd_store_metric_add(s, done, 0, "loss", 1, 0.5, &err), 0);
    cr_assert_eq(pgd_store_metric_add(s, other, 0, "loss", 1, 0.5, &err), 0);
    json_t *rows = json_pack("[{s:s, s:s, s:s, s:f}]", "suite", "gemm", "case", "N=128", "device",
                             "d", "gflops", 1.5);
    cr_assert_eq(pgd_store_bench_add(s, done, rows, NULL, &err), 0, "%s", err.message);
    json_decref(rows);

    /* queued, then running: refused, nothing removed */
    cr_assert_eq(pgd_store_job_delete(s, done, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "queued") && strstr(err.message, "cancel"), "%s", err.message);
    cr_assert_eq(claim(s, "d"), done);
    cr_assert_eq(pgd_store_job_delete(s, done, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "running"), "%s", err.message);
    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM metrics"), 2);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM benchmarks"), 1);

    json_t *e = json_pack("{s:s, s:s}", "code", "device", "message", "it broke");
    cr_assert_eq(finish_json(s, done, PGD_JOB_FAILED, NULL, e, &err), 0);
    json_decref(e);
    cr_assert_eq(pgd_store_job_delete(s, done, &err), 0, "%s", err.message);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM jobs"), 1);
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM metrics"), 1, "the other job's row stays");
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM benchmarks"), 0);
    raw_close(db);
    cr_assert_eq(pgd_store_job_delete(s, done, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_str_eq(err.message, "job 1 does not exist");

    /* The newest job's id is not handed out again, even after a restart. */
    cr_assert_eq(claim(s, "d"), other);
    cr_assert_eq(finish_json(s, other, PGD_JOB_SUCCEEDED, NULL, NULL, &err), 0);
    cr_assert_eq(pgd_store_job_delete(s, other, &err), 0, "%s", err.message);
    pgd_store_close(s);
    s = open_store();
    cr_assert_eq(insert(s, "train", "next", "d"), other + 1);
    pgd_store_close(s);
}

/* ---- logs ------------------------------------------------------------------------------- */

Test(store, log_lines_count_from_one_per_job_and_go_with_their_job) {
    pgd_store *s = open_store();
    int64_t a = insert(s, "train", "a", "d"), b = insert(s, "train", "b", "d");
    pgn_error err;
    int64_t seq;
    char at[32];
    const char *lines[] = {"placed on d", "started on d (attempt 1)", "done"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pgd_store_log_add(s, a, 0, i == 2 ? "warn" : "info", lines[i], &seq, at, &err), 0,
                     "%s", err.message);
        cr_assert_eq(seq, i + 1);
        assert_timestamp(at);
    }
    /* Bytes that are not UTF-8 are kept in the file and read back as '?'. */
    cr_assert_eq(pgd_store_log_add(s, b, 0, "error", "bad \xff byte\nsecond line", &seq, at, &err), 0);
    cr_assert_eq(seq, 1, "each job counts its own lines");

    json_t *got;
    cr_assert_eq(pgd_store_logs_list(s, a, 0, &got, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(got), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(got, i);
        cr_assert_eq(json_integer_value(json_object_get(e, "seq")), (json_int_t)i + 1);
        cr_assert_str_eq(str(e, "line"), lines[i]);
        cr_assert_str_eq(str(e, "level"), i == 2 ? "warn" : "info");
        assert_timestamp(str(e, "created_at"));
    }
    json_decref(got);
    cr_assert_eq(pgd_store_logs_list(s, a, 2, &got, &err), 0);
    cr_assert_eq(json_array_size(got), 1, "after=2 keeps line 3");
    cr_assert_str_eq(str(json_array_get(got, 0), "line"), "done");
    json_decref(got);
    cr_assert_eq(pgd_store_logs_list(s, b, 0, &got, &err), 0);
    /* Bytes that are not UTF-8 read back as '?'; a newline (any control character) is stored
     * visible, so a line cannot forge another. */
    cr_assert_str_eq(str(json_array_get(got, 0), "line"), "bad ? byte\\x0asecond line");
    json_decref(got);

    /* Bad input: an unknown job, an unknown level; nothing is stored. */
    cr_assert_eq(pgd_store_log_add(s, 99, 0, "info", "x", &seq, at, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_str_eq(err.message, "job 99 does not exist");
    cr_assert_eq(pgd_store_log_add(s, a, 0, "loud", "x", &seq, at, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "store");
    cr_assert(strstr(err.message, "CHECK") || strstr(err.message, "check constraint"), "%s", err.message);
    cr_assert_eq(pgd_store_logs_list(s, 99, 0, &got, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "not_found");
    cr_assert_null(got);

    /* A deleted job takes its lines with it. */
    cr_assert_eq(claim(s, "d"), a);
    cr_assert_eq(finish_json(s, a, PGD_JOB_SUCCEEDED, NULL, NULL, &err), 0);
    cr_assert_eq(pgd_store_job_delete(s, a, &err), 0, "%s", err.message);
    raw_conn *db = raw_db();
    cr_assert_eq(raw_int(db, "SELECT count(*) FROM logs"), 1, "job b's line stays");
    raw_close(db);
    pgd_store_close(s);
}

/* A list row's summary (views.c): the headline figures of each kind's result, a long text cut at
 * a character boundary with an ellipsis, an array as its length, nothing without a result. */
Test(store, a_result_summary_keeps_the_headline_figures) {
    char text[200] = "";
    for (int i = 0; i < 70; i++) strcat(text, "\xc3\xa9"); /* 70 two-byte characters */
    json_t *result = json_pack("{s:s, s:i, s:f, s:s, s:s}", "text", text, "tokens", 70, "tokens_per_second", 12.5,
                               "prompt", "p", "completion", text);
    json_t *sum = pgd_result_summary_json(PGN_JOB_GENERATE, result);
    const char *cut = json_string_value(json_object_get(sum, "text"));
    cr_assert_not_null(cut, "valid UTF-8, or jansson would not hold it");
    cr_assert_eq(strlen(cut), 64 * 2 + 3, "64 characters and an ellipsis: %s", cut);
    cr_assert_str_eq(cut + 128, "\xe2\x80\xa6");
    cr_assert_eq(json_integer_value(json_object_get(sum, "tokens")), 70);
    cr_assert_null(json_object_get(sum, "completion"), "only the headline figures");
    cr_assert_eq(json_object_size(sum), 3);
    json_decref(sum);
    json_decref(result);

    result = json_pack("{s:s, s:s, s:[{},{},{}]}", "suite", "gemm", "device", "d", "rows");
    sum = pgd_result_summary_json(PGN_JOB_BENCH, result);
    cr_assert_str_eq(json_string_value(json_object_get(sum, "suite")), "gemm");
    cr_assert_eq(json_integer_value(json_object_get(sum, "rows")), 3);
    json_decref(sum);
    json_decref(result);

    result = json_pack("{s:s}", "normal_form", "17711");
    sum = pgd_result_summary_json(PGN_JOB_INET, result);
    cr_assert_str_eq(json_string_value(json_object_get(sum, "normal_form")), "17711", "a short text is kept whole");
    json_decref(sum);
    json_decref(result);
    sum = pgd_result_summary_json(PGN_JOB_TRAIN, NULL);
    cr_assert(json_is_null(sum));
    json_decref(sum);
}

/* An idempotency key taken by one insert refuses the next, which inserts nothing; the key reads
 * back with its fingerprint and jobs. */
Test(store, a_submission_key_is_taken_once) {
    pgd_store *s = open_store();
    json_t *spec = json_pack("{s:s}", "kind", "inet");
    pgd_new_job jobs[2] = {
        {.kind = PGN_JOB_BENCH, .name = "a", .device_requested = "all", .device = "d1", .spec = spec},
        {.kind = PGN_JOB_BENCH, .name = "a", .device_requested = "all", .device = "d2", .spec = spec},
    };
    const pgd_submission sub = {.key = "k-1", .body_sha256 = "ab"};
    int64_t ids[2];
    pgn_error err;
    cr_assert_eq(pgd_store_jobs_insert_keyed(s, jobs, 2, &sub, ids, &err), 0, "%s", err.message);
    int64_t again[2] = {0, 0};
    cr_assert_eq(pgd_store_jobs_insert_keyed(s, jobs, 1, &sub, again, &err), -1);
    cr_assert_eq(err.code, PGN_E_CONFLICT);
    cr_assert_str_eq(err.field, "submission_id");
    bool found;
    char sha[65];
    int64_t first, *got;
    size_t n;
    cr_assert_eq(pgd_store_submission_get(s, "k-1", &found, sha, &first, &got, &n, &err), 0, "%s", err.message);
    cr_assert(found);
    cr_assert_str_eq(sha, "ab");
    cr_assert_eq(first, ids[0]);
    cr_assert_eq(n, 2, "both jobs of the submission, and nothing of the refused one");
    cr_assert_eq(got[0], ids[0]);
    cr_assert_eq(got[1], ids[1]);
    free(got);
    cr_assert_eq(pgd_store_submission_get(s, "k-2", &found, sha, &first, &got, &n, &err), 0);
    cr_assert(!found && n == 0 && got == NULL);
    json_decref(spec);
    pgd_store_close(s);
}

/* ---- runs: claims, leases, fencing ------------------------------------------------------- */

/* The first column of every row of sql in order, as one "a,b,c" text (the caller frees). */
static char *raw_column(const char *sql) {
    raw_conn *db = raw_db();
    char wrapped[512];
    snprintf(wrapped, sizeof wrapped,
             on_postgresql() ? "WITH r(v) AS (%s) SELECT string_agg(CAST(v AS TEXT), ',' ORDER BY v) FROM r"
                             : "WITH r(v) AS (%s) SELECT group_concat(v, ',') FROM (SELECT v FROM r ORDER BY v)",
             sql);
    char *out = raw_text(db, wrapped);
    raw_close(db);
    return out ? out : strdup("");
}

Test(store, a_run_writes_only_while_it_is_the_jobs_attempt) {
    pgd_store *s = open_store();
    pgd_store_set_node(s, "node-a", 0);
    int64_t id = insert(s, "train", "fenced", "d"), first = 0, second = 0;
    cr_assert_eq(claim_run(s, "d", &first), id);
    cr_assert_eq(first, 1);
    pgn_error err;
    int64_t seq;
    char at[32];
    cr_assert_eq(pgd_store_job_progress(s, id, first, 0.5, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_metric_add(s, id, first, "loss", 1, 0.25, &err), 0, "%s", err.message);
    cr_assert_eq(pgd_store_log_add(s, id, first, "info", "from the first run", &seq, at, &err), 0, "%s", err.message);
    /* a run that is not the job's writes nothing */
    cr_assert_eq(pgd_store_job_progress(s, id, 7, 0.9, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "attempt 7 is over (the job is on attempt 1, running)"), "%s", err.message);

    /* The first run goes back to the queue (its node stopped), a second one claims it. */
    cr_assert_eq(pgd_store_job_requeue(s, id, first, &err), 0, "%s", err.message);
    pgd_store_set_node(s, "node-b", 0);
    cr_assert_eq(claim_run(s, "d", &second), id);
    cr_assert_eq(second, 2);

    /* Every late write of the first run is refused, naming the attempt that is the job's now. */
    cr_assert_eq(pgd_store_job_progress(s, id, first, 0.75, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "attempt 1 is over (the job is on attempt 2, running)"), "%s", err.message);
    cr_assert_eq(pgd_store_metric_add(s, id, first, "loss", 2, 0.125, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert_eq(pgd_store_log_add(s, id, first, "info", "late", &seq, at, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    const pgd_metric late[] = {{"loss", 3, 0.5}, {"accuracy", 3, 0.5}};
    cr_assert_eq(pgd_store_metrics_add(s, id, first, late, 2, &err), -1, "a batch of a run that is over");
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    pgd_log_line told = {.level = "info", .text = "late end"};
    cr_assert_eq(pgd_store_job_finish(s, id, first, PGD_JOB_SUCCEEDED, NULL, NULL, &told, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert_eq(told.seq, 0, "its line was not stored either");
    cr_assert_eq(pgd_store_job_requeue(s, id, first, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    bool held = true;
    cr_assert_eq(pgd_store_lease_renew(s, id, first, &held, &err), 0, "%s", err.message);
    cr_assert_not(held, "the first run's lease is not renewed");

    /* The second run's writes go in, and it ends the job. */
    cr_assert_eq(pgd_store_lease_renew(s, id, second, &held, &err), 0, "%s", err.message);
    cr_assert(held);
    const pgd_metric batch[] = {{"loss", 2, 0.0625}, {"accuracy", 2, 0.75}};
    cr_assert_eq(pgd_store_metrics_add(s, id, second, batch, 2, &err), 0, "%s", err.message);
    json_t *result = json_pack("{s:f}", "loss", 0.0625);
    pgd_log_line end = {.level = "info", .text = "succeeded (attempt 2)"};
    cr_assert_eq(pgd_store_job_finish(s, id, second, PGD_JOB_SUCCEEDED, result, NULL, &end, &err), 0, "%s", err.message);
    cr_assert_eq(end.seq, 2, "the end's line follows the first run's");
    cr_assert(end.time[0], "and says when it was stored");
    json_decref(result);
    cr_assert_eq(pgd_store_job_finish(s, id, second, PGD_JOB_FAILED, NULL, NULL, NULL, &err), -1, "one final state");
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");

    json_t *m;
    cr_assert_eq(pgd_store_metrics_list(s, id, "loss", false, 0, &m, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(m), 2);
    cr_assert_eq(json_real_value(json_object_get(json_array_get(m, 1), "value")), 0.0625,
                 "step 2 is the second run's value, not the first run's late one");
    json_decref(m);
    cr_assert_eq(pgd_store_metrics_list(s, id, "accuracy", false, 0, &m, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(m), 1, "the second run's batch is stored, none of the late one");
    cr_assert_eq(json_real_value(json_object_get(json_array_get(m, 0), "value")), 0.75);
    json_decref(m);
    json_t *logs;
    cr_assert_eq(pgd_store_logs_list(s, id, 0, &logs, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(logs), 2, "the late lines were not stored; the end's was");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(logs, 1), "line")), "succeeded (attempt 2)");
    json_decref(logs);

    /* Each run is kept: where it ran and how it ended. */
    char *runs = raw_column("SELECT attempt || ':' || node || ':' || device || ':' || outcome"
                            " FROM job_runs ORDER BY attempt");
    cr_assert_str_eq(runs, "1:node-a:d:queued,2:node-b:d:succeeded");
    free(runs);
    pgd_store_close(s);
}

Test(store, a_run_whose_lease_runs_out_is_recovered_once_and_fenced) {
    pgd_store *s = open_store();
    pgd_store_set_node(s, "node-a", 50); /* a lease of 50 ms */
    int64_t lapsed = insert(s, "train", "lapses", "d"), kept = insert(s, "train", "renewed", "e");
    int64_t run = 0, other = 0;
    cr_assert_eq(claim_run(s, "d", &run), lapsed);
    cr_assert_eq(claim_run(s, "e", &other), kept);
    pgn_error err;
    pgd_recovery rec;
    cr_assert_eq(pgd_store_recover_expired(s, 3, &rec, &err), 0, "%s", err.message);
    cr_assert_eq(rec.requeued + rec.crashed + rec.cancelled, 0, "both leases still hold");

    /* job `kept` renews its lease; `lapsed` does not */
    pgd_store_set_node(s, "node-a", 5000);
    usleep(120 * 1000);
    bool held = false;
    cr_assert_eq(pgd_store_lease_renew(s, kept, other, &held, &err), 0, "%s", err.message);
    cr_assert(held);
    cr_assert_eq(pgd_store_recover_expired(s, 3, &rec, &err), 0, "%s", err.message);
    cr_assert_eq(rec.requeued, 1);
    cr_assert_eq(rec.crashed + rec.cancelled, 0);
    cr_assert_eq(pgd_store_recover_expired(s, 3, &rec, &err), 0, "%s", err.message);
    cr_assert_eq(rec.requeued + rec.crashed + rec.cancelled, 0, "recovered once");

    json_t *o = get(s, lapsed);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "queued");
    cr_assert_eq(json_integer_value(json_object_get(o, "interrupted")), 1);
    json_decref(o);
    o = get(s, kept);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "running");
    json_decref(o);
    json_t *logs;
    cr_assert_eq(pgd_store_logs_list(s, lapsed, 0, &logs, &err), 0, "%s", err.message);
    const char *line = json_string_value(json_object_get(json_array_get(logs, json_array_size(logs) - 1), "line"));
    cr_assert(line && strstr(line, "stopped renewing the run's lease"), "%s", line ? line : "(none)");
    json_decref(logs);

    /* the lapsed run, back from wherever it was, can write nothing and renew nothing */
    cr_assert_eq(pgd_store_lease_renew(s, lapsed, run, &held, &err), 0);
    cr_assert_not(held);
    cr_assert_eq(pgd_store_job_finish(s, lapsed, run, PGD_JOB_SUCCEEDED, NULL, NULL, NULL, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "conflict");
    cr_assert(strstr(err.message, "it is queued"), "%s", err.message);
    pgd_store_close(s);
}

/* Two stores on one database are two nodes: each claim gives a job to one of them only. */
typedef struct node_arg {
    pgd_store *s;
    int64_t claimed[64];
    int n;
} node_arg;

static void *claim_all(void *p) {
    node_arg *a = p;
    for (;;) {
        int64_t id = 0, attempt = 0;
        json_t *spec = NULL;
        pgn_error err;
        if (pgd_store_job_claim(a->s, "shared", NULL, 0, &id, &attempt, NULL, &spec, &err) < 0) {
            if (err.code == PGN_E_STORE_UNAVAILABLE) continue; /* SQLite: the other node writes */
            cr_assert_fail("claim: %s", err.message);
        }
        json_decref(spec);
        if (!id) return NULL;
        a->claimed[a->n++] = id;
    }
}

Test(store, two_nodes_claiming_at_once_never_take_one_job_twice) {
    pgd_store *s = open_store();
    for (int i = 0; i < 60; i++) insert(s, "train", "one", "shared");
    node_arg nodes[2] = {{.s = s}, {.s = open_store()}};
    pgd_store_set_node(nodes[0].s, "node-a", 0);
    pgd_store_set_node(nodes[1].s, "node-b", 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, claim_all, &nodes[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    cr_assert_eq(nodes[0].n + nodes[1].n, 60, "every job claimed: %d + %d", nodes[0].n, nodes[1].n);
    bool seen[61] = {false};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < nodes[i].n; k++) {
            int64_t id = nodes[i].claimed[k];
            cr_assert(id >= 1 && id <= 60 && !seen[id], "job %lld claimed twice", (long long)id);
            seen[id] = true;
        }
    char *attempts = raw_column("SELECT DISTINCT attempts FROM jobs");
    cr_assert_str_eq(attempts, "1");
    free(attempts);
    pgd_store_close(nodes[1].s);
    pgd_store_close(s);
}

Test(store, a_node_starting_again_recovers_its_own_runs_only) {
    pgd_store *a = open_store(), *b = open_store();
    pgd_store_set_node(a, "node-a", 0);
    pgd_store_set_node(b, "node-b", 0);
    int64_t mine = insert(a, "train", "mine", "d"), theirs = insert(a, "train", "theirs", "d");
    cr_assert_eq(claim(a, "d"), mine);
    cr_assert_eq(claim(b, "d"), theirs);
    pgn_error err;
    pgd_recovery rec;
    cr_assert_eq(pgd_store_recover(a, 3, true, &rec, &err), 0, "%s", err.message);
    cr_assert_eq(rec.requeued, 1, "node-a's run only: node-b's holds its lease");
    json_t *o = get(a, theirs);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "running");
    json_decref(o);
    o = get(a, mine);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "queued");
    json_decref(o);
    pgd_store_close(b);
    pgd_store_close(a);
}
