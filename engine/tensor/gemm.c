/* gemm.c: SGEMM, C (M,N) = op(A) op(B): the host reference (register-tiled, one thread; a large
 * one-row product takes a helper thread for half its columns), the launchers of kernels/gemm.cl,
 * and the per-device scratch that packed panels live in.
 * Every output element is one in-order fma chain over k from 0, on every path, so all devices
 * and the host agree bit for bit. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "tensor/tensor.h"
#include "pgn_gemm.h"
#include "pgn_math.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#define F32(t) ((float *)(t)->host)

static int check(bool ok, const char *what, pgn_error *err) {
    if (ok) return 0;
    pgn_error_set(err, PGN_E_INTERNAL, "", "gemm: %s", what);
    return -1;
}

static int imin(int a, int b) { return a < b ? a : b; }
static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* op(A)(i,k) = a[i*a_rs + k*a_cs]; op(B)(k,j) = b[k*b_rs + j*b_cs]. */
typedef struct {
    int a_rs, a_cs, b_rs, b_cs;
} gemm_strides;

static gemm_strides strides_for(int M, int N, int K, bool ta, bool tb) {
    gemm_strides s;
    s.a_rs = ta ? 1 : K;
    s.a_cs = ta ? M : 1;
    s.b_rs = tb ? 1 : N;
    s.b_cs = tb ? K : 1;
    return s;
}

/* ---- host reference --------------------------------------------------------------------------
 * Register tiles of HOST_MR rows by HOST_NR columns of C, HOST_NV vectors per row, over k-blocks
 * of HOST_KC rows of op(B) packed into a zero-padded stack buffer. Between k-blocks the tile goes
 * through C as an exact float, so each element is still one fma chain in k order. The vector
 * width only changes how many chains run side by side, never the bits.
 * AVX-512, single-threaded, best of runs at N = 512, 1024 and three MLP shapes: 8 x 32 (16 zmm
 * accumulators) 207-241 GFLOP/s; 6 x 64: 212-237, but it wastes more lanes when N is narrow;
 * 12 x 32: 197-223; 14 x 32: 186-235; 4 x 64: 136-185. AVX2: 6 x 16 keeps 12 of the 16 ymm
 * registers as accumulators. Without either, plain fmaf chains (correct, slow). */
#if defined(__AVX512F__)
typedef __m512 hvec;
#define HOST_VL 16
#define HOST_MR 8
#define HOST_NV 2
#define hv_zero() _mm512_setzero_ps()
#define hv_load(p) _mm512_loadu_ps(p)
#define hv_store(p, v) _mm512_storeu_ps((p), (v))
#define hv_set1(x) _mm512_set1_ps(x)
#define hv_fma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 hvec;
#define HOST_VL 8
#define HOST_MR 6
#define HOST_NV 2
#define hv_zero() _mm256_setzero_ps()
#define hv_load(p) _mm256_loadu_ps(p)
#define hv_store(p, v) _mm256_storeu_ps((p), (v))
#define hv_set1(x) _mm256_set1_ps(x)
#define hv_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#else
typedef float hvec;
#define HOST_VL 1
#define HOST_MR 4
#define HOST_NV 4
#define hv_zero() 0.0f
#define hv_load(p) (*(p))
#define hv_store(p, v) (*(p) = (v))
#define hv_set1(x) (x)
#define hv_fma(a, b, c) pgn_fma((a), (b), (c))
#endif
#define HOST_NR (HOST_VL * HOST_NV)
/* Rows of B a one-row product takes per pass over its output (gemm_host_row). */
#define HOST_ROW_KU 4
/* 256 rows x 32 columns = 32 KiB of packed B: stays in L1 (48 KiB) while every row tile of A
 * streams past it, and small enough for any thread's stack. */
#define HOST_KC 256

/* bp (kc, HOST_NR) = op(B) rows [0, kc) of one panel (b points at its first element), columns
 * from cols on zero. */
