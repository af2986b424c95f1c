/* client.c: what the commands that talk to paragond share (client.h): their usage errors and job
 * id operand, jobs and results printed for people, and following a job over its event stream to
 * its end, reconnecting when paragond restarts. */
#include "client.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "paragon.h"
#include "progress.h"

/* A reconnecting follower gives up after this many tries a second apart (a restart of paragond
 * takes a few seconds; a server gone for a minute is gone). */
#define RECONNECT_TRIES 60

/* ---- arguments, and jobs printed for people --------------------------------------------- */

int cli_usage_error(const char *cmd, const char *fmt, const char *what) {
    fprintf(stderr, "paragon %s: ", cmd);
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n(paragon %s --help says how to call it)\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_job_arg(const char *cmd, int argc, char **argv, long long *id) {
    if (optind >= argc) return cli_usage_error(cmd, "%s", "missing the job id");
    if (optind + 1 < argc) return cli_usage_error(cmd, "only one job id, got '%s' too", argv[optind + 1]);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "paragon %s", cmd);
    return cli_job_id(prefix, argv[optind], id) ? 0 : CLI_EXIT_USAGE;
}

void cli_print_json(const json_t *v) {
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) printf("%s\n", s);
    free(s);
}

json_t *cli_listing(cli_server *s, const char *path, bool as_json, int *rc) {
    long status = 0;
    json_t *v = cli_call(s, "GET", path, NULL, &status);
    cli_server_close(s);
    *rc = v ? CLI_EXIT_OK : cli_exit_for(status);
    if (v && as_json) {
        cli_print_json(v);
        json_decref(v);
        return NULL;
    }
    return v;
}

static bool is_state(const json_t *job, const char *state) {
    const char *s = json_string_value(json_object_get(job, "state"));
    return s && !strcmp(s, state);
}

bool cli_job_ended(const json_t *job) {
    return is_state(job, "succeeded") || is_state(job, "failed") || is_state(job, "cancelled");
}

int cli_job_exit(const json_t *job) {
    return is_state(job, "succeeded") ? CLI_EXIT_OK : is_state(job, "cancelled") ? CLI_EXIT_CANCELLED : CLI_EXIT_FAILED;
}

const char *cli_str(const json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

void cli_visible_text(const char *s, char *out, size_t size) {
    char *shown = pgn_text_visible(s);
    snprintf(out, size, "%s", shown ? shown : "");
    free(shown);
}

void cli_scalar_text(const json_t *v, char *out, size_t size) {
    if (json_is_string(v)) cli_visible_text(json_string_value(v), out, size);
    else if (json_is_integer(v)) snprintf(out, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) snprintf(out, size, "%.6g", json_real_value(v));
    else if (json_is_boolean(v)) snprintf(out, size, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_array(v)) snprintf(out, size, "[%zu items]", json_array_size(v));
    else if (json_is_object(v)) snprintf(out, size, "{%zu fields}", json_object_size(v));
    else snprintf(out, size, "-");
}

void cli_print_result(const json_t *result, int indent) {
    const char *key;
    json_t *v;
    size_t width = 0;
    json_object_foreach((json_t *)result, key, v) if (strlen(key) > width) width = strlen(key);
    json_object_foreach((json_t *)result, key, v) {
        char text[96];
        cli_scalar_text(v, text, sizeof text);
        if (strlen(text) == sizeof text - 1) memcpy(text + sizeof text - 4, "...", 3);
        printf("%*s%-*s  %s\n", indent, "", (int)width, key, text);
    }
}

void cli_print_ending(const json_t *job) {
    long long id = (long long)json_integer_value(json_object_get(job, "id"));
    const json_t *error = json_object_get(job, "error");
    printf("job %lld %s", id, cli_str(job, "state"));
    char message[1024];
    cli_visible_text(cli_str(error, "message"), message, sizeof message);
    if (json_is_object(error)) printf(": %s", message);
    printf("\n");
    const json_t *result = json_object_get(job, "result");
    if (json_is_object(result)) cli_print_result(result, 2);
}

void cli_short_time(const char *t, char *out, size_t size) {
    if (strlen(t) >= 19) snprintf(out, size, "%.5s %.8s", t + 5, t + 11);
    else snprintf(out, size, "%s", *t ? t : "-");
}

/* ---- following a job -------------------------------------------------------------------- */

typedef struct follower {
    cli_server *s;
    long long id;
    cli_follow_mode mode;
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
        if (f->mode == CLI_FOLLOW_LOG) {
            printf("%s\n", copy);
        } else if (f->mode == CLI_FOLLOW_PROGRESS) {
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
        if (f->mode != CLI_FOLLOW_QUIET) catch_up_log(f);
        double p = json_real_value(json_object_get(d, "progress"));
        if (f->mode == CLI_FOLLOW_PROGRESS && is_state(d, "running")) cli_progress_fraction(&f->bar, p);
        f->ended = cli_job_ended(d);
    } else if (!strcmp(ev->name, "log") && f->mode != CLI_FOLLOW_QUIET) {
        int64_t seq = json_integer_value(json_object_get(d, "seq"));
        if (seq > f->log_seq + 1) {
            catch_up_log(f); /* includes this line */
        } else if (seq == f->log_seq + 1) {
            char line[2048];
            cli_visible_text(cli_str(d, "line"), line, sizeof line);
            if (f->mode == CLI_FOLLOW_LOG)
                printf("%s %-5s %s\n", cli_str(d, "time"), cli_str(d, "level"), line);
            else
                cli_progress_log(&f->bar, line);
            f->log_seq = seq;
            fflush(stdout);
        }
    } else if (!strcmp(ev->name, "metric") && f->mode == CLI_FOLLOW_PROGRESS) {
        cli_progress_metric(&f->bar, cli_str(d, "name"), json_integer_value(json_object_get(d, "step")),
                            json_number_value(json_object_get(d, "value")));
    } else if (!strcmp(ev->name, "progress") && f->mode == CLI_FOLLOW_PROGRESS) {
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
    if (strcmp(cli_str(spec, "kind"), "train")) return 0;
    if (!strcmp(cli_str(model, "type"), "gpt")) return 0; /* its figure is tokens/s, reported */
    int64_t b = json_integer_value(json_object_get(spec, "batch_size"));
    const json_t *dist = json_object_get(spec, "distributed");
    if (json_is_object(dist) && !strcmp(cli_str(dist, "algorithm"), "ddp"))
        b *= json_integer_value(json_object_get(dist, "ranks"));
    return b;
}

json_t *cli_follow_job(cli_server *s, long long id, cli_follow_mode mode, const json_t *spec, int *rc) {
    follower f = {.s = s, .id = id, .mode = mode};
    if (mode == CLI_FOLLOW_PROGRESS) {
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
            if (mode == CLI_FOLLOW_PROGRESS) cli_progress_end(&f.bar);
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
    if (mode == CLI_FOLLOW_PROGRESS) cli_progress_end(&f.bar);
    snprintf(path, sizeof path, "/api/v1/jobs/%lld", id);
    json_t *job = cli_call(s, "GET", path, NULL, &status);
    *rc = job ? cli_job_exit(job) : cli_exit_for(status);
    return job;
}
