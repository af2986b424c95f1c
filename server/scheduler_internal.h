/* scheduler_internal.h: what the scheduler's files share and nothing else may use: the
 * scheduler and its workers as records, and the few functions one file calls in another.
 * scheduler.c owns the lifecycle, cancelling and the devices' views; worker.c a device's worker
 * thread (claiming, running and recording jobs, calibrating); placement.c where a job goes.
 * sched->lock guards what the comments say it guards; a worker's own fields are its thread's. */
#ifndef PGD_SCHEDULER_INTERNAL_H
#define PGD_SCHEDULER_INTERNAL_H

#include "scheduler.h"
#include "server.h"

#include "utilisation.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct worker;

/* One job at a time on a worker's device: a thread with the device opened for itself (its own
 * context and queue) and the run it holds; a worker has --jobs-per-device of them. */
typedef struct runner {
    struct worker *w;
    pgd_scheduler *sched;
    const pgn_device_info *info; /* w's */
    size_t index;                /* its place among w's runners: 0 calibrates the device */
    pthread_t thread;
    bool started;
    bool wake;                   /* guarded by sched->lock: a job may be waiting */
    _Atomic int64_t running_job; /* 0 when idle */
    _Atomic int64_t running_attempt; /* its run's attempt: the fencing token of its writes */
    _Atomic int64_t running_priority; /* its job's priority */
    atomic_bool running_train;        /* it is a train job: it can stop at a step, checkpointed */
    _Atomic int64_t running_bytes;    /* the memory its job is estimated to hold on the device */
    /* Preemption: the running job that stops at its next step for a queued job of higher
     * priority (0: none), and that job. */
    _Atomic int64_t preempt_job, preempted_by;
    atomic_bool lease_lost; /* the run's lease could not be renewed: it stops at once */
    _Atomic int64_t lease_renewed_ns; /* when its lease was last renewed (pgn_now_ns; lease.c) */
    /* Owned by the runner's thread alone. */
    pgn_device *dev;
    bool open_tried;
    pgn_error open_err; /* why opening failed, when dev is NULL after trying */
} runner;

/* A device's runners and what the scheduler knows of the device. */
typedef struct worker {
    pgd_scheduler *sched;
    const pgn_device_info *info; /* points into sched->devices */
    pthread_cond_t cond;         /* its runners wait on it (with sched->lock) */
    runner *runners;
    size_t n_runners;
    bool ready; /* guarded by sched->lock: runner 0 has calibrated the device (or had nothing to) */
    /* Time spent running jobs, for /metrics: finished runs, and since when one or more has been
     * running (0 when none), with how many run now; guarded by sched->lock so a reader sees them
     * consistent. */
    int64_t busy_ns, run_started_ns;
    int active;
    pgd_busy_ring busy_ring; /* the same time by 5 s interval over the last hour (lock too) */
    /* The cost model's view of this device's queue (guarded by sched->lock): when each of its
     * jobs_per_device slots frees, in seconds from its read, as the store's running and
     * queued jobs fill them (placement.c's queue_fill), plus the jobs placed here since;
     * queue_jobs: how many jobs the view counts (read, plus placed, less those whose runs ended
     * since): at 0 the device has nothing to do, and the view says so at once (sched_queue_drop). */
    double slot_free_s[PGD_JOBS_PER_DEVICE_LIMIT];
    int64_t queue_jobs;
    int64_t queue_fresh_ns; /* until when the view stands (placement.c's queue_seconds); 0: unread */
    bool queue_reading;     /* a placement is reading the store's queue for it now */
    /* The device's rates as the cost model takes them (guarded by sched->lock), read at
     * rates_read_ns: re-reading them for every submission would cost more than the rest of
     * placing it. */
    pgn_device_rates rates;
    int64_t rates_read_ns;
    /* the device's profile as the API shows it (guarded by sched->lock): the one its opening and
     * stored tuning gave, else what opening it will give */
    pgn_device_profile profile;
} worker;

struct pgd_scheduler {
    pgd_store *store;
    pgd_events *events; /* NULL: publish nothing */
    pthread_mutex_t lock;
    /* Read-held by each submission from its insert to its announcement (several at once),
     * written by claims and cancels: a worker's "running" follows the job's "queued". */
    pthread_rwlock_t admit;
    pthread_mutex_t calibrating; /* one device calibrates at a time: the host pseudo-device and a
                                    pocl CPU device share the cores, and measured together each
                                    took a third to two thirds of its rate */
    atomic_bool stopping;
    pgn_device_info *devices; /* the OpenCL devices, then host */
    size_t n;
    worker *workers; /* workers[i] serves devices[i] */
    size_t jobs_per_device; /* runners a worker has */
    pgn_run_options run_opts; /* data_dir points into the server's config, which outlives us */
    bool calibrate;           /* measure devices never measured at start */
    int64_t max_attempts;     /* interrupted runs of a job before it fails as crashed */
    /* Bumped after every cancel request a running job got: each running job then reads its
     * own cancel_requested once, so a step costs an atomic load, not a query. */
    atomic_uint_fast64_t cancel_gen;
    /* The lease keeper (lease.c): the lease a run holds, and the thread that renews it. */
    int64_t lease_ms;
    bool cluster; /* the store is shared (pgd_store_shared): other nodes run its jobs too */
    pthread_t lease_thread;
    bool lease_started;
    pthread_cond_t lease_tick; /* signalled at stop (with lock) */
};

/* The worker of device_id, or NULL when no device has that id (scheduler.c). */
worker *sched_worker_of(pgd_scheduler *s, const char *device_id);
/* Whether info is the host pseudo-device, by its profile's class (scheduler.c). */
bool sched_is_host(const pgn_device_info *info);
/* The kind a worker's device takes jobs queued for (a cluster's "cpu" or "gpu"); NULL for the
 * host pseudo-device and kinds nobody asks for (scheduler.c). */
const char *sched_kind_of(const pgn_device_info *info);
/* Whether w takes jobs queued on device (its id or its kind) (scheduler.c). */
bool sched_serves(const worker *w, const char *device);
/* The CLOCK_REALTIME time ms from now, for pthread_cond_timedwait (scheduler.c). */
struct timespec sched_deadline(int64_t ms);
/* The lease keeper's thread: renews the node's heartbeat and its runs' leases, stops a run
 * whose lease is lost, recovers the runs of nodes whose leases ran out (lease.c). */
void *sched_lease_main(void *arg);
/* A runner thread's body (arg: its runner): the first calibrates its device when asked; each
 * runs its device's queue, a job at a time, until the scheduler stops (worker.c). */
void *sched_worker_main(void *arg);
/* Seconds w has spent running jobs: finished runs plus the one in progress (worker.c). */
double sched_busy_seconds(pgd_scheduler *s, worker *w);
/* Wakes every runner of w: a job may be waiting (caller holds s->lock) (scheduler.c). */
void sched_wake(worker *w);
/* Resolves a device request ("cpu", "gpu", "host", "auto" or an id) against the scheduler's
 * devices; an unknown or unavailable one is code "invalid_spec" (placement.c). */
int sched_place(const pgd_scheduler *s, const char *want, pgn_device_info *out, pgn_error *err);
/* A run on w's device has ended: the cost model's view of its queue counts one job fewer, and
 * none when that was the last (placement.c). */
void sched_queue_drop(pgd_scheduler *s, worker *w);

#endif
