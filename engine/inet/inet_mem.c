/* inet_mem.c: the memory bound of an interaction-net run. One place derives, from max_nodes, the
 * book and the worker count, the most slots every heap and bag may hold (pgn_inet_caps_of, which
 * both reducers grow up to and no further), and turns them into bytes on the device and the host
 * (pgn_inet_memory_estimate, which the server admits jobs by). */
#include <string.h>

#include "inet/inet.h"
#include "pgn_inet_dev.h"
#include "pgn_inet_plan.h"

/* Variables per node. A variable is a wire, and every wire ends in a node's auxiliary port (two
 * per node) or the root; a wire made of several variables (linked end to end before either end
 * met a node) needs more, so this is a cap the reducers enforce, not an invariant of nets. The
 * examples reach at most 1.35 on the host (tree_dup: 182 variables for 135 nodes); the device
 * used 2 before this cap was shared. */
#define VARS_PER_NODE 2u
/* Redexes per node: none. Every redex in a bag holds a node's principal port (a redex of two
 * nullary ports, ERA, NUM or REF, is counted as it is made and never queued), and a principal port
 * is in one place only, so the bags together never hold more redexes than there are nodes. */
/* Node slots the host reducer can address: indices stay below PGN_INET_VAL_MAX so that no port
 * equals NONE, and index 0 ends a free list. */
#define HOST_SLOTS (PGN_INET_VAL_MAX - 1u)
/* Variables and bag slots one interaction may take: a COMMUTE's four, or a CALL's definition. */
#define RULE_VARS 4u
#define RULE_LINKS 4u
/* Bytes of the device's per-worker state (pgn_inet_worker), mailbox line and control line. */
#define WORKER_BYTES (sizeof(pgn_inet_worker) + 8u * PGN_INET_MAIL_WORDS(1) + 4u * 16u)

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

typedef struct {
    uint32_t nodes, vars, links, regs; /* the largest definition's; links: what its CALL may queue */
} def_max;

static def_max largest_def(const pgn_inet_book *book) {
    return (def_max){book->max_def_nodes, book->max_def_vars, book->max_def_links, book->max_plan_regs};
}

/* Host: max_nodes bounds the live nodes; slot 0 is reserved. The variable heap fails at
 * VARS_PER_NODE per node but keeps one interaction's worth above that, so the interaction that
 * crosses it finishes on real slots before the run stops. The bag holds a redex per node, and one
 * interaction's links more: the interaction that fails on nodes may still push some.
 * Device: max_nodes bounds the node heap's slots, plus a chunk for each worker (partly used,
 * held back) and chunk 0 (nobody's); the variable heap follows at VARS_PER_NODE a slot. A worker's
 * bag holds twice its share of the bound, and the room a rule reserves before it runs; when one
 * is full at its cap the driver spreads the redexes over all bags (engine/inet/inet_cl.c), so after
 * that each is at most half full, and with one or two workers a bag holds the whole bound. */
void pgn_inet_caps_of(const pgn_inet_book *book, uint64_t max_nodes, unsigned workers, pgn_inet_caps *out) {
    def_max d = largest_def(book);
    *out = (pgn_inet_caps){.workers = workers};
    out->bag_reserve = (uint32_t)max_u64(RULE_LINKS, d.links);
    if (!workers) {
        uint64_t most = HOST_SLOTS - 1;
        out->address_space = !max_nodes || max_nodes >= most;
        out->node_limit = out->address_space ? most : max_nodes;
        out->node_slots = (uint32_t)(out->node_limit + 1);
        uint64_t reserve = max_u64(RULE_VARS, (uint64_t)d.vars + 1);
        uint64_t limit = min_u64(1 + VARS_PER_NODE * out->node_limit, HOST_SLOTS - reserve);
        out->var_limit = (uint32_t)limit;
        out->var_slots = (uint32_t)(limit + reserve);
        out->bag_slots = (uint32_t)(out->node_limit + out->bag_reserve);
        return;
    }
    uint64_t held = ((uint64_t)workers + 1) * PGN_INET_CHUNK;
    out->address_space = !max_nodes || max_nodes + held >= PGN_INET_DEV_SLOTS;
    out->node_limit = out->address_space ? PGN_INET_DEV_SLOTS : max_nodes + held;
    out->node_slots = (uint32_t)out->node_limit;
    out->var_limit = out->var_slots = (uint32_t)min_u64(VARS_PER_NODE * out->node_limit, PGN_INET_DEV_SLOTS);
    uint64_t share = (out->node_limit + workers - 1) / workers;
    out->bag_slots = (uint32_t)(min_u64(out->node_limit, 2 * share) + out->bag_reserve);
}

