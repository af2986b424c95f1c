/* data.c: datasets for training jobs: the "data" object of a train spec (parse, normalise,
 * shape) and loading its sets: synthetic XOR and spirals generated on the host, Fashion-MNIST and
 * any idx files read through idx.c, with idx paths confined to the data directory. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensor/idx.h"
#include "tensor/tensor.h"
#include "pgn_math.h"


/* spiral: CS231n's set. Defaults and limits are the spec's. */
#define PGN_SPIRAL_SAMPLES 100
#define PGN_SPIRAL_MAX_SAMPLES 100000
#define PGN_SPIRAL_CLASSES 3
#define PGN_SPIRAL_MIN_CLASSES 2
#define PGN_SPIRAL_MAX_CLASSES 32
/* A fixed seed: the dataset is part of the task, so it must not change with the job's seed. */
#define PGN_SPIRAL_SEED 0x53504952414cULL /* "SPIRAL" */
#define PGN_SPIRAL_STREAM_TRAIN 1
#define PGN_SPIRAL_STREAM_TEST 2
#define PGN_SPIRAL_SWEEP 4.0f   /* radians an arm turns from centre to rim, as in CS231n */
#define PGN_SPIRAL_NOISE 0.2f   /* standard deviation of the angle noise, radians, as in CS231n */
#define PGN_SPIRAL_UNIFORMS 4   /* uniforms summed per normal draw (Irwin-Hall) */
#define PGN_SQRT3 1.7320508075688772f /* 4 uniforms have variance 1/3: scale to unit variance */
#define PGN_TWO_PI 6.2831853071795865f

/* fashion-mnist: the Debian package dataset-fashion-mnist installs the four files here. */
#define PGN_FASHION_SUBDIR "fashion-mnist"
#define PGN_FASHION_SYSTEM_DIR "/usr/share/datasets/fashion-mnist"
#define PGN_FASHION_PACKAGE "dataset-fashion-mnist"
#define PGN_FASHION_SIDE 28
#define PGN_FASHION_CLASSES 10
enum { FASHION_TRAIN_IMAGES, FASHION_TRAIN_LABELS, FASHION_TEST_IMAGES, FASHION_TEST_LABELS,
       FASHION_FILES };
static const char *const fashion_files[FASHION_FILES] = {
    "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz"};

#define XOR_POINTS 4

/* ---- the "data" spec ------------------------------------------------------------------------ */



static const char *const only_source[] = {"source", NULL};
static const char *const spiral_fields[] = {"source", "samples", "classes", NULL};
static const char *const fashion_fields[] = {"source", "train_samples", "test_samples", NULL};
static const char *const idx_fields[] = {"source", "train_images", "train_labels", "test_images",
                                         "test_labels", "train_samples", "test_samples", NULL};
static const char *const text_fields[] = {"source", "path", NULL};

static const struct {
    const char *name;
    pgn_data_source source;
    const char *const *fields;
} sources[] = {
    {"xor", PGN_DATA_XOR, only_source},
    {"spiral", PGN_DATA_SPIRAL, spiral_fields},
    {"fashion-mnist", PGN_DATA_FASHION_MNIST, fashion_fields},
    {"idx", PGN_DATA_IDX, idx_fields},
    {"text", PGN_DATA_TEXT, text_fields},
    {"fortunes", PGN_DATA_FORTUNES, only_source},
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

/* The idx source's four paths, in the order they are loaded. */
static const struct {
    const char *key, *field;
    size_t offset;
} idx_paths[] = {
    {"train_images", "data.train_images", offsetof(pgn_data_spec, train_images)},
    {"train_labels", "data.train_labels", offsetof(pgn_data_spec, train_labels)},
    {"test_images", "data.test_images", offsetof(pgn_data_spec, test_images)},
    {"test_labels", "data.test_labels", offsetof(pgn_data_spec, test_labels)},
};
#define N_IDX_PATHS (sizeof idx_paths / sizeof idx_paths[0])

static const char *source_name(pgn_data_source s) {
    for (size_t i = 0; i < N_SOURCES; i++)
        if (sources[i].source == s) return sources[i].name;
    return "unknown";
}

static bool in_list(const char *const *list, const char *key) {
    for (; *list; list++)
        if (!strcmp(*list, key)) return true;
    return false;
}

static void join_list(char *out, size_t size, const char *const *list) {
    out[0] = '\0';
    for (; *list; list++) {
        strncat(out, *list, size - strlen(out) - 1);
        if (list[1]) strncat(out, ", ", size - strlen(out) - 1);
    }
}

/* Every key must belong to the chosen source; a key of another source gets its own message,
 * since it is the likelier mistake. */
static int check_keys(const json_t *data, size_t src, pgn_error *err) {
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)data, key, val) {
        if (in_list(sources[src].fields, key)) continue;
        char field[128], allowed[256];
        snprintf(field, sizeof field, "data.%.64s", key);
        join_list(allowed, sizeof allowed, sources[src].fields);
        for (size_t i = 0; i < N_SOURCES; i++)
            if (in_list(sources[i].fields, key))
                return pgn_spec_fail(err, field, "does not apply to source \"%s\" (its fields: %s)",
                            sources[src].name, allowed);
        return pgn_spec_fail(err, field, "unknown field (expected one of: %s)", allowed);
    }
    return 0;
}

