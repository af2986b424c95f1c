/* lang_compile.c: pgl's syntax tree to HVM2 text (docs/language.md, "How it compiles"). An
 * expression becomes a tree whose root is its value's port, plus redexes; a variable used n times
 * has a tree of n - 1 DUP nodes at its binder (an eraser when unused); a switch's branches that
 * hold redexes become definitions of their own, closed over their free variables, so a
 * recursive branch unfolds only when the switch takes it. Output order and names depend on the
 * source alone: the same program gives the same text, byte for byte. */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet/inet.h"
#include "lang/lang.h"
#include "lang/lang_compile.h"

char *pglc_fail(compiler *c, const pgl_expr *e, const char *fmt, ...) {
    if (c->failed) return NULL;
    c->failed = true;
    va_list ap;
    va_start(ap, fmt);
    pgl_error_at(c->err, e->line, e->col, fmt, ap);
    va_end(ap);
    return NULL;
}

static char *text_of(compiler *c, pgn_text *t) {
    char *s = pgn_text_take(t);
    if (!s && !c->failed) {
        c->failed = true;
        pgn_error_set(c->err, PGN_E_OUT_OF_MEMORY, "", "out of memory compiling the program");
    }
    return s;
}

static char *fresh_wire(compiler *c) {
    pgn_text t = {0};
    pgn_text_printf(&t, "v%d", c->fresh++);
    return text_of(c, &t);
}

/* Adds the redex `left ~ right` (both printf'd) to u. */
void pglc_push_redex(compiler *c, unit *u, const char *left, const char *fmt, ...) {
    if (c->failed) return;
    if (u->n == u->cap) {
        int cap = u->cap ? 2 * u->cap : 16;
        char **l = realloc(u->left, (size_t)cap * sizeof *l);
        if (l) u->left = l;
        char **r = l ? realloc(u->right, (size_t)cap * sizeof *r) : NULL;
        if (r) u->right = r;
        if (!l || !r) {
            text_of(c, &(pgn_text){.oom = true});
            return;
        }
        u->cap = cap;
    }
    pgn_text t = {0};
    va_list ap;
    va_start(ap, fmt);
    char buf[512];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf) { /* long: format again into a buffer of its size */
        char *big = malloc((size_t)n + 1);
        va_start(ap, fmt);
        if (big) vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        if (big) pgn_text_puts(&t, big);
        free(big);
        if (!big) t.oom = true;
    } else {
        pgn_text_puts(&t, buf);
    }
    char *right = text_of(c, &t), *lcopy = strdup(left);
    if (!right || !lcopy) {
        free(right);
        free(lcopy);
        text_of(c, &(pgn_text){.oom = true});
        return;
    }
    u->left[u->n] = lcopy, u->right[u->n] = right, u->n++;
}

binder *pglc_lookup(binder *scope, const char *name) {
    for (; scope; scope = scope->up)
        if (!strcmp(scope->name, name)) return scope;
    return NULL;
}

/* A new use of b: its wire's name. */
static char *use(compiler *c, binder *b) {
    char *w = fresh_wire(c);
    if (!w) return NULL;
    if (b->n_uses == b->cap_uses) {
        int cap = b->cap_uses ? 2 * b->cap_uses : 4;
        char **grown = realloc(b->uses, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(w);
            return text_of(c, &(pgn_text){.oom = true});
        }
        b->uses = grown, b->cap_uses = cap;
    }
    b->uses[b->n_uses++] = w;
    char *copy = strdup(w);
    return copy ? copy : text_of(c, &(pgn_text){.oom = true});
}

/* The tree at b's binding site: * for no use, the use's wire for one, DUP nodes for more
 * ({u1 {u2 u3}}). Frees the uses. */
