/* auth.c: owns paragond's API token: reading it from --token-file or from <data-dir>/token
 * (created on the first start from /dev/urandom), and deciding per request whether a bearer
 * token (or the session cookie derived from it) is needed and whether the one presented is
 * right. Tokens and cookies are compared through their SHA-256 digests, byte for byte without
 * an early exit, so the time taken says nothing about how much of a guess was right, nor about
 * its length. */
#include "auth.h"


#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_RANDOM_BYTES 32

struct pgd_auth {
    char *path;
    unsigned char digest[32]; /* SHA-256 of the token; the token itself is not kept */
    char session[PGD_SESSION_HEX_LEN + 1]; /* the session cookie's value */
    unsigned char session_digest[32];      /* and its SHA-256 */
    bool reads_need_token;
};

static const char missing_header[] =
    "missing Authorization header: send 'Authorization: Bearer <token>' (paragond prints where "
    "its token file is when it starts)";
static const char missing_credentials[] =
    "missing Authorization header: send 'Authorization: Bearer <token>' (paragond prints where "
    "its token file is when it starts), or from a browser the " PGD_SESSION_COOKIE
    " cookie that POST /api/v1/session sets";
static const char cookie_cannot_write[] =
    "missing Authorization header: only GET and HEAD accept the " PGD_SESSION_COOKIE
    " cookie; this method needs 'Authorization: Bearer <token>'";
static const char wrong_session[] =
    "the " PGD_SESSION_COOKIE " cookie is not valid (was the token changed?): POST "
    "/api/v1/session with 'Authorization: Bearer <token>' for a new one";
static const char not_bearer[] =
    "the Authorization header is not a Bearer token: send 'Authorization: Bearer <token>'";
static const char empty_bearer[] = "the Authorization header has an empty Bearer token";
static const char wrong_token[] = "wrong token";

/* ---- the token file --------------------------------------------------------------------- */

static void digest_of(const char *text, size_t len, unsigned char out[32]) {
    pgn_sha256 s;
    pgn_sha256_init(&s);
    pgn_sha256_update(&s, text, len);
    pgn_sha256_final(&s, out);
}

/* HMAC-SHA256 (RFC 2104) over a 64-byte block: a longer key is hashed first. */
static void hmac_sha256(const char *key, size_t key_len, const char *msg, size_t msg_len,
                        unsigned char out[32]) {
    unsigned char k[64] = {0}, pad[64], inner[32];
    if (key_len > sizeof k)
        digest_of(key, key_len, k);
    else
        memcpy(k, key, key_len);
    pgn_sha256 s;
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = k[i] ^ 0x36;
    pgn_sha256_init(&s);
    pgn_sha256_update(&s, pad, sizeof pad);
    pgn_sha256_update(&s, msg, msg_len);
    pgn_sha256_final(&s, inner);
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = k[i] ^ 0x5c;
    pgn_sha256_init(&s);
    pgn_sha256_update(&s, pad, sizeof pad);
    pgn_sha256_update(&s, inner, sizeof inner);
    pgn_sha256_final(&s, out);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}

/* The session cookie's value and digest from the token (see PGD_SESSION_COOKIE). */
static void derive_session(pgd_auth *a, const char *token, size_t len) {
    unsigned char mac[32];
    hmac_sha256(token, len, PGD_SESSION_LABEL, sizeof PGD_SESSION_LABEL - 1, mac);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof mac; i++) {
        a->session[2 * i] = hex[mac[i] >> 4];
        a->session[2 * i + 1] = hex[mac[i] & 15];
    }
    a->session[PGD_SESSION_HEX_LEN] = 0;
    digest_of(a->session, PGD_SESSION_HEX_LEN, a->session_digest);
}

