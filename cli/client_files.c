/* client_files.c: the client commands that move files to and from paragond: export (benchmark
 * rows, a job's checkpoint or weights), datasets (list, rm) and upload. Each prints for people by
 * default and JSON with --json; exit statuses in cli.h. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "http.h"
#include "paragon.h"

/* ---- export ----------------------------------------------------------------------------- */

static void export_usage(FILE *out) {
    fprintf(out, "usage: paragon export --bench [--suite SUITE] [--device DEV] [--job ID] [--since TIME]\n"
                 "                      [--until TIME] [--format csv|json] [-o FILE]\n"
                 "       paragon export --checkpoint ID -o FILE\n"
                 "       paragon export --weights ID -o FILE\n"
                 "  --bench          benchmark rows as GET /api/v1/benchmarks gives them (csv needs a suite;\n"
                 "                   mlp-forward's csv is Paragon-Py's, as it writes it)\n"
                 "  --job ID         the rows of one bench job\n"
                 "  --since TIME, --until TIME\n"
                 "                   the rows stored in [since, until): ISO 8601 in UTC, 2025-01-31 or\n"
                 "                   2025-01-31T12:00:00Z (an offset such as +02:00 instead of Z)\n"
                 "  --checkpoint ID  job ID's checkpoint (safetensors: weights, optimizer state, position)\n"
                 "  --weights ID     job ID's weights alone, in PyTorch's layout and names (safetensors)\n"
                 "  -o FILE          where to write [standard output; a checkpoint or weights need a file]\n" CLI_SERVER_HELP
                 "exit status: 0 written, 1 refused or not written, 2 bad arguments, 4 no answer from paragond\n");
}

