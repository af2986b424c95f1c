/* inet_gpu.cl: the interaction-net reducer of the gpu family. Workers are work-items with the
 * heap, links, rules and plans of the cpu family's (kernels/inet_worker.h), but a work-group works
 * in rounds: each worker does up to INET_ROUND interactions from its own bag, then at a barrier
 * the group deals redexes from its workers with two or more to those with none, through local
 * memory, so an idle work-item waits at a barrier instead of polling global memory. A group
 * whose workers are all idle asks the other groups for work as one (its first work-item, with
 * inet.cl's hungry flags and mailboxes), and a group with a worker holding two or more redexes
 * gives a hungry group the oldest half of them, up to one for each of its workers. Same
 * launches, arguments and host as inet.cl. */

#define INET_LOCAL_NET
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

/* Port p as the flush writes it to global memory: a local slot's port becomes its global twin's,
 * which the slot holds once the first phase has copied it out. */
static pgn_u32 inet_twin(inet_w *w, pgn_u32 p) {
    if (!INET_LOCAL_PORT(p)) return p;
    pgn_u32 i = pgn_inet_val(p) - PGN_INET_LOCAL_BASE;
    pgn_u32 g = pgn_inet_tag(p) == PGN_INET_VAR ? INET_LLOAD(&w->lvar[i]) : (pgn_u32)INET_LLOAD64(&w->lnode[i]);
    return pgn_inet_port(pgn_inet_tag(p), g);
}

static pgn_u64 inet_twin_pair(inet_w *w, pgn_u64 r) {
    return pgn_inet_pair(inet_twin(w, pgn_inet_fst(r)), inet_twin(w, pgn_inet_snd(r)));
}

/* The flush, by every work-item of the group at once: the local net moves to global memory and
 * the slices start again as new. Each work-item (1) copies the live slots of its slices to their
 * twins (reserved, so this allocation cannot fail) and leaves in each local slot its twin's index;
 * (2) rewrites the ports in its twins, its bag and its pending links to the twins'; (3) takes its
 * slices as new and makes its pending links, now between global slots (a redex each at most, which its
 * bag has room for). Barriers between, the last so that no slot is freed into a slice before
 * its count starts again. */
