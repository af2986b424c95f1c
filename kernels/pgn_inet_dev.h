/* pgn_inet_dev.h: the state of the OpenCL interaction-net reducer that lives in device memory
 * between launches, shared by the kernel (kernels/inet.cl) and its host driver
 * (engine/inet/inet_cl.c). Requires pgn_math.h first (pgn_u32, pgn_u64). */
#ifndef PGN_INET_DEV_H
#define PGN_INET_DEV_H

/* The two heaps a worker allocates from: node slots (64-bit pairs) and variable slots (32-bit). */
#define PGN_INET_HEAP_NODES 0
#define PGN_INET_HEAP_VARS 1

/* A worker's allocator in one heap: its free list (threaded through the free slots themselves,
 * 0 ends it), the rest [next, end) of the chunk it bumps through, and the slots of other workers'
 * chunks it has freed. Those are used only when its own run out and go back to their owner in
 * batches, because reusing them would keep writing lines the owner writes too (measured: two
 * workers on independent loops ran at 63 MIPS each instead of 150) and because a worker that only
 * frees what another allocates would otherwise hoard them while the other takes new chunks. */
typedef struct pgn_inet_alloc {
    pgn_u32 free, nfree;
    pgn_u32 next, end;
    pgn_u32 foreign, foreign_tail, nforeign, pad;
} pgn_inet_alloc;

/* One worker (one work-item): where its redex bag and its allocators stand. A worker owns its bag
 * (bag[lo, hi) of its own slice of the bags buffer, popped at hi, shared from lo).
 * 128 bytes, ulong first, so C and OpenCL C lay it out alike and workers never share a line. */
typedef struct pgn_inet_worker {
    pgn_u64 itrs; /* interactions done, over all launches */
    pgn_u32 bag_lo, bag_hi;
    pgn_inet_alloc heap[2];     /* PGN_INET_HEAP_NODES, PGN_INET_HEAP_VARS */
    pgn_u32 status, status_arg; /* PGN_INET_ST_*: why the worker stopped last */
    pgn_u32 share_rot, pad[11];
} pgn_inet_worker;

/* Foreign slots a worker keeps before it gives them back to their owner in one exchange. */
#define PGN_INET_FOREIGN_BATCH 256u

/* Why a worker left the kernel. The NEED_* ones stop before the redex is touched (it stays in the
 * bag); the host grows that buffer and launches again. */
#define PGN_INET_ST_OK 0u         /* ran out of work, or another worker stopped the launch */
#define PGN_INET_ST_BUDGET 1u     /* used its interaction budget for this launch */
#define PGN_INET_ST_NEED_NODES 2u /* the node heap has no chunk left */
#define PGN_INET_ST_NEED_VARS 3u  /* the variable heap has no chunk left */
#define PGN_INET_ST_NEED_BAG 4u   /* its redex bag is full */
#define PGN_INET_ST_CLONE 5u      /* a DUP met a definition with a DUP in it; arg: the id */
#define PGN_INET_ST_FLUSH 6u      /* (within inet_gpu.cl only) the redex waits for its group's flush */

/* The control block: flags and counters, each on its own 64-byte line (16 uints) so the words
 * busy workers poll are not the ones allocating workers bump. */
#define PGN_INET_CTL_STOP 0u             /* set: every worker leaves at its next poll */
#define PGN_INET_CTL_IDLE 16u            /* workers currently waiting for work */
#define PGN_INET_CTL_TOP(heap) (32u + 16u * (heap)) /* bump pointers of the heaps, in slots */
#define PGN_INET_CTL_HUNGRY(j) (64u + 16u * (j))    /* 1 while worker j waits and may be given work */
#define PGN_INET_CTL_GIFTS(j) (65u + 16u * (j)) /* gpu family: the redexes after the first j's group was given */
#define PGN_INET_CTL_WORDS(workers) (64u + 16u * (workers))

