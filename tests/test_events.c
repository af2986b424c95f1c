/* test_events.c: a job's log as text and the server-sent event streams, of one job and of all
 * jobs: order, replay from Last-Event-ID, the reset when that id is gone, many clients at once,
 * clients that vanish mid-job, and streams still open at shutdown. */
#include "paragond_harness.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(events, .init = harness_setup, .fini = harness_teardown);

#define STREAM_TIMEOUT_MS 60000 /* the longest wait for one event or the end of a stream */

typedef struct sse_event {
    char type[32]; /* "state", "metric", "progress", "log", "reset" */
    uint64_t id;   /* 0 when the event had none */
    json_t *data;
} sse_event;

/* Opens path as an event stream and checks its head. extra: one more header line, or NULL. */
static http_stream *open_events(const server *s, const char *path, const char *extra) {
    const char *headers[] = {extra, NULL};
    http_stream *st = http_stream_open(s->port, path, extra ? headers : NULL, HTTP_TIMEOUT_MS);
    cr_assert_not_null(st, "GET %s: %s", path, http_last_error());
    const http_response *h = http_stream_head(st);
    cr_assert_eq(h->status, 200, "GET %s: %d", path, h->status);
    char v[128];
    cr_assert_not_null(http_header(h, "Content-Type", v, sizeof v));
    cr_assert_str_eq(v, "text/event-stream");
    cr_assert_not_null(http_header(h, "Cache-Control", v, sizeof v));
    cr_assert_str_eq(v, "no-cache");
    return st;
}

/* The next event of the stream; false when the stream ended. Comments (": ping") and "retry"
 * blocks are skipped; a stream that neither sends nor ends in time fails the test. */
static bool next_event(http_stream *st, sse_event *e) {
    memset(e, 0, sizeof *e);
    for (;;) {
        size_t len;
        const char *data = http_stream_data(st, &len);
        const char *end = strstr(data, "\n\n");
        if (!end) {
            int n = http_stream_read(st, STREAM_TIMEOUT_MS);
            cr_assert_geq(n, 0, "event stream: %s", http_last_error());
            if (n == 0) {
                cr_assert_eq(len, 0, "the stream ended inside an event: '%s'", data);
                return false;
            }
            continue;
        }
        size_t block = (size_t)(end - data) + 2;
        char *text = strndup(data, block - 2);
        http_stream_consume(st, block);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "event: ", 7) == 0) snprintf(e->type, sizeof e->type, "%s", line + 7);
            else if (strncmp(line, "id: ", 4) == 0) e->id = strtoull(line + 4, NULL, 10);
            else if (strncmp(line, "data: ", 6) == 0) {
                cr_assert_null(e->data, "one data line per event");
                e->data = json_loads(line + 6, 0, NULL);
                cr_assert_not_null(e->data, "event data is JSON: %s", line + 6);
            } else {
                cr_assert(line[0] == ':' || strncmp(line, "retry: ", 7) == 0, "line '%s'", line);
            }
        }
        free(text);
        if (e->type[0] || e->data) {
            cr_assert(e->type[0] && e->data && e->id > 0, "an event has a type, an id and data");
            return true;
        }
    }
}

/* Every event up to the end of the stream. */
static size_t read_to_end(http_stream *st, sse_event *out, size_t cap) {
    size_t n = 0;
    sse_event e;
    while (next_event(st, &e)) {
        cr_assert_lt(n, cap, "more events than expected");
        out[n++] = e;
    }
    return n;
}

static void free_events(sse_event *evs, size_t n) {
    for (size_t i = 0; i < n; i++) json_decref(evs[i].data);
}

/* The job id an event is about: state and reset events carry the job object ("id"), and end
 * the job's id and final state. */
static int64_t event_job(const sse_event *e) {
    const char *key = strcmp(e->type, "state") == 0 || strcmp(e->type, "reset") == 0 || strcmp(e->type, "end") == 0
                          ? "id"
                          : "job_id";
    return json_integer_value(json_object_get(e->data, key));
}

