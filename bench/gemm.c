/* gemm.c: SGEMM throughput of the host reference, each OpenCL device and (when libopenblas.so.0
 * can be loaded at run time) OpenBLAS's cblas_sgemm, on square sizes and on the Fashion-MNIST
 * MLP's GEMMs, with a bit-identity check of every device result against the host reference.
 * OpenBLAS 0.3.21 does not know Zen 5 and runs its AVX2 (Haswell) kernels (this machine's
 * environment even sets OPENBLAS_CORETYPE=Haswell): on AVX-512 CPUs we set OPENBLAS_CORETYPE to
 * SkylakeX, its AVX-512 kernels, the stronger reference (about 1.8x at N = 1024 here).
 * Each device first measures its tile shapes and takes the fastest, as paragond's calibration does
 * (--tile NAME takes one instead); the GPT's shapes (4 layers of d_model 128, batch 32 x 64) follow
 * the MLP's.
 *   build/bench/bench-gemm [--sizes 128,256,...|none] [--shapes fwd1,dW1,...|none] [--repeats N]
 *                          [--tile auto|8x32|4x64|...] [--no-gpt] */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "tensor/tensor.h"
#include "pgn_math.h"

/* Each repeat queues enough calls back to back to last about this long, then waits once, as a
 * training step does; a call's time is the repeat's over the calls. Repeats of OpenBLAS, the
 * host and each device alternate, so the machine's bursts of noise fall on all of them. */
#define TARGET_REPEAT_S 0.02
#define MAX_CALLS 2000
#define MAX_REPEATS 64
#define SPOT_CHECKS 256 /* host elements checked against the naive fma chain */
/* OpenBLAS's threads spin after a call for its thread timeout (2^28 TSC ticks, 103 ms here)
 * and would steal a core from whatever runs next; they are let go to sleep first. */
#define BLAS_SPIN_NS 250000000L

/* The training shapes are the gemm suite's: pgn_mlp_gemm_shapes (bench.h). The GPT's: the
 * char-gpt's products at batch 32 x 64 (2048 rows, d_model 128, vocabulary 113): the QKV, MLP
 * and head forwards, and the backward products of the MLP (dW as X^T dY, dX as dY W^T). */
static const pgn_gemm_shape gpt_shapes[] = {
    {"qkv", 2048, 384, 128, false, false},   {"fc", 2048, 512, 128, false, false},
    {"fc2", 2048, 128, 512, false, false},   {"head", 2048, 113, 128, false, true},
    {"fc.dW", 128, 512, 2048, true, false},  {"fc.dX", 2048, 128, 512, false, true},
    {"fc2.dW", 512, 128, 2048, true, false}, {"fc2.dX", 2048, 512, 128, false, true},
};

/* cblas_sgemm, looked up at run time so OpenBLAS is never a build dependency. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
static sgemm_fn blas_sgemm;

static void die(const char *what, const pgn_error *err) {
    fprintf(stderr, "bench-gemm: %s: %s\n", what, err ? err->message : "failed");
    exit(1);
}

/* One way of running a shape: OpenBLAS on host memory, the host reference, or a device. */
typedef struct {
    const char *label;
    bool blas;
    pgn_device *dev; /* NULL: host memory */
    pgn_tensor a, b, c;
    int calls;
    double t[MAX_REPEATS];
} runner;

static void runner_init(runner *r, const char *label, bool blas, pgn_device *dev,
                        const pgn_gemm_shape *s, const float *a, const float *b) {
    pgn_error err = {0};
    int M = s->M, N = s->N, K = s->K;
    *r = (runner){.label = label, .blas = blas, .dev = dev, .calls = 1};
    if (pgn_tensor_init(&r->a, dev, s->ta ? K : M, s->ta ? M : K, &err) ||
        pgn_tensor_init(&r->b, dev, s->tb ? N : K, s->tb ? K : N, &err) ||
        pgn_tensor_init(&r->c, dev, M, N, &err) ||
        pgn_tensor_write(&r->a, a, (size_t)M * K, &err) ||
        pgn_tensor_write(&r->b, b, (size_t)K * N, &err))
        die("tensors", &err);
}

