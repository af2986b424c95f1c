/* ops.c: the tensor ops other than GEMM (gemm.c). Each op's host reference and its kernel
 * launcher stand side by side, both built on the shared bodies in kernels/pgn_ops.h, so they
 * give the same bits. Launchers only queue work; nothing here waits for the device.
 * The table of every op (graph.c's op table calls them from each op's forward and backward):
 *
 *   op                 forward body                 backward (vector-Jacobian product)
 *   gemm (gemm.c)      C = op(A) op(B), fma in k    gemm: dA = dC op(B)^T, dB = op(A)^T dC
 *   gemm_bias_act      gemm + bias_act, one kernel  as gemm and bias_act
 *   bias_act           z += b; y = act(z)           bias_act_backward: dz = dy act'(z); db = colsum dz
 *   act                y = act(x)                   act_backward: dx = dy act'(x)
 *   dropout            y = x mask (counter RNG)     mul: dx = dy mask
 *   softmax_xent       loss, pred, dlogits (fused)  - (kernel fused_loss)
 *   mse_onehot         loss, pred, dx (fused)       - (kernel fused_loss)
 *   colsum (sum rows)  out = sum_r x[r]             broadcast_rows: dx[r] = dy
 *   add                out = a + b                  (gradient accumulation)
 *   gather_rows        batch rows from a dataset    -
 *   loss_stats         per-step loss sum, correct   -
 *   sumsq_ranges, clip_scale, sgd_update, adam_update: the optimizer (optim.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "pgn_math.h"
#include "pgn_ops.h"

/* The public activation enum is the code the kernels switch on. */
_Static_assert(PGN_ACT_NONE == PGN_ACT_CODE_NONE && PGN_ACT_RELU == PGN_ACT_CODE_RELU &&
                   PGN_ACT_GELU == PGN_ACT_CODE_GELU && PGN_ACT_TANH == PGN_ACT_CODE_TANH &&
                   PGN_ACT_SIGMOID == PGN_ACT_CODE_SIGMOID,
               "pgn_activation (paragon.h) and PGN_ACT_CODE_* (kernels/pgn_ops.h) disagree");

static int check(bool ok, const char *op, const char *what, pgn_error *err) {
    if (ok) return 0;
    pgn_error_set(err, PGN_E_INTERNAL, "", "%s: %s", op, what);
    return -1;
}

static bool same_dev(const pgn_tensor *a, const pgn_tensor *b) { return a->dev == b->dev; }

/* rows rows of t exist and it has cols columns. */
static bool fits(const pgn_tensor *t, int rows, int cols) { return rows <= t->rows && t->cols == cols; }

#define F32(t) ((float *)(t)->host)
#define I32(t) ((int *)(t)->host)
#define U32(t) ((unsigned *)(t)->host)
#define GLOBAL1(n) ((size_t[1]){(size_t)(n)})

/* ---- column sums in two passes (pgn_sum_chunks in kernels/pgn_ops.h) ----------------------- */

int pgn_tensor_partials(pgn_device *dev, int chunks, int cols, pgn_tensor *defer, cl_mem *ws, float **host_part,
                        const char *op, pgn_error *err) {
    if (defer && pgn_tensor_count(defer) < (size_t)chunks * cols)
        return check(false, op, "deferred partials smaller than chunks x cols", err);
    if (!dev) {
        *host_part = defer ? F32(defer) : malloc((size_t)chunks * cols * sizeof **host_part);
        return *host_part ? 0 : check(false, op, "out of memory for the partial sums", err);
    }
    if (defer) {
        *ws = defer->mem;
        return 0;
    }
    pgn_tensor_scratch *sc = pgn_tensor_scratch_of(dev, err);
    if (!sc || pgn_device_scratch_reserve(dev, &sc->reduce, &sc->reduce_bytes,
                                          (size_t)chunks * (size_t)cols * sizeof(float), "column sums", err))
        return -1;
    *ws = sc->reduce;
    return 0;
}

/* Queues a chunk-partials kernel over (cols, chunks): the gpu family's (a column of a chunk a
 * work-item, groups of PGN_GPU_GROUP) on a device that runs it, else the cpu family's
 * (PGN_COL_GROUP blocks of PGN_COL_BLOCK columns a work-item). */
