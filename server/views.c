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

/* A time as the store keeps it, or null before it happened. */
static json_t *time_json(const char *t) { return t[0] ? json_string(t) : json_null(); }

/* A JSON part the job owns (NULL: null), as a new reference. */
static json_t *part_json(json_t *v) { return v ? json_incref(v) : json_null(); }

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
static json_t *candidate_json(const pgd_candidate *c) {
    /* member by member: json_pack parses its format on every call, and a GET builds this twice
     * (the chosen candidate, then every one): a twelfth of a GET's CPU */
    json_t *o = json_object();
    json_object_set_new_nocheck(o, "device", json_string(c->device));
    json_object_set_new_nocheck(o, "seconds", json_real(c->estimate.seconds));
    json_object_set_new_nocheck(o, "queue_seconds", json_real(c->queue_seconds));
    json_object_set_new_nocheck(o, "total_seconds", json_real(c->estimate.seconds + c->queue_seconds));
    json_object_set_new_nocheck(o, "work", json_real(c->estimate.work));
    json_object_set_new_nocheck(o, "gflops", json_real(c->rates.gflops));
    json_object_set_new_nocheck(o, "mips", json_real(c->rates.mips));
    json_object_set_new_nocheck(o, "launch_us", json_real(c->rates.launch_us));
    json_object_set_new_nocheck(o, "unit", json_string(pgn_work_unit_name(c->estimate.unit)));
    json_object_set_new_nocheck(o, "measured", json_boolean(c->rates.measured));
    return o;
}

json_t *pgd_placement_json(const pgd_placement *p) {
    if (p->n == 0) return json_null();
    json_t *o = candidate_json(&p->candidates[p->chosen < p->n ? p->chosen : 0]);
    json_t *all = json_array();
    for (size_t i = 0; i < p->n; i++) json_array_append_new(all, candidate_json(&p->candidates[i]));
    json_object_set_new(o, "reason", json_string(pgd_placement_reason_text(p->reason)));
    json_object_set_new(o, "candidates", all);
    return o;
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

json_t *pgd_job_list_json(const pgd_job *job) {
    json_t *o = pgd_job_json(job, false);
    json_object_del(o, "result");
    return o;
}

/* What stands in the object for the spec while it is printed: a string no other member can print
 * as (outside a string a quote is never escaped, inside one always). */
#define SPEC_STAND_IN "\"spec\":\"\\u0001\""

char *pgd_job_text(const pgd_job *job, const char *spec_text, json_t *more) {
    pgd_job stand_in = *job; /* shallow: only its spec differs, and nothing is released here */
    stand_in.spec = json_string("\x01");
    json_t *o = pgd_job_json(&stand_in, true);
    json_decref(stand_in.spec);
    if (more) json_object_update(o, more);
    char *text = pgn_json_dumps(o);
    json_decref(o);
    char *at = text ? strstr(text, SPEC_STAND_IN) : NULL;
    if (!at) return text; /* NULL: out of memory; else cannot happen (printed as it was set) */
    size_t key = strlen("\"spec\":"), head = (size_t)(at - text) + key, spec = strlen(spec_text);
    const char *after = at + strlen(SPEC_STAND_IN);
    size_t tail = strlen(after);
    char *out = malloc(head + spec + tail + 1);
    if (out) {
        memcpy(out, text, head);
        memcpy(out + head, spec_text, spec);
        memcpy(out + head + spec, after, tail + 1);
    }
    free(text);
    return out;
}

json_t *pgd_job_json(const pgd_job *job, bool with_spec) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(job->id));
    json_object_set_new(o, "kind", json_string(pgn_job_kind_name(job->kind)));
    json_object_set_new(o, "name", pgd_json_string_lossy(job->name));
    json_object_set_new(o, "state", json_string(pgd_job_state_name(job->state)));
    json_object_set_new(o, "device_requested", pgd_json_string_lossy(job->device_requested));
    json_object_set_new(o, "device", pgd_json_string_lossy(job->device));
    if (with_spec) json_object_set_new(o, "spec", part_json(job->spec));
    json_object_set_new(o, "progress", json_real(job->progress));
    json_object_set_new(o, "attempts", json_integer(job->attempts));
    json_object_set_new(o, "result", part_json(job->result));
    json_object_set_new(o, "summary", pgd_result_summary_json(job->kind, job->result));
    json_object_set_new(o, "error", job->has_error ? pgd_error_json(&job->error) : json_null());
    json_object_set_new(o, "created_at", time_json(job->created_at));
    json_object_set_new(o, "started_at", time_json(job->started_at));
    json_object_set_new(o, "finished_at", time_json(job->finished_at));
    json_object_set_new(o, "estimate", pgd_placement_json(&job->placement));
    json_object_set_new(o, "cancel_requested", json_boolean(job->cancel_requested));
    json_object_set_new(o, "interrupted", json_integer(job->interrupted));
    json_object_set_new(o, "tags", job->tags ? json_incref(job->tags) : json_object());
    json_object_set_new(o, "priority", json_integer(job->priority));
    json_object_set_new(o, "submission_id",
                        job->submission_id[0] ? pgd_json_string_lossy(job->submission_id) : json_null());
    if (job->runs) { /* a job read alone: where each attempt ran */
        json_t *runs = json_array();
        for (size_t i = 0; i < job->n_runs; i++) {
            const pgd_job_run *r = &job->runs[i];
            json_array_append_new(runs, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "attempt", (json_int_t)r->attempt,
                                                  "node", pgd_json_string_lossy(r->node), "device",
                                                  pgd_json_string_lossy(r->device), "started_at", time_json(r->started_at),
                                                  "ended_at", time_json(r->ended_at), "outcome",
                                                  r->outcome[0] ? json_string(r->outcome) : json_null()));
        }
        json_object_set_new(o, "runs", runs);
    }
    return o;
}
