/* paragon.c: the local command-line tool. It shares the engine and the job-spec parser with
 * paragond, so `paragon run spec.json` runs exactly what the server would, on this machine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "paragon.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: paragon <command> [options]\n"
            "\n"
            "commands:\n"
            "  devices [--json]                     list OpenCL devices and the host reference\n"
            "  run FILE [--json] [--device DEV] [--data-dir DIR]\n"
            "                                       run a job spec (JSON) locally; datasets are\n"
            "                                       read from DIR (default ./data)\n"
            "      --checkpoint-dir DIR             write checkpoint.safetensors there\n"
            "      --resume                         continue from that checkpoint if present\n"
            "      --profile                        time every op (waits after each: slower)\n"
            "      --gemm-tile auto|NAME            the device GEMM's tile: auto (train jobs) measures\n"
            "                                       them first (about half a second), as paragond's\n"
            "                                       calibration does; 8x32 is the default shape\n"
            "  run FILE.hvm [-s] [--device DEV] [--work-items N]\n"
            "               [--max-interactions N] [--max-nodes N] [--timeout SECONDS]\n"
            "                                       reduce an HVM2 program and print its normal\n"
            "                                       form (-s: interactions, time and MIPS too);\n"
            "                                       unlimited but by memory unless a flag says\n"
            "  bench --suite NAME|all [--device ID|all] [--repeats N] [--cases A,B] [--csv FILE] [--json]\n"
            "                                       run benchmark suites (mlp-forward, tensor-micro,\n"
            "                                       gemm, inet, train, gpt) and print their tables\n"
            "  generate CHECKPOINT --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K]\n"
            "           [--seed S] [--device DEV]   continue a text with a gpt checkpoint\n"
            "  version                              print the version\n"
            "\n"
            "DEV is auto, cpu, gpu, host, or a device id from `paragon devices`.\n");
}

static void human_bytes(uint64_t b, char *out, size_t size) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, "%.1f %s", v, units[u]);
}

static int cmd_devices(int argc, char **argv) {
    int as_json = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            as_json = 1;
        else {
            fprintf(stderr, "paragon devices: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    pgn_error err = {0};
    pgn_device_info *list = NULL;
    size_t n = 0;
    if (pgn_devices_list(&list, &n, &err)) {
        fprintf(stderr, "paragon devices: %s\n", err.message);
        return 1;
    }
    pgn_device_info host;
    pgn_device_info_host(&host);
    if (as_json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(arr, pgn_device_info_json(&list[i]));
        json_array_append_new(arr, pgn_device_info_json(&host));
        char *s = json_dumps(arr, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(arr);
    } else {
        printf("%-14s %-6s %4s %10s %9s  %-40s %s\n", "ID", "TYPE", "CU", "MEMORY", "CLOCK", "NAME",
               "PLATFORM");
        for (size_t i = 0; i <= n; i++) {
            const pgn_device_info *d = i < n ? &list[i] : &host;
            char mem[32] = "-", clock[32] = "-";
            if (d->global_mem_bytes) human_bytes(d->global_mem_bytes, mem, sizeof mem);
            if (d->max_clock_mhz) snprintf(clock, sizeof clock, "%u MHz", d->max_clock_mhz);
            printf("%-14s %-6s %4u %10s %9s  %-40.40s %s\n", d->id, pgn_device_type_name(d->type),
                   d->compute_units, mem, clock, d->name, d->platform);
        }
    }
    free(list);
    if (n == 0) {
        fprintf(stderr, "paragon devices: no OpenCL device found; only the host reference is "
                        "available (install pocl-opencl-icd for a CPU device)\n");
        return 1;
    }
    return 0;
}

typedef struct {
    int quiet_stdout; /* --json: progress goes to stderr so stdout holds only the result */
} cli_ctx;

static void on_log(void *ctx, const char *line) {
    cli_ctx *c = ctx;
    fprintf(c->quiet_stdout ? stderr : stdout, "%s\n", line);
    fflush(c->quiet_stdout ? stderr : stdout);
}

/* An .hvm program's limits: as `hvm run-c`, none but memory (the service keeps its own), unless
 * --max-interactions N, --max-nodes N (16 .. 2^31) or --timeout SECONDS set one. Returns 0, or 2
 * after saying what is wrong (a flag on a spec file, a value out of range). */
