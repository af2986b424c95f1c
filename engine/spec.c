/* spec.c: job specs: the one parser and validator shared by paragond and the CLI.
 * Every error names the JSON path of the field at fault; unknown fields are errors. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "inet.h"
#include "internal.h"

#define PGN_MAX_WIDTH 65536
#define PGN_MAX_EPOCHS 100000
#define PGN_MAX_BATCH 65536



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
            return pgn_spec_fail(err, path, "unknown field (expected one of: %s)", expected);
        }
    }
    return 0;
}

static const json_t *get_object(const json_t *parent, const char *key, const char *path,
                                bool required, pgn_error *err, int *rc) {
    const json_t *v = json_object_get(parent, key);
    *rc = 0;
    if (!v) {
        if (required) *rc = pgn_spec_fail(err, path, "required object is missing");
        return NULL;
    }
    if (!json_is_object(v)) {
        *rc = pgn_spec_fail(err, path, "must be an object");
        return NULL;
    }
    return v;
}

/* Reads an optional string into out; returns -1 on a type error. */
static int get_string(const json_t *obj, const char *key, const char *path, char *out,
                      size_t size, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_string(v)) return pgn_spec_fail(err, path, "must be a string");
    if (json_string_length(v) >= size)
        return pgn_spec_fail(err, path, "must be at most %zu characters", size - 1);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return pgn_spec_fail(err, path, "must not contain NUL characters");
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

static int get_int(const json_t *obj, const char *key, const char *path, long long lo,
                   long long hi, long long *out, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_integer(v)) return pgn_spec_fail(err, path, "must be an integer");
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return pgn_spec_fail(err, path, "must be between %lld and %lld", lo, hi);
    *out = x;
    return 0;
}

/* lo_open: the lower bound itself is not allowed. */
static int get_float(const json_t *obj, const char *key, const char *path, double lo, bool lo_open,
                     double hi, float *out, pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_number(v)) return pgn_spec_fail(err, path, "must be a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return pgn_spec_fail(err, path, "must be %s %g and <= %g", lo_open ? ">" : ">=", lo, hi);
    /* The engine computes in float: judge the value it will use. 1e-320 is > 0 as a double and
     * 0 as a float. */
    float f = (float)x;
    if (lo_open && f == (float)lo)
        return pgn_spec_fail(err, path,
                             "%g is %g as a 32-bit float, which the engine computes with; must be > "
                             "%g (the smallest float above it is %g)",
                             x, (double)f, lo, (double)nextafterf((float)lo, INFINITY));
    *out = f;
    return 0;
}

/* Names and ids are shown in logs, tables and terminals: no control characters in them. */
static int no_controls(const char *s, const char *path, pgn_error *err) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return pgn_spec_fail(err, path, "control character 0x%02x at offset %zu is not allowed",
                                 *p, (size_t)(p - (const unsigned char *)s));
    return 0;
}

/* A string field that must be one of names (NULL-terminated); *out gets its index. */
static int get_choice(const json_t *obj, const char *key, const char *path,
                      const char *const *names, int *out, pgn_error *err) {
    char value[64] = "";
    if (get_string(obj, key, path, value, sizeof value, err)) return -1;
    if (!json_object_get(obj, key)) return 0;
    char expected[256] = "";
    for (int i = 0; names[i]; i++) {
        if (!strcmp(names[i], value)) {
            *out = i;
            return 0;
        }
        strncat(expected, names[i], sizeof expected - strlen(expected) - 1);
        if (names[i + 1]) strncat(expected, ", ", sizeof expected - strlen(expected) - 1);
    }
    return pgn_spec_fail(err, path, "unknown value '%s' (expected one of: %s)", value, expected);
}

