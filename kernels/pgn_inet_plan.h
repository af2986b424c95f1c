/* pgn_inet_plan.h: a definition compiled into steps (HVM2's gen-c "fast paths", as data). A CALL
 * @f ~ b interprets @f's net; its plan instead walks @f's net against b and does on the way the
 * interactions that are already decided: the root's CON against b's CON annihilates at once, a
 * number met by a switch picks its branch, a number met by an operator with a literal operand is
 * computed, a number or an eraser met by a CON or DUP is copied into both ports. What such an
 * interaction would have allocated, pushed and popped never is, and a variable whose first end
 * meets a port is not allocated either: its other end gets that port. Interactions done so are
 * counted as they happen, and since the count to normal form does not depend on the order (nets
 * are strongly confluent, and an operator looks at its first port as stored: see below), every
 * count and result equals the interpreted CALL's.
 *
 * engine/inet/inet_plan.c compiles each definition into steps over registers: register 0 holds
 * b, register 1 is a flag that stays 0, then one register per variable of the definition, then
 * temporaries. A register holds a port of the net or NONE. A step connects a piece of the
 * definition to a register: when the register holds a port, the piece is linked to it (or matched
 * against it); when it holds NONE, the piece is built and its port stored there for the parent.
 * The host reducer runs the steps with pgn_inet_plan_run; the OpenCL reducer is given them as
 * code (engine/inet/inet_plan.c writes one function per definition calling these steps with
 * constant registers, which the compiler keeps in machine registers).
 *
 * An operator's first port is looked at as stored (pgn_inet_rules.h, OPER): a variable there must
 * stay a variable even when its other end has met a number, or the OPER would compute at once
 * where the interpreted CALL swaps and counts one more. Such a variable is always allocated
 * (VAR1A). Nothing else looks at a stored port.
 *
 * The step codes and registers below are all that engine/inet/inet_plan.c needs; the steps
 * themselves are defined where a reducer includes this file after pgn_inet_rules.h, with three more
 * definitions of its own:
 *   PGN_INET_ENTER(n, p)  p, or what p's variable holds when its other end has been linked (the
 *                         variable used up), as the reducer's linking enters it
 *   PGN_INET_COUNT(n, k)  k more interactions
 *   PGN_INET_PLAN         the address space of a plan's steps (empty on the host)
 *   PGN_INET_BAG(n), PGN_INET_BAG_TOP(n)  its redex bag (an array of pairs) and where the next
 *                         redex goes (the bag is reduced from the top)
 *
 * Order: the interpreted CALL queues the definition's redexes, then root ~ b on top, so what the
 * root's interaction makes is reduced first, depth first; a plan does the root first (its
 * variables bound before the redexes are built), so the redexes the root queued are then moved
 * above the definition's (pgn_inet_plan_order). Without that, a tree's sum built the whole tree
 * before summing it (tree_sum: a million live nodes instead of under 200). */
#ifndef PGN_INET_PLAN_H
#define PGN_INET_PLAN_H

/* Steps: STEP_WORDS words each, the step's code then its operands (registers unless said). */
#define PGN_INET_STEP_WORDS 6u
#define PGN_INET_STEP_VAR1 0u      /* v x: a variable's first end, at x */
#define PGN_INET_STEP_VAR1A 1u     /* v x: the same, always allocated (an operator's first port) */
#define PGN_INET_STEP_VAR2 2u      /* v x: its second end, at x */
#define PGN_INET_STEP_LIT 3u       /* port x: a nullary port (ERA, NUM, REF) at x */
#define PGN_INET_STEP_MATCH 4u     /* tag x x1 x2 f: a node of tag against x: ANNI, or a copy */
#define PGN_INET_STEP_MATCH_OPR 5u /* numb x x2 f: an operator with a literal first port */
#define PGN_INET_STEP_MATCH_SWI 6u /* x r xa xb f: a switch whose first port is a CON node */
#define PGN_INET_STEP_MAKE 7u      /* tag xa xb x f: unless f, the node (xa xb) at x */
#define PGN_INET_STEP_ROOT_END 8u  /* the root is done: the redexes come next */

#define PGN_INET_REG_B 0u
#define PGN_INET_REG_NEVER 1u
#define PGN_INET_REG_VARS 2u

#ifdef PGN_INET_NET

/* x ~ p when x holds a port; else p is stored in x. */
PGN_INET_RULE void pgn_inet_step_put(PGN_INET_NET *n, pgn_u32 p, pgn_u32 *x) {
    if (*x == PGN_INET_NONE) *x = p;
    else PGN_INET_CONNECT(n, p, *x);
}

/* A variable's first end: at a port, the variable is that port (nothing allocated); else a new
 * variable, both ends' port. */
