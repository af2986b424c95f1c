/* auth.h: paragond's API token. Every mutating request (any method but GET and HEAD) carries
 * "Authorization: Bearer <token>"; when the server listens on a non-loopback address, reads
 * need it too, except the health probes. The token comes from --token-file, or from
 * <data-dir>/token, created (0600, 64 hex characters) on the first start and reused after. */
#ifndef PGD_AUTH_H
#define PGD_AUTH_H

#include "http.h"
#include "paragon.h"

#include <stdbool.h>

/* A token file holds one token of printable ASCII, no spaces; surrounding whitespace (the
 * trailing newline) is ignored. Shorter tokens are refused: they could be guessed. */
#define PGD_TOKEN_MIN_LEN 16
#define PGD_TOKEN_MAX_LEN 1024
#define PGD_TOKEN_FILE_NAME "token"

typedef struct pgd_auth pgd_auth;

/* Reads token_file, or (token_file NULL) <data_dir>/token, creating it when missing; data_dir
 * must exist. host is the listening address: anything but 127.0.0.0/8, ::1 and "localhost"
 * makes reads need the token too. Code "auth" with field "token_file" on failure. */
int pgd_auth_open(const char *token_file, const char *data_dir, const char *host,
                  pgd_auth **out, pgn_error *err);
void pgd_auth_close(pgd_auth *auth);

/* Where the token is (for the start-up line). */
const char *pgd_auth_token_path(const pgd_auth *auth);

/* NULL when req may go on; otherwise why not, for the 401's message (never the token). */
const char *pgd_auth_refusal(const pgd_auth *auth, const pgd_request *req);

/* 401 {"error":{"code":"unauthorized","message":why}} with WWW-Authenticate. */
enum MHD_Result pgd_auth_reply_unauthorized(const pgd_request *req, const char *why);

/* Whether host is a loopback address ("127.0.0.1", "::1", "localhost", 127.0.0.0/8). */
bool pgd_auth_is_loopback(const char *host);

#endif
