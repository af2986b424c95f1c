/* inet_host.c: the sequential host reference reducer. One thread pops redexes off a stack and
 * applies HVM2's rules; each rule is a short function drawn as the rewrite it performs. Wires are
 * HVM2's variables: a variable's slot stays NONE until one of its two ends is linked, then holds
 * what that end was linked to, and the other end's link consumes it. Freed nodes and variables
 * go on free lists threaded through their own slots, so memory follows the live net. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inet/inet.h"
#include "inet/inet_net.h"

/* Interactions between polls of the clock, the interaction limit and should_stop: about a
 * millisecond at 50-100 MIPS, and the poll costs one clock read. */
#define POLL_EVERY 65536u
#define INITIAL_NODES 4096u
#define INITIAL_BAG 1024u

typedef enum { OK = 0, FAIL_OOM, FAIL_NODES, FAIL_VARS, FAIL_BAG, FAIL_CLONE } failure;

struct pgn_inet_net {
    const pgn_inet_book *book;
    pgn_inet_limits lim;
    uint64_t max_itrs;  /* lim.max_interactions, or no limit */
    double t0;          /* when the net was made: timeout_s counts from here */
    uint32_t root;      /* the root variable (HVM2's ROOT) */
    pgn_inet_caps caps; /* how far each heap and the bag may grow (inet_mem.c) */
    uint64_t *node;     /* node[i]: pgn_inet_pair(port 1, port 2); a free slot: the next free index */
    size_t node_cap;
    uint32_t node_top, node_free;
    uint64_t live, peak;
    uint32_t *vars; /* vars[v]: NONE, the port linked to one end, or (free) the next free index */
    size_t var_cap;
    uint32_t var_top, var_free;
    uint64_t *bag; /* redexes still to reduce, reduced last-in first-out */
    size_t bag_len, bag_cap;
    uint32_t *nloc, *vloc; /* where CALL put a definition's nodes and variables */
    uint32_t *k;           /* a plan's registers (kernels/pgn_inet_plan.h) */
    bool plans;            /* CALL runs a definition's plan (pgn_inet_plans_mode) */
    uint64_t bytes, peak_bytes; /* held now (book, heaps, bag, scratch) and at the most */
    uint64_t itrs;              /* interactions so far */
    failure fail;
    uint32_t fail_fid;
};
typedef pgn_inet_net net;

/* ---- memory -------------------------------------------------------------------------------- */

/* buf (*cap elements of elem bytes) doubled, at most to max elements; NULL at max or out of
 * memory. realloc may hold the old block and the new one at once, so the peak counts both. */
static void *grow(net *n, void *buf, size_t *cap, size_t max, size_t elem) {
    size_t c = *cap * 2 < max ? *cap * 2 : max;
    if (c <= *cap) return NULL;
    void *p = realloc(buf, c * elem);
    if (!p) return NULL;
    if (n->bytes + c * elem > n->peak_bytes) n->peak_bytes = n->bytes + c * elem;
    n->bytes += (c - *cap) * elem;
    *cap = c;
    return p;
}

/* On failure the net is flagged (the run stops after this interaction) and slot 0 is returned,
 * a scratch slot nothing reads, so the interaction can finish without checks. The limit is on
 * live nodes, so a free slot is always below node_slots. */
static uint32_t node_alloc(net *n) {
    if (n->live == n->caps.node_limit) {
        if (!n->fail) n->fail = FAIL_NODES;
        return 0;
    }
    uint32_t i = n->node_free;
    if (i) {
        n->node_free = (uint32_t)n->node[i];
    } else {
        if (n->node_top == n->node_cap) {
            uint64_t *p = grow(n, n->node, &n->node_cap, n->caps.node_slots, sizeof *p);
            if (!p) {
                if (!n->fail) n->fail = FAIL_OOM;
                return 0;
            }
            n->node = p;
        }
        i = n->node_top++;
    }
    if (++n->live > n->peak) n->peak = n->live;
    return i;
}

static void node_free(net *n, uint32_t i) {
    n->node[i] = n->node_free;
    n->node_free = i;
    n->live--;
}

/* A new wire: both ends still unlinked. Past var_limit the run is flagged but the interaction
 * goes on with real slots (var_slots keeps one interaction's worth above the limit): a scratch
 * variable shared by several wires could link into a cycle. */
