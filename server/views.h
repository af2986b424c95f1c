/* views.h: the server's records as JSON, built only here, at the HTTP edge (API replies and
 * event streams): a job object, an error object, and strings from bytes that may not be UTF-8.
 * Inside the server, jobs and errors travel as the structs of store.h and paragon.h. */
#ifndef PGD_VIEWS_H
#define PGD_VIEWS_H

#include "paragon.h"
#include "store.h"

#include <jansson.h>
#include <stdbool.h>

/* What of a job its object shows beyond the members every one has. */
typedef struct pgd_job_shape {
    /* "spec" after "device": spec_text, the stored spec's JSON taken as it is (never parsed: a
     * GET otherwise spends a fifth of its time parsing and printing it again), or job->spec when
     * spec_text is NULL */
    bool spec;
    const char *spec_text;
    bool list;      /* a row of GET /api/v1/jobs: no "result" ("summary" stands for it) */
    bool truncated; /* an event too big for a frame: no "result" or "estimate" (an inet job's
                     * normal form can be megabytes), "truncated": true at the end */
} pgd_job_shape;

/* A job's members, into an object w has open: "id","kind","name","state","device_requested",
 * "device",["spec",]"progress","attempts","result","summary","error","created_at","started_at",
 * "finished_at","estimate","cancel_requested","interrupted","tags","priority","submission_id"
 * [,"runs"]: written, never built (a GET's object built as jansson values cost three times what
 * writing it does). The one home of a job's shape; the caller adds its own members after them. */
void pgd_job_members(pgn_json_writer *w, const pgd_job *job, const pgd_job_shape *shape);
/* The object as compact JSON text with more's members (NULL: none) at its end; malloc'd, NULL
 * when memory ran out. */
char *pgd_job_text(const pgd_job *job, const pgd_job_shape *shape, const json_t *more);
/* The same read back as a jansson value (the tests compare jobs so); a new reference. */
json_t *pgd_job_json(const pgd_job *job, bool with_spec);
/* A result's headline figures by kind (views.c's table), null without a result: a train job's
 * accuracy, loss, epochs, steps; an inet job's normal form cut short, interactions, mips; a
 * bench job's suite and count of rows; a generate job's text cut short, tokens, tokens/s. */
json_t *pgd_result_summary_json(pgn_job_kind kind, const json_t *result);

/* Why a job went where it did, as a sentence ("the only device"): its estimate's "reason" and
 * its first log line's. */
const char *pgd_placement_reason_text(pgd_placement_reason reason);

/* {"code","message","field"} of an error (field null when empty): what a failed job stores
 * in its error column and what an error reply carries. New reference. */
json_t *pgd_error_json(const pgn_error *err);
/* The same read back (a missing code reads as "internal"). */
void pgd_error_from_json(const json_t *o, pgn_error *out);

/* text as a JSON string, bytes that are not UTF-8 replaced by '?'. New reference. */
json_t *pgd_json_string_lossy(const char *text);

#endif
