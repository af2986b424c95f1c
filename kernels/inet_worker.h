/* inet_worker.h: an interaction-net worker on the device, for both reducers (kernels/inet.cl,
 * kernels/inet_gpu.cl): its heap slots, its links (one atomic exchange each), the rules and plans
 * over them (kernels/pgn_inet_rules.h, pgn_inet_plan.h: the host reference's, so the same
 * counts), one redex's reservation, and the hand-off of redexes between workers. OpenCL only. */

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

/* Ordering between workers. On a CPU device (pocl on x86) an atomic is a full barrier, stores are
 * not reordered and caches are coherent, so nothing more is needed. Elsewhere (GPUs: Oclgrind, and
 * an NVIDIA H200 in docs/architecture.md) a fence (of global memory, and of the gpu family's local
 * net) goes before a port or a list of slots is published and after one is taken, and heap reads go through volatile pointers so a reused slot
 * is not read from a stale cache. */
#ifdef PGN_DEVICE_CPU
#define INET_RELEASE()
#define INET_ACQUIRE()
#define INET_HEAP __global
#else
#define INET_RELEASE() mem_fence(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE)
#define INET_ACQUIRE() mem_fence(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE)
#define INET_HEAP volatile __global
#endif

/* Heap slots (nodes, variables, owner entries) pass between workers as messages: written, a fence,
 * then published by an atomic on a variable, which the reader's atomic and fence follow. Oclgrind's
 * race checker knows atomics and barriers but not fences, and the gpu family's workers run
 * interleaved there (at its barriers), so on Oclgrind each such access is an atomic of its own:
 * the same values, and the checker is left with what it can judge (local memory, the bags dealt
 * at barriers, and any access that is neither). */
#ifdef PGN_OCLGRIND
#define INET_LOAD64(p) atom_add((p), (pgn_u64)0)
#define INET_STORE64(p, v) ((void)atom_xchg((p), (v)))
#define INET_LOAD(p) atomic_add((p), 0u)
#define INET_STORE(p, v) ((void)atomic_xchg((p), (v)))
#else
#define INET_LOAD64(p) (*(p))
#define INET_STORE64(p, v) (*(p) = (v))
#define INET_LOAD(p) (*(p))
#define INET_STORE(p, v) (*(p) = (v))
#endif

/* ---- the local net (kernels/inet_gpu.cl defines INET_LOCAL_NET) ------------------------------
 * A work-group keeps the nodes and variables its rules make in local memory: slots whose value is
 * PGN_INET_LOCAL_BASE + i are slot i of the group's local arrays. Each work-item allocates from its
 * own slice of them (a free slot holds 0, found by a scan from a cursor, a count per slice in
 * local memory); any work-item of the group frees into any slice. Global memory never holds a port
 * of a local slot, so that what another group reads is always whole: a global variable linked to
 * a local node waits as a pending link (w->links) and a local variable linked to a global one
 * points at it. Every live local slot has a global slot reserved in its owner's allocator (its
 * twin), so the group's flush (inet_gpu.cl), which moves the whole local net to global memory at
 * a barrier, never fails: when a slice is full, a link is pending or the launch ends. A redex
 * without local ports whose rule does not fit in local memory runs on global slots (w->gmode). */
#ifdef INET_LOCAL_NET
#ifdef PGN_OCLGRIND
#define INET_LLOAD64(p) atom_add((p), (pgn_u64)0)
#define INET_LSTORE64(p, v) ((void)atom_xchg((p), (v)))
#define INET_LLOAD(p) atomic_add((p), 0u)
#define INET_LSTORE(p, v) ((void)atomic_xchg((p), (v)))
#else
#define INET_LLOAD64(p) (*(p))
#define INET_LSTORE64(p, v) (*(p) = (v))
#define INET_LLOAD(p) (*(p))
#define INET_LSTORE(p, v) (*(p) = (v))
#endif
#define INET_IS_LOCAL(i) ((i) >= PGN_INET_LOCAL_BASE)
/* The last slots a work-item freed in its own slices, which it allocates first: its cursor's scan
 * over a slice nearly full of long-lived nodes took a tenth of HVM2's sort_bitonic_16 on pocl. */
#define INET_LOCAL_HINTS 8u
#else
#define INET_IS_LOCAL(i) false
#endif
/* Whether port p leads to a local slot (a variable or a node: other tags' values are no slots). */
#define INET_LOCAL_PORT(p)                                                                               \
    ((pgn_inet_tag(p) == PGN_INET_VAR || pgn_inet_tag(p) >= PGN_INET_CON) && INET_IS_LOCAL(pgn_inet_val(p)))

#define PGN_INET_NODE_LOAD(n, i) inet_node_load((n), (i))
#define PGN_INET_NODE_STORE(n, i, v) inet_node_store((n), (i), (v))
#define PGN_INET_NODE_ALLOC_NEAR(n, i) inet_node_alloc_near((n), (i))

