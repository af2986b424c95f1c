/* inet_build.h: a program's own reducer kernel, built beside its run (inet_build.c). Private to
 * engine/inet. */
#ifndef PGN_INET_BUILD_H
#define PGN_INET_BUILD_H

#include <stdbool.h>

#include "core.h"

#define PGN_INET_BUILD_DONE 0    /* *out: the program (a reference the caller releases) */
#define PGN_INET_BUILD_RUNNING 1 /* being built: this one, or (one at a time) another program */
#define PGN_INET_BUILD_FAILED 2  /* err says why */

/* The reducer kernel the device's profile runs: inet_reduce (kernels/inet.cl, the cpu family) or
 * inet_reduce_gpu (kernels/inet_gpu.cl), which take the same arguments. */
pgn_kernel_id pgn_inet_kernel_of(const pgn_device *dev);

/* The program of src (kernels/inet.cl with a book's plans, pgn_program_source_one) on dev, its
 * kernel warmed by a first launch of global x local work-items that do nothing. wait: built here
 * (or an earlier build of it waited for), *waited the seconds that took; else a thread builds it
 * and later calls find it done. Builds of the same src and geometry are shared for as long as
 * the device keeps them (its last few); its close waits for the one running. */
int pgn_inet_build_kernel(pgn_device *dev, const char *src, size_t global, size_t local, bool wait, cl_program *out,
                          double *waited, pgn_error *err);

/* Whether the kernel of src is built in this process, or was in an earlier one on this device
 * (a record under the user's cache folder): then the device's compiler cache answers at once,
 * and a run waits for it before its first launch. */
bool pgn_inet_build_known(pgn_device *dev, const char *src, size_t global, size_t local);

#endif
