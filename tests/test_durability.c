/* test_durability.c: what a job's row outlives: a shutdown mid-job (queued again, run by the next
 * start), rows queued before a start (run, or placed again when their device is gone), and a
 * fresh database over an old data dir (no other job's checkpoint is resumed). */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(durability, .init = harness_setup, .fini = harness_teardown);

Test(durability, a_job_interrupted_by_shutdown_runs_again_after_restart) {
    /* Long enough to be caught running; the shutdown stops it at a step boundary. */
    server s = start_server();
    int64_t id = submit_xor(&s, 100000, NULL);
    json_t *job = wait_state(&s, id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    json_decref(job);
    json_t *devs = get_json(&s, "/api/v1/devices", 200);
    bool shown = false;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(devs, "devices"), i, d) shown =
        shown || json_integer_value(json_object_get(d, "running_job")) == id;
    cr_assert(shown, "the devices list shows the running job");
    json_decref(devs);
    stop_server(&s);

    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT state, attempts FROM jobs WHERE id = ?1", -1,
                                    &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "queued",
                     "a shutdown puts the running job back in the queue");
    cr_assert_eq(sqlite3_column_int(st, 1), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* The next paragond picks it up by itself. */
    s = start_server();
    job = wait_state(&s, id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    json_decref(job);
    stop_server(&s);
}

Test(durability, jobs_queued_before_start_are_run_or_placed_again) {
    /* A first run creates the schema; then rows are queued "by a previous paragond", one on
     * a device that no longer exists but asked for auto, one that asked for that device. */
    server s = start_server();
    stop_server(&s);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "INSERT INTO jobs (kind, name, state, device_requested,"
                                    " device, spec) VALUES ('train', 'old', 'queued', ?1, ?2, ?3)",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    const char *rows[][2] = {{"auto", "gpu-0badc0de"}, {"gpu-0badc0de", "gpu-0badc0de"}};
    for (int i = 0; i < 2; i++) {
        sqlite3_bind_text(st, 1, rows[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, rows[i][1], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, xor_spec, -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);

    s = start_server();
    json_t *job = wait_succeeded(&s, 1);
    cr_assert_str_neq(str(job, "device"), "gpu-0badc0de", "placed on a device that exists");
    json_decref(job);
    job = wait_state(&s, 2, "succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_t *e = json_object_get(job, "error");
    cr_assert_str_eq(str(e, "field"), "device");
    cr_assert(strstr(str(e, "message"), "gpu-0badc0de"), "%s", str(e, "message"));
    json_decref(job);
    stop_server(&s);
}

/* A database started afresh over an old data dir: job ids start again at 1, and the old job 1's
 * checkpoint must not be resumed by the new job 1 (it runs from scratch, and says so). */
Test(durability, a_fresh_database_over_an_old_data_dir_does_not_resume_another_jobs_checkpoint) {
    server s = start_server();
    int64_t id = submit(&s, xor_spec);
    json_decref(wait_succeeded(&s, id));
    stop_server(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/jobs/%lld/checkpoint.safetensors", s.data, (long long)id);
    cr_assert_eq(access(path, F_OK), 0, "the first job left its checkpoint: %s", path);
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", s.db, suffixes[i]);
        unlink(path);
    }

    s = start_server();
    int64_t again = submit(&s, xor_spec);
    cr_assert_eq(again, id, "ids start again in a new database");
    json_t *job = wait_succeeded(&s, again);
    json_t *result = json_object_get(job, "result");
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_epoch")), 0, "it ran from scratch");
    json_decref(job);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs", (long long)again);
    http_response r = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "removed a checkpoint left in"), "the log says so: %s", r.body);
    http_response_free(&r);
    stop_server(&s);
}
