/* events.c: owns the job event bus, the Server-Sent Events streams that read it, and the job log
 * (each line stored, then published). Publishers append pre-formatted SSE frames to a bounded
 * ring under one mutex and resume the parked streams that want them; a stream copies frames
 * from its own cursor inside libmicrohttpd's content reader and suspends its connection when it
 * has nothing to send. No publisher ever waits for a client, and no idle client holds a thread. */
#include "events.h"

#include "metrics.h" /* pgd_metrics_refused */
#include "views.h"   /* the job and log JSON of the frames */

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What one content-reader call gathers before it hands the bytes to MHD. */
#define STREAM_BATCH_BYTES (64u * 1024)
/* MHD's buffer for each stream write. */
#define STREAM_BLOCK_BYTES (16u * 1024)
/* Last published state per job, to drop repeats (two threads reporting one change); a slot is
 * shared by ids equal modulo this, and a collision only lets one repeat through. */
#define LAST_STATE_SLOTS 1024
/* Locks that order a job's events (pgd_events.order); divides LAST_STATE_SLOTS, so that a slot's
 * ids share one. */
#define ORDER_STRIPES 64
_Static_assert(LAST_STATE_SLOTS % ORDER_STRIPES == 0, "a last[] slot's ids share an order lock");
/* The series names a relayed job's last metric step is remembered by (more are sent again). */
#define RELAYED_NAMES_MAX 192
/* At shutdown, how long pgd_events_close lets the ended streams finish sending (a client that
 * reads nothing is cut off by the daemon's stop instead). */
#define DRAIN_MS 2000
/* Every stream starts with how long EventSource waits before it reconnects (ms). */
static const char retry_frame[] = "retry: 3000\n\n";
static const char ping_frame[] = ": ping\n\n";

typedef struct ev_entry {
    uint64_t seq;
    int64_t job_id;
    int state;   /* a state event's pgd_job_state; -1 for other events */
    char *frame; /* "id: N\nevent: T\ndata: {...}\n\n" (malloc'd) */
    size_t len;
} ev_entry;

typedef struct sse_stream sse_stream;

struct pgd_events {
    pgd_store *store;
    pthread_mutex_t lock; /* guards everything below except `order` and `last` */
    ev_entry ring[PGD_EVENTS_RING]; /* the entry of seq s is ring[s % PGD_EVENTS_RING] */
    uint64_t first_seq; /* the oldest event held; == next_seq when none */
    uint64_t next_seq;
    size_t bytes;        /* frame bytes held */
    sse_stream *parked;  /* streams suspended until an event for them arrives */
    uint64_t ping_epoch; /* bumped every PGD_EVENTS_PING_S */
    bool closed;
    size_t n_streams;       /* open, parked or not */
    size_t max_streams;     /* beyond it, new streams get 503 */
    bool said_full;         /* the cap was said on stderr (once) */
    pthread_cond_t drained; /* n_streams reached 0 after close */
    pthread_cond_t tick;    /* wakes the ping thread at close */
    pthread_t pinger;
    bool pinger_started;
    /* Serialise, per job, "read a job, publish its state" (so that published states follow
     * commits) and "store a log line, publish it" (so that the ring has a job's lines in seq
     * order): job id's is order[id % ORDER_STRIPES] (order_of), which also guards the last[]
     * slots of those ids. Jobs apart do not wait for each other (one mutex for all had been a
     * tenth of a submission's CPU in futex waits: a job's announcement waits for the store). */
    pthread_mutex_t order[ORDER_STRIPES];
    struct last_job {
        int64_t id;
        int state;
        int64_t log_seq; /* the last log line published for the job; -1: not known */
        /* A relayed job's metrics (pgd_events_relay): published up to metric_step, of which
         * the series in metric_names ('\n' after each) at metric_step itself. */
        bool metrics_known;
        int64_t metric_step;
        char metric_names[RELAYED_NAMES_MAX];
    } last[LAST_STATE_SLOTS];
};

/* One SSE connection. Its cursor and buffer belong to the connection's MHD thread; prev, next
 * and parked are guarded by the bus lock. */
struct sse_stream {
    pgd_events *ev;
    struct MHD_Connection *conn;
    int64_t job_id;  /* 0: every job */
    uint64_t cursor; /* the seq of the next event to look at */
    int last_state;  /* the job's state this client has (job streams); -1: none yet */
    uint64_t ping_epoch;
    bool ending; /* the final state is in `out`: close once it is sent */
    bool ended;  /* the `end` frame after it is in `out` too */
    uint64_t end_id; /* the id of the frame that carried the final state */
    bool collect; /* sends nothing but the job itself once it has ended (a waiting request) */
    bool parked;
    sse_stream *prev, *next;
    char *out;
    size_t out_len, out_off, out_cap;
};

static bool is_terminal(int state) { return state >= (int)PGD_JOB_SUCCEEDED; }

static pthread_mutex_t *order_of(pgd_events *ev, int64_t id) { return &ev->order[(uint64_t)id % ORDER_STRIPES]; }