/* The rules and the memory and linking they use are inlined into the worker's loop, so its state
 * stays in registers: when LLVM kept inet_link out of line, a quarter of the time went to calls
 * and to spilling the worker's state (loops.hvm on one work-item: 61-71 MIPS against 136-150).
 * Handing slots back to their owner is rare and stays out of line. */
#define INET_HOT static inline __attribute__((always_inline))
#define INET_COLD static __attribute__((noinline))

/* Interactions between polls of the stop flag, the budget and whether a worker is idle: each
 * poll is two atomic reads, each a fence on x86 (pocl, loops.hvm on one work-item: polling every
 * 64 interactions cost about 10 %, every 256 within the noise). */
#define INET_POLL 256u
/* An idle worker gives up waiting after this many polls (under a millisecond on pocl: a poll is
 * three atomic reads, and 2048 take about as long as the 262144 plain reads polled before), so a
 * worker whose partners are not running (more work-groups than the device runs at once) cannot
 * hold a launch. Oclgrind runs a work-group's work-items one after another, switching only at
 * barriers, so there no partner runs while a worker waits, and each poll is simulated: a few
 * polls are enough. */
#ifdef PGN_OCLGRIND
#define INET_SPIN_MAX 16u
#else
#define INET_SPIN_MAX 2048u
#endif

/* The words workers share to coordinate (ctl, and the mail buffer) are read and written through
 * atomics only: a plain read of a word that another worker changes atomically is a data race
 * (Oclgrind's checker reported CTL_IDLE so). A read is an atomic add of 0, which LLVM turns on
 * x86 into a fence and a plain load: the line stays with the workers that write it. */
#define INET_READ(p) atomic_add((p), 0u)
#define INET_READ64(p) atom_add((p), (pgn_u64)0)
#define INET_SET(p, v) atomic_xchg((p), (v))

typedef struct {
    INET_HEAP pgn_u64 *node;
    volatile __global pgn_u32 *vars;
    __global pgn_u32 *owner[2]; /* per heap: the worker whose chunk each slot is in */
    __global pgn_u64 *bag;      /* this worker's */
    __global pgn_u32 *nloc, *vloc;
    __global const pgn_u64 *bnodes, *brbag;
    __global const pgn_u32 *defs, *plan;
    volatile __global pgn_u32 *ctl;
    volatile __global pgn_u64 *mail;
    pgn_u32 me, workers, bag_cap, cap[2];
    pgn_inet_worker s; /* the worker's state, in registers while it runs */
#ifdef INET_LOCAL_NET
    volatile __local pgn_u64 *lnode; /* the group's local net */
    volatile __local pgn_u32 *lvar;
    volatile __local pgn_u32 *lfree; /* [heap * PGN_INET_GPU_LOCAL_MAX + slice]: slots others freed there */
    __global pgn_u32 *links;         /* pending links: global variable, local node (2 words each) */
    pgn_u32 lid, nlinks, slice[2], cur[2], lown[2]; /* lown: free slots of its slices it counts */
    pgn_u32 used[2]; /* its slices' slots [0, used) have been allocated since the last flush */
    pgn_u32 hint[2][INET_LOCAL_HINTS], nhint[2]; /* slots it freed in its slices, the newest last */
    bool gmode; /* this redex's rule allocates global slots */
#endif
} inet_w;

/* A node slot's pair, local or global. */
INET_HOT pgn_u64 inet_node_load(inet_w *w, pgn_u32 i) {
#ifdef INET_LOCAL_NET
    if (INET_IS_LOCAL(i)) return INET_LLOAD64(&w->lnode[i - PGN_INET_LOCAL_BASE]);
#endif
    return INET_LOAD64(&w->node[i]);
}

INET_HOT void inet_node_store(inet_w *w, pgn_u32 i, pgn_u64 v) {
#ifdef INET_LOCAL_NET
    if (INET_IS_LOCAL(i)) {
        INET_LSTORE64(&w->lnode[i - PGN_INET_LOCAL_BASE], v);
        return;
    }
#endif
    INET_STORE64(&w->node[i], v);
}

/* A variable slot's value, and its exchange (the link's one atomic), local or global. */
INET_HOT pgn_u32 inet_var_load(inet_w *w, pgn_u32 v) {
#ifdef INET_LOCAL_NET
    if (INET_IS_LOCAL(v)) return INET_LLOAD(&w->lvar[v - PGN_INET_LOCAL_BASE]);
#endif
    return INET_LOAD(&w->vars[v]);
}

INET_HOT pgn_u32 inet_var_xchg(inet_w *w, pgn_u32 v, pgn_u32 x) {
#ifdef INET_LOCAL_NET
    if (INET_IS_LOCAL(v)) return atomic_xchg(&w->lvar[v - PGN_INET_LOCAL_BASE], x);
#endif
    return atomic_xchg(&w->vars[v], x);
}

#ifdef INET_LOCAL_NET
/* Makes sure this work-item's slice of local heap h has `need` free slots: those it counts itself
 * (w->lown: it allocates them, and frees most of them), then those other work-items freed into
 * it, counted in local memory, which it takes whole. */
