/* lang_copy.c: the compile-time check for copies HVM2 cannot make (docs/language.md, "Copies
 * of functions that copy"). Every DUP node HVM2 makes has one label, so a DUP that copies a
 * function holding a DUP of its own meets that DUP and annihilates with it instead of copying it:
 * through a reference the runtime refuses it ("attempt to clone a non-affine global reference"),
 * but a closure built inline gives a wrong value without a word. This pass, on the syntax tree
 * before anything is compiled, finds the cases it can see:
 *   - a function value (a lambda, or a definition's name) that holds a DUP of its own, passed as
 *     an argument a function copies (its parameter used more than once, in a branch too, or
 *     passed on to another function's copied parameter: a fixed point over the definitions);
 *   - such a value bound by let to a name used more than once;
 *   - a match's field so used, when the value matched carries such a function;
 *   - in each case, the function directly or anywhere the value may carry it: inside a tuple, a
 *     constructor's fields or a list, made by a call (followed into each function the callee may
 *     be, known wherever it came from: a definition, a parameter, a local, data, a switch; a
 *     definition's calls summarised by the kinds of values passed, to a fixed point when it
 *     recurses), chosen by a switch or a match, or taken out of data (carried, below);
 *   - any of these inside a function called with functions as arguments, its body checked again
 *     with them (check_call);
 *   - and what the check cannot follow (too many functions, too deep, past its budget) is refused
 *     where it is copied, rather than taken to carry nothing.
 * Uses are counted as the compiler makes them: a switch or match hands the variables a branch
 * uses to the branch taken, once, and copies inside a branch are the branch's own. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"

struct scope;

typedef struct held_dup {
    const char *dup;
    bool known;
} held_dup;

/* What the check knows of a value: dup, the variable a function in it copies (see carried), or
 * NULL; fn, the function it is when that is known (a lambda: one written in the source, with the
 * names around it in env, or a definition's body, env NULL), so that a call of it can be
 * followed wherever the function went (a parameter, a local, another function's result). A
 * parameter of the definition being checked is known as nothing: the calls of that definition
 * are checked again with what they pass (check_call). */
/* The functions a value may be, when known: at most this many (a switch choosing among a
 * few, a data type's Scott encodings); past them it is opaque. */
#define FN_MAX 4

typedef struct {
    const char *dup;
    const pgl_expr *fn[FN_MAX]; /* each a lambda, its names in env[i] (a definition's body: NULL) */
    const struct scope *env[FN_MAX];
    int n_fn;
    bool unsure; /* the check lost track of it (past its limits, an unknown function's result): it
                  * may hold a copying function, and copying it cannot be proved safe */
    bool opaque; /* it may be a function the check does not know: what calling it gives is unsure */
    bool data;   /* a tuple, list or constructor: fn lists the functions its fields may be */
} val;

/* A value the check lost track of. */
static const val UNSURE = {.unsure = true};

/* A name bound around the expression being walked (shadows a definition of that name), and its
 * value. */
typedef struct scope {
    const char *name;
    val v;
    const struct scope *up;
} scope;

/* Scopes that outlive the walk that made them (a lambda returned by a call keeps the call's
 * parameters as its env): allocated in blocks, freed with the check. */
typedef struct scope_block {
    struct scope_block *next;
    size_t used;
    scope at[256];
} scope_block;

typedef struct {
    const pgl_program *prog;
    int *first;          /* per definition: its first entry in copied */
    bool *copied;        /* per definition and parameter: the function copies that parameter */
    int *n_params;       /* per definition: its leading lambdas */
    long *steps;         /* what carried may still look at for the copy being checked */
    long *total;         /* and for the whole program */
    long *rechecks;      /* what checks of a callee's body with its arguments may still cost */
    scope_block **blocks;
    const pgl_expr *via; /* the call whose callee is being checked again, for messages */
    const struct recheck *stack; /* the callees being checked again now */
    struct summary **summaries;  /* what calls of definitions give, by what they are passed */
    long *busy_uses;             /* values of summaries still being computed taken so far, in all */
    struct held_dup *held;       /* per definition: holds_dup of its body, once known */
} copies;

/* What a call of a definition gives, for what kinds of values it is passed (their functions and
 * copies, not where they were made): computed once, to a fixed point when the definition calls
 * itself (each recursive call meanwhile gives the value so far, and the body is followed again
 * until it no longer changes), so that recursion costs no depth and loses nothing. */
