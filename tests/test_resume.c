/* test_resume.c: a training job stopped mid-run resumes bit-identically to a run never stopped:
 * after kill -9, from its last periodic checkpoint; after SIGTERM, from the checkpoint the
 * shutdown writes. No metric row is lost or written twice. */
#include "paragond_harness.h"
#include "safetensors_check.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(resume, .init = harness_setup, .fini = harness_teardown);

/* Fashion-MNIST on the pocl CPU device: about half a second an epoch there, so a kill lands
 * mid-run. */
#define FASHION_SPEC(epochs, every)                                                            \
    "{\"kind\":\"train\",\"name\":\"fashion\",\"device\":\"cpu\",\"seed\":7,"                 \
    "\"model\":{\"type\":\"mlp\",\"layers\":[784,256,256,10]},"                               \
    "\"data\":{\"source\":\"fashion-mnist\"},"                                                 \
    "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.05,\"momentum\":0.9},\"batch_size\":128,"       \
    "\"epochs\":" #epochs ",\"checkpoint_every\":" #every "}"
#define FASHION_STEPS_PER_EPOCH 469 /* 60000 samples in batches of 128 */

static const char *const metric_names[] = {"accuracy", "loss", "test_accuracy", "test_loss"};
/* An MLP's figures by optimizer step (train.c): a step_loss point every log_every [10] steps of
 * an epoch and at its last, 47 an epoch of 469 steps; its speed; and the epochs' marks. */
#define BY_STEP "('step_loss', 'samples_per_second', 'epoch')"
#define FASHION_POINTS_PER_EPOCH 47

/* The job's metric rows as the database holds them: [{name, step, value, created_at}]; those
 * by step (BY_STEP) or the others. */