INET_HOT bool inet_local_room(inet_w *w, int h, pgn_u32 need) {
    if (w->lown[h] >= need) return true;
    volatile __local pgn_u32 *given = &w->lfree[h * PGN_INET_GPU_LOCAL_MAX + w->lid];
    if (INET_READ(given)) w->lown[h] += atomic_xchg(given, 0u);
    return w->lown[h] >= need;
}

/* A free slot of this work-item's slice (inet_reserve made sure it has one): the last it freed
 * there (a hint that no longer holds 0 is dropped), else the next from the cursor on that was
 * never taken since the last flush (the cursor has reached `used`: nothing is read, so local
 * memory needs no clearing at a launch's start or a flush) or that holds 0. A hinted node is
 * marked taken at once: a CALL allocates its nodes before it writes them, and the scan would
 * have found it free again and handed it out twice (tests/inet_peers' sum_rec, without plans, so
 * crashed). Variables are written as they are allocated; the scan runs only when no hint is
 * left, so no hint names the slot it hands out. */
INET_HOT pgn_u32 inet_local_alloc(inet_w *w, int h) {
    pgn_u32 n = w->slice[h], base = w->lid * n, c = w->cur[h];
    INET_ACQUIRE();
    while (w->nhint[h]) {
        pgn_u32 i = w->hint[h][--w->nhint[h]];
        if (h == PGN_INET_HEAP_NODES ? INET_LLOAD64(&w->lnode[i]) == 0 : INET_LLOAD(&w->lvar[i]) == 0) {
            if (h == PGN_INET_HEAP_NODES) INET_LSTORE64(&w->lnode[i], ~(pgn_u64)0);
            w->lown[h]--;
            return PGN_INET_LOCAL_BASE + i;
        }
    }
    for (;;) {
        pgn_u32 i = base + c;
        bool fresh = c == w->used[h];
        c = c + 1 < n ? c + 1 : 0;
        if (fresh || (h == PGN_INET_HEAP_NODES ? INET_LLOAD64(&w->lnode[i]) == 0 : INET_LLOAD(&w->lvar[i]) == 0)) {
            w->cur[h] = c;
            w->lown[h]--;
            if (fresh) w->used[h]++;
            return PGN_INET_LOCAL_BASE + i;
        }
    }
}

/* Local slot i (its local index) is free again: 0, then counted in its slice. */
INET_COLD void inet_local_free(inet_w *w, int h, pgn_u32 i) {
    if (h == PGN_INET_HEAP_NODES) INET_LSTORE64(&w->lnode[i], (pgn_u64)0);
    else INET_LSTORE(&w->lvar[i], 0u);
    if (i - w->lid * w->slice[h] < w->slice[h]) { /* its own slice */
        w->lown[h]++;
        if (w->nhint[h] < INET_LOCAL_HINTS) w->hint[h][w->nhint[h]++] = i;
        return;
    }
    INET_RELEASE();
    atomic_inc(&w->lfree[h * PGN_INET_GPU_LOCAL_MAX + i / w->slice[h]]);
}
#endif

/* ---- memory -------------------------------------------------------------------------------
 * Allocation never fails inside a rule: before a redex is touched, inet_reserve makes sure the
 * worker holds enough free slots and bag room for the rule's worst case. h is a heap,
 * PGN_INET_HEAP_NODES or PGN_INET_HEAP_VARS; it is a constant wherever these are inlined. */

/* The free-list link kept in a free slot. */
INET_HOT pgn_u32 inet_slot_next(inet_w *w, int h, pgn_u32 i) {
    return h == PGN_INET_HEAP_NODES ? (pgn_u32)INET_LOAD64(&w->node[i]) : INET_LOAD(&w->vars[i]);
}

INET_HOT void inet_slot_set_next(inet_w *w, int h, pgn_u32 i, pgn_u32 next) {
    if (h == PGN_INET_HEAP_NODES) INET_STORE64(&w->node[i], (pgn_u64)next);
    else INET_STORE(&w->vars[i], next);
}

/* Own free list, then the chunk's rest (inet_reserve_heap made sure there are enough). */
INET_HOT pgn_u32 inet_alloc(inet_w *w, int h) {
    pgn_inet_alloc *a = &w->s.heap[h];
    pgn_u32 i = a->free;
    if (i) {
        a->free = inet_slot_next(w, h, i);
        a->nfree--;
        return i;
    }
    return a->next++;
}

/* Hands the foreign slots back to the owner of the first: one exchange for the whole batch. With
 * more than two workers a batch may hold slots of several owners; they then stay with the one
 * that gets them, which costs only speed. This may happen in the middle of a rule, so inet_alloc
 * never takes a foreign slot: inet_reserve_heap moves them to the free list when they are needed.
 * (When inet_alloc took them, a free that filled the batch could take away slots the reservation
 * had counted on, and the rule's next allocation found none: slot 0, then garbage, and
 * train_xor.pgl crashed so on 2-4 work-items.) */
