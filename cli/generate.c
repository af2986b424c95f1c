/* generate.c: `paragon generate CHECKPOINT --prompt TEXT`: text from a gpt checkpoint on this
 * machine, printed a character at a time as it comes (the same engine call and the same text as
 * POST /api/v1/jobs/{id}/generate with the same seed); with --job ID, that request to paragond,
 * its stream printed the same way. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "http.h"
#include "paragon.h"

static void generate_usage(FILE *out) {
    fprintf(out,
            "usage: paragon generate CHECKPOINT --prompt TEXT [--max-tokens N] [--temperature T]\n"
            "                        [--top-k K] [--seed S] [--device DEV] [--json]\n"
            "       paragon generate --job ID --prompt TEXT [the same options] [--url URL]\n"
            "  CHECKPOINT     a gpt job's checkpoint.safetensors (paragon run --checkpoint-dir, or\n"
            "                 paragon export --checkpoint ID), generated from on this machine\n"
            "  --job ID       paragond's gpt job ID generates instead, as a generate job (on the\n"
            "                 device it trained on unless --device says)\n"
            "  --prompt       the text to continue: the model's characters, at most its context\n"
            "  --max-tokens   characters to generate [200]\n"
            "  --temperature  0 always takes the likeliest character [1]\n"
            "  --top-k        draw among the K likeliest only; 0: all [0]\n"
            "  --seed         the draws' seed: the same seed gives the same text on every device [0]\n"
            "  --device       auto, cpu, gpu, host or a device id [auto]\n"
            "  --json         print the result object instead of the text\n" CLI_SERVER_HELP
            "exit status: 0 done, 1 the generation failed or was refused, 2 bad arguments,\n"
            "             4 no answer from paragond (--job), 130 Ctrl-C\n");
}

/* The generate fields the options give (NULL: not given; the numbers were checked as they came). */
typedef struct gen_fields {
    const char *prompt, *max_tokens, *temperature, *top_k, *seed;
} gen_fields;

/* The generate request's body: kind and name, then the fields given. New reference. */
static json_t *generate_body(const gen_fields *g) {
    json_t *fields = json_pack("{s:s, s:s}", "kind", "generate", "name", "generate");
    if (g->prompt) json_object_set_new(fields, "prompt", json_string(g->prompt));
    const struct {
        const char *key, *text;
        bool real;
    } numbers[] = {{"max_tokens", g->max_tokens, false}, {"temperature", g->temperature, true},
                   {"top_k", g->top_k, false},           {"seed", g->seed, false}};
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
        if (numbers[i].text)
            json_object_set_new(fields, numbers[i].key,
                                numbers[i].real ? json_real(strtod(numbers[i].text, NULL))
                                                : json_integer(strtoll(numbers[i].text, NULL, 10)));
    return fields;
}

/* ---- --job: on paragond ----------------------------------------------------------------- */

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
        fputs(cli_str(d, "text"), stdout);
        fflush(stdout);
    } else if ((!strcmp(ev->name, "state") || !strcmp(ev->name, "reset")) && cli_job_ended(d)) {
        g->ended = true;
        json_decref(g->job);
        g->job = json_incref(d);
    }
    json_decref(d);
    return g->ended ? CLI_STREAM_DONE : CLI_STREAM_MORE;
}

/* POST /api/v1/jobs/{job}/generate with fields (the body the flags built; kind and name are
 * dropped), streaming the text in as it comes. */
static int generate_remote(const char *url, const char *token_file, long long job, json_t *fields, bool as_json) {
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
        if (as_json) cli_print_json(g.job);
        else if (json_is_object(error)) fprintf(stderr, "\nparagon generate: %s\n", cli_str(error, "message"));
        else
            fprintf(stderr, "\n(job %lld: %lld characters, %.0f characters/s on %s)\n",
                    (long long)json_integer_value(json_object_get(g.job, "id")),
                    (long long)json_integer_value(json_object_get(result, "tokens")),
                    json_number_value(json_object_get(result, "tokens_per_second")), cli_str(g.job, "device"));
        rc = cli_job_exit(g.job);
    }
    json_decref(g.job);
    cli_server_close(&s);
    return rc;
}

