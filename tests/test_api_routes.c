/* test_api_routes.c: server/api.c's route table: every path falls under one of a fixed set of
 * metric labels (ids never become labels, unknown paths share "other"), and docs/api.md's route
 * table lists exactly the routes. The exposition itself is tested against a live paragond. */
#include "api.h"
#include "metrics.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An API over nothing: the route table and its metric slots need no store. */
static pgd_api *table_only(void) {
    pgd_api_deps deps = {0};
    pgd_api *api;
    pgn_error err;
    cr_assert_eq(pgd_api_create(&deps, &api, &err), 0, "%s", err.message);
    return api;
}

Test(api_routes, paths_fall_under_their_route_pattern) {
    const char *cases[][2] = {
        {"/", "/"},
        {"/app.js", "/{file}"},
        {"/nope.css", "/{file}"},
        {"/healthz", "/healthz"},
        {"/readyz", "/readyz"},
        {"/metrics", "/metrics"},
        {"/api/v1/version", "/api/v1/version"},
        {"/api/v1/devices", "/api/v1/devices"},
        {"/api/v1/devices/utilisation", "/api/v1/devices/utilisation"},
        {"/api/v1/devices/nope", "other"},
        {"/api/v1/jobs", "/api/v1/jobs"},
        {"/api/v1/jobs/42", "/api/v1/jobs/{id}"},
        {"/api/v1/jobs/abc", "/api/v1/jobs/{id}"},
        {"/api/v1/jobs/42/metrics", "/api/v1/jobs/{id}/metrics"},
        {"/api/v1/jobs/42/cancel", "/api/v1/jobs/{id}/cancel"},
        {"/api/v1/jobs/42/logs", "/api/v1/jobs/{id}/logs"},
        {"/api/v1/jobs/42/events", "/api/v1/jobs/{id}/events"},
        {"/api/v1/jobs/42/checkpoint", "/api/v1/jobs/{id}/checkpoint"},
        {"/api/v1/benchmarks", "/api/v1/benchmarks"},
        {"/api/v1/datasets", "/api/v1/datasets"},
        {"/api/v1/datasets/train.idx", "/api/v1/datasets/{name}"},
        {"/api/v1/datasets/a/b", "/api/v1/datasets/{name}"}, /* the handler names the rule */
        {"/api/v1/datasets/", "other"},
        {"/api/v1/events", "/api/v1/events"},
        {"/api/v1/session", "/api/v1/session"},
        {"/api/v1/jobs/", "other"},
        {"/api/v1/jobs//metrics", "other"},
        {"/api/v1/jobs/42/nope", "other"},
        {"/api/v1/nope", "other"},
        {"/api", "other"},
        {"/web/app.js", "other"},
        {"", "other"},
    };
    pgd_api *api = table_only();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_str_eq(pgd_metrics_route_label(pgd_api_route_slot(api, cases[i][0])), cases[i][1],
                         "path '%s'", cases[i][0]);
    pgd_api_destroy(api);
}

/* docs/api.md's "## Routes" table: its rows' (method, path) pairs, each path cell split at ", " and
 * cut at '?', with the backticks gone. */
static size_t readme_routes(char rows[][2][96], size_t cap) {
    char path[512];
    snprintf(path, sizeof path, "%s/docs/api.md", getenv("PARAGON_SOURCE_ROOT"));
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[2048];
    bool in_api = false;
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "## ", 3)) in_api = !strncmp(line, "## Routes", 9);
        if (!in_api || line[0] != '|' || !strncmp(line, "| method", 8) || !strncmp(line, "|---", 4))
            continue;
        char method[16], cell[512];
        if (sscanf(line, "| %15s | %511[^|]", method, cell) != 2) continue;
        for (char *part = strtok(cell, ","); part; part = strtok(NULL, ",")) {
            char clean[96] = "";
            size_t k = 0;
            for (const char *c = part; *c && *c != '?' && k + 1 < sizeof clean; c++)
                if (*c != '`' && *c != ' ') clean[k++] = *c;
            clean[k] = 0;
            if (!clean[0]) continue;
            cr_assert_lt(n, cap);
            snprintf(rows[n][0], sizeof rows[n][0], "%s", method);
            snprintf(rows[n][1], sizeof rows[n][1], "%s", clean);
            n++;
        }
    }
    fclose(f);
    return n;
}

Test(api_routes, the_readme_api_table_lists_exactly_the_routes) {
    static char rows[64][2][96];
    size_t n_rows = readme_routes(rows, 64), n;
    const pgd_route *routes = pgd_api_routes(&n);
    for (size_t i = 0; i < n; i++) {
        bool listed = false;
        for (size_t j = 0; j < n_rows && !listed; j++)
            listed = !strcmp(rows[j][0], routes[i].method) && !strcmp(rows[j][1], routes[i].pattern);
        cr_assert(listed, "docs/api.md's route table lists %s %s", routes[i].method, routes[i].pattern);
    }
    for (size_t j = 0; j < n_rows; j++) {
        bool routed = false;
        for (size_t i = 0; i < n && !routed; i++)
            routed = !strcmp(rows[j][0], routes[i].method) && !strcmp(rows[j][1], routes[i].pattern);
        cr_assert(routed, "docs/api.md's %s %s is a route", rows[j][0], rows[j][1]);
    }
}