INET_COLD void inet_give_back(inet_w *w, int h) {
    pgn_inet_alloc *a = &w->s.heap[h];
    pgn_u32 owner = INET_LOAD(&w->owner[h][a->foreign / PGN_INET_CHUNK]);
    volatile __global pgn_u64 *remote = &w->mail[PGN_INET_REMOTE(owner, h)];
    pgn_u64 old = INET_READ64(remote);
    for (;;) {
        inet_slot_set_next(w, h, a->foreign_tail, (pgn_u32)old);
        INET_RELEASE();
        pgn_u64 seen = atom_cmpxchg(remote, old, (((old >> 32) + a->nforeign) << 32) | a->foreign);
        if (seen == old) break;
        old = seen;
    }
    a->foreign = a->foreign_tail = a->nforeign = 0;
}

/* Another worker's slot goes on the foreign list (out of line: it is inlined nowhere, so the
 * many inlined frees of a program's compiled definitions stay small). */
INET_COLD void inet_free_foreign(inet_w *w, int h, pgn_u32 i) {
    pgn_inet_alloc *a = &w->s.heap[h];
    inet_slot_set_next(w, h, i, a->foreign);
    if (!a->foreign) a->foreign_tail = i;
    a->foreign = i;
    if (++a->nforeign == PGN_INET_FOREIGN_BATCH) inet_give_back(w, h);
}

/* A slot of this worker's chunks goes on its free list; another worker's on the foreign list. */
INET_HOT void inet_free(inet_w *w, int h, pgn_u32 i) {
#ifdef INET_LOCAL_NET
    if (INET_IS_LOCAL(i)) {
        inet_local_free(w, h, i - PGN_INET_LOCAL_BASE);
        return;
    }
#endif
    pgn_inet_alloc *a = &w->s.heap[h];
    pgn_u32 owner = INET_LOAD(&w->owner[h][i / PGN_INET_CHUNK]);
    if (owner == w->me || owner >= w->workers) {
        inet_slot_set_next(w, h, i, a->free);
        a->free = i;
        a->nfree++;
        return;
    }
    inet_free_foreign(w, h, i);
}

/* Makes `need` slots of heap h available without failing: the free list and the chunk's rest,
 * then the foreign slots, then what other workers gave back, then new chunks from the shared bump
 * pointer. False when the heap has no chunk left; a chunk that ends past the heap's size is kept,
 * valid once the host has grown the heap, and until then only the free list counts. */
INET_HOT bool inet_reserve_heap(inet_w *w, int h, pgn_u32 need) {
    pgn_inet_alloc *a = &w->s.heap[h];
    while (a->nfree + (a->end - a->next) < need) {
        volatile __global pgn_u64 *remote = &w->mail[PGN_INET_REMOTE(w->me, h)];
        if (a->nforeign) { /* foreign slots serve when own run out: they join the free list */
            inet_slot_set_next(w, h, a->foreign_tail, a->free);
            a->free = a->foreign;
            a->nfree += a->nforeign;
            a->foreign = a->foreign_tail = a->nforeign = 0;
            continue;
        }
        if (a->nfree == 0 && INET_READ64(remote)) {
            pgn_u64 back = atom_xchg(remote, (pgn_u64)0);
            INET_ACQUIRE();
            a->free = (pgn_u32)back;
            a->nfree = (pgn_u32)(back >> 32);
            continue;
        }
        if (a->end > w->cap[h]) return false;
        while (a->next < a->end) { /* the chunk's rest goes on the free list */
            pgn_u32 i = a->next++;
            inet_slot_set_next(w, h, i, a->free);
            a->free = i;
            a->nfree++;
        }
        a->next = atomic_add(&w->ctl[PGN_INET_CTL_TOP(h)], PGN_INET_CHUNK);
        a->end = a->next + PGN_INET_CHUNK;
        INET_STORE(&w->owner[h][a->next / PGN_INET_CHUNK], w->me);
    }
    return a->end <= w->cap[h] || a->nfree >= need;
}


/* A node slot for a rule: local unless the rule runs on global slots. */
INET_HOT pgn_u32 inet_node_alloc(inet_w *w) {
#ifdef INET_LOCAL_NET
    if (!w->gmode) return inet_local_alloc(w, PGN_INET_HEAP_NODES);
#endif
    return inet_alloc(w, PGN_INET_HEAP_NODES);
}

/* A node slot that node i will point at: where i is (a global node holds no local port). */
INET_HOT pgn_u32 inet_node_alloc_near(inet_w *w, pgn_u32 i) {
#ifdef INET_LOCAL_NET
    if (INET_IS_LOCAL(i)) return inet_local_alloc(w, PGN_INET_HEAP_NODES);
#endif
    (void)i;
    return inet_alloc(w, PGN_INET_HEAP_NODES);
}

INET_HOT void inet_node_free(inet_w *w, pgn_u32 i) { inet_free(w, PGN_INET_HEAP_NODES, i); }

