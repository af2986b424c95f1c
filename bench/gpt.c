/* gpt.c: paragon's character GPT against PyTorch on this machine, in one run: the char-gpt
 * benchmark (engine/bench/bench_gpt.c) on each OpenCL device (and the host reference with
 * --host) and bench/gpt_torch.py with the same model, data, split, optimizer, steps and seed,
 * run after run alternately; a side-by-side table of medians (ms/step, tokens/s, GFLOP/s, the
 * validation loss after the same steps) and paragon's generation characters/s at batch 1.
 *   build/bench/bench-gpt [--steps N] [--repeats R] [--host] [--json] [--torch-script PATH] */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "capture.h"

/* Enough steps for the validation loss to mean something (3.3 after 20 steps, 2.45-2.48 after
 * 300 on both sides) in a run of about a minute and a half here: ~90 ms/step for paragon and
 * ~130 for PyTorch on this 2-core machine. */
#define DEFAULT_STEPS 300
#define LOG_EVERY 10     /* ms/step: the median of the means of windows of this many steps */
#define EVAL_WINDOWS 128 /* char-gpt.json's, and gpt_torch.py's default */
#define GEN_CHARS 200
#define MAX_REPEATS 50
/* Debian's python3-torch; the python3 on PATH may be another build without torch. */
#define TORCH_PYTHON "/usr/bin/python3"
/* What gpt_torch.py sets where the environment does not (with torch's defaults a step takes
 * over twice as long here): named to report them. */
static const char *const torch_env[][2] = {{"OMP_WAIT_POLICY", "passive"}, {"OPENBLAS_CORETYPE", "SkylakeX"}};
/* paragon's generation goal, characters/s at batch 1 (issue 13). */
#define GEN_TARGET 1000

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-gpt: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* ---- one side's figures ------------------------------------------------------------------- */

/* A run's figures; CHARS_PER_S (generation) is paragon's alone. */
enum { MS, TPS, GFLOPS, VAL_LOSS, CHARS_PER_S, N_FIGURES };

typedef struct {
    char name[96];
    int runs;
    double run[MAX_REPEATS][N_FIGURES];
    long long params;
    int vocab;
    long long launches; /* kernels a training step queued (paragon's sides; 0 on the host) */
} side;

/* The median of one figure over the side's runs. */
static double median(const side *s, int figure) {
    double v[MAX_REPEATS];
    for (int r = 0; r < s->runs; r++) v[r] = s->run[r][figure];
    return pgn_median(v, (size_t)s->runs);
}

static double num(const json_t *obj, const char *key) {
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) die("the result has no number '%s'", key);
    return json_number_value(v);
}

/* ---- paragon ------------------------------------------------------------------------------- */

static void on_log(void *ctx, const char *line) {
    fprintf(stderr, "  %s: %s\n", (const char *)ctx, line);
}

static void paragon_run(side *s, pgn_device *dev, const pgn_bench_gpt_config *cfg) {
    pgn_run_hooks hooks = {.ctx = s->name, .on_log = on_log};
    json_t *train, *gen;
    pgn_error err = {0};
    double t0 = pgn_now_s();
    if (pgn_bench_gpt_run(cfg, dev, PGN_DEFAULT_DATA_DIR, &hooks, &train, &gen, &err))
        die("%s: %s", s->name, err.message);
    double *f = s->run[s->runs++];
    f[MS] = num(train, "ms_per_step");
    f[TPS] = num(train, "tokens_per_second");
    f[GFLOPS] = num(train, "gflops");
    f[VAL_LOSS] = num(train, "val_loss");
    f[CHARS_PER_S] = num(gen, "tokens_per_second");
    s->params = (long long)num(train, "params");
    s->vocab = (int)num(train, "vocab");
    s->launches = (long long)num(train, "launches_per_step");
    fprintf(stderr, "bench-gpt: %s run %d: %.1f ms/step, val_loss %.4f, %.0f characters/s (%.0f s)\n", s->name,
            s->runs, f[MS], f[VAL_LOSS], f[CHARS_PER_S], pgn_now_s() - t0);
    json_decref(train);
    json_decref(gen);
}

/* ---- PyTorch ------------------------------------------------------------------------------- */

/* torch's version when the Python imports it, else NULL. */
static char *torch_version(const char *python) {
    char *argv[] = {(char *)python, "-c", "import torch, sys; sys.stdout.write(torch.__version__)", NULL};
    return bench_capture(argv, false);
}

/* paragon's windowed median from PyTorch's per-step times: the means of LOG_EVERY-step windows
 * (the last one shorter, as paragon's), then their median. */