/* Names of the enums in paragon.h, in value order. */
static const char *const ACTIVATIONS[] = {"none", "relu", "gelu", "tanh", "sigmoid", NULL};
static const char *const LOSSES[] = {"cross_entropy", "mse", NULL};
static const char *const INITS[] = {"pytorch", "kaiming", "xavier", NULL};
static const char *const OPTIMIZERS[] = {"sgd", "adam", "adamw", NULL};
static const char *const SCHEDULES[] = {"constant", "cosine", NULL};
static const char *const MODEL_TYPES[] = {"mlp", NULL};

static int parse_model(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    int rc;
    const json_t *model = get_object(root, "model", "model", true, err, &rc);
    if (!model) return rc;
    static const char *const keys[] = {"type", "layers", "activation", "dropout", "loss", "init", NULL};
    if (only_keys(model, "model", keys, err)) return -1;
    int type = -1, act = PGN_ACT_RELU, loss = PGN_LOSS_CROSS_ENTROPY, init = PGN_INIT_PYTORCH;
    if (get_choice(model, "type", "model.type", MODEL_TYPES, &type, err)) return -1;
    if (type < 0) return pgn_spec_fail(err, "model.type", "required (\"mlp\")");
    if (get_choice(model, "activation", "model.activation", ACTIVATIONS, &act, err) ||
        get_choice(model, "loss", "model.loss", LOSSES, &loss, err) ||
        get_choice(model, "init", "model.init", INITS, &init, err) ||
        get_float(model, "dropout", "model.dropout", 0.0, false, 0.95, &t->dropout, err))
        return -1;
    t->activation = (pgn_activation)act;
    t->loss = (pgn_loss)loss;
    t->init = (pgn_init)init;
    const json_t *layers = json_object_get(model, "layers");
    if (!layers) return pgn_spec_fail(err, "model.layers", "required array of layer widths is missing");
    if (!json_is_array(layers)) return pgn_spec_fail(err, "model.layers", "must be an array of integers");
    size_t n = json_array_size(layers);
    if (n < 2 || n > PGN_MAX_LAYERS)
        return pgn_spec_fail(err, "model.layers", "must list between 2 and %d widths (input first, classes last); got %zu",
                    PGN_MAX_LAYERS, n);
    for (size_t i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "model.layers[%zu]", i);
        const json_t *w = json_array_get(layers, i);
        if (!json_is_integer(w)) return pgn_spec_fail(err, path, "must be an integer");
        long long x = json_integer_value(w);
        if (x <= 0) return pgn_spec_fail(err, path, "must be > 0");
        if (x > PGN_MAX_WIDTH) return pgn_spec_fail(err, path, "must be <= %d", PGN_MAX_WIDTH);
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
        return pgn_spec_fail(err, path, "must be %d: data.source '%s' has %d input features", features,
                    source, features);
    }
    if (t->layers[t->n_layers - 1] != classes) {
        snprintf(path, sizeof path, "model.layers[%d]", t->n_layers - 1);
        return pgn_spec_fail(err, path, "must be %d: data.source '%s' has %d classes", classes, source,
                    classes);
    }
    return 0;
}

