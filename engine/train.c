/* train.c: the training loop of train jobs: per-epoch shuffle from the seed, mini-batch SGD
 * on the job's device, evaluation after every epoch, metrics and progress through the hooks,
 * and the result with the SHA-256 of the final weights. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "pgn_math.h"

#define PGN_STREAM_SHUFFLE 0x5348554646ULL /* "SHUFF": apart from the parameter streams */

double pgn_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pgn_median(double *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

/* Host staging for one batch; sums of a pass in sample order. */
typedef struct {
    float *x;
    int32_t *y;
    float *loss;
    int32_t *pred;
} staging;

typedef struct {
    double loss_sum;
    long correct;
    long seen;
} pass_stats;

static void emit(const pgn_run_hooks *h, const char *name, int64_t step, double value) {
    if (h && h->on_metric) h->on_metric(h->ctx, name, step, value);
}

static void log_line(const pgn_run_hooks *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(const pgn_run_hooks *h, const char *fmt, ...) {
    if (!h || !h->on_log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    h->on_log(h->ctx, line);
}

/* Uploads rows `idx[0..rows)` of d into the model's input and label tensors. */
static int load_batch(pgn_mlp *m, const pgn_dataset *d, const int *idx, int rows, staging *s,
                      pgn_error *err) {
    for (int r = 0; r < rows; r++) {
        int i = idx ? idx[r] : r;
        memcpy(s->x + (size_t)r * d->features, d->x + (size_t)i * d->features,
               (size_t)d->features * sizeof *s->x);
        s->y[r] = d->y[i];
    }
    return pgn_tensor_write(&m->x, s->x, (size_t)rows * d->features, err) ||
           pgn_tensor_write(&m->labels, s->y, (size_t)rows, err);
}

/* Reads back the per-row loss and prediction of the last loss op and adds them up in order. */
static int collect(pgn_mlp *m, int rows, staging *s, pass_stats *st, pgn_error *err) {
    if (pgn_tensor_read(&m->loss, s->loss, (size_t)rows, err) ||
        pgn_tensor_read(&m->pred, s->pred, (size_t)rows, err))
        return -1;
    for (int r = 0; r < rows; r++) {
        st->loss_sum += s->loss[r];
        st->correct += s->pred[r] == s->y[r];
    }
    st->seen += rows;
    return 0;
}

static int evaluate(pgn_mlp *m, const pgn_dataset *d, staging *s, pass_stats *st,
                    pgn_error *err) {
    memset(st, 0, sizeof *st);
    for (int start = 0; start < d->n; start += m->max_batch) {
        int rows = d->n - start < m->max_batch ? d->n - start : m->max_batch;
        pgn_dataset view = *d;
        view.x = d->x + (size_t)start * d->features;
        view.y = d->y + start;
        if (load_batch(m, &view, NULL, rows, s, err) || pgn_mlp_forward(m, rows, err) ||
            pgn_mlp_loss(m, rows, 0.0f, err) || collect(m, rows, s, st, err))
            return -1;
    }
    return 0;
}

typedef struct {
    pgn_dataset train, test;
    pgn_mlp model;
    staging s;
    int *order;
    double *epoch_seconds;
} run_state;

static void run_state_free(run_state *rs) {
    pgn_dataset_free(&rs->train);
    pgn_dataset_free(&rs->test);
    pgn_mlp_release(&rs->model);
    free(rs->s.x);
    free(rs->s.y);
    free(rs->s.loss);
    free(rs->s.pred);
    free(rs->order);
    free(rs->epoch_seconds);
}

int pgn_train_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                  const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    const pgn_train_spec *t = &spec->train;
    run_state rs;
    memset(&rs, 0, sizeof rs);
    double t_start = pgn_now_s();
    if (pgn_dataset_load(&t->data, opts->data_dir, &rs.train, &rs.test, err)) return -1;
    if (rs.train.features != t->layers[0] || rs.train.classes != t->layers[t->n_layers - 1]) {
        char field[64];
        int bad = rs.train.features != t->layers[0] ? 0 : t->n_layers - 1;
        snprintf(field, sizeof field, "model.layers[%d]", bad);
        pgn_error_set(err, "invalid_spec", field, "%s: must be %d: the dataset has %d %s", field,
                      bad ? rs.train.classes : rs.train.features,
                      bad ? rs.train.classes : rs.train.features, bad ? "classes" : "input features");
        run_state_free(&rs);
        return -1;
    }
    int batch = t->batch_size < rs.train.n ? t->batch_size : rs.train.n;
    int eval_batch = batch;
    if (pgn_mlp_init(&rs.model, dev, t->layers, t->n_layers, eval_batch, spec->seed, err))
        goto fail;
    int features = rs.train.features;
    rs.s.x = malloc((size_t)eval_batch * features * sizeof *rs.s.x);
    rs.s.y = malloc((size_t)eval_batch * sizeof *rs.s.y);
    rs.s.loss = malloc((size_t)eval_batch * sizeof *rs.s.loss);
    rs.s.pred = malloc((size_t)eval_batch * sizeof *rs.s.pred);
    rs.order = malloc((size_t)rs.train.n * sizeof *rs.order);
    rs.epoch_seconds = malloc((size_t)t->epochs * sizeof *rs.epoch_seconds);
    if (!rs.s.x || !rs.s.y || !rs.s.loss || !rs.s.pred || !rs.order || !rs.epoch_seconds) {
        pgn_error_set(err, "out_of_memory", "", "cannot allocate training buffers");
        goto fail;
    }
    const char *dev_id = dev ? dev->info.id : "host";
    log_line(hooks, "training mlp on %s: %d samples, batch %d, %d epochs, seed %llu", dev_id,
             rs.train.n, batch, t->epochs, (unsigned long long)spec->seed);

    long steps = 0;
    pass_stats train_st = {0}, test_st = {0};
    int steps_per_epoch = (rs.train.n + batch - 1) / batch;
    for (int epoch = 0; epoch < t->epochs; epoch++) {
        double t_epoch = pgn_now_s();
        shuffle(rs.order, rs.train.n, spec->seed, epoch);
        memset(&train_st, 0, sizeof train_st);
        for (int start = 0; start < rs.train.n; start += batch) {
            if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
                pgn_error_set(err, "cancelled", "", "stopped at epoch %d, step %ld", epoch + 1,
                              steps);
                goto fail;
            }
            int rows = rs.train.n - start < batch ? rs.train.n - start : batch;
            float scale = 1.0f / (float)rows; /* mean loss over the batch */
            if (load_batch(&rs.model, &rs.train, rs.order + start, rows, &rs.s, err) ||
                pgn_mlp_forward(&rs.model, rows, err) ||
                pgn_mlp_loss(&rs.model, rows, scale, err) ||
                pgn_mlp_backward(&rs.model, rows, err) ||
                pgn_mlp_sgd(&rs.model, t->lr, t->momentum, err) ||
                collect(&rs.model, rows, &rs.s, &train_st, err))
                goto fail;
            steps++;
            if (hooks && hooks->on_progress)
                hooks->on_progress(hooks->ctx, (double)steps / ((double)steps_per_epoch * t->epochs));
        }
        rs.epoch_seconds[epoch] = pgn_now_s() - t_epoch;
        if (evaluate(&rs.model, &rs.test, &rs.s, &test_st, err)) goto fail;
        double loss = train_st.loss_sum / (double)train_st.seen;
        double acc = (double)train_st.correct / (double)train_st.seen;
        double test_loss = test_st.loss_sum / (double)test_st.seen;
        double test_acc = (double)test_st.correct / (double)test_st.seen;
        emit(hooks, "loss", epoch + 1, loss);
        emit(hooks, "accuracy", epoch + 1, acc);
        emit(hooks, "test_loss", epoch + 1, test_loss);
        emit(hooks, "test_accuracy", epoch + 1, test_acc);
        int log_every = t->epochs > 20 ? t->epochs / 20 : 1; /* about 20 lines per job */
        if ((epoch + 1) % log_every == 0 || epoch == 0 || epoch + 1 == t->epochs)
            log_line(hooks, "epoch %d/%d: loss %.6f accuracy %.4f test_loss %.6f test_accuracy %.4f",
                     epoch + 1, t->epochs, loss, acc, test_loss, test_acc);
    }

    char sha[65];
    if (pgn_mlp_sha256(&rs.model, sha, err)) goto fail;
    double seconds = pgn_now_s() - t_start;
    double train_seconds = 0;
    for (int e = 0; e < t->epochs; e++) train_seconds += rs.epoch_seconds[e];
    double median = pgn_median(rs.epoch_seconds, (size_t)t->epochs);
    double test_loss = test_st.loss_sum / (double)test_st.seen;
    double test_acc = (double)test_st.correct / (double)test_st.seen;
    *result = json_pack("{s:f, s:f, s:f, s:f, s:f, s:s, s:i, s:I, s:f, s:f, s:f, s:s}", "accuracy",
                        test_acc, "loss", test_loss, "test_accuracy", test_acc, "test_loss",
                        test_loss, "train_loss", train_st.loss_sum / (double)train_st.seen,
                        "weights_sha256", sha, "epochs", t->epochs, "steps", (json_int_t)steps,
                        "seconds", seconds, "seconds_per_epoch", median, "samples_per_second",
                        train_seconds > 0 ? (double)rs.train.n * t->epochs / train_seconds : 0.0,
                        "device", dev_id);
    log_line(hooks, "done: test_accuracy %.4f test_loss %.6f weights sha256 %s", test_acc,
             test_loss, sha);
    run_state_free(&rs);
    return 0;
fail:
    run_state_free(&rs);
    return -1;
}
