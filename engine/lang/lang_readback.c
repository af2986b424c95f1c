/* lang_readback.c: a pgl program's normal form in pgl's own syntax: numbers as they are, lists
 * as [a, b], tuples as (a, b), other constructors as Name(a, b), read from the Scott encodings
 * the compiler gives them (docs/language.md). What is none of those (a function, a free
 * variable) has no pgl form, and the raw net stands. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"

/* A tree of the normal form's HVM2 text: leaves keep their text; binary nodes their kind. */
typedef struct tree {
    char kind; /* '(' CON, '{' DUP, '$' OPE, '?' SWI, '*' eraser, '@' reference, 'v' variable, '#' number */
    const char *text;
    size_t len;
    struct tree *l, *r;
} tree;

typedef struct {
    const char *s;
    size_t pos, len;
    tree *nodes;
    size_t n, cap;
} tparser;

static void blank(tparser *p) {
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\n' || p->s[p->pos] == '\t')) p->pos++;
}

static tree *tnode(tparser *p) { return p->n < p->cap ? &p->nodes[p->n++] : NULL; }

/* The normal form's text as a tree, with a stack of its own: a long list nests as deep as it is
 * long. NULL when the text is not one tree. */
static tree *parse_tree(tparser *p) {
    typedef struct {
        tree *t;
        bool left_done;
        char close;
    } open_node;
    open_node *stack = NULL;
    size_t n = 0, cap = 0;
    tree *root = NULL;
    for (;;) {
        blank(p);
        if (p->pos >= p->len) break;
        char c = p->s[p->pos];
        tree *t = tnode(p);
        if (!t) break;
        if (c == '(' || c == '{' || ((c == '$' || c == '?') && p->pos + 1 < p->len && p->s[p->pos + 1] == '(')) {
            t->kind = c;
            p->pos += c == '$' || c == '?' ? 2 : 1;
            if (n == cap) {
                size_t grown_cap = cap ? 2 * cap : 64;
                open_node *grown = realloc(stack, grown_cap * sizeof *grown);
                if (!grown) break;
                stack = grown, cap = grown_cap;
            }
            stack[n++] = (open_node){t, false, c == '{' ? '}' : ')'};
            continue;
        }
        size_t start = p->pos;
        if (c == '*') {
            p->pos++;
            t->kind = '*';
        } else {
            while (p->pos < p->len && !strchr(" \n\t(){}", p->s[p->pos])) {
                if (p->s[p->pos] == '[') { /* an operator or partial application: [+], [+0x01] */
                    while (p->pos < p->len && p->s[p->pos] != ']') p->pos++;
                }
                p->pos++;
            }
            if (p->pos == start) break;
            t->kind = c == '@' ? '@' : (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '[' ? '#' : 'v';
        }
        t->text = p->s + start;
        t->len = p->pos - start;
        /* t is whole: it fills the innermost open node, closing every node it completes */
        bool bad = false;
        while (n && stack[n - 1].left_done) {
            open_node *o = &stack[--n];
            o->t->r = t;
            blank(p);
            if (p->pos >= p->len || p->s[p->pos] != o->close) {
                bad = true;
                break;
            }
            p->pos++;
            t = o->t;
        }
        if (bad) break;
        if (!n) {
            root = t;
            break;
        }
        stack[n - 1].t->l = t, stack[n - 1].left_done = true;
    }
    free(stack);
    return root;
}

static bool same_var(const tree *a, const tree *b) {
    return a && b && a->kind == 'v' && b->kind == 'v' && a->len == b->len && !memcmp(a->text, b->text, a->len);
}

/* Whether t is (x1 (x2 .. (xk end))) with the variable `end` last: the fields into *fields. */
static bool applied(const tree *t, int k, const tree *end, const tree **fields) {
    for (int i = 0; i < k; i++) {
        if (t->kind != '(') return false;
        fields[i] = t->l;
        t = t->r;
    }
    return same_var(t, end);
}

static bool show(const pgl_program *prog, const tree *t, pgn_text *out, int depth);

static bool show_fields(const pgl_program *prog, const tree *const *fields, int k, pgn_text *out, int depth) {
    for (int i = 0; i < k; i++) {
        if (i) pgn_text_puts(out, ", ");
        if (!show(prog, fields[i], out, depth + 1)) return false;
    }
    return true;
}

/* t as constructor k of type ty (\c1 .. cn. ck(f1 .. fm)): its fields, or false. A nullary
 * constructor nothing applied is still its reference (@Nil). */
static bool as_ctor(const pgl_type *ty, int k, const tree *t, const tree **fields) {
    const tree *ports[64], *end;
    if (t->kind == '@')
        return ty->ctors[k].n_fields == 0 && t->len == strlen(ty->ctors[k].name) + 1 &&
               !memcmp(t->text + 1, ty->ctors[k].name, t->len - 1);
    int n = ty->n_ctors;
    if (n > 64) return false;
    for (int i = 0; i < n; i++) {
        if (t->kind != '(') return false;
        ports[i] = t->l;
        t = t->r;
    }
    end = t;
    if (end->kind != 'v') return false;
    for (int i = 0; i < n; i++)
        if (i != k && ports[i]->kind != '*') return false;
    int m = ty->ctors[k].n_fields;
    if (m > 64) return false;
    return m == 0 ? same_var(ports[k], end) : applied(ports[k], m, end, fields);
}

/* Whether t is a value of one of the program's types (not a plain pair). */
static bool ctor_value(const pgl_program *prog, const tree *t) {
    const tree *fields[64];
    for (int ty = 0; ty < prog->n_types; ty++)
        for (int k = 0; k < prog->types[ty].n_ctors; k++)
            if (as_ctor(&prog->types[ty], k, t, fields)) return true;
    return false;
}

static bool show(const pgl_program *prog, const tree *t, pgn_text *out, int depth) {
    if (depth > 2000) return false;
    if (t->kind == '#') {
        pgn_text_put(out, t->text, t->len);
        return true;
    }
    if (t->kind != '(' && t->kind != '@') return false;
    const tree *fields[64];
    /* Scott encodings say nothing of their type: Cons(h, t) has Rect(w, h)'s shape when both are
     * the second of two constructors with two fields. List is tried first, then the types in the
     * order declared (docs/language.md) */
    int list = -1;
    for (int ty = 0; ty < prog->n_types; ty++)
        if (!strcmp(prog->types[ty].name, "List")) list = ty;
    for (int o = -1; o < prog->n_types; o++) {
        int ty = o < 0 ? list : o;
        if (ty < 0 || (o >= 0 && o == list)) continue;
        const pgl_type *T = &prog->types[ty];
        for (int k = 0; k < T->n_ctors; k++) {
            if (!as_ctor(T, k, t, fields)) continue;
            if (!strcmp(T->name, "List") && !strcmp(T->ctors[k].name, "Cons") && T->n_ctors == 2) {
                /* [a, b, ..] while the tail is a Cons; Nil ends it */
                pgn_text_puts(out, "[");
                for (int i = 0;; i++) {
                    if (i) pgn_text_puts(out, ", ");
                    if (!show(prog, fields[0], out, depth + 1)) return false;
                    const tree *tail = fields[1], *next[2];
                    if (as_ctor(T, 0, tail, next)) break;
                    if (!as_ctor(T, 1, tail, next)) return false;
                    fields[0] = next[0], fields[1] = next[1];
                    if (i > 100000) return false;
                }
                pgn_text_puts(out, "]");
                return true;
            }
            if (!strcmp(T->name, "List") && !strcmp(T->ctors[k].name, "Nil")) {
                pgn_text_puts(out, "[]");
                return true;
            }
            pgn_text_puts(out, T->ctors[k].name);
            if (!T->ctors[k].n_fields) return true;
            pgn_text_puts(out, "(");
            if (!show_fields(prog, fields, T->ctors[k].n_fields, out, depth)) return false;
            pgn_text_puts(out, ")");
            return true;
        }
    }
    if (t->kind != '(') return false;
    /* a tuple: pairs (a (b c)), written (a, b, c) as the source nests them; a pair whose parts
     * have no pgl form (a lambda's binder and body) is no tuple */
    pgn_text_puts(out, "(");
    for (int i = 0;; i++) {
        if (i > 100000 || !show(prog, t->l, out, depth + 1)) return false;
        pgn_text_puts(out, ", ");
        if (t->r->kind == '(' && !ctor_value(prog, t->r)) { /* (a, (b, c)) is (a, b, c) */
            t = t->r;
            continue;
        }
        if (!show(prog, t->r, out, depth + 1)) return false;
        break;
    }
    pgn_text_puts(out, ")");
    return true;
}

typedef struct {
    const char *src, *normal_form;
    size_t len;
    char *shown;
} readback_call;

/* The reader recurses as deep as the program nests, and show and parse_tree as deep as the
 * normal form (to their bounds): on the compiler's stack (pgl_on_stack). */
static void readback(void *arg) {
    readback_call *call = arg;
    const char *normal_form = call->normal_form;
    pgl_program prog;
    pgn_error err = {0};
    if (pgl_parse(call->src, call->len, &prog, &err)) return;
    size_t nl = strlen(normal_form);
    tparser p = {.s = normal_form, .len = nl, .cap = nl + 1};
    p.nodes = calloc(p.cap, sizeof *p.nodes);
    char *shown = NULL;
    tree *t = p.nodes ? parse_tree(&p) : NULL;
    if (t) {
        blank(&p);
        pgn_text out = {0};
        if (p.pos == p.len && show(&prog, t, &out, 0)) shown = pgn_text_take(&out);
        else free(pgn_text_take(&out));
    }
    free(p.nodes);
    pgl_program_free(&prog);
    call->shown = shown;
}

char *pgn_pgl_readback(const char *src, size_t len, const char *normal_form) {
    readback_call call = {src, normal_form, len, NULL};
    return pgl_on_stack(readback, &call) ? NULL : call.shown;
}