static int state_rank(const char *state) {
    static const char *const order[] = {"queued", "running", "succeeded"};
    for (int i = 0; i < 3; i++)
        if (state && strcmp(state, order[i]) == 0) return i;
    cr_assert_fail("unexpected state %s", state ? state : "(none)");
    return -1;
}

/* The events of one job, as a stream about it delivers them: state changes only forward
 * (queued, running, succeeded, each at most once), ids increasing after the first (a snapshot
 * carries the id before the events that follow it), metrics and logs of this job only, and
 * the final state last, or, on the job's own stream, right before `end`. Returns how many states
 * and metrics it saw. */
static void check_job_events(const sse_event *evs, size_t n, int64_t id, size_t *states,
                             size_t *metrics) {
    cr_assert_gt(n, 0, "the stream sent events");
    *states = *metrics = 0;
    int rank = -1;
    for (size_t i = 0; i < n; i++) {
        const sse_event *e = &evs[i];
        cr_assert_eq(event_job(e), id, "event %zu (%s) is about job %lld", i, e->type,
                     (long long)id);
        if (i > 0 && strcmp(e->type, "end")) cr_assert_gt(e->id, evs[i - 1].id, "ids increase");
        if (strcmp(e->type, "state") == 0) {
            int r = state_rank(str(e->data, "state"));
            cr_assert_gt(r, rank, "states move forward: %s after rank %d", str(e->data, "state"),
                         rank);
            rank = r;
            (*states)++;
        } else if (strcmp(e->type, "metric") == 0) {
            cr_assert(str(e->data, "name") && json_is_integer(json_object_get(e->data, "step")) &&
                          json_is_number(json_object_get(e->data, "value")),
                      "a metric has name, step and value");
            (*metrics)++;
        } else if (strcmp(e->type, "log") == 0) {
            cr_assert(str(e->data, "line") && str(e->data, "level") && str(e->data, "time"));
            cr_assert_gt(json_integer_value(json_object_get(e->data, "seq")), 0);
        } else if (strcmp(e->type, "end") == 0) {
            cr_assert(i > 0 && i == n - 1, "end closes the stream, after the final state");
            cr_assert_eq(e->id, evs[i - 1].id, "end carries the final state's id");
            cr_assert_str_eq(str(e->data, "state"), str(evs[i - 1].data, "state"));
        } else {
            cr_assert_str_eq(e->type, "progress", "unexpected event type");
            double p = json_number_value(json_object_get(e->data, "progress"));
            cr_assert(p >= 0 && p <= 1, "progress %g", p);
        }
    }
    size_t last = n - 1 - (strcmp(evs[n - 1].type, "end") == 0);
    cr_assert_str_eq(evs[last].type, "state", "the last event is the final state");
    cr_assert_str_eq(str(evs[last].data, "state"), "succeeded");
}

/* Index of the first log event from `from` on whose line starts with prefix; n when none. */
static size_t find_log(const sse_event *evs, size_t n, size_t from, const char *prefix) {
    for (size_t i = from; i < n; i++)
        if (strcmp(evs[i].type, "log") == 0 &&
            strncmp(str(evs[i].data, "line"), prefix, strlen(prefix)) == 0)
            return i;
    return n;
}

#define SHORT_EPOCHS 20
#define MAX_EVENTS 4096

