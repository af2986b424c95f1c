/* inet.cl: the OpenCL interaction-net reducer of the cpu family. A persistent kernel: every
 * work-item is a worker (kernels/inet_worker.h) that pops redexes off its own bag and applies
 * HVM2's rules on a shared node heap, linking wires with one atomic exchange each. Idle workers
 * raise a flag and busy ones hand them their oldest redex. A launch ends when all workers are
 * idle, when one has used its interaction budget, or when one needs more memory; the host
 * (engine/inet/inet_cl.c) then grows what is short and launches again, so the kernel never
 * waits on anything unbounded and a CPU device can run the workers one after another. */

#include "inet_worker.h"

/* A busy worker with two or more redexes offers its oldest to the next worker in turn. */
static void inet_share(inet_w *w) {
    if (w->workers < 2 || w->s.bag_hi - w->s.bag_lo < 2) return;
    w->s.share_rot = w->s.share_rot + 1 < w->workers - 1 ? w->s.share_rot + 1 : 0;
    pgn_u32 j = w->me + 1 + w->s.share_rot;
    inet_give(w, j >= w->workers ? j - w->workers : j);
}

/* ---- the kernel ----------------------------------------------------------------------------
 * node[node_cap], vars[var_cap]: the heaps; node_owner, var_owner: who owns each of their chunks.
 * bnodes, brbag, defs: the book (pgn_inet_dev.h); plan: its definitions' steps.
 * bags[workers * bag_cap], mail[PGN_INET_MAIL_WORDS], wk[workers], ctl[PGN_INET_CTL_WORDS]:
 * the workers. scratch[workers * scratch_stride]: where a CALL keeps the slots it allocated
 * (stride >= the largest definition's nodes + variables). budget: interactions per worker. */
__kernel void inet_reduce(INET_HEAP pgn_u64 *node, volatile __global pgn_u32 *vars,
                          __global pgn_u32 *node_owner, __global pgn_u32 *var_owner,
                          __global const pgn_u64 *bnodes, __global const pgn_u64 *brbag,
                          __global const pgn_u32 *defs, __global const pgn_u32 *plan, __global pgn_u64 *bags,
                          volatile __global pgn_u64 *mail, __global pgn_inet_worker *wk,
                          volatile __global pgn_u32 *ctl, __global pgn_u32 *scratch,
                          pgn_u32 workers, pgn_u32 node_cap, pgn_u32 var_cap, pgn_u32 bag_cap,
                          pgn_u32 scratch_stride, pgn_u32 max_def_nodes, pgn_u64 budget){
    pgn_u32 me = (pgn_u32)get_global_id(0);
    if (me >= workers) return;
    inet_w w;
    w.node = node;
    w.vars = vars;
    w.owner[PGN_INET_HEAP_NODES] = node_owner;
    w.owner[PGN_INET_HEAP_VARS] = var_owner;
    w.bag = bags + (pgn_u64)me * bag_cap;
    w.nloc = scratch + (pgn_u64)me * scratch_stride;
    w.vloc = w.nloc + max_def_nodes;
    w.bnodes = bnodes;
    w.brbag = brbag;
    w.defs = defs;
    w.plan = plan;
    w.ctl = ctl;
    w.mail = mail;
    w.me = me;
    w.workers = workers;
    w.bag_cap = bag_cap;
    w.cap[PGN_INET_HEAP_NODES] = node_cap;
    w.cap[PGN_INET_HEAP_VARS] = var_cap;
    w.s = wk[me];
    w.s.status = PGN_INET_ST_OK;
    pgn_u64 stop_at = w.s.itrs + budget, next_poll = w.s.itrs + INET_POLL;

    if (w.s.bag_lo == w.s.bag_hi) inet_take_mail(&w);
    for (;;) {
        if (w.s.bag_lo == w.s.bag_hi) {
            if (inet_wait(&w, workers)) continue;
            break;
        }
        pgn_u64 r = w.bag[w.s.bag_hi - 1];
        pgn_u32 a = pgn_inet_fst(r), b = pgn_inet_snd(r);
        if (pgn_inet_tag(b) < pgn_inet_tag(a)) {
            pgn_u32 t = a;
            a = b;
            b = t;
        }
        /* The run's first redex, @main ~ the root variable, is the only one with a VAR (link
         * never queues one); it is the first CALL, as in the host reducer. */
        pgn_u32 rule = pgn_inet_tag(a) == PGN_INET_VAR ? PGN_INET_CALL : pgn_inet_rule_of(a, b);
        if (pgn_inet_tag(a) == PGN_INET_VAR) {
            pgn_u32 t = a;
            a = b;
            b = t;
        }
        pgn_u32 st = inet_reserve(&w, rule, a, b);
        if (st != PGN_INET_ST_OK) {
            w.s.status = st;
            INET_SET(&ctl[PGN_INET_CTL_STOP], 1u);
            break;
        }
        w.s.bag_hi--;
        pgn_inet_interact(&w, rule, a, b);
        w.s.itrs++;
        if (w.s.itrs >= next_poll) {
            next_poll = w.s.itrs + INET_POLL;
            if (INET_READ(&ctl[PGN_INET_CTL_STOP])) break;
            if (INET_READ(&ctl[PGN_INET_CTL_IDLE])) inet_share(&w);
            if (w.s.itrs >= stop_at) {
                w.s.status = PGN_INET_ST_BUDGET;
                INET_SET(&ctl[PGN_INET_CTL_STOP], 1u);
                break;
            }
        }
    }
    wk[me] = w.s;
}
