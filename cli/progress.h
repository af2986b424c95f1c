/* progress.h: how long work shows itself on the command line. On a terminal, one line redrawn
 * in place: a bar when the share done is known, the step or the count of interactions, their
 * rate, the latest loss, the time gone and the time left; log lines print above it. Elsewhere
 * (a pipe, a file, CI), plain lines: the log as it comes and a progress line every tenth of the
 * way (or every PLAIN_EVERY_S seconds when the share is not known). */
#ifndef PGN_CLI_PROGRESS_H
#define PGN_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli_progress {
    FILE *out;
    bool tty;          /* redraw in place, else plain lines */
    bool drawn;        /* a bar is on the screen's last line */
    double started_s;  /* monotonic seconds at the start */
    double drawn_s;    /* when the bar or the last plain line was drawn */
    double fraction;   /* the share done, -1 until known */
    double fraction0, fraction0_s; /* the first share seen and when: a resumed run starts above 0 */
    int plain_tenth;   /* plain lines: the last tenth printed */
    /* train: the step the latest per-step figure is from, and the total when known */
    int64_t step, total_steps;
    double step_s;     /* when `step` was first seen: the rate's window starts here */
    int64_t step0;
    double loss;       /* the latest training loss, NaN until one came */
    int64_t samples_per_step; /* batch size x ranks, 0 when not known: samples/s */
    /* inet: interactions so far and their rate (MIPS) as the engine reports them */
    double interactions, mips;
    double tokens_per_s;
} cli_progress;

/* out: where the bar goes (stderr when stdout holds a result). */
void cli_progress_start(cli_progress *p, FILE *out);
/* The share done, 0..1 (the engine's on_progress, a job's "progress" event). */
void cli_progress_fraction(cli_progress *p, double fraction);
/* A metric as the engine or the event stream gives it; the bar picks what it shows. */
void cli_progress_metric(cli_progress *p, const char *name, int64_t step, double value);
/* A log line, printed above the bar. */
void cli_progress_log(cli_progress *p, const char *line);
/* Clears the bar (call before printing the result). */
void cli_progress_end(cli_progress *p);

#endif
