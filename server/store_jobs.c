/* store_jobs.c: owns the job rows: inserting (with a job's first log line), reading and
 * listing them as pgd_job records, claiming, progress, finishing, requeueing, cancelling,
 * deleting and moving them, start-up recovery, and the figures /metrics reads (jobs by state,
 * the counters that only grow). */
#include "store_internal.h"

#include "views.h" /* errors are stored as the API shows them */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- jobs ------------------------------------------------------------------------------- */

/* Column order every job query shares; spec, when selected, comes last (index 18). A job's
 * placement candidates are read after its row (store_placement_read). */
#define JOB_COLS                                                                               \
    "id, kind, name, state, device_requested, device, progress, attempts, result, error, "     \
    "created_at, started_at, finished_at, placement, cancel_requested, interrupted, tags, "    \
    "submission_id"

static void col_copy(sqlite3_stmt *st, int col, char *out, size_t size) {
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(out, size, "%s", t ? (const char *)t : "");
}

/* A JSON column as an owned value; NULL for SQL NULL. */
static json_t *col_json_or_null(sqlite3_stmt *st, int col) {
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NULL : store_col_json(st, col);
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
    if (pgd_placement_reason_parse((const char *)sqlite3_column_text(st, 13), &job->placement.reason) < 0)
        job->placement.reason = PGD_PLACED_BY_NAME; /* none (NULL): it has no candidates either */
    job->cancel_requested = sqlite3_column_int(st, 14) != 0;
    job->interrupted = sqlite3_column_int64(st, 15);
    job->tags = col_json_or_null(st, 16);
    col_copy(st, 17, job->submission_id, sizeof job->submission_id);
    if (with_spec) job->spec = col_json_or_null(st, 18);
}

void pgd_job_release(pgd_job *job) {
    if (!job) return;
    json_decref(job->spec);
    json_decref(job->result);
    json_decref(job->tags);
    job->spec = job->result = job->tags = NULL;
    pgd_placement_release(&job->placement);
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
                store_stmt_done(st);
                pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory listing jobs");
                return -1;
            }
            *jobs = more;
            cap = grown;
        }
        job_from_row(st, false, &(*jobs)[(*n)++]);
    }
    store_stmt_done(st);
    if (rc != SQLITE_DONE) return store_fail(s, err, what);
    for (size_t i = 0; i < *n; i++)
        if (store_placement_read(s, (*jobs)[i].id, &(*jobs)[i].placement, err) < 0) return -1;
    return 0;
}

/* Job id with its placement (spec when with_spec) into *out, or "not_found". Caller holds the
 * lock; *out is released on failure. */
static int read_job(pgd_store *s, int64_t id, bool with_spec, pgd_job *out, pgn_error *err) {
    static const char sql[] = "SELECT " JOB_COLS ", spec FROM jobs WHERE id = ?1";
    *out = (pgd_job){0};
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) job_from_row(st, with_spec, out);
    store_stmt_done(st);
    if (rc == SQLITE_DONE) return store_no_such_job(err, id);
    if (rc != SQLITE_ROW) return store_fail(s, err, "read job");
    if (store_placement_read(s, id, &out->placement, err) == 0) return 0;
    pgd_job_release(out);
    return -1;
}

typedef struct insert_jobs {
    const pgd_new_job *jobs;
    size_t n;
    const pgd_submission *sub; /* NULL or no key: none */
    int64_t *ids;
} insert_jobs;

/* A new job's first log line, in the transaction that inserts the job: one commit a submission. */
static int insert_first_log(pgd_store *s, int64_t id, const char *line, char *time_out, pgn_error *err) {
    static const char sql[] = "INSERT INTO logs (job_id, seq, level, line) VALUES (?1, 1, 'info', ?2)"
                              " RETURNING created_at";
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    char *visible = pgn_text_visible(line);
    if (!visible) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
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
    store_stmt_done(st);
    return rc == SQLITE_DONE ? 0 : store_fail(s, err, "insert log line");
}

/* Takes sub's key inside the inserting transaction, so that of two requests racing with one key
 * exactly one inserts: the other finds the row here and inserts nothing ("conflict"). */