PGN_INET_RULE void pgn_inet_step_var1(PGN_INET_NET *n, pgn_u32 *v, pgn_u32 *x) {
    if (*x == PGN_INET_NONE) *v = *x = pgn_inet_port(PGN_INET_VAR, PGN_INET_VAR_ALLOC(n));
    else *v = *x;
}

PGN_INET_RULE void pgn_inet_step_var1a(PGN_INET_NET *n, pgn_u32 *v, pgn_u32 *x) {
    *v = pgn_inet_port(PGN_INET_VAR, PGN_INET_VAR_ALLOC(n));
    pgn_inet_step_put(n, *v, x);
}

/* The pattern's reading of x: NONE (nothing to match, build), or the port x leads to. */
PGN_INET_RULE pgn_u32 pgn_inet_step_look(PGN_INET_NET *n, pgn_u32 *x) {
    if (*x != PGN_INET_NONE) *x = PGN_INET_ENTER(n, *x);
    return *x;
}

/* T(x1 x2) ~ x: x a node of tag T: ANNI; x an eraser, or a number against CON or DUP: ERAS
 * (copied into both). f says whether it interacted; x1 and x2 then hold the ports to go on with,
 * else they stay NONE and the node is built (MAKE). */
PGN_INET_RULE void pgn_inet_step_match(PGN_INET_NET *n, pgn_u32 tag, pgn_u32 *x, pgn_u32 *x1, pgn_u32 *x2,
                                       pgn_u32 *f) {
    pgn_u32 p = pgn_inet_step_look(n, x);
    *f = 0;
    if (p == PGN_INET_NONE) return;
    pgn_u32 t = pgn_inet_tag(p);
    if (t == tag) {
        pgn_u64 B = PGN_INET_NODE_LOAD(n, pgn_inet_val(p));
        PGN_INET_NODE_FREE(n, pgn_inet_val(p));
        *x1 = pgn_inet_fst(B);
        *x2 = pgn_inet_snd(B);
    } else if (t == PGN_INET_ERA || (t == PGN_INET_NUM && tag <= PGN_INET_DUP)) {
        *x1 = *x2 = p;
    } else {
        return;
    }
    PGN_INET_COUNT(n, 1);
    *f = 1;
}

/* $(#m x2) ~ x, x a number #k: OPER, x2 gets #(k op m). */
PGN_INET_RULE void pgn_inet_step_match_opr(PGN_INET_NET *n, pgn_u32 m, pgn_u32 *x, pgn_u32 *x2, pgn_u32 *f) {
    pgn_u32 p = pgn_inet_step_look(n, x);
    *f = 0;
    if (p == PGN_INET_NONE || pgn_inet_tag(p) != PGN_INET_NUM) return;
    *x2 = pgn_inet_port(PGN_INET_NUM, pgn_inet_operate(pgn_inet_val(p), m));
    PGN_INET_COUNT(n, 1);
    *f = 1;
}

/* ?((xa xb) r) ~ x, x a number #k: SWIT, then the switch's CON against the definition's branch
 * pair (ANNI): #0: xa ~ r, xb ~ *; #k: xa ~ *, xb ~ (#k-1 r). r was built before. */
PGN_INET_RULE void pgn_inet_step_match_swi(PGN_INET_NET *n, pgn_u32 *x, pgn_u32 *r, pgn_u32 *xa, pgn_u32 *xb,
                                           pgn_u32 *f) {
    pgn_u32 p = pgn_inet_step_look(n, x);
    *f = 0;
    if (p == PGN_INET_NONE || pgn_inet_tag(p) != PGN_INET_NUM) return;
    pgn_u32 k = pgn_inet_get_u24(pgn_inet_val(p));
    if (k == 0) {
        *xa = *r;
        *xb = pgn_inet_port(PGN_INET_ERA, 0);
    } else {
        pgn_u32 j = PGN_INET_NODE_ALLOC(n);
        PGN_INET_NODE_STORE(n, j, pgn_inet_pair(pgn_inet_port(PGN_INET_NUM, pgn_inet_u24(k - 1)), *r));
        *xa = pgn_inet_port(PGN_INET_ERA, 0);
        *xb = pgn_inet_port(PGN_INET_CON, j);
    }
    PGN_INET_COUNT(n, 2);
    *f = 1;
}

PGN_INET_RULE void pgn_inet_step_make(PGN_INET_NET *n, pgn_u32 tag, pgn_u32 *xa, pgn_u32 *xb, pgn_u32 *x,
                                      pgn_u32 *f) {
    if (*f) return;
    pgn_u32 i = PGN_INET_NODE_ALLOC(n);
    PGN_INET_NODE_STORE(n, i, pgn_inet_pair(*xa, *xb));
    pgn_inet_step_put(n, pgn_inet_port(tag, i), x);
}

