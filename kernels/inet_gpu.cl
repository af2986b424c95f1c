/* inet_gpu.cl: the interaction-net reducer of the gpu family. Workers are work-items with the
 * heap, links, rules and plans of the cpu family's (kernels/inet_worker.h), but a work-group works
 * in rounds: each worker does up to INET_ROUND interactions from its own bag, then at a barrier
 * the group deals redexes from its workers with two or more to those with none, through local
 * memory, so an idle work-item waits at a barrier instead of polling global memory. A group
 * whose workers are all idle asks the other groups for work as one (its first work-item, with
 * inet.cl's hungry flags and mailboxes), and a group with a worker holding two or more redexes
 * gives the oldest to a hungry group. Same launches, arguments and host as inet.cl. */

#include "inet_worker.h"

/* Interactions a worker does between two deals. On a GPU a round is short, so that work reaches
 * idle work-items soon; pocl runs a group's work-items one after another between barriers, so
 * there a round is as long as inet.cl's poll. */
#ifdef PGN_DEVICE_CPU
#define INET_ROUND INET_POLL
#else
#define INET_ROUND 32u
#endif

#define INET_NO_GIFT 0xFFFFFFFFu
/* What a group does after a deal (the leader's decision, in local memory). */
#define INET_GO 0u
#define INET_WAIT 1u
#define INET_LEAVE 2u

/* The leader's deal: cnt[i] is worker i's redexes (INET_NO_GIFT: no worker, or one that
 * stopped). Each worker with none gets one from the next worker in order that has two or more
 * left: from[i], the donor, and slot[i], where in the donor's bag (its oldest first); taken[d],
 * how many donor d gave. Returns the decision, and in *donor a worker still holding two or more
 * (INET_NO_GIFT if none) to offer one to other groups. */
static pgn_u32 inet_deal(__local const pgn_u32 *cnt, __local const pgn_u32 *lo, __local pgn_u32 *from,
                         __local pgn_u32 *slot, __local pgn_u32 *taken, pgn_u32 n, bool stop, pgn_u32 *donor) {
    pgn_u32 d = 0, work = 0;
    for (pgn_u32 i = 0; i < n; i++) {
        from[i] = INET_NO_GIFT;
        taken[i] = 0;
    }
    for (pgn_u32 i = 0; i < n; i++) {
        if (cnt[i] != INET_NO_GIFT) work += cnt[i];
        if (cnt[i] != 0) continue;
        while (d < n && (cnt[d] == INET_NO_GIFT || cnt[d] - taken[d] < 2)) d++;
        if (d == n) continue;
        from[i] = d;
        slot[i] = lo[d] + taken[d];
        taken[d]++;
    }
    *donor = INET_NO_GIFT;
    for (pgn_u32 i = 0; i < n && *donor == INET_NO_GIFT; i++)
        if (cnt[i] != INET_NO_GIFT && cnt[i] - taken[i] >= 2) *donor = i;
    return stop ? INET_LEAVE : work ? INET_GO : INET_WAIT;
}

/* The arguments are inet.cl's (INET_REDUCE_PARAMS): workers need not fill the last group, whose
 * other work-items only take part in its barriers. */
__kernel void inet_reduce_gpu(INET_REDUCE_PARAMS) {
    __local pgn_u32 cnt[PGN_INET_GPU_LOCAL_MAX], lo[PGN_INET_GPU_LOCAL_MAX], from[PGN_INET_GPU_LOCAL_MAX],
        slot[PGN_INET_GPU_LOCAL_MAX], taken[PGN_INET_GPU_LOCAL_MAX];
    __local pgn_u32 decision, donor, got;
    if (workers == 0) return; /* a warm-up launch (engine/inet/inet_build.c): every work-item leaves */
    pgn_u32 me = (pgn_u32)get_global_id(0), lid = (pgn_u32)get_local_id(0), n = (pgn_u32)get_local_size(0);
    pgn_u32 first = me - lid, groups = (pgn_u32)get_num_groups(0);
    bool real = me < workers;
    inet_w w;
    inet_worker_init(&w, me, INET_REDUCE_ARGS);
    if (real) {
        w.s = wk[me];
    } else {
        w.s.bag_lo = w.s.bag_hi = 0;
        w.s.itrs = 0;
    }
    w.s.status = PGN_INET_ST_OK;
    pgn_u64 stop_at = w.s.itrs + budget;
    bool stopped = !real; /* a worker that stopped does nothing more in this launch */

    if (real && w.s.bag_lo == w.s.bag_hi) inet_take_mail(&w);
    for (;;) {
        for (pgn_u32 i = 0; i < INET_ROUND && !stopped && w.s.bag_lo != w.s.bag_hi; i++) {
            pgn_u32 st = inet_step(&w);
            if (st != PGN_INET_ST_OK) {
                w.s.status = st;
                INET_SET(&ctl[PGN_INET_CTL_STOP], 1u);
                stopped = true;
            }
        }
        if (!stopped && w.s.itrs >= stop_at) {
            w.s.status = PGN_INET_ST_BUDGET;
            INET_SET(&ctl[PGN_INET_CTL_STOP], 1u);
            stopped = true;
        }

        /* The deal: every worker's count, then the leader's plan, then the gifts taken. */
        cnt[lid] = stopped ? INET_NO_GIFT : w.s.bag_hi - w.s.bag_lo;
        lo[lid] = w.s.bag_lo;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) {
            pgn_u32 give;
            decision = inet_deal(cnt, lo, from, slot, taken, n, INET_READ(&ctl[PGN_INET_CTL_STOP]) != 0, &give);
            donor = give;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (from[lid] != INET_NO_GIFT) {
            w.bag[0] = bags[(pgn_u64)(first + from[lid]) * bag_cap + slot[lid]];
            w.s.bag_lo = 0;
            w.s.bag_hi = 1;
        }
        pgn_u32 gave = taken[lid], what = decision;
        /* every gift is read before its donor's bag moves (inet_reserve compacts it) */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        w.s.bag_lo += gave;
        if (what == INET_LEAVE) break;
        if (what == INET_WAIT) { /* nothing in the group: its first worker asks the others */
            if (lid == 0) got = inet_wait(&w, groups);
            barrier(CLK_LOCAL_MEM_FENCE);
            bool go_on = got;
            barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read got before it changes */
            if (!go_on) break;
            continue;
        }
        if (lid == donor && groups > 1 && INET_READ(&ctl[PGN_INET_CTL_IDLE])) {
            w.s.share_rot = w.s.share_rot + 1 < groups - 1 ? w.s.share_rot + 1 : 0;
            pgn_u32 g = me / n + 1 + w.s.share_rot;
            inet_give(&w, (g >= groups ? g - groups : g) * n);
        }
    }
    if (real) wk[me] = w.s;
}
