/* lm.c: the training run of a character language model (model.type "gpt"). The text's tokens
 * are uploaded to the device once; a step cuts its batch of windows there (starts from the
 * counter RNG, so no upload per step), runs the graph forward and backward and the optimizer,
 * and records its loss on the device. Every log_every steps the training loss, learning rate
 * and tokens/s go out as metrics; every eval_every steps the loss on a fixed set of validation
 * windows; checkpoints every checkpoint_every steps (and at a stop, when asked) keep the
 * vocabulary and the text's SHA-256 beside the weights, so a resume continues bit-identically.
 *
 * Distributed (dist.c, docs/distributed.md): step s of rank r takes windows (s ranks + r) B ..,
 * so that ddp's ranks together take one process's batch of ranks x B windows and diloco's ranks
 * each their own; ddp sums the gradients before each update, diloco takes an outer step every
 * inner_steps steps and after the last, and evaluates the global model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dist.h"
#include "tensor/graph.h"
#include "tensor/optim.h"

typedef struct {
    const pgn_job_spec *spec;
    const pgn_run_options *opts;
    const pgn_run_hooks *hooks;
    pgn_corpus corpus;
    pgn_tensor tokens; /* the whole text, on the device */
    pgn_graph graph;
    pgn_optimizer optim;
    pgn_tensor train_stats; /* [loss sum, correct] of each step since the last log */
    pgn_tensor eval_stats;  /* the same per evaluation batch */
    float *host_stats;
    double *window_ms; /* ms per step of each logged window, for the median */
    uint64_t step_launches; /* kernels a training step queued (the last one run) */
    int n_windows;
    int B, T, rows, eval_batches;
    pgn_window_plan train_plan, eval_plan;
    /* distributed (dist.c): this rank's part; comm NULL when the job runs in one process */
    pgn_comm *comm;
    pgn_dist dist;
    bool want_stop; /* should_stop said stop: the ranks stop where they next meet */
    bool stop_all;  /* ...and they did */
} lm;

static bool is_ddp(const lm *m) { return m->comm && m->spec->train.dist.algorithm == PGN_DIST_DDP; }
static bool is_diloco(const lm *m) { return m->comm && m->spec->train.dist.algorithm == PGN_DIST_DILOCO; }

static pgn_train_state state_of(lm *m) {
    return (pgn_train_state){.spec = m->spec,
                             .dir = m->opts->checkpoint_dir,
                             .graph = &m->graph,
                             .optim = &m->optim,
                             .stats = &m->train_stats,
                             .steps_per_epoch = m->spec->train.steps,
                             .epochs = 1,
                             .corpus = &m->corpus,
                             .hooks = m->hooks};
}

static void lm_free(lm *m) {
    pgn_optim_release(&m->optim);
    pgn_graph_release(&m->graph);
    pgn_tensor_release(&m->tokens);
    pgn_tensor_release(&m->train_stats);
    pgn_tensor_release(&m->eval_stats);
    pgn_corpus_free(&m->corpus);
    pgn_dist_free(&m->dist);
    free(m->host_stats);
    free(m->window_ms);
}

/* The text must hold a window of context + 1 tokens in each split (the validation split one
 * more, for its evenly spread starts). */
static int check_text(const lm *m, pgn_error *err) {
    int64_t n_val = m->corpus.n - m->corpus.n_train;
    if (m->corpus.n_train >= m->T + 1 && n_val >= m->T + 2) return 0;
    pgn_error_set(err, PGN_E_DATA, "data", "data: %s has %lld characters: too short for model.context %d "
                  "(the training part and the validation part, the last 1/%d, must each hold a window of "
                  "%d characters)", m->corpus.what, (long long)m->corpus.n, m->T, PGN_TEXT_VALIDATION_DIVISOR,
                  m->T + 2);
    return -1;
}

