/* fuzz_spec.c: a libFuzzer target for the job-spec parser (engine/jobs/spec.c, with the HVM2 parser
 * it runs on inet programs and the data-source parser), fed request bodies as paragond gets
 * them, and for paragond's JSON shape check (server/admission.c) in front of it. Not part of the
 * build or the tests: see README.md here. Beyond "no crash and no sanitizer report" it checks:
 *   - a refused spec has an error code and a message;
 *   - an accepted spec is a fixed point: pgn_spec_to_json, parsed again, gives the same JSON;
 *   - pgd_admit_json agrees with jansson: a body it lets through that jansson parses is
 *     no deeper than PGD_JSON_MAX_DEPTH and has no array longer than PGD_JSON_MAX_ARRAY, and a
 *     body it refuses for depth or length really is that deep or long. */
#include "admission.h"
#include "paragon.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Depth (containers nested, the root counting 1) and longest array of a parsed document. */
static void shape(const json_t *v, int depth, int *max_depth, size_t *max_array) {
    if (!json_is_object(v) && !json_is_array(v)) return;
    if (depth > *max_depth) *max_depth = depth;
    if (json_is_array(v)) {
        if (json_array_size(v) > *max_array) *max_array = json_array_size(v);
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) shape(x, depth + 1, max_depth, max_array);
    } else {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x) shape(x, depth + 1, max_depth, max_array);
    }
}

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_spec: %s: %s\n", what, detail);
    abort();
}

static void check_limits(const char *text, size_t size) {
    pgn_error err;
    json_t *extra = NULL;
    int refused = pgd_admit_json(text, size, &err, &extra);
    /* jansson's own nesting limit is 2048; deeper documents it refuses by itself */
    json_t *root = json_loadb(text, size, JSON_DECODE_ANY, NULL);
    if (root) {
        int depth = 0;
        size_t longest = 0;
        shape(root, 1, &depth, &longest);
        if (!refused && (depth > PGD_JSON_MAX_DEPTH || longest > PGD_JSON_MAX_ARRAY))
            fail("the limits check let through", err.message);
        const char *limit = refused ? json_string_value(json_object_get(extra, "limit")) : NULL;
        if (limit && !strcmp(limit, "json_depth") && depth <= PGD_JSON_MAX_DEPTH)
            fail("refused for depth a document that is not that deep", err.message);
        if (limit && !strcmp(limit, "json_array_length") && longest <= PGD_JSON_MAX_ARRAY)
            fail("refused for length a document without so long an array", err.message);
        json_decref(root);
    }
    if (refused && (!err.message[0] || err.code != PGN_E_LIMIT_EXCEEDED))
        fail("a refusal without code or message", pgn_error_code_name(err.code));
    json_decref(extra);
}

/* admission.c asks the launcher (server/launcher.c, not linked here) whether mpirun is there for a
 * distributed spec: the fuzzer checks shapes, so it is. */
int pgd_launch_available(pgn_error *err) {
    (void)err;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    check_limits(text, size);

    pgn_job_spec spec;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgn_spec_parse_text(text, size, &spec, &err) < 0) {
        if (err.code == PGN_E_NONE || !err.message[0]) fail("an error without code or message", err.message);
        return 0;
    }
    json_t *first = pgn_spec_to_json(&spec);
    if (!first) fail("an accepted spec does not serialise", spec.name);
    char *dumped = json_dumps(first, JSON_COMPACT);
    pgn_job_spec again;
    pgn_error_clear(&err);
    if (pgn_spec_parse_text(dumped, strlen(dumped), &again, &err) < 0)
        fail("the serialised spec is refused", err.message);
    json_t *second = pgn_spec_to_json(&again);
    if (!json_equal(first, second)) {
        char *b = json_dumps(second, JSON_COMPACT);
        fprintf(stderr, "first:  %s\nsecond: %s\n", dumped, b);
        fail("serialise, parse, serialise is not a fixed point", "");
    }
    json_decref(second);
    pgn_spec_free(&again);
    free(dumped);
    json_decref(first);
    pgn_spec_free(&spec);
    return 0;
}
