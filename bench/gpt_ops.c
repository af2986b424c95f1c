/* gpt_ops.c: time of the transformer ops (embedding, LayerNorm, causal self-attention), forward and
 * backward, at the char-GPT's shapes (B = 32 sequences of T = 64 tokens, C = 128, H = 4, V = 65)
 * on the first OpenCL device, with each result checked bit for bit against the host reference.
 * A repeat queues the op CALLS times and waits once, as a training step does; a call's time is
 * the repeat's over CALLS, and the median of the repeats is printed.
 *   build/bench/bench-gpt-ops [--repeats N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "pgn_math.h"

#define CALLS 10
#define MAX_REPEATS 200

enum { B = 32, T = 64, C = 128, H = 4, V = 65, ROWS = B * T };

static void die(const char *what, const pgn_error *err) {
    fprintf(stderr, "bench-gpt-ops: %s: %s\n", what, err->message);
    exit(1);
}

/* A tensor on the host and its copy on the device. */
typedef struct {
    pgn_tensor h, d;
} pair;

static void pair_init(pair *p, pgn_device *dev, int rows, int cols, uint64_t seed, float scale) {
    pgn_error err = {0};
    size_t n = (size_t)rows * cols;
    float *v = malloc(n * sizeof *v);
    if (!v) exit(1);
    for (size_t i = 0; i < n; i++) v[i] = (pgn_rand_unit(seed, 7, i) * 2.0f - 1.0f) * scale;
    if (pgn_tensor_init(&p->h, NULL, rows, cols, &err) || pgn_tensor_init(&p->d, dev, rows, cols, &err) ||
        pgn_tensor_write(&p->h, v, n, &err) || pgn_tensor_write(&p->d, v, n, &err))
        die("tensor", &err);
    free(v);
}

static void pair_release(pair *p) {
    pgn_tensor_release(&p->h);
    pgn_tensor_release(&p->d);
}

static void check_same(const pair *p, const char *what) {
    pgn_error err = {0};
    size_t n = pgn_tensor_count(&p->h);
    float *d = malloc(n * sizeof *d);
    if (!d || pgn_tensor_read(&p->d, d, n, &err)) die(what, &err);
    if (memcmp(d, p->h.host, n * sizeof *d)) {
        fprintf(stderr, "bench-gpt-ops: %s differs between the host and the device\n", what);
        exit(1);
    }
    free(d);
}

/* The tensors of every op, host and device. */
typedef struct {
    pair tok, wte, wpe, emb, dwte, dwpe;          /* embedding */
    pair x, lw, lb, ln, stats, dx, dlw, dlb;      /* LayerNorm */
    pair qkv, att, y, dy, scratch, dqkv;          /* attention */
} tensors;

typedef enum { EMBED, LAYERNORM, ATTENTION } op_kind;

/* Queues (or on the host runs) one op's forward (when fwd) and backward (when bwd). */
static void run(op_kind op, tensors *t, bool dev, bool fwd, bool bwd) {
    pgn_error err = {0};
#define S(p) (dev ? &t->p.d : &t->p.h)
    int rc = 0;
    switch (op) {
    case EMBED:
        if (fwd) rc |= pgn_op_embed_forward(ROWS, T, S(tok), S(wte), S(wpe), S(emb), &err);
        if (bwd) rc |= pgn_op_embed_backward(ROWS, T, S(tok), S(emb), S(dwte), S(dwpe), &err);
        break;
    case LAYERNORM:
        if (fwd) rc |= pgn_op_layernorm_forward(ROWS, S(x), S(lw), S(lb), S(ln), S(stats), &err);
        if (bwd)
            rc |= pgn_op_layernorm_backward(ROWS, S(x), S(lw), S(stats), S(dy), S(dx), S(dlw), S(dlb), false, NULL, &err);
        break;
    case ATTENTION:
        if (fwd) rc |= pgn_op_attention_forward(ROWS, T, H, S(qkv), S(att), S(y), &err);
        if (bwd) rc |= pgn_op_attention_backward(ROWS, T, H, S(qkv), S(att), S(dy), S(scratch), S(dqkv), &err);
        break;
    }
#undef S
    if (rc) die("op", &err);
}

/* Median milliseconds per call of the op on the device. */
static double time_ms(pgn_device *dev, op_kind op, tensors *t, bool fwd, bool bwd, int repeats) {
    pgn_error err = {0};
    double s[MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        double t0 = pgn_now_s();
        for (int c = 0; c < CALLS; c++) run(op, t, true, fwd, bwd);
        if (pgn_device_finish(dev, &err)) die("finish", &err);
        s[r] = (pgn_now_s() - t0) / CALLS;
    }
    return pgn_median(s, (size_t)repeats) * 1e3;
}

