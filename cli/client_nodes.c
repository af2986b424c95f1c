/* client_nodes.c: `paragon nodes`, the paragond nodes on the server's store (GET /api/v1/nodes):
 * each node's address, version, heartbeat, devices and the jobs it runs; --json as the server
 * answers. Exit statuses in cli.h. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "http.h"

static void nodes_usage(FILE *out) {
    fprintf(out, "usage: paragon nodes [--json]   the paragond nodes on the server's store\n"
                 "  --json   the server's answer as it is\n" CLI_SERVER_HELP
                 "A node renews its heartbeat every third of its --lease-seconds: one not heard from\n"
                 "for longer shows how long ago it was.\n"
                 "exit status: 0 done, 1 refused, 2 bad arguments, 4 no answer from paragond\n");
}

int cmd_nodes(int argc, char **argv) {
    cli_server_args server = {0};
    bool as_json = false;
    const cli_opt options[] = {{"json", .flag = &as_json}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"nodes", nodes_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (optind < argc) return cli_usage_error("nodes", "unexpected argument '%s'", argv[optind]);
    cli_server s;
    rc = cli_server_open(&s, "paragon nodes", server.url, server.token_file);
    if (rc) return rc;
    json_t *v = cli_listing(&s, "/api/v1/nodes", as_json, &rc);
    if (!v) return rc;
    printf("%-20s %-22s %-10s %-9s %-12s %s\n", "NODE", "ADDRESS", "VERSION", "HEARD", "RUNNING", "DEVICES");
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(v, "nodes"), i, n) {
        char running[64] = "-", devices[256] = "";
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(n, "running"), k, x) {
            size_t len = k ? strlen(running) : 0;
            snprintf(running + len, sizeof running - len, "%s%lld", k ? "," : "", (long long)json_integer_value(x));
        }
        json_array_foreach(json_object_get(n, "devices"), k, x) {
            size_t len = strlen(devices);
            snprintf(devices + len, sizeof devices - len, "%s%s", k ? " " : "", cli_str(x, "id") ? cli_str(x, "id") : "?");
        }
        char heard[32];
        snprintf(heard, sizeof heard, "%.1fs ago", json_real_value(json_object_get(n, "heartbeat_age_s")));
        printf("%-20s %-22s %-10s %-9s %-12s %s\n", cli_str(n, "id"), cli_str(n, "address"),
               cli_str(n, "version"), heard, running, devices);
    }
    json_decref(v);
    return CLI_EXIT_OK;
}