typedef struct summary {
    struct summary *next;
    const pgl_expr *fn;
    int n;
    bool busy, done; /* being computed now; computed, the result standing */
    bool checked;    /* its body checked again with such arguments (check_call), and passed */
    long uses;       /* while busy: recursive calls that took its value so far */
    val result;
    val args[];
} summary;

/* A scope entry that lasts until the check ends (NULL without memory: then nothing is bound,
 * which only loses knowledge). */
static const scope *bind(const copies *cp, const char *name, val v, const scope *up) {
    scope_block *b = *cp->blocks;
    if (!b || b->used == sizeof b->at / sizeof *b->at) {
        scope_block *fresh = calloc(1, sizeof *fresh);
        if (!fresh) return up;
        fresh->next = b;
        *cp->blocks = b = fresh;
    }
    scope *e = &b->at[b->used++];
    *e = (scope){name ? name : "", v, up};
    return e;
}

static const scope *find(const scope *s, const char *name) {
    for (; s; s = s->up)
        if (!strcmp(s->name, name)) return s;
    return NULL;
}

#define MAX_ARGS 64

/* A call's head and its arguments: f(a)(b) is f with a, b; NULL past MAX_ARGS arguments. */
static const pgl_expr *call_parts(const pgl_expr *e, const pgl_expr **args, int *n) {
    int k = 0;
    const pgl_expr *head = e;
    for (; head->kind == PGL_APP; head = head->a) k++;
    if (k > MAX_ARGS) return NULL;
    *n = k;
    for (const pgl_expr *a = e; a->kind == PGL_APP; a = a->a) args[--k] = a->b;
    return head;
}

/* The uses of name, free in e, at e's own level; *copied is set when e copies it deeper (inside
 * a branch, or by passing it to a copied parameter). */
static int uses(const copies *cp, const pgl_expr *e, const char *name, bool *copied) {
    if (!e) return 0;
    switch (e->kind) {
    case PGL_NUM: return 0;
    case PGL_VAR: return !strcmp(e->name, name);
    case PGL_LAM: return strcmp(e->name, name) ? uses(cp, e->a, name, copied) : 0;
    case PGL_LET: return uses(cp, e->a, name, copied) + (strcmp(e->name, name) ? uses(cp, e->b, name, copied) : 0);
    case PGL_OP:
    case PGL_PAIR: return uses(cp, e->a, name, copied) + uses(cp, e->b, name, copied);
    case PGL_LIST: {
        int total = 0;
        for (int i = 0; i < e->n_items; i++) total += uses(cp, e->items[i], name, copied);
        return total;
    }
    case PGL_TEXT: return 0;
    case PGL_APP: {
        const pgl_expr *args[MAX_ARGS];
        int n = 0;
        const pgl_expr *head = call_parts(e, args, &n);
        if (!head) return uses(cp, e->a, name, copied) + uses(cp, e->b, name, copied);
        int d = head->kind == PGL_VAR ? pgl_def_index(cp->prog, head->name) : -1;
        int total = uses(cp, head, name, copied);
        for (int i = 0; i < n; i++) {
            total += uses(cp, args[i], name, copied);
            if (d >= 0 && i < cp->n_params[d] && cp->copied[cp->first[d] + i] && args[i]->kind == PGL_VAR &&
                !strcmp(args[i]->name, name))
                *copied = true;
        }
        return total;
    }
    case PGL_SWITCH:
    case PGL_MATCH: {
        int total = uses(cp, e->a, name, copied);
        bool tuple = e->kind == PGL_MATCH && !strcmp(e->cases[0].ctor, "%tuple");
        bool any = false;
        int n_arms = e->kind == PGL_SWITCH ? 2 : e->n_cases;
        for (int k = 0; k < n_arms; k++) {
            const pgl_expr *body = e->kind == PGL_SWITCH ? (k ? e->c : e->b) : e->cases[k].body;
            bool shadowed = e->kind == PGL_SWITCH ? k && e->name && !strcmp(e->name, name) : false;
            for (int f = 0; e->kind == PGL_MATCH && f < e->cases[k].n_names; f++)
                if (!strcmp(e->cases[k].names[f], name)) shadowed = true;
            if (shadowed) continue;
            int in = uses(cp, body, name, copied);
            if (tuple) return total + in; /* let (a, b) = v; body: the body is written in place */
            if (in > 1) *copied = true;   /* copied inside the branch */
            any |= in > 0;
        }
        return total + any;
    }
    }
    return 0;
}