static int get_int(const json_t *data, const char *key, int lo, int hi, int *out, pgn_error *err) {
    const json_t *v = json_object_get(data, key);
    if (!v) return 0;
    char field[64];
    snprintf(field, sizeof field, "data.%s", key);
    if (!json_is_integer(v)) return pgn_spec_fail(err, field, "must be an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) return pgn_spec_fail(err, field, "must be between %d and %d", lo, hi);
    *out = (int)x;
    return 0;
}

/* A path the idx source may name: relative, with no ".." component, so that it stays inside
 * the data directory (symlinks are checked when the files are opened). */
static int check_relative_path(const char *path, const char *field, pgn_error *err) {
    if (!path[0]) return pgn_spec_fail(err, field, "must not be empty");
    if (path[0] == '/')
        return pgn_spec_fail(err, field, "must be a path relative to the data directory, not an absolute "
                                "path ('%.200s')", path);
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return pgn_spec_fail(err, field, "must not contain a '..' component ('%.200s'): paths stay "
                                    "inside the data directory", path);
        p += len;
        if (*p == '/') p++;
    }
    return 0;
}

/* A required path field of source into dst (PGN_PATH_MAX bytes), relative to the datasets
 * directory. */
static int get_path_field(const json_t *data, const char *key, const char *field, const char *source,
                          char *dst, pgn_error *err) {
    const json_t *v = json_object_get(data, key);
    if (!v) return pgn_spec_fail(err, field, "required for source \"%s\" (a path relative to the datasets "
                                    "directory)", source);
    if (!json_is_string(v)) return pgn_spec_fail(err, field, "must be a string");
    if (json_string_length(v) >= PGN_PATH_MAX)
        return pgn_spec_fail(err, field, "must be at most %d characters", PGN_PATH_MAX - 1);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return pgn_spec_fail(err, field, "must not contain NUL characters");
    snprintf(dst, PGN_PATH_MAX, "%s", json_string_value(v));
    return check_relative_path(dst, field, err);
}

static int get_path(const json_t *data, size_t which, pgn_data_spec *out, pgn_error *err) {
    return get_path_field(data, idx_paths[which].key, idx_paths[which].field, "idx",
                          (char *)out + idx_paths[which].offset, err);
}

