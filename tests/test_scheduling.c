/* test_scheduling.c: how jobs wait (issue 30): a device takes its queued jobs highest priority
 * first; a queued job of higher priority stops the train job running on its device at its next
 * step, checkpointed, which is queued again and ends with the weights of an uninterrupted run; a
 * queued job says where it stands and behind what; an "auto" job backfills the host while the
 * OpenCL device is busy; a bad priority is a 400 naming the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paragond_harness.h"
#include "admission.h"
#include "store.h"

TestSuite(scheduling, .init = harness_setup, .fini = harness_teardown);

static int64_t submit_sleep(const server *s, double seconds, const char *device, int priority, const char *name) {
    char body[256];
    snprintf(body, sizeof body, "{\"kind\":\"sleep\",\"seconds\":%g,\"device\":\"%s\",\"priority\":%d,\"name\":\"%s\"}",
             seconds, device, priority, name);
    return submit(s, body);
}

/* The job's runs' first start time as the API gives it ("" before it ran). */
static char *first_start(const server *s, int64_t id) {
    json_t *job = job_now(s, id);
    json_t *run = json_array_get(json_object_get(job, "runs"), 0);
    char *t = strdup(run ? str(run, "started_at") : "");
    json_decref(job);
    return t;
}

/* Runs spec once, uninterrupted, into sha (its weights' SHA-256); the job's id. */
static int64_t uninterrupted_sha(const server *s, const char *spec, char sha[65]) {
    int64_t id = submit(s, spec);
    json_t *done = wait_succeeded(s, id);
    snprintf(sha, 65, "%s", str(json_object_get(done, "result"), "weights_sha256"));
    json_decref(done);
    return id;
}

/* Waits (bounded, 10 s) until job id has made `fraction` of its progress. */
static void wait_progress(const server *s, int64_t id, double fraction) {
    for (int tries = 0; tries < 2000; tries++) {
        json_t *now = job_now(s, id);
        double progress = json_real_value(json_object_get(now, "progress"));
        json_decref(now);
        if (progress >= fraction) return;
        usleep(5000);
    }
}

Test(scheduling, a_device_takes_its_queued_jobs_highest_priority_first) {
    server s = start_server();
    int64_t hold = submit_sleep(&s, 0.6, "host", 0, "hold");
    json_decref(wait_state(&s, hold, "running", JOB_TIMEOUT_MS));
    int64_t low = submit_sleep(&s, 0.05, "host", 0, "low");
    int64_t high = submit_sleep(&s, 0.05, "host", 7, "high");
    json_t *job = job_now(&s, high);
    cr_assert_eq(json_integer_value(json_object_get(job, "priority")), 7);
    json_t *queue = json_object_get(job, "queue");
    cr_assert_eq(json_integer_value(json_object_get(queue, "position")), 1, "the higher one is first: %s",
                 json_dumps(job, 0));
    json_decref(job);
    job = job_now(&s, low);
    queue = json_object_get(job, "queue");
    cr_assert_eq(json_integer_value(json_object_get(queue, "position")), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(queue, "running"), "id")), hold);
    char want[64];
    snprintf(want, sizeof want, "queued 2nd behind job %lld (hold, ", (long long)hold);
    cr_assert(strstr(str(queue, "reason"), want), "%s", str(queue, "reason"));
    json_decref(job);
    json_decref(wait_succeeded(&s, low));
    json_decref(wait_succeeded(&s, high));
    char *t_low = first_start(&s, low), *t_high = first_start(&s, high);
    cr_assert_lt(strcmp(t_high, t_low), 0, "high started %s, before low at %s", t_high, t_low);
    free(t_low);
    free(t_high);
    /* a job of another kind is not stopped for a higher one: the sleep ran once */
    job = job_now(&s, hold);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 1);
    json_decref(job);
    stop_server(&s);
}

