/* train.c: the training loop of train jobs. The datasets are uploaded to the device once; a
 * step gathers its batch on the device from the epoch's permutation, runs the graph forward and
 * backward and the optimizer, and records its loss and correct count on the device, so steps
 * queue without waiting. Per epoch: evaluation on the test set, metrics through the hooks, and
 * a checkpoint when due (and at a stop, mid-epoch, when asked). Resuming from a checkpoint,
 * once all of it is verified, continues bit-identically. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tensor/graph.h"
#include "tensor/optim.h"
#include "pgn_math.h"

#define PGN_STREAM_SHUFFLE 0x5348554646ULL /* "SHUFF": apart from the init streams */
/* Steps queued before waiting for the device: bounds the queue and keeps progress honest. */
#define PGN_SYNC_EVERY_STEPS 32
/* 2: the metadata holds the data section's SHA-256 (safetensors.c) and epoch_step. */
#define PGN_CHECKPOINT_FORMAT "paragon-checkpoint-2"
#define PGN_CHECKPOINT_FORMAT_V1 "paragon-checkpoint-1"

/* Fisher-Yates driven by the counter RNG: the order of epoch e depends only on seed and e. */
static void shuffle(int *order, int n, uint64_t seed, int epoch) {
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        pgn_u64 r = pgn_rand64(seed, PGN_STREAM_SHUFFLE, (pgn_u64)epoch * (pgn_u64)n + (pgn_u64)i);
        int j = (int)(r % (pgn_u64)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void emit(const pgn_run_hooks *h, const char *name, int64_t step, double value) {
    if (h && h->on_metric) h->on_metric(h->ctx, name, step, value);
}

static void log_line(const pgn_run_hooks *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void log_line(const pgn_run_hooks *h, const char *fmt, ...) {
    if (!h || !h->on_log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    h->on_log(h->ctx, line);
}

/* A dataset on the device: features, labels and an index (permutation or identity). */
typedef struct {
    int n;
    pgn_tensor x, y, idx;
} device_set;

static int upload_set(device_set *s, pgn_device *dev, const pgn_dataset *d, pgn_error *err) {
    s->n = d->n;
    int *identity = malloc((size_t)d->n * sizeof *identity);
    if (!identity) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %d indices", d->n);
        return -1;
    }
    for (int i = 0; i < d->n; i++) identity[i] = i;
    int rc = pgn_tensor_init(&s->x, dev, d->n, d->features, err) ||
             pgn_tensor_init(&s->y, dev, d->n, 1, err) || pgn_tensor_init(&s->idx, dev, d->n, 1, err) ||
             pgn_tensor_write(&s->x, d->x, (size_t)d->n * d->features, err) ||
             pgn_tensor_write(&s->y, d->y, (size_t)d->n, err) ||
             pgn_tensor_write(&s->idx, identity, (size_t)d->n, err);
    free(identity);
    return rc ? -1 : 0;
}

static void release_set(device_set *s) {
    pgn_tensor_release(&s->x);
    pgn_tensor_release(&s->y);
    pgn_tensor_release(&s->idx);
}

typedef struct {
    const pgn_job_spec *spec;
    const pgn_run_options *opts;
    const pgn_run_hooks *hooks;
    pgn_dataset train, test;
    device_set dtrain, dtest;
    pgn_graph graph;
    pgn_optimizer optim;
    pgn_tensor stats;   /* 2 floats per step of an epoch (or per evaluation batch) */
    float *host_stats;
    int *order;
    double *epoch_seconds;
    int batch, steps_per_epoch, eval_steps;
} trainer;

static void trainer_free(trainer *tr) {
    pgn_dataset_free(&tr->train);
    pgn_dataset_free(&tr->test);
    release_set(&tr->dtrain);
    release_set(&tr->dtest);
    pgn_optim_release(&tr->optim);
    pgn_graph_release(&tr->graph);
    pgn_tensor_release(&tr->stats);
    free(tr->host_stats);
    free(tr->order);
    free(tr->epoch_seconds);
}

/* Sums the per-step statistics of a pass, in step order, on the host in double. */
static int read_stats(trainer *tr, int steps, double *loss_sum, double *correct, pgn_error *err) {
    if (pgn_tensor_read(&tr->stats, tr->host_stats, (size_t)steps * 2, err)) return -1;
    *loss_sum = 0;
    *correct = 0;
    for (int s = 0; s < steps; s++) {
        *loss_sum += tr->host_stats[2 * s];
        *correct += tr->host_stats[2 * s + 1];
    }
    return 0;
}

/* Runs one batch: rows from set s at positions offset.. of its index tensor. */
static int run_batch(trainer *tr, device_set *s, int offset, int rows, bool training,
                     uint64_t step, int slot, pgn_error *err) {
    pgn_graph *g = &tr->graph;
    pgn_node *in = &g->nodes[g->input], *lab = &g->nodes[g->labels], *loss = &g->nodes[g->loss];
    if (pgn_op_gather_rows(rows, &s->x, &s->idx, offset, &in->value, err) ||
        pgn_op_gather_rows(rows, &s->y, &s->idx, offset, &lab->value, err) ||
        pgn_graph_forward(g, rows, training, step, err))
        return -1;
    if (training && (pgn_graph_backward(g, rows, err) || pgn_optim_step(&tr->optim, g, err)))
        return -1;
    return pgn_op_loss_stats(rows, &loss->value, &loss->aux, &lab->value, &tr->stats, slot, err);
}

static int evaluate(trainer *tr, double *loss, double *acc, pgn_error *err) {
    int b = tr->graph.max_batch;
    for (int i = 0; i < tr->eval_steps; i++) {
        int rows = tr->dtest.n - i * b < b ? tr->dtest.n - i * b : b;
        if (run_batch(tr, &tr->dtest, i * b, rows, false, 0, i, err)) return -1;
    }
    double sum, correct;
    if (read_stats(tr, tr->eval_steps, &sum, &correct, err)) return -1;
    double div = tr->graph.loss_is_mse ? (double)tr->dtest.n * tr->test.classes : tr->dtest.n;
    *loss = sum / div;
    *acc = correct / tr->dtest.n;
    return 0;
}

/* Checkpoint entries: parameters, then each parameter's optimizer state. Names follow
 * PyTorch's state_dict where they can ("layers.0.weight", "optimizer.layers.0.weight.exp_avg"). */
typedef struct {
    pgn_st_entry e[3 * PGN_GRAPH_MAX_PARAMS + 1]; /* + the step statistics of a stop */
    char names[3 * PGN_GRAPH_MAX_PARAMS + 1][96];
    int n;
} st_list;

/* A checkpoint taken inside an epoch (a stop between steps) also keeps the per-step statistics
 * of the epoch's steps so far, so the epoch's loss and accuracy come out as if never stopped. */
#define PGN_CHECKPOINT_STATS "trainer.step_stats"

/* The entries of a checkpoint taken epoch_step steps into an epoch. */
static void checkpoint_entries(trainer *tr, int epoch_step, st_list *l) {
    l->n = 0;
    pgn_graph *g = &tr->graph;
    for (int p = 0; p < g->n_params; p++) {
        pgn_node *node = &g->nodes[g->params[p]];
        snprintf(l->names[l->n], sizeof l->names[0], "%s", node->name);
        l->e[l->n] = (pgn_st_entry){l->names[l->n], &node->value};
        l->n++;
        pgn_tensor *state[2];
        const char *names[2];
        int k = pgn_optim_state(&tr->optim, p, state, names);
        for (int i = 0; i < k; i++) {
            snprintf(l->names[l->n], sizeof l->names[0], "optimizer.%s.%s", node->name, names[i]);
            l->e[l->n] = (pgn_st_entry){l->names[l->n], state[i]};
            l->n++;
        }
    }
    if (epoch_step > 0) {
        snprintf(l->names[l->n], sizeof l->names[0], "%s", PGN_CHECKPOINT_STATS);
        l->e[l->n] = (pgn_st_entry){l->names[l->n], &tr->stats};
        l->n++;
    }
}

static int checkpoint_path(const trainer *tr, char *out, size_t size) {
    if (!tr->opts->checkpoint_dir) return 0;
    snprintf(out, size, "%s/%s", tr->opts->checkpoint_dir, PGN_CHECKPOINT_FILE);
    return 1;
}

/* What must match for a checkpoint to continue this job: everything but name and device. */
static json_t *resume_key(const pgn_job_spec *spec) {
    json_t *j = json_pack("{s:s, s:I}", "kind", "train", "seed", (json_int_t)spec->seed);
    json_t *train = pgn_train_spec_to_json(&spec->train);
    json_object_update(j, train);
    json_decref(train);
    json_object_del(j, "checkpoint_every");
    return j;
}

/* epochs_done whole epochs, then epoch_step steps of the next one (0: at an epoch boundary). */
static int save_checkpoint(trainer *tr, int epochs_done, int epoch_step, const char *sha,
                           pgn_error *err) {
    char path[PGN_PATH_MAX * 2];
    if (!checkpoint_path(tr, path, sizeof path)) return 0;
    st_list l;
    checkpoint_entries(tr, epoch_step, &l);
    json_t *key = resume_key(tr->spec);
    char *spec_text = pgn_json_dumps(key);
    json_decref(key);
    char epoch[32], step[32], in_epoch[32];
    snprintf(epoch, sizeof epoch, "%d", epochs_done);
    snprintf(step, sizeof step, "%lld", (long long)tr->optim.t);
    snprintf(in_epoch, sizeof in_epoch, "%d", epoch_step);
    json_t *meta = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "format",
                             PGN_CHECKPOINT_FORMAT, "paragon_version", PGN_VERSION, "epoch",
                             epoch, "epoch_step", in_epoch, "step", step, "spec",
                             spec_text ? spec_text : "", "weights_sha256", sha);
    free(spec_text);
    int rc = pgn_safetensors_write(path, l.e, l.n, meta, err);
    json_decref(meta);
    return rc;
}

/* A metadata value shown in an error: its first QUOTED_CHARS characters, each unprintable one
 * as \xNN (4 characters), then "..." when cut. */
#define QUOTED_CHARS 32
#define QUOTED_SIZE (4 * QUOTED_CHARS + 4)

static void quote_value(const char *v, char out[QUOTED_SIZE]) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; v[i] && i < QUOTED_CHARS; i++) {
        unsigned char c = (unsigned char)v[i];
        const char *fmt = c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x";
        len += (size_t)snprintf(out + len, QUOTED_SIZE - len, fmt, c);
    }
    if (strlen(v) > QUOTED_CHARS) snprintf(out + len, QUOTED_SIZE - len, "...");
}