/* A new wire: both ends still unlinked. */
INET_HOT pgn_u32 inet_var_alloc(inet_w *w) {
#ifdef INET_LOCAL_NET
    if (!w->gmode) {
        pgn_u32 i = inet_local_alloc(w, PGN_INET_HEAP_VARS);
        INET_LSTORE(&w->lvar[i - PGN_INET_LOCAL_BASE], PGN_INET_NONE);
        return i;
    }
#endif
    pgn_u32 i = inet_alloc(w, PGN_INET_HEAP_VARS);
    INET_STORE(&w->vars[i], PGN_INET_NONE);
    return i;
}

INET_HOT void inet_var_free(inet_w *w, pgn_u32 v) { inet_free(w, PGN_INET_HEAP_VARS, v); }

/* A redex between two nullary ports (VOID) only counts, so it is counted here rather than left
 * in the bag under the work pushed after it, where it would pile up (engine/inet/inet_host.c too). */
INET_HOT void inet_push(inet_w *w, pgn_u32 a, pgn_u32 b) {
    if (pgn_inet_tag(a) < PGN_INET_CON && pgn_inet_tag(b) < PGN_INET_CON) w->s.itrs++;
    else w->bag[w->s.bag_hi++] = pgn_inet_pair(a, b);
}

/* ---- linking ------------------------------------------------------------------------------
 * A variable's slot is written once by the first end to be linked (an atomic exchange that finds
 * NONE) and read by the other, which then owns both ends and frees it. So a plain read that sees
 * a port sees a final value, and only the exchange needs to be atomic. */

/* One step along a wire: if p's other end has been linked, what it was linked to. Only one step,
 * unlike the host's enter: the next variable of a chain is often an old one, such as the result
 * wire a loop threads through every turn, whose cache line another worker is busy writing, and
 * reading it on every turn halved two workers' speed. A chain left unfollowed is followed by
 * whoever links its other end, with the same exchanges. */
INET_HOT pgn_u32 inet_enter(inet_w *w, pgn_u32 p) {
    if (pgn_inet_tag(p) == PGN_INET_VAR) {
        pgn_u32 s = inet_var_load(w, pgn_inet_val(p));
        if (s != PGN_INET_NONE) {
            INET_ACQUIRE();
            inet_var_free(w, pgn_inet_val(p));
            p = s;
        }
    }
    return p;
}

/* a ~ b, as engine/inet/inet_host.c's link_ports, with the variable written by exchange. */
INET_HOT void inet_link(inet_w *w, pgn_u32 a, pgn_u32 b) {
    for (;;) {
        if (pgn_inet_tag(a) != PGN_INET_VAR) {
            if (pgn_inet_tag(b) != PGN_INET_VAR) {
                inet_push(w, a, b);
                return;
            }
            pgn_u32 t = a;
            a = b;
            b = t;
        }
        b = inet_enter(w, b);
        pgn_u32 v = pgn_inet_val(a);
        if (b == a) { /* both ends of one wire: a closed loop */
            inet_var_free(w, v);
            return;
        }
#ifdef INET_LOCAL_NET
        if (!INET_IS_LOCAL(v) && INET_LOCAL_PORT(b)) {
            if (pgn_inet_tag(b) == PGN_INET_VAR) { /* the local variable points at the global one */
                pgn_u32 t = a;
                a = b;
                b = t;
                continue;
            }
            w->links[2 * w->nlinks] = a; /* a local node waits for the flush */
            w->links[2 * w->nlinks + 1] = b;
            w->nlinks++;
            return;
        }
#endif
        INET_RELEASE();
        pgn_u32 other = inet_var_xchg(w, v, b);
        if (other == PGN_INET_NONE) return;
        INET_ACQUIRE();
        inet_var_free(w, v);
        a = other;
    }
}

/* ---- the rules: kernels/pgn_inet_rules.h, over this file's memory and links --------------- */

INET_HOT void inet_call(inet_w *w, pgn_u32 a, pgn_u32 b);

#define PGN_INET_NET inet_w
#define PGN_INET_RULE INET_HOT
#define PGN_INET_BOOK __global
#define PGN_INET_NODE_ALLOC(w) inet_node_alloc(w)
#define PGN_INET_NODE_FREE(w, i) inet_node_free((w), (i))
#define PGN_INET_VAR_ALLOC(w) inet_var_alloc(w)
#define PGN_INET_CONNECT(w, a, b) inet_link((w), (a), (b))
#define PGN_INET_CALL_DEF(w, a, b) inet_call((w), (a), (b))
#define PGN_INET_DEF(w, fid, v)                                                                              \
    do {                                                                                                     \
        __global const pgn_u32 *d_ = (w)->defs + PGN_INET_DEF_WORDS * (fid);                                 \
        (v)->root = d_[PGN_INET_DEF_ROOT];                                                                   \
        (v)->node_len = d_[PGN_INET_DEF_NODE_LEN];                                                           \
        (v)->rbag_len = d_[PGN_INET_DEF_RBAG_LEN];                                                           \
        (v)->vars_len = d_[PGN_INET_DEF_VARS_LEN];                                                           \
        (v)->nodes = (w)->bnodes + d_[PGN_INET_DEF_NODE_OFF];                                                \
        (v)->rbag = (w)->brbag + d_[PGN_INET_DEF_RBAG_OFF];                                                  \
    } while (0)
