/* bench_inet.c: the inet suite: every example program of examples/inet on the device's OpenCL
 * reducer (or the host reducer), its interactions, MIPS, peak memory and whether the normal form
 * is the expected one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "embedded.h"
#include "inet/inet.h"

/* ---- inet ---------------------------------------------------------------------------------
 * Every example program (embedded from examples/inet) on the device's OpenCL reducer with its
 * default work-items, or on the host reducer for the host pseudo-device: interactions, median
 * seconds of the reduction (after an untimed warm-up; at least `repeats` runs and INET_MIN_S of
 * them), MIPS, the heap's peak and whether the result is the .expected one. */
#define INET_MIN_S 0.2
#define INET_MAX_RUNS 256
/* The reducer's rate for the cost model is the median MIPS of the programs of at least this many
 * interactions: below it a run is launch-bound, and its MIPS says little of the reducer. */
#define RATE_MIN_INTERACTIONS 1e5
#define RATE_MAX_PROGRAMS 64

/* The MIPS of a run's programs that count toward the reducer's rate. */
typedef struct inet_rates {
    double mips[RATE_MAX_PROGRAMS];
    size_t n;
} inet_rates;

static int inet_once(const pgn_bench_ctx *ctx, const pgn_inet_book *book, pgn_inet_result *r, pgn_error *err) {
    return ctx->dev ? pgn_inet_run_cl(ctx->dev, book, NULL, NULL, 0, NULL, r, err)
                    : pgn_inet_run_host(book, NULL, NULL, NULL, r, err);
}

static int inet_case(const pgn_bench_ctx *ctx, const char *name, const pgn_embedded *prog,
                     const pgn_embedded *expected, json_t *rows, inet_rates *rates, pgn_error *err) {
    pgn_inet_book *book;
    if (pgn_inet_parse((const char *)prog->data, prog->size, &book, err)) return -1;
    pgn_inet_result r = {0};
    double t[INET_MAX_RUNS], total = 0;
    int runs = 0, rc = inet_once(ctx, book, &r, err);
    char verdict[16] = "ok";
    if (rc == 0 && expected) {
        size_t len = strlen(r.normal_form) + 64;
        char *got = malloc(len);
        if (got) snprintf(got, len, "Result: %s\n- ITRS: %llu\n", r.normal_form, (unsigned long long)r.interactions);
        if (!got || strcmp(got, (const char *)expected->data)) snprintf(verdict, sizeof verdict, "differs");
        free(got);
    }
    while (rc == 0 && runs < INET_MAX_RUNS && (runs < ctx->repeats || total < INET_MIN_S)) {
        pgn_inet_result_free(&r);
        rc = inet_once(ctx, book, &r, err);
        if (rc == 0) {
            t[runs++] = r.seconds;
            total += r.seconds;
        }
    }
    if (rc == 0) {
        double sec = pgn_median(t, (size_t)(runs));
        double mips = sec > 0 ? (double)r.interactions / sec / 1e6 : 0;
        if ((double)r.interactions >= RATE_MIN_INTERACTIONS && rates->n < RATE_MAX_PROGRAMS)
            rates->mips[rates->n++] = mips;
        json_t *row = pgn_bench_row(ctx, "inet", name);
        json_object_set_new(row, "work_items",
                            json_integer(ctx->dev ? (json_int_t)pgn_device_get_profile(ctx->dev)->inet_workers : 1));
        json_object_set_new(row, "interactions", json_integer((json_int_t)r.interactions));
        json_object_set_new(row, "seconds", json_real(sec));
        json_object_set_new(row, "mips", json_real(mips));
        json_object_set_new(row, "peak_nodes", json_integer((json_int_t)r.peak_nodes));
        json_object_set_new(row, "result", json_string(verdict));
        json_object_set_new(row, "runs", json_integer(runs));
        json_array_append_new(rows, row);
    }
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    return rc;
}

int pgn_bench_inet(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    inet_rates rates = {.n = 0};
    for (const pgn_embedded *e = pgn_inet_examples; e->name; e++) {
        size_t n = strlen(e->name);
        if (n < 5 || strcmp(e->name + n - 4, ".hvm")) continue;
        char name[64], expected[80];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->name);
        if (!pgn_bench_wants(ctx, name)) continue;
        if (pgn_bench_check_stop(ctx, err)) return -1;
        snprintf(expected, sizeof expected, "%s.expected", name);
        if (inet_case(ctx, name, e, pgn_embedded_find(pgn_inet_examples, expected), rows, &rates, err)) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            pgn_error_set(err, err->code, err->field, "inet %s: %s", name, msg);
            return -1;
        }
    }
    if (rates.n && ctx->rates) ctx->rates->mips = pgn_median(rates.mips, rates.n);
    return 0;
}
