/* store_jobs.c: owns the job rows as records: inserting them (with a job's placement, its first
 * log line, its idempotency key and work key), reading and listing them as pgd_job records,
 * what a key was used for, the interactions an earlier run of an inet program needed, the queue
 * (queued jobs, counts per device) and the figures /metrics reads (jobs by state, the counters
 * that only grow). A job's way through its states is store_job_states.c's. */
#include "store_internal.h"

#include "views.h" /* errors are stored as the API shows them */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- jobs ------------------------------------------------------------------------------- */

/* Column order every job query shares; spec, when selected, comes last (index 19). A job's
 * placement candidates are read after its row (store_placement_read). */
#define JOB_COLS                                                                               \
    "id, kind, name, state, device_requested, device, progress, attempts, result, error, "     \
    "created_at, started_at, finished_at, placement, cancel_requested, interrupted, tags, "    \
    "submission_id, priority"

static void col_copy(db_stmt *st, int col, char *out, size_t size) {
    const char *t = db_column_text(st, col);
    snprintf(out, size, "%s", t ? t : "");
}

/* A JSON column as an owned value; NULL for SQL NULL. */
static json_t *col_json_or_null(db_stmt *st, int col) {
    return db_column_is_null(st, col) ? NULL : store_col_json(st, col);
}

static void job_from_row(db_stmt *st, bool with_spec, pgd_job *job) {
    *job = (pgd_job){.id = db_column_int64(st, 0)};
    char text[32];
    col_copy(st, 1, text, sizeof text);
    if (pgn_job_kind_parse(text, &job->kind) < 0) job->kind = PGN_JOB_TRAIN; /* CHECKed by schema use */
    col_copy(st, 2, job->name, sizeof job->name);
    col_copy(st, 3, text, sizeof text);
    if (pgd_job_state_parse(text, &job->state) < 0) job->state = PGD_JOB_FAILED; /* CHECK constraint */
    col_copy(st, 4, job->device_requested, sizeof job->device_requested);
    col_copy(st, 5, job->device, sizeof job->device);
    job->progress = db_column_double(st, 6);
    job->attempts = db_column_int64(st, 7);
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
    if (pgd_placement_reason_parse(db_column_text(st, 13), &job->placement.reason) < 0)
        job->placement.reason = PGD_PLACED_BY_NAME; /* none (NULL): it has no candidates either */
    job->cancel_requested = db_column_int64(st, 14) != 0;
    job->interrupted = db_column_int64(st, 15);
    job->tags = col_json_or_null(st, 16);
    col_copy(st, 17, job->submission_id, sizeof job->submission_id);
    job->priority = db_column_int64(st, 18);
    if (with_spec) job->spec = col_json_or_null(st, 19);
}

void pgd_job_release(pgd_job *job) {
    if (!job) return;
    json_decref(job->spec);
    json_decref(job->result);
    json_decref(job->tags);
    job->spec = job->result = job->tags = NULL;
    pgd_placement_release(&job->placement);
    free(job->runs);
    job->runs = NULL;
    job->n_runs = 0;
}

/* The job's runs into job->runs (caller holds the lock). */
static int read_runs(pgd_store *s, int64_t id, pgd_job *job, pgn_error *err) {
    static const char sql[] = "SELECT attempt, node, device, started_at, ended_at, outcome FROM job_runs"
                              " WHERE job_id = ?1 ORDER BY attempt";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        pgd_job_run *grown = realloc(job->runs, (job->n_runs + 1) * sizeof *grown);
        if (!grown) {
            store_stmt_done(st);
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
            return -1;
        }
        job->runs = grown;
        pgd_job_run *r = &job->runs[job->n_runs++];
        *r = (pgd_job_run){.attempt = db_column_int64(st, 0)};
        col_copy(st, 1, r->node, sizeof r->node);
        col_copy(st, 2, r->device, sizeof r->device);
        col_copy(st, 3, r->started_at, sizeof r->started_at);
        col_copy(st, 4, r->ended_at, sizeof r->ended_at);
        col_copy(st, 5, r->outcome, sizeof r->outcome);
    }
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, "read a job's runs");
}