static bool copies_var(const copies *cp, const pgl_expr *e, const char *name) {
    bool deeper = false;
    return uses(cp, e, name, &deeper) > 1 || deeper;
}

/* The first variable a function value's own net copies (a DUP node in it), or NULL: its
 * parameters and lets used more than once, nested lambdas included, branches not (they are
 * definitions of their own). */
static const char *holds_dup(const copies *cp, const pgl_expr *e) {
    if (!e) return NULL;
    const char *found = NULL;
    bool deeper = false;
    switch (e->kind) {
    case PGL_LAM:
        if (uses(cp, e->a, e->name, &deeper) > 1) return e->name;
        return holds_dup(cp, e->a);
    case PGL_LET:
        if (uses(cp, e->b, e->name, &deeper) > 1) return e->name;
        return (found = holds_dup(cp, e->a)) ? found : holds_dup(cp, e->b);
    case PGL_MATCH:
        if (!strcmp(e->cases[0].ctor, "%tuple")) {
            for (int f = 0; f < e->cases[0].n_names; f++)
                if (uses(cp, e->cases[0].body, e->cases[0].names[f], &deeper) > 1) return e->cases[0].names[f];
            return (found = holds_dup(cp, e->a)) ? found : holds_dup(cp, e->cases[0].body);
        }
        return holds_dup(cp, e->a);
    case PGL_SWITCH: return holds_dup(cp, e->a);
    case PGL_LIST:
        for (int i = 0; i < e->n_items && !found; i++) found = holds_dup(cp, e->items[i]);
        return found;
    default: return (found = holds_dup(cp, e->a)) ? found : holds_dup(cp, e->b);
    }
}

/* How deep carried follows calls into definitions (recursion ends there: a recursive function's
 * base case is met on the way down), and how many expressions it looks at for one copy (calls
 * in arguments are followed too, so a contrived program could take exponential time): past
 * either, a value is taken to carry nothing, and the run-time check is what is left. A call that
 * passes functions has its callee's body checked again with them (check_call), as deep and for
 * at most MAX_RECHECK_STEPS expressions in all. */
#define MAX_CALL_DEPTH 16
#define MAX_STEPS 200000L
#define MAX_RECHECK_STEPS 2000000L
/* ... and in all, for the whole program: the examples take at most 226,366 (sort_radix.pgl;
 * train_fashion.pgl 194,097); a 900-byte program the fuzzer wrote took 12 million (1.7 s). */
#define MAX_TOTAL_STEPS 2000000L

static val carried(const copies *cp, const pgl_expr *e, const scope *s, int depth);
static val field_carried(const copies *cp, const pgl_expr *v, int f, int n, val whole, const scope *s, int depth);

/* A variable a lambda captures whose value carries a copying function, or one the check lost
 * track of (copying the lambda copies what it captured): its binding, or NULL. */
static const scope *captured(const copies *cp, const pgl_expr *e, const scope *s) {
    if (!e) return NULL;
    const scope *found = NULL;
    switch (e->kind) {
    case PGL_VAR: {
        const scope *b = find(s, e->name);
        return b && (b->v.dup || b->v.unsure) ? b : NULL;
    }
    case PGL_LAM:
    case PGL_LET: {
        if (e->kind == PGL_LET && (found = captured(cp, e->a, s))) return found;
        scope inner = {e->name, {0}, s};
        return captured(cp, e->kind == PGL_LAM ? e->a : e->b, &inner);
    }
    case PGL_SWITCH: {
        scope pred = {e->name ? e->name : "", {0}, s};
        return (found = captured(cp, e->a, s)) || (found = captured(cp, e->b, s)) ? found : captured(cp, e->c, &pred);
    }
    case PGL_MATCH:
        if ((found = captured(cp, e->a, s))) return found;
        for (int k = 0; k < e->n_cases && !found; k++) {
            scope fields[64];
            const scope *in = s;
            for (int f = 0; f < e->cases[k].n_names && f < 64; f++)
                fields[f] = (scope){e->cases[k].names[f], {0}, in}, in = &fields[f];
            found = captured(cp, e->cases[k].body, in);
        }
        return found;
    case PGL_LIST:
        for (int i = 0; i < e->n_items && !found; i++) found = captured(cp, e->items[i], s);
        return found;
    default: return (found = captured(cp, e->a, s)) ? found : captured(cp, e->b, s);
    }
}

