/* bench_gemm.c: the gemm suite: GFLOP/s of the engine's GEMM on square sizes and on the
 * Fashion-MNIST MLP's training shapes, device against the host reference, with bit-identity. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "pgn_math.h"

/* ---- gemm ---------------------------------------------------------------------------------
 * GFLOP/s of pgn_op_gemm on square sizes and on the Fashion-MNIST MLP's GEMMs (784-256-256-10 at
 * batch 128: forward x w, dW = x^T dz, dX = dz w^T), against the host reference, with a
 * bit-identity check. A timed repeat queues enough calls to last about GEMM_REPEAT_S and waits
 * once, as a training step does. */
#define GEMM_REPEAT_S 0.02
#define GEMM_MAX_CALLS 2000

const pgn_gemm_shape pgn_mlp_gemm_shapes[PGN_MLP_GEMM_SHAPES] = {
    {"fwd1", 128, 256, 784, false, false}, {"fwd2", 128, 256, 256, false, false},
    {"fwd3", 128, 10, 256, false, false},  {"dW1", 784, 256, 128, true, false},
    {"dW2", 256, 256, 128, true, false},   {"dW3", 256, 10, 128, true, false},
    {"dX2", 128, 256, 256, false, true},   {"dX3", 128, 256, 10, false, true},
};

/* The square cases, N=128 .. N=2048, run before the MLP's. */
static const int gemm_squares[] = {128, 256, 512, 1024, 2048};

/* Cases for GPUs, run only when --cases names them (the host reference takes seconds for each,
 * a CPU device longer): N=4096, and squares in the training variants, TN (A transposed: a weight
 * gradient x^T dz) and NT (B transposed: dz W^T). */
static const pgn_gemm_shape gemm_named_only[] = {
    {"N=4096", 4096, 4096, 4096, false, false}, {"TN1024", 1024, 1024, 1024, true, false},
    {"NT1024", 1024, 1024, 1024, false, true},  {"TN4096", 4096, 4096, 4096, true, false},
    {"NT4096", 4096, 4096, 4096, false, true},
};

/* Seconds per call of c on dev (NULL: host) over `repeats` timed repeats; the product lands in
 * out (M*N floats) when given. */
static int gemm_time(pgn_device *dev, const pgn_gemm_shape *c, const float *a, const float *b, int repeats,
                     float *out, double *seconds, pgn_error *err) {
    pgn_tensor ta = {0}, tb = {0}, tc = {0};
    int rc = -1;
    double t[64];
    if (repeats > 64) repeats = 64;
    if (pgn_tensor_init(&ta, dev, c->ta ? c->K : c->M, c->ta ? c->M : c->K, err) ||
        pgn_tensor_init(&tb, dev, c->tb ? c->N : c->K, c->tb ? c->K : c->N, err) ||
        pgn_tensor_init(&tc, dev, c->M, c->N, err) || pgn_tensor_write(&ta, a, (size_t)c->M * c->K, err) ||
        pgn_tensor_write(&tb, b, (size_t)c->K * c->N, err))
        goto done;
    int calls = 1;
    for (int r = -1; r < repeats; r++) { /* r == -1: warm-up, which also sizes the repeats */
        double t0 = pgn_now_s();
        for (int i = 0; i < calls; i++)
            if (pgn_op_gemm(c->M, c->N, c->K, &ta, c->ta, &tb, c->tb, &tc, err)) goto done;
        if (pgn_device_finish(dev, err)) goto done;
        double dt = (pgn_now_s() - t0) / calls;
        if (r < 0) {
            double n = dt > 0 ? GEMM_REPEAT_S / dt : GEMM_MAX_CALLS;
            calls = n < 1 ? 1 : n > GEMM_MAX_CALLS ? GEMM_MAX_CALLS : (int)n;
        } else {
            t[r] = dt;
        }
    }
    *seconds = pgn_median(t, (size_t)(repeats));
    rc = out ? pgn_tensor_read(&tc, out, (size_t)c->M * c->N, err) : 0;
done:
    pgn_tensor_release(&ta);
    pgn_tensor_release(&tb);
    pgn_tensor_release(&tc);
    return rc;
}

/* Times one shape (unless ctx's case filter leaves it out) and appends its row; *gflops is its
 * figure (0 when it did not run). */
