/* generate.c: `paragon generate CHECKPOINT --prompt TEXT`: text from a gpt checkpoint on this
 * machine, printed a character at a time as it comes (the same engine call and the same text as
 * POST /api/v1/jobs/{id}/generate with the same seed). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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

typedef struct {
    bool quiet;
} gen_ctx;

static void on_text(void *ctx, int64_t index, const char *text, size_t len) {
    (void)index;
    if (((gen_ctx *)ctx)->quiet) return;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

int cmd_generate(int argc, char **argv) {
    static const struct option options[] = {
        {"prompt", required_argument, NULL, 'p'},      {"max-tokens", required_argument, NULL, 'n'},
        {"temperature", required_argument, NULL, 't'}, {"top-k", required_argument, NULL, 'k'},
        {"seed", required_argument, NULL, 's'},        {"device", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},              {"help", no_argument, NULL, 'h'},
        {"job", required_argument, NULL, 'J'},         CLI_SERVER_OPTIONS,
        {NULL, 0, NULL, 0}};
    json_t *fields = json_pack("{s:s, s:s}", "kind", "generate", "name", "generate");
    const char *device = NULL, *job = NULL, *url = NULL, *token_file = NULL;
    bool as_json = false;
    int c, which = 0;
    optind = 1; /* argv[0] is "generate" */
    while ((c = getopt_long(argc, argv, "", options, &which)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'p': json_object_set_new(fields, "prompt", json_string(optarg)); break;
        case 'n': json_object_set_new(fields, "max_tokens", json_integer(strtoll(optarg, &end, 10))); break;
        case 't': json_object_set_new(fields, "temperature", json_real(strtod(optarg, &end))); break;
        case 'k': json_object_set_new(fields, "top_k", json_integer(strtoll(optarg, &end, 10))); break;
        case 's': json_object_set_new(fields, "seed", json_integer(strtoll(optarg, &end, 10))); break;
        case 'd': device = optarg; break;
        case 'j': as_json = true; break;
        case 'J': job = optarg; break;
        case CLI_OPT_URL: url = optarg; break;
        case CLI_OPT_TOKEN_FILE: token_file = optarg; break;
        case 'h':
            generate_usage(stdout);
            json_decref(fields);
            return 0;
        default:
            generate_usage(stderr);
            json_decref(fields);
            return 2;
        }
        if (end && (*end || end == optarg)) {
            fprintf(stderr, "paragon generate: --%s: '%s' is not a number\n", options[which].name, optarg);
            json_decref(fields);
            return 2;
        }
    }
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
        int rc = cli_generate_remote(url, token_file, id, fields, as_json);
        json_decref(fields);
        return rc;
    }
    if (url || token_file) {
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
    int rc = pgn_spec_parse(fields, &spec, &err);
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
    rc = pgn_device_acquire(spec.device, &chosen, &dev, &err);
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
