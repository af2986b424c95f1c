/* test_bench.c: the mlp-forward and tensor-micro suites (engine/bench/bench_mlp.c) on the OpenCL
 * device and on the host pseudo-device: every row carries its keys, host and device results are
 * bit-identical, the CSV export has Paragon-Py's columns, and case filters select; the gpt
 * suite's cases and columns, and a run of it shortened to a few steps; the rates a run reports
 * to the cost model. Figures are checked for presence, sign and their relations only: tests
 * never assert on wall-clock time. */
#include <dirent.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "engine_helpers.h"

static pgn_device *dev;

static void setup(void) { dev = test_open_cl_device(); }
static void teardown(void) { pgn_device_close(dev); }

TestSuite(bench, .init = setup, .fini = teardown);

typedef int (*suite_fn)(const pgn_bench_ctx *, json_t *, pgn_error *);

static pgn_device_info host_info;

/* ctx for d (NULL: the host) with the given cases and repeats, no hooks. */
static pgn_bench_ctx ctx_for(pgn_device *d, const char *const *cases, size_t n_cases,
                             int repeats) {
    pgn_device_info_host(&host_info);
    return (pgn_bench_ctx){.dev = d,
                           .info = d ? pgn_device_get_info(d) : &host_info,
                           .repeats = repeats,
                           .cases = cases,
                           .n_cases = n_cases};
}

/* The suite's rows for ctx; fails the test on an error. */
static json_t *run_ok(suite_fn suite, const pgn_bench_ctx *ctx) {
    pgn_error err = {0};
    json_t *rows = json_array();
    cr_assert_not_null(rows);
    cr_assert_eq(suite(ctx, rows, &err), 0, "%s", err.message);
    return rows;
}

static double real_of(const json_t *row, const char *key) {
    const json_t *v = json_object_get(row, key);
    cr_assert(json_is_real(v), "row key '%s' is missing or not a real", key);
    return json_real_value(v);
}

static void assert_keys(const json_t *row, const char *const *keys) {
    for (const char *const *k = keys; *k; k++)
        cr_assert_not_null(json_object_get(row, *k), "row has no key '%s'", *k);
}

static const char *const common_keys[] = {"suite", "case", "device", "adapter", "version", NULL};
static const char *const mlp_keys[] = {"shape", "est_mib", "cpu_ms", "gpu_ms", "speedup", "mae",
                                       "max", "gpu_init_ms", "batch", "cpu_batch_sps",
                                       "gpu_batch_sps", "identical", NULL};
static const char *const micro_keys[] = {"elements", "host_ms", "device_ms", "speedup",
                                         "host_gbps", "device_gbps", "device_elems_per_s",
                                         "launch_us", "identical", NULL};

/* Weights and biases of 784-h-10 in fp32, in MiB as Paragon-Py counts them (S1: 0.19). */
static double est_mib(int h) { return (784.0 * h + h + h * 10.0 + 10) * 4 / 1048576.0; }

Test(bench, mlp_forward_device_matches_host_bit_for_bit) {
    const char *cases[] = {"S1", "S2"};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 2, 2);
    json_t *rows = run_ok(pgn_bench_mlp_forward, &ctx);
    cr_assert_eq(json_array_size(rows), 2);
    const char *shapes[] = {"784\u219264\u219210", "784\u2192128\u219210"}; /* as Paragon-Py prints them */
    int widths[] = {64, 128};
    for (size_t i = 0; i < 2; i++) {
        const json_t *row = json_array_get(rows, i);
        assert_keys(row, common_keys);
        assert_keys(row, mlp_keys);
        cr_assert_str_eq(json_string_value(json_object_get(row, "suite")), "mlp-forward");
        cr_assert_str_eq(json_string_value(json_object_get(row, "case")), cases[i]);
        cr_assert_str_eq(json_string_value(json_object_get(row, "device")),
                         pgn_device_get_info(dev)->id);
        cr_assert_str_eq(json_string_value(json_object_get(row, "shape")), shapes[i]);
        cr_assert_float_eq(real_of(row, "est_mib"), est_mib(widths[i]), 1e-12);
        cr_assert_eq(json_integer_value(json_object_get(row, "batch")), 256);
        cr_assert_eq(real_of(row, "mae"), 0.0, "%s: mae %g", cases[i], real_of(row, "mae"));
        cr_assert_eq(real_of(row, "max"), 0.0, "%s: max %g", cases[i], real_of(row, "max"));
        cr_assert(json_is_true(json_object_get(row, "identical")), "%s: batch outputs differ",
                  cases[i]);
        cr_assert_gt(real_of(row, "gpu_ms"), 0.0);
        cr_assert_gt(real_of(row, "cpu_ms"), 0.0);
        cr_assert_gt(real_of(row, "speedup"), 0.0);
        cr_assert_gt(real_of(row, "gpu_init_ms"), 0.0);
        cr_assert_gt(real_of(row, "cpu_batch_sps"), 0.0);
        cr_assert_gt(real_of(row, "gpu_batch_sps"), 0.0);
    }
    json_decref(rows);
}

