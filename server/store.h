/* store.h: paragond's SQLite store: migrations, job rows, their metric series and benchmark rows.
 * One connection guarded by one mutex; every call is safe from any thread, and every state
 * change is one transaction. Calls return 0 on success, -1 with err set on failure; a missing
 * job is code "not_found". Jobs come back as pgd_job records (views.h makes JSON of them). */
#ifndef PGD_STORE_H
#define PGD_STORE_H

#include "assets.h"
#include "paragon.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pgd_store pgd_store;

/* A failure that passes when the database recovers (disk full, an I/O error, a lock held
 * elsewhere) is code PGN_E_STORE_UNAVAILABLE: worth retrying, and a 503 to clients. Other
 * failures are PGN_E_STORE. */

/* Opens (creating if missing) the database at path and applies the embedded schema
 * migrations (pgd_schema_sources) that are not yet recorded in schema_migrations. */
int pgd_store_open(const char *path, pgd_store **out, pgn_error *err);
/* The same with another migration table (NULL-name terminated, names "NNN_name.sql"). */
int pgd_store_open_with(const char *path, const pgn_embedded *migrations, pgd_store **out,
                        pgn_error *err);
void pgd_store_close(pgd_store *store);
/* One paragond per node id (pgd_store_set_node's) on a store: code "locked", naming the node,
 * while another paragond runs as it (on PostgreSQL a lock its connection holds, dropped when
 * that paragond dies; on SQLite, one paragond per file already: lock.c). */
int pgd_store_hold_node(pgd_store *store, pgn_error *err);
/* The SQLite file target names (as --store reads it: "sqlite:PATH" or a PATH); NULL when it
 * names a PostgreSQL store. */
const char *pgd_store_file(const char *target);
/* Whether several nodes share the store (PostgreSQL: a cluster's), so that a job queued in it
 * may be run by any of them. */
bool pgd_store_shared(const pgd_store *store);


/* Highest applied migration version. */
int pgd_store_schema_version(pgd_store *store, int64_t *version, pgn_error *err);

/* ---- jobs ---- */

typedef enum {
    PGD_JOB_QUEUED,
    PGD_JOB_RUNNING,
    PGD_JOB_SUCCEEDED,
    PGD_JOB_FAILED,
    PGD_JOB_CANCELLED,
} pgd_job_state;

const char *pgd_job_state_name(pgd_job_state state);
/* Parses a state name; -1 when unknown. */
int pgd_job_state_parse(const char *name, pgd_job_state *out);

/* ---- a job's placement (store_placements.c; schema/012_job_placements.sql) -----------------
 * Where the scheduler put a job and why (placement.c): every device the cost model weighed, with
 * the rates and the estimate it used there, kept with the job in typed columns and shown by the
 * API as the job's "estimate" (views.c). */

/* Why a job went where it did. */
typedef enum {
    PGD_PLACED_BY_NAME, /* its spec named the device (or a kind: "cpu", "gpu", "host") */
    PGD_PLACED_FASTEST, /* "auto": the shortest estimated finish of several devices */
    PGD_PLACED_ONLY,    /* "auto" with one device to choose from */
} pgd_placement_reason;

/* "by_name", "fastest", "only": a reason as the store keeps it. */
const char *pgd_placement_reason_name(pgd_placement_reason reason);
/* The reason of that name; -1 for none. */
int pgd_placement_reason_parse(const char *name, pgd_placement_reason *out);

/* One device the cost model weighed for a job. */
typedef struct pgd_candidate {
    char device[64];
    pgn_device_rates rates;    /* what the estimate assumed of the device */
    pgn_job_estimate estimate; /* the job's work and time there */
    double queue_seconds;      /* estimated work queued or running there when it was placed */
} pgd_candidate;

/* A placement: the candidates in the order they were weighed, and the one the job went to.
 * n == 0: none (a job placed without the cost model, as each of a bench job's "all"). */
