/* bench.c: `paragon bench`: runs benchmark suites on this machine's devices and prints a table per
 * suite, or the rows as JSON; --csv writes each suite's rows as the export endpoint does. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "progress.h"
#include "paragon.h"

static void bench_usage(FILE *out) {
    fprintf(out, "usage: paragon bench --suite NAME|all [--device DEV|all] [--repeats N] [--cases A,B]\n"
                 "                     [--csv FILE] [--json] [--data-dir DIR] [--kernels auto|cpu|gpu]\n"
                 "  runs benchmark suites on this machine and prints a table per suite (a progress line\n"
                 "  on stderr while they run)\n"
                 "  --suite NAME  one suite, or all:");
    for (const char *const *s = pgn_bench_suites; *s; s++) fprintf(out, " %s", *s);
    fprintf(out, "\n  --device DEV  all (the default) is every OpenCL device; host the host reference alone\n"
                 "  --repeats N   timed repeats per case; the figure is their median [5]\n"
                 "  --cases A,B   only these cases (ids as the tables print them)\n"
                 "  --csv FILE    also write the rows as the export endpoint does (FILE-SUITE.csv for all)\n"
                 "  --json        the rows as JSON instead of tables\n"
                 "  --kernels F   the kernel family the devices run [auto: their profiles'; PARAGON_KERNELS]\n"
                 "  --data-dir    where datasets are read from [" PGN_DEFAULT_DATA_DIR "]\n"
                 "exit status: 0 done, 1 a suite failed, 2 bad arguments, 130 stopped by Ctrl-C\n");
}

/* A cell of the table: numbers in at most 4 significant digits (integers whole). */
static void cell(const json_t *v, char *out, size_t size) {
    if (json_is_integer(v))
        snprintf(out, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, size, "%.4g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(out, size, "%s", json_is_true(v) ? "yes" : "no");
    else if (json_is_string(v))
        snprintf(out, size, "%s", json_string_value(v));
    else
        snprintf(out, size, "-");
}

#define CELL 48

static void print_table(const char *suite, const json_t *rows) {
    size_t n_cols, n_rows = 0, i;
    const pgn_bench_column *cols = pgn_bench_table_columns(suite, &n_cols);
    const json_t *row;
    json_array_foreach(rows, i, row) n_rows += !strcmp(json_string_value(json_object_get(row, "suite")), suite);
    if (!cols || !n_rows) return;
    size_t width[32] = {0};
    char text[CELL];
    for (size_t c = 0; c < n_cols && c < 32; c++) {
        width[c] = strlen(cols[c].header);
        json_array_foreach(rows, i, row) {
            if (strcmp(json_string_value(json_object_get(row, "suite")), suite)) continue;
            cell(json_object_get(row, cols[c].key), text, sizeof text);
            if (strlen(text) > width[c]) width[c] = strlen(text);
        }
    }
    bool left[32] = {false};
    json_array_foreach(rows, i, row) {
        if (strcmp(json_string_value(json_object_get(row, "suite")), suite)) continue;
        for (size_t c = 0; c < n_cols && c < 32; c++) left[c] = json_is_string(json_object_get(row, cols[c].key));
        break;
    }
    printf("\n%s\n", suite);
    for (size_t c = 0; c < n_cols; c++)
        printf("%s%*s", c ? "  " : "", left[c] ? -(int)width[c] : (int)width[c], cols[c].header);
    printf("\n");
    json_array_foreach(rows, i, row) {
        if (strcmp(json_string_value(json_object_get(row, "suite")), suite)) continue;
        for (size_t c = 0; c < n_cols; c++) {
            cell(json_object_get(row, cols[c].key), text, sizeof text);
            /* text columns left, figures right */
            printf("%s%*s", c ? "  " : "", left[c] ? -(int)width[c] : (int)width[c], text);
        }
        printf("\n");
    }
}

/* The rows of one suite. New reference. */
static json_t *suite_rows(const json_t *rows, const char *suite) {
    json_t *out = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
        if (!strcmp(json_string_value(json_object_get(row, "suite")), suite)) json_array_append(out, row);
    return out;
}

/* FILE for one suite, FILE-SUITE.ext for each of several. */
static int write_csv(const char *path, const char *suite, bool several, const json_t *rows) {
    char name[4096];
    const char *dot = strrchr(path, '.');
    if (several && dot && !strchr(dot, '/'))
        snprintf(name, sizeof name, "%.*s-%s%s", (int)(dot - path), path, suite, dot);
    else if (several)
        snprintf(name, sizeof name, "%s-%s", path, suite);
    else
        snprintf(name, sizeof name, "%s", path);
    json_t *mine = suite_rows(rows, suite);
    char *csv = pgn_bench_csv(suite, mine);
    json_decref(mine);
    FILE *f = csv ? fopen(name, "w") : NULL;
    int ok = f && fputs(csv, f) >= 0;
    if (f && fclose(f)) ok = 0;
    free(csv);
    if (!ok) {
        fprintf(stderr, "paragon bench: cannot write %s\n", name);
        return -1;
    }
    fprintf(stderr, "paragon bench: wrote %s\n", name);
    return 0;
}

/* numpy, as the reference the mlp-forward cases are compared with at batch 1 (a figure for
 * people, never a dependency): times x @ W + b with ReLU between layers, one sample, for each
 * shape given ("784-64-10"), median of 30 runs of 20 forwards, and prints {shape: ms} as JSON.
 * The weights are random (the time does not depend on the values). */
static const char numpy_script[] =
    "import json, sys, time\n"
    "import numpy as np\n"
    "rng = np.random.default_rng(0)\n"
    "out = {}\n"
    "for shape in sys.argv[1:]:\n"
    "    w = [int(x) for x in shape.split(\"-\")]\n"
    "    layers = [(rng.standard_normal((w[i], w[i + 1]), dtype=np.float32) * 0.05,\n"
    "               np.zeros(w[i + 1], np.float32)) for i in range(len(w) - 1)]\n"
    "    x = rng.standard_normal((1, w[0]), dtype=np.float32)\n"
    "    def forward():\n"
    "        h = x\n"
    "        for i, (W, b) in enumerate(layers):\n"
    "            h = h @ W + b\n"
    "            if i < len(layers) - 1:\n"
    "                h = np.maximum(h, 0)\n"
    "    for _ in range(20):\n"
    "        forward()\n"
    "    t = []\n"
    "    for _ in range(30):\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(20):\n"
    "            forward()\n"
    "        t.append((time.perf_counter() - t0) / 20)\n"
    "    out[shape] = sorted(t)[len(t) // 2] * 1e3\n"
    "print(json.dumps(out))\n";

/* A row's shape ("784→64→10", as Paragon-Py prints it) as the script takes it: "784-64-10", digits
 * and '-' only, so that it passes the shell as it is. */
static void ascii_shape(const char *shape, char *out, size_t size) {
    static const char arrow[] = "\u2192";
    size_t n = 0;
    for (const char *c = shape; *c && n + 1 < size;) {
        if (!strncmp(c, arrow, sizeof arrow - 1)) {
            out[n++] = '-';
            c += sizeof arrow - 1;
        } else {
            out[n++] = *c >= '0' && *c <= '9' ? *c : '-';
            c++;
        }
    }
    out[n] = 0;
}

/* Adds numpy_ms, cpu_vs_numpy and gpu_vs_numpy to the mlp-forward rows when a python3 with numpy runs here
 * (Debian's /usr/bin/python3 first: a pyenv python3 on PATH may lack it); says so when not.
 * The script holds no single quote: the shell gets it as one single-quoted word. */
static void add_numpy(json_t *rows) {
    json_t *shapes = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *given = json_string_value(json_object_get(row, "shape"));
        if (!given || strcmp(json_string_value(json_object_get(row, "suite")), "mlp-forward")) continue;
        char shape[128];
        ascii_shape(given, shape, sizeof shape);
        bool seen = false;
        for (size_t k = 0; k < json_array_size(shapes); k++)
            seen |= !strcmp(json_string_value(json_array_get(shapes, k)), shape);
        if (!seen) json_array_append_new(shapes, json_string(shape));
    }
    json_t *times = NULL;
    const char *pythons[] = {"/usr/bin/python3", "python3"};
    for (size_t p = 0; p < 2 && !times && json_array_size(shapes); p++) {
        pgn_text cmd = {0};
        pgn_text_printf(&cmd, "%s -c '%s'", pythons[p], numpy_script);
        for (size_t k = 0; k < json_array_size(shapes); k++)
            pgn_text_printf(&cmd, " %s", json_string_value(json_array_get(shapes, k))); /* digits and '-' */
        pgn_text_puts(&cmd, " 2>/dev/null");
        char *command = pgn_text_take(&cmd);
        FILE *f = command ? popen(command, "r") : NULL;
        char out[4096] = "";
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        out[n] = '\0';
        if (f) pclose(f);
        free(command);
        times = json_loads(out, 0, NULL);
    }
    if (!times && json_array_size(shapes))
        fprintf(stderr, "paragon bench: numpy is not installed (python3-numpy): no numpy_ms column\n");
    json_array_foreach(rows, i, row) {
        const char *given = json_string_value(json_object_get(row, "shape"));
        char shape[128];
        ascii_shape(given ? given : "", shape, sizeof shape);
        double np_ms = json_number_value(json_object_get(times, shape));
        if (np_ms <= 0) continue;
        json_object_set_new(row, "numpy_ms", json_real(np_ms));
        json_object_set_new(row, "cpu_vs_numpy", json_real(json_number_value(json_object_get(row, "cpu_ms")) / np_ms));
        json_object_set_new(row, "gpu_vs_numpy", json_real(json_number_value(json_object_get(row, "gpu_ms")) / np_ms));
    }
    json_decref(times);
    json_decref(shapes);
}