/* The bag's redexes [start, mid) and [mid, top) swap places (in order within each). */
PGN_INET_RULE void pgn_inet_bag_reverse(PGN_INET_NET *n, pgn_u32 lo, pgn_u32 hi) {
    while (lo + 1 < hi) {
        pgn_u64 t = PGN_INET_BAG(n)[lo];
        PGN_INET_BAG(n)[lo++] = PGN_INET_BAG(n)[--hi];
        PGN_INET_BAG(n)[hi] = t;
    }
}

PGN_INET_RULE void pgn_inet_plan_order(PGN_INET_NET *n, pgn_u32 start, pgn_u32 mid) {
    pgn_u32 top = PGN_INET_BAG_TOP(n);
    if (start == mid || mid == top) return;
    pgn_inet_bag_reverse(n, start, mid);
    pgn_inet_bag_reverse(n, mid, top);
    pgn_inet_bag_reverse(n, start, top);
}

/* One step, code and operands a..e, over the registers k; ROOT_END notes in mid where the root's
 * redexes end. PGN_INET_DO_<code> is each step's own code: the interpreter below reaches it
 * through a switch, the compiled definitions (engine/inet/inet_plan.c) name it directly (a
 * switch inlined at every step of a definition, folded only afterwards, took the compiler
 * seconds more for each). */
#define PGN_INET_DO_0(n, k, mid, a, b, c, d, e) pgn_inet_step_var1(n, &k[a], &k[b])
#define PGN_INET_DO_1(n, k, mid, a, b, c, d, e) pgn_inet_step_var1a(n, &k[a], &k[b])
#define PGN_INET_DO_2(n, k, mid, a, b, c, d, e) pgn_inet_step_put(n, k[a], &k[b])
#define PGN_INET_DO_3(n, k, mid, a, b, c, d, e) pgn_inet_step_put(n, a, &k[b])
#define PGN_INET_DO_4(n, k, mid, a, b, c, d, e) pgn_inet_step_match(n, a, &k[b], &k[c], &k[d], &k[e])
#define PGN_INET_DO_5(n, k, mid, a, b, c, d, e) pgn_inet_step_match_opr(n, a, &k[b], &k[c], &k[d])
#define PGN_INET_DO_6(n, k, mid, a, b, c, d, e) pgn_inet_step_match_swi(n, &k[a], &k[b], &k[c], &k[d], &k[e])
#define PGN_INET_DO_7(n, k, mid, a, b, c, d, e) pgn_inet_step_make(n, a, &k[b], &k[c], &k[d], &k[e])
#define PGN_INET_DO_8(n, k, mid, a, b, c, d, e) (mid = PGN_INET_BAG_TOP(n))

PGN_INET_RULE void pgn_inet_step(PGN_INET_NET *n, pgn_u32 *k, pgn_u32 *mid, pgn_u32 code, pgn_u32 a, pgn_u32 b,
                                 pgn_u32 c, pgn_u32 d, pgn_u32 e) {
    switch (code) {
    case PGN_INET_STEP_VAR1: PGN_INET_DO_0(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_VAR1A: PGN_INET_DO_1(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_VAR2: PGN_INET_DO_2(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_LIT: PGN_INET_DO_3(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_MATCH: PGN_INET_DO_4(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_MATCH_OPR: PGN_INET_DO_5(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_MATCH_SWI: PGN_INET_DO_6(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_MAKE: PGN_INET_DO_7(n, k, *mid, a, b, c, d, e); break;
    case PGN_INET_STEP_ROOT_END: PGN_INET_DO_8(n, k, *mid, a, b, c, d, e); break;
    }
}

/* Registers before the first step: b, the flag that stays 0, and NONE. */
PGN_INET_RULE void pgn_inet_plan_start(pgn_u32 *k, pgn_u32 regs, pgn_u32 b) {
    k[PGN_INET_REG_B] = b;
    k[PGN_INET_REG_NEVER] = 0;
    for (pgn_u32 i = PGN_INET_REG_VARS; i < regs; i++) k[i] = PGN_INET_NONE;
}

/* Runs a definition's steps with b in register 0; k holds the plan's registers (their count is
 * the definition's, pgn_inet_def's plan_regs). */
PGN_INET_RULE void pgn_inet_plan_run(PGN_INET_NET *n, PGN_INET_PLAN const pgn_u32 *step, pgn_u32 len, pgn_u32 regs,
                                     pgn_u32 *k, pgn_u32 b) {
    pgn_inet_plan_start(k, regs, b);
    pgn_u32 start = PGN_INET_BAG_TOP(n), mid = start;
    for (PGN_INET_PLAN const pgn_u32 *s = step, *end = step + len * PGN_INET_STEP_WORDS; s < end;
         s += PGN_INET_STEP_WORDS)
        pgn_inet_step(n, k, &mid, s[0], s[1], s[2], s[3], s[4], s[5]);
    pgn_inet_plan_order(n, start, mid);
}

#endif /* PGN_INET_NET */
#endif