int pgn_data_spec_parse(const json_t *data, pgn_data_spec *out, pgn_error *err) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(data)) return pgn_spec_fail(err, "data", "must be an object");
    char names[128];
    const char *name_list[N_SOURCES + 1];
    for (size_t i = 0; i < N_SOURCES; i++) name_list[i] = sources[i].name;
    name_list[N_SOURCES] = NULL;
    join_list(names, sizeof names, name_list);
    const json_t *src = json_object_get(data, "source");
    if (!src) return pgn_spec_fail(err, "data.source", "required (one of: %s)", names);
    if (!json_is_string(src)) return pgn_spec_fail(err, "data.source", "must be a string");
    size_t which = N_SOURCES;
    for (size_t i = 0; i < N_SOURCES; i++)
        if (!strcmp(json_string_value(src), sources[i].name)) which = i;
    if (which == N_SOURCES)
        return pgn_spec_fail(err, "data.source", "unknown data source '%.64s' (expected one of: %s)",
                    json_string_value(src), names);
    if (check_keys(data, which, err)) return -1;
    out->source = sources[which].source;
    switch (out->source) {
    case PGN_DATA_SPIRAL:
        out->samples = PGN_SPIRAL_SAMPLES;
        out->classes = PGN_SPIRAL_CLASSES;
        if (get_int(data, "samples", 1, PGN_SPIRAL_MAX_SAMPLES, &out->samples, err) ||
            get_int(data, "classes", PGN_SPIRAL_MIN_CLASSES, PGN_SPIRAL_MAX_CLASSES, &out->classes,
                    err))
            return -1;
        break;
    case PGN_DATA_IDX:
        for (size_t i = 0; i < N_IDX_PATHS; i++)
            if (get_path(data, i, out, err)) return -1;
        /* fall through - the subset fields */
    case PGN_DATA_FASHION_MNIST:
        if (get_int(data, "train_samples", 1, PGN_IDX_MAX_ITEMS, &out->train_samples, err) ||
            get_int(data, "test_samples", 1, PGN_IDX_MAX_ITEMS, &out->test_samples, err))
            return -1;
        break;
    case PGN_DATA_TEXT:
        if (get_path_field(data, "path", "data.path", "text", out->path, err)) return -1;
        break;
    case PGN_DATA_XOR:
    case PGN_DATA_FORTUNES: break;
    }
    return 0;
}

json_t *pgn_data_spec_to_json(const pgn_data_spec *data) {
    json_t *o = json_pack("{s:s}", "source", source_name(data->source));
    if (!o) return NULL;
    switch (data->source) {
    case PGN_DATA_SPIRAL:
        json_object_set_new(o, "samples", json_integer(data->samples));
        json_object_set_new(o, "classes", json_integer(data->classes));
        break;
    case PGN_DATA_IDX:
        for (size_t i = 0; i < N_IDX_PATHS; i++)
            json_object_set_new(o, idx_paths[i].key,
                                json_string((const char *)data + idx_paths[i].offset));
        /* fall through - the subset fields */
    case PGN_DATA_FASHION_MNIST:
        if (data->train_samples) json_object_set_new(o, "train_samples", json_integer(data->train_samples));
        if (data->test_samples) json_object_set_new(o, "test_samples", json_integer(data->test_samples));
        break;
    case PGN_DATA_TEXT: json_object_set_new(o, "path", json_string(data->path)); break;
    case PGN_DATA_XOR:
    case PGN_DATA_FORTUNES: break;
    }
    return o;
}

int pgn_data_shape(const pgn_data_spec *data, int *features, int *classes) {
    switch (data->source) {
    case PGN_DATA_XOR:
        *features = 2;
        *classes = 2;
        return 1;
    case PGN_DATA_SPIRAL:
        *features = 2;
        *classes = data->classes;
        return 1;
    case PGN_DATA_FASHION_MNIST:
        *features = PGN_FASHION_SIDE * PGN_FASHION_SIDE;
        *classes = PGN_FASHION_CLASSES;
        return 1;
    case PGN_DATA_IDX: break; /* known once the files are read */
    case PGN_DATA_TEXT:
    case PGN_DATA_FORTUNES: break; /* text: tokens, not samples of features */
    }
    return 0;
}

/* ---- synthetic sets ------------------------------------------------------------------------- */

static int alloc_set(pgn_dataset *d, int n, int features, int classes, pgn_error *err) {
    d->n = n;
    d->features = features;
    d->classes = classes;
    d->x = calloc((size_t)n * features, sizeof *d->x);
    d->y = calloc((size_t)n, sizeof *d->y);
    if (!d->x || !d->y) {
        pgn_dataset_free(d);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "data", "cannot allocate the dataset");
        return -1;
    }
    return 0;
}

/* The four corners of the unit square; the class is a XOR b. The evaluation set is the same
 * four points: XOR has nothing else to generalise to. */
static int load_xor(pgn_dataset *d, pgn_error *err) {
    if (alloc_set(d, XOR_POINTS, 2, 2, err)) return -1;
    for (int i = 0; i < XOR_POINTS; i++) {
        int a = i >> 1, b = i & 1;
        d->x[2 * i] = (float)a;
        d->x[2 * i + 1] = (float)b;
        d->y[i] = a ^ b;
    }
    return 0;
}

