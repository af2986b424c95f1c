/* admission.h: what paragond refuses before it stores a job: request bodies nested too deeply or
 * holding too long an array, models with too many parameters, and train and inet jobs that may
 * need more memory than the device (or host) they are placed on has. The queue limit (429) is checked in api_submit.c, where
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

/* The host's memory now, from /proc/meminfo (bytes; a reading stands for 100 ms); -1 when it
 * cannot be read (then nothing is judged against it). */
typedef struct pgd_host_memory {
    double total, available; /* MemTotal, MemAvailable */
} pgd_host_memory;
int pgd_host_memory_read(pgd_host_memory *out);

/* What a host job may take is MemAvailable less this share of MemTotal (at least the minimum):
 * room for paragond, the kernel and what starts meanwhile. */
#define PGD_HOST_MEMORY_MARGIN 0.05
#define PGD_HOST_MEMORY_MARGIN_MIN (256.0 * 1024 * 1024)

/* Checks a parsed spec against the parameter limit and the memory it may take against what
 * holds it: a train job's estimate (pgn_job_memory_estimate), an inet job's bound from
 * limits.max_nodes (pgn_inet_memory_estimate: the reducers never grow past it). On the host
 * pseudo-device that is the host's available memory less a margin; on a GPU, the device's global
 * memory (and the host's for the host-side part); on a CPU device (pocl), whose buffers are host
 * memory, the smaller of the device's figure and the host's. Returns 0, or -1 with err set (code
 * "limit_exceeded", field naming what does not fit) and *extra a new object with the limit, both
 * numbers and the estimate's parts in bytes. */
int pgd_admit_job(const pgn_job_spec *spec, const pgn_device_info *placed,
                  const pgd_host_memory *mem, pgn_error *err, json_t **extra);

/* The memory job spec is estimated to hold where it runs on placed (what pgd_admit_job judges it
 * by: a device's buffers, the host's on the host pseudo-device; 0 for kinds it does not judge),
 * and what device d has for jobs (0: it does not say): several jobs share a device while their
 * estimates add up to no more (worker.c). */
double pgd_job_bytes(const pgn_job_spec *spec, const pgn_device_info *placed);
double pgd_device_bytes(const pgn_device_info *d);

#endif