/* ---- frames ----------------------------------------------------------------------------- */

/* A job object as event data: without "result" and "estimate" when it would be too big for
 * one frame (an inet job's normal form can be megabytes; GET /api/v1/jobs/{id} has them). */
static char *job_data(const pgd_job *job) {
    char *text = pgd_job_text(job, &(pgd_job_shape){0}, NULL);
    if (text && strlen(text) > PGD_EVENTS_FRAME_MAX) {
        free(text);
        text = pgd_job_text(job, &(pgd_job_shape){.truncated = true}, NULL);
    }
    return text;
}

/* "id: N\nevent: T\ndata: D\n\n"; D is compact JSON, so it is one line. malloc'd. */
static char *make_frame(uint64_t id, const char *event, const char *data, size_t *len) {
    int n = snprintf(NULL, 0, "id: %" PRIu64 "\nevent: %s\ndata: %s\n\n", id, event, data);
    if (n < 0) return NULL;
    char *f = malloc((size_t)n + 1);
    if (f) snprintf(f, (size_t)n + 1, "id: %" PRIu64 "\nevent: %s\ndata: %s\n\n", id, event, data);
    *len = (size_t)n;
    return f;
}

/* ---- the ring --------------------------------------------------------------------------- */

/* Resumes the parked streams that want an event of job_id (0: every parked stream).
 * Caller holds the lock. */
static void wake(pgd_events *ev, int64_t job_id) {
    sse_stream *st = ev->parked;
    while (st) {
        sse_stream *next = st->next;
        if (job_id == 0 || st->job_id == 0 || st->job_id == job_id) {
            if (st->prev) st->prev->next = st->next;
            else ev->parked = st->next;
            if (st->next) st->next->prev = st->prev;
            st->prev = st->next = NULL;
            st->parked = false;
            MHD_resume_connection(st->conn);
        }
        st = next;
    }
}

/* Appends an event (data: JSON text) and wakes the streams that want it. Dropping the oldest
 * events is the whole of the back-pressure: a client that has not read them gets a reset. */
static void push(pgd_events *ev, int64_t job_id, int state, const char *event, const char *data) {
    pthread_mutex_lock(&ev->lock);
    uint64_t seq = ev->next_seq;
    size_t len;
    char *frame = make_frame(seq, event, data, &len);
    if (!frame) {
        pthread_mutex_unlock(&ev->lock);
        fprintf(stderr, "paragond: events: out of memory, a %s event is lost\n", event);
        return;
    }
    while (ev->first_seq < ev->next_seq &&
           (ev->next_seq - ev->first_seq >= PGD_EVENTS_RING ||
            ev->bytes + len > PGD_EVENTS_RING_BYTES)) {
        ev_entry *old = &ev->ring[ev->first_seq % PGD_EVENTS_RING];
        ev->bytes -= old->len;
        free(old->frame);
        old->frame = NULL;
        ev->first_seq++;
    }
    ev->ring[seq % PGD_EVENTS_RING] =
        (ev_entry){.seq = seq, .job_id = job_id, .state = state, .frame = frame, .len = len};
    ev->bytes += len;
    ev->next_seq++;
    if (!ev->closed) wake(ev, job_id);
    pthread_mutex_unlock(&ev->lock);
}

static void push_json(pgd_events *ev, int64_t job_id, const char *event, json_t *data) {
    char *text = data ? pgn_json_dumps(data) : NULL;
    json_decref(data);
    if (!text) {
        fprintf(stderr, "paragond: events: job %" PRId64 ": a %s event cannot be built\n", job_id,
                event);
        return;
    }
    push(ev, job_id, -1, event, text);
    free(text);
}

/* ---- publishing ------------------------------------------------------------------------- */

/* Publishes job's state unless it is the last one published for the job (caller holds `order`). */
static void publish_state(pgd_events *ev, const pgd_job *job) {
    int64_t id = job->id;
    int state = (int)job->state;
    size_t slot = (size_t)((uint64_t)id % LAST_STATE_SLOTS);
    if (ev->last[slot].id == id && ev->last[slot].state == state) return;
    if (ev->last[slot].id != id) {
        ev->last[slot].log_seq = -1;
        ev->last[slot].metrics_known = false;
    }
    ev->last[slot].id = id;
    ev->last[slot].state = state;
    char *text = job_data(job);
    if (text) push(ev, id, state, "state", text);
    else fprintf(stderr, "paragond: events: job %" PRId64 ": no state event\n", id);
    free(text);
}

int pgd_events_job_changed(pgd_events *ev, pgd_store *store, int64_t id, pgd_job *job,
                           pgn_error *err) {
    if (job) *job = (pgd_job){0};
    if (ev) pthread_mutex_lock(order_of(ev, id));
    pgd_job obj;
    int rc = pgd_store_job_get(store, id, false, &obj, err);
    if (rc == 0 && ev) publish_state(ev, &obj);
    if (ev) pthread_mutex_unlock(order_of(ev, id));
    if (rc == 0 && job) *job = obj;
    else if (rc == 0) pgd_job_release(&obj);
    return rc;
}