/* A count the checkpoint's metadata holds under key: decimal digits only, in 0..max. */
static int meta_count(const pgn_st_file *f, const char *key, long long max, long long *out,
                      pgn_error *err) {
    const char *v = json_string_value(json_object_get(f->metadata, key));
    if (!v) return pgn_checkpoint_fail(err, f->path, "metadata has no \"%s\"", key);
    long long x = 0;
    bool ok = v[0] != '\0';
    for (const char *p = v; ok && *p; p++) {
        ok = *p >= '0' && *p <= '9' && x <= (LLONG_MAX - 9) / 10;
        if (ok) x = x * 10 + (*p - '0');
    }
    if (!ok || x > max) {
        char shown[QUOTED_SIZE];
        quote_value(v, shown);
        return pgn_checkpoint_fail(err, f->path, "metadata \"%s\" is '%s', expected an integer in "
                                   "0..%lld", key, shown, max);
    }
    *out = x;
    return 0;
}

/* The metadata a resume believes, checked against this job: the format, the spec, and a
 * position (epoch, epoch_step, step) that this job's epochs and steps per epoch allow. */
static int check_checkpoint_meta(trainer *tr, const pgn_st_file *f, long long *epoch,
                                 long long *in_epoch, long long *step, pgn_error *err) {
    const char *format = json_string_value(json_object_get(f->metadata, "format"));
    const char *spec_text = json_string_value(json_object_get(f->metadata, "spec"));
    if (format && !strcmp(format, PGN_CHECKPOINT_FORMAT_V1))
        return pgn_checkpoint_fail(err, f->path, "format %s was written by an earlier paragon and "
                                   "carries no digest of its optimizer state; this paragon resumes "
                                   "%s only: remove it to start over", PGN_CHECKPOINT_FORMAT_V1,
                                   PGN_CHECKPOINT_FORMAT);
    if (!format || strcmp(format, PGN_CHECKPOINT_FORMAT) || !spec_text) {
        char shown[QUOTED_SIZE];
        quote_value(format ? format : "", shown);
        return pgn_checkpoint_fail(err, f->path, "not a paragon checkpoint (metadata \"format\" is "
                                   "'%s', expected '%s', and \"spec\" is %s)", shown,
                                   PGN_CHECKPOINT_FORMAT, spec_text ? "present" : "missing");
    }
    if (!f->digest_checked)
        return pgn_checkpoint_fail(err, f->path, "metadata has no \"%s\", so its tensor data "
                                   "cannot be verified", PGN_ST_DATA_SHA256);
    json_t *key = resume_key(tr->spec);
    char *want = pgn_json_dumps(key);
    json_decref(key);
    bool same = want && !strcmp(want, spec_text);
    free(want);
    if (!same)
        return pgn_checkpoint_fail(err, f->path, "belongs to a different job spec; remove it to "
                                   "start over");
    if (!json_string_value(json_object_get(f->metadata, "weights_sha256")))
        return pgn_checkpoint_fail(err, f->path, "metadata has no \"weights_sha256\"");
    long long epochs = tr->spec->train.epochs, per_epoch = tr->steps_per_epoch;
    if (meta_count(f, "epoch", epochs, epoch, err) ||
        meta_count(f, "epoch_step", per_epoch - 1, in_epoch, err) ||
        meta_count(f, "step", epochs * per_epoch, step, err))
        return -1;
    if (*epoch == epochs && *in_epoch > 0)
        return pgn_checkpoint_fail(err, f->path, "metadata \"epoch_step\" is %lld, but epoch "
                                   "%lld is the job's last: a finished run has no steps of a next "
                                   "epoch", *in_epoch, *epoch);
    if (*step != *epoch * per_epoch + *in_epoch)
        return pgn_checkpoint_fail(err, f->path, "metadata \"step\" is %lld, but \"epoch\" %lld "
                                   "and \"epoch_step\" %lld at %lld steps per epoch make step %lld",
                                   *step, *epoch, *in_epoch, per_epoch,
                                   *epoch * per_epoch + *in_epoch);
    return 0;
}

