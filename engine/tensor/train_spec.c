/* train_spec.c: a train job's spec: the model, the data, the optimizer and the run's length,
 * validated field by field (an error names the JSON path) with defaults filled in, and written
 * back as the stored spec. */
#include <stdio.h>
#include <string.h>

#include "tensor/tensor.h"

#define PGN_MAX_WIDTH 65536
#define PGN_MAX_EPOCHS 100000
#define PGN_MAX_BATCH 65536

/* Names of the enums in paragon.h, in value order. */
static const char *const ACTIVATIONS[] = {"none", "relu", "gelu", "tanh", "sigmoid", NULL};
static const char *const LOSSES[] = {"cross_entropy", "mse", NULL};
static const char *const INITS[] = {"pytorch", "kaiming", "xavier", NULL};
static const char *const OPTIMIZERS[] = {"sgd", "adam", "adamw", NULL};
static const char *const SCHEDULES[] = {"constant", "cosine", NULL};
static const char *const MODEL_TYPES[] = {"mlp", NULL};

static int parse_model(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    int rc;
    const json_t *model = pgn_spec_object(root, "model", "model", true, err, &rc);
    if (!model) return rc;
    static const char *const keys[] = {"type", "layers", "activation", "dropout", "loss", "init", NULL};
    if (pgn_spec_only_keys(model, "model", keys, err)) return -1;
    int type = -1, act = PGN_ACT_RELU, loss = PGN_LOSS_CROSS_ENTROPY, init = PGN_INIT_PYTORCH;
    if (pgn_spec_choice(model, "type", "model.type", MODEL_TYPES, &type, err)) return -1;
    if (type < 0) return pgn_spec_fail(err, "model.type", "required (\"mlp\")");
    if (pgn_spec_choice(model, "activation", "model.activation", ACTIVATIONS, &act, err) ||
        pgn_spec_choice(model, "loss", "model.loss", LOSSES, &loss, err) ||
        pgn_spec_choice(model, "init", "model.init", INITS, &init, err) ||
        pgn_spec_float(model, "dropout", "model.dropout", 0.0, false, 0.95, &t->dropout, err))
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
    const json_t *data = pgn_spec_object(root, "data", "data", true, err, &rc);
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

static int parse_optimizer(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    pgn_optimizer_spec *o = &t->optimizer;
    *o = (pgn_optimizer_spec){.type = PGN_OPT_SGD, .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f,
                              .eps = 1e-8f, .schedule = PGN_SCHEDULE_CONSTANT};
    int rc;
    const json_t *opt = pgn_spec_object(root, "optimizer", "optimizer", false, err, &rc);
    if (!opt) return rc;
    static const char *const keys[] = {"type",  "lr",        "momentum",  "nesterov",
                                       "weight_decay", "beta1", "beta2", "eps", "clip_norm",
                                       "schedule", "warmup_steps", "min_lr", NULL};
    if (pgn_spec_only_keys(opt, "optimizer", keys, err)) return -1;
    int type = PGN_OPT_SGD, schedule = PGN_SCHEDULE_CONSTANT;
    if (pgn_spec_choice(opt, "type", "optimizer.type", OPTIMIZERS, &type, err)) return -1;
    o->type = (pgn_optimizer_type)type;
    if (o->type == PGN_OPT_ADAMW) o->weight_decay = 0.01f; /* PyTorch's AdamW default */
    if (o->type != PGN_OPT_SGD) o->lr = 0.001f;
    long long warmup = 0;
    if (pgn_spec_float(opt, "lr", "optimizer.lr", 0.0, true, 1000.0, &o->lr, err) ||
        pgn_spec_float(opt, "momentum", "optimizer.momentum", 0.0, false, 0.999999, &o->momentum, err) ||
        pgn_spec_bool(opt, "nesterov", "optimizer.nesterov", &o->nesterov, err) ||
        pgn_spec_float(opt, "weight_decay", "optimizer.weight_decay", 0.0, false, 10.0, &o->weight_decay, err) ||
        pgn_spec_float(opt, "beta1", "optimizer.beta1", 0.0, false, 0.999999, &o->beta1, err) ||
        pgn_spec_float(opt, "beta2", "optimizer.beta2", 0.0, false, 0.999999, &o->beta2, err) ||
        pgn_spec_float(opt, "eps", "optimizer.eps", 0.0, true, 1.0, &o->eps, err) ||
        pgn_spec_float(opt, "clip_norm", "optimizer.clip_norm", 0.0, false, 1e6, &o->clip_norm, err) ||
        pgn_spec_choice(opt, "schedule", "optimizer.schedule", SCHEDULES, &schedule, err) ||
        pgn_spec_int(opt, "warmup_steps", "optimizer.warmup_steps", 0, 100000000, &warmup, err) ||
        pgn_spec_float(opt, "min_lr", "optimizer.min_lr", 0.0, false, 1000.0, &o->min_lr, err))
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

int pgn_train_spec_parse(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    static const char *const keys[] = {"kind",      "name",   "device", "seed",
                                       "model",     "data",   "optimizer", "batch_size",
                                       "epochs",    "checkpoint_every", NULL};
    if (pgn_spec_only_keys(root, "", keys, err)) return -1;
    if (parse_model(root, t, err) || parse_data(root, t, err) || parse_optimizer(root, t, err))
        return -1;
    long long v = 32;
    if (pgn_spec_int(root, "batch_size", "batch_size", 1, PGN_MAX_BATCH, &v, err)) return -1;
    t->batch_size = (int)v;
    v = 10;
    if (pgn_spec_int(root, "epochs", "epochs", 1, PGN_MAX_EPOCHS, &v, err)) return -1;
    t->epochs = (int)v;
    v = 0;
    if (pgn_spec_int(root, "checkpoint_every", "checkpoint_every", 0, PGN_MAX_EPOCHS, &v, err)) return -1;
    t->checkpoint_every = (int)v;
    return 0;
}

json_t *pgn_train_spec_to_json(const pgn_train_spec *t) {
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
    return json_pack("{s:o, s:o, s:o, s:i, s:i, s:i}", "model", model, "data",
                     pgn_data_spec_to_json(&t->data), "optimizer", opt, "batch_size", t->batch_size,
                     "epochs", t->epochs, "checkpoint_every", t->checkpoint_every);
}

uint64_t pgn_train_param_count(const pgn_train_spec *t) {
    uint64_t n = 0;
    for (int l = 0; l + 1 < t->n_layers; l++)
        n += (uint64_t)t->layers[l] * (uint64_t)t->layers[l + 1] + (uint64_t)t->layers[l + 1];
    return n;
}

/* Forward 2·in·out, backward 4·in·out (dW and dX) per weight matrix: the one FLOP count the
 * training report and the cost model both use. */
double pgn_train_flops_per_sample(const pgn_train_spec *t) {
    double f = 0;
    for (int l = 0; l + 1 < t->n_layers; l++) f += 6.0 * t->layers[l] * t->layers[l + 1];
    return f;
}
