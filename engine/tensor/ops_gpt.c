/* ops_gpt.c: the transformer ops' host references and kernel launchers, each forward beside its
 * backward, both sides running the bodies of kernels/pgn_gpt.h so that they give the same bits.
 * Launchers only queue work (kernels/gpt.cl); nothing here waits for the device.
 *
 *   op          forward (shapes)                              backward
 *   embed       y (rows, C) = wte[tok] + wpe[r % T]            dwte: scatter-add in row order
 *                                                              (one owner per vocabulary row);
 *                                                              dwpe: sum over sequences
 *   layernorm   y = xhat w + b, stats (rows, 2) = mean, rstd   dx (rows); dw, db column sums
 *   attention   qkv (rows, 3C) -> att (B, H, T, T), y (rows, C) query blocks: ds, dq;
 *                                                              key blocks: dk, dv
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor/tensor.h"
#include "pgn_math.h"
#include "pgn_ops.h"
#include "pgn_gpt.h"

#define F32(t) ((float *)(t)->host)
#define I32(t) ((const int *)(t)->host)
#define GLOBAL1(n) ((size_t[1]){(size_t)(n)})
/* A work-group of one work-item, for launches of few heavy work-items: pocl makes a small range
 * one work-group, which one thread runs. On 2 cores embed_backward_wte over V = 65 took 0.075 ms
 * as one group, 0.035 ms as 65 (fastest of 40 runs each). */
#define ONE_PER_GROUP ((size_t[1]){1})
/* The cpu family's attention blocks a work-group: left to pocl, a range of B H T/16 blocks went
 * in groups of up to 3,072 work-items, whose private tiles (over 1 KB each) overflowed the
 * stack of the thread that runs a group (gpt-small, batch 64, crashed; batch 48 ran). */
#define ATT_GROUP 16
#define ATT_RANGE(n) GLOBAL1(pgn_range_of(n, ATT_GROUP))

/* The gpu family's query blocks (kernels/gpt_gpu.cl): a work-group of PGN_GPU_GROUP per
 * (sequence, head, block of pgn_att_group_rows(T) queries), whose rows of scores take
 * att_local_bytes(T) of local memory. */
static size_t att_groups_range(int B, int H, int T) {
    int qb = pgn_att_group_rows(T);
    return (size_t)B * H * (size_t)((T + qb - 1) / qb) * PGN_GPU_GROUP;
}
static size_t att_local_bytes(int T) { return (size_t)pgn_att_group_rows(T) * T * sizeof(float); }

/* Fails with "op: what": a caller's shapes or devices are wrong (the graph's bug, not a user's
 * input). Returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(pgn_error *err, const char *op,
                                                      const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    pgn_error_set(err, PGN_E_INTERNAL, "", "%s: %s", op, what);
    return -1;
}

/* Every non-NULL tensor of ts (n of them) lives on ts[0]'s device. */
static bool one_device(const pgn_tensor *const *ts, int n) {
    for (int i = 1; i < n; i++)
        if (ts[i] && ts[i]->dev != ts[0]->dev) return false;
    return true;
}
#define ONE_DEVICE(...)                                                                           \
    one_device((const pgn_tensor *const[]){__VA_ARGS__},                                          \
               (int)(sizeof((const pgn_tensor *const[]){__VA_ARGS__}) / sizeof(pgn_tensor *)))

/* t holds at least rows rows of cols columns. */
static int check_rows(const pgn_tensor *t, const char *name, int rows, int cols, const char *op,
                      pgn_error *err) {
    if (t->cols != cols || t->rows < rows)
        return fail(err, op, "%s is (%d, %d), needs %d columns and at least %d rows", name,
                    t->rows, t->cols, cols, rows);
    return 0;
}

/* t holds at least count elements, in any shape. */
static int check_count(const pgn_tensor *t, const char *name, size_t count, const char *op,
                       pgn_error *err) {
    if (pgn_tensor_count(t) < count)
        return fail(err, op, "%s has %zu elements, needs at least %zu", name, pgn_tensor_count(t),
                    count);
    return 0;
}