static int setup(lm *m, pgn_device *dev, pgn_error *err) {
    const pgn_train_spec *t = &m->spec->train;
    char datasets[PGN_PATH_MAX * 2];
    int n = snprintf(datasets, sizeof datasets, "%s/" PGN_DATASETS_SUBDIR,
                     m->opts->data_dir ? m->opts->data_dir : PGN_DEFAULT_DATA_DIR);
    if (n < 0 || (size_t)n >= sizeof datasets)
        return pgn_spec_fail(err, "data", "the data directory's path is too long");
    if (pgn_dist_check(&t->dist, m->comm, err)) return -1;
    m->B = t->batch_size;
    m->T = t->gpt.context;
    m->rows = m->B * m->T;
    if (pgn_corpus_load(&t->data, datasets, &m->corpus, err) || check_text(m, err)) return -1;
    int64_t n_val = m->corpus.n - m->corpus.n_train;
    m->train_plan = (pgn_window_plan){.random = true, .seed = m->spec->seed, .lo = 0,
                                      .span = (uint64_t)(m->corpus.n_train - m->T)};
    m->eval_plan = (pgn_window_plan){.random = false, .lo = (uint64_t)m->corpus.n_train,
                                     .span = (uint64_t)(n_val - m->T - 1), .total = (uint64_t)t->eval_windows};
    m->eval_batches = (t->eval_windows + m->B - 1) / m->B;
    pgn_graph_init(&m->graph, dev, m->rows, m->spec->seed);
    if (pgn_graph_build_gpt(&m->graph, t, m->corpus.vocab.size, err) ||
        pgn_optim_init(&m->optim, &m->graph, &t->optimizer, t->steps, err) ||
        pgn_tensor_init(&m->tokens, dev, (int)m->corpus.n, 1, err) ||
        pgn_tensor_write(&m->tokens, m->corpus.tokens, (size_t)m->corpus.n, err) ||
        pgn_tensor_init(&m->train_stats, dev, t->log_every, 2, err) ||
        pgn_tensor_init(&m->eval_stats, dev, m->eval_batches, 2, err))
        return -1;
    int slots = t->log_every > m->eval_batches ? t->log_every : m->eval_batches;
    m->host_stats = malloc((size_t)slots * 2 * sizeof *m->host_stats);
    m->window_ms = malloc(((size_t)t->steps / (size_t)t->log_every + 2) * sizeof *m->window_ms);
    if (!m->host_stats || !m->window_ms) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate training buffers");
        return -1;
    }
    pgn_graph_profile_enable(&m->graph, m->opts->profile);
    return m->comm ? pgn_dist_init(&m->dist, &t->dist, m->comm, &m->graph, err) : 0;
}

/* Sums slots [0, n) of a statistics tensor, in slot order, in double. */
static int sum_stats(lm *m, pgn_tensor *stats, int n, double *loss, double *correct, pgn_error *err) {
    if (pgn_tensor_read(stats, m->host_stats, (size_t)n * 2, err)) return -1;
    *loss = *correct = 0;
    for (int i = 0; i < n; i++) {
        *loss += m->host_stats[2 * i];
        *correct += m->host_stats[2 * i + 1];
    }
    return 0;
}

/* One batch of windows through the graph: plan's windows index0.. (count of them); training
 * also runs backward and the optimizer (under ddp after the ranks summed their gradients, and not
 * when they agreed to stop there). Its loss sum and correct count go to stats[slot]. */
static int run_windows(lm *m, const pgn_window_plan *plan, uint64_t index0, int count, bool training,
                       uint64_t step, pgn_tensor *stats, int slot, pgn_error *err) {
    pgn_graph *g = &m->graph;
    pgn_node *tok = &g->nodes[g->input], *lab = &g->nodes[g->labels], *loss = &g->nodes[g->loss];
    int rows = count * m->T;
    /* ddp's loss is the mean over the global batch; dropout masks differ per rank */
    g->loss_rows = training && is_ddp(m) ? rows * m->comm->size : 0;
    uint64_t mask_step = m->comm ? step * (uint64_t)m->comm->size + (uint64_t)m->comm->rank : step;
    if (pgn_op_windows(count, m->T, &m->tokens, plan, index0, &tok->value, &lab->value, err) ||
        pgn_graph_forward(g, rows, training, mask_step, err))
        return -1;
    if (training) {
        if (pgn_graph_backward(g, rows, err) ||
            (is_ddp(m) && pgn_dist_reduce_grads(&m->dist, g, m->want_stop, &m->stop_all, err)))
            return -1;
        if (!m->stop_all && pgn_optim_step(&m->optim, g, err)) return -1;
    }
    return pgn_op_loss_stats(rows, &loss->value, &loss->aux, &lab->value, stats, slot, err);
}

