/* bench.c: the benchmark suites' registry and what they share: the column tables (for the CLI's
 * table, the CSV export and the dashboard), the CSV writer, row helpers, timing, and the dispatch
 * behind `paragon bench` and the bench job kind. Each suite has its own file (bench.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "embedded.h"
#include "inet/inet.h"

const char *const pgn_bench_suites[] = {"mlp-forward", "tensor-micro", "gemm", "inet", "train", "gpt", NULL};

bool pgn_bench_suite_known(const char *name) {
    for (const char *const *s = pgn_bench_suites; *s; s++)
        if (!strcmp(*s, name)) return true;
    return false;
}

/* ---- columns ------------------------------------------------------------------------------ */

/* A column written in shortest form, and one with its own format. */
#define COL(h, k) {.header = (h), .key = (k)}
#define FMT(h, k, f) {.header = (h), .key = (k), .format = (f)}

/* Paragon-Py's CSV, column for column and format for format. */
static const pgn_bench_column mlp_csv[] = {
    COL("id", "case"),
    FMT("shape", "shape", PGN_CSV_SHAPE),
    FMT("estMB", "est_mib", PGN_CSV_FIXED2),
    FMT("cpu_ms", "cpu_ms", PGN_CSV_FIXED2),
    FMT("gpu_ms", "gpu_ms", PGN_CSV_FIXED2),
    FMT("speedup", "speedup", PGN_CSV_FIXED2),
    FMT("mae", "mae", PGN_CSV_SCI2),
    FMT("max", "max", PGN_CSV_SCI2),
    FMT("gpu_init_ms", "gpu_init_ms", PGN_CSV_FIXED2),
    FMT("adapter", "adapter", PGN_CSV_QUOTED),
};
static const pgn_bench_column mlp_table[] = {
    COL("id", "case"),         COL("shape", "shape"), COL("estMB", "est_mib"), COL("cpu_ms", "cpu_ms"),
    COL("gpu_ms", "gpu_ms"),   COL("speedup", "speedup"), COL("mae", "mae"),  COL("max", "max"),
    COL("gpu_init_ms", "gpu_init_ms"), COL("cpu_b256/s", "cpu_batch_sps"), COL("gpu_b256/s", "gpu_batch_sps"),
    COL("numpy_ms", "numpy_ms"), COL("cpu/numpy", "cpu_vs_numpy"), COL("gpu/numpy", "gpu_vs_numpy"), COL("device", "device"),
};
static const pgn_bench_column micro_cols[] = {
    COL("case", "case"),           COL("elements", "elements"),     COL("host_ms", "host_ms"),
    COL("device_ms", "device_ms"), COL("speedup", "speedup"),       COL("host_GB/s", "host_gbps"),
    COL("device_GB/s", "device_gbps"), COL("device_elem/s", "device_elems_per_s"),
    COL("launch_us", "launch_us"), COL("device", "device"),
};
static const pgn_bench_column gemm_cols[] = {
    COL("case", "case"), COL("m", "m"), COL("n", "n"), COL("k", "k"), COL("device_ms", "device_ms"),
    COL("GFLOP/s", "gflops"), COL("host_GFLOP/s", "host_gflops"), COL("identical", "bit_identical"),
    COL("chosen", "chosen"), COL("device", "device"),
};
static const pgn_bench_column inet_cols[] = {
    COL("case", "case"), COL("work_items", "work_items"), COL("interactions", "interactions"),
    COL("seconds", "seconds"), COL("MIPS", "mips"), COL("peak_nodes", "peak_nodes"), COL("result", "result"),
    COL("device", "device"),
};
static const pgn_bench_column train_cols[] = {
    COL("case", "case"), COL("epochs", "epochs"), COL("s/epoch", "seconds_per_epoch"),
    COL("samples/s", "samples_per_second"), COL("GFLOP/s", "gflops"), COL("test_acc", "test_accuracy"),
    COL("device", "device"),
};
static const pgn_bench_column gpt_cols[] = {
    COL("case", "case"), COL("steps", "steps"), COL("ms/step", "ms_per_step"), COL("tokens/s", "tokens_per_second"),
    COL("GFLOP/s", "gflops"), COL("val_loss", "val_loss"), COL("params", "params"), COL("chars", "characters"),
    COL("chars/s", "characters_per_second"), COL("device", "device"),
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
               {"train", train_cols, N(train_cols)},
               {"gpt", gpt_cols, N(gpt_cols)}};
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

/* A string in quotes, quotes doubled; with arrows, '-' between layers written as Paragon-Py's '→'. */
static void put_quoted(pgn_text *b, const char *s, bool arrows) {
    pgn_text_put(b, "\"", 1);
    for (const char *c = s; *c; c++) {
        if (*c == '"') pgn_text_put(b, "\"\"", 2);
        else if (arrows && *c == '-') pgn_text_puts(b, "\u2192");
        else pgn_text_put(b, c, 1);
    }
    pgn_text_put(b, "\"", 1);
}

/* One CSV field in its column's format (pgn_csv_format): numbers in shortest round-trip form
 * unless the format fixes them, strings quoted when they need it or the format says so,
 * booleans true/false, a missing value empty. */
static void put_field(pgn_text *b, const json_t *v, pgn_csv_format format) {
    char num[64];
    if (json_is_number(v) && (format == PGN_CSV_FIXED2 || format == PGN_CSV_SCI2)) {
        snprintf(num, sizeof num, format == PGN_CSV_FIXED2 ? "%.2f" : "%.2E", json_number_value(v));
        pgn_text_puts(b, num);
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        pgn_text_puts(b, num);
    } else if (json_is_real(v)) {
        shortest(json_real_value(v), num, sizeof num);
        pgn_text_puts(b, num);
    } else if (json_is_boolean(v)) {
        pgn_text_puts(b, json_is_true(v) ? "true" : "false");
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (format == PGN_CSV_QUOTED || format == PGN_CSV_SHAPE || strpbrk(s, ",\"\r\n"))
            put_quoted(b, s, format == PGN_CSV_SHAPE);
        else
            pgn_text_puts(b, s);
    }
}

