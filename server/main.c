/* main.c: paragond's entry point: parses flags, starts the server (api.c), prints the one
 * "listening" line on stdout, and waits for SIGINT/SIGTERM to stop it gracefully.
 * Exit status: 0 after a clean stop, 1 when the server cannot start, 2 for bad flags. */
#include "server.h"
#include "admission.h" /* PGD_DEFAULT_MAX_QUEUED */
#include "datasets.h"  /* PGD_DEFAULT_MAX_DATASET_MB */
#include "http.h"      /* PGD_CORS_ORIGINS_MAX */
#include "lock.h"      /* PGD_LOCK_SUFFIX */

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The numeric flags: where each goes, its range, and how a bad value is described. */
typedef struct count_flag {
    const char *name;
    int64_t *dest;
    int64_t min, max;
    const char *what; /* "a count of jobs" ... for the error */
} count_flag;

static void usage(FILE *out) {
    fprintf(out,
            "usage: paragond [options]\n"
            "  --host ADDR      address to listen on (default " PGD_DEFAULT_HOST ")\n"
            "  --port N         TCP port, 0 picks a free one (default %d)\n"
            "  --store STORE    where jobs, metrics and benchmarks are kept: sqlite:PATH or a PATH\n"
            "                   (SQLite, the default: " PGD_DEFAULT_DB "; paragond holds\n"
            "                   PATH" PGD_LOCK_SUFFIX " while it runs), or postgresql://USER@HOST/DB\n"
            "                   (libpq's URL: several hosts and target_session_attrs=read-write\n"
            "                   follow a failover), which makes this paragond a node of a\n"
            "                   cluster: it needs --shared-dir\n"
            "  --db PATH        the same as --store sqlite:PATH\n"
            "  --node NAME      this paragond's name among the store's nodes (default: the\n"
            "                   host's name); its runs of jobs are recorded under it\n"
            "  --shared-dir DIR a cluster's files (with a PostgreSQL store, which makes this\n"
            "                   paragond one of its nodes): checkpoints, datasets and the API\n"
            "                   token, in a directory every node reaches (an NFS mount, or one\n"
            "                   directory for nodes on one machine); in place of --data-dir\n"
            "  --lease-seconds N\n"
            "                   a run holds its job for N seconds at a time, renewed every N/3\n"
            "                   while it lives; a job whose run stops renewing (its paragond\n"
            "                   died) runs again after that (default 30)\n"
            "  --data-dir PATH  checkpoints and job files, created if missing (default "
            PGD_DEFAULT_DATA_DIR ")\n"
            "  --token-file PATH\n"
            "                   the API token (default <data-dir>/token, created on the first\n"
            "                   start); POST and DELETE need 'Authorization: Bearer <token>',\n"
            "                   and so does every read but /healthz, /readyz and the dashboard's\n"
            "                   files when --host is not a loopback address (a browser may send\n"
            "                   the cookie POST /api/v1/session sets instead, for reads only)\n"
            "  --max-queued N   refuse submissions (429) while N jobs are queued (default %d)\n"
            "  --max-attempts N a job left running by a paragond that ended (kill -9, crash) is\n"
            "                   queued again at start, until this many of its runs ended so;\n"
            "                   then it fails with code 'crashed' (default %d)\n"
            "  --jobs-per-device N\n"
            "                   jobs a device runs at once, each with its own queue on it, while\n"
            "                   its memory holds them all (by their estimates); 1-%d (default 1)\n"
            "  --max-connections N\n"
            "                   open HTTP connections at most; more are closed at once (default %d)\n"
            "  --max-connections-per-ip N\n"
            "                   open connections from one client address at most (default %d)\n"
            "  --header-timeout S\n"
            "                   seconds a connection has to send a request's headers, or to\n"
            "                   start its next one (default %d)\n"
            "  --max-streams N  event streams (SSE) open at once; more get 503 (default %d)\n"
            "  --max-dataset-mb N\n"
            "                   a dataset upload (PUT /api/v1/datasets/NAME) of more than N MiB\n"
            "                   is refused with 413 (default %d)\n"
            "  --cors-origin ORIGIN\n"
            "                   let pages from ORIGIN (scheme://host[:port], as browsers send it)\n"
            "                   call the API: preflights answered, Access-Control-Allow-Origin\n"
            "                   on its answers; repeatable; other origins get no CORS headers\n"
            "                   (default: none)\n"
            "  --kernels auto|cpu|gpu\n"
            "                   the kernel family every device runs (default auto: each device's\n"
            "                   profile chooses; the same as PARAGON_KERNELS)\n"
            "  --no-calibration do not measure devices never measured at start\n"
            "  --help           show this help\n"
            "  --version        print the version\n",
            PGD_DEFAULT_PORT, PGD_DEFAULT_MAX_QUEUED, PGD_DEFAULT_MAX_ATTEMPTS, PGD_JOBS_PER_DEVICE_LIMIT,
            PGD_DEFAULT_MAX_CONNECTIONS, PGD_DEFAULT_MAX_CONNECTIONS_PER_IP,
            PGD_DEFAULT_HEADER_TIMEOUT_S, PGD_DEFAULT_MAX_STREAMS, PGD_DEFAULT_MAX_DATASET_MB);
}