void pgd_jobs_free(pgd_job *jobs, size_t n) {
    for (size_t i = 0; i < n; i++) pgd_job_release(&jobs[i]);
    free(jobs);
}

/* Steps st to its end, appending each row as a job (without spec) to *jobs; resets st. */
static int collect_jobs(pgd_store *s, db_stmt *st, pgd_job **jobs, size_t *n,
                        pgn_error *err, const char *what) {
    size_t cap = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
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
    if (rc != DB_DONE) return store_fail(s, err, what);
    for (size_t i = 0; i < *n; i++)
        if (store_placement_read(s, (*jobs)[i].id, &(*jobs)[i].placement, err) < 0) return -1;
    return 0;
}

int store_read_job(pgd_store *s, int64_t id, bool with_spec, char **spec_text, pgd_job *out, pgn_error *err) {
    static const char sql[] = "SELECT " JOB_COLS ", spec FROM jobs WHERE id = ?1";
    *out = (pgd_job){0};
    if (spec_text) *spec_text = NULL;
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc == DB_ROW) job_from_row(st, with_spec, out);
    if (rc == DB_ROW && spec_text) {
        const char *t = db_column_text(st, 19);
        if (!(*spec_text = strdup(t ? t : "null"))) {
            store_stmt_done(st);
            pgd_job_release(out);
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
            return -1;
        }
    }
    store_stmt_done(st);
    if (rc == DB_DONE) return store_no_such_job(err, id);
    if (rc != DB_ROW) return store_fail(s, err, "read job");
    if (store_placement_read(s, id, &out->placement, err) == 0 && read_runs(s, id, out, err) == 0) return 0;
    pgd_job_release(out);
    if (spec_text) {
        free(*spec_text);
        *spec_text = NULL;
    }
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
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    char *visible = pgn_text_visible(line);
    if (!visible) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }
    db_bind_int64(st, 1, id);
    db_bind_text(st, 2, visible);
    free(visible);
    int rc = db_step(st);
    if (rc == DB_ROW && time_out) {
        const char *at = db_column_text(st, 0);
        snprintf(time_out, 32, "%s", at ? at : "");
    }
    if (rc == DB_ROW) rc = db_step(st);
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, "insert log line");
}

/* Takes sub's key inside the inserting transaction, so that of two requests racing with one key
 * exactly one inserts: the other finds the row here and inserts nothing ("conflict"). */
static int take_submission_key(pgd_store *s, const pgd_submission *sub, pgn_error *err) {
    static const char sql[] = "INSERT INTO submissions (key, body_sha256, job_id) VALUES (?1, ?2, 0)"
                              " ON CONFLICT (key) DO NOTHING";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_text(st, 1, sub->key);
    db_bind_text(st, 2, sub->body_sha256);
    int rc = db_step(st);
    store_stmt_done(st);
    if (rc != DB_DONE) return store_fail(s, err, "insert submission");
    if (db_changes(s->db) > 0) return 0;
    pgn_error_set(err, PGN_E_CONFLICT, "submission_id", "submission_id: '%s' is taken", sub->key);
    return -1;
}

/* The key's row names the first job it made, known once that job is in. */
static int note_submission_job(pgd_store *s, const pgd_submission *sub, int64_t id, pgn_error *err) {
    static const char sql[] = "UPDATE submissions SET job_id = ?2 WHERE key = ?1";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_text(st, 1, sub->key);
    db_bind_int64(st, 2, id);
    int rc = db_step(st);
    store_stmt_done(st);
    return rc == DB_DONE ? 0 : store_fail(s, err, "record submission");
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

bool pgd_store_shape_key(const json_t *spec, char key[65]) {
    const char *kind = json_string_value(json_object_get(spec, "kind"));
    if (!kind || strcmp(kind, "train") != 0) return false;
    json_t *shape = json_deep_copy(spec);
    if (!shape) return false;
    static const char *const drop[] = {"name", "seed", "epochs", "steps", "checkpoint_every", "log_every", "device"};
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++) json_object_del(shape, drop[i]);
    json_t *optimizer = json_object_get(shape, "optimizer"); /* its type, not its numbers */
    if (json_is_object(optimizer))
        json_object_set_new(shape, "optimizer", json_pack("{s:O?}", "type", json_object_get(optimizer, "type")));
    char *text = pgn_json_dumps(shape);
    json_decref(shape);
    if (!text) return false;
    pgn_sha256_hex_of(text, strlen(text), key);
    free(text);
    return true;
}

