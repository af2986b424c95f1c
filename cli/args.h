/* args.h: the one option-parsing start of every `paragon` command. A command names its options
 * in a table (each saying where its value goes) and cli_args reads argv by it; --help, and for a
 * command that talks to paragond --url and --token-file, are read here for all of them. */
#ifndef PGN_CLI_ARGS_H
#define PGN_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Every value of a repeatable option (--tag), in the order given, pointing into argv. */
typedef struct cli_values {
    const char **at; /* malloc'd by cli_args: the command frees it */
    size_t count;
} cli_values;

/* A check of an option's value as it is read: says why it is refused ("paragon CMD: --OPTION:
 * ...") and returns false, which makes it a usage error. A check may also act on the value (the
 * option then needs no other place). */
typedef bool (*cli_check_fn)(const char *cmd, const char *option, const char *value);

/* One option of a command. One of flag, value and values says where it goes (or none, for an
 * option its check takes). */
typedef struct cli_opt {
    const char *name;   /* --name; NULL for a one-letter option alone */
    char letter;        /* -x as well (or alone); 0: none */
    bool *flag;         /* an option without a value: set true */
    const char **value; /* an option with a value: the last one given */
    cli_values *values; /* a repeatable option with a value: each one */
    cli_check_fn check; /* NULL: any value */
} cli_opt;

/* Where paragond is, as a client command's --url and --token-file say (NULL: not given). */
typedef struct cli_server_args {
    const char *url, *token_file;
} cli_server_args;

/* What cli_args reads a command's arguments by. */
typedef struct cli_command_args {
    const char *cmd;          /* "jobs": messages begin "paragon jobs: " */
    void (*usage)(FILE *out); /* its --help; on stderr after a bad option */
    const cli_opt *options;   /* its own options, ending with {0} */
    cli_server_args *server;  /* NULL: a command of this machine; else --url and --token-file land here */
} cli_command_args;

/* cli_args' answer when the command goes on with its operands. */
#define CLI_ARGS_GO_ON (-1)

/* Reads argv (argv[0] the command's name, as getopt_long expects) by the command's options.
 * Returns CLI_ARGS_GO_ON with optind at the first operand; else the status the command exits
 * with: CLI_EXIT_OK after --help printed its usage, CLI_EXIT_USAGE after an option it does not
 * take, a missing value or a value a check refused (values' arrays are freed then). */
int cli_args(int argc, char **argv, const cli_command_args *c);

/* Checks for cli_opt.check: a whole number (strtoll's), a number (strtod's). */
bool cli_check_integer(const char *cmd, const char *option, const char *value);
bool cli_check_number(const char *cmd, const char *option, const char *value);

#endif
