/* events.h: the job event bus, its Server-Sent Events endpoints, and the job log (lines stored,
 * then published). Workers and handlers publish job events (state changes, metrics, progress,
 * log lines) into a bounded in-memory ring; each SSE connection reads the ring from its own
 * cursor and is parked (suspended) while it has nothing to send, so a slow, idle or vanished
 * client never blocks a publisher or holds an HTTP thread. Publishing functions accept a NULL
 * bus: then nothing is published (log lines are still stored). */
#ifndef PGD_EVENTS_H
#define PGD_EVENTS_H

#include "http.h"
#include "store.h"

#include <jansson.h>
#include <stdint.h>

/* Events the ring keeps for clients that fall behind; one that falls further gets a "reset"
 * event with the current state. Bounded by count and by bytes, whichever is reached first. */
#define PGD_EVENTS_RING 4096
#define PGD_EVENTS_RING_BYTES (8u * 1024 * 1024)
/* A state event's job object above this size goes without its "result" and "estimate". */
#define PGD_EVENTS_FRAME_MAX (64u * 1024)
/* Idle streams get a ": ping" comment this often: it keeps proxies from closing them and is
 * how a vanished client is noticed (a parked connection sees no disconnect until it writes). */
#define PGD_EVENTS_PING_S 15

/* A stream refused at max_streams is told to come back after this many seconds. */
#define PGD_EVENTS_FULL_RETRY_AFTER_S "5"

typedef struct pgd_events pgd_events;

/* Creates the bus and its ping thread; store (which must outlive the bus) answers the state
 * snapshots that streams start with. At most max_streams streams are open at once: more get
 * 503 "too_many_streams" with Retry-After. */
int pgd_events_create(pgd_store *store, size_t max_streams, pgd_events **out, pgn_error *err);
/* Ends every stream (each sends what it holds, then closes) and stops the pings; streams opened
 * later end at once. Call before stopping the HTTP daemon: it must have no parked connection. */
void pgd_events_close(pgd_events *ev);
/* Closes if needed and frees the bus; after the HTTP daemon and every publisher have stopped. */
void pgd_events_destroy(pgd_events *ev);

/* ---- publishing (any thread; never blocks on a client) ---------------------------------- */

/* Reads job id from the store and publishes its state ("event: state", data the job object
 * without its spec) unless that state was the last one published for the job. Call after every
 * committed state change; reads and publishes are serialised, so a stream never sees an older
 * state after a newer one. *job (may be NULL) receives the job read (the caller releases it). */
int pgd_events_job_changed(pgd_events *ev, pgd_store *store, int64_t id, pgd_job *job,
                           pgn_error *err);

/* Publishes a job just inserted, as its insert returned it (state queued), unless a state of it
 * has been published since (a claim between the insert's commit and this call): a submission's
 * announcement without reading the job back. */
void pgd_events_job_queued(pgd_events *ev, const pgd_job *job);

/* The state this bus last published for job id (a pgd_job_state), or -1 when it does not
 * remember one. */
int pgd_events_published_state(pgd_events *ev, int64_t id);

/* Publishes what another writer of the store (a cluster's other node) changed of job id: its
 * state when it changed, its progress while it runs, and its log lines after the last one this
 * bus published (for a job first heard of here, the lines from then on: streams read the earlier
 * ones from the store when they start). When the job is queued, queued_on (size bytes) receives
 * what it is queued on (a device, or a cluster's kind); otherwise "". */
int pgd_events_relay(pgd_events *ev, pgd_store *store, int64_t id, char *queued_on, size_t size,
                     pgn_error *err);

/* Publishes a log line already stored (seq, created_at as stored), e.g. with its job. */
void pgd_events_job_log_stored(pgd_events *ev, int64_t id, int64_t seq, const char *level, const char *line,
                               const char *time);

/* Appends a line to the job's stored log (level "info", "warn" or "error") and publishes it
 * ("event: log", data {"job_id","seq","level","line","time"}). Newlines in the line are kept in
 * the store and in the event. A run's line names its attempt (0: a line of no run), and is not
 * stored once that run is over (store.h, "runs"). Failures are reported on stderr: a log line
 * never fails a job. */
void pgd_events_job_log(pgd_events *ev, pgd_store *store, int64_t id, int64_t attempt, const char *level,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* "event: metric", data {"job_id","name","step","value"} (value null when not finite). */
void pgd_events_metric(pgd_events *ev, int64_t id, const char *name, int64_t step,
                       double value);
/* "event: progress", data {"job_id","progress"}. */
void pgd_events_progress(pgd_events *ev, int64_t id, double fraction);
/* "event: token", data {"job_id","index","text"}: a generate job's character index (text: its
 * len UTF-8 bytes). Not stored: the job's result has the whole text. */
void pgd_events_text(pgd_events *ev, int64_t id, int64_t index, const char *text, size_t len);
/* The seq the next event will have: taken before a job is made, it lets a stream start at the
 * job's first event (pgd_events_reply_job_since). */
uint64_t pgd_events_next(pgd_events *ev);

/* ---- the SSE endpoints ------------------------------------------------------------------ */

/* GET /api/v1/jobs/{id}/events: "retry", then the job's current state, then its events as they
 * happen; ends after the final state (at once for a finished job). 404 for an unknown job. */
enum MHD_Result pgd_events_reply_job(pgd_events *ev, const pgd_request *req, int64_t id);
/* A job's events from seq since on (its first, when taken before the job was made), ending after
 * its final state; with collect, no events but the job object itself once it has ended, as
 * application/json (a request that waits for its job: spaces keep it alive meanwhile). */
enum MHD_Result pgd_events_reply_job_since(pgd_events *ev, const pgd_request *req, int64_t id, uint64_t since,
                                           bool collect);
/* GET /api/v1/events: every job's events; never ends (until shutdown). */
enum MHD_Result pgd_events_reply_all(pgd_events *ev, const pgd_request *req);

/* GET /api/v1/jobs/{id}/logs?after=SEQ: text/plain, "<time> <level> <line>\n" per entry with
 * seq > after (seq counts a job's lines from 1, so line N of the whole log is seq N); a newline
 * inside an entry is written as the two characters "\n". 404 for an unknown job. */
enum MHD_Result pgd_events_reply_logs(pgd_store *store, const pgd_request *req, int64_t id,
                                      int64_t after);

#endif
