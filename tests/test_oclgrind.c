/* test_oclgrind.c: paragon on Oclgrind, the OpenCL device simulator (Debian package oclgrind), as
 * a second OpenCL implementation next to pocl: training gives the host's weights bit for bit, inet
 * programs on 4 and 32 work-items of one work-group give the host's normal form and interaction
 * count, and no kernel draws a report from Oclgrind's data-race or uninitialised-value checker.
 * Skips when oclgrind is not installed (scripts/install-deps.sh --test installs it). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "inet/inet.h"
#include "pgn_ops.h"

/* Where Debian's oclgrind package puts its runtime built as an ICD. */
#define OCLGRIND_ICD "/usr/lib/oclgrind/liboclgrind-rt-icd.so"
#define SYSTEM_VENDORS "/etc/OpenCL/vendors"

static char tmpdir[64];
static char log_path[128];

/* Oclgrind is loaded as an ICD, not by the `oclgrind` command: that one LD_PRELOADs its runtime,
 * which the ASan build refuses ("ASan runtime does not come first in initial library list"), and
 * it would replace pocl rather than sit beside it. OCL_ICD_VENDORS names a directory of .icd files:
 * the system's (pocl) and one for Oclgrind, which is not registered system-wide so that paragond
 * never schedules jobs on a simulator. Its checkers are switched on by the variables the `oclgrind`
 * command sets for --data-races and --uninitialized, and write their reports to a log. Each test
 * runs in a process of its own, so this is in place before its first OpenCL call. */
static void setup(void) {
    if (access(OCLGRIND_ICD, R_OK) != 0)
        cr_skip_test("oclgrind is not installed (" OCLGRIND_ICD "; scripts/install-deps.sh --test)");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pgn-oclgrind-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    char vendors[128], path[512];
    snprintf(vendors, sizeof vendors, "%s/vendors", tmpdir);
    cr_assert_eq(mkdir(vendors, 0700), 0);
    snprintf(path, sizeof path, "%s/oclgrind.icd", vendors);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", OCLGRIND_ICD);
    fclose(f);
    DIR *d = opendir(SYSTEM_VENDORS);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".icd")) continue;
        char from[512];
        snprintf(from, sizeof from, "%s/%s", SYSTEM_VENDORS, e->d_name);
        snprintf(path, sizeof path, "%s/system-%s", vendors, e->d_name);
        cr_assert_eq(symlink(from, path), 0, "%s", path);
    }
    if (d) closedir(d);
    snprintf(log_path, sizeof log_path, "%s/oclgrind.log", tmpdir);
    setenv("OCL_ICD_VENDORS", vendors, 1);
    setenv("OCLGRIND_DATA_RACES", "1", 1);
    setenv("OCLGRIND_UNINITIALIZED", "1", 1);
    setenv("OCLGRIND_LOG", log_path, 1);
    /* records of programs' own kernels (engine/inet/inet_build.c) stay with the test: one found
     * would have a run build its own kernel first, which takes Oclgrind a minute */
    setenv("XDG_CACHE_HOME", tmpdir, 1);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void teardown(void) {
    if (tmpdir[0]) nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(oclgrind, .init = setup, .fini = teardown, .timeout = 420);

/* The OpenCL devices: Oclgrind's, and every other (pocl's) into others. */
static pgn_device *open_devices(pgn_device **others, size_t max, size_t *n_others) {
    pgn_error err = {0};
    pgn_device_info *list = NULL;
    size_t n = 0;
    cr_assert_eq(pgn_devices_list(&list, &n, &err), 0, "%s", err.message);
    pgn_device *oclgrind = NULL;
    *n_others = 0;
    for (size_t i = 0; i < n; i++) {
        pgn_device *dev = NULL;
        bool is_oclgrind = !strcmp(list[i].platform, "Oclgrind");
        if (!is_oclgrind && *n_others == max) continue;
        cr_assert_eq(pgn_device_open(&list[i], &dev, &err), 0, "%s: %s", list[i].id, err.message);
        if (is_oclgrind) {
            cr_assert_null(oclgrind, "two Oclgrind devices");
            cr_assert_eq(list[i].type, PGN_DEVICE_GPU, "Oclgrind simulates a GPU");
            oclgrind = dev;
        } else {
            others[(*n_others)++] = dev;
        }
    }
    free(list);
    cr_assert_not_null(oclgrind, "no Oclgrind platform through OCL_ICD_VENDORS=%s", getenv("OCL_ICD_VENDORS"));
    return oclgrind;
}

/* Fails with the checkers' reports, if there are any. Called once Oclgrind's device is closed. */
static void assert_no_reports(void) {
    static char report[4096];
    FILE *f = fopen(log_path, "r");
    size_t n = f ? fread(report, 1, sizeof report - 1, f) : 0;
    if (f) fclose(f);
    report[n] = '\0';
    cr_assert_eq(n, 0, "Oclgrind reported:\n%s", report);
}

static pgn_job_spec parse(const char *text) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s\n%s", err.message, text);
    return spec;
}

