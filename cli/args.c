/* args.c: cli_args, the option-parsing start every command shares (args.h): a command's table
 * becomes getopt_long's, each value lands where the table says, and --help, --url and
 * --token-file are read here once for all. */
#include "args.h"

#include <assert.h>
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"

/* getopt_long's answers: an option of the table without a letter is OPT_TABLE + its index; the
 * shared ones come after. */
enum { OPT_TABLE = 0x100, OPT_HELP = 0x1000, OPT_URL, OPT_TOKEN_FILE };

/* The most options a command's table holds (run's has 13): the arrays getopt_long reads. */
#define ARGS_MAX 32

/* An option says where its value goes (or has a check that takes it), and a check reads a value
 * and names its option in what it says. */
static inline bool well_formed(const cli_opt *o) {
    int places = (o->flag != NULL) + (o->value != NULL) + (o->values != NULL);
    return (places == 1 || (places == 0 && o->check)) && (!o->check || (o->name && !o->flag));
}

static const cli_opt *option_for(const cli_opt *options, size_t n, int got) {
    if (got >= OPT_TABLE && got < OPT_TABLE + (int)n) return &options[got - OPT_TABLE];
    for (size_t i = 0; i < n; i++)
        if (options[i].letter && options[i].letter == got) return &options[i];
    return NULL;
}

/* The value of a repeatable option, kept in an array of argc entries (a bound on their count). */
static bool add_value(cli_values *v, int argc, const char *value) {
    if (!v->at && !(v->at = calloc((size_t)argc, sizeof *v->at))) return false;
    v->at[v->count++] = value;
    return true;
}

static void drop_values(const cli_opt *options, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (options[i].values) {
            free(options[i].values->at);
            *options[i].values = (cli_values){0};
        }
}

int cli_args(int argc, char **argv, const cli_command_args *c) {
    struct option longs[ARGS_MAX + 4];
    char shorts[2 * ARGS_MAX + 1];
    size_t n = 0, n_long = 0, n_short = 0;
    for (; c->options[n].name || c->options[n].letter; n++) {
        const cli_opt *o = &c->options[n];
        assert(n < ARGS_MAX && well_formed(o));
        int has_arg = o->flag ? no_argument : required_argument, id = o->letter ? o->letter : OPT_TABLE + (int)n;
        if (o->name) longs[n_long++] = (struct option){o->name, has_arg, NULL, id};
        if (o->letter) {
            shorts[n_short++] = o->letter;
            if (has_arg == required_argument) shorts[n_short++] = ':';
        }
    }
    shorts[n_short] = '\0';
    longs[n_long++] = (struct option){"help", no_argument, NULL, OPT_HELP};
    if (c->server) {
        longs[n_long++] = (struct option){"url", required_argument, NULL, OPT_URL};
        longs[n_long++] = (struct option){"token-file", required_argument, NULL, OPT_TOKEN_FILE};
    }
    longs[n_long] = (struct option){0};

    int got, rc = CLI_ARGS_GO_ON;
    optind = 1;
    while (rc == CLI_ARGS_GO_ON && (got = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const cli_opt *o = option_for(c->options, n, got);
        if (got == OPT_HELP) {
            c->usage(stdout);
            rc = CLI_EXIT_OK;
        } else if (got == OPT_URL) {
            c->server->url = optarg;
        } else if (got == OPT_TOKEN_FILE) {
            c->server->token_file = optarg;
        } else if (!o) { /* getopt_long has said which option, or which value is missing */
            c->usage(stderr);
            rc = CLI_EXIT_USAGE;
        } else if (o->check && !o->check(c->cmd, o->name, optarg)) {
            rc = CLI_EXIT_USAGE;
        } else if (o->flag) {
            *o->flag = true;
        } else if (o->value) {
            *o->value = optarg;
        } else if (o->values && !add_value(o->values, argc, optarg)) {
            fprintf(stderr, "paragon %s: out of memory\n", c->cmd);
            rc = CLI_EXIT_USAGE;
        }
    }
    if (rc != CLI_ARGS_GO_ON) drop_values(c->options, n);
    return rc;
}

static bool not_a_number(const char *cmd, const char *option, const char *value) {
    fprintf(stderr, "paragon %s: --%s: '%s' is not a number\n", cmd, option, value);
    return false;
}

bool cli_check_integer(const char *cmd, const char *option, const char *value) {
    char *end;
    (void)strtoll(value, &end, 10);
    return (end != value && !*end) || not_a_number(cmd, option, value);
}

bool cli_check_number(const char *cmd, const char *option, const char *value) {
    char *end;
    (void)strtod(value, &end);
    return (end != value && !*end) || not_a_number(cmd, option, value);
}