static int launch_chunks(pgn_device *dev, int gpu, int cpu, const pgn_karg *args, int cols, int chunks, pgn_error *err) {
    if (pgn_rows_on_gpu(dev)) {
        size_t global[2] = {pgn_gpu_range(cols), (size_t)chunks}, local[2] = {PGN_GPU_GROUP, 1};
        return pgn_launch(dev, (pgn_kernel_id)gpu, args, 2, global, local, err);
    }
    int group = PGN_COL_BLOCK * PGN_COL_GROUP;
    size_t global[2] = {(size_t)(cols + group - 1) / group, (size_t)chunks};
    return pgn_launch(dev, (pgn_kernel_id)cpu, args, 2, global, NULL, err);
}

/* out (cols) = the partial sums in ws added up in chunk order. */
static int finish_partials(pgn_device *dev, cl_mem ws, int chunks, int cols, pgn_tensor *out, pgn_error *err) {
    pgn_karg args[] = {KARG(chunks), KARG(cols), KARG(ws), KARG(out->mem)};
    return PGN_LAUNCH(dev, colsum_finish, args, 1, GLOBAL1(cols), NULL, err);
}

/* ---- bias_act: z (rows, cols) += b; y = act(z) ----------------------------------------- */

int pgn_op_bias_act_forward(int rows, pgn_tensor *z, const pgn_tensor *bias, int act,
                            pgn_tensor *y, pgn_error *err) {
    int cols = z->cols, n = rows * cols;
    if (check(same_dev(z, bias) && same_dev(z, y), "bias_act", "tensors on different devices", err) ||
        check(fits(y, rows, cols) && rows <= z->rows && (int)pgn_tensor_count(bias) == cols,
              "bias_act", "shape", err))
        return -1;
    if (!z->dev) {
        float *zv = F32(z), *yv = F32(y);
        const float *b = F32(bias);
        for (int i = 0; i < n; i++) {
            zv[i] = zv[i] + b[i % cols];
            yv[i] = pgn_act(act, zv[i]);
        }
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(cols), KARG(act), KARG(z->mem), KARG(bias->mem), KARG(y->mem)};
    return PGN_LAUNCH(z->dev, bias_act_forward, args, 1, GLOBAL1(n), NULL, err);
}

int pgn_op_bias_act_backward(int rows, const pgn_tensor *z, const pgn_tensor *y,
                             const pgn_tensor *dy, int act, pgn_tensor *dz, pgn_tensor *db,
                             pgn_tensor *defer, pgn_error *err) {
    int cols = z->cols;
    if (check(same_dev(z, y) && same_dev(z, dy) && same_dev(z, dz) && (defer ? same_dev(z, defer) : same_dev(z, db)),
              "bias_act_backward", "tensors on different devices", err) ||
        check(fits(z, rows, cols) && fits(y, rows, cols) && fits(dy, rows, cols) &&
                  fits(dz, rows, cols) && (defer || (int)pgn_tensor_count(db) == cols),
              "bias_act_backward", "shape", err))
        return -1;
    int chunks = pgn_sum_chunks(rows);
    pgn_device *dev = z->dev;
    cl_mem ws = NULL;
    float *part = NULL;
    if (pgn_tensor_partials(dev, chunks, cols, defer, &ws, &part, "bias_act_backward", err)) return -1;
    if (!dev) {
        for (int c = 0; c < chunks; c++) {
            int r0 = c * PGN_SUM_ROWS, r1 = r0 + PGN_SUM_ROWS < rows ? r0 + PGN_SUM_ROWS : rows;
            for (int j0 = 0; j0 < cols; j0 += PGN_COL_BLOCK)
                pgn_bias_act_backward_block(r0, r1, cols, j0, cols - j0 < PGN_COL_BLOCK ? cols - j0 : PGN_COL_BLOCK,
                                            act, F32(z), F32(y), F32(dy), F32(dz), part + (size_t)c * cols);
        }
        if (!defer) {
            for (int j = 0; j < cols; j++) F32(db)[j] = pgn_sum_partials(chunks, cols, part, j);
            free(part);
        }
        return 0;
    }
    pgn_karg args[] = {KARG(rows),  KARG(cols),   KARG(act),    KARG(z->mem),
                       KARG(y->mem), KARG(dy->mem), KARG(dz->mem), KARG(ws)};
    return launch_chunks(dev, PGN_KERNEL_CHECKED(bias_act_backward_gpu, args), PGN_KERNEL_CHECKED(bias_act_backward, args),
                         args, cols, chunks, err) ||
                   (!defer && finish_partials(dev, ws, chunks, cols, db, err))
               ? -1
               : 0;
}