typedef struct pgd_placement {
    pgd_placement_reason reason;
    size_t chosen;             /* candidates[chosen] is where it went */
    size_t n;
    pgd_candidate *candidates; /* malloc'd, owned by the placement; NULL when n == 0 */
} pgd_placement;

/* Frees what a placement owns and leaves it empty; safe on a zeroed one. */
void pgd_placement_release(pgd_placement *placement);

/* An idempotency key's longest length (Idempotency-Key, submission_id): room for a UUID or a
 * client's own scheme with a prefix, short enough to index. */
#define PGD_SUBMISSION_ID_MAX 128

/* One run of a job (job_runs): where its attempt ran and how it ended. */
typedef struct pgd_job_run {
    int64_t attempt;
    char node[64], device[64];
    char started_at[32], ended_at[32]; /* ended_at "" while it runs */
    char outcome[16]; /* succeeded, failed, cancelled, or queued (it ran again); "" while it runs */
} pgd_job_run;

/* A job as the store keeps it. The JSON parts are documents in their own right (the validated
 * spec, the engine's result, its tags): owned, NULL when absent. */
typedef struct pgd_job {
    int64_t id;
    pgn_job_kind kind;
    char name[128];
    pgd_job_state state;
    char device_requested[64]; /* what the spec asked for: "auto", "cpu", an id ... */
    char device[64];           /* where it was placed */
    double progress;           /* 0..1 */
    int64_t attempts;          /* runs started */
    int64_t interrupted;       /* runs a dying paragond left running (--max-attempts) */
    bool cancel_requested;
    char created_at[32], started_at[32], finished_at[32]; /* ISO-8601 UTC; "" before it happens */
    json_t *spec;     /* only when asked for */
    json_t *result;   /* a succeeded job's */
    pgd_placement placement; /* where and why it was placed (n == 0: not by the cost model) */
    bool has_error;   /* a failed or cancelled job's error: */
    pgn_error error;
    json_t *tags;     /* {"key":"value",...} as submitted; NULL when it had none */
    char submission_id[PGD_SUBMISSION_ID_MAX + 1]; /* its idempotency key; "" when none */
    int64_t priority; /* its device takes higher first (PGD_PRIORITY_MIN..MAX; 0 by default) */
    pgd_job_run *runs; /* pgd_store_job_get's: each run by attempt (malloc'd; NULL in lists) */
    size_t n_runs;
} pgd_job;

/* Releases what a job owns; safe on a zeroed one. */
void pgd_job_release(pgd_job *job);
/* Releases n jobs and the array. */
void pgd_jobs_free(pgd_job *jobs, size_t n);

typedef struct pgd_new_job {
    pgn_job_kind kind;
    const char *name;
    const char *device_requested; /* what the spec asked for: "auto", "cpu", an id ... */
    const char *device;           /* the device id the scheduler placed it on */
    const json_t *spec;           /* the validated spec with defaults filled in */
    const pgd_placement *placement; /* where and why it was placed (NULL or n == 0: none) */
    const char *log_line;         /* the job's first log line (seq 1, "info"), stored with it; NULL: none */
    char *log_time;               /* receives that line's created_at (32 bytes) when given */
    pgd_job *stored;              /* receives the job as stored, read by its insert (as
                                   * pgd_store_job_get has it, without spec; NULL: not wanted;
                                   * the caller releases it, whatever the insert returned) */
    const json_t *tags;           /* the job's tags object (NULL: none) */
    int64_t priority;             /* PGD_PRIORITY_MIN..PGD_PRIORITY_MAX */
} pgd_new_job;

/* A job's priority: its device takes queued jobs of higher priority first (then the oldest
 * first), and a queued job of higher priority than the train job running on its device stops
 * that job at its next step, checkpointed, to be queued again (worker.c, "preemption"). */
#define PGD_PRIORITY_MIN (-1000)
#define PGD_PRIORITY_MAX 1000

/* An idempotency key with the fingerprint of the request that used it (submissions table). */
typedef struct pgd_submission {
    const char *key;         /* NULL: the jobs are inserted without one */
    const char *body_sha256; /* hex */
} pgd_submission;