void pgd_events_job_queued(pgd_events *ev, const pgd_job *job) {
    if (!ev) return;
    size_t slot = (size_t)((uint64_t)job->id % LAST_STATE_SLOTS);
    pthread_mutex_lock(order_of(ev, job->id));
    if (ev->last[slot].id != job->id || ev->last[slot].state < 0) publish_state(ev, job);
    pthread_mutex_unlock(order_of(ev, job->id));
}

/* The job's log lines up to seq are published (caller holds `order`). */
static void note_log_seq(pgd_events *ev, int64_t id, int64_t seq) {
    size_t slot = (size_t)((uint64_t)id % LAST_STATE_SLOTS);
    if (ev->last[slot].id != id) {
        ev->last[slot].id = id;
        ev->last[slot].state = -1;
        ev->last[slot].log_seq = -1;
        ev->last[slot].metrics_known = false;
    }
    if (seq > ev->last[slot].log_seq) ev->last[slot].log_seq = seq;
}

void pgd_events_job_log_stored(pgd_events *ev, int64_t id, int64_t seq, const char *level, const char *line,
                               const char *time) {
    if (!ev) return;
    char *visible = pgn_text_visible(line); /* as the store keeps it */
    pthread_mutex_lock(order_of(ev, id));
    note_log_seq(ev, id, seq);
    push_json(ev, id, "log",
              json_pack("{s:I, s:I, s:s, s:o, s:s}", "job_id", (json_int_t)id, "seq", (json_int_t)seq, "level",
                        level, "line", pgd_json_string_lossy(visible ? visible : line), "time", time));
    pthread_mutex_unlock(order_of(ev, id));
    free(visible);
}

void pgd_events_job_log(pgd_events *ev, pgd_store *store, int64_t id, int64_t attempt, const char *level,
                        const char *fmt, ...) {
    char raw[sizeof(((pgn_error *)0)->message) + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* Lines carry what clients sent (names, programs): control characters go out as \xNN, the
     * same in the store, the stream and our stderr. */
    pgn_text t = {0};
    pgn_text_put_visible(&t, raw);
    char *visible = pgn_text_take(&t);
    const char *line = visible ? visible : "(a log line: out of memory)";
    /* Under `order`, so the ring carries a job's lines in their seq order. */
    if (ev) pthread_mutex_lock(order_of(ev, id));
    int64_t seq = 0;
    char time[32];
    pgn_error err;
    if (pgd_store_log_add(store, id, attempt, level, line, &seq, time, &err) < 0) {
        fprintf(stderr, "paragond: job %" PRId64 ": log line not stored (%s): %s\n", id,
                err.message, line);
    } else if (ev) {
        note_log_seq(ev, id, seq);
        push_json(ev, id, "log",
                  json_pack("{s:I, s:I, s:s, s:o, s:s}", "job_id", (json_int_t)id, "seq",
                            (json_int_t)seq, "level", level, "line", pgd_json_string_lossy(line),
                            "time", time));
    }
    if (ev) pthread_mutex_unlock(order_of(ev, id));
    free(visible);
}

void pgd_events_metric(pgd_events *ev, int64_t id, const char *name, int64_t step,
                       double value) {
    if (!ev) return;
    json_t *v = isfinite(value) ? json_real(value) : json_null();
    push_json(ev, id, "metric",
              json_pack("{s:I, s:s, s:I, s:o}", "job_id", (json_int_t)id, "name", name, "step",
                        (json_int_t)step, "value", v));
}

void pgd_events_text(pgd_events *ev, int64_t id, int64_t index, const char *text, size_t len) {
    if (!ev) return;
    push_json(ev, id, "token",
              json_pack("{s:I, s:I, s:s%}", "job_id", (json_int_t)id, "index", (json_int_t)index, "text", text, len));
}

uint64_t pgd_events_next(pgd_events *ev) {
    pthread_mutex_lock(&ev->lock);
    uint64_t next = ev->next_seq;
    pthread_mutex_unlock(&ev->lock);
    return next;
}

void pgd_events_progress(pgd_events *ev, int64_t id, double fraction) {
    if (!ev) return;
    push_json(ev, id, "progress",
              json_pack("{s:I, s:f}", "job_id", (json_int_t)id, "progress", fraction));
}

int pgd_events_published_state(pgd_events *ev, int64_t id) {
    if (!ev) return -1;
    size_t slot = (size_t)((uint64_t)id % LAST_STATE_SLOTS);
    pthread_mutex_lock(order_of(ev, id));
    int state = ev->last[slot].id == id ? ev->last[slot].state : -1;
    pthread_mutex_unlock(order_of(ev, id));
    return state;
}

/* Whether name is among the '\n'-terminated names. */
static bool has_name(const char *names, const char *name) {
    size_t len = strlen(name);
    for (const char *p = names; *p;) {
        const char *end = strchr(p, '\n');
        if (!end) break;
        if ((size_t)(end - p) == len && !strncmp(p, name, len)) return true;
        p = end + 1;
    }
    return false;
}

static void add_name(char *names, const char *name) {
    size_t len = strlen(names), add = strlen(name);
    if (len + add + 2 > RELAYED_NAMES_MAX) return; /* forgotten: sent again, which a chart tolerates */
    memcpy(names + len, name, add);
    names[len + add] = '\n';
    names[len + add + 1] = 0;
}

/* Publishes the metrics of job id (in last[slot], which is its) written after those published:
 * steps past metric_step, and series at metric_step not yet sent. A job first heard of starts
 * at its last step (a stream reads the earlier ones from the store). Caller holds `order`. */
static int relay_metrics(pgd_events *ev, pgd_store *store, int64_t id, size_t slot, pgn_error *err) {
    struct last_job *m = &ev->last[slot];
    bool first = !m->metrics_known;
    if (first) {
        if (pgd_store_metrics_last_step(store, id, &m->metric_step, err) < 0) return -1;
        m->metric_names[0] = 0;
        m->metrics_known = true;
    }
    json_t *rows;
    if (pgd_store_metrics_list(store, id, NULL, true, m->metric_step - 1, &rows, err) < 0) return -1;
    int64_t top = m->metric_step;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        int64_t step = json_integer_value(json_object_get(row, "step"));
        if (step > top) top = step;
    }
    char names[RELAYED_NAMES_MAX] = "";
    if (top == m->metric_step) memcpy(names, m->metric_names, sizeof names);
    json_array_foreach(rows, i, row) {
        int64_t step = json_integer_value(json_object_get(row, "step"));
        const char *name = json_string_value(json_object_get(row, "name"));
        if (!name) continue;
        bool sent = step < m->metric_step || (step == m->metric_step && has_name(m->metric_names, name));
        if (!sent && !first) {
            json_t *v = json_object_get(row, "value");
            pgd_events_metric(ev, id, name, step, json_is_number(v) ? json_number_value(v) : NAN);
        }
        if (step == top && !has_name(names, name)) add_name(names, name);
    }
    json_decref(rows);
    m->metric_step = top;
    memcpy(m->metric_names, names, sizeof names);
    return 0;
}