static uint32_t var_alloc(net *n) {
    uint32_t i = n->var_free;
    if (i) {
        n->var_free = n->vars[i];
    } else {
        if (n->var_top >= n->caps.var_limit && !n->fail) n->fail = FAIL_VARS;
        if (n->var_top == n->var_cap) {
            uint32_t *p = grow(n, n->vars, &n->var_cap, n->caps.var_slots, sizeof *p);
            if (!p) {
                if (!n->fail) n->fail = FAIL_OOM;
                return 0;
            }
            n->vars = p;
        }
        i = n->var_top++;
    }
    n->vars[i] = PGN_INET_NONE;
    return i;
}

static void var_free(net *n, uint32_t v) {
    n->vars[v] = n->var_free;
    n->var_free = v;
}

/* A redex between two nullary ports (VOID) only counts: counted here rather than left in the
 * bag under the work pushed after it, where such redexes would pile up (a loop leaves one a turn).
 * Every other redex holds a node's principal port, so the bag never holds more than bag_slots. */
static void push_redex(net *n, uint32_t a, uint32_t b) {
    if (pgn_inet_tag(a) < PGN_INET_CON && pgn_inet_tag(b) < PGN_INET_CON) {
        n->itrs++;
        return;
    }
    if (n->bag_len == n->bag_cap) {
        uint64_t *p = grow(n, n->bag, &n->bag_cap, n->caps.bag_slots, sizeof *p);
        if (!p) {
            if (!n->fail) n->fail = n->bag_cap == n->caps.bag_slots ? FAIL_BAG : FAIL_OOM;
            return;
        }
        n->bag = p;
    }
    n->bag[n->bag_len++] = pgn_inet_pair(a, b);
}

/* ---- linking ------------------------------------------------------------------------------- */

/* What the end p of a wire leads to: while p is a variable whose other end has been linked,
 * step to what that was linked to. Each variable stepped through is used up (both its ends have
 * now been consumed) and freed. */
static uint32_t enter(net *n, uint32_t p) {
    while (pgn_inet_tag(p) == PGN_INET_VAR) {
        uint32_t v = pgn_inet_val(p), s = n->vars[v];
        if (s == PGN_INET_NONE) break;
        var_free(n, v);
        p = s;
    }
    return p;
}

/* Connects a ~ b. Two non-variables make a redex. A variable whose other end is still unlinked
 * records b for it; one whose other end was already linked (to c) is used up, and c ~ b is
 * linked instead. A wire linked to its own other end is a closed loop and simply vanishes. */
static void link_ports(net *n, uint32_t a, uint32_t b) {
    for (;;) {
        if (pgn_inet_tag(a) != PGN_INET_VAR) {
            if (pgn_inet_tag(b) != PGN_INET_VAR) {
                push_redex(n, a, b);
                return;
            }
            uint32_t t = a;
            a = b;
            b = t;
        }
        b = enter(n, b);
        uint32_t v = pgn_inet_val(a);
        if (b == a) {
            var_free(n, v);
            return;
        }
        uint32_t other = n->vars[v];
        if (other == PGN_INET_NONE) {
            n->vars[v] = b;
            return;
        }
        var_free(n, v);
        a = other;
    }
}

/* ---- the rules -----------------------------------------------------------------------------
 * Written once for every reducer (kernels/pgn_inet_rules.h), over this file's memory and links. */

static inline void call_def(net *n, uint32_t a, uint32_t b);

#define PGN_INET_NET net
#define PGN_INET_RULE static inline
#define PGN_INET_BOOK
#define PGN_INET_PLAN
#define PGN_INET_ENTER(n, p) enter((n), (p))
#define PGN_INET_COUNT(n, k) ((n)->itrs += (k))
#define PGN_INET_BAG(n) ((n)->bag)
#define PGN_INET_BAG_TOP(n) ((uint32_t)(n)->bag_len)
#define PGN_INET_CALL_DEF(n, a, b) call_def((n), (a), (b))
#define PGN_INET_NODE_ALLOC(n) node_alloc(n)
#define PGN_INET_NODE_FREE(n, i) node_free((n), (i))
#define PGN_INET_VAR_ALLOC(n) var_alloc(n)
#define PGN_INET_CONNECT(n, a, b) link_ports((n), (a), (b))
#define PGN_INET_DEF(n, fid, v)                                                                              \
    do {                                                                                                     \
        const pgn_inet_def *d_ = &(n)->book->defs[fid];                                                      \
        *(v) = (pgn_inet_def_view){d_->root, d_->node_len, d_->rbag_len, d_->vars_len,                  \
                                   (n)->book->nodes + d_->node_off, (n)->book->rbag + d_->rbag_off};        \
    } while (0)