static int hvm_limits(bool hvm, const char *const flags[3], pgn_inet_spec *lim) {
    static const char *const names[3] = {"--max-interactions", "--max-nodes", "--timeout"};
    for (int i = 0; i < 3 && !hvm; i++)
        if (flags[i]) {
            fprintf(stderr, "paragon run: %s: only for .hvm programs (a job spec carries \"limits\")\n", names[i]);
            return 2;
        }
    if (!hvm) return 0;
    lim->max_interactions = 0;
    lim->max_nodes = 0;
    lim->timeout_s = 0;
    for (int i = 0; i < 3; i++) {
        if (!flags[i]) continue;
        char *end;
        errno = 0;
        double v = i == 2 ? strtod(flags[i], &end) : (double)strtoull(flags[i], &end, 10);
        bool ok = !errno && end != flags[i] && !*end && (i == 2 ? v > 0 && v <= 1e9
                                                          : i == 1 ? v >= 16 && v <= 2147483648.0
                                                                   : v >= 1 && v <= 1125899906842624.0);
        if (!ok) {
            fprintf(stderr, "paragon run: %s: '%s' must be %s\n", names[i], flags[i],
                    i == 2 ? "a number of seconds > 0" : i == 1 ? "a count of nodes from 16 to 2^31"
                                                                : "a count of interactions from 1 to 2^50");
            return 2;
        }
        if (i == 0) lim->max_interactions = (uint64_t)v;
        else if (i == 1) lim->max_nodes = (uint64_t)v;
        else lim->timeout_s = v;
    }
    return 0;
}