Test(bench, tensor_micro_device_matches_host) {
    const char *cases[] = {"add-1K", "relu-64K"};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 2, 2);
    json_t *rows = run_ok(pgn_bench_tensor_micro, &ctx);
    cr_assert_eq(json_array_size(rows), 2);
    json_int_t elements[] = {1024, 65536};
    for (size_t i = 0; i < 2; i++) {
        const json_t *row = json_array_get(rows, i);
        assert_keys(row, common_keys);
        assert_keys(row, micro_keys);
        cr_assert_str_eq(json_string_value(json_object_get(row, "suite")), "tensor-micro");
        cr_assert_str_eq(json_string_value(json_object_get(row, "case")), cases[i]);
        cr_assert_eq(json_integer_value(json_object_get(row, "elements")), elements[i]);
        cr_assert(json_is_true(json_object_get(row, "identical")), "%s: device != host",
                  cases[i]);
        cr_assert_gt(real_of(row, "device_ms"), 0.0);
        cr_assert_gt(real_of(row, "launch_us"), 0.0);
    }
    /* one launch-overhead measurement per run, on every row */
    cr_assert_eq(real_of(json_array_get(rows, 0), "launch_us"),
                 real_of(json_array_get(rows, 1), "launch_us"));
    json_decref(rows);
}

Test(bench, tensor_micro_dense_matches_host) {
    const char *cases[] = {"dense-64"};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 1, 1);
    json_t *rows = run_ok(pgn_bench_tensor_micro, &ctx);
    cr_assert_eq(json_array_size(rows), 1);
    const json_t *row = json_array_get(rows, 0);
    assert_keys(row, micro_keys);
    cr_assert_eq(json_integer_value(json_object_get(row, "elements")), 256 * 64);
    cr_assert(json_is_true(json_object_get(row, "identical")));
    json_decref(rows);
}

/* The n-th comma-separated field of line (no quoted fields before it). */
static void field(const char *line, int n, char *out, size_t size) {
    for (int i = 0; i < n; i++) {
        line = strchr(line, ',');
        cr_assert_not_null(line, "line has no field %d", n);
        line++;
    }
    size_t len = strcspn(line, ",\n");
    cr_assert_lt(len, size);
    memcpy(out, line, len);
    out[len] = '\0';
}