/* rows > 0 and whole sequences of T tokens. */
static int check_sequences(int rows, int T, const char *op, pgn_error *err) {
    if (T < 1) return fail(err, op, "T = %d, must be >= 1", T);
    if (rows < 1 || rows % T) return fail(err, op, "rows = %d is not a positive multiple of T = %d", rows, T);
    return 0;
}

/* On the host, every token id is a row of the table: a device cannot refuse one (pgn_embed_row). */
static int check_tokens(int rows, const pgn_tensor *tok, int V, const char *op, pgn_error *err) {
    for (int r = 0; r < rows; r++)
        if (I32(tok)[r] < 0 || I32(tok)[r] >= V)
            return fail(err, op, "tok[%d] = %d is not a token id (V = %d)", r, I32(tok)[r], V);
    return 0;
}

/* ---- embed: y (rows, C) = wte (V, C)[tok] + wpe (P, C)[r % T] ------------------------------- */

int pgn_op_embed_forward(int rows, int T, const pgn_tensor *tok, const pgn_tensor *wte,
                         const pgn_tensor *wpe, pgn_tensor *y, pgn_error *err) {
    const char *op = "embed";
    int C = wte->cols, V = wte->rows;
    if (!ONE_DEVICE(tok, wte, wpe, y)) return fail(err, op, "tensors on different devices");
    if (check_sequences(rows, T, op, err) || check_count(tok, "tok", (size_t)rows, op, err) ||
        check_rows(wpe, "wpe", T, C, op, err) || check_rows(y, "y", rows, C, op, err))
        return -1;
    if (!y->dev) {
        if (check_tokens(rows, tok, V, op, err)) return -1;
        for (int r = 0; r < rows; r++)
            pgn_embed_row(C, V, I32(tok)[r], F32(wte), F32(wpe) + (size_t)(r % T) * C,
                          F32(y) + (size_t)r * C);
        return 0;
    }
    pgn_karg args[] = {KARG(rows),     KARG(T),        KARG(C),        KARG(V),
                       KARG(tok->mem), KARG(wte->mem), KARG(wpe->mem), KARG(y->mem)};
    return PGN_LAUNCH(y->dev, embed_forward, args, 1, GLOBAL1(rows), NULL, err);
}

int pgn_op_embed_at(int pos, const pgn_tensor *tok, const pgn_tensor *wte, const pgn_tensor *wpe, pgn_tensor *y,
                    pgn_error *err) {
    const char *op = "embed_at";
    if (!ONE_DEVICE(tok, wte, wpe, y)) return fail(err, op, "tensors on different devices");
    int C = wte->cols, V = wte->rows;
    if (wpe->cols != C || pos < 0 || pos >= wpe->rows || check_count(y, "y", (size_t)C, op, err))
        return fail(err, op, "position %d of a (%d, %d) table", pos, wpe->rows, wpe->cols);
    if (!tok->dev) {
        int v = I32(tok)[0];
        if (v < 0 || v >= V) return fail(err, op, "token %d is not in [0, %d)", v, V);
        pgn_embed_row(C, V, v, F32(wte), F32(wpe) + (size_t)pos * C, F32(y));
        return 0;
    }
    pgn_karg args[] = {KARG(pos), KARG(C), KARG(V), KARG(tok->mem), KARG(wte->mem), KARG(wpe->mem), KARG(y->mem)};
    return PGN_LAUNCH(tok->dev, embed_at, args, 1, GLOBAL1(1), NULL, err);
}

