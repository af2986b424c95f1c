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
    inet_give(w, j >= w->workers ? j - w->workers : j, 1u);
}

/* ---- the kernel: its arguments are kernels/inet_worker.h's INET_REDUCE_PARAMS --------------- */
__kernel void inet_reduce(INET_REDUCE_PARAMS) {
    pgn_u32 me = (pgn_u32)get_global_id(0);
    if (me >= workers) return;
    inet_w w;
    inet_worker_init(&w, me, INET_REDUCE_ARGS);
    w.s = wk[me];
    w.s.status = PGN_INET_ST_OK;
    pgn_u64 stop_at = w.s.itrs + budget, next_poll = w.s.itrs + INET_POLL;

    if (w.s.bag_lo == w.s.bag_hi) inet_take_mail(&w);
    for (;;) {
        if (w.s.bag_lo == w.s.bag_hi) {
            if (inet_wait(&w, workers)) continue;
            break;
        }
        pgn_u32 st = inet_step(&w);
        if (st != PGN_INET_ST_OK) {
            w.s.status = st;
            INET_SET(&ctl[PGN_INET_CTL_STOP], 1u);
            break;
        }
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