/* Reads and checks the token in path into a->digest and the session it stands for. */
static int read_token(pgd_auth *a, const char *path, pgn_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pgn_error_set(err, PGN_E_AUTH, "token_file", "token file '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        pgn_error_set(err, PGN_E_AUTH, "token_file", "token file '%s' is not a regular file", path);
        return -1;
    }
    if (st.st_mode & 077)
        fprintf(stderr,
                "paragond: warning: token file '%s' can be read by other users (mode %04o); "
                "chmod 600 it\n",
                path, (unsigned)(st.st_mode & 07777));
    char buf[PGD_TOKEN_MAX_LEN + 64];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            pgn_error_set(err, PGN_E_AUTH, "token_file", "token file '%s': %s", path,
                          strerror(errno));
            close(fd);
            return -1;
        }
        if (n == 0 || (len += (size_t)n) == sizeof buf) break;
    }
    close(fd);
    size_t start = 0;
    while (start < len && strchr(" \t\r\n", buf[start])) start++;
    while (len > start && strchr(" \t\r\n", buf[len - 1])) len--;
    len -= start;
    const char *token = buf + start;
    int ret = 0;
    if (len < PGD_TOKEN_MIN_LEN || len > PGD_TOKEN_MAX_LEN) {
        pgn_error_set(err, PGN_E_AUTH, "token_file",
                      "token file '%s' holds a token of %zu characters; it needs %d to %d",
                      path, len, PGD_TOKEN_MIN_LEN, PGD_TOKEN_MAX_LEN);
        ret = -1;
    }
    for (size_t i = 0; ret == 0 && i < len; i++)
        if (token[i] <= ' ' || token[i] > '~') {
            pgn_error_set(err, PGN_E_AUTH, "token_file",
                          "token file '%s': the token may hold only printable ASCII without "
                          "spaces (character %zu is not)",
                          path, i + 1);
            ret = -1;
        }
    if (ret == 0) {
        digest_of(token, len, a->digest);
        derive_session(a, token, len);
    }
    memset(buf, 0, sizeof buf);
    return ret;
}

static int random_hex(char *out, size_t n_bytes, pgn_error *err) {
    unsigned char raw[TOKEN_RANDOM_BYTES];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    while (fd >= 0 && got < n_bytes) {
        ssize_t n = read(fd, raw + got, n_bytes - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (fd >= 0) close(fd);
    if (got < n_bytes) {
        pgn_error_set(err, PGN_E_AUTH, "token_file", "cannot read /dev/urandom for a new token: %s",
                      fd < 0 ? strerror(errno) : "short read");
        return -1;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n_bytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * n_bytes] = 0;
    memset(raw, 0, sizeof raw);
    return 0;
}

static int write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes a new token to a private temporary file and links it into place, so a reader never
 * sees half a token and two servers starting at once end up with the same one. *exists is
 * set when another process created path first. */
static int create_token(const char *dir, const char *path, bool *exists, pgn_error *err) {
    *exists = false;
    char token[2 * TOKEN_RANDOM_BYTES + 2];
    if (random_hex(token, TOKEN_RANDOM_BYTES, err) < 0) return -1;
    strcat(token, "\n");
    size_t tmp_len = strlen(dir) + 64;
    char *tmp = malloc(tmp_len);
    if (!tmp) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    snprintf(tmp, tmp_len, "%s/.%s.%ld.tmp", dir, PGD_TOKEN_FILE_NAME, (long)getpid());
    int ret = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || fchmod(fd, 0600) < 0 || write_all(fd, token, strlen(token)) < 0 ||
        fsync(fd) < 0) {
        pgn_error_set(err, PGN_E_AUTH, "token_file", "cannot write a new token to '%s': %s", tmp,
                      strerror(errno));
    } else if (link(tmp, path) == 0) {
        ret = 0;
    } else if (errno == EEXIST) {
        *exists = true;
        ret = 0;
    } else {
        pgn_error_set(err, PGN_E_AUTH, "token_file", "cannot create token file '%s': %s", path,
                      strerror(errno));
    }
    if (fd >= 0) close(fd);
    unlink(tmp);
    free(tmp);
    memset(token, 0, sizeof token);
    return ret;
}

bool pgd_auth_is_loopback(const char *host) {
    if (strcasecmp(host, "localhost") == 0) return true;
    unsigned char a[16];
    if (inet_pton(AF_INET, host, a) == 1) return a[0] == 127;
    if (inet_pton(AF_INET6, host, a) == 1) {
        static const unsigned char v6_loopback[16] = {[15] = 1};
        static const unsigned char v4_mapped[12] = {[10] = 0xff, [11] = 0xff};
        if (memcmp(a, v6_loopback, 16) == 0) return true;
        return memcmp(a, v4_mapped, 12) == 0 && a[12] == 127;
    }
    return false;
}

int pgd_auth_open(const char *token_file, const char *data_dir, const char *host,
                  pgd_auth **out, pgn_error *err) {
    *out = NULL;
    pgd_auth *a = calloc(1, sizeof *a);
    if (!a) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    a->reads_need_token = !pgd_auth_is_loopback(host);
    if (token_file) {
        a->path = strdup(token_file);
    } else {
        size_t len = strlen(data_dir) + sizeof PGD_TOKEN_FILE_NAME + 1;
        a->path = malloc(len);
        if (a->path) snprintf(a->path, len, "%s/%s", data_dir, PGD_TOKEN_FILE_NAME);
    }
    if (!a->path) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        pgd_auth_close(a);
        return -1;
    }
    bool exists = token_file != NULL || access(a->path, F_OK) == 0;
    if (!exists && create_token(data_dir, a->path, &exists, err) < 0) {
        pgd_auth_close(a);
        return -1;
    }
    if (read_token(a, a->path, err) < 0) {
        if (token_file) {
            /* "--token-file: " names the flag to fix; the message keeps its start. */
            static const char flag[] = "--token-file: ";
            size_t keep = sizeof err->message - sizeof flag;
            memmove(err->message + sizeof flag - 1, err->message, keep);
            memcpy(err->message, flag, sizeof flag - 1);
            err->message[sizeof err->message - 1] = 0;
        }
        pgd_auth_close(a);
        return -1;
    }
    *out = a;
    return 0;
}