static json_t *select_rows(const server *s, int64_t id, bool by_step) {
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(s->db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    by_step ? "SELECT name, step, value, created_at FROM metrics"
                                              " WHERE job_id = ?1 AND name IN " BY_STEP " ORDER BY name, step"
                                            : "SELECT name, step, value, created_at FROM metrics"
                                              " WHERE job_id = ?1 AND name NOT IN " BY_STEP " ORDER BY name, step",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    json_t *rows = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(rows, json_pack("{s:s, s:I, s:f, s:s}", "name",
                                              (const char *)sqlite3_column_text(st, 0), "step",
                                              (json_int_t)sqlite3_column_int64(st, 1), "value",
                                              sqlite3_column_double(st, 2), "created_at",
                                              (const char *)sqlite3_column_text(st, 3)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

static json_t *metric_rows(const server *s, int64_t id) { return select_rows(s, id, false); }

static json_t *metric_row(const json_t *rows, const char *name, int64_t step) {
    size_t i;
    json_t *m;
    json_array_foreach(rows, i, m) {
        if (strcmp(str(m, "name"), name) == 0 &&
            json_integer_value(json_object_get(m, "step")) == step)
            return m;
    }
    return NULL;
}

/* Every metric of every epoch 1..epochs, once. */
static void assert_every_epoch_once(const json_t *rows, int epochs) {
    cr_assert_eq(json_array_size(rows), 4 * (size_t)epochs, "one row per metric and epoch");
    for (int n = 0; n < 4; n++)
        for (int e = 1; e <= epochs; e++)
            cr_assert_not_null(metric_row(rows, metric_names[n], e), "%s of epoch %d",
                               metric_names[n], e);
}

/* The job's figures by step are the uninterrupted run's, each once: the step losses and the
 * epochs' marks equal (a resumed run gives the points of its epochs as if never stopped), the
 * speed at the same steps (its values are timings). */
static void assert_steps_as_uninterrupted(const server *s, int64_t id, int64_t ref, int epochs) {
    json_t *rows = select_rows(s, id, true), *ref_rows = select_rows(s, ref, true);
    cr_assert_eq(json_array_size(rows), json_array_size(ref_rows), "every figure by step once");
    size_t i, points = 0, marks = 0;
    json_t *m;
    json_array_foreach(rows, i, m) {
        const char *name = str(m, "name");
        int64_t step = json_integer_value(json_object_get(m, "step"));
        json_t *same = metric_row(ref_rows, name, step);
        cr_assert_not_null(same, "%s at step %lld, which the uninterrupted run has not", name, (long long)step);
        points += !strcmp(name, "step_loss");
        marks += !strcmp(name, "epoch");
        if (strcmp(name, "samples_per_second"))
            cr_assert_eq(json_real_value(json_object_get(m, "value")), json_real_value(json_object_get(same, "value")),
                         "%s at step %lld", name, (long long)step);
    }
    cr_assert_eq(points, (size_t)epochs * FASHION_POINTS_PER_EPOCH);
    cr_assert_eq(marks, (size_t)epochs);
    json_decref(rows);
    json_decref(ref_rows);
}

Test(resume, a_kill_9_mid_training_resumes_from_the_last_checkpoint_bit_identically) {
    server s = start_server();
    int64_t t0 = now_ms();
    int64_t id = submit(&s, FASHION_SPEC(8, 1));

    /* The download answers once the first epoch's checkpoint is written. */
    int64_t deadline = now_ms() + JOB_TIMEOUT_MS;
    int status;
    while ((status = status_of(&s, "GET", id, "/checkpoint")) != 200) {
        cr_assert_eq(status, 404);
        cr_assert_lt(now_ms(), deadline, "no checkpoint was written");
        usleep(20000);
    }
    int64_t t_checkpoint = now_ms();
    json_t *before = metric_rows(&s, id);
    json_t *job = job_now(&s, id);
    cr_assert_str_eq(str(job, "state"), "running", "still running when it is killed");
    json_decref(job);
    kill_server(&s);
    int64_t t_kill = now_ms();
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'running'", id),
                 1, "a killed server leaves its job running in the database");

    /* The next start resumes it; the same spec queued behind it runs uninterrupted. */
    s = start_server();
    int64_t t_restart = now_ms();
    int64_t ref = submit(&s, FASHION_SPEC(8, 1));
    job = wait_succeeded(&s, id);
    int64_t t_done = now_ms();
    json_t *result = json_object_get(job, "result");
    cr_assert_geq(json_integer_value(json_object_get(job, "attempts")), 2);
    int64_t resumed = json_integer_value(json_object_get(result, "resumed_from_epoch"));
    cr_assert(resumed >= 1 && resumed < 8, "resumed_from_epoch %lld", (long long)resumed);
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_step")),
                 resumed * FASHION_STEPS_PER_EPOCH);
    json_t *ref_job = wait_succeeded(&s, ref);
    json_t *ref_result = json_object_get(ref_job, "result");
    cr_assert_eq(json_integer_value(json_object_get(ref_result, "resumed_from_epoch")), 0);
    cr_assert_str_eq(str(result, "weights_sha256"), str(ref_result, "weights_sha256"),
                     "resume is bit-identical to the uninterrupted run");
    cr_assert_eq(json_integer_value(json_object_get(result, "steps")),
                 json_integer_value(json_object_get(ref_result, "steps")));

    /* No metric row was lost or doubled: the killed run's epochs up to its checkpoint are the
     * rows it wrote (older than the second attempt); later ones were written again, equal. */
    json_t *after = metric_rows(&s, id), *ref_rows = metric_rows(&s, ref);
    assert_every_epoch_once(after, 8);
    const char *restarted_at = str(job, "started_at");
    size_t i;
    json_t *m;
    json_array_foreach(after, i, m) {
        int64_t step = json_integer_value(json_object_get(m, "step"));
        bool kept = strcmp(str(m, "created_at"), restarted_at) < 0;
        cr_assert_eq(kept, step <= resumed, "%s of epoch %lld written %s, second start %s",
                     str(m, "name"), (long long)step, str(m, "created_at"), restarted_at);
        json_t *same = metric_row(ref_rows, str(m, "name"), step);
        cr_assert_eq(json_real_value(json_object_get(m, "value")),
                     json_real_value(json_object_get(same, "value")), "%s of epoch %lld",
                     str(m, "name"), (long long)step);
    }
    json_array_foreach(before, i, m) {
        json_t *now = metric_row(after, str(m, "name"), json_integer_value(json_object_get(m, "step")));
        cr_assert_not_null(now);
        cr_assert_eq(json_real_value(json_object_get(m, "value")),
                     json_real_value(json_object_get(now, "value")));
        if (json_integer_value(json_object_get(m, "step")) <= resumed)
            cr_assert_str_eq(str(m, "created_at"), str(now, "created_at"), "the same row");
    }
    cr_assert_geq(json_array_size(before), 4, "epoch 1 was recorded before the kill");
    assert_steps_as_uninterrupted(&s, id, ref, 8);
    fprintf(stderr,
            "kill -9 test: first checkpoint after %lld ms, killed %lld ms later at epoch >= %lld; "
            "restart took %lld ms; resumed job done %lld ms after the restart "
            "(resumed_from_epoch %lld, attempts %lld)\n",
            (long long)(t_checkpoint - t0), (long long)(t_kill - t_checkpoint),
            (long long)json_array_size(before) / 4, (long long)(t_restart - t_kill),
            (long long)(t_done - t_restart), (long long)resumed,
            (long long)json_integer_value(json_object_get(job, "attempts")));
    json_decref(before);
    json_decref(after);
    json_decref(ref_rows);
    json_decref(job);
    json_decref(ref_job);
    stop_server(&s);
}

Test(resume, sigterm_checkpoints_the_running_job_requeues_it_and_the_next_start_resumes_it) {
    server s = start_server();
    /* No periodic checkpoints: whatever the restart resumes from, the shutdown wrote. */
    int64_t id = submit(&s, FASHION_SPEC(6, 0));
    int64_t ref = submit(&s, FASHION_SPEC(6, 0)); /* queued behind it on the same device */
    int64_t deadline = now_ms() + JOB_TIMEOUT_MS;
    for (;;) {
        json_t *job = job_now(&s, id);
        double progress = json_number_value(json_object_get(job, "progress"));
        bool running = strcmp(str(job, "state"), "running") == 0;
        cr_assert(running || strcmp(str(job, "state"), "queued") == 0, "state %s",
                  str(job, "state"));
        json_decref(job);
        if (running && progress >= 0.2) break; /* inside the second epoch */
        cr_assert_lt(now_ms(), deadline, "the job did not get going");
        usleep(20000);
    }
    stop_server(&s); /* SIGTERM; exits 0 */

    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'queued'"
                                " AND attempts = 1 AND started_at IS NULL AND progress = 0", id),
                 1, "the running job is queued again, its attempt counted");
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM jobs WHERE id = ?1 AND state = 'queued'"
                                " AND attempts = 0", ref),
                 1, "the queued job was not started by a stopping server");
    size_t len, data_start;
    char *file = data_file(&s, id, &len);
    cr_assert_not_null(file, "the shutdown checkpointed the running job");
    json_t *header = test_safetensors_header(file, len, &data_start);
    cr_assert_not_null(json_object_get(header, "layers.2.weight"));
    json_t *meta = json_object_get(header, "__metadata__");
    int64_t step = atoll(str(meta, "step"));
    int64_t epoch = atoll(str(meta, "epoch")), in_epoch = atoll(str(meta, "epoch_step"));
    cr_assert_geq(step, FASHION_STEPS_PER_EPOCH / 5, "stopped past 20 %% of the run: step %lld",
                  (long long)step);
    cr_assert_eq(step, epoch * FASHION_STEPS_PER_EPOCH + in_epoch);
    json_decref(header);
    free(file);

    s = start_server();
    json_t *job = wait_succeeded(&s, id);
    json_t *result = json_object_get(job, "result");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_step")), step,
                 "it resumed where the shutdown stopped it");
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_epoch")), epoch);
    json_t *ref_job = wait_succeeded(&s, ref);
    cr_assert_eq(json_integer_value(json_object_get(ref_job, "attempts")), 1);
    cr_assert_str_eq(str(result, "weights_sha256"),
                     str(json_object_get(ref_job, "result"), "weights_sha256"),
                     "a stop and resume mid-epoch is bit-identical to no stop");
    json_t *rows = metric_rows(&s, id), *ref_rows = metric_rows(&s, ref);
    assert_every_epoch_once(rows, 6);
    assert_steps_as_uninterrupted(&s, id, ref, 6);
    size_t i;
    json_t *m;
    json_array_foreach(rows, i, m) {
        json_t *same = metric_row(ref_rows, str(m, "name"), json_integer_value(json_object_get(m, "step")));
        cr_assert_eq(json_real_value(json_object_get(m, "value")),
                     json_real_value(json_object_get(same, "value")), "%s of epoch %lld",
                     str(m, "name"), (long long)json_integer_value(json_object_get(m, "step")));
    }
    json_decref(rows);
    json_decref(ref_rows);
    json_decref(job);
    json_decref(ref_job);
    stop_server(&s);
}

