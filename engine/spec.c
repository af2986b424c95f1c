/* spec.c: job specs: the one parser and validator shared by paragond and the CLI.
 * Every error names the JSON path of the field at fault; unknown fields are errors. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "paragon.h"

#define PGN_MAX_WIDTH 65536
#define PGN_MAX_EPOCHS 100000
#define PGN_MAX_BATCH 65536

static int fail(pgn_error *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(pgn_error *err, const char *field, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pgn_error_set(err, "invalid_spec", field, "%s: %s", field, msg);
    return -1;
}

static void join_path(char *out, size_t size, const char *prefix, const char *key) {
    if (prefix[0])
        snprintf(out, size, "%s.%s", prefix, key);
    else
        snprintf(out, size, "%s", key);
}

/* Rejects keys outside allowed (a NULL-terminated list), naming the first unknown one. */
static int only_keys(const json_t *obj, const char *prefix, const char *const *allowed,
                     pgn_error *err) {
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, key)) ok = 1;
        if (!ok) {
            char path[128], expected[512] = "";
            join_path(path, sizeof path, prefix, key);
            for (const char *const *a = allowed; *a; a++) {
                strncat(expected, *a, sizeof expected - strlen(expected) - 1);
                if (a[1]) strncat(expected, ", ", sizeof expected - strlen(expected) - 1);
            }
            return fail(err, path, "unknown field (expected one of: %s)", expected);
        }
    }
    return 0;
}

static const json_t *get_object(const json_t *parent, const char *key, const char *path,
                                bool required, pgn_error *err, int *rc) {
    const json_t *v = json_object_get(parent, key);
    *rc = 0;
    if (!v) {
        if (required) *rc = fail(err, path, "required object is missing");
        return NULL;
    }
    if (!json_is_object(v)) {
        *rc = fail(err, path, "must be an object");
        return NULL;
    }
    return v;
}

/* Reads an optional string into out; returns -1 on a type error. */
static int get_string(const json_t *obj, const char *key, const char *path, char *out,
                      size_t size, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_string(v)) return fail(err, path, "must be a string");
    if (json_string_length(v) >= size)
        return fail(err, path, "must be at most %zu characters", size - 1);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return fail(err, path, "must not contain NUL characters");
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

static int get_int(const json_t *obj, const char *key, const char *path, long long lo,
                   long long hi, long long *out, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_integer(v)) return fail(err, path, "must be an integer");
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return fail(err, path, "must be between %lld and %lld", lo, hi);
    *out = x;
    return 0;
}

/* lo_open: the lower bound itself is not allowed. */
static int get_float(const json_t *obj, const char *key, const char *path, double lo, bool lo_open,
                     double hi, float *out, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_number(v)) return fail(err, path, "must be a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return fail(err, path, "must be %s %g and <= %g", lo_open ? ">" : ">=", lo, hi);
    *out = (float)x;
    return 0;
}

static int parse_model(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    int rc;
    const json_t *model = get_object(root, "model", "model", true, err, &rc);
    if (!model) return rc;
    static const char *const keys[] = {"type", "layers", "activation", NULL};
    if (only_keys(model, "model", keys, err)) return -1;
    char type[32] = "";
    if (get_string(model, "type", "model.type", type, sizeof type, err)) return -1;
    if (!type[0]) return fail(err, "model.type", "required (\"mlp\")");
    if (strcmp(type, "mlp")) return fail(err, "model.type", "unknown model type '%s' (expected \"mlp\")", type);
    char act[32] = "relu";
    if (get_string(model, "activation", "model.activation", act, sizeof act, err)) return -1;
    if (strcmp(act, "relu"))
        return fail(err, "model.activation", "unknown activation '%s' (expected \"relu\")", act);
    t->activation = PGN_ACT_RELU;
    const json_t *layers = json_object_get(model, "layers");
    if (!layers) return fail(err, "model.layers", "required array of layer widths is missing");
    if (!json_is_array(layers)) return fail(err, "model.layers", "must be an array of integers");
    size_t n = json_array_size(layers);
    if (n < 2 || n > PGN_MAX_LAYERS)
        return fail(err, "model.layers", "must list between 2 and %d widths (input first, classes last); got %zu",
                    PGN_MAX_LAYERS, n);
    for (size_t i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "model.layers[%zu]", i);
        const json_t *w = json_array_get(layers, i);
        if (!json_is_integer(w)) return fail(err, path, "must be an integer");
        long long x = json_integer_value(w);
        if (x <= 0) return fail(err, path, "must be > 0");
        if (x > PGN_MAX_WIDTH) return fail(err, path, "must be <= %d", PGN_MAX_WIDTH);
        t->layers[i] = (int)x;
    }
    t->n_layers = (int)n;
    return 0;
}

/* The data object, then the model's first and last widths against the dataset's shape when
 * it is known without reading files (idx files are checked when the job loads them). */
