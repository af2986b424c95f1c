/* inet.c: interaction-net throughput of the host reference reducer on the programs of
 * examples/inet: interactions, seconds and MIPS (millions of interactions per second), the
 * median of several runs, with each run's result checked against the example's .expected file.
 * Timed: the reduction alone, from the first CALL of @main to the empty redex bag, heap growth
 * included; parsing, the initial heap allocation and the readback are not.
 *   build/bench/bench-inet [--repeats N] [--min-seconds S] [FILE.hvm ...]
 * Without files it runs every example in $PARAGON_SOURCE_ROOT/examples/inet (default: ./). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "ok" when the run printed what NAME.expected holds, "DIFFERS" when not, "-" without one. */
static const char *check(const char *path, const pgn_inet_result *r) {
    char exp_path[4096];
    size_t n = strlen(path);
    if (n < 4 || n + 16 > sizeof exp_path) return "-";
    snprintf(exp_path, sizeof exp_path, "%.*s.expected", (int)(n - 4), path);
    size_t len;
    char *expected = pgn_read_file(exp_path, &len);
    if (!expected) return "-";
    size_t glen = strlen(r->normal_form) + 64;
    char *got = malloc(glen);
    snprintf(got, glen, "Result: %s\n- ITRS: %llu\n", r->normal_form, (unsigned long long)r->interactions);
    bool same = got && !strcmp(got, expected);
    free(got);
    free(expected);
    return same ? "ok" : "DIFFERS";
}

static int bench_file(const char *path, int repeats, double min_seconds) {
    size_t len;
    char *text = pgn_read_file(path, &len);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 1;
    }
    pgn_inet_book *book;
    pgn_error err = {0};
    if (pgn_inet_parse(text, len, &book, &err)) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        free(text);
        return 1;
    }
    free(text);
    double times[256];
    int runs = 0;
    double total = 0;
    pgn_inet_result last = {0};
    const char *verdict = "-";
    while (runs < 256 && (runs < repeats || total < min_seconds)) {
        pgn_inet_result r;
        if (pgn_inet_run_host(book, NULL, NULL, &r, &err)) {
            fprintf(stderr, "%s: %s: %s\n", path, err.code, err.message);
            pgn_inet_book_free(book);
            return 1;
        }
        times[runs++] = r.seconds;
        total += r.seconds;
        if (runs == 1) verdict = check(path, &r);
        pgn_inet_result_free(&last);
        last = r;
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    double median = times[runs / 2];
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%-16s %12llu %10.4f %9.1f %10llu %5d  %s\n", name, (unsigned long long)last.interactions, median,
           median > 0 ? (double)last.interactions / median / 1e6 : 0.0, (unsigned long long)last.peak_nodes,
           runs, verdict);
    pgn_inet_result_free(&last);
    pgn_inet_book_free(book);
    return strcmp(verdict, "DIFFERS") == 0;
}

int main(int argc, char **argv) {
    int repeats = 5;
    double min_seconds = 0.5;
    char **files = calloc((size_t)argc + 1, sizeof *files);
    int n_files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [--repeats N] [--min-seconds S] [FILE.hvm ...]\n", argv[0]);
            return 2;
        } else
            files[n_files++] = strdup(argv[i]);
    }
    if (n_files == 0) { /* every example, in name order */
        const char *root = getenv("PARAGON_SOURCE_ROOT");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/examples/inet", root ? root : ".");
        DIR *d = opendir(dir);
        if (!d) {
            fprintf(stderr, "%s: cannot open (set PARAGON_SOURCE_ROOT or pass files)\n", dir);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n < 5 || strcmp(e->d_name + n - 4, ".hvm")) continue;
            char **nf = realloc(files, ((size_t)n_files + 2) * sizeof *files);
            if (!nf) return 1;
            files = nf;
            size_t plen = strlen(dir) + n + 2;
            files[n_files] = malloc(plen);
            snprintf(files[n_files++], plen, "%s/%s", dir, e->d_name);
        }
        closedir(d);
        qsort(files, (size_t)n_files, sizeof *files, cmp_str);
    }
    printf("host reducer, 1 thread; seconds: median reduction time of the runs (parse, heap set-up and "
           "readback excluded)\n");
    printf("%-16s %12s %10s %9s %10s %5s  %s\n", "program", "interactions", "seconds", "MIPS", "peak nodes",
           "runs", "result");
    int bad = 0;
    for (int i = 0; i < n_files; i++) {
        bad += bench_file(files[i], repeats, min_seconds);
        free(files[i]);
    }
    free(files);
    return bad ? 1 : 0;
}