void pgd_auth_close(pgd_auth *a) {
    if (!a) return;
    free(a->path);
    free(a);
}

const char *pgd_auth_token_path(const pgd_auth *a) { return a->path; }

const char *pgd_auth_session(const pgd_auth *a) { return a->session; }

/* ---- requests --------------------------------------------------------------------------- */

/* Whether the presented secret is the one whose digest we hold. Both sides are reduced to
 * 32-byte digests and every byte is compared: no branch depends on the secret's content or
 * its length. */
static bool digest_matches(const unsigned char want[32], const char *text, size_t len) {
    unsigned char d[32];
    digest_of(text, len, d);
    unsigned diff = 0;
    for (size_t i = 0; i < sizeof d; i++) diff |= (unsigned)(d[i] ^ want[i]);
    return diff == 0;
}

const char *pgd_auth_refusal(const pgd_auth *a, const pgd_request *req) {
    return pgd_auth_check(a, req->method, req->path,
                          pgd_request_header(req, MHD_HTTP_HEADER_AUTHORIZATION),
                          MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND,
                                                      PGD_SESSION_COOKIE));
}

const char *pgd_auth_check(const pgd_auth *a, const char *method, const char *path,
                           const char *authorization, const char *session) {
    bool read = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (read && !a->reads_need_token) return NULL;
    if (read && (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0)) return NULL;
    if (session && !*session) session = NULL; /* "paragon_session=": a cleared cookie */
    if (!authorization) {
        if (!read) return session ? cookie_cannot_write : missing_header;
        if (!session) return missing_credentials;
        return digest_matches(a->session_digest, session, strlen(session)) ? NULL
                                                                           : wrong_session;
    }
    const char *v = authorization;
    while (*v == ' ' || *v == '\t') v++;
    static const char scheme[] = "Bearer";
    if (strncasecmp(v, scheme, sizeof scheme - 1) != 0) return not_bearer;
    v += sizeof scheme - 1;
    if (*v && *v != ' ' && *v != '\t') return not_bearer; /* "Bearerx" */
    while (*v == ' ' || *v == '\t') v++;
    size_t len = strlen(v);
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
    if (len == 0) return empty_bearer;
    return digest_matches(a->digest, v, len) ? NULL : wrong_token;
}

enum MHD_Result pgd_auth_reply_session(const pgd_auth *a, const pgd_request *req, bool open) {
    /* No Secure attribute: paragond speaks plain HTTP, and a browser keeps no Secure cookie
     * from it. A TLS-terminating proxy in front of it should add Secure. */
    char cookie[PGD_SESSION_HEX_LEN + 96];
    snprintf(cookie, sizeof cookie, "%s=%s; HttpOnly; SameSite=Strict; Path=/%s",
             PGD_SESSION_COOKIE, open ? a->session : "", open ? "" : "; Max-Age=0");
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result pgd_auth_reply_unauthorized(const pgd_request *req, const char *why) {
    pgn_error err;
    pgn_error_clear(&err);
    pgn_error_set(&err, PGN_E_UNAUTHORIZED, "", "%s", why);
    const pgd_header h[] = {{MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"paragond\""},
                            {NULL, NULL}};
    return pgd_reply_pgn_error(req, &err, NULL, h);
}