static int get_bool(const json_t *obj, const char *key, const char *path, bool *out,
                    pgn_error *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_boolean(v)) return pgn_spec_fail(err, path, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

static int parse_optimizer(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    pgn_optimizer_spec *o = &t->optimizer;
    *o = (pgn_optimizer_spec){.type = PGN_OPT_SGD, .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f,
                              .eps = 1e-8f, .schedule = PGN_SCHEDULE_CONSTANT};
    int rc;
    const json_t *opt = get_object(root, "optimizer", "optimizer", false, err, &rc);
    if (!opt) return rc;
    static const char *const keys[] = {"type",  "lr",        "momentum",  "nesterov",
                                       "weight_decay", "beta1", "beta2", "eps", "clip_norm",
                                       "schedule", "warmup_steps", "min_lr", NULL};
    if (only_keys(opt, "optimizer", keys, err)) return -1;
    int type = PGN_OPT_SGD, schedule = PGN_SCHEDULE_CONSTANT;
    if (get_choice(opt, "type", "optimizer.type", OPTIMIZERS, &type, err)) return -1;
    o->type = (pgn_optimizer_type)type;
    if (o->type == PGN_OPT_ADAMW) o->weight_decay = 0.01f; /* PyTorch's AdamW default */
    if (o->type != PGN_OPT_SGD) o->lr = 0.001f;
    long long warmup = 0;
    if (get_float(opt, "lr", "optimizer.lr", 0.0, true, 1000.0, &o->lr, err) ||
        get_float(opt, "momentum", "optimizer.momentum", 0.0, false, 0.999999, &o->momentum, err) ||
        get_bool(opt, "nesterov", "optimizer.nesterov", &o->nesterov, err) ||
        get_float(opt, "weight_decay", "optimizer.weight_decay", 0.0, false, 10.0, &o->weight_decay, err) ||
        get_float(opt, "beta1", "optimizer.beta1", 0.0, false, 0.999999, &o->beta1, err) ||
        get_float(opt, "beta2", "optimizer.beta2", 0.0, false, 0.999999, &o->beta2, err) ||
        get_float(opt, "eps", "optimizer.eps", 0.0, true, 1.0, &o->eps, err) ||
        get_float(opt, "clip_norm", "optimizer.clip_norm", 0.0, false, 1e6, &o->clip_norm, err) ||
        get_choice(opt, "schedule", "optimizer.schedule", SCHEDULES, &schedule, err) ||
        get_int(opt, "warmup_steps", "optimizer.warmup_steps", 0, 100000000, &warmup, err) ||
        get_float(opt, "min_lr", "optimizer.min_lr", 0.0, false, 1000.0, &o->min_lr, err))
        return -1;
    o->schedule = (pgn_schedule)schedule;
    o->warmup_steps = (int)warmup;
    /* fields that do nothing for the chosen optimizer are mistakes, not options */
    const char *sgd_only[] = {"momentum", "nesterov"}, *adam_only[] = {"beta1", "beta2", "eps"};
    for (int i = 0; i < 2 && o->type != PGN_OPT_SGD; i++)
        if (json_object_get(opt, sgd_only[i])) {
            char path[64];
            snprintf(path, sizeof path, "optimizer.%s", sgd_only[i]);
            return pgn_spec_fail(err, path, "only applies to \"sgd\"");
        }
    for (int i = 0; i < 3 && o->type == PGN_OPT_SGD; i++)
        if (json_object_get(opt, adam_only[i])) {
            char path[64];
            snprintf(path, sizeof path, "optimizer.%s", adam_only[i]);
            return pgn_spec_fail(err, path, "only applies to \"adam\" and \"adamw\"");
        }
    if (o->nesterov && o->momentum <= 0.0f)
        return pgn_spec_fail(err, "optimizer.nesterov", "needs optimizer.momentum > 0");
    if (o->min_lr > o->lr) return pgn_spec_fail(err, "optimizer.min_lr", "must be <= optimizer.lr");
    return 0;
}

static int parse_train(const json_t *root, pgn_job_spec *out, pgn_error *err) {
    static const char *const keys[] = {"kind",      "name",   "device", "seed",
                                       "model",     "data",   "optimizer", "batch_size",
                                       "epochs",    "checkpoint_every", NULL};
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
    v = 0;
    if (get_int(root, "checkpoint_every", "checkpoint_every", 0, PGN_MAX_EPOCHS, &v, err)) return -1;
    t->checkpoint_every = (int)v;
    return 0;
}

#define PGN_MAX_PROGRAM_BYTES (4u << 20)
#define PGN_INET_DEFAULT_MAX_INTERACTIONS 1000000000ULL
#define PGN_INET_DEFAULT_MAX_NODES (1ULL << 24)
#define PGN_INET_DEFAULT_TIMEOUT_S 60.0

/* An inet spec; the program is parsed here too, so a bad program is a 400 naming its line. */
static int parse_inet(const json_t *root, pgn_job_spec *out, pgn_error *err) {
    static const char *const keys[] = {"kind", "name", "device", "program", "limits", "work_items", NULL};
    if (only_keys(root, "", keys, err)) return -1;
    pgn_inet_spec *s = &out->inet;
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
        pgn_error_set(err, "internal", "", "out of memory");
        return -1;
    }
    long long wi = 0;
    if (get_int(root, "work_items", "work_items", 0, 1 << 20, &wi, err)) return -1;
    s->work_items = (int)wi;
    int rc;
    const json_t *lim = get_object(root, "limits", "limits", false, err, &rc);
    if (!lim) return rc;
    static const char *const lkeys[] = {"max_interactions", "max_nodes", "timeout_s", NULL};
    if (only_keys(lim, "limits", lkeys, err)) return -1;
    long long mi = (long long)s->max_interactions, mn = (long long)s->max_nodes;
    float to = (float)s->timeout_s;
    if (get_int(lim, "max_interactions", "limits.max_interactions", 1, (long long)1 << 50, &mi, err) ||
        get_int(lim, "max_nodes", "limits.max_nodes", 16, (long long)1 << 31, &mn, err) ||
        get_float(lim, "timeout_s", "limits.timeout_s", 0.0, true, 86400.0, &to, err))
        return -1;
    s->max_interactions = (uint64_t)mi;
    s->max_nodes = (uint64_t)mn;
    s->timeout_s = to;
    return 0;
}