#include "pgn_inet_rules.h"
#include "pgn_inet_plan.h"

/* CALL: the definition's plan, or the definition interpreted where it has none. */
static inline void call_def(net *n, uint32_t a, uint32_t b) {
    const pgn_inet_def *d = &n->book->defs[pgn_inet_val(a) & PGN_INET_REF_FID];
    if (n->plans && d->plan_len)
        pgn_inet_plan_run(n, n->book->plan + (size_t)d->plan_off * PGN_INET_STEP_WORDS, d->plan_len, d->plan_regs,
                          n->k, b);
    else
        pgn_inet_call(n, a, b);
}

/* ---- the run ------------------------------------------------------------------------------- */

int pgn_inet_fail_limit(pgn_error *err, const char *name, const char *fmt, ...) {
    char msg[512], field[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(field, sizeof field, "limits.%s", name);
    pgn_error_set(err, PGN_E_LIMIT_EXCEEDED, field, "%s: %s", name, msg);
    return -1;
}

int pgn_inet_fail_clone(const pgn_inet_book *book, uint32_t fid, pgn_error *err) {
    pgn_error_set(err, PGN_E_INVALID_PROGRAM, "",
                  "a DUP tried to copy @%s, which contains a duplicator (HVM2: attempt to clone a "
                  "non-affine global reference)",
                  book->defs[fid].name);
    return -1;
}

/* No fraction goes to on_progress: how many interactions a program needs is known only once it
 * has reached its normal form, and the share of a limit used is not progress (a program far
 * inside its limits showed a few percent, then 100 % at its end). The rate is the run's so far,
 * as its result's "mips" is the whole run's. */
void pgn_inet_report(const pgn_run_hooks *hooks, uint64_t itrs, double elapsed) {
    if (!hooks->on_metric) return;
    hooks->on_metric(hooks->ctx, "interactions", (int64_t)itrs, (double)itrs);
    if (elapsed > 0) hooks->on_metric(hooks->ctx, "mips", (int64_t)itrs, (double)itrs / elapsed / 1e6);
}

void pgn_inet_net_free(net *n) {
    if (!n) return;
    free(n->node);
    free(n->vars);
    free(n->bag);
    free(n->nloc);
    free(n->vloc);
    free(n->k);
    free(n);
}

/* A net with its heaps, bag and scratch at their first sizes (or at least n_nodes and n_vars
 * slots) and nothing in them; NULL when out of memory. */
static net *net_new(const pgn_inet_book *book, const pgn_inet_limits *lim, uint32_t n_nodes, uint32_t n_vars) {
    net *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->book = book;
    n->lim = lim ? *lim : (pgn_inet_limits){0};
    n->max_itrs = n->lim.max_interactions ? n->lim.max_interactions : UINT64_MAX;
    pgn_inet_caps_of(book, n->lim.max_nodes, 0, &n->caps);
    n->node_cap = INITIAL_NODES < n->caps.node_slots ? INITIAL_NODES : n->caps.node_slots;
    n->var_cap = INITIAL_NODES < n->caps.var_slots ? INITIAL_NODES : n->caps.var_slots;
    if (n->node_cap < n_nodes) n->node_cap = n_nodes;
    if (n->var_cap < n_vars) n->var_cap = n_vars;
    n->bag_cap = INITIAL_BAG < n->caps.bag_slots ? INITIAL_BAG : n->caps.bag_slots;
    size_t scratch = ((size_t)book->max_def_nodes + 1 + (size_t)book->max_def_vars + 1 + (size_t)book->max_plan_regs + 1) *
                     sizeof(uint32_t);
    n->node = malloc(n->node_cap * sizeof *n->node);
    n->vars = malloc(n->var_cap * sizeof *n->vars);
    n->bag = malloc(n->bag_cap * sizeof *n->bag);
    n->nloc = malloc(((size_t)book->max_def_nodes + 1) * sizeof *n->nloc);
    n->vloc = malloc(((size_t)book->max_def_vars + 1) * sizeof *n->vloc);
    n->k = malloc(((size_t)book->max_plan_regs + 1) * sizeof *n->k);
    n->plans = pgn_inet_plans_mode() != PGN_INET_PLANS_OFF;
    if (!n->node || !n->vars || !n->bag || !n->nloc || !n->vloc || !n->k) {
        pgn_inet_net_free(n);
        return NULL;
    }
    n->bytes = n->peak_bytes = pgn_inet_book_bytes(book) + n->node_cap * sizeof *n->node +
                               n->var_cap * sizeof *n->vars + n->bag_cap * sizeof *n->bag + scratch;
    n->t0 = pgn_now_s();
    return n;
}

int pgn_inet_net_new(const pgn_inet_book *book, const pgn_inet_limits *lim, net **out, pgn_error *err) {
    net *n = *out = net_new(book, lim, 0, 0);
    if (!n) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory setting up the heap");
        return -1;
    }
    n->node[0] = 0;
    n->node_top = n->var_top = 1;
    n->root = var_alloc(n);
    return 0;
}