/* Adds b's functions to a's: false when they do not fit. */
static bool add_fns(val *a, const val *b) {
    for (int i = 0; i < b->n_fn; i++) {
        bool have = false;
        for (int j = 0; j < a->n_fn && !have; j++) have = a->fn[j] == b->fn[i] && a->env[j] == b->env[i];
        if (have) continue;
        if (a->n_fn == FN_MAX) return false;
        a->fn[a->n_fn] = b->fn[i], a->env[a->n_fn++] = b->env[i];
    }
    return true;
}

/* Either of two values (a switch's branches, a recursive call's rounds): what either carries,
 * and any of their functions. */
static val either(val a, val b) {
    val v = a;
    v.dup = a.dup ? a.dup : b.dup;
    v.unsure = a.unsure || b.unsure, v.opaque = a.opaque || b.opaque, v.data = a.data && b.data;
    if (!add_fns(&v, &b)) v.opaque = true, v.n_fn = 0;
    return v;
}

/* Data made of two values (a tuple, a list, a constructor's fields): what either carries; a field
 * taken out of it may be any function either may be. */
static val data(val a, val b) {
    val v = either(a, b);
    v.data = true;
    return v;
}

/* The same kind of value: what it carries and the functions it may be (not the names bound
 * around them: a recursive definition's rounds bind them anew). */
static bool same_kind(const val *a, const val *b) {
    if (a->dup != b->dup || a->unsure != b->unsure || a->opaque != b->opaque || a->data != b->data || a->n_fn != b->n_fn)
        return false;
    for (int i = 0; i < a->n_fn; i++) {
        bool have = false;
        for (int j = 0; j < b->n_fn && !have; j++) have = a->fn[i] == b->fn[j];
        if (!have) return false;
    }
    return true;
}

static bool same_kinds(const val *a, const val *b, int n) {
    for (int i = 0; i < n; i++)
        if (!same_kind(&a[i], &b[i])) return false;
    return true;
}

/* holds_dup of a definition's body, worked out once (a definition of many parameters costs
 * their count times its size: 2,044 parameters took a second, asked at every use). */
static const char *definition_holds_dup(const copies *cp, const pgl_expr *body) {
    for (int d = 0; d < cp->prog->n_defs; d++)
        if (cp->prog->defs[d].body == body) {
            if (!cp->held[d].known) cp->held[d] = (held_dup){holds_dup(cp, body), true};
            return cp->held[d].dup;
        }
    return holds_dup(cp, body);
}

/* A function value: the lambda fn (around which env is bound; a definition's body: NULL). */
static val function(const copies *cp, const pgl_expr *fn, const scope *env) {
    const char *dup = env ? holds_dup(cp, fn) : definition_holds_dup(cp, fn);
    const scope *b = dup ? NULL : captured(cp, fn, env);
    return (val){.dup = dup ? dup : b ? b->v.dup : NULL, .fn = {fn}, .env = {env}, .n_fn = 1, .unsure = b && b->v.unsure};
}

/* The summary of calls of the definition whose body is fn, passed vals. */
static summary *summary_of(const copies *cp, const pgl_expr *fn, const val *vals, int n) {
    for (summary *m = *cp->summaries; m; m = m->next)
        if (m->fn == fn && m->n == n && same_kinds(m->args, vals, n)) return m;
    summary *m = calloc(1, sizeof *m + (size_t)n * sizeof *vals);
    if (!m) return NULL;
    m->fn = fn, m->n = n;
    for (int i = 0; i < n; i++) m->args[i] = vals[i];
    m->next = *cp->summaries;
    *cp->summaries = m;
    return m;
}

/* Rounds of following a recursive definition's body before its summary is taken as unsure. */
#define MAX_SUMMARY_ROUNDS 8

/* What calling f with args gives: the function's body followed with its parameters bound to
 * what the arguments carry (curried: a body that is a lambda takes the next argument; one that
 * computes a function is followed, and what it gives takes the rest). A function not known
 * (a parameter of the definition being checked: its callers' calls are checked with what they
 * pass) gives nothing known. */
static val apply(const copies *cp, val f, const pgl_expr *const *args, int n, const scope *s, int depth);

/* Calling the lambda fn (env around it) with args: as many as it takes are bound to what they
 * carry, its body followed (a definition's through its summary), and what that gives takes the
 * rest. */