int pgd_events_relay(pgd_events *ev, pgd_store *store, int64_t id, char *queued_on, size_t size,
                     pgn_error *err) {
    queued_on[0] = '\0';
    if (!ev) return 0;
    pgd_job job;
    if (pgd_events_job_changed(ev, store, id, &job, err) < 0) return -1;
    if (job.state == PGD_JOB_RUNNING) pgd_events_progress(ev, id, job.progress);
    bool queued = job.state == PGD_JOB_QUEUED; /* no run has written metrics yet */
    if (queued) snprintf(queued_on, size, "%s", job.device);
    pgd_job_release(&job);
    pthread_mutex_lock(order_of(ev, id));
    size_t slot = (size_t)((uint64_t)id % LAST_STATE_SLOTS);
    bool known = ev->last[slot].id == id && ev->last[slot].log_seq >= 0;
    int64_t after = known ? ev->last[slot].log_seq : 0;
    json_t *lines = NULL;
    int rc = pgd_store_logs_list(store, id, after, &lines, err);
    size_t i;
    json_t *e;
    json_array_foreach(lines, i, e) {
        int64_t seq = json_integer_value(json_object_get(e, "seq"));
        /* first heard of here: the lines so far are in the store, where a stream starts */
        if (known)
            push_json(ev, id, "log",
                      json_pack("{s:I, s:I, s:O, s:O, s:O}", "job_id", (json_int_t)id, "seq", (json_int_t)seq,
                                "level", json_object_get(e, "level"), "line", json_object_get(e, "line"), "time",
                                json_object_get(e, "created_at")));
        note_log_seq(ev, id, seq);
    }
    if (rc == 0 && !known) note_log_seq(ev, id, 0);
    json_decref(lines);
    if (rc == 0 && !queued) rc = relay_metrics(ev, store, id, slot, err);
    pthread_mutex_unlock(order_of(ev, id));
    return rc;
}

/* ---- streams ---------------------------------------------------------------------------- */

static int out_append(sse_stream *st, const char *data, size_t len) {
    if (st->out_len + len > st->out_cap) {
        size_t cap = st->out_cap ? st->out_cap : 4096;
        while (cap < st->out_len + len) cap *= 2;
        char *grown = realloc(st->out, cap);
        if (!grown) return -1;
        st->out = grown;
        st->out_cap = cap;
    }
    memcpy(st->out + st->out_len, data, len);
    st->out_len += len;
    return 0;
}

/* Appends a frame built here (snapshots and resets, which have no place in the ring). */
static int out_frame(sse_stream *st, uint64_t id, const char *event, const char *data) {
    size_t len;
    char *frame = data ? make_frame(id, event, data, &len) : NULL;
    int rc = frame ? out_append(st, frame, len) : -1;
    free(frame);
    return rc;
}

/* Appends job (an object read from the store) as `event` and notes its state: 1, or -1 when
 * out of memory. */
