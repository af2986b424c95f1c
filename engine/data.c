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

int pgn_dataset_load(const pgn_train_spec *spec, pgn_dataset *train, pgn_dataset *test,
                     pgn_error *err) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    switch (spec->source) {
    case PGN_DATA_XOR:
        if (load_xor(train, err) || load_xor(test, err)) {
            pgn_dataset_free(train);
            return -1;
        }
        return 0;
    }
    pgn_error_set(err, "invalid_spec", "data.source", "data.source: unsupported source");
    return -1;
}

void pgn_dataset_free(pgn_dataset *d) {
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}