static val apply_one(const copies *cp, const pgl_expr *fn, const scope *env, const pgl_expr *const *args, int n,
                     const scope *s, int depth) {
    if (fn->kind != PGL_LAM) return (val){0};
    bool definition = env == NULL; /* no names around it: followed through its summary */
    const pgl_expr *body = fn;
    val vals[MAX_ARGS];
    int k = 0;
    for (; k < n && body->kind == PGL_LAM; k++, body = body->a) {
        vals[k] = carried(cp, args[k], s, depth);
        env = bind(cp, body->name, vals[k], env);
    }
    summary *sum = definition ? summary_of(cp, fn, vals, k) : NULL;
    val result;
    if (!sum) {
        result = carried(cp, body, env, depth + 1);
    } else if (sum->done) { /* summarised before */
        result = sum->result;
    } else if (sum->busy) { /* a recursive call: the value so far, which the round it is in follows again */
        sum->uses++;
        (*cp->busy_uses)++;
        result = sum->result;
    } else {
        sum->busy = true;
        sum->uses = 0;
        long before = *cp->busy_uses;
        result = sum->result;
        for (int round = 0;; round++) {
            long uses = sum->uses;
            val got = carried(cp, body, env, depth + 1); /* with the recursive calls giving result */
            bool settled = sum->uses == uses || same_kind(&got, &result);
            sum->result = result = got;
            if (settled) break;
            if (round == MAX_SUMMARY_ROUNDS) {
                sum->result = result = UNSURE;
                break;
            }
        }
        sum->busy = false;
        /* kept for later calls unless it rests on another summary still being computed (mutual
         * recursion: that one's rounds follow this again) or the steps ran out meanwhile */
        sum->done = *cp->busy_uses - before == sum->uses && *cp->steps >= 0 && *cp->total >= 0;
        *cp->busy_uses -= sum->uses; /* its own recursive uses are settled */
        if (!sum->done) sum->result = (val){0};
    }
    return apply(cp, result, args + k, n - k, s, depth + 1);
}

/* What calling f with args gives: each function it may be, called (apply_one), either's result.
 * A function not known (a parameter of the definition being checked: its callers' calls are
 * checked again with what they pass) gives nothing known; one the check lost, or data applied as
 * a function, gives what it cannot tell. */
static val apply(const copies *cp, val f, const pgl_expr *const *args, int n, const scope *s, int depth) {
    if (n == 0) return f;
    if (f.unsure || f.opaque || f.data || depth >= MAX_CALL_DEPTH || *cp->steps < 0 || *cp->total < 0) return UNSURE;
    val out = {0};
    for (int i = 0; i < f.n_fn; i++) {
        val r = apply_one(cp, f.fn[i], f.env[i], args, n, s, depth);
        out = i ? either(out, r) : r;
    }
    return out;
}

/* What e's value carries, and the function it is when that is known (see val). Calls are
 * followed into the function called, wherever it came from. */
static val carried(const copies *cp, const pgl_expr *e, const scope *s, int depth) {
    if (!e) return (val){0};
    if (--*cp->steps < 0 || --*cp->total < 0) return UNSURE;
    switch (e->kind) {
    case PGL_NUM:
    case PGL_OP:
    case PGL_TEXT: return (val){0};
    case PGL_LIST: { /* as the constructors it is made of */
        val v = {0};
        for (int i = 0; i < e->n_items && !v.dup && !v.unsure; i++) v = data(v, carried(cp, e->items[i], s, depth));
        return v;
    }
    case PGL_VAR: {
        const scope *b = find(s, e->name);
        if (b) return b->v;
        int d = pgl_def_index(cp->prog, e->name);
        if (d < 0) return (val){0};
        if (cp->n_params[d]) return function(cp, cp->prog->defs[d].body, NULL);
        return depth < MAX_CALL_DEPTH ? carried(cp, cp->prog->defs[d].body, NULL, depth + 1) : UNSURE;
    }
    case PGL_LAM: return function(cp, e, s);
    case PGL_LET: return carried(cp, e->b, bind(cp, e->name, carried(cp, e->a, s, depth), s), depth);
    case PGL_PAIR: return data(carried(cp, e->a, s, depth), carried(cp, e->b, s, depth));
    case PGL_SWITCH: {
        const scope *pred = bind(cp, e->name, (val){0}, s);
        return either(carried(cp, e->b, s, depth), carried(cp, e->c, pred, depth));
    }
    case PGL_MATCH: {
        val whole = data(carried(cp, e->a, s, depth), (val){0}); /* fields carry what the value did */
        bool tuple = !strcmp(e->cases[0].ctor, "%tuple");
        val v = {0};
        for (int k = 0; k < e->n_cases; k++) {
            const scope *in = s;
            int n = e->cases[k].n_names;
            for (int f = 0; f < n && f < 64; f++)
                in = bind(cp, e->cases[k].names[f], tuple ? field_carried(cp, e->a, f, n, whole, s, depth) : whole, in);
            val b = carried(cp, e->cases[k].body, in, depth);
            v = k ? either(v, b) : b;
        }
        return v;
    }
    case PGL_APP: {
        const pgl_expr *args[MAX_ARGS];
        int n = 0;
        const pgl_expr *head = call_parts(e, args, &n);
        if (!head) return UNSURE;
        if (head->kind == PGL_VAR && !find(s, head->name) && pgl_ctor_type(cp->prog, head->name, NULL)) {
            val v = {0}; /* data: what its fields carry */
            for (int i = 0; i < n && !v.dup && !v.unsure; i++) v = data(v, carried(cp, args[i], s, depth));
            return v;
        }
        return apply(cp, carried(cp, head, s, depth), args, n, s, depth);
    }
    }
    return (val){0};
}