/* Queues n products and waits. */
static void runner_calls(runner *r, const pgn_gemm_shape *s, int n) {
    pgn_error err = {0};
    int M = s->M, N = s->N, K = s->K;
    for (int i = 0; i < n; i++) {
        if (r->blas)
            blas_sgemm(CBLAS_ROW_MAJOR, s->ta ? CBLAS_TRANS : CBLAS_NO_TRANS,
                       s->tb ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, K, 1.0f, r->a.host,
                       s->ta ? M : K, r->b.host, s->tb ? K : N, 0.0f, r->c.host, N);
        else if (pgn_op_gemm(M, N, K, &r->a, s->ta, &r->b, s->tb, &r->c, &err))
            die("gemm", &err);
    }
    if (pgn_device_finish(r->dev, &err)) die("finish", &err);
}

/* One untimed call (the other rows of the shape ran in between: wakes this one's threads and
 * caches), then r->calls timed ones; returns seconds per call. */
static double runner_repeat(runner *r, const pgn_gemm_shape *s) {
    runner_calls(r, s, 1);
    double t0 = pgn_now_s();
    runner_calls(r, s, r->calls);
    double dt = (pgn_now_s() - t0) / r->calls;
    if (r->blas) nanosleep(&(struct timespec){.tv_nsec = BLAS_SPIN_NS}, NULL);
    return dt;
}

/* Sets how many calls make TARGET_REPEAT_S. */
static void runner_calibrate(runner *r, const pgn_gemm_shape *s) {
    double n = ceil(TARGET_REPEAT_S / runner_repeat(r, s));
    r->calls = n > MAX_CALLS ? MAX_CALLS : (int)n;
}

static void runner_release(runner *r, float *out, const pgn_gemm_shape *s) {
    pgn_error err = {0};
    if (out && pgn_tensor_read(&r->c, out, (size_t)s->M * s->N, &err)) die("read", &err);
    pgn_tensor_release(&r->a);
    pgn_tensor_release(&r->b);
    pgn_tensor_release(&r->c);
}

/* The contract itself on a sample of elements: acc = 0; acc = fma(a(i,k), b(k,j), acc). */
static bool spot_check(const pgn_gemm_shape *s, const float *a, const float *b, const float *c) {
    for (uint64_t x = 0; x < SPOT_CHECKS; x++) {
        int i = (int)(pgn_rand64(9, 1, x) % (uint64_t)s->M);
        int j = (int)(pgn_rand64(9, 2, x) % (uint64_t)s->N);
        float acc = 0.0f;
        for (int k = 0; k < s->K; k++)
            acc = pgn_fma(s->ta ? a[(size_t)k * s->M + i] : a[(size_t)i * s->K + k],
                          s->tb ? b[(size_t)j * s->K + k] : b[(size_t)k * s->N + j], acc);
        if (pgn_bits(acc) != pgn_bits(c[(size_t)i * s->N + j])) return false;
    }
    return true;
}

/* One row: median time and GFLOP/s, GFLOP/s of the fastest repeat (the machine is shared and
 * noisy: medians move between runs, the best repeat much less), and the ratio of medians to
 * OpenBLAS's. */
static void print_row(const pgn_gemm_shape *s, const char *device, double sec, double best_sec,
                      double blas_gflops, const char *identical) {
    double flop = 2.0 * s->M * s->N * (double)s->K, gflops = flop / sec * 1e-9;
    char ratio[16] = "-";
    if (blas_gflops > 0) snprintf(ratio, sizeof ratio, "%.2f", gflops / blas_gflops);
    printf("%-6s %5d %5d %5d  %c%c  %-14s %10.1f %9.1f %7.1f %7s  %s\n", s->name, s->M, s->N,
           s->K, s->ta ? 't' : 'n', s->tb ? 't' : 'n', device, sec * 1e6, gflops,
           flop / best_sec * 1e-9, ratio, identical);
    fflush(stdout);
}

