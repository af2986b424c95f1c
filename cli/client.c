/* client.c: the commands that talk to a running paragond (submit, jobs, status, logs, metrics,
 * cancel, delete, export, datasets, upload, and generate --job), through its REST API and event streams
 * (http.c). Each prints for people by default and JSON with --json; exit statuses in cli.h. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "http.h"
#include "paragon.h"
#include "progress.h"

/* A reconnecting follower gives up after this many tries a second apart (a restart of paragond
 * takes a few seconds; a server gone for a minute is gone). */
#define RECONNECT_TRIES 60

/* ---- what the commands share ---------------------------------------------------------- */

/* A usage error: what is wrong, then where the help is. */
static int usage_error(const char *cmd, const char *fmt, const char *what) {
    fprintf(stderr, "paragon %s: ", cmd);
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n(paragon %s --help says how to call it)\n", cmd);
    return CLI_EXIT_USAGE;
}

/* The one positional job id a command takes (after getopt has permuted argv). */
static int job_arg(const char *cmd, int argc, char **argv, long long *id) {
    if (optind >= argc) return usage_error(cmd, "%s", "missing the job id");
    if (optind + 1 < argc) return usage_error(cmd, "only one job id, got '%s' too", argv[optind + 1]);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "paragon %s", cmd);
    return cli_job_id(prefix, argv[optind], id) ? 0 : CLI_EXIT_USAGE;
}

static void print_json(const json_t *v) {
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) printf("%s\n", s);
    free(s);
}

static bool is_state(const json_t *job, const char *state) {
    const char *s = json_string_value(json_object_get(job, "state"));
    return s && !strcmp(s, state);
}

static bool is_ended(const json_t *job) {
    return is_state(job, "succeeded") || is_state(job, "failed") || is_state(job, "cancelled");
}

/* The exit status an ended job gives a command that waited for it. */
static int job_exit(const json_t *job) {
    return is_state(job, "succeeded") ? CLI_EXIT_OK : is_state(job, "cancelled") ? CLI_EXIT_CANCELLED : CLI_EXIT_FAILED;
}

static const char *str(const json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

/* s as the terminal may show it: control characters (an escape sequence a program printed, a
 * newline) written \xNN, so a job's output or message cannot drive the user's terminal. */
static void visible_text(const char *s, char *out, size_t size) {
    char *shown = pgn_text_visible(s);
    snprintf(out, size, "%s", shown ? shown : "");
    free(shown);
}

/* A JSON scalar as one short cell ("-" for null, objects and arrays as their size). */
static void scalar_text(const json_t *v, char *out, size_t size) {
    if (json_is_string(v)) visible_text(json_string_value(v), out, size);
    else if (json_is_integer(v)) snprintf(out, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) snprintf(out, size, "%.6g", json_real_value(v));
    else if (json_is_boolean(v)) snprintf(out, size, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_array(v)) snprintf(out, size, "[%zu items]", json_array_size(v));
    else if (json_is_object(v)) snprintf(out, size, "{%zu fields}", json_object_size(v));
    else snprintf(out, size, "-");
}

/* A job's result, one field a line ("<indent>key  value"), long values cut. */
static void print_result(const json_t *result, int indent) {
    const char *key;
    json_t *v;
    size_t width = 0;
    json_object_foreach((json_t *)result, key, v) if (strlen(key) > width) width = strlen(key);
    json_object_foreach((json_t *)result, key, v) {
        char text[96];
        scalar_text(v, text, sizeof text);
        if (strlen(text) == sizeof text - 1) memcpy(text + sizeof text - 4, "...", 3);
        printf("%*s%-*s  %s\n", indent, "", (int)width, key, text);
    }
}

/* How an ended job ended, in a line, then its result. */
static void print_ending(const json_t *job) {
    long long id = (long long)json_integer_value(json_object_get(job, "id"));
    const json_t *error = json_object_get(job, "error");
    printf("job %lld %s", id, str(job, "state"));
    char message[1024];
    visible_text(str(error, "message"), message, sizeof message);
    if (json_is_object(error)) printf(": %s", message);
    printf("\n");
    const json_t *result = json_object_get(job, "result");
    if (json_is_object(result)) print_result(result, 2);
}

/* ---- following a job -------------------------------------------------------------------- */

typedef enum { FOLLOW_QUIET, FOLLOW_PROGRESS, FOLLOW_LOG } follow_mode;

typedef struct follower {
    cli_server *s;
    long long id;
    follow_mode mode;
    int64_t log_seq;   /* the last log line printed */
    bool ended;
    char last_id[64];
    cli_progress bar;
} follower;

/* Log lines as GET /logs gives them: "<time> <level> <line>". Plain mode keeps the line alone. */
static void print_log_text(follower *f, const char *text) {
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        char *raw = strndup(line, n), *copy = raw ? pgn_text_visible(raw) : NULL;
        free(raw);
        if (!copy) break;
        if (f->mode == FOLLOW_LOG) {
            printf("%s\n", copy);
        } else if (f->mode == FOLLOW_PROGRESS) {
            const char *sp = strchr(copy, ' ');
            /* the level is padded to 5 characters and followed by a space */
            cli_progress_log(&f->bar, sp && strlen(sp) > 7 ? sp + 7 : copy);
        }
        free(copy);
        f->log_seq++;
        line += n + (line[n] == '\n');
    }
    fflush(stdout);
}

