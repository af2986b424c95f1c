/* test_utilisation.c: each device's busy history (server/utilisation.c): the ring's intervals on
 * a clock the test sets (runs split at boundaries, a run in progress, an hour forgotten), then
 * GET /api/v1/devices/utilisation on a live paragond before and after a job: every device, in
 * /api/v1/devices' order, its intervals adding up to the busy_seconds it reports there. */
#include "paragond_harness.h"
#include "utilisation.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S 1000000000LL /* ns in a second */
#define T0 (1000 * S)  /* the ring's origin: any instant of the monotonic clock */

TestSuite(utilisation, .init = harness_setup, .fini = harness_teardown);

static pgd_busy_history *read_at(const pgd_busy_ring *r, int64_t now, int64_t running_since) {
    pgd_busy_history *h = malloc(sizeof *h);
    cr_assert_not_null(h);
    pgd_busy_ring_read(r, now, running_since, h);
    return h;
}

static void assert_history(const pgd_busy_history *h, const double *want, size_t n, double last) {
    cr_assert_eq(h->n, n, "%zu intervals, want %zu", h->n, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_float_eq(h->busy_s[k], want[k], 1e-9, "interval %zu: %g s busy, want %g", k,
                           h->busy_s[k], want[k]);
    cr_assert_float_eq(h->last_s, last, 1e-9, "%g s of the last interval passed, want %g", h->last_s, last);
}

Test(utilisation, a_run_counts_in_the_intervals_it_overlapped) {
    pgd_busy_ring *r = malloc(sizeof *r);
    pgd_busy_ring_init(r, T0);
    pgd_busy_history *h = read_at(r, T0, 0);
    assert_history(h, (double[]){0}, 1, 0);
    free(h);

    pgd_busy_ring_add(r, T0 + 1 * S, T0 + 3 * S);   /* inside interval 0 */
    pgd_busy_ring_add(r, T0 + 4 * S, T0 + 13 * S);  /* 1 s of 0, all of 1, 3 s of 2 */
    h = read_at(r, T0 + 14 * S, 0);
    assert_history(h, (double[]){3, 5, 3}, 3, 4);
    free(h);
    free(r);
}

Test(utilisation, a_run_in_progress_counts_up_to_now) {
    pgd_busy_ring *r = malloc(sizeof *r);
    pgd_busy_ring_init(r, T0);
    pgd_busy_ring_add(r, T0 + 1 * S, T0 + 2 * S);
    pgd_busy_history *h = read_at(r, T0 + 12 * S, T0 + 8 * S);
    assert_history(h, (double[]){1, 2, 2}, 3, 2);
    free(h);
    /* it ends: the same time, now kept in the ring */
    pgd_busy_ring_add(r, T0 + 8 * S, T0 + 12 * S);
    h = read_at(r, T0 + 12 * S, 0);
    assert_history(h, (double[]){1, 2, 2}, 3, 2);
    free(h);
    free(r);
}

Test(utilisation, the_ring_keeps_the_last_hour_and_reuses_its_slots) {
    pgd_busy_ring *r = malloc(sizeof *r);
    pgd_busy_ring_init(r, T0);
    pgd_busy_ring_add(r, T0, T0 + 5 * S);           /* interval 0: all busy */
    const int64_t hour = PGD_UTIL_INTERVALS * PGD_UTIL_INTERVAL_NS;
    /* An hour and a second later interval 0 has left the window; interval 720 (its slot) is the
     * one in progress, idle: the old slot's 5 s are not carried into it. */
    pgd_busy_history *h = read_at(r, T0 + hour + 1 * S, 0);
    cr_assert_eq(h->n, PGD_UTIL_INTERVALS);
    for (size_t k = 0; k < h->n; k++) cr_assert_float_eq(h->busy_s[k], 0, 1e-12, "interval %zu", k + 1);
    free(h);
    pgd_busy_ring_add(r, T0 + hour, T0 + hour + 2 * S);
    h = read_at(r, T0 + hour + 3 * S, 0);
    cr_assert_float_eq(h->busy_s[PGD_UTIL_INTERVALS - 1], 2, 1e-9);
    cr_assert_float_eq(h->last_s, 3, 1e-9);
    free(h);

    /* A run longer than the hour fills every interval kept and no more. */
    pgd_busy_ring_init(r, T0);
    pgd_busy_ring_add(r, T0, T0 + 2 * hour);
    h = read_at(r, T0 + 2 * hour, 0);
    cr_assert_eq(h->n, PGD_UTIL_INTERVALS);
    for (size_t k = 0; k + 1 < h->n; k++) cr_assert_float_eq(h->busy_s[k], 5, 1e-9, "interval %zu", k);
    cr_assert_float_eq(h->busy_s[h->n - 1], 0, 1e-12, "the interval just begun");
    free(h);
    free(r);
}

/* The device list's ids in order, and each one's busy_seconds. */
static size_t devices_now(const server *s, char ids[][64], double *busy, size_t cap) {
    json_t *v = get_json(s, "/api/v1/devices", 200);
    json_t *devices = json_object_get(v, "devices");
    size_t n = json_array_size(devices);
    cr_assert(n >= 2 && n <= cap);
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(devices, i);
        snprintf(ids[i], 64, "%s", str(d, "id"));
        busy[i] = json_real_value(json_object_get(d, "busy_seconds"));
    }
    json_decref(v);
    return n;
}

