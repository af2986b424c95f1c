/* train.c: the training loop of train jobs. The datasets are uploaded to the device once; a
 * step gathers its batch on the device from the epoch's permutation, runs the graph forward and
 * backward and the optimizer, and records its loss and correct count on the device, so steps
 * queue without waiting. Every log_every steps the training loss and speed since the last point,
 * read where the loop waits for the device anyway; per epoch: evaluation on the test set,
 * metrics through the hooks, and a checkpoint when due (and at a stop, mid-epoch, when asked;
 * checkpoint.c). Resuming from a checkpoint, once all of it is verified, continues
 * bit-identically; resuming a finished run's reports what it reported.
 *
 * A distributed job (spec "distributed") runs this loop in each of its ranks (dist.c): ddp takes
 * rank's share of each global batch and sums the gradients over the ranks before the update;
 * diloco trains each rank on its own shard and takes an outer step every inner_steps steps (and
 * after the last), evaluating the global model of the last outer step at each epoch's end.
 * Either stops only where the ranks meet, and checkpoints there, together. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tensor/dist.h"
#include "tensor/graph.h"
#include "tensor/optim.h"
#include "pgn_math.h"

#define PGN_STREAM_SHUFFLE 0x5348554646ULL /* "SHUFF": apart from the init streams; a diloco
                                              rank r shuffles its shard with stream + r */

/* Fisher-Yates driven by the counter RNG: the order of epoch e depends only on seed, stream and e. */
static void shuffle(int *order, int n, uint64_t seed, uint64_t stream, int epoch) {
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        pgn_u64 r = pgn_rand64(seed, stream, (pgn_u64)epoch * (pgn_u64)n + (pgn_u64)i);
        int j = (int)(r % (pgn_u64)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}


/* The per-step figures of a run in one process: every log_every steps of an epoch and at its
 * last, metric step_loss (the mean training loss of its steps since the previous point) and
 * samples_per_second (training time only), with the optimizer step as their step; and at each
 * epoch's end, metric "epoch" (its number) at the step it ended, which marks epochs on a chart by
 * step. The step statistics are read only where the loop waits for the device anyway (every
 * PGN_SYNC_EVERY_STEPS steps and at the epoch's end), so points go out in bursts there. A point
 * covers steps of one epoch only, whose statistics a checkpoint inside it keeps: a resumed run
 * gives the points an uninterrupted one gives, from the first its stopped run did not give. */
typedef struct {
    int read;                /* steps of this epoch whose statistics are summed in */
    int timed_from;          /* the epoch's first step this run took (it resumed there) */
    double loss, values;     /* since the last point: the losses summed, and the values they sum */
    double samples, seconds; /* since the last samples_per_second: samples this run trained, time */
    double mark;             /* when seconds was last brought up to date */
} step_log;

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
    int epoch_samples; /* training samples an epoch covers, over all ranks */
    /* distributed (dist.c): this rank's part; comm NULL when the job runs in one process */
    pgn_comm *comm;
    pgn_dist dist;
    int *shard, shard_n; /* diloco: the samples this rank trains on */
    bool want_stop;      /* should_stop said stop: the ranks stop where they next meet */
    bool stop_all;       /* ...and they did */
    step_log log;
    pgn_train_report report; /* the run's figures; a resumed finished run's, from its checkpoint */
    uint64_t step_launches;  /* kernels a training step queued (the last one run) */
    double load_seconds;     /* reading the data set */
} trainer;

static bool is_ddp(const trainer *tr) { return tr->comm && tr->spec->train.dist.algorithm == PGN_DIST_DDP; }
static bool is_diloco(const trainer *tr) {
    return tr->comm && tr->spec->train.dist.algorithm == PGN_DIST_DILOCO;
}

/* What a checkpoint reads and writes of the trainer (checkpoint.c). */
static pgn_train_state state_of(trainer *tr) {
    return (pgn_train_state){.spec = tr->spec,
                             .dir = tr->opts->checkpoint_dir,
                             .graph = &tr->graph,
                             .optim = &tr->optim,
                             .stats = &tr->stats,
                             .steps_per_epoch = tr->steps_per_epoch,
                             .epochs = tr->spec->train.epochs,
                             .report = &tr->report,
                             .hooks = tr->hooks};
}

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
    free(tr->shard);
    pgn_dist_free(&tr->dist);
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

/* Runs one batch: rows from set s at positions offset.. of its index tensor. While training,
 * the update follows the backward pass; under ddp, once the ranks have summed their gradients,
 * and not at all when they agreed to stop there (tr->stop_all). */
