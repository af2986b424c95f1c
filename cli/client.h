/* client.h: what the commands that talk to paragond share (client.c): a usage error and the job
 * id operand, a job and its result printed for people, and following a job to its end over its
 * event stream. The commands themselves are in client_jobs.c, client_files.c and generate.c. */
#ifndef PGN_CLI_CLIENT_H
#define PGN_CLI_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "http.h"

/* A usage error: "paragon CMD: " and fmt with what, then where the help is. Returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, const char *what);
/* The one job id operand a command takes (after cli_args, from optind): 0, or the exit status
 * after saying what is wrong. */
int cli_job_arg(const char *cmd, int argc, char **argv, long long *id);

/* v as indented JSON on stdout (--json). */
void cli_print_json(const json_t *v);
/* A listing command's request (datasets, nodes): GET path, then closes s. A failure returns NULL
 * with *rc its exit status; with as_json the answer is printed as it came and NULL returned with
 * *rc CLI_EXIT_OK; else the answer is the caller's to print (and free), *rc CLI_EXIT_OK. */
json_t *cli_listing(cli_server *s, const char *path, bool as_json, int *rc);
/* A string field of o, "" when it has none. */
const char *cli_str(const json_t *o, const char *key);
/* Whether a job (as the API gives it) has ended: succeeded, failed or cancelled. */
bool cli_job_ended(const json_t *job);
/* The exit status an ended job gives a command that waited for it. */
int cli_job_exit(const json_t *job);

/* s as the terminal may show it: control characters (an escape sequence a program printed, a
 * newline) written \xNN, so a job's output or message cannot drive the user's terminal. */
void cli_visible_text(const char *s, char *out, size_t size);
/* A JSON scalar as one short cell ("-" for null, objects and arrays as their size). */
void cli_scalar_text(const json_t *v, char *out, size_t size);
/* "2026-11-25T23:49:08.613Z" as "11-25 23:49:08", the width of a table cell. */
void cli_short_time(const char *t, char *out, size_t size);
/* A job's result, one field a line ("<indent>key  value"), long values cut. */
void cli_print_result(const json_t *result, int indent);
/* How an ended job ended, in a line, then its result. */
void cli_print_ending(const json_t *job);

/* What following a job shows: nothing (--wait), its progress bar with the log above it
 * (--follow), or its log lines as GET /logs gives them (logs -f). */
typedef enum { CLI_FOLLOW_QUIET, CLI_FOLLOW_PROGRESS, CLI_FOLLOW_LOG } cli_follow_mode;

/* Follows job id until it ends, reconnecting when the stream drops (a restart of paragond); spec
 * (or NULL) gives the bar its samples per step. Returns the ended job (GET, so with its whole
 * result) or NULL after saying why, with *rc the exit status. */
json_t *cli_follow_job(cli_server *s, long long id, cli_follow_mode mode, const json_t *spec, int *rc);

#endif