/* Asserts the history's shape and returns each device's busy seconds summed over it. */
static void history_now(const server *s, char ids[][64], size_t n, double *sum) {
    json_t *v = get_json(s, "/api/v1/devices/utilisation", 200);
    cr_assert_float_eq(json_number_value(json_object_get(v, "interval_seconds")), 5, 1e-12);
    double last = json_number_value(json_object_get(v, "last_interval_seconds"));
    cr_assert(last >= 0 && last <= 5, "last_interval_seconds %g", last);
    json_t *devices = json_object_get(v, "devices");
    cr_assert_eq(json_array_size(devices), n, "every device, once");
    size_t intervals = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(devices, i);
        cr_assert_str_eq(str(d, "id"), ids[i], "in /api/v1/devices' order");
        json_t *busy = json_object_get(d, "busy_seconds");
        size_t m = json_array_size(busy);
        cr_assert(m >= 1 && m <= PGD_UTIL_INTERVALS, "%zu intervals", m);
        if (i == 0) intervals = m;
        cr_assert_eq(m, intervals, "%s: %zu intervals, the first device %zu", ids[i], m, intervals);
        sum[i] = 0;
        for (size_t k = 0; k < m; k++) {
            double b = json_number_value(json_array_get(busy, k));
            cr_assert(b >= 0 && b <= (k + 1 < m ? 5 : last) + 1e-9, "%s interval %zu: %g s busy",
                      ids[i], k, b);
            sum[i] += b;
        }
    }
    json_decref(v);
}

Test(utilisation, the_history_adds_up_to_each_devices_busy_seconds) {
    server s = start_server();
    char ids[16][64];
    double busy[16], sum[16];
    size_t n = devices_now(&s, ids, busy, 16);
    history_now(&s, ids, n, sum);
    for (size_t i = 0; i < n; i++) cr_assert_float_eq(sum[i], 0, 1e-12, "%s busy before any job", ids[i]);

    json_decref(wait_succeeded(&s, submit_xor(&s, 100, "host")));
    /* the job's end is in the store a moment before its worker stops counting the device busy
     * (it announces the end first): read both figures once the counter stands still */
    double before[16];
    devices_now(&s, ids, before, 16);
    for (int tries = 0; tries < 200; tries++) {
        usleep(20 * 1000);
        devices_now(&s, ids, busy, 16);
        bool still = true;
        for (size_t i = 0; i < n; i++) still &= busy[i] == before[i];
        if (still) break;
        memcpy(before, busy, sizeof before);
    }
    history_now(&s, ids, n, sum);
    for (size_t i = 0; i < n; i++) {
        bool host = strcmp(ids[i], "host") == 0;
        cr_assert(host ? busy[i] > 0 : busy[i] == 0, "%s: %g busy seconds", ids[i], busy[i]);
        cr_assert_float_eq(sum[i], busy[i], 1e-6, "%s: history %g s, counter %g s", ids[i], sum[i], busy[i]);
    }
    stop_server(&s);
}
