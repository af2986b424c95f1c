/* test_train.c: the MLP and its training loop: gradients against double-precision finite
 * differences, XOR convergence, bit-identical weights on host and OpenCL, and cancellation. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "safetensors_check.h"

static pgn_job_spec xor_spec(void) {
    char path[4096];
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/examples/jobs/xor.json", root ? root : ".");
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char text[4096];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, n, &spec, &err), 0, "%s", err.message);
    return spec;
}

typedef struct {
    char name[24];
    int64_t step;
    double value;
} point;

/* Collects metrics in call order: those of epochs, and apart from them those by optimizer step
 * (step_loss, samples_per_second, and the epoch marks). */
typedef struct {
    char names[4096][16];
    int64_t steps[4096];
    double values[4096];
    int count;
    point by_step[4096];
    int n_by_step;
    int stop_after; /* should_stop turns true after this many polls; 0: never */
    int polls;
} recorder;

static bool is_by_step(const char *name) {
    return !strcmp(name, "step_loss") || !strcmp(name, "samples_per_second") || !strcmp(name, "epoch");
}

static void on_metric(void *ctx, const char *name, int64_t step, double value) {
    recorder *r = ctx;
    if (is_by_step(name)) {
        cr_assert_lt(r->n_by_step, 4096);
        point *p = &r->by_step[r->n_by_step++];
        snprintf(p->name, sizeof p->name, "%s", name);
        p->step = step;
        p->value = value;
        return;
    }
    cr_assert_lt(r->count, 4096);
    snprintf(r->names[r->count], sizeof r->names[0], "%s", name);
    r->steps[r->count] = step;
    r->values[r->count] = value;
    r->count++;
}

static bool should_stop(void *ctx) {
    recorder *r = ctx;
    return r->stop_after && ++r->polls > r->stop_after;
}

/* Hooks that record into r, emptied first. */
static pgn_run_hooks recorded(recorder *r) {
    memset(r, 0, sizeof *r);
    return (pgn_run_hooks){.ctx = r, .on_metric = on_metric, .should_stop = should_stop};
}

static json_t *run(const pgn_job_spec *spec, pgn_device *dev, recorder *rec) {
    pgn_run_hooks hooks = {.ctx = rec, .on_metric = on_metric, .should_stop = should_stop};
    json_t *result = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(spec, dev, NULL, &hooks, &result, &err), 0, "%s", err.message);
    return result;
}

Test(train, xor_reaches_full_accuracy_on_host) {
    pgn_job_spec spec = xor_spec();
    static recorder rec;
    memset(&rec, 0, sizeof rec);
    json_t *result = run(&spec, NULL, &rec);
    cr_assert_eq(json_real_value(json_object_get(result, "accuracy")), 1.0);
    cr_assert_lt(json_real_value(json_object_get(result, "loss")), 0.05);
    cr_assert_eq(strlen(json_string_value(json_object_get(result, "weights_sha256"))), 64);
    cr_assert_str_eq(json_string_value(json_object_get(result, "device")), "host");
    cr_assert_eq(json_integer_value(json_object_get(result, "steps")), spec.train.epochs);
    /* four metrics per epoch, steps 1..epochs, loss falling from ~ln 2 */
    cr_assert_eq(json_real_value(json_object_get(result, "train_accuracy")), 1.0);
    cr_assert_eq(rec.count, 4 * spec.train.epochs);
    cr_assert_str_eq(rec.names[0], "loss");
    cr_assert_eq(rec.steps[0], 1);
    cr_assert_float_eq(rec.values[0], log(2.0), 0.2);
    cr_assert_str_eq(rec.names[rec.count - 1], "test_accuracy");
    cr_assert_eq(rec.steps[rec.count - 1], spec.train.epochs);
    cr_assert_lt(rec.values[rec.count - 4], rec.values[0] / 10);
    json_decref(result);
}