int main(int argc, char **argv) {
    int repeats = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench-gpt-ops [--repeats N]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > MAX_REPEATS) repeats = 20;
    pgn_error err = {0};
    pgn_device_info *list = NULL, info;
    size_t n = 0;
    pgn_device *dev = NULL;
    if (pgn_devices_list(&list, &n, &err) || pgn_device_select("auto", list, n, &info, &err) ||
        pgn_device_open(&info, &dev, &err))
        die("device", &err);
    free(list);

    tensors t;
    int32_t tokens[ROWS];
    for (int r = 0; r < ROWS; r++) tokens[r] = (int32_t)(pgn_rand64(3, 3, (uint64_t)r) % V);
    pair_init(&t.tok, dev, ROWS, 1, 1, 0.0f);
    if (pgn_tensor_write(&t.tok.h, tokens, ROWS, &err) || pgn_tensor_write(&t.tok.d, tokens, ROWS, &err))
        die("tokens", &err);
    pair_init(&t.wte, dev, V, C, 2, 0.1f);
    pair_init(&t.wpe, dev, T, C, 3, 0.1f);
    pair_init(&t.emb, dev, ROWS, C, 4, 1.0f);
    pair_init(&t.dwte, dev, V, C, 0, 0.0f);
    pair_init(&t.dwpe, dev, T, C, 0, 0.0f);
    pair_init(&t.x, dev, ROWS, C, 5, 2.0f);
    pair_init(&t.lw, dev, 1, C, 6, 1.0f);
    pair_init(&t.lb, dev, 1, C, 7, 1.0f);
    pair_init(&t.ln, dev, ROWS, C, 0, 0.0f);
    pair_init(&t.stats, dev, ROWS, 2, 0, 0.0f);
    pair_init(&t.dx, dev, ROWS, C, 0, 0.0f);
    pair_init(&t.dlw, dev, 1, C, 0, 0.0f);
    pair_init(&t.dlb, dev, 1, C, 0, 0.0f);
    pair_init(&t.qkv, dev, ROWS, 3 * C, 8, 1.0f);
    pair_init(&t.att, dev, B * H * T, T, 0, 0.0f);
    pair_init(&t.y, dev, ROWS, C, 0, 0.0f);
    pair_init(&t.dy, dev, ROWS, C, 9, 1.0f);
    pair_init(&t.scratch, dev, B * H * T, T, 0, 0.0f);
    pair_init(&t.dqkv, dev, ROWS, 3 * C, 0, 0.0f);

    static const struct {
        op_kind op;
        const char *name;
    } ops[] = {{EMBED, "embed"}, {LAYERNORM, "layernorm"}, {ATTENTION, "attention"}};
    printf("%s: B=%d T=%d C=%d H=%d V=%d, median of %d repeats of %d calls\n", info.id, B, T, C, H,
           V, repeats, CALLS);
    printf("%-10s %10s %10s %10s %10s\n", "op", "fwd ms", "bwd ms", "fwd+bwd", "host ms");
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        double h0 = pgn_now_s();
        run(ops[i].op, &t, false, true, true);
        double host_ms = (pgn_now_s() - h0) * 1e3;
        run(ops[i].op, &t, true, true, true);
        if (pgn_device_finish(dev, &err)) die("finish", &err);
        double f = time_ms(dev, ops[i].op, &t, true, false, repeats);
        double b = time_ms(dev, ops[i].op, &t, false, true, repeats);
        double fb = time_ms(dev, ops[i].op, &t, true, true, repeats);
        printf("%-10s %10.3f %10.3f %10.3f %10.1f\n", ops[i].name, f, b, fb, host_ms);
    }
    pair *outs[] = {&t.emb, &t.dwte, &t.dwpe, &t.ln, &t.stats, &t.dx, &t.dlw, &t.dlb, &t.att, &t.y,
                    &t.scratch, &t.dqkv};
    const char *names[] = {"embedding", "dwte", "dwpe", "layernorm", "stats", "dx", "dw", "db",
                           "att", "y", "scratch", "dqkv"};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) check_same(outs[i], names[i]);
    printf("every output bit-identical to the host reference\n");
    pair *all[] = {&t.tok, &t.wte, &t.wpe, &t.emb, &t.dwte, &t.dwpe, &t.x, &t.lw, &t.lb, &t.ln,
                   &t.stats, &t.dx, &t.dlw, &t.dlb, &t.qkv, &t.att, &t.y, &t.dy, &t.scratch, &t.dqkv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_release(all[i]);
    pgn_device_close(dev);
    return 0;
}