static int insert_jobs_tx(pgd_store *s, void *ctx, pgn_error *err) {
    /* Ids only grow: above every job there is and every job deleted (job_id_floor). */
    static const char sql[] =
        "INSERT INTO jobs (id, kind, name, state, device_requested, device, spec, placement, tags,"
        " submission_id, work_key, priority, shape_key)"
        " VALUES ((SELECT coalesce(max(id), 0) + 1 FROM"
        "          (SELECT max(id) AS id FROM jobs UNION ALL SELECT id FROM job_id_floor) AS ids),"
        "         ?1, ?2, 'queued', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        " RETURNING " JOB_COLS;
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
        db_stmt *st = store_stmt(s, sql, err);
        if (!st) {
            free(spec);
            free(tags);
            return -1;
        }
        db_bind_text(st, 1, pgn_job_kind_name(job->kind));
        db_bind_text(st, 2, job->name ? job->name : "");
        db_bind_text(st, 3, job->device_requested);
        db_bind_text(st, 4, job->device);
        db_bind_text(st, 5, spec);
        store_bind_text_or_null(st, 6, placed ? pgd_placement_reason_name(job->placement->reason) : NULL);
        store_bind_text_or_null(st, 7, tags);
        store_bind_text_or_null(st, 8, keyed ? a->sub->key : NULL);
        char work_key[65];
        store_bind_text_or_null(st, 9, job->kind == PGN_JOB_INET && work_key_of(job->spec, work_key) ? work_key : NULL);
        db_bind_int64(st, 10, job->priority);
        char shape_key[65];
        store_bind_text_or_null(st, 11, pgd_store_shape_key(job->spec, shape_key) ? shape_key : NULL);
        int rc = db_step(st);
        if (rc == DB_ROW) {
            a->ids[i] = db_column_int64(st, 0);
            if (job->stored) {
                pgd_job_release(job->stored);
                job_from_row(st, false, job->stored);
            }
            rc = db_step(st);
        }
        store_stmt_done(st);
        free(spec);
        free(tags);
        if (rc != DB_DONE) return store_fail(s, err, "insert job");
        if (placed && store_placement_insert(s, a->ids[i], job->placement, err) < 0) return -1;
        if (placed && job->stored && store_placement_read(s, a->ids[i], &job->stored->placement, err) < 0) return -1;
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
    db_stmt *st = store_stmt(s, sub_sql, err);
    if (!st) goto rollback;
    db_bind_text(st, 1, key);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        *found = true;
        col_copy(st, 0, body_sha256, 65);
        *first_job = db_column_int64(st, 1);
    }
    store_stmt_done(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        store_fail(s, err, "read submission");
        goto rollback;
    }
    if (*found) {
        if (!(st = store_stmt(s, jobs_sql, err))) goto rollback;
        db_bind_text(st, 1, key);
        while ((rc = db_step(st)) == DB_ROW) {
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
            (*ids)[(*n)++] = db_column_int64(st, 0);
        }
        store_stmt_done(st);
        if (rc != DB_DONE) {
            store_fail(s, err, "read submission jobs");
            goto rollback;
        }
    }
    if (store_run(s, store_commit_sql, err, "commit") < 0) goto rollback;
    ret = 0;
    goto unlock;
rollback:
    db_rollback(s->db);
    free(*ids);
    *ids = NULL;
    *n = 0;
