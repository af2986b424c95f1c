/* lease.c: owns the scheduler's lease keeper, the thread that keeps this node's runs theirs
 * (store.h, "runs"). Every third of a lease it renews the lease of each run a runner holds, and
 * a run whose lease is no longer its own (another attempt took the job) or could not be renewed
 * for a whole lease stops at once (worker.c reads lease_lost at every step boundary): another
 * node may run the job by then. The same tick renews the node's heartbeat and recovers the jobs
 * of any node whose leases ran out (the store serialises that across nodes), waking the local
 * workers for the jobs it queued again. */
#include "scheduler_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* A lease is renewed three times over its length: two renewals may fail before it runs out. */
#define RENEWALS_PER_LEASE 3

static void keep_runs(pgd_scheduler *s, int64_t now_ns) {
    int64_t lease_ns = s->lease_ms * 1000000LL;
    for (size_t i = 0; i < s->n * s->jobs_per_device; i++) {
        runner *w = &s->workers[i / s->jobs_per_device].runners[i % s->jobs_per_device];
        int64_t id = atomic_load(&w->running_job), attempt = atomic_load(&w->running_attempt);
        if (!id || atomic_load(&w->lease_lost)) continue;
        bool held = false;
        pgn_error err;
        int rc = pgd_store_lease_renew(s->store, id, attempt, &held, &err);
        if (atomic_load(&w->running_job) != id) continue; /* the run ended meanwhile */
        if (rc == 0 && held) {
            atomic_store(&w->lease_renewed_ns, now_ns);
            continue;
        }
        if ((rc == 0 || now_ns - atomic_load(&w->lease_renewed_ns) >= lease_ns) &&
            !atomic_exchange(&w->lease_lost, true)) {
            fprintf(stderr, "paragond: job %lld: attempt %lld %s; it stops now\n", (long long)id,
                    (long long)attempt,
                    rc == 0 ? "is no longer the job's (its lease ran out and another run took it)"
                            : "could not renew its lease for a whole lease (the store is out of reach)");
        } else if (rc < 0) {
            fprintf(stderr, "paragond: job %lld: its lease was not renewed: %s\n", (long long)id,
                    err.message);
        }
    }
}

/* Recovers the runs whose lease ran out; wakes every worker when it queued some again, and in a
 * cluster on every tick, since a job queued through another node reaches this one's workers by
 * its announcement, which a connection lost meanwhile (a PostgreSQL restart) does not hear. */
static void recover_others(pgd_scheduler *s) {
    pgd_recovery rec;
    pgn_error err;
    if (pgd_store_recover_expired(s->store, s->max_attempts, &rec, &err) < 0) {
        fprintf(stderr, "paragond: recovering runs whose lease ran out: %s\n", err.message);
        rec = (pgd_recovery){0};
    }
    if (rec.requeued + rec.crashed + rec.cancelled > 0)
        fprintf(stderr,
                "paragond: runs whose lease ran out: %lld job(s) queued again, %lld failed as crashed, "
                "%lld cancelled\n",
                (long long)rec.requeued, (long long)rec.crashed, (long long)rec.cancelled);
    if (rec.requeued == 0 && !s->cluster) return;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n; i++) sched_wake(&s->workers[i]);
    pthread_mutex_unlock(&s->lock);
}

void *sched_lease_main(void *arg) {
    pgd_scheduler *s = arg;
    int64_t tick_ms = s->lease_ms / RENEWALS_PER_LEASE;
    if (tick_ms < 1) tick_ms = 1;
    pthread_mutex_lock(&s->lock);
    while (!atomic_load(&s->stopping)) {
        struct timespec until = sched_deadline(tick_ms);
        pthread_cond_timedwait(&s->lease_tick, &s->lock, &until);
        if (atomic_load(&s->stopping)) break;
        pthread_mutex_unlock(&s->lock);
        pgn_error err;
        if (pgd_store_node_heartbeat(s->store, &err) < 0)
            fprintf(stderr, "paragond: node heartbeat: %s\n", err.message);
        keep_runs(s, pgn_now_ns());
        recover_others(s);
        /* a cancel requested through another node reaches this one's runs here: each reads its
         * job's request again at its next step */
        atomic_fetch_add(&s->cancel_gen, 1);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}
