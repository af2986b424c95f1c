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