/* ---- act: y = act(x); dx = dy act'(x) --------------------------------------------------- */

int pgn_op_act_forward(int rows, int act, const pgn_tensor *x, pgn_tensor *y, pgn_error *err) {
    int n = rows * x->cols;
    if (check(same_dev(x, y), "act", "tensors on different devices", err) ||
        check(fits(x, rows, x->cols) && fits(y, rows, x->cols), "act", "shape", err))
        return -1;
    if (!x->dev) {
        for (int i = 0; i < n; i++) F32(y)[i] = pgn_act(act, F32(x)[i]);
        return 0;
    }
    if (act == PGN_ACT_CODE_RELU) {
        pgn_karg args[] = {KARG(n), KARG(x->mem), KARG(y->mem)};
        return PGN_LAUNCH(x->dev, relu_forward, args, 1, GLOBAL1(n), NULL, err);
    }
    pgn_karg args[] = {KARG(n), KARG(act), KARG(x->mem), KARG(y->mem)};
    return PGN_LAUNCH(x->dev, act_forward, args, 1, GLOBAL1(n), NULL, err);
}

int pgn_op_act_backward(int rows, int act, const pgn_tensor *x, const pgn_tensor *y,
                        const pgn_tensor *dy, pgn_tensor *dx, pgn_error *err) {
    int cols = x->cols, n = rows * cols;
    if (check(same_dev(x, y) && same_dev(x, dy) && same_dev(x, dx), "act_backward",
              "tensors on different devices", err) ||
        check(fits(x, rows, cols) && fits(y, rows, cols) && fits(dy, rows, cols) &&
                  fits(dx, rows, cols),
              "act_backward", "shape", err))
        return -1;
    if (!x->dev) {
        for (int i = 0; i < n; i++) F32(dx)[i] = pgn_act_grad(act, F32(x)[i], F32(y)[i], F32(dy)[i]);
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(act), KARG(x->mem), KARG(y->mem), KARG(dy->mem), KARG(dx->mem)};
    return PGN_LAUNCH(x->dev, act_backward, args, 1, GLOBAL1(n), NULL, err);
}

/* ---- dropout: y = x mask ---------------------------------------------------------------- */

int pgn_op_dropout_forward(int rows, const pgn_tensor *x, float p, uint64_t seed, uint64_t step,
                           pgn_tensor *mask, pgn_tensor *y, pgn_error *err) {
    int cols = x->cols, n = rows * cols;
    if (check(same_dev(x, mask) && same_dev(x, y), "dropout", "tensors on different devices", err) ||
        check(fits(x, rows, cols) && fits(mask, rows, cols) && fits(y, rows, cols), "dropout",
              "shape", err) ||
        check(p >= 0.0f && p < 1.0f, "dropout", "p must be in [0, 1)", err))
        return -1;
    float scale = 1.0f / (1.0f - p);
    if (!x->dev) {
        for (int i = 0; i < n; i++) {
            float m = pgn_dropout_mask(seed, step, (pgn_u64)i, p, scale);
            F32(mask)[i] = m;
            F32(y)[i] = F32(x)[i] * m;
        }
        return 0;
    }
    cl_ulong s = seed, t = step;
    pgn_karg args[] = {KARG(n), KARG(p), KARG(scale), KARG(s), KARG(t), KARG(x->mem), KARG(mask->mem), KARG(y->mem)};
    return PGN_LAUNCH(x->dev, dropout_forward, args, 1, GLOBAL1(n), NULL, err);
}

/* ---- elementwise mul and add ------------------------------------------------------------ */

static int binary(bool is_mul, int rows, const pgn_tensor *a, const pgn_tensor *b,
                  pgn_tensor *out, pgn_error *err) {
    const char *kernel = is_mul ? "mul" : "add";
    int cols = a->cols, n = rows * cols;
    if (check(same_dev(a, b) && same_dev(a, out), kernel, "tensors on different devices", err) ||
        check(fits(a, rows, cols) && fits(b, rows, cols) && fits(out, rows, cols), kernel, "shape",
              err))
        return -1;
    if (!a->dev) {
        for (int i = 0; i < n; i++)
            F32(out)[i] = is_mul ? F32(a)[i] * F32(b)[i] : F32(a)[i] + F32(b)[i];
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(a->mem), KARG(b->mem), KARG(out->mem)};
    return is_mul ? PGN_LAUNCH(a->dev, mul, args, 1, GLOBAL1(n), NULL, err)
                  : PGN_LAUNCH(a->dev, add, args, 1, GLOBAL1(n), NULL, err);
}

