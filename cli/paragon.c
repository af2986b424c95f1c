/* paragon.c: the local command-line tool. It shares the engine and the job-spec parser with
 * paragond, so `paragon run spec.json` runs exactly what the server would, on this machine. */
#include <errno.h>
#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "http.h"
#include "progress.h"
#include "paragon.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

/* The KERNELS column: one family when every group of ops runs it, else gemm/rows/inet's; an
 * override marked with *. */
static void families_column(const pgn_device_profile *p, char *out, size_t size) {
    bool same = true;
    for (int g = 1; g < PGN_OPS_COUNT; g++) same &= p->family[g] == p->family[0];
    size_t off = 0;
    out[0] = '\0';
    for (int g = 0; g < (same ? 1 : PGN_OPS_COUNT) && off < size; g++)
        off += (size_t)snprintf(out + off, size - off, "%s%s%s", g ? "/" : "", pgn_kernel_family_name(p->family[g]),
                                p->family_from[g] == PGN_FROM_OVERRIDE ? "*" : "");
}

static int cmd_devices(int argc, char **argv);
static int cmd_run(int argc, char **argv);
static int cmd_compile(int argc, char **argv);

/* Every command: dispatch, the overview below and `paragon help CMD` come from this table. */
typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the command's name */
    bool remote;                      /* talks to paragond, not to this machine's devices */
    const char *what;
} command;

static const command commands[] = {
    {"devices", cmd_devices, false, "list OpenCL devices and the host reference"},
    {"run", cmd_run, false, "run a job spec (JSON), an HVM2 (.hvm) or pgl (.pgl) program here"},
    {"compile", cmd_compile, false, "compile a pgl program (.pgl) to HVM2 text"},
    {"bench", cmd_bench, false, "run benchmark suites on this machine's devices"},
    {"generate", cmd_generate, false, "continue a text with a gpt checkpoint (--job: on paragond)"},
    {"submit", cmd_submit, true, "submit a job (--wait, --follow: its log and progress)"},
    {"jobs", cmd_jobs, true, "list jobs (--state, --kind, --limit)"},
    {"status", cmd_status, true, "a job's state, device, progress and result"},
    {"logs", cmd_logs, true, "a job's log (-f: and the lines to come)"},
    {"metrics", cmd_metrics, true, "a job's metrics as a table, --csv or --json"},
    {"cancel", cmd_cancel, true, "cancel a job"},
    {"resume", cmd_resume, true, "queue a cancelled job again, from its last checkpoint"},
    {"delete", cmd_delete, true, "delete an ended job and what it stored"},
    {"export", cmd_export, true, "benchmark rows, a checkpoint, or weights PyTorch loads"},
    {"datasets", cmd_datasets, true, "the datasets paragond holds (rm NAME: delete one)"},
    {"upload", cmd_upload, true, "upload a dataset file (idx, idx.gz, text) for specs to name"},
    {"nodes", cmd_nodes, true, "the paragond nodes on the server's store, their devices and jobs"},
    {"version", cmd_version, false, "print the version"},
    {"help", cmd_help, false, "this overview, or a command's help (paragon help run)"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out, "usage: paragon <command> [options]   (paragon <command> --help: its options)\n");
    for (int remote = 0; remote < 2; remote++) {
        fprintf(out, remote ? "\nwith paragond (--url URL, else $PARAGON_URL, else " CLI_DEFAULT_URL ";\n"
                              "the token from --token-file FILE, else $PARAGON_TOKEN, else the file\n"
                              "$PARAGON_TOKEN_FILE names, else data/token):\n"
                            : "\non this machine:\n");
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (commands[i].remote == remote) fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].what);
    }
    fprintf(out, "\nDEV (--device) is auto, cpu, gpu, host, or a device id from `paragon devices`.\n"
                 "exit status: 0 done, 1 failed or refused, 2 bad arguments, 3 the job was cancelled,\n"
                 "4 no answer from paragond, 130 stopped by Ctrl-C\n");
}

static int cmd_version(int argc, char **argv) {
    (void)argc, (void)argv;
    printf("paragon %s\n", PGN_VERSION);
    return CLI_EXIT_OK;
}

static const command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

