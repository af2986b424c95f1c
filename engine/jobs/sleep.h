/* sleep.h: the sleep job (jobs/sleep.c): holds its device for a time without computing, so that
 * the queue, placement and a cluster can be tried and measured without using the CPU. */
#ifndef PGN_JOBS_SLEEP_H
#define PGN_JOBS_SLEEP_H

#include "core.h"

/* Parses a sleep spec's own field: "seconds" (required, 0..PGN_SLEEP_MAX_SECONDS). */
int pgn_sleep_spec_parse(const json_t *root, pgn_sleep_spec *out, pgn_error *err);
/* {"seconds": S}. New reference. */
json_t *pgn_sleep_spec_to_json(const pgn_sleep_spec *spec);
/* Waits spec->seconds, reporting progress every SLEEP_SLICE_S and stopping (PGN_E_CANCELLED)
 * within one when hooks->should_stop says so. *result: {"seconds": the time it waited}. */
int pgn_sleep_run(const pgn_sleep_spec *spec, const pgn_run_hooks *hooks, json_t **result, pgn_error *err);

#endif