/* The mean loss and next-character accuracy over the validation windows (under diloco, of the
 * global parameters of the last outer step, put in place of this rank's meanwhile). */
static int evaluate_windows(lm *m, double *loss, double *acc, pgn_error *err);
static int evaluate(lm *m, double *loss, double *acc, pgn_error *err) {
    if (!is_diloco(m)) return evaluate_windows(m, loss, acc, err);
    return pgn_dist_use_global(&m->dist, &m->graph, err) || evaluate_windows(m, loss, acc, err) ||
                   pgn_dist_use_local(&m->dist, &m->graph, err)
               ? -1
               : 0;
}

static int evaluate_windows(lm *m, double *loss, double *acc, pgn_error *err) {
    int windows = m->spec->train.eval_windows;
    for (int i = 0; i < m->eval_batches; i++) {
        int count = windows - i * m->B < m->B ? windows - i * m->B : m->B;
        if (run_windows(m, &m->eval_plan, (uint64_t)i * m->B, count, false, 0, &m->eval_stats, i, err)) return -1;
    }
    double sum, correct;
    if (sum_stats(m, &m->eval_stats, m->eval_batches, &sum, &correct, err)) return -1;
    double predictions = (double)windows * m->T;
    *loss = sum / predictions;
    *acc = correct / predictions;
    return 0;
}

/* should_stop said stop before step s: checkpoint this exact position when asked (a graceful
 * shutdown), then fail with "cancelled". */
static void stop(lm *m, int s, pgn_error *err) {
    pgn_error cerr;
    pgn_error_clear(&cerr);
    char sha[65], saved[64] = "";
    if (m->opts->checkpoint_on_stop && m->opts->checkpoint_dir) {
        pgn_train_state state = state_of(m);
        bool ok = m->comm ? pgn_dist_checkpoint(&m->dist, state, 0, s, &cerr) == 0
                          : pgn_graph_weights_sha256(&m->graph, sha, &cerr) == 0 &&
                                pgn_checkpoint_save(&state, 0, s, sha, &cerr) == 0;
        snprintf(saved, sizeof saved, ok ? "; checkpointed" : "; not checkpointed");
    }
    pgn_error_set(err, PGN_E_CANCELLED, "", "stopped at step %d%s%s%s", s, saved, cerr.message[0] ? ": " : "",
                  cerr.message);
}