Test(scheduling, a_higher_priority_job_preempts_a_train_job_which_resumes_to_the_same_weights) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":3000,\"checkpoint_every\":100,\"device\":\"host\"");
    char sha[65];
    uninterrupted_sha(&s, spec, sha);

    int64_t id = submit(&s, spec);
    free(spec);
    wait_progress(&s, id, 0.1); /* past a checkpoint or two */
    int64_t urgent = submit_sleep(&s, 0.05, "host", 10, "urgent");
    json_decref(wait_succeeded(&s, urgent));
    json_t *job = wait_succeeded(&s, id);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2, "stopped once, run again");
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(job, "result"), "resumed_from_epoch")), 0,
                 "resumed from the checkpoint it wrote when it stopped");
    cr_assert_str_eq(str(json_object_get(job, "result"), "weights_sha256"), sha, "an uninterrupted run's weights");
    json_decref(job);
    char url[128];
    http_response r = request(&s, "GET", job_url(url, sizeof url, id, "/logs"), NULL, NULL);
    char want[96];
    snprintf(want, sizeof want, "preempted by job %lld of higher priority", (long long)urgent);
    cr_assert(strstr(r.body, want), "%s", r.body);
    http_response_free(&r);
    char *t_urgent = first_start(&s, urgent);
    json_t *again = job_now(&s, id);
    const char *second = str(json_array_get(json_object_get(again, "runs"), 1), "started_at");
    cr_assert_lt(strcmp(t_urgent, second), 0, "the urgent job ran before the train job's second run");
    free(t_urgent);
    json_decref(again);
    stop_server(&s);
}

/* A cancelled train job resumed (POST /resume) continues from the checkpoint it stopped at to the
 * weights of an uninterrupted run; a job that is not cancelled does not resume. */
Test(scheduling, a_cancelled_job_resumes_from_its_checkpoint_to_the_same_weights) {
    server s = start_server();
    char *spec = spec_with("\"epochs\":300", "\"epochs\":3000,\"checkpoint_every\":100,\"device\":\"host\"");
    char sha[65];
    int64_t ref = uninterrupted_sha(&s, spec, sha);
    char url[128];
    http_response r = request(&s, "POST", job_url(url, sizeof url, ref, "/resume"), NULL, "");
    assert_error(&r, 409, "conflict", NULL);
    cr_assert(strstr(r.body, "only a cancelled job resumes"), "%s", r.body);
    http_response_free(&r);
    r = request(&s, "POST", "/api/v1/jobs/999999/resume", NULL, "");
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);

    int64_t id = submit(&s, spec);
    free(spec);
    wait_progress(&s, id, 0.1);
    cr_assert_eq(status_of(&s, "POST", id, "/cancel"), 202);
    json_decref(wait_state(&s, id, "cancelled", JOB_TIMEOUT_MS));
    r = request(&s, "POST", job_url(url, sizeof url, id, "/resume"), NULL, "");
    cr_assert_eq(r.status, 200, "%ld: %s", r.status, r.body);
    json_t *job = parse_body(&r);
    http_response_free(&r);
    cr_assert(!strcmp(str(job, "state"), "queued") || !strcmp(str(job, "state"), "running"), "%s", str(job, "state"));
    cr_assert(json_is_null(json_object_get(job, "error")), "its cancel's error is gone");
    json_decref(job);
    job = wait_succeeded(&s, id);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(job, "result"), "resumed_from_epoch")), 0);
    cr_assert_str_eq(str(json_object_get(job, "result"), "weights_sha256"), sha, "an uninterrupted run's weights");
    json_decref(job);
    r = request(&s, "GET", job_url(url, sizeof url, id, "/logs"), NULL, NULL);
    cr_assert(strstr(r.body, "resumed on request: queued again on host; it continues from its last checkpoint"), "%s",
              r.body);
    http_response_free(&r);
    stop_server(&s);
}

/* While the OpenCL device is busy, an "auto" job backfills the host instead of waiting there. */
Test(scheduling, an_auto_job_backfills_the_host_while_the_opencl_device_is_busy) {
    server s = start_server();
    int64_t busy = submit_sleep(&s, 600, "cpu", 0, "long");
    json_decref(wait_state(&s, busy, "running", JOB_TIMEOUT_MS));
    json_t *spec = json_pack("{s:s, s:s, s:s, s:s}", "kind", "inet", "device", "auto", "language", "pgl",
                             "program", "main = 6 * 7");
    char *text = json_dumps(spec, 0);
    json_decref(spec);
    int64_t t0 = now_ms();
    int64_t id = submit(&s, text);
    free(text);
    json_t *job = wait_succeeded(&s, id);
    int64_t took = now_ms() - t0;
    cr_assert_str_eq(str(job, "device"), "host", "backfilled the idle host: %s", json_dumps(job, 0));
    cr_assert_str_eq(str(job, "device_requested"), "auto");
    json_decref(job);
    fprintf(stderr, "scheduling: a pgl program beside a busy device finished %lld ms after its submission\n",
            (long long)took);
    cr_assert_eq(status_of(&s, "POST", busy, "/cancel"), 202);
    json_decref(wait_state(&s, busy, "cancelled", JOB_TIMEOUT_MS));
    stop_server(&s);
}

