/* inet_print.c: readback: the normal form left in a reduced heap, printed in HVM2's syntax.
 * Shared by the host and OpenCL reducers (the latter after downloading its heap), so both
 * print the same text for the same net. Iterative, so deep trees cannot exhaust the stack, and
 * bounded: what it allocates follows from the heap's size (pgn_inet_readback_bound), which the
 * memory estimate counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet/inet.h"

/* The stack holds ports still to print and punctuation still to emit. Punctuation is an ERA
 * port with the character as its value: a valid net's erasers all have value 0, which is checked
 * as ports are pushed, so the two cannot be confused and an entry stays 32 bits. */
#define PUNCT(c) pgn_inet_port(PGN_INET_ERA, (uint32_t)(unsigned char)(c))
#define STACK_MIN 64u
/* Each node visited pops one entry and pushes four (its closing bracket, second port, the space
 * and first port), the first of which is popped next: at most three more entries per node. */
#define STACK_PER_NODE 3u
/* "x" and the decimal digits of a name number (names count unlinked variables, < 2^32): the form
 * HVM2's test suite normalises its results to (x0, x1, ... in order of first appearance). */
#define VAR_NAME_TEXT 11u
/* The most a node prints besides its two ports: "$(" or "?(", the space and ")". */
#define NODE_TEXT 4u

static uint64_t stack_max(uint64_t n_nodes) {
    uint64_t n = STACK_PER_NODE * n_nodes + 1;
    return n > STACK_MIN ? n : STACK_MIN;
}

/* The longest leaf: a number (pgn_inet_numb_show writes into PGN_INET_NUMB_TEXT bytes), a
 * variable's name, or "@" and a definition's name. */
static uint64_t leaf_max(const pgn_inet_book *book) {
    uint64_t m = PGN_INET_NUMB_TEXT - 1;
    if (m < VAR_NAME_TEXT) m = VAR_NAME_TEXT;
    for (uint32_t i = 0; i < book->n_defs; i++) {
        uint64_t n = 1 + strlen(book->defs[i].name);
        if (n > m) m = n;
    }
    return m;
}

uint64_t pgn_inet_readback_bound(const pgn_inet_book *book, uint64_t n_nodes, uint64_t n_vars, uint64_t *text) {
    /* A tree of k nodes has k + 1 leaves; k <= n_nodes. */
    uint64_t t = NODE_TEXT * n_nodes + (n_nodes + 1) * leaf_max(book) + 1;
    if (text) *text = t;
    return (n_nodes / 8 + 1) + (n_vars + 1) * 4 + stack_max(n_nodes) * 4 + t;
}

typedef struct {
    const pgn_inet_book *book;
    const uint64_t *nodes;
    size_t n_nodes;
    const uint32_t *vars;
    size_t n_vars;
    uint8_t *seen;  /* nodes already printed: a second visit is a cycle */
    uint32_t *name; /* 1 + the name number of an unlinked variable */
    uint32_t names;
    uint32_t *stack;
    size_t top, cap;
    char *out; /* NULL: only measure */
    size_t len;
    const char *bad;
} printer;

static void emit(printer *p, const char *s, size_t n) {
    if (p->out) memcpy(p->out + p->len, s, n);
    p->len += n;
}

/* Grows the stack by doubling, never past stack_max. -1 when out of memory. */
static int push(printer *p, uint32_t x) {
    if (p->top == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : STACK_MIN;
        if (ncap > stack_max(p->n_nodes)) ncap = (size_t)stack_max(p->n_nodes);
        if (ncap <= p->cap) { /* more than the bound: only a corrupt heap gets here */
            p->bad = "a tree larger than the heap";
            return 0;
        }
        uint32_t *ns = realloc(p->stack, ncap * sizeof *ns);
        if (!ns) return -1;
        p->stack = ns;
        p->cap = ncap;
    }
    p->stack[p->top++] = x;
    return 0;
}

/* A port read from the heap; an eraser with a value would read as punctuation. */
static int push_port(printer *p, uint32_t port) {
    if (pgn_inet_tag(port) == PGN_INET_ERA && pgn_inet_val(port) != 0) {
        p->bad = "an eraser with a value";
        return 0;
    }
    return push(p, port);
}

/* One walk from root: measures the text (p->out NULL) or writes it. -1: out of memory;
 * p->bad set: the heap is corrupt. */