#define PGN_MAX_BENCH_REPEATS 1000

/* A bench spec: one suite or "all", optionally some of its cases, and the timed repeats. */
static int parse_bench(const json_t *root, pgn_job_spec *out, pgn_error *err) {
    static const char *const keys[] = {"kind", "name", "device", "suite", "cases", "repeats", NULL};
    if (only_keys(root, "", keys, err)) return -1;
    pgn_bench_spec *b = &out->bench;
    if (get_string(root, "suite", "suite", b->suite, sizeof b->suite, err)) return -1;
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
    if (get_int(root, "repeats", "repeats", 1, PGN_MAX_BENCH_REPEATS, &repeats, err)) return -1;
    b->repeats = (int)repeats;
    return 0;
}

void pgn_spec_free(pgn_job_spec *spec) {
    if (!spec) return;
    free(spec->inet.program);
    spec->inet.program = NULL;
}

int pgn_spec_parse(const json_t *root, pgn_job_spec *out, pgn_error *err) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(root)) return pgn_spec_fail(err, "(root)", "a job spec must be a JSON object");
    char kind[32] = "";
    if (get_string(root, "kind", "kind", kind, sizeof kind, err)) return -1;
    if (!kind[0]) return pgn_spec_fail(err, "kind", "required (\"train\", \"inet\" or \"bench\")");
    if (!strcmp(kind, "train")) out->kind = PGN_JOB_TRAIN;
    else if (!strcmp(kind, "inet")) out->kind = PGN_JOB_INET;
    else if (!strcmp(kind, "bench")) out->kind = PGN_JOB_BENCH;
    else
        return pgn_spec_fail(err, "kind",
                             "unknown job kind '%s' (this build runs: \"train\", \"inet\", \"bench\")", kind);
    snprintf(out->name, sizeof out->name, "%s", kind);
    snprintf(out->device, sizeof out->device, "auto");
    if (get_string(root, "name", "name", out->name, sizeof out->name, err) ||
        get_string(root, "device", "device", out->device, sizeof out->device, err) ||
        no_controls(out->name, "name", err) || no_controls(out->device, "device", err))
        return -1;
    if (!out->device[0]) return pgn_spec_fail(err, "device", "must not be empty");
    if (!strcmp(out->device, "all") && out->kind != PGN_JOB_BENCH)
        return pgn_spec_fail(err, "device", "\"all\" is only for bench jobs");
    if (out->kind == PGN_JOB_INET) {
        if (parse_inet(root, out, err) == 0) return 0;
        pgn_spec_free(out);
        return -1;
    }
    if (out->kind == PGN_JOB_BENCH) return parse_bench(root, out, err);
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