static int take_submission_key(pgd_store *s, const pgd_submission *sub, pgn_error *err) {
    static const char sql[] = "INSERT INTO submissions (key, body_sha256, job_id) VALUES (?1, ?2, 0)"
                              " ON CONFLICT (key) DO NOTHING";
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, sub->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, sub->body_sha256, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    store_stmt_done(st);
    if (rc != SQLITE_DONE) return store_fail(s, err, "insert submission");
    if (sqlite3_changes(s->db) > 0) return 0;
    pgn_error_set(err, PGN_E_CONFLICT, "submission_id", "submission_id: '%s' is taken", sub->key);
    return -1;
}

/* The key's row names the first job it made, known once that job is in. */
static int note_submission_job(pgd_store *s, const pgd_submission *sub, int64_t id, pgn_error *err) {
    static const char sql[] = "UPDATE submissions SET job_id = ?2 WHERE key = ?1";
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, sub->key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    int rc = sqlite3_step(st);
    store_stmt_done(st);
    return rc == SQLITE_DONE ? 0 : store_fail(s, err, "record submission");
}

/* An inet spec's work key (schema/010_job_work_key.sql): the SHA-256 of its program and files as
 * one compact JSON object, into key; false for a spec without a program (another kind). */
static bool work_key_of(const json_t *spec, char key[65]) {
    const json_t *program = json_object_get(spec, "program");
    if (!json_is_string(program)) return false;
    json_t *what = json_pack("{s:O, s:O}", "program", program, "files",
                             json_object_get(spec, "files") ? json_object_get(spec, "files") : json_null());
    char *text = what ? pgn_json_dumps(what) : NULL;
    json_decref(what);
    if (!text) return false;
    pgn_sha256_hex_of(text, strlen(text), key);
    free(text);
    return true;
}

static int insert_jobs_tx(pgd_store *s, void *ctx, pgn_error *err) {
    /* Ids only grow: above every job there is and every job deleted (job_id_floor). */
    static const char sql[] =
        "INSERT INTO jobs (id, kind, name, state, device_requested, device, spec, placement, tags,"
        " submission_id, work_key)"
        " VALUES ((SELECT max(coalesce(max(id), 0), (SELECT id FROM job_id_floor)) + 1"
        "          FROM jobs), ?1, ?2, 'queued', ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
    insert_jobs *a = ctx;
    bool keyed = a->sub && a->sub->key;
    if (keyed && take_submission_key(s, a->sub, err) < 0) return -1;
    for (size_t i = 0; i < a->n; i++) {
        const pgd_new_job *job = &a->jobs[i];
        bool placed = job->placement && job->placement->n > 0;
        char *spec = pgn_json_dumps(job->spec);
        char *tags = job->tags ? pgn_json_dumps(job->tags) : NULL;
        if (!spec || (job->tags && !tags)) {
            free(spec);
            free(tags);
            pgn_error_set(err, PGN_E_INTERNAL, "spec", "store: job spec cannot be serialised");
            return -1;
        }
        sqlite3_stmt *st = store_stmt(s, sql, err);
        if (!st) {
            free(spec);
            free(tags);
            return -1;
        }
        sqlite3_bind_text(st, 1, pgn_job_kind_name(job->kind), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, job->name ? job->name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, job->device_requested, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, job->device, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, spec, -1, SQLITE_STATIC);
        store_bind_text_or_null(st, 6, placed ? pgd_placement_reason_name(job->placement->reason) : NULL);
        store_bind_text_or_null(st, 7, tags);
        store_bind_text_or_null(st, 8, keyed ? a->sub->key : NULL);
        char work_key[65];
        store_bind_text_or_null(st, 9, job->kind == PGN_JOB_INET && work_key_of(job->spec, work_key) ? work_key : NULL);
        int rc = sqlite3_step(st);
        store_stmt_done(st);
        free(spec);
        free(tags);
        if (rc != SQLITE_DONE) return store_fail(s, err, "insert job");
        a->ids[i] = sqlite3_last_insert_rowid(s->db);
        if (placed && store_placement_insert(s, a->ids[i], job->placement, err) < 0) return -1;
        if (i == 0 && keyed && note_submission_job(s, a->sub, a->ids[0], err) < 0) return -1;
        if (job->log_line && insert_first_log(s, a->ids[i], job->log_line, job->log_time, err) < 0) return -1;
    }
    return 0;
}