static int gemm_case_run(const pgn_bench_ctx *ctx, const pgn_gemm_shape *c, json_t *rows, double *gflops,
                         pgn_error *err) {
    *gflops = 0;
    if (!pgn_bench_wants(ctx, c->name)) return 0;
    if (pgn_bench_check_stop(ctx, err)) return -1;
    size_t na = (size_t)c->M * c->K, nb = (size_t)c->K * c->N, nc = (size_t)c->M * c->N;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    float *host = malloc(nc * sizeof *host), *dev = malloc(nc * sizeof *dev);
    double host_s = 0, dev_s = 0;
    int rc = -1;
    if (!a || !b || !host || !dev) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory for gemm %s", c->name);
    } else {
        for (size_t k = 0; k < na; k++) a[k] = pgn_rand_unit(1, 1, k) * 2.0f - 1.0f;
        for (size_t k = 0; k < nb; k++) b[k] = pgn_rand_unit(1, 2, k) * 2.0f - 1.0f;
        /* the host reference is slow at 2048: its figure is one call's */
        int host_repeats = c->M >= 1024 ? 1 : ctx->repeats;
        rc = gemm_time(NULL, c, a, b, host_repeats, host, &host_s, err);
        if (rc == 0) rc = ctx->dev ? gemm_time(ctx->dev, c, a, b, ctx->repeats, dev, &dev_s, err) : 0;
        if (rc == 0 && !ctx->dev) {
            memcpy(dev, host, nc * sizeof *dev);
            dev_s = host_s;
        }
    }
    if (rc == 0) {
        double flop = 2.0 * c->M * c->N * c->K;
        *gflops = dev_s > 0 ? flop / dev_s / 1e9 : 0;
        json_t *row = pgn_bench_row(ctx, "gemm", c->name);
        json_object_set_new(row, "m", json_integer(c->M));
        json_object_set_new(row, "n", json_integer(c->N));
        json_object_set_new(row, "k", json_integer(c->K));
        json_object_set_new(row, "transpose", json_string(c->ta ? "TN" : c->tb ? "NT" : "NN"));
        json_object_set_new(row, "device_ms", json_real(dev_s * 1e3));
        json_object_set_new(row, "gflops", json_real(*gflops));
        json_object_set_new(row, "host_gflops", json_real(host_s > 0 ? flop / host_s / 1e9 : 0));
        json_object_set_new(row, "bit_identical", json_boolean(!memcmp(host, dev, nc * sizeof *dev)));
        json_array_append_new(rows, row);
        pgn_hooks_log(ctx->hooks, "gemm %s on %s: %.1f GFLOP/s", c->name, ctx->info->id, *gflops);
    }
    free(a);
    free(b);
    free(host);
    free(dev);
    return rc;
}

/* ---- the tile ------------------------------------------------------------------------------
 * Which of the GEMM's tile shapes is fastest on this device: each times a square N=1024, the
 * MLP's fwd1 and the GPT's widest product (2048 x 512 x 128), and the one with the least time over
 * the three is the calibration's choice (pgn_device_calibrate), marked "chosen" among the rows.
 * One row a tile, case "tile-<shape>"; the case filter "tile" selects them all. Measuring sets
 * each tile on the device in turn and puts back the one it had. */
static const pgn_gemm_shape tile_shapes[] = {
    {"N=1024", 1024, 1024, 1024, false, false},
    {"fwd1", 128, 256, 784, false, false},
    {"gpt-fc", 2048, 512, 128, false, false},
};
#define N_TILE_SHAPES (sizeof tile_shapes / sizeof *tile_shapes)
#define MAX_TILES 16

/* Whether tile t is of the family dev runs its GEMM with: those are the ones it measures. */
static bool of_family(pgn_device *dev, int t) {
    return pgn_gemm_tile_shape_of(t)->family == pgn_device_get_profile(dev)->family[PGN_OPS_GEMM];
}