/* The log lines after f->log_seq, from GET /logs (a gap the stream left, or the start). */
static int catch_up_log(follower *f) {
    char path[96];
    long status;
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs?after=%lld", f->id, (long long)f->log_seq);
    char *text = cli_get_text(f->s, path, &status);
    if (!text) return -1;
    print_log_text(f, text);
    free(text);
    return 0;
}

static cli_stream_next on_job_event(void *ctx, const cli_event *ev) {
    follower *f = ctx;
    if (*ev->id) snprintf(f->last_id, sizeof f->last_id, "%s", ev->id);
    json_t *d = json_loads(ev->data, 0, NULL);
    if (!d) return CLI_STREAM_MORE;
    if (!strcmp(ev->name, "state") || !strcmp(ev->name, "reset")) {
        /* a first snapshot, or events missed: the log is read up to now */
        if (f->mode != FOLLOW_QUIET) catch_up_log(f);
        double p = json_real_value(json_object_get(d, "progress"));
        if (f->mode == FOLLOW_PROGRESS && is_state(d, "running")) cli_progress_fraction(&f->bar, p);
        f->ended = is_ended(d);
    } else if (!strcmp(ev->name, "log") && f->mode != FOLLOW_QUIET) {
        int64_t seq = json_integer_value(json_object_get(d, "seq"));
        if (seq > f->log_seq + 1) {
            catch_up_log(f); /* includes this line */
        } else if (seq == f->log_seq + 1) {
            char line[2048];
            visible_text(str(d, "line"), line, sizeof line);
            if (f->mode == FOLLOW_LOG)
                printf("%s %-5s %s\n", str(d, "time"), str(d, "level"), line);
            else
                cli_progress_log(&f->bar, line);
            f->log_seq = seq;
            fflush(stdout);
        }
    } else if (!strcmp(ev->name, "metric") && f->mode == FOLLOW_PROGRESS) {
        cli_progress_metric(&f->bar, str(d, "name"), json_integer_value(json_object_get(d, "step")),
                            json_number_value(json_object_get(d, "value")));
    } else if (!strcmp(ev->name, "progress") && f->mode == FOLLOW_PROGRESS) {
        cli_progress_fraction(&f->bar, json_number_value(json_object_get(d, "progress")));
    } else if (!strcmp(ev->name, "end")) {
        f->ended = true; /* the server's last frame: the job has ended (its state came before) */
    }
    json_decref(d);
    return f->ended ? CLI_STREAM_DONE : CLI_STREAM_MORE;
}

/* Samples a train step covers (batch size, times the ranks of a ddp job): the bar's samples/s. */
static int64_t samples_per_step(const json_t *spec) {
    const json_t *model = json_object_get(spec, "model");
    if (strcmp(str(spec, "kind"), "train")) return 0;
    if (!strcmp(str(model, "type"), "gpt")) return 0; /* its figure is tokens/s, reported */
    int64_t b = json_integer_value(json_object_get(spec, "batch_size"));
    const json_t *dist = json_object_get(spec, "distributed");
    if (json_is_object(dist) && !strcmp(str(dist, "algorithm"), "ddp"))
        b *= json_integer_value(json_object_get(dist, "ranks"));
    return b;
}

/* Follows job id until it ends, reconnecting when the stream drops (a restart of paragond);
 * returns the ended job (GET, so with its whole result) or NULL after saying why, with *rc the
 * exit status. */