Test(train, host_and_opencl_weights_are_bit_identical) {
    pgn_job_spec spec = xor_spec();
    spec.train.epochs = 40;
    pgn_device *dev = test_open_cl_device();
    static recorder on_host, on_dev;
    memset(&on_host, 0, sizeof on_host);
    memset(&on_dev, 0, sizeof on_dev);
    json_t *a = run(&spec, NULL, &on_host);
    json_t *b = run(&spec, dev, &on_dev);
    cr_assert_str_eq(json_string_value(json_object_get(a, "weights_sha256")),
                     json_string_value(json_object_get(b, "weights_sha256")));
    cr_assert_eq(on_host.count, on_dev.count);
    for (int i = 0; i < on_host.count; i++)
        cr_assert_eq(on_host.values[i], on_dev.values[i], "metric %d (%s)", i, on_host.names[i]);
    /* the step losses and epoch marks too (the speed is the machine's) */
    cr_assert_eq(on_host.n_by_step, on_dev.n_by_step);
    for (int i = 0; i < on_host.n_by_step; i++) {
        const point *h = &on_host.by_step[i], *d = &on_dev.by_step[i];
        cr_assert_str_eq(h->name, d->name);
        cr_assert_eq(h->step, d->step);
        if (strcmp(h->name, "samples_per_second"))
            cr_assert_eq(h->value, d->value, "%s at step %lld", h->name, (long long)h->step);
    }
    /* a different seed gives different weights: the hash is not a constant */
    spec.seed = 99;
    static recorder other;
    memset(&other, 0, sizeof other);
    json_t *c = run(&spec, dev, &other);
    cr_assert_str_neq(json_string_value(json_object_get(a, "weights_sha256")),
                      json_string_value(json_object_get(c, "weights_sha256")));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    pgn_device_close(dev);
}

Test(train, should_stop_cancels_at_a_step_boundary) {
    pgn_job_spec spec = xor_spec();
    static recorder rec;
    memset(&rec, 0, sizeof rec);
    rec.stop_after = 5;
    pgn_run_hooks hooks = {.ctx = &rec, .on_metric = on_metric, .should_stop = should_stop};
    json_t *result = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(&spec, NULL, NULL, &hooks, &result, &err), -1);
    cr_assert_null(result);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(rec.count, 4 * 5, "five epochs of one step each ran");
}

static pgn_job_spec parse(const char *text) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    return spec;
}

#define SPIRAL_ADAMW                                                                             \
    "{\"kind\":\"train\",\"seed\":5,\"model\":{\"type\":\"mlp\",\"layers\":[2,32,32,3],"         \
    "\"activation\":\"gelu\",\"dropout\":0.1},\"data\":{\"source\":\"spiral\",\"samples\":60},"     \
    "\"optimizer\":{\"type\":\"adamw\",\"lr\":0.02,\"weight_decay\":0.01,\"clip_norm\":1.0,"        \
    "\"schedule\":\"cosine\",\"warmup_steps\":10},\"batch_size\":32,\"epochs\":40}"

Test(train, adamw_gelu_dropout_clip_cosine_bit_identical_and_learns) {
    pgn_job_spec spec = parse(SPIRAL_ADAMW);
    pgn_device *dev = test_open_cl_device();
    static recorder a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    json_t *ra = run(&spec, NULL, &a), *rb = run(&spec, dev, &b);
    cr_assert_str_eq(json_string_value(json_object_get(ra, "weights_sha256")),
                     json_string_value(json_object_get(rb, "weights_sha256")));
    cr_assert_gt(json_real_value(json_object_get(ra, "test_accuracy")), 0.9,
                 "spiral should be learned: %f", json_real_value(json_object_get(ra, "test_accuracy")));
    json_decref(ra);
    json_decref(rb);
    pgn_device_close(dev);
}

/* 180 spiral samples (60 of each of 3 classes) in batches of 4: 45 steps an epoch, 90 in all. */
#define SPIRAL_STEPS                                                                             \
    "{\"kind\":\"train\",\"seed\":4,\"model\":{\"type\":\"mlp\",\"layers\":[2,16,3]},"          \
    "\"data\":{\"source\":\"spiral\",\"samples\":60},\"optimizer\":{\"type\":\"sgd\","           \
    "\"lr\":0.05},\"batch_size\":4,\"epochs\":2,\"log_every\":7}"