/* Times every tile of dev's family on it over the tile shapes; the fastest's index in *best. */
static int measure_tiles(pgn_device *dev, int repeats, bool (*stop)(void *), void *stop_ctx,
                         double gflops[MAX_TILES][N_TILE_SHAPES], double total[MAX_TILES], int *best, pgn_error *err) {
    int n = pgn_gemm_tile_count(), before = pgn_gemm_tile_of(dev);
    pgn_profile_source before_from = pgn_device_get_profile(dev)->gemm_tile_from;
    *best = -1;
    float *a = malloc((size_t)2048 * 1024 * sizeof *a), *b = malloc((size_t)1024 * 1024 * sizeof *b);
    int rc = a && b ? 0 : pgn_bench_oom(err);
    for (size_t i = 0; rc == 0 && i < (size_t)2048 * 1024; i++) a[i] = pgn_rand_unit(1, 1, i) * 2.0f - 1.0f;
    for (size_t i = 0; rc == 0 && i < (size_t)1024 * 1024; i++) b[i] = pgn_rand_unit(1, 2, i) * 2.0f - 1.0f;
    for (int t = 0; rc == 0 && t < n && t < MAX_TILES; t++) {
        total[t] = 0;
        if (!of_family(dev, t)) continue;
        if (stop && stop(stop_ctx)) {
            pgn_error_set(err, PGN_E_CANCELLED, "", "stopped while measuring the GEMM tiles");
            rc = -1;
            break;
        }
        rc = pgn_gemm_tile_set(dev, t, PGN_FROM_TUNING, err);
        for (size_t i = 0; rc == 0 && i < N_TILE_SHAPES; i++) {
            const pgn_gemm_shape *c = &tile_shapes[i];
            double sec = 0;
            rc = gemm_time(dev, c, a, b, repeats, NULL, &sec, err);
            total[t] += sec;
            gflops[t][i] = sec > 0 ? 2.0 * c->M * c->N * c->K / sec / 1e9 : 0;
        }
        if (rc == 0 && (*best < 0 || total[t] < total[*best])) *best = t;
    }
    free(a);
    free(b);
    if (*best < 0) *best = before;
    pgn_error ignored;
    pgn_gemm_tile_set(dev, before, before_from, &ignored); /* a valid tile: it cannot fail */
    return rc;
}

/* The tile rows of the device's measurement (marking the fastest "chosen"). */
static void tile_rows(const pgn_bench_ctx *ctx, double gflops[MAX_TILES][N_TILE_SHAPES], const double total[MAX_TILES],
                      int best, json_t *rows) {
    for (int t = 0; t < pgn_gemm_tile_count() && t < MAX_TILES; t++) {
        if (!of_family(ctx->dev, t)) continue;
        char id[32];
        snprintf(id, sizeof id, "tile-%s", pgn_gemm_tile_name(t));
        json_t *row = pgn_bench_row(ctx, "gemm", id);
        json_object_set_new(row, "tile", json_string(pgn_gemm_tile_name(t)));
        json_object_set_new(row, "gflops", json_real(gflops[t][0]));
        json_object_set_new(row, "mlp_gflops", json_real(gflops[t][1]));
        json_object_set_new(row, "gpt_gflops", json_real(gflops[t][2]));
        json_object_set_new(row, "device_ms", json_real(total[t] * 1e3));
        json_object_set_new(row, "chosen", json_boolean(t == best));
        json_array_append_new(rows, row);
    }
}

static bool ctx_stop(void *ctx) {
    const pgn_bench_ctx *c = ctx;
    return c->hooks && c->hooks->should_stop && c->hooks->should_stop(c->hooks->ctx);
}

/* The tile case: a row a tile; *first is the first tile's figure at N=1024 (0 when it did not
 * run). */
static int gemm_tiles(const pgn_bench_ctx *ctx, json_t *rows, double *first, pgn_error *err) {
    *first = 0;
    if (!pgn_bench_wants(ctx, "tile") || !ctx->dev) return 0; /* the host has its own tiles */
    double total[MAX_TILES] = {0}, gflops[MAX_TILES][N_TILE_SHAPES] = {{0}};
    int best;
    if (measure_tiles(ctx->dev, ctx->repeats, ctx_stop, (void *)ctx, gflops, total, &best, err)) return -1;
    tile_rows(ctx, gflops, total, best, rows);
    int def = pgn_gemm_tile_default(pgn_device_get_profile(ctx->dev)->family[PGN_OPS_GEMM]);
    *first = gflops[def][0];
    pgn_hooks_log(ctx->hooks, "gemm tile on %s: %s (%.1f GFLOP/s at N=1024; the default %s %.1f)", ctx->info->id,
                  pgn_gemm_tile_name(best), gflops[best][0], pgn_gemm_tile_name(def), gflops[def][0]);
    return 0;
}

/* The calibration's probes: a GEMM of 64 cubed says whether one of 256 cubed is affordable, and
 * that one how fast the device is, before the tiles' products are asked of it (Oclgrind
 * simulates a 1024-cubed one in hours, not seconds). */
#define PROBE_SMALL 64
#define PROBE_LARGE 256

/* FLOP/s of one square product of side n on dev. */
static int probe_rate(pgn_device *dev, int n, double *rate, pgn_error *err) {
    float *a = malloc((size_t)n * n * sizeof *a);
    if (!a) return pgn_bench_oom(err);
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = pgn_rand_unit(1, 3, i) * 2.0f - 1.0f;
    pgn_gemm_shape probe = {"probe", n, n, n, false, false};
    double sec = 0;
    int rc = gemm_time(dev, &probe, a, a, 1, NULL, &sec, err);
    free(a);
    *rate = sec > 0 ? 2.0 * n * n * n / sec : 1e18;
    return rc;
}

