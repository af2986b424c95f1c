/* http.h: the CLI's side of paragond's API, over libcurl: where the server is and which token
 * to send, one request with a JSON answer, a download to a file, and an event stream read a
 * Server-Sent Events frame at a time. Messages go to stderr, prefixed with the command's name. */
#ifndef PGN_CLI_HTTP_H
#define PGN_CLI_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "paragon.h"

/* The lines of --url and --token-file (args.h reads them) in a client command's --help. */
#define CLI_SERVER_HELP                                                                            \
    "  --url URL          paragond's address [$PARAGON_URL, else http://127.0.0.1:8080]\n"         \
    "  --token-file FILE  the API token [$PARAGON_TOKEN, else data/token when readable]\n"

/* The default when neither --url nor PARAGON_URL names a server: paragond's own default. */
#define CLI_DEFAULT_URL "http://127.0.0.1:8080"
/* The token paragond writes into its default data dir (run.sh's), read when nothing else names one. */
#define CLI_DEFAULT_TOKEN_FILE "data/token"

typedef struct cli_server {
    const char *cmd;  /* "paragon jobs": the prefix of every message */
    char url[1024];   /* without a trailing '/' */
    char token[512];  /* "" when none was found: reads on loopback need none */
    void *curl;       /* CURL *, reused so that requests share one connection */
    void *side;       /* CURL *: requests a stream's reader makes while the stream holds curl */
    bool streaming;
} cli_server;

/* Where the server is (url: --url or NULL) and the token (token_file: --token-file or NULL).
 * Returns 0, or 2 after saying what is wrong (an unreadable token file, a URL that is not
 * http(s)). */
int cli_server_open(cli_server *s, const char *cmd, const char *url, const char *token_file);
void cli_server_close(cli_server *s);

/* The exit status for a request that failed with HTTP status `status`: CLI_EXIT_UNREACHABLE when
 * no answer came (status 0), else CLI_EXIT_FAILED. */
int cli_exit_for(long status);

/* METHOD path (below the URL) with a JSON body (NULL: none); the answer parsed as JSON when it
 * is 2xx. Otherwise NULL after printing the server's error message (or why no answer came);
 * *status receives the HTTP status, 0 when none came. */
json_t *cli_call(cli_server *s, const char *method, const char *path, const json_t *body,
                 long *status);

/* PUT path with the bytes of `from` (size of them, read to its end) as the body, and more headers
 * ("Name: value" strings, NULL-ended; or NULL); the answer as cli_call's. */
json_t *cli_upload(cli_server *s, const char *path, FILE *from, long long size, const char *const *headers,
                   long *status);
/* One path segment URL-escaped (a dataset's name): malloc'd, NULL when out of memory. */
char *cli_path_escape(cli_server *s, const char *segment);

/* GET path as text (logs, CSV): a malloc'd NUL-terminated body on 2xx, else NULL as cli_call. */
char *cli_get_text(cli_server *s, const char *path, long *status);

/* GET path into the file `to` ("-": stdout), written whole or not at all (a temporary file
 * renamed at the end). Returns 0, else -1 as cli_call, with *status set. *bytes: the size. */
int cli_download(cli_server *s, const char *path, const char *to, long *status, size_t *bytes);

/* One Server-Sent Events frame: the event's name ("message" when the frame names none), its
 * data (data lines joined by '\n') and its id ("" when none). */
typedef struct cli_event {
    const char *name;
    const char *data;
    const char *id;
} cli_event;

/* What a stream's reader answers each frame: go on reading, or stop here (the stream is done). */
typedef enum { CLI_STREAM_MORE, CLI_STREAM_DONE } cli_stream_next;
typedef cli_stream_next (*cli_event_fn)(void *ctx, const cli_event *ev);

/* Opens METHOD path (body: JSON or NULL; last_id: sent as Last-Event-ID when not empty) and
 * hands each frame to fn until fn says done or the server ends the stream. Returns 1 when fn
 * said done, 0 when the stream ended first (a restart of the server, a dropped connection: the
 * caller may reconnect from the last id), -1 on an error status or no answer (printed, with
 * *status set), -2 when interrupted by cli_interrupted. */
int cli_stream(cli_server *s, const char *method, const char *path, const json_t *body,
               const char *last_id, cli_event_fn fn, void *ctx, long *status);

/* Ctrl-C while a client command waits on the server: catch SIGINT (cli_catch_interrupt) and
 * cli_stream returns -2 at once, so the command can say what goes on without it. */
void cli_catch_interrupt(void);
bool cli_interrupted(void);

/* Appends "?name=value" (or "&name=value" after the first) to path, the value URL-escaped;
 * nothing when value is NULL. */
void cli_query_add(cli_server *s, pgn_text *path, const char *name, const char *value);

/* "id" as a job id (a positive integer); prints why not, for cmd. */
bool cli_job_id(const char *cmd, const char *text, long long *id);

#endif
