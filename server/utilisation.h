/* utilisation.h: a device's busy time over the last hour, in 5 s intervals: a ring the
 * scheduler adds each finished run to, read with the run in progress, so that the dashboard
 * draws a device's recent utilisation on a fresh page (GET /api/v1/devices/utilisation). */
#ifndef PGD_UTILISATION_H
#define PGD_UTILISATION_H

#include <stddef.h>
#include <stdint.h>

/* 5 s: jobs of a second or two show as a bar of their own, and an hour of them is 720 numbers a
 * device (about 6 KiB of JSON each), small enough to fetch whole at every page load. */
#define PGD_UTIL_INTERVAL_NS 5000000000LL
#define PGD_UTIL_INTERVALS 720 /* an hour */

/* Not thread-safe: the scheduler guards it with its lock, as it does the busy totals. */
typedef struct pgd_busy_ring {
    int64_t origin_ns;                      /* where interval 0 starts (pgn_now_ns's clock) */
    int64_t held[PGD_UTIL_INTERVALS];       /* the interval a slot holds now; -1: none yet */
    int64_t busy_ns[PGD_UTIL_INTERVALS];    /* busy time within it */
} pgd_busy_ring;

/* What a read returns: the intervals from the oldest kept to the one in progress at now. */
typedef struct pgd_busy_history {
    size_t n;                               /* intervals, 1 .. PGD_UTIL_INTERVALS */
    double busy_s[PGD_UTIL_INTERVALS];      /* busy seconds in each, oldest first */
    double last_s;                          /* how much of the last one has passed */
} pgd_busy_history;

void pgd_busy_ring_init(pgd_busy_ring *r, int64_t origin_ns);

/* Counts [from_ns, to_ns) as busy, split at interval boundaries; times before the origin, or
 * more than the ring's hour before to_ns, are dropped. Runs are added in the order they end. */
void pgd_busy_ring_add(pgd_busy_ring *r, int64_t from_ns, int64_t to_ns);

/* The history at now_ns, counting a run in progress since running_since_ns (0: none). */
void pgd_busy_ring_read(const pgd_busy_ring *r, int64_t now_ns, int64_t running_since_ns,
                        pgd_busy_history *out);

#endif