/* An origin as a browser's Origin header names one: http or https, a host (a name, an IPv4
 * address or a bracketed IPv6 one), an optional port, nothing after. "*" is not taken: the
 * API's callers send a token, and who may do so from a page is named one origin at a time. */
static bool origin_valid(const char *o) {
    const char *p = !strncmp(o, "http://", 7) ? o + 7 : !strncmp(o, "https://", 8) ? o + 8 : NULL;
    if (!p || !*p) return false;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        if (!close || close == p + 1) return false;
        for (const char *c = p + 1; c < close; c++)
            if (!strchr("0123456789abcdefABCDEF:.", *c)) return false;
        p = close + 1;
    } else {
        const char *start = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
               *p == '.')
            p++;
        if (p == start) return false;
    }
    if (*p == ':') {
        const char *digits = ++p;
        while (*p >= '0' && *p <= '9') p++;
        if (p == digits || p - digits > 5) return false;
    }
    return *p == 0;
}

static int bad_flag(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "paragond: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see paragond --help)\n");
    return 2;
}

/* A decimal integer in [min, max], digits only. */
static bool parse_count(const char *text, int64_t min, int64_t max, int64_t *out) {
    if (*text < '0' || *text > '9') return false;
    char *end;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (*end || errno || n < min || n > max) return false;
    *out = n;
    return true;
}

/* glibc's malloc gave the pages a request had freed back to the kernel (its heap top above
 * 128 KB; its threshold for mmap moving with every large free), and the next request faulted
 * them in again, zeroed: a tenth of a durable submission's CPU, inside SQLite's transaction
 * begin (perf, 2026-11-29). Fixed thresholds: blocks from 1 MB (tensors, checkpoints) still go
 * straight back to the kernel; a heap keeps up to 8 MB free at its top. */