int cmd_export(int argc, char **argv) {
    cli_server_args server = {0};
    const char *suite = NULL, *device = NULL, *format = NULL, *checkpoint = NULL, *weights = NULL, *to = "-";
    const char *job = NULL, *since = NULL, *until = NULL;
    bool bench = false;
    const cli_opt options[] = {{"bench", .flag = &bench},          {"suite", .value = &suite},
                               {"device", .value = &device},       {"format", .value = &format},
                               {"checkpoint", .value = &checkpoint}, {"weights", .value = &weights},
                               {"output", 'o', .value = &to},      {"job", .value = &job},
                               {"since", .value = &since},         {"until", .value = &until},
                               {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"export", export_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (optind < argc) return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
    if ((bench ? 1 : 0) + (checkpoint ? 1 : 0) + (weights ? 1 : 0) != 1)
        return cli_usage_error("export", "%s", "one of --bench, --checkpoint ID or --weights ID");
    if (!bench && (suite || device || format || job || since || until))
        return cli_usage_error("export", "%s", "--suite, --device, --job, --since, --until and --format are for --bench");
    long long job_id = 0;
    if (job && !cli_job_id("paragon export", job, &job_id)) return CLI_EXIT_USAGE;
    if (!bench && !strcmp(to, "-") && isatty(STDOUT_FILENO))
        return cli_usage_error("export", "%s", "a safetensors file is binary: -o FILE says where it goes");
    long long id = 0;
    if (!bench && !cli_job_id("paragon export", checkpoint ? checkpoint : weights, &id)) return CLI_EXIT_USAGE;
    cli_server s;
    rc = cli_server_open(&s, "paragon export", server.url, server.token_file);
    if (rc) return rc;
    pgn_text path = {0};
    if (bench) {
        pgn_text_puts(&path, "/api/v1/benchmarks");
        cli_query_add(&s, &path, "suite", suite);
        cli_query_add(&s, &path, "device", device);
        cli_query_add(&s, &path, "job", job);
        cli_query_add(&s, &path, "since", since); /* the server judges the times, naming each */
        cli_query_add(&s, &path, "until", until);
        cli_query_add(&s, &path, "format", format);
    } else {
        pgn_text_printf(&path, "/api/v1/jobs/%lld/%s", id, checkpoint ? "checkpoint" : "weights");
    }
    char *url_path = pgn_text_take(&path);
    long status = 0;
    size_t bytes = 0;
    rc = url_path ? cli_download(&s, url_path, to, &status, &bytes) : -1;
    free(url_path);
    cli_server_close(&s);
    if (rc) return cli_exit_for(status);
    if (strcmp(to, "-")) fprintf(stderr, "paragon export: wrote %s (%zu bytes)\n", to, bytes);
    return CLI_EXIT_OK;
}

/* ---- datasets ----------------------------------------------------------------------------- */

static void datasets_usage(FILE *out) {
    fprintf(out, "usage: paragon datasets [--json]         the datasets in paragond's <data-dir>/datasets/\n"
                 "       paragon datasets rm NAME          delete one (refused while a queued or running job names it)\n"
                 "  --json   the server's answer as it is\n" CLI_SERVER_HELP
                 "A spec names a dataset by its name: \"data\":{\"source\":\"idx\",\"train_images\":NAME,...}\n"
                 "or {\"source\":\"text\",\"path\":NAME}. paragon upload FILE puts one there.\n"
                 "exit status: 0 done, 1 refused, 2 bad arguments, 4 no answer from paragond\n");
}

/* "idx images 60000x28x28", "text 1234 chars": what a dataset holds, for the table. */
static void dataset_shape(const json_t *d, char *out, size_t size) {
    const json_t *dims = json_object_get(d, "dims");
    if (json_is_false(json_object_get(d, "valid"))) {
        snprintf(out, size, "not usable: %s", cli_str(d, "problem") ? cli_str(d, "problem") : "?");
    } else if (dims) {
        snprintf(out, size, "%s ", cli_str(d, "kind") ? cli_str(d, "kind") : "");
        for (size_t i = 0; i < json_array_size(dims); i++)
            snprintf(out + strlen(out), size - strlen(out), "%s%lld", i ? "x" : "",
                     (long long)json_integer_value(json_array_get(dims, i)));
    } else {
        snprintf(out, size, "%lld chars", (long long)json_integer_value(json_object_get(d, "chars")));
    }
}

static int datasets_rm(cli_server *s, const char *name) {
    pgn_text path = {0};
    pgn_text_puts(&path, "/api/v1/datasets/");
    char *escaped = cli_path_escape(s, name);
    pgn_text_puts(&path, escaped ? escaped : name);
    free(escaped);
    char *url_path = pgn_text_take(&path);
    long status = 0;
    json_t *r = url_path ? cli_call(s, "DELETE", url_path, NULL, &status) : NULL;
    free(url_path);
    if (!r) return cli_exit_for(status);
    json_decref(r);
    fprintf(stderr, "paragon datasets: deleted %s\n", name);
    return CLI_EXIT_OK;
}

int cmd_datasets(int argc, char **argv) {
    cli_server_args server = {0};
    bool as_json = false;
    const cli_opt options[] = {{"json", .flag = &as_json}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"datasets", datasets_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    bool rm = optind < argc && !strcmp(argv[optind], "rm");
    if (rm && optind + 2 != argc) return cli_usage_error("datasets", "%s", "rm takes one NAME");
    if (!rm && optind < argc) return cli_usage_error("datasets", "unexpected argument '%s'", argv[optind]);
    cli_server s;
    rc = cli_server_open(&s, "paragon datasets", server.url, server.token_file);
    if (rc) return rc;
    if (rm) {
        rc = datasets_rm(&s, argv[optind + 1]);
        cli_server_close(&s);
        return rc;
    }
    json_t *v = cli_listing(&s, "/api/v1/datasets", as_json, &rc);
    if (!v) return rc;
    json_t *list = json_object_get(v, "datasets");
    if (!json_array_size(list)) printf("no datasets (paragon upload FILE puts one there)\n");
    else printf("%-32s %12s %-7s %-16s %-12s %s\n", "NAME", "BYTES", "FORMAT", "MODIFIED", "SHA256", "HOLDS");
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d) {
        char when[32], shape[256];
        cli_short_time(cli_str(d, "modified_at") ? cli_str(d, "modified_at") : "", when, sizeof when);
        dataset_shape(d, shape, sizeof shape);
        printf("%-32s %12lld %-7s %-16s %.12s %s\n", cli_str(d, "name"),
               (long long)json_integer_value(json_object_get(d, "bytes")), cli_str(d, "format"), when,
               cli_str(d, "sha256") ? cli_str(d, "sha256") : "", shape);
    }
    json_decref(v);
    return CLI_EXIT_OK;
}

static void upload_usage(FILE *out) {
    fprintf(out, "usage: paragon upload FILE [--name NAME] [--new] [--json]\n"
                 "  --name NAME  the dataset's name [FILE's own]: A-Z a-z 0-9 . _ -, ending .idx or\n"
                 "               -ubyte (idx), .idx.gz or -ubyte.gz (gzip'd idx), .txt (UTF-8 text)\n"
                 "  --new        refuse to replace a dataset of that name (If-None-Match: *)\n"
                 "  --json       the server's answer as it is\n" CLI_SERVER_HELP
                 "The file's SHA-256 goes with it (Content-SHA256): paragond stores nothing that\n"
                 "arrived otherwise. A spec then names it: \"train_images\":NAME, or \"path\":NAME.\n"
                 "exit status: 0 stored, 1 refused (the message says why), 2 bad arguments,\n"
                 "4 no answer from paragond\n");
}

/* The SHA-256 of an open file as hex, read to its end and rewound. */
static int file_sha256(FILE *f, char hex[65]) {
    pgn_sha256 s;
    pgn_sha256_init(&s);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) pgn_sha256_update(&s, buf, n);
    if (ferror(f)) return -1;
    unsigned char digest[32];
    pgn_sha256_final(&s, digest);
    pgn_sha256_hex(digest, hex);
    rewind(f);
    return 0;
}

int cmd_upload(int argc, char **argv) {
    cli_server_args server = {0};
    const char *name = NULL;
    bool only_new = false, as_json = false;
    const cli_opt options[] = {{"name", .value = &name}, {"new", .flag = &only_new}, {"json", .flag = &as_json}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"upload", upload_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (optind >= argc) return cli_usage_error("upload", "%s", "missing the FILE to upload");
    if (optind + 1 < argc) return cli_usage_error("upload", "only one FILE, got '%s' too", argv[optind + 1]);
    const char *file = argv[optind];
    if (!name) {
        const char *slash = strrchr(file, '/');
        name = slash ? slash + 1 : file;
    }
    FILE *f = fopen(file, "rb");
    if (!f) {
        fprintf(stderr, "paragon upload: cannot read '%s': %s\n", file, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    char hex[65], header[128];
    long long size = -1;
    if (file_sha256(f, hex) == 0 && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "paragon upload: cannot read '%s': %s\n", file, strerror(errno));
        fclose(f);
        return CLI_EXIT_USAGE;
    }
    snprintf(header, sizeof header, "Content-SHA256: %s", hex);
    cli_server s;
    rc = cli_server_open(&s, "paragon upload", server.url, server.token_file);
    if (rc) {
        fclose(f);
        return rc;
    }
    pgn_text path = {0};
    pgn_text_puts(&path, "/api/v1/datasets/");
    char *escaped = cli_path_escape(&s, name);
    pgn_text_puts(&path, escaped ? escaped : name);
    free(escaped);
    char *url_path = pgn_text_take(&path);
    long status = 0;
    const char *headers[] = {header, only_new ? "If-None-Match: *" : NULL, NULL};
    json_t *v = url_path ? cli_upload(&s, url_path, f, size, headers, &status) : NULL;
    free(url_path);
    cli_server_close(&s);
    fclose(f);
    if (!v) return cli_exit_for(status);
    if (as_json) {
        cli_print_json(v);
    } else {
        char shape[256];
        dataset_shape(v, shape, sizeof shape);
        printf("%s %s (%lld bytes, %s, %s; sha256 %s)\n", status == 201 ? "uploaded" : "replaced",
               cli_str(v, "name"), (long long)json_integer_value(json_object_get(v, "bytes")), cli_str(v, "format"),
               shape, cli_str(v, "sha256"));
    }
    json_decref(v);
    return CLI_EXIT_OK;
}