/* ... and once the device's job has ended, the next one goes there again at once: the cost
 * model's view of the device's queue forgets a run at its end (it had counted the run's whole
 * estimate for up to 100 ms after, and a job submitted then went to the host). */
Test(scheduling, a_job_placed_just_after_a_run_ends_finds_its_device_idle) {
    server s = start_server();
    static const char spec[] = "{\"kind\":\"inet\",\"device\":\"auto\",\"language\":\"pgl\",\"program\":\"main = 6 * 7\"}";
    for (int k = 0; k < 3; k++) {
        int64_t first = submit(&s, spec);
        for (int i = 0; i < 100000; i++) { /* asked without pausing: the next one comes at once */
            json_t *job = job_now(&s, first);
            bool done = !strcmp(str(job, "state"), "succeeded");
            json_decref(job);
            if (done) break;
        }
        int64_t id = submit(&s, spec);
        json_t *job = job_now(&s, id);
        json_t *est = json_object_get(job, "estimate");
        cr_assert_str_neq(str(job, "device"), "host", "the OpenCL device was idle: %s", json_dumps(est, 0));
        cr_assert_eq(json_number_value(json_object_get(est, "queue_seconds")), 0, "nothing queued there");
        json_decref(job);
        json_decref(wait_succeeded(&s, id));
    }
    stop_server(&s);
}

Test(scheduling, a_bad_priority_is_refused_naming_the_field) {
    server s = start_server();
    post_expect(&s, "{\"kind\":\"sleep\",\"seconds\":0.1,\"priority\":\"high\"}", 400, "invalid_spec", "priority");
    post_expect(&s, "{\"kind\":\"sleep\",\"seconds\":0.1,\"priority\":2.5}", 400, "invalid_spec", "priority");
    post_expect(&s, "{\"kind\":\"sleep\",\"seconds\":0.1,\"priority\":1001}", 400, "invalid_spec", "priority");
    stop_server(&s);
}

/* Milliseconds since 1970 of a time the API gives (the store's form), asserted one. */
static int64_t iso_ms(const char *t) {
    int64_t ms = 0;
    cr_assert(pgn_utc_ms(t, &ms), "a time: %s", t);
    return ms;
}

/* A train job of a shape that ran on a device before takes its estimate there from that run: an
 * epoch as long as that run's (another seed, length or learning rate is the same shape). */
Test(scheduling, a_train_jobs_estimate_comes_from_an_earlier_run_of_its_shape) {
    server s = start_server();
    char *first = spec_with("\"epochs\":300", "\"epochs\":100,\"device\":\"cpu\"");
    int64_t a = submit(&s, first);
    free(first);
    json_t *done = wait_succeeded(&s, a);
    double ran = (double)(iso_ms(str(done, "finished_at")) - iso_ms(str(done, "started_at"))) / 1000.0;
    char device[64];
    snprintf(device, sizeof device, "%s", str(done, "device"));
    json_decref(done);
    char *again = spec_with("\"epochs\":300", "\"epochs\":300,\"device\":\"cpu\"");
    char *seeded = strstr(again, "\"seed\":1");
    cr_assert_not_null(seeded);
    seeded[7] = '7'; /* another seed: the same shape */
    char *lr = strstr(again, "\"lr\":0.1");
    cr_assert_not_null(lr);
    memcpy(lr, "\"lr\":0.2", 8);
    int64_t b = submit(&s, again);
    free(again);
    json_t *job = job_now(&s, b);
    double estimate = json_number_value(json_object_get(json_object_get(job, "estimate"), "seconds"));
    cr_assert_str_eq(str(job, "device"), device);
    cr_assert_float_eq(estimate, ran * 3, ran * 3 * 1e-9, "300 epochs at the 100-epoch run's pace (%.4f s): %.4f s",
                       ran, estimate);
    json_decref(job);
    json_decref(wait_succeeded(&s, b));
    stop_server(&s);
}

/* The program two jobs run side by side or one after the other (25 million interactions). */
static const char sum_rec[] = "@main = a & @sum ~ (20 (0 a))\n"
                              "@sum = (?(((a a) @sum__C0) b) b)\n"
                              "@sum__C0 = ({c a} ({$([*2] $([+1] d)) $([*2] $([+0] b))} f))\n"
                              "  &! @sum ~ (a (b $([+] $(e f))))\n  &! @sum ~ (c (d e))\n";

