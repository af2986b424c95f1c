/* inet_parse.c: HVM2's text format into a pgn_inet_book: definitions `@name = tree & a ~ b ...`,
 * every variable used exactly twice per definition, every reference defined, @main present, and
 * each definition's safety (whether a DUP may copy it) worked out. Parsing is iterative, so no
 * input, however deeply nested, can exhaust the stack; every error names line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet/inet.h"

#define INET_ERR PGN_E_INVALID_PROGRAM

/* ---- growable arrays ---------------------------------------------------------------------- */

static bool grow(void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *p = realloc(*buf, n * elem);
    if (!p) return false;
    *buf = p;
    *cap = n;
    return true;
}

/* ---- a map from names (slices of the text) to numbers ------------------------------------- */

typedef struct {
    const char *key;
    uint32_t len, val;
    uint32_t gen; /* the slot is in use only when this is the map's generation */
} slot;

typedef struct {
    slot *slots;
    size_t cap, count; /* cap is a power of two */
    uint32_t gen;      /* bumping it empties the map in O(1) (one per definition for variables) */
} strmap;

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The slot of key, or the free slot where it would go. */
static slot *map_find(strmap *m, const char *key, size_t len) {
    size_t mask = m->cap - 1, i = (size_t)hash_name(key, len) & mask;
    while (m->slots[i].gen == m->gen && (m->slots[i].len != len || memcmp(m->slots[i].key, key, len)))
        i = (i + 1) & mask;
    return &m->slots[i];
}

/* Makes room for one more key (load factor at most 1/2). */
static bool map_reserve(strmap *m) {
    if (m->gen == 0) m->gen = 1; /* calloc'd slots have generation 0: free */
    if ((m->count + 1) * 2 <= m->cap) return true;
    size_t ncap = m->cap ? m->cap * 2 : 64;
    slot *old = m->slots;
    size_t ocap = m->cap;
    m->slots = calloc(ncap, sizeof *m->slots);
    if (!m->slots) {
        m->slots = old;
        return false;
    }
    m->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].gen == m->gen) *map_find(m, old[i].key, old[i].len) = old[i];
    free(old);
    return true;
}

static void map_clear(strmap *m) {
    m->gen++;
    m->count = 0;
}

/* ---- parser state ------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    uint32_t len;
    int64_t def;       /* index into p->defs, -1 while only referenced */
    size_t first_ref;  /* text position of the first reference */
} symbol;

typedef struct {
    const char *name;
    uint32_t len, count;
    size_t pos; /* first occurrence */
} var_entry;

typedef struct {
    uint32_t sym;
    size_t name_pos;
    uint32_t root, node_off, node_len, rbag_off, rbag_len, vars_len;
    bool has_dup;
} raw_def;

typedef struct {
    uint32_t node;  /* global index into nodes */
    int child;      /* which port is parsed next */
    char close;
    size_t open_pos;
} frame;

typedef struct {
    const char *text;
    size_t len, pos;
    pgn_error *err;
    bool failed;

    uint64_t *nodes;
    size_t n_nodes, cap_nodes;
    uint64_t *rbag;
    size_t n_rbag, cap_rbag;
    raw_def *defs;
    size_t n_defs, cap_defs;
    symbol *syms;
    size_t n_syms, cap_syms;
    strmap sym_map;

    /* the definition being parsed */
    uint32_t def_node_off;
    bool def_has_dup;
    var_entry *vars;
    size_t n_vars, cap_vars;
    strmap var_map;

    frame *stack;
    size_t cap_stack;
} parser;

/* Line and column (1-based; columns count bytes) of a text position. */
static void line_col(const parser *p, size_t pos, size_t *line, size_t *col) {
    size_t l = 1, c = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        if (p->text[i] == '\n')
            l++, c = 1;
        else
            c++;
    }
    *line = l;
    *col = c;
}

