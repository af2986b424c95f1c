/* lang_parse.c: pgl's reader: source text to the syntax tree of lang.h, by recursive descent,
 * every error naming its line and column and what was expected there (docs/language.md has the
 * grammar). Nothing here knows about nets. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"

/* Expressions written inside each other deeper than this are refused (the reader recurses; the
 * tree it builds is bounded by PGL_MAX_TREE_DEPTH, checked once it is read). */
#define PGL_MAX_DEPTH 512

typedef struct {
    const char *src;
    size_t len, pos;
    pgl_program *prog;
    pgn_error *err;
    int depth;
    bool failed;
    size_t mark; /* the furthest position whose line and column are known: line_col goes on from it */
    int mark_line, mark_col;
    size_t back; /* the last position behind mark asked for (back_line 0: none yet) */
    int back_line, back_col;
} reader;

/* Counts lines and columns from the position `from` (at line, col) on to pos. */
static void count_on(const reader *r, size_t from, size_t pos, int *line, int *col) {
    for (size_t i = from; i < pos && i < r->len; i++) {
        if (r->src[i] == '\n') (*line)++, *col = 1;
        else if (((unsigned char)r->src[i] & 0xC0) != 0x80) (*col)++; /* columns count characters */
    }
}

/* The line and column of a byte position: counted on from the furthest one asked for when pos
 * lies past it (the reader moves forward). A position behind it (a call's '(' for each of its
 * arguments, a tuple's for each pair) is counted from the last such one, or from the start, and
 * remembered: asked again, it costs nothing (counting from the start each time made a call of
 * 5,600 arguments take seconds). */
static void line_col(reader *r, size_t pos, int *line, int *col) {
    if (pos >= r->mark) {
        *line = r->mark_line, *col = r->mark_col;
        count_on(r, r->mark, pos, line, col);
        r->mark = pos < r->len ? pos : r->len;
        r->mark_line = *line, r->mark_col = *col;
        return;
    }
    if (r->back_line && pos == r->back) {
        *line = r->back_line, *col = r->back_col;
        return;
    }
    size_t from = 0;
    *line = 1, *col = 1;
    if (r->back_line && r->back < pos) from = r->back, *line = r->back_line, *col = r->back_col;
    count_on(r, from, pos, line, col);
    r->back = pos, r->back_line = *line, r->back_col = *col;
}

void pgl_error_at(pgn_error *err, int line, int col, const char *fmt, va_list ap) {
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    pgn_error_set(err, PGN_E_INVALID_PROGRAM, "program", "line %d, column %d: %s", line, col, msg);
}