/* The weights SHA-256 of spec trained on dev (NULL: the host). */
static char *train_sha(const pgn_job_spec *spec, pgn_device *dev, const char *data_dir) {
    pgn_run_options opts = {.data_dir = data_dir};
    json_t *result = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_job_run(spec, dev, &opts, NULL, &result, &err), 0, "%s: %s", dev ? dev->info.id : "host",
                 err.message);
    char *sha = strdup(json_string_value(json_object_get(result, "weights_sha256")));
    json_decref(result);
    return sha;
}

/* Trains each spec on the host, on Oclgrind and on every other OpenCL device: one SHA-256. */
static void check_same_weights(const char *const *specs, size_t n_specs, const char *data_dir) {
    pgn_device *others[4];
    size_t n_others;
    pgn_device *oclgrind = open_devices(others, 4, &n_others);
    for (size_t s = 0; s < n_specs; s++) {
        pgn_job_spec spec = parse(specs[s]);
        char *want = train_sha(&spec, NULL, data_dir);
        char *got = train_sha(&spec, oclgrind, data_dir);
        cr_assert_str_eq(got, want, "Oclgrind against the host:\n%s", specs[s]);
        free(got);
        for (size_t i = 0; i < n_others; i++) {
            got = train_sha(&spec, others[i], data_dir);
            cr_assert_str_eq(got, want, "%s against the host:\n%s", others[i]->info.id, specs[s]);
            free(got);
        }
        free(want);
    }
    pgn_device_close(oclgrind);
    for (size_t i = 0; i < n_others; i++) pgn_device_close(others[i]);
    assert_no_reports();
}

/* Between them they launch every kernel a training step uses: the GEMM (A or B transposed, B
 * packed) with its bias + activation epilogue for each activation, bias_act_backward, dropout
 * (and mul for its backward), softmax cross-entropy and MSE, the gather of batches, loss
 * statistics, clipping by global norm, SGD (momentum, Nesterov, weight decay), Adam and AdamW;
 * under the checkers, copy_u32 and fill_u32 too (engine/device.c). */
static const char *const small_jobs[] = {
    "{\"kind\":\"train\",\"seed\":1,\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"activation\":\"relu\"},"
    "\"data\":{\"source\":\"xor\"},\"optimizer\":{\"type\":\"sgd\",\"lr\":0.1,\"momentum\":0.9},"
    "\"batch_size\":4,\"epochs\":3}",
    "{\"kind\":\"train\",\"seed\":5,\"model\":{\"type\":\"mlp\",\"layers\":[2,16,16,3],\"activation\":\"gelu\","
    "\"dropout\":0.1},\"data\":{\"source\":\"spiral\",\"samples\":12},\"optimizer\":{\"type\":\"adamw\","
    "\"lr\":0.02,\"clip_norm\":1.0,\"schedule\":\"cosine\",\"warmup_steps\":2},\"batch_size\":16,\"epochs\":2}",
    "{\"kind\":\"train\",\"seed\":7,\"model\":{\"type\":\"mlp\",\"layers\":[2,8,8,2],\"activation\":\"tanh\","
    "\"loss\":\"mse\",\"init\":\"xavier\"},\"data\":{\"source\":\"xor\"},\"optimizer\":{\"type\":\"sgd\","
    "\"lr\":0.1,\"momentum\":0.9,\"nesterov\":true,\"weight_decay\":0.01},\"batch_size\":4,\"epochs\":2}",
    "{\"kind\":\"train\",\"seed\":9,\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"activation\":\"sigmoid\","
    "\"init\":\"kaiming\"},\"data\":{\"source\":\"xor\"},\"optimizer\":{\"type\":\"adam\",\"lr\":0.01},"
    "\"batch_size\":2,\"epochs\":2}",
};