int pgn_op_mul(int rows, const pgn_tensor *a, const pgn_tensor *b, pgn_tensor *out, pgn_error *err) {
    return binary(true, rows, a, b, out, err);
}

int pgn_op_add(int rows, const pgn_tensor *a, const pgn_tensor *b, pgn_tensor *out, pgn_error *err) {
    return binary(false, rows, a, b, out, err);
}

/* ---- colsum and its backward, broadcast_rows --------------------------------------------- */

int pgn_op_colsum(int rows, const pgn_tensor *x, pgn_tensor *out, pgn_tensor *defer, pgn_error *err) {
    if (check(defer ? same_dev(x, defer) : same_dev(x, out), "colsum", "tensors on different devices", err) ||
        check(rows <= x->rows && (defer || pgn_tensor_count(out) >= (size_t)x->cols), "colsum", "shape", err))
        return -1;
    int cols = x->cols, chunks = pgn_sum_chunks(rows);
    pgn_device *dev = x->dev;
    cl_mem ws = NULL;
    float *part = NULL;
    if (pgn_tensor_partials(dev, chunks, cols, defer, &ws, &part, "colsum", err)) return -1;
    if (!dev) {
        for (int c = 0; c < chunks; c++) {
            int r0 = c * PGN_SUM_ROWS, r1 = r0 + PGN_SUM_ROWS < rows ? r0 + PGN_SUM_ROWS : rows;
            for (int j0 = 0; j0 < cols; j0 += PGN_COL_BLOCK)
                pgn_colsum_block(r0, r1, cols, j0, cols - j0 < PGN_COL_BLOCK ? cols - j0 : PGN_COL_BLOCK, F32(x),
                                 part + (size_t)c * cols);
        }
        if (!defer) {
            for (int j = 0; j < cols; j++) F32(out)[j] = pgn_sum_partials(chunks, cols, part, j);
            free(part);
        }
        return 0;
    }
    pgn_karg args[] = {KARG(rows), KARG(cols), KARG(x->mem), KARG(ws)};
    return launch_chunks(dev, PGN_KERNEL_CHECKED(colsum_partial_gpu, args), PGN_KERNEL_CHECKED(colsum_partial, args),
                         args, cols, chunks, err) ||
                   (!defer && finish_partials(dev, ws, chunks, cols, out, err))
               ? -1
               : 0;
}

/* Every entry e of table (PGN_SUM_ENTRY ints each: first, n, poff, stride, out_off): out[out_off +
 * j] = the sum over chunks c in order of partials[poff + c stride + j], j < n: the finish of
 * column sums deferred from several ops (pgn_sum_partials' order). */
int pgn_op_finish_sums(int n_entries, int total, int chunks, const pgn_tensor *table, const pgn_tensor *partials,
                       pgn_tensor *out, pgn_error *err) {
    if (check(same_dev(table, partials) && same_dev(table, out), "finish_sums", "tensors on different devices", err) ||
        check(pgn_tensor_count(table) >= (size_t)n_entries * PGN_SUM_ENTRY && chunks >= 1, "finish_sums", "shape", err))
        return -1;
    if (!n_entries) return 0;
    if (!table->dev) {
        const int *t = I32(table);
        for (int e = 0; e < n_entries; e++) {
            const int *en = t + (size_t)e * PGN_SUM_ENTRY;
            if (check(en[3] >= en[1] && (size_t)en[2] + (size_t)(chunks - 1) * en[3] + en[1] <= pgn_tensor_count(partials) &&
                          (size_t)en[4] + en[1] <= pgn_tensor_count(out),
                      "finish_sums", "an entry past its tensors", err))
                return -1;
            for (int j = 0; j < en[1]; j++) F32(out)[en[4] + j] = pgn_sum_partials(chunks, en[3], F32(partials) + en[2], j);
        }
        return 0;
    }
    pgn_karg args[] = {KARG(n_entries), KARG(total), KARG(chunks), KARG(table->mem), KARG(partials->mem), KARG(out->mem)};
    return PGN_LAUNCH(table->dev, finish_sums, args, 1, GLOBAL1(total), NULL, err);
}

