/* test_auth.c: server/auth.c: where the token comes from (created 0600 with 64 hex characters,
 * reused, or --token-file), the token files refused and why, which hosts count as loopback,
 * and the per-request decision (pgd_auth_check) for the bearer token and the session cookie.
 * The same decisions against a live paragond are in test_api_token.c and test_dashboard_auth.c. */
#include "auth.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/paragon-auth-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void teardown(void) { nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

TestSuite(auth, .init = setup, .fini = teardown);

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char *buf = calloc(1, 4096);
    size_t n = fread(buf, 1, 4095, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

Test(auth, a_missing_token_is_created_private_and_then_reused) {
    pgd_auth *a;
    pgn_error err;
    pgn_error_clear(&err);
    cr_assert_eq(pgd_auth_open(NULL, dir, "127.0.0.1", &a, &err), 0, "%s", err.message);
    char path[400];
    snprintf(path, sizeof path, "%s/token", dir);
    cr_assert_str_eq(pgd_auth_token_path(a), path);
    pgd_auth_close(a);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    char *first = slurp(path);
    cr_assert_eq(strlen(first), 65);
    for (int i = 0; i < 64; i++) cr_assert(isxdigit((unsigned char)first[i]) && !isupper(first[i]));
    cr_assert_eq(first[64], '\n');

    cr_assert_eq(pgd_auth_open(NULL, dir, "::1", &a, &err), 0, "%s", err.message);
    pgd_auth_close(a);
    char *second = slurp(path);
    cr_assert_str_eq(first, second, "an existing token is kept");
    free(first);
    free(second);

    /* Another data dir gets another token; no temporary file is left behind. */
    char other[280];
    snprintf(other, sizeof other, "%s/other", dir);
    cr_assert_eq(mkdir(other, 0700), 0);
    cr_assert_eq(pgd_auth_open(NULL, other, "localhost", &a, &err), 0, "%s", err.message);
    pgd_auth_close(a);
    snprintf(path, sizeof path, "%s/token", other);
    char *third = slurp(path);
    snprintf(path, sizeof path, "%s/token", dir);
    char *again = slurp(path);
    cr_assert_str_neq(third, again);
    free(third);
    free(again);
    snprintf(path, sizeof path, "%s/.token.%ld.tmp", other, (long)getpid());
    cr_assert_neq(access(path, F_OK), 0);
}

Test(auth, token_files_are_checked_and_the_errors_say_why) {
    pgd_auth *a;
    pgn_error err;
    char path[400];
    snprintf(path, sizeof path, "%s/tok", dir);
    write_file(path, "\n  abcdefghijklmnop-1234  \r\n", 0600);
    cr_assert_eq(pgd_auth_open(path, dir, "127.0.0.1", &a, &err), 0, "%s", err.message);
    cr_assert_str_eq(pgd_auth_token_path(a), path);
    pgd_auth_close(a);
    snprintf(path, sizeof path, "%s/token", dir);
    cr_assert_neq(access(path, F_OK), 0, "--token-file creates nothing in the data dir");

    struct {
        const char *content, *says;
    } bad[] = {
        {"short\n", "holds a token of 5 characters; it needs 16 to 1024"},
        {"", "holds a token of 0 characters"},
        {"sixteen-chars-ok but with a space\n", "printable ASCII without spaces (character 17"},
        {"sixteen-chars-\x01k\n", "character 15"},
    };
    snprintf(path, sizeof path, "%s/tok", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i].content, 0600);
        pgn_error_clear(&err);
        cr_assert_eq(pgd_auth_open(path, dir, "127.0.0.1", &a, &err), -1, "case %zu", i);
        cr_assert_str_eq(pgn_error_code_name(err.code), "auth");
        cr_assert_str_eq(err.field, "token_file");
        cr_assert_eq(strncmp(err.message, "--token-file: ", 14), 0, "%s", err.message);
        cr_assert(strstr(err.message, bad[i].says), "case %zu: %s", i, err.message);
    }
    char *long_token = malloc(1100);
    memset(long_token, 'x', 1025);
    long_token[1025] = 0;
    write_file(path, long_token, 0600);
    cr_assert_eq(pgd_auth_open(path, dir, "127.0.0.1", &a, &err), -1);
    cr_assert(strstr(err.message, "1025 characters"), "%s", err.message);
    free(long_token);
    snprintf(path, sizeof path, "%s/missing", dir);
    cr_assert_eq(pgd_auth_open(path, dir, "127.0.0.1", &a, &err), -1);
    cr_assert(strstr(err.message, "No such file"), "%s", err.message);
    cr_assert_eq(pgd_auth_open(dir, dir, "127.0.0.1", &a, &err), -1);
    cr_assert(strstr(err.message, "not a regular file"), "%s", err.message);
}