/* Resumes from the checkpoint if there is one (*epochs_done and *epoch_step stay 0 otherwise).
 * Before any step runs from it, all of it checks out: layout, data digest, metadata, tensor
 * names and shapes, then the loaded weights against weights_sha256. A checkpoint that fails any
 * check fails the job (code "checkpoint"): training from scratch would silently discard it. */
static int load_checkpoint(trainer *tr, int *epochs_done, int *epoch_step, pgn_error *err) {
    char path[PGN_PATH_MAX * 2];
    *epochs_done = 0;
    *epoch_step = 0;
    if (!tr->opts->resume || !checkpoint_path(tr, path, sizeof path)) return 0;
    struct stat st;
    if (stat(path, &st) && errno == ENOENT) return 0; /* other errors: open names them */
    pgn_st_file f;
    if (pgn_safetensors_open(path, &f, err)) return -1;
    long long epoch, in_epoch, step;
    int rc = check_checkpoint_meta(tr, &f, &epoch, &in_epoch, &step, err);
    if (rc == 0) {
        st_list l;
        checkpoint_entries(tr, (int)in_epoch, &l);
        rc = pgn_safetensors_load(&f, l.e, l.n, err);
    }
    char sha[65];
    const char *want = json_string_value(json_object_get(f.metadata, "weights_sha256"));
    if (rc == 0 && (rc = pgn_graph_weights_sha256(&tr->graph, sha, err)) == 0 && strcmp(want, sha))
        rc = pgn_checkpoint_fail(err, path, "the weights read do not match its weights_sha256");
    if (rc == 0) {
        *epochs_done = (int)epoch;
        *epoch_step = (int)in_epoch;
        tr->optim.t = step;
    }
    pgn_safetensors_close(&f);
    return rc;
}