char *pglc_binder_tree(compiler *c, binder *b) {
    pgn_text t = {0};
    if (!b->n_uses) pgn_text_puts(&t, "*");
    for (int i = 0; i < b->n_uses; i++) {
        if (i + 1 < b->n_uses) pgn_text_printf(&t, "{%s ", b->uses[i]);
        else pgn_text_puts(&t, b->uses[i]);
    }
    for (int i = 0; i + 1 < b->n_uses; i++) pgn_text_puts(&t, "}");
    for (int i = 0; i < b->n_uses; i++) free(b->uses[i]);
    free(b->uses);
    b->uses = NULL, b->n_uses = b->cap_uses = 0;
    return text_of(c, &t);
}

/* ---- free variables of a switch's branches ---------------------------------------------- */

typedef struct {
    const char **names;
    int n, cap;
    bool oom;
} name_list;

static bool listed(const name_list *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->names[i], name)) return true;
    return false;
}

static void list_add(name_list *l, const char *name) {
    if (listed(l, name) || l->oom) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        const char **grown = realloc(l->names, (size_t)cap * sizeof *grown);
        if (!grown) {
            l->oom = true;
            return;
        }
        l->names = grown, l->cap = cap;
    }
    l->names[l->n++] = name;
}

/* The names e uses that `bound` (a chain of names bound inside e) does not bind and the scope
 * does, in order of first use. */
typedef struct bound {
    const char *name;
    const struct bound *up;
} bound;

static bool is_bound(const bound *b, const char *name) {
    for (; b; b = b->up)
        if (b->name && !strcmp(b->name, name)) return true;
    return false;
}

static void free_vars(const pgl_expr *e, const bound *inner, binder *scope, name_list *out) {
    if (!e) return;
    switch (e->kind) {
    case PGL_NUM: return;
    case PGL_VAR:
        if (!is_bound(inner, e->name) && pglc_lookup(scope, e->name)) list_add(out, e->name);
        return;
    case PGL_LAM: {
        bound b = {e->name, inner};
        free_vars(e->a, &b, scope, out);
        return;
    }
    case PGL_LET: {
        free_vars(e->a, inner, scope, out);
        bound b = {e->name, inner};
        free_vars(e->b, &b, scope, out);
        return;
    }
    case PGL_SWITCH: {
        free_vars(e->a, inner, scope, out);
        free_vars(e->b, inner, scope, out);
        bound b = {e->name, inner};
        free_vars(e->c, &b, scope, out);
        return;
    }
    case PGL_MATCH:
        free_vars(e->a, inner, scope, out);
        for (int k = 0; k < e->n_cases; k++) {
            bound b[64];
            const bound *in = inner;
            for (int i = 0; i < e->cases[k].n_names && i < 64; i++) {
                b[i] = (bound){e->cases[k].names[i], in};
                in = &b[i];
            }
            free_vars(e->cases[k].body, in, scope, out);
        }
        return;
    case PGL_APP:
    case PGL_OP:
    case PGL_PAIR:
        free_vars(e->a, inner, scope, out);
        free_vars(e->b, inner, scope, out);
        return;
    case PGL_LIST:
        for (int i = 0; i < e->n_items; i++) free_vars(e->items[i], inner, scope, out);
        return;
    case PGL_TEXT: return;
    }
}

/* ---- expressions ------------------------------------------------------------------------ */

char *pglc_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e);

/* The tree of a closed term \params. body (params[0] outermost; NULL names an unused one),
 * with its redexes in *redexes. */
static char *closed(compiler *c, const char *const *params, int n, const pgl_expr *body, char **redexes);
static char *lambda_ref(compiler *c, const pgl_expr *e);

/* A new definition `@TOP__cN = tree redexes`, emitted now; its reference. Frees tree, redexes. */
static char *lift(compiler *c, char *tree, char *redexes) {
    pgn_text t = {0};
    pgn_text_printf(&t, "@%s__c%d", c->top, c->lifted++);
    char *ref = text_of(c, &t);
    if (ref) pgn_text_printf(&c->out, "%s = %s%s\n", ref, tree, redexes);
    free(tree);
    free(redexes);
    return ref;
}