static int run_batch(trainer *tr, device_set *s, int offset, int rows, bool training,
                     uint64_t step, int slot, pgn_error *err) {
    pgn_graph *g = &tr->graph;
    pgn_node *in = &g->nodes[g->input], *lab = &g->nodes[g->labels], *loss = &g->nodes[g->loss];
    /* dropout masks: distinct per rank, and those of one process when there is one rank */
    uint64_t mask_step = tr->comm ? step * (uint64_t)tr->comm->size + (uint64_t)tr->comm->rank : step;
    if (pgn_op_gather_rows(rows, &s->x, &s->idx, offset, &in->value, err) ||
        pgn_op_gather_rows(rows, &s->y, &s->idx, offset, &lab->value, err) ||
        pgn_graph_forward(g, rows, training, mask_step, err))
        return -1;
    if (training) {
        if (pgn_graph_backward(g, rows, err) ||
            (is_ddp(tr) && pgn_dist_reduce_grads(&tr->dist, g, tr->want_stop, &tr->stop_all, err)))
            return -1;
        if (!tr->stop_all && pgn_optim_step(&tr->optim, g, err)) return -1;
    }
    return pgn_op_loss_stats(rows, &loss->value, &loss->aux, &lab->value, &tr->stats, slot, err);
}

/* The rows step s of an epoch trains on: [*start, *start + *rows) of the epoch's order; under
 * ddp this rank's share of global batch s, whose size the loss is the mean over. */
static void step_rows(trainer *tr, int s, int *start, int *rows) {
    int n = is_diloco(tr) ? tr->shard_n : tr->train.n, per = tr->batch;
    if (is_ddp(tr)) {
        int global = tr->batch * tr->comm->size, g0 = s * global, lo, hi;
        int g_rows = n - g0 < global ? n - g0 : global;
        pgn_dist_rows(g_rows, tr->comm->rank, tr->comm->size, &lo, &hi);
        *start = g0 + lo;
        *rows = hi - lo;
        tr->graph.loss_rows = g_rows;
        return;
    }
    *start = s * per;
    *rows = n - *start < per ? n - *start : per;
}

/* The epoch's order into the device's index: the permutation of the whole set (one process, and
 * ddp, whose ranks slice each global batch of it), or of this rank's shard (diloco). */
static int epoch_order(trainer *tr, int epoch, pgn_error *err) {
    uint64_t seed = tr->spec->seed;
    if (!is_diloco(tr)) {
        shuffle(tr->order, tr->train.n, seed, PGN_STREAM_SHUFFLE, epoch);
        return pgn_tensor_write(&tr->dtrain.idx, tr->order, (size_t)tr->train.n, err);
    }
    shuffle(tr->order, tr->shard_n, seed, PGN_STREAM_SHUFFLE + (uint64_t)tr->comm->rank, epoch);
    for (int i = 0; i < tr->shard_n; i++) tr->order[i] = tr->shard[tr->order[i]];
    return pgn_tensor_write(&tr->dtrain.idx, tr->order, (size_t)tr->shard_n, err);
}