static void keep_freed_pages(void) {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

int main(int argc, char **argv) {
    keep_freed_pages();
    pgd_config cfg = {.host = PGD_DEFAULT_HOST,
                      .port = PGD_DEFAULT_PORT,
                      .db_path = PGD_DEFAULT_DB,
                      .data_dir = PGD_DEFAULT_DATA_DIR,
                      .http_threads = PGD_DEFAULT_HTTP_THREADS};
    int64_t port = PGD_DEFAULT_PORT;
    const char *cors[PGD_CORS_ORIGINS_MAX + 1] = {0}, *kernels = NULL;
    size_t n_cors = 0;
    const count_flag counts[] = {
        {"--port", &port, 0, 65535, "a port number (0-65535)"},
        {"--max-queued", &cfg.max_queued, 1, PGD_MAX_QUEUED_LIMIT, "a count of jobs (1-1000000000)"},
        {"--max-attempts", &cfg.max_attempts, 1, PGD_MAX_ATTEMPTS_LIMIT, "a count of runs (1-1000)"},
        {"--lease-seconds", &cfg.lease_s, 1, 3600, "a number of seconds (1-3600)"},
        {"--jobs-per-device", &cfg.jobs_per_device, 1, PGD_JOBS_PER_DEVICE_LIMIT, "a count of jobs (1-16)"},
        {"--max-connections", &cfg.max_connections, 1, PGD_MAX_CONNECTIONS_LIMIT,
         "a count of connections (1-1000000)"},
        {"--max-connections-per-ip", &cfg.max_connections_per_ip, 1, PGD_MAX_CONNECTIONS_LIMIT,
         "a count of connections (1-1000000)"},
        {"--header-timeout", &cfg.header_timeout_s, 1, PGD_HEADER_TIMEOUT_LIMIT_S,
         "a number of seconds (1-3600)"},
        {"--max-streams", &cfg.max_streams, 1, PGD_MAX_CONNECTIONS_LIMIT,
         "a count of streams (1-1000000)"},
        {"--max-dataset-mb", &cfg.max_dataset_mb, 1, PGD_MAX_DATASET_MB_LIMIT,
         "a size in MiB (1-1048576)"},
    };

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("paragond %s\n", PGN_VERSION);
            return 0;
        }
        if (strcmp(arg, "--no-calibration") == 0) {
            cfg.no_calibration = true;
            continue;
        }
        /* --name value or --name=value */
        char name[32];
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (strncmp(arg, "--", 2) != 0 || name_len >= sizeof name)
            return bad_flag("unexpected argument '%s'%s", arg, "");
        memcpy(name, arg, name_len);
        name[name_len] = 0;
        bool is_cors = strcmp(name, "--cors-origin") == 0;
        const char **dest = strcmp(name, "--host") == 0         ? &cfg.host
                            : strcmp(name, "--kernels") == 0    ? &kernels
                            : strcmp(name, "--db") == 0         ? &cfg.db_path
                            : strcmp(name, "--store") == 0      ? &cfg.db_path
                            : strcmp(name, "--node") == 0       ? &cfg.node
                            : strcmp(name, "--shared-dir") == 0 ? &cfg.shared_dir
                            : strcmp(name, "--data-dir") == 0   ? &cfg.data_dir
                            : strcmp(name, "--token-file") == 0 ? &cfg.token_file
                            : is_cors                           ? &cors[n_cors]
                                                                : NULL;
        const count_flag *count = NULL;
        for (size_t k = 0; k < sizeof counts / sizeof counts[0] && !dest && !count; k++)
            if (strcmp(name, counts[k].name) == 0) count = &counts[k];
        if (!dest && !count) return bad_flag("unknown option '%s'%s", name, "");
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) return bad_flag("%s needs a value%s", name, "");
        if (!*value) return bad_flag("%s: the value is empty%s", name, "");
        if (is_cors && !origin_valid(value))
            return bad_flag("--cors-origin: '%s' is not an origin%s", value,
                            " (scheme://host[:port] with no path, as https://app.example.com:8443)");
        if (is_cors && n_cors == PGD_CORS_ORIGINS_MAX) {
            char most[16];
            snprintf(most, sizeof most, "%d", PGD_CORS_ORIGINS_MAX);
            return bad_flag("--cors-origin: more than %s origins ('%s' is one too many)", most, value);
        }
        if (is_cors) n_cors++;
        if (dest) {
            *dest = value;
        } else if (!parse_count(value, count->min, count->max, count->dest)) {
            fprintf(stderr, "paragond: %s: '%s' is not %s (see paragond --help)\n", name, value,
                    count->what);
            return 2;
        }
    }
    cfg.port = (uint16_t)port;
    cfg.cors_origins = n_cors ? cors : NULL;
    if (kernels) { /* the engine reads the override where it builds each device's profile */
        if (strcmp(kernels, "auto") && strcmp(kernels, "cpu") && strcmp(kernels, "gpu"))
            return bad_flag("--kernels: '%s' is not a kernel family%s", kernels, " (auto, cpu or gpu)");
        setenv("PARAGON_KERNELS", kernels, 1);
    }

    /* Every thread started from here inherits the blocked set; only sigwait below sees
     * SIGINT/SIGTERM, so no handler runs inside the server or the engine. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    pgd_server *server;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgd_server_start(&cfg, &server, &err) < 0) {
        fprintf(stderr, "paragond: %s\n", err.message);
        return 1;
    }
    bool v6 = strchr(cfg.host, ':') != NULL;
    printf("paragond listening on http://%s%s%s:%u\n", v6 ? "[" : "", cfg.host, v6 ? "]" : "",
           (unsigned)pgd_server_port(server));
    fflush(stdout);
    /* Where to look, not the token itself: stderr may end up in logs others can read. */
    bool any = !strcmp(cfg.host, "0.0.0.0") || !strcmp(cfg.host, "::");
    fprintf(stderr,
            "paragond: dashboard at http://%s%s%s:%u/ (its API token box takes the token from %s)\n",
            v6 && !any ? "[" : "", any ? "127.0.0.1" : cfg.host, v6 && !any ? "]" : "",
            (unsigned)pgd_server_port(server), pgd_server_token_path(server));

    int sig = 0;
    while (sigwait(&stop_signals, &sig) != 0) {
    }
    fprintf(stderr, "paragond: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    pgd_server_stop(server);
    return 0;
}