int pgn_op_embed_backward(int rows, int T, const pgn_tensor *tok, const pgn_tensor *dy,
                          pgn_tensor *dwte, pgn_tensor *dwpe, pgn_error *err) {
    const char *op = "embed_backward";
    int C = dy->cols;
    if (!ONE_DEVICE(dy, tok, dwte, dwpe)) return fail(err, op, "tensors on different devices");
    if (check_sequences(rows, T, op, err) || check_count(tok, "tok", (size_t)rows, op, err) ||
        check_rows(dy, "dy", rows, C, op, err) || (dwte && check_rows(dwte, "dwte", 1, C, op, err)) ||
        (dwpe && check_rows(dwpe, "dwpe", T, C, op, err)))
        return -1;
    int blocks = (C + PGN_COL_BLOCK - 1) / PGN_COL_BLOCK;
    if (!dy->dev) {
        if (dwte && check_tokens(rows, tok, dwte->rows, op, err)) return -1;
        for (int v = 0; dwte && v < dwte->rows; v++)
            pgn_embed_wte_grad_row(rows, C, v, I32(tok), F32(dy), F32(dwte) + (size_t)v * C);
        for (int t = 0; dwpe && t < dwpe->rows; t++)
            for (int c0 = 0; c0 < C; c0 += PGN_COL_BLOCK)
                pgn_embed_wpe_grad_block(rows, T, C, t, c0, pgn_gpt_min(PGN_COL_BLOCK, C - c0),
                                         F32(dy), F32(dwpe));
        return 0;
    }
    if (dwte) {
        int V = dwte->rows;
        pgn_karg args[] = {KARG(rows), KARG(C), KARG(V), KARG(tok->mem), KARG(dy->mem), KARG(dwte->mem)};
        if (pgn_rows_on_gpu(dy->dev)) {
            size_t global[2] = {pgn_gpu_range(C), (size_t)V}, local[2] = {PGN_GPU_GROUP, 1};
            if (PGN_LAUNCH(dy->dev, embed_backward_wte_gpu, args, 2, global, local, err)) return -1;
        } else if (PGN_LAUNCH(dy->dev, embed_backward_wte, args, 1, GLOBAL1(V), ONE_PER_GROUP, err)) {
            return -1;
        }
    }
    if (dwpe) {
        int P = dwpe->rows;
        pgn_karg args[] = {KARG(rows), KARG(T), KARG(C), KARG(P), KARG(dy->mem), KARG(dwpe->mem)};
        if (PGN_LAUNCH(dy->dev, embed_backward_wpe, args, 1, GLOBAL1((size_t)P * blocks), NULL, err))
            return -1;
    }
    return 0;
}

/* ---- layernorm: y (rows, C) = (x - mean) rstd w + b; stats (rows, 2) = mean, rstd ------------ */

int pgn_op_layernorm_forward(int rows, const pgn_tensor *x, const pgn_tensor *w,
                             const pgn_tensor *b, pgn_tensor *y, pgn_tensor *stats, pgn_error *err) {
    const char *op = "layernorm";
    int C = x->cols;
    if (!ONE_DEVICE(x, w, b, y, stats)) return fail(err, op, "tensors on different devices");
    if (rows < 1) return fail(err, op, "rows = %d, must be >= 1", rows);
    if (check_rows(x, "x", rows, C, op, err) || check_rows(y, "y", rows, C, op, err) ||
        check_count(stats, "stats", 2 * (size_t)rows, op, err))
        return -1;
    if (pgn_tensor_count(w) != (size_t)C || pgn_tensor_count(b) != (size_t)C)
        return fail(err, op, "w and b have %zu and %zu elements, need C = %d", pgn_tensor_count(w),
                    pgn_tensor_count(b), C);
    float eps = PGN_LAYERNORM_EPS;
    if (!x->dev) {
        for (int r = 0; r < rows; r++) pgn_layernorm_forward_row(r, C, eps, F32(x), F32(w), F32(b), F32(y), F32(stats));
        return 0;
    }
    pgn_karg args[] = {KARG(rows),   KARG(C),      KARG(eps),    KARG(x->mem),
                       KARG(w->mem), KARG(b->mem), KARG(y->mem), KARG(stats->mem)};
    if (pgn_rows_on_gpu(x->dev))
        return PGN_LAUNCH(x->dev, layernorm_forward_gpu, args, 1, GLOBAL1(pgn_gpu_lanes_range(rows)),
                          PGN_GPU_LOCAL1, err);
    return PGN_LAUNCH(x->dev, layernorm_forward, args, 1,
                      GLOBAL1((rows + PGN_LN_ROWS - 1) / PGN_LN_ROWS), NULL, err);
}