/* A small character GPT on a text under the datasets directory: 400 steps with a checkpoint
 * every 25, long enough that a kill lands mid-run on any device here. */
#define GPT_SPEC(device)                                                                           \
    "{\"kind\":\"train\",\"name\":\"gpt\",\"device\":\"" device "\",\"seed\":3,\"model\":{\"type\":\"gpt\"," \
    "\"n_layer\":2,\"n_head\":2,\"d_model\":32,\"context\":16},\"data\":{\"source\":\"text\","      \
    "\"path\":\"words.txt\"},\"optimizer\":{\"type\":\"adamw\",\"lr\":0.003},\"batch_size\":8,"       \
    "\"steps\":400,\"log_every\":10,\"eval_every\":100,\"eval_windows\":16,\"checkpoint_every\":25}"

static void write_words(const server *s) {
    char path[400];
    snprintf(path, sizeof path, "%s/datasets", s->data);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/datasets/words.txt", s->data);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    static const char *const words[] = {"alpha", "beta", "gamma", "delta", "kernel", "tensor", "queue"};
    for (int i = 0; i < 1500; i++) fprintf(f, "%s%s", words[(i * 7 + i / 5) % 7], i % 9 == 8 ? ".\n" : " ");
    fclose(f);
}

/* kill -9 while the gpt trains, after its first checkpoint; the next start resumes it from its
 * last checkpoint to the weights of a run never killed, every metric once. */
