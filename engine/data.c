/* data.c: datasets for training jobs: the synthetic XOR set for now (real idx files come with
 * the Fashion-MNIST work). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int alloc_set(pgn_dataset *d, int n, int features, int classes, pgn_error *err) {
    d->n = n;
    d->features = features;
    d->classes = classes;
    d->x = calloc((size_t)n * features, sizeof *d->x);
    d->y = calloc((size_t)n, sizeof *d->y);
    if (!d->x || !d->y) {
        pgn_dataset_free(d);
        pgn_error_set(err, "out_of_memory", "data", "cannot allocate the dataset");
        return -1;
    }
    return 0;
}

/* The four corners of the unit square; the class is a XOR b. The evaluation set is the same
 * four points: XOR has nothing else to generalise to. */
static int load_xor(pgn_dataset *d, pgn_error *err) {
    if (alloc_set(d, 4, 2, 2, err)) return -1;
    for (int i = 0; i < 4; i++) {
        int a = i >> 1, b = i & 1;
        d->x[2 * i] = (float)a;
        d->x[2 * i + 1] = (float)b;
        d->y[i] = a ^ b;
    }
    return 0;
}

int pgn_dataset_load(const pgn_data_spec *spec, const char *data_dir, pgn_dataset *train,
                     pgn_dataset *test, pgn_error *err) {
    (void)data_dir;
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    switch (spec->source) {
    case PGN_DATA_XOR:
        if (load_xor(train, err) || load_xor(test, err)) {
            pgn_dataset_free(train);
            return -1;
        }
        return 0;
    case PGN_DATA_SPIRAL:
    case PGN_DATA_FASHION_MNIST:
    case PGN_DATA_IDX: break;
    }
    pgn_error_set(err, "invalid_spec", "data.source", "data.source: unsupported source");
    return -1;
}

void pgn_dataset_free(pgn_dataset *d) {
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

int pgn_data_spec_parse(const json_t *data, pgn_data_spec *out, pgn_error *err) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(data)) {
        pgn_error_set(err, "invalid_spec", "data", "data: must be an object");
        return -1;
    }
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)data, key, val) {
        if (strcmp(key, "source")) {
            pgn_error_set(err, "invalid_spec", "", "data.%s: unknown field (expected one of: source)", key);
            snprintf(err->field, sizeof err->field, "data.%s", key);
            return -1;
        }
    }
    const json_t *src = json_object_get(data, "source");
    if (!src) {
        pgn_error_set(err, "invalid_spec", "data.source", "data.source: required (\"xor\")");
        return -1;
    }
    if (!json_is_string(src)) {
        pgn_error_set(err, "invalid_spec", "data.source", "data.source: must be a string");
        return -1;
    }
    if (strcmp(json_string_value(src), "xor")) {
        pgn_error_set(err, "invalid_spec", "data.source",
                      "data.source: unknown data source '%.64s' (expected \"xor\")",
                      json_string_value(src));
        return -1;
    }
    out->source = PGN_DATA_XOR;
    return 0;
}

json_t *pgn_data_spec_to_json(const pgn_data_spec *data) {
    (void)data;
    return json_pack("{s:s}", "source", "xor");
}

int pgn_data_shape(const pgn_data_spec *data, int *features, int *classes) {
    if (data->source != PGN_DATA_XOR) return 0;
    *features = 2;
    *classes = 2;
    return 1;
}