/* A switch's branch as a tree to sit in the switch node: inline when it is a leaf (a number or a
 * reference, nothing to erase when the other branch is taken), else a lifted definition's
 * reference, built only when taken (inlining fib's inner switch cost 1 % more interactions). */
static char *branch(compiler *c, const char *const *params, int n, const pgl_expr *body) {
    char *redexes = NULL, *tree = closed(c, params, n, body, &redexes);
    if (!tree) {
        free(redexes);
        return NULL;
    }
    if (!*redexes && !strpbrk(tree, "({$?")) { /* a number, a reference, an eraser: no nodes to erase */
        free(redexes);
        return tree;
    }
    return lift(c, tree, redexes);
}

/* The tree of a closed term's leading lambdas and body: \a b. e is closed({a, b}, e). */
static char *closed_lambdas(compiler *c, const pgl_expr *e, char **redexes) {
    const char *params[256];
    int n = 0;
    while (e->kind == PGL_LAM && n < 256) params[n++] = e->name, e = e->a;
    return closed(c, params, n, e, redexes);
}

/* A lambda with no free variable: inline when it holds no redex and no DUP node; otherwise a
 * definition of its own, so that the calls in its body wait until it is applied (sum's
 * \l r. sum(l) + sum(r), built inline, would unfold sum forever), and so that a copy of a lambda
 * that copies its argument is HVM2's clear error ("attempt to clone a non-affine global
 * reference") where, inline, HVM2's one DUP label gave a wrong result (twice(\x. x * x, 3)
 * read back a free variable). */
static char *lambda_ref(compiler *c, const pgl_expr *e) {
    char *redexes = NULL, *tree = closed_lambdas(c, e, &redexes);
    if (!tree || (!*redexes && !strchr(tree, '{'))) {
        free(redexes);
        return tree;
    }
    return lift(c, tree, redexes);
}

/* The branches of a switch (two: zero, and the rest taking the value less one) or a match (one
 * per constructor, taking its fields), each closed over the enclosing variables it uses and
 * applied to their values at the site: `value ~ ?((B0 B1) chain)` for a switch, `value ~ (B0 (B1
 * .. chain))` for a match, chain = (fv1 (fv2 .. r)) and r the result. */
typedef struct {
    const char *const *names; /* what the branch binds first (NULL entries: unused) */
    int n_names;
    const pgl_expr *body;
} arm;

static char *branches(compiler *c, unit *u, binder *scope, const pgl_expr *e, const arm *arms, int n, bool is_switch) {
    char *value = pglc_expr(c, u, scope, e->a);
    if (!value) return NULL;
    name_list fv = {0};
    int most = 0;
    for (int k = 0; k < n; k++) {
        bound b[64];
        const bound *inner = NULL;
        for (int i = 0; i < arms[k].n_names && i < 64; i++) {
            b[i] = (bound){arms[k].names[i], inner};
            inner = &b[i];
        }
        free_vars(arms[k].body, inner, scope, &fv);
        if (arms[k].n_names > most) most = arms[k].n_names;
    }
    const char **params = fv.oom ? NULL : calloc((size_t)(most + fv.n) + 1, sizeof *params);
    char **trees = calloc((size_t)n + 1, sizeof *trees), *result = NULL;
    pgn_text site = {0};
    if (!params || !trees) {
        pglc_fail(c, e, "out of memory");
        goto done;
    }
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < arms[k].n_names; i++) params[i] = arms[k].names[i];
        for (int i = 0; i < fv.n; i++) params[arms[k].n_names + i] = fv.names[i];
        if (!(trees[k] = branch(c, params, arms[k].n_names + fv.n, arms[k].body))) goto done;
    }
    if (!(result = fresh_wire(c))) goto done;
    if (is_switch) pgn_text_printf(&site, "?((%s %s) ", trees[0], trees[1]);
    else
        for (int k = 0; k < n; k++) pgn_text_printf(&site, "(%s ", trees[k]);
    for (int i = 0; i < fv.n; i++) {
        char *w = use(c, pglc_lookup(scope, fv.names[i]));
        if (!w) goto done;
        pgn_text_printf(&site, "(%s ", w);
        free(w);
    }
    pgn_text_puts(&site, result);
    for (int i = 0; i < fv.n + (is_switch ? 1 : n); i++) pgn_text_puts(&site, ")");
    char *tree = text_of(c, &site);
    if (!tree) goto done;
    pglc_push_redex(c, u, value, "%s", tree);
    free(tree);
