/* server.h: paragond as a library: start a server (lock, store, device workers, HTTP API) from
 * a configuration, learn its port, stop it. main.c only parses flags and waits for a signal;
 * server.c assembles the parts in order; api.c answers the requests. */
#ifndef PGD_SERVER_H
#define PGD_SERVER_H

#include "paragon.h"

#include <stdint.h>

#define PGD_DEFAULT_HOST "127.0.0.1"
#define PGD_DEFAULT_PORT 8080
#define PGD_DEFAULT_DB "./paragon.db"
#define PGD_DEFAULT_DATA_DIR "./data"
/* Worker threads of the HTTP thread pool. */
#define PGD_DEFAULT_HTTP_THREADS 4
/* Runs of one job that may end with paragond itself (kill -9, a crash) before start-up recovery
 * fails it as "crashed" instead of running it again. */
#define PGD_DEFAULT_MAX_ATTEMPTS 3
#define PGD_MAX_ATTEMPTS_LIMIT 1000
/* Connections (http.c): enough for many dashboards, scripts and event streams at once, while
 * one client address cannot take them all; a request's headers must arrive within the header
 * timeout (slowloris); event streams are capped apart, each holding a buffer. */
#define PGD_DEFAULT_MAX_CONNECTIONS 4096
#define PGD_DEFAULT_MAX_CONNECTIONS_PER_IP 256
#define PGD_DEFAULT_HEADER_TIMEOUT_S 10
#define PGD_DEFAULT_MAX_STREAMS 256
#define PGD_MAX_CONNECTIONS_LIMIT 1000000
#define PGD_HEADER_TIMEOUT_LIMIT_S 3600
#define PGD_JOBS_PER_DEVICE_LIMIT 16

typedef struct pgd_config {
    const char *host;
    uint16_t port; /* 0: any free port */
    const char *db_path; /* the store: a SQLite path, sqlite:PATH or postgresql://... (--store) */
    const char *data_dir; /* created (with parents) when missing */
    unsigned http_threads;
    bool no_calibration; /* do not measure devices never measured at start */
    const char *token_file; /* the API token; NULL: <data_dir>/token, created when missing */
    int64_t max_queued;     /* submissions beyond this many queued jobs get 429; 0: default */
    int64_t max_dataset_mb; /* dataset uploads beyond this many MiB get 413; 0: default */
    int64_t max_attempts;   /* interrupted runs before a job fails as "crashed"; 0: default */
    const char *node;       /* this paragond's node id on the store; NULL: the host's name */
    const char *shared_dir; /* a cluster's files (a PostgreSQL store's nodes): data_dir's part */
    int64_t lease_s;        /* a run's lease (store.h, "runs"); 0: PGD_LEASE_DEFAULT_MS */
    int64_t jobs_per_device; /* jobs a device runs at once, memory permitting; 0: 1 */
    /* Connection limits (0: the defaults above). */
    int64_t max_connections, max_connections_per_ip, header_timeout_s, max_streams;
    /* Browser origins allowed to call the API (--cors-origin), NULL-terminated; NULL: none. */
    const char *const *cors_origins;
} pgd_config;

typedef struct pgd_server pgd_server;

/* Takes the database's lock (another paragond on it is code "locked", and nothing is touched),
 * creates the data dir, probes OpenCL devices (none at all is code "no_device"), reads or
 * creates the API token (auth.c; the path goes to stderr), opens the store and applies
 * migrations, re-queues jobs a previous process left running (or fails those it left running
 * max_attempts times), starts a worker per device (cfg->jobs_per_device runners each) and the HTTP
 * listener. cfg's strings are
 * copied. */
int pgd_server_start(const pgd_config *cfg, pgd_server **out, pgn_error *err);

/* The port the server listens on (the real one when cfg->port was 0). */
uint16_t pgd_server_port(const pgd_server *server);

/* The file that holds the API token. */
const char *pgd_server_token_path(const pgd_server *server);

/* Graceful stop: stops accepting, finishes requests in progress, stops the running jobs at
 * their next step boundary (train jobs checkpoint that step; all are queued again, and resume
 * from it on the next start), closes the store and frees everything. */
void pgd_server_stop(pgd_server *server);

#endif
