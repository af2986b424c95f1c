/* distributed.c: DiLoCo against ddp on this machine, in one run. The Fashion-MNIST MLP of
 * examples/jobs/fashion-mlp-ddp.json (its model, data, optimizer and batch per rank) trains for
 * the same epochs, so the same samples, as: 2 ranks with ddp; 2 ranks with DiLoCo at H = 10, 50
 * and 200; and 1 rank with ddp, for the scaling from one rank to two. Each run is mpirun -np N
 * paragon-rank (built here); the table gives the final test loss and accuracy, the all-reduces
 * (syncs), the bytes each rank sent, the seconds, and the shares of the time spent moving data
 * and waiting for the other rank. Then the targets of issue 14, computed from the table.
 *   build/bench/bench-distributed [--epochs E] [--device cpu|host|ID] [--repeats R]
 *                                 [--data-dir DIR] [--json] */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "capture.h"

#define DEFAULT_EPOCHS 3
#define MAX_REPEATS 20

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-distributed: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* One configuration: ranks and algorithm (H = 0: ddp), and its figures per repeat. */
enum { SECONDS, COMM_SHARE, WAIT_SHARE, N_TIMES };

typedef struct {
    int ranks, inner_steps;
    double test_loss, test_accuracy, bytes_sent;
    long long syncs, steps;
    double times[MAX_REPEATS][N_TIMES];
    int runs;
} config;

static double num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) die("the ranks' result has no number '%s'", key);
    return json_number_value(v);
}

static double median_of(const config *c, int figure) {
    double v[MAX_REPEATS];
    for (int r = 0; r < c->runs; r++) v[r] = c->times[r][figure];
    return pgn_median(v, (size_t)c->runs);
}

static const char *name_of(const config *c, char *buf, size_t size) {
    if (c->inner_steps) snprintf(buf, size, "diloco H=%d", c->inner_steps);
    else snprintf(buf, size, "ddp");
    return buf;
}

/* The spec of one configuration, written to dir/spec-N.json. */
static void write_spec(const json_t *base, const config *c, int epochs, const char *device, const char *path) {
    json_t *spec = json_deep_copy(base);
    json_object_set_new(spec, "epochs", json_integer(epochs));
    json_object_set_new(spec, "device", json_string(device));
    json_t *dist = c->inner_steps ? json_pack("{s:i, s:s, s:i}", "ranks", c->ranks, "algorithm", "diloco",
                                              "inner_steps", c->inner_steps)
                                  : json_pack("{s:i, s:s}", "ranks", c->ranks, "algorithm", "ddp");
    json_object_set_new(spec, "distributed", dist);
    if (json_dump_file(spec, path, 0)) die("cannot write %s", path);
    json_decref(spec);
}

/* One run of a configuration under mpirun; its figures go to c. */
static void run(config *c, const char *spec_path, const char *data_dir, const char *device) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char np[16], threads[48];
    snprintf(np, sizeof np, "%d", c->ranks);
    snprintf(threads, sizeof threads, "POCL_MAX_PTHREAD_COUNT=%ld", cores > c->ranks ? cores / c->ranks : 1);
    char *argv[24];
    int n = 0;
    argv[n++] = MPIRUN_PATH;
    if (geteuid() == 0) argv[n++] = "--allow-run-as-root";
    argv[n++] = "--oversubscribe";
    argv[n++] = "-np";
    argv[n++] = np;
    argv[n++] = "-x";
    argv[n++] = threads;
    argv[n++] = PARAGON_RANK_PATH;
    argv[n++] = (char *)spec_path;
    argv[n++] = "--device";
    argv[n++] = (char *)device;
    argv[n++] = "--data-dir";
    argv[n++] = (char *)data_dir;
    argv[n] = NULL;
    char label[32];
    double t0 = pgn_now_s();
    char *out = bench_capture(argv, true);
    if (!out) die("mpirun -np %s paragon-rank %s failed (its messages are above)", np, spec_path);
    json_t *result = NULL;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *ev = json_loads(line, 0, NULL);
        const char *kind = json_string_value(json_object_get(ev, "event"));
        if (kind && !strcmp(kind, "result")) result = json_incref(json_object_get(ev, "result"));
        json_decref(ev);
    }
    free(out);
    if (!result) die("the ranks printed no result");
    json_t *dist = json_object_get(result, "distributed");
    c->test_loss = num(result, "test_loss");
    c->test_accuracy = num(result, "test_accuracy");
    c->steps = (long long)num(result, "steps");
    c->syncs = (long long)num(dist, "syncs");
    c->bytes_sent = num(json_array_get(json_object_get(dist, "per_rank"), 0), "bytes_sent");
    double *t = c->times[c->runs++];
    t[SECONDS] = num(result, "seconds");
    t[COMM_SHARE] = num(dist, "comm_share");
    t[WAIT_SHARE] = num(dist, "wait_share");
    fprintf(stderr, "bench-distributed: %d rank(s), %s: test loss %.4f, %lld syncs, %.1f s (mpirun %.1f s)\n",
            c->ranks, name_of(c, label, sizeof label), c->test_loss, c->syncs, t[SECONDS], pgn_now_s() - t0);
    json_decref(result);
}