done:
    free(pgn_text_take(&site));
    free(value);
    for (int k = 0; trees && k < n; k++) free(trees[k]);
    free(trees);
    free(params);
    free(fv.names);
    if (c->failed) {
        free(result);
        return NULL;
    }
    return result;
}

static char *switch_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    const char *pred[1] = {e->name}; /* the default branch takes the value less one first */
    const arm arms[2] = {{NULL, 0, e->b}, {pred, 1, e->c}};
    return branches(c, u, scope, e, arms, 2, true);
}

/* let (x, y, z) = t; body: `T ~ (X (Y Z))`, the pairs taken apart where they meet (one
 * annihilation each), the names bound in body. */
static char *unpair_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    const pgl_case *k = &e->cases[0];
    char *value = pglc_expr(c, u, scope, e->a);
    binder *bs = value ? calloc((size_t)k->n_names, sizeof *bs) : NULL;
    if (!bs) {
        free(value);
        return c->failed ? NULL : pglc_fail(c, e, "out of memory");
    }
    binder *in = scope;
    for (int i = 0; i < k->n_names; i++) bs[i] = (binder){.name = k->names[i], .up = in}, in = &bs[i];
    char *body = pglc_expr(c, u, in, k->body);
    pgn_text t = {0};
    for (int i = 0; i < k->n_names; i++) {
        char *bt = pglc_binder_tree(c, &bs[i]);
        if (bt) pgn_text_printf(&t, i + 1 < k->n_names ? "(%s " : "%s", bt);
        free(bt);
    }
    for (int i = 0; i + 1 < k->n_names; i++) pgn_text_puts(&t, ")");
    char *pattern = text_of(c, &t);
    if (body && pattern) pglc_push_redex(c, u, value, "%s", pattern);
    free(pattern);
    free(value);
    free(bs);
    if (c->failed) {
        free(body);
        return NULL;
    }
    return body;
}

static char *match_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    if (!strcmp(e->cases[0].ctor, "%tuple")) return unpair_expr(c, u, scope, e);
    arm *arms = calloc((size_t)e->n_cases + 1, sizeof *arms);
    if (!arms) return pglc_fail(c, e, "out of memory");
    for (int k = 0; k < e->n_cases; k++)
        arms[k] = (arm){(const char *const *)e->cases[k].names, e->cases[k].n_names, e->cases[k].body};
    char *r = branches(c, u, scope, e, arms, e->n_cases, false);
    free(arms);
    return r;
}

/* a op n (or n op a) with a number n: one operator node holding n, `a ~ $([op' n] r)`. HVM2's
 * [op n] computes n op a, so a op n takes the operator with its operands swapped: the same for
 * + * == != & | ^, the flipped :- :/ :% :<< :>> for the others, > for < and < for >. */
static char *op_with_number(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    static const struct {
        const char *op, *swapped;
    } SWAP[] = {{"+", "+"},   {"*", "*"},   {"=", "="},   {"!", "!"}, {"&", "&"},  {"|", "|"},  {"^", "^"},
                {"-", ":-"},  {"/", ":/"},  {"%", ":%"},  {"<", ">"}, {">", "<"}, {"<<", ":<<"}, {">>", ":>>"}};
    bool number_right = e->b->kind == PGL_NUM;
    const pgl_expr *n = number_right ? e->b : e->a, *other = number_right ? e->a : e->b;
    const char *op = e->op;
    if (number_right)
        for (size_t i = 0; i < sizeof SWAP / sizeof *SWAP; i++)
            if (!strcmp(SWAP[i].op, e->op)) op = SWAP[i].swapped;
    char *lit = pglc_expr(c, u, scope, n), *x = lit ? pglc_expr(c, u, scope, other) : NULL, *r = x ? fresh_wire(c) : NULL;
    if (r) pglc_push_redex(c, u, x, "$([%s%s] %s)", op, lit, r);
    free(lit);
    free(x);
    return r;
}