static int walk(printer *p, uint32_t root) {
    p->top = 0;
    p->len = 0;
    memset(p->seen, 0, p->n_nodes / 8 + 1);
    if (push_port(p, root)) return -1;
    while (p->top && !p->bad) {
        uint32_t port = p->stack[--p->top];
        if (pgn_inet_tag(port) == PGN_INET_ERA && pgn_inet_val(port) != 0) {
            char c = (char)pgn_inet_val(port);
            emit(p, &c, 1);
            continue;
        }
        /* follow substitutions to the port this one stands for */
        for (size_t steps = 0; pgn_inet_tag(port) == PGN_INET_VAR; steps++) {
            uint32_t v = pgn_inet_val(port);
            if (v >= p->n_vars || steps > p->n_vars) {
                p->bad = "a variable outside the heap";
                return 0;
            }
            if (p->vars[v] == PGN_INET_NONE) break;
            port = p->vars[v];
        }
        uint32_t tag = pgn_inet_tag(port), val = pgn_inet_val(port);
        char buf[PGN_INET_NUMB_TEXT + 16];
        switch (tag) {
        case PGN_INET_VAR:
            if (!p->name[val]) p->name[val] = ++p->names;
            emit(p, buf, (size_t)snprintf(buf, sizeof buf, "x%u", p->name[val] - 1));
            break;
        case PGN_INET_REF: {
            if ((val & PGN_INET_REF_FID) >= p->book->n_defs) {
                p->bad = "a reference to no definition";
                return 0;
            }
            const char *name = p->book->defs[val & PGN_INET_REF_FID].name;
            emit(p, "@", 1);
            emit(p, name, strlen(name));
            break;
        }
        case PGN_INET_ERA:
            if (val) {
                p->bad = "an eraser with a value";
                return 0;
            }
            emit(p, "*", 1);
            break;
        case PGN_INET_NUM: {
            const char *s = pgn_inet_numb_show(val, buf);
            emit(p, s, strlen(s));
            break;
        }
        default: {
            if (val >= p->n_nodes) {
                p->bad = "a node outside the heap";
                return 0;
            }
            if (p->seen[val / 8] & (1u << (val % 8))) {
                /* a node's principal port has one wire, so a valid net never reaches a node
                 * twice from the root: only a corrupt heap does */
                p->bad = "a node reachable twice";
                return 0;
            }
            p->seen[val / 8] |= (uint8_t)(1u << (val % 8));
            static const char *const OPEN[] = {"(", "{", "$(", "?("};
            static const char CLOSE[] = {')', '}', ')', ')'};
            emit(p, OPEN[tag - PGN_INET_CON], strlen(OPEN[tag - PGN_INET_CON]));
            if (push(p, PUNCT(CLOSE[tag - PGN_INET_CON])) || push_port(p, pgn_inet_snd(p->nodes[val])) ||
                push(p, PUNCT(' ')) || push_port(p, pgn_inet_fst(p->nodes[val])))
                return -1;
            break;
        }
        }
    }
    return 0;
}

/* Measures first, then writes into a buffer of exactly that size, so the text never takes more
 * than its length (a growing buffer would take up to twice). Names are given on the first walk
 * and the second, in the same order, finds them given. */
char *pgn_inet_readback(const pgn_inet_book *book, const uint64_t *nodes, size_t n_nodes,
                        const uint32_t *vars, size_t n_vars, uint32_t root, uint64_t *peak_bytes,
                        pgn_error *err) {
    printer p = {.book = book, .nodes = nodes, .n_nodes = n_nodes, .vars = vars, .n_vars = n_vars};
    p.seen = malloc(n_nodes / 8 + 1);
    p.name = calloc(n_vars + 1, sizeof *p.name);
    char *text = NULL;
    if (!p.seen || !p.name || walk(&p, root)) goto oom;
    if (p.bad) goto corrupt;
    text = malloc(p.len + 1);
    if (!text) goto oom;
    p.out = text;
    if (walk(&p, root)) goto oom;
    if (p.bad) goto corrupt;
    text[p.len] = '\0';
    if (peak_bytes)
        *peak_bytes = (n_nodes / 8 + 1) + (n_vars + 1) * sizeof *p.name + p.cap * sizeof *p.stack + p.len + 1;
    free(p.stack);
    free(p.seen);
    free(p.name);
    return text;

corrupt:
    pgn_error_set(err, PGN_E_INTERNAL, "", "readback: the heap is corrupt (%s)", p.bad);
    goto out_fail;
oom:
    pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory while printing the normal form");
out_fail:
    free(p.stack);
    free(p.seen);
    free(p.name);
    free(text);
    return NULL;
}
