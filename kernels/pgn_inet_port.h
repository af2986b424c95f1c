/* pgn_inet_port.h: the memory layout of an interaction net, shared by the host reducer
 * (engine/inet/inet_host.c), the readback (engine/inet/inet_print.c) and the OpenCL reducer. It is HVM2's
 * layout, so books and heaps mean the same thing everywhere: a port is 32 bits, a 3-bit tag under
 * a 29-bit value; a node (and a redex) is a pair of ports in 64 bits, first port in the low half.
 * Requires pgn_math.h first (for pgn_u32, pgn_u64 and PGN_INLINE). */
#ifndef PGN_INET_PORT_H
#define PGN_INET_PORT_H

/* Tags. The order matters: a redex is reduced with the lower tag first, and tags >= CON own a
 * node (the value is a node index). VAR's value is a variable index, REF's a definition id,
 * NUM's a number (pgn_inet_num.h), ERA's is 0. */
#define PGN_INET_VAR 0u
#define PGN_INET_REF 1u
#define PGN_INET_ERA 2u
#define PGN_INET_NUM 3u
#define PGN_INET_CON 4u
#define PGN_INET_DUP 5u
#define PGN_INET_OPR 6u
#define PGN_INET_SWI 7u

/* Rules, HVM2's eight. Every rule but LINK counts as one interaction. */
#define PGN_INET_LINK 0u
#define PGN_INET_CALL 1u
#define PGN_INET_VOID 2u
#define PGN_INET_ERAS 3u
#define PGN_INET_ANNI 4u
#define PGN_INET_COMM 5u
#define PGN_INET_OPER 6u
#define PGN_INET_SWIT 7u

/* A variable's slot holds NONE while neither end has been linked; ports never equal it
 * (it would be a SWI port with the largest value, which no heap is large enough to hold). */
#define PGN_INET_NONE 0xFFFFFFFFu
/* Values are 29 bits: at most this many nodes, variables or definitions. */
#define PGN_INET_VAL_MAX 0x1FFFFFFFu
/* A REF in a `&!` redex carries this bit in its value (HVM2's sharing hint); the id is below. */
#define PGN_INET_REF_PAR 0x10000000u
#define PGN_INET_REF_FID 0x0FFFFFFFu

PGN_INLINE pgn_u32 pgn_inet_port(pgn_u32 tag, pgn_u32 val) { return (val << 3) | tag; }
PGN_INLINE pgn_u32 pgn_inet_tag(pgn_u32 port) { return port & 7u; }
PGN_INLINE pgn_u32 pgn_inet_val(pgn_u32 port) { return port >> 3; }
PGN_INLINE int pgn_inet_is_node(pgn_u32 port) { return (port & 7u) >= PGN_INET_CON; }

PGN_INLINE pgn_u64 pgn_inet_pair(pgn_u32 fst, pgn_u32 snd) {
    return ((pgn_u64)snd << 32) | (pgn_u64)fst;
}
PGN_INLINE pgn_u32 pgn_inet_fst(pgn_u64 pair) { return (pgn_u32)(pair & 0xFFFFFFFFu); }
PGN_INLINE pgn_u32 pgn_inet_snd(pgn_u64 pair) { return (pgn_u32)(pair >> 32); }

/* The rule for a redex between tags a and b (HVM2's 8x8 table, written as its regularities):
 * anything against a VAR is a LINK; two nullary ports (REF, ERA, NUM) vanish; two nodes annihilate
 * when their tags match and commute otherwise; a REF expands against a node; ERA, and NUM against
 * CON or DUP, erase (copy) into both aux ports; NUM against OPR computes, against SWI branches. */
PGN_INLINE pgn_u32 pgn_inet_rule(pgn_u32 a, pgn_u32 b) {
    if (a == PGN_INET_VAR || b == PGN_INET_VAR) return PGN_INET_LINK;
    pgn_u32 lo = a < b ? a : b, hi = a < b ? b : a;
    if (hi <= PGN_INET_NUM) return PGN_INET_VOID;
    if (lo >= PGN_INET_CON) return lo == hi ? PGN_INET_ANNI : PGN_INET_COMM;
    if (lo == PGN_INET_REF) return PGN_INET_CALL;
    if (lo == PGN_INET_ERA) return PGN_INET_ERAS;
    if (hi == PGN_INET_OPR) return PGN_INET_OPER;
    if (hi == PGN_INET_SWI) return PGN_INET_SWIT;
    return PGN_INET_ERAS;
}

#endif