static void inet_flush(inet_w *w) {
    /* only the slots allocated since the last flush can be live (the cursor scans from 0) */
    pgn_u32 n_base = w->lid * w->slice[PGN_INET_HEAP_NODES], v_base = w->lid * w->slice[PGN_INET_HEAP_VARS];
    pgn_u32 n_end = n_base + w->used[PGN_INET_HEAP_NODES], v_end = v_base + w->used[PGN_INET_HEAP_VARS];
    for (pgn_u32 i = n_base; i < n_end; i++) {
        pgn_u64 x = INET_LLOAD64(&w->lnode[i]);
        if (x == 0) continue;
        pgn_u32 g = inet_alloc(w, PGN_INET_HEAP_NODES);
        INET_STORE64(&w->node[g], x);
        INET_LSTORE64(&w->lnode[i], (pgn_u64)g);
    }
    for (pgn_u32 i = v_base; i < v_end; i++) {
        pgn_u32 x = INET_LLOAD(&w->lvar[i]);
        if (x == 0) continue;
        pgn_u32 g = inet_alloc(w, PGN_INET_HEAP_VARS);
        INET_STORE(&w->vars[g], x);
        INET_LSTORE(&w->lvar[i], g);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (pgn_u32 i = n_base; i < n_end; i++) {
        pgn_u32 g = (pgn_u32)INET_LLOAD64(&w->lnode[i]);
        if (g) INET_STORE64(&w->node[g], inet_twin_pair(w, INET_LOAD64(&w->node[g])));
    }
    for (pgn_u32 i = v_base; i < v_end; i++) {
        pgn_u32 g = INET_LLOAD(&w->lvar[i]);
        if (!g) continue;
        pgn_u32 x = INET_LOAD(&w->vars[g]);
        if (x != PGN_INET_NONE) INET_STORE(&w->vars[g], inet_twin(w, x));
    }
    for (pgn_u32 i = w->s.bag_lo; i < w->s.bag_hi; i++) w->bag[i] = inet_twin_pair(w, w->bag[i]);
    for (pgn_u32 i = 0; i < w->nlinks; i++) w->links[2 * i + 1] = inet_twin(w, w->links[2 * i + 1]);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int h = 0; h < 2; h++) { /* its slices as new: no slot is read before it is taken again */
        INET_SET(&w->lfree[h * PGN_INET_GPU_LOCAL_MAX + w->lid], 0u);
        w->lown[h] = w->slice[h];
        w->cur[h] = w->used[h] = w->nhint[h] = 0;
    }
    if (w->nlinks) {
        pgn_u32 n = w->s.bag_hi - w->s.bag_lo; /* room at the top for what the links queue */
        for (pgn_u32 i = 0; i < n; i++) w->bag[i] = w->bag[w->s.bag_lo + i];
        w->s.bag_lo = 0;
        w->s.bag_hi = n;
        pgn_u32 links = w->nlinks;
        w->nlinks = 0;
        for (pgn_u32 i = 0; i < links; i++) inet_link(w, w->links[2 * i], w->links[2 * i + 1]);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
}

/* The arguments are inet.cl's (INET_REDUCE_PARAMS): workers need not fill the last group, whose
 * other work-items only take part in its barriers. */
__kernel void inet_reduce_gpu(INET_REDUCE_PARAMS) {
    __local pgn_u32 cnt[PGN_INET_GPU_LOCAL_MAX], lo[PGN_INET_GPU_LOCAL_MAX], from[PGN_INET_GPU_LOCAL_MAX],
        slot[PGN_INET_GPU_LOCAL_MAX], taken[PGN_INET_GPU_LOCAL_MAX];
    __local pgn_u32 decision, donor, got, extra, flushing;
    __local pgn_u64 lnode[PGN_INET_LOCAL_SLOTS];
    __local pgn_u32 lvar[PGN_INET_LOCAL_SLOTS], lfree[2 * PGN_INET_GPU_LOCAL_MAX], want[PGN_INET_GPU_LOCAL_MAX];
    if (workers == 0) return; /* a warm-up launch (engine/inet/inet_build.c): every work-item leaves */
    pgn_u32 me = (pgn_u32)get_global_id(0), lid = (pgn_u32)get_local_id(0), n = (pgn_u32)get_local_size(0);
    pgn_u32 first = me - lid, groups = (pgn_u32)get_num_groups(0);
    bool real = me < workers;
    inet_w w;
    inet_worker_init(&w, me, INET_REDUCE_ARGS);
    /* the local net: each work-item's slices empty (inet_local_alloc reads no slot not taken yet) */
    w.lnode = lnode;
    w.lvar = lvar;
    w.lfree = lfree;
    w.lid = lid;
    for (int h = 0; h < 2; h++) {
        w.slice[h] = w.lown[h] = PGN_INET_LOCAL_SLOTS / n;
        w.cur[h] = w.used[h] = w.nhint[h] = 0;
        INET_SET(&lfree[h * PGN_INET_GPU_LOCAL_MAX + lid], 0u);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
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
        bool wait_flush = false;
        for (pgn_u32 i = 0; i < INET_ROUND && !stopped && !wait_flush && w.s.bag_lo != w.s.bag_hi; i++) {
            pgn_u32 st = inet_step(&w);
            if (st == PGN_INET_ST_FLUSH) {
                wait_flush = true;
            } else if (st != PGN_INET_ST_OK) {
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
        want[lid] = wait_flush || (w.nlinks && w.s.bag_lo == w.s.bag_hi); /* pending links are work */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) {
            pgn_u32 give, any = 0;
            decision = inet_deal(cnt, lo, from, slot, taken, n, INET_READ(&ctl[PGN_INET_CTL_STOP]) != 0, &give);
            donor = give;
            for (pgn_u32 i = 0; i < n; i++) any |= want[i];
            /* local memory does not outlive the launch; and while another group is hungry, the
             * redex this group would give it must be global first (it often is: made before the
             * last flush; HVM2's sort_bitonic_16 on pocl flushed for that a third of the time) */
            bool share = groups > 1 && give != INET_NO_GIFT && INET_READ(&ctl[PGN_INET_CTL_IDLE]);
            if (share) {
                pgn_u64 r = bags[(pgn_u64)(first + give) * bag_cap + lo[give] + taken[give]];
                share = INET_LOCAL_PORT(pgn_inet_fst(r)) || INET_LOCAL_PORT(pgn_inet_snd(r));
            }
            flushing = any || share || decision == INET_LEAVE;
            if (any && decision == INET_WAIT) decision = INET_GO;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (from[lid] != INET_NO_GIFT) {
            w.bag[0] = bags[(pgn_u64)(first + from[lid]) * bag_cap + slot[lid]];
            w.s.bag_lo = 0;
            w.s.bag_hi = 1;
        }
        pgn_u32 gave = taken[lid], what = decision;
        bool flush = flushing;
        /* every gift is read before its donor's bag moves (inet_reserve compacts it) */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        w.s.bag_lo += gave;
        if (flush) inet_flush(&w);
        if (what == INET_LEAVE) break;
        if (what == INET_WAIT) { /* nothing in the group: its first worker asks the others */
            if (lid == 0) {
                got = inet_wait(&w, groups);
                extra = got ? atomic_xchg(&ctl[PGN_INET_CTL_GIFTS(me)], 0u) : 0u;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            bool go_on = got;
            /* the gift's redexes after the first, one a work-item, written before the first */
            if (lid >= 1 && lid <= extra)
                while (!inet_take_mail(&w)) {
                }
            barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read got before it changes */
            if (!go_on) break;
            continue;
        }
        if (lid == donor && groups > 1 && INET_READ(&ctl[PGN_INET_CTL_IDLE])) {
            w.s.share_rot = w.s.share_rot + 1 < groups - 1 ? w.s.share_rot + 1 : 0;
            pgn_u32 g = me / n + 1 + w.s.share_rot;
            pgn_u32 to = (g >= groups ? g - groups : g) * n;
            /* half of what it holds, up to a redex for each of that group's workers */
            pgn_u32 most = (w.s.bag_hi - w.s.bag_lo) / 2u;
            inet_give(&w, to, min(most, min(n, workers - to)));
        }
    }
    if (real) wk[me] = w.s;
}