static int cmd_run(int argc, char **argv) {
    const char *file = NULL, *device = NULL, *data_dir = PGN_DEFAULT_DATA_DIR, *checkpoint_dir = NULL;
    int as_json = 0;
    bool resume = false, profile = false, stats = false;
    const char *work_items = NULL, *gemm_tile = "auto";
    const char *limit_flags[3] = {NULL, NULL, NULL}; /* --max-interactions, --max-nodes, --timeout */
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            as_json = 1;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = argv[++i];
        else if (!strncmp(argv[i], "--device=", 9))
            device = argv[i] + 9;
        else if (!strcmp(argv[i], "--data-dir") && i + 1 < argc)
            data_dir = argv[++i];
        else if (!strcmp(argv[i], "--checkpoint-dir") && i + 1 < argc)
            checkpoint_dir = argv[++i];
        else if (!strcmp(argv[i], "--resume"))
            resume = true;
        else if (!strcmp(argv[i], "--profile"))
            profile = true;
        else if (!strcmp(argv[i], "-s"))
            stats = true;
        else if (!strcmp(argv[i], "--work-items") && i + 1 < argc)
            work_items = argv[++i];
        else if (!strcmp(argv[i], "--gemm-tile") && i + 1 < argc)
            gemm_tile = argv[++i];
        else if (!strcmp(argv[i], "--max-interactions") && i + 1 < argc)
            limit_flags[0] = argv[++i];
        else if (!strcmp(argv[i], "--max-nodes") && i + 1 < argc)
            limit_flags[1] = argv[++i];
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            limit_flags[2] = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "paragon run: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (!file)
            file = argv[i];
        else {
            fprintf(stderr, "paragon run: only one spec file, got '%s' too\n", argv[i]);
            return 2;
        }
    }
    if (!file) {
        fprintf(stderr, "paragon run: missing the job spec file\n");
        usage(stderr);
        return 2;
    }
    size_t len = 0;
    char *text = pgn_read_file(file, &len);
    if (!text) {
        fprintf(stderr, "paragon run: cannot read '%s': %s\n", file, strerror(errno));
        return 1;
    }
    pgn_error err = {0};
    pgn_job_spec spec;
    /* FILE.hvm is a program in HVM2's text format: an inet job, as `hvm run FILE.hvm` */
    size_t flen = strlen(file);
    bool hvm = flen > 4 && !strcmp(file + flen - 4, ".hvm");
    int rc;
    if (hvm) {
        json_t *j = json_pack("{s:s, s:s%, s:s}", "kind", "inet", "program", text, len, "name", file);
        rc = j ? pgn_spec_parse(j, &spec, &err) : -1;
        json_decref(j);
        if (rc && !j) pgn_error_set(&err, PGN_E_INVALID_PROGRAM, "", "the program is not valid UTF-8");
    } else {
        rc = pgn_spec_parse_text(text, len, &spec, &err);
    }
    free(text);
    if (rc) {
        fprintf(stderr, "paragon run: %s: %s\n", file, err.message);
        return 1;
    }
    if (device) snprintf(spec.device, sizeof spec.device, "%s", device);
    if (hvm_limits(hvm, limit_flags, &spec.inet)) {
        pgn_spec_free(&spec);
        return 2;
    }
    if (work_items) {
        char *end;
        long wi = strtol(work_items, &end, 10);
        if (!hvm || *end || wi < 1 || wi > (1 << 20)) {
            fprintf(stderr, "paragon run: --work-items: %s\n",
                    hvm ? "must be a number from 1 to 1048576" : "only for .hvm programs");
            pgn_spec_free(&spec);
            return 2;
        }
        spec.inet.work_items = (int)wi;
    }

    pgn_device_info *list = NULL, chosen;
    size_t n = 0;
    if (pgn_devices_list(&list, &n, &err) ||
        pgn_device_select(spec.device, list, n, &chosen, &err)) {
        fprintf(stderr, "paragon run: %s\n", err.message);
        free(list);
        pgn_spec_free(&spec);
        return 1;
    }
    free(list);
    pgn_device *dev = NULL;
    int tile = strcmp(gemm_tile, "auto") ? pgn_gemm_tile_find(gemm_tile) : -1;
    if (strcmp(gemm_tile, "auto") && tile < 0) {
        fprintf(stderr, "paragon run: --gemm-tile: no tile '%s' (auto or one of:", gemm_tile);
        for (int t = 0; t < pgn_gemm_tile_count(); t++) fprintf(stderr, " %s", pgn_gemm_tile_name(t));
        fprintf(stderr, ")\n");
        pgn_spec_free(&spec);
        return 2;
    }
    if (chosen.type != PGN_DEVICE_HOST &&
        (pgn_device_open(&chosen, &dev, &err) ||
         (tile >= 0 ? pgn_gemm_tile_set(dev, tile, &err)
                    : spec.kind == PGN_JOB_TRAIN ? pgn_gemm_tune(dev, 5, NULL, &err) : 0))) {
        fprintf(stderr, "paragon run: %s\n", err.message);
        pgn_device_close(dev);
        pgn_spec_free(&spec);
        return 1;
    }
    /* A program's IO is the process's, as `hvm run-c`; with --json its output goes into the
     * result instead (so stdout stays JSON), and its files stay under the working directory. */
    pgn_run_options opts = {.data_dir = data_dir, .checkpoint_dir = checkpoint_dir,
                            .resume = resume, .profile = profile,
                            .inet_io = as_json ? PGN_INET_IO_CONFINED : PGN_INET_IO_PROCESS, .io_dir = "."};
    if (resume && !checkpoint_dir) {
        fprintf(stderr, "paragon run: --resume needs --checkpoint-dir\n");
        pgn_device_close(dev);
        pgn_spec_free(&spec);
        return 2;
    }
    cli_ctx ctx = {as_json};
    pgn_run_hooks hooks = {.ctx = &ctx, .on_log = on_log};
    json_t *result = NULL;
    rc = pgn_job_run(&spec, dev, &opts, &hooks, &result, &err);
    pgn_device_close(dev);
    if (rc) {
        fprintf(stderr, "paragon run: %s failed: %s\n", spec.name, err.message);
        pgn_spec_free(&spec);
        return 1;
    }
    pgn_spec_free(&spec);
    if (hvm && !as_json) { /* HVM2's own output format */
        printf("Result: %s\n", json_string_value(json_object_get(result, "normal_form")));
        if (stats)
            printf("- ITRS: %lld\n- TIME: %.2fs\n- MIPS: %.2f\n",
                   (long long)json_integer_value(json_object_get(result, "interactions")),
                   json_real_value(json_object_get(result, "seconds")),
                   json_real_value(json_object_get(result, "mips")));
        json_decref(result);
        return 0;
    }
    char *s = as_json ? pgn_json_dumps(result) : json_dumps(result, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    printf("%s\n", s);
    free(s);
    json_decref(result);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "devices")) return cmd_devices(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "generate")) return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("paragon %s\n", PGN_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "paragon: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
