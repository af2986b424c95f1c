/* inet_spec.c: an inet job's spec: the program (parsed here, so a bad one is refused naming its
 * line and column), the work-items and the limits that stop a runaway net, and the stored form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "inet/inet.h"

#define PGN_MAX_PROGRAM_BYTES (4u << 20)
#define PGN_INET_DEFAULT_MAX_INTERACTIONS 1000000000ULL
#define PGN_INET_DEFAULT_MAX_NODES (1ULL << 24)
#define PGN_INET_DEFAULT_TIMEOUT_S 60.0

/* An inet spec; the program is parsed here too, so a bad program is a 400 naming its line. */
int pgn_inet_spec_parse(const json_t *root, pgn_inet_spec *s, pgn_error *err) {
    static const char *const keys[] = {"kind", "name", "device", "program", "limits", "work_items", NULL};
    if (pgn_spec_only_keys(root, "", keys, err)) return -1;
    s->max_interactions = PGN_INET_DEFAULT_MAX_INTERACTIONS;
    s->max_nodes = PGN_INET_DEFAULT_MAX_NODES;
    s->timeout_s = PGN_INET_DEFAULT_TIMEOUT_S;
    const json_t *prog = json_object_get(root, "program");
    if (!prog) return pgn_spec_fail(err, "program", "required (HVM2 text, with @main)");
    if (!json_is_string(prog)) return pgn_spec_fail(err, "program", "must be a string");
    size_t len = json_string_length(prog);
    if (len > PGN_MAX_PROGRAM_BYTES)
        return pgn_spec_fail(err, "program", "must be at most %u bytes", PGN_MAX_PROGRAM_BYTES);
    pgn_inet_book *book = NULL;
    if (pgn_inet_parse(json_string_value(prog), len, &book, err)) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return pgn_spec_fail(err, "program", "%s", msg);
    }
    pgn_inet_book_free(book);
    s->program = strndup(json_string_value(prog), len);
    if (!s->program) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    long long wi = 0;
    if (pgn_spec_int(root, "work_items", "work_items", 0, 1 << 20, &wi, err)) return -1;
    s->work_items = (int)wi;
    int rc;
    const json_t *lim = pgn_spec_object(root, "limits", "limits", false, err, &rc);
    if (!lim) return rc;
    static const char *const lkeys[] = {"max_interactions", "max_nodes", "timeout_s", NULL};
    if (pgn_spec_only_keys(lim, "limits", lkeys, err)) return -1;
    long long mi = (long long)s->max_interactions, mn = (long long)s->max_nodes;
    float to = (float)s->timeout_s;
    if (pgn_spec_int(lim, "max_interactions", "limits.max_interactions", 1, (long long)1 << 50, &mi, err) ||
        pgn_spec_int(lim, "max_nodes", "limits.max_nodes", 16, (long long)1 << 31, &mn, err) ||
        pgn_spec_float(lim, "timeout_s", "limits.timeout_s", 0.0, true, 86400.0, &to, err))
        return -1;
    s->max_interactions = (uint64_t)mi;
    s->max_nodes = (uint64_t)mn;
    s->timeout_s = to;
    return 0;
}

json_t *pgn_inet_spec_to_json(const pgn_inet_spec *s) {
    return json_pack("{s:s, s:i, s:{s:I, s:I, s:f}}", "program", s->program, "work_items",
                     s->work_items, "limits", "max_interactions", (json_int_t)s->max_interactions,
                     "max_nodes", (json_int_t)s->max_nodes, "timeout_s", s->timeout_s);
}
