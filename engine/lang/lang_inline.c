/* lang_inline.c: small functions written out where they are called, and the check of a call
 * that passes more arguments than its function takes (docs/language.md, "How it compiles"). The
 * budgets are in lang_compile.h. */
#include <stdio.h>
#include <string.h>

#include "lang/lang_compile.h"

int pglc_tree_size(const pgl_expr *e, bool *lifts) {
    if (!e) return 0;
    if (e->kind == PGL_SWITCH || (e->kind == PGL_MATCH && strcmp(e->cases[0].ctor, "%tuple"))) *lifts = true;
    int n = 1 + pglc_tree_size(e->a, lifts) + pglc_tree_size(e->b, lifts) + pglc_tree_size(e->c, lifts);
    for (int k = 0; e->kind == PGL_MATCH && k < e->n_cases; k++) n += pglc_tree_size(e->cases[k].body, lifts);
    for (int i = 0; i < e->n_items; i++) n += 3 + pglc_tree_size(e->items[i], lifts); /* Cons(item, ..) */
    return n;
}

static bool calls(const pgl_expr *e, const char *name) {
    if (!e) return false;
    if (e->kind == PGL_VAR && !strcmp(e->name, name)) return true;
    for (int k = 0; e->kind == PGL_MATCH && k < e->n_cases; k++)
        if (calls(e->cases[k].body, name)) return true;
    for (int i = 0; i < e->n_items; i++)
        if (calls(e->items[i], name)) return true;
    if (e->kind == PGL_LIST && (!strcmp(name, "Cons") || !strcmp(name, "Nil"))) return true;
    return calls(e->a, name) || calls(e->b, name) || calls(e->c, name);
}

/* Whether e's value is certainly no function: a number, an operator's result, a tuple, a list
 * (what a call's extra arguments would be applied to). */
static bool no_function(const pgl_expr *e) {
    switch (e->kind) {
    case PGL_NUM:
    case PGL_OP:
    case PGL_PAIR:
    case PGL_LIST: return true;
    case PGL_LET: return no_function(e->b);
    case PGL_SWITCH: return no_function(e->b) && no_function(e->c);
    case PGL_MATCH:
        for (int k = 0; k < e->n_cases; k++)
            if (!no_function(e->cases[k].body)) return false;
        return true;
    default: return false;
    }
}

/* A call of a definition or a lambda with more arguments than it takes, when what it gives is
 * no function: the error (double(3, 4) with double(x) = x + x ran, and gave 6). */
bool pglc_too_many_args(compiler *c, binder *scope, const pgl_expr *e) {
    int n_args = 0;
    const pgl_expr *head = e;
    for (; head->kind == PGL_APP; head = head->a) n_args++;
    const pgl_expr *body = head;
    if (head->kind == PGL_VAR) {
        int d = pglc_lookup(scope, head->name) ? -1 : pgl_def_index(c->prog, head->name);
        if (d < 0) return false;
        body = c->prog->defs[d].body;
    } else if (head->kind != PGL_LAM) {
        return false;
    }
    int takes = 0;
    while (body->kind == PGL_LAM && takes < n_args) body = body->a, takes++;
    if (takes == n_args || !no_function(body)) return false;
    char what[80];
    if (head->kind == PGL_VAR) snprintf(what, sizeof what, "'%.60s'", head->name);
    else snprintf(what, sizeof what, "this function");
    pglc_fail(c, head, "%s takes %d argument%s, and this call passes %d", what, takes, takes == 1 ? "" : "s", n_args);
    return true;
}

/* True when e, a call, was compiled inline (its value in *out, NULL on an error). */
bool pglc_try_inline(compiler *c, unit *u, binder *scope, const pgl_expr *e, char **out) {
    const pgl_expr *args[64], *head = e;
    int n_args = 0;
    for (; head->kind == PGL_APP && n_args < 64; head = head->a) args[n_args++] = head->b;
    if (head->kind != PGL_VAR || pglc_lookup(scope, head->name)) return false;
    int d = pgl_def_index(c->prog, head->name);
    if (d < 0 || c->inlining[d]) return false;
    const pgl_expr *body = c->prog->defs[d].body;
    const char *params[64];
    int n = 0;
    while (body->kind == PGL_LAM && n < n_args) params[n++] = body->name, body = body->a;
    bool lifts = false; /* (body may still be a lambda: leaf(v) = \n f. f(v) called with v) */
    int size = pglc_tree_size(body, &lifts);
    if (!n || n != n_args || size > INLINE_MAX_NODES || lifts || calls(body, head->name) || size > c->inline_left ||
        c->depth > INLINE_MAX_DEPTH)
        return false;
    c->inline_left -= size;
    /* the arguments, in the caller's scope (args[] holds them last first) */
    char *vals[64];
    for (int i = 0; i < n; i++) vals[i] = NULL;
    for (int i = 0; i < n && !c->failed; i++) vals[i] = pglc_expr(c, u, scope, args[n - 1 - i]);
    binder bs[64];
    binder *in = NULL; /* the body sees its parameters and the definitions, nothing of the caller's */
    for (int i = 0; i < n; i++) bs[i] = (binder){.name = params[i], .up = in}, in = &bs[i];
    c->inlining[d] = true;
    char *v = c->failed ? NULL : pglc_expr(c, u, in, body);
    c->inlining[d] = false;
    for (int i = 0; i < n; i++) {
        char *bt = pglc_binder_tree(c, &bs[i]);
        if (bt && vals[i] && v) pglc_push_redex(c, u, vals[i], "%s", bt);
        free(bt);
        free(vals[i]);
    }
    if (c->failed) {
        free(v);
        v = NULL;
    }
    *out = v;
    return true;
}