static int64_t submit_sum_rec(const server *s, int64_t max_nodes) {
    json_t *spec = json_pack("{s:s, s:s, s:s, s:{s:I}}", "kind", "inet", "device", "host", "program", sum_rec,
                             "limits", "max_nodes", (json_int_t)max_nodes);
    char *body = json_dumps(spec, 0);
    int64_t id = submit(s, body);
    free(body);
    json_decref(spec);
    return id;
}

/* --jobs-per-device 2: a device runs two jobs at once while their memory estimates fit it
 * together (two sleeps overlap, and the device lists both), and one after the other when they do
 * not (two programs each allowed six tenths of the host's memory by their max_nodes). */
Test(scheduling, a_device_runs_several_jobs_at_once_while_its_memory_holds_them) {
    const char *extra[] = {"--jobs-per-device", "2", NULL};
    int err_fd;
    server s = start_server_with(extra, "127.0.0.1", &err_fd);
    int64_t a = submit_sleep(&s, 1.5, "host", 0, "first"), b = submit_sleep(&s, 1.5, "host", 0, "second");
    /* the queue as the cost model counts it: the second starts at once in the free slot, a third
     * when the first of them ends (not after both, as on a device running one at a time) */
    int64_t c = submit_sleep(&s, 1.5, "host", 0, "third");
    double waits[3];
    for (int k = 0; k < 3; k++) {
        json_t *job = job_now(&s, k == 0 ? a : k == 1 ? b : c);
        waits[k] = json_number_value(json_object_get(json_object_get(job, "estimate"), "queue_seconds"));
        json_decref(job);
    }
    cr_assert_eq(waits[0], 0, "the first had an empty device");
    cr_assert_eq(waits[1], 0, "the second had a slot of its own: %g", waits[1]);
    cr_assert(waits[2] > 0 && waits[2] <= 1.5, "the third waits for one sleep at most: %g", waits[2]);
    bool both = false;
    for (int i = 0; i < 300 && !both; i++) { /* bounded: 30 s */
        json_t *devices = get_json(&s, "/api/v1/devices", 200);
        json_t *list = json_is_array(devices) ? devices : json_object_get(devices, "devices");
        size_t k;
        json_t *d;
        json_array_foreach(list, k, d) {
            if (strcmp(str(d, "id"), "host")) continue;
            cr_assert_eq(json_integer_value(json_object_get(d, "jobs_at_once")), 2);
            both = json_array_size(json_object_get(d, "running_jobs")) == 2;
        }
        json_decref(devices);
        if (!both) usleep(100000);
    }
    cr_assert(both, "the host ran both sleeps at once");
    json_t *ja = wait_succeeded(&s, a), *jb = wait_succeeded(&s, b);
    cr_assert_lt(iso_ms(str(jb, "started_at")), iso_ms(str(ja, "finished_at")), "they overlapped");
    json_decref(ja);
    json_decref(jb);
    json_decref(wait_succeeded(&s, c));

    /* max_nodes for six tenths of what the host has for jobs, by the estimate both the admission
     * and the runners judge by (pgd_job_bytes), found by bisection. */
    pgn_device_info host;
    pgn_device_info_host(&host);
    double have = pgd_device_bytes(&host);
    cr_assert_gt(have, 0, "the host says what it has");
    int64_t lo = 16, hi = (int64_t)1 << 31;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        json_t *spec = json_pack("{s:s, s:s, s:s, s:{s:I}}", "kind", "inet", "device", "host", "program", sum_rec,
                                 "limits", "max_nodes", (json_int_t)mid);
        pgn_job_spec parsed;
        pgn_error err;
        cr_assert_eq(pgn_spec_parse(spec, &parsed, &err), 0, "%s", err.message);
        double need = pgd_job_bytes(&parsed, &host);
        pgn_spec_free(&parsed);
        json_decref(spec);
        if (need <= 0.6 * have) lo = mid;
        else hi = mid;
    }
    if (lo == 16) { /* a host where 16 nodes take six tenths: nothing to judge */
        close(err_fd);
        stop_server(&s);
        cr_skip_test("this host has too little memory to share");
    }
    int64_t share = lo;
    int64_t first = submit_sum_rec(&s, share), second = submit_sum_rec(&s, share);
    json_t *j1 = wait_succeeded(&s, first), *j2 = wait_succeeded(&s, second);
    cr_assert_geq(iso_ms(str(j2, "started_at")), iso_ms(str(j1, "finished_at")),
                  "the second waited for the first's memory: %s then %s", str(j1, "finished_at"),
                  str(j2, "started_at"));
    json_decref(j1);
    json_decref(j2);
    close(err_fd);
    stop_server(&s);
}