/* [a, b, ..]: compiled as Cons(a, Cons(b, .. Nil)) would be, in the same order (the items, then
 * Nil, then each Cons from the last), but in a loop: each Cons(item, rest) is a call whose
 * arguments are the texts already compiled, so a long literal costs no stack. */
static char *list_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    char **vals = calloc((size_t)e->n_items + 1, sizeof *vals), *rest = NULL;
    if (!vals) return pglc_fail(c, e, "out of memory");
    for (int i = 0; i < e->n_items && !c->failed; i++) vals[i] = pglc_expr(c, u, scope, e->items[i]);
    pgl_expr nil = {.kind = PGL_VAR, .line = e->line, .col = e->col, .name = "Nil"};
    if (!c->failed) rest = pglc_expr(c, u, scope, &nil);
    for (int i = e->n_items - 1; i >= 0 && rest; i--) {
        pgl_expr head = {.kind = PGL_VAR, .line = e->line, .col = e->col, .name = "Cons"};
        pgl_expr item = {.kind = PGL_TEXT, .line = e->line, .col = e->col, .name = vals[i]};
        pgl_expr tail = {.kind = PGL_TEXT, .line = e->line, .col = e->col, .name = rest};
        pgl_expr partial = {.kind = PGL_APP, .line = e->line, .col = e->col, .a = &head, .b = &item};
        pgl_expr call = {.kind = PGL_APP, .line = e->line, .col = e->col, .a = &partial, .b = &tail};
        char *next = pglc_expr(c, u, scope, &call);
        free(rest);
        rest = next;
    }
    for (int i = 0; i < e->n_items; i++) free(vals[i]);
    free(vals);
    return rest;
}

/* Whether the caller's stop asks the compile to end (looked at every POLL_EVERY expressions):
 * then c has failed with PGN_E_CANCELLED or PGN_E_LIMIT_EXCEEDED. */
#define POLL_EVERY 4096u
static bool stopped(compiler *c) {
    if (!c->stop || ++c->polls < POLL_EVERY) return false;
    c->polls = 0;
    if (c->stop->should_stop && c->stop->should_stop(c->stop->ctx)) {
        c->failed = true;
        pgn_error_set(c->err, PGN_E_CANCELLED, "", "stopped while compiling the program");
    } else if (c->stop->deadline_s > 0 && pgn_now_s() >= c->stop->deadline_s) {
        c->failed = true;
        pgn_error_set(c->err, PGN_E_LIMIT_EXCEEDED, "limits.timeout_s", "timeout_s: reached while compiling the program");
    }
    return c->failed;
}

static char *expr_at(compiler *c, unit *u, binder *scope, const pgl_expr *e);

char *pglc_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    if (c->failed || stopped(c)) return NULL;
    c->depth++;
    char *v = expr_at(c, u, scope, e);
    c->depth--;
    return v;
}