/* The progress of a run over several devices: device `index` of `devices` is at `fraction`. */
typedef struct bench_ctx {
    cli_progress bar;
    size_t index, devices;
} bench_ctx;

static volatile sig_atomic_t stop_asked;

static void on_sigint(int sig) {
    stop_asked = 1;
    signal(sig, SIG_DFL); /* a second Ctrl-C ends it at once */
}

static bool should_stop(void *ctx) {
    (void)ctx;
    return stop_asked;
}

static void on_log(void *ctx, const char *line) { cli_progress_log(&((bench_ctx *)ctx)->bar, line); }

static void on_progress(void *ctx, double fraction) {
    bench_ctx *b = ctx;
    cli_progress_fraction(&b->bar, ((double)b->index + fraction) / (double)b->devices);
}

int cmd_bench(int argc, char **argv) {
    const char *suite = NULL, *device = "all", *csv = NULL, *data_dir = PGN_DEFAULT_DATA_DIR, *cases = NULL;
    const char *repeats_text = NULL;
    bool as_json = false;
    const cli_opt options[] = {{"suite", .value = &suite},
                               {"device", .value = &device},
                               {"repeats", .value = &repeats_text, .check = cli_check_integer},
                               {"cases", .value = &cases},
                               {"csv", .value = &csv},
                               {"data-dir", .value = &data_dir},
                               {"json", .flag = &as_json},
                               {"kernels", .check = cli_kernels_option},
                               {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"bench", bench_usage, options, NULL});
    if (rc != CLI_ARGS_GO_ON) return rc;
    int repeats = repeats_text ? (int)strtol(repeats_text, NULL, 10) : 5;
    if (optind < argc) {
        fprintf(stderr, "paragon bench: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    /* The spec parser checks what a bench job would: the suite, the cases, the repeats. */
    json_t *j = json_pack("{s:s, s:s, s:s, s:i}", "kind", "bench", "suite", suite ? suite : "", "device", device,
                          "repeats", repeats);
    if (cases) {
        json_t *arr = json_array();
        char *copy = strdup(cases), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            json_array_append_new(arr, json_string(tok));
        free(copy);
        json_object_set_new(j, "cases", arr);
    }
    pgn_job_spec spec;
    pgn_error err = {0};
    rc = pgn_spec_parse(j, &spec, &err);
    json_decref(j);
    if (rc) {
        fprintf(stderr, "paragon bench: %s\n", err.message);
        return 2;
    }

    pgn_device_info *list = NULL;
    size_t n = 0;
    if (pgn_devices_named(device, &list, &n, &err)) {
        fprintf(stderr, "paragon bench: %s\n", err.message);
        pgn_spec_free(&spec);
        return 1;
    }
    if (n == 0) {
        fprintf(stderr, "paragon bench: no OpenCL device found (--device host runs the host reference)\n");
        pgn_spec_free(&spec);
        return 1;
    }
    json_t *rows = json_array();
    pgn_run_options opts = {.data_dir = data_dir};
    bench_ctx ctx = {.devices = n};
    cli_progress_start(&ctx.bar, stderr);
    pgn_run_hooks hooks = {.ctx = &ctx, .on_log = on_log, .on_progress = on_progress, .should_stop = should_stop};
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    int status = 0;
    for (size_t d = 0; d < n && !status; d++) {
        ctx.index = d;
        const pgn_device_info *info = &list[d];
        pgn_device *dev = NULL;
        if (pgn_device_open_for_run(info, &dev, &err)) {
            fprintf(stderr, "paragon bench: %s\n", err.message);
            status = 1;
            break;
        }
        if (pgn_bench_run(&spec.bench, dev, &opts, &hooks, rows, &err)) {
            cli_progress_end(&ctx.bar);
            fprintf(stderr, "paragon bench: %s: %s\n", info->id,
                    stop_asked ? "stopped by Ctrl-C; the rows measured so far follow" : err.message);
            status = stop_asked ? CLI_EXIT_INTERRUPTED : CLI_EXIT_FAILED;
        }
        pgn_device_close(dev);
    }
    sigaction(SIGINT, &old_sa, NULL);
    cli_progress_end(&ctx.bar);
    free(list);
    add_numpy(rows);
    if (as_json) {
        json_t *out = json_pack("{s:O}", "rows", rows);
        char *s = pgn_json_dumps(out);
        printf("%s\n", s);
        free(s);
        json_decref(out);
    } else {
        for (const char *const *s = pgn_bench_suites; *s; s++) print_table(*s, rows);
    }
    if (csv) {
        bool several = !strcmp(spec.bench.suite, "all");
        for (const char *const *s = pgn_bench_suites; *s; s++) {
            if (!several && strcmp(*s, spec.bench.suite)) continue;
            if (write_csv(csv, *s, several, rows)) status = 1;
        }
    }
    json_decref(rows);
    pgn_spec_free(&spec);
    return status;
}