Test(events, a_job_event_stream_follows_xor_training_to_its_end) {
    server s = start_server();
    http_stream *all = open_events(&s, "/api/v1/events", NULL);
    int64_t id = submit_xor(&s, SHORT_EPOCHS, NULL);
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    /* A client that connects now: it starts from the job's current state, whatever that is. */
    http_stream *live = open_events(&s, path, NULL);

    /* The all-jobs stream opened before the job existed: its first event is the job queued. */
    sse_event e;
    cr_assert(next_event(all, &e));
    cr_assert_str_eq(e.type, "log", "the job's log starts with its placement");
    cr_assert_eq(event_job(&e), id);
    cr_assert(strncmp(str(e.data, "line"), "placed on ", 10) == 0, "%s", str(e.data, "line"));
    uint64_t placed_id = e.id;
    json_decref(e.data);
    cr_assert(next_event(all, &e));
    cr_assert_str_eq(e.type, "state");
    cr_assert_str_eq(str(e.data, "state"), "queued");
    cr_assert_eq(event_job(&e), id);
    cr_assert_gt(e.id, placed_id);
    json_decref(e.data);
    http_stream_close(all);

    /* Replayed from before the placement (Last-Event-ID), the job's stream is its whole life, in
     * order, whatever the timing: queued, running, every metric, succeeded, then the end. */
    char last[64];
    snprintf(last, sizeof last, "Last-Event-ID: %llu", (unsigned long long)(placed_id - 1));
    http_stream *replay = open_events(&s, path, last);
    sse_event *evs = calloc(MAX_EVENTS, sizeof *evs);
    size_t n = read_to_end(replay, evs, MAX_EVENTS);
    http_stream_close(replay);
    size_t states, metrics;
    check_job_events(evs, n, id, &states, &metrics);
    cr_assert_str_eq(evs[n - 1].type, "end", "a job's stream ends with end");
    cr_assert_eq(states, 3, "queued, running, succeeded");
    cr_assert_eq(metrics, XOR_METRICS_PER_EPOCH * SHORT_EPOCHS, "an epoch's figures and its step's, every epoch");
    cr_assert_eq(evs[0].id, placed_id, "the replay starts right after Last-Event-ID");
    size_t at = find_log(evs, n, 0, "placed on ");
    cr_assert_eq(at, 0);
    at = find_log(evs, n, at, "started on ");
    cr_assert_lt(at, n, "a 'started' line");
    cr_assert(strstr(str(evs[at].data, "line"), "(attempt 1)"), "%s", str(evs[at].data, "line"));
    at = find_log(evs, n, at, "training xor on ");
    cr_assert_lt(at, n, "the engine's first line");
    at = find_log(evs, n, at, "done: ");
    cr_assert_lt(at, n, "the engine's last line");
    at = find_log(evs, n, at, "succeeded (attempt 1)");
    cr_assert_eq(at, n - 3, "the scheduler's last line comes right before the final state");
    free_events(evs, n);

    /* The live client saw a suffix of the same: a current state first, the final state last. */
    n = read_to_end(live, evs, MAX_EVENTS);
    http_stream_close(live);
    check_job_events(evs, n, id, &states, &metrics);
    cr_assert_str_eq(evs[0].type, "state", "a stream starts with the job's current state");
    cr_assert_str_eq(evs[n - 1].type, "end");
    free_events(evs, n);
    free(evs);
    stop_server(&s);
}