int pgn_inet_net_adopt(const pgn_inet_book *book, const pgn_inet_limits *lim, const uint64_t *nodes,
                       uint32_t n_nodes, const uint32_t *vars, uint32_t n_vars, uint32_t root, uint64_t itrs,
                       net **out, pgn_error *err) {
    net *n = *out = net_new(book, lim, n_nodes + 1, n_vars + 1);
    if (!n) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory taking the net over from the device");
        return -1;
    }
    memcpy(n->node, nodes, (size_t)n_nodes * sizeof *nodes);
    memcpy(n->vars, vars, (size_t)n_vars * sizeof *vars);
    n->node_top = n_nodes > 0 ? n_nodes : 1;
    n->var_top = n_vars > root ? n_vars : root + 1;
    n->root = root;
    n->itrs = itrs;
    /* what it holds is not known slot by slot: counted as all live, with room for the IO's data */
    n->live = n->peak = n->node_top;
    if (n->caps.node_limit < n->live + INITIAL_NODES) n->caps.node_limit = n->live + INITIAL_NODES;
    if (n->caps.node_slots < n->caps.node_limit + 1) n->caps.node_slots = (uint32_t)(n->caps.node_limit + 1);
    if (n->caps.var_limit < n->var_top + 2 * INITIAL_NODES) n->caps.var_limit = n->var_top + 2 * INITIAL_NODES;
    if (n->caps.var_slots < n->caps.var_limit) n->caps.var_slots = n->caps.var_limit;
    return 0;
}

uint32_t pgn_inet_net_root(const net *n) { return pgn_inet_port(PGN_INET_VAR, n->root); }
uint32_t pgn_inet_net_root_get(const net *n) { return n->vars[n->root]; }
void pgn_inet_net_root_set(net *n, uint32_t port) { n->vars[n->root] = port; }
uint64_t pgn_inet_net_interactions(const net *n) { return n->itrs; }
uint64_t pgn_inet_net_load(const net *n, uint32_t i) { return i < n->node_top ? n->node[i] : 0; }

uint32_t pgn_inet_net_peek(const net *n, uint32_t p) {
    while (pgn_inet_tag(p) == PGN_INET_VAR && pgn_inet_val(p) < n->var_top) {
        uint32_t s = n->vars[pgn_inet_val(p)];
        if (s == PGN_INET_NONE) break;
        p = s;
    }
    return p;
}

uint32_t pgn_inet_net_node(net *n, uint32_t fst, uint32_t snd) {
    uint32_t i = node_alloc(n);
    n->node[i] = pgn_inet_pair(fst, snd);
    return i;
}

uint32_t pgn_inet_net_var(net *n) { return pgn_inet_port(PGN_INET_VAR, var_alloc(n)); }

uint64_t pgn_inet_net_live(const net *n) { return n->live; }

/* A growable list of ports (or variables) for pgn_inet_net_drop; false when out of memory. */
typedef struct {
    uint32_t *at;
    size_t len, cap;
} port_list;