/* Steps [from, to) of the run; returns the step reached, -1 on failure. */
static int train_steps(lm *m, int from, double *train_loss, double *val_loss, double *val_acc, pgn_error *err) {
    const pgn_train_spec *t = &m->spec->train;
    const pgn_run_hooks *hooks = m->hooks;
    pgn_train_state state = state_of(m);
    double t_window = pgn_now_s();
    int window_start = from;
    uint64_t ranks = m->comm ? (uint64_t)m->comm->size : 1, rank = m->comm ? (uint64_t)m->comm->rank : 0;
    for (int s = from; s < t->steps; s++) {
        if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
            if (!m->comm) {
                stop(m, s, err);
                return -1;
            }
            m->want_stop = true; /* said at the ranks' next meeting */
        }
        uint64_t first = ((uint64_t)s * ranks + rank) * (uint64_t)m->B, launched = pgn_device_launches(m->graph.dev);
        if (run_windows(m, &m->train_plan, first, m->B, true, (uint64_t)s, &m->train_stats, s % t->log_every, err))
            return -1;
        m->step_launches = pgn_device_launches(m->graph.dev) - launched;
        int done = s + 1;
        bool last = done == t->steps, log_due = done % t->log_every == 0 || last;
        bool outer = is_diloco(m) && (done % t->dist.inner_steps == 0 || last);
        if (is_ddp(m) && m->stop_all) { /* the ranks met before step s's update, which none took */
            stop(m, s, err);
            return -1;
        }
        if (outer && pgn_dist_outer_step(&m->dist, &m->graph, m->want_stop, &m->stop_all, err)) return -1;
        if (m->stop_all && !last) {
            stop(m, done, err);
            return -1;
        }
        if (log_due || done % PGN_SYNC_EVERY_STEPS == 0) {
            if (pgn_device_finish(m->graph.dev, err)) return -1;
            if (hooks && hooks->on_progress) hooks->on_progress(hooks->ctx, (double)done / t->steps);
        }
        if (log_due) {
            double now = pgn_now_s(), sum, correct;
            int in_window = (done - 1) % t->log_every + 1; /* a resume may restore earlier slots */
            if (sum_stats(m, &m->train_stats, in_window, &sum, &correct, err)) return -1;
            double tokens = (double)in_window * m->rows;
            if (m->comm) { /* every rank's own loss, then all of them summed */
                double v[2] = {sum, tokens};
                if (pgn_dist_emit(&m->dist, hooks, done, sum / tokens, err) || pgn_dist_sum(&m->dist, v, 2, err))
                    return -1;
                sum = v[0];
                tokens = v[1];
            }
            *train_loss = sum / tokens;
            double ms = (now - t_window) * 1e3 / (done - window_start);
            m->window_ms[m->n_windows++] = ms;
            pgn_hooks_metric(hooks, "loss", done, *train_loss);
            pgn_hooks_metric(hooks, "lr", done, pgn_optim_lr(&m->optim, s));
            pgn_hooks_metric(hooks, "tokens_per_second", done, (double)m->rows * (double)ranks / (ms * 1e-3));
            /* a line per log_every steps, as an MLP's epochs have (an evaluation's own line says
             * the same and more) */
            if (!(done % t->eval_every == 0 || last))
                pgn_hooks_log(hooks, "step %d/%d: loss %.4f (%.1f ms/step, %.0f tokens/s)", done, t->steps, *train_loss,
                              ms, (double)m->rows * (double)ranks / (ms * 1e-3));
            t_window = now;
            window_start = done;
        }
        if (done % t->eval_every == 0 || last) {
            if (evaluate(m, val_loss, val_acc, err)) return -1;
            pgn_hooks_metric(hooks, "val_loss", done, *val_loss);
            pgn_hooks_metric(hooks, "val_accuracy", done, *val_acc);
            pgn_hooks_log(hooks, "step %d/%d: loss %.4f val_loss %.4f val_accuracy %.4f (%.1f ms/step)", done,
                          t->steps, *train_loss, *val_loss, *val_acc, m->n_windows ? m->window_ms[m->n_windows - 1] : 0.0);
            t_window = pgn_now_s(); /* evaluation is not a training step's time */
            window_start = done;
        }
        bool due = t->checkpoint_every > 0 && done % t->checkpoint_every == 0 && !last;
        if (m->comm && ((outer && !last) || (due && is_ddp(m))) && pgn_dist_checkpoint(&m->dist, state, 0, done, err))
            return -1; /* diloco: at every outer step */
        if (due && !m->comm) {
            char sha[65];
            if (pgn_graph_weights_sha256(&m->graph, sha, err) || pgn_checkpoint_save(&state, 0, done, sha, err))
                return -1;
        }
    }
    return t->steps;
}

