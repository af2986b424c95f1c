/* pgn_inet_rules.h: HVM2's interaction rules, written once for every reducer: the host reference
 * (engine/inet/inet_host.c) and the OpenCL kernel (kernels/inet.cl) include this file after
 * saying how their memory works, so the rewrites, and with them the interaction counts, cannot
 * drift apart. A reducer for another device (a GPU family's) includes it the same way.
 *
 * Before including it, a reducer defines:
 *   PGN_INET_NET           its state type; the rules use three of its members: node (the node heap,
 *                          node[i] a pgn_inet_pair), nloc and vloc (scratch for one CALL's slots)
 *   PGN_INET_RULE          the qualifiers of these functions (static inline, always_inline, ...)
 *   PGN_INET_BOOK          the address space of the book's arrays (empty on the host, __global)
 *   PGN_INET_NODE_ALLOC(n), PGN_INET_NODE_FREE(n, i), PGN_INET_VAR_ALLOC(n)
 *                          its allocators (a rule never sees one fail: the host flags the net and
 *                          hands out a scratch slot, the kernel reserved the worst case first)
 *   PGN_INET_CONNECT(n, a, b) links a ~ b
 *   PGN_INET_DEF(n, fid, d) a statement filling the pgn_inet_def_view *d with definition fid
 *   PGN_INET_CALL_DEF(n, a, b) how it applies CALL (declared before this file): pgn_inet_call
 *                          below, or the definition's plan (pgn_inet_plan.h) where it has one
 * and may define PGN_INET_NODE_LOAD(n, i) and PGN_INET_NODE_STORE(n, i, v) (below: plain).
 *
 * The OpenCL program has no include path: device.c puts this file's text where a kernel file
 * includes it (program_source), so it is not prepended to the program as other headers are.
 * Requires pgn_math.h, pgn_inet_port.h and pgn_inet_num.h first. */
#ifndef PGN_INET_RULES_H
#define PGN_INET_RULES_H

/* How the rules and plans read and write a node slot: plainly, unless the reducer says otherwise
 * (kernels/inet_worker.h on Oclgrind, whose race checker sees atomics but not fences). */
#ifndef PGN_INET_NODE_LOAD
#define PGN_INET_NODE_LOAD(n, i) ((n)->node[i])
#define PGN_INET_NODE_STORE(n, i, v) ((n)->node[i] = (v))
#endif
/* A node slot that node i will point at (SWIT reuses i): an allocation like any other, unless the
 * reducer keeps some nodes apart (kernels/inet_worker.h's local net: a global node holds no port
 * of a local one). */
#ifndef PGN_INET_NODE_ALLOC_NEAR
#define PGN_INET_NODE_ALLOC_NEAR(n, i) PGN_INET_NODE_ALLOC(n)
#endif

/* One definition of the book, as the rules read it: its root port, its nodes (ports numbered
 * within the definition) and its redexes, and how many variables a copy allocates. */
typedef struct {
    pgn_u32 root, node_len, rbag_len, vars_len;
    PGN_INET_BOOK const pgn_u64 *nodes, *rbag;
} pgn_inet_def_view;

/* A definition's port rebased onto the nodes and variables this CALL allocated. */
PGN_INET_RULE pgn_u32 pgn_inet_adjust(PGN_INET_NET *n, pgn_u32 p) {
    pgn_u32 tag = pgn_inet_tag(p);
    if (tag >= PGN_INET_CON) return pgn_inet_port(tag, n->nloc[pgn_inet_val(p)]);
    if (tag == PGN_INET_VAR) return pgn_inet_port(PGN_INET_VAR, n->vloc[pgn_inet_val(p)]);
    return p;
}

/* Drawn as HVM2 draws them: X(a b) is a node of tag X with aux ports a and b; the left side of
 * the line is the redex, the right side what replaces it. In every rule tag(a) <= tag(b). */

/* @f ~ B  ---CALL--->  a fresh copy of @f's net, its root ~ B, its redexes linked
 * (B is a node other than a DUP, or the root variable: through a DUP a definition is copied by
 * ERAS, or refused, as each reducer decides before it gets here) */
