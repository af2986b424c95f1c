/* hooks.c: what every job kind tells its caller through the run hooks (pgn_run_hooks): a metric
 * and a log line, each nothing when the caller gave no hook. */
#include <stdarg.h>
#include <stdio.h>

#include "paragon.h"

void pgn_hooks_metric(const pgn_run_hooks *h, const char *name, int64_t step, double value) {
    if (h && h->on_metric) h->on_metric(h->ctx, name, step, value);
}

void pgn_hooks_log(const pgn_run_hooks *h, const char *fmt, ...) {
    if (!h || !h->on_log) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    h->on_log(h->ctx, line);
}
