/* inet_plan.c: each definition of a book compiled into the steps of kernels/pgn_inet_plan.h
 * (pgn_inet_plan_book, at parse time), and those steps written as OpenCL C, one function per
 * definition, for the reducer's kernel (pgn_inet_plan_source).
 *
 * The walk follows HVM2's gen-c (its cmp.rs): the root against b first, then each redex, and
 * within a node its second port before its first, so that a definition's result variable,
 * usually the root's second port, is bound to the caller's wire before the body reaches it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet/inet.h"

#include "pgn_inet_dev.h"
#include "pgn_inet_plan.h"

/* Definitions nested deeper than this are interpreted (the walk below recurses). */
#define PLAN_MAX_DEPTH 256u

typedef struct {
    const pgn_inet_book *book;
    const pgn_inet_def *def;
    uint32_t *steps; /* the book's, grown */
    size_t len, cap; /* in steps */
    uint32_t regs;
    bool *seen, *forced; /* per variable: an end met; always allocated (an operator's first port) */
    uint32_t *stack;     /* def_depth's: (port, depth) pairs */
    bool oom;
} planner;

static void emit(planner *p, uint32_t code, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e) {
    if (p->oom) return;
    if (p->len == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        uint32_t *grown = realloc(p->steps, cap * PGN_INET_STEP_WORDS * sizeof *grown);
        if (!grown) {
            p->oom = true;
            return;
        }
        p->steps = grown;
        p->cap = cap;
    }
    uint32_t *s = p->steps + p->len++ * PGN_INET_STEP_WORDS;
    s[0] = code, s[1] = a, s[2] = b, s[3] = c, s[4] = d, s[5] = e;
}

static uint32_t reg(planner *p) { return p->regs++; }

static uint64_t def_node(const planner *p, uint32_t port) { return p->book->nodes[p->def->node_off + pgn_inet_val(port)]; }

/* Steps that connect the definition's port t to register x; build: x surely holds NONE (a port
 * being built for its parent), so nothing is matched. Returns the most redexes these steps may
 * queue: a link queues at most one, and a node either interacts (its ports go on: theirs) or
 * is built and linked (one). Recursive, over a tree no deeper than PLAN_MAX_DEPTH (def_depth). */
static uint32_t plan_link(planner *p, uint32_t t, uint32_t x, bool build) {
    uint32_t tag = pgn_inet_tag(t);
    if (tag == PGN_INET_VAR) {
        uint32_t v = pgn_inet_val(t), r = PGN_INET_REG_VARS + v;
        if (p->seen[v]) {
            emit(p, PGN_INET_STEP_VAR2, r, x, 0, 0, 0);
            return build ? 0 : 1;
        }
        p->seen[v] = true;
        emit(p, p->forced[v] ? PGN_INET_STEP_VAR1A : PGN_INET_STEP_VAR1, r, x, 0, 0, 0);
        return 0; /* a first end links only a new variable */
    }
    if (tag < PGN_INET_CON) {
        emit(p, PGN_INET_STEP_LIT, t, x, 0, 0, 0);
        return build ? 0 : 1;
    }
    uint64_t node = def_node(p, t);
    uint32_t t1 = pgn_inet_fst(node), t2 = pgn_inet_snd(node), made = build ? 0 : 1, matched;
    if (tag == PGN_INET_SWI && pgn_inet_tag(t1) == PGN_INET_CON && !build) {
        uint64_t branches = def_node(p, t1);
        uint32_t r = reg(p), xa = reg(p), xb = reg(p), f = reg(p), c = reg(p);
        plan_link(p, t2, r, true);
        emit(p, PGN_INET_STEP_MATCH_SWI, x, r, xa, xb, f);
        matched = plan_link(p, pgn_inet_snd(branches), xb, false);
        matched += plan_link(p, pgn_inet_fst(branches), xa, false);
        emit(p, PGN_INET_STEP_MAKE, PGN_INET_CON, xa, xb, c, f);
        emit(p, PGN_INET_STEP_MAKE, PGN_INET_SWI, c, r, x, f);
        return matched > made ? matched : made;
    }
    uint32_t x1 = reg(p), x2 = reg(p), f = PGN_INET_REG_NEVER;
    if (build || (tag == PGN_INET_OPR && pgn_inet_tag(t1) != PGN_INET_NUM)) {
        /* nothing to match (an operator's first port, when not a number, is kept as stored) */
        plan_link(p, t2, x2, true);
        plan_link(p, t1, x1, true);
        matched = 0;
    } else if (tag == PGN_INET_OPR) {
        f = reg(p);
        emit(p, PGN_INET_STEP_LIT, t1, x1, 0, 0, 0);
        emit(p, PGN_INET_STEP_MATCH_OPR, pgn_inet_val(t1), x, x2, f, 0);
        matched = plan_link(p, t2, x2, false);
    } else {
        f = reg(p);
        emit(p, PGN_INET_STEP_MATCH, tag, x, x1, x2, f);
        matched = plan_link(p, t2, x2, false);
        matched += plan_link(p, t1, x1, false);
    }
    emit(p, PGN_INET_STEP_MAKE, tag, x1, x2, x, f);
    return matched > made ? matched : made;
}