Test(auth, loopback_is_127_0_0_0_8_and_1_and_localhost) {
    const char *yes[] = {"127.0.0.1", "127.1.2.3", "::1", "localhost", "LOCALHOST",
                         "::ffff:127.0.0.1"};
    const char *no[] = {"0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com",
                        "::ffff:10.0.0.1", "128.0.0.1", ""};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_assert(pgd_auth_is_loopback(yes[i]), "%s is loopback", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert(!pgd_auth_is_loopback(no[i]), "%s is not loopback", no[i]);
}

/* ---- the session cookie ----------------------------------------------------------------- */

/* Opens the token text (written to <dir>/tok) for host. */
static pgd_auth *open_token(const char *token, const char *host) {
    char path[400];
    snprintf(path, sizeof path, "%s/tok", dir);
    write_file(path, token, 0600);
    pgd_auth *a;
    pgn_error err;
    pgn_error_clear(&err);
    cr_assert_eq(pgd_auth_open(path, dir, host, &a, &err), 0, "%s", err.message);
    return a;
}

Test(auth, the_session_cookie_is_the_tokens_hmac_kept_over_a_restart_and_void_for_a_new_token) {
    /* The expected values are Python's hmac.new(token, b"paragond session v1", sha256); the
     * second token is longer than SHA-256's 64-byte block, so HMAC hashes it first. */
    struct {
        const char *token, *session;
    } cases[] = {
        {"abcdefghijklmnop-1234\n",
         "430a96d3b461e6487f5a45e1b721b18ca4876bc24e2e49315289470494c78c87"},
        {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxx",
         "3a6a92d7e579de8f40c4de5773ea0823976845062c826a8def0fa50b3a9fcb07"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pgd_auth *a = open_token(cases[i].token, "0.0.0.0");
        cr_assert_str_eq(pgd_auth_session(a), cases[i].session, "case %zu", i);
        cr_assert_eq(strlen(pgd_auth_session(a)), PGD_SESSION_HEX_LEN);
        pgd_auth_close(a);
        a = open_token(cases[i].token, "0.0.0.0"); /* a restart: the same cookie still works */
        cr_assert_null(pgd_auth_check(a, "GET", "/api/v1/jobs", NULL, cases[i].session));
        pgd_auth_close(a);
    }
    /* A new token: the old cookie is refused. */
    pgd_auth *a = open_token("a-completely-new-token\n", "0.0.0.0");
    const char *why = pgd_auth_check(a, "GET", "/api/v1/jobs", NULL, cases[0].session);
    cr_assert_not_null(why);
    cr_assert(strstr(why, "paragon_session cookie is not valid"), "%s", why);
    pgd_auth_close(a);
}

Test(auth, off_loopback_a_read_passes_with_the_session_cookie_alone) {
    pgd_auth *a = open_token("abcdefghijklmnop-1234\n", "0.0.0.0");
    char session[PGD_SESSION_HEX_LEN + 1];
    snprintf(session, sizeof session, "%s", pgd_auth_session(a));
    const char *reads[][2] = {{"GET", "/api/v1/jobs"},
                              {"HEAD", "/api/v1/jobs"},
                              {"GET", "/api/v1/jobs/1/events"},
                              {"GET", "/api/v1/events"},
                              {"GET", "/api/v1/jobs/1/checkpoint"},
                              {"GET", "/metrics"}};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        cr_assert_null(pgd_auth_check(a, reads[i][0], reads[i][1], NULL, session), "%s %s",
                       reads[i][0], reads[i][1]);
        /* nothing at all: the message names both ways in */
        const char *why = pgd_auth_check(a, reads[i][0], reads[i][1], NULL, NULL);
        cr_assert_not_null(why);
        cr_assert(strstr(why, "missing Authorization header") &&
                      strstr(why, "paragon_session cookie that POST /api/v1/session sets"),
                  "%s", why);
    }
    /* The bearer token still works alone; the probes need neither. */
    cr_assert_null(pgd_auth_check(a, "GET", "/api/v1/jobs", "Bearer abcdefghijklmnop-1234", NULL));
    cr_assert_null(pgd_auth_check(a, "GET", "/healthz", NULL, NULL));
    pgd_auth_close(a);
}

Test(auth, the_session_cookie_never_authorises_a_write) {
    const char *hosts[] = {"0.0.0.0", "127.0.0.1"};
    for (size_t h = 0; h < 2; h++) {
        pgd_auth *a = open_token("abcdefghijklmnop-1234\n", hosts[h]);
        const char *session = pgd_auth_session(a);
        const char *writes[][2] = {{"POST", "/api/v1/jobs"},
                                   {"POST", "/api/v1/jobs/1/cancel"},
                                   {"DELETE", "/api/v1/jobs/1"},
                                   {"POST", "/api/v1/session"},
                                   {"DELETE", "/api/v1/session"}};
        for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++) {
            const char *why = pgd_auth_check(a, writes[i][0], writes[i][1], NULL, session);
            cr_assert_not_null(why, "%s %s with only the cookie on %s", writes[i][0],
                               writes[i][1], hosts[h]);
            cr_assert(strstr(why, "only GET and HEAD accept the paragon_session cookie"), "%s",
                      why);
            cr_assert(strstr(why, "needs 'Authorization: Bearer <token>'"), "%s", why);
            cr_assert_null(pgd_auth_check(a, writes[i][0], writes[i][1],
                                          "Bearer abcdefghijklmnop-1234", session));
        }
        pgd_auth_close(a);
    }
}

