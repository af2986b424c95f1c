/* error.c: pgn_error, the one way the engine reports failure to its callers, with the closed
 * table of its codes (PGN_ERROR_CODES in paragon.h), and the JSON number helpers that keep
 * float32 values readable in results and specs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paragon.h"

static const struct {
    const char *name;
    int status;
} codes[PGN_E_COUNT] = {
#define PGN_ERROR_ROW(id, name, status) [PGN_E_##id] = {name, status},
    PGN_ERROR_CODES(PGN_ERROR_ROW)
#undef PGN_ERROR_ROW
};

const char *pgn_error_code_name(pgn_error_code code) {
    return (unsigned)code < PGN_E_COUNT && code != PGN_E_NONE ? codes[code].name
                                                              : codes[PGN_E_INTERNAL].name;
}

int pgn_error_code_status(pgn_error_code code) {
    return (unsigned)code < PGN_E_COUNT && code != PGN_E_NONE ? codes[code].status
                                                              : codes[PGN_E_INTERNAL].status;
}

int pgn_error_code_parse(const char *name, pgn_error_code *out) {
    for (int i = 1; i < PGN_E_COUNT && name; i++)
        if (!strcmp(codes[i].name, name)) {
            *out = (pgn_error_code)i;
            return 0;
        }
    return -1;
}

void pgn_error_set(pgn_error *err, pgn_error_code code, const char *field, const char *fmt, ...) {
    if (!err) return;
    err->code = (unsigned)code < PGN_E_COUNT && code != PGN_E_NONE ? code : PGN_E_INTERNAL;
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
    pgn_error_set(err, PGN_E_INVALID_SPEC, field, "%s: %s", field, msg);
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