static json_t *follow_job(cli_server *s, long long id, follow_mode mode, const json_t *spec, int *rc) {
    follower f = {.s = s, .id = id, .mode = mode};
    if (mode == FOLLOW_PROGRESS) {
        cli_progress_start(&f.bar, stdout);
        f.bar.samples_per_step = samples_per_step(spec);
    }
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/events", id);
    cli_catch_interrupt();
    int tries = 0;
    long status = 0;
    while (!f.ended) {
        int r = cli_stream(s, "GET", path, NULL, f.last_id, on_job_event, &f, &status);
        if (r == -2) {
            if (mode == FOLLOW_PROGRESS) cli_progress_end(&f.bar);
            fprintf(stderr, "\n%s: stopped following job %lld; it goes on (paragon cancel %lld stops it)\n",
                    s->cmd, id, id);
            *rc = CLI_EXIT_INTERRUPTED;
            return NULL;
        }
        if (r == 1 || f.ended) break;
        if (r == -1 && status) { /* an answer, not a lost connection: 404, 401 */
            *rc = CLI_EXIT_FAILED;
            return NULL;
        }
        if (++tries > RECONNECT_TRIES) {
            fprintf(stderr, "%s: lost paragond at %s and could not reconnect in %d tries\n", s->cmd,
                    s->url, RECONNECT_TRIES);
            *rc = CLI_EXIT_UNREACHABLE;
            return NULL;
        }
        if (tries == 1) fprintf(stderr, "%s: the event stream ended early; reconnecting\n", s->cmd);
        sleep(1);
    }
    if (mode == FOLLOW_PROGRESS) cli_progress_end(&f.bar);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", id);
    json_t *job = cli_call(s, "GET", path, NULL, &status);
    *rc = job ? job_exit(job) : cli_exit_for(status);
    return job;
}

/* ---- submit ----------------------------------------------------------------------------- */

static void submit_usage(FILE *out) {
    fprintf(out,
            "usage: paragon submit SPEC [--device DEV] [--name NAME] [--wait | --follow] [--json | -q]\n"
            "  SPEC          a job spec (JSON), an HVM2 or pgl program (FILE.hvm, FILE.pgl: an inet job)\n"
            "                or - (standard input)\n"
            "  --device DEV  where it runs: auto, cpu, gpu, host, all (bench) or a device id [the spec's]\n"
            "  --name NAME   the job's name [the spec's]\n"
            "  --wait        wait for the job to end: the exit status says how it ended\n"
            "  --follow      show its log and progress while it runs, then its result\n"
            "                (Ctrl-C stops following, not the job)\n"
            "  --json        print the job as JSON (with --wait or --follow: the ended job)\n"
            "  -q, --quiet   print only the job's id\n" CLI_SERVER_HELP
            "exit status: 0 submitted (with --wait/--follow: succeeded), 1 refused or failed,\n"
            "             2 bad arguments, 3 cancelled, 4 no answer from paragond, 130 Ctrl-C\n");
}

/* The spec to submit: the file's JSON, or an .hvm or .pgl program wrapped as an inet job. NULL
 * after saying what is wrong. */
static json_t *read_spec(const char *file) {
    size_t len = 0;
    char *text = NULL;
    if (!strcmp(file, "-")) {
        pgn_text t = {0};
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) pgn_text_put(&t, buf, n);
        len = t.len;
        text = pgn_text_take(&t);
    } else {
        text = pgn_read_file(file, &len);
    }
    if (!text) {
        fprintf(stderr, "paragon submit: cannot read '%s': %s\n", file, strerror(errno));
        return NULL;
    }
    size_t flen = strlen(file);
    json_t *spec;
    bool pgl = flen > 4 && !strcmp(file + flen - 4, ".pgl");
    if (pgl || (flen > 4 && !strcmp(file + flen - 4, ".hvm"))) {
        const char *base = strrchr(file, '/');
        spec = json_pack("{s:s, s:s%, s:s, s:s}", "kind", "inet", "program", text, len, "name", base ? base + 1 : file,
                         "language", pgl ? "pgl" : "hvm");
        if (!spec) fprintf(stderr, "paragon submit: %s: the program is not valid UTF-8\n", file);
    } else {
        json_error_t jerr;
        spec = json_loadb(text, len, 0, &jerr);
        if (!spec)
            fprintf(stderr, "paragon submit: %s: line %d, column %d: %s\n", file, jerr.line, jerr.column, jerr.text);
        else if (!json_is_object(spec)) {
            fprintf(stderr, "paragon submit: %s: a job spec is a JSON object\n", file);
            json_decref(spec);
            spec = NULL;
        }
    }
    free(text);
    return spec;
}

