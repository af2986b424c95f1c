/* spec_fields.c: reading the fields of a JSON job spec, for every part's spec parser: objects,
 * strings, integers, floats (judged as the float the engine will use), booleans, choices from a
 * list, and unknown keys refused. Every error names the field's JSON path (pgn_spec_fail). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

static void join_path(char *out, size_t size, const char *prefix, const char *key) {
    if (prefix[0])
        snprintf(out, size, "%s.%s", prefix, key);
    else
        snprintf(out, size, "%s", key);
}

/* Rejects keys outside allowed (a NULL-terminated list), naming the first unknown one. */
int pgn_spec_only_keys(const json_t *obj, const char *prefix, const char *const *allowed,
                     pgn_error *err) {
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, key)) ok = 1;
        if (!ok) {
            char path[128], expected[512] = "";
            join_path(path, sizeof path, prefix, key);
            for (const char *const *a = allowed; *a; a++) {
                strncat(expected, *a, sizeof expected - strlen(expected) - 1);
                if (a[1]) strncat(expected, ", ", sizeof expected - strlen(expected) - 1);
            }
            return pgn_spec_fail(err, path, "unknown field (expected one of: %s)", expected);
        }
    }
    return 0;
}

const json_t *pgn_spec_object(const json_t *parent, const char *key, const char *path,
                                bool required, pgn_error *err, int *rc) {
    const json_t *v = json_object_get(parent, key);
    *rc = 0;
    if (!v) {
        if (required) *rc = pgn_spec_fail(err, path, "required object is missing");
        return NULL;
    }
    if (!json_is_object(v)) {
        *rc = pgn_spec_fail(err, path, "must be an object");
        return NULL;
    }
    return v;
}

/* Reads an optional string into out; returns -1 on a type error. */
int pgn_spec_string(const json_t *obj, const char *key, const char *path, char *out,
                      size_t size, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_string(v)) return pgn_spec_fail(err, path, "must be a string");
    if (json_string_length(v) >= size)
        return pgn_spec_fail(err, path, "must be at most %zu characters", size - 1);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return pgn_spec_fail(err, path, "must not contain NUL characters");
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

int pgn_spec_int(const json_t *obj, const char *key, const char *path, long long lo,
                   long long hi, long long *out, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_integer(v)) return pgn_spec_fail(err, path, "must be an integer");
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return pgn_spec_fail(err, path, "must be between %lld and %lld", lo, hi);
    *out = x;
    return 0;
}

/* lo_open: the lower bound itself is not allowed. */
int pgn_spec_float(const json_t *obj, const char *key, const char *path, double lo, bool lo_open,
                     double hi, float *out, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_number(v)) return pgn_spec_fail(err, path, "must be a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return pgn_spec_fail(err, path, "must be %s %g and <= %g", lo_open ? ">" : ">=", lo, hi);
    /* The engine computes in float: judge the value it will use. 1e-320 is > 0 as a double and
     * 0 as a float. */
    float f = (float)x;
    if (lo_open && f == (float)lo)
        return pgn_spec_fail(err, path,
                             "%g is %g as a 32-bit float, which the engine computes with; must be > "
                             "%g (the smallest float above it is %g)",
                             x, (double)f, lo, (double)nextafterf((float)lo, INFINITY));
    *out = f;
    return 0;
}

/* Names and ids are shown in logs, tables and terminals: no control characters in them. */
int pgn_spec_no_controls(const char *s, const char *path, pgn_error *err) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return pgn_spec_fail(err, path, "control character 0x%02x at offset %zu is not allowed",
                                 *p, (size_t)(p - (const unsigned char *)s));
    return 0;
}

/* A string field that must be one of names (NULL-terminated); *out gets its index. */
int pgn_spec_choice(const json_t *obj, const char *key, const char *path,
                      const char *const *names, int *out, pgn_error *err) {
    char value[64] = "";
    if (pgn_spec_string(obj, key, path, value, sizeof value, err)) return -1;
    if (!json_object_get(obj, key)) return 0;
    char expected[256] = "";
    for (int i = 0; names[i]; i++) {
        if (!strcmp(names[i], value)) {
            *out = i;
            return 0;
        }
        strncat(expected, names[i], sizeof expected - strlen(expected) - 1);
        if (names[i + 1]) strncat(expected, ", ", sizeof expected - strlen(expected) - 1);
    }
    return pgn_spec_fail(err, path, "unknown value '%s' (expected one of: %s)", value, expected);
}

int pgn_spec_bool(const json_t *obj, const char *key, const char *path, bool *out,
                    pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_boolean(v)) return pgn_spec_fail(err, path, "must be true or false");
    *out = json_is_true(v);
    return 0;
}