unlock:
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* pgd_store_job_get, and pgd_store_job_get_spec_text with spec_text. */
static int job_get(pgd_store *store, int64_t id, bool with_spec, char **spec_text, pgd_job *out, pgn_error *err) {
    /* GET's read on a reader connection; a state event's, after its write, on the writer's
     * (store_internal.h) */
    pgd_store *s = spec_text ? store_reader(store) : store; /* the reader comes locked */
    if (!spec_text) pthread_mutex_lock(&s->lock);
    /* On SQLite its three reads (the row, its placement, its runs) share one read transaction:
     * they agree, and the file's read lock is taken once, not three times (a third of a GET's
     * store time). On PostgreSQL BEGIN and COMMIT would be two more round trips. */
    bool tx = !s->shared && store_run(s, store_begin_sql, err, "begin") == 0;
    int ret = !s->shared && !tx ? -1 : store_read_job(s, id, with_spec, spec_text, out, err);
    if (tx && store_run(s, store_commit_sql, err, "end a read") < 0) {
        db_rollback(s->db);
        if (ret == 0) {
            pgd_job_release(out);
            if (spec_text) free(*spec_text), *spec_text = NULL;
        }
        ret = -1;
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_job_get(pgd_store *s, int64_t id, bool with_spec, pgd_job *out, pgn_error *err) {
    return job_get(s, id, with_spec, NULL, out, err);
}

int pgd_store_job_get_spec_text(pgd_store *s, int64_t id, pgd_job *out, char **spec_text, pgn_error *err) {
    return job_get(s, id, false, spec_text, out, err);
}

int pgd_store_jobs_list(pgd_store *s, const pgd_job_filter *f, pgd_job **jobs, size_t *n,
                        int64_t *total, pgn_error *err) {
    /* One statement per filter combination, so each can use its index; the cursor (?6) is a
     * range on the id the index ends with. Tags (?5, [[key, value], ...] or NULL) are matched
     * on the rows the rest leaves: a job is kept when no wanted pair differs from its own.
     * Keys are of [A-Za-z0-9_.-/] (api_submit.c), so a quoted JSON path holds any of them. */
#define TAGS_MATCH                                                                              \
    " AND (?5 IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(?5) AS w WHERE json_extract(jobs.tags," \
    " '$.\"' || json_extract(w.value, '$[0]') || '\"') IS DISTINCT FROM json_extract(w.value, '$[1]')))"
#define PAGE " AND id < ?6 ORDER BY id DESC LIMIT ?3 OFFSET ?4"
    static const char list_any[] = "SELECT " JOB_COLS " FROM jobs WHERE TRUE" TAGS_MATCH PAGE;
    static const char list_state[] = "SELECT " JOB_COLS " FROM jobs WHERE state = ?1" TAGS_MATCH PAGE;
    static const char list_kind[] = "SELECT " JOB_COLS " FROM jobs WHERE kind = ?2" TAGS_MATCH PAGE;
    static const char list_both[] =
        "SELECT " JOB_COLS " FROM jobs WHERE state = ?1 AND kind = ?2" TAGS_MATCH PAGE;
    static const char count_any[] = "SELECT count(*) FROM jobs WHERE TRUE" TAGS_MATCH;
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
    db_stmt *st = store_stmt(s, count_sql[which], err);
    if (!st) goto rollback;
    if (f->by_state) db_bind_text(st, 1, state);
    if (f->by_kind) db_bind_text(st, 2, kind);
    store_bind_text_or_null(st, 5, tags);
    if (db_step(st) != DB_ROW) {
        store_fail(s, err, "count jobs");
        store_stmt_done(st);
        goto rollback;
    }
    *total = db_column_int64(st, 0);
    store_stmt_done(st);

    st = store_stmt(s, list_sql[which], err);
    if (!st) goto rollback;
    if (f->by_state) db_bind_text(st, 1, state);
    if (f->by_kind) db_bind_text(st, 2, kind);
    db_bind_int64(st, 3, f->limit);
    db_bind_int64(st, 4, f->offset);
    store_bind_text_or_null(st, 5, tags);
    db_bind_int64(st, 6, f->before_id > 0 ? f->before_id : INT64_MAX);
    if (collect_jobs(s, st, &list, &count, err, "list jobs") < 0) goto rollback;
    if (store_run(s, store_commit_sql, err, "commit") < 0) goto rollback;
    ret = 0;
    *jobs = list;
    *n = count;
    list = NULL;
    count = 0;
    goto unlock;
rollback:
    db_rollback(s->db);
unlock:
    pthread_mutex_unlock(&s->lock);
    pgd_jobs_free(list, count);
    free(tags);
    return ret;
}

int pgd_store_inet_expected(pgd_store *s, const json_t *spec, int64_t *interactions, pgn_error *err) {
    static const char sql[] = "SELECT json_extract(result, '$.interactions') FROM jobs"
                              " WHERE work_key = ?1 AND state = 'succeeded' ORDER BY id DESC LIMIT 1";
    *interactions = 0;
    char key[65];
    if (!work_key_of(spec, key)) return 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, key);
        int rc = db_step(st);
        if (rc == DB_ROW || rc == DB_DONE) {
            if (rc == DB_ROW) *interactions = db_column_int64(st, 0);
            ret = 0;
        } else {
            store_fail(s, err, "read the interactions of an earlier run");
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_train_history(pgd_store *s, const char *shape_key, const char *device, pgd_train_history *out,
                            pgn_error *err) {
    static const char sql[] = "SELECT id, started_at, finished_at, spec FROM jobs WHERE shape_key = ?1 AND device = ?2"
                              " AND state = 'succeeded' AND attempts = 1 ORDER BY id DESC LIMIT 1";
    *out = (pgd_train_history){0};
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, shape_key);
        db_bind_text(st, 2, device);
        int rc = db_step(st);
        if (rc == DB_ROW) {
            int64_t a, b;
            json_t *prior = store_col_json(st, 3);
            const char *unit = json_object_get(prior, "steps") ? "steps" : "epochs";
            double units = (double)json_integer_value(json_object_get(prior, unit));
            if (pgn_utc_ms(db_column_text(st, 1), &a) && pgn_utc_ms(db_column_text(st, 2), &b) && b > a && units > 0) {
                out->job = db_column_int64(st, 0);
                out->seconds = (double)(b - a) / 1000.0;
                out->units = units;
            }
            json_decref(prior);
        }
        if (rc == DB_ROW || rc == DB_DONE) ret = 0;
        else store_fail(s, err, "read an earlier run of the same shape");
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_job_queue_place(pgd_store *s, int64_t id, int64_t *ahead, int64_t *running, pgn_error *err) {
    static const char sql[] =
        "SELECT (SELECT count(*) FROM jobs AS q WHERE q.state = 'queued' AND q.device = j.device"
        "          AND (q.priority > j.priority OR (q.priority = j.priority AND q.id < j.id))),"
        "       coalesce((SELECT min(r.id) FROM jobs AS r WHERE r.state = 'running' AND r.device = j.device), 0)"
        " FROM jobs AS j WHERE j.id = ?1";
    *ahead = *running = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_int64(st, 1, id);
        int rc = db_step(st);
        if (rc == DB_ROW) {
            *ahead = db_column_int64(st, 0);
            *running = db_column_int64(st, 1);
            ret = 0;
        } else if (rc == DB_DONE) {
            store_no_such_job(err, id);
        } else {
            store_fail(s, err, "read a job's place in its queue");
        }
        store_stmt_done(st);
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int pgd_store_queued_jobs(pgd_store *s, pgd_job **jobs, size_t *n, pgn_error *err) {
    static const char sql[] = "SELECT " JOB_COLS " FROM jobs WHERE state = 'queued' ORDER BY id";
    *jobs = NULL;
    *n = 0;
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
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
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        int rc;
        while ((rc = db_step(st)) == DB_ROW)
            json_object_set_new(obj, db_column_text(st, 0),
                                json_integer(db_column_int64(st, 1)));
        if (rc == DB_DONE) ret = 0;
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
    int ret = -1, rc = DB_FAIL;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        while ((rc = db_step(st)) == DB_ROW) {
            pgd_job_state state;
            const char *name = db_column_text(st, 0);
            if (name && pgd_job_state_parse(name, &state) == 0)
                counts[state] = db_column_int64(st, 1);
        }
        store_stmt_done(st);
        ret = rc == DB_DONE ? 0 : store_fail(s, err, "count jobs by state");
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