Test(auth, a_wrong_cookie_is_refused_and_a_header_is_judged_alone) {
    pgd_auth *a = open_token("abcdefghijklmnop-1234\n", "::");
    char session[PGD_SESSION_HEX_LEN + 1];
    snprintf(session, sizeof session, "%s", pgd_auth_session(a));
    char flipped[sizeof session], shorter[sizeof session];
    snprintf(flipped, sizeof flipped, "%s", session);
    flipped[PGD_SESSION_HEX_LEN - 1] = flipped[PGD_SESSION_HEX_LEN - 1] == '0' ? '1' : '0';
    snprintf(shorter, sizeof shorter, "%.*s", PGD_SESSION_HEX_LEN - 1, session);
    const char *wrong[] = {flipped, shorter, "abcdefghijklmnop-1234", "x"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        const char *why = pgd_auth_check(a, "GET", "/api/v1/jobs", NULL, wrong[i]);
        cr_assert_not_null(why, "cookie '%s'", wrong[i]);
        cr_assert(strstr(why, "the paragon_session cookie is not valid") &&
                      strstr(why, "POST /api/v1/session"),
                  "%s", why);
    }
    /* A cleared cookie ("paragon_session=") is no cookie. */
    const char *why = pgd_auth_check(a, "GET", "/api/v1/jobs", NULL, "");
    cr_assert(why && strstr(why, "missing Authorization header"), "%s", why ? why : "(null)");
    /* A wrong bearer token is not rescued by a right cookie. */
    why = pgd_auth_check(a, "GET", "/api/v1/jobs", "Bearer not-the-token-at-all", session);
    cr_assert(why && strcmp(why, "wrong token") == 0, "%s", why ? why : "(null)");
    pgd_auth_close(a);
}