static int out_frame_job(sse_stream *st, uint64_t id, const char *event, const pgd_job *job) {
    st->last_state = (int)job->state;
    st->ending = is_terminal(st->last_state);
    st->end_id = id;
    char *text = job_data(job);
    int rc = out_frame(st, id, event, text);
    free(text);
    return rc < 0 ? -1 : 1;
}

/* Appends the job's current state as `event`; -1 when the job is gone. */
static int out_job_state(sse_stream *st, uint64_t id, const char *event) {
    pgd_job job;
    pgn_error err;
    if (pgd_store_job_get(st->ev->store, st->job_id, false, &job, &err) < 0) return -1;
    int rc = out_frame_job(st, id, event, &job);
    pgd_job_release(&job);
    return rc;
}

/* A client whose cursor fell out of the ring: a job stream gets the job's current state as
 * "reset"; the all-jobs stream {"missed": N}. Both continue from the newest event. */
static int out_reset(sse_stream *st, uint64_t missed) {
    if (st->job_id) return out_job_state(st, st->cursor - 1, "reset");
    char data[64];
    snprintf(data, sizeof data, "{\"missed\":%" PRIu64 "}", missed);
    return out_frame(st, st->cursor - 1, "reset", data);
}

/* A collecting stream's one write: the ended job as GET /api/v1/jobs/{id} gives it. */
static int out_collected(sse_stream *st) {
    st->out_len = st->out_off = 0;
    pgd_job job;
    pgn_error err;
    if (pgd_store_job_get(st->ev->store, st->job_id, false, &job, &err) < 0) return -1;
    char *text = pgd_job_text(&job, &(pgd_job_shape){0}, NULL);
    pgd_job_release(&job);
    int rc = text && out_append(st, text, strlen(text)) == 0 ? 1 : -1;
    free(text);
    st->ending = true;
    return rc;
}

static void park(pgd_events *ev, sse_stream *st) {
    st->parked = true;
    st->prev = NULL;
    st->next = ev->parked;
    if (ev->parked) ev->parked->prev = st;
    ev->parked = st;
    MHD_suspend_connection(st->conn);
}

/* Fills st->out from the ring: 1 when it holds bytes to send, 0 when the stream was parked
 * (nothing to send yet), -1 when the stream ends now (shutdown, its job deleted, no memory). */
static int refill(sse_stream *st) {
    pgd_events *ev = st->ev;
    st->out_len = st->out_off = 0;
    pthread_mutex_lock(&ev->lock);
    if (ev->closed) {
        pthread_mutex_unlock(&ev->lock);
        return -1;
    }
    if (st->cursor < ev->first_seq) {
        uint64_t missed = ev->first_seq - st->cursor;
        st->cursor = ev->next_seq;
        pthread_mutex_unlock(&ev->lock); /* the store is read without the bus lock */
        return out_reset(st, missed) < 0 ? -1 : 1;
    }
    int rc = 1;
    while (st->cursor < ev->next_seq && st->out_len < STREAM_BATCH_BYTES && !st->ending) {
        const ev_entry *e = &ev->ring[st->cursor % PGD_EVENTS_RING];
        st->cursor++;
        if (st->job_id && e->job_id != st->job_id) continue;
        if (st->job_id && e->state >= 0) {
            if (e->state == st->last_state) continue; /* the snapshot had it already */
            st->last_state = e->state;
            st->ending = is_terminal(e->state);
            st->end_id = e->seq;
        }
        if (out_append(st, e->frame, e->len) < 0) {
            rc = -1;
            break;
        }
    }
    bool pinged = false;
    if (rc == 1 && st->out_len == 0) {
        if (st->ping_epoch != ev->ping_epoch) {
            st->ping_epoch = ev->ping_epoch;
            pinged = true;
            rc = out_append(st, ping_frame, sizeof ping_frame - 1) < 0 ? -1 : 1;
        } else {
            park(ev, st);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&ev->lock);
    /* At each ping a job stream checks its job against what it has sent: a change that was
     * never published (made outside the scheduler) still reaches the client, and the stream of
     * a deleted job ends. */
    if (pinged && st->job_id) {
        pgd_job job;
        pgn_error err;
        if (pgd_store_job_get(ev->store, st->job_id, false, &job, &err) < 0)
            return err.code == PGN_E_NOT_FOUND ? -1 : rc;
        if ((int)job.state != st->last_state) {
            st->out_len = 0;
            rc = out_frame_job(st, st->cursor - 1, "state", &job);
        }
        pgd_job_release(&job);
    }
    return rc;
}

/* refill for a collecting stream: nothing until its job has ended, then the job. While it
 * waits it sends a space at each ping (JSON allows leading white space): a vanished client is
 * noticed, and a job that ended unpublished is seen in the store. */
static int refill_collect(sse_stream *st) {
    pgd_events *ev = st->ev;
    st->out_len = st->out_off = 0;
    pthread_mutex_lock(&ev->lock);
    if (ev->closed) {
        pthread_mutex_unlock(&ev->lock);
        return -1;
    }
    bool ended = false, check = st->cursor < ev->first_seq; /* fell behind: ask the store */
    for (uint64_t q = check ? ev->next_seq : st->cursor; q < ev->next_seq && !ended; q++) {
        const ev_entry *e = &ev->ring[q % PGD_EVENTS_RING];
        ended = e->job_id == st->job_id && is_terminal(e->state);
    }
    st->cursor = ev->next_seq;
    if (!ended && !check && st->ping_epoch == ev->ping_epoch) {
        park(ev, st);
        pthread_mutex_unlock(&ev->lock);
        return 0;
    }
    bool pinged = st->ping_epoch != ev->ping_epoch;
    st->ping_epoch = ev->ping_epoch;
    pthread_mutex_unlock(&ev->lock);
    if (!ended) {
        pgd_job job;
        pgn_error err;
        if (pgd_store_job_get(ev->store, st->job_id, false, &job, &err) < 0) return -1;
        ended = is_terminal((int)job.state);
        pgd_job_release(&job);
    }
    if (ended) return out_collected(st);
    if (!pinged) return refill_collect(st); /* fell behind, still running: wait again */
    return out_append(st, " ", 1) < 0 ? -1 : 1;
}

/* The last frame of a job stream, after its final state: `end`, with the job's id and that
 * state, under the final state's id. EventSource reconnects whenever a stream closes, so a
 * client needs an event that says this close is the end (and closes on it). */
static int out_end(sse_stream *st) {
    st->out_len = st->out_off = 0;
    st->ended = true;
    char data[96];
    snprintf(data, sizeof data, "{\"id\":%" PRId64 ",\"state\":\"%s\"}", st->job_id,
             pgd_job_state_name((pgd_job_state)st->last_state));
    return out_frame(st, st->end_id, "end", data) < 0 ? -1 : 1;
}

/* MHD's content reader: runs on the connection's thread with nothing else of ours held. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    sse_stream *st = cls;
    if (st->out_off == st->out_len) {
        if (st->ending && (st->collect || st->ended)) return MHD_CONTENT_READER_END_OF_STREAM;
        int rc = st->ending ? out_end(st) : st->collect ? refill_collect(st) : refill(st);
        if (rc < 0) return MHD_CONTENT_READER_END_OF_STREAM;
        if (rc == 0) return 0; /* parked: MHD calls again once the stream is resumed */
    }
    size_t n = st->out_len - st->out_off;
    if (n > max) n = max;
    memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    return (ssize_t)n;
}