int pgn_op_broadcast_rows(int rows, const pgn_tensor *src, float scale, pgn_tensor *dst,
                          pgn_error *err) {
    int cols = dst->cols, n = rows * cols;
    if (check(same_dev(src, dst), "broadcast_rows", "tensors on different devices", err) ||
        check(rows <= dst->rows && (int)pgn_tensor_count(src) == cols, "broadcast_rows", "shape", err))
        return -1;
    if (!dst->dev) {
        for (int i = 0; i < n; i++) F32(dst)[i] = F32(src)[i % cols] * scale;
        return 0;
    }
    pgn_karg args[] = {KARG(n), KARG(cols), KARG(scale), KARG(src->mem), KARG(dst->mem)};
    return PGN_LAUNCH(dst->dev, broadcast_rows, args, 1, GLOBAL1(n), NULL, err);
}

/* ---- fused losses: softmax + cross-entropy, MSE against one-hot --------------------------- */

static int fused_loss(int mse, int rows, const pgn_tensor *x, const pgn_tensor *labels,
                      float scale, pgn_tensor *dx, pgn_tensor *loss, pgn_tensor *pred,
                      pgn_error *err) {
    const char *op = mse ? "mse_onehot" : "softmax_xent";
    if (check(same_dev(x, labels) && same_dev(x, dx) && same_dev(x, loss) && same_dev(x, pred),
              op, "tensors on different devices", err) ||
        check(rows <= x->rows && fits(dx, rows, x->cols) && pgn_tensor_count(labels) >= (size_t)rows &&
                  pgn_tensor_count(loss) >= (size_t)rows && pgn_tensor_count(pred) >= (size_t)rows,
              op, "shape", err))
        return -1;
    int n = x->cols;
    if (!x->dev) {
        for (int r = 0; r < rows; r++) {
            const float *xr = F32(x) + r * n;
            float *dxr = F32(dx) + r * n;
            int y = I32(labels)[r];
            F32(loss)[r] = mse ? pgn_mse_onehot_row(n, xr, y, scale, dxr, I32(pred) + r)
                               : pgn_softmax_xent_row(n, xr, y, scale, dxr, I32(pred) + r);
        }
        return 0;
    }
    pgn_karg args[] = {KARG(mse),   KARG(rows),    KARG(n),         KARG(x->mem),  KARG(labels->mem),
                       KARG(scale), KARG(dx->mem), KARG(loss->mem), KARG(pred->mem)};
    if (pgn_rows_on_gpu(x->dev))
        return PGN_LAUNCH(x->dev, fused_loss_gpu, args, 1, GLOBAL1(pgn_gpu_lanes_range(rows)), PGN_GPU_LOCAL1, err);
    return PGN_LAUNCH(x->dev, fused_loss, args, 1, GLOBAL1(rows), NULL, err);
}

int pgn_op_softmax_xent(int rows, const pgn_tensor *logits, const pgn_tensor *labels, float scale,
                        pgn_tensor *dlogits, pgn_tensor *loss, pgn_tensor *pred, pgn_error *err) {
    return fused_loss(0, rows, logits, labels, scale, dlogits, loss, pred, err);
}

int pgn_op_mse_onehot(int rows, const pgn_tensor *x, const pgn_tensor *labels, float scale,
                      pgn_tensor *dx, pgn_tensor *loss, pgn_tensor *pred, pgn_error *err) {
    return fused_loss(1, rows, x, labels, scale, dx, loss, pred, err);
}

/* ---- batches and statistics ------------------------------------------------------------- */