static bool list_push(port_list *l, uint32_t p) {
    if (l->len == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint32_t *grown = realloc(l->at, cap * sizeof *grown);
        if (!grown) return false;
        l->at = grown, l->cap = cap;
    }
    l->at[l->len++] = p;
    return true;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void pgn_inet_net_drop(net *n, const uint32_t *roots, size_t n_roots, uint32_t keep) {
    port_list todo = {0}, ends = {0}; /* ends: unlinked variables met, each once per end */
    bool ok = true;
    for (size_t r = 0; r < n_roots && ok; r++) ok = list_push(&todo, roots[r]);
    while (ok && todo.len) {
        uint32_t p = todo.at[--todo.len];
        while (p != keep && pgn_inet_tag(p) == PGN_INET_VAR) {
            uint32_t v = pgn_inet_val(p), s = n->vars[v];
            if (s == PGN_INET_NONE) { /* its other end is elsewhere, or met later here */
                ok = list_push(&ends, v);
                break;
            }
            var_free(n, v); /* linked: what it holds came down this wire and goes with it */
            p = s;
        }
        uint32_t v = pgn_inet_val(p);
        if (p == keep || pgn_inet_tag(p) < PGN_INET_CON || v == 0) continue; /* nullary, or the scratch slot */
        uint64_t pair = n->node[v];
        node_free(n, v);
        ok = list_push(&todo, pgn_inet_fst(pair)) && list_push(&todo, pgn_inet_snd(pair));
    }
    /* a variable with both ends in what was dropped goes too; one with an end elsewhere stays */
    qsort(ends.at, ends.len, sizeof *ends.at, cmp_u32);
    for (size_t i = 0; i + 1 < ends.len; i++)
        if (ends.at[i] == ends.at[i + 1]) var_free(n, ends.at[i++]);
    free(todo.at);
    free(ends.at);
}

double pgn_inet_net_time_left(const net *n) {
    return n->lim.timeout_s > 0 ? n->lim.timeout_s - (pgn_now_s() - n->t0) : -1.0;
}

/* HVM2's boot_redex(a ~ b): the root variable is emptied first. A REF against the root itself
 * is called (a CALL that counts, as HVM2 counts it); anything else is linked, a redex reduced by
 * the next normalize. */
void pgn_inet_net_boot(net *n, uint32_t a, uint32_t b) {
    n->vars[n->root] = PGN_INET_NONE;
    if (pgn_inet_tag(a) == PGN_INET_REF && b == pgn_inet_net_root(n)) {
        n->itrs++;
        call_def(n, a, b);
    } else {
        link_ports(n, a, b);
    }
}

/* The failure a net was flagged with, or a limit it reached, as an error. */
static int net_failure(net *n, const char *stop, pgn_error *err) {
    const pgn_inet_limits *L = &n->lim;
    if (n->fail == FAIL_CLONE) return pgn_inet_fail_clone(n->book, n->fail_fid, err);
    if (n->fail == FAIL_NODES && n->caps.address_space)
        return pgn_inet_fail_limit(err, "max_nodes", "the heap's address space of %llu nodes is full (after %llu "
                                   "interactions)", (unsigned long long)n->caps.node_limit, (unsigned long long)n->itrs);
    if (n->fail == FAIL_NODES)
        return pgn_inet_fail_limit(err, "max_nodes", "%llu live nodes reached (after %llu interactions)",
                                   (unsigned long long)L->max_nodes, (unsigned long long)n->itrs);
    if (n->fail == FAIL_VARS || n->fail == FAIL_BAG) {
        bool vars = n->fail == FAIL_VARS;
        char most[96];
        if (n->caps.address_space) snprintf(most, sizeof most, "the heaps' address space");
        else snprintf(most, sizeof most, "%llu nodes", (unsigned long long)L->max_nodes);
        return pgn_inet_fail_limit(err, "max_nodes", "the %s is full at %llu %s, the most %s allow%s (after %llu "
                                   "interactions)", vars ? "variable heap" : "redex bag",
                                   (unsigned long long)(vars ? n->caps.var_limit - 1 : n->caps.bag_slots),
                                   vars ? "variables" : "redexes", most, n->caps.address_space ? "s" : "",
                                   (unsigned long long)n->itrs);
    }
    if (n->fail == FAIL_OOM) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory after %llu interactions (%llu live nodes)",
                      (unsigned long long)n->itrs, (unsigned long long)n->live);
        return -1;
    }
    if (!strcmp(stop, "max_interactions"))
        return pgn_inet_fail_limit(err, "max_interactions", "%llu interactions reached", (unsigned long long)n->max_itrs);
    if (!strcmp(stop, "timeout_s"))
        return pgn_inet_fail_limit(err, "timeout_s", "%g s reached (after %llu interactions)", L->timeout_s,
                                   (unsigned long long)n->itrs);
    pgn_error_set(err, PGN_E_CANCELLED, "", "cancelled after %llu interactions", (unsigned long long)n->itrs);
    return -1;
}