/* What field f of n of a match on v carries: a tuple written out, (a, (b, c)), gives each field
 * its own part; otherwise each field may carry what the whole value does. */
static val field_carried(const copies *cp, const pgl_expr *v, int f, int n, val whole, const scope *s, int depth) {
    for (int i = 0; i < f && v->kind == PGL_PAIR; i++) v = v->b;
    if (v->kind != PGL_PAIR) return whole;
    return carried(cp, f + 1 < n ? v->a : v, s, depth);
}

__attribute__((format(printf, 4, 5))) static void error_at(pgn_error *err, int line, int col, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pgl_error_at(err, line, col, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 4, 5))) static int fail(const copies *cp, pgn_error *err, const pgl_expr *at,
                                                      const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char via[80] = "";
    if (cp->via) snprintf(via, sizeof via, " (the function comes from the call at line %d, column %d)", cp->via->line, cp->via->col);
    error_at(err, at->line, at->col, "%s%s", msg, via);
    return -1;
}

/* carried, for one copy the check looks at: with a fresh budget of steps. */
static val carried_at(const copies *cp, const pgl_expr *e, const scope *s) {
    *cp->steps = MAX_STEPS;
    return carried(cp, e, s, 0);
}

/* What copying such a value copies, for the message: the function itself, or one inside it. */
static const char *what(const pgl_expr *v) {
    return v->kind == PGL_LAM || v->kind == PGL_VAR ? "this function" : "a function in this value";
}

static int check(const copies *cp, const pgl_expr *e, const scope *s, int depth, pgn_error *err);

static int check_bound(const copies *cp, const pgl_expr *e, const char *name, val v, const scope *s, int depth,
                       pgn_error *err) {
    scope inner = {name ? name : "", v, s};
    return check(cp, e, &inner, depth, err);
}

/* A callee being checked again, with the values of its arguments: a recursive call that passes
 * the same (the same function, the same kinds of values) is already being checked. */
typedef struct recheck {
    const pgl_expr *fn;
    const val *vals;
    int n;
    const struct recheck *up;
} recheck;

/* A call that passes a function, checked again inside the function called, its parameters
 * bound to what the arguments carry: a copy there of something made from them (h(f) = let g =
 * f(3); (g(1), g(2)), called as h(mk)) is a copy of what this call passed. What cannot be checked
 * so (the function called is not known, or too deep) is refused: the check cannot prove it. */
