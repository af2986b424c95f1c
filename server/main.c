/* main.c: paragond's entry point: parses flags, starts the server (api.c), prints the one
 * "listening" line on stdout, and waits for SIGINT/SIGTERM to stop it gracefully.
 * Exit status: 0 after a clean stop, 1 when the server cannot start, 2 for bad flags. */
#include "api.h"
#include "admission.h" /* PGD_DEFAULT_MAX_QUEUED */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: paragond [options]\n"
            "  --host ADDR      address to listen on (default " PGD_DEFAULT_HOST ")\n"
            "  --port N         TCP port, 0 picks a free one (default %d)\n"
            "  --db PATH        SQLite database (default " PGD_DEFAULT_DB ")\n"
            "  --data-dir PATH  checkpoints and job files, created if missing (default "
            PGD_DEFAULT_DATA_DIR ")\n"
            "  --token-file PATH\n"
            "                   the API token (default <data-dir>/token, created on the first\n"
            "                   start); POST and DELETE need 'Authorization: Bearer <token>',\n"
            "                   and so does every read but /healthz and /readyz when --host\n"
            "                   is not a loopback address\n"
            "  --max-queued N   refuse submissions (429) while N jobs are queued (default %d)\n"
            "  --no-calibration do not measure devices that have no benchmark rows at start\n"
            "  --help           show this help\n"
            "  --version        print the version\n",
            PGD_DEFAULT_PORT, PGD_DEFAULT_MAX_QUEUED);
}

static int bad_flag(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "paragond: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see paragond --help)\n");
    return 2;
}

int main(int argc, char **argv) {
    pgd_config cfg = {.host = PGD_DEFAULT_HOST,
                      .port = PGD_DEFAULT_PORT,
                      .db_path = PGD_DEFAULT_DB,
                      .data_dir = PGD_DEFAULT_DATA_DIR,
                      .http_threads = PGD_DEFAULT_HTTP_THREADS};

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
        const char **dest = strcmp(name, "--host") == 0         ? &cfg.host
                            : strcmp(name, "--db") == 0         ? &cfg.db_path
                            : strcmp(name, "--data-dir") == 0   ? &cfg.data_dir
                            : strcmp(name, "--token-file") == 0 ? &cfg.token_file
                                                                : NULL;
        bool is_port = strcmp(name, "--port") == 0;
        bool is_max_queued = strcmp(name, "--max-queued") == 0;
        if (!dest && !is_port && !is_max_queued)
            return bad_flag("unknown option '%s'%s", name, "");
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) return bad_flag("%s needs a value%s", name, "");
        if (!*value) return bad_flag("%s: the value is empty%s", name, "");
        if (is_port) {
            char *end;
            long port = strtol(value, &end, 10);
            if (*end || end == value || port < 0 || port > 65535 || value[0] == '-' ||
                value[0] == '+')
                return bad_flag("--port: '%s' is not a port number (0-65535)%s", value, "");
            cfg.port = (uint16_t)port;
        } else if (is_max_queued) {
            char *end;
            errno = 0;
            long long n = strtoll(value, &end, 10);
            if (*end || end == value || errno || n < 1 || n > PGD_MAX_QUEUED_LIMIT ||
                value[0] == '+')
                return bad_flag("--max-queued: '%s' is not a count of jobs (1-%s)", value,
                                PGD_MAX_QUEUED_LIMIT_TEXT);
            cfg.max_queued = n;
        } else {
            *dest = value;
        }
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
