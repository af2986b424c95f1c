/* inet.c: interaction-net throughput on the programs of examples/inet, on the host reference
 * reducer and on every OpenCL device (with one work-item, then the device's default, so the
 * speed-up from one compute unit to all shows): interactions, seconds and MIPS (millions of
 * interactions per second), the median of several runs, each run's result checked against the
 * example's .expected file. Timed: the reduction alone, from the first CALL of @main to the
 * normal form, including on a device every launch and any heap growth between launches; parsing,
 * the first allocation of the heaps, kernel compilation and the readback are not.
 *   build/bench/bench-inet [--repeats N] [--min-seconds S] [--device host|ID|all] [--steps N]
 *                          [FILE.hvm|FILE.pgl ...]
 * --steps N: the programs train for N steps (examples/inet/train_xor.pgl 100, train_fashion.pgl 20):
 * a line after each gives the interactions a step and each reducer's milliseconds a step.
 * Without files it runs every example in $PARAGON_SOURCE_ROOT/examples/inet (default: ./) but the
 * IO ones (io_*.hvm), which this runs without their IO. A .pgl file is compiled first (not timed)
 * and checked against its .expected in pgl's syntax: examples/lang/X.pgl beside examples/inet/X.hvm
 * puts the compiler's count and MIPS next to the hand-written net's. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet/inet.h"
#include "tensor/tensor.h"

/* Where a program runs: the host reducer (dev NULL) or a device with some work-items. */
typedef struct {
    pgn_device *dev;
    unsigned workers;
    char label[64];
} target;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "ok" when the run printed what NAME.expected holds (a pgl program's result read back from its
 * source src, else the net), "DIFFERS" when not, "-" without one. */
static const char *check(const char *path, const char *src, const pgn_inet_result *r) {
    char exp_path[4096];
    size_t n = strlen(path);
    if (n < 4 || n + 16 > sizeof exp_path) return "-";
    snprintf(exp_path, sizeof exp_path, "%.*s.expected", (int)(n - 4), path);
    size_t len;
    char *expected = pgn_read_file(exp_path, &len);
    if (!expected) return "-";
    char *value = src ? pgn_pgl_readback(src, strlen(src), r->normal_form) : NULL;
    const char *shown = value ? value : r->normal_form;
    size_t glen = strlen(shown) + 64;
    char *got = malloc(glen);
    if (got) snprintf(got, glen, "Result: %s\n- ITRS: %llu\n", shown, (unsigned long long)r->interactions);
    free(value);
    bool same = got && !strcmp(got, expected);
    free(got);
    free(expected);
    return same ? "ok" : "DIFFERS";
}

static int run(const target *t, const pgn_inet_book *book, pgn_inet_result *r, pgn_error *err) {
    return t->dev ? pgn_inet_run_cl(t->dev, book, NULL, NULL, t->workers, NULL, r, err)
                  : pgn_inet_run_host(book, NULL, NULL, NULL, r, err);
}

/* One program on one target: its row; *mips, *peak and *itrs get the figures (0 when it failed). */
static int bench_file(const char *path, const target *t, int repeats, double min_seconds, double *mips,
                      uint64_t *peak, uint64_t *itrs) {
    *mips = 0;
    *peak = 0;
    *itrs = 0;
    size_t len;
    char *text = pgn_read_file(path, &len);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 1;
    }
    pgn_inet_book *book;
    pgn_error err = {0};
    char *src = NULL; /* a pgl program's source, for its readback */
    size_t plen = strlen(path);
    if (plen > 4 && !strcmp(path + plen - 4, ".pgl")) {
        src = text;
        if (!(text = pgn_pgl_compile(src, len, &err))) {
            fprintf(stderr, "%s: %s\n", path, err.message);
            free(src);
            return 1;
        }
        len = strlen(text);
    }
    if (pgn_inet_parse(text, len, &book, &err)) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        free(text);
        free(src);
        return 1;
    }
    free(text);
    double times[256];
    int runs = 0;
    double total = 0;
    pgn_inet_result last = {0};
    const char *verdict = "-";
    if (t->dev && run(t, book, &last, &err) == 0) pgn_inet_result_free(&last); /* warm-up: pocl compiles on first launch */
    last = (pgn_inet_result){0};
    while (runs < 256 && (runs < repeats || total < min_seconds)) {
        pgn_inet_result r;
        if (run(t, book, &r, &err)) {
            fprintf(stderr, "%s: %s: %s\n", path, pgn_error_code_name(err.code), err.message);
            pgn_inet_book_free(book);
            free(src);
            return 1;
        }
        times[runs++] = r.seconds;
        total += r.seconds;
        if (runs == 1) verdict = check(path, src, &r);
        pgn_inet_result_free(&last);
        last = r;
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    double median = times[runs / 2];
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    *mips = median > 0 ? (double)last.interactions / median / 1e6 : 0.0;
    *peak = last.peak_nodes;
    *itrs = last.interactions;
    printf("%-16s %-22s %12llu %10.4f %9.1f %10llu %5d  %s\n", name, t->label, (unsigned long long)last.interactions, median,
           *mips, (unsigned long long)last.peak_nodes, runs, verdict);
    pgn_inet_result_free(&last);
    pgn_inet_book_free(book);
    free(src);
    return strcmp(verdict, "DIFFERS") == 0;
}