static void host_pack_b(int kc, int cols, const float *b, gemm_strides s, float *bp) {
    if (s.b_cs == 1) {
        for (int k = 0; k < kc; k++) {
            memcpy(bp + k * HOST_NR, b + (size_t)k * s.b_rs, (size_t)cols * sizeof *bp);
            memset(bp + k * HOST_NR + cols, 0, (size_t)(HOST_NR - cols) * sizeof *bp);
        }
        return;
    }
    for (int jj = 0; jj < HOST_NR; jj++) {
        const float *col = b + (size_t)jj * s.b_cs;
        for (int k = 0; k < kc; k++) bp[k * HOST_NR + jj] = jj < cols ? col[(size_t)k * s.b_rs] : 0;
    }
}

/* c (HOST_MR, HOST_NR), rows ldc apart: c = (first ? 0 : c) then, for k in [0, kc) in order,
 * c[r][j] = fma(ar[r][k*a_cs], bp[k][j], c[r][j]). */
static void host_tile(int kc, const float *const *ar, int a_cs, const float *bp, float *c,
                      int ldc, bool first) {
    hvec acc[HOST_MR][HOST_NV];
#pragma GCC unroll 16
    for (int r = 0; r < HOST_MR; r++)
#pragma GCC unroll 16
        for (int v = 0; v < HOST_NV; v++)
            acc[r][v] = first ? hv_zero() : hv_load(c + (size_t)r * ldc + v * HOST_VL);
    for (int k = 0; k < kc; k++) {
        hvec bv[HOST_NV];
#pragma GCC unroll 16
        for (int v = 0; v < HOST_NV; v++) bv[v] = hv_load(bp + k * HOST_NR + v * HOST_VL);
#pragma GCC unroll 16
        for (int r = 0; r < HOST_MR; r++) {
            hvec av = hv_set1(ar[r][(size_t)k * a_cs]);
#pragma GCC unroll 16
            for (int v = 0; v < HOST_NV; v++) acc[r][v] = hv_fma(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < HOST_MR; r++)
#pragma GCC unroll 16
        for (int v = 0; v < HOST_NV; v++) hv_store(c + (size_t)r * ldc + v * HOST_VL, acc[r][v]);
}

/* One row of C (M = 1: a batch-1 forward, a decoder's step) from op(B) in place, rows b_rs
 * apart with unit column stride: c starts at zero and, for k in order, c[j] = fma(a_k, b[k][j],
 * c[j]) over the whole row, so B streams once, front to back, while c (N floats) stays in L1.
 * The same fma chain per element as the tiles; they computed the one row HOST_MR times (their
 * rows past M repeat it) after packing B. S1 (784 -> 64 -> 10) took 21 us by the tiles. */
static void gemm_host_row(int N, int K, const float *a, int a_cs, const float *b, int b_rs, float *c) {
    memset(c, 0, (size_t)N * sizeof *c);
    int k = 0;
    for (; k + HOST_ROW_KU <= K; k += HOST_ROW_KU) { /* HOST_ROW_KU rows of B per pass over c */
        float ak[HOST_ROW_KU];
        hvec av[HOST_ROW_KU];
        const float *row[HOST_ROW_KU];
#pragma GCC unroll 8
        for (int u = 0; u < HOST_ROW_KU; u++) {
            ak[u] = a[(size_t)(k + u) * a_cs];
            av[u] = hv_set1(ak[u]);
            row[u] = b + (size_t)(k + u) * b_rs;
        }
        int j = 0;
        for (; j + HOST_VL <= N; j += HOST_VL) {
            hvec acc = hv_load(c + j);
#pragma GCC unroll 8
            for (int u = 0; u < HOST_ROW_KU; u++) acc = hv_fma(av[u], hv_load(row[u] + j), acc);
            hv_store(c + j, acc);
        }
        for (; j < N; j++)
#pragma GCC unroll 8
            for (int u = 0; u < HOST_ROW_KU; u++) c[j] = pgn_fma(ak[u], row[u][j], c[j]);
    }
    for (; k < K; k++) {
        float ak = a[(size_t)k * a_cs];
        const float *row = b + (size_t)k * b_rs;
        for (int j = 0; j < N; j++) c[j] = pgn_fma(ak, row[j], c[j]);
    }
}

/* A one-row product over at least this many elements of B (1 MiB) splits its columns with a
 * helper thread: batch-1 forwards of the larger MLPs stream their weights from L3 or memory,
 * where one core reads about half of what two do (M3 784-512-512-10 took 68 us alone, numpy
 * with two threads 53). Each column is still one fma chain, computed by one thread: the bits do
 * not depend on the split. */
#define HOST_ROW_SPLIT (256 * 1024)
/* After a product the helper polls for the next this long before it sleeps: back-to-back
 * forwards find it awake, and an idle process does not keep a core busy. */
#define HOST_ROW_SPIN_NS 200000

typedef struct {
    int N, K, a_cs, b_rs;
    const float *a, *b;
    float *c;
} row_part;

/* One helper for the process, started on first use and stopped at exit (a thread still running
 * then crashed LeakSanitizer's exit scan). posted and done count products: the helper runs `part`
 * when posted passes what it has done. Only one caller uses it at a time (busy); a second caller
 * meanwhile computes its whole row alone. */
static struct {
    pthread_once_t once;
    bool ok;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_flag busy;
    atomic_uint posted, done;
    atomic_bool sleeping, quit;
    row_part part;
} row_helper = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
                .busy = ATOMIC_FLAG_INIT};

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *row_helper_main(void *arg) {
    (void)arg;
    unsigned seen = 0;
    for (;;) {
        uint64_t since = now_ns();
        unsigned spins = 0;
        while (atomic_load_explicit(&row_helper.posted, memory_order_acquire) == seen) {
            if (atomic_load(&row_helper.quit)) return NULL;
            if (++spins % 256 == 0 && now_ns() - since > HOST_ROW_SPIN_NS) {
                pthread_mutex_lock(&row_helper.mu);
                atomic_store(&row_helper.sleeping, true);
                while (atomic_load(&row_helper.posted) == seen && !atomic_load(&row_helper.quit))
                    pthread_cond_wait(&row_helper.cv, &row_helper.mu);
                atomic_store(&row_helper.sleeping, false);
                pthread_mutex_unlock(&row_helper.mu);
            }
        }
        seen++;
        const row_part *p = &row_helper.part;
        gemm_host_row(p->N, p->K, p->a, p->a_cs, p->b, p->b_rs, p->c);
        atomic_store_explicit(&row_helper.done, seen, memory_order_release);
    }
    return NULL;
}

/* Waits for a product in flight, keeps `busy` (later products go alone), ends the helper. */
static void row_helper_stop(void) {
    while (atomic_flag_test_and_set(&row_helper.busy)) {
    }
    pthread_mutex_lock(&row_helper.mu);
    atomic_store(&row_helper.quit, true);
    pthread_cond_signal(&row_helper.cv);
    pthread_mutex_unlock(&row_helper.mu);
    pthread_join(row_helper.thread, NULL);
}

static void row_helper_start(void) {
    row_helper.ok = pthread_create(&row_helper.thread, NULL, row_helper_main, NULL) == 0;
    if (row_helper.ok && atexit(row_helper_stop)) { /* unstoppable at exit: end it now */
        atomic_flag_clear(&row_helper.busy);
        row_helper_stop();
        row_helper.ok = false;
    }
}

/* gemm_host_row with the right part of the columns (a multiple of HOST_VL from the left) on the
 * helper when B is large and the helper is free; alone otherwise. */
static void gemm_host_row_split(int N, int K, const float *a, int a_cs, const float *b, int b_rs, float *c) {
    int left = (N / 2 + HOST_VL - 1) / HOST_VL * HOST_VL;
    if ((size_t)N * (size_t)K < HOST_ROW_SPLIT || left >= N || atomic_flag_test_and_set(&row_helper.busy)) {
        gemm_host_row(N, K, a, a_cs, b, b_rs, c);
        return;
    }
    pthread_once(&row_helper.once, row_helper_start);
    if (!row_helper.ok) {
        atomic_flag_clear(&row_helper.busy);
        gemm_host_row(N, K, a, a_cs, b, b_rs, c);
        return;
    }
    row_helper.part = (row_part){N - left, K, a_cs, b_rs, a, b + left, c + left};
    unsigned ticket = atomic_fetch_add_explicit(&row_helper.posted, 1, memory_order_release) + 1;
    if (atomic_load(&row_helper.sleeping)) {
        pthread_mutex_lock(&row_helper.mu);
        pthread_cond_signal(&row_helper.cv);
        pthread_mutex_unlock(&row_helper.mu);
    }
    gemm_host_row(left, K, a, a_cs, b, b_rs, c);
    while (atomic_load_explicit(&row_helper.done, memory_order_acquire) != ticket) {
    }
    atomic_flag_clear(&row_helper.busy);
}

static void gemm_host(int M, int N, int K, const float *a, gemm_strides s, const float *b,
                      float *c) {
    if (M == 1 && s.b_cs == 1) {
        gemm_host_row_split(N, K, a, s.a_cs, b, s.b_rs, c);
        return;
    }
    _Alignas(64) float bp[HOST_KC * HOST_NR];
    _Alignas(64) float edge[HOST_MR * HOST_NR];
    for (int j0 = 0; j0 < N; j0 += HOST_NR) {
        int cols = imin(HOST_NR, N - j0);
        for (int k0 = 0; k0 < K; k0 += HOST_KC) {
            int kc = imin(HOST_KC, K - k0);
            host_pack_b(kc, cols, b + (size_t)k0 * s.b_rs + (size_t)j0 * s.b_cs, s, bp);
            for (int i0 = 0; i0 < M; i0 += HOST_MR) {
                int rows = imin(HOST_MR, M - i0);
                const float *ar[HOST_MR];
                for (int r = 0; r < HOST_MR; r++) /* rows past M repeat row M-1, never stored */
                    ar[r] = a + (size_t)imin(i0 + r, M - 1) * s.a_rs + (size_t)k0 * s.a_cs;
                float *ct = c + (size_t)i0 * N + j0;
                if (rows == HOST_MR && cols == HOST_NR) {
                    host_tile(kc, ar, s.a_cs, bp, ct, N, k0 == 0);
                    continue;
                }
                for (int r = 0; r < rows && k0 > 0; r++)
                    memcpy(edge + r * HOST_NR, ct + (size_t)r * N, (size_t)cols * sizeof *ct);
                host_tile(kc, ar, s.a_cs, bp, edge, HOST_NR, k0 == 0);
                for (int r = 0; r < rows; r++)
                    memcpy(ct + (size_t)r * N, edge + r * HOST_NR, (size_t)cols * sizeof *ct);
            }
        }
    }
}

/* ---- OpenCL devices ---------------------------------------------------------------------------
 * kernels/gemm.cl: gemm_pack copies op(B) into zero-padded GEMM_NR-column panels (and op(A),
 * when stored transposed, into GEMM_MR-row panels) in the device's scratch, in one launch; then
 * gemm_tile computes GEMM_MR x GEMM_NR tiles, one per work-item and work-group (pocl runs a
 * group's work-items one after another on one thread; its cores take whole groups). Operands
 * small enough are read in place instead, saving the pack launch. */
/* An operand up to this many elements is read in place when its layout allows (B not transposed,
 * A not transposed or small): at 128 x 256 x 784 and 784 x 256 x 128 the product ran as fast
 * from B in place as from panels, and the pack launch costs 7-10 µs; at N = 1024 B in place ran
 * at 280 GFLOP/s against 435 (rows 4 KiB apart thrash the cache), and transposed A at 1024 ran at
 * 298 against 416 (one new page per k). Transposed B is always packed (its rows are columns). */
#define GEMM_IN_PLACE_MAX ((size_t)256 * 1024)

/* What gemm_device packs; panels and offsets in floats of the scratch. */
typedef struct {
    int a_panels, b_panels; /* 0: read in place */
    size_t a_off, floats;
} gemm_plan;

static gemm_plan plan_for(int M, int N, int K, bool ta, bool tb) {
    gemm_plan p = {0, 0, 0, 0};
    if (tb || (size_t)K * N > GEMM_IN_PLACE_MAX) p.b_panels = ceil_div(N, GEMM_NR);
    if (ta && (size_t)M * K > GEMM_IN_PLACE_MAX) p.a_panels = ceil_div(M, GEMM_MR);
    p.a_off = (size_t)p.b_panels * GEMM_NR * K;
    p.floats = p.a_off + (size_t)p.a_panels * GEMM_MR * K;
    return p;
}

size_t pgn_gemm_workspace_bytes(int M, int N, int K, bool ta, bool tb) {
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    return plan_for(M, N, K, ta, tb).floats * sizeof(float);
}

int pgn_gemm_reserve(pgn_device *dev, size_t bytes, pgn_error *err) {
    if (!dev) return 0;
    pgn_tensor_scratch *sc = pgn_tensor_scratch_of(dev, err);
    return sc ? pgn_device_scratch_reserve(dev, &sc->gemm, &sc->gemm_bytes, bytes, "gemm", err) : -1;
}

/* The optional epilogue of gemm_tile: z = C + bias, y = act(z) (fused bias_act_forward). */
typedef struct {
    int on;
    cl_mem bias, y;
    int act;
} gemm_epilogue;

/* Queues gemm_pack: op(B) into b_panels panels and, when a_blocks > 0, op(A) into the panels
 * that start at a_off, all in ws. */
static int launch_pack(pgn_device *dev, int M, int N, int K, cl_mem a, int a_blocks, cl_long a_off, cl_mem b,
                       int b_rs, int b_cs, int b_panels, cl_mem ws, pgn_error *err) {
    pgn_karg pack[] = {KARG(M),   KARG(N),    KARG(K),    KARG(a),        KARG(a_blocks), KARG(a_off),
                       KARG(b),   KARG(b_rs), KARG(b_cs), KARG(b_panels), KARG(ws)};
    size_t global[2] = {(size_t)(a_blocks + b_panels), (size_t)ceil_div(K, GEMM_PACK_KC)};
    size_t local[2] = {1, 1};
    return PGN_LAUNCH(dev, gemm_pack, pack, 2, global, local, err);
}

/* An operand of gemm_tile: its buffer, where it starts, and its panel, row and column strides.
 * An A in place has ps 0: its tile rows are the tile's rows apart, whatever tile runs. */
typedef struct {
    cl_mem mem;
    cl_long off, len; /* len: B's floats (bounds its reads); unused for A */
    int ps, rs, cs;
} tile_operand;

int pgn_gemm_tile_of(const pgn_device *dev) { return dev ? dev->profile.gemm_tile : 0; }

int pgn_gemm_tile_set(pgn_device *dev, int tile, pgn_profile_source from, pgn_error *err) {
    const pgn_gemm_tile_shape *shape = pgn_gemm_tile_shape_of(tile);
    if (check(shape != NULL, "no such tile", err)) return -1;
    if (dev && shape->family != dev->profile.family[PGN_OPS_GEMM]) {
        pgn_error_set(err, PGN_E_INVALID_PARAMETER, "tile", "GEMM tile %s is of the %s kernel family; %s runs the %s family",
                      shape->name, pgn_kernel_family_name(shape->family), dev->info.id,
                      pgn_kernel_family_name(dev->profile.family[PGN_OPS_GEMM]));
        return -1;
    }
    if (dev) dev->profile.gemm_tile = tile, dev->profile.gemm_tile_from = from;
    return 0;
}

static int launch_tile(pgn_device *dev, int M, int N, int K, const tile_operand *a, const tile_operand *b,
                       cl_mem c, const gemm_epilogue *e, pgn_error *err) {
    if (M == 1 && a->cs == 1 && a->off == 0) { /* one row of A in place: gemm_vec */
        pgn_karg args[] = {KARG(N),      KARG(K), KARG(a->mem), KARG(b->mem),  KARG(b->ps),  KARG(b->rs),
                           KARG(b->len), KARG(c), KARG(e->on),  KARG(e->bias), KARG(e->act), KARG(e->y)};
        size_t global[1] = {(size_t)ceil_div(ceil_div(N, GEMM_NR), GEMM_VEC_PANELS)}, local[1] = {1};
        return PGN_LAUNCH(dev, gemm_vec, args, 1, global, local, err);
    }
    int t = a->ps ? 0 : dev->profile.gemm_tile; /* packed A: the default tile, whose rows its panels hold */
    /* One panel of B (N <= GEMM_NR: a classifier's 10 columns): a tile of two panels would compute
     * it twice, the copy never stored, so the one-panel default takes it (the same in-order sums:
     * the same bits whatever the tile). */
    const pgn_gemm_tile_shape *tile = pgn_gemm_tile_shape_of(t);
    if (tile->np > 1 && N <= GEMM_NR) tile = pgn_gemm_tile_shape_of(t = 0);
    int a_ps = a->ps ? a->ps : tile->mr * a->rs;
    pgn_karg args[] = {KARG(M),     KARG(N),     KARG(K),     KARG(a->mem), KARG(a->off),   KARG(a_ps),
                       KARG(a->rs), KARG(a->cs), KARG(b->mem), KARG(b->ps), KARG(b->rs),    KARG(b->len),
                       KARG(c),     KARG(N),     KARG(e->on), KARG(e->bias), KARG(e->act), KARG(e->y)};
    size_t global[2] = {(size_t)ceil_div(M, tile->mr), (size_t)ceil_div(ceil_div(N, GEMM_NR), tile->np)};
    size_t local[2] = {1, 1};
    (void)PGN_KERNEL_CHECKED(gemm_tile, args); /* every tile kernel takes gemm_tile's arguments */
    return pgn_launch(dev, tile->kernel, args, 2, global, local, err);
}

/* ---- the gpu family (kernels/gemm_gpu.cl) -----------------------------------------------------
 * Operands in place, any transpose (the work-groups stage them in local memory): no packing. */

static size_t gpu_blocks(const pgn_gemm_tile_shape *t, int M, int N) {
    return (size_t)ceil_div(M, t->mwg) * (size_t)ceil_div(N, t->nwg);
}

/* The outputs its blocks compute, the ones past M and N included. */
static size_t gpu_padded(const pgn_gemm_tile_shape *t, int M, int N) { return gpu_blocks(t, M, N) * t->mwg * t->nwg; }

/* The profile's shape (as it is when an override set it), unless its blocks would leave compute units idle (the weight gradients'
 * small outputs) or are mostly padding (a small product): then, of the shapes that give every
 * compute unit a block (all of them, when none does), the one that computes the fewest padded
 * outputs, the larger block on a tie. Every shape gives the same bits. */
static const pgn_gemm_tile_shape *gpu_shape_for(const pgn_device *dev, int M, int N) {
    const pgn_gemm_tile_shape *t = pgn_gemm_tile_shape_of(dev->profile.gemm_tile);
    size_t cus = dev->info.compute_units ? dev->info.compute_units : 1, outputs = (size_t)M * N;
    if (dev->profile.gemm_tile_from == PGN_FROM_OVERRIDE) return t; /* asked for: a benchmark, a test */
    if (gpu_blocks(t, M, N) >= cus && gpu_padded(t, M, N) <= 2 * outputs) return t;
    const pgn_gemm_tile_shape *best = NULL;
    bool best_fills = false;
    for (int i = 0; i < pgn_gemm_tile_count(); i++) {
        const pgn_gemm_tile_shape *s = pgn_gemm_tile_shape_of(i);
        if (s->family != PGN_FAMILY_GPU) continue;
        bool fills = gpu_blocks(s, M, N) >= cus;
        if (best && best_fills && !fills) continue;
        if (!best || (fills && !best_fills) || gpu_padded(s, M, N) < gpu_padded(best, M, N) ||
            (gpu_padded(s, M, N) == gpu_padded(best, M, N) && s->mwg * s->nwg > best->mwg * best->nwg))
            best = s, best_fills = fills;
    }
    return best;
}

/* C (M,N), rows ldc apart, = op(A) op(B) with op(A)(i,k) = a[i a_rs + k a_cs] and op(B)(k,j) =
 * b[k b_rs + j b_cs], and the epilogue. */
static int gemm_gpu(pgn_device *dev, int M, int N, int K, cl_mem a, int a_rs, int a_cs, cl_mem b, int b_rs, int b_cs,
                    cl_mem c, int ldc, const gemm_epilogue *e, pgn_error *err) {
    if (M == 1) {
        pgn_karg args[] = {KARG(N), KARG(K), KARG(a),     KARG(a_cs),    KARG(b),      KARG(b_rs),
                           KARG(b_cs), KARG(c), KARG(e->on), KARG(e->bias), KARG(e->act), KARG(e->y)};
        size_t local[1] = {GEMM_GPU_ROW_GROUP}, global[1] = {pgn_range_of(N, GEMM_GPU_ROW_GROUP)};
        return PGN_LAUNCH(dev, gemm_gpu_row, args, 1, global, local, err);
    }
    const pgn_gemm_tile_shape *t = gpu_shape_for(dev, M, N);
    pgn_karg args[] = {KARG(M),    KARG(N), KARG(K),   KARG(a),     KARG(a_rs),    KARG(a_cs),   KARG(b),   KARG(b_rs),
                       KARG(b_cs), KARG(c), KARG(ldc), KARG(e->on), KARG(e->bias), KARG(e->act), KARG(e->y)};
    size_t global[2] = {(size_t)ceil_div(N, t->nwg) * (size_t)t->ndimc, (size_t)ceil_div(M, t->mwg) * (size_t)t->mdimc};
    size_t local[2] = {(size_t)t->ndimc, (size_t)t->mdimc};
    (void)PGN_KERNEL_CHECKED(gemm_gpu_64x64, args); /* every shape's kernel takes the same arguments */
    return pgn_launch(dev, t->kernel, args, 2, global, local, err);
}

static bool runs_gpu_gemm(const pgn_device *dev) { return dev->profile.family[PGN_OPS_GEMM] == PGN_FAMILY_GPU; }

static int gemm_device(int M, int N, int K, cl_mem a, cl_mem b, cl_mem c, bool ta, bool tb,
                       const gemm_epilogue *e, pgn_device *dev, pgn_error *err) {
    gemm_strides s = strides_for(M, N, K, ta, tb);
    gemm_epilogue none = {0, c, c, 0};
    if (runs_gpu_gemm(dev)) return gemm_gpu(dev, M, N, K, a, s.a_rs, s.a_cs, b, s.b_rs, s.b_cs, c, N, e ? e : &none, err);
    gemm_plan plan = plan_for(M, N, K, ta, tb);
    tile_operand A = {a, 0, 0, 0, s.a_rs, s.a_cs};
    tile_operand B = {b, 0, (cl_long)K * N, GEMM_NR, N, 1};
    cl_mem ws = NULL;
    if (plan.floats > 0) {
        if (pgn_gemm_reserve(dev, plan.floats * sizeof(float), err)) return -1;
        ws = ((pgn_tensor_scratch *)dev->part[PGN_PART_TENSOR])->gemm;
        int a_blocks = ceil_div(plan.a_panels * GEMM_MR, GEMM_PACK_AR);
        if (launch_pack(dev, M, N, K, a, a_blocks, (cl_long)plan.a_off, b, s.b_rs, s.b_cs, plan.b_panels,
                        ws, err))
            return -1;
    }
    if (plan.a_panels > 0) A = (tile_operand){ws, (cl_long)plan.a_off, 0, K * GEMM_MR, 1, GEMM_MR};
    if (plan.b_panels > 0) B = (tile_operand){ws, 0, (cl_long)plan.a_off, K * GEMM_NR, GEMM_NR, 1};
    return launch_tile(dev, M, N, K, &A, &B, c, e ? e : &none, err);
}

/* ---- weights packed once -------------------------------------------------------------------
 * pgn_op_gemm packs any B over GEMM_IN_PLACE_MAX elements on every call. Where the same weights
 * serve many products of few rows (inference), that repacking is nearly all the work: a
 * 2048 x 2048 layer at one row took 1.5 ms through pgn_op_gemm_bias_act and 0.19 ms on panels
 * packed beforehand (pocl, medians of 20). Same kernel, same in-order fma chains: same bits. */

int pgn_gemm_pack(const pgn_tensor *w, int K, int N, pgn_gemm_packed *out, pgn_error *err) {
    *out = (pgn_gemm_packed){.K = K, .N = N};
    if (check(w->dev != NULL, "packing is for device tensors", err) ||
        check(K > 0 && N > 0 && pgn_tensor_count(w) >= (size_t)K * N, "W too small", err))
        return -1;
    if (runs_gpu_gemm(w->dev)) /* the gpu family reads W as it is: a copy, (K, N) */
        return pgn_tensor_init(&out->panels, w->dev, K, N, err) ||
               pgn_device_copy(w->dev, w->mem, 0, out->panels.mem, 0, (size_t)K * N * sizeof(float), err);
    int panels = ceil_div(N, GEMM_NR);
    if (pgn_tensor_init(&out->panels, w->dev, panels * K, GEMM_NR, err)) return -1;
    /* no A to pack: w stands in for the unused A buffer */
    return launch_pack(w->dev, 1, N, K, w->mem, 0, 0, w->mem, N, 1, panels, out->panels.mem, err);
}

void pgn_gemm_packed_release(pgn_gemm_packed *p) { pgn_tensor_release(&p->panels); }

int pgn_op_gemm_bias_act_packed(int M, const pgn_tensor *a, const pgn_gemm_packed *w, pgn_tensor *z,
                                const pgn_tensor *bias, int act, pgn_tensor *y, pgn_error *err) {
    int N = w->N, K = w->K;
    if (check(a->dev && a->dev == z->dev && w->panels.dev == z->dev && bias->dev == z->dev && y->dev == z->dev,
              "tensors on different devices", err) ||
        check(M > 0 && pgn_tensor_count(a) >= (size_t)M * K && pgn_tensor_count(z) >= (size_t)M * N &&
                  pgn_tensor_count(y) >= (size_t)M * N && (int)pgn_tensor_count(bias) == N,
              "operand too small", err))
        return -1;
    gemm_epilogue e = {1, bias->mem, y->mem, act};
    if (runs_gpu_gemm(z->dev)) return gemm_gpu(z->dev, M, N, K, a->mem, K, 1, w->panels.mem, N, 1, z->mem, N, &e, err);
    tile_operand A = {a->mem, 0, 0, 0, K, 1};
    tile_operand B = {w->panels.mem, 0, (cl_long)pgn_tensor_count(&w->panels), K * GEMM_NR, GEMM_NR, 1};
    return launch_tile(z->dev, M, N, K, &A, &B, z->mem, &e, err);
}

int pgn_op_gemm(int M, int N, int K, const pgn_tensor *a, bool ta, const pgn_tensor *b, bool tb,
                pgn_tensor *c, pgn_error *err) {
    if (check(a->dev == b->dev && a->dev == c->dev, "tensors on different devices", err) ||
        check(M > 0 && N > 0 && K > 0, "empty shape", err) ||
        check(pgn_tensor_count(a) >= (size_t)M * K, "A too small", err) ||
        check(pgn_tensor_count(b) >= (size_t)K * N, "B too small", err) ||
        check(pgn_tensor_count(c) >= (size_t)M * N, "C too small", err) ||
        check(c != a && c != b, "C must not be an input", err))
        return -1;
    if (!c->dev) {
        gemm_host(M, N, K, F32(a), strides_for(M, N, K, ta, tb), F32(b), F32(c));
        return 0;
    }
    return gemm_device(M, N, K, a->mem, b->mem, c->mem, ta, tb, NULL, c->dev, err);
}

int pgn_op_gemm_bias_act(int M, int N, int K, const pgn_tensor *a, bool ta, const pgn_tensor *b,
                         bool tb, pgn_tensor *z, const pgn_tensor *bias, int act, pgn_tensor *y,
                         pgn_error *err) {
    if (!z->dev) /* the host reference is the two ops in sequence: the same bits */
        return pgn_op_gemm(M, N, K, a, ta, b, tb, z, err) ||
               pgn_op_bias_act_forward(M, z, bias, act, y, err);
    if (check(bias->dev == z->dev && y->dev == z->dev, "tensors on different devices", err) ||
        check((int)pgn_tensor_count(bias) == N && pgn_tensor_count(y) >= (size_t)M * N &&
                  y->cols == N && z->cols == N,
              "epilogue shape", err) ||
        check(pgn_tensor_count(a) >= (size_t)M * K && pgn_tensor_count(b) >= (size_t)K * N &&
                  pgn_tensor_count(z) >= (size_t)M * N,
              "operand too small", err))
        return -1;
    gemm_epilogue e = {1, bias->mem, y->mem, act};
    return gemm_device(M, N, K, a->mem, b->mem, z->mem, ta, tb, &e, z->dev, err);
}