static int check_call(const copies *cp, const pgl_expr *call, val f, const pgl_expr *const *args, int n,
                      const scope *s, int depth, pgn_error *err) {
    bool passes = false;
    val vals[MAX_ARGS];
    for (int i = 0; i < n; i++) {
        *cp->steps = MAX_STEPS;
        vals[i] = carried(cp, args[i], s, 0);
        passes |= vals[i].dup || vals[i].n_fn || vals[i].unsure || vals[i].opaque;
    }
    if (!passes) return 0;
    if (f.unsure || f.opaque || f.data)
        return fail(cp, err, call,
                    "this call passes a function to one the check cannot tell (one of more functions than it "
                    "keeps apart, or past its limits), so it cannot prove that the callee does not copy a "
                    "function copying a variable of its own, which HVM2's one duplicator label cannot copy "
                    "(call a named function)");
    for (int c = 0; c < f.n_fn; c++) { /* each function it may be */
        if (f.fn[c]->kind != PGL_LAM) continue;
        bool checking = false;
        for (const recheck *r = cp->stack; r && !checking; r = r->up)
            checking = r->fn == f.fn[c] && r->n == n && same_kinds(r->vals, vals, n);
        summary *done = summary_of(cp, f.fn[c], vals, n);
        if (checking || (done && done->checked)) continue; /* being checked now, or checked so before */
        if (depth >= MAX_CALL_DEPTH || *cp->rechecks < 0)
            return fail(cp, err, call,
                        "this call passes a function %s, past what the check follows (%d calls deep, %ld "
                        "expressions): it cannot prove that no copy of a function copying a variable of its "
                        "own is made there, which HVM2's one duplicator label cannot copy",
                        depth >= MAX_CALL_DEPTH ? "through one call more" : "into more code", MAX_CALL_DEPTH,
                        MAX_RECHECK_STEPS);
        const scope *env = f.env[c];
        const pgl_expr *body = f.fn[c];
        for (int i = 0; i < n && body->kind == PGL_LAM; i++, body = body->a) env = bind(cp, body->name, vals[i], env);
        recheck here = {f.fn[c], vals, n, cp->stack};
        copies inner = *cp;
        inner.stack = &here;
        if (!inner.via) inner.via = call;
        if (check(&inner, body, env, depth + 1, err)) return -1;
        if (done) done->checked = true;
    }
    return 0;
}

/* A value bound to a name used more than once, refused when it may hold a copying function, or
 * when the check lost track of it. */
static int refuse_copy(const copies *cp, pgn_error *err, const pgl_expr *at, const char *name, val v,
                       const char *what_copies) {
    if (v.dup)
        return fail(cp, err, at,
                    "'%s' is used more than once, and %s copies its own '%s': HVM2's one duplicator label "
                    "cannot copy it (write it out at each use)",
                    name, what_copies, v.dup);
    return fail(cp, err, at,
                "'%s' is used more than once, and the check cannot tell what this value holds (made by one "
                "of more functions than it keeps apart, or past its limits): it cannot prove that it holds "
                "no function copying a variable of its own, which HVM2's one duplicator label cannot copy "
                "(write it out at each use, or call a named function)",
                name);
}