/* ---- on this machine -------------------------------------------------------------------- */

typedef struct {
    bool quiet;
} gen_ctx;

static void on_text(void *ctx, int64_t index, const char *text, size_t len) {
    (void)index;
    if (((gen_ctx *)ctx)->quiet) return;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

/* ---- the command ------------------------------------------------------------------------ */

int cmd_generate(int argc, char **argv) {
    cli_server_args server = {0};
    gen_fields g = {0};
    const char *device = NULL, *job = NULL;
    bool as_json = false;
    const cli_opt options[] = {{"prompt", .value = &g.prompt},
                               {"max-tokens", .value = &g.max_tokens, .check = cli_check_integer},
                               {"temperature", .value = &g.temperature, .check = cli_check_number},
                               {"top-k", .value = &g.top_k, .check = cli_check_integer},
                               {"seed", .value = &g.seed, .check = cli_check_integer},
                               {"device", .value = &device},
                               {"json", .flag = &as_json},
                               {"job", .value = &job},
                               {0}};
    int rc = cli_args(argc, argv, &(cli_command_args){"generate", generate_usage, options, &server});
    if (rc != CLI_ARGS_GO_ON) return rc;
    json_t *fields = generate_body(&g);
    if (job) {
        long long id;
        if (optind < argc) {
            fprintf(stderr, "paragon generate: --job or a CHECKPOINT, not both ('%s')\n", argv[optind]);
            json_decref(fields);
            return CLI_EXIT_USAGE;
        }
        if (!cli_job_id("paragon generate: --job", job, &id)) {
            json_decref(fields);
            return CLI_EXIT_USAGE;
        }
        if (device) json_object_set_new(fields, "device", json_string(device));
        rc = generate_remote(server.url, server.token_file, id, fields, as_json);
        json_decref(fields);
        return rc;
    }
    if (server.url || server.token_file) {
        fprintf(stderr, "paragon generate: --url and --token-file go with --job (a CHECKPOINT is read here)\n");
        json_decref(fields);
        return CLI_EXIT_USAGE;
    }
    if (!device) device = "auto";
    if (optind != argc - 1) {
        fprintf(stderr, "paragon generate: %s\n", optind < argc ? "only one checkpoint" : "missing the checkpoint");
        generate_usage(stderr);
        json_decref(fields);
        return 2;
    }
    const char *checkpoint = argv[optind];
    json_object_set_new(fields, "device", json_string(device));
    pgn_job_spec spec;
    pgn_error err = {0};
    rc = pgn_spec_parse(fields, &spec, &err);
    json_decref(fields);
    if (rc) {
        fprintf(stderr, "paragon generate: %s\n", err.message);
        return 2;
    }
    if (pgn_generate_check(&spec.generate, checkpoint, NULL, &err)) {
        fprintf(stderr, "paragon generate: %s\n", err.message);
        pgn_spec_free(&spec);
        return err.code == PGN_E_INVALID_SPEC ? 2 : 1;
    }
    pgn_device_info chosen;
    pgn_device *dev = NULL;
    rc = pgn_device_open_named(spec.device, &chosen, &dev, &err);
    json_t *result = NULL;
    gen_ctx ctx = {as_json};
    if (rc == 0) {
        if (!as_json) fputs(spec.generate.prompt, stdout);
        pgn_run_options opts = {.source_checkpoint = checkpoint};
        pgn_run_hooks hooks = {.ctx = &ctx, .on_text = on_text};
        rc = pgn_job_run(&spec, dev, &opts, &hooks, &result, &err);
    }
    pgn_device_close(dev);
    pgn_spec_free(&spec);
    if (rc) {
        fprintf(stderr, "%sparagon generate: %s\n", as_json ? "" : "\n", err.message);
        return 1;
    }
    if (as_json) {
        char *s = pgn_json_dumps(result);
        printf("%s\n", s);
        free(s);
    } else {
        fprintf(stderr, "\n(%lld characters, %.0f characters/s on %s)\n",
                (long long)json_integer_value(json_object_get(result, "tokens")),
                json_number_value(json_object_get(result, "tokens_per_second")),
                json_string_value(json_object_get(result, "device")));
    }
    json_decref(result);
    return 0;
}