static int evaluate(trainer *tr, double *loss, double *acc, pgn_error *err) {
    int b = tr->graph.max_batch;
    tr->graph.loss_rows = 0;
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

/* should_stop said stop before step s of epoch (0-based): the run fails with "cancelled", after
 * checkpointing this exact position when the caller asked for it (a graceful shutdown), so the
 * next run repeats no step. A checkpoint that cannot be written leaves the previous one intact
 * (writes are atomic); the stop is still a stop, and its message says what was lost. */
static void stop(trainer *tr, int epoch, int s, pgn_error *err) {
    pgn_error cerr;
    pgn_error_clear(&cerr);
    char sha[65], saved[64] = "";
    if (tr->opts->checkpoint_on_stop && tr->opts->checkpoint_dir) {
        pgn_train_state state = state_of(tr);
        int rc = tr->comm ? pgn_dist_checkpoint(&tr->dist, state, epoch, s, &cerr)
                          : pgn_graph_weights_sha256(&tr->graph, sha, &cerr) ||
                                pgn_checkpoint_save(&state, epoch, s, sha, &cerr);
        snprintf(saved, sizeof saved, rc ? "; not checkpointed" : "; checkpointed");
    }
    pgn_error_set(err, PGN_E_CANCELLED, "", "stopped at epoch %d, step %lld%s%s%s", epoch + 1,
                  (long long)tr->optim.t, saved, cerr.message[0] ? ": " : "", cerr.message);
}

/* The batch, steps per epoch and samples an epoch covers: one process trains on every sample
 * in batches of batch_size; ddp's global batches are ranks x batch_size (a short last one of
 * fewer rows than ranks is left out); a diloco rank trains on its shard (dist.h). */
static int layout(trainer *tr, pgn_error *err) {
    const pgn_train_spec *t = &tr->spec->train;
    int n = tr->train.n;
    if (pgn_dist_check(&t->dist, tr->comm, err)) return -1;
    int size = tr->comm ? tr->comm->size : 1;
    if (is_diloco(tr)) {
        if (!(tr->shard = pgn_dist_shard(tr->spec->seed, n, tr->comm->rank, size, &tr->shard_n))) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate the shard of %d samples", n);
            return -1;
        }
        n = tr->shard_n;
        if (n < 1)
            return pgn_spec_fail(err, "distributed.ranks", "%d ranks leave no sample of the %d for each", size,
                                 tr->train.n);
    }
    tr->batch = t->batch_size < n ? t->batch_size : n;
    tr->steps_per_epoch = (n + tr->batch - 1) / tr->batch;
    tr->epoch_samples = n * (is_diloco(tr) ? size : 1);
    if (is_ddp(tr)) {
        int global = t->batch_size * size, rest = tr->train.n % global;
        tr->batch = t->batch_size;
        tr->steps_per_epoch = tr->train.n / global + (rest >= size);
        tr->epoch_samples = tr->train.n - (rest >= size ? 0 : rest);
        if (tr->steps_per_epoch < 1)
            return pgn_spec_fail(err, "distributed.ranks", "%d ranks need at least as many samples; the "
                                 "training set has %d", size, tr->train.n);
    }
    return 0;
}

static int setup(trainer *tr, pgn_device *dev, pgn_error *err) {
    const pgn_train_spec *t = &tr->spec->train;
    char datasets[PATH_MAX];
    int n = snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR,
                     tr->opts->data_dir ? tr->opts->data_dir : PGN_DEFAULT_DATA_DIR);
    if (n < 0 || (size_t)n >= sizeof datasets)
        return pgn_spec_fail(err, "data", "the data directory's path is too long");
    double t_load = pgn_now_s();
    if (pgn_dataset_load(&t->data, datasets, &tr->train, &tr->test, err)) return -1;
    tr->load_seconds = pgn_now_s() - t_load;
    if (tr->train.features != t->layers[0] || tr->train.classes != t->layers[t->n_layers - 1]) {
        char field[64];
        int last = tr->train.features == t->layers[0];
        int want = last ? tr->train.classes : tr->train.features;
        snprintf(field, sizeof field, "model.layers[%d]", last ? t->n_layers - 1 : 0);
        pgn_error_set(err, PGN_E_INVALID_SPEC, field, "%s: must be %d: the dataset has %d %s", field,
                      want, want, last ? "classes" : "input features");
        return -1;
    }
    if (layout(tr, err)) return -1;
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
    return tr->comm ? pgn_dist_init(&tr->dist, &t->dist, tr->comm, &tr->graph, err) : 0;
}


/* The samples this rank trains on in an epoch. */
static double rank_samples(trainer *tr) {
    if (!is_ddp(tr)) return is_diloco(tr) ? tr->shard_n : tr->train.n;
    double n = 0;
    for (int s = 0; s < tr->steps_per_epoch; s++) {
        int start, rows;
        step_rows(tr, s, &start, &rows);
        n += rows;
    }
    return n;
}

/* The epoch's training loss and accuracy from the per-step statistics, summed over the ranks;
 * each rank also reports its own figures (pgn_dist_emit: its loss is its shard's, or its share's). */
static int epoch_figures(trainer *tr, int epoch, double *loss, double *acc, pgn_error *err) {
    double v[2];
    if (read_stats(tr, tr->steps_per_epoch, &v[0], &v[1], err)) return -1;
    double classes = tr->graph.loss_is_mse ? tr->train.classes : 1;
    if (tr->comm) {
        if (pgn_dist_emit(&tr->dist, tr->hooks, epoch + 1, v[0] / (rank_samples(tr) * classes), err) ||
            pgn_dist_sum(&tr->dist, v, 2, err))
            return -1;
    }
    double div = (double)tr->epoch_samples * classes;
    *loss = v[0] / div;
    *acc = v[1] / tr->epoch_samples;
    return 0;
}