__attribute__((format(printf, 3, 4))) static int fail_at(parser *p, size_t pos, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = true;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t line, col;
    line_col(p, pos, &line, &col);
    pgn_error_set(p->err, INET_ERR, "", "line %zu, col %zu: %s", line, col, msg);
    return -1;
}

static int fail_oom(parser *p) {
    if (p->failed) return -1;
    p->failed = true;
    pgn_error_set(p->err, PGN_E_OUT_OF_MEMORY, "", "out of memory while parsing the program");
    return -1;
}

/* What is at pos, for "expected X, found Y". */
static void describe(const parser *p, size_t pos, char *out, size_t size) {
    if (pos >= p->len) {
        snprintf(out, size, "end of input");
        return;
    }
    unsigned char c = (unsigned char)p->text[pos];
    if (c >= 0x21 && c < 0x7F)
        snprintf(out, size, "'%c'", c);
    else if (c == ' ')
        snprintf(out, size, "' '");
    else
        snprintf(out, size, "byte 0x%02X", c);
}

static int expected(parser *p, const char *what) {
    char found[32];
    describe(p, p->pos, found, sizeof found);
    return fail_at(p, p->pos, "expected %s, found %s", what, found);
}

static bool at_end(const parser *p) { return p->pos >= p->len; }
static char peek(const parser *p) { return at_end(p) ? '\0' : p->text[p->pos]; }

/* Whitespace and // comments. */
static void skip_trivia(parser *p) {
    while (!at_end(p)) {
        char c = p->text[p->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            p->pos++;
        } else if (c == '/' && p->pos + 1 < p->len && p->text[p->pos + 1] == '/') {
            while (!at_end(p) && p->text[p->pos] != '\n') p->pos++;
        } else {
            break;
        }
    }
}

static int consume(parser *p, char c, const char *what) {
    skip_trivia(p);
    if (peek(p) != c) return expected(p, what);
    p->pos++;
    return 0;
}

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-' || c == '/' || c == '$';
}

/* A name at the cursor (no trivia skipped): its length, 0 when there is none. */
static size_t take_name(parser *p) {
    size_t start = p->pos;
    while (!at_end(p) && is_name_char(p->text[p->pos])) p->pos++;
    return p->pos - start;
}

/* The symbol for @name, created on first sight. */
static int intern(parser *p, const char *name, size_t len, uint32_t *out) {
    if (len > UINT32_MAX) return fail_at(p, p->pos, "name too long");
    if (!map_reserve(&p->sym_map)) return fail_oom(p);
    slot *s = map_find(&p->sym_map, name, len);
    if (s->gen != p->sym_map.gen) {
        if (p->n_syms >= PGN_INET_REF_FID) return fail_at(p, p->pos, "too many definitions");
        if (!grow((void **)&p->syms, &p->cap_syms, p->n_syms + 1, sizeof *p->syms)) return fail_oom(p);
        p->syms[p->n_syms] = (symbol){name, (uint32_t)len, -1, SIZE_MAX};
        *s = (slot){name, (uint32_t)len, (uint32_t)p->n_syms, p->sym_map.gen};
        p->sym_map.count++;
        p->n_syms++;
    }
    *out = s->val;
    return 0;
}

/* A variable occurrence: its def-local index. A third occurrence is an error here; a lone one
 * is found when the definition ends. */
static int use_var(parser *p, const char *name, size_t len, size_t pos, uint32_t *out) {
    if (len > UINT32_MAX) return fail_at(p, pos, "name too long");
    if (!map_reserve(&p->var_map)) return fail_oom(p);
    slot *s = map_find(&p->var_map, name, len);
    if (s->gen != p->var_map.gen) {
        if (p->n_vars >= PGN_INET_VAL_MAX - 1) return fail_at(p, pos, "too many variables");
        if (!grow((void **)&p->vars, &p->cap_vars, p->n_vars + 1, sizeof *p->vars)) return fail_oom(p);
        p->vars[p->n_vars] = (var_entry){name, (uint32_t)len, 0, pos};
        *s = (slot){name, (uint32_t)len, (uint32_t)p->n_vars, p->var_map.gen};
        p->var_map.count++;
        p->n_vars++;
    }
    var_entry *v = &p->vars[s->val];
    if (++v->count > 2)
        return fail_at(p, pos, "variable '%.*s' used more than twice (a variable links exactly two ports)",
                       (int)len, name);
    *out = s->val;
    return 0;
}