/* Worker j's line of the mail buffer (ulongs): its mailbox (a redex handed over by another
 * worker, 0 when empty) and, per heap, the slots other workers gave back (batches of slots that
 * lie in j's chunks): a stack pushed by compare-and-swap, (count << 32) | first slot, which j
 * takes whole when its own free list runs dry, so memory follows the live net whoever frees
 * what. */
#define PGN_INET_MAIL(j) (8u * (j))
#define PGN_INET_REMOTE(j, heap) (8u * (j) + 1u + (heap))
#define PGN_INET_MAIL_WORDS(workers) (8u * (workers))

/* Heaps are carved into chunks of this many slots, taken by one worker each, so the shared bump
 * pointer is touched once per CHUNK allocations; owner[slot / CHUNK] says whose chunk a slot is
 * in. Chunk 0 belongs to no worker: it holds the reserved slot 0 (0 ends a free list) and the
 * root variable. */
#define PGN_INET_CHUNK 256u
#define PGN_INET_NO_OWNER 0xFFFFFFFFu

/* The largest work-group the gpu family's reducer (kernels/inet_gpu.cl) deals redexes in: its
 * local arrays are this long. */
#define PGN_INET_GPU_LOCAL_MAX 256u

/* The gpu family's local net (kernels/inet_worker.h): a port whose value is PGN_INET_LOCAL_BASE + i
 * is slot i of its work-group's local nodes or variables, so device heaps stay below that
 * (PGN_INET_DEV_SLOTS). A group holds PGN_INET_LOCAL_SLOTS of each, which the program is built
 * with (engine/program.c, from the profile: engine/profile.c fits them and the deal's arrays,
 * PGN_INET_GPU_DEAL_BYTES, in the device's local memory): 2048, 24 KB, in NVIDIA's 48 KB.
 * A work-item keeps up to PGN_INET_LINKS_CAP pending links (global variable ~ local node) in
 * its scratch (inet_cl.c's scratch_stride leaves room): at 32, HVM2's sort_bitonic_16 flushed
 * every 32 links (94,000 flushes; 20,000 at 256). */
#define PGN_INET_LOCAL_BASE 0x1FFFC000u
#define PGN_INET_DEV_SLOTS PGN_INET_LOCAL_BASE
#define PGN_INET_LOCAL_SLOTS_MAX 2048u
#ifndef PGN_INET_LOCAL_SLOTS
#define PGN_INET_LOCAL_SLOTS PGN_INET_LOCAL_SLOTS_MAX
#endif
#define PGN_INET_GPU_DEAL_BYTES (PGN_INET_GPU_LOCAL_MAX * 4u * 8u + 64u)
#define PGN_INET_LINKS_CAP 256u

/* A definition in the device's table: PGN_INET_DEF_WORDS uints. */
#define PGN_INET_DEF_ROOT 0
#define PGN_INET_DEF_NODE_OFF 1
#define PGN_INET_DEF_NODE_LEN 2
#define PGN_INET_DEF_RBAG_OFF 3
#define PGN_INET_DEF_RBAG_LEN 4
#define PGN_INET_DEF_VARS_LEN 5
#define PGN_INET_DEF_SAFE 6
#define PGN_INET_DEF_LINKS 7 /* the most redexes its CALL may queue (pgn_inet_def's links) */
#define PGN_INET_DEF_PLAN_OFF 8  /* its plan: steps [off, off + len) of the plan buffer over */
#define PGN_INET_DEF_PLAN_LEN 9  /* regs registers; len 0 (no plan, or more registers than */
#define PGN_INET_DEF_PLAN_REGS 10 /* PGN_INET_PLAN_REGS): interpreted */
#define PGN_INET_DEF_WORDS 12

/* The most registers a plan the kernel interprets may use (they live in the work-item's private
 * memory): larger definitions are called once or rarely (a program's @main, its tables). */
#define PGN_INET_PLAN_REGS 128u

#endif
