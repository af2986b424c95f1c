/* sleep.c: the sleep job (sleep.h). */
#include "jobs/sleep.h"

#include <math.h>
#include <time.h>

/* How often a sleeping job reports progress and asks whether to stop. */
#define SLEEP_SLICE_S 0.05

int pgn_sleep_spec_parse(const json_t *root, pgn_sleep_spec *out, pgn_error *err) {
    static const char *const keys[] = {"kind", "name", "device", "seconds", NULL};
    if (pgn_spec_only_keys(root, "", keys, err)) return -1;
    const json_t *v = json_object_get(root, "seconds");
    if (!v) return pgn_spec_fail(err, "seconds", "required (how long the job holds its device)");
    if (!json_is_number(v)) return pgn_spec_fail(err, "seconds", "must be a number");
    double s = json_number_value(v);
    if (!isfinite(s) || s < 0 || s > PGN_SLEEP_MAX_SECONDS)
        return pgn_spec_fail(err, "seconds", "must be between 0 and %d", PGN_SLEEP_MAX_SECONDS);
    out->seconds = s;
    return 0;
}

json_t *pgn_sleep_spec_to_json(const pgn_sleep_spec *spec) { return json_pack("{s:f}", "seconds", spec->seconds); }

int pgn_sleep_run(const pgn_sleep_spec *spec, const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    double start = pgn_now_s(), until = start + spec->seconds;
    for (;;) {
        double now = pgn_now_s();
        if (hooks && hooks->on_progress)
            hooks->on_progress(hooks->ctx, spec->seconds > 0 ? fmin(1.0, (now - start) / spec->seconds) : 1.0);
        if (now >= until) break;
        if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
            pgn_error_set(err, PGN_E_CANCELLED, "", "stopped after %.3f of %g s", now - start, spec->seconds);
            return -1;
        }
        double left = fmin(until - now, SLEEP_SLICE_S);
        struct timespec ts = {.tv_sec = (time_t)left, .tv_nsec = (long)((left - floor(left)) * 1e9)};
        nanosleep(&ts, NULL);
    }
    *result = json_pack("{s:f}", "seconds", pgn_now_s() - start);
    if (*result) return 0;
    pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
    return -1;
}