/* How deep the definition's trees nest (its root and redexes at depth 1), iteratively: the
 * parser takes any depth. */
static uint32_t def_depth(planner *p, const pgn_inet_def *d) {
    const pgn_inet_book *b = p->book;
    size_t top = 0;
    uint32_t most = 0;
    p->stack[top++] = d->root, p->stack[top++] = 1;
    for (uint32_t i = 0; i < d->rbag_len; i++) {
        uint64_t rx = b->rbag[d->rbag_off + i];
        p->stack[top++] = pgn_inet_fst(rx), p->stack[top++] = 1;
        p->stack[top++] = pgn_inet_snd(rx), p->stack[top++] = 1;
    }
    while (top) {
        uint32_t depth = p->stack[--top], port = p->stack[--top];
        if (depth > most) most = depth;
        if (pgn_inet_tag(port) < PGN_INET_CON) continue;
        uint64_t node = b->nodes[d->node_off + pgn_inet_val(port)];
        p->stack[top++] = pgn_inet_fst(node), p->stack[top++] = depth + 1;
        p->stack[top++] = pgn_inet_snd(node), p->stack[top++] = depth + 1;
    }
    return most;
}

/* When port is an operator whose first port is a variable, that variable is always allocated. */
static void mark_operand(planner *p, uint32_t port) {
    if (pgn_inet_tag(port) != PGN_INET_OPR) return;
    uint32_t first = pgn_inet_fst(def_node(p, port));
    if (pgn_inet_tag(first) == PGN_INET_VAR) p->forced[pgn_inet_val(first)] = true;
}

/* A definition's plan, or none (plan_len 0: its CALL is interpreted) when it nests too deep. */
static void plan_def(planner *p, pgn_inet_def *d) {
    const pgn_inet_book *b = p->book;
    p->def = d;
    p->regs = PGN_INET_REG_VARS + d->vars_len;
    memset(p->seen, 0, d->vars_len * sizeof *p->seen);
    memset(p->forced, 0, d->vars_len * sizeof *p->forced);
    /* an operator's first port: the ports pointing at OPR nodes say which nodes are operators */
    mark_operand(p, d->root);
    for (uint32_t i = 0; i < d->node_len; i++) {
        mark_operand(p, pgn_inet_fst(b->nodes[d->node_off + i]));
        mark_operand(p, pgn_inet_snd(b->nodes[d->node_off + i]));
    }
    for (uint32_t i = 0; i < d->rbag_len; i++) {
        mark_operand(p, pgn_inet_fst(b->rbag[d->rbag_off + i]));
        mark_operand(p, pgn_inet_snd(b->rbag[d->rbag_off + i]));
    }
    d->plan_off = (uint32_t)p->len;
    d->plan_len = d->plan_regs = 0;
    d->links = d->rbag_len + 1; /* the interpreted CALL's: each redex, and the root */
    if (def_depth(p, d) > PLAN_MAX_DEPTH) return;
    uint32_t links = plan_link(p, d->root, PGN_INET_REG_B, false);
    emit(p, PGN_INET_STEP_ROOT_END, 0, 0, 0, 0, 0);
    for (uint32_t i = 0; i < d->rbag_len; i++) {
        uint64_t rx = b->rbag[d->rbag_off + i];
        uint32_t x = reg(p), l = pgn_inet_fst(rx), r = pgn_inet_snd(rx);
        if (pgn_inet_tag(l) == PGN_INET_REF) { /* a REF matches nothing: r is built, then linked */
            plan_link(p, r, x, true);
            links += plan_link(p, l, x, false);
        } else {
            plan_link(p, l, x, true);
            links += plan_link(p, r, x, false);
        }
    }
    d->plan_len = (uint32_t)p->len - d->plan_off;
    d->plan_regs = p->regs;
    if (links > d->links) d->links = links;
}

int pgn_inet_plan_book(pgn_inet_book *book, pgn_error *err) {
    planner p = {.book = book};
    uint32_t vars = book->max_def_vars ? book->max_def_vars : 1;
    p.seen = malloc(vars * sizeof *p.seen);
    p.forced = malloc(vars * sizeof *p.forced);
    /* every port of the largest definition at once: its nodes' two, its redexes' two, its root */
    size_t ports = 2 * ((size_t)book->max_def_nodes + book->max_def_rbag + 1);
    p.stack = malloc(2 * ports * sizeof *p.stack);
    if (!p.seen || !p.forced || !p.stack) p.oom = true;
    for (uint32_t fid = 0; fid < book->n_defs && !p.oom; fid++) {
        plan_def(&p, &book->defs[fid]);
        if (book->defs[fid].plan_regs > book->max_plan_regs) book->max_plan_regs = book->defs[fid].plan_regs;
        if (book->defs[fid].links > book->max_def_links) book->max_def_links = book->defs[fid].links;
    }
    free(p.seen);
    free(p.forced);
    free(p.stack);
    if (p.oom || p.len > UINT32_MAX) {
        free(p.steps);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory compiling the program's definitions");
        return -1;
    }
    book->plan = p.steps;
    book->n_plan = (uint32_t)p.len;
    return 0;
}

