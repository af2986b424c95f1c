/* views.c: owns how the server's records look as JSON, the one place they are turned into it at
 * the HTTP edge (API replies and event streams): a job, an error, and text whose bytes may not
 * be UTF-8. The store keeps errors in this same shape. */
#include "views.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p) {
    if (p[0] < 0x80) return 1;
    size_t n = p[0] >= 0xF5 ? 0 : p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

/* Engine messages may carry a compiler log or be cut mid-character at their size limit;
 * jansson takes only valid UTF-8, so bad bytes become '?'. */
json_t *pgd_json_string_lossy(const char *text) {
    json_t *v = json_string(text);
    if (v) return v;
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy) return json_string("");
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        size_t n = utf8_len(p);
        if (n == 0) {
            copy[o++] = '?';
            p++;
        } else {
            memcpy(copy + o, p, n);
            o += n;
            p += n;
        }
    }
    copy[o] = 0;
    v = json_string(copy);
    if (!v) { /* overlong forms and surrogates pass utf8_len: keep ASCII only */
        for (char *c = copy; *c; c++)
            if ((unsigned char)*c >= 0x80) *c = '?';
        v = json_string(copy);
    }
    free(copy);
    return v;
}

json_t *pgd_error_json(const pgn_error *err) {
    json_t *o = json_object();
    json_object_set_new(o, "code", json_string(pgn_error_code_name(err->code)));
    json_object_set_new(o, "message", pgd_json_string_lossy(err->message));
    json_object_set_new(o, "field", err->field[0] ? pgd_json_string_lossy(err->field) : json_null());
    return o;
}

void pgd_error_from_json(const json_t *o, pgn_error *out) {
    pgn_error_clear(out);
    const char *code = json_string_value(json_object_get(o, "code"));
    const char *message = json_string_value(json_object_get(o, "message"));
    const char *field = json_string_value(json_object_get(o, "field"));
    if (pgn_error_code_parse(code, &out->code) < 0) out->code = PGN_E_INTERNAL; /* stored by another build */
    snprintf(out->message, sizeof out->message, "%s", message ? message : "");
    snprintf(out->field, sizeof out->field, "%s", field ? field : "");
}

/* ---- a job's placement ------------------------------------------------------------------- */

const char *pgd_placement_reason_text(pgd_placement_reason reason) {
    switch (reason) {
    case PGD_PLACED_BY_NAME: return "asked for by name";
    case PGD_PLACED_FASTEST: return "the shortest estimated finish (estimate + queued)";
    case PGD_PLACED_ONLY: return "the only device";
    }
    return "asked for by name";
}

/* One device weighed: the job's estimate there, the queue it would wait behind, and the rates
 * the estimate used. */
static void candidate_write(pgn_json_writer *w, const pgd_candidate *c) {
    pgn_jw_object(w);
    pgn_jw_key(w, "device");
    pgn_jw_string(w, c->device);
    pgn_jw_key(w, "seconds");
    pgn_jw_real(w, c->estimate.seconds);
    pgn_jw_key(w, "queue_seconds");
    pgn_jw_real(w, c->queue_seconds);
    pgn_jw_key(w, "total_seconds");
    pgn_jw_real(w, c->estimate.seconds + c->queue_seconds);
    pgn_jw_key(w, "work");
    pgn_jw_real(w, c->estimate.work);
    pgn_jw_key(w, "gflops");
    pgn_jw_real(w, c->rates.gflops);
    pgn_jw_key(w, "mips");
    pgn_jw_real(w, c->rates.mips);
    pgn_jw_key(w, "launch_us");
    pgn_jw_real(w, c->rates.launch_us);
    pgn_jw_key(w, "unit");
    pgn_jw_string(w, pgn_work_unit_name(c->estimate.unit));
    pgn_jw_key(w, "measured");
    pgn_jw_bool(w, c->rates.measured);
}

/* The chosen candidate's members, the reason and every candidate; null without candidates. */
static void placement_write(pgn_json_writer *w, const pgd_placement *p) {
    if (p->n == 0) {
        pgn_jw_null(w);
        return;
    }
    candidate_write(w, &p->candidates[p->chosen < p->n ? p->chosen : 0]); /* left open */
    pgn_jw_key(w, "reason");
    pgn_jw_string(w, pgd_placement_reason_text(p->reason));
    pgn_jw_key(w, "candidates");
    pgn_jw_array(w);
    for (size_t i = 0; i < p->n; i++) {
        candidate_write(w, &p->candidates[i]);
        pgn_jw_end(w);
    }
    pgn_jw_end(w);
    pgn_jw_end(w);
}