int cmd_submit(int argc, char **argv) {
    cli_server_args server = {0};
    const char *device = NULL, *name = NULL;
    bool wait = false, follow = false, as_json = false, quiet = false;
    const cli_opt options[] = {{"device", .value = &device}, {"name", .value = &name},   {"wait", .flag = &wait},
                               {"follow", .flag = &follow},  {"json", .flag = &as_json}, {"quiet", 'q', .flag = &quiet},
                               {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"submit", submit_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (optind >= argc) return usage_error("submit", "%s", "missing the job spec (a file, or - for standard input)");
    if (optind + 1 < argc) return usage_error("submit", "only one spec, got '%s' too", argv[optind + 1]);
    if (wait && follow) return usage_error("submit", "%s", "--wait or --follow, not both");
    if (quiet && (as_json || follow)) return usage_error("submit", "%s", "-q prints the id alone: not with --json or --follow");
    cli_server s;
    rc = cli_server_open(&s, "paragon submit", server.url, server.token_file);
    if (rc) return rc;
    json_t *spec = read_spec(argv[optind]);
    if (!spec) {
        cli_server_close(&s);
        return CLI_EXIT_FAILED;
    }
    if (device) json_object_set_new(spec, "device", json_string(device));
    if (name) json_object_set_new(spec, "name", json_string(name));
    long status;
    json_t *job = cli_call(&s, "POST", "/api/v1/jobs", spec, &status);
    json_decref(spec);
    if (!job) {
        cli_server_close(&s);
        return cli_exit_for(status);
    }
    /* device "all": one job per device, each followed in turn */
    json_t *ids = json_object_get(job, "ids");
    size_t n = json_is_array(ids) ? json_array_size(ids) : 1;
    rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        long long id = (long long)json_integer_value(ids ? json_array_get(ids, i) : json_object_get(job, "id"));
        if (quiet) {
            printf("%lld\n", id);
            continue;
        }
        if (!wait && !follow) {
            if (as_json) continue;
            if (i == 0)
                printf("job %lld queued: %s \"%s\" on %s%s\n", id, str(job, "kind"), str(job, "name"), str(job, "device"),
                       n > 1 ? "" : "");
            else
                printf("job %lld queued\n", id);
            continue;
        }
        if (follow) printf("job %lld queued on %s; following it (Ctrl-C stops following, not the job)\n", id,
                           i == 0 ? str(job, "device") : "its device");
        int jrc;
        json_t *ended = follow_job(&s, id, follow ? FOLLOW_PROGRESS : FOLLOW_QUIET, json_object_get(job, "spec"), &jrc);
        if (ended) {
            if (as_json) print_json(ended);
            else print_ending(ended);
        }
        json_decref(ended);
        if (jrc > rc) rc = jrc;
        if (jrc == CLI_EXIT_INTERRUPTED || jrc == CLI_EXIT_UNREACHABLE) break;
    }
    if (as_json && !wait && !follow) print_json(job);
    fflush(stdout);
    json_decref(job);
    cli_server_close(&s);
    return rc;
}

/* ---- jobs ------------------------------------------------------------------------------- */

static void jobs_usage(FILE *out) {
    fprintf(out,
            "usage: paragon jobs [--state STATE] [--kind KIND] [--tag KEY:VALUE]... [--limit N]\n"
            "                    [--offset N | --cursor C] [--json]\n"
            "  --state  queued, running, succeeded, failed or cancelled\n"
            "  --kind   train, inet, bench or generate\n"
            "  --tag    only jobs tagged KEY with VALUE; repeatable, all must match\n"
            "  --limit  how many, newest first [20]\n"
            "  --offset skip the newest N first [0]\n"
            "  --cursor the page after the one that printed this cursor (it does not shift as jobs\n"
            "           arrive)\n"
            "  --json   the server's answer as it is\n" CLI_SERVER_HELP
            "exit status: 0 listed, 1 refused, 2 bad arguments, 4 no answer from paragond\n");
}

/* "2026-11-25T23:49:08.613Z" as "11-25 23:49:08", the width of a table cell. */
static void short_time(const char *t, char *out, size_t size) {
    if (strlen(t) >= 19) snprintf(out, size, "%.5s %.8s", t + 5, t + 11);
    else snprintf(out, size, "%s", *t ? t : "-");
}

int cmd_jobs(int argc, char **argv) {
    cli_server_args server = {0};
    const char *state = NULL, *kind = NULL, *limit = "20", *offset = NULL, *cursor = NULL;
    cli_values tags = {0}; /* the server judges how many */
    bool as_json = false;
    const cli_opt options[] = {{"state", .value = &state},   {"kind", .value = &kind}, {"limit", .value = &limit},
                               {"offset", .value = &offset}, {"cursor", .value = &cursor}, {"tag", .values = &tags},
                               {"json", .flag = &as_json},   {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"jobs", jobs_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    cli_server s;
    rc = optind < argc ? usage_error("jobs", "unexpected argument '%s'", argv[optind])
                       : cli_server_open(&s, "paragon jobs", server.url, server.token_file);
    if (rc) {
        free(tags.at);
        return rc;
    }
    /* the server checks every value and names the one that is wrong */
    pgn_text path = {0};
    pgn_text_puts(&path, "/api/v1/jobs");
    cli_query_add(&s, &path, "limit", limit);
    cli_query_add(&s, &path, "offset", offset);
    cli_query_add(&s, &path, "cursor", cursor);
    for (size_t i = 0; i < tags.count; i++) cli_query_add(&s, &path, "tag", tags.at[i]);
    free(tags.at);
    cli_query_add(&s, &path, "state", state);
    cli_query_add(&s, &path, "kind", kind);
    char *url_path = pgn_text_take(&path);
    long status;
    json_t *page = url_path ? cli_call(&s, "GET", url_path, NULL, &status) : NULL;
    free(url_path);
    cli_server_close(&s);
    if (!page) return cli_exit_for(status);
    if (as_json) {
        print_json(page);
        json_decref(page);
        return CLI_EXIT_OK;
    }
    json_t *jobs = json_object_get(page, "jobs");
    size_t i;
    json_t *job;
    printf("%6s  %-8s  %-9s  %5s  %-14s  %-14s  %-16s  %s\n", "ID", "KIND", "STATE", "DONE", "DEVICE", "CREATED",
           "NAME", "SUMMARY");
    json_array_foreach(jobs, i, job) {
        char created[32], summary[160] = "";
        short_time(str(job, "created_at"), created, sizeof created);
        /* the row's summary: its result's headline figures, "key value" each */
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(job, "summary"), key, v) {
            char text[96];
            scalar_text(v, text, sizeof text);
            size_t used = strlen(summary);
            snprintf(summary + used, sizeof summary - used, "%s%s %s", used ? "  " : "", key, text);
        }
        printf("%6lld  %-8s  %-9s  %4.0f%%  %-14.14s  %-14s  %-16.16s  %s\n",
               (long long)json_integer_value(json_object_get(job, "id")), str(job, "kind"), str(job, "state"),
               100 * json_number_value(json_object_get(job, "progress")), str(job, "device"), created, str(job, "name"),
               summary);
    }
    long long total = (long long)json_integer_value(json_object_get(page, "total"));
    long long off = (long long)json_integer_value(json_object_get(page, "offset"));
    const char *next = json_string_value(json_object_get(page, "next_cursor"));
    if (total > (long long)json_array_size(jobs) && !cursor) {
        if (off) printf("(%zu of %lld, after the %lld newest)\n", json_array_size(jobs), total, off);
        else printf("(the newest %zu of %lld)\n", json_array_size(jobs), total);
    }
    if (next) printf("next page: --cursor %s\n", next);
    json_decref(page);
    return CLI_EXIT_OK;
}

/* ---- status, cancel, delete ------------------------------------------------------------- */

/* The usage of a command whose one argument is a job id. */
#define ID_USAGE(cmd, what)                                                                                  \
    "usage: paragon " cmd " ID [--json]\n  " what "\n  --json  the job as JSON\n" CLI_SERVER_HELP              \
    "exit status: 0 done, 1 refused (no such job, or not now), 2 bad arguments,\n"                            \
    "             4 no answer from paragond\n"

static void status_usage(FILE *out) { fputs(ID_USAGE("status", "a job's state, device, progress, times and result"), out); }

static void cancel_usage(FILE *out) {
    fputs(ID_USAGE("cancel", "cancel a job: at once when queued, at its next step when running"), out);
}

static void delete_usage(FILE *out) {
    fputs(ID_USAGE("delete", "delete an ended job with its metrics, logs and files"), out);
}

/* A job's detail for people: what, where, when, how far, and its result or error. */
static void print_status(const json_t *job) {
    printf("job %lld  %s  \"%s\"  %s\n", (long long)json_integer_value(json_object_get(job, "id")), str(job, "kind"),
           str(job, "name"), str(job, "state"));
    printf("  device     %s (asked for %s)\n", *str(job, "device") ? str(job, "device") : "-",
           str(job, "device_requested"));
    printf("  progress   %.1f%%\n", 100 * json_number_value(json_object_get(job, "progress")));
    printf("  attempts   %lld\n", (long long)json_integer_value(json_object_get(job, "attempts")));
    static const char *const times[][2] = {{"created_at", "created"}, {"started_at", "started"},
                                           {"finished_at", "finished"}};
    for (int i = 0; i < 3; i++)
        if (*str(job, times[i][0])) printf("  %-9s  %s\n", times[i][1], str(job, times[i][0]));
    const json_t *error = json_object_get(job, "error");
    char message[1024];
    visible_text(str(error, "message"), message, sizeof message);
    if (json_is_object(error)) printf("  error      %s (%s)\n", message, str(error, "code"));
    const json_t *result = json_object_get(job, "result");
    if (json_is_object(result)) {
        printf("  result\n");
        print_result(result, 4);
    }
}

/* GET, POST or DELETE one job's path; prints the job (status, cancel) or a line (delete). */
static int id_command(int argc, char **argv, const char *cmd, void (*usage)(FILE *out), const char *method,
                      const char *suffix) {
    cli_server_args server = {0};
    bool as_json = false;
    const cli_opt options[] = {{"json", .flag = &as_json}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){cmd, usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    long long id;
    if ((rc = job_arg(cmd, argc, argv, &id))) return rc;
    char prefix[64], path[96];
    snprintf(prefix, sizeof prefix, "paragon %s", cmd);
    cli_server s;
    if ((rc = cli_server_open(&s, prefix, server.url, server.token_file))) return rc;
    snprintf(path, sizeof path, "/api/v1/jobs/%lld%s", id, suffix);
    long status;
    json_t *answer = cli_call(&s, method, path, NULL, &status);
    cli_server_close(&s);
    if (!answer) return cli_exit_for(status);
    if (as_json) print_json(answer);
    else if (!strcmp(cmd, "status")) print_status(answer);
    else if (!strcmp(cmd, "delete")) printf("job %lld deleted, with its metrics, logs and files\n", id);
    else if (status == 202) printf("job %lld stops at its next step boundary (a train job checkpoints there)\n", id);
    else printf("job %lld %s\n", id, str(answer, "state"));
    json_decref(answer);
    return CLI_EXIT_OK;
}

int cmd_status(int argc, char **argv) { return id_command(argc, argv, "status", status_usage, "GET", ""); }

int cmd_cancel(int argc, char **argv) { return id_command(argc, argv, "cancel", cancel_usage, "POST", "/cancel"); }

int cmd_delete(int argc, char **argv) { return id_command(argc, argv, "delete", delete_usage, "DELETE", ""); }

/* ---- logs ------------------------------------------------------------------------------- */

static void logs_usage(FILE *out) {
    fprintf(out, "usage: paragon logs ID [-f]\n"
                 "  a job's log, a line per entry: time, level, text\n"
                 "  -f, --follow  then the lines to come, until the job ends\n" CLI_SERVER_HELP
                 "exit status: 0 printed (with -f: the job succeeded), 1 refused or the job failed,\n"
                 "             2 bad arguments, 3 the job was cancelled, 4 no answer from paragond\n");
}

int cmd_logs(int argc, char **argv) {
    cli_server_args server = {0};
    bool follow = false;
    const cli_opt options[] = {{"follow", 'f', .flag = &follow}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"logs", logs_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    long long id;
    if ((rc = job_arg("logs", argc, argv, &id))) return rc;
    cli_server s;
    if ((rc = cli_server_open(&s, "paragon logs", server.url, server.token_file))) return rc;
    if (follow) {
        json_t *job = follow_job(&s, id, FOLLOW_LOG, NULL, &rc);
        json_decref(job);
    } else {
        char path[96];
        long status;
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/logs", id);
        char *text = cli_get_text(&s, path, &status);
        if (text) fputs(text, stdout);
        rc = text ? CLI_EXIT_OK : cli_exit_for(status);
        free(text);
    }
    cli_server_close(&s);
    return rc;
}

/* ---- metrics ---------------------------------------------------------------------------- */

static void metrics_usage(FILE *out) {
    fprintf(out, "usage: paragon metrics ID [--name NAME] [--csv | --json]\n"
                 "  a job's metrics: a row per step, a column per metric\n"
                 "  --name NAME  that metric alone (loss, test_accuracy, interactions, ...)\n"
                 "  --csv        name,step,value rows\n"
                 "  --json       the server's answer as it is\n" CLI_SERVER_HELP
                 "exit status: 0 printed, 1 refused, 2 bad arguments, 4 no answer from paragond\n");
}

/* The metrics as a table: steps down, names across (in order of first appearance). */
typedef struct metric_cell {
    int64_t step;
    size_t name;
    double value;
    bool has_value; /* null: not finite when recorded */
} metric_cell;

static int by_step(const void *a, const void *b) {
    const metric_cell *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step;
}

#define TABLE_NAMES_MAX 64

static void print_metric_table(const json_t *metrics) {
    const char *names[TABLE_NAMES_MAX];
    size_t n_names = 0, n = 0, i;
    json_t *m;
    metric_cell *cells = calloc(json_array_size(metrics) + 1, sizeof *cells);
    if (!cells) return;
    json_array_foreach(metrics, i, m) {
        const char *name = str(m, "name");
        size_t k = 0;
        while (k < n_names && strcmp(names[k], name)) k++;
        if (k == n_names) {
            if (n_names == TABLE_NAMES_MAX) continue; /* --name or --csv show the rest */
            names[n_names++] = name;
        }
        const json_t *v = json_object_get(m, "value");
        cells[n++] = (metric_cell){json_integer_value(json_object_get(m, "step")), k, json_number_value(v),
                                   json_is_number(v)};
    }
    if (!n_names) {
        printf("no metrics yet\n");
        free(cells);
        return;
    }
    qsort(cells, n, sizeof *cells, by_step);
    int width[TABLE_NAMES_MAX];
    printf("%8s", "STEP");
    for (size_t k = 0; k < n_names; k++) {
        width[k] = strlen(names[k]) > 10 ? (int)strlen(names[k]) : 10;
        printf("  %*s", width[k], names[k]);
    }
    printf("\n");
    const metric_cell *row[TABLE_NAMES_MAX];
    for (size_t a = 0; a < n;) {
        memset(row, 0, sizeof row);
        size_t b = a;
        for (; b < n && cells[b].step == cells[a].step; b++) row[cells[b].name] = &cells[b];
        printf("%8lld", (long long)cells[a].step);
        for (size_t k = 0; k < n_names; k++) {
            if (row[k] && row[k]->has_value) printf("  %*.6g", width[k], row[k]->value);
            else printf("  %*s", width[k], row[k] ? "-" : "");
        }
        printf("\n");
        a = b;
    }
    free(cells);
}

int cmd_metrics(int argc, char **argv) {
    cli_server_args server = {0};
    const char *name = NULL;
    bool csv = false, as_json = false;
    const cli_opt options[] = {{"name", .value = &name}, {"csv", .flag = &csv}, {"json", .flag = &as_json}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"metrics", metrics_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    if (csv && as_json) return usage_error("metrics", "%s", "--csv or --json, not both");
    long long id;
    if ((rc = job_arg("metrics", argc, argv, &id))) return rc;
    cli_server s;
    if ((rc = cli_server_open(&s, "paragon metrics", server.url, server.token_file))) return rc;
    pgn_text path = {0};
    pgn_text_printf(&path, "/api/v1/jobs/%lld/metrics", id);
    cli_query_add(&s, &path, "name", name);
    char *url_path = pgn_text_take(&path);
    long status = 0;
    json_t *answer = url_path ? cli_call(&s, "GET", url_path, NULL, &status) : NULL;
    free(url_path);
    cli_server_close(&s);
    if (!answer) return cli_exit_for(status);
    const json_t *metrics = json_object_get(answer, "metrics");
    if (as_json) {
        print_json(answer);
    } else if (csv) {
        size_t i;
        json_t *m;
        printf("name,step,value\n");
        json_array_foreach(metrics, i, m)
            printf("%s,%lld,%.17g\n", str(m, "name"), (long long)json_integer_value(json_object_get(m, "step")),
                   json_number_value(json_object_get(m, "value")));
    } else {
        print_metric_table(metrics);
    }
    json_decref(answer);
    return CLI_EXIT_OK;
}

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
    if (optind < argc) return usage_error("export", "unexpected argument '%s'", argv[optind]);
    if ((bench ? 1 : 0) + (checkpoint ? 1 : 0) + (weights ? 1 : 0) != 1)
        return usage_error("export", "%s", "one of --bench, --checkpoint ID or --weights ID");
    if (!bench && (suite || device || format || job || since || until))
        return usage_error("export", "%s", "--suite, --device, --job, --since, --until and --format are for --bench");
    long long job_id = 0;
    if (job && !cli_job_id("paragon export", job, &job_id)) return CLI_EXIT_USAGE;
    if (!bench && !strcmp(to, "-") && isatty(STDOUT_FILENO))
        return usage_error("export", "%s", "a safetensors file is binary: -o FILE says where it goes");
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
        snprintf(out, size, "not usable: %s", str(d, "problem") ? str(d, "problem") : "?");
    } else if (dims) {
        snprintf(out, size, "%s ", str(d, "kind") ? str(d, "kind") : "");
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
    if (rm && optind + 2 != argc) return usage_error("datasets", "%s", "rm takes one NAME");
    if (!rm && optind < argc) return usage_error("datasets", "unexpected argument '%s'", argv[optind]);
    cli_server s;
    rc = cli_server_open(&s, "paragon datasets", server.url, server.token_file);
    if (rc) return rc;
    if (rm) {
        rc = datasets_rm(&s, argv[optind + 1]);
        cli_server_close(&s);
        return rc;
    }
    long status = 0;
    json_t *v = cli_call(&s, "GET", "/api/v1/datasets", NULL, &status);
    cli_server_close(&s);
    if (!v) return cli_exit_for(status);
    if (as_json) {
        print_json(v);
        json_decref(v);
        return CLI_EXIT_OK;
    }
    json_t *list = json_object_get(v, "datasets");
    if (!json_array_size(list)) printf("no datasets (paragon upload FILE puts one there)\n");
    else printf("%-32s %12s %-7s %-16s %-12s %s\n", "NAME", "BYTES", "FORMAT", "MODIFIED", "SHA256", "HOLDS");
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d) {
        char when[32], shape[256];
        short_time(str(d, "modified_at") ? str(d, "modified_at") : "", when, sizeof when);
        dataset_shape(d, shape, sizeof shape);
        printf("%-32s %12lld %-7s %-16s %.12s %s\n", str(d, "name"),
               (long long)json_integer_value(json_object_get(d, "bytes")), str(d, "format"), when,
               str(d, "sha256") ? str(d, "sha256") : "", shape);
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
    if (optind >= argc) return usage_error("upload", "%s", "missing the FILE to upload");
    if (optind + 1 < argc) return usage_error("upload", "only one FILE, got '%s' too", argv[optind + 1]);
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
        print_json(v);
    } else {
        char shape[256];
        dataset_shape(v, shape, sizeof shape);
        printf("%s %s (%lld bytes, %s, %s; sha256 %s)\n", status == 201 ? "uploaded" : "replaced",
               str(v, "name"), (long long)json_integer_value(json_object_get(v, "bytes")), str(v, "format"),
               shape, str(v, "sha256"));
    }
    json_decref(v);
    return CLI_EXIT_OK;
}

/* ---- generate --job ---------------------------------------------------------------------- */

typedef struct gen_follow {
    bool quiet;
    bool ended;
    json_t *job; /* the final state's job */
} gen_follow;

static cli_stream_next on_generate_event(void *ctx, const cli_event *ev) {
    gen_follow *g = ctx;
    json_t *d = json_loads(ev->data, 0, NULL);
    if (!d) return CLI_STREAM_MORE;
    if (!strcmp(ev->name, "token") && !g->quiet) {
        fputs(str(d, "text"), stdout);
        fflush(stdout);
    } else if ((!strcmp(ev->name, "state") || !strcmp(ev->name, "reset")) && is_ended(d)) {
        g->ended = true;
        json_decref(g->job);
        g->job = json_incref(d);
    }
    json_decref(d);
    return g->ended ? CLI_STREAM_DONE : CLI_STREAM_MORE;
}

int cli_generate_remote(const char *url, const char *token_file, long long job, json_t *fields, bool as_json) {
    cli_server s;
    int rc = cli_server_open(&s, "paragon generate", url, token_file);
    if (rc) return rc;
    json_object_del(fields, "kind");
    json_object_del(fields, "name");
    json_object_set_new(fields, "stream", json_true());
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/generate", job);
    gen_follow g = {.quiet = as_json};
    long status;
    const char *prompt = json_string_value(json_object_get(fields, "prompt"));
    if (!as_json && prompt) {
        fputs(prompt, stdout); /* as the local command: the text continues it */
        fflush(stdout);
    }
    cli_catch_interrupt();
    rc = cli_stream(&s, "POST", path, fields, NULL, on_generate_event, &g, &status);
    if (rc == -2) {
        fprintf(stderr, "\nparagon generate: stopped; the generate job goes on (paragon jobs --kind generate)\n");
        rc = CLI_EXIT_INTERRUPTED;
    } else if (rc < 0) {
        rc = cli_exit_for(status);
    } else if (!g.ended) {
        fprintf(stderr, "paragon generate: the stream ended before the generation did\n");
        rc = CLI_EXIT_UNREACHABLE;
    } else {
        const json_t *error = json_object_get(g.job, "error"), *result = json_object_get(g.job, "result");
        if (as_json) print_json(g.job);
        else if (json_is_object(error)) fprintf(stderr, "\nparagon generate: %s\n", str(error, "message"));
        else
            fprintf(stderr, "\n(job %lld: %lld characters, %.0f characters/s on %s)\n",
                    (long long)json_integer_value(json_object_get(g.job, "id")),
                    (long long)json_integer_value(json_object_get(result, "tokens")),
                    json_number_value(json_object_get(result, "tokens_per_second")), str(g.job, "device"));
        rc = job_exit(g.job);
    }
    json_decref(g.job);
    cli_server_close(&s);
    return rc;
}
