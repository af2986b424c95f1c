/* store_nodes.c: owns the nodes table (schema/014_runs_and_nodes.sql): each paragond's
 * registration, its heartbeat on the store's clock, and the list the API shows with the jobs
 * each node runs. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pgd_store_node_register(pgd_store *s, const char *address, const char *version,
                            const json_t *devices, pgn_error *err) {
    static const char sql[] =
        "INSERT INTO nodes (id, address, version, devices, started_at, heartbeat_at, heartbeat_ms)"
        " VALUES (?1, ?2, ?3, ?4, " NOW_SQL ", " NOW_SQL ", " NOW_MS_SQL ")"
        " ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version,"
        " devices = excluded.devices, started_at = excluded.started_at,"
        " heartbeat_at = excluded.heartbeat_at, heartbeat_ms = excluded.heartbeat_ms";
    char *text = pgn_json_dumps(devices ? devices : json_array());
    if (!text) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "store: the node's devices cannot be serialised");
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, s->node);
        db_bind_text(st, 2, address ? address : "");
        db_bind_text(st, 3, version ? version : "");
        db_bind_text(st, 4, text);
        int rc = db_step(st);
        store_stmt_done(st);
        ret = rc == DB_DONE ? 0 : store_fail(s, err, "register the node");
    }
    pthread_mutex_unlock(&s->lock);
    free(text);
    return ret;
}

int pgd_store_node_heartbeat(pgd_store *s, pgn_error *err) {
    static const char sql[] = "UPDATE nodes SET heartbeat_at = " NOW_SQL ", heartbeat_ms = " NOW_MS_SQL
                              " WHERE id = ?1";
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) {
        db_bind_text(st, 1, s->node);
        int rc = db_step(st);
        store_stmt_done(st);
        ret = rc == DB_DONE ? 0 : store_fail(s, err, "renew the node's heartbeat");
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

static json_t *node_row(db_stmt *st) {
    json_t *o = json_object();
    json_object_set_new(o, "id", store_col_text(st, 0));
    json_object_set_new(o, "address", store_col_text(st, 1));
    json_object_set_new(o, "version", store_col_text(st, 2));
    json_object_set_new(o, "devices", store_col_json(st, 3));
    json_object_set_new(o, "started_at", store_col_text(st, 4));
    json_object_set_new(o, "heartbeat_at", store_col_text(st, 5));
    json_object_set_new(o, "heartbeat_age_s", json_real((double)db_column_int64(st, 6) / 1000.0));
    json_t *running = json_array();
    const char *ids = db_column_text(st, 7); /* "3,17": the jobs it runs */
    for (const char *p = ids; p && *p;) {
        char *end;
        long long id = strtoll(p, &end, 10);
        if (end == p) break;
        json_array_append_new(running, json_integer(id));
        p = *end == ',' ? end + 1 : end;
    }
    json_object_set_new(o, "running", running);
    return o;
}

int pgd_store_nodes_list(pgd_store *s, json_t **out, pgn_error *err) {
    static const char sql[] =
        "SELECT id, address, version, devices, started_at, heartbeat_at,"
        " " NOW_MS_SQL " - heartbeat_ms,"
        " (SELECT group_concat(CAST(j.id AS TEXT), ',')"
        "  FROM jobs AS j WHERE j.state = 'running' AND j.node = nodes.id)"
        " FROM nodes ORDER BY id";
    *out = NULL;
    json_t *arr = json_array();
    pthread_mutex_lock(&s->lock);
    int ret = -1;
    db_stmt *st = store_stmt(s, sql, err);
    if (st) ret = store_collect_rows(s, st, node_row, arr, err, "list nodes");
    pthread_mutex_unlock(&s->lock);
    if (ret == 0) *out = arr;
    else json_decref(arr);
    return ret;
}