int pgn_lm_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
               const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    const pgn_train_spec *t = &spec->train;
    lm m;
    memset(&m, 0, sizeof m);
    m.spec = spec;
    m.opts = opts;
    m.hooks = hooks;
    m.comm = t->dist.ranks > 0 ? opts->comm : NULL;
    double t_start = pgn_now_s();
    int epochs_done = 0, start = 0;
    if (setup(&m, dev, err)) goto fail;
    pgn_train_state state = state_of(&m);
    if (opts->resume && (m.comm ? pgn_dist_resume(&m.dist, state, &epochs_done, &start, err)
                                : pgn_checkpoint_load(&state, &epochs_done, &start, err)))
        goto fail;
    if (epochs_done) start = t->steps;
    const char *dev_id = dev ? dev->info.id : "host";
    uint64_t params = pgn_gpt_param_count(&t->gpt, m.corpus.vocab.size);
    pgn_hooks_log(hooks, "training gpt %s on %s: %llu parameters, %d characters of vocabulary, %s of %lld "
                  "characters, batch %d x %d tokens, %d steps, seed %llu%s", spec->name, dev_id,
                  (unsigned long long)params, m.corpus.vocab.size, m.corpus.what, (long long)m.corpus.n, m.B,
                  m.T, t->steps, (unsigned long long)spec->seed, start ? " (resumed)" : "");
    if (m.comm && pgn_dist_introduce(&m.dist, hooks, dev_id, t->steps * m.B, err)) goto fail;
    if (start) pgn_hooks_log(hooks, "resumed from %s at step %d", opts->checkpoint_dir, start);
    double train_loss = 0, val_loss = 0, val_acc = 0;
    double t_train = pgn_now_s();
    if (start < t->steps) {
        if (train_steps(&m, start, &train_loss, &val_loss, &val_acc, err) < 0) goto fail;
    } else if (evaluate(&m, &val_loss, &val_acc, err)) {
        goto fail;
    }
    double train_seconds = pgn_now_s() - t_train;
    char sha[65];
    bool writes = !m.comm || m.comm->rank == 0; /* the ranks end with the same weights */
    if (pgn_graph_weights_sha256(&m.graph, sha, err) || (writes && pgn_checkpoint_save(&state, 1, 0, sha, err)))
        goto fail;
    int ranks = m.comm ? m.comm->size : 1;
    double ms = pgn_median(m.window_ms, (size_t)m.n_windows);
    double tps = ms > 0 ? (double)m.rows * ranks / (ms * 1e-3) : 0.0;
    double per_token = pgn_gpt_flops_per_token(&t->gpt, m.corpus.vocab.size);
    double tokens_trained = (double)(t->steps - start) * m.rows * ranks;
    *result = json_pack("{s:f, s:f, s:f, s:f, s:f, s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:i, s:I, s:s, s:i}",
                        "loss", val_loss, "val_loss", val_loss, "accuracy", val_acc, "val_accuracy", val_acc,
                        "train_loss", train_loss, "weights_sha256", sha, "steps", t->steps, "tokens",
                        (json_int_t)m.corpus.n, "seconds", pgn_now_s() - t_start, "train_seconds", train_seconds,
                        "ms_per_step", ms, "tokens_per_second", tps, "gflops", tps * per_token * 1e-9, "params",
                        (json_int_t)params, "vocab", m.corpus.vocab.size, "resumed_from_step", (json_int_t)start,
                        "device", dev_id, "resumed_from_epoch", 0);
    json_object_set_new(*result, "flops", json_real(tokens_trained * per_token));
    json_object_set_new(*result, "launches_per_step", json_integer((json_int_t)m.step_launches));
    json_t *dist = m.comm ? pgn_dist_result(&m.dist, dev_id, err) : NULL;
    if (m.comm && !dist) {
        json_decref(*result);
        *result = NULL;
        goto fail;
    }
    if (dist) json_object_set_new(*result, "distributed", dist);
    if (opts->profile) json_object_set_new(*result, "profile", pgn_graph_profile_json(&m.graph));
    pgn_hooks_log(hooks, "done: val_loss %.4f val_accuracy %.4f weights sha256 %s", val_loss, val_acc, sha);
    lm_free(&m);
    return 0;
fail:
    lm_free(&m);
    return -1;
}