/* ---- a result's headline figures ------------------------------------------------------ */

/* Characters of a long text kept in a summary (an inet normal form, a generated text): a line
 * of a table, not the text. */
#define SUMMARY_TEXT_CHARS 64
#define SUMMARY_COPY_MAX 6

/* What a list row shows of each kind's result instead of the result itself (a bench job of
 * every suite holds 15 KB of rows, and a page of 50 jobs was most of a megabyte): scalars
 * copied as they are, texts cut to SUMMARY_TEXT_CHARS, one array as its length. */
static const struct {
    pgn_job_kind kind;
    const char *copy[SUMMARY_COPY_MAX]; /* numbers and short strings; missing ones are left out */
    const char *cut[2];                 /* texts that may be long (missing ones are left out) */
    const char *count;                  /* an array, given as its length */
} summary_fields[] = {
    {PGN_JOB_TRAIN, {"accuracy", "loss", "epochs", "steps", "tokens_per_second", "seconds"}, {NULL}, NULL},
    /* a pgl program's value (in pgl's syntax) first, what a user asked for; then the net */
    {PGN_JOB_INET, {"interactions", "mips", "seconds"}, {"value", "normal_form"}, NULL},
    {PGN_JOB_BENCH, {"suite"}, {NULL}, "rows"},
    {PGN_JOB_GENERATE, {"tokens", "tokens_per_second", "seconds"}, {"text"}, NULL},
    {PGN_JOB_SLEEP, {"seconds"}, {NULL}, NULL},
};

/* text's first max characters (UTF-8 code points) and an ellipsis when there were more. */
static json_t *cut_text(const char *text, size_t max) {
    size_t i = 0, chars = 0;
    while (text[i] && chars < max) {
        i++;
        while (((unsigned char)text[i] & 0xC0) == 0x80) i++; /* jansson holds valid UTF-8 */
        chars++;
    }
    if (!text[i]) return json_string(text);
    char *out = malloc(i + 4);
    if (!out) return json_null();
    memcpy(out, text, i);
    memcpy(out + i, "\xE2\x80\xA6", 4); /* U+2026 and the NUL */
    json_t *v = json_string(out);
    free(out);
    return v;
}

json_t *pgd_result_summary_json(pgn_job_kind kind, const json_t *result) {
    if (!json_is_object(result)) return json_null();
    json_t *o = json_object();
    for (size_t k = 0; k < sizeof summary_fields / sizeof summary_fields[0]; k++) {
        if (summary_fields[k].kind != kind) continue;
        /* the texts first, as a table shows them first */
        const char *count = summary_fields[k].count;
        for (int t = 0; t < 2 && summary_fields[k].cut[t]; t++) {
            const char *cut = summary_fields[k].cut[t], *text = json_string_value(json_object_get(result, cut));
            if (text) json_object_set_new(o, cut, cut_text(text, SUMMARY_TEXT_CHARS));
        }
        for (size_t i = 0; i < SUMMARY_COPY_MAX && summary_fields[k].copy[i]; i++) {
            json_t *v = json_object_get(result, summary_fields[k].copy[i]);
            if (v && !json_is_object(v) && !json_is_array(v))
                json_object_set(o, summary_fields[k].copy[i], v);
        }
        json_t *arr = count ? json_object_get(result, count) : NULL;
        if (json_is_array(arr)) json_object_set_new(o, count, json_integer((json_int_t)json_array_size(arr)));
    }
    return o;
}

/* A member holding text as a JSON string, bytes that are not UTF-8 replaced by '?'
 * (pgd_json_string_lossy); ASCII, as names and device ids nearly always are, as it is. */
static void lossy_member(pgn_json_writer *w, const char *key, const char *text) {
    pgn_jw_key(w, key);
    const unsigned char *p = (const unsigned char *)text;
    while (*p && *p < 0x80) p++;
    if (!*p) {
        pgn_jw_string(w, text);
        return;
    }
    json_t *v = pgd_json_string_lossy(text);
    pgn_jw_value(w, v);
    json_decref(v);
}

