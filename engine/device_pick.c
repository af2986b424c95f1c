/* device_pick.c: the devices a request names ("auto", "cpu", "gpu", "host", an id; "all" where a
 * command runs on each), found and opened for a run: the one list, select and open sequence of
 * the CLI's commands and the ranks (paragond keeps its devices listed: server/scheduler.c). */
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* The one device a request names: pgn_device_select over the devices listed now. */
static int pick(const char *want, pgn_device_info *chosen, pgn_error *err) {
    pgn_device_info *list = NULL;
    size_t n = 0;
    int rc = pgn_devices_list(&list, &n, err) || pgn_device_select(want, list, n, chosen, err);
    free(list);
    return rc ? -1 : 0;
}

int pgn_devices_named(const char *want, pgn_device_info **out, size_t *count, pgn_error *err) {
    *out = NULL;
    *count = 0;
    if (!strcmp(want, "all")) return pgn_devices_list(out, count, err);
    pgn_device_info *one = malloc(sizeof *one);
    if (!one) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    if (pick(want, one, err)) {
        free(one);
        return -1;
    }
    *out = one;
    *count = 1;
    return 0;
}

int pgn_device_open_named(const char *want, pgn_device_info *chosen, pgn_device **out, pgn_error *err) {
    *out = NULL;
    return pick(want, chosen, err) ? -1 : pgn_device_open_for_run(chosen, out, err);
}
