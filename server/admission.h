/* admission.h: what paragond refuses before it stores a job: request bodies nested too deeply or
 * holding too long an array, models with too many parameters, and train jobs whose estimated
 * device memory exceeds the placed device's. The queue limit (429) is checked in api.c, where
 * the insert is. Every refusal is code "limit_exceeded" with "limit", "max" and "value". */
#ifndef PGD_ADMISSION_H
#define PGD_ADMISSION_H

#include "paragon.h"

#include <jansson.h>
#include <stddef.h>

/* A job spec is a few levels deep and its longest array is a layer list (16) or a bench case
 * list; these bounds leave room for any real spec while keeping jansson's recursion and a
 * 1 MB body's element count small. */
#define PGD_JSON_MAX_DEPTH 32
#define PGD_JSON_MAX_ARRAY 10000
/* 50M float parameters: 200 MB of weights, 600-800 MB with gradients and optimizer state, and
 * well inside the engine's int element counts. */
#define PGD_MAX_PARAMS 50000000ull
#define PGD_DEFAULT_MAX_QUEUED 1000
#define PGD_MAX_QUEUED_LIMIT 1000000000LL
#define PGD_MAX_QUEUED_LIMIT_TEXT "1000000000"

/* Scans a request body (before jansson parses it) for nesting deeper than
 * PGD_JSON_MAX_DEPTH or an array with more than PGD_JSON_MAX_ARRAY elements. Returns 0, or -1
 * with err set and *extra a new object {"limit","max","line","column"} for the error reply. */
int pgd_admit_json(const char *body, size_t len, pgn_error *err, json_t **extra);

/* Checks a parsed spec against the parameter limit and, for train jobs, its estimated device
 * memory against placed's (for the host pseudo-device: the machine's physical memory).
 * Returns 0, or -1 with err set (field naming what does not fit) and *extra a new object with
 * the limit, the numbers and, for memory, the estimate's parts in bytes. */
int pgd_admit_job(const pgn_job_spec *spec, const pgn_device_info *placed, pgn_error *err,
                         json_t **extra);

#endif