/* A stream's place under max_streams, given back. Caller holds the lock. */
static void release_slot(pgd_events *ev) {
    if (--ev->n_streams == 0) pthread_cond_broadcast(&ev->drained);
}

static void give_back_slot(pgd_events *ev) {
    pthread_mutex_lock(&ev->lock);
    release_slot(ev);
    pthread_mutex_unlock(&ev->lock);
}

/* MHD's free callback: the connection is done with the stream (ended, client gone, shutdown). */
static void stream_free(void *cls) {
    sse_stream *st = cls;
    pgd_events *ev = st->ev;
    pthread_mutex_lock(&ev->lock);
    if (st->parked) { /* not reached: MHD frees no suspended connection; kept for safety */
        if (st->prev) st->prev->next = st->next;
        else ev->parked = st->next;
        if (st->next) st->next->prev = st->prev;
    }
    release_slot(ev);
    pthread_mutex_unlock(&ev->lock);
    free(st->out);
    free(st);
}

/* Last-Event-ID, when the client sent one that parses. */
static bool last_event_id(const pgd_request *req, uint64_t *out) {
    const char *v = pgd_request_header(req, "Last-Event-ID");
    if (!v || !*v) return false;
    uint64_t n = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10) return false;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *out = n;
    return true;
}

/* A new stream reading from the newest event, or right after Last-Event-ID when the ring still
 * holds what follows it (*resumed); *missed counts the events lost when it does not. */
static sse_stream *stream_new(pgd_events *ev, const pgd_request *req, int64_t job_id,
                              bool *asked, bool *resumed, uint64_t *missed, bool *full) {
    *full = false;
    pthread_mutex_lock(&ev->lock);
    if (ev->n_streams >= ev->max_streams) {
        *full = true;
        bool said = ev->said_full;
        ev->said_full = true;
        pthread_mutex_unlock(&ev->lock);
        pgd_metrics_refused(PGD_REFUSED_STREAMS);
        if (!said)
            fprintf(stderr, "paragond: %zu event streams are open (--max-streams): new ones get "
                            "503 until some end; said once, counted in /metrics\n",
                    ev->max_streams);
        return NULL;
    }
    ev->n_streams++; /* held from here: stream_free gives it back */
    pthread_mutex_unlock(&ev->lock);
    sse_stream *st = calloc(1, sizeof *st);
    if (st) st->ev = ev;
    if (!st || out_append(st, retry_frame, sizeof retry_frame - 1) < 0) {
        if (st) stream_free(st);
        else give_back_slot(ev);
        return NULL;
    }
    st->conn = req->conn;
    st->job_id = job_id;
    st->last_state = -1;
    uint64_t last = 0;
    *asked = last_event_id(req, &last);
    *resumed = false;
    *missed = 0;
    pthread_mutex_lock(&ev->lock);
    st->cursor = ev->next_seq;
    st->ping_epoch = ev->ping_epoch;
    if (*asked && last < ev->next_seq && last + 1 >= ev->first_seq) {
        st->cursor = last + 1;
        *resumed = true;
    } else if (*asked && last < ev->first_seq) {
        *missed = ev->first_seq - last - 1;
    }
    pthread_mutex_unlock(&ev->lock);
    return st;
}

