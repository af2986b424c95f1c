/* bench_spec.c: a bench job's spec: the suite (or "all"), the cases it runs (each one the
 * suite has) and the timed repeats, and the stored form. */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

#define PGN_MAX_BENCH_REPEATS 1000

/* A bench spec: one suite or "all", optionally some of its cases, and the timed repeats. */
int pgn_bench_spec_parse(const json_t *root, pgn_bench_spec *b, pgn_error *err) {
    static const char *const keys[] = {"kind", "name", "device", "suite", "cases", "repeats", NULL};
    if (pgn_spec_only_keys(root, "", keys, err)) return -1;
    if (pgn_spec_string(root, "suite", "suite", b->suite, sizeof b->suite, err)) return -1;
    if (!b->suite[0]) return pgn_spec_fail(err, "suite", "required (a suite name or \"all\")");
    if (strcmp(b->suite, "all") && !pgn_bench_suite_known(b->suite)) {
        char names[256] = "";
        for (const char *const *s = pgn_bench_suites; *s; s++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", *s);
        return pgn_spec_fail(err, "suite", "unknown suite '%s' (one of: %s, all)", b->suite, names);
    }
    const json_t *cases = json_object_get(root, "cases");
    if (cases) {
        if (!json_is_array(cases)) return pgn_spec_fail(err, "cases", "must be an array of case ids");
        if (json_array_size(cases) > PGN_BENCH_MAX_CASES)
            return pgn_spec_fail(err, "cases", "at most %d cases", PGN_BENCH_MAX_CASES);
        size_t i;
        const json_t *c;
        json_array_foreach(cases, i, c) {
            char path[32];
            snprintf(path, sizeof path, "cases[%zu]", i);
            if (!json_is_string(c) || !json_string_length(c))
                return pgn_spec_fail(err, path, "must be a non-empty string");
            if (json_string_length(c) >= sizeof b->cases[0])
                return pgn_spec_fail(err, path, "at most %zu characters", sizeof b->cases[0] - 1);
            snprintf(b->cases[b->n_cases++], sizeof b->cases[0], "%s", json_string_value(c));
        }
        /* A case the suite does not have would run nothing and "succeed" with no rows. */
        json_t *known = pgn_bench_cases(b->suite);
        int rc = 0;
        for (int k = 0; k < b->n_cases && rc == 0; k++) {
            bool found = false;
            size_t j;
            json_t *id;
            json_array_foreach(known, j, id) found = found || !strcmp(json_string_value(id), b->cases[k]);
            if (found) continue;
            pgn_text names = {0};
            json_array_foreach(known, j, id) pgn_text_printf(&names, "%s%s", j ? ", " : "", json_string_value(id));
            char *list = pgn_text_take(&names);
            char path[32];
            snprintf(path, sizeof path, "cases[%d]", k);
            rc = pgn_spec_fail(err, path, "suite %s has no case '%s' (its cases: %s)", b->suite,
                               b->cases[k], list ? list : "?");
            free(list);
        }
        json_decref(known);
        if (rc) return rc;
    }
    long long repeats = 5;
    if (pgn_spec_int(root, "repeats", "repeats", 1, PGN_MAX_BENCH_REPEATS, &repeats, err)) return -1;
    b->repeats = (int)repeats;
    return 0;
}

json_t *pgn_bench_spec_to_json(const pgn_bench_spec *b) {
    json_t *cases = json_array();
    for (int i = 0; i < b->n_cases; i++) json_array_append_new(cases, json_string(b->cases[i]));
    return json_pack("{s:s, s:o, s:i}", "suite", b->suite, "cases", cases, "repeats", b->repeats);
}