/* Median and best of a runner's repeats. */
static double runner_median(runner *r, int repeats, double *best) {
    double t[MAX_REPEATS];
    memcpy(t, r->t, (size_t)repeats * sizeof *t);
    double med = pgn_median(t, (size_t)repeats); /* sorts t */
    *best = t[0];
    return med;
}

/* Runs one shape everywhere; returns the seconds per call of OpenBLAS (0 without it) and of each
 * device (sec[0]: host) so the caller can total the training step. */
static double bench_shape(const pgn_gemm_shape *s, pgn_device **devs, const pgn_device_info *list,
                          size_t n_dev, int repeats, double *sec) {
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *ref = malloc(nc * 4), *c = malloc(nc * 4);
    runner *rs = calloc(n_dev + 2, sizeof *rs);
    if (!a || !b || !ref || !c || !rs) die("out of memory", NULL);
    for (size_t i = 0; i < na; i++) a[i] = pgn_rand_unit(1, 1, i) - 0.5f;
    for (size_t i = 0; i < nb; i++) b[i] = pgn_rand_unit(1, 2, i) - 0.5f;
    /* rs[0]: OpenBLAS (when loaded), rs[1]: host, rs[2 + d]: device d (when open). */
    int first = blas_sgemm ? 0 : 1;
    if (blas_sgemm) runner_init(&rs[0], "openblas", true, NULL, s, a, b);
    runner_init(&rs[1], "host", false, NULL, s, a, b);
    for (size_t d = 0; d < n_dev; d++)
        if (devs[d]) runner_init(&rs[2 + d], list[d].id, false, devs[d], s, a, b);
    for (int i = first; i < (int)n_dev + 2; i++)
        if (rs[i].label) runner_calibrate(&rs[i], s);
    for (int r = 0; r < repeats; r++)
        for (int i = first; i < (int)n_dev + 2; i++)
            if (rs[i].label) rs[i].t[r] = runner_repeat(&rs[i], s);

    double blas_sec = 0, blas_gflops = 0, best;
    if (blas_sgemm) {
        blas_sec = runner_median(&rs[0], repeats, &best);
        blas_gflops = 2.0 * s->M * s->N * (double)s->K / blas_sec * 1e-9;
        print_row(s, "openblas", blas_sec, best, 0, "-");
        runner_release(&rs[0], NULL, s);
    }
    sec[0] = runner_median(&rs[1], repeats, &best);
    runner_release(&rs[1], ref, s);
    print_row(s, "host", sec[0], best, blas_gflops, spot_check(s, a, b, ref) ? "yes" : "NO");
    for (size_t d = 0; d < n_dev; d++) {
        sec[d + 1] = 0;
        if (!rs[2 + d].label) continue;
        sec[d + 1] = runner_median(&rs[2 + d], repeats, &best);
        runner_release(&rs[2 + d], c, s);
        print_row(s, list[d].id, sec[d + 1], best, blas_gflops,
                  memcmp(c, ref, nc * 4) ? "NO" : "yes");
    }
    free(rs);
    free(a);
    free(b);
    free(ref);
    free(c);
    return blas_sec;
}

/* "128,256" -> ints; "none" -> 0 of them. */
static int parse_sizes(const char *arg, int *out, int max) {
    int n = 0;
    if (!strcmp(arg, "none")) return 0;
    for (const char *p = arg; *p && n < max;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > 16384) {
            fprintf(stderr, "bench-gemm: --sizes: bad size in '%s'\n", arg);
            exit(2);
        }
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int parse_shapes(const char *arg, bool *on) {
    int n = 0;
    for (int i = 0; i < PGN_MLP_GEMM_SHAPES; i++) on[i] = false;
    if (!strcmp(arg, "none")) return 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < PGN_MLP_GEMM_SHAPES && strcmp(pgn_mlp_gemm_shapes[i].name, tok)) i++;
        if (i == PGN_MLP_GEMM_SHAPES) {
            fprintf(stderr, "bench-gemm: --shapes: unknown shape '%s' (fwd1 fwd2 fwd3 dW1 dW2 "
                            "dW3 dX2 dX3, or none)\n", tok);
            exit(2);
        }
        on[i] = true;
        n++;
    }
    return n;
}