Test(bench, mlp_forward_csv_has_paragon_py_columns) {
    const char *cases[] = {"S1", "S2"};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 2, 1);
    json_t *rows = run_ok(pgn_bench_mlp_forward, &ctx);
    char *csv = pgn_bench_csv("mlp-forward", rows);
    cr_assert_not_null(csv);
    const char *header = "id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,gpu_init_ms,adapter\n";
    cr_assert_eq(strncmp(csv, header, strlen(header)), 0, "CSV starts with:\n%s", csv);
    int lines = 0;
    for (const char *p = csv; (p = strchr(p, '\n')); p++) lines++;
    cr_assert_eq(lines, 1 + (int)json_array_size(rows), "CSV:\n%s", csv);
    const char *line = csv + strlen(header);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        char f[64];
        field(line, 0, f, sizeof f);
        cr_assert_str_eq(f, cases[i]);
        field(line, 1, f, sizeof f);
        cr_assert_str_eq(f, i ? "\"784\u2192128\u219210\"" : "\"784\u219264\u219210\"", "shape of %s", cases[i]);
        field(line, 2, f, sizeof f);
        cr_assert_str_eq(f, i ? "0.39" : "0.19", "estMB of %s: MiB with two decimals", cases[i]);
        field(line, 6, f, sizeof f);
        cr_assert_str_eq(f, "0.00E+00", "mae field of %s", cases[i]);
        field(line, 7, f, sizeof f);
        cr_assert_str_eq(f, "0.00E+00", "max field of %s", cases[i]);
        field(line, 3, f, sizeof f);
        const char *dot = strchr(f, '.');
        cr_assert(dot && strlen(dot) == 3, "cpu_ms with two decimals: %s", f);
        line = strchr(line, '\n') + 1;
    }
    free(csv);
    json_decref(rows);
}

Test(bench, unknown_case_filter_yields_no_rows) {
    const char *cases[] = {"no-such-case"};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 1, 1);
    json_t *rows = run_ok(pgn_bench_mlp_forward, &ctx);
    cr_assert_eq(json_array_size(rows), 0);
    json_decref(rows);
    rows = run_ok(pgn_bench_tensor_micro, &ctx);
    cr_assert_eq(json_array_size(rows), 0);
    json_decref(rows);
    /* an unknown case beside a known one: the known one runs */
    const char *mixed[] = {"nope", "S1"};
    ctx = ctx_for(NULL, mixed, 2, 1);
    rows = run_ok(pgn_bench_mlp_forward, &ctx);
    cr_assert_eq(json_array_size(rows), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "case")), "S1");
    json_decref(rows);
}

Test(bench, host_pseudo_device_reports_host_columns_only) {
    const char *mlp[] = {"S1"}, *micro[] = {"relu-1K"};
    pgn_bench_ctx ctx = ctx_for(NULL, mlp, 1, 1);
    json_t *rows = run_ok(pgn_bench_mlp_forward, &ctx);
    cr_assert_eq(json_array_size(rows), 1);
    const json_t *row = json_array_get(rows, 0);
    cr_assert_str_eq(json_string_value(json_object_get(row, "device")), "host");
    cr_assert_gt(real_of(row, "cpu_ms"), 0.0);
    cr_assert_gt(real_of(row, "cpu_batch_sps"), 0.0);
    cr_assert_null(json_object_get(row, "gpu_ms"));
    json_decref(rows);

    ctx = ctx_for(NULL, micro, 1, 1);
    rows = run_ok(pgn_bench_tensor_micro, &ctx);
    cr_assert_eq(json_array_size(rows), 1);
    row = json_array_get(rows, 0);
    cr_assert_gt(real_of(row, "host_ms"), 0.0);
    cr_assert_null(json_object_get(row, "device_ms"));
    cr_assert_null(json_object_get(row, "launch_us"));
    json_decref(rows);
}

static bool stop_now(void *ctx) {
    (void)ctx;
    return true;
}

