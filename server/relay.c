/* relay.c: owns a cluster node's relay thread: it waits on the store's announcements of changed
 * jobs and publishes, for each job this node's workers do not run (those publish their own), what
 * the store now says of it (pgd_events_relay: state, progress, new log lines). Announcements of
 * one wait are taken as a set: a job heard of many times in it is read once. */
#include "relay.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a wait lasts before the thread looks at its stop flag. */
#define RELAY_WAIT_MS 250
/* Job ids taken from one wait. */
#define RELAY_BATCH PGD_STORE_WATCH_MAX

struct pgd_relay {
    pgd_store_watch *watch;
    pgd_store *store;
    pgd_events *events;
    pgd_scheduler *sched;
    pthread_t thread;
    atomic_bool stopping;
};

static int cmp_id(const void *a, const void *b) {
    int64_t x = ((const pgd_job_note *)a)->id, y = ((const pgd_job_note *)b)->id;
    return (x > y) - (x < y);
}

static void *relay_main(void *arg) {
    pgd_relay *r = arg;
    pgd_job_note notes[RELAY_BATCH];
    bool said = false;
    while (!atomic_load(&r->stopping)) {
        size_t n = 0;
        pgn_error err;
        if (pgd_store_watch_wait(r->watch, RELAY_WAIT_MS, notes, RELAY_BATCH, &n, &err) < 0) {
            if (!said) fprintf(stderr, "paragond: relay: %s (retrying)\n", err.message);
            said = true;
            struct timespec pause = {.tv_nsec = RELAY_WAIT_MS * 1000000L};
            nanosleep(&pause, NULL);
            continue;
        }
        said = false;
        qsort(notes, n, sizeof notes[0], cmp_id);
        for (size_t i = 0, next; i < n; i = next) {
            int64_t id = notes[i].id;
            /* a job only announced queued, which this node's streams already have as queued (this
             * node queued it): nothing to read */
            bool only_queued = true;
            for (next = i; next < n && notes[next].id == id; next++)
                only_queued &= strcmp(notes[next].state, "queued") == 0;
            if (id <= 0 || pgd_scheduler_runs(r->sched, id)) continue;
            if (only_queued && pgd_events_published_state(r->events, id) == (int)PGD_JOB_QUEUED) continue;
            char queued_on[sizeof ((pgd_job *)0)->device];
            if (pgd_events_relay(r->events, r->store, id, queued_on, sizeof queued_on, &err) < 0) {
                if (err.code != PGN_E_NOT_FOUND)
                    fprintf(stderr, "paragond: relay: job %lld: %s\n", (long long)id, err.message);
            } else if (queued_on[0]) { /* queued by another node: ours may take it */
                pgd_scheduler_notify(r->sched, queued_on);
            }
        }
    }
    return NULL;
}

int pgd_relay_start(const char *target, pgd_store *store, pgd_events *events, pgd_scheduler *sched,
                    pgd_relay **out, pgn_error *err) {
    *out = NULL;
    pgd_store_watch *watch;
    if (pgd_store_watch_open(target, &watch, err) < 0) return -1;
    if (!watch) return 0;
    pgd_relay *r = calloc(1, sizeof *r);
    if (!r) {
        pgd_store_watch_close(watch);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "relay: out of memory");
        return -1;
    }
    *r = (pgd_relay){.watch = watch, .store = store, .events = events, .sched = sched};
    atomic_init(&r->stopping, false);
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
        pgd_store_watch_close(watch);
        free(r);
        pgn_error_set(err, PGN_E_INTERNAL, "", "relay: cannot start its thread");
        return -1;
    }
    *out = r;
    return 0;
}

void pgd_relay_stop(pgd_relay *r) {
    if (!r) return;
    atomic_store(&r->stopping, true);
    pthread_join(r->thread, NULL);
    pgd_store_watch_close(r->watch);
    free(r);
}