/* Seconds measure_tiles would take at rate FLOP/s: per shape a warm-up call, then repeats of
 * GEMM_REPEAT_S (or one call, when longer). */
static double tiles_seconds(pgn_device *dev, double rate, int repeats) {
    double per_tile = 0;
    for (size_t i = 0; i < N_TILE_SHAPES; i++) {
        double call = 2.0 * tile_shapes[i].M * tile_shapes[i].N * tile_shapes[i].K / rate;
        per_tile += call + repeats * (call > GEMM_REPEAT_S ? call : GEMM_REPEAT_S);
    }
    int n = 0;
    for (int t = 0; t < pgn_gemm_tile_count(); t++) n += of_family(dev, t);
    return per_tile * n;
}

int pgn_device_calibrate(pgn_device *dev, double budget_s, int repeats, json_t *rows, pgn_device_tuning *out,
                         pgn_error *err) {
    memset(out, 0, sizeof *out);
    if (!dev) return 0;
    const pgn_device_info *info = pgn_device_get_info(dev);
    snprintf(out->device_id, sizeof out->device_id, "%s", info->id);
    snprintf(out->driver_version, sizeof out->driver_version, "%s", info->driver_version);
    snprintf(out->kernels_hash, sizeof out->kernels_hash, "%s", pgn_kernels_hash());
    out->family = pgn_device_get_profile(dev)->family[PGN_OPS_GEMM];
    out->gemm_tile = pgn_gemm_tile_default(out->family);
    pgn_utc_now(out->measured_at, sizeof out->measured_at);
    double rate = 0;
    if (probe_rate(dev, PROBE_SMALL, &rate, err)) return -1;
    bool affordable = 2.0 * PROBE_LARGE * PROBE_LARGE * PROBE_LARGE / rate <= budget_s / 4;
    if (affordable && probe_rate(dev, PROBE_LARGE, &rate, err)) return -1;
    /* counted at the 256-cubed product's rate, which large ones beat 2-4x on a CPU: past four
     * budgets it is too slow (on Oclgrind the projection is hours) */
    if (!affordable || tiles_seconds(dev, rate, repeats) > 4 * budget_s) {
        out->too_slow = true; /* the defaults, said so */
        return 0;
    }
    double total[MAX_TILES] = {0}, gflops[MAX_TILES][N_TILE_SHAPES] = {{0}};
    int best;
    if (measure_tiles(dev, repeats, NULL, NULL, gflops, total, &best, err)) return -1;
    out->gemm_tile = best;
    out->gflops = gflops[best][0];
    if (rows) {
        pgn_bench_ctx ctx = {.dev = dev, .info = info, .repeats = repeats};
        tile_rows(&ctx, gflops, total, best, rows);
    }
    return 0;
}

/* The case whose figure is the cost model's GEMM rate: the training shape, whose FLOPs a train
 * job's estimate counts (engine/bench/cost.c). A run without it gives its first figure. */
#define RATE_CASE "fwd1"

int pgn_bench_gemm(const pgn_bench_ctx *ctx, json_t *rows, pgn_error *err) {
    double first = 0, rate = 0, g;
    if (gemm_tiles(ctx, rows, &first, err)) return -1;
    for (size_t i = 0; i < sizeof gemm_squares / sizeof *gemm_squares; i++) {
        int n = gemm_squares[i];
        char name[16];
        snprintf(name, sizeof name, "N=%d", n);
        pgn_gemm_shape square = {name, n, n, n, false, false};
        if (gemm_case_run(ctx, &square, rows, &g, err)) return -1;
        if (first <= 0) first = g;
    }
    for (int i = 0; i < PGN_MLP_GEMM_SHAPES; i++) {
        if (gemm_case_run(ctx, &pgn_mlp_gemm_shapes[i], rows, &g, err)) return -1;
        if (first <= 0) first = g;
        if (!strcmp(pgn_mlp_gemm_shapes[i].name, RATE_CASE)) rate = g;
    }
    for (size_t i = 0; i < sizeof gemm_named_only / sizeof *gemm_named_only; i++)
        if ((ctx->listing || pgn_bench_named(ctx, gemm_named_only[i].name)) &&
            gemm_case_run(ctx, &gemm_named_only[i], rows, &g, err))
            return -1;
    if (ctx->rates && (rate > 0 || first > 0)) ctx->rates->gflops = rate > 0 ? rate : first;
    return 0;
}