/* A number: `[op]`, `[op literal]`, `[u24]`-style casts, or a literal token. */
static int parse_number(parser *p, uint32_t *out) {
    static const struct {
        const char *text;
        uint32_t op;
    } OPS[] = {
        /* longest first where one is a prefix of another */
        {":<<", PGN_INET_FP_SHL}, {":>>", PGN_INET_FP_SHR}, {"<<", PGN_INET_OP_SHL}, {">>", PGN_INET_OP_SHR},
        {":-", PGN_INET_FP_SUB},  {":/", PGN_INET_FP_DIV},  {":%", PGN_INET_FP_REM}, {"+", PGN_INET_OP_ADD},
        {"-", PGN_INET_OP_SUB},   {"*", PGN_INET_OP_MUL},   {"/", PGN_INET_OP_DIV},  {"%", PGN_INET_OP_REM},
        {"=", PGN_INET_OP_EQ},    {"!", PGN_INET_OP_NEQ},   {"<", PGN_INET_OP_LT},   {">", PGN_INET_OP_GT},
        {"&", PGN_INET_OP_AND},   {"|", PGN_INET_OP_OR},    {"^", PGN_INET_OP_XOR},
    };
    static const struct {
        const char *text;
        uint32_t type;
    } CASTS[] = {{"u24", PGN_INET_TY_U24}, {"i24", PGN_INET_TY_I24}, {"f24", PGN_INET_TY_F24}};

    bool bracket = peek(p) == '[';
    uint32_t op = 0;
    if (bracket) {
        p->pos++;
        for (size_t i = 0; i < 3; i++) {
            if (p->len - p->pos >= 3 && !memcmp(p->text + p->pos, CASTS[i].text, 3)) {
                p->pos += 3;
                if (consume(p, ']', "']' (a cast takes no operand)")) return -1;
                *out = pgn_inet_sym(CASTS[i].type);
                return 0;
            }
        }
        size_t i = 0;
        for (; i < sizeof OPS / sizeof *OPS; i++) {
            size_t n = strlen(OPS[i].text);
            if (p->len - p->pos >= n && !memcmp(p->text + p->pos, OPS[i].text, n)) {
                p->pos += n;
                op = OPS[i].op;
                break;
            }
        }
        if (i == sizeof OPS / sizeof *OPS)
            return expected(p, "an operator (+ - :- * / :/ % :% = ! < > & | ^ << :<< >> :>>) or a cast "
                               "(u24 i24 f24) after '['");
        skip_trivia(p);
        if (peek(p) == ']') {
            p->pos++;
            *out = pgn_inet_sym(op);
            return 0;
        }
    }
    size_t start = p->pos;
    while (!at_end(p)) {
        char c = p->text[p->pos];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
            c == '-' || c == '.' || c == '_')
            p->pos++;
        else
            break;
    }
    uint32_t value;
    const char *why = NULL;
    if (start == p->pos) return expected(p, bracket ? "an operand or ']'" : "a number");
    if (pgn_inet_numb_parse(p->text + start, p->pos - start, &value, &why))
        return fail_at(p, start, "invalid number '%.*s': %s", (int)(p->pos - start), p->text + start, why);
    if (bracket) {
        if (consume(p, ']', "']'")) return -1;
        value = pgn_inet_partial(pgn_inet_sym(op), value);
    }
    *out = value;
    return 0;
}