Test(oclgrind, small_jobs_train_to_the_host_weights_without_a_report) {
    check_same_weights(small_jobs, sizeof small_jobs / sizeof *small_jobs, tmpdir);
}

/* ---- the other kernels -------------------------------------------------------------------- */

/* A pair (engine_helpers.h) of random values in [-2, 2) from seed, or uninitialised for 0. */
static void pair_seeded(pair *p, pgn_device *dev, int rows, int cols, uint64_t seed) {
    if (seed) pair_random(p, dev, rows, cols, seed, 2.0f);
    else pair_init(p, dev, rows, cols, NULL);
}

static void assert_same(const pair *p, const char *what) {
    size_t n = pgn_tensor_count(&p->h);
    uint32_t *h = malloc(n * 4), *d = malloc(n * 4);
    pgn_error err = {0};
    cr_assert(h && d);
    cr_assert_eq(pgn_tensor_read(&p->h, h, n, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_read(&p->d, d, n, &err), 0, "%s", err.message);
    for (size_t i = 0; i < n; i++) cr_assert_eq(d[i], h[i], "%s[%zu]: Oclgrind %08x, host %08x", what, i, d[i], h[i]);
    free(h);
    free(d);
}

/* Runs an op on both sides of its pairs: OP(side) is a call with .h or .d picked by side. */
#define BOTH(OP)                                                                                 \
    do {                                                                                         \
        pgn_error e = {0};                                                                       \
        cr_assert_eq(OP(h), 0, "host: %s", e.message);                                           \
        cr_assert_eq(OP(d), 0, "Oclgrind: %s", e.message);                                       \
    } while (0)

/* The kernels no training job launches (the activation and elementwise kernels the graph keeps
 * for other models, the benchmarks' packed GEMM, and GEMM with both operands transposed) give the
 * host's bits without a report. Not run here: the packing of a transposed A, which only GEMMs
 * over 256K elements take and which Oclgrind needs seconds to simulate. */
Test(oclgrind, the_other_kernels_give_the_host_bits_without_a_report) {
    pgn_device *others[1];
    size_t n_others;
    pgn_device *dev = open_devices(others, 0, &n_others);
    const int rows = 5, cols = 37;
    pair x, y, dy, dx, z, bias, b2, out, row;
    pair_seeded(&x, dev, rows, cols, 1);
    pair_seeded(&y, dev, rows, cols, 0);
    pair_seeded(&dy, dev, rows, cols, 2);
    pair_seeded(&dx, dev, rows, cols, 0);
    pair_seeded(&z, dev, rows, cols, 3);
    pair_seeded(&bias, dev, 1, cols, 4);
    pair_seeded(&b2, dev, rows, cols, 5);
    pair_seeded(&out, dev, rows, cols, 0);
    pair_seeded(&row, dev, 1, cols, 0);
    for (int act = PGN_ACT_CODE_NONE; act <= PGN_ACT_CODE_SIGMOID; act++) {
#define ACT_FWD(s) pgn_op_act_forward(rows, act, &x.s, &y.s, &e)
#define ACT_BWD(s) pgn_op_act_backward(rows, act, &x.s, &y.s, &dy.s, &dx.s, &e)
        BOTH(ACT_FWD);
        assert_same(&y, "act_forward");
        BOTH(ACT_BWD);
        assert_same(&dx, "act_backward");
    }
#define BIAS_ACT(s) pgn_op_bias_act_forward(rows, &z.s, &bias.s, PGN_ACT_CODE_GELU, &y.s, &e)
#define ADD(s) pgn_op_add(rows, &x.s, &b2.s, &out.s, &e)
#define COLSUM(s) pgn_op_colsum(rows, &x.s, &row.s, NULL, &e)
#define BROADCAST(s) pgn_op_broadcast_rows(rows, &bias.s, 0.5f, &out.s, &e)
    BOTH(BIAS_ACT);
    assert_same(&z, "bias_act_forward z");
    assert_same(&y, "bias_act_forward y");
    BOTH(ADD);
    assert_same(&out, "add");
    BOTH(COLSUM);
    assert_same(&row, "colsum");
    BOTH(BROADCAST);
    assert_same(&out, "broadcast_rows");

    /* C (3, 17) = A^T B^T with A stored (64, 3) and B (17, 64) */
    pair a, b, c;
    pair_seeded(&a, dev, 64, 3, 6);
    pair_seeded(&b, dev, 17, 64, 7);
    pair_seeded(&c, dev, 3, 17, 0);
#define GEMM_TT(s) pgn_op_gemm(3, 17, 64, &a.s, true, &b.s, true, &c.s, &e)
    BOTH(GEMM_TT);
    assert_same(&c, "gemm A^T B^T");

    /* the benchmarks' inference path: W (40, 33) packed once, z = x W + bias, y = relu(z) */
    pair xa, w, wb, zz, yy;
    pair_seeded(&xa, dev, 3, 40, 8);
    pair_seeded(&w, dev, 40, 33, 9);
    pair_seeded(&wb, dev, 1, 33, 10);
    pair_seeded(&zz, dev, 3, 33, 0);
    pair_seeded(&yy, dev, 3, 33, 0);
    pgn_gemm_packed packed;
    pgn_error err = {0};
    cr_assert_eq(pgn_gemm_pack(&w.d, 40, 33, &packed, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_op_gemm_bias_act(3, 33, 40, &xa.h, false, &w.h, false, &zz.h, &wb.h, PGN_ACT_CODE_RELU, &yy.h,
                                      &err),
                 0, "%s", err.message);
    cr_assert_eq(pgn_op_gemm_bias_act_packed(3, &xa.d, &packed, &zz.d, &wb.d, PGN_ACT_CODE_RELU, &yy.d, &err), 0,
                 "%s", err.message);
    assert_same(&zz, "packed gemm z");
    assert_same(&yy, "packed gemm y");
    pgn_gemm_packed_release(&packed);

    pair *all[] = {&x, &y, &dy, &dx, &z, &bias, &b2, &out, &row, &a, &b, &c, &xa, &w, &wb, &zz, &yy};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        pgn_tensor_release(&all[i]->h);
        pgn_tensor_release(&all[i]->d);
    }
    pgn_device_close(dev);
    assert_no_reports();
}

/* Every gpu-family GEMM shape (kernels/gemm_gpu.cl; Oclgrind is a GPU, whose profile runs that
 * family), each in two of the four transpose variants, on a partial block gives the host's bits
 * without a race or an uninitialised read (test_gemm's gemm_gpu suite checks the bits at every
 * edge on pocl). */
Test(oclgrind, the_gpu_gemm_shapes_give_the_host_bits_without_a_report) {
    pgn_device *others[1];
    size_t n_others;
    pgn_device *dev = open_devices(others, 0, &n_others);
    cr_assert_eq(pgn_device_get_profile(dev)->family[PGN_OPS_GEMM], PGN_FAMILY_GPU);
    pgn_error err = {0};
    const int M = 20, N = 21, K = 19; /* a full k-tile and a partial one where the tiles are 16 deep */
    for (int t = 0; t < pgn_gemm_tile_count(); t++) {
        if (pgn_gemm_tile_shape_of(t)->family != PGN_FAMILY_GPU) continue;
        cr_assert_eq(pgn_gemm_tile_set(dev, t, PGN_FROM_OVERRIDE, &err), 0, "%s", err.message);
        for (int v = t % 4; v < t % 4 + 2; v++) { /* two variants a shape: every variant twice */
            bool ta = v & 1, tb = v & 2;
            pair a, b, c;
            pair_seeded(&a, dev, ta ? K : M, ta ? M : K, 20u + (uint64_t)v);
            pair_seeded(&b, dev, tb ? N : K, tb ? K : N, 30u + (uint64_t)v);
            pair_seeded(&c, dev, M, N, 0);
#define GEMM_V(s) pgn_op_gemm(M, N, K, &a.s, ta, &b.s, tb, &c.s, &e)
            BOTH(GEMM_V);
            assert_same(&c, pgn_gemm_tile_name(t));
            pair *all[] = {&a, &b, &c};
            for (size_t i = 0; i < 3; i++) {
                pgn_tensor_release(&all[i]->h);
                pgn_tensor_release(&all[i]->d);
            }
        }
    }
    pgn_device_close(dev);
    assert_no_reports();
}

/* The transformer ops' kernels (kernels/gpt.cl), which no training job launches yet, give the
 * host's bits without a report, at shapes with partial blocks of queries, keys, rows and
 * columns and with whole 16-dim chunks of a head (the device-only float16 paths). */
Test(oclgrind, the_transformer_kernels_give_the_host_bits_without_a_report) {
    pgn_device *others[1];
    size_t n_others;
    pgn_device *dev = open_devices(others, 0, &n_others);
    pgn_error err = {0};
    const int rows = 10, T = 5, V = 11, C = 19;
    const int32_t ids[10] = {3, 3, 0, 7, 3, 10, 0, 0, 7, 2};
    pair tok, wte, wpe, emb, dwte, dwpe, lw, lb, ln, stats, dx, dw, db;
    pair_seeded(&tok, dev, rows, 1, 0);
    cr_assert_eq(pgn_tensor_write(&tok.h, ids, 10, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_write(&tok.d, ids, 10, &err), 0, "%s", err.message);
    pair_seeded(&wte, dev, V, C, 11);
    pair_seeded(&wpe, dev, T + 1, C, 12);
    pair_seeded(&emb, dev, rows, C, 0);
    pair_seeded(&dwte, dev, V, C, 0);
    pair_seeded(&dwpe, dev, T + 1, C, 0);
    pair_seeded(&lw, dev, 1, C, 13);
    pair_seeded(&lb, dev, 1, C, 14);
    pair_seeded(&ln, dev, rows, C, 0);
    pair_seeded(&stats, dev, rows, 2, 0);
    pair_seeded(&dx, dev, rows, C, 0);
    pair_seeded(&dw, dev, 1, C, 0);
    pair_seeded(&db, dev, 1, C, 0);
#define EMBED(s) pgn_op_embed_forward(rows, T, &tok.s, &wte.s, &wpe.s, &emb.s, &e)
#define EMBED_BWD(s) pgn_op_embed_backward(rows, T, &tok.s, &emb.s, &dwte.s, &dwpe.s, &e)
#define LN(s) pgn_op_layernorm_forward(rows, &emb.s, &lw.s, &lb.s, &ln.s, &stats.s, &e)
#define LN_BWD(s) pgn_op_layernorm_backward(rows, &emb.s, &lw.s, &stats.s, &ln.s, &dx.s, &dw.s, &db.s, false, NULL, &e)
    BOTH(EMBED);
    BOTH(EMBED_BWD);
    BOTH(LN);
    BOTH(LN_BWD);
    assert_same(&emb, "embed");
    assert_same(&dwte, "dwte");
    assert_same(&dwpe, "dwpe");
    assert_same(&ln, "layernorm");
    assert_same(&stats, "layernorm stats");
    assert_same(&dx, "layernorm dx");
    assert_same(&dw, "layernorm dw");
    assert_same(&db, "layernorm db");
    pair *all[] = {&tok, &wte, &wpe, &emb, &dwte, &dwpe, &lw, &lb, &ln, &stats, &dx, &dw, &db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        pgn_tensor_release(&all[i]->h);
        pgn_tensor_release(&all[i]->d);
    }
    /* (B, T, H, hd): T under one block with hd under one chunk; T past a block with hd a chunk
     * and a tail */
    const int shapes[2][4] = {{2, 5, 3, 7}, {1, 19, 2, 20}};
    for (int i = 0; i < 2; i++) {
        int B = shapes[i][0], AT = shapes[i][1], H = shapes[i][2], AC = H * shapes[i][3], ar = B * AT;
        pair qkv, att, y, dy, scratch, dqkv;
        pair_seeded(&qkv, dev, ar, 3 * AC, 21);
        pair_seeded(&att, dev, B * H * AT, AT, 0);
        pair_seeded(&y, dev, ar, AC, 0);
        pair_seeded(&dy, dev, ar, AC, 22);
        pair_seeded(&scratch, dev, B * H * AT, AT, 0);
        pair_seeded(&dqkv, dev, ar, 3 * AC, 0);
#define ATT(s) pgn_op_attention_forward(ar, AT, H, &qkv.s, &att.s, &y.s, &e)
#define ATT_BWD(s) pgn_op_attention_backward(ar, AT, H, &qkv.s, &att.s, &dy.s, &scratch.s, &dqkv.s, &e)
        BOTH(ATT);
        BOTH(ATT_BWD);
        assert_same(&att, "attention att");
        assert_same(&y, "attention y");
        assert_same(&scratch, "attention score gradients");
        assert_same(&dqkv, "attention dqkv");
        pair *t[] = {&qkv, &att, &y, &dy, &scratch, &dqkv};
        for (size_t j = 0; j < 6; j++) {
            pgn_tensor_release(&t[j]->h);
            pgn_tensor_release(&t[j]->d);
        }
    }
    pgn_device_close(dev);
    assert_no_reports();
}

/* ---- a Fashion-MNIST subset ------------------------------------------------------------------ */

/* A file of the datasets folder under the data dir (tmpdir), where idx paths are confined. */
static FILE *create_dataset_file(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/" PGN_DATASETS_SUBDIR, tmpdir);
    cr_assert(mkdir(path, 0700) == 0 || errno == EEXIST, "%s", path);
    snprintf(path, sizeof path, "%s/" PGN_DATASETS_SUBDIR "/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    return f;
}

static void put_be32(FILE *f, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) fputc((int)(v >> shift) & 0xff, f);
}

/* Writes the first n samples of d as an idx image file and an idx label file (pixels were
 * bytes / 255, so they go back exactly). */
static void write_idx(const pgn_dataset *d, int n, const char *images, const char *labels) {
    cr_assert_eq(d->features, 28 * 28);
    cr_assert_geq(d->n, n);
    FILE *f = create_dataset_file(images);
    put_be32(f, 0x803);
    put_be32(f, (uint32_t)n);
    put_be32(f, 28);
    put_be32(f, 28);
    for (size_t i = 0; i < (size_t)n * d->features; i++) fputc((int)lrintf(d->x[i] * 255.0f), f);
    cr_assert_eq(fclose(f), 0);
    f = create_dataset_file(labels);
    put_be32(f, 0x801);
    put_be32(f, (uint32_t)n);
    for (int i = 0; i < n; i++) fputc(d->y[i], f);
    cr_assert_eq(fclose(f), 0);
}

/* Bits only: under the checkers one step at this width takes seconds. Every kernel it runs is
 * checked by small_jobs, at smaller widths. The cpu family's GEMM: Oclgrind simulates the gpu
 * family's work-groups item by item, which took over 300 s here (18 s so); small_jobs and
 * the_gpu_gemm_shapes check that family's kernels. */
Test(oclgrind, a_fashion_mnist_subset_trains_to_the_host_weights) {
    unsetenv("OCLGRIND_DATA_RACES");
    unsetenv("OCLGRIND_UNINITIALIZED");
    setenv("PARAGON_KERNELS", "cpu", 1);
    /* the dataset from its usual place (the Debian package), cut to a size Oclgrind runs quickly */
    pgn_data_spec full = {.source = PGN_DATA_FASHION_MNIST};
    pgn_dataset train, test;
    pgn_error err = {0};
    cr_assert_eq(pgn_dataset_load(&full, tmpdir, &train, &test, &err), 0, "%s", err.message);
    write_idx(&train, 128, "train-images", "train-labels");
    write_idx(&test, 32, "test-images", "test-labels");
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);
    static const char *const jobs[] = {
        "{\"kind\":\"train\",\"seed\":3,\"model\":{\"type\":\"mlp\",\"layers\":[784,16,10]},"
        "\"data\":{\"source\":\"idx\",\"train_images\":\"train-images\",\"train_labels\":\"train-labels\","
        "\"test_images\":\"test-images\",\"test_labels\":\"test-labels\"},"
        "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.05,\"momentum\":0.9},\"batch_size\":64,\"epochs\":1}",
    };
    check_same_weights(jobs, 1, tmpdir);
}

/* ---- interaction nets ------------------------------------------------------------------------ */

static char *read_example(const char *name) {
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/inet/%s", root ? root : ".", name);
    size_t len;
    char *text = pgn_read_file(path, &len);
    cr_assert_not_null(text, "cannot read %s (PARAGON_SOURCE_ROOT)", path);
    return text;
}

/* An example with its input made small: the first `from` in it becomes `to`. */
static char *smaller_example(const char *name, const char *from, const char *to) {
    char *text = read_example(name);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "%s no longer holds '%s'", name, from);
    size_t len = strlen(text) + strlen(to) + 1;
    char *out = malloc(len);
    cr_assert_not_null(out);
    snprintf(out, len, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    return out;
}

/* "Result: <nf>\n- ITRS: <n>\n", as the CLI and the .expected files write it; NULL dev: host. */
static char *run_inet(const char *text, pgn_device *dev, unsigned workers) {
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, strlen(text), &book, &err), 0, "%s", err.message);
    pgn_inet_result r;
    /* small heaps: the race checker keeps state for every byte of every buffer */
    pgn_inet_limits lim = {.max_nodes = 4096};
    int rc = dev ? pgn_inet_run_cl(dev, book, &lim, NULL, workers, NULL, &r, &err)
                 : pgn_inet_run_host(book, &lim, NULL, NULL, &r, &err);
    cr_assert_eq(rc, 0, "%u work-items: %s: %s", workers, pgn_error_code_name(err.code), err.message);
    pgn_inet_book_free(book);
    size_t len = strlen(r.normal_form) + 64;
    char *s = malloc(len);
    cr_assert_not_null(s);
    snprintf(s, len, "Result: %s\n- ITRS: %llu\n", r.normal_form, (unsigned long long)r.interactions);
    pgn_inet_result_free(&r);
    return s;
}