int pgn_op_windows(int B, int T, const pgn_tensor *tokens, const pgn_window_plan *plan, uint64_t index0,
                   pgn_tensor *x, pgn_tensor *y, pgn_error *err) {
    int n = B * T;
    uint64_t last = plan->lo + plan->span - 1 + (uint64_t)T; /* the last token a window may read */
    if (check(same_dev(tokens, x) && same_dev(tokens, y), "windows", "tensors on different devices", err) ||
        check(pgn_tensor_count(x) >= (size_t)n && pgn_tensor_count(y) >= (size_t)n && plan->span > 0 &&
                  (plan->random || plan->total > 0) && last < pgn_tensor_count(tokens),
              "windows", "shape", err))
        return -1;
    if (!tokens->dev) {
        for (int i = 0; i < n; i++) {
            pgn_u64 start = pgn_window_start(plan->random, plan->seed, index0 + (uint64_t)(i / T), plan->lo,
                                             plan->span, plan->total);
            I32(x)[i] = I32(tokens)[start + (uint64_t)(i % T)];
            I32(y)[i] = I32(tokens)[start + (uint64_t)(i % T) + 1];
        }
        return 0;
    }
    int random = plan->random;
    cl_ulong seed = plan->seed, first = index0, lo = plan->lo, span = plan->span, total = plan->total;
    pgn_karg args[] = {KARG(B),  KARG(T),    KARG(tokens->mem), KARG(random), KARG(seed), KARG(first),
                       KARG(lo), KARG(span), KARG(total),       KARG(x->mem), KARG(y->mem)};
    return PGN_LAUNCH(x->dev, windows, args, 1, GLOBAL1(n), NULL, err);
}

int pgn_op_gather_rows(int rows, const pgn_tensor *src, const pgn_tensor *idx, int offset,
                       pgn_tensor *dst, pgn_error *err) {
    int cols = src->cols;
    if (check(same_dev(src, idx) && same_dev(src, dst), "gather_rows",
              "tensors on different devices", err) ||
        check(fits(dst, rows, cols) && offset >= 0 && pgn_tensor_count(idx) >= (size_t)(offset + rows),
              "gather_rows", "shape", err))
        return -1;
    if (!src->dev) {
        for (int r = 0; r < rows; r++)
            memcpy(U32(dst) + (size_t)r * cols, U32(src) + (size_t)I32(idx)[offset + r] * cols,
                   (size_t)cols * sizeof(uint32_t));
        return 0;
    }
    pgn_karg args[] = {KARG(rows), KARG(cols), KARG(src->mem), KARG(idx->mem), KARG(offset), KARG(dst->mem)};
    return PGN_LAUNCH(src->dev, gather_rows, args, 1, GLOBAL1(rows), NULL, err);
}

int pgn_op_loss_stats(int rows, const pgn_tensor *loss, const pgn_tensor *pred,
                      const pgn_tensor *labels, pgn_tensor *stats, int slot, pgn_error *err) {
    if (check(same_dev(loss, pred) && same_dev(loss, labels) && same_dev(loss, stats),
              "loss_stats", "tensors on different devices", err) ||
        check(pgn_tensor_count(stats) >= (size_t)(2 * slot + 2), "loss_stats", "shape", err))
        return -1;
    if (!loss->dev) {
        int correct = 0;
        for (int r = 0; r < rows; r++) correct += I32(pred)[r] == I32(labels)[r];
        F32(stats)[2 * slot] = pgn_lane_sum(rows, F32(loss), 0);
        F32(stats)[2 * slot + 1] = (float)correct;
        return 0;
    }
    pgn_karg args[] = {KARG(rows), KARG(loss->mem), KARG(pred->mem), KARG(labels->mem), KARG(stats->mem), KARG(slot)};
    if (pgn_rows_on_gpu(loss->dev))
        return PGN_LAUNCH(loss->dev, loss_stats_gpu, args, 1, GLOBAL1(PGN_LANES), GLOBAL1(PGN_LANES), err);
    return PGN_LAUNCH(loss->dev, loss_stats, args, 1, GLOBAL1(1), NULL, err);
}

/* ---- optimizer pieces ------------------------------------------------------------------- */

int pgn_op_sumsq_ranges(const pgn_tensor *x, int n, const pgn_tensor *ranges, pgn_tensor *partials,
                        pgn_error *err) {
    if (check(same_dev(x, partials) && same_dev(x, ranges), "sumsq", "tensors on different devices", err) ||
        check(n >= 0 && pgn_tensor_count(partials) >= (size_t)n && pgn_tensor_count(ranges) >= (size_t)n * 2,
              "sumsq", "shape", err))
        return -1;
    if (!x->dev) {
        const int *r = I32(ranges);
        for (int c = 0; c < n; c++) {
            if (check(r[2 * c] >= 0 && r[2 * c + 1] >= 0 &&
                          (size_t)r[2 * c] + (size_t)r[2 * c + 1] <= pgn_tensor_count(x),
                      "sumsq", "a range past the tensor's end", err))
                return -1;
            F32(partials)[c] = pgn_sumsq(r[2 * c + 1], F32(x) + r[2 * c]);
        }
        return 0;
    }
    if (!n) return 0;
    pgn_karg args[] = {KARG(n), KARG(ranges->mem), KARG(x->mem), KARG(partials->mem)};
    if (pgn_rows_on_gpu(x->dev))
        return PGN_LAUNCH(x->dev, sumsq_ranges_gpu, args, 1, GLOBAL1(pgn_gpu_lanes_range(n)), PGN_GPU_LOCAL1, err);
    return PGN_LAUNCH(x->dev, sumsq_ranges, args, 1, GLOBAL1(n), NULL, err);
}