/* A leaf (anything but a binary node): its port. */
static int parse_leaf(parser *p, uint32_t *port) {
    char c = peek(p);
    if (c == '@') {
        p->pos++;
        size_t start = p->pos, n = take_name(p);
        if (!n) return expected(p, "a definition name after '@'");
        uint32_t sym = 0;
        if (intern(p, p->text + start, n, &sym)) return -1;
        if (p->syms[sym].first_ref == SIZE_MAX) p->syms[sym].first_ref = start - 1;
        *port = pgn_inet_port(PGN_INET_REF, sym);
        return 0;
    }
    if (c == '*') {
        p->pos++;
        *port = pgn_inet_port(PGN_INET_ERA, 0);
        return 0;
    }
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '[') {
        uint32_t numb = 0;
        if (parse_number(p, &numb)) return -1;
        *port = pgn_inet_port(PGN_INET_NUM, numb);
        return 0;
    }
    size_t start = p->pos, n = take_name(p);
    if (!n) return expected(p, "a tree: a variable, *, @name, a number, (a b), {a b}, $(a b) or ?(a b)");
    uint32_t v = 0;
    if (use_var(p, p->text + start, n, start, &v)) return -1;
    *port = pgn_inet_port(PGN_INET_VAR, v);
    return 0;
}

/* One tree, iteratively: a frame per open node, its port written into its parent when opened. */
static int parse_tree(parser *p, uint32_t *out) {
    size_t depth = 0;
    for (;;) {
        skip_trivia(p);
        size_t here = p->pos;
        char c = peek(p);
        uint32_t tag = 0;
        char close = 0;
        if (c == '(')
            tag = PGN_INET_CON, close = ')';
        else if (c == '{')
            tag = PGN_INET_DUP, close = '}';
        else if (c == '$')
            tag = PGN_INET_OPR, close = ')';
        else if (c == '?')
            tag = PGN_INET_SWI, close = ')';

        uint32_t port = 0;
        if (tag) {
            p->pos++;
            if ((tag == PGN_INET_OPR || tag == PGN_INET_SWI) &&
                consume(p, '(', tag == PGN_INET_OPR ? "'(' after '$'" : "'(' after '?'"))
                return -1;
            if (p->n_nodes - p->def_node_off >= PGN_INET_VAL_MAX - 1 || p->n_nodes >= PGN_INET_VAL_MAX - 1)
                return fail_at(p, here, "program too large (more than %u nodes)", PGN_INET_VAL_MAX - 1);
            if (!grow((void **)&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes) ||
                !grow((void **)&p->stack, &p->cap_stack, depth + 1, sizeof *p->stack))
                return fail_oom(p);
            uint32_t node = (uint32_t)p->n_nodes++;
            p->nodes[node] = 0;
            if (tag == PGN_INET_DUP) p->def_has_dup = true;
            port = pgn_inet_port(tag, node - p->def_node_off);
            if (depth == 0)
                *out = port;
            else {
                frame *f = &p->stack[depth - 1];
                p->nodes[f->node] |= f->child ? (uint64_t)port << 32 : port;
            }
            p->stack[depth++] = (frame){node, 0, close, here};
            continue;
        }
        if (parse_leaf(p, &port)) return -1;
        if (depth == 0) {
            *out = port;
            return 0;
        }
        frame *f = &p->stack[depth - 1];
        p->nodes[f->node] |= f->child ? (uint64_t)port << 32 : port;
        /* close every node whose second port this completed */
        for (;;) {
            f = &p->stack[depth - 1];
            if (f->child == 0) {
                f->child = 1;
                break;
            }
            skip_trivia(p);
            if (peek(p) != f->close) { /* the message is built only here: line_col scans the text */
                char what[96];
                size_t line, col;
                line_col(p, f->open_pos, &line, &col);
                snprintf(what, sizeof what, "'%c' to close the node opened at line %zu, col %zu", f->close,
                         line, col);
                return expected(p, what);
            }
            p->pos++;
            if (--depth == 0) return 0;
        }
    }
}

/* Ends a definition: every variable used twice; the variable map emptied for the next one. */
static int check_vars(parser *p) {
    for (size_t i = 0; i < p->n_vars; i++) {
        var_entry *v = &p->vars[i];
        if (v->count == 1)
            return fail_at(p, v->pos, "unbound variable '%.*s' (used once; a variable links exactly two ports)",
                           (int)v->len, v->name);
    }
    return 0;
}

