/* bench.c: the benchmark suites' registry and what they share: the column tables (for the CLI's
 * table, the CSV export and the dashboard), the CSV writer, row helpers, the dispatch behind
 * `paragon bench` and the bench job kind, and the gemm, inet and train suites. mlp-forward and
 * tensor-micro live in bench_mlp.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "embedded.h"
#include "inet/inet.h"

const char *const pgn_bench_suites[] = {"mlp-forward", "tensor-micro", "gemm", "inet", "train", NULL};

bool pgn_bench_suite_known(const char *name) {
    for (const char *const *s = pgn_bench_suites; *s; s++)
        if (!strcmp(*s, name)) return true;
    return false;
}

/* ---- columns ------------------------------------------------------------------------------ */

static const pgn_bench_column mlp_csv[] = {
    {"id", "case"},         {"shape", "shape"}, {"estMB", "est_mb"}, {"cpu_ms", "cpu_ms"},
    {"gpu_ms", "gpu_ms"},   {"speedup", "speedup"}, {"mae", "mae"},  {"max", "max"},
    {"gpu_init_ms", "gpu_init_ms"}, {"adapter", "adapter"},
};
static const pgn_bench_column mlp_table[] = {
    {"id", "case"},         {"shape", "shape"}, {"estMB", "est_mb"}, {"cpu_ms", "cpu_ms"},
    {"gpu_ms", "gpu_ms"},   {"speedup", "speedup"}, {"mae", "mae"},  {"max", "max"},
    {"gpu_init_ms", "gpu_init_ms"}, {"cpu_b256/s", "cpu_batch_sps"}, {"gpu_b256/s", "gpu_batch_sps"},
    {"device", "device"},
};
static const pgn_bench_column micro_cols[] = {
    {"case", "case"},           {"elements", "elements"},     {"host_ms", "host_ms"},
    {"device_ms", "device_ms"}, {"speedup", "speedup"},       {"host_GB/s", "host_gbps"},
    {"device_GB/s", "device_gbps"}, {"device_elem/s", "device_elems_per_s"},
    {"launch_us", "launch_us"}, {"device", "device"},
};
static const pgn_bench_column gemm_cols[] = {
    {"case", "case"}, {"m", "m"}, {"n", "n"}, {"k", "k"}, {"device_ms", "device_ms"},
    {"GFLOP/s", "gflops"}, {"host_GFLOP/s", "host_gflops"}, {"identical", "bit_identical"},
    {"device", "device"},
};
static const pgn_bench_column inet_cols[] = {
    {"case", "case"}, {"work_items", "work_items"}, {"interactions", "interactions"},
    {"seconds", "seconds"}, {"MIPS", "mips"}, {"peak_nodes", "peak_nodes"}, {"result", "result"},
    {"device", "device"},
};
static const pgn_bench_column train_cols[] = {
    {"case", "case"}, {"epochs", "epochs"}, {"s/epoch", "seconds_per_epoch"},
    {"samples/s", "samples_per_second"}, {"GFLOP/s", "gflops"}, {"test_acc", "test_accuracy"},
    {"device", "device"},
};

#define N(a) (sizeof a / sizeof *a)

static const pgn_bench_column *columns(const char *suite, bool table, size_t *n) {
    if (!strcmp(suite, "mlp-forward")) {
        *n = table ? N(mlp_table) : N(mlp_csv);
        return table ? mlp_table : mlp_csv;
    }
    struct {
        const char *suite;
        const pgn_bench_column *cols;
        size_t n;
    } all[] = {{"tensor-micro", micro_cols, N(micro_cols)},
               {"gemm", gemm_cols, N(gemm_cols)},
               {"inet", inet_cols, N(inet_cols)},
               {"train", train_cols, N(train_cols)}};
    for (size_t i = 0; i < N(all); i++)
        if (!strcmp(all[i].suite, suite)) {
            *n = all[i].n;
            return all[i].cols;
        }
    *n = 0;
    return NULL;
}

const pgn_bench_column *pgn_bench_columns(const char *suite, size_t *n) { return columns(suite, false, n); }
const pgn_bench_column *pgn_bench_table_columns(const char *suite, size_t *n) {
    return columns(suite, true, n);
}

/* ---- CSV ----------------------------------------------------------------------------------- */

/* The shortest %g text that reads back as x. */
static void shortest(double x, char *out, size_t size) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, x);
        if (strtod(out, NULL) == x) return;
    }
}

/* One CSV field: numbers as the shortest text that reads back the same double, strings
 * quoted (quotes doubled) when they need it, booleans true/false, a missing value empty. */