int pgn_op_clip_scale(int n_partials, const pgn_tensor *partials, float max_norm,
                      pgn_tensor *out, pgn_error *err) {
    if (check(same_dev(partials, out), "clip_scale", "tensors on different devices", err) ||
        check(pgn_tensor_count(out) >= 2 && pgn_tensor_count(partials) >= (size_t)n_partials,
              "clip_scale", "shape", err))
        return -1;
    if (!out->dev) {
        float norm = pgn_sqrt(pgn_lane_sum(n_partials, F32(partials), 0));
        F32(out)[0] = norm;
        F32(out)[1] = pgn_clip_factor(norm, max_norm);
        return 0;
    }
    pgn_karg args[] = {KARG(n_partials), KARG(partials->mem), KARG(max_norm), KARG(out->mem)};
    if (pgn_rows_on_gpu(out->dev))
        return PGN_LAUNCH(out->dev, clip_scale_gpu, args, 1, GLOBAL1(PGN_LANES), GLOBAL1(PGN_LANES), err);
    return PGN_LAUNCH(out->dev, clip_scale, args, 1, GLOBAL1(1), NULL, err);
}

int pgn_op_sgd_update(pgn_tensor *w, const pgn_tensor *g, pgn_tensor *v, const pgn_tensor *scale,
                      float lr, float mu, bool nesterov, float wd, pgn_error *err) {
    int n = (int)pgn_tensor_count(w), nest = nesterov;
    if (check(same_dev(w, g) && same_dev(w, v) && same_dev(w, scale), "sgd",
              "tensors on different devices", err) ||
        check(pgn_tensor_count(g) == (size_t)n && pgn_tensor_count(v) == (size_t)n, "sgd", "shape", err))
        return -1;
    if (!w->dev) {
        float s = F32(scale)[1];
        for (int i = 0; i < n; i++) pgn_sgd_elem(F32(w) + i, F32(v) + i, F32(g)[i] * s, lr, mu, nest, wd);
        return 0;
    }
    pgn_karg args[] = {KARG(n),  KARG(w->mem), KARG(g->mem), KARG(v->mem), KARG(scale->mem),
                       KARG(lr), KARG(mu),     KARG(nest),   KARG(wd)};
    return PGN_LAUNCH(w->dev, sgd_update, args, 1, GLOBAL1(n), NULL, err);
}

int pgn_op_adam_update(pgn_tensor *w, const pgn_tensor *g, pgn_tensor *m, pgn_tensor *v,
                       const pgn_tensor *scale, const pgn_adam_args *a, pgn_error *err) {
    int n = (int)pgn_tensor_count(w), dec = a->decoupled;
    if (check(same_dev(w, g) && same_dev(w, m) && same_dev(w, v) && same_dev(w, scale), "adam",
              "tensors on different devices", err) ||
        check(pgn_tensor_count(g) == (size_t)n && pgn_tensor_count(m) == (size_t)n &&
                  pgn_tensor_count(v) == (size_t)n,
              "adam", "shape", err))
        return -1;
    if (!w->dev) {
        float s = F32(scale)[1];
        for (int i = 0; i < n; i++)
            pgn_adam_elem(F32(w) + i, F32(m) + i, F32(v) + i, F32(g)[i] * s, a->lr, a->b1, a->b2,
                          a->eps, a->bc1, a->bc2, a->wd, dec);
        return 0;
    }
    pgn_karg args[] = {KARG(n),       KARG(w->mem), KARG(g->mem), KARG(m->mem), KARG(v->mem),
                       KARG(scale->mem), KARG(a->lr), KARG(a->b1), KARG(a->b2), KARG(a->eps),
                       KARG(a->bc1),  KARG(a->bc2), KARG(a->wd), KARG(dec)};
    return PGN_LAUNCH(w->dev, adam_update, args, 1, GLOBAL1(n), NULL, err);
}