/* The host's dw and db (either may be NULL): the chunks' partials (into defer when given), then
 * their sums (unless deferred). */
static int layernorm_params_host(int rows, int C, const pgn_tensor *x, const pgn_tensor *stats, const pgn_tensor *dy,
                                 pgn_tensor *dw, pgn_tensor *db, pgn_tensor *defer, pgn_error *err) {
    int chunks = pgn_sum_chunks(rows);
    float *part = NULL;
    if (pgn_tensor_partials(NULL, chunks, 2 * C, defer, NULL, &part, "layernorm_backward", err)) return -1;
    for (int k = 0; k < chunks; k++) {
        int r0 = k * PGN_SUM_ROWS, r1 = pgn_gpt_min(rows, r0 + PGN_SUM_ROWS);
        for (int c0 = 0; c0 < C; c0 += PGN_COL_BLOCK)
            pgn_layernorm_params_block(r0, r1, C, c0, pgn_gpt_min(PGN_COL_BLOCK, C - c0), F32(x), F32(stats), F32(dy),
                                       part + (size_t)k * 2 * C);
    }
    if (defer) return 0;
    for (int c = 0; c < C; c++) pgn_layernorm_params_finish(chunks, C, c, part, dw ? F32(dw) : NULL, db ? F32(db) : NULL);
    free(part);
    return 0;
}

int pgn_op_layernorm_backward(int rows, const pgn_tensor *x, const pgn_tensor *w,
                              const pgn_tensor *stats, const pgn_tensor *dy, pgn_tensor *dx,
                              pgn_tensor *dw, pgn_tensor *db, bool add_dx, pgn_tensor *defer, pgn_error *err) {
    const char *op = "layernorm_backward";
    int add = add_dx;
    int C = x->cols;
    if (!ONE_DEVICE(x, w, stats, dy, dx, dw, db, defer)) return fail(err, op, "tensors on different devices");
    if (rows < 1) return fail(err, op, "rows = %d, must be >= 1", rows);
    if (check_rows(x, "x", rows, C, op, err) || check_rows(dy, "dy", rows, C, op, err) ||
        check_rows(dx, "dx", rows, C, op, err) ||
        check_count(stats, "stats", 2 * (size_t)rows, op, err))
        return -1;
    if (pgn_tensor_count(w) != (size_t)C)
        return fail(err, op, "w has %zu elements, needs C = %d", pgn_tensor_count(w), C);
    if ((dw && pgn_tensor_count(dw) != (size_t)C) || (db && pgn_tensor_count(db) != (size_t)C))
        return fail(err, op, "dw and db must have C = %d elements", C);
    if (!x->dev) {
        for (int r = 0; r < rows; r++)
            pgn_layernorm_backward_row(r, C, F32(x), F32(w), F32(stats), F32(dy), add, F32(dx));
        return dw || db || defer ? layernorm_params_host(rows, C, x, stats, dy, dw, db, defer, err) : 0;
    }
    pgn_karg args[] = {KARG(rows),      KARG(C),       KARG(x->mem), KARG(w->mem),
                       KARG(stats->mem), KARG(dy->mem), KARG(add),    KARG(dx->mem)};
    bool gpu = pgn_rows_on_gpu(x->dev);
    if (gpu ? PGN_LAUNCH(x->dev, layernorm_backward_gpu, args, 1, GLOBAL1(pgn_gpu_lanes_range(rows)),
                         PGN_GPU_LOCAL1, err)
            : PGN_LAUNCH(x->dev, layernorm_backward, args, 1, GLOBAL1((rows + PGN_LN_ROWS - 1) / PGN_LN_ROWS), NULL,
                         err))
        return -1;
    if (!dw && !db && !defer) return 0;
    int chunks = pgn_sum_chunks(rows);
    cl_mem ws;
    if (pgn_tensor_partials(x->dev, chunks, 2 * C, defer, &ws, NULL, op, err)) return -1;
    pgn_karg pargs[] = {KARG(rows), KARG(C), KARG(x->mem), KARG(stats->mem), KARG(dy->mem), KARG(ws)};
    if (gpu) {
        size_t global[2] = {pgn_gpu_range(C), (size_t)chunks}, local[2] = {PGN_GPU_GROUP, 1};
        if (PGN_LAUNCH(x->dev, layernorm_backward_params_gpu, pargs, 2, global, local, err)) return -1;
    } else {
        size_t global[2] = {(size_t)(C + PGN_COL_BLOCK - 1) / PGN_COL_BLOCK, (size_t)chunks};
        if (PGN_LAUNCH(x->dev, layernorm_backward_params, pargs, 2, global, NULL, err)) return -1;
    }
    if (defer) return 0;
    /* an absent output is a NULL buffer argument, which the kernel sees as a NULL pointer */
    cl_mem dw_mem = dw ? dw->mem : NULL, db_mem = db ? db->mem : NULL;
    pgn_karg fargs[] = {KARG(chunks), KARG(C), KARG(ws), KARG(dw_mem), KARG(db_mem)};
    return PGN_LAUNCH(x->dev, layernorm_params_finish, fargs, 1, GLOBAL1(C), NULL, err);
}