/* A train job's shape (schema/020_job_shape_key.sql) from its stored spec: the SHA-256 (hex) of
 * the spec without what leaves a step's time as it is. false for other kinds. */
bool pgd_store_shape_key(const json_t *spec, char key[65]);
/* The latest succeeded train job of that shape that ran on device in one attempt: its id (0:
 * none), its run's seconds (start to end) and its epochs (a gpt's steps). */
typedef struct pgd_train_history {
    int64_t job;
    double seconds, units;
} pgd_train_history;
int pgd_store_train_history(pgd_store *store, const char *shape_key, const char *device, pgd_train_history *out,
                            pgn_error *err);

/* Where queued job id stands: *ahead, the jobs queued where it is (its device, or a cluster's
 * kind) that are taken before it (higher priority, or the same and older); *running, the job
 * running on that device (0: none; the oldest when several). */
int pgd_store_job_queue_place(pgd_store *store, int64_t id, int64_t *ahead, int64_t *running, pgn_error *err);

/* Calls each for every job running on device (its chosen candidate's estimate less its progress's
 * share), then for every job queued there in the order claims take them (its estimate). */
int pgd_store_queue_each(pgd_store *store, const char *device, void (*each)(void *ctx, bool running, double seconds),
                         void *ctx, pgn_error *err);

/* Inserts n queued jobs in one transaction (all or none); ids[i] receives jobs[i]'s id. */
int pgd_store_jobs_insert(pgd_store *store, const pgd_new_job *jobs, size_t n, int64_t *ids,
                          pgn_error *err);
/* The same under an idempotency key (sub->key NULL: as above), each job carrying the key. A key
 * already taken inserts nothing and fails with code "conflict", field "submission_id": the
 * caller reads what it made (pgd_store_submission_get) and answers from that. */
int pgd_store_jobs_insert_keyed(pgd_store *store, const pgd_new_job *jobs, size_t n,
                                const pgd_submission *sub, int64_t *ids, pgn_error *err);

/* What key was used for: *found false when never; else the request's fingerprint (65 bytes),
 * the first job it made (possibly deleted since) and the ids of its jobs still stored, oldest
 * first (*ids malloc'd, *n of them; NULL when none). */
int pgd_store_submission_get(pgd_store *store, const char *key, bool *found, char *body_sha256,
                             int64_t *first_job, int64_t **ids, size_t *n, pgn_error *err);

/* Job id into *out (the caller releases it); its spec only when with_spec. */
int pgd_store_job_get(pgd_store *store, int64_t id, bool with_spec, pgd_job *out,
                      pgn_error *err);
/* The same without the spec parsed: *spec_text is its stored JSON text (malloc'd; the caller
 * frees it), for an answer that carries it as it is (GET /api/v1/jobs/{id}). */
int pgd_store_job_get_spec_text(pgd_store *store, int64_t id, pgd_job *out, char **spec_text, pgn_error *err);

typedef struct pgd_job_filter {
    bool by_state, by_kind;
    pgd_job_state state;
    pgn_job_kind kind;
    int64_t limit;
    int64_t offset;
    int64_t before_id;     /* > 0: only jobs with a smaller id (a page's cursor); 0: any */
    const json_t *tags;    /* [[key, value], ...]: jobs carrying every one; NULL: any */
} pgd_job_filter;

/* Jobs without their spec, newest first: *jobs (malloc'd, *n of them; pgd_jobs_free) and *total,
 * every job the filter matches, before_id aside (the size of the whole list a cursor walks). */
int pgd_store_jobs_list(pgd_store *store, const pgd_job_filter *filter, pgd_job **jobs,
                        size_t *n, int64_t *total, pgn_error *err);

/* ---- runs: claims, leases and fencing (schema/014_runs_and_nodes.sql) ----------------------
 * A run of a job belongs to the node that claimed it, under a lease on the store's clock that
 * the node renews while the run lives. The job's attempts count is the run's fencing token:
 * every write a run makes (progress, metrics, log lines, its end) names its attempt, and is
 * refused with code "conflict" once the job is on another attempt or no longer running, so a
 * node that was cut off and comes back cannot write over the job's new run. attempt 0 writes
 * unfenced (a cancel from the API, start-up recovery, a job that never ran). */

