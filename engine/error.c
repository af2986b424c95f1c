/* error.c: pgn_error, the one way the engine reports failure to its callers, and the JSON
 * number helpers that keep float32 values readable in results and specs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paragon.h"

void pgn_error_set(pgn_error *err, const char *code, const char *field, const char *fmt, ...) {
    if (!err) return;
    snprintf(err->code, sizeof err->code, "%s", code ? code : "internal");
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

int pgn_spec_fail(pgn_error *err, const char *field, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pgn_error_set(err, "invalid_spec", field, "%s: %s", field, msg);
    return -1;
}

void pgn_error_clear(pgn_error *err) {
    if (err) memset(err, 0, sizeof *err);
}

json_t *pgn_json_real_f32(float f) {
    char buf[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)f);
        if ((float)strtod(buf, NULL) == f) break;
    }
    return json_real(strtod(buf, NULL));
}

char *pgn_json_dumps(const json_t *value) {
    return json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
}