/* A member holding a time as the store keeps it, or null before it happened. */
static void time_member(pgn_json_writer *w, const char *key, const char *t) {
    pgn_jw_key(w, key);
    if (t[0]) pgn_jw_string(w, t);
    else pgn_jw_null(w);
}

void pgd_job_members(pgn_json_writer *w, const pgd_job *job, const pgd_job_shape *shape) {
    pgn_jw_key(w, "id");
    pgn_jw_int(w, job->id);
    pgn_jw_key(w, "kind");
    pgn_jw_string(w, pgn_job_kind_name(job->kind));
    lossy_member(w, "name", job->name);
    pgn_jw_key(w, "state");
    pgn_jw_string(w, pgd_job_state_name(job->state));
    lossy_member(w, "device_requested", job->device_requested);
    lossy_member(w, "device", job->device);
    if (shape->spec) {
        pgn_jw_key(w, "spec");
        if (shape->spec_text) pgn_jw_raw(w, shape->spec_text, strlen(shape->spec_text));
        else pgn_jw_value(w, job->spec);
    }
    pgn_jw_key(w, "progress");
    pgn_jw_real(w, job->progress);
    pgn_jw_key(w, "attempts");
    pgn_jw_int(w, job->attempts);
    if (!shape->list && !shape->truncated) {
        pgn_jw_key(w, "result");
        pgn_jw_value(w, job->result);
    }
    pgn_jw_key(w, "summary");
    json_t *summary = pgd_result_summary_json(job->kind, job->result);
    pgn_jw_value(w, summary);
    json_decref(summary);
    pgn_jw_key(w, "error");
    if (job->has_error) {
        json_t *e = pgd_error_json(&job->error);
        pgn_jw_value(w, e);
        json_decref(e);
    } else {
        pgn_jw_null(w);
    }
    time_member(w, "created_at", job->created_at);
    time_member(w, "started_at", job->started_at);
    time_member(w, "finished_at", job->finished_at);
    if (!shape->truncated) {
        pgn_jw_key(w, "estimate");
        placement_write(w, &job->placement);
    }
    pgn_jw_key(w, "cancel_requested");
    pgn_jw_bool(w, job->cancel_requested);
    pgn_jw_key(w, "interrupted");
    pgn_jw_int(w, job->interrupted);
    pgn_jw_key(w, "tags");
    if (job->tags) {
        pgn_jw_value(w, job->tags);
    } else {
        pgn_jw_object(w);
        pgn_jw_end(w);
    }
    pgn_jw_key(w, "priority");
    pgn_jw_int(w, job->priority);
    if (job->submission_id[0]) {
        lossy_member(w, "submission_id", job->submission_id);
    } else {
        pgn_jw_key(w, "submission_id");
        pgn_jw_null(w);
    }
    if (job->runs) { /* a job read alone: where each attempt ran */
        pgn_jw_key(w, "runs");
        pgn_jw_array(w);
        for (size_t i = 0; i < job->n_runs; i++) {
            const pgd_job_run *r = &job->runs[i];
            pgn_jw_object(w);
            pgn_jw_key(w, "attempt");
            pgn_jw_int(w, r->attempt);
            lossy_member(w, "node", r->node);
            lossy_member(w, "device", r->device);
            time_member(w, "started_at", r->started_at);
            time_member(w, "ended_at", r->ended_at);
            pgn_jw_key(w, "outcome");
            if (r->outcome[0]) pgn_jw_string(w, r->outcome);
            else pgn_jw_null(w);
            pgn_jw_end(w);
        }
        pgn_jw_end(w);
    }
    if (shape->truncated) {
        pgn_jw_key(w, "truncated");
        pgn_jw_bool(w, true);
    }
}

char *pgd_job_text(const pgd_job *job, const pgd_job_shape *shape, const json_t *more) {
    pgn_json_writer w = {0};
    pgn_jw_object(&w);
    pgd_job_members(&w, job, shape);
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)more, key, member) {
        pgn_jw_key(&w, key);
        pgn_jw_value(&w, member);
    }
    pgn_jw_end(&w);
    return pgn_jw_take(&w);
}

json_t *pgd_job_json(const pgd_job *job, bool with_spec) {
    char *text = pgd_job_text(job, &(pgd_job_shape){.spec = with_spec}, NULL);
    json_t *o = pgn_json_loads(text);
    free(text);
    return o;
}
