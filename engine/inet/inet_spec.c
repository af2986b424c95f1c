/* inet_spec.c: an inet job's spec: the program (parsed here, so a bad one is refused naming its
 * line and column), the work-items and the limits that stop a runaway net, and the stored form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "inet/inet.h"
#include "lang/lang.h"

#define PGN_MAX_PROGRAM_BYTES (4u << 20)
#define PGN_INET_MAX_FILE_BYTES (1u << 20) /* all of a spec's files together */
#define PGN_INET_DEFAULT_MAX_INTERACTIONS 1000000000ULL
#define PGN_INET_DEFAULT_MAX_NODES (1ULL << 24)
#define PGN_INET_DEFAULT_TIMEOUT_S 60.0

/* "files": {"name": "text", ...}: small inputs the program finds in its directory. A name is one
 * path component of letters, digits, '.', '-' and '_' (not "." or ".."), so it stays there. */
static int parse_files(const json_t *root, pgn_inet_spec *s, pgn_error *err) {
    const json_t *files = json_object_get(root, "files");
    if (!files) return 0;
    if (!json_is_object(files))
        return pgn_spec_fail(err, "files", "must be an object of file names and their texts");
    if (json_object_size(files) > PGN_INET_MAX_FILES)
        return pgn_spec_fail(err, "files", "at most %d files; got %zu", PGN_INET_MAX_FILES, json_object_size(files));
    size_t total = 0;
    const char *name;
    const json_t *text;
    json_object_foreach((json_t *)files, name, text) {
        char path[320];
        snprintf(path, sizeof path, "files.%.255s", name);
        size_t len = strlen(name);
        bool ok = len > 0 && len <= 255 && strcmp(name, ".") && strcmp(name, "..");
        for (size_t i = 0; ok && i < len; i++) {
            char c = name[i];
            ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                 c == '_';
        }
        if (!ok)
            return pgn_spec_fail(err, "files", "'%.64s' is not a file name: 1 to 255 letters, digits, '.', '-' and "
                                 "'_' (no '/', not \".\" or \"..\")", name);
        if (!json_is_string(text)) return pgn_spec_fail(err, path, "must be a string: the file's text");
        if (strlen(json_string_value(text)) != json_string_length(text))
            return pgn_spec_fail(err, path, "holds a NUL character (\\u0000): files are text");
        total += json_string_length(text);
        if (total > PGN_INET_MAX_FILE_BYTES)
            return pgn_spec_fail(err, "files", "at most %u bytes of files together", PGN_INET_MAX_FILE_BYTES);
        int i = s->n_files;
        s->file_names[i] = strdup(name);
        s->file_texts[i] = strndup(json_string_value(text), json_string_length(text));
        s->n_files++;
        if (!s->file_names[i] || !s->file_texts[i]) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
            return -1;
        }
    }
    return 0;
}

static int parse_rest(const json_t *root, pgn_inet_spec *s, pgn_error *err);

/* An inet spec; the program is parsed here too, so a bad program is a 400 naming its line. */
int pgn_inet_spec_parse(const json_t *root, pgn_inet_spec *s, bool compile, pgn_error *err) {
    static const char *const keys[] = {"kind",       "name",  "device",   "program", "language",
                                       "limits",     "work_items", "files", NULL};
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
    const json_t *lang = json_object_get(root, "language");
    if (lang && (!json_is_string(lang) || (strcmp(json_string_value(lang), "hvm") && strcmp(json_string_value(lang), "pgl"))))
        return pgn_spec_fail(err, "language", "must be \"hvm\" (HVM2 text, the default) or \"pgl\" (docs/language.md)");
    bool pgl = lang && !strcmp(json_string_value(lang), "pgl");
    char msg[sizeof err->message];
    if (pgl) { /* compiled here, so a compile error is a 400 naming its line and column */
        s->source = strndup(json_string_value(prog), len);
        if (!s->source) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
            return -1;
        }
        if (!compile) return parse_rest(root, s, err);
        if (!(s->program = pgn_pgl_compile(s->source, len, err))) {
            if (err->code == PGN_E_OUT_OF_MEMORY) return -1;
            snprintf(msg, sizeof msg, "%s", err->message);
            return pgn_spec_fail(err, "program", "%s", msg);
        }
        len = strlen(s->program);
    } else if (!(s->program = strndup(json_string_value(prog), len))) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    pgn_inet_book *book = NULL;
    if (pgn_inet_parse(s->program, len, &book, err)) {
        snprintf(msg, sizeof msg, "%s", err->message);
        if (pgl) /* the compiler's fault, not the program's */
            return pgn_spec_fail(err, "program", "the compiled net does not parse (a compiler bug): %s", msg);
        return pgn_spec_fail(err, "program", "%s", msg);
    }
    pgn_inet_book_free(book);
    return parse_rest(root, s, err);
}

/* What follows the program: files, work-items and limits. */
static int parse_rest(const json_t *root, pgn_inet_spec *s, pgn_error *err) {
    if (parse_files(root, s, err)) return -1;
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
    json_t *j = json_pack("{s:s, s:i, s:{s:I, s:I, s:f}}", "program", s->source ? s->source : s->program, "work_items",
                          s->work_items, "limits", "max_interactions", (json_int_t)s->max_interactions,
                          "max_nodes", (json_int_t)s->max_nodes, "timeout_s", s->timeout_s);
    if (s->source) json_object_set_new(j, "language", json_string("pgl"));
    if (s->n_files) {
        json_t *files = json_object();
        for (int i = 0; i < s->n_files; i++) json_object_set_new(files, s->file_names[i], json_string(s->file_texts[i]));
        json_object_set_new(j, "files", files);
    }
    return j;
}