int pgn_job_kind_parse(const char *name, pgn_job_kind *out) {
    static const pgn_job_kind kinds[] = {PGN_JOB_TRAIN, PGN_JOB_INET, PGN_JOB_BENCH};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (name && !strcmp(name, pgn_job_kind_name(kinds[i]))) {
            *out = kinds[i];
            return 0;
        }
    return -1;
}

const char *pgn_job_kind_name(pgn_job_kind kind) {
    switch (kind) {
    case PGN_JOB_TRAIN: return "train";
    case PGN_JOB_INET: return "inet";
    case PGN_JOB_BENCH: return "bench";
    }
    return "unknown";
}

json_t *pgn_spec_to_json(const pgn_job_spec *spec) {
    if (spec->kind == PGN_JOB_INET) {
        const pgn_inet_spec *s = &spec->inet;
        return json_pack("{s:s, s:s, s:s, s:s, s:i, s:{s:I, s:I, s:f}}", "kind", "inet", "name",
                         spec->name, "device", spec->device, "program", s->program, "work_items",
                         s->work_items, "limits", "max_interactions",
                         (json_int_t)s->max_interactions, "max_nodes", (json_int_t)s->max_nodes,
                         "timeout_s", s->timeout_s);
    }
    if (spec->kind == PGN_JOB_BENCH) {
        const pgn_bench_spec *b = &spec->bench;
        json_t *cases = json_array();
        for (int i = 0; i < b->n_cases; i++) json_array_append_new(cases, json_string(b->cases[i]));
        return json_pack("{s:s, s:s, s:s, s:s, s:o, s:i}", "kind", "bench", "name", spec->name, "device",
                         spec->device, "suite", b->suite, "cases", cases, "repeats", b->repeats);
    }
    const pgn_train_spec *t = &spec->train;
    const pgn_optimizer_spec *o = &t->optimizer;
    json_t *layers = json_array();
    for (int i = 0; i < t->n_layers; i++) json_array_append_new(layers, json_integer(t->layers[i]));
    json_t *model = json_pack("{s:s, s:o, s:s, s:o, s:s, s:s}", "type", "mlp", "layers", layers,
                              "activation", ACTIVATIONS[t->activation], "dropout",
                              pgn_json_real_f32(t->dropout), "loss", LOSSES[t->loss], "init",
                              INITS[t->init]);
    json_t *opt = json_pack("{s:s, s:o, s:o, s:o, s:s, s:i, s:o}", "type", OPTIMIZERS[o->type],
                            "lr", pgn_json_real_f32(o->lr), "weight_decay",
                            pgn_json_real_f32(o->weight_decay), "clip_norm",
                            pgn_json_real_f32(o->clip_norm), "schedule", SCHEDULES[o->schedule],
                            "warmup_steps", o->warmup_steps, "min_lr", pgn_json_real_f32(o->min_lr));
    if (o->type == PGN_OPT_SGD) {
        json_object_set_new(opt, "momentum", pgn_json_real_f32(o->momentum));
        json_object_set_new(opt, "nesterov", json_boolean(o->nesterov));
    } else {
        json_object_set_new(opt, "beta1", pgn_json_real_f32(o->beta1));
        json_object_set_new(opt, "beta2", pgn_json_real_f32(o->beta2));
        json_object_set_new(opt, "eps", pgn_json_real_f32(o->eps));
    }
    return json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:i, s:i, s:i}", "kind",
                     pgn_job_kind_name(spec->kind), "name", spec->name, "device", spec->device,
                     "seed", (json_int_t)spec->seed, "model", model, "data",
                     pgn_data_spec_to_json(&t->data), "optimizer", opt, "batch_size",
                     t->batch_size, "epochs", t->epochs, "checkpoint_every", t->checkpoint_every);
}