/* ---- attention: qkv (rows, 3C) -> att (B, H, T, T), y (rows, C) ------------------------------- */

/* The shapes both directions share: C and hd from qkv and H, whole sequences, att's size. */
static int check_attention(int rows, int T, int H, const pgn_tensor *qkv, const pgn_tensor *att,
                           const char *op, int *C, pgn_error *err) {
    if (check_sequences(rows, T, op, err)) return -1;
    if (qkv->cols % 3) return fail(err, op, "qkv has %d columns, not 3C", qkv->cols);
    *C = qkv->cols / 3;
    if (H < 1 || *C % H)
        return fail(err, op, "C = %d is not a multiple of H = %d", *C, H);
    if (check_rows(qkv, "qkv", rows, 3 * *C, op, err)) return -1;
    return check_count(att, "att", (size_t)(rows / T) * H * T * T, op, err);
}

int pgn_op_attention_forward(int rows, int T, int H, const pgn_tensor *qkv, pgn_tensor *att,
                             pgn_tensor *y, pgn_error *err) {
    const char *op = "attention";
    int C;
    if (!ONE_DEVICE(qkv, att, y)) return fail(err, op, "tensors on different devices");
    if (check_attention(rows, T, H, qkv, att, op, &C, err) || check_rows(y, "y", rows, C, op, err))
        return -1;
    int B = rows / T, blocks = (T + PGN_ATT_BLOCK - 1) / PGN_ATT_BLOCK;
    if (!qkv->dev) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int qb = 0; qb < blocks; qb++)
                    pgn_attention_forward_block(T, H, C, b, h, qb, F32(qkv), F32(att), F32(y));
        return 0;
    }
    if (pgn_rows_on_gpu(qkv->dev)) {
        pgn_karg gargs[] = {KARG(rows),     KARG(T),    KARG(H),    KARG(C), KARG(qkv->mem),
                            KARG(att->mem), KARG(y->mem), KARG_LOCAL(att_local_bytes(T))};
        return PGN_LAUNCH(qkv->dev, attention_forward_gpu, gargs, 1, GLOBAL1(att_groups_range(B, H, T)),
                          PGN_GPU_LOCAL1, err);
    }
    pgn_karg args[] = {KARG(rows), KARG(T), KARG(H), KARG(C), KARG(qkv->mem), KARG(att->mem), KARG(y->mem)};
    return PGN_LAUNCH(qkv->dev, attention_forward, args, 1, ATT_RANGE((size_t)B * H * blocks),
                      ((size_t[1]){ATT_GROUP}), err);
}

