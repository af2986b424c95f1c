/* lang_compile.h: what the pgl compiler's files share (lang_compile.c, lang_inline.c): the
 * compiler's state, a scope's binders, a unit's redexes, and the steps each calls of the other.
 * Not an interface of the lang part: lang.h is. */
#ifndef PGN_LANG_COMPILE_H
#define PGN_LANG_COMPILE_H

#include <stdbool.h>

#include "lang/lang.h"

/* A variable in scope: the names of its uses so far (each use is one wire). */
typedef struct binder {
    const char *name;
    char **uses;
    int n_uses, cap_uses;
    struct binder *up;
} binder;

typedef struct {
    const pgl_program *prog;
    pgn_error *err;
    pgn_text out;         /* the finished definitions */
    const char *top;      /* the source definition being compiled (lifted ones are named after it) */
    bool *expanding;      /* per definition: a value definition being inlined now (a cycle check) */
    bool *inlining;       /* per definition: a call of it being inlined now (no recursion) */
    int fresh, lifted;    /* counters for wire names and lifted definitions, per source definition */
    int inline_left;      /* syntax nodes calls and values may still be written out with, per program */
    int depth;            /* expressions being compiled inside each other now (written-out ones too) */
    unsigned polls;       /* expressions compiled since stop was last asked */
    const pgn_pgl_stop *stop;
    int *value_size;      /* per definition: a value's syntax nodes (-1: not counted yet) */
    const pgl_expr *root; /* main's body while main compiles: what the program's value is */
    bool failed;
} compiler;

/* A closed term being compiled: its redexes, left ~ right, in the order made. */
typedef struct {
    char **left, **right;
    int n, cap;
} unit;

/* ---- small functions written out where they are called ------------------------------------
 * A call f(a1, .., an) of a definition f = \p1 .. pn. body (body perhaps more lambdas) whose body is small, with no switch
 * or match (nothing to lift) and not calling f itself, is compiled as let p1 = a1; .. body with
 * body's names resolved in f's own scope: the CALL that would expand f and the n lambda-
 * application annihilations are gone. tree_sum's leaf(1) and node(l, r) (and every constructor)
 * are such calls: 9,699,306 interactions before, 8,388,589 after (the hand-written net: 8,388,590). */
#define INLINE_MAX_NODES 24
/* What a whole program may take in written-out calls and values, in syntax nodes: a base and so
 * many per byte of source. Calls inside a written-out body are written out too (and values
 * inside values), so f1(x) = id(id(id(id(x)))), f2(x) = f1(f1(f1(f1(x)))), .. f11 grew as 4^11
 * (58 s and 2.2 GB to compile 12 lines), and a1 = (a0, a0) .. a25 as 2^25; with a budget per
 * definition, 527 definitions each using f11 (16 KB) wrote out 34 million nodes in 57 s. Past
 * the budget, calls stay calls and a value is a reference, as a large one is. What the examples
 * use: train_fashion.pgl 354,129 (203 KB of source: 1.7 a byte), train_xor.pgl 2,307, the others
 * at most 105; a list literal of 4,096 items, the most the reader takes, about 25,000. */
#define INLINE_BUDGET_BASE 65536
#define INLINE_BUDGET_PER_BYTE 2
/* Nor is anything written out deeper than this inside the expressions being compiled (a chain
 * of values a1 = a0 + 1 .. would otherwise nest the compiler as deep as the budget): with the
 * tree's own depth, this bounds the compiler's stack. */
#define INLINE_MAX_DEPTH PGL_MAX_TREE_DEPTH
/* A value definition (no parameters) is written out where it is used, unless it is larger than
 * this (a data table: an image of 784 numbers is 3,137): then it is a reference like a
 * function's, expanded by one CALL where it is consumed, and the book's largest definition (what
 * each OpenCL worker's scratch holds) stays that table, not every definition using it. */
#define VALUE_INLINE_MAX_NODES 1024

/* The error at e's line and column (the first one wins); returns NULL. */
__attribute__((format(printf, 3, 4))) char *pglc_fail(compiler *c, const pgl_expr *e, const char *fmt, ...);
/* The binder of name in scope, or NULL. */
binder *pglc_lookup(binder *scope, const char *name);
/* The tree at b's binding site (*, the one use's wire, or DUP nodes); frees the uses. */
char *pglc_binder_tree(compiler *c, binder *b);
/* Adds the redex `left ~ right` (right printf'd) to u. */
__attribute__((format(printf, 4, 5))) void pglc_push_redex(compiler *c, unit *u, const char *left, const char *fmt, ...);
/* e compiled in scope, its redexes added to u: the tree of its value (NULL on an error). */
char *pglc_expr(compiler *c, unit *u, binder *scope, const pgl_expr *e);

/* lang_inline.c: e's syntax nodes (*lifts: whether it holds a switch or match to lift). */
int pglc_tree_size(const pgl_expr *e, bool *lifts);
/* A call passing more arguments than the function takes, where what it gives is no function:
 * the error is set (true). */
bool pglc_too_many_args(compiler *c, binder *scope, const pgl_expr *e);
/* True when e, a call, was compiled inline (its value in *out, NULL on an error). */
bool pglc_try_inline(compiler *c, unit *u, binder *scope, const pgl_expr *e, char **out);

#endif
