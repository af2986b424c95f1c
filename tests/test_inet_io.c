/* test_inet_io.c: HVM2's IO protocol (engine/inet/inet_io.c): the examples/inet/io_*.hvm programs
 * with their expected output, normal form and interaction count on the host and on pocl (whose
 * rounds after the first go on on the host); a confined run's files kept inside its directory
 * whatever path a program names; the output bounded; stdin empty; a SLEEP held to the timeout;
 * and the spec's files written for the program. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "inet/inet.h"
#include "inet/inet_net.h"

static char tmp_root[] = "/tmp/paragon-test-inet-io-XXXXXX";

/* A fresh directory under the test's temporary root. */
static void fresh_dir(const char *name, char *out, size_t size) {
    if (strstr(tmp_root, "XXXXXX")) cr_assert_not_null(mkdtemp(tmp_root));
    snprintf(out, size, "%s/%s", tmp_root, name);
    cr_assert(mkdir(out, 0755) == 0 || errno == EEXIST, "%s: %s", out, strerror(errno));
}

/* The definitions every IO program starts with: the IO and String constructors, as Bend emits
 * them. */
static const char PRELUDE[] =
    "@IO/Call = (a (b (c (d ((@IO/Call/tag (a (b (c (d e))))) e)))))\n@IO/Call/tag = 1\n"
    "@IO/Done = (a (b ((@IO/Done/tag (a (b c))) c)))\n@IO/Done/tag = 0\n"
    "@IO/MAGIC = (13683217 16719857)\n"
    "@String/Cons = (a (b ((@String/Cons/tag (a (b c))) c)))\n@String/Cons/tag = 1\n"
    "@String/Nil = ((@String/Nil/tag a) a)\n@String/Nil/tag = 0\n";

/* @name = the string text. */
static void put_string(pgn_text *t, const char *name, const char *text) {
    size_t n = strlen(text);
    pgn_text_printf(t, "@%s = s0\n", name);
    for (size_t i = 0; i < n; i++) {
        char tail[32];
        if (i + 1 < n) snprintf(tail, sizeof tail, "s%zu", i + 1);
        else snprintf(tail, sizeof tail, "@String/Nil");
        pgn_text_printf(t, "  & @String/Cons ~ (%d (%s s%zu))\n", (unsigned char)text[i], tail, i);
    }
}

static pgn_inet_book *parse(const char *text) {
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, strlen(text), &book, &err), 0, "%s\n%s", err.message, text);
    return book;
}

/* The program run confined to dir (output kept, at most output_max bytes), on dev or the host. */
static int run(pgn_device *dev, const pgn_inet_book *book, const char *dir, size_t output_max, double timeout,
               pgn_inet_result *r, pgn_error *err) {
    pgn_inet_io io = {.dir = dir, .output_max = output_max};
    pgn_inet_limits lim = {.timeout_s = timeout};
    return dev ? pgn_inet_run_cl(dev, book, &lim, &io, 2, NULL, r, err) : pgn_inet_run_host(book, &lim, &io, NULL, r, err);
}

/* "<output>Result: <normal form>\n- ITRS: <count>\n", as `paragon run FILE.hvm -s` prints it (with
 * the output first, as the program wrote it), less the time. */
static char *shown(const pgn_inet_result *r) {
    char *s = NULL;
    cr_assert(asprintf(&s, "%sResult: %s\n- ITRS: %llu\n", r->output ? r->output : "", r->normal_form,
                       (unsigned long long)r->interactions) > 0);
    return s;
}

Test(inet_io, examples_match_their_expected_output) {
    static const char *const examples[] = {"io_hello", "io_files", "io_errors", "io_time"};
    pgn_device *cpu = test_open_cl_device();
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
        char path[512], *expected, *text;
        size_t len;
        snprintf(path, sizeof path, "%s/examples/inet/%s.hvm", getenv("PARAGON_SOURCE_ROOT"), examples[i]);
        cr_assert_not_null(text = pgn_read_file(path, &len), "%s", path);
        snprintf(path, sizeof path, "%s/examples/inet/%s.expected", getenv("PARAGON_SOURCE_ROOT"), examples[i]);
        cr_assert_not_null(expected = pgn_read_file(path, &len), "%s", path);
        pgn_inet_book *book = parse(text);
        for (int side = 0; side < 2; side++) {
            char dir[512], name[96];
            snprintf(name, sizeof name, "%s-%s", examples[i], side ? "pocl" : "host");
            fresh_dir(name, dir, sizeof dir);
            pgn_inet_result r;
            pgn_error err = {0};
            cr_assert_eq(run(side ? cpu : NULL, book, dir, 1 << 16, 0, &r, &err), 0, "%s: %s", name, err.message);
            char *got = shown(&r);
            cr_assert_str_eq(got, expected, "%s", name);
            cr_assert_gt(r.io_calls, 0, "%s", name);
            free(got);
            pgn_inet_result_free(&r);
        }
        pgn_inet_book_free(book);
        free(text);
        free(expected);
    }
    pgn_device_close(cpu);
}

