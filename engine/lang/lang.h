/* lang.h: pgl, paragon's small functional language, compiled to HVM2 nets (docs/language.md):
 * the syntax tree (lang_parse.c reads it, naming line and column in every error) and the
 * compiler (lang_compile.c), whose output is HVM2 text that the inet parser reads as any .hvm. */
#ifndef PGN_LANG_H
#define PGN_LANG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "core.h"

typedef enum {
    PGL_NUM,    /* a number literal: text as written (u24 42, i24 +42 / -42, f24 1.5) */
    PGL_VAR,    /* a local variable or a definition: name */
    PGL_LAM,    /* \name. a */
    PGL_APP,    /* a(b) */
    PGL_OP,     /* a op b: op is HVM2's operator text (+ - * / % = ! < > & | ^ << >>);
                   or a cast u24(a), i24(a), f24(a): op is the type, b NULL */
    PGL_LET,    /* let name = a; b */
    PGL_SWITCH, /* switch a { 0: b; _ name: c }: b the zero case, c the rest with name = a - 1 */
    PGL_MATCH,  /* match a { C(x, y): b ... }, and let (x, y) = a; b: cases in constructor order */
    PGL_PAIR,   /* (a, b): HVM2's pair, a CON node; (a, b, c) is (a, (b, c)) */
    PGL_LIST,   /* [a, b, ..]: Cons(a, Cons(b, .. Nil)), its items side by side (items, n_items), so
                   that no pass recurses down a long literal */
    PGL_TEXT,   /* the compiler's own: a value already compiled, its net's text in name */
} pgl_kind;

struct pgl_expr;

/* A case of a match: the constructor (as written; the reader puts cases in the type's order),
 * the names its fields bind, its body. */
typedef struct {
    char *ctor;
    char **names;
    int n_names, line, col;
    struct pgl_expr *body;
} pgl_case;

typedef struct pgl_expr {
    pgl_kind kind;
    int line, col;         /* where it starts, for errors */
    char *name;            /* NUM: the literal; VAR, LAM, LET: the name; SWITCH: the predecessor's (or NULL) */
    char op[4];            /* OP */
    struct pgl_expr *a, *b, *c;
    pgl_case *cases;       /* MATCH */
    int n_cases;
    struct pgl_expr **items; /* LIST */
    int n_items;
} pgl_expr;

/* A data type: its constructors, each a function of its fields to a Scott-encoded value
 * (constructor i of n is \f1 .. fk. \c1 .. cn. ci(f1, .., fk)). Tuples are the one-constructor
 * case, without a declaration; List (Nil | Cons(head, tail)) comes with [a, b] literals. */
typedef struct {
    char *name;
    int n_fields, line, col;
} pgl_ctor;

typedef struct {
    char *name;
    pgl_ctor *ctors;
    int n_ctors, line;
} pgl_type;

typedef struct {
    char *name;
    int line, col;
    pgl_expr *body; /* parameters are lambdas around it */
} pgl_def;

typedef struct {
    pgl_def *defs;
    int n_defs, cap_defs;
    pgl_type *types;
    int n_types, cap_types;
    bool uses_list; /* a [..] literal: List (Nil | Cons) is declared unless the program did */
    void **owned; /* every allocation of the tree, freed together */
    size_t n_owned, cap_owned;
} pgl_program;

/* Sets err to invalid_program on the field "program": "line L, column C: <fmt ...>" (the one
 * form of every pgl error, from the reader and the compiler alike). */
void pgl_error_at(pgn_error *err, int line, int col, const char *fmt, va_list ap);

/* How deep a definition's syntax tree may nest: each operator of a chain, each argument of a
 * call, each lambda parameter and each nested expression is a level (a list literal's items are
 * one level below it, side by side). Every pass over the tree recurses (lang_copy.c,
 * lang_compile.c), on a stack of PGL_STACK_BYTES (pgl_on_stack), which the deepest trees fit
 * (test_lang's deepest_programs_compile_on_their_stack). */
#define PGL_MAX_TREE_DEPTH 2048
#define PGL_STACK_BYTES ((size_t)64 << 20)

/* Runs fn(arg) on a thread of its own with a stack of PGL_STACK_BYTES and waits for it: 0, or
 * -1 when no such thread could be made. */
int pgl_on_stack(void (*fn)(void *), void *arg);

/* Parses src (len bytes) into prog; 0, or -1 with err ("line L, column C: ..."), a tree nesting
 * deeper than PGL_MAX_TREE_DEPTH among them. */
int pgl_parse(const char *src, size_t len, pgl_program *prog, pgn_error *err);
void pgl_program_free(pgl_program *prog);
/* The index of the definition named name in prog, or -1. */
int pgl_def_index(const pgl_program *prog, const char *name);
/* The type declaring the constructor ctor (and its index there, when index is not NULL), or NULL. */
const pgl_type *pgl_ctor_type(const pgl_program *prog, const char *ctor, int *index);

/* 0 when no function that copies a variable of its own is copied where the compiler can see it
 * (lang_copy.c); else -1 with err naming the line and column of the value. */
int pgl_check_copies(const pgl_program *prog, pgn_error *err);
/* pgn_pgl_compile (paragon.h) turns a parsed program into HVM2 text. */

#endif
