/* fuzz_json.c: a libFuzzer target for engine/json_text.c's reader and printer, against jansson.
 * Not part of the build or the tests: see README.md here. For every input it checks:
 *   - pgn_json_loads reads a value exactly where json_loads(JSON_DECODE_ANY) reads one, and an
 *     equal one, printed alike (json_equal does not tell an object's order);
 *   - pgn_json_dumps of that value is jansson's compact text of it, byte for byte. */
#include "paragon.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, const char *text) {
    fprintf(stderr, "fuzz_json: %s: '%s'\n", what, text);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0; /* a NUL inside ends the text for both readers */
    json_t *want = json_loads(text, JSON_DECODE_ANY, NULL), *got = pgn_json_loads(text);
    if (!want != !got) fail(want ? "no value where jansson reads one" : "a value where jansson reads none", text);
    if (want) {
        if (!json_equal(want, got)) fail("another value than jansson's", text);
        char *a = pgn_json_dumps(got), *b = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
        if (!a != !b || (a && strcmp(a, b) != 0)) fail("printed otherwise than jansson prints it", text);
        free(a);
        free(b);
    }
    json_decref(want);
    json_decref(got);
    free(text);
    return 0;
}