static char *expr_at(compiler *c, unit *u, binder *scope, const pgl_expr *e) {
    switch (e->kind) {
    case PGL_NUM: {
        uint32_t value;
        const char *why = NULL;
        if (pgn_inet_numb_parse(e->name, strlen(e->name), &value, &why))
            return pglc_fail(c, e, "invalid number '%s': %s", e->name, why);
        if (!strchr(e->name, '.')) { /* an integer: in its type's range, not wrapped */
            long long v = strtoll(e->name, NULL, 10);
            bool i24 = e->name[0] == '+' || e->name[0] == '-';
            if (i24 ? v < -8388608 || v > 8388607 : v > 16777215)
                return pglc_fail(c, e, "invalid number '%s': %s", e->name,
                            i24 ? "an i24 lies in -8388608 .. +8388607" : "a u24 lies in 0 .. 16777215");
        }
        char *s = strdup(e->name);
        return s ? s : pglc_fail(c, e, "out of memory");
    }
    case PGL_VAR: {
        binder *b = pglc_lookup(scope, e->name);
        if (b) return use(c, b);
        int d = pgl_def_index(c->prog, e->name);
        bool value = d >= 0 && c->prog->defs[d].body->kind != PGL_LAM;
        if (value && c->value_size[d] < 0) {
            bool lifts = false;
            c->value_size[d] = pglc_tree_size(c->prog->defs[d].body, &lifts);
        }
        /* main's own value (main = big, big = [..]) is written out whatever its size and the
         * budget (not past the depth that bounds the stack): it is used once (each definition at
         * most once on the way down), and a reference left at the root would never be expanded */
        bool at_root = e == c->root;
        if (value && c->depth <= INLINE_MAX_DEPTH &&
            (at_root || (c->value_size[d] <= VALUE_INLINE_MAX_NODES && c->value_size[d] <= c->inline_left))) {
            c->inline_left -= c->value_size[d];
            /* a value, not a function: its net here (a reference alone would stay one, unexpanded,
             * as nothing applies it) */
            if (c->expanding[d])
                return pglc_fail(c, e, "'%s' is defined by itself (only functions may be recursive)", e->name);
            c->expanding[d] = true;
            if (at_root) c->root = c->prog->defs[d].body;
            char *v = pglc_expr(c, u, NULL, c->prog->defs[d].body);
            c->expanding[d] = false;
            return v;
        }
        if (d >= 0) {
            pgn_text t = {0};
            pgn_text_printf(&t, "@%s", e->name);
            return text_of(c, &t);
        }
        return pglc_fail(c, e, "unknown name '%s' (not a parameter, a let or a definition)", e->name);
    }
    case PGL_LAM: {
        name_list fv = {0};
        free_vars(e, NULL, scope, &fv);
        free(fv.names);
        if (!fv.n && !fv.oom) return lambda_ref(c, e);
        binder b = {.name = e->name, .up = scope};
        char *body = pglc_expr(c, u, &b, e->a);
        char *bt = pglc_binder_tree(c, &b);
        pgn_text t = {0};
        if (body && bt) pgn_text_printf(&t, "(%s %s)", bt, body);
        free(body);
        free(bt);
        if (c->failed) {
            free(pgn_text_take(&t));
            return NULL;
        }
        return text_of(c, &t);
    }
    case PGL_LET: {
        char *value = pglc_expr(c, u, scope, e->a);
        binder b = {.name = e->name, .up = scope};
        char *body = value ? pglc_expr(c, u, &b, e->b) : NULL;
        char *bt = pglc_binder_tree(c, &b);
        if (body && bt) pglc_push_redex(c, u, value, "%s", bt);
        free(value);
        free(bt);
        if (c->failed) {
            free(body);
            return NULL;
        }
        return body;
    }
    case PGL_OP:
        if (!e->b) { /* a cast: the value meets an operator node holding the type's symbol */
            char *x = pglc_expr(c, u, scope, e->a), *r = x ? fresh_wire(c) : NULL;
            if (r) pglc_push_redex(c, u, x, "$([%s] %s)", e->op, r);
            free(x);
            return r;
        }
        if (e->b->kind == PGL_NUM || e->a->kind == PGL_NUM) return op_with_number(c, u, scope, e);
        /* fall through */
    case PGL_APP: {
        char *inlined = NULL;
        if (e->kind == PGL_APP && pglc_too_many_args(c, scope, e)) return NULL;
        if (pglc_try_inline(c, u, scope, e, &inlined)) return inlined;
        char *f = pglc_expr(c, u, scope, e->a);
        char *x = f ? pglc_expr(c, u, scope, e->b) : NULL;
        char *r = x ? fresh_wire(c) : NULL;
        if (r) {
            if (e->kind == PGL_APP) pglc_push_redex(c, u, f, "(%s %s)", x, r);
            else pglc_push_redex(c, u, f, "$([%s] $(%s %s))", e->op, x, r);
        }
        free(f);
        free(x);
        return r;
    }
    case PGL_SWITCH: return switch_expr(c, u, scope, e);
    case PGL_MATCH: return match_expr(c, u, scope, e);
    case PGL_LIST: return list_expr(c, u, scope, e);
    case PGL_TEXT: {
        char *s = strdup(e->name);
        return s ? s : pglc_fail(c, e, "out of memory");
    }
    case PGL_PAIR: {
        char *l = pglc_expr(c, u, scope, e->a), *r = l ? pglc_expr(c, u, scope, e->b) : NULL;
        pgn_text t = {0};
        if (r) pgn_text_printf(&t, "(%s %s)", l, r);
        free(l);
        free(r);
        if (c->failed) {
            free(pgn_text_take(&t));
            return NULL;
        }
        return text_of(c, &t);
    }
    }
    return pglc_fail(c, e, "unknown expression");
}