/* Whether the ring holds a final state of st's job at or after its cursor. */
static bool final_in_ring(pgd_events *ev, const sse_stream *st) {
    bool found = false;
    pthread_mutex_lock(&ev->lock);
    uint64_t from = st->cursor > ev->first_seq ? st->cursor : ev->first_seq;
    for (uint64_t q = from; q < ev->next_seq && !found; q++) {
        const ev_entry *e = &ev->ring[q % PGD_EVENTS_RING];
        found = e->job_id == st->job_id && is_terminal(e->state);
    }
    pthread_mutex_unlock(&ev->lock);
    return found;
}

/* 503 for a stream beyond max_streams: EventSource retries by itself; Retry-After tells others. */
static enum MHD_Result reply_full(pgd_events *ev, const pgd_request *req) {
    pgn_error err;
    pgn_error_clear(&err);
    pgn_error_set(&err, PGN_E_TOO_MANY_STREAMS, "",
                  "%zu event streams are open, the most this server keeps (--max-streams); "
                  "retry later, or follow GET /api/v1/jobs/{id} instead",
                  ev->max_streams);
    const pgd_header h[] = {{MHD_HTTP_HEADER_RETRY_AFTER, PGD_EVENTS_FULL_RETRY_AFTER_S},
                            {NULL, NULL}};
    return pgd_reply_pgn_error(req, &err, NULL, h);
}

static enum MHD_Result start_response(const pgd_request *req, sse_stream *st, const char *type) {
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, STREAM_BLOCK_BYTES, stream_read, st, stream_free);
    if (!resp) {
        stream_free(st);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    /* Reverse proxies (nginx) buffer responses unless told not to. */
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp); /* the connection holds it; stream_free runs when it is done */
    return r;
}

static enum MHD_Result start_stream(const pgd_request *req, sse_stream *st) {
    return start_response(req, st, "text/event-stream");
}

enum MHD_Result pgd_events_reply_job(pgd_events *ev, const pgd_request *req, int64_t id) {
    bool asked, resumed;
    uint64_t missed;
    /* The cursor is taken before the snapshot is read: an event in between is sent twice (a
     * repeated state is dropped), never lost. */
    bool full;
    sse_stream *st = stream_new(ev, req, id, &asked, &resumed, &missed, &full);
    if (full) return reply_full(ev, req);
    if (!st) return MHD_NO;
    pgd_job job;
    pgn_error err;
    if (pgd_store_job_get(ev->store, id, false, &job, &err) < 0) {
        stream_free(st);
        if (err.code == PGN_E_NOT_FOUND)
            return pgd_reply_pgn_error(req, &err, NULL, NULL);
        fprintf(stderr, "paragond: %s %s: %s\n", req->method, req->path, err.message);
        return pgd_reply_pgn_error(req, &err, NULL, NULL);
    }
    int state = (int)job.state;
    pgd_job_release(&job);
    /* A resumed client has the state it last saw and replays the rest from the ring; anyone
     * else starts from the current state, and a finished job's stream is then its final state
     * alone. A resumed client of a finished job replays only when the final state is still to
     * come in the ring (else it would wait for nothing). */
    bool replay = resumed && (!is_terminal(state) || final_in_ring(ev, st));
    int rc = 0;
    if (!replay) rc = out_job_state(st, st->cursor - 1, asked && !resumed ? "reset" : "state");
    if (rc < 0) { /* deleted between the two reads, or out of memory */
        stream_free(st);
        return pgd_reply_error(req, PGN_E_NOT_FOUND, NULL,
                               "job %" PRId64 " does not exist", id);
    }
    return start_stream(req, st);
}

enum MHD_Result pgd_events_reply_job_since(pgd_events *ev, const pgd_request *req, int64_t id, uint64_t since,
                                           bool collect) {
    bool asked, resumed, full;
    uint64_t missed;
    sse_stream *st = stream_new(ev, req, id, &asked, &resumed, &missed, &full);
    if (full) return reply_full(ev, req);
    if (!st) return MHD_NO;
    pthread_mutex_lock(&ev->lock);
    if (since >= ev->first_seq && since <= ev->next_seq) st->cursor = since;
    pthread_mutex_unlock(&ev->lock);
    if (collect) {
        st->collect = true;
        st->out_len = 0; /* no retry line: the body is JSON */
        return start_response(req, st, "application/json");
    }
    return start_stream(req, st);
}

