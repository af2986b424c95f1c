/* clock.c: the one monotonic clock and the one median that the engine, the server, the CLI and
 * the benchmarks use to time things. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "paragon.h"

int64_t pgn_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double pgn_now_s(void) { return (double)pgn_now_ns() * 1e-9; }

void pgn_utc_now(char *out, size_t size) {
    time_t t = time(NULL);
    struct tm utc;
    gmtime_r(&t, &utc);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

bool pgn_utc_ms(const char *text, int64_t *ms) {
    struct tm tm = {0};
    int milli = 0, used = 0;
    if (!text || sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                        &tm.tm_min, &tm.tm_sec, &milli, &used) != 7 ||
        text[used] != 0)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *ms = (int64_t)timegm(&tm) * 1000 + milli;
    return true;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pgn_median(double *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