static int check(const copies *cp, const pgl_expr *e, const scope *s, int depth, pgn_error *err) {
    if (!e) return 0;
    if (depth) --*cp->rechecks; /* a check again inside a callee: bounded in all (check_call) */
    switch (e->kind) {
    case PGL_NUM:
    case PGL_VAR:
    case PGL_TEXT: return 0;
    case PGL_LAM: return check_bound(cp, e->a, e->name, (val){0}, s, depth, err);
    case PGL_LET: {
        val v = carried_at(cp, e->a, s);
        if ((v.dup || v.unsure) && copies_var(cp, e->b, e->name)) return refuse_copy(cp, err, e->a, e->name, v, what(e->a));
        return check(cp, e->a, s, depth, err) || check_bound(cp, e->b, e->name, v, s, depth, err) ? -1 : 0;
    }
    case PGL_APP: {
        const pgl_expr *args[MAX_ARGS];
        int n = 0;
        const pgl_expr *head = call_parts(e, args, &n);
        int d = head && head->kind == PGL_VAR && !find(s, head->name) ? pgl_def_index(cp->prog, head->name) : -1;
        for (int i = 0; d >= 0 && i < n && i < cp->n_params[d]; i++) {
            val v = cp->copied[cp->first[d] + i] ? carried_at(cp, args[i], s) : (val){0};
            if (!v.dup && !v.unsure) continue;
            const pgl_expr *p = cp->prog->defs[d].body;
            for (int k = 0; k < i; k++) p = p->a;
            if (v.dup)
                return fail(cp, err, args[i],
                            "'%s' copies its parameter '%s', and %s copies its own '%s': HVM2's one "
                            "duplicator label cannot copy it (pass a function that uses each variable once)",
                            head->name, p->name, what(args[i]), v.dup);
            return fail(cp, err, args[i],
                        "'%s' copies its parameter '%s', and the check cannot tell what this value holds: it "
                        "cannot prove that it holds no function copying a variable of its own, which HVM2's "
                        "one duplicator label cannot copy",
                        head->name, p->name);
        }
        if (head && !(d >= 0 && pgl_ctor_type(cp->prog, head->name, NULL))) {
            val f = carried_at(cp, head, s);
            if (check_call(cp, e, f, args, n, s, depth, err)) return -1;
        }
        return check(cp, e->a, s, depth, err) || check(cp, e->b, s, depth, err) ? -1 : 0;
    }
    case PGL_OP:
    case PGL_PAIR: return check(cp, e->a, s, depth, err) || check(cp, e->b, s, depth, err) ? -1 : 0;
    case PGL_LIST:
        for (int i = 0; i < e->n_items; i++)
            if (check(cp, e->items[i], s, depth, err)) return -1;
        return 0;
    case PGL_SWITCH:
        return check(cp, e->a, s, depth, err) || check(cp, e->b, s, depth, err) ||
                       check_bound(cp, e->c, e->name, (val){0}, s, depth, err)
                   ? -1
                   : 0;
    case PGL_MATCH: {
        if (check(cp, e->a, s, depth, err)) return -1;
        val whole = data(carried_at(cp, e->a, s), (val){0});
        bool tuple = !strcmp(e->cases[0].ctor, "%tuple");
        for (int k = 0; k < e->n_cases; k++) {
            const pgl_case *c = &e->cases[k];
            scope fields[64];
            const scope *in = s;
            for (int f = 0; f < c->n_names && f < 64; f++) {
                *cp->steps = MAX_STEPS;
                val v = tuple ? field_carried(cp, e->a, f, c->n_names, whole, s, 0) : whole;
                if ((v.dup || v.unsure) && copies_var(cp, c->body, c->names[f]))
                    return refuse_copy(cp, err, e->a, c->names[f], v, "a function in this value");
                fields[f] = (scope){c->names[f], v, in}, in = &fields[f];
            }
            if (check(cp, c->body, in, depth, err)) return -1;
        }
        return 0;
    }
    }
    return 0;
}

int pgl_check_copies(const pgl_program *p, pgn_error *err) {
    long steps = 0, left = MAX_TOTAL_STEPS, rechecks = MAX_RECHECK_STEPS, busy_uses = 0;
    scope_block *blocks = NULL;
    summary *summaries = NULL;
    copies cp = {.prog = p, .steps = &steps, .total = &left, .rechecks = &rechecks, .blocks = &blocks,
                 .summaries = &summaries, .busy_uses = &busy_uses, .held = calloc((size_t)p->n_defs + 1, sizeof(held_dup)),
                 .first = calloc((size_t)p->n_defs + 1, sizeof(int)),
                 .n_params = calloc((size_t)p->n_defs + 1, sizeof(int))};
    int total = 0;
    for (int d = 0; cp.first && cp.n_params && d < p->n_defs; d++) {
        cp.first[d] = total;
        for (const pgl_expr *b = p->defs[d].body; b->kind == PGL_LAM; b = b->a) cp.n_params[d]++;
        total += cp.n_params[d];
    }
    cp.copied = calloc((size_t)total + 1, sizeof(bool));
    if (!cp.first || !cp.n_params || !cp.copied || !cp.held) {
        free(cp.first), free(cp.n_params), free(cp.copied), free(cp.held);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory checking the program");
        return -1;
    }
    /* which parameters each function copies: more become known as they are found (a parameter
     * passed on to a copied one), so until nothing changes */
    for (bool changed = true; changed;) {
        changed = false;
        for (int d = 0; d < p->n_defs; d++) {
            const pgl_expr *lam = p->defs[d].body;
            for (int i = 0; i < cp.n_params[d]; i++, lam = lam->a) {
                bool *c = &cp.copied[cp.first[d] + i];
                if (!*c && copies_var(&cp, lam->a, lam->name)) *c = changed = true;
            }
        }
    }
    int rc = 0;
    for (int d = 0; d < p->n_defs && !rc; d++) rc = check(&cp, p->defs[d].body, NULL, 0, err);
    while (blocks) {
        scope_block *next = blocks->next;
        free(blocks);
        blocks = next;
    }
    while (summaries) {
        summary *next = summaries->next;
        free(summaries);
        summaries = next;
    }
    free(cp.first), free(cp.n_params), free(cp.copied), free(cp.held);
    return rc;
}