int pgd_store_jobs_insert(pgd_store *s, const pgd_new_job *jobs, size_t n, int64_t *ids,
                          pgn_error *err) {
    insert_jobs a = {.jobs = jobs, .n = n, .ids = ids};
    return store_write_tx(s, insert_jobs_tx, &a, err);
}

int pgd_store_jobs_insert_keyed(pgd_store *s, const pgd_new_job *jobs, size_t n,
                                const pgd_submission *sub, int64_t *ids, pgn_error *err) {
    insert_jobs a = {.jobs = jobs, .n = n, .sub = sub, .ids = ids};
    return store_write_tx(s, insert_jobs_tx, &a, err);
}

int pgd_store_submission_get(pgd_store *s, const char *key, bool *found, char *body_sha256,
                             int64_t *first_job, int64_t **ids, size_t *n, pgn_error *err) {
    static const char sub_sql[] = "SELECT body_sha256, job_id FROM submissions WHERE key = ?1";
    static const char jobs_sql[] = "SELECT id FROM jobs WHERE submission_id = ?1 ORDER BY id";
    *found = false;
    *ids = NULL;
    *n = 0;
    *first_job = 0;
    body_sha256[0] = 0;
    int ret = -1;
    size_t cap = 0;
    pthread_mutex_lock(&s->lock);
    /* Both reads in one transaction: the key's row and its jobs agree. */
    if (store_run(s, store_begin_sql, err, "begin") < 0) goto unlock;
    sqlite3_stmt *st = store_stmt(s, sub_sql, err);
    if (!st) goto rollback;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *found = true;
        col_copy(st, 0, body_sha256, 65);
        *first_job = sqlite3_column_int64(st, 1);
    }
    store_stmt_done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        store_fail(s, err, "read submission");
        goto rollback;
    }
    if (*found) {
        if (!(st = store_stmt(s, jobs_sql, err))) goto rollback;
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 4;
                int64_t *more = realloc(*ids, cap * sizeof *more);
                if (!more) {
                    store_stmt_done(st);
                    pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
                    goto rollback;
                }
                *ids = more;
            }
            (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
        }
        store_stmt_done(st);
        if (rc != SQLITE_DONE) {
            store_fail(s, err, "read submission jobs");
            goto rollback;
        }
    }
    if (store_run(s, store_commit_sql, err, "commit") < 0) goto rollback;
    ret = 0;
    goto unlock;
rollback:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    free(*ids);
    *ids = NULL;
    *n = 0;
unlock:
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* Runs sql (one row of job id, ?1) under the lock and hands the row to read(st, ctx); a missing
 * job is "not_found", what names the read in the database's errors. */