/* The first error at line and column; later ones (while the reader unwinds) are dropped. */
__attribute__((format(printf, 4, 5))) static int fail_lc(reader *r, int line, int col, const char *fmt, ...) {
    if (r->failed) return -1;
    r->failed = true;
    va_list ap;
    va_start(ap, fmt);
    pgl_error_at(r->err, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

/* The same at a byte position of the source. */
__attribute__((format(printf, 3, 4))) static int fail_at(reader *r, size_t pos, const char *fmt, ...) {
    if (r->failed) return -1;
    r->failed = true;
    int line, col;
    line_col(r, pos, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    pgl_error_at(r->err, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

static void *own(reader *r, size_t size) {
    pgl_program *p = r->prog;
    if (p->n_owned == p->cap_owned) {
        size_t cap = p->cap_owned ? 2 * p->cap_owned : 64;
        void **grown = realloc(p->owned, cap * sizeof *grown);
        if (!grown) return NULL;
        p->owned = grown, p->cap_owned = cap;
    }
    void *m = calloc(1, size);
    if (m) p->owned[p->n_owned++] = m;
    return m;
}

static char *own_text(reader *r, const char *s, size_t n) {
    char *t = own(r, n + 1);
    if (t) memcpy(t, s, n);
    return t;
}

/* ---- tokens ------------------------------------------------------------------------------- */

static void skip_trivia(reader *r) {
    while (r->pos < r->len) {
        char c = r->src[r->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') r->pos++;
        else if (c == '/' && r->pos + 1 < r->len && r->src[r->pos + 1] == '/')
            while (r->pos < r->len && r->src[r->pos] != '\n') r->pos++;
        else break;
    }
}

static bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
static bool digit(char c) { return c >= '0' && c <= '9'; }

static char peek(reader *r) {
    skip_trivia(r);
    return r->pos < r->len ? r->src[r->pos] : '\0';
}

/* Whether the next token is the text t (a keyword only when no name character follows). */
static bool at(reader *r, const char *t) {
    skip_trivia(r);
    size_t n = strlen(t);
    if (r->len - r->pos < n || memcmp(r->src + r->pos, t, n)) return false;
    return !(name_start(t[0]) && r->pos + n < r->len && name_char(r->src[r->pos + n]));
}

static bool accept(reader *r, const char *t) {
    if (!at(r, t)) return false;
    r->pos += strlen(t);
    return true;
}

/* What the reader is looking at, for "expected X, found Y". */
static void found(reader *r, char *out, size_t size) {
    skip_trivia(r);
    if (r->pos >= r->len) {
        snprintf(out, size, "the end of the program");
        return;
    }
    size_t n = 1;
    if (name_char(r->src[r->pos]))
        while (r->pos + n < r->len && name_char(r->src[r->pos + n]) && n < 24) n++;
    snprintf(out, size, "'%.*s'", (int)n, r->src + r->pos);
}

static int expect(reader *r, const char *t, const char *what) {
    if (accept(r, t)) return 0;
    char f[40];
    found(r, f, sizeof f);
    return fail_at(r, r->pos, "expected %s, found %s", what, f);
}

static const char *const KEYWORDS[] = {"let", "switch", "match", "type", "u24", "i24", "f24", NULL};

static bool keyword(const char *s, size_t n) {
    for (int i = 0; KEYWORDS[i]; i++)
        if (strlen(KEYWORDS[i]) == n && !memcmp(KEYWORDS[i], s, n)) return true;
    return false;
}

/* A name (not a keyword, not "_" alone): its text, or NULL with the error. */
static char *take_name(reader *r, const char *what) {
    skip_trivia(r);
    size_t start = r->pos;
    if (r->pos < r->len && name_start(r->src[r->pos]))
        while (r->pos < r->len && name_char(r->src[r->pos])) r->pos++;
    size_t n = r->pos - start;
    if (!n || keyword(r->src + start, n) || (n == 1 && r->src[start] == '_')) {
        r->pos = start;
        char f[40];
        found(r, f, sizeof f);
        fail_at(r, start, "expected %s, found %s", what, f);
        return NULL;
    }
    return own_text(r, r->src + start, n);
}

/* ---- expressions -------------------------------------------------------------------------- */

static pgl_expr *node(reader *r, pgl_kind kind, size_t pos) {
    pgl_expr *e = own(r, sizeof *e);
    if (!e) {
        fail_at(r, pos, "out of memory");
        return NULL;
    }
    e->kind = kind;
    line_col(r, pos, &e->line, &e->col);
    return e;
}

static pgl_expr *expr(reader *r);

static pgl_expr *var_at(reader *r, const char *name, size_t pos) {
    pgl_expr *v = node(r, PGL_VAR, pos);
    if (v && !(v->name = own_text(r, name, strlen(name)))) return NULL;
    return v;
}

static pgl_expr *app_at(reader *r, pgl_expr *f, pgl_expr *x, size_t pos) {
    pgl_expr *a = f && x ? node(r, PGL_APP, pos) : NULL;
    if (a) a->a = f, a->b = x;
    return a;
}

/* (a, b, c): the pairs (a, (b, c)), as HVM2 and Bend nest them. */
static pgl_expr *tuple_of(reader *r, pgl_expr **items, int n, size_t pos) {
    pgl_expr *t = items[n - 1];
    for (int i = n - 2; i >= 0 && t; i--) {
        pgl_expr *p = node(r, PGL_PAIR, pos);
        if (p) p->a = items[i], p->b = t;
        t = p;
    }
    return t;
}

/* At "let": whether a tuple follows (let (x, y) = ...); consumes "let" and "(" when it does. */
static bool let_tuple_ahead(reader *r) {
    size_t at_let = r->pos;
    r->pos += 3;
    if (peek(r) == '(') return accept(r, "(");
    r->pos = at_let;
    return false;
}

static pgl_case *new_cases(reader *r, int n) { return own(r, (size_t)(n ? n : 1) * sizeof(pgl_case)); }

/* A number: digits with an optional fraction (f24), signed (i24, or f24 with a fraction). */
static pgl_expr *number(reader *r, size_t start) {
    size_t p = r->pos;
    if (r->src[p] == '+' || r->src[p] == '-') p++;
    while (p < r->len && digit(r->src[p])) p++;
    if (p < r->len && r->src[p] == '.' && p + 1 < r->len && digit(r->src[p + 1])) {
        p++;
        while (p < r->len && digit(r->src[p])) p++;
    }
    if (p < r->len && name_char(r->src[p])) {
        fail_at(r, p, "a number ends at '%c' (write an operator between a number and a name)", r->src[p]);
        return NULL;
    }
    pgl_expr *e = node(r, PGL_NUM, start);
    if (e && !(e->name = own_text(r, r->src + r->pos, p - r->pos))) return NULL;
    r->pos = p;
    return e;
}

/* The cases of switch e { 0: a  1: b  _ k: c }, from after its '{': nested two-way switches,
 * case i in the zero branch of the i-th, the next in its other branch on the value less one
 * (a name no source can spell), and the default case last with k the value less the cases. */
static pgl_expr *switch_cases(reader *r, pgl_expr *scrutinee, size_t at_pos) {
    enum { MAX_CASES = 256 };
    pgl_expr *cases[MAX_CASES], *dflt = NULL;
    char *pred = NULL;
    int n = 0;
    for (;;) {
        skip_trivia(r);
        size_t pos = r->pos;
        if (accept(r, "_")) {
            if (n == 0) {
                fail_at(r, pos, "a switch's numbered cases come first, from 0: expected '0:', found '_'");
                return NULL;
            }
            if (peek(r) != ':' && !(pred = take_name(r, "a name for the value less the cases, or ':'"))) return NULL;
            if (expect(r, ":", "':' after the default case") || !(dflt = expr(r))) return NULL;
            accept(r, ";");
            if (expect(r, "}", "'}' after the default case '_' (it is the last)")) return NULL;
            break;
        }
        long value = -1; /* the case's number (the source is not NUL-terminated: no strtol) */
        for (size_t p = r->pos; p < r->len && digit(r->src[p]); p++)
            value = value < 0 ? r->src[p] - '0' : value < 1000000 ? value * 10 + (r->src[p] - '0') : value;
        if (value != n) {
            char f[40];
            found(r, f, sizeof f);
            if (n == 0) fail_at(r, pos, "expected the case '0:', found %s", f);
            else fail_at(r, pos, "expected the case '%d:' or the default case '_:', found %s", n, f);
            return NULL;
        }
        if (n == MAX_CASES) {
            fail_at(r, pos, "more than %d numbered cases", MAX_CASES);
            return NULL;
        }
        while (r->pos < r->len && digit(r->src[r->pos])) r->pos++;
        if (expect(r, ":", "':' after the case's number") || !(cases[n] = expr(r))) return NULL;
        n++;
        accept(r, ";");
        if (at(r, "}")) {
            fail_at(r, r->pos, "a switch ends with its default case '_:' (HVM2's switch has two branches)");
            return NULL;
        }
    }
    pgl_expr *top = NULL, **hole = &top;
    for (int i = 0; i < n; i++) {
        pgl_expr *sw = node(r, PGL_SWITCH, at_pos);
        if (!sw) return NULL;
        sw->a = scrutinee, sw->b = cases[i];
        *hole = sw;
        if (i == n - 1) {
            sw->name = pred, sw->c = dflt;
            break;
        }
        char tmp[24];
        snprintf(tmp, sizeof tmp, "%%less%d", i + 1); /* '%' starts no name: it cannot clash */
        pgl_expr *v = node(r, PGL_VAR, at_pos);
        if (!v || !(sw->name = own_text(r, tmp, strlen(tmp)))) return NULL;
        v->name = sw->name;
        scrutinee = v, hole = &sw->c;
    }
    return top;
}

static pgl_expr *primary(reader *r) {
    char c = peek(r);
    size_t pos = r->pos;
    pgl_expr *e = NULL;
    if (digit(c) || ((c == '+' || c == '-') && pos + 1 < r->len && digit(r->src[pos + 1]))) {
        e = number(r, pos);
    } else if (accept(r, "(")) { /* (e), or a tuple (a, b, ..) */
        enum { MAX_ITEMS = 64 };
        pgl_expr *items[MAX_ITEMS];
        int n = 0;
        do {
            if (n == MAX_ITEMS) {
                fail_at(r, r->pos, "a tuple of more than %d values", MAX_ITEMS);
                return NULL;
            }
            if (!(items[n++] = expr(r))) return NULL;
        } while (accept(r, ","));
        if (expect(r, ")", "',' or ')'")) return NULL;
        e = n == 1 ? items[0] : tuple_of(r, items, n, pos);
    } else if (accept(r, "[")) { /* [a, b]: Cons(a, Cons(b, Nil)) */
        r->prog->uses_list = true;
        enum { MAX_ITEMS = 4096 };
        if (!(e = node(r, PGL_LIST, pos)) || !(e->items = own(r, MAX_ITEMS * sizeof *e->items))) return NULL;
        if (!at(r, "]")) do {
                if (e->n_items == MAX_ITEMS) {
                    fail_at(r, r->pos, "a list literal of more than %d values", MAX_ITEMS);
                    return NULL;
                }
                if (!(e->items[e->n_items++] = expr(r))) return NULL;
            } while (accept(r, ","));
        if (expect(r, "]", "',' or ']'")) return NULL;
    } else if (accept(r, "match")) {
        e = node(r, PGL_MATCH, pos);
        if (!e || !(e->a = expr(r)) || expect(r, "{", "'{' after the match's value")) return NULL;
        enum { MAX_CASES = 256 };
        if (!(e->cases = new_cases(r, MAX_CASES))) return NULL;
        while (!accept(r, "}")) {
            if (e->n_cases == MAX_CASES) {
                fail_at(r, r->pos, "more than %d cases", MAX_CASES);
                return NULL;
            }
            pgl_case *k = &e->cases[e->n_cases++];
            skip_trivia(r);
            line_col(r, r->pos, &k->line, &k->col);
            if (!(k->ctor = take_name(r, "a constructor's case (Name: or Name(fields):) or '}'"))) return NULL;
            if (accept(r, "(")) {
                if (!(k->names = own(r, 64 * sizeof *k->names))) return NULL;
                do {
                    if (k->n_names == 64) {
                        fail_at(r, r->pos, "more than 64 fields");
                        return NULL;
                    }
                    if (!(k->names[k->n_names++] = take_name(r, "a name for the field"))) return NULL;
                } while (accept(r, ","));
                if (expect(r, ")", "',' or ')' after a field's name")) return NULL;
            }
            if (expect(r, ":", "':' after the case's constructor") || !(k->body = expr(r))) return NULL;
            accept(r, ";");
        }
        if (!e->n_cases) {
            fail_at(r, pos, "a match needs its cases");
            return NULL;
        }
    } else if (at(r, "let") && let_tuple_ahead(r)) { /* let (x, y) = a; b */
        e = node(r, PGL_MATCH, pos);
        if (!e || !(e->cases = new_cases(r, 1))) return NULL;
        pgl_case *k = &e->cases[0];
        e->n_cases = 1;
        k->line = e->line, k->col = e->col;
        if (!(k->ctor = own_text(r, "%tuple", 6)) || !(k->names = own(r, 64 * sizeof *k->names))) return NULL;
        do {
            if (k->n_names == 64) {
                fail_at(r, r->pos, "more than 64 names");
                return NULL;
            }
            if (!(k->names[k->n_names++] = take_name(r, "a name in the let's tuple"))) return NULL;
        } while (accept(r, ","));
        if (expect(r, ")", "',' or ')' in the let's tuple") || expect(r, "=", "'=' after the let's tuple")) return NULL;
        if (!(e->a = expr(r)) || expect(r, ";", "';' after the let's value") || !(k->body = expr(r))) return NULL;
        return e;
    } else if (accept(r, "\\") || accept(r, "\xce\xbb")) { /* \x y. body or λx y. body */
        pgl_expr *top = NULL, **hole = &top;
        do {
            pgl_expr *lam = node(r, PGL_LAM, r->pos);
            if (!lam || !(lam->name = take_name(r, "a parameter name after the lambda"))) return NULL;
            *hole = lam, hole = &lam->a;
        } while (peek(r) != '.' && r->pos < r->len);
        if (expect(r, ".", "'.' after the lambda's parameters")) return NULL;
        if (!(*hole = expr(r))) return NULL;
        return top;
    } else if (accept(r, "let")) {
        e = node(r, PGL_LET, pos);
        if (!e || !(e->name = take_name(r, "a name after 'let'"))) return NULL;
        if (expect(r, "=", "'=' after the let's name")) return NULL;
        if (!(e->a = expr(r)) || expect(r, ";", "';' after the let's value")) return NULL;
        if (!(e->b = expr(r))) return NULL;
        return e;
    } else if (accept(r, "switch")) {
        pgl_expr *scrutinee = expr(r);
        if (!scrutinee || expect(r, "{", "'{' after the switch's value")) return NULL;
        return switch_cases(r, scrutinee, pos);
    } else if (at(r, "u24") || at(r, "i24") || at(r, "f24")) { /* a cast: f24(x) */
        e = node(r, PGL_OP, pos);
        if (!e) return NULL;
        memcpy(e->op, r->src + r->pos, 3);
        r->pos += 3;
        if (expect(r, "(", "'(' after a cast's type, as in f24(x)") || !(e->a = expr(r)) ||
            expect(r, ")", "')' after the cast's value"))
            return NULL;
    } else if (name_start(c)) {
        e = node(r, PGL_VAR, pos);
        if (e && !(e->name = take_name(r, "a name"))) return NULL;
    } else {
        char f[40];
        found(r, f, sizeof f);
        fail_at(r, pos, "expected an expression (a number, a name, '(', a lambda, let or switch), found %s", f);
        return NULL;
    }
    while (e && at(r, "(")) { /* calls: f(a, b) is f(a)(b) */
        size_t cpos = r->pos;
        accept(r, "(");
        do {
            pgl_expr *app = node(r, PGL_APP, cpos);
            if (!app) return NULL;
            app->a = e;
            if (!(app->b = expr(r))) return NULL;
            e = app;
        } while (accept(r, ","));
        if (expect(r, ")", "',' or ')' in the call")) return NULL;
    }
    return e;
}

/* Binary operators, loosest first (C's order); each with HVM2's name for it. */
static const struct {
    const char *text, *hvm;
} LEVELS[][3] = {
    {{"|", "|"}},
    {{"^", "^"}},
    {{"&", "&"}},
    {{"==", "="}, {"!=", "!"}},
    {{"<", "<"}, {">", ">"}},
    {{"<<", "<<"}, {">>", ">>"}},
    {{"+", "+"}, {"-", "-"}},
    {{"*", "*"}, {"/", "/"}, {"%", "%"}},
};
#define N_LEVELS ((int)(sizeof LEVELS / sizeof *LEVELS))

static pgl_expr *binary(reader *r, int level) {
    if (level == N_LEVELS) return primary(r);
    pgl_expr *left = binary(r, level + 1);
    while (left) {
        int k = -1;
        for (int i = 0; i < 3 && LEVELS[level][i].text; i++)
            if (at(r, LEVELS[level][i].text)) k = i;
        if (k >= 0 && !LEVELS[level][k].text[1] && (at(r, "<<") || at(r, ">>"))) k = -1; /* '<' of '<<' */
        if (k < 0) break;
        size_t pos = r->pos;
        r->pos += strlen(LEVELS[level][k].text);
        pgl_expr *e = node(r, PGL_OP, pos);
        if (!e) return NULL;
        memcpy(e->op, LEVELS[level][k].hvm, strlen(LEVELS[level][k].hvm) + 1);
        e->a = left;
        if (!(e->b = binary(r, level + 1))) return NULL;
        left = e;
    }
    return left;
}

static pgl_expr *expr(reader *r) {
    if (++r->depth > PGL_MAX_DEPTH) {
        fail_at(r, r->pos, "the expression nests deeper than %d", PGL_MAX_DEPTH);
        return NULL;
    }
    pgl_expr *e = binary(r, 0);
    r->depth--;
    return e;
}

/* ---- definitions -------------------------------------------------------------------------- */

int pgl_def_index(const pgl_program *prog, const char *name) {
    for (int i = 0; i < prog->n_defs; i++)
        if (!strcmp(prog->defs[i].name, name)) return i;
    return -1;
}

static int add_def(reader *r, char *name, pgl_expr *body, size_t pos) {
    pgl_program *p = r->prog;
    int twin = pgl_def_index(p, name);
    if (twin >= 0) return fail_at(r, pos, "'%s' is defined twice (first on line %d)", name, p->defs[twin].line);
    if (p->n_defs == p->cap_defs) {
        int cap = p->cap_defs ? 2 * p->cap_defs : 16;
        pgl_def *grown = realloc(p->defs, (size_t)cap * sizeof *grown);
        if (!grown) return fail_at(r, pos, "out of memory");
        p->defs = grown, p->cap_defs = cap;
    }
    pgl_def *d = &p->defs[p->n_defs++];
    d->name = name, d->body = body;
    line_col(r, pos, &d->line, &d->col);
    return 0;
}

/* Constructor k of t: \%f1 .. %fn. \%c1 .. %cm. %ck(%f1, .., %fn) ('%' starts no name). */
static int add_ctor_def(reader *r, const pgl_type *t, int k, size_t pos) {
    const pgl_ctor *c = &t->ctors[k];
    char name[16];
    snprintf(name, sizeof name, "%%c%d", k);
    pgl_expr *body = var_at(r, name, pos), *top = NULL, **hole = &top;
    for (int f = 0; f < c->n_fields && body; f++) {
        snprintf(name, sizeof name, "%%f%d", f);
        body = app_at(r, body, var_at(r, name, pos), pos);
    }
    for (int i = 0; i < c->n_fields + t->n_ctors && body; i++) {
        pgl_expr *lam = node(r, PGL_LAM, pos);
        if (i < c->n_fields) snprintf(name, sizeof name, "%%f%d", i);
        else snprintf(name, sizeof name, "%%c%d", i - c->n_fields);
        if (!lam || !(lam->name = own_text(r, name, strlen(name)))) return -1;
        *hole = lam, hole = &lam->a;
    }
    if (!body) return -1;
    *hole = body;
    return add_def(r, c->name, top, pos);
}

static pgl_type *new_type(reader *r, char *name, int n_ctors, size_t pos) {
    pgl_program *p = r->prog;
    for (int i = 0; i < p->n_types; i++)
        if (!strcmp(p->types[i].name, name)) {
            fail_at(r, pos, "the type '%s' is declared twice (first on line %d)", name, p->types[i].line);
            return NULL;
        }
    if (p->n_types == p->cap_types) {
        int cap = p->cap_types ? 2 * p->cap_types : 8;
        pgl_type *grown = realloc(p->types, (size_t)cap * sizeof *grown);
        if (!grown) {
            fail_at(r, pos, "out of memory");
            return NULL;
        }
        p->types = grown, p->cap_types = cap;
    }
    pgl_type *t = &p->types[p->n_types++];
    memset(t, 0, sizeof *t);
    t->name = name;
    int col;
    line_col(r, pos, &t->line, &col);
    if (!(t->ctors = own(r, (size_t)n_ctors * sizeof *t->ctors))) {
        fail_at(r, pos, "out of memory");
        return NULL;
    }
    return t;
}

/* type Name = A | B(x, y) | ..: the type and a definition per constructor. */
static int type_decl(reader *r, size_t pos) {
    enum { MAX_CTORS = 64 };
    char *name = take_name(r, "the type's name"), *ctor[MAX_CTORS];
    int fields[MAX_CTORS], n = 0;
    size_t at[MAX_CTORS];
    if (!name || expect(r, "=", "'=' after the type's name")) return -1;
    do {
        if (n == MAX_CTORS) return fail_at(r, r->pos, "more than %d constructors", MAX_CTORS);
        skip_trivia(r);
        at[n] = r->pos;
        if (!(ctor[n] = take_name(r, "a constructor's name"))) return -1;
        fields[n] = 0;
        if (accept(r, "(")) {
            do {
                if (!take_name(r, "a field's name")) return -1;
                fields[n]++;
            } while (accept(r, ","));
            if (expect(r, ")", "',' or ')' after a field's name")) return -1;
        }
        n++;
    } while (accept(r, "|"));
    pgl_type *t = new_type(r, name, n, pos);
    if (!t) return -1;
    for (int k = 0; k < n; k++) {
        t->ctors[k] = (pgl_ctor){.name = ctor[k], .n_fields = fields[k]};
        line_col(r, at[k], &t->ctors[k].line, &t->ctors[k].col);
    }
    t->n_ctors = n;
    for (int k = 0; k < n; k++)
        if (add_ctor_def(r, t, k, at[k])) return -1;
    return 0;
}

static int definition(reader *r) {
    skip_trivia(r);
    size_t pos = r->pos;
    if (accept(r, "type")) return type_decl(r, pos);
    char *name = take_name(r, "a definition (name = expression) or a type");
    if (!name) return -1;
    pgl_expr *top = NULL, **hole = &top;
    if (accept(r, "(")) { /* name(a, b) = body is name = \a b. body */
        do {
            pgl_expr *lam = node(r, PGL_LAM, r->pos);
            if (!lam || !(lam->name = take_name(r, "a parameter name"))) return -1;
            *hole = lam, hole = &lam->a;
        } while (accept(r, ","));
        if (expect(r, ")", "',' or ')' after a parameter")) return -1;
    }
    if (expect(r, "=", "'=' after the definition's name")) return -1;
    if (!(*hole = expr(r))) return -1;
    return add_def(r, name, top, pos);
}

/* ---- matches: their cases put in constructor order, once the types are all known ------------ */

const pgl_type *pgl_ctor_type(const pgl_program *p, const char *ctor, int *index) {
    for (int t = 0; t < p->n_types; t++)
        for (int k = 0; k < p->types[t].n_ctors; k++)
            if (!strcmp(p->types[t].ctors[k].name, ctor)) {
                if (index) *index = k;
                return &p->types[t];
            }
    return NULL;
}

static int resolve(reader *r, pgl_expr *e) {
    if (!e) return 0;
    if (e->kind == PGL_MATCH && strcmp(e->cases[0].ctor, "%tuple")) {
        int k0;
        const pgl_type *t = pgl_ctor_type(r->prog, e->cases[0].ctor, &k0);
        if (!t)
            return fail_lc(r, e->cases[0].line, e->cases[0].col, "'%s' is not a constructor (declare it: type T = %s | ..)",
                           e->cases[0].ctor, e->cases[0].ctor);
        pgl_case *ordered = new_cases(r, t->n_ctors);
        if (!ordered) return -1;
        for (int i = 0; i < e->n_cases; i++) {
            pgl_case *c = &e->cases[i];
            int k;
            if (pgl_ctor_type(r->prog, c->ctor, &k) != t)
                return fail_lc(r, c->line, c->col, "'%s' is not a constructor of %s", c->ctor, t->name);
            if (ordered[k].ctor) return fail_lc(r, c->line, c->col, "a second case for '%s'", c->ctor);
            if (c->n_names != t->ctors[k].n_fields) {
                return fail_lc(r, c->line, c->col, "'%s' has %d field%s, the case names %d", c->ctor,
                               t->ctors[k].n_fields, t->ctors[k].n_fields == 1 ? "" : "s", c->n_names);
            }
            ordered[k] = *c;
        }
        for (int k = 0; k < t->n_ctors; k++)
            if (!ordered[k].ctor) return fail_lc(r, e->line, e->col, "the match has no case for '%s' (of %s)", t->ctors[k].name, t->name);
        e->cases = ordered, e->n_cases = t->n_ctors;
    }
    for (int i = 0; e->kind == PGL_MATCH && i < e->n_cases; i++)
        if (resolve(r, e->cases[i].body)) return -1;
    for (int i = 0; i < e->n_items; i++)
        if (resolve(r, e->items[i])) return -1;
    return resolve(r, e->a) || resolve(r, e->b) || resolve(r, e->c) ? -1 : 0;
}

/* Refuses a definition whose tree nests deeper than PGL_MAX_TREE_DEPTH, naming the first node
 * past it; walked with a stack of its own, as nothing else may recurse before this holds. */
static int check_depth(reader *r, const pgl_expr *body) {
    typedef struct {
        const pgl_expr *e;
        int depth;
    } visit;
    size_t n = 0, cap = 256;
    visit *todo = malloc(cap * sizeof *todo);
    if (!todo) return fail_at(r, 0, "out of memory");
    todo[n++] = (visit){body, 1};
    int rc = 0;
    while (n && !rc) {
        visit v = todo[--n];
        if (v.depth > PGL_MAX_TREE_DEPTH) {
            rc = fail_lc(r, v.e->line, v.e->col,
                         "the expression nests deeper than %d levels (each operator of a chain, each argument "
                         "of a call and each parameter is a level: name parts with let or a definition)",
                         PGL_MAX_TREE_DEPTH);
            break;
        }
        size_t more = 3 + (size_t)v.e->n_cases + (size_t)v.e->n_items;
        if (n + more > cap) {
            while (n + more > cap) cap *= 2;
            visit *grown = realloc(todo, cap * sizeof *todo);
            if (!grown) {
                rc = fail_at(r, 0, "out of memory");
                break;
            }
            todo = grown;
        }
        const pgl_expr *kids[3] = {v.e->a, v.e->b, v.e->c};
        for (int i = 0; i < 3; i++)
            if (kids[i]) todo[n++] = (visit){kids[i], v.depth + 1};
        for (int i = 0; v.e->kind == PGL_MATCH && i < v.e->n_cases; i++) todo[n++] = (visit){v.e->cases[i].body, v.depth + 1};
        for (int i = 0; i < v.e->n_items; i++) todo[n++] = (visit){v.e->items[i], v.depth + 1};
    }
    free(todo);
    return rc;
}

/* [..] literals without a declared List: type List = Nil | Cons(head, tail). */
static int declare_list(reader *r) {
    for (int t = 0; t < r->prog->n_types; t++)
        if (!strcmp(r->prog->types[t].name, "List")) return 0;
    char *name = own_text(r, "List", 4);
    pgl_type *t = name ? new_type(r, name, 2, 0) : NULL;
    if (!t) return -1;
    t->ctors[0] = (pgl_ctor){.name = own_text(r, "Nil", 3)};
    t->ctors[1] = (pgl_ctor){.name = own_text(r, "Cons", 4), .n_fields = 2};
    t->n_ctors = 2;
    t->line = 0;
    if (!t->ctors[0].name || !t->ctors[1].name) return -1;
    for (int k = 0; k < 2; k++)
        if (add_ctor_def(r, t, k, 0)) return -1;
    return 0;
}

int pgl_parse(const char *src, size_t len, pgl_program *prog, pgn_error *err) {
    memset(prog, 0, sizeof *prog);
    reader r = {.src = src, .len = len, .prog = prog, .err = err, .mark_line = 1, .mark_col = 1};
    for (size_t i = 0; i < len; i++)
        if (!src[i]) {
            fail_at(&r, i, "a NUL byte in the program");
            pgl_program_free(prog);
            return -1;
        }
    while (peek(&r) != '\0')
        if (definition(&r)) {
            pgl_program_free(prog);
            return -1;
        }
    if (prog->uses_list && declare_list(&r)) {
        pgl_program_free(prog);
        return -1;
    }
    for (int i = 0; i < prog->n_defs; i++)
        if (check_depth(&r, prog->defs[i].body) || resolve(&r, prog->defs[i].body)) {
            pgl_program_free(prog);
            return -1;
        }
    if (pgl_def_index(prog, "main") < 0) {
        fail_at(&r, len, "no 'main' definition (main = expression: what the program computes)");
        pgl_program_free(prog);
        return -1;
    }
    return 0;
}

void pgl_program_free(pgl_program *prog) {
    for (size_t i = 0; i < prog->n_owned; i++) free(prog->owned[i]);
    free(prog->owned);
    free(prog->defs);
    free(prog->types);
    memset(prog, 0, sizeof *prog);
}