#include "pgn_inet_rules.h"

/* CALL runs the definition's plan (kernels/pgn_inet_plan.h): compiled into a program's own build
 * of this file (engine/inet/inet_cl.c, inet_build.c) for its small definitions, where
 * inet_call_compiled runs it; else interpreted from the plan buffer, with the registers in
 * private memory; definitions without a plan are instantiated as they stand (pgn_inet_call). */
#define PGN_INET_PLAN __global
#define PGN_INET_ENTER(w, p) inet_enter((w), (p))
#define PGN_INET_COUNT(w, k) ((w)->s.itrs += (k))
#define PGN_INET_BAG(w) ((w)->bag)
#define PGN_INET_BAG_TOP(w) ((w)->s.bag_hi)
#include "pgn_inet_plan.h"

#ifdef PGN_INET_COMPILED
INET_HOT bool inet_call_compiled(inet_w *w, pgn_u32 fid, pgn_u32 b);
#endif

/* Out of line: the loop, its registers and the step's switch stay out of the worker's loop. */
INET_COLD void inet_call_plan(inet_w *w, __global const pgn_u32 *d, pgn_u32 b) {
    pgn_u32 k[PGN_INET_PLAN_REGS];
    pgn_inet_plan_run(w, w->plan + d[PGN_INET_DEF_PLAN_OFF] * PGN_INET_STEP_WORDS, d[PGN_INET_DEF_PLAN_LEN],
                      d[PGN_INET_DEF_PLAN_REGS], k, b);
}

INET_HOT void inet_call(inet_w *w, pgn_u32 a, pgn_u32 b) {
    pgn_u32 fid = pgn_inet_val(a) & PGN_INET_REF_FID;
#ifdef PGN_INET_COMPILED
    if (inet_call_compiled(w, fid, b)) return;
#endif
    __global const pgn_u32 *d = w->defs + PGN_INET_DEF_WORDS * fid;
    if (d[PGN_INET_DEF_PLAN_LEN]) inet_call_plan(w, d, b);
    else pgn_inet_call(w, a, b);
}

/* ---- one redex ---------------------------------------------------------------------------- */

/* Makes room for the worst case of rule on a ~ b: nodes, variables and bag slots (one per link
 * a rule makes). Returns PGN_INET_ST_OK or why the worker must stop first. */
INET_HOT pgn_u32 inet_reserve(inet_w *w, pgn_u32 rule, pgn_u32 a, pgn_u32 b) {
    pgn_u32 nodes = 0, vars = 0, links = 2;
    if (rule == PGN_INET_CALL) {
        __global const pgn_u32 *d = w->defs + PGN_INET_DEF_WORDS * (pgn_inet_val(a) & PGN_INET_REF_FID);
        nodes = d[PGN_INET_DEF_NODE_LEN]; /* a plan takes no more than the definition's */
        vars = d[PGN_INET_DEF_VARS_LEN];
        links = d[PGN_INET_DEF_LINKS];
    } else if (rule == PGN_INET_ERAS && pgn_inet_tag(a) == PGN_INET_REF) {
        __global const pgn_u32 *d = w->defs + PGN_INET_DEF_WORDS * (pgn_inet_val(a) & PGN_INET_REF_FID);
        if (!d[PGN_INET_DEF_SAFE]) {
            w->s.status_arg = pgn_inet_val(a) & PGN_INET_REF_FID;
            return PGN_INET_ST_CLONE;
        }
    } else if (rule == PGN_INET_COMM) {
        nodes = vars = links = 4;
    } else if (rule == PGN_INET_SWIT) {
        nodes = 1;
    }
    pgn_u32 room = links; /* in the bag */
#ifdef INET_LOCAL_NET
    room += w->nlinks + 1; /* the flush may queue a redex for each pending link, after a gift */
#endif
    if (w->s.bag_hi + room > w->bag_cap) {
        pgn_u32 n = w->s.bag_hi - w->s.bag_lo;
        for (pgn_u32 i = 0; i < n; i++) w->bag[i] = w->bag[w->s.bag_lo + i];
        w->s.bag_lo = 0;
        w->s.bag_hi = n;
        if (n + room > w->bag_cap) {
#ifdef INET_LOCAL_NET
            if (w->nlinks) return PGN_INET_ST_FLUSH; /* the flush makes them, and their room is free */
#endif
            return PGN_INET_ST_NEED_BAG;
        }
    }
#ifdef INET_LOCAL_NET
    /* In local memory if the slice has room and the pending links the rule may add fit; else on
     * global slots, which only a redex without local ports may use (the flush makes it so). A SWIT
     * on a global switch makes its node global (inet_node_alloc_near). */
    pgn_u32 local_nodes = rule == PGN_INET_SWIT && !INET_IS_LOCAL(pgn_inet_val(b)) ? 0 : nodes;
    w->gmode = w->nlinks + links > PGN_INET_LINKS_CAP || !inet_local_room(w, PGN_INET_HEAP_NODES, local_nodes) ||
               !inet_local_room(w, PGN_INET_HEAP_VARS, vars);
    if (w->gmode && (INET_LOCAL_PORT(a) || INET_LOCAL_PORT(b))) return PGN_INET_ST_FLUSH;
    /* Either way the global heaps keep a twin for each slot of the slice that may be live (those
     * freed by others and not yet taken count as live) and for each the rule makes. */
    nodes += w->slice[PGN_INET_HEAP_NODES] - w->lown[PGN_INET_HEAP_NODES];
    vars += w->slice[PGN_INET_HEAP_VARS] - w->lown[PGN_INET_HEAP_VARS];
#endif
    if (nodes && !inet_reserve_heap(w, PGN_INET_HEAP_NODES, nodes)) return PGN_INET_ST_NEED_NODES;
    if (vars && !inet_reserve_heap(w, PGN_INET_HEAP_VARS, vars)) return PGN_INET_ST_NEED_VARS;
    return PGN_INET_ST_OK;
}