/* The host, then each OpenCL device with one work-item and with its default (when more). */
static int targets_for(const char *want, target **out, pgn_device ***opened, size_t *n_opened) {
    size_t n = 0, cap = 2;
    target *t = calloc(cap, sizeof *t);
    *opened = NULL;
    *n_opened = 0;
    if (!t) return -1;
    if (!strcmp(want, "all") || !strcmp(want, "host")) {
        snprintf(t[n++].label, sizeof t->label, "host");
    }
    pgn_device_info *list = NULL;
    size_t n_dev = 0;
    pgn_error err = {0};
    if (strcmp(want, "host") && pgn_devices_list(&list, &n_dev, &err) == 0) {
        *opened = calloc(n_dev + 1, sizeof **opened);
        for (size_t d = 0; d < n_dev; d++) {
            if (strcmp(want, "all") && strcmp(want, list[d].id)) continue;
            pgn_device *dev;
            if (pgn_device_open(&list[d], &dev, &err)) {
                fprintf(stderr, "%s: %s\n", list[d].id, err.message);
                continue;
            }
            (*opened)[(*n_opened)++] = dev;
            unsigned def = pgn_device_get_profile(dev)->inet_workers;
            unsigned counts[2] = {1, def};
            for (int k = 0; k < (def > 1 ? 2 : 1); k++) {
                if (n + 1 > cap) {
                    target *nt = realloc(t, (cap *= 2) * sizeof *t);
                    if (!nt) return -1;
                    t = nt;
                }
                t[n].dev = dev;
                t[n].workers = counts[k];
                snprintf(t[n].label, sizeof t->label, "%.40s x%u", list[d].id, counts[k]);
                n++;
            }
        }
    }
    free(list);
    *out = t;
    return (int)n;
}

int main(int argc, char **argv) {
    int repeats = 5, steps = 0;
    double min_seconds = 0.5;
    const char *device = "all";
    char **files = calloc((size_t)argc + 1, sizeof *files);
    int n_files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            steps = atoi(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [--repeats N] [--min-seconds S] [--device host|ID|all] [--steps N] "
                            "[FILE.hvm|FILE.pgl ...]\n",
                    argv[0]);
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
            if (!strncmp(e->d_name, "io_", 3)) continue; /* IO examples are tests (test_inet_io), not loads */
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
    target *targets;
    pgn_device **opened;
    size_t n_opened;
    int n_targets = targets_for(device, &targets, &opened, &n_opened);
    if (n_targets <= 0) {
        fprintf(stderr, "no device '%s'\n", device);
        return 1;
    }
    printf("seconds: median reduction time of the runs (parse, first heap allocation and readback "
           "excluded); xN: N work-items\n");
    printf("%-16s %-22s %12s %10s %9s %10s %5s  %s\n", "program", "reducer", "interactions", "seconds", "MIPS",
           "peak nodes", "runs", "result");
    int bad = 0;
    for (int i = 0; i < n_files; i++) {
        double mips[64] = {0};
        uint64_t peak[64] = {0}, itrs[64] = {0};
        for (int t = 0; t < n_targets && t < 64; t++)
            bad += bench_file(files[i], &targets[t], repeats, min_seconds, &mips[t], &peak[t], &itrs[t]);
        /* per device: the speed-up from one work-item to its default, and its peak against the host's */
        for (int t = 1; t < n_targets && t < 64; t++) {
            if (!targets[t].dev || targets[t].workers == 1) continue;
            bool host = !targets[0].dev && peak[0] > 0;
            printf("%-16s %-22s   scaling x1 -> x%u: %.2fx%s", "", targets[t].label, targets[t].workers,
                   mips[t - 1] > 0 ? mips[t] / mips[t - 1] : 0.0, host ? "; peak nodes against the host's: " : "\n");
            if (host) printf("%.2fx\n", (double)peak[t] / (double)peak[0]);
        }
        if (steps && itrs[0]) { /* a training: what one step takes */
            double per = (double)itrs[0] / steps;
            printf("%-16s %-22s   %.0f interactions a step (%d steps):", "", "", per, steps);
            for (int t = 0; t < n_targets && t < 64; t++)
                if (mips[t] > 0) printf(" %s %.2f ms%s", targets[t].label, per / mips[t] / 1e3, t + 1 < n_targets ? "," : "");
            printf("\n");
        }
        free(files[i]);
    }
    free(targets);
    for (size_t d = 0; d < n_opened; d++) pgn_device_close(opened[d]);
    free(opened);
    free(files);
    return bad ? 1 : 0;
}