/* should_stop said stop before step s of epoch (0-based): the run fails with "cancelled", after
 * checkpointing this exact position when the caller asked for it (a graceful shutdown), so the
 * next run repeats no step. A checkpoint that cannot be written leaves the previous one intact
 * (writes are atomic); the stop is still a stop, and its message says what was lost. */
static void stop(trainer *tr, int epoch, int s, pgn_error *err) {
    pgn_error cerr;
    pgn_error_clear(&cerr);
    char sha[65], saved[64] = "";
    if (tr->opts->checkpoint_on_stop && tr->opts->checkpoint_dir) {
        if (pgn_graph_weights_sha256(&tr->graph, sha, &cerr) == 0 &&
            save_checkpoint(tr, epoch, s, sha, &cerr) == 0)
            snprintf(saved, sizeof saved, "; checkpointed");
        else
            snprintf(saved, sizeof saved, "; not checkpointed");
    }
    pgn_error_set(err, PGN_E_CANCELLED, "", "stopped at epoch %d, step %lld%s%s%s", epoch + 1,
                  (long long)tr->optim.t, saved, cerr.message[0] ? ": " : "", cerr.message);
}

static int setup(trainer *tr, pgn_device *dev, pgn_error *err) {
    const pgn_train_spec *t = &tr->spec->train;
    char datasets[PATH_MAX];
    int n = snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR,
                     tr->opts->data_dir ? tr->opts->data_dir : PGN_DEFAULT_DATA_DIR);
    if (n < 0 || (size_t)n >= sizeof datasets)
        return pgn_spec_fail(err, "data", "the data directory's path is too long");
    if (pgn_dataset_load(&t->data, datasets, &tr->train, &tr->test, err)) return -1;
    if (tr->train.features != t->layers[0] || tr->train.classes != t->layers[t->n_layers - 1]) {
        char field[64];
        int last = tr->train.features == t->layers[0];
        int want = last ? tr->train.classes : tr->train.features;
        snprintf(field, sizeof field, "model.layers[%d]", last ? t->n_layers - 1 : 0);
        pgn_error_set(err, PGN_E_INVALID_SPEC, field, "%s: must be %d: the dataset has %d %s", field,
                      want, want, last ? "classes" : "input features");
        return -1;
    }
    tr->batch = t->batch_size < tr->train.n ? t->batch_size : tr->train.n;
    tr->steps_per_epoch = (tr->train.n + tr->batch - 1) / tr->batch;
    tr->eval_steps = (tr->test.n + tr->batch - 1) / tr->batch;
    int slots = tr->steps_per_epoch > tr->eval_steps ? tr->steps_per_epoch : tr->eval_steps;
    pgn_graph_init(&tr->graph, dev, tr->batch, tr->spec->seed);
    if (pgn_graph_build_mlp(&tr->graph, t, err) ||
        pgn_optim_init(&tr->optim, &tr->graph, &t->optimizer,
                       (int64_t)tr->steps_per_epoch * t->epochs, err) ||
        upload_set(&tr->dtrain, dev, &tr->train, err) || upload_set(&tr->dtest, dev, &tr->test, err) ||
        pgn_tensor_init(&tr->stats, dev, slots, 2, err))
        return -1;
    tr->host_stats = malloc((size_t)slots * 2 * sizeof *tr->host_stats);
    tr->order = malloc((size_t)tr->train.n * sizeof *tr->order);
    tr->epoch_seconds = calloc((size_t)t->epochs, sizeof *tr->epoch_seconds);
    if (!tr->host_stats || !tr->order || !tr->epoch_seconds) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate training buffers");
        return -1;
    }
    pgn_graph_profile_enable(&tr->graph, tr->opts->profile);
    return 0;
}