static void put_field(pgn_text *b, const json_t *v) {
    char num[64];
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        pgn_text_puts(b, num);
    } else if (json_is_real(v)) {
        shortest(json_real_value(v), num, sizeof num);
        pgn_text_puts(b, num);
    } else if (json_is_boolean(v)) {
        pgn_text_puts(b, json_is_true(v) ? "true" : "false");
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strpbrk(s, ",\"\r\n")) {
            pgn_text_puts(b, s);
            return;
        }
        pgn_text_put(b, "\"", 1);
        for (const char *c = s; *c; c++) {
            if (*c == '"') pgn_text_put(b, "\"\"", 2);
            else pgn_text_put(b, c, 1);
        }
        pgn_text_put(b, "\"", 1);
    }
}

char *pgn_bench_csv(const char *suite, const json_t *rows) {
    size_t n;
    const pgn_bench_column *cols = pgn_bench_columns(suite, &n);
    if (!cols) return NULL;
    pgn_text b = {0};
    for (size_t c = 0; c < n; c++) {
        if (c) pgn_text_put(&b, ",", 1);
        pgn_text_puts(&b, cols[c].header);
    }
    pgn_text_put(&b, "\n", 1);
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        for (size_t c = 0; c < n; c++) {
            if (c) pgn_text_put(&b, ",", 1);
            put_field(&b, json_object_get(row, cols[c].key));
        }
        pgn_text_put(&b, "\n", 1);
    }
    return pgn_text_take(&b);
}

/* ---- shared helpers ------------------------------------------------------------------------ */

json_t *pgn_bench_row(const pgn_bench_ctx *ctx, const char *suite, const char *case_id) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "suite", suite, "case", case_id, "device", ctx->info->id,
                     "adapter", ctx->info->name, "version", PGN_VERSION);
}

bool pgn_bench_wants(const pgn_bench_ctx *ctx, const char *case_id) {
    if (ctx->listing) {
        json_array_append_new(ctx->listing, json_string(case_id));
        return false;
    }
    if (!ctx->n_cases) return true;
    for (size_t i = 0; i < ctx->n_cases; i++)
        if (!strcmp(ctx->cases[i], case_id)) return true;
    return false;
}

int pgn_bench_check_stop(const pgn_bench_ctx *ctx, pgn_error *err) {
    if (ctx->hooks && ctx->hooks->should_stop && ctx->hooks->should_stop(ctx->hooks->ctx)) {
        pgn_error_set(err, PGN_E_CANCELLED, "", "cancelled");
        return -1;
    }
    return 0;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

typedef int (*suite_fn)(const pgn_bench_ctx *, json_t *, pgn_error *);

static suite_fn suite_function(const char *name) {
    if (!strcmp(name, "mlp-forward")) return pgn_bench_mlp_forward;
    if (!strcmp(name, "tensor-micro")) return pgn_bench_tensor_micro;
    if (!strcmp(name, "gemm")) return pgn_bench_gemm;
    if (!strcmp(name, "inet")) return pgn_bench_inet;
    if (!strcmp(name, "train")) return pgn_bench_train;
    return NULL;
}

int pgn_bench_run(const pgn_bench_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                  const pgn_run_hooks *hooks, json_t *rows, pgn_error *err) {
    pgn_device_info host;
    pgn_device_info_host(&host);
    const char *cases[PGN_BENCH_MAX_CASES];
    for (int i = 0; i < spec->n_cases; i++) cases[i] = spec->cases[i];
    pgn_bench_ctx ctx = {.dev = dev,
                         .info = dev ? pgn_device_get_info(dev) : &host,
                         .repeats = spec->repeats > 0 ? spec->repeats : 5,
                         .cases = spec->n_cases ? cases : NULL,
                         .n_cases = (size_t)spec->n_cases,
                         .hooks = hooks,
                         .data_dir = opts && opts->data_dir ? opts->data_dir : PGN_DEFAULT_DATA_DIR};
    bool all = !strcmp(spec->suite, "all");
    for (const char *const *s = pgn_bench_suites; *s; s++) {
        if (!all && strcmp(*s, spec->suite)) continue;
        if (pgn_bench_check_stop(&ctx, err) || suite_function(*s)(&ctx, rows, err)) return -1;
    }
    if (!all && !suite_function(spec->suite)) {
        pgn_error_set(err, PGN_E_INVALID_SPEC, "suite", "suite: unknown suite '%s'", spec->suite);
        return -1;
    }
    return 0;
}

json_t *pgn_bench_cases(const char *suite) {
    pgn_device_info host;
    pgn_device_info_host(&host);
    json_t *ids = json_array();
    pgn_bench_ctx ctx = {.info = &host, .repeats = 1, .listing = ids};
    pgn_error err;
    bool all = !strcmp(suite, "all");
    for (const char *const *s = pgn_bench_suites; *s && ids; s++)
        if (all || !strcmp(*s, suite)) suite_function(*s)(&ctx, ids, &err);
    return ids;
}

int pgn_bench_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                      const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    json_t *rows = json_array();
    if (!rows || pgn_bench_run(&spec->bench, dev, opts, hooks, rows, err)) {
        json_decref(rows);
        return -1;
    }
    pgn_device_info host;
    pgn_device_info_host(&host);
    *result = json_pack("{s:s, s:s, s:o}", "suite", spec->bench.suite, "device",
                        dev ? pgn_device_get_info(dev)->id : host.id, "rows", rows);
    return *result ? 0 : -1;
}