/* A standard normal from the counter RNG by summing uniforms: only + and *, so the draw is the
 * same on every machine (Box-Muller would bring libm's log into the data). */
static float spiral_normal(uint64_t stream, uint64_t sample) {
    float sum = 0.0f;
    for (int k = 0; k < PGN_SPIRAL_UNIFORMS; k++)
        sum += pgn_rand_unit(PGN_SPIRAL_SEED, stream, sample * PGN_SPIRAL_UNIFORMS + (uint64_t)k);
    return (sum - 0.5f * PGN_SPIRAL_UNIFORMS) * PGN_SQRT3;
}

/* CS231n's spirals: arm j starts at angle j*2pi/classes and turns PGN_SPIRAL_SWEEP radians while
 * the radius grows to 1, with normal noise on the angle. Radii are (i+1)/samples rather than
 * CS231n's linspace(0, 1): its first point of every arm sits at the origin with each label.
 * Samples interleave the classes (sample s has class s % classes), so any prefix is balanced.
 * The evaluation set is the same construction with another noise stream. */
static int load_spiral(pgn_dataset *d, int samples, int classes, uint64_t stream,
                       pgn_error *err) {
    if (alloc_set(d, samples * classes, 2, classes, err)) return -1;
    for (int i = 0; i < samples; i++) {
        float r = (float)(i + 1) / (float)samples;
        for (int j = 0; j < classes; j++) {
            int s = i * classes + j;
            float t = (float)j * (PGN_TWO_PI / (float)classes) + PGN_SPIRAL_SWEEP * r +
                      PGN_SPIRAL_NOISE * spiral_normal(stream, (uint64_t)s);
            d->x[2 * s] = r * sinf(t);
            d->x[2 * s + 1] = r * cosf(t);
            d->y[s] = j;
        }
    }
    return 0;
}

/* ---- idx files ------------------------------------------------------------------------------ */

/* One set from an image file and a label file. Features come from the images; classes are set
 * by the caller. field_images/field_labels name the spec fields to blame ("" for none). */
static int load_idx_pair(const char *images, const char *field_images, const char *labels,
                         const char *field_labels, pgn_dataset *d, int *max_label,
                         pgn_error *err) {
    int n_images, rows, cols, n_labels;
    if (pgn_idx_read_images(images, field_images, &d->x, &n_images, &rows, &cols, err))
        return -1;
    if (pgn_idx_read_labels(labels, field_labels, &d->y, &n_labels, max_label, err)) {
        pgn_dataset_free(d);
        return -1;
    }
    if (n_labels != n_images) {
        const char *field = field_labels[0] ? field_labels : "";
        pgn_error_set(err, PGN_E_DATA, field, "%s%s%s: %d labels, but %s has %d images", field,
                      field[0] ? ": " : "", labels, n_labels, images, n_images);
        pgn_dataset_free(d);
        return -1;
    }
    d->n = n_images;
    d->features = rows * cols;
    return 0;
}

/* Labels must lie in [0, classes): one that does not means the file is not the dataset the
 * source promises. */
static int check_labels(const pgn_dataset *d, const char *path, const char *field,
                        pgn_error *err) {
    for (int i = 0; i < d->n; i++)
        if (d->y[i] >= d->classes) {
            pgn_error_set(err, PGN_E_DATA, field, "%s%s%s: label %d at index %d is out of range "
                          "(expected 0..%d)", field, field[0] ? ": " : "", path, d->y[i], i,
                          d->classes - 1);
            return -1;
        }
    return 0;
}

static int check_same_features(const pgn_dataset *train, const pgn_dataset *test,
                               const char *path, const char *field, pgn_error *err) {
    if (test->features == train->features) return 0;
    pgn_error_set(err, PGN_E_DATA, field, "%s%s%s: images have %d pixels, but the training images "
                  "have %d", field, field[0] ? ": " : "", path, test->features, train->features);
    return -1;
}

/* dir/name into out; false when it does not fit. */
static bool join_path(char out[PATH_MAX], const char *dir, const char *name) {
    int len = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return len >= 0 && len < PATH_MAX;
}

