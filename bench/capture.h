/* capture.h: running another program from a benchmark and reading what it prints (capture.c). */
#ifndef PGN_BENCH_CAPTURE_H
#define PGN_BENCH_CAPTURE_H

#include <stdbool.h>

/* Runs argv (argv[0] a path) with stdin closed; its stdout is returned (malloc'd), its stderr
 * shown or dropped. NULL when it cannot start or does not exit 0. */
char *bench_capture(char *const argv[], bool show_stderr);

#endif
