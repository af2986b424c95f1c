/* scheduler.h: placement of jobs on devices and the device workers that run them.
 * One worker thread per device (every OpenCL device, then the host pseudo-device); a worker
 * sleeps on a condition variable until a job is queued for its device. */
#ifndef PGD_SCHEDULER_H
#define PGD_SCHEDULER_H

#include "paragon.h"
#include "store.h"

#include <jansson.h>
#include <stddef.h>

typedef struct pgd_scheduler pgd_scheduler;
typedef struct pgd_events pgd_events; /* events.h */

/* Starts one worker per device in devices[0..count) plus one for the host pseudo-device,
 * after re-placing queued jobs whose device no longer exists. The store must outlive the
 * scheduler. Workers pick up jobs already queued in the store at once. Jobs read datasets
 * from <data_dir>/datasets (pgn_run_options) and keep files in <data_dir>/jobs; data_dir must
 * outlive the scheduler. With calibrate, a worker whose device was never measured first
 * measures it (a few seconds) and stores the rows, and what they measured for the cost model.
 * A distributed job whose ranks die runs again, up to max_attempts interrupted runs. A device
 * runs up to jobs_per_device jobs at once (0: 1), each by a runner of its own, while the memory
 * their estimates add up to fits the device (worker.c).
 * Jobs' state changes, metrics, progress and log lines go to events (NULL: none; it must
 * outlive the scheduler); their log lines are stored either way. */
int pgd_scheduler_start(pgd_store *store, pgd_events *events, const pgn_device_info *devices,
                        size_t count, const char *data_dir, bool calibrate, int64_t max_attempts,
                        size_t jobs_per_device, pgd_scheduler **out, pgn_error *err);

/* Asks every worker to stop: a running job stops at its next step boundary (a train job
 * checkpoints it first) and goes back to the queue, or ends cancelled when its cancel was
 * requested; then joins the workers, closes the devices and frees the scheduler. */
void pgd_scheduler_stop(pgd_scheduler *sched);

/* The kind of device a request names ("cpu", "gpu"), or NULL when it names something else. A
 * cluster queues a job that asked for a kind on the kind itself (pgd_target). */
const char *pgd_device_kind_named(const char *want);

/* Where a job is queued. */
typedef struct pgd_target {
    /* The device its admission and estimate judge by: the one it is queued on, or for a
     * cluster's kind one of that kind (zero memory: none is known, nothing is judged). */
    pgn_device_info device;
    /* What it is queued on (the job's device): device.id, or in a cluster a kind ("cpu",
     * "gpu") that the first free device of that kind on any node takes. */
    char queue[sizeof ((pgn_device_info *)0)->id];
    /* For a cluster's kind or another node's device: which live nodes have one, or that none
     * has ("" otherwise), for the job's "placed" line. */
    char nodes[200];
} pgd_target;

/* Places a validated job: a named device ("cpu", "gpu", "host" or an id; an unknown or
 * unavailable one is code "invalid_spec" with field "device") as asked; "auto" on the OpenCL
 * device where the cost model expects it to finish first (its estimate from the device's
 * measured rates, plus the estimates of the jobs queued or running there), or on the host
 * pseudo-device when no OpenCL device is idle and the host would finish it first (not a bench
 * job: it measures a device). A node of a cluster queues a
 * kind ("cpu", "gpu") for any node's device of that kind, even when no node has one yet (it
 * waits for one), and an id another node registered for that node. *placement receives every
 * device weighed, the chosen one and why, to record on the job; the caller releases it
 * (pgd_placement_release). */
int pgd_scheduler_place_job(pgd_scheduler *sched, const pgn_job_spec *spec, pgd_target *out,
                            pgd_placement *placement, pgn_error *err);

/* Cancels job id (pgd_store_job_cancel): a queued job ends at once; a running one stops at
 * its next step boundary and ends cancelled (a train job keeps a checkpoint of where it
 * stopped); one running in the store that no worker runs ends at once. *job is the job
 * afterwards (the caller releases it): cancelled, or running with cancel_requested. Codes
 * "not_found" and "conflict" as the store's. */
int pgd_scheduler_cancel(pgd_scheduler *sched, int64_t id, pgd_job *job, pgn_error *err);

/* Resumes cancelled job id (pgd_store_job_resume) and wakes the workers that take it; its log
 * and event stream say so. *job is the job afterwards (the caller releases it). */
int pgd_scheduler_resume(pgd_scheduler *sched, int64_t id, pgd_job *job, pgn_error *err);

/* Whether one of this scheduler's workers runs job id now. */
bool pgd_scheduler_runs(pgd_scheduler *sched, int64_t id);

/* <data_dir>/jobs/<id>: where job id keeps its files (checkpoint.safetensors). */
void pgd_scheduler_job_dir(const pgd_scheduler *sched, int64_t id, char *out, size_t size);

/* Held by a submission from inserting its jobs to publishing their "queued" state (by several
 * submissions at once); workers do not claim a job meanwhile, so every stream sees queued before
 * running. */
void pgd_scheduler_admit_lock(pgd_scheduler *sched);
void pgd_scheduler_admit_unlock(pgd_scheduler *sched);

/* Wakes the workers that take jobs queued on device (an id, or a cluster's kind): a job was
 * queued there. */
void pgd_scheduler_notify(pgd_scheduler *sched, const char *device);

/* A job of `priority` (id by) was queued on device (an id, or a cluster's kind): a train job of
 * lower priority that one of this node's workers runs there stops at its next step, checkpointed,
 * and is queued again (it resumes from that checkpoint when its device takes it again); the
 * device then takes the higher one first. Jobs of other kinds, which cannot resume, run on. */
void pgd_scheduler_preempt(pgd_scheduler *sched, const char *device, int64_t priority, int64_t by);

/* [{pgn_device_info_json fields..., "profile":{...}}] for each device, host last: what a node
 * registers in a cluster. New reference. */
json_t *pgd_scheduler_profiles_json(pgd_scheduler *sched);

/* [{pgn_device_info_json fields..., "queued":N, "running_job":ID|null, "busy_seconds":S}] for
 * every device, host last; busy_seconds is the time its worker has spent running jobs since
 * start. New reference, or NULL with err set. */
json_t *pgd_scheduler_devices_json(pgd_scheduler *sched, pgn_error *err);

/* {"interval_seconds":5, "last_interval_seconds":S, "devices":[{"id", "busy_seconds":[...]}]}:
 * each device's busy seconds per interval over the last hour (since start, if sooner), oldest
 * first, the last one the interval in progress (S of it passed), a running job counted up to
 * now; the devices in pgd_scheduler_devices_json's order. New reference, NULL out of memory. */
json_t *pgd_scheduler_utilisation_json(pgd_scheduler *sched);

#endif
