/* pgn_inet_dev.h: the state of the OpenCL interaction-net reducer that lives in device memory
 * between launches, shared by the kernel (kernels/inet.cl) and its host driver
 * (engine/inet_cl.c). Requires pgn_math.h first (pgn_u32, pgn_u64). */
#ifndef PGN_INET_DEV_H
#define PGN_INET_DEV_H

/* One worker (one work-item): where its redex bag and its allocators stand. A worker owns its bag
 * (bag[lo, hi) of its own slice of the bags buffer, popped at hi, shared from lo), its free lists
 * (threaded through the freed slots themselves) and its bump chunks [next, end) of the heaps.
 * 64 bytes, ulong first, so C and OpenCL C lay it out alike and workers never share a line. */
typedef struct pgn_inet_worker {
    pgn_u64 itrs; /* interactions done, over all launches */
    pgn_u32 bag_lo, bag_hi;
    pgn_u32 node_free, node_nfree; /* free list head (0: empty) and its length */
    pgn_u32 node_next, node_end;   /* bump chunk */
    pgn_u32 var_free, var_nfree;
    pgn_u32 var_next, var_end;
    pgn_u32 status, status_arg; /* PGN_INET_ST_*: why the worker stopped last */
    pgn_u32 share_rot, pad;
} pgn_inet_worker;

/* Why a worker left the kernel. The NEED_* ones stop before the redex is touched (it stays in the
 * bag); the host grows that buffer and launches again. */
#define PGN_INET_ST_OK 0u         /* ran out of work, or another worker stopped the launch */
#define PGN_INET_ST_BUDGET 1u     /* used its interaction budget for this launch */
#define PGN_INET_ST_NEED_NODES 2u /* the node heap has no chunk left */
#define PGN_INET_ST_NEED_VARS 3u  /* the variable heap has no chunk left */
#define PGN_INET_ST_NEED_BAG 4u   /* its redex bag is full */
#define PGN_INET_ST_CLONE 5u      /* a DUP met a definition with a DUP in it; arg: the id */

/* The control block: flags and counters, each on its own 64-byte line (16 uints) so the words
 * busy workers poll are not the ones allocating workers bump. */
#define PGN_INET_CTL_STOP 0u      /* set: every worker leaves at its next poll */
#define PGN_INET_CTL_IDLE 16u     /* workers currently waiting for work */
#define PGN_INET_CTL_NODE_TOP 32u /* bump pointers of the heaps, in slots */
#define PGN_INET_CTL_VAR_TOP 48u
#define PGN_INET_CTL_HUNGRY(j) (64u + 16u * (j)) /* 1 while worker j waits and may be given work */
#define PGN_INET_CTL_WORDS(workers) (64u + 16u * (workers))
/* Worker j's mailbox, in ulongs: a redex handed over by another worker, 0 when empty. */
#define PGN_INET_MAIL(j) (8u * (j))
#define PGN_INET_MAIL_WORDS(workers) (8u * (workers))

/* Heaps are carved into chunks of this many slots per worker, so the shared bump pointer is
 * touched once per CHUNK allocations. */
#define PGN_INET_CHUNK 256u

/* A definition in the device's table: PGN_INET_DEF_WORDS uints. */
#define PGN_INET_DEF_ROOT 0
#define PGN_INET_DEF_NODE_OFF 1
#define PGN_INET_DEF_NODE_LEN 2
#define PGN_INET_DEF_RBAG_OFF 3
#define PGN_INET_DEF_RBAG_LEN 4
#define PGN_INET_DEF_VARS_LEN 5
#define PGN_INET_DEF_SAFE 6
#define PGN_INET_DEF_WORDS 8

#endif