static void reset_vars(parser *p) {
    map_clear(&p->var_map);
    p->n_vars = 0;
}

static int parse_def(parser *p) {
    if (consume(p, '@', "'@' to start a definition (@name = tree)")) return -1;
    size_t name_pos = p->pos, n = take_name(p);
    if (!n) return expected(p, "a definition name after '@'");
    uint32_t sym = 0;
    if (intern(p, p->text + name_pos, n, &sym)) return -1;
    if (p->syms[sym].def >= 0)
        return fail_at(p, name_pos - 1, "duplicate definition '@%.*s'", (int)n, p->text + name_pos);
    if (consume(p, '=', "'=' after the definition's name")) return -1;

    reset_vars(p);
    p->def_node_off = (uint32_t)p->n_nodes;
    p->def_has_dup = false;
    raw_def d = {.sym = sym, .name_pos = name_pos, .node_off = p->def_node_off, .rbag_off = (uint32_t)p->n_rbag};
    if (parse_tree(p, &d.root)) return -1;
    for (;;) {
        skip_trivia(p);
        if (peek(p) != '&') break;
        p->pos++;
        bool par = peek(p) == '!';
        if (par) p->pos++;
        uint32_t a, b;
        if (parse_tree(p, &a) || consume(p, '~', "'~' between the two sides of a redex") || parse_tree(p, &b))
            return -1;
        if (par && pgn_inet_tag(a) == PGN_INET_REF) a |= pgn_inet_port(0, PGN_INET_REF_PAR);
        if (p->n_rbag >= PGN_INET_VAL_MAX) return fail_at(p, p->pos, "too many redexes");
        if (!grow((void **)&p->rbag, &p->cap_rbag, p->n_rbag + 1, sizeof *p->rbag)) return fail_oom(p);
        p->rbag[p->n_rbag++] = pgn_inet_pair(a, b);
    }
    if (check_vars(p)) return -1;
    d.node_len = (uint32_t)p->n_nodes - d.node_off;
    d.rbag_len = (uint32_t)p->n_rbag - d.rbag_off;
    d.vars_len = (uint32_t)p->n_vars;
    d.has_dup = p->def_has_dup;
    if (!grow((void **)&p->defs, &p->cap_defs, p->n_defs + 1, sizeof *p->defs)) return fail_oom(p);
    p->syms[sym].def = (int64_t)p->n_defs;
    p->defs[p->n_defs++] = d;
    return 0;
}

/* ---- building the book -------------------------------------------------------------------- */

typedef struct {
    const char *name;
    uint32_t len, def;
} named_def;

