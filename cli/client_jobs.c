/* client_jobs.c: the client commands about jobs: submit (then --wait or --follow), jobs, status,
 * cancel, delete, logs (-f) and metrics, through paragond's REST API and event streams (http.c).
 * Each prints for people by default and JSON with --json; exit statuses in cli.h. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "http.h"
#include "paragon.h"

/* ---- submit ----------------------------------------------------------------------------- */

static void submit_usage(FILE *out) {
    fprintf(out,
            "usage: paragon submit SPEC [--device DEV] [--name NAME] [--tag KEY:VALUE]... [--priority N]\n"
            "                      [--wait | --follow] [--json | -q]\n"
            "  SPEC          a job spec (JSON), an HVM2 or pgl program (FILE.hvm, FILE.pgl: an inet job)\n"
            "                or - (standard input)\n"
            "  --device DEV  where it runs: auto, cpu, gpu, host, all (bench) or a device id [the spec's]\n"
            "  --name NAME   the job's name [the spec's]\n"
            "  --tag K:V     a tag (key K, value V) beside the spec's \"tags\"; repeatable\n"
            "  --priority N  -1000..1000 [the spec's, else 0]: its device takes higher first, and a\n"
            "                higher one stops a train job running there at its next step (it resumes)\n"
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

/* Each --tag KEY:VALUE as {"KEY": "VALUE"} (the server judges them); NULL after writing into bad
 * which one is not KEY:VALUE. */
static json_t *submit_tags(const cli_values *tags, char *bad, size_t size) {
    json_t *out = json_object();
    for (size_t i = 0; i < tags->count; i++) {
        const char *colon = strchr(tags->at[i], ':');
        json_t *value = colon ? json_string(colon + 1) : NULL;
        if (!colon || colon == tags->at[i] || !value ||
            json_object_setn_new(out, tags->at[i], (size_t)(colon - tags->at[i]), value) < 0) {
            snprintf(bad, size, "--tag '%.100s': a tag is KEY:VALUE in UTF-8 (team:vision)", tags->at[i]);
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Where a queued job waits, when it waits behind something (its "queue": submit and status). */
static void print_queue(const json_t *job, const char *indent);

/* The same for job id, read alone (a submission's reply does not carry it). */
static void print_queue_of(cli_server *s, long long id, const char *indent) {
    char path[64];
    long status;
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", id);
    json_t *now = cli_call(s, "GET", path, NULL, &status);
    if (now) print_queue(now, indent);
    json_decref(now);
}

static void print_queue(const json_t *job, const char *indent) {
    const json_t *q = json_object_get(job, "queue");
    if (!json_is_object(q) || (!json_object_get(q, "running") && json_integer_value(json_object_get(q, "ahead")) == 0))
        return;
    char reason[512];
    cli_visible_text(cli_str(q, "reason"), reason, sizeof reason);
    printf("%s%s\n", indent, reason);
}

int cmd_submit(int argc, char **argv) {
    cli_server_args server = {0};
    const char *device = NULL, *name = NULL, *priority = NULL;
    bool wait = false, follow = false, as_json = false, quiet = false;
    cli_values tags = {0}; /* the server judges them */
    const cli_opt options[] = {{"device", .value = &device}, {"name", .value = &name},   {"wait", .flag = &wait},
                               {"follow", .flag = &follow},  {"json", .flag = &as_json}, {"quiet", 'q', .flag = &quiet},
                               {"tag", .values = &tags},     {"priority", .value = &priority}, {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"submit", submit_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    char bad[200];
    json_t *tag_obj = submit_tags(&tags, bad, sizeof bad);
    free(tags.at);
    if (!tag_obj) return cli_usage_error("submit", "%s", bad);
    char *end = NULL;
    long long prio = priority ? strtoll(priority, &end, 10) : 0;
    if (priority && (!*priority || *end))
        snprintf(bad, sizeof bad, "--priority '%.60s': a whole number (-1000..1000)", priority);
    else if (optind >= argc) snprintf(bad, sizeof bad, "missing the job spec (a file, or - for standard input)");
    else if (optind + 1 < argc) snprintf(bad, sizeof bad, "only one spec, got '%.100s' too", argv[optind + 1]);
    else if (wait && follow) snprintf(bad, sizeof bad, "--wait or --follow, not both");
    else if (quiet && (as_json || follow)) snprintf(bad, sizeof bad, "-q prints the id alone: not with --json or --follow");
    else bad[0] = 0;
    if (bad[0]) {
        json_decref(tag_obj);
        return cli_usage_error("submit", "%s", bad);
    }
    cli_server s;
    rc = cli_server_open(&s, "paragon submit", server.url, server.token_file);
    if (rc) {
        json_decref(tag_obj);
        return rc;
    }
    json_t *spec = read_spec(argv[optind]);
    if (!spec) {
        json_decref(tag_obj);
        cli_server_close(&s);
        return CLI_EXIT_FAILED;
    }
    if (device) json_object_set_new(spec, "device", json_string(device));
    if (name) json_object_set_new(spec, "name", json_string(name));
    if (priority) json_object_set_new(spec, "priority", json_integer(prio)); /* the server judges its range */
    if (json_object_size(tag_obj)) { /* beside the spec's own; --tag wins for a key in both */
        json_t *own = json_object_get(spec, "tags");
        if (json_is_object(own)) json_object_update(own, tag_obj);
        else json_object_set(spec, "tags", tag_obj);
    }
    json_decref(tag_obj);
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
                printf("job %lld queued: %s \"%s\" on %s%s\n", id, cli_str(job, "kind"), cli_str(job, "name"), cli_str(job, "device"),
                       n > 1 ? "" : "");
            else
                printf("job %lld queued\n", id);
            if (n == 1 && !strcmp(cli_str(job, "state"), "queued")) print_queue_of(&s, id, "  ");
            continue;
        }
        if (follow) printf("job %lld queued on %s; following it (Ctrl-C stops following, not the job)\n", id,
                           i == 0 ? cli_str(job, "device") : "its device");
        if (n == 1 && !as_json && !strcmp(cli_str(job, "state"), "queued")) print_queue_of(&s, id, follow ? "  " : "");
        int jrc;
        json_t *ended = cli_follow_job(&s, id, follow ? CLI_FOLLOW_PROGRESS : CLI_FOLLOW_QUIET, json_object_get(job, "spec"), &jrc);
        if (ended) {
            if (as_json) cli_print_json(ended);
            else cli_print_ending(ended);
        }
        json_decref(ended);
        if (jrc > rc) rc = jrc;
        if (jrc == CLI_EXIT_INTERRUPTED || jrc == CLI_EXIT_UNREACHABLE) break;
    }
    if (as_json && !wait && !follow) cli_print_json(job);
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
            "  --kind   %s\n"
            "  --tag    only jobs tagged KEY with VALUE; repeatable, all must match\n"
            "  --limit  how many, newest first [20]\n"
            "  --offset skip the newest N first [0]\n"
            "  --cursor the page after the one that printed this cursor (it does not shift as jobs\n"
            "           arrive)\n"
            "  --json   the server's answer as it is\n" CLI_SERVER_HELP
            "exit status: 0 listed, 1 refused, 2 bad arguments, 4 no answer from paragond\n",
            pgn_job_kinds_text(false));
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
    rc = optind < argc ? cli_usage_error("jobs", "unexpected argument '%s'", argv[optind])
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
        cli_print_json(page);
        json_decref(page);
        return CLI_EXIT_OK;
    }
    json_t *jobs = json_object_get(page, "jobs");
    size_t i;
    json_t *job;
    printf("%6s  %-8s  %-9s  %5s  %-14s  %-14s  %-16s  %s\n", "ID", "KIND", "STATE", "DONE", "DEVICE", "CREATED",
           "NAME", "TAGS, SUMMARY");
    json_array_foreach(jobs, i, job) {
        char created[32], summary[320] = "";
        cli_short_time(cli_str(job, "created_at"), created, sizeof created);
        /* the row's tags ("key:value" each), then its summary: its result's headline figures,
         * "key value" each */
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(job, "tags"), key, v) {
            char text[160];
            size_t used = strlen(summary);
            cli_visible_text(json_string_value(v) ? json_string_value(v) : "", text, sizeof text);
            snprintf(summary + used, sizeof summary - used, "%s%s:%s", used ? " " : "", key, text);
        }
        json_object_foreach(json_object_get(job, "summary"), key, v) {
            char text[96];
            cli_scalar_text(v, text, sizeof text);
            size_t used = strlen(summary);
            snprintf(summary + used, sizeof summary - used, "%s%s %s", used ? "  " : "", key, text);
        }
        printf("%6lld  %-8s  %-9s  %4.0f%%  %-14.14s  %-14s  %-16.16s  %s\n",
               (long long)json_integer_value(json_object_get(job, "id")), cli_str(job, "kind"), cli_str(job, "state"),
               100 * json_number_value(json_object_get(job, "progress")), cli_str(job, "device"), created, cli_str(job, "name"),
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

static void status_usage(FILE *out) {
    fputs(ID_USAGE("status", "a job's state, device, progress, times and result"), out);
}

static void cancel_usage(FILE *out) {
    fputs(ID_USAGE("cancel", "cancel a job: at once when queued, at its next step when running"), out);
}

static void resume_usage(FILE *out) {
    fputs(ID_USAGE("resume", "queue a cancelled job again: it continues from its last checkpoint"), out);
}

static void delete_usage(FILE *out) {
    fputs(ID_USAGE("delete", "delete an ended job with its metrics, logs and files"), out);
}

/* "850 ms", "4.20 s", "3m 44s", "1h 05m": a run's length as the dashboard writes it. */
static const char *run_length(double s, char *out, size_t size) {
    if (s < 1) snprintf(out, size, "%.0f ms", s * 1000);
    else if (s < 60) snprintf(out, size, s < 10 ? "%.2f s" : "%.1f s", s);
    else if (s < 3600) snprintf(out, size, "%dm %02ds", (int)(s / 60), (int)s % 60);
    else snprintf(out, size, "%dh %02dm", (int)(s / 3600), (int)(s / 60) % 60);
    return out;
}

/* How long the job ran (so far, while it runs) beside what the cost model estimated for it where
 * it was placed: "run time   3m 44s (estimated 3m 38s)". */
static void print_run_time(const json_t *job) {
    const json_t *estimate = json_object_get(job, "estimate");
    double guess = json_number_value(json_object_get(estimate, "seconds"));
    char ran[32] = "", est[48] = "";
    int64_t started, ended;
    if (pgn_utc_ms(cli_str(job, "started_at"), &started)) {
        bool over = pgn_utc_ms(cli_str(job, "finished_at"), &ended);
        if (!over) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            ended = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        }
        run_length(ended > started ? (double)(ended - started) / 1000 : 0, ran, sizeof ran);
        if (!over) strcat(ran, " so far");
    }
    if (guess >= 0.001) {
        char words[32];
        snprintf(est, sizeof est, "%sestimated %s%s", ran[0] ? " (" : "", run_length(guess, words, sizeof words),
                 ran[0] ? ")" : "");
    }
    if (ran[0] || est[0]) printf("  run time   %s%s\n", ran, est);
}

/* A job's detail for people: what, where, when, how far, and its result or error. */
static void print_status(const json_t *job) {
    printf("job %lld  %s  \"%s\"  %s\n", (long long)json_integer_value(json_object_get(job, "id")), cli_str(job, "kind"),
           cli_str(job, "name"), cli_str(job, "state"));
    printf("  device     %s (asked for %s)\n", *cli_str(job, "device") ? cli_str(job, "device") : "-",
           cli_str(job, "device_requested"));
    printf("  progress   %.1f%%\n", 100 * json_number_value(json_object_get(job, "progress")));
    if (json_integer_value(json_object_get(job, "priority")))
        printf("  priority   %lld\n", (long long)json_integer_value(json_object_get(job, "priority")));
    print_queue(job, "  waits      ");
    const char *key;
    json_t *value;
    if (json_object_size(json_object_get(job, "tags"))) {
        printf("  tags      ");
        json_object_foreach(json_object_get(job, "tags"), key, value) {
            char k[160], v[400];
            cli_visible_text(key, k, sizeof k);
            cli_visible_text(json_string_value(value) ? json_string_value(value) : "", v, sizeof v);
            printf(" %s:%s", k, v);
        }
        printf("\n");
    }
    printf("  attempts   %lld\n", (long long)json_integer_value(json_object_get(job, "attempts")));
    size_t i;
    const json_t *run;
    json_array_foreach(json_object_get(job, "runs"), i, run) /* where each attempt ran */
        printf("    run %lld  node %s  device %s  %s\n", (long long)json_integer_value(json_object_get(run, "attempt")),
               cli_str(run, "node"), cli_str(run, "device"),
               *cli_str(run, "outcome") ? cli_str(run, "outcome") : "running");
    static const char *const times[][2] = {{"created_at", "created"}, {"started_at", "started"},
                                           {"finished_at", "finished"}};
    for (int i = 0; i < 3; i++)
        if (*cli_str(job, times[i][0])) printf("  %-9s  %s\n", times[i][1], cli_str(job, times[i][0]));
    print_run_time(job);
    const json_t *error = json_object_get(job, "error");
    char message[1024];
    cli_visible_text(cli_str(error, "message"), message, sizeof message);
    if (json_is_object(error)) printf("  error      %s (%s)\n", message, cli_str(error, "code"));
    const json_t *result = json_object_get(job, "result");
    if (json_is_object(result)) {
        printf("  result\n");
        cli_print_result(result, 4);
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
    if ((rc = cli_job_arg(cmd, argc, argv, &id))) return rc;
    char prefix[64], path[96];
    snprintf(prefix, sizeof prefix, "paragon %s", cmd);
    cli_server s;
    if ((rc = cli_server_open(&s, prefix, server.url, server.token_file))) return rc;
    snprintf(path, sizeof path, "/api/v1/jobs/%lld%s", id, suffix);
    long status;
    json_t *answer = cli_call(&s, method, path, NULL, &status);
    cli_server_close(&s);
    if (!answer) return cli_exit_for(status);
    if (as_json) cli_print_json(answer);
    else if (!strcmp(cmd, "status")) print_status(answer);
    else if (!strcmp(cmd, "delete")) printf("job %lld deleted, with its metrics, logs and files\n", id);
    else if (status == 202) printf("job %lld stops at its next step boundary (a train job checkpoints there)\n", id);
    else if (!strcmp(cmd, "resume")) {
        bool ran = json_integer_value(json_object_get(answer, "attempts")) > 0;
        printf("job %lld queued again on %s%s\n", id, cli_str(answer, "device"),
               !ran ? "" : !strcmp(cli_str(answer, "kind"), "train") ? "; it continues from its last checkpoint"
                                                                    : "; it runs again from the start");
        print_queue(answer, "  ");
    }
    else printf("job %lld %s\n", id, cli_str(answer, "state"));
    json_decref(answer);
    return CLI_EXIT_OK;
}

int cmd_status(int argc, char **argv) { return id_command(argc, argv, "status", status_usage, "GET", ""); }

int cmd_cancel(int argc, char **argv) { return id_command(argc, argv, "cancel", cancel_usage, "POST", "/cancel"); }

int cmd_resume(int argc, char **argv) { return id_command(argc, argv, "resume", resume_usage, "POST", "/resume"); }

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
    if ((rc = cli_job_arg("logs", argc, argv, &id))) return rc;
    cli_server s;
    if ((rc = cli_server_open(&s, "paragon logs", server.url, server.token_file))) return rc;
    if (follow) {
        json_t *job = cli_follow_job(&s, id, CLI_FOLLOW_LOG, NULL, &rc);
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
        const char *name = cli_str(m, "name");
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
    if (csv && as_json) return cli_usage_error("metrics", "%s", "--csv or --json, not both");
    long long id;
    if ((rc = cli_job_arg("metrics", argc, argv, &id))) return rc;
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
        cli_print_json(answer);
    } else if (csv) {
        size_t i;
        json_t *m;
        printf("name,step,value\n");
        json_array_foreach(metrics, i, m)
            printf("%s,%lld,%.17g\n", cli_str(m, "name"), (long long)json_integer_value(json_object_get(m, "step")),
                   json_number_value(json_object_get(m, "value")));
    } else {
        print_metric_table(metrics);
    }
    json_decref(answer);
    return CLI_EXIT_OK;
}