/* A program that OPENs path with mode and ends with the Result. */
static char *open_program(const char *path, const char *mode) {
    pgn_text t = {0};
    pgn_text_puts(&t, PRELUDE);
    put_string(&t, "open", "OPEN");
    put_string(&t, "path", path);
    put_string(&t, "mode", mode);
    pgn_text_puts(&t, "@main = r0\n  & @IO/Call ~ (@IO/MAGIC (@open ((@path @mode) ((res r1) r0))))\n"
                      "  & @IO/Done ~ (@IO/MAGIC (res r1))\n");
    return pgn_text_take(&t);
}

/* Result/Ok(3) or Result/Err(IOError/Inner(errno)), as the printer writes them. */
static void expect_open(const char *dir, const char *path, const char *mode, int err_no) {
    char *text = open_program(path, mode);
    pgn_inet_book *book = parse(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(run(NULL, book, dir, 1 << 16, 0, &r, &err), 0, "%s: %s", path, err.message);
    char want[128];
    if (err_no) snprintf(want, sizeof want, "(((1 (((2 (+%d x0)) x0) x1)) x1) x2)", err_no);
    else snprintf(want, sizeof want, "(((0 (3 x0)) x0) x1)");
    cr_assert(strstr(r.normal_form, want), "OPEN '%s' '%s': want %s in %s", path, mode, want, r.normal_form);
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    free(text);
}

Test(inet_io, a_confined_program_cannot_reach_outside_its_directory) {
    char dir[512], outside[512], path[600];
    fresh_dir("confined", dir, sizeof dir);
    fresh_dir("outside", outside, sizeof outside);
    snprintf(path, sizeof path, "%s/secret.txt", outside);
    FILE *f = fopen(path, "w");
    fputs("secret\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/ok.txt", dir);
    f = fopen(path, "w");
    fputs("fine\n", f);
    fclose(f);
    char link[600], target[600];
    snprintf(link, sizeof link, "%s/link.txt", dir);
    snprintf(target, sizeof target, "%s/secret.txt", outside);
    cr_assert_eq(symlink(target, link), 0);
    snprintf(link, sizeof link, "%s/linkdir", dir);
    cr_assert_eq(symlink(outside, link), 0);
    snprintf(path, sizeof path, "%s/sub", dir);
    cr_assert_eq(mkdir(path, 0755), 0);

    expect_open(dir, "ok.txt", "r", 0);
    expect_open(dir, "./sub/../ok.txt", "r", EACCES);
    expect_open(dir, "../outside/secret.txt", "r", EACCES);
    expect_open(dir, target, "r", EACCES); /* absolute */
    expect_open(dir, "link.txt", "r", ELOOP);
    expect_open(dir, "linkdir/secret.txt", "r", ENOTDIR);
    expect_open(dir, "link.txt", "w", ELOOP); /* not even to truncate the file it points at */
    expect_open(dir, "ok.txt", "rw", EINVAL);  /* a mode fopen refuses */
    expect_open(dir, "sub/new.txt", "w", 0);
    snprintf(path, sizeof path, "%s/sub/new.txt", dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the file made inside");
    char *secret = pgn_read_file(target, &(size_t){0});
    cr_assert_str_eq(secret, "secret\n", "the outside untouched");
    free(secret);
}

/* A program that WRITEs text to fd 1 n times, and READs 10 bytes from stdin. */
static char *write_program(const char *text, int n) {
    pgn_text t = {0};
    pgn_text_puts(&t, PRELUDE);
    put_string(&t, "write", "WRITE");
    put_string(&t, "read", "READ");
    put_string(&t, "text", text);
    /* loop(k)(*): k WRITEs, then the READ: loop(0) is @done, loop(k + 1) is @more(k) */
    pgn_text_puts(&t, "@loop = (?((@done @more) n) n)\n@done = (* r) & @IO/Call ~ (@IO/MAGIC (@read ((0 10) ((s r0) r)))) "
                      "& @IO/Done ~ (@IO/MAGIC (s r0))\n"
                      "@more = (k (* r)) & @IO/Call ~ (@IO/MAGIC (@write ((1 @text) ((* r1) r)))) & @loop ~ (k (* r1))\n");
    pgn_text_printf(&t, "@main = r & @loop ~ (%d (* r))\n", n);
    return pgn_text_take(&t);
}

Test(inet_io, the_output_is_bounded_and_stdin_is_empty) {
    char dir[512];
    fresh_dir("output", dir, sizeof dir);
    char *text = write_program("0123456789", 30);
    pgn_inet_book *book = parse(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(run(NULL, book, dir, 100, 0, &r, &err), 0, "%s", err.message);
    cr_assert_eq(r.output_len, 100);
    cr_assert_eq(r.output_dropped, 200);
    cr_assert_eq(strlen(r.output), 100);
    cr_assert(!strncmp(r.output, "0123456789012", 13));
    cr_assert_eq(r.io_calls, 31);
    /* READ of stdin: Result/Ok(Nil) */
    cr_assert(strstr(r.normal_form, "(((0 (((0 x0) x0) x1)) x1) x2)"), "%s", r.normal_form);
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    free(text);
}

/* A program that sleeps about 10 s: 2^24 + 0 ns x 600, (hi lo) = (600 0). Its text in *text. */
static pgn_inet_book *sleeper(char **text) {
    pgn_text t = {0};
    pgn_text_puts(&t, PRELUDE);
    put_string(&t, "sleep", "SLEEP");
    pgn_text_puts(&t, "@main = r0 & @IO/Call ~ (@IO/MAGIC (@sleep ((600 0) ((* r1) r0)))) & @IO/Done ~ (@IO/MAGIC (1 r1))\n");
    *text = pgn_text_take(&t);
    return parse(*text);
}

Test(inet_io, a_sleep_counts_against_the_timeout) {
    char *text, dir[512];
    fresh_dir("sleep", dir, sizeof dir);
    pgn_inet_book *book = sleeper(&text);
    pgn_inet_result r;
    pgn_error err = {0};
    double t0 = pgn_now_s();
    cr_assert_eq(run(NULL, book, dir, 1 << 16, 0.2, &r, &err), -1);
    double took = pgn_now_s() - t0;
    cr_assert_eq(err.code, PGN_E_LIMIT_EXCEEDED, "%s", err.message);
    cr_assert_str_eq(err.field, "limits.timeout_s");
    cr_assert_lt(took, 2.0, "the sleep was cut at the timeout (%.2f s)", took);
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    free(text);
}

/* The nodes live once a program of k WRITE calls in a row has ended. */
static uint64_t live_after_writes(int k) {
    pgn_text t = {0};
    pgn_text_puts(&t, PRELUDE);
    put_string(&t, "write", "WRITE");
    put_string(&t, "hello", "hello\n");
    pgn_text_puts(&t, "@main = r0\n");
    for (int i = 0; i < k; i++)
        pgn_text_printf(&t, "  & @IO/Call ~ (@IO/MAGIC (@write ((1 @hello) ((* r%d) r%d))))\n", i + 1, i);
    pgn_text_printf(&t, "  & @IO/Done ~ (@IO/MAGIC (0 r%d))\n", k);
    char *text = pgn_text_take(&t), dir[512];
    fresh_dir("writes", dir, sizeof dir);
    pgn_inet_book *book = parse(text);
    pgn_inet_net *n;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_net_new(book, NULL, &n, &err), 0, "%s", err.message);
    pgn_inet_net_boot(n, pgn_inet_port(PGN_INET_REF, 0), pgn_inet_net_root(n));
    cr_assert_eq(pgn_inet_net_normalize(n, NULL, &err), 0, "%s", err.message);
    pgn_inet_io io = {.dir = dir, .output_max = 1 << 16};
    pgn_inet_result r = {0};
    cr_assert_eq(pgn_inet_io_run(n, &io, NULL, &r, &err), 0, "%s", err.message);
    cr_assert_eq(r.io_calls, (uint64_t)k);
    cr_assert_eq(r.output_len, 6 * (size_t)k);
    uint64_t live = pgn_inet_net_live(n);
    pgn_inet_result_free(&r);
    pgn_inet_net_free(n);
    pgn_inet_book_free(book);
    free(text);
    return live;
}

/* The IO loop kept every call it performed (the call, its name and argument, the copies its
 * reads expanded): 36-42 nodes a call. Now what is left at the end does not depend on how many
 * calls were made (the counts stay HVM2's: the examples above). */
Test(inet_io, performed_calls_leave_no_nodes_behind) {
    uint64_t ten = live_after_writes(10), hundred = live_after_writes(100);
    cr_assert_eq(ten, hundred, "live nodes at the end: %llu after 10 calls, %llu after 100",
                 (unsigned long long)ten, (unsigned long long)hundred);
}

static bool always(void *ctx) {
    (void)ctx;
    return true;
}

/* One nanosleep of the whole made a SLEEP deaf to a cancel and to paragond's shutdown: now it
 * sleeps in slices and asks between them. */
Test(inet_io, a_sleep_ends_when_the_run_is_asked_to_stop) {
    char *text, dir[512];
    fresh_dir("sleep_stop", dir, sizeof dir);
    pgn_inet_book *book = sleeper(&text);
    pgn_inet_io io = {.dir = dir, .output_max = 1 << 16};
    pgn_inet_limits lim = {0}; /* no timeout: only the stop ends the 10 s sleep */
    pgn_run_hooks hooks = {.should_stop = always};
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_host(book, &lim, &io, &hooks, &r, &err), -1);
    cr_assert_eq(err.code, PGN_E_CANCELLED, "%s", err.message);
    cr_assert(strstr(err.message, "during a SLEEP"), "%s", err.message);
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    free(text);
}

Test(inet_io, a_job_finds_its_spec_files_and_keeps_its_output) {
    char dir[512];
    fresh_dir("job", dir, sizeof dir);
    pgn_text t = {0};
    pgn_text_puts(&t, PRELUDE);
    put_string(&t, "open", "OPEN");
    put_string(&t, "read", "READ");
    put_string(&t, "write", "WRITE");
    put_string(&t, "name", "in.txt");
    put_string(&t, "r", "r");
    pgn_text_puts(&t, "@main = r0\n"
                      "  & @IO/Call ~ (@IO/MAGIC (@open ((@name @r) ((res1 r1) r0))))\n"
                      "  & res1 ~ ((* (v1 v1)) fd)\n"
                      "  & @IO/Call ~ (@IO/MAGIC (@read ((fd 100) ((res2 r2) r1))))\n"
                      "  & res2 ~ ((* (v2 v2)) text)\n"
                      "  & @IO/Call ~ (@IO/MAGIC (@write ((1 text) ((* r3) r2))))\n"
                      "  & @IO/Done ~ (@IO/MAGIC (0 r3))\n");
    char *program = pgn_text_take(&t);
    json_t *j = json_pack("{s:s, s:s, s:{s:s}}", "kind", "inet", "program", program, "files", "in.txt",
                          "given to the program\n");
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse(j, &spec, &err), 0, "%s", err.message);
    pgn_run_options opts = {.inet_io = PGN_INET_IO_CONFINED, .io_dir = dir};
    json_t *result = NULL;
    cr_assert_eq(pgn_job_run(&spec, NULL, &opts, NULL, &result, &err), 0, "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(result, "output")), "given to the program\n");
    cr_assert_eq(json_integer_value(json_object_get(result, "io_calls")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(result, "normal_form")),
                     "((@IO/Done/tag (@IO/MAGIC (0 x0))) x0)");
    json_decref(result);
    pgn_spec_free(&spec);
    /* without IO allowed, the normal form is the first IO/Call */
    cr_assert_eq(pgn_spec_parse(j, &spec, &err), 0, "%s", err.message);
    pgn_run_options none = {0};
    cr_assert_eq(pgn_job_run(&spec, NULL, &none, NULL, &result, &err), 0, "%s", err.message);
    cr_assert(!strncmp(json_string_value(json_object_get(result, "normal_form")), "((@IO/Call/tag", 14), "%s",
              json_string_value(json_object_get(result, "normal_form")));
    cr_assert_null(json_object_get(result, "output"));
    json_decref(result);
    pgn_spec_free(&spec);
    json_decref(j);
    free(program);
    /* a program that writes nothing has no output to show, IO allowed or not */
    j = json_pack("{s:s, s:s}", "kind", "inet", "program", "@main = 42");
    cr_assert_eq(pgn_spec_parse(j, &spec, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_job_run(&spec, NULL, &opts, NULL, &result, &err), 0, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(result, "io_calls")), 0);
    cr_assert_null(json_object_get(result, "output"));
    cr_assert_null(json_object_get(result, "output_truncated"));
    json_decref(result);
    pgn_spec_free(&spec);
    json_decref(j);
}
