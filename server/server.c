/* server.c: owns paragond's assembly: the database lock, the data dir and its datasets folder,
 * the device probe, the token, the store and its start-up recovery, the event bus, the device
 * workers, the API and the HTTP listener, started in that order and stopped in reverse. */
#include "server.h"

#include "admission.h" /* PGD_DEFAULT_MAX_QUEUED */
#include "api.h"
#include "auth.h"
#include "events.h"
#include "host_load.h"
#include "http.h"
#include "lock.h"
#include "relay.h"
#include "scheduler.h"
#include "store.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pgd_server {
    pgd_lock *lock; /* one paragond per database: taken first, released last */
    pgd_store *store;
    pgd_scheduler *sched;
    pgd_relay *relay;   /* a cluster node's: other nodes' job changes to our streams */
    pgd_events *events; /* job events: the SSE streams read them */
    pgd_api *api;
    pgd_http *http;
    pgd_auth *auth;
    char *data_dir;  /* --data-dir, or a cluster's --shared-dir */
    bool cluster;    /* a node of a cluster (a PostgreSQL store) */
    pgn_device_info *devices; /* the OpenCL devices probed at start */
    size_t n_devices;
    char *version_json; /* GET /api/v1/version never changes while we run */
    atomic_bool ready;
};

/* A spec's dataset paths reach anything under datasets: the token must not be there. */
static int token_readable_by_jobs(const char *token, const char *datasets, pgn_error *err) {
    char t[PATH_MAX], d[PATH_MAX];
    if (!realpath(token, t) || !realpath(datasets, d)) return 0; /* both exist: auth made one */
    size_t n = strlen(d);
    if (strncmp(t, d, n) != 0 || t[n] != '/') return 0;
    pgn_error_set(err, PGN_E_AUTH, "token_file",
                  "--token-file %s is inside %s, where job specs name their datasets: any job "
                  "could read it; keep the token elsewhere",
                  token, datasets);
    return -1;
}

/* This paragond among the store's nodes: where it listens and what it runs jobs on. */
static int register_node(pgd_server *srv, const pgd_config *cfg, pgn_error *err) {
    char address[300];
    snprintf(address, sizeof address, "%s:%u", cfg->host ? cfg->host : PGD_DEFAULT_HOST,
             (unsigned)pgd_http_port(srv->http));
    json_t *devices = pgd_scheduler_profiles_json(srv->sched);
    int rc = pgd_store_node_register(srv->store, address, PGN_VERSION, devices, err);
    json_decref(devices);
    return rc;
}

static int probe_devices(pgn_device_info **devices, size_t *count, pgn_error *err) {
    pgn_error e;
    pgn_error_clear(&e);
    *devices = NULL;
    *count = 0;
    if (pgn_devices_list(devices, count, &e) < 0 || *count == 0) {
        free(*devices);
        *devices = NULL;
        pgn_error_set(err, PGN_E_NO_DEVICE, "",
                      "no OpenCL device found%s%s. paragond needs at least one OpenCL device: "
                      "install an OpenCL driver (on Debian/Ubuntu, 'apt install "
                      "pocl-opencl-icd' provides a CPU device) and check that "
                      "/etc/OpenCL/vendors (or $OCL_ICD_VENDORS) lists its .icd file",
                      e.message[0] ? ": " : "", e.message);
        return -1;
    }
    return 0;
}