static int cmd_help(int argc, char **argv) {
    if (argc < 2) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    const command *c = find_command(argv[1]);
    if (!c || c->fn == cmd_help || c->fn == cmd_version) {
        usage(c ? stdout : stderr);
        return c ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    char help[] = "--help";
    char *args[] = {argv[1], help, NULL};
    return c->fn(2, args);
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

static void devices_usage(FILE *out) {
    fprintf(out, "usage: paragon devices [--kernels auto|cpu|gpu] [--data-dir DIR] [--json]\n"
                 "  the OpenCL devices (id, type, compute units, memory, clock, kernel family, name,\n"
                 "  platform), then the host reference\n"
                 "  --kernels FAMILY  the kernel family to show them with [auto; PARAGON_KERNELS]\n"
                 "  --data-dir DIR    whose tunings.json holds the devices' tunings [" PGN_DEFAULT_DATA_DIR "]\n"
                 "  --json            as a JSON array, each device with its whole profile (each value\n"
                 "                    and where it came from: default, tuning, override)\n"
                 "exit status: 0 listed, 1 no OpenCL device (the host reference alone), 2 bad arguments\n");
}

static int cmd_compile(int argc, char **argv) {
    const char *usage_text = "usage: paragon compile PROGRAM.pgl\n"
                             "  prints the HVM2 net of a pgl program (docs/language.md), which paragon run\n"
                             "  and HVM2 itself run; a compile error names its line and column\n"
                             "exit status: 0 compiled, 1 a compile error or an unreadable file, 2 bad arguments\n";
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fputs(usage_text, stderr);
        return 2;
    }
    size_t len = 0;
    char *text = pgn_read_file(argv[1], &len);
    if (!text) {
        fprintf(stderr, "paragon compile: cannot read '%s': %s\n", argv[1], strerror(errno));
        return 1;
    }
    pgn_error err = {0};
    char *net = pgn_pgl_compile(text, len, &err);
    free(text);
    if (!net) {
        fprintf(stderr, "paragon compile: %s: %s\n", argv[1], err.message);
        return 1;
    }
    fputs(net, stdout);
    free(net);
    return 0;
}

static int cmd_devices(int argc, char **argv) {
    const char *data_dir = PGN_DEFAULT_DATA_DIR;
    bool as_json = false;
    const cli_opt options[] = {{"json", .flag = &as_json},
                               {"kernels", .check = cli_kernels_option},
                               {"data-dir", .value = &data_dir},
                               {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"devices", devices_usage, options, NULL});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (optind < argc) {
        fprintf(stderr, "paragon devices: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
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
    /* each device's profile as opening it would build it (PARAGON_KERNELS, --kernels) */
    pgn_device_profile *profiles = calloc(n + 1, sizeof *profiles);
    for (size_t i = 0; profiles && i <= n; i++)
        if (pgn_device_profile_of(i < n ? &list[i] : &host, NULL, &profiles[i], &err)) {
            fprintf(stderr, "paragon devices: %s\n", err.message);
            free(profiles);
            free(list);
            return CLI_EXIT_USAGE;
        }
    if (!profiles) {
        fprintf(stderr, "paragon devices: out of memory\n");
        free(list);
        return 1;
    }
    for (size_t i = 0; i < n; i++) cli_tuning("devices", &list[i], data_dir, NULL, false, &profiles[i]);
    if (as_json) {
        json_t *arr = json_array();
        for (size_t i = 0; i <= n; i++) {
            json_t *d = pgn_device_info_json(i < n ? &list[i] : &host);
            json_object_set_new(d, "profile", pgn_device_profile_json(&profiles[i]));
            json_array_append_new(arr, d);
        }
        char *s = json_dumps(arr, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(arr);
    } else {
        printf("%-14s %-6s %4s %10s %9s  %-13s %-40s %s\n", "ID", "TYPE", "CU", "MEMORY", "CLOCK", "KERNELS",
               "NAME", "PLATFORM");
        for (size_t i = 0; i <= n; i++) {
            const pgn_device_info *d = i < n ? &list[i] : &host;
            char mem[32] = "-", clock[32] = "-", family[32] = "-";
            if (d->global_mem_bytes) human_bytes(d->global_mem_bytes, mem, sizeof mem);
            if (d->max_clock_mhz) snprintf(clock, sizeof clock, "%u MHz", d->max_clock_mhz);
            if (i < n) families_column(&profiles[i], family, sizeof family);
            printf("%-14s %-6s %4u %10s %9s  %-13s %-40.40s %s\n", d->id, pgn_device_type_name(d->type),
                   d->compute_units, mem, clock, family, d->name, d->platform);
        }
        printf("(KERNELS: the kernel family of the device's profile, or of its gemm/rows/inet ops where they "
               "differ, * where PARAGON_KERNELS or --kernels chose it; --json shows the whole profile)\n");
    }
    free(profiles);
    free(list);
    if (n == 0) {
        fprintf(stderr, "paragon devices: no OpenCL device found; only the host reference is "
                        "available (install pocl-opencl-icd for a CPU device)\n");
        return 1;
    }
    return 0;
}

/* What a local run shows while it works, and how Ctrl-C stops it. */
typedef struct run_ctx {
    cli_progress bar;
    pgn_run_options *opts;      /* the stop may name a checkpoint directory (should_stop) */
    const char *name;           /* the job's name: the default checkpoint directory's */
    char stop_dir[PGN_PATH_MAX]; /* where a Ctrl-C checkpoint went when --checkpoint-dir gave none */
} run_ctx;

static volatile sig_atomic_t stop_asked;

/* The first Ctrl-C asks the run to stop at its next step boundary (a train job checkpoints
 * there); a second one ends the process at once. */
static void on_sigint(int sig) {
    stop_asked = 1;
    signal(sig, SIG_DFL);
}

static void on_log(void *ctx, const char *line) { cli_progress_log(&((run_ctx *)ctx)->bar, line); }

static void on_metric(void *ctx, const char *name, int64_t step, double value) {
    cli_progress_metric(&((run_ctx *)ctx)->bar, name, step, value);
}

static void on_progress(void *ctx, double fraction) { cli_progress_fraction(&((run_ctx *)ctx)->bar, fraction); }

/* Polled at every step boundary, on the run's own thread. A train run stopped without
 * --checkpoint-dir checkpoints into ./NAME-checkpoint, named here just before the engine reads
 * the options' checkpoint_dir to save (the engine keeps a pointer to them). */
static bool should_stop(void *ctx) {
    if (!stop_asked) return false;
    run_ctx *r = ctx;
    if (r->opts->checkpoint_on_stop && !r->opts->checkpoint_dir) {
        char dir[PGN_PATH_MAX];
        snprintf(dir, sizeof dir, "%s-checkpoint", r->name);
        for (char *c = dir; *c; c++)
            if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.')) *c = '_';
        pgn_error err = {0};
        if (pgn_make_dirs(dir, "checkpoint directory", &err) == 0) {
            snprintf(r->stop_dir, sizeof r->stop_dir, "%s", dir);
            r->opts->checkpoint_dir = r->stop_dir;
        } else {
            cli_progress_log(&r->bar, err.message);
        }
    }
    return true;
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

/* <data_dir>/tunings.json: the CLI's record of its devices' tunings (paragond keeps its own). */
static void tunings_path(const char *data_dir, char *out, size_t size) { snprintf(out, size, "%s/tunings.json", data_dir); }

bool cli_tuning(const char *cmd, const pgn_device_info *info, const char *data_dir, pgn_device *dev, bool calibrate,
                pgn_device_profile *profile) {
    char path[PGN_PATH_MAX * 2 + 32];
    tunings_path(data_dir, path, sizeof path);
    pgn_kernel_family family = (dev ? pgn_device_get_profile(dev) : profile)->family[PGN_OPS_GEMM];
    pgn_device_tuning t;
    pgn_error err = {0};
    int found = pgn_tunings_file_find(path, info->id, family, &t, &err);
    if (found < 0) fprintf(stderr, "paragon %s: %s (the tunings are not read)\n", cmd, err.message);
    if (found > 0 && pgn_device_tuning_fits(&t, info, family)) {
        if (profile) pgn_device_profile_tune(profile, &t);
        if (dev) pgn_device_tune(dev, &t);
        return true;
    }
    if (!calibrate || !dev) return true;
    fprintf(stderr, "paragon %s: calibrating %s (%s; kept in %s)\n", cmd, info->id,
            found > 0 ? "its driver or the kernels changed since its tuning" : "its first tuning", path);
    if (pgn_device_calibrate(dev, PGN_CALIBRATION_BUDGET_S, PGN_CALIBRATION_REPEATS, NULL, &t, &err)) {
        fprintf(stderr, "paragon %s: %s\n", cmd, err.message);
        return false;
    }
    if (t.too_slow)
        fprintf(stderr, "paragon %s: %s is too slow to calibrate within %.0f s: its type's defaults\n", cmd, info->id,
                PGN_CALIBRATION_BUDGET_S);
    if (profile) pgn_device_profile_tune(profile, &t);
    pgn_device_tune(dev, &t);
    if (pgn_make_dirs(data_dir, "data directory", &err) || pgn_tunings_file_put(path, &t, &err))
        fprintf(stderr, "paragon %s: the tuning is not kept: %s\n", cmd, err.message);
    return true;
}

bool cli_kernels_option(const char *cmd, const char *option, const char *family) {
    if (strcmp(family, "auto") && strcmp(family, "cpu") && strcmp(family, "gpu")) {
        fprintf(stderr, "paragon %s: --%s: '%s' is not a kernel family (auto, cpu or gpu)\n", cmd, option, family);
        return false;
    }
    setenv("PARAGON_KERNELS", family, 1);
    return true;
}

static void run_usage(FILE *out) {
    fprintf(out,
            "usage: paragon run SPEC.json [--device DEV] [--data-dir DIR] [--checkpoint-dir DIR [--resume]]\n"
            "                  [--profile] [--gemm-tile auto|NAME] [--kernels auto|cpu|gpu] [--json]\n"
            "       paragon run PROGRAM.hvm|PROGRAM.pgl [-s] [--device DEV] [--work-items N]\n"
            "                  [--max-interactions N] [--max-nodes N] [--timeout SECONDS] [--json]\n"
            "  runs a job spec, or reduces an HVM2 program (a pgl one compiled first: docs/language.md)\n"
            "  and prints its normal form as hvm run-c does,\n"
            "  on this machine; a progress line on a terminal (plain lines otherwise), the result at the end\n"
            "  --device DEV          auto, cpu, gpu, host or a device id [the spec's; auto]\n"
            "  --data-dir DIR        where datasets are read from [" PGN_DEFAULT_DATA_DIR "]\n"
            "  --checkpoint-dir DIR  write checkpoint.safetensors there (created when missing)\n"
            "  --resume              continue from that checkpoint when there is one\n"
            "  --profile             time every op (waits after each: slower)\n"
            "  --gemm-tile auto|NAME the device GEMM's tile: auto is the device's tuning in DIR/tunings.json\n"
            "                        (a train job measures one first when there is none: about a second,\n"
            "                        as paragond's calibration does)\n"
            "  --kernels FAMILY      auto, cpu or gpu: the kernel family the device runs [auto: its\n"
            "                        profile's; PARAGON_KERNELS]\n"
            "  --json                the result as one JSON line (progress goes to stderr)\n"
            "  -s                    (.hvm) interactions, time and MIPS after the result\n"
            "  --work-items N        (.hvm) OpenCL work-items [the device's choice]\n"
            "  --max-interactions N, --max-nodes N, --timeout SECONDS\n"
            "                        (.hvm) limits; none but memory otherwise, as hvm run-c\n"
            "Ctrl-C stops at the next step: a train run checkpoints there (into --checkpoint-dir, else\n"
            "./NAME-checkpoint) and says how to resume; a second Ctrl-C ends it at once.\n"
            "exit status: 0 done, 1 failed, 2 bad arguments, 130 stopped by Ctrl-C\n");
}

/* A run's result on stdout: an HVM2 program's in HVM2's own format (a pgl program's value in
 * pgl, its net after), anything else as JSON. */
static void print_result(json_t *result, bool hvm_format, bool as_json, bool stats) {
    if (hvm_format) {
        const char *nf = json_string_value(json_object_get(result, "normal_form"));
        const char *value = json_string_value(json_object_get(result, "value"));
        printf("Result: %s\n", value ? value : nf);
        if (value && stats && strcmp(value, nf)) printf("- NET: %s\n", nf);
        if (stats)
            printf("- ITRS: %lld\n- TIME: %.2fs\n- MIPS: %.2f\n",
                   (long long)json_integer_value(json_object_get(result, "interactions")),
                   json_real_value(json_object_get(result, "seconds")),
                   json_real_value(json_object_get(result, "mips")));
        if (stats && json_object_get(result, "compile_seconds")) /* not HVM2's: its build is before its run */
            printf("- COMPILE: %.2fs\n", json_real_value(json_object_get(result, "compile_seconds")));
    } else {
        char *s = as_json ? pgn_json_dumps(result) : json_dumps(result, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
        printf("%s\n", s);
        free(s);
    }
    fflush(stdout);
}

/* Closes the run's device, saying first what it waits for (the result is out by then). */
static void close_device(pgn_device *dev) {
    const char *pending = pgn_device_pending(dev);
    if (pending) fprintf(stderr, "paragon run: waiting for %s (Ctrl-C skips it)\n", pending);
    pgn_device_close(dev);
}

static int cmd_run(int argc, char **argv) {
    const char *file = NULL, *device = NULL, *data_dir = PGN_DEFAULT_DATA_DIR, *checkpoint_dir = NULL;
    bool as_json = false, resume = false, profile = false, stats = false;
    const char *work_items = NULL, *gemm_tile = "auto";
    const char *limit_flags[3] = {NULL, NULL, NULL}; /* --max-interactions, --max-nodes, --timeout */
    const cli_opt options[] = {{"json", .flag = &as_json},
                               {"device", .value = &device},
                               {"data-dir", .value = &data_dir},
                               {"checkpoint-dir", .value = &checkpoint_dir},
                               {"resume", .flag = &resume},
                               {"profile", .flag = &profile},
                               {NULL, 's', .flag = &stats},
                               {"work-items", .value = &work_items},
                               {"gemm-tile", .value = &gemm_tile},
                               {"kernels", .check = cli_kernels_option},
                               {"max-interactions", .value = &limit_flags[0]},
                               {"max-nodes", .value = &limit_flags[1]},
                               {"timeout", .value = &limit_flags[2]},
                               {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"run", run_usage, options, NULL});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (optind < argc) file = argv[optind];
    if (optind + 1 < argc) {
        fprintf(stderr, "paragon run: only one spec file, got '%s' too\n", argv[optind + 1]);
        return CLI_EXIT_USAGE;
    }
    if (!file) {
        fprintf(stderr, "paragon run: missing the job spec file (paragon run --help says how to call it)\n");
        return CLI_EXIT_USAGE;
    }
    size_t len = 0;
    char *text = pgn_read_file(file, &len);
    if (!text) {
        fprintf(stderr, "paragon run: cannot read '%s': %s\n", file, strerror(errno));
        return 1;
    }
    pgn_error err = {0};
    pgn_job_spec spec;
    /* FILE.hvm is a program in HVM2's text format: an inet job, as `hvm run FILE.hvm`; FILE.pgl
     * the same in pgl, compiled first (docs/language.md) */
    size_t flen = strlen(file);
    bool pgl = flen > 4 && !strcmp(file + flen - 4, ".pgl");
    bool hvm = pgl || (flen > 4 && !strcmp(file + flen - 4, ".hvm"));
    if (hvm) {
        json_t *j = json_pack("{s:s, s:s%, s:s, s:s}", "kind", "inet", "program", text, len, "name", file, "language",
                              pgl ? "pgl" : "hvm");
        rc = j ? pgn_spec_parse(j, &spec, &err) : -1;
        json_decref(j);
        if (rc && !j) pgn_error_set(&err, PGN_E_INVALID_PROGRAM, "", "the program is not valid UTF-8");
    } else {
        /* tags and submission_id belong to a submission to paragond (one spec file serves both
         * `run` and `submit`): a run here has no use for them */
        json_t *j = json_loadb(text, len, 0, NULL);
        if (json_is_object(j) && (json_object_get(j, "tags") || json_object_get(j, "submission_id"))) {
            json_object_del(j, "tags");
            json_object_del(j, "submission_id");
            rc = pgn_spec_parse(j, &spec, &err);
        } else {
            rc = pgn_spec_parse_text(text, len, &spec, &err); /* a malformed file's line and column */
        }
        json_decref(j);
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

    if (resume && !checkpoint_dir) {
        fprintf(stderr, "paragon run: --resume needs --checkpoint-dir\n");
        pgn_spec_free(&spec);
        return CLI_EXIT_USAGE;
    }
    if (checkpoint_dir && pgn_make_dirs(checkpoint_dir, "checkpoint directory", &err)) {
        fprintf(stderr, "paragon run: --checkpoint-dir: %s\n", err.message);
        pgn_spec_free(&spec);
        return CLI_EXIT_FAILED;
    }
    int tile = strcmp(gemm_tile, "auto") ? pgn_gemm_tile_find(gemm_tile) : -1;
    if (strcmp(gemm_tile, "auto") && tile < 0) {
        fprintf(stderr, "paragon run: --gemm-tile: no tile '%s' (auto or one of:", gemm_tile);
        for (int t = 0; t < pgn_gemm_tile_count(); t++) fprintf(stderr, " %s", pgn_gemm_tile_name(t));
        fprintf(stderr, ")\n");
        pgn_spec_free(&spec);
        return 2;
    }
    pgn_device_info chosen;
    pgn_device *dev = NULL;
    /* the stored tuning (a train job calibrates a device that has none), unless a tile is named */
    int rc_dev = pgn_device_open_named(spec.device, &chosen, &dev, &err);
    if (rc_dev == 0 && dev && tile >= 0) rc_dev = pgn_gemm_tile_set(dev, tile, PGN_FROM_OVERRIDE, &err);
    if (rc_dev) fprintf(stderr, "paragon run: %s\n", err.message);
    else if (dev && tile < 0 && !cli_tuning("run", &chosen, data_dir, dev, spec.kind == PGN_JOB_TRAIN, NULL)) rc_dev = -1;
    if (rc_dev) {
        pgn_device_close(dev);
        pgn_spec_free(&spec);
        return 1;
    }
    /* A program's IO is the process's, as `hvm run-c`; with --json its output goes into the
     * result instead (so stdout stays JSON), and its files stay under the working directory. */
    pgn_run_options opts = {.data_dir = data_dir, .checkpoint_dir = checkpoint_dir,
                            .resume = resume, .profile = profile,
                            .inet_io = as_json ? PGN_INET_IO_CONFINED : PGN_INET_IO_PROCESS, .io_dir = "."};
    run_ctx ctx = {.opts = &opts, .name = spec.name};
    /* the bar goes where the log goes; an HVM2 program's stdout is its result alone */
    cli_progress_start(&ctx.bar, as_json || hvm ? stderr : stdout);
    if (spec.kind == PGN_JOB_TRAIN && spec.train.model == PGN_MODEL_MLP) ctx.bar.samples_per_step = spec.train.batch_size;
    pgn_run_hooks hooks = {.ctx = &ctx, .on_log = on_log, .on_metric = on_metric, .on_progress = on_progress,
                           .should_stop = should_stop};
    opts.checkpoint_on_stop = spec.kind == PGN_JOB_TRAIN;
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    json_t *result = NULL;
    rc = pgn_job_run(&spec, dev, &opts, &hooks, &result, &err);
    sigaction(SIGINT, &old_sa, NULL);
    cli_progress_end(&ctx.bar);
    if (rc && err.code == PGN_E_CANCELLED && stop_asked) {
        fprintf(stderr, "paragon run: %s: %s\n", spec.name, err.message);
        if (opts.checkpoint_dir && strstr(err.message, "; checkpointed"))
            fprintf(stderr, "paragon run: continue with: paragon run %s --checkpoint-dir %s --resume\n", file,
                    opts.checkpoint_dir);
        close_device(dev);
        pgn_spec_free(&spec);
        return CLI_EXIT_INTERRUPTED;
    }
    if (rc) {
        close_device(dev);
        fprintf(stderr, "paragon run: %s failed: %s\n", spec.name, err.message);
        pgn_spec_free(&spec);
        return 1;
    }
    pgn_spec_free(&spec);
    print_result(result, hvm && !as_json, as_json, stats);
    json_decref(result);
    close_device(dev);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) name = "help";
    if (!strcmp(name, "--version")) name = "version";
    const command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "paragon: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
}