static double windowed_ms(const json_t *per_step) {
    size_t n = json_array_size(per_step), w = 0;
    double *means = malloc((n / LOG_EVERY + 1) * sizeof *means);
    if (!n || !means) die("gpt_torch.py gave no step times");
    for (size_t i = 0; i < n; i += LOG_EVERY) {
        size_t end = i + LOG_EVERY < n ? i + LOG_EVERY : n;
        double sum = 0;
        for (size_t k = i; k < end; k++) sum += json_number_value(json_array_get(per_step, k));
        means[w++] = sum / (double)(end - i);
    }
    double m = pgn_median(means, w);
    free(means);
    return m;
}

static const char *const SCHEDULES[] = {[PGN_SCHEDULE_CONSTANT] = "constant", [PGN_SCHEDULE_COSINE] = "cosine"};

/* One run of gpt_torch.py with the spec's figures; exits on failure. */
static void torch_run(side *s, const char *python, const char *script, const pgn_job_spec *spec, int threads) {
    const pgn_train_spec *t = &spec->train;
    const pgn_optimizer_spec *o = &t->optimizer;
    if (t->data.source != PGN_DATA_FORTUNES || o->type != PGN_OPT_ADAMW || t->dropout != 0 || !t->gpt.tie_embeddings)
        die("the benchmark's spec is not what gpt_torch.py trains (fortunes, AdamW, no dropout, tied head)");
    char v[20][32];
    int i = 0;
#define ARG(fmt, x) snprintf(v[i++], sizeof v[0], fmt, x)
    ARG("%d", t->gpt.n_layer), ARG("%d", t->gpt.n_head), ARG("%d", t->gpt.d_model), ARG("%d", t->gpt.context);
    ARG("%d", t->batch_size), ARG("%d", t->steps), ARG("%.9g", o->lr), ARG("%.9g", o->weight_decay);
    ARG("%.9g", o->beta1), ARG("%.9g", o->beta2), ARG("%.9g", o->eps), ARG("%d", o->warmup_steps);
    ARG("%.9g", o->min_lr), ARG("%.9g", o->clip_norm), ARG("%d", t->eval_windows);
    ARG("%llu", (unsigned long long)spec->seed), ARG("%d", threads), ARG("%d", t->log_every);
#undef ARG
    char *argv[] = {(char *)python, (char *)script, "--fortunes", "--n-layer", v[0], "--n-head", v[1], "--d-model",
                    v[2], "--context", v[3], "--batch", v[4], "--steps", v[5], "--lr", v[6], "--weight-decay", v[7],
                    "--beta1", v[8], "--beta2", v[9], "--eps", v[10], "--warmup", v[11], "--min-lr", v[12],
                    "--clip-norm", v[13], "--eval-windows", v[14], "--seed", v[15], "--threads", v[16],
                    "--log-every", v[17], "--schedule", (char *)SCHEDULES[o->schedule], NULL};
    double t0 = pgn_now_s();
    char *out = bench_capture(argv, true);
    if (!out) die("%s %s failed (its messages are above)", python, script);
    const char *last = out + strlen(out);
    while (last > out && (last[-1] == '\n' || last[-1] == ' ')) last--;
    while (last > out && last[-1] != '\n') last--;
    json_t *r = json_loads(last, 0, NULL);
    if (!r) die("gpt_torch.py's last line is not JSON: %s", last);
    double *f = s->run[s->runs++];
    f[MS] = windowed_ms(json_object_get(r, "ms_per_step_all"));
    f[TPS] = t->batch_size * t->gpt.context / (f[MS] * 1e-3);
    s->vocab = (int)num(r, "vocab");
    s->params = (long long)num(r, "params");
    f[GFLOPS] = f[TPS] * pgn_gpt_flops_per_token(&t->gpt, s->vocab) * 1e-9;
    f[VAL_LOSS] = num(r, "val_loss");
    fprintf(stderr, "bench-gpt: %s run %d: %.1f ms/step, val_loss %.4f (%.0f s)\n", s->name, s->runs, f[MS],
            f[VAL_LOSS], pgn_now_s() - t0);
    json_decref(r);
    free(out);
}

/* ---- the report ---------------------------------------------------------------------------- */

/* paragon's ms/step over PyTorch's: the median of the runs' pairs (run r of each side ran
 * back to back, so a pair shares the machine's state of the moment: the load of others here). */
static double ms_ratio(const side *s, const side *torch) {
    double v[MAX_REPEATS];
    for (int r = 0; r < s->runs; r++) v[r] = s->run[r][MS] / torch->run[r][MS];
    return pgn_median(v, (size_t)s->runs);
}