static int read_job_row(pgd_store *s, const char *sql, int64_t id, void (*read)(sqlite3_stmt *, void *),
                        void *ctx, const char *what, pgn_error *err) {
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            read(st, ctx);
            ret = 0;
        } else if (rc == SQLITE_DONE) {
            store_no_such_job(err, id);
        } else {
            store_fail(s, err, what);
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_job_get(pgd_store *s, int64_t id, bool with_spec, pgd_job *out, pgn_error *err) {
    pthread_mutex_lock(&s->lock);
    int ret = read_job(s, id, with_spec, out, err);
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_jobs_list(pgd_store *s, const pgd_job_filter *f, pgd_job **jobs, size_t *n,
                        int64_t *total, pgn_error *err) {
    /* One statement per filter combination, so each can use its index; the cursor (?6) is a
     * range on the id the index ends with. Tags (?5, [[key, value], ...] or NULL) are matched
     * on the rows the rest leaves: a job is kept when no wanted pair differs from its own.
     * Keys are of [A-Za-z0-9_.-/] (api_submit.c), so a quoted JSON path holds any of them. */
#define TAGS_MATCH                                                                              \
    " AND (?5 IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(?5) AS w WHERE json_extract(jobs.tags," \
    " '$.\"' || json_extract(w.value, '$[0]') || '\"') IS NOT json_extract(w.value, '$[1]')))"
#define PAGE " AND id < ?6 ORDER BY id DESC LIMIT ?3 OFFSET ?4"
    static const char list_any[] = "SELECT " JOB_COLS " FROM jobs WHERE 1" TAGS_MATCH PAGE;
    static const char list_state[] = "SELECT " JOB_COLS " FROM jobs WHERE state = ?1" TAGS_MATCH PAGE;
    static const char list_kind[] = "SELECT " JOB_COLS " FROM jobs WHERE kind = ?2" TAGS_MATCH PAGE;
    static const char list_both[] =
        "SELECT " JOB_COLS " FROM jobs WHERE state = ?1 AND kind = ?2" TAGS_MATCH PAGE;
    static const char count_any[] = "SELECT count(*) FROM jobs WHERE 1" TAGS_MATCH;
    static const char count_state[] = "SELECT count(*) FROM jobs WHERE state = ?1" TAGS_MATCH;
    static const char count_kind[] = "SELECT count(*) FROM jobs WHERE kind = ?2" TAGS_MATCH;
    static const char count_both[] = "SELECT count(*) FROM jobs WHERE state = ?1 AND kind = ?2" TAGS_MATCH;
#undef TAGS_MATCH
#undef PAGE
    static const char *const list_sql[4] = {list_any, list_state, list_kind, list_both};
    static const char *const count_sql[4] = {count_any, count_state, count_kind, count_both};
    int which = (f->by_state ? 1 : 0) | (f->by_kind ? 2 : 0);
    const char *state = pgd_job_state_name(f->state), *kind = pgn_job_kind_name(f->kind);
    char *tags = f->tags ? pgn_json_dumps(f->tags) : NULL;
    if (f->tags && !tags) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }

    *jobs = NULL;
    *n = 0;
    pgd_job *list = NULL;
    size_t count = 0;
    int ret = -1;
    pthread_mutex_lock(&s->lock);
    /* Both reads in one transaction so total and the page agree. */
    if (store_run(s, store_begin_sql, err, "begin") < 0) goto unlock;
    sqlite3_stmt *st = store_stmt(s, count_sql[which], err);
    if (!st) goto rollback;
    if (f->by_state) sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
    if (f->by_kind) sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    store_bind_text_or_null(st, 5, tags);
    if (sqlite3_step(st) != SQLITE_ROW) {
        store_fail(s, err, "count jobs");
        store_stmt_done(st);
        goto rollback;
    }
    *total = sqlite3_column_int64(st, 0);
    store_stmt_done(st);

    st = store_stmt(s, list_sql[which], err);
    if (!st) goto rollback;
    if (f->by_state) sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
    if (f->by_kind) sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, f->limit);
    sqlite3_bind_int64(st, 4, f->offset);
    store_bind_text_or_null(st, 5, tags);
    sqlite3_bind_int64(st, 6, f->before_id > 0 ? f->before_id : INT64_MAX);
    if (collect_jobs(s, st, &list, &count, err, "list jobs") < 0) goto rollback;
    if (store_run(s, store_commit_sql, err, "commit") < 0) goto rollback;
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
    free(tags);
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
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (st) {
        sqlite3_bind_text(st, 1, device, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            int64_t got = sqlite3_column_int64(st, 0);
            json_t *sp = store_col_json(st, 1);
            rc = sqlite3_step(st); /* runs the statement to completion: the commit */
            if (rc == SQLITE_DONE) {
                *id = got;
                *spec = sp;
                ret = 0;
            } else {
                json_decref(sp);
                store_fail(s, err, "claim job");
            }
        } else if (rc == SQLITE_DONE) {
            ret = 0;
        } else {
            store_fail(s, err, "claim job");
        }
        store_stmt_done(st);
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
    store_stmt_done(st);
    if (rc != SQLITE_DONE) return store_fail(s, err, what);
    if (sqlite3_changes(s->db) > 0) return 0;
    sqlite3_stmt *q = store_stmt(s, state_sql, err);
    if (!q) return -1;
    sqlite3_bind_int64(q, 1, id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        pgn_error_set(err, PGN_E_CONFLICT, "", "cannot %s job %lld: it is %s", what, (long long)id,
                      (const char *)sqlite3_column_text(q, 0));
    else if (rc == SQLITE_DONE)
        store_no_such_job(err, id);
    else
        store_fail(s, err, what);
    store_stmt_done(q);
    return -1;
}

int pgd_store_inet_expected(pgd_store *s, const json_t *spec, int64_t *interactions, pgn_error *err) {
    static const char sql[] = "SELECT json_extract(result, '$.interactions') FROM jobs"
                              " WHERE work_key = ?1 AND state = 'succeeded' ORDER BY id DESC LIMIT 1";
    *interactions = 0;
    char key[65];
    if (!work_key_of(spec, key)) return 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (st) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
            if (rc == SQLITE_ROW) *interactions = sqlite3_column_int64(st, 0);
            ret = 0;
        } else {
            store_fail(s, err, "read the interactions of an earlier run");
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_job_progress(pgd_store *s, int64_t id, double fraction, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET progress = ?2 WHERE id = ?1 AND state = 'running'";
    if (!(fraction >= 0)) fraction = 0; /* NaN too */
    if (fraction > 1) fraction = 1;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = store_stmt(s, sql, err);
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
int store_finish_job(pgd_store *s, int64_t id, pgd_job_state state, const char *result,
                      const char *error, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET state = ?2, result = ?3, error = ?4, finished_at = " NOW_SQL ","
        " progress = CASE WHEN ?2 = 'succeeded' THEN 1 ELSE progress END"
        " WHERE id = ?1 AND state IN ('queued', 'running')";
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, pgd_job_state_name(state), -1, SQLITE_STATIC);
    store_bind_text_or_null(st, 3, result);
    store_bind_text_or_null(st, 4, error);
    return update_job(s, st, id, "finish", err);
}

int pgd_store_job_finish(pgd_store *s, int64_t id, pgd_job_state state, const json_t *result,
                         const pgn_error *error, pgn_error *err) {
    if (state != PGD_JOB_SUCCEEDED && state != PGD_JOB_FAILED && state != PGD_JOB_CANCELLED) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "store: %s is not a final state",
                      pgd_job_state_name(state));
        return -1;
    }
    char *res = result ? pgn_json_dumps(result) : NULL;
    json_t *ej = error ? pgd_error_json(error) : NULL;
    char *er = ej ? pgn_json_dumps(ej) : NULL;
    json_decref(ej);
    pthread_mutex_lock(&s->lock);
    int ret = store_finish_job(s, id, state, res, er, err);
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
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, why, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    store_stmt_done(st);
    if (rc != SQLITE_DONE) return store_fail(s, err, "end cancelled jobs");
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
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    return update_job(s, st, id, "requeue", err);
}

int pgd_store_job_requeue(pgd_store *s, int64_t id, pgn_error *err) {
    return store_write_tx(s, requeue_tx, &id, err);
}

/* The cancel of a queued job: it never ran, so there is nothing to stop. */
#define CANCELLED_QUEUED_MESSAGE "cancelled on request before it started"

typedef struct cancel_args {
    int64_t id;
    pgd_job *job; /* out: the job after the cancel */
} cancel_args;

static int cancel_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char state_sql[] = "SELECT state FROM jobs WHERE id = ?1";
    static const char queued_sql[] =
        "UPDATE jobs SET state = 'cancelled', finished_at = " NOW_SQL ", cancel_requested = 1,"
        " error = json_object('code', 'cancelled', 'message', '" CANCELLED_QUEUED_MESSAGE "',"
        " 'field', NULL) WHERE id = ?1 AND state = 'queued'";
    static const char running_sql[] =
        "UPDATE jobs SET cancel_requested = 1 WHERE id = ?1 AND state = 'running'";
    cancel_args *a = ctx;
    sqlite3_stmt *st = store_stmt(s, state_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, a->id);
    int rc = sqlite3_step(st);
    pgd_job_state state = PGD_JOB_QUEUED;
    bool known = rc == SQLITE_ROW &&
                 pgd_job_state_parse((const char *)sqlite3_column_text(st, 0), &state) == 0;
    store_stmt_done(st);
    if (rc == SQLITE_DONE) return store_no_such_job(err, a->id);
    if (!known) return store_fail(s, err, "read job state");
    if (state != PGD_JOB_QUEUED && state != PGD_JOB_RUNNING) {
        pgn_error_set(err, PGN_E_CONFLICT, "", "job %lld has already finished (%s): nothing to cancel",
                      (long long)a->id, pgd_job_state_name(state));
        return -1;
    }
    st = store_stmt(s, state == PGD_JOB_QUEUED ? queued_sql : running_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, a->id);
    if (update_job(s, st, a->id, "cancel", err) < 0) return -1;
    return read_job(s, a->id, true, a->job, err);
}

