/* test_auth.c: server/auth.c: where the token comes from (created 0600 with 64 hex characters,
 * reused, or --token-file), the token files refused and why, and which hosts count as
 * loopback. The per-request decisions are tested against a live paragond in test_server.c. */
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
        cr_assert_str_eq(err.code, "auth");
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
