/* bench.c: `paragon bench`: runs benchmark suites on this machine's devices and prints a table per
 * suite, or the rows as JSON; --csv writes each suite's rows as the export endpoint does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "paragon.h"

static void bench_usage(FILE *out) {
    fprintf(out, "usage: paragon bench --suite NAME|all [--device ID|all] [--repeats N] [--cases A,B]\n"
                 "                     [--csv FILE] [--json] [--data-dir DIR]\n"
                 "suites:");
    for (const char *const *s = pgn_bench_suites; *s; s++) fprintf(out, " %s", *s);
    fprintf(out, "\nDEV all (the default) is every OpenCL device; host runs the host reference alone.\n");
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

/* Adds numpy_ms and gpu_vs_numpy to the mlp-forward rows when a python3 with numpy runs here
 * (Debian's /usr/bin/python3 first: a pyenv python3 on PATH may lack it); says so when not.
 * The script holds no single quote: the shell gets it as one single-quoted word. */
static void add_numpy(json_t *rows) {
    json_t *shapes = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *shape = json_string_value(json_object_get(row, "shape"));
        if (!shape || strcmp(json_string_value(json_object_get(row, "suite")), "mlp-forward")) continue;
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
        double np_ms = json_number_value(json_object_get(times, json_string_value(json_object_get(row, "shape"))));
        if (np_ms <= 0) continue;
        json_object_set_new(row, "numpy_ms", json_real(np_ms));
        json_object_set_new(row, "gpu_vs_numpy", json_real(json_number_value(json_object_get(row, "gpu_ms")) / np_ms));
    }
    json_decref(times);
    json_decref(shapes);
}

static void on_log(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

int cmd_bench(int argc, char **argv) {
    const char *suite = NULL, *device = "all", *csv = NULL, *data_dir = PGN_DEFAULT_DATA_DIR, *cases = NULL;
    int repeats = 5;
    bool as_json = false;
    for (int i = 0; i < argc; i++) {
        bool has_value = i + 1 < argc;
        if (!strcmp(argv[i], "--suite") && has_value) suite = argv[++i];
        else if (!strcmp(argv[i], "--device") && has_value) device = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && has_value) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cases") && has_value) cases = argv[++i];
        else if (!strcmp(argv[i], "--csv") && has_value) csv = argv[++i];
        else if (!strcmp(argv[i], "--data-dir") && has_value) data_dir = argv[++i];
        else if (!strcmp(argv[i], "--json")) as_json = true;
        else if (!strcmp(argv[i], "--help")) {
            bench_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "paragon bench: unknown option '%s'\n", argv[i]);
            bench_usage(stderr);
            return 2;
        }
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
    int rc = pgn_spec_parse(j, &spec, &err);
    json_decref(j);
    if (rc) {
        fprintf(stderr, "paragon bench: %s\n", err.message);
        return 2;
    }

    pgn_device_info *list = NULL, chosen;
    size_t n = 0;
    if (pgn_devices_list(&list, &n, &err)) {
        fprintf(stderr, "paragon bench: %s\n", err.message);
        return 1;
    }
    bool all = !strcmp(device, "all");
    if (!all && pgn_device_select(device, list, n, &chosen, &err)) {
        fprintf(stderr, "paragon bench: %s\n", err.message);
        free(list);
        return 1;
    }
    if (all && n == 0) {
        fprintf(stderr, "paragon bench: no OpenCL device found (--device host runs the host reference)\n");
        free(list);
        return 1;
    }
    json_t *rows = json_array();
    pgn_run_options opts = {.data_dir = data_dir};
    pgn_run_hooks hooks = {.on_log = on_log};
    int status = 0;
    for (size_t d = 0; d < (all ? n : 1) && !status; d++) {
        const pgn_device_info *info = all ? &list[d] : &chosen;
        pgn_device *dev = NULL;
        if (info->type != PGN_DEVICE_HOST && pgn_device_open(info, &dev, &err)) {
            fprintf(stderr, "paragon bench: %s\n", err.message);
            status = 1;
            break;
        }
        if (pgn_bench_run(&spec.bench, dev, &opts, &hooks, rows, &err)) {
            fprintf(stderr, "paragon bench: %s: %s\n", info->id, err.message);
            status = 1;
        }
        pgn_device_close(dev);
    }
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