/* Each program on each count of Oclgrind's work-items, with each family's reducer (kernels/inet.cl,
 * and kernels/inet_gpu.cl, its GPU's default, in one work-group of its profile's size), gives the
 * host's result, with no report from its checkers; the programs are freed. */
static void inet_programs_match_the_host(char **programs, size_t n, const unsigned *workers, size_t n_workers) {
    static const char *const families[] = {"cpu", "gpu"};
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        setenv("PARAGON_KERNELS", families[f], 1);
        pgn_device *others[1];
        size_t n_others;
        pgn_device *oclgrind = open_devices(others, 0, &n_others);
        for (size_t p = 0; p < n; p++) {
            char *want = run_inet(programs[p], NULL, 0);
            for (size_t w = 0; w < n_workers; w++) {
                char *got = run_inet(programs[p], oclgrind, workers[w]);
                cr_assert_str_eq(got, want, "%s family, %u work-items:\n%s", families[f], workers[w], programs[p]);
                free(got);
            }
            free(want);
        }
        pgn_device_close(oclgrind);
        unsetenv("PARAGON_KERNELS");
    }
    for (size_t p = 0; p < n; p++) free(programs[p]);
    assert_no_reports();
}

/* Oclgrind runs a work-group's work-items one after another, so this checks the reducer's rules,
 * its memory and the idle workers' protocol under the checkers, not a parallel schedule (pocl's
 * test_inet_cl does that). A few hundred interactions each: under the checkers Oclgrind does
 * about 10^3 a second here. */
