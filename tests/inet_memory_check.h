/* inet_memory_check.h: what a reducer's run held (pgn_inet_result's peaks) against what
 * pgn_inet_memory_estimate allows for the same program, max_nodes and device, and the programs
 * that push the bounds. Shared by test_inet.c (host reducer) and test_inet_cl.c (device). */
#ifndef PGN_TEST_INET_MEMORY_CHECK_H
#define PGN_TEST_INET_MEMORY_CHECK_H

#include <criterion/criterion.h>

#include "inet/inet.h"

/* The reproducer: every CALL of @f makes two more, so the net grows without end (with
 * max_nodes 2^31 on the host it took memory at ~300 MB/s until the OOM killer stopped paragond). */
#define INET_RUNAWAY "@f = (* (r0 r1)) & @f ~ (* r0) & @f ~ (* r1)\n@main = r & @f ~ (* r)\n"

/* 100,000 turns of a loop whose every turn makes four redexes of two nullary ports (REF ~ ERA,
 * ERA ~ NUM, REF ~ NUM, ERA ~ ERA): counted as they are made, they never reach a bag. */
#define INET_VOID_FLOOD                                                                        \
    "@e = *\n@loop = (?((0 @step) r) r)\n"                                                     \
    "@step = (p r) & @loop ~ (p r) & * ~ @e & * ~ 7 & @e ~ 5 & * ~ *\n"                        \
    "@main = r & @loop ~ (100000 r)\n"

/* The estimate for program on where (NULL: the host reducer), or the test fails. */
static inline pgn_inet_memory inet_estimate(const char *program, uint64_t max_nodes, const pgn_device_info *where,
                                            unsigned work_items) {
    pgn_inet_spec spec = {.program = (char *)program, .max_nodes = max_nodes, .work_items = (int)work_items};
    pgn_inet_memory m;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_memory_estimate(&spec, where, &m, &err), 0, "%s", err.message);
    return m;
}

/* r (a finished or a stopped run) held no more than the estimate allows, on each side. */
static inline void inet_assert_within(const pgn_inet_result *r, const char *program, uint64_t max_nodes,
                                      const pgn_device_info *where, unsigned work_items, const char *what) {
    pgn_inet_memory m = inet_estimate(program, max_nodes, where, work_items);
    cr_assert_gt(r->peak_bytes, 0, "%s: no peak_bytes", what);
    cr_assert_leq(r->peak_device_bytes, m.device.total, "%s: %llu device bytes, estimate %llu", what,
                  (unsigned long long)r->peak_device_bytes, (unsigned long long)m.device.total);
    cr_assert_leq(r->peak_bytes - r->peak_device_bytes, m.host.total, "%s: %llu host bytes, estimate %llu", what,
                  (unsigned long long)(r->peak_bytes - r->peak_device_bytes), (unsigned long long)m.host.total);
}

#endif