/* Reduces the newest redex of the worker's bag (which holds one): PGN_INET_ST_OK, or why the
 * worker must stop first (the redex stays in the bag). */
INET_HOT pgn_u32 inet_step(inet_w *w) {
    pgn_u64 r = w->bag[w->s.bag_hi - 1];
    pgn_u32 a = pgn_inet_fst(r), b = pgn_inet_snd(r);
    if (pgn_inet_tag(b) < pgn_inet_tag(a)) {
        pgn_u32 t = a;
        a = b;
        b = t;
    }
    /* The run's first redex, @main ~ the root variable, is the only one with a VAR (link never
     * queues one); it is the first CALL, as in the host reducer. */
    pgn_u32 rule = pgn_inet_tag(a) == PGN_INET_VAR ? PGN_INET_CALL : pgn_inet_rule_of(a, b);
    if (pgn_inet_tag(a) == PGN_INET_VAR) {
        pgn_u32 t = a;
        a = b;
        b = t;
    }
    pgn_u32 st = inet_reserve(w, rule, a, b);
    if (st != PGN_INET_ST_OK) return st;
    w->s.bag_hi--;
    pgn_inet_interact(w, rule, a, b);
    w->s.itrs++;
    return PGN_INET_ST_OK;
}

/* ---- sharing -------------------------------------------------------------------------------
 * An idle worker (in inet_gpu.cl: an idle work-group's first work-item, for its group) counts
 * itself in CTL_IDLE and raises its HUNGRY flag. A busy worker looks at CTL_IDLE at each poll;
 * with two or more redexes it claims a hungry one by exchanging its flag to 0 (so only one giver
 * wins), uncounts it, then puts its oldest redex in that worker's mailbox. Since the giver is busy
 * while it does this, CTL_IDLE equals the number of those that may count themselves only when no
 * work is left anywhere. A hungry group is given up to a redex a work-item at once
 * (inet_gpu.cl): the ones after the first go to the mailboxes of the group's next workers and
 * their number to CTL_GIFTS, both before the first worker's mailbox, which it waits on. */

/* Gives worker j its oldest redexes if j is hungry and this worker wins it: up to most, the
 * first in j's mailbox and each next one in j+1's, j+2's ... (most is 1 but for a group). */
static bool inet_give(inet_w *w, pgn_u32 j, pgn_u32 most) {
    volatile __global pgn_u32 *hungry = &w->ctl[PGN_INET_CTL_HUNGRY(j)];
    pgn_u32 n = 0;
#ifdef INET_LOCAL_NET
    /* another group cannot reach this group's local net: only global redexes go */
    while (n < most) {
        pgn_u64 r = w->bag[w->s.bag_lo + n];
        if (INET_LOCAL_PORT(pgn_inet_fst(r)) || INET_LOCAL_PORT(pgn_inet_snd(r))) break;
        n++;
    }
    if (n == 0) return false;
#else
    n = 1;
#endif
    if (!INET_READ(hungry) || atomic_xchg(hungry, 0u) != 1u) return false;
    /* Uncount it before it can start: once it has the redex it may go idle and count itself
     * again, and counted twice it would end the launch with work left. */
    atomic_dec(&w->ctl[PGN_INET_CTL_IDLE]);
    for (pgn_u32 k = 1; k < n; k++) atom_xchg(&w->mail[PGN_INET_MAIL(j + k)], w->bag[w->s.bag_lo + k]);
    if (n > 1) INET_SET(&w->ctl[PGN_INET_CTL_GIFTS(j)], n - 1);
    INET_RELEASE();
    atom_xchg(&w->mail[PGN_INET_MAIL(j)], w->bag[w->s.bag_lo]);
    w->s.bag_lo += n;
    return true;
}