PGN_INET_RULE void pgn_inet_call(PGN_INET_NET *n, pgn_u32 a, pgn_u32 b) {
    pgn_inet_def_view d;
    PGN_INET_DEF(n, pgn_inet_val(a) & PGN_INET_REF_FID, &d);
    for (pgn_u32 i = 0; i < d.vars_len; i++) n->vloc[i] = PGN_INET_VAR_ALLOC(n);
    for (pgn_u32 i = 0; i < d.node_len; i++) n->nloc[i] = PGN_INET_NODE_ALLOC(n);
    for (pgn_u32 i = 0; i < d.node_len; i++)
        PGN_INET_NODE_STORE(n, n->nloc[i], pgn_inet_pair(pgn_inet_adjust(n, pgn_inet_fst(d.nodes[i])),
                                                         pgn_inet_adjust(n, pgn_inet_snd(d.nodes[i]))));
    for (pgn_u32 i = 0; i < d.rbag_len; i++)
            PGN_INET_CONNECT(n, pgn_inet_adjust(n, pgn_inet_fst(d.rbag[i])), pgn_inet_adjust(n, pgn_inet_snd(d.rbag[i])));
    PGN_INET_CONNECT(n, pgn_inet_adjust(n, d.root), b);
}

/* *  ~ X(b1 b2)  ---ERAS--->  * ~ b1, * ~ b2      (also a number, or a safe @ref, copied) */
PGN_INET_RULE void pgn_inet_eras(PGN_INET_NET *n, pgn_u32 a, pgn_u32 b) {
    pgn_u32 i = pgn_inet_val(b);
    pgn_u64 B = PGN_INET_NODE_LOAD(n, i);
    PGN_INET_NODE_FREE(n, i);
    PGN_INET_CONNECT(n, a, pgn_inet_fst(B));
    PGN_INET_CONNECT(n, a, pgn_inet_snd(B));
}

/* X(a1 a2) ~ X(b1 b2)  ---ANNI--->  a1 ~ b1, a2 ~ b2 */
PGN_INET_RULE void pgn_inet_anni(PGN_INET_NET *n, pgn_u32 a, pgn_u32 b) {
    pgn_u64 A = PGN_INET_NODE_LOAD(n, pgn_inet_val(a)), B = PGN_INET_NODE_LOAD(n, pgn_inet_val(b));
    PGN_INET_NODE_FREE(n, pgn_inet_val(a));
    PGN_INET_NODE_FREE(n, pgn_inet_val(b));
    PGN_INET_CONNECT(n, pgn_inet_fst(A), pgn_inet_fst(B));
    PGN_INET_CONNECT(n, pgn_inet_snd(A), pgn_inet_snd(B));
}

/* X(a1 a2) ~ Y(b1 b2)  ---COMM--->  a1 ~ Y(x0 x1), a2 ~ Y(x2 x3), b1 ~ X(x0 x2), b2 ~ X(x1 x3) */
PGN_INET_RULE void pgn_inet_comm(PGN_INET_NET *n, pgn_u32 a, pgn_u32 b) {
    pgn_u64 A = PGN_INET_NODE_LOAD(n, pgn_inet_val(a)), B = PGN_INET_NODE_LOAD(n, pgn_inet_val(b));
    PGN_INET_NODE_FREE(n, pgn_inet_val(a));
    PGN_INET_NODE_FREE(n, pgn_inet_val(b));
    pgn_u32 x0 = pgn_inet_port(PGN_INET_VAR, PGN_INET_VAR_ALLOC(n));
    pgn_u32 x1 = pgn_inet_port(PGN_INET_VAR, PGN_INET_VAR_ALLOC(n));
    pgn_u32 x2 = pgn_inet_port(PGN_INET_VAR, PGN_INET_VAR_ALLOC(n));
    pgn_u32 x3 = pgn_inet_port(PGN_INET_VAR, PGN_INET_VAR_ALLOC(n));
    pgn_u32 y0 = PGN_INET_NODE_ALLOC(n), y1 = PGN_INET_NODE_ALLOC(n);
    pgn_u32 z0 = PGN_INET_NODE_ALLOC(n), z1 = PGN_INET_NODE_ALLOC(n);
    PGN_INET_NODE_STORE(n, y0, pgn_inet_pair(x0, x1));
    PGN_INET_NODE_STORE(n, y1, pgn_inet_pair(x2, x3));
    PGN_INET_NODE_STORE(n, z0, pgn_inet_pair(x0, x2));
    PGN_INET_NODE_STORE(n, z1, pgn_inet_pair(x1, x3));
    pgn_u32 ta = pgn_inet_tag(a), tb = pgn_inet_tag(b);
    PGN_INET_CONNECT(n, pgn_inet_port(tb, y0), pgn_inet_fst(A));
    PGN_INET_CONNECT(n, pgn_inet_port(tb, y1), pgn_inet_snd(A));
    PGN_INET_CONNECT(n, pgn_inet_port(ta, z0), pgn_inet_fst(B));
    PGN_INET_CONNECT(n, pgn_inet_port(ta, z1), pgn_inet_snd(B));
}

