/* test_train.c: the MLP and its training loop: gradients against double-precision finite
 * differences, XOR convergence, bit-identical weights on host and OpenCL, and cancellation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_helpers.h"

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

/* Collects metrics in call order. */
typedef struct {
    char names[4096][16];
    int64_t steps[4096];
    double values[4096];
    int count;
    int stop_after; /* should_stop turns true after this many polls; 0: never */
    int polls;
} recorder;

static void on_metric(void *ctx, const char *name, int64_t step, double value) {
    recorder *r = ctx;
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
    cr_assert_str_eq(err.code, "cancelled");
    cr_assert_eq(rec.count, 4 * 5, "five epochs of one step each ran");
}

/* Mean cross-entropy of the MLP in double precision, from the host tensors' float weights. */
static double loss_double(const pgn_mlp *m, const float *x, const int32_t *y, int rows) {
    double act[64][32];
    double total = 0;
    for (int r = 0; r < rows; r++) {
        int width = m->widths[0];
        for (int i = 0; i < width; i++) act[0][i] = x[r * width + i];
        for (int l = 0; l < m->n_weights; l++) {
            int in = m->widths[l], out = m->widths[l + 1];
            const float *w = m->w[l].host, *b = m->b[l].host;
            for (int o = 0; o < out; o++) {
                double z = b[o];
                for (int i = 0; i < in; i++) z += act[l][i] * w[i * out + o];
                act[l + 1][o] = (l < m->n_weights - 1 && z < 0) ? 0 : z;
            }
        }
        const double *z = act[m->n_weights];
        int classes = m->widths[m->n_weights];
        double mx = z[0], sum = 0;
        for (int j = 1; j < classes; j++) mx = fmax(mx, z[j]);
        for (int j = 0; j < classes; j++) sum += exp(z[j] - mx);
        total += log(sum) - (z[y[r]] - mx);
    }
    return total / rows;
}

Test(train, mlp_gradients_match_central_differences) {
    const int widths[] = {5, 7, 6, 3};
    enum { ROWS = 9 };
    pgn_mlp m;
    pgn_error err = {0};
    cr_assert_eq(pgn_mlp_init(&m, NULL, widths, 4, ROWS, 3, &err), 0, "%s", err.message);
    float *x = test_random(ROWS * 5, 77, 1.0f);
    int32_t y[ROWS];
    for (int r = 0; r < ROWS; r++) y[r] = r % 3;
    cr_assert_eq(pgn_tensor_write(&m.x, x, ROWS * 5, &err), 0);
    cr_assert_eq(pgn_tensor_write(&m.labels, y, ROWS, &err), 0);
    cr_assert_eq(pgn_mlp_forward(&m, ROWS, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_mlp_loss(&m, ROWS, 1.0f / ROWS, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_mlp_backward(&m, ROWS, &err), 0, "%s", err.message);
    int checked = 0;
    for (int l = 0; l < m.n_weights; l++) {
        pgn_tensor *params[2] = {&m.w[l], &m.b[l]}, *grads[2] = {&m.gw[l], &m.gb[l]};
        for (int p = 0; p < 2; p++) {
            float *v = params[p]->host;
            const float *g = grads[p]->host;
            for (size_t i = 0; i < pgn_tensor_count(params[p]); i++) {
                float saved = v[i];
                const float h = 1e-3f;
                float hi = saved + h, lo = saved - h; /* the steps floats can take */
                v[i] = hi;
                double up = loss_double(&m, x, y, ROWS);
                v[i] = lo;
                double down = loss_double(&m, x, y, ROWS);
                v[i] = saved;
                double numeric = (up - down) / ((double)hi - (double)lo);
                cr_assert_float_eq((double)g[i], numeric, 2e-4 + 1e-2 * fabs(numeric),
                                   "layer %d %s[%zu]: analytic %g numeric %g", l, p ? "b" : "w",
                                   i, (double)g[i], numeric);
                checked++;
            }
        }
    }
    cr_assert_eq(checked, 5 * 7 + 7 + 7 * 6 + 6 + 6 * 3 + 3);
    free(x);
    pgn_mlp_release(&m);
}