Test(events, a_job_log_is_text_and_a_finished_jobs_stream_is_its_final_state) {
    server s = start_server();
    /* The job's record reads succeeded a moment before the scheduler writes the log's last line;
     * its final state event comes after that line. Heard on the all-jobs stream, opened before the
     * job exists, it says the log is whole. */
    http_stream *jobs = open_events(&s, "/api/v1/events", NULL);
    int64_t id = submit_xor(&s, 5, NULL);
    for (bool ended = false; !ended;) {
        sse_event e;
        cr_assert(next_event(jobs, &e), "the all-jobs stream does not end");
        const char *state = str(e.data, "state");
        ended = strcmp(e.type, "state") == 0 && event_job(&e) == id &&
                (!strcmp(state, "succeeded") || !strcmp(state, "failed") || !strcmp(state, "cancelled"));
        json_decref(e.data);
    }
    http_stream_close(jobs);
    json_t *job = wait_succeeded(&s, id);
    char device[64];
    snprintf(device, sizeof device, "%s", str(job, "device"));
    json_decref(job);

    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs", (long long)id);
    http_response r = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char v[128];
    cr_assert_not_null(http_header(&r, "Content-Type", v, sizeof v));
    cr_assert_str_eq(v, "text/plain; charset=utf-8");
    /* One line per entry: "<ISO time> <level> <text>". */
    char *lines[64];
    size_t n = 0;
    char *all = strdup(r.body);
    for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
        cr_assert_lt(n, 64);
        cr_assert_gt(strlen(line), 31, "line '%s'", line);
        cr_assert(line[4] == '-' && line[10] == 'T' && line[19] == '.' && line[23] == 'Z' &&
                      line[24] == ' ',
                  "line '%s' starts with its ISO time", line);
        cr_assert(strncmp(line + 25, "info  ", 6) == 0 || strncmp(line + 25, "warn  ", 6) == 0 ||
                      strncmp(line + 25, "error ", 6) == 0,
                  "then its level: '%s'", line);
        lines[n++] = line + 31;
    }
    cr_assert_eq(r.body[strlen(r.body) - 1], '\n');
    const char *want[] = {"placed on ", "started on ", "training xor on ", "epoch 5/5: ",
                          "done: ", "succeeded (attempt 1)"};
    size_t k = 0;
    for (size_t i = 0; i < n && k < 6; i++)
        if (strncmp(lines[i], want[k], strlen(want[k])) == 0) k++;
    cr_assert_eq(k, 6, "placed, started, the engine's lines, succeeded, in order:\n%s", r.body);
    cr_assert(strstr(lines[0], device) && strstr(lines[1], device), "%s", r.body);
    cr_assert_str_eq(lines[n - 1], "succeeded (attempt 1)");

    /* ?after=SEQ: the lines after line SEQ. */
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs?after=2", (long long)id);
    http_response tail = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(tail.status, 200);
    const char *third = r.body;
    for (int i = 0; i < 2; i++) third = strchr(third, '\n') + 1;
    cr_assert_str_eq(tail.body, third);
    http_response_free(&tail);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs?after=%zu", (long long)id, n);
    tail = request(&s, "GET", path, NULL, NULL);
    cr_assert_eq(tail.status, 200);
    cr_assert_str_eq(tail.body, "");
    http_response_free(&tail);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM logs WHERE job_id = ?1", id), (int64_t)n);
    cr_assert_eq(count_rows(&s, "SELECT max(seq) FROM logs WHERE job_id = ?1", id), (int64_t)n);
    free(all);
    http_response_free(&r);

    /* Bad requests. */
    char after_last[96];
    job_url(after_last, sizeof after_last, id, "/logs?after=last");
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    const refusal cases[] = {
        {"GET", after_last, NULL, NULL, 400, "invalid_parameter", .field = "after"},
        {"GET", "/api/v1/jobs/999/logs", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", "/api/v1/jobs/999/events", NULL, NULL, 404, "not_found", .field = NULL},
        {"GET", "/api/v1/jobs/x/logs", NULL, NULL, 404, "not_found", .field = NULL},
        {"POST", path, json_headers, "{}", 405, "method_not_allowed", .field = NULL},
    };
    assert_refusals(&s, cases, sizeof cases / sizeof *cases);

    /* A finished job's stream is its final state, then end. */
    sse_event evs[4];
    http_stream *st = open_events(&s, path, NULL);
    size_t got = read_to_end(st, evs, 4);
    http_stream_close(st);
    cr_assert_eq(got, 2, "two events");
    cr_assert_str_eq(evs[1].type, "end");
    cr_assert_str_eq(str(evs[1].data, "state"), "succeeded");
    cr_assert_eq(event_job(&evs[1]), id);
    cr_assert_str_eq(evs[0].type, "state");
    cr_assert_str_eq(str(evs[0].data, "state"), "succeeded");
    cr_assert_eq(event_job(&evs[0]), id);
    cr_assert(json_is_object(json_object_get(evs[0].data, "result")), "the whole job object");
    free_events(evs, got);
    /* A client resuming from an id the server no longer holds gets a reset to the same. */
    st = open_events(&s, path, "Last-Event-ID: 1");
    got = read_to_end(st, evs, 4);
    http_stream_close(st);
    cr_assert_eq(got, 2);
    cr_assert_str_eq(evs[0].type, "reset");
    cr_assert_str_eq(evs[1].type, "end");
    cr_assert_str_eq(str(evs[0].data, "state"), "succeeded");
    free_events(evs, got);
    stop_server(&s);
}