/* #n ~ $(#m r)  ---OPER--->  r ~ #(n op m)
 * #n ~ $(b r)   ---OPER--->  b ~ $(#n r)      (b not yet a number: the operator waits on it)
 * The operator's first port is looked at as stored, never through its variable, so whether the
 * OPER swaps does not depend on timing, and counts match between reducers. */
PGN_INET_RULE void pgn_inet_oper(PGN_INET_NET *n, pgn_u32 a, pgn_u32 b) {
    pgn_u32 i = pgn_inet_val(b);
    pgn_u64 B = PGN_INET_NODE_LOAD(n, i);
    pgn_u32 b1 = pgn_inet_fst(B), b2 = pgn_inet_snd(B);
    if (pgn_inet_tag(b1) == PGN_INET_NUM) {
        PGN_INET_NODE_FREE(n, i);
        PGN_INET_CONNECT(n, pgn_inet_port(PGN_INET_NUM, pgn_inet_operate(pgn_inet_val(a), pgn_inet_val(b1))), b2);
    } else {
        PGN_INET_NODE_STORE(n, i, pgn_inet_pair(a, b2));
        PGN_INET_CONNECT(n, b1, pgn_inet_port(PGN_INET_OPR, i));
    }
}

/* #0 ~ ?(b r)  ---SWIT--->  b ~ (r *)
 * #k ~ ?(b r)  ---SWIT--->  b ~ (* (#k-1 r))   (k read as u24 whatever the number's type) */
PGN_INET_RULE void pgn_inet_swit(PGN_INET_NET *n, pgn_u32 a, pgn_u32 b) {
    pgn_u32 i = pgn_inet_val(b);
    pgn_u64 B = PGN_INET_NODE_LOAD(n, i);
    pgn_u32 k = pgn_inet_get_u24(pgn_inet_val(a));
    pgn_u32 era = pgn_inet_port(PGN_INET_ERA, 0);
    if (k == 0) {
        PGN_INET_NODE_STORE(n, i, pgn_inet_pair(pgn_inet_snd(B), era));
    } else {
        pgn_u32 j = PGN_INET_NODE_ALLOC_NEAR(n, i);
        PGN_INET_NODE_STORE(n, j, pgn_inet_pair(pgn_inet_port(PGN_INET_NUM, pgn_inet_u24(k - 1)), pgn_inet_snd(B)));
        PGN_INET_NODE_STORE(n, i, pgn_inet_pair(era, pgn_inet_port(PGN_INET_CON, j)));
    }
    PGN_INET_CONNECT(n, pgn_inet_port(PGN_INET_CON, i), pgn_inet_fst(B));
}

/* The rule a ~ b interacts by (tag(a) <= tag(b), neither a VAR): HVM2's table, except that a
 * CALL through a DUP copies the definition by ERAS (a reducer refuses it first when the
 * definition is not safe to copy so: it holds a DUP). */
PGN_INET_RULE pgn_u32 pgn_inet_rule_of(pgn_u32 a, pgn_u32 b) {
    pgn_u32 rule = pgn_inet_rule(pgn_inet_tag(a), pgn_inet_tag(b));
    if (rule == PGN_INET_CALL && pgn_inet_tag(b) == PGN_INET_DUP) return PGN_INET_ERAS;
    return rule;
}

/* Applies rule (pgn_inet_rule_of) to a ~ b. LINK is no interaction and never reaches here. */
PGN_INET_RULE void pgn_inet_interact(PGN_INET_NET *n, pgn_u32 rule, pgn_u32 a, pgn_u32 b) {
    switch (rule) {
    case PGN_INET_CALL: PGN_INET_CALL_DEF(n, a, b); break;
    case PGN_INET_VOID: break;
    case PGN_INET_ERAS: pgn_inet_eras(n, a, b); break;
    case PGN_INET_ANNI: pgn_inet_anni(n, a, b); break;
    case PGN_INET_COMM: pgn_inet_comm(n, a, b); break;
    case PGN_INET_OPER: pgn_inet_oper(n, a, b); break;
    case PGN_INET_SWIT: pgn_inet_swit(n, a, b); break;
    }
}

#endif