/* Sets the device's tile: the one named, or (auto) the fastest of the gemm suite's tile cases,
 * whose figures it prints. */
static void choose_tile(pgn_device *dev, const pgn_device_info *info, const char *tile, int repeats) {
    pgn_error err = {0};
    if (strcmp(tile, "auto")) {
        if (pgn_gemm_tile_set(dev, pgn_gemm_tile_find(tile), PGN_FROM_OVERRIDE, &err)) die("--tile", &err);
        printf("%s: tile %s (--tile)\n", info->id, tile);
        return;
    }
    json_t *rows = json_array();
    pgn_device_tuning tuned;
    if (pgn_device_calibrate(dev, 1e9, repeats < 5 ? repeats : 5, rows, &tuned, &err)) die("measuring the tiles", &err);
    pgn_device_tune(dev, &tuned);
    printf("%s: tiles measured (GFLOP/s: N=1024, MLP fwd1, GPT 2048x512x128):", info->id);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
        printf(" %s %.0f/%.0f/%.0f%s", json_string_value(json_object_get(row, "tile")),
               json_number_value(json_object_get(row, "gflops")), json_number_value(json_object_get(row, "mlp_gflops")),
               json_number_value(json_object_get(row, "gpt_gflops")),
               json_is_true(json_object_get(row, "chosen")) ? " (chosen)" : "");
    printf("\n");
    json_decref(rows);
}