Test(bench, should_stop_cancels_before_a_case) {
    const char *cases[] = {"S1", "add-1K"};
    pgn_run_hooks hooks = {.should_stop = stop_now};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 2, 1);
    ctx.hooks = &hooks;
    pgn_error err = {0};
    json_t *rows = json_array();
    cr_assert_eq(pgn_bench_mlp_forward(&ctx, rows, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(json_array_size(rows), 0);
    pgn_error_clear(&err);
    cr_assert_eq(pgn_bench_tensor_micro(&ctx, rows, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(json_array_size(rows), 0);
    pgn_error_clear(&err);
    const char *gpt[] = {"char-gpt"};
    ctx = ctx_for(dev, gpt, 1, 1);
    ctx.hooks = &hooks;
    cr_assert_eq(pgn_bench_gpt(&ctx, rows, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(json_array_size(rows), 0);
    json_decref(rows);
}

/* ---- what a run measured of its device's rates (pgn_measured_rates) ---- */

static void keep_rates(void *ctx, const pgn_measured_rates *r) { *(pgn_measured_rates *)ctx = *r; }

/* The row of case_id in rows (the test fails without one). */
static const json_t *row_of(const json_t *rows, const char *case_id) {
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) if (!strcmp(json_string_value(json_object_get(row, "case")), case_id)) return row;
    cr_assert_fail("no row for %s", case_id);
    return NULL;
}

/* A run tells the cost model, typed, the figures its rows show: the GEMM rate of the training
 * shape (fwd1, not the square before it), the reducer's rate from the programs big enough to time
 * (fib, not u24_ops's 71 interactions) and the launch cost tensor-micro measured. */
Test(bench, a_run_reports_the_rates_its_rows_measured) {
    pgn_bench_spec spec = {.suite = "all", .n_cases = 5, .repeats = 1,
                           .cases = {"N=128", "fwd1", "u24_ops", "fib", "add-1K"}};
    pgn_measured_rates got = {.gflops = -1};
    pgn_run_hooks hooks = {.ctx = &got, .on_rates = keep_rates};
    pgn_error err = {0};
    json_t *rows = json_array();
    cr_assert_eq(pgn_bench_run(&spec, dev, NULL, &hooks, rows, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(rows), 5);
    cr_assert_str_eq(got.device, pgn_device_get_info(dev)->id);
    cr_assert_eq(got.gflops, real_of(row_of(rows, "fwd1"), "gflops"));
    cr_assert_neq(got.gflops, real_of(row_of(rows, "N=128"), "gflops"));
    cr_assert_eq(got.mips, real_of(row_of(rows, "fib"), "mips"));
    cr_assert_eq(got.launch_us, real_of(row_of(rows, "add-1K"), "launch_us"));
    cr_assert_gt(got.gflops, 0);
    cr_assert_gt(got.mips, 0);
    cr_assert_gt(got.launch_us, 0);
    json_decref(rows);

    /* a run of small programs alone measured no reducer rate; nor does a failed run report */
    pgn_bench_spec small = {.suite = "inet", .n_cases = 1, .repeats = 1, .cases = {"u24_ops"}};
    got = (pgn_measured_rates){.mips = -1};
    rows = json_array();
    cr_assert_eq(pgn_bench_run(&small, dev, NULL, &hooks, rows, &err), 0, "%s", err.message);
    cr_assert(got.mips == 0 && got.gflops == 0 && got.launch_us == 0, "nothing measured: %g", got.mips);
    pgn_bench_spec unknown = {.suite = "no-such-suite", .repeats = 1};
    got = (pgn_measured_rates){.mips = -1};
    cr_assert_eq(pgn_bench_run(&unknown, dev, NULL, &hooks, rows, &err), -1);
    cr_assert_eq(got.mips, -1, "a failed run reports nothing");
    json_decref(rows);
}

/* ---- the cost model's probes (engine/bench/bench_cost.c) ---- */

/* Files left in dir (not . or ..). */
static int entries_in(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}


#define FASHION_IMAGES "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
#define FORTUNES "/usr/share/games/fortunes/fortunes"

/* Short real training runs: each sets the figures it measures, its row says them, and no
 * checkpoint is left where it wrote one. They run only when named. */
Test(bench, cost_probes_measure_what_a_training_run_costs) {
    json_t *ids = pgn_bench_cases("train");
    static const char *const listed[] = {"cost-xor", "cost-fashion", "cost-gpt", "fashion-mlp"};
    cr_assert_eq(json_array_size(ids), 4);
    for (size_t i = 0; i < 4; i++) cr_assert_str_eq(json_string_value(json_array_get(ids, i)), listed[i]);
    json_decref(ids);

    char data[] = "/tmp/test-bench-cost-XXXXXX";
    cr_assert_not_null(mkdtemp(data));
    bool fashion = access(FASHION_IMAGES, R_OK) == 0, fortunes = access(FORTUNES, R_OK) == 0;
    pgn_bench_spec spec = {.suite = "train", .n_cases = 3, .repeats = 1,
                           .cases = {"cost-xor", "cost-fashion", "cost-gpt"}};
    pgn_measured_rates got = {.gflops = -1};
    pgn_run_hooks hooks = {.ctx = &got, .on_rates = keep_rates};
    pgn_run_options opts = {.data_dir = data};
    pgn_error err = {0};
    json_t *rows = json_array();
    cr_assert_eq(pgn_bench_run(&spec, dev, &opts, &hooks, rows, &err), 0, "%s", err.message);
    cr_assert_eq(json_array_size(rows), 1 + fashion + fortunes, "a probe without its data set has no row");
    cr_assert_eq(entries_in(data), 0, "the probes' checkpoints are gone");
    rmdir(data);
    cr_assert_eq(got.gflops, 0, "the probes measure no GEMM rate");
    const pgn_train_rates *t = &got.train;
    cr_assert_eq(t->step_launch_us, real_of(row_of(rows, "cost-xor"), "step_launch_us"));
    cr_assert_gt(t->step_launch_us, 0);
    cr_assert_eq(t->mlp_setup_s, real_of(row_of(rows, "cost-xor"), "setup_s"));
    cr_assert_geq(t->mlp_setup_s, 0);
    if (fashion) {
        const json_t *row = row_of(rows, "cost-fashion");
        cr_assert_eq(t->mlp_gflops, real_of(row, "gflops"));
        cr_assert_eq(t->load_mbps, real_of(row, "load_mbps"));
        cr_assert_gt(t->mlp_gflops, 0);
        cr_assert_gt(t->load_mbps, 0);
        cr_assert_gt(real_of(row, "load_seconds"), 0, "the data set's loading is in the run's result");
    }
    if (fortunes) {
        const json_t *row = row_of(rows, "cost-gpt");
        cr_assert_eq(t->gpt_gflops, real_of(row, "gflops"));
        cr_assert_gt(t->gpt_gflops, 0);
        cr_assert_gt(t->gpt_setup_s, 0, "the text, the build, the evaluation and the checkpoint take time");
        cr_assert_eq(json_integer_value(json_object_get(row, "launches_per_step")), PGN_GPT_STEP_LAUNCHES(2, false),
                     "the cost model counts a gpt's kernels as the engine queues them");
    }
    cr_assert_eq(json_integer_value(json_object_get(row_of(rows, "cost-xor"), "launches_per_step")),
                 PGN_MLP_STEP_LAUNCHES(2), "and an MLP's");
    json_decref(rows);
}

/* ---- the gpt suite (engine/bench/bench_gpt.c) ---- */

Test(bench, gpt_suite_lists_its_cases_and_columns) {
    json_t *ids = pgn_bench_cases("gpt");
    cr_assert_eq(json_array_size(ids), 2);
    cr_assert_str_eq(json_string_value(json_array_get(ids, 0)), "char-gpt");
    cr_assert_str_eq(json_string_value(json_array_get(ids, 1)), "generate");
    json_decref(ids);
    static const char *const headers[] = {"case", "steps", "ms/step", "tokens/s", "GFLOP/s", "val_loss",
                                          "params", "chars", "chars/s", "device"};
    size_t n, n_table;
    const pgn_bench_column *cols = pgn_bench_columns("gpt", &n);
    const pgn_bench_column *table = pgn_bench_table_columns("gpt", &n_table);
    cr_assert_eq(n, sizeof headers / sizeof *headers);
    cr_assert_eq(n_table, n);
    for (size_t c = 0; c < n; c++) {
        cr_assert_str_eq(cols[c].header, headers[c]);
        cr_assert_str_eq(table[c].key, cols[c].key);
    }
    json_t *none = json_array();
    char *csv = pgn_bench_csv("gpt", none);
    json_decref(none);
    cr_assert_str_eq(csv, "case,steps,ms/step,tokens/s,GFLOP/s,val_loss,params,chars,chars/s,device\n");
    free(csv);
}

/* GPT_STEPS shortened: the figures of a few steps mean nothing, their relations do. */
#define TEST_GPT_STEPS 2

Test(bench, gpt_suite_trains_then_generates_from_its_checkpoint) {
    if (access("/usr/share/games/fortunes/fortunes", R_OK))
        cr_skip_test("the Debian package fortunes is not installed (install-deps.sh --test installs it)");
    char tmp[] = "/tmp/test-bench-gpt-XXXXXX";
    cr_assert_not_null(mkdtemp(tmp));
    cr_assert_eq(setenv("TMPDIR", tmp, 1), 0); /* where the suite keeps its checkpoint */
    pgn_bench_ctx ctx = ctx_for(dev, NULL, 0, 1);
    ctx.steps = TEST_GPT_STEPS;
    json_t *rows = run_ok(pgn_bench_gpt, &ctx);
    cr_assert_eq(entries_in(tmp), 0, "the checkpoint's directory is removed");
    cr_assert_eq(rmdir(tmp), 0);
    cr_assert_eq(json_array_size(rows), 2);

    const json_t *train = json_array_get(rows, 0), *gen = json_array_get(rows, 1);
    assert_keys(train, common_keys);
    assert_keys(gen, common_keys);
    static const char *const train_keys[] = {"steps", "ms_per_step", "tokens_per_second", "gflops", "val_loss",
                                             "params", "vocab", "weights_sha256", NULL};
    assert_keys(train, train_keys);
    cr_assert_str_eq(json_string_value(json_object_get(train, "case")), "char-gpt");
    cr_assert_eq(json_integer_value(json_object_get(train, "steps")), TEST_GPT_STEPS);
    pgn_job_spec spec;
    pgn_error err = {0};
    pgn_bench_gpt_config cfg = {.steps = 1, .log_every = 1, .eval_windows = 1};
    cr_assert_eq(pgn_bench_gpt_spec(&cfg, &spec, &err), 0, "%s", err.message);
    int vocab = (int)json_integer_value(json_object_get(train, "vocab"));
    cr_assert_gt(vocab, 1);
    cr_assert_eq(json_integer_value(json_object_get(train, "params")),
                 (json_int_t)pgn_gpt_param_count(&spec.train.gpt, vocab));
    double ms = real_of(train, "ms_per_step"), tps = real_of(train, "tokens_per_second");
    cr_assert_gt(ms, 0.0);
    cr_assert_float_eq(tps, spec.train.batch_size * spec.train.gpt.context / (ms * 1e-3), 1e-6 * tps);
    cr_assert_float_eq(real_of(train, "gflops"), tps * pgn_gpt_flops_per_token(&spec.train.gpt, vocab) * 1e-9,
                       1e-9 * tps);
    /* two steps from GPT-2's small initial weights: still about a uniform guess, ln(vocab) */
    double val = real_of(train, "val_loss");
    cr_assert(val > 0.5 * log(vocab) && val < log(vocab) + 0.5, "val_loss %g, ln(vocab) %g", val, log(vocab));

    cr_assert_str_eq(json_string_value(json_object_get(gen, "case")), "generate");
    cr_assert_eq(json_integer_value(json_object_get(gen, "characters")), 200);
    cr_assert_gt(real_of(gen, "characters_per_second"), 0.0);
    cr_assert(json_equal(json_object_get(gen, "params"), json_object_get(train, "params")));
    cr_assert_null(json_object_get(gen, "ms_per_step"));
    json_decref(rows);
}

Test(bench, gpt_generate_case_alone_records_generation_only) {
    if (access("/usr/share/games/fortunes/fortunes", R_OK))
        cr_skip_test("the Debian package fortunes is not installed (install-deps.sh --test installs it)");
    const char *cases[] = {"generate"};
    pgn_bench_ctx ctx = ctx_for(dev, cases, 1, 1);
    ctx.steps = 1;
    json_t *rows = run_ok(pgn_bench_gpt, &ctx);
    cr_assert_eq(json_array_size(rows), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "case")), "generate");
    json_decref(rows);
}