/* Takes what is in this worker's mailbox, if anything. */
static bool inet_take_mail(inet_w *w) {
    volatile __global pgn_u64 *box = &w->mail[PGN_INET_MAIL(w->me)];
    if (INET_READ64(box) == 0) return false;
    pgn_u64 r = atom_xchg(box, (pgn_u64)0);
    INET_ACQUIRE();
    w->bag[0] = r; /* only called with an empty bag */
    w->s.bag_lo = 0;
    w->s.bag_hi = 1;
    return true;
}

/* Waits for work with an empty bag. True when work came; false when the worker should leave: all
 * `all` that count themselves idle are (the net is in normal form, or the rest lies in a bag of a
 * worker not running), the launch is stopping, or it waited INET_SPIN_MAX polls. */
static bool inet_wait(inet_w *w, pgn_u32 all) {
    volatile __global pgn_u32 *hungry = &w->ctl[PGN_INET_CTL_HUNGRY(w->me)];
    w->s.bag_lo = w->s.bag_hi = 0;
    atomic_inc(&w->ctl[PGN_INET_CTL_IDLE]);
    atomic_xchg(hungry, 1u);
    for (pgn_u32 spins = 0;; spins++) {
        if (INET_READ(hungry) == 0) { /* claimed: the giver has uncounted us and is filling the mailbox */
            while (!inet_take_mail(w)) {
            }
            return true;
        }
        bool all_idle = INET_READ(&w->ctl[PGN_INET_CTL_IDLE]) == all;
        if (all_idle || INET_READ(&w->ctl[PGN_INET_CTL_STOP]) || spins >= INET_SPIN_MAX) {
            if (atomic_xchg(hungry, 0u) == 0u) continue; /* claimed just now: take the gift */
            if (all_idle) INET_SET(&w->ctl[PGN_INET_CTL_STOP], 1u);
            atomic_dec(&w->ctl[PGN_INET_CTL_IDLE]);
            return false;
        }
    }
}

/* ---- a launch's worker ----------------------------------------------------------------------
 * The reducers' arguments, the same for both families' kernels (engine/inet/inet_cl.c passes them):
 * node[node_cap], vars[var_cap]: the heaps; node_owner, var_owner: who owns each of their chunks.
 * bnodes, brbag, defs: the book (pgn_inet_dev.h); plan: its definitions' steps.
 * bags[workers * bag_cap], mail[PGN_INET_MAIL_WORDS], wk[workers], ctl[PGN_INET_CTL_WORDS]:
 * the workers. scratch[workers * scratch_stride]: where a CALL keeps the slots it allocated
 * (stride >= the largest definition's nodes + variables). budget: interactions per worker. */
#define INET_REDUCE_PARAMS                                                                                       \
    INET_HEAP pgn_u64 *node, volatile __global pgn_u32 *vars, __global pgn_u32 *node_owner,                    \
        __global pgn_u32 *var_owner, __global const pgn_u64 *bnodes, __global const pgn_u64 *brbag,             \
        __global const pgn_u32 *defs, __global const pgn_u32 *plan, __global pgn_u64 *bags,                     \
        volatile __global pgn_u64 *mail, __global pgn_inet_worker *wk, volatile __global pgn_u32 *ctl,          \
        __global pgn_u32 *scratch, pgn_u32 workers, pgn_u32 node_cap, pgn_u32 var_cap, pgn_u32 bag_cap,         \
        pgn_u32 scratch_stride, pgn_u32 max_def_nodes, pgn_u64 budget
#define INET_REDUCE_ARGS                                                                                         \
    node, vars, node_owner, var_owner, bnodes, brbag, defs, plan, bags, mail, wk, ctl, scratch, workers, node_cap, \
        var_cap, bag_cap, scratch_stride, max_def_nodes, budget

/* Worker me's view of the launch's buffers; its state (w->s) is the caller's to read. */
INET_HOT void inet_worker_init(inet_w *w, pgn_u32 me, INET_REDUCE_PARAMS) {
    (void)wk, (void)budget;
    w->node = node;
    w->vars = vars;
    w->owner[PGN_INET_HEAP_NODES] = node_owner;
    w->owner[PGN_INET_HEAP_VARS] = var_owner;
    w->bag = bags + (pgn_u64)me * bag_cap;
    w->nloc = scratch + (pgn_u64)me * scratch_stride;
    w->vloc = w->nloc + max_def_nodes;
    w->bnodes = bnodes;
    w->brbag = brbag;
    w->defs = defs;
    w->plan = plan;
    w->ctl = ctl;
    w->mail = mail;
    w->me = me;
    w->workers = workers;
    w->bag_cap = bag_cap;
    w->cap[PGN_INET_HEAP_NODES] = node_cap;
    w->cap[PGN_INET_HEAP_VARS] = var_cap;
#ifdef INET_LOCAL_NET
    w->links = w->nloc + scratch_stride - 2 * PGN_INET_LINKS_CAP;
    w->nlinks = 0;
    w->gmode = false;
#endif
}