/* The node this store's runs belong to (its id, up to 63 bytes) and the lease a claim or a
 * renewal gives them; before it is set: node "" and PGD_LEASE_DEFAULT_MS. */
#define PGD_LEASE_DEFAULT_MS 30000
void pgd_store_set_node(pgd_store *store, const char *node, int64_t lease_ms);
/* The lease a claim gives, in ms. */
int64_t pgd_store_lease_ms(pgd_store *store);

/* ---- hearing other nodes' writes (store.c) ----
 * A node of a cluster hears, on a connection of its own, the ids of the jobs whose state,
 * progress or log another writer changed (PostgreSQL's NOTIFY on channel PGD_STORE_CHANNEL, sent
 * by triggers: schema/postgresql/015_job_notify.sql). A SQLite store has one writer: nothing. */
#define PGD_STORE_CHANNEL "paragon_jobs"
typedef struct pgd_store_watch pgd_store_watch;
/* *out NULL (and 0) where there is nothing to hear. */
int pgd_store_watch_open(const char *target, pgd_store_watch **out, pgn_error *err);
/* What one announcement says: job id changed; state, when the change was of the job's row, is
 * the state it has now ("" for a new log line). */
typedef struct pgd_job_note {
    int64_t id;
    char state[16];
} pgd_job_note;
/* Waits up to timeout_ms; up to max (at most PGD_STORE_WATCH_MAX) announcements into notes (*n;
 * repeats possible). -1 with err when the connection failed (the next call makes it again). */
#define PGD_STORE_WATCH_MAX 256
int pgd_store_watch_wait(pgd_store_watch *w, int timeout_ms, pgd_job_note *notes, size_t max, size_t *n,
                         pgn_error *err);
void pgd_store_watch_close(pgd_store_watch *w);

/* ---- nodes (store_nodes.c) ----
 * Each paragond on the store registers itself at start as node pgd_store_set_node named, and
 * renews its heartbeat on the store's clock while it lives. */

/* Registers (or registers again, after a restart) this node: its address (host:port, as other
 * nodes and clients reach it), version and devices (a JSON array, borrowed), started now. */
int pgd_store_node_register(pgd_store *store, const char *address, const char *version,
                            const json_t *devices, pgn_error *err);
/* Renews this node's heartbeat (nothing before it registered). */
int pgd_store_node_heartbeat(pgd_store *store, pgn_error *err);
/* [{"id","address","version","devices","started_at","heartbeat_at","heartbeat_age_s",
 * "running":[job ids]}] of every node, by id. */
int pgd_store_nodes_list(pgd_store *store, json_t **out, pgn_error *err);

/* Takes the queued job of highest priority, the oldest of those, on device, or queued for any device of kind (a cluster's job
 * that asked for "gpu" waits as "gpu" for the first node with one; NULL: device only), and
 * marks it running on device (started_at now, attempts + 1, progress 0, this node, a lease
 * from now) in one statement. *id is 0 when nothing is queued there; otherwise *attempt is the
 * run's attempt, *priority (when given) the job's priority and *spec the stored spec (new
 * reference). only (not 0): that job alone, if it is still queued there. -1 (the store failed,
 * its commit too) claims nothing: *id 0, *spec NULL. */
int pgd_store_job_claim(pgd_store *store, const char *device, const char *kind, int64_t only, int64_t *id,
                        int64_t *attempt, int64_t *priority, json_t **spec, pgn_error *err);
/* The job pgd_store_job_claim would take now (0: none), and its stored spec (new reference),
 * without taking it: a runner beside others weighs it first, then claims it by id (only). */
int pgd_store_job_peek(pgd_store *store, const char *device, const char *kind, int64_t *id, json_t **spec,
                       pgn_error *err);

/* Whether job id runs on another node that holds its lease (a cancel there is that node's to
 * carry out: it reads the job's cancel request within a third of a lease). */