int pgd_server_start(const pgd_config *cfg, pgd_server **out, pgn_error *err) {
    *out = NULL;
    pgd_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    atomic_init(&srv->ready, false);
    pgn_device_info *devices = NULL;
    size_t count = 0;

    char node[64];
    if (cfg->node && *cfg->node) {
        snprintf(node, sizeof node, "%s", cfg->node);
    } else if (gethostname(node, sizeof node) != 0 || !node[0]) {
        snprintf(node, sizeof node, "paragond");
    }
    node[sizeof node - 1] = 0;
    int64_t lease_ms = cfg->lease_s > 0 ? cfg->lease_s * 1000 : PGD_LEASE_DEFAULT_MS;

    /* A PostgreSQL store makes this paragond a node of a cluster: every node reaches the same
     * files (checkpoints, datasets, the API token) in --shared-dir. */
    const char *store = cfg->db_path ? cfg->db_path : PGD_DEFAULT_DB;
    const char *file = pgd_store_file(store);
    bool cluster = !file;
    if (cluster && !(cfg->shared_dir && *cfg->shared_dir)) {
        pgn_error_set(err, PGN_E_DATA_DIR, "shared_dir",
                      "--store postgresql://... makes this paragond a node of a cluster: it needs "
                      "--shared-dir DIR, the directory every node reaches (checkpoints, datasets, "
                      "the API token; an NFS mount, or one local directory for nodes on one machine)");
        goto fail;
    }
    if (!cluster && cfg->shared_dir) {
        pgn_error_set(err, PGN_E_DATA_DIR, "shared_dir",
                      "--shared-dir is for the nodes of a cluster (--store postgresql://...); "
                      "a SQLite store keeps its files in --data-dir");
        goto fail;
    }
    /* Before anything is created, read or recovered: a second paragond on this database (or as
     * this node of the cluster) must leave everything as it found it. */
    if (cluster) {
        if (pgd_store_open(store, &srv->store, err) < 0) goto fail;
        pgd_store_set_node(srv->store, node, lease_ms);
        if (pgd_store_hold_node(srv->store, err) < 0) goto fail;
    } else if (pgd_lock_take(file, &srv->lock, err) < 0) {
        goto fail;
    }
    srv->cluster = cluster;
    srv->data_dir = strdup(cluster ? cfg->shared_dir : cfg->data_dir ? cfg->data_dir : PGD_DEFAULT_DATA_DIR);
    if (!srv->data_dir) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        goto fail;
    }
    /* Devices first: a machine that cannot run anything gets no files either. */
    if (probe_devices(&devices, &count, err) < 0) goto fail;
    char datasets[PGN_PATH_MAX * 2];
    snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR, srv->data_dir);
    if (pgn_make_dirs(srv->data_dir, "data directory", err) < 0 ||
        pgn_make_dirs(datasets, "data directory", err) < 0) goto fail;
    if (pgd_auth_open(cfg->token_file, srv->data_dir, cfg->host ? cfg->host : PGD_DEFAULT_HOST,
                      &srv->auth, err) < 0)
        goto fail;
    if (token_readable_by_jobs(pgd_auth_token_path(srv->auth), datasets, err)) goto fail;
    fprintf(stderr, "paragond: API token in %s\n", pgd_auth_token_path(srv->auth));

    json_t *version = json_pack("{s:s, s:o}", "version", PGN_VERSION, "opencl",
                                pgn_opencl_platforms_json());
    srv->version_json = version ? pgn_json_dumps(version) : NULL;
    json_decref(version);
    if (!srv->version_json) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "cannot describe the OpenCL platforms");
        goto fail;
    }

    if (!cluster) { /* a cluster's store is open already, as this node */
        if (pgd_store_open(store, &srv->store, err) < 0) goto fail;
        pgd_store_set_node(srv->store, node, lease_ms);
    }
    int64_t max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts : PGD_DEFAULT_MAX_ATTEMPTS;
    pgd_recovery rec;
    /* A cluster's other nodes keep their runs: theirs are recovered when their leases run out. */
    if (pgd_store_recover(srv->store, max_attempts, cluster, &rec, err) < 0) goto fail;
    if (rec.requeued)
        fprintf(stderr, "paragond: %lld job(s) left running by a previous run are queued again\n",
                (long long)rec.requeued);
    if (rec.crashed)
        fprintf(stderr,
                "paragond: %lld job(s) left running by a previous run failed as crashed: paragond "
                "ended while each ran, %lld times (--max-attempts)\n",
                (long long)rec.crashed, (long long)max_attempts);
    if (pgd_events_create(srv->store,
                          (size_t)(cfg->max_streams > 0 ? cfg->max_streams : PGD_DEFAULT_MAX_STREAMS),
                          &srv->events, err) < 0)
        goto fail;
    int cpus;
    pgd_host_other_cpus(&cpus); /* the first reading: a submission's estimate a second on can tell */
    if (pgd_scheduler_start(srv->store, srv->events, devices, count, srv->data_dir,
                            !cfg->no_calibration, max_attempts,
                            (size_t)(cfg->jobs_per_device > 0 ? cfg->jobs_per_device : 1), &srv->sched, err) < 0)
        goto fail;
    if (cluster && pgd_relay_start(store, srv->store, srv->events, srv->sched, &srv->relay, err) < 0) goto fail;
    srv->devices = devices;
    srv->n_devices = count;
    devices = NULL;

    pgd_api_deps deps = {.store = srv->store,
                         .sched = srv->sched,
                         .events = srv->events,
                         .auth = srv->auth,
                         .devices = srv->devices,
                         .n_devices = srv->n_devices,
                         .data_dir = srv->data_dir,
                         .version_json = srv->version_json,
                         .ready = &srv->ready,
                         .max_queued = cfg->max_queued,
                         .max_dataset_bytes = cfg->max_dataset_mb << 20};
    if (pgd_api_create(&deps, &srv->api, err) < 0) goto fail;

    pgd_http_limits limits = {
        .max_connections = (unsigned)(cfg->max_connections > 0 ? cfg->max_connections
                                                               : PGD_DEFAULT_MAX_CONNECTIONS),
        .max_connections_per_ip =
            (unsigned)(cfg->max_connections_per_ip > 0 ? cfg->max_connections_per_ip
                                                       : PGD_DEFAULT_MAX_CONNECTIONS_PER_IP),
        .header_timeout_s = (unsigned)(cfg->header_timeout_s > 0 ? cfg->header_timeout_s
                                                                 : PGD_DEFAULT_HEADER_TIMEOUT_S),
        .cors_origins = cfg->cors_origins,
    };
    if (pgd_http_start(cfg->host ? cfg->host : PGD_DEFAULT_HOST, cfg->port,
                       cfg->http_threads ? cfg->http_threads : PGD_DEFAULT_HTTP_THREADS, &limits,
                       pgd_api_handle, pgd_api_route_slot, pgd_api_sink_open, srv->api, &srv->http,
                       err) < 0)
        goto fail;
    if (register_node(srv, cfg, err) < 0) goto fail;
    atomic_store(&srv->ready, true);
    *out = srv;
    return 0;
fail:
    free(devices);
    pgd_server_stop(srv);
    return -1;
}

uint16_t pgd_server_port(const pgd_server *srv) { return pgd_http_port(srv->http); }

const char *pgd_server_token_path(const pgd_server *srv) { return pgd_auth_token_path(srv->auth); }

void pgd_server_stop(pgd_server *srv) {
    if (!srv) return;
    atomic_store(&srv->ready, false);
    /* Event streams end first (a stream opened from now on ends at once): the daemon must not
     * stop with a parked connection. Requests in flight may still use the scheduler and store,
     * which outlive the daemon. */
    pgd_events_close(srv->events);
    pgd_http_stop(srv->http);
    pgd_api_destroy(srv->api);
    pgd_relay_stop(srv->relay); /* before the scheduler it asks */
    pgd_scheduler_stop(srv->sched);
    pgd_events_destroy(srv->events); /* the workers publish until they stop */
    pgd_store_close(srv->store);
    pgd_auth_close(srv->auth);
    free(srv->version_json);
    free(srv->devices);
    free(srv->data_dir);
    pgd_lock_release(srv->lock);
    free(srv);
}
