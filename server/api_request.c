/* api_request.c: what every handler of the API shares: reading a request's query arguments,
 * numbers, ISO 8601 times and JSON body (its media type, then admission's shape limits, then its
 * syntax), and the error replies for what is wrong with them or with the store. */
#include "api_internal.h"

#include "admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A store that cannot take writes just now (disk full): 503, come back later. */
#define STORE_UNAVAILABLE_RETRY_AFTER_S "5"

/* Store and other server-side failures: the only 500s, or 503 while the store refuses writes
 * for a reason that passes. */
enum MHD_Result api_internal_error(const pgd_request *req, const pgn_error *err) {
    char *path = pgn_text_visible(req->path); /* a client's: %1b decodes to an escape */
    fprintf(stderr, "paragond: %s %s: %s\n", req->method, path ? path : "?", err->message);
    free(path);
    if (err->code == PGN_E_STORE_UNAVAILABLE) {
        const pgd_header h[] = {{MHD_HTTP_HEADER_RETRY_AFTER, STORE_UNAVAILABLE_RETRY_AFTER_S},
                                {NULL, NULL}};
        return pgd_reply_pgn_error(req, err, NULL, h);
    }
    return pgd_reply_pgn_error(req, err, NULL, NULL);
}

/* A non-negative decimal integer, digits only. */
bool api_parse_count(const char *text, int64_t *out) {
    if (!*text) return false;
    int64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        if (v > (INT64_MAX - (*p - '0')) / 10) return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

/* A decimal integer with an optional '-'. */
bool api_parse_int(const char *text, int64_t *out) {
    if (*text == '-') {
        int64_t v;
        if (!api_parse_count(text + 1, &v)) return false;
        *out = -v;
        return true;
    }
    return api_parse_count(text, out);
}

/* A query argument; an empty value ("?state=") counts as absent, as forms send it. */
const char *api_query(const pgd_request *req, const char *name) {
    const char *v = pgd_request_query(req, name);
    return v && *v ? v : NULL;
}

/* "application/json", any case, optionally followed by parameters ("; charset=utf-8"). */
static bool is_json_media_type(const char *ct) {
    if (!ct) return false;
    while (*ct == ' ' || *ct == '\t') ct++;
    static const char want[] = "application/json";
    if (strncasecmp(ct, want, sizeof want - 1) != 0) return false;
    ct += sizeof want - 1;
    while (*ct == ' ' || *ct == '\t') ct++;
    return *ct == 0 || *ct == ';';
}

/* An error reply with extra members (taken) merged into its error object. */
enum MHD_Result api_reply_limit(const pgd_request *req, const pgn_error *err, json_t *extra,
                                const pgd_header *headers) {
    enum MHD_Result r = pgd_reply_pgn_error(req, err, extra, headers);
    json_decref(extra);
    return r;
}

/* The request's body as a JSON object: NULL after replying why it is not one (media type,
 * size and depth limits, syntax). */
json_t *api_read_json_body(const pgd_request *req, enum MHD_Result *reply) {
    if (!is_json_media_type(pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        const char *ct = pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
        *reply = pgd_reply_error(req, PGN_E_UNSUPPORTED_MEDIA_TYPE, NULL,
                                 "Content-Type must be application/json, not %s%s%s", ct ? "'" : "",
                                 ct ? ct : "missing", ct ? "'" : "");
        return NULL;
    }
    pgn_error lerr;
    json_t *extra;
    if (pgd_admit_json(req->body, req->body_len, &lerr, &extra) < 0) {
        *reply = api_reply_limit(req, &lerr, extra, NULL);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        pgn_error err;
        pgn_error_clear(&err);
        pgn_error_set(&err, PGN_E_INVALID_JSON, "", "invalid JSON at line %d, column %d: %s",
                      jerr.line, jerr.column, jerr.text);
        json_t *where = json_pack("{s:i, s:i}", "line", jerr.line, "column", jerr.column);
        *reply = pgd_reply_pgn_error(req, &err, where, NULL);
        json_decref(where);
    }
    return root;
}

enum MHD_Result api_bad_param(const pgd_request *req, const char *name, const char *value, const char *want) {
    return pgd_reply_error(req, PGN_E_INVALID_PARAMETER, name,
                           "%s: '%s' is not %s", name, value, want);
}

/* A store error about one job: a missing job is 404, a job in the wrong state 409. */
enum MHD_Result api_job_error(const pgd_request *req, const pgn_error *err) {
    if (err->code == PGN_E_NOT_FOUND)
        return pgd_reply_pgn_error(req, err, NULL, NULL);
    if (err->code == PGN_E_CONFLICT)
        return pgd_reply_pgn_error(req, err, NULL, NULL);
    return api_internal_error(req, err);
}

/* Exactly n decimal digits at *p into *out, moving past them. */
static bool take_digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9') return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

/* An ISO 8601 time as the store writes created_at ("2025-01-31T12:00:00.000Z", UTC): a date
 * alone is its midnight in UTC; a time needs its zone (Z or +hh:mm/-hh:mm), seconds and their
 * fraction are optional (cut to milliseconds). NULL when it is one, else what is wrong. */
const char *api_iso_param(const char *text, char out[32]) {
    static const char *const not_iso = "an ISO 8601 time (2025-01-31, 2025-01-31T12:00:00Z, "
                                       "2025-01-31T14:00:00.250+02:00)";
    struct tm tm = {0};
    int year, mon, day, hour = 0, min = 0, sec = 0, ms = 0, off = 0;
    const char *p = text;
    if (!take_digits(&p, 4, &year) || *p++ != '-' || !take_digits(&p, 2, &mon) || *p++ != '-' ||
        !take_digits(&p, 2, &day))
        return not_iso;
    if (*p) {
        if (*p != 'T' && *p != 't') return not_iso;
        p++;
        if (!take_digits(&p, 2, &hour) || *p++ != ':' || !take_digits(&p, 2, &min)) return not_iso;
        if (*p == ':' && (p++, !take_digits(&p, 2, &sec))) return not_iso;
        if (*p == '.' || *p == ',') {
            p++;
            int digits = 0;
            for (; *p >= '0' && *p <= '9'; p++, digits++)
                if (digits < 3) ms = ms * 10 + (*p - '0');
            if (!digits) return not_iso;
            for (; digits < 3; digits++) ms *= 10;
        }
        if (!*p) return "an ISO 8601 time with its zone: end it with Z (UTC) or an offset such as +02:00";
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om;
            if (!take_digits(&p, 2, &oh) || *p++ != ':' || !take_digits(&p, 2, &om) || oh > 23 || om > 59)
                return not_iso;
            off = sign * (oh * 60 + om) * 60;
        }
        if (*p) return not_iso;
    }
    if (hour > 23 || min > 59 || sec > 59) return "an ISO 8601 time: hours 00-23, minutes and seconds 00-59";
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    /* timegm normalises 2025-02-30 to March: a date that moved was not one. */
    if (mon < 1 || mon > 12 || day < 1 || tm.tm_mon != mon - 1 || tm.tm_mday != day)
        return "an ISO 8601 time: that day does not exist";
    t -= off;
    struct tm utc;
    gmtime_r(&t, &utc);
    char stamp[24];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    snprintf(out, 32, "%.19s.%03uZ", stamp, (unsigned)ms % 1000u); /* ms is 0..999 already */
    return NULL;
}