int pgn_data_resolve(const char *data_dir, const char *rel, const char *field,
                               char *out, pgn_error *err) {
    if (check_relative_path(rel, field, err)) return -1; /* specs built without the parser */
    char root[PATH_MAX], joined[PATH_MAX];
    if (!realpath(data_dir, root)) {
        pgn_error_set(err, PGN_E_DATA, field, "%s: data directory '%s': %s", field, data_dir,
                      strerror(errno));
        return -1;
    }
    if (!join_path(joined, data_dir, rel)) {
        pgn_error_set(err, PGN_E_DATA, field, "%s: path too long", field);
        return -1;
    }
    if (!realpath(joined, out)) {
        pgn_error_set(err, PGN_E_DATA, field, "%s: %s: cannot open: %s", field, joined,
                      strerror(errno));
        return -1;
    }
    size_t root_len = strlen(root);
    bool inside = !strcmp(root, "/") ||
                  (!strncmp(out, root, root_len) && out[root_len] == '/');
    if (!inside) {
        pgn_error_set(err, PGN_E_INVALID_SPEC, field, "%s: '%s' resolves to '%s', outside the data "
                      "directory '%s'", field, rel, out, root);
        return -1;
    }
    return 0;
}

/* The idx source: classes are the largest label of either set plus one. */
static int load_idx_source(const pgn_data_spec *spec, const char *data_dir, pgn_dataset *train,
                           pgn_dataset *test, pgn_error *err) {
    char path[N_IDX_PATHS][PATH_MAX];
    for (size_t i = 0; i < N_IDX_PATHS; i++)
        if (pgn_data_resolve(data_dir, (const char *)spec + idx_paths[i].offset,
                                idx_paths[i].field, path[i], err))
            return -1;
    int max_train, max_test;
    if (load_idx_pair(path[0], idx_paths[0].field, path[1], idx_paths[1].field, train,
                      &max_train, err))
        return -1;
    if (load_idx_pair(path[2], idx_paths[2].field, path[3], idx_paths[3].field, test, &max_test,
                      err) ||
        check_same_features(train, test, path[2], idx_paths[2].field, err)) {
        pgn_dataset_free(train);
        pgn_dataset_free(test);
        return -1;
    }
    train->classes = test->classes = (max_train > max_test ? max_train : max_test) + 1;
    return 0;
}

static bool has_fashion_files(const char *dir) {
    char path[PATH_MAX];
    for (int i = 0; i < FASHION_FILES; i++)
        if (!join_path(path, dir, fashion_files[i]) || access(path, R_OK)) return false;
    return true;
}

/* Fashion-MNIST from <data_dir>/fashion-mnist/ (a copy the operator provides) or else from the
 * Debian package's directory. */
static int load_fashion(const char *data_dir, pgn_dataset *train, pgn_dataset *test,
                        pgn_error *err) {
    char local[PATH_MAX];
    bool fits = join_path(local, data_dir, PGN_FASHION_SUBDIR);
    const char *dir = fits && has_fashion_files(local)            ? local
                      : has_fashion_files(PGN_FASHION_SYSTEM_DIR) ? PGN_FASHION_SYSTEM_DIR
                                                                  : NULL;
    if (!dir) {
        pgn_error_set(err, PGN_E_DATA, "data.source",
                      "data.source: fashion-mnist files not found in '%s' nor '%s': install the "
                      "Debian package %s, or put %s, %s, %s and %s into '%s'",
                      local, PGN_FASHION_SYSTEM_DIR, PGN_FASHION_PACKAGE,
                      fashion_files[FASHION_TRAIN_IMAGES], fashion_files[FASHION_TRAIN_LABELS],
                      fashion_files[FASHION_TEST_IMAGES], fashion_files[FASHION_TEST_LABELS],
                      local);
        return -1;
    }
    char path[FASHION_FILES][PATH_MAX];
    for (int i = 0; i < FASHION_FILES; i++)
        if (!join_path(path[i], dir, fashion_files[i])) /* has_fashion_files said it fits */
            return pgn_spec_fail(err, "data.source", "path too long: '%s'", dir);
    int max_label;
    if (load_idx_pair(path[FASHION_TRAIN_IMAGES], "", path[FASHION_TRAIN_LABELS], "", train,
                      &max_label, err))
        return -1;
    if (load_idx_pair(path[FASHION_TEST_IMAGES], "", path[FASHION_TEST_LABELS], "", test,
                      &max_label, err))
        goto fail;
    train->classes = test->classes = PGN_FASHION_CLASSES;
    const pgn_dataset *sets[2] = {train, test};
    for (int s = 0; s < 2; s++) {
        const char *images = path[s ? FASHION_TEST_IMAGES : FASHION_TRAIN_IMAGES];
        if (sets[s]->features != PGN_FASHION_SIDE * PGN_FASHION_SIDE) {
            pgn_error_set(err, PGN_E_DATA, "", "%s: images have %d pixels (expected %dx%d)", images,
                          sets[s]->features, PGN_FASHION_SIDE, PGN_FASHION_SIDE);
            goto fail;
        }
        if (check_labels(sets[s], path[s ? FASHION_TEST_LABELS : FASHION_TRAIN_LABELS], "", err))
            goto fail;
    }
    return 0;
fail:
    pgn_dataset_free(train);
    pgn_dataset_free(test);
    return -1;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* Keeps the first n samples of d (n 0: all of them) and gives the rest's memory back (the whole
 * file was read, so that it is checked as a job reading all of it would check it: 188 MB of
 * Fashion-MNIST pixels for a job that keeps 32 images). */