int pgd_store_job_held_elsewhere(pgd_store *store, int64_t id, bool *elsewhere, pgn_error *err);

/* Renews the lease of run `attempt` of job id for this node's lease time; *held false (and
 * nothing renewed) when that run is no longer the job's: another attempt took it, or it ended.
 * A node whose renewal fails or is not held stops the run at once. */
int pgd_store_lease_renew(pgd_store *store, int64_t id, int64_t attempt, bool *held, pgn_error *err);

/* The interactions the latest succeeded inet job with the same program and files as spec
 * needed (a net's count does not depend on the reducer or the device), as *interactions; 0
 * when no such job is stored. One indexed lookup: jobs keep the SHA-256 of their program and
 * files (work_key, schema/010_job_work_key.sql). */
int pgd_store_inet_expected(pgd_store *store, const json_t *spec, int64_t *interactions, pgn_error *err);

/* Progress of a running job, clamped to [0, 1]. */
int pgd_store_job_progress(pgd_store *store, int64_t id, int64_t attempt, double fraction, pgn_error *err);

/* A log line written with a job's change, in its transaction: seq and time receive what was
 * stored (as pgd_store_log_add's). */
typedef struct pgd_log_line {
    const char *level, *text;
    int64_t seq;
    char time[32];
} pgd_log_line;

/* pgd_store_job_claim, and the run's first line in its transaction: text(text_ctx, attempt, out,
 * size) words it once the claim knows the run's attempt; line->level is the caller's, and
 * line->seq and line->time say where it went (seq 0: nothing was claimed). */
typedef void (*pgd_claim_text)(void *ctx, int64_t attempt, char *out, size_t size);
int pgd_store_job_claim_told(pgd_store *store, const char *device, const char *kind, int64_t only, int64_t *id,
                             int64_t *attempt, int64_t *priority, json_t **spec, pgd_claim_text text, void *text_ctx,
                             pgd_log_line *line, pgn_error *err);

/* Ends a queued or running job: state succeeded with result, or failed/cancelled with error
 * (borrowed; NULL stores null), finished_at now, and line (NULL: none) in the job's log in the
 * same transaction. Code "conflict" when the job has already finished. */
int pgd_store_job_finish(pgd_store *store, int64_t id, int64_t attempt, pgd_job_state state,
                         const json_t *result, const pgn_error *error, pgd_log_line *line, pgn_error *err);
/* The same, and the run's last metrics (n of them; pgd_store_metrics_add's rows) in its
 * transaction. */
struct pgd_metric;
int pgd_store_job_finish_with(pgd_store *store, int64_t id, int64_t attempt, pgd_job_state state,
                              const json_t *result, const pgn_error *error, pgd_log_line *line,
                              const struct pgd_metric *metrics, size_t n_metrics, pgn_error *err);

/* Puts a running job back in the queue (shutdown mid-run); attempts are kept. A job whose
 * cancel was requested ends cancelled instead, in the same transaction. */
int pgd_store_job_requeue(pgd_store *store, int64_t id, int64_t attempt, pgn_error *err);

/* Cancels a job in one transaction: a queued job ends at once (state cancelled, finished_at
 * now, error {"code":"cancelled",...}); a running one gets cancel_requested, which its worker
 * acts on at the next step boundary. *job is the job afterwards (with spec; the caller releases
 * it). Code "conflict" when the job has finished, "not_found" when it does not exist. */
int pgd_store_job_cancel(pgd_store *store, int64_t id, pgd_job *job, pgn_error *err);

/* Queues a cancelled job again, on the device it was placed on (in a cluster, a kind it asked
 * for), its error and cancel request cleared and its attempts kept: a train job's next run
 * resumes from its checkpoint (one that never ran starts afresh; other kinds run again whole). *job is the job afterwards (with spec; the
 * caller releases it). "conflict" naming the state when the job is not cancelled. */
int pgd_store_job_resume(pgd_store *store, int64_t id, pgd_job *job, pgn_error *err);