int pgn_op_attention_decode(int t, int T, int H, const pgn_tensor *cache, pgn_tensor *p, pgn_tensor *y,
                            pgn_error *err) {
    const char *op = "attention_decode";
    if (!ONE_DEVICE(cache, p, y)) return fail(err, op, "tensors on different devices");
    int C = cache->cols / 3;
    if (cache->cols % 3 || H < 1 || C % H || t < 0 || t >= T || cache->rows < t + 1)
        return fail(err, op, "cache is (%d, %d), position %d of %d, %d heads", cache->rows, cache->cols, t, T, H);
    if (check_count(p, "p", (size_t)H * T, op, err) || check_count(y, "y", (size_t)C, op, err)) return -1;
    if (!cache->dev) {
        for (int h = 0; h < H; h++) pgn_attention_decode_head(t, T, H, C, h, F32(cache), F32(p) + (size_t)h * T, F32(y));
        return 0;
    }
    pgn_karg args[] = {KARG(t), KARG(T), KARG(H), KARG(C), KARG(cache->mem), KARG(p->mem), KARG(y->mem)};
    return PGN_LAUNCH(cache->dev, attention_decode, args, 1, GLOBAL1(H), NULL, err);
}

int pgn_op_attention_backward(int rows, int T, int H, const pgn_tensor *qkv, const pgn_tensor *att,
                              const pgn_tensor *dy, pgn_tensor *scratch, pgn_tensor *dqkv,
                              pgn_error *err) {
    const char *op = "attention_backward";
    int C;
    if (!ONE_DEVICE(qkv, att, dy, scratch, dqkv)) return fail(err, op, "tensors on different devices");
    if (check_attention(rows, T, H, qkv, att, op, &C, err) || check_rows(dy, "dy", rows, C, op, err) ||
        check_rows(dqkv, "dqkv", rows, 3 * C, op, err) ||
        check_count(scratch, "scratch", (size_t)(rows / T) * H * T * T, op, err))
        return -1;
    int B = rows / T, blocks = (T + PGN_ATT_BLOCK - 1) / PGN_ATT_BLOCK;
    if (!qkv->dev) {
        /* every query block's score gradients before any key block reads them */
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int qb = 0; qb < blocks; qb++)
                    pgn_attention_backward_query_block(T, H, C, b, h, qb, F32(qkv), F32(att),
                                                       F32(dy), F32(scratch), F32(dqkv));
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int kb = 0; kb < blocks; kb++)
                    pgn_attention_backward_key_block(T, H, C, b, h, kb, F32(qkv), F32(att),
                                                     F32(dy), F32(scratch), F32(dqkv));
        return 0;
    }
    size_t global = (size_t)B * H * blocks;
    pgn_karg args[] = {KARG(rows),     KARG(T),      KARG(H),           KARG(C),        KARG(qkv->mem),
                       KARG(att->mem), KARG(dy->mem), KARG(scratch->mem), KARG(dqkv->mem)};
    if (pgn_rows_on_gpu(qkv->dev)) {
        pgn_karg qargs[] = {KARG(rows),   KARG(T),       KARG(H),           KARG(C),
                            KARG(qkv->mem), KARG(att->mem), KARG(dy->mem),   KARG(scratch->mem),
                            KARG(dqkv->mem), KARG_LOCAL(att_local_bytes(T))};
        return PGN_LAUNCH(qkv->dev, attention_backward_query_gpu, qargs, 1, GLOBAL1(att_groups_range(B, H, T)),
                          PGN_GPU_LOCAL1, err) ||
               PGN_LAUNCH(qkv->dev, attention_backward_key_gpu, args, 1, GLOBAL1(pgn_gpu_range(rows * H)),
                          PGN_GPU_LOCAL1, err);
    }
    if (PGN_LAUNCH(qkv->dev, attention_backward_query, args, 1, ATT_RANGE(global), ((size_t[1]){ATT_GROUP}), err))
        return -1;
    return PGN_LAUNCH(qkv->dev, attention_backward_key, args, 1, ATT_RANGE(global), ((size_t[1]){ATT_GROUP}), err);
}