static int cmp_by_name(const void *a, const void *b) {
    const named_def *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static uint32_t remap_ref(uint32_t port, const uint32_t *sym_fid) {
    if (pgn_inet_tag(port) != PGN_INET_REF) return port;
    uint32_t v = pgn_inet_val(port);
    return pgn_inet_port(PGN_INET_REF, (v & PGN_INET_REF_PAR) | sym_fid[v & PGN_INET_REF_FID]);
}

/* Port i of definition d, for i < 1 + 2 node_len + 2 rbag_len: the root, then both ports of each
 * node, then both sides of each redex. */
static uint32_t def_port(const pgn_inet_book *b, const pgn_inet_def *d, uint32_t i) {
    if (i == 0) return d->root;
    i--;
    uint64_t pair;
    if (i < 2 * d->node_len) {
        pair = b->nodes[d->node_off + i / 2];
    } else {
        i -= 2 * d->node_len;
        pair = b->rbag[d->rbag_off + i / 2];
    }
    return i & 1 ? pgn_inet_snd(pair) : pgn_inet_fst(pair);
}

/* A definition is unsafe (a DUP may not copy it) when it has a DUP node or references an unsafe
 * definition: unsafety flows backwards along references from the definitions with DUPs. */
static int propagate_safety(pgn_inet_book *b, const bool *has_dup) {
    uint32_t n = b->n_defs;
    /* who references definition g: referrers[start[g] .. start[g + 1]) */
    uint32_t *start = calloc((size_t)n + 1, sizeof *start);
    uint32_t *fill = malloc(((size_t)n + 1) * sizeof *fill);
    uint32_t *work = malloc(((size_t)n + 1) * sizeof *work);
    uint32_t *referrers = NULL;
    int rc = -1;
    if (!start || !fill || !work) goto done;
    for (uint32_t f = 0; f < n; f++) {
        const pgn_inet_def *d = &b->defs[f];
        for (uint32_t i = 0; i < 1 + 2 * d->node_len + 2 * d->rbag_len; i++) {
            uint32_t port = def_port(b, d, i);
            if (pgn_inet_tag(port) == PGN_INET_REF) start[(pgn_inet_val(port) & PGN_INET_REF_FID) + 1]++;
        }
    }
    for (uint32_t g = 0; g < n; g++) start[g + 1] += start[g];
    referrers = malloc(((size_t)start[n] + 1) * sizeof *referrers);
    if (!referrers) goto done;
    memcpy(fill, start, ((size_t)n + 1) * sizeof *fill);
    for (uint32_t f = 0; f < n; f++) {
        const pgn_inet_def *d = &b->defs[f];
        for (uint32_t i = 0; i < 1 + 2 * d->node_len + 2 * d->rbag_len; i++) {
            uint32_t port = def_port(b, d, i);
            if (pgn_inet_tag(port) == PGN_INET_REF) referrers[fill[pgn_inet_val(port) & PGN_INET_REF_FID]++] = f;
        }
    }
    size_t top = 0;
    for (uint32_t f = 0; f < n; f++) {
        b->defs[f].safe = !has_dup[f];
        if (has_dup[f]) work[top++] = f;
    }
    while (top) { /* each definition enters the work list at most once: when it turns unsafe */
        uint32_t g = work[--top];
        for (uint32_t e = start[g]; e < start[g + 1]; e++) {
            uint32_t f = referrers[e];
            if (b->defs[f].safe) {
                b->defs[f].safe = false;
                work[top++] = f;
            }
        }
    }
    rc = 0;
done:
    free(start);
    free(fill);
    free(work);
    free(referrers);
    return rc;
}

static int build_book(parser *p, pgn_inet_book **out) {
    /* every reference defined (the first undefined one in text order is reported) */
    for (size_t s = 0; s < p->n_syms; s++)
        if (p->syms[s].def < 0)
            return fail_at(p, p->syms[s].first_ref, "undefined reference '@%.*s'", (int)p->syms[s].len,
                           p->syms[s].name);
    int64_t main_def = -1;
    for (size_t s = 0; s < p->n_syms; s++)
        if (p->syms[s].len == 4 && !memcmp(p->syms[s].name, "main", 4)) main_def = p->syms[s].def;
    if (main_def < 0) {
        p->failed = true;
        pgn_error_set(p->err, INET_ERR, "", "the program has no '@main' definition (its entry point)");
        return -1;
    }

    /* ids: @main first, then by name (byte order), as HVM2 numbers them */
    size_t n = p->n_defs;
    named_def *order = malloc(n * sizeof *order);
    uint32_t *sym_fid = malloc((p->n_syms + 1) * sizeof *sym_fid);
    bool *has_dup = malloc(n * sizeof *has_dup);
    pgn_inet_book *b = calloc(1, sizeof *b);
    size_t names_len = 0;
    for (size_t i = 0; i < n; i++) names_len += p->syms[p->defs[i].sym].len + 1;
    if (b) {
        b->defs = calloc(n, sizeof *b->defs);
        b->names = malloc(names_len);
        b->nodes = malloc((p->n_nodes + 1) * sizeof *b->nodes);
        b->rbag = malloc((p->n_rbag + 1) * sizeof *b->rbag);
    }
    if (!order || !sym_fid || !has_dup || !b || !b->defs || !b->names || !b->nodes || !b->rbag) {
        free(order);
        free(sym_fid);
        free(has_dup);
        pgn_inet_book_free(b);
        return fail_oom(p);
    }
    size_t k = 0;
    order[k++] = (named_def){"main", 4, (uint32_t)main_def};
    for (size_t i = 0; i < n; i++) {
        const symbol *s = &p->syms[p->defs[i].sym];
        if ((int64_t)i != main_def) order[k++] = (named_def){s->name, s->len, (uint32_t)i};
    }
    qsort(order + 1, n - 1, sizeof *order, cmp_by_name);
    for (size_t fid = 0; fid < n; fid++) sym_fid[p->defs[order[fid].def].sym] = (uint32_t)fid;

    b->n_defs = (uint32_t)n;
    b->n_nodes = (uint32_t)p->n_nodes;
    b->n_rbag = (uint32_t)p->n_rbag;
    for (size_t i = 0; i < p->n_nodes; i++)
        b->nodes[i] = pgn_inet_pair(remap_ref(pgn_inet_fst(p->nodes[i]), sym_fid),
                                    remap_ref(pgn_inet_snd(p->nodes[i]), sym_fid));
    for (size_t i = 0; i < p->n_rbag; i++)
        b->rbag[i] = pgn_inet_pair(remap_ref(pgn_inet_fst(p->rbag[i]), sym_fid),
                                   remap_ref(pgn_inet_snd(p->rbag[i]), sym_fid));
    char *name = b->names;
    for (size_t fid = 0; fid < n; fid++) {
        const raw_def *r = &p->defs[order[fid].def];
        const symbol *s = &p->syms[r->sym];
        memcpy(name, s->name, s->len);
        name[s->len] = '\0';
        b->defs[fid] = (pgn_inet_def){.name = name,
                                      .root = remap_ref(r->root, sym_fid),
                                      .node_off = r->node_off,
                                      .node_len = r->node_len,
                                      .rbag_off = r->rbag_off,
                                      .rbag_len = r->rbag_len,
                                      .vars_len = r->vars_len};
        has_dup[fid] = r->has_dup;
        name += s->len + 1;
        if (r->node_len > b->max_def_nodes) b->max_def_nodes = r->node_len;
        if (r->vars_len > b->max_def_vars) b->max_def_vars = r->vars_len;
        if (r->rbag_len > b->max_def_rbag) b->max_def_rbag = r->rbag_len;
    }
    int rc = propagate_safety(b, has_dup);
    free(order);
    free(sym_fid);
    free(has_dup);
    if (rc) {
        pgn_inet_book_free(b);
        return fail_oom(p);
    }
    if (pgn_inet_plan_book(b, p->err)) {
        p->failed = true;
        pgn_inet_book_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

int pgn_inet_parse(const char *text, size_t len, pgn_inet_book **out, pgn_error *err) {
    *out = NULL;
    parser p = {.text = text ? text : "", .len = text ? len : 0, .err = err};
    int rc = 0;
    for (;;) {
        skip_trivia(&p);
        if (at_end(&p)) break;
        if (parse_def(&p)) {
            rc = -1;
            break;
        }
    }
    if (!rc) rc = build_book(&p, out);
    free(p.nodes);
    free(p.rbag);
    free(p.defs);
    free(p.syms);
    free(p.sym_map.slots);
    free(p.vars);
    free(p.var_map.slots);
    free(p.stack);
    return rc;
}

void pgn_inet_book_free(pgn_inet_book *book) {
    if (!book) return;
    free(book->defs);
    free(book->nodes);
    free(book->rbag);
    free(book->names);
    free(book->plan);
    free(book);
}

int64_t pgn_inet_book_find(const pgn_inet_book *book, const char *name) {
    for (uint32_t i = 0; i < book->n_defs; i++)
        if (!strcmp(book->defs[i].name, name)) return i;
    return -1;
}