/* ---- wires joined ------------------------------------------------------------------------
 * A redex with a bare wire on one side (v ~ T) only says that the wire's other end is T: T goes
 * there and the redex goes away. fib's `@fib = (v0 v9) & v0 ~ ?(...)` becomes
 * `@fib = (?(...) v9) v9)`, as it would be written by hand: one interaction less a call. */

static bool is_wire(const char *s) {
    if (s[0] != 'v' || !s[1]) return false;
    for (const char *p = s + 1; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

static bool wire_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
}

/* text with the wire w (as a whole token, not a reference's name) replaced by with; NULL when w
 * is not in text (or no memory: *oom). */
static char *replace_wire(const char *text, const char *w, const char *with, bool *oom) {
    size_t wl = strlen(w);
    for (const char *p = strstr(text, w); p; p = strstr(p + 1, w)) {
        if (p > text && (wire_char(p[-1]) || p[-1] == '@')) continue;
        if (wire_char(p[wl])) continue;
        pgn_text t = {0};
        pgn_text_put(&t, text, (size_t)(p - text));
        pgn_text_puts(&t, with);
        pgn_text_puts(&t, p + wl);
        char *r = pgn_text_take(&t);
        if (!r) *oom = true;
        return r;
    }
    return NULL;
}

/* Joins every wire redex of u into the tree or redex holding the wire's other end. */
static void join_wires(compiler *c, char **root, unit *u) {
    bool oom = false;
    for (int i = 0; i < u->n && !oom;) {
        bool joined = false;
        for (int side = 0; side < 2 && !joined; side++) {
            char *w = side ? u->right[i] : u->left[i], *other = side ? u->left[i] : u->right[i];
            if (!is_wire(w)) continue;
            char **slots[64];
            int n_slots = 0;
            slots[n_slots++] = root;
            for (int j = 0; j < u->n && n_slots + 2 <= 64; j++)
                if (j != i) slots[n_slots++] = &u->left[j], slots[n_slots++] = &u->right[j];
            for (int k = 0; k < n_slots && !joined; k++) {
                char *r = replace_wire(*slots[k], w, other, &oom);
                if (!r) continue;
                free(*slots[k]);
                *slots[k] = r;
                joined = true;
            }
            if (n_slots == 64) break; /* a unit this large keeps its wire redexes: still correct */
        }
        if (!joined) {
            i++;
            continue;
        }
        free(u->left[i]);
        free(u->right[i]);
        u->n--;
        memmove(u->left + i, u->left + i + 1, (size_t)(u->n - i) * sizeof *u->left);
        memmove(u->right + i, u->right + i + 1, (size_t)(u->n - i) * sizeof *u->right);
    }
    if (oom) text_of(c, &(pgn_text){.oom = true});
}

static void unit_free(unit *u) {
    for (int i = 0; i < u->n; i++) free(u->left[i]), free(u->right[i]);
    free(u->left);
    free(u->right);
}

static char *closed(compiler *c, const char *const *params, int n, const pgl_expr *body, char **redexes) {
    *redexes = NULL;
    binder *bs = calloc((size_t)n + 1, sizeof *bs);
    if (!bs) return pglc_fail(c, body, "out of memory");
    binder *scope = NULL;
    for (int i = 0; i < n; i++) {
        bs[i].name = params[i] ? params[i] : ""; /* "" is no name a source can use */
        bs[i].up = scope;
        scope = &bs[i];
    }
    unit u = {0};
    char *tree = pglc_expr(c, &u, scope, body);
    pgn_text t = {0};
    for (int i = 0; i < n; i++) {
        char *bt = pglc_binder_tree(c, &bs[i]);
        if (bt) pgn_text_printf(&t, "(%s ", bt);
        free(bt);
    }
    if (tree) pgn_text_puts(&t, tree);
    for (int i = 0; i < n; i++) pgn_text_puts(&t, ")");
    free(tree);
    free(bs);
    char *whole = text_of(c, &t);
    if (!c->failed && whole) join_wires(c, &whole, &u);
    pgn_text r = {0};
    for (int i = 0; i < u.n; i++) pgn_text_printf(&r, "\n  & %s ~ %s", u.left[i], u.right[i]);
    unit_free(&u);
    char *rs = text_of(c, &r);
    if (c->failed || !rs || !whole) {
        free(rs);
        free(whole);
        return NULL;
    }
    *redexes = rs;
    return whole;
}

/* ---- the whole program, on a stack of its own (pgl_on_stack, lang_stack.c) ------------------ */

typedef struct {
    const char *src;
    size_t len;
    const pgn_pgl_stop *stop;
    pgn_error *err;
    char *out;
} compile_call;

static void compile_program(void *arg) {
    compile_call *call = arg;
    pgn_error *err = call->err;
    pgl_program prog;
    if (pgl_parse(call->src, call->len, &prog, err)) return;
    if (pgl_check_copies(&prog, err)) {
        pgl_program_free(&prog);
        return;
    }
    compiler c = {.prog = &prog, .err = err, .expanding = calloc((size_t)prog.n_defs + 1, sizeof(bool)),
                  .inlining = calloc((size_t)prog.n_defs + 1, sizeof(bool)), .inline_left = INLINE_BUDGET_BASE + (int)(call->len > INT_MAX / 4 ? INT_MAX / 4 : call->len) * INLINE_BUDGET_PER_BYTE,
                  .stop = call->stop};
    c.value_size = malloc(((size_t)prog.n_defs + 1) * sizeof *c.value_size);
    if (!c.expanding || !c.inlining || !c.value_size) text_of(&c, &(pgn_text){.oom = true});
    for (int i = 0; c.value_size && i < prog.n_defs; i++) c.value_size[i] = -1;
    for (int i = 0; i < prog.n_defs && !c.failed; i++) {
        const pgl_def *d = &prog.defs[i];
        c.top = d->name, c.fresh = 0, c.lifted = 0;
        c.root = strcmp(d->name, "main") ? NULL : d->body;
        char *redexes = NULL, *tree = closed_lambdas(&c, d->body, &redexes);
        if (tree) pgn_text_printf(&c.out, "@%s = %s%s\n", d->name, tree, redexes);
        free(tree);
        free(redexes);
    }
    pgl_program_free(&prog);
    free(c.expanding);
    free(c.inlining);
    free(c.value_size);
    call->out = c.failed ? NULL : text_of(&c, &c.out);
    if (c.failed) free(pgn_text_take(&c.out));
}

char *pgn_pgl_compile_until(const char *src, size_t len, const pgn_pgl_stop *stop, pgn_error *err) {
    compile_call call = {src, len, stop, err, NULL};
    if (pgl_on_stack(compile_program, &call)) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "no thread to compile the program on");
        return NULL;
    }
    return call.out;
}

char *pgn_pgl_compile(const char *src, size_t len, pgn_error *err) { return pgn_pgl_compile_until(src, len, NULL, err); }