static int take_first(pgn_dataset *d, int n, const char *field, pgn_error *err) {
    if (!n || n == d->n) return 0;
    if (n > d->n) {
        pgn_error_set(err, PGN_E_DATA, field, "%s: %d samples asked for, the set has %d", field, n, d->n);
        return -1;
    }
    d->n = n;
    float *x = realloc(d->x, (size_t)n * (size_t)d->features * sizeof *x);
    int32_t *y = realloc(d->y, (size_t)n * sizeof *y);
    if (x) d->x = x; /* a failed shrink keeps the larger block, which still holds them */
    if (y) d->y = y;
    return 0;
}

int pgn_dataset_load(const pgn_data_spec *spec, const char *data_dir, pgn_dataset *train,
                     pgn_dataset *test, pgn_error *err) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (!data_dir) data_dir = PGN_DEFAULT_DATA_DIR;
    switch (spec->source) {
    case PGN_DATA_XOR:
        if (load_xor(train, err) || load_xor(test, err)) {
            pgn_dataset_free(train);
            return -1;
        }
        return 0;
    case PGN_DATA_SPIRAL:
        if (spec->samples < 1 || spec->samples > PGN_SPIRAL_MAX_SAMPLES ||
            spec->classes < PGN_SPIRAL_MIN_CLASSES || spec->classes > PGN_SPIRAL_MAX_CLASSES)
            return pgn_spec_fail(err, "data", "spiral needs 1..%d samples and %d..%d classes (got %d, %d)",
                        PGN_SPIRAL_MAX_SAMPLES, PGN_SPIRAL_MIN_CLASSES, PGN_SPIRAL_MAX_CLASSES,
                        spec->samples, spec->classes);
        if (load_spiral(train, spec->samples, spec->classes, PGN_SPIRAL_STREAM_TRAIN, err) ||
            load_spiral(test, spec->samples, spec->classes, PGN_SPIRAL_STREAM_TEST, err)) {
            pgn_dataset_free(train);
            return -1;
        }
        return 0;
    case PGN_DATA_FASHION_MNIST:
    case PGN_DATA_IDX:
        if (spec->source == PGN_DATA_FASHION_MNIST ? load_fashion(data_dir, train, test, err)
                                                   : load_idx_source(spec, data_dir, train, test, err))
            return -1;
        if (take_first(train, spec->train_samples, "data.train_samples", err) ||
            take_first(test, spec->test_samples, "data.test_samples", err)) {
            pgn_dataset_free(train);
            pgn_dataset_free(test);
            return -1;
        }
        return 0;
    case PGN_DATA_TEXT:
    case PGN_DATA_FORTUNES: break; /* text is a corpus (corpus.c), not a set of samples */
    }
    return pgn_spec_fail(err, "data.source", "unsupported source");
}

void pgn_dataset_free(pgn_dataset *d) {
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}