int pgd_store_job_cancel(pgd_store *s, int64_t id, pgd_job *job, pgn_error *err) {
    *job = (pgd_job){0};
    cancel_args a = {.id = id, .job = job};
    int ret = store_write_tx(s, cancel_tx, &a, err);
    if (ret < 0) pgd_job_release(job);
    return ret;
}

static void read_flag(sqlite3_stmt *st, void *ctx) { *(bool *)ctx = sqlite3_column_int(st, 0) != 0; }

int pgd_store_job_cancel_requested(pgd_store *s, int64_t id, bool *requested, pgn_error *err) {
    static const char sql[] = "SELECT cancel_requested FROM jobs WHERE id = ?1";
    *requested = false;
    return read_job_row(s, sql, id, read_flag, requested, "read cancel request", err);
}

static int delete_tx(pgd_store *s, void *ctx, pgn_error *err) {
    static const char state_sql[] = "SELECT state FROM jobs WHERE id = ?1";
    /* Metrics, benchmark rows (and any other table keyed on the job) go with it: their
     * foreign keys are ON DELETE CASCADE. */
    static const char delete_sql[] =
        "DELETE FROM jobs WHERE id = ?1 AND state NOT IN ('queued', 'running')";
    int64_t id = *(const int64_t *)ctx;
    sqlite3_stmt *st = store_stmt(s, state_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    char state[16] = "";
    if (rc == SQLITE_ROW)
        snprintf(state, sizeof state, "%s", (const char *)sqlite3_column_text(st, 0));
    store_stmt_done(st);
    if (rc == SQLITE_DONE) return store_no_such_job(err, id);
    if (rc != SQLITE_ROW) return store_fail(s, err, "read job state");
    if (strcmp(state, "queued") == 0 || strcmp(state, "running") == 0) {
        pgn_error_set(err, PGN_E_CONFLICT, "",
                      "job %lld is %s: only a finished job can be deleted (cancel it first: "
                      "POST /api/v1/jobs/%lld/cancel)",
                      (long long)id, state, (long long)id);
        return -1;
    }
    st = store_stmt(s, delete_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    return update_job(s, st, id, "delete", err);
}

int pgd_store_job_delete(pgd_store *s, int64_t id, pgn_error *err) {
    return store_write_tx(s, delete_tx, &id, err);
}

int pgd_store_job_reassign(pgd_store *s, int64_t id, const char *device, pgn_error *err) {
    static const char sql[] =
        "UPDATE jobs SET device = ?2 WHERE id = ?1 AND state = 'queued'";
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = store_stmt(s, sql, err);
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
    int64_t id;                 /* 0: every running job */
    const char *what, *blame;   /* what ended the run; what a crash may mean */
    const char *cancelled;      /* the message of a job whose cancel was requested */
    pgd_recovery *out;
} recover_args;

/* Running jobs (all, or a->id) whose run ended without stopping them: each such run counts as
 * interrupted; a job interrupted max_attempts times ends failed ("crashed"), the others go back
 * to the queue. Both get a log line saying what happened. */
static int recover_tx(pgd_store *s, void *ctx, pgn_error *err) {
#define RUNNING " WHERE state = 'running' AND (?3 = 0 OR id = ?3)"
    static const char count_sql[] = "UPDATE jobs SET interrupted = interrupted + 1" RUNNING;
    /* The log lines come first, while the jobs are still 'running' and the two kinds tell apart
     * by their count; seq is the job's next, as pgd_store_log_add numbers it. */
    static const char log_sql[] =
        "INSERT INTO logs (job_id, seq, level, line)"
        " SELECT id, (SELECT coalesce(max(seq), 0) + 1 FROM logs WHERE job_id = jobs.id),"
        "  CASE WHEN interrupted >= ?1 THEN 'error' ELSE 'warn' END,"
        "  CASE WHEN interrupted >= ?1"
        "   THEN printf('failed: crashed: %s, %d times (run %d was the last); it is not run again"
        " (--max-attempts %d)', ?2, interrupted, attempts, ?1)"
        "   ELSE printf('%s (interrupted run %d of at most %d); queued again', ?2, interrupted, ?1) END"
        " FROM jobs" RUNNING;
    static const char crash_sql[] =
        "UPDATE jobs SET state = 'failed', finished_at = " NOW_SQL ","
        " error = json_object('code', 'crashed', 'message',"
        "  printf('%s, %d times; it is not run again (--max-attempts %d): %s', ?2, interrupted, ?1, ?4),"
        "  'field', NULL)" RUNNING " AND interrupted >= ?1";
    static const char requeue_sql[] =
        "UPDATE jobs SET state = 'queued', started_at = NULL, progress = 0" RUNNING;
#undef RUNNING
    recover_args *a = ctx;
    if (end_cancel_requested(s, a->id, a->cancelled, &a->out->cancelled, err) < 0)
        return -1;
    const char *const steps[] = {count_sql, log_sql, crash_sql, requeue_sql};
    const char *const what[] = {"count interrupted runs", "log interrupted runs",
                                "end crashed jobs", "requeue running jobs"};
    int64_t *changed[] = {NULL, NULL, &a->out->crashed, &a->out->requeued};
    for (int i = 0; i < 4; i++) {
        sqlite3_stmt *st = store_stmt(s, steps[i], err);
        if (!st) return -1;
        sqlite3_bind_int64(st, 1, a->max_attempts);
        sqlite3_bind_text(st, 2, a->what, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, a->id);
        sqlite3_bind_text(st, 4, a->blame, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        store_stmt_done(st);
        if (rc != SQLITE_DONE) return store_fail(s, err, what[i]);
        if (changed[i]) *changed[i] = sqlite3_changes(s->db);
    }
    return 0;
}

static int recover(pgd_store *s, recover_args *a, pgn_error *err) {
    *a->out = (pgd_recovery){0};
    if (a->max_attempts <= 0) a->max_attempts = 1;
    int ret = store_write_tx(s, recover_tx, a, err);
    if (ret < 0) *a->out = (pgd_recovery){0};
    return ret;
}

int pgd_store_recover(pgd_store *s, int64_t max_attempts, pgd_recovery *out, pgn_error *err) {
    recover_args a = {.max_attempts = max_attempts, .what = "paragond ended while this job ran",
                      .blame = "it may be what ends the server",
                      .cancelled = "cancelled on request; paragond ended before the job stopped", .out = out};
    return recover(s, &a, err);
}

int pgd_store_job_interrupted(pgd_store *s, int64_t id, int64_t max_attempts, const char *what,
                              pgd_recovery *out, pgn_error *err) {
    recover_args a = {.max_attempts = max_attempts, .id = id, .what = what,
                      .blame = "it may be what makes it fail",
                      .cancelled = "cancelled on request; its run ended before the job stopped", .out = out};
    return recover(s, &a, err);
}

int pgd_store_queued_jobs(pgd_store *s, pgd_job **jobs, size_t *n, pgn_error *err) {
    static const char sql[] = "SELECT " JOB_COLS " FROM jobs WHERE state = 'queued' ORDER BY id";
    *jobs = NULL;
    *n = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    sqlite3_stmt *st = store_stmt(s, sql, err);
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
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (st) {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            json_object_set_new(obj, (const char *)sqlite3_column_text(st, 0),
                                json_integer(sqlite3_column_int64(st, 1)));
        if (rc == SQLITE_DONE) ret = 0;
        else store_fail(s, err, "count queued jobs");
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    if (ret == 0) *out = obj;
    else json_decref(obj);
    return ret;
}


/* ---- figures for /metrics --------------------------------------------------------------- */

int pgd_store_job_state_counts(pgd_store *s, int64_t counts[PGD_JOB_STATES], pgn_error *err) {
    static const char sql[] = "SELECT state, count(*) FROM jobs GROUP BY state";
    for (int i = 0; i < PGD_JOB_STATES; i++) counts[i] = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1, rc = SQLITE_ERROR;
    sqlite3_stmt *st = store_stmt(s, sql, err);
    if (st) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            pgd_job_state state;
            const char *name = (const char *)sqlite3_column_text(st, 0);
            if (name && pgd_job_state_parse(name, &state) == 0)
                counts[state] = sqlite3_column_int64(st, 1);
        }
        store_stmt_done(st);
        ret = rc == SQLITE_DONE ? 0 : store_fail(s, err, "count jobs by state");
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
    int ret = store_read_numbers(s, sql, NULL, v, 5, "read counters", err);
    *out = (pgd_counters){.interactions = v[0], .flops = v[1]};
    out->finished[PGD_JOB_SUCCEEDED] = v[2];
    out->finished[PGD_JOB_FAILED] = v[3];
    out->finished[PGD_JOB_CANCELLED] = v[4];
    return ret;
}
