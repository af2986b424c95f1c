/* train_spec.c: a train job's spec: the model, the data, the optimizer and the run's length,
 * validated field by field (an error names the JSON path) with defaults filled in, and written
 * back as the stored spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"

#define PGN_MAX_WIDTH 65536
#define PGN_MAX_EPOCHS 100000
#define PGN_MAX_BATCH 65536
/* gpt: bounds well past what one machine trains (GPT-2 XL: 48 layers, 25 heads, d_model 1600,
 * context 1024); the memory estimate and the parameter limit judge the rest. */
#define PGN_GPT_MAX_LAYERS 96
#define PGN_GPT_MAX_HEADS 128
#define PGN_GPT_MAX_D_MODEL 8192
#define PGN_GPT_MAX_CONTEXT 2048
#define PGN_MAX_STEPS 100000000
/* Steps between training-loss points: an MLP's Fashion-MNIST epoch (469 steps of 128) makes 47,
 * a gpt's 2000 steps 200, enough for a chart to move long before the first epoch or evaluation. */
#define PGN_DEFAULT_LOG_EVERY 10

/* Names of the enums in paragon.h, in value order. */
static const char *const ACTIVATIONS[] = {"none", "relu", "gelu", "tanh", "sigmoid", NULL};
static const char *const LOSSES[] = {"cross_entropy", "mse", NULL};
static const char *const INITS[] = {"pytorch", "kaiming", "xavier", "zeros", NULL};
static const char *const OPTIMIZERS[] = {"sgd", "adam", "adamw", NULL};
static const char *const SCHEDULES[] = {"constant", "cosine", NULL};
static const char *const MODEL_TYPES[] = {"mlp", "gpt", NULL};

/* A field of the other model type is a mistake worth its own message. */
static int refuse_foreign(const json_t *obj, const char *prefix, const char *const *keys,
                          const char *type, pgn_error *err) {
    for (; *keys; keys++)
        if (json_object_get(obj, *keys)) {
            char path[64];
            snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", *keys);
            return pgn_spec_fail(err, path, "does not apply to model.type \"%s\"", type);
        }
    return 0;
}

static int parse_gpt(const json_t *model, pgn_train_spec *t, pgn_error *err) {
    static const char *const mlp_only[] = {"layers", "activation", "loss", "init", NULL};
    static const char *const keys[] = {"type", "n_layer", "n_head", "d_model", "context", "dropout",
                                       "tie_embeddings", NULL};
    if (refuse_foreign(model, "model", mlp_only, "gpt", err) || pgn_spec_only_keys(model, "model", keys, err))
        return -1;
    pgn_gpt_spec *g = &t->gpt;
    long long n_layer = 4, n_head = 4, d_model = 128, context = 64;
    g->tie_embeddings = true;
    if (pgn_spec_int(model, "n_layer", "model.n_layer", 1, PGN_GPT_MAX_LAYERS, &n_layer, err) ||
        pgn_spec_int(model, "n_head", "model.n_head", 1, PGN_GPT_MAX_HEADS, &n_head, err) ||
        pgn_spec_int(model, "d_model", "model.d_model", 1, PGN_GPT_MAX_D_MODEL, &d_model, err) ||
        pgn_spec_int(model, "context", "model.context", 1, PGN_GPT_MAX_CONTEXT, &context, err) ||
        pgn_spec_float(model, "dropout", "model.dropout", 0.0, false, 0.95, &t->dropout, err) ||
        pgn_spec_bool(model, "tie_embeddings", "model.tie_embeddings", &g->tie_embeddings, err))
        return -1;
    if (d_model % n_head)
        return pgn_spec_fail(err, "model.n_head", "must divide model.d_model (%lld): %lld does not", d_model,
                             n_head);
    g->n_layer = (int)n_layer;
    g->n_head = (int)n_head;
    g->d_model = (int)d_model;
    g->context = (int)context;
    t->model = PGN_MODEL_GPT;
    return 0;
}

