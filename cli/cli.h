/* cli.h: the commands of `paragon` that live in their own files. */
#ifndef PGN_CLI_H
#define PGN_CLI_H

/* `paragon bench ...` (cli/bench.c); argv starts after "bench". Returns the exit status. */
int cmd_bench(int argc, char **argv);
/* `paragon generate ...` (cli/generate.c); argv[0] is "generate". Returns the exit status. */
int cmd_generate(int argc, char **argv);

#endif