/* Whether a cancel of the job was requested. */
int pgd_store_job_cancel_requested(pgd_store *store, int64_t id, bool *requested,
                                   pgn_error *err);

/* Deletes a finished job with its metric series, benchmark rows and rates (ON DELETE CASCADE), in
 * one transaction. Code "conflict" for a queued or running job, "not_found" when missing.
 * The job's files are the caller's to remove. */
int pgd_store_job_delete(pgd_store *store, int64_t id, pgn_error *err);

/* Moves a queued job to another device (its device vanished between runs). */
int pgd_store_job_reassign(pgd_store *store, int64_t id, const char *device, pgn_error *err);

/* Start-up recovery of the jobs a previous process left running: one whose cancel was requested
 * ends cancelled; for the others the run counts as interrupted ("interrupted" in the job
 * object), and a job interrupted max_attempts times ends failed with code "crashed" (a job that
 * takes the server down must not do it on every start); the rest go back to the queue
 * (attempts kept). Each gets a log line saying which. this_node_only: only the runs of this node
 * (pgd_store_set_node's; a cluster's node leaves the others' runs to their leases). */
typedef struct pgd_recovery {
    int64_t requeued, crashed, cancelled;
} pgd_recovery;
int pgd_store_recover(pgd_store *store, int64_t max_attempts, bool this_node_only, pgd_recovery *out,
                      pgn_error *err);
/* The same for one running job whose run ended without finishing while paragond lives (a rank
 * of a distributed job died): what says what happened, for its log line and error. */
int pgd_store_job_interrupted(pgd_store *store, int64_t id, int64_t max_attempts, const char *what,
                              pgd_recovery *out, pgn_error *err);
/* The same for every running job whose lease ran out (its node died, or lost the store):
 * whichever node calls it, one at a time (the store's write lock). */
int pgd_store_recover_expired(pgd_store *store, int64_t max_attempts, pgd_recovery *out, pgn_error *err);

/* Queued jobs (without their spec), oldest first: *jobs (malloc'd, *n; pgd_jobs_free). */
int pgd_store_queued_jobs(pgd_store *store, pgd_job **jobs, size_t *n, pgn_error *err);

/* {"<device id>": N, ...} for every device with queued jobs. */
int pgd_store_queued_counts(pgd_store *store, json_t **out, pgn_error *err);

/* ---- metrics ---- */

/* Records value at (job, name, step); a re-run of the same step replaces it. A NaN or
 * infinite value is stored as NULL and reads back as null. */
int pgd_store_metric_add(pgd_store *store, int64_t job_id, int64_t attempt, const char *name,
                         int64_t step, double value, pgn_error *err);
/* One value of a metric series (name borrowed). */
typedef struct pgd_metric {
    const char *name;
    int64_t step;
    double value;
} pgd_metric;
/* Records m[0..n) as pgd_store_metric_add does, in one transaction: all of them or none (a run
 * that is over: "conflict"). */
int pgd_store_metrics_add(pgd_store *store, int64_t job_id, int64_t attempt, const pgd_metric *m, size_t n,
                          pgn_error *err);

/* The highest step of any of job id's metrics; -1 when it has none. */
int pgd_store_metrics_last_step(pgd_store *store, int64_t job_id, int64_t *step, pgn_error *err);

/* [{"name","step","value","created_at"}] ordered by name, step; name NULL means every series,
 * only steps > after_step when has_after. Code "not_found" when the job does not exist. */
int pgd_store_metrics_list(pgd_store *store, int64_t job_id, const char *name, bool has_after,
                           int64_t after_step, json_t **out, pgn_error *err);

/* ---- logs ---- */

/* Appends line to job_id's log at level ("info", "warn", "error"): its seq is one more than the
 * job's last (1 for the first). *seq and created_at (ISO-8601 text) receive what was stored.
 * Code "not_found" when the job does not exist. */
int pgd_store_log_add(pgd_store *store, int64_t job_id, int64_t attempt, const char *level,
                      const char *line, int64_t *seq, char created_at[32], pgn_error *err);

