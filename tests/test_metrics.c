/* test_metrics.c: server/metrics.c's route patterns: every path falls under one of a fixed set
 * of labels, ids never become labels, and unknown paths share "other". The exposition itself
 * is tested against a live paragond in test_server.c. */
#include "metrics.h"

#include <criterion/criterion.h>

Test(metrics, paths_fall_under_their_route_pattern) {
    const char *cases[][2] = {
        {"/", "/"},
        {"/app.js", "/{file}"},
        {"/nope.css", "/{file}"},
        {"/healthz", "/healthz"},
        {"/readyz", "/readyz"},
        {"/metrics", "/metrics"},
        {"/api/v1/version", "/api/v1/version"},
        {"/api/v1/devices", "/api/v1/devices"},
        {"/api/v1/jobs", "/api/v1/jobs"},
        {"/api/v1/jobs/42", "/api/v1/jobs/{id}"},
        {"/api/v1/jobs/abc", "/api/v1/jobs/{id}"},
        {"/api/v1/jobs/42/metrics", "/api/v1/jobs/{id}/metrics"},
        {"/api/v1/jobs/42/cancel", "/api/v1/jobs/{id}/cancel"},
        {"/api/v1/jobs/42/logs", "/api/v1/jobs/{id}/logs"},
        {"/api/v1/jobs/42/events", "/api/v1/jobs/{id}/events"},
        {"/api/v1/jobs/42/checkpoint", "/api/v1/jobs/{id}/checkpoint"},
        {"/api/v1/benchmarks", "/api/v1/benchmarks"},
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_str_eq(pgd_metrics_route(cases[i][0]), cases[i][1], "path '%s'", cases[i][0]);
}
