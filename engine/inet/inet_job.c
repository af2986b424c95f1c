/* inet_job.c: the inet job kind: parses the spec's program and reduces it to the normal form
 * of @main, reporting interactions, time and MIPS: on an OpenCL device with the OpenCL reducer,
 * on the host pseudo-device with the sequential reference reducer. */
#include <stdio.h>
#include <string.h>

#include "inet/inet.h"
#include "core.h"

int pgn_inet_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_hooks *hooks,
                     json_t **result, pgn_error *err) {
    const pgn_inet_spec *s = &spec->inet;
    pgn_inet_book *book = NULL;
    if (pgn_inet_parse(s->program, strlen(s->program), &book, err)) return -1;
    pgn_inet_limits lim = {s->max_interactions, s->max_nodes, s->timeout_s};
    pgn_inet_result r = {0};
    int rc = dev ? pgn_inet_run_cl(dev, book, &lim, (unsigned)s->work_items, hooks, &r, err)
                 : pgn_inet_run_host(book, &lim, hooks, &r, err);
    pgn_inet_book_free(book);
    if (rc) return -1;
    if (hooks && hooks->on_metric) hooks->on_metric(hooks->ctx, "interactions", 1, (double)r.interactions);
    *result = json_pack("{s:s, s:I, s:f, s:f, s:I, s:I, s:s}", "normal_form", r.normal_form,
                        "interactions", (json_int_t)r.interactions, "seconds", r.seconds, "mips",
                        r.mips, "peak_nodes", (json_int_t)r.peak_nodes, "peak_bytes",
                        (json_int_t)r.peak_bytes, "device", dev ? pgn_device_get_info(dev)->id : "host");
    pgn_inet_result_free(&r);
    return *result ? 0 : -1;
}