int pgn_inet_net_normalize(net *n, const pgn_run_hooks *hooks, pgn_error *err) {
    uint8_t rules[64]; /* pgn_inet_rule_of by tags */
    for (uint32_t a = 0; a < 8; a++)
        for (uint32_t b = 0; b < 8; b++)
            rules[a * 8 + b] = (uint8_t)pgn_inet_rule_of(pgn_inet_port(a, 0), pgn_inet_port(b, 0));
    double next_report = pgn_now_s() + PGN_INET_REPORT_EVERY_S;
    uint64_t max_itrs = n->max_itrs;
    uint64_t next_poll = n->itrs + POLL_EVERY < max_itrs ? n->itrs + POLL_EVERY : max_itrs;
    const char *stop = NULL;
    while (n->bag_len && !n->fail) {
        if (n->itrs >= next_poll) {
            if (n->itrs >= max_itrs) {
                stop = "max_interactions";
                break;
            }
            double now = pgn_now_s();
            if (n->lim.timeout_s > 0 && now - n->t0 >= n->lim.timeout_s) {
                stop = "timeout_s";
                break;
            }
            if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
                stop = "cancelled";
                break;
            }
            if (hooks && now >= next_report) {
                next_report = now + PGN_INET_REPORT_EVERY_S;
                pgn_inet_report(hooks, n->itrs, now - n->t0);
            }
            next_poll = n->itrs + POLL_EVERY < max_itrs ? n->itrs + POLL_EVERY : max_itrs;
        }
        uint64_t r = n->bag[--n->bag_len];
        uint32_t a = pgn_inet_fst(r), b = pgn_inet_snd(r);
        if (pgn_inet_tag(b) < pgn_inet_tag(a)) {
            uint32_t t = a;
            a = b;
            b = t;
        }
        uint32_t rule = rules[pgn_inet_tag(a) * 8 + pgn_inet_tag(b)];
        if (rule == PGN_INET_LINK) { /* not an interaction (never queued) */
            link_ports(n, a, b);
            continue;
        }
        /* through a DUP, a definition with a DUP in it cannot be copied: HVM2's reference
         * runtime refuses it too */
        uint32_t fid = pgn_inet_val(a) & PGN_INET_REF_FID;
        if (rule == PGN_INET_ERAS && pgn_inet_tag(a) == PGN_INET_REF && !n->book->defs[fid].safe) {
            n->fail = FAIL_CLONE;
            n->fail_fid = fid;
        } else {
            pgn_inet_interact(n, rule, a, b);
        }
        n->itrs++;
    }
    if (!stop && !n->fail && n->itrs > max_itrs) stop = "max_interactions"; /* VOIDs at the end */
    return stop || n->fail ? net_failure(n, stop ? stop : "", err) : 0;
}

char *pgn_inet_net_readback(net *n, pgn_error *err) {
    uint64_t printing = 0;
    char *nf = pgn_inet_readback(n->book, n->node, n->node_top, n->vars, n->var_top, pgn_inet_net_root(n),
                                 &printing, err);
    if (n->bytes + printing > n->peak_bytes) n->peak_bytes = n->bytes + printing;
    return nf;
}

void pgn_inet_net_peaks(const net *n, uint64_t *nodes, uint64_t *bytes) {
    *nodes = n->peak;
    *bytes = n->peak_bytes;
}

double pgn_inet_net_seconds(const net *n) { return pgn_now_s() - n->t0; }

void pgn_inet_result_free(pgn_inet_result *r) {
    if (!r) return;
    free(r->normal_form);
    free(r->output);
    r->normal_form = r->output = NULL;
}