/* Keys that were renamed, for rows stored before: the old key and the factor from its unit to
 * the new one. est_mb was decimal MB of the same bytes est_mib counts in MiB. */
static const struct {
    const char *key, *old_key;
    double factor;
} renamed[] = {{"est_mib", "est_mb", 1e6 / 1048576.0}};

/* row's value for key, or made from the key it was stored under before (a new reference). */
static json_t *row_value(const json_t *row, const char *key) {
    json_t *v = json_object_get(row, key);
    if (v) return json_incref(v);
    for (size_t i = 0; i < sizeof renamed / sizeof *renamed; i++) {
        const json_t *old = json_object_get(row, renamed[i].old_key);
        if (!strcmp(renamed[i].key, key) && json_is_number(old))
            return json_real(json_number_value(old) * renamed[i].factor);
    }
    return NULL;
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
            json_t *v = row_value(row, cols[c].key);
            put_field(&b, v, cols[c].format);
            json_decref(v);
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

/* Whether the run asked for case_id (no list asks for every case). */
static bool asked_for(const pgn_bench_ctx *ctx, const char *case_id) {
    bool wanted = !ctx->n_cases;
    for (size_t i = 0; i < ctx->n_cases && !wanted; i++) wanted = !strcmp(ctx->cases[i], case_id);
    return wanted;
}

bool pgn_bench_named(const pgn_bench_ctx *ctx, const char *case_id) {
    return ctx->n_cases && asked_for(ctx, case_id);
}

bool pgn_bench_wants(const pgn_bench_ctx *ctx, const char *case_id) {
    if (ctx->listing) {
        json_array_append_new(ctx->listing, json_string(case_id));
        return false;
    }
    bool wanted = asked_for(ctx, case_id);
    pgn_bench_count *c = ctx->count;
    if (wanted && c && c->total && ctx->hooks && ctx->hooks->on_progress)
        ctx->hooks->on_progress(ctx->hooks->ctx, (double)(c->begun < c->total ? c->begun : c->total) / (double)c->total);
    if (wanted && c) c->begun++;
    return wanted;
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
    if (!strcmp(name, "gpt")) return pgn_bench_gpt;
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
    pgn_measured_rates rates = {0};
    snprintf(rates.device, sizeof rates.device, "%s", ctx.info->id);
    ctx.rates = &rates;
    bool all = !strcmp(spec->suite, "all");
    /* the progress is the share of cases begun (the listing names the host's too, so a device
     * that skips one ends below 1 until the end) */
    pgn_bench_count count = {0};
    json_t *ids = pgn_bench_cases(spec->suite);
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) count.total += asked_for(&ctx, json_string_value(id));
    json_decref(ids);
    ctx.count = &count;
    for (const char *const *s = pgn_bench_suites; *s; s++) {
        if (!all && strcmp(*s, spec->suite)) continue;
        if (pgn_bench_check_stop(&ctx, err) || suite_function(*s)(&ctx, rows, err)) return -1;
    }
    if (hooks && hooks->on_progress) hooks->on_progress(hooks->ctx, 1.0);
    if (!all && !suite_function(spec->suite)) {
        pgn_error_set(err, PGN_E_INVALID_SPEC, "suite", "suite: unknown suite '%s'", spec->suite);
        return -1;
    }
    if (hooks && hooks->on_rates) hooks->on_rates(hooks->ctx, &rates);
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

/* ---- timing -----------------------------------------------------------------------------
 * A timed run is `calls` calls of an op or pass followed by one wait for the device, so the
 * device's figures include the launches but never a finish per op (docs/architecture.md). */

/* Seconds per call: the median of reps timed runs of `calls` calls, after one untimed run. */
int pgn_bench_time_calls(pgn_bench_run_fn run, void *arg, int calls, int reps, double *sec,
                      pgn_error *err) {
    if (reps < 1) reps = 1;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "bench: out of memory");
        return -1;
    }
    int rc = run(arg, calls, err);
    for (int r = 0; r < reps && !rc; r++) {
        double t0 = pgn_now_s();
        rc = run(arg, calls, err);
        t[r] = (pgn_now_s() - t0) / calls;
    }
    if (!rc) *sec = pgn_median(t, (size_t)(reps));
    free(t);
    return rc;
}

/* Micro-benchmark runs last about this long (one kernel of 1K elements is a few µs, under the
 * clock's and the scheduler's noise); at most this many calls are queued per run. */
#define MICRO_TARGET_S 0.005
#define MICRO_MAX_CALLS 2000

/* The number of calls that makes a run last about MICRO_TARGET_S (one untimed run first). */
int pgn_bench_calibrate_calls(pgn_bench_run_fn run, void *arg, int *calls, pgn_error *err) {
    double sec;
    if (pgn_bench_time_calls(run, arg, 1, 1, &sec, err)) return -1;
    double n = sec > 0 ? ceil(MICRO_TARGET_S / sec) : MICRO_MAX_CALLS;
    *calls = n > MICRO_MAX_CALLS ? MICRO_MAX_CALLS : n < 1 ? 1 : (int)n;
    return 0;
}


int pgn_bench_oom(pgn_error *err) {
    pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "bench: out of memory");
    return -1;
}
