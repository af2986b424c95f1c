/* launcher.h: distributed train jobs run as mpirun's ranks (launcher.c; docs/distributed.md). */
#ifndef PGD_LAUNCHER_H
#define PGD_LAUNCHER_H

#include "paragon.h"

/* Whether this paragond can start distributed jobs: mpirun on PATH and paragon-rank beside the
 * paragond binary. Otherwise err (invalid_spec, field "distributed") says what is missing. */
int pgd_launch_available(pgn_error *err);

/* Runs spec (a train job with "distributed") as mpirun -np ranks paragon-rank, on spec_json as
 * stored, with opts' data and checkpoint directories (resume as opts says), and waits for it.
 * Rank 0's events become hooks' calls: its logs, metrics (every rank's own figures among them,
 * "rankR.loss", "rankR.bytes_sent" ...) and progress. should_stop is polled a few times a second: a stop goes to the ranks as a "stop" line, they
 * checkpoint where they next meet and end cancelled. On success
 * *result is rank 0's result. On failure err says why, and *interrupted is set when the ranks
 * ended without saying why (one was killed, or mpirun failed): a run to retry from the last
 * committed checkpoint, not a job's own failure. */
int pgd_launch_run(const pgn_job_spec *spec, const json_t *spec_json, const pgn_run_options *opts,
                   const pgn_run_hooks *hooks, json_t **result, bool *interrupted, pgn_error *err);

#endif