/* Per-step figures (step_log) go out of a run in one process, with a metrics hook, and a log_every
 * (a spec built in C may have none); a distributed run has only rank-local figures per step. */
static bool logs_steps(const trainer *tr) {
    return !tr->comm && tr->spec->train.log_every > 0 && tr->hooks && tr->hooks->on_metric;
}

/* Starts the step figures of an epoch at step s0 (0, or where a run resumed inside it): a stopped
 * run gave its points up to its last wait for the device, the points that end there or before. */
static void step_figures_start(trainer *tr, int s0) {
    int waited = s0 - s0 % PGN_SYNC_EVERY_STEPS, every = tr->spec->train.log_every;
    tr->log = (step_log){.read = every > 0 ? waited - waited % every : s0, .timed_from = s0, .mark = pgn_now_s()};
}

/* The epoch's first done steps have finished (the device was waited for): their statistics not
 * read yet go into the points due among them (step_log). */
static int step_figures(trainer *tr, int done, pgn_error *err) {
    if (!logs_steps(tr) || done <= tr->log.read) return 0;
    step_log *l = &tr->log;
    double now = pgn_now_s();
    l->seconds += now - l->mark;
    l->mark = now;
    if (pgn_tensor_read(&tr->stats, tr->host_stats, (size_t)done * 2, err)) return -1;
    int every = tr->spec->train.log_every;
    int64_t before = tr->optim.t - done, pointed = 0; /* the optimizer step before the epoch's first */
    double classes = tr->graph.loss_is_mse ? tr->train.classes : 1;
    for (int s = l->read; s < done; s++) {
        int start, rows;
        step_rows(tr, s, &start, &rows);
        l->loss += tr->host_stats[2 * s];
        l->values += (double)rows * classes;
        if (s >= l->timed_from) l->samples += rows;
        if ((s + 1) % every && s + 1 != tr->steps_per_epoch) continue;
        pointed = before + s + 1;
        pgn_hooks_metric(tr->hooks, "step_loss", pointed, l->loss / l->values);
        l->loss = l->values = 0;
    }
    l->read = done;
    if (pointed && l->samples > 0 && l->seconds > 0) { /* the speed up to now, as of the last point */
        pgn_hooks_metric(tr->hooks, "samples_per_second", pointed, l->samples / l->seconds);
        l->samples = l->seconds = 0;
    }
    return 0;
}

/* After step s of epoch (taken, or under ddp perhaps not: stop_all): where the ranks meet, diloco
 * takes its outer step (every inner_steps steps, and after the run's last); a stop they agree
 * on ends the run there, checkpointed. An outer step on an epoch's last step checkpoints, or
 * stops, after the epoch's figures (*synced_at_end). Returns 1 when the run stops now. */
static int after_step(trainer *tr, int epoch, int s, bool *synced_at_end, pgn_error *err) {
    bool last = s + 1 == tr->steps_per_epoch;
    if (is_diloco(tr)) {
        bool final = last && epoch + 1 == tr->spec->train.epochs;
        if (tr->optim.t % tr->spec->train.dist.inner_steps != 0 && !final) return 0;
        if (pgn_dist_outer_step(&tr->dist, &tr->graph, tr->want_stop, &tr->stop_all, err)) return -1;
        if (last) {
            *synced_at_end = true;
            return 0;
        }
        if (!tr->stop_all) return pgn_dist_checkpoint(&tr->dist, state_of(tr), epoch, s + 1, err);
        stop(tr, epoch, s + 1, err);
        return 1;
    }
    if (!tr->stop_all) return 0;
    stop(tr, epoch, s, err); /* ddp: the ranks met before step s's update, which none took */
    return 1;
}

/* The test figures of the model the run has made so far: under diloco, the global parameters of
 * the last outer step, put in place of this rank's for the evaluation. */
static int evaluate_model(trainer *tr, double *loss, double *acc, pgn_error *err) {
    if (!is_diloco(tr)) return evaluate(tr, loss, acc, err);
    return pgn_dist_use_global(&tr->dist, &tr->graph, err) || evaluate(tr, loss, acc, err) ||
                   pgn_dist_use_local(&tr->dist, &tr->graph, err)
               ? -1
               : 0;
}

/* The training figures of the result, and the GFLOP/s of its speed: those r knows (a finished
 * run resumed from a checkpoint written before they were kept knows none of them). */