int main(int argc, char **argv) {
    int sizes[16] = {128, 256, 512, 1024, 2048}, n_sizes = 5, repeats = 11;
    const char *tile = "auto";
    bool gpt = true;
    bool on[PGN_MLP_GEMM_SHAPES];
    for (int i = 0; i < PGN_MLP_GEMM_SHAPES; i++) on[i] = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            n_sizes = parse_sizes(argv[++i], sizes, 16);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            parse_shapes(argv[++i], on);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tile") && i + 1 < argc)
            tile = argv[++i];
        else if (!strcmp(argv[i], "--no-gpt"))
            gpt = false;
        else {
            fprintf(stderr, "usage: bench-gemm [--sizes 128,256,...|none] "
                            "[--shapes fwd1,dW1,...|none] [--repeats N] [--tile auto|NAME] [--no-gpt]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > MAX_REPEATS) {
        fprintf(stderr, "bench-gemm: --repeats must be 1..%d\n", MAX_REPEATS);
        return 2;
    }
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    void *blas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (blas) blas_sgemm = (sgemm_fn)dlsym(blas, "cblas_sgemm");
    if (!blas_sgemm) {
        printf("OpenBLAS reference unavailable (libopenblas.so.0 with cblas_sgemm not found; "
               "Debian: libopenblas0-pthread)\n");
    } else {
        char *(*corename)(void) = (char *(*)(void))dlsym(blas, "openblas_get_corename");
        int (*threads)(void) = (int (*)(void))dlsym(blas, "openblas_get_num_threads");
        printf("OpenBLAS reference: %s kernels, %d threads\n", corename ? corename() : "?",
               threads ? threads() : 0);
    }

    pgn_error err = {0};
    pgn_device_info *list = NULL;
    size_t n_dev = 0;
    if (pgn_devices_list(&list, &n_dev, &err)) die("devices", &err);
    pgn_device **devs = calloc(n_dev + 1, sizeof *devs);
    double *sec = calloc(n_dev + 1, sizeof *sec), *step = calloc(n_dev + 1, sizeof *step);
    if (!devs || !sec || !step) die("out of memory", NULL);
    if (strcmp(tile, "auto") && pgn_gemm_tile_find(tile) < 0) {
        fprintf(stderr, "bench-gemm: --tile: no tile '%s' (auto, or one of:", tile);
        for (int t = 0; t < pgn_gemm_tile_count(); t++) fprintf(stderr, " %s", pgn_gemm_tile_name(t));
        fprintf(stderr, ")\n");
        return 2;
    }
    for (size_t d = 0; d < n_dev; d++) {
        if (pgn_device_open(&list[d], &devs[d], &err)) {
            fprintf(stderr, "bench-gemm: %s\n", err.message);
            continue;
        }
        choose_tile(devs[d], &list[d], tile, repeats);
    }

    printf("us/call: calls queued back to back, one wait (as in a training step); median of %d\n"
           "repeats, each after an untimed call, the rows of a shape taking turns. identical:\n"
           "device == host bit for bit; host == the naive fma chain on %d sampled elements.\n",
           repeats, SPOT_CHECKS);
    printf("%-6s %5s %5s %5s  %-2s  %-14s %10s %9s %7s %7s  %s\n", "shape", "M", "N", "K", "op",
           "device", "us/call", "GFLOP/s", "best", "vs BLAS", "identical");
    for (int i = 0; i < n_sizes; i++) {
        pgn_gemm_shape s = {"square", sizes[i], sizes[i], sizes[i], false, false};
        bench_shape(&s, devs, list, n_dev, repeats, sec);
    }
    double step_flops = 0, step_blas = 0;
    int n_on = 0;
    for (int i = 0; i < PGN_MLP_GEMM_SHAPES; i++) {
        if (!on[i]) continue;
        step_blas += bench_shape(&pgn_mlp_gemm_shapes[i], devs, list, n_dev, repeats, sec);
        step_flops += 2.0 * pgn_mlp_gemm_shapes[i].M * pgn_mlp_gemm_shapes[i].N * (double)pgn_mlp_gemm_shapes[i].K;
        for (size_t d = 0; d <= n_dev; d++) step[d] += sec[d];
        n_on++;
    }
    if (gpt) {
        double gpt_blas = 0, gpt_flops = 0, *gsec = calloc(n_dev + 1, sizeof *gsec), *gstep = calloc(n_dev + 1, sizeof *gstep);
        if (!gsec || !gstep) die("out of memory", NULL);
        for (size_t i = 0; i < sizeof gpt_shapes / sizeof *gpt_shapes; i++) {
            gpt_blas += bench_shape(&gpt_shapes[i], devs, list, n_dev, repeats, gsec);
            gpt_flops += 2.0 * gpt_shapes[i].M * gpt_shapes[i].N * (double)gpt_shapes[i].K;
            for (size_t d = 0; d <= n_dev; d++) gstep[d] += gsec[d];
        }
        printf("\nGPT products: the %zu shapes above, once each (medians)\n", sizeof gpt_shapes / sizeof *gpt_shapes);
        if (gpt_blas > 0) printf("  %-14s %10.1f us %9.1f GFLOP/s\n", "openblas", gpt_blas * 1e6, gpt_flops / gpt_blas * 1e-9);
        for (size_t d = 0; d <= n_dev; d++) {
            if (d > 0 && !devs[d - 1]) continue;
            printf("  %-14s %10.1f us %9.1f GFLOP/s\n", d ? list[d - 1].id : "host", gstep[d] * 1e6,
                   gpt_flops / gstep[d] * 1e-9);
        }
        free(gsec);
        free(gstep);
    }
    if (n_on > 0) {
        printf("\nMLP step: the %d training shape(s) above, once each (medians)\n", n_on);
        if (step_blas > 0)
            printf("  %-14s %10.1f us %9.1f GFLOP/s\n", "openblas", step_blas * 1e6,
                   step_flops / step_blas * 1e-9);
        for (size_t d = 0; d <= n_dev; d++) {
            if (d > 0 && !devs[d - 1]) continue;
            printf("  %-14s %10.1f us %9.1f GFLOP/s\n", d ? list[d - 1].id : "host",
                   step[d] * 1e6, step_flops / step[d] * 1e-9);
        }
    }
    for (size_t d = 0; d < n_dev; d++) pgn_device_close(devs[d]);
    if (blas) dlclose(blas);
    free(devs);
    free(sec);
    free(step);
    free(list);
    return 0;
}
