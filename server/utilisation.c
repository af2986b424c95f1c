/* utilisation.c: owns each device's busy history: a ring of 5 s intervals over the last hour,
 * each slot stamped with the interval it holds, so that a slot left from an hour ago reads as
 * idle without anything sweeping the ring. Exact rather than sampled: a finished run adds its
 * time to the intervals it overlapped, and a read adds the run in progress up to now. */
#include "utilisation.h"

#include <string.h>

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void pgd_busy_ring_init(pgd_busy_ring *r, int64_t origin_ns) {
    r->origin_ns = origin_ns;
    for (size_t i = 0; i < PGD_UTIL_INTERVALS; i++) r->held[i] = -1;
    memset(r->busy_ns, 0, sizeof r->busy_ns);
}

/* The interval that time t falls in (t >= origin). */
static int64_t interval_of(const pgd_busy_ring *r, int64_t t) {
    return (t - r->origin_ns) / PGD_UTIL_INTERVAL_NS;
}

/* The part of [from, to) inside interval k. */
static int64_t overlap(const pgd_busy_ring *r, int64_t k, int64_t from, int64_t to) {
    int64_t start = r->origin_ns + k * PGD_UTIL_INTERVAL_NS;
    return max64(0, min64(to, start + PGD_UTIL_INTERVAL_NS) - max64(from, start));
}

void pgd_busy_ring_add(pgd_busy_ring *r, int64_t from_ns, int64_t to_ns) {
    if (to_ns <= r->origin_ns) return;
    int64_t last = interval_of(r, to_ns - 1);
    int64_t first = max64(interval_of(r, max64(from_ns, r->origin_ns)),
                          last - (PGD_UTIL_INTERVALS - 1));
    for (int64_t k = first; k <= last; k++) {
        size_t slot = (size_t)(k % PGD_UTIL_INTERVALS);
        if (r->held[slot] != k) {        /* an older interval's slot: it starts again at zero */
            r->held[slot] = k;
            r->busy_ns[slot] = 0;
        }
        r->busy_ns[slot] += overlap(r, k, from_ns, to_ns);
    }
}

void pgd_busy_ring_read(const pgd_busy_ring *r, int64_t now_ns, int64_t running_since_ns,
                        pgd_busy_history *out) {
    now_ns = max64(now_ns, r->origin_ns);
    int64_t now_k = interval_of(r, now_ns);
    int64_t first = max64(0, now_k - (PGD_UTIL_INTERVALS - 1));
    out->n = (size_t)(now_k - first + 1);
    for (int64_t k = first; k <= now_k; k++) {
        size_t slot = (size_t)(k % PGD_UTIL_INTERVALS);
        int64_t ns = r->held[slot] == k ? r->busy_ns[slot] : 0;
        if (running_since_ns) ns += overlap(r, k, running_since_ns, now_ns);
        out->busy_s[k - first] = (double)ns * 1e-9;
    }
    out->last_s = (double)(now_ns - r->origin_ns - now_k * PGD_UTIL_INTERVAL_NS) * 1e-9;
}