static json_t *side_json(const side *s, const side *torch) {
    json_t *runs = json_array();
    for (int r = 0; r < s->runs; r++)
        json_array_append_new(runs, json_pack("{s:f, s:f, s:f, s:f}", "ms_per_step", s->run[r][MS], "tokens_per_second",
                                              s->run[r][TPS], "gflops", s->run[r][GFLOPS], "val_loss",
                                              s->run[r][VAL_LOSS]));
    json_t *j = json_pack("{s:s, s:f, s:f, s:f, s:f, s:I, s:i, s:o}", "side", s->name, "ms_per_step", median(s, MS),
                          "tokens_per_second", median(s, TPS), "gflops", median(s, GFLOPS), "val_loss",
                          median(s, VAL_LOSS), "params", (json_int_t)s->params, "vocab", s->vocab, "runs", runs);
    if (s != torch) json_object_set_new(j, "characters_per_second", json_real(median(s, CHARS_PER_S)));
    if (s != torch) json_object_set_new(j, "launches_per_step", json_integer(s->launches));
    if (s != torch && torch && torch->runs) {
        json_object_set_new(j, "ms_per_step_ratio", json_real(ms_ratio(s, torch)));
        json_object_set_new(j, "val_loss_diff_pct",
                            json_real(100.0 * (median(s, VAL_LOSS) / median(torch, VAL_LOSS) - 1.0)));
    }
    return j;
}

static void print_row(const side *s, const side *torch) {
    printf("%-28s %8.1f %9.0f %8.1f %9.4f", s->name, median(s, MS), median(s, TPS), median(s, GFLOPS),
           median(s, VAL_LOSS));
    if (s != torch && torch && torch->runs)
        printf(" %12.2f %+16.2f %%", ms_ratio(s, torch),
               100.0 * (median(s, VAL_LOSS) / median(torch, VAL_LOSS) - 1.0));
    else
        printf(" %12s %18s", "-", "-");
    if (s != torch) printf(" %9lld\n", s->launches);
    else printf(" %9s\n", "-");
}

static void usage(FILE *out) {
    fprintf(out, "usage: bench-gpt [--steps N] [--repeats R] [--host] [--json] [--torch-script PATH]\n"
                 "                 [--python PATH]\n"
                 "  --steps         training steps per run, both sides [%d]\n"
                 "  --repeats       runs per side, alternating paragon and PyTorch; medians reported [1]\n"
                 "  --host          also the host reference (one thread: about 2.7x slower than pocl here)\n"
                 "  --json          one JSON object on stdout instead of the table\n"
                 "  --torch-script  the PyTorch reference [%s]\n"
                 "  --python        the Python that has torch [%s]\n",
            DEFAULT_STEPS, GPT_TORCH_SCRIPT, TORCH_PYTHON);
}