enum MHD_Result pgd_events_reply_all(pgd_events *ev, const pgd_request *req) {
    bool asked, resumed;
    uint64_t missed;
    bool full;
    sse_stream *st = stream_new(ev, req, 0, &asked, &resumed, &missed, &full);
    if (full) return reply_full(ev, req);
    if (!st) return MHD_NO;
    if (asked && !resumed && out_reset(st, missed) < 0) {
        stream_free(st);
        return MHD_NO;
    }
    return start_stream(req, st);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

static void *pinger(void *arg) {
    pgd_events *ev = arg;
    pthread_mutex_lock(&ev->lock);
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    while (!ev->closed) {
        due.tv_sec += PGD_EVENTS_PING_S;
        while (!ev->closed && pthread_cond_timedwait(&ev->tick, &ev->lock, &due) == 0) {
        }
        if (ev->closed) break;
        ev->ping_epoch++;
        wake(ev, 0);
    }
    pthread_mutex_unlock(&ev->lock);
    return NULL;
}

int pgd_events_create(pgd_store *store, size_t max_streams, pgd_events **out, pgn_error *err) {
    *out = NULL;
    pgd_events *ev = calloc(1, sizeof *ev);
    if (!ev) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "events: out of memory");
        return -1;
    }
    ev->store = store;
    ev->max_streams = max_streams;
    /* Ids grow across restarts (microseconds since the epoch at start), so a Last-Event-ID
     * from an earlier process is older than the ring and gets a reset, never a wrong resume. */
    ev->first_seq = ev->next_seq = (uint64_t)time(NULL) * 1000000u;
    for (size_t i = 0; i < LAST_STATE_SLOTS; i++) ev->last[i].state = -1;
    pthread_mutex_init(&ev->lock, NULL);
    for (size_t i = 0; i < ORDER_STRIPES; i++) pthread_mutex_init(&ev->order[i], NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->tick, &attr);
    pthread_cond_init(&ev->drained, &attr);
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&ev->pinger, NULL, pinger, ev);
    if (rc != 0) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "events: cannot start the ping thread: %s",
                      strerror(rc));
        pgd_events_destroy(ev);
        return -1;
    }
    ev->pinger_started = true;
    *out = ev;
    return 0;
}

void pgd_events_close(pgd_events *ev) {
    if (!ev) return;
    pthread_mutex_lock(&ev->lock);
    bool was = ev->closed;
    ev->closed = true;
    wake(ev, 0); /* each resumed stream finds the bus closed and ends */
    pthread_cond_signal(&ev->tick);
    /* Give the streams a moment to send their end, so clients see a clean close. */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += DRAIN_MS / 1000;
    while (ev->n_streams > 0 &&
           pthread_cond_timedwait(&ev->drained, &ev->lock, &until) == 0) {
    }
    pthread_mutex_unlock(&ev->lock);
    if (!was && ev->pinger_started) pthread_join(ev->pinger, NULL);
    ev->pinger_started = false;
}

void pgd_events_destroy(pgd_events *ev) {
    if (!ev) return;
    pgd_events_close(ev);
    for (uint64_t s = ev->first_seq; s < ev->next_seq; s++)
        free(ev->ring[s % PGD_EVENTS_RING].frame);
    pthread_cond_destroy(&ev->tick);
    pthread_cond_destroy(&ev->drained);
    for (size_t i = 0; i < ORDER_STRIPES; i++) pthread_mutex_destroy(&ev->order[i]);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

/* ---- the job log as text ---------------------------------------------------------------- */

enum MHD_Result pgd_events_reply_logs(pgd_store *store, const pgd_request *req, int64_t id,
                                      int64_t after) {
    json_t *lines;
    pgn_error err;
    if (pgd_store_logs_list(store, id, after, &lines, &err) < 0) {
        if (err.code == PGN_E_NOT_FOUND)
            return pgd_reply_pgn_error(req, &err, NULL, NULL);
        fprintf(stderr, "paragond: %s %s: %s\n", req->method, req->path, err.message);
        return pgd_reply_pgn_error(req, &err, NULL, NULL);
    }
    /* "<time> <level> <line>\n" per entry; a newline inside a line is written as "\n" so that
     * an entry stays one line and line N of the full log is seq N. */
    pgn_text t = {0};
    size_t i;
    json_t *e;
    json_array_foreach(lines, i, e) {
        pgn_text_printf(&t, "%s %-5s ", json_string_value(json_object_get(e, "created_at")),
                        json_string_value(json_object_get(e, "level")));
        for (const char *c = json_string_value(json_object_get(e, "line")); *c; c++) {
            if (*c == '\n' || *c == '\r') pgn_text_puts(&t, *c == '\n' ? "\\n" : "\\r");
            else pgn_text_put(&t, c, 1);
        }
        pgn_text_put(&t, "\n", 1);
    }
    json_decref(lines);
    char *text = pgn_text_take(&t);
    if (!text) return MHD_NO; /* out of memory: MHD closes the connection */
    return pgd_reply_text(req, MHD_HTTP_OK, text, "text/plain; charset=utf-8", NULL);
}