static int parse_model(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    int rc;
    const json_t *model = pgn_spec_object(root, "model", "model", true, err, &rc);
    if (!model) return rc;
    int type = -1, act = PGN_ACT_RELU, loss = PGN_LOSS_CROSS_ENTROPY, init = PGN_INIT_PYTORCH;
    if (pgn_spec_choice(model, "type", "model.type", MODEL_TYPES, &type, err)) return -1;
    if (type < 0) return pgn_spec_fail(err, "model.type", "required (\"mlp\" or \"gpt\")");
    if (type == PGN_MODEL_GPT) return parse_gpt(model, t, err);
    static const char *const gpt_only[] = {"n_layer", "n_head", "d_model", "context", "tie_embeddings", NULL};
    static const char *const keys[] = {"type", "layers", "activation", "dropout", "loss", "init", NULL};
    if (refuse_foreign(model, "model", gpt_only, "mlp", err) || pgn_spec_only_keys(model, "model", keys, err))
        return -1;
    t->model = PGN_MODEL_MLP;
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
    bool text = t->data.source == PGN_DATA_TEXT || t->data.source == PGN_DATA_FORTUNES;
    const char *source = json_string_value(json_object_get(data, "source"));
    if (text != (t->model == PGN_MODEL_GPT))
        return pgn_spec_fail(err, "data.source", "'%s' %s", source,
                             text ? "is text: it trains model.type \"gpt\""
                                  : "is not text: model.type \"gpt\" trains on \"text\" or \"fortunes\"");
    if (text) return 0;
    int features, classes;
    if (!pgn_data_shape(&t->data, &features, &classes)) return 0;
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

static const char *const DIST_ALGORITHMS[] = {"ddp", "diloco", NULL};

/* A host of "distributed.hosts": a host name or IPv4 address (letters, digits, '-', '.', not
 * starting with '-' or '.'), then optionally ':' and its slots (ranks it may run), 1..1024. */
static int parse_host(const json_t *v, const char *path, char out[PGN_DIST_HOST_MAX], pgn_error *err) {
    const char *h = json_string_value(v);
    if (!h) return pgn_spec_fail(err, path, "must be a string: a host name or address, optionally with ':slots'");
    size_t len = strcspn(h, ":");
    if (len == 0 || len >= PGN_DIST_HOST_MAX - 6)
        return pgn_spec_fail(err, path, "'%.64s': the host name must be 1 to %d characters", h, PGN_DIST_HOST_MAX - 7);
    for (size_t i = 0; i < len; i++) {
        char c = h[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  ((c == '-' || c == '.') && i > 0);
        if (!ok)
            return pgn_spec_fail(err, path, "'%.64s': a host name holds letters, digits, '-' and '.' "
                                 "(not first); found '%c'", h, c);
    }
    if (h[len] == ':') {
        const char *d = h + len + 1;
        long slots = 0;
        for (const char *q = d; *q; q++) {
            if (*q < '0' || *q > '9' || slots > 1024) {
                slots = -1;
                break;
            }
            slots = slots * 10 + (*q - '0');
        }
        if (!*d || slots < 1 || slots > 1024)
            return pgn_spec_fail(err, path, "'%.64s': the slots after ':' must be an integer in 1..1024", h);
    }
    snprintf(out, PGN_DIST_HOST_MAX, "%s", h);
    return 0;
}

/* The "distributed" object: absent, the job runs in one process. */
static int parse_dist(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    pgn_dist_spec *d = &t->dist;
    *d = (pgn_dist_spec){.algorithm = PGN_DIST_DILOCO, .inner_steps = 50, .outer_lr = 0.7f,
                         .outer_momentum = 0.9f, .nesterov = true};
    int rc;
    const json_t *o = pgn_spec_object(root, "distributed", "distributed", false, err, &rc);
    if (!o) return rc;
    static const char *const keys[] = {"ranks", "algorithm", "inner_steps", "outer_lr", "outer_momentum",
                                       "nesterov", "hosts", NULL};
    if (pgn_spec_only_keys(o, "distributed", keys, err)) return -1;
    long long ranks = 0, inner = d->inner_steps;
    int algorithm = -1;
    if (pgn_spec_int(o, "ranks", "distributed.ranks", 1, PGN_DIST_MAX_RANKS, &ranks, err) ||
        pgn_spec_choice(o, "algorithm", "distributed.algorithm", DIST_ALGORITHMS, &algorithm, err) ||
        pgn_spec_int(o, "inner_steps", "distributed.inner_steps", 1, PGN_MAX_STEPS, &inner, err) ||
        pgn_spec_float(o, "outer_lr", "distributed.outer_lr", 0.0, true, 100.0, &d->outer_lr, err) ||
        pgn_spec_float(o, "outer_momentum", "distributed.outer_momentum", 0.0, false, 0.999999,
                       &d->outer_momentum, err) ||
        pgn_spec_bool(o, "nesterov", "distributed.nesterov", &d->nesterov, err))
        return -1;
    if (!json_object_get(o, "ranks")) return pgn_spec_fail(err, "distributed.ranks", "required: how many processes");
    if (algorithm < 0)
        return pgn_spec_fail(err, "distributed.algorithm", "required (\"ddp\" or \"diloco\")");
    d->ranks = (int)ranks;
    d->algorithm = (pgn_dist_algorithm)algorithm;
    d->inner_steps = (int)inner;
    static const char *const diloco_only[] = {"inner_steps", "outer_lr", "outer_momentum", "nesterov", NULL};
    for (const char *const *k = diloco_only; *k && d->algorithm == PGN_DIST_DDP; k++)
        if (json_object_get(o, *k)) {
            char path[64];
            snprintf(path, sizeof path, "distributed.%s", *k);
            return pgn_spec_fail(err, path, "only applies to \"diloco\" (ddp all-reduces every step)");
        }
    const json_t *hosts = json_object_get(o, "hosts");
    if (!hosts) return 0;
    if (!json_is_array(hosts) || json_array_size(hosts) == 0 || json_array_size(hosts) > PGN_DIST_MAX_HOSTS)
        return pgn_spec_fail(err, "distributed.hosts", "must be an array of 1 to %d host names", PGN_DIST_MAX_HOSTS);
    for (size_t i = 0; i < json_array_size(hosts); i++) {
        char path[48];
        snprintf(path, sizeof path, "distributed.hosts[%zu]", i);
        if (parse_host(json_array_get(hosts, i), path, d->hosts[i], err)) return -1;
    }
    d->n_hosts = (int)json_array_size(hosts);
    /* When every host says its slots, mpirun (which is not allowed to oversubscribe them) can
     * start no more ranks than they add up to: refused now, not a launch that fails at run time.
     * A host without slots has as many as mpirun finds cores there, known only then. */
    long slots = 0;
    for (int i = 0; i < d->n_hosts && slots >= 0; i++) {
        const char *colon = strchr(d->hosts[i], ':');
        slots = colon ? slots + atol(colon + 1) : -1;
    }
    if (slots >= 0 && d->ranks > slots)
        return pgn_spec_fail(err, "distributed.ranks",
                             "%d ranks, but the hosts offer %ld slot%s (each host's ':slots' added up): ask "
                             "for at most %ld ranks, or give the hosts more slots",
                             d->ranks, slots, slots == 1 ? "" : "s", slots);
    return 0;
}

/* A gpt run is counted in steps over windows of the text, not epochs. */
static int parse_gpt_run(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    long long steps = 1000, eval_every = 100, windows = 128, every = 0;
    if (pgn_spec_int(root, "steps", "steps", 1, PGN_MAX_STEPS, &steps, err) ||
        pgn_spec_int(root, "eval_every", "eval_every", 1, PGN_MAX_STEPS, &eval_every, err) ||
        pgn_spec_int(root, "eval_windows", "eval_windows", 1, 1000000, &windows, err) ||
        pgn_spec_int(root, "checkpoint_every", "checkpoint_every", 0, PGN_MAX_STEPS, &every, err))
        return -1;
    t->steps = (int)steps;
    t->eval_every = (int)eval_every;
    t->eval_windows = (int)windows;
    t->checkpoint_every = (int)every;
    return 0;
}

int pgn_train_spec_parse(const json_t *root, pgn_train_spec *t, pgn_error *err) {
    static const char *const keys[] = {"kind",       "name",        "device",     "seed",
                                       "model",      "data",        "optimizer",  "batch_size",
                                       "epochs",     "checkpoint_every", "steps", "eval_every",
                                       "log_every",  "eval_windows", "distributed", NULL};
    static const char *const gpt_only[] = {"steps", "eval_every", "eval_windows", NULL};
    static const char *const mlp_only[] = {"epochs", NULL};
    if (pgn_spec_only_keys(root, "", keys, err) || parse_model(root, t, err)) return -1;
    bool gpt = t->model == PGN_MODEL_GPT;
    if (refuse_foreign(root, "", gpt ? mlp_only : gpt_only, gpt ? "gpt" : "mlp", err) ||
        parse_data(root, t, err) || parse_optimizer(root, t, err))
        return -1;
    long long v = 32;
    if (pgn_spec_int(root, "batch_size", "batch_size", 1, PGN_MAX_BATCH, &v, err)) return -1;
    t->batch_size = (int)v;
    v = PGN_DEFAULT_LOG_EVERY;
    if (pgn_spec_int(root, "log_every", "log_every", 1, PGN_MAX_STEPS, &v, err)) return -1;
    t->log_every = (int)v;
    if (gpt) return parse_gpt_run(root, t, err) || parse_dist(root, t, err) ? -1 : 0;
    v = 10;
    if (pgn_spec_int(root, "epochs", "epochs", 1, PGN_MAX_EPOCHS, &v, err)) return -1;
    t->epochs = (int)v;
    v = 0;
    if (pgn_spec_int(root, "checkpoint_every", "checkpoint_every", 0, PGN_MAX_EPOCHS, &v, err)) return -1;
    t->checkpoint_every = (int)v;
    return parse_dist(root, t, err);
}

static json_t *model_to_json(const pgn_train_spec *t) {
    if (t->model == PGN_MODEL_GPT)
        return json_pack("{s:s, s:i, s:i, s:i, s:i, s:o, s:b}", "type", "gpt", "n_layer", t->gpt.n_layer,
                         "n_head", t->gpt.n_head, "d_model", t->gpt.d_model, "context", t->gpt.context,
                         "dropout", pgn_json_real_f32(t->dropout), "tie_embeddings", t->gpt.tie_embeddings);
    json_t *layers = json_array();
    for (int i = 0; i < t->n_layers; i++) json_array_append_new(layers, json_integer(t->layers[i]));
    return json_pack("{s:s, s:o, s:s, s:o, s:s, s:s}", "type", "mlp", "layers", layers, "activation",
                     ACTIVATIONS[t->activation], "dropout", pgn_json_real_f32(t->dropout), "loss",
                     LOSSES[t->loss], "init", INITS[t->init]);
}

static json_t *dist_to_json(const pgn_dist_spec *d) {
    json_t *j = json_pack("{s:i, s:s}", "ranks", d->ranks, "algorithm", DIST_ALGORITHMS[d->algorithm]);
    if (d->algorithm == PGN_DIST_DILOCO) {
        json_object_set_new(j, "inner_steps", json_integer(d->inner_steps));
        json_object_set_new(j, "outer_lr", pgn_json_real_f32(d->outer_lr));
        json_object_set_new(j, "outer_momentum", pgn_json_real_f32(d->outer_momentum));
        json_object_set_new(j, "nesterov", json_boolean(d->nesterov));
    }
    if (d->n_hosts == 0) return j; /* this machine */
    json_t *hosts = json_array();
    for (int i = 0; i < d->n_hosts; i++) json_array_append_new(hosts, json_string(d->hosts[i]));
    json_object_set_new(j, "hosts", hosts);
    return j;
}

json_t *pgn_train_spec_to_json(const pgn_train_spec *t) {
    const pgn_optimizer_spec *o = &t->optimizer;
    json_t *model = model_to_json(t);
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
    json_t *j = json_pack("{s:o, s:o, s:o, s:i, s:i}", "model", model, "data", pgn_data_spec_to_json(&t->data),
                          "optimizer", opt, "batch_size", t->batch_size, "checkpoint_every",
                          t->checkpoint_every);
    if (t->model == PGN_MODEL_GPT) {
        json_object_set_new(j, "steps", json_integer(t->steps));
        json_object_set_new(j, "eval_every", json_integer(t->eval_every));
        json_object_set_new(j, "log_every", json_integer(t->log_every));
        json_object_set_new(j, "eval_windows", json_integer(t->eval_windows));
    } else {
        json_object_set_new(j, "epochs", json_integer(t->epochs));
        json_object_set_new(j, "log_every", json_integer(t->log_every));
    }
    if (t->dist.ranks > 0) json_object_set_new(j, "distributed", dist_to_json(&t->dist));
    return j;
}

/* ---- sizes: one home for the parameter and FLOP counts ------------------------------------ */

/* Parameters of one GPT block: LayerNorms 2 x 2C, attention C x 3C + 3C and C x C + C, MLP
 * C x 4C + 4C and 4C x C + C. */
static uint64_t gpt_block_params(uint64_t C) { return 12 * C * C + 13 * C; }

uint64_t pgn_gpt_param_count(const pgn_gpt_spec *g, int vocab) {
    uint64_t C = (uint64_t)g->d_model, V = (uint64_t)vocab;
    uint64_t n = V * C + (uint64_t)g->context * C + (uint64_t)g->n_layer * gpt_block_params(C) + 2 * C;
    return g->tie_embeddings ? n : n + C * V;
}

/* Matrix products 6 flops per weight per token (forward 2, backward 4: dX and dW), the head
 * included (the embedding lookup is none); causal attention 6 C T per token per layer (scores
 * and the weighted sum, 2 C each over T/2 keys on average, backward twice that). */
double pgn_gpt_flops_per_token(const pgn_gpt_spec *g, int vocab) {
    double C = g->d_model, L = g->n_layer, T = g->context;
    return 6.0 * (L * 12.0 * C * C + C * vocab) + 6.0 * L * C * T;
}

uint64_t pgn_train_param_count(const pgn_train_spec *t) {
    if (t->model == PGN_MODEL_GPT) return pgn_gpt_param_count(&t->gpt, PGN_TEXT_NOMINAL_VOCAB);
    uint64_t n = 0;
    for (int l = 0; l + 1 < t->n_layers; l++)
        n += (uint64_t)t->layers[l] * (uint64_t)t->layers[l + 1] + (uint64_t)t->layers[l + 1];
    return n;
}

/* Forward 2·in·out, backward 4·in·out (dW and dX) per weight matrix: the one FLOP count the
 * training report and the cost model both use. */
double pgn_train_flops_per_sample(const pgn_train_spec *t) {
    if (t->model == PGN_MODEL_GPT)
        return pgn_gpt_flops_per_token(&t->gpt, PGN_TEXT_NOMINAL_VOCAB) * t->gpt.context;
    double f = 0;
    for (int l = 0; l + 1 < t->n_layers; l++) f += 6.0 * t->layers[l] * t->layers[l + 1];
    return f;
}