#define LONG_EPOCHS 3000 /* about 12000 metric events: more than the ring holds */

Test(events, an_event_client_that_vanishes_does_not_stop_the_job) {
    server s = start_server();
    int64_t id = submit_xor(&s, LONG_EPOCHS, NULL);
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", (long long)id);
    /* One client hangs up mid-training, once metrics flow; another before reading anything. */
    http_stream *a = open_events(&s, path, NULL);
    http_stream_close(open_events(&s, path, NULL));
    sse_event e;
    for (;;) {
        cr_assert(next_event(a, &e), "the stream ends only after metrics");
        bool metric = strcmp(e.type, "metric") == 0;
        json_decref(e.data);
        if (metric) break;
    }
    http_stream_close(a);

    json_decref(wait_succeeded(&s, id));
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics?name=loss", (long long)id);
    json_t *m = get_json(&s, path, 200);
    cr_assert_eq(json_array_size(json_object_get(m, "metrics")), LONG_EPOCHS, "every epoch ran");
    json_decref(m);

    /* Shutdown ends the streams still open (an idle one included) and exits cleanly. */
    http_stream *idle = open_events(&s, "/api/v1/events", NULL);
    cr_assert_gt(http_stream_read(idle, HTTP_TIMEOUT_MS), 0, "the stream has begun");
    stop_server(&s);
    cr_assert(!next_event(idle, &e), "the stream ended at shutdown");
    http_stream_close(idle);
}

Test(events, the_all_jobs_stream_delivers_every_jobs_events_to_every_client) {
    server s = start_server();
    /* More idle streams than the HTTP pool has threads (4): parked, they hold none. */
    enum { CLIENTS = 6 };
    http_stream *st[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) st[i] = open_events(&s, "/api/v1/events", NULL);
    json_t *v = get_json(&s, "/healthz", 200);
    json_decref(v);

    int64_t ids[2] = {submit_xor(&s, 10, NULL), submit_xor(&s, 10, NULL)};
    sse_event *evs = calloc(MAX_EVENTS, sizeof *evs);
    for (int c = 0; c < CLIENTS; c++) {
        /* Read until both jobs have succeeded; then each job's events read as its own stream. */
        size_t n = 0;
        int done = 0;
        while (done < 2) {
            cr_assert_lt(n, MAX_EVENTS);
            cr_assert(next_event(st[c], &evs[n]), "the all-jobs stream does not end");
            const sse_event *e = &evs[n++];
            cr_assert_neq(strcmp(e->type, "reset"), 0, "nothing was missed");
            if (strcmp(e->type, "state") == 0 && strcmp(str(e->data, "state"), "succeeded") == 0)
                done++;
        }
        for (int j = 0; j < 2; j++) {
            sse_event *mine = calloc(n, sizeof *mine);
            size_t m = 0;
            for (size_t i = 0; i < n; i++) {
                int64_t job = event_job(&evs[i]);
                cr_assert(job == ids[0] || job == ids[1], "events of the two jobs only");
                if (job == ids[j]) mine[m++] = evs[i];
            }
            size_t states, metrics;
            check_job_events(mine, m, ids[j], &states, &metrics);
            cr_assert_eq(states, 3, "client %d, job %lld: queued, running, succeeded", c,
                         (long long)ids[j]);
            cr_assert_eq(metrics, XOR_METRICS_PER_EPOCH * 10);
            free(mine);
        }
        free_events(evs, n);
        http_stream_close(st[c]);
    }
    free(evs);
    stop_server(&s);
}