uint64_t pgn_inet_book_bytes(const pgn_inet_book *book) {
    uint64_t names = 0;
    for (uint32_t i = 0; i < book->n_defs; i++) names += strlen(book->defs[i].name) + 1;
    return sizeof *book + (uint64_t)book->n_defs * sizeof *book->defs + names +
           ((uint64_t)book->n_nodes + 1) * 8 + ((uint64_t)book->n_rbag + 1) * 8 +
           (uint64_t)book->n_plan * PGN_INET_STEP_WORDS * 4;
}

/* Owner-table entries of a heap of cap slots (engine/inet/inet_cl.c): every chunk, and the chunks
 * workers may have taken past the end. */
static uint64_t owner_entries(uint64_t cap, unsigned workers) {
    return (cap + (uint64_t)workers * PGN_INET_CHUNK) / PGN_INET_CHUNK + 1;
}

static void part_total(pgn_inet_memory_part *p) {
    p->total = p->nodes + p->vars + p->bags + p->tables + p->growth + p->book + p->workers + p->readback;
}

int pgn_inet_memory_estimate(const pgn_inet_spec *spec, const pgn_device_info *where, pgn_inet_memory *out,
                             pgn_error *err) {
    *out = (pgn_inet_memory){0};
    pgn_inet_book *book = NULL;
    const char *text = spec->program ? spec->program : "";
    if (pgn_inet_parse(text, strlen(text), &book, err)) return -1;
    pgn_device_profile profile;
    if (where) pgn_device_profile_default(where, &profile);
    bool device = where && profile.dev_class != PGN_CLASS_HOST;
    unsigned workers = 0;
    if (device) workers = spec->work_items > 0 ? (unsigned)spec->work_items : profile.inet_workers;
    pgn_inet_caps caps;
    pgn_inet_caps_of(book, spec->max_nodes, workers, &caps);
    def_max d = largest_def(book);
    uint64_t node_bytes = (uint64_t)caps.node_slots * 8, var_bytes = (uint64_t)caps.var_slots * 4;
    uint64_t bag_bytes = (uint64_t)caps.bag_slots * 8 * (workers ? workers : 1);
    /* Printing the normal form, and the copy of it the job's result JSON keeps. */
    uint64_t nf_text, printing = pgn_inet_readback_bound(book, caps.node_slots, caps.var_slots, &nf_text);
    out->workers = workers;
    out->node_slots = caps.node_slots;
    out->var_slots = caps.var_slots;
    out->bag_slots = (uint64_t)caps.bag_slots * (workers ? workers : 1);

    pgn_inet_memory_part *host = &out->host;
    host->book = pgn_inet_book_bytes(book);
    host->readback = printing + nf_text;
    if (!device) {
        host->nodes = node_bytes;
        host->vars = var_bytes;
        host->bags = bag_bytes;
        host->growth = max_u64(node_bytes, max_u64(var_bytes, bag_bytes)); /* realloc may copy */
        host->workers = ((uint64_t)d.nodes + 1 + d.vars + 1 + d.regs + 1) * 4; /* a CALL's copy or registers */
    } else {
        pgn_inet_memory_part *dev = &out->device;
        uint64_t owners[2] = {owner_entries(caps.node_slots, workers) * 4, owner_entries(caps.var_slots, workers) * 4};
        dev->nodes = node_bytes;
        dev->vars = var_bytes;
        dev->bags = bag_bytes;
        dev->tables = owners[0] + owners[1];
        /* one buffer at a time is grown (or the bags spread), holding its old copy meanwhile */
        dev->growth = max_u64(max_u64(node_bytes, var_bytes), max_u64(bag_bytes, max_u64(owners[0], owners[1])));
        /* the book's nodes, redexes and definition table (an empty buffer still takes 8 bytes) */
        dev->book = max_u64((uint64_t)book->n_nodes * 8, 8) + max_u64((uint64_t)book->n_rbag * 8, 8) +
                    max_u64((uint64_t)book->n_defs * PGN_INET_DEF_WORDS * 4, 8) +
                    max_u64((uint64_t)book->n_plan * PGN_INET_STEP_WORDS * 4, 8);
        uint64_t scratch = ((uint64_t)d.nodes + d.vars + 2 * PGN_INET_LINKS_CAP + 16) / 16 * 16 * 4;
        dev->workers = (uint64_t)workers * (WORKER_BYTES + scratch) + 4u * PGN_INET_CTL_WORDS(0);
        part_total(dev);
        /* the host's copies of the workers, mail and control, and the definition table it
         * uploads; at the end the heaps come down before they are printed */
        host->workers = (uint64_t)workers * WORKER_BYTES + 4u * PGN_INET_CTL_WORDS(0) +
                        ((uint64_t)book->n_defs * PGN_INET_DEF_WORDS + 1) * 4;
        host->readback += node_bytes + 8 + var_bytes + 4;
    }
    part_total(host);
    out->total = out->device.total + out->host.total;
    pgn_inet_book_free(book);
    return 0;
}