/* ---- gemm ---------------------------------------------------------------------------------
 * GFLOP/s of pgn_op_gemm on square sizes and on the Fashion-MNIST MLP's GEMMs (784-256-256-10 at
 * batch 128: forward x w, dW = x^T dz, dX = dz w^T), against the host reference, with a
 * bit-identity check. A timed repeat queues enough calls to last about GEMM_REPEAT_S and waits
 * once, as a training step does. */
#define GEMM_REPEAT_S 0.02
#define GEMM_MAX_CALLS 2000

const pgn_gemm_shape pgn_mlp_gemm_shapes[PGN_MLP_GEMM_SHAPES] = {
    {"fwd1", 128, 256, 784, false, false}, {"fwd2", 128, 256, 256, false, false},
    {"fwd3", 128, 10, 256, false, false},  {"dW1", 784, 256, 128, true, false},
    {"dW2", 256, 256, 128, true, false},   {"dW3", 256, 10, 128, true, false},
    {"dX2", 128, 256, 256, false, true},   {"dX3", 128, 256, 10, false, true},
};

/* The square cases, N=128 .. N=2048, run before the MLP's. */
static const int gemm_squares[] = {128, 256, 512, 1024, 2048};

/* Seconds per call of c on dev (NULL: host) over `repeats` timed repeats; the product lands in
 * out (M*N floats) when given. */
static int gemm_time(pgn_device *dev, const pgn_gemm_shape *c, const float *a, const float *b, int repeats,
                     float *out, double *seconds, pgn_error *err) {
    pgn_tensor ta = {0}, tb = {0}, tc = {0};
    int rc = -1;
    double t[64];
    if (repeats > 64) repeats = 64;
    if (pgn_tensor_init(&ta, dev, c->ta ? c->K : c->M, c->ta ? c->M : c->K, err) ||
        pgn_tensor_init(&tb, dev, c->tb ? c->N : c->K, c->tb ? c->K : c->N, err) ||
        pgn_tensor_init(&tc, dev, c->M, c->N, err) || pgn_tensor_write(&ta, a, (size_t)c->M * c->K, err) ||
        pgn_tensor_write(&tb, b, (size_t)c->K * c->N, err))
        goto done;
    int calls = 1;
    for (int r = -1; r < repeats; r++) { /* r == -1: warm-up, which also sizes the repeats */
        double t0 = pgn_now_s();
        for (int i = 0; i < calls; i++)
            if (pgn_op_gemm(c->M, c->N, c->K, &ta, c->ta, &tb, c->tb, &tc, err)) goto done;
        if (pgn_device_finish(dev, err)) goto done;
        double dt = (pgn_now_s() - t0) / calls;
        if (r < 0) {
            double n = dt > 0 ? GEMM_REPEAT_S / dt : GEMM_MAX_CALLS;
            calls = n < 1 ? 1 : n > GEMM_MAX_CALLS ? GEMM_MAX_CALLS : (int)n;
        } else {
            t[r] = dt;
        }
    }
    *seconds = pgn_median(t, (size_t)(repeats));
    rc = out ? pgn_tensor_read(&tc, out, (size_t)c->M * c->N, err) : 0;
done:
    pgn_tensor_release(&ta);
    pgn_tensor_release(&tb);
    pgn_tensor_release(&tc);
    return rc;
}

