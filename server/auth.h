/* auth.h: paragond's API token. Every mutating request (any method but GET and HEAD) carries
 * "Authorization: Bearer <token>"; when the server listens on a non-loopback address, reads
 * need it too, except the health probes, or the browser session cookie that stands for it.
 * The token comes from --token-file, or from <data-dir>/token, created (0600, 64 hex
 * characters) on the first start and reused after. */
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

/* The session cookie: EventSource and a plain download link cannot send a header, so off
 * loopback the dashboard trades the token for this cookie (POST /api/v1/session). Its value is
 * HMAC-SHA256(key = the token, PGD_SESSION_LABEL) in hex: not the token, the same after a
 * restart, and void once the token changes. It is accepted for GET and HEAD only, so a cookie
 * the browser sends on its own can read but never change anything. */
#define PGD_SESSION_COOKIE "paragon_session"
#define PGD_SESSION_LABEL "paragond session v1"
#define PGD_SESSION_HEX_LEN 64

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
/* The same decision from the request's parts: authorization is the Authorization header's
 * value and session the PGD_SESSION_COOKIE cookie's, each NULL when absent. A request that
 * carries an Authorization header is judged by it alone. */
const char *pgd_auth_check(const pgd_auth *auth, const char *method, const char *path,
                           const char *authorization, const char *session);

/* The session cookie's value (PGD_SESSION_HEX_LEN hex characters). */
const char *pgd_auth_session(const pgd_auth *auth);
/* 204 that sets the session cookie (open) or clears it (!open). The caller has checked the
 * request's bearer token (pgd_auth_refusal does for any POST or DELETE). */
enum MHD_Result pgd_auth_reply_session(const pgd_auth *auth, const pgd_request *req, bool open);

/* 401 {"error":{"code":"unauthorized","message":why}} with WWW-Authenticate. */
enum MHD_Result pgd_auth_reply_unauthorized(const pgd_request *req, const char *why);

/* Whether host is a loopback address ("127.0.0.1", "::1", "localhost", 127.0.0.0/8). */
bool pgd_auth_is_loopback(const char *host);

#endif