static int parse_data(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    int rc;
    const json_t *data = get_object(root, "data", "data", true, err, &rc);
    if (!data) return rc;
    if (pgn_data_spec_parse(data, &t->data, err)) return -1;
    int features, classes;
    if (!pgn_data_shape(&t->data, &features, &classes)) return 0;
    const char *source = json_string_value(json_object_get(data, "source"));
    char path[64];
    if (t->layers[0] != features) {
        snprintf(path, sizeof path, "model.layers[0]");
        return fail(err, path, "must be %d: data.source '%s' has %d input features", features,
                    source, features);
    }
    if (t->layers[t->n_layers - 1] != classes) {
        snprintf(path, sizeof path, "model.layers[%d]", t->n_layers - 1);
        return fail(err, path, "must be %d: data.source '%s' has %d classes", classes, source,
                    classes);
    }
    return 0;
}

static int parse_optimizer(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    t->optimizer = PGN_OPT_SGD;
    t->lr = 0.01f;
    t->momentum = 0.0f;
    int rc;
    const json_t *opt = get_object(root, "optimizer", "optimizer", false, err, &rc);
    if (!opt) return rc;
    static const char *const keys[] = {"type", "lr", "momentum", NULL};
    if (only_keys(opt, "optimizer", keys, err)) return -1;
    char type[32] = "sgd";
    if (get_string(opt, "type", "optimizer.type", type, sizeof type, err)) return -1;
    if (strcmp(type, "sgd"))
        return fail(err, "optimizer.type", "unknown optimizer '%s' (expected \"sgd\")", type);
    if (get_float(opt, "lr", "optimizer.lr", 0.0, true, 1000.0, &t->lr, err)) return -1;
    if (get_float(opt, "momentum", "optimizer.momentum", 0.0, false, 0.999999, &t->momentum, err))
        return -1;
    return 0;
}

static int parse_train(const json_t *root, pgn_job_spec *out, pgn_error *err) {
    static const char *const keys[] = {"kind",   "name",       "device", "seed",   "model",
                                       "data",   "optimizer",  "batch_size", "epochs", NULL};
    if (only_keys(root, "", keys, err)) return -1;
    pgn_train_spec *t = &out->train;
    if (parse_model(root, t, err) || parse_data(root, t, err) || parse_optimizer(root, t, err))
        return -1;
    long long v = 32;
    if (get_int(root, "batch_size", "batch_size", 1, PGN_MAX_BATCH, &v, err)) return -1;
    t->batch_size = (int)v;
    v = 10;
    if (get_int(root, "epochs", "epochs", 1, PGN_MAX_EPOCHS, &v, err)) return -1;
    t->epochs = (int)v;
    return 0;
}

int pgn_spec_parse(const json_t *root, pgn_job_spec *out, pgn_error *err) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(root)) return fail(err, "(root)", "a job spec must be a JSON object");
    char kind[32] = "";
    if (get_string(root, "kind", "kind", kind, sizeof kind, err)) return -1;
    if (!kind[0]) return fail(err, "kind", "required (\"train\")");
    if (strcmp(kind, "train"))
        return fail(err, "kind", "unknown job kind '%s' (this build runs: \"train\")", kind);
    out->kind = PGN_JOB_TRAIN;
    snprintf(out->name, sizeof out->name, "%s", kind);
    snprintf(out->device, sizeof out->device, "auto");
    if (get_string(root, "name", "name", out->name, sizeof out->name, err) ||
        get_string(root, "device", "device", out->device, sizeof out->device, err))
        return -1;
    if (!out->device[0]) return fail(err, "device", "must not be empty");
    long long seed = 0;
    if (get_int(root, "seed", "seed", 0, (long long)9007199254740991LL, &seed, err)) return -1;
    out->seed = (uint64_t)seed;
    return parse_train(root, out, err);
}

int pgn_spec_parse_text(const char *text, size_t len, pgn_job_spec *out, pgn_error *err) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        pgn_error_set(err, "invalid_json", "", "line %d, column %d: %s", jerr.line, jerr.column,
                      jerr.text);
        return -1;
    }
    int rc = pgn_spec_parse(root, out, err);
    json_decref(root);
    return rc;
}

const char *pgn_job_kind_name(pgn_job_kind kind) {
    switch (kind) {
    case PGN_JOB_TRAIN: return "train";
    }
    return "unknown";
}

json_t *pgn_spec_to_json(const pgn_job_spec *spec) {
    const pgn_train_spec *t = &spec->train;
    json_t *layers = json_array();
    for (int i = 0; i < t->n_layers; i++) json_array_append_new(layers, json_integer(t->layers[i]));
    return json_pack("{s:s, s:s, s:s, s:I, s:{s:s, s:o, s:s}, s:o, s:{s:s, s:o, s:o}, s:i, s:i}",
                     "kind", pgn_job_kind_name(spec->kind), "name", spec->name, "device",
                     spec->device, "seed", (json_int_t)spec->seed, "model", "type", "mlp",
                     "layers", layers, "activation", "relu", "data", pgn_data_spec_to_json(&t->data),
                     "optimizer", "type", "sgd", "lr", pgn_json_real_f32(t->lr), "momentum",
                     pgn_json_real_f32(t->momentum), "batch_size", t->batch_size, "epochs", t->epochs);
}