/* Times one shape (unless ctx's case filter leaves it out) and appends its row. */
static int gemm_case_run(const pgn_bench_ctx *ctx, const pgn_gemm_shape *c, json_t *rows,
                         pgn_error *err) {
    if (!pgn_bench_wants(ctx, c->name)) return 0;
    if (pgn_bench_check_stop(ctx, err)) return -1;
    size_t na = (size_t)c->M * c->K, nb = (size_t)c->K * c->N, nc = (size_t)c->M * c->N;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    float *host = malloc(nc * sizeof *host), *dev = malloc(nc * sizeof *dev);
    double host_s = 0, dev_s = 0;
    int rc = -1;
    if (!a || !b || !host || !dev) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory for gemm %s", c->name);
    } else {
        for (size_t k = 0; k < na; k++) a[k] = pgn_rand_unit(1, 1, k) * 2.0f - 1.0f;
        for (size_t k = 0; k < nb; k++) b[k] = pgn_rand_unit(1, 2, k) * 2.0f - 1.0f;
        /* the host reference is slow at 2048: its figure is one call's */
        int host_repeats = c->M >= 1024 ? 1 : ctx->repeats;
        rc = gemm_time(NULL, c, a, b, host_repeats, host, &host_s, err);
        if (rc == 0) rc = ctx->dev ? gemm_time(ctx->dev, c, a, b, ctx->repeats, dev, &dev_s, err) : 0;
        if (rc == 0 && !ctx->dev) {
            memcpy(dev, host, nc * sizeof *dev);
            dev_s = host_s;
        }
    }
    if (rc == 0) {
        double flop = 2.0 * c->M * c->N * c->K;
        json_t *row = pgn_bench_row(ctx, "gemm", c->name);
        json_object_set_new(row, "m", json_integer(c->M));
        json_object_set_new(row, "n", json_integer(c->N));
        json_object_set_new(row, "k", json_integer(c->K));
        json_object_set_new(row, "transpose", json_string(c->ta ? "TN" : c->tb ? "NT" : "NN"));
        json_object_set_new(row, "device_ms", json_real(dev_s * 1e3));
        json_object_set_new(row, "gflops", json_real(dev_s > 0 ? flop / dev_s / 1e9 : 0));
        json_object_set_new(row, "host_gflops", json_real(host_s > 0 ? flop / host_s / 1e9 : 0));
        json_object_set_new(row, "bit_identical", json_boolean(!memcmp(host, dev, nc * sizeof *dev)));
        json_array_append_new(rows, row);
        if (ctx->hooks && ctx->hooks->on_log) {
            char line[160];
            snprintf(line, sizeof line, "gemm %s on %s: %.1f GFLOP/s", c->name, ctx->info->id,
                     dev_s > 0 ? flop / dev_s / 1e9 : 0);
            ctx->hooks->on_log(ctx->hooks->ctx, line);
        }
    }
    free(a);
    free(b);
    free(host);
    free(dev);
    return rc;
}

int pgn_bench_gemm(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    for (size_t i = 0; i < sizeof gemm_squares / sizeof *gemm_squares; i++) {
        int n = gemm_squares[i];
        char name[16];
        snprintf(name, sizeof name, "N=%d", n);
        pgn_gemm_shape square = {name, n, n, n, false, false};
        if (gemm_case_run(ctx, &square, rows, err)) return -1;
    }
    for (int i = 0; i < PGN_MLP_GEMM_SHAPES; i++)
        if (gemm_case_run(ctx, &pgn_mlp_gemm_shapes[i], rows, err)) return -1;
    return 0;
}

/* ---- inet ---------------------------------------------------------------------------------
 * Every example program (embedded from examples/inet) on the device's OpenCL reducer with its
 * default work-items, or on the host reducer for the host pseudo-device: interactions, median
 * seconds of the reduction (after an untimed warm-up; at least `repeats` runs and INET_MIN_S of
 * them), MIPS, the heap's peak and whether the result is the .expected one. */
#define INET_MIN_S 0.2
#define INET_MAX_RUNS 256

static int inet_once(const pgn_bench_ctx *ctx, const pgn_inet_book *book, pgn_inet_result *r, pgn_error *err) {
    return ctx->dev ? pgn_inet_run_cl(ctx->dev, book, NULL, 0, NULL, r, err)
                    : pgn_inet_run_host(book, NULL, NULL, r, err);
}