int main(int argc, char **argv) {
    int steps = DEFAULT_STEPS, repeats = 1;
    bool with_host = false, as_json = false;
    const char *script = GPT_TORCH_SCRIPT, *python = TORCH_PYTHON;
    for (int i = 1; i < argc; i++) {
        bool v = i + 1 < argc;
        if (!strcmp(argv[i], "--steps") && v) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && v) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--torch-script") && v) script = argv[++i];
        else if (!strcmp(argv[i], "--python") && v) python = argv[++i];
        else if (!strcmp(argv[i], "--host")) with_host = true;
        else if (!strcmp(argv[i], "--json")) as_json = true;
        else {
            usage(!strcmp(argv[i], "--help") ? stdout : stderr);
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    if (steps < 1 || repeats < 1 || repeats > MAX_REPEATS) {
        fprintf(stderr, "bench-gpt: --steps must be >= 1 and --repeats in [1, %d]\n", MAX_REPEATS);
        return 2;
    }
    pgn_bench_gpt_config cfg = {.steps = steps, .log_every = LOG_EVERY, .eval_windows = EVAL_WINDOWS,
                                .gen_chars = GEN_CHARS};
    pgn_job_spec spec;
    pgn_error err = {0};
    if (pgn_bench_gpt_spec(&cfg, &spec, &err)) die("spec: %s", err.message);

    pgn_device_info *list = NULL;
    size_t n = 0;
    if (pgn_devices_list(&list, &n, &err)) die("%s", err.message);
    size_t n_sides = n + (with_host ? 1 : 0);
    if (!n_sides) die("no OpenCL device found (--host runs the host reference)");
    side *sides = calloc(n_sides + 1, sizeof *sides);
    pgn_device **devs = calloc(n_sides, sizeof *devs);
    if (!sides || !devs) die("out of memory");
    for (size_t d = 0; d < n; d++) {
        pgn_device_tuning tuned;
        if (pgn_device_open(&list[d], &devs[d], &err) ||
            pgn_device_calibrate(devs[d], PGN_CALIBRATION_BUDGET_S, 5, NULL, &tuned, &err))
            die("%s: %s", list[d].id, err.message);
        pgn_device_tune(devs[d], &tuned);
        snprintf(sides[d].name, sizeof sides[d].name, "paragon %s", list[d].id);
    }
    if (with_host) snprintf(sides[n].name, sizeof sides[n].name, "paragon host reference");

    side *torch = NULL;
    char *version = NULL;
    /* pocl runs a thread on each core: PyTorch gets as many (2 here). */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores > 0 ? (int)cores : 1;
    if (!(version = torch_version(python))) {
        fprintf(stderr, "bench-gpt: PyTorch skipped: %s cannot import torch (Debian's python3-torch)\n", python);
    } else {
        if (access(script, R_OK)) die("%s: %s (--torch-script PATH names gpt_torch.py)", script, strerror(errno));
        torch = &sides[n_sides];
        snprintf(torch->name, sizeof torch->name, "PyTorch %s", version);
    }

    for (int r = 0; r < repeats; r++) {
        for (size_t d = 0; d < n_sides; d++) paragon_run(&sides[d], devs[d], &cfg);
        if (torch) torch_run(torch, python, script, &spec, threads);
    }
    for (size_t d = 0; d < n_sides; d++) pgn_device_close(devs[d]);

    const side *first = &sides[0];
    if (torch && torch->params != first->params)
        fprintf(stderr, "bench-gpt: warning: PyTorch's model has %lld parameters, paragon's %lld\n", torch->params,
                first->params);
    const pgn_train_spec *t = &spec.train;
    if (as_json) {
        json_t *out = json_pack("{s:o, s:i, s:i, s:[]}", "spec", pgn_train_spec_to_json(t), "repeats", repeats,
                                "generated_characters", GEN_CHARS, "paragon");
        for (size_t d = 0; d < n_sides; d++)
            json_array_append_new(json_object_get(out, "paragon"), side_json(&sides[d], torch));
        json_object_set_new(out, "torch", torch ? side_json(torch, torch) : json_null());
        if (torch)
            json_object_set_new(json_object_get(out, "torch"), "threads", json_integer(threads));
        char *s = pgn_json_dumps(out);
        printf("%s\n", s);
        free(s);
        json_decref(out);
    } else {
        printf("char-gpt: %d layers, d_model %d, %d heads, context %d, %lld parameters (vocabulary %d); fortunes; "
               "batch %d; AdamW lr %g, weight decay %g, %s, clip_norm %g (0: none); seed %llu\n",
               t->gpt.n_layer, t->gpt.d_model, t->gpt.n_head, t->gpt.context, first->params, first->vocab,
               t->batch_size, t->optimizer.lr, t->optimizer.weight_decay, SCHEDULES[t->optimizer.schedule],
               t->optimizer.clip_norm, (unsigned long long)spec.seed);
        printf("%d steps a run, %d run%s a side (alternating; medians; ms vs torch: the median of the runs' "
               "pairs); ms/step: the median of %d-step windows' means; val_loss: %d validation windows after the "
               "last step\n",
               steps, repeats, repeats == 1 ? "" : "s", LOG_EVERY, EVAL_WINDOWS);
        if (torch) {
            printf("PyTorch: %s %s, %d threads", python, script, threads);
            for (size_t e = 0; e < sizeof torch_env / sizeof *torch_env; e++) {
                const char *set = getenv(torch_env[e][0]);
                printf(" %s=%s", torch_env[e][0], set ? set : torch_env[e][1]);
            }
            printf("\nThe sides draw different training windows (paragon's counter RNG, torch.Generator): only "
                   "the validation losses compare (target: within 3 %%).\n");
        }
        printf("\n%-28s %8s %9s %8s %9s %12s %18s %9s\n", "side", "ms/step", "tokens/s", "GFLOP/s", "val_loss",
               "ms vs torch", "val_loss vs torch", "launches");
        for (size_t d = 0; d < n_sides; d++) print_row(&sides[d], torch);
        if (torch) print_row(torch, torch);
        printf("\ngeneration at batch 1 (%d characters, temperature 0, from the run's checkpoint; target >= %d):\n",
               GEN_CHARS, GEN_TARGET);
        for (size_t d = 0; d < n_sides; d++)
            printf("%-28s %8.0f characters/s\n", sides[d].name, median(&sides[d], CHARS_PER_S));
    }
    free(version);
    free(sides);
    free(devs);
    free(list);
    return 0;
}
