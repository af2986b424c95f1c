/* views.h: the server's records as JSON, built only here, at the HTTP edge (API replies and
 * event streams): a job object, an error object, and strings from bytes that may not be UTF-8.
 * Inside the server, jobs and errors travel as the structs of store.h and paragon.h. */
#ifndef PGD_VIEWS_H
#define PGD_VIEWS_H

#include "paragon.h"
#include "store.h"

#include <jansson.h>
#include <stdbool.h>

/* {"id","kind","name","state","device_requested","device",["spec",]"progress","attempts",
 * "result","summary","error","created_at","started_at","finished_at","estimate",
 * "cancel_requested","interrupted","tags","priority","submission_id"[,"runs"]}: a new reference. */
json_t *pgd_job_json(const pgd_job *job, bool with_spec);
/* The same with its spec as compact JSON text (malloc'd; NULL out of memory), "spec" in its
 * place taken as it is from spec_text, the stored spec's JSON (never parsed: a GET otherwise
 * spends a fifth of its time parsing and printing it again), more's members (a queued job's
 * "queue"; NULL: none) at the end. */
char *pgd_job_text(const pgd_job *job, const char *spec_text, json_t *more);
/* A row of GET /api/v1/jobs: the same without spec and result ("summary" stands for it). */
json_t *pgd_job_list_json(const pgd_job *job);
/* A result's headline figures by kind (views.c's table), null without a result: a train job's
 * accuracy, loss, epochs, steps; an inet job's normal form cut short, interactions, mips; a
 * bench job's suite and count of rows; a generate job's text cut short, tokens, tokens/s. */
json_t *pgd_result_summary_json(pgn_job_kind kind, const json_t *result);

/* A job's placement as its "estimate": the chosen candidate's {"device", "seconds",
 * "queue_seconds", "total_seconds", "work", "gflops", "mips", "launch_us", "unit", "measured"},
 * its "reason" and every candidate's in "candidates"; null when it has none. New reference. */
json_t *pgd_placement_json(const pgd_placement *placement);
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