pgn_inet_plans pgn_inet_plans_mode(void) {
    const char *v = getenv("PARAGON_INET_PLANS");
    if (v && !strcmp(v, "0")) return PGN_INET_PLANS_OFF;
    if (v && !strcmp(v, "now")) return PGN_INET_PLANS_NOW;
    return PGN_INET_PLANS_ON;
}

/* ---- the plans as OpenCL C ------------------------------------------------------------------
 * The kernel interprets any plan (kernels/inet.cl); a program's own build of it also has its
 * small definitions compiled in, inlined into the worker's loop: each step's own code
 * (PGN_INET_DO_<code>, kernels/pgn_inet_plan.h) with constant operands, and the worker's state
 * and the registers in machine registers across the CALL. pocl on 2 work-items: fib32 220-275
 * MIPS so, 150-176 with the definitions compiled but called, 110-120 interpreted; stress_10
 * 340-410, 245-265, 130-140.
 *
 * The compiler's time grows with the loop's size: pocl on a 2-core Xeon takes 4-5 s for the loop
 * alone, then about 0.1 s a step inlined (all of sort_bitonic's 490 steps: 78 s and 900 MB;
 * called instead of inlined, 0.04 s a step: train_xor's 4740, 136 s). So the smallest
 * definitions are compiled, up to CODE_DEF_STEPS each and CODE_BOOK_STEPS in all, @main never
 * (it runs once): the bodies of a program's loops are small, its tables are not. */
#define CODE_DEF_STEPS 48u
#define CODE_BOOK_STEPS 128u

typedef struct {
    char *text;
    size_t len, cap;
    bool oom;
} code;

static void put(code *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(code *c, const char *fmt, ...) {
    if (c->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->text ? c->text + c->len : NULL, c->text ? c->cap - c->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            c->oom = true;
            return;
        }
        if (c->text && c->len + (size_t)n < c->cap) {
            c->len += (size_t)n;
            return;
        }
        size_t cap = c->cap ? 2 * c->cap : 1 << 16;
        while (cap <= c->len + (size_t)n) cap *= 2;
        char *grown = realloc(c->text, cap);
        if (!grown) {
            c->oom = true;
            return;
        }
        c->text = grown;
        c->cap = cap;
    }
}

/* Which definitions are compiled (chosen[fid]): the smallest first, within the limits above. */
static uint32_t choose(const pgn_inet_book *book, bool *chosen) {
    uint32_t budget = CODE_BOOK_STEPS, n = 0;
    for (uint32_t len = 1; len <= CODE_DEF_STEPS; len++)
        for (uint32_t fid = 1; fid < book->n_defs; fid++)
            if (book->defs[fid].plan_len == len && len <= budget && book->defs[fid].plan_regs <= PGN_INET_PLAN_REGS) {
                chosen[fid] = true;
                budget -= len;
                n++;
            }
    return n;
}

char *pgn_inet_plan_source(const pgn_inet_book *book, uint32_t *n_compiled) {
    code c = {0};
    bool *chosen = calloc(book->n_defs, sizeof *chosen);
    if (!chosen) return NULL;
    *n_compiled = choose(book, chosen);
    put(&c, "/* %u of %u definitions, compiled by engine/inet/inet_plan.c */\n", *n_compiled, book->n_defs);
    for (uint32_t fid = 0; fid < book->n_defs; fid++) {
        const pgn_inet_def *d = &book->defs[fid];
        if (!chosen[fid]) continue;
        put(&c, "INET_HOT void inet_def_%u(inet_w *w, pgn_u32 b) { /* @%s */\n", fid, d->name);
        put(&c, "    pgn_u32 k[%u], start = PGN_INET_BAG_TOP(w), mid = start;\n", d->plan_regs);
        put(&c, "    pgn_inet_plan_start(k, %uu, b);\n", d->plan_regs);
        const uint32_t *s = book->plan + (size_t)d->plan_off * PGN_INET_STEP_WORDS;
        for (uint32_t i = 0; i < d->plan_len; i++, s += PGN_INET_STEP_WORDS)
            put(&c, "    PGN_INET_DO_%u(w, k, mid, %uu, %uu, %uu, %uu, %uu);\n", s[0], s[1], s[2], s[3], s[4], s[5]);
        put(&c, "    pgn_inet_plan_order(w, start, mid);\n}\n");
    }
    put(&c, "INET_HOT bool inet_call_compiled(inet_w *w, pgn_u32 fid, pgn_u32 b) {\n    switch (fid) {\n");
    for (uint32_t fid = 0; fid < book->n_defs; fid++)
        if (chosen[fid]) put(&c, "    case %uu: inet_def_%u(w, b); return true;\n", fid, fid);
    put(&c, "    }\n    return false;\n}\n");
    free(chosen);
    if (c.oom) {
        free(c.text);
        return NULL;
    }
    return c.text;
}