int main(int argc, char **argv) {
    int epochs = DEFAULT_EPOCHS, repeats = 1;
    const char *device = "cpu", *data_dir = PGN_DEFAULT_DATA_DIR;
    bool as_json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--data-dir") && i + 1 < argc) data_dir = argv[++i];
        else if (!strcmp(argv[i], "--json")) as_json = true;
        else {
            fprintf(stderr, "usage: bench-distributed [--epochs E] [--device cpu|host|ID] [--repeats R] "
                            "[--data-dir DIR] [--json]\n");
            return 2;
        }
    }
    if (epochs < 1 || repeats < 1 || repeats > MAX_REPEATS) die("--epochs >= 1 and --repeats 1..%d", MAX_REPEATS);
    json_error_t jerr;
    json_t *base = json_load_file(DDP_SPEC_PATH, 0, &jerr);
    if (!base) die("%s: %s", DDP_SPEC_PATH, jerr.text);
    char dir[] = "/tmp/bench-distributed-XXXXXX";
    if (!mkdtemp(dir)) die("mkdtemp failed");

    config configs[] = {{.ranks = 2}, {.ranks = 2, .inner_steps = 10}, {.ranks = 2, .inner_steps = 50},
                        {.ranks = 2, .inner_steps = 200}, {.ranks = 1}};
    enum { DDP, H10, H50, H200, ONE, N_CONFIGS };
    char paths[N_CONFIGS][64];
    for (int k = 0; k < N_CONFIGS; k++) {
        snprintf(paths[k], sizeof paths[k], "%s/spec-%d.json", dir, k);
        write_spec(base, &configs[k], epochs, device, paths[k]);
    }
    for (int r = 0; r < repeats; r++) /* the configurations take turns, so noise falls on all */
        for (int k = 0; k < N_CONFIGS; k++) run(&configs[k], paths[k], data_dir, device);
    for (int k = 0; k < N_CONFIGS; k++) unlink(paths[k]);
    rmdir(dir);

    const config *ddp = &configs[DDP], *h50 = &configs[H50], *one = &configs[ONE];
    double loss_gap = (h50->test_loss - ddp->test_loss) / ddp->test_loss;
    double comm_h50 = median_of(h50, COMM_SHARE), wait_h50 = median_of(h50, WAIT_SHARE);
    double scaling = median_of(one, SECONDS) / median_of(ddp, SECONDS);
    if (as_json) {
        json_t *rows = json_array();
        for (int k = 0; k < N_CONFIGS; k++) {
            const config *c = &configs[k];
            json_array_append_new(rows, json_pack("{s:i, s:s, s:i, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f}", "ranks",
                                                  c->ranks, "algorithm", c->inner_steps ? "diloco" : "ddp",
                                                  "inner_steps", c->inner_steps, "test_loss", c->test_loss,
                                                  "test_accuracy", c->test_accuracy, "steps", (json_int_t)c->steps,
                                                  "syncs", (json_int_t)c->syncs, "bytes_sent_per_rank",
                                                  c->bytes_sent, "seconds", median_of(c, SECONDS), "comm_share",
                                                  median_of(c, COMM_SHARE), "wait_share", median_of(c, WAIT_SHARE)));
        }
        json_t *j = json_pack("{s:s, s:i, s:i, s:o, s:f, s:f, s:f}", "device", device, "epochs", epochs, "repeats",
                              repeats, "rows", rows, "diloco_h50_loss_vs_ddp", loss_gap, "diloco_h50_comm_share",
                              comm_h50, "scaling_1_to_2_ranks", scaling);
        char *s = json_dumps(j, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(j);
        json_decref(base);
        return 0;
    }
    printf("Fashion-MNIST MLP 784-256-256-10 (%s), %d epochs, batch %lld per rank, device %s, medians of %d\n",
           json_string_value(json_object_get(json_object_get(base, "optimizer"), "type")), epochs,
           (long long)json_integer_value(json_object_get(base, "batch_size")), device, repeats);
    printf("%-5s %-13s %9s %9s %7s %7s %13s %9s %8s %8s\n", "ranks", "algorithm", "test_loss", "test_acc", "steps",
           "syncs", "MB sent/rank", "seconds", "moving", "waiting");
    for (int k = 0; k < N_CONFIGS; k++) {
        const config *c = &configs[k];
        char label[32];
        printf("%-5d %-13s %9.4f %9.4f %7lld %7lld %13.1f %9.2f %7.1f%% %7.1f%%\n", c->ranks,
               name_of(c, label, sizeof label), c->test_loss, c->test_accuracy, c->steps, c->syncs,
               c->bytes_sent / 1e6, median_of(c, SECONDS), 100 * median_of(c, COMM_SHARE),
               100 * median_of(c, WAIT_SHARE));
    }
    printf("\nDiLoCo H=50 against ddp (2 ranks, same samples): test loss %+.2f %% (target within 2 %%), "
           "%lld syncs for %lld (1/%.1f)\n",
           100 * loss_gap, h50->syncs, ddp->syncs, (double)ddp->syncs / (double)h50->syncs);
    printf("DiLoCo H=50: moving data %.1f %% of its time, waiting for the other rank %.1f %% "
           "(target: communication <= 5 %%)\n", 100 * comm_h50, 100 * wait_h50);
    printf("ddp, 1 rank -> 2 ranks: %.2fx faster (this machine has 2 cores, and one rank already uses both "
           "through pocl's threads)\n", scaling);
    json_decref(base);
    return 0;
}