static void check_gpt_kill(const char *spec) {
    server s = start_server();
    write_words(&s);
    int64_t id = submit(&s, spec);
    int64_t deadline = now_ms() + JOB_TIMEOUT_MS;
    int status;
    while ((status = status_of(&s, "GET", id, "/checkpoint")) != 200) {
        cr_assert_eq(status, 404);
        cr_assert_lt(now_ms(), deadline, "no checkpoint was written");
        usleep(10000);
    }
    json_t *job = job_now(&s, id);
    cr_assert_str_eq(str(job, "state"), "running", "still running when it is killed");
    json_decref(job);
    kill_server(&s);

    s = start_server();
    int64_t ref = submit(&s, spec);
    job = wait_succeeded(&s, id);
    json_t *result = json_object_get(job, "result");
    int64_t resumed = json_integer_value(json_object_get(result, "resumed_from_step"));
    cr_assert(resumed >= 25 && resumed < 400 && resumed % 25 == 0, "resumed_from_step %lld", (long long)resumed);
    cr_assert_geq(json_integer_value(json_object_get(job, "attempts")), 2);
    json_t *ref_job = wait_succeeded(&s, ref);
    cr_assert_str_eq(str(result, "weights_sha256"), str(json_object_get(ref_job, "result"), "weights_sha256"),
                     "resume is bit-identical to the uninterrupted run");
    json_t *rows = metric_rows(&s, id), *ref_rows = metric_rows(&s, ref);
    cr_assert_eq(json_array_size(rows), json_array_size(ref_rows), "every metric once");
    size_t i;
    json_t *m;
    json_array_foreach(rows, i, m) {
        if (!strcmp(str(m, "name"), "tokens_per_second")) continue; /* a timing */
        json_t *same = metric_row(ref_rows, str(m, "name"), json_integer_value(json_object_get(m, "step")));
        cr_assert_not_null(same);
        cr_assert_eq(json_real_value(json_object_get(m, "value")), json_real_value(json_object_get(same, "value")),
                     "%s at step %lld", str(m, "name"), (long long)json_integer_value(json_object_get(m, "step")));
    }
    json_decref(rows);
    json_decref(ref_rows);
    json_decref(job);
    json_decref(ref_job);
    stop_server(&s);
}

Test(resume, a_gpt_killed_mid_run_resumes_bit_identically_on_pocl) { check_gpt_kill(GPT_SPEC("cpu")); }

Test(resume, a_gpt_killed_mid_run_resumes_bit_identically_on_the_host) { check_gpt_kill(GPT_SPEC("host")); }