static int inet_case(const pgn_bench_ctx *ctx, const char *name, const pgn_embedded *prog,
                     const pgn_embedded *expected, json_t *rows, pgn_error *err) {
    pgn_inet_book *book;
    if (pgn_inet_parse((const char *)prog->data, prog->size, &book, err)) return -1;
    pgn_inet_result r = {0};
    double t[INET_MAX_RUNS], total = 0;
    int runs = 0, rc = inet_once(ctx, book, &r, err);
    char verdict[16] = "ok";
    if (rc == 0 && expected) {
        size_t len = strlen(r.normal_form) + 64;
        char *got = malloc(len);
        if (got) snprintf(got, len, "Result: %s\n- ITRS: %llu\n", r.normal_form, (unsigned long long)r.interactions);
        if (!got || strcmp(got, (const char *)expected->data)) snprintf(verdict, sizeof verdict, "differs");
        free(got);
    }
    while (rc == 0 && runs < INET_MAX_RUNS && (runs < ctx->repeats || total < INET_MIN_S)) {
        pgn_inet_result_free(&r);
        rc = inet_once(ctx, book, &r, err);
        if (rc == 0) {
            t[runs++] = r.seconds;
            total += r.seconds;
        }
    }
    if (rc == 0) {
        double sec = pgn_median(t, (size_t)(runs));
        json_t *row = pgn_bench_row(ctx, "inet", name);
        json_object_set_new(row, "work_items",
                            json_integer(ctx->dev ? (json_int_t)pgn_inet_default_workers(ctx->info) : 1));
        json_object_set_new(row, "interactions", json_integer((json_int_t)r.interactions));
        json_object_set_new(row, "seconds", json_real(sec));
        json_object_set_new(row, "mips", json_real(sec > 0 ? (double)r.interactions / sec / 1e6 : 0));
        json_object_set_new(row, "peak_nodes", json_integer((json_int_t)r.peak_nodes));
        json_object_set_new(row, "result", json_string(verdict));
        json_object_set_new(row, "runs", json_integer(runs));
        json_array_append_new(rows, row);
    }
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    return rc;
}

int pgn_bench_inet(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    for (const pgn_embedded *e = pgn_inet_examples; e->name; e++) {
        size_t n = strlen(e->name);
        if (n < 5 || strcmp(e->name + n - 4, ".hvm")) continue;
        char name[64], expected[80];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->name);
        if (!pgn_bench_wants(ctx, name)) continue;
        if (pgn_bench_check_stop(ctx, err)) return -1;
        snprintf(expected, sizeof expected, "%s.expected", name);
        if (inet_case(ctx, name, e, pgn_embedded_find(pgn_inet_examples, expected), rows, err)) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            pgn_error_set(err, err->code, err->field, "inet %s: %s", name, msg);
            return -1;
        }
    }
    return 0;
}

/* ---- train --------------------------------------------------------------------------------
 * The Fashion-MNIST MLP of examples/jobs/fashion-mlp.json for TRAIN_EPOCHS epochs: seconds per
 * epoch (median, training loop only), samples/s, GFLOP/s and the test accuracy reached. */
#define TRAIN_EPOCHS 2

int pgn_bench_train(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    if (!pgn_bench_wants(ctx, "fashion-mlp")) return 0;
    json_t *j = json_pack("{s:s, s:s, s:I, s:{s:s, s:[iiii], s:s}, s:{s:s}, s:{s:s, s:f, s:f}, s:i, s:i}",
                          "kind", "train", "name", "fashion-mlp", "seed", (json_int_t)0, "model", "type", "mlp",
                          "layers", 784, 256, 256, 10, "activation", "relu", "data", "source", "fashion-mnist",
                          "optimizer", "type", "sgd", "lr", 0.05, "momentum", 0.9, "batch_size", 128, "epochs",
                          TRAIN_EPOCHS);
    /* Through the tensor engine itself, not the job front door (engine/jobs), which is above
     * the benchmarks. */
    pgn_job_spec spec = {.kind = PGN_JOB_TRAIN, .name = "fashion-mlp", .device = "auto", .seed = 0};
    int rc = j ? pgn_train_spec_parse(j, &spec.train, err) : -1;
    json_decref(j);
    if (rc) return -1;
    pgn_run_options opts = {.data_dir = ctx->data_dir};
    json_t *result = NULL;
    if (pgn_train_run(&spec, ctx->dev, &opts, ctx->hooks, &result, err)) return -1;
    json_t *row = pgn_bench_row(ctx, "train", "fashion-mlp");
    static const char *const keys[] = {"epochs", "seconds_per_epoch", "samples_per_second", "gflops",
                                       "test_accuracy", "weights_sha256"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        json_object_set(row, keys[i], json_object_get(result, keys[i]));
    json_decref(result);
    json_array_append_new(rows, row);
    return 0;
}