static double flops_per_sample(const pgn_train_spec *t) {
    double f = 0; /* forward 2 in out, backward 4 in out (dW and dX) per weight matrix */
    for (int l = 0; l + 1 < t->n_layers; l++) f += 6.0 * t->layers[l] * t->layers[l + 1];
    return f;
}

int pgn_train_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                  const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    const pgn_train_spec *t = &spec->train;
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.spec = spec;
    tr.opts = opts;
    tr.hooks = hooks;
    double t_start = pgn_now_s();
    int start_epoch = 0, start_step = 0;
    if (setup(&tr, dev, err) || load_checkpoint(&tr, &start_epoch, &start_step, err)) goto fail;
    int64_t resumed_step = tr.optim.t;
    const char *dev_id = dev ? dev->info.id : "host";
    log_line(hooks, "training %s on %s: %d samples, batch %d, %d epochs, seed %llu%s", spec->name,
             dev_id, tr.train.n, tr.batch, t->epochs, (unsigned long long)spec->seed,
             resumed_step ? " (resumed)" : "");
    if (resumed_step)
        log_line(hooks, "resumed from %s/%s after epoch %d and %d steps of the next (step %lld)",
                 opts->checkpoint_dir, PGN_CHECKPOINT_FILE, start_epoch, start_step,
                 (long long)tr.optim.t);

    double test_loss = 0, test_acc = 0, train_loss = 0, train_acc = 0;
    int64_t total_steps = (int64_t)tr.steps_per_epoch * t->epochs;
    for (int epoch = start_epoch; epoch < t->epochs; epoch++) {
        double t_epoch = pgn_now_s();
        shuffle(tr.order, tr.train.n, spec->seed, epoch);
        if (pgn_tensor_write(&tr.dtrain.idx, tr.order, (size_t)tr.train.n, err)) goto fail;
        for (int s = epoch == start_epoch ? start_step : 0; s < tr.steps_per_epoch; s++) {
            if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
                stop(&tr, epoch, s, err);
                goto fail;
            }
            int start = s * tr.batch;
            int rows = tr.train.n - start < tr.batch ? tr.train.n - start : tr.batch;
            if (run_batch(&tr, &tr.dtrain, start, rows, true, (uint64_t)tr.optim.t, s, err))
                goto fail;
            if ((s + 1) % PGN_SYNC_EVERY_STEPS == 0 || s + 1 == tr.steps_per_epoch) {
                if (pgn_device_finish(dev, err)) goto fail;
                if (hooks && hooks->on_progress)
                    hooks->on_progress(hooks->ctx, (double)tr.optim.t / (double)total_steps);
            }
        }
        double sum, correct;
        if (read_stats(&tr, tr.steps_per_epoch, &sum, &correct, err)) goto fail;
        tr.epoch_seconds[epoch] = pgn_now_s() - t_epoch;
        double div = tr.graph.loss_is_mse ? (double)tr.train.n * tr.train.classes : tr.train.n;
        train_loss = sum / div;
        train_acc = correct / tr.train.n;
        if (evaluate(&tr, &test_loss, &test_acc, err)) goto fail;
        emit(hooks, "loss", epoch + 1, train_loss);
        emit(hooks, "accuracy", epoch + 1, train_acc);
        emit(hooks, "test_loss", epoch + 1, test_loss);
        emit(hooks, "test_accuracy", epoch + 1, test_acc);
        int log_every = t->epochs > 20 ? t->epochs / 20 : 1; /* about 20 lines per job */
        if ((epoch + 1) % log_every == 0 || epoch == start_epoch || epoch + 1 == t->epochs)
            log_line(hooks,
                     "epoch %d/%d: loss %.6f accuracy %.4f test_loss %.6f test_accuracy %.4f "
                     "(%.3f s)",
                     epoch + 1, t->epochs, train_loss, train_acc, test_loss, test_acc,
                     tr.epoch_seconds[epoch]);
        bool due = t->checkpoint_every > 0 && (epoch + 1) % t->checkpoint_every == 0;
        if (due && epoch + 1 < t->epochs) {
            char sha[65];
            if (pgn_graph_weights_sha256(&tr.graph, sha, err) ||
                save_checkpoint(&tr, epoch + 1, 0, sha, err))
                goto fail;
        }
    }
    if (start_epoch >= t->epochs && evaluate(&tr, &test_loss, &test_acc, err)) goto fail;

    char sha[65];
    if (pgn_graph_weights_sha256(&tr.graph, sha, err) ||
        save_checkpoint(&tr, t->epochs, 0, sha, err))
        goto fail;
    double seconds = pgn_now_s() - t_start;
    int ran = t->epochs - start_epoch;
    double train_seconds = 0;
    for (int e = start_epoch; e < t->epochs; e++) train_seconds += tr.epoch_seconds[e];
    double median = pgn_median(tr.epoch_seconds + start_epoch, (size_t)(ran > 0 ? ran : 0));
    /* a run resumed inside an epoch skipped start_step whole batches of it */
    double samples = (double)tr.train.n * ran - (double)start_step * tr.batch;
    double sps = train_seconds > 0 ? samples / train_seconds : 0.0;
    *result = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:s, s:i, s:I}",
                        "accuracy", test_acc, "loss", test_loss, "test_accuracy", test_acc,
                        "test_loss", test_loss, "train_loss", train_loss, "train_accuracy",
                        train_acc, "weights_sha256", sha, "epochs", t->epochs, "steps",
                        (json_int_t)tr.optim.t, "seconds", seconds, "seconds_per_epoch", median,
                        "samples_per_second", sps, "gflops",
                        sps * flops_per_sample(t) * 1e-9, "device", dev_id, "resumed_from_epoch",
                        start_epoch, "resumed_from_step", (json_int_t)resumed_step);
    /* The work this run did (paragond sums it over jobs for /metrics). */
    json_object_set_new(*result, "flops", json_real(samples * flops_per_sample(t)));
    if (opts->profile) json_object_set_new(*result, "profile", pgn_graph_profile_json(&tr.graph));
    log_line(hooks, "done: test_accuracy %.4f test_loss %.6f weights sha256 %s", test_acc,
             test_loss, sha);
    trainer_free(&tr);
    return 0;
fail:
    trainer_free(&tr);
    return -1;
}