static const point *find_point(const recorder *r, const char *name, int64_t step) {
    for (int i = 0; i < r->n_by_step; i++)
        if (!strcmp(r->by_step[i].name, name) && r->by_step[i].step == step) return &r->by_step[i];
    return NULL;
}

static double epoch_metric(const recorder *r, const char *name, int epoch) {
    for (int i = 0; i < r->count; i++)
        if (!strcmp(r->names[i], name) && r->steps[i] == epoch) return r->values[i];
    cr_assert_fail("no %s for epoch %d", name, epoch);
    return 0;
}

Test(train, step_loss_every_log_every_steps_adds_up_to_the_epochs_losses) {
    pgn_job_spec spec = parse(SPIRAL_STEPS);
    cr_assert_eq(spec.train.log_every, 7);
    static recorder rec;
    memset(&rec, 0, sizeof rec);
    json_t *result = run(&spec, NULL, &rec);
    cr_assert_eq(json_integer_value(json_object_get(result, "steps")), 90);
    cr_assert_eq(rec.count, 4 * 2, "the epochs' figures as before");

    /* a point every 7 steps of an epoch and at its last (7, ..., 42, 45, then 52, ..., 87, 90):
     * the mean loss of its steps since the previous point, 4 samples each */
    double weighted[2] = {0, 0};
    int64_t prev = 0;
    int points = 0;
    for (int i = 0; i < rec.n_by_step; i++) {
        const point *p = &rec.by_step[i];
        if (strcmp(p->name, "step_loss")) continue;
        int epoch = points / 7, k = points % 7;
        int64_t want = 45 * epoch + (k < 6 ? 7 * (k + 1) : 45);
        cr_assert_eq(p->step, want, "point %d", points);
        cr_assert(p->value > 0 && p->value < 5, "step_loss %f at %lld", p->value, (long long)p->step);
        weighted[epoch] += p->value * (double)(p->step - prev) * 4;
        prev = p->step;
        points++;
    }
    cr_assert_eq(points, 14);
    for (int e = 0; e < 2; e++) { /* an epoch's loss is the mean over its 180 samples */
        double loss = epoch_metric(&rec, "loss", e + 1) * 180;
        cr_assert_float_eq(weighted[e], loss, 1e-9 * loss, "epoch %d: the points' losses sum to %.12f, its own to "
                           "%.12f", e + 1, weighted[e], loss);
    }

    /* the epochs' ends marked at their steps */
    const point *e1 = find_point(&rec, "epoch", 45), *e2 = find_point(&rec, "epoch", 90);
    cr_assert(e1 && e2, "epoch marks at steps 45 and 90");
    cr_assert_eq(e1->value, 1);
    cr_assert_eq(e2->value, 2);

    /* the speed where the loop waited for the device (every PGN_SYNC_EVERY_STEPS steps of an epoch
     * and at its end), at the last point it gave: the statistics are read nowhere else */
    int64_t want[8];
    int n_want = 0;
    for (int epoch = 0; epoch < 2; epoch++)
        for (int s = 1, last = 0; s <= 45; s++) {
            if (s % 7 == 0 || s == 45) last = s;
            if ((s % PGN_SYNC_EVERY_STEPS == 0 || s == 45) && last) {
                cr_assert_lt(n_want, 8);
                want[n_want++] = 45 * epoch + last;
                last = 0;
            }
        }
    int n_speed = 0;
    for (int i = 0; i < rec.n_by_step; i++) {
        const point *p = &rec.by_step[i];
        if (strcmp(p->name, "samples_per_second")) continue;
        cr_assert_lt(n_speed, n_want);
        cr_assert_eq(p->step, want[n_speed], "samples_per_second %d", n_speed);
        cr_assert_gt(p->value, 0);
        n_speed++;
    }
    cr_assert_eq(n_speed, n_want);
    json_decref(result);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

/* Interrupted after 7 epochs, resumed from the checkpoint of epoch 6: the final weights equal
 * those of a run that never stopped. */
static void check_resume(pgn_device *dev) {
    pgn_job_spec spec = parse(
        "{\"kind\":\"train\",\"seed\":2,\"model\":{\"type\":\"mlp\",\"layers\":[2,16,3]},"
        "\"data\":{\"source\":\"spiral\",\"samples\":40},\"optimizer\":{\"type\":\"sgd\","
        "\"lr\":0.1,\"momentum\":0.9,\"nesterov\":true},\"batch_size\":16,\"epochs\":10,"
        "\"checkpoint_every\":2}");
    char whole[] = "/tmp/pgn-resume-XXXXXX", parted[] = "/tmp/pgn-resume-XXXXXX";
    cr_assert_not_null(mkdtemp(whole));
    cr_assert_not_null(mkdtemp(parted));
    pgn_run_options o1 = {.data_dir = "data", .checkpoint_dir = whole};
    pgn_run_options o2 = {.data_dir = "data", .checkpoint_dir = parted, .resume = true};
    static recorder r1, r2, r3;
    pgn_run_hooks h1 = recorded(&r1), h2 = recorded(&r2), h3 = recorded(&r3);
    json_t *full = NULL, *resumed = NULL, *none = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(&spec, dev, &o1, &h1, &full, &err), 0, "%s", err.message);
    r2.stop_after = 7 * 8 + 3; /* 8 steps per epoch: stops inside epoch 8 */
    cr_assert_eq(pgn_job_run(&spec, dev, &o2, &h2, &none, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(pgn_job_run(&spec, dev, &o2, &h3, &resumed, &err), 0, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(resumed, "resumed_from_epoch")), 6);
    cr_assert_str_eq(json_string_value(json_object_get(full, "weights_sha256")),
                     json_string_value(json_object_get(resumed, "weights_sha256")));
    cr_assert_eq(json_integer_value(json_object_get(full, "steps")),
                 json_integer_value(json_object_get(resumed, "steps")));
    cr_assert_eq(r3.steps[0], 7, "the resumed run reports epochs 7..10");

    /* the final checkpoint is plain safetensors: header length, JSON header, F32 data */
    char path[256];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", whole);
    size_t len;
    char *file = read_all(path, &len);
    json_t *header = test_safetensors_header(file, len, NULL);
    json_t *w = json_object_get(header, "layers.0.weight");
    cr_assert_str_eq(json_string_value(json_object_get(w, "dtype")), "F32");
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(w, "shape"), 1)), 16);
    cr_assert_not_null(json_object_get(header, "optimizer.layers.1.bias.momentum_buffer"));
    json_t *meta = json_object_get(header, "__metadata__");
    cr_assert_str_eq(json_string_value(json_object_get(meta, "epoch")), "10");
    cr_assert_str_eq(json_string_value(json_object_get(meta, "weights_sha256")),
                     json_string_value(json_object_get(full, "weights_sha256")));
    json_decref(header);
    free(file);

    /* a checkpoint of another spec is refused, not silently mixed in */
    spec.train.optimizer.lr = 0.2f;
    json_t *other = NULL;
    cr_assert_eq(pgn_job_run(&spec, dev, &o2, NULL, &other, &err), -1);
    cr_assert(strstr(err.message, "different job spec"), "%s", err.message);

    json_decref(full);
    json_decref(resumed);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", whole, parted);
    cr_assert_eq(system(cmd), 0);
}

