/* store_placements.c: owns a job's placement in the store (schema/012_job_placements.sql): the
 * reason on the job's row, and its candidates, one row each, written with the job and read back
 * with it as typed records; and the queue's figure the cost model reads, each queued or running
 * job's estimate where it went. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reasons[] = {[PGD_PLACED_BY_NAME] = "by_name", [PGD_PLACED_FASTEST] = "fastest",
                                      [PGD_PLACED_ONLY] = "only"};

const char *pgd_placement_reason_name(pgd_placement_reason reason) {
    return (size_t)reason < sizeof reasons / sizeof *reasons ? reasons[reason] : "by_name";
}

int pgd_placement_reason_parse(const char *name, pgd_placement_reason *out) {
    for (size_t i = 0; name && i < sizeof reasons / sizeof *reasons; i++)
        if (!strcmp(reasons[i], name)) {
            *out = (pgd_placement_reason)i;
            return 0;
        }
    return -1;
}

void pgd_placement_release(pgd_placement *p) {
    if (!p) return;
    free(p->candidates);
    *p = (pgd_placement){0};
}

int store_placement_insert(pgd_store *s, int64_t job_id, const pgd_placement *p, pgn_error *err) {
    static const char sql[] =
        "INSERT INTO job_candidates (job_id, rank, chosen, device, seconds, queue_seconds, work, unit,"
        " launches, gflops, mips, launch_us, measured)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
    for (size_t i = 0; p && i < p->n; i++) {
        const pgd_candidate *c = &p->candidates[i];
        db_stmt *st = store_stmt(s, sql, err);
        if (!st) return -1;
        db_bind_int64(st, 1, job_id);
        db_bind_int64(st, 2, (int64_t)i);
        db_bind_int64(st, 3, i == p->chosen);
        db_bind_text(st, 4, c->device);
        db_bind_double(st, 5, c->estimate.seconds);
        db_bind_double(st, 6, c->queue_seconds);
        db_bind_double(st, 7, c->estimate.work);
        db_bind_text(st, 8, pgn_work_unit_name(c->estimate.unit));
        db_bind_double(st, 9, c->estimate.launches);
        db_bind_double(st, 10, c->rates.gflops);
        db_bind_double(st, 11, c->rates.mips);
        db_bind_double(st, 12, c->rates.launch_us);
        db_bind_int64(st, 13, c->rates.measured);
        int rc = db_step(st);
        store_stmt_done(st);
        if (rc != DB_DONE) return store_fail(s, err, "insert placement candidate");
    }
    return 0;
}

static void candidate_from_row(db_stmt *st, pgd_candidate *c) {
    const char *device = db_column_text(st, 1);
    snprintf(c->device, sizeof c->device, "%s", device ? device : "");
    c->estimate.seconds = db_column_double(st, 2);
    c->queue_seconds = db_column_double(st, 3);
    c->estimate.work = db_column_double(st, 4);
    if (pgn_work_unit_parse(db_column_text(st, 5), &c->estimate.unit) < 0)
        c->estimate.unit = PGN_WORK_NONE; /* CHECK constraint */
    c->estimate.launches = db_column_double(st, 6);
    c->rates.gflops = db_column_double(st, 7);
    c->rates.mips = db_column_double(st, 8);
    c->rates.launch_us = db_column_double(st, 9);
    c->rates.measured = db_column_int64(st, 10) != 0;
}

int store_placement_read(pgd_store *s, int64_t job_id, pgd_placement *p, pgn_error *err) {
    static const char sql[] = "SELECT chosen, device, seconds, queue_seconds, work, unit, launches, gflops, mips,"
                              " launch_us, measured FROM job_candidates WHERE job_id = ?1 ORDER BY rank";
    db_stmt *st = store_stmt(s, sql, err);
    if (!st) return -1;
    db_bind_int64(st, 1, job_id);
    size_t cap = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (p->n == cap) {
            size_t grown = cap ? cap * 2 : 4;
            pgd_candidate *more = realloc(p->candidates, grown * sizeof *more);
            if (!more) {
                store_stmt_done(st);
                pgd_placement_release(p);
                pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory reading a placement");
                return -1;
            }
            p->candidates = more;
            cap = grown;
        }
        pgd_candidate *c = &p->candidates[p->n];
        *c = (pgd_candidate){0};
        candidate_from_row(st, c);
        if (db_column_int64(st, 0)) p->chosen = p->n;
        p->n++;
    }
    store_stmt_done(st);
    if (rc == DB_DONE) return 0;
    pgd_placement_release(p);
    return store_fail(s, err, "read placement");
}

int pgd_store_queue_each(pgd_store *s, const char *device, void (*each)(void *ctx, bool running, double seconds),
                         void *ctx, pgn_error *err) {
    /* running first, then the queue in the order the claim takes it (store_job_states.c): each
     * read along jobs_queue's order, so that no sort is needed however long the queue is */
    static const char running[] = "SELECT c.seconds * (1 - j.progress) FROM jobs AS j"
                                  " JOIN job_candidates AS c ON c.job_id = j.id AND c.chosen = 1"
                                  " WHERE j.state = 'running' AND j.device = ?1";
    static const char queued[] = "SELECT c.seconds FROM jobs AS j"
                                 " JOIN job_candidates AS c ON c.job_id = j.id AND c.chosen = 1"
                                 " WHERE j.state = 'queued' AND j.device = ?1 ORDER BY j.priority DESC, j.id";
    pthread_mutex_lock(&s->lock);
    int ret = 0;
    for (int q = 0; q < 2 && ret == 0; q++) {
        db_stmt *st = store_stmt(s, q ? queued : running, err);
        if (!st) {
            ret = -1;
            break;
        }
        db_bind_text(st, 1, device);
        int rc;
        while ((rc = db_step(st)) == DB_ROW) each(ctx, q == 0, db_column_double(st, 0));
        store_stmt_done(st);
        if (rc != DB_DONE) ret = store_fail(s, err, "read a device's queue");
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}