static void report_figures(json_t *result, const pgn_train_report *r, double flops_per_sample) {
    const struct {
        const char *name;
        double value;
    } figures[] = {{"train_loss", r->train_loss},
                   {"train_accuracy", r->train_accuracy},
                   {"seconds_per_epoch", r->seconds_per_epoch},
                   {"samples_per_second", r->samples_per_second},
                   {"gflops", r->samples_per_second * flops_per_sample * 1e-9}};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        if (isfinite(figures[i].value)) json_object_set_new(result, figures[i].name, json_real(figures[i].value));
}

int pgn_train_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                  const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    if (spec->train.model == PGN_MODEL_GPT) return pgn_lm_run(spec, dev, opts, hooks, result, err);
    const pgn_train_spec *t = &spec->train;
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.spec = spec;
    tr.opts = opts;
    tr.hooks = hooks;
    tr.comm = t->dist.ranks > 0 ? opts->comm : NULL;
    double t_start = pgn_now_s();
    int start_epoch = 0, start_step = 0;
    tr.report = (pgn_train_report){NAN, NAN, NAN, NAN};
    if (setup(&tr, dev, err)) goto fail;
    pgn_train_state state = state_of(&tr);
    if (opts->resume && (tr.comm ? pgn_dist_resume(&tr.dist, state, &start_epoch, &start_step, err)
                                 : pgn_checkpoint_load(&state, &start_epoch, &start_step, err)))
        goto fail;
    int64_t resumed_step = tr.optim.t;
    const char *dev_id = dev ? dev->info.id : "host";
    char who[48] = "";
    if (tr.comm)
        snprintf(who, sizeof who, " as rank %d of %d (%s)", tr.comm->rank, tr.comm->size,
                 is_ddp(&tr) ? "ddp" : "diloco");
    pgn_hooks_log(hooks, "training %s on %s%s: %d samples, batch %d, %d epochs, seed %llu%s", spec->name,
             dev_id, who, is_diloco(&tr) ? tr.shard_n : tr.train.n, tr.batch, t->epochs,
             (unsigned long long)spec->seed, resumed_step ? " (resumed)" : "");
    if (tr.comm && pgn_dist_introduce(&tr.dist, hooks, dev_id, (int)rank_samples(&tr), err)) goto fail;
    if (resumed_step)
        pgn_hooks_log(hooks, "resumed from %s after epoch %d and %d steps of the next (step %lld)",
                 opts->checkpoint_dir, start_epoch, start_step, (long long)tr.optim.t);

    double test_loss = 0, test_acc = 0, train_loss = 0, train_acc = 0;
    int64_t total_steps = (int64_t)tr.steps_per_epoch * t->epochs;
    for (int epoch = start_epoch; epoch < t->epochs; epoch++) {
        double t_epoch = pgn_now_s();
        bool synced_at_end = false;
        if (epoch_order(&tr, epoch, err)) goto fail;
        int s0 = epoch == start_epoch ? start_step : 0;
        step_figures_start(&tr, s0);
        for (int s = s0; s < tr.steps_per_epoch; s++) {
            if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
                if (!tr.comm) {
                    stop(&tr, epoch, s, err);
                    goto fail;
                }
                tr.want_stop = true; /* said at the ranks' next meeting */
            }
            int start, rows;
            step_rows(&tr, s, &start, &rows);
            uint64_t launched = pgn_device_launches(dev);
            if (run_batch(&tr, &tr.dtrain, start, rows, true, (uint64_t)tr.optim.t, s, err)) goto fail;
            tr.step_launches = pgn_device_launches(dev) - launched;
            if (tr.comm) {
                int rc = after_step(&tr, epoch, s, &synced_at_end, err);
                if (rc) goto fail;
            }
            if ((s + 1) % PGN_SYNC_EVERY_STEPS == 0 || s + 1 == tr.steps_per_epoch) {
                if (pgn_device_finish(dev, err) || step_figures(&tr, s + 1, err)) goto fail;
                if (hooks && hooks->on_progress)
                    hooks->on_progress(hooks->ctx, (double)tr.optim.t / (double)total_steps);
            }
        }
        if (epoch_figures(&tr, epoch, &train_loss, &train_acc, err)) goto fail;
        tr.epoch_seconds[epoch] = pgn_now_s() - t_epoch;
        if (evaluate_model(&tr, &test_loss, &test_acc, err)) goto fail;
        if (logs_steps(&tr)) pgn_hooks_metric(hooks, "epoch", tr.optim.t, epoch + 1);
        pgn_hooks_metric(hooks, "loss", epoch + 1, train_loss);
        pgn_hooks_metric(hooks, "accuracy", epoch + 1, train_acc);
        pgn_hooks_metric(hooks, "test_loss", epoch + 1, test_loss);
        pgn_hooks_metric(hooks, "test_accuracy", epoch + 1, test_acc);
        int log_every = t->epochs > 20 ? t->epochs / 20 : 1; /* about 20 lines per job */
        if ((epoch + 1) % log_every == 0 || epoch == start_epoch || epoch + 1 == t->epochs)
            pgn_hooks_log(hooks,
                     "epoch %d/%d: loss %.6f accuracy %.4f test_loss %.6f test_accuracy %.4f "
                     "(%.3f s)",
                     epoch + 1, t->epochs, train_loss, train_acc, test_loss, test_acc,
                     tr.epoch_seconds[epoch]);
        if (epoch + 1 == t->epochs) break;
        if (synced_at_end && tr.stop_all) {
            stop(&tr, epoch + 1, 0, err);
            goto fail;
        }
        bool due = t->checkpoint_every > 0 && (epoch + 1) % t->checkpoint_every == 0;
        if ((synced_at_end || (due && is_ddp(&tr))) && pgn_dist_checkpoint(&tr.dist, state, epoch + 1, 0, err))
            goto fail; /* diloco: at every outer step */
        if (due && !tr.comm) {
            char sha[65];
            if (pgn_graph_weights_sha256(&tr.graph, sha, err) ||
                pgn_checkpoint_save(&state, epoch + 1, 0, sha, err))
                goto fail;
        }
    }
    int ran = t->epochs - start_epoch;
    /* a run resumed inside an epoch skipped start_step whole steps of it, of batch rows per rank */
    double samples = (double)tr.epoch_samples * ran - (double)start_step * tr.batch * (tr.comm ? tr.comm->size : 1);
    if (ran > 0) {
        double train_seconds = 0;
        for (int e = start_epoch; e < t->epochs; e++) train_seconds += tr.epoch_seconds[e];
        tr.report = (pgn_train_report){train_loss, train_acc, pgn_median(tr.epoch_seconds + start_epoch, (size_t)ran),
                                       train_seconds > 0 ? samples / train_seconds : 0.0};
    } else if (evaluate_model(&tr, &test_loss, &test_acc, err)) { /* finished: its figures came with it */
        goto fail;
    }

    char sha[65];
    bool writes = !tr.comm || tr.comm->rank == 0; /* the ranks end with the same weights */
    if (pgn_graph_weights_sha256(&tr.graph, sha, err) ||
        (writes && pgn_checkpoint_save(&state, t->epochs, 0, sha, err)))
        goto fail;
    double seconds = pgn_now_s() - t_start;
    *result = json_pack("{s:f, s:f, s:f, s:f, s:s, s:i, s:I, s:f, s:s, s:i, s:I}", "accuracy", test_acc, "loss",
                        test_loss, "test_accuracy", test_acc, "test_loss", test_loss, "weights_sha256", sha,
                        "epochs", t->epochs, "steps", (json_int_t)tr.optim.t, "seconds", seconds, "device",
                        dev_id, "resumed_from_epoch", start_epoch, "resumed_from_step", (json_int_t)resumed_step);
    report_figures(*result, &tr.report, pgn_train_flops_per_sample(t));
    /* The work this run did (paragond sums it over jobs for /metrics). */
    json_object_set_new(*result, "flops", json_real(samples * pgn_train_flops_per_sample(t)));
    json_object_set_new(*result, "launches_per_step", json_integer((json_int_t)tr.step_launches));
    json_object_set_new(*result, "load_seconds", json_real(tr.load_seconds));
    json_t *dist = tr.comm ? pgn_dist_result(&tr.dist, dev_id, err) : NULL;
    if (tr.comm && !dist) {
        json_decref(*result);
        *result = NULL;
        goto fail;
    }
    if (dist) json_object_set_new(*result, "distributed", dist);
    if (opts->profile) json_object_set_new(*result, "profile", pgn_graph_profile_json(&tr.graph));
    pgn_hooks_log(hooks, "done: test_accuracy %.4f test_loss %.6f weights sha256 %s", test_acc,
             test_loss, sha);
    trainer_free(&tr);
    return 0;
fail:
    trainer_free(&tr);
    return -1;
}