Test(train, resume_from_checkpoint_is_bit_identical_on_host) { check_resume(NULL); }

Test(train, resume_from_checkpoint_is_bit_identical_on_device) {
    pgn_device *dev = test_open_cl_device();
    check_resume(dev);
    pgn_device_close(dev);
}

Test(train, profile_reports_every_node) {
    pgn_job_spec spec = xor_spec();
    spec.train.epochs = 2;
    pgn_run_options o = {.data_dir = "data", .profile = true};
    json_t *result = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(&spec, NULL, &o, NULL, &result, &err), 0, "%s", err.message);
    json_t *fwd = json_object_get(json_object_get(result, "profile"), "forward");
    cr_assert_eq(json_array_size(fwd), 5, "matmul, bias_act twice, and the loss");
    cr_assert(strstr(json_string_value(json_object_get(json_array_get(fwd, 0), "node")), "matmul"));
    json_decref(result);
}

/* A stop that checkpoints (checkpoint_on_stop: paragond's graceful shutdown) saves the exact
 * position, inside an epoch, without periodic checkpoints at all; the resumed run repeats no
 * step, reports the stopped epoch's metrics as the whole run does, and ends with its weights. */
static void check_stop_checkpoint(pgn_device *dev) {
    pgn_job_spec spec = parse(SPIRAL_ADAMW); /* dropout and a schedule: both follow the step */
    spec.train.epochs = 6;
    spec.train.log_every = 2;
    char whole[] = "/tmp/pgn-stop-XXXXXX", parted[] = "/tmp/pgn-stop-XXXXXX";
    cr_assert_not_null(mkdtemp(whole));
    cr_assert_not_null(mkdtemp(parted));
    pgn_run_options o1 = {.data_dir = "data", .checkpoint_dir = whole};
    pgn_run_options o2 = {.data_dir = "data", .checkpoint_dir = parted, .resume = true,
                          .checkpoint_on_stop = true};
    static recorder r1, r2, r3;
    pgn_run_hooks h1 = recorded(&r1), h2 = recorded(&r2), h3 = recorded(&r3);
    json_t *full = NULL, *resumed = NULL, *none = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(&spec, dev, &o1, &h1, &full, &err), 0, "%s", err.message);
    int steps_per_epoch = 6; /* 180 samples, batch 32 */
    cr_assert_eq(json_integer_value(json_object_get(full, "steps")), 6 * steps_per_epoch);
    r2.stop_after = 3 * steps_per_epoch + 4; /* stops before step 5 of epoch 4 */
    cr_assert_eq(pgn_job_run(&spec, dev, &o2, &h2, &none, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert(strstr(err.message, "checkpointed"), "%s", err.message);
    cr_assert_eq(r2.count, 4 * 3, "three whole epochs reported before the stop");

    char path[256];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", parted);
    size_t len;
    char *file = read_all(path, &len);
    json_t *header = test_safetensors_header(file, len, NULL);
    json_t *meta = json_object_get(header, "__metadata__");
    cr_assert_str_eq(json_string_value(json_object_get(meta, "epoch")), "3");
    cr_assert_str_eq(json_string_value(json_object_get(meta, "epoch_step")), "4");
    cr_assert_str_eq(json_string_value(json_object_get(meta, "step")), "22");
    cr_assert_not_null(json_object_get(header, "layers.0.weight"));
    cr_assert_not_null(json_object_get(header, "trainer.step_stats"));
    json_decref(header);
    free(file);

    cr_assert_eq(pgn_job_run(&spec, dev, &o2, &h3, &resumed, &err), 0, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(resumed, "resumed_from_epoch")), 3);
    cr_assert_eq(json_integer_value(json_object_get(resumed, "resumed_from_step")), 22);
    cr_assert_str_eq(json_string_value(json_object_get(full, "weights_sha256")),
                     json_string_value(json_object_get(resumed, "weights_sha256")));
    cr_assert_eq(r3.count, 4 * 3, "epochs 4..6 reported once");
    for (int i = 0; i < r3.count; i++) {
        cr_assert_str_eq(r3.names[i], r1.names[12 + i]);
        cr_assert_eq(r3.steps[i], r1.steps[12 + i]);
        cr_assert_eq(r3.values[i], r1.values[12 + i], "%s of epoch %lld", r3.names[i],
                     (long long)r3.steps[i]);
    }
    /* the step losses (every 2 steps) of the stopped run and of its resumption are the whole
     * run's: the resumption gives those of the stopped epoch's steps that the stop left unsaid,
     * from the statistics its checkpoint kept */
    int whole_points = 0;
    for (int i = 0; i < r1.n_by_step; i++) {
        const point *p = &r1.by_step[i];
        if (strcmp(p->name, "step_loss")) continue;
        whole_points++;
        const point *a = find_point(&r2, "step_loss", p->step), *b = find_point(&r3, "step_loss", p->step);
        cr_assert(a || b, "no step_loss at step %lld after the stop", (long long)p->step);
        cr_assert(!(a && b), "step_loss at step %lld twice", (long long)p->step);
        cr_assert_eq((a ? a : b)->value, p->value, "step_loss at step %lld", (long long)p->step);
        cr_assert_eq(b != NULL, p->step > 3 * steps_per_epoch, "step %lld: given by the run that took it",
                     (long long)p->step);
    }
    cr_assert_eq(whole_points, 6 * 3);

    /* without checkpoint_on_stop a stop writes nothing */
    cr_assert_eq(unlink(path), 0);
    o2.checkpoint_on_stop = false;
    memset(&r2, 0, sizeof r2);
    r2.stop_after = 2;
    cr_assert_eq(pgn_job_run(&spec, dev, &o2, &h2, &none, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_null(strstr(err.message, "checkpoint"), "%s", err.message);
    cr_assert_neq(access(path, F_OK), 0, "no checkpoint was written");

    json_decref(full);
    json_decref(resumed);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", whole, parted);
    cr_assert_eq(system(cmd), 0);
}

Test(train, a_stop_checkpoints_mid_epoch_and_resumes_bit_identically_on_host) {
    check_stop_checkpoint(NULL);
}

Test(train, a_stop_checkpoints_mid_epoch_and_resumes_bit_identically_on_device) {
    pgn_device *dev = test_open_cl_device();
    check_stop_checkpoint(dev);
    pgn_device_close(dev);
}

/* The cpu and gpu kernel families on the same OpenCL device train to the host's weights: XOR,
 * the spiral with GELU, dropout, AdamW and clipping, and one epoch of the Fashion-MNIST MLP
 * (examples/jobs/fashion-mlp.json's model) where the dataset is installed. */
static const char *sha_on(const pgn_job_spec *spec, const char *family, json_t **keep) {
    pgn_device *dev = NULL;
    if (family) {
        setenv("PARAGON_KERNELS", family, 1);
        dev = test_open_cl_device();
        cr_assert_eq(pgn_device_get_profile(dev)->family[PGN_OPS_ROWS], strcmp(family, "gpu") ? PGN_FAMILY_CPU : PGN_FAMILY_GPU);
    }
    static recorder r;
    memset(&r, 0, sizeof r);
    *keep = run(spec, dev, &r);
    pgn_device_close(dev);
    return json_string_value(json_object_get(*keep, "weights_sha256"));
}

static void check_families(const pgn_job_spec *spec) {
    json_t *h, *c, *g;
    const char *host = sha_on(spec, NULL, &h), *cpu = sha_on(spec, "cpu", &c), *gpu = sha_on(spec, "gpu", &g);
    cr_assert_str_eq(cpu, host, "the cpu family against the host: %s", spec->name);
    cr_assert_str_eq(gpu, host, "the gpu family against the host: %s", spec->name);
    json_decref(h);
    json_decref(c);
    json_decref(g);
    unsetenv("PARAGON_KERNELS");
}

Test(train, host_cpu_family_and_gpu_family_give_the_same_weights) {
    pgn_job_spec spec = xor_spec();
    spec.train.epochs = 20;
    check_families(&spec);
    spec = parse(SPIRAL_ADAMW);
    spec.train.epochs = 10;
    check_families(&spec);
    if (access("/usr/share/datasets/fashion-mnist", R_OK) != 0) return; /* dataset-fashion-mnist */
    spec = parse("{\"kind\":\"train\",\"name\":\"fashion-mlp\",\"seed\":0,\"model\":{\"type\":\"mlp\","
                 "\"layers\":[784,256,256,10],\"activation\":\"relu\"},\"data\":{\"source\":\"fashion-mnist\"},"
                 "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.05,\"momentum\":0.9},\"batch_size\":128,\"epochs\":1}");
    check_families(&spec);
}