/* [{"seq","level","line","created_at"}] of the job's lines with seq > after, in seq order (bytes
 * that are not UTF-8 read back as '?'). Code "not_found" when the job does not exist. */
int pgd_store_logs_list(pgd_store *store, int64_t job_id, int64_t after, json_t **out,
                        pgn_error *err);

/* ---- benchmarks ------------------------------------------------------------------------- */

/* Benchmark rows are the engine's flat objects (engine/bench/bench.h): "suite", "case" and "device"
 * non-empty strings, "adapter" and "version" strings when present, every other value a number,
 * string, boolean or null. "id", "job_id" and "created_at" are the store's own and refused.
 * A bad row is code "invalid_row" with field "rows[i].key"; nothing is stored then. */

/* Stores rows (an array, borrowed) of job_id (0: rows recorded without a job) in one
 * transaction with one created_at, and with them what the run measured of its device's rates
 * (rates: NULL or nothing measured, none; schema/013_device_rates.sql). Code "not_found" when
 * the job does not exist. */
int pgd_store_bench_add(pgd_store *store, int64_t job_id, const json_t *rows, const pgn_measured_rates *rates,
                        pgn_error *err);

/* Ends a bench job as succeeded with result and stores result["rows"] as its benchmark rows and
 * rates as what it measured, in one transaction: all happen or none, so a job's rows and rates
 * are stored once and only for a job that succeeded. Errors are pgd_store_job_finish's and
 * pgd_store_bench_add's. */
int pgd_store_bench_finish(pgd_store *store, int64_t job_id, int64_t attempt, const json_t *result,
                           const pgn_measured_rates *rates, pgn_error *err);

/* The newest `limit` rows of suite on device (NULL: any), returned oldest first: each the stored
 * row plus "id", "job_id" (null without a job) and "created_at". *rows is a new array. */
int pgd_store_bench_list(pgd_store *store, const char *suite, const char *device, int64_t limit,
                         json_t **rows, pgn_error *err);

/* The same, also by job and by the time the rows were stored. */
typedef struct pgd_bench_filter {
    const char *suite, *device; /* NULL: any */
    int64_t job;                /* 0: any */
    const char *since, *until;  /* created_at in [since, until), the store's ISO text
                                   ("2025-01-31T12:00:00.000Z"); NULL: open */
    int64_t limit;              /* the newest this many */
} pgd_bench_filter;
int pgd_store_bench_query(pgd_store *store, const pgd_bench_filter *filter, json_t **rows,
                          pgn_error *err);

/* What benchmark runs measured of device, each figure the newest run's that measured it (0 when
 * none did): what pgn_device_rates_measured reads. */
int pgd_store_rates_latest(pgd_store *store, const char *device, pgn_measured_rates *out, pgn_error *err);

/* ---- device tunings (store_tunings.c; schema/011_device_tunings.sql) ------------------------
 * A device's tuning for a kernel family: *found false when there is none (or none that reads
 * back as one); put replaces the device's record for that family. */
int pgd_store_tuning_get(pgd_store *store, const char *device_id, pgn_kernel_family family, pgn_device_tuning *out,
                         bool *found, pgn_error *err);
int pgd_store_tuning_put(pgd_store *store, const pgn_device_tuning *t, pgn_error *err);

/* ---- figures for /metrics --------------------------------------------------------------- */

#define PGD_JOB_STATES (PGD_JOB_CANCELLED + 1)

/* counts[state]: how many jobs are in each state now. */
int pgd_store_job_state_counts(pgd_store *store, int64_t counts[PGD_JOB_STATES], pgn_error *err);

/* Counters that only grow (schema/007_counters.sql): interactions of the inet jobs and FLOPs of
 * the train jobs that succeeded, and jobs finished by outcome (finished[state] for the final
 * states; the others 0). Deleting a job leaves them as they are. */
typedef struct pgd_counters {
    double interactions, flops;
    double finished[PGD_JOB_STATES];
} pgd_counters;
int pgd_store_counters(pgd_store *store, pgd_counters *out, pgn_error *err);

#endif