Test(oclgrind, inet_programs_on_4_and_32_work_items_give_the_host_result_without_a_report) {
    char *programs[] = {
        read_example("u24_ops.hvm"),
        read_example("i24_ops.hvm"),
        read_example("f24_ops.hvm"),
        smaller_example("fib.hvm", "@fib ~ (22 r)", "@fib ~ (5 r)"),
        smaller_example("tree_dup.hvm", "@gen ~ (12 {t1 t2})", "@gen ~ (2 {t1 t2})"),
        smaller_example("sort.hvm", "@gen ~ (200 (1 l))", "@gen ~ (5 (1 l))"),
    };
    static const unsigned workers[] = {4, 32};
    inet_programs_match_the_host(programs, sizeof programs / sizeof *programs, workers, 2);
}

/* The same with each program's own kernel (PARAGON_INET_PLANS=now): its small definitions'
 * plans compiled into the worker's loop (engine/inet/inet_plan.c), the rest interpreted. Two
 * programs whose plans hold every kind of node between them (fib: switches, operators and
 * references; tree_dup: duplications and constructors): each is two builds of its own (one a
 * family), which Oclgrind takes a minute or more for; with four this test took 5 minutes alone
 * on a slower 2-core machine and passed the suite's limit beside the others. test_inet_cl
 * checks every example's own kernel on pocl. */
Test(oclgrind, inet_programs_own_kernels_give_the_host_result_without_a_report) {
    char *programs[] = {
        smaller_example("fib.hvm", "@fib ~ (22 r)", "@fib ~ (5 r)"),
        smaller_example("tree_dup.hvm", "@gen ~ (12 {t1 t2})", "@gen ~ (2 {t1 t2})"),
    };
    setenv("PARAGON_INET_PLANS", "now", 1);
    static const unsigned workers[] = {4}; /* each geometry is a build of its own, minutes here */
    inet_programs_match_the_host(programs, sizeof programs / sizeof *programs, workers, 1);
    unsetenv("PARAGON_INET_PLANS");
}
